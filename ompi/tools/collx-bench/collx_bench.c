/*
 * collx-bench: latency of one collective over a range of message sizes,
 * for whatever coll component the mpirun command line selected.
 *
 *   collx-bench [--coll bcast|reduce|allreduce|allgather|alltoall] [--min BYTES] [--max BYTES]
 *               [--reps N] [--time-per-rep SECONDS] [--root rotate|N]
 *
 * For each size (powers of 4 from --min to --max, in bytes of MPI_INT
 * data) it runs --reps timed repetitions; a repetition is a loop of
 * iterations sized to take about --time-per-rep, preceded by a barrier, and
 * its time is the slowest rank's average per iteration.  It prints, per
 * size, the median, minimum and maximum over repetitions in microseconds:
 *
 *   # coll bytes median_us min_us max_us
 *   bcast 4 12.31 11.92 13.05
 *
 * After timing each size, one call with known data is validated; a wrong
 * result aborts with a message (exit 3).  Times are gathered with
 * point-to-point messages only.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double slowest(double t)
{
    double worst = t;
    if (rank == 0) {
        for (int r = 1; r < size; ++r) {
            double o;
            MPI_Recv(&o, 1, MPI_DOUBLE, r, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (o > worst) worst = o;
        }
    } else {
        MPI_Send(&t, 1, MPI_DOUBLE, 0, 77, MPI_COMM_WORLD);
    }
    MPI_Bcast(&worst, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return worst;
}

/* BYTES is the message for bcast/reduce/allreduce, one rank's block for
 * allgather and (to each rank) alltoall */
enum coll { BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL };

static void run(enum coll c, int *a, int *b, int n, int root)
{
    switch (c) {
    case BCAST: MPI_Bcast(a, n, MPI_INT, root, MPI_COMM_WORLD); break;
    case REDUCE: MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD); break;
    case ALLREDUCE: MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(a, n, MPI_INT, b, n, MPI_INT, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(a, n, MPI_INT, b, n, MPI_INT, MPI_COMM_WORLD); break;
    }
}

static void validate(enum coll c, int *a, int *b, int n)
{
    const int root = size - 1;
    const long na = c == ALLTOALL ? (long)n * size : n, nb = c >= ALLGATHER ? (long)n * size : n;
    for (long i = 0; i < na; ++i)
        a[i] = (c == BCAST) ? (rank == root ? (int)(i * 7 + 1) : -1) : (int)(rank + i % 5);
    for (long i = 0; i < nb; ++i) b[i] = -1;
    run(c, a, b, n, root);
    long bad = -1;
    for (long i = 0; i < (c == BCAST ? n : nb) && bad < 0; ++i) {
        long want;
        switch (c) {
        case BCAST: want = i * 7 + 1; break;
        case ALLGATHER: want = i / n + (i % n) % 5; break;          /* rank q's element j */
        case ALLTOALL: want = i / n + (rank * (long)n + i % n) % 5; break;
        default: want = (long)size * (size - 1) / 2 + (long)size * (i % 5);
        }
        int got = c == BCAST ? a[i] : b[i];
        if ((c != REDUCE || rank == root) && got != want) bad = i;
    }
    if (bad >= 0) {
        fprintf(stderr, "collx-bench: VALIDATION FAILED on rank %d at element %ld of %d\n", rank,
                bad, n);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum coll c = BCAST;
    const char *cname = "bcast";
    long minb = 4, maxb = 4 << 20;
    int reps = 7, fixed_root = -1;
    double per_rep = 0.02;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--coll") && i + 1 < argc) {
            cname = argv[++i];
            if (!strcmp(cname, "bcast")) c = BCAST;
            else if (!strcmp(cname, "reduce")) c = REDUCE;
            else if (!strcmp(cname, "allreduce")) c = ALLREDUCE;
            else if (!strcmp(cname, "allgather")) c = ALLGATHER;
            else if (!strcmp(cname, "alltoall")) c = ALLTOALL;
            else goto usage;
        } else if (!strcmp(argv[i], "--min") && i + 1 < argc) minb = atol(argv[++i]);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc) maxb = atol(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--time-per-rep") && i + 1 < argc) per_rep = atof(argv[++i]);
        else if (!strcmp(argv[i], "--root") && i + 1 < argc) {
            ++i;
            fixed_root = strcmp(argv[i], "rotate") ? atoi(argv[i]) : -1;
        } else goto usage;
    }
    if (minb < 4 || maxb < minb || reps < 1 || reps > 1000 || fixed_root >= size) goto usage;

    int *a = malloc((size_t)maxb * (size_t)size), *b = malloc((size_t)maxb * (size_t)size);
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!a || !b || !t) MPI_Abort(MPI_COMM_WORLD, 2);
    memset(a, 1, (size_t)maxb * (size_t)size);
    if (rank == 0) printf("# coll bytes median_us min_us max_us (ranks %d)\n", size);
    for (long bytes = minb; bytes <= maxb; bytes *= 4) {
        const int n = (int)(bytes / 4);
        /* warm up and size the loop: ~per_rep seconds per repetition */
        int iters = 1;
        for (;;) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int k = 0; k < iters; ++k)
                run(c, a, b, n, fixed_root >= 0 ? fixed_root : k % size);
            double dt = slowest(MPI_Wtime() - t0);
            if (dt >= per_rep / 4 || iters >= 100000) {
                iters = (int)(iters * per_rep / (dt > 0 ? dt : 1e-9)) + 1;
                if (iters > 100000) iters = 100000;
                break;
            }
            iters *= 4;
        }
        for (int r = 0; r < reps; ++r) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int k = 0; k < iters; ++k)
                run(c, a, b, n, fixed_root >= 0 ? fixed_root : k % size);
            t[r] = slowest(MPI_Wtime() - t0) / iters * 1e6;
        }
        qsort(t, (size_t)reps, sizeof(double), cmp_double);
        if (rank == 0) {
            printf("%s %ld %.2f %.2f %.2f\n", cname, bytes, t[reps / 2], t[0], t[reps - 1]);
            fflush(stdout);
        }
        validate(c, a, b, n);
    }
    free(a);
    free(b);
    free(t);
    MPI_Finalize();
    return 0;
usage:
    if (rank == 0)
        fprintf(stderr, "usage: collx-bench [--coll bcast|reduce|allreduce|allgather|alltoall] [--min BYTES] "
                        "[--max BYTES] [--reps N] [--time-per-rep S] [--root rotate|N]\n");
    MPI_Finalize();
    return 2;
}
