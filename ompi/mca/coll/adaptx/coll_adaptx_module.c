#include "ompi_config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "coll_adaptx.h"
#include "../collx_glue/collx_glue.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

#define ADAPTX_LOG(level, ...)                                                              \
    do {                                                                                   \
        if (mca_coll_adaptx_component.verbose >= (level))                                  \
            opal_output_verbose((level), mca_coll_adaptx_component.output, __VA_ARGS__);   \
    } while (0)

static void adaptx_module_construct(mca_coll_adaptx_module_t *m)
{
    memset(&m->prev, 0, sizeof(m->prev));
    m->node_of = NULL;
}

static void adaptx_module_destruct(mca_coll_adaptx_module_t *m)
{
    collx_glue_release_prev(&m->prev);
    free(m->node_of);
}

OBJ_CLASS_INSTANCE(mca_coll_adaptx_module_t, mca_coll_base_module_t, adaptx_module_construct,
                   adaptx_module_destruct);

static int adaptx_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_adaptx_module_t *m = (mca_coll_adaptx_module_t *)module;
    COLLX_SAVE_PREV(m->prev, comm, bcast);
    COLLX_SAVE_PREV(m->prev, comm, reduce);
    COLLX_SAVE_PREV(m->prev, comm, allreduce);
    COLLX_SAVE_PREV(m->prev, comm, ibcast);
    COLLX_SAVE_PREV(m->prev, comm, ireduce);
    COLLX_SAVE_PREV(m->prev, comm, iallreduce);
    COLLX_SAVE_PREV_IF_ANY(m->prev, comm, bcast_init);
    COLLX_SAVE_PREV_IF_ANY(m->prev, comm, reduce_init);
    COLLX_SAVE_PREV_IF_ANY(m->prev, comm, allreduce_init);
    ADAPTX_LOG(1, "coll:adaptx: enabled on %s (cid %d, size %d)", comm->c_name,
               COLLX_COMM_CID(comm), ompi_comm_size(comm));
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_adaptx_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    mca_coll_adaptx_component_t *c = &mca_coll_adaptx_component;
    if (c->priority < 0) return NULL;
    if (OMPI_COMM_IS_INTER(comm)) {
        ADAPTX_LOG(1, "coll:adaptx: %s is an intercommunicator; not offered", comm->c_name);
        return NULL;
    }
    mca_coll_adaptx_module_t *m = OBJ_NEW(mca_coll_adaptx_module_t);
    if (NULL == m) return NULL;
    *priority = c->priority;
    m->super.coll_module_enable = adaptx_enable;
    m->super.coll_bcast = mca_coll_adaptx_bcast;
    m->super.coll_reduce = mca_coll_adaptx_reduce;
    m->super.coll_allreduce = mca_coll_adaptx_allreduce;
    m->super.coll_ibcast = mca_coll_adaptx_ibcast;
    m->super.coll_ireduce = mca_coll_adaptx_ireduce;
    m->super.coll_iallreduce = mca_coll_adaptx_iallreduce;
    m->super.coll_bcast_init = mca_coll_adaptx_bcast_init;
    m->super.coll_reduce_init = mca_coll_adaptx_reduce_init;
    m->super.coll_allreduce_init = mca_coll_adaptx_allreduce_init;
    return &m->super;
}

/* ---------------------------------------------------------------- calls */

/* Everything the core needs for one call. */
typedef struct call_t {
    collx_transport_t t;
    collx_dtype_t d;
    collx_tuning_t tun;
    size_t count;
} call_t;

/* how a call is made: MPI_Bcast, MPI_Ibcast, MPI_Bcast_init */
enum { BLOCKING, NONBLOCKING, PERSISTENT };
static const char *const form_prefix[] = {"", "i", ""}, *const form_suffix[] = {"", "", "_init"};

