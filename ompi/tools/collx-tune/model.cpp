// The task cost model of collx-tune; see model.hpp and docs/collx-tune.md.
#include "model.hpp"

#include "collx/collx.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <strings.h>

namespace collx::tune {

const std::vector<Coll> &all_colls() {
    static const std::vector<Coll> v{Coll::Bcast,    Coll::Reduce,  Coll::Allreduce,          Coll::Allgather,
                                     Coll::Alltoall, Coll::Barrier, Coll::ReduceScatterBlock};
    return v;
}

const char *name(Coll c) { return collx_coll_name(static_cast<int>(c)); }

std::optional<Coll> coll_from_name(const std::string &s) {
    const int k = collx_coll_from_name(s.c_str());
    for (Coll c : all_colls())
        if (static_cast<int>(c) == k) return c;
    return std::nullopt;
}

bool pipelined(Coll c) { return c == Coll::Bcast || c == Coll::Reduce || c == Coll::Allreduce; }

bool has_split(Coll c) {
    return c == Coll::Allreduce || c == Coll::ReduceScatterBlock || c == Coll::Allgather;
}

namespace {

// The stages of hanx's collective c on the critical path, in data order:
// the core's (collx_hier_plan), as hanx runs them, for the rank that leads
// the root's node on two levels (2 nodes x 2 ranks, root 0).
std::vector<Level> stages_of(Coll c) {
    int lead[4] = {0, 0, 2, 2}, l0[4], l1[4], r0[4], r1[4];
    collx_hier_t h{};
    h.nlevels = 2;
    h.size = 4;
    h.leader[0] = l0;
    h.leader[1] = l1;
    h.rank_in[0] = r0;
    h.rank_in[1] = r1;
    collx_hier_fill(&h, lead, 1);
    collx_hier_plan_t plan;
    if (collx_hier_plan(&h, static_cast<int>(c), 0, 0, nullptr, 0, &plan) != COLLX_OK)
        throw std::logic_error("collx-tune: no hierarchical stages for " + std::string(name(c)));
    std::vector<collx_hier_stage_t> st(plan.st, plan.st + plan.nstages);
    std::stable_sort(st.begin(), st.end(), [](const collx_hier_stage_t &a,
                                              const collx_hier_stage_t &b) {
        return a.number < b.number;
    });
    std::vector<Level> v;
    for (const auto &s : st) v.push_back(s.level == 0 ? Level::Node : Level::Leaders);
    return v;
}

}  // namespace

const std::vector<Level> &stages(Coll c) {
    static const std::vector<Level> bcast = stages_of(Coll::Bcast),
                                    reduce = stages_of(Coll::Reduce),
                                    allreduce = stages_of(Coll::Allreduce);
    static const std::vector<Level> none;
    switch (c) {
    case Coll::Bcast: return bcast;
    case Coll::Reduce: return reduce;
    case Coll::Allreduce: return allreduce;
    default: return none;  // not pipelined: measured whole
    }
}

const char *name(Level l) { return l == Level::Node ? "node" : "leaders"; }

std::string bytes_label(std::uint64_t b) {
    static const char *unit[] = {"", "K", "M", "G", "T"};
    int u = 0;
    while (b >= 1024 && b % 1024 == 0 && u < 4) b /= 1024, ++u;
    return std::to_string(b) + unit[u];
}

std::uint64_t parse_bytes(const std::string &s) {
    std::size_t pos = 0;
    unsigned long long v = 0;
    if (s.empty() || s[0] < '0' || s[0] > '9')
        throw std::runtime_error("not a size: \"" + s + "\" (e.g. 4096, 64K, 1M)");
    try {
        v = std::stoull(s, &pos);
    } catch (const std::exception &) {
        throw std::runtime_error("not a size: \"" + s + "\" (e.g. 4096, 64K, 1M)");
    }
    const std::string rest = s.substr(pos);
    int shift = 0;
    if (rest == "K" || rest == "k" || rest == "KiB") shift = 10;
    else if (rest == "M" || rest == "MiB") shift = 20;
    else if (rest == "G" || rest == "GiB") shift = 30;
    else if (!rest.empty()) throw std::runtime_error("not a size: \"" + s + "\" (e.g. 4096, 64K, 1M)");
    if (shift && v > (~0ULL >> shift)) throw std::runtime_error("size too large: " + s);
    return static_cast<std::uint64_t>(v) << shift;
}

std::string Levels::label() const {
    std::string s;
    if (!low.empty()) s += " low=" + low;
    if (!up.empty()) s += " up=" + up;
    if (low_tree >= 0) s += " low_tree=" + level_algorithm(low_tree);
    if (up_tree >= 0) s += " up_tree=" + level_algorithm(up_tree);
    return s;
}

bool applies(Coll c, const Levels &l) { return pipelined(c) || !l.has_tree(); }

std::string level_algorithm(int tree) {
    const char *n = tree < 0 ? "module" : collx_tree_name(tree);
    return n ? n : "?";
}

int level_tree(const std::string &name) {
    if (strcasecmp(name.c_str(), "module") == 0) return -1;
    const int k = collx_tree_from_name(name.c_str());
    return k >= 0 ? k : -2;
}

std::string flat_label(int tree) {
    const char *n = collx_tree_name(tree);
    return std::string(COLLX_FLAT_PREFIX) + (n ? n : "?");
}

int flat_tree(const std::string &name) { return collx_tree_from_name(name.c_str()); }

std::string Config::label() const {
    if (builtin) return "builtin";
    if (previous) return "previous";
    if (flat >= 0) return flat_label(flat);
    if (node_ring) return "node_ring";
    if (split) return "split" + levels.label();
    return (segment ? "hier/" + bytes_label(segment) : "hier") + levels.label();
}

std::vector<Config> configs_for(Coll coll, std::uint64_t bytes, const std::vector<std::uint64_t> &segments,
                                const std::vector<Levels> &levels,
                                const std::vector<int> &flats, bool split) {
    const bool pipe = pipelined(coll);
    std::vector<Config> v{{true, 0, {}}};
    if (pipe)
        for (int f : flats)  // (the ring's bcast and reduce are the pipeline chain,
                             // recursive doubling's the binomial tree)
            if ((f != COLLX_TREE_RING && f != COLLX_TREE_RECURSIVE_DOUBLING) ||
                coll == Coll::Allreduce)
                v.push_back({false, 0, {}, f});
    if (split && has_split(coll)) v.push_back(Config::split_rails(coll));
    for (const Levels &l : levels) {
        if (!applies(coll, l)) continue;
        v.push_back({false, 0, l});
        if (pipe)
            for (std::uint64_t s : segments)
                if (s < bytes) v.push_back({false, s, l});
    }
    return v;
}

// ------------------------------------------------------------------ Curve

double Curve::at(std::uint64_t bytes) const {
    if (pts_.empty()) return NAN;
    auto hi = pts_.lower_bound(bytes);
    if (hi != pts_.end() && hi->first == bytes) return hi->second;
    if (hi == pts_.begin()) return hi->second;  // below the first point: latency floor
    if (hi == pts_.end()) {                     // beyond the last point: straight line
        auto last = std::prev(pts_.end());
        if (last == pts_.begin()) return last->second;
        auto before = std::prev(last);
        const double slope = std::max(0.0, (last->second - before->second) /
                                               double(last->first - before->first));
        return last->second + slope * double(bytes - last->first);
    }
    auto lo = std::prev(hi);
    const double x0 = std::log(double(std::max<std::uint64_t>(lo->first, 1)));
    const double x1 = std::log(double(hi->first));
    const double y0 = std::log(std::max(lo->second, 1e-12));
    const double y1 = std::log(std::max(hi->second, 1e-12));
    const double x = std::log(double(bytes));
    return std::exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0));
}

