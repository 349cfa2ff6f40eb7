// Unit tests of collx-tune's cost model (ompi/tools/collx-tune/model.*):
// curve interpolation, the pipeline composition rule (fill + drain + full
// steps) checked against an explicit step-by-step enumeration, choices,
// the rules it writes (read back through the tuning-file reader hanx uses)
// and the model file.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "model.hpp"

// last: check.h defines a macro "fail" that breaks the standard headers
#include <check.h>

using namespace collx::tune;

namespace {

bool near(double a, double b, double rel = 1e-9) { return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b)); }

// whether f() throws (the readers' refusals)
template <class F>
bool throws(F &&f) {
    try {
        f();
    } catch (const std::exception &) {
        return true;
    }
    return false;
}

// A K-stage pipeline of n segments, summed the slow way: every step t of
// n + K - 1 costs `full` when all K stages have a segment in it, else
// `partial` per busy stage.
double enumerate(int K, std::uint64_t n, double full, double partial) {
    double t = 0;
    for (std::uint64_t s = 0; s < n + std::uint64_t(K) - 1; ++s) {
        int busy = 0;
        for (int j = 0; j < K; ++j) busy += s >= std::uint64_t(j) && s - std::uint64_t(j) < n;
        t += busy == K ? full : partial * busy;
    }
    return t;
}

// What collx-tune would measure on a machine whose steps cost exactly
// that: the pipeline at 2, 8 and 32 segments.
Pipeline measured(int K, double full, double partial) {
    Pipeline p;
    for (std::uint64_t n : {2u, 8u, 32u}) p.points[double(n)] = enumerate(K, n, full, partial);
    return p;
}

// The pipelined collectives (the tests of pipelines and flat trees).
const std::vector<Coll> &piped() {
    static const std::vector<Coll> v = [] {
        std::vector<Coll> p;
        for (Coll c : all_colls())
            if (pipelined(c)) p.push_back(c);
        return p;
    }();
    return v;
}

CollModel synthetic(Coll coll) {
    CollModel m;
    const int K = int(stages(coll).size());
    for (std::uint64_t x = 4; x <= (64u << 20); x <<= 2) {
        m.previous.set(x, 1e-5 + double(x) * 1e-9);
        m.hier[{}].whole.set(x, 2e-6 * K + double(x) * 4e-10 * K);
    }
    for (std::uint64_t s : {65536u, 262144u})
        m.hier[{}].pipeline[s] = measured(K, 1e-6 + double(s) * 3e-10 * K, 1e-6 + double(s) * 3e-10);
    return m;
}

}  // namespace

START_TEST(curve_interpolates_log_log) {
    Curve c;
    // y = 3 x^0.5: log-log linear, so exact between the points
    for (std::uint64_t x : {16u, 1024u, 65536u}) c.set(x, 3 * std::sqrt(double(x)));
    ck_assert(near(c.at(256), 3 * 16.0, 1e-12));
    ck_assert(near(c.at(4096), 3 * 64.0, 1e-12));
    ck_assert(near(c.at(1024), 3 * 32.0));        // a point itself
    ck_assert(near(c.at(4), c.at(16)));           // below the first: the first value
    // beyond the last: the straight line through the last two points
    const double slope = (3 * 256.0 - 3 * 32.0) / (65536.0 - 1024.0);
    ck_assert(near(c.at(131072), 3 * 256.0 + slope * 65536.0));
    Curve one;
    one.set(8, 2.0);
    ck_assert(near(one.at(1u << 20), 2.0));
    ck_assert(std::isnan(Curve().at(8)));
}
END_TEST

START_TEST(stages_of_each_collective) {
    ck_assert_uint_eq(stages(Coll::Bcast).size(), 2);
    ck_assert(stages(Coll::Bcast)[0] == Level::Leaders);
    ck_assert(stages(Coll::Reduce)[0] == Level::Node);
    ck_assert_uint_eq(stages(Coll::Allreduce).size(), 3);
    ck_assert(stages(Coll::Allreduce)[1] == Level::Leaders);
}
END_TEST

// On a machine whose steps cost what the model assumes, three measured
// pipelines give back every other: fill + drain + (n - K + 1) full steps
// equals the enumeration of the steps for every n (for n >= K - 1, where
// every pipeline has its fill and drain), and the parts are the ones put in.
START_TEST(composition_matches_step_enumeration) {
    for (Coll coll : piped()) {
        const int K = int(stages(coll).size());
        const double full = 7e-6, partial = 3e-6;
        Pipeline p = measured(K, full, partial);
        ck_assert(p.complete());
        ck_assert(near(p.full_step(), full));
        ck_assert(near(p.fill_drain(K), 2 * partial * (K * (K - 1) / 2.0)));
        for (std::uint64_t n = std::uint64_t(K) - 1; n <= 200; ++n)
            ck_assert_msg(near(p.at(double(n)), enumerate(K, n, full, partial)), "%s n=%llu: %g vs %g", name(coll),
                          (unsigned long long)n, p.at(double(n)), enumerate(K, n, full, partial));
        CollModel m = synthetic(coll);
        for (std::uint64_t n = 2; n <= 40; ++n)
            ck_assert(near(*m.predict(coll, Config{false, 65536, {}}, n * 65536), m.hier.at({}).pipeline.at(65536).at(double(n))));
    }
}
END_TEST

// Measured pipelines that do not lie on one line (memory-bound sizes cost
// more per segment): linear between the points, the first two's line
// below them, beyond them the steepest neighbouring pair's slope (here the
// last pair; a steeper early pair wins over a flat last one); never
// negative; one point is no pipeline.
START_TEST(pipeline_piecewise_linear) {
    Pipeline p;
    p.points = {{2, 10e-6}, {8, 40e-6}, {32, 200e-6}};
    ck_assert(near(p.at(5), 25e-6));
    ck_assert(near(p.at(20), 120e-6));
    ck_assert(near(p.at(64), 200e-6 + 32 * (160e-6 / 24)));
    ck_assert(near(p.full_step(), 160e-6 / 24));
    ck_assert(near(p.at(1.5), 7.5e-6));
    Pipeline odd;  // noise: a longer pipeline measured faster
    odd.points = {{2, 50e-6}, {8, 40e-6}};
    ck_assert(odd.at(100) >= 0 && near(odd.full_step(), 0));
    Pipeline spell;  // 4 segments in a slow spell, 8 in a fast one
    spell.points = {{2, 10e-6}, {4, 50e-6}, {8, 60e-6}};
    ck_assert(near(spell.full_step(), 20e-6));
    ck_assert(near(spell.at(6), 55e-6));               // between points: the points
    ck_assert(near(spell.at(16), 60e-6 + 8 * 20e-6));  // beyond: the steep pair
    Pipeline one;
    one.points = {{2, 1e-5}};
    ck_assert(!one.complete() && std::isnan(one.at(4)));
    CollModel m;
    m.hier[{}].whole.set(4, 1e-6);
    m.hier[{}].pipeline[65536] = one;
    ck_assert(!m.predict(Coll::Bcast, Config{false, 65536, {}}, 1u << 20).has_value());
}
END_TEST

