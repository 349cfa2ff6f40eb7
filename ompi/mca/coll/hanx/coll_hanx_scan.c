/*
 * reduce_scatter(_block), scan and exscan over the node level and the
 * leaders' level.
 *
 * reduce_scatter: each node reduces the whole vector to its leader; the
 * leaders reduce-scatter it by node (each node's share = its ranks'
 * pieces, put in node order first when ranks are not in blocks by node);
 * each leader scatters its node's share to its ranks.  Rank order is kept
 * when nodes hold contiguous ranks, so non-commutative ops are native there.
 * Or, where the choice says "split" and they can run, split rails (every
 * rank of a node carries its rail's pieces across the nodes; below).
 *
 * scan/exscan on nodes of contiguous ranks (the prefix of a rank is then
 * "previous nodes, then my node's earlier ranks"): a node scan, the
 * leaders' exscan of the node totals, a node bcast, one local reduction.
 * Other placements, and non-commutative reduce_scatter there, gather and
 * fold in rank order (coll_hanx_ordered.c).
 */
#include "ompi_config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll_hanx.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "opal/util/output.h"

/* ------------------------------------------------------ reduce_scatter */

static int ordered_reduce_scatter(mca_coll_hanx_module_t *m, const void *data, void *rbuf,
                                  const int *rcounts, struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                  size_t total)
{
    const int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    char *sum_free = NULL, *sum = NULL;
    int *displs = malloc((size_t)size * sizeof(int));
    if (!displs) return OMPI_ERR_OUT_OF_RESOURCE;
    for (int r = 0, o = 0; r < size; o += rcounts[r++]) displs[r] = o;
    if (0 == rank && !(sum = mca_coll_hanx_temp(dtype, total, &sum_free))) {
        free(displs);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    int rc = mca_coll_hanx_ordered_reduce(m, data, sum, (int)total, dtype, op, 0, comm);
    if (OMPI_SUCCESS == rc)
        rc = mca_coll_hanx_scatterv(sum, rcounts, displs, dtype, rbuf, rcounts[rank], dtype, 0,
                                    comm, &m->super);
    free(displs);
    free(sum_free);
    return rc;
}

/* The vector's pieces (rank r's: rcounts[r] elements, at[r] in rank
 * order) copied one after another into `to`, in the order of the ranks
 * order[0 .. size-1]. */
static void pieces_in_order(struct ompi_datatype_t *dtype, const void *from, const size_t *at,
                            const int *rcounts, const int *order, int size, char *to)
{
    for (int i = 0, o = 0; i < size; o += rcounts[order[i++]])
        mca_coll_hanx_copy(dtype, (size_t)rcounts[order[i]], mca_coll_hanx_elem(to, dtype, (size_t)o),
                           mca_coll_hanx_elem(from, dtype, at[order[i]]));
}

/* Each rank's piece: its offset in rank order, at[r] (size entries; NULL
 * when out of memory). */
static size_t *piece_offsets(const int *rcounts, int size)
{
    size_t *at = malloc((size_t)size * sizeof(size_t));
    for (int r = 0, o = 0; at && r < size; o += rcounts[r++]) at[r] = (size_t)o;
    return at;
}

/* Split rails' layout (the core's collx_hier_rail_layout) with the vector
 * (pieces of rcounts[r] elements, in rank order) put in rail order into
 * ord: chunks[0 .. S) each rail's part (the node's chunks), chunks[S ..
 * S + N) the pieces of my rail's ranks (the rail's); *mine: my rail's
 * part's offset in ord, *piece: my piece's in that part. */
static int rail_layout(const mca_coll_hanx_module_t *m, const void *data, const int *rcounts,
                       int size, int rank, struct ompi_datatype_t *dtype, char *ord,
                       size_t *chunks, size_t *mine, size_t *piece)
{
    const collx_hier_t h = mca_coll_hanx_hier(m, size);
    int *order = malloc((size_t)size * sizeof(int)); /* the ranks in rail order */
    size_t *at = piece_offsets(rcounts, size);
    int rc = order && at ? collx_glue_rc(collx_hier_rail_layout(&h, rank, rcounts, order, chunks,
                                                                mine, piece))
                         : OMPI_ERR_OUT_OF_RESOURCE;
    if (OMPI_SUCCESS == rc) pieces_in_order(dtype, data, at, rcounts, order, size, ord);
    free(order);
    free(at);
    return rc;
}

/* Split rails: the ranks at place l of every node (rail l) own the pieces
 * of rail l's ranks.  The vector is put in rail order (rail 0's pieces in
 * its ranks' order, then rail 1's, ...); the node's reduce_scatter leaves
 * each rank its rail's pieces summed over its node; the rail's
 * reduce_scatter sums those over the nodes, each rank's piece into its
 * rbuf.  No rank reduces or sends more than its rail's share, and each
 * piece crosses the node boundaries on its own rail only.  A level runs
 * the collx ring's reduce-scatter half where the choice's tree for it
 * (low_tree: the node, up_tree: the rail) is the ring and the op commutes
 * -- in place on the vector in rail order, every chunk folded in one fixed
 * order -- else its module, whose sum runs in node order, then rail order:
 * rank order where ranks are in blocks by node (the caller sends
 * non-commutative ops elsewhere otherwise). */
static int split_reduce_scatter(mca_coll_hanx_module_t *m, const void *data, void *rbuf,
                                const int *rcounts, struct ompi_datatype_t *dtype,
                                struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                size_t total, const hanx_choice_t *ch, const char *name)
{
    const int size = ompi_comm_size(comm), S = m->split_parts, N = size / S;
    struct ompi_communicator_t *rail = m->cur->rail;
    const int l = ompi_comm_rank(m->cur->node), j = ompi_comm_rank(rail);
    const int commute = ompi_op_is_commute(op);
    char *ord_free = NULL, *mid_free = NULL, *ord = NULL, *mid = NULL;
    size_t *chunks = malloc((size_t)(S + N) * sizeof(size_t)), mine, piece;
    /* (the modules' counts) */
    int *lcnt = malloc((size_t)S * sizeof(int)), *rcnt = malloc((size_t)N * sizeof(int));
    int rc = OMPI_SUCCESS, handled = 0;
    if (!chunks || !lcnt || !rcnt || !(ord = mca_coll_hanx_temp(dtype, total, &ord_free))) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    rc = rail_layout(m, data, rcounts, size, ompi_comm_rank(comm), dtype, ord, chunks, &mine,
                     &piece);
    if (OMPI_SUCCESS != rc) goto out;
    for (int p = 0; p < S; ++p) lcnt[p] = (int)chunks[p];
    for (int k = 0; k < N; ++k) rcnt[k] = (int)chunks[S + k];
    /* 1: rail l's part summed over the node, at mid */
    if (commute && COLLX_TREE_RING == ch->low_tree) {
        rc = mca_coll_hanx_ring_reduce_scatter(m->cur->node, ord, total, chunks, dtype, op,
                                               &handled);
        mid = mca_coll_hanx_elem(ord, dtype, mine);
    }
    const int node_ring = handled;
    if (!handled) {
        if (!(mid = mca_coll_hanx_temp(dtype, (size_t)lcnt[l], &mid_free))) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
            goto out;
        }
        rc = HANX_NODE_CALL(m, reduce_scatter, ord, mid, lcnt, dtype, op);
    }
    /* 2: my piece summed over the nodes (a rail whose ranks get nothing
     * skips its call: tuned's reduce of a non-commutative op divides by a
     * zero count) */
    if (OMPI_SUCCESS != rc || 0 == lcnt[l]) goto out;
    handled = 0;
    if (commute && COLLX_TREE_RING == ch->up_tree) {
        rc = mca_coll_hanx_ring_reduce_scatter(rail, mid, (size_t)lcnt[l], chunks + S, dtype, op,
                                               &handled);
        if (OMPI_SUCCESS == rc && handled)
            mca_coll_hanx_copy(dtype, chunks[S + j], rbuf, mca_coll_hanx_elem(mid, dtype, piece));
    }
    if (!handled)
        rc = rail->c_coll->coll_reduce_scatter(mid, rbuf, rcnt, dtype, op, rail,
                                               rail->c_coll->coll_reduce_scatter_module);
    HANX_LOG(10, "coll:hanx: %s on %s: split rails, the node's on %s, the rail's on %s", name,
             comm->c_name, node_ring ? "the collx ring" : "the module",
             handled ? "the collx ring" : "the module");
out:
    free(chunks);
    free(lcnt);
    free(rcnt);
    free(ord_free);
    free(mid_free);
    return rc;
}

