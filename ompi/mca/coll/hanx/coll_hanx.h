/*
 * coll/hanx: hierarchical collectives (after HAN).  A communicator is split
 * into levels -- optionally sockets inside a node, nodes, and the leaders of
 * the nodes -- and each level runs the collectives of the modules Open MPI
 * selects on its sub-communicator (hanx excluded), composed and pipelined
 * here.
 *
 *   coll_hanx_module.c   hierarchy (levels, tables), lifetime, selection
 *   coll_hanx_pipeline.c bcast, reduce, allreduce, barrier and their
 *                        non-blocking forms: per-level stages pipelined over
 *                        segments on the core's schedules
 *   coll_hanx_gather.c   gather(v), allgather(v), scatter(v), alltoall(v):
 *                        packed blocks through the node leaders
 *   coll_hanx_scan.c     reduce_scatter(_block), scan, exscan
 *   coll_hanx_tuning.c   tuning file and per-call choices
 */
#ifndef MCA_COLL_HANX_H
#define MCA_COLL_HANX_H

#include "ompi_config.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "mpi.h"
#include "ompi/mca/coll/coll.h"
#include "../collx_glue/collx_glue.h"

BEGIN_C_DECLS

#define HANX_MAX_LEVELS COLLX_HIER_MAX_LEVELS
/* channels of non-blocking calls: one per level, and the node communicator
 * where it is not a level's (3 levels: socket, node, leaders) */
#define HANX_NODE HANX_MAX_LEVELS
/* ... and the rail of split-rail allreduces (the ranks at the same place
 * of every level-0 group) */
#define HANX_RAIL (HANX_MAX_LEVELS + 1)
#define HANX_NCHAN (HANX_MAX_LEVELS + 2)
/* sets of sub-communicators per communicator: the MCA parameters' and up
 * to seven more that tuning rules ask for ("low"/"up") */
#define HANX_MAX_VIEWS 8

typedef struct mca_coll_hanx_component_t {
    mca_coll_base_component_t super;
    int priority;
    int verbose;
    int output;
    int ranks_per_node;   /* 0: real locality; N > 0: synthetic groups of N ranks */
    int round_robin;      /* synthetic nodes take ranks round-robin, not in blocks */
    int ranks_per_socket; /* 0: sockets from hwloc (when socket_level); N > 0: synthetic */
    int socket_level;     /* 1: add a socket level where a node has several sockets */
    char *low_preference;  /* ompi_comm_coll_preference of the intra-node levels */
    char *up_preference;   /* ompi_comm_coll_preference of the leaders' level */
    /* coll_hanx_low_algorithm's current text (settable: read at every
     * call, mca_coll_hanx_choose): the levels below the leaders run their
     * module ("module") or a collx tree */
    char *const *low_text;
    /* coll_hanx_default_algorithm (settable): where no tuning rule names an
     * algorithm, 0 hanx's built-in choice, 1 hierarchical, 2 the previous
     * module, 3 allreduce as split rails and the rest hierarchical, 4 the
     * cost model's choice */
    int default_algorithm;
    /* the cost model's machine (settable): intra alpha ns, intra beta
     * ps/byte, inter alpha ns, inter beta ps/byte, gamma ps/byte */
    int model[5];
    int model_measure;     /* 1: measure the model's machine at each hierarchy's build */
    char *model_cache;     /* where measured machines are kept between runs ("" the
                            * default place, "none" nowhere): coll_hanx_model_cache */
    int blocking_schedule; /* blocking calls' stages: level 0's blocking (0) or none (1) */
    int root_rail;         /* bcast/reduce from a non-leader root on its rail (1) */
    char *const *up_text;  /* coll_hanx_up_algorithm's: the same for the leaders' level */
    int up_var;            /* its MCA variable (left at its default: collx_hier_level_tree) */
    int low_var;           /* coll_hanx_low_algorithm's (the same) */
    /* coll_hanx_flat_algorithm's current text (settable: read when a
     * communicator's hierarchy is built, into flat_default) */
    char *const *flat_text;
    int bcast_segment_size;     /* bytes; 0: tuning file / built-in default */
    int reduce_segment_size;
    int allreduce_segment_size;
    char *tuning_file;
    int ordered_max_bytes;     /* limit of gather-and-fold for rank order */
    void *rules;               /* collx_rules_t * loaded from tuning_file, or NULL */
} mca_coll_hanx_component_t;

