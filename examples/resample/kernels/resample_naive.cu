// Seed 002, the naive kernel: one thread per output element (batch b, target t, channel d),
// channels fastest; every thread binary-searches the batch's source timestamps in global memory
// for its target time, then interpolates linearly between the two bracketing source rows.
//
//   out[b, t, d] = lerp(data[b, l, d], data[b, r, d], w),
//   r = clamp(#{ j : src_t[b, j] <= tgt_t[b, t] }, 1, S - 1),  l = r - 1,
//   w = clamp((tgt - src_t[b, l]) / (src_t[b, r] - src_t[b, l]), 0, 1)
//
// bf16 values are stored as their 16-bit patterns (no header needed: NVRTC and nvcc alike).

__device__ __forceinline__ float bf16_to_f(unsigned short h) {
    return __uint_as_float(((unsigned)h) << 16);
}
__device__ __forceinline__ unsigned short f_to_bf16(float f) {  // round to nearest even
    unsigned u = __float_as_uint(f);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

extern "C" __global__ void resample_naive(const float* __restrict__ src_t,
                                          const float* __restrict__ tgt_t,
                                          const unsigned short* __restrict__ data,
                                          unsigned short* __restrict__ out,
                                          int B, int S, int T, int D) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)B * T * D) return;
    const int d = (int)(idx % D);
    const long long bt = idx / D;
    const int b = (int)(bt / T);
    const float* st = src_t + (long long)b * S;
    const float x = tgt_t[bt];
    int lo = 0, hi = S;
    while (lo < hi) {  // upper bound: the first source time > x
        const int mid = (lo + hi) >> 1;
        if (st[mid] <= x) lo = mid + 1; else hi = mid;
    }
    const int r = min(max(lo, 1), S - 1), l = r - 1;
    const float t0 = st[l], t1 = st[r];
    const float w = fminf(fmaxf((x - t0) / (t1 - t0), 0.f), 1.f);
    const unsigned short* row = data + (long long)b * S * D + d;
    const float d0 = bf16_to_f(row[(long long)l * D]), d1 = bf16_to_f(row[(long long)r * D]);
    out[idx] = f_to_bf16(fmaf(w, d1 - d0, d0));
}
