/*
 * gather(v), allgather(v), scatter(v), alltoall(v) through the node leaders.
 *
 * Every rank's data travels as a packed block (MPI_Pack: the bytes of its
 * type signature), so that senders and receivers may use different but
 * matching datatypes, gaps are never touched, and any rank placement works:
 * blocks are kept in "node order" -- node by node, each node's ranks in
 * their order there -- and unpacked at their rank's place at the end.  The
 * uniform collectives are the v-forms with equal counts: one code path.
 * The exception is allgather on ranks in blocks by node, which works on
 * the receive buffer itself (build_allgather_direct): there the packing
 * and the final unpacking were half of its time.
 *
 * Byte counts travel in int-sized MPI calls; a node's or a whole
 * collective's share above INT_MAX bytes goes to the previous module.
 */
#include "ompi_config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll_hanx.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"
#include "opal/util/output.h"

typedef int64_t i64;

static int pack(const void *buf, int count, struct ompi_datatype_t *dtype, char *out, i64 bytes)
{
    int pos = 0;
    if (0 == bytes) return OMPI_SUCCESS;
    return PMPI_Pack(buf, count, (MPI_Datatype)dtype, out, (int)bytes, &pos, MPI_COMM_SELF);
}

static int unpack(const char *in, i64 bytes, void *buf, int count, struct ompi_datatype_t *dtype)
{
    int pos = 0;
    if (0 == bytes) return OMPI_SUCCESS;
    return PMPI_Unpack(in, (int)bytes, &pos, buf, count, (MPI_Datatype)dtype, MPI_COMM_SELF);
}

static void *xmalloc(i64 bytes) { return malloc(bytes > 0 ? (size_t)bytes : 1); }

/* int counts and displacements of `n` blocks of `sizes` bytes; 0 when
 * something does not fit an int. */
static int int_layout(const i64 *sizes, int n, int *counts, int *displs, i64 *total)
{
    i64 t = 0;
    *total = 0;
    for (int i = 0; i < n; ++i) {
        if (sizes[i] > INT_MAX || t > INT_MAX) return 0;
        counts[i] = (int)sizes[i];
        displs[i] = (int)t;
        t += sizes[i];
    }
    *total = t;
    return t <= INT_MAX;
}

/* The byte sizes of every rank's block, in node order, from per-rank
 * counts (NULL: `count` each) of a datatype. */
static void sizes_in_node_order(const mca_coll_hanx_module_t *m, int size, const int *counts,
                                int count, struct ompi_datatype_t *dtype, i64 *out)
{
    const i64 unit = (i64)mca_coll_hanx_bytes(dtype, 1);
    for (int pos = 0; pos < size; ++pos) out[pos] = unit * (counts ? counts[m->rank_at[pos]] : count);
}

/* Each node's share of blocks in node order: out[n] = bytes of node n. */
static void node_totals(const mca_coll_hanx_module_t *m, const i64 *pos_sizes, i64 *out)
{
    for (int n = 0; n < m->nnodes; ++n) {
        out[n] = 0;
        for (int i = 0; i < m->node_size[n]; ++i) out[n] += pos_sizes[m->node_first[n] + i];
    }
}

/* The rank leading the node of `root`. */
static int root_leader(const mca_coll_hanx_module_t *m, int root)
{
    return m->leader[m->nlevels - 2][root];
}

/* ------------------------------------------------------------- gather */

/* Gather every rank's packed block to `root`: on return *all (root only)
 * holds the blocks in node order, their sizes in pos_sizes.  pos_sizes is
 * read on every rank when `known`; otherwise only each rank's own block
 * size is known (my_bytes) and the root's pos_sizes are filled in. */
static int gather_blocks(mca_coll_hanx_module_t *m, struct ompi_communicator_t *comm, int root,
                         const char *mine, i64 my_bytes, i64 *pos_sizes, int known, char **all)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const int nsize = ompi_comm_size(m->cur->node), lead = NULL != HANX_TOP(m);
    const int root_node = m->node_of[root], root_lead = root_leader(m, root);
    i64 *lsizes = xmalloc((i64)nsize * 8), *nsizes = NULL;
    int *cnt = malloc((size_t)(nsize > m->nnodes ? nsize : m->nnodes) * sizeof(int));
    int *dsp = malloc((size_t)(nsize > m->nnodes ? nsize : m->nnodes) * sizeof(int));
    char *nodebuf = NULL;
    i64 ntotal = 0, total = 0;
    int rc = OMPI_SUCCESS;
    *all = NULL;
    if (!lsizes || !cnt || !dsp) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }

    /* 1: my node's blocks to its leader */
    if (known)
        memcpy(lsizes, pos_sizes + m->node_first[m->my_node], (size_t)nsize * 8);
    else
        rc = HANX_NODE_CALL(m, gather, &my_bytes, 1, MPI_INT64_T, lsizes, 1, MPI_INT64_T, 0);
    if (OMPI_SUCCESS != rc) goto out;
    if (lead) {
        if (!int_layout(lsizes, nsize, cnt, dsp, &ntotal)) { rc = OMPI_ERR_VALUE_OUT_OF_BOUNDS; goto out; }
        nodebuf = xmalloc(ntotal);
        if (!nodebuf) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }
    }
    rc = HANX_NODE_CALL(m, gatherv, mine, (int)my_bytes, MPI_BYTE, nodebuf, cnt, dsp, MPI_BYTE, 0);
    if (OMPI_SUCCESS != rc) goto out;

    /* 2: the leaders' node buffers to the root's leader, in node order */
    if (lead) {
        nsizes = xmalloc((i64)m->nnodes * 8);
        if (!nsizes) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }
        if (known) {
            node_totals(m, pos_sizes, nsizes);
        } else {
            rc = HANX_TOP_CALL(m, gather, &ntotal, 1, MPI_INT64_T, nsizes, 1, MPI_INT64_T, root_node);
            if (OMPI_SUCCESS != rc) goto out;
        }
        const int at_root = m->my_node == root_node;
        if (at_root) {
            if (!int_layout(nsizes, m->nnodes, cnt, dsp, &total)) { rc = OMPI_ERR_VALUE_OUT_OF_BOUNDS; goto out; }
            *all = xmalloc(total);
            if (!*all) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }
        }
        rc = HANX_TOP_CALL(m, gatherv, nodebuf, (int)ntotal, MPI_BYTE, *all, cnt, dsp, MPI_BYTE,
                           root_node);
        if (OMPI_SUCCESS != rc) goto out;
    }
    /* 3: a root that does not lead its node gets it from its leader; the
     * root knows every size (gatherv's counts) */
    if (root != root_lead) {
        if (rank == root_lead) {
            rc = MCA_PML_CALL(send(*all, (int)total, MPI_BYTE, root, MCA_COLL_BASE_TAG_GATHER,
                                   MCA_PML_BASE_SEND_STANDARD, comm));
            free(*all);
            *all = NULL;
        } else if (rank == root) {
            total = 0;
            for (int pos = 0; pos < size; ++pos) total += pos_sizes[pos];
            *all = xmalloc(total);
            if (!*all) rc = OMPI_ERR_OUT_OF_RESOURCE;
            if (OMPI_SUCCESS == rc)
                rc = MCA_PML_CALL(recv(*all, (int)total, MPI_BYTE, root_lead,
                                       MCA_COLL_BASE_TAG_GATHER, comm, MPI_STATUS_IGNORE));
        }
    }
