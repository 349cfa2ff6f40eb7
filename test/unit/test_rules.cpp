// Unit tests of the tuning rules (opal/collx/rules.*): matching, every
// validation error with its file:line, line tracking through tricky JSON,
// save/load round trip, check_algorithms, big files, the C API edges.
#include <dirent.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "collx/collx.h"
#include "collx/collx_rules.h"
#include "rules.hpp"

// last: check.h defines a macro "fail" that breaks the standard headers
#include <check.h>

using collx::Rule;
using collx::RuleRange;
using collx::Rules;

namespace {

// Header lines 1-4, rules from line 5 on, closing lines after.
std::string doc(const std::string &rules_body) {
    return "{\n"
           "  \"format\": \"collx-tuning\",\n"
           "  \"version\": 1,\n"
           "  \"rules\": [\n" +
           rules_body +
           "\n  ]\n"
           "}\n";
}

struct Parsed {
    collx_rules_t *r = nullptr;
    char err[1024] = "";
    Parsed(const std::string &text, const char *name = "t.json") {
        r = collx_rules_parse(text.c_str(), name, err, sizeof err);
    }
    ~Parsed() { collx_rules_free(r); }
    Parsed(const Parsed &) = delete;
    Parsed &operator=(const Parsed &) = delete;
};

bool contains(const std::string &s, const std::string &part) {
    return s.find(part) != std::string::npos;
}

// The text must be rejected with a message containing every part.
#define EXPECT_ERROR(text, ...)                                                                \
    do {                                                                                       \
        Parsed p_(text);                                                                       \
        ck_assert_msg(p_.r == nullptr, "accepted a bad file:\n%s", std::string(text).c_str()); \
        for (const char *part_ : {__VA_ARGS__})                                                \
            ck_assert_msg(contains(p_.err, part_), "message '%s' lacks '%s'", p_.err, part_);  \
    } while (0)

collx_rule_t look(const collx_rules_t *r, const char *coll, long long nodes, long long rpn,
                  unsigned long long bytes) {
    collx_rule_t out;
    std::memset(&out, 0x5a, sizeof out);
    int found = collx_rules_lookup(r, coll, nodes, rpn, bytes, &out);
    ck_assert_int_eq(found, out.found);
    return out;
}


std::string temp_dir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/collx-rules-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ck_assert_ptr_nonnull(mkdtemp(buf.data()));
    return buf.data();
}

std::vector<std::string> dir_entries(const std::string &dir) {
    std::vector<std::string> names;
    DIR *d = opendir(dir.c_str());
    ck_assert_ptr_nonnull(d);
    while (dirent *e = readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
            names.push_back(e->d_name);
    closedir(d);
    return names;
}

void remove_dir(const std::string &dir) {
    for (const auto &n : dir_entries(dir)) unlink((dir + "/" + n).c_str());
    rmdir(dir.c_str());
}

}  // namespace

// ------------------------------------------------------------ valid files

START_TEST(every_field_form) {
    // clang-format off
    const std::string text = doc(
        "    { \"collective\": \"allreduce\", \"comment\": \"small, on few nodes\",\n"                // 5
        "      \"nodes\": [2, 8], \"ranks_per_node\": 4, \"bytes\": [0, 65535],\n"                    // 6
        "      \"algorithm\": \"pipelined\", \"segment_bytes\": 65536,\n"                             // 7
        "      \"low\": \"tuned\", \"up\": \"adaptx,^hanx\" },\n"                                     // 8
        "    { \"collective\": \"allreduce\", \"bytes\": [65536, null], \"segment_bytes\": 0 },\n"    // 9
        "    { \"collective\": \"bcast\", \"nodes\": [1, null], \"ranks_per_node\": [1, 64],\n"     // 10
        "      \"low_algorithm\": \"module\", \"up_algorithm\": \"Pipeline\" }");                    // 11
    // clang-format on
    Parsed p(text);
    ck_assert_msg(p.r != nullptr, "%s", p.err);
    ck_assert_str_eq(p.err, "");
    ck_assert_uint_eq(collx_rules_count(p.r), 3);
    ck_assert_str_eq(collx_rules_name(p.r), "t.json");

    collx_rule_t a = look(p.r, "allreduce", 4, 4, 100);
    ck_assert_int_eq(a.found, 1);
    ck_assert_int_eq(a.index, 0);
    ck_assert_int_eq(a.line, 5);
    ck_assert_str_eq(a.algorithm ? a.algorithm : "(null)", "pipelined");
    ck_assert_int_eq(a.segment_bytes, 65536);
    ck_assert_str_eq(a.low ? a.low : "(null)", "tuned");
    ck_assert_str_eq(a.up ? a.up : "(null)", "adaptx,^hanx");
    ck_assert_ptr_null(a.low_algorithm);
    ck_assert_ptr_null(a.up_algorithm);

    collx_rule_t b = look(p.r, "allreduce", 100, 1, 1 << 20);
    ck_assert_int_eq(b.found, 1);
    ck_assert_int_eq(b.index, 1);
    ck_assert_int_eq(b.line, 9);
    ck_assert_ptr_null(b.algorithm);
    ck_assert_int_eq(b.segment_bytes, 0);
    ck_assert_ptr_null(b.low);
    ck_assert_ptr_null(b.up);

    collx_rule_t c = look(p.r, "bcast", 1000000, 64, 0);
    ck_assert_int_eq(c.index, 2);
    ck_assert_int_eq(c.line, 10);
    ck_assert_int_eq(c.segment_bytes, -1);
    // a level's algorithm: "module" or a collx tree, any case, given back as written
    ck_assert_str_eq(c.low_algorithm ? c.low_algorithm : "(null)", "module");
    ck_assert_str_eq(c.up_algorithm ? c.up_algorithm : "(null)", "Pipeline");
    ck_assert_int_eq(collx_tree_from_name(c.up_algorithm), COLLX_TREE_PIPELINE);
    ck_assert_int_eq(collx_tree_from_name(c.low_algorithm), -1);
    ck_assert_int_eq(look(p.r, "bcast", 2, 65, 0).found, 0);

    // allreduce, small message, but 9 nodes: rule 1 fails, rule 2 does not cover small
    collx_rule_t n = look(p.r, "allreduce", 9, 4, 100);
    ck_assert_int_eq(n.found, 0);
    ck_assert_int_eq(n.index, -1);
    ck_assert_int_eq(n.line, 0);
    ck_assert_ptr_null(n.algorithm);
    ck_assert_int_eq(n.segment_bytes, -1);
    ck_assert_ptr_null(n.low);
    ck_assert_ptr_null(n.up);

    // the C++ view agrees
    Rules cpp = Rules::parse(text, "t.json");
    ck_assert_uint_eq(cpp.size(), 3);
    ck_assert(cpp[0].nodes == RuleRange::between(2, 8));
    ck_assert(cpp[0].ranks_per_node == RuleRange::exactly(4));
    ck_assert(cpp[1].bytes == RuleRange::at_least(65536));
    ck_assert(cpp[0].comment == std::string("small, on few nodes"));
    ck_assert_int_eq(cpp[0].algorithm_line, 7);
}
END_TEST

