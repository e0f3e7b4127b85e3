// CSR SpMM Y = A X of sparsescope's own backend (spmm-cuda-rowwarp), compiled at run time by
// NVRTC through cupy.RawModule, instantiated by name expression, e.g.
// "spmm_rowwarp<float, int, 4, 2, 1>".
//
// X is dense cols x k, row-major (X[j, c] at j * k + c); Y dense rows x k, row-major.
// One warp per row slice: a slice is a run of at most S nonzeros of one row (the host cuts
// rows longer than S so that short and long matrices alike give enough warps). A row cut into
// several slices is summed with atomicAdd into a Y the host zeroed first; a row in one slice
// is stored directly (no atomics, no zero fill needed).
//
// Inside a warp: the 32 lanes load 32 consecutive (col, val) pairs of the slice, coalesced
// (one chunk ahead of their use), then share them by shuffles. GROUP lanes cooperate on one nonzero, each loading VEC
// consecutive values of X's row (one 4-, 8- or 16-byte load: k-wide vector loads over the
// group), CHUNKS times when k > GROUP * VEC; the 32 / GROUP groups work on different nonzeros
// and their partial rows are summed by xor-shuffles at the end. Template choices (host side,
// backends/spmm_cuda.py):  VEC = largest of 4, 2, 1 dividing k (2 at most for double),
// GROUP = smallest power of two >= k / VEC (at most 32), CHUNKS = ceil(k / (GROUP * VEC)).

template <typename T, int VEC> struct VecOf;
template <> struct VecOf<float, 1> { using type = float; };
template <> struct VecOf<float, 2> { using type = float2; };
template <> struct VecOf<float, 4> { using type = float4; };
template <> struct VecOf<double, 1> { using type = double; };
template <> struct VecOf<double, 2> { using type = double2; };

template <typename T, int VEC>
__device__ __forceinline__ void load_x(const T* __restrict__ p, T (&out)[VEC]) {
    using V = typename VecOf<T, VEC>::type;
    const V v = __ldg(reinterpret_cast<const V*>(p));
    const T* parts = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = parts[i];
}

template <typename T, int VEC>
__device__ __forceinline__ void store_y(T* __restrict__ p, const T (&in)[VEC]) {
    using V = typename VecOf<T, VEC>::type;
    V v;
    T* parts = reinterpret_cast<T*>(&v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) parts[i] = in[i];
    *reinterpret_cast<V*>(p) = v;
}

// slice_ptr: n_slices + 1 offsets into col / val (the row pointer array itself when no row is
// cut; sliced = 0 then and slice s is row s, slice_row unused).
// slice_row: row of each slice, stored as -(row + 1) when the row spans several slices.
template <typename T, typename I, int VEC, int GROUP, int CHUNKS>
__global__ void spmm_rowwarp(const long long n_slices, const int k, const int sliced,
                             const I* __restrict__ slice_ptr, const I* __restrict__ slice_row,
                             const I* __restrict__ col, const T* __restrict__ val,
                             const T* __restrict__ x, T* __restrict__ y) {
    constexpr unsigned FULL = 0xffffffffu;
    constexpr int GROUPS = 32 / GROUP;
    const long long s = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (s >= n_slices) return;  // whole warps only: the shuffles below keep a full mask
    const int lane = threadIdx.x & 31;
    const int g = lane / GROUP;
    const int li = lane % GROUP;

    long long row = s;
    bool atomic = false;
    if (sliced) {
        const long long r = (long long)slice_row[s];
        atomic = r < 0;
        row = atomic ? -r - 1 : r;
    }
    const long long begin = (long long)slice_ptr[s];
    const long long end = (long long)slice_ptr[s + 1];

    T acc[CHUNKS][VEC];
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[c][v] = T(0);

    // The next 32 (col, val) pairs are loaded before the current ones are used, so their
    // latency overlaps the X gathers instead of adding to each chunk's dependent chain.
    I next_col = begin + lane < end ? col[begin + lane] : I(0);
    T next_val = begin + lane < end ? val[begin + lane] : T(0);
    for (long long base = begin; base < end; base += 32) {
        const I my_col = next_col;
        const T my_val = next_val;
        const long long ahead = base + 32 + lane;
        next_col = ahead < end ? col[ahead] : I(0);
        next_val = ahead < end ? val[ahead] : T(0);
#pragma unroll
        for (int i = 0; i < GROUP; ++i) {
            const int e = g + GROUPS * i;
            const I j = __shfl_sync(FULL, my_col, e);
            const T a = __shfl_sync(FULL, my_val, e);
            if (base + e < end) {
                const T* xrow = x + (long long)j * k;
#pragma unroll
                for (int c = 0; c < CHUNKS; ++c) {
                    const int cc = (li + GROUP * c) * VEC;
                    if (cc < k) {
                        T xv[VEC];
                        load_x<T, VEC>(xrow + cc, xv);
#pragma unroll
                        for (int v = 0; v < VEC; ++v) acc[c][v] += a * xv[v];
                    }
                }
            }
        }
    }
    // Sum the groups' partial rows: lanes li, li + GROUP, li + 2 GROUP, ... hold the same columns.
#pragma unroll
    for (int off = GROUP; off < 32; off <<= 1)
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
            for (int v = 0; v < VEC; ++v) acc[c][v] += __shfl_xor_sync(FULL, acc[c][v], off);
    if (g != 0) return;
    T* yrow = y + row * k;
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int cc = (li + GROUP * c) * VEC;
        if (cc >= k) continue;
        if (atomic) {
#pragma unroll
            for (int v = 0; v < VEC; ++v) atomicAdd(yrow + cc + v, acc[c][v]);
        } else {
            store_y<T, VEC>(yrow + cc, acc[c]);
        }
    }
}
