// The front door's cost model (collx.h, collx_model_choose): alpha-beta
// predictions, per level, of each algorithm hanx can run for a call, from
// the machine's two links -- within a node and between nodes -- and the
// cost of a local reduction.  docs/cost-model.md derives every formula.
//
// Conventions: N nodes of S ranks (the largest node), P = N * S ranks in
// blocks by node; a step over a link moving x bytes costs alpha + beta * x;
// the c ranks of a node that send across at once share the node's link
// (beta * c); lg(n) = ceil(log2 n).  The previous module is modelled as the
// algorithms Open MPI's tuned runs on few ranks: a binomial tree (bcast,
// reduce), recursive doubling or a ring (allreduce), recursive doubling
// (allgather), pairwise exchange (alltoall), recursive doubling (barrier);
// for reduce_scatter hanx's two forms alone.
#include <algorithm>
#include <cmath>

#include "collx/collx.h"

namespace {

struct Link {
    double a, b;  // us, us per byte
    double step(double bytes, double share = 1) const { return a + b * share * bytes; }
};

int lg(int n) {
    int r = 0;
    while ((1 << r) < n) ++r;
    return r;
}

// On one level of n members: the tree collectives and the exchanges.
double binomial(int n, const Link &l, double x, double gamma = 0) {
    return lg(n) * (l.step(x) + gamma * x);
}
// allreduce among n: recursive doubling, or a ring (reduce-scatter +
// allgather) where cheaper; `share` flows on each link
double allreduce(int n, const Link &l, double x, double gamma, double share = 1) {
    if (n <= 1) return 0;
    const double rd = lg(n) * (l.step(x, share) + gamma * x);
    const double ring = 2.0 * (n - 1) * l.step(x / n, share) + (n - 1) * gamma * x / n;
    return std::min(rd, ring);
}
// allgather of a block b among n (recursive doubling)
double allgather(int n, const Link &l, double b, double share = 1) {
    return n <= 1 ? 0 : lg(n) * l.a + (n - 1) * l.b * share * b;
}
// the blocks of n members to one of them, one after the other (linear)
double gather(int n, const Link &l, double b) { return (n - 1) * l.step(b); }

// A pipeline of stages over k segments: the first segment goes through
// every stage, the others follow at the pace of the slowest.
double pipeline(const double *stage, int nstages, double k) {
    double sum = 0, slowest = 0;
    for (int i = 0; i < nstages; ++i) {
        sum += stage[i];
        slowest = std::max(slowest, stage[i]);
    }
    return sum + (k - 1) * slowest;
}

double segments(size_t bytes, size_t seg) {
    return seg == 0 || seg >= bytes ? 1 : std::ceil(static_cast<double>(bytes) / seg);
}

}  // namespace

