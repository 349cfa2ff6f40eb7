// collx-sim: predicted latency of collx's collectives from the
// discrete-event simulator (opal/collx/sim.hpp); see docs/simulator.md.
//
//   collx-sim --coll C --algo A --ranks P --per-node M --bytes B [--seg S] [--params F]
//   collx-sim --sweep [--coll C|all] [--per-node M] [--sizes B,B,..] [--min-ranks P]
//             [--max-ranks P] [--algos A,A,..] [--max-messages N] [--params F]
//   collx-sim fit SAMPLES [--params BASE] [--out PARAMS.json] [--o-share X]
//   collx-sim --print-params [--params F]
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "sim.hpp"

using namespace collx::sim;

namespace {

const char *usage_text =
    "usage: collx-sim --coll bcast|reduce|allreduce|allgather|reduce_scatter_block\n"
    "                 --algo ALGO\n"
    "                 --ranks P --per-node M\n"
    "                 --bytes B [--seg BYTES] [--inner-seg BYTES] [--fanout K] [--per-socket S]\n"
    "                 [--root R]\n"
    "                 [--params FILE.json] [--ranks-out]\n"
    "       collx-sim --sweep [--coll C|all] [--per-node M] [--sizes B,B,...]\n"
    "                 [--min-ranks P] [--max-ranks P] [--algos A,A,...] [--max-messages N]\n"
    "                 [--params FILE.json]\n"
    "       collx-sim fit SAMPLES.json|.csv [--params BASE.json] [--out PARAMS.json]\n"
    "                 [--o-share X]\n"
    "       collx-sim --print-params [--params FILE.json]\n"
    "ALGO: binomial in_order_binomial binary knomial chain pipeline linear topo ring\n"
    "      recursive_doubling\n"
    "      hanx (the one flag's built-in choice: each level as its module or hanx's\n"
    "      built-in tree, a large allreduce as one ring where hanx takes it)\n"
    "      hanx:LOW:UP (the levels: a tree or \"module\" within nodes / across leaders,\n"
    "      e.g. hanx:binomial:pipeline)\n"
    "      hanx-sched, hanx-sched:LOW:UP (hanx on its schedules, not lock-step)\n"
    "      hanx-split[-sched][:LOW:UP] (allreduce as split rails; UP on the rails)\n"
    "allgather (--bytes: each rank's block) runs on hanx only: hanx[:LOW:UP] (the\n"
    "      node ring from 32 KiB blocks, 2 nodes or more, up to 64 ranks; below, the\n"
    "      levels, the leaders' exchange on the collx ring where UP is ring, else\n"
    "      their module),\n"
    "      hanx-split (the node ring at every size: every rank's block at once\n"
    "      round the nodes)\n"
    "reduce_scatter_block (--bytes: each rank's block) runs on hanx only: hanx[:LOW:UP]\n"
    "      (split rails from 64 KiB of vector on nodes of one size, else the levels),\n"
    "      hanx-split[:LOW:UP] (split rails at every size); on split rails a level\n"
    "      \"module\" (left alone) or ring runs the collx ring, another its module\n"
    "--seg: segment bytes (hanx: of its pipeline; default: as the components choose);\n"
    "--inner-seg: hanx's sub-collectives' segments; --fanout: knomial radix / chains (4).\n"
    "--per-socket S (< M): hanx gets a socket level (3 levels); --root: bcast/reduce (0).\n"
    "Sizes accept k/K (KiB) and m/M (MiB) suffixes.  Times are microseconds.\n";

[[noreturn]] void die(const std::string &msg) {
    std::fprintf(stderr, "collx-sim: %s\n", msg.c_str());
    std::exit(2);
}

unsigned long long parse_size(const std::string &s, const char *what) {
    errno = 0;
    char *end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (errno || end == s.c_str() || s[0] == '-') die(std::string(what) + ": not a size: " + s);
    unsigned long long mult = 1;
    if (*end == 'k' || *end == 'K') mult = 1024, ++end;
    else if (*end == 'm' || *end == 'M') mult = 1024 * 1024, ++end;
    if (*end) die(std::string(what) + ": not a size: " + s);
    return v * mult;
}

std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

std::string read_file(const std::string &path) {
    std::ifstream in(path);
    if (!in) die(path + ": cannot be read");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

Params load_params(const std::string &path) {
    if (path.empty()) return Params::defaults();
    try {
        return Params::load(path);
    } catch (const std::exception &ex) {
        die(ex.what());
    }
}

int do_fit(int argc, char **argv) {
    std::string samples_path, base_path, out_path;
    double share = 0.25;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) die(a + " needs a value");
            return argv[++i];
        };
        if (a == "--params") base_path = val();
        else if (a == "--out") out_path = val();
        else if (a == "--o-share") share = std::atof(val().c_str());
        else if (a[0] != '-' && samples_path.empty()) samples_path = a;
        else die("unknown argument " + a + "\n" + usage_text);
    }
    if (samples_path.empty()) die(std::string("fit needs a samples file\n") + usage_text);
    if (!(share >= 0 && share < 1)) die("--o-share wants a number in [0, 1)");
    std::vector<Sample> samples;
    try {
        samples = parse_samples(read_file(samples_path));
    } catch (const std::exception &ex) {
        die(samples_path + ": " + ex.what());
    }
    if (samples.empty()) die(samples_path + ": no samples");
    std::string report;
    const Params p = fit(samples, load_params(base_path), share, &report);
    std::fputs(report.c_str(), stderr);
    if (out_path.empty()) {
        std::fputs(p.to_json_text().c_str(), stdout);
    } else {
        std::ofstream out(out_path);
        out << p.to_json_text();
        if (!out) die(out_path + ": cannot be written");
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc >= 2 && std::string(argv[1]) == "fit") return do_fit(argc, argv);
    std::string coll = "bcast", algo = "binomial", params_path, sizes = "8,1k,64k,1m", algos;
    long long P = 0, M = 64, S = 0, root = 0, min_ranks = 16, max_ranks = 65536;
    unsigned long long bytes = 0, seg = 0, inner_seg = 0, max_messages = 20000000ull;
    long long fanout = 4;
    bool sweep = false, print_params = false, ranks_out = false, have_bytes = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) die(a + " needs a value");
            return argv[++i];
        };
        if (a == "--coll") coll = val();
        else if (a == "--algo") algo = val();
        else if (a == "--ranks") P = static_cast<long long>(parse_size(val(), "--ranks"));
        else if (a == "--per-node") M = static_cast<long long>(parse_size(val(), "--per-node"));
        else if (a == "--per-socket") S = static_cast<long long>(parse_size(val(), "--per-socket"));
        else if (a == "--bytes") bytes = parse_size(val(), "--bytes"), have_bytes = true;
        else if (a == "--seg") seg = parse_size(val(), "--seg");
        else if (a == "--root") root = static_cast<long long>(parse_size(val(), "--root"));
        else if (a == "--inner-seg") inner_seg = parse_size(val(), "--inner-seg");
        else if (a == "--fanout") fanout = static_cast<long long>(parse_size(val(), "--fanout"));
        else if (a == "--params") params_path = val();
        else if (a == "--sweep") sweep = true;
        else if (a == "--sizes") sizes = val();
        else if (a == "--algos") algos = val();
        else if (a == "--min-ranks") min_ranks = static_cast<long long>(parse_size(val(), a.c_str()));
        else if (a == "--max-ranks") max_ranks = static_cast<long long>(parse_size(val(), a.c_str()));
        else if (a == "--max-messages") max_messages = parse_size(val(), a.c_str());
        else if (a == "--print-params") print_params = true;
        else if (a == "--ranks-out") ranks_out = true;
        else if (a == "-h" || a == "--help") {
            std::fputs(usage_text, stdout);
            return 0;
        } else
            die("unknown argument " + a + "\n" + usage_text);
    }
    const Params params = load_params(params_path);
    if (print_params) {
        std::fputs(params.to_json_text().c_str(), stdout);
        return 0;
    }
    if (M < 1 || M > 65536) die("--per-node: 1..65536");
    if (S < 0 || S > M) die("--per-socket: 0..per-node");
    if (fanout < 1 || fanout > 1024) die("--fanout: 1..1024");

    std::vector<Coll> colls;
    if (sweep && coll == "all") {
        colls = {Coll::Bcast, Coll::Reduce, Coll::Allreduce};
    } else {
        Coll c;
        if (!parse_coll(coll, &c)) die("--coll: bcast, reduce, allreduce, allgather or reduce_scatter_block, not " + coll);
        colls = {c};
    }

    if (!sweep) {
        if (P < 1 || P > 65536) die("--ranks: 1..65536 needed");
        if (!have_bytes) die("--bytes needed");
        if (root >= P) die("--root: 0..ranks-1");
        Algo al;
        if (!parse_algo(algo, &al)) die("--algo: unknown algorithm " + algo + "\n" + usage_text);
        al.fanout = static_cast<int>(fanout);
        al.inner_seg = inner_seg;
        Topology t{static_cast<int>(P), static_cast<int>(M), static_cast<int>(S)};
        try {
            const std::size_t s = seg ? seg : default_segment(params, t, colls[0], al, bytes);
            const Result r = run(params, t, colls[0], al, bytes, s, static_cast<int>(root));
            std::printf("%.3f\n", r.time_ns / 1000.0);
            if (ranks_out)
                for (std::size_t k = 0; k < r.finish_ns.size(); ++k)
                    std::printf("rank %zu %.3f\n", k, r.finish_ns[k] / 1000.0);
            std::fprintf(stderr,
                         "collx-sim: %s %s P=%lld per-node=%lld root=%lld bytes=%llu seg=%zu: "
                         "%.3f us (%llu messages, %llu events)\n",
                         coll_name(colls[0]), algo_name(al).c_str(), P, M, root, bytes, s,
                         r.time_ns / 1000.0, static_cast<unsigned long long>(r.messages),
                         static_cast<unsigned long long>(r.events));
        } catch (const std::exception &ex) {
            die(ex.what());
        }
        return 0;
    }

    // ------------------------------------------------------------- sweep
    std::vector<Algo> alg;
    if (algos.empty()) {
        alg = all_algos();
        for (Algo &a : alg) {
            a.fanout = static_cast<int>(fanout);
            a.inner_seg = inner_seg;
        }
    } else {
        for (const std::string &n : split(algos)) {
            Algo a;
            if (!parse_algo(n, &a)) die("--algos: unknown algorithm " + n);
            a.fanout = static_cast<int>(fanout);
            a.inner_seg = inner_seg;
            alg.push_back(a);
        }
    }
    std::vector<unsigned long long> sz;
    for (const std::string &s : split(sizes)) sz.push_back(parse_size(s, "--sizes"));
    if (sz.empty()) die("--sizes: at least one size");
    std::printf("# collx-sim sweep: %lld ranks per node; microseconds; empty = skipped "
                "(over --max-messages, or topo over 4096 ranks)\n",
                M);
    std::printf("coll,ranks,nodes,bytes");
    for (const Algo &a : alg) std::printf(",%s", algo_name(a).c_str());
    std::printf(",winner\n");
    for (Coll c : colls)
        for (long long p = min_ranks; p <= max_ranks; p *= 2)
            for (unsigned long long b : sz) {
                Topology t{static_cast<int>(p), static_cast<int>(M), static_cast<int>(S)};
                std::printf("%s,%lld,%d,%llu", coll_name(c), p, t.nodes(), b);
                double best = -1;
                std::string winner;
                for (const Algo &a : alg) {
                    const std::size_t s = seg ? seg : default_segment(params, t, c, a, b);
                    const unsigned long long nseg = s && b ? (b + s - 1) / s : 1;
                    const unsigned long long est =
                        static_cast<unsigned long long>(p) * nseg * (c == Coll::Allreduce ? 2 : 1);
                    if (est > max_messages || (!a.hanx && a.tree == COLLX_TREE_TOPO && p > 4096)) {
                        std::printf(",");
                        continue;
                    }
                    try {
                        const double us = run(params, t, c, a, b, s).time_ns / 1000.0;
                        std::printf(",%.2f", us);
                        if (best < 0 || us < best) best = us, winner = algo_name(a);
                    } catch (const std::exception &ex) {
                        std::printf(",");
                        std::fprintf(stderr, "collx-sim: %s %s P=%lld bytes=%llu: %s\n",
                                     coll_name(c), algo_name(a).c_str(), p, b, ex.what());
                    }
                    std::fflush(stdout);
                }
                std::printf(",%s\n", winner.c_str());
                std::fflush(stdout);
            }
    return 0;
}
