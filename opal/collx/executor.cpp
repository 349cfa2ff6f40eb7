#include "executor.hpp"

#include "schedule.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>

namespace collx {

// ---------------------------------------------------------------- geometry

Segmentation::Segmentation(std::size_t count_, std::size_t elem_size, std::size_t segment_bytes)
    : count(count_) {
    if (elem_size == 0) count = 0;  // empty datatype: nothing moves
    per_seg = elem_size ? std::max<std::size_t>(1, segment_bytes / elem_size) : 1;
    // a segment's count must fit the transport's int counts
    per_seg = std::min<std::size_t>(per_seg, INT_MAX / 2);
    nseg = count ? (count + per_seg - 1) / per_seg : 0;
}

BufferPool::BufferPool(const collx_dtype_t &dt, std::size_t elems) {
    const std::size_t n = std::max<std::size_t>(elems, 1);
    bytes_ = static_cast<std::size_t>(dt.true_extent) + (n - 1) * static_cast<std::size_t>(dt.extent);
    bytes_ = std::max<std::size_t>(bytes_, 1);
    shift_ = dt.true_lb;
}

char *BufferPool::get() {
    ++in_use_;
    if (!free_.empty()) {
        char *b = free_.back();
        free_.pop_back();
        return b;
    }
    storage_.emplace_back(new char[bytes_]);
    return storage_.back().get() - shift_;
}

void BufferPool::put(char *buf) {
    if (!buf) return;
    --in_use_;
    free_.push_back(buf);
}

// --------------------------------------------------------------- operation

TreeShape shape_of(const collx_tuning_t &tun) {
    TreeShape s;
    s.fanout = tun.fanout < 1 ? 1 : tun.fanout;
    s.node_of = tun.node_of;
    switch (tun.tree) {
        case COLLX_TREE_IN_ORDER_BINOMIAL: s.kind = TreeKind::InOrderBinomial; break;
        case COLLX_TREE_BINARY: s.kind = TreeKind::Binary; break;
        case COLLX_TREE_KNOMIAL: s.kind = TreeKind::Knomial; break;
        case COLLX_TREE_CHAIN: s.kind = TreeKind::Chain; break;
        case COLLX_TREE_PIPELINE: s.kind = TreeKind::Pipeline; break;
        case COLLX_TREE_LINEAR: s.kind = TreeKind::Linear; break;
        case COLLX_TREE_TOPO: s.kind = TreeKind::Topo; break;
        case COLLX_TREE_RING: s.kind = TreeKind::Ring; break;
        case COLLX_TREE_RECURSIVE_DOUBLING: s.kind = TreeKind::RecursiveDoubling; break;
        case COLLX_TREE_BINOMIAL:
        default: s.kind = TreeKind::Binomial; break;
    }
    return s;
}

Operation::Operation(const collx_transport_t &t, const collx_dtype_t &dt, int tag,
                     const collx_tuning_t &tun, const collx_notify_t *notify)
    : t_(t), dt_(dt), tag_(tag), tun_(tun) {
    tun_.max_send = std::max(1, tun_.max_send);
    tun_.max_recv = std::max(1, tun_.max_recv);
    if (notify) notify_ = *notify;
}

// The notification runs after the lock is released and touches nothing of
// the operation afterwards: whoever it wakes may free the operation.
void Operation::start() {
    collx_notify_t n{nullptr, nullptr};
    int st = COLLX_OK;
    {
        std::lock_guard<std::recursive_mutex> g(mu_);
        if (drive()) n = notify_, st = status_;
    }
    if (n.fn) n.fn(n.ctx, st);
}

void Operation::complete(Xfer *x, int status) {
    collx_notify_t n{nullptr, nullptr};
    int st = COLLX_OK;
    {
        std::lock_guard<std::recursive_mutex> g(mu_);
        events_.emplace_back(x, status);
        if (!driving_ && drive()) n = notify_, st = status_;
    }
    if (n.fn) n.fn(n.ctx, st);
}

bool Operation::finished(int *status) {
    std::lock_guard<std::recursive_mutex> g(mu_);
    if (done_ && status) *status = status_;
    return done_;
}

bool Operation::drive() {
    if (done_) return false;
    driving_ = true;
    for (;;) {
        for (; next_event_ < events_.size(); ++next_event_) {
            auto [x, st] = events_[next_event_];
            --in_flight_;
            if (st != 0) status_ = COLLX_ERR;
            else if (!failed()) on_done(*x);
            delete x;
        }
        events_.clear();
        next_event_ = 0;
        if (!failed()) post_ready();
        if (events_.empty()) break;
    }
    driving_ = false;
    if (in_flight_ == 0 && (failed() || all_done())) {
        done_ = true;
        return true;
    }
    return false;
}

bool Operation::post(Xfer::Kind kind, void *buf, std::size_t count, int peer, Xfer x) {
    Xfer *rec = new Xfer(x);
    rec->op = this;
    ++in_flight_;  // before posting: the completion may be reported inside the call
    const int rc = kind == Xfer::Send ? t_.isend(t_.ctx, buf, count, &dt_, peer, tag_, rec)
                                      : t_.irecv(t_.ctx, buf, count, &dt_, peer, tag_, rec);
    if (rc != 0) {
        --in_flight_;
        delete rec;
        status_ = COLLX_ERR;
        return false;
    }
    return true;
}

bool Operation::start_step(collx_step_fn fn, void *ctx, int stage, Xfer x) {
    Xfer *rec = new Xfer(x);
    rec->op = this;
    ++in_flight_;  // before starting: the step may complete inside the call
    if (fn(ctx, stage, x.seg, rec) != 0) {
        --in_flight_;
        delete rec;
        status_ = COLLX_ERR;
        return false;
    }
    return true;
}

bool Operation::send(const void *buf, std::size_t count, int peer, Xfer x) {
    return post(Xfer::Send, const_cast<void *>(buf), count, peer, x);
}

bool Operation::recv(void *buf, std::size_t count, int peer, Xfer x) {
    return post(Xfer::Recv, buf, count, peer, x);
}

bool Operation::reduce(const void *in, void *inout, std::size_t count, void *op) {
    if (t_.reduce_local(t_.ctx, in, inout, count, &dt_, op) != 0) {
        status_ = COLLX_ERR;
        return false;
    }
    return true;
}

bool Operation::copy(void *dst, const void *src, std::size_t count) {
    if (dst == src) return true;
    if (t_.copy(t_.ctx, dst, src, count, &dt_) != 0) {
        status_ = COLLX_ERR;
        return false;
    }
    return true;
}

namespace {

// ------------------------------------------------------------------- bcast

// Segment s is received from the parent, then sent to each child (in
// order_for_bcast's order): a receive and a send per child per segment,
// each kind posted in segment order, at most max_recv / max_send in flight.
class Bcast final : public Schedule {
  public:
    Bcast(const collx_transport_t &t, void *buf, std::size_t count, const collx_dtype_t &dt,
          int root, TreeNode node, int tag, const collx_tuning_t &tun,
          const collx_notify_t *notify)
        : Schedule(t, dt, tag, tun, notify),
          buf_(static_cast<char *>(buf)),
          seg_(count, dt.size, tun.segment_bytes),
          node_(std::move(node)) {
        order_for_bcast(node_);
        const bool is_root = t.rank == root;
        const int recvs = is_root ? -1 : channel(tun_.max_recv);
        const int sends = channel(tun_.max_send);
        const std::size_t nchild = node_.children.size();
        reserve(seg_.nseg * (nchild + 1), seg_.nseg * nchild);
        for (std::size_t s = 0; s < seg_.nseg; ++s) {
            const std::size_t got = is_root ? kNone : add(Kind::Recv, recvs, s, 0);
            for (std::size_t c = 0; c < node_.children.size(); ++c)
                after(add(Kind::Send, sends, s, c), got);
        }
    }

