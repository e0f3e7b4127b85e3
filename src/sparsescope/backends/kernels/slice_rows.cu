// CSR row slicing out[p, :] = A[rows[p], :] into a dense row-major output, two formulations
// (backends/slice_cuda.py), compiled at run time by NVRTC through cupy.RawModule.
//
// rows are validated on the host before any launch (out-of-range indices raise, or are mapped
// to an empty row appended to A); the kernels still skip a row outside [0, n_rows) rather
// than read out of bounds. SCALAR: every nonzero has the one value w and val is not read.
// A is canonical (no duplicate column in a row), so plain stores never race.

// Scatter (seed 003's kernel): one warp per selected row, lanes walk the row's nonzeros and
// store each value at out[p, col]. The output must be zero-filled first (the host does it);
// consecutive lanes store to scattered columns, so a warp's store touches up to 32 sectors.
template <typename T, typename I, bool SCALAR>
__global__ void slice_scatter(const long long n_sel, const long long cols,
                              const long long n_rows, const I* __restrict__ rows,
                              const I* __restrict__ rowptr, const I* __restrict__ col,
                              const T* __restrict__ val, const T w, T* __restrict__ out) {
    const long long p = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (p >= n_sel) return;
    const int lane = threadIdx.x & 31;
    const long long r = (long long)rows[p];
    if (r < 0 || r >= n_rows) return;  // host-validated; never read out of bounds
    T* o = out + p * cols;
    const long long end = (long long)rowptr[r + 1];
    for (long long j = (long long)rowptr[r] + lane; j < end; j += 32) {
        o[col[j]] = SCALAR ? w : val[j];
    }
}

// First index in [lo, hi) whose column is >= c (columns sorted within a row).
template <typename I>
__device__ __forceinline__ long long lower_bound(const I* __restrict__ col, long long lo,
                                                 long long hi, long long c) {
    while (lo < hi) {
        const long long mid = (lo + hi) >> 1;
        if ((long long)col[mid] < c) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// Gather (sorted-by-column): block (p, t) owns columns [t * tile, t * tile + tile) of output
// row p (blockIdx.x = p, which may exceed 65,535; blockIdx.y = t). It zeroes a tile in shared
// memory, drops the row's nonzeros of that column range into it (CSR keeps a row's columns
// sorted, so they are one contiguous run, found by two binary searches when the row spans
// several tiles), then writes the whole tile to global memory once, coalesced. No separate
// zero fill and no scattered global store: every output byte is written once, in full
// 128-byte lines. Dynamic shared memory: tile * sizeof(T).
template <typename T, typename I, bool SCALAR>
__global__ void slice_gather(const long long n_sel, const long long cols, const long long n_rows,
                             const int tile, const I* __restrict__ rows,
                             const I* __restrict__ rowptr, const I* __restrict__ col,
                             const T* __restrict__ val, const T w, T* __restrict__ out) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* buf = reinterpret_cast<T*>(smem_raw);
    __shared__ long long span[2];
    const long long p = blockIdx.x;
    const long long c0 = (long long)blockIdx.y * tile;
    if (p >= n_sel || c0 >= cols) return;  // uniform over the block
    const long long width = min((long long)tile, cols - c0);
    // The row's bounds are loaded first (every thread: one broadcast address), so their DRAM
    // latency overlaps the zero fill instead of following it.
    const long long r = (long long)rows[p];
    const bool valid = r >= 0 && r < n_rows;
    long long lo = valid ? (long long)rowptr[r] : 0;
    long long hi = valid ? (long long)rowptr[r + 1] : 0;
    if (gridDim.y > 1 && threadIdx.x == 0) {  // only part of the row falls in this tile
        const long long first = lower_bound(col, lo, hi, c0);
        span[1] = lower_bound(col, first, hi, c0 + width);
        span[0] = first;
    }
    for (long long i = threadIdx.x; i < width; i += blockDim.x) buf[i] = T(0);
    __syncthreads();
    if (gridDim.y > 1) {
        lo = span[0];
        hi = span[1];
    }
    for (long long j = lo + threadIdx.x; j < hi; j += blockDim.x) {
        buf[(long long)col[j] - c0] = SCALAR ? w : val[j];
    }
    __syncthreads();
    T* o = out + p * cols + c0;
    for (long long i = threadIdx.x; i < width; i += blockDim.x) o[i] = buf[i];
}
