// extern "C" entry points of the core.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <new>

#include <strings.h>

#include "collx/collx.h"
#include "executor.hpp"
#include "schedule.hpp"

// One operation, or a group of them started together (collx_allgather_start)
// that finishes when all of its parts have: each part notifies part_done,
// and the last one the caller.
struct collx_op {
    std::unique_ptr<collx::Operation> impl;
    std::vector<std::unique_ptr<collx::Operation>> parts;
    std::atomic<std::size_t> left{0};
    std::atomic<int> status{COLLX_OK};
    collx_notify_t notify{nullptr, nullptr};
};

namespace {

bool valid(const collx_transport_t *t, const collx_dtype_t *dt, int root, const collx_tuning_t *tun,
           collx_op_t **out) {
    return t && dt && tun && out && t->size > 0 && t->rank >= 0 && t->rank < t->size && root >= 0 &&
           root < t->size && dt->true_extent >= 0 && tun->tree >= 0 &&
           tun->tree < COLLX_TREE_COUNT;
}

template <class Make>
int start(collx_op_t **out, Make make) {
    try {
        auto g = std::make_unique<collx_op>();
        g->impl = make();
        auto *op = g.release();
        *out = op;
        op->impl->start();  // may finish (and notify) at once
        return COLLX_OK;
    } catch (const std::bad_alloc &) {
        return COLLX_ERR_NOMEM;
    } catch (...) {
        return COLLX_ERR;
    }
}

// A part of a group finished: keep the first failure; the last part
// tells the caller (who may free the group: nothing is touched after).
void part_done(void *ctx, int status) {
    auto *g = static_cast<collx_op *>(ctx);
    int ok = COLLX_OK;
    if (status != COLLX_OK) g->status.compare_exchange_strong(ok, status);
    if (g->left.fetch_sub(1) != 1) return;
    const collx_notify_t n = g->notify;
    const int st = g->status.load();
    if (n.fn) n.fn(n.ctx, st);
}

}  // namespace