// A short last segment costs a share of a full step: monotone in bytes,
// between the neighbouring whole numbers of segments.
START_TEST(partial_segments_interpolate) {
    CollModel m = synthetic(Coll::Bcast);
    const std::uint64_t s = 65536;
    double last = 0;
    for (std::uint64_t x = s + 1; x <= 40 * s; x += s / 8) {
        double p = *m.predict(Coll::Bcast, Config{false, s, {}}, x);
        ck_assert(p >= last);
        last = p;
    }
    const double lo = *m.predict(Coll::Bcast, Config{false, s, {}}, 4 * s);
    const double hi = *m.predict(Coll::Bcast, Config{false, s, {}}, 5 * s);
    const double mid = *m.predict(Coll::Bcast, Config{false, s, {}}, 4 * s + s / 2);
    ck_assert(near(mid, 0.5 * (lo + hi)));
}
END_TEST

START_TEST(unsegmented_and_previous) {
    CollModel m = synthetic(Coll::Allreduce);
    const std::uint64_t x = 1u << 20;
    ck_assert(near(*m.predict(Coll::Allreduce, Config{false, 0, {}}, x), m.hier.at({}).whole.at(x)));
    // a segment at least as big as the message is one segment
    ck_assert(near(*m.predict(Coll::Allreduce, Config{false, 262144, {}}, 262144), m.hier.at({}).whole.at(262144)));
    ck_assert(near(*m.predict(Coll::Allreduce, Config{true, 0, {}}, x), m.previous.at(x)));
    // what was not measured is not predicted
    ck_assert(!m.predict(Coll::Allreduce, Config{false, 4096, {}}, x).has_value());
    CollModel empty;
    ck_assert(!empty.predict(Coll::Bcast, Config{true, 0, {}}, x).has_value());
    ck_assert(!empty.predict(Coll::Bcast, Config{false, 0, {}}, x).has_value());
}
END_TEST

START_TEST(configs_and_sizes) {
    auto v = configs_for(Coll::Bcast, 100000, {16384, 65536, 262144});
    ck_assert_uint_eq(v.size(), 4);  // previous, hier, hier/16K, hier/64K
    ck_assert(v[0].previous && !v[1].previous && v[1].segment == 0 && v[3].segment == 65536);
    ck_assert_str_eq(v[3].label().c_str(), "hier/64K");
    ck_assert_str_eq(v[0].label().c_str(), "previous");
    ck_assert_uint_eq(parse_bytes("64K"), 65536);
    ck_assert_uint_eq(parse_bytes("3M"), 3u << 20);
    ck_assert_uint_eq(parse_bytes("4096"), 4096);
    ck_assert_str_eq(bytes_label(1u << 20).c_str(), "1M");
    ck_assert_str_eq(bytes_label(1000).c_str(), "1000");
    for (const char *bad : {"", "K", "12X", "-1", "99999999999G"}) {
        ck_assert_msg(throws([&] { parse_bytes(bad); }), "%s accepted", bad);
    }
}
END_TEST

Model sample_model() {
    Model m;
    m.nodes = 4;
    m.ranks_per_node = 2;
    m.ranks = 8;
    for (std::uint64_t x = 4; x <= (16u << 20); x <<= 1) m.sizes.push_back(x);
    m.segments = {65536, 262144};
    for (Coll c : piped()) m.colls[c] = synthetic(c);
    m.generated_by = "unit test";
    return m;
}

// The rules give back, for every size of the grid and any size between,
// the best predicted configuration; ranges cover all sizes without gaps.
START_TEST(rules_encode_the_best_choices) {
    Model m = sample_model();
    collx::Rules r = m.rules();
    ck_assert(!r.empty());
    // through the text hanx reads
    collx::Rules back = collx::Rules::parse(r.to_string(), "generated");
    ck_assert_uint_eq(back.size(), r.size());
    for (Coll coll : piped()) {
        std::uint64_t prev = 0;
        for (std::uint64_t x : m.sizes) {
            for (std::uint64_t q : {prev + 1, x}) {
                const collx::Rule *rule = back.lookup(name(coll), 4, 2, q);
                ck_assert_msg(rule != nullptr, "%s %llu: no rule", name(coll), (unsigned long long)q);
                auto c = config_of(*rule);
                ck_assert(c.has_value());
                ck_assert_msg(*c == m.best(coll, x)->first, "%s %llu", name(coll), (unsigned long long)q);
            }
            prev = x;
        }
        ck_assert(back.lookup(name(coll), 4, 2, ~0ULL) != nullptr);  // unbounded above
        ck_assert(back.lookup(name(coll), 2, 2, 1024) == nullptr);   // other shapes: defaults
    }
    // the synthetic model makes different choices at different sizes
    std::set<std::string> seen;
    for (auto &rule : r.rules()) seen.insert(config_of(rule)->label());
    ck_assert_uint_ge(seen.size(), 2);
    ck_assert_str_eq(back.generated_by->c_str(), "unit test");
    // a hierarchical reduce measured with the leaders' module says so where
    // hanx's built-in would run its tree (collx_hier_level_tree), and only there
    bool named = false;
    for (auto &rule : r.rules()) {
        const auto c = config_of(rule);
        if (!c->hierarchical() || c->levels.up_tree >= 0) continue;
        const std::size_t top =
            rule.bytes && rule.bytes->max ? std::size_t(*rule.bytes->max) : ~std::size_t{0};
        const bool want = collx_hier_level_tree(collx_coll_from_name(rule.collective.c_str()), top,
                                                1, m.nodes, 0) >= 0;
        ck_assert_msg(rule.up_algorithm.has_value() == want, "%s rule %s", rule.collective.c_str(),
                      r.to_string().c_str());
        if (want) ck_assert_str_eq(rule.up_algorithm->c_str(), "module");
        named = named || want;
    }
    ck_assert(named);
}
END_TEST

