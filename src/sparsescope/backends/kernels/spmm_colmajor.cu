// CSR SpMM Y = A X of sparsescope's own backend spmm-cuda-colmajor (X and Y column-major),
// compiled at run time by NVRTC through cupy.RawModule, instantiated by name expression, e.g.
// "spmm_colmajor<float, int, 8, 2>" (T, I, C, BATCH; SEG, default false: "spmm_colmajor<float,
// int, 8, 4, true>" sums a cut row's slices across the warp before its atomics).
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
// the host's slice size S (a small multiple of the mean row length; longer rows are cut, and
// a cut row is summed with atomicAdd into a Y the host zeroed first: a warp first sums the
// slices of one cut row it holds with shuffles, so each warp adds once per cut row and
// column).
//
// BATCH pairs are loaded before their gathers, so BATCH x C loads of X are in flight a lane.

// slice_ptr: n_slices + 1 offsets into col / val (the row pointers themselves when no row is
// cut: sliced = 0, slice s is row s). slice_row: -(row + 1) for a row cut into several slices.
template <typename T, typename I, int C, int BATCH, bool SEG = false>
__global__ void __launch_bounds__(256) spmm_colmajor(const long long n_slices,
                              const long long rows, const long long cols, const int k,
                              const int sliced,
                              const I* __restrict__ slice_ptr, const I* __restrict__ slice_row,
                              const I* __restrict__ col, const T* __restrict__ val,
                              const T* __restrict__ x, T* __restrict__ y) {
    const long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    // Without SEG the lanes are independent and a lane past the end leaves at once. With SEG
    // the warp stays whole for the segmented sum below: a lane past the end walks no pairs
    // and takes part in the shuffles only.
    if (!SEG && s >= n_slices) return;
    const bool live = s < n_slices;
    const int c0 = blockIdx.y * C;
    const int cn = min(C, k - c0);  // columns of this tile

    long long row = s;
    bool atomic = false;
    if (sliced && live) {
        const long long r = (long long)slice_row[s];
        atomic = r < 0;
        row = atomic ? -r - 1 : r;
    }
    const long long begin = live ? (long long)slice_ptr[s] : 0;
    const long long end = live ? (long long)slice_ptr[s + 1] : 0;
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
        T xv[BATCH][C];
#pragma unroll
        for (int b = 0; b < BATCH; ++b)
#pragma unroll
            for (int c = 0; c < C; ++c)
                xv[b][c] = (base + b < end && c < cn)
                               ? __ldg(xtile + (long long)c * cols + (long long)j[b]) : T(0);
#pragma unroll
        for (int b = 0; b < BATCH; ++b)
#pragma unroll
            for (int c = 0; c < C; ++c) acc[c] += a[b] * xv[b][c];
    }

    if (SEG) {
        // The slices of a cut row sit in consecutive lanes. A segmented inclusive scan over
        // the warp (lanes of one cut row form a segment; a whole row, or a lane past the end,
        // is a segment of its own) leaves each segment's sum in its last lane, which alone
        // adds it to Y: one atomic per (warp, cut row, column) instead of one per slice. An
        // arrowhead's dense row cut into 4-pair slices made thousands of atomics on one
        // address per column. The scan costs 5 x (C + 2) shuffles a lane, as much as a short
        // slice's own work: the host asks for SEG only where a row spans a warp of slices.
        const int lane = threadIdx.x & 31;
        const long long key = live ? (atomic ? row : -2 - s) : -1;  // -2 - s: never shared
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
            const long long other = __shfl_up_sync(0xffffffffu, key, off);
            const bool same = lane >= off && other == key;
#pragma unroll
            for (int c = 0; c < C; ++c) {
                const T up = __shfl_up_sync(0xffffffffu, acc[c], off);
                if (same) acc[c] += up;
            }
        }
        const long long next = __shfl_down_sync(0xffffffffu, key, 1);
        if (!live || (atomic && lane < 31 && next == key)) return;  // not the segment's last
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
