// CSR SpMM Y = A X of sparsescope's own backend spmm-cuda-ell: A in width-major ELL, a lane
// per row, for matrices whose calls are a few dependent round trips long (issue 37 item 3).
// Compiled at run time by NVRTC through cupy.RawModule, instantiated by name expression, e.g.
// "spmm_ell<float, int, 1, 16, 1, false>" (T, I, C, BATCH, VEC, XROW).
//
// A as ELL: every row padded to the matrix's longest, W pairs; entry i of row r at
// i * rows + r (col = -1 and val = 0 in the padding, backends/spmm_ell.py). The address of a
// lane's pairs is then its row and i alone, so a lane loads them with no row pointer first:
//
//   CSR lane:  row pointers -> (col, val) -> X gathers -> Y store   3 dependent round trips
//   ELL lane:  (col, val) -> X gathers -> Y store                   2
//
// On a matrix of a few thousand rows a call IS its round trips (the grid is a fraction of one
// wave, nothing hides them), so one fewer is a third of the kernel. And BATCH >= W (the host's
// choice where registers allow) loads all of a row's pairs at once, then all their gathers:
// one round of each, where a CSR lane of batches takes a round per batch. The cost is the
// padding (W x rows stored pairs), bounded by the host (spmm_ell.MAX_PADDING); lanes of one
// warp read pair i of 32 consecutive rows, one coalesced 128-byte line (int32) per i.
//
// No row is ever cut, so Y is stored, never added to: no zero fill, one launch a call.
//
// C columns a thread, grid.y = ceil(k / C) column tiles. X and Y column-major (XROW false:
// X[j, c] at c * cols + j, Y[i, c] at c * rows + i), or row-major (XROW true: X[j, c] at
// j * k + c, Y[i, c] at i * k + c), read and written VEC values at a time (the host picks a VEC
// dividing C and k, so every vector is aligned and inside its row).

template <typename T, int VEC> struct EllVec;
template <> struct EllVec<float, 1> { using type = float; };
template <> struct EllVec<float, 2> { using type = float2; };
template <> struct EllVec<float, 4> { using type = float4; };
template <> struct EllVec<double, 1> { using type = double; };
template <> struct EllVec<double, 2> { using type = double2; };

template <typename T, typename I, int C, int BATCH, int VEC, bool XROW>
__global__ void __launch_bounds__(256) spmm_ell(const long long rows, const long long cols,
                                                const int k, const int width,
                                                const I* __restrict__ col,
                                                const T* __restrict__ val,
                                                const T* __restrict__ x, T* __restrict__ y) {
    static_assert(C % VEC == 0, "VEC must divide C");
    static_assert(XROW || VEC == 1, "column-major X: a nonzero's C values are cols apart");
    using V = typename EllVec<T, VEC>::type;
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const int c0 = blockIdx.y * C;
    const int cn = min(C, k - c0);  // columns of this tile (a multiple of VEC: VEC divides k)

    T acc[C];
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] = T(0);

    for (int base = 0; base < width; base += BATCH) {
        // every pair of the batch first: their addresses need nothing loaded
        I j[BATCH];
        T a[BATCH];
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
            const long long at = (long long)(base + b) * rows + r;
            const bool in = base + b < width;
            j[b] = in ? __ldg(col + at) : I(-1);
            a[b] = in ? __ldg(val + at) : T(0);
        }
        // then every gather, unconditionally (a branch around each load kept the compiler
        // from issuing them together): the padding (col -1) and the columns past k load from
        // a valid address, X[0, c0], and their values are dropped by the select, never
        // multiplied (0 x an infinite X would be NaN)
        T xv[BATCH][C];
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
            const long long jj = j[b] >= 0 ? (long long)j[b] : 0;
#pragma unroll
            for (int c = 0; c < C; c += VEC) {
                const int cc = c < cn ? c : 0;
                const T* p = XROW ? x + jj * k + c0 + cc : x + (long long)(c0 + cc) * cols + jj;
                const V v = __ldg(reinterpret_cast<const V*>(p));
                const T* parts = reinterpret_cast<const T*>(&v);
                const bool keep = j[b] >= 0 && c < cn;
#pragma unroll
                for (int e = 0; e < VEC; ++e) xv[b][c + e] = keep ? parts[e] : T(0);
            }
        }
#pragma unroll
        for (int b = 0; b < BATCH; ++b)
#pragma unroll
            for (int c = 0; c < C; ++c) acc[c] += a[b] * xv[b][c];
    }

#pragma unroll
    for (int c = 0; c < C; c += VEC) {
        if (c >= cn) break;
        if (XROW) {
            V v;
            T* parts = reinterpret_cast<T*>(&v);
#pragma unroll
            for (int e = 0; e < VEC; ++e) parts[e] = acc[c + e];
            *reinterpret_cast<V*>(y + r * k + c0 + c) = v;
        } else {
            // lanes are consecutive rows: each column's 32 stores are one coalesced line
#pragma unroll
            for (int e = 0; e < VEC; ++e) y[(long long)(c0 + c + e) * rows + r] = acc[c + e];
        }
    }
}
