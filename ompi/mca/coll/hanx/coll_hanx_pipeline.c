/*
 * bcast, reduce, allreduce and barrier as per-level stages, pipelined over
 * segments.
 *
 * A collective is, for each rank, a list of stages: "bcast on my level-1
 * communicator from its rank 2", "reduce on level 0 to its rank 0", ...
 * Every stage has a global number, the same on all members of its
 * communicator, and stages follow the data (a bcast goes up the root's
 * groups, then down the others; a reduce goes up).  The stages of bcast,
 * reduce, allreduce and barrier come from the core (collx_hier_plan, which
 * the simulator runs too); allgather builds its own.  With the message cut
 * into segments, stage j of segment s can run while stage j+1 runs segment
 * s-1: while the leaders move segment s between nodes, the node below
 * already spreads segment s-1.  Every call runs on the core's schedule
 * engine (collx_pipeline_start): each (stage, segment) starts when its
 * inputs are done, in the same order per communicator (step t runs stage
 * j on segment t - j), progressed by Open MPI's
 * progress engine.  A blocking call's schedule is serial (one step per
 * communicator at a time) and its caller runs the innermost level's steps
 * itself as blocking collectives (coll_hanx_blocking_schedule 0, the
 * default: mca_coll_hanx_run_blocking); a call of one segment runs its
 * stages one after the other.  Non-blocking calls (ibcast, ireduce,
 * iallreduce, ibarrier) start every step as an i-collective.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "coll_hanx.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

void mca_coll_hanx_pipeline_init(hanx_pipeline_t *p, hanx_view_t *v, struct ompi_communicator_t *comm,
                          struct ompi_datatype_t *dtype, struct ompi_op_t *op, size_t count,
                          int tag)
{
    p->n = 0;
    p->dtype = dtype;
    p->op = op;
    p->view = v;
    p->comm = comm;
    p->tag = tag;
    p->count = count;
    p->seg_count = 0;
    p->blk = NULL;
    p->parts = p->part = 0;
    p->split = NULL;
    for (int k = 0; k < HANX_NCHAN; ++k) p->tree[k] = -1;
}

void mca_coll_hanx_add_stage(hanx_pipeline_t *p, int number, int level, enum stage_kind kind, int root,
                      const void *sbuf, void *rbuf)
{
    hanx_stage_t *s = &p->st[p->n++];
    s->number = number;
    s->level = level;
    s->kind = kind;
    s->root = root;
    s->sbuf = sbuf;
    s->rbuf = rbuf;
    s->chunk = 0;
}

static const char *shift(const void *base, size_t off)
{
    if (NULL == base || MPI_IN_PLACE == base) return base;
    return (const char *)base + off;
}

/* One bcast, reduce or allreduce (coll: COLLX_COLL_*) as a collx tree
 * over all ranks of c, run by the core's event-driven executor on the PML,
 * as adaptx runs it: a level's stage, or a whole call the front door sends
 * to a flat tree; or, with the ring (commutative ops), a reduce_scatter or
 * allgather of the n elements in c's size chunks, rank r's chunk r
 * (collx_ring_start's halves: split rails inside a node; chunks: their
 * counts, or NULL for collx_hier_chunk's).  Radix/chains
 * 4, the core's default segment size for the
 * tree, at most 8 sends and 8 receives outstanding; node_of (the topo
 * tree's node leaders, or NULL) as collx_tuning_t says.  Blocking when req
 * is NULL, else started with its request in *req.  Rank order for
 * non-commutative ops and a datatype's true lower bound are the core's
 * business.  *handled = 0 when the core does not take the datatype (zero or
 * negative extent): the caller runs the call another way.  Each call takes
 * a tag of c's non-blocking space: every member starts a communicator's
 * stages and calls in one order. */
static int core_call(int coll, int tree, const int *node_of, const size_t *chunks,
                     struct ompi_communicator_t *c, const void *sb, void *rb, size_t n,
                     struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                     ompi_request_t **req, int *handled)
{
    collx_transport_t t;
    collx_dtype_t d;
    collx_glue_transport(&t, c);
    collx_glue_dtype(&d, dtype);
    *handled = collx_dtype_supported(&d);
    if (!*handled) return OMPI_SUCCESS;
    collx_tuning_t tun = {tree, 4, 0, 8, 8, node_of};
    tun.segment_bytes = collx_tree_segment_bytes(coll, tree, n * d.size, ompi_comm_size(c),
                                                 tun.fanout, COLLX_LP_ALPHA_NS_DEFAULT * 1e-9,
                                                 COLLX_LP_BETA_PS_DEFAULT * 1e-12);
    const int tag = ompi_coll_base_nbc_reserve_tags(c, 1);
    collx_notify_t nt;
    collx_request_t *r = collx_glue_request_new(&nt);
    if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
    const int halves = COLLX_COLL_REDUCE_SCATTER == coll ? COLLX_RING_REDUCE_SCATTER
                       : COLLX_COLL_ALLGATHER == coll    ? COLLX_RING_ALLGATHER
                                                         : 0;
    const int rc = halves ? collx_ring_start(&t, halves, sb, rb, n, chunks, &d, op, tag, &tun, &nt,
                                             &r->op)
                   : COLLX_COLL_BCAST == coll
                       ? collx_bcast_start(&t, rb, n, &d, root, tag, &tun, &nt, &r->op)
                       : collx_glue_reduce_start(&t, &d, sb, rb, n, op, root,
                                                 COLLX_COLL_ALLREDUCE == coll, tag, &tun, &nt,
                                                 &r->op);
    return collx_glue_request_finish(r, rc, req);
}

int mca_coll_hanx_tree_call(int coll, int tree, const int *node_of,
                            struct ompi_communicator_t *c, const void *sb, void *rb, size_t n,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                            ompi_request_t **req, int *handled)
{
    return core_call(coll, tree, node_of, NULL, c, sb, rb, n, dtype, op, root, req, handled);
}

int mca_coll_hanx_ring_reduce_scatter(struct ompi_communicator_t *c, void *buf, size_t n,
                                      const size_t *chunks, struct ompi_datatype_t *dtype,
                                      struct ompi_op_t *op, int *handled)
{
    return core_call(COLLX_COLL_REDUCE_SCATTER, COLLX_TREE_RING, NULL, chunks, c, NULL, buf, n,
                     dtype, op, 0, NULL, handled);
}

