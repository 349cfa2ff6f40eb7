#include "ompi_config.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "coll_hanx.h"
#include "../collx_glue/collx_glue.h"
#include "ompi/group/group.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "opal/util/info.h"
#include "opal/util/output.h"

enum { HIER_UNBUILT = 0, HIER_READY = 1, HIER_BUILDING = 2, HIER_FLAT = -1 };

/* --------------------------------------------------------------------------
 * Sub-communicator lifetime.  Sub-communicators are freed with their parent
 * module -- or at the very start of MPI_Finalize (attribute on
 * MPI_COMM_SELF), before Open MPI tears communicators down in an order we
 * do not control, so that nothing is ever freed twice (ompi #13398).
 */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static mca_coll_hanx_module_t **live = NULL;
static int nlive = 0, cap_live = 0;
static int finalize_keyval = MPI_KEYVAL_INVALID;

static void free_comms(struct ompi_communicator_t **lvl, struct ompi_communicator_t **node)
{
    /* with 2 levels the node communicator is level 0: free it once */
    if (*node && *node != lvl[0]) ompi_comm_free(node);
    *node = NULL;
    for (int k = 0; k < HANX_MAX_LEVELS; ++k) {
        if (lvl[k]) ompi_comm_free(&lvl[k]);
        lvl[k] = NULL;
    }
}

static void free_subcomms(mca_coll_hanx_module_t *m)
{
    for (int v = 0; v < m->nviews; ++v) {
        free_comms(m->view[v].lvl, &m->view[v].node);
        if (m->view[v].rail) ompi_comm_free(&m->view[v].rail);
        m->view[v].rail = NULL;
        mca_coll_hanx_chan_free(&m->view[v]);
        free(m->view[v].low);
        free(m->view[v].up);
    }
    if (m->flat) ompi_comm_free(&m->flat);
    m->flat = NULL;
    m->nviews = 0;
    m->cur = NULL;
    for (int k = 0; k < HANX_MAX_LEVELS; ++k) {
        free(m->leader[k]);
        free(m->rank_in[k]);
        m->leader[k] = m->rank_in[k] = NULL;
    }
    free(m->node_of);
    free(m->low_rank_of);
    free(m->node_size);
    free(m->node_first);
    free(m->rank_at);
    m->node_of = m->low_rank_of = m->node_size = m->node_first = m->rank_at = NULL;
    m->nlevels = 0;
}

static void live_remove(mca_coll_hanx_module_t *m)
{
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < nlive; ++i)
        if (live[i] == m) live[i] = live[--nlive];
    pthread_mutex_unlock(&live_lock);
}

static int at_finalize(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm; (void)keyval; (void)val; (void)extra;
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < nlive; ++i) {
        live[i]->hier_state = HIER_FLAT;
        free_subcomms(live[i]);
    }
    nlive = 0;
    pthread_mutex_unlock(&live_lock);
    return MPI_SUCCESS;
}

static int live_add(mca_coll_hanx_module_t *m)
{
    int rc = OMPI_SUCCESS;
    pthread_mutex_lock(&live_lock);
    if (MPI_KEYVAL_INVALID == finalize_keyval) {
        if (MPI_SUCCESS != PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize,
                                                   &finalize_keyval, NULL) ||
            MPI_SUCCESS != PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, NULL))
            rc = OMPI_ERROR;
    }
    if (OMPI_SUCCESS == rc && nlive == cap_live) {
        int cap = cap_live ? 2 * cap_live : 16;
        void *p = realloc(live, (size_t)cap * sizeof(*live));
        if (p) {
            live = p;
            cap_live = cap;
        } else {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    if (OMPI_SUCCESS == rc) live[nlive++] = m;
    pthread_mutex_unlock(&live_lock);
    return rc;
}

/* ---------------------------------------------------------------- module */

static void hanx_module_construct(mca_coll_hanx_module_t *m)
{
    memset(&m->prev, 0, sizeof(m->prev));
    m->hier_state = HIER_UNBUILT;
    m->nlevels = 0;
    m->flat_default = -1;
    for (int k = 0; k < HANX_MAX_LEVELS; ++k) m->leader[k] = m->rank_in[k] = NULL;
    memset(m->view, 0, sizeof(m->view));
    m->nviews = m->views_full_said = 0;
    m->cur = NULL;
    m->flat = NULL;
    m->node_of = m->low_rank_of = m->node_size = m->node_first = m->rank_at = NULL;
    m->nnodes = m->max_node_size = m->split_parts = m->measured = m->machine_kept = 0;
    m->my_node = -1;
    m->blocks = 0;
    pthread_mutex_init(&m->nb_lock, NULL);
    m->nb_unposted = 0;
}

static void hanx_module_destruct(mca_coll_hanx_module_t *m)
{
    live_remove(m);
    free_subcomms(m);
    collx_glue_release_prev(&m->prev);
    pthread_mutex_destroy(&m->nb_lock);
}

OBJ_CLASS_INSTANCE(mca_coll_hanx_module_t, mca_coll_base_module_t, hanx_module_construct,
                   hanx_module_destruct);

static int hanx_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
#define HANX_SAVE(api) COLLX_SAVE_PREV(m->prev, comm, api);
    HANX_SAVE(bcast) HANX_SAVE(reduce) HANX_SAVE(allreduce) HANX_SAVE(barrier)
    HANX_SAVE(ibcast) HANX_SAVE(ireduce) HANX_SAVE(iallreduce) HANX_SAVE(ibarrier)
    HANX_SAVE(iallgather) HANX_SAVE(ireduce_scatter) HANX_SAVE(ireduce_scatter_block)
    HANX_SAVE(gather) HANX_SAVE(gatherv) HANX_SAVE(allgather) HANX_SAVE(allgatherv)
    HANX_SAVE(scatter) HANX_SAVE(scatterv) HANX_SAVE(alltoall) HANX_SAVE(alltoallv)
    HANX_SAVE(reduce_scatter) HANX_SAVE(reduce_scatter_block) HANX_SAVE(scan) HANX_SAVE(exscan)
#undef HANX_SAVE
    HANX_LOG(1, "coll:hanx: enabled on %s (cid %d, size %d)", comm->c_name,
             COLLX_COMM_CID(comm), ompi_comm_size(comm));
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_hanx_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    mca_coll_hanx_component_t *c = &mca_coll_hanx_component;
    if (c->priority < 0) return NULL;
    if (OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2) return NULL;
    mca_coll_hanx_module_t *m = OBJ_NEW(mca_coll_hanx_module_t);
    if (NULL == m) return NULL;
    *priority = c->priority;
    m->super.coll_module_enable = hanx_enable;
    m->super.coll_bcast = mca_coll_hanx_bcast;
    m->super.coll_reduce = mca_coll_hanx_reduce;
    m->super.coll_allreduce = mca_coll_hanx_allreduce;
    m->super.coll_barrier = mca_coll_hanx_barrier;
    m->super.coll_ibcast = mca_coll_hanx_ibcast;
    m->super.coll_ireduce = mca_coll_hanx_ireduce;
    m->super.coll_iallreduce = mca_coll_hanx_iallreduce;
    m->super.coll_ibarrier = mca_coll_hanx_ibarrier;
    m->super.coll_iallgather = mca_coll_hanx_iallgather;
    m->super.coll_gather = mca_coll_hanx_gather;
    m->super.coll_gatherv = mca_coll_hanx_gatherv;
    m->super.coll_allgather = mca_coll_hanx_allgather;
    m->super.coll_allgatherv = mca_coll_hanx_allgatherv;
    m->super.coll_scatter = mca_coll_hanx_scatter;
    m->super.coll_scatterv = mca_coll_hanx_scatterv;
    m->super.coll_alltoall = mca_coll_hanx_alltoall;
    m->super.coll_alltoallv = mca_coll_hanx_alltoallv;
    m->super.coll_reduce_scatter = mca_coll_hanx_reduce_scatter;
    m->super.coll_reduce_scatter_block = mca_coll_hanx_reduce_scatter_block;
    m->super.coll_ireduce_scatter = mca_coll_hanx_ireduce_scatter;
    m->super.coll_ireduce_scatter_block = mca_coll_hanx_ireduce_scatter_block;
    m->super.coll_scan = mca_coll_hanx_scan;
    m->super.coll_exscan = mca_coll_hanx_exscan;
    return &m->super;
}

