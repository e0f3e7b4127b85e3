// SpMV kernels of sparsescope's own backends (cuda-spmv-adaptive, cuda-spmv-merge,
// cuda-spmv-delta16-tiles: spmv_tile; cuda-spmv-sell, cuda-spmv-delta16, cuda-spmv-blocked16:
// spmv_sell; split rows: spmv_fixup), compiled at run time by NVRTC through cupy.RawModule and
// instantiated by
// name expression, e.g. "spmv_tile<float, 0, 1, 256, 2, 0, 0, 0>".
//
// y = A x. One block per tile; a tile is a contiguous range of nonzeros [j0, j1) and the rows
// [r0, r1) they belong to, described by two int4 built on the host (spmv_formats.py):
//   a = {r0, r1, j0, j1},  b = {head_slot, tail_slot, col_base, esc_start}.
// Phase 1 streams the tile's nonzeros in aligned chunks of 4 (one 16-byte load of values and
// one 16-byte load of INT32 columns, or one 8-byte load of four 16-bit column offsets, per
// chunk and thread), all ITERS chunks of a thread issued before the first x gather, and
// stores the products val * x[col] in shared memory; the row pointer slice is loaded at the
// same time (the stream loads depend on the tile descriptor only, never on row_ptr). Phase 2
// reduces each row of the tile from shared memory with LANES threads per row, LANES a power of
// two <= 32 chosen per tile from its row count (thread, sub-warp or warp per row), and stores
// y[row] once: no atomics. A row that continues into another tile (the first row when
// head_slot >= 0, the last when tail_slot >= 0) stores its partial sum in partials[slot]
// instead, and spmv_fixup adds a split row's slots (contiguous) into y.
//
// IDX = 0: INT32 column indices. IDX = 1 (delta16): col = col_base + off16 for off16 < 0xFFFF;
// off16 == 0xFFFF marks an escape whose INT32 column is esc[esc_start + rank], rank = number of
// escapes before it in the tile (block-wide exclusive scan).
// HINT = 0: streams read with ld.global.nc (L1-cached); HINT = 1: streams read with
// ld.global.nc.L1::no_allocate and an L2 evict_first policy, so they neither evict x from L1
// nor push it out of L2. x is always read with ld.global.nc (L1 and L2 cached, normal priority).

#define FULL_MASK 0xffffffffu

// Programmatic dependent launch (PDL, sm_90+; spmv_tile and spmv_fixup): a kernel launched with
// the programmatic stream serialization attribute (hardware/programmatic_launch.py) may start while the call before
// it on the stream still runs. Each block lets the next call start at once
// (launch_dependents: the next call launches once every block of this one has started) and
// waits (griddepcontrol.wait: the grids before it completed, their writes visible) only
// before its first read of x or write of y, partials or the split counters: its tile
// descriptor, columns, values and row pointers (the matrix, which no call writes) are loaded
// before the wait, so back to back their round trips overlap the previous call's tail.
// Launched without the attribute both are no-ops: the grids before it completed at launch.
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

template <int HINT> struct Stream;

template <> struct Stream<0> {
    __device__ __forceinline__ void init() {}
    __device__ __forceinline__ unsigned long long policy_or_zero() const { return 0ull; }
    __device__ __forceinline__ int4 i4(const int4* p) const { return __ldg(p); }
    __device__ __forceinline__ uint2 u2(const uint2* p) const { return __ldg(p); }
    __device__ __forceinline__ float4 f4(const float4* p) const { return __ldg(p); }
    __device__ __forceinline__ double2 d2(const double2* p) const { return __ldg(p); }
    __device__ __forceinline__ int i1(const int* p) const { return __ldg(p); }
    __device__ __forceinline__ float v1(const float* p) const { return __ldg(p); }
    __device__ __forceinline__ double v1(const double* p) const { return __ldg(p); }
};