extern "C" {

const char *collx_model_algorithm_name(int a) {
    static const char *const names[COLLX_MODEL_COUNT] = {
        "previous", "hierarchical", "split", "flat:pipeline", "flat:ring", "node_ring"};
    return a >= 0 && a < COLLX_MODEL_COUNT ? names[a] : nullptr;
}

int collx_model_bandwidth_bound(int coll, const collx_machine_t *mach, size_t bytes, int size) {
    if (mach == nullptr || size < 1) return 0;
    double data = static_cast<double>(bytes);
    switch (coll) {
    case COLLX_COLL_BCAST:
    case COLLX_COLL_REDUCE:
    case COLLX_COLL_ALLREDUCE: break;
    case COLLX_COLL_ALLGATHER:
    case COLLX_COLL_ALLTOALL: data *= size; break;
    default: return 0;
    }
    return data * mach->inter_beta_us >= COLLX_MODEL_BW_LATENCIES * mach->inter_alpha_us;
}

int collx_model_choose(int coll, int nnodes, int node_size, int balanced, size_t bytes,
                       size_t hier_segment, int baseline, const collx_machine_t *mach,
                       double us[COLLX_MODEL_COUNT]) {
    for (int a = 0; a < COLLX_MODEL_COUNT; ++a) us[a] = -1;
    if (mach == nullptr || nnodes < 1 || node_size < 1) return -1;
    const Link in{mach->intra_alpha_us, mach->intra_beta_us};
    const Link out{mach->inter_alpha_us, mach->inter_beta_us};
    const double g = mach->gamma_us;
    const int N = nnodes, S = node_size, P = N * S;
    const double m = static_cast<double>(bytes);
    const double s = static_cast<double>(hier_segment == 0 || hier_segment > bytes ? bytes
                                                                                   : hier_segment);
    const double k = segments(bytes, hier_segment);
    // a step of a flat tree over all ranks in node order moving x bytes:
    // at the pace of its slower kind of hop, `share` flows on a node's link
    const auto flat_hop = [&](double x, double share) {
        return std::max(N > 1 ? out.step(x, share) : 0.0, S > 1 ? in.step(x) : 0.0);
    };
    // the flat LP chain over all ranks in node order: N - 1 of its hops
    // cross a node boundary, each carrying the message once per pass; a
    // step goes at the pace of the slowest kind of hop; the passes of an
    // allreduce (reduce one way, bcast the other, segments of both in
    // flight) share each node's link; the segment is the one hanx's flat
    // tree takes (collx_tree_segment_bytes with the LP defaults)
    const auto chain = [&](int passes, double gamma) {
        const double seg = static_cast<double>(std::max<size_t>(
            1, collx_tree_segment_bytes(coll, COLLX_TREE_PIPELINE, bytes, P, 4,
                                        COLLX_LP_ALPHA_NS_DEFAULT * 1e-9,
                                        COLLX_LP_BETA_PS_DEFAULT * 1e-12)));
        const double kk = std::ceil(m / seg), x = std::min(seg, m);
        return (passes * (P - 1) + kk - 1) * (flat_hop(x, passes) + gamma * x);
    };
    switch (coll) {
    case COLLX_COLL_BCAST:
    case COLLX_COLL_REDUCE: {
        const double gg = coll == COLLX_COLL_REDUCE ? g : 0;
        us[COLLX_MODEL_PREVIOUS] = binomial(N, out, m, gg) + binomial(S, in, m, gg);
        const double st[2] = {binomial(N, out, s, gg), binomial(S, in, s, gg)};
        us[COLLX_MODEL_HIER] = pipeline(st, 2, k);
        if (P > 2) us[COLLX_MODEL_FLAT_PIPELINE] = chain(1, gg);
        break;
    }
    case COLLX_COLL_ALLREDUCE: {
        const double rd = lg(S) * (in.step(m) + g * m) + lg(N) * (out.step(m, S) + g * m);
        const double ring = 2.0 * (P - 1) * (N > 1 ? out : in).step(m / P) + (P - 1) * g * m / P;
        us[COLLX_MODEL_PREVIOUS] = std::min(rd, ring);
        const double st[3] = {binomial(S, in, s, g), allreduce(N, out, s, g),
                              binomial(S, in, s)};
        us[COLLX_MODEL_HIER] = pipeline(st, 3, k);
        if (balanced && N > 1 && S > 1) {
            // in the segments hanx runs split rails in (the one flag's, the
            // collx ring on the rails: collx_allreduce_builtin)
            const double ss = std::min(m, static_cast<double>(COLLX_SPLIT_RING_SEGMENT_BYTES));
            const double c = ss / S;  // one rank's chunk of a segment
            const double sp[3] = {(S - 1) * (in.step(c) + g * c), allreduce(N, out, c, g, S),
                                  (S - 1) * in.step(c)};
            us[COLLX_MODEL_SPLIT] = pipeline(sp, 3, segments(bytes, COLLX_SPLIT_RING_SEGMENT_BYTES));
        }
        if (P > 2) us[COLLX_MODEL_FLAT_PIPELINE] = chain(2, g);
        if (P > 1) {
            // the ring over all ranks in node order: 2(P-1) steps move every
            // chunk of m/P once each, in segments of the tree's size; one hop
            // of each node crosses its link, so the link carries all of them
            // one after the other; every rank folds P-1 chunks
            const double c = m / P;
            const double seg = static_cast<double>(std::max<size_t>(
                1, collx_tree_segment_bytes(coll, COLLX_TREE_RING, bytes, P, 4, 0, 0)));
            const double x = std::min(seg, c), kk = c > 0 ? std::ceil(c / x) : 0;
            us[COLLX_MODEL_FLAT_RING] = 2.0 * (P - 1) * kk * flat_hop(x, 1) + (P - 1) * g * c;
        }
        break;
    }
    case COLLX_COLL_ALLGATHER:  // bytes: one rank's block
        // each of a node's S ranks fetches every remote block itself
        us[COLLX_MODEL_PREVIOUS] = allgather(S, in, m) + allgather(N, out, S * m, S);
        // the blocks cross each node boundary once, through the leaders
        us[COLLX_MODEL_HIER] =
            gather(S, in, m) + allgather(N, out, S * m) + binomial(S, in, P * m);
        if (N > 1) {
            // the node ring: P broadcasts at once, each round the leaders
            // and into every node, in the segments of its tree (32 KiB);
            // a node's link carries the P - S blocks of the other nodes'
            // ranks (bandwidth: the flows overlap each other's latencies), a
            // leader forwards P - 1 blocks down its node's binomial tree,
            // and the last block's chain takes N - 1 hops between nodes and
            // lg(S) within, one segment each; the slowest of the three, and
            // one latency between nodes
            const size_t seg =
                collx_tree_segment_bytes(coll, COLLX_TREE_TOPO, bytes, P, 2, 0, 0);
            const double x = std::min(m, static_cast<double>(seg));
            const double k = segments(bytes, seg);
            const double link = (P - S) * out.b * m;
            const double node = lg(S) * (P - 1) * k * in.step(x);
            const double chain = (N - 1) * out.step(x) + lg(S) * in.step(x);
            us[COLLX_MODEL_NODE_RING] = std::max({link, node, chain}) + out.a;
        }
        break;
    case COLLX_COLL_ALLTOALL:  // bytes: one block
        us[COLLX_MODEL_PREVIOUS] = (P - S) * out.step(m, S) + (S - 1) * in.step(m);
        us[COLLX_MODEL_HIER] =
            2 * gather(S, in, P * m) + (N - 1) * out.step(static_cast<double>(S) * S * m);
        break;
    case COLLX_COLL_REDUCE_SCATTER:        // bytes: the whole vector
    case COLLX_COLL_REDUCE_SCATTER_BLOCK: {  // bytes: one rank's block
        const double b = coll == COLLX_COLL_REDUCE_SCATTER ? m / P : m, v = P * b;
        // (no previous module: Open MPI 4.1's reduce_scatter took 1.6 to 4
        // times split rails' time from 32 KiB blocks on the emulated nodes,
        // far from what its algorithms' alpha-beta costs say;
        // docs/cost-model.md)
        // the levels: the node's sum of the vector at its leader
        // (binomial), the leaders' reduce-scatter of the nodes' shares
        // (recursive halving: lg(N) steps, each leader sending and folding
        // (N-1) shares in all, as a ring would in N-1 steps), the node's
        // linear scatterv of the pieces
        us[COLLX_MODEL_HIER] = binomial(S, in, v, g) +
                               (N > 1 ? lg(N) * out.a + (N - 1) * S * b * (out.b + g) : 0) +
                               gather(S, in, b);
        if (balanced && N > 1 && S > 1)
            // split rails on the collx rings: the node's reduce-scatter of
            // the rails' parts, then each rail's of its pieces, S rails
            // sharing the node's link
            us[COLLX_MODEL_SPLIT] = (S - 1) * (in.step(v / S) + g * v / S) +
                                    (N - 1) * (out.step(b, S) + g * b);
        break;
    }
    case COLLX_COLL_BARRIER:
        us[COLLX_MODEL_PREVIOUS] = lg(S) * in.a + lg(N) * out.a;
        us[COLLX_MODEL_HIER] = 2 * lg(S) * in.a + lg(N) * out.a;
        break;
    default:
        return -1;
    }
    // the baseline unless another is clearly cheaper: the model's error on
    // the emulated nodes is of the order of the margin (docs/cost-model.md)
    if (baseline < 0 || baseline >= COLLX_MODEL_COUNT || us[baseline] < 0)
        baseline = COLLX_MODEL_HIER;
    int other = -1;
    for (int a = 0; a < COLLX_MODEL_COUNT; ++a)
        if (a != baseline && us[a] >= 0 && (other < 0 || us[a] < us[other])) other = a;
    return other >= 0 && us[other] < COLLX_MODEL_MARGIN * us[baseline] ? other : baseline;
}

}  // extern "C"
