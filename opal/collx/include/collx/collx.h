/*
 * collx core: the narrow C API between the Open MPI glue (C) and the
 * collective engine (C++17).  No MPI or Open MPI header is needed here:
 * datatypes, operations and communicators are opaque handles that only the
 * transport (implemented by the glue, or by a simulator/test double)
 * interprets.
 */
#ifndef COLLX_COLLX_H
#define COLLX_COLLX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes of the core (the glue maps them to OMPI_* codes). */
enum {
    COLLX_OK = 0,
    COLLX_ERR = -1,          /* a transport call failed; see op status */
    COLLX_ERR_NOMEM = -2,
    COLLX_ERR_ARG = -3,
    COLLX_ERR_UNSUPPORTED = -4 /* caller should fall back */
};

/* What the engine must know of a datatype to segment and buffer it.  All
 * byte quantities follow MPI semantics (extent includes lb/ub markers,
 * true_lb/true_extent describe the bytes really touched). */
typedef struct collx_dtype {
    void *handle;          /* opaque: ompi_datatype_t* in the glue      */
    size_t size;           /* bytes of data in one element               */
    ptrdiff_t extent;      /* stride between consecutive elements        */
    ptrdiff_t true_lb;     /* first byte touched, relative to the buffer */
    ptrdiff_t true_extent; /* span of bytes touched by one element       */
} collx_dtype_t;

/*
 * Transport: how the engine moves and combines data.  isend/irecv post a
 * non-blocking transfer of `count` elements and must later call
 * collx_xfer_complete(token, status) exactly once -- possibly from inside
 * the isend/irecv call itself (the engine is re-entrant), possibly from the
 * progress engine.  A non-zero return means nothing was posted and no
 * completion will follow.
 */
typedef struct collx_transport {
    void *ctx;
    int rank;
    int size;
    int (*isend)(void *ctx, const void *buf, size_t count, const collx_dtype_t *dt, int peer,
                 int tag, void *token);
    int (*irecv)(void *ctx, void *buf, size_t count, const collx_dtype_t *dt, int peer, int tag,
                 void *token);
    /* inout[i] = in[i] op inout[i], in MPI_Reduce_local's operand order */
    int (*reduce_local)(void *ctx, const void *in, void *inout, size_t count,
                        const collx_dtype_t *dt, void *op);
    /* dst = src for `count` elements of dt (layout-preserving copy) */
    int (*copy)(void *ctx, void *dst, const void *src, size_t count, const collx_dtype_t *dt);
} collx_transport_t;

/* Called by the transport when a transfer posted with `token` completes. */
void collx_xfer_complete(void *token, int status);

/* Tree families; see opal/collx/tree.hpp and docs/mca-parameters.md. */
typedef enum collx_tree_kind {
    COLLX_TREE_BINOMIAL = 0,
    COLLX_TREE_IN_ORDER_BINOMIAL,
    COLLX_TREE_BINARY,
    COLLX_TREE_KNOMIAL,
    COLLX_TREE_CHAIN,
    COLLX_TREE_PIPELINE, /* one chain: linear pipelining (LP) */
    COLLX_TREE_LINEAR,
    COLLX_TREE_TOPO,     /* node leaders first, then within each node */
    COLLX_TREE_RING,     /* allreduce: reduce-scatter + allgather around the
                          * ranks (commutative ops); bcast, reduce and
                          * non-commutative allreduce: the pipeline chain */
    COLLX_TREE_RECURSIVE_DOUBLING, /* allreduce: log2 P pairwise exchanges
                          * (any op, rank order); bcast and reduce: the
                          * binomial tree */
    COLLX_TREE_COUNT
} collx_tree_kind_t;

/* Name of a tree kind ("binomial", ...), NULL when out of range. */
const char *collx_tree_name(int kind);
/* The tree kind of a name (case-insensitive), -1 when no tree has it. */
int collx_tree_from_name(const char *name);
/* A tuning file's algorithm "flat:TREE" (hanx runs the whole call as that
 * collx tree; collx-tune writes it): the prefix, and the tree an algorithm
 * name gives (-1: not "flat:" and a tree's name). */
#define COLLX_FLAT_PREFIX "flat:"
int collx_flat_tree(const char *algorithm);

/* Per-call knobs, filled by the glue from MCA variables / tuning rules. */
typedef struct collx_tuning {
    int tree;             /* collx_tree_kind_t                           */
    int fanout;           /* k-nomial radix, number of chains (>= 1)     */
    size_t segment_bytes; /* target bytes per segment (>= 1 element)     */
    int max_send;         /* outstanding isends per operation (>= 1)     */
    int max_recv;         /* outstanding irecvs per operation (>= 1)     */
    const int *node_of;   /* COLLX_TREE_TOPO: node number of every rank
                             (NULL: unknown, a binomial tree is used)     */
} collx_tuning_t;

/* The collectives collx knows, in one table: the tuning file's
 * "collective" words, adaptx's and the simulator's names, the tools'
 * --coll words (a non-blocking form is the same word with an "i"). */
