// Unit tests of the discrete-event simulator (opal/collx/sim.*): closed
// forms of the LogGP model on the real schedules, NIC sharing, rendezvous,
// determinism, data-mode results against sequential references (flat trees
// and hanx, commutative and not), a 65536-rank data-free run, fitting.
#include <check.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "collx/collx.h"
#include "sim.hpp"

using namespace collx;
using namespace collx::sim;

namespace {

// Every level alike, no gap, no contention, eager only: the textbook model.
Params plain(double L, double o, double G) {
    Params p;
    for (auto &lp : p.level) lp = LevelParams{L, o, 0, G, std::size_t(1) << 40};
    p.reduce_ns_per_byte = 0;
    p.copy_ns_per_byte = 0;
    p.nic = false;
    return p;
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

Algo flat(int tree) {
    Algo a;
    a.tree = tree;
    return a;
}

}  // namespace

// Linear pipelining (one chain) of n segments of s bytes over P ranks:
// each hop costs L + 2o + sG, and with sG >= 2o a rank forwards one segment
// per sG, so the last rank has the last segment at (P-1)(L+2o+sG) + (n-1)sG.
START_TEST(default_segments_are_the_components) {
    // the simulator's defaults come from the core's one place, as adaptx's
    // and hanx's do (the LP chain: its longest chain, not P)
    const double a = COLLX_LP_ALPHA_NS_DEFAULT * 1e-9, b = COLLX_LP_BETA_PS_DEFAULT * 1e-12;
    const Params p = Params::defaults();
    const Topology t{17, 17, 0};
    Algo chain;
    chain.tree = COLLX_TREE_CHAIN;  // fanout 4: 1 + ceil(16 / 4) = 5 ranks
    ck_assert_uint_eq(default_segment(p, t, Coll::Bcast, chain, 8 << 20),
                      collx_lp_segment_bytes(8 << 20, 5, a, b));
    Algo pipe;
    pipe.tree = COLLX_TREE_PIPELINE;
    ck_assert_uint_eq(default_segment(p, t, Coll::Allreduce, pipe, 8 << 20),
                      collx_lp_segment_bytes(8 << 20, 17, a, b));
    Algo bin;
    ck_assert_uint_eq(default_segment(p, t, Coll::Reduce, bin, 8 << 20), 32768);
    Algo h;
    h.hanx = true;
    ck_assert_uint_eq(default_segment(p, t, Coll::Reduce, h, 1 << 20), 65536);
    ck_assert_uint_eq(default_segment(p, t, Coll::Allreduce, h, 1 << 20), 32768);
    ck_assert_uint_eq(default_segment(p, t, Coll::Bcast, h, 1000), 0);
    ck_assert_str_eq(coll_name(Coll::Allreduce), "allreduce");
    Coll c;
    ck_assert(parse_coll("reduce", &c) && c == Coll::Reduce);
    ck_assert(parse_coll("allgather", &c) && c == Coll::Allgather);
    ck_assert(parse_coll("reduce_scatter_block", &c) && c == Coll::ReduceScatterBlock);
    ck_assert(!parse_coll("alltoall", &c));  // in the table, not simulated
}
END_TEST

START_TEST(chain_bcast_closed_form) {
    const double L = 1000, G = 1.0, s = 1000;
    for (double o : {0.0, 100.0, 500.0})
        for (int P : {2, 3, 7, 16, 33})
            for (int n : {1, 2, 5, 20}) {
                const Params p = plain(L, o, G);
                const Topology t{P, 1, 0};
                const Result r = run(p, t, Coll::Bcast, flat(COLLX_TREE_PIPELINE),
                                     static_cast<std::size_t>(n * s), static_cast<std::size_t>(s));
                const double want = (P - 1) * (L + 2 * o + s * G) + (n - 1) * s * G;
                ck_assert_msg(close(r.time_ns, want), "o=%g P=%d n=%d: %.3f ns, want %.3f", o, P,
                              n, r.time_ns, want);
                // a single segment: the alpha-beta form (P-1)(L + 2o + sG) exactly
                if (n == 1) ck_assert(close(r.time_ns, (P - 1) * (L + 2 * o + s * G)));
            }
}
END_TEST

// Binomial bcast of one segment of B bytes over P = 2^k ranks: k hops of
// L + 2o + BG (the root's later children have smaller subtrees; BG >= o).
START_TEST(binomial_bcast_closed_form) {
    const double L = 2000, o = 300, G = 0.5;
    for (std::size_t B : {std::size_t(1000), std::size_t(8000)})
        for (int k = 0; k <= 10; ++k) {
            const int P = 1 << k;
            const Result r =
                run(plain(L, o, G), Topology{P, 1, 0}, Coll::Bcast, flat(COLLX_TREE_BINOMIAL), B, B);
            const double want = k * (L + 2 * o + B * G);
            ck_assert_msg(close(r.time_ns, want), "P=%d B=%zu: %.3f ns, want %.3f", P, B,
                          r.time_ns, want);
        }
    // other sizes: never more than ceil(log2 P) hops
    for (int P = 3; P < 64; ++P) {
        const Result r = run(plain(L, o, G), Topology{P, 1, 0}, Coll::Bcast,
                             flat(COLLX_TREE_BINOMIAL), 1000, 1000);
        const double hops = std::ceil(std::log2(P));
        ck_assert_msg(r.time_ns <= hops * (L + 2 * o + 1000 * G) + 1e-6, "P=%d: %.3f", P,
                      r.time_ns);
        ck_assert(r.time_ns >= (L + 2 * o + 1000 * G) - 1e-6);
    }
}
END_TEST

// ------------------------------------------------ raw transfers, NIC sharing

namespace {
Engine *g_engine;
std::vector<double> g_done;
void record(void *token, int status) {
    ck_assert_int_eq(status, 0);
    g_done[static_cast<std::size_t>(reinterpret_cast<std::intptr_t>(token))] = g_engine->now();
}

// M ranks of node 0 each send B bytes to their partner on node 1; returns
// the receive completion times.
std::vector<double> fan_across(const Params &p, int M, std::size_t B) {
    Engine e(p, Topology{2 * M, M, 0}, false);
    e.complete = &record;
    g_engine = &e;
    g_done.assign(static_cast<std::size_t>(4 * M), -1);
    collx_dtype_t dt{nullptr, 1, 1, 0, 1};
    static char buf[1];
    for (int i = 0; i < M; ++i) {
        const collx_transport_t *s = e.transport(i), *r = e.transport(M + i);
        ck_assert_int_eq(r->irecv(r->ctx, buf, B, &dt, i, 5, reinterpret_cast<void *>(std::intptr_t(2 * M + i))), 0);
        ck_assert_int_eq(s->isend(s->ctx, buf, B, &dt, M + i, 5, reinterpret_cast<void *>(std::intptr_t(i))), 0);
    }
    e.run();
    std::vector<double> out(g_done.begin() + 2 * M, g_done.begin() + 3 * M);
    for (int i = 0; i < M; ++i) ck_assert(g_done[static_cast<std::size_t>(i)] >= 0);
    return out;
}
}  // namespace

START_TEST(nic_serialises_a_nodes_inter_node_bytes) {
    const double L = 5000, o = 400, G = 1.0;
    const std::size_t B = 10000;
    for (int M : {1, 2, 4, 8, 64}) {
        Params p = plain(L, o, G);
        p.nic = true;
        auto t = fan_across(p, M, B);
        double last = 0;
        for (double x : t) last = std::max(last, x);
        // M messages share the link: the last one's bytes finish after M*B*G
        ck_assert_msg(close(last, o + M * B * G + L + o), "M=%d: %.3f", M, last);
        p.nic = false;  // separate links: all at the single-message time
        for (double x : fan_across(p, M, B)) ck_assert(close(x, o + B * G + L + o));
    }
}
END_TEST

// M nodes each send B bytes to a rank of node 0 at once: with nic_in the
// receiving NIC serialises them, without only each sender's NIC counts
START_TEST(nic_in_serialises_incoming_bytes) {
    const double L = 5000, o = 400, G = 1.0;
    const std::size_t B = 10000;
    for (int M : {2, 3, 8}) {
        for (bool in : {true, false}) {
            Params p = plain(L, o, G);
            p.nic = true;
            p.nic_in = in;
            Engine e(p, Topology{2 * (M + 1), 2, 0}, false);  // node 0 = ranks 0, 1
            e.complete = &record;
            g_engine = &e;
            g_done.assign(static_cast<std::size_t>(2 * M), -1);
            collx_dtype_t dt{nullptr, 1, 1, 0, 1};
            static char buf[1];
            const collx_transport_t *r = e.transport(0);
            for (int k = 1; k <= M; ++k) {  // the first rank of nodes 1..M sends to rank 0
                const collx_transport_t *snd = e.transport(2 * k);
                ck_assert_int_eq(r->irecv(r->ctx, buf, B, &dt, 2 * k, 7,
                                          reinterpret_cast<void *>(std::intptr_t(k))), 0);
                ck_assert_int_eq(snd->isend(snd->ctx, buf, B, &dt, 0, 7,
                                            reinterpret_cast<void *>(std::intptr_t(M + k))), 0);
            }
            e.run();
            double last = 0;
            for (int k = 1; k <= M; ++k) last = std::max(last, g_done[static_cast<std::size_t>(k)]);
            // the receiver's CPU takes o per message either way
            const double want = in ? o + L + M * B * G + o : o + L + B * G + M * o;
            ck_assert_msg(close(last, want), "M=%d nic_in=%d: %.3f, want %.3f", M, in, last, want);
        }
    }
}
END_TEST

START_TEST(rendezvous_adds_a_round_trip) {
    Params p = plain(1000, 200, 0.5);
    p.level[Net].eager = 4096;
    const double eager = fan_across(p, 1, 4096)[0], rndv = fan_across(p, 1, 4097)[0];
    ck_assert(close(eager, 1000 + 2 * 200 + 4096 * 0.5));
    ck_assert(close(rndv, 3 * 1000 + 2 * 200 + 4097 * 0.5));
}
END_TEST

START_TEST(same_inputs_same_times) {
    const Params p = Params::defaults();
    for (const Algo &a : all_algos())
        for (Coll c : {Coll::Bcast, Coll::Reduce, Coll::Allreduce}) {
            const Topology t{96, 8, 4};
            const Result x = run(p, t, c, a, 300000, 0), y = run(p, t, c, a, 300000, 0);
            ck_assert(x.time_ns > 0);
            ck_assert(x.finish_ns == y.finish_ns);
            ck_assert(x.messages == y.messages && x.events == y.events);
        }
}
END_TEST

// ------------------------------------------------------------- data mode

namespace {

// x -> a x + b (mod 2^64); composition is associative, not commutative.
struct Affine {
    std::uint64_t a, b;
};
// inout = in o inout (MPI_Reduce_local's operand order)
void compose(const void *in, void *inout, std::size_t n) {
    auto *x = static_cast<const Affine *>(in);
    auto *y = static_cast<Affine *>(inout);
    for (std::size_t i = 0; i < n; ++i) y[i] = Affine{x[i].a * y[i].a, x[i].a * y[i].b + x[i].b};
}
void add(const void *in, void *inout, std::size_t n) {
    auto *x = static_cast<const Affine *>(in);
    auto *y = static_cast<Affine *>(inout);
    for (std::size_t i = 0; i < n; ++i) y[i] = Affine{x[i].a + y[i].a, x[i].b + y[i].b};
}
Affine value(int rank, std::size_t i) {
    const std::uint64_t h = (static_cast<std::uint64_t>(rank) * 1000003u + i * 7919u) * 2654435761u;
    return Affine{(h | 1) & 0xffff, h >> 20};
}

// Runs one collective in data mode and compares with the sequential fold.
void check_data(Coll c, const Algo &a, int P, int M, std::size_t count, std::size_t seg, int root,
                bool commutative, const Params &params = Params::defaults(), int per_socket = 0) {
    Buffers b;
    b.dt = collx_dtype_t{nullptr, sizeof(Affine), sizeof(Affine), 0, sizeof(Affine)};
    ReduceFn op{commutative ? &add : &compose};
    b.op = &op;
    b.commutative = commutative;
    // reduce_scatter_block: P blocks in, one out (rank r's: the vector's
    // block r); allgather: one in, P out
    const bool rs = c == Coll::ReduceScatterBlock, ag = c == Coll::Allgather;
    const std::size_t n_in = rs ? count * static_cast<std::size_t>(P) : count;
    const std::size_t n_out = ag ? count * static_cast<std::size_t>(P) : count;
    std::vector<std::vector<Affine>> in(P), out(P);
    for (int r = 0; r < P; ++r) {
        in[r].resize(n_in);
        out[r].assign(n_out + 1, Affine{0, 0});  // (+1: nothing written past it)
        for (std::size_t i = 0; i < n_in; ++i) in[r][i] = value(r, i);
        if (c == Coll::Bcast && r == root) out[r] = in[r];
        b.send.push_back(in[r].data());
        b.recv.push_back(out[r].data());
    }
    run(params, Topology{P, M, per_socket}, c, a, count, seg, root, &b);
    std::vector<Affine> want(std::max(n_in, n_out));
    for (std::size_t i = 0; i < want.size(); ++i) {
        if (c == Coll::Bcast) {
            want[i] = value(root, i);
            continue;
        }
        if (ag) {  // rank q's block at q * count
            want[i] = value(static_cast<int>(i / count), i % count);
            continue;
        }
        Affine acc = value(P - 1, i);
        for (int r = P - 2; r >= 0; --r) {
            Affine x = value(r, i);
            (commutative ? add : compose)(&x, &acc, 1);
        }
        want[i] = acc;
    }
    for (int r = 0; r < P; ++r) {
        if (c == Coll::Reduce && r != root) continue;
        ck_assert_msg(out[r][n_out].a == 0 && out[r][n_out].b == 0, "rank %d: written past", r);
        const std::size_t at = rs ? static_cast<std::size_t>(r) * count : 0;  // (my block)
        for (std::size_t i = 0; i < n_out; ++i)
            ck_assert_msg(out[r][i].a == want[at + i].a && out[r][i].b == want[at + i].b,
                          "%s %s P=%d M=%d S=%d count=%zu seg=%zu root=%d commutative=%d: "
                          "rank %d element %zu wrong",
                          coll_name(c), algo_name(a).c_str(), P, M, per_socket, count, seg, root,
                          commutative, r, i);
    }
}

}  // namespace

START_TEST(data_mode_flat_trees_match_the_reference) {
    for (int tree = 0; tree < COLLX_TREE_COUNT; ++tree)
        for (int P : {1, 2, 3, 5, 8, 13})
            for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(61)})
                for (std::size_t seg : {std::size_t(16), std::size_t(80), std::size_t(0)}) {
                    Algo a = flat(tree);
                    a.fanout = 3;
                    const int root = P > 2 ? P - 2 : 0;
                    check_data(Coll::Bcast, a, P, 2, count, seg, root, true);
                    for (bool comm : {true, false}) {
                        check_data(Coll::Reduce, a, P, 2, count, seg, root, comm);
                        check_data(Coll::Allreduce, a, P, 3, count, seg, 0, comm);
                    }
                }
}
END_TEST

