// collx-tune: the offline autotuner of coll/hanx (docs/collx-tune.md).
//
// Tuning (default mode) benchmarks the *tasks* of hanx's pipelined bcast,
// reduce and allreduce -- each pipeline in place at a few lengths per
// segment size, whose slope is the full step and the rest the fill and
// drain -- plus unsegmented hanx, the previous module, the flat collx
// trees and split rails (allreduce, reduce_scatter_block) whole at a few sizes, for each choice
// of modules on the levels (--low/--up) and of collx trees hanx runs on
// them (--low-trees/--up-trees); the model (model.hpp) composes
// them into predicted times of every configuration at every message size,
// and the best ones become a tuning file.  --validate
// re-measures whole collectives of every configuration at sampled sizes
// (with --sample all: the exhaustive search) and reports prediction errors
// and how often the file's choice is within 5% of the best measured
// configuration; --score does the latter on earlier validations'
// measurements.  --explain says what hanx would run and why.
//
// Run under mpirun with hanx loadable, e.g.
//   mpirun --mca coll_hanx_priority 100 collx-tune --out tuning.json
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "model.hpp"

using namespace collx::tune;
using collx::Rules;

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Options {
    std::string out = "collx-tuning.json";
    std::string validate, explain, plot, score;
    std::vector<std::string> data;  // --score: validations' --plot prefixes
    std::vector<Coll> colls = all_colls();
    std::uint64_t min = 4, max = 16u << 20, measure_max = 4u << 20, pipeline_max = 2u << 20;
    std::vector<std::uint64_t> segments{16u << 10, 32u << 10, 64u << 10, 128u << 10,
                                        256u << 10, 512u << 10, 1u << 20};
    std::vector<std::string> low{""}, up{""};  // submodule candidates, "" = the MCA parameters'
    // collx trees hanx runs on the levels below the leaders / the leaders'
    // (collx_tree_kind_t), each a choice of the levels of its own
    std::vector<int> low_trees, up_trees;
    // the front door's flat collx trees measured (collx_tree_kind_t)
    std::vector<int> flat{COLLX_TREE_PIPELINE, COLLX_TREE_KNOMIAL, COLLX_TREE_TOPO, COLLX_TREE_RING,
                          COLLX_TREE_RECURSIVE_DOUBLING};
    bool split = true;         // split rails measured (where nodes are of one size)
    bool back_to_back = true;  // the best configurations timed in a loop against the built-in too
    int loop_configs = 3;      // at most this many per size (Model::loop_candidates)
    double margin = 0.1;       // Model::margin; < 0 (--margin off): hanx's built-in not measured
    double budget = 0;         // seconds, 0 = none
    int windows = 9;           // timed windows per point, at least
    double point_time = 0.01;  // seconds per point (windows fill it)
    double loop_time = -1;     // seconds per timed window of a loop; < 0: 2 x point_time
    std::string clock = "auto";  // auto, shared, estimate
    std::string sample = "8";  // --validate: sizes per collective, or "all"
    unsigned seed = 1;
    bool quiet = false;
    double max_error = -1, min_within = -1;
    // --explain
    std::string coll = "bcast";
    std::uint64_t bytes = 0;
    long long nodes = -1, rpn = -1;
};

[[noreturn]] void usage(int rc) {
    std::printf(
        "collx-tune: offline autotuner of coll/hanx (docs/collx-tune.md)\n\n"
        "  mpirun [--mca coll_hanx_priority 100] collx-tune [options]          tune, write a file\n"
        "  mpirun ... collx-tune --validate FILE [--sample N|all] [--plot P]  measure vs predict\n"
        "  collx-tune --explain FILE --coll C --bytes B [--nodes N --ranks-per-node M]\n"
        "  collx-tune --score FILE --data P1,P2,...   the file's choices against the\n"
        "                      measurements of earlier validations (their --plot P);\n"
        "                      with one, where they miss\n\n"
        "  --out FILE          tuning file to write (default collx-tuning.json); the model\n"
        "                      goes next to it as FILE with .model.json\n"
        "  --colls LIST        bcast,reduce,allreduce,allgather,alltoall,barrier,\n"
        "                      reduce_scatter_block (default all)\n"
        "  --min B --max B     message sizes of the rules: powers of 2 (default 4..16M)\n"
        "  --measure-max B     largest size measured whole; beyond it curves are extended\n"
        "                      linearly (default 4M)\n"
        "  --pipeline-max B    pipelines are measured on 2, 4, 8, 32, 128 segments and the\n"
        "                      longest power of 2 as far as this size (at least 4;\n"
        "                      default 2M)\n"
        "  --segments LIST     segment sizes (default 16K,32K,64K,128K,256K,512K,1M)\n"
        "  --low PREF          also try these modules on the intra-node levels (an\n"
        "                      ompi_comm_coll_preference value, e.g. adaptx; repeatable)\n"
        "  --up PREF           the same for the node leaders' level (e.g. --up adaptx)\n"
        "  --low-trees LIST    also try these collx trees, run by hanx itself, on the levels\n"
        "                      below the node leaders (\"low_algorithm\" rules; bcast,\n"
        "                      reduce, allreduce): tree names, all or none (default none)\n"
        "  --up-trees LIST     the same on the node leaders' level (\"up_algorithm\")\n"
        "  --flat LIST         flat collx trees hanx may run a whole call as (\"flat:TREE\"\n"
        "                      rules): tree names, all or none (default pipeline,knomial,topo,ring,\n"
        "                      recursive_doubling)\n"
        "  --split yes|no      measure allreduce and reduce_scatter_block as split rails\n"
        "                      (\"split\" rules) and allgather on the node ring\n"
        "                      (\"node_ring\" rules; default\n"
        "                      yes, where the nodes all have the same number of ranks)\n"
        "  --margin F|off      hanx's built-in choice (what runs where no rule matches) is\n"
        "                      measured first; a size gets a rule only where a configuration\n"
        "                      is predicted faster than it by more than F of its time, or\n"
        "                      by more than its measured spread there if larger (default\n"
        "                      0.1); off: not measured, every size gets a rule\n"
        "  --back-to-back yes|no  where a size's best configuration is predicted no\n"
        "                      slower than the built-in, time the best ones (--loop-configs)\n"
        "                      and the built-in back to back too (calls in a loop, a rooted\n"
        "                      collective's root rotating, as contrib/bench.sh): the size\n"
        "                      gets a rule only where the fastest of them there beats the\n"
        "                      built-in by the margin (default yes; with a margin);\n"
        "                      --validate: every configuration also timed in a loop, the\n"
        "                      file's choice's regret there reported too\n"
        "  --loop-configs N    at most N configurations per size timed back to back: the\n"
        "                      best predicted of those predicted no slower than the\n"
        "                      built-in (default 3)\n"
        "  --budget SECONDS    stop measuring after this long and write what is known\n"
        "                      (so does SIGUSR1 or SIGTERM to the job)\n"
        "  --windows N         timed windows per point, at least (default 9); the median\n"
        "                      is kept\n"
        "  --point-time S      seconds per point: windows fill it (default 0.01)\n"
        "  --loop-time S       seconds of calls per timed window of a loop (--back-to-back;\n"
        "                      default twice --point-time: 0.02, contrib/bench.sh's\n"
        "                      repetition)\n"
        "  --clock MODE        auto (one kernel: its clock; else offsets estimated),\n"
        "                      shared or estimate\n"
        "  --sample N|all      --validate: sizes sampled per collective (default 8), seeded\n"
        "  --seed N            sampling seed (default 1)\n"
        "  --plot PREFIX       --validate: write PREFIX-<coll>.svg (gnuplot) and .dat\n"
        "  --max-error F       --validate: exit 3 if the median prediction error (all\n"
        "                      configurations) is above F (e.g. 0.15)\n"
        "  --min-within F      --validate: exit 3 if the file's choice is within 5%% of the\n"
        "                      best at fewer than this share of the points (e.g. 0.9)\n"
        "  --quiet             no progress lines\n");
    std::exit(rc);
}

std::vector<std::string> split_list(const std::string &s) {
    std::vector<std::string> v;
    std::stringstream ss(s);
    for (std::string x; std::getline(ss, x, ',');)
        if (!x.empty()) v.push_back(x);
    return v;
}

// The collx trees of a LIST option (--flat, --low-trees, --up-trees):
// names (any case), "all" or "none"; each once, in the order given.
std::vector<int> trees(const std::string &option, const std::string &v) {
    std::vector<int> t;
    if (v == "all")
        for (int k = 0; k < COLLX_TREE_COUNT; ++k) t.push_back(k);
    else if (v != "none")
        for (auto &name : split_list(v)) {
            const int k = flat_tree(name);
            if (k < 0) throw std::runtime_error(option + ": no collx tree \"" + name + "\"");
            if (std::find(t.begin(), t.end(), k) == t.end()) t.push_back(k);
        }
    return t;
}

bool yes_no(const std::string &option, const std::string &v) {
    if (v != "yes" && v != "no") throw std::runtime_error(option + ": yes or no");
    return v == "yes";
}

