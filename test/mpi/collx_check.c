/*
 * collx differential checker.
 *
 * Runs collectives through whatever coll component Open MPI selected (the
 * test scripts select ours with --mca) over many cases -- collective,
 * count (0, primes, counts that do not divide into segments), datatype
 * (predefined and derived with gaps), op (predefined, user-defined
 * commutative, user-defined NON-commutative), root, MPI_IN_PLACE and
 * communicator (world, dup, splits of odd sizes, reversed order, size 1) --
 * and compares every result with a reference computed independently on each
 * rank (every rank can compute every rank's input, so no communication is
 * needed for the reference).  It also checks that gap bytes of derived types
 * and bytes past the end are untouched and that send buffers are not
 * modified.  Failures are tallied with point-to-point messages only.
 *
 * Data-movement collectives (allgather, gather, scatter, alltoall and their
 * v-variants) also run with differing but matching type signatures: each
 * datatype has a "twin" of the same signature and another layout (contiguous
 * ints vs a vector, a gapped struct vs a packed one), used on the receiving
 * or the sending side.  The v-variants get imbalanced counts (a rank with 0,
 * one with 2*count+1) and displacements out of rank order with holes that
 * must stay untouched.  MPI_IN_PLACE runs wherever MPI allows it.  Scan and
 * exscan check rank order with the non-commutative op (exscan's undefined
 * result on rank 0 is not checked).  Barrier: one rank enters late, watching
 * for a message the others send after leaving the barrier -- one arriving
 * first proves the barrier let them out early.
 *
 *   collx_check [--quick] [--colls LIST] [--seed N] [--max-count N] [--big]
 *               [--big-only] [--big-count N] [--part K/N] [--self-test] [--known-bugs]
 *               [--stderr DIR]
 *
 * LIST: any of bcast,reduce,allreduce,allgather,allgatherv,gather,gatherv,
 * scatter,scatterv,barrier,reduce_scatter,reduce_scatter_block,scan,exscan,
 * alltoall,alltoallv,ibcast,ireduce,iallreduce,iallgather,ireduce_scatter,
 * ireduce_scatter_block,overlap,pbcast,preduce,
 * pallreduce,pallgather, or the keywords `blocking` (the 16 blocking ones),
 * `persistent` (the p* ones) and `all` (every one); default
 * bcast,reduce,allreduce.  `overlap` posts several non-blocking collectives
 * on one communicator and completes them in reverse order.  The p* words are
 * the persistent collectives (MPI-4 MPI_Bcast_init, ...; Open MPI 4.1's
 * MPIX_*_init): each request is made once and started three times, the data
 * changed before every start and the result checked after it.
 *
 * --big adds a count of 300007 elements (--big-count N: N) to every
 * datatype; --big-only runs that count alone.  --part K/N runs the K-th of
 * N disjoint parts of the matrix (K from 0): the (communicator, datatype,
 * count) cases are dealt out along diagonals (each part gets every count
 * on some datatypes), so N runs with K = 0..N-1 run every case once
 * between them (the test scripts split the full matrix between one node
 * and emulated nodes).
 *
 * --self-test corrupts one element of one result of each collective (on one
 * rank; for barrier: replaces it by nothing once) before verification and
 * reports every collective where that went unnoticed (exit status 1).
 *
 * With Open MPI's own components (none of ours given a priority, tuned not
 * excluded), allreduce of datatypes with true_lb > 0 from 16 KiB up is
 * skipped with a note: tuned's ring allreduce corrupts the heap there
 * (docs/upstream-bugs.md); --known-bugs runs them anyway.
 *
 * Exit status 0 when every case matched; the last line says
 * "collx_check: N passed, M failed" (followed by the self-test summary).
 */
#include <mpi.h>
/* MPI-4's persistent collectives: Open MPI 5.0 has them although its
 * MPI_VERSION is 3; 4.1 has them as the MPIX_ extension */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define CX_MPI4_PERSISTENT 1
#else
#define CX_MPI4_PERSISTENT 0
#include <mpi-ext.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rank_stderr.h"

/* Elements of derived types may sit at any byte offset (a struct with a
 * hole, a resized vector): access them through memcpy, never through a
 * cast pointer (UBSan: misaligned store/load). */
#define CX_PUT(T, p, x) do { T t_ = (T)(x); memcpy((p), &t_, sizeof t_); } while (0)
#define CX_ADD(T, b, a) CX_PUT(T, b, CX_GET(T, b) + CX_GET(T, a))
#define CX_GET(T, p) ({ T t_; memcpy(&t_, (p), sizeof t_); t_; })

/* ------------------------------------------------------------ datatypes */

enum kind { K_I32, K_U32, K_I64, K_DBL, K_FLT };
static const size_t kind_size[] = {4, 4, 8, 8, 4};

typedef struct slot {
    ptrdiff_t off;
    enum kind kind;
} slot_t;

typedef struct dtype_case {
    const char *name;
    MPI_Datatype type;
    ptrdiff_t extent;
    int nslots;
    slot_t slots[4];
    int reducible; /* all slots of one kind: our user-defined sum applies */
    int predefined; /* a predefined type: predefined ops apply too */
    int affine;    /* the non-commutative affine op applies */
    ptrdiff_t true_lb;
    /* a type with the same type signature, other layout (its slots divide
     * ours): what data-movement collectives receive with (or send with) */
    const struct dtype_case *twin;
} dtype_case_t;

#define MAX_DTYPES 12
static dtype_case_t dtypes[MAX_DTYPES];
static int ndtypes = 0;

/* twins that are not in the list above (never reduced, only moved) */
static dtype_case_t twins[MAX_DTYPES];
static int ntwins = 0;

static dtype_case_t *init_dtype(dtype_case_t *d, const char *name, MPI_Datatype t, int reducible)
{
    memset(d, 0, sizeof(*d));
    d->name = name;
    d->type = t;
    d->reducible = reducible;
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    d->predefined = comb == MPI_COMBINER_NAMED;
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t, &lb, &ext);
    d->extent = ext;
    MPI_Type_get_true_extent(t, &lb, &ext);
    d->true_lb = lb;
    return d;
}

static dtype_case_t *add_dtype(const char *name, MPI_Datatype t, int reducible)
{
    return init_dtype(&dtypes[ndtypes++], name, t, reducible);
}

static dtype_case_t *add_twin(const char *name, MPI_Datatype t)
{
    return init_dtype(&twins[ntwins++], name, t, 0);
}

static void build_dtypes(void)
{
    dtype_case_t *d;
    MPI_Datatype t, t2;

    d = add_dtype("int", MPI_INT, 1);
    d->nslots = 1; d->slots[0] = (slot_t){0, K_I32};
    d = add_dtype("double", MPI_DOUBLE, 1);
    d->nslots = 1; d->slots[0] = (slot_t){0, K_DBL};
    d = add_dtype("float", MPI_FLOAT, 1);
    d->nslots = 1; d->slots[0] = (slot_t){0, K_FLT};
    d = add_dtype("int64", MPI_INT64_T, 1);
    d->nslots = 1; d->slots[0] = (slot_t){0, K_I64};

    MPI_Type_contiguous(3, MPI_INT, &t);
    MPI_Type_commit(&t);
    d = add_dtype("contig3-int", t, 1);
    d->nslots = 3;
    for (int i = 0; i < 3; ++i) d->slots[i] = (slot_t){4 * i, K_I32};

    /* ints at 0 and 12: a gap of two ints inside each element */
    MPI_Type_vector(2, 1, 3, MPI_INT, &t);
    MPI_Type_commit(&t);
    d = add_dtype("vector-int-gap", t, 1);
    d->nslots = 2; d->slots[0] = (slot_t){0, K_I32}; d->slots[1] = (slot_t){12, K_I32};

    /* same, resized to 24 bytes: a trailing gap between elements too */
    MPI_Type_vector(2, 1, 3, MPI_DOUBLE, &t2);
    MPI_Type_create_resized(t2, 0, 40, &t);
    MPI_Type_free(&t2);
    MPI_Type_commit(&t);
    d = add_dtype("resized-vector-double", t, 1);
    d->nslots = 2; d->slots[0] = (slot_t){0, K_DBL}; d->slots[1] = (slot_t){24, K_DBL};

    /* indexed, with the first block not at offset 0 (true_lb > 0) */
    int bl[2] = {1, 2}, disp[2] = {1, 4};
    MPI_Type_indexed(2, bl, disp, MPI_INT, &t);
    MPI_Type_commit(&t);
    d = add_dtype("indexed-int-lb", t, 1);
    d->nslots = 3;
    d->slots[0] = (slot_t){4, K_I32}; d->slots[1] = (slot_t){16, K_I32};
    d->slots[2] = (slot_t){20, K_I32};

    /* struct {int; <gap>; double} with its natural extent */
    int sbl[2] = {1, 1};
    MPI_Aint sdisp[2] = {0, 8};
    MPI_Datatype stypes[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, sbl, sdisp, stypes, &t);
    MPI_Type_commit(&t);
    d = add_dtype("struct-int-double", t, 0);
    d->nslots = 2; d->slots[0] = (slot_t){0, K_I32}; d->slots[1] = (slot_t){8, K_DBL};

    /* {a, b} pairs for the affine (non-commutative) op */
    MPI_Type_contiguous(2, MPI_UINT32_T, &t);
    MPI_Type_commit(&t);
    d = add_dtype("affine-pair", t, 0);
    d->affine = 1;
    d->nslots = 2; d->slots[0] = (slot_t){0, K_U32}; d->slots[1] = (slot_t){4, K_U32};

    /* Twins: same type signature per element (or per a divisor of it),
     * other layout -- a gather may send contiguous ints and receive them
     * into a vector (upstream #12383, #12438 were such cases).  The twins
     * of predefined types have gaps, those of gapped types have none. */
    int one = 1;
    MPI_Aint at4 = 4;
    MPI_Datatype tint = MPI_INT;
    MPI_Type_create_struct(1, &one, &at4, &tint, &t2); /* an int at 4: true_lb 4 */
    MPI_Type_create_resized(t2, 0, 12, &t);
    MPI_Type_free(&t2);
    MPI_Type_commit(&t);
    d = add_twin("int-at-4-extent-12", t);
    d->nslots = 1; d->slots[0] = (slot_t){4, K_I32};
    dtypes[0].twin = d;
    MPI_Type_create_resized(MPI_DOUBLE, 0, 16, &t);
    MPI_Type_commit(&t);
    d = add_twin("double-extent-16", t);
    d->nslots = 1; d->slots[0] = (slot_t){0, K_DBL};
    dtypes[1].twin = d;
    MPI_Type_vector(1, 1, 1, MPI_FLOAT, &t2);
    MPI_Type_create_resized(t2, -4, 8, &t); /* lb < 0: data at 0, gap before */
    MPI_Type_free(&t2);
    MPI_Type_commit(&t);
    d = add_twin("float-lb-4-extent-8", t);
    d->nslots = 1; d->slots[0] = (slot_t){0, K_FLT};
    dtypes[2].twin = d;
    MPI_Type_create_resized(MPI_INT64_T, 0, 24, &t);
    MPI_Type_commit(&t);
    d = add_twin("int64-extent-24", t);
    d->nslots = 1; d->slots[0] = (slot_t){0, K_I64};
    dtypes[3].twin = d;
    MPI_Type_vector(3, 1, 2, MPI_INT, &t); /* ints at 0, 8, 16 */
    MPI_Type_commit(&t);
    d = add_twin("vector3-int-stride2", t);
    d->nslots = 3;
    for (int i = 0; i < 3; ++i) d->slots[i] = (slot_t){8 * i, K_I32};
    dtypes[4].twin = d;
    dtypes[5].twin = &dtypes[0]; /* vector-int-gap <-> 2 ints */
    dtypes[6].twin = &dtypes[1]; /* resized-vector-double <-> 2 doubles */
    dtypes[7].twin = &dtypes[4]; /* indexed-int-lb <-> contig3-int */
    int pbl[2] = {1, 1};
    MPI_Aint pdisp[2] = {0, 4};
    MPI_Type_create_struct(2, pbl, pdisp, stypes, &t2); /* {int; double} packed */
    MPI_Type_create_resized(t2, 0, 12, &t);
    MPI_Type_free(&t2);
    MPI_Type_commit(&t);
    d = add_twin("packed-int-double", t);
    d->nslots = 2; d->slots[0] = (slot_t){0, K_I32}; d->slots[1] = (slot_t){4, K_DBL};
    dtypes[8].twin = d;
    d = add_twin("uint32", MPI_UINT32_T);
    d->nslots = 1; d->slots[0] = (slot_t){0, K_U32};
    dtypes[9].twin = d;
}