out:
    if (OMPI_SUCCESS != rc) {
        free(*all);
        *all = NULL;
    }
    free(lsizes);
    free(nsizes);
    free(cnt);
    free(dsp);
    free(nodebuf);
    return rc;
}

/* Unpack blocks in node order into rbuf: rank r's block goes to
 * counts[r] (or `count`) elements of dtype at displs[r] (or r * count)
 * elements; `skip` (a rank, or -1) is left alone. */
static int unpack_all(const mca_coll_hanx_module_t *m, int size, const char *all,
                      const i64 *pos_sizes, void *rbuf, const int *counts, const int *displs,
                      int count, struct ompi_datatype_t *dtype, int skip)
{
    i64 off = 0;
    int rc = OMPI_SUCCESS;
    for (int pos = 0; pos < size && OMPI_SUCCESS == rc; ++pos) {
        const int r = m->rank_at[pos];
        if (r != skip) {
            const size_t at = displs ? (size_t)(ptrdiff_t)displs[r] : (size_t)r * (size_t)count;
            rc = unpack(all + off, pos_sizes[pos], mca_coll_hanx_elem(rbuf, dtype, at),
                        counts ? counts[r] : count, dtype);
        }
        off += pos_sizes[pos];
    }
    return rc;
}

/* My own contribution, packed: sbuf, or (in place) my slot of rbuf. */
static char *pack_mine(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                       const void *rbuf, int rcount, struct ompi_datatype_t *rdtype, size_t slot,
                       i64 *bytes, int *rc)
{
    if (MPI_IN_PLACE == sbuf) {
        sbuf = mca_coll_hanx_elem(rbuf, rdtype, slot);
        scount = rcount;
        sdtype = rdtype;
    }
    *bytes = (i64)mca_coll_hanx_bytes(sdtype, (size_t)scount);
    char *p = xmalloc(*bytes);
    *rc = p ? pack(sbuf, scount, sdtype, p, *bytes) : OMPI_ERR_OUT_OF_RESOURCE;
    return p;
}

static int gather_common(mca_coll_hanx_module_t *m, const void *sbuf, int scount,
                         struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                         const int *displs, int rcount, struct ompi_datatype_t *rdtype, int root,
                         struct ompi_communicator_t *comm, int known)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    int rc;
    i64 my_bytes, *pos_sizes = xmalloc((i64)size * 8);
    if (!pos_sizes) return OMPI_ERR_OUT_OF_RESOURCE;
    /* (in place is the root's: its slot is its contribution) */
    const size_t slot = (MPI_IN_PLACE != sbuf) ? 0
                        : displs ? (size_t)(ptrdiff_t)displs[rank] : (size_t)rank * (size_t)rcount;
    char *mine = pack_mine(sbuf, scount, sdtype, rbuf, rcounts ? rcounts[rank] : rcount, rdtype,
                           slot, &my_bytes, &rc);
    char *all = NULL;
    if (known || rank == root) sizes_in_node_order(m, size, rcounts, rcount, rdtype, pos_sizes);
    if (OMPI_SUCCESS == rc)
        rc = gather_blocks(m, comm, root, mine, my_bytes, pos_sizes, known, &all);
    if (OMPI_SUCCESS == rc && rank == root)
        rc = unpack_all(m, size, all, pos_sizes, rbuf, rcounts, displs, rcount, rdtype,
                        MPI_IN_PLACE == sbuf ? root : -1);
    free(all);
    free(mine);
    free(pos_sizes);
    return rc;
}

int mca_coll_hanx_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    /* every rank's block has the size of mine (root: of its recv block) */
    const i64 block = rank == root ? (i64)mca_coll_hanx_bytes(rdtype, (size_t)rcount)
                                   : (i64)mca_coll_hanx_bytes(sdtype, (size_t)scount);
    if (!mca_coll_hanx_use(m, comm, COLLX_COLL_GATHER, (size_t)block, NULL) || block * size > INT_MAX)
        return m->prev.gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                              m->prev.gather_module);
    HANX_LOG(10, "coll:hanx: gather count %d root %d on %s", scount, root, comm->c_name);
    if (0 == block) return OMPI_SUCCESS;
    /* non-root ranks know the size of the root's blocks as their own */
    if (rank != root) {
        rcount = (int)block;
        rdtype = MPI_BYTE;
    }
    return gather_common(m, sbuf, scount, sdtype, rbuf, NULL, NULL, rcount, rdtype, root, comm, 1);
}

int mca_coll_hanx_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, const int *rcounts, const int *displs,
                          struct ompi_datatype_t *rdtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    if (!mca_coll_hanx_use(m, comm, COLLX_COLL_GATHERV, 0, NULL))
        return m->prev.gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm,
                               m->prev.gatherv_module);
    HANX_LOG(10, "coll:hanx: gatherv root %d on %s", root, comm->c_name);
    /* only the root knows every size: the sizes travel with the data; a
     * total above INT_MAX bytes is caught where it is known */
    return gather_common(m, sbuf, scount, sdtype, rbuf, ompi_comm_rank(comm) == root ? rcounts : NULL,
                         displs, 0, rdtype, root, comm, 0);
}

