// Unit tests of the collx core (Check): tree shapes, segmentation, and the
// event-driven bcast/reduce executed on a simulated in-process transport
// against sequentially computed references.
#include <check.h>

#include <cstdint>
#include <cmath>
#include <cstring>
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

START_TEST(topology_tree_crosses_each_node_boundary_once) {
    std::mt19937 rng(5);
    for (int P = 1; P <= 64; ++P)
        for (int layout = 0; layout < 4; ++layout) {
            std::vector<int> node(P);
            for (int r = 0; r < P; ++r)
                node[r] = layout == 0   ? r / 4                      // blocks of 4
                          : layout == 1 ? r % 3                      // round-robin on 3
                          : layout == 2 ? 100 - r / 7                // ids not in rank order
                                        : static_cast<int>(rng() % 5);  // random, uneven
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
                                     {COLLX_TREE_LINEAR, 1},   {COLLX_TREE_TOPO, 2}};
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

int main() {
    Suite *s = suite_create("collx-core");
    TCase *trees = tcase_create("trees");
    tcase_add_test(trees, trees_are_spanning_for_every_size_and_root);
    tcase_add_test(trees, binomial_depth_is_logarithmic);
    tcase_add_test(trees, ordered_reduce_folds_in_rank_order);
    tcase_add_test(trees, tree_depths_match_their_shape);
    tcase_add_test(trees, topology_tree_crosses_each_node_boundary_once);
    tcase_add_test(trees, validator_rejects_broken_trees);
    tcase_add_test(trees, segmentation_covers_count_exactly);
    suite_add_tcase(s, trees);
    TCase *exec = tcase_create("executor");
    tcase_set_timeout(exec, 300);
    tcase_add_test(exec, bcast_delivers_root_data_everywhere);
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
    tcase_add_test(exec, transport_failure_ends_operation_with_error);
    tcase_add_test(exec, capi_rejects_bad_arguments);
    tcase_add_test(exec, dtype_support_matches_what_start_refuses);
    suite_add_tcase(s, exec);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