/* ------------------------------------------------------------------ ops */

enum opk { OP_SUM, OP_MAX, OP_MIN, OP_USER_SUM, OP_AFFINE, NOPS };
static const char *op_name[] = {"sum", "max", "min", "user-sum(commutative)",
                                "affine(non-commutative)"};
static MPI_Op ops[NOPS];

/* user-defined commutative sum over any of our reducible types */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int n = *len;
    MPI_Datatype t = *dt;
    for (int d = 0; d < ndtypes; ++d) {
        if (dtypes[d].type != t || !dtypes[d].reducible) continue;
        for (int e = 0; e < n; ++e)
            for (int s = 0; s < dtypes[d].nslots; ++s) {
                char *a = (char *)in + e * dtypes[d].extent + dtypes[d].slots[s].off;
                char *b = (char *)inout + e * dtypes[d].extent + dtypes[d].slots[s].off;
                switch (dtypes[d].slots[s].kind) {
                case K_I32: CX_ADD(int32_t, b, a); break;
                case K_U32: CX_ADD(uint32_t, b, a); break;
                case K_I64: CX_ADD(int64_t, b, a); break;
                case K_DBL: CX_ADD(double, b, a); break;
                case K_FLT: CX_ADD(float, b, a); break;
                }
            }
        return;
    }
    fprintf(stderr, "user_sum called with an unexpected datatype\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* (f op g)(x) = f(g(x)) for affine maps x -> a*x + b (mod 2^32):
 * associative, not commutative.  inout = in op inout. */
static void affine_compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    uint32_t *f = in, *g = inout;
    for (int i = 0; i < *len; ++i) {
        uint32_t a = f[2 * i] * g[2 * i];
        uint32_t b = f[2 * i] * g[2 * i + 1] + f[2 * i + 1];
        g[2 * i] = a;
        g[2 * i + 1] = b;
    }
}

static int op_applies(int op, const dtype_case_t *d)
{
    if (op == OP_AFFINE) return d->affine;
    /* Open MPI (like the standard) applies predefined ops to predefined
     * types only; derived types get user-defined ops */
    if (op == OP_SUM || op == OP_MAX || op == OP_MIN) return d->predefined;
    return d->reducible;
}

/* ------------------------------------------------------ values, reference */

static unsigned seed = 1;

/* Input of `rank` for slot number i (element * nslots + slot). Small
 * values keep float/double sums exact in any order. */
static int64_t input(int rank, size_t i, enum kind k)
{
    uint64_t h = (uint64_t)rank * 2654435761u + i * 40503u + seed * 97u;
    h ^= h >> 13;
    int64_t v = (int64_t)(h % 61) - 30;
    if (k == K_U32) v = (int64_t)(h % 1000003) * 2 + 1; /* odd: affine maps */
    return v;
}


static void store(char *p, enum kind k, int64_t v)
{
    switch (k) {
    case K_I32: CX_PUT(int32_t, p, v); break;
    case K_U32: CX_PUT(uint32_t, p, v); break;
    case K_I64: CX_PUT(int64_t, p, v); break;
    case K_DBL: CX_PUT(double, p, v); break;
    case K_FLT: CX_PUT(float, p, v); break;
    }
}

static int same(const char *p, enum kind k, int64_t v)
{
    switch (k) {
    case K_I32: return CX_GET(int32_t, p) == (int32_t)v;
    case K_U32: return CX_GET(uint32_t, p) == (uint32_t)v;
    case K_I64: return CX_GET(int64_t, p) == v;
    case K_DBL: return CX_GET(double, p) == (double)v;
    case K_FLT: return CX_GET(float, p) == (float)v;
    }
    return 0;
}

static double as_double(const char *p, enum kind k)
{
    switch (k) {
    case K_I32: return CX_GET(int32_t, p);
    case K_U32: return CX_GET(uint32_t, p);
    case K_I64: return (double)CX_GET(int64_t, p);
    case K_DBL: return CX_GET(double, p);
    case K_FLT: return CX_GET(float, p);
    }
    return 0;
}

/* Reference reduction of slot i over the communicator's ranks, whose world
 * ranks are wranks[0..n-1] in communicator order. */
static int64_t reference(int op, const int *wranks, int n, size_t slot_index, int slot_in_elem,
                         enum kind k)
{
    if (op == OP_AFFINE) {
        /* element = (a, b); fold x_0 op x_1 op ... right to left */
        size_t e = slot_index - (size_t)slot_in_elem; /* index of the 'a' slot */
        uint32_t a = (uint32_t)input(wranks[n - 1], e, K_U32);
        uint32_t b = (uint32_t)input(wranks[n - 1], e + 1, K_U32);
        for (int r = n - 2; r >= 0; --r) {
            uint32_t fa = (uint32_t)input(wranks[r], e, K_U32);
            uint32_t fb = (uint32_t)input(wranks[r], e + 1, K_U32);
            uint32_t na = fa * a, nb = fa * b + fb;
            a = na;
            b = nb;
        }
        return slot_in_elem == 0 ? a : b;
    }
    int64_t acc = input(wranks[0], slot_index, k);
    for (int r = 1; r < n; ++r) {
        int64_t v = input(wranks[r], slot_index, k);
        switch (op) {
        case OP_SUM:
        case OP_USER_SUM: acc += v; break;
        case OP_MAX: acc = v > acc ? v : acc; break;
        case OP_MIN: acc = v < acc ? v : acc; break;
        }
    }
    return acc;
}

/* ---------------------------------------------------------------- buffers */

#define SENTINEL 0xA5
#define GUARD 64

typedef struct buf {
    char *mem;  /* GUARD bytes, the data span, GUARD bytes */
    size_t span;
} buf_t;

static char *data(buf_t *b) { return b->mem + GUARD; }

static void buf_alloc(buf_t *b, const dtype_case_t *d, size_t count)
{
    /* element e's data lies at e*extent + slot offsets: the span ends at the
     * last element's highest slot byte (which may be beyond count*extent) */
    size_t ub = 0;
    for (int s = 0; s < d->nslots; ++s) {
        size_t end = (size_t)d->slots[s].off + kind_size[d->slots[s].kind];
        if (end > ub) ub = end;
    }
    b->span = count ? (count - 1) * (size_t)d->extent + ub : 0;
    b->mem = malloc(b->span + 2 * GUARD);
    if (!b->mem) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(b->mem, SENTINEL, b->span + 2 * GUARD);
}

static void fill(buf_t *b, const dtype_case_t *d, size_t count, int wrank)
{
    for (size_t e = 0; e < count; ++e)
        for (int s = 0; s < d->nslots; ++s) {
            size_t i = e * (size_t)d->nslots + (size_t)s;
            store(data(b) + e * d->extent + d->slots[s].off, d->slots[s].kind,
                  input(wrank, i, d->slots[s].kind));
        }
}

/* ------------------------------------------------------------- reporting */

static long passed = 0, failed = 0;
static int wrank_g;
static int verbose = 0;

typedef struct ccase {
    const char *coll;
    const char *comm;
    int comm_size;
    const dtype_case_t *d;
    size_t count;
    int op;
    int root;
    int in_place;
    int nb; /* 1: non-blocking form, completed with MPI_Wait or an MPI_Test loop;
             * 2: persistent, made once and started PROUNDS times */
    int mix; /* data movement: 1 = received as d->twin, 2 = sent as d->twin */
} ccase_t;

/* --self-test: deliberately corrupt one element of the first non-empty
 * result of each collective on one rank, and count whether it is caught */