static int reduce_scatter_common(mca_coll_hanx_module_t *m, const void *sbuf, void *rbuf,
                                 const int *rcounts, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                 size_t total, const hanx_choice_t *split, const char *name)
{
    const int size = ompi_comm_size(comm), nsize = ompi_comm_size(m->cur->node);
    const int lead = NULL != HANX_TOP(m), N = m->nnodes;
    const void *data = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
    if (!mca_coll_hanx_order_ok(m, op)) /* (rank order by gathering, then scatter) */
        return ordered_reduce_scatter(m, data, rbuf, rcounts, dtype, op, comm, total);
    if (split)
        return split_reduce_scatter(m, data, rbuf, rcounts, dtype, op, comm, total, split,
                                    name);
    char *acc_free = NULL, *ord_free = NULL, *share_free = NULL, *acc = NULL, *ord = NULL,
         *share = NULL;
    int *ncnt = malloc((size_t)N * sizeof(int)), *ndsp = malloc((size_t)N * sizeof(int));
    int *lcnt = malloc((size_t)nsize * sizeof(int)), *ldsp = malloc((size_t)nsize * sizeof(int));
    size_t *at = piece_offsets(rcounts, size);
    int rc = OMPI_SUCCESS;
    if (!ncnt || !ndsp || !lcnt || !ldsp || !at) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }
    for (int n = 0, o = 0; n < N; ++n) {
        ncnt[n] = 0;
        for (int i = 0; i < m->node_size[n]; ++i) ncnt[n] += rcounts[m->rank_at[m->node_first[n] + i]];
        ndsp[n] = o;
        o += ncnt[n];
    }
    for (int i = 0, o = 0; i < nsize; ++i) {
        lcnt[i] = rcounts[m->rank_at[m->node_first[m->my_node] + i]];
        ldsp[i] = o;
        o += lcnt[i];
    }
    if (lead) {
        acc = mca_coll_hanx_temp(dtype, total, &acc_free);
        share = mca_coll_hanx_temp(dtype, (size_t)ncnt[m->my_node], &share_free);
        if (!acc || !share) rc = OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* 1: the node's sum of the whole vector at its leader (everybody joins,
     * even after a leader's allocation failure, so nobody hangs) */
    {
        int lrc = nsize > 1 ? HANX_NODE_CALL(m, reduce, data, acc, (int)total, dtype, op, 0)
                            : OMPI_SUCCESS;
        if (1 == nsize && acc) mca_coll_hanx_copy(dtype, total, acc, data);
        if (OMPI_SUCCESS == rc) rc = lrc;
    }
    if (lead && OMPI_SUCCESS == rc) {
        /* 2: pieces in node order, then reduce_scatter by node */
        if (!m->blocks) {
            ord = mca_coll_hanx_temp(dtype, total, &ord_free);
            if (!ord) rc = OMPI_ERR_OUT_OF_RESOURCE;
            else pieces_in_order(dtype, acc, at, rcounts, m->rank_at, size, ord);
        } else {
            ord = acc;
        }
        if (OMPI_SUCCESS == rc) {
            if (!mca_coll_hanx_scratch_unsafe(dtype)) {
                rc = HANX_TOP_CALL(m, reduce_scatter, ord, share, ncnt, dtype, op);
            } else { /* reduce + scatterv instead */
                const int top0 = 0 == ompi_comm_rank(HANX_TOP(m));
                rc = HANX_TOP_CALL(m, reduce, top0 ? MPI_IN_PLACE : ord, top0 ? ord : NULL,
                                   (int)total, dtype, op, 0);
                if (OMPI_SUCCESS == rc)
                    rc = HANX_TOP_CALL(m, scatterv, ord, ncnt, ndsp, dtype, share,
                                       ncnt[m->my_node], dtype, 0);
            }
        }
    }
    /* 3: the node's share to its ranks */
    {
        int lrc = nsize > 1 ? HANX_NODE_CALL(m, scatterv, share, lcnt, ldsp, dtype, rbuf,
                                             lcnt[ompi_comm_rank(m->cur->node)], dtype, 0)
                            : OMPI_SUCCESS;
        if (1 == nsize && share) mca_coll_hanx_copy(dtype, (size_t)lcnt[0], rbuf, share);
        if (OMPI_SUCCESS == rc) rc = lrc;
    }
out:
    free(ncnt);
    free(ndsp);
    free(lcnt);
    free(ldsp);
    free(at);
    free(acc_free);
    free(ord_free);
    free(share_free);
    return rc;
}