  private:
    char *at(std::size_t s) const {
        return buf_ + static_cast<std::ptrdiff_t>(seg_.first(s)) * dt_.extent;
    }
    bool fire(std::size_t id, const Xfer &x) override {
        const Step &st = step(id);
        if (st.kind == Kind::Recv) return recv(at(st.seg), seg_.length(st.seg), node_.parent, x);
        return send(at(st.seg), seg_.length(st.seg), node_.children[st.idx], x);
    }

    char *buf_;
    Segmentation seg_;
    TreeNode node_;
};

// --------------------------------------------------------- reduce, allreduce

// Up phase (both), per segment: receive each child's partial result into
// a scratch buffer, fold them with the rank's own contribution (local
// steps), send the result to the parent; the root's result lands in
// recvbuf.  Down phase (allreduce only): the root's result segments flow
// back down the same tree into every rank's recvbuf (a receive from the
// parent, a send to each child).  A rank receives result segment s as
// soon as recvbuf's segment s is no longer read by the up phase: at once
// without MPI_IN_PLACE; with it, once s is folded (a rank with children
// reads its own data only while folding) or, at a leaf, whose up-going send
// reads recvbuf directly, once that send completed.
//
// The phases have channels of their own (their own budgets): the up phase
// never waits for a resource the down phase holds (its progress depends
// only on the subtree below), so the down phase, which depends on the up
// phase, cannot close a cycle.  The up phase's receives also wait for a
// free scratch buffer (at most max_recv + max_send + children + 1 in use).
class ReduceOp final : public Schedule {
  public:
    ReduceOp(const collx_transport_t &t, const void *sendbuf, void *recvbuf, std::size_t count,
             const collx_dtype_t &dt, void *op, bool commutative, int root, bool all, int tag,
             const collx_tuning_t &tun, const collx_notify_t *notify)
        : Schedule(t, dt, tag, tun, notify),
          sbuf_(static_cast<const char *>(sendbuf)),
          rbuf_(static_cast<char *>(recvbuf)),
          op_(op),
          commute_(commutative),
          seg_(count, dt.size, tun.segment_bytes),
          node_(commutative ? tree_node(shape_of(tun), t.size, all ? 0 : root, t.rank)
                            : ordered_node(shape_of(tun), t.size, all ? 0 : root, t.rank)),
          pool_(dt, seg_.per_seg) {
        is_root_ = node_.parent < 0;
        in_place_ = sendbuf == nullptr && (all || is_root_);
        nchild_ = node_.children.size();
        if (is_root_ && nchild_ == 0) {  // a single rank: the result is its own data
            if (!in_place_) copy(rbuf_, sbuf_, seg_.count);
            return;
        }
        buf_limit_ = static_cast<std::size_t>(tun_.max_recv + tun_.max_send) + nchild_ + 1;
        got_.assign(nchild_ * seg_.nseg, nullptr);
        acc_.assign(seg_.nseg, nullptr);
        // (receives first: each pass posts them before the sends)
        up_recvs_ = nchild_ ? channel(tun_.max_recv, Xfer::Up) : -1;
        const int down_recvs = all && !is_root_ ? channel(tun_.max_recv) : -1;
        const int up_sends = is_root_ ? -1 : channel(tun_.max_send, Xfer::Up);
        const int down_sends = all && nchild_ ? channel(tun_.max_send) : -1;
        reserve(seg_.nseg * (2 * nchild_ + 2 + (all ? nchild_ + 1 : 0)),
                seg_.nseg * (2 * nchild_ + 2 + (all ? nchild_ : 0)));
        for (std::size_t s = 0; s < seg_.nseg; ++s) {
            std::size_t folded = kNone;  // s reduced over my subtree
            if (commute_) {  // one fold per child, in position order
                for (std::size_t c = 0; c < nchild_; ++c) {
                    const std::size_t r = add(Kind::Recv, up_recvs_, s, c);
                    const std::size_t f = add(Kind::Local, -1, s, c);
                    after(f, r);
                    after(f, folded);
                    folded = f;
                }
            } else if (nchild_) {  // one fold of all operands, in rank order
                folded = add(Kind::Local, -1, s, 0);
                for (std::size_t c = 0; c < nchild_; ++c)
                    after(folded, add(Kind::Recv, up_recvs_, s, c));
            }
            std::size_t up = kNone;
            if (!is_root_) {
                up = add(Kind::Send, up_sends, s, 0);
                after(up, folded);
            }
            std::size_t result = folded;  // the result of s is in recvbuf
            if (down_recvs >= 0) {
                result = add(Kind::Recv, down_recvs, s, 0);
                if (in_place_) after(result, nchild_ ? folded : up);
            }
            if (down_sends >= 0)
                for (std::size_t c = 0; c < nchild_; ++c)
                    after(add(Kind::Send, down_sends, s, c), result);
        }
    }

