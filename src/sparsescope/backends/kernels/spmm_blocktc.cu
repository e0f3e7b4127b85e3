// Block-sparse SpMM Y = A X on tensor cores, sparsescope's own backend spmm-cuda-blocktc
// (X and Y row-major float32), compiled at run time by NVRTC, instantiated by name expression,
// e.g. "spmm_blocktc<3, 1, true, 2, 4>" (PASSES, NG, VEC4, SPLIT, BATCH). Needs sm_80 or newer
// (mma.sync TF32).
//
// A is stored as 16 x 8 blocks (backends/spmm_blocktc.py, block_format): block_ptr over block
// rows (16 rows of A each), block_col (the block's 8-column index), block_val (128 values a
// block, zeros where A has none) in the order of the m16n8k8 A fragment, so that lane l reads
// its four values with one 16-byte load. With g = l / 4 and t = l % 4 (PTX ISA, "Matrix
// fragments for mma.m16n8k8", .tf32):
//   A (16 x 8, row): a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]
//   B (8 x 8, col):  b0 = B[t][g], b1 = B[t+4][g]
//   C (16 x 8):      c0 = C[g][2t], c1 = C[g][2t+1], c2 = C[g+8][2t], c3 = C[g+8][2t+1]
//
// SPLIT warps own one block row and NG groups of 32 columns of Y (grid.y slabs of 32 NG
// columns); a CUDA block holds 4 / SPLIT block rows. The row's warps take every SPLIT-th block
// and sum their accumulators through shared memory at the end; the first stores Y.
// A group is four n8 fragments whose columns interleave: column n of fragment f is the group's
// column 4n + f. Lane (g, t) then needs X[r][4g .. 4g+3] for r = t and t + 4 of the block's 8
// X rows: one 16-byte load gives its B values of all four fragments; and its accumulators of
// the four fragments are Y[g][8t .. 8t+7] (c0, c1) and Y[g+8][8t .. 8t+7] (c2, c3): two
// 16-byte stores a row. Every X sector a warp loads is used whole (8 lanes on 32 bytes a row).
//
// PASSES: 1 multiplies TF32-rounded A and X (10-bit mantissas: about 1e-4 relative error, the
// report labels it); 3 splits each float into hi = tf32(v) and lo = tf32(v - hi) and sums
// lo*hi + hi*lo + hi*hi (the small terms first), which keeps float32-level error ("3xTF32").
// Accumulation is float32 either way.
//
// A warp loads BATCH blocks' A fragments and X values before it multiplies any of them, so
// BATCH round trips to the L2 overlap; measured on the H200 with one block ahead and one warp a
// row (results/h200/spmm-tuning/2026-11-25-blocktc-first), a 512 x 512 weight took 42 us at
// k = 32 for 2,048 blocks: each warp waited out 64 round trips in turn.
//
// Edges: X rows past `cols` and Y columns past k read as zero / are not stored (the block's
// padding values are zero, but X past its end is not ours to read); Y rows past `rows` are not
// stored. VEC4 (k % 4 == 0) moves X and Y in 16-byte vectors, else one value at a time.

template <bool VEC4>
__device__ __forceinline__ void blocktc_load_x(const float* __restrict__ x, int row, int cols,
                                               int k, int col, float (&out)[4]) {
    if (row >= cols) {
#pragma unroll
        for (int i = 0; i < 4; ++i) out[i] = 0.f;
        return;
    }
    const float* p = x + (size_t)row * k + col;
    if (VEC4) {
        if (col < k) {
            const float4 v = __ldg(reinterpret_cast<const float4*>(p));
            out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = v.w;
        } else {
#pragma unroll
            for (int i = 0; i < 4; ++i) out[i] = 0.f;
        }
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) out[i] = (col + i < k) ? __ldg(p + i) : 0.f;
    }
}

template <bool VEC4>
__device__ __forceinline__ void blocktc_store_y(float* __restrict__ y, int row, int rows,
                                                int k, int col, const float (&in)[4]) {
    if (row >= rows) return;
    float* p = y + (size_t)row * k + col;
    if (VEC4) {
        if (col < k) *reinterpret_cast<float4*>(p) = make_float4(in[0], in[1], in[2], in[3]);
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) if (col + i < k) p[i] = in[i];
    }
}