Options parse(int argc, char **argv) {
    Options o;
    auto need = [&](int &i) -> std::string {
        if (i + 1 >= argc) throw std::runtime_error(std::string(argv[i]) + " needs a value");
        return argv[++i];
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--out") o.out = need(i);
        else if (a == "--validate") o.validate = need(i);
        else if (a == "--explain") o.explain = need(i);
        else if (a == "--score") o.score = need(i);
        else if (a == "--data") o.data = split_list(need(i));
        else if (a == "--plot") o.plot = need(i);
        else if (a == "--colls") {
            o.colls.clear();
            for (auto &c : split_list(need(i))) {
                auto k = coll_from_name(c);
                if (!k)
                    throw std::runtime_error("unknown collective \"" + c + "\" (bcast, reduce, allreduce, "
                                             "allgather, alltoall, barrier, reduce_scatter_block)");
                o.colls.push_back(*k);
            }
        } else if (a == "--min") o.min = parse_bytes(need(i));
        else if (a == "--max") o.max = parse_bytes(need(i));
        else if (a == "--measure-max") o.measure_max = parse_bytes(need(i));
        else if (a == "--pipeline-max") o.pipeline_max = parse_bytes(need(i));
        else if (a == "--segments") {
            o.segments.clear();
            for (auto &s : split_list(need(i))) o.segments.push_back(parse_bytes(s));
            std::sort(o.segments.begin(), o.segments.end());
        } else if (a == "--flat") o.flat = trees(a, need(i));
        else if (a == "--low-trees") o.low_trees = trees(a, need(i));
        else if (a == "--up-trees") o.up_trees = trees(a, need(i));
        else if (a == "--split") o.split = yes_no(a, need(i));
        else if (a == "--margin") {
            const std::string v = need(i);
            o.margin = v == "off" ? -1 : std::stod(v);
            if (v != "off" && (o.margin < 0 || o.margin >= 1))
                throw std::runtime_error("--margin: a share from 0 to below 1, or off");
        } else if (a == "--low") o.low.push_back(need(i));
        else if (a == "--up") o.up.push_back(need(i));
        else if (a == "--budget") o.budget = std::stod(need(i));
        else if (a == "--back-to-back") o.back_to_back = yes_no(a, need(i));
        else if (a == "--loop-configs") {
            o.loop_configs = std::stoi(need(i));
            if (o.loop_configs < 1) throw std::runtime_error("--loop-configs: at least 1");
        }
        else if (a == "--windows") o.windows = std::stoi(need(i));
        else if (a == "--point-time") o.point_time = std::stod(need(i));
        else if (a == "--loop-time") {
            o.loop_time = std::stod(need(i));
            if (!(o.loop_time > 0)) throw std::runtime_error("--loop-time must be positive");
        }
        else if (a == "--clock") o.clock = need(i);
        else if (a == "--sample") o.sample = need(i);
        else if (a == "--seed") o.seed = unsigned(std::stoul(need(i)));
        else if (a == "--quiet") o.quiet = true;
        else if (a == "--max-error") o.max_error = std::stod(need(i));
        else if (a == "--min-within") o.min_within = std::stod(need(i));
        else if (a == "--coll") o.coll = need(i);
        else if (a == "--bytes") o.bytes = parse_bytes(need(i));
        else if (a == "--nodes") o.nodes = std::stoll(need(i));
        else if (a == "--ranks-per-node") o.rpn = std::stoll(need(i));
        else if (a == "-h" || a == "--help") usage(0);
        else throw std::runtime_error("unknown option " + a + " (see --help)");
    }
    if (o.min < 4 || o.min > o.max) throw std::runtime_error("need 4 <= --min <= --max");
    if (o.windows < 1 || o.point_time <= 0) throw std::runtime_error("--windows and --point-time must be positive");
    if (o.loop_time < 0) o.loop_time = 2 * o.point_time;
    if (o.clock != "auto" && o.clock != "shared" && o.clock != "estimate")
        throw std::runtime_error("--clock: auto, shared or estimate");
    for (auto s : o.segments)
        if (s < 4 || s > (1u << 30)) throw std::runtime_error("segment sizes must be 4..1G");
    if (o.segments.empty()) throw std::runtime_error("--segments is empty");
    for (const auto *l : {&o.low, &o.up})
        for (std::size_t i = 1; i < l->size(); ++i)
            if ((*l)[i].empty() || std::count(l->begin(), l->end(), (*l)[i]) > 1)
                throw std::runtime_error("--low/--up: an empty or repeated value");
    return o;
}

// The choices of the levels: every pair of the --low and --up candidates,
// the MCA parameters' first, then each tree of --low-trees and of
// --up-trees alone on its level (with the MCA parameters' modules and the
// module on the other level): a tree's choice costs one more tuning of
// hanx's pipelines, so they are not crossed with each other nor with the
// modules.
std::vector<Levels> level_choices(const Options &o) {
    std::vector<Levels> v;
    for (const auto &l : o.low)
        for (const auto &u : o.up) v.push_back({l, u});
    for (int t : o.low_trees) v.push_back({"", "", t, -1});
    for (int t : o.up_trees) v.push_back({"", "", -1, t});
    return v;
}

std::string model_path(const std::string &file) {
    const std::string ext = ".json";
    if (file.size() > ext.size() && file.compare(file.size() - ext.size(), ext.size(), ext) == 0)
        return file.substr(0, file.size() - ext.size()) + ".model.json";
    return file + ".model.json";
}

std::vector<std::uint64_t> pow2_grid(std::uint64_t lo, std::uint64_t hi) {
    std::vector<std::uint64_t> v;
    std::uint64_t x = 1;
    while (x < lo) x <<= 1;
    for (; x <= hi; x <<= 1) v.push_back(x);
    return v;
}

std::string fmt_us(double s) {
    char b[32];
    std::snprintf(b, sizeof(b), "%.1f", s * 1e6);
    return b;
}

// ---------------------------------------------------------------- explain

int explain(const Options &o) {
    Rules rules;
    try {
        rules = Rules::load(o.explain);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "collx-tune: %s\n", e.what());
        return 2;
    }
    std::optional<Model> model;
    try {
        model = Model::load(model_path(o.explain));
    } catch (const std::exception &) {
    }
    const auto coll = coll_from_name(o.coll);
    long long nodes = o.nodes >= 0 ? o.nodes : model ? model->nodes : -1;
    long long rpn = o.rpn >= 0 ? o.rpn : model ? model->ranks_per_node : -1;
    std::printf("%s of %llu bytes on %lld nodes x %lld ranks (largest node):\n", o.coll.c_str(),
                (unsigned long long)o.bytes, nodes, rpn);
    auto idx = rules.find(o.coll, nodes, rpn, o.bytes);
    std::optional<Config> chosen;
    if (!idx) {
        std::printf("  no rule of %s matches: hanx uses its built-in defaults "
                    "(docs/mca-parameters.md)\n", o.explain.c_str());
    } else {
        const auto &r = rules[*idx];
        chosen = config_of(r);
        std::printf("  rule %zu (line %d) of %s matches", *idx + 1, r.line, o.explain.c_str());
        if (r.bytes)
            std::printf(": bytes %llu..%s", (unsigned long long)r.bytes->min,
                        r.bytes->max ? std::to_string(*r.bytes->max).c_str() : "");
        std::printf("\n  hanx runs: %s%s\n", !chosen ? "its default (the rule names no algorithm hanx knows)"
                                       : chosen->previous ? "the previous module (tuned, ...) on the whole communicator"
                                       : chosen->flat >= 0 ? ("one collx " + std::string(collx_tree_name(chosen->flat)) +
                                                              " tree over all ranks").c_str()
                                       : chosen->node_ring
                                           ? "the node ring: every rank's block broadcast at once "
                                             "round the nodes, each node's leader fanning it out into "
                                             "its node"
                                       : chosen->split && o.coll == "allreduce"
                                           ? "split rails: each segment (hanx's allreduce segments) "
                                             "reduce-scattered in the node, its chunks allreduced on the "
                                             "rails (the ranks at one place of every node), allgathered "
                                             "in the node; the levels where nodes differ in size"
                                       : chosen->split ? "split rails: the vector reduce-scattered in the node by "
                                                         "rail (the ranks at one place of every node), each "
                                                         "rail's pieces reduce-scattered on the rail (each on "
                                                         "the collx ring unless a level's algorithm is named); "
                                                         "the levels where nodes differ in size"
                                       : chosen->at(o.bytes).segment == 0
                                           ? "the levels one after the other, unsegmented"
                                           : ("the levels pipelined in " +
                                              std::to_string((o.bytes + chosen->segment - 1) / chosen->segment) +
                                              " segments of " + bytes_label(chosen->segment)).c_str(),
                    chosen && chosen->hierarchical() && !(chosen->levels == Levels{})
                        ? (", on the levels:" + chosen->levels.label()).c_str() : "");
        if (r.comment) std::printf("  rule comment: %s\n", r.comment->c_str());
    }
    if (!coll) {
        std::printf("  (collx-tune does not tune %s)\n", o.coll.c_str());
        return 0;
    }
    if (!model) {
        std::printf("  no model next to the file (%s): no predictions\n", model_path(o.explain).c_str());
        return 0;
    }
    if (model->nodes != nodes || model->ranks_per_node != rpn)
        std::printf("  (the model was measured on %d nodes x %d ranks)\n", model->nodes, model->ranks_per_node);
    auto cm = model->colls.find(*coll);
    if (cm == model->colls.end()) return 0;
    std::printf("  predicted by the model (us):\n");
    auto b = model->best(*coll, o.bytes);
    if (!cm->second.builtin.empty()) {  // the baseline every rule had to beat
        auto t = cm->second.predict(*coll, Config::one_flag(), o.bytes);
        std::printf("    %-24s %12s  (hanx's own choice; a rule must be predicted %.0f%% faster)%s\n", "builtin",
                    t ? fmt_us(*t).c_str() : "n/a", 100 * model->margin_at(*coll, o.bytes),
                    !idx && model->nodes == nodes && model->ranks_per_node == rpn ? "  <- runs: no rule" : "");
    }
    const auto loop = cm->second.back_to_back.find(o.bytes);
    if (loop != cm->second.back_to_back.end()) {  // the rules' second test, at this size
        std::string times;
        for (auto &[label, s] : loop->second.configs) times += label + " " + fmt_us(s) + ", ";
        const auto c = model->choice(*coll, o.bytes);
        const bool rule = c && !c->first.builtin;
        std::printf("  back to back (us per call, in a loop): %sbuiltin %s: %s\n", times.c_str(),
                    fmt_us(loop->second.builtin_s).c_str(),
                    rule ? (c->first.label() + " beats it by the margin there").c_str()
                         : "none beats it by the margin there: no rule");
    }
    for (const Config &c : configs_for(*coll, o.bytes, model->segments, model->levels, model->flats,
                                       model->split)) {
        auto t = cm->second.predict(*coll, c, o.bytes);
        std::string how;  // a pipeline's parts at its largest measured length
        const auto h = cm->second.hier.find(c.levels);
        const std::map<std::uint64_t, Pipeline> none;
        const auto &pipes = h == cm->second.hier.end() ? none : h->second.pipeline;
        auto p = pipes.find(c.segment);
        if (c.at(o.bytes).segment && p != pipes.end() && p->second.complete()) {
            const int K = int(stages(*coll).size());
            std::string at;
            for (auto &[n, sec] : p->second.points) at += (at.empty() ? "" : ",") + std::to_string(int(n));
            char buf[200];
            std::snprintf(buf, sizeof buf, "  (%.4g segments; measured at %s: fill+drain %s + full steps of %s)",
                          double(o.bytes) / double(c.segment), at.c_str(), fmt_us(p->second.fill_drain(K)).c_str(),
                          fmt_us(p->second.full_step()).c_str());
            how = buf;
        }
        std::printf("    %-24s %12s%s%s%s\n", c.label().c_str(), t ? fmt_us(*t).c_str() : "n/a",
                    b && b->first == c ? "  <- best predicted" : "",
                    chosen && *chosen == c ? "  <- the rule's choice" : "", how.c_str());
    }
    return 0;
}