/* Run stage s on elements [first, first + n): blocking when req is NULL,
 * else started with its request in *req. */
static int run_stage(const hanx_pipeline_t *p, const hanx_stage_t *s, size_t first, int n,
                     ompi_request_t **req)
{
    /* split rails: the segment's chunk counts and displacements (the last
     * segment's may differ); a chunk stage writes my chunk of it (and
     * reads it too, but for the reduce-scatter, which reads it all) */
    const int *cnt = NULL, *dsp = NULL;
    const ptrdiff_t ext = mca_coll_hanx_extent(p->dtype);
    const int seg_n = n; /* (the segment's, where a chunk stage takes my chunk) */
    size_t roff = 0;
    if (p->split) {
        const int *a = p->split + ((size_t)n == p->seg_count ? 0 : 2 * p->parts);
        cnt = a;
        dsp = a + p->parts;
        if (s->chunk) {
            roff = (size_t)dsp[p->part] * (size_t)ext;
            n = cnt[p->part];
        }
    }
    const size_t off = first * (size_t)ext;
    const void *sb = shift(s->sbuf, off + (ST_REDUCE_SCATTER == s->kind ? 0 : roff));
    void *rb = (void *)shift(s->rbuf, off + roff);
    if (HANX_LOCAL == s->level) return p->blk->finish(p->blk);
    if (s->chunk && 0 == n && ST_ALLREDUCE == s->kind) { /* a segment shorter than parts */
        if (req) *req = &ompi_request_empty;
        return OMPI_SUCCESS;
    }
    struct ompi_communicator_t *c = HANX_P2P == s->level    ? p->comm
                                    : HANX_NODE == s->level ? p->view->node
                                    : HANX_RAIL == s->level ? p->view->rail
                                                            : p->view->lvl[s->level];
    if (ST_RING_RS == s->kind) { /* (the caller checked that the core takes the datatype) */
        const int k = HANX_RAIL == s->level;
        int handled;
        return core_call(COLLX_COLL_REDUCE_SCATTER, COLLX_TREE_RING, NULL, p->blk->ring_chunks[k],
                         c, NULL, s->rbuf, p->blk->ring_n[k], p->dtype, p->op, 0, req, &handled);
    }
    if (s->level >= 0 && s->level < HANX_NCHAN && p->tree[s->level] >= 0 &&
        (ST_BCAST == s->kind || ST_REDUCE == s->kind || ST_ALLREDUCE == s->kind)) {
        /* (no node map on a level: topo is binomial there) */
        const int coll = ST_BCAST == s->kind    ? COLLX_COLL_BCAST
                         : ST_REDUCE == s->kind ? COLLX_COLL_REDUCE
                                                : COLLX_COLL_ALLREDUCE;
        int handled;
        const int rc = mca_coll_hanx_tree_call(coll, p->tree[s->level], NULL, c, sb, rb,
                                               (size_t)n, p->dtype, p->op, s->root, req,
                                               &handled);
        if (handled) return rc;
    }
    if (s->level >= 0 && s->level < HANX_NCHAN && COLLX_TREE_RING == p->tree[s->level] &&
        (ST_REDUCE_SCATTER == s->kind || ST_ALLGATHER_CHUNKS == s->kind) &&
        ompi_op_is_commute(p->op)) {
        /* split rails inside the node on the ring's halves: the whole
         * segment, my chunk (collx_hier_chunk's, as cnt/dsp) at its place
         * (a non-commutative op: the module, which keeps rank order) */
        const int rs = ST_REDUCE_SCATTER == s->kind;
        int handled;
        const int rc = mca_coll_hanx_tree_call(
            rs ? COLLX_COLL_REDUCE_SCATTER : COLLX_COLL_ALLGATHER, COLLX_TREE_RING, NULL, c,
            rs ? shift(s->sbuf, off) : NULL, (void *)shift(s->rbuf, off), (size_t)seg_n, p->dtype,
            p->op, 0, req, &handled);
        if (handled) return rc;
    }
    mca_coll_base_comm_coll_t *cc = c->c_coll;
    const hanx_blocks_t *b = p->blk;
    if (ST_ALLGATHERV == s->kind && s->level >= 0 && s->level < HANX_NCHAN &&
        COLLX_TREE_RING == p->tree[s->level] && b->ring_count > 0) {
        /* the leaders' allgather of the nodes' shares, in place, on the
         * collx ring (leader i's share is chunk i) */
        int handled;
        const int rc = mca_coll_hanx_tree_call(COLLX_COLL_ALLGATHER, COLLX_TREE_RING, NULL, c, NULL,
                                               b->all, b->ring_count, b->type, NULL, 0, req,
                                               &handled);
        if (handled) return rc;
    }
    switch (s->kind) {
    case ST_GATHERV:
        return req ? cc->coll_igatherv(b->mine, b->my_count, b->my_type, rb, b->cnt, b->dsp,
                                       b->type, 0, c, req, cc->coll_igatherv_module)
                   : cc->coll_gatherv(b->mine, b->my_count, b->my_type, rb, b->cnt, b->dsp,
                                      b->type, 0, c, cc->coll_gatherv_module);
    case ST_ALLGATHERV:
        if (b->ring_count > 0) /* the nodes' shares equal, in the leaders' rank order: an
                                * allgather, so that the module runs its allgather algorithms
                                * (recursive doubling), not allgatherv's */
            return req ? cc->coll_iallgather(MPI_IN_PLACE, 0, b->type, b->all, b->ncnt[0], b->type,
                                             c, req, cc->coll_iallgather_module)
                       : cc->coll_allgather(MPI_IN_PLACE, 0, b->type, b->all, b->ncnt[0], b->type,
                                            c, cc->coll_allgather_module);
        return req ? cc->coll_iallgatherv(MPI_IN_PLACE, 0, b->type, b->all, b->ncnt, b->ndsp,
                                          b->type, c, req, cc->coll_iallgatherv_module)
                   : cc->coll_allgatherv(MPI_IN_PLACE, 0, b->type, b->all, b->ncnt, b->ndsp,
                                         b->type, c, cc->coll_allgatherv_module);
    case ST_REDUCE_SCATTER: /* my chunk of the segment into its place in rb */
        return req ? cc->coll_ireduce_scatter(sb, rb, cnt, p->dtype, p->op, c, req,
                                              cc->coll_ireduce_scatter_module)
                   : cc->coll_reduce_scatter(sb, rb, cnt, p->dtype, p->op, c,
                                             cc->coll_reduce_scatter_module);
    case ST_ALLGATHER_CHUNKS: /* (rb: the segment) */
        return req ? cc->coll_iallgatherv(MPI_IN_PLACE, 0, p->dtype, rb, cnt, dsp, p->dtype, c,
                                          req, cc->coll_iallgatherv_module)
                   : cc->coll_allgatherv(MPI_IN_PLACE, 0, p->dtype, rb, cnt, dsp, p->dtype, c,
                                         cc->coll_allgatherv_module);
    case ST_RING_RS: /* (above) */
    case ST_LOCAL:
        break;
    case ST_BCAST:
        return req ? cc->coll_ibcast(rb, n, p->dtype, s->root, c, req, cc->coll_ibcast_module)
                   : cc->coll_bcast(rb, n, p->dtype, s->root, c, cc->coll_bcast_module);
    case ST_REDUCE:
        return req ? cc->coll_ireduce(sb, rb, n, p->dtype, p->op, s->root, c, req,
                                      cc->coll_ireduce_module)
                   : cc->coll_reduce(sb, rb, n, p->dtype, p->op, s->root, c,
                                     cc->coll_reduce_module);
    case ST_ALLREDUCE:
        return req ? cc->coll_iallreduce(sb, rb, n, p->dtype, p->op, c, req,
                                         cc->coll_iallreduce_module)
                   : cc->coll_allreduce(sb, rb, n, p->dtype, p->op, c, cc->coll_allreduce_module);
    case ST_BARRIER:
        return req ? cc->coll_ibarrier(c, req, cc->coll_ibarrier_module)
                   : cc->coll_barrier(c, cc->coll_barrier_module);
    case ST_SEND:
        return req ? MCA_PML_CALL(isend(sb, n, p->dtype, s->root, p->tag,
                                        MCA_PML_BASE_SEND_STANDARD, c, req))
                   : MCA_PML_CALL(send(sb, n, p->dtype, s->root, p->tag,
                                       MCA_PML_BASE_SEND_STANDARD, c));
    case ST_RECV:
        return req ? MCA_PML_CALL(irecv(rb, n, p->dtype, s->root, p->tag, c, req))
                   : MCA_PML_CALL(recv(rb, n, p->dtype, s->root, p->tag, c, MPI_STATUS_IGNORE));
    }
    return OMPI_ERR_BAD_PARAM;
}

