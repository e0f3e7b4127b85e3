// SpMM Y = A X of sparsescope's own backend spmm-cuda-rowtile: X reused through shared memory,
// for dense-ish matrices (pruned weights). Compiled at run time by NVRTC through
// cupy.RawModule, instantiated by name expression, e.g.
// "spmm_rowtile<float, int, 32, 2, 32, 8, 3, 0, 4>" (T, I, R, VEC, C, WARPS, STAGES, XCOL, MINB).
//
// Why: every other own kernel gathers a nonzero's X row slice from the L2 (nnz x k values a
// call). A block here owns a TILE of R consecutive rows and a SLICE of KS = 32 VEC columns of
// X and Y (grid (tiles, slices, splits)); it walks the columns of A in CHUNKS of C, and for
// each chunk its rows touch stages X[c0 .. c0 + C, k0 .. k0 + KS] in shared memory once, then every
// nonzero of the tile in that chunk reads its X row from there. X crosses the L2 once per
// (tile, chunk), (rows / R) x cols x k values at most, and chunks no row of the tile touches
// are never loaded; the shared-memory reads (nnz x k values) and the FMAs are the floor.
//
// Format (backends/spmm_rowtile_format.py, pack_rowtile): the nonzeros of each tile regrouped by
// chunk. An ITEM is one (tile, non-empty chunk): tile_ptr[t] .. tile_ptr[t + 1] are tile t's
// items in chunk order; item_chunk[i] its chunk; item_base[i] .. item_base[i + 1] its entries
// (an even count: a zero pad entry closes an odd item, so that float entries travel in 16-byte
// pieces); item_seg[i (R + 2) + r] (uint16) the first entry of tile row r within the item,
// r = 0 .. R (the last one the item's real end; one more uint16 pads the row to 4 bytes).
// An entry is (j, value), j the column within the chunk: 8 bytes for float (int, float), 16 for
// double (int, pad, double), so that one 16-byte shared load reads two float entries or one
// double entry.
//
// Pipeline: STAGES buffers of shared memory, each holding one item's X chunk, entries and row
// offsets, filled by cp.async (global -> shared, no registers held while in flight), one commit
// group an item. While the block multiplies item i, items i + 1 .. i + STAGES - 1 are on their
// way, so an item whose work is shorter than an L2 round trip still waits only 1 / (STAGES - 1)
// of it; the three scalars (chunk, first and end entry) of the next item to stage are loaded
// into registers a whole item ahead, so issuing a stage never waits for them. One
// __syncthreads an item: after it, item i is complete for everyone and the buffer of item
// i - 1, which item i + STAGES - 1 takes, is free.
//
// Threads: warp w owns rows w RPW .. w RPW + RPW - 1 of the tile (RPW = R / WARPS), lane l
// owns VEC columns of the slice. A warp walks each of its rows' entries in the item (the row's
// offsets bound them); the entry is read at one address by all lanes (a broadcast: one
// shared-memory wavefront for two float entries), each lane reads its VEC values of X's row j
// and accumulates VEC FMAs in registers (acc[RPW][VEC]). No lane of a warp idles on a row the
// others work on, and the X reads of a warp are VEC x 32 consecutive values: no bank conflict.
//
// Layouts (XCOL):
// * 0, X and Y row-major (X[j, c] at j k + c): lane l owns columns l VEC .. l VEC + VEC - 1;
//   X rows are staged with copies of CW values (16, 8 or 4 bytes: the widest that divides k,
//   so every copy is aligned and lies in the slice), X in shared memory [j][KS] (no padding:
//   a warp reads VEC x 32 consecutive values); Y stored from registers, VEC-wide, coalesced.
// * 1, X and Y column-major (X[j, c] at c cols + j): lane l owns columns l, l + 32, ... (one
//   scalar read each: consecutive lanes on consecutive banks). Staged one value a copy, 32
//   consecutive j of one column a warp (coalesced), into [j][KS + 1]: the odd row stride puts
//   a warp's 32 stores of 32 rows on 32 banks. Y goes through shared memory ([c][R + 1]) and
//   leaves R consecutive rows of a column at a time (coalesced) instead of one sector a value.
//
// Splits (grid.z = S, the runtime argument `splits`): a tile's items are a serial chain (each
// item a stage round trip and a barrier), and a grid of tiles x slices blocks is often one
// block an SM, nothing to overlap that chain with. So the items of each tile are cut into S
// contiguous runs, split z owning items [n z / S, n (z + 1) / S) of the tile's n: S times the
// blocks, each 1 / S of the chain, several resident on an SM. With S > 1 the host zeroes Y
// first (a memset in the same call) and each block adds its partial tile into Y with atomicAdd
// (float and double atomics: sm_60 and later); a block whose run is empty returns at once.
// With S = 1 Y is stored as before (no memset, no atomics).
//
// Edges: rows past `rows` (the last tile) have no entries and are not stored; X rows past
// `cols` (the last chunk) are never referenced by an entry and not loaded; columns past k in
// the last slice are not loaded and not stored (lanes on them accumulate values no one
// stores). A tile with no item stores zeros.