// ------------------------------------------------------------------ score

double median(std::vector<double> v);

// Measured microseconds of every configuration (by label) at every size,
// per collective: what one validation wrote with --plot P (P-<coll>.dat).
using Table = std::map<Coll, std::map<std::uint64_t, std::map<std::string, double>>>;

Table read_validation(const std::string &prefix) {
    Table t;
    for (Coll coll : all_colls()) {
        std::ifstream d(prefix + "-" + name(coll) + ".dat");
        std::string line, label;
        while (d && std::getline(d, line)) {  // blocks "# label", then "bytes predicted_us measured_us"
            if (line.rfind("# winners", 0) == 0) break;
            if (line.rfind("# ", 0) == 0) {
                label = line.substr(2);
                continue;
            }
            std::istringstream l(line);
            std::uint64_t x;
            double pred, meas;
            if (l >> x >> pred >> meas) t[coll][x][label] = meas;
        }
    }
    return t;
}

// Per configuration the median of the validations that measured it.
Table median_of(const std::vector<Table> &all) {
    std::map<Coll, std::map<std::uint64_t, std::map<std::string, std::vector<double>>>> v;
    for (const Table &t : all)
        for (auto &[coll, by] : t)
            for (auto &[x, row] : by)
                for (auto &[l, us] : row) v[coll][x][l].push_back(us);
    Table m;
    for (auto &[coll, by] : v)
        for (auto &[x, row] : by)
            for (auto &[l, us] : row) m[coll][x][l] = median(us);
    return m;
}

struct Judged {
    int points = 0, within = 0, unmeasured = 0;
    double share() const { return points ? double(within) / points : 0; }
};

// How often choose(coll, bytes) -- a label -- is within 5% of the best
// of `t` at its sizes; `misses` lists the others.
Judged judge(const Table &t, const std::function<std::string(Coll, std::uint64_t)> &choose,
             bool misses = false) {
    Judged j;
    for (auto &[coll, by] : t)
        for (auto &[x, row] : by) {
            double best = INFINITY;
            std::string best_label;
            for (auto &[l, us] : row)
                if (us < best) best = us, best_label = l;
            ++j.points;
            const std::string c = choose(coll, x);
            auto it = row.find(c);
            if (it == row.end()) {
                ++j.unmeasured;
            } else if (it->second <= 1.05 * best) {
                ++j.within;
            } else if (misses) {
                std::printf("  miss: %-10s %6s  %s is %.2fx %s\n", name(coll), bytes_label(x).c_str(), c.c_str(),
                            it->second / best, best_label.c_str());
            }
        }
    return j;
}

// The file's choices against the measurements of earlier validations
// (--validate --plot P): how often the choice is within 5% of the best
// measured configuration, per validation, on average and against the
// median of them all; and, as the yardstick, how often one validation's
// own best choices are within 5% of the best of another (the exhaustive
// search's reproducibility on this machine).  docs/collx-tune.md.
int score(const Options &o) {
    Rules rules;
    std::optional<Model> model;
    try {
        rules = Rules::load(o.score);
        model = Model::load(model_path(o.score));
    } catch (const std::exception &e) {
        if (rules.empty()) {
            std::fprintf(stderr, "collx-tune: %s\n", e.what());
            return 2;
        }
    }
    const long long nodes = o.nodes >= 0 ? o.nodes : model ? model->nodes : -1;
    const long long rpn = o.rpn >= 0 ? o.rpn : model ? model->ranks_per_node : -1;
    if (o.data.empty()) {
        std::fprintf(stderr, "collx-tune: --score needs --data PREFIX[,PREFIX...]\n");
        return 2;
    }
    if (nodes < 0 || rpn < 0) {
        std::fprintf(stderr, "collx-tune: no model next to %s: say the shape (--nodes N --ranks-per-node M)\n",
                     o.score.c_str());
        return 2;
    }
    const auto file_choice = [&](Coll coll, std::uint64_t x) -> std::string {
        const collx::Rule *r = rules.lookup(name(coll), nodes, rpn, x);
        auto c = r ? config_of(*r) : std::optional<Config>(Config::one_flag());  // (no rule: hanx's own)
        return c ? c->at(x).label() : "(no rule hanx knows)";
    };
    const auto percent = [](double share) { return 100 * share; };
    std::vector<Table> all;
    double sum = 0;
    for (const std::string &prefix : o.data) {
        all.push_back(read_validation(prefix));
        const Judged j = judge(all.back(), file_choice, o.data.size() == 1);
        if (!j.points) {
            std::fprintf(stderr, "collx-tune: no measurements under %s (--validate --plot %s writes them)\n",
                         prefix.c_str(), prefix.c_str());
            return 2;
        }
        std::printf("%s: the file's choice within 5%% of the best measured at %d of %d points (%.0f%%)%s\n",
                    prefix.c_str(), j.within, j.points, percent(j.share()),
                    j.unmeasured ? (" (" + std::to_string(j.unmeasured) + " choices not measured there)").c_str() : "");
        sum += j.share();
    }
    std::printf("collx-tune: %s over %zu validations: %.1f%% of the points on average\n", o.score.c_str(),
                all.size(), percent(sum / double(all.size())));
    if (all.size() < 2) return 0;
    const Table med = median_of(all);
    const Judged jm = judge(med, file_choice, true);
    std::printf("  against the median of the %zu validations (per configuration): %d of %d points (%.0f%%)\n",
                all.size(), jm.within, jm.points, percent(jm.share()));
    // the yardstick: one exhaustive search's best, judged on the others
    double pair = 0, on_median = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const auto best_of_i = [&](Coll coll, std::uint64_t x) {
            const auto &row = all[i].at(coll).at(x);
            return std::min_element(row.begin(), row.end(), [](auto &a, auto &b) { return a.second < b.second; })->first;
        };
        for (std::size_t k = 0; k < all.size(); ++k)
            if (k != i) pair += judge(all[k], best_of_i).share();
        on_median += judge(med, best_of_i).share();
    }
    const double n = double(all.size());
    std::printf("  yardstick: one validation's own best choices within 5%% of another's best at %.1f%% of the "
                "points on average, of the median's at %.1f%%\n",
                percent(pair / (n * (n - 1))), percent(on_median / n));
    return 0;
}