typedef enum collx_coll {
    COLLX_COLL_BCAST = 0,
    COLLX_COLL_REDUCE,
    COLLX_COLL_ALLREDUCE,
    COLLX_COLL_ALLGATHER,
    COLLX_COLL_ALLGATHERV,
    COLLX_COLL_GATHER,
    COLLX_COLL_GATHERV,
    COLLX_COLL_SCATTER,
    COLLX_COLL_SCATTERV,
    COLLX_COLL_BARRIER,
    COLLX_COLL_REDUCE_SCATTER,
    COLLX_COLL_REDUCE_SCATTER_BLOCK,
    COLLX_COLL_SCAN,
    COLLX_COLL_EXSCAN,
    COLLX_COLL_ALLTOALL,
    COLLX_COLL_ALLTOALLV,
    COLLX_COLL_COUNT
} collx_coll_t;

/* "bcast", ..., "alltoallv"; NULL when out of range. */
const char *collx_coll_name(int coll);
/* The collective called `name`, or -1. */
int collx_coll_from_name(const char *name);
/* All the names in enum order, NULL-terminated. */
const char *const *collx_coll_names(void);

/* Default segment sizes, in one place (the components' MCA help, the
 * simulator and collx-tune follow them). */
enum {
    COLLX_LP_ALPHA_NS_DEFAULT = 2000,    /* adaptx lp_alpha_ns             */
    COLLX_LP_BETA_PS_DEFAULT = 8000      /* adaptx lp_beta_ps_per_byte     */
};
/* A collx tree's segment when none is set: for the pipeline and chain
 * trees (and the ring's bcast and reduce, a pipeline chain) the LP optimum
 * (collx_lp_segment_bytes) over the longest chain (P ranks for pipeline;
 * 1 + ceil((P-1)/fanout) for chain), alpha and beta
 * in seconds; otherwise 64 KiB for bcast and 32 KiB for the reductions. */
size_t collx_tree_segment_bytes(int coll, int tree, size_t message_bytes, int P, int fanout,
                                double alpha, double beta);
/* hanx's pipeline segment without a tuning file's rule: bcast in 256 KiB
 * and reduce in 64 KiB segments from 512 KiB messages on, allreduce in
 * 32 KiB segments from 256 KiB on; 0 (one segment) otherwise. */
size_t collx_hier_segment_bytes(int coll, size_t message_bytes);
/* hanx's built-in algorithm of a level where coll_hanx_low_algorithm
 * (up = 0: the levels below the node leaders') or coll_hanx_up_algorithm
 * (up = 1: the leaders' level) is left at its default and no tuning rule
 * names one: a collx_tree_kind_t, or -1 for the level's module.
 * - the collx binomial tree between the leaders for a reduce of
 *   COLLX_HIER_REDUCE_TREE_MIN_BYTES or more -- two segments of the tree's
 *   32 KiB or more, pipelined between the nodes;
 * - the collx recursive-doubling tree between the leaders of two nodes
 *   (level_ranks 2) for a blocking allreduce of
 *   COLLX_HIER_PAIR_RD_MIN_BYTES or more: one exchange, where Open MPI
 *   4.1's tuned took up to twice its time on two ranks (at 4 and 16 KiB,
 *   and at 1 Gbit/s from 256 KiB);
 * - non-blocking (MPI_Ireduce at every size, MPI_Iallreduce below
 *   COLLX_HIER_NB_TREES_MAX_BYTES): the binomial tree on every level, where
 *   the modules' i-collectives (Open MPI's libnbc) cost a schedule each;
 *   but MPI_Iallreduce between two leaders on the collx recursive
 *   doubling: one exchange, where the tree reduces and then broadcasts.
 * level_ranks: the ranks of the level (the leaders' level: the nodes).
 * A fixed tree per call, shape and size: the folding order depends on the
 * shape and the size alone. */
#define COLLX_HIER_REDUCE_TREE_MIN_BYTES 65536
#define COLLX_HIER_NB_TREES_MAX_BYTES 262144
#define COLLX_HIER_PAIR_RD_MIN_BYTES 4096
int collx_hier_level_tree(int coll, size_t message_bytes, int up, int level_ranks,
                          int nonblocking);
/* hanx's built-in choice of an allreduce without a tuning file's rule: 1
 * for one collx ring over all `size` ranks (COLLX_TREE_RING), 0 for its
 * levels.  The ring from COLLX_RING_MIN_BYTES where the ranks are in
 * blocks by node, each rank's chunk is at least COLLX_RING_MIN_CHUNK
 * bytes (the ring's 2(P-1) steps cost latencies: on many ranks it needs a
 * message that large) and the ring crosses each node boundary with at
 * most COLLX_RING_MAX_VOLUME times the bytes of the leaders' ring: per
 * node link 2(P-1)/P of the message against 2(N-1)/N (so on 2 x 2 it
 * stays on the levels, 1.5x; from 4 x 2 on, 1.17x, it takes the ring,
 * which spreads the reductions over every rank and pipelines every
 * segment). */