/* ---------------------------------------------------------- allgather */

/* The layout arrays of an allgather's blocks (my node's members' blocks,
 * the nodes' shares): 0 when one could not be allocated (blocks_free frees
 * what was). */
static int blocks_alloc(hanx_blocks_t *b, int nsize, int nnodes)
{
    b->cnt = malloc((size_t)nsize * sizeof(int));
    b->dsp = malloc((size_t)nsize * sizeof(int));
    b->ncnt = malloc((size_t)nnodes * sizeof(int));
    b->ndsp = malloc((size_t)nnodes * sizeof(int));
    return b->cnt && b->dsp && b->ncnt && b->ndsp;
}

static void blocks_free(hanx_blocks_t *b)
{
    free(b->cnt);
    free(b->dsp);
    free(b->ncnt);
    free(b->ndsp);
}

/* An allgather's stages on p (initialised with the whole buffer `all` as
 * its one segment), whatever the blocks' form: the core's (collx_hier_plan:
 * my node's blocks to its leader, into the node's share at node_at; the
 * leaders exchange their nodes' shares of b->all in place; each leader
 * broadcasts all of it over its node), then, with unpack, the blocks'
 * finish() (a local stage). */
static int allgather_stages(const mca_coll_hanx_module_t *m, const hanx_view_t *v,
                            hanx_pipeline_t *p, hanx_blocks_t *b, char *node_at, int unpack)
{
    const collx_hier_t h = mca_coll_hanx_hier(m, ompi_comm_size(p->comm));
    int size[HANX_MAX_LEVELS] = {0};
    for (int k = 0; k < m->nlevels; ++k) size[k] = v->lvl[k] ? ompi_comm_size(v->lvl[k]) : 0;
    collx_hier_plan_t plan;
    if (COLLX_OK != collx_hier_plan(&h, COLLX_COLL_ALLGATHER, ompi_comm_rank(p->comm), 0, size, 0,
                                    &plan))
        return OMPI_ERR_BAD_PARAM;
    p->seg_count = p->count; /* one segment */
    p->blk = b;
    void *const bufs[] = {[COLLX_HBUF_NONE] = NULL, [COLLX_HBUF_IN_PLACE] = MPI_IN_PLACE,
                          [COLLX_HBUF_SEND] = (void *)b->mine, [COLLX_HBUF_RECV] = b->all,
                          [COLLX_HBUF_ACC] = NULL, [COLLX_HBUF_NODE] = node_at};
    mca_coll_hanx_add_plan(p, &plan, bufs);
    if (unpack) mca_coll_hanx_add_stage(p, 3, HANX_LOCAL, ST_LOCAL, 0, NULL, NULL);
    return OMPI_SUCCESS;
}

/* allgather's blocks and what finishing it takes: unpacking `all` into
 * the receive buffer */
typedef struct ag_blocks {
    hanx_blocks_t b;
    char *mine_mem;
    i64 *pos_sizes;
    const mca_coll_hanx_module_t *m;
    int size, rcount, skip;
    void *rbuf;
    const int *rcounts, *displs;
    struct ompi_datatype_t *rdtype;
} ag_blocks_t;

static int ag_finish(hanx_blocks_t *hb)
{
    ag_blocks_t *a = (ag_blocks_t *)hb;
    return unpack_all(a->m, a->size, a->b.all, a->pos_sizes, a->rbuf, a->rcounts, a->displs,
                      a->rcount, a->rdtype, a->skip);
}

static void ag_release(hanx_blocks_t *hb)
{
    ag_blocks_t *a = (ag_blocks_t *)hb;
    free(a->mine_mem);
    blocks_free(&a->b);
    free(a->b.all);
    free(a->pos_sizes);
    free(a);
}

/* The stages of an allgather(v) on view v (allgather_stages) on packed
 * blocks: gathered straight into the node's place in `all`, unpacked at
 * the end.  pos_sizes (taken: released with the blocks) are the
 * blocks' sizes in node order; everything fits an int (checked by the
 * caller). */
static int build_allgather(mca_coll_hanx_module_t *m, hanx_view_t *v, hanx_pipeline_t *p,
                           const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, const int *rcounts, const int *displs, int rcount,
                           struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                           i64 *pos_sizes)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const int nsize = ompi_comm_size(v->node);
    int rc;
    i64 my_bytes, ntotal, total;
    ag_blocks_t *a = calloc(1, sizeof(*a));
    if (!a) {
        free(pos_sizes);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    a->b.finish = ag_finish;
    a->b.release = ag_release;
    a->pos_sizes = pos_sizes;
    a->m = m;
    a->size = size;
    a->rcount = rcount;
    a->skip = MPI_IN_PLACE == sbuf ? rank : -1;
    a->rbuf = rbuf;
    a->rcounts = rcounts;
    a->displs = displs;
    a->rdtype = rdtype;
    const size_t slot = displs ? (size_t)(ptrdiff_t)displs[rank] : (size_t)rank * (size_t)rcount;
    a->mine_mem = pack_mine(sbuf, scount, sdtype, rbuf, rcounts ? rcounts[rank] : rcount, rdtype,
                            slot, &my_bytes, &rc);
    a->b.mine = a->mine_mem;
    a->b.my_count = (int)my_bytes;
    a->b.my_type = a->b.type = MPI_BYTE;
    const int arrays = blocks_alloc(&a->b, nsize, m->nnodes);
    i64 *nsizes = xmalloc((i64)m->nnodes * 8);
    if (OMPI_SUCCESS == rc && (!arrays || !nsizes)) rc = OMPI_ERR_OUT_OF_RESOURCE;
    if (OMPI_SUCCESS == rc) {
        node_totals(m, pos_sizes, nsizes);
        int_layout(nsizes, m->nnodes, a->b.ncnt, a->b.ndsp, &total);
        int_layout(pos_sizes + m->node_first[m->my_node], nsize, a->b.cnt, a->b.dsp, &ntotal);
        a->b.all = xmalloc(total);
        if (!a->b.all) rc = OMPI_ERR_OUT_OF_RESOURCE;
    }
    free(nsizes);
    if (OMPI_SUCCESS != rc) {
        ag_release(&a->b);
        return rc;
    }
    mca_coll_hanx_pipeline_init(p, v, comm, MPI_BYTE, NULL, (size_t)total, 0);
    rc = allgather_stages(m, v, p, &a->b, a->b.all + a->b.ndsp[m->my_node], 1);
    if (OMPI_SUCCESS != rc) ag_release(&a->b);
    return rc;
}

