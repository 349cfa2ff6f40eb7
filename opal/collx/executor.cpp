#include "executor.hpp"

#include <algorithm>
#include <climits>

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

Operation::Operation(const collx_transport_t &t, int tag, const collx_tuning_t &tun)
    : t_(t), tag_(tag), tun_(tun) {
    tun_.max_send = std::max(1, tun_.max_send);
    tun_.max_recv = std::max(1, tun_.max_recv);
}

void Operation::start() {
    std::lock_guard<std::recursive_mutex> g(mu_);
    drive();
}

void Operation::complete(Xfer *x, int status) {
    std::lock_guard<std::recursive_mutex> g(mu_);
    events_.emplace_back(x, status);
    if (!driving_) drive();
}

bool Operation::finished(int *status) {
    std::lock_guard<std::recursive_mutex> g(mu_);
    if (done_ && status) *status = status_;
    return done_;
}

void Operation::drive() {
    driving_ = true;
    for (;;) {
        while (!events_.empty()) {
            auto [x, st] = events_.front();
            events_.pop_front();
            (x->kind == Xfer::Send ? sends_in_flight_ : recvs_in_flight_)--;
            if (st != 0) status_ = COLLX_ERR;
            else if (!failed()) on_done(*x);
            delete x;
        }
        if (!failed()) post_ready();
        if (events_.empty()) break;
    }
    if (sends_in_flight_ == 0 && recvs_in_flight_ == 0 && (failed() || all_done())) done_ = true;
    driving_ = false;
}

