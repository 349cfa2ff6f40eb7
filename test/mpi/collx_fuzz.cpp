/*
 * collx randomised differential tester.
 *
 * Case k of seed S is a pure function of (S, k) on every rank: collective
 * (the 16 blocking ones, their 16 non-blocking counterparts), count (0,
 * small, primes, up to ~1 MiB of data so that pipelines segment), datatype
 * (predefined of 1/2/4/8 bytes, or derived: contiguous, vector and hvector
 * with gaps and negative strides, indexed with blocks out of memory order,
 * struct with gaps, resized; nested up to 3 deep; some with true_lb > 0 or
 * a negative lb), op (predefined where MPI defines it for the type,
 * user-defined commutative, user-defined NON-commutative: composition of
 * affine maps x -> a*x+b mod 2^32), root, MPI_IN_PLACE where MPI allows it,
 * communicator (world, dup, splits into random colours with random or
 * reversed keys, odd sizes, size-1 pieces, a split of a split), and how a
 * non-blocking one is completed (Wait, Test loop, Waitall).
 *
 * The reference is computed sequentially on each rank from the inputs of all
 * ranks (every rank can generate every rank's input): no MPI collective is
 * involved.  Every byte of every checked receive buffer is compared, so gap
 * bytes inside derived types and bytes around the buffer must be untouched;
 * send buffers must be unchanged.  Floating-point data are small integers:
 * sums and products are exact in any order.
 *
 *   collx_fuzz [--seed S] [--cases N | --case K] [--first K] [--time-limit SEC]
 *              [--colls LIST] [--max-bytes B] [--components-under-test LABEL]
 *              [--case-timeout SEC] [--self-test] [--known-bugs] [--verbose]
 *
 * LIST: comma-separated collective names (bcast, ibcast, ...) or `blocking`,
 * `nonblocking`, `all` (default).  A mismatch prints the seed, the case, its
 * description, the first differing element and a one-line reproducer.  A case
 * running longer than --case-timeout (default 120 s) is reported as a hang
 * (with its reproducer) and the program exits with status 124.
 *
 * --self-test corrupts one byte of one result on every rank that has a
 * result, for every collective kind (barrier: skipped on every rank), and
 * exits 0 only if the checker reported each of them.
 *
 * LABEL names what runs the collectives (hanx, adaptx, ompi); it is printed,
 * and it says which collectives are served by our components: Open MPI's own
 * reductions corrupt the heap for datatypes with true_lb != 0 from a few KiB
 * up (docs/upstream-bugs.md), so such cases get a predefined type instead
 * unless the label names a component that serves that collective; libnbc's
 * in-place MPI_Ialltoallv is broken in 4.1.4 (ompi #9749), so ialltoallv runs
 * out of place.  --known-bugs runs those cases anyway.
 *
 * Exit status: 0 when every case matched, 1 on a mismatch, 124 on a hang.
 */
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

// ------------------------------------------------------------ randomness
uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
uint64_t hash(std::initializer_list<uint64_t> xs)
{
    uint64_t h = 0x2545f4914f6cdd1dULL;
    for (uint64_t x : xs) h = mix(h ^ mix(x));
    return h;
}
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next() { return mix(s += 0x9e3779b97f4a7c15ULL); }
    int below(int n) { return n <= 0 ? 0 : int(next() % uint64_t(n)); }
    int range(int lo, int hi) { return lo + below(hi - lo + 1); }
    bool chance(int percent) { return below(100) < percent; }
};

// ------------------------------------------------------------ kinds, ops
enum Kind { I8, U8, I16, U16, I32, U32, I64, U64, F32, F64, PAIR, NKIND };
const size_t ksize[NKIND] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 8};
const char *kname[NKIND] = {"int8", "uint8", "int16", "uint16", "int", "uint32",
                            "long", "uint64", "float", "double", "pair"};
bool is_int(Kind k) { return k <= U64; }
bool is_signed(Kind k) { return k == I8 || k == I16 || k == I32 || k == I64; }
MPI_Datatype pair_type = MPI_DATATYPE_NULL;  // 2 x uint32: an affine map
MPI_Datatype kmpi(Kind k)
{
    switch (k) {
    case I8: return MPI_INT8_T;
    case U8: return MPI_UINT8_T;
    case I16: return MPI_INT16_T;
    case U16: return MPI_UINT16_T;
    case I32: return MPI_INT;
    case U32: return MPI_UINT32_T;
    case I64: return MPI_LONG;
    case U64: return MPI_UINT64_T;
    case F32: return MPI_FLOAT;
    case F64: return MPI_DOUBLE;
    default: return pair_type;
    }
}

enum OpId { SUM, PROD, MAX, MIN, BAND, BOR, BXOR, LAND, LOR, LXOR,
            USUM /* user, commutative */, NCMAX /* user max declared non-commutative */,
            AFFINE /* user, non-commutative, PAIR only */, NOP };
const char *opname[NOP] = {"SUM", "PROD", "MAX", "MIN", "BAND", "BOR", "BXOR", "LAND",
                           "LOR", "LXOR", "user-sum(commutative)",
                           "user-max(declared non-commutative)", "user-affine(non-commutative)"};
MPI_Op mpi_op[NOP];

uint64_t mask(Kind k) { return ksize[k] == 8 ? ~0ULL : (1ULL << (8 * ksize[k])) - 1; }
int64_t sval(Kind k, uint64_t b)
{
    int sh = 64 - 8 * int(ksize[k]);
    return int64_t(b << sh) >> sh;
}
double fval(Kind k, uint64_t b)
{
    if (k == F32) { float f; uint32_t u = uint32_t(b); memcpy(&f, &u, 4); return f; }
    double d; memcpy(&d, &b, 8); return d;
}
uint64_t fbits(Kind k, double v)
{
    if (k == F32) { float f = float(v); uint32_t u; memcpy(&u, &f, 4); return u; }
    uint64_t b; memcpy(&b, &v, 8); return b;
}

// combine(earlier, later): MPI's  inout = in op inout  with in the earlier rank
uint64_t combine(Kind k, OpId op, uint64_t a, uint64_t b)
{
    if (k == PAIR) {
        uint32_t a1 = uint32_t(a), b1 = uint32_t(a >> 32), a2 = uint32_t(b), b2 = uint32_t(b >> 32);
        if (op == USUM) return uint64_t(uint32_t(a1 + a2)) | uint64_t(uint32_t(b1 + b2)) << 32;
        // AFFINE: x -> a2*(a1*x+b1)+b2
        return uint64_t(uint32_t(a2 * a1)) | uint64_t(uint32_t(a2 * b1 + b2)) << 32;
    }
    if (k == F32 || k == F64) {
        double x = fval(k, a), y = fval(k, b), r = 0;
        switch (op) {
        case SUM: case USUM: r = x + y; break;
        case PROD: r = x * y; break;
        case MAX: case NCMAX: r = std::max(x, y); break;
        case MIN: r = std::min(x, y); break;
        default: abort();
        }
        return fbits(k, r);
    }
    uint64_t m = mask(k), r = 0;
    bool sg = is_signed(k);
    switch (op) {
    case SUM: case USUM: r = a + b; break;
    case PROD: r = a * b; break;
    case MAX: case NCMAX: r = sg ? (sval(k, a) > sval(k, b) ? a : b) : (a > b ? a : b); break;
    case MIN: r = sg ? (sval(k, a) < sval(k, b) ? a : b) : (a < b ? a : b); break;
    case BAND: r = a & b; break;
    case BOR: r = a | b; break;
    case BXOR: r = a ^ b; break;
    case LAND: r = ((a & m) && (b & m)) ? 1 : 0; break;
    case LOR: r = ((a & m) || (b & m)) ? 1 : 0; break;
    case LXOR: r = (!!(a & m) != !!(b & m)) ? 1 : 0; break;
    default: abort();
    }
    return r & m;
}

