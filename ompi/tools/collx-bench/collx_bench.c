/*
 * collx-bench: latency of collectives over a range of message sizes, for
 * whatever coll component the mpirun command line selected.
 *
 *   collx-bench [--coll LIST|all] [--min BYTES] [--max BYTES] [--factor F]
 *               [--reps N] [--warmup N] [--time-per-rep SECONDS] [--root rotate|N]
 *               [--raw] [--pingpong [--burst BYTES]]
 *
 * LIST: comma-separated from bcast, reduce, allreduce, allgather, alltoall,
 * reduce_scatter (MPI_Reduce_scatter_block), barrier, ibcast, ireduce,
 * iallreduce, iallgather, ireduce_scatter (the nonblocking ones: start +
 * MPI_Wait).  BYTES is the message for bcast/reduce/allreduce and their
 * non-blocking forms and one rank's block for (i)allgather, alltoall (to
 * each rank) and (i)reduce_scatter (the result); barrier
 * runs once, at size 0.  Sizes go from --min to --max in steps of * --factor
 * (default 4); the data are MPI_INT.
 *
 * For each collective and size: --warmup untimed calls (default 2), then the
 * loop is sized to take about --time-per-rep, then --reps timed repetitions;
 * a repetition is a barrier and that loop, and its time is the slowest rank's
 * average per call.  It prints the median, minimum and maximum over
 * repetitions in microseconds:
 *
 *   # coll bytes median_us min_us max_us
 *   bcast 4 12.31 11.92 13.05
 *
 * or, with --raw, every repetition ("coll bytes t1 t2 ... tN", after a line
 * "# iters coll bytes K": the calls in one repetition), for a driver that pools
 * repetitions of several runs (contrib/bench.sh).
 *
 * After timing each size, one call with known data is validated outside the
 * timed loop; a wrong result aborts with a message (exit 3).  Times are
 * gathered with point-to-point messages only.
 *
 * --pingpong first measures the link parameters: half the round trip (the fastest of 5
 * batches) of 4-byte, 64 KiB, 1 MiB and 4 MiB messages between rank 0 and another rank
 * on its node (intra) and the first rank on another node (inter), and prints
 *
 *   # pingpong intra|inter BYTES US          (one line per size)
 *   # alphabeta intra|inter ALPHA_us BETA_us_per_byte
 *
 * with alpha = the 4-byte time (its fastest single exchange) and beta = the smallest
 * slope between two measured sizes: the link's per-byte floor (a lower bound wants the
 * fastest the link goes, and small messages run from cache).  --burst BYTES (the token
 * bucket of a rate-limited link) takes the inter-node slopes only between sizes past
 * BYTES: the bucket lets that much through at once, so shorter pairs say nothing of the
 * rate.  Nodes = MPI_COMM_TYPE_SHARED groups; a level without a pair is left out.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collx/collx.h"

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

enum coll { BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL, REDUCE_SCATTER, BARRIER, IBCAST,
            IREDUCE, IALLREDUCE, IALLGATHER, IREDUCE_SCATTER, NCOLL };
/* the words: the core's table (collx.h), "i" before a non-blocking form */
static const struct {
    int coll, nonblocking;
} kinds[NCOLL] = {{COLLX_COLL_BCAST, 0},     {COLLX_COLL_REDUCE, 0},
                  {COLLX_COLL_ALLREDUCE, 0}, {COLLX_COLL_ALLGATHER, 0},
                  {COLLX_COLL_ALLTOALL, 0},  {COLLX_COLL_REDUCE_SCATTER, 0},
                  {COLLX_COLL_BARRIER, 0},   {COLLX_COLL_BCAST, 1},
                  {COLLX_COLL_REDUCE, 1},    {COLLX_COLL_ALLREDUCE, 1},
                  {COLLX_COLL_ALLGATHER, 1}, {COLLX_COLL_REDUCE_SCATTER, 1}};
static char names[NCOLL][32];
static void name_kinds(void)
{
    for (int c = 0; c < NCOLL; ++c)
        snprintf(names[c], sizeof names[c], "%s%s", kinds[c].nonblocking ? "i" : "",
                 collx_coll_name(kinds[c].coll));
}

/* elements of the send (a) and receive (b) buffers for block/message n */
static long in_elems(enum coll c, long n)
{
    return c == ALLTOALL || c == REDUCE_SCATTER || c == IREDUCE_SCATTER ? n * size : n;
}
static long out_elems(enum coll c, long n)
{
    return c == ALLGATHER || c == IALLGATHER || c == ALLTOALL ? n * size : n;
}

