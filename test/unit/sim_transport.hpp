// An in-process world of P ranks implementing collx_transport_t, for unit
// tests of the engine without MPI.  Messages match FIFO per (src, dst, tag)
// as in MPI; delivery order across pairs is randomised by a seed, and sends
// are randomly "eager" (copied and complete at once, possibly inside isend
// itself) or "rendezvous" (read and complete only when matched: a sender
// that reuses its buffer before completion sends the wrong data), and a matched receive may
// report its completion later than receives matched after it (as a large
// rendezvous message finishes after a small eager one from the same peer),
// so that the event-driven code sees many interleavings.  Only contiguous datatypes (extent == size).
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "collx/collx.h"

namespace sim {

using ReduceFn = void (*)(const void *in, void *inout, std::size_t count);

struct Op {
    ReduceFn fn;
};

class World {
  public:
    World(int P, unsigned seed) : P_(P), rng_(seed), ranks_(P) {
        for (int r = 0; r < P; ++r) {
            ranks_[r].world = this;
            ranks_[r].rank = r;
            auto &t = ranks_[r].t;
            t.ctx = &ranks_[r];
            t.rank = r;
            t.size = P;
            t.isend = &World::isend;
            t.irecv = &World::irecv;
            t.reduce_local = &World::reduce;
            t.copy = &World::copy;
        }
    }
    const collx_transport_t &transport(int r) const { return ranks_[r].t; }
    // Fail the n-th isend posted in this world (1-based); 0 = never.
    void fail_send_number(int n) { fail_send_at_ = n; }

    // Deliver one matched message or one deferred send completion, chosen at
    // random.  Returns false when nothing can progress.
    bool step() {
        std::vector<Key> ready;
        for (auto &[k, q] : sends_)
            if (!q.empty() && !recvs_[k].empty()) ready.push_back(k);
        const bool have_deferred = !deferred_.empty();
        if (ready.empty() && !have_deferred) return false;
        std::uniform_int_distribution<std::size_t> pick(0, ready.size() + (have_deferred ? 0 : -1));
        std::size_t i = ready.empty() ? ready.size() : pick(rng_);
        if (i == ready.size()) {  // complete a deferred eager send
            std::uniform_int_distribution<std::size_t> d(0, deferred_.size() - 1);
            std::size_t j = d(rng_);
            auto [tok, st] = deferred_[j];
            deferred_.erase(deferred_.begin() + static_cast<std::ptrdiff_t>(j));
            collx_xfer_complete(tok, st);
            return true;
        }
        const Key k = ready[i];
        Msg m = std::move(sends_[k].front());
        sends_[k].pop_front();
        Recv rv = recvs_[k].front();
        recvs_[k].pop_front();
        const int status = m.size > rv.capacity ? 1 : 0;  // truncation
        if (!status && m.size) std::memcpy(rv.buf, m.src ? m.src : m.bytes.data(), m.size);
        if (coin()) {  // the receive completes later, maybe after later ones
            if (m.rendezvous_token) collx_xfer_complete(m.rendezvous_token, 0);
            deferred_.emplace_back(rv.token, status);
        } else if (coin()) {
            collx_xfer_complete(rv.token, status);
            if (m.rendezvous_token) collx_xfer_complete(m.rendezvous_token, 0);
        } else {
            if (m.rendezvous_token) collx_xfer_complete(m.rendezvous_token, 0);
            collx_xfer_complete(rv.token, status);
        }
        return true;
    }
    std::size_t unmatched() const {
        std::size_t n = 0;
        for (auto &kv : sends_) n += kv.second.size();
        for (auto &kv : recvs_) n += kv.second.size();
        return n;
    }

  private:
    using Key = std::tuple<int, int, int>;  // src, dst, tag
    struct Rank {
        World *world;
        int rank;
        collx_transport_t t;
    };
    struct Msg {
        std::vector<char> bytes;      // eager: copied at isend
        const char *src = nullptr;    // rendezvous: read when matched, as MPI may
        std::size_t size = 0;
        void *rendezvous_token = nullptr;
    };
    struct Recv {
        char *buf;
        std::size_t capacity;
        void *token;
    };

    bool coin() { return std::uniform_int_distribution<int>(0, 1)(rng_) == 1; }

    static int isend(void *ctx, const void *buf, std::size_t count, const collx_dtype_t *dt,
                     int peer, int tag, void *token) {
        auto *r = static_cast<Rank *>(ctx);
        World *w = r->world;
        if (w->fail_send_at_ && ++w->nsends_ == w->fail_send_at_) return 1;
        if (peer < 0 || peer >= w->P_ || peer == r->rank) return 2;
        Msg m;
        const char *p = static_cast<const char *>(buf);
        m.size = count * dt->size;
        const int mode = std::uniform_int_distribution<int>(0, 2)(w->rng_);
        if (mode == 0) {  // the sender must leave its buffer alone until completion
            m.rendezvous_token = token;
            m.src = p;
        } else {
            m.bytes.assign(p, p + m.size);
        }
        w->sends_[Key{r->rank, peer, tag}].push_back(std::move(m));
        if (mode == 1) collx_xfer_complete(token, 0);  // eager, completes inside isend
        if (mode == 2) w->deferred_.emplace_back(token, 0);  // eager, completes later
        return 0;
    }
    static int irecv(void *ctx, void *buf, std::size_t count, const collx_dtype_t *dt, int peer,
                     int tag, void *token) {
        auto *r = static_cast<Rank *>(ctx);
        World *w = r->world;
        if (peer < 0 || peer >= w->P_ || peer == r->rank) return 2;
        w->recvs_[Key{peer, r->rank, tag}].push_back(
            Recv{static_cast<char *>(buf), count * dt->size, token});
        return 0;
    }
    static int reduce(void *, const void *in, void *inout, std::size_t count, const collx_dtype_t *,
                      void *op) {
        static_cast<Op *>(op)->fn(in, inout, count);
        return 0;
    }
    static int copy(void *, void *dst, const void *src, std::size_t count, const collx_dtype_t *dt) {
        std::memmove(dst, src, count * dt->size);
        return 0;
    }

    int P_;
    std::mt19937 rng_;
    std::vector<Rank> ranks_;
    std::map<Key, std::deque<Msg>> sends_;
    std::map<Key, std::deque<Recv>> recvs_;
    std::vector<std::pair<void *, int>> deferred_;  // completions not yet reported
    int fail_send_at_ = 0, nsends_ = 0;
};

}  // namespace sim