#define COLLX_RING_MIN_BYTES 524288
#define COLLX_RING_MIN_CHUNK 32768
#define COLLX_RING_MAX_VOLUME 1.2
int collx_ring_allreduce_default(size_t bytes, int nnodes, int size, int blocks);
/* hanx's built-in allreduce without a tuning file's rule (commutative
 * ops; the others keep rank order their own way), one of
 * collx_allreduce_builtin_t:
 * - COLLX_ALLREDUCE_SPLIT_RING, blocking or not, from
 *   COLLX_SPLIT_RING_MIN_BYTES where the nodes are of one size (parts:
 *   collx_hier_split_parts, 2 ranks or more each) and 2 or more: split
 *   rails -- the node's reduce-scatter, one allreduce per rail on the
 *   collx ring, the node's allgather -- in segments of
 *   COLLX_SPLIT_RING_SEGMENT_BYTES, so each byte crosses a node boundary
 *   on one rail, 2(N-1)/N of the message per node link, the least any
 *   allreduce sends (measured on 2 x 2 and 4 x 2, docs/benchmarks.md);
 * - else COLLX_ALLREDUCE_FLAT_RING where collx_ring_allreduce_default
 *   says so (nodes of different sizes);
 * - else COLLX_ALLREDUCE_FLAT_TOPO, a blocking one on 2 nodes or more of
 *   at most COLLX_TOPO_ALLREDUCE_MAX_BYTES (COLLX_TOPO_ALLREDUCE_MAX_BYTES_2
 *   on 2 nodes): one collx topo tree over all ranks (reduce up the node
 *   leaders' tree, bcast down), which measured 0.84-0.98 of the levels'
 *   time there on 2x2 and 4x2, unlimited and at 1 Gbit/s (docs/
 *   benchmarks.md, "Small allreduce on one topo tree"); the caller runs it
 *   only where neither level's algorithm is set (the user's trees on the
 *   levels decide);
 * - else COLLX_ALLREDUCE_LEVELS.
 * It depends on the shape and the size alone, never on a measurement: a
 * reduction's bits follow the algorithm. */
typedef enum collx_allreduce_builtin {
    COLLX_ALLREDUCE_LEVELS = 0,
    COLLX_ALLREDUCE_FLAT_RING = 1,
    COLLX_ALLREDUCE_SPLIT_RING = 2,
    COLLX_ALLREDUCE_FLAT_TOPO = 3
} collx_allreduce_builtin_t;
#define COLLX_TOPO_ALLREDUCE_MAX_BYTES 16384
#define COLLX_TOPO_ALLREDUCE_MAX_BYTES_2 1024
#define COLLX_SPLIT_RING_MIN_BYTES 131072
#define COLLX_SPLIT_RING_SEGMENT_BYTES 262144
int collx_allreduce_builtin(size_t bytes, int nnodes, int size, int parts, int blocks);
/* hanx's built-in reduce_scatter and reduce_scatter_block without a
 * tuning file's rule: 1 for split rails with the collx ring's
 * reduce-scatter half on both levels (the node's, then each rail's; where
 * coll_hanx_low/up_algorithm are left at their defaults, and for
 * commutative ops: the others keep rank order on the modules) from
 * COLLX_RS_SPLIT_RING_MIN_BYTES of the whole vector (vector_bytes) where
 * the nodes are of one size (parts: collx_hier_split_parts, 2 ranks or
 * more each) and 2 or more; 0 for the levels (each node's sum through its
 * leader).  Measured on 2 x 2 and 4 x 2 emulated nodes, unlimited and at
 * 1 Gbit/s (docs/benchmarks.md, "Reduce_scatter on split rails and the
 * collx ring").  Shape and size alone, never a measurement. */
#define COLLX_RS_SPLIT_RING_MIN_BYTES 65536
int collx_reduce_scatter_builtin(size_t vector_bytes, int nnodes, int parts);

/* hanx's built-in allgather(v) (the one flag): 1 for the node ring
 * (collx_allgather_start) where the blocks average
 * COLLX_ALLGATHER_NODE_RING_MIN_BYTES or more, there are 2 nodes or more
 * and at most COLLX_ALLGATHER_NODE_RING_MAX_RANKS ranks (each rank runs one
 * broadcast per rank at once, each with its receives posted); 0 for the
 * levels.  Measured on 2x2 and 4x2 emulated nodes, unlimited and at
 * 1 Gbit/s (docs/benchmarks.md, "Allgather on the node ring"). */
#define COLLX_ALLGATHER_NODE_RING_MIN_BYTES 32768
#define COLLX_ALLGATHER_NODE_RING_MAX_RANKS 64
int collx_allgather_node_ring(size_t block_bytes, int nnodes, int size);

/* The front door's cost model (opal/collx/costmodel.cpp, docs/cost-model.md):
 * the machine as two links -- within a node, between nodes (one per node,
 * shared by its ranks' flows) -- each a latency and a time per byte, and
 * the time per byte of a local reduction; all in microseconds. */