START_TEST(top_level_extras_and_empty_rules) {
    Parsed p(
        "{\"comment\": \"x\", \"generated_by\": \"collx-tune 0.1\", \"rules\": [],"
        " \"version\": 1, \"format\": \"collx-tuning\"}");
    ck_assert_msg(p.r != nullptr, "%s", p.err);
    ck_assert_uint_eq(collx_rules_count(p.r), 0);
    ck_assert_int_eq(look(p.r, "bcast", 1, 1, 1).found, 0);
    Rules cpp = Rules::parse(
        "{\"format\":\"collx-tuning\",\"version\":1,\"rules\":[],"
        "\"generated_by\":\"me\",\"comment\":\"\"}",
        "x");
    ck_assert(cpp.generated_by == std::string("me"));
    ck_assert(cpp.comment == std::string(""));
}
END_TEST

START_TEST(first_match_in_file_order) {
    Parsed p(
        doc("    {\"collective\": \"bcast\", \"nodes\": 2, \"algorithm\": \"specific\"},\n"
            "    {\"collective\": \"reduce\", \"algorithm\": \"other-collective\"},\n"
            "    {\"collective\": \"bcast\", \"algorithm\": \"general\"},\n"
            "    {\"collective\": \"bcast\", \"nodes\": 3, \"algorithm\": \"shadowed\"}"));
    ck_assert_msg(p.r != nullptr, "%s", p.err);
    ck_assert_str_eq(look(p.r, "bcast", 2, 1, 0).algorithm, "specific");
    ck_assert_int_eq(look(p.r, "bcast", 2, 1, 0).index, 0);
    ck_assert_str_eq(look(p.r, "bcast", 3, 1, 0).algorithm, "general");
    ck_assert_int_eq(look(p.r, "bcast", 3, 1, 0).index, 2);
    ck_assert_int_eq(look(p.r, "bcast", 3, 1, 0).line, 7);
    ck_assert_str_eq(look(p.r, "reduce", 3, 1, 0).algorithm, "other-collective");
    ck_assert_int_eq(look(p.r, "allreduce", 3, 1, 0).found, 0);
    // an unknown collective name just finds nothing
    ck_assert_int_eq(look(p.r, "bcastt", 3, 1, 0).found, 0);
    ck_assert_int_eq(look(p.r, "", 3, 1, 0).found, 0);
}
END_TEST

START_TEST(unbounded_max_and_huge_values) {
    Parsed p(
        doc("    {\"collective\": \"gather\", \"bytes\": [1024, null], \"algorithm\": \"big\"},\n"
            "    {\"collective\": \"gather\", \"nodes\": [0, 18446744073709551615],"
            " \"algorithm\": \"rest\"}"));
    ck_assert_msg(p.r != nullptr, "%s", p.err);
    ck_assert_str_eq(look(p.r, "gather", 1, 1, ULLONG_MAX).algorithm, "big");
    ck_assert_str_eq(look(p.r, "gather", 1, 1, 1024).algorithm, "big");
    ck_assert_str_eq(look(p.r, "gather", LLONG_MAX, 1, 1023).algorithm, "rest");
    ck_assert_int_eq(look(p.r, "gather", -1, 1, 1023).found, 0);
}
END_TEST

START_TEST(missing_optional_fields_match_anything) {
    Parsed p(doc("    {\"collective\": \"barrier\"}"));
    ck_assert_msg(p.r != nullptr, "%s", p.err);
    for (long long n : {-1LL, 0LL, 1LL, LLONG_MAX})
        for (unsigned long long b : {0ULL, 1ULL, ULLONG_MAX}) {
            collx_rule_t r = look(p.r, "barrier", n, n, b);
            ck_assert_int_eq(r.found, 1);
            ck_assert_ptr_null(r.algorithm);
            ck_assert_int_eq(r.segment_bytes, -1);
            ck_assert_ptr_null(r.low);
            ck_assert_ptr_null(r.up);
        }
    ck_assert_int_eq(look(p.r, "scan", 1, 1, 1).found, 0);
}
END_TEST

START_TEST(range_boundaries) {
    Parsed p(
        doc("    {\"collective\": \"alltoall\", \"nodes\": [2, 8], \"ranks_per_node\": 4,"
            " \"bytes\": [0, 65535], \"algorithm\": \"a\"}"));
    ck_assert_msg(p.r != nullptr, "%s", p.err);
    const struct {
        long long n, rpn;
        unsigned long long b;
        int found;
    } cases[] = {
        {1, 4, 0, 0}, {2, 4, 0, 1},     {8, 4, 0, 1},         {9, 4, 0, 0},  {5, 3, 0, 0},
        {5, 5, 0, 0}, {5, 4, 65535, 1}, {5, 4, 65536, 0},     {-1, 4, 0, 0}, {5, -1, 0, 0},
        {0, 4, 0, 0}, {8, 4, 65535, 1}, {LLONG_MIN, 4, 0, 0},
    };
    for (const auto &c : cases)
        ck_assert_msg(look(p.r, "alltoall", c.n, c.rpn, c.b).found == c.found,
                      "nodes %lld rpn %lld bytes %llu: expected found=%d", c.n, c.rpn, c.b,
                      c.found);
}
END_TEST

