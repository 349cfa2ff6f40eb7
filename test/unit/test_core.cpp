// Unit tests of the collx core (Check): tree shapes, segmentation, and the
// event-driven bcast/reduce executed on a simulated in-process transport
// against sequentially computed references.
// (<filesystem> before check.h, whose fail() macro its streams would meet)
#include <filesystem>

#include <check.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <map>
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "collx/collx.h"
#include "executor.hpp"
#include "sim_transport.hpp"
#include "tree.hpp"

using namespace collx;

// ------------------------------------------------------- machine cache

namespace {
// a fresh directory under /tmp for one test's files, removed with it
struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/collx-machines-XXXXXX";
        const char *d = mkdtemp(tmpl);
        ck_assert_ptr_nonnull(d);
        path = d;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
};

void write_file(const std::string &path, const char *text) {
    FILE *f = std::fopen(path.c_str(), "w");
    ck_assert_ptr_nonnull(f);
    std::fputs(text, f);
    std::fclose(f);
}

std::vector<std::string> file_lines(const std::string &path) {
    std::vector<std::string> lines;
    FILE *f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return lines;
    char buf[1024];
    while (std::fgets(buf, sizeof(buf), f)) lines.emplace_back(buf);
    std::fclose(f);
    return lines;
}
}  // namespace

START_TEST(machine_key_is_the_nodes_in_any_order) {
    const uint64_t a = collx_host_digest("node-a"), b = collx_host_digest("node-b");
    ck_assert(a != b);
    ck_assert(a != 0 && collx_host_digest("") != 0 && collx_host_digest(nullptr) != 0);
    ck_assert(a == collx_host_digest("node-a"));
    // nodes (host, ranks) summed in any order, as an MPI_SUM would
    const uint64_t by = collx_host_digest("hanx measurement 2, Open MPI 4.1.4");
    auto key = [by](std::vector<std::pair<uint64_t, int>> nodes, uint64_t measured_by = 0) {
        uint64_t sum = 0;
        for (const auto &[host, size] : nodes) sum += collx_machine_node_term(host, size);
        return collx_machine_key(sum, static_cast<int>(nodes.size()),
                                 measured_by ? measured_by : by);
    };
    const uint64_t k = key({{a, 2}, {b, 2}});
    ck_assert(k != 0);
    ck_assert(k == key({{b, 2}, {a, 2}}));
    // the same nodes measured another way, or under another Open MPI, are
    // another machine
    ck_assert(k != key({{a, 2}, {b, 2}}, collx_host_digest("hanx measurement 2, Open MPI 5.0.7")));
    ck_assert(k != key({{a, 2}, {b, 2}}, collx_host_digest("hanx measurement 3, Open MPI 4.1.4")));
    ck_assert(k == key({{a, 2}, {b, 2}}, collx_host_digest("hanx measurement 2, Open MPI 4.1.4")));
    // which node holds how many ranks matters, and so do the hosts and
    // the number of nodes
    ck_assert(key({{a, 3}, {b, 1}}) == key({{b, 1}, {a, 3}}));
    ck_assert(key({{a, 3}, {b, 1}}) != key({{a, 1}, {b, 3}}));
    ck_assert(key({{a, 3}, {b, 1}}) != k);
    ck_assert(key({{a, 2}, {a, 2}}) != k);
    ck_assert(key({{a, 2}}) != key({{a, 2}, {b, 0}}));
    ck_assert(key({{a, 2}, {b, 2}, {a, 2}, {b, 2}}) != k);
    // (1-64 nodes of 1-8 ranks: no two keys alike)
    std::vector<uint64_t> keys;
    for (int n = 1; n <= 64; ++n)
        for (int size = 1; size <= 8; ++size) {
            std::vector<std::pair<uint64_t, int>> nodes;
            for (int i = 0; i < n; ++i)
                nodes.emplace_back(collx_host_digest(("n" + std::to_string(i)).c_str()), size);
            keys.push_back(key(nodes));
        }
    std::sort(keys.begin(), keys.end());
    ck_assert(std::adjacent_find(keys.begin(), keys.end()) == keys.end());
}
END_TEST

START_TEST(machine_cache_keeps_and_finds_the_exact_values) {
    const TempDir dir;
    const std::string path = dir.path + "/sub/dir/machines";
    const double v[7] = {1.25e-6, 3.0e-3 / 7, 1e-300, -1, 0.1, 6.02214076e23, 2.5e-7};
    double got[7] = {0};
    ck_assert_int_eq(collx_machine_cache_find(path.c_str(), 42, got, 7), 0);  // no file
    char err[256] = "";
    ck_assert_int_eq(collx_machine_cache_keep(path.c_str(), 42, "2x2", v, 7, err, sizeof(err)), 0);
    ck_assert_int_eq(collx_machine_cache_find(path.c_str(), 42, got, 7), 1);
    ck_assert_int_eq(std::memcmp(got, v, sizeof(v)), 0);  // bit for bit
    ck_assert_int_eq(collx_machine_cache_find(path.c_str(), 43, got, 7), 0);
    ck_assert_int_eq(collx_machine_cache_find(path.c_str(), 42, got, 6), 0);  // another layout
    // another machine beside it; the same key again replaces its line
    double w[7];
    for (int i = 0; i < 7; ++i) w[i] = v[i] * 2;
    ck_assert_int_eq(collx_machine_cache_keep(path.c_str(), 7, "4 x2#", w, 7, err, sizeof(err)), 0);
    ck_assert_int_eq(collx_machine_cache_keep(path.c_str(), 42, "2x2", w, 7, err, sizeof(err)), 0);
    ck_assert_int_eq(collx_machine_cache_find(path.c_str(), 42, got, 7), 1);
    ck_assert_int_eq(std::memcmp(got, w, sizeof(w)), 0);
    const auto lines = file_lines(path);
    ck_assert_uint_eq(lines.size(), 3);  // the header and two machines
    ck_assert(lines[0][0] == '#');
    ck_assert(lines[1].rfind("0000000000000007 4_x2_ ", 0) == 0);  // (a word for people)
    ck_assert(lines[2].rfind("000000000000002a 2x2 ", 0) == 0);
}
END_TEST

START_TEST(machine_cache_ignores_bad_lines_and_keeps_the_newest) {
    const TempDir dir;
    const std::string path = dir.path + "/machines";
    write_file(path,
               "garbage\n"
               "000000000000002a 2x2 1 2 3\n"            // too few values
               "000000000000002a 2x2 1 2 3 4 5 6 7 8\n"  // too many
               "000000000000002a 2x2 1 2 3 4 5 six 7\n"
               "00000000002a 2x2 1 2 3 4 5 6 7\n"        // a short key
               "0000000000000000 2x2 1 2 3 4 5 6 7\n"    // no key is 0
               "000000000000002a 2x2 1 2 3 4 5 6 7\n"
               "# 000000000000002b 2x2 1 2 3 4 5 6 7\n");
    double got[7] = {0};
    ck_assert_int_eq(collx_machine_cache_find(path.c_str(), 42, got, 7), 1);
    ck_assert(got[0] == 1 && got[6] == 7);
    ck_assert_int_eq(collx_machine_cache_find(path.c_str(), 43, got, 7), 0);
    // keeping drops the malformed lines, and beyond COLLX_MACHINE_CACHE_LINES
    // machines the oldest
    const double v[7] = {1, 1, 1, 1, 1, 1, 1};
    char err[256];
    for (uint64_t k = 100; k < 100 + COLLX_MACHINE_CACHE_LINES + 5; ++k)
        ck_assert_int_eq(collx_machine_cache_keep(path.c_str(), k, "x", v, 7, err, sizeof(err)), 0);
    ck_assert_uint_eq(file_lines(path).size(), 1 + COLLX_MACHINE_CACHE_LINES);
    ck_assert_int_eq(collx_machine_cache_find(path.c_str(), 42, got, 7), 0);
    ck_assert_int_eq(collx_machine_cache_find(path.c_str(), 104, got, 7), 0);
    ck_assert_int_eq(collx_machine_cache_find(path.c_str(), 105, got, 7), 1);
    ck_assert_int_eq(collx_machine_cache_find(path.c_str(), 100 + COLLX_MACHINE_CACHE_LINES + 4, got,
                                              7),
                     1);
}
END_TEST