static size_t nsegments(const hanx_pipeline_t *p)
{
    if (0 == p->count || 0 == p->n) return 0;
    return (p->count + p->seg_count - 1) / p->seg_count;
}

/* elements of segment seg */
static int seg_len(const hanx_pipeline_t *p, size_t seg)
{
    const size_t first = seg * p->seg_count;
    return (int)(p->count - first < p->seg_count ? p->count - first : p->seg_count);
}

/* A blocking call of one segment: its stages one after the other, in
 * data order (by number, then as listed), each a blocking collective --
 * nothing to overlap, so nothing to schedule. */
static int run_in_turn(const hanx_pipeline_t *p)
{
    int last = 0;
    for (int i = 0; i < p->n; ++i)
        if (p->st[i].number > last) last = p->st[i].number;
    int rc = OMPI_SUCCESS;
    for (int t = 0; t <= last && OMPI_SUCCESS == rc; ++t)
        for (int i = 0; i < p->n && OMPI_SUCCESS == rc; ++i)
            if (p->st[i].number == t) rc = run_stage(p, &p->st[i], 0, seg_len(p, 0), NULL);
    return rc;
}

/* ------------------------------------------- the calls on the schedules
 * The stages run by the core's schedule engine (collx_pipeline_start):
 * each (stage, segment) starts as the non-blocking collective of its level
 * when its segment's previous stage is done and the steps before it on the
 * same communicator have started (a blocking call's: finished), and its
 * request is watched from the progress engine; a blocking call's caller
 * runs its level-0 steps itself (mca_coll_hanx_run_blocking).  At most
 * COLLX_HIER_WINDOW segments are in flight per call beyond the pipeline's
 * depth. */

/* A step a blocking call's caller runs itself (mca_coll_hanx_run_blocking) */
typedef struct hanx_sync_step {
    int stage;
    size_t seg;
    void *token; /* its completion, reported when it returned */
} hanx_sync_step_t;

typedef struct hanx_nb {
    hanx_pipeline_t p;
    mca_coll_hanx_module_t *m;
    char *to_free;                 /* the call's scratch buffer */
    size_t steps[HANX_NCHAN]; /* per channel: steps to start there */
    size_t started[HANX_NCHAN];
    /* a blocking call: the steps whose stage runs as a blocking collective
     * (sync_stage), ready in the order they started, for its caller to run */
    int blocking;
    pthread_mutex_t ready_lock;
    hanx_sync_step_t *ready;
    size_t nready, cap_ready, next_ready;
} hanx_nb_t;

/* Give back what a call holds once it is over (or never started): the
 * pipeline's split tables and block buffers, and its scratch buffer. */
static void release(const hanx_pipeline_t *p, char *to_free)
{
    if (p->blk) p->blk->release(p->blk);
    free(p->split);
    free(to_free);
}

static void nb_free(void *a)
{
    hanx_nb_t *c = a;
    release(&c->p, c->to_free);
    free(c->ready);
    pthread_mutex_destroy(&c->ready_lock);
    free(c);
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap) return 0;
    size_t nc = *cap ? 2 * *cap : 8;
    void *a = realloc(*arr, nc * elem);
    if (NULL == a) return -1;
    *arr = a;
    *cap = nc;
    return 0;
}

/* 1 where a blocking call's stage runs as a blocking collective: the
 * stages of level 0, the innermost level's communicator (the node's, or
 * the socket's), whose Open MPI module's blocking collectives beat its
 * i-collectives (libnbc's) there. */
static int sync_stage(const hanx_nb_t *c, int stage)
{
    return c->blocking && 0 == c->p.st[stage].level;
}