// ------------------------------------------------------------ datatypes
struct Leaf {
    long off;
    Kind k;
};
struct TMap {
    MPI_Datatype t = MPI_DATATYPE_NULL;
    bool owned = false;
    std::vector<Leaf> leaves;  // in type-map order
    MPI_Aint lb = 0, ext = 0, tlb = 0, text = 0;
    std::string desc;
    ~TMap()
    {
        if (owned) MPI_Type_free(&t);
    }
};
using TMapP = std::shared_ptr<TMap>;

std::mutex reg_mu;
std::map<MPI_Datatype, const TMap *> registry;  // what user ops look up

TMapP finish(TMapP m)
{
    MPI_Type_commit(&m->t);
    m->owned = true;
    MPI_Type_get_extent(m->t, &m->lb, &m->ext);
    MPI_Type_get_true_extent(m->t, &m->tlb, &m->text);
    long lo = m->leaves.empty() ? 0 : m->leaves[0].off, hi = lo;
    for (auto &l : m->leaves) {
        lo = std::min(lo, l.off);
        hi = std::max(hi, long(l.off + ksize[l.k]));
    }
    if (lo != m->tlb || hi - lo != m->text) {
        fprintf(stderr, "collx_fuzz: internal: type map of %s disagrees with MPI "
                "(true lb %ld/%ld, true extent %ld/%ld)\n", m->desc.c_str(), lo,
                long(m->tlb), hi - lo, long(m->text));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    std::lock_guard<std::mutex> g(reg_mu);
    registry[m->t] = m.get();
    return m;
}

TMapP predefined(Kind k)
{
    static std::mutex mu;
    static TMapP cache[NKIND];
    std::lock_guard<std::mutex> g(mu);
    if (!cache[k]) {
        auto m = std::make_shared<TMap>();
        m->t = kmpi(k);
        m->leaves = {{0, k}};
        m->lb = m->tlb = 0;
        m->ext = m->text = MPI_Aint(ksize[k]);
        m->desc = kname[k];
        std::lock_guard<std::mutex> g2(reg_mu);
        registry[m->t] = m.get();
        cache[k] = m;
    }
    return cache[k];
}

const size_t MAX_LEAVES = 48;

// a random derived type of `depth` levels over leaves of kind k (mixed:
// struct fields may have other kinds -- for collectives that only move data)
TMapP random_type(Rng &r, int depth, Kind k, bool mixed)
{
    if (depth == 0) return predefined(k);
    TMapP c = random_type(r, depth - 1, k, mixed);
    auto m = std::make_shared<TMap>();
    long e = long(c->ext);
    auto add = [&](const TMap &ch, long base) {
        for (auto &l : ch.leaves) m->leaves.push_back({base + l.off, l.k});
    };
    char buf[160];
    for (int attempt = 0;; attempt++) {
        m->leaves.clear();
        int form = r.below(7);
        if (attempt > 3) form = 0;
        if (form == 0) {  // contiguous
            int n = r.range(1, 3);
            for (int i = 0; i < n; i++) add(*c, i * e);
            MPI_Type_contiguous(n, c->t, &m->t);
            snprintf(buf, sizeof buf, "contig(%d,", n);
        } else if (form == 1) {  // vector, gaps, maybe negative stride
            int n = r.range(1, 3), bl = r.range(1, 2), st = bl + r.range(0, 2);
            if (r.chance(30)) st = -st;
            if (long(st) * e == -1) st = 1;  // Open MPI bug: a -1 byte stride is taken for +1 (docs/reliability.md)
            for (int i = 0; i < n; i++)
                for (int j = 0; j < bl; j++) add(*c, (long(i) * st + j) * e);
            MPI_Type_vector(n, bl, st, c->t, &m->t);
            snprintf(buf, sizeof buf, "vector(%d,%d,%d,", n, bl, st);
        } else if (form == 2) {  // hvector in bytes
            int n = r.range(1, 3), bl = r.range(1, 2);
            long st = bl * e + long(ksize[k]) * r.range(0, 3);
            if (r.chance(30)) st = -st;
            if (st == -1) st = 1;  // see vector
            for (int i = 0; i < n; i++)
                for (int j = 0; j < bl; j++) add(*c, i * st + j * e);
            MPI_Type_create_hvector(n, bl, MPI_Aint(st), c->t, &m->t);
            snprintf(buf, sizeof buf, "hvector(%d,%d,%ldB,", n, bl, st);
        } else if (form == 3) {  // indexed, first block maybe past 0, blocks out of order
            int nb = r.range(1, 3);
            std::vector<int> bls(nb), dis(nb);
            int pos = r.chance(50) ? r.range(1, 2) : 0;
            for (int i = 0; i < nb; i++) {
                bls[i] = r.range(1, 2);
                dis[i] = pos;
                pos += bls[i] + r.range(0, 2);
            }
            if (nb > 1 && r.chance(40)) std::swap(bls[0], bls[nb - 1]), std::swap(dis[0], dis[nb - 1]);
            for (int i = 0; i < nb; i++)
                for (int j = 0; j < bls[i]; j++) add(*c, long(dis[i] + j) * e);
            MPI_Type_indexed(nb, bls.data(), dis.data(), c->t, &m->t);
            std::string s = "indexed([";
            for (int i = 0; i < nb; i++) s += std::to_string(bls[i]) + "@" + std::to_string(dis[i]) + (i + 1 < nb ? " " : "");
            snprintf(buf, sizeof buf, "%s],", s.c_str());
        } else if (form == 4 || form == 5) {  // struct with gaps
            int nf = r.range(1, 3);
            std::vector<TMapP> fs(nf);
            std::vector<int> bls(nf);
            std::vector<MPI_Aint> dis(nf);
            std::vector<MPI_Datatype> ts(nf);
            long pos = r.chance(40) ? 8 * r.range(1, 2) : 0;
            std::string s = "struct(";
            for (int i = 0; i < nf; i++) {
                fs[i] = (mixed && i > 0 && r.chance(50)) ? predefined(Kind(r.below(10))) : c;
                bls[i] = r.range(1, 2);
                pos = (pos + 7) / 8 * 8;
                dis[i] = pos - fs[i]->lb;
                ts[i] = fs[i]->t;
                for (int j = 0; j < bls[i]; j++) add(*fs[i], dis[i] + j * long(fs[i]->ext));
                pos += bls[i] * long(fs[i]->ext) + 8 * r.range(0, 1);
                s += std::to_string(bls[i]) + "x" + (fs[i] == c ? std::string("T") : fs[i]->desc) + "@" +
                     std::to_string(long(dis[i])) + (i + 1 < nf ? " " : "");
            }
            MPI_Type_create_struct(nf, bls.data(), dis.data(), ts.data(), &m->t);
            snprintf(buf, sizeof buf, "%s; T=", s.c_str());
        } else {  // resized: lower lb and/or larger extent (never overlapping copies)
            long a = long(ksize[k]);
            long lb = long(c->lb) - a * r.range(0, 2), ext = long(c->lb) + e - lb + a * r.range(0, 3);
            add(*c, 0);
            MPI_Type_create_resized(c->t, lb, ext, &m->t);
            snprintf(buf, sizeof buf, "resized(lb=%ld,ext=%ld,", lb, ext);
        }
        // copies of the type must not overlap (extent >= true extent): a
        // struct holding a resized type takes its bounds from the resized
        // type's markers alone, which can make it shorter than its data
        MPI_Aint lb, ext, tlb, text;
        MPI_Type_get_extent(m->t, &lb, &ext);
        MPI_Type_get_true_extent(m->t, &tlb, &text);
        if (m->leaves.size() <= MAX_LEAVES && ext >= text) break;
        MPI_Type_free(&m->t);
    }
    m->desc = std::string(buf) + c->desc + ")";
    return finish(m);
}

// user-defined ops: walk the type map of whatever datatype they are given
template <OpId OP>
void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const TMap *m;
    {
        std::lock_guard<std::mutex> g(reg_mu);
        auto it = registry.find(*dt);
        if (it == registry.end()) {
            fprintf(stderr, "collx_fuzz: user op %s called with a datatype that is not the "
                    "one passed to the collective\n", opname[OP]);
            MPI_Abort(MPI_COMM_WORLD, 3);
            return;
        }
        m = it->second;
    }
    char *a = static_cast<char *>(in), *b = static_cast<char *>(inout);
    for (long i = 0; i < *len; i++)
        for (auto &l : m->leaves) {
            long o = i * long(m->ext) + l.off;
            uint64_t x = 0, y = 0;
            memcpy(&x, a + o, ksize[l.k]);
            memcpy(&y, b + o, ksize[l.k]);
            uint64_t z = combine(l.k, OP, x, y);
            memcpy(b + o, &z, ksize[l.k]);
        }
}