static int self_test = 0, st_rank = 0;
static int fake_barrier = 0; /* hidden: MPI_Barrier replaced by nothing */
static const char *st_names[][2] = {
    {"MPI_Bcast", "bcast"}, {"MPI_Ibcast", "ibcast"}, {"MPI_Reduce", "reduce"},
    {"MPI_Ireduce", "ireduce"}, {"MPI_Allreduce", "allreduce"},
    {"MPI_Iallreduce", "iallreduce"}, {"overlapped MPI_Ibcast(root 0)", "overlap"},
    {"MPI_Allgather", "allgather"}, {"MPI_Allgatherv", "allgatherv"},
    {"MPI_Iallgather", "iallgather"},
    {"MPI_Gather", "gather"}, {"MPI_Gatherv", "gatherv"}, {"MPI_Scatter", "scatter"},
    {"MPI_Scatterv", "scatterv"}, {"MPI_Barrier", "barrier"},
    {"MPI_Reduce_scatter", "reduce_scatter"},
    {"MPI_Reduce_scatter_block", "reduce_scatter_block"},
    {"MPI_Ireduce_scatter", "ireduce_scatter"},
    {"MPI_Ireduce_scatter_block", "ireduce_scatter_block"}, {"MPI_Scan", "scan"},
    {"MPI_Exscan", "exscan"}, {"MPI_Alltoall", "alltoall"}, {"MPI_Alltoallv", "alltoallv"},
    {"MPI_Bcast_init", "pbcast"}, {"MPI_Reduce_init", "preduce"},
    {"MPI_Allreduce_init", "pallreduce"}, {"MPI_Allgather_init", "pallgather"}};
#define NST ((int)(sizeof(st_names) / sizeof(st_names[0])))
static int st_done[NST];           /* this collective had its corrupted case */
static long st_tally[NST][2];      /* corruptions injected here, of which caught */
static int st_pending = -1;        /* the case being verified carries one */

static int st_index(const char *coll)
{
    for (int i = 0; i < NST; ++i)
        if (!strcmp(st_names[i][0], coll)) return i;
    return -1;
}

/* called at the first slot of a result that has an expected value */
static void st_corrupt(const ccase_t *c, char *p)
{
    if (!self_test || wrank_g != st_rank || st_pending >= 0) return;
    int i = st_index(c->coll);
    if (i < 0 || st_done[i]) return;
    st_done[i] = 1;
    st_tally[i][0]++;
    st_pending = i;
    *p ^= 1; /* the low byte: changes any of our kinds */
}

static void report(const ccase_t *c, const char *what, size_t elem, int slot, double got,
                   double want)
{
    char dn[160];
    if (c->mix)
        snprintf(dn, sizeof dn, "%s(sent as %s, received as %s)", c->d->name,
                 c->mix == 2 ? c->d->twin->name : c->d->name,
                 c->mix == 1 ? c->d->twin->name : c->d->name);
    else
        snprintf(dn, sizeof dn, "%s", c->d->name);
    if (failed < 20 || st_pending >= 0)
        fprintf(stderr,
                "%s rank %d: %s comm=%s(size %d) dtype=%s count=%zu op=%s root=%d "
                "in_place=%d: %s at element %zu slot %d: got %.17g expected %.17g "
                "(seed %u)\n",
                st_pending >= 0 ? "SELF-TEST (injected) MISMATCH" : "MISMATCH", wrank_g,
                c->coll, c->comm, c->comm_size, dn, c->count,
                c->op >= 0 ? op_name[c->op] : "-", c->root, c->in_place, what, elem, slot, got,
                want, seed);
}

/* Check that b holds `expected(slot)` in every slot and SENTINEL in every
 * gap and guard byte (V_GAPS; else only in guard bytes).  V_RESULT: b is a
 * result (--self-test may corrupt it).  Returns 1 when all good. */
typedef int64_t (*expect_fn)(const ccase_t *, size_t slot_index, int slot, const void *ctx);
enum { V_GAPS = 1, V_RESULT = 2 };

static int verify(const ccase_t *c, buf_t *b, expect_fn want, const void *ctx, int flags)
{
    const dtype_case_t *d = c->d;
    const int check_gaps = flags & V_GAPS;
    for (size_t e = 0; e < c->count; ++e)
        for (int s = 0; s < d->nslots; ++s) {
            size_t i = e * (size_t)d->nslots + (size_t)s;
            int64_t w = want(c, i, s, ctx);
            char *p = data(b) + e * d->extent + d->slots[s].off;
            if (e == 0 && s == 0 && (flags & V_RESULT)) st_corrupt(c, p);
            if (!same(p, d->slots[s].kind, w)) {
                report(c, "wrong value", e, s, as_double(p, d->slots[s].kind),
                       d->slots[s].kind == K_U32 ? (double)(uint32_t)w : (double)w);
                return 0;
            }
        }
    /* gaps and guards: mark the bytes the datatype covers, all else must
     * still hold the sentinel */
    char *covered = calloc(b->span + 1, 1);
    if (check_gaps)
        for (size_t e = 0; e < c->count; ++e)
            for (int s = 0; s < d->nslots; ++s)
                memset(covered + e * d->extent + d->slots[s].off, 1,
                       kind_size[d->slots[s].kind]);
    else
        memset(covered, 1, b->span);
    for (size_t off = 0; off < b->span + 2 * GUARD; ++off) {
        const int inside = off >= GUARD && off < GUARD + b->span;
        if (inside && covered[off - GUARD]) continue;
        if ((unsigned char)b->mem[off] != SENTINEL) {
            report(c, inside ? "write into a datatype gap" : "write outside the buffer", off,
                   -1, (unsigned char)b->mem[off], SENTINEL);
            free(covered);
            return 0;
        }
    }
    free(covered);
    return 1;
}

typedef struct ref_ctx {
    const int *wranks;
    int n;
    int wrank; /* for "own input" expectations */
} ref_ctx_t;

static int64_t want_input(const ccase_t *c, size_t i, int s, const void *ctx)
{
    const ref_ctx_t *r = ctx;
    return input(r->wrank, i, c->d->slots[s].kind);
}

static int64_t want_reduced(const ccase_t *c, size_t i, int s, const void *ctx)
{
    const ref_ctx_t *r = ctx;
    return reference(c->op, r->wranks, r->n, i, s, c->d->slots[s].kind);
}

static void tally(int ok)
{
    if (st_pending >= 0) { /* the corrupted case: must have failed */
        if (!ok) st_tally[st_pending][1]++;
        st_pending = -1;
        return;
    }
    if (ok) ++passed;
    else ++failed;
}

/* ------------------------------------------------------------- the cases */

/* complete a non-blocking collective: MPI_Wait, or an MPI_Test loop */
static int finish(MPI_Request *req, int by_test)
{
    if (!by_test) return MPI_Wait(req, MPI_STATUS_IGNORE);
    int done = 0, rc = MPI_SUCCESS;
    while (!done && rc == MPI_SUCCESS) rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    return rc;
}

/* Persistent collectives: MPI-4's, or Open MPI 4.1's MPIX_ extension. */
#if CX_MPI4_PERSISTENT
#define CX_PERSISTENT 1
#define CX_BCAST_INIT MPI_Bcast_init
#define CX_REDUCE_INIT MPI_Reduce_init
#define CX_ALLREDUCE_INIT MPI_Allreduce_init
#define CX_ALLGATHER_INIT MPI_Allgather_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define CX_PERSISTENT 1
#define CX_BCAST_INIT MPIX_Bcast_init
#define CX_REDUCE_INIT MPIX_Reduce_init
#define CX_ALLREDUCE_INIT MPIX_Allreduce_init
#define CX_ALLGATHER_INIT MPIX_Allgather_init
#else
#define CX_PERSISTENT 0
#endif

/* A persistent request is started this many times, with other data (the
 * seed of input()) before each start. */
#define PROUNDS 3
static int rounds_of(const ccase_t *c) { return c->nb == 2 ? PROUNDS : 1; }

/* start a persistent request and complete it like a non-blocking one */
static int start_finish(MPI_Request *req, int by_test)
{
    int rc = MPI_Start(req);
    return rc == MPI_SUCCESS ? finish(req, by_test) : rc;
}

/* free a persistent request (inactive after finish) */
static void free_persistent(MPI_Request *req)
{
    if (*req != MPI_REQUEST_NULL) MPI_Request_free(req);
}

static void run_bcast(const ccase_t *c, MPI_Comm comm, const int *wranks)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    buf_t b;
    buf_alloc(&b, c->d, c->count);
    MPI_Request preq = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
#if CX_PERSISTENT
    if (c->nb == 2)
        rc = CX_BCAST_INIT(data(&b), (int)c->count, c->d->type, c->root, comm, MPI_INFO_NULL,
                           &preq);
#endif
    const unsigned seed0 = seed;
    for (int round = 0; round < rounds_of(c); ++round) {
        seed = seed0 + (unsigned)round;
        if (rank == c->root) fill(&b, c->d, c->count, wranks[c->root]);
        if (rc != MPI_SUCCESS) {
        } else if (c->nb == 2) {
            rc = start_finish(&preq, (c->count + (size_t)round) % 2);
        } else if (c->nb) {
            MPI_Request req;
            rc = MPI_Ibcast(data(&b), (int)c->count, c->d->type, c->root, comm, &req);
            if (rc == MPI_SUCCESS) rc = finish(&req, c->count % 2);
        } else {
            rc = MPI_Bcast(data(&b), (int)c->count, c->d->type, c->root, comm);
        }
        ref_ctx_t r = {wranks, size, wranks[c->root]};
        if (rc != MPI_SUCCESS) {
            report(c, "error code returned", 0, -1, rc, MPI_SUCCESS);
            tally(0);
        } else {
            tally(verify(c, &b, want_input, &r, V_GAPS | V_RESULT));
        }
    }
    seed = seed0;
    free_persistent(&preq);
    free(b.mem);
}

static void run_reduce(const ccase_t *c, MPI_Comm comm, const int *wranks, int all)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int gets_result = all || rank == c->root;
    buf_t s, rb;
    buf_alloc(&s, c->d, c->count);
    buf_alloc(&rb, c->d, c->count);
    const int in_place = c->in_place && gets_result;
    const void *sb = in_place ? MPI_IN_PLACE : data(&s);
    if (verbose)
        fprintf(stderr, "rank %d: %s comm=%s dtype=%s count=%zu op=%s root=%d in_place=%d\n",
                wrank_g, c->coll, c->comm, c->d->name, c->count, op_name[c->op], c->root,
                c->in_place);
    MPI_Request preq = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
#if CX_PERSISTENT
    if (c->nb == 2)
        rc = all ? CX_ALLREDUCE_INIT(sb, data(&rb), (int)c->count, c->d->type, ops[c->op], comm,
                                     MPI_INFO_NULL, &preq)
                 : CX_REDUCE_INIT(sb, data(&rb), (int)c->count, c->d->type, ops[c->op], c->root,
                                  comm, MPI_INFO_NULL, &preq);
