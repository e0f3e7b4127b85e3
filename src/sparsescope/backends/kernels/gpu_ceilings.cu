// Microbenchmarks behind sparsescope.hardware.gpu_ceilings (compiled by NVRTC via cupy).
//
// Each kernel ends with a store guarded by a condition that never holds for the data it is
// given, so the compiler must keep every load and FMA without the kernel writing anything.

// Read-only streaming: each thread sums float4 loads over a grid-stride loop, `passes` times
// over the buffer. __ldcg caches in L2 only (not L1), so with a buffer inside L2 and
// passes > 1 the loads are served by L2, and with a buffer much larger than L2, by DRAM.
extern "C" __global__ void read_stream(const float4* __restrict__ p, const unsigned long long n4,
                                       const int passes, float* __restrict__ out) {
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (int pass = 0; pass < passes; ++pass) {
#pragma unroll 4
        for (unsigned long long i = first; i < n4; i += stride) {
            const float4 v = __ldcg(p + i);
            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        }
    }
    if (acc.x + acc.y + acc.z + acc.w == -1.0f) out[0] = acc.x;  // data are >= 0: never true
}

// Write-only streaming: each thread stores float4 values over a grid-stride loop, `passes`
// times over the buffer. __stcg caches in L2 only (not L1), like a register spill's store,
// which the L1 passes through to the L2; with a buffer inside L2 the stores stay in L2 (its
// lines are written back to DRAM only when evicted), so the figure is the L2's write rate.
extern "C" __global__ void write_stream(float4* __restrict__ p, const unsigned long long n4,
                                        const int passes, const float v) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (int pass = 0; pass < passes; ++pass) {
        const float4 w = make_float4(v, v + pass, v, v);
#pragma unroll 4
        for (unsigned long long i = first; i < n4; i += stride) __stcg(p + i, w);
    }
}

// Dependent loads by one thread: j = next[j], `steps` times. next holds a random cyclic
// permutation of nodes spaced more than a cache line apart, so no load hits a line an
// earlier one brought in (and the prefetchers see no pattern). __ldcg skips L1.
extern "C" __global__ void pointer_chase(const unsigned int* __restrict__ next,
                                         const unsigned int start, const int steps,
                                         unsigned int* __restrict__ out) {
    unsigned int j = start;
    for (int i = 0; i < steps; ++i) j = __ldcg(next + j);
    out[0] = j;
}

// FP32 FMA throughput: CHAINS independent chains a = a * b + c per thread, so each warp
// scheduler always has an FMA whose inputs are ready. flops = 2 * CHAINS * iters * threads.
#define CHAINS 8
extern "C" __global__ void fma_chains(const int iters, const float b, const float c,
                                      float* __restrict__ out) {
    float a[CHAINS];
#pragma unroll
    for (int k = 0; k < CHAINS; ++k) a[k] = (threadIdx.x + k) * 1e-3f;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int k = 0; k < CHAINS; ++k) a[k] = fmaf(a[k], b, c);
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < CHAINS; ++k) s += a[k];
    if (s == -1.0f) out[0] = s;  // a stays positive for 0 < b < 1, c > 0: never true
}

// Random 4-byte gathers: each thread loads `loads` floats at hashed indices of a buffer of n
// floats. The hash chain needs no loaded value, so a thread keeps 8 loads in flight (the
// unroll), like a gather of x[col] whose columns are already known. Each load touches its own
// 32-byte sector (n >> loads per sector), so sectors per second = loads / time. With n floats
// >> L2 the sectors come from DRAM; with a buffer inside L2 (loaded first), from L2.
extern "C" __global__ void random_gather(const float* __restrict__ p, const unsigned long long n,
                                         const int loads, float* __restrict__ out) {
    unsigned long long h = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x)
                           * 0x9E3779B97F4A7C15ull + 1ull;
    float acc = 0.f;
#pragma unroll 8
    for (int i = 0; i < loads; ++i) {
        h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
        acc += __ldcg(p + (h % n));
    }
    if (acc == -1.0f) out[0] = acc;  // data are >= 0: never true
}

// Nothing: the device-side cost of one launch between two events.
extern "C" __global__ void empty_kernel() {}

// Nothing, launched with programmatic dependent launch behind itself (pdl_launch_us): lets the
// next launch start at once and waits for the previous one, as spmv_tile does (spmv_own.cu).
extern "C" __global__ void empty_pdl_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
