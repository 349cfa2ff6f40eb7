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
 *   collx_check [--quick] [--colls LIST] [--seed N] [--max-count N] [--big]
 *
 * LIST: any of bcast,reduce,allreduce,ibcast,ireduce,iallreduce,overlap
 * (default bcast,reduce,allreduce); `overlap` posts several non-blocking
 * collectives on one communicator and completes them in reverse order.
 *
 * Exit status 0 when every case matched; the last line says
 * "collx_check: N passed, M failed".
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
} dtype_case_t;

#define MAX_DTYPES 12
static dtype_case_t dtypes[MAX_DTYPES];
static int ndtypes = 0;

static dtype_case_t *add_dtype(const char *name, MPI_Datatype t, int reducible)
{
    dtype_case_t *d = &dtypes[ndtypes++];
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
    return d;
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
                case K_I32: *(int32_t *)b += *(int32_t *)a; break;
                case K_U32: *(uint32_t *)b += *(uint32_t *)a; break;
                case K_I64: *(int64_t *)b += *(int64_t *)a; break;
                case K_DBL: *(double *)b += *(double *)a; break;
                case K_FLT: *(float *)b += *(float *)a; break;
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
    case K_I32: *(int32_t *)p = (int32_t)v; break;
    case K_U32: *(uint32_t *)p = (uint32_t)v; break;
    case K_I64: *(int64_t *)p = v; break;
    case K_DBL: *(double *)p = (double)v; break;
    case K_FLT: *(float *)p = (float)v; break;
    }
}

static int same(const char *p, enum kind k, int64_t v)
{
    switch (k) {
    case K_I32: return *(const int32_t *)p == (int32_t)v;
    case K_U32: return *(const uint32_t *)p == (uint32_t)v;
    case K_I64: return *(const int64_t *)p == v;
    case K_DBL: return *(const double *)p == (double)v;
    case K_FLT: return *(const float *)p == (float)v;
    }
    return 0;
}

