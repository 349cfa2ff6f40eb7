// The collectives' names and default segment sizes (collx.h): one table,
// used by the tuning rules, the components, the simulator and the tools.
#include <cmath>
#include <cstring>

#include "collx/collx.h"

namespace {

constexpr const char *kNames[COLLX_COLL_COUNT + 1] = {
    "bcast",   "reduce",  "allreduce", "allgather", "allgatherv",     "gather",
    "gatherv", "scatter", "scatterv",  "barrier",   "reduce_scatter", "reduce_scatter_block",
    "scan",    "exscan",  "alltoall",  "alltoallv", nullptr};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == COLLX_COLL_COUNT + 1, "one name per collective");

}  // namespace

extern "C" {

const char *collx_coll_name(int coll) {
    return coll >= 0 && coll < COLLX_COLL_COUNT ? kNames[coll] : nullptr;
}

int collx_coll_from_name(const char *name) {
    if (name == nullptr) return -1;
    for (int c = 0; c < COLLX_COLL_COUNT; ++c)
        if (std::strcmp(name, kNames[c]) == 0) return c;
    return -1;
}

const char *const *collx_coll_names(void) { return kNames; }

size_t collx_tree_segment_bytes(int coll, int tree, size_t message_bytes, int P, int fanout,
                                double alpha, double beta) {
    // (the ring's allreduce and its halves move chunks round the ring: the
    // reductions' segment; its bcast and reduce are the pipeline chain)
    const bool ring_chain =
        tree == COLLX_TREE_RING && (coll == COLLX_COLL_BCAST || coll == COLLX_COLL_REDUCE);
    if (tree == COLLX_TREE_PIPELINE || tree == COLLX_TREE_CHAIN || ring_chain) {
        // the longest chain is what the LP model describes
        const int f = fanout > 0 ? fanout : 1;
        const int chain = tree == COLLX_TREE_CHAIN && P > 1 ? (P - 1 + f - 1) / f + 1 : P;
        return collx_lp_segment_bytes(message_bytes, chain, alpha, beta);
    }
    return coll == COLLX_COLL_BCAST ? 65536 : 32768;
}

// Chosen from collx-tune's measurements on 2x2 and 4x2 emulated nodes,
// unlimited and at 1 Gbit/s (docs/benchmarks.md, "The front door, every
// collective"): in all four, allreduce in 32 KiB segments beat 128 KiB ones
// from 512 KiB on (1.1-1.7x) and beat one segment at 256 KiB, and reduce in
// 64 KiB segments beat 128 KiB ones at 512 KiB and 2 MiB; bcast's 256 KiB
// stay (no segment size won in all four).
size_t collx_hier_segment_bytes(int coll, size_t message_bytes) {
    if (coll == COLLX_COLL_ALLREDUCE) return message_bytes < 262144 ? 0 : 32768;
    if (message_bytes < 524288) return 0;
    if (coll == COLLX_COLL_BCAST) return 262144;
    if (coll == COLLX_COLL_REDUCE) return 65536;
    return 0;
}

// Measured on 2x2 and 4x2 emulated nodes, unlimited and at 1 Gbit/s
// (docs/benchmarks.md, "Reduce with a collx tree between the leaders"):
// from 64 KiB the binomial tree between the leaders beat their module
// (tuned's reduce) at every size on all four, 0.43-0.87 of its time where
// the links are not the limit, 0.99-1.00 on 2x2 at 1 Gbit/s; at 8 KiB it
// lost on 2x2 (1.2-1.3x).  Non-blocking, on 4x2: the trees on both levels
// took 0.44-0.68 of the modules' (libnbc's) time for MPI_Ireduce at 1 KiB -
// 1 MiB, and 0.59-0.92 for MPI_Iallreduce at 1-64 KiB (from 256 KiB, mixed).
// Two leaders (docs/benchmarks.md, "Two leaders' allreduce"): between two
// emulated nodes tuned's allreduce took 55-84 us at 4 KiB and 59-66 us at
// 16 KiB against 25-37 us for its own recursive doubling, and 16.3 ms at
// 1 MiB at 1 Gbit/s against 8.8 ms for the collx one; below 4 KiB tuned's
// (recursive doubling too) was as fast as the collx tree or faster.  In
// the one flag's allreduce on 2x2: 0.51-0.82 of its time before at 4 KiB.
// Non-blocking, between two leaders (docs/benchmarks.md, "MPI_Iallreduce
// between the leaders on recursive doubling"): the one flag's MPI_Iallreduce
// on 2x2 took 0.44-0.71 of its time on the binomial tree at 8 B - 32 KiB
// unlimited, 0.73-0.92 at 1 Gbit/s below 32 KiB and the same from there
// (the link's rate).  On 4 leaders, below 4 KiB, it made no difference
// beyond the noise (0.88-1.13 in two runs), so they keep the tree.
int collx_hier_level_tree(int coll, size_t message_bytes, int up, int level_ranks,
                          int nonblocking) {
    const bool reduce = coll == COLLX_COLL_REDUCE;
    if (nonblocking && up && level_ranks == 2 && coll == COLLX_COLL_ALLREDUCE &&
        message_bytes < COLLX_HIER_NB_TREES_MAX_BYTES)
        return COLLX_TREE_RECURSIVE_DOUBLING;
    if (nonblocking && (reduce || (coll == COLLX_COLL_ALLREDUCE &&
                                   message_bytes < COLLX_HIER_NB_TREES_MAX_BYTES)))
        return COLLX_TREE_BINOMIAL;
    if (!nonblocking && up && level_ranks == 2 && coll == COLLX_COLL_ALLREDUCE &&
        message_bytes >= COLLX_HIER_PAIR_RD_MIN_BYTES)
        return COLLX_TREE_RECURSIVE_DOUBLING;
    return reduce && up && message_bytes >= COLLX_HIER_REDUCE_TREE_MIN_BYTES ? COLLX_TREE_BINOMIAL
                                                                            : -1;
}

// Measured on 2x2 and 4x2 emulated nodes, unlimited and at 1 Gbit/s
// (docs/benchmarks.md, "Allgather between the leaders on the collx ring"):
// from blocks of 32 KiB the ring took 0.40-0.90 of the leaders' module's
// time at 1 Gbit/s (0.44-0.68 of the best upstream's; 73-90 % of the
// bound), where hanx measured the link between nodes 12x slower per byte
// than within a node (the other ranks busy; 42-78x asleep, as measured
// since stop 45); without a limit (2.7x busy; 7-13x asleep) it took
// 0.70-1.32x the module's, its many messages cost what 4 or 8 ranks on 2
// cores count; below 32 KiB the module's fewer messages won.  The ratio's
// threshold, 20 asleep (6 busy until stop 44), lies between the two
// (docs/cost-model.md, "Slow links").
double collx_links_ratio(const collx_machine_t *mach) {
    if (mach == nullptr) return 0;
    if (mach->links_ratio > 0) return mach->links_ratio;
    // (a link within a node that costs nothing per byte: any link between
    // nodes is slow beside it)
    return mach->intra_beta_us > 0 ? mach->inter_beta_us / mach->intra_beta_us : HUGE_VAL;
}

int collx_links_slow(const collx_machine_t *mach) {
    return mach != nullptr && collx_links_ratio(mach) >= COLLX_SLOW_LINK_RATIO;
}

int collx_allgather_leaders_ring(const collx_machine_t *mach, size_t block_bytes) {
    return block_bytes >= COLLX_ALLGATHER_RING_MIN_BYTES && collx_links_slow(mach);
}

int collx_previous_on_fast_links(int coll, size_t bytes, const collx_machine_t *mach, int kept,
                                 int nonblocking) {
    if (mach == nullptr || collx_links_slow(mach)) return 0;
    switch (coll) {
    case COLLX_COLL_BCAST:
        return bytes >= (nonblocking ? COLLX_FAST_LINKS_IBCAST_MIN_BYTES
                                     : COLLX_FAST_LINKS_BCAST_MIN_BYTES);
    case COLLX_COLL_ALLGATHER:
    case COLLX_COLL_ALLGATHERV:
        return bytes >= (nonblocking ? COLLX_FAST_LINKS_IALLGATHER_MIN_BYTES
                                     : COLLX_FAST_LINKS_ALLGATHER_MIN_BYTES);
    case COLLX_COLL_ALLREDUCE:
        return kept && bytes >= (nonblocking ? COLLX_FAST_LINKS_IALLREDUCE_MIN_BYTES
                                             : COLLX_FAST_LINKS_ALLREDUCE_MIN_BYTES);
    default: return 0;
    }
}

int collx_allgather_node_ring(size_t block_bytes, int nnodes, int size) {
    return nnodes >= 2 && size <= COLLX_ALLGATHER_NODE_RING_MAX_RANKS &&
           block_bytes >= COLLX_ALLGATHER_NODE_RING_MIN_BYTES;
}

int collx_ring_allreduce_default(size_t bytes, int nnodes, int size, int blocks) {
    if (bytes < COLLX_RING_MIN_BYTES || !blocks || nnodes < 2 || size <= nnodes) return 0;
    if (bytes / static_cast<size_t>(size) < COLLX_RING_MIN_CHUNK) return 0;
    const double ring = static_cast<double>(size - 1) / size;
    const double leaders = static_cast<double>(nnodes - 1) / nnodes;
    return ring <= COLLX_RING_MAX_VOLUME * leaders;
}

// Measured on 2x2 and 4x2 emulated nodes, unlimited and at 1 Gbit/s
// (docs/benchmarks.md, "Split rails on the collx ring"): split rails with
// the ring on the rails, in 256 KiB segments (128 and 512 KiB lost up to
// 1.33x), took 0.55-0.69 of the best upstream's time on 4x2 at 1 Gbit/s
// from 512 KiB (91-94 % of the alpha-beta bound from 2 MiB; the flat ring
// 71-78 %), the same as the levels on 2x2 at 1 Gbit/s, and without a rate
// limit 0.62-0.67 of the levels' time on 2x2 from 512 KiB and 0.99-1.07x
// the flat ring's on 4x2.  Non-blocking (MPI_Iallreduce, on the schedules,
// the rail made with the hierarchy; "MPI_Iallreduce on split rails"):
// 85-93 % of the bound on 4x2 at 1 Gbit/s from 2 MiB (the flat ring
// 73-75 % in the same run), the levels' time on 2x2 at 1 Gbit/s (1.00-1.10),
// 0.64-0.86 of the levels' on 2x2 unlimited and 1.01-1.13x the flat
// ring's on 4x2 unlimited.
// Small ones (stop 38, "Small allreduce on one topo tree"): one topo tree
// over all ranks took 0.84-0.90 of the levels' time on 4x2 up to 4 KiB and
// 0.53-0.74 at 8-16 KiB, unlimited and at 1 Gbit/s; on 2x2 0.94-0.99 up to
// 1 KiB but 1.03-1.17 from 2 KiB (two nodes' leaders exchange once where
// the tree reduces, then broadcasts).
int collx_allreduce_builtin(size_t bytes, int nnodes, int size, int parts, int blocks) {
    if (parts >= 2 && nnodes >= 2 && bytes >= COLLX_SPLIT_RING_MIN_BYTES)
        return COLLX_ALLREDUCE_SPLIT_RING;
    if (collx_ring_allreduce_default(bytes, nnodes, size, blocks)) return COLLX_ALLREDUCE_FLAT_RING;
    if (nnodes >= 2 &&
        bytes <= (nnodes == 2 ? COLLX_TOPO_ALLREDUCE_MAX_BYTES_2 : COLLX_TOPO_ALLREDUCE_MAX_BYTES))
        return COLLX_ALLREDUCE_FLAT_TOPO;
    return COLLX_ALLREDUCE_LEVELS;
}

// From 64 KiB of the vector the rings took 0.23-0.56 of the best
// upstream's time on 2x2 and 4x2, unlimited and at 1 Gbit/s, where the
// levels took up to 1.8x it; below, the levels' fewer steps win
// (docs/benchmarks.md, "Reduce_scatter on split rails and the collx ring").
int collx_reduce_scatter_builtin(size_t vector_bytes, int nnodes, int parts) {
    return parts >= 2 && nnodes >= 2 && vector_bytes >= COLLX_RS_SPLIT_RING_MIN_BYTES;
}

}  // extern "C"
