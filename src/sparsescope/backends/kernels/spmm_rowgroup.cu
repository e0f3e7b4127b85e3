// CSR SpMM Y = A X of sparsescope's own backend spmm-cuda-rowgroup (X and Y row-major),
// compiled at run time by NVRTC through cupy.RawModule, instantiated by name expression, e.g.
// "spmm_rowgroup<float, int, 4, 2, 1, 4, 8, 2>" (T, I, VEC, G, CHUNKS, DEPTH, BATCH, MINB).
//
// X is dense cols x k, row-major (X[j, c] at j * k + c); Y dense rows x k, row-major.
//
// Layout: G lanes per ROW SLICE (not per nonzero). A warp holds 32 / G groups, each on its
// own slice (a run of at most S nonzeros of one row, cut on the host as for spmm_rowwarp:
// backends/spmm_cuda.py slice_plan). Lane li of a group owns the columns
// (li + G c) VEC .. + VEC - 1 of the slab, c < CHUNKS: VEC-wide accumulators, so no
// reduction between lanes is needed -- the group owns its slice's columns outright.
// Host choices (backends/spmm_rowgroup.py): VEC = 4, 2 or 1 floats (2 or 1 doubles) dividing
// k; a slab of kslab <= 512 columns (grid.y = ceil(k / kslab)); G = smallest power of two
// >= ceil(kslab / VEC), at most 32; CHUNKS = ceil(kslab / (G VEC)) (<= 32 registers of
// accumulators a lane in both value types).
//
// Per stage a group loads DEPTH x G (col, val) pairs of its slice, G consecutive ones per
// load (coalesced: lane li takes pair base + G d + li), then walks them by __shfl_sync inside
// the group: for each pair every lane gathers its CHUNKS vectors of X's row j with __ldg
// (a group reads kslab contiguous values of X's row: G VEC-wide loads side by side). BATCH
// pairs are gathered before their FMAs, so BATCH x CHUNKS vector loads are in flight a lane.
//
// Shuffles name only the group's lanes (mask GROUP_BITS << (gi G), width G): groups of a warp
// walk slices of different lengths and diverge; a group is alive or dead as a whole (the slice
// index is per group), so a group past n_slices (the last warp, partly filled) returns before
// any shuffle and its lanes are never named by a live group's mask.
//
// Y: uncut rows are stored with VEC-wide stores, lanes of a group on consecutive vectors of
// one row (coalesced; the 32 / G groups of a warp write 32 / G consecutive rows when no row is
// cut). A cut row (slice_row < 0) is summed with atomicAdd into a Y the host zeroed first.
//
// BLOCKSUM (the last template argument, default false): every cut row lies inside one block
// (the host puts empty pad slices before a row that would straddle two blocks, and cuts a row
// longer than the block's groups into that many longer slices: backends/spmm_rowgroup.py,
// block_sum). Each group of a cut row leaves its sums in shared memory; after the block's
// barrier the row's last group adds the others' and stores Y. No atomics and no zero fill, so
// the call is one launch (the memset before the kernel cost colmajor 1.2-2.2 us of a 5-10 us
// call on an H200). Pads are slice_row = the index type's least value; they walk no pairs.
// Dynamic shared memory: blockDim.x x CHUNKS x VEC values, then blockDim.x / G row keys
// (long long).
//
// ELL (the argument after BLOCKSUM, default false): A as row-major ELL instead of slices
// (backends/spmm_ell.py, ell_format: every row padded to ell_width stored pairs, col = -1 and
// val = 0 in the padding; slice s is row s, uncut). A group's pairs then start at
// s x ell_width, known from s alone, so the call has no slice-pointer round trip:
//
//   slices:  slice_ptr -> (col, val) -> X gathers -> Y store     3 dependent round trips
//   ELL:                  (col, val) -> X gathers -> Y store     2
//
// On a matrix of a few thousand rows with the L2 flushed the call is its round trips (the grid
// is a fraction of a wave), so one fewer is a third of the memory chain; the padding costs
// ell_width - len(row) pairs a row (8-16 bytes each, against the 4 k bytes of X a real pair
// gathers) and at most BATCH - 1 gathers of X's row 0 a row (a pad's value is 0; its shuffled
// col, -1, is the same in every lane of the group): since a row's real pairs come first, the
// group stops at the first batch after one that held a pad. slice_ptr and slice_row are not
// read. (Counting a stage's real pairs by ballots instead cost ptxas's register allocation
// dearly: 128 registers and 22-94 bytes of spills a thread at MINB 2, nvrtc 13.5 for sm_90.)