__device__ __forceinline__ unsigned blocktc_tf32(float v) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

// tf32(v) by integer operations: round to nearest, ties away from zero, on the magnitude
// (the sign bit is untouched): the same bits as cvt.rna.tf32.f32 for every finite v below the
// largest float's rounding, with an integer add and a logical AND instead of a conversion.
__device__ __forceinline__ unsigned blocktc_tf32_int(float v) {
    return (__float_as_uint(v) + 0x1000u) & 0xffffe000u;
}

// hi = tf32(v); lo = tf32(v - hi) (lo unused with one pass). ISPLIT: by integer operations
// (blocktc_tf32_int) instead of cvt.
template <int PASSES, bool ISPLIT = false>
__device__ __forceinline__ void blocktc_split(float v, unsigned& hi, unsigned& lo) {
    if constexpr (ISPLIT) {
        hi = blocktc_tf32_int(v);
        lo = PASSES == 3 ? blocktc_tf32_int(v - __uint_as_float(hi)) : 0u;
    } else {
        hi = blocktc_tf32(v);
        lo = PASSES == 3 ? blocktc_tf32(v - __uint_as_float(hi)) : 0u;
    }
}

__device__ __forceinline__ void blocktc_mma(float (&c)[4], const unsigned (&a)[4],
                                            unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int NG, bool VEC4>
__device__ __forceinline__ void blocktc_fetch(const float* __restrict__ block_val,
                                              const float* __restrict__ x, int b, int bcol,
                                              int lane, int t, int cols, int k, int xcol,
                                              float4& a, float (&xv)[NG][2][4]) {
    a = __ldg(reinterpret_cast<const float4*>(block_val) + (size_t)b * 32 + lane);
    const int row = bcol * 8 + t;
#pragma unroll
    for (int q = 0; q < NG; ++q) {
        blocktc_load_x<VEC4>(x, row, cols, k, xcol + 32 * q, xv[q][0]);
        blocktc_load_x<VEC4>(x, row + 4, cols, k, xcol + 32 * q, xv[q][1]);
    }
}

// A lane's four A values split into their TF32 parts (blocktc_split).
template <int PASSES, bool ISPLIT>
__device__ __forceinline__ void blocktc_split_fragment(const float4& a, unsigned (&hi)[4],
                                                       unsigned (&lo)[4]) {
    blocktc_split<PASSES, ISPLIT>(a.x, hi[0], lo[0]);
    blocktc_split<PASSES, ISPLIT>(a.y, hi[1], lo[1]);
    blocktc_split<PASSES, ISPLIT>(a.z, hi[2], lo[2]);
    blocktc_split<PASSES, ISPLIT>(a.w, hi[3], lo[3]);
}

// acc += the block (its A fragment a, its X values xv) for every group and fragment.
template <int PASSES, int NG, bool ISPLIT = false>
__device__ __forceinline__ void blocktc_multiply(float (&acc)[NG][4][4], const float4& a,
                                                 const float (&xv)[NG][2][4]) {
    unsigned a_hi[4], a_lo[4];
    blocktc_split_fragment<PASSES, ISPLIT>(a, a_hi, a_lo);
#pragma unroll
    for (int q = 0; q < NG; ++q)
#pragma unroll
        for (int f = 0; f < 4; ++f) {
            unsigned b0_hi, b0_lo, b1_hi, b1_lo;
            blocktc_split<PASSES, ISPLIT>(xv[q][0][f], b0_hi, b0_lo);
            blocktc_split<PASSES, ISPLIT>(xv[q][1][f], b1_hi, b1_lo);
            if (PASSES == 3) {
                blocktc_mma(acc[q][f], a_lo, b0_hi, b1_hi);
                blocktc_mma(acc[q][f], a_hi, b0_lo, b1_lo);
            }
            blocktc_mma(acc[q][f], a_hi, b0_hi, b1_hi);
        }
}

// Warps a CUDA block: 4, or SPLIT when a block row takes more (8 or 16).
template <int SPLIT> struct BlocktcWarps { static constexpr int value = SPLIT > 4 ? SPLIT : 4; };

template <int PASSES, int NG, bool VEC4, int SPLIT, int BATCH>
__global__ void __launch_bounds__(32 * BlocktcWarps<SPLIT>::value) spmm_blocktc(
    int block_rows, int rows, int cols, int k,
    const int* __restrict__ block_ptr, const int* __restrict__ block_col,
    const float* __restrict__ block_val, const float* __restrict__ x, float* __restrict__ y) {
    constexpr int WARPS = BlocktcWarps<SPLIT>::value;
    static_assert(PASSES == 1 || PASSES == 3, "PASSES is 1 (TF32) or 3 (3xTF32)");
    static_assert(SPLIT == 1 || SPLIT == 2 || SPLIT == 4 || SPLIT == 8 || SPLIT == 16,
                  "SPLIT is a power of two up to 16");
    static_assert(SPLIT <= 4 || NG == 1, "more than 4 warps a row only with one group");
    const int wib = threadIdx.x >> 5;  // warp in the CUDA block
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int brow = blockIdx.x * (WARPS / SPLIT) + wib / SPLIT;
    const int part = wib % SPLIT;      // which of the block row's SPLIT warps
    const bool active = brow < block_rows;
    const int col0 = blockIdx.y * 32 * NG;   // the warp's first Y column
    const int xcol = col0 + 4 * g;           // its lane's first X column in group 0

    float acc[NG][4][4];
#pragma unroll
    for (int q = 0; q < NG; ++q)
#pragma unroll
        for (int f = 0; f < 4; ++f)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[q][f][i] = 0.f;

    if (active) {
        const int begin = __ldg(block_ptr + brow), end = __ldg(block_ptr + brow + 1);
        // The warp's blocks are every SPLIT-th of the row from its part. Their block columns
        // are read 32 at a time, one a lane, and passed round by shuffles, so the X loads of
        // a batch wait for no load of their own row index. BATCH blocks are loaded together,
        // then multiplied: BATCH x (1 + 2 NG) loads in flight a lane.
        for (int w0 = begin + part; w0 < end; w0 += 32 * SPLIT) {
            const int mine = w0 + lane * SPLIT;
            const int my_col = mine < end ? __ldg(block_col + mine) : 0;
            const int n = min(32, (end - w0 + SPLIT - 1) / SPLIT);   // warp-uniform
            for (int j = 0; j < n; j += BATCH) {
                float4 a[BATCH];
                float xv[BATCH][NG][2][4];
#pragma unroll
                for (int s = 0; s < BATCH; ++s) {
                    const int bcol = __shfl_sync(0xffffffffu, my_col, (j + s) & 31);
                    if (j + s < n)
                        blocktc_fetch<NG, VEC4>(block_val, x, w0 + (j + s) * SPLIT, bcol,
                                                lane, t, cols, k, xcol, a[s], xv[s]);
                }
#pragma unroll
                for (int s = 0; s < BATCH; ++s)
                    if (j + s < n) blocktc_multiply<PASSES, NG>(acc, a[s], xv[s]);
            }
        }
    }
    if (SPLIT > 1) {
        // the row's parts summed through shared memory (lane-minor: no bank conflicts);
        // every warp reaches the barrier, active or not
        __shared__ float red[WARPS][NG * 16][32];
        if (part != 0) {
#pragma unroll
            for (int q = 0; q < NG; ++q)
#pragma unroll
                for (int f = 0; f < 4; ++f)
#pragma unroll
                    for (int i = 0; i < 4; ++i) red[wib][q * 16 + f * 4 + i][lane] = acc[q][f][i];
        }
        __syncthreads();
        if (part == 0) {
#pragma unroll
            for (int p = 1; p < SPLIT; ++p)
#pragma unroll
                for (int q = 0; q < NG; ++q)
#pragma unroll
                    for (int f = 0; f < 4; ++f)
#pragma unroll
                        for (int i = 0; i < 4; ++i)
                            acc[q][f][i] += red[wib + p][q * 16 + f * 4 + i][lane];
        }
    }
    if (!active || part != 0) return;

    const int row = brow * 16 + g;
#pragma unroll
    for (int q = 0; q < NG; ++q) {
        const int col = col0 + 32 * q + 8 * t;
        const float top_lo[4] = {acc[q][0][0], acc[q][1][0], acc[q][2][0], acc[q][3][0]};
        const float top_hi[4] = {acc[q][0][1], acc[q][1][1], acc[q][2][1], acc[q][3][1]};
        const float bot_lo[4] = {acc[q][0][2], acc[q][1][2], acc[q][2][2], acc[q][3][2]};
        const float bot_hi[4] = {acc[q][0][3], acc[q][1][3], acc[q][2][3], acc[q][3][3]};
        blocktc_store_y<VEC4>(y, row, rows, k, col, top_lo);
        blocktc_store_y<VEC4>(y, row, rows, k, col + 4, top_hi);
        blocktc_store_y<VEC4>(y, row + 8, rows, k, col, bot_lo);
        blocktc_store_y<VEC4>(y, row + 8, rows, k, col + 4, bot_hi);
    }
}

// ---------------------------------------------------------------------------------------------
// Panels: spmm_paneltc<PASSES, MB, WN, NF, KB, STAGES, ISPLIT, XSPLIT> (backend
// spmm-cuda-paneltc, X and Y row-major float32, k a multiple of 4), e.g.
// "spmm_paneltc<3, 4, 2, 16, 4, 3, true, false>"; ISPLIT: the TF32 parts by integer operations
// (blocktc_tf32_int) instead of cvt; XSPLIT: X split once a stage in shared memory (below);
// WN: warps a block row, each NF / WN of the CTA's NF n8 fragments (more warps an SM for the
// same shared memory: with one warp a block row the H200 held 6 to 11 warps an SM, and the
// fixed-latency waits between dependent instructions were the largest stall).
//
// Why: spmm_blocktc's warps each walk their own block row and load every block's X tile from
// the L2, so a dense-ish weight (80 % sparse: every 16 x 8 block occupied) sends X through the
// L2 once per block row. Here a CTA owns a PANEL of MB block rows (16 MB rows of A) and NC =
// 8 NF columns of Y (grid (panels, ceil(k / NC), splits)); the panel's ITEMS are the 8-column
// blocks any of its block rows occupies (the union, in column order), each stored as MB whole
// A fragments (zeros where a block row has none: backends/spmm_paneltc.py, panel_format). For
// each item the CTA stages X[8 c .. 8 c + 8, n0 .. n0 + NC) in shared memory once, by cp.async,
// and its MB x WN warps (WN a block row) multiply it by their fragments: X crosses the L2 once per
// (panel, item, column tile) instead of once per (block row, block), MB times less.
//
// Pipeline: items go KB at a time (a GROUP: one stage of KB x 8 X rows and KB x MB fragments,
// one commit group), STAGES stages in flight, one __syncthreads a group; the 8-column indices
// of the next group to stage are loaded into registers a whole group ahead, so issuing a stage
// never waits for them.
//
// Shared memory of a stage: X rows of NC + 8 floats (the 32-byte pad puts the 8 lanes of each
// quarter-warp of a 16-byte load -- rows t, columns 4g, g in {0, 1} -- on 8 different 16-byte
// bank groups), then the fragments, 512 bytes each (lane-contiguous 16-byte loads).
//
// A warp's accumulators: NF / 4 groups of four interleaved n8 fragments, exactly as in
// spmm_blocktc (blocktc_multiply: lane (g, t) reads X[t][32 q + 4 g .. + 3] and X[t + 4][...]
// with one 16-byte load each and stores Y[g][32 q + 8 t .. + 7] and Y[g + 8][...]).
//
// Splits (grid.z = splits): each panel's items cut into `splits` contiguous runs, one CTA
// each; with splits > 1 the host zeroes Y first and the CTAs add their partial tiles with
// atomicAdd (a CTA whose run is empty returns at once).
//
// XSPLIT: the MB warps would each split the same staged X values into their TF32 parts (five
// integer and float operations a value, a warp's 32 values an item: most of its instructions
// besides the mma). Instead, once a group's stage has landed, the CTA splits it in place: hi
// over the staged value, lo into one more buffer of the stage's size (only the group being
// multiplied needs it), then a second __syncthreads; the warps load both parts ready for the
// mma. Without it the H200 issued about 8.6 warp instructions an mma (weights-20, k = 256); with
// it the kernel was slower in every case measured (the lo buffer costs a CTA an SM, and a group
// waits at a second barrier), so it is off by default
// (results/h200/spmm-break-even/2026-11-28-paneltc).
//
// Edges: X rows past `cols` and X columns past k are staged as zeros (cp.async's zero fill: a
// source size of 0); Y rows past `rows` and columns past k are not stored. A panel with no
// item stores zeros (splits == 1).

template <int MB, int NF, int KB> struct PanelTcSmem {
    static constexpr int NC = 8 * NF;               // Y columns a CTA
    static constexpr int XSTRIDE = NC + 8;          // floats a staged X row (32-byte pad)
    static constexpr int X_FLOATS = KB * 8 * XSTRIDE;
    static constexpr int A_FLOATS = KB * MB * 128;
    static constexpr int STAGE_FLOATS = X_FLOATS + A_FLOATS;
};

// The mma without `volatile`: it has no effect besides its outputs, so the compiler may
// interleave the products of different fragments (blocktc_mma's volatile asm keeps them in
// source order).
__device__ __forceinline__ void paneltc_mma(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                            unsigned b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// acc += a block row's fragment (a) times the group's X values (xv, in blocktc_multiply's
// order; with XSPLIT already split: xv the hi parts, xl the lo ones). Each accumulator takes
// lo*hi, hi*lo, hi*hi in that order, as in blocktc_multiply, but pass by pass over a group's
// four fragments, so that one accumulator's three dependent mma are apart. (The H200 measured
// no change from it: weights-20 at k = 256, 218 us against 215 us before, in two calls.)
template <int PASSES, int NG, bool ISPLIT, bool XSPLIT>
__device__ __forceinline__ void paneltc_multiply(float (&acc)[NG][4][4], const float4& a,
                                                 const float (&xv)[NG][2][4],
                                                 const float (&xl)[NG][2][4]) {
    unsigned a_hi[4], a_lo[4];
    blocktc_split_fragment<PASSES, ISPLIT>(a, a_hi, a_lo);
#pragma unroll
    for (int q = 0; q < NG; ++q) {
        unsigned bh[2][4], bl[2][4];
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int f = 0; f < 4; ++f) {
                if constexpr (XSPLIT) {
                    bh[h][f] = __float_as_uint(xv[q][h][f]);
                    bl[h][f] = PASSES == 3 ? __float_as_uint(xl[q][h][f]) : 0u;
                } else {
                    blocktc_split<PASSES, ISPLIT>(xv[q][h][f], bh[h][f], bl[h][f]);
                }
            }
        if constexpr (PASSES == 3) {
#pragma unroll
            for (int f = 0; f < 4; ++f) paneltc_mma(acc[q][f], a_lo, bh[0][f], bh[1][f]);
#pragma unroll
            for (int f = 0; f < 4; ++f) paneltc_mma(acc[q][f], a_hi, bl[0][f], bl[1][f]);
        }
#pragma unroll
        for (int f = 0; f < 4; ++f) paneltc_mma(acc[q][f], a_hi, bh[0][f], bh[1][f]);
    }
}

__device__ __forceinline__ void paneltc_copy16(float* smem, const float* gmem, int src_bytes) {
    const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(gmem),
                 "r"(src_bytes) : "memory");
}