// small eager limits: rendezvous everywhere, receives posted late and early
START_TEST(data_mode_with_rendezvous) {
    Params p = Params::defaults();
    for (auto &lp : p.level) lp.eager = 20;
    p.max_send = 1;
    p.max_recv = 2;
    Algo h;
    h.hanx = true;
    h.inner_seg = 48;
    for (int tree : {COLLX_TREE_BINOMIAL, COLLX_TREE_IN_ORDER_BINOMIAL, COLLX_TREE_PIPELINE,
                     COLLX_TREE_LINEAR})
        for (int P : {2, 5, 9})
            for (std::size_t count : {std::size_t(1), std::size_t(40)}) {
                const Algo a = flat(tree);
                check_data(Coll::Bcast, a, P, 2, count, 64, P - 1, true, p);
                check_data(Coll::Reduce, a, P, 2, count, 64, P / 2, false, p);
                check_data(Coll::Allreduce, a, P, 3, count, 64, 0, false, p);
                check_data(Coll::Allreduce, h, P, 2, count, 96, 0, false, p);
            }
}
END_TEST

// hanx's stages on sub-groups; with block placement the node-then-leaders
// fold is in rank order, so non-commutative operations must come out right.
// "hanx": the levels as the modules run them (module_tree: recursive
// doubling, and from 8 KiB the ring for commutative allreduces; the linear
// bcast between 4 and more leaders), which 600 elements (9600 B) reach in one segment.
START_TEST(data_mode_hanx_matches_the_reference) {
    for (const char *name : {"hanx", "hanx:pipeline:binomial", "hanx:in_order_binomial:pipeline",
                             "hanx:module:recursive_doubling"}) {
        Algo a;
        ck_assert(parse_algo(name, &a));
        a.inner_seg = 32;
        for (int P : {1, 2, 5, 8, 12})
            for (int M : {1, 2, 4})
                for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(9), std::size_t(50),
                                          std::size_t(600)})
                    for (std::size_t seg : {std::size_t(48), std::size_t(0)}) {
                        check_data(Coll::Bcast, a, P, M, count, seg, 0, true);
                        for (bool comm : {true, false}) {
                            check_data(Coll::Reduce, a, P, M, count, seg, 0, comm);
                            check_data(Coll::Allreduce, a, P, M, count, seg, 0, comm);
                        }
                    }
    }
}
END_TEST