// ------------------------------------------------------------- Pipeline

using PointIt = std::map<double, double>::const_iterator;

// seconds per segment between two measured pipelines (never negative:
// noise can make a longer pipeline measure faster)
static double slope(PointIt p, PointIt q) { return std::max(0.0, (q->second - p->second) / (q->first - p->first)); }

double Pipeline::at(double nu) const {
    if (!complete()) return NAN;
    const auto last = std::prev(points.end());
    if (nu > last->first) return last->second + full_step() * (nu - last->first);
    auto hi = points.lower_bound(nu);
    if (hi == points.begin()) hi = std::next(hi);   // below the first: the first two's line
    const auto lo = std::prev(hi);
    return std::max(0.0, lo->second + slope(lo, hi) * (nu - lo->first));
}

// The steepest pair: per-segment costs grow with the length where the
// data leave the caches, and where the pairs disagree otherwise the
// cheaper ones were measured in a fast spell that longer messages do not
// keep (docs/collx-tune.md, "The model").
double Pipeline::full_step() const {
    if (!complete()) return NAN;
    double s = 0;
    for (auto p = points.begin(); std::next(p) != points.end(); ++p) s = std::max(s, slope(p, std::next(p)));
    return s;
}

double Pipeline::fill_drain(int K) const {
    if (!complete()) return NAN;
    const auto first = points.begin();
    return first->second - (first->first - K + 1) * slope(first, std::next(first));
}

