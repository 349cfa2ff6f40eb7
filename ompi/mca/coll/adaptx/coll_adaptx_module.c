#include "ompi_config.h"

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
}

static void adaptx_module_destruct(mca_coll_adaptx_module_t *m)
{
    COLLX_RELEASE_PREV(m->prev, bcast);
    COLLX_RELEASE_PREV(m->prev, reduce);
}

OBJ_CLASS_INSTANCE(mca_coll_adaptx_module_t, mca_coll_base_module_t, adaptx_module_construct,
                   adaptx_module_destruct);

static int adaptx_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_adaptx_module_t *m = (mca_coll_adaptx_module_t *)module;
    COLLX_SAVE_PREV(m->prev, comm, bcast);
    COLLX_SAVE_PREV(m->prev, comm, reduce);
    ADAPTX_LOG(1, "coll:adaptx: enabled on %s (cid %d, size %d)", comm->c_name,
               (int)ompi_comm_get_cid(comm), ompi_comm_size(comm));
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
    return &m->super;
}

static void tuning(collx_tuning_t *t, int tree, int segsize)
{
    t->tree = tree;
    t->segment_bytes = (size_t)segsize;
    t->max_send = mca_coll_adaptx_component.max_send_requests;
    t->max_recv = mca_coll_adaptx_component.max_recv_requests;
}

static int report(const char *what, int rc)
{
    if (OMPI_SUCCESS != rc)
        opal_show_help("help-coll-collx.txt", "op-failed", true, "adaptx", what, rc);
    return rc;
}

int mca_coll_adaptx_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_adaptx_module_t *m = (mca_coll_adaptx_module_t *)module;
    collx_transport_t t;
    collx_dtype_t d;
    collx_tuning_t tun;
    collx_op_t *op = NULL;

    collx_glue_transport(&t, comm);
    collx_glue_dtype(&d, dtype);
    tuning(&tun, mca_coll_adaptx_component.bcast_tree,
           mca_coll_adaptx_component.bcast_segment_size);
    ADAPTX_LOG(10, "coll:adaptx: bcast count %d root %d on %s (%s tree)", count, root,
               comm->c_name, collx_tree_name(tun.tree));
    int rc = collx_bcast_start(&t, buf, (size_t)(count < 0 ? 0 : count), &d, root,
                               MCA_COLL_BASE_TAG_BCAST, &tun, &op);
    if (COLLX_ERR_UNSUPPORTED == rc) {
        ADAPTX_LOG(1, "coll:adaptx: bcast case not handled; falling back");
        return m->prev.bcast(buf, count, dtype, root, comm, m->prev.bcast_module);
    }
    if (COLLX_OK != rc) return report("MPI_Bcast", collx_glue_rc(rc));
    return report("MPI_Bcast", collx_glue_wait(op));
}

int mca_coll_adaptx_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    mca_coll_adaptx_module_t *m = (mca_coll_adaptx_module_t *)module;
    collx_transport_t t;
    collx_dtype_t d;
    collx_tuning_t tun;
    collx_op_t *cop = NULL;
    int commute = 0;

    collx_glue_transport(&t, comm);
    collx_glue_dtype(&d, dtype);
    PMPI_Op_commutative((MPI_Op)op, &commute);
    tuning(&tun, mca_coll_adaptx_component.reduce_tree,
           mca_coll_adaptx_component.reduce_segment_size);
    int is_root = ompi_comm_rank(comm) == root;
    const void *mine = (is_root && MPI_IN_PLACE == sbuf) ? NULL : sbuf;
    ADAPTX_LOG(10, "coll:adaptx: reduce count %d root %d on %s (%s)", count, root, comm->c_name,
               commute ? "commutative" : "order-preserving");
    int rc = collx_reduce_start(&t, mine, rbuf, (size_t)(count < 0 ? 0 : count), &d, op, commute,
                                root, MCA_COLL_BASE_TAG_REDUCE, &tun, &cop);
    if (COLLX_ERR_UNSUPPORTED == rc) {
        ADAPTX_LOG(1, "coll:adaptx: reduce case not handled; falling back");
        return m->prev.reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev.reduce_module);
    }
    if (COLLX_OK != rc) return report("MPI_Reduce", collx_glue_rc(rc));
    return report("MPI_Reduce", collx_glue_wait(cop));
}
