#include "executor.hpp"

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
        while (!events_.empty()) {
            auto [x, st] = events_.front();
            events_.pop_front();
            --in_flight_[x->kind][x->phase];
            if (st != 0) status_ = COLLX_ERR;
            else if (!failed()) on_done(*x);
            delete x;
        }
        if (!failed()) post_ready();
        if (events_.empty()) break;
    }
    driving_ = false;
    bool idle = true;
    for (auto &k : in_flight_)
        for (int n : k) idle = idle && n == 0;
    if (idle && (failed() || all_done())) {
        done_ = true;
        return true;
    }
    return false;
}

bool Operation::post(Xfer::Kind kind, void *buf, std::size_t count, int peer, Xfer x) {
    Xfer *rec = new Xfer(x);
    rec->op = this;
    rec->kind = kind;
    int &in_flight = in_flight_[kind][x.phase];
    ++in_flight;  // before posting: the completion may be reported inside the call
    const int rc = kind == Xfer::Send ? t_.isend(t_.ctx, buf, count, &dt_, peer, tag_, rec)
                                      : t_.irecv(t_.ctx, buf, count, &dt_, peer, tag_, rec);
    if (rc != 0) {
        --in_flight;
        delete rec;
        status_ = COLLX_ERR;
        return false;
    }
    return true;
}