COLLX_COMPONENT_EXPORT extern mca_coll_hanx_component_t mca_coll_hanx_component;

/* The sub-communicators made with one pair of submodule preferences
 * (ompi_comm_coll_preference values, hanx excluded): `low` for the
 * intra-node levels, `up` for the node leaders'.  Same groups, same ranks
 * in every view; only the modules Open MPI selects on them differ.
 * lvl[k]: the communicator of my level-k group, NULL when I do not
 * represent my level-(k-1) group.  Level 0 holds every rank; the last
 * level holds the node leaders.  node: the node level as one
 * communicator (== lvl[0] with 2 levels). */
/* Non-blocking calls on one sub-communicator must start their
 * collectives there in one order on every member, call after call: a
 * channel hands the turn to the calls in the order they were made (each
 * posts all its steps there before the next posts any); steps that come
 * early wait in `deferred` (coll_hanx_pipeline.c). */
struct hanx_nb;
typedef struct hanx_deferred {
    struct hanx_nb *call;
    int stage;
    size_t seg;
    void *token;
} hanx_deferred_t;
typedef struct hanx_chan {
    struct hanx_nb **calls; /* registered calls, in call order; [0] has the turn */
    size_t ncalls, cap_calls;
    hanx_deferred_t *deferred; /* steps waiting for their call's turn, in order */
    size_t ndeferred, cap_deferred;
} hanx_chan_t;

typedef struct hanx_view {
    char *low, *up;
    hanx_chan_t chan[HANX_NCHAN]; /* per level (and node): the turn of non-blocking calls */
    struct ompi_communicator_t *lvl[HANX_MAX_LEVELS];
    struct ompi_communicator_t *node;
    /* my rail (the ranks at my place in every node), made (with the `up`
     * preference) with the view where the nodes are of one size; NULL
     * where it could not be made (the levels serve instead) */
    struct ompi_communicator_t *rail;
    int failed;        /* could not be made: the first view serves instead */
} hanx_view_t;

typedef struct mca_coll_hanx_module_t {
    mca_coll_base_module_t super;
    collx_prev_t prev; /* what ran before us */
    /* hierarchy, built lazily at the first collective */
    int hier_state;
    int nlevels;       /* 2 (node, leaders) or 3 (socket, node, leaders) */
    hanx_view_t view[HANX_MAX_VIEWS];  /* view[0]: the MCA parameters' */
    int nviews;
    hanx_view_t *cur;  /* the view the current call runs on (set by mca_coll_hanx_use) */
    int views_full_said;
    /* leader[k][r]: rank (in comm) leading r's level-k group -- its lowest
     * rank; rank_in[k][r]: rank, in its level-k communicator, of the
     * member representing r at level k (r itself at level 0, the leader of
     * r's level-(k-1) group above). */
    int *leader[HANX_MAX_LEVELS];
    int *rank_in[HANX_MAX_LEVELS];
    int *node_of;      /* node index of each rank of comm (nodes by lowest rank) */
    int *low_rank_of;  /* rank in its node communicator of each rank */
    int *node_size;    /* ranks on each node */
    int *node_first;   /* position of each node's first rank in node order */
    int *rank_at;      /* rank of comm at each position of node order */
    int size;          /* ranks of comm */
    int nnodes;
    int my_node;
    int max_node_size;
    int blocks;        /* every group of every level holds contiguous ranks */
    int split_parts;   /* ranks per node where split rails can run (collx_hier_split_parts), else 0 */
    /* the cost model's machine as measured on this communicator
     * (coll_hanx_model_measure; the same on every rank), where measured */
    int measured;
    /* 1 where that machine is kept (coll_hanx_model_cache): taken from the
     * file, or measured and written there; every run on these nodes then
     * takes the same one, so that a reduction may choose by it */
    int machine_kept;
    collx_machine_t machine;
    /* comm again, with the leaders' preference (hanx and han excluded: as
     * Open MPI's flat modules, tuned, serve it), made with the hierarchy
     * where the measured links between nodes are fast and the previous
     * module is not those flat modules (upstream han, Open MPI 5.0's
     * default): the fast links' blocking hand-overs run there
     * (hanx_choice_t.flat_previous); else NULL */
    struct ompi_communicator_t *flat;
    int flat_default;  /* coll_hanx_flat_algorithm when the hierarchy was built: -1 none */
    /* non-blocking calls: the channels' lock, and how many registrations
     * (call x channel) still have steps to start; a blocking call waits for
     * 0 before it uses the sub-communicators */
    pthread_mutex_t nb_lock;
    volatile int nb_unposted;
} mca_coll_hanx_module_t;

