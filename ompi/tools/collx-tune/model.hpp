// The cost model of collx-tune (after the HAN paper's task model): a
// hierarchical collective is a list of K stages (sub-collectives on the
// node level or the node leaders' level); cut into n segments it runs, at
// step t, stage j on segment t - j (exactly what coll/hanx's pipeline
// does): K - 1 filling steps, n - K + 1 full steps (every stage busy,
// overlapped with its neighbours) and K - 1 draining steps.  A step's cost
// depends on the segment size, not on the message size, so the full step
// and the fill + drain are measured once per segment size -- in place, on
// hanx's own pipeline at a few numbers of segments (see Pipeline) -- and a
// collective of any size is fill + drain + (n - K + 1) full steps.
// Unsegmented hanx, the previous module (tuned), the flat collx trees and
// split rails (allreduce, reduce_scatter_block) are measured whole by message size and
// interpolated.  docs/collx-tune.md says why the stages are not measured
// alone and summed (it mispredicted on the emulated nodes).
//
// No MPI here: this file turns measurements into predictions, choices and
// a tuning file, so that it is unit-tested and --explain needs no job.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "collx/collx.h"
#include "rules.hpp"

namespace collx::tune {

// The collectives collx-tune tunes, in this order everywhere (values and
// names are the core's collx_coll_t): bcast, reduce and allreduce are
// pipelined (their tasks are measured per segment size, and the flat collx
// trees are candidates); allgather, alltoall, reduce_scatter_block and
// barrier are measured whole, hanx's hierarchical form against the
// previous module.  Sizes are what hanx's rules count: one rank's block
// for allgather, alltoall and reduce_scatter_block; 0 for barrier.
enum class Coll {
    Bcast = COLLX_COLL_BCAST,
    Reduce = COLLX_COLL_REDUCE,
    Allreduce = COLLX_COLL_ALLREDUCE,
    Allgather = COLLX_COLL_ALLGATHER,
    Alltoall = COLLX_COLL_ALLTOALL,
    ReduceScatterBlock = COLLX_COLL_REDUCE_SCATTER_BLOCK,
    Barrier = COLLX_COLL_BARRIER
};
const std::vector<Coll> &all_colls();
const char *name(Coll c);
std::optional<Coll> coll_from_name(const std::string &s);
// hanx pipelines it in segments (and has flat collx trees for it)
bool pipelined(Coll c);
// hanx can run it as split rails (a rule's "split"): allreduce and
// reduce_scatter_block; or every rank's share moves itself, allgather's
// node ring (a rule's "node_ring"), which collx-tune keeps with them:
// measured whole, on nodes of one size, under coll_hanx_default_algorithm 3
bool has_split(Coll c);
// The sizes of `grid` that `c` is measured and predicted at: the barrier
// has one, 0 (its rules' size); every other collective the whole grid.
std::vector<std::uint64_t> sizes_of(Coll c, const std::vector<std::uint64_t> &grid);
// The order of n configurations in timed window `window` of a loop
// (collx-tune's loop_medians): each once, from configuration window mod n
// on, round.  The first configuration of a window is the first call of
// every rank after the window's barrier and the first with its root;
// timed first every time it paid for that alone (stop 40: hanx's built-in
// reduce of 8-16 MiB, first of every window in --validate's loop, took
// 1.4x its time in contrib/bench.sh's loop, and the tuning's loop timed
// its candidates first).
std::vector<std::size_t> window_order(int window, std::size_t n);

// The levels of each stage of a pipelined collective, in stage order:
// bcast goes down the leaders then the nodes, reduce up, allreduce reduces
// in the node, allreduces across the leaders and broadcasts in the node.
enum class Level { Node, Leaders };
const std::vector<Level> &stages(Coll c);
const char *name(Level l);

// What runs on hanx's levels, one choice of it: the modules of the levels'
// sub-communicators, as a tuning rule's low/up say them
// (ompi_comm_coll_preference values; empty = what coll_hanx_low/up_preference
// say), and the levels' algorithms, as its low_algorithm/up_algorithm say
// them (-1: "module", the sub-communicator's module; else a collx tree that
// hanx runs itself on that level, collx_tree_kind_t).  low: the levels
// below the node leaders'; up: the leaders' level.  The trees apply to the
// pipelined collectives alone (hanx runs the levels' bcast, reduce and
// allreduce stages on them).
struct Levels {
    std::string low, up;
    int low_tree = -1, up_tree = -1;
    bool operator<(const Levels &o) const {
        return std::tie(low, up, low_tree, up_tree) < std::tie(o.low, o.up, o.low_tree, o.up_tree);
    }
    bool operator==(const Levels &o) const {
        return low == o.low && up == o.up && low_tree == o.low_tree && up_tree == o.up_tree;
    }
    bool has_tree() const { return low_tree >= 0 || up_tree >= 0; }
    // "", " low=basic", " up=adaptx", " low=a up=b", " up_tree=pipeline",
    // " low=a low_tree=chain"
    std::string label() const;
};
// `l` is a configuration of `c`: a level's tree only where hanx runs the
// levels' stages on it (the pipelined collectives)
bool applies(Coll c, const Levels &l);
// "module" for -1, else the tree's name; and back (-1 for "module", -2 for
// anything else), case-insensitive like hanx
std::string level_algorithm(int tree);
int level_tree(const std::string &name);

// One configuration hanx can be told to run by a tuning rule.
struct Config {
    bool previous = false;       // hand the call to the previous module
    std::uint64_t segment = 0;   // hierarchical: bytes per segment, 0 = unsegmented
    Levels levels;               // hierarchical: the levels' modules and algorithms
    int flat = -1;               // >= 0: the front door's flat collx tree (collx_tree_kind_t)
    // split rails: allreduce as a reduce-scatter in the node, an allreduce
    // per rail, an allgather in the node, in hanx's built-in allreduce
    // segments; reduce_scatter(_block) as a reduce-scatter in the node by
    // rail and one per rail, each on the collx ring (levels' trees: as
    // hanx's one flag runs them, and as a "split" rule naming neither
    // level's algorithm runs them where the job leaves
    // coll_hanx_low/up_algorithm alone).  The rule names no segment size,
    // so one curve covers it
    bool split = false;
    bool node_ring = false;  // split of allgather: the node ring (collx_allgather_start)
    // hanx's own choice where no rule matches (the one flag): the baseline
    // a rule must beat; a size it keeps gets no rule
    bool builtin = false;
    static Config one_flag() {
        Config c;
        c.builtin = true;
        return c;
    }
    static Config split_rails(Coll coll = Coll::Allreduce) {
        Config c;
        c.split = true;
        c.node_ring = coll == Coll::Allgather;
        if (coll == Coll::ReduceScatterBlock) c.levels.low_tree = c.levels.up_tree = COLLX_TREE_RING;
        return c;
    }
    // hanx's levels one after the other (pipelined or not): neither the
    // previous module, a flat tree nor split rails, which are measured
    // whole by size
    bool hierarchical() const { return !previous && flat < 0 && !split && !builtin; }
    // "previous", "hier", "hier/64K", "hier/64K up=adaptx", "hier/32K up_tree=pipeline",
    // "flat:pipeline", "split", "node_ring"
    std::string label() const;
    // as hanx runs it on a message of `bytes`: a segment at least as big
    // as the message is the unsegmented configuration
    Config at(std::uint64_t bytes) const {
        return !hierarchical() || segment < bytes ? *this : Config{false, 0, levels};
    }
    bool operator==(const Config &o) const {
        return previous == o.previous && segment == o.segment && levels == o.levels && flat == o.flat &&
               split == o.split && node_ring == o.node_ring && builtin == o.builtin;
    }
};
// previous, then each flat tree of `flats`, then split rails (where
// `split` and the collective has them), then for each choice of the
// levels that applies to the collective (the first: the MCA parameters'
// modules) unsegmented and every segment size below `bytes` (a segment at
// least as big as the message is the unsegmented configuration).  A
// collective that is not pipelined has neither flat trees, segments nor
// the levels' trees.
std::vector<Config> configs_for(Coll coll, std::uint64_t bytes, const std::vector<std::uint64_t> &segments,
                                const std::vector<Levels> &levels = {Levels{}},
                                const std::vector<int> &flats = {}, bool split = false);
// "flat:pipeline" for COLLX_TREE_PIPELINE; a tree kind of a name ("pipeline"), -1 if none
std::string flat_label(int tree);
int flat_tree(const std::string &name);

// Seconds as a function of bytes from measured points: log-log linear
// between points, the first value below the first point, and a straight
// line through the last two points beyond the last one (bandwidth-bound
// sizes grow linearly).
class Curve {
  public:
    void set(std::uint64_t bytes, double seconds) { pts_[bytes] = seconds; }
    bool empty() const { return pts_.empty(); }
    double at(std::uint64_t bytes) const;
    const std::map<std::uint64_t, double> &points() const { return pts_; }