bool Operation::start_step(collx_step_fn fn, void *ctx, int stage, Xfer x) {
    Xfer *rec = new Xfer(x);
    rec->op = this;
    rec->kind = Xfer::Step;
    int &in_flight = in_flight_[Xfer::Step][x.phase];
    ++in_flight;  // before starting: the step may complete inside the call
    if (fn(ctx, stage, x.seg, rec) != 0) {
        --in_flight;
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

bool Operation::drain(std::deque<PendingSend> &q, const Segmentation &seg, Xfer::Phase phase) {
    while (!q.empty() && in_flight(Xfer::Send, phase) < tun_.max_send) {
        PendingSend p = q.front();
        q.pop_front();
        Xfer x;
        x.phase = p.phase;
        x.seg = p.seg;
        x.peer_idx = p.peer_idx;
        x.buf = p.release;
        if (!send(p.src, seg.length(p.seg), p.peer, x)) return false;
    }
    return true;
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

// Releases items in index order although they become ready in any order:
// MPI matches a pair's messages in posting order, while completions (a
// small eager segment overtakes a large rendezvous one) arrive in any.
class InOrder {
  public:
    explicit InOrder(std::size_t n = 0) : ready_(n, 0) {}
    // mark i ready; call f(j) for every j that may now go, in order
    template <class F>
    void ready(std::size_t i, F f) {
        ready_[i] = 1;
        while (next_ < ready_.size() && ready_[next_]) f(next_++);
    }

  private:
    std::vector<char> ready_;
    std::size_t next_ = 0;
};

// ------------------------------------------------------------------- bcast

class Bcast final : public Operation {
  public:
    Bcast(const collx_transport_t &t, void *buf, std::size_t count, const collx_dtype_t &dt,
          int root, TreeNode node, int tag, const collx_tuning_t &tun,
          const collx_notify_t *notify)
        : Operation(t, dt, tag, tun, notify),
          buf_(static_cast<char *>(buf)),
          seg_(count, dt.size, tun.segment_bytes),
          node_(std::move(node)),
          fwd_(seg_.nseg) {
        order_for_bcast(node_);
        is_root_ = (t.rank == root);
        sends_total_ = seg_.nseg * node_.children.size();
        if (is_root_)
            for (std::size_t s = 0; s < seg_.nseg; ++s) queue_sends(s);
    }

  private:
    char *at(std::size_t s) const {
        return buf_ + static_cast<std::ptrdiff_t>(seg_.first(s)) * dt_.extent;
    }
    void queue_sends(std::size_t s) {
        for (std::size_t c = 0; c < node_.children.size(); ++c)
            send_q_.push_back({s, node_.children[c], c, at(s), nullptr, Xfer::Down});
    }
    void on_done(Xfer &x) override {
        if (x.kind == Xfer::Recv) {
            ++recvd_;
            fwd_.ready(x.seg, [&](std::size_t s) { queue_sends(s); });
        } else {
            ++sends_done_;
        }
    }
    void post_ready() override {
        while (!is_root_ && next_recv_ < seg_.nseg &&
               in_flight(Xfer::Recv, Xfer::Down) < tun_.max_recv) {
            Xfer x;
            x.seg = next_recv_++;
            if (!recv(at(x.seg), seg_.length(x.seg), node_.parent, x)) return;
        }
        drain(send_q_, seg_, Xfer::Down);
    }
    bool all_done() const override {
        return (is_root_ || recvd_ == seg_.nseg) && sends_done_ == sends_total_;
    }

    char *buf_;
    Segmentation seg_;
    TreeNode node_;
    InOrder fwd_;
    bool is_root_ = false;
    std::size_t next_recv_ = 0, recvd_ = 0, sends_done_ = 0, sends_total_ = 0;
    std::deque<PendingSend> send_q_;
};

// --------------------------------------------------------- reduce, allreduce

// Up phase (both): every rank combines its children's partial results with
// its own contribution, segment by segment, and sends the result to its
// parent; the root's result lands in recvbuf.  Down phase (allreduce
// only): the root's result segments flow back down the same tree into
// every rank's recvbuf.  A rank posts the receive of result segment s as
// soon as recvbuf's segment s is no longer read by the up phase: at once
// without MPI_IN_PLACE; with it, once s is folded (a rank with children
// reads its own data only while folding) or, at a leaf, whose up-going send
// reads recvbuf directly, once that send completed.
class ReduceOp final : public Operation {
  public:
    ReduceOp(const collx_transport_t &t, const void *sendbuf, void *recvbuf, std::size_t count,
             const collx_dtype_t &dt, void *op, bool commutative, int root, bool all, int tag,
             const collx_tuning_t &tun, const collx_notify_t *notify)
        : Operation(t, dt, tag, tun, notify),
          sbuf_(static_cast<const char *>(sendbuf)),
          rbuf_(static_cast<char *>(recvbuf)),
          op_(op),
          commute_(commutative),
          all_(all),
          seg_(count, dt.size, tun.segment_bytes),
          node_(commutative ? tree_node(shape_of(tun), t.size, all ? 0 : root, t.rank)
                            : ordered_node(shape_of(tun), t.size, all ? 0 : root, t.rank)),
          pool_(dt, seg_.per_seg),
          up_(seg_.nseg),
          down_(seg_.nseg) {
        is_root_ = node_.parent < 0;
        in_place_ = sendbuf == nullptr && (all_ || is_root_);
        nchild_ = node_.children.size();
        st_.resize(nchild_ ? seg_.nseg : 0);
        for (auto &s : st_) s.got.assign(nchild_, nullptr);
        held_.assign(is_root_ ? 0 : seg_.nseg, nullptr);
        // allreduce, non-root: may the result of segment s land in recvbuf yet?
        result_free_.assign(all_ && !is_root_ ? seg_.nseg : 0, in_place_ ? 0 : 1);
        buf_limit_ = static_cast<std::size_t>(tun_.max_recv + tun_.max_send) + nchild_ + 1;
        down_total_ = all_ ? seg_.nseg * nchild_ : 0;
        if (nchild_ == 0) {
            if (is_root_) {  // a single rank: the result is its own data
                if (!in_place_) copy(rbuf_, sbuf_, seg_.count);
                folded_ = seg_.nseg;
            } else {
                for (std::size_t s = 0; s < seg_.nseg; ++s) segment_complete(s, nullptr);
            }
        }
    }

  private:
    struct SegState {
        std::vector<char *> got;  // children's partial results by position, until folded
        std::size_t arrived = 0;  // non-commutative: how many are here
        std::size_t next = 0;     // commutative: children folded so far (a prefix)
        char *acc = nullptr;      // commutative: running partial result
        bool root_init = false;   // root: own data placed in recvbuf
    };

    std::ptrdiff_t off(std::size_t s) const {
        return static_cast<std::ptrdiff_t>(seg_.first(s)) * dt_.extent;
    }
    const char *own(std::size_t s) const { return (in_place_ ? rbuf_ : sbuf_) + off(s); }
    char *result(std::size_t s) const { return rbuf_ + off(s); }

    void queue_down(std::size_t s) {
        for (std::size_t c = 0; c < nchild_; ++c)
            down_q_.push_back({s, node_.children[c], c, result(s), nullptr, Xfer::Down});
    }

    // Segment s is reduced over this rank's subtree (acc: the pooled buffer
    // holding it, nullptr when it is the rank's own data or recvbuf).
    void segment_complete(std::size_t s, char *acc) {
        ++folded_;
        if (is_root_) {
            if (all_) down_.ready(s, [&](std::size_t k) { queue_down(k); });
            return;
        }
        held_[s] = acc;
        if (all_ && nchild_) result_free_[s] = 1;  // own data read while folding: done
        up_.ready(s, [&](std::size_t k) {
            up_q_.push_back({k, node_.parent, 0, held_[k] ? held_[k] : own(k), held_[k],
                               Xfer::Up});
        });
    }

    // A commutative op still folds in one fixed order -- own data, then the
    // children by position -- so that a float sum gives bitwise the same
    // result whatever order the children's segments arrive in.  A child's
    // segment that arrives early waits in its pooled buffer; each arrival
    // folds the longest prefix that is complete, so the fold still overlaps
    // the transfers.  (The receive of every earlier child of the segment is
    // already posted, segment-major, so a held buffer never waits on a
    // receive the buffer limit keeps from being posted.)
    void arrive_commutative(std::size_t s, std::size_t idx, char *b) {
        SegState &st = st_[s];
        st.got[idx] = b;
        const std::size_t n = seg_.length(s);
        while (st.next < nchild_ && st.got[st.next]) {
            char *c = st.got[st.next];
            st.got[st.next++] = nullptr;
            if (is_root_) {
                if (!st.root_init) {
                    if (!in_place_ && !copy(result(s), own(s), n)) return;
                    st.root_init = true;
                }
                if (!reduce(c, result(s), n, op_)) return;
                pool_.put(c);
            } else if (!st.acc) {
                if (!reduce(own(s), c, n, op_)) return;
                st.acc = c;
            } else {
                if (!reduce(c, st.acc, n, op_)) return;
                pool_.put(c);
            }
        }
        if (st.next == nchild_) segment_complete(s, is_root_ ? nullptr : st.acc);
    }

    // All operands of segment s are here: fold them right to left so that
    // the result is operand[0] op operand[1] op ... in tree order.
    void fold_ordered(std::size_t s) {
        SegState &st = st_[s];
        const std::size_t n = seg_.length(s);
        const char *ownp = own(s);
        char *own_copy = nullptr;
        if (in_place_ && is_root_) {  // own data lives where the result goes
            own_copy = pool_.get();
            if (!copy(own_copy, ownp, n)) return;
            ownp = own_copy;
        }
        std::vector<const char *> items;
        for (std::size_t i = 0; i <= nchild_; ++i) {
            if (i == node_.own_pos) items.push_back(ownp);
            if (i < nchild_) items.push_back(st.got[i]);
        }
        char *acc;
        if (is_root_) {
            acc = result(s);
            if (!copy(acc, items.back(), n)) return;
        } else if (items.back() != ownp) {
            acc = const_cast<char *>(items.back());
        } else {
            acc = pool_.get();
            if (!copy(acc, ownp, n)) return;
        }
        for (std::size_t k = items.size() - 1; k-- > 0;)
            if (!reduce(items[k], acc, n, op_)) return;
        for (char *b : st.got)
            if (b != acc) pool_.put(b);
        st.got.clear();
        pool_.put(own_copy);
        segment_complete(s, is_root_ ? nullptr : acc);
    }

    void on_done(Xfer &x) override {
        const bool up = x.phase == Xfer::Up;
        if (x.kind == Xfer::Send) {
            pool_.put(x.buf);
            if (up) {
                ++sent_up_;
                if (all_) result_free_[x.seg] = 1;  // a leaf's send read recvbuf
            } else {
                ++down_sent_;
            }
            return;
        }
        if (!up) {  // a segment of the final result
            ++down_recvd_;
            down_.ready(x.seg, [&](std::size_t k) { queue_down(k); });
        } else if (commute_) {
            arrive_commutative(x.seg, x.peer_idx, x.buf);
        } else {
            SegState &st = st_[x.seg];
            st.got[x.peer_idx] = x.buf;
            if (++st.arrived == nchild_) fold_ordered(x.seg);
        }
    }

    // The two phases have separate budgets and queues: the up phase never
    // waits for a resource the down phase holds (its progress depends only
    // on the subtree below), so the down phase, which depends on the up
    // phase, cannot close a cycle.
    void post_ready() override {
        // up phase: children's partial results, segment-major
        while (nchild_ && rseg_ < seg_.nseg && in_flight(Xfer::Recv, Xfer::Up) < tun_.max_recv &&
               pool_.in_use() < buf_limit_) {
            Xfer x;
            x.phase = Xfer::Up;
            x.seg = rseg_;
            x.peer_idx = rchild_;
            x.buf = pool_.get();
            if (++rchild_ == nchild_) {
                rchild_ = 0;
                ++rseg_;
            }
            if (!recv(x.buf, seg_.length(x.seg), node_.children[x.peer_idx], x)) return;
        }
        // down phase: the result, once recvbuf's segment is free
        while (all_ && !is_root_ && dseg_ < seg_.nseg && result_free_[dseg_] &&
               in_flight(Xfer::Recv, Xfer::Down) < tun_.max_recv) {
            Xfer x;
            x.phase = Xfer::Down;
            x.seg = dseg_++;
            if (!recv(result(x.seg), seg_.length(x.seg), node_.parent, x)) return;
        }
        if (!drain(up_q_, seg_, Xfer::Up)) return;
        drain(down_q_, seg_, Xfer::Down);
    }

    bool all_done() const override {
        const bool up_done = is_root_ ? folded_ == seg_.nseg : sent_up_ == seg_.nseg;
        if (!all_) return up_done;
        return up_done && (is_root_ || down_recvd_ == seg_.nseg) && down_sent_ == down_total_;
    }

    const char *sbuf_;
    char *rbuf_;
    void *op_;
    bool commute_, all_;
    Segmentation seg_;
    TreeNode node_;
    BufferPool pool_;
    InOrder up_, down_;
    bool is_root_ = false, in_place_ = false;
    std::size_t nchild_ = 0;
    std::vector<SegState> st_;
    std::vector<char *> held_;   // reduced segments waiting for their turn to go up
    std::vector<char> result_free_;  // allreduce: recvbuf segment s may receive the result
    std::size_t buf_limit_ = 0;
    std::size_t rseg_ = 0, rchild_ = 0, dseg_ = 0;
    std::size_t folded_ = 0, sent_up_ = 0, down_recvd_ = 0, down_sent_ = 0, down_total_ = 0;
    std::deque<PendingSend> up_q_, down_q_;
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
// are posted in that order on both sides, so MPI matches them; a send is
// ready when segment j of step k-1 arrived, and goes out in order.  An
// allgather receive lands in recvbuf where this rank's reduce-scatter sent
// from: it is posted once that send completed.  (The segment cannot come
// back before the next rank has received it -- the summed chunk needs it --
// but a send buffer is the sender's until its send completes.)
class RingAllreduce final : public Operation {
  public:
    RingAllreduce(const collx_transport_t &t, int phases, const void *sendbuf, void *recvbuf,
                  std::size_t count, const std::size_t *chunks, const collx_dtype_t &dt, void *op,
                  int tag, const collx_tuning_t &tun, const collx_notify_t *notify)
        : Operation(t, dt, tag, tun, notify),
          rbuf_(static_cast<char *>(recvbuf)),
          op_(op),
          P_(t.size),
          first_((phases & COLLX_RING_REDUCE_SCATTER) ? 0 : t.size - 1),
          gated_(phases == COLLX_RING_ALLREDUCE),
          per_seg_(Segmentation(count, dt.size, tun.segment_bytes).per_seg),
          pool_(dt, per_seg_) {
        const std::size_t n = dt.size ? count : 0;
        if (sendbuf != nullptr && !copy(rbuf_, sendbuf, n)) return;
        if (P_ < 2 || n == 0) return;
        const int r = t.rank;
        const int last = (phases & COLLX_RING_ALLGATHER) ? 2 * (P_ - 1) : P_ - 1;
        auto chunk = [&](int c) { return static_cast<std::size_t>(((c % P_) + P_) % P_); };
        // chunk c is [at[c], at[c + 1]) of the vector
        std::vector<std::size_t> at(static_cast<std::size_t>(P_) + 1, 0);
        for (int c = 0; c < P_; ++c) {
            std::size_t first, len;
            if (chunks == nullptr) collx_hier_chunk(n, P_, c, &first, &len);
            else len = chunks[c];
            at[static_cast<std::size_t>(c) + 1] = at[static_cast<std::size_t>(c)] + len;
        }
        auto add = [&](std::vector<Msg> &v, std::vector<std::size_t> &base, int k, std::size_t c) {
            base.push_back(v.size());
            const std::size_t first = at[c], len = at[c + 1] - at[c];
            for (std::size_t o = 0; o < len; o += per_seg_)
                v.push_back({k, first + o, std::min(per_seg_, len - o)});
        };
        for (int k = first_; k < last; ++k) {
            const bool rs = k < P_ - 1;
            const int a = rs ? k : k - (P_ - 1);  // the step within its phase
            add(sends_, send_base_, k, chunk(rs ? r - a - 1 : r - a));
            add(recvs_, recv_base_, k, chunk(rs ? r - a - 2 : r - a - 1));
        }
        send_done_.assign(sends_.size(), 0);
        gate_ = InOrder(sends_.size());
        for (std::size_t i = 0; i < step_size(send_base_, sends_, 0); ++i) ready(i);
    }

  private:
    struct Msg {
        int step;
        std::size_t first, len;  // elements of the vector
    };

    std::size_t step_size(const std::vector<std::size_t> &base, const std::vector<Msg> &v,
                          int k) const {
        const auto next = static_cast<std::size_t>(k) + 1;
        return (next < base.size() ? base[next] : v.size()) - base[static_cast<std::size_t>(k)];
    }
    char *at(const Msg &m) const {
        return rbuf_ + static_cast<std::ptrdiff_t>(m.first) * dt_.extent;
    }
    void ready(std::size_t i) {
        gate_.ready(i, [&](std::size_t s) { queue_.push_back(s); });
    }

    void on_done(Xfer &x) override {
        if (x.kind == Xfer::Send) {
            send_done_[x.seg] = 1;
            ++sends_done_;
            return;
        }
        ++recvs_done_;
        const Msg &m = recvs_[x.seg];
        if (x.buf) {  // reduce-scatter: fold the partial result into my chunk
            const bool ok = reduce(x.buf, at(m), m.len, op_);
            pool_.put(x.buf);
            if (!ok) return;
        }
        const auto k = static_cast<std::size_t>(m.step - first_);  // (index of the step)
        if (k + 1 < send_base_.size())  // the segment goes on
            ready(send_base_[k + 1] + (x.seg - recv_base_[k]));
    }

    void post_ready() override {
        const int left = (t_.rank + P_ - 1) % P_, right = (t_.rank + 1) % P_;
        while (next_recv_ < recvs_.size() && in_flight(Xfer::Recv, Xfer::Down) < tun_.max_recv) {
            const Msg &m = recvs_[next_recv_];
            const std::size_t j = next_recv_ - recv_base_[static_cast<std::size_t>(m.step - first_)];
            Xfer x;
            x.seg = next_recv_;
            char *into;
            if (m.step < P_ - 1) {
                into = x.buf = pool_.get();
            } else {  // where my reduce-scatter (if any) sent this segment from
                if (gated_ &&
                    !send_done_[send_base_[static_cast<std::size_t>(m.step - (P_ - 1))] + j])
                    break;
                into = at(m);
            }
            ++next_recv_;
            if (!recv(into, m.len, left, x)) return;
        }
        while (!queue_.empty() && in_flight(Xfer::Send, Xfer::Down) < tun_.max_send) {
            const std::size_t i = queue_.front();
            queue_.pop_front();
            Xfer x;
            x.seg = i;
            if (!send(at(sends_[i]), sends_[i].len, right, x)) return;
        }
    }

    bool all_done() const override {
        return sends_done_ == sends_.size() && recvs_done_ == recvs_.size();
    }

    char *rbuf_;
    void *op_;
    int P_;
    int first_;   // the first step: 0, or P-1 for the allgather alone
    bool gated_;  // both halves: an allgather receive waits for its reduce-scatter send
    std::size_t per_seg_;
    BufferPool pool_;
    std::vector<Msg> sends_, recvs_;  // in posting order: step-major
    std::vector<std::size_t> send_base_, recv_base_;  // each step's first message
    std::vector<char> send_done_;
    InOrder gate_;
    std::deque<std::size_t> queue_;  // sends ready, in order
    std::size_t next_recv_ = 0, sends_done_ = 0, recvs_done_ = 0;
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
// Each step moves the whole vector in segments; segment j goes on to step
// i+1 once step i's exchange of it is complete (its send too: the fold
// overwrites what it sent).  Messages are posted in step-major order on
// both sides of every pair (the ring's rule), a send through an in-order
// gate, so MPI matches them.
class RdAllreduce final : public Operation {
  public:
    RdAllreduce(const collx_transport_t &t, const void *sendbuf, void *recvbuf,
                std::size_t count, const collx_dtype_t &dt, void *op, int tag,
                const collx_tuning_t &tun, const collx_notify_t *notify)
        : Operation(t, dt, tag, tun, notify),
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
            steps_.push_back({r + 1, true, false, Fold::None});
            steps_.push_back({r + 1, false, true, Fold::None});
        } else {
            if (r < 2 * rem) steps_.push_back({r - 1, false, true, Fold::Lower});
            const int me = r < 2 * rem ? r / 2 : r - rem;
            for (int mask = 1; mask < pof2; mask <<= 1) {
                const int v = me ^ mask, peer = v < rem ? 2 * v + 1 : v + rem;
                steps_.push_back({peer, true, true, peer < r ? Fold::Lower : Fold::Higher});
            }
            if (r < 2 * rem) steps_.push_back({r - 1, true, false, Fold::None});
        }
        const std::size_t S = steps_.size(), nseg = seg_.nseg;
        pending_.assign(S * nseg, 0);
        got_.assign(S * nseg, nullptr);
        send_at_.assign(S * nseg, SIZE_MAX);
        for (std::size_t i = 0; i < S; ++i)
            for (std::size_t j = 0; j < nseg; ++j) {
                const Step &st = steps_[i];
                pending_[i * nseg + j] = st.send + st.recv;
                if (st.send) send_at_[i * nseg + j] = sends_.size(), sends_.push_back(i * nseg + j);
                if (st.recv) recvs_.push_back(i * nseg + j);
            }
        step_done_.assign(S * nseg, 0);
        gate_ = InOrder(sends_.size());
        if (steps_[0].send)
            for (std::size_t j = 0; j < nseg; ++j) gate_.ready(j, [&](std::size_t s) {
                queue_.push_back(s);
            });
    }

  private:
    enum class Fold { None, Lower, Higher };  // the received data: none, left, right operand
    struct Step {
        int peer;
        bool send, recv;
        Fold fold;
    };

    char *at(std::size_t j) const {
        return rbuf_ + static_cast<std::ptrdiff_t>(seg_.first(j)) * dt_.extent;
    }

    void on_done(Xfer &x) override {
        const std::size_t k = x.seg, nseg = seg_.nseg;
        if (x.kind == Xfer::Recv) got_[k] = x.buf;
        if (--pending_[k] > 0) return;
        const std::size_t i = k / nseg, j = k % nseg;
        const Step &st = steps_[i];
        if (st.fold != Fold::None) {
            char *in = got_[k];
            got_[k] = nullptr;
            const std::size_t n = seg_.length(j);
            const bool ok = st.fold == Fold::Lower
                                ? reduce(in, at(j), n, op_)
                                : reduce(at(j), in, n, op_) && copy(at(j), in, n);
            pool_.put(in);
            if (!ok) return;
        }
        step_done_[k] = 1;
        ++done_;
        if (i + 1 < steps_.size() && steps_[i + 1].send)  // the segment goes on
            gate_.ready(send_at_[k + nseg], [&](std::size_t s) { queue_.push_back(s); });
    }

    void post_ready() override {
        const std::size_t nseg = seg_.nseg;
        while (next_recv_ < recvs_.size() && in_flight(Xfer::Recv, Xfer::Down) < tun_.max_recv) {
            const std::size_t k = recvs_[next_recv_], i = k / nseg, j = k % nseg;
            const Step &st = steps_[i];
            Xfer x;
            x.seg = k;
            char *into;
            if (st.fold != Fold::None) {
                into = x.buf = pool_.get();
            } else {  // the result, where this rank's data was sent from
                if (i > 0 && !step_done_[k - nseg]) break;
                into = at(j);
            }
            ++next_recv_;
            if (!recv(into, seg_.length(j), st.peer, x)) return;
        }
        while (!queue_.empty() && in_flight(Xfer::Send, Xfer::Down) < tun_.max_send) {
            const std::size_t k = sends_[queue_.front()];
            queue_.pop_front();
            Xfer x;
            x.seg = k;
            if (!send(at(k % nseg), seg_.length(k % nseg), steps_[k / nseg].peer, x)) return;
        }
    }

    bool all_done() const override { return done_ == pending_.size(); }

    char *rbuf_;
    void *op_;
    Segmentation seg_;
    BufferPool pool_;
    std::vector<Step> steps_;
    // per (step i, segment j), at i * nseg + j
    std::vector<int> pending_;           // transfers not yet complete
    std::vector<char *> got_;            // the received partial result, until folded
    std::vector<std::size_t> send_at_;   // its index in sends_
    std::vector<char> step_done_;
    std::vector<std::size_t> sends_, recvs_;  // (step, segment) in posting order: step-major
    InOrder gate_;
    std::deque<std::size_t> queue_;  // sends ready, in order (indices of sends_)
    std::size_t next_recv_ = 0, done_ = 0;
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