// hanx's built-in choice (measured beside the others, Config::one_flag) keeps a size
// -- no rule: hanx runs it -- unless the best configuration is predicted
// faster by more than the margin, or than the built-in's measured spread
// there where that is larger (at most a half); --margin off (< 0): a rule
// at every size.  The file keeps the curves and the margin.
START_TEST(builtin_choice_keeps_sizes_without_rules) {
    Model m = sample_model();
    CollModel &b = m.colls[Coll::Bcast];
    for (std::uint64_t x : m.sizes) {
        const double best = m.best(Coll::Bcast, x)->second;
        // below 4K: within 5%; from 4K: 1.5x the best; at 64K: 1.3x, but
        // with a spread of 60% there (the margin: 50%)
        const double f = x < 4096 ? 1.05 : x == 65536 ? 1.3 : 1.5;
        b.builtin.set(x, f * best);
        b.builtin_spread.set(x, x == 65536 ? 0.6 : 0.02);
    }
    ck_assert(near(m.margin_at(Coll::Bcast, 1024), 0.1));
    ck_assert(near(m.margin_at(Coll::Bcast, 65536), 0.5));
    ck_assert(near(m.margin_at(Coll::Reduce, 65536), 0.1));  // (no spread measured)
    const auto check = [](const Model &model, const collx::Rules &r) {
        for (std::uint64_t x : model.sizes) {
            const collx::Rule *rule = r.lookup("bcast", 4, 2, x);
            const bool kept = x < 4096 || x == 65536;
            ck_assert_msg((rule == nullptr) == kept, "bcast %llu: %s", (unsigned long long)x,
                          rule ? "a rule" : "no rule");
            ck_assert(model.choice(Coll::Bcast, x)->first.builtin == kept);
            if (rule) ck_assert(*config_of(*rule) == model.best(Coll::Bcast, x)->first);
            // the collectives without a built-in curve: a rule everywhere
            ck_assert(r.lookup("reduce", 4, 2, x) != nullptr);
        }
        ck_assert(r.lookup("bcast", 4, 2, ~0ULL) != nullptr);  // 16M: 1.5x, a rule, unbounded
    };
    const collx::Rules r = m.rules();
    check(m, collx::Rules::parse(r.to_string(), "generated"));
    // the rule says what it beat
    const collx::Rule *big = r.lookup("bcast", 4, 2, 1u << 20);
    ck_assert(big && big->comment && big->comment->find("(built-in ") != std::string::npos);
    // the model file: the built-in's curves and the margin
    const Model back = Model::from_json(nlohmann::json::parse(m.to_json().dump()));
    ck_assert(near(back.margin, 0.1));
    ck_assert(near(*back.colls.at(Coll::Bcast).predict(Coll::Bcast, Config::one_flag(), 1024),
                   1.05 * m.best(Coll::Bcast, 1024)->second));
    check(back, back.rules());
    // a model from before (version 7): no margin, no built-in, a rule everywhere
    auto j = nlohmann::json::parse(m.to_json().dump());
    j["version"] = 7;
    j.erase("margin");
    ck_assert(Model::from_json(j).margin < 0);
    // --margin off: a rule at every size
    m.margin = -1;
    for (std::uint64_t x : m.sizes) ck_assert(m.rules().lookup("bcast", 4, 2, x) != nullptr);
}
END_TEST

// One configuration timed back to back against the built-in.
static BackToBack loop_of(const std::string &label, double seconds, double builtin_s) {
    return {{{label, seconds}}, builtin_s};
}

// The rules' second test (collx-tune --back-to-back): where the chosen
// configuration, timed in a loop against the built-in, does not beat it by
// the margin there as well, the size keeps the built-in (no rule); a loop
// time of another configuration says nothing; the times travel in the
// model file (version 10) and the rule's comment.
START_TEST(back_to_back_times_veto_rules) {
    Model m = sample_model();
    CollModel &b = m.colls[Coll::Bcast];
    for (std::uint64_t x : m.sizes) {
        b.builtin.set(x, 1.5 * m.best(Coll::Bcast, x)->second);  // a rule everywhere, from a synchronised start
        b.builtin_spread.set(x, 0.02);
    }
    const std::string best4k = m.best(Coll::Bcast, 4096)->first.label();
    b.back_to_back[4096] = loop_of(best4k, 2e-3, 1e-3);                                   // loses in the loop
    b.back_to_back[8192] = loop_of(m.best(Coll::Bcast, 8192)->first.label(), 0.95e-3, 1e-3);  // within the margin
    b.back_to_back[16384] = loop_of(m.best(Coll::Bcast, 16384)->first.label(), 0.5e-3, 1e-3);  // beats it there too
    b.back_to_back[32768] = loop_of("flat:no-such-tree", 9e-3, 1e-3);                      // another configuration's
    const auto check = [](const Model &model) {
        const collx::Rules r = model.rules();
        for (std::uint64_t x : model.sizes) {
            const bool kept = x == 4096 || x == 8192;
            ck_assert_msg(model.choice(Coll::Bcast, x)->first.builtin == kept, "bcast %llu", (unsigned long long)x);
            ck_assert_msg((r.lookup("bcast", 4, 2, x) == nullptr) == kept, "bcast %llu", (unsigned long long)x);
        }
        const collx::Rule *r16 = r.lookup("bcast", 4, 2, 16384);
        ck_assert(r16 && r16->comment);
        // (16K is a rule's last size where the next one differs in choice)
        if (model.choice(Coll::Bcast, 32768)->first == model.choice(Coll::Bcast, 16384)->first) return;
        ck_assert_msg(r16->comment->find("; back to back 500.0 us (built-in 1000.0 us)") != std::string::npos, "%s",
                      r16->comment->c_str());
    };
    check(m);
    const auto j = nlohmann::json::parse(m.to_json().dump());
    ck_assert_int_eq(j.at("version").get<int>(), 10);
    ck_assert_uint_eq(j.at("collectives").at("bcast").at("back_to_back").size(), 4);
    const Model back = Model::from_json(j);
    ck_assert_uint_eq(back.colls.at(Coll::Bcast).back_to_back.size(), 4);
    ck_assert(near(back.colls.at(Coll::Bcast).back_to_back.at(4096).configs.at(best4k), 2e-3));
    check(back);
    // a version 9 model (one configuration per size: [bytes, label, its seconds, the built-in's]) reads the same
    auto j9 = j;
    j9["version"] = 9;
    for (auto &x : j9["collectives"]["bcast"]["back_to_back"]) {
        const auto one = x.at(2).items().begin();
        x = nlohmann::json::array({x.at(0), one.key(), one.value(), x.at(1)});
    }
    check(Model::from_json(j9));
    // without the loop's times: a rule at every size again
    b.back_to_back.clear();
    for (std::uint64_t x : m.sizes) ck_assert(m.rules().lookup("bcast", 4, 2, x) != nullptr);
}
END_TEST

// A near tie (the best configuration predicted no slower than the
// built-in, but not faster by the margin): timed back to back
// (loop_candidates), it becomes a rule only where it wins the loop by the
// margin; a configuration predicted slower than the built-in is not timed
// and never a rule, whatever a loop entry says.
START_TEST(back_to_back_times_promote_near_ties) {
    Model m = sample_model();
    CollModel &b = m.colls[Coll::Bcast];
    for (std::uint64_t x : m.sizes) {
        // 5 % slower than the best (within the 10 % margin) up to 64K, 10 % faster above
        b.builtin.set(x, (x <= 65536 ? 1.05 : 0.9) * m.best(Coll::Bcast, x)->second);
        b.builtin_spread.set(x, 0.02);
    }
    const auto label = [&](std::uint64_t x) { return m.best(Coll::Bcast, x)->first.label(); };
    for (std::uint64_t x : m.sizes) {
        const auto c = m.loop_candidates(Coll::Bcast, x, 1);
        ck_assert_msg(c.size() == (x <= 65536), "bcast %llu", (unsigned long long)x);
        if (!c.empty()) ck_assert(c[0].label() == label(x));
    }
    b.back_to_back[4096] = loop_of(label(4096), 0.5e-3, 1e-3);        // wins the loop: a rule
    b.back_to_back[8192] = loop_of(label(8192), 0.95e-3, 1e-3);       // within the margin there: none
    b.back_to_back[16384] = loop_of("flat:no-such-tree", 0.1e-3, 1e-3);  // another configuration's: none
    b.back_to_back[262144] = loop_of(label(262144), 0.1e-3, 1e-3);    // predicted slower: none
    const auto check = [](const Model &model) {
        const collx::Rules r = model.rules();
        for (std::uint64_t x : model.sizes) {
            const bool rule = x == 4096;
            ck_assert_msg(model.choice(Coll::Bcast, x)->first.builtin == !rule, "bcast %llu", (unsigned long long)x);
            ck_assert_msg((r.lookup("bcast", 4, 2, x) != nullptr) == rule, "bcast %llu", (unsigned long long)x);
        }
        const collx::Rule *r4 = r.lookup("bcast", 4, 2, 4096);
        ck_assert(r4 && r4->comment);
        ck_assert_msg(r4->comment->find("; back to back 500.0 us (built-in 1000.0 us)") != std::string::npos, "%s",
                      r4->comment->c_str());
    };
    check(m);
    check(Model::from_json(nlohmann::json::parse(m.to_json().dump())));
    // without the loop's times: no rule at all (no size beats the built-in by the margin)
    b.back_to_back.clear();
    for (std::uint64_t x : m.sizes) ck_assert(m.rules().lookup("bcast", 4, 2, x) == nullptr);
}
END_TEST