template <> struct Stream<1> {
    unsigned long long policy;
    __device__ __forceinline__ void init() {
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    }
    __device__ __forceinline__ unsigned long long policy_or_zero() const { return policy; }
    __device__ __forceinline__ int4 i4(const int4* p) const {
        int4 v;
        asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.s32 {%0,%1,%2,%3}, [%4], %5;"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
        return v;
    }
    __device__ __forceinline__ uint2 u2(const uint2* p) const {
        uint2 v;
        asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v2.u32 {%0,%1}, [%2], %3;"
                     : "=r"(v.x), "=r"(v.y) : "l"(p), "l"(policy));
        return v;
    }
    __device__ __forceinline__ float4 f4(const float4* p) const {
        float4 v;
        asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "l"(policy));
        return v;
    }
    __device__ __forceinline__ double2 d2(const double2* p) const {
        double2 v;
        asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v2.f64 {%0,%1}, [%2], %3;"
                     : "=d"(v.x), "=d"(v.y) : "l"(p), "l"(policy));
        return v;
    }
    __device__ __forceinline__ int i1(const int* p) const {
        int v;
        asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.s32 %0, [%1], %2;"
                     : "=r"(v) : "l"(p), "l"(policy));
        return v;
    }
    __device__ __forceinline__ float v1(const float* p) const {
        float v;
        asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.f32 %0, [%1], %2;"
                     : "=f"(v) : "l"(p), "l"(policy));
        return v;
    }
    __device__ __forceinline__ double v1(const double* p) const {
        double v;
        asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.f64 %0, [%1], %2;"
                     : "=d"(v) : "l"(p), "l"(policy));
        return v;
    }
};

// x gathers: ld.global.nc (L1 and L2 cached). Written as volatile asm, like the stream loads,
// so the compiler keeps them after every stream load of the thread: all ITERS chunks' loads
// are then in flight before the first gather waits for its column.
__device__ __forceinline__ float gather(const float* p) {
    float v;
    asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ double gather(const double* p) {
    double v;
    asm volatile("ld.global.nc.f64 %0, [%1];" : "=d"(v) : "l"(p));
    return v;
}
// Cold gathers (HUB < 0, columns >= -HUB): L1::no_allocate, so the random cold columns do not
// evict the hot columns x[0, -HUB) from L1 (the hot columns still go through L1).
__device__ __forceinline__ float gather_cold(const float* p) {
    float v;
    asm volatile("ld.global.nc.L1::no_allocate.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ double gather_cold(const double* p) {
    double v;
    asm volatile("ld.global.nc.L1::no_allocate.f64 %0, [%1];" : "=d"(v) : "l"(p));
    return v;
}
template <typename T, int HUB>
__device__ __forceinline__ T gather_hot_cold(const T* x, const int col) {
    if (HUB < 0 && col >= -HUB) return gather_cold(x + col);
    return gather(x + col);
}

// Four consecutive values starting at a 4-aligned element index.
template <typename T> struct Vals4;
template <> struct Vals4<float> {
    float v[4];
    template <int H> __device__ __forceinline__ void load(const Stream<H>& s, const float* p) {
        const float4 a = s.f4(reinterpret_cast<const float4*>(p));
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    }
};
template <> struct Vals4<double> {
    double v[4];
    template <int H> __device__ __forceinline__ void load(const Stream<H>& s, const double* p) {
        const double2 a = s.d2(reinterpret_cast<const double2*>(p));
        const double2 b = s.d2(reinterpret_cast<const double2*>(p) + 1);
        v[0] = a.x; v[1] = a.y; v[2] = b.x; v[3] = b.y;
    }
};

// Four column indices (IDX 0: INT32; IDX 1: four 16-bit offsets packed in 8 bytes).
template <int IDX> struct Cols4;
template <> struct Cols4<0> {
    int c[4];
    template <int H> __device__ __forceinline__ void load(const Stream<H>& s, const void* base,
                                                          long long q) {
        const int4 a = s.i4(reinterpret_cast<const int4*>(base) + q);
        c[0] = a.x; c[1] = a.y; c[2] = a.z; c[3] = a.w;
    }
};
template <> struct Cols4<1> {
    int c[4];
    template <int H> __device__ __forceinline__ void load(const Stream<H>& s, const void* base,
                                                          long long q) {
        const uint2 a = s.u2(reinterpret_cast<const uint2*>(base) + q);
        c[0] = a.x & 0xffff; c[1] = a.x >> 16; c[2] = a.y & 0xffff; c[3] = a.y >> 16;
    }
};

// Exclusive block-wide scan of v (BLOCK threads); returns the prefix, total in *total.
template <int BLOCK>
__device__ __forceinline__ int block_exclusive_scan(int v, int* warp_sums, int* total) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int inc = v;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const int n = __shfl_up_sync(FULL_MASK, inc, off);
        if (lane >= off) inc += n;
    }
    if (lane == 31) warp_sums[warp] = inc;
    __syncthreads();
    int before = 0, all = 0;
#pragma unroll
    for (int w = 0; w < BLOCK / 32; ++w) {
        const int s = warp_sums[w];
        before += (w < warp) ? s : 0;
        all += s;
    }
    *total = all;
    return before + inc - v;
}