// ------------------------------------------------------------ MPI context

struct Cvar {
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    bool ok = false;
};

Cvar cvar(const char *name) {
    Cvar c;
    int idx, count;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS) return c;
    if (MPI_T_cvar_handle_alloc(idx, nullptr, &c.h, &count) != MPI_SUCCESS) return c;
    c.ok = true;
    return c;
}

int cvar_int(const char *name, int dflt) {
    Cvar c = cvar(name);
    int v = dflt;
    if (c.ok) MPI_T_cvar_read(c.h, &v), MPI_T_cvar_handle_free(&c.h);
    return v;
}

std::string cvar_string(const char *name) {
    Cvar c = cvar(name);
    if (!c.ok) return "";
    char buf[4096] = {0};
    MPI_T_cvar_read(c.h, buf);
    MPI_T_cvar_handle_free(&c.h);
    return buf;
}

// Sets a string MCA variable through MPI_T (it must be settable).
void cvar_write_string(const char *name, const std::string &value) {
    Cvar c = cvar(name);
    std::vector<char> v(value.begin(), value.end());
    v.push_back('\0');
    const bool ok = c.ok && MPI_T_cvar_write(c.h, v.data()) == MPI_SUCCESS;
    if (c.ok) MPI_T_cvar_handle_free(&c.h);
    if (!ok) throw std::runtime_error(std::string("cannot set ") + name + " through MPI_T");
}

MPI_Comm with_preference(MPI_Comm c, const std::string &pref) {
    MPI_Info info;
    MPI_Info_create(&info);
    if (!pref.empty()) MPI_Info_set(info, "ompi_comm_coll_preference", pref.c_str());
    MPI_Comm d;
    MPI_Comm_dup_with_info(c, info, &d);
    MPI_Info_free(&info);
    return d;
}

class Job {
  public:
    MPI_Comm ctl = MPI_COMM_NULL;   // control traffic: the previous module
    MPI_Comm prev = MPI_COMM_NULL;  // the previous module, measured
    MPI_Comm hanx = MPI_COMM_NULL;  // hanx
    // hanx with other modules on the levels, by their (low, up) preferences
    std::map<std::pair<std::string, std::string>, MPI_Comm> with;
    int rank = 0, size = 0, nodes = 0, rpn = 0;
    double t_start = 0, budget = 0;
    bool quiet = false;
    Cvar seg[3];  // coll_hanx_{bcast,reduce,allreduce}_segment_size
    Cvar default_algorithm;  // coll_hanx_default_algorithm

    explicit Job(const Options &o) : budget(o.budget), quiet(o.quiet) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        t_start = MPI_Wtime();
        ctl = with_preference(MPI_COMM_WORLD, "^hanx");
        prev = with_preference(MPI_COMM_WORLD, "^hanx");
        hanx = with_preference(MPI_COMM_WORLD, "hanx");
        // the shape hanx sees (the rules are for it): synthetic nodes if
        // it was told so, else the shared-memory split
        const int rpn_mca = cvar_int("coll_hanx_ranks_per_node", 0);
        const int rr = cvar_int("coll_hanx_round_robin", 0);
        MPI_Comm node;
        if (rpn_mca > 0) {
            const int nn = (size + rpn_mca - 1) / rpn_mca;
            MPI_Comm_split(MPI_COMM_WORLD, rr ? rank % nn : rank / rpn_mca, rank, &node);
        } else {
            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        }
        int lrank, lsize;
        MPI_Comm_rank(node, &lrank);
        MPI_Comm_size(node, &lsize);
        MPI_Comm_free(&node);
        nodes = lrank == 0;
        MPI_Allreduce(MPI_IN_PLACE, &nodes, 1, MPI_INT, MPI_SUM, ctl);
        MPI_Allreduce(&lsize, &rpn, 1, MPI_INT, MPI_MAX, ctl);
        const char *names[3] = {"coll_hanx_bcast_segment_size", "coll_hanx_reduce_segment_size",
                                "coll_hanx_allreduce_segment_size"};
        for (int i = 0; i < 3; ++i) seg[i] = cvar(names[i]);
        default_algorithm = cvar("coll_hanx_default_algorithm");
        const auto as_started = [](const char *var) {
            const std::string v = cvar_string(var);
            return strcasecmp(v.c_str(), "module") == 0 ? std::string("auto") : v;
        };
        builtin_low = as_started("coll_hanx_low_algorithm");
        builtin_up = as_started("coll_hanx_up_algorithm");
        sync_clocks(o.clock);
    }

    // hanx on communicators whose levels prefer the modules of `levels`:
    // made while coll_hanx_low/up_preference say so (hanx splits at the
    // first call).  (The levels' trees need none: hanx reads them at every
    // call, and measure() sets them.)
    void make_submodule_comms(const std::vector<Levels> &levels) {
        const char *names[2] = {"coll_hanx_low_preference", "coll_hanx_up_preference"};
        for (const Levels &l : levels) {
            const auto prefs = std::make_pair(l.low, l.up);
            if ((l.low.empty() && l.up.empty()) || with.count(prefs)) continue;
            const std::string want[2] = {l.low, l.up}, keep[2] = {cvar_string(names[0]), cvar_string(names[1])};
            for (int i = 0; i < 2; ++i)
                if (!want[i].empty()) cvar_write_string(names[i], want[i]);
            MPI_Comm d = with_preference(MPI_COMM_WORLD, "hanx");
            MPI_Barrier(d);  // hanx makes its sub-communicators now
            for (int i = 0; i < 2; ++i)
                if (!want[i].empty()) cvar_write_string(names[i], keep[i]);
            with[prefs] = d;
        }
    }

    MPI_Comm hanx_with(const Levels &l) const {
        return l.low.empty() && l.up.empty() ? hanx : with.at({l.low, l.up});
    }

    // hanx on communicators that run every bcast, reduce and allreduce as
    // one flat collx tree: made while coll_hanx_flat_algorithm says so
    // (hanx reads it when it builds a communicator's hierarchy).
    std::map<int, MPI_Comm> flat;
    void make_flat_comms(const std::vector<int> &trees) {
        const char *var = "coll_hanx_flat_algorithm";
        for (int f : trees) {
            if (flat.count(f)) continue;
            const std::string keep = cvar_string(var);
            cvar_write_string(var, collx_tree_name(f));
            MPI_Comm d = with_preference(MPI_COMM_WORLD, "hanx");
            MPI_Barrier(d);  // hanx builds its hierarchy now
            cvar_write_string(var, keep);
            flat[f] = d;
        }
    }

    ~Job() {
        for (auto &c : seg)
            if (c.ok) {
                int zero = 0;
                MPI_T_cvar_write(c.h, &zero);
                MPI_T_cvar_handle_free(&c.h);
            }
        for (MPI_Comm *c : {&ctl, &prev, &hanx})
            if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
        for (auto &[prefs, c] : with) MPI_Comm_free(&c);
    }

    double elapsed() const { return MPI_Wtime() - t_start; }

    // hanx can run split rails on this job (collx_hier_split_parts): at
    // least two nodes, all of the same size >= 2 -- rpn is the largest
    // node, so they are all of that size when they add up to the job
    bool balanced() const { return nodes >= 2 && rpn >= 2 && nodes * rpn == size; }

    // Everybody agrees whether to stop (budget spent, or a signal).
    bool stop() {
        int s = g_stop || (budget > 0 && rank == 0 && elapsed() > budget);
        MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_INT, MPI_MAX, ctl);
        return s;
    }

    // ---- time: one clock for every rank
    // steady_clock, less this rank's offset to rank 0's (0 where every
    // rank runs on one kernel: CLOCK_MONOTONIC is then the same clock)
    double offset = 0;
    double now() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count() -
               offset;
    }

    // Same kernel everywhere (boot_id), or --clock estimate: else each
    // rank's offset to rank 0 from ping-pongs (Cristian: the exchange of
    // least round trip, its midpoint).
    void sync_clocks(const std::string &mode) {
        std::string id;
        std::ifstream("/proc/sys/kernel/random/boot_id") >> id;
        unsigned long long h = std::hash<std::string>{}(id), lo = h, hi = h;
        MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, ctl);
        MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, ctl);
        offset = 0;
        if (mode == "shared" || (mode == "auto" && lo == hi && !id.empty())) return;
        for (int peer = 1; peer < size; ++peer) {
            if (rank == 0) {
                double best_rtt = INFINITY, best = 0;
                for (int i = 0; i < 30; ++i) {
                    double ta = now(), tp;
                    MPI_Send(&ta, 1, MPI_DOUBLE, peer, 7, ctl);
                    MPI_Recv(&tp, 1, MPI_DOUBLE, peer, 7, ctl, MPI_STATUS_IGNORE);
                    const double tb = now();
                    if (tb - ta < best_rtt) best_rtt = tb - ta, best = tp - 0.5 * (ta + tb);
                }
                MPI_Send(&best, 1, MPI_DOUBLE, peer, 8, ctl);
            } else if (rank == peer) {
                for (int i = 0; i < 30; ++i) {
                    double x;
                    MPI_Recv(&x, 1, MPI_DOUBLE, 0, 7, ctl, MPI_STATUS_IGNORE);
                    x = now();
                    MPI_Send(&x, 1, MPI_DOUBLE, 0, 7, ctl);
                }
                MPI_Recv(&offset, 1, MPI_DOUBLE, 0, 8, ctl, MPI_STATUS_IGNORE);
            }
        }
    }

    // The first fraction of a second of a job runs slower (the launch
    // still settling, clocks ramping up): 0.2 s of small collectives first.
    // (hanx's levels, as the measurements pin them: not what the job
    // started with, which may be a flat tree or the previous module)
    void warm_up() {
        set_default_algorithm(1);
        int x = 0, go = 1;
        for (const double t = MPI_Wtime(); go;) {
            for (int i = 0; i < 50; ++i) MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, hanx);
            go = MPI_Wtime() - t < 0.2;
            MPI_Bcast(&go, 1, MPI_INT, 0, ctl);
        }
    }

    // ---- latency: synchronised starts (as ReproMPI does)
    // Every rank starts `op` at the same instant t_k = t_0 + k W on the
    // common clock; its latency is from t_k until the last rank is done
    // (no barrier to subtract, no pipelining of one call into the next).
    // A window whose previous call overran it (or that a rank started
    // more than W/2 late) is discarded; too many discarded: wider windows.
    // The median over the windows, which fill point_time (at least
    // min_windows of them); *spread (if asked): their interquartile range
    // over the median.
    double latency(const std::function<void()> &op, int min_windows, double point_time,
                   double *spread = nullptr) {
        op();  // warm-up (and connections)
        double one = 0;
        for (int i = 0; i < 3; ++i) {
            MPI_Barrier(ctl);
            const double t = now();
            op();
            one = std::max(one, now() - t);
        }
        MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_DOUBLE, MPI_MAX, ctl);
        double W = 1.25 * one + 50e-6;
        std::vector<double> d, valid;
        for (int attempt = 0;; ++attempt) {
            const int n = int(std::clamp(point_time / W, double(min_windows), 400.0));
            double t0 = now() + 300e-6 + W;  // time for the broadcast of t0
            MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, ctl);
            d.assign(std::size_t(2 * n), 0.0);
            for (int k = 0; k < n; ++k) {
                const double target = t0 + k * W;
                while (now() < target) sched_yield();
                d[std::size_t(n + k)] = now() - target;  // lateness
                op();
                d[std::size_t(k)] = now() - target;
            }
            MPI_Allreduce(MPI_IN_PLACE, d.data(), 2 * n, MPI_DOUBLE, MPI_MAX, ctl);
            valid.clear();
            for (int k = 0; k < n; ++k)
                if (d[std::size_t(n + k)] <= 0.5 * W && (k == 0 || d[std::size_t(k - 1)] <= W))
                    valid.push_back(d[std::size_t(k)]);
            if (2 * valid.size() > std::size_t(n) || attempt == 3) break;
            W *= 2;
        }
        if (valid.empty()) valid.assign(d.begin(), d.begin() + std::ptrdiff_t(d.size() / 2));
        std::sort(valid.begin(), valid.end());
        const double med = valid[valid.size() / 2];
        if (spread) {
            const std::size_t n = valid.size();
            *spread = med > 0 ? (valid[(3 * (n - 1)) / 4] - valid[(n - 1) / 4]) / med : 0;
        }
        return med;
    }

    // ---- back to back: `iters` calls in a loop from a barrier, call k
    // from root (first + k) mod size (a rooted collective's; the others
    // ignore it), as an application's loop and contrib/bench.sh's
    // collx-bench run them; seconds per call, of the slowest rank
    double loop(const std::function<void(int)> &op, int iters, int first = 0) {
        MPI_Barrier(ctl);
        const double t = now();
        for (int k = 0; k < iters; ++k) op((first + k) % size);
        double dt = now() - t;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, ctl);
        return dt / iters;
    }

    void progress(const std::string &what) const {
        if (quiet || rank != 0) return;
        std::fprintf(stderr, "collx-tune [%6.1f s] %s\n", elapsed(), what.c_str());
    }

    // what hanx runs where no rule says: 0 its built-in choice, 1 the
    // hierarchical algorithm (how a collective that is not pipelined is
    // measured as "hier": hanx's built-in choice may be the previous
    // module), 3 allreduce as split rails (the rest hierarchical)
    void set_default_algorithm(int v) {
        if (!default_algorithm.ok || MPI_T_cvar_write(default_algorithm.h, &v) != MPI_SUCCESS)
            throw std::runtime_error("cannot set coll_hanx_default_algorithm through MPI_T (is coll/hanx loaded?)");
    }

    // what hanx's levels run (coll_hanx_low/up_algorithm, read at every
    // call): a collx tree, or -1 the level's module
    void set_level_trees(const Levels &l) {
        cvar_write_string("coll_hanx_low_algorithm", level_algorithm(l.low_tree));
        cvar_write_string("coll_hanx_up_algorithm", level_algorithm(l.up_tree));
    }
    // the levels as the job started them, for hanx's built-in choice:
    // "module" (the default, or so set) as "auto" -- hanx's own choice, as
    // when the variables are left at their defaults, which they no longer
    // are once written -- any other value as it is
    std::string builtin_low, builtin_up;
    void builtin_level_trees() {
        cvar_write_string("coll_hanx_low_algorithm", builtin_low);
        cvar_write_string("coll_hanx_up_algorithm", builtin_up);
    }

    // hanx's segment size for `coll`: 0 = unsegmented (a value no message
    // reaches), else the segment
    void set_segment(Coll coll, std::uint64_t s) { write_segment(coll, s ? int(s) : INT_MAX); }
    // hanx's built-in segments for `coll`: what a rule without
    // segment_bytes gets (the variable at 0)
    void builtin_segments(Coll coll) { write_segment(coll, 0); }

  private:
    void write_segment(Coll coll, int v) {
        if (!pipelined(coll))  // (seg holds the pipelined collectives' alone)
            throw std::logic_error(std::string("collx-tune: ") + name(coll) + " has no segment size");
        Cvar &c = seg[int(coll)];
        if (!c.ok || MPI_T_cvar_write(c.h, &v) != MPI_SUCCESS)
            throw std::runtime_error(std::string("cannot set coll_hanx_") + name(coll) +
                                     "_segment_size through MPI_T (is coll/hanx loaded?)");
    }
};