static void direct_release(hanx_blocks_t *b)
{
    blocks_free(b);
    free(b);
}

/* The stages of an allgather (allgather_stages) where every node's ranks
 * are consecutive (m->blocks): rank r's block is at r * rcount elements of
 * rbuf, so each node's blocks are one run of rbuf, in rank order, and the
 * stages work on rbuf itself with the caller's datatypes -- nothing
 * packed, nothing copied at the end; the node's leader is its lowest rank.
 * Counts are elements of rdtype; size * rcount fits an int (checked by the
 * caller). */
static int build_allgather_direct(mca_coll_hanx_module_t *m, hanx_view_t *v, hanx_pipeline_t *p,
                                  const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const int nsize = ompi_comm_size(v->node);
    const int first = m->node_first[m->my_node]; /* (in blocks, positions are ranks) */
    hanx_blocks_t *b = calloc(1, sizeof(*b));
    if (!b) return OMPI_ERR_OUT_OF_RESOURCE;
    b->release = direct_release;
    if (!blocks_alloc(b, nsize, m->nnodes)) {
        direct_release(b);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < nsize; ++i) {
        b->cnt[i] = rcount;
        b->dsp[i] = i * rcount;
    }
    int even = 1; /* (nodes of one size in rank order: one node's share after the other) */
    for (int n = 0; n < m->nnodes; ++n) {
        b->ncnt[n] = m->node_size[n] * rcount;
        b->ndsp[n] = m->node_first[n] * rcount;
        even = even && b->ncnt[n] == b->ncnt[0] && m->node_first[n] == n * m->node_size[0];
    }
    if (even) b->ring_count = (size_t)size * (size_t)rcount;
    b->type = rdtype;
    b->all = rbuf;
    if (MPI_IN_PLACE == sbuf) { /* my block is in its place: the leader's gatherv says so */
        b->mine = rank == first ? MPI_IN_PLACE : mca_coll_hanx_elem(rbuf, rdtype, (size_t)rank * (size_t)rcount);
        b->my_count = rcount;
        b->my_type = rdtype;
    } else {
        b->mine = sbuf;
        b->my_count = scount;
        b->my_type = sdtype;
    }
    mca_coll_hanx_pipeline_init(p, v, comm, rdtype, NULL, (size_t)size * (size_t)rcount, 0);
    const int rc = allgather_stages(
        m, v, p, b, mca_coll_hanx_elem(rbuf, rdtype, (size_t)first * (size_t)rcount), 0);
    if (OMPI_SUCCESS != rc) {
        direct_release(b);
        return rc;
    }
    HANX_LOG(20, "coll:hanx: allgather on rbuf in rank order (nodes' ranks consecutive)");
    return OMPI_SUCCESS;
}

/* The leaders' stage of an allgather on the receive buffer: the collx
 * ring where the choice's leaders' algorithm is the ring and the nodes'
 * shares allow it (hanx_blocks_t.ring_count), else their module; said at
 * verbose 10. */
static void leaders_ring(const mca_coll_hanx_module_t *m, hanx_pipeline_t *p,
                         const hanx_choice_t *ch, const char *form)
{
    if (COLLX_TREE_RING != ch->up_tree) return;
    const int ring = p->blk->ring_count > 0;
    if (ring) p->tree[m->nlevels - 1] = COLLX_TREE_RING;
    HANX_LOG(10, "coll:hanx: %sallgather on %s: the leaders' allgather on %s", form,
             p->comm->c_name, ring ? "the collx ring" : "their module (nodes of different sizes)");
}

/* 1 when the choice is the node ring (a tuning rule's "node_ring"). */
static int is_node_ring(const hanx_choice_t *ch)
{
    return ch->algorithm && !strcmp(ch->algorithm, "node_ring");
}

/* The node ring: allgather(v) as every rank's block broadcast at once
 * round the nodes' leaders, each fanning out into its node, on the
 * receive buffer with the caller's datatype (collx_allgather_start;
 * nothing packed), in the choice's segments (default: the topo tree's,
 * collx_tree_segment_bytes).  rcounts/displs NULL: rcount each, in rank order.  Blocking when
 * req is NULL.  1 when it ran (*rc its status); 0 when the core does not
 * take rdtype (zero or negative extent): the caller runs the call another
 * way.  Takes P tags of comm's non-blocking space. */
