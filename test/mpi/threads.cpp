/*
 * Concurrency checks for the collective components.
 *
 * 1. MPI_THREAD_MULTIPLE: T threads per rank, each with its own duplicate of
 *    MPI_COMM_WORLD, each running a seeded stream of collectives (bcast,
 *    reduce, allreduce, allgather, alltoall, scan, barrier, ibcast, ireduce,
 *    iallreduce) at the same time; every result is checked against a
 *    reference computed locally.
 * 2. One communicator with many (default 64) outstanding non-blocking
 *    collectives (ibcast, ireduce, iallreduce, iallgather, ialltoall, iscan,
 *    ibarrier, in a random mix, posted in the same order on every rank as
 *    MPI requires), completed in a random order by MPI_Waitany, MPI_Testsome
 *    and individual MPI_Wait calls in a shuffled order; every result checked.
 *
 *   threads [--threads T] [--iters N] [--outstanding M] [--seed S] [--self-test]
 *
 * If the library provides less than MPI_THREAD_MULTIPLE, part 1 is skipped
 * with a message (exit status 77 when nothing else ran: `SKIP`).  Exit status
 * 0 when every result matched.  --self-test corrupts one result of each part
 * and must then fail (exit 1).
 */
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
uint64_t H(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e = 0)
{
    return mix(mix(mix(mix(mix(a) ^ b) ^ c) ^ d) ^ e);
}
// input element i of rank p in operation id: small integers, exact sums
int64_t val(uint64_t seed, uint64_t id, int p, long i) { return int64_t(H(seed, id, uint64_t(p), uint64_t(i)) % 2001) - 1000; }

enum Kind { BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL, SCAN, BARRIER, IBCAST, IREDUCE, IALLREDUCE,
            IALLGATHER, IALLTOALL, ISCAN, IBARRIER, NKIND };
const char *names[NKIND] = {"bcast", "reduce", "allreduce", "allgather", "alltoall", "scan", "barrier",
                            "ibcast", "ireduce", "iallreduce", "iallgather", "ialltoall", "iscan", "ibarrier"};

uint64_t seed = 1;
int rank_ = 0, size_ = 1;
bool self_test = false;

// one operation: its buffers, what to post, and the expected result
struct Op {
    Kind k;
    uint64_t id;
    long n;
    int root;
    MPI_Datatype dt;  // MPI_INT64_T or MPI_DOUBLE (values are exact either way)
    std::vector<int64_t> in, out, want;
    bool check = true;
    MPI_Request rq = MPI_REQUEST_NULL;