int mca_coll_hanx_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    size_t total = 0;
    for (int r = 0; r < ompi_comm_size(comm); ++r) total += (size_t)rcounts[r];
    if (!mca_coll_hanx_use(m, comm, COLLX_COLL_REDUCE_SCATTER, mca_coll_hanx_bytes(dtype, total), &ch) ||
        total > INT_MAX ||
        (!mca_coll_hanx_order_ok(m, op) &&
         !mca_coll_hanx_ordered_fits(m, comm, dtype, total, "reduce_scatter")))
        return m->prev.reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                      m->prev.reduce_scatter_module);
    const int split = mca_coll_hanx_order_ok(m, op) &&
                      mca_coll_hanx_split_ok(m, comm, &ch, dtype, "", "reduce_scatter");
    HANX_LOG(10, "coll:hanx: reduce_scatter on %s%s", comm->c_name, split ? ": split rails" : "");
    if (0 == total) return OMPI_SUCCESS;
    return reduce_scatter_common(m, sbuf, rbuf, rcounts, dtype, op, comm, total,
                                 split ? &ch : NULL, "reduce_scatter");
}

int mca_coll_hanx_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm,
                                       mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    const int size = ompi_comm_size(comm);
    const size_t total = (size_t)rcount * (size_t)size;
    if (!mca_coll_hanx_use(m, comm, COLLX_COLL_REDUCE_SCATTER_BLOCK,
                           mca_coll_hanx_bytes(dtype, (size_t)rcount), &ch) ||
        total > INT_MAX ||
        (!mca_coll_hanx_order_ok(m, op) &&
         !mca_coll_hanx_ordered_fits(m, comm, dtype, total, "reduce_scatter_block")))
        return m->prev.reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                            m->prev.reduce_scatter_block_module);
    const int split = mca_coll_hanx_order_ok(m, op) &&
                      mca_coll_hanx_split_ok(m, comm, &ch, dtype, "", "reduce_scatter_block");
    HANX_LOG(10, "coll:hanx: reduce_scatter_block count %d on %s%s", rcount, comm->c_name,
             split ? ": split rails" : "");
    if (0 == total) return OMPI_SUCCESS;
    int *counts = malloc((size_t)size * sizeof(int));
    if (!counts) return OMPI_ERR_OUT_OF_RESOURCE;
    for (int r = 0; r < size; ++r) counts[r] = rcount;
    int rc = reduce_scatter_common(m, sbuf, rbuf, counts, dtype, op, comm, total,
                                   split ? &ch : NULL, "reduce_scatter_block");
    free(counts);
    return rc;
}

