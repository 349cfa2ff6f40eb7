/*
 * Broadcasts of datatypes whose extent is zero or negative, blocking and
 * not, from every root: the collx core does not take them (its segments
 * step by the extent), so adaptx hands the call to the previous module and
 * hanx runs it without its collx trees; either way the result must be
 * right.  One element per call (a receive of several such elements would
 * overlap itself).
 *
 *   odd_extent [--stderr DIR]   prints "odd_extent: N passed, M failed" on
 *                     rank 0; exits non-zero when a case failed; DIR: each
 *                     rank's stderr to DIR/rank.N (rank_stderr.h)
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "rank_stderr.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, passed = 0, failed = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 2 && !strcmp(argv[1], "--stderr")) rank_stderr_to(argv[2]);
    const MPI_Aint extents[] = {0, -8};
    for (int e = 0; e < 2; ++e) {
        MPI_Datatype t;
        MPI_Type_create_resized(MPI_INT, 0, extents[e], &t);
        MPI_Type_commit(&t);
        for (int nb = 0; nb < 2; ++nb)
            for (int root = 0; root < size; ++root) {
                int x = rank == root ? 1000 * e + 10 * root + nb : -1;
                if (nb) {
                    MPI_Request q;
                    MPI_Ibcast(&x, 1, t, root, MPI_COMM_WORLD, &q);
                    MPI_Wait(&q, MPI_STATUS_IGNORE);
                } else {
                    MPI_Bcast(&x, 1, t, root, MPI_COMM_WORLD);
                }
                int ok = x == 1000 * e + 10 * root + nb, all = 0;
                MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
                if (all) ++passed;
                else ++failed;
                if (!ok)
                    printf("odd_extent: rank %d: %sbcast, extent %ld, root %d: got %d\n", rank,
                           nb ? "i" : "", (long)extents[e], root, x);
            }
        MPI_Type_free(&t);
    }
    if (0 == rank) printf("odd_extent: %d passed, %d failed\n", passed, failed);
    MPI_Finalize();
    return failed != 0;
}