// hanx's stages are the core's (collx_hier_plan, as coll/hanx runs them):
// any root -- a node leader or not, so the result travels from the root's
// node leader to it -- and 3 levels (socket, node, leaders) where nodes
// have several sockets; block placement keeps rank order
START_TEST(data_mode_hanx_any_root_and_three_levels) {
  for (const char *name : {"hanx:binomial:pipeline", "hanx-sched:binomial:pipeline"}) {
    Algo a;
    ck_assert(parse_algo(name, &a));
    const std::string named = algo_name(a);
    ck_assert_str_eq(named.c_str(), name);
    a.inner_seg = 32;
    const Params params = Params::defaults();
    for (int P : {5, 8, 11})
        for (int M : {2, 4})
            for (int S : {0, 2})
                for (std::size_t count : {std::size_t(1), std::size_t(37)})
                    for (std::size_t seg : {std::size_t(48), std::size_t(0)})
                        for (int root = 0; root < P; ++root) {
                            check_data(Coll::Bcast, a, P, M, count, seg, root, true, params, S);
                            for (bool comm : {true, false})
                                check_data(Coll::Reduce, a, P, M, count, seg, root, comm, params, S);
                            if (root == 0)
                                for (bool comm : {true, false})
                                    check_data(Coll::Allreduce, a, P, M, count, seg, 0, comm,
                                               params, S);
                        }
  }
}
END_TEST

