// Seed 002, phase 3: phase 2 plus a warp-cooperative search. The 32 lanes of a warp search one
// target together (a 32-ary search: each round every lane tests one pivot, a ballot counts the
// pivots <= x, and the range shrinks 32-fold), so the search takes log32(S) rounds in which all
// lanes agree instead of log2(S) steps per thread. A warp then interpolates 32 / (D / 8)
// targets at once with 16-byte vectors. Launch: grid (ceil(T / TILE), B), block 256 (TILE /
// (32 / (D / 8)) warps), dynamic shared memory S * 4 bytes; needs 32 % (D / 8) == 0.

#define TILE 64

__device__ __forceinline__ unsigned short f_to_bf16(float f) {
    unsigned u = __float_as_uint(f);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}
__device__ __forceinline__ unsigned lerp2(unsigned a, unsigned c, float w) {
    const float a0 = __uint_as_float(a << 16), a1 = __uint_as_float(a & 0xFFFF0000u);
    const float c0 = __uint_as_float(c << 16), c1 = __uint_as_float(c & 0xFFFF0000u);
    return (unsigned)f_to_bf16(fmaf(w, c0 - a0, a0)) |
           ((unsigned)f_to_bf16(fmaf(w, c1 - a1, a1)) << 16);
}

// First index of s[0..n) whose value is > x, found by the whole warp. Invariant: the answer
// lies in [lo, hi]; the pivots lo + k * step (k < 32) cover [lo, hi), the ones <= x form a
// prefix of c lanes, so the answer is in (p, p + step] with p the last of them.
__device__ __forceinline__ int warp_upper_bound(const float* s, int n, float x, int lane) {
    int lo = 0, hi = n;
    while (lo < hi) {
        const int step = (hi - lo + 31) >> 5;
        const int pos = lo + lane * step;
        const bool le = pos < hi && s[pos] <= x;
        const int c = __popc(__ballot_sync(0xffffffffu, le));
        if (c == 0) {
            hi = lo;
        } else {
            const int p = lo + (c - 1) * step;
            lo = p + 1;
            hi = min(p + step, hi);
        }
    }
    return lo;
}

extern "C" __global__ void resample_warp(const float* __restrict__ src_t,
                                         const float* __restrict__ tgt_t,
                                         const unsigned short* __restrict__ data,
                                         unsigned short* __restrict__ out,
                                         int B, int S, int T, int D) {
    extern __shared__ float s_t[];
    const int b = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int D8 = D / 8, per_pass = 32 / D8;
    const float* st = src_t + (long long)b * S;
    for (int i = threadIdx.x; i < S; i += blockDim.x) s_t[i] = st[i];
    __syncthreads();
    const int t_end = min((int)(blockIdx.x + 1) * TILE, T);
    for (int tw = blockIdx.x * TILE + warp * per_pass; tw < t_end;
         tw += (blockDim.x >> 5) * per_pass) {
        int mine = 0;
        for (int j = 0; j < per_pass && tw + j < t_end; ++j) {  // warp-uniform loop
            const int ub = warp_upper_bound(s_t, S, tgt_t[(long long)b * T + tw + j], lane);
            if (lane / D8 == j) mine = ub;
        }
        const int t = tw + lane / D8, v = lane % D8;
        if (t < t_end) {
            const float x = tgt_t[(long long)b * T + t];
            const int r = min(max(mine, 1), S - 1), l = r - 1;
            const float t0 = s_t[l], t1 = s_t[r];
            const float w = fminf(fmaxf((x - t0) / (t1 - t0), 0.f), 1.f);
            const uint4* rows = reinterpret_cast<const uint4*>(data + (long long)b * S * D);
            const uint4 a = rows[(long long)l * D8 + v], c = rows[(long long)r * D8 + v];
            uint4 o;
            o.x = lerp2(a.x, c.x, w); o.y = lerp2(a.y, c.y, w);
            o.z = lerp2(a.z, c.z, w); o.w = lerp2(a.w, c.w, w);
            reinterpret_cast<uint4*>(out + ((long long)b * T + t) * D)[v] = o;
        }
    }
}