  private:
    std::ptrdiff_t off(std::size_t s) const {
        return static_cast<std::ptrdiff_t>(seg_.first(s)) * dt_.extent;
    }
    const char *own(std::size_t s) const { return (in_place_ ? rbuf_ : sbuf_) + off(s); }
    char *result(std::size_t s) const { return rbuf_ + off(s); }
    char *&got(std::size_t s, std::size_t c) { return got_[s * nchild_ + c]; }

    bool fire(std::size_t id, const Xfer &x) override {
        const Step &st = step(id);
        const std::size_t s = st.seg, n = seg_.length(s);
        const bool up = x.phase == Xfer::Up;
        switch (st.kind) {
            case Kind::Recv:
                if (!up) return recv(result(s), n, node_.parent, x);
                got(s, st.idx) = pool_.get();
                return recv(got(s, st.idx), n, node_.children[st.idx], x);
            case Kind::Send:
                if (!up) return send(result(s), n, node_.children[st.idx], x);
                return send(acc_[s] ? acc_[s] : own(s), n, node_.parent, x);
            case Kind::Local: return commute_ ? fold_next(s, st.idx) : fold_ordered(s);
            case Kind::Sub: break;
        }
        return false;
    }
    void landed(std::size_t id, Xfer &x) override {
        if (step(id).kind == Kind::Send && x.phase == Xfer::Up) {  // the partial result went up
            pool_.put(acc_[x.seg]);
            acc_[x.seg] = nullptr;
        }
    }
    bool admit(int chan) const override {
        return chan != up_recvs_ || pool_.in_use() < buf_limit_;
    }

