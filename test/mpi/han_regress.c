/*
 * Regression tests named after upstream coll/han bugs (see
 * ../shared/DESIGN.md and docs/testing.md), each reproducing the scenario of
 * the report and checking the data exactly.  Meant for hierarchical runs:
 * emulated nodes (2x2, 3+1, round-robin) with coll/hanx selected.
 *
 *   han_regress [--case NAME]...   NAME: 8248 11441 11473 11545 11664 12383
 *                                        12438 13200 13398 (default: all)
 *
 * Each rank prints "han_regress: <case>: N errors" lines for failing cases
 * and exits non-zero when it saw an error; rank 0 prints a summary.  No
 * collective is used to tally (they are what is tested).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static int report(const char *name, long errors)
{
    if (errors) printf("han_regress: ompi #%s: rank %d: %ld errors\n", name, rank, errors);
    return errors != 0;
}

static int val(int r, long i) { return (int)((r + 1) * 1000003L + i * 7 + 11); }

/* #8248: allgather crashed with two or more ranks per node */
static int t8248(void)
{
    long errors = 0;
    const int counts[] = {1, 2, 13, 1000, 65536};
    for (unsigned c = 0; c < sizeof(counts) / sizeof(*counts); ++c) {
        int n = counts[c];
        int *s = malloc(sizeof(int) * n), *r = malloc(sizeof(int) * (size_t)n * size);
        for (int i = 0; i < n; ++i) s[i] = val(rank, i);
        MPI_Allgather(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD);
        for (int q = 0; q < size; ++q)
            for (int i = 0; i < n; ++i) errors += r[(long)q * n + i] != val(q, i);
        free(s);
        free(r);
    }
    return report("8248", errors);
}

/* #11441: allreduce gave wrong sums at some sizes (segment boundaries) */
static int t11441(void)
{
    long errors = 0;
    const int counts[] = {1, 3, 1023, 1024, 1025, 16383, 16384, 16385, 32768, 32769,
                          65535, 65536, 65537, 131071, 262147, 1048576};
    for (unsigned c = 0; c < sizeof(counts) / sizeof(*counts); ++c) {
        int n = counts[c];
        long long *s = malloc(sizeof(*s) * n), *r = malloc(sizeof(*r) * n);
        for (int i = 0; i < n; ++i) s[i] = val(rank, i);
        MPI_Allreduce(s, r, n, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < n; ++i) {
            long long want = 0;
            for (int q = 0; q < size; ++q) want += val(q, i);
            errors += r[i] != want;
        }
        free(s);
        free(r);
    }
    return report("11441", errors);
}

/* #11473: allreduce with MPI_IN_PLACE crashed */
static int t11473(void)
{
    long errors = 0;
    const int counts[] = {1, 7, 4096, 300007};
    for (unsigned c = 0; c < sizeof(counts) / sizeof(*counts); ++c) {
        int n = counts[c];
        int *b = malloc(sizeof(int) * n);
        for (int i = 0; i < n; ++i) b[i] = val(rank, i);
        MPI_Allreduce(MPI_IN_PLACE, b, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        for (int i = 0; i < n; ++i) errors += b[i] != val(size - 1, i);
        free(b);
    }
    return report("11473", errors);
}

/* #11545: gather with MPI_IN_PLACE at the root corrupted the result */
static int t11545(void)
{
    long errors = 0;
    for (int root = 0; root < size; ++root) {
        const int n = 257;
        int *s = malloc(sizeof(int) * n), *r = malloc(sizeof(int) * (size_t)n * size);
        for (int i = 0; i < n * size; ++i) r[i] = -1;
        for (int i = 0; i < n; ++i) s[i] = val(rank, i);
        if (rank == root) {
            memcpy(r + (long)root * n, s, sizeof(int) * n);
            MPI_Gather(MPI_IN_PLACE, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD);
            for (int q = 0; q < size; ++q)
                for (int i = 0; i < n; ++i) errors += r[(long)q * n + i] != val(q, i);
        } else {
            MPI_Gather(s, n, MPI_INT, NULL, 0, MPI_INT, root, MPI_COMM_WORLD);
        }
        free(s);
        free(r);
    }
    return report("11545", errors);
}

/* #11664: gather put blocks in the wrong order when ranks were not placed
 * in blocks by node (run with --map-by node) -- also on a communicator
 * whose order differs from the world's */
static int t11664(void)
{
    long errors = 0;
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    MPI_Comm comms[2] = {MPI_COMM_WORLD, rev};
    for (int c = 0; c < 2; ++c) {
        int me, *wr = malloc(sizeof(int) * size);
        MPI_Comm_rank(comms[c], &me);
        for (int q = 0; q < size; ++q) wr[q] = c ? size - 1 - q : q; /* world rank of q */
        for (int root = 0; root < size; ++root) {
            int s = val(rank, 0), *r = malloc(sizeof(int) * size);
            MPI_Gather(&s, 1, MPI_INT, r, 1, MPI_INT, root, comms[c]);
            if (me == root)
                for (int q = 0; q < size; ++q) errors += r[q] != val(wr[q], 0);
            free(r);
        }
        free(wr);
    }
    MPI_Comm_free(&rev);
    return report("11664", errors);
}

/* #12383: scatter with a receive type that differs from the send type but
 * matches its signature (n ints sent, received as one contiguous(n)) */
static int t12383(void)
{
    long errors = 0;
    const int n = 33;
    MPI_Datatype block;
    MPI_Type_contiguous(n, MPI_INT, &block);
    MPI_Type_commit(&block);
    for (int root = 0; root < size; ++root) {
        int *s = NULL, r[33];
        if (rank == root) {
            s = malloc(sizeof(int) * (size_t)n * size);
            for (int q = 0; q < size; ++q)
                for (int i = 0; i < n; ++i) s[q * n + i] = val(q, i);
        }
        MPI_Scatter(s, n, MPI_INT, r, 1, block, root, MPI_COMM_WORLD);
        for (int i = 0; i < n; ++i) errors += r[i] != val(rank, i);
        /* and the other way round: the root sends blocks, ranks receive ints */
        MPI_Scatter(s, 1, block, r, n, MPI_INT, root, MPI_COMM_WORLD);
        for (int i = 0; i < n; ++i) errors += r[i] != val(rank, i);
        free(s);
    }
    MPI_Type_free(&block);
    return report("12383", errors);
}

/* #12438: gatherv with derived types that have gaps (vector with stride 2):
 * data in the right places, gaps untouched */
static int t12438(void)
{
    long errors = 0;
    MPI_Datatype gappy;
    MPI_Type_vector(5, 1, 2, MPI_INT, &gappy); /* 5 ints, every other one */
    MPI_Datatype one;
    MPI_Type_create_resized(gappy, 0, 10 * sizeof(int), &one);
    MPI_Type_commit(&one);
    MPI_Type_free(&gappy);
    for (int root = 0; root < size; ++root) {
        int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size), total = 0;
        for (int q = 0; q < size; ++q) {
            counts[q] = q % 3;     /* imbalanced, some zero */
            displs[q] = total + 1; /* a hole between blocks */
            total += counts[q] + 1;
        }
        int mine = rank % 3, *s = malloc(sizeof(int) * 10 * (mine + 1));
        for (int e = 0; e < mine; ++e)
            for (int i = 0; i < 10; ++i) s[e * 10 + i] = i % 2 ? -7 : val(rank, e * 5 + i / 2);
        int *r = malloc(sizeof(int) * 10 * (size_t)(total + 1));
        for (int i = 0; i < 10 * (total + 1); ++i) r[i] = -1;
        MPI_Gatherv(s, mine, one, r, counts, displs, one, root, MPI_COMM_WORLD);
        if (rank == root) {
            char *mark = calloc(10 * (size_t)(total + 1), 1);
            for (int q = 0; q < size; ++q)
                for (int e = 0; e < counts[q]; ++e)
                    for (int j = 0; j < 5; ++j) {
                        long at = (long)(displs[q] + e) * 10 + 2 * j;
                        mark[at] = 1;
                        errors += r[at] != val(q, e * 5 + j);
                    }
            for (int i = 0; i < 10 * (total + 1); ++i) errors += !mark[i] && r[i] != -1;
            free(mark);
        }
        free(counts);
        free(displs);
        free(s);
        free(r);
    }
    MPI_Type_free(&one);
    return report("12438", errors);
}