// A split row's last partial finishes it (FINISH = 1), so no spmv_fixup launch is needed: the
// thread that stores a partial makes it visible (__threadfence); after the tile's barrier, the
// tile's warp 0 counts the tile's (at most two) partials on their split rows' counters (lane 0's
// atomic); the count that completes a row has the warp read every partial of the row from L2,
// lane-strided, and sum them as spmv_fixup does (lane sums, then an xor shuffle: the same sum,
// whichever tile came last), store y and zero the counter for the next call (the
// threadFenceReduction pattern of the CUDA samples). A warp, not one thread: a row cut into P
// tiles costs ceil(P / 32) loads a lane, not a chain of P (an arrowhead's dense row is cut into
// hundreds). Not inlined, and called once a tile after the reduction: the tile loop keeps its
// registers and its SASS loop its loads. Called by a whole warp (the shuffles).
template <typename T>
__device__ __noinline__ void finish_split(const int slot, const int* __restrict__ slot_split,
                                          const int* __restrict__ split_ptr,
                                          const int* __restrict__ split_row,
                                          int* __restrict__ split_count,
                                          const T* partials, T* __restrict__ y) {
    const int lane = threadIdx.x & 31;
    const int s = __ldg(slot_split + slot);
    const int begin = __ldg(split_ptr + s), end = __ldg(split_ptr + s + 1);
    int last = 0;
    if (lane == 0) last = atomicAdd(split_count + s, 1) == end - begin - 1;
    if (!__shfl_sync(FULL_MASK, last, 0)) return;  // the whole warp leaves together
    __threadfence();
    T sum = T(0);
    for (int k = begin + lane; k < end; k += 32) sum += __ldcg(partials + k);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(FULL_MASK, sum, off);
    if (lane == 0) {
        y[__ldg(split_row + s)] = sum;
        split_count[s] = 0;
    }
}

// Phase 2 of spmv_tile: one lane's share of a row's products prod[k], prod[k + lanes], ...
// below e, with four independent partial sums so that four shared-memory loads are in flight.
template <typename T>
__device__ __forceinline__ T sum_strided(const T* prod, int k, const int e, const int lanes) {
    T s0 = T(0), s1 = T(0), s2 = T(0), s3 = T(0);
    for (; k + 3 * lanes < e; k += 4 * lanes) {
        s0 += prod[k];
        s1 += prod[k + lanes];
        s2 += prod[k + 2 * lanes];
        s3 += prod[k + 3 * lanes];
    }
    for (; k < e; k += lanes) s0 += prod[k];
    return s0 + (s1 + s2 + s3);
}

// Phase 2 of spmv_tile: a row's sum to y, or to its partial slot when the tile cuts the row
// (the tile's first row: head slot; its last: tail slot); with FINISH the partial is fenced
// for finish_split.
template <typename T, int FINISH>
__device__ __forceinline__ void store_row(const int r, const int row, const int nrows,
                                          const int head, const int tail, const T sum,
                                          T* __restrict__ y, T* partials) {
    const int slot = (r == 0 && head >= 0) ? head : (r == nrows - 1 ? tail : -1);
    if (slot < 0) {
        y[row] = sum;
    } else {
        partials[slot] = sum;
        if (FINISH) __threadfence();
    }
}