// Several configurations timed back to back (--loop-configs): the n
// predicted best of those predicted no slower than the built-in, best
// first; the loop picks the fastest of them there (predicted second best,
// say) where it beats the built-in by the margin; one predicted slower
// than the built-in never gets the rule, however fast its loop time.
START_TEST(back_to_back_picks_the_fastest_in_the_loop) {
    Model m = sample_model();
    CollModel &b = m.colls[Coll::Bcast];
    const std::uint64_t x = 1u << 20;
    // the configurations at x by prediction, fastest first
    std::vector<std::pair<double, Config>> by;
    for (const Config &c : configs_for(Coll::Bcast, x, m.segments, m.levels, m.flats, m.split))
        by.emplace_back(*b.predict(Coll::Bcast, c, x), c);
    std::stable_sort(by.begin(), by.end(), [](const auto &p, const auto &q) { return p.first < q.first; });
    ck_assert_uint_ge(by.size(), 4);
    ck_assert(by[1].first < by[2].first && by[2].first < by[3].first);  // (distinct times: a strict order)
    for (std::uint64_t y : m.sizes) {
        // the built-in between the third and the fourth best at x
        b.builtin.set(y, y == x ? (by[2].first + by[3].first) / 2 : 1.05 * m.best(Coll::Bcast, y)->second);
        b.builtin_spread.set(y, 0.02);
    }
    const auto cand = m.loop_candidates(Coll::Bcast, x, 5);
    ck_assert_uint_eq(cand.size(), 3);  // no more than those predicted no slower
    for (std::size_t i = 0; i < 3; ++i) ck_assert(cand[i] == by[i].second);
    ck_assert_uint_eq(m.loop_candidates(Coll::Bcast, x, 2).size(), 2);
    const std::string first = by[0].second.label(), second = by[1].second.label(), slower = by[3].second.label();
    const auto chosen = [&](const Model &model) { return model.choice(Coll::Bcast, x)->first.label(); };
    // the second best wins the loop by the margin: its rule
    b.back_to_back[x] = {{{first, 0.95e-3}, {second, 0.6e-3}}, 1e-3};
    ck_assert_str_eq(chosen(m).c_str(), second.c_str());
    ck_assert(*config_of(*m.rules().lookup("bcast", 4, 2, x)) == by[1].second);
    ck_assert_str_eq(chosen(Model::from_json(nlohmann::json::parse(m.to_json().dump()))).c_str(), second.c_str());
    // fastest in the loop, but within the margin of the built-in: no rule (not the best predicted either)
    b.back_to_back[x] = {{{first, 1.2e-3}, {second, 0.95e-3}}, 1e-3};
    ck_assert(m.choice(Coll::Bcast, x)->first.builtin);
    // one predicted slower than the built-in: never the rule
    b.back_to_back[x] = {{{first, 0.8e-3}, {slower, 0.1e-3}}, 1e-3};
    ck_assert_str_eq(chosen(m).c_str(), first.c_str());
}
END_TEST

// The loops' windows (loop_medians): every configuration once per window,
// and the first place -- the first call after the window's barrier, and
// with its root -- taken in turn, not always by the same one.
START_TEST(loop_windows_take_turns_first) {
    for (std::size_t n : {1u, 2u, 4u, 21u})
        for (int windows : {1, 3, 9, 40}) {
            std::vector<int> first(n, 0);
            for (int w = 0; w < windows; ++w) {
                std::vector<std::size_t> o = window_order(w, n);
                ck_assert_uint_eq(o.size(), n);
                ++first[o[0]];
                std::sort(o.begin(), o.end());
                for (std::size_t i = 0; i < n; ++i) ck_assert_uint_eq(o[i], i);  // a permutation
            }
            const int most = (windows + int(n) - 1) / int(n);
            for (std::size_t i = 0; i < n; ++i)
                ck_assert_msg(first[i] <= most && (windows < int(n) || first[i] >= 1),
                              "%zu configurations, %d windows: configuration %zu first in %d", n, windows, i, first[i]);
        }
}
END_TEST

// Stopped early: rules only up to the largest size measured whole, the
// last one bounded; a collective not measured at all gets none.
START_TEST(incomplete_model_rules_stop_at_measured_sizes) {
    Model m = sample_model();
    m.complete = false;
    CollModel &b = m.colls[Coll::Bcast];
    b.previous = Curve();
    for (std::uint64_t x = 4; x <= 4096; x <<= 2) b.previous.set(x, 1e-5);
    m.colls[Coll::Reduce] = CollModel();
    collx::Rules r = m.rules();
    ck_assert(r.lookup("bcast", 4, 2, 4096) != nullptr);
    ck_assert(r.lookup("bcast", 4, 2, 4097) == nullptr);
    ck_assert(r.lookup("reduce", 4, 2, 64) == nullptr);
    ck_assert(r.lookup("allreduce", 4, 2, 16u << 20) != nullptr);  // measured to 64M
    Model back = Model::from_json(nlohmann::json::parse(m.to_json().dump()));
    ck_assert(!back.complete);
}
END_TEST

START_TEST(model_file_round_trip) {
    Model m = sample_model();
    m.tuning_seconds = 12.5;
    Model b = Model::from_json(nlohmann::json::parse(m.to_json().dump()));
    ck_assert_int_eq(b.nodes, 4);
    ck_assert(near(b.tuning_seconds, 12.5));
    ck_assert(b.sizes == m.sizes && b.segments == m.segments);
    for (Coll coll : piped())
        for (std::uint64_t x : {4ull, 5000ull, 1ull << 20, 10ull << 20, 64ull << 20})
            for (const Config &c : configs_for(coll, x, m.segments)) {
                auto p = m.colls[coll].predict(coll, c, x), q = b.colls[coll].predict(coll, c, x);
                ck_assert(p.has_value() && q.has_value() && near(*p, *q));
            }
    ck_assert(throws([] {
        Model::from_json(nlohmann::json::parse(R"({"format":"collx-tuning","version":1})"));
    }));
}
END_TEST

