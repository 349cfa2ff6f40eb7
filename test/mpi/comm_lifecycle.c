/*
 * Communicator lifecycle under collx components: create, use and free
 * communicators (dup, split, dup of split) in a loop so that hierarchy
 * sub-communicators are created lazily and freed with their parents many
 * times, then finalize with some communicators -- and their sub-
 * communicators -- still alive (upstream han freed those twice: ompi #13398).
 *
 *   comm_lifecycle [ITERATIONS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

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
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 100;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < iters; ++i) {
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
    /* left alive on purpose: MPI_Finalize must clean them up exactly once */
    MPI_Comm keep1, keep2;
    MPI_Comm_dup(MPI_COMM_WORLD, &keep1);
    use(keep1, 7);
    MPI_Comm_split(keep1, 0, rank, &keep2);
    use(keep2, 8);
    use(MPI_COMM_WORLD, 9);

    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("comm_lifecycle: %d iterations, %d errors\n", iters, total);
    MPI_Finalize();
    if (rank == 0 && total == 0) printf("comm_lifecycle: finalized cleanly\n");
    return total ? 1 : 0;
}
