// Our version: search a window, not the whole timestamp array.
//
// Target and source times are both sorted, so the TILE consecutive targets of a block bracket
// their source rows inside one window [ub(first) - 1, ub(last)]. Warp 0 finds the two ends with
// a 32-ary warp search in global memory (both searches' loads issued together, log32(S)
// rounds); the block copies only the window's timestamps into shared memory (S / T x TILE
// values instead of S); each thread then binary-searches the small window (log2 of ~S/T x
// TILE steps instead of log2 S) and moves 16-byte vectors of the two bracketing rows and of the
// output. A window wider than WMAX (an unusual time distribution) falls back to a search of
// the whole array in global memory, so every input is handled. Launch: grid (ceil(T / TILE), B),
// block TILE x D / 8 threads (256 for D = 32), no dynamic shared memory.

#define TILE 64
#define WMAX 2048

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

// Two warp-cooperative upper bounds in s[0..n) at once (see resample_warp.cu for the
// invariant); the two searches' pivot loads are independent, so their latencies overlap.
__device__ __forceinline__ void warp_upper_bound2(const float* __restrict__ s, int n, float x0,
                                                  float x1, int lane, int& u0, int& u1) {
    int lo0 = 0, hi0 = n, lo1 = 0, hi1 = n;
    while (lo0 < hi0 || lo1 < hi1) {
        const int st0 = max((hi0 - lo0 + 31) >> 5, 1), st1 = max((hi1 - lo1 + 31) >> 5, 1);
        const int p0 = lo0 + lane * st0, p1 = lo1 + lane * st1;
        const float v0 = p0 < hi0 ? __ldg(s + p0) : 0.f;
        const float v1 = p1 < hi1 ? __ldg(s + p1) : 0.f;
        const int c0 = __popc(__ballot_sync(0xffffffffu, p0 < hi0 && v0 <= x0));
        const int c1 = __popc(__ballot_sync(0xffffffffu, p1 < hi1 && v1 <= x1));
        if (lo0 < hi0) {
            if (c0 == 0) hi0 = lo0;
            else { const int p = lo0 + (c0 - 1) * st0; lo0 = p + 1; hi0 = min(p + st0, hi0); }
        }
        if (lo1 < hi1) {
            if (c1 == 0) hi1 = lo1;
            else { const int p = lo1 + (c1 - 1) * st1; lo1 = p + 1; hi1 = min(p + st1, hi1); }
        }
    }
    u0 = lo0;
    u1 = lo1;
}

extern "C" __global__ void resample_ours(const float* __restrict__ src_t,
                                         const float* __restrict__ tgt_t,
                                         const unsigned short* __restrict__ data,
                                         unsigned short* __restrict__ out,
                                         int B, int S, int T, int D) {
    __shared__ float s_w[WMAX];
    __shared__ int s_lo, s_n;
    const int b = blockIdx.y;
    const int t_begin = blockIdx.x * TILE, t_end = min(t_begin + TILE, T);
    const float* st = src_t + (long long)b * S;
    const float* tt = tgt_t + (long long)b * T;
    if (threadIdx.x < 32) {
        int u0, u1;
        warp_upper_bound2(st, S, __ldg(tt + t_begin), __ldg(tt + t_end - 1), threadIdx.x, u0, u1);
        if (threadIdx.x == 0) {
            const int r0 = min(max(u0, 1), S - 1), r1 = min(max(u1, 1), S - 1);
            s_lo = r0 - 1;
            s_n = r1 - r0 + 2;  // rows r0 - 1 .. r1
        }
    }
    __syncthreads();
    const int lo = s_lo, n = s_n;
    const bool windowed = n <= WMAX;
    if (windowed) {
        for (int i = threadIdx.x; i < n; i += blockDim.x) s_w[i] = __ldg(st + lo + i);
    }
    __syncthreads();
    const int D8 = D / 8;
    for (int k = threadIdx.x; k < TILE * D8; k += blockDim.x) {
        const int t = t_begin + k / D8, v = k % D8;
        if (t >= t_end) break;
        const float x = __ldg(tt + t);
        int ub;
        if (windowed) {  // every element before the window is <= x, every one after it > x
            int a = 0, z = n;
            while (a < z) {
                const int mid = (a + z) >> 1;
                if (s_w[mid] <= x) a = mid + 1; else z = mid;
            }
            ub = lo + a;
        } else {
            int a = 0, z = S;
            while (a < z) {
                const int mid = (a + z) >> 1;
                if (__ldg(st + mid) <= x) a = mid + 1; else z = mid;
            }
            ub = a;
        }
        const int r = min(max(ub, 1), S - 1), l = r - 1;
        const float t0 = windowed ? s_w[l - lo] : st[l], t1 = windowed ? s_w[r - lo] : st[r];
        const float w = fminf(fmaxf((x - t0) / (t1 - t0), 0.f), 1.f);
        const uint4* rows = reinterpret_cast<const uint4*>(data + (long long)b * S * D);
        const uint4 a4 = __ldg(rows + (long long)l * D8 + v);
        const uint4 c4 = __ldg(rows + (long long)r * D8 + v);
        uint4 o;
        o.x = lerp2(a4.x, c4.x, w); o.y = lerp2(a4.y, c4.y, w);
        o.z = lerp2(a4.z, c4.z, w); o.w = lerp2(a4.w, c4.w, w);
        reinterpret_cast<uint4*>(out + ((long long)b * T + t) * D)[v] = o;
    }
}