START_TEST(machine_cache_says_why_it_cannot_keep) {
    const TempDir dir;
    const std::string file = dir.path + "/a-file";
    write_file(file, "");
    const double v[7] = {1, 2, 3, 4, 5, 6, 7};
    char err[256] = "";
    // a directory where a file is
    ck_assert_int_eq(collx_machine_cache_keep((file + "/machines").c_str(), 1, "x", v, 7, err,
                                              sizeof(err)),
                     -1);
    ck_assert(std::strstr(err, "cannot make") != nullptr);
    ck_assert_int_eq(collx_machine_cache_keep("", 1, "x", v, 7, err, sizeof(err)), -1);
    double got[7];
    ck_assert_int_eq(collx_machine_cache_find((file + "/machines").c_str(), 1, got, 7), 0);
    // the default place
    char out[4096];
    const std::string home = getenv("HOME") ? getenv("HOME") : "";
    setenv("XDG_CACHE_HOME", "/x/cache", 1);
    ck_assert_int_eq(collx_machine_cache_default(out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/x/cache/collx/machines");
    setenv("XDG_CACHE_HOME", "relative", 1);  // (the spec: absolute only)
    setenv("HOME", "/h", 1);
    ck_assert_int_eq(collx_machine_cache_default(out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/h/.cache/collx/machines");
    ck_assert_int_eq(collx_machine_cache_default(out, 5), -1);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    ck_assert_int_eq(collx_machine_cache_default(out, sizeof(out)), -1);
    ck_assert_str_eq(out, "");
    if (!home.empty()) setenv("HOME", home.c_str(), 1);
}
END_TEST

// ------------------------------------------------------------------ trees

namespace {
const TreeShape all_shapes[] = {
    {TreeKind::Binomial, 2}, {TreeKind::InOrderBinomial, 2}, {TreeKind::Binary, 2},
    {TreeKind::Knomial, 3},  {TreeKind::Knomial, 4},         {TreeKind::Chain, 1},
    {TreeKind::Chain, 3},    {TreeKind::Pipeline, 1},        {TreeKind::Linear, 1},
};
}

START_TEST(trees_are_spanning_for_every_size_and_root) {
    for (const TreeShape &sh : all_shapes)
        for (int P = 1; P <= 64; ++P)
            for (int root = 0; root < P; ++root) {
                auto rotated = build_all(P, root, [&](int p, int r, int k) {
                    return tree_node(sh, p, r, k);
                });
                std::string err = validate_tree(rotated, root);
                ck_assert_msg(err.empty(), "%s/%d P=%d root=%d: %s", tree_kind_name(sh.kind),
                              sh.fanout, P, root, err.c_str());
                auto ordered = build_all(P, root, [&](int p, int r, int k) {
                    return ordered_node(sh, p, r, k);
                });
                err = validate_tree(ordered, root);
                ck_assert_msg(err.empty(), "ordered %s/%d P=%d root=%d: %s",
                              tree_kind_name(sh.kind), sh.fanout, P, root, err.c_str());
                auto order = fold_order(ordered, root);
                for (int i = 0; i < P; ++i)
                    ck_assert_msg(order[i] == i, "ordered %s/%d P=%d root=%d: position %d holds %d",
                                  tree_kind_name(sh.kind), sh.fanout, P, root, i, order[i]);
            }
}
END_TEST

// The node numbers of P ranks in one of the topology tests' 4 layouts.
std::vector<int> node_layout(int P, int layout, std::mt19937 &rng) {
    std::vector<int> node(P);
    for (int r = 0; r < P; ++r)
        node[r] = layout == 0   ? r / 4                         // blocks of 4
                  : layout == 1 ? r % 3                         // round-robin on 3
                  : layout == 2 ? 100 - r / 7                   // ids not in rank order
                                : static_cast<int>(rng() % 5);  // random, uneven
    return node;
}

START_TEST(topology_tree_crosses_each_node_boundary_once) {
    std::mt19937 rng(5);
    for (int P = 1; P <= 64; ++P)
        for (int layout = 0; layout < 4; ++layout) {
            const std::vector<int> node = node_layout(P, layout, rng);
            std::vector<int> ids(node);
            std::sort(ids.begin(), ids.end());
            const int nnodes =
                static_cast<int>(std::unique(ids.begin(), ids.end()) - ids.begin());
            for (int root = 0; root < P; ++root) {
                auto all = build_all(P, root, [&](int p, int r, int k) {
                    return topo_node(node.data(), p, r, k);
                });
                std::string err = validate_tree(all, root);
                ck_assert_msg(err.empty(), "topo P=%d layout=%d root=%d: %s", P, layout, root,
                              err.c_str());
                int crossings = 0;
                for (int r = 0; r < P; ++r)
                    for (int c : all[r].children) crossings += node[c] != node[r];
                ck_assert_msg(crossings == nnodes - 1, "topo P=%d layout=%d root=%d: %d crossings",
                              P, layout, root, crossings);
            }
        }
}
END_TEST

// The ring form (topo_ring_node): a spanning tree crossing each node
// boundary once per root, and over all P roots -- the P broadcasts of
// collx_allgather_start -- every rank's data enters every other node once
// and a node's link out carries P minus the next node's ranks: no link
// more than the others, nothing twice.
START_TEST(topology_ring_tree_loads_every_node_link_alike) {
    std::mt19937 rng(6);
    for (int P = 1; P <= 40; ++P)
        for (int layout = 0; layout < 4; ++layout) {
            const std::vector<int> node = node_layout(P, layout, rng);
            std::vector<int> ids(node);
            std::sort(ids.begin(), ids.end());
            ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
            const int nn = static_cast<int>(ids.size());
            auto idx = [&](int r) {
                return static_cast<int>(std::lower_bound(ids.begin(), ids.end(), node[r]) -
                                        ids.begin());
            };
            std::vector<int> members(nn, 0), out(nn, 0), in(nn, 0);
            for (int r = 0; r < P; ++r) ++members[idx(r)];
            const NodeGroups groups = node_groups(node.data(), P);
            for (int root = 0; root < P; ++root) {
                auto all = build_all(P, root, [&](int, int r, int k) {
                    return topo_ring_node(groups, r, k);
                });
                std::string err = validate_tree(all, root);
                ck_assert_msg(err.empty(), "topo ring P=%d layout=%d root=%d: %s", P, layout,
                              root, err.c_str());
                int crossings = 0;
                for (int r = 0; r < P; ++r)
                    for (int c : all[r].children)
                        if (node[c] != node[r]) {
                            ++crossings;
                            ++out[idx(r)];
                            ++in[idx(c)];
                            ck_assert_msg(idx(c) == (idx(r) + 1) % nn,
                                          "P=%d layout=%d root=%d: %d to %d skips a node", P,
                                          layout, root, r, c);
                        }
                ck_assert_int_eq(crossings, nn - 1);
            }
            for (int k = 0; k < nn; ++k) {
                ck_assert_msg(in[k] == P - members[k], "P=%d layout=%d: node %d gets %d blocks",
                              P, layout, k, in[k]);
                ck_assert_msg(out[k] == P - members[(k + 1) % nn],
                              "P=%d layout=%d: node %d sends %d blocks", P, layout, k, out[k]);
            }
        }
}
END_TEST

START_TEST(tree_depths_match_their_shape) {
    for (int P = 1; P <= 64; ++P) {
        auto depth = [&](TreeShape sh) {
            return tree_depth(build_all(P, 0, [&](int p, int r, int k) {
                                  return tree_node(sh, p, r, k);
                              }),
                              0);
        };
        int lg = 0;
        while ((1 << lg) < P) ++lg;
        ck_assert_int_eq(depth({TreeKind::Pipeline, 1}), P - 1);
        ck_assert_int_eq(depth({TreeKind::Linear, 1}), P > 1 ? 1 : 0);
        ck_assert_int_le(depth({TreeKind::Binary, 2}), lg);
        ck_assert_int_le(depth({TreeKind::Knomial, 4}), lg);
        ck_assert_int_le(depth({TreeKind::Chain, 4}), (P + 2) / 4 + 1);
    }
}
END_TEST

START_TEST(binomial_depth_is_logarithmic) {
    for (int P = 1; P <= 64; ++P) {
        auto nodes = build_all(P, 0, binomial_node);
        ck_assert_int_eq(tree_depth(nodes, 0), [&] {
            int m = 0;
            for (int v = 0; v < P; ++v) m = std::max(m, __builtin_popcount(v));
            return m;
        }());
        int maxdepth = 0;
        for (int r = 0; r < P; ++r) {
            int d = 0;
            for (int x = r; nodes[x].parent >= 0; x = nodes[x].parent) ++d;
            maxdepth = std::max(maxdepth, d);
        }
        // rank v sits at depth popcount(v): the deepest is the largest popcount below P
        int lg = 0, maxpop = 0;
        while ((1 << lg) < P) ++lg;
        for (int v = 0; v < P; ++v) maxpop = std::max(maxpop, __builtin_popcount(v));
        ck_assert_int_eq(maxdepth, maxpop);
        ck_assert_int_le(maxdepth, lg);
    }
}
END_TEST

START_TEST(ordered_reduce_folds_in_rank_order) {
    for (int P = 1; P <= 64; ++P)
        for (int root = 0; root < P; ++root) {
            auto nodes = build_all(P, root, ordered_reduce_node);
            auto order = fold_order(nodes, root);
            ck_assert_int_eq((int)order.size(), P);
            for (int i = 0; i < P; ++i)
                ck_assert_msg(order[i] == i, "P=%d root=%d: position %d holds rank %d", P, root,
                              i, order[i]);
        }
}
END_TEST

START_TEST(validator_rejects_broken_trees) {
    auto nodes = build_all(8, 0, binomial_node);
    nodes[5].parent = 3;  // 5 claims a parent that does not list it
    ck_assert(!validate_tree(nodes, 0).empty());
    nodes = build_all(8, 0, binomial_node);
    nodes[4].children.push_back(1);  // 1 reached twice
    ck_assert(!validate_tree(nodes, 0).empty());
    nodes = build_all(4, 0, binomial_node);
    nodes[0].children.clear();  // nothing reachable
    ck_assert(!validate_tree(nodes, 0).empty());
}
END_TEST

START_TEST(segmentation_covers_count_exactly) {
    for (std::size_t count : {0ul, 1ul, 2ul, 7ul, 64ul, 1000ul, 4099ul})
        for (std::size_t elem : {1ul, 4ul, 8ul, 24ul})
            for (std::size_t seg : {1ul, 3ul, 64ul, 100ul, 1ul << 20}) {
                Segmentation s(count, elem, seg);
                std::size_t total = 0;
                for (std::size_t i = 0; i < s.nseg; ++i) {
                    ck_assert(s.length(i) >= 1);
                    ck_assert(s.length(i) <= s.per_seg);
                    ck_assert_uint_eq(s.first(i), total);
                    total += s.length(i);
                }
                ck_assert_uint_eq(total, count);
            }
    // huge counts: more than 2^31 elements still segment into int-sized pieces
    Segmentation big((1ul << 33) + 5, 1, 1ul << 40);
    ck_assert(big.per_seg <= (1ul << 31));
    ck_assert_uint_eq(big.first(big.nseg - 1) + big.length(big.nseg - 1), (1ul << 33) + 5);
}
END_TEST

// ------------------------------------------------------ simulated executor

namespace {

collx_dtype_t dtype_of(std::size_t size) {
    collx_dtype_t d{};
    d.size = size;
    d.extent = static_cast<std::ptrdiff_t>(size);
    d.true_lb = 0;
    d.true_extent = static_cast<std::ptrdiff_t>(size);
    return d;
}

// Non-commutative, associative: composition of affine maps x -> a*x + b
// (mod 2^32), element = {a, b}.  (f op g)(x) = f(g(x)).
struct Affine {
    uint32_t a, b;
};
void affine_compose(const void *in, void *inout, std::size_t n) {
    const Affine *f = static_cast<const Affine *>(in);
    Affine *g = static_cast<Affine *>(inout);
    for (std::size_t i = 0; i < n; ++i) g[i] = Affine{f[i].a * g[i].a, f[i].a * g[i].b + f[i].b};
}
void affine_add(const void *in, void *inout, std::size_t n) {  // commutative
    const Affine *f = static_cast<const Affine *>(in);
    Affine *g = static_cast<Affine *>(inout);
    for (std::size_t i = 0; i < n; ++i) g[i] = Affine{f[i].a + g[i].a, f[i].b + g[i].b};
}
Affine value(int rank, std::size_t i) {
    return Affine{static_cast<uint32_t>(2 * (rank * 7919 + i * 31) + 1),
                  static_cast<uint32_t>(rank * 104729 + i * 13 + 5)};
}

bool run_all(sim::World &w, std::vector<std::unique_ptr<Operation>> &ops, std::string &why) {
    for (auto &op : ops) op->start();
    for (long steps = 0;; ++steps) {
        bool all = true;
        int st = 0;
        for (auto &op : ops) {
            if (!op->finished(&st)) {
                all = false;
            } else if (st != COLLX_OK) {
                why = "operation finished with error";
                return false;
            }
        }
        if (all) {
            if (w.unmatched()) {
                why = "finished with unmatched messages";
                return false;
            }
            return true;
        }
        if (!w.step()) {
            why = "deadlock: no transfer can progress";
            return false;
        }
        if (steps > 10000000) {
            why = "runaway";
            return false;
        }
    }
}

struct Shape {
    std::size_t seg_bytes;
    int max_send, max_recv;
};
const int sizes[] = {1, 2, 3, 4, 5, 7, 8, 13, 16};
const std::size_t counts[] = {0, 1, 5, 37, 300};
const Shape shapes[] = {{8, 1, 1}, {24, 2, 3}, {64, 8, 8}, {1 << 20, 4, 4}};
// (tree, fanout) pairs the executor tests run over
const std::pair<int, int> trees[] = {{COLLX_TREE_BINOMIAL, 2}, {COLLX_TREE_IN_ORDER_BINOMIAL, 2},
                                     {COLLX_TREE_BINARY, 2},   {COLLX_TREE_KNOMIAL, 3},
                                     {COLLX_TREE_CHAIN, 2},    {COLLX_TREE_PIPELINE, 1},
                                     {COLLX_TREE_LINEAR, 1},   {COLLX_TREE_TOPO, 2},
                                     {COLLX_TREE_RING, 1},     {COLLX_TREE_RECURSIVE_DOUBLING, 1}};
// node map for the topology-aware tree in executor tests: 3 nodes, round-robin
const int sim_nodes[16] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0};

}  // namespace

START_TEST(bcast_delivers_root_data_everywhere) {
    const collx_dtype_t dt = dtype_of(sizeof(uint32_t));
    unsigned seed = 1;
    for (auto [tree, fanout] : trees)
    for (int P : sizes)
        for (int root = 0; root < P; ++root)
            for (std::size_t count : counts)
                for (const Shape &sh : shapes) {
                    sim::World w(P, seed++);
                    std::vector<std::vector<uint32_t>> buf(P, std::vector<uint32_t>(count + 1));
                    for (int r = 0; r < P; ++r)
                        for (std::size_t i = 0; i <= count; ++i)
                            buf[r][i] = r == root ? uint32_t(i * 2654435761u) : 0xdeadbeef;
                    collx_tuning_t tun{tree, fanout, sh.seg_bytes, sh.max_send, sh.max_recv,
                                       sim_nodes};
                    std::vector<std::unique_ptr<Operation>> ops;
                    for (int r = 0; r < P; ++r)
                        ops.push_back(make_bcast(w.transport(r), buf[r].data(), count, dt, root,
                                                 -17, tun, nullptr));
                    std::string why;
                    ck_assert_msg(run_all(w, ops, why), "%s P=%d root=%d count=%zu seg=%zu: %s",
                                  collx_tree_name(tree), P, root, count, sh.seg_bytes, why.c_str());
                    for (int r = 0; r < P; ++r) {
                        for (std::size_t i = 0; i < count; ++i)
                            ck_assert_msg(buf[r][i] == uint32_t(i * 2654435761u),
                                          "P=%d root=%d count=%zu: rank %d elem %zu wrong", P,
                                          root, count, r, i);
                        ck_assert_msg(buf[r][count] == (r == root ? uint32_t(count * 2654435761u)
                                                                  : 0xdeadbeef),
                                      "wrote past the end");
                    }
                }
}
END_TEST

// collx_allgather_start: every rank's block (sizes uneven and zero, the
// blocks in reverse rank order with gaps between them) reaches every rank
// and nothing else is written, on random delivery orders, with and without
// a node map; the group notifies once, when every part has finished.
START_TEST(allgather_spreads_every_block_once) {
    const collx_dtype_t dt = dtype_of(sizeof(uint32_t));
    unsigned seed = 9000;
    const int layouts[][16] = {{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7},
                               {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0},
                               {5, 5, 5, 1, 1, 9, 9, 9, 9, 1, 5, 0, 0, 0, 0, 0}};
    for (int P : sizes)
        for (int layout = -1; layout < 3; ++layout)
            for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(37)})
                for (const Shape &sh : shapes) {
                    sim::World w(P, seed++);
                    std::vector<std::size_t> cnt(P), dsp(P);
                    std::size_t at = 0;
                    for (int r = P - 1; r >= 0; --r) {  // reverse order, a gap after each
                        cnt[r] = count == 0 ? 0 : count + static_cast<std::size_t>(r % 3) * 5;
                        if (r == 1) cnt[r] = 0;
                        dsp[r] = at;
                        at += cnt[r] + 2;
                    }
                    auto expect = [&](int src, std::size_t i) {
                        return uint32_t(src * 1000003u + i * 2654435761u);
                    };
                    std::vector<std::vector<uint32_t>> buf(P, std::vector<uint32_t>(at, 0xdeadbeef));
                    for (int r = 0; r < P; ++r)
                        for (std::size_t i = 0; i < cnt[r]; ++i) buf[r][dsp[r] + i] = expect(r, i);
                    collx_tuning_t tun{COLLX_TREE_BINOMIAL, 2, sh.seg_bytes, sh.max_send,
                                       sh.max_recv, nullptr};
                    const int *node_of = layout < 0 ? nullptr : layouts[layout];
                    std::vector<collx_op_t *> ops(P, nullptr);
                    std::vector<int> notified(P, 0);
                    auto note = [](void *ctx, int st) {
                        ck_assert_int_eq(st, COLLX_OK);
                        ++*static_cast<int *>(ctx);
                    };
                    for (int r = 0; r < P; ++r) {
                        collx_notify_t nt{note, &notified[r]};
                        ck_assert_int_eq(collx_allgather_start(&w.transport(r), buf[r].data(),
                                                               cnt.data(), dsp.data(), &dt, node_of,
                                                               -100, &tun, &nt, &ops[r]),
                                         COLLX_OK);
                    }
                    for (long steps = 0;; ++steps) {
                        int done = 0, st = COLLX_OK;
                        for (int r = 0; r < P; ++r) {
                            const int fin = collx_op_test(ops[r], &st);
                            ck_assert_int_eq(fin, notified[r]);
                            done += fin;
                        }
                        if (done == P) break;
                        ck_assert_msg(w.step(), "P=%d layout=%d count=%zu seg=%zu: deadlock", P,
                                      layout, count, sh.seg_bytes);
                        ck_assert(steps < 10000000);
                    }
                    ck_assert(!w.unmatched());
                    for (int r = 0; r < P; ++r) {
                        ck_assert_int_eq(notified[r], 1);
                        collx_op_free(ops[r]);
                        std::vector<uint32_t> want(at, 0xdeadbeef);
                        for (int s = 0; s < P; ++s)
                            for (std::size_t i = 0; i < cnt[s]; ++i) want[dsp[s] + i] = expect(s, i);
                        ck_assert_msg(buf[r] == want, "P=%d layout=%d count=%zu seg=%zu: rank %d",
                                      P, layout, count, sh.seg_bytes, r);
                    }
                }
}
END_TEST

static void check_reduce(bool commutative, bool in_place, bool all) {
    const collx_dtype_t dt = dtype_of(sizeof(Affine));
    sim::Op op{commutative ? affine_add : affine_compose};
    unsigned seed = (commutative ? 1000 : 2000) + (all ? 500 : 0);
    for (auto [tree, fanout] : trees)
    for (int P : sizes)
        for (int root = 0; root < (all ? 1 : P); ++root)
            for (std::size_t count : counts)
                for (const Shape &sh : shapes) {
                    sim::World w(P, seed++);
                    std::vector<std::vector<Affine>> in(P, std::vector<Affine>(count));
                    std::vector<std::vector<Affine>> out(P, std::vector<Affine>(count + 1,
                                                                                Affine{7, 7}));
                    for (int r = 0; r < P; ++r)
                        for (std::size_t i = 0; i < count; ++i) in[r][i] = value(r, i);
                    for (int r = 0; r < P; ++r)
                        if (in_place && (all || r == root))
                            std::copy(in[r].begin(), in[r].end(), out[r].begin());
                    collx_tuning_t tun{tree, fanout, sh.seg_bytes, sh.max_send, sh.max_recv,
                                       sim_nodes};
                    std::vector<std::unique_ptr<Operation>> ops;
                    for (int r = 0; r < P; ++r) {
                        const void *sb = (in_place && (all || r == root)) ? nullptr : in[r].data();
                        ops.push_back(make_reduce(w.transport(r), sb, out[r].data(), count, dt,
                                                  &op, commutative, root, all, -21, tun, nullptr));
                    }
                    std::string why;
                    ck_assert_msg(run_all(w, ops, why), "%s P=%d root=%d count=%zu: %s",
                                  collx_tree_name(tree), P, root, count, why.c_str());
                    for (int r = 0; r < P; ++r) {
                        const bool gets = all || r == root;
                        if (!gets) {  // non-roots' recvbuf untouched
                            if (count) ck_assert(out[r][0].a == 7);
                            continue;
                        }
                        for (std::size_t i = 0; i < count; ++i) {
                            Affine ref = value(P - 1, i);  // fold right to left
                            for (int q = P - 2; q >= 0; --q) {
                                Affine v = value(q, i);
                                op.fn(&v, &ref, 1);
                            }
                            ck_assert_msg(out[r][i].a == ref.a && out[r][i].b == ref.b,
                                          "%s %s%s%s P=%d root=%d count=%zu seg=%zu rank %d "
                                          "elem %zu wrong",
                                          collx_tree_name(tree),
                                          commutative ? "commutative" : "ordered",
                                          in_place ? " in-place" : "", all ? " allreduce" : "", P,
                                          root, count, sh.seg_bytes, r, i);
                        }
                        ck_assert(out[r][count].a == 7 && out[r][count].b == 7);
                    }
                }
}

START_TEST(reduce_commutative) { check_reduce(true, false, false); }
END_TEST
START_TEST(reduce_commutative_in_place) { check_reduce(true, true, false); }
END_TEST
START_TEST(reduce_non_commutative_keeps_rank_order) { check_reduce(false, false, false); }
END_TEST
START_TEST(reduce_non_commutative_in_place) { check_reduce(false, true, false); }
END_TEST
START_TEST(allreduce_commutative) { check_reduce(true, false, true); }
END_TEST
START_TEST(allreduce_commutative_in_place) { check_reduce(true, true, true); }
END_TEST
START_TEST(allreduce_non_commutative) { check_reduce(false, false, true); }
END_TEST
START_TEST(allreduce_non_commutative_in_place) { check_reduce(false, true, true); }
END_TEST

// Reductions are deterministic: the same float inputs on the same ranks
// give bitwise the same result whatever order the messages arrive in (each
// seed of the simulated world is another interleaving).  Summing floats of
// wildly different magnitudes makes every change of folding order visible.
void float_sum(const void *in, void *inout, std::size_t n) {
    const float *a = static_cast<const float *>(in);
    float *b = static_cast<float *>(inout);
    for (std::size_t i = 0; i < n; ++i) b[i] += a[i];
}

static void check_deterministic(bool all, bool in_place) {
    const collx_dtype_t dt = dtype_of(sizeof(float));
    sim::Op op{float_sum};
    const std::size_t count = 67;
    for (auto [tree, fanout] : trees)
        for (int P : {3, 5, 8, 13})
            for (int root : {0, P - 1}) {
                if (all && root) continue;
                std::mt19937 gen(P * 131 + root);
                std::uniform_real_distribution<float> mant(-1.f, 1.f);
                std::uniform_int_distribution<int> ex(-20, 20);
                std::vector<std::vector<float>> in(P, std::vector<float>(count));
                for (auto &v : in)
                    for (float &x : v) x = std::ldexp(mant(gen), ex(gen));
                std::vector<float> first;
                for (unsigned seed = 1; seed <= 24; ++seed) {
                    sim::World w(P, seed * 7919u + P);
                    std::vector<std::vector<float>> out(P, std::vector<float>(count, 0.f));
                    collx_tuning_t tun{tree, fanout, 4 * sizeof(float), 3, 3, sim_nodes};
                    std::vector<std::unique_ptr<Operation>> ops;
                    for (int r = 0; r < P; ++r) {
                        const bool ip = in_place && (all || r == root);
                        if (ip) out[r] = in[r];
                        ops.push_back(make_reduce(w.transport(r), ip ? nullptr : in[r].data(),
                                                  out[r].data(), count, dt, &op, true, root, all,
                                                  -21, tun, nullptr));
                    }
                    std::string why;
                    ck_assert_msg(run_all(w, ops, why), "%s P=%d: %s", collx_tree_name(tree), P,
                                  why.c_str());
                    for (int r = 0; r < P; ++r) {
                        if (!all && r != root) continue;
                        if (first.empty()) first = out[r];
                        ck_assert_msg(!std::memcmp(first.data(), out[r].data(),
                                                   count * sizeof(float)),
                                      "%s %s%s P=%d root=%d: rank %d's result differs from the "
                                      "first run's (seed %u): not deterministic",
                                      collx_tree_name(tree), all ? "allreduce" : "reduce",
                                      in_place ? " in place" : "", P, root, r, seed);
                    }
                }
            }
}

START_TEST(reduce_is_bitwise_deterministic) { check_deterministic(false, false); }
END_TEST
START_TEST(allreduce_is_bitwise_deterministic) { check_deterministic(true, false); }
END_TEST
START_TEST(allreduce_in_place_is_bitwise_deterministic) { check_deterministic(true, true); }
END_TEST

START_TEST(transport_failure_ends_operation_with_error) {
    const collx_dtype_t dt = dtype_of(4);
    for (int fail_at = 1; fail_at <= 6; ++fail_at) {
        sim::World w(6, 42 + fail_at);
        w.fail_send_number(fail_at);
        std::vector<std::vector<uint32_t>> buf(6, std::vector<uint32_t>(100, 1));
        collx_tuning_t tun{COLLX_TREE_BINOMIAL, 2, 40, 2, 2, nullptr};
        std::vector<std::unique_ptr<Operation>> ops;
        for (int r = 0; r < 6; ++r)
            ops.push_back(make_bcast(w.transport(r), buf[r].data(), 100, dt, 0, -17, tun, nullptr));
        for (auto &op : ops) op->start();
        while (w.step()) {
        }
        // the rank whose send failed must finish (with an error), not hang
        int failed = 0;
        for (auto &op : ops) {
            int st = 0;
            if (op->finished(&st) && st != COLLX_OK) ++failed;
        }
        ck_assert_int_ge(failed, 1);
    }
}
END_TEST

START_TEST(notification_fires_once_after_completion) {
    const collx_dtype_t dt = dtype_of(4);
    struct Seen {
        int calls = 0, status = -99;
    };
    for (int P : {1, 2, 5}) {
        sim::World w(P, 77);
        std::vector<Seen> seen(P);
        std::vector<std::vector<uint32_t>> buf(P, std::vector<uint32_t>(50, 3));
        collx_tuning_t tun{COLLX_TREE_BINARY, 2, 16, 2, 2, nullptr};
        std::vector<collx_op_t *> ops(P);
        for (int r = 0; r < P; ++r) {
            collx_notify_t n{[](void *ctx, int st) {
                                 auto *s = static_cast<Seen *>(ctx);
                                 ++s->calls;
                                 s->status = st;
                             },
                             &seen[r]};
            ck_assert_int_eq(collx_bcast_start(&w.transport(r), buf[r].data(), 50, &dt, 0, -17,
                                               &tun, &n, &ops[r]),
                             COLLX_OK);
        }
        while (w.step()) {
        }
        for (int r = 0; r < P; ++r) {
            int st = -1;
            ck_assert_int_eq(collx_op_test(ops[r], &st), 1);
            ck_assert_int_eq(seen[r].calls, 1);
            ck_assert_int_eq(seen[r].status, COLLX_OK);
            collx_op_free(ops[r]);
        }
    }
}
END_TEST

START_TEST(lp_segment_size_follows_the_model) {
    // s* = sqrt(n alpha / ((P-2) beta)): 1 MiB, 10 us, 1 ns/B, P = 6 -> 51200 B
    ck_assert_uint_eq(collx_lp_segment_bytes(1 << 20, 6, 10e-6, 1e-9), 51200);
    ck_assert_uint_eq(collx_lp_segment_bytes(1 << 20, 2, 10e-6, 1e-9), 1u << 20);
    ck_assert_uint_eq(collx_lp_segment_bytes(100, 64, 1e-6, 1e-9), 100);  // never above n
    ck_assert_uint_eq(collx_lp_segment_bytes(1 << 30, 1000, 1e-9, 1e-6), 1024);  // floor
    // grows like sqrt(n)
    ck_assert_uint_eq(collx_lp_segment_bytes(4u << 20, 6, 10e-6, 1e-9) / 2,
                      collx_lp_segment_bytes(1u << 20, 6, 10e-6, 1e-9));
}
END_TEST

// ------------------------------------------------ hierarchical plans
//
// collx_hier_plan run symbolically: every rank's buffers hold a count of
// each rank's contribution; the stages of all ranks are played in number
// order, each (number, level, group) as one sub-collective of its members.
// Checks that the members of every communicator agree (every member has
// the stage, with the same kind and root), that a reduction's non-roots
// get no receive buffer, and that the result is exactly one contribution of
// every rank (bcast: the root's data) wherever it must be -- for allgather
// every rank's block, once, in every rank's receive buffer (its node's
// share, COLLX_HBUF_NODE, played as the receive buffer it is part of).

struct HierShape {
    int L;
    std::vector<std::vector<int>> group;  // group[j][r]: r's level-j group id, j < L-1
};

using Counts = std::vector<int>;

struct HierPlay {
    collx_hier_t h{};
    std::vector<std::vector<int>> tab;  // storage of the tables
    int P;
    explicit HierPlay(const HierShape &s) : P(static_cast<int>(s.group[0].size())) {
        h.nlevels = s.L;
        h.size = P;
        tab.assign(2 * s.L, std::vector<int>(P));
        for (int k = 0; k < s.L; ++k) {
            h.leader[k] = tab[k].data();
            h.rank_in[k] = tab[s.L + k].data();
        }
        std::vector<int> lead(static_cast<std::size_t>(P * (s.L - 1)));
        for (int r = 0; r < P; ++r)
            for (int j = 0; j < s.L - 1; ++j) {
                int low = r;  // lowest rank of r's group
                for (int q = 0; q < P; ++q)
                    if (s.group[j][q] == s.group[j][r]) low = std::min(low, q);
                lead[r * (s.L - 1) + j] = low;
            }
        collx_hier_fill(&h, lead.data(), s.L - 1);
    }

    // A rank's place in its node (nodes: the groups of level L-2, in rank
    // order), its group at a stage's level (the rail: the ranks at one
    // place; the node as one communicator) and its rank there.
    int place(int r) const { return collx_hier_place(&h, r); }
    int group(int level, int r) const {
        return level == COLLX_HLEVEL_RAIL ? place(r)
               : level == COLLX_HLEVEL_NODE ? h.leader[h.nlevels - 2][r]
                                            : h.leader[level][r];
    }
    int index_in(int level, int r) const {
        if (level == COLLX_HLEVEL_NODE) return place(r);
        if (level != COLLX_HLEVEL_RAIL) return h.rank_in[level][r];
        int n = 0;
        for (int q = 0; q < r; ++q) n += place(q) == place(r);
        return n;
    }
    int group_size(int level, int r) const {
        if (level != COLLX_HLEVEL_RAIL && level != COLLX_HLEVEL_NODE)
            return collx_hier_level_size(&h, level, r);
        int n = 0;
        for (int q = 0; q < P; ++q) n += group(level, q) == group(level, r);
        return n;
    }

    // Plays coll with root; returns the ranks' final receive buffers.
    std::vector<Counts> play(int coll, int root, int flags) {
        struct Item {
            int rank;
            collx_hier_stage_t st;
        };
        std::vector<Item> items;
        std::vector<std::vector<Counts>> buf(P, std::vector<Counts>(6, Counts(P, 0)));
        for (int r = 0; r < P; ++r) {
            collx_hier_plan_t plan;
            ck_assert_int_eq(collx_hier_plan(&h, coll, r, root, nullptr, flags, &plan), COLLX_OK);
            const bool in_place = (flags & COLLX_HIER_IN_PLACE) &&
                                  (coll == COLLX_COLL_ALLREDUCE || r == root);
            if (coll == COLLX_COLL_BCAST) {
                if (r == root) buf[r][COLLX_HBUF_RECV][root] = 1;
            } else {
                buf[r][in_place ? COLLX_HBUF_RECV : COLLX_HBUF_SEND][r] = 1;
            }
            ck_assert(plan.need_acc || plan.copy_to != COLLX_HBUF_ACC);
            if (plan.copy_to != COLLX_HBUF_NONE) buf[r][plan.copy_to] = buf[r][plan.copy_from];
            for (int i = 0; i < plan.nstages; ++i) {
                ck_assert(plan.need_acc || (plan.st[i].sbuf != COLLX_HBUF_ACC &&
                                            plan.st[i].rbuf != COLLX_HBUF_ACC));
                // allgather's alone: my node's share, a part of my receive buffer
                ck_assert(plan.st[i].rbuf != COLLX_HBUF_NODE || coll == COLLX_COLL_ALLGATHER);
                if (plan.st[i].rbuf == COLLX_HBUF_NODE) plan.st[i].rbuf = COLLX_HBUF_RECV;
                for (int j = 0; j < i; ++j) ck_assert_int_ne(plan.st[i].number, plan.st[j].number);
                items.push_back({r, plan.st[i]});
            }
        }
        std::stable_sort(items.begin(), items.end(),
                         [](const Item &a, const Item &b) { return a.st.number < b.st.number; });
        std::vector<bool> used(items.size(), false);
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (used[i]) continue;
            const collx_hier_stage_t &s = items[i].st;
            std::vector<const Item *> g;  // the sub-collective's members
            for (std::size_t j = i; j < items.size() && items[j].st.number == s.number; ++j) {
                const Item &o = items[j];
                const bool same = o.st.level == s.level &&
                                  (s.level == COLLX_HLEVEL_P2P ||
                                   group(s.level, o.rank) == group(s.level, items[i].rank));
                if (!same) continue;
                used[j] = true;
                g.push_back(&o);
            }
            if (s.level == COLLX_HLEVEL_P2P) {  // one message
                ck_assert_int_eq(static_cast<int>(g.size()), 2);
                const Item *snd = g[0]->st.kind == COLLX_HSTEP_SEND ? g[0] : g[1];
                const Item *rcv = g[0]->st.kind == COLLX_HSTEP_SEND ? g[1] : g[0];
                ck_assert_int_eq(snd->st.kind, COLLX_HSTEP_SEND);
                ck_assert_int_eq(rcv->st.kind, COLLX_HSTEP_RECV);
                ck_assert_int_eq(snd->st.root, rcv->rank);
                ck_assert_int_eq(rcv->st.root, snd->rank);
                buf[rcv->rank][rcv->st.rbuf] = buf[snd->rank][snd->st.sbuf];
                continue;
            }
            const int k = s.level;
            ck_assert_int_eq(static_cast<int>(g.size()), group_size(k, items[i].rank));
            // (an allgather's gather and exchange also on one rank: they
            // put its block in its place)
            if (s.kind != COLLX_HSTEP_GATHERV && s.kind != COLLX_HSTEP_ALLGATHERV)
                ck_assert_int_ge(static_cast<int>(g.size()), 2);
            const Item *groot = nullptr;
            for (const Item *m : g) {
                ck_assert_int_eq(m->st.kind, s.kind);
                ck_assert_int_eq(m->st.root, s.root);
                if (index_in(k, m->rank) == s.root) groot = m;
            }
            ck_assert_ptr_nonnull(groot);
            auto src = [&](const Item *m) -> Counts & {
                return buf[m->rank][m->st.sbuf == COLLX_HBUF_IN_PLACE ? m->st.rbuf : m->st.sbuf];
            };
            switch (s.kind) {
                case COLLX_HSTEP_BCAST: {
                    const Counts data = buf[groot->rank][groot->st.rbuf];
                    for (const Item *m : g) buf[m->rank][m->st.rbuf] = data;
                    break;
                }
                case COLLX_HSTEP_REDUCE:
                case COLLX_HSTEP_ALLREDUCE: {
                    Counts sum(P, 0);
                    for (const Item *m : g) {
                        if (s.kind == COLLX_HSTEP_REDUCE && m != groot) {
                            ck_assert_int_eq(m->st.rbuf, COLLX_HBUF_NONE);
                            ck_assert_int_ne(m->st.sbuf, COLLX_HBUF_IN_PLACE);
                        } else {
                            ck_assert_int_ne(m->st.rbuf, COLLX_HBUF_NONE);
                        }
                        const Counts &c = src(m);
                        for (int q = 0; q < P; ++q) sum[q] += c[q];
                    }
                    for (const Item *m : g)
                        if (s.kind == COLLX_HSTEP_ALLREDUCE || m == groot) buf[m->rank][m->st.rbuf] = sum;
                    break;
                }
                case COLLX_HSTEP_BARRIER: break;
                case COLLX_HSTEP_GATHERV: {  // every member's block into the root's buffer
                    Counts got = buf[groot->rank][groot->st.rbuf];
                    for (const Item *m : g) {
                        ck_assert_int_eq(m->st.sbuf, COLLX_HBUF_SEND);
                        for (int q = 0; q < P; ++q) got[q] += buf[m->rank][m->st.sbuf][q];
                    }
                    buf[groot->rank][groot->st.rbuf] = got;
                    break;
                }
                case COLLX_HSTEP_ALLGATHERV: {  // every member's share to all, in place
                    Counts all(P, 0);
                    for (const Item *m : g) {
                        ck_assert_int_eq(m->st.sbuf, COLLX_HBUF_IN_PLACE);
                        for (int q = 0; q < P; ++q) all[q] += buf[m->rank][m->st.rbuf][q];
                    }
                    for (const Item *m : g) buf[m->rank][m->st.rbuf] = all;
                    break;
                }
                default: ck_abort_msg("unexpected stage kind %d", s.kind);
            }
        }
        std::vector<Counts> out;
        for (int r = 0; r < P; ++r) out.push_back(buf[r][COLLX_HBUF_RECV]);
        return out;
    }
};