static int node_ring(const mca_coll_hanx_module_t *m, const hanx_choice_t *ch, const void *sbuf,
                     int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                     const int *displs, int rcount, struct ompi_datatype_t *rdtype,
                     struct ompi_communicator_t *comm, ompi_request_t **req, int *rc)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    collx_dtype_t d;
    collx_glue_dtype(&d, rdtype);
    if (!collx_dtype_supported(&d)) return 0;
    const char *form = req ? "i" : "";
    HANX_LOG(10, "coll:hanx: %sallgather%s on %s: node ring (every rank's block at once round "
                 "the nodes)", form, rcounts ? "v" : "", comm->c_name);
    size_t *cnt = malloc((size_t)size * sizeof(size_t)), *dsp = malloc((size_t)size * sizeof(size_t));
    size_t total = 0;
    *rc = cnt && dsp ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
    for (int r = 0; OMPI_SUCCESS == *rc && r < size; ++r) {
        cnt[r] = rcounts ? (size_t)rcounts[r] : (size_t)rcount;
        dsp[r] = displs ? (size_t)(ptrdiff_t)displs[r] : (size_t)r * (size_t)rcount;
        total += cnt[r];
    }
    if (OMPI_SUCCESS == *rc && MPI_IN_PLACE != sbuf) /* my block into its place */
        *rc = ompi_datatype_sndrcv(sbuf, scount, sdtype, mca_coll_hanx_elem(rbuf, rdtype, dsp[rank]),
                                   (int)cnt[rank], rdtype);
    collx_request_t *r = NULL;
    collx_notify_t nt;
    if (OMPI_SUCCESS == *rc) {
        r = collx_glue_request_new(&nt);
        if (NULL == r) *rc = OMPI_ERR_OUT_OF_RESOURCE;
    }
    int started = COLLX_ERR_ARG; /* (not tried) */
    if (OMPI_SUCCESS == *rc) {
        collx_transport_t t;
        collx_glue_transport(&t, comm);
        /* (the segment cuts every rank's broadcast alike: from the average
         * block, which every rank knows, not from its own) */
        const size_t block = mca_coll_hanx_bytes(rdtype, total) / (size_t)size;
        const collx_tuning_t tun = {
            COLLX_TREE_TOPO, 2,
            ch->segment_bytes ? ch->segment_bytes
                              : collx_tree_segment_bytes(COLLX_COLL_ALLGATHER, COLLX_TREE_TOPO,
                                                         block, size, 2, 0, 0),
            8, 8, NULL};
        const int tag = ompi_coll_base_nbc_reserve_tags(comm, size);
        started = collx_allgather_start(&t, rbuf, cnt, dsp, &d, m->leader[m->nlevels - 2], tag,
                                        &tun, &nt, &r->op);
    }
    free(cnt);
    free(dsp);
    if (r) *rc = collx_glue_request_finish(r, started, req);
    return 1;
}

static int allgather_common(mca_coll_hanx_module_t *m, const void *sbuf, int scount,
                            struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                            const int *displs, int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, i64 *pos_sizes)
{
    hanx_pipeline_t p;
    int rc = build_allgather(m, m->cur, &p, sbuf, scount, sdtype, rbuf, rcounts, displs, rcount,
                             rdtype, comm, pos_sizes);
    if (OMPI_SUCCESS != rc) return rc;
    return mca_coll_hanx_run_blocking(m, &p, NULL);
}

int mca_coll_hanx_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    const int size = ompi_comm_size(comm);
    const i64 block = (i64)mca_coll_hanx_bytes(rdtype, (size_t)rcount);
    hanx_choice_t ch;
    if (!mca_coll_hanx_use(m, comm, COLLX_COLL_ALLGATHER, (size_t)block, &ch) || block * size > INT_MAX) {
        return HANX_PREVIOUS_CALL(m, &ch, comm, allgather, sbuf, scount, sdtype, rbuf, rcount,
                                  rdtype);
    }
    HANX_LOG(10, "coll:hanx: allgather count %d on %s", rcount, comm->c_name);
    if (0 == block) return OMPI_SUCCESS;
    int rc;
    if (is_node_ring(&ch) && node_ring(m, &ch, sbuf, scount, sdtype, rbuf, NULL, NULL, rcount,
                                       rdtype, comm, NULL, &rc))
        return rc;
    if (m->blocks) {
        hanx_pipeline_t p;
        rc = build_allgather_direct(m, m->cur, &p, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                    comm);
        if (OMPI_SUCCESS != rc) return rc;
        leaders_ring(m, &p, &ch, "");
        return mca_coll_hanx_run_blocking(m, &p, NULL);
    }
    i64 *pos_sizes = xmalloc((i64)size * 8);
    if (!pos_sizes) return OMPI_ERR_OUT_OF_RESOURCE;
    sizes_in_node_order(m, size, NULL, rcount, rdtype, pos_sizes);
    /* (pos_sizes: taken) */
    return allgather_common(m, sbuf, scount, sdtype, rbuf, NULL, NULL, rcount, rdtype, comm,
                            pos_sizes);
}

int mca_coll_hanx_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    const int size = ompi_comm_size(comm);
    const i64 block = (i64)mca_coll_hanx_bytes(rdtype, (size_t)rcount);
    hanx_choice_t ch;
    hanx_view_t *v = NULL;
    if (block > 0 && block * size <= INT_MAX)
        v = mca_coll_hanx_use_nb(m, comm, COLLX_COLL_ALLGATHER, (size_t)block, &ch);
    if (NULL == v)
        return m->prev.iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                  m->prev.iallgather_module);
    HANX_LOG(10, "coll:hanx: iallgather count %d on %s", rcount, comm->c_name);
    hanx_pipeline_t p;
    int rc;
    if (is_node_ring(&ch) && node_ring(m, &ch, sbuf, scount, sdtype, rbuf, NULL, NULL, rcount,
                                       rdtype, comm, request, &rc))
        return rc;
    if (m->blocks) {
        rc = build_allgather_direct(m, v, &p, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
        if (OMPI_SUCCESS == rc) leaders_ring(m, &p, &ch, "i");
    } else {
        i64 *pos_sizes = xmalloc((i64)size * 8);
        if (!pos_sizes) return OMPI_ERR_OUT_OF_RESOURCE;
        sizes_in_node_order(m, size, NULL, rcount, rdtype, pos_sizes);
        rc = build_allgather(m, v, &p, sbuf, scount, sdtype, rbuf, NULL, NULL, rcount, rdtype,
                             comm, pos_sizes);
    }
    if (OMPI_SUCCESS != rc) return rc;
    return mca_coll_hanx_start_nb(m, &p, NULL, request);
}