bool Operation::post(Xfer::Kind kind, void *buf, std::size_t count, int peer, Xfer x) {
    Xfer *rec = new Xfer(x);
    rec->op = this;
    rec->kind = kind;
    int &in_flight = kind == Xfer::Send ? sends_in_flight_ : recvs_in_flight_;
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

// ------------------------------------------------------------------- bcast

namespace {

TreeNode tree_for_bcast(const collx_tuning_t &tun, int P, int root, int rank) {
    switch (tun.tree) {
        case COLLX_TREE_BINOMIAL:
        default:
            return binomial_bcast_node(P, root, rank);
    }
}

class Bcast final : public Operation {
  public:
    Bcast(const collx_transport_t &t, void *buf, std::size_t count, const collx_dtype_t &dt,
          int root, int tag, const collx_tuning_t &tun)
        : Operation(t, tag, tun),
          buf_(static_cast<char *>(buf)),
          seg_(count, dt.size, tun.segment_bytes),
          node_(tree_for_bcast(tun, t.size, root, t.rank)) {
        dt_ = dt;
        is_root_ = (t.rank == root);
        sends_total_ = seg_.nseg * node_.children.size();
        if (is_root_)
            for (std::size_t s = 0; s < seg_.nseg; ++s) queue_sends(s);
        else
            have_.assign(seg_.nseg, 0);
    }

  private:
    char *at(std::size_t s) const {
        return buf_ + static_cast<std::ptrdiff_t>(seg_.first(s)) * dt_.extent;
    }
    void queue_sends(std::size_t s) {
        for (std::size_t c = 0; c < node_.children.size(); ++c) send_q_.emplace_back(s, c);
    }
    void on_done(Xfer &x) override {
        if (x.kind == Xfer::Recv) {
            ++recvd_;
            // Receives may report completion out of order (a small eager
            // segment can overtake a large rendezvous one), but children
            // match our sends in posting order: forward in segment order.
            have_[x.seg] = 1;
            while (next_fwd_ < seg_.nseg && have_[next_fwd_]) queue_sends(next_fwd_++);
        } else {
            ++sends_done_;
        }
    }
    void post_ready() override {
        while (!is_root_ && next_recv_ < seg_.nseg && recvs_in_flight_ < tun_.max_recv) {
            Xfer x;
            x.seg = next_recv_++;
            if (!recv(at(x.seg), seg_.length(x.seg), node_.parent, x)) return;
        }
        while (!send_q_.empty() && sends_in_flight_ < tun_.max_send) {
            auto [s, c] = send_q_.front();
            send_q_.pop_front();
            Xfer x;
            x.seg = s;
            x.peer_idx = c;
            if (!send(at(s), seg_.length(s), node_.children[c], x)) return;
        }
    }
    bool all_done() const override {
        return (is_root_ || recvd_ == seg_.nseg) && sends_done_ == sends_total_;
    }

    char *buf_;
    Segmentation seg_;
    TreeNode node_;
    bool is_root_ = false;
    std::size_t next_recv_ = 0, recvd_ = 0, sends_done_ = 0, sends_total_ = 0;
    std::vector<char> have_;  // segments received (non-root)
    std::size_t next_fwd_ = 0;  // next segment to forward, in order
    std::deque<std::pair<std::size_t, std::size_t>> send_q_;
};

// ------------------------------------------------------------------ reduce

class Reduce final : public Operation {
  public:
    Reduce(const collx_transport_t &t, const void *sendbuf, void *recvbuf, std::size_t count,
           const collx_dtype_t &dt, void *op, bool commutative, int root, int tag,
           const collx_tuning_t &tun)
        : Operation(t, tag, tun),
          sbuf_(static_cast<const char *>(sendbuf)),
          rbuf_(static_cast<char *>(recvbuf)),
          op_(op),
          commute_(commutative),
          seg_(count, dt.size, tun.segment_bytes),
          node_(commutative ? binomial_node(t.size, root, t.rank)
                            : ordered_reduce_node(t.size, root, t.rank)),
          pool_(dt, seg_.per_seg) {
        dt_ = dt;
        is_root_ = (t.rank == root);
        in_place_ = is_root_ && sendbuf == nullptr;
        nchild_ = node_.children.size();
        st_.resize(nchild_ ? seg_.nseg : 0);
        if (!is_root_ && nchild_) {
            ready_.assign(seg_.nseg, nullptr);
            up_done_.assign(seg_.nseg, 0);
        }
        for (auto &s : st_) s.got.assign(commute_ ? 0 : nchild_, nullptr);
        buf_limit_ = static_cast<std::size_t>(tun_.max_recv + tun_.max_send) + nchild_ + 1;
        if (nchild_ == 0) {
            if (is_root_) {  // a single rank: the result is its own data
                if (!in_place_) copy(rbuf_, sbuf_, seg_.count);
                folded_ = seg_.nseg;
            } else {
                for (std::size_t s = 0; s < seg_.nseg; ++s) send_q_.emplace_back(s, nullptr);
            }
        }
    }

  private:
    struct SegState {
        std::vector<char *> got;  // non-commutative: child buffers by position
        std::size_t arrived = 0;
        char *acc = nullptr;      // commutative: running partial result
        bool root_init = false;   // root: own data placed in recvbuf
    };

    std::ptrdiff_t off(std::size_t s) const {
        return static_cast<std::ptrdiff_t>(seg_.first(s)) * dt_.extent;
    }
    const char *own(std::size_t s) const { return (in_place_ ? rbuf_ : sbuf_) + off(s); }
    char *result(std::size_t s) const { return rbuf_ + off(s); }

    // Segments finish in any order, but the parent matches our sends in
    // posting order: send them up in segment order.
    void segment_complete(std::size_t s, char *acc) {
        ++folded_;
        if (is_root_) return;
        ready_[s] = acc;
        up_done_[s] = 1;
        while (next_up_ < seg_.nseg && up_done_[next_up_]) {
            send_q_.emplace_back(next_up_, ready_[next_up_]);
            ++next_up_;
        }
    }

    void arrive_commutative(std::size_t s, char *b) {
        SegState &st = st_[s];
        const std::size_t n = seg_.length(s);
        if (is_root_) {
            if (!st.root_init) {
                if (!in_place_ && !copy(result(s), own(s), n)) return;
                st.root_init = true;
            }
            reduce(b, result(s), n, op_);
            pool_.put(b);
        } else if (!st.acc) {
            reduce(own(s), b, n, op_);
            st.acc = b;
        } else {
            reduce(b, st.acc, n, op_);
            pool_.put(b);
        }
        if (++st.arrived == nchild_) segment_complete(s, is_root_ ? nullptr : st.acc);
    }

    // All operands of segment s are here: fold them right to left so that
    // the result is operand[0] op operand[1] op ... in tree order.
    void fold_ordered(std::size_t s) {
        SegState &st = st_[s];
        const std::size_t n = seg_.length(s);
        const char *ownp = own(s);
        char *own_copy = nullptr;
        if (in_place_) {  // own data lives where the result goes
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
        if (x.kind == Xfer::Send) {
            pool_.put(x.buf);
            ++sent_;
            return;
        }
        if (commute_) {
            arrive_commutative(x.seg, x.buf);
        } else {
            SegState &st = st_[x.seg];
            st.got[x.peer_idx] = x.buf;
            if (++st.arrived == nchild_) fold_ordered(x.seg);
        }
    }

    void post_ready() override {
        while (nchild_ && rseg_ < seg_.nseg && recvs_in_flight_ < tun_.max_recv &&
               pool_.in_use() < buf_limit_) {
            Xfer x;
            x.seg = rseg_;
            x.peer_idx = rchild_;
            x.buf = pool_.get();
            if (++rchild_ == nchild_) {
                rchild_ = 0;
                ++rseg_;
            }
            if (!recv(x.buf, seg_.length(x.seg), node_.children[x.peer_idx], x)) return;
        }
        while (!send_q_.empty() && sends_in_flight_ < tun_.max_send) {
            auto [s, acc] = send_q_.front();
            send_q_.pop_front();
            Xfer x;
            x.seg = s;
            x.buf = acc;  // released when the send completes
            const char *src = acc ? acc : own(s);
            if (!send(src, seg_.length(s), node_.parent, x)) return;
        }
    }

    bool all_done() const override {
        return is_root_ ? folded_ == seg_.nseg : sent_ == seg_.nseg;
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
    std::vector<SegState> st_;
    std::size_t buf_limit_ = 0;
    std::size_t rseg_ = 0, rchild_ = 0;
    std::size_t folded_ = 0, sent_ = 0;
    std::vector<char *> ready_;  // reduced segments waiting for their turn
    std::vector<char> up_done_;
    std::size_t next_up_ = 0;
    std::deque<std::pair<std::size_t, char *>> send_q_;
};

}  // namespace

std::unique_ptr<Operation> make_bcast(const collx_transport_t &t, void *buf, std::size_t count,
                                      const collx_dtype_t &dt, int root, int tag,
                                      const collx_tuning_t &tun) {
    return std::make_unique<Bcast>(t, buf, count, dt, root, tag, tun);
}

std::unique_ptr<Operation> make_reduce(const collx_transport_t &t, const void *sendbuf,
                                       void *recvbuf, std::size_t count, const collx_dtype_t &dt,
                                       void *op, bool commutative, int root, int tag,
                                       const collx_tuning_t &tun) {
    return std::make_unique<Reduce>(t, sendbuf, recvbuf, count, dt, op, commutative, root, tag,
                                    tun);
}

}  // namespace collx