/* --------------------------------------------------------------------------
 * Hierarchy: built at the first collective that needs it (creating
 * communicators inside module enable hangs on dup'ed communicators).  While
 * it is being built, the collectives Open MPI runs on `comm` to create the
 * sub-communicators go to the previous module.
 *
 * Levels, innermost first: [socket,] node, leaders.  A group's leader is
 * its lowest rank (splits keep the parent's order), so level-k
 * communicators hold the leaders of the level-(k-1) groups in rank order.
 */

/* My node's communicator: the glue's node map (real nodes, or synthetic
 * groups), the one adaptx's topo tree uses too. */
static int split_node(struct ompi_communicator_t *comm, opal_info_t *info,
                      struct ompi_communicator_t **node)
{
    int *map = collx_glue_node_map(comm, mca_coll_hanx_component.ranks_per_node,
                                   mca_coll_hanx_component.round_robin);
    if (NULL == map) return OMPI_ERR_OUT_OF_RESOURCE;
    const int rank = ompi_comm_rank(comm);
    const int rc = ompi_comm_split_with_info(comm, map[rank], rank, info, node, false);
    free(map);
    return rc;
}

/* My socket group inside `node`, or NULL when the node has one socket (or
 * the socket level is off). */
static int split_socket(struct ompi_communicator_t *node, opal_info_t *info,
                        struct ompi_communicator_t **sock)
{
    mca_coll_hanx_component_t *c = &mca_coll_hanx_component;
    const int lrank = ompi_comm_rank(node);
    int rc;
    *sock = NULL;
    if (c->ranks_per_socket > 0)
        rc = ompi_comm_split_with_info(node, lrank / c->ranks_per_socket, lrank, info, sock, false);
    else if (c->socket_level)
        rc = ompi_comm_split_type(node, OMPI_COMM_TYPE_SOCKET, 0, info, sock);
    else
        return OMPI_SUCCESS;
    if (OMPI_SUCCESS != rc) return rc;
    if (MPI_COMM_NULL == (MPI_Comm)*sock) *sock = NULL;
    return OMPI_SUCCESS;
}

/* The leaders' communicator among `parent`'s members: leaders of the
 * groups below (i_lead) get one, the others NULL. */
static int split_leaders(struct ompi_communicator_t *parent, int i_lead, opal_info_t *info,
                         struct ompi_communicator_t **out)
{
    int rc = ompi_comm_split_with_info(parent, i_lead ? 0 : MPI_UNDEFINED,
                                       ompi_comm_rank(parent), info, out, false);
    if (OMPI_SUCCESS == rc && MPI_COMM_NULL == (MPI_Comm)*out) *out = NULL;
    return rc;
}

static int comm_rank_of(struct ompi_communicator_t *sub, int sub_rank,
                        struct ompi_communicator_t *comm)
{
    int r = -1;
    ompi_group_translate_ranks(sub->c_local_group, 1, &sub_rank, comm->c_local_group, &r);
    return r;
}