int mca_coll_hanx_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, const int *rcounts, const int *displs,
                             struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    const int size = ompi_comm_size(comm);
    hanx_choice_t ch;
    ch.flat_previous = 0; /* (where mca_coll_hanx_use is not asked) */
    i64 *pos_sizes = NULL;
    int ok = mca_coll_hanx_ready(m, comm);
    if (ok) {
        pos_sizes = xmalloc((i64)size * 8);
        if (!pos_sizes) return OMPI_ERR_OUT_OF_RESOURCE;
        sizes_in_node_order(m, size, rcounts, 0, rdtype, pos_sizes);
        /* every rank knows every count: the same verdict everywhere -- no
         * node's share nor the total above INT_MAX bytes */
        i64 total = 0, *nsizes = xmalloc((i64)m->nnodes * 8);
        if (!nsizes) {
            free(pos_sizes);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        node_totals(m, pos_sizes, nsizes);
        for (int n = 0; n < m->nnodes; ++n) {
            if (nsizes[n] > INT_MAX) ok = 0;
            total += nsizes[n];
        }
        free(nsizes);
        ok = ok && total <= INT_MAX && mca_coll_hanx_use(m, comm, COLLX_COLL_ALLGATHERV, (size_t)total, &ch);
    }
    if (!ok) {
        free(pos_sizes);
        return HANX_PREVIOUS_CALL(m, &ch, comm, allgatherv, sbuf, scount, sdtype, rbuf, rcounts,
                                  displs, rdtype);
    }
    HANX_LOG(10, "coll:hanx: allgatherv on %s", comm->c_name);
    int rc;
    if (is_node_ring(&ch) && node_ring(m, &ch, sbuf, scount, sdtype, rbuf, rcounts, displs, 0,
                                       rdtype, comm, NULL, &rc)) {
        free(pos_sizes);
        return rc;
    }
    /* (pos_sizes: taken) */
    return allgather_common(m, sbuf, scount, sdtype, rbuf, rcounts, displs, 0, rdtype, comm,
                            pos_sizes);
}

/* ------------------------------------------------------------ scatter */

/* The root packs every rank's block in node order; the root's leader
 * scatters node chunks to the leaders, which scatter them in their nodes;
 * every rank unpacks its own.  The leaders learn their members' sizes from
 * the members (each knows its own receive size). */
static int scatter_common(mca_coll_hanx_module_t *m, const void *sbuf, const int *scounts,
                          const int *displs, int scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                          struct ompi_communicator_t *comm)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const int nsize = ompi_comm_size(m->cur->node), lead = NULL != HANX_TOP(m);
    const int root_node = m->node_of[root], root_lead = root_leader(m, root);
    const int in_place = rank == root && MPI_IN_PLACE == rbuf;
    i64 my_bytes = in_place ? (i64)mca_coll_hanx_bytes(sdtype, (size_t)(scounts ? scounts[root] : scount))
                            : (i64)mca_coll_hanx_bytes(rdtype, (size_t)rcount);
    i64 *lsizes = xmalloc((i64)nsize * 8), *nsizes = xmalloc((i64)m->nnodes * 8);
    i64 *pos_sizes = xmalloc((i64)size * 8);
    int *cnt = malloc((size_t)(nsize > m->nnodes ? nsize : m->nnodes) * sizeof(int));
    int *dsp = malloc((size_t)(nsize > m->nnodes ? nsize : m->nnodes) * sizeof(int));
    char *all = NULL, *nodebuf = NULL, *mine = NULL;
    i64 total = 0, ntotal = 0;
    ompi_request_t *to_lead = MPI_REQUEST_NULL;
    int rc = OMPI_SUCCESS;
    if (!lsizes || !nsizes || !pos_sizes || !cnt || !dsp) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }

    /* the root packs everything */
    if (rank == root) {
        sizes_in_node_order(m, size, scounts, scount, sdtype, pos_sizes);
        for (int pos = 0; pos < size; ++pos) total += pos_sizes[pos];
        all = xmalloc(total);
        if (!all) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }
        i64 off = 0;
        for (int pos = 0; pos < size && OMPI_SUCCESS == rc; ++pos) {
            const int r = m->rank_at[pos];
            const size_t at = displs ? (size_t)(ptrdiff_t)displs[r] : (size_t)r * (size_t)scount;
            rc = pack(mca_coll_hanx_elem(sbuf, sdtype, at), scounts ? scounts[r] : scount, sdtype,
                      all + off, pos_sizes[pos]);
            off += pos_sizes[pos];
        }
        if (OMPI_SUCCESS != rc) goto out;
        if (root != root_lead) /* its leader sends the node chunks out (the
                                * root joins its node's collectives meanwhile) */
            rc = MCA_PML_CALL(isend(all, (int)total, MPI_BYTE, root_lead, MCA_COLL_BASE_TAG_SCATTER,
                                    MCA_PML_BASE_SEND_STANDARD, comm, &to_lead));
        if (OMPI_SUCCESS != rc) goto out;
    }
    /* leaders learn their members' sizes, then their node's total */
    rc = HANX_NODE_CALL(m, gather, &my_bytes, 1, MPI_INT64_T, lsizes, 1, MPI_INT64_T, 0);
    if (OMPI_SUCCESS != rc) goto out;
    if (lead) {
        if (!int_layout(lsizes, nsize, cnt, dsp, &ntotal)) { rc = OMPI_ERR_VALUE_OUT_OF_BOUNDS; goto out; }
        rc = HANX_TOP_CALL(m, gather, &ntotal, 1, MPI_INT64_T, nsizes, 1, MPI_INT64_T, root_node);
        if (OMPI_SUCCESS != rc) goto out;
        if (rank == root_lead) {
            if (!int_layout(nsizes, m->nnodes, cnt, dsp, &total)) { rc = OMPI_ERR_VALUE_OUT_OF_BOUNDS; goto out; }
            if (rank != root) {
                all = xmalloc(total);
                if (!all) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }
                rc = MCA_PML_CALL(recv(all, (int)total, MPI_BYTE, root, MCA_COLL_BASE_TAG_SCATTER,
                                       comm, MPI_STATUS_IGNORE));
                if (OMPI_SUCCESS != rc) goto out;
            }
        }
        nodebuf = xmalloc(ntotal);
        if (!nodebuf) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }
        rc = HANX_TOP_CALL(m, scatterv, all, cnt, dsp, MPI_BYTE, nodebuf, (int)ntotal, MPI_BYTE,
                           root_node);
        if (OMPI_SUCCESS != rc) goto out;
        int_layout(lsizes, nsize, cnt, dsp, &ntotal);
    }
    mine = xmalloc(my_bytes);
    if (!mine) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }
    rc = HANX_NODE_CALL(m, scatterv, nodebuf, cnt, dsp, MPI_BYTE, mine, (int)my_bytes, MPI_BYTE, 0);
    if (OMPI_SUCCESS == rc && !in_place) rc = unpack(mine, my_bytes, rbuf, rcount, rdtype);