/* -------------------------------------------- non-blocking reduce_scatter
 * MPI_Ireduce_scatter(_block) where the blocking call would run split
 * rails on the collx rings (split_reduce_scatter): the same two rings as
 * stages of the core's schedules -- the node's on the vector in rail
 * order, copied at the start (the send buffer is only read there), then
 * the rail's on my rail's part, then my piece copied to rbuf.  Every other
 * case (the levels' form, split rails on a module, a non-commutative op, a
 * datatype the core does not take) goes to the previous module. */

typedef struct rs_blocks {
    hanx_blocks_t b;
    char *ord_free;
    size_t *chunks; /* the node's S, then the rail's N */
    void *rbuf;
    const char *piece; /* my piece, where the rail's ring leaves it */
    size_t piece_count;
    struct ompi_datatype_t *dtype;
} rs_blocks_t;

static int rs_finish(hanx_blocks_t *hb)
{
    rs_blocks_t *r = (rs_blocks_t *)hb;
    mca_coll_hanx_copy(r->dtype, r->piece_count, r->rbuf, r->piece);
    return OMPI_SUCCESS;
}

static void rs_release(hanx_blocks_t *hb)
{
    rs_blocks_t *r = (rs_blocks_t *)hb;
    free(r->ord_free);
    free(r->chunks);
    free(r);
}