    Op(Kind kk, uint64_t ident, long count, int r, bool dbl) : k(kk), id(ident), n(count), root(r),
        dt(dbl ? MPI_DOUBLE : MPI_INT64_T) {}
    int64_t enc(int64_t v) const
    {
        if (dt == MPI_INT64_T) return v;
        double d = double(v);
        int64_t b;
        memcpy(&b, &d, 8);
        return b;
    }
    void setup()
    {
        const int P = size_, me = rank_;
        long nin = (k == ALLTOALL || k == IALLTOALL) ? n * P : n;
        long nout = (k == ALLGATHER || k == IALLGATHER || k == ALLTOALL || k == IALLTOALL) ? n * P : n;
        in.resize(size_t(nin));
        for (long i = 0; i < nin; i++) in[size_t(i)] = enc(val(seed, id, me, i));
        out.assign(size_t(nout), int64_t(0x5a5a5a5a5a5a5a5aLL));
        want = out;
        switch (k) {
        case BCAST: case IBCAST:
            if (me == root) out = in;
            for (long i = 0; i < n; i++) want[size_t(i)] = enc(val(seed, id, root, i));
            break;
        case REDUCE: case IREDUCE: case ALLREDUCE: case IALLREDUCE: case SCAN: case ISCAN: {
            int hi = (k == SCAN || k == ISCAN) ? me + 1 : P;
            check = !((k == REDUCE || k == IREDUCE) && me != root);
            for (long i = 0; i < n; i++) {
                int64_t s = 0;
                for (int p = 0; p < hi; p++) s += val(seed, id, p, i);
                want[size_t(i)] = enc(s);
            }
            break;
        }
        case ALLGATHER: case IALLGATHER:
            for (int p = 0; p < P; p++)
                for (long i = 0; i < n; i++) want[size_t(p * n + i)] = enc(val(seed, id, p, i));
            break;
        case ALLTOALL: case IALLTOALL:
            for (int p = 0; p < P; p++)
                for (long i = 0; i < n; i++) want[size_t(p * n + i)] = enc(val(seed, id, p, me * n + i));
            break;
        default:
            check = false;
            break;
        }
    }
    void post(MPI_Comm c)
    {
        int cnt = int(n);
        void *o = out.data();
        const void *s = in.data();
        switch (k) {
        case BCAST: MPI_Bcast(o, cnt, dt, root, c); break;
        case REDUCE: MPI_Reduce(s, o, cnt, dt, MPI_SUM, root, c); break;
        case ALLREDUCE: MPI_Allreduce(s, o, cnt, dt, MPI_SUM, c); break;
        case ALLGATHER: MPI_Allgather(s, cnt, dt, o, cnt, dt, c); break;
        case ALLTOALL: MPI_Alltoall(s, cnt, dt, o, cnt, dt, c); break;
        case SCAN: MPI_Scan(s, o, cnt, dt, MPI_SUM, c); break;
        case BARRIER: MPI_Barrier(c); break;
        case IBCAST: MPI_Ibcast(o, cnt, dt, root, c, &rq); break;
        case IREDUCE: MPI_Ireduce(s, o, cnt, dt, MPI_SUM, root, c, &rq); break;
        case IALLREDUCE: MPI_Iallreduce(s, o, cnt, dt, MPI_SUM, c, &rq); break;
        case IALLGATHER: MPI_Iallgather(s, cnt, dt, o, cnt, dt, c, &rq); break;
        case IALLTOALL: MPI_Ialltoall(s, cnt, dt, o, cnt, dt, c, &rq); break;
        case ISCAN: MPI_Iscan(s, o, cnt, dt, MPI_SUM, c, &rq); break;
        default: MPI_Ibarrier(c, &rq); break;
        }
    }
    // 0 when the result matches; prints the first difference
    int verify(const char *where)
    {
        if (!check) return 0;
        if (self_test && !out.empty()) out[0] ^= 1;
        for (size_t i = 0; i < out.size(); i++)
            if (out[i] != want[i]) {
                printf("threads: MISMATCH (%s) rank %d: %s #%llu count %ld root %d %s element %zu: "
                       "expected %lld, got %lld (reproduce: --seed %llu)\n",
                       where, rank_, names[k], (unsigned long long)id, n, root,
                       dt == MPI_DOUBLE ? "double" : "int64", i, (long long)want[i], (long long)out[i],
                       (unsigned long long)seed);
                return 1;
            }
        return 0;
    }
};

long count_for(uint64_t h)
{
    switch (h % 4) {
    case 0: return 0;
    case 1: return long(1 + h % 7);
    case 2: return long(1 + (h >> 8) % 3000);
    default: return long(1 + (h >> 8) % 40000);  // long enough to segment
    }
}

// part 1: one stream per thread, on its own communicator
std::atomic<long> errors{0};
void stream(MPI_Comm c, int t, int iters)
{
    for (int it = 0; it < iters; it++) {
        uint64_t h = H(seed, 1, uint64_t(t), uint64_t(it));
        Kind k = Kind(h % NKIND);
        Op op(k, h, count_for(h >> 4), int((h >> 40) % uint64_t(size_)), (h >> 50) & 1);
        op.setup();
        op.post(c);
        if (op.rq != MPI_REQUEST_NULL) MPI_Wait(&op.rq, MPI_STATUS_IGNORE);
        std::string w = "thread " + std::to_string(t);
        errors += op.verify(w.c_str());
    }
}