START_TEST(hier_plans_run_every_shape_and_root) {
    std::vector<HierShape> shapes;
    auto two = [](std::vector<int> node) { return HierShape{2, {node}}; };
    shapes.push_back(two({0, 0, 1, 1}));                 // 2x2
    shapes.push_back(two({0, 0, 0, 1}));                 // 3+1
    shapes.push_back(two({0, 1, 0, 1, 0}));              // round-robin 3+2
    shapes.push_back(two({0, 1, 2, 0, 1, 2, 0}));        // round-robin 3+2+2
    shapes.push_back(two({0, 1, 2}));                    // one rank per node
    shapes.push_back(two({0, 0, 0}));                    // one node
    shapes.push_back(two({0, 0, 1, 1, 2, 2, 3, 3}));     // 4x2
    shapes.push_back({3, {{0, 0, 1, 1, 2, 2, 3, 3}, {0, 0, 0, 0, 1, 1, 1, 1}}});  // 2x2x2
    shapes.push_back({3, {{0, 0, 0, 1, 2, 2, 2}, {0, 0, 0, 0, 1, 1, 1}}});        // (3+1)+3
    shapes.push_back({3, {{0, 1, 0, 1, 2, 3, 2, 3}, {0, 0, 0, 0, 1, 1, 1, 1}}});  // sockets interleaved
    for (const HierShape &s : shapes) {
        HierPlay hp(s);
        const int P = hp.P;
        for (int root = 0; root < P; ++root) {
            const auto b = hp.play(COLLX_COLL_BCAST, root, 0);
            for (int r = 0; r < P; ++r)
                for (int q = 0; q < P; ++q) ck_assert_int_eq(b[r][q], q == root ? 1 : 0);
            for (int flags : {0, int(COLLX_HIER_IN_PLACE)}) {
                const auto red = hp.play(COLLX_COLL_REDUCE, root, flags);
                for (int q = 0; q < P; ++q) ck_assert_int_eq(red[root][q], 1);
            }
        }
        for (int flags : {0, int(COLLX_HIER_IN_PLACE), int(COLLX_HIER_SPLIT_TOP),
                          COLLX_HIER_IN_PLACE | COLLX_HIER_SPLIT_TOP}) {
            const auto all = hp.play(COLLX_COLL_ALLREDUCE, 0, flags);
            for (int r = 0; r < P; ++r)
                for (int q = 0; q < P; ++q) ck_assert_int_eq(all[r][q], 1);
        }
        hp.play(COLLX_COLL_BARRIER, 0, 0);
        const auto gathered = hp.play(COLLX_COLL_ALLGATHER, 0, 0);  // every block once everywhere
        for (int r = 0; r < P; ++r)
            for (int q = 0; q < P; ++q) ck_assert_int_eq(gathered[r][q], 1);
    }
    // refused: another collective, a root or rank out of range, no tables
    HierPlay hp(shapes[0]);
    collx_hier_plan_t plan;
    ck_assert_int_eq(collx_hier_plan(&hp.h, COLLX_COLL_SCAN, 0, 0, nullptr, 0, &plan), COLLX_ERR_ARG);
    ck_assert_int_eq(collx_hier_plan(&hp.h, COLLX_COLL_BCAST, 0, 4, nullptr, 0, &plan), COLLX_ERR_ARG);
    ck_assert_int_eq(collx_hier_plan(&hp.h, COLLX_COLL_BCAST, -1, 0, nullptr, 0, &plan), COLLX_ERR_ARG);
    collx_hier_t none{};
    ck_assert_int_eq(collx_hier_plan(&none, COLLX_COLL_BCAST, 0, 0, nullptr, 0, &plan), COLLX_ERR_ARG);
}
END_TEST