typedef struct collx_machine {
    double intra_alpha_us, intra_beta_us;
    double inter_alpha_us, inter_beta_us;
    double gamma_us;
    /* the link between nodes' time per byte over the link within a node's,
     * both measured with the other ranks asleep (hanx's measurement); 0
     * where not measured, and then inter_beta_us / intra_beta_us stands */
    double links_ratio;
} collx_machine_t;
/* 1 where the machine's link between nodes is its bottleneck: it takes at
 * least COLLX_SLOW_LINK_RATIO times the time per byte of the link within a
 * node (links_ratio; docs/cost-model.md, "Slow links"); 0 elsewhere or
 * without a machine. */
#define COLLX_SLOW_LINK_RATIO 20
int collx_links_slow(const collx_machine_t *mach);
/* the ratio collx_links_slow compares: links_ratio where measured, else
 * inter_beta_us / intra_beta_us (HUGE_VAL where intra_beta_us is not
 * positive); 0 without a machine */
double collx_links_ratio(const collx_machine_t *mach);
/* hanx's built-in algorithm for an allgather's leaders' stage (blocking or
 * not) where coll_hanx_up_algorithm is left at its default: 1 for the
 * collx ring (the nodes' shares round the leaders, where hanx can: nodes
 * of one size, ranks in blocks by node) for blocks of
 * COLLX_ALLGATHER_RING_MIN_BYTES or more on a machine (hanx's measured one,
 * else its coll_hanx_model_* parameters) whose links between nodes are
 * slow (collx_links_slow): there the ring's bandwidth wins, elsewhere its
 * messages cost more than they save; 0 for the leaders' module.  Allgather
 * does not reduce: its bits do not depend on the choice. */
#define COLLX_ALLGATHER_RING_MIN_BYTES 32768
int collx_allgather_leaders_ring(const collx_machine_t *mach, size_t block_bytes);
/* hanx's built-in choice on a measured machine whose links between nodes
 * are not slow (collx_links_slow): 1 where the call goes to the previous
 * module.  Blocking: a bcast of COLLX_FAST_LINKS_BCAST_MIN_BYTES or more,
 * an allgather(v) of blocks of COLLX_FAST_LINKS_ALLGATHER_MIN_BYTES or
 * more (`bytes`: the message, or the average block), and, on a `kept`
 * machine, an allreduce of COLLX_FAST_LINKS_ALLREDUCE_MIN_BYTES or more.
 * Non-blocking (the previous module: libnbc's): the same calls from
 * COLLX_FAST_LINKS_IBCAST_MIN_BYTES, COLLX_FAST_LINKS_IALLGATHER_MIN_BYTES
 * and (kept) COLLX_FAST_LINKS_IALLREDUCE_MIN_BYTES.  There the
 * hierarchy's advantage, each byte across a node's link once, buys
 * little, and the previous module's flat algorithms, several flows at
 * once, won: on 2x2 and 4x2 emulated nodes without a rate limit (TCP with
 * cubic) tuned's bcast took 0.62-0.91 of hanx's hierarchical one's time on
 * 4x2 from 64 KiB (2x2: 0.79-0.96 up to 512 KiB, 1.02-1.33 above), and
 * tuned's allgather 0.55-0.94 of the node ring's from blocks of 128 KiB
 * (the node ring 0.56-0.87 of tuned's at 32-64 KiB); the cost model, whose
 * links share their bandwidth among a node's flows, predicted tuned's
 * allgather 2.7x slower than it ran (docs/benchmarks.md, "Fast links: the
 * previous module").  2x2's levels, ahead from 1 MiB, are given up for
 * 4x2's gain.  tuned's allreduce took 0.72-0.86 of split rails' time from
 * 1 MiB on both shapes (at 512 KiB split rails 0.92-0.95 of tuned's;
 * "Allreduce on fast links").  libnbc's took 0.38-0.67 of hanx's time for
 * MPI_Iallreduce from 512 KiB (hanx 0.80-0.82 of it at 256 KiB),
 * 0.47-0.95 for MPI_Ibcast from 512 KiB (below, hanx 0.54-1.04 of it on
 * 4x2, 1.04-1.17 on 2x2), and 0.58-0.85 for MPI_Iallgather from blocks of
 * 256 KiB on 4x2 (2x2: 0.63-1.00 from 512 KiB; hanx 0.84-1.00 of it at
 * 256 KiB, given up; "Non-blocking calls on fast links").  A reduction's
 * bits depend on the algorithm, so it asks only where the machine is
 * `kept` (coll_hanx_model_cache: every run on these nodes takes the same
 * measurement, collx_machine_cache_find); never without a machine. */
#define COLLX_FAST_LINKS_BCAST_MIN_BYTES 65536
#define COLLX_FAST_LINKS_ALLGATHER_MIN_BYTES 131072
#define COLLX_FAST_LINKS_ALLREDUCE_MIN_BYTES 1048576
#define COLLX_FAST_LINKS_IBCAST_MIN_BYTES 524288
#define COLLX_FAST_LINKS_IALLGATHER_MIN_BYTES 262144
#define COLLX_FAST_LINKS_IALLREDUCE_MIN_BYTES 524288
int collx_previous_on_fast_links(int coll, size_t bytes, const collx_machine_t *mach, int kept,
                                 int nonblocking);