/* *started = 1 when it took the call (rc: the start's), else the caller
 * hands it over. */
static int ireduce_scatter_rings(mca_coll_hanx_module_t *m, const void *sbuf, void *rbuf,
                                 const int *rcounts, size_t total, size_t bytes,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, int coll,
                                 ompi_request_t **request, int *started)
{
    *started = 0;
    if (0 == total || total > INT_MAX || !ompi_op_is_commute(op)) return OMPI_SUCCESS;
    hanx_choice_t ch;
    hanx_view_t *v = mca_coll_hanx_use_nb(m, comm, coll, bytes, &ch);
    if (NULL == v) return OMPI_SUCCESS;
    collx_dtype_t d;
    collx_glue_dtype(&d, dtype);
    const char *why = NULL == ch.algorithm || strcmp(ch.algorithm, "split")
                          ? "not split rails"
                      : COLLX_TREE_RING != ch.low_tree || COLLX_TREE_RING != ch.up_tree
                          ? "a level not on the collx ring"
                      : 0 == m->split_parts || NULL == v->rail ? "no rails"
                      : mca_coll_hanx_scratch_unsafe(dtype) || !collx_dtype_supported(&d)
                          ? "datatype"
                          : NULL;
    if (why) {
        HANX_LOG(10, "coll:hanx: i%s on %s: previous module (%s)", collx_coll_name(coll),
                 comm->c_name, why);
        return OMPI_SUCCESS;
    }
    const int size = ompi_comm_size(comm), S = m->split_parts, N = size / S;
    const int l = ompi_comm_rank(v->node), j = ompi_comm_rank(v->rail);
    rs_blocks_t *r = calloc(1, sizeof(*r));
    char *ord = NULL;
    size_t mine, piece;
    if (r) r->chunks = malloc((size_t)(S + N) * sizeof(size_t));
    if (r && r->chunks) ord = mca_coll_hanx_temp(dtype, total, &r->ord_free);
    const int rc = ord ? rail_layout(m, MPI_IN_PLACE == sbuf ? rbuf : sbuf, rcounts, size,
                                     ompi_comm_rank(comm), dtype, ord, r->chunks, &mine, &piece)
                       : OMPI_ERR_OUT_OF_RESOURCE;
    if (OMPI_SUCCESS != rc) {
        if (r) rs_release(&r->b);
        return rc;
    }
    r->b.finish = rs_finish;
    r->b.release = rs_release;
    r->b.ring_chunks[0] = r->chunks;
    r->b.ring_n[0] = total;
    r->b.ring_chunks[1] = r->chunks + S;
    r->b.ring_n[1] = r->chunks[l];
    r->rbuf = rbuf;
    r->dtype = dtype;
    char *part = mca_coll_hanx_elem(ord, dtype, mine);
    r->piece = mca_coll_hanx_elem(part, dtype, piece);
    r->piece_count = r->chunks[S + j];
    hanx_pipeline_t p;
    mca_coll_hanx_pipeline_init(&p, v, comm, dtype, op, total, 0);
    p.seg_count = p.count; /* one segment */
    p.blk = &r->b;
    /* (the node's channel: level 0's where the node is level 0, as every
     * other call on it) */
    mca_coll_hanx_add_stage(&p, 0, v->node == v->lvl[0] ? 0 : HANX_NODE, ST_RING_RS, 0, NULL, ord);
    mca_coll_hanx_add_stage(&p, 1, HANX_RAIL, ST_RING_RS, 0, NULL, part);
    mca_coll_hanx_add_stage(&p, 2, HANX_LOCAL, ST_LOCAL, 0, NULL, NULL);
    HANX_LOG(10, "coll:hanx: i%s on %s: split rails, the node's and the rail's on the collx ring",
             collx_coll_name(coll), comm->c_name);
    *started = 1;
    return mca_coll_hanx_start_nb(m, &p, NULL, request);
}

