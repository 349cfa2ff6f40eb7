/*
 * Reductions in rank order where the hierarchy cannot keep it: a
 * non-commutative op on a placement whose groups do not hold contiguous
 * ranks (round-robin, --map-by node), and scan/exscan on such placements
 * for any op.  Every contribution is gathered through the hierarchy (hanx's
 * own gather/allgather, which work on any placement) and folded in rank
 * order: x[r] = x[r-1] op x[r] in place gives every inclusive prefix.
 *
 * This needs size x message bytes on the folding rank(s); above
 * coll_hanx_ordered_max_bytes the call goes to the previous module.
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "coll_hanx.h"
#include "opal/util/output.h"

int mca_coll_hanx_ordered_fits(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm,
                               struct ompi_datatype_t *dtype, size_t count, const char *what)
{
    const size_t need = (size_t)ompi_comm_size(comm) * count * (size_t)mca_coll_hanx_extent(dtype);
    const size_t limit = (size_t)mca_coll_hanx_component.ordered_max_bytes;
    (void)m;
    if (count <= INT32_MAX && need <= limit) {
        HANX_LOG(10, "coll:hanx: %s on %s, ranks not in blocks by node: gathered and folded in "
                     "rank order", what, comm->c_name);
        return 1;
    }
    HANX_LOG(1, "coll:hanx: %s on %s, ranks not in blocks by node: folding in rank order needs "
                "%zu bytes (coll_hanx_ordered_max_bytes %zu): previous module", what,
             comm->c_name, need, limit);
    return 0;
}

/* x[r] = x[r-1] op x[r] for r = 1..last: x[r] becomes ranks 0..r reduced */
static void fold(char *x, int last, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    for (int r = 1; r <= last; ++r)
        PMPI_Reduce_local(mca_coll_hanx_elem(x, dtype, (size_t)(r - 1) * (size_t)count),
                          mca_coll_hanx_elem(x, dtype, (size_t)r * (size_t)count), count,
                          (MPI_Datatype)dtype, (MPI_Op)op);
}

int mca_coll_hanx_ordered_reduce(mca_coll_hanx_module_t *m, const void *sbuf, void *rbuf, int count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                 struct ompi_communicator_t *comm)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const void *data = (rank == root && MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    char *all_free = NULL, *all = NULL;
    if (0 == count) return OMPI_SUCCESS;
    if (rank == root && !(all = mca_coll_hanx_temp(dtype, (size_t)size * (size_t)count, &all_free)))
        return OMPI_ERR_OUT_OF_RESOURCE;
    int rc = mca_coll_hanx_gather(data, count, dtype, all, count, dtype, root, comm, &m->super);
    if (OMPI_SUCCESS == rc && rank == root) {
        fold(all, size - 1, count, dtype, op);
        mca_coll_hanx_copy(dtype, (size_t)count, rbuf,
                           mca_coll_hanx_elem(all, dtype, (size_t)(size - 1) * (size_t)count));
    }
    free(all_free);
    return rc;
}

int mca_coll_hanx_ordered_scan(mca_coll_hanx_module_t *m, const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, int exclusive)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const void *data = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
    if (0 == count) return OMPI_SUCCESS;
    char *all_free = NULL, *all = mca_coll_hanx_temp(dtype, (size_t)size * (size_t)count, &all_free);
    if (!all) return OMPI_ERR_OUT_OF_RESOURCE;
    int rc = mca_coll_hanx_allgather(data, count, dtype, all, count, dtype, comm, &m->super);
    const int upto = exclusive ? rank - 1 : rank;
    if (OMPI_SUCCESS == rc && upto >= 0) {
        fold(all, upto, count, dtype, op);
        mca_coll_hanx_copy(dtype, (size_t)count, rbuf,
                           mca_coll_hanx_elem(all, dtype, (size_t)upto * (size_t)count));
    }
    free(all_free);
    return rc;
}