bool op_valid(OpId op, Kind k)
{
    if (k == PAIR) return op == USUM || op == AFFINE;
    if (op == AFFINE) return false;
    if (op >= BAND && op <= LXOR) return is_int(k);
    return true;
}

// input values: exact under any reduction order
uint64_t gen_value(Kind k, OpId op, uint64_t h)
{
    if (k == PAIR) return h;
    if (k == F32 || k == F64) {
        long v;
        if (op == PROD) { static const long pv[] = {-2, -1, 1, 2, 1, -1}; v = pv[h % 6]; }
        else if (op == NOP) v = long(int32_t(h >> 8)) >> (k == F32 ? 8 : 0);
        else v = long(h % 33) - 16;
        return fbits(k, double(v));
    }
    if ((op == LAND || op == LOR || op == LXOR) && (h >> 60) < 8) return 0;
    if (ksize[k] <= 2 && op == SUM)  // Open MPI's op/avx saturates 8/16-bit sums (ompi #8045, wontfix): no overflow
        return uint64_t(is_signed(k) ? long(h % 15) - 7 : long(h % 16)) & mask(k);
    if (ksize[k] <= 2 && op == PROD)  // likewise: products that fit
        return uint64_t(is_signed(k) ? ((h & 1) ? 1 : -1) : (ksize[k] == 2 && h % 10 == 0) ? 2 : 1) & mask(k);
    return h & mask(k);
}

// ------------------------------------------------------------ collectives
enum Coll { BCAST, REDUCE, ALLREDUCE, GATHER, GATHERV, SCATTER, SCATTERV, ALLGATHER,
            ALLGATHERV, ALLTOALL, ALLTOALLV, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, SCAN,
            EXSCAN, BARRIER, NCOLL };
const char *cname[NCOLL] = {"bcast", "reduce", "allreduce", "gather", "gatherv", "scatter",
                            "scatterv", "allgather", "allgatherv", "alltoall", "alltoallv",
                            "reduce_scatter", "reduce_scatter_block", "scan", "exscan",
                            "barrier"};
bool is_reduction(Coll c)
{
    return c == REDUCE || c == ALLREDUCE || c == REDUCE_SCATTER || c == REDUCE_SCATTER_BLOCK ||
           c == SCAN || c == EXSCAN;
}
// a kind of collective: c + NCOLL * nonblocking
std::string kind_name(int ck) { return std::string(ck >= NCOLL ? "i" : "") + cname[ck % NCOLL]; }

// ------------------------------------------------------------ buffers
const long GUARD = 40;
struct Buf {
    std::vector<unsigned char> mem;
    long base = 0;  // offset of the MPI buffer address in mem
    long copies = 0;
    void *ptr() { return mem.data() + base; }
};
// room for `copies` elements of m, poisoned with bytes from h
Buf make_buf(const TMap &m, long copies, uint64_t h)
{
    Buf b;
    long span = copies ? (copies - 1) * long(m.ext) + long(m.text) : 0;
    b.mem.resize(size_t(2 * GUARD + span));
    b.base = GUARD - long(m.tlb);
    b.copies = copies;
    Rng r(h);
    for (size_t i = 0; i < b.mem.size(); i += 8) {
        uint64_t v = r.next();
        memcpy(&b.mem[i], &v, std::min<size_t>(8, b.mem.size() - i));
    }
    return b;
}
uint64_t load(const Buf &b, const TMap &m, long copy, const Leaf &l)
{
    uint64_t v = 0;
    memcpy(&v, &b.mem[size_t(b.base + copy * long(m.ext) + l.off)], ksize[l.k]);
    return v;
}
void store(Buf &b, const TMap &m, long copy, const Leaf &l, uint64_t v)
{
    memcpy(&b.mem[size_t(b.base + copy * long(m.ext) + l.off)], &v, ksize[l.k]);
}

// ------------------------------------------------------------ the program
struct Opts {
    uint64_t seed = 1;
    long cases = 200, first = 0, only = -1;
    double time_limit = 0, case_timeout = 120;
    long max_bytes = 1 << 20;
    std::string label = "default", colls = "all";
    bool self_test = false, break_checker = false, verbose = false, known_bugs = false;
} opt;
std::vector<int> enabled;  // kinds of collectives to draw from
int wrank = 0, wsize = 1;

struct CommInfo {
    MPI_Comm comm;
    std::string desc;
};
std::vector<CommInfo> comms;