// --------------------------------------------------------------- errors

START_TEST(unreadable_files) {
    char err[512];
    ck_assert_ptr_null(collx_rules_load("/nonexistent-dir/tuning.json", err, sizeof err));
    ck_assert_str_eq(err, "/nonexistent-dir/tuning.json: cannot open: No such file or directory");
    ck_assert_ptr_null(collx_rules_load("/", err, sizeof err));
    ck_assert_msg(contains(err, "/: cannot read: Is a directory"), "%s", err);
    ck_assert_ptr_null(collx_rules_load(nullptr, err, sizeof err));
    ck_assert_msg(contains(err, "no file name"), "%s", err);
    // and a readable one
    std::string dir = temp_dir();
    std::string path = dir + "/ok.json";
    std::ofstream(path) << doc("{\"collective\": \"scan\", \"algorithm\": \"x\"}");
    collx_rules_t *r = collx_rules_load(path.c_str(), err, sizeof err);
    ck_assert_msg(r != nullptr, "%s", err);
    ck_assert_str_eq(collx_rules_name(r), path.c_str());
    ck_assert_str_eq(look(r, "scan", 1, 1, 1).algorithm, "x");
    collx_rules_free(r);
    std::ofstream(path) << doc("{\"collective\": \"scan\", \"algorithm\": 7}");
    ck_assert_ptr_null(collx_rules_load(path.c_str(), err, sizeof err));
    ck_assert_msg(
        contains(err, path + ":5: rule 1: \"algorithm\" must be a non-empty string, got 7"), "%s",
        err);
    remove_dir(dir);
}
END_TEST

// my line:column against nlohmann's own "at line L, column C" (nlohmann
// places an offending newline at column 0 of the next line: not compared)
static void check_syntax_position(const std::string &text, int line, int col, bool compare = true) {
    Parsed p(text);
    ck_assert_ptr_null(p.r);
    std::string want =
        "t.json:" + std::to_string(line) + ":" + std::to_string(col) + ": JSON syntax error: ";
    ck_assert_msg(contains(p.err, want), "'%s' lacks '%s'", p.err, want.c_str());
    if (!compare) return;
    try {
        auto j = nlohmann::json::parse(text);
        (void)j;
        ck_abort_msg("nlohmann accepted it");
    } catch (const nlohmann::json::parse_error &e) {
        std::string theirs =
            "at line " + std::to_string(line) + ", column " + std::to_string(col) + ":";
        ck_assert_msg(contains(e.what(), theirs), "nlohmann says '%s', we say '%s'", e.what(),
                      p.err);
    }
}

START_TEST(syntax_errors_at_line_and_column) {
    // trailing comma in a rule: the '}' of line 5, column 30
    check_syntax_position(doc("    { \"collective\": \"bcast\", }"), 5, 30);
    Parsed p(doc("    { \"collective\": \"bcast\", }"));
    ck_assert_msg(contains(p.err, "unexpected '}'"), "%s", p.err);
    // missing comma between rules, after escaped braces/newlines in strings
    check_syntax_position(doc("    {\"collective\": \"bcast\", \"comment\": \"}\\n{\\\"\"}\n"
                              "    {\"collective\": \"reduce\"}"),
                          6, 5);
    // a raw newline inside a string (JSON forbids it)
    check_syntax_position(doc("    {\"collective\": \"bcast\", \"comment\": \"a\nb\"}"), 5, 42,
                          false);
    // truncated file: end of input on the last line
    check_syntax_position("{\n  \"format\": \"collx-tuning\",\n  \"rules\": [\n", 4, 1);
    check_syntax_position("", 1, 1);
    check_syntax_position("{\"a\": tru}", 1, 10);
    check_syntax_position("{}\n}", 2, 1);
    // CRLF line ends
    check_syntax_position("{\r\n  \"format\": \"collx-tuning\",\r\n  \"version\": 1 1\r\n}", 3, 16);
}
END_TEST

START_TEST(header_errors) {
    EXPECT_ERROR("[1, 2]", "t.json:1: the top level must be an object", "got [1,2]");
    EXPECT_ERROR("\n\n  17", "t.json:3: the top level must be an object", "got 17");
    EXPECT_ERROR("{\n  \"version\": 1,\n  \"rules\": []\n}", "t.json:1: \"format\" is missing");
    EXPECT_ERROR("{\n  \"format\": \"collx-tunning\",\n  \"version\": 1,\n  \"rules\": []\n}",
                 "t.json:2: \"format\" must be \"collx-tuning\", got \"collx-tunning\"");
    EXPECT_ERROR("{\n  \"format\": 1,\n  \"version\": 1,\n  \"rules\": []\n}",
                 "t.json:2: \"format\" must be \"collx-tuning\", got 1");
    EXPECT_ERROR("{\n  \"format\": \"collx-tuning\",\n  \"rules\": []\n}",
                 "t.json:1: \"version\" is missing");
    EXPECT_ERROR("{\n  \"format\": \"collx-tuning\",\n  \"version\": 2,\n  \"rules\": []\n}",
                 "t.json:3: \"version\" must be 1", "got 2");
    EXPECT_ERROR("{\n  \"format\": \"collx-tuning\",\n  \"version\": \"1\",\n  \"rules\": []\n}",
                 "t.json:3: \"version\" must be 1", "got \"1\"");
    EXPECT_ERROR("{\n  \"format\": \"collx-tuning\",\n  \"version\": 1.0,\n  \"rules\": []\n}",
                 "t.json:3: \"version\" must be 1", "got 1.0");
    EXPECT_ERROR("{\n  \"format\": \"collx-tuning\",\n  \"version\": 1\n}",
                 "t.json:1: \"rules\" is missing");
    EXPECT_ERROR(
        "{\n  \"format\": \"collx-tuning\",\n  \"version\": 1,\n  \"rules\": {\"collective\": "
        "\"bcast\"}\n}",
        "t.json:4: \"rules\" must be an array, got {\"collective\":\"bcast\"}");
    EXPECT_ERROR(
        "{\n  \"format\": \"collx-tuning\",\n  \"version\": 1,\n  \"rule\": []\n}",
        "t.json:4: unknown key \"rule\" (allowed: format, version, comment, generated_by, rules)",
        "did you mean \"rules\"?");
    EXPECT_ERROR(
        "{\n  \"format\": \"collx-tuning\",\n  \"version\": 1,\n  \"comment\": 5,\n  \"rules\": "
        "[]\n}",
        "t.json:4: \"comment\" must be a string, got 5");
    EXPECT_ERROR(
        "{\n  \"format\": \"collx-tuning\",\n  \"version\": 1,\n  \"generated_by\": null,\n  "
        "\"rules\": []\n}",
        "t.json:4: \"generated_by\" must be a string, got null");
    EXPECT_ERROR(
        "{\n  \"format\": \"collx-tuning\",\n  \"version\": 1,\n  \"rules\": [],\n  \"version\": "
        "1\n}",
        "t.json:5: duplicate key \"version\" (first given on line 3)");
}
END_TEST

