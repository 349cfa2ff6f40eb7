/*
 * bcast, reduce, allreduce and barrier as per-level stages, pipelined over
 * segments.
 *
 * A collective is, for each rank, a list of stages: "bcast on my level-1
 * communicator from its rank 2", "reduce on level 0 to its rank 0", ...
 * Every stage has a global number, the same on all members of its
 * communicator, and stages follow the data (a bcast goes up the root's
 * groups, then down the others; a reduce goes up).  With the message cut
 * into segments, step t runs stage j on segment t - j: while the leaders
 * move segment s between nodes, the node below already spreads segment s-1.
 * Level-0 stages run blocking, higher ones non-blocking, waited for at the
 * end of the step; since every member of a communicator runs its stage at
 * the same step and in the same order, the i-collectives of one step can
 * only wait on stages of the same or earlier steps: no deadlock.
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "coll_hanx.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"
#include "opal/util/output.h"

enum stage_kind { ST_BCAST, ST_REDUCE, ST_ALLREDUCE };

typedef struct stage {
    int number;          /* global stage number */
    int level;
    enum stage_kind kind;
    int root;            /* in the level communicator */
    const char *sbuf;    /* MPI_IN_PLACE, or the segment-0 address */
    char *rbuf;          /* segment-0 address (may be NULL where unused) */
} stage_t;

typedef struct pipeline {
    stage_t st[2 * HANX_MAX_LEVELS + 1];
    int n;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
} pipeline_t;

static void add_stage(pipeline_t *p, int number, int level, enum stage_kind kind, int root,
                      const void *sbuf, void *rbuf)
{
    stage_t *s = &p->st[p->n++];
    s->number = number;
    s->level = level;
    s->kind = kind;
    s->root = root;
    s->sbuf = sbuf;
    s->rbuf = rbuf;
}

static const char *shift(const void *base, size_t off)
{
    if (NULL == base || MPI_IN_PLACE == base) return base;
    return (const char *)base + off;
}

/* Run stage s on elements [first, first + n). */
static int run_stage(mca_coll_hanx_module_t *m, const pipeline_t *p, const stage_t *s,
                     size_t first, int n, ompi_request_t **req)
{
    const size_t off = first * (size_t)mca_coll_hanx_extent(p->dtype);
    const void *sb = shift(s->sbuf, off);
    void *rb = (void *)shift(s->rbuf, off);
    const int k = s->level;
    switch (s->kind) {
    case ST_BCAST:
        return req ? HANX_ILVL(m, k, ibcast, req, rb, n, p->dtype, s->root)
                   : HANX_LVL(m, k, bcast, rb, n, p->dtype, s->root);
    case ST_REDUCE:
        return req ? HANX_ILVL(m, k, ireduce, req, sb, rb, n, p->dtype, p->op, s->root)
                   : HANX_LVL(m, k, reduce, sb, rb, n, p->dtype, p->op, s->root);
    case ST_ALLREDUCE:
        return req ? HANX_ILVL(m, k, iallreduce, req, sb, rb, n, p->dtype, p->op)
                   : HANX_LVL(m, k, allreduce, sb, rb, n, p->dtype, p->op);
    }
    return OMPI_ERR_BAD_PARAM;
}