// Other submodules on the levels are configurations of their own: the
// best of them becomes a rule with low/up, read back as the same choice,
// and the model file keeps them.
START_TEST(submodule_choices_become_rules) {
    const Levels up_adaptx{"", "adaptx"};
    auto v = configs_for(Coll::Bcast, 100000, {65536}, {Levels{}, up_adaptx});
    ck_assert_uint_eq(v.size(), 5);  // previous, hier, hier/64K, and the two with up=adaptx
    ck_assert(v[3].label() == "hier up=adaptx");
    ck_assert(v[4].label() == "hier/64K up=adaptx");
    ck_assert(!(v[1] == v[3]));
    Model m = sample_model();
    m.levels = {Levels{}, up_adaptx};
    for (Coll c : piped()) {  // adaptx between the leaders: half the time below 64 KiB
        HierModel h = m.colls[c].hier[{}];
        Curve fast;
        for (auto &[x, t] : h.whole.points()) fast.set(x, x < 65536 ? t / 2 : t * 2);
        h.whole = fast;
        for (auto &[seg, p] : h.pipeline)
            for (auto &pt : p.points) pt.second *= 2;
        m.colls[c].hier[up_adaptx] = h;
    }
    collx::Rules back = collx::Rules::parse(m.rules().to_string(), "generated");
    for (Coll coll : piped()) {
        const collx::Rule *small = back.lookup(name(coll), 4, 2, 4096);
        ck_assert(small && small->up && *small->up == "adaptx" && !small->low);
        ck_assert(*config_of(*small) == m.best(coll, 4096)->first);
        ck_assert(config_of(*small)->levels == up_adaptx);
        const collx::Rule *big = back.lookup(name(coll), 4, 2, 1u << 20);
        ck_assert(big && !big->up && !big->low);
    }
    Model b = Model::from_json(nlohmann::json::parse(m.to_json().dump()));
    ck_assert(b.levels == m.levels);
    for (Coll coll : piped())
        for (const Config &c : configs_for(coll, 1u << 20, m.segments, m.levels))
            ck_assert(near(*m.colls[coll].predict(coll, c, 1u << 20), *b.colls[coll].predict(coll, c, 1u << 20)));
}
END_TEST

// allgather, alltoall, reduce_scatter_block and barrier are measured
// whole: previous or hanx's hierarchical form (per submodule choice), no
// segments and no flat trees; their rules say "previous" or "hierarchical"
// with no segment size, barrier's cover every size (0 alone is measured),
// and a model file keeps them.
START_TEST(whole_collectives_become_rules) {
    ck_assert(!pipelined(Coll::Allgather) && !pipelined(Coll::Barrier) && pipelined(Coll::Allreduce));
    ck_assert_uint_eq(piped().size(), 3);  // bcast, reduce, allreduce
    ck_assert(stages(Coll::Alltoall).empty());
    ck_assert(coll_from_name("reduce_scatter_block") == Coll::ReduceScatterBlock);
    ck_assert(!coll_from_name("scan").has_value() && !coll_from_name("nosuch").has_value());
    ck_assert_str_eq(name(Coll::Allgather), "allgather");
    const int lp = flat_tree("pipeline");
    auto v = configs_for(Coll::Allgather, 1u << 20, {65536}, {Levels{}, Levels{"", "adaptx"}}, {lp});
    ck_assert_uint_eq(v.size(), 3);  // previous, hier, hier up=adaptx
    ck_assert(v[0].previous && v[1].label() == "hier" && v[2].label() == "hier up=adaptx");
    Model m = sample_model();
    m.flats = {lp};
    const std::vector<Coll> whole{Coll::Allgather, Coll::Alltoall, Coll::ReduceScatterBlock};
    for (Coll c : whole) {  // hierarchical below 4 KiB, previous from there
        CollModel cm;
        for (std::uint64_t x = 4; x <= (4u << 20); x <<= 2) {
            cm.previous.set(x, 1e-5 + double(x) * 1e-9);
            cm.hier[{}].whole.set(x, x < 4096 ? 5e-6 : 1e-5 + double(x) * 2e-9);
        }
        m.colls[c] = cm;
    }
    CollModel barrier;  // hierarchical: 8 us against 12
    barrier.previous.set(0, 12e-6);
    barrier.hier[{}].whole.set(0, 8e-6);
    m.colls[Coll::Barrier] = barrier;
    ck_assert(m.sizes_of(Coll::Barrier) == std::vector<std::uint64_t>{0});
    collx::Rules back = collx::Rules::parse(m.rules().to_string(), "generated");
    for (Coll c : whole) {
        const collx::Rule *small = back.lookup(name(c), 4, 2, 1024), *big = back.lookup(name(c), 4, 2, 1u << 20);
        ck_assert_msg(small && small->algorithm && *small->algorithm == "hierarchical" && !small->segment_bytes,
                      "%s", name(c));
        ck_assert(big && big->algorithm && *big->algorithm == "previous");
        ck_assert(back.lookup(name(c), 4, 2, ~0ULL) != nullptr);
        ck_assert(m.best(c, 1u << 20)->first.previous);
    }
    for (std::uint64_t x : {0ull, 1ull, ~0ULL}) {  // barrier's size is 0, but any matches
        const collx::Rule *b = back.lookup("barrier", 4, 2, x);
        ck_assert(b && b->algorithm && *b->algorithm == "hierarchical");
    }
    Model b = Model::from_json(nlohmann::json::parse(m.to_json().dump()));
    for (Coll c : {Coll::Allgather, Coll::Barrier})
        for (const Config &k : configs_for(c, 4096, m.segments, m.levels, m.flats))
            for (std::uint64_t x : m.sizes_of(c))
                ck_assert(near(*m.colls[c].predict(c, k, x), *b.colls[c].predict(c, k, x)));
    ck_assert(!m.to_json()["collectives"]["allgather"].contains("stages"));
}
END_TEST