START_TEST(rule_errors) {
    const std::string ok = "    {\"collective\": \"bcast\"},\n";  // line 5: rule 1
    // rule 2 on line 6 in every case below
    EXPECT_ERROR(doc(ok + "    5"), "t.json:6: rule 2: must be an object, got 5");
    EXPECT_ERROR(doc(ok + "    [\"bcast\"]"),
                 "t.json:6: rule 2: must be an object, got [\"bcast\"]");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"segment_size\": 4}"),
                 "t.json:6: rule 2: unknown key \"segment_size\" (allowed: collective, nodes, "
                 "ranks_per_node, bytes, algorithm, segment_bytes, low, up, low_algorithm, up_algorithm, comment); did you mean "
                 "\"segment_bytes\"?");
    EXPECT_ERROR(
        doc(ok + "    {\"collective\": \"bcast\", \"zzzzzzzz\": 4}"),
        "t.json:6: rule 2: unknown key \"zzzzzzzz\" (allowed: collective, nodes, ranks_per_node, "
        "bytes, algorithm, segment_bytes, low, up, low_algorithm, up_algorithm, comment)");
    {
        Parsed p(doc(ok + "    {\"collective\": \"bcast\", \"zzzzzzzz\": 4}"));
        ck_assert_msg(!contains(p.err, "did you mean"), "%s", p.err);
    }
    EXPECT_ERROR(doc(ok + "    {\"algorithm\": \"x\"}"),
                 "t.json:6: rule 2: \"collective\" is missing");
    EXPECT_ERROR(
        doc(ok + "    {\"collective\": \"allreduc\"}"),
        "t.json:6: rule 2: unknown collective \"allreduc\" (known: bcast, reduce, allreduce,",
        "alltoall, alltoallv); did you mean \"allreduce\"?");
    EXPECT_ERROR(doc(ok + "    {\"collective\": 3}"),
                 "t.json:6: rule 2: \"collective\" must be a non-empty string, got 3");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"nodes\": \"2\"}"),
                 "t.json:6: rule 2: \"nodes\" must be an integer >= 0 or [min, max] (max an "
                 "integer or null), got \"2\"");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"bytes\": 1.5}"),
                 "t.json:6: rule 2: \"bytes\" must be an integer >= 0 or [min, max]", "got 1.5");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"bytes\": [1, 2, 3]}"),
                 "t.json:6: rule 2: \"bytes\" must be an integer >= 0 or [min, max]",
                 "got [1,2,3]");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"bytes\": [1]}"),
                 "t.json:6: rule 2: \"bytes\" must be", "got [1]");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"bytes\": [null, 5]}"),
                 "t.json:6: rule 2: \"bytes\" min must be an integer >= 0, got null");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"bytes\": [0, \"x\"]}"),
                 "t.json:6: rule 2: \"bytes\" max must be an integer >= 0, got \"x\"");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"nodes\": [8, 2]}"),
                 "t.json:6: rule 2: \"nodes\": min 8 > max 2");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"nodes\": -1}"),
                 "t.json:6: rule 2: \"nodes\" must not be negative, got -1");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"bytes\": [-1, 5]}"),
                 "t.json:6: rule 2: \"bytes\" min must not be negative, got -1");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"ranks_per_node\": [1, -5]}"),
                 "t.json:6: rule 2: \"ranks_per_node\" max must not be negative, got -5");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"segment_bytes\": -1}"),
                 "t.json:6: rule 2: \"segment_bytes\" must be an integer >= 0, got -1");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"segment_bytes\": 1e6}"),
                 "t.json:6: rule 2: \"segment_bytes\" must be an integer >= 0, got 1000000.0");
    EXPECT_ERROR(
        doc(ok + "    {\"collective\": \"bcast\", \"segment_bytes\": 18446744073709551615}"),
        "t.json:6: rule 2: \"segment_bytes\" is too large");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"low\": \"\"}"),
                 "t.json:6: rule 2: \"low\" must be a non-empty string, got \"\"");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"up\": \"\"}"),
                 "t.json:6: rule 2: \"up\" must be a non-empty string, got \"\"");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"algorithm\": \"\"}"),
                 "t.json:6: rule 2: \"algorithm\" must be a non-empty string, got \"\"");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"up_algorithm\": \"binomal\"}"),
                 "t.json:6: rule 2: unknown up_algorithm \"binomal\" (known: module, binomial, "
                 "in_order_binomial, binary, knomial, chain, pipeline, linear, topo, ring, "
                 "recursive_doubling); did you mean \"binomial\"?");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"low_algorithm\": \"\"}"),
                 "t.json:6: rule 2: \"low_algorithm\" must be a non-empty string, got \"\"");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"low_algorithm\": \"adaptx\"}"),
                 "t.json:6: rule 2: unknown low_algorithm \"adaptx\" (known: module,");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"low\": true}"),
                 "t.json:6: rule 2: \"low\" must be a non-empty string, got true");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"comment\": [\"a\"]}"),
                 "t.json:6: rule 2: \"comment\" must be a string, got [\"a\"]");
    EXPECT_ERROR(doc(ok + "    {\"collective\": \"bcast\", \"bytes\": 1, \"bytes\": 2}"),
                 "t.json:6: rule 2: duplicate key \"bytes\" (first given on line 6)");
    // long values are shortened in messages
    EXPECT_ERROR(
        doc(ok + "    {\"collective\": \"bcast\", \"nodes\": \"" + std::string(200, 'x') + "\"}"),
        "got \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...");
}
END_TEST