out:
    if (MPI_REQUEST_NULL != to_lead) {
        int wrc = ompi_request_wait(&to_lead, MPI_STATUS_IGNORE);
        if (OMPI_SUCCESS == rc) rc = wrc;
    }
    free(lsizes);
    free(nsizes);
    free(pos_sizes);
    free(cnt);
    free(dsp);
    free(all);
    free(nodebuf);
    free(mine);
    return rc;
}

int mca_coll_hanx_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const i64 block = rank == root ? (i64)mca_coll_hanx_bytes(sdtype, (size_t)scount)
                                   : (i64)mca_coll_hanx_bytes(rdtype, (size_t)rcount);
    if (!mca_coll_hanx_use(m, comm, COLLX_COLL_SCATTER, (size_t)block, NULL) || block * size > INT_MAX)
        return m->prev.scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                               m->prev.scatter_module);
    HANX_LOG(10, "coll:hanx: scatter count %d root %d on %s", rcount, root, comm->c_name);
    if (0 == block) return OMPI_SUCCESS;
    return scatter_common(m, sbuf, NULL, NULL, scount, sdtype, rbuf, rcount, rdtype, root, comm);
}

int mca_coll_hanx_scatterv(const void *sbuf, const int *scounts, const int *displs,
                           struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, int root,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    if (!mca_coll_hanx_use(m, comm, COLLX_COLL_SCATTERV, 0, NULL))
        return m->prev.scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm,
                                m->prev.scatterv_module);
    HANX_LOG(10, "coll:hanx: scatterv root %d on %s", root, comm->c_name);
    return scatter_common(m, sbuf, scounts, displs, 0, sdtype, rbuf, rcount, rdtype, root, comm);
}

/* ----------------------------------------------------------- alltoall */

/* Members hand their packed send blocks (ordered by destination in node
 * order) and their send/receive sizes to the leader; leaders regroup them
 * per destination node, exchange, regroup per destination member, and
 * scatter; members unpack per source.  Sizes never travel between nodes:
 * what a leader receives is what its members expect. */