template <typename T> struct RowTileEntry;
template <> struct __align__(8) RowTileEntry<float> { int j; float v; };
template <> struct __align__(16) RowTileEntry<double> { int j; int pad; double v; };

template <typename T, int VEC> struct RowTileVec;
template <> struct RowTileVec<float, 1> { using type = float; };
template <> struct RowTileVec<float, 2> { using type = float2; };
template <> struct RowTileVec<float, 4> { using type = float4; };
template <> struct RowTileVec<double, 1> { using type = double; };
template <> struct RowTileVec<double, 2> { using type = double2; };

// Bytes of shared memory a block uses, mirrored on the host by model/rowtile.py's
// rowtile_smem_bytes (the launch's dynamic shared memory).
template <typename T, int R, int VEC, int C, int STAGES, int XCOL> struct RowTileSmem {
    static constexpr int KS = 32 * VEC;
    static constexpr int XSTRIDE = XCOL ? KS + 1 : KS;
    static constexpr int X_BYTES = (C * XSTRIDE * (int)sizeof(T) + 15) / 16 * 16;
    static constexpr int E_BYTES = R * C * (int)sizeof(RowTileEntry<T>);
    static constexpr int SEG = R + 2;  // uint16 row offsets an item: R + 1 and a pad
    static constexpr int S_BYTES = (SEG * 2 + 15) / 16 * 16;
    static constexpr int STAGE = X_BYTES + E_BYTES + S_BYTES;
    static constexpr int Y_BYTES = XCOL ? KS * (R + 1) * (int)sizeof(T) : 0;
    static constexpr int BYTES = STAGES * STAGE > Y_BYTES ? STAGES * STAGE : Y_BYTES;
};

template <int BYTES>
__device__ __forceinline__ void rowtile_copy_async(void* smem, const void* gmem) {
    const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    if constexpr (BYTES == 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(gmem)
                     : "memory");
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" :: "r"(dst), "l"(gmem),
                     "n"(BYTES) : "memory");
    }
}

// X[c0 .. c0 + rows_in, k0 .. k0 + KS) of row-major X into xs ([j][KS]), CW values a copy.
template <typename T, int VEC, int C, int THREADS, int CW>
__device__ __forceinline__ void rowtile_stage_x_row(T* xs, const T* __restrict__ x,
                                                    const long long c0, const int rows_in,
                                                    const int k, const int k0) {
    constexpr int KS = 32 * VEC;
    constexpr int PER_ROW = KS / CW;
    const int kk = min(KS, k - k0);
#pragma unroll 2
    for (int p = threadIdx.x; p < C * PER_ROW; p += THREADS) {
        const int jj = p / PER_ROW;
        const int q = (p % PER_ROW) * CW;
        if (jj < rows_in && q < kk) {
            rowtile_copy_async<CW * (int)sizeof(T)>(
                xs + jj * KS + q, x + (c0 + jj) * (long long)k + k0 + q);
        }
    }
}

// The same chunk of column-major X into xs ([j][KS + 1]), one value a copy, j fastest.
template <typename T, int VEC, int C, int THREADS>
__device__ __forceinline__ void rowtile_stage_x_col(T* xs, const T* __restrict__ x,
                                                    const long long cols, const long long c0,
                                                    const int rows_in, const int k,
                                                    const int k0) {
    constexpr int KS = 32 * VEC;
    const int kk = min(KS, k - k0);
#pragma unroll 2
    for (int p = threadIdx.x; p < C * KS; p += THREADS) {
        const int jj = p % C;
        const int cc = p / C;
        if (jj < rows_in && cc < kk) {
            rowtile_copy_async<(int)sizeof(T)>(xs + jj * (KS + 1) + cc,
                                               x + (long long)(k0 + cc) * cols + c0 + jj);
        }
    }
}