/* Start one step now (a blocking call's sync_stage: made ready for its
 * caller, which runs it). */
static int post_step(hanx_nb_t *c, int stage, size_t seg, void *token)
{
    if (sync_stage(c, stage)) {
        pthread_mutex_lock(&c->ready_lock);
        const int full = grow((void **)&c->ready, &c->cap_ready, c->nready, sizeof(*c->ready));
        if (!full) c->ready[c->nready++] = (hanx_sync_step_t){stage, seg, token};
        pthread_mutex_unlock(&c->ready_lock);
        return full ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
    }
    ompi_request_t *req = MPI_REQUEST_NULL;
    int rc = run_stage(&c->p, &c->p.st[stage], seg * c->p.seg_count, seg_len(&c->p, seg), &req);
    if (OMPI_SUCCESS != rc) return rc;
    return collx_glue_watch(req, token);
}

/* A step of the call holding the turn of channel ch was started: once the
 * call has started all its steps there, the turn passes to the next call,
 * whose deferred steps start now, in order.  (Lock held.)  A step that
 * fails to start is returned in *failed (reported after the unlock). */
static void chan_started(hanx_chan_t *ch, int k, mca_coll_hanx_module_t *m,
                         hanx_deferred_t *failed, size_t *nfailed)
{
    while (ch->ncalls && ch->calls[0]->started[k] == ch->calls[0]->steps[k]) {
        memmove(ch->calls, ch->calls + 1, (ch->ncalls - 1) * sizeof(*ch->calls));
        --ch->ncalls;
        --m->nb_unposted;
        if (0 == ch->ncalls) break;
        hanx_nb_t *next = ch->calls[0];
        size_t keep = 0;
        for (size_t i = 0; i < ch->ndeferred; ++i) {
            hanx_deferred_t d = ch->deferred[i];
            if (d.call != next) {
                ch->deferred[keep++] = d;
                continue;
            }
            ++next->started[k];
            if (OMPI_SUCCESS != post_step(next, d.stage, d.seg, d.token) && *nfailed < 64)
                failed[(*nfailed)++] = d;
        }
        ch->ndeferred = keep;
    }
}

static int nb_step(void *ctx, int stage, size_t seg, void *token)
{
    hanx_nb_t *c = ctx;
    const int k = c->p.st[stage].level;
    if (HANX_P2P == k) return post_step(c, stage, seg, token); /* a tag of its own */
    if (HANX_LOCAL == k) { /* done at once */
        collx_xfer_complete(token, OMPI_SUCCESS == c->p.blk->finish(c->p.blk) ? 0 : 1);
        return 0;
    }
    mca_coll_hanx_module_t *m = c->m;
    hanx_chan_t *ch = &c->p.view->chan[k];
    hanx_deferred_t failed[64];
    size_t nfailed = 0;
    int rc = OMPI_SUCCESS;
    pthread_mutex_lock(&m->nb_lock);
    if (ch->ncalls && ch->calls[0] == c) {
        ++c->started[k];
        rc = post_step(c, stage, seg, token);
        chan_started(ch, k, m, failed, &nfailed);
    } else if (grow((void **)&ch->deferred, &ch->cap_deferred, ch->ndeferred,
                    sizeof(*ch->deferred))) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
    } else {
        ch->deferred[ch->ndeferred++] = (hanx_deferred_t){c, stage, seg, token};
    }
    pthread_mutex_unlock(&m->nb_lock);
    for (size_t i = 0; i < nfailed; ++i) collx_xfer_complete(failed[i].token, OMPI_ERROR);
    return rc;
}

/* Take the call's turns on the channels of its levels, in call order. */
static int nb_register(hanx_nb_t *c, size_t nseg)
{
    mca_coll_hanx_module_t *m = c->m;
    for (int k = 0; k < HANX_NCHAN; ++k) c->steps[k] = c->started[k] = 0;
    for (int i = 0; i < c->p.n; ++i)
        if (c->p.st[i].level >= 0) c->steps[c->p.st[i].level] += nseg;
    int rc = OMPI_SUCCESS;
    pthread_mutex_lock(&m->nb_lock);
    for (int k = 0; k < HANX_NCHAN && OMPI_SUCCESS == rc; ++k) {
        if (0 == c->steps[k]) continue;
        hanx_chan_t *ch = &c->p.view->chan[k];
        if (grow((void **)&ch->calls, &ch->cap_calls, ch->ncalls, sizeof(*ch->calls))) {
            rc = OMPI_ERR_OUT_OF_RESOURCE; /* (before any step started: none registered) */
            break;
        }
        ch->calls[ch->ncalls++] = c;
        ++m->nb_unposted;
    }
    pthread_mutex_unlock(&m->nb_lock);
    return rc;
}

/* Undo nb_register of a call that started no step: it is the last of
 * every channel it joined. */
static void nb_unregister(hanx_nb_t *c)
{
    mca_coll_hanx_module_t *m = c->m;
    pthread_mutex_lock(&m->nb_lock);
    for (int k = 0; k < HANX_NCHAN; ++k) {
        hanx_chan_t *ch = &c->p.view->chan[k];
        if (c->steps[k] && ch->ncalls && ch->calls[ch->ncalls - 1] == c) {
            --ch->ncalls;
            --m->nb_unposted;
        }
    }
    pthread_mutex_unlock(&m->nb_lock);
}

void mca_coll_hanx_nb_drain(mca_coll_hanx_module_t *m)
{
    while (m->nb_unposted > 0) opal_progress();
}

void mca_coll_hanx_chan_free(hanx_view_t *v)
{
    for (int k = 0; k < HANX_NCHAN; ++k) {
        free(v->chan[k].calls);
        free(v->chan[k].deferred);
        memset(&v->chan[k], 0, sizeof(v->chan[k]));
    }
}

/* Start p on the schedules; takes to_free (also on failure).  blocking:
 * one step per communicator at a time (a serial pipeline), its sync_stage
 * steps waiting in c->ready for the caller (*call). */