const Curve *CollModel::whole(const Config &c) const {
    if (c.builtin) return &builtin;
    if (c.previous) return &previous;
    if (c.split) return &split;
    auto f = flat.find(c.flat);  // (hanx's levels: flat -1, never a tree)
    return f == flat.end() ? nullptr : &f->second;
}

Curve &CollModel::whole(const Config &c) {
    if (c.hierarchical()) throw std::logic_error("collx-tune: hanx's levels have no whole curve of their own");
    return c.builtin ? builtin : c.previous ? previous : c.split ? split : flat[c.flat];
}

std::optional<double> CollModel::predict(Coll, const Config &c, std::uint64_t bytes) const {
    if (!c.hierarchical()) {  // measured whole
        const Curve *w = whole(c);
        if (!w || w->empty()) return std::nullopt;
        return w->at(bytes);
    }
    auto h = hier.find(c.levels);
    if (h == hier.end()) return std::nullopt;
    if (c.at(bytes).segment == 0) {  // one segment: unsegmented
        if (h->second.whole.empty()) return std::nullopt;
        return h->second.whole.at(bytes);
    }
    auto it = h->second.pipeline.find(c.segment);
    if (it == h->second.pipeline.end() || !it->second.complete()) return std::nullopt;
    return it->second.at(double(bytes) / double(c.segment));
}

// ------------------------------------------------------------------ Model

std::vector<std::pair<Config, double>> Model::predicted(Coll coll, std::uint64_t bytes) const {
    std::vector<std::pair<Config, double>> v;
    auto it = colls.find(coll);
    if (it == colls.end()) return v;
    for (const Config &c : configs_for(coll, bytes, segments, levels, flats, split))
        if (auto t = it->second.predict(coll, c, bytes)) v.emplace_back(c, *t);
    return v;
}

std::optional<std::pair<Config, double>> Model::best(Coll coll, std::uint64_t bytes) const {
    std::optional<std::pair<Config, double>> b;
    for (const auto &p : predicted(coll, bytes))
        if (!b || p.second < b->second) b = p;
    return b;
}

// (the spread: the windows' own noise at that size, as measured; capped,
// so that a very noisy size still takes a rule that halves the time)
double Model::margin_at(Coll coll, std::uint64_t bytes) const {
    auto it = colls.find(coll);
    if (margin < 0 || it == colls.end()) return margin;
    const Curve &s = it->second.builtin_spread;
    return s.empty() ? margin : std::max(margin, std::min(s.at(bytes), 0.5));
}

std::optional<std::pair<Config, double>> Model::choice(Coll coll, std::uint64_t bytes) const {
    auto b = best(coll, bytes);
    auto it = colls.find(coll);
    if (!b || margin < 0 || it == colls.end() || it->second.builtin.empty()) return b;
    const double t = it->second.builtin.at(bytes);
    const auto builtin = std::make_pair(Config::one_flag(), t);
    auto l = it->second.back_to_back.find(bytes);
    if (l == it->second.back_to_back.end() || !l->second.configs.count(b->first.label()))
        return b->second < (1 - margin_at(coll, bytes)) * t ? *b : builtin;
    // timed back to back: the loop decides among the configurations it timed
    std::optional<std::pair<Config, double>> f;  // the fastest there predicted no slower
    double fs = 0;
    for (const auto &p : predicted(coll, bytes)) {
        auto s = l->second.configs.find(p.first.label());
        if (s != l->second.configs.end() && p.second <= t && (!f || s->second < fs)) f = p, fs = s->second;
    }
    return f && l->second.wins(f->first.label(), margin) ? *f : builtin;
}

