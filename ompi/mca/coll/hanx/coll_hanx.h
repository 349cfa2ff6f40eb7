/*
 * coll/hanx: hierarchical collectives (after HAN).  A communicator is split
 * by node; each level runs the collectives of the modules Open MPI selects
 * on the sub-communicators (hanx excluded), composed here.
 */
#ifndef MCA_COLL_HANX_H
#define MCA_COLL_HANX_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/mca/coll/coll.h"
#include "../collx_glue/collx_glue.h"

BEGIN_C_DECLS

typedef struct mca_coll_hanx_component_t {
    mca_coll_base_component_2_0_0_t super;
    int priority;
    int verbose;
    int output;
    int ranks_per_node; /* 0: real locality; N > 0: synthetic groups of N ranks */
    char *low_preference;  /* ompi_comm_coll_preference of the node level */
    char *up_preference;   /* ompi_comm_coll_preference of the leader level */
} mca_coll_hanx_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_hanx_component_t mca_coll_hanx_component;

typedef struct mca_coll_hanx_module_t {
    mca_coll_base_module_t super;
    collx_prev_t prev; /* what ran before us */
    /* hierarchy, built lazily at the first collective */
    int hier_state;                 /* 0 = not built, 1 = usable, -1 = not hierarchical */
    struct ompi_communicator_t *low; /* ranks of my node                  */
    struct ompi_communicator_t *up;  /* node leaders (NULL on non-leaders) */
    int *node_of;                   /* node index of each rank of comm    */
    int *leader_of_node;            /* rank in comm of each node's leader */
    int *low_rank_of;               /* rank in its node's low comm of each rank */
    int nnodes;
    int my_node;
    int blocks;                     /* every node's ranks are contiguous */
} mca_coll_hanx_module_t;
OBJ_CLASS_DECLARATION(mca_coll_hanx_module_t);

mca_coll_base_module_t *mca_coll_hanx_comm_query(struct ompi_communicator_t *comm, int *priority);

int mca_coll_hanx_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_hanx_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module);
int mca_coll_hanx_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module);

END_C_DECLS

#endif
