// The task cost model of collx-tune (after the HAN paper): a hierarchical
// collective is a list of stages (sub-collectives on the node level or the
// node leaders' level); cut into n segments it runs, at step t, stage j on
// segment t - j (exactly what coll/hanx's pipeline does).  A step's cost
// depends only on which stages run in it and on the segment size, not on
// the message size: measure every step kind ("window" of consecutive
// stages, alone and overlapped) once per segment size, and the whole
// collective of any size is the sum of its steps.  Unsegmented (one
// segment), the stages run one after the other, blocking: their costs
// alone, measured by message size, add up.  The previous module (tuned)
// is measured as a whole, at fewer sizes, and interpolated.
//
// No MPI here: this file turns measurements into predictions, choices and
// a tuning file, so that it is unit-tested and --explain needs no job.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rules.hpp"
#include "sim.hpp"

namespace collx::tune {

// The collectives collx-tune models (the simulator's), in this order everywhere.
using Coll = collx::sim::Coll;
const std::vector<Coll> &all_colls();
const char *name(Coll c);
std::optional<Coll> coll_from_name(const std::string &s);

// The levels of each stage, in stage order: bcast goes down the leaders
// then the nodes, reduce up, allreduce reduces in the node, allreduces
// across the leaders and broadcasts in the node.
enum class Level { Node, Leaders };
const std::vector<Level> &stages(Coll c);
const char *name(Level l);

// One configuration hanx can be told to run by a tuning rule.
struct Config {
    bool previous = false;       // hand the call to the previous module
    std::uint64_t segment = 0;   // hierarchical: bytes per segment, 0 = unsegmented
    std::string label() const;   // "previous", "hier", "hier/64K"
    bool operator==(const Config &o) const {
        return previous == o.previous && segment == o.segment;
    }
};
// previous, unsegmented, then every segment size below `bytes` (a segment
// at least as big as the message is the unsegmented configuration).
std::vector<Config> configs_for(std::uint64_t bytes, const std::vector<std::uint64_t> &segments);

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

// Windows [a, b] of consecutive stages that a pipeline of K stages has in
// some step (prefixes and suffixes, K <= 3).
using Window = std::pair<int, int>;
std::vector<Window> windows(int nstages);

struct CollModel {
    Curve previous;                                     // whole collective, previous module
    std::vector<Curve> blocking;                        // per stage, alone, blocking, by size
    std::map<std::uint64_t, std::map<Window, double>> step;  // per segment size, per window

    // Predicted seconds of `c` on a message of `bytes`; nullopt when a
    // needed measurement is missing.
    std::optional<double> predict(Coll coll, const Config &c, std::uint64_t bytes) const;
};

struct Model {
    int nodes = 0, ranks_per_node = 0, ranks = 0;
    std::vector<std::uint64_t> sizes;     // message sizes predicted (the rule grid)
    std::vector<std::uint64_t> segments;  // segment sizes considered
    std::map<Coll, CollModel> colls;
    double tuning_seconds = 0;            // time spent measuring
    // false: measuring stopped early (budget, signal); rules then cover
    // only the sizes up to the largest one measured whole, and other
    // sizes are left to hanx's defaults
    bool complete = true;
    std::string generated_by;

    // Best predicted configuration and its time.
    std::optional<std::pair<Config, double>> best(Coll coll, std::uint64_t bytes) const;

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