/* The measured machines hanx keeps between runs (coll_hanx_model_cache;
 * opal/collx/machines.cpp; the file's format in docs/mca-parameters.md):
 * a text file, one line per machine, the last COLLX_MACHINE_CACHE_LINES
 * kept.  A machine's key is its nodes: each node's host name
 * (collx_host_digest) and its number of ranks, in any order
 * (collx_machine_key); 0 is never a key.  Every run on the same nodes
 * then takes the first run's measurement, so that choices that depend on
 * it -- a reduction's, whose bits depend on the algorithm -- are the same
 * from run to run. */
#define COLLX_MACHINE_CACHE_LINES 64
/* 64-bit FNV-1a of n bytes: the same bytes give the same number on every
 * rank and in every run (hanx's digests of its measurements, host names). */
uint64_t collx_digest(const void *data, size_t n);
uint64_t collx_host_digest(const char *name);
/* One node's term of a machine's key: its host's digest and its number of
 * ranks, mixed.  The key of nnodes nodes is made from the sum (modulo
 * 2^64, so in any order: an MPI_SUM of MPI_UINT64_T) of their terms and
 * `measured_by`, a digest of what measured them (hanx's measurement's
 * version and the Open MPI release: a machine measured another way, or
 * through another shared-memory transport, is another machine). */
uint64_t collx_machine_node_term(uint64_t host_digest, int node_size);
uint64_t collx_machine_key(uint64_t sum_of_terms, int nnodes, uint64_t measured_by);
/* $XDG_CACHE_HOME/collx/machines where XDG_CACHE_HOME is an absolute path,
 * else $HOME/.cache/collx/machines, in out; -1 (out empty) where neither
 * is set or it does not fit. */
int collx_machine_cache_default(char *out, size_t size);
/* 1 and values[0..n) where path holds a machine of n values under key (the
 * last such line), else 0 (no file, no such machine, or a line that is
 * not a machine of n values: such lines are ignored). */
int collx_machine_cache_find(const char *path, uint64_t key, double *values, int n);
/* Writes the machine (values[0..n), its `shape` a word for people, e.g.
 * "2x2") under key into path, replacing the key's line and dropping the
 * oldest beyond COLLX_MACHINE_CACHE_LINES and any malformed line; makes
 * the directories on the way.  The file is replaced at once (a new one
 * renamed over it).  0, or -1 with the reason in err. */
int collx_machine_cache_keep(const char *path, uint64_t key, const char *shape,
                             const double *values, int n, char *err, size_t err_size);
/* What hanx can run for a call, as the model names them. */
enum { COLLX_MODEL_PREVIOUS, /* the previous module (modelled as tuned's algorithms) */
       COLLX_MODEL_HIER,     /* hanx's levels, pipelined in its segments */
       COLLX_MODEL_SPLIT,    /* split rails: allreduce in COLLX_SPLIT_RING_SEGMENT_BYTES,
                              * reduce_scatter(_block) on the collx rings */
       COLLX_MODEL_FLAT_PIPELINE, /* one LP chain over all ranks */
       COLLX_MODEL_FLAT_RING,     /* allreduce: one ring over all ranks */
       COLLX_MODEL_NODE_RING,     /* allgather: every rank's block at once round the nodes
                                   * (collx_allgather_start) */
       COLLX_MODEL_COUNT };
/* Another algorithm replaces the baseline (the caller's measured built-in
 * choice) only when predicted at most this fraction of its time. */
#define COLLX_MODEL_MARGIN 0.8
/* "previous", "hierarchical", "split", "flat:pipeline", "flat:ring",
 * "node_ring" (a tuning file's algorithm words); NULL when out of range. */
const char *collx_model_algorithm_name(int algorithm);
/* The predicted time of every algorithm for `coll` (bcast, reduce,
 * allreduce: `bytes` the message; allgather, alltoall, reduce_scatter_block:
 * one rank's block; reduce_scatter: the whole vector; barrier) on `nnodes` nodes of at most `node_size` ranks, in blocks;
 * `balanced`: all nodes of that size (split rails need it); hier_segment:
 * hanx's segment of the levels (0: one; split rails take their own).  us[a] < 0: not a candidate.  Returns the
 * choice (COLLX_MODEL_*): `baseline` (hierarchical where it is not a
 * candidate) unless the cheapest other is predicted at most
 * COLLX_MODEL_MARGIN of its time; -1 for a collective the model does not
 * cover or a bad argument. */
int collx_model_choose(int coll, int nnodes, int node_size, int balanced, size_t bytes,
                       size_t hier_segment, int baseline, const collx_machine_t *mach,
                       double us[COLLX_MODEL_COUNT]);

/* Whether a call is bandwidth-bound, where the one flag (hanx's built-in
 * choice) follows the model (hanx keeps reductions on its rules, whose
 * bits must not depend on a measurement): its data -- `bytes` for bcast,
 * reduce and allreduce, `bytes` times `size` ranks for allgather and
 * alltoall (one rank's block) -- taking at least COLLX_MODEL_BW_LATENCIES
 * latencies of the link between nodes.  There the model's inputs are the
 * links' rates, which a stream measures well; below, latencies set by CPU
 * contention and protocol decide, which the model does not describe.
 * Never for barrier or a collective the model does not cover. */