void make_comms()
{
    Rng r(hash({opt.seed, 0xc0ffee}));
    auto split = [&](MPI_Comm parent, int color, int key) {
        MPI_Comm c;
        MPI_Comm_split(parent, color, key, &c);
        return c;
    };
    comms.push_back({MPI_COMM_WORLD, "world"});
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    comms.push_back({d, "dup(world)"});
    // random colours, random keys: every rank draws the same table
    int nc = r.range(2, 3);
    std::vector<int> col(wsize), key(wsize);
    for (int i = 0; i < wsize; i++) col[i] = r.below(nc), key[i] = r.below(1000);
    comms.push_back({split(MPI_COMM_WORLD, col[wrank], key[wrank]),
                     "split(" + std::to_string(nc) + " random colours, random keys)"});
    comms.push_back({split(MPI_COMM_WORLD, 0, wsize - wrank), "split(reversed order)"});
    comms.push_back({split(MPI_COMM_WORLD, wrank, 0), "split(size 1 each)"});
    int cut = r.range(1, std::max(1, wsize - 1));
    int cut_key = r.below(1000);
    comms.push_back({split(MPI_COMM_WORLD, wrank < cut, int(hash({uint64_t(cut_key), uint64_t(wrank)}) % 1000)),
                     "split(first " + std::to_string(cut) + " / rest, shuffled)"});
    MPI_Comm_dup(comms[2].comm, &d);
    comms.push_back({d, "dup(" + comms[2].desc + ")"});
    comms.push_back({split(comms[5].comm, wrank % 2, wrank), "split(parity of " + comms[5].desc + ")"});
}

std::string mca_line()
{
    std::string s;
    std::vector<std::string> v;
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "OMPI_MCA_", 9)) continue;
        std::string kv = *e + 9;
        auto eq = kv.find('=');
        std::string k = kv.substr(0, eq), val = kv.substr(eq + 1);
        if (k.rfind("coll", 0) && k != "btl" && k != "mpi_yield_when_idle") continue;
        v.push_back(" --mca " + k + " " + (val.find(' ') != std::string::npos ? "'" + val + "'" : val));
    }
    std::sort(v.begin(), v.end());
    for (auto &x : v) s += x;
    return s;
}
std::string reproducer(long k)
{
    char buf[256];
    snprintf(buf, sizeof buf, " test/mpi/collx_fuzz --seed %" PRIu64 " --case %ld --max-bytes %ld", opt.seed,
             k, opt.max_bytes);
    std::string s = "mpirun -np " + std::to_string(wsize) + " --oversubscribe" + mca_line() + buf;
    if (opt.label != "default") s += " --components-under-test " + opt.label;
    if (opt.colls != "all") s += " --colls " + opt.colls;  // the draw depends on the list
    if (opt.known_bugs) s += " --known-bugs";
    return s;
}

// what runs our components serve (for the upstream true_lb guard)
bool served(int ck)
{
    Coll c = Coll(ck % NCOLL);
    bool nb = ck >= NCOLL;
    if (opt.label.find("hanx") != std::string::npos && !nb) return true;
    if (opt.label.find("adaptx") != std::string::npos && (c == BCAST || c == REDUCE || c == ALLREDUCE))
        return true;
    return false;
}

struct Case {
    long k;
    int ck;  // collective kind
    Coll coll;
    bool nb, inplace;
    int wait_mode;  // 0 Wait, 1 Test loop, 2 Waitall
    int ci;
    MPI_Comm comm;
    int n, me, root;
    long count;
    OpId op;
    TMapP t;
    std::string desc;
};

struct Checker {
    long mismatches = 0;
    std::string first;
};

long per_kind_run[2 * NCOLL], per_kind_bad[2 * NCOLL];
std::atomic<long> cur_case{-1};
std::atomic<int64_t> case_start_ms{0};
std::string cur_desc;
std::mutex desc_mu;

int64_t now_ms()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

Case draw_case(long k)
{
    Case c;
    c.k = k;
    Rng r(hash({opt.seed, uint64_t(k), 1}));
    c.ck = enabled[size_t(r.below(int(enabled.size())))];
    c.coll = Coll(c.ck % NCOLL);
    c.nb = c.ck >= NCOLL;
    c.ci = r.below(int(comms.size()));
    c.comm = comms[size_t(c.ci)].comm;
    MPI_Comm_size(c.comm, &c.n);
    MPI_Comm_rank(c.comm, &c.me);
    uint64_t rootdraw = r.next();
    c.root = int(rootdraw % uint64_t(c.n));
    c.wait_mode = r.below(3);
    bool red = is_reduction(c.coll);
    // op and leaf kind
    c.op = NOP;
    Kind k0;
    if (red) {
        for (;;) {
            int x = r.below(100);
            c.op = x < 45 ? OpId(r.below(10)) : x < 60 ? USUM : x < 70 ? NCMAX : AFFINE;
            k0 = c.op == AFFINE || (c.op == USUM && r.chance(20)) ? PAIR : Kind(r.below(10));
            if (op_valid(c.op, k0)) break;
        }
    } else {
        k0 = Kind(r.below(11));
    }
    // datatype: predefined half of the time, else derived 1..3 deep
    int depth = r.chance(45) ? 0 : r.range(1, 3);
    if (c.op < USUM) depth = 0;  // MPI (and Open MPI) define predefined ops on predefined types only
    // count: 0, small, medium, or large enough to segment
    int cx = r.below(100);
    long big = r.range(1, 1 << 20);
    long cnt = cx < 6 ? 0 : cx < 50 ? r.range(1, 17) : cx < 85 ? r.range(18, 3000) : -1;
    bool ip = r.chance(35);
    Rng tr(hash({opt.seed, uint64_t(k), 2}));
    c.t = random_type(tr, depth, k0, !red);
    long tsize = 0;
    for (auto &l : c.t->leaves) tsize += long(ksize[l.k]);
    // keep the largest buffer (n blocks for the gather/alltoall family) near max_bytes
    bool nblocks = !(c.coll == BCAST || red || c.coll == BARRIER);
    if (c.coll == REDUCE_SCATTER || c.coll == REDUCE_SCATTER_BLOCK) nblocks = true;
    long per = std::max<long>(1, long(c.t->ext) * (nblocks ? c.n : 1));
    if (cnt < 0) cnt = std::max<long>(1, std::min(big, opt.max_bytes) / per);
    cnt = std::min(cnt, std::max<long>(1, opt.max_bytes / per));
    if (c.coll == GATHERV || c.coll == SCATTERV || c.coll == ALLGATHERV || c.coll == ALLTOALLV ||
        c.coll == REDUCE_SCATTER)
        cnt = std::min(cnt, std::max<long>(1, opt.max_bytes / per / 2));  // counts up to 2*cnt+1
    c.count = cnt;
    // upstream true_lb bug in Open MPI's reductions: see the header comment
    if (red && c.t->tlb != 0 && !served(c.ck) && !opt.known_bugs) {
        c.t = predefined(k0);
        c.count = std::min(cnt * long(c.t->leaves.size()), opt.max_bytes / long(ksize[k0]) / (nblocks ? c.n : 1));
    }
    (void)tsize;
    switch (c.coll) {
    case BCAST: case BARRIER: ip = false; break;
    default: break;
    }
    // libnbc's in-place ialltoallv uses an uninitialised send extent
    // (ompi #9749, fixed after 4.1.4): wrong data
    if (c.ck == NCOLL + ALLTOALLV && !served(c.ck) && !opt.known_bugs) ip = false;
    c.inplace = ip;
    char buf[512];
    snprintf(buf, sizeof buf, "%s count=%ld type=%s (extent %ld, true_lb %ld, lb %ld)%s%s root=%d%s comm=%s "
             "[size %d, my rank %d]%s",
             kind_name(c.ck).c_str(), c.count, c.t->desc.c_str(), long(c.t->ext), long(c.t->tlb),
             long(c.t->lb), red ? " op=" : "", red ? opname[c.op] : "", c.root, c.inplace ? " IN_PLACE" : "",
             comms[size_t(c.ci)].desc.c_str(), c.n, c.me,
             c.nb ? (c.wait_mode == 0 ? " (Wait)" : c.wait_mode == 1 ? " (Test loop)" : " (Waitall)") : "");
    c.desc = buf;
    return c;
}

