/*
 * Determinism of reductions: the same inputs on the same ranks give bitwise
 * the same result, run after run, whatever order the messages arrive in.
 *
 * Each rank fills float and double vectors whose elements span many orders
 * of magnitude (so that any change in the order of folding changes the
 * bits), then runs every reduction `--reps` times.  Before each call every
 * rank sleeps a random time (different per rank and repetition), and the
 * non-blocking calls are completed by MPI_Test with random sleeps in
 * between, so that the partial results arrive in a different order each
 * time.  Every rank hashes each result; a result that differs from the same
 * call's first result, or an allreduce result that differs between ranks,
 * is reported.
 *
 *   determinism [--reps N] [--count N] [--max-delay-us N] [--colls a,b,...]
 *               [--self-test]
 *
 * Collectives: reduce (roots 0 and P-1), allreduce, allreduce_in_place,
 * ireduce, iallreduce, reduce_scatter_block, reduce_scatter, scan, exscan.
 * --self-test perturbs one input bit in one repetition and must then fail:
 * proof that the comparison can fail.  Exit status 0 when deterministic.
 */
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

int rank_ = 0, size_ = 1;
int reps = 20, max_delay_us = 2000;
long count = 100000;
bool self_test = false;
std::mt19937 delay_rng;

void random_delay() {
    std::uniform_int_distribution<int> d(0, max_delay_us);
    std::this_thread::sleep_for(std::chrono::microseconds(d(delay_rng)));
}

// wait for a request with random pauses, as an application computing
// between tests would
void complete(MPI_Request *req) {
    int done = 0;
    while (!done) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (!done) std::this_thread::sleep_for(std::chrono::microseconds(delay_rng() % 200));
    }
}