// Buffers for one measurement: MPI_INT data, `count` = bytes / 4 elements
// (the message, or one rank's block), room for a block per rank each way.
struct Buffers {
    int count;
    std::vector<int> b;
    Buffers(std::uint64_t bytes, int ranks)
        : count(int(std::max<std::uint64_t>(bytes / 4, 1))), b(2 * std::size_t(count) * std::size_t(ranks), 1) {}
    int *in() { return b.data(); }
    int *out() { return b.data() + b.size() / 2; }
};

// The whole collective on `comm` (hanx or the previous module) from
// `root` (bcast and reduce; the others have none); the sizes are those of
// hanx's rules (docs/tuning-file.md).
std::function<void(int)> rooted(Coll coll, MPI_Comm comm, Buffers &B) {
    switch (coll) {
    case Coll::Bcast: return [&B, comm](int root) { MPI_Bcast(B.in(), B.count, MPI_INT, root, comm); };
    case Coll::Reduce:
        return [&B, comm](int root) { MPI_Reduce(B.in(), B.out(), B.count, MPI_INT, MPI_SUM, root, comm); };
    case Coll::Allreduce:
        return [&B, comm](int) { MPI_Allreduce(B.in(), B.out(), B.count, MPI_INT, MPI_SUM, comm); };
    case Coll::Allgather:
        return [&B, comm](int) { MPI_Allgather(B.in(), B.count, MPI_INT, B.out(), B.count, MPI_INT, comm); };
    case Coll::Alltoall:
        return [&B, comm](int) { MPI_Alltoall(B.in(), B.count, MPI_INT, B.out(), B.count, MPI_INT, comm); };
    case Coll::ReduceScatterBlock:
        return [&B, comm](int) { MPI_Reduce_scatter_block(B.in(), B.out(), B.count, MPI_INT, MPI_SUM, comm); };
    case Coll::Barrier: return [comm](int) { MPI_Barrier(comm); };
    }
    return [](int) {};
}

// ... from root 0
std::function<void()> whole(Coll coll, MPI_Comm comm, Buffers &B) {
    return [f = rooted(coll, comm, B)] { f(0); };
}