  private:
    std::map<std::uint64_t, double> pts_;
};

// A pipeline of one segment size, measured in place: hanx's whole
// collective with that segment size at a few numbers of segments ν (2, 4,
// and 8, 32, 128 and the longest power of 2 as far as collx-tune's
// --pipeline-max).  After its first K - 1 steps every step of a K-stage
// pipeline is a full one (every stage busy, each overlapped with its
// neighbours), so the cost grows by one full step per segment: linear in ν
// between the points (the first two's line below them), and beyond the
// last point one full step per segment, at the steepest slope of any two
// neighbouring points (see full_step).
struct Pipeline {
    std::map<double, double> points;  // segments -> seconds
    bool complete() const { return points.size() >= 2; }
    double at(double nu) const;       // seconds for ν segments (fractional: a short last one)
    double full_step() const;         // seconds per full step: the steepest neighbouring pair
    double fill_drain(int K) const;   // the K - 1 filling and K - 1 draining steps
};

// hanx with one choice of the levels: unsegmented, whole, by size, and
// its pipelines per segment size.
struct HierModel {
    Curve whole;
    std::map<std::uint64_t, Pipeline> pipeline;
};

// The second test of a rule (collx-tune --back-to-back): the
// configurations predicted best at one size (at most --loop-configs of
// them) and hanx's built-in choice there, each timed calls back to back
// (a rooted collective's root rotating), interleaved, as an application's
// loop and contrib/bench.sh run them.  A synchronised start (the model's
// other measurements) and a loop can rank two configurations differently:
// consecutive calls overlap, and on ranks sharing cores the one that
// leaves more work to the next call loses.
struct BackToBack {
    std::map<std::string, double> configs;  // seconds per call, by label (Config::label)
    double builtin_s = 0;                   // the built-in's
    // `label` was timed and beat the built-in by more than `margin` of its time
    bool wins(const std::string &label, double margin) const {
        auto c = configs.find(label);
        return c != configs.end() && c->second < (1 - margin) * builtin_s;
    }
};

struct CollModel {
    Curve previous;                           // previous module, whole, by size
    std::map<Levels, HierModel> hier;         // hanx, by the levels' modules and trees
    std::map<int, Curve> flat;                // hanx's flat collx trees, whole, by tree
    Curve split;                              // allreduce's split rails, whole, by size
    Curve builtin;                            // hanx's built-in choice (no rule), whole, by size
    Curve builtin_spread;                     // its windows' interquartile range / median
    std::map<std::uint64_t, BackToBack> back_to_back;  // by size: the candidates vs built-in, in a loop