// HUB < 0: not persistent; gathers of columns >= -HUB are read with L1::no_allocate, so L1
// keeps the hot columns x[0, -HUB) of a matrix whose popular columns come first.
// HUB > 0: the block is persistent (a grid-stride loop over the tiles) and keeps x[0, HUB) in
// shared memory, loaded once: gathers of those columns (the hub columns of a matrix whose
// popular columns come first, as in degree-ordered graphs) read shared memory, not L2.
// FINISH = 1: split rows are finished here (finish_split); FINISH = 0: by spmv_fixup, and the
// four split-row arguments are not read. With FINISH the kernel asks for a full SM of blocks
// (launch bounds): the call of finish_split would otherwise raise its registers from 29-32 to
// 39-48 and leave room for 6 blocks of 256 threads, not 8.
template <typename T, int IDX, int HINT, int BLOCK, int ITERS, int HUB, int FINISH, int WARP_ROWS>
__global__ void __launch_bounds__(BLOCK, FINISH ? (ITERS == 1 ? 2048 : 1536) / BLOCK : 1)
spmv_tile(const int ntiles, const int4* __restrict__ tiles, const int* __restrict__ row_ptr,
          const void* __restrict__ cols, const int* __restrict__ esc,
          const T* __restrict__ val, const T* __restrict__ x, T* __restrict__ y,
          T* partials, const int ncols, const int* __restrict__ slot_split,
          const int* __restrict__ split_ptr, const int* __restrict__ split_row,
          int* __restrict__ split_count) {
    constexpr int CHUNKS = BLOCK * ITERS;
    static_assert(IDX == 0 || (ITERS <= 2 && 4 * BLOCK < 0x8000), "escape counts need 16 bits");
    __shared__ __align__(16) T prod[CHUNKS * 4];
    __shared__ int rp[CHUNKS * 4 + 2];
    __shared__ int warp_sums[BLOCK / 32];
    __shared__ T hub[HUB > 0 ? HUB : 1];
    // Rows of the tile longer than 32 x LANES, each summed by a whole warp (phase 2).
    __shared__ int long_rows[WARP_ROWS ? CHUNKS / 8 + 1 : 1];
    __shared__ int n_long;

    Stream<HINT> s;
    s.init();
    pdl_launch_dependents();
    if (HUB > 0) {
        pdl_wait();  // x is read next
        for (int k = threadIdx.x; k < HUB; k += BLOCK) hub[k] = k < ncols ? __ldg(x + k) : T(0);
        __syncthreads();
    }
    for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
    const int4 a = __ldg(tiles + 2 * (long long)tile);
    const int4 b = __ldg(tiles + 2 * (long long)tile + 1);
    const int r0 = a.x, r1 = a.y, j0 = a.z, j1 = a.w;
    const int tid = threadIdx.x;
    const int nrows = r1 - r0;
    const long long q0 = j0 >> 2;
    const long long q1 = ((long long)j1 + 3) >> 2;

    // Stream loads first, unconditionally (a chunk past the tile is clamped to its last one;
    // the arrays carry one chunk of padding, so a tile without nonzeros reads padding), so
    // that nothing waits before all of them are in flight.
    Vals4<T> v[ITERS];
    Cols4<IDX> c[ITERS];
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
        const long long q = min(q0 + it * BLOCK + tid, max(q1 - 1, q0));
        v[it].load(s, val + 4 * q);
        c[it].load(s, cols, q);
    }
    // Row pointer slice, clamped to the tile: rp[k] = clamp(row_ptr[r0 + k], j0, j1); the
    // first BLOCK entries are loaded now and stored after the gathers.
    const int rp_first = s.i1(row_ptr + r0 + min(tid, nrows));
    if (IDX == 1) {
        // Escapes: rank them in chunk order (iteration-major, thread-minor); the counts of the
        // (at most two) iterations are packed 16 bits each into one scan.
        int packed = 0;
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const long long q = q0 + it * BLOCK + tid;
            int n = 0;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const long long j = 4 * q + e;
                n += (q < q1 && j >= j0 && j < j1 && c[it].c[e] == 0xffff) ? 1 : 0;
            }
            packed |= n << (16 * it);
        }
        int total_packed;
        int rank = block_exclusive_scan<BLOCK>(packed, warp_sums, &total_packed);
        const int col_base = b.z;
        int offset = b.w;
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const long long q = q0 + it * BLOCK + tid;
            int r = offset + ((rank >> (16 * it)) & 0xffff);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const long long j = 4 * q + e;
                const bool in = q < q1 && j >= j0 && j < j1;
                if (in && c[it].c[e] == 0xffff) {
                    c[it].c[e] = s.i1(esc + r);
                    ++r;
                } else {
                    c[it].c[e] += col_base;
                }
            }
            offset += (total_packed >> (16 * it)) & 0xffff;
        }
    }
    // One warp vote over every loaded column: the gathers depend on it, so the compiler must
    // issue all chunks' column loads before the first gather (without it, ptxas issues the
    // second chunk's loads only after the first chunk's gathers, one more latency per tile).
    // Columns are >= 0 (escapes resolved above), so the vote is always false.
    int any_col = 0;
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
#pragma unroll
        for (int e = 0; e < 4; ++e) any_col |= c[it].c[e];
    }
    const bool bad = __any_sync(FULL_MASK, any_col < 0);
    if (HUB <= 0) pdl_wait();  // the gathers read x; y and partials are written after them
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
        const long long q = q0 + it * BLOCK + tid;
        T p[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const long long j = 4 * q + e;
            const int col = c[it].c[e];
            const bool in = !bad && q < q1 && j >= j0 && j < j1;
            p[e] = in ? v[it].v[e] * ((HUB > 0 && col < HUB) ? hub[col]
                                                             : gather_hot_cold<T, HUB>(x, col))
                      : T(0);
        }
        if (q < q1) {
            T* dst = prod + 4 * (it * BLOCK + tid);
#pragma unroll
            for (int e = 0; e < 4; ++e) dst[e] = p[e];
        }
    }
    if (tid <= nrows) rp[tid] = min(max(rp_first, j0), j1);
    for (int k = tid + BLOCK; k <= nrows; k += BLOCK) rp[k] = min(max(s.i1(row_ptr + r0 + k), j0), j1);
    if (WARP_ROWS && tid == 0) n_long = 0;
    __syncthreads();

    // Phase 2: LANES threads per row, LANES = largest power of two <= BLOCK / rows, <= 32.
    // WARP_ROWS = 1: a row longer than 32 x LANES (more than 8 rounds of four shared-memory
    // loads for its lanes) is listed instead and summed by a whole warp after the others: on
    // a power-law matrix a tile of many short rows and one long one would otherwise wait for
    // LANES threads walking the long row alone (hundreds of rounds on R-MAT graphs). It costs
    // a barrier a tile, so the host asks for it only where some tile lists a row
    // (spmv_tiling.listed_long_rows).
    int lanes = 1;
    while (lanes < 32 && lanes * 2 * nrows <= BLOCK) lanes *= 2;
    const int groups = BLOCK / lanes;
    const int g = tid / lanes, lane = tid % lanes;
    const int shift = (int)(4 * q0);
    const int head = b.x, tail = b.y;
    const int long_len = (WARP_ROWS && lanes < 32) ? 32 * lanes : 0x7fffffff;
    for (int base = 0; base < nrows; base += groups) {
        const int r = base + g;
        bool listed = false;
        T sum = T(0);
        if (r < nrows) {
            const int e = rp[r + 1] - shift;
            const int k = rp[r] - shift + lane;
            listed = rp[r + 1] - rp[r] > long_len;
            if (!listed) {
                sum = sum_strided<T>(prod, k, e, lanes);
            } else if (lane == 0) {
                long_rows[atomicAdd(&n_long, 1)] = r;
            }
        }
        for (int off = lanes >> 1; off > 0; off >>= 1) sum += __shfl_xor_sync(FULL_MASK, sum, off);
        if (lane == 0 && r < nrows && !listed)
            store_row<T, FINISH>(r, r0 + r, nrows, head, tail, sum, y, partials);
    }
    if (WARP_ROWS && lanes < 32) {  // uniform over the block: the listed rows, a warp each
        __syncthreads();
        const int wl = tid & 31;
        for (int i = tid >> 5; i < n_long; i += BLOCK / 32) {
            const int r = long_rows[i];
            T sum = sum_strided<T>(prod, rp[r] - shift + wl, rp[r + 1] - shift, 32);
            for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(FULL_MASK, sum, off);
            if (wl == 0) store_row<T, FINISH>(r, r0 + r, nrows, head, tail, sum, y, partials);
        }
    }
    if (FINISH && (head >= 0 || tail >= 0)) {
        __syncthreads();  // both partials stored and fenced
        if (tid < 32) {  // warp 0, whole (BLOCK >= 32): finish_split shuffles
            if (head >= 0)
                finish_split<T>(head, slot_split, split_ptr, split_row, split_count, partials, y);
            if (tail >= 0 && tail != head)
                finish_split<T>(tail, slot_split, split_ptr, split_row, split_count, partials, y);
        }
    }
    if (HUB > 0) __syncthreads();  // the next tile overwrites prod and rp
    }
}