/* A non-blocking allreduce whose stages carry at least this many bytes runs
 * its leaders' (and rails') allreduce on the collx ring where the module
 * would (mca_coll_hanx_iallreduce). */
#define HANX_NB_RING_MIN_BYTES 65536

/* m's level tables as the core's (collx_hier_t) over `size` ranks. */
static inline collx_hier_t mca_coll_hanx_hier(const mca_coll_hanx_module_t *m, int size)
{
    collx_hier_t h;
    memset(&h, 0, sizeof(h));
    h.nlevels = m->nlevels;
    h.size = size;
    for (int k = 0; k < m->nlevels; ++k) {
        h.leader[k] = m->leader[k];
        h.rank_in[k] = m->rank_in[k];
    }
    h.place = m->low_rank_of; /* (rank in node, in rank order: the core's place) */
    h.parts = m->split_parts;
    h.parts_known = 1;
    return h;
}
OBJ_CLASS_DECLARATION(mca_coll_hanx_module_t);

mca_coll_base_module_t *mca_coll_hanx_comm_query(struct ompi_communicator_t *comm, int *priority);

/* ---------------------------------------------------- shared helpers */

#define HANX_LOG(level, ...)                                                               \
    do {                                                                                   \
        if (mca_coll_hanx_component.verbose >= (level))                                    \
            opal_output_verbose((level), mca_coll_hanx_component.output, __VA_ARGS__);     \
    } while (0)

/* 1 when the hierarchy of comm is built and worth using (builds it at the
 * first call; 0 while building, so Open MPI's own collectives on comm go to
 * the previous module). */
int mca_coll_hanx_ready(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm);
/* ...and the tuning (file or built-in) does not send this call to the
 * previous module; *choice (when not NULL) receives what it chose, looked
 * up once per call. */
typedef struct hanx_choice hanx_choice_t;
int mca_coll_hanx_use(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm, int coll,
                      size_t bytes, hanx_choice_t *choice);

/* ------------------------------------------------------------ stages
 * A call as a list of stages per rank (coll_hanx_pipeline.c): each has a
 * global number, the same on every member of its communicator, and runs on
 * one level's communicator (or the node's, comm itself for a message, or
 * locally).  Both blocking (mca_coll_hanx_run_blocking) and non-blocking
 * calls (mca_coll_hanx_start_nb) run it on the core's schedules. */
enum stage_kind {
    /* the core's stages of bcast, reduce, allreduce, barrier (collx_hier_plan) */
    ST_BCAST = COLLX_HSTEP_BCAST,
    ST_REDUCE = COLLX_HSTEP_REDUCE,
    ST_ALLREDUCE = COLLX_HSTEP_ALLREDUCE,
    ST_BARRIER = COLLX_HSTEP_BARRIER,
    ST_SEND = COLLX_HSTEP_SEND,
    ST_RECV = COLLX_HSTEP_RECV,
    ST_REDUCE_SCATTER = COLLX_HSTEP_REDUCE_SCATTER, /* split rails: my chunk of the sum */
    ST_ALLGATHER_CHUNKS = COLLX_HSTEP_ALLGATHER,    /* split rails: the chunks, in place */
    /* the core's stages of allgather (collx_hier_plan), on blocks (hanx_blocks_t) */
    ST_GATHERV = COLLX_HSTEP_GATHERV,       /* the node's blocks to its leader */
    ST_ALLGATHERV = COLLX_HSTEP_ALLGATHERV, /* the leaders exchange their nodes' blocks, in place */
    ST_RING_RS,    /* the collx ring's reduce-scatter half, in place on rbuf: the
                    * blocks' ring_n[k] elements in ring_chunks[k] (k: 1 on the
                    * rail, 0 on the node) */
    ST_LOCAL       /* local work: the blocks' finish() */
};

#define HANX_P2P COLLX_HLEVEL_P2P /* the level of a point-to-point stage (on comm itself) */
#define HANX_LOCAL (-2) /* the level of a local stage */
#define HANX_MAX_STAGES COLLX_HIER_MAX_STAGES