// Bcast and reduce from a root that does not lead its node, on the root's
// rail (COLLX_HIER_ROOT_RAIL): where the nodes are of one size, the root's
// rail and the nodes, two stages, and the right result on every rank;
// from a node leader, and where the nodes differ in size, the leaders' way
// (the flag is ignored).
START_TEST(hier_root_rail_plans_take_two_stages) {
    auto two = [](std::vector<int> node) { return HierShape{2, {node}}; };
    std::vector<HierShape> shapes{
        two({0, 0, 1, 1}), two({0, 0, 1, 1, 2, 2, 3, 3}), two({0, 1, 2, 0, 1, 2}),  // 2x2, 4x2, 3x2 round-robin
        two({0, 0, 0, 1, 1, 1}),                                                     // 2x3
        {3, {{0, 0, 1, 1, 2, 2, 3, 3}, {0, 0, 0, 0, 1, 1, 1, 1}}},                   // 2 nodes x 2 sockets x 2
        {3, {{0, 1, 0, 1, 2, 3, 2, 3}, {0, 0, 0, 0, 1, 1, 1, 1}}},                   // sockets interleaved
        two({0, 0, 0, 1}), two({0, 1, 0, 1, 0})};                                    // 3+1, 3+2: ignored
    for (const HierShape &s : shapes) {
        HierPlay hp(s);
        const int P = hp.P;
        const bool balanced = collx_hier_split_parts(&hp.h) > 0;
        for (int root = 0; root < P; ++root) {
            const bool on_rail = balanced && hp.place(root) > 0;
            const auto b = hp.play(COLLX_COLL_BCAST, root, COLLX_HIER_ROOT_RAIL);
            for (int r = 0; r < P; ++r)
                for (int q = 0; q < P; ++q) ck_assert_int_eq(b[r][q], q == root ? 1 : 0);
            for (int flags : {int(COLLX_HIER_ROOT_RAIL), COLLX_HIER_ROOT_RAIL | COLLX_HIER_IN_PLACE}) {
                const auto red = hp.play(COLLX_COLL_REDUCE, root, flags);
                for (int q = 0; q < P; ++q) ck_assert_int_eq(red[root][q], 1);
            }
            for (int coll : {COLLX_COLL_BCAST, COLLX_COLL_REDUCE})
                for (int r = 0; r < P; ++r) {
                    collx_hier_plan_t with, without;
                    ck_assert_int_eq(collx_hier_plan(&hp.h, coll, r, root, nullptr, COLLX_HIER_ROOT_RAIL, &with), COLLX_OK);
                    ck_assert_int_eq(collx_hier_plan(&hp.h, coll, r, root, nullptr, 0, &without), COLLX_OK);
                    bool rail = false;
                    for (int i = 0; i < with.nstages; ++i) rail = rail || with.st[i].level == COLLX_HLEVEL_RAIL;
                    ck_assert_msg(rail == (on_rail && hp.place(r) == hp.place(root)), "root %d rank %d", root, r);
                    if (on_rail) {
                        ck_assert_int_le(with.nstages, 2);
                    } else {  // the leaders' way, as without the flag
                        ck_assert_int_eq(with.nstages, without.nstages);
                        for (int i = 0; i < with.nstages; ++i)
                            ck_assert(std::memcmp(&with.st[i], &without.st[i], sizeof(with.st[i])) == 0);
                    }
                }
        }
    }
}
END_TEST

// A rank's place in its node, computed by collx_hier_place from the
// tables alone, filled by collx_hier_fill into h.place, and counted here
// independently agree; so do the cached split parts and the plans made
// with and without the optional tables (hanx and the simulator pass them,
// the tests above do not).
START_TEST(hier_place_tables_agree) {
    auto two = [](std::vector<int> node) { return HierShape{2, {node}}; };
    const std::vector<HierShape> shapes{
        two({0, 0, 1, 1}), two({0, 1, 2, 0, 1, 2}), two({0, 0, 0, 1}), two({0, 1, 0, 1, 0}),
        {3, {{0, 0, 1, 1, 2, 2, 3, 3}, {0, 0, 0, 0, 1, 1, 1, 1}}},
        {3, {{0, 1, 0, 1, 2, 3, 2, 3}, {0, 0, 0, 0, 1, 1, 1, 1}}},
        // sockets and nodes interleaved
        {3, {{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}, {0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1}}}};
    for (const HierShape &s : shapes) {
        HierPlay bare(s), with(s);
        const int P = bare.P, L = s.L;
        std::vector<int> place(P, -1);
        with.h.place = place.data();
        with.h.parts = with.h.parts_known = 0;
        std::vector<int> lead(static_cast<std::size_t>(P * (L - 1)));
        for (int r = 0; r < P; ++r)
            for (int j = 0; j < L - 1; ++j) lead[r * (L - 1) + j] = with.h.leader[j][r];
        collx_hier_fill(&with.h, lead.data(), L - 1);
        collx_hier_t unknown = bare.h;
        unknown.parts_known = 0;
        unknown.parts = -7;
        ck_assert_int_eq(with.h.parts, collx_hier_split_parts(&unknown));
        ck_assert_int_eq(bare.h.parts, collx_hier_split_parts(&unknown));
        for (int r = 0; r < P; ++r) {
            int n = 0;
            for (int q = 0; q < r; ++q) n += s.group[L - 2][q] == s.group[L - 2][r];
            ck_assert_int_eq(place[r], n);
            ck_assert_int_eq(collx_hier_place(&bare.h, r), n);
        }
        for (int coll : {COLLX_COLL_BCAST, COLLX_COLL_REDUCE})
            for (int root = 0; root < P; ++root)
                for (int r = 0; r < P; ++r) {
                    collx_hier_plan_t a, b;
                    ck_assert_int_eq(collx_hier_plan(&unknown, coll, r, root, nullptr,
                                                     COLLX_HIER_ROOT_RAIL, &a), COLLX_OK);
                    ck_assert_int_eq(collx_hier_plan(&with.h, coll, r, root, nullptr,
                                                     COLLX_HIER_ROOT_RAIL, &b), COLLX_OK);
                    ck_assert_int_eq(a.nstages, b.nstages);
                    for (int i = 0; i < a.nstages; ++i)
                        ck_assert(std::memcmp(&a.st[i], &b.st[i], sizeof(a.st[i])) == 0);
                }
    }
}
END_TEST

// Split rails' layout of a reduce_scatter (collx_hier_rail_layout, which
// hanx and the simulator run): the ranks in rail order are a permutation,
// rail by rail, rank order kept inside a rail; the node's chunks are the
// rails' parts and the rail's chunks the pieces of its ranks; and what the
// two reduce-scatters leave a rank -- the rail's chunk at its place in the
// node's chunk at its place -- is, in the vector in rail order, exactly
// the rank's own piece.  On 2 and 3 levels and round-robin placements,
// with empty and uneven pieces; nodes of different sizes are refused.
START_TEST(hier_rail_layout_gives_each_rank_its_piece) {
    auto two = [](std::vector<int> node) { return HierShape{2, {node}}; };
    const std::vector<HierShape> good = {
        two({0, 0, 1, 1}), two({0, 0, 1, 1, 2, 2, 3, 3}), two({0, 1, 2, 0, 1, 2}),
        two({0, 1, 0, 1, 0, 1, 0, 1}), two({0, 0, 0, 1, 1, 1}),
        {3, {{0, 0, 1, 1, 2, 2, 3, 3}, {0, 0, 0, 0, 1, 1, 1, 1}}}};
    for (const HierShape &s : good) {
        HierPlay hp(s);
        const int P = hp.P, S = collx_hier_split_parts(&hp.h), N = P / S;
        ck_assert_int_ge(S, 2);
        for (int pattern = 0; pattern < 3; ++pattern) {
            std::vector<int> rc(static_cast<std::size_t>(P));
            for (int q = 0; q < P; ++q)
                rc[q] = pattern == 0 ? 5 : pattern == 1 ? 2 * q + 1 : (q % 3 == 1 ? 0 : q + 3);
            std::vector<std::size_t> at(static_cast<std::size_t>(P) + 1, 0);  // in rank order
            for (int q = 0; q < P; ++q) at[q + 1] = at[q] + static_cast<std::size_t>(rc[q]);
            for (int r = 0; r < P; ++r) {
                std::vector<int> order(static_cast<std::size_t>(P), -1);
                std::vector<std::size_t> chunks(static_cast<std::size_t>(S + N), 7777);
                std::size_t mine = 99, piece = 99;
                ck_assert_int_eq(collx_hier_rail_layout(&hp.h, r, rc.data(), order.data(),
                                                        chunks.data(), &mine, &piece),
                                 COLLX_OK);
                std::vector<int> seen(static_cast<std::size_t>(P), 0);
                std::vector<std::size_t> pos(static_cast<std::size_t>(P));  // in rail order
                std::size_t o = 0;
                for (int i = 0; i < P; ++i) {
                    const int q = order[i];
                    ck_assert(q >= 0 && q < P && !seen[q]++);
                    ck_assert_int_eq(hp.place(q), i / N);          // rail by rail
                    if (i % N) ck_assert_int_gt(q, order[i - 1]);  // rank order kept
                    pos[q] = o;
                    o += static_cast<std::size_t>(rc[q]);
                }
                ck_assert_uint_eq(o, at[P]);
                std::size_t part_at = 0;
                for (int p = 0; p < S; ++p) {
                    std::size_t sum = 0;
                    for (int q = 0; q < P; ++q) sum += hp.place(q) == p ? rc[q] : 0;
                    ck_assert_uint_eq(chunks[p], sum);
                    if (p < hp.place(r)) part_at += sum;
                }
                ck_assert_uint_eq(mine, part_at);
                for (int k = 0; k < N; ++k)
                    ck_assert_int_eq(static_cast<int>(chunks[S + k]), rc[order[hp.place(r) * N + k]]);
                // what the rings leave me is my piece
                ck_assert_uint_eq(mine + piece, pos[r]);
                ck_assert_int_eq(static_cast<int>(chunks[S + hp.index_in(COLLX_HLEVEL_RAIL, r)]),
                                 rc[r]);
            }
        }
    }
    for (const HierShape &bad : {two({0, 0, 0, 1, 1}), two({0, 0, 0, 0})}) {
        HierPlay hp(bad);
        std::vector<int> rc(static_cast<std::size_t>(hp.P), 1), order(static_cast<std::size_t>(hp.P));
        std::vector<std::size_t> chunks(static_cast<std::size_t>(2 * hp.P));
        std::size_t mine, piece;
        ck_assert_int_eq(collx_hier_rail_layout(&hp.h, 0, rc.data(), order.data(), chunks.data(),
                                                &mine, &piece),
                         COLLX_ERR_ARG);
    }
}
END_TEST