// y[split_row[s]] = sum of partials[split_ptr[s] .. split_ptr[s+1]), one warp per split row.
// Launched with PDL behind a tile kernel (and the next call's tile kernel behind it), it reads
// its split row's range and row before the wait and the partials after it.
template <typename T>
__global__ void spmv_fixup(const int nsplit, const int* __restrict__ split_row,
                           const int* __restrict__ split_ptr, const T* __restrict__ partials,
                           T* __restrict__ y) {
    const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    pdl_launch_dependents();
    if (w >= nsplit) return;  // whole warps leave together: the shuffles below see full warps
    const int begin = split_ptr[w], end = split_ptr[w + 1];
    const int row = split_row[w];
    pdl_wait();  // the partials are the tile kernel's; y is written below
    T sum = T(0);
    for (int k = begin + lane; k < end; k += 32) sum += partials[k];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(FULL_MASK, sum, off);
    if (lane == 0) y[row] = sum;
}

// SELL-C-sigma, C = 32: one warp per slice of 32 (virtual) rows, one thread per row. Slice s
// holds slice_ptr[s+1] - slice_ptr[s] columns of 32 entries, stored column-major, so each load
// of a warp reads contiguous bytes. out[s*32 + lane] is the row the thread's sum goes to
// (>= 0), a partial slot of a split row (-2 - slot), or -1 for an empty lane.
// IDX = 0: INT32 columns, padding -1. IDX = 1 (delta16): 16-bit offsets from the slice's base
// column base[s]; 0xFFFE marks padding, 0xFFFF an escape whose INT32 column is the lane's next
// entry of the slice's escape slab, esc[(esc_ptr[s] + e) * 32 + lane] (e counts the lane's
// escapes so far: no scan needed, each thread walks its own row).
// The loop is software-pipelined: the columns and values of step k + UNROLL are loaded before
// the gathers of step k, and the last, partial step is predicated, never a serial tail.
// MINB: blocks of 256 per SM the register allocation must allow (8: 32 registers, full
// occupancy; 6: up to 40). TPR = 2, 4 or 8: lanes i, i + 32/TPR, ... share a row (each walks
// a contiguous 1/TPR of it) and log2(TPR) shuffles add the parts; out is -1 for lanes >= 32/TPR.
template <int IDX> struct SellIdx;
template <> struct SellIdx<0> {
    using type = int;
    static __device__ __forceinline__ bool pad(int c) { return c < 0; }
};
template <> struct SellIdx<1> {
    using type = unsigned short;
    static __device__ __forceinline__ bool pad(int c) { return c == 0xfffe; }
};