START_TEST(flat_trees_become_rules) {
    const int lp = flat_tree("pipeline"), topo = flat_tree("Topo");
    ck_assert_int_ge(lp, 0);
    ck_assert_int_ge(topo, 0);
    ck_assert_int_eq(flat_tree("torus"), -1);
    // the ring is measured for allreduce only (its bcast and reduce are the LP chain)
    const int ring = flat_tree("ring");
    ck_assert_int_ge(ring, 0);
    ck_assert_uint_eq(configs_for(Coll::Allreduce, 100000, {}, {}, {lp, ring}, false).size(), 3);
    ck_assert_uint_eq(configs_for(Coll::Reduce, 100000, {}, {}, {lp, ring}, false).size(), 2);
    // and so is recursive doubling (its bcast and reduce are the binomial tree)
    const int rd = flat_tree("recursive_doubling");
    ck_assert_int_ge(rd, 0);
    ck_assert_uint_eq(configs_for(Coll::Allreduce, 100000, {}, {}, {lp, rd}, false).size(), 3);
    ck_assert_uint_eq(configs_for(Coll::Bcast, 100000, {}, {}, {lp, rd}, false).size(), 2);
    auto v = configs_for(Coll::Bcast, 100000, {65536}, {Levels{}}, {lp, topo, ring});
    ck_assert_uint_eq(v.size(), 5);  // previous, flat:pipeline, flat:topo, hier, hier/64K
    ck_assert(v[1].label() == "flat:pipeline" && v[2].label() == "flat:topo");
    ck_assert(v[1].at(10) == v[1]);  // a flat tree has no segments to fold
    ck_assert(!(v[1] == v[2]) && !(v[1] == v[3]));
    Model m = sample_model();
    m.flats = {lp, topo};
    for (Coll c : piped()) {  // LP: a third of the best other from 1 MiB, slow below
        for (std::uint64_t x = 4; x <= (64u << 20); x <<= 2) {
            const double best = m.best(c, x)->second;
            m.colls[c].flat[lp].set(x, x >= (1u << 20) ? best / 3 : best * 3);
            m.colls[c].flat[topo].set(x, best * 2);  // never the best
        }
    }
    collx::Rules back = collx::Rules::parse(m.rules().to_string(), "generated");
    for (Coll coll : piped()) {
        const collx::Rule *big = back.lookup(name(coll), 4, 2, 4u << 20);
        ck_assert(big && big->algorithm && *big->algorithm == "flat:pipeline" && !big->segment_bytes);
        ck_assert(*config_of(*big) == (Config{false, 0, {}, lp}));
        const collx::Rule *small = back.lookup(name(coll), 4, 2, 4096);
        ck_assert(small && small->algorithm && small->algorithm->rfind("flat:", 0) != 0);
        for (std::uint64_t x = 4; x <= (16u << 20); x <<= 1)
            ck_assert(m.best(coll, x)->first.flat != topo);
    }
    collx::Rule r;
    r.algorithm = "flat:nosuch";
    ck_assert(!config_of(r).has_value());
    Model b = Model::from_json(nlohmann::json::parse(m.to_json().dump()));
    ck_assert(b.flats == m.flats);
    for (Coll coll : piped())
        for (const Config &c : configs_for(coll, 1u << 20, m.segments, m.levels, m.flats))
            ck_assert(near(*m.colls[coll].predict(coll, c, 1u << 20), *b.colls[coll].predict(coll, c, 1u << 20)));
    // a model of version 3 (no flat trees) still reads
    auto j = nlohmann::json::parse(sample_model().to_json().dump());
    j["version"] = 3;
    j.erase("flat_trees");
    for (auto &[name, o] : j["collectives"].items()) o.erase("flat");
    ck_assert(Model::from_json(j).flats.empty());
}
END_TEST

