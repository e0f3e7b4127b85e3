// Random 4-byte loads from shared memory: the block's own (RANKS = 1) or any block's of a
// thread-block cluster of CLUSTER blocks (distributed shared memory, Hopper), so the rate a
// cluster-shared hot set of x could be gathered at is measured before such a kernel is built
// (scripts/dsmem_gather_probe.py; model.hot_set says what it would serve).
//
// Each block fills its ENTRIES floats, the cluster waits (barrier.cluster), then every thread
// makes `loads` dependent-free loads in batches of 8 (8 in flight, like the random_gather
// ceiling): entry = hash(thread, i) mod ENTRIES, owner rank = hash mod RANKS (RANKS = CLUSTER:
// any block of the cluster; 1: its own), the address mapped to the owner with mapa and read with
// ld.shared::cluster. The cluster waits again before any block exits (a block's shared memory
// must outlive the reads of the others). Compiled with -DCLUSTER=C -DRANKS=R.
#ifndef CLUSTER
#define CLUSTER 8
#endif
#ifndef RANKS
#define RANKS CLUSTER
#endif
#define ENTRIES 12288  // 48 KB of static shared memory a block

__device__ __forceinline__ unsigned hash32(unsigned v) {
    v ^= v >> 16; v *= 0x7feb352dU; v ^= v >> 15; v *= 0x846ca68bU; v ^= v >> 16;
    return v;
}

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}

__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ float load_rank(const float* local, unsigned rank) {
    unsigned addr = (unsigned)__cvta_generic_to_shared(local), remote;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
    return v;
}

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1)
dsmem_gather(const int loads, float* __restrict__ sink) {
    __shared__ float hot[ENTRIES];
    const unsigned me = cluster_rank();
    for (int k = threadIdx.x; k < ENTRIES; k += blockDim.x) hot[k] = (float)(k + me);
    cluster_sync();
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int i = 0; i < loads; i += 8) {
        float v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const unsigned h = hash32(t * 0x9e3779b9U + (unsigned)(i + j));
            const unsigned rank = RANKS == 1 ? me : (h >> 20) % RANKS;
            v[j] = load_rank(hot + (h % ENTRIES), rank);
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) acc += v[j];
    }
    cluster_sync();
    if (acc == -1.0f) sink[0] = acc;  // never true: keeps the loads
}