template <int HINT>
__device__ __forceinline__ int load_idx(const Stream<HINT>& s, const int* p) { return s.i1(p); }
template <int HINT>
__device__ __forceinline__ int load_idx(const Stream<HINT>& s, const unsigned short* p) {
    unsigned short v;
    if (HINT == 1) {
        asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.u16 %0, [%1], %2;"
                     : "=h"(v) : "l"(p), "l"(s.policy_or_zero()));
    } else {
        v = __ldg(p);
    }
    return v;
}

// A stored 16-bit offset of a SELL slice as its column: col_base + off, or for the escape
// marker 0xFFFF the lane's next INT32 column of the slice's escape slab (n_esc counts the
// lane's escapes so far: each thread walks its own row, so no scan is needed).
template <int HINT>
__device__ __forceinline__ int delta16_col(const Stream<HINT>& s, const int off,
                                           const int col_base, const int* __restrict__ esc,
                                           const int esc0, int& n_esc) {
    if (off != 0xffff) return off + col_base;
    return s.i1(esc + esc0 + 32 * n_esc++);
}

// The end of a SELL warp: TPR threads per row (lanes i, i + 32/TPR, ... share a row) add their
// parts with log2(TPR) shuffles (whole warps reach here); the lane's sum goes to its row, to a
// partial slot of a split row (dest = -2 - slot), or nowhere (dest = -1).
template <typename T, int TPR>
__device__ __forceinline__ void store_lane_sum(T sum, const int dest, T* __restrict__ y,
                                               T* __restrict__ partials) {
#pragma unroll
    for (int off = 16; off >= 32 / TPR; off >>= 1) sum += __shfl_down_sync(FULL_MASK, sum, off);
    if (dest >= 0) {
        y[dest] = sum;
    } else if (dest <= -2) {
        partials[-2 - dest] = sum;
    }
}