static int run_pipeline(mca_coll_hanx_module_t *m, const pipeline_t *p, size_t count,
                        size_t seg_count)
{
    if (0 == count || 0 == p->n) return OMPI_SUCCESS;
    if (0 == seg_count || seg_count > count) seg_count = count;
    if (seg_count > INT32_MAX) seg_count = INT32_MAX;
    const size_t nseg = (count + seg_count - 1) / seg_count;
    int last = 0;
    for (int i = 0; i < p->n; ++i)
        if (p->st[i].number > last) last = p->st[i].number;
    ompi_request_t *reqs[2 * HANX_MAX_LEVELS + 1];
    int rc = OMPI_SUCCESS;
    for (size_t t = 0; t < nseg + (size_t)last && OMPI_SUCCESS == rc; ++t) {
        int nreq = 0;
        /* first post the non-blocking stages of this step, then run the
         * blocking (level-0) ones in stage order, then wait */
        for (int pass = 0; pass < 2 && OMPI_SUCCESS == rc; ++pass)
            for (int i = 0; i < p->n && OMPI_SUCCESS == rc; ++i) {
                const stage_t *s = &p->st[i];
                if ((size_t)s->number > t || t - (size_t)s->number >= nseg) continue;
                const int blocking = 1 == nseg || 0 == s->level;
                if (blocking != pass) continue;
                const size_t seg = t - (size_t)s->number, first = seg * seg_count;
                const int n = (int)(count - first < seg_count ? count - first : seg_count);
                rc = run_stage(m, p, s, first, n, blocking ? NULL : &reqs[nreq]);
                if (!blocking && OMPI_SUCCESS == rc) ++nreq;
            }
        if (nreq) {
            int wrc = ompi_request_wait_all(nreq, reqs, MPI_STATUSES_IGNORE);
            if (OMPI_SUCCESS == rc) rc = wrc;
        }
    }
    return rc;
}

/* Elements per pipeline segment; 0: one segment (no i-collectives).
 *
 * Open MPI 4.1.4's libnbc ireduce/iallreduce (what serves the upper levels'
 * i-collectives) allocate their scratch buffers without shifting them by
 * the datatype's true lower bound, like tuned's ring allreduce: a datatype
 * whose data starts past its origin corrupts the heap there.  Such
 * reductions run unsegmented, with blocking collectives only. */
static size_t segment_count(const hanx_choice_t *ch, int mca_bytes, int reduction,
                            struct ompi_datatype_t *dtype)
{
    size_t type_size = mca_coll_hanx_bytes(dtype, 1);
    size_t seg_bytes = mca_bytes ? (size_t)mca_bytes : ch->segment_bytes;
    if (0 == type_size) return 0;
    if (reduction && mca_coll_hanx_scratch_unsafe(dtype)) return 0;
    if (0 == seg_bytes) return 0;
    return seg_bytes < type_size ? 1 : seg_bytes / type_size;
}

static int mine(mca_coll_hanx_module_t *m, int k) { return NULL != m->cur->lvl[k]; }

/* ------------------------------------------------------------- bcast */

int mca_coll_hanx_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    if (!mca_coll_hanx_use(m, comm, "bcast", mca_coll_hanx_bytes(dtype, (size_t)count), &ch))
        return m->prev.bcast(buf, count, dtype, root, comm, m->prev.bcast_module);
    HANX_LOG(10, "coll:hanx: bcast count %d root %d on %s", count, root, comm->c_name);
    const int L = m->nlevels, rank = ompi_comm_rank(comm);
    pipeline_t p = {.n = 0, .dtype = dtype, .op = NULL};
    /* up the root's groups (stage k at level k) as far as the root is not
     * its group's leader yet, then down the others (stage 2(L-1)-k at level
     * k) -- a root's group that it leads is served on the way down */
    for (int k = 0; k < L; ++k) {
        if (!mine(m, k) || ompi_comm_size(m->cur->lvl[k]) < 2) continue;
        const int root_here = m->rank_in[k][root];
        if (m->leader[k][rank] == m->leader[k][root] && (k == L - 1 || 0 != root_here))
            add_stage(&p, k, k, ST_BCAST, root_here, NULL, buf);
        else
            add_stage(&p, 2 * (L - 1) - k, k, ST_BCAST, 0, NULL, buf);
    }
    return run_pipeline(m, &p, (size_t)count,
                        segment_count(&ch, mca_coll_hanx_component.bcast_segment_size, 0, dtype));
}

/* ------------------------------------------------------------ reduce */