static void prepare(call_t *c, int which, int form, int count, struct ompi_datatype_t *dtype,
                    struct ompi_communicator_t *comm, mca_coll_adaptx_module_t *m)
{
    const mca_coll_adaptx_component_t *k = &mca_coll_adaptx_component;
    const adaptx_coll_params_t *p = &k->coll[which];
    collx_glue_transport(&c->t, comm);
    collx_glue_dtype(&c->d, dtype);
    c->count = count < 0 ? 0 : (size_t)count;
    c->tun.tree = p->tree;
    c->tun.fanout = p->fanout;
    c->tun.max_send = k->max_send_requests;
    c->tun.max_recv = k->max_recv_requests;
    c->tun.node_of = NULL;
    if (COLLX_TREE_TOPO == p->tree) {
        if (NULL == m->node_of) {
            m->node_of = collx_glue_node_map(comm, k->ranks_per_node, k->round_robin);
            if (m->node_of) {
                int nodes = 0;
                for (int r = 0; r < c->t.size; ++r) nodes += m->node_of[r] == r;
                ADAPTX_LOG(1, "coll:adaptx: %s: %d ranks on %d nodes (topo tree)", comm->c_name,
                           c->t.size, nodes);
            }
        }
        c->tun.node_of = m->node_of; /* NULL: the core uses a binomial tree */
        if (NULL == m->node_of)
            ADAPTX_LOG(1, "coll:adaptx: no node map for %s; topo tree falls back to binomial",
                       comm->c_name);
    }
    c->tun.segment_bytes =
        p->segment_size > 0
            ? (size_t)p->segment_size
            : collx_tree_segment_bytes(which, p->tree, c->count * c->d.size, c->t.size, p->fanout,
                                       k->lp_alpha_ns * 1e-9, k->lp_beta_ps_per_byte * 1e-12);
    ADAPTX_LOG(10, "coll:adaptx: %s%s%s count %d on %s (%s tree, %zu-byte segments)",
               form_prefix[form], collx_coll_name(which), form_suffix[form], count,
               comm->c_name,
               collx_tree_name(c->tun.tree), c->tun.segment_bytes);
}

static int report(const char *what, int rc)
{
    if (OMPI_SUCCESS != rc)
        opal_show_help("help-coll-collx.txt", "op-failed", true, "adaptx", what, rc);
    return rc;
}

/* Start the core operation for one call: blocking when request == NULL. */
typedef int (*starter_t)(call_t *c, const collx_notify_t *n, collx_op_t **op, void *args);

static int run(starter_t start, call_t *c, void *args, const char *what, ompi_request_t **request,
               int *unsupported)
{
    collx_op_t *op = NULL;
    *unsupported = 0;
    if (NULL == request) {
        int rc = start(c, NULL, &op, args);
        if (COLLX_ERR_UNSUPPORTED == rc) return *unsupported = 1, OMPI_SUCCESS;
        if (COLLX_OK != rc) return report(what, collx_glue_rc(rc));
        return report(what, collx_glue_wait(op));
    }
    collx_notify_t n;
    collx_request_t *req = collx_glue_request_new(&n);
    if (NULL == req) return OMPI_ERR_OUT_OF_RESOURCE;
    int rc = start(c, &n, &req->op, args);
    if (COLLX_ERR_UNSUPPORTED == rc) {
        collx_glue_request_abandon(req);
        return *unsupported = 1, OMPI_SUCCESS;
    }
    return report(what, collx_glue_request_finish(req, rc, request));
}

typedef struct bcast_args_t {
    void *buf;
    int root, tag;
} bcast_args_t;

static int start_bcast(call_t *c, const collx_notify_t *n, collx_op_t **op, void *args)
{
    bcast_args_t *a = args;
    return collx_bcast_start(&c->t, a->buf, c->count, &c->d, a->root, a->tag, &c->tun, n, op);
}

typedef struct reduce_args_t {
    const void *sbuf;
    void *rbuf;
    struct ompi_op_t *op;
    int root, tag, all;
} reduce_args_t;

static int start_reduce(call_t *c, const collx_notify_t *n, collx_op_t **op, void *args)
{
    reduce_args_t *a = args;
    return collx_glue_reduce_start(&c->t, &c->d, a->sbuf, a->rbuf, c->count, a->op, a->root,
                                   a->all, a->tag, &c->tun, n, op);
}