// One entry (j, a) into the warp's row accumulators; xl: the lane's first value of X's row 0
// in the stage (xs + l VEC row-major, xs + l column-major), so an entry's address is one
// multiply-add.
template <typename T, int VEC, int XCOL>
__device__ __forceinline__ void rowtile_fma(const T* xl, const int j, const T a, T (&acc)[VEC]) {
    constexpr int KS = 32 * VEC;
    if constexpr (XCOL) {
        const T* row = xl + j * (KS + 1);
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[v] = fma(a, row[32 * v], acc[v]);
    } else {
        using V = typename RowTileVec<T, VEC>::type;
        const V xv = *reinterpret_cast<const V*>(xl + j * KS);
        const T* parts = reinterpret_cast<const T*>(&xv);
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[v] = fma(a, parts[v], acc[v]);
    }
}

template <typename T, typename I, int R, int VEC, int C, int WARPS, int STAGES, int XCOL,
          int MINB>
__global__ void __launch_bounds__(WARPS * 32, MINB) spmm_rowtile(
        const long long rows, const long long cols, const int k,
        const I* __restrict__ tile_ptr, const I* __restrict__ item_chunk,
        const I* __restrict__ item_base, const unsigned short* __restrict__ item_seg,
        const RowTileEntry<T>* __restrict__ entries, const T* __restrict__ x,
        T* __restrict__ y, const int splits) {
    using L = RowTileSmem<T, R, VEC, C, STAGES, XCOL>;
    using E = RowTileEntry<T>;
    constexpr int KS = L::KS;
    constexpr int THREADS = WARPS * 32;
    constexpr int RPW = R / WARPS;
    static_assert(R % WARPS == 0, "R must be a multiple of WARPS");
    static_assert(R * C <= 65535, "row offsets are uint16");
    static_assert(sizeof(T) == 4 || VEC <= 2, "at most 16-byte vectors");
    static_assert(STAGES >= 2 && STAGES <= 4, "2 to 4 stages");
    extern __shared__ __align__(16) unsigned char rowtile_smem[];

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const long long tile = blockIdx.x;
    const int k0 = blockIdx.y * KS;
    const long long row0 = tile * R;
    const long long tile_first = (long long)__ldg(tile_ptr + tile);
    const long long tile_n = (long long)__ldg(tile_ptr + tile + 1) - tile_first;
    // this split's run of the tile's items (all of them when splits == 1)
    const long long first = tile_first + tile_n * blockIdx.z / splits;
    const long long n_items = tile_first + tile_n * (blockIdx.z + 1) / splits - first;
    const bool add = splits > 1;  // Y zeroed by the host: partial tiles are added atomically
    if (add && n_items == 0) return;  // uniform over the block: no barrier is skipped by some
    // the widest copy of row-major X that divides k: every copy aligned and inside the slice
    const int cw = (sizeof(T) == 4 && k % 4 == 0) ? 4 : (k % 2 == 0 ? 2 : 1);

    // stage item `item` (chunk, entries [base, end)) into buffer b (the caller commits)
    auto stage = [&](const int b, const long long item, const long long chunk,
                     const long long base, const long long end) {
        unsigned char* buf = rowtile_smem + b * L::STAGE;
        T* xs = reinterpret_cast<T*>(buf);
        const long long c0 = chunk * C;
        const int rows_in = (int)min((long long)C, cols - c0);
        if constexpr (XCOL) {
            rowtile_stage_x_col<T, VEC, C, THREADS>(xs, x, cols, c0, rows_in, k, k0);
        } else if (cw == 4) {
            if constexpr (sizeof(T) == 4)
                rowtile_stage_x_row<T, VEC, C, THREADS, 4>(xs, x, c0, rows_in, k, k0);
        } else if (cw == 2) {
            rowtile_stage_x_row<T, VEC, C, THREADS, 2>(xs, x, c0, rows_in, k, k0);
        } else {
            rowtile_stage_x_row<T, VEC, C, THREADS, 1>(xs, x, c0, rows_in, k, k0);
        }
        const int pieces = (int)((end - base) * (long long)sizeof(E) / 16);
        const unsigned char* src = reinterpret_cast<const unsigned char*>(entries + base);
        unsigned char* es = buf + L::X_BYTES;
        for (int p = threadIdx.x; p < pieces; p += THREADS)
            rowtile_copy_async<16>(es + 16 * p, src + 16 * p);
        const unsigned* seg = reinterpret_cast<const unsigned*>(item_seg + item * L::SEG);
        unsigned char* ss = buf + L::X_BYTES + L::E_BYTES;
        if (threadIdx.x < L::SEG / 2) {
            rowtile_copy_async<4>(ss + 4 * threadIdx.x, seg + threadIdx.x);
        }
    };

    T acc[RPW][VEC];
#pragma unroll
    for (int s = 0; s < RPW; ++s)
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[s][v] = T(0);

    long long chunk = 0, base = 0, end = 0;  // the scalars of the next item to stage
    if (n_items > 0) {
        chunk = (long long)__ldg(item_chunk + first);
        base = (long long)__ldg(item_base + first);
        end = (long long)__ldg(item_base + first + 1);
    }
    // the prologue stages items 0 .. STAGES - 2, a commit group each (empty past the last item:
    // the loop's wait counts groups, one an item)
#pragma unroll
    for (int b = 0; b < STAGES - 1; ++b) {
        if (b < n_items) {
            stage(b, first + b, chunk, base, end);
            if (b + 1 < n_items) {
                chunk = (long long)__ldg(item_chunk + first + b + 1);
                base = end;
                end = (long long)__ldg(item_base + first + b + 2);
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (long long i = 0; i < n_items; ++i) {
        // at most STAGES - 2 groups pending: item i's has landed
        asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2) : "memory");
        __syncthreads();  // item i staged for all; item i - 1's buffer free
        const long long next = i + STAGES - 1;
        if (next < n_items) {
            stage((int)(next % STAGES), first + next, chunk, base, end);
            if (next + 1 < n_items) {  // lands while item i is multiplied
                chunk = (long long)__ldg(item_chunk + first + next + 1);
                base = end;
                end = (long long)__ldg(item_base + first + next + 2);
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        const unsigned char* buf = rowtile_smem + (int)(i % STAGES) * L::STAGE;
        const T* xl = reinterpret_cast<const T*>(buf) + (XCOL ? lane : lane * VEC);
        const E* es = reinterpret_cast<const E*>(buf + L::X_BYTES);
        const unsigned short* seg =
            reinterpret_cast<const unsigned short*>(buf + L::X_BYTES + L::E_BYTES);
#pragma unroll
        for (int s = 0; s < RPW; ++s) {
            const int r = warp * RPW + s;
            int q = seg[r];
            const int e = seg[r + 1];
            if constexpr (sizeof(T) == 4) {
                if ((q & 1) && q < e) {  // an odd first entry alone: then 16-byte pairs
                    const E one = es[q];
                    rowtile_fma<T, VEC, XCOL>(xl, one.j, one.v, acc[s]);
                    ++q;
                }
#pragma unroll 2
                for (; q + 1 < e; q += 2) {
                    const int4 two = *reinterpret_cast<const int4*>(es + q);
                    rowtile_fma<T, VEC, XCOL>(xl, two.x, __int_as_float(two.y), acc[s]);
                    rowtile_fma<T, VEC, XCOL>(xl, two.z, __int_as_float(two.w), acc[s]);
                }
                if (q < e) {
                    const E one = es[q];
                    rowtile_fma<T, VEC, XCOL>(xl, one.j, one.v, acc[s]);
                }
            } else {
#pragma unroll 2
                for (; q < e; ++q) {
                    const int4 one = *reinterpret_cast<const int4*>(es + q);
                    rowtile_fma<T, VEC, XCOL>(xl, one.x, (T)__hiloint2double(one.w, one.z),
                                              acc[s]);
                }
            }
        }
    }

    if constexpr (XCOL) {
        asm volatile("cp.async.wait_group 0;" ::: "memory");  // only empty groups are left
        __syncthreads();  // every warp is done with the stages: Y's tile reuses them
        T* ys = reinterpret_cast<T*>(rowtile_smem);
#pragma unroll
        for (int s = 0; s < RPW; ++s)
#pragma unroll
            for (int v = 0; v < VEC; ++v) {
                ys[(lane + 32 * v) * (R + 1) + warp * RPW + s] = acc[s][v];
            }
        __syncthreads();
        const int kk = min(KS, k - k0);
        for (int p = threadIdx.x; p < KS * R; p += THREADS) {
            const int c = p / R;
            const int r = p % R;
            if (c < kk && row0 + r < rows) {
                T* out = y + (long long)(k0 + c) * rows + row0 + r;
                if (add) atomicAdd(out, ys[c * (R + 1) + r]);
                else *out = ys[c * (R + 1) + r];
            }
        }
    } else {
        using V = typename RowTileVec<T, VEC>::type;
        const int c = k0 + lane * VEC;
#pragma unroll
        for (int s = 0; s < RPW; ++s) {
            const long long row = row0 + warp * RPW + s;
            if (row < rows && c < k && add) {
#pragma unroll
                for (int v = 0; v < VEC; ++v) atomicAdd(y + row * k + c + v, acc[s][v]);
            } else if (row < rows && c < k) {
                V out;
                T* parts = reinterpret_cast<T*>(&out);
#pragma unroll
                for (int v = 0; v < VEC; ++v) parts[v] = acc[s][v];
                *reinterpret_cast<V*>(y + row * k + c) = out;
            }
        }
    }
}