/* #13200: alltoall with MPI_IN_PLACE crashed */
static int t13200(void)
{
    long errors = 0;
    const int counts[] = {1, 5, 1024};
    for (unsigned c = 0; c < sizeof(counts) / sizeof(*counts); ++c) {
        int n = counts[c], *b = malloc(sizeof(int) * (size_t)n * size);
        for (int q = 0; q < size; ++q)
            for (int i = 0; i < n; ++i) b[q * n + i] = val(rank, q * n + i);
        MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, n, MPI_INT, MPI_COMM_WORLD);
        for (int q = 0; q < size; ++q)
            for (int i = 0; i < n; ++i) errors += b[q * n + i] != val(q, rank * n + i);
        free(b);
    }
    return report("13200", errors);
}

/* #13398: sub-communicators freed twice at finalize.  Communicators that
 * ran hierarchical collectives: some freed, some dup'ed then freed, some
 * left for MPI_Finalize to clean up. */
static MPI_Comm leak[4];
static int t13398(void)
{
    long errors = 0;
    for (int round = 0; round < 20; ++round) {
        MPI_Comm d, s;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        MPI_Comm_split(d, rank % 2, rank, &s);
        int x = rank, sum = 0;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, d);
        errors += sum != size * (size - 1) / 2;
        MPI_Bcast(&x, 1, MPI_INT, 0, s);
        MPI_Barrier(d);
        if (round < 4) {
            leak[round] = d; /* finalize frees these */
        } else {
            MPI_Comm_free(&d);
        }
        MPI_Comm_free(&s);
    }
    return report("13398", errors);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct { const char *name; int (*fn)(void); } cases[] = {
        {"8248", t8248},   {"11441", t11441}, {"11473", t11473}, {"11545", t11545},
        {"11664", t11664}, {"12383", t12383}, {"12438", t12438}, {"13200", t13200},
        {"13398", t13398}};
    const int ncases = sizeof(cases) / sizeof(*cases);
    int want[16] = {0}, any = 0, bad = 0, ran = 0;
    for (int a = 1; a < argc; ++a) {
        if (!strcmp(argv[a], "--case") && a + 1 < argc) {
            int found = 0;
            ++a;
            for (int c = 0; c < ncases; ++c)
                if (!strcmp(argv[a], cases[c].name)) want[c] = found = any = 1;
            if (!found) {
                if (!rank) fprintf(stderr, "han_regress: unknown case %s\n", argv[a]);
                MPI_Finalize();
                return 2;
            }
        } else {
            if (!rank) fprintf(stderr, "usage: %s [--case NAME]...\n", argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    for (int c = 0; c < ncases; ++c)
        if (!any || want[c]) {
            bad += cases[c].fn();
            ++ran;
        }
    if (!rank) printf("han_regress: %d ranks, %d case(s) run; errors are reported per rank\n", size, ran);
    fflush(stdout);
    MPI_Finalize();
    return bad ? 1 : 0;
}