// The brief's example: the offending value on its own line, later than the
// rule's '{'.
START_TEST(error_line_is_the_offending_value) {
    const std::string body =
        "    {\"collective\": \"bcast\"},\n"                              // 5  rule 1
        "    {\"collective\": \"reduce\"},\n"                             // 6  rule 2
        "    {\n"                                                         // 7  rule 3
        "      \"collective\": \"allreduce\",\n"                          // 8
        "      \"comment\": \"braces { [ } ] and \\\"quotes\\\"\\n\",\n"  // 9
        "      \"nodes\": [\n"                                            // 10
        "        2,\n"                                                    // 11
        "        8\n"                                                     // 12
        "      ],\n"                                                      // 13
        "      \"segment_bytes\": \"64k\"\n"                              // 14
        "    }";                                                          // 15
    EXPECT_ERROR(doc(body),
                 "t.json:14: rule 3: \"segment_bytes\" must be an integer >= 0, got \"64k\"");
    Parsed p(doc(body));
    ck_assert_str_eq(p.err,
                     "t.json:14: rule 3: \"segment_bytes\" must be an integer >= 0, got \"64k\"");

    // element of a multi-line range
    EXPECT_ERROR(doc("    {\"collective\": \"bcast\",\n"  // 5
                     "     \"bytes\": [\n"                // 6
                     "       0,\n"                        // 7
                     "       -4\n"                        // 8
                     "     ]}"),
                 "t.json:8: rule 1: \"bytes\" max must not be negative, got -4");
    // min > max reported where the range starts
    EXPECT_ERROR(doc("    {\"collective\": \"bcast\",\n"  // 5
                     "     \"bytes\":\n"                  // 6
                     "       [9,\n"                       // 7
                     "        1]}"),
                 "t.json:7: rule 1: \"bytes\": min 9 > max 1");
    // a nested object in a wrong place: the line of its '{'
    EXPECT_ERROR(doc("    {\"collective\": \"bcast\",\n"      // 5
                     "     \"comment\": \"}}}\",\n"           // 6
                     "     \"nodes\": {\"a\": {\"b\": [1,\n"  // 7
                     "        {\"c\": \"{\"}]}},\n"           // 8
                     "     \"bytes\": 1}"),
                 "t.json:7: rule 1: \"nodes\" must be an integer >= 0 or [min, max]");
    // an unknown key after multi-line nested junk and strings with braces
    EXPECT_ERROR(doc("    {\"collective\": \"bcast\", \"comment\": \"{\\n\\n{\"},\n"  // 5
                     "    {\"collective\": \"bcast\",\n"                              // 6
                     "     \"comment\": \"\\u007b\\\\\\\"{\",\n"                      // 7
                     "\n"                                                             // 8
                     "     \"lowe\": \"tuned\"}"),                                    // 9
                 "t.json:9: rule 2: unknown key \"lowe\"", "did you mean \"low\"?");
}
END_TEST

// Lines of valid rules wherever they sit: compact, spread, after strings
// full of braces, CRLF, a BOM.
START_TEST(line_tracking) {
    // clang-format off
    const std::string text =
        "\xEF\xBB\xBF{\"format\": \"collx-tuning\", \"comment\": \"{ \\\"rules\\\": [ {\\n} ] }\",\r\n"  // 1
        "\"version\": 1, \"rules\": [{\"collective\": \"bcast\", \"algorithm\": \"a0\"},"     // 2: rule 0
        " {\"collective\": \"bcast\", \"nodes\": 5, \"algorithm\": \"a1\"},\r\n"              // 2: rule 1
        "\r\n"                                                                             // 3
        "  {\"comment\": \"}\\n}\\n}\", \"collective\": \"reduce\", \"algorithm\": \"a2\"}\n"  // 4: rule 2
        "  ,\n"                                                                            // 5
        "  {\n"                                                                            // 6: rule 3
        "    \"collective\":\n"                                                            // 7
        "      \"scan\",\n"                                                                // 8
        "    \"algorithm\"\n"                                                              // 9
        "      :\n"                                                                        // 10
        "      \"a3\"\n"                                                                   // 11
        "  }\n"                                                                            // 12
        "  , { \"collective\" : \"exscan\" , \"bytes\" : [ 0 ,\n"                           // 13: rule 4
        "  null ] , \"algorithm\": \"}{\" } ] }\n";                                        // 14
    // clang-format on
    Parsed p(text);
    ck_assert_msg(p.r != nullptr, "%s", p.err);
    ck_assert_int_eq(look(p.r, "bcast", 1, 1, 0).line, 2);
    ck_assert_int_eq(look(p.r, "bcast", 1, 1, 0).index, 0);
    // a rule that is not first on its line
    ck_assert_msg(collx_rules_count(p.r) == 5, "%zu", collx_rules_count(p.r));
    Rules cpp = Rules::parse(text, "t.json");
    const int rule_lines[] = {2, 2, 4, 6, 13};
    const int algo_lines[] = {2, 2, 4, 11, 14};
    for (int i = 0; i < 5; ++i) {
        ck_assert_msg(cpp[i].line == rule_lines[i], "rule %d: line %d, expected %d", i, cpp[i].line,
                      rule_lines[i]);
        ck_assert_msg(cpp[i].algorithm_line == algo_lines[i],
                      "rule %d: algorithm line %d, expected %d", i, cpp[i].algorithm_line,
                      algo_lines[i]);
    }
    ck_assert_str_eq(look(p.r, "reduce", 1, 1, 0).algorithm, "a2");
    ck_assert_int_eq(look(p.r, "scan", 1, 1, 0).line, 6);
    ck_assert_str_eq(look(p.r, "exscan", 1, 1, 0).algorithm, "}{");
    ck_assert(cpp.comment == std::string("{ \"rules\": [ {\n} ] }"));
    // numbers followed directly by a line end are on their own line
    Parsed q(
        doc("    {\"collective\": \"bcast\", \"nodes\":\n"  // 5
            "     7\n"                                      // 6
            ", \"bytes\": [3,\n"                            // 7
            "1]}"));                                        // 8
    ck_assert_msg(contains(q.err, "t.json:7: rule 1: \"bytes\": min 3 > max 1"), "%s", q.err);
}
END_TEST