int mca_coll_hanx_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    if (!mca_coll_hanx_use(m, comm, "reduce", mca_coll_hanx_bytes(dtype, (size_t)count), &ch))
        return m->prev.reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev.reduce_module);
    if (!mca_coll_hanx_order_ok(m, op)) {
        if (mca_coll_hanx_ordered_fits(m, comm, dtype, (size_t)count, "reduce"))
            return mca_coll_hanx_ordered_reduce(m, sbuf, rbuf, count, dtype, op, root, comm);
        return m->prev.reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev.reduce_module);
    }
    HANX_LOG(10, "coll:hanx: reduce count %d root %d on %s", count, root, comm->c_name);

    const int L = m->nlevels, rank = ompi_comm_rank(comm);
    /* the root's representative at the top level ends up with the result */
    const int holder = m->leader[L - 2][root];
    const int i_am_root = rank == root;
    const void *my_data = (i_am_root && MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    int represents = 0; /* I take part above level 0 */
    for (int k = 1; k < L; ++k) represents |= mine(m, k);
    char *to_free = NULL, *acc = NULL;
    if (i_am_root && rank == holder) acc = rbuf;
    else if (represents) acc = mca_coll_hanx_temp(dtype, (size_t)count, &to_free);
    if (represents && NULL == acc) return OMPI_ERR_OUT_OF_RESOURCE;

    pipeline_t p = {.n = 0, .dtype = dtype, .op = op};
    /* level 0: everybody, into the group leader's accumulator */
    /* (a reduce's non-root gets no receive buffer: some algorithms would
     * use it as scratch, and it may be the send buffer) */
    if (ompi_comm_size(m->cur->lvl[0]) > 1)
        add_stage(&p, 0, 0, ST_REDUCE, 0, (represents && my_data == acc) ? MPI_IN_PLACE : my_data,
                  represents ? acc : NULL);
    else if (acc)
        mca_coll_hanx_copy(dtype, (size_t)count, acc, my_data);
    /* levels above: the group leaders' partial results, to the leader --
     * at the top level to the root's representative */
    for (int k = 1; k < L; ++k) {
        if (!mine(m, k) || ompi_comm_size(m->cur->lvl[k]) < 2) continue;
        const int to = k == L - 1 ? m->rank_in[k][root] : 0;
        const int i_receive = ompi_comm_rank(m->cur->lvl[k]) == to;
        add_stage(&p, k, k, ST_REDUCE, to, i_receive ? MPI_IN_PLACE : acc, i_receive ? acc : NULL);
    }
    int rc = run_pipeline(m, &p, (size_t)count,
                          segment_count(&ch, mca_coll_hanx_component.reduce_segment_size, 1, dtype));
    /* the holder hands the result to a root that does not represent a node */
    if (OMPI_SUCCESS == rc && root != holder && count > 0) {
        if (rank == holder)
            rc = MCA_PML_CALL(send(acc, count, dtype, root, MCA_COLL_BASE_TAG_REDUCE,
                                   MCA_PML_BASE_SEND_STANDARD, comm));
        else if (i_am_root)
            rc = MCA_PML_CALL(recv(rbuf, count, dtype, holder, MCA_COLL_BASE_TAG_REDUCE, comm,
                                   MPI_STATUS_IGNORE));
    }
    free(to_free);
    return rc;
}

/* --------------------------------------------------------- allreduce */