__device__ __forceinline__ void paneltc_add_y(float* __restrict__ y, int row, int rows, int k,
                                              int col, const float (&in)[4]) {
    if (row >= rows || col >= k) return;
    float* p = y + (size_t)row * k + col;
#pragma unroll
    for (int i = 0; i < 4; ++i) atomicAdd(p + i, in[i]);
}

template <int PASSES, int MB, int WN, int NF, int KB, int STAGES, bool ISPLIT, bool XSPLIT>
__global__ void __launch_bounds__(32 * MB * WN) spmm_paneltc(
    int rows, int cols, int k, const int* __restrict__ panel_ptr,
    const int* __restrict__ item_col, const float* __restrict__ item_val,
    const float* __restrict__ x, float* __restrict__ y, int splits) {
    using L = PanelTcSmem<MB, NF, KB>;
    constexpr int THREADS = 32 * MB * WN;
    constexpr int NG = NF / (4 * WN);               // groups of four n8 fragments a warp
    constexpr int PER_ROW = L::NC / 4;              // 16-byte copies a staged X row
    static_assert(PASSES == 1 || PASSES == 3, "PASSES is 1 (TF32) or 3 (3xTF32)");
    static_assert(NF % (4 * WN) == 0 && NF <= 16, "NF a multiple of 4 WN, at most 16");
    static_assert(STAGES >= 2 && STAGES <= 4, "2 to 4 stages");
    extern __shared__ __align__(16) float paneltc_smem[];

    const int warp = (threadIdx.x >> 5) / WN;       // the warp's block row in the panel
    const int wcol = ((threadIdx.x >> 5) % WN) * NG * 32;   // its first column in the tile
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int panel = blockIdx.x;
    const int n0 = blockIdx.y * L::NC;
    const int p_first = __ldg(panel_ptr + panel);
    const int p_n = __ldg(panel_ptr + panel + 1) - p_first;
    // this split's run of the panel's items (all of them when splits == 1)
    const int first = p_first + (int)((long long)p_n * blockIdx.z / splits);
    const int n_items = p_first + (int)((long long)p_n * (blockIdx.z + 1) / splits) - first;
    const bool add = splits > 1;   // Y zeroed by the host: partial tiles added atomically
    if (add && n_items == 0) return;   // uniform over the CTA: no barrier is skipped by some
    const int n_groups = (n_items + KB - 1) / KB;

    int gcol[KB];   // the 8-column indices of the next group to stage
    auto load_cols = [&](int grp) {
#pragma unroll
        for (int kb = 0; kb < KB; ++kb) {
            const int it = grp * KB + kb;
            gcol[kb] = it < n_items ? __ldg(item_col + first + it) : 0;
        }
    };
    auto stage = [&](int b, int grp) {
        float* xs = paneltc_smem + b * L::STAGE_FLOATS;
        float* as = xs + L::X_FLOATS;
        const int in_grp = min(KB, n_items - grp * KB);
#pragma unroll
        for (int p = threadIdx.x; p < KB * 8 * PER_ROW; p += THREADS) {
            const int r = p / PER_ROW;              // staged row: item r / 8, its row r % 8
            const int c = (p % PER_ROW) * 4;
            const int kb = r >> 3;
            if (kb < in_grp) {
                int col8 = gcol[0];                 // gcol[kb] without a local-memory index
#pragma unroll
                for (int q = 1; q < KB; ++q) if (kb == q) col8 = gcol[q];
                const int xrow = col8 * 8 + (r & 7);
                const bool in = xrow < cols && n0 + c < k;
                paneltc_copy16(xs + r * L::XSTRIDE + c,
                               in ? x + (size_t)xrow * k + n0 + c : x, in ? 16 : 0);
            }
        }
        const float* src = item_val + (size_t)(first + grp * KB) * MB * 128;
        for (int p = threadIdx.x; p < in_grp * MB * 32; p += THREADS)
            paneltc_copy16(as + 4 * p, src + 4 * p, 16);
    };

    float acc[NG][4][4] = {};

    if (n_groups > 0) load_cols(0);
    // the prologue stages groups 0 .. STAGES - 2, a commit group each (empty past the last
    // group: the loop's wait counts groups, one a group of items)
#pragma unroll
    for (int b = 0; b < STAGES - 1; ++b) {
        if (b < n_groups) {
            stage(b, b);
            if (b + 1 < n_groups) load_cols(b + 1);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int i = 0; i < n_groups; ++i) {
        // at most STAGES - 2 groups pending: group i's has landed
        asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2) : "memory");
        __syncthreads();   // group i staged for all; group i - 1's buffer free
        const int nx = i + STAGES - 1;
        if (nx < n_groups) {
            stage(nx % STAGES, nx);
            if (nx + 1 < n_groups) load_cols(nx + 1);   // lands while group i is multiplied
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        float* xs = paneltc_smem + (i % STAGES) * L::STAGE_FLOATS;
        const float* as = xs + L::X_FLOATS;
        float* xlo = paneltc_smem + STAGES * L::STAGE_FLOATS;   // XSPLIT: the lo parts
        const int in_grp = min(KB, n_items - i * KB);
        if constexpr (XSPLIT) {
            // split the group's staged X once for the CTA: hi in place, lo beside it
            for (int p = threadIdx.x; p < in_grp * 8 * PER_ROW; p += THREADS) {
                const int at = (p / PER_ROW) * L::XSTRIDE + (p % PER_ROW) * 4;
                float4 v = *reinterpret_cast<const float4*>(xs + at);
                const float4 h = make_float4(__uint_as_float(blocktc_tf32_int(v.x)),
                                             __uint_as_float(blocktc_tf32_int(v.y)),
                                             __uint_as_float(blocktc_tf32_int(v.z)),
                                             __uint_as_float(blocktc_tf32_int(v.w)));
                if constexpr (PASSES == 3) {
                    v = make_float4(__uint_as_float(blocktc_tf32_int(v.x - h.x)),
                                    __uint_as_float(blocktc_tf32_int(v.y - h.y)),
                                    __uint_as_float(blocktc_tf32_int(v.z - h.z)),
                                    __uint_as_float(blocktc_tf32_int(v.w - h.w)));
                    *reinterpret_cast<float4*>(xlo + at) = v;
                }
                *reinterpret_cast<float4*>(xs + at) = h;
            }
            __syncthreads();   // the group's parts are ready for every warp
        }
#pragma unroll
        for (int kb = 0; kb < KB; ++kb) {
            if (kb < in_grp) {
                const float4 a =
                    *reinterpret_cast<const float4*>(as + (kb * MB + warp) * 128 + 4 * lane);
                float xv[NG][2][4], xl[NG][2][4];
#pragma unroll
                for (int q = 0; q < NG; ++q)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int at =
                            (kb * 8 + t + 4 * h) * L::XSTRIDE + wcol + 32 * q + 4 * g;
                        const float4 v = *reinterpret_cast<const float4*>(xs + at);
                        xv[q][h][0] = v.x; xv[q][h][1] = v.y;
                        xv[q][h][2] = v.z; xv[q][h][3] = v.w;
                        if constexpr (XSPLIT && PASSES == 3) {
                            const float4 w = *reinterpret_cast<const float4*>(xlo + at);
                            xl[q][h][0] = w.x; xl[q][h][1] = w.y;
                            xl[q][h][2] = w.z; xl[q][h][3] = w.w;
                        }
                    }
                paneltc_multiply<PASSES, NG, ISPLIT, XSPLIT>(acc, a, xv, xl);
            }
        }
    }

    const int row = (panel * MB + warp) * 16 + g;
