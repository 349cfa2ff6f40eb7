// extern "C" entry points of the core.
#include <new>

#include "collx/collx.h"
#include "executor.hpp"

struct collx_op {
    std::unique_ptr<collx::Operation> impl;
};

namespace {

bool valid(const collx_transport_t *t, const collx_dtype_t *dt, int root, const collx_tuning_t *tun,
           collx_op_t **out) {
    return t && dt && tun && out && t->size > 0 && t->rank >= 0 && t->rank < t->size && root >= 0 &&
           root < t->size && dt->extent >= 0 && dt->true_extent >= 0;
}

template <class Make>
int start(collx_op_t **out, Make make) {
    try {
        auto *op = new collx_op{make()};
        *out = op;
        op->impl->start();
        return COLLX_OK;
    } catch (const std::bad_alloc &) {
        return COLLX_ERR_NOMEM;
    } catch (...) {
        return COLLX_ERR;
    }
}

}  // namespace

extern "C" {

void collx_xfer_complete(void *token, int status) {
    auto *x = static_cast<collx::Xfer *>(token);
    x->op->complete(x, status);
}

const char *collx_tree_name(int kind) {
    switch (kind) {
        case COLLX_TREE_BINOMIAL: return "binomial";
        default: return nullptr;
    }
}

int collx_bcast_start(const collx_transport_t *t, void *buf, size_t count, const collx_dtype_t *dt,
                      int root, int tag, const collx_tuning_t *tun, collx_op_t **out) {
    if (!valid(t, dt, root, tun, out)) return COLLX_ERR_ARG;
    if (dt->extent == 0 && dt->size != 0) return COLLX_ERR_UNSUPPORTED;
    return start(out, [&] { return collx::make_bcast(*t, buf, count, *dt, root, tag, *tun); });
}

int collx_reduce_start(const collx_transport_t *t, const void *sendbuf, void *recvbuf, size_t count,
                       const collx_dtype_t *dt, void *op, int commutative, int root, int tag,
                       const collx_tuning_t *tun, collx_op_t **out) {
    if (!valid(t, dt, root, tun, out)) return COLLX_ERR_ARG;
    if (dt->extent <= 0 && dt->size != 0) return COLLX_ERR_UNSUPPORTED;
    return start(out, [&] {
        return collx::make_reduce(*t, sendbuf, recvbuf, count, *dt, op, commutative != 0, root, tag,
                                  *tun);
    });
}

int collx_op_test(collx_op_t *op, int *status) { return op->impl->finished(status) ? 1 : 0; }

void collx_op_free(collx_op_t *op) { delete op; }

}  // extern "C"
