// Schedules of sub-collective steps: the engine of hierarchical collectives.
// A step starts when what it needs is finished (completion events, as the
// executor's transfers) -- no step waits for a global barrier of a
// lock-step pipeline.  See collx_pipeline_start in collx/collx.h.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "collx/collx.h"
#include "executor.hpp"

namespace collx {

// (collx_pipeline_start)
std::unique_ptr<Operation> make_pipeline(const std::vector<collx_stage_t> &stages, std::size_t nseg,
                                         int window, bool serial, collx_step_fn fn, void *ctx,
                                         const collx_notify_t *notify);

// n sub-operations started at once, make(i, notify) making the i-th (it
// calls notify when done); the group finishes when all have, and owns them.
using MakeStep = std::function<std::unique_ptr<Operation>(int, const collx_notify_t &)>;
std::unique_ptr<Operation> make_group(int n, MakeStep make, const collx_notify_t *notify);

}  // namespace collx
