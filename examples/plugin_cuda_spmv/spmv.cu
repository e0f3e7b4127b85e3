// A plain CSR SpMV kernel, y = A x, one thread per row: the worked example of docs/PLUGINS.md.
// Compiled at run time by NVRTC through cupy.RawModule (cuda_spmv.py); float32 values, int32
// indices. y is written, never read: every row's thread stores its sum (an empty row stores 0),
// so a row the launch skips keeps the NaN sparsescope fills y with before the checked run.
extern "C" __global__ void spmv_csr(const int rows, const int* __restrict__ rowptr,
                                    const int* __restrict__ col, const float* __restrict__ val,
                                    const float* __restrict__ x, float* __restrict__ y) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float sum = 0.0f;
    const int end = rowptr[row + 1];
    for (int j = rowptr[row]; j < end; ++j) sum += val[j] * __ldg(x + col[j]);
    y[row] = sum;
}