// ------------------------------------------------ round trip and C++ API

namespace {

Rules sample_rules() {
    Rules rs("built");
    rs.generated_by = "test_rules";
    rs.comment = "round trip";
    Rule a;
    a.collective = "allreduce";
    a.nodes = RuleRange::between(2, 8);
    a.ranks_per_node = RuleRange::exactly(4);
    a.bytes = RuleRange::between(0, 65535);
    a.algorithm = "pipelined";
    a.segment_bytes = 65536;
    a.low = "tuned";
    a.up = "adaptx,^hanx";
    a.comment = "quotes \" and braces {}\nnewline";
    rs.add(a);
    Rule b;
    b.collective = "allreduce";
    b.bytes = RuleRange::at_least(65536);
    b.segment_bytes = 0;
    rs.add(b);
    Rule c;
    c.collective = "bcast";
    c.nodes = RuleRange::at_least(3);
    c.algorithm = "x";
    rs.add(c);
    Rule d;
    d.collective = "bcast";
    rs.add(d);
    Rule e;
    e.collective = "reduce_scatter_block";
    e.ranks_per_node = RuleRange::between(1, 1);
    e.bytes = RuleRange::between(5, 5);
    e.up = "u";
    e.low_algorithm = "module";
    e.up_algorithm = "knomial";
    rs.add(e);
    return rs;
}

void same_lookups(const Rules &x, const Rules &y) {
    const long long counts[] = {-1, 0, 1, 2, 3, 4, 5, 8, 9, 1000};
    const unsigned long long sizes[] = {0, 1, 4, 5, 6, 65535, 65536, 1ULL << 40, ULLONG_MAX};
    for (const auto &coll : collx::rule_collectives())
        for (long long n : counts)
            for (long long rpn : counts)
                for (unsigned long long b : sizes) {
                    auto i = x.find(coll, n, rpn, b), j = y.find(coll, n, rpn, b);
                    ck_assert_msg(i == j, "%s %lld %lld %llu: %d vs %d", coll.c_str(), n, rpn, b,
                                  i ? int(*i) : -1, j ? int(*j) : -1);
                    if (!i) continue;
                    const Rule &r = x[*i], &s = y[*j];
                    ck_assert(r.algorithm == s.algorithm && r.segment_bytes == s.segment_bytes &&
                              r.low == s.low && r.up == s.up && r.comment == s.comment &&
                              r.low_algorithm == s.low_algorithm && r.up_algorithm == s.up_algorithm);
                }
}

}  // namespace

START_TEST(round_trip) {
    Rules built = sample_rules();
    std::string dir = temp_dir();
    std::string path = dir + "/tuned.json";
    built.save(path);
    ck_assert_msg(dir_entries(dir).size() == 1, "temp file left behind");
    Rules back = Rules::load(path);
    ck_assert_uint_eq(back.size(), built.size());
    ck_assert(back.to_json() == built.to_json());
    ck_assert(back.generated_by == std::string("test_rules"));
    same_lookups(built, back);
    // spot checks through the C API on the saved file
    char err[512];
    collx_rules_t *r = collx_rules_load(path.c_str(), err, sizeof err);
    ck_assert_msg(r != nullptr, "%s", err);
    ck_assert_str_eq(look(r, "allreduce", 2, 4, 65535).algorithm, "pipelined");
    ck_assert_int_eq(look(r, "allreduce", 2, 4, 65536).segment_bytes, 0);
    ck_assert_str_eq(look(r, "reduce_scatter_block", 7, 1, 5).up, "u");
    ck_assert_int_eq(look(r, "reduce_scatter_block", 7, 1, 6).found, 0);
    collx_rules_free(r);
    // written in the documented form: exact values as integers, open ranges with null
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ck_assert_msg(text.rfind("{\n  \"format\": \"collx-tuning\",\n  \"version\": 1,", 0) == 0, "%s",
                  text.c_str());
    ck_assert_msg(contains(text, "\"ranks_per_node\": 4,"), "%s", text.c_str());
    ck_assert_msg(contains(text, "\"bytes\": [\n        65536,\n        null\n      ]"), "%s",
                  text.c_str());
    // saving over an existing file replaces it
    Rules one("one");
    Rule only;
    only.collective = "scatter";
    one.add(only);
    one.save(path);
    ck_assert_uint_eq(Rules::load(path).size(), 1);
    ck_assert_uint_eq(dir_entries(dir).size(), 1);
    // a loaded file saved again gives the same rules
    Rules again = Rules::parse(back.to_string(), "again");
    same_lookups(back, again);
    ck_assert(again.to_json() == back.to_json());
    // unwritable place
    try {
        built.save(dir + "/no/such/dir/x.json");
        ck_abort_msg("saved into a missing directory");
    } catch (const collx::RulesError &e) {
        ck_assert_msg(contains(e.what(), "No such file or directory"), "%s", e.what());
    }
    remove_dir(dir);
}
END_TEST

