/*
 * coll/adaptx: event-driven, segmented tree collectives (after ADAPT) and
 * linear pipelining (LP).  The algorithms live in the collx core; this is
 * the Open MPI glue.
 */
#ifndef MCA_COLL_ADAPTX_H
#define MCA_COLL_ADAPTX_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/mca/coll/coll.h"
#include "../collx_glue/collx_glue.h"

BEGIN_C_DECLS

/* The collectives adaptx runs: the first three of the core's table, whose
 * names (collx_coll_name) are its MCA parameter prefixes and log names. */
enum {
    ADAPTX_BCAST = COLLX_COLL_BCAST,
    ADAPTX_REDUCE = COLLX_COLL_REDUCE,
    ADAPTX_ALLREDUCE = COLLX_COLL_ALLREDUCE,
    ADAPTX_NCOLLS
};

/* Knobs of one collective. */
typedef struct adaptx_coll_params_t {
    int tree;         /* collx_tree_kind_t */
    int fanout;       /* k-nomial radix / number of chains */
    int segment_size; /* bytes; 0 = automatic */
} adaptx_coll_params_t;

typedef struct mca_coll_adaptx_component_t {
    mca_coll_base_component_t super;
    int priority;
    int verbose;
    int output; /* opal_output stream */
    adaptx_coll_params_t coll[ADAPTX_NCOLLS];
    int max_send_requests;
    int max_recv_requests;
    int ranks_per_node;  /* topo tree: 0 real nodes, N > 0 synthetic ones (the glue's node map) */
    int round_robin;     /* ... taking the ranks round-robin */
    int lp_alpha_ns;         /* LP model: fixed cost of one segment on a link */
    int lp_beta_ps_per_byte; /* LP model: time per byte on a link */
} mca_coll_adaptx_component_t;

COLLX_COMPONENT_EXPORT extern mca_coll_adaptx_component_t mca_coll_adaptx_component;

typedef struct mca_coll_adaptx_module_t {
    mca_coll_base_module_t super;
    collx_prev_t prev; /* what ran before us */
    int *node_of; /* node of each rank, for the topo tree; built at first use */
} mca_coll_adaptx_module_t;
OBJ_CLASS_DECLARATION(mca_coll_adaptx_module_t);

mca_coll_base_module_t *mca_coll_adaptx_comm_query(struct ompi_communicator_t *comm, int *priority);

int mca_coll_adaptx_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_adaptx_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module);
int mca_coll_adaptx_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_adaptx_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module);
int mca_coll_adaptx_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_adaptx_iallreduce(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module);

/* persistent collectives (MPI-4 MPI_Bcast_init, ...; MPIX_ in Open MPI 4.1) */
int mca_coll_adaptx_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                               struct ompi_communicator_t *comm, struct ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_adaptx_reduce_init(const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_adaptx_allreduce_init(const void *sbuf, void *rbuf, int count,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                   ompi_request_t **request, mca_coll_base_module_t *module);

END_C_DECLS

#endif