static double as_double(const char *p, enum kind k)
{
    switch (k) {
    case K_I32: return *(const int32_t *)p;
    case K_U32: return *(const uint32_t *)p;
    case K_I64: return (double)*(const int64_t *)p;
    case K_DBL: return *(const double *)p;
    case K_FLT: return *(const float *)p;
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
    int nb; /* non-blocking form, completed with MPI_Wait or an MPI_Test loop */
} ccase_t;

static void report(const ccase_t *c, const char *what, size_t elem, int slot, double got,
                   double want)
{
    if (failed < 20)
        fprintf(stderr,
                "MISMATCH rank %d: %s comm=%s(size %d) dtype=%s count=%zu op=%s root=%d "
                "in_place=%d: %s at element %zu slot %d: got %.17g expected %.17g "
                "(seed %u)\n",
                wrank_g, c->coll, c->comm, c->comm_size, c->d->name, c->count,
                c->op >= 0 ? op_name[c->op] : "-", c->root, c->in_place, what, elem, slot, got,
                want, seed);
}

/* Check that b holds `expected(slot)` in every slot and SENTINEL in every
 * gap and guard byte.  Returns 1 when all good. */
typedef int64_t (*expect_fn)(const ccase_t *, size_t slot_index, int slot, const void *ctx);

static int verify(const ccase_t *c, buf_t *b, expect_fn want, const void *ctx, int check_gaps)
{
    const dtype_case_t *d = c->d;
    for (size_t e = 0; e < c->count; ++e)
        for (int s = 0; s < d->nslots; ++s) {
            size_t i = e * (size_t)d->nslots + (size_t)s;
            int64_t w = want(c, i, s, ctx);
            const char *p = data(b) + e * d->extent + d->slots[s].off;
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

static void run_bcast(const ccase_t *c, MPI_Comm comm, const int *wranks)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    buf_t b;
    buf_alloc(&b, c->d, c->count);
    if (rank == c->root) fill(&b, c->d, c->count, wranks[c->root]);
    int rc;
    if (c->nb) {
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
        tally(verify(c, &b, want_input, &r, 1));
    }
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
    fill(&s, c->d, c->count, wranks[rank]);
    const int in_place = c->in_place && gets_result;
    if (in_place) fill(&rb, c->d, c->count, wranks[rank]);
    const void *sb = in_place ? MPI_IN_PLACE : data(&s);
    if (verbose)
        fprintf(stderr, "rank %d: %s comm=%s dtype=%s count=%zu op=%s root=%d in_place=%d\n",
                wrank_g, c->coll, c->comm, c->d->name, c->count, op_name[c->op], c->root,
                c->in_place);
    int rc;
    if (c->nb) {
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
    if (ok && gets_result) ok = verify(c, &rb, want_reduced, &r, 1);
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
    if (ok && !in_place) ok = verify(c, &s, want_input, &r, 1); /* sendbuf unchanged */
    tally(ok);
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
    int ok = rc == MPI_SUCCESS && verify(&c, &b1, want_input, &r, 1);
    c.coll = "overlapped MPI_Ibcast(root P-1)";
    c.root = size - 1;
    r.wrank = wranks[size - 1];
    ok = ok && verify(&c, &b2, want_input, &r, 1);
    c.coll = "overlapped MPI_Iallreduce";
    c.op = OP_SUM;
    ok = ok && verify(&c, &r3, want_reduced, &r, 1);
    if (rank == size / 2) {
        c.coll = "overlapped MPI_Ireduce(affine)";
        c.d = da;
        c.op = OP_AFFINE;
        c.root = size / 2;
        ok = ok && verify(&c, &r4, want_reduced, &r, 1);
    }
    tally(ok);
    free(b1.mem); free(b2.mem); free(s3.mem); free(r3.mem); free(s4.mem); free(r4.mem);
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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank_g);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);

    int quick = 0, big = 0;
    const char *colls = "bcast,reduce,allreduce";  /* also: ibcast,ireduce,iallreduce,overlap */
    size_t max_count = 1u << 20;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--big")) big = 1;
        else if (!strcmp(argv[i], "--verbose")) verbose = 1;
        else if (!strcmp(argv[i], "--colls") && i + 1 < argc) colls = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-count") && i + 1 < argc)
            max_count = (size_t)atol(argv[++i]);
        else {
            if (!wrank_g)
                fprintf(stderr, "usage: %s [--quick] [--big] [--colls LIST] [--seed N] "
                                "[--max-count N]\n", argv[0]);
            MPI_Finalize();
            return 2;
        }
    }

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
    const size_t big_count = 300007;

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
        for (int di = 0; di < ndtypes; ++di) {
            const dtype_case_t *d = &dtypes[di];
            for (int ci = 0; ci <= ncounts; ++ci) {
                size_t count = ci < ncounts ? counts[ci] : big_count;
                if (ci == ncounts && !big) continue;
                if (count > max_count) continue;
                if (di == 0 && has(colls, "overlap")) run_overlap(cm->name, cm->comm, cm->wranks, count);
                ccase_t k = {.comm = cm->name, .comm_size = size, .d = d, .count = count,
                             .op = -1};
                for (int nb = 0; nb < 2; ++nb) {
                    if (!has(colls, nb ? "ibcast" : "bcast")) continue;
                    k.nb = nb;
                    for (int ri = 0; ri < nroots; ++ri) {
                        k.coll = nb ? "MPI_Ibcast" : "MPI_Bcast";
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
                        for (int nb = 0; nb < 2; ++nb) {
                            k.in_place = ip;
                            k.nb = nb;
                            if (has(colls, nb ? "ireduce" : "reduce"))
                                for (int ri = 0; ri < nroots; ++ri) {
                                    k.coll = nb ? "MPI_Ireduce" : "MPI_Reduce";
                                    k.root = roots[ri];
                                    run_reduce(&k, cm->comm, cm->wranks, 0);
                                }
                            if (has(colls, nb ? "iallreduce" : "allreduce")) {
                                k.coll = nb ? "MPI_Iallreduce" : "MPI_Allreduce";
                                k.root = -1;
                                run_reduce(&k, cm->comm, cm->wranks, 1);
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
        printf("collx_check: %d ranks, seed %u, collectives %s%s\n", wsize, seed, colls,
               quick ? " (quick)" : "");
        printf("collx_check: %ld passed, %ld failed\n", tot[0], tot[1]);
        fflush(stdout);
    } else {
        MPI_Send(mine, 2, MPI_LONG, 0, 99, MPI_COMM_WORLD);
    }
    for (int k = 1; k < ncc; ++k) {
        free(cc[k].wranks);
        MPI_Comm_free(&cc[k].comm);
    }
    free(cc[0].wranks);
    for (int di = 0; di < ndtypes; ++di)
        if (di >= 4) MPI_Type_free(&dtypes[di].type);
    MPI_Op_free(&ops[OP_USER_SUM]);
    MPI_Op_free(&ops[OP_AFFINE]);
    int exit_code = (wrank_g == 0 ? tot[1] : failed) ? 1 : 0;
    MPI_Finalize();
    return exit_code;
}
