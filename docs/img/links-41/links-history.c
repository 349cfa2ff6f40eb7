/* Does a process's collective slow down after it sent one large message
 * between nodes?  (docs/benchmarks.md, "The links' congestion control")
 *
 *   mpicc -O2 -o /tmp/links-history docs/img/links-41/links-history.c
 *   COLLX_CLUSTER_CC=bbr test/cluster/cluster.sh -n 2 -m 2 -- --bind-to core \
 *       --mca coll_hanx_priority 100 /tmp/links-history 2097152
 *
 * Times MPI_Bcast of 2 MiB from rotating roots (whatever module the job
 * selects): 3 windows of 14 calls, then every rank exchanges one message
 * of BYTES (the argument, default 2 MiB) with the rank half the job away
 * (on another node with 2 nodes in blocks), then 9 windows more.  Prints
 * the median microseconds per call before and after. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double windows(int n, int *buf, int count, int size, int *root)
{
    double t[16];
    for (int w = 0; w < n; ++w) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (int k = 0; k < 14; ++k, *root = (*root + 1) % size)
            MPI_Bcast(buf, count, MPI_INT, *root, MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        t[w] = dt / 14 * 1e6;
    }
    qsort(t, (size_t)n, sizeof t[0], cmp);
    return t[n / 2];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, root = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long bytes = argc > 1 ? atol(argv[1]) : 2L << 20;
    const int count = (2 << 20) / 4;
    int *buf = malloc((size_t)count * 4);
    char *out = malloc((size_t)bytes), *in = malloc((size_t)bytes);
    if (!buf || !out || !in) MPI_Abort(MPI_COMM_WORLD, 2);
    memset(buf, 1, (size_t)count * 4);
    memset(out, 1, (size_t)bytes);
    for (int k = 0; k < 4; ++k) MPI_Bcast(buf, count, MPI_INT, k % size, MPI_COMM_WORLD);
    const double before = windows(3, buf, count, size, &root);
    const int peer = (rank + size / 2) % size;
    for (int k = 0; k < 3; ++k)
        MPI_Sendrecv(out, (int)bytes, MPI_BYTE, peer, 1, in, (int)bytes, MPI_BYTE, peer, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const double after = windows(9, buf, count, size, &root);
    if (0 == rank)
        printf("bcast of 2 MiB: %.0f us per call before, %.0f after %ld-byte messages between "
               "ranks %d apart\n", before, after, bytes, size / 2);
    free(buf); free(out); free(in);
    MPI_Finalize();
    return 0;
}