static int start(mca_coll_hanx_module_t *m, const hanx_pipeline_t *p, char *to_free,
                 int blocking, ompi_request_t **request, hanx_nb_t **call)
{
    hanx_nb_t *c = calloc(1, sizeof(*c));
    if (NULL == c) {
        release(p, to_free);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    c->p = *p;
    c->m = m;
    c->to_free = to_free;
    c->blocking = blocking;
    pthread_mutex_init(&c->ready_lock, NULL);
    *call = c;
    collx_notify_t n;
    collx_request_t *r = collx_glue_request_new(&n);
    if (NULL == r) {
        nb_free(c);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    r->args = c;
    r->free_args = nb_free;
    int rc = nb_register(c, nsegments(p));
    if (OMPI_SUCCESS != rc) {
        nb_unregister(c);
        collx_glue_request_abandon(r); /* frees args */
        return rc;
    }
    collx_stage_t cs[HANX_MAX_STAGES];
    for (int i = 0; i < p->n; ++i) {
        cs[i].number = p->st[i].number;
        cs[i].channel = p->st[i].level; /* one channel per communicator */
    }
    rc = collx_pipeline_start(cs, p->n, nsegments(p), COLLX_HIER_WINDOW, blocking, nb_step, c, &n,
                              &r->op);
    if (COLLX_OK != rc) { /* (only out of memory, before any step started) */
        nb_unregister(c);
        collx_glue_request_abandon(r);
        return collx_glue_rc(rc);
    }
    *request = &r->super.super;
    return OMPI_SUCCESS;
}

int mca_coll_hanx_start_nb(mca_coll_hanx_module_t *m, const hanx_pipeline_t *p, char *to_free,
                           ompi_request_t **request)
{
    hanx_nb_t *c;
    return start(m, p, to_free, 0, request, &c);
}

int mca_coll_hanx_run_blocking(mca_coll_hanx_module_t *m, const hanx_pipeline_t *p,
                               char *to_free)
{
    const size_t nseg = nsegments(p);
    if (nseg <= 1) {
        const int rc = nseg ? run_in_turn(p) : OMPI_SUCCESS;
        release(p, to_free);
        return rc;
    }
    hanx_nb_t *c;
    ompi_request_t *req = MPI_REQUEST_NULL;
    /* (coll_hanx_blocking_schedule 1: every step an i-collective, as a
     * non-blocking call's) */
    int rc = start(m, p, to_free, !mca_coll_hanx_component.blocking_schedule, &req, &c);
    if (OMPI_SUCCESS != rc) return rc;
    /* the ready steps in the order they started (per communicator the
     * order every member starts them in), each to its end; after a failed
     * one the others are reported failed without running */
    while (!REQUEST_COMPLETE(req)) {
        hanx_sync_step_t st;
        int have = 0;
        pthread_mutex_lock(&c->ready_lock);
        if (c->next_ready < c->nready) {
            st = c->ready[c->next_ready++];
            have = 1;
        }
        pthread_mutex_unlock(&c->ready_lock);
        if (!have) {
            opal_progress();
            continue;
        }
        const int src = OMPI_SUCCESS != rc
                            ? rc
                            : run_stage(&c->p, &c->p.st[st.stage], st.seg * c->p.seg_count,
                                        seg_len(&c->p, st.seg), NULL);
        if (OMPI_SUCCESS != src) rc = src;
        collx_xfer_complete(st.token, OMPI_SUCCESS == src ? 0 : 1);
    }
    const int wrc = ompi_request_wait(&req, MPI_STATUS_IGNORE);
    return OMPI_SUCCESS != rc ? rc : wrc;
}

/* Elements per pipeline segment (count: one segment).
 *
 * Open MPI 4.1.4's libnbc ireduce/iallreduce (what serves the upper levels'
 * i-collectives) allocate their scratch buffers without shifting them by
 * the datatype's true lower bound, like tuned's ring allreduce: a datatype
 * whose data starts past its origin corrupts the heap there.  Such
 * reductions run unsegmented, with blocking collectives only (and their
 * non-blocking forms go to the previous module). */
static size_t segment_count(const hanx_choice_t *ch, int coll, int reduction,
                            struct ompi_datatype_t *dtype, size_t count)
{
    size_t type_size = mca_coll_hanx_bytes(dtype, 1);
    size_t seg_bytes = mca_coll_hanx_segment_bytes(coll, ch->segment_bytes);
    size_t n = 0;
    if (0 == type_size || (reduction && mca_coll_hanx_scratch_unsafe(dtype)) || 0 == seg_bytes)
        n = count;
    else
        n = seg_bytes < type_size ? 1 : seg_bytes / type_size;
    if (0 == n || n > count) n = count;
    if (n > INT32_MAX) n = INT32_MAX;
    return n ? n : 1;
}

static int mine(const hanx_view_t *v, int k) { return NULL != v->lvl[k]; }

/* The core's stages of coll for this rank (collx_hier_plan: the one
 * description of the hierarchical bcast, reduce, allreduce and barrier,
 * which the simulator runs too), on p's view with the caller's buffers and
 * the choice's algorithms on the levels (the rail's: the leaders' level's);
 * rail: allreduce as split rails, bcast and reduce on the root's rail (the
 * caller checked it can run).
 * *to_free: the accumulator it allocated (the caller frees it after the
 * call). */
static int build(mca_coll_hanx_module_t *m, hanx_pipeline_t *p, int coll, const void *sbuf,
                 void *rbuf, int root, const hanx_choice_t *ch, int rail, char **to_free)
{
    const hanx_view_t *v = p->view;
    const collx_hier_t h = mca_coll_hanx_hier(m, ompi_comm_size(p->comm));
    int size[HANX_MAX_LEVELS] = {0};
    for (int k = 0; k < m->nlevels; ++k) size[k] = mine(v, k) ? ompi_comm_size(v->lvl[k]) : 0;
    /* (the top level's allreduce becomes reduce + bcast where the ring
     * allreduce is not safe) */
    const int flags = (MPI_IN_PLACE == sbuf ? COLLX_HIER_IN_PLACE : 0) |
                      (COLLX_COLL_ALLREDUCE == coll && mca_coll_hanx_scratch_unsafe(p->dtype)
                           ? COLLX_HIER_SPLIT_TOP : 0) |
                      (rail ? (COLLX_COLL_ALLREDUCE == coll ? COLLX_HIER_SPLIT_RAIL
                                                            : COLLX_HIER_ROOT_RAIL)
                            : 0);
    collx_hier_plan_t plan;
    *to_free = NULL;
    for (int k = 0; k < m->nlevels; ++k)
        p->tree[k] = k == m->nlevels - 1 ? ch->up_tree : ch->low_tree;
    p->tree[HANX_NODE] = ch->low_tree; /* (split rails' node level under sockets) */
    p->tree[HANX_RAIL] = ch->up_tree;
    if (rail && COLLX_COLL_ALLREDUCE == coll) {
        p->parts = m->split_parts;
        p->part = m->low_rank_of[ompi_comm_rank(p->comm)];
    }
#define LEVEL_ALGO(k) ((k) < m->nlevels ? (p->tree[k] < 0 ? "module" : collx_tree_name(p->tree[k])) : "")
    HANX_LOG(10, "coll:hanx: %s levels (innermost first): %s%s%s%s%s%s%s", collx_coll_name(coll),
             LEVEL_ALGO(0), ", ", LEVEL_ALGO(1), m->nlevels > 2 ? ", " : "", LEVEL_ALGO(2),
             rail ? "; rails: " : "",
             !rail ? "" : p->tree[HANX_RAIL] < 0 ? "module" : collx_tree_name(p->tree[HANX_RAIL]));
#undef LEVEL_ALGO
    if (COLLX_OK != collx_hier_plan(&h, coll, ompi_comm_rank(p->comm), root, size, flags, &plan))
        return OMPI_ERR_BAD_PARAM;
    char *acc = NULL;
    if (plan.need_acc && NULL == (acc = mca_coll_hanx_temp(p->dtype, p->count, to_free)))
        return OMPI_ERR_OUT_OF_RESOURCE;
    void *const bufs[] = {[COLLX_HBUF_NONE] = NULL, [COLLX_HBUF_IN_PLACE] = MPI_IN_PLACE,
                          [COLLX_HBUF_SEND] = (void *)sbuf, [COLLX_HBUF_RECV] = rbuf,
                          [COLLX_HBUF_ACC] = acc, [COLLX_HBUF_NODE] = NULL};
    if (COLLX_HBUF_NONE != plan.copy_to)
        mca_coll_hanx_copy(p->dtype, p->count, bufs[plan.copy_to], bufs[plan.copy_from]);
    mca_coll_hanx_add_plan(p, &plan, bufs);
    return OMPI_SUCCESS;
}

void mca_coll_hanx_add_plan(hanx_pipeline_t *p, const collx_hier_plan_t *plan, void *const *bufs)
{
    for (int i = 0; i < plan->nstages; ++i) {
        const collx_hier_stage_t *s = &plan->st[i];
        const int level = COLLX_HLEVEL_RAIL == s->level   ? HANX_RAIL
                          : COLLX_HLEVEL_NODE == s->level ? HANX_NODE
                                                          : s->level;
        mca_coll_hanx_add_stage(p, s->number, level, (enum stage_kind)s->kind, s->root,
                                bufs[s->sbuf], bufs[s->rbuf]);
        p->st[p->n - 1].chunk = s->chunk;
    }
}

/* Run p on the schedules: a blocking call (request NULL) to its end, a
 * non-blocking one started.  to_free is freed after (rc: the build's). */
static int run(mca_coll_hanx_module_t *m, const hanx_pipeline_t *p, int rc, char *to_free,
               ompi_request_t **request)
{
    if (OMPI_SUCCESS != rc) {
        release(p, to_free);
        return rc;
    }
    return request ? mca_coll_hanx_start_nb(m, p, to_free, request)
                   : mca_coll_hanx_run_blocking(m, p, to_free);
}

/* The front door's flat tree (a tuning rule's "flat:TREE"): the whole
 * call as one collx tree over comm (the topo tree on hanx's nodes).  1 when
 * it ran, its status in *rc; 0 when the choice is not flat or the core does
 * not take the datatype: the call goes on the usual way. */
static int flat(mca_coll_hanx_module_t *m, const hanx_choice_t *ch, int coll,
                struct ompi_communicator_t *comm, const void *sb, void *rb, int count,
                struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                ompi_request_t **req, int *rc)
{
    if (ch->flat_tree < 0) return 0;
    const int *node_of = COLLX_TREE_TOPO == ch->flat_tree ? m->leader[m->nlevels - 2] : NULL;
    int handled;
    *rc = mca_coll_hanx_tree_call(coll, ch->flat_tree, node_of, comm, sb, rb, (size_t)count,
                                  dtype, op, root, req, &handled);
    HANX_LOG(10, "coll:hanx: %s%s count %d on %s: %s %s tree over all ranks", req ? "i" : "",
             collx_coll_name(coll), count, comm->c_name,
             handled ? "one collx" : "datatype the core does not take: hierarchical, not a flat",
             collx_tree_name(ch->flat_tree));
    return handled;
}

/* A non-blocking reduction the levels' i-collectives must not run: Open MPI
 * 4.1.4's libnbc ireduce/iallreduce, which serve the levels and the
 * previous module, corrupt the heap for datatypes with a true lower bound
 * != 0 (see segment_count); one binomial collx tree over all ranks runs it
 * instead (the executor shifts its buffers by it).  1 when it ran (*rc its
 * status); 0 for other datatypes, and for those the core does not take,
 * which the caller hands on. */
static int unsafe_nb(mca_coll_hanx_module_t *m, int coll, struct ompi_communicator_t *comm,
                     const void *sb, void *rb, int count, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op, int root, ompi_request_t **req, int *rc)
{
    if (!mca_coll_hanx_scratch_unsafe(dtype)) return 0;
    const hanx_choice_t ch = {.flat_tree = COLLX_TREE_BINOMIAL};
    HANX_LOG(10, "coll:hanx: datatype with true lower bound != 0");
    return flat(m, &ch, coll, comm, sb, rb, count, dtype, op, root, req, rc);
}

/* 1 when a bcast or reduce from root runs on the root's rail
 * (COLLX_HIER_ROOT_RAIL): coll_hanx_root_rail, nodes of one size, a root
 * that does not lead its node, and view v's rail made (with the view). */
static int root_rail(const mca_coll_hanx_module_t *m, const hanx_view_t *v, int root)
{
    return mca_coll_hanx_component.root_rail && m->split_parts > 0 &&
           0 != m->low_rank_of[root] && NULL != v->rail;
}

/* ------------------------------------------------------------- bcast */

int mca_coll_hanx_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    if (!mca_coll_hanx_use(m, comm, COLLX_COLL_BCAST, mca_coll_hanx_bytes(dtype, (size_t)count), &ch))
        return HANX_PREVIOUS_CALL(m, &ch, comm, bcast, buf, count, dtype, root);
    int rc;
    if (flat(m, &ch, COLLX_COLL_BCAST, comm, NULL, buf, count, dtype, NULL, root, NULL, &rc))
        return rc;
    const int rail = root_rail(m, m->cur, root);
    HANX_LOG(10, "coll:hanx: bcast count %d root %d on %s%s", count, root, comm->c_name,
             rail ? ": on the root's rail" : "");
    hanx_pipeline_t p;
    mca_coll_hanx_pipeline_init(&p, m->cur, comm, dtype, NULL, (size_t)count, 0);
    char *to_free;
    rc = build(m, &p, COLLX_COLL_BCAST, NULL, buf, root, &ch, rail, &to_free);
    p.seg_count = segment_count(&ch, COLLX_COLL_BCAST, 0, dtype,
                                (size_t)count);
    return run(m, &p, rc, to_free, NULL);
}

int mca_coll_hanx_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    hanx_view_t *v = mca_coll_hanx_use_nb(m, comm, COLLX_COLL_BCAST,
                                          mca_coll_hanx_bytes(dtype, (size_t)count), &ch);
    if (NULL == v)
        return m->prev.ibcast(buf, count, dtype, root, comm, request, m->prev.ibcast_module);
    int rc;
    if (flat(m, &ch, COLLX_COLL_BCAST, comm, NULL, buf, count, dtype, NULL, root, request, &rc))
        return rc;
    const int rail = root_rail(m, v, root);
    HANX_LOG(10, "coll:hanx: ibcast count %d root %d on %s%s", count, root, comm->c_name,
             rail ? ": on the root's rail" : "");
    hanx_pipeline_t p;
    mca_coll_hanx_pipeline_init(&p, v, comm, dtype, NULL, (size_t)count, 0);
    char *to_free;
    rc = build(m, &p, COLLX_COLL_BCAST, NULL, buf, root, &ch, rail, &to_free);
    p.seg_count = segment_count(&ch, COLLX_COLL_BCAST, 0, dtype,
                                (size_t)count);
    return run(m, &p, rc, to_free, request);
}