// B > 1 (cuda-spmv-blocked16, IDX = 1): each entry is a 1 x B block, columns col .. col + B - 1,
// its B values stored as B rows of 32 lanes after one another: value j of step k at
// ((k0 + k) * B + j) * 32 + lane. x carries B - 1 zeros past its end for blocks that reach
// beyond the last column; fill values are 0.
template <typename T, int IDX, int B, int HINT, int UNROLL, int MINB, int TPR>
__global__ void __launch_bounds__(256, MINB)
spmv_sell(const int nslices, const int* __restrict__ slice_ptr,
          const typename SellIdx<IDX>::type* __restrict__ cols, const T* __restrict__ val,
          const int* __restrict__ out, const int* __restrict__ base,
          const int* __restrict__ esc_ptr, const int* __restrict__ esc,
          const T* __restrict__ x, T* __restrict__ y, T* __restrict__ partials) {
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (warp >= nslices) return;
    Stream<HINT> s;
    s.init();
    const int k0 = __ldg(slice_ptr + warp), k1 = __ldg(slice_ptr + warp + 1);
    const int dest = s.i1(out + warp * 32 + lane);
    const int col_base = IDX == 1 ? __ldg(base + warp) : 0;
    // 32-bit offsets from the (constant-bank) parameters, not 64-bit pointers: two registers
    // fewer, which keeps UNROLL x (1 + B) buffered loads in 32 registers (the host checks
    // that every stored value's index fits an int).
    const int esc0 = IDX == 1 ? __ldg(esc_ptr + warp) * 32 + lane : 0;
    int n_esc = 0;
    T sum = T(0);
    // Loads are predicated, never clamped: a step past the slice's end loads nothing.
    int ci = k0 * 32 + lane;
    int vi = k0 * (32 * B) + lane;
    int cn[UNROLL];
    T vn[UNROLL][B];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        if (k0 + u < k1) {
            cn[u] = load_idx(s, cols + ci + 32 * u);
#pragma unroll
            for (int j = 0; j < B; ++j) vn[u][j] = s.v1(val + vi + 32 * (u * B + j));
        }
    }
    for (int k = k0; k < k1; k += UNROLL) {
        int c[UNROLL];
        T v[UNROLL][B];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            c[u] = cn[u];
#pragma unroll
            for (int j = 0; j < B; ++j) v[u][j] = vn[u][j];
        }
        ci += 32 * UNROLL;
        vi += 32 * B * UNROLL;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (k + UNROLL + u < k1) {
                cn[u] = load_idx(s, cols + ci + 32 * u);
#pragma unroll
                for (int j = 0; j < B; ++j) vn[u][j] = s.v1(val + vi + 32 * (u * B + j));
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            int col = c[u];
            const bool use = k + u < k1 && !SellIdx<IDX>::pad(col);
            if (IDX == 1 && use) col = delta16_col(s, col, col_base, esc, esc0, n_esc);
#pragma unroll
            for (int j = 0; j < B; ++j) sum += use ? v[u][j] * gather(x + col + j) : T(0);
        }
    }
    store_lane_sum<T, TPR>(sum, dest, y, partials);
}

// Decoupled access / execute (STAGE > 0): the same SELL format, but a warp's streams travel by
// cp.async (global -> shared memory, L2 only, no registers held while in flight) in chunks of
// STAGE steps, double-buffered: while the warp gathers x and multiplies chunk c from shared
// memory, chunk c + 1 is on its way. Every lane copies 16-byte pieces of the chunk (the
// offsets of a step are 32 x sizeof(index) contiguous bytes, its values B x 32 x sizeof(T);
// chunk starts are 64-byte aligned), waits for its own groups, then __syncwarp makes the whole
// chunk visible to the warp. The register pipeline of spmv_sell keeps UNROLL x (1 + B) loads
// in flight per thread at most (32 registers); here a warp keeps a whole chunk in flight.
// Needs sm_80+ (cp.async).
template <typename T, int IDX, int B, int STAGE> struct DaeChunk {
    using Idx = typename SellIdx<IDX>::type;
    // double values halve the steps, so a warp's two buffers stay the same size
    static constexpr int STEPS = STAGE * 4 / (int)sizeof(T) > 0 ? STAGE * 4 / (int)sizeof(T) : 1;
    static constexpr int IDX_BYTES = STEPS * 32 * (int)sizeof(Idx);
    static constexpr int VAL_BYTES = STEPS * 32 * B * (int)sizeof(T);
    static constexpr int BYTES = IDX_BYTES + VAL_BYTES;
};

template <int HINT>
__device__ __forceinline__ void copy16_async(void* smem, const void* gmem,
                                             unsigned long long policy) {
    const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    if (HINT == 1) {
        asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;"
                     :: "r"(dst), "l"(gmem), "l"(policy) : "memory");
    } else {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(gmem)
                     : "memory");
    }
}