// The latency of one configuration: the previous module, or hanx with
// its segment size for `coll` set (0: unsegmented), or for a collective
// that is not pipelined hanx made to run its hierarchical algorithm, or
// allreduce as split rails in hanx's built-in segments (as a "split" rule
// without segment_bytes runs it), or hanx's built-in choice (what runs
// where no rule matches: coll_hanx_default_algorithm 0, its own segments,
// coll_hanx_low/up_algorithm "auto"; its spread into *spread).  Every
// other hanx measurement says
// coll_hanx_default_algorithm itself, whatever the job started with: 1
// for the hierarchical configurations (hanx's levels, never the
// communicator's flat tree, nor the previous module its built-in choice
// gives large allgathers), 3 for split rails, 0 for a flat tree (on its
// own communicator, whose flat tree it is); and so coll_hanx_low/up_algorithm: the
// configuration's trees, "module" elsewhere (split rails' rail runs the
// leaders' one).  Tuning and validation measure through this alone.
// (configure: the variables set, the communicator to call)
MPI_Comm configure(Job &J, Coll coll, const Config &c) {
    if (c.builtin) {
        if (pipelined(coll)) J.builtin_segments(coll);
        J.set_default_algorithm(0);
        J.builtin_level_trees();
        return J.hanx;
    }
    const bool hier = c.hierarchical();
    if (hier && pipelined(coll)) J.set_segment(coll, c.segment);
    if (c.split && pipelined(coll)) J.builtin_segments(coll);
    if (!c.previous) {
        J.set_default_algorithm(c.split ? 3 : hier ? 1 : 0);
        J.set_level_trees(c.levels);
    }
    return c.previous ? J.prev : c.flat >= 0 ? J.flat.at(c.flat) : J.hanx_with(c.levels);
}

double measure(Job &J, const Options &o, Coll coll, const Config &c, Buffers &B,
               double *spread = nullptr) {
    const MPI_Comm comm = configure(J, coll, c);
    return J.latency(whole(coll, comm, B), o.windows, o.point_time, spread);
}

double median(std::vector<double> v);

// Configurations timed back to back (Job::loop), interleaved: a warm-up
// call of each, then --windows rounds, each configuration once per round
// (in window_order: none the first of every round, which alone pays for
// the round's first call), every time enough calls to fill --loop-time
// (contrib/bench.sh's repetition at the default: consecutive calls
// overlap, more so the more of them, so a shorter loop ranks
// configurations otherwise than bench.sh does) (as many for all: the
// slowest one's call sets the count).  A rooted collective's root goes on
// rotating from one time to the next, the same sequence for every
// configuration: with few calls per time (a large message) each would
// otherwise start again at root 0 and never reach the last ranks.  Their
// medians, seconds per call, in the order of cs; *iters (if asked): the
// calls per time.
std::vector<double> loop_medians(Job &J, const Options &o, Coll coll, const std::vector<Config> &cs,
                                 Buffers &B, int *iters = nullptr) {
    std::vector<int> root(cs.size(), 0);  // each configuration's next root
    const auto run = [&](std::size_t i, int n) {
        const double t = J.loop(rooted(coll, configure(J, coll, cs[i]), B), n, root[i]);
        root[i] = (root[i] + n) % J.size;
        return t;
    };
    double one = 0;  // the slowest one's call, after a warm-up call of each
    for (std::size_t i = 0; i < cs.size(); ++i) one = std::max(one, (run(i, 1), run(i, 1)));
    const int n = int(std::clamp(o.loop_time / std::max(one, 1e-7), 1.0, 1000.0));
    std::vector<std::vector<double>> t(cs.size());
    for (int r = 0; r < o.windows; ++r)
        for (std::size_t i : window_order(r, cs.size())) t[i].push_back(run(i, n));
    std::vector<double> med;
    for (const auto &v : t) med.push_back(median(v));
    if (iters) *iters = n;
    return med;
}

// The second test of the rules (--back-to-back): at every size where the
// best configuration is predicted no slower than hanx's built-in one, the
// best --loop-configs of those (Model::loop_candidates) and the built-in
// timed back to back (loop_medians); their medians go into the model,
// whose choice() then takes the fastest of them in the loop where it
// beats the built-in by the margin there, else keeps the built-in -- a
// rule predicted faster from synchronised starts must win the loop too, a
// near tie becomes a rule where it wins the loop, and a configuration
// predicted second best but faster in the loop gets the rule.  Returns
// false when stopped (budget, signal).
bool check_back_to_back(Job &J, const Options &o, Model &m) {
    for (Coll coll : o.colls) {
        CollModel &cm = m.colls[coll];
        for (std::uint64_t x : m.sizes_of(coll)) {
            std::vector<Config> cs = m.loop_candidates(coll, x, std::size_t(o.loop_configs));
            if (cs.empty()) continue;
            if (J.stop()) return false;
            Buffers B(x, J.size);
            int iters = 0;
            cs.push_back(Config::one_flag());
            const auto t = loop_medians(J, o, coll, cs, B, &iters);
            BackToBack &l = cm.back_to_back[x];
            l = {{}, t.back()};
            std::string times;
            for (std::size_t i = 0; i + 1 < cs.size(); ++i) {
                l.configs[cs[i].label()] = t[i];
                times += cs[i].label() + " " + fmt_us(t[i]) + " us, ";
            }
            const auto c = m.choice(coll, x);
            J.progress(std::string("back to back: ") + name(coll) + " " + bytes_label(x) + ": " + times +
                       "builtin " + fmt_us(l.builtin_s) + " us (" + std::to_string(iters) + " calls x " +
                       std::to_string(o.windows) + "): " +
                       (c->first.builtin ? std::string("no rule") : "a rule (" + c->first.label() + ")"));
        }
    }
    return true;
}

// ------------------------------------------------------------------- tune

int tune(Job &J, const Options &o) {
    Model m;
    m.nodes = J.nodes;
    m.ranks_per_node = J.rpn;
    m.ranks = J.size;
    m.sizes = pow2_grid(o.min, o.max);
    m.segments = o.segments;
    m.generated_by = "collx-tune 2 (" + std::to_string(J.nodes) + " nodes x " + std::to_string(J.rpn) +
                     " ranks, " + std::to_string(o.windows) + "+ windows)";
    // whole-size measurements: 4, 64, 256 (latency is flat below 1K on
    // every machine seen), then powers of 2 from 1K up to measure_max
    std::vector<std::uint64_t> wsizes;
    for (std::uint64_t x = 4; x <= std::min(o.max, o.measure_max); x *= x < 64 ? 16 : x < 1024 ? 4 : 2)
        if (x >= o.min / 16) wsizes.push_back(x);
    m.levels = level_choices(o);
    m.flats = o.flat;
    m.margin = o.margin;
    // split rails where hanx runs them: on nodes of different sizes (or of
    // one rank) it hands a "split" call to the levels
    m.split = o.split && std::any_of(o.colls.begin(), o.colls.end(), has_split);
    if (m.split && !J.balanced()) {
        m.split = false;
        J.progress("split rails not measured: the nodes are not all of one size >= 2");
    }
    J.make_submodule_comms(m.levels);
    J.make_flat_comms(m.flats);
    const double t0 = MPI_Wtime();
    J.warm_up();
    bool stopped = false;
    // the choices of the levels that apply to `coll` (the trees: to the
    // pipelined collectives alone)
    const auto levels_of = [&](Coll coll) {
        std::vector<Levels> v;
        for (const Levels &l : m.levels)
            if (applies(coll, l)) v.push_back(l);
        return v;
    };
    std::size_t total = 0, done = 0;
    for (Coll coll : o.colls)
        total += sizes_of(coll, wsizes).size() + (pipelined(coll) ? levels_of(coll).size() * o.segments.size() : 0);
    const auto step = [&] { return "[" + std::to_string(++done) + "/" + std::to_string(total) + "] "; };
    // collective by collective (as the validation measures): its whole
    // curves, then its pipelines in place -- hanx itself with segments of
    // s, on 2, 4, 8, 32 and 128 segments and on the longest power of 2 as
    // far as --pipeline-max -- for every choice of the levels
    for (Coll coll : o.colls) {
        CollModel &cm = m.colls[coll];
        const bool pipe = pipelined(coll);
        const std::vector<Levels> levels = levels_of(coll);
        for (std::uint64_t x : sizes_of(coll, wsizes)) {
            if ((stopped = stopped || J.stop())) break;
            Buffers B(x, J.size);
            std::string line = step() + name(coll) + " " + bytes_label(x) + ":";
            const char *sep = " ";
            // hanx's built-in choice, the baseline of every rule, among
            // the others (not before them all: the machine drifts)
            if (m.margin >= 0) {
                double spread = 0;
                cm.builtin.set(x, measure(J, o, coll, Config::one_flag(), B, &spread));
                cm.builtin_spread.set(x, spread);
                line += " builtin " + fmt_us(cm.builtin.at(x)) + " us (spread " +
                        std::to_string(int(100 * spread + 0.5)) + "%),";
            }
            // the configurations measured whole -- previous, the flat
            // trees, split rails -- as configs_for offers them (no levels)
            for (const Config &c : configs_for(coll, x, {}, {}, m.flats, m.split)) {
                Curve &w = cm.whole(c);
                w.set(x, measure(J, o, coll, c, B));
                line += sep + c.label() + " " + fmt_us(w.at(x)) + " us";
                sep = ", ";
            }
            for (const Levels &l : levels) {
                cm.hier[l].whole.set(x, measure(J, o, coll, Config{false, 0, l}, B));
                line += ", hier" + l.label() + " " + fmt_us(cm.hier[l].whole.at(x)) + " us";
            }
            J.progress(line);
        }
        for (const Levels &l : levels)
            for (std::uint64_t s : o.segments) {
                if (!pipe || s >= o.max || (stopped = stopped || J.stop())) continue;
                Pipeline p;
                std::vector<std::uint64_t> nus{2, 4};
                for (std::uint64_t nu : {8, 32, 128})
                    if (nu * s <= o.pipeline_max) nus.push_back(nu);
                std::uint64_t longest = 4;  // and the longest that fits
                while (2 * longest * s <= o.pipeline_max) longest *= 2;
                if (longest > nus.back()) nus.push_back(longest);
                for (std::uint64_t nu : nus) {
                    Buffers B(nu * s, J.size);
                    p.points[double(nu)] = measure(J, o, coll, Config{false, s, l}, B);
                }
                cm.hier[l].pipeline[s] = p;
                J.progress(step() + name(coll) + " segments of " + bytes_label(s) + l.label() +
                           ": full step " + fmt_us(p.full_step()) + " us, fill+drain " +
                           fmt_us(p.fill_drain(int(stages(coll).size()))) + " us");
            }
    }
    // the rules' second test: in a loop, against the built-in
    if (o.back_to_back && m.margin >= 0 && !stopped) stopped = !check_back_to_back(J, o, m);
    m.tuning_seconds = MPI_Wtime() - t0;
    m.complete = !stopped;
    if (J.rank != 0) return 0;
    if (stopped)
        std::fprintf(stderr, "collx-tune: stopped early (budget or signal) after %.1f s: writing what "
                             "was measured\n", m.tuning_seconds);
    Rules r = m.rules();
    r.save(o.out);
    m.save(model_path(o.out));
    std::printf("collx-tune: measured tasks in %.1f s on %d nodes x %d ranks; wrote %s (%zu rules) "
                "and %s\n\n", m.tuning_seconds, m.nodes, m.ranks_per_node, o.out.c_str(), r.size(),
                model_path(o.out).c_str());
    // the summary: the file's choice per size (builtin: no rule), the
    // previous module and hanx's built-in choice
    std::printf("%-10s %10s  %-20s %12s %12s %8s %12s\n", "collective", "bytes", "choice", "predicted_us",
                "previous_us", "gain", "builtin_us");
    for (Coll coll : o.colls)
        for (std::uint64_t x : m.sizes_of(coll)) {
            auto b = m.choice(coll, x);
            auto p = m.colls[coll].predict(coll, Config{true, 0, {}}, x);
            auto h = m.colls[coll].predict(coll, Config::one_flag(), x);
            if (!b) continue;
            std::printf("%-10s %10s  %-20s %12s %12s %7.2fx %12s\n", name(coll), bytes_label(x).c_str(),
                        b->first.label().c_str(), fmt_us(b->second).c_str(), p ? fmt_us(*p).c_str() : "n/a",
                        p ? *p / b->second : 0.0, h && !std::isnan(*h) ? fmt_us(*h).c_str() : "n/a");
        }
    return 0;
}