// hanx's split-rail allreduce (the core's COLLX_HIER_SPLIT_RAIL plan):
// right on nodes of one size, 2 and 3 levels, serial and non-serial
// schedules, with segments shorter than a node (empty chunks); on nodes of
// different sizes the levels' allreduce runs, as in hanx.  It costs other
// time than the levels' allreduce where it runs, and the same where not.
START_TEST(data_mode_hanx_split_rails) {
    for (const char *name : {"hanx-split", "hanx-split-sched:binomial:pipeline"}) {
        Algo a;
        ck_assert(parse_algo(name, &a));
        ck_assert(a.split && a.hanx);
        const std::string named = algo_name(a);
        ck_assert_str_eq(named.c_str(), name);
        a.inner_seg = 32;
        for (int P : {4, 6, 8, 12, 5})
            for (int M : {2, 3, 4})
                for (int S : {0, 2})
                    for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(50)})
                        for (std::size_t seg : {std::size_t(48), std::size_t(0)})
                            for (bool comm : {true, false})
                                check_data(Coll::Allreduce, a, P, M, count, seg, 0, comm, Params::defaults(), S);
    }
    Algo split, levels;
    ck_assert(parse_algo("hanx-split", &split));
    ck_assert(parse_algo("hanx", &levels));
    ck_assert(!parse_algo("hanx-splitx", &split) && parse_algo("hanx-split", &split));
    const Params p = Params::defaults();
    const double s8 = run(p, Topology{8, 4, 0}, Coll::Allreduce, split, 1 << 20, 0).time_ns,
                 l8 = run(p, Topology{8, 4, 0}, Coll::Allreduce, levels, 1 << 20, 0).time_ns;
    ck_assert_msg(s8 != l8, "split and levels both %g ns on 2x4", s8);
    ck_assert_double_eq(run(p, Topology{7, 4, 0}, Coll::Allreduce, split, 1 << 20, 0).time_ns,
                        run(p, Topology{7, 4, 0}, Coll::Allreduce, levels, 1 << 20, 0).time_ns);
    ck_assert_double_eq(run(p, Topology{8, 4, 0}, Coll::Bcast, split, 1 << 20, 0).time_ns,
                        run(p, Topology{8, 4, 0}, Coll::Bcast, levels, 1 << 20, 0).time_ns);
}
END_TEST

