// Unit tests of collx-tune's task cost model (ompi/tools/collx-tune/model.*):
// curve interpolation, the pipeline composition rule checked against an
// explicit step-by-step enumeration, choices, the rules it writes (read
// back through the tuning-file reader hanx uses) and the model file.
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

// Step costs of a K-stage pipeline from a table, summed the slow way:
// every step t of n + K - 1 runs the stages j with 0 <= t - j < n.
double enumerate(const std::map<Window, double> &W, int K, std::uint64_t n) {
    double t = 0;
    for (std::uint64_t s = 0; s < n + std::uint64_t(K) - 1; ++s) {
        int a = K, b = -1;
        for (int j = 0; j < K; ++j)
            if (s >= std::uint64_t(j) && s - std::uint64_t(j) < n) a = std::min(a, j), b = std::max(b, j);
        t += W.at({a, b});
    }
    return t;
}

CollModel synthetic(Coll coll) {
    CollModel m;
    const int K = int(stages(coll).size());
    for (std::uint64_t x = 4; x <= (64u << 20); x <<= 2) m.previous.set(x, 1e-5 + double(x) * 1e-9);
    m.blocking.resize(std::size_t(K));
    for (int j = 0; j < K; ++j)
        for (std::uint64_t x = 4; x <= (64u << 20); x <<= 2)
            m.blocking[std::size_t(j)].set(x, 2e-6 * (j + 1) + double(x) * 4e-10);
    for (std::uint64_t s : {65536u, 262144u}) {
        int i = 0;
        for (Window w : windows(K)) m.step[s][w] = 1e-6 * (1 + i++) + double(s) * 3e-10 * (w.second - w.first + 1);
    }
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

START_TEST(windows_are_prefixes_then_suffixes) {
    auto w2 = windows(2);
    ck_assert_uint_eq(w2.size(), 3);
    ck_assert(w2[0] == Window(0, 0) && w2[1] == Window(0, 1) && w2[2] == Window(1, 1));
    auto w3 = windows(3);
    ck_assert_uint_eq(w3.size(), 5);
    ck_assert(w3[2] == Window(0, 2) && w3[3] == Window(1, 2) && w3[4] == Window(2, 2));
    ck_assert_uint_eq(stages(Coll::Bcast).size(), 2);
    ck_assert(stages(Coll::Bcast)[0] == Level::Leaders);
    ck_assert(stages(Coll::Reduce)[0] == Level::Node);
    ck_assert_uint_eq(stages(Coll::Allreduce).size(), 3);
}
END_TEST

// Whole numbers of segments: the closed form equals the enumeration of
// steps, for every collective and every n (short pipelines included).
START_TEST(composition_matches_step_enumeration) {
    for (Coll coll : all_colls()) {
        CollModel m = synthetic(coll);
        const int K = int(stages(coll).size());
        for (std::uint64_t s : {65536u, 262144u})
            for (std::uint64_t n = 2; n <= 40; ++n) {
                auto p = m.predict(coll, Config{false, s}, n * s);
                ck_assert(p.has_value());
                ck_assert_msg(near(*p, enumerate(m.step.at(s), K, n)), "%s s=%llu n=%llu: %g vs %g",
                              name(coll), (unsigned long long)s, (unsigned long long)n, *p,
                              enumerate(m.step.at(s), K, n));
            }
    }
}
END_TEST

// A short last segment costs a share of a full step: monotone in bytes,
// between the neighbouring whole numbers of segments.
START_TEST(partial_segments_interpolate) {
    CollModel m = synthetic(Coll::Bcast);
    const std::uint64_t s = 65536;
    double last = 0;
    for (std::uint64_t x = 2 * s; x <= 8 * s; x += s / 8) {
        double p = *m.predict(Coll::Bcast, Config{false, s}, x);
        ck_assert(p >= last);
        last = p;
    }
    const double lo = *m.predict(Coll::Bcast, Config{false, s}, 4 * s);
    const double hi = *m.predict(Coll::Bcast, Config{false, s}, 5 * s);
    const double mid = *m.predict(Coll::Bcast, Config{false, s}, 4 * s + s / 2);
    ck_assert(near(mid, 0.5 * (lo + hi)));
}
END_TEST

START_TEST(unsegmented_and_previous) {
    CollModel m = synthetic(Coll::Allreduce);
    const std::uint64_t x = 1u << 20;
    double sum = 0;
    for (auto &c : m.blocking) sum += c.at(x);
    ck_assert(near(*m.predict(Coll::Allreduce, Config{false, 0}, x), sum));
    // a segment at least as big as the message is one segment
    ck_assert(near(*m.predict(Coll::Allreduce, Config{false, 262144}, 262144), m.blocking[0].at(262144) +
                                                                                   m.blocking[1].at(262144) +
                                                                                   m.blocking[2].at(262144)));
    ck_assert(near(*m.predict(Coll::Allreduce, Config{true, 0}, x), m.previous.at(x)));
    // what was not measured is not predicted
    ck_assert(!m.predict(Coll::Allreduce, Config{false, 4096}, x).has_value());
    CollModel empty;
    ck_assert(!empty.predict(Coll::Bcast, Config{true, 0}, x).has_value());
    ck_assert(!empty.predict(Coll::Bcast, Config{false, 0}, x).has_value());
}
END_TEST

START_TEST(configs_and_sizes) {
    auto v = configs_for(100000, {16384, 65536, 262144});
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
        bool threw = false;
        try {
            parse_bytes(bad);
        } catch (const std::exception &) {
            threw = true;
        }
        ck_assert_msg(threw, "%s accepted", bad);
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
    for (Coll c : all_colls()) m.colls[c] = synthetic(c);
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
    for (Coll coll : all_colls()) {
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
    for (Coll coll : all_colls())
        for (std::uint64_t x : {4ull, 5000ull, 1ull << 20, 10ull << 20, 64ull << 20})
            for (const Config &c : configs_for(x, m.segments)) {
                auto p = m.colls[coll].predict(coll, c, x), q = b.colls[coll].predict(coll, c, x);
                ck_assert(p.has_value() && q.has_value() && near(*p, *q));
            }
    bool threw = false;
    try {
        Model::from_json(nlohmann::json::parse(R"({"format":"collx-tuning","version":1})"));
    } catch (const std::exception &) {
        threw = true;
    }
    ck_assert(threw);
}
END_TEST

int main() {
    Suite *s = suite_create("tune_model");
    TCase *t = tcase_create("model");
    tcase_add_test(t, curve_interpolates_log_log);
    tcase_add_test(t, windows_are_prefixes_then_suffixes);
    tcase_add_test(t, composition_matches_step_enumeration);
    tcase_add_test(t, partial_segments_interpolate);
    tcase_add_test(t, unsegmented_and_previous);
    tcase_add_test(t, configs_and_sizes);
    tcase_add_test(t, rules_encode_the_best_choices);
    tcase_add_test(t, model_file_round_trip);
    tcase_add_test(t, incomplete_model_rules_stop_at_measured_sizes);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