static int do_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                    struct ompi_communicator_t *comm, ompi_request_t **request,
                    mca_coll_base_module_t *module)
{
    mca_coll_adaptx_module_t *m = (mca_coll_adaptx_module_t *)module;
    call_t c;
    int unsupported;
    prepare(&c, ADAPTX_BCAST, request ? NONBLOCKING : BLOCKING, count, dtype, comm, m);
    bcast_args_t a = {buf, root,
                      request ? ompi_coll_base_nbc_reserve_tags(comm, 1) : MCA_COLL_BASE_TAG_BCAST};
    int rc = run(start_bcast, &c, &a, request ? "MPI_Ibcast" : "MPI_Bcast", request, &unsupported);
    if (!unsupported) return rc;
    ADAPTX_LOG(1, "coll:adaptx: bcast case not handled (datatype of zero or negative extent); "
                  "falling back");
    return request ? m->prev.ibcast(buf, count, dtype, root, comm, request, m->prev.ibcast_module)
                   : m->prev.bcast(buf, count, dtype, root, comm, m->prev.bcast_module);
}

static int do_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op, int root, int all, struct ompi_communicator_t *comm,
                     ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_adaptx_module_t *m = (mca_coll_adaptx_module_t *)module;
    call_t c;
    int unsupported;
    static const char *what[2][2] = {{"MPI_Reduce", "MPI_Ireduce"},
                                     {"MPI_Allreduce", "MPI_Iallreduce"}};
    prepare(&c, all ? ADAPTX_ALLREDUCE : ADAPTX_REDUCE, request ? NONBLOCKING : BLOCKING, count,
            dtype, comm, m);
    reduce_args_t a = {sbuf, rbuf, op, root,
                       request ? ompi_coll_base_nbc_reserve_tags(comm, 1)
                               : (all ? MCA_COLL_BASE_TAG_ALLREDUCE : MCA_COLL_BASE_TAG_REDUCE),
                       all};
    int rc = run(start_reduce, &c, &a, what[all][request != NULL], request, &unsupported);
    if (!unsupported) return rc;
    ADAPTX_LOG(1, "coll:adaptx: reduction case not handled (datatype of zero or negative "
                  "extent); falling back");
    if (all)
        return request ? m->prev.iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                            m->prev.iallreduce_module)
                       : m->prev.allreduce(sbuf, rbuf, count, dtype, op, comm,
                                           m->prev.allreduce_module);
    return request ? m->prev.ireduce(sbuf, rbuf, count, dtype, op, root, comm, request,
                                     m->prev.ireduce_module)
                   : m->prev.reduce(sbuf, rbuf, count, dtype, op, root, comm,
                                    m->prev.reduce_module);
}

int mca_coll_adaptx_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return do_bcast(buf, count, dtype, root, comm, NULL, module);
}

int mca_coll_adaptx_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    return do_bcast(buf, count, dtype, root, comm, request, module);
}

int mca_coll_adaptx_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    return do_reduce(sbuf, rbuf, count, dtype, op, root, 0, comm, NULL, module);
}

int mca_coll_adaptx_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    return do_reduce(sbuf, rbuf, count, dtype, op, root, 0, comm, request, module);
}

int mca_coll_adaptx_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return do_reduce(sbuf, rbuf, count, dtype, op, 0, 1, comm, NULL, module);
}

int mca_coll_adaptx_iallreduce(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    return do_reduce(sbuf, rbuf, count, dtype, op, 0, 1, comm, request, module);
}

/* ------------------------------------------------ persistent collectives */

/* What each MPI_Start needs: the call prepared once at init (transport,
 * datatype, tree, segment size), the starter and its arguments; every start
 * takes a fresh tag (starts are in the same order on every rank). */
typedef struct persistent_t {
    call_t c;
    starter_t start;
    const char *what;
    union {
        bcast_args_t b;
        reduce_args_t r;
    } a;
    int *tag; /* in a */
} persistent_t;

