// CSR SpMM Y = A X of sparsescope's own backend spmm-cuda-colmajor (X and Y column-major),
// compiled at run time by NVRTC through cupy.RawModule, instantiated by name expression, e.g.
// "spmm_colmajor<float, int, 8, 2>" (T, I, C, BATCH; SEG, default false: "spmm_colmajor<float,
// int, 8, 4, true>" sums a cut row's slices across the warp, the instance the host picks
// whenever a row is cut).
//
// X is dense cols x k, column-major (X[j, c] at c * cols + j); Y dense rows x k, column-major
// (Y[i, c] at c * rows + i).
//
// Layout: one LANE per row slice (a run of at most S nonzeros of one row, cut on the host,
// backends/spmm_colmajor.py), a tile of C columns per thread: grid.y = ceil(k / C) tiles,
// thread (x, y) computes Y[row(slice x), y C .. y C + C - 1].
//
// Why this layout and not a group of lanes across one row's nonzeros:
// * Y writes are coalesced. Lanes hold consecutive slices, i.e. consecutive rows when no row
//   is cut, so for each column c of the tile the 32 lanes of a warp write 32 consecutive
//   values of Y[:, c]: one 128-byte line (float32) per column. A group across nonzeros
//   ends with a row's C sums in one group; writing them is C stores 4 * rows bytes apart,
//   one sector per value, unless staged through shared memory.
// * A's (col, val) pairs are read once per tile and used for C columns: a pair (8-16 bytes)
//   feeds C gathers and C FMAs, so with C = 8 A's share of the requested bytes is 3-6 %
//   (8 sectors of X per nonzero). A lane reads its slice's pairs in order: one 32-byte sector
//   holds 8 (int32) indices, so the next 7 loads of the lane hit L1.
// * X gathers cannot be coalesced by any layout of a CSR row: X[j, c] for C columns are C
//   values cols apart (one sector each, the model's sectors_col = k), and a row's nonzeros
//   have unrelated j. What the layout does give: lanes of a warp are neighbouring rows, whose
//   columns j are neighbours on banded / FEM matrices, so their gathers of X[:, c] share
//   sectors; and blocks resident together (launched x-fastest) work on one tile, so the SMs'
//   L1 and the L2 hold X[:, tile] (C x cols values), not all of X.
// * No reduction across lanes for whole rows: each lane owns its slice's C sums.
// The cost is load imbalance inside a warp (it runs as long as its longest slice), bounded by
// the host's slice size S (a small multiple of the mean row length; longer rows are cut).
//
// A cut row's slices sit in consecutive lanes, and the warp sums them with a segmented scan
// (SEG) whose last lane of the row stores Y. The host keeps every row of at most 32 slices
// inside one warp (backends/spmm_colmajor.py, warp_aligned_slices: empty pad slices before a
// row that would straddle two warps), so such a row needs no atomics and Y no zero fill: the
// call is one launch. On an H200 the memset before the kernel cost 1.2-2.2 us of a 5-10 us
// call (results/h200/real-dev/2026-11-28-ell); joining the warps' sums in the kernel instead
// (a workspace, a fence and a counter) cost 3-4 us more (reverted, 8457a0e). A row of more
// than 32 slices spans warps whatever the layout, and needs a zeroed Y: where there is one
// the host cuts the plain way (no pads) and a cut row's lanes add their sums with atomicAdd
// into the Y it zeroed first (the scan first only where a row has 32 slices or more: then
// one atomic a warp and column, not one a slice).
//
// BATCH pairs are loaded before their gathers, so BATCH x C loads of X are in flight a lane.
//
// ELL (the argument after SEG, default false): A as row-major ELL (backends/spmm_ell.py,
// ell_format: every row padded to ell_width pairs, col -1 and val 0 in the padding), a lane a
// row, its pairs at s x ell_width: no slice pointer to load first, one dependent round trip
// fewer a call (as spmm_rowgroup.cu's ELL). A lane's pairs are contiguous, as a CSR row's;
// a pad (val 0) gathers X's row 0 (a guard on the loaded col is a load ptxas serializes),
// and a lane stops after its first batch holding a pad (lanes are independent: no scan).