/* allgather's packed blocks, for its stages (coll_hanx_gather.c) */
typedef struct hanx_blocks {
    const char *mine;  /* my block (packed, or the caller's; MPI_IN_PLACE at a leader) */
    int my_count;      /* ... of my_type */
    struct ompi_datatype_t *my_type;
    char *all;         /* every block, in node order */
    struct ompi_datatype_t *type; /* the unit of cnt, dsp, ncnt, ndsp */
    int *cnt, *dsp;    /* my node's members' blocks in my node's share */
    int *ncnt, *ndsp;  /* the nodes' shares of `all` */
    /* > 0 where the nodes' shares are of one size and in the leaders'
     * rank order (`all` the receive buffer, nodes of one size, ranks in
     * blocks): the leaders' allgatherv is then an allgather of ring_count
     * `type`s, which the collx ring can run (coll_hanx_up_algorithm ring) */
    size_t ring_count;
    const size_t *ring_chunks[2]; /* ST_RING_RS: the node's (0) and the rail's (1) chunks */
    size_t ring_n[2];
    int (*finish)(struct hanx_blocks *b);   /* the local last stage */
    void (*release)(struct hanx_blocks *b); /* frees it all */
} hanx_blocks_t;

typedef struct hanx_stage {
    int number;          /* global stage number */
    int level;           /* a level; HANX_NODE, HANX_P2P or HANX_LOCAL */
    enum stage_kind kind;
    int root;            /* in the level communicator; the peer of a message */
    const char *sbuf;    /* MPI_IN_PLACE, or the segment-0 address */
    char *rbuf;          /* segment-0 address (may be NULL where unused) */
    int chunk;           /* 1: only my chunk of each segment (split rails) */
} hanx_stage_t;

/* One call's stages, built once, run by the core's schedule engine
 * (mca_coll_hanx_run_blocking, mca_coll_hanx_start_nb). */
typedef struct hanx_pipeline {
    hanx_stage_t st[HANX_MAX_STAGES];
    int n;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    hanx_view_t *view;                /* the sub-communicators of this call */
    struct ompi_communicator_t *comm; /* for point-to-point stages */
    int tag;                          /* of point-to-point stages */
    size_t count, seg_count;          /* elements; per segment */
    hanx_blocks_t *blk;               /* allgather's blocks, or NULL */
    int tree[HANX_NCHAN];             /* per channel: a collx tree, or -1 (its module) */
    /* split rails: a segment's chunks over my node's `parts` ranks, mine
     * is number `part` (my rank in the node); split: the chunks' counts and
     * displacements of a whole segment ([0, 2 parts)) and of the last
     * one ([2 parts, 4 parts)), freed with the call; else NULL */
    int parts, part;
    int *split;
} hanx_pipeline_t;

void mca_coll_hanx_pipeline_init(hanx_pipeline_t *p, hanx_view_t *v,
                                 struct ompi_communicator_t *comm, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op, size_t count, int tag);
void mca_coll_hanx_add_stage(hanx_pipeline_t *p, int number, int level, enum stage_kind kind,
                             int root, const void *sbuf, void *rbuf);
/* The core's plan's stages added to p, its symbolic buffers mapped by
 * bufs[COLLX_HBUF_*], its levels to hanx's (rail, node, level k). */
void mca_coll_hanx_add_plan(hanx_pipeline_t *p, const collx_hier_plan_t *plan, void *const *bufs);
/* Start p as a non-blocking collective: takes to_free and p->blk (also on
 * failure). */
int mca_coll_hanx_start_nb(mca_coll_hanx_module_t *m, const hanx_pipeline_t *p, char *to_free,
                           ompi_request_t **request);
/* Run p as a blocking call on the schedules: its level-0 stages (every
 * stage of a call of one segment) as blocking collectives, run by the
 * caller as they become ready, the others as non-blocking ones; takes
 * to_free and p->blk (also on failure). */
int mca_coll_hanx_run_blocking(mca_coll_hanx_module_t *m, const hanx_pipeline_t *p,
                               char *to_free);

/* Progress until every non-blocking call has started all its steps on the
 * sub-communicators (before a blocking call uses them). */
void mca_coll_hanx_nb_drain(mca_coll_hanx_module_t *m);
/* 1 when the choice `ch` is split rails ("split") and they can run for
 * this call: every node of one size >= 2, at least two nodes, a datatype
 * tuned's reduce_scatter takes (its scratch buffer ignores the true lower
 * bound), and the view's rail made (with the view: blocking, form "", or
 * not, form "i", alike).  Else the levels serve, said at verbose 10. */