// value of element idx (leaf index across copies) of block `blk` of rank p
struct Values {
    const Case &c;
    int role;
    uint64_t v(int p, int blk, long idx) const
    {
        const auto &L = c.t->leaves;
        const Leaf &l = L[size_t(idx % long(L.size()))];
        return gen_value(l.k, c.op, hash({opt.seed, uint64_t(c.k), uint64_t(p), uint64_t(blk), uint64_t(idx),
                                          uint64_t(role)}));
    }
};

// write `cnt` copies of rank p's block blk at copy position at
void put(Buf &b, const Case &c, long at, long cnt, const Values &vals, int p, int blk)
{
    const auto &L = c.t->leaves;
    long nl = long(L.size());
    for (long i = 0; i < cnt; i++)
        for (long j = 0; j < nl; j++) store(b, *c.t, at + i, L[size_t(j)], vals.v(p, blk, i * nl + j));
}
// the reduction over ranks [lo, hi) of block blk, written at copy 0
void put_reduced(Buf &b, const Case &c, long cnt, const Values &vals, int lo, int hi, int blk)
{
    const auto &L = c.t->leaves;
    long nl = long(L.size());
    for (long i = 0; i < cnt; i++)
        for (long j = 0; j < nl; j++) {
            uint64_t acc = vals.v(lo, blk, i * nl + j);
            for (int p = lo + 1; p < hi; p++) acc = combine(L[size_t(j)].k, c.op, acc, vals.v(p, blk, i * nl + j));
            store(b, *c.t, i, L[size_t(j)], acc);
        }
}

std::string show(Kind k, uint64_t v)
{
    char s[64];
    if (k == F32 || k == F64) snprintf(s, sizeof s, "%g", fval(k, v));
    else if (k == PAIR) snprintf(s, sizeof s, "(%u,%u)", uint32_t(v), uint32_t(v >> 32));
    else if (is_signed(k)) snprintf(s, sizeof s, "%" PRId64, sval(k, v));
    else snprintf(s, sizeof s, "%" PRIu64, v);
    return s;
}

// compare a buffer with its expected image; limit: only copies [0, limit) and
// no gap/guard bytes (for results MPI leaves undefined around them), -1: all
bool verify(Checker &ck, const Case &c, const char *what, const Buf &got, const Buf &want, long limit = -1)
{
    if (opt.break_checker) return true;
    size_t lo = 0, hi = got.mem.size();
    if (limit >= 0) {
        if (limit == 0) return true;
        lo = size_t(got.base + c.t->tlb);
        hi = size_t(got.base + (limit - 1) * long(c.t->ext) + c.t->tlb + c.t->text);
    }
    if (!memcmp(got.mem.data() + lo, want.mem.data() + lo, hi - lo)) return true;
    size_t o = lo;
    while (got.mem[o] == want.mem[o]) o++;
    long rel = long(o) - got.base;
    std::string where;
    char buf[400];
    for (long i = 0; i < got.copies && where.empty(); i++)
        for (size_t j = 0; j < c.t->leaves.size(); j++) {
            const Leaf &l = c.t->leaves[j];
            long a = i * long(c.t->ext) + l.off;
            if (rel >= a && rel < a + long(ksize[l.k])) {
                snprintf(buf, sizeof buf, "element %ld, leaf %zu (%s at byte %ld): expected %s, got %s", i, j,
                         kname[l.k], a, show(l.k, load(want, *c.t, i, l)).c_str(),
                         show(l.k, load(got, *c.t, i, l)).c_str());
                where = buf;
                break;
            }
        }
    if (where.empty()) {
        snprintf(buf, sizeof buf, "byte at offset %ld from the buffer address, outside the type map "
                 "(gap or past the end): expected 0x%02x, got 0x%02x", rel, want.mem[o], got.mem[o]);
        where = buf;
    }
    ck.mismatches++;
    if (ck.first.empty()) {
        ck.first = std::string(what) + ": " + where;
        printf("MISMATCH: seed %" PRIu64 " case %ld, %s, world rank %d: %s\n  case: %s\n  reproduce: %s\n",
               opt.seed, c.k, opt.label.c_str(), wrank, ck.first.c_str(), c.desc.c_str(),
               reproducer(c.k).c_str());
        fflush(stdout);
    }
    return false;
}

// corrupt one result byte (self-test): the first leaf byte of the first copy
void corrupt(Buf &b, const Case &c, long copies)
{
    if (!opt.self_test || copies <= 0 || c.t->leaves.empty()) return;
    b.mem[size_t(b.base + c.t->leaves[0].off)] ^= 0x5a;
}

void complete(MPI_Request *rq, const Case &c)
{
    if (c.wait_mode == 0) MPI_Wait(rq, MPI_STATUS_IGNORE);
    else if (c.wait_mode == 2) MPI_Waitall(1, rq, MPI_STATUSES_IGNORE);
    else {
        int done = 0;
        while (!done) MPI_Test(rq, &done, MPI_STATUS_IGNORE);
    }
}

struct Layout {  // v-variants: counts and displacements (in copies) per rank
    std::vector<int> cnt, dis;
    long span = 0;
};
// displacements of blocks in a random order with random holes
Layout layout(const std::vector<int> &cnt, uint64_t h)
{
    Layout L;
    L.cnt = cnt;
    int n = int(cnt.size());
    L.dis.assign(size_t(n), 0);
    std::vector<int> ord(static_cast<size_t>(n));
    for (int i = 0; i < n; i++) ord[size_t(i)] = i;
    Rng r(h);
    for (int i = n - 1; i > 0; i--) std::swap(ord[size_t(i)], ord[size_t(r.below(i + 1))]);
    long pos = r.below(2);
    for (int q : ord) {
        L.dis[size_t(q)] = int(pos);
        pos += cnt[size_t(q)] + r.below(2);
    }
    L.span = pos;
    return L;
}

bool barrier_case(Checker &ck, const Case &c)
{
    // the last rank enters late; a message another rank sends after leaving
    // the barrier must not be there before it enters (no false alarms: a
    // slow machine can only hide an early exit, never invent one)
    const int tag = 4242;
    int late = c.n - 1;
    bool ok = true;
    if (c.me == late) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (c.me == late && c.n > 1) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, tag, c.comm, &flag, MPI_STATUS_IGNORE);
        if (flag && !opt.break_checker) {
            ck.mismatches++;
            if (ck.first.empty()) {
                ck.first = "barrier: a rank left before the last one entered";
                printf("MISMATCH: seed %" PRIu64 " case %ld, %s: %s\n  case: %s\n  reproduce: %s\n", opt.seed,
                       c.k, opt.label.c_str(), ck.first.c_str(), c.desc.c_str(), reproducer(c.k).c_str());
            }
            ok = false;
        }
    }
    if (!opt.self_test) {
        if (c.nb) {
            MPI_Request rq;
            MPI_Ibarrier(c.comm, &rq);
            complete(&rq, c);
        } else {
            MPI_Barrier(c.comm);
        }
    }
    if (c.me != late) {
        int x = 1;
        MPI_Send(&x, 1, MPI_INT, late, tag, c.comm);
    } else {
        for (int i = 0; i < c.n - 1; i++) {
            int x;
            MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, tag, c.comm, MPI_STATUS_IGNORE);
        }
    }
    return ok;
}