/* Tables from every rank's [socket leader, node leader, rank in node]. */
static int fill_tables(mca_coll_hanx_module_t *m, const int *all, int size)
{
    const int L = m->nlevels;
    for (int k = 0; k < L; ++k) {
        m->leader[k] = malloc((size_t)size * sizeof(int));
        m->rank_in[k] = malloc((size_t)size * sizeof(int));
        if (!m->leader[k] || !m->rank_in[k]) return OMPI_ERR_OUT_OF_RESOURCE;
    }
    m->node_of = malloc((size_t)size * sizeof(int));
    m->low_rank_of = malloc((size_t)size * sizeof(int));
    m->node_size = calloc((size_t)size, sizeof(int));
    m->node_first = malloc((size_t)size * sizeof(int));
    m->rank_at = malloc((size_t)size * sizeof(int));
    int *index = malloc((size_t)size * sizeof(int));
    if (!m->node_of || !m->low_rank_of || !m->node_size || !m->node_first || !m->rank_at ||
        !index) {
        free(index);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* leader, rank_in, the places (low_rank_of: rank in node, as each
     * rank's node communicator says, all[3r + 2]) and split_parts: the
     * core's tables (collx_hier_fill) */
    collx_hier_t h = mca_coll_hanx_hier(m, size);
    collx_hier_fill(&h, all + (3 == L ? 0 : 1), 3);
    for (int r = 0; r < size; ++r)
        if (m->low_rank_of[r] != all[3 * r + 2]) { /* (nodes split in rank order: never) */
            free(index);
            return OMPI_ERR_BAD_PARAM;
        }
    /* nodes, numbered by their leader's rank (= order in the top level) */
    m->size = size;
    m->nnodes = 0;
    for (int r = 0; r < size; ++r)
        if (m->leader[L - 2][r] == r) index[r] = m->nnodes++;
    m->max_node_size = 0;
    for (int r = 0; r < size; ++r) {
        m->node_of[r] = index[m->leader[L - 2][r]];
        if (++m->node_size[m->node_of[r]] > m->max_node_size)
            m->max_node_size = m->node_size[m->node_of[r]];
    }
    for (int n = 0, pos = 0; n < m->nnodes; pos += m->node_size[n++]) m->node_first[n] = pos;
    for (int r = 0; r < size; ++r)
        m->rank_at[m->node_first[m->node_of[r]] + m->low_rank_of[r]] = r;
    /* groups are ordered by their lowest rank: they hold contiguous ranks
     * exactly when group leaders never decrease along the ranks */
    m->blocks = 1;
    for (int k = 0; k < L - 1; ++k)
        for (int r = 1; r < size; ++r)
            if (m->leader[k][r] < m->leader[k][r - 1]) m->blocks = 0;
    m->split_parts = h.parts;
    free(index);
    return OMPI_SUCCESS;
}

/* A view's levels once its node communicator is split: with 3 levels the
 * socket groups (`sock`, taken; NULL: the node's split gave nothing, one
 * group) and their leaders inside the node, then the node leaders' level
 * with the preference `up`. */
static int finish_view(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm, hanx_view_t *v,
                       struct ompi_communicator_t *sock, opal_info_t *info, const char *up)
{
    int rc = OMPI_SUCCESS;
    if (3 == m->nlevels) {
        if (NULL == sock) rc = ompi_comm_dup(v->node, &sock);
        if (OMPI_SUCCESS != rc) return rc;
        v->lvl[0] = sock;
        rc = split_leaders(v->node, 0 == ompi_comm_rank(sock), info, &v->lvl[1]);
        if (OMPI_SUCCESS != rc) return rc;
    } else {
        v->lvl[0] = v->node;
    }
    opal_info_set(info, "ompi_comm_coll_preference", up);
    return split_leaders(comm, 0 == ompi_comm_rank(v->node), info, &v->lvl[m->nlevels - 1]);
}

/* The preference list `v` as the levels get it: hanx itself excluded (it
 * would recurse), and upstream han too (a hierarchy inside a level; Open
 * MPI 5.0 enables han by default, above tuned). */
static void level_preference(const char *v, char *out, size_t size)
{
    char tmp[512];
    collx_glue_exclude_self(v, "hanx", tmp, sizeof(tmp));
    collx_glue_exclude_self(tmp, "han", out, size);
}

/* coll_hanx_model_measure: the cost model's machine, measured on comm
 * while its hierarchy is built.  Rank 0 (node 0's leader) measures the
 * link to the next rank of its node and to node 1's leader: the latency
 * from 8-byte ping-pongs (the best of MEASURE_PINGS), the time per byte
 * from a stream of MEASURE_MSGS messages of MEASURE_BYTES answered by an
 * empty one (a stream, so that a link that lets a burst through at once --
 * a token bucket, as the emulated links -- shows its rate; the best of
 * MEASURE_REPS), each after one to warm up; and it times a local sum of
 * ints.  The other ranks wait meanwhile in a barrier, busy, as they
 * will be in a collective.  Then, with every rank but the two of the
 * link asleep (quiet_wait), it takes the links' latencies again (the
 * model's alpha; the first ones still yield the time per byte): where
 * ranks outnumber cores, the busy ranks took the measured ones' cores
 * and the latency between nodes came out 2-3x the link's (23-42 us
 * against 9-16 on the emulated 1 Gbit/s links; docs/cost-model.md).
 * It streams again too (the best of MEASURE_QUIET_REPS): the ratio of
 * those two times per byte says whether the links between nodes are slow
 * (collx_links_slow).  With the others busy, the link within a node came
 * out 0.6-1.5 ns/B on 4x2 (asleep 0.11-0.19), and the ratio 4-15 at
 * 1 Gbit/s, where the 6 it was held against flipped the choices.
 * Then it broadcasts the result, so that every rank predicts, and
 * chooses, alike.  A link it cannot measure (node 0 has one rank) keeps
 * the model_* parameters' values.
 * A communicator whose ranks all hold the same last result (the one their
 * last measured communicator broadcast) takes it without measuring.
 * With coll_hanx_model_cache, rank 0 first looks for its nodes' machine
 * in that file (keep_or_find) and, found, broadcasts it instead of
 * measuring; else it writes what it measured there.  t[MEASURE_KEPT]
 * says which (machine_kept). */
#define MEASURE_BYTES 65536
#define MEASURE_MSGS 8
#define MEASURE_REPS 3
#define MEASURE_PINGS 16 /* the ping-pongs' repetitions: a busy machine's latency varies most */
#define MEASURE_QUIET_REPS 8
#define MEASURE_SETTLE_NS 5000000 /* (measure_quiet) */
#define MEASURE_VERSION 2 /* (nodes_key) 2: the quiet streams (stop 45) */
#define MEASURE_VALUES 9  /* the measurement (t[0..8], measure_machine), as kept */
#define MEASURE_KEPT 9    /* t[9]: 0 measured, 1 measured and kept, 2 found kept */
#define MEASURE_RESULTS 10
#define MEASURE_NAP_NS 5000000 /* a waiting rank's sleep between polls (0.5 ms: its
                                * wake-ups slowed the quiet streams within a node 2-3x) */

/* the last result this process took part in (t of measure_machine), and
 * its digest (0: none) */
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static double last_t[MEASURE_RESULTS];
static long long last_id;

/* a digest of a result: the same bytes give the same number on every
 * rank; in [1, 2^62) */
static long long digest(const double *t)
{
    const uint64_t h = collx_digest(t, MEASURE_RESULTS * sizeof(double));
    return (long long)((h & ((1ULL << 62) - 1)) | 1);
}

/* Waits for req, polling the progress engine every MEASURE_NAP_NS and
 * asleep between: a rank that waits out someone else's measurement leaves
 * the cores to it. */
static int quiet_wait(ompi_request_t **req)
{
    int done = 0;
    for (;;) {
        int rc = ompi_request_test(req, &done, MPI_STATUS_IGNORE);
        if (OMPI_SUCCESS != rc || done) return rc;
        const struct timespec nap = {0, MEASURE_NAP_NS};
        nanosleep(&nap, NULL);
    }
}

/* Seconds for n messages of `bytes` from the side that goes `first` to
 * the other and a reply of `reply` bytes (the best of reps after a
 * warm-up); < 0 on an error. */
static double exchange(struct ompi_communicator_t *comm, int peer, int first, char *buf,
                       int bytes, int n, int reply, int reps, int tag)
{
    double best = -1;
    for (int i = 0; i <= reps; ++i) {
        const double t0 = PMPI_Wtime();
        int rc = OMPI_SUCCESS;
        for (int k = 0; k < n && OMPI_SUCCESS == rc; ++k)
            rc = first ? MCA_PML_CALL(send(buf, bytes, MPI_BYTE, peer, tag,
                                           MCA_PML_BASE_SEND_STANDARD, comm))
                       : MCA_PML_CALL(recv(buf, bytes, MPI_BYTE, peer, tag, comm,
                                           MPI_STATUS_IGNORE));
        if (OMPI_SUCCESS == rc)
            rc = first ? MCA_PML_CALL(recv(buf, reply, MPI_BYTE, peer, tag, comm,
                                           MPI_STATUS_IGNORE))
                       : MCA_PML_CALL(send(buf, reply, MPI_BYTE, peer, tag,
                                           MCA_PML_BASE_SEND_STANDARD, comm));
        if (OMPI_SUCCESS != rc) return -1;
        const double t = PMPI_Wtime() - t0;
        if (i > 0 && (best < 0 || t < best)) best = t;
    }
    return best;
}

/* The one-way time of 8 bytes (half the best ping-pong); -1 on an error. */
static double ping_latency(struct ompi_communicator_t *comm, int peer, int first, char *buf,
                           int tag)
{
    const double t = exchange(comm, peer, first, buf, 8, 1, 8, MEASURE_PINGS, tag);
    return t < 0 ? -1 : t / 2;
}

/* One link from rank 0's side (`first`) or its peer's: t[0] the one-way
 * time of 8 bytes, t[1] the stream's time. */
static void measure_link(struct ompi_communicator_t *comm, int peer, int first, char *buf,
                         int tag, double *t)
{
    t[0] = ping_latency(comm, peer, first, buf, tag);
    t[1] = exchange(comm, peer, first, buf, MEASURE_BYTES, MEASURE_MSGS, 0, MEASURE_REPS, tag);
}

/* One link with the other ranks asleep: rank 0 (`first`) wakes its peer
 * with an empty message, the peer waits for it asleep; then q[0] the
 * one-way time of 8 bytes, q[1] the stream's time (as measure_link's,
 * the best of MEASURE_QUIET_REPS); -1 where not measured. */
static void quiet_link(struct ompi_communicator_t *comm, int peer, int first, char *buf,
                       int tag, double *q)
{
    int rc;
    if (first) {
        rc = MCA_PML_CALL(send(NULL, 0, MPI_BYTE, peer, tag, MCA_PML_BASE_SEND_STANDARD, comm));
    } else {
        ompi_request_t *req = MPI_REQUEST_NULL;
        rc = MCA_PML_CALL(irecv(NULL, 0, MPI_BYTE, 0, tag, comm, &req));
        if (OMPI_SUCCESS == rc) rc = quiet_wait(&req);
    }
    if (OMPI_SUCCESS != rc) return;
    q[0] = ping_latency(comm, peer, first, buf, tag);
    q[1] = exchange(comm, peer, first, buf, MEASURE_BYTES, MEASURE_MSGS, 0, MEASURE_QUIET_REPS,
                    tag);
}

/* us per byte of a stream of `stream` seconds that met the one-way
 * latency `latency` twice (its first message and the reply); 0 where not
 * measured */
static double stream_beta(double stream, double latency)
{
    const double bytes = (double)MEASURE_BYTES * MEASURE_MSGS;
    return latency > 0 && stream > 2 * latency ? (stream - 2 * latency) * 1e6 / bytes : 0;
}

/* alpha and beta (us, us per byte) of a link from t (measure_link) and
 * its quiet latency q (quiet_link): alpha the quiet one where measured,
 * beta from the stream less the busy latency the stream met */
static void link_of(const double *t, double q, double *alpha, double *beta)
{
    *alpha = (q > 0 ? q : t[0]) * 1e6;
    *beta = stream_beta(t[1], t[0]);
}

/* t (MEASURE_RESULTS) measured by rank 0 and its two peers, -1 where not */
static void measure(struct ompi_communicator_t *comm, int rank, int intra, int inter, int tag,
                    double *t)
{
    char buf[MEASURE_BYTES]; /* (its contents are never read) */
    memset(buf, 0, sizeof(buf));
    if (0 == rank) {
        if (intra > 0) measure_link(comm, intra, 1, buf, tag, t);
        measure_link(comm, inter, 1, buf, tag, t + 2);
        /* a sum of one half into the other */
        const int half = MEASURE_BYTES / 2, n = half / (int)sizeof(int);
        for (int i = 0; i <= MEASURE_REPS; ++i) {
            const double t0 = PMPI_Wtime();
            ompi_op_reduce(&ompi_mpi_op_sum.op, buf, buf + half, n, &ompi_mpi_int.dt);
            const double s = (PMPI_Wtime() - t0) / half;
            if (i > 0 && (t[4] < 0 || s < t[4])) t[4] = s;
        }
    } else if (intra == rank || inter == rank) { /* (rank 0 sends first) */
        double ignored[2];
        measure_link(comm, 0, 0, buf, tag, ignored);
    }
}

/* The links within a node and between nodes with the other ranks asleep
 * (quiet_link), measured by rank 0 and its two peers: t[5] and t[6] their
 * latencies, t[7] and t[8] their streams; the other ranks go on at once
 * (to wait for the result asleep) */
static void measure_quiet(struct ompi_communicator_t *comm, int rank, int intra, int inter,
                          int tag, double *t)
{
    char buf[MEASURE_BYTES]; /* (its contents are never read) */
    memset(buf, 0, sizeof(buf));
    double q[2] = {-1, -1};
    if (0 == rank) {
        /* the others leave the barrier before us, busy, and only then fall
         * asleep: let them */
        const struct timespec settle = {0, MEASURE_SETTLE_NS};
        nanosleep(&settle, NULL);
        if (intra > 0) {
            quiet_link(comm, intra, 1, buf, tag, q);
            t[5] = q[0];
            t[7] = q[1];
        }
        q[0] = q[1] = -1;
        quiet_link(comm, inter, 1, buf, tag, q);
        t[6] = q[0];
        t[8] = q[1];
    } else if (intra == rank || inter == rank) {
        quiet_link(comm, 0, 0, buf, tag, q);
    }
}

/* coll_hanx_model_cache's file in path ("" where none: "none", or no
 * default place); 1 where there is one */
static int cache_path(char *path, size_t size)
{
    const char *c = mca_coll_hanx_component.model_cache;
    path[0] = '\0';
    if (NULL != c && 0 == strcmp(c, "none")) return 0;
    if (NULL != c && '\0' != c[0]) {
        if (strlen(c) >= size) return 0;
        strcpy(path, c);
        return 1;
    }
    return 0 == collx_machine_cache_default(path, size);
}

/* The key of comm's nodes (collx_machine_key; all ranks call it): the
 * sum of the nodes' terms (collx_machine_node_term: each node's leader's
 * host and the node's size), as every rank has it, measured by this
 * measurement (MEASURE_VERSION: a new one when what it measures, or how,
 * changes) under this Open MPI release. */
static uint64_t nodes_key(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm, int *rc)
{
    char host[256] = "";
    (void)gethostname(host, sizeof(host) - 1);
    const int rank = ompi_comm_rank(comm), leader = m->rank_at[m->node_first[m->my_node]];
    uint64_t term = rank == leader ? collx_machine_node_term(collx_host_digest(host),
                                                             m->node_size[m->my_node])
                                   : 0;
    *rc = comm->c_coll->coll_allreduce(MPI_IN_PLACE, &term, 1, MPI_UINT64_T, MPI_SUM, comm,
                                       comm->c_coll->coll_allreduce_module);
    char by[64];
    snprintf(by, sizeof(by), "hanx measurement %d, Open MPI %d.%d.%d", MEASURE_VERSION,
             OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION);
    return collx_machine_key(term, m->nnodes, collx_digest(by, strlen(by)));
}

/* Rank 0 with the cache in path: with `find`, looks for the nodes'
 * machine (into t[0..MEASURE_VALUES), t[MEASURE_KEPT] 2 where found);
 * else keeps the measured t there (t[MEASURE_KEPT] 1 where written; where
 * it cannot, says why at verbose 1). */
static void keep_or_find(struct ompi_communicator_t *comm, const char *path, uint64_t key,
                         int find, const mca_coll_hanx_module_t *m, double *t)
{
    if (find) {
        if (collx_machine_cache_find(path, key, t, MEASURE_VALUES)) t[MEASURE_KEPT] = 2;
        return;
    }
    char shape[64], err[512];
    snprintf(shape, sizeof(shape), "%dx%d", m->nnodes, m->max_node_size);
    if (0 == collx_machine_cache_keep(path, key, shape, t, MEASURE_VALUES, err, sizeof(err))) {
        t[MEASURE_KEPT] = 1;
        return;
    }
    HANX_LOG(1, "coll:hanx: %s: could not keep the measured machine (%s): its reductions "
                "choose without it (coll_hanx_model_cache)", comm->c_name, err);
}

static int measure_machine(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm)
{
    const int rank = ompi_comm_rank(comm);
    const int intra = m->node_size[0] > 1 ? m->rank_at[m->node_first[0] + 1] : -1;
    const int inter = m->rank_at[m->node_first[1]];
    /* t[0..1]: the link within a node (measure_link), t[2..3] between
     * nodes; t[4]: seconds per byte of a sum; t[5..6]: the two links'
     * quiet latencies, t[7..8] their quiet streams (measure_quiet); -1:
     * not measured */
    double t[MEASURE_RESULTS];
    long long ids[2];
    pthread_mutex_lock(&last_lock); /* (the last result and its digest, together) */
    memcpy(t, last_t, sizeof(t));
    ids[0] = last_id;
    pthread_mutex_unlock(&last_lock);
    ids[1] = -ids[0];
    int rc = comm->c_coll->coll_allreduce(MPI_IN_PLACE, ids, 2, MPI_LONG_LONG, MPI_MIN, comm,
                                          comm->c_coll->coll_allreduce_module);
    if (OMPI_SUCCESS != rc) return rc;
    const int reuse = 0 != ids[0] && ids[0] == -ids[1]; /* all hold one and the same */
    char path[4096] = "";
    uint64_t key = 0;
    int found = 0;
    if (!reuse) {
        for (int i = 0; i < MEASURE_RESULTS; ++i) t[i] = -1;
        t[MEASURE_KEPT] = 0;
        key = nodes_key(m, comm, &rc);
        if (OMPI_SUCCESS != rc) return rc;
        if (!cache_path(path, sizeof(path))) path[0] = '\0';
        if (0 == rank && '\0' != path[0]) keep_or_find(comm, path, key, 1, m, t);
        rc = comm->c_coll->coll_bcast(t, MEASURE_RESULTS, MPI_DOUBLE, 0, comm,
                                      comm->c_coll->coll_bcast_module);
        if (OMPI_SUCCESS != rc) return rc;
        found = 2 == t[MEASURE_KEPT];
    }
    if (!reuse && !found) {
        const int tag = ompi_coll_base_nbc_reserve_tags(comm, 1);
        measure(comm, rank, intra, inter, tag, t);
        rc = comm->c_coll->coll_barrier(comm, comm->c_coll->coll_barrier_module);
        if (OMPI_SUCCESS != rc) return rc;
        measure_quiet(comm, rank, intra, inter, tag, t);
        if (0 == rank && '\0' != path[0]) keep_or_find(comm, path, key, 0, m, t);
        ompi_request_t *req = MPI_REQUEST_NULL;
        rc = comm->c_coll->coll_ibcast(t, MEASURE_RESULTS, MPI_DOUBLE, 0, comm, &req,
                                       comm->c_coll->coll_ibcast_module);
        if (OMPI_SUCCESS == rc) rc = quiet_wait(&req);
        if (OMPI_SUCCESS != rc) return rc;
    }
    if (!reuse) {
        pthread_mutex_lock(&last_lock);
        memcpy(last_t, t, sizeof(t));
        last_id = digest(t);
        pthread_mutex_unlock(&last_lock);
    }
    if (!reuse && !found)
        HANX_LOG(1, "coll:hanx: %s: latencies with the other ranks asleep: within a node %.2f us, "
                    "between nodes %.2f us (busy: %.2f, %.2f us)",
                 comm->c_name, t[5] * 1e6, t[6] * 1e6, t[0] * 1e6, t[2] * 1e6);
    const int *p = mca_coll_hanx_component.model;
    collx_machine_t *mc = &m->machine;
    *mc = (collx_machine_t){p[0] * 1e-3, p[1] * 1e-6, p[2] * 1e-3, p[3] * 1e-6, p[4] * 1e-6};
    if (t[0] > 0 && t[1] > 0) link_of(t, t[5], &mc->intra_alpha_us, &mc->intra_beta_us);
    if (t[2] > 0 && t[3] > 0) link_of(t + 2, t[6], &mc->inter_alpha_us, &mc->inter_beta_us);
    if (t[4] > 0) mc->gamma_us = t[4] * 1e6;
    /* the links' time per byte with the other ranks asleep: their ratio
     * says whether the links between nodes are slow (collx_links_slow) */
    const double quiet[2] = {stream_beta(t[7], t[5]), stream_beta(t[8], t[6])};
    mc->links_ratio = quiet[0] > 0 && quiet[1] > 0 ? quiet[1] / quiet[0] : 0;
    m->measured = 1;
    m->machine_kept = t[MEASURE_KEPT] > 0;
    const char *how = reuse                  ? (m->machine_kept ? "as measured before (kept)"
                                                                : "as measured before")
                      : 2 == t[MEASURE_KEPT] ? "found in "
                      : 1 == t[MEASURE_KEPT] ? "measured, kept in "
                                             : "measured";
    HANX_LOG(1, "coll:hanx: %s: machine %s%s: within a node %.2f us + %.4f ns/B, between "
                "nodes %.2f us + %.4f ns/B, a sum %.4f ns/B; asleep: within a node %.4f ns/B, "
                "between nodes %.4f ns/B (links %s)",
             comm->c_name, how, reuse || 0 == t[MEASURE_KEPT] ? "" : path, mc->intra_alpha_us,
             mc->intra_beta_us * 1e3, mc->inter_alpha_us, mc->inter_beta_us * 1e3,
             mc->gamma_us * 1e3, quiet[0] * 1e3, quiet[1] * 1e3,
             collx_links_slow(mc) ? "slow" : "fast");
    return OMPI_SUCCESS;
}

/* The first view, with the MCA preferences, and the tables. */
/* View v's rail (split rails, bcast and reduce on the root's rail), made
 * with the view where the nodes are of one size, collectively over comm:
 * never later, so that no call (a non-blocking one must not make it)
 * switches algorithm, and so its bits, on whether some earlier call made
 * it.  Where it cannot be made it stays NULL: the levels serve. */
static void make_rail(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm, hanx_view_t *v)
{
    /* my place in my node is my rail; rails keep comm's order */
    const int rank = ompi_comm_rank(comm);
    opal_info_t info;
    OBJ_CONSTRUCT(&info, opal_info_t);
    opal_info_set(&info, "ompi_comm_coll_preference", v->up);
    m->hier_state = HIER_BUILDING; /* comm's own collectives: the previous module */
    int rc = ompi_comm_split_with_info(comm, m->low_rank_of[rank], rank, &info, &v->rail, false);
    m->hier_state = HIER_READY;
    OBJ_DESTRUCT(&info);
    if (OMPI_SUCCESS != rc || MPI_COMM_NULL == (MPI_Comm)v->rail) {
        v->rail = NULL;
        HANX_LOG(1, "coll:hanx: %s: could not make the rail communicator (error %d): split-rail "
                    "calls run on the levels", comm->c_name, rc);
        return;
    }
    HANX_LOG(1, "coll:hanx: %s: rail %d of %d ranks (up \"%s\")", comm->c_name,
             m->low_rank_of[rank], ompi_comm_size(v->rail), v->up);
}

/* m->flat (mca_coll_hanx.h), collectively over comm, with view v's up
 * preference: made where the measured links between nodes are fast, kept
 * only where its bcast, allreduce, allgather or allgatherv is not the
 * previous module's on every rank (else the previous module already is
 * Open MPI's flat one: tuned, as on Open MPI 4.1 by default). */
static void make_flat(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm, hanx_view_t *v)
{
    struct ompi_communicator_t *f = NULL;
    opal_info_t info;
    OBJ_CONSTRUCT(&info, opal_info_t);
    opal_info_set(&info, "ompi_comm_coll_preference", v->up);
    m->hier_state = HIER_BUILDING; /* comm's own collectives: the previous module */
    int rc = ompi_comm_dup_with_info(comm, &info, &f);
    OBJ_DESTRUCT(&info);
    const int made = OMPI_SUCCESS == rc && NULL != f && MPI_COMM_NULL != (MPI_Comm)f;
    int other = made && (f->c_coll->coll_bcast != m->prev.bcast ||
                         f->c_coll->coll_allreduce != m->prev.allreduce ||
                         f->c_coll->coll_allgather != m->prev.allgather ||
                         f->c_coll->coll_allgatherv != m->prev.allgatherv);
    /* (every rank joins, made or not) */
    int keep = other;
    rc = comm->c_coll->coll_allreduce(&other, &keep, 1, MPI_INT, MPI_MIN, comm,
                                      comm->c_coll->coll_allreduce_module);
    m->hier_state = HIER_READY;
    if (OMPI_SUCCESS != rc) keep = 0;
    if (!keep) {
        if (made) ompi_comm_free(&f);
        if (!made)
            HANX_LOG(1, "coll:hanx: %s: could not duplicate it for Open MPI's flat modules "
                        "(error %d): fast links' hand-overs run on the previous module",
                     comm->c_name, rc);
        return;
    }
    m->flat = f;
    HANX_LOG(1, "coll:hanx: %s: the previous module is not Open MPI's flat one: fast links' "
                "hand-overs run on a duplicate with \"%s\"", comm->c_name, v->up);
}

struct ompi_communicator_t *mca_coll_hanx_flat_previous(const mca_coll_hanx_module_t *m,
                                                        const hanx_choice_t *ch)
{
    if (!ch->flat_previous || NULL == m->flat) return NULL;
    HANX_LOG(10, "coll:hanx: the previous module's call on %s, Open MPI's flat modules",
             m->flat->c_name);
    return m->flat;
}

static int build_hierarchy(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm)
{
    mca_coll_hanx_component_t *c = &mca_coll_hanx_component;
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    struct ompi_communicator_t *sock = NULL;
    hanx_view_t *v = &m->view[0];
    opal_info_t info;
    int *all = NULL;
    int rc;

    char low[512], up[512]; /* (an MPI_T write skips the registration's check) */
    level_preference(c->low_preference, low, sizeof(low));
    level_preference(c->up_preference, up, sizeof(up));
    m->flat_default = collx_glue_tree_choice(*c->flat_text, "none");
    if (m->flat_default < -1) {
        HANX_LOG(1, "coll:hanx: %s: coll_hanx_flat_algorithm \"%s\" names no collx tree: none",
                 comm->c_name, *c->flat_text);
        m->flat_default = -1;
    }
    m->hier_state = HIER_BUILDING;
    memset(v, 0, sizeof(*v));
    m->nviews = 1; /* (freed with the others if anything fails) */
    m->cur = v;
    OBJ_CONSTRUCT(&info, opal_info_t);
    opal_info_set(&info, "ompi_comm_coll_preference", low);
    rc = split_node(comm, &info, &v->node);
    if (OMPI_SUCCESS != rc) goto out;
    rc = split_socket(v->node, &info, &sock);
    if (OMPI_SUCCESS != rc) goto out;
    /* a socket level only where some node really has several sockets;
     * every rank must agree on the number of levels */
    int several = NULL != sock && ompi_comm_size(sock) < ompi_comm_size(v->node), any = 0;
    rc = comm->c_coll->coll_allreduce(&several, &any, 1, MPI_INT, MPI_MAX, comm,
                                      comm->c_coll->coll_allreduce_module);
    if (OMPI_SUCCESS != rc) goto out;
    if (!any && sock) {
        ompi_comm_free(&sock); /* (leaves MPI_COMM_NULL behind, not NULL) */
        sock = NULL;
    }
    m->nlevels = any ? 3 : 2;
    rc = finish_view(m, comm, v, sock, &info, up);
    sock = NULL; /* the view's now */
    if (OMPI_SUCCESS != rc) goto out;

    int mine[3] = {comm_rank_of(v->lvl[0], 0, comm), comm_rank_of(v->node, 0, comm),
                   ompi_comm_rank(v->node)};
    all = malloc(3 * (size_t)size * sizeof(int));
    if (NULL == all) {
        rc = OMPI_ERR_OUT_OF_RESOURCE; /* (every rank must still join the allgather) */
        int dummy[3];
        comm->c_coll->coll_allgather(mine, 3, MPI_INT, dummy, 0, MPI_INT, comm,
                                     comm->c_coll->coll_allgather_module);
        goto out;
    }
    rc = comm->c_coll->coll_allgather(mine, 3, MPI_INT, all, 3, MPI_INT, comm,
                                      comm->c_coll->coll_allgather_module);
    if (OMPI_SUCCESS != rc) goto out;
    rc = fill_tables(m, all, size);
    if (OMPI_SUCCESS != rc) goto out;
    m->my_node = m->node_of[rank];
    if (m->nnodes < 2 || m->nnodes == size) {
        HANX_LOG(1, "coll:hanx: %s spans %d node(s) with %d ranks: nothing to gain from a "
                    "hierarchy; using the previous modules",
                 comm->c_name, m->nnodes, size);
        free_subcomms(m);
        m->hier_state = HIER_FLAT;
    } else {
        v->low = strdup(low);
        v->up = strdup(up);
        /* (every rank joins the measurement: its broadcast ends it) */
        if (c->model_measure) rc = measure_machine(m, comm);
        if (OMPI_SUCCESS == rc) rc = v->low && v->up ? live_add(m) : OMPI_ERR_OUT_OF_RESOURCE;
        if (OMPI_SUCCESS == rc) {
            HANX_LOG(1, "coll:hanx: %s: %d levels, %d nodes, %d ranks on my node (node %d)%s",
                     comm->c_name, m->nlevels, m->nnodes, ompi_comm_size(v->node), m->my_node,
                     m->blocks ? "" : ", ranks not in blocks by node");
            m->hier_state = HIER_READY;
            if (m->split_parts > 0) make_rail(m, comm, v);
            if (m->measured && !collx_links_slow(&m->machine)) make_flat(m, comm, v);
        }
    }
out:
    free(all);
    if (sock) ompi_comm_free(&sock);
    OBJ_DESTRUCT(&info);
    if (HIER_BUILDING == m->hier_state) {
        HANX_LOG(1, "coll:hanx: could not build the hierarchy of %s (error %d); using the "
                    "previous modules", comm->c_name, rc);
        free_subcomms(m);
        m->hier_state = HIER_FLAT;
    }
    return m->hier_state;
}

/* Another view of the hierarchy: the same groups split again with other
 * submodule preferences.  Collective over comm (every rank asks for the
 * same view at the same call: the rule is the same everywhere); the
 * number of levels is the first view's. */
static int make_view(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm, hanx_view_t *v)
{
    struct ompi_communicator_t *sock = NULL;
    opal_info_t info;
    OBJ_CONSTRUCT(&info, opal_info_t);
    opal_info_set(&info, "ompi_comm_coll_preference", v->low);
    int rc = split_node(comm, &info, &v->node);
    if (OMPI_SUCCESS == rc && 3 == m->nlevels) rc = split_socket(v->node, &info, &sock);
    if (OMPI_SUCCESS == rc) rc = finish_view(m, comm, v, sock, &info, v->up);
    OBJ_DESTRUCT(&info);
    return rc;
}

/* Point m->cur at the view of these preferences (NULL: the MCA
 * parameters'), making it at its first use -- unless !may_create (a
 * non-blocking call, which must not wait for the other ranks): then a view
 * not made yet is served by the first. */
static hanx_view_t *use_view(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm,
                             const char *low, const char *up, int may_create)
{
    char want_low[512], want_up[512];
    hanx_view_t *v = &m->view[0];
    if (NULL == low && NULL == up) {
        m->cur = v;
        return v;
    }
    level_preference(low ? low : m->view[0].low, want_low, sizeof(want_low));
    level_preference(up ? up : m->view[0].up, want_up, sizeof(want_up));
    int i = 0;
    while (i < m->nviews && (strcmp(m->view[i].low, want_low) || strcmp(m->view[i].up, want_up))) ++i;
    if (i < m->nviews) {
        if (!m->view[i].failed) v = &m->view[i];
    } else if (!may_create) {
        HANX_LOG(10, "coll:hanx: %s: low \"%s\", up \"%s\" not made yet: a non-blocking call "
                     "runs on the first sub-communicators", comm->c_name, want_low, want_up);
    } else if (m->nviews == HANX_MAX_VIEWS) {
        if (!m->views_full_said++)
            HANX_LOG(1, "coll:hanx: %s: already %d sets of sub-communicators; low \"%s\", up "
                        "\"%s\" (and any further ones) served by the first "
                        "(coll_hanx_low/up_preference)",
                     comm->c_name, HANX_MAX_VIEWS, want_low, want_up);
    } else {
        hanx_view_t *n = &m->view[m->nviews];
        memset(n, 0, sizeof(*n));
        n->low = strdup(want_low);
        n->up = strdup(want_up);
        int rc = OMPI_ERR_OUT_OF_RESOURCE;
        if (NULL == n->low || NULL == n->up) {
            /* out of memory: the first view (the same everywhere only by luck) */
            free(n->low);
            free(n->up);
            n->low = n->up = NULL;
        } else {
            ++m->nviews;
            m->hier_state = HIER_BUILDING; /* comm's own collectives: the previous module */
            rc = make_view(m, comm, n);
            m->hier_state = HIER_READY;
        }
        if (NULL == n->low) {
            HANX_LOG(1, "coll:hanx: %s: out of memory for low \"%s\", up \"%s\"; the first "
                        "sub-communicators serve", comm->c_name, want_low, want_up);
        } else if (OMPI_SUCCESS != rc) {
            free_comms(n->lvl, &n->node);
            n->failed = 1;
            HANX_LOG(1, "coll:hanx: %s: could not make sub-communicators with low \"%s\", up "
                        "\"%s\" (error %d); the first ones serve instead",
                     comm->c_name, want_low, want_up, rc);
        } else {
            HANX_LOG(1, "coll:hanx: %s: sub-communicators with low \"%s\", up \"%s\" (set %d)",
                     comm->c_name, want_low, want_up, m->nviews);
            v = n;
            if (m->split_parts > 0) make_rail(m, comm, v);
        }
    }
    m->cur = v;
    return v;
}

int mca_coll_hanx_split_ok(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm,
                           const hanx_choice_t *ch, struct ompi_datatype_t *dtype,
                           const char *form, const char *collective)
{
    if (NULL == ch->algorithm || strcmp(ch->algorithm, "split")) return 0;
    const char *why = 0 == m->split_parts ? "nodes of different sizes (or one rank each)"
                      : mca_coll_hanx_scratch_unsafe(dtype) ? "datatype with true lower bound != 0"
                      : NULL == m->cur->rail ? "no rail communicator"
                                             : NULL;
    if (why) HANX_LOG(10, "coll:hanx: %s%s on %s: split rails cannot run (%s): the levels",
                      form, collective, comm->c_name, why);
    return NULL == why;
}

int mca_coll_hanx_ready(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm)
{
    if (HIER_UNBUILT == m->hier_state) build_hierarchy(m, comm);
    if (HIER_READY != m->hier_state) return 0;
    /* the sub-communicators' collectives start in call order */
    mca_coll_hanx_nb_drain(m);
    return 1;
}

/* The tuning's choice for this call: the view to run on, or NULL for the
 * previous module (said at verbose 10). */
static hanx_view_t *choose_view(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm,
                                const char *form, int coll, size_t bytes, hanx_choice_t *ch,
                                int may_create)
{
    mca_coll_hanx_choose(m, coll, bytes, 'i' == form[0], ch);
    if (NULL == ch->algorithm || strcmp(ch->algorithm, "previous"))
        return use_view(m, comm, ch->low, ch->up, may_create);
    HANX_LOG(10, "coll:hanx: %s%s of %zu bytes on %s: previous module (tuning)", form,
             collx_coll_name(coll), bytes, comm->c_name);
    return NULL;
}

int mca_coll_hanx_use(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm, int coll,
                      size_t bytes, hanx_choice_t *choice)
{
    hanx_choice_t ch;
    if (choice) choice->flat_previous = 0;
    if (!mca_coll_hanx_ready(m, comm)) return 0;
    const int use = NULL != choose_view(m, comm, "", coll, bytes, &ch, 1);
    if (choice) *choice = ch;
    return use;
}

hanx_view_t *mca_coll_hanx_use_nb(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm,
                                  int coll, size_t bytes, hanx_choice_t *choice)
{
    if (HIER_READY != m->hier_state) {
        /* building it would wait for the other ranks inside a call that
         * must not: the previous module serves until a blocking collective
         * has built it */
        HANX_LOG(10, "coll:hanx: i%s on %s: hierarchy not built yet (a blocking collective "
                     "builds it): previous module", collx_coll_name(coll), comm->c_name);
        return NULL;
    }
    return choose_view(m, comm, "i", coll, bytes, choice, 0);
}

int mca_coll_hanx_order_ok(mca_coll_hanx_module_t *m, struct ompi_op_t *op)
{
    int commute = 0;
    PMPI_Op_commutative((MPI_Op)op, &commute);
    return commute || m->blocks;
}

void mca_coll_hanx_copy(struct ompi_datatype_t *dtype, size_t count, void *to, const void *from)
{
    if (count && to != from)
        ompi_datatype_copy_content_same_ddt(dtype, count, (char *)to, (char *)from);
}

int mca_coll_hanx_scratch_unsafe(struct ompi_datatype_t *dtype)
{
    ptrdiff_t tlb, textent;
    ompi_datatype_get_true_extent(dtype, &tlb, &textent);
    return tlb != 0;
}

size_t mca_coll_hanx_bytes(struct ompi_datatype_t *dtype, size_t count)
{
    size_t size = 0;
    ompi_datatype_type_size(dtype, &size);
    return size * count;
}

ptrdiff_t mca_coll_hanx_extent(struct ompi_datatype_t *dtype)
{
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    return extent;
}

char *mca_coll_hanx_elem(const void *buf, struct ompi_datatype_t *dtype, size_t i)
{
    return (char *)buf + (ptrdiff_t)i * mca_coll_hanx_extent(dtype);
}

char *mca_coll_hanx_temp(struct ompi_datatype_t *dtype, size_t count, char **to_free)
{
    ptrdiff_t lb, extent, tlb, textent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &tlb, &textent);
    size_t bytes = count ? (size_t)textent + (count - 1) * (size_t)extent : 0;
    *to_free = malloc(bytes ? bytes : 1);
    return *to_free ? *to_free - tlb : NULL;
}