#endif
    const unsigned seed0 = seed;
    for (int round = 0; round < rounds_of(c); ++round) {
        seed = seed0 + (unsigned)round;
        fill(&s, c->d, c->count, wranks[rank]);
        if (in_place) fill(&rb, c->d, c->count, wranks[rank]);
        if (rc != MPI_SUCCESS) {
        } else if (c->nb == 2) {
            rc = start_finish(&preq, (c->count + (size_t)round) % 2);
        } else if (c->nb) {
            MPI_Request req;
            rc = all ? MPI_Iallreduce(sb, data(&rb), (int)c->count, c->d->type, ops[c->op], comm,
                                      &req)
                     : MPI_Ireduce(sb, data(&rb), (int)c->count, c->d->type, ops[c->op], c->root,
                                   comm, &req);
            if (rc == MPI_SUCCESS) rc = finish(&req, c->count % 2);
        } else {
            rc = all ? MPI_Allreduce(sb, data(&rb), (int)c->count, c->d->type, ops[c->op], comm)
                     : MPI_Reduce(sb, data(&rb), (int)c->count, c->d->type, ops[c->op], c->root,
                                  comm);
        }
        ref_ctx_t r = {wranks, size, wranks[rank]};
        int ok = 1;
        if (rc != MPI_SUCCESS) {
            report(c, "error code returned", 0, -1, rc, MPI_SUCCESS);
            ok = 0;
        }
        if (ok && gets_result) ok = verify(c, &rb, want_reduced, &r, V_GAPS | V_RESULT);
        if (ok && !gets_result) { /* a non-root's recvbuf must be untouched */
            ccase_t none = *c;
            none.count = 0;
            ok = verify(&none, &rb, want_input, &r, 0);
            for (size_t k = 0; ok && k < rb.span; ++k)
                if ((unsigned char)data(&rb)[k] != SENTINEL) {
                    report(c, "non-root recvbuf modified", k, -1, 0, 0);
                    ok = 0;
                }
        }
        if (ok && !in_place) ok = verify(c, &s, want_input, &r, V_GAPS); /* sendbuf unchanged */
        tally(ok);
    }
    seed = seed0;
    free_persistent(&preq);
    free(s.mem);
    free(rb.mem);
}

/* Several non-blocking collectives outstanding on one communicator at once
 * (two broadcasts from different roots, an allreduce, a non-commutative
 * reduce), completed in reverse order of posting. */
static void run_overlap(const char *cname, MPI_Comm comm, const int *wranks, size_t count)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const dtype_case_t *di = &dtypes[0], *da = NULL;
    for (int k = 0; k < ndtypes; ++k)
        if (dtypes[k].affine) da = &dtypes[k];
    buf_t b1, b2, s3, r3, s4, r4;
    buf_alloc(&b1, di, count);
    buf_alloc(&b2, di, count);
    buf_alloc(&s3, di, count);
    buf_alloc(&r3, di, count);
    buf_alloc(&s4, da, count);
    buf_alloc(&r4, da, count);
    if (rank == 0) fill(&b1, di, count, wranks[0]);
    if (rank == size - 1) fill(&b2, di, count, wranks[size - 1]);
    fill(&s3, di, count, wranks[rank]);
    fill(&s4, da, count, wranks[rank]);
    MPI_Request req[4];
    MPI_Ibcast(data(&b1), (int)count, MPI_INT, 0, comm, &req[0]);
    MPI_Ibcast(data(&b2), (int)count, MPI_INT, size - 1, comm, &req[1]);
    MPI_Iallreduce(data(&s3), data(&r3), (int)count, MPI_INT, MPI_SUM, comm, &req[2]);
    MPI_Ireduce(data(&s4), data(&r4), (int)count, da->type, ops[OP_AFFINE], size / 2, comm,
                &req[3]);
    int rc = MPI_SUCCESS;
    for (int k = 3; k >= 0; --k)
        if (MPI_Wait(&req[k], MPI_STATUS_IGNORE) != MPI_SUCCESS) rc = MPI_ERR_OTHER;
    ref_ctx_t r = {wranks, size, wranks[0]};
    ccase_t c = {.coll = "overlapped MPI_Ibcast(root 0)", .comm = cname, .comm_size = size,
                 .d = di, .count = count, .op = -1, .root = 0, .nb = 1};
    int ok = rc == MPI_SUCCESS && verify(&c, &b1, want_input, &r, V_GAPS | V_RESULT);
    c.coll = "overlapped MPI_Ibcast(root P-1)";
    c.root = size - 1;
    r.wrank = wranks[size - 1];
    ok = ok && verify(&c, &b2, want_input, &r, V_GAPS | V_RESULT);
    c.coll = "overlapped MPI_Iallreduce";
    c.op = OP_SUM;
    ok = ok && verify(&c, &r3, want_reduced, &r, V_GAPS | V_RESULT);
    if (rank == size / 2) {
        c.coll = "overlapped MPI_Ireduce(affine)";
        c.d = da;
        c.op = OP_AFFINE;
        c.root = size / 2;
        ok = ok && verify(&c, &r4, want_reduced, &r, V_GAPS | V_RESULT);
    }
    tally(ok);
    free(b1.mem); free(b2.mem); free(s3.mem); free(r3.mem); free(s4.mem); free(r4.mem);
}

/* ---------------------------------------- the other blocking collectives */

/* Counts of these cases are in elements of the case's type d; a side that
 * uses d's twin (ccase_t.mix) counts in twin elements instead. */
static const dtype_case_t *side_type(const ccase_t *c, int recv_side)
{
    if ((c->mix == 1 && recv_side) || (c->mix == 2 && !recv_side)) return c->d->twin;
    return c->d;
}

static size_t in_units(const ccase_t *c, const dtype_case_t *x, size_t n)
{
    return n * (size_t)c->d->nslots / (size_t)x->nslots;
}

/* Store rank wr's input for its elements src..src+n-1 (elements of d) at
 * element positions at..at+n-1 (counted in elements of d) of b, laid out as
 * type x: d or a type with d's signature. */
static void put(buf_t *b, const dtype_case_t *x, const dtype_case_t *d, size_t at, size_t n,
                int wr, size_t src)
{
    const size_t dn = (size_t)d->nslots, xn = (size_t)x->nslots;
    for (size_t f = 0; f < n * dn; ++f) {
        size_t g = at * dn + f; /* slot number in b */
        const slot_t *sl = &x->slots[g % xn];
        store(data(b) + (g / xn) * x->extent + sl->off, sl->kind,
              input(wr, src * dn + f, sl->kind));
    }
}

/* What one element (of d) of a result buffer must hold */
enum { SRC_UNTOUCHED, /* nothing may be written there: all its bytes keep the sentinel */
       SRC_ANY,       /* undefined by MPI: not checked (its gaps still are) */
       SRC_INPUT,     /* element `elem` of the input of world rank `who` */
       SRC_REDUCED }; /* element `elem` reduced over the first `who` ranks of the comm */
typedef struct src {
    int how;
    int who;
    size_t elem;
} src_t;

/* Check the nd elements (of d; laid out as type x) of b against map, and
 * that gap and guard bytes hold the sentinel. */
static int verify_map(const ccase_t *c, const dtype_case_t *x, buf_t *b, const src_t *map,
                      size_t nd, const int *wranks)
{
    const size_t dn = (size_t)c->d->nslots, xn = (size_t)x->nslots;
    char *covered = calloc(b->span + 1, 1);
    int ok = 1;
    for (size_t g = 0; ok && g < nd * dn; ++g) {
        const size_t e = g / xn, E = g / dn;
        const int s = (int)(g % xn), S = (int)(g % dn);
        const enum kind k = x->slots[s].kind;
        char *p = data(b) + e * x->extent + x->slots[s].off;
        memset(covered + (p - data(b)), 1, kind_size[k]);
        const src_t *m = &map[E];
        int64_t w;
        switch (m->how) {
        case SRC_ANY: continue;
        case SRC_UNTOUCHED:
            for (size_t q = 0; q < kind_size[k]; ++q)
                if ((unsigned char)p[q] != SENTINEL) {
                    report(c, "write into a hole between blocks", e, s, (unsigned char)p[q],
                           SENTINEL);
                    ok = 0;
                    break;
                }
            continue;
        case SRC_INPUT: w = input(m->who, m->elem * dn + (size_t)S, k); break;
        default: w = reference(c->op, wranks, m->who, m->elem * dn + (size_t)S, S, k); break;
        }
        if (!(c->in_place && m->how == SRC_INPUT && m->who == wrank_g))
            st_corrupt(c, p); /* received data, not what in place kept */
        if (!same(p, k, w)) {
            char what[96];
            if (m->how == SRC_INPUT)
                snprintf(what, sizeof what, "wrong value (element %zu of world rank %d's data)",
                         m->elem, m->who);
            else
                snprintf(what, sizeof what,
                         "wrong value (element %zu reduced over comm ranks 0..%d)", m->elem,
                         m->who - 1);
            report(c, what, e, s, as_double(p, k), k == K_U32 ? (double)(uint32_t)w : (double)w);
            ok = 0;
        }
    }
    for (size_t off = 0; ok && off < b->span + 2 * GUARD; ++off) {
        const int inside = off >= GUARD && off < GUARD + b->span;
        if (inside && covered[off - GUARD]) continue;
        if ((unsigned char)b->mem[off] != SENTINEL) {
            report(c, inside ? "write into a datatype gap" : "write outside the buffer", off,
                   -1, (unsigned char)b->mem[off], SENTINEL);
            ok = 0;
        }
    }
    free(covered);
    return ok;
}

static char *snapshot(const buf_t *b)
{
    char *p = malloc(b->span + 2 * GUARD);
    memcpy(p, b->mem, b->span + 2 * GUARD);
    return p;
}

/* a send buffer must come back byte for byte (gaps and guards included) */
static int unchanged(const ccase_t *c, const buf_t *b, const char *copy)
{
    if (!memcmp(b->mem, copy, b->span + 2 * GUARD)) return 1;
    for (size_t k = 0; k < b->span + 2 * GUARD; ++k)
        if (b->mem[k] != copy[k]) {
            report(c, "send buffer modified (byte offset, guard included)", k, -1,
                   (unsigned char)b->mem[k], (unsigned char)copy[k]);
            return 0;
        }
    return 1;
}