int mca_coll_hanx_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    size_t total = 0;
    for (int r = 0; r < ompi_comm_size(comm); ++r) total += (size_t)rcounts[r];
    int started;
    const int rc = ireduce_scatter_rings(m, sbuf, rbuf, rcounts, total,
                                         mca_coll_hanx_bytes(dtype, total), dtype, op, comm,
                                         COLLX_COLL_REDUCE_SCATTER, request, &started);
    return started ? rc
                   : m->prev.ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request,
                                             m->prev.ireduce_scatter_module);
}

int mca_coll_hanx_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    const int size = ompi_comm_size(comm);
    int *counts = malloc((size_t)size * sizeof(int)), started = 0, rc = OMPI_SUCCESS;
    if (counts) {
        for (int r = 0; r < size; ++r) counts[r] = rcount;
        rc = ireduce_scatter_rings(m, sbuf, rbuf, counts, (size_t)rcount * (size_t)size,
                                   mca_coll_hanx_bytes(dtype, (size_t)rcount), dtype, op, comm,
                                   COLLX_COLL_REDUCE_SCATTER_BLOCK, request, &started);
        free(counts);
    }
    return started ? rc
                   : m->prev.ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                                   m->prev.ireduce_scatter_block_module);
}

/* -------------------------------------------------------- scan, exscan */

/* rbuf = prefix op rbuf for every rank of a node past the first, where
 * prefix is the reduction of the earlier nodes' ranks.  `incl`: my node's
 * inclusive scan (the last rank's is the node total). */
static int add_node_prefix(mca_coll_hanx_module_t *m, const char *incl, int count,
                           struct ompi_datatype_t *dtype, struct ompi_op_t *op, char **prefix,
                           char **prefix_free, int tag)
{
    const int nsize = ompi_comm_size(m->cur->node), lrank = ompi_comm_rank(m->cur->node);
    char *total_free = NULL, *total = NULL;
    int rc = OMPI_SUCCESS;
    *prefix = mca_coll_hanx_temp(dtype, (size_t)count, prefix_free);
    if (!*prefix) return OMPI_ERR_OUT_OF_RESOURCE;
    /* the node total: the last rank's inclusive scan, at the leader */
    if (0 == lrank) {
        if (nsize > 1) {
            total = mca_coll_hanx_temp(dtype, (size_t)count, &total_free);
            if (!total) rc = OMPI_ERR_OUT_OF_RESOURCE;
            else rc = MCA_PML_CALL(recv(total, count, dtype, nsize - 1, tag, m->cur->node, MPI_STATUS_IGNORE));
        } else {
            total = (char *)incl;
        }
        /* leaders: exclusive scan of node totals (nodes are in rank order) */
        if (OMPI_SUCCESS == rc)
            rc = HANX_TOP_CALL(m, exscan, total, *prefix, count, dtype, op);
    } else if (lrank == nsize - 1) {
        rc = MCA_PML_CALL(send(incl, count, dtype, 0, tag, MCA_PML_BASE_SEND_STANDARD, m->cur->node));
    }
    if (OMPI_SUCCESS == rc && 0 != m->my_node && nsize > 1)
        rc = HANX_NODE_CALL(m, bcast, *prefix, count, dtype, 0);
    free(total_free);
    return rc;
}