extern "C" {

void collx_xfer_complete(void *token, int status) {
    auto *x = static_cast<collx::Xfer *>(token);
    x->op->complete(x, status);
}

const char *collx_tree_name(int kind) {
    if (kind < 0 || kind >= COLLX_TREE_COUNT) return nullptr;
    collx_tuning_t t{};
    t.tree = kind;
    return collx::tree_kind_name(collx::shape_of(t).kind);
}

int collx_tree_from_name(const char *name) {
    for (int k = 0; name != nullptr && k < COLLX_TREE_COUNT; ++k)
        if (strcasecmp(name, collx_tree_name(k)) == 0) return k;
    return -1;
}

int collx_flat_tree(const char *algorithm) {
    const std::size_t n = sizeof(COLLX_FLAT_PREFIX) - 1;
    if (algorithm == nullptr || std::strncmp(algorithm, COLLX_FLAT_PREFIX, n) != 0) return -1;
    return collx_tree_from_name(algorithm + n);
}

size_t collx_lp_segment_bytes(size_t n, int P, double alpha, double beta) {
    if (P <= 2 || n == 0 || alpha <= 0 || beta <= 0) return std::max<size_t>(n, 1);
    const double s = std::sqrt(static_cast<double>(n) * alpha / ((P - 2) * beta));
    const double lo = std::min<double>(1024.0, static_cast<double>(n));
    return static_cast<size_t>(std::clamp(s, lo, static_cast<double>(n)));
}

int collx_dtype_supported(const collx_dtype_t *dt) {
    return dt->size == 0 ? dt->extent >= 0 : dt->extent > 0;
}

int collx_bcast_start(const collx_transport_t *t, void *buf, size_t count, const collx_dtype_t *dt,
                      int root, int tag, const collx_tuning_t *tun, const collx_notify_t *notify,
                      collx_op_t **out) {
    if (!valid(t, dt, root, tun, out)) return COLLX_ERR_ARG;
    if (!collx_dtype_supported(dt)) return COLLX_ERR_UNSUPPORTED;
    return start(out,
                 [&] { return collx::make_bcast(*t, buf, count, *dt, root, tag, *tun, notify); });
}

int collx_reduce_start(const collx_transport_t *t, const void *sendbuf, void *recvbuf, size_t count,
                       const collx_dtype_t *dt, void *op, int commutative, int root, int tag,
                       const collx_tuning_t *tun, const collx_notify_t *notify,
                       collx_op_t **out) {
    if (!valid(t, dt, root, tun, out)) return COLLX_ERR_ARG;
    if (!collx_dtype_supported(dt)) return COLLX_ERR_UNSUPPORTED;
    return start(out, [&] {
        return collx::make_reduce(*t, sendbuf, recvbuf, count, *dt, op, commutative != 0, root,
                                  false, tag, *tun, notify);
    });
}

int collx_allreduce_start(const collx_transport_t *t, const void *sendbuf, void *recvbuf,
                          size_t count, const collx_dtype_t *dt, void *op, int commutative,
                          int tag, const collx_tuning_t *tun, const collx_notify_t *notify,
                          collx_op_t **out) {
    if (!valid(t, dt, 0, tun, out)) return COLLX_ERR_ARG;
    if (!collx_dtype_supported(dt)) return COLLX_ERR_UNSUPPORTED;
    return start(out, [&] {
        return collx::make_reduce(*t, sendbuf, recvbuf, count, *dt, op, commutative != 0, 0, true,
                                  tag, *tun, notify);
    });
}

int collx_ring_start(const collx_transport_t *t, int phases, const void *sendbuf, void *recvbuf,
                     size_t count, const size_t *chunk_counts, const collx_dtype_t *dt, void *op,
                     int tag, const collx_tuning_t *tun, const collx_notify_t *notify,
                     collx_op_t **out) {
    if (!valid(t, dt, 0, tun, out) || phases < COLLX_RING_REDUCE_SCATTER ||
        phases > COLLX_RING_ALLREDUCE)
        return COLLX_ERR_ARG;
    if (chunk_counts != nullptr) {
        size_t sum = 0;
        for (int r = 0; r < t->size; ++r) sum += chunk_counts[r];
        if (sum != count) return COLLX_ERR_ARG;
    }
    if (!collx_dtype_supported(dt)) return COLLX_ERR_UNSUPPORTED;
    return start(out, [&] {
        return collx::make_ring(*t, phases, sendbuf, recvbuf, count, *dt, op, tag, *tun, notify,
                                chunk_counts);
    });
}

int collx_allgather_start(const collx_transport_t *t, void *recvbuf, const size_t *counts,
                          const size_t *displs, const collx_dtype_t *dt, const int *node_of,
                          int tag, const collx_tuning_t *tun, const collx_notify_t *notify,
                          collx_op_t **out) {
    if (!valid(t, dt, 0, tun, out) || !counts || !displs) return COLLX_ERR_ARG;
    if (!collx_dtype_supported(dt)) return COLLX_ERR_UNSUPPORTED;
    try {
        auto g = std::make_unique<collx_op>();
        if (notify) g->notify = *notify;
        g->left = static_cast<std::size_t>(t->size);
        const collx_notify_t each{part_done, g.get()};
        // all built before any starts: a failed build has posted nothing
        g->parts = collx::make_allgather(*t, recvbuf, counts, displs, *dt, node_of, tag, *tun,
                                         &each);
        *out = g.release();
        for (auto &p : (*out)->parts) p->start();  // the last may finish (and notify)
        return COLLX_OK;
    } catch (const std::bad_alloc &) {
        return COLLX_ERR_NOMEM;
    } catch (...) {
        return COLLX_ERR;
    }
}

int collx_pipeline_start(const collx_stage_t *stages, int nstages, size_t nseg, int window,
                         int serial, collx_step_fn fn, void *ctx, const collx_notify_t *notify,
                         collx_op_t **out) {
    if (!out || !fn || nstages < 0 || (nstages > 0 && !stages)) return COLLX_ERR_ARG;
    std::vector<collx_stage_t> st(stages, stages + nstages);
    return start(out, [&] {
        return collx::make_pipeline(st, nseg, window, serial != 0, fn, ctx, notify);
    });
}

int collx_op_test(collx_op_t *op, int *status) {
    if (op->impl) return op->impl->finished(status) ? 1 : 0;
    int first = COLLX_OK;
    for (auto &p : op->parts) {
        int st = COLLX_OK;
        if (!p->finished(&st)) return 0;
        if (first == COLLX_OK) first = st;
    }
    if (status) *status = first;
    return 1;
}

void collx_op_free(collx_op_t *op) { delete op; }

}  // extern "C"