    // The curve of a configuration measured whole (previous, a flat tree,
    // split rails): nullptr where missing, and for hanx's levels (composed
    // from HierModel); the other made empty where missing, for measuring.
    const Curve *whole(const Config &c) const;
    Curve &whole(const Config &c);

    // Predicted seconds of `c` on a message of `bytes`; nullopt when a
    // needed measurement is missing.
    std::optional<double> predict(Coll coll, const Config &c, std::uint64_t bytes) const;
};

struct Model {
    int nodes = 0, ranks_per_node = 0, ranks = 0;
    std::vector<std::uint64_t> sizes;     // message sizes predicted (the rule grid; barrier: 0 alone)
    std::vector<std::uint64_t> segments;  // segment sizes considered
    // the levels' choices considered: the MCA parameters' modules first,
    // then the other modules' (--low/--up), then the trees' (--low-trees,
    // --up-trees)
    std::vector<Levels> levels{Levels{}};
    std::vector<int> flats;               // flat collx trees considered (collx_tree_kind_t)
    // split rails measured: asked for (--split), allreduce or
    // reduce_scatter_block tuned, and the job's nodes all of one size >= 2
    // (elsewhere hanx hands them to the levels)
    bool split = false;
    // a rule replaces hanx's built-in choice only where it beat it by more
    // than this share of the built-in's time back to back (CollModel::
    // back_to_back) and was predicted no slower; or, where the size was
    // not timed back to back, where it is predicted faster by more than
    // this share, or by more than the built-in's measured spread there if
    // that is larger (choice()); < 0: the built-in is not a candidate
    // (every size gets a rule)
    double margin = 0.1;
    std::map<Coll, CollModel> colls;
    double tuning_seconds = 0;            // time spent measuring
    // false: measuring stopped early (budget, signal); rules then cover
    // only the sizes up to the largest one measured whole, and other
    // sizes are left to hanx's defaults
    bool complete = true;
    std::string generated_by;