// part 2: M outstanding on one communicator, completed in a random order
long outstanding(MPI_Comm c, int m, int round)
{
    const Kind nb[] = {IBCAST, IREDUCE, IALLREDUCE, IALLGATHER, IALLTOALL, ISCAN, IBARRIER};
    std::vector<Op> ops;
    ops.reserve(size_t(m));
    for (int i = 0; i < m; i++) {
        uint64_t h = H(seed, 2, uint64_t(round), uint64_t(i));
        ops.emplace_back(nb[h % 7], h, count_for(h >> 4) / 4, int((h >> 40) % uint64_t(size_)), (h >> 50) & 1);
    }
    for (auto &o : ops) o.setup();
    for (auto &o : ops) o.post(c);  // same order on every rank
    // completion order differs per rank: a local shuffle
    std::vector<MPI_Request> rqs(static_cast<size_t>(m));
    for (int i = 0; i < m; i++) rqs[size_t(i)] = ops[size_t(i)].rq;
    uint64_t r = H(seed, 3, uint64_t(round), uint64_t(rank_));
    int mode = int(r % 3);
    long bad = 0;
    int left = m;
    std::vector<int> idx(static_cast<size_t>(m));
    std::vector<bool> seen(static_cast<size_t>(m));
    auto finish = [&](int i) {
        ops[size_t(i)].rq = MPI_REQUEST_NULL;
        seen[size_t(i)] = true;
        bad += ops[size_t(i)].verify(mode == 0 ? "Waitany" : mode == 1 ? "Testsome" : "shuffled Wait");
        left--;
    };
    if (mode == 0) {
        while (left) {
            int i;
            MPI_Waitany(m, rqs.data(), &i, MPI_STATUS_IGNORE);
            finish(i);
        }
    } else if (mode == 1) {
        while (left) {
            int outc;
            MPI_Testsome(m, rqs.data(), &outc, idx.data(), MPI_STATUSES_IGNORE);
            if (outc == MPI_UNDEFINED) break;
            for (int j = 0; j < outc; j++) finish(idx[size_t(j)]);
        }
    } else {
        std::vector<int> ord(static_cast<size_t>(m));
        for (int i = 0; i < m; i++) ord[size_t(i)] = i;
        for (int i = m - 1; i > 0; i--) std::swap(ord[size_t(i)], ord[size_t(mix(r + uint64_t(i)) % uint64_t(i + 1))]);
        for (int i : ord) {
            MPI_Wait(&rqs[size_t(i)], MPI_STATUS_IGNORE);
            finish(i);
        }
    }
    for (int i = 0; i < m; i++)
        if (!seen[size_t(i)]) {
            printf("threads: rank %d: request %d never completed\n", rank_, i);
            bad++;
        }
    return bad;
}

long tally(long v)  // sum over ranks, point to point only
{
    if (rank_ == 0) {
        for (int p = 1; p < size_; p++) {
            long x;
            MPI_Recv(&x, 1, MPI_LONG, p, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            v += x;
        }
        for (int p = 1; p < size_; p++) MPI_Send(&v, 1, MPI_LONG, p, 78, MPI_COMM_WORLD);
    } else {
        MPI_Send(&v, 1, MPI_LONG, 0, 77, MPI_COMM_WORLD);
        MPI_Recv(&v, 1, MPI_LONG, 0, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return v;
}

}  // namespace

int main(int argc, char **argv)
{
    int threads = 4, iters = 40, m = 64, rounds = 3;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : "0";
        if (a == "--self-test") { self_test = true; continue; }
        if (a == "--threads") threads = atoi(v);
        else if (a == "--iters") iters = atoi(v);
        else if (a == "--outstanding") m = atoi(v);
        else if (a == "--rounds") rounds = atoi(v);
        else if (a == "--seed") seed = strtoull(v, nullptr, 0);
        else {
            fprintf(stderr, "usage: threads [--threads T] [--iters N] [--outstanding M] [--rounds R] "
                    "[--seed S] [--self-test]\n");
            return 2;
        }
        i++;
    }
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    long bad = 0;
    bool ran_threads = false;
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank_ == 0)
            printf("threads: SKIP part 1: the library provides thread level %d, not MPI_THREAD_MULTIPLE\n",
                   provided);
    } else {
        std::vector<MPI_Comm> comms(static_cast<size_t>(threads));
        for (auto &c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; t++) ts.emplace_back(stream, comms[size_t(t)], t, iters);
        for (auto &t : ts) t.join();
        for (auto &c : comms) MPI_Comm_free(&c);
        long e = tally(errors.load());
        if (rank_ == 0)
            printf("threads: part 1: %d threads x %d collectives on their own communicators: %ld mismatches\n",
                   threads, iters, e);
        bad += e;
        ran_threads = true;
    }
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    // a blocking collective first: components that build a hierarchy at
    // their first blocking call (hanx) then run the outstanding
    // non-blocking ones hierarchically
    MPI_Barrier(c);
    long e2 = 0;
    for (int r = 0; r < rounds; r++) e2 += outstanding(c, m, r);
    MPI_Comm_free(&c);
    e2 = tally(e2);
    if (rank_ == 0)
        printf("threads: part 2: %d rounds of %d outstanding non-blocking collectives on one communicator, "
               "completed in random order: %ld mismatches\n", rounds, m, e2);
    bad += e2;
    MPI_Finalize();
    if (rank_ == 0) printf("threads: %s\n", bad ? "FAILED" : "passed");
    if (bad) return 1;
    return ran_threads ? 0 : 77;
}