static int alltoall_common(mca_coll_hanx_module_t *m, const void *sbuf, const int *scounts,
                           const int *sdispls, struct ompi_datatype_t *sdtype, void *rbuf,
                           const int *rcounts, const int *rdispls,
                           struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm)
{
    const int size = ompi_comm_size(comm), nsize = ompi_comm_size(m->cur->node);
    const int lead = NULL != HANX_TOP(m), N = m->nnodes;
    i64 *ssz = xmalloc((i64)size * 8), *rsz = xmalloc((i64)size * 8); /* mine, node order */
    i64 *S = NULL, *R = NULL;   /* leader: [member][pos] sizes of my node */
    int *cnt = malloc((size_t)(size > nsize ? size : nsize) * sizeof(int));
    int *dsp = malloc((size_t)(size > nsize ? size : nsize) * sizeof(int));
    char *mine = NULL, *nodebuf = NULL, *out = NULL, *in = NULL, *back = NULL, *got = NULL;
    i64 my_send = 0, my_recv = 0, t;
    int rc = OMPI_SUCCESS;
    if (!ssz || !rsz || !cnt || !dsp) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }
    const i64 su = (i64)mca_coll_hanx_bytes(sdtype, 1), ru = (i64)mca_coll_hanx_bytes(rdtype, 1);
    for (int pos = 0; pos < size; ++pos) {
        const int r = m->rank_at[pos];
        ssz[pos] = su * scounts[r];
        rsz[pos] = ru * rcounts[r];
        my_send += ssz[pos];
        my_recv += rsz[pos];
    }
    if (my_send > INT_MAX || my_recv > INT_MAX) { rc = OMPI_ERR_VALUE_OUT_OF_BOUNDS; goto out; }
    /* pack my blocks by destination in node order */
    mine = xmalloc(my_send);
    if (!mine) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }
    t = 0;
    for (int pos = 0; pos < size && OMPI_SUCCESS == rc; ++pos) {
        const int r = m->rank_at[pos];
        rc = pack(mca_coll_hanx_elem(sbuf, sdtype, (size_t)(ptrdiff_t)sdispls[r]), scounts[r],
                  sdtype, mine + t, ssz[pos]);
        t += ssz[pos];
    }
    if (OMPI_SUCCESS != rc) goto out;
    /* 1: sizes and blocks to the leader */
    if (lead) {
        S = xmalloc((i64)nsize * size * 8);
        R = xmalloc((i64)nsize * size * 8);
        if (!S || !R) { rc = OMPI_ERR_OUT_OF_RESOURCE; goto out; }
    }
    rc = HANX_NODE_CALL(m, gather, ssz, size, MPI_INT64_T, S, size, MPI_INT64_T, 0);
    if (OMPI_SUCCESS == rc)
        rc = HANX_NODE_CALL(m, gather, rsz, size, MPI_INT64_T, R, size, MPI_INT64_T, 0);
    if (OMPI_SUCCESS != rc) goto out;
    i64 ntotal = 0;
    if (lead) {
        for (int i = 0; i < nsize; ++i) {
            i64 s = 0;
            for (int pos = 0; pos < size; ++pos) s += S[(i64)i * size + pos];
            cnt[i] = (int)s;
            dsp[i] = (int)ntotal;
            ntotal += s;
            if (ntotal > INT_MAX || s > INT_MAX) { rc = OMPI_ERR_VALUE_OUT_OF_BOUNDS; break; }
        }
        if (OMPI_SUCCESS == rc && !(nodebuf = xmalloc(ntotal))) rc = OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* (a leader that failed above still joins, receiving nothing useful) */
    {
        int lrc = HANX_NODE_CALL(m, gatherv, mine, (int)my_send, MPI_BYTE, nodebuf, cnt, dsp,
                                 MPI_BYTE, 0);
        if (OMPI_SUCCESS == rc) rc = lrc;
    }
    if (OMPI_SUCCESS != rc && !lead) goto out;
    if (lead) {
        /* 2: regroup per destination node: for node j, member by member,
         * that member's blocks to node j's ranks */
        i64 out_total = ntotal, in_total = 0;
        out = xmalloc(out_total);
        int *scnt = malloc((size_t)N * sizeof(int)), *sdsp = malloc((size_t)N * sizeof(int));
        int *rcnt = malloc((size_t)N * sizeof(int)), *rdsp = malloc((size_t)N * sizeof(int));
        if (!out || !scnt || !sdsp || !rcnt || !rdsp) rc = OMPI_ERR_OUT_OF_RESOURCE;
        if (OMPI_SUCCESS == rc) {
            i64 o = 0;
            for (int j = 0; j < N; ++j) {
                const int first = m->node_first[j], last = first + m->node_size[j];
                sdsp[j] = (int)o;
                for (int i = 0; i < nsize; ++i) {
                    i64 src = dsp[i]; /* member i's blocks in nodebuf */
                    for (int pos = 0; pos < first; ++pos) src += S[(i64)i * size + pos];
                    for (int pos = first; pos < last; ++pos) {
                        const i64 b = S[(i64)i * size + pos];
                        memcpy(out + o, nodebuf + src, (size_t)b);
                        o += b;
                        src += b;
                    }
                }
                scnt[j] = (int)(o - sdsp[j]);
            }
            /* what node j sends me: its ranks' blocks to my members */
            for (int j = 0; j < N; ++j) {
                const int first = m->node_first[j], last = first + m->node_size[j];
                i64 b = 0;
                for (int pos = first; pos < last; ++pos)
                    for (int d = 0; d < nsize; ++d) b += R[(i64)d * size + pos];
                rdsp[j] = (int)in_total;
                rcnt[j] = (int)b;
                in_total += b;
            }
            if (in_total > INT_MAX) rc = OMPI_ERR_VALUE_OUT_OF_BOUNDS;
        }
        if (OMPI_SUCCESS == rc && !(in = xmalloc(in_total))) rc = OMPI_ERR_OUT_OF_RESOURCE;
        if (OMPI_SUCCESS == rc)
            rc = HANX_TOP_CALL(m, alltoallv, out, scnt, sdsp, MPI_BYTE, in, rcnt, rdsp, MPI_BYTE);
        /* 3: regroup per member of mine: sources in node order.  In `in`,
         * node j's chunk is source by source, each with a block per
         * member of mine. */
        if (OMPI_SUCCESS == rc && !(back = xmalloc(in_total))) rc = OMPI_ERR_OUT_OF_RESOURCE;
        if (OMPI_SUCCESS == rc) {
            i64 o = 0;
            for (int d = 0; d < nsize; ++d) {
                dsp[d] = (int)o;
                for (int j = 0; j < N; ++j) {
                    const int first = m->node_first[j], last = first + m->node_size[j];
                    i64 src = rdsp[j];
                    for (int pos = first; pos < last; ++pos)
                        for (int d2 = 0; d2 < nsize; ++d2) {
                            const i64 b = R[(i64)d2 * size + pos];
                            if (d2 == d) {
                                memcpy(back + o, in + src, (size_t)b);
                                o += b;
                            }
                            src += b;
                        }
                }
                cnt[d] = (int)(o - dsp[d]);
            }
        }
        free(scnt);
        free(sdsp);
        free(rcnt);
        free(rdsp);
    }
    /* 4: every member gets its blocks, sources in node order */
    got = xmalloc(my_recv);
    {
        int lrc = got ? HANX_NODE_CALL(m, scatterv, back, cnt, dsp, MPI_BYTE, got, (int)my_recv,
                                       MPI_BYTE, 0)
                      : OMPI_ERR_OUT_OF_RESOURCE;
        if (OMPI_SUCCESS == rc) rc = lrc;
    }
    if (OMPI_SUCCESS == rc) {
        t = 0;
        for (int pos = 0; pos < size && OMPI_SUCCESS == rc; ++pos) {
            const int r = m->rank_at[pos];
            rc = unpack(got + t, rsz[pos], mca_coll_hanx_elem(rbuf, rdtype, (size_t)(ptrdiff_t)rdispls[r]),
                        rcounts[r], rdtype);
            t += rsz[pos];
        }
    }
out:
    free(ssz);
    free(rsz);
    free(S);
    free(R);
    free(cnt);
    free(dsp);
    free(mine);
    free(nodebuf);
    free(out);
    free(in);
    free(back);
    free(got);
    return rc;
}

int mca_coll_hanx_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                            struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                            const int *rdispls, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    if (!mca_coll_hanx_use(m, comm, COLLX_COLL_ALLTOALLV, 0, NULL))
        return m->prev.alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype,
                                 comm, m->prev.alltoallv_module);
    HANX_LOG(10, "coll:hanx: alltoallv on %s", comm->c_name);
    if (MPI_IN_PLACE == sbuf) { /* the data to send is where it will be received */
        sbuf = rbuf;
        scounts = rcounts;
        sdispls = rdispls;
        sdtype = rdtype;
    }
    return alltoall_common(m, sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm);
}

int mca_coll_hanx_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    const int size = ompi_comm_size(comm);
    const i64 block = (i64)mca_coll_hanx_bytes(rdtype, (size_t)rcount);
    if (!mca_coll_hanx_use(m, comm, COLLX_COLL_ALLTOALL, (size_t)block, NULL) ||
        block * size * m->max_node_size > INT_MAX)
        return m->prev.alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                m->prev.alltoall_module);
    HANX_LOG(10, "coll:hanx: alltoall count %d on %s", rcount, comm->c_name);
    if (0 == block) return OMPI_SUCCESS;
    if (MPI_IN_PLACE == sbuf) {
        sbuf = rbuf;
        scount = rcount;
        sdtype = rdtype;
    }
    int *v = malloc(4 * (size_t)size * sizeof(int));
    if (!v) return OMPI_ERR_OUT_OF_RESOURCE;
    for (int r = 0; r < size; ++r) {
        v[r] = scount;
        v[size + r] = r * scount;
        v[2 * size + r] = rcount;
        v[3 * size + r] = r * rcount;
    }
    int rc = alltoall_common(m, sbuf, v, v + size, sdtype, rbuf, v + 2 * size, v + 3 * size,
                             rdtype, comm);
    free(v);
    return rc;
}
