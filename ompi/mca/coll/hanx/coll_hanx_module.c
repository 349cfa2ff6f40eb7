#include "ompi_config.h"

#include <pthread.h>
#include <stdlib.h>

#include "coll_hanx.h"
#include "../collx_glue/collx_glue.h"
#include "ompi/group/group.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "opal/util/info.h"
#include "opal/util/output.h"

#define HANX_LOG(level, ...)                                                               \
    do {                                                                                   \
        if (mca_coll_hanx_component.verbose >= (level))                                    \
            opal_output_verbose((level), mca_coll_hanx_component.output, __VA_ARGS__);     \
    } while (0)

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

static void free_subcomms(mca_coll_hanx_module_t *m)
{
    if (m->low) ompi_comm_free(&m->low);
    if (m->up) ompi_comm_free(&m->up);
    m->low = m->up = NULL;
    free(m->node_of);
    free(m->leader_of_node);
    free(m->low_rank_of);
    m->node_of = m->leader_of_node = m->low_rank_of = NULL;
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
    m->low = m->up = NULL;
    m->node_of = m->leader_of_node = m->low_rank_of = NULL;
    m->nnodes = 0;
    m->my_node = -1;
    m->blocks = 0;
}

static void hanx_module_destruct(mca_coll_hanx_module_t *m)
{
    live_remove(m);
    free_subcomms(m);
    collx_glue_release_prev(&m->prev);
}

OBJ_CLASS_INSTANCE(mca_coll_hanx_module_t, mca_coll_base_module_t, hanx_module_construct,
                   hanx_module_destruct);

static int hanx_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    COLLX_SAVE_PREV(m->prev, comm, bcast);
    COLLX_SAVE_PREV(m->prev, comm, reduce);
    COLLX_SAVE_PREV(m->prev, comm, allreduce);
    HANX_LOG(1, "coll:hanx: enabled on %s (cid %d, size %d)", comm->c_name,
             (int)ompi_comm_get_cid(comm), ompi_comm_size(comm));
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
    return &m->super;
}

/* --------------------------------------------------------------------------
 * Hierarchy: built at the first collective that needs it (creating
 * communicators inside module enable hangs on dup'ed communicators).  While
 * it is being built, the collectives Open MPI runs on `comm` to create the
 * sub-communicators go to the previous module.
 */
static int build_hierarchy(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm)
{
    mca_coll_hanx_component_t *c = &mca_coll_hanx_component;
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    opal_info_t info;
    int rc;

    m->hier_state = HIER_BUILDING;
    OBJ_CONSTRUCT(&info, opal_info_t);
    opal_info_set(&info, "ompi_comm_coll_preference", c->low_preference);
    if (c->ranks_per_node > 0)
        rc = ompi_comm_split_with_info(comm, rank / c->ranks_per_node, rank, &info, &m->low, false);
    else
        rc = ompi_comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, &info, &m->low);
    if (OMPI_SUCCESS != rc) goto out;

    const int low_rank = ompi_comm_rank(m->low);
    opal_info_set(&info, "ompi_comm_coll_preference", c->up_preference);
    rc = ompi_comm_split_with_info(comm, 0 == low_rank ? 0 : MPI_UNDEFINED, rank, &info, &m->up,
                                   false);
    if (OMPI_SUCCESS != rc) goto out;
    if (MPI_COMM_NULL == (MPI_Comm)m->up) m->up = NULL; /* not a leader */

    /* Who leads each rank's node, and where each rank sits in its node. */
    int zero = 0, leader = -1;
    rc = ompi_group_translate_ranks(m->low->c_local_group, 1, &zero, comm->c_local_group, &leader);
    if (OMPI_SUCCESS != rc) goto out;
    int mine[2] = {leader, low_rank};
    int *all = malloc(2 * (size_t)size * sizeof(int));
    m->node_of = malloc((size_t)size * sizeof(int));
    m->low_rank_of = malloc((size_t)size * sizeof(int));
    m->leader_of_node = malloc((size_t)size * sizeof(int));
    if (!all || !m->node_of || !m->low_rank_of || !m->leader_of_node) {
        free(all);
        rc = OMPI_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    rc = comm->c_coll->coll_allgather(mine, 2, MPI_INT, all, 2, MPI_INT, comm,
                                      comm->c_coll->coll_allgather_module);
    if (OMPI_SUCCESS != rc) {
        free(all);
        goto out;
    }
    /* Leaders are the lowest rank of their node, so numbering nodes by
     * increasing leader rank matches the up communicator's rank order. */
    m->nnodes = 0;
    for (int r = 0; r < size; ++r) {
        if (all[2 * r] == r) m->leader_of_node[m->nnodes++] = r;
    }
    for (int r = 0; r < size; ++r) {
        m->low_rank_of[r] = all[2 * r + 1];
        for (int n = 0; n < m->nnodes; ++n)
            if (m->leader_of_node[n] == all[2 * r]) m->node_of[r] = n;
    }
    free(all);
    m->my_node = m->node_of[rank];
    /* nodes are numbered by their lowest rank: the layout is by blocks
     * exactly when node numbers never decrease along the ranks */
    m->blocks = 1;
    for (int r = 1; r < size; ++r)
        if (m->node_of[r] < m->node_of[r - 1]) m->blocks = 0;
    if (m->nnodes < 2 || m->nnodes == size) {
        HANX_LOG(1, "coll:hanx: %s spans %d node(s) with %d ranks: nothing to gain from a "
                    "hierarchy; using the previous modules",
                 comm->c_name, m->nnodes, size);
        free_subcomms(m);
        m->hier_state = HIER_FLAT;
    } else {
        rc = live_add(m);
        if (OMPI_SUCCESS == rc) {
            HANX_LOG(1, "coll:hanx: %s: %d nodes, %d ranks on my node (node %d)", comm->c_name,
                     m->nnodes, ompi_comm_size(m->low), m->my_node);
            m->hier_state = HIER_READY;
        }
    }
out:
    OBJ_DESTRUCT(&info);
    if (HIER_BUILDING == m->hier_state) {
        HANX_LOG(1, "coll:hanx: could not build the hierarchy of %s (error %d); using the "
                    "previous modules", comm->c_name, rc);
        free_subcomms(m);
        m->hier_state = HIER_FLAT;
    }
    return m->hier_state;
}