// hanx's allgather (run_allgather): the core's stages (collx_hier_plan),
// every rank's block in its place on every rank, on 1 to 5 nodes, nodes of
// different sizes, 2 and 3 levels, the leaders' stage as the module and
// on the collx ring.
START_TEST(data_mode_hanx_allgather) {
    for (const char *name : {"hanx", "hanx:module:ring", "hanx-sched", "hanx-split"}) {
        Algo a;
        ck_assert(parse_algo(name, &a));
        for (int P : {1, 2, 4, 5, 8, 9})
            for (int M : {1, 2, 3, 4})
                for (int S : {0, 2})
                    for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(7),
                                              std::size_t(3000)})
                        check_data(Coll::Allgather, a, P, M, count, 0, 0, true,
                                   Params::defaults(), S < M ? S : 0);
    }
    Algo hanx, ring, flat_tree = flat(COLLX_TREE_RING);
    ck_assert(parse_algo("hanx", &hanx) && parse_algo("hanx:module:ring", &ring));
    const Params p = Params::defaults();
    const auto t = [&](const Algo &a, std::size_t block) {
        return run(p, Topology{8, 2, 0}, Coll::Allgather, a, block, 0).time_ns;
    };
    ck_assert(t(hanx, 30000) != t(ring, 30000));  // the ring in its segments
    // the node ring (hanx-split): the one flag's from 32 KiB blocks, whatever
    // the levels would run; below, the levels
    Algo node_ring;
    ck_assert(parse_algo("hanx-split", &node_ring));
    ck_assert_double_eq(t(hanx, 32768), t(node_ring, 32768));
    ck_assert_double_eq(t(ring, 1 << 20), t(node_ring, 1 << 20));
    ck_assert(t(hanx, 32760) != t(node_ring, 32760));
    bool threw = false;  // (no flat allgather)
    try {
        t(flat_tree, 64);
    } catch (const std::invalid_argument &) {
        threw = true;
    }
    ck_assert(threw);
}
END_TEST

// hanx's reduce_scatter_block (run_reduce_scatter): split rails on the
// core's layout (collx_hier_rail_layout, which hanx runs) with the collx
// ring or the modules on each level, and the levels (nodes of different
// sizes, small vectors); right for commutative and non-commutative ops
// (rank order: the modules fold in node, then rail order), on 2 and 3
// levels, whatever the counts.  The one flag takes split rails from
// COLLX_RS_SPLIT_RING_MIN_BYTES of vector on nodes of one size, as hanx.
START_TEST(data_mode_hanx_reduce_scatter_block) {
    for (const char *name : {"hanx", "hanx-split", "hanx-split:binomial:binomial",
                             "hanx-split:ring:binomial", "hanx:binomial:ring"}) {
        Algo a;
        ck_assert(parse_algo(name, &a));
        for (int P : {2, 4, 6, 8, 5, 9})
            for (int M : {1, 2, 3})
                for (int S : {0, 2})
                    for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(7),
                                              std::size_t(300)})
                        for (bool comm : {true, false})
                            check_data(Coll::ReduceScatterBlock, a, P, M, count, 0, 0, comm,
                                       Params::defaults(), S < M ? S : 0);
    }
    Algo hanx, split, flat_tree = flat(COLLX_TREE_RING);
    ck_assert(parse_algo("hanx", &hanx) && parse_algo("hanx-split", &split));
    const Params p = Params::defaults();
    const auto t = [&](const Algo &a, int P, int M, std::size_t block) {
        return run(p, Topology{P, M, 0}, Coll::ReduceScatterBlock, a, block, 0).time_ns;
    };
    // 4 x 2: split rails from 8 KiB blocks (64 KiB of vector), the levels below
    ck_assert_double_eq(t(hanx, 8, 2, 8192), t(split, 8, 2, 8192));
    ck_assert(t(hanx, 8, 2, 4096) != t(split, 8, 2, 4096));
    // nodes of different sizes: the levels, whatever is asked
    ck_assert_double_eq(t(hanx, 7, 2, 65536), t(split, 7, 2, 65536));
    bool threw = false;  // (no flat reduce_scatter_block)
    try {
        t(flat_tree, 4, 2, 64);
    } catch (const std::invalid_argument &) {
        threw = true;
    }
    ck_assert(threw);
}
END_TEST

// MPI_Ireduce_scatter_block (hanx-sched): hanx runs it itself only on
// split rails with the collx ring on both levels and a commutative op --
// the blocking call's stages, one segment, one after the other, so the
// same time and the same (right) result -- and hands every other case to
// the previous module (libnbc), which the simulator refuses rather than
// predicting code that does not run.
START_TEST(hanx_sched_reduce_scatter_block_where_hanx_runs_it) {
    Algo hanx, sched, split, split_sched, split_sched_modules;
    ck_assert(parse_algo("hanx", &hanx) && parse_algo("hanx-sched", &sched) &&
              parse_algo("hanx-split", &split) && parse_algo("hanx-split-sched", &split_sched) &&
              parse_algo("hanx-split-sched:binomial:binomial", &split_sched_modules));
    const Params p = Params::defaults();
    const auto t = [&](const Algo &a, int P, int M, std::size_t block) {
        return run(p, Topology{P, M, 0}, Coll::ReduceScatterBlock, a, block, 0).time_ns;
    };
    const auto refused = [&](const Algo &a, int P, int M, std::size_t block) {
        try {
            t(a, P, M, block);
        } catch (const std::invalid_argument &) {
            return true;
        }
        return false;
    };
    // split rails on the rings (the one flag's from 64 KiB of vector; a
    // "split" rule's at every size): as the blocking call
    ck_assert_double_eq(t(sched, 8, 2, 8192), t(hanx, 8, 2, 8192));
    ck_assert_double_eq(t(split_sched, 8, 2, 64), t(split, 8, 2, 64));
    for (int P : {4, 8, 6})
        for (std::size_t count : {std::size_t(1), std::size_t(300)})
            check_data(Coll::ReduceScatterBlock, split_sched, P, 2, count, 0, 0, true);
    // the rest: the previous module's
    ck_assert(refused(sched, 8, 2, 4096));                 // the levels (a small vector)
    ck_assert(refused(split_sched_modules, 8, 2, 8192));   // split rails on the modules
    ck_assert(refused(split_sched, 7, 2, 8192));           // nodes of different sizes
    ck_assert(refused(split_sched, 8, 2, 0));              // nothing to reduce
    bool threw = false;                                    // a non-commutative op
    try {
        check_data(Coll::ReduceScatterBlock, split_sched, 4, 2, 8, 0, 0, false);
    } catch (const std::invalid_argument &) {
        threw = true;
    }
    ck_assert(threw);
}
END_TEST