// slice_ptr: n_slices + 1 offsets into col / val (the row pointers themselves when no row is
// cut: sliced = 0, slice s is row s). slice_row: the slice's row, stored as -(row + 1) for a
// row cut across warps (atomics), and as -(rows + 1) for a pad slice (no pairs, no row).
// span (SEG): the scan's reach, a power of two >= the most slices of a row inside one warp
// (32 where a row spans warps): log2(span) steps.
template <typename T, typename I, int C, int BATCH, bool SEG = false, bool ELL = false>
__global__ void __launch_bounds__(256) spmm_colmajor(const long long n_slices,
                              const long long rows, const long long cols, const int k,
                              const int sliced, const int span,
                              const I* __restrict__ slice_ptr, const I* __restrict__ slice_row,
                              const I* __restrict__ col, const T* __restrict__ val,
                              const T* __restrict__ x, T* __restrict__ y,
                              const int ell_width) {
    static_assert(!(SEG && ELL), "ELL rows are never cut: nothing to scan");
    const long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    // Without SEG the lanes are independent and a lane past the end leaves at once. With SEG
    // the warp stays whole for the segmented sum below: a lane past the end walks no pairs
    // and takes part in the shuffles only.
    if (!SEG && s >= n_slices) return;
    const bool live = s < n_slices;
    const int c0 = blockIdx.y * C;
    const int cn = min(C, k - c0);  // columns of this tile

    long long row = s;
    bool atomic = false, pad = false;
    if (!ELL && sliced && live) {  // ELL: no row is cut (and no atomics are compiled)
        const long long r = (long long)slice_row[s];
        // Pads come only with the aligned layout, which is SEG's. Kept out of the instance
        // without SEG: with the pad test in it, ptxas put an FMA before the last two gathers
        // of <float, int, 8, 2> (a second round trip a batch), and uncut matrices ran 8-20 %
        // slower (H200, results/h200/real-dev/2026-11-28-aligned against ...-ell).
        if constexpr (SEG) pad = r < -rows;
        atomic = r < 0 && !pad;
        row = r < 0 ? -r - 1 : r;
    }
    long long begin = 0, end = 0;
    if constexpr (ELL) {
        begin = s * (long long)ell_width;  // no pointer load: the row's pairs are at s x width
        end = begin + ell_width;
    } else if (live) {
        begin = (long long)slice_ptr[s];
        end = (long long)slice_ptr[s + 1];
    }
    const T* xtile = x + (long long)c0 * cols;  // X[:, c0]

    T acc[C];
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] = T(0);

    for (long long base = begin; base < end; base += BATCH) {
        I j[BATCH];
        T a[BATCH];
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
            const long long idx = base + b;
            j[b] = idx < end ? __ldg(col + idx) : I(0);
            a[b] = idx < end ? __ldg(val + idx) : T(0);
        }
        bool padded = false;  // ELL: this batch reached the row's padding
        if constexpr (ELL) {
#pragma unroll
            for (int b = 0; b < BATCH; ++b) {
                padded |= j[b] < 0;
                j[b] = j[b] < 0 ? I(0) : j[b];  // a pad (val 0) gathers X's row 0
            }
        }
        T xv[BATCH][C];
#pragma unroll
        for (int b = 0; b < BATCH; ++b)
#pragma unroll
            for (int c = 0; c < C; ++c) {
                if constexpr (SEG) {
                    // Unguarded: a pair past the slice's end gathers X[0, c] (its a is 0), a
                    // column past k the tile's last column (L1 hits). Guarded, the SEG
                    // instance (its warp kept whole for the scan) was compiled into a
                    // convergence region a load and ran 2.3-2.5 us slower a call than the
                    // instance without the scan (H200, k = 8, 8-pair slices); unguarded,
                    // ptxas issues all BATCH x C gathers before the first FMA. The instance
                    // without SEG keeps its guards: unguarded, ptxas interleaved its FMAs
                    // with the gathers.
                    xv[b][c] = __ldg(xtile + (long long)(c < cn ? c : cn - 1) * cols
                                     + (long long)j[b]);
                } else {
                    xv[b][c] = (base + b < end && c < cn)
                                   ? __ldg(xtile + (long long)c * cols + (long long)j[b])
                                   : T(0);
                }
            }
#pragma unroll
        for (int b = 0; b < BATCH; ++b)
#pragma unroll
            for (int c = 0; c < C; ++c) acc[c] += a[b] * xv[b][c];
        if (ELL && padded) break;  // the rest of the row is padding
    }

    if (SEG) {
        // The slices of a row sit in consecutive lanes. A segmented inclusive scan over the
        // warp (the lanes of one row form a segment; pads and lanes past the end share key -1
        // and store nothing) leaves each segment's sum in its last lane, which alone writes
        // Y: a store for a row inside the warp, an atomic for a row across warps (one per
        // warp, row and column: an arrowhead's dense row cut into 4-pair slices made
        // thousands of atomics on one address per column without it). The scan costs
        // log2(span) x (C + 2) shuffles a lane: 2 steps for rows of at most 4 slices.
        const int lane = threadIdx.x & 31;
        const long long key = (live && !pad) ? row : -1;
        for (int off = 1; off < span; off <<= 1) {
            const long long other = __shfl_up_sync(0xffffffffu, key, off);
            const bool same = lane >= off && other == key;
#pragma unroll
            for (int c = 0; c < C; ++c) {
                const T up = __shfl_up_sync(0xffffffffu, acc[c], off);
                if (same) acc[c] += up;
            }
        }
        const long long next = __shfl_down_sync(0xffffffffu, key, 1);
        if (key < 0 || (lane < 31 && next == key)) return;  // not a segment's last lane
        if (pad) return;
    }

    T* ycol = y + (long long)c0 * rows + row;  // Y[row, c0]
#pragma unroll
    for (int c = 0; c < C; ++c) {
        if (c >= cn) break;
        if (atomic) {
            atomicAdd(ycol + (long long)c * rows, acc[c]);
        } else {
            ycol[(long long)c * rows] = acc[c];
        }
    }
}