START_TEST(add_validates) {
    Rules rs("code");
    Rule r;
    r.collective = "allreduc";
    try {
        rs.add(r);
        ck_abort_msg("accepted an unknown collective");
    } catch (const collx::RulesError &e) {
        ck_assert_msg(contains(e.what(), "code: rule 1: unknown collective \"allreduc\""), "%s",
                      e.what());
    }
    r.collective = "allreduce";
    r.nodes = RuleRange::between(5, 4);
    try {
        rs.add(r);
        ck_abort_msg("accepted min > max");
    } catch (const collx::RulesError &e) {
        ck_assert_msg(contains(e.what(), "\"nodes\": min 5 > max 4"), "%s", e.what());
    }
    r.nodes.reset();
    r.low = "";
    try {
        rs.add(r);
        ck_abort_msg("accepted an empty low");
    } catch (const collx::RulesError &e) {
        ck_assert_msg(contains(e.what(), "\"low\" must be a non-empty string"), "%s", e.what());
    }
    r.low.reset();
    r.up_algorithm = "torus";
    try {
        rs.add(r);
        ck_abort_msg("accepted an unknown up_algorithm");
    } catch (const collx::RulesError &e) {
        ck_assert_msg(contains(e.what(), "unknown up_algorithm \"torus\" (known: module, binomial"),
                      "%s", e.what());
    }
    r.up_algorithm.reset();
    r.segment_bytes = -2;
    try {
        rs.add(r);
        ck_abort_msg("accepted a negative segment size");
    } catch (const collx::RulesError &e) {
        ck_assert_msg(contains(e.what(), "\"segment_bytes\" must be >= 0, got -2"), "%s", e.what());
    }
    ck_assert_uint_eq(rs.size(), 0);
    r.segment_bytes = 0;
    rs.add(r);
    ck_assert_uint_eq(rs.size(), 1);
    ck_assert_ptr_nonnull(rs.lookup("allreduce", 1, 1, 1));
    ck_assert_ptr_null(rs.lookup("bcast", 1, 1, 1));
}
END_TEST

// --------------------------------------------------------- check_algorithms

START_TEST(check_algorithms) {
    Parsed p(
        doc("    {\"collective\": \"allreduce\", \"algorithm\": \"ring\"},\n"   // 5
            "    {\"collective\": \"bcast\", \"algorithm\": \"whatever\"},\n"   // 6
            "    {\"collective\": \"allreduce\"},\n"                            // 7
            "    {\"collective\": \"allreduce\",\n"                             // 8
            "     \"algorithm\": \"ring2\"},\n"                                 // 9
            "    {\"collective\": \"allreduce\", \"algorithm\": \"ring3\"}"));  // 10
    ck_assert_msg(p.r != nullptr, "%s", p.err);
    const char *const known[] = {"ring", "pipelined"};
    char err[512] = "junk";
    ck_assert_int_ne(collx_rules_check_algorithms(p.r, "allreduce", known, 2, err, sizeof err), 0);
    ck_assert_str_eq(
        err,
        "t.json:9: rule 4: unknown algorithm \"ring2\" for allreduce (known: ring, pipelined)");
    const char *const more[] = {"ring", "ring2", "ring3"};
    ck_assert_int_eq(collx_rules_check_algorithms(p.r, "allreduce", more, 3, err, sizeof err), 0);
    ck_assert_str_eq(err, "");
    ck_assert_int_ne(collx_rules_check_algorithms(p.r, "bcast", known, 2, err, sizeof err), 0);
    ck_assert_str_eq(
        err, "t.json:6: rule 2: unknown algorithm \"whatever\" for bcast (known: ring, pipelined)");
    ck_assert_int_ne(collx_rules_check_algorithms(p.r, "bcast", nullptr, 0, err, sizeof err), 0);
    ck_assert_msg(contains(err, "(known: none)"), "%s", err);
    // collectives without algorithm names pass
    ck_assert_int_eq(collx_rules_check_algorithms(p.r, "reduce", nullptr, 0, err, sizeof err), 0);
    ck_assert_int_ne(collx_rules_check_algorithms(p.r, "allreduc", known, 2, err, sizeof err), 0);
    ck_assert_msg(contains(err, "unknown collective \"allreduc\""), "%s", err);
    ck_assert_int_ne(collx_rules_check_algorithms(nullptr, "bcast", known, 2, err, sizeof err), 0);
    ck_assert_int_ne(collx_rules_check_algorithms(p.r, nullptr, known, 2, err, sizeof err), 0);
    ck_assert_int_ne(collx_rules_check_algorithms(p.r, "allreduce", known, 2, nullptr, 0), 0);
}
END_TEST

// ------------------------------------------------------------- C API edges

START_TEST(c_api_edges) {
    ck_assert_uint_eq(collx_rules_count(nullptr), 0);
    ck_assert_str_eq(collx_rules_name(nullptr), "");
    collx_rules_free(nullptr);
    collx_rule_t out;
    ck_assert_int_eq(collx_rules_lookup(nullptr, "bcast", 1, 1, 1, &out), 0);
    ck_assert_int_eq(out.index, -1);
    ck_assert_int_eq(out.segment_bytes, -1);
    // no error buffer, a tiny one, a NULL name
    const std::string bad = doc("    {\"collective\": \"bcast\", \"nodes\": -1}");
    ck_assert_ptr_null(collx_rules_parse(bad.c_str(), "t.json", nullptr, 0));
    char tiny[8];
    ck_assert_ptr_null(collx_rules_parse(bad.c_str(), "t.json", tiny, sizeof tiny));
    ck_assert_str_eq(tiny, "t.json:");
    char err[256];
    ck_assert_ptr_null(collx_rules_parse(bad.c_str(), nullptr, err, sizeof err));
    ck_assert_msg(contains(err, "<string>:5: rule 1:"), "%s", err);
    ck_assert_ptr_null(collx_rules_parse(nullptr, "n", err, sizeof err));
    ck_assert_msg(contains(err, "n: no text"), "%s", err);
    // lookup with a NULL out still answers
    Parsed p(doc("    {\"collective\": \"bcast\"}"));
    ck_assert_int_eq(collx_rules_lookup(p.r, "bcast", 1, 1, 1, nullptr), 1);
    ck_assert_int_eq(collx_rules_lookup(p.r, nullptr, 1, 1, 1, nullptr), 0);
    // the collective table (the core's, which the rules use)
    const char *const *names = collx_coll_names();
    size_t n = 0;
    while (names[n]) ++n;
    ck_assert_uint_eq(n, 16);
    ck_assert_str_eq(names[0], "bcast");
    ck_assert_str_eq(names[15], "alltoallv");
    ck_assert_uint_eq(collx::rule_collectives().size(), 16);
    // every listed name is accepted
    for (size_t i = 0; i < n; ++i) {
        Parsed q(
            doc(std::string("    {\"collective\": \"") + names[i] + "\", \"algorithm\": \"a\"}"));
        ck_assert_msg(q.r != nullptr, "%s", q.err);
        ck_assert_int_eq(look(q.r, names[i], 1, 1, 1).found, 1);
    }
}
END_TEST