std::vector<Config> Model::loop_candidates(Coll coll, std::uint64_t bytes, std::size_t n) const {
    auto it = colls.find(coll);
    if (margin < 0 || it == colls.end() || it->second.builtin.empty()) return {};
    const double t = it->second.builtin.at(bytes);
    std::vector<std::pair<Config, double>> v = predicted(coll, bytes);
    v.erase(std::remove_if(v.begin(), v.end(), [t](const auto &p) { return p.second > t; }), v.end());
    std::stable_sort(v.begin(), v.end(), [](const auto &a, const auto &b) { return a.second < b.second; });
    std::vector<Config> r;
    for (std::size_t i = 0; i < v.size() && i < n; ++i) r.push_back(v[i].first);
    return r;
}

static std::string us(double s) {
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(1);
    o << s * 1e6 << " us";
    return o.str();
}

std::vector<std::size_t> window_order(int window, std::size_t n) {
    std::vector<std::size_t> v(n);
    for (std::size_t k = 0; k < n; ++k) v[k] = (std::size_t(window) + k) % n;
    return v;
}

std::vector<std::uint64_t> sizes_of(Coll c, const std::vector<std::uint64_t> &grid) {
    return c == Coll::Barrier ? std::vector<std::uint64_t>{0} : grid;
}

// What a rule's "algorithm" says for `c` (config_of reads it back).
static std::string algorithm_of(const Config &c) {
    if (c.previous) return "previous";
    if (c.flat >= 0) return flat_label(c.flat);
    if (c.node_ring) return "node_ring";
    return c.split ? "split" : "hierarchical";
}

Rules Model::rules() const {
    Rules r;
    r.generated_by = generated_by;
    r.comment = "collx-tune task model for " + std::to_string(nodes) + " nodes x " +
                std::to_string(ranks_per_node) + " ranks; the model is in the .model.json file "
                "next to this one (collx-tune --explain reads it)";
    for (Coll coll : all_colls()) {
        if (!colls.count(coll)) continue;
        struct Run {
            Config c;
            std::uint64_t lo, hi;  // bytes
            double t_hi;
            std::uint64_t at;
        };
        std::vector<Run> runs;
        std::uint64_t lo = 0;
        const auto &measured = colls.at(coll).previous.points();
        const std::uint64_t cap = complete || measured.empty() ? ~0ULL : measured.rbegin()->first;
        for (std::uint64_t m : sizes_of(coll)) {
            if (m > cap) break;
            auto b = choice(coll, m);
            if (!b) break;
            if (!runs.empty() && runs.back().c == b->first) {
                runs.back().hi = m, runs.back().t_hi = b->second, runs.back().at = m;
            } else {
                runs.push_back({b->first, lo, m, b->second, m});
            }
            lo = m + 1;
        }
        const Curve &builtin = colls.at(coll).builtin;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            const Run &x = runs[i];
            if (x.c.builtin) continue;  // hanx's own choice: no rule
            Rule rule;
            rule.collective = name(coll);
            rule.nodes = RuleRange::exactly(std::uint64_t(nodes));
            rule.ranks_per_node = RuleRange::exactly(std::uint64_t(ranks_per_node));
            rule.bytes = i + 1 == runs.size() && cap == ~0ULL ? RuleRange::at_least(x.lo)
                                              : RuleRange::between(x.lo, x.hi);
            rule.algorithm = algorithm_of(x.c);
            if (x.c.hierarchical() && pipelined(coll)) rule.segment_bytes = std::int64_t(x.c.segment);
            const Levels &l = x.c.levels;
            if (!l.low.empty()) rule.low = l.low;
            if (!l.up.empty()) rule.up = l.up;
            // (where the rule names none, hanx runs coll_hanx_low/up_algorithm:
            // "module" unless the job says otherwise -- and, left at its
            // default, the leaders' built-in tree from collx_hier_level_tree's
            // sizes on, so a module measured there is named; collx-tune
            // measures blocking calls, whose levels below keep the module)
            if (l.low_tree >= 0) rule.low_algorithm = level_algorithm(l.low_tree);
            if (l.up_tree >= 0) rule.up_algorithm = level_algorithm(l.up_tree);
            else if (x.c.hierarchical() && pipelined(coll) &&
                     collx_hier_level_tree(static_cast<int>(coll),
                                           i + 1 == runs.size() && cap == ~0ULL ? ~std::size_t{0}
                                                                                : std::size_t(x.hi),
                                           1, nodes, 0) >= 0)
                rule.up_algorithm = "module";
            rule.comment = "predicted " + us(x.t_hi) + " at " + bytes_label(x.at) + " bytes" +
                           (margin >= 0 && !builtin.empty() ? " (built-in " + us(builtin.at(x.at)) + ")" : "");
            // (the loop's times at that size, where they were measured)
            const auto &loop = colls.at(coll).back_to_back;
            auto b2b = loop.find(x.at);
            auto xs = b2b == loop.end() ? nullptr : &b2b->second.configs;
            if (xs && xs->count(x.c.label()))
                *rule.comment += "; back to back " + us(xs->at(x.c.label())) + " (built-in " +
                                us(b2b->second.builtin_s) + ")";
            r.add(rule);
        }
    }
    return r;
}