// Issue the copies of steps [k, k + n) of the warp's slice into buf (one commit group).
template <typename T, int IDX, int B, int STAGE, int HINT>
__device__ __forceinline__ void dae_issue(unsigned char* buf, const int k, const int n,
                                          const typename SellIdx<IDX>::type* __restrict__ cols,
                                          const T* __restrict__ val, const int lane,
                                          const unsigned long long policy) {
    using C = DaeChunk<T, IDX, B, STAGE>;
    const int idx_pieces = n * 32 * (int)sizeof(typename C::Idx) / 16;
    const int val_pieces = n * 32 * B * (int)sizeof(T) / 16;
    const unsigned char* gi = (const unsigned char*)(cols + (long long)k * 32);
    const unsigned char* gv = (const unsigned char*)(val + (long long)k * 32 * B);
    for (int p = lane; p < idx_pieces; p += 32) copy16_async<HINT>(buf + 16 * p, gi + 16 * p, policy);
    for (int p = lane; p < val_pieces; p += 32)
        copy16_async<HINT>(buf + C::IDX_BYTES + 16 * p, gv + 16 * p, policy);
    asm volatile("cp.async.commit_group;" ::: "memory");
}

template <typename T, int IDX, int B, int HINT, int STAGE, int MINB, int TPR>
__global__ void __launch_bounds__(256, MINB)
spmv_sell_dae(const int nslices, const int* __restrict__ slice_ptr,
              const typename SellIdx<IDX>::type* __restrict__ cols, const T* __restrict__ val,
              const int* __restrict__ out, const int* __restrict__ base,
              const int* __restrict__ esc_ptr, const int* __restrict__ esc,
              const T* __restrict__ x, T* __restrict__ y, T* __restrict__ partials) {
    using C = DaeChunk<T, IDX, B, STAGE>;
    __shared__ __align__(16) unsigned char stage[8][2][C::BYTES];
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    const int wib = threadIdx.x >> 5;
    if (warp >= nslices) return;
    Stream<HINT> s;
    s.init();
    const unsigned long long policy = s.policy_or_zero();
    const int k0 = __ldg(slice_ptr + warp), k1 = __ldg(slice_ptr + warp + 1);
    const int dest = s.i1(out + warp * 32 + lane);
    const int col_base = IDX == 1 ? __ldg(base + warp) : 0;
    const int esc0 = IDX == 1 ? __ldg(esc_ptr + warp) * 32 + lane : 0;
    int n_esc = 0;
    T sum = T(0);
    if (k1 > k0) dae_issue<T, IDX, B, STAGE, HINT>(stage[wib][0], k0, min(C::STEPS, k1 - k0),
                                                   cols, val, lane, policy);
    int which = 0;
    for (int k = k0; k < k1; k += C::STEPS, which ^= 1) {
        const int next = k + C::STEPS;
        if (next < k1) {
            dae_issue<T, IDX, B, STAGE, HINT>(stage[wib][which ^ 1], next,
                                              min(C::STEPS, k1 - next), cols, val, lane, policy);
            asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncwarp();
        const typename C::Idx* ci = (const typename C::Idx*)stage[wib][which];
        const T* vs = (const T*)(stage[wib][which] + C::IDX_BYTES);
        const int n = min(C::STEPS, k1 - k);
        int c[C::STEPS];
        bool use[C::STEPS];
#pragma unroll
        for (int t = 0; t < C::STEPS; ++t) {
            c[t] = t < n ? (int)ci[t * 32 + lane] : 0;
            use[t] = t < n && !SellIdx<IDX>::pad(c[t]);
            if (IDX == 1 && use[t]) c[t] = delta16_col(s, c[t], col_base, esc, esc0, n_esc);
        }
        // every gather of the chunk is issued before the first product waits for one
        T g[C::STEPS][B];
#pragma unroll
        for (int t = 0; t < C::STEPS; ++t) {
#pragma unroll
            for (int j = 0; j < B; ++j) g[t][j] = use[t] ? gather(x + c[t] + j) : T(0);
        }
#pragma unroll
        for (int t = 0; t < C::STEPS; ++t) {
#pragma unroll
            for (int j = 0; j < B; ++j) {
                if (use[t]) sum += vs[(t * B + j) * 32 + lane] * g[t][j];
            }
        }
        __syncwarp();  // the buffer is refilled by the next iteration's copies
    }
    store_lane_sum<T, TPR>(sum, dest, y, partials);
}