int mca_coll_hanx_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    const int use = mca_coll_hanx_use(m, comm, "allreduce", mca_coll_hanx_bytes(dtype, (size_t)count),
                                      &ch);
    if (use && !mca_coll_hanx_order_ok(m, op) &&
        mca_coll_hanx_ordered_fits(m, comm, dtype, (size_t)count, "allreduce")) {
        int rc = mca_coll_hanx_ordered_reduce(m, MPI_IN_PLACE == sbuf && 0 != ompi_comm_rank(comm)
                                                     ? rbuf : sbuf,
                                              rbuf, count, dtype, op, 0, comm);
        return OMPI_SUCCESS != rc ? rc : mca_coll_hanx_bcast(rbuf, count, dtype, 0, comm, module);
    }
    if (!use || !mca_coll_hanx_order_ok(m, op)) {
        /* (also Open MPI's own allreduces on comm while the hierarchy is
         * being built); the previous module's ring allreduce is not safe
         * for every datatype: reduce + bcast then */
        if (mca_coll_hanx_scratch_unsafe(dtype)) {
            const int root = 0 == ompi_comm_rank(comm);
            int rc = m->prev.reduce((MPI_IN_PLACE == sbuf && !root) ? rbuf : sbuf, rbuf, count,
                                    dtype, op, 0, comm, m->prev.reduce_module);
            return OMPI_SUCCESS != rc ? rc
                                      : m->prev.bcast(rbuf, count, dtype, 0, comm,
                                                      m->prev.bcast_module);
        }
        return m->prev.allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev.allreduce_module);
    }
    HANX_LOG(10, "coll:hanx: allreduce count %d on %s", count, comm->c_name);

    /* (the top level's allreduce becomes reduce + bcast where the ring
     * allreduce is not safe) */
    const int L = m->nlevels, split_top = mca_coll_hanx_scratch_unsafe(dtype);
    const void *my_data = MPI_IN_PLACE == sbuf ? rbuf : sbuf;
    pipeline_t p = {.n = 0, .dtype = dtype, .op = op};
    /* up: reduce into each group leader's rbuf; top: allreduce (or reduce
     * then bcast); down: bcast from the group leaders */
    if (ompi_comm_size(m->cur->lvl[0]) > 1) {
        const int lead0 = 0 == ompi_comm_rank(m->cur->lvl[0]);
        add_stage(&p, 0, 0, ST_REDUCE, 0, (lead0 && my_data == rbuf) ? MPI_IN_PLACE : my_data,
                  lead0 ? rbuf : NULL);
    } else {
        mca_coll_hanx_copy(dtype, (size_t)count, rbuf, my_data);
    }
    for (int k = 1; k < L - 1; ++k)
        if (mine(m, k) && ompi_comm_size(m->cur->lvl[k]) > 1)
            add_stage(&p, k, k, ST_REDUCE, 0, 0 == ompi_comm_rank(m->cur->lvl[k]) ? MPI_IN_PLACE : rbuf,
                      0 == ompi_comm_rank(m->cur->lvl[k]) ? rbuf : NULL);
    const int top = L - 1;
    if (mine(m, top)) {
        if (split_top) {
            const int lead = 0 == ompi_comm_rank(m->cur->lvl[top]);
            add_stage(&p, top, top, ST_REDUCE, 0, lead ? MPI_IN_PLACE : rbuf, lead ? rbuf : NULL);
            add_stage(&p, top + 1, top, ST_BCAST, 0, NULL, rbuf);
        } else {
            add_stage(&p, top, top, ST_ALLREDUCE, 0, MPI_IN_PLACE, rbuf);
        }
    }
    const int down0 = top + split_top; /* the last top-level stage */
    for (int k = L - 2; k >= 0; --k)
        if (mine(m, k) && ompi_comm_size(m->cur->lvl[k]) > 1)
            add_stage(&p, down0 + (L - 1 - k), k, ST_BCAST, 0, NULL, rbuf);
    return run_pipeline(
        m, &p, (size_t)count,
        segment_count(&ch, mca_coll_hanx_component.allreduce_segment_size, 1, dtype));
}

/* ----------------------------------------------------------- barrier */

/* Fan in level by level (a leader leaves its group's barrier only once all
 * of the group entered), the leaders' barrier, then fan out: the leaders
 * enter their groups' second barrier only after the top one. */
int mca_coll_hanx_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    if (!mca_coll_hanx_use(m, comm, "barrier", 0, NULL)) return m->prev.barrier(comm, m->prev.barrier_module);
    HANX_LOG(10, "coll:hanx: barrier on %s", comm->c_name);
    const int L = m->nlevels;
    int rc = OMPI_SUCCESS;
    for (int k = 0; k < L && OMPI_SUCCESS == rc; ++k)
        if (mine(m, k) && ompi_comm_size(m->cur->lvl[k]) > 1) rc = m->cur->lvl[k]->c_coll->coll_barrier(m->cur->lvl[k], m->cur->lvl[k]->c_coll->coll_barrier_module);
    for (int k = L - 2; k >= 0 && OMPI_SUCCESS == rc; --k)
        if (mine(m, k) && ompi_comm_size(m->cur->lvl[k]) > 1) rc = m->cur->lvl[k]->c_coll->coll_barrier(m->cur->lvl[k], m->cur->lvl[k]->c_coll->coll_barrier_module);
    return rc;
}