    // A commutative op still folds in one fixed order -- own data, then the
    // children by position -- so that a float sum gives bitwise the same
    // result whatever order the children's segments arrive in: the fold of
    // child c waits for its segment and for the fold of child c - 1.  (The
    // receive of every earlier child of the segment is posted before, so a
    // held buffer never waits on a receive the buffer limit keeps back.)
    bool fold_next(std::size_t s, std::size_t c) {
        const std::size_t n = seg_.length(s);
        char *b = got(s, c);
        got(s, c) = nullptr;
        if (is_root_) {
            if (c == 0 && !in_place_ && !copy(result(s), own(s), n)) return false;
            const bool ok = reduce(b, result(s), n, op_);
            pool_.put(b);
            return ok;
        }
        if (c == 0) {
            acc_[s] = b;
            return reduce(own(s), b, n, op_);
        }
        const bool ok = reduce(b, acc_[s], n, op_);
        pool_.put(b);
        return ok;
    }

    // All operands of segment s are here: fold them right to left so that
    // the result is operand[0] op operand[1] op ... in tree order.
    bool fold_ordered(std::size_t s) {
        const std::size_t n = seg_.length(s);
        const char *ownp = own(s);
        char *own_copy = nullptr;
        if (in_place_ && is_root_) {  // own data lives where the result goes
            own_copy = pool_.get();
            if (!copy(own_copy, ownp, n)) return false;
            ownp = own_copy;
        }
        std::vector<const char *> items;
        for (std::size_t i = 0; i <= nchild_; ++i) {
            if (i == node_.own_pos) items.push_back(ownp);
            if (i < nchild_) items.push_back(got(s, i));
        }
        char *acc;
        if (is_root_) {
            acc = result(s);
            if (!copy(acc, items.back(), n)) return false;
        } else if (items.back() != ownp) {
            acc = const_cast<char *>(items.back());
        } else {
            acc = pool_.get();
            if (!copy(acc, ownp, n)) return false;
        }
        for (std::size_t k = items.size() - 1; k-- > 0;)
            if (!reduce(items[k], acc, n, op_)) return false;
        for (std::size_t c = 0; c < nchild_; ++c) {
            if (got(s, c) != acc) pool_.put(got(s, c));
            got(s, c) = nullptr;
        }
        pool_.put(own_copy);
        if (!is_root_) acc_[s] = acc;
        return true;
    }

