#include "schedule.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace collx {

// ------------------------------------------------------------------ engine

int Schedule::channel(int limit, Xfer::Phase phase) {
    chans_.push_back(Channel{std::max(limit, 0), phase, {}, 0, 0});
    return static_cast<int>(chans_.size()) - 1;
}

std::size_t Schedule::add(Kind kind, int chan, std::size_t seg, std::size_t idx) {
    const std::size_t id = steps_.size();
    if (kind == Kind::Local) chan = -1;
    steps_.push_back(Step{kind, chan, seg, idx});
    waiting_.push_back(0);
    if (chan >= 0) chans_[static_cast<std::size_t>(chan)].ids.push_back(id);
    return id;
}

void Schedule::reserve(std::size_t steps, std::size_t edges) {
    steps_.reserve(steps);
    waiting_.reserve(steps);
    edges_.reserve(edges);
}

void Schedule::after(std::size_t step, std::size_t pred) {
    if (pred == kNone) return;
    edges_.emplace_back(pred, step);
    ++waiting_[step];
}

// The successor lists, packed once the builder is done.
void Schedule::seal() {
    sealed_ = true;
    succ_at_.assign(steps_.size() + 1, 0);
    for (const auto &e : edges_) ++succ_at_[e.first + 1];
    std::partial_sum(succ_at_.begin(), succ_at_.end(), succ_at_.begin());
    succ_.resize(edges_.size());
    // (filled from the back, each list's end moving down to its start)
    for (auto e = edges_.rbegin(); e != edges_.rend(); ++e) succ_[--succ_at_[e->first + 1]] = e->second;
    std::rotate(succ_at_.begin(), succ_at_.begin() + 1, succ_at_.end());
    succ_at_.back() = succ_.size();
    edges_ = {};
    for (std::size_t id = 0; id < steps_.size(); ++id)
        if (steps_[id].kind == Kind::Local && waiting_[id] == 0) local_.push_back(id);
}

Xfer Schedule::xfer(std::size_t id) const {
    const Step &s = steps_[id];
    Xfer x;
    x.step = id;
    x.seg = s.seg;
    if (s.chan >= 0) x.phase = chans_[static_cast<std::size_t>(s.chan)].phase;
    return x;
}

void Schedule::finish(std::size_t id) {
    ++done_;
    for (std::size_t k = succ_at_[id]; k < succ_at_[id + 1]; ++k) {
        const std::size_t s = succ_[k];
        if (--waiting_[s] == 0 && steps_[s].kind == Kind::Local) local_.push_back(s);
    }
}

void Schedule::on_done(Xfer &x) {
    const std::size_t id = x.step;
    --chans_[static_cast<std::size_t>(steps_[id].chan)].in_flight;
    landed(id, x);
    if (!failed()) finish(id);
}

// Local work first (it may make transfers ready), then each channel in the
// order the builder made them (a builder makes its receives' channels first, so
// that a pass posts them before its sends); posting finishes nothing here:
// completions come back as events.
void Schedule::post_ready() {
    if (!sealed_) seal();
    while (next_local_ < local_.size()) {
        const std::size_t id = local_[next_local_++];
        if (!fire(id, xfer(id))) return;
        finish(id);
    }
    local_.clear();
    next_local_ = 0;
    for (std::size_t c = 0; c < chans_.size(); ++c) {
        Channel &ch = chans_[c];
        while (ch.head < ch.ids.size()) {
            const std::size_t id = ch.ids[ch.head];
            if (waiting_[id] > 0 || (ch.limit > 0 && ch.in_flight >= ch.limit) ||
                !admit(static_cast<int>(c)))
                break;
            ++ch.head;
            ++ch.in_flight;
            if (!fire(id, xfer(id))) return;
        }
    }
}