/* 1 when the hierarchy can be used for this call. */
static int hier_ready(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm)
{
    if (HIER_UNBUILT == m->hier_state) build_hierarchy(m, comm);
    return HIER_READY == m->hier_state;
}

/* 1 when a reduction with `op` can go through the hierarchy.  A
 * non-commutative op keeps rank order when every node holds a contiguous
 * block of ranks: each node reduces its block in order (the node
 * communicator keeps the parent's order), and the leaders, ordered like
 * their blocks, combine the blocks in order -- provided the modules of each
 * level keep order for non-commutative ops, as Open MPI's (and adaptx)
 * do.  Other layouts (round-robin) go to the previous module. */
static int reduction_ready(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm,
                           struct ompi_op_t *op, const char *what)
{
    int commute = 0;
    PMPI_Op_commutative((MPI_Op)op, &commute);
    if (!hier_ready(m, comm)) return 0;
    if (commute || m->blocks) return 1;
    HANX_LOG(1, "coll:hanx: %s with a non-commutative op on %s, whose nodes do not hold "
                "contiguous ranks: previous module", what, comm->c_name);
    return 0;
}

static char *temp_buffer(struct ompi_datatype_t *dtype, int count, char **to_free)
{
    ptrdiff_t lb, extent, tlb, textent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &tlb, &textent);
    size_t bytes = (size_t)textent + (count > 0 ? (size_t)(count - 1) * (size_t)extent : 0);
    *to_free = malloc(bytes ? bytes : 1);
    return *to_free ? *to_free - tlb : NULL;
}

#define LOW_CALL(m, api, ...) \
    (m)->low->c_coll->coll_##api(__VA_ARGS__, (m)->low, (m)->low->c_coll->coll_##api##_module)
#define UP_CALL(m, api, ...) \
    (m)->up->c_coll->coll_##api(__VA_ARGS__, (m)->up, (m)->up->c_coll->coll_##api##_module)

/* ------------------------------------------------------------ collectives */

int mca_coll_hanx_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    if (!hier_ready(m, comm))
        return m->prev.bcast(buf, count, dtype, root, comm, m->prev.bcast_module);
    HANX_LOG(10, "coll:hanx: bcast count %d root %d on %s", count, root, comm->c_name);
    const int root_node = m->node_of[root];
    int rc = OMPI_SUCCESS;
    /* 1: the root's node gets the data from the root, its leader included */
    if (m->my_node == root_node && ompi_comm_size(m->low) > 1)
        rc = LOW_CALL(m, bcast, buf, count, dtype, m->low_rank_of[root]);
    /* 2: leaders pass it between nodes */
    if (OMPI_SUCCESS == rc && NULL != m->up) rc = UP_CALL(m, bcast, buf, count, dtype, root_node);
    /* 3: every other node fans it out from its leader */
    if (OMPI_SUCCESS == rc && m->my_node != root_node && ompi_comm_size(m->low) > 1)
        rc = LOW_CALL(m, bcast, buf, count, dtype, 0);
    return rc;
}