// hanx on its schedules (coll_hanx_blocking_schedule 1, the non-blocking
// calls): one segment runs its stages one after the other, as a blocking
// call does (the same time); pipelined, a step does not wait for the one
// before it on its communicator to finish (another time).  (With
// the levels left to the modules, the schedules also stand for the
// non-blocking calls, whose levels run built-in trees: named trees here.)
START_TEST(hanx_schedule_runs_pipelined_calls_only) {
    Algo lock, sched;
    ck_assert(parse_algo("hanx:binomial:binomial", &lock));
    ck_assert(parse_algo("hanx-sched", &sched));
    ck_assert(sched.schedule && sched.hanx && !lock.schedule);
    ck_assert(!parse_algo("hanx-sched:topo:binomial", &sched) && !parse_algo("hanx-schedx", &sched));
    ck_assert(parse_algo("hanx-sched:binomial:binomial", &sched));
    const Params p = Params::defaults();
    const Topology t{8, 4, 0};
    for (Coll c : {Coll::Bcast, Coll::Reduce, Coll::Allreduce}) {
        ck_assert_double_eq(run(p, t, c, lock, 65536, 0).time_ns, run(p, t, c, sched, 65536, 0).time_ns);
        const double l = run(p, t, c, lock, 1 << 20, 65536).time_ns,
                     s = run(p, t, c, sched, 1 << 20, 65536).time_ns;
        ck_assert_msg(l != s, "%s: serial and non-serial schedule both %g ns", coll_name(c), l);
    }
}
END_TEST

// Composition: hanx with one segment is its stages one after the other,
// each rank starting a stage when it finished the previous one.  Since the
// node level and the leaders share no link (the NIC carries only the
// leader's traffic), the hanx time must equal the composition of separately
// simulated flat stages: bcast = max over leaders k of (k's finish in the
// leaders' bcast) + node bcast; reduce = node reduce + leaders' reduce;
// allreduce = node reduce + max_k(leaders' allreduce finish of k) + node bcast.
START_TEST(hanx_composes_its_stages) {
    Params p = Params::defaults();
    p.copy_ns_per_byte = 0;  // hanx's top stages run in place, the flat references do not
    const std::size_t bytes = 100000;  // one hanx segment, several inner ones
    for (int nn : {2, 3, 8})
        for (int M : {2, 4, 5}) {
            const Topology all{nn * M, M, 0}, leaders{nn, 1, 0}, node{M, M, 0};
            Algo hanx;  // binomial trees on its levels, as the flat references
            hanx.hanx = true;
            hanx.low = hanx.up = COLLX_TREE_BINOMIAL;
            const Algo bin = flat(COLLX_TREE_BINOMIAL);
            const double nb = run(p, node, Coll::Bcast, bin, bytes, 65536).time_ns;
            // (the sub-collectives of a hanx allreduce use reductions' 32 KiB segments)
            const double nb32 = run(p, node, Coll::Bcast, bin, bytes, 32768).time_ns;
            const double nr = run(p, node, Coll::Reduce, bin, bytes, 32768).time_ns;
            const Result lb = run(p, leaders, Coll::Bcast, bin, bytes, 65536);
            const Result lr = run(p, leaders, Coll::Reduce, bin, bytes, 32768);
            const Result la = run(p, leaders, Coll::Allreduce, bin, bytes, 32768);
            double want_b = 0, want_a = 0;
            for (int k = 0; k < nn; ++k) {
                want_b = std::max(want_b, lb.finish_ns[k] + nb);
                want_a = std::max(want_a, nr + la.finish_ns[k] + nb32);
            }
            const double want_r = nr + lr.time_ns;
            const double got_b = run(p, all, Coll::Bcast, hanx, bytes, 0).time_ns;
            const double got_r = run(p, all, Coll::Reduce, hanx, bytes, 0).time_ns;
            const double got_a = run(p, all, Coll::Allreduce, hanx, bytes, 0).time_ns;
            ck_assert_msg(close(got_b, want_b), "bcast %dx%d: %.3f, want %.3f", nn, M, got_b, want_b);
            ck_assert_msg(close(got_r, want_r), "reduce %dx%d: %.3f, want %.3f", nn, M, got_r, want_r);
            ck_assert_msg(close(got_a, want_a), "allreduce %dx%d: %.3f, want %.3f", nn, M, got_a,
                          want_a);
        }
}
END_TEST