/* ------------------------------------------------------------ reduce */

int mca_coll_hanx_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    if (!mca_coll_hanx_use(m, comm, COLLX_COLL_REDUCE, mca_coll_hanx_bytes(dtype, (size_t)count), &ch))
        return m->prev.reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev.reduce_module);
    int rc;
    if (flat(m, &ch, COLLX_COLL_REDUCE, comm, sbuf, rbuf, count, dtype, op, root, NULL, &rc))
        return rc;
    if (!mca_coll_hanx_order_ok(m, op)) {
        if (mca_coll_hanx_ordered_fits(m, comm, dtype, (size_t)count, "reduce"))
            return mca_coll_hanx_ordered_reduce(m, sbuf, rbuf, count, dtype, op, root, comm);
        return m->prev.reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev.reduce_module);
    }
    const int rail = root_rail(m, m->cur, root);
    HANX_LOG(10, "coll:hanx: reduce count %d root %d on %s%s", count, root, comm->c_name,
             rail ? ": on the root's rail" : "");
    hanx_pipeline_t p;
    char *to_free;
    mca_coll_hanx_pipeline_init(&p, m->cur, comm, dtype, op, (size_t)count, MCA_COLL_BASE_TAG_REDUCE);
    rc = build(m, &p, COLLX_COLL_REDUCE, sbuf, rbuf, root, &ch, rail, &to_free);
    p.seg_count = segment_count(&ch, COLLX_COLL_REDUCE, 1, dtype,
                                (size_t)count);
    return run(m, &p, rc, to_free, NULL);
}

