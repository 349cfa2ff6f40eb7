/*
 * A rank killed in the middle of a loop of collectives: rank VICTIM sends
 * itself SIGKILL at iteration AT, while the others are inside (or about to
 * enter) a broadcast or allreduce that needs it.  mpirun must notice and
 * end the job with a non-zero status instead of leaving the survivors
 * blocked (test/cluster/check-faults.sh times it).
 *
 *   fault_kill [--victim R] [--at N] [--iters M] [--count C] [--delay S]
 *
 * Without a victim (--victim -1) the loop runs to its end and exits 0.  --delay:
 * the victim sleeps S seconds first (a run that surely outlives a short bound).
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, victim = 1, at = 200, iters = 1000000, count = 1024, delay = 0;
    for (int a = 1; a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "--victim")) victim = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--at")) at = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--iters")) iters = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--count")) count = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--delay")) delay = atoi(argv[a + 1]);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double *buf = calloc((size_t)count, sizeof(double));
    double *out = calloc((size_t)count, sizeof(double));
    for (int i = 0; i < iters; ++i) {
        if (rank == victim && i == at) {
            printf("fault_kill: rank %d kills itself at iteration %d\n", rank, i);
            fflush(stdout);
            if (delay > 0) sleep((unsigned)delay);
            raise(SIGKILL);
        }
        MPI_Bcast(buf, count, MPI_DOUBLE, i % size, MPI_COMM_WORLD);
        MPI_Allreduce(buf, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("fault_kill: %d iterations done, nobody killed\n", iters);
    free(buf);
    free(out);
    MPI_Finalize();
    return 0;
}