    // Every configuration considered at that size that the model can
    // predict, with its time, in configs_for's order.
    std::vector<std::pair<Config, double>> predicted(Coll coll, std::uint64_t bytes) const;
    // Best predicted configuration and its time (the first of equals).
    std::optional<std::pair<Config, double>> best(Coll coll, std::uint64_t bytes) const;
    // what the file says for coll at bytes (else the built-in:
    // Config::one_flag, no rule).  Where best() was timed back to back
    // at that size: the fastest configuration of that loop predicted no
    // slower than the built-in, where it beat the built-in there by the
    // margin -- a rule predicted faster from synchronised starts must win
    // the loop too, and a near tie becomes one where it wins the loop.
    // Elsewhere best(), where it is predicted faster than the built-in by
    // margin_at().
    std::optional<std::pair<Config, double>> choice(Coll coll, std::uint64_t bytes) const;
    // the configurations to time back to back against the built-in at that
    // size (collx-tune --back-to-back): the `n` predicted best, best
    // first, of those predicted no slower than the built-in; none without
    // a built-in
    std::vector<Config> loop_candidates(Coll coll, std::uint64_t bytes, std::size_t n) const;
    double margin_at(Coll coll, std::uint64_t bytes) const;

    // The sizes predicted for `coll`: sizes_of(coll, sizes).
    std::vector<std::uint64_t> sizes_of(Coll coll) const { return tune::sizes_of(coll, sizes); }

    // Tuning rules for this shape: per collective, consecutive sizes with
    // the same best configuration merged into one byte range; range i
    // covers (sizes[i-1], sizes[i]], the first from 0, the last unbounded.
    Rules rules() const;

    nlohmann::ordered_json to_json() const;
    static Model from_json(const nlohmann::json &j);  // throws std::runtime_error
    void save(const std::string &path) const;
    static Model load(const std::string &path);
};

// The configuration a rule of a collx-tune file stands for.
std::optional<Config> config_of(const Rule &r);

// Human-readable sizes: "4", "64K", "1M".
std::string bytes_label(std::uint64_t b);
std::uint64_t parse_bytes(const std::string &s);  // "64K", "1M", "4096"; throws

}  // namespace collx::tune