bool run_case(Checker &ck, const Case &c)
{
    if (c.coll == BARRIER) return barrier_case(ck, c);
    const TMap &T = *c.t;
    MPI_Datatype dt = T.t;
    const int n = c.n, me = c.me, root = c.root;
    const long cnt = c.count;
    Values in{c, 0};
    uint64_t hb = hash({opt.seed, uint64_t(c.k), uint64_t(me), 77});
    auto poison = [&](long copies, int which) { return make_buf(T, copies, hb + uint64_t(which)); };
    MPI_Request rq = MPI_REQUEST_NULL;
    MPI_Request *R = c.nb ? &rq : nullptr;
    MPI_Op op = c.op < NOP ? mpi_op[c.op] : MPI_OP_NULL;
    bool ok = true;
    long before = ck.mismatches;
    Rng vr(hash({opt.seed, uint64_t(c.k), 3}));
    auto done = [&]() { if (c.nb) complete(&rq, c); };

    switch (c.coll) {
    case BCAST: {
        Buf b = poison(cnt, 0), want = b;
        if (me == root) put(b, c, 0, cnt, in, root, 0);
        put(want, c, 0, cnt, in, root, 0);
        if (R) MPI_Ibcast(b.ptr(), int(cnt), dt, root, c.comm, R); else MPI_Bcast(b.ptr(), int(cnt), dt, root, c.comm);
        done();
        corrupt(b, c, cnt);
        verify(ck, c, "buffer", b, want);
        break;
    }
    case REDUCE: case ALLREDUCE: case SCAN: case EXSCAN: {
        bool ipr = c.inplace && (c.coll != REDUCE || me == root);
        Buf s = poison(cnt, 0), s0;
        put(s, c, 0, cnt, in, me, 0);
        s0 = s;
        bool has = c.coll != REDUCE || me == root;
        Buf rb = poison(has ? cnt : 0, 1);
        if (ipr) put(rb, c, 0, cnt, in, me, 0);
        Buf want = rb;
        const void *sp = ipr ? MPI_IN_PLACE : s.ptr();
        void *rp = has ? rb.ptr() : nullptr;
        switch (c.coll) {
        case REDUCE:
            if (R) MPI_Ireduce(sp, rp, int(cnt), dt, op, root, c.comm, R);
            else MPI_Reduce(sp, rp, int(cnt), dt, op, root, c.comm);
            break;
        case ALLREDUCE:
            if (R) MPI_Iallreduce(sp, rp, int(cnt), dt, op, c.comm, R);
            else MPI_Allreduce(sp, rp, int(cnt), dt, op, c.comm);
            break;
        case SCAN:
            if (R) MPI_Iscan(sp, rp, int(cnt), dt, op, c.comm, R);
            else MPI_Scan(sp, rp, int(cnt), dt, op, c.comm);
            break;
        default:
            if (R) MPI_Iexscan(sp, rp, int(cnt), dt, op, c.comm, R);
            else MPI_Exscan(sp, rp, int(cnt), dt, op, c.comm);
            break;
        }
        done();
        if (!ipr) verify(ck, c, "send buffer (modified)", s, s0);
        if (has && !(c.coll == EXSCAN && me == 0)) {
            int lo = 0, hi = c.coll == SCAN ? me + 1 : c.coll == EXSCAN ? me : n;
            put_reduced(want, c, cnt, in, lo, hi, 0);
            corrupt(rb, c, cnt);
            verify(ck, c, "result", rb, want);
        }
        break;
    }
    case REDUCE_SCATTER: case REDUCE_SCATTER_BLOCK: {
        std::vector<int> rc(static_cast<size_t>(n), int(cnt));
        if (c.coll == REDUCE_SCATTER)
            for (int q = 0; q < n; q++) rc[size_t(q)] = vr.chance(15) ? 0 : vr.range(0, int(2 * cnt + 1));
        long tot = 0;
        std::vector<long> off(static_cast<size_t>(n));
        for (int q = 0; q < n; q++) off[size_t(q)] = tot, tot += rc[size_t(q)];
        Buf s = poison(tot, 0);
        for (int q = 0; q < n; q++) put(s, c, off[size_t(q)], rc[size_t(q)], in, me, q);
        Buf s0 = s;
        Buf rb = c.inplace ? s : poison(rc[size_t(me)], 1);
        Buf want = rb;
        const void *sp = c.inplace ? MPI_IN_PLACE : s.ptr();
        if (c.coll == REDUCE_SCATTER) {
            if (R) MPI_Ireduce_scatter(sp, rb.ptr(), rc.data(), dt, op, c.comm, R);
            else MPI_Reduce_scatter(sp, rb.ptr(), rc.data(), dt, op, c.comm);
        } else {
            if (R) MPI_Ireduce_scatter_block(sp, rb.ptr(), int(cnt), dt, op, c.comm, R);
            else MPI_Reduce_scatter_block(sp, rb.ptr(), int(cnt), dt, op, c.comm);
        }
        done();
        if (!c.inplace) verify(ck, c, "send buffer (modified)", s, s0);
        put_reduced(want, c, rc[size_t(me)], in, 0, n, me);
        corrupt(rb, c, rc[size_t(me)]);
        verify(ck, c, "result", rb, want, c.inplace ? rc[size_t(me)] : -1);
        break;
    }
    case GATHER: case GATHERV: case ALLGATHER: case ALLGATHERV: {
        bool v = c.coll == GATHERV || c.coll == ALLGATHERV;
        bool all = c.coll == ALLGATHER || c.coll == ALLGATHERV;
        std::vector<int> cs(static_cast<size_t>(n), int(cnt));
        if (v)
            for (int q = 0; q < n; q++) cs[size_t(q)] = vr.chance(15) ? 0 : vr.range(0, int(2 * cnt + 1));
        Layout L;
        if (v) L = layout(cs, hash({opt.seed, uint64_t(c.k), 4}));
        else {
            L.cnt = cs;
            for (int q = 0; q < n; q++) L.dis.push_back(int(q * cnt));
            L.span = n * cnt;
        }
        bool has = all || me == root;
        bool ipr = c.inplace && has;
        Buf s = poison(cs[size_t(me)], 0);
        put(s, c, 0, cs[size_t(me)], in, me, 0);
        Buf s0 = s;
        Buf rb = poison(has ? L.span : 0, 1);
        if (ipr) put(rb, c, L.dis[size_t(me)], cs[size_t(me)], in, me, 0);
        Buf want = rb;
        const void *sp = ipr ? MPI_IN_PLACE : s.ptr();
        void *rp = has ? rb.ptr() : nullptr;
        int sc = cs[size_t(me)];
        switch (c.coll) {
        case GATHER:
            if (R) MPI_Igather(sp, sc, dt, rp, int(cnt), dt, root, c.comm, R);
            else MPI_Gather(sp, sc, dt, rp, int(cnt), dt, root, c.comm);
            break;
        case GATHERV:
            if (R) MPI_Igatherv(sp, sc, dt, rp, L.cnt.data(), L.dis.data(), dt, root, c.comm, R);
            else MPI_Gatherv(sp, sc, dt, rp, L.cnt.data(), L.dis.data(), dt, root, c.comm);
            break;
        case ALLGATHER:
            if (R) MPI_Iallgather(sp, sc, dt, rp, int(cnt), dt, c.comm, R);
            else MPI_Allgather(sp, sc, dt, rp, int(cnt), dt, c.comm);
            break;
        default:
            if (R) MPI_Iallgatherv(sp, sc, dt, rp, L.cnt.data(), L.dis.data(), dt, c.comm, R);
            else MPI_Allgatherv(sp, sc, dt, rp, L.cnt.data(), L.dis.data(), dt, c.comm);
            break;
        }
        done();
        if (!ipr) verify(ck, c, "send buffer (modified)", s, s0);
        if (has) {
            for (int q = 0; q < n; q++) put(want, c, L.dis[size_t(q)], cs[size_t(q)], in, q, 0);
            corrupt(rb, c, L.span);
            verify(ck, c, "result", rb, want);
        }
        break;
    }
    case SCATTER: case SCATTERV: {
        bool v = c.coll == SCATTERV;
        std::vector<int> cs(static_cast<size_t>(n), int(cnt));
        if (v)
            for (int q = 0; q < n; q++) cs[size_t(q)] = vr.chance(15) ? 0 : vr.range(0, int(2 * cnt + 1));
        Layout L;
        if (v) L = layout(cs, hash({opt.seed, uint64_t(c.k), 4}));
        else {
            L.cnt = cs;
            for (int q = 0; q < n; q++) L.dis.push_back(int(q * cnt));
            L.span = n * cnt;
        }
        bool isroot = me == root;
        bool ipr = c.inplace && isroot;
        Buf s = poison(isroot ? L.span : 0, 0);
        if (isroot)
            for (int q = 0; q < n; q++) put(s, c, L.dis[size_t(q)], cs[size_t(q)], in, root, q);
        Buf s0 = s;
        Buf rb = poison(ipr ? 0 : cs[size_t(me)], 1);
        Buf want = rb;
        void *rp = ipr ? MPI_IN_PLACE : rb.ptr();
        const void *sp = isroot ? s.ptr() : nullptr;
        if (c.coll == SCATTER) {
            if (R) MPI_Iscatter(sp, int(cnt), dt, rp, int(cnt), dt, root, c.comm, R);
            else MPI_Scatter(sp, int(cnt), dt, rp, int(cnt), dt, root, c.comm);
        } else {
            if (R) MPI_Iscatterv(sp, L.cnt.data(), L.dis.data(), dt, rp, cs[size_t(me)], dt, root, c.comm, R);
            else MPI_Scatterv(sp, L.cnt.data(), L.dis.data(), dt, rp, cs[size_t(me)], dt, root, c.comm);
        }
        done();
        if (isroot) verify(ck, c, "send buffer (modified)", s, s0);
        if (!ipr) {
            put(want, c, 0, cs[size_t(me)], in, root, me);
            corrupt(rb, c, cs[size_t(me)]);
            verify(ck, c, "result", rb, want);
        }
        break;
    }
    case ALLTOALL: case ALLTOALLV: {
        bool v = c.coll == ALLTOALLV;
        // c(p,q): what p sends to q; symmetric when in place
        auto pc = [&](int p, int q) -> int {
            if (!v) return int(cnt);
            uint64_t a = uint64_t(p), b = uint64_t(q);
            if (c.inplace && a > b) std::swap(a, b);
            uint64_t h = hash({opt.seed, uint64_t(c.k), 5, a, b});
            return h % 7 == 0 ? 0 : int(h % uint64_t(2 * cnt + 2));
        };
        std::vector<int> sc(static_cast<size_t>(n)), rc(static_cast<size_t>(n));
        for (int q = 0; q < n; q++) sc[size_t(q)] = pc(me, q), rc[size_t(q)] = pc(q, me);
        Layout SL, RL;
        if (v) {
            SL = layout(sc, hash({opt.seed, uint64_t(c.k), 6, uint64_t(me)}));
            RL = layout(rc, hash({opt.seed, uint64_t(c.k), 7, uint64_t(me)}));
        } else {
            SL.cnt = sc, RL.cnt = rc;
            for (int q = 0; q < n; q++) SL.dis.push_back(int(q * cnt)), RL.dis.push_back(int(q * cnt));
            SL.span = RL.span = n * cnt;
        }
        Buf s = poison(SL.span, 0);
        for (int q = 0; q < n; q++) put(s, c, SL.dis[size_t(q)], sc[size_t(q)], in, me, q);
        Buf s0 = s;
        Buf rb = poison(RL.span, 1);
        if (c.inplace)  // in place: what I send to q sits where q's block to me arrives
            for (int q = 0; q < n; q++) put(rb, c, RL.dis[size_t(q)], sc[size_t(q)], in, me, q);
        Buf want = rb;
        const void *sp = c.inplace ? MPI_IN_PLACE : s.ptr();
        if (!v) {
            if (R) MPI_Ialltoall(sp, int(cnt), dt, rb.ptr(), int(cnt), dt, c.comm, R);
            else MPI_Alltoall(sp, int(cnt), dt, rb.ptr(), int(cnt), dt, c.comm);
        } else {
            if (R)
                MPI_Ialltoallv(sp, SL.cnt.data(), SL.dis.data(), dt, rb.ptr(), RL.cnt.data(), RL.dis.data(), dt,
                               c.comm, R);
            else
                MPI_Alltoallv(sp, SL.cnt.data(), SL.dis.data(), dt, rb.ptr(), RL.cnt.data(), RL.dis.data(), dt,
                              c.comm);
        }
        done();
        if (!c.inplace) verify(ck, c, "send buffer (modified)", s, s0);
        for (int q = 0; q < n; q++) put(want, c, RL.dis[size_t(q)], rc[size_t(q)], in, q, me);
        corrupt(rb, c, RL.span);
        verify(ck, c, "result", rb, want);
        break;
    }
    default:
        break;
    }
    ok = ck.mismatches == before;
    return ok;
}