int mca_coll_hanx_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    if (!reduction_ready(m, comm, op, "reduce"))
        return m->prev.reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev.reduce_module);
    HANX_LOG(10, "coll:hanx: reduce count %d root %d on %s", count, root, comm->c_name);

    const int rank = ompi_comm_rank(comm);
    const int root_node = m->node_of[root];
    const int root_leader = m->leader_of_node[root_node];
    const int i_am_root = rank == root, i_lead = NULL != m->up;
    /* my contribution, wherever MPI_IN_PLACE left it */
    const void *mine = (i_am_root && MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    char *to_free = NULL, *acc = NULL;
    int rc = OMPI_SUCCESS;

    if (i_lead) {
        acc = i_am_root ? rbuf : temp_buffer(dtype, count, &to_free);
        if (NULL == acc) return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* 1: reduce within each node to its leader */
    const void *low_send = (i_lead && mine == acc) ? MPI_IN_PLACE : mine;
    rc = LOW_CALL(m, reduce, low_send, acc, count, dtype, op, 0);
    /* 2: leaders reduce across nodes to the root's node leader */
    if (OMPI_SUCCESS == rc && i_lead) {
        const int at_root_node = m->my_node == root_node;
        rc = UP_CALL(m, reduce, at_root_node ? MPI_IN_PLACE : acc, acc, count, dtype, op,
                     root_node);
    }
    /* 3: if the root does not lead its node, its leader hands it over */
    if (OMPI_SUCCESS == rc && root != root_leader) {
        if (rank == root_leader)
            rc = MCA_PML_CALL(send(acc, count, dtype, root, MCA_COLL_BASE_TAG_REDUCE,
                                   MCA_PML_BASE_SEND_STANDARD, comm));
        else if (i_am_root)
            rc = MCA_PML_CALL(recv(rbuf, count, dtype, root_leader, MCA_COLL_BASE_TAG_REDUCE, comm,
                                   MPI_STATUS_IGNORE));
    }
    free(to_free);
    return rc;
}

/* Open MPI 4.1.4's ring allreduce (what tuned picks for large messages)
 * receives into scratch buffers without shifting them by the datatype's
 * true lower bound, so a datatype whose data starts past its origin
 * (true_lb > 0) overflows them and corrupts the heap.  Such datatypes go
 * through reduce + bcast of the same modules instead. */
static int ring_allreduce_unsafe(struct ompi_datatype_t *dtype)
{
    ptrdiff_t tlb, textent;
    ompi_datatype_get_true_extent(dtype, &tlb, &textent);
    return tlb != 0;
}

static int allreduce_as_reduce_bcast(const void *sbuf, void *rbuf, int count,
                                     struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                     struct ompi_communicator_t *comm,
                                     mca_coll_base_module_reduce_fn_t reduce,
                                     mca_coll_base_module_t *reduce_module,
                                     mca_coll_base_module_bcast_fn_t bcast,
                                     mca_coll_base_module_t *bcast_module)
{
    const int root = ompi_comm_rank(comm) == 0;
    const void *send = sbuf;
    if (MPI_IN_PLACE == sbuf && !root) send = rbuf; /* IN_PLACE is the root's privilege */
    int rc = reduce(send, rbuf, count, dtype, op, 0, comm, reduce_module);
    if (OMPI_SUCCESS == rc) rc = bcast(rbuf, count, dtype, 0, comm, bcast_module);
    return rc;
}

int mca_coll_hanx_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    /* while building the hierarchy, Open MPI's own allreduces on comm land
     * here: hand them to the previous module */
    if (HIER_BUILDING == m->hier_state || !reduction_ready(m, comm, op, "allreduce")) {
        if (HIER_BUILDING != m->hier_state && ring_allreduce_unsafe(dtype))
            return allreduce_as_reduce_bcast(sbuf, rbuf, count, dtype, op, comm, m->prev.reduce,
                                             m->prev.reduce_module, m->prev.bcast,
                                             m->prev.bcast_module);
        return m->prev.allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev.allreduce_module);
    }
    HANX_LOG(10, "coll:hanx: allreduce count %d on %s", count, comm->c_name);

    const int i_lead = NULL != m->up;
    int rc;
    /* 1: node reduce into the leader's rbuf; 2: leaders allreduce in place;
     * 3: node bcast of the result */
    if (i_lead)
        rc = LOW_CALL(m, reduce, MPI_IN_PLACE == sbuf ? MPI_IN_PLACE : sbuf, rbuf, count, dtype,
                      op, 0);
    else
        rc = LOW_CALL(m, reduce, MPI_IN_PLACE == sbuf ? rbuf : sbuf, NULL, count, dtype, op, 0);
    if (OMPI_SUCCESS == rc && i_lead) {
        if (ring_allreduce_unsafe(dtype))
            rc = allreduce_as_reduce_bcast(MPI_IN_PLACE, rbuf, count, dtype, op, m->up,
                                           m->up->c_coll->coll_reduce,
                                           m->up->c_coll->coll_reduce_module,
                                           m->up->c_coll->coll_bcast,
                                           m->up->c_coll->coll_bcast_module);
        else
            rc = UP_CALL(m, allreduce, MPI_IN_PLACE, rbuf, count, dtype, op);
    }
    if (OMPI_SUCCESS == rc) rc = LOW_CALL(m, bcast, rbuf, count, dtype, 0);
    return rc;
}