int mca_coll_hanx_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    int rc;
    if (unsafe_nb(m, COLLX_COLL_REDUCE, comm, sbuf, rbuf, count, dtype, op, root, request, &rc))
        return rc;
    hanx_view_t *v =
        mca_coll_hanx_use_nb(m, comm, COLLX_COLL_REDUCE, mca_coll_hanx_bytes(dtype, (size_t)count), &ch);
    if (v && flat(m, &ch, COLLX_COLL_REDUCE, comm, sbuf, rbuf, count, dtype, op, root, request,
                  &rc))
        return rc;
    /* rank order where the levels keep it */
    if (!mca_coll_hanx_order_ok(m, op) || mca_coll_hanx_scratch_unsafe(dtype)) v = NULL;
    if (NULL == v)
        return m->prev.ireduce(sbuf, rbuf, count, dtype, op, root, comm, request,
                               m->prev.ireduce_module);
    const int rail = root_rail(m, v, root);
    HANX_LOG(10, "coll:hanx: ireduce count %d root %d on %s%s", count, root, comm->c_name,
             rail ? ": on the root's rail" : "");
    hanx_pipeline_t p;
    char *to_free;
    /* a tag of its own: several may be outstanding on comm */
    mca_coll_hanx_pipeline_init(&p, v, comm, dtype, op, (size_t)count, ompi_coll_base_nbc_reserve_tags(comm, 1));
    rc = build(m, &p, COLLX_COLL_REDUCE, sbuf, rbuf, root, &ch, rail, &to_free);
    p.seg_count = segment_count(&ch, COLLX_COLL_REDUCE, 1, dtype,
                                (size_t)count);
    return run(m, &p, rc, to_free, request);
}

/* --------------------------------------------------------- allreduce */

/* allreduce's stages (the levels', or split rails where the choice says so
 * and they can run), its segments and the split's chunk tables. */