    const char *sbuf_;
    char *rbuf_;
    void *op_;
    bool commute_;
    Segmentation seg_;
    TreeNode node_;
    BufferPool pool_;
    bool is_root_ = false, in_place_ = false;
    std::size_t nchild_ = 0;
    int up_recvs_ = -1;          // the up phase's receives' channel
    std::size_t buf_limit_ = 0;  // scratch buffers in use at most
    std::vector<char *> got_;    // children's partial results, (segment, child), until folded
    std::vector<char *> acc_;    // per segment: its partial result until sent up (null: own data)
};

// ---------------------------------------------------------- ring allreduce

// Allreduce around the ring of ranks (COLLX_TREE_RING, commutative ops):
// the vector is cut into P chunks (collx_hier_chunk's sizes); in P-1
// reduce-scatter steps every rank sends a chunk to the next rank and folds
// the chunk the previous rank sent into its own, so that rank r ends with
// chunk r summed over all ranks; in P-1 allgather steps the summed chunks
// go round once more.  Every rank sends and receives 2(P-1)/P of the
// vector: bandwidth-optimal.  Each chunk is moved in segments, and a
// segment goes on to the next step as soon as it arrived (and was folded):
// no step waits for the whole chunk, no rank for all the others.  Either
// half runs on its own too (collx_ring_start's phases): the reduce-scatter
// leaves rank r chunk r, the allgather spreads each rank's chunk r, as
// hanx's split rails need them inside a node.
//
// The chunks are collx_hier_chunk's (near-equal, in rank order) or the
// caller's counts, in rank order: rank r's chunk r (a reduce_scatter's
// pieces, split rails' parts).  A chunk may be empty: its steps then move
// nothing.
//
// Determinism: chunk c is reduced once, left to right from rank c+1 round
// to rank c (the partial result that arrives op the rank's own data), and
// then only copied: every rank gets the same bits, run after run, in any
// order of arrival.  (Not rank order: non-commutative ops take the chain.)
//
// The messages of one direction, (step k, segment j of the step's chunk),
// are posted in that order on both sides (one channel each), so MPI
// matches them; a send waits for segment j of step k-1 (its receive, and
// in the reduce-scatter its fold).  An allgather receive lands in recvbuf
// where this rank's reduce-scatter sent from: it waits for that send.  (The
// segment cannot come back before the next rank has received it -- the
// summed chunk needs it -- but a send buffer is the sender's until its
// send completes.)
class RingAllreduce final : public Schedule {
  public:
    RingAllreduce(const collx_transport_t &t, int phases, const void *sendbuf, void *recvbuf,
                  std::size_t count, const std::size_t *chunks, const collx_dtype_t &dt, void *op,
                  int tag, const collx_tuning_t &tun, const collx_notify_t *notify)
        : Schedule(t, dt, tag, tun, notify),
          rbuf_(static_cast<char *>(recvbuf)),
          op_(op),
          P_(t.size),
          per_seg_(Segmentation(count, dt.size, tun.segment_bytes).per_seg),
          pool_(dt, per_seg_) {
        const std::size_t n = dt.size ? count : 0;
        if (sendbuf != nullptr && !copy(rbuf_, sendbuf, n)) return;
        if (P_ < 2 || n == 0) return;
        const int r = t.rank;
        const int first = (phases & COLLX_RING_REDUCE_SCATTER) ? 0 : P_ - 1;
        const int last = (phases & COLLX_RING_ALLGATHER) ? 2 * (P_ - 1) : P_ - 1;
        const bool gated = phases == COLLX_RING_ALLREDUCE;
        auto chunk = [&](int c) { return static_cast<std::size_t>(((c % P_) + P_) % P_); };
        // chunk c is [at[c], at[c + 1]) of the vector
        std::vector<std::size_t> at(static_cast<std::size_t>(P_) + 1, 0);
        for (int c = 0; c < P_; ++c) {
            std::size_t first_el, len;
            if (chunks == nullptr) collx_hier_chunk(n, P_, c, &first_el, &len);
            else len = chunks[c];
            at[static_cast<std::size_t>(c) + 1] = at[static_cast<std::size_t>(c)] + len;
        }
        const int recvs = channel(tun_.max_recv), sends = channel(tun_.max_send);
        // per step, its messages' ids: sends, and the receives (or, in the
        // reduce-scatter, their folds) the next step's sends wait for
        std::vector<std::size_t> sent, got, prev_got;
        std::vector<std::vector<std::size_t>> rs_sent;  // the reduce-scatter's sends, per step
        for (int k = first; k < last; ++k) {
            const bool rs = k < P_ - 1;
            const int a = rs ? k : k - (P_ - 1);  // the step within its phase
            const std::size_t sc = chunk(rs ? r - a - 1 : r - a), rc = chunk(rs ? r - a - 2 : r - a - 1);
            sent.clear();
            for (std::size_t o = 0, j = 0; o < at[sc + 1] - at[sc]; o += per_seg_, ++j) {
                msgs_.push_back({at[sc] + o, std::min(per_seg_, at[sc + 1] - at[sc] - o), rs});
                const std::size_t id = add(Kind::Send, sends, msgs_.size() - 1, 0);
                if (k > first) after(id, prev_got[j]);
                sent.push_back(id);
            }
            got.clear();
            for (std::size_t o = 0, j = 0; o < at[rc + 1] - at[rc]; o += per_seg_, ++j) {
                msgs_.push_back({at[rc] + o, std::min(per_seg_, at[rc + 1] - at[rc] - o), rs});
                const std::size_t m = msgs_.size() - 1;
                std::size_t id = add(Kind::Recv, recvs, m, 0);
                if (!rs && gated) after(id, rs_sent[static_cast<std::size_t>(a)][j]);
                if (rs) {  // fold the partial result into my chunk
                    const std::size_t f = add(Kind::Local, -1, m, 0);
                    after(f, id);
                    id = f;
                }
                got.push_back(id);
            }
            if (rs && gated) rs_sent.push_back(sent);
            prev_got.swap(got);
        }
        held_.assign(msgs_.size(), nullptr);
    }

