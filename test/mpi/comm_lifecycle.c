/*
 * Communicator lifecycle under collx components: create, use and free
 * communicators (dup, split, dup of split) in a loop so that hierarchy
 * sub-communicators are created lazily and freed with their parents many
 * times, then finalize with some communicators -- and their sub-
 * communicators -- still alive (upstream han freed those twice: ompi #13398).
 *
 *   comm_lifecycle [ITERATIONS] [--measure] [--max-slope BYTES]
 *                  [--leak-on-purpose BYTES]
 *
 * --measure: memory in use at checkpoints after a warm-up of a fifth of the
 * cycles -- heap bytes in use (mallinfo2: every malloc arena, mmapped blocks
 * included) and resident set (/proc/self/statm) -- and their least-squares
 * slope in bytes per cycle, the largest over the ranks.  --max-slope B
 * fails the run (exit 2) when the heap slope exceeds B bytes per cycle: a
 * memory assertion, not a timing one.  --leak-on-purpose B mallocs (and
 * touches) B bytes per cycle and never frees them, to prove that the
 * assertion can fail.
 */
#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int errors = 0;

static void use(MPI_Comm comm, int iter)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int v[3] = {rank + iter, 1, rank == 0 ? iter : -1}, sum[3] = {0, 0, 0};
    MPI_Allreduce(v, sum, 2, MPI_INT, MPI_SUM, comm);
    if (sum[0] != size * (size - 1) / 2 + size * iter || sum[1] != size) ++errors;
    MPI_Bcast(&v[2], 1, MPI_INT, 0, comm);
    if (v[2] != iter) ++errors;
    int r = -1;
    MPI_Reduce(&v[1], &r, 1, MPI_INT, MPI_SUM, size - 1, comm);
    if (rank == size - 1 && r != size) ++errors;
    /* a non-blocking collective (adaptx's request path) and a gather-family
     * one (hanx's packed path through the leaders) */
    MPI_Request req;
    int one = 1, n = 0;
    MPI_Iallreduce(&one, &n, 1, MPI_INT, MPI_SUM, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (n != size) ++errors;
    int mine = rank + iter, all[64];
    if (size <= 64) {
        MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, comm);
        for (int q = 0; q < size; ++q)
            if (all[q] != q + iter) ++errors;
    }
}

static void cycle(int rank, int i)
{
    MPI_Comm dup, split, dup2;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    use(dup, i);
    MPI_Comm_split(dup, rank % 2, -rank, &split);
    use(split, i);
    MPI_Comm_dup(split, &dup2);
    use(dup2, i);
    /* free in an order that differs from creation, and vary it */
    if (i % 2) {
        MPI_Comm_free(&dup);
        MPI_Comm_free(&dup2);
        MPI_Comm_free(&split);
    } else {
        MPI_Comm_free(&split);
        MPI_Comm_free(&dup2);
        MPI_Comm_free(&dup);
    }
}

static double heap_bytes(void)
{
    struct mallinfo2 m = mallinfo2();
    return (double)m.uordblks + (double)m.hblkhd;
}

static double rss_bytes(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

/* least-squares slope of y over x */
static double slope(const double *x, const double *y, int n)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int k = 0; k < n; ++k) {
        sx += x[k];
        sy += y[k];
        sxx += x[k] * x[k];
        sxy += x[k] * y[k];
    }
    double d = n * sxx - sx * sx;
    return d != 0 ? (n * sxy - sx * sy) / d : 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = 100, measure = 0;
    double max_slope = -1;
    long leak = 0;
    for (int a = 1; a < argc; ++a) {
        if (!strcmp(argv[a], "--measure")) measure = 1;
        else if (!strcmp(argv[a], "--max-slope") && a + 1 < argc) max_slope = atof(argv[++a]);
        else if (!strcmp(argv[a], "--leak-on-purpose") && a + 1 < argc) leak = atol(argv[++a]);
        else iters = atoi(argv[a]);
    }
    if (max_slope >= 0 || leak) measure = 1;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    enum { NPOINTS = 17 };
    double xs[NPOINTS], heap[NPOINTS], rss[NPOINTS];
    int npoints = 0;
    const int warm = iters / 5;
    const int every = (iters - warm) / (NPOINTS - 1) > 0 ? (iters - warm) / (NPOINTS - 1) : 1;
    for (int i = 0; i < iters; ++i) {
        if (measure && i >= warm && (i - warm) % every == 0 && npoints < NPOINTS) {
            xs[npoints] = i;
            heap[npoints] = heap_bytes();
            rss[npoints] = rss_bytes();
            ++npoints;
        }
        cycle(rank, i);
        if (leak) {
            char *p = malloc((size_t)leak);
            if (p) memset(p, i & 0xff, (size_t)leak); /* never freed: on purpose */
        }
    }

    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int fail = 0;
    if (measure && npoints >= 2) {
        double mine[2] = {slope(xs, heap, npoints), slope(xs, rss, npoints)}, worst[2];
        MPI_Allreduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("comm_lifecycle: leak slope over cycles %d..%d (%d checkpoints, max over %d "
                   "ranks): heap %.1f bytes/cycle, rss %.1f bytes/cycle; rank 0 heap in use "
                   "%.0f -> %.0f bytes\n",
                   warm, (int)xs[npoints - 1], npoints, size, worst[0], worst[1], heap[0],
                   heap[npoints - 1]);
            if (max_slope >= 0 && worst[0] > max_slope) {
                printf("comm_lifecycle: LEAK: heap grows %.1f bytes/cycle, over the limit of "
                       "%.1f\n",
                       worst[0], max_slope);
                fail = 1;
            }
        }
    }
    /* left alive on purpose: MPI_Finalize must clean them up exactly once */
    MPI_Comm keep1, keep2;
    MPI_Comm_dup(MPI_COMM_WORLD, &keep1);
    use(keep1, 7);
    MPI_Comm_split(keep1, 0, rank, &keep2);
    use(keep2, 8);
    use(MPI_COMM_WORLD, 9);
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    if (rank == 0) printf("comm_lifecycle: %d iterations, %d errors\n", iters, total);
    MPI_Finalize();
    if (rank == 0 && total == 0) printf("comm_lifecycle: finalized cleanly\n");
    return total ? 1 : fail ? 2 : 0;
}