#pragma unroll
    for (int q = 0; q < NG; ++q) {
        const int col = n0 + wcol + 32 * q + 8 * t;
        const float top_lo[4] = {acc[q][0][0], acc[q][1][0], acc[q][2][0], acc[q][3][0]};
        const float top_hi[4] = {acc[q][0][1], acc[q][1][1], acc[q][2][1], acc[q][3][1]};
        const float bot_lo[4] = {acc[q][0][2], acc[q][1][2], acc[q][2][2], acc[q][3][2]};
        const float bot_hi[4] = {acc[q][0][3], acc[q][1][3], acc[q][2][3], acc[q][3][3]};
        if (add) {
            paneltc_add_y(y, row, rows, k, col, top_lo);
            paneltc_add_y(y, row, rows, k, col + 4, top_hi);
            paneltc_add_y(y, row + 8, rows, k, col, bot_lo);
            paneltc_add_y(y, row + 8, rows, k, col + 4, bot_hi);
        } else {
            blocktc_store_y<true>(y, row, rows, k, col, top_lo);
            blocktc_store_y<true>(y, row, rows, k, col + 4, top_hi);
            blocktc_store_y<true>(y, row + 8, rows, k, col, bot_lo);
            blocktc_store_y<true>(y, row + 8, rows, k, col + 4, bot_hi);
        }
    }
}
