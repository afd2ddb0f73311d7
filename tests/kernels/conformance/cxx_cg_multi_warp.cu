// Tiles of several warps (CUDA 11.1+): block_tile_memory scratch in shared memory, a
// thread_block made with it, tiled_partition<TileSize> with TileSize 64..1024, cg::reduce
// over each tile, the tile's ranks, tile.sync() and cg::sync(block), in the style of
// cuda-samples' multi-warp reductions.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

template <unsigned int BlockSize, unsigned int TileSize>
__global__ void tileSumsAndMax(const float *x, float *sums, float *maxima, float *blockSums,
                               unsigned int *ranks) {
    __shared__ cg::block_tile_memory<BlockSize> scratch;
    __shared__ float perTile[BlockSize / TileSize];
    cg::thread_block block = cg::this_thread_block(scratch);
    cg::thread_block_tile<TileSize> tile = cg::tiled_partition<TileSize>(block);

    unsigned int i = blockIdx.x * BlockSize + block.thread_rank();
    float v = x[i];
    float total = cg::reduce(tile, v, cg::plus<float>());
    float biggest = cg::reduce(tile, v, cg::greater<float>());
    unsigned int t = blockIdx.x * tile.meta_group_size() + tile.meta_group_rank();
    if (tile.thread_rank() == tile.size() - 1) {
        sums[t] = total;
        maxima[t] = biggest;
        perTile[tile.meta_group_rank()] = total;
    }
    tile.sync();
    cg::sync(block);
    if (block.thread_rank() == 0) {
        float s = 0.0f;
        for (unsigned int k = 0; k < tile.meta_group_size(); k++) {
            s += perTile[k];
        }
        blockSums[blockIdx.x] = s;
    }
    ranks[i] = tile.thread_rank() + 10000u * tile.meta_group_rank()
               + 1000000u * tile.meta_group_size() + 0u * tile.num_threads();
}

template __global__ void tileSumsAndMax<128, 64>(const float *, float *, float *, float *,
                                                 unsigned int *);
template __global__ void tileSumsAndMax<256, 128>(const float *, float *, float *, float *,
                                                  unsigned int *);
template __global__ void tileSumsAndMax<1024, 1024>(const float *, float *, float *, float *,
                                                    unsigned int *);
template __global__ void tileSumsAndMax<512, 32>(const float *, float *, float *, float *,
                                                 unsigned int *);