// Split-rail allreduce plans played symbolically chunk by chunk: every
// buffer holds, for each of the S chunks, a count of each rank's
// contribution.  The reduce-scatter gives the node's rank at place i the
// sum of chunk i, the rail (the ranks at place i of every node) sums its
// chunk across the nodes, the allgather spreads each rank's chunk to its
// node.  Every rank must end with one contribution of every rank in every
// chunk, with and without MPI_IN_PLACE, on 2 and 3 levels and round-robin
// placements; shapes whose nodes differ in size are refused.
START_TEST(hier_split_plans_sum_every_chunk) {
    auto two = [](std::vector<int> node) { return HierShape{2, {node}}; };
    const std::vector<HierShape> good = {
        two({0, 0, 1, 1}),                                            // 2x2
        two({0, 0, 1, 1, 2, 2, 3, 3}),                                // 4x2
        two({0, 0, 0, 1, 1, 1}),                                      // 2x3
        two({0, 1, 0, 1}),                                            // round-robin 2x2
        {3, {{0, 0, 1, 1, 2, 2, 3, 3}, {0, 0, 0, 0, 1, 1, 1, 1}}},  // 2 nodes x 2 sockets x 2
        {3, {{0, 1, 2, 3}, {0, 0, 1, 1}}},  // 2 nodes x 2 sockets of one rank
    };
    for (const HierShape &shape : good) {
        HierPlay hp(shape);
        const int P = hp.P, S = collx_hier_split_parts(&hp.h), L = shape.L;
        ck_assert_int_ge(S, 2);
        const int *node_of = hp.h.leader[L - 2];
        std::vector<int> place(P);  // in its node, rank order
        for (int r = 0; r < P; ++r)
            for (int q = 0; q < r; ++q) place[r] += node_of[q] == node_of[r];
        const int node_level = L == 2 ? 0 : COLLX_HLEVEL_NODE;
        for (int flags : {int(COLLX_HIER_SPLIT_RAIL), COLLX_HIER_SPLIT_RAIL | COLLX_HIER_IN_PLACE}) {
            using Chunks = std::vector<Counts>;
            std::vector<std::vector<Chunks>> buf(P, std::vector<Chunks>(5, Chunks(S, Counts(P, 0))));
            struct Item {
                int rank;
                collx_hier_stage_t st;
            };
            std::vector<Item> items;
            for (int r = 0; r < P; ++r) {
                collx_hier_plan_t plan;
                ck_assert_int_eq(collx_hier_plan(&hp.h, COLLX_COLL_ALLREDUCE, r, 0, nullptr, flags, &plan),
                                 COLLX_OK);
                const int data = (flags & COLLX_HIER_IN_PLACE) ? COLLX_HBUF_RECV : COLLX_HBUF_SEND;
                for (int c = 0; c < S; ++c) buf[r][data][c][r] = 1;
                if (plan.copy_to != COLLX_HBUF_NONE) buf[r][plan.copy_to] = buf[r][plan.copy_from];
                ck_assert_int_eq(plan.need_acc, (flags & COLLX_HIER_IN_PLACE) ? 1 : 0);
                for (int i = 0; i < plan.nstages; ++i) {
                    // the reduce-scatter never reads the buffer it writes
                    if (plan.st[i].kind == COLLX_HSTEP_REDUCE_SCATTER)
                        ck_assert_int_ne(plan.st[i].sbuf, plan.st[i].rbuf);
                    items.push_back({r, plan.st[i]});
                }
            }
            std::stable_sort(items.begin(), items.end(),
                             [](const Item &a, const Item &b) { return a.st.number < b.st.number; });
            // one sub-collective per (number, group): nodes by leader,
            // rails by place in the node
            auto group_of = [&](const Item &it) {
                return it.st.level == COLLX_HLEVEL_RAIL ? place[it.rank] : node_of[it.rank];
            };
            std::vector<bool> used(items.size(), false);
            for (std::size_t i = 0; i < items.size(); ++i) {
                if (used[i]) continue;
                std::vector<const Item *> g;
                for (std::size_t j = i; j < items.size() && items[j].st.number == items[i].st.number; ++j)
                    if (!used[j] && items[j].st.level == items[i].st.level &&
                        group_of(items[j]) == group_of(items[i])) {
                        used[j] = true;
                        g.push_back(&items[j]);
                    }
                const collx_hier_stage_t &s = items[i].st;
                for (const Item *m : g) ck_assert_int_eq(m->st.kind, s.kind);
                auto at = [&](const Item *m) { return place[m->rank]; };
                switch (s.kind) {
                    case COLLX_HSTEP_REDUCE_SCATTER: {
                        ck_assert_int_eq(s.level, node_level);
                        ck_assert_int_eq(static_cast<int>(g.size()), S);
                        ck_assert_int_eq(s.chunk, 1);
                        for (const Item *m : g) {
                            Counts sum(P, 0);
                            for (const Item *o : g)
                                for (int q = 0; q < P; ++q) sum[q] += buf[o->rank][o->st.sbuf][at(m)][q];
                            buf[m->rank][m->st.rbuf][at(m)] = sum;
                        }
                        break;
                    }
                    case COLLX_HSTEP_ALLREDUCE: {
                        ck_assert_int_eq(s.level, COLLX_HLEVEL_RAIL);
                        ck_assert_int_eq(s.chunk, 1);
                        ck_assert_int_eq(static_cast<int>(g.size()), P / S);  // one per node
                        const int c = at(g[0]);
                        Counts sum(P, 0);
                        for (const Item *o : g) {
                            ck_assert_int_eq(o->st.sbuf, COLLX_HBUF_IN_PLACE);
                            for (int q = 0; q < P; ++q) sum[q] += buf[o->rank][o->st.rbuf][c][q];
                        }
                        for (const Item *o : g) buf[o->rank][o->st.rbuf][c] = sum;
                        break;
                    }
                    case COLLX_HSTEP_ALLGATHER: {
                        ck_assert_int_eq(s.level, node_level);
                        ck_assert_int_eq(static_cast<int>(g.size()), S);
                        for (const Item *m : g)
                            for (const Item *o : g)
                                buf[o->rank][o->st.rbuf][at(m)] = buf[m->rank][m->st.rbuf][at(m)];
                        break;
                    }
                    default: ck_abort_msg("unexpected stage kind %d in a split plan", s.kind);
                }
            }
            for (int r = 0; r < P; ++r)
                for (int c = 0; c < S; ++c)
                    for (int q = 0; q < P; ++q) ck_assert_int_eq(buf[r][COLLX_HBUF_RECV][c][q], 1);
        }
    }
    // groups of different sizes, one group, one rank per group: no split plan
    for (const HierShape &shape : {two({0, 0, 0, 1}), two({0, 0, 0}), two({0, 1, 2})}) {
        HierPlay hp(shape);
        ck_assert_int_eq(collx_hier_split_parts(&hp.h), 0);
        collx_hier_plan_t plan;
        ck_assert_int_eq(collx_hier_plan(&hp.h, COLLX_COLL_ALLREDUCE, 0, 0, nullptr,
                                         COLLX_HIER_SPLIT_RAIL, &plan),
                         COLLX_ERR_ARG);
    }
    // chunks: contiguous, covering n, lengths differing by at most one
    for (size_t n = 0; n < 40; ++n)
        for (int parts = 1; parts <= 6; ++parts) {
            size_t next = 0;
            for (int i = 0; i < parts; ++i) {
                size_t first, count;
                collx_hier_chunk(n, parts, i, &first, &count);
                ck_assert_uint_eq(first, next);
                ck_assert(count == n / parts || count == n / parts + 1);
                next = first + count;
            }
            ck_assert_uint_eq(next, n);
        }
}
END_TEST

// The front door's cost model: the formulas on hand-computed cases, and
// the choices they make on the emulated shapes' two kinds of links.
START_TEST(cost_model_predicts_and_chooses) {
    const collx_machine_t fast = {0.8, 1e-4, 6, 4e-4, 2.5e-4, 0};  // unlimited emulated links
    const collx_machine_t slow = {0.8, 1e-4, 7, 8e-3, 2.5e-4, 0};  // 1 Gbit/s between nodes
    double us[COLLX_MODEL_COUNT];
    // barrier, 4 nodes x 2: previous lg2*0.8 + lg4*6, hierarchical 2*0.8 + 12
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_BARRIER, 4, 2, 1, 0, 0, COLLX_MODEL_HIER, &fast, us),
                     COLLX_MODEL_HIER);
    ck_assert_double_eq_tol(us[COLLX_MODEL_PREVIOUS], 12.8, 1e-9);
    ck_assert_double_eq_tol(us[COLLX_MODEL_HIER], 13.6, 1e-9);
    ck_assert(us[COLLX_MODEL_SPLIT] < 0 && us[COLLX_MODEL_FLAT_PIPELINE] < 0);
    // bcast of 1 MiB, 2 x 2, in 4 segments of 256 KiB: up 6 + 0.0004 s,
    // down 0.8 + 0.0001 s, the slower stage 3 more times
    const double s = 262144;
    ck_assert_int_ge(collx_model_choose(COLLX_COLL_BCAST, 2, 2, 1, 1 << 20, 262144, COLLX_MODEL_HIER, &fast, us), 0);
    ck_assert_double_eq_tol(us[COLLX_MODEL_HIER], 4 * (6 + 4e-4 * s) + 0.8 + 1e-4 * s, 1e-6);
    ck_assert_double_eq_tol(us[COLLX_MODEL_PREVIOUS], 6 + 4e-4 * 1048576 + 0.8 + 1e-4 * 1048576,
                            1e-6);
    // an 8-byte bcast: the levels; 2 MiB at 1 Gbit/s on 4 x 2: the LP chain
    // (the previous module's binomial tree sends the message twice across)
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_BCAST, 2, 2, 1, 8, 0, COLLX_MODEL_HIER, &fast, us),
                     COLLX_MODEL_HIER);
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_BCAST, 4, 2, 1, 2 << 20, 262144, COLLX_MODEL_HIER, &slow, us),
                     COLLX_MODEL_FLAT_PIPELINE);
    ck_assert(us[COLLX_MODEL_PREVIOUS] > us[COLLX_MODEL_HIER]);
    // allgather: each rank fetching every remote block costs S times the
    // link bytes of the leaders' exchange
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_ALLGATHER, 4, 2, 1, 1 << 18, 0, COLLX_MODEL_HIER, &slow, us),
                     COLLX_MODEL_HIER);
    ck_assert(us[COLLX_MODEL_PREVIOUS] > 1.8 * us[COLLX_MODEL_HIER]);
    // the node ring of 256 KiB blocks on 4 x 2 at 1 Gbit/s: the link's
    // P - S = 6 blocks, slower than a leader's 7 blocks of 8 segments down
    // its node and than the last block's chain, plus a latency; within the
    // margin of the levels (which also move 6 blocks across): each keeps
    // its place as the baseline
    const double nr_link = 6 * 8e-3 * 262144;
    ck_assert_double_eq_tol(us[COLLX_MODEL_NODE_RING], nr_link + 7, 1e-6);
    ck_assert(nr_link > 7 * 8 * (0.8 + 1e-4 * 32768) && nr_link > 3 * (7 + 8e-3 * 32768));
    ck_assert(us[COLLX_MODEL_NODE_RING] < us[COLLX_MODEL_HIER] &&
              us[COLLX_MODEL_NODE_RING] > 0.8 * us[COLLX_MODEL_HIER]);
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_ALLGATHER, 4, 2, 1, 1 << 18, 0,
                                        COLLX_MODEL_NODE_RING, &slow, us),
                     COLLX_MODEL_NODE_RING);
    // on the unlimited links the levels' serial gather and bcast cost more
    // than the node ring's overlapped ones: it takes 2 MiB blocks (measured
    // 0.62-0.83 of the levels' time); 8 B blocks stay on the levels (its
    // chain of latencies, measured 2x theirs); one node: no node ring
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_ALLGATHER, 4, 2, 1, 2 << 20, 0,
                                        COLLX_MODEL_HIER, &fast, us),
                     COLLX_MODEL_NODE_RING);
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_ALLGATHER, 4, 2, 1, 8, 0, COLLX_MODEL_HIER,
                                        &fast, us),
                     COLLX_MODEL_HIER);
    ck_assert(us[COLLX_MODEL_NODE_RING] > 1.5 * us[COLLX_MODEL_HIER]);
    collx_model_choose(COLLX_COLL_ALLGATHER, 1, 4, 1, 1 << 20, 0, COLLX_MODEL_HIER, &fast, us);
    ck_assert(us[COLLX_MODEL_NODE_RING] < 0);
    // alltoall: the same link bytes either way, the leaders' funnel extra:
    // small blocks through the leaders (fewer latencies), large ones direct
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_ALLTOALL, 4, 2, 1, 8, 0, COLLX_MODEL_HIER, &fast, us),
                     COLLX_MODEL_HIER);
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_ALLTOALL, 4, 2, 1, 1 << 20, 0, COLLX_MODEL_HIER, &fast, us),
                     COLLX_MODEL_PREVIOUS);
    // the baseline (hanx's built-in choice: the previous module for alltoall
    // of large blocks) stays unless another is clearly cheaper
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_ALLTOALL, 4, 2, 1, 1 << 20, 0,
                                        COLLX_MODEL_PREVIOUS, &slow, us),
                     COLLX_MODEL_PREVIOUS);
    ck_assert(us[COLLX_MODEL_HIER] < us[COLLX_MODEL_PREVIOUS] * 1.25);
    // reduce_scatter_block of 2 MiB blocks on 4 x 2 at 1 Gbit/s: split rails
    // cheapest (the levels sum the whole vector at each leader first), and
    // the built-in choice stays; small blocks: the levels stay; nodes of
    // different sizes: no split rails; the v-form counts the whole vector;
    // the previous module is no candidate (not modelled)
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_REDUCE_SCATTER_BLOCK, 4, 2, 1, 2 << 20, 0,
                                        COLLX_MODEL_SPLIT, &slow, us),
                     COLLX_MODEL_SPLIT);
    ck_assert(us[COLLX_MODEL_SPLIT] < us[COLLX_MODEL_HIER] && us[COLLX_MODEL_PREVIOUS] < 0);
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_REDUCE_SCATTER_BLOCK, 4, 2, 1, 8, 0,
                                        COLLX_MODEL_HIER, &fast, us),
                     COLLX_MODEL_HIER);
    const double block8 = us[COLLX_MODEL_SPLIT];
    ck_assert(block8 > 0);
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_REDUCE_SCATTER, 4, 2, 1, 64, 0, COLLX_MODEL_HIER,
                                        &fast, us),
                     COLLX_MODEL_HIER);
    ck_assert_double_eq_tol(us[COLLX_MODEL_SPLIT], block8, 1e-9);
    // 4 KiB blocks on 4 x 2: the leaders' recursive halving (lg 4 latencies
    // against the rails' 3) keeps the levels, where split rails measured
    // 1.3-1.8x slower (a ring of the leaders would not)
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_REDUCE_SCATTER_BLOCK, 4, 2, 1, 4096, 0,
                                        COLLX_MODEL_HIER, &fast, us),
                     COLLX_MODEL_HIER);
    ck_assert(us[COLLX_MODEL_SPLIT] < us[COLLX_MODEL_HIER]);
    ck_assert_int_ge(collx_model_choose(COLLX_COLL_REDUCE_SCATTER_BLOCK, 4, 2, 0, 1 << 20, 0,
                                        COLLX_MODEL_HIER, &slow, us),
                     0);
    ck_assert(us[COLLX_MODEL_SPLIT] < 0 && us[COLLX_MODEL_HIER] > 0);
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_ALLTOALL, 4, 2, 1, 512, 0,
                                        COLLX_MODEL_PREVIOUS, &fast, us),
                     COLLX_MODEL_HIER);
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_BCAST, 4, 2, 1, 8, 0, COLLX_MODEL_SPLIT, &fast,
                                        us),
                     COLLX_MODEL_HIER); // (no split bcast: the levels are the baseline)
    // split rails only on balanced nodes, and only for allreduce
    collx_model_choose(COLLX_COLL_ALLREDUCE, 4, 2, 1, 8 << 20, 32768, COLLX_MODEL_HIER, &fast, us);
    ck_assert(us[COLLX_MODEL_SPLIT] > 0);
    collx_model_choose(COLLX_COLL_ALLREDUCE, 4, 2, 0, 8 << 20, 32768, COLLX_MODEL_HIER, &fast, us);
    ck_assert(us[COLLX_MODEL_SPLIT] < 0);
    collx_model_choose(COLLX_COLL_REDUCE, 4, 2, 1, 8 << 20, 65536, COLLX_MODEL_HIER, &fast, us);
    ck_assert(us[COLLX_MODEL_SPLIT] < 0 && us[COLLX_MODEL_FLAT_PIPELINE] > 0);
    // at 1 Gbit/s the rails share the node's link, so per byte the rails'
    // ring moves what the leaders' ring moves; split rails run in their own
    // 256 KiB segments (32 of 8 MiB, chunks c = 128 KiB): the node's
    // reduce-scatter 0.8 + (1e-4 + 2.5e-4) c, the rails' ring
    // 6 (7 + 8e-3 * 2 * c/4) + 3 * 2.5e-4 * c/4, the allgather 0.8 + 1e-4 c,
    // the ring's stage 31 more times; the levels in 32 KiB segments pay 8x
    // the latencies: split 0.91 of them, not enough to leave either baseline
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_ALLREDUCE, 4, 2, 1, 8 << 20, 32768,
                                        COLLX_MODEL_HIER, &slow, us),
                     COLLX_MODEL_HIER);
    const double c = 131072, rails = 6 * (7 + 8e-3 * 2 * c / 4) + 3 * 2.5e-4 * c / 4;
    ck_assert_double_eq_tol(us[COLLX_MODEL_SPLIT],
                            0.8 + 3.5e-4 * c + rails + 0.8 + 1e-4 * c + 31 * rails, 1e-6);
    ck_assert(us[COLLX_MODEL_SPLIT] > 0.85 * us[COLLX_MODEL_HIER] &&
              us[COLLX_MODEL_SPLIT] < us[COLLX_MODEL_HIER]);
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_ALLREDUCE, 4, 2, 1, 8 << 20, 32768,
                                        COLLX_MODEL_SPLIT, &slow, us),
                     COLLX_MODEL_SPLIT);
    // the segment the caller gives is the levels': split rails' stays
    const double split_8m = us[COLLX_MODEL_SPLIT];
    collx_model_choose(COLLX_COLL_ALLREDUCE, 4, 2, 1, 8 << 20, 1 << 20, COLLX_MODEL_HIER, &slow, us);
    ck_assert_double_eq_tol(us[COLLX_MODEL_SPLIT], split_8m, 1e-9);
    // the ring over all ranks: 2(P-1) steps of every 32 KiB segment of a
    // chunk (m/P) through the node's link, and P-1 chunks folded; on 2x2 at
    // 1 Gbit/s it moves 1.5x the leaders' bytes and loses to the levels
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_ALLREDUCE, 2, 2, 1, 8 << 20, 32768,
                                        COLLX_MODEL_HIER, &slow, us),
                     COLLX_MODEL_HIER);
    ck_assert_double_eq_tol(us[COLLX_MODEL_FLAT_RING],
                            6 * 64 * (7 + 8e-3 * 32768) + 3 * 2.5e-4 * (2 << 20), 1e-6);
    ck_assert(us[COLLX_MODEL_FLAT_RING] > 1.4 * us[COLLX_MODEL_HIER]);
    // on 4x2 with unlimited links it beats the levels (tuned's ring, one
    // latency per chunk rather than per segment, more); where it is the
    // baseline (hanx's built-in choice there) it stays at 1 Gbit/s
    collx_model_choose(COLLX_COLL_ALLREDUCE, 4, 2, 1, 8 << 20, 32768, COLLX_MODEL_HIER, &fast, us);
    ck_assert(us[COLLX_MODEL_FLAT_RING] < 0.8 * us[COLLX_MODEL_HIER]);
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_ALLREDUCE, 4, 2, 1, 8 << 20, 32768,
                                        COLLX_MODEL_FLAT_RING, &slow, us),
                     COLLX_MODEL_FLAT_RING);
    collx_model_choose(COLLX_COLL_BCAST, 4, 2, 1, 8 << 20, 262144, COLLX_MODEL_HIER, &fast, us);
    ck_assert(us[COLLX_MODEL_FLAT_RING] < 0);  // (allreduce only)
    // a larger message never costs less
    for (int a = 0; a < COLLX_MODEL_COUNT; ++a) {
        double prev = -1;
        for (size_t b = 8; b <= (8u << 20); b *= 8) {
            collx_model_choose(COLLX_COLL_ALLREDUCE, 4, 2, 1, b, collx_hier_segment_bytes(
                                   COLLX_COLL_ALLREDUCE, b), COLLX_MODEL_HIER, &slow, us);
            if (us[a] < 0) continue;
            ck_assert_msg(us[a] >= prev, "%s: %zu bytes %.1f < %.1f", collx_model_algorithm_name(a),
                          b, us[a], prev);
            prev = us[a];
        }
    }
    // what the model does not cover, and bad arguments
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_GATHER, 4, 2, 1, 8, 0, COLLX_MODEL_HIER, &fast, us), -1);
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_BCAST, 4, 2, 1, 8, 0, COLLX_MODEL_HIER, nullptr, us), -1);
    ck_assert_int_eq(collx_model_choose(COLLX_COLL_BCAST, 0, 2, 1, 8, 0, COLLX_MODEL_HIER, &fast, us), -1);
    ck_assert_str_eq(collx_model_algorithm_name(COLLX_MODEL_FLAT_PIPELINE), "flat:pipeline");
    ck_assert_ptr_null(collx_model_algorithm_name(COLLX_MODEL_COUNT));
}
END_TEST