int mca_coll_hanx_scan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    const int ready = mca_coll_hanx_use(m, comm, COLLX_COLL_SCAN, mca_coll_hanx_bytes(dtype, (size_t)count), NULL);
    if (ready && !m->blocks && mca_coll_hanx_ordered_fits(m, comm, dtype, (size_t)count, "scan"))
        return mca_coll_hanx_ordered_scan(m, sbuf, rbuf, count, dtype, op, comm, 0);
    if (!ready || !m->blocks)
        return m->prev.scan(sbuf, rbuf, count, dtype, op, comm, m->prev.scan_module);
    HANX_LOG(10, "coll:hanx: scan count %d on %s", count, comm->c_name);
    if (0 == count) return OMPI_SUCCESS;
    char *prefix = NULL, *prefix_free = NULL;
    int rc = ompi_comm_size(m->cur->node) > 1 ? HANX_NODE_CALL(m, scan, sbuf, rbuf, count, dtype, op)
                                         : (mca_coll_hanx_copy(dtype, (size_t)count, rbuf, MPI_IN_PLACE == sbuf ? rbuf : sbuf), OMPI_SUCCESS);
    if (OMPI_SUCCESS == rc)
        rc = add_node_prefix(m, rbuf, count, dtype, op, &prefix, &prefix_free, MCA_COLL_BASE_TAG_SCAN);
    if (OMPI_SUCCESS == rc && 0 != m->my_node) PMPI_Reduce_local(prefix, rbuf, count, (MPI_Datatype)dtype, (MPI_Op)op);
    free(prefix_free);
    return rc;
}

int mca_coll_hanx_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    const int ready = mca_coll_hanx_use(m, comm, COLLX_COLL_EXSCAN, mca_coll_hanx_bytes(dtype, (size_t)count), NULL);
    if (ready && !m->blocks && mca_coll_hanx_ordered_fits(m, comm, dtype, (size_t)count, "exscan"))
        return mca_coll_hanx_ordered_scan(m, sbuf, rbuf, count, dtype, op, comm, 1);
    if (!ready || !m->blocks)
        return m->prev.exscan(sbuf, rbuf, count, dtype, op, comm, m->prev.exscan_module);
    HANX_LOG(10, "coll:hanx: exscan count %d on %s", count, comm->c_name);
    if (0 == count) return OMPI_SUCCESS;
    const int nsize = ompi_comm_size(m->cur->node), lrank = ompi_comm_rank(m->cur->node);
    const void *data = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
    char *incl_free = NULL, *prefix = NULL, *prefix_free = NULL;
    char *incl = mca_coll_hanx_temp(dtype, (size_t)count, &incl_free);
    int rc = incl ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
    /* my node's inclusive scan, then shifted by one rank: rbuf of node rank
     * l > 0 gets the inclusive scan of rank l - 1 */
    if (OMPI_SUCCESS == rc)
        rc = nsize > 1 ? HANX_NODE_CALL(m, scan, data, incl, count, dtype, op)
                       : (mca_coll_hanx_copy(dtype, (size_t)count, incl, data), OMPI_SUCCESS);
    if (OMPI_SUCCESS == rc && nsize > 1) {
        ompi_request_t *req = MPI_REQUEST_NULL;
        if (lrank + 1 < nsize)
            rc = MCA_PML_CALL(isend(incl, count, dtype, lrank + 1, MCA_COLL_BASE_TAG_EXSCAN,
                                    MCA_PML_BASE_SEND_STANDARD, m->cur->node, &req));
        if (OMPI_SUCCESS == rc && lrank > 0)
            rc = MCA_PML_CALL(recv(rbuf, count, dtype, lrank - 1, MCA_COLL_BASE_TAG_EXSCAN,
                                   m->cur->node, MPI_STATUS_IGNORE));
        if (MPI_REQUEST_NULL != req) {
            int wrc = ompi_request_wait(&req, MPI_STATUS_IGNORE);
            if (OMPI_SUCCESS == rc) rc = wrc;
        }
    }
    if (OMPI_SUCCESS == rc)
        rc = add_node_prefix(m, incl, count, dtype, op, &prefix, &prefix_free,
                             MCA_COLL_BASE_TAG_EXSCAN);
    if (OMPI_SUCCESS == rc && 0 != m->my_node) {
        if (lrank > 0) PMPI_Reduce_local(prefix, rbuf, count, (MPI_Datatype)dtype, (MPI_Op)op);
        else mca_coll_hanx_copy(dtype, (size_t)count, rbuf, prefix);
    }
    free(incl_free);
    free(prefix_free);
    return rc;
}