std::optional<Config> config_of(const Rule &r) {
    if (!r.algorithm) return std::nullopt;
    if (*r.algorithm == "previous") return Config{true, 0, {}};
    if (r.algorithm->rfind(COLLX_FLAT_PREFIX, 0) == 0) {
        const int f = collx_flat_tree(r.algorithm->c_str());
        if (f < 0) return std::nullopt;
        return Config{false, 0, {}, f};
    }
    // (hanx takes "node_ring" for allgather(v) alone, "split" for allreduce
    // and reduce_scatter(_block) alone: elsewhere it rejects the file)
    if (*r.algorithm == "node_ring") {
        if (r.collective != "allgather") return std::nullopt;
        return Config::split_rails(Coll::Allgather);
    }
    if (*r.algorithm == "split") {
        // (reduce_scatter: hanx runs it as reduce_scatter_block's)
        if (r.collective != "allreduce" && r.collective != "reduce_scatter" &&
            r.collective != "reduce_scatter_block")
            return std::nullopt;
        const bool ar = r.collective == "allreduce";
        Config c = Config::split_rails(ar ? Coll::Allreduce : Coll::ReduceScatterBlock);
        if (!ar) {  // (a reduce_scatter's levels: the rule's, else the rings)
            if (r.low_algorithm) c.levels.low_tree = level_tree(*r.low_algorithm);
            if (r.up_algorithm) c.levels.up_tree = level_tree(*r.up_algorithm);
            if (c.levels.low_tree < -1 || c.levels.up_tree < -1) return std::nullopt;
        }
        return c;
    }
    if (*r.algorithm == "hierarchical") {
        // (the levels' algorithms: not said and "module" are the same
        // configuration where the job leaves coll_hanx_low/up_algorithm at
        // module, as collx-tune measures it; and hanx runs a tree only on
        // the stages of a pipelined collective, so elsewhere it is the module)
        Levels l{r.low.value_or(""), r.up.value_or(""), level_tree(r.low_algorithm.value_or("module")),
                 level_tree(r.up_algorithm.value_or("module"))};
        if (l.low_tree < -1 || l.up_tree < -1) return std::nullopt;
        const auto coll = coll_from_name(r.collective);
        if (!coll || !pipelined(*coll)) l.low_tree = l.up_tree = -1;
        return Config{false, r.segment_bytes ? std::uint64_t(std::max<std::int64_t>(*r.segment_bytes, 0)) : 0, l};
    }
    return std::nullopt;
}

// ------------------------------------------------------------------- JSON