// When the one flag follows the model: calls whose data take many of the
// link's latencies.
START_TEST(cost_model_bandwidth_bound) {
    const collx_machine_t slow = {0.8, 1e-4, 7, 8e-3, 2.5e-4, 0};  // 1 Gbit/s between nodes
    // 16 latencies of 7 us at 8 ns/B: 14,000 bytes
    ck_assert_int_eq(collx_model_bandwidth_bound(COLLX_COLL_BCAST, &slow, 14000, 8), 1);
    ck_assert_int_eq(collx_model_bandwidth_bound(COLLX_COLL_BCAST, &slow, 13999, 8), 0);
    ck_assert_int_eq(collx_model_bandwidth_bound(COLLX_COLL_REDUCE, &slow, 1 << 20, 8), 1);
    ck_assert_int_eq(collx_model_bandwidth_bound(COLLX_COLL_ALLREDUCE, &slow, 1 << 20, 8), 1);
    ck_assert_int_eq(collx_model_bandwidth_bound(COLLX_COLL_ALLREDUCE, &slow, 8, 8), 0);
    // allgather and alltoall: one rank's block times the ranks
    ck_assert_int_eq(collx_model_bandwidth_bound(COLLX_COLL_ALLGATHER, &slow, 1750, 8), 1);
    ck_assert_int_eq(collx_model_bandwidth_bound(COLLX_COLL_ALLTOALL, &slow, 1749, 8), 0);
    // unlimited emulated links (6 us, 0.4 ns/B): from 240,000 bytes
    const collx_machine_t fast = {0.8, 1e-4, 6, 4e-4, 2.5e-4, 0};
    ck_assert_int_eq(collx_model_bandwidth_bound(COLLX_COLL_BCAST, &fast, 239999, 8), 0);
    ck_assert_int_eq(collx_model_bandwidth_bound(COLLX_COLL_BCAST, &fast, 240000, 8), 1);
    // never a barrier, a collective the model does not decide, no machine
    ck_assert_int_eq(collx_model_bandwidth_bound(COLLX_COLL_BARRIER, &slow, 1 << 20, 8), 0);
    ck_assert_int_eq(collx_model_bandwidth_bound(COLLX_COLL_SCAN, &slow, 1 << 20, 8), 0);
    ck_assert_int_eq(collx_model_bandwidth_bound(COLLX_COLL_BCAST, nullptr, 1 << 20, 8), 0);
}
END_TEST

START_TEST(one_table_of_collectives_and_default_segments) {
    // every name round-trips; unknown names and indices are refused
    const char *const *names = collx_coll_names();
    int n = 0;
    for (; names[n]; ++n) {
        ck_assert_str_eq(collx_coll_name(n), names[n]);
        ck_assert_int_eq(collx_coll_from_name(names[n]), n);
    }
    ck_assert_int_eq(n, COLLX_COLL_COUNT);
    ck_assert_str_eq(collx_coll_name(COLLX_COLL_REDUCE_SCATTER_BLOCK), "reduce_scatter_block");
    ck_assert_ptr_null(collx_coll_name(-1));
    ck_assert_ptr_null(collx_coll_name(COLLX_COLL_COUNT));
    ck_assert_int_eq(collx_coll_from_name("allreduc"), -1);
    ck_assert_int_eq(collx_coll_from_name(nullptr), -1);
    // trees: 64 KiB bcast, 32 KiB reductions
    ck_assert_uint_eq(collx_tree_segment_bytes(COLLX_COLL_BCAST, COLLX_TREE_KNOMIAL, 1 << 20, 8, 4,
                                               2e-6, 8e-12),
                      65536);
    ck_assert_uint_eq(collx_tree_segment_bytes(COLLX_COLL_ALLREDUCE, COLLX_TREE_TOPO, 1 << 20, 8, 4,
                                               2e-6, 8e-12),
                      32768);
    // LP: the longest chain -- P ranks for pipeline, 1 + ceil((P-1)/fanout) for chain
    const double a = COLLX_LP_ALPHA_NS_DEFAULT * 1e-9, b = COLLX_LP_BETA_PS_DEFAULT * 1e-12;
    ck_assert_uint_eq(collx_tree_segment_bytes(COLLX_COLL_BCAST, COLLX_TREE_PIPELINE, 8 << 20, 17,
                                               4, a, b),
                      collx_lp_segment_bytes(8 << 20, 17, a, b));
    ck_assert_uint_eq(collx_tree_segment_bytes(COLLX_COLL_BCAST, COLLX_TREE_CHAIN, 8 << 20, 17, 4,
                                               a, b),
                      collx_lp_segment_bytes(8 << 20, 5, a, b));
    ck_assert_uint_ne(collx_lp_segment_bytes(8 << 20, 5, a, b),
                      collx_lp_segment_bytes(8 << 20, 17, a, b));
    // hanx without a rule: bcast and reduce one segment below 512 KiB, then
    // 256 / 64 KiB; allreduce one segment below 256 KiB, then 32 KiB
    ck_assert_uint_eq(collx_hier_segment_bytes(COLLX_COLL_BCAST, 524287), 0);
    ck_assert_uint_eq(collx_hier_segment_bytes(COLLX_COLL_BCAST, 524288), 262144);
    ck_assert_uint_eq(collx_hier_segment_bytes(COLLX_COLL_REDUCE, 524287), 0);
    ck_assert_uint_eq(collx_hier_segment_bytes(COLLX_COLL_REDUCE, 1 << 20), 65536);
    ck_assert_uint_eq(collx_hier_segment_bytes(COLLX_COLL_ALLREDUCE, 262143), 0);
    ck_assert_uint_eq(collx_hier_segment_bytes(COLLX_COLL_ALLREDUCE, 262144), 32768);
    ck_assert_uint_eq(collx_hier_segment_bytes(COLLX_COLL_ALLREDUCE, 1 << 20), 32768);
    ck_assert_uint_eq(collx_hier_segment_bytes(COLLX_COLL_ALLGATHER, 1 << 20), 0);
    // the levels without a setting: a blocking reduce from 64 KiB on the
    // binomial tree between the leaders, the modules below them and for
    // every other blocking call (and a smaller reduce)
    for (int n : {2, 4}) {
        ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_REDUCE, 65535, 1, n, 0), -1);
        ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_REDUCE, 65536, 1, n, 0), COLLX_TREE_BINOMIAL);
        ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_REDUCE, 64u << 20, 1, n, 0), COLLX_TREE_BINOMIAL);
        ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_REDUCE, 64u << 20, 0, n, 0), -1);
        for (int up : {0, 1}) ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_BCAST, 1 << 20, up, n, 0), -1);
        for (int nb : {0, 1})
            ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_ALLGATHER, 1 << 20, 1, n, nb), -1);
    }
    // a blocking allreduce between two leaders from 4 KiB: the collx
    // recursive doubling; on more leaders, below the leaders, and smaller:
    // the module
    ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_ALLREDUCE, 4095, 1, 2, 0), -1);
    ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_ALLREDUCE, 4096, 1, 2, 0),
                     COLLX_TREE_RECURSIVE_DOUBLING);
    ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_ALLREDUCE, 64u << 20, 1, 2, 0),
                     COLLX_TREE_RECURSIVE_DOUBLING);
    ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_ALLREDUCE, 1 << 20, 0, 2, 0), -1);
    for (int n : {1, 3, 4, 8})
        ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_ALLREDUCE, 1 << 20, 1, n, 0), -1);
    // allgather's leaders on the ring: blocks of 32 KiB or more where the
    // link between nodes costs COLLX_SLOW_LINK_RATIO times or more per
    // byte (1 Gbit/s: 80x the shipped intra-node figure), never on the
    // shipped default machine (4x) or without a machine
    // (machines without a links ratio, 0: their two betas decide)
    const double r = COLLX_SLOW_LINK_RATIO;
    const collx_machine_t slow_links = {0.8, 1e-4, 7, 8e-3, 2.5e-4, 0},
                          fast_links = {0.8, 1e-4, 6, 4e-4, 2.5e-4, 0},
                          above = {0.8, 1e-4, 6, r * 1.02e-4, 2.5e-4, 0},
                          below = {0.8, 1e-4, 6, r * 0.98e-4, 2.5e-4, 0};
    // measured with the other ranks asleep, the links' ratio decides,
    // whatever the busy times per byte (the model's) say
    const collx_machine_t quiet_slow = {0.8, 1e-3, 6, 4e-3, 2.5e-4, r * 1.02},
                          quiet_fast = {0.8, 1e-4, 6, 8e-3, 2.5e-4, r * 0.98};
    // the node ring from 32 KiB blocks on 2 nodes or more, up to 64 ranks
    ck_assert_int_eq(collx_allgather_node_ring(32768, 2, 4), 1);
    ck_assert_int_eq(collx_allgather_node_ring(32767, 2, 4), 0);
    ck_assert_int_eq(collx_allgather_node_ring(1 << 20, 1, 4), 0);
    ck_assert_int_eq(collx_allgather_node_ring(1 << 20, 8, 64), 1);
    ck_assert_int_eq(collx_allgather_node_ring(1 << 20, 8, 65), 0);
    ck_assert_int_eq(collx_allgather_leaders_ring(&slow_links, 32768), 1);
    ck_assert_int_eq(collx_allgather_leaders_ring(&slow_links, 32767), 0);
    ck_assert_int_eq(collx_allgather_leaders_ring(&slow_links, 64u << 20), 1);
    ck_assert_int_eq(collx_allgather_leaders_ring(&above, 1 << 20), 1);
    ck_assert_int_eq(collx_allgather_leaders_ring(&below, 1 << 20), 0);
    ck_assert_int_eq(collx_allgather_leaders_ring(&fast_links, 1 << 20), 0);
    ck_assert_int_eq(collx_allgather_leaders_ring(nullptr, 1 << 20), 0);
    // slow links: COLLX_SLOW_LINK_RATIO times the time per byte within a
    // node or more
    ck_assert_int_eq(collx_links_slow(&slow_links), 1);
    ck_assert_int_eq(collx_links_slow(&above), 1);
    ck_assert_int_eq(collx_links_slow(&below), 0);
    ck_assert_int_eq(collx_links_slow(&fast_links), 0);
    ck_assert_int_eq(collx_links_slow(nullptr), 0);
    ck_assert_int_eq(collx_links_slow(&quiet_slow), 1);
    ck_assert_int_eq(collx_links_slow(&quiet_fast), 0);
    // a link within a node that costs nothing per byte: any other is slow
    const collx_machine_t free_within = {0.8, 0, 6, 4e-4, 2.5e-4, 0};
    ck_assert_int_eq(collx_links_slow(&free_within), 1);
    ck_assert(std::fabs(collx_links_ratio(&quiet_slow) - r * 1.02) < 1e-9);
    ck_assert(std::fabs(collx_links_ratio(&slow_links) - 80) < 1e-9);
    ck_assert(collx_links_ratio(nullptr) == 0);
    ck_assert_int_eq(collx_allgather_leaders_ring(&quiet_slow, 1 << 20), 1);
    ck_assert_int_eq(collx_allgather_leaders_ring(&quiet_fast, 1 << 20), 0);
    // fast links: bcast and allgather(v) from their thresholds to the
    // previous module, kept machine or not; allreduce from its threshold
    // only on a kept one (its bits must not follow a fresh measurement);
    // blocking: 64 KiB, 128 KiB blocks, 1 MiB; non-blocking: 512 KiB,
    // 256 KiB blocks, 512 KiB; never on slow links, without a machine, or
    // for another collective
    for (int nb : {0, 1})
        for (int kept : {0, 1}) {
            auto prev = [&](int coll, std::size_t bytes, const collx_machine_t *mach) {
                return collx_previous_on_fast_links(coll, bytes, mach, kept, nb);
            };
            const std::size_t bcast = nb ? 524288 : 65536, gather = nb ? 262144 : 131072,
                              allreduce = nb ? 524288 : 1 << 20;
            ck_assert_int_eq(prev(COLLX_COLL_BCAST, bcast, &below), 1);
            ck_assert_int_eq(prev(COLLX_COLL_BCAST, bcast - 1, &below), 0);
            ck_assert_int_eq(prev(COLLX_COLL_BCAST, 64u << 20, &fast_links), 1);
            ck_assert_int_eq(prev(COLLX_COLL_BCAST, 64u << 20, &above), 0);
            ck_assert_int_eq(prev(COLLX_COLL_BCAST, 64u << 20, nullptr), 0);
            for (int c : {COLLX_COLL_ALLGATHER, COLLX_COLL_ALLGATHERV}) {
                ck_assert_int_eq(prev(c, gather, &fast_links), 1);
                ck_assert_int_eq(prev(c, gather - 1, &fast_links), 0);
                ck_assert_int_eq(prev(c, 64u << 20, &slow_links), 0);
            }
            ck_assert_int_eq(prev(COLLX_COLL_ALLREDUCE, allreduce, &below), kept);
            ck_assert_int_eq(prev(COLLX_COLL_ALLREDUCE, 64u << 20, &fast_links), kept);
            ck_assert_int_eq(prev(COLLX_COLL_ALLREDUCE, allreduce - 1, &fast_links), 0);
            ck_assert_int_eq(prev(COLLX_COLL_ALLREDUCE, 64u << 20, &above), 0);
            ck_assert_int_eq(prev(COLLX_COLL_ALLREDUCE, 64u << 20, nullptr), 0);
            for (int c : {COLLX_COLL_REDUCE, COLLX_COLL_REDUCE_SCATTER, COLLX_COLL_REDUCE_SCATTER_BLOCK,
                          COLLX_COLL_ALLTOALL, COLLX_COLL_GATHER, COLLX_COLL_BARRIER})
                ck_assert_int_eq(prev(c, 64u << 20, &fast_links), 0);
        }
    // non-blocking: ireduce on the tree on every level at every size,
    // iallreduce below 256 KiB (between two leaders recursive doubling),
    // ibcast on the modules
    for (int up : {0, 1}) {
        for (std::size_t b : {std::size_t{0}, std::size_t{8}, std::size_t{65535}, std::size_t{64u << 20}})
            ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_REDUCE, b, up, 2, 1), COLLX_TREE_BINOMIAL);
        for (std::size_t b : {std::size_t{8}, std::size_t{4096}, std::size_t{262143}})
            ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_ALLREDUCE, b, up, 2, 1),
                             up ? COLLX_TREE_RECURSIVE_DOUBLING : COLLX_TREE_BINOMIAL);
        for (int n : {3, 4, 8})
            for (std::size_t b : {std::size_t{8}, std::size_t{262143}})
                ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_ALLREDUCE, b, up, n, 1),
                                 COLLX_TREE_BINOMIAL);
        for (int n : {2, 4})
            ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_ALLREDUCE, 262144, up, n, 1), -1);
        ck_assert_int_eq(collx_hier_level_tree(COLLX_COLL_BCAST, 8, up, 2, 1), -1);
    }
    // the ring's allreduce segment is the reductions' default; its bcast and
    // reduce are the pipeline chain's
    ck_assert_uint_eq(collx_tree_segment_bytes(COLLX_COLL_ALLREDUCE, COLLX_TREE_RING, 8 << 20, 17,
                                               4, a, b), 32768);
    ck_assert_uint_eq(collx_tree_segment_bytes(COLLX_COLL_BCAST, COLLX_TREE_RING, 8 << 20, 17, 4,
                                               a, b),
                      collx_lp_segment_bytes(8 << 20, 17, a, b));
    for (int halves : {COLLX_COLL_REDUCE_SCATTER, COLLX_COLL_ALLGATHER})  // (collx_ring_start's)
        ck_assert_uint_eq(collx_tree_segment_bytes(halves, COLLX_TREE_RING, 8 << 20, 17, 4, a, b),
                          32768);
    // hanx's built-in large allreduce on the ring: from 512 KiB, ranks in
    // blocks, the ring's bytes per node link at most 1.2x the leaders'
    // ((P-1)/P against (N-1)/N)
    ck_assert_int_eq(collx_ring_allreduce_default(1 << 20, 4, 8, 1), 1);     // 4x2: 1.17
    ck_assert_int_eq(collx_ring_allreduce_default(524288, 4, 8, 1), 1);
    ck_assert_int_eq(collx_ring_allreduce_default(524287, 4, 8, 1), 0);
    ck_assert_int_eq(collx_ring_allreduce_default(1 << 20, 4, 8, 0), 0);     // round-robin
    ck_assert_int_eq(collx_ring_allreduce_default(1 << 20, 2, 4, 1), 0);     // 2x2: 1.5
    ck_assert_int_eq(collx_ring_allreduce_default(1 << 20, 3, 6, 1), 0);     // 3x2: 1.25
    ck_assert_int_eq(collx_ring_allreduce_default(2 << 20, 8, 64, 1), 1);    // 8x8: 1.125
    ck_assert_int_eq(collx_ring_allreduce_default(1 << 20, 8, 64, 1), 0);    // chunks of 16 KiB
    ck_assert_int_eq(collx_ring_allreduce_default(32 << 20, 32, 1024, 1), 1);  // 32x32: 1.03
    ck_assert_int_eq(collx_ring_allreduce_default(16 << 20, 32, 1024, 1), 0);
    ck_assert_int_eq(collx_ring_allreduce_default(8 << 20, 4, 32, 1), 0);    // 4x8: 1.29
    ck_assert_int_eq(collx_ring_allreduce_default(1 << 20, 4, 4, 1), 0);     // one rank per node
    ck_assert_int_eq(collx_ring_allreduce_default(1 << 20, 1, 4, 1), 0);     // one node
    // the one flag's allreduce: split rails on the ring, blocking or not,
    // from 128 KiB on nodes of one size (2+ ranks), any placement; else the
    // flat ring where it applies (nodes of different sizes), else the levels
    ck_assert_int_eq(collx_allreduce_builtin(131072, 2, 4, 2, 1), COLLX_ALLREDUCE_SPLIT_RING);
    ck_assert_int_eq(collx_allreduce_builtin(131071, 2, 4, 2, 1), COLLX_ALLREDUCE_LEVELS);
    ck_assert_int_eq(collx_allreduce_builtin(1 << 20, 4, 8, 2, 0), COLLX_ALLREDUCE_SPLIT_RING);
    ck_assert_int_eq(collx_allreduce_builtin(262144, 4, 8, 2, 1), COLLX_ALLREDUCE_SPLIT_RING);
    ck_assert_int_eq(collx_allreduce_builtin(1 << 20, 2, 4, 2, 1), COLLX_ALLREDUCE_SPLIT_RING);
    ck_assert_int_eq(collx_allreduce_builtin(8 << 20, 4, 8, 1, 1), COLLX_ALLREDUCE_FLAT_RING);
    ck_assert_int_eq(collx_allreduce_builtin(1 << 20, 4, 7, 0, 1), COLLX_ALLREDUCE_FLAT_RING);
    ck_assert_int_eq(collx_allreduce_builtin(1 << 20, 4, 7, 0, 0), COLLX_ALLREDUCE_LEVELS);
    ck_assert_int_eq(collx_allreduce_builtin(1 << 20, 4, 4, 0, 1), COLLX_ALLREDUCE_LEVELS);
    // small ones (stop 38): one topo tree, to 1 KiB on 2 nodes, to 16 KiB on
    // more, any placement or sizes of nodes; never on one node
    ck_assert_int_eq(collx_allreduce_builtin(0, 2, 4, 2, 1), COLLX_ALLREDUCE_FLAT_TOPO);
    ck_assert_int_eq(collx_allreduce_builtin(8, 2, 4, 2, 1), COLLX_ALLREDUCE_FLAT_TOPO);
    ck_assert_int_eq(collx_allreduce_builtin(1024, 2, 4, 2, 1), COLLX_ALLREDUCE_FLAT_TOPO);
    ck_assert_int_eq(collx_allreduce_builtin(1025, 2, 4, 2, 1), COLLX_ALLREDUCE_LEVELS);
    ck_assert_int_eq(collx_allreduce_builtin(16384, 4, 8, 2, 1), COLLX_ALLREDUCE_FLAT_TOPO);
    ck_assert_int_eq(collx_allreduce_builtin(16384, 3, 7, 0, 0), COLLX_ALLREDUCE_FLAT_TOPO);
    ck_assert_int_eq(collx_allreduce_builtin(16385, 4, 8, 2, 1), COLLX_ALLREDUCE_LEVELS);
    ck_assert_int_eq(collx_allreduce_builtin(8, 1, 4, 0, 1), COLLX_ALLREDUCE_LEVELS);
    ck_assert_int_eq(collx_allreduce_builtin(1 << 20, 1, 4, 0, 1), COLLX_ALLREDUCE_LEVELS);
    // the one flag's reduce_scatter(_block): split rails on the rings from 64 KiB of the
    // vector, on 2 nodes or more of one size (2+ ranks each)
    ck_assert_int_eq(collx_reduce_scatter_builtin(65536, 2, 2), 1);
    ck_assert_int_eq(collx_reduce_scatter_builtin(65535, 2, 2), 0);
    ck_assert_int_eq(collx_reduce_scatter_builtin(8 << 20, 4, 8), 1);
    ck_assert_int_eq(collx_reduce_scatter_builtin(8 << 20, 1, 8), 0);  // one node
    ck_assert_int_eq(collx_reduce_scatter_builtin(8 << 20, 4, 0), 0);  // nodes of different sizes
    ck_assert_int_eq(collx_reduce_scatter_builtin(8 << 20, 4, 1), 0);  // one rank per node
}
END_TEST