template <typename T, int VEC> struct RowGroupVec;
template <> struct RowGroupVec<float, 1> { using type = float; };
template <> struct RowGroupVec<float, 2> { using type = float2; };
template <> struct RowGroupVec<float, 4> { using type = float4; };
template <> struct RowGroupVec<double, 1> { using type = double; };
template <> struct RowGroupVec<double, 2> { using type = double2; };

template <typename T, int VEC>
__device__ __forceinline__ void rowgroup_load(const T* __restrict__ p, T (&out)[VEC]) {
    using V = typename RowGroupVec<T, VEC>::type;
    const V v = __ldg(reinterpret_cast<const V*>(p));
    const T* parts = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = parts[i];
}

template <typename T, int VEC>
__device__ __forceinline__ void rowgroup_store(T* __restrict__ p, const T (&in)[VEC]) {
    using V = typename RowGroupVec<T, VEC>::type;
    V v;
    T* parts = reinterpret_cast<T*>(&v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) parts[i] = in[i];
    __stwb(reinterpret_cast<V*>(p), v);  // one vector store (see spmm_rowwarp.cu)
}

// slice_ptr: n_slices + 1 offsets into col / val (the row pointers themselves when no row is
// cut: sliced = 0, slice s is row s, slice_row unused). slice_row: row of each slice, stored as
// -(row + 1) for a row cut into several slices.
// Column slabs: block (bx, by) computes columns [by slab, by slab + slab) (the last slab may
// be narrower: kk columns); slab is a multiple of VEC, as k is.
// MINB: blocks of 256 threads the compiler must fit on an SM (__launch_bounds__'s second
// argument caps registers at 65536 / (256 MINB)): 2 leaves up to 128 registers a thread (16
// warps an SM), 4 caps them at 64 (32 warps: twice the loads in flight when each lane holds
// one BATCH of X vectors).
template <typename T, typename I, int VEC, int G, int CHUNKS, int DEPTH, int BATCH, int MINB,
          bool BLOCKSUM = false, bool ELL = false>