int mca_coll_hanx_split_ok(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm,
                           const hanx_choice_t *ch, struct ompi_datatype_t *dtype,
                           const char *form, const char *collective);
/* Release the channels of a view. */
void mca_coll_hanx_chan_free(hanx_view_t *v);

/* The same for a non-blocking call: never builds anything (that would
 * wait for the other ranks), so NULL -- the previous module -- until a
 * blocking collective built the hierarchy, or where the tuning says
 * "previous"; else the view (set of sub-communicators) to run on, the first
 * one where the rule's view is not made yet.  *choice receives the choice. */
struct hanx_view *mca_coll_hanx_use_nb(mca_coll_hanx_module_t *m,
                                       struct ompi_communicator_t *comm, int coll, size_t bytes,
                                       hanx_choice_t *choice);

/* One bcast, reduce or allreduce as a collx tree over all ranks of c
 * (coll_hanx_pipeline.c). */
int mca_coll_hanx_tree_call(int coll, int tree, const int *node_of,
                            struct ompi_communicator_t *c, const void *sb, void *rb, size_t n,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                            ompi_request_t **req, int *handled);
/* The collx ring's reduce-scatter half over c (commutative ops), blocking,
 * in place: buf holds this rank's n elements, in c's size chunks of
 * chunks[r] elements one after the other (summing to n); rank r is left
 * chunk r summed over c at its place (the rest of buf is scratch).
 * *handled = 0 when the core does not take the datatype. */
int mca_coll_hanx_ring_reduce_scatter(struct ompi_communicator_t *c, void *buf, size_t n,
                                      const size_t *chunks, struct ompi_datatype_t *dtype,
                                      struct ompi_op_t *op, int *handled);

/* Memory for `count` elements of dtype; returns the address to use as the
 * buffer (shifted by the true lower bound), *to_free what to free(). */
char *mca_coll_hanx_temp(struct ompi_datatype_t *dtype, size_t count, char **to_free);

/* count elements of dtype from `from` to `to` (nothing when the same). */
void mca_coll_hanx_copy(struct ompi_datatype_t *dtype, size_t count, void *to, const void *from);

/* 1 when dtype's data starts past its origin (true_lb != 0).  Open MPI
 * 4.1.4's scratch-buffer algorithms -- tuned's ring allreduce and
 * reduce_scatter, libnbc's ireduce/iallreduce -- do not shift their
 * buffers by it and corrupt the heap (docs/upstream-bugs.md): hanx keeps
 * such datatypes away from them. */
int mca_coll_hanx_scratch_unsafe(struct ompi_datatype_t *dtype);

/* Size in bytes of `count` elements of dtype. */
size_t mca_coll_hanx_bytes(struct ompi_datatype_t *dtype, size_t count);

/* The i-th element of a buffer of dtype, and the extent it steps by. */
char *mca_coll_hanx_elem(const void *buf, struct ompi_datatype_t *dtype, size_t i);
ptrdiff_t mca_coll_hanx_extent(struct ompi_datatype_t *dtype);

/* A collective of the level-k (or node) communicator. */
#define HANX_LVL(m, k, api, ...) \
    (m)->cur->lvl[k]->c_coll->coll_##api(__VA_ARGS__, (m)->cur->lvl[k], (m)->cur->lvl[k]->c_coll->coll_##api##_module)
/* the same for a non-blocking one, whose request comes after the comm */
#define HANX_ILVL(m, k, api, req, ...)                                                     \
    (m)->cur->lvl[k]->c_coll->coll_##api(__VA_ARGS__, (m)->cur->lvl[k], (req),                       \
                                    (m)->cur->lvl[k]->c_coll->coll_##api##_module)
#define HANX_TOP(m) ((m)->cur->lvl[(m)->nlevels - 1])
#define HANX_TOP_CALL(m, api, ...) HANX_LVL(m, (m)->nlevels - 1, api, __VA_ARGS__)
#define HANX_NODE_CALL(m, api, ...) \
    (m)->cur->node->c_coll->coll_##api(__VA_ARGS__, (m)->cur->node, (m)->cur->node->c_coll->coll_##api##_module)
/* A blocking call handed to the previous module (ch: the tuning's choice):
 * on m->flat's own modules where the fast links' hand-over chose them
 * (mca_coll_hanx_flat_previous), else the previous module on comm. */