#define COLLX_MODEL_BW_LATENCIES 16
int collx_model_bandwidth_bound(int coll, const collx_machine_t *mach, size_t bytes, int size);

/* Linear-pipelining segment size that minimises the chain's time
 * (P-1+k)(alpha + beta*n/k): s* = sqrt(n*alpha / ((P-2)*beta)), clamped to
 * [1 KiB, n]; n for P <= 2.  alpha in seconds, beta in seconds per byte. */
size_t collx_lp_segment_bytes(size_t message_bytes, int P, double alpha, double beta);

/* Optional completion notification (non-blocking collectives): called
 * once, when the operation has finished, with its status; from whatever
 * thread completed the last transfer, possibly inside the start call.
 * The operation must not be freed before it has been called. */
typedef struct collx_notify {
    void (*fn)(void *ctx, int status);
    void *ctx;
} collx_notify_t;

typedef struct collx_op collx_op_t;

/* Whether the *_start functions take `dt` (1) or answer
 * COLLX_ERR_UNSUPPORTED (0), for the caller to hand the call on: the
 * segments need a positive extent (a non-negative one for an empty type).
 * Lets a caller decide before it commits (persistent collectives). */
int collx_dtype_supported(const collx_dtype_t *dt);

/* Start a broadcast of `count` elements of `dt` at `buf` from `root`. */
int collx_bcast_start(const collx_transport_t *t, void *buf, size_t count,
                      const collx_dtype_t *dt, int root, int tag, const collx_tuning_t *tun,
                      const collx_notify_t *notify, collx_op_t **out);

/* Start a reduction to `root`.  sendbuf == NULL means MPI_IN_PLACE at the
 * root (its contribution is in recvbuf).  `commutative` = 0 selects an
 * order-preserving schedule: the result is x_0 op x_1 op ... op x_{P-1}. */
int collx_reduce_start(const collx_transport_t *t, const void *sendbuf, void *recvbuf,
                       size_t count, const collx_dtype_t *dt, void *op, int commutative,
                       int root, int tag, const collx_tuning_t *tun,
                       const collx_notify_t *notify, collx_op_t **out);

/* Start an allreduce: a reduction up the tree (rooted at rank 0) whose
 * result flows back down the same tree, segment by segment, overlapped.
 * sendbuf == NULL means MPI_IN_PLACE (every rank's data is in recvbuf).
 * With COLLX_TREE_PIPELINE this is the LP chain allreduce. */
int collx_allreduce_start(const collx_transport_t *t, const void *sendbuf, void *recvbuf,
                          size_t count, const collx_dtype_t *dt, void *op, int commutative,
                          int tag, const collx_tuning_t *tun, const collx_notify_t *notify,
                          collx_op_t **out);

/* The collx ring's halves (commutative ops), the vector of `count`
 * elements in t->size chunks: collx_hier_chunk's where chunk_counts is
 * NULL, else chunk_counts[r] elements for rank r, one after the other in
 * rank order (they must sum to count; a chunk may be empty): phases
 * COLLX_RING_REDUCE_SCATTER leaves chunk r of recvbuf on rank r reduced
 * over all ranks (the rest of recvbuf is scratch; sendbuf, or NULL when
 * the data is in recvbuf, is copied there first); COLLX_RING_ALLGATHER
 * spreads each rank r's chunk r of recvbuf to every rank's (sendbuf
 * ignored); both: the ring allreduce.  Each chunk is folded once, in a
 * fixed order (deterministic). */
#define COLLX_RING_REDUCE_SCATTER 1
#define COLLX_RING_ALLGATHER 2
#define COLLX_RING_ALLREDUCE 3
int collx_ring_start(const collx_transport_t *t, int phases, const void *sendbuf, void *recvbuf,
                     size_t count, const size_t *chunk_counts, const collx_dtype_t *dt, void *op,
                     int tag, const collx_tuning_t *tun, const collx_notify_t *notify,
                     collx_op_t **out);

/* An allgather(v) in place on recvbuf: every rank r's counts[r] elements
 * at recvbuf + displs[r] extents (each rank's already there) reach every
 * rank, as t->size broadcasts at once, one from each rank, segmented and
 * event-driven, each on the topology-aware ring tree: from the root to
 * the other ranks of its node, and round the nodes' leaders (in the order
 * of node_of's numbers) each of which fans out into its node.  Each rank's
 * block leaves its node once and enters every other node once, on every
 * node's link alike; a node's ranks get it as it arrives.  node_of: every
 * rank's node number (NULL: every rank its own node, a pipelined ring of
 * the ranks).  Takes the tags tag, tag - 1, ..., tag - (t->size - 1).
 * tun->tree is ignored. */
int collx_allgather_start(const collx_transport_t *t, void *recvbuf, const size_t *counts,
                          const size_t *displs, const collx_dtype_t *dt, const int *node_of,
                          int tag, const collx_tuning_t *tun, const collx_notify_t *notify,
                          collx_op_t **out);