__global__ void __launch_bounds__(256, MINB) spmm_rowgroup(const long long n_slices, const int k,
                              const int slab, const int sliced,
                              const I* __restrict__ slice_ptr, const I* __restrict__ slice_row,
                              const I* __restrict__ col, const T* __restrict__ val,
                              const T* __restrict__ x, T* __restrict__ y,
                              const int ell_width) {
    static_assert(!(BLOCKSUM && ELL), "ELL rows are never cut: nothing to sum in a block");
    static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "G: a power of two <= 32");
    constexpr int GROUPS = 32 / G;
    constexpr int STAGE = DEPTH * G;  // pairs a group loads per stage
    static_assert(STAGE % BATCH == 0, "BATCH must divide DEPTH x G");
    // DEPTH > 1 needs the stage unrolled (the slot d = i / G must be a compile-time register
    // index); with DEPTH = 1 the slot is always 0 and the batches stay a loop.
    constexpr int STAGE_UNROLL = DEPTH == 1 ? 1 : STAGE / BATCH;
    constexpr unsigned GROUP_BITS = G == 32 ? 0xffffffffu : ((1u << (G % 32)) - 1u);

    const int lane = threadIdx.x & 31;
    const int gi = lane / G;
    const int li = lane % G;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long s = warp * GROUPS + gi;
    // Without BLOCKSUM the whole group leaves (its lanes are in no live group's mask). With it
    // every thread must reach the block's barrier: a group past the end walks no pairs.
    if (!BLOCKSUM && s >= n_slices) return;
    const bool live = !BLOCKSUM || s < n_slices;
    const unsigned mask = G == 32 ? 0xffffffffu : (GROUP_BITS << (gi * G));

    long long row = s;
    bool atomic = false, pad = false;
    if (!ELL && sliced && live) {  // ELL: no row is cut (and no atomics are compiled)
        const long long r = (long long)slice_row[s];
        // the index type's least value: -(2^(8 sizeof(I) - 1) - 1) - 1, with no overflow
        constexpr long long PAD =
            -(long long)((1ull << (8 * sizeof(I) - 1)) - 1ull) - 1ll;
        if constexpr (BLOCKSUM) pad = r == PAD;
        atomic = r < 0 && !pad;
        row = atomic ? -r - 1 : r;
    }
    const int slab0 = blockIdx.y * slab;
    const int kk = min(slab, k - slab0);  // columns of this slab
    long long begin = 0, end = 0;
    if constexpr (ELL) {
        begin = s * (long long)ell_width;  // no pointer load: the row's pairs are at s x width
        end = begin + ell_width;
    } else if (live) {
        begin = (long long)slice_ptr[s];
        end = (long long)slice_ptr[s + 1];
    }

    T acc[CHUNKS][VEC];
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[c][v] = T(0);

    for (long long base = begin; base < end; base += STAGE) {
        I my_col[DEPTH];
        T my_val[DEPTH];
#pragma unroll
        for (int d = 0; d < DEPTH; ++d) {
            const long long idx = base + (long long)(G * d + li);
            my_col[d] = idx < end ? col[idx] : I(0);
            my_val[d] = idx < end ? val[idx] : T(0);
        }
        bool padded = false;  // ELL: this stage reached the row's padding
        const long long left = end - base;
        const int n = left < (long long)STAGE ? (int)left : STAGE;  // same for the group
#pragma unroll STAGE_UNROLL
        for (int i0 = 0; i0 < STAGE; i0 += BATCH) {
            if (i0 >= n) break;  // group-uniform: the slice's tail
            if (ELL && padded) break;  // group-uniform: the rest of the row is padding
            T a[BATCH];
            T xv[BATCH][CHUNKS][VEC];
#pragma unroll
            for (int b = 0; b < BATCH; ++b) {
                const int i = i0 + b;
                const int d = DEPTH == 1 ? 0 : i / G;
                const int e = i % G;
                I j;
                T av;
                if constexpr (G == 1) {
                    j = my_col[d];
                    av = my_val[d];
                } else {
                    j = __shfl_sync(mask, my_col[d], e, G);
                    av = __shfl_sync(mask, my_val[d], e, G);
                }
                const bool live = i < n;
                if constexpr (ELL) {
                    padded |= j < 0;  // j is the group's: uniform
                    // A pad (val 0) gathers X's row 0 rather than nothing: a load predicated
                    // on the shuffled j made ptxas copy each gather out of its register as it
                    // landed, one round trip a gather (0.7-1.1 us a call warm, H200).
                    j = j < 0 ? I(0) : j;
                }
                a[b] = live ? av : T(0);
                const T* xrow = x + (long long)j * k + slab0;
#pragma unroll
                for (int c = 0; c < CHUNKS; ++c) {
                    const int cc = (li + G * c) * VEC;
                    if (live && cc < kk) {
                        rowgroup_load<T, VEC>(xrow + cc, xv[b][c]);
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
        if (ELL && padded) break;  // group-uniform: the rest of the row is padding
    }

    if constexpr (BLOCKSUM) {
        extern __shared__ __align__(16) unsigned char rowgroup_shared[];
        constexpr int ACC = CHUNKS * VEC;
        T* sums = reinterpret_cast<T*>(rowgroup_shared);  // blockDim.x x ACC
        long long* keys = reinterpret_cast<long long*>(sums + blockDim.x * ACC);
        const int gb = threadIdx.x / G;     // the group in the block
        const int groups = blockDim.x / G;
        const long long key = atomic ? row : -1;  // cut rows take part; pads, whole rows not
        if (li == 0) keys[gb] = key;
        if (atomic) {
#pragma unroll
            for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
                for (int v = 0; v < VEC; ++v) sums[threadIdx.x * ACC + c * VEC + v] = acc[c][v];
        }
        __syncthreads();
        if (atomic) {
            if (gb + 1 < groups && keys[gb + 1] == key) return;  // not the row's last group
            for (int g = gb - 1; g >= 0 && keys[g] == key; --g) {
                const T* other = sums + (g * G + li) * ACC;
#pragma unroll
                for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
                    for (int v = 0; v < VEC; ++v) acc[c][v] += other[c * VEC + v];
            }
            atomic = false;  // the row's whole sum: stored
        }
        if (!live || pad) return;
    }

    T* yrow = y + row * (long long)k + slab0;
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int cc = (li + G * c) * VEC;
        if (cc >= kk) continue;
        if (atomic) {
#pragma unroll
            for (int v = 0; v < VEC; ++v) atomicAdd(yrow + cc + v, acc[c][v]);
        } else {
            rowgroup_store<T, VEC>(yrow + cc, acc[c]);
        }
    }
}
