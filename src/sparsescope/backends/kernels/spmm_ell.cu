// CSR SpMM Y = A X of sparsescope's own backend spmm-cuda-ell: A in row-major ELL, a group of
// G lanes per row, for matrices whose calls are a few dependent round trips long (issue 37
// item 3). Compiled at run time by NVRTC through cupy.RawModule, instantiated by name
// expression, e.g. "spmm_ell<float, int, 16, 1, 1, false>" (T, I, G, C, VEC, XROW).
//
// A as ELL: every row padded to the same stored width Wp (the longest row rounded up to a
// multiple of G, backends/spmm_ell.py); entry i of row r at r * Wp + i, col = -1 and val = 0
// in the padding. Lane s of a row's group takes the row's entries s, s + G, ...: the address
// of a lane's pair is its row and lane alone, so it is loaded with no row pointer first:
//
//   CSR lane:  row pointers -> (col, val) -> X gathers -> Y store   3 dependent round trips
//   ELL group: (col, val) -> X gathers -> shuffles -> Y store       2
//
// On a matrix of a few thousand rows a call IS its round trips (the grid is a fraction of one
// wave, nothing hides them), and each cold round trip is a DRAM latency: one fewer is a third
// of the memory chain. Each lane has ONE pair and its C gathers in flight a pass (Wp / G
// passes, one where the longest row fits a group), so the round trips are the hardware's, not
// the compiler's: a first design with a lane per row and all of a row's pairs unrolled in one
// lane was compiled to a few registers with each gather's FMA before the next loads, a chain
// of the row's length (H200, results/h200/real-dev/2026-11-28-ell).
//
// __launch_bounds__(256) alone: ptxas (CUDA 13, sm_90) holds every instance to 32 registers,
// 64 warps an SM. With (256, 1) it took 42-72 and issued all C gathers of a pass before the
// first FMA (with 32, C = 8 column-major goes in two rounds), but the SM then held 32-40 warps
// and the small grids this kernel is for ran in two waves: 0.1-0.55 us slower a call on the
// H200 at k = 8 and 64 (results/h200/real-dev/2026-11-28-ell, the 079f21e run).
//
// The warp's 32 lanes read 32 consecutive stored entries (32 / G rows), one 128-byte line per
// array (int32 / float32). The group's partial sums meet by xor-shuffles (log2 G steps of C
// values); no row is cut across groups, so Y is stored, never added to: no zero fill, one
// launch a call.
//
// C columns a thread, grid.y = ceil(k / C) column tiles. X and Y column-major (XROW false:
// X[j, c] at c * cols + j, Y[i, c] at c * rows + i), or row-major (XROW true: X[j, c] at
// j * k + c, Y[i, c] at i * k + c), read and written VEC values at a time (the host picks a VEC
// dividing C and k, so every vector is aligned and inside its row; 1 for column-major X).

template <typename T, int VEC> struct EllVec;
template <> struct EllVec<float, 1> { using type = float; };
template <> struct EllVec<float, 2> { using type = float2; };
template <> struct EllVec<float, 4> { using type = float4; };
template <> struct EllVec<double, 1> { using type = double; };
template <> struct EllVec<double, 2> { using type = double2; };

template <typename T, typename I, int G, int C, int VEC, bool XROW>
__global__ void __launch_bounds__(256) spmm_ell(const long long rows, const long long cols,
                                                const int k, const int width,
                                                const I* __restrict__ col,
                                                const T* __restrict__ val,
                                                const T* __restrict__ x, T* __restrict__ y) {
    static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "G: a power of two up to 32");
    static_assert(C % VEC == 0, "VEC must divide C");
    static_assert(XROW || VEC == 1, "column-major X: a nonzero's C values are cols apart");
    using V = typename EllVec<T, VEC>::type;
    constexpr unsigned FULL = 0xffffffffu;
    // blocks are whole warps and G divides 32: a group never straddles a warp. A group past
    // the last row stays for the shuffles (their mask is the whole warp) and stores nothing.
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long r = t / G;
    const int s = threadIdx.x % G;
    const bool live = r < rows;
    const int c0 = blockIdx.y * C;
    const int cn = min(C, k - c0);  // columns of this tile (a multiple of VEC: VEC divides k)

    T acc[C];
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] = T(0);

    for (int base = 0; base < width; base += G) {
        const long long at = (live ? r : 0) * width + base + s;
        const I j = live ? __ldg(col + at) : I(-1);
        const T a = live ? __ldg(val + at) : T(0);
        // the padding (col -1) and columns past k load from a valid address, X[0, c0], and
        // their values are dropped by the select, never multiplied (0 x inf would be NaN)
        const long long jj = j >= 0 ? (long long)j : 0;
#pragma unroll
        for (int c = 0; c < C; c += VEC) {
            const int cc = c < cn ? c : 0;
            const T* p = XROW ? x + jj * k + c0 + cc : x + (long long)(c0 + cc) * cols + jj;
            const V v = __ldg(reinterpret_cast<const V*>(p));
            const T* parts = reinterpret_cast<const T*>(&v);
            const bool keep = j >= 0 && c < cn;
#pragma unroll
            for (int e = 0; e < VEC; ++e) acc[c + e] += a * (keep ? parts[e] : T(0));
        }
    }

    // the group's sums: xor offsets below G stay inside the group
#pragma unroll
    for (int off = G / 2; off >= 1; off /= 2)
#pragma unroll
        for (int c = 0; c < C; ++c) acc[c] += __shfl_xor_sync(FULL, acc[c], off);
    if (!live) return;

    // every lane holds the row's C sums: lane s stores the VEC-wide pieces q with q % G == s
#pragma unroll
    for (int q = 0; q < C / VEC; ++q) {
        const int c = q * VEC;
        if (q % G != s || c >= cn) continue;
        if (XROW) {
            V v;
            T* parts = reinterpret_cast<T*>(&v);
#pragma unroll
            for (int e = 0; e < VEC; ++e) parts[e] = acc[c + e];
            *reinterpret_cast<V*>(y + r * k + c0 + c) = v;
        } else {
            y[(long long)(c0 + c) * rows + r] = acc[c];
        }
    }
}
