/*
 * collx-pingpong: one-way point-to-point times per level, in the samples
 * format `collx-sim fit` reads (docs/simulator.md):
 *
 *   {"node": [[bytes, us], ...], "net": [[bytes, us], ...]}
 *
 * Rank 0 ping-pongs with the first rank on its node ("node") and with the
 * first rank on another node ("net"), found by MPI_Comm_split_type(SHARED);
 * the one-way time is half the fastest round trip, averaged over --iters,
 * of --reps repetitions (the minimum: on a shared machine noise only adds).
 * Other ranks wait in a barrier; run it with 2 ranks per level measured
 * (e.g. 2 nodes x 1 and 1 node x 2) where the cores are few.
 *
 *   collx-pingpong [--max BYTES] [--reps N] [--iters N]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* fastest one-way microseconds between rank 0 and `peer` for `bytes` */
static double pingpong(int me, int peer, char *buf, int bytes, int reps, int iters)
{
    double t[64];
    if (reps > 64) reps = 64;
    for (int r = 0; r < reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; ++i) {
            if (me == 0) {
                MPI_Send(buf, bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (me == peer) {
                MPI_Recv(buf, bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        t[r] = (MPI_Wtime() - t0) / iters / 2 * 1e6;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp);
    return t[0];
}

int main(int argc, char **argv)
{
    int max = 1 << 20, reps = 5, iters = 20;
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--max") && i + 1 < argc) max = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: collx-pingpong [--max BYTES] [--reps N] [--iters N]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (max < 1 || reps < 1 || iters < 1) MPI_Abort(MPI_COMM_WORLD, 2);
    int me, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* peers: the lowest other rank sharing rank 0's node, and the lowest not */
    MPI_Comm shm;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
    int leader = me;
    MPI_Bcast(&leader, 1, MPI_INT, 0, shm); /* world rank of my node's first rank */
    int *lead = malloc(sizeof(int) * (size_t)size);
    MPI_Allgather(&leader, 1, MPI_INT, lead, 1, MPI_INT, MPI_COMM_WORLD);
    int peer[2] = {-1, -1}; /* node, net */
    for (int r = 1; r < size; ++r) {
        int k = lead[r] == lead[0] ? 0 : 1;
        if (peer[k] < 0) peer[k] = r;
    }
    char *buf = calloc((size_t)max, 1);
    const char *name[2] = {"node", "net"};
    if (me == 0) printf("{");
    int first = 1;
    for (int k = 0; k < 2; ++k) {
        if (peer[k] < 0) continue;
        if (me == 0) printf("%s\n  \"%s\": [", first ? "" : ",", name[k]);
        first = 0;
        int n = 0;
        for (int b = 0; b <= max; b = b ? b * 4 : 1) {
            int it = b >= 65536 ? (iters + 3) / 4 : iters;
            double us = pingpong(me, peer[k], buf, b, reps, it);
            if (me == 0) printf("%s[%d, %.3f]", n++ ? ", " : "", b, us);
        }
        if (me == 0) printf("]");
    }
    if (me == 0) printf("\n}\n");
    free(buf);
    free(lead);
    MPI_Comm_free(&shm);
    MPI_Finalize();
    return 0;
}