// --------------------------------------------------------------- validate

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void write_plot(const std::string &prefix, Coll coll, const std::vector<std::uint64_t> &sizes,
                const std::vector<Config> &all,
                const std::map<std::uint64_t, std::map<std::string, std::pair<double, double>>> &pm,
                const std::map<std::uint64_t, std::pair<std::string, std::string>> &winners) {
    const std::string dat = prefix + "-" + name(coll) + ".dat", svg = prefix + "-" + name(coll) + ".svg";
    std::ofstream d(dat);
    // one block per configuration: bytes predicted_us measured_us
    for (const Config &c : all) {
        d << "# " << c.label() << "\n";
        for (std::uint64_t x : sizes) {
            auto f = pm.find(x);
            if (f == pm.end() || !f->second.count(c.label())) continue;
            auto [p, me] = f->second.at(c.label());
            d << x << " " << p * 1e6 << " " << me * 1e6 << "\n";
        }
        d << "\n\n";
    }
    d << "# winners: bytes index_of_measured_best index_of_predicted_best\n";
    for (auto &[x, w] : winners) {
        int im = 0, ip = 0;
        for (std::size_t i = 0; i < all.size(); ++i) {
            if (all[i].label() == w.first) im = int(i);
            if (all[i].label() == w.second) ip = int(i);
        }
        d << x << " " << im << " " << ip << "\n";
    }
    d.close();
    if (coll == Coll::Barrier) {  // one size (0): the measurements, for --score; nothing to draw
        std::printf("wrote %s\n", dat.c_str());
        return;
    }
    std::ofstream g(prefix + "-" + name(coll) + ".gp");
    g << "set terminal svg size 1100,500 dynamic\nset output '" << svg << "'\n"
      << "set multiplot layout 1,2 title '" << name(coll) << ": predicted (lines) vs measured (points)'\n"
      << "set logscale xy\nset xlabel 'bytes'\nset ylabel 'us'\nset key left top font ',9'\n"
      << "plot ";
    for (std::size_t i = 0; i < all.size(); ++i)
        g << (i ? ", " : "") << "'" << dat << "' index " << i << " using 1:2 with lines lc " << i + 1
          << " title '" << all[i].label() << "', '' index " << i << " using 1:3 with points lc " << i + 1
          << " pt 7 ps 0.5 notitle";
    g << "\nunset logscale y\nset ylabel 'configuration'\nset ytics (";
    for (std::size_t i = 0; i < all.size(); ++i) g << (i ? ", " : "") << "'" << all[i].label() << "' " << i;
    g << ")\nset yrange [-0.5:" << all.size() - 0.5 << "]\nset title 'who wins where'\n"
      << "plot '" << dat << "' index " << all.size() << " using 1:2 with points pt 6 ps 1.5 title 'measured best', "
      << "'' index " << all.size() << " using 1:3 with points pt 2 ps 1 title 'predicted best'\n"
      << "unset multiplot\n";
    g.close();
    if (std::system(("command -v gnuplot >/dev/null 2>&1 && gnuplot '" + prefix + "-" + name(coll) + ".gp'").c_str()) == 0)
        std::printf("wrote %s\n", svg.c_str());
    else
        std::printf("wrote %s and %s-%s.gp (install gnuplot for the SVG)\n", dat.c_str(), prefix.c_str(), name(coll));
}

// The regret of the file's choice over a validation's points (its time
// over the best measured configuration's, minus 1), and where the largest
// one is.
struct Regrets {
    std::vector<double> v;
    double worst = -INFINITY;
    std::string worst_at;
    void add(double g, Coll coll, std::uint64_t x, const Config &chosen, const Config &best) {
        if (g > worst)
            worst = g, worst_at = std::string(name(coll)) + " " + bytes_label(x) + ", " + chosen.label() +
                                  " against " + best.label();
        v.push_back(g);
    }
    // "median M%, mean (geometric) G%, max X% (where)"
    std::string summary() const {
        double lg = 0;
        for (double g : v) lg += std::log1p(g);
        char b[64];
        std::snprintf(b, sizeof(b), "median %.1f%%, mean (geometric) %.1f%%, max %.1f%% (", 100 * median(v),
                      100 * std::expm1(lg / double(v.size())), 100 * worst);
        return b + worst_at + ")";
    }
};

