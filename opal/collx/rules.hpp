// Tuning rules: (collective, communicator shape, message size) -> algorithm,
// per-level submodules, segment size.  Reads, validates and writes the
// tuning-file format of docs/tuning-file.md (format "collx-tuning",
// version 1).  coll/hanx uses it through the C API (collx/collx_rules.h);
// the autotuner builds Rules in code and saves them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace collx {

// A file, syntax or validation problem; what() is the complete message,
// "name:line: ..." (or "name:line:column: ..." for JSON syntax errors).
class RulesError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The collective names a file may use, in a fixed order.
const std::vector<std::string> &rule_collectives();
bool is_rule_collective(std::string_view name);

// Inclusive [min, max]; no max = unbounded.
struct RuleRange {
    std::uint64_t min = 0;
    std::optional<std::uint64_t> max;

    static RuleRange exactly(std::uint64_t v) { return {v, v}; }
    static RuleRange between(std::uint64_t lo, std::uint64_t hi) { return {lo, hi}; }
    static RuleRange at_least(std::uint64_t lo) { return {lo, std::nullopt}; }

    bool contains(std::uint64_t v) const { return v >= min && (!max || v <= *max); }
    bool operator==(const RuleRange &o) const { return min == o.min && max == o.max; }
    bool operator!=(const RuleRange &o) const { return !(*this == o); }
};

struct Rule {
    std::string collective;                     // one of rule_collectives()
    std::optional<RuleRange> nodes;             // number of nodes
    std::optional<RuleRange> ranks_per_node;    // largest number of ranks on one node
    std::optional<RuleRange> bytes;             // message size
    std::optional<std::string> algorithm;       // non-empty
    std::optional<std::int64_t> segment_bytes;  // >= 0; 0 = no segmentation
    std::optional<std::string> low;             // intra-node submodule preference
    std::optional<std::string> up;              // inter-node submodule preference
    // the algorithm of the levels below the leaders / of the leaders' level:
    // "module" (the submodule's) or a collx tree (collx_tree_name)
    std::optional<std::string> low_algorithm, up_algorithm;
    std::optional<std::string> comment;

    // Where the rule came from (0 for rules built in code): the line of its
    // '{' and of its "algorithm" value.
    int line = 0;
    int algorithm_line = 0;

    // nodes / ranks_per_node < 0: unknown, matches only an unconstrained rule.
    bool matches(std::string_view coll, long long n_nodes, long long n_ranks_per_node,
                 unsigned long long n_bytes) const;
};

class Rules {
public:
    Rules() = default;
    explicit Rules(std::string name) : name_(std::move(name)) {}

    // Reads a file / text; throws RulesError (whole file rejected) or
    // std::bad_alloc.  `name` stands for the file in messages.
    static Rules load(const std::string &path);
    static Rules parse(std::string_view text, const std::string &name);

    // Appends a rule (it ranks after every rule already there).  Throws
    // RulesError when the rule is invalid (unknown collective, empty string,
    // min > max, negative segment size).
    void add(Rule rule);

    // Index of the first matching rule in order, or nullopt.
    std::optional<std::size_t> find(std::string_view collective, long long nodes,
                                    long long ranks_per_node, unsigned long long bytes) const;
    // The first matching rule, or nullptr.
    const Rule *lookup(std::string_view collective, long long nodes, long long ranks_per_node,
                       unsigned long long bytes) const;

    // "" when every rule for `collective` that names an algorithm names one
    // in `known`, else the message for the first one that does not.
    std::string check_algorithms(std::string_view collective,
                                 const std::vector<std::string> &known) const;

    // The file format (keys in the documented order); save() writes it
    // pretty-printed, atomically (temp file in the same directory + rename).
    nlohmann::ordered_json to_json() const;
    std::string to_string() const;             // to_json() pretty-printed, with a final newline
    void save(const std::string &path) const;  // throws RulesError

    std::size_t size() const { return rules_.size(); }
    bool empty() const { return rules_.empty(); }
    const Rule &operator[](std::size_t i) const { return rules_[i]; }
    const std::vector<Rule> &rules() const { return rules_; }

    const std::string &name() const { return name_; }
    void set_name(std::string name) { name_ = std::move(name); }

    // Optional top-level free text.
    std::optional<std::string> comment;
    std::optional<std::string> generated_by;

private:
    std::string name_;
    std::vector<Rule> rules_;
    // Rule indices per collective (rule_collectives() order), in file order:
    // a lookup scans only its collective's rules.
    std::vector<std::vector<std::size_t>> by_collective_;
};

}  // namespace collx