// "hanx" runs each level as Open MPI's module would (module_tree): on 2
// leaders a small allreduce by recursive doubling, on 4 one of 8 KiB and
// more around the ring, a 64 KiB bcast linear, each unsegmented; the same
// times as those trees asked for by name with the segment as large as the
// call.  Where hanx has a built-in tree for the level, that tree; where it
// runs a large allreduce as one ring over all ranks, that ring; a small one
// (collx_allreduce_builtin, stop 38) as one topo tree over all ranks.
START_TEST(hanx_levels_model_the_modules) {
    const Params p = Params::defaults();
    const Topology t{8, 2, 0};
    Algo modules;
    ck_assert(parse_algo("hanx", &modules));
    ck_assert(modules.low == kModuleTree && modules.up == kModuleTree);
    const std::string modules_name = algo_name(modules);
    ck_assert_str_eq(modules_name.c_str(), "hanx");
    const auto named = [](const char *name, std::size_t inner) {
        Algo a;
        ck_assert(parse_algo(name, &a));
        a.inner_seg = inner;
        return a;
    };
    const Topology two{4, 2, 0};
    const struct {
        Topology t;
        Coll c;
        std::size_t bytes;
        const char *same, *other;
    } cases[] = {{two, Coll::Allreduce, 4096, "hanx:binomial:recursive_doubling", "hanx:binomial:binomial"},
                 {t, Coll::Allreduce, 65536, "hanx:binomial:ring", "hanx:binomial:recursive_doubling"},
                 {t, Coll::Bcast, 65536, "hanx:binomial:linear", "hanx:binomial:binomial"},
                 {t, Coll::Allreduce, 1024, "topo", "hanx:binomial:recursive_doubling"},
                 {t, Coll::Allreduce, 16384, "topo", "hanx:binomial:ring"},
                 {two, Coll::Allreduce, 1024, "topo", "hanx:binomial:recursive_doubling"}};
    {  // (on the schedules, as hanx's non-blocking calls run: the levels)
        Algo sched;
        ck_assert(parse_algo("hanx-sched", &sched));
        ck_assert(run(p, t, Coll::Allreduce, sched, 1024, 1024).time_ns !=
                  run(p, t, Coll::Allreduce, named("topo", 1024), 1024, 1024).time_ns);
    }
    for (const auto &k : cases) {
        // one hanx segment (seg = bytes), the named tree unsegmented too
        const double m = run(p, k.t, k.c, modules, k.bytes, k.bytes).time_ns,
                     same = run(p, k.t, k.c, named(k.same, k.bytes), k.bytes, k.bytes).time_ns,
                     other = run(p, k.t, k.c, named(k.other, k.bytes), k.bytes, k.bytes).time_ns;
        ck_assert_msg(m == same, "%s %zu B: hanx %g ns, %s %g ns", coll_name(k.c), k.bytes, m,
                      k.same, same);
        ck_assert_msg(m != other, "%s %zu B: hanx and %s both %g ns", coll_name(k.c), k.bytes,
                      k.other, m);
    }
    // a reduce of 64 KiB or more: hanx's built-in binomial tree between the
    // leaders (collx_hier_level_tree), pipelined in the tree's own segments
    Algo tree;
    ck_assert(parse_algo("hanx:module:binomial", &tree));
    const double r = run(p, t, Coll::Reduce, modules, 131072, 131072).time_ns;
    ck_assert_double_eq(r, run(p, t, Coll::Reduce, tree, 131072, 131072).time_ns);
    ck_assert(r != run(p, t, Coll::Reduce, named("hanx:module:binomial", 131072), 131072, 131072).time_ns);
    // the one flag's large allreduce (collx_allreduce_builtin), blocking
    // or not (the schedules): from 128 KiB on nodes of one size, split
    // rails with the collx ring on the rails in 256 KiB segments (the
    // node's module inside the node, not the ring's halves); the levels
    // wherever a level's algorithm is named
    const double mib = 1 << 20;
    const Algo ring = flat(COLLX_TREE_RING);
    Algo rails, halves, sched, sched_rails;
    ck_assert(parse_algo("hanx-split:module:ring", &rails));
    ck_assert(parse_algo("hanx-split:ring:ring", &halves));
    ck_assert(parse_algo("hanx-sched", &sched));
    ck_assert(parse_algo("hanx-split-sched:module:ring", &sched_rails));
    for (const Topology &shape : {t, two}) {
        const double one_flag = run(p, shape, Coll::Allreduce, modules, mib, 0).time_ns;
        ck_assert_double_eq(one_flag, run(p, shape, Coll::Allreduce, rails, mib,
                                          COLLX_SPLIT_RING_SEGMENT_BYTES).time_ns);
        ck_assert(one_flag != run(p, shape, Coll::Allreduce, rails, mib, 32768).time_ns);
        ck_assert(one_flag != run(p, shape, Coll::Allreduce, halves, mib,
                                  COLLX_SPLIT_RING_SEGMENT_BYTES).time_ns);
        ck_assert(one_flag != run(p, shape, Coll::Allreduce, ring, mib, 0).time_ns);
        const double nb = run(p, shape, Coll::Allreduce, sched, mib, 0).time_ns;
        ck_assert_double_eq(nb, run(p, shape, Coll::Allreduce, sched_rails, mib,
                                    COLLX_SPLIT_RING_SEGMENT_BYTES).time_ns);
        ck_assert(nb != run(p, shape, Coll::Allreduce, ring, mib, 0).time_ns);
        ck_assert(nb != run(p, shape, Coll::Allreduce, sched_rails, mib, 32768).time_ns);
        // below 128 KiB: the levels
        ck_assert(run(p, shape, Coll::Allreduce, modules, 65536, 0).time_ns !=
                  run(p, shape, Coll::Allreduce, rails, 65536, COLLX_SPLIT_RING_SEGMENT_BYTES).time_ns);
    }
    ck_assert(run(p, t, Coll::Allreduce, tree, mib, 0).time_ns !=
              run(p, t, Coll::Allreduce, ring, mib, 0).time_ns);
    // data right: 1 MiB of 16-byte elements, split rails on the ring (4
    // segments, 2 and 4 nodes), blocking or not
    check_data(Coll::Allreduce, modules, 8, 2, 65536, 0, 0, true);
    check_data(Coll::Allreduce, modules, 4, 2, 65536, 0, 0, true);
    check_data(Coll::Allreduce, sched, 8, 2, 65536, 0, 0, true);
    // the ring's halves inside nodes of 3 (coll_hanx_low_algorithm ring),
    // and a non-commutative op (the node's module keeps rank order there)
    check_data(Coll::Allreduce, halves, 9, 3, 1001, 256, 0, true);
    check_data(Coll::Allreduce, halves, 9, 3, 1001, 256, 0, false);
    Algo mixed;
    ck_assert(parse_algo("hanx:module:pipeline", &mixed));
    ck_assert(mixed.low == kModuleTree && mixed.up == COLLX_TREE_PIPELINE);
    const std::string mixed_name = algo_name(mixed);
    ck_assert_str_eq(mixed_name.c_str(), "hanx:module:pipeline");
    ck_assert(!parse_algo("hanx:modul:binomial", &mixed));
}
END_TEST

