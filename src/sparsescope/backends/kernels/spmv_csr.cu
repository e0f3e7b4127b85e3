// CSR SpMV kernels of sparsescope's own backends, compiled at run time by NVRTC through
// cupy.RawModule (instantiated by name expression, e.g. "csr_vector<float, int, 8>").
//
// y = A x with T values (float or double) and I indices (int or long long).
// y is written, never read: every row's thread (scalar) or lane 0 of its group (vector)
// stores the row's sum, so an empty row stores 0 and a skipped row keeps the caller's poison.

// One thread per row. Loads of x go through the read-only path (__ldg).
template <typename T, typename I>
__global__ void csr_scalar(const long long rows, const I* __restrict__ rowptr,
                           const I* __restrict__ col, const T* __restrict__ val,
                           const T* __restrict__ x, T* __restrict__ y) {
    const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    T sum = T(0);
    const I end = rowptr[row + 1];
    for (I j = rowptr[row]; j < end; ++j) sum += val[j] * __ldg(x + col[j]);
    y[row] = sum;
}

// TPR consecutive threads per row (TPR a power of two <= 32, dividing blockDim.x), partial
// sums reduced with warp shuffles. No thread returns early: every lane of a warp reaches the
// shuffles, so the full mask is valid even in the last, partly used warp.
template <typename T, typename I, int TPR>
__global__ void csr_vector(const long long rows, const I* __restrict__ rowptr,
                           const I* __restrict__ col, const T* __restrict__ val,
                           const T* __restrict__ x, T* __restrict__ y) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long row = tid / TPR;
    const int lane = threadIdx.x % TPR;
    T sum = T(0);
    if (row < rows) {
        const I end = rowptr[row + 1];
        for (I j = rowptr[row] + lane; j < end; j += TPR) sum += val[j] * __ldg(x + col[j]);
    }
#pragma unroll
    for (int off = TPR / 2; off > 0; off >>= 1) {
        sum += __shfl_down_sync(0xffffffffu, sum, off, TPR);
    }
    if (lane == 0 && row < rows) y[row] = sum;
}