void watchdog()
{
    for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        long k = cur_case.load();
        if (k < 0) continue;
        if (double(now_ms() - case_start_ms.load()) > opt.case_timeout * 1000) {
            std::lock_guard<std::mutex> g(desc_mu);
            fprintf(stderr, "HANG: seed %" PRIu64 " case %ld, %s, world rank %d: no completion after %.0f s\n"
                    "  case: %s\n  reproduce: %s\n", opt.seed, k, opt.label.c_str(), wrank, opt.case_timeout,
                    cur_desc.c_str(), reproducer(k).c_str());
            fflush(stderr);
            _exit(124);
        }
    }
}

bool parse_colls(const std::string &list)
{
    enabled.clear();
    size_t p = 0;
    while (p <= list.size()) {
        size_t e = list.find(',', p);
        std::string w = list.substr(p, e == std::string::npos ? std::string::npos : e - p);
        p = e == std::string::npos ? list.size() + 1 : e + 1;
        if (w.empty()) continue;
        if (w == "all" || w == "blocking")
            for (int i = 0; i < NCOLL; i++) enabled.push_back(i);
        if (w == "all" || w == "nonblocking")
            for (int i = 0; i < NCOLL; i++) enabled.push_back(NCOLL + i);
        if (w == "all" || w == "blocking" || w == "nonblocking") continue;
        bool found = false;
        for (int i = 0; i < 2 * NCOLL; i++)
            if (kind_name(i) == w) enabled.push_back(i), found = true;
        if (!found) return false;
    }
    return !enabled.empty();
}