#define HANX_PREVIOUS_CALL(m, ch, comm, api, ...)                                          \
    (mca_coll_hanx_flat_previous((m), (ch))                                                 \
         ? (m)->flat->c_coll->coll_##api(__VA_ARGS__, (m)->flat,                            \
                                         (m)->flat->c_coll->coll_##api##_module)             \
         : (m)->prev.api(__VA_ARGS__, (comm), (m)->prev.api##_module))

/* Tuning: what the file (or the built-in defaults) say for one call. */
struct hanx_choice {
    const char *algorithm; /* NULL: hierarchical */
    size_t segment_bytes;  /* 0: no segmentation */
    const char *low, *up;  /* submodule preferences; NULL: the MCA parameters' */
    int low_tree, up_tree; /* the levels' algorithms: -1 the submodule, else a collx tree */
    int flat_tree;         /* "flat:TREE": the whole call as that collx tree; else -1 */
    /* 1: the previous module, where it is the fast links' hand-over
     * (collx_previous_on_fast_links) of a blocking call: on m->flat where
     * made (mca_coll_hanx_flat_previous) */
    int flat_previous;
};
/* The communicator a blocking call that ch hands to the previous module
 * runs on with that communicator's own modules (m->flat, where the fast
 * links' hand-over chose it and it was made), else NULL: the previous
 * module on comm. */
struct ompi_communicator_t *mca_coll_hanx_flat_previous(const mca_coll_hanx_module_t *m,
                                                        const hanx_choice_t *ch);
/* The value of coll_hanx_low/up_algorithm that leaves a level to hanx's
 * built-in choice, as the default does (also when written through MPI_T). */
#define HANX_LEVEL_AUTO "auto"
/* The segment of a pipelined bcast, reduce or allreduce, in bytes: the
 * collective's coll_hanx_*_segment_size where set, else the choice's
 * (choice_bytes; 0: one segment); 0 for the other collectives. */
size_t mca_coll_hanx_segment_bytes(int coll, size_t choice_bytes);
void mca_coll_hanx_choose(mca_coll_hanx_module_t *m, int coll, size_t bytes, int nonblocking,
                          hanx_choice_t *out);
int mca_coll_hanx_tuning_open(void);
void mca_coll_hanx_tuning_close(void);

/* ------------------------------------------------------- collectives */

int mca_coll_hanx_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_hanx_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module);
int mca_coll_hanx_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module);
int mca_coll_hanx_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

/* Non-blocking forms of the four above: the same stages on the core's
 * schedule engine (coll_hanx_pipeline.c); the previous module's while the
 * hierarchy is not built yet, and where the blocking form would not run
 * the levels (tuning "previous", rank order, scratch-unsafe datatypes). */
int mca_coll_hanx_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module);
int mca_coll_hanx_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_hanx_iallreduce(const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module);
int mca_coll_hanx_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module);
int mca_coll_hanx_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module);

int mca_coll_hanx_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_hanx_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, const int *rcounts, const int *displs,
                          struct ompi_datatype_t *rdtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_hanx_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_hanx_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, const int *rcounts, const int *displs,
                             struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module);
int mca_coll_hanx_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_hanx_scatterv(const void *sbuf, const int *scounts, const int *displs,
                           struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, int root,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_hanx_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_hanx_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                            struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                            const int *rdispls, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

int mca_coll_hanx_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_hanx_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module);
int mca_coll_hanx_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_hanx_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm,
                                       mca_coll_base_module_t *module);
int mca_coll_hanx_scan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module);
int mca_coll_hanx_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module);

/* 1 when a reduction with op keeps MPI's rank order through the levels:
 * commutative, or every group holds contiguous ranks. */
int mca_coll_hanx_order_ok(mca_coll_hanx_module_t *m, struct ompi_op_t *op);

/* Rank order by gathering every contribution and folding (coll_hanx_ordered.c):
 * for placements the levels cannot keep in order. */
int mca_coll_hanx_ordered_fits(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm,
                               struct ompi_datatype_t *dtype, size_t count, const char *what);
int mca_coll_hanx_ordered_reduce(mca_coll_hanx_module_t *m, const void *sbuf, void *rbuf, int count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                 struct ompi_communicator_t *comm);
int mca_coll_hanx_ordered_scan(mca_coll_hanx_module_t *m, const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, int exclusive);

END_C_DECLS

#endif