START_TEST(concurrent_lookups) {
    std::string body;
    for (int i = 0; i < 200; ++i)
        body += std::string(i ? ",\n" : "") +
                "    {\"collective\": \"allreduce\", \"nodes\": " + std::to_string(i) +
                ", \"algorithm\": \"a" + std::to_string(i) + "\"}";
    Parsed p(doc(body));
    ck_assert_msg(p.r != nullptr, "%s", p.err);
    std::vector<int> bad(4, 0);
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
        ts.emplace_back([&, t] {
            for (int k = 0; k < 20000; ++k) {
                int n = (k * 7 + t) % 250;
                collx_rule_t out;
                int f = collx_rules_lookup(p.r, "allreduce", n, 1, 0, &out);
                if (n < 200 ? (!f || out.index != n ||
                               std::string(out.algorithm) != "a" + std::to_string(n))
                            : f)
                    ++bad[t];
            }
        });
    for (auto &t : ts) t.join();
    for (int t = 0; t < 4; ++t) ck_assert_int_eq(bad[t], 0);
}
END_TEST

// ------------------------------------------------------------- big files

START_TEST(ten_thousand_rules) {
    const int N = 10000;
    std::string body;
    body.reserve(N * 120);
    for (int i = 0; i < N; ++i) {
        body += i ? ",\n" : "";
        body += "    {\"collective\": \"" + std::string(i % 2 ? "bcast" : "allreduce") +
                "\", \"nodes\": " + std::to_string(i) +
                ", \"bytes\": [0, null], \"algorithm\": \"a" + std::to_string(i) +
                "\", \"segment_bytes\": " + std::to_string(i) + "}";
    }
    Parsed p(doc(body));
    ck_assert_msg(p.r != nullptr, "%s", p.err);
    ck_assert_uint_eq(collx_rules_count(p.r), N);
    collx_rule_t last = look(p.r, "bcast", N - 1, 1, 5);
    ck_assert_int_eq(last.index, N - 1);
    ck_assert_int_eq(last.line, 5 + N - 1);
    ck_assert_int_eq(last.segment_bytes, N - 1);
    ck_assert_int_eq(look(p.r, "allreduce", N - 1, 1, 5).found, 0);
    ck_assert_int_eq(look(p.r, "allreduce", N - 2, 1, 5).index, N - 2);
    // an error near the end of a big file names its line
    std::string broken = body;
    broken.replace(broken.rfind("\"segment_bytes\": "), std::strlen("\"segment_bytes\": "),
                   "\"segment_bytes\": -");
    Parsed q(doc(broken));
    ck_assert_ptr_null(q.r);
    std::string want = "t.json:" + std::to_string(5 + N - 1) + ": rule " + std::to_string(N) + ":";
    ck_assert_msg(contains(q.err, want), "%s", q.err);
    // the C++ writer handles it too
    Rules rs = Rules::parse(doc(body), "big");
    Rules back = Rules::parse(rs.to_string(), "big2");
    ck_assert(back.to_json() == rs.to_json());
}
END_TEST

START_TEST(deep_nesting_is_refused) {
    std::string deep =
        doc("    {\"collective\": \"bcast\", \"comment\": " + std::string(100000, '[') +
            std::string(100000, ']') + "}");
    EXPECT_ERROR(deep, "t.json:5: nested more than 64 levels deep");
}
END_TEST

START_TEST(shipped_example_is_valid) {
    const std::string path = std::string(COLLX_TEST_SRCDIR) + "/contrib/tuning/example-hanx.json";
    char err[1024];
    collx_rules_t *r = collx_rules_load(path.c_str(), err, sizeof err);
    ck_assert_msg(r != nullptr, "%s", err);
    ck_assert_uint_gt(collx_rules_count(r), 0);
    collx_rules_free(r);
    Rules rs = Rules::load(path);
    ck_assert_msg(rs.comment.has_value(), "the example should explain itself in \"comment\"");
    Rules back = Rules::parse(rs.to_string(), "again");
    same_lookups(rs, back);
}
END_TEST

int main() {
    Suite *s = suite_create("rules");
    TCase *valid = tcase_create("valid");
    tcase_add_test(valid, every_field_form);
    tcase_add_test(valid, top_level_extras_and_empty_rules);
    tcase_add_test(valid, first_match_in_file_order);
    tcase_add_test(valid, unbounded_max_and_huge_values);
    tcase_add_test(valid, missing_optional_fields_match_anything);
    tcase_add_test(valid, range_boundaries);
    tcase_add_test(valid, line_tracking);
    tcase_add_test(valid, shipped_example_is_valid);
    suite_add_tcase(s, valid);
    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, unreadable_files);
    tcase_add_test(errors, syntax_errors_at_line_and_column);
    tcase_add_test(errors, header_errors);
    tcase_add_test(errors, rule_errors);
    tcase_add_test(errors, error_line_is_the_offending_value);
    tcase_add_test(errors, deep_nesting_is_refused);
    suite_add_tcase(s, errors);
    TCase *api = tcase_create("api");
    tcase_set_timeout(api, 120);
    tcase_add_test(api, round_trip);
    tcase_add_test(api, add_validates);
    tcase_add_test(api, check_algorithms);
    tcase_add_test(api, c_api_edges);
    tcase_add_test(api, concurrent_lookups);
    tcase_add_test(api, ten_thousand_rules);
    suite_add_tcase(s, api);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
