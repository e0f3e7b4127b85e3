// CSR SpMM Y = A X of sparsescope's own backend (spmm-cuda-rowwarp), compiled at run time by
// NVRTC through cupy.RawModule, instantiated by name expression, e.g.
// "spmm_rowwarp<float, int, 4, 2, 1, 4, 8>".
//
// X is dense cols x k, row-major (X[j, c] at j * k + c); Y dense rows x k, row-major.
// One warp per row slice: a slice is a run of at most S nonzeros of one row (the host cuts
// rows longer than S so that short and long matrices alike give enough warps). A row cut into
// several slices is summed with atomicAdd into a Y the host zeroed first; a row in one slice
// is stored directly (no atomics, no zero fill needed).
//
// Inside a warp: GROUP lanes cooperate on one nonzero, each loading VEC consecutive values of
// X's row (one 4-, 8- or 16-byte load: k-wide vector loads over the group), CHUNKS times when
// k > GROUP * VEC; the 32 / GROUP groups work on different nonzeros and their partial rows are
// summed by xor-shuffles at the end. Template choices (host side, backends/spmm_cuda.py):
// VEC = largest of 4, 2, 1 dividing k (2 at most for double), GROUP = smallest power of two
// >= k / VEC (at most 32), CHUNKS = ceil(k / (GROUP * VEC)).
//
// Latency, not bandwidth, limits this kernel on small layers (seed 004's DLMC matrices give
// 128-512 warps for 132 SMs), so two more template parameters set how much each warp keeps in
// flight:
//   DEPTH  chunks of 32 (col, val) pairs loaded at once, coalesced, before any is used: one
//          DRAM round trip per 32 x DEPTH nonzeros instead of one per 32;
//   BATCH  X rows each lane gathers before it does the FMAs on them (BATCH x CHUNKS vector
//          loads in flight per lane; the compiler keeps only two in flight when every load
//          feeds the next FMA).
// Within a stage of DEPTH chunks, group g takes the entries 32 d + g + GROUPS m (d < DEPTH,
// m < GROUP): entry i of the group's DEPTH x GROUP is chunk i / GROUP, lane
// g + GROUPS (i % GROUP) -- compile-time register indices once the loops are unrolled.

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
    // __stwb (st.global.wb, the default store) keeps the store one vector instruction: with
    // a plain assignment NVVM split it into VEC scalar stores once Y's row offset had a
    // column-slab term.
    __stwb(reinterpret_cast<V*>(p), v);
}

// slice_ptr: n_slices + 1 offsets into col / val (the row pointer array itself when no row is
// cut; sliced = 0 then and slice s is row s, slice_row unused).
// slice_row: row of each slice, stored as -(row + 1) when the row spans several slices.
// At most 256 threads a block and 128 registers a thread (two blocks of 8 warps per SM): the
// unrolled stage lets the compiler hoist whole batches, which it would otherwise pay for in
// occupancy (186 registers at k = 64 without the bound).
//
// Column slabs: block (bx, by) computes columns [by * slab, by * slab + slab) of its slices'
// rows (slab = k: one slab). Blocks are launched x-fastest, so the blocks resident together
// work on one slab and the SM's L1 can hold X[:, slab] (cols x slab values) instead of all of
// X: each X row fetched from L2 once per SM and slab rather than once per nonzero.
template <typename T, typename I, int VEC, int GROUP, int CHUNKS, int DEPTH, int BATCH>
__global__ void __launch_bounds__(256, 2) spmm_rowwarp(const long long n_slices, const int k,
                             const int slab, const int sliced,
                             const I* __restrict__ slice_ptr, const I* __restrict__ slice_row,
                             const I* __restrict__ col, const T* __restrict__ val,
                             const T* __restrict__ x, T* __restrict__ y) {
    constexpr unsigned FULL = 0xffffffffu;
    constexpr int GROUPS = 32 / GROUP;
    constexpr int ENTRIES = DEPTH * GROUP;  // nonzeros per group per stage
    static_assert(ENTRIES % BATCH == 0, "BATCH must divide DEPTH x GROUP");
    // DEPTH > 1 needs the stage unrolled (the chunk index must be a compile-time register
    // index); with DEPTH = 1 the batches stay a loop, so the compiler cannot hoist all 32
    // entries' gathers of a whole-warp nonzero (k > 64) and spill.
    constexpr int STAGE_UNROLL = DEPTH == 1 ? 1 : ENTRIES / BATCH;
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
    const int slab0 = blockIdx.y * slab;
    const int kk = min(slab, k - slab0);  // columns of this slab
    const long long begin = (long long)slice_ptr[s];
    const long long end = (long long)slice_ptr[s + 1];

    T acc[CHUNKS][VEC];
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[c][v] = T(0);

    for (long long base = begin; base < end; base += 32 * DEPTH) {
        // DEPTH coalesced loads per lane, all issued before the first is used.
        I my_col[DEPTH];
        T my_val[DEPTH];
#pragma unroll
        for (int d = 0; d < DEPTH; ++d) {
            const long long idx = base + 32 * d + lane;
            my_col[d] = idx < end ? col[idx] : I(0);
            my_val[d] = idx < end ? val[idx] : T(0);
        }
#pragma unroll STAGE_UNROLL
        for (int i0 = 0; i0 < ENTRIES; i0 += BATCH) {
            if (base + 32 * (i0 / GROUP) >= end) break;  // warp-uniform: the stage's tail
            T a[BATCH];
            T xv[BATCH][CHUNKS][VEC];
#pragma unroll
            for (int b = 0; b < BATCH; ++b) {
                const int i = i0 + b;
                const int d = DEPTH == 1 ? 0 : i / GROUP;
                const int e = g + GROUPS * (i % GROUP);
                const I j = __shfl_sync(FULL, my_col[d], e);
                a[b] = __shfl_sync(FULL, my_val[d], e);
                const bool live = base + 32 * d + e < end;
                const T* xrow = x + (long long)j * k + slab0;
#pragma unroll
                for (int c = 0; c < CHUNKS; ++c) {
                    const int cc = (li + GROUP * c) * VEC;
                    if (live && cc < kk) {
                        load_x<T, VEC>(xrow + cc, xv[b][c]);
                    } else {
#pragma unroll
                        for (int v = 0; v < VEC; ++v) xv[b][c][v] = T(0);
                    }
                }
            }
#pragma unroll
            for (int b = 0; b < BATCH; ++b)
#pragma unroll
                for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
                    for (int v = 0; v < VEC; ++v) acc[c][v] += a[b] * xv[b][c][v];
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
    T* yrow = y + row * k + slab0;
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int cc = (li + GROUP * c) * VEC;
        if (cc >= kk) continue;
        if (atomic) {
#pragma unroll
            for (int v = 0; v < VEC; ++v) atomicAdd(yrow + cc + v, acc[c][v]);
        } else {
            store_y<T, VEC>(yrow + cc, acc[c]);
        }
    }
}