static int rc_ok(const ccase_t *c, int rc)
{
    if (rc == MPI_SUCCESS) return 1;
    report(c, "error code returned", 0, -1, rc, MPI_SUCCESS);
    return 0;
}

static void trace(const ccase_t *c)
{
    if (verbose)
        fprintf(stderr, "rank %d: %s comm=%s dtype=%s mix=%d count=%zu op=%s root=%d "
                        "in_place=%d\n", wrank_g, c->coll, c->comm, c->d->name, c->mix,
                c->count, c->op >= 0 ? op_name[c->op] : "-", c->root, c->in_place);
}

/* Imbalanced per-rank counts for the v-variants, from the case's count:
 * one rank gets 0 and one 2*count+1 (when there are several), the others
 * count, count/3 or 1; all 0 when count is 0. */
static size_t vcount(size_t count, int j, int n, int salt)
{
    if (count == 0) return 0;
    const int k = (j + salt) % n;
    if (n > 1 && k == 0) return 0;
    if (n == 1 || k == 1) return 2 * count + 1;
    return k % 3 == 0 ? count : k % 3 == 1 ? count / 3 : 1;
}

/* Displacements of blocks of cnt[j] elements: placed in an order that is
 * not the rank order (rotated, reversed), with holes of 0, 1, 2 elements
 * before them and one after the last.  Returns the elements spanned. */
static size_t layout(const size_t *cnt, int n, int salt, size_t *disp)
{
    size_t at = 0;
    for (int k = 0; k < n; ++k) {
        const int j = (salt + n - 1 - k) % n;
        at += (size_t)(k % 3);
        disp[j] = at;
        at += cnt[j];
    }
    return at + 1;
}

static int *to_int(const ccase_t *c, const dtype_case_t *x, const size_t *v, int n)
{
    int *r = malloc(sizeof(int) * (size_t)(n ? n : 1));
    for (int j = 0; j < n; ++j) r[j] = (int)in_units(c, x, v[j]);
    return r;
}

/* MPI_Allgather(v): rank j's block lands at disp[j] everywhere; in place,
 * each rank's block already sits at its own slot of recvbuf. */
static void run_allgather(const ccase_t *c, MPI_Comm comm, const int *wranks, int v)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const dtype_case_t *xs = side_type(c, 0), *xr = side_type(c, 1);
    size_t *cnt = malloc(sizeof(size_t) * (size_t)size);
    size_t *disp = malloc(sizeof(size_t) * (size_t)size);
    size_t total;
    for (int j = 0; j < size; ++j) {
        cnt[j] = v ? vcount(c->count, j, size, (int)c->count) : c->count;
        disp[j] = (size_t)j * c->count;
    }
    total = v ? layout(cnt, size, 1, disp) : (size_t)size * c->count;
    buf_t s, rb;
    buf_alloc(&s, xs, in_units(c, xs, cnt[rank]));
    buf_alloc(&rb, xr, in_units(c, xr, total));
    int *rcounts = to_int(c, xr, cnt, size), *rdispls = to_int(c, xr, disp, size);
    const void *sb = c->in_place ? MPI_IN_PLACE : data(&s);
    src_t *map = calloc(total + 1, sizeof(src_t));
    for (int j = 0; j < size; ++j)
        for (size_t e = 0; e < cnt[j]; ++e) map[disp[j] + e] = (src_t){SRC_INPUT, wranks[j], e};
    trace(c);
    MPI_Request preq = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
#if CX_PERSISTENT
    if (c->nb == 2) /* (no v-variant: pallgather is MPI_Allgather_init) */
        rc = CX_ALLGATHER_INIT(sb, (int)in_units(c, xs, c->count), xs->type, data(&rb),
                               (int)in_units(c, xr, c->count), xr->type, comm, MPI_INFO_NULL,
                               &preq);
#endif
    const unsigned seed0 = seed;
    for (int round = 0; round < rounds_of(c); ++round) {
        seed = seed0 + (unsigned)round;
        put(&s, xs, c->d, 0, cnt[rank], wranks[rank], 0);
        if (c->in_place) put(&rb, xr, c->d, disp[rank], cnt[rank], wranks[rank], 0);
        char *copy = snapshot(&s);
        if (rc != MPI_SUCCESS) {
        } else if (c->nb == 2) {
            rc = start_finish(&preq, (c->count + (size_t)round) % 2);
        } else if (c->nb) { /* (no v-variant: iallgather is MPI_Iallgather) */
            MPI_Request req;
            rc = MPI_Iallgather(sb, (int)in_units(c, xs, c->count), xs->type, data(&rb),
                                (int)in_units(c, xr, c->count), xr->type, comm, &req);
            if (rc == MPI_SUCCESS) rc = finish(&req, c->count % 2);
        } else {
            rc = v ? MPI_Allgatherv(sb, (int)in_units(c, xs, cnt[rank]), xs->type, data(&rb),
                                    rcounts, rdispls, xr->type, comm)
                   : MPI_Allgather(sb, (int)in_units(c, xs, c->count), xs->type, data(&rb),
                                   (int)in_units(c, xr, c->count), xr->type, comm);
        }
        tally(rc_ok(c, rc) && verify_map(c, xr, &rb, map, total, wranks) &&
              unchanged(c, &s, copy));
        free(copy);
    }
    seed = seed0;
    free_persistent(&preq);
    free(map); free(rcounts); free(rdispls); free(cnt); free(disp);
    free(s.mem); free(rb.mem);
}

/* MPI_Gather(v): blocks land at the root only; in place, the root's block
 * already sits in its recvbuf.  Non-roots' (empty) recvbufs stay untouched. */
static void run_gather(const ccase_t *c, MPI_Comm comm, const int *wranks, int v)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int root = c->root, in_place = c->in_place && rank == root;
    const dtype_case_t *xs = side_type(c, 0), *xr = side_type(c, 1);
    size_t *cnt = malloc(sizeof(size_t) * (size_t)size);
    size_t *disp = malloc(sizeof(size_t) * (size_t)size);
    for (int j = 0; j < size; ++j) {
        cnt[j] = v ? vcount(c->count, j, size, (int)c->count + root) : c->count;
        disp[j] = (size_t)j * c->count;
    }
    const size_t total = v ? layout(cnt, size, root + 1, disp) : (size_t)size * c->count;
    buf_t s, rb;
    buf_alloc(&s, xs, in_units(c, xs, cnt[rank]));
    put(&s, xs, c->d, 0, cnt[rank], wranks[rank], 0);
    /* a non-root's recvbuf is not significant: an empty one, whose guard
     * bytes must stay untouched */
    const size_t rtotal = rank == root ? total : 0;
    buf_alloc(&rb, xr, in_units(c, xr, rtotal));
    if (in_place) put(&rb, xr, c->d, disp[rank], cnt[rank], wranks[rank], 0);
    char *copy = snapshot(&s);
    int *rcounts = to_int(c, xr, cnt, size), *rdispls = to_int(c, xr, disp, size);
    const void *sb = in_place ? MPI_IN_PLACE : data(&s);
    trace(c);
    int rc = v ? MPI_Gatherv(sb, (int)in_units(c, xs, cnt[rank]), xs->type, data(&rb), rcounts,
                             rdispls, xr->type, root, comm)
               : MPI_Gather(sb, (int)in_units(c, xs, c->count), xs->type, data(&rb),
                            (int)in_units(c, xr, c->count), xr->type, root, comm);
    src_t *map = calloc(total + 1, sizeof(src_t));
    if (rank == root)
        for (int j = 0; j < size; ++j)
            for (size_t e = 0; e < cnt[j]; ++e)
                map[disp[j] + e] = (src_t){SRC_INPUT, wranks[j], e};
    int ok = rc_ok(c, rc) && verify_map(c, xr, &rb, map, rtotal, wranks) && unchanged(c, &s, copy);
    tally(ok);
    free(map); free(rcounts); free(rdispls); free(copy); free(cnt); free(disp);
    free(s.mem); free(rb.mem);
}

/* MPI_Scatter(v): the root's sendbuf (holes included) is filled with its
 * input; rank j receives the block at disp[j].  In place, the root
 * receives nothing.  Non-roots' sendbufs stay untouched. */
static void run_scatter(const ccase_t *c, MPI_Comm comm, const int *wranks, int v)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int root = c->root, in_place = c->in_place && rank == root;
    const dtype_case_t *xs = side_type(c, 0), *xr = side_type(c, 1);
    size_t *cnt = malloc(sizeof(size_t) * (size_t)size);
    size_t *disp = malloc(sizeof(size_t) * (size_t)size);
    for (int j = 0; j < size; ++j) {
        cnt[j] = v ? vcount(c->count, j, size, (int)c->count + 2 * root) : c->count;
        disp[j] = (size_t)j * c->count;
    }
    const size_t total = v ? layout(cnt, size, root + 2, disp) : (size_t)size * c->count;
    buf_t s, rb;
    buf_alloc(&s, xs, rank == root ? in_units(c, xs, total) : 0);
    if (rank == root) put(&s, xs, c->d, 0, total, wranks[rank], 0);
    buf_alloc(&rb, xr, in_units(c, xr, cnt[rank]));
    char *copy = snapshot(&s);
    int *scounts = to_int(c, xs, cnt, size), *sdispls = to_int(c, xs, disp, size);
    void *rbp = in_place ? MPI_IN_PLACE : data(&rb);
    trace(c);
    int rc = v ? MPI_Scatterv(data(&s), scounts, sdispls, xs->type, rbp,
                              (int)in_units(c, xr, cnt[rank]), xr->type, root, comm)
               : MPI_Scatter(data(&s), (int)in_units(c, xs, c->count), xs->type, rbp,
                             (int)in_units(c, xr, c->count), xr->type, root, comm);
    src_t *map = calloc(cnt[rank] + 1, sizeof(src_t));
    if (!in_place)
        for (size_t e = 0; e < cnt[rank]; ++e)
            map[e] = (src_t){SRC_INPUT, wranks[root], disp[rank] + e};
    int ok = rc_ok(c, rc) && verify_map(c, xr, &rb, map, cnt[rank], wranks) &&
             unchanged(c, &s, copy);
    tally(ok);
    free(map); free(scounts); free(sdispls); free(copy); free(cnt); free(disp);
    free(s.mem); free(rb.mem);
}