// 64k ranks, data-free: completes, positive, monotone in bytes
START_TEST(sixty_four_k_ranks) {
    const Params p = Params::defaults();
    const Topology t{65536, 64, 0};
    Algo bin = flat(COLLX_TREE_BINOMIAL), hanx;
    hanx.hanx = true;
    double prev = 0;
    for (std::size_t bytes : {std::size_t(8), std::size_t(65536)}) {
        const double x = predict(p, t, Coll::Bcast, bin, bytes);
        ck_assert_msg(x > prev, "binomial bcast of %zu bytes: %g s", bytes, x);
        prev = x;
    }
    const double small = predict(p, t, Coll::Allreduce, hanx, 8),
                 big = predict(p, t, Coll::Allreduce, hanx, 4096);
    ck_assert_msg(small > 0 && big > small, "hanx allreduce: %g s, %g s", small, big);
}
END_TEST

START_TEST(fit_recovers_the_parameters) {
    Params truth = Params::defaults();
    truth.level[Net] = LevelParams{9000, 1500, 0, 0.9, 65536};
    truth.level[SameNode] = LevelParams{1200, 600, 0, 0.3, 4096};
    std::vector<Sample> s;
    for (int l : {SameNode, Net})
        for (double b : {0.0, 1024.0, 16384.0, 262144.0, 1048576.0}) {
            const LevelParams &lp = truth.level[l];
            const double hops = b > static_cast<double>(lp.eager) ? 3 : 1;
            s.push_back(Sample{l, b, (hops * lp.L + 2 * lp.o + b * lp.G) / 1000.0});
        }
    const Params f = fit(s, Params::defaults());
    for (int l : {SameNode, Net}) {
        ck_assert_msg(std::fabs(f.level[l].L - truth.level[l].L) < 1e-3, "L %g", f.level[l].L);
        ck_assert_msg(std::fabs(f.level[l].o - truth.level[l].o) < 1e-3, "o %g", f.level[l].o);
        ck_assert_msg(std::fabs(f.level[l].G - truth.level[l].G) < 1e-9, "G %g", f.level[l].G);
    }
    // eager samples only: L and o cannot be told apart; the intercept
    // L + 2o is split by o_share (o = share * (L + 2o) / 2)
    std::vector<Sample> e;
    for (double b : {0.0, 512.0, 4096.0, 32768.0})
        e.push_back(Sample{Net, b, (13000.0 + b * 1.25) / 1000.0});
    const Params g = fit(e, Params::defaults(), 0.4);
    ck_assert_msg(std::fabs(g.level[Net].L + 2 * g.level[Net].o - 13000.0) < 1e-3, "L %g o %g",
                  g.level[Net].L, g.level[Net].o);
    ck_assert(std::fabs(g.level[Net].o - 0.4 * 13000.0 / 2) < 1e-3);
    ck_assert(std::fabs(g.level[Net].G - 1.25) < 1e-9);
    // the parameter file round-trips, and the samples parser reads both forms
    const Params back = Params::from_json_text(f.to_json_text());
    ck_assert(back.level[Net].L == f.level[Net].L && back.level[Net].eager == f.level[Net].eager);
    ck_assert_int_eq(parse_samples("{\"net\": [[8, 13.1], [65536, 80]]}").size(), 2);
    ck_assert_int_eq(parse_samples("# level,bytes,us\nnode,8,2.9\nnet,8,13\n").size(), 2);
    bool threw = false;
    try {
        Params::from_json_text("{\"net\": {\"L\": 3}}");
    } catch (const std::runtime_error &) {
        threw = true;
    }
    ck_assert(threw);
}
END_TEST

int main(void) {
    Suite *s = suite_create("collx-sim");
    TCase *tc = tcase_create("sim");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, chain_bcast_closed_form);
    tcase_add_test(tc, binomial_bcast_closed_form);
    tcase_add_test(tc, nic_serialises_a_nodes_inter_node_bytes);
    tcase_add_test(tc, nic_in_serialises_incoming_bytes);
    tcase_add_test(tc, rendezvous_adds_a_round_trip);
    tcase_add_test(tc, same_inputs_same_times);
    tcase_add_test(tc, data_mode_flat_trees_match_the_reference);
    tcase_add_test(tc, data_mode_hanx_matches_the_reference);
    tcase_add_test(tc, data_mode_hanx_any_root_and_three_levels);
    tcase_add_test(tc, hanx_schedule_runs_pipelined_calls_only);
    tcase_add_test(tc, data_mode_hanx_split_rails);
    tcase_add_test(tc, data_mode_hanx_reduce_scatter_block);
    tcase_add_test(tc, hanx_sched_reduce_scatter_block_where_hanx_runs_it);
    tcase_add_test(tc, data_mode_hanx_allgather);
    tcase_add_test(tc, data_mode_with_rendezvous);
    tcase_add_test(tc, hanx_composes_its_stages);
    tcase_add_test(tc, hanx_levels_model_the_modules);
    tcase_add_test(tc, sixty_four_k_ranks);
    tcase_add_test(tc, fit_recovers_the_parameters);
    tcase_add_test(tc, default_segments_are_the_components);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