int validate(Job &J, const Options &o) {
    Rules rules;
    std::optional<Model> model;
    std::string err;
    try {
        rules = Rules::load(o.validate);
        model = Model::load(model_path(o.validate));
    } catch (const std::exception &e) {
        err = e.what();
    }
    if (!err.empty() && !model) {
        if (J.rank == 0) std::fprintf(stderr, "collx-tune: %s\n", err.c_str());
        if (rules.empty()) return 2;
    }
    const auto grid = model ? model->sizes : pow2_grid(o.min, o.max);
    const auto segments = model ? model->segments : o.segments;
    // the model's choices of the levels (modules, trees), and any other a
    // rule of the file names
    auto levels = model ? model->levels : level_choices(o);
    auto flats = model ? model->flats : o.flat;
    // split rails as the tuning measures them: where the model has them
    // (or, without one, --split), on a job where hanx runs them; a rule
    // that names them is measured anyway -- elsewhere hanx runs such a
    // rule's allreduce on the levels, and that is what the file gets
    bool split = (model ? model->split : o.split) && J.balanced();
    for (std::size_t i = 0; i < rules.size(); ++i) {
        auto c = config_of(rules[i]);
        if (!c || c->previous) continue;
        if (c->split) {
            split = true;
        } else if (c->flat >= 0) {
            if (std::find(flats.begin(), flats.end(), c->flat) == flats.end()) flats.push_back(c->flat);
        } else if (std::find(levels.begin(), levels.end(), c->levels) == levels.end()) {
            levels.push_back(c->levels);
        }
    }
    J.make_submodule_comms(levels);
    J.make_flat_comms(flats);
    std::vector<std::uint64_t> sample = grid;
    if (o.sample != "all") {
        const std::size_t n = std::min<std::size_t>(std::stoul(o.sample), grid.size());
        std::mt19937 rng(o.seed);
        std::shuffle(sample.begin(), sample.end(), rng);
        sample.resize(n);
        std::sort(sample.begin(), sample.end());
    }
    std::vector<double> err_all, err_chosen;
    // regret of the file's choice against the configurations measured at
    // that point (the exhaustive search); and (--back-to-back) the same with
    // every configuration timed in a loop (loop_medians), as an
    // application's loop and contrib/bench.sh run calls, a rooted
    // collective's root rotating
    Regrets regret, loop_regret;
    int points = 0, within = 0, ruled = 0;
    double measuring = 0;
    const double t0 = MPI_Wtime();
    J.warm_up();  // like the tuning (not counted in `measuring`)
    if (J.rank == 0)
        std::printf("%-10s %10s  %-20s %12s  %-20s %12s %7s %7s\n", "collective", "bytes", "chosen",
                    "measured_us", "best", "best_us", "regret", "pred_err");
    for (Coll coll : o.colls) {
        std::map<std::uint64_t, std::map<std::string, std::pair<double, double>>> pm;
        std::map<std::uint64_t, std::pair<std::string, std::string>> winners;
        const std::vector<std::uint64_t> xs = sizes_of(coll, sample);
        // hanx's built-in choice -- what runs where no rule of the file
        // matches -- is a configuration like the others where the file was
        // tuned against it (its model has its curve) or leaves a size to it
        const bool baseline = o.margin >= 0 && model && model->colls.count(coll) &&
                              !model->colls.at(coll).builtin.empty();
        bool any_builtin = false;
        for (std::uint64_t x : xs) {
            if (J.stop()) break;
            Buffers B(x, J.size);
            std::map<std::string, double> t;
            Config best{};
            double best_t = INFINITY;
            const double m0 = MPI_Wtime();
            std::vector<Config> all = configs_for(coll, x, segments, levels, flats, split);
            const collx::Rule *r = rules.lookup(name(coll), J.nodes, J.rpn, x);
            const bool builtin = baseline || (o.margin >= 0 && !r);
            if (builtin) all.insert(all.begin(), Config::one_flag()), any_builtin = true;
            // every configuration, measured as the tuning measures
            for (const Config &c : all) {
                t[c.label()] = measure(J, o, coll, c, B);
                if (t[c.label()] < best_t) best_t = t[c.label()], best = c;
                if (model)
                    if (auto p = model->colls.count(coll) ? model->colls.at(coll).predict(coll, c, x) : std::nullopt) {
                        err_all.push_back(std::fabs(*p - t[c.label()]) / t[c.label()]);
                        pm[x][c.label()] = {*p, t[c.label()]};
                    }
            }
            measuring += MPI_Wtime() - m0;
            // (no rule: hanx's built-in choice, where measured)
            auto chosen = r         ? config_of(*r)
                          : builtin ? std::optional<Config>(Config::one_flag())
                                    : std::nullopt;
            ++points;
            if (chosen) chosen = chosen->at(x);
            if (chosen && !t.count(chosen->label()) && chosen->hierarchical())
                chosen = Config{false, 0, chosen->levels};  // a segment not measured
            std::string pred_err = "n/a";
            if (model && chosen) {
                auto p = model->colls.count(coll) ? model->colls.at(coll).predict(coll, *chosen, x) : std::nullopt;
                if (p) {
                    const double e = std::fabs(*p - t[chosen->label()]) / t[chosen->label()];
                    err_chosen.push_back(e);
                    char b[16];
                    std::snprintf(b, sizeof(b), "%.0f%%", e * 100);
                    pred_err = b;
                }
                if (auto pb = model->choice(coll, x)) winners[x] = {best.label(), pb->first.label()};
            }
            std::string reg = "-", loop_line;
            if (chosen && o.back_to_back && !J.stop()) {
                // (not in `measuring`: the tuning time is compared with the
                // synchronised measurement, which is what the tuning takes)
                const std::vector<double> lt = loop_medians(J, o, coll, all, B);
                std::size_t lb = 0, lc = all.size();
                for (std::size_t i = 0; i < all.size(); ++i) {
                    if (lt[i] < lt[lb]) lb = i;
                    if (all[i].label() == chosen->label()) lc = i;
                }
                if (lc < all.size()) {
                    const double g = lt[lc] / lt[lb] - 1;
                    loop_regret.add(g, coll, x, *chosen, all[lb]);
                    char b[200];
                    std::snprintf(b, sizeof(b), "  back to back: %s %s us, best %s %s us, regret %.0f%%",
                                  chosen->label().c_str(), fmt_us(lt[lc]).c_str(), all[lb].label().c_str(),
                                  fmt_us(lt[lb]).c_str(), g * 100);
                    loop_line = b;
                }
            }
            if (chosen) {
                ++ruled;
                if (t[chosen->label()] <= 1.05 * best_t) ++within;
                const double g = t[chosen->label()] / best_t - 1;
                regret.add(g, coll, x, *chosen, best);
                char b[16];
                std::snprintf(b, sizeof(b), "%.0f%%", g * 100);
                reg = b;
            }
            if (J.rank == 0)
                std::printf("%-10s %10s  %-20s %12s  %-20s %12s %7s %7s\n", name(coll), bytes_label(x).c_str(),
                            chosen ? chosen->label().c_str() : "(no rule)",
                            chosen ? fmt_us(t[chosen->label()]).c_str() : "-", best.label().c_str(),
                            fmt_us(best_t).c_str(), reg.c_str(), pred_err.c_str());
            if (J.rank == 0 && !loop_line.empty()) std::printf("%s\n", loop_line.c_str());
        }
        if (J.rank == 0 && !o.plot.empty() && model) {
            std::vector<Config> all = configs_for(coll, ~0ULL, segments, levels, flats, split);
            if (any_builtin) all.insert(all.begin(), Config::one_flag());
            write_plot(o.plot, coll, xs, all, pm, winners);
        }
    }
    if (J.rank == 0) {
        std::printf("\ncollx-tune: validated %s: %d points (%s sizes per collective), measured every "
                    "configuration in %.1f s (%.1f s in all)\n", o.validate.c_str(), points,
                    o.sample.c_str(), measuring, MPI_Wtime() - t0);
        std::printf("  the file's choice within 5%% of the best measured: %d of %d points (%.0f%%)%s\n",
                    within, points, points ? 100.0 * within / points : 0.0,
                    ruled < points ? " (points without a rule count as misses)" : "");
        if (!regret.v.empty())
            std::printf("  regret against the exhaustive search (the file's choice over the best measured, "
                        "minus 1): %s\n", regret.summary().c_str());
        if (!loop_regret.v.empty())
            std::printf("  regret back to back (the same, every configuration timed in a loop): %s\n",
                        loop_regret.summary().c_str());
        if (!err_all.empty()) {
            std::printf("  prediction error, all configurations: median %.1f%%, max %.1f%% (%zu)\n",
                        100 * median(err_all), 100 * *std::max_element(err_all.begin(), err_all.end()),
                        err_all.size());
            std::printf("  prediction error, chosen configuration: median %.1f%%, max %.1f%% (%zu)\n",
                        100 * median(err_chosen),
                        err_chosen.empty() ? 0.0 : 100 * *std::max_element(err_chosen.begin(), err_chosen.end()),
                        err_chosen.size());
        }
        if (model)
            std::printf("  tuning time (tasks) %.1f s = %.2f of this exhaustive measurement\n",
                        model->tuning_seconds, measuring > 0 ? model->tuning_seconds / measuring : 0.0);
    }
    int rc = 0;
    if (o.max_error >= 0 && (err_all.empty() || median(err_all) > o.max_error)) {
        if (J.rank == 0) std::printf("collx-tune: median prediction error above %.3g\n", o.max_error);
        rc = 3;
    }
    if (o.min_within >= 0 && (points == 0 || double(within) / points < o.min_within)) {
        if (J.rank == 0) std::printf("collx-tune: choice within 5%% of the best at fewer than %.3g of the points\n", o.min_within);
        rc = 3;
    }
    return rc;
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    try {
        o = parse(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "collx-tune: %s\n", e.what());
        return 2;
    }
    if (!o.explain.empty()) return explain(o);  // no MPI needed
    if (!o.score.empty()) return score(o);

    int provided;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    signal(SIGUSR1, on_signal);
    signal(SIGTERM, on_signal);
    int rc = 0;
    try {
        const std::string tf = cvar_string("coll_hanx_tuning_file");
        if (!tf.empty()) throw std::runtime_error("coll_hanx_tuning_file is set (" + tf + "): collx-tune "
                                                  "measures hanx's own configurations; run it without one");
        int idx;
        if (MPI_T_cvar_get_index("coll_hanx_priority", &idx) != MPI_SUCCESS)
            throw std::runtime_error("coll/hanx is not loaded (see docs/collx-tune.md for the command)");
        Job J(o);
        if (J.nodes < 2) throw std::runtime_error("the job spans one node: hanx has nothing to tune "
                                                  "(use several nodes, or --mca coll_hanx_ranks_per_node N)");
        rc = o.validate.empty() ? tune(J, o) : validate(J, o);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "collx-tune: %s\n", e.what());
        rc = 2;
        MPI_Abort(MPI_COMM_WORLD, rc);
    }
    MPI_T_finalize();
    MPI_Finalize();
    return rc;
}