  private:
    struct Msg {
        std::size_t first, len;  // elements of the vector
        bool rs;                 // a reduce-scatter message (received into scratch, folded)
    };
    char *at(const Msg &m) const {
        return rbuf_ + static_cast<std::ptrdiff_t>(m.first) * dt_.extent;
    }

    bool fire(std::size_t id, const Xfer &x) override {
        const std::size_t i = step(id).seg;
        const Msg &m = msgs_[i];
        switch (step(id).kind) {
            case Kind::Send: return send(at(m), m.len, (t_.rank + 1) % P_, x);
            case Kind::Recv: {
                char *into = m.rs ? (held_[i] = pool_.get()) : at(m);
                return recv(into, m.len, (t_.rank + P_ - 1) % P_, x);
            }
            case Kind::Local: {
                const bool ok = reduce(held_[i], at(m), m.len, op_);
                pool_.put(held_[i]);
                held_[i] = nullptr;
                return ok;
            }
            case Kind::Sub: break;
        }
        return false;
    }

    char *rbuf_;
    void *op_;
    int P_;
    std::size_t per_seg_;
    BufferPool pool_;
    std::vector<Msg> msgs_;     // every message, by index (a step's seg)
    std::vector<char *> held_;  // a reduce-scatter message's scratch buffer, until folded
};


// ------------------------------------------------ recursive-doubling allreduce

// Allreduce by recursive doubling (COLLX_TREE_RECURSIVE_DOUBLING, any op):
// log2 P exchange steps, each rank swapping its partial result with the rank
// whose number differs in one bit and folding the two; the latency-bound
// algorithm (one message step fewer than the levels' reduce, leaders'
// allreduce and bcast).  With P not a power of two, the first 2r ranks
// (r = P - 2^k) pair up first: each even one hands its data to the odd one
// above it, which folds it and takes part for both, and gets the result back
// at the end.
//
// Rank order and determinism: after the pairing, the ranks taking part hold
// contiguous runs of ranks, and every fold puts the lower run's partial
// result on the left (lower op higher), so non-commutative ops come out in
// rank order, and both partners of a step compute the same value from the
// same operands: every rank gets the same bits, run after run, in any order
// of arrival.
//
// Each exchange moves the whole vector in segments; exchange i of segment
// j ends with a local step (the fold, if any) that waits for both its
// send (the fold overwrites what it sent) and its receive, and exchange
// i+1's send of j waits for it.  Messages are posted in (exchange,
// segment) order on both sides of every pair (one channel for sends, one
// for receives), so MPI matches them.
class RdAllreduce final : public Schedule {
  public:
    RdAllreduce(const collx_transport_t &t, const void *sendbuf, void *recvbuf,
                std::size_t count, const collx_dtype_t &dt, void *op, int tag,
                const collx_tuning_t &tun, const collx_notify_t *notify)
        : Schedule(t, dt, tag, tun, notify),
          rbuf_(static_cast<char *>(recvbuf)),
          op_(op),
          seg_(dt.size ? count : 0, dt.size, tun.segment_bytes),
          pool_(dt, seg_.per_seg) {
        if (sendbuf != nullptr && !copy(rbuf_, sendbuf, seg_.count)) return;
        const int P = t.size, r = t.rank;
        if (P < 2 || seg_.nseg == 0) return;
        int pof2 = 1;
        while (pof2 * 2 <= P) pof2 *= 2;
        const int rem = P - pof2;
        if (r < 2 * rem && r % 2 == 0) {  // hands its data over, gets the result
            ex_.push_back({r + 1, true, false, Fold::None});
            ex_.push_back({r + 1, false, true, Fold::None});
        } else {
            if (r < 2 * rem) ex_.push_back({r - 1, false, true, Fold::Lower});
            const int me = r < 2 * rem ? r / 2 : r - rem;
            for (int mask = 1; mask < pof2; mask <<= 1) {
                const int v = me ^ mask, peer = v < rem ? 2 * v + 1 : v + rem;
                ex_.push_back({peer, true, true, peer < r ? Fold::Lower : Fold::Higher});
            }
            if (r < 2 * rem) ex_.push_back({r - 1, true, false, Fold::None});
        }
        const std::size_t nseg = seg_.nseg;
        const int recvs = channel(tun_.max_recv), sends = channel(tun_.max_send);
        std::vector<std::size_t> done(nseg, kNone);  // exchange i-1 of segment j, finished
        reserve(3 * ex_.size() * nseg, 4 * ex_.size() * nseg);
        for (std::size_t i = 0; i < ex_.size(); ++i)
            for (std::size_t j = 0; j < nseg; ++j) {
                const Exchange &e = ex_[i];
                const std::size_t snd = e.send ? add(Kind::Send, sends, j, i) : kNone;
                const std::size_t rcv = e.recv ? add(Kind::Recv, recvs, j, i) : kNone;
                if (snd != kNone) after(snd, done[j]);
                if (rcv != kNone && e.fold == Fold::None) after(rcv, done[j]);  // the result
                const std::size_t end = add(Kind::Local, -1, j, i);
                after(end, snd);
                after(end, rcv);
                done[j] = end;
            }
        got_.assign(ex_.size() * nseg, nullptr);
    }