// Every rank's input (value(r, i)) into in, and their sum (the ring's
// reductions are of Affine's commutative sum).
std::vector<Affine> ring_inputs(int P, std::size_t count, std::vector<std::vector<Affine>> &in) {
    in.assign(static_cast<std::size_t>(P), std::vector<Affine>(count));
    std::vector<Affine> sum(count, Affine{0, 0});
    for (int r = 0; r < P; ++r)
        for (std::size_t i = 0; i < count; ++i) {
            in[r][i] = value(r, i);
            sum[i] = Affine{sum[i].a + in[r][i].a, sum[i].b + in[r][i].b};
        }
    return sum;
}

// The ring's halves on their own (collx_ring_start's phases): the
// reduce-scatter leaves rank r chunk r (collx_hier_chunk's) summed over all
// ranks and writes nothing past the vector; the allgather spreads each
// rank's chunk r; both in a row give what the ring allreduce gives.  Every
// size, count and segment shape, completions reordered by the world.
START_TEST(ring_halves_scatter_and_gather_chunks) {
    const collx_dtype_t dt = dtype_of(sizeof(Affine));
    sim::Op op{affine_add};
    unsigned seed = 4242;
    const Affine junk{7, 7};
    for (int P : sizes)
        for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(5), std::size_t(37),
                                  std::size_t(300), std::size_t(1001)})
            for (const Shape &sh : shapes)
                for (int in_place = 0; in_place < 2; ++in_place) {
                    collx_tuning_t tun{COLLX_TREE_RING, 1, sh.seg_bytes, sh.max_send,
                                       sh.max_recv, nullptr};
                    std::vector<std::vector<Affine>> in;
                    const std::vector<Affine> sum = ring_inputs(P, count, in);
                    // reduce-scatter, then the allgather on its result
                    std::vector<std::vector<Affine>> buf(P, std::vector<Affine>(count + 1, junk));
                    for (int phase : {COLLX_RING_REDUCE_SCATTER, COLLX_RING_ALLGATHER}) {
                        sim::World w(P, seed++);
                        std::vector<std::unique_ptr<Operation>> ops;
                        for (int r = 0; r < P; ++r) {
                            const bool ip = in_place && phase == COLLX_RING_REDUCE_SCATTER;
                            if (ip) std::copy(in[r].begin(), in[r].end(), buf[r].begin());
                            const void *sb = phase == COLLX_RING_REDUCE_SCATTER && !ip
                                                 ? in[r].data() : nullptr;
                            ops.push_back(make_ring(w.transport(r), phase, sb, buf[r].data(),
                                                    count, dt, &op, -23, tun, nullptr));
                        }
                        std::string why;
                        ck_assert_msg(run_all(w, ops, why), "phase %d P=%d count=%zu seg=%zu: %s",
                                      phase, P, count, sh.seg_bytes, why.c_str());
                        for (int r = 0; r < P; ++r) {
                            for (int c = 0; c < P; ++c) {
                                if (phase == COLLX_RING_REDUCE_SCATTER && c != r) continue;
                                std::size_t first, n;
                                collx_hier_chunk(count, P, c, &first, &n);
                                for (std::size_t i = first; i < first + n; ++i)
                                    ck_assert_msg(buf[r][i].a == sum[i].a && buf[r][i].b == sum[i].b,
                                                  "phase %d P=%d count=%zu: rank %d chunk %d "
                                                  "elem %zu wrong", phase, P, count, r, c, i);
                            }
                            ck_assert_msg(buf[r][count].a == junk.a, "wrote past the end");
                        }
                        if (phase == COLLX_RING_REDUCE_SCATTER)  // only its own chunk goes on
                            for (int r = 0; r < P; ++r)
                                for (int c = 0; c < P; ++c) {
                                    if (c == r) continue;
                                    std::size_t first, n;
                                    collx_hier_chunk(count, P, c, &first, &n);
                                    std::fill(buf[r].begin() + static_cast<std::ptrdiff_t>(first),
                                              buf[r].begin() + static_cast<std::ptrdiff_t>(first + n),
                                              junk);
                                }
                    }
                }
    // the phases are checked
    sim::World w(2, 1);
    collx_tuning_t tun{COLLX_TREE_RING, 1, 64, 1, 1, nullptr};
    Affine b[2];
    collx_op_t *o = nullptr;
    for (int bad : {0, 4, -1})
        ck_assert_int_eq(collx_ring_start(&w.transport(0), bad, nullptr, b, 2, nullptr, &dt, &op, -23, &tun,
                                          nullptr, &o),
                         COLLX_ERR_ARG);
}
END_TEST

// The ring's reduce-scatter half and the whole ring on chunks the caller
// gives (a reduce_scatter's pieces): unequal ones, empty ones, all in one
// rank's chunk; rank r ends with its own chunk summed (the reduce-scatter)
// or every chunk (both halves), and nothing is written past the vector,
// whatever order completions come in.
START_TEST(ring_on_given_chunks) {
    const collx_dtype_t dt = dtype_of(sizeof(Affine));
    sim::Op op{affine_add};
    unsigned seed = 777;
    const Affine junk{7, 7};
    for (int P : sizes)
        for (int pattern = 0; pattern < 4; ++pattern)
            for (const Shape &sh : shapes) {
                std::vector<std::size_t> chunks(static_cast<std::size_t>(P));
                for (int c = 0; c < P; ++c)
                    chunks[c] = pattern == 0   ? static_cast<std::size_t>(3 * c + 1)  // growing
                                : pattern == 1 ? (c % 2 ? 0 : 17)                    // empty ones
                                : pattern == 2 ? (c == P - 1 ? 40 : 0)               // one rank's
                                               : static_cast<std::size_t>((c * 7919) % 13);
                std::size_t count = 0;
                std::vector<std::size_t> first;
                for (std::size_t k : chunks) {
                    first.push_back(count);
                    count += k;
                }
                std::vector<std::vector<Affine>> in;
                const std::vector<Affine> sum = ring_inputs(P, count, in);
                for (int phases : {COLLX_RING_REDUCE_SCATTER, COLLX_RING_ALLREDUCE}) {
                    collx_tuning_t tun{COLLX_TREE_RING, 1, sh.seg_bytes, sh.max_send, sh.max_recv,
                                       nullptr};
                    std::vector<std::vector<Affine>> buf(P, std::vector<Affine>(count + 1, junk));
                    sim::World w(P, seed++);
                    std::vector<std::unique_ptr<Operation>> ops;
                    for (int r = 0; r < P; ++r)
                        ops.push_back(make_ring(w.transport(r), phases, in[r].data(),
                                                buf[r].data(), count, dt, &op, -29, tun, nullptr,
                                                chunks.data()));
                    std::string why;
                    ck_assert_msg(run_all(w, ops, why), "phases %d P=%d pattern %d seg=%zu: %s",
                                  phases, P, pattern, sh.seg_bytes, why.c_str());
                    for (int r = 0; r < P; ++r) {
                        for (int c = 0; c < P; ++c) {
                            if (phases == COLLX_RING_REDUCE_SCATTER && c != r) continue;
                            for (std::size_t i = first[c]; i < first[c] + chunks[c]; ++i)
                                ck_assert_msg(buf[r][i].a == sum[i].a && buf[r][i].b == sum[i].b,
                                              "phases %d P=%d pattern %d: rank %d chunk %d "
                                              "elem %zu wrong",
                                              phases, P, pattern, r, c, i);
                        }
                        ck_assert_msg(buf[r][count].a == junk.a, "wrote past the end");
                    }
                }
            }
    // chunks that do not sum to the count are refused
    sim::World w(2, 1);
    collx_tuning_t tun{COLLX_TREE_RING, 1, 64, 1, 1, nullptr};
    Affine b[4];
    collx_op_t *o = nullptr;
    const std::size_t bad[2] = {1, 2};
    ck_assert_int_eq(collx_ring_start(&w.transport(0), COLLX_RING_REDUCE_SCATTER, nullptr, b, 4,
                                      bad, &dt, &op, -29, &tun, nullptr, &o),
                     COLLX_ERR_ARG);
}
END_TEST