/* A pipelined schedule of sub-collective steps (hierarchical collectives).
 * This rank takes part in `nstages` stages; stage i has a global `number`
 * (the same on every member of its communicator; a segment flows through
 * a rank's stages in increasing number) and a `channel`: the communicator
 * it runs on, where every member must start its steps in the same order.
 * Step (i, s) -- stage i on segment s -- starts when the rank's previous
 * stage (by number) finished segment s and every step ordered before it
 * on its channel has started; steps of a channel are ordered by (number
 * + s, then stage index) -- step t runs stage j on segment t - j -- so every
 * member starts them in one order and none waits on a later one.  At most
 * `window` segments (raised to the rank's stage span + 1) are between the
 * rank's first and last stage at a time.  serial != 0: a step also waits
 * until the step before it on its channel has finished -- one step per
 * channel at a time, as a blocking call runs them (hanx's blocking calls);
 * 0: as soon as it has started (non-blocking calls).  fn(ctx, stage,
 * segment, token) starts a step (0, or nonzero on failure) and reports its
 * completion, even from inside the call, with collx_xfer_complete(token,
 * status). */
typedef struct collx_stage {
    int number;
    int channel;
} collx_stage_t;
typedef int (*collx_step_fn)(void *ctx, int stage, size_t segment, void *token);
int collx_pipeline_start(const collx_stage_t *stages, int nstages, size_t nseg, int window,
                         int serial, collx_step_fn fn, void *ctx, const collx_notify_t *notify,
                         collx_op_t **out);

/* Hierarchical collectives as stages: hanx's bcast, reduce, allreduce and
 * barrier are built here, once, and run on the schedule engine by hanx
 * and by the simulator alike.
 *
 * The levels, innermost first ([socket,] node, leaders), are two tables
 * over the communicator's ranks: leader[k][r], the lowest rank of r's
 * level-k group (leader[L-1][r] = 0: one top group), and rank_in[k][r],
 * where r's representative (r itself at level 0, its level-(k-1) leader
 * above) sits in the level-k communicator.  Rank r is a member of its
 * level-k communicator when k = 0 or it leads its level-(k-1) group;
 * members are numbered in rank order. */
#define COLLX_HIER_MAX_LEVELS 3
/* Segments a hierarchical call on the schedules keeps in flight beyond its
 * pipeline's depth (collx_pipeline_start's window; hanx and the simulator). */
#define COLLX_HIER_WINDOW 4
#define COLLX_HIER_MAX_STAGES (2 * COLLX_HIER_MAX_LEVELS + 2)
typedef struct collx_hier {
    int nlevels; /* L, 2 .. COLLX_HIER_MAX_LEVELS */
    int size;    /* ranks of the communicator */
    int *leader[COLLX_HIER_MAX_LEVELS];
    int *rank_in[COLLX_HIER_MAX_LEVELS];
    /* Optional, so that a plan costs no pass over all ranks (NULL / 0:
     * computed where needed, O(size)): place[r], r's rank in its node (the
     * groups of level L-2, in rank order), filled by collx_hier_fill where
     * the caller gave the array; parts, collx_hier_split_parts(h), valid
     * when parts_known (collx_hier_fill sets both). */
    int *place;
    int parts, parts_known;
} collx_hier_t;

/* Fill h's tables (allocated by the caller: L arrays of `size` ints each,
 * and h->place when not NULL; parts and parts_known are set)
 * from each rank's group leaders below the top: lead[r * stride + j] is
 * the leader of r's level-j group, j < L-1 (a leader leads its own group
 * at every level below the ones it leads; groups keep rank order). */
void collx_hier_fill(collx_hier_t *h, const int *lead, int stride);
/* 1 when `rank` is a member of its level-k communicator. */
int collx_hier_member(const collx_hier_t *h, int k, int rank);
/* Size of rank's level-k communicator (0 when not a member); O(size). */
int collx_hier_level_size(const collx_hier_t *h, int k, int rank);
/* r's place in its node: its rank among the ranks of its level-(L-2)
 * group, in rank order (the rail it is on).  O(1) on 2 levels or with
 * h->place, else O(r). */
int collx_hier_place(const collx_hier_t *h, int r);

/* A stage: on level `level`'s communicator (COLLX_HLEVEL_P2P: a message
 * on the whole communicator), a `kind` step with `root` (in that
 * communicator; the peer of a message), reading sbuf and writing rbuf:
 * symbolic buffers the runner maps to its own (COLLX_HBUF_*). */
enum { COLLX_HSTEP_BCAST, COLLX_HSTEP_REDUCE, COLLX_HSTEP_ALLREDUCE, COLLX_HSTEP_BARRIER,
       COLLX_HSTEP_SEND, COLLX_HSTEP_RECV,
       COLLX_HSTEP_REDUCE_SCATTER, /* split plans: each member gets its chunk of the sum */
       COLLX_HSTEP_ALLGATHER,      /* split plans: every member's chunk to all, in place */
       /* allgather plans, whose blocks the runner sizes (each rank's block,
        * in node order: node by node, each node's ranks in rank order) */
       COLLX_HSTEP_GATHERV,     /* each member's block to the root, in member order */
       COLLX_HSTEP_ALLGATHERV }; /* each member's share (its node's blocks) to all, in place */