uint64_t fnv(const void *p, std::size_t n) {
    const unsigned char *b = static_cast<const unsigned char *>(p);
    uint64_t h = 1469598103934665603ULL;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

template <class T>
std::vector<T> inputs(int rep) {
    std::mt19937_64 g(12345 + 7919 * rank_);
    std::uniform_real_distribution<double> m(-1.0, 1.0);
    std::uniform_int_distribution<int> e(-24, 24);
    std::vector<T> v(count);
    for (auto &x : v) x = static_cast<T>(std::ldexp(m(g), e(g)));
    // the self-test changes one input of one rank in one repetition
    if (self_test && rep == reps / 2 && rank_ == size_ - 1 && count) v[count / 2] *= T(3);
    return v;
}

struct Case {
    std::string name;
    bool all_same;  // every rank must hold the same result
};

// Runs one call of collective `name` on type T and returns the hash of
// this rank's result (0 where the rank receives nothing).
template <class T>
uint64_t run_once(const std::string &name, MPI_Datatype dt, int rep) {
    std::vector<T> in = inputs<T>(rep), out(count, T(0));
    const int P = size_;
    const int n = static_cast<int>(count);
    MPI_Request req;
    random_delay();
    if (name == "reduce_root0" || name == "reduce_rootlast") {
        const int root = name == "reduce_root0" ? 0 : P - 1;
        MPI_Reduce(in.data(), out.data(), n, dt, MPI_SUM, root, MPI_COMM_WORLD);
        return rank_ == root ? fnv(out.data(), out.size() * sizeof(T)) : 0;
    }
    if (name == "allreduce") {
        MPI_Allreduce(in.data(), out.data(), n, dt, MPI_SUM, MPI_COMM_WORLD);
    } else if (name == "allreduce_in_place") {
        MPI_Allreduce(MPI_IN_PLACE, in.data(), n, dt, MPI_SUM, MPI_COMM_WORLD);
        out = in;
    } else if (name == "ireduce") {
        MPI_Ireduce(in.data(), out.data(), n, dt, MPI_SUM, P - 1, MPI_COMM_WORLD, &req);
        complete(&req);
        return rank_ == P - 1 ? fnv(out.data(), out.size() * sizeof(T)) : 0;
    } else if (name == "iallreduce") {
        MPI_Iallreduce(in.data(), out.data(), n, dt, MPI_SUM, MPI_COMM_WORLD, &req);
        complete(&req);
    } else if (name == "reduce_scatter_block") {
        const int b = n / P;
        MPI_Reduce_scatter_block(in.data(), out.data(), b, dt, MPI_SUM, MPI_COMM_WORLD);
        return fnv(out.data(), b * sizeof(T));
    } else if (name == "reduce_scatter") {
        std::vector<int> rc(P);
        for (int p = 0; p < P; ++p) rc[p] = n / P + (p < n % P ? 1 : 0);
        MPI_Reduce_scatter(in.data(), out.data(), rc.data(), dt, MPI_SUM, MPI_COMM_WORLD);
        return fnv(out.data(), rc[rank_] * sizeof(T));
    } else if (name == "scan") {
        MPI_Scan(in.data(), out.data(), n, dt, MPI_SUM, MPI_COMM_WORLD);
    } else if (name == "exscan") {
        MPI_Exscan(in.data(), out.data(), n, dt, MPI_SUM, MPI_COMM_WORLD);
        if (rank_ == 0) return 0;  // undefined there
    } else {
        std::fprintf(stderr, "determinism: unknown collective %s\n", name.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return fnv(out.data(), out.size() * sizeof(T));
}

const Case all_cases[] = {
    {"reduce_root0", false},         {"reduce_rootlast", false}, {"allreduce", true},
    {"allreduce_in_place", true},    {"ireduce", false},         {"iallreduce", true},
    {"reduce_scatter_block", false}, {"reduce_scatter", false},  {"scan", false},
    {"exscan", false},
};

// Gathers every rank's hash at rank 0 by point-to-point messages (not by
// a collective under test).
std::vector<uint64_t> to_root(uint64_t h) {
    std::vector<uint64_t> all(size_, 0);
    if (rank_ == 0) {
        all[0] = h;
        for (int p = 1; p < size_; ++p)
            MPI_Recv(&all[p], 1, MPI_UINT64_T, p, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Send(&h, 1, MPI_UINT64_T, 0, 77, MPI_COMM_WORLD);
    }
    return all;
}

// Returns the number of failures (at rank 0).
template <class T>
int check(const Case &c, MPI_Datatype dt, const char *tname) {
    std::vector<uint64_t> first;
    int bad = 0;
    for (int rep = 0; rep < reps; ++rep) {
        const std::vector<uint64_t> h = to_root(run_once<T>(c.name, dt, rep));
        if (rank_ != 0) continue;
        if (rep == 0) first = h;
        bool differs = false;
        for (int p = 0; p < size_; ++p) {
            if (h[p] != first[p]) differs = true;
            if (c.all_same && h[p] != h[0]) {
                std::printf("determinism: %s %s repetition %d: rank %d's result differs from "
                            "rank 0's\n", c.name.c_str(), tname, rep, p);
                ++bad;
            }
        }
        if (differs) {
            std::printf("determinism: %s %s repetition %d: result differs from repetition 0's\n",
                        c.name.c_str(), tname, rep);
            ++bad;
        }
    }
    if (rank_ == 0)
        std::printf("determinism: %-22s %-6s %d repetitions: %s\n", c.name.c_str(), tname, reps,
                    bad ? "NOT deterministic" : "one result");
    return bad;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    std::string colls;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) {
                if (rank_ == 0) std::fprintf(stderr, "determinism: %s needs a value\n", a.c_str());
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            return argv[++i];
        };
        if (a == "--reps") reps = std::atoi(next());
        else if (a == "--count") count = std::atol(next());
        else if (a == "--max-delay-us") max_delay_us = std::atoi(next());
        else if (a == "--colls") colls = std::string(",") + next() + ",";
        else if (a == "--self-test") self_test = true;
        else {
            if (rank_ == 0) std::fprintf(stderr, "determinism: unknown argument %s\n", a.c_str());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (reps < 2 || count < 0) {
        if (rank_ == 0) std::fprintf(stderr, "determinism: need --reps >= 2 and --count >= 0\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    delay_rng.seed(1000003u * static_cast<unsigned>(rank_) + 17u);
    int bad = 0, ran = 0;
    for (const Case &c : all_cases) {
        if (!colls.empty() && colls.find("," + c.name + ",") == std::string::npos) continue;
        ++ran;
        bad += check<float>(c, MPI_FLOAT, "float");
        bad += check<double>(c, MPI_DOUBLE, "double");
    }
    if (rank_ == 0)
        std::printf("determinism: %d collectives x 2 types, %d ranks, %ld elements: %d "
                    "non-deterministic results, %s\n",
                    ran, size_, count, bad, bad || !ran ? "FAILED" : "passed");
    MPI_Finalize();
    return rank_ == 0 && (bad || !ran) ? 1 : 0;
}
