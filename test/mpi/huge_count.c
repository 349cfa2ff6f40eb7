/*
 * Collectives whose total size exceeds 2^31 bytes (the int count stays
 * below 2^31, the bytes do not): MPI_Bcast, and MPI_Allreduce / MPI_Reduce
 * in place (to keep memory at one buffer per rank).  Values are checked at
 * a spread of positions including both ends.
 *
 *   huge_count [ELEMENTS]    (default 600000000 ints = 2.4 GB)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int check(const char *what, const int *b, long n, int (*want)(long), int rank)
{
    const long probes[] = {0, 1, n / 3, n / 2, (1L << 29) - 1, 1L << 29, (1L << 29) + 1, n - 2, n - 1};
    for (unsigned k = 0; k < sizeof(probes) / sizeof(probes[0]); ++k) {
        long i = probes[k];
        if (i < 0 || i >= n) continue;
        if (b[i] != want(i)) {
            fprintf(stderr, "huge_count: %s wrong on rank %d at %ld: %d, expected %d\n", what,
                    rank, i, b[i], want(i));
            return 1;
        }
    }
    return 0;
}

static int size_g;
static int bcast_value(long i) { return (int)(i % 1000003); }
static int sum_value(long i) { return (int)(i % 7) * size_g + size_g * (size_g - 1) / 2; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size_g);
    long n = argc > 1 ? atol(argv[1]) : 600000000L;
    if (n <= 0 || n > 2147483647L) n = 600000000L;
    int *b = malloc((size_t)n * sizeof(int));
    if (!b) {
        fprintf(stderr, "huge_count: cannot allocate %ld bytes\n", n * (long)sizeof(int));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int bad = 0;
    for (long i = 0; i < n; ++i) b[i] = rank == 0 ? bcast_value(i) : -1;
    MPI_Bcast(b, (int)n, MPI_INT, 0, MPI_COMM_WORLD);
    bad |= check("MPI_Bcast", b, n, bcast_value, rank);

    for (long i = 0; i < n; ++i) b[i] = (int)(i % 7) + rank;
    MPI_Allreduce(MPI_IN_PLACE, b, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad |= check("MPI_Allreduce", b, n, sum_value, rank);

    for (long i = 0; i < n; ++i) b[i] = (int)(i % 7) + rank;
    if (rank == 0) MPI_Reduce(MPI_IN_PLACE, b, (int)n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    else MPI_Reduce(b, NULL, (int)n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) bad |= check("MPI_Reduce", b, n, sum_value, rank);

    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("huge_count: %ld ints (%.2f GB) per buffer: %d passed, %d failed\n", n,
               n * 4.0 / 1e9, any ? 0 : 3, any ? 3 : 0);
    free(b);
    MPI_Finalize();
    return any;
}
