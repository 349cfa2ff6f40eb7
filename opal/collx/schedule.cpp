#include "schedule.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace collx {

namespace {

// A pipeline has no transport or datatype of its own: its steps are run by
// the caller's step function.
const collx_transport_t no_transport{};
const collx_dtype_t no_dtype{};
const collx_tuning_t no_tuning{COLLX_TREE_BINOMIAL, 1, 1, 1, 1, nullptr};

class Pipeline final : public Operation {
  public:
    Pipeline(const std::vector<collx_stage_t> &stages, std::size_t nseg, int window, bool serial,
             collx_step_fn fn, void *ctx, const collx_notify_t *notify)
        : Operation(no_transport, no_dtype, 0, no_tuning, notify),
          fn_(fn),
          ctx_(ctx),
          serial_(serial),
          nstage_(stages.size()),
          nseg_(stages.empty() ? 0 : nseg),
          state_(nstage_ * nseg_, 0),
          prev_(nstage_, -1) {
        if (!nseg_) return;
        // data order: by number (then index); a segment goes through them in turn
        std::vector<int> by_number(nstage_);
        std::iota(by_number.begin(), by_number.end(), 0);
        std::stable_sort(by_number.begin(), by_number.end(), [&](int a, int b) {
            return stages[a].number < stages[b].number;
        });
        for (std::size_t k = 1; k < nstage_; ++k) prev_[by_number[k]] = by_number[k - 1];
        first_ = by_number.front();
        last_ = by_number.back();
        const int span = stages[last_].number - stages[first_].number;
        window_ = static_cast<std::size_t>(std::max(window, span + 1));
        // channel order: by step (number + segment), then stage index
        const int lo = stages[first_].number, hi = stages[last_].number;
        std::map<int, std::size_t> chan_of;
        for (const auto &st : stages)
            if (!chan_of.count(st.channel)) {
                const std::size_t c = chan_of.size();
                chan_of[st.channel] = c;
            }
        queues_.resize(chan_of.size());
        for (std::size_t t = static_cast<std::size_t>(std::max(lo, 0));
             t < nseg_ + static_cast<std::size_t>(std::max(hi, 0)); ++t)
            for (std::size_t i = 0; i < nstage_; ++i) {
                const long s = static_cast<long>(t) - stages[i].number;
                if (s < 0 || static_cast<std::size_t>(s) >= nseg_) continue;
                queues_[chan_of[stages[i].channel]].ids.push_back(id(i, static_cast<std::size_t>(s)));
            }
    }

  private:
    enum : char { Waiting = 0, Started = 1, Done = 2 };
    struct Queue {
        std::vector<std::size_t> ids;  // steps of the channel in start order
        std::size_t head = 0;
    };
    std::size_t id(std::size_t stage, std::size_t seg) const { return stage * nseg_ + seg; }
    bool done(std::size_t stage, std::size_t seg) const { return state_[id(stage, seg)] == Done; }

    bool may_start(std::size_t i, std::size_t s) const {
        if (prev_[i] >= 0 && !done(static_cast<std::size_t>(prev_[i]), s)) return false;
        if (static_cast<int>(i) == first_ && s >= window_ &&
            !done(static_cast<std::size_t>(last_), s - window_))
            return false;
        return true;
    }
    void on_done(Xfer &x) override {
        state_[id(static_cast<std::size_t>(x.peer_idx), x.seg)] = Done;
        ++done_count_;
    }
    void post_ready() override {
        for (Queue &q : queues_)
            while (q.head < q.ids.size()) {
                const std::size_t i = q.ids[q.head] / nseg_, s = q.ids[q.head] % nseg_;
                if (!may_start(i, s)) break;
                // serial: one step of the channel at a time
                if (serial_ && q.head > 0 && state_[q.ids[q.head - 1]] != Done) break;
                ++q.head;
                state_[id(i, s)] = Started;
                Xfer x;
                x.seg = s;
                x.peer_idx = i;
                if (!start_step(fn_, ctx_, static_cast<int>(i), x)) return;
            }
    }
    bool all_done() const override { return done_count_ == state_.size(); }

    collx_step_fn fn_;
    void *ctx_;
    bool serial_;
    std::size_t nstage_, nseg_;
    std::vector<char> state_;  // per step: Waiting, Started, Done
    std::vector<int> prev_;    // per stage: the stage a segment comes from (-1: none)
    int first_ = 0, last_ = 0;
    std::size_t window_ = 1;
    std::vector<Queue> queues_;
    std::size_t done_count_ = 0;
};

// n sub-operations started at once as steps of the group (their
// completions come back as the steps'), the group done when all are.
class Group final : public Operation {
  public:
    Group(int n, MakeStep make, const collx_notify_t *notify)
        : Operation(no_transport, no_dtype, 0, no_tuning, notify), n_(n), make_(std::move(make)) {}

  private:
    static void kid_done(void *token, int status) { collx_xfer_complete(token, status); }
    static int start_kid(void *ctx, int i, std::size_t, void *token) {
        auto *g = static_cast<Group *>(ctx);
        g->kids_.push_back(g->make_(i, collx_notify_t{&kid_done, token}));
        g->kids_.back()->start();
        return 0;
    }
    void on_done(Xfer &) override { ++done_; }
    void post_ready() override {
        for (; started_ < n_; ++started_) {
            Xfer x;
            x.peer_idx = static_cast<std::size_t>(started_);
            if (!start_step(&start_kid, this, started_, x)) return;
        }
    }
    bool all_done() const override { return started_ == n_ && done_ == n_; }
    int n_, started_ = 0, done_ = 0;
    MakeStep make_;
    std::vector<std::unique_ptr<Operation>> kids_;
};

}  // namespace

std::unique_ptr<Operation> make_group(int n, MakeStep make, const collx_notify_t *notify) {
    return std::make_unique<Group>(n, std::move(make), notify);
}

std::unique_ptr<Operation> make_pipeline(const std::vector<collx_stage_t> &stages, std::size_t nseg,
                                         int window, bool serial, collx_step_fn fn, void *ctx,
                                         const collx_notify_t *notify) {
    return std::make_unique<Pipeline>(stages, nseg, window, serial, fn, ctx, notify);
}

}  // namespace collx