// split rails: one more configuration measured whole, offered only for
// allreduce and reduce_scatter_block and only where the model measured it; where it is
// fastest the rules say "split" (no segment size: hanx's built-in
// segments), read back as the same choice; the model file keeps the curve
// and the flag, and a model of version 5 (before split rails) still reads,
// without them.
START_TEST(split_rails_become_rules) {
    const Config split = Config::split_rails();
    ck_assert(split.label() == "split");
    ck_assert(split.at(10) == split && split.at(~0ULL) == split);  // no segments to fold
    ck_assert(!split.hierarchical() && Config{}.hierarchical());
    ck_assert(!(split == Config{}) && !(split == (Config{true, 0, {}})));
    ck_assert(has_split(Coll::Allreduce) && has_split(Coll::ReduceScatterBlock) &&
              has_split(Coll::Allgather) && !has_split(Coll::Bcast) && !has_split(Coll::Alltoall));
    const int lp = flat_tree("pipeline");
    auto v = configs_for(Coll::Allreduce, 100000, {65536}, {Levels{}}, {lp}, true);
    ck_assert_uint_eq(v.size(), 5);  // previous, flat:pipeline, split, hier, hier/64K
    ck_assert(v[2] == split);
    ck_assert_uint_eq(configs_for(Coll::Allreduce, 100000, {65536}, {Levels{}}, {lp}).size(), 4);  // not measured
    auto rsb = configs_for(Coll::ReduceScatterBlock, 100000, {65536}, {Levels{}}, {lp}, true);
    ck_assert_uint_eq(rsb.size(), 3);  // previous, split, hier (no flat tree, no segments)
    // (a reduce_scatter's split rails: the collx ring on both levels, as the one flag runs them)
    const Config rsplit = Config::split_rails(Coll::ReduceScatterBlock);
    ck_assert(rsb[1] == rsplit && !(rsplit == split));
    ck_assert(rsplit.label() == "split low_tree=ring up_tree=ring");
    for (Coll c : all_colls())
        if (!has_split(c))
            for (const Config &k : configs_for(c, 100000, {65536}, {Levels{}}, {lp}, true)) ck_assert(!k.split);

    Model m = sample_model();
    // split rails: half the best other from 64 KiB to 1 MiB, twice it
    // elsewhere (at every size of the grid: no interpolation in between)
    CollModel &ar = m.colls[Coll::Allreduce];
    for (std::uint64_t x = 4; x <= (64u << 20); x <<= 1) {
        const double best = m.best(Coll::Allreduce, x)->second;  // of the others (m.split still false)
        ar.split.set(x, x >= 65536 && x <= (1u << 20) ? best / 2 : best * 2);
    }
    m.split = true;
    ck_assert(near(*ar.predict(Coll::Allreduce, split, 1u << 18), ar.split.at(1u << 18)));
    m.colls[Coll::Bcast].split = ar.split;  // a curve of another collective is never offered
    const collx::Rules r = m.rules();
    collx::Rules back = collx::Rules::parse(r.to_string(), "generated");
    int splits = 0;
    for (const collx::Rule &rule : back.rules()) {
        if (!rule.algorithm || *rule.algorithm != "split") continue;
        ++splits;
        ck_assert_str_eq(rule.collective.c_str(), "allreduce");
        ck_assert(!rule.segment_bytes && !rule.low && !rule.up);
        ck_assert(*config_of(rule) == split);
    }
    ck_assert_int_eq(splits, 1);  // 64K .. 1M, one range
    for (std::uint64_t x = 4; x <= (16u << 20); x <<= 1) {
        const collx::Rule *rule = back.lookup("allreduce", 4, 2, x);
        ck_assert(rule != nullptr);
        const bool fastest = x >= 65536 && x <= (1u << 20);
        ck_assert_msg((*config_of(*rule) == split) == fastest, "allreduce %llu: %s", (unsigned long long)x,
                      config_of(*rule)->label().c_str());
        ck_assert(*config_of(*rule) == m.best(Coll::Allreduce, x)->first);
        ck_assert(!m.best(Coll::Bcast, x)->first.split);
    }
    // reduce_scatter_block: split where its own curve is fastest (from
    // 64 KiB); a model without that curve (split rails measured for
    // allreduce alone, as before stop 26) offers none
    {
        Model s = m;
        CollModel &rs = s.colls[Coll::ReduceScatterBlock];
        for (std::uint64_t x = 4; x <= (16u << 20); x <<= 1) {
            rs.previous.set(x, 1e-5 + double(x) * 1e-9);
            rs.hier[{}].whole.set(x, 2e-5 + double(x) * 5e-10);
        }
        ck_assert(!s.best(Coll::ReduceScatterBlock, 1u << 20)->first.split);
        for (std::uint64_t x = 4; x <= (16u << 20); x <<= 1)
            rs.split.set(x, x >= 65536 ? (2e-5 + double(x) * 5e-10) / 2 : 1.0);
        const collx::Rules sr = collx::Rules::parse(s.rules().to_string(), "generated");
        for (std::uint64_t x = 4; x <= (16u << 20); x <<= 1) {
            const collx::Rule *rule = sr.lookup("reduce_scatter_block", 4, 2, x);
            ck_assert(rule != nullptr);
            ck_assert_msg((*config_of(*rule) == rsplit) == (x >= 65536), "reduce_scatter_block %llu: %s",
                          (unsigned long long)x, config_of(*rule)->label().c_str());
        }
    }
    // allgather: its split form is the node ring, a rule's "node_ring"
    // where its curve is fastest (from 64 KiB here), read back as that
    // choice; hanx takes "node_ring" for allgather alone
    {
        const Config nr = Config::split_rails(Coll::Allgather);
        ck_assert(nr.node_ring && nr.label() == "node_ring" && !(nr == split));
        Model s = m;
        CollModel &ag = s.colls[Coll::Allgather];
        for (std::uint64_t x = 4; x <= (16u << 20); x <<= 1) {
            ag.previous.set(x, 1e-5 + double(x) * 1e-9);
            ag.hier[{}].whole.set(x, 2e-5 + double(x) * 5e-10);
            ag.split.set(x, x >= 65536 ? (2e-5 + double(x) * 5e-10) / 2 : 1.0);
        }
        const collx::Rules gr = collx::Rules::parse(s.rules().to_string(), "generated");
        for (std::uint64_t x = 4; x <= (16u << 20); x <<= 1) {
            const collx::Rule *rule = gr.lookup("allgather", 4, 2, x);
            ck_assert(rule != nullptr);
            ck_assert_msg((*config_of(*rule) == nr) == (x >= 65536), "allgather %llu: %s",
                          (unsigned long long)x, config_of(*rule)->label().c_str());
            ck_assert((*rule->algorithm == "node_ring") == (x >= 65536));
        }
        collx::Rule other;
        other.collective = "bcast";
        other.algorithm = "node_ring";
        ck_assert(!config_of(other).has_value());
    }
    // not measured: not offered, whatever the curve says
    Model off = m;
    off.split = false;
    const collx::Rules off_rules = off.rules();
    for (const collx::Rule &rule : off_rules.rules()) ck_assert(*rule.algorithm != "split");
    // "split" is allreduce's and reduce_scatter(_block)'s alone (hanx
    // rejects it elsewhere)
    collx::Rule other;
    other.algorithm = "split";
    for (const char *c : {"bcast", "allgather", "alltoall", "reduce", "barrier"}) {
        other.collective = c;
        ck_assert_msg(!config_of(other).has_value(), "%s", c);
    }
    other.collective = "allreduce";
    ck_assert(config_of(other) == split);
    for (const char *c : {"reduce_scatter", "reduce_scatter_block"}) {
        other.collective = c;
        ck_assert_msg(config_of(other) == rsplit, "%s", c);  // (no level named: the rings)
        other.up_algorithm = "module";  // a named level: as named
        Config named = rsplit;
        named.levels.up_tree = -1;
        ck_assert_msg(config_of(other) == named, "%s", c);
        other.up_algorithm = "no_such_tree";
        ck_assert_msg(!config_of(other).has_value(), "%s", c);
        other.up_algorithm.reset();
    }

    // the model file: the flag and the curve (allreduce only)
    const auto j = m.to_json();
    ck_assert(j["split_rails"].get<bool>());
    ck_assert(j["collectives"]["allreduce"].contains("split"));
    ck_assert(!j["collectives"]["reduce"].contains("split"));
    Model b = Model::from_json(nlohmann::json::parse(j.dump()));
    ck_assert(b.split);
    ck_assert(b.colls.at(Coll::Allreduce).split.points() == ar.split.points());
    for (std::uint64_t x : {4ull, 100000ull, 1ull << 20, 64ull << 20})
        for (const Config &c : configs_for(Coll::Allreduce, x, m.segments, m.levels, m.flats, m.split))
            ck_assert(near(*m.colls[Coll::Allreduce].predict(Coll::Allreduce, c, x),
                           *b.colls[Coll::Allreduce].predict(Coll::Allreduce, c, x)));
    ck_assert(b.rules().to_string() == r.to_string());

    // a model of version 5 reads: split rails not measured, no curve
    auto old = nlohmann::json::parse(sample_model().to_json().dump());
    old["version"] = 5;
    old.erase("split_rails");
    ck_assert(!old["collectives"]["allreduce"].contains("split"));
    Model o5 = Model::from_json(old);
    ck_assert(!o5.split && o5.colls.at(Coll::Allreduce).split.empty());
    ck_assert(!o5.colls.at(Coll::Allreduce).predict(Coll::Allreduce, split, 4096).has_value());
    const collx::Rules o5_rules = o5.rules();
    for (const collx::Rule &rule : o5_rules.rules()) ck_assert(*rule.algorithm != "split");
    // ... and a version 6 model without the flag or the curve is one that did not measure them
    old["version"] = 6;
    ck_assert(!Model::from_json(old).split);
    old["version"] = 11;  // (a newer format: not read)
    ck_assert(throws([&] { Model::from_json(old); }));
}
END_TEST