static nlohmann::ordered_json curve_json(const Curve &c) {
    auto a = nlohmann::ordered_json::array();
    for (auto &[b, s] : c.points()) a.push_back({b, s});
    return a;
}

static Curve curve_from(const nlohmann::json &a) {
    Curve c;
    for (const auto &p : a) c.set(p.at(0).get<std::uint64_t>(), p.at(1).get<double>());
    return c;
}

// A choice of the levels as the model file says it, in a "submodules"
// entry and a "hier" one: low, up, and (version 7) the levels' algorithms
static nlohmann::ordered_json levels_json(const Levels &l) {
    nlohmann::ordered_json j;
    j["low"] = l.low;
    j["up"] = l.up;
    j["low_algorithm"] = level_algorithm(l.low_tree);
    j["up_algorithm"] = level_algorithm(l.up_tree);
    return j;
}

// (before version 7 the levels ran their modules: no algorithms)
static Levels levels_from(const nlohmann::json &j) {
    Levels l{j.at("low").get<std::string>(), j.at("up").get<std::string>()};
    for (auto [key, tree] : {std::pair{"low_algorithm", &l.low_tree}, std::pair{"up_algorithm", &l.up_tree}}) {
        const std::string a = j.value(key, "module");
        if ((*tree = level_tree(a)) < -1) throw std::runtime_error(std::string("unknown ") + key + " \"" + a + "\"");
    }
    return l;
}

nlohmann::ordered_json Model::to_json() const {
    nlohmann::ordered_json j;
    j["format"] = "collx-tune-model";
    j["version"] = 10;
    j["generated_by"] = generated_by;
    j["nodes"] = nodes;
    j["ranks_per_node"] = ranks_per_node;
    j["ranks"] = ranks;
    j["tuning_seconds"] = tuning_seconds;
    j["complete"] = complete;
    j["sizes"] = sizes;
    j["segments"] = segments;
    j["submodules"] = nlohmann::ordered_json::array();
    for (const Levels &l : levels) j["submodules"].push_back(levels_json(l));
    j["flat_trees"] = nlohmann::ordered_json::array();
    for (int f : flats) j["flat_trees"].push_back(collx_tree_name(f));
    j["split_rails"] = split;
    j["margin"] = margin;
    auto &cj = j["collectives"];
    cj = nlohmann::ordered_json::object();
    for (auto &[coll, m] : colls) {
        nlohmann::ordered_json o;
        if (pipelined(coll)) {
            auto st = nlohmann::ordered_json::array();
            for (Level l : stages(coll)) st.push_back(name(l));
            o["stages"] = st;
        }
        o["previous"] = curve_json(m.previous);
        o["flat"] = nlohmann::ordered_json::object();
        for (auto &[f, c] : m.flat) o["flat"][collx_tree_name(f)] = curve_json(c);
        if (!m.split.empty()) o["split"] = curve_json(m.split);
        if (!m.builtin.empty()) {
            o["builtin"] = curve_json(m.builtin);
            o["builtin_spread"] = curve_json(m.builtin_spread);
        }
        if (!m.back_to_back.empty()) {  // [bytes, the built-in's seconds, {configuration: its seconds}]
            o["back_to_back"] = nlohmann::ordered_json::array();
            for (auto &[x, b] : m.back_to_back) {
                nlohmann::ordered_json cs = nlohmann::ordered_json::object();
                for (auto &[label, s] : b.configs) cs[label] = s;
                o["back_to_back"].push_back({x, b.builtin_s, cs});
            }
        }
        o["hier"] = nlohmann::ordered_json::array();
        for (auto &[l, h] : m.hier) {
            nlohmann::ordered_json hj = levels_json(l);
            hj["whole"] = curve_json(h.whole);
            hj["pipelines"] = nlohmann::ordered_json::object();
            for (auto &[seg, p] : h.pipeline) {
                const int K = int(stages(coll).size());
                auto &pj = hj["pipelines"][std::to_string(seg)];
                pj["measured"] = nlohmann::ordered_json::array();  // [segments, seconds]
                for (auto &[nu, t] : p.points) pj["measured"].push_back({nu, t});
                if (p.complete()) pj["full_step"] = p.full_step(), pj["fill_drain"] = p.fill_drain(K);
            }
            o["hier"].push_back(hj);
        }
        cj[name(coll)] = o;
    }
    return j;
}

