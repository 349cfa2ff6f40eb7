/*
 * coll/adaptx: event-driven, segmented tree collectives (after ADAPT).
 * The algorithms live in the collx core; this is the Open MPI glue.
 */
#ifndef MCA_COLL_ADAPTX_H
#define MCA_COLL_ADAPTX_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/mca/coll/coll.h"

BEGIN_C_DECLS

typedef struct mca_coll_adaptx_component_t {
    mca_coll_base_component_2_0_0_t super;
    int priority;
    int verbose;
    int output; /* opal_output stream */
    int bcast_tree;
    int bcast_segment_size;
    int reduce_tree;
    int reduce_segment_size;
    int max_send_requests;
    int max_recv_requests;
} mca_coll_adaptx_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_adaptx_component_t mca_coll_adaptx_component;

/* What ran before us, for the cases we hand back. */
typedef struct adaptx_prev_t {
    mca_coll_base_module_bcast_fn_t bcast;
    mca_coll_base_module_t *bcast_module;
    mca_coll_base_module_reduce_fn_t reduce;
    mca_coll_base_module_t *reduce_module;
} adaptx_prev_t;

typedef struct mca_coll_adaptx_module_t {
    mca_coll_base_module_t super;
    adaptx_prev_t prev;
} mca_coll_adaptx_module_t;
OBJ_CLASS_DECLARATION(mca_coll_adaptx_module_t);

mca_coll_base_module_t *mca_coll_adaptx_comm_query(struct ompi_communicator_t *comm, int *priority);

int mca_coll_adaptx_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_adaptx_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module);

END_C_DECLS

#endif