static int persistent_restart(collx_request_t *req, const collx_notify_t *n)
{
    persistent_t *p = req->args;
    /* (the transport's context is the communicator) */
    *p->tag = ompi_coll_base_nbc_reserve_tags((struct ompi_communicator_t *)p->c.t.ctx, 1);
    return report(p->what, collx_glue_rc(p->start(&p->c, n, &req->op, &p->a)));
}

static int make_persistent(const call_t *c, starter_t start, const void *args, size_t size,
                           size_t tag_offset, const char *what, ompi_request_t **request)
{
    persistent_t *p = malloc(sizeof(*p));
    if (NULL == p) return OMPI_ERR_OUT_OF_RESOURCE;
    p->c = *c;
    p->start = start;
    p->what = what;
    memcpy(&p->a, args, size);
    p->tag = (int *)((char *)&p->a + tag_offset);
    collx_request_t *req = collx_glue_persistent_new(persistent_restart, p);
    if (NULL == req) {
        free(p);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *request = &req->super.super;
    return OMPI_SUCCESS;
}

/* a datatype the core does not take: the previous module's persistent
 * request, or an error where the stack has none */
static int no_previous(const char *what)
{
    opal_show_help("help-coll-collx.txt", "op-failed", true, "adaptx", what,
                   OMPI_ERR_NOT_SUPPORTED);
    return OMPI_ERR_NOT_SUPPORTED;
}

int mca_coll_adaptx_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                               struct ompi_communicator_t *comm, struct ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_adaptx_module_t *m = (mca_coll_adaptx_module_t *)module;
    call_t c;
    prepare(&c, ADAPTX_BCAST, PERSISTENT, count, dtype, comm, m);
    if (!collx_dtype_supported(&c.d)) {
        ADAPTX_LOG(1, "coll:adaptx: bcast_init case not handled (datatype of zero or negative "
                      "extent); falling back");
        if (NULL == m->prev.bcast_init) return no_previous("MPI_Bcast_init");
        return m->prev.bcast_init(buf, count, dtype, root, comm, info, request,
                                  m->prev.bcast_init_module);
    }
    bcast_args_t a = {buf, root, 0};
    return make_persistent(&c, start_bcast, &a, sizeof(a), offsetof(bcast_args_t, tag),
                           "MPI_Bcast_init", request);
}

static int reduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, int root, int all, struct ompi_communicator_t *comm,
                       struct ompi_info_t *info, ompi_request_t **request,
                       mca_coll_base_module_t *module)
{
    mca_coll_adaptx_module_t *m = (mca_coll_adaptx_module_t *)module;
    const char *what = all ? "MPI_Allreduce_init" : "MPI_Reduce_init";
    call_t c;
    prepare(&c, all ? ADAPTX_ALLREDUCE : ADAPTX_REDUCE, PERSISTENT, count, dtype, comm, m);
    if (!collx_dtype_supported(&c.d)) {
        ADAPTX_LOG(1, "coll:adaptx: %s case not handled (datatype of zero or negative extent); "
                      "falling back", what);
        if (all)
            return NULL == m->prev.allreduce_init
                       ? no_previous(what)
                       : m->prev.allreduce_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                                                m->prev.allreduce_init_module);
        return NULL == m->prev.reduce_init
                   ? no_previous(what)
                   : m->prev.reduce_init(sbuf, rbuf, count, dtype, op, root, comm, info, request,
                                         m->prev.reduce_init_module);
    }
    reduce_args_t a = {sbuf, rbuf, op, root, 0, all};
    return make_persistent(&c, start_reduce, &a, sizeof(a), offsetof(reduce_args_t, tag), what,
                           request);
}

int mca_coll_adaptx_reduce_init(const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    return reduce_init(sbuf, rbuf, count, dtype, op, root, 0, comm, info, request, module);
}

int mca_coll_adaptx_allreduce_init(const void *sbuf, void *rbuf, int count,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                   ompi_request_t **request, mca_coll_base_module_t *module)
{
    return reduce_init(sbuf, rbuf, count, dtype, op, 0, 1, comm, info, request, module);
}