Model Model::from_json(const nlohmann::json &j) {
    // version 3: without flat trees; 4: bcast, reduce and allreduce only;
    // 5: without split rails (not measured); 6: without the levels' trees;
    // 7: without hanx's built-in choice (every size had a rule); 8:
    // without the back-to-back times; 9: one configuration timed back to
    // back per size
    const int version = j.value("version", 0);
    if (j.value("format", "") != "collx-tune-model" || version < 3 || version > 10)
        throw std::runtime_error("not a collx-tune model (format \"collx-tune-model\", version 3 "
                                 "to 10; run collx-tune again)");
    Model m;
    m.generated_by = j.value("generated_by", "");
    m.nodes = j.at("nodes").get<int>();
    m.ranks_per_node = j.at("ranks_per_node").get<int>();
    m.ranks = j.at("ranks").get<int>();
    m.tuning_seconds = j.value("tuning_seconds", 0.0);
    m.complete = j.value("complete", true);
    m.sizes = j.at("sizes").get<std::vector<std::uint64_t>>();
    m.segments = j.at("segments").get<std::vector<std::uint64_t>>();
    m.levels.clear();
    for (const auto &x : j.at("submodules")) m.levels.push_back(levels_from(x));
    const auto tree_of = [](const std::string &n) {
        const int f = flat_tree(n);
        if (f < 0) throw std::runtime_error("unknown flat tree \"" + n + "\"");
        return f;
    };
    if (j.contains("flat_trees"))
        for (const auto &x : j.at("flat_trees")) m.flats.push_back(tree_of(x.get<std::string>()));
    m.split = j.value("split_rails", false);
    m.margin = j.value("margin", -1.0);
    for (auto &[cname, o] : j.at("collectives").items()) {
        auto coll = coll_from_name(cname);
        if (!coll) throw std::runtime_error("unknown collective \"" + cname + "\"");
        CollModel cm;
        cm.previous = curve_from(o.at("previous"));
        if (o.contains("flat"))
            for (auto &[f, c] : o.at("flat").items()) cm.flat[tree_of(f)] = curve_from(c);
        if (o.contains("split")) cm.split = curve_from(o.at("split"));  // absent: not measured
        if (o.contains("builtin")) {
            cm.builtin = curve_from(o.at("builtin"));
            cm.builtin_spread = curve_from(o.value("builtin_spread", nlohmann::json::array()));
        }
        if (o.contains("back_to_back"))
            for (const auto &x : o.at("back_to_back")) {
                BackToBack &b = cm.back_to_back[x.at(0).get<std::uint64_t>()];
                if (version < 10) {  // [bytes, configuration, its seconds, the built-in's]
                    b.configs[x.at(1).get<std::string>()] = x.at(2).get<double>();
                    b.builtin_s = x.at(3).get<double>();
                    continue;
                }
                b.builtin_s = x.at(1).get<double>();
                for (auto &[label, s] : x.at(2).items()) b.configs[label] = s.get<double>();
            }
        for (const auto &hj : o.at("hier")) {
            HierModel &h = cm.hier[levels_from(hj)];
            h.whole = curve_from(hj.at("whole"));
            for (auto &[seg, pj] : hj.at("pipelines").items()) {
                // the measurements; full_step and fill_drain are derived (for the reader)
                Pipeline p;
                for (const auto &x : pj.at("measured")) p.points[x.at(0).get<double>()] = x.at(1).get<double>();
                h.pipeline[std::stoull(seg)] = p;
            }
        }
        m.colls[*coll] = std::move(cm);
    }
    return m;
}

void Model::save(const std::string &path) const {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp);
        f << to_json().dump(1) << "\n";
        if (!f) throw std::runtime_error(path + ": cannot write");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error(path + ": cannot write");
}

Model Model::load(const std::string &path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error(path + ": cannot open");
    try {
        return from_json(nlohmann::json::parse(f));
    } catch (const std::exception &e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

}  // namespace collx::tune