// point-to-point tallies on world (no collective is trusted)
void sum_to_zero(long *v, int len)
{
    if (wrank == 0) {
        std::vector<long> t(static_cast<size_t>(len));
        for (int p = 1; p < wsize; p++) {
            MPI_Recv(t.data(), len, MPI_LONG, p, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < len; i++) v[i] += t[size_t(i)];
        }
    } else {
        MPI_Send(v, len, MPI_LONG, 0, 999, MPI_COMM_WORLD);
    }
}
int decide_from_zero(int flag)
{
    if (wrank == 0)
        for (int p = 1; p < wsize; p++) MPI_Send(&flag, 1, MPI_INT, p, 998, MPI_COMM_WORLD);
    else
        MPI_Recv(&flag, 1, MPI_INT, 0, 998, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return flag;
}

int usage()
{
    if (wrank == 0)
        fprintf(stderr, "usage: collx_fuzz [--seed S] [--cases N | --case K] [--first K] [--time-limit SEC]\n"
                "       [--colls LIST] [--max-bytes B] [--components-under-test LABEL]\n"
                "       [--case-timeout SEC] [--self-test] [--known-bugs] [--verbose]\n");
    MPI_Finalize();
    return 2;
}

}  // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> const char * { return i + 1 < argc ? argv[++i] : nullptr; };
        const char *v = nullptr;
        if (a == "--self-test") opt.self_test = true;
        else if (a == "--break-checker") opt.break_checker = true;  // hidden: proves --self-test can fail
        else if (a == "--verbose") opt.verbose = true;
        else if (a == "--known-bugs") opt.known_bugs = true;
        else if (!(v = val())) return usage();
        else if (a == "--seed") opt.seed = strtoull(v, nullptr, 0);
        else if (a == "--cases") opt.cases = atol(v);
        else if (a == "--first") opt.first = atol(v);
        else if (a == "--case") opt.only = atol(v);
        else if (a == "--time-limit") opt.time_limit = atof(v);
        else if (a == "--case-timeout") opt.case_timeout = atof(v);
        else if (a == "--max-bytes") opt.max_bytes = std::max(64L, atol(v));
        else if (a == "--components-under-test") opt.label = v;
        else if (a == "--colls") opt.colls = v;
        else return usage();
    }
    if (!parse_colls(opt.colls)) return usage();
    MPI_Type_contiguous(2, MPI_UINT32_T, &pair_type);
    MPI_Type_commit(&pair_type);
    for (int o = 0; o < 10; o++)
        mpi_op[o] = (MPI_Op[]){MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR,
                                MPI_LAND, MPI_LOR, MPI_LXOR}[o];
    MPI_Op_create(user_fn<USUM>, 1, &mpi_op[USUM]);
    MPI_Op_create(user_fn<NCMAX>, 0, &mpi_op[NCMAX]);
    MPI_Op_create(user_fn<AFFINE>, 0, &mpi_op[AFFINE]);
    make_comms();
    std::thread(watchdog).detach();

    Checker ck;
    long ran = 0;
    bool caught[2 * NCOLL] = {};
    auto t0 = now_ms();
    long lo = opt.only >= 0 ? opt.only : opt.first, hi = opt.only >= 0 ? opt.only + 1 : opt.first + opt.cases;
    if (opt.self_test) hi = lo + 60 * long(enabled.size());
    if (wrank == 0)
        printf("collx_fuzz: seed %" PRIu64 ", cases %ld..%ld, %d ranks, components under test: %s\n", opt.seed, lo,
               hi - 1, wsize, opt.label.c_str());
    for (long k = lo; k < hi; k++) {
        if (opt.time_limit > 0 && (k - lo) % 8 == 0 && k > lo) {
            int stop = wrank == 0 && double(now_ms() - t0) > opt.time_limit * 1000;
            if (decide_from_zero(stop)) break;
        }
        Case c = draw_case(k);
        if (opt.self_test && caught[c.ck]) continue;  // every rank knows
        {
            std::lock_guard<std::mutex> g(desc_mu);
            cur_desc = c.desc;
        }
        case_start_ms = now_ms();
        cur_case = k;
        if (opt.verbose) {
            printf("case %ld: %s\n", k, c.desc.c_str());
            fflush(stdout);
        }
        long b = ck.mismatches;
        if (opt.self_test) ck.first = "quiet";
        run_case(ck, c);
        cur_case = -1;
        long got = ck.mismatches - b;
        if (opt.self_test) {
            // a corruption counts as caught when some rank reported it
            sum_to_zero(&got, 1);
            if (decide_from_zero(int(got > 0))) caught[c.ck] = true;
            ck.mismatches = b;
            bool all = true;
            for (int x : enabled) all = all && caught[x];
            if (all) break;
        } else {
            per_kind_bad[c.ck] += got;
        }
        per_kind_run[c.ck]++;
        ran++;
    }

    long tot[4 * NCOLL + 2];
    for (int i = 0; i < 2 * NCOLL; i++) tot[i] = per_kind_run[i], tot[2 * NCOLL + i] = per_kind_bad[i];
    tot[4 * NCOLL] = ck.mismatches;
    tot[4 * NCOLL + 1] = 0;
    sum_to_zero(tot, 4 * NCOLL + 2);
    int rc = 0;
    if (wrank == 0) {
        std::string per;
        for (int i = 0; i < 2 * NCOLL; i++)
            if (per_kind_run[i]) {
                per += " " + kind_name(i) + "=" + std::to_string(per_kind_run[i]);
                if (tot[2 * NCOLL + i]) per += "(" + std::to_string(tot[2 * NCOLL + i]) + " bad)";
            }
        printf("collx_fuzz: per collective:%s\n", per.c_str());
        if (opt.self_test) {
            int missed = 0;
            for (int x : enabled)
                if (!caught[x]) {
                    printf("collx_fuzz: self-test: corruption of %s went unnoticed\n", kind_name(x).c_str());
                    missed++;
                }
            printf("collx_fuzz: self-test: %zu collective kinds corrupted, %d unnoticed: %s\n", enabled.size(),
                   missed, missed ? "FAILED" : "passed");
            rc = missed ? 1 : 0;
        } else {
            printf("collx_fuzz: %s: %ld cases run, %ld mismatches (summed over ranks): %s\n",
                   opt.label.c_str(), ran, tot[4 * NCOLL], tot[4 * NCOLL] ? "FAILED" : "passed");
            rc = tot[4 * NCOLL] ? 1 : 0;
        }
        fflush(stdout);
    }
    rc = decide_from_zero(rc);
    for (size_t i = 1; i < comms.size(); i++) MPI_Comm_free(&comms[i].comm);
    MPI_Op_free(&mpi_op[USUM]);
    MPI_Op_free(&mpi_op[NCMAX]);
    MPI_Op_free(&mpi_op[AFFINE]);
    MPI_Type_free(&pair_type);
    MPI_Finalize();
    return rc;
}