enum { COLLX_HBUF_NONE,     /* no buffer (NULL) */
       COLLX_HBUF_IN_PLACE, /* MPI_IN_PLACE */
       COLLX_HBUF_SEND,     /* the caller's send buffer */
       COLLX_HBUF_RECV,     /* the caller's receive buffer */
       COLLX_HBUF_ACC,      /* a scratch accumulator of the whole message */
       COLLX_HBUF_NODE };   /* allgather: my node's share of the receive buffer */
#define COLLX_HLEVEL_P2P (-1)
/* split plans: the rail, the ranks at the same place of every node (one
 * rank per node, in rank order), and the node as one communicator where it
 * is not level 0 (3 levels: socket, node, leaders) */
#define COLLX_HLEVEL_RAIL (-3)
#define COLLX_HLEVEL_NODE (-4)
typedef struct collx_hier_stage {
    int number; /* the same on every member of the stage's communicator */
    int level, kind, root, sbuf, rbuf;
    int chunk; /* 1: the stage writes only this rank's chunk of each segment
                * (collx_hier_chunk over its node, the chunk of its place
                * there); 0: all of it */
} collx_hier_stage_t;
typedef struct collx_hier_plan {
    int nstages;
    collx_hier_stage_t st[COLLX_HIER_MAX_STAGES];
    int copy_from, copy_to; /* before the stages: copy the message (NONE: no copy) */
    int need_acc;           /* COLLX_HBUF_ACC is used: the caller provides it */
} collx_hier_plan_t;
enum { COLLX_HIER_IN_PLACE = 1, /* the caller passed MPI_IN_PLACE */
       COLLX_HIER_SPLIT_TOP = 2, /* allreduce: the top level as reduce + bcast */
       /* allreduce as split rails (multi-leader): each segment
        * reduce-scattered over the node, each chunk allreduced on its
        * rail, the chunks allgathered over the node; only where
        * collx_hier_split_parts() > 0 */
       COLLX_HIER_SPLIT_RAIL = 4,
       /* bcast, reduce with collx_hier_split_parts() > 0, from a root
        * that does not lead its node: on the root's rail
        * (the ranks at the root's place of every node) and, inside each
        * node, from or to the rank at that place -- two stages where the
        * leaders' way takes three (the root to its leader, the leaders,
        * the nodes).  Ignored elsewhere (the leaders' way). */
       COLLX_HIER_ROOT_RAIL = 8 };
/* Rank's stages of `coll` (bcast, reduce, allreduce, barrier or allgather)
 * with `root` (bcast, reduce).  level_size[k]: the size of rank's level-k
 * communicator (NULL: from the tables).  Allgather (and allgatherv): 0,
 * the node's blocks gathered into its leader's share of the receive buffer
 * (the node as one communicator: level 0 on two levels); 1, the leaders'
 * allgather of the nodes' shares, in place; 2, the node's bcast of the
 * whole, where the node has two ranks or more.  COLLX_ERR_ARG for another
 * collective or a bad rank, root or table. */
int collx_hier_plan(const collx_hier_t *h, int coll, int rank, int root, const int *level_size,
                    int flags, collx_hier_plan_t *out);
/* The split plans' shape: the size S of every node (the groups of level
 * L-2) when all have the same S >= 2 and there are at least two nodes (so
 * every rail spans every node); else 0 (no split plan). */
int collx_hier_split_parts(const collx_hier_t *h);
/* Chunk i of `parts` of n elements: *first, *count (the first n % parts
 * chunks one element longer). */
void collx_hier_chunk(size_t n, int parts, int i, size_t *first, size_t *count);
/* Split rails' layout of a reduce_scatter (hanx's, blocking or not, and
 * the simulator's): rank q's piece is rcounts[q] elements of the vector,
 * in rank order.  Rail p is the ranks at place p of every node
 * (collx_hier_place), in rank order; the vector in rail order holds rail
 * 0's ranks' pieces, then rail 1's, ...  For `rank`, at place l of its
 * node and j of its rail: order[0 .. size): the ranks in rail order
 * (whose pieces, one after the other, are the vector in rail order);
 * chunks[0 .. S): each rail's part (the node's reduce-scatter's chunks),
 * chunks[S .. S + size/S): the pieces of rail l's ranks (the rail's
 * chunks); *mine: rail l's part's offset in the vector in rail order,
 * *piece: my piece's offset in that part (elements).  S is
 * collx_hier_split_parts(h); COLLX_ERR_ARG where it is 0 or the rank is
 * out of range. */
int collx_hier_rail_layout(const collx_hier_t *h, int rank, const int *rcounts, int *order,
                           size_t *chunks, size_t *mine, size_t *piece);

/* 1 when the operation has finished (all its transfers completed); then
 * *status is COLLX_OK or the first error. */
int collx_op_test(collx_op_t *op, int *status);
void collx_op_free(collx_op_t *op);

#ifdef __cplusplus
}
#endif

#endif /* COLLX_COLLX_H */
