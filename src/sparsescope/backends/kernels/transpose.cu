// Out-of-place matrix transpose, used by spmm-cuda-transposed to turn column-major X into the
// row-major X the rowgroup kernel reads, and its row-major Y back into column-major Y, inside
// the timed call. in is R x C row-major, out is C x R row-major (out[c, r] = in[r, c]).
//
// The classic tiled transpose: a block of 32 x 8 threads moves a 32 x 32 tile through shared
// memory, reading 32 consecutive values of a row of `in` and writing 32 consecutive values of
// a row of `out` (both coalesced: 128 B for float); the tile row is padded to 33 so the column
// reads of the tile hit 32 different banks. Grid: one block a tile, ceil(R / 32) x ceil(C / 32)
// blocks in x (tile t covers row band t / ceil(C / 32), column band t % ceil(C / 32)); R, C >= 1.
// A flat grid, because grid.y stops at 65,535: 32 x 65,535 rows, and a Y of 5,000,000 rows
// failed with CUDA_ERROR_INVALID_VALUE on the H200 when the row bands were grid.y.
template <typename T>
__global__ void __launch_bounds__(256) transpose_tile(const T* __restrict__ in,
                                                      T* __restrict__ out,
                                                      const long long R, const long long C) {
    __shared__ T tile[32][33];
    const long long col_tiles = (C + 31) / 32;
    const long long c0 = ((long long)blockIdx.x % col_tiles) * 32;
    const long long r0 = ((long long)blockIdx.x / col_tiles) * 32;
#pragma unroll
    for (int i = threadIdx.y; i < 32; i += 8) {
        const long long r = r0 + i, c = c0 + threadIdx.x;
        if (r < R && c < C) tile[i][threadIdx.x] = in[r * C + c];
    }
    __syncthreads();
#pragma unroll
    for (int i = threadIdx.y; i < 32; i += 8) {
        const long long c = c0 + i, r = r0 + threadIdx.x;
        if (c < C && r < R) out[c * R + r] = tile[threadIdx.x][i];
    }
}