/* count rank r sends to rank j in alltoallv; symmetric in place (MPI:
 * the same counts are used for sending and receiving) */
static size_t pair_count(size_t count, int r, int j, int n, int in_place)
{
    return in_place ? vcount(count, (r + j) % n, n, (int)count)
                    : vcount(count, (3 * r + j) % n, n, (int)count + r);
}

/* rank r's send layout in alltoallv: counts to each j, and displacements
 * (in place, its receive layout) */
static size_t a2a_layout(const ccase_t *c, int r, int n, int send, size_t *cnt, size_t *disp)
{
    const int ip = c->in_place;
    for (int j = 0; j < n; ++j)
        cnt[j] = send && !ip ? pair_count(c->count, r, j, n, 0) : pair_count(c->count, j, r, n, ip);
    return layout(cnt, n, send && !ip ? r + 3 : 1, disp);
}

/* MPI_Alltoall(v): rank j's block for me lands at my rdispl[j]; in place,
 * recvbuf holds what is sent and is filled with the rank's input (holes
 * included, which must keep it). */
static void run_alltoall(const ccase_t *c, MPI_Comm comm, const int *wranks, int v)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const dtype_case_t *xs = side_type(c, 0), *xr = side_type(c, 1);
    const size_t n = (size_t)size;
    size_t *scnt = malloc(sizeof(size_t) * n), *sdisp = malloc(sizeof(size_t) * n);
    size_t *rcnt = malloc(sizeof(size_t) * n), *rdisp = malloc(sizeof(size_t) * n);
    size_t *ocnt = malloc(sizeof(size_t) * n), *odisp = malloc(sizeof(size_t) * n);
    size_t stotal, rtotal;
    if (v) {
        stotal = a2a_layout(c, rank, size, 1, scnt, sdisp);
        rtotal = a2a_layout(c, rank, size, 0, rcnt, rdisp);
    } else {
        for (int j = 0; j < size; ++j) {
            scnt[j] = rcnt[j] = c->count;
            sdisp[j] = rdisp[j] = (size_t)j * c->count;
        }
        stotal = rtotal = n * c->count;
    }
    buf_t s, rb;
    buf_alloc(&s, xs, c->in_place ? 0 : in_units(c, xs, stotal));
    if (!c->in_place) put(&s, xs, c->d, 0, stotal, wranks[rank], 0);
    buf_alloc(&rb, xr, in_units(c, xr, rtotal));
    if (c->in_place) put(&rb, xr, c->d, 0, rtotal, wranks[rank], 0);
    char *copy = snapshot(&s);
    int *scounts = to_int(c, xs, scnt, size), *sdispls = to_int(c, xs, sdisp, size);
    int *rcounts = to_int(c, xr, rcnt, size), *rdispls = to_int(c, xr, rdisp, size);
    const void *sb = c->in_place ? MPI_IN_PLACE : data(&s);
    trace(c);
    int rc = v ? MPI_Alltoallv(sb, scounts, sdispls, xs->type, data(&rb), rcounts, rdispls,
                               xr->type, comm)
               : MPI_Alltoall(sb, (int)in_units(c, xs, c->count), xs->type, data(&rb),
                              (int)in_units(c, xr, c->count), xr->type, comm);
    src_t *map = calloc(rtotal + 1, sizeof(src_t));
    if (c->in_place) /* holes keep the input */
        for (size_t e = 0; e < rtotal; ++e) map[e] = (src_t){SRC_INPUT, wranks[rank], e};
    for (int j = 0; j < size; ++j) {
        size_t from = (size_t)rank * c->count; /* where j's block for me is in j's buffer */
        if (v) {
            a2a_layout(c, j, size, 1, ocnt, odisp);
            from = odisp[rank];
        }
        for (size_t e = 0; e < rcnt[j]; ++e)
            map[rdisp[j] + e] = (src_t){SRC_INPUT, wranks[j], from + e};
    }
    int ok = rc_ok(c, rc) && verify_map(c, xr, &rb, map, rtotal, wranks) && unchanged(c, &s, copy);
    tally(ok);
    free(map); free(scounts); free(sdispls); free(rcounts); free(rdispls); free(copy);
    free(scnt); free(sdisp); free(rcnt); free(rdisp); free(ocnt); free(odisp);
    free(s.mem); free(rb.mem);
}

/* MPI_Reduce_scatter(_block): the input is the concatenation of every
 * rank's block; rank j gets block j reduced.  In place, the input is in
 * recvbuf and what follows the rank's result there is undefined. */
static void run_reduce_scatter(const ccase_t *c, MPI_Comm comm, const int *wranks, int block)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t *cnt = malloc(sizeof(size_t) * (size_t)size), total = 0, start = 0;
    for (int j = 0; j < size; ++j) {
        cnt[j] = block ? c->count : vcount(c->count, j, size, (int)c->count);
        if (j == rank) start = total;
        total += cnt[j];
    }
    buf_t s, rb;
    buf_alloc(&s, c->d, total);
    put(&s, c->d, c->d, 0, total, wranks[rank], 0);
    const size_t rlen = c->in_place ? total : cnt[rank];
    buf_alloc(&rb, c->d, rlen);
    if (c->in_place) put(&rb, c->d, c->d, 0, total, wranks[rank], 0);
    char *copy = snapshot(&s);
    int *rcounts = to_int(c, c->d, cnt, size);
    const void *sb = c->in_place ? MPI_IN_PLACE : data(&s);
    trace(c);
    int rc;
    if (c->nb) {
        MPI_Request req;
        rc = block ? MPI_Ireduce_scatter_block(sb, data(&rb), (int)c->count, c->d->type,
                                               ops[c->op], comm, &req)
                   : MPI_Ireduce_scatter(sb, data(&rb), rcounts, c->d->type, ops[c->op], comm,
                                         &req);
        if (rc == MPI_SUCCESS) rc = finish(&req, c->count % 2);
    } else {
        rc = block ? MPI_Reduce_scatter_block(sb, data(&rb), (int)c->count, c->d->type,
                                              ops[c->op], comm)
                   : MPI_Reduce_scatter(sb, data(&rb), rcounts, c->d->type, ops[c->op], comm);
    }
    src_t *map = calloc(rlen + 1, sizeof(src_t));
    for (size_t e = 0; e < rlen; ++e)
        map[e] = e < cnt[rank] ? (src_t){SRC_REDUCED, size, start + e} : (src_t){SRC_ANY, 0, 0};
    int ok = rc_ok(c, rc) && verify_map(c, c->d, &rb, map, rlen, wranks) && unchanged(c, &s, copy);
    tally(ok);
    free(map); free(rcounts); free(copy); free(cnt); free(s.mem); free(rb.mem);
}

/* MPI_Scan / MPI_Exscan: rank r gets ranks 0..r (0..r-1) reduced in rank
 * order; exscan's result on rank 0 is undefined. */
static void run_scan(const ccase_t *c, MPI_Comm comm, const int *wranks, int ex)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    buf_t s, rb;
    buf_alloc(&s, c->d, c->count);
    put(&s, c->d, c->d, 0, c->count, wranks[rank], 0);
    buf_alloc(&rb, c->d, c->count);
    if (c->in_place) put(&rb, c->d, c->d, 0, c->count, wranks[rank], 0);
    char *copy = snapshot(&s);
    const void *sb = c->in_place ? MPI_IN_PLACE : data(&s);
    trace(c);
    int rc = ex ? MPI_Exscan(sb, data(&rb), (int)c->count, c->d->type, ops[c->op], comm)
                : MPI_Scan(sb, data(&rb), (int)c->count, c->d->type, ops[c->op], comm);
    src_t *map = calloc(c->count + 1, sizeof(src_t));
    for (size_t e = 0; e < c->count; ++e)
        map[e] = ex && rank == 0 ? (src_t){SRC_ANY, 0, 0}
                                 : (src_t){SRC_REDUCED, ex ? rank : rank + 1, e};
    int ok = rc_ok(c, rc) && verify_map(c, c->d, &rb, map, c->count, wranks) &&
             unchanged(c, &s, copy);
    tally(ok);
    free(map); free(copy); free(s.mem); free(rb.mem);
}

static void nap_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* MPI_Barrier must not let any rank leave before every rank entered.
 * Comm rank c->root enters late: it first watches for BARRIER_WAIT seconds
 * whether a message sent by another rank AFTER its barrier arrives; one
 * that does proves that rank left the barrier before this one entered it
 * (a correct barrier can never produce that, so no false alarms; a barrier
 * that returns at once is caught as soon as the other rank's message gets
 * through, which polling for that long makes near certain -- --self-test
 * checks it with a no-op barrier).  Afterwards it collects every message. */
#define BARRIER_WAIT 0.05
static void run_barrier(const ccase_t *c, MPI_Comm comm, int round)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int late = c->root, tag = 700 + round % 1000;
    int fake = fake_barrier;
    const int sti = st_index(c->coll);
    if (self_test && size > 1 && !st_done[sti]) { /* same decision on every rank */
        st_done[sti] = 1;
        fake = 1;
        if (rank == late) {
            st_tally[sti][0]++;
            st_pending = sti;
        }
    }
    int ok = 1;
    trace(c);
    if (rank == late && size > 1) {
        const double t0 = MPI_Wtime();
        int flag = 0;
        MPI_Status st;
        while (!flag && MPI_Wtime() - t0 < BARRIER_WAIT) {
            MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &flag, &st);
            if (!flag) nap_us(500);
        }
        if (flag) {
            char what[160];
            snprintf(what, sizeof what, "comm rank %d left MPI_Barrier before the late rank "
                     "(root) entered it: its post-barrier message arrived first", st.MPI_SOURCE);
            report(c, what, 0, -1, 1, 0);
            ok = 0;
        }
    }
    int rc = fake ? MPI_SUCCESS : MPI_Barrier(comm);
    ok = rc_ok(c, rc) && ok;
    if (rank != late) {
        MPI_Send(&rank, 1, MPI_INT, late, tag, comm);
    } else {
        for (int j = 0; j < size; ++j) {
            int got = -1;
            if (j == late) continue;
            MPI_Recv(&got, 1, MPI_INT, j, tag, comm, MPI_STATUS_IGNORE);
            if (got != j) {
                report(c, "wrong point-to-point payload after the barrier", (size_t)j, -1, got, j);
                ok = 0;
            }
        }
    }
    tally(ok);
}

