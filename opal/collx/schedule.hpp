// Schedules: the one engine every collx collective runs on.  A schedule is
// a small DAG of steps over segments -- send, receive, local work (a fold,
// a copy) and sub-collective (a step run through a callback: an Open MPI
// collective on a level's communicator, or a collx operation) -- built by a
// builder (the trees in executor.cpp, the hierarchical pipeline and group
// here).  A step starts when the steps it waits for have finished
// (completion events, no global wait); transfers and sub-collectives are
// posted through channels, each in the order its steps were added (MPI
// matches a pair's messages in posting order) with a bound on how many are
// in flight.  See docs/architecture.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "collx/collx.h"
#include "executor.hpp"

namespace collx {

class Schedule : public Operation {
  public:
    Schedule(const collx_transport_t &t, const collx_dtype_t &dt, int tag,
             const collx_tuning_t &tun, const collx_notify_t *notify)
        : Operation(t, dt, tag, tun, notify) {}

  protected:
    enum class Kind : char { Send, Recv, Local, Sub };
    static constexpr std::size_t kNone = SIZE_MAX;
    struct Step {
        Kind kind;
        int chan;         // its channel (-1: local work, run as soon as it may)
        std::size_t seg;  // the builder's: segment, ...
        std::size_t idx;  // ... and index (child, stage, message)
    };

    // A channel posts its steps in the order they were added, each once it
    // may start, at most `limit` in flight (0: no bound).
    int channel(int limit, Xfer::Phase phase = Xfer::Down);
    // A new step (chan ignored for Local); returns its id (ids count from 0).
    std::size_t add(Kind kind, int chan, std::size_t seg, std::size_t idx);
    // `step` starts only after `pred` finished (pred kNone: nothing).
    void after(std::size_t step, std::size_t pred);
    // Room for this many steps and edges (saves regrowing while building).
    void reserve(std::size_t steps, std::size_t edges);
    const Step &step(std::size_t id) const { return steps_[id]; }

    // Builder hooks, called with the operation's lock held.
    // Post step id (send(), recv() or start_step() with x, which carries
    // the step), or run it when it is local; false on failure.
    virtual bool fire(std::size_t id, const Xfer &x) = 0;
    // A posted step finished successfully (before its successors may start).
    virtual void landed(std::size_t, Xfer &) {}
    // Whether channel chan may post its next step (beyond its bound): a
    // builder's own resource, e.g. scratch buffers.
    virtual bool admit(int) const { return true; }

  private:
    struct Channel {
        int limit;
        Xfer::Phase phase;
        std::vector<std::size_t> ids;  // in posting order
        std::size_t head = 0;
        int in_flight = 0;
    };
    void on_done(Xfer &x) final;
    void post_ready() final;
    bool all_done() const final { return done_ == steps_.size(); }
    void seal();
    void finish(std::size_t id);
    Xfer xfer(std::size_t id) const;

    std::vector<Step> steps_;
    std::vector<std::uint32_t> waiting_;  // per step: predecessors not yet finished
    std::vector<std::pair<std::size_t, std::size_t>> edges_;  // (pred, step), until sealed
    std::vector<std::size_t> succ_at_, succ_;  // successors of id: succ_[succ_at_[id] ..)
    std::vector<Channel> chans_;
    std::vector<std::size_t> local_;  // local steps that may run, from next_local_
    std::size_t next_local_ = 0;
    bool sealed_ = false;
    std::size_t done_ = 0;
};

// (collx_pipeline_start)
std::unique_ptr<Operation> make_pipeline(const std::vector<collx_stage_t> &stages, std::size_t nseg,
                                         int window, bool serial, collx_step_fn fn, void *ctx,
                                         const collx_notify_t *notify);

// n sub-operations started at once, make(i, notify) making the i-th (it
// calls notify when done); the group finishes when all have, and owns them.
using MakeStep = std::function<std::unique_ptr<Operation>(int, const collx_notify_t &)>;
std::unique_ptr<Operation> make_group(int n, MakeStep make, const collx_notify_t *notify);

}  // namespace collx