static void run(enum coll c, int *a, int *b, int n, int root)
{
    MPI_Request rq;
    switch (c) {
    case BCAST: MPI_Bcast(a, n, MPI_INT, root, MPI_COMM_WORLD); break;
    case REDUCE: MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD); break;
    case ALLREDUCE: MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(a, n, MPI_INT, b, n, MPI_INT, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(a, n, MPI_INT, b, n, MPI_INT, MPI_COMM_WORLD); break;
    case REDUCE_SCATTER: MPI_Reduce_scatter_block(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); break;
    case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    case IBCAST:
        MPI_Ibcast(a, n, MPI_INT, root, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        break;
    case IREDUCE:
        MPI_Ireduce(a, b, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        break;
    case IALLREDUCE:
        MPI_Iallreduce(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        break;
    case IALLGATHER:
        MPI_Iallgather(a, n, MPI_INT, b, n, MPI_INT, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        break;
    case IREDUCE_SCATTER:
        MPI_Ireduce_scatter_block(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        break;
    default: break;
    }
}

static void validate(enum coll c, int *a, int *b, int n)
{
    if (c == BARRIER) return;
    const int root = size - 1;
    const int bc = c == BCAST || c == IBCAST;
    const long na = in_elems(c, n), nb = out_elems(c, n);
    for (long i = 0; i < na; ++i)
        a[i] = bc ? (rank == root ? (int)(i * 7 + 1) : -1) : (int)(rank + i % 5);
    for (long i = 0; i < nb; ++i) b[i] = -1;
    run(c, a, b, n, root);
    long bad = -1;
    for (long i = 0; i < nb && bad < 0; ++i) {
        long want;
        switch (c) {
        case BCAST: case IBCAST: want = i * 7 + 1; break;
        case ALLGATHER: case IALLGATHER: want = i / n + (i % n) % 5; break;          /* rank q's element j */
        case ALLTOALL: want = i / n + (rank * (long)n + i % n) % 5; break;
        case REDUCE_SCATTER: case IREDUCE_SCATTER:                  /* my block of the sum */
            want = (long)size * (size - 1) / 2 + (long)size * ((rank * (long)n + i) % 5);
            break;
        default: want = (long)size * (size - 1) / 2 + (long)size * (i % 5);
        }
        int got = bc ? a[i] : b[i];
        if (((c != REDUCE && c != IREDUCE) || rank == root) && got != want) bad = i;
    }
    if (bad >= 0) {
        fprintf(stderr, "collx-bench: VALIDATION FAILED (%s) on rank %d at element %ld of %d\n",
                names[c], rank, bad, n);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* half round trip between ranks p and q, others wait.  The link's floor, not
 * its noise: the fastest of 5 batches, or with single != 0 the fastest single
 * exchange (a latency: noise only adds to it) */
static double pingpong(int p, int q, char *buf, int bytes, int single)
{
    double t[5], fastest = -1;
    const int iters = bytes > 65536 ? 4 : 200;
    for (int r = 0; r < 5; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime(), t1 = t0;
        for (int k = 0; k < iters + 1; ++k) {
            if (rank == p) {
                MPI_Send(buf, bytes, MPI_BYTE, q, 78, MPI_COMM_WORLD);
                MPI_Recv(buf, bytes, MPI_BYTE, q, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == q) {
                MPI_Recv(buf, bytes, MPI_BYTE, p, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, bytes, MPI_BYTE, p, 78, MPI_COMM_WORLD);
            }
            const double now = MPI_Wtime();
            if (k == 0) t0 = now;  /* the first exchange is a warm-up */
            else if (fastest < 0 || now - t1 < fastest) fastest = now - t1;
            t1 = now;
        }
        t[r] = (t1 - t0) / iters / 2 * 1e6;
    }
    qsort(t, 5, sizeof(double), cmp_double);
    double best = single ? fastest / 2 * 1e6 : t[0];
    MPI_Bcast(&best, 1, MPI_DOUBLE, p, MPI_COMM_WORLD);
    return best;
}

static void measure_links(long burst)
{
    /* node of every rank: the world rank of its node's first rank */
    MPI_Comm node;
    int me_node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    me_node = rank;
    MPI_Bcast(&me_node, 1, MPI_INT, 0, node);
    MPI_Comm_free(&node);
    int *nodes = malloc(sizeof(int) * (size_t)size);
    MPI_Allgather(&me_node, 1, MPI_INT, nodes, 1, MPI_INT, MPI_COMM_WORLD);
    int intra = -1, inter = -1;
    for (int r = 1; r < size; ++r) {
        if (nodes[r] == nodes[0] && intra < 0) intra = r;
        if (nodes[r] != nodes[0] && inter < 0) inter = r;
    }
    free(nodes);
    enum { NSIZES = 4 };
    const int bytes[NSIZES] = {4, 64 << 10, 1 << 20, 4 << 20};
    char *buf = calloc(bytes[NSIZES - 1], 1);
    const int peers[2] = {intra, inter};
    const char *level[2] = {"intra", "inter"};
    for (int l = 0; l < 2; ++l) {
        if (peers[l] < 0) continue;
        double t[NSIZES], beta = -1;
        for (int i = 0; i < NSIZES; ++i) {
            t[i] = pingpong(0, peers[l], buf, bytes[i], i == 0);
            if (rank == 0) printf("# pingpong %s %d %.3f\n", level[l], bytes[i], t[i]);
        }
        /* the smallest slope between two sizes; on a rate-limited link only
         * between sizes past the burst, which the bucket lets through at once */
        for (int i = 0; i < NSIZES; ++i)
            for (int j = i + 1; j < NSIZES; ++j) {
                if (l == 1 && burst > 0 && bytes[i] <= burst) continue;
                const double b = (t[j] - t[i]) / (bytes[j] - bytes[i]);
                if (b > 0 && (beta < 0 || b < beta)) beta = b;
            }
        if (rank == 0) printf("# alphabeta %s %.3f %.6g\n", level[l], t[0], beta > 0 ? beta : 0);
    }
    if (rank == 0) fflush(stdout);
    free(buf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    name_kinds();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int want[NCOLL] = {0}, ncolls = 0;
    long minb = 4, maxb = 4 << 20, factor = 4;
    int reps = 7, warmup = 2, fixed_root = -1, raw = 0, links = 0;
    long burst = 0;
    double per_rep = 0.02;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--coll") && i + 1 < argc) {
            char *list = strdup(argv[++i]);
            for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
                int found = 0;
                for (int c = 0; c < NCOLL; ++c)
                    if (!strcmp(tok, names[c]) || !strcmp(tok, "all")) want[c] = found = 1;
                if (!found) goto usage;
            }
            free(list);
        } else if (!strcmp(argv[i], "--min") && i + 1 < argc) minb = atol(argv[++i]);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc) maxb = atol(argv[++i]);
        else if (!strcmp(argv[i], "--factor") && i + 1 < argc) factor = atol(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--time-per-rep") && i + 1 < argc) per_rep = atof(argv[++i]);
        else if (!strcmp(argv[i], "--raw")) raw = 1;
        else if (!strcmp(argv[i], "--pingpong")) links = 1;
        else if (!strcmp(argv[i], "--burst") && i + 1 < argc) burst = atol(argv[++i]);
        else if (!strcmp(argv[i], "--root") && i + 1 < argc) {
            ++i;
            fixed_root = strcmp(argv[i], "rotate") ? atoi(argv[i]) : -1;
        } else goto usage;
    }
    for (int c = 0; c < NCOLL; ++c) ncolls += want[c];
    if (!ncolls && !links) want[BCAST] = ncolls = 1;
    if (minb < 4 || maxb < minb || factor < 2 || reps < 1 || reps > 1000 || warmup < 0 ||
        fixed_root >= size || burst < 0)
        goto usage;

    if (links) measure_links(burst);
    /* buffers: a rank's block times the ranks where a collective needs it */
    const int wide = want[ALLGATHER] || want[IALLGATHER] || want[ALLTOALL] || want[REDUCE_SCATTER] ||
                     want[IREDUCE_SCATTER];
    const size_t bufbytes = ncolls ? (size_t)maxb * (wide ? (size_t)size : 1) : 4;
    int *a = malloc(bufbytes), *b = malloc(bufbytes);
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!a || !b || !t) MPI_Abort(MPI_COMM_WORLD, 2);
    memset(a, 1, bufbytes);
    if (rank == 0 && ncolls)
        printf(raw ? "# coll bytes us_per_rep... (ranks %d)\n"
                   : "# coll bytes median_us min_us max_us (ranks %d)\n", size);
    for (int ci = 0; ci < NCOLL; ++ci) {
        if (!want[ci]) continue;
        const enum coll c = ci;
        for (long bytes = c == BARRIER ? 0 : minb; bytes <= (c == BARRIER ? 0 : maxb);
             bytes *= factor) {
            const int n = (int)(bytes / 4);
            for (int k = 0; k < warmup; ++k) run(c, a, b, n, fixed_root >= 0 ? fixed_root : k % size);
            /* size the loop: ~per_rep seconds per repetition */
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
            if (rank == 0) {
                if (raw) printf("# iters %s %ld %d\n", names[c], bytes, iters);
                printf("%s %ld", names[c], bytes);
                if (raw) {
                    for (int r = 0; r < reps; ++r) printf(" %.3f", t[r]);
                } else {
                    qsort(t, (size_t)reps, sizeof(double), cmp_double);
                    printf(" %.2f %.2f %.2f", t[reps / 2], t[0], t[reps - 1]);
                }
                printf("\n");
                fflush(stdout);
            }
            validate(c, a, b, n);
            memset(a, 1, bufbytes);
            if (c == BARRIER) break;
        }
    }
    free(a);
    free(b);
    free(t);
    MPI_Finalize();
    return 0;
usage:
    if (rank == 0)
        fprintf(stderr, "usage: collx-bench [--coll LIST|all] [--min BYTES] [--max BYTES] "
                        "[--factor F] [--reps N] [--warmup N] [--time-per-rep S] "
                        "[--root rotate|N] [--raw] [--pingpong [--burst BYTES]]\n"
                        "  LIST: comma-separated bcast,reduce,allreduce,allgather,alltoall,"
                        "reduce_scatter,barrier,ibcast,ireduce,iallreduce,iallgather,"
                        "ireduce_scatter\n");
    MPI_Finalize();
    return 2;
}