namespace {

// A pipeline or group has no transport or datatype of its own: its steps
// are run by the caller's step function.
const collx_transport_t no_transport{};
const collx_dtype_t no_dtype{};
const collx_tuning_t no_tuning{COLLX_TREE_BINOMIAL, 1, 1, 1, 1, nullptr};

// ---------------------------------------------------------------- pipeline

// Stages over segments (collx_pipeline_start): step (stage i, segment s)
// waits for the stage before it in data order (by number) on segment s;
// the first stage's segment s for the last stage's segment s - window.
// One channel per communicator, its steps in the order (number + segment,
// stage index) -- the order every member of the communicator starts them
// in; serial: one step of a channel at a time.
class Pipeline final : public Schedule {
  public:
    Pipeline(const std::vector<collx_stage_t> &stages, std::size_t nseg, int window, bool serial,
             collx_step_fn fn, void *ctx, const collx_notify_t *notify)
        : Schedule(no_transport, no_dtype, 0, no_tuning, notify), fn_(fn), ctx_(ctx) {
        const std::size_t n = stages.size();
        if (n == 0 || nseg == 0) return;
        std::vector<std::size_t> by_number(n);
        std::iota(by_number.begin(), by_number.end(), 0);
        std::stable_sort(by_number.begin(), by_number.end(), [&](std::size_t a, std::size_t b) {
            return stages[a].number < stages[b].number;
        });
        const std::size_t first = by_number.front(), last = by_number.back();
        const int lo = stages[first].number, hi = stages[last].number;
        const auto win = static_cast<std::size_t>(std::max(window, hi - lo + 1));
        std::map<int, int> chan_of;
        for (const auto &st : stages)
            if (!chan_of.count(st.channel)) chan_of[st.channel] = channel(serial ? 1 : 0);
        std::vector<std::size_t> id(n * nseg);  // of (stage i, segment s), at i * nseg + s
        for (std::size_t t = static_cast<std::size_t>(std::max(lo, 0));
             t < nseg + static_cast<std::size_t>(std::max(hi, 0)); ++t)
            for (std::size_t i = 0; i < n; ++i) {
                const long s = static_cast<long>(t) - stages[i].number;
                if (s < 0 || static_cast<std::size_t>(s) >= nseg) continue;
                id[i * nseg + static_cast<std::size_t>(s)] =
                    add(Kind::Sub, chan_of[stages[i].channel], static_cast<std::size_t>(s), i);
            }
        for (std::size_t k = 1; k < n; ++k)
            for (std::size_t s = 0; s < nseg; ++s)
                after(id[by_number[k] * nseg + s], id[by_number[k - 1] * nseg + s]);
        for (std::size_t s = win; s < nseg; ++s)
            after(id[first * nseg + s], id[last * nseg + s - win]);
    }

  private:
    bool fire(std::size_t id, const Xfer &x) override {
        return start_step(fn_, ctx_, static_cast<int>(step(id).idx), x);
    }
    collx_step_fn fn_;
    void *ctx_;
};

// ------------------------------------------------------------------- group

// n sub-operations started at once as steps (their completions come back
// as the steps'), the group done when all are.
class Group final : public Schedule {
  public:
    Group(int n, MakeStep make, const collx_notify_t *notify)
        : Schedule(no_transport, no_dtype, 0, no_tuning, notify), make_(std::move(make)) {
        const int all = channel(0);
        for (int i = 0; i < n; ++i) add(Kind::Sub, all, 0, static_cast<std::size_t>(i));
    }

  private:
    static void kid_done(void *token, int status) { collx_xfer_complete(token, status); }
    static int start_kid(void *ctx, int i, std::size_t, void *token) {
        auto *g = static_cast<Group *>(ctx);
        g->kids_.push_back(g->make_(i, collx_notify_t{&kid_done, token}));
        g->kids_.back()->start();
        return 0;
    }
    bool fire(std::size_t id, const Xfer &x) override {
        return start_step(&start_kid, this, static_cast<int>(step(id).idx), x);
    }
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