  private:
    enum class Fold { None, Lower, Higher };  // the received data: none, left, right operand
    struct Exchange {
        int peer;
        bool send, recv;
        Fold fold;
    };

    char *at(std::size_t j) const {
        return rbuf_ + static_cast<std::ptrdiff_t>(seg_.first(j)) * dt_.extent;
    }

    bool fire(std::size_t id, const Xfer &x) override {
        const std::size_t j = step(id).seg, i = step(id).idx, n = seg_.length(j);
        const Exchange &e = ex_[i];
        char *&in = got_[i * seg_.nseg + j];
        switch (step(id).kind) {
            case Kind::Send: return send(at(j), n, e.peer, x);
            case Kind::Recv:  // a partial result to fold, or the result where my data was
                return recv(e.fold != Fold::None ? (in = pool_.get()) : at(j), n, e.peer, x);
            case Kind::Local: {
                if (e.fold == Fold::None) return true;
                const bool ok = e.fold == Fold::Lower
                                    ? reduce(in, at(j), n, op_)
                                    : reduce(at(j), in, n, op_) && copy(at(j), in, n);
                pool_.put(in);
                in = nullptr;
                return ok;
            }
            case Kind::Sub: break;
        }
        return false;
    }

    char *rbuf_;
    void *op_;
    Segmentation seg_;
    BufferPool pool_;
    std::vector<Exchange> ex_;
    std::vector<char *> got_;  // (exchange i, segment j) at i * nseg + j: the received partial result
};

}  // namespace

std::unique_ptr<Operation> make_bcast(const collx_transport_t &t, void *buf, std::size_t count,
                                      const collx_dtype_t &dt, int root, int tag,
                                      const collx_tuning_t &tun, const collx_notify_t *notify) {
    return std::make_unique<Bcast>(t, buf, count, dt, root,
                                   tree_node(shape_of(tun), t.size, root, t.rank), tag, tun,
                                   notify);
}

std::vector<std::unique_ptr<Operation>> make_allgather(const collx_transport_t &t, void *buf,
                                                       const std::size_t *counts,
                                                       const std::size_t *displs,
                                                       const collx_dtype_t &dt,
                                                       const int *node_of, int tag,
                                                       const collx_tuning_t &tun,
                                                       const collx_notify_t *notify) {
    std::vector<int> own;  // no node map: every rank its own node
    if (node_of == nullptr) {
        own.resize(static_cast<std::size_t>(t.size));
        std::iota(own.begin(), own.end(), 0);
        node_of = own.data();
    }
    const NodeGroups groups = node_groups(node_of, t.size);  // (once for every root's tree)
    std::vector<std::unique_ptr<Operation>> parts;
    parts.reserve(static_cast<std::size_t>(t.size));
    for (int r = 0; r < t.size; ++r)
        parts.push_back(std::make_unique<Bcast>(
            t, static_cast<char *>(buf) + static_cast<std::ptrdiff_t>(displs[r]) * dt.extent,
            counts[r], dt, r, topo_ring_node(groups, r, t.rank), tag - r, tun, notify));
    return parts;
}

std::unique_ptr<Operation> make_ring(const collx_transport_t &t, int phases, const void *sendbuf,
                                     void *recvbuf, std::size_t count, const collx_dtype_t &dt,
                                     void *op, int tag, const collx_tuning_t &tun,
                                     const collx_notify_t *notify, const std::size_t *chunks) {
    return std::make_unique<RingAllreduce>(t, phases, sendbuf, recvbuf, count, chunks, dt, op, tag,
                                           tun, notify);
}

std::unique_ptr<Operation> make_reduce(const collx_transport_t &t, const void *sendbuf,
                                       void *recvbuf, std::size_t count, const collx_dtype_t &dt,
                                       void *op, bool commutative, int root, bool all, int tag,
                                       const collx_tuning_t &tun, const collx_notify_t *notify) {
    if (all && commutative && tun.tree == COLLX_TREE_RING)
        return make_ring(t, COLLX_RING_ALLREDUCE, sendbuf, recvbuf, count, dt, op, tag, tun,
                         notify);
    if (all && tun.tree == COLLX_TREE_RECURSIVE_DOUBLING)
        return std::make_unique<RdAllreduce>(t, sendbuf, recvbuf, count, dt, op, tag, tun,
                                             notify);
    return std::make_unique<ReduceOp>(t, sendbuf, recvbuf, count, dt, op, commutative, root, all,
                                      tag, tun, notify);
}

}  // namespace collx