/* --------------------------------------------------------- communicators */

typedef struct comm_case {
    const char *name;
    MPI_Comm comm;
    int *wranks;
    int size;
} comm_case_t;

static void add_comm(comm_case_t *cc, int *n, const char *name, MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return;
    comm_case_t *c = &cc[(*n)++];
    c->name = name;
    c->comm = comm;
    MPI_Comm_size(comm, &c->size);
    c->wranks = malloc(sizeof(int) * (size_t)c->size);
    MPI_Group g, wg;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int *idx = malloc(sizeof(int) * (size_t)c->size);
    for (int i = 0; i < c->size; ++i) idx[i] = i;
    MPI_Group_translate_ranks(g, c->size, idx, wg, c->wranks);
    free(idx);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
}

static int has(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

#define BLOCKING "bcast,reduce,allreduce,allgather,allgatherv,gather,gatherv,scatter," \
                 "scatterv,barrier,reduce_scatter,reduce_scatter_block,scan,exscan," \
                 "alltoall,alltoallv"
#define NONBLOCKING "ibcast,ireduce,iallreduce,iallgather,ireduce_scatter,ireduce_scatter_block,overlap"
#define PERSISTENT "pbcast,preduce,pallreduce,pallgather"

/* whether LIST has any word of WORDS */
static int has_any(const char *list, const char *words)
{
    char *copy = strdup(words);
    int any = 0;
    for (char *w = strtok(copy, ","); w && !any; w = strtok(NULL, ",")) any = has(list, w);
    free(copy);
    return any;
}

/* LIST (modified in place) without the words of WORDS */
static void drop_words(char *list, const char *words)
{
    char *copy = strdup(list);
    list[0] = 0;
    for (char *w = strtok(copy, ","); w; w = strtok(NULL, ","))
        if (!has(words, w)) strcat(strcat(list, list[0] ? "," : ""), w);
    free(copy);
}

/* LIST with the keywords blocking and all spelled out; NULL when LIST has
 * a word we do not know */
static char *expand_colls(const char *list)
{
    char *out = malloc(strlen(list) + sizeof(BLOCKING) + sizeof(NONBLOCKING) +
                       sizeof(PERSISTENT) + 4);
    strcpy(out, list);
    if (has(list, "all") || has(list, "blocking")) strcat(strcat(out, ","), BLOCKING);
    if (has(list, "all")) strcat(strcat(out, ","), NONBLOCKING);
    if (has(list, "all") || has(list, "persistent")) strcat(strcat(out, ","), PERSISTENT);
    char *copy = strdup(list);
    for (char *w = strtok(copy, ","); w; w = strtok(NULL, ","))
        if (strcmp(w, "all") && strcmp(w, "blocking") && strcmp(w, "persistent") &&
            !has(BLOCKING, w) && !has(NONBLOCKING, w) && !has(PERSISTENT, w)) {
            free(out);
            out = NULL;
        }
    free(copy);
    return out;
}

/* Open MPI's own components serve the collectives unless ours were given a
 * priority (the test scripts raise coll_hanx_priority/coll_adaptx_priority);
 * read through MPI_T so any way of setting them counts.  Returns 1 when
 * tuned may serve allreduce without one of ours in front of it. */
static int plain_tuned(void)
{
    int provided, idx, n, plain = 1;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return 1;
    const char *prio[] = {"coll_hanx_priority", "coll_adaptx_priority"};
    for (int k = 0; k < 2; ++k) {
        MPI_T_cvar_handle h;
        int v = 0;
        if (MPI_T_cvar_get_index(prio[k], &idx) != MPI_SUCCESS) continue;
        if (MPI_T_cvar_handle_alloc(idx, NULL, &h, &n) != MPI_SUCCESS) continue;
        if (n == 1 && MPI_T_cvar_read(h, &v) == MPI_SUCCESS && v > 0) plain = 0;
        MPI_T_cvar_handle_free(&h);
    }
    /* --mca coll basic,... without tuned */
    MPI_T_cvar_handle h;
    char *list = NULL; /* n: the string's buffer size */
    if (MPI_T_cvar_get_index("coll", &idx) == MPI_SUCCESS &&
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &n) == MPI_SUCCESS) {
        list = calloc((size_t)n + 1, 1);
        if (MPI_T_cvar_read(h, list) != MPI_SUCCESS) list[0] = 0;
        MPI_T_cvar_handle_free(&h);
    }
    if (list && list[0] && ((list[0] != '^' && !strstr(list, "tuned")) ||
                            (list[0] == '^' && strstr(list, "tuned"))))
        plain = 0;
    free(list);
    MPI_T_finalize();
    if (verbose && wrank_g == 0)
        fprintf(stderr, "collx_check: tuned without our components in front: %s\n",
                plain ? "yes" : "no");
    return plain;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank_g);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);

    int quick = 0, big = 0, big_only = 0, known_bugs = 0, part_k = 0, part_n = 1;
    size_t big_count = 300007;
    const char *colls = "bcast,reduce,allreduce";  /* the default scripts rely on */
    size_t max_count = 1u << 20;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--big")) big = 1;
        else if (!strcmp(argv[i], "--big-only")) big = big_only = 1;
        else if (!strcmp(argv[i], "--big-count") && i + 1 < argc) {
            char *end;
            big_count = strtoul(argv[++i], &end, 10);
            if (*end || big_count == 0) {
                colls = NULL;
                break;
            }
        }
        else if (!strcmp(argv[i], "--part") && i + 1 < argc) {
            char tail;
            if (sscanf(argv[++i], "%d/%d%c", &part_k, &part_n, &tail) != 2 || part_n < 1 ||
                part_k < 0 || part_k >= part_n) {
                colls = NULL;
                break;
            }
        }
        else if (!strcmp(argv[i], "--verbose")) verbose = 1;
        else if (!strcmp(argv[i], "--self-test")) self_test = 1;
        else if (!strcmp(argv[i], "--known-bugs")) known_bugs = 1;
        else if (!strcmp(argv[i], "--fake-barrier")) fake_barrier = 1; /* checks the check */
        else if (!strcmp(argv[i], "--colls") && i + 1 < argc) colls = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-count") && i + 1 < argc)
            max_count = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--stderr") && i + 1 < argc) rank_stderr_to(argv[++i]);
        else {
            colls = NULL;
            break;
        }
    }
    char *list = colls ? expand_colls(colls) : NULL;
    if (!list) {
        if (!wrank_g)
            fprintf(stderr,
                    "usage: %s [--quick] [--big] [--big-only] [--big-count N] [--part K/N] "
                    "[--colls LIST] "
                    "[--seed N] [--max-count N] [--self-test] [--known-bugs] [--verbose] "
                    "[--stderr DIR]\n"
                    "  LIST: comma-separated, of " BLOCKING "," NONBLOCKING "," PERSISTENT "\n"
                    "  or the keywords blocking (the 16 blocking ones), persistent (the p*\n"
                    "  ones) and all (every one);\n"
                    "  default bcast,reduce,allreduce\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    st_rank = wsize > 1 ? 1 : 0;
    /* tuned's ring allreduce writes past its scratch blocks for datatypes
     * with true_lb > 0 (docs/upstream-bugs.md): skip those large cases when
     * nothing of ours is in front of it */
    const int skip_ring_lb = !known_bugs && plain_tuned();
    int ring_lb_noted = 0;

    build_dtypes();
    MPI_Op_create(user_sum, 1, &ops[OP_USER_SUM]);
    MPI_Op_create(affine_compose, 0, &ops[OP_AFFINE]);
    ops[OP_SUM] = MPI_SUM;
    ops[OP_MAX] = MPI_MAX;
    ops[OP_MIN] = MPI_MIN;

    comm_case_t cc[8];
    int ncc = 0;
    MPI_Comm c;
    add_comm(cc, &ncc, "world", MPI_COMM_WORLD);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    add_comm(cc, &ncc, "dup", c);
    MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank_g, &c);
    add_comm(cc, &ncc, "reversed", c);
    MPI_Comm_split(MPI_COMM_WORLD, wrank_g % 2, wrank_g, &c);
    add_comm(cc, &ncc, "split-parity", c);
    if (!quick) {
        /* thirds of uneven sizes, and everybody but rank 0 */
        MPI_Comm_split(MPI_COMM_WORLD, wrank_g % 3, wrank_g, &c);
        add_comm(cc, &ncc, "split-thirds", c);
        MPI_Comm_split(MPI_COMM_WORLD, wrank_g == 0 ? MPI_UNDEFINED : 1, wrank_g, &c);
        if (wrank_g != 0) add_comm(cc, &ncc, "all-but-0", c);
        else { /* rank 0 takes part in no case on this communicator */ }
        MPI_Comm_split(MPI_COMM_WORLD, wrank_g, 0, &c);
        add_comm(cc, &ncc, "self-split", c);
    }

    size_t counts_full[] = {0, 1, 2, 3, 7, 17, 31, 64, 127, 1000, 4099, 65537};
    size_t counts_quick[] = {0, 1, 7, 127, 4099};
    size_t *counts = quick ? counts_quick : counts_full;
    int ncounts = quick ? 5 : 12;

    /* blocking, non-blocking, persistent: the list's words and the names */
    static const char *form[3][6] = {
        {"bcast", "MPI_Bcast", "reduce", "MPI_Reduce", "allreduce", "MPI_Allreduce"},
        {"ibcast", "MPI_Ibcast", "ireduce", "MPI_Ireduce", "iallreduce", "MPI_Iallreduce"},
        {"pbcast", "MPI_Bcast_init", "preduce", "MPI_Reduce_init", "pallreduce",
         "MPI_Allreduce_init"}};
    if (!CX_PERSISTENT && has_any(list, PERSISTENT)) {
        /* asked for by name: an error; within `all`: a note */
        const int asked = has(colls, "persistent") || has_any(colls, PERSISTENT);
        if (wrank_g == 0)
            printf("collx_check: %s: this MPI has no persistent collectives%s\n",
                   asked ? "error" : "note", asked ? "" : "; the p* collectives are skipped");
        if (asked) {
            free(list);
            MPI_Finalize();
            return 2;
        }
        drop_words(list, PERSISTENT);
    }

    /* The communicator list differs on rank 0 (all-but-0): iterate over
     * names so every member of a communicator runs the same cases. */
    const char *order[] = {"world", "dup", "reversed", "split-parity", "split-thirds",
                           "all-but-0", "self-split"};
    for (unsigned oi = 0; oi < sizeof(order) / sizeof(order[0]); ++oi) {
        comm_case_t *cm = NULL;
        for (int k = 0; k < ncc; ++k)
            if (!strcmp(cc[k].name, order[oi])) cm = &cc[k];
        if (!cm) continue;
        int size = cm->size;
        int roots[4], nroots = 0;
        if (size <= 3) {
            for (int r = 0; r < size; ++r) roots[nroots++] = r;
        } else {
            roots[nroots++] = 0;
            roots[nroots++] = 1;
            roots[nroots++] = size - 1;
            if (!quick) roots[nroots++] = size / 2;
        }
        if (has(list, "barrier"))
            for (int ri = 0; ri < nroots; ++ri) { /* each root class enters late once */
                ccase_t k = {.coll = "MPI_Barrier", .comm = cm->name, .comm_size = size,
                             .d = &dtypes[0], .op = -1, .root = roots[ri]};
                run_barrier(&k, cm->comm, ri); /* same round numbers on all members */
            }
        for (int di = 0; di < ndtypes; ++di) {
            const dtype_case_t *d = &dtypes[di];
            for (int ci = 0; ci <= ncounts; ++ci) {
                size_t count = ci < ncounts ? counts[ci] : big_count;
                if (ci == ncounts && !big) continue;
                if (ci < ncounts && big_only) continue;
                if (count > max_count) continue;
                /* dealt out along diagonals, so that each part gets every count
                 * (the big one too) on some datatypes and communicators; the same
                 * on every member (oi: the name's place in order[]) */
                if ((oi + (unsigned)di + (unsigned)ci) % (unsigned)part_n != (unsigned)part_k)
                    continue;
                if (di == 0 && has(list, "overlap")) run_overlap(cm->name, cm->comm, cm->wranks, count);
                ccase_t k = {.comm = cm->name, .comm_size = size, .d = d, .count = count,
                             .op = -1};
                for (int nb = 0; nb < 3; ++nb) {
                    if (!has(list, form[nb][0])) continue;
                    k.nb = nb;
                    for (int ri = 0; ri < nroots; ++ri) {
                        k.coll = form[nb][1];
                        k.root = roots[ri];
                        run_bcast(&k, cm->comm, cm->wranks);
                    }
                }
                for (int op = 0; op < NOPS; ++op) {
                    if (!op_applies(op, d)) continue;
                    /* predefined max/min only on a few types, to keep it short */
                    if ((op == OP_MAX || op == OP_MIN) && di > 1 && quick) continue;
                    k.op = op;
                    for (int ip = 0; ip < 2; ++ip)
                        for (int nb = 0; nb < 3; ++nb) {
                            k.in_place = ip;
                            k.nb = nb;
                            if (has(list, form[nb][2]))
                                for (int ri = 0; ri < nroots; ++ri) {
                                    k.coll = form[nb][3];
                                    k.root = roots[ri];
                                    run_reduce(&k, cm->comm, cm->wranks, 0);
                                }
                            if (has(list, form[nb][4]) && !nb &&
                                skip_ring_lb && d->true_lb > 0 &&
                                count * (size_t)d->extent >= 16384) {
                                if (!ring_lb_noted++ && wrank_g == 0)
                                    printf("collx_check: note: MPI_Allreduce of %s (true_lb > "
                                           "0) from %zu bytes up skipped: Open MPI's tuned "
                                           "ring allreduce corrupts the heap there "
                                           "(docs/upstream-bugs.md)\n", d->name,
                                           count * (size_t)d->extent);
                            } else if (has(list, form[nb][4])) {
                                k.coll = form[nb][5];
                                k.root = -1;
                                run_reduce(&k, cm->comm, cm->wranks, 1);
                            }
                        }
                }
                /* the other reductions: same ops, in place or not */
                k.nb = 0;
                k.root = -1;
                for (int op = 0; op < NOPS; ++op) {
                    if (!op_applies(op, d)) continue;
                    if ((op == OP_MAX || op == OP_MIN) && di > 1 && quick) continue;
                    k.op = op;
                    for (int ip = 0; ip < 2; ++ip) {
                        k.in_place = ip;
                        for (int block = 0; block < 2; ++block) {
                            if (has(list, block ? "reduce_scatter_block" : "reduce_scatter")) {
                                k.coll = block ? "MPI_Reduce_scatter_block" : "MPI_Reduce_scatter";
                                run_reduce_scatter(&k, cm->comm, cm->wranks, block);
                            }
                            if (has(list, block ? "ireduce_scatter_block" : "ireduce_scatter")) {
                                k.coll = block ? "MPI_Ireduce_scatter_block" : "MPI_Ireduce_scatter";
                                k.nb = 1;
                                run_reduce_scatter(&k, cm->comm, cm->wranks, block);
                                k.nb = 0;
                            }
                        }
                        for (int ex = 0; ex < 2; ++ex)
                            if (has(list, ex ? "exscan" : "scan")) {
                                k.coll = ex ? "MPI_Exscan" : "MPI_Scan";
                                run_scan(&k, cm->comm, cm->wranks, ex);
                            }
                    }
                }
                /* data movement: the same type on both sides, or d's twin
                 * (same signature, other layout) received (mix 1) or sent
                 * (mix 2); quick mode alternates the two directions */
                k.op = -1;
                for (int mix = 0; mix < 3; ++mix) {
                    if (quick && mix && mix != 1 + ci % 2) continue;
                    k.mix = mix;
                    for (int ip = 0; ip < 2; ++ip) {
                        k.in_place = ip;
                        for (int v = 0; v < 2; ++v) {
                            k.root = -1;
                            /* in place, these use the receive type alone */
                            if (has(list, v ? "allgatherv" : "allgather") && !(ip && mix)) {
                                k.coll = v ? "MPI_Allgatherv" : "MPI_Allgather";
                                run_allgather(&k, cm->comm, cm->wranks, v);
                            }
                            if (!v && has(list, "iallgather") && !(ip && mix)) {
                                k.coll = "MPI_Iallgather";
                                k.nb = 1;
                                run_allgather(&k, cm->comm, cm->wranks, 0);
                                k.nb = 0;
                            }
                            if (!v && has(list, "pallgather") && !(ip && mix)) {
                                k.coll = "MPI_Allgather_init";
                                k.nb = 2;
                                run_allgather(&k, cm->comm, cm->wranks, 0);
                                k.nb = 0;
                            }
                            if (has(list, v ? "alltoallv" : "alltoall") && !(ip && mix)) {
                                k.coll = v ? "MPI_Alltoallv" : "MPI_Alltoall";
                                run_alltoall(&k, cm->comm, cm->wranks, v);
                            }
                            for (int ri = 0; ri < nroots; ++ri) {
                                k.root = roots[ri];
                                if (has(list, v ? "gatherv" : "gather")) {
                                    k.coll = v ? "MPI_Gatherv" : "MPI_Gather";
                                    run_gather(&k, cm->comm, cm->wranks, v);
                                }
                                if (has(list, v ? "scatterv" : "scatter")) {
                                    k.coll = v ? "MPI_Scatterv" : "MPI_Scatter";
                                    run_scatter(&k, cm->comm, cm->wranks, v);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /* tally with point-to-point only: the collectives are what is tested */
    long mine[2] = {passed, failed}, tot[2] = {passed, failed};
    if (wrank_g == 0) {
        for (int r = 1; r < wsize; ++r) {
            long theirs[2];
            MPI_Recv(theirs, 2, MPI_LONG, r, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            tot[0] += theirs[0];
            tot[1] += theirs[1];
        }
        printf("collx_check: %d ranks, seed %u, collectives %s%s%s", wsize, seed, colls,
               quick ? " (quick)" : "", big_only ? " (big count only)" : "");
        if (part_n > 1) printf(" (part %d of %d)", part_k + 1, part_n);
        printf("\n");
        printf("collx_check: %ld passed, %ld failed\n", tot[0], tot[1]);
        fflush(stdout);
    } else {
        MPI_Send(mine, 2, MPI_LONG, 0, 99, MPI_COMM_WORLD);
    }
    int st_bad = 0;
    if (self_test && wrank_g == 0) {
        long sum[NST][2];
        memcpy(sum, st_tally, sizeof sum);
        for (int r = 1; r < wsize; ++r) {
            long theirs[NST][2];
            MPI_Recv(theirs, 2 * NST, MPI_LONG, r, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < NST; ++i) {
                sum[i][0] += theirs[i][0];
                sum[i][1] += theirs[i][1];
            }
        }
        int tried = 0;
        for (int i = 0; i < NST; ++i) {
            if (!has(list, st_names[i][1])) continue;
            if (sum[i][0] == 0) {
                printf("collx_check: self-test: %s: no corruption could be injected%s\n",
                       st_names[i][0], wsize > 1 ? "" : " (1 rank)");
                if (wsize > 1) ++st_bad;
            } else if (sum[i][1] < sum[i][0]) {
                printf("collx_check: self-test: %s: corrupted result NOT detected\n",
                       st_names[i][0]);
                ++st_bad;
            }
            tried += sum[i][0] > 0;
        }
        printf("collx_check: self-test: %d collectives corrupted, %d not caught or not "
               "corrupted\n", tried, st_bad);
        fflush(stdout);
    } else if (self_test) {
        MPI_Send(st_tally, 2 * NST, MPI_LONG, 0, 98, MPI_COMM_WORLD);
    }
    for (int k = 1; k < ncc; ++k) {
        free(cc[k].wranks);
        MPI_Comm_free(&cc[k].comm);
    }
    free(cc[0].wranks);
    for (int di = 0; di < ndtypes; ++di)
        if (di >= 4) MPI_Type_free(&dtypes[di].type);
    for (int ti = 0; ti < ntwins; ++ti)
        if (!twins[ti].predefined) MPI_Type_free(&twins[ti].type);
    MPI_Op_free(&ops[OP_USER_SUM]);
    MPI_Op_free(&ops[OP_AFFINE]);
    int exit_code = (wrank_g == 0 ? tot[1] + st_bad : failed) ? 1 : 0;
    free(list);
    MPI_Finalize();
    return exit_code;
}