static int build_allreduce(mca_coll_hanx_module_t *m, hanx_pipeline_t *p, const void *sbuf,
                           void *rbuf, const hanx_choice_t *ch, int blocking, char **to_free)
{
    const int split = mca_coll_hanx_split_ok(m, p->comm, ch, p->dtype, blocking ? "" : "i",
                                             "allreduce");
    HANX_LOG(10, "coll:hanx: %sallreduce count %zu on %s%s", blocking ? "" : "i", p->count,
             p->comm->c_name, split ? ": split rails" : "");
    int rc = build(m, p, COLLX_COLL_ALLREDUCE, sbuf, rbuf, 0, ch, split, to_free);
    p->seg_count = segment_count(ch, COLLX_COLL_ALLREDUCE, 1, p->dtype,
                                 p->count);
    if (OMPI_SUCCESS != rc || !split || 0 == p->count) return rc;
    const int S = p->parts;
    if (NULL == (p->split = malloc(4 * (size_t)S * sizeof(int)))) return OMPI_ERR_OUT_OF_RESOURCE;
    const size_t last = p->count - (nsegments(p) - 1) * p->seg_count;
    for (int which = 0; which < 2; ++which)
        for (int i = 0; i < S; ++i) {
            size_t first, n;
            collx_hier_chunk(which ? last : p->seg_count, S, i, &first, &n);
            p->split[2 * S * which + i] = (int)n;
            p->split[2 * S * which + S + i] = (int)first;
        }
    return OMPI_SUCCESS;
}

int mca_coll_hanx_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    const int use = mca_coll_hanx_use(m, comm, COLLX_COLL_ALLREDUCE, mca_coll_hanx_bytes(dtype, (size_t)count),
                                      &ch);
    int rc;
    if (use && flat(m, &ch, COLLX_COLL_ALLREDUCE, comm, sbuf, rbuf, count, dtype, op, 0, NULL, &rc))
        return rc;
    if (use && !mca_coll_hanx_order_ok(m, op) &&
        mca_coll_hanx_ordered_fits(m, comm, dtype, (size_t)count, "allreduce")) {
        rc = mca_coll_hanx_ordered_reduce(m, MPI_IN_PLACE == sbuf && 0 != ompi_comm_rank(comm)
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
            rc = m->prev.reduce((MPI_IN_PLACE == sbuf && !root) ? rbuf : sbuf, rbuf, count,
                                    dtype, op, 0, comm, m->prev.reduce_module);
            return OMPI_SUCCESS != rc ? rc
                                      : m->prev.bcast(rbuf, count, dtype, 0, comm,
                                                      m->prev.bcast_module);
        }
        return HANX_PREVIOUS_CALL(m, &ch, comm, allreduce, sbuf, rbuf, count, dtype, op);
    }
    hanx_pipeline_t p;
    mca_coll_hanx_pipeline_init(&p, m->cur, comm, dtype, op, (size_t)count, 0);
    char *to_free;
    rc = build_allreduce(m, &p, sbuf, rbuf, &ch, 1, &to_free);
    return run(m, &p, rc, to_free, NULL);
}

int mca_coll_hanx_iallreduce(const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    int rc;
    if (unsafe_nb(m, COLLX_COLL_ALLREDUCE, comm, sbuf, rbuf, count, dtype, op, 0, request, &rc))
        return rc;
    hanx_view_t *v = mca_coll_hanx_use_nb(m, comm, COLLX_COLL_ALLREDUCE,
                                          mca_coll_hanx_bytes(dtype, (size_t)count), &ch);
    if (v && flat(m, &ch, COLLX_COLL_ALLREDUCE, comm, sbuf, rbuf, count, dtype, op, 0, request,
                  &rc))
        return rc;
    if (!mca_coll_hanx_order_ok(m, op) || mca_coll_hanx_scratch_unsafe(dtype)) v = NULL;
    if (NULL == v)
        return m->prev.iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                  m->prev.iallreduce_module);
    /* The leaders' (and the rails') allreduce is in place; for that Open
     * MPI 4.1's libnbc takes its binomial reduce + bcast, which moves twice
     * the ring's bytes (an iallreduce of 128 KiB on 4 x 2 at 1 Gbit/s took
     * 2.3x tuned's allreduce): where the module would run it and a stage
     * carries 64 KiB or more, the collx ring runs it instead. */
    const size_t stage = mca_coll_hanx_bytes(
        dtype, segment_count(&ch, COLLX_COLL_ALLREDUCE, 1, dtype,
                             (size_t)count));
    if (ch.up_tree < 0 && stage >= HANX_NB_RING_MIN_BYTES) {
        ch.up_tree = COLLX_TREE_RING;
        HANX_LOG(10, "coll:hanx: iallreduce on %s: the leaders' allreduce on the collx ring",
                 comm->c_name);
    }
    hanx_pipeline_t p;
    mca_coll_hanx_pipeline_init(&p, v, comm, dtype, op, (size_t)count, 0);
    char *to_free;
    rc = build_allreduce(m, &p, sbuf, rbuf, &ch, 0, &to_free);
    return run(m, &p, rc, to_free, request);
}

/* ----------------------------------------------------------- barrier */

int mca_coll_hanx_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    if (!mca_coll_hanx_use(m, comm, COLLX_COLL_BARRIER, 0, &ch)) return m->prev.barrier(comm, m->prev.barrier_module);
    HANX_LOG(10, "coll:hanx: barrier on %s", comm->c_name);
    hanx_pipeline_t p;
    mca_coll_hanx_pipeline_init(&p, m->cur, comm, MPI_BYTE, NULL, 1, 0);
    char *to_free;
    const int rc = build(m, &p, COLLX_COLL_BARRIER, NULL, NULL, 0, &ch, 0, &to_free);
    p.seg_count = 1;
    return run(m, &p, rc, to_free, NULL);
}

int mca_coll_hanx_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    mca_coll_hanx_module_t *m = (mca_coll_hanx_module_t *)module;
    hanx_choice_t ch;
    hanx_view_t *v = mca_coll_hanx_use_nb(m, comm, COLLX_COLL_BARRIER, 0, &ch);
    if (NULL == v) return m->prev.ibarrier(comm, request, m->prev.ibarrier_module);
    HANX_LOG(10, "coll:hanx: ibarrier on %s", comm->c_name);
    hanx_pipeline_t p;
    mca_coll_hanx_pipeline_init(&p, v, comm, MPI_BYTE, NULL, 1, 0);
    char *to_free;
    const int rc = build(m, &p, COLLX_COLL_BARRIER, NULL, NULL, 0, &ch, 0, &to_free);
    p.seg_count = 1;
    return run(m, &p, rc, to_free, request);
}