// The levels' collx trees (--low-trees, --up-trees) are choices of the
// levels of their own, for the pipelined collectives alone: where one is
// fastest the rules say "up_algorithm" (with the segment size), read back
// through the rules text and config_of as the same choice; the model file
// (version 7) keeps them, and a model of version 6 (before them) still
// reads, every choice on the modules.
START_TEST(level_trees_become_rules) {
    const int lp = flat_tree("pipeline"), chain = flat_tree("chain");
    const Levels up_lp{"", "", -1, lp}, low_chain{"", "", chain, -1};
    const Config seg32k{false, 32768, up_lp};
    const Levels all{"basic", "adaptx", chain, lp};
    ck_assert(seg32k.label() == "hier/32K up_tree=pipeline");
    ck_assert(all.label() == " low=basic up=adaptx low_tree=chain up_tree=pipeline");
    const Levels up_adaptx{"", "adaptx"};
    ck_assert(up_lp.has_tree() && !up_adaptx.has_tree() && !(up_lp == Levels{}) && !(up_lp == low_chain));
    ck_assert_int_eq(level_tree("module"), -1);
    ck_assert_int_eq(level_tree("PIPELINE"), lp);
    ck_assert_int_eq(level_tree("torus"), -2);
    ck_assert(level_algorithm(-1) == "module" && level_algorithm(lp) == "pipeline");
    auto v = configs_for(Coll::Bcast, 100000, {65536}, {Levels{}, up_lp, low_chain});
    ck_assert_uint_eq(v.size(), 7);  // previous, hier, hier/64K, and both for each tree
    ck_assert(v[3].label() == "hier up_tree=pipeline" && v[4].label() == "hier/64K up_tree=pipeline");
    ck_assert(v[5].label() == "hier low_tree=chain" && v[6] == (Config{false, 65536, low_chain}));
    for (Coll c : all_colls()) {  // the collectives measured whole have no tree stages
        ck_assert(applies(c, up_lp) == pipelined(c) && applies(c, up_adaptx));
        if (!pipelined(c))
            for (const Config &k : configs_for(c, 4096, {65536}, {Levels{}, up_lp, low_chain}))
                ck_assert(!k.levels.has_tree());
    }

    Model m = sample_model();
    m.levels = {Levels{}, up_lp, low_chain};
    for (Coll c : piped()) {
        // an LP chain between the leaders: pipelines of 256 KiB segments in
        // a quarter of the time, the rest twice; a chain in the node: 3x
        const HierModel &base = m.colls[c].hier[{}];
        HierModel up = base, low = base;
        Curve slow, slower;
        for (auto &[x, t] : base.whole.points()) slow.set(x, 2 * t), slower.set(x, 3 * t);
        up.whole = slow;
        low.whole = slower;
        for (auto &[seg, p] : up.pipeline)
            for (auto &pt : p.points) pt.second *= seg == 262144 ? 0.25 : 2;
        for (auto &[seg, p] : low.pipeline)
            for (auto &pt : p.points) pt.second *= 3;
        m.colls[c].hier[up_lp] = up;
        m.colls[c].hier[low_chain] = low;
    }
    const collx::Rules r = m.rules();
    collx::Rules back = collx::Rules::parse(r.to_string(), "generated");
    ck_assert(r.to_string().find("\"up_algorithm\": \"pipeline\"") != std::string::npos);
    for (Coll coll : piped())
        for (std::uint64_t x : m.sizes) {
            const collx::Rule *rule = back.lookup(name(coll), 4, 2, x);
            ck_assert(rule != nullptr && !rule->low_algorithm && !rule->low && !rule->up);
            const Config best = m.best(coll, x)->first;
            ck_assert_msg(*config_of(*rule) == best, "%s %llu: %s", name(coll), (unsigned long long)x,
                          config_of(*rule)->label().c_str());
            // the tree from 256 KiB segments on (a message of one segment is unsegmented)
            const bool tree = x > 262144;
            const Config want{false, 262144, up_lp};
            ck_assert_msg((tree ? best == want : !best.levels.has_tree()),
                          "%s %llu: %s", name(coll), (unsigned long long)x, best.label().c_str());
            // (a reduce's leaders' module is named where hanx's built-in tree would run)
            const bool module = !tree && best.hierarchical() && coll == Coll::Reduce &&
                                (!rule->bytes || !rule->bytes->max ||
                                 *rule->bytes->max >= COLLX_HIER_REDUCE_TREE_MIN_BYTES);
            ck_assert(rule->up_algorithm.has_value() == (tree || module));
            if (tree) ck_assert(*rule->up_algorithm == "pipeline" && *rule->segment_bytes == 262144);
            if (module) ck_assert(*rule->up_algorithm == "module");
        }
    // config_of as hanx reads a rule: "module" is not saying it, a tree
    // on a collective without tree stages is its module, unknown names none
    collx::Rule h;
    h.collective = "reduce";
    h.algorithm = "hierarchical";
    h.up_algorithm = "module";
    ck_assert(*config_of(h) == Config{});
    h.low_algorithm = "Chain";
    ck_assert(*config_of(h) == (Config{false, 0, low_chain}));
    h.collective = "allgather";
    ck_assert(*config_of(h) == Config{});
    h.up_algorithm = "torus";
    ck_assert(!config_of(h).has_value());

    // the model file: version 10, the trees by name in the choices and the curves
    const auto j = m.to_json();
    ck_assert_int_eq(j["version"].get<int>(), 10);
    ck_assert(j["submodules"][1]["up_algorithm"] == "pipeline" && j["submodules"][1]["low_algorithm"] == "module");
    ck_assert(j["collectives"]["bcast"]["hier"].size() == 3);
    Model b = Model::from_json(nlohmann::json::parse(j.dump()));
    ck_assert(b.levels == m.levels);
    for (Coll coll : piped())
        for (std::uint64_t x : {4ull, 100000ull, 1ull << 20, 64ull << 20})
            for (const Config &c : configs_for(coll, x, m.segments, m.levels)) {
                auto p = m.colls[coll].predict(coll, c, x), q = b.colls[coll].predict(coll, c, x);
                ck_assert(p.has_value() && q.has_value() && near(*p, *q));
            }
    ck_assert(b.rules().to_string() == r.to_string());
    auto bad = nlohmann::json::parse(j.dump());
    bad["submodules"][1]["up_algorithm"] = "torus";
    ck_assert(throws([&] { Model::from_json(bad); }));

    // a model of version 6 (no level algorithms) reads: the modules on every level
    auto old = nlohmann::json::parse(sample_model().to_json().dump());
    old["version"] = 6;
    for (auto &x : old["submodules"]) x.erase("low_algorithm"), x.erase("up_algorithm");
    for (auto &[cname, o] : old["collectives"].items())
        for (auto &hj : o["hier"]) hj.erase("low_algorithm"), hj.erase("up_algorithm");
    Model o6 = Model::from_json(old);
    ck_assert(o6.levels == std::vector<Levels>{Levels{}});
    ck_assert(o6.colls.at(Coll::Bcast).hier.count(Levels{}) == 1);
    ck_assert(o6.rules().to_string() == sample_model().rules().to_string());
}
END_TEST

int main() {
    Suite *s = suite_create("tune_model");
    TCase *t = tcase_create("model");
    tcase_add_test(t, curve_interpolates_log_log);
    tcase_add_test(t, stages_of_each_collective);
    tcase_add_test(t, composition_matches_step_enumeration);
    tcase_add_test(t, pipeline_piecewise_linear);
    tcase_add_test(t, partial_segments_interpolate);
    tcase_add_test(t, unsegmented_and_previous);
    tcase_add_test(t, configs_and_sizes);
    tcase_add_test(t, rules_encode_the_best_choices);
    tcase_add_test(t, builtin_choice_keeps_sizes_without_rules);
    tcase_add_test(t, back_to_back_times_veto_rules);
    tcase_add_test(t, back_to_back_times_promote_near_ties);
    tcase_add_test(t, back_to_back_picks_the_fastest_in_the_loop);
    tcase_add_test(t, loop_windows_take_turns_first);
    tcase_add_test(t, model_file_round_trip);
    tcase_add_test(t, incomplete_model_rules_stop_at_measured_sizes);
    tcase_add_test(t, submodule_choices_become_rules);
    tcase_add_test(t, flat_trees_become_rules);
    tcase_add_test(t, whole_collectives_become_rules);
    tcase_add_test(t, split_rails_become_rules);
    tcase_add_test(t, level_trees_become_rules);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