START_TEST(capi_rejects_bad_arguments) {
    sim::World w(4, 1);
    collx_dtype_t dt = dtype_of(4);
    collx_tuning_t tun{COLLX_TREE_BINOMIAL, 2, 64, 1, 1, nullptr};
    collx_op_t *op = nullptr;
    uint32_t buf[4];
    const collx_transport_t *t0 = &w.transport(0);
    ck_assert_int_eq(collx_bcast_start(t0, buf, 4, &dt, 4, -17, &tun, nullptr, &op), COLLX_ERR_ARG);
    ck_assert_int_eq(collx_bcast_start(t0, buf, 4, &dt, -1, -17, &tun, nullptr, &op),
                     COLLX_ERR_ARG);
    ck_assert_int_eq(collx_bcast_start(t0, buf, 4, nullptr, 0, -17, &tun, nullptr, &op),
                     COLLX_ERR_ARG);
    collx_tuning_t bad = tun;
    bad.tree = COLLX_TREE_COUNT;
    ck_assert_int_eq(collx_bcast_start(t0, buf, 4, &dt, 0, -17, &bad, nullptr, &op),
                     COLLX_ERR_ARG);
    ck_assert_str_eq(collx_tree_name(COLLX_TREE_BINOMIAL), "binomial");
    ck_assert_str_eq(collx_tree_name(COLLX_TREE_PIPELINE), "pipeline");
    ck_assert_str_eq(collx_tree_name(COLLX_TREE_IN_ORDER_BINOMIAL), "in_order_binomial");
    ck_assert_str_eq(collx_tree_name(COLLX_TREE_RECURSIVE_DOUBLING), "recursive_doubling");
    ck_assert_int_eq(collx_tree_from_name("Recursive_Doubling"), COLLX_TREE_RECURSIVE_DOUBLING);
    ck_assert(collx_tree_name(COLLX_TREE_COUNT) == nullptr);
    ck_assert(collx_tree_name(-1) == nullptr);
}
END_TEST

// What the persistent init functions ask before they commit is exactly
// what the start functions refuse.
START_TEST(dtype_support_matches_what_start_refuses) {
    sim::World w(2, 1);
    collx_tuning_t tun{COLLX_TREE_BINOMIAL, 2, 64, 1, 1, nullptr};
    uint32_t buf[4] = {0, 0, 0, 0}, out[4];
    const collx_transport_t *t0 = &w.transport(0);
    for (ptrdiff_t extent : {-4, 0, 4}) {
        for (size_t size : {0, 4}) {
            collx_dtype_t dt = dtype_of(4);
            dt.extent = extent;
            dt.size = size;
            collx_op_t *op = nullptr;
            const int b = collx_bcast_start(t0, buf, 0, &dt, 0, -17, &tun, nullptr, &op);
            ck_assert_int_eq(b == COLLX_ERR_UNSUPPORTED, !collx_dtype_supported(&dt));
            ck_assert(b == COLLX_OK || b == COLLX_ERR_UNSUPPORTED);
            if (op) collx_op_free(op);
            op = nullptr;
            const int r = collx_allreduce_start(t0, buf, out, 0, &dt, nullptr, 1, -17, &tun,
                                                nullptr, &op);
            ck_assert_int_eq(r == COLLX_ERR_UNSUPPORTED, !collx_dtype_supported(&dt));
            ck_assert(r == COLLX_OK || r == COLLX_ERR_UNSUPPORTED);
            if (op) collx_op_free(op);
        }
    }
    collx_dtype_t dt = dtype_of(4);
    ck_assert(collx_dtype_supported(&dt));
    dt.extent = 0;  // (MPI_Type_create_resized(..., 0, 0, ...))
    ck_assert(!collx_dtype_supported(&dt));
    dt.extent = -8;  // a negative extent: handed on, not an argument error
    ck_assert(!collx_dtype_supported(&dt));
    dt.size = 0;
    ck_assert(!collx_dtype_supported(&dt));
    dt.extent = 0;
    ck_assert(collx_dtype_supported(&dt));
}
END_TEST

// ------------------------------------------------------------ schedules

namespace {

// An in-process world of sub-collectives for pipelines: a step started on
// a channel is the k-th collective of that channel for its rank; the k-th
// collective completes once every member started its k-th, and every
// member's k-th must be the same (stage number, segment) -- the order MPI
// demands of collectives on one communicator.  Completions are reported in
// a random order.
struct SchedWorld {
    struct Started {
        int number;
        std::size_t seg;
        void *token;
    };
    struct Rank {
        SchedWorld *w;
        int r;
        std::vector<collx_stage_t> stages;
        std::vector<std::vector<char>> done;  // [stage][seg]
        std::map<int, std::size_t> count;     // steps started per channel
        std::map<int, int> running;           // steps started and not finished, per channel
        std::vector<int> prev;                // stage a segment comes from
    };
    bool serial = false;  // the pipelines': then one step per channel at a time
    std::map<int, std::vector<int>> members;  // channel -> ranks
    std::map<std::pair<int, std::size_t>, std::vector<std::pair<int, Started>>> inst;
    std::vector<Rank> ranks;
    std::string error;
    std::mt19937 rng;

    static int start(void *ctx, int stage, std::size_t seg, void *token) {
        Rank *rk = static_cast<Rank *>(ctx);
        SchedWorld *w = rk->w;
        const collx_stage_t &st = rk->stages[stage];
        if (rk->prev[stage] >= 0 && !rk->done[rk->prev[stage]][seg])
            w->error = "a step started before its segment's previous stage finished";
        if (w->serial && rk->running[st.channel] > 0)
            w->error = "a serial pipeline started a step while its channel ran another";
        ++rk->running[st.channel];
        const std::size_t k = rk->count[st.channel]++;
        w->inst[{st.channel, k}].push_back({rk->r, Started{st.number, seg, token}});
        auto &v = w->inst[{st.channel, k}];
        for (auto &e : v)
            if (e.second.number != st.number || e.second.seg != seg)
                w->error = "members of a channel started different steps as their k-th";
        return 0;
    }
    // complete one full instance at random; false when none is complete
    bool step() {
        std::vector<std::pair<int, std::size_t>> full;
        for (auto &[key, v] : inst)
            if (v.size() == members[key.first].size()) full.push_back(key);
        if (full.empty()) return false;
        auto key = full[std::uniform_int_distribution<std::size_t>(0, full.size() - 1)(rng)];
        auto v = inst[key];
        inst.erase(key);
        std::shuffle(v.begin(), v.end(), rng);
        for (auto &[r, e] : v) {
            Rank &rk = ranks[r];
            for (std::size_t i = 0; i < rk.stages.size(); ++i)
                if (rk.stages[i].number == e.number && rk.stages[i].channel == key.first)
                    rk.done[i][e.seg] = 1;
            --rk.running[key.first];
            collx_xfer_complete(e.token, 0);
        }
        return true;
    }
};

// hanx-like stages on `nodes` nodes of `per` ranks (channel n: node n,
// channel 1000: the leaders, rank n*per leading node n)
std::vector<collx_stage_t> hier_stages(const std::string &coll, int r, int nodes, int per,
                                       int root) {
    const int node = r / per, lead = r % per == 0, root_node = root / per;
    std::vector<collx_stage_t> v;
    if (coll == "allreduce" || coll == "allreduce_split") {
        const int split = coll == "allreduce_split";
        v.push_back({0, node});
        if (lead) {
            v.push_back({1, 1000});
            if (split) v.push_back({2, 1000});
        }
        v.push_back({2 + split, node});
    } else if (coll == "bcast") {  // root leads its node or not
        if (node == root_node && root % per != 0) v.push_back({0, node});  // up to the leader
        if (lead) v.push_back({1, 1000});
        if (!(node == root_node && root % per != 0)) v.push_back({2, node});
    } else {  // reduce to the root's node leader
        v.push_back({0, node});
        if (lead) v.push_back({1, 1000});
    }
    (void)nodes;
    return v;
}

}  // namespace

START_TEST(pipeline_schedule_keeps_channel_order_and_data_order) {
    for (const char *coll : {"allreduce", "allreduce_split", "bcast", "reduce"})
        for (auto [nodes, per] : {std::pair<int, int>{2, 2}, {3, 2}, {4, 3}, {1, 5}})
            for (std::size_t nseg : {1u, 3u, 10u})
                for (int window : {1, 2, 8})
                    for (unsigned seed = 1; seed <= 12; ++seed) {
                        const int P = nodes * per, root = (P - 1) * (seed % 2);
                        const int serial = seed > 6;
                        SchedWorld w;
                        w.serial = serial;
                        w.rng.seed(seed * 31 + nseg);
                        w.ranks.resize(P);
                        int finished = 0;
                        std::vector<collx_op_t *> ops(P, nullptr);
                        for (int r = 0; r < P; ++r) {
                            auto &rk = w.ranks[r];
                            rk.w = &w;
                            rk.r = r;
                            rk.stages = hier_stages(coll, r, nodes, per, root);
                            rk.done.assign(rk.stages.size(), std::vector<char>(nseg, 0));
                            rk.prev.assign(rk.stages.size(), -1);
                            for (std::size_t i = 1; i < rk.stages.size(); ++i)
                                rk.prev[i] = static_cast<int>(i) - 1;
                            for (auto &st : rk.stages) {
                                auto &m = w.members[st.channel];
                                if (std::find(m.begin(), m.end(), r) == m.end()) m.push_back(r);
                            }
                        }
                        for (int r = 0; r < P; ++r) {
                            collx_notify_t n{[](void *c, int) { ++*static_cast<int *>(c); },
                                             &finished};
                            ck_assert_int_eq(collx_pipeline_start(w.ranks[r].stages.data(),
                                                                  int(w.ranks[r].stages.size()),
                                                                  nseg, window, serial,
                                                                  &SchedWorld::start,
                                                                  &w.ranks[r], &n, &ops[r]),
                                             COLLX_OK);
                        }
                        while (w.step()) {
                        }
                        ck_assert_msg(w.error.empty(), "%s %dx%d nseg %zu window %d serial %d: %s",
                                      coll, nodes, per, nseg, window, serial, w.error.c_str());
                        ck_assert_msg(finished == P,
                                      "%s %dx%d nseg %zu window %d: %d of %d ranks finished "
                                      "(deadlock)",
                                      coll, nodes, per, nseg, window, finished, P);
                        for (int r = 0; r < P; ++r) {
                            int st = -1;
                            ck_assert_int_eq(collx_op_test(ops[r], &st), 1);
                            ck_assert_int_eq(st, COLLX_OK);
                            for (auto &d : w.ranks[r].done)
                                for (char c : d) ck_assert(c);
                            collx_op_free(ops[r]);
                        }
                    }
}
END_TEST

// The window bounds how far a rank's first stage runs ahead of its last.
START_TEST(pipeline_window_bounds_outstanding_segments) {
    struct Ctx {
        std::vector<void *> tokens[2];  // per stage, not yet completed
        std::size_t max_ahead = 0, started[2] = {0, 0}, completed_last = 0;
    } c;
    collx_stage_t st[2] = {{0, 1}, {1, 2}};
    collx_step_fn fn = [](void *ctx, int stage, std::size_t, void *token) {
        Ctx *c = static_cast<Ctx *>(ctx);
        c->tokens[stage].push_back(token);
        ++c->started[stage];
        c->max_ahead = std::max(c->max_ahead, c->started[0] - c->completed_last);
        return 0;
    };
    collx_op_t *op = nullptr;
    ck_assert_int_eq(collx_pipeline_start(st, 2, 20, 3, 0, fn, &c, nullptr, &op), COLLX_OK);
    // complete stage 0 eagerly, stage 1 one at a time
    for (int guard = 0; guard < 1000; ++guard) {
        while (!c.tokens[0].empty()) {
            void *t = c.tokens[0].front();
            c.tokens[0].erase(c.tokens[0].begin());
            collx_xfer_complete(t, 0);
        }
        if (c.tokens[1].empty()) break;
        void *t = c.tokens[1].front();
        c.tokens[1].erase(c.tokens[1].begin());
        ++c.completed_last;
        collx_xfer_complete(t, 0);
    }
    int s = -1;
    ck_assert_int_eq(collx_op_test(op, &s), 1);
    ck_assert_uint_eq(c.started[0], 20);
    ck_assert_uint_eq(c.started[1], 20);
    ck_assert_uint_le(c.max_ahead, 3);
    ck_assert_uint_ge(c.max_ahead, 2);
    collx_op_free(op);
    // a failed step start ends the schedule with an error
    collx_step_fn bad = [](void *, int, std::size_t, void *) { return 1; };
    ck_assert_int_eq(collx_pipeline_start(st, 2, 4, 3, 0, bad, nullptr, nullptr, &op), COLLX_OK);
    ck_assert_int_eq(collx_op_test(op, &s), 1);
    ck_assert_int_ne(s, COLLX_OK);
    collx_op_free(op);
    ck_assert_int_eq(collx_pipeline_start(nullptr, 2, 4, 3, 0, fn, &c, nullptr, &op), COLLX_ERR_ARG);
}
END_TEST

int main() {
    Suite *s = suite_create("collx-core");
    TCase *trees = tcase_create("trees");
    tcase_add_test(trees, trees_are_spanning_for_every_size_and_root);
    tcase_add_test(trees, binomial_depth_is_logarithmic);
    tcase_add_test(trees, ordered_reduce_folds_in_rank_order);
    tcase_add_test(trees, tree_depths_match_their_shape);
    tcase_add_test(trees, topology_tree_crosses_each_node_boundary_once);
    tcase_add_test(trees, topology_ring_tree_loads_every_node_link_alike);
    tcase_add_test(trees, validator_rejects_broken_trees);
    tcase_add_test(trees, segmentation_covers_count_exactly);
    suite_add_tcase(s, trees);
    TCase *exec = tcase_create("executor");
    tcase_set_timeout(exec, 300);
    tcase_add_test(exec, bcast_delivers_root_data_everywhere);
    tcase_add_test(exec, allgather_spreads_every_block_once);
    tcase_add_test(exec, reduce_commutative);
    tcase_add_test(exec, reduce_commutative_in_place);
    tcase_add_test(exec, reduce_non_commutative_keeps_rank_order);
    tcase_add_test(exec, reduce_non_commutative_in_place);
    tcase_add_test(exec, allreduce_commutative);
    tcase_add_test(exec, allreduce_commutative_in_place);
    tcase_add_test(exec, allreduce_non_commutative);
    tcase_add_test(exec, allreduce_non_commutative_in_place);
    tcase_add_test(exec, reduce_is_bitwise_deterministic);
    tcase_add_test(exec, allreduce_is_bitwise_deterministic);
    tcase_add_test(exec, allreduce_in_place_is_bitwise_deterministic);
    tcase_add_test(exec, notification_fires_once_after_completion);
    tcase_add_test(exec, lp_segment_size_follows_the_model);
    tcase_add_test(exec, one_table_of_collectives_and_default_segments);
    tcase_add_test(exec, cost_model_predicts_and_chooses);
    tcase_add_test(exec, cost_model_bandwidth_bound);
    tcase_add_test(exec, hier_plans_run_every_shape_and_root);
    tcase_add_test(exec, hier_root_rail_plans_take_two_stages);
    tcase_add_test(exec, hier_place_tables_agree);
    tcase_add_test(exec, hier_split_plans_sum_every_chunk);
    tcase_add_test(exec, hier_rail_layout_gives_each_rank_its_piece);
    tcase_add_test(exec, transport_failure_ends_operation_with_error);
    tcase_add_test(exec, ring_halves_scatter_and_gather_chunks);
    tcase_add_test(exec, ring_on_given_chunks);
    tcase_add_test(exec, capi_rejects_bad_arguments);
    tcase_add_test(exec, dtype_support_matches_what_start_refuses);
    suite_add_tcase(s, exec);
    TCase *sched = tcase_create("schedule");
    tcase_set_timeout(sched, 120);
    tcase_add_test(sched, pipeline_schedule_keeps_channel_order_and_data_order);
    tcase_add_test(sched, pipeline_window_bounds_outstanding_segments);
    suite_add_tcase(s, sched);
    TCase *machines = tcase_create("machines");
    tcase_add_test(machines, machine_key_is_the_nodes_in_any_order);
    tcase_add_test(machines, machine_cache_keeps_and_finds_the_exact_values);
    tcase_add_test(machines, machine_cache_ignores_bad_lines_and_keeps_the_newest);
    tcase_add_test(machines, machine_cache_says_why_it_cannot_keep);
    suite_add_tcase(s, machines);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
