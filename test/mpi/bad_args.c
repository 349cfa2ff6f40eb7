/*
 * Erroneous collective calls with MPI_ERRORS_RETURN on the communicator:
 * each must return an MPI error code (not crash, not hang), and the
 * communicator must still work afterwards.  Every rank makes the same
 * erroneous calls, so none waits for a partner that bailed out.
 *
 *   bad_args [--self-test]
 *
 * Prints "bad_args: PASS: <case> (<error class>)" or "bad_args: FAIL: ..."
 * on rank 0 and exits non-zero when a case failed.  --self-test adds a
 * valid call that is expected to fail, to prove the checking can fail.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank, size, failures = 0;

static void expect_error(MPI_Comm comm, const char *what, int rc)
{
    int cls = MPI_SUCCESS, any = 0, ok = rc != MPI_SUCCESS;
    if (ok) MPI_Error_class(rc, &cls);
    /* tally with point-to-point-free means: a valid allreduce afterwards */
    MPI_Allreduce(&ok, &any, 1, MPI_INT, MPI_MIN, comm);
    if (rank == 0) {
        char name[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        if (ok) MPI_Error_string(cls, name, &len);
        printf("bad_args: %s: %s (%s)\n", any ? "PASS" : "FAIL", what,
               any ? name : "returned MPI_SUCCESS on some rank");
    }
    if (!any) ++failures;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int self_test = argc > 1 && !strcmp(argv[1], "--self-test");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    /* Open MPI 4.1 raises some argument errors (MPI_IN_PLACE as the receive
     * buffer) on MPI_COMM_WORLD's handler instead of the communicator's */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int buf[64] = {0}, out[64 * 64] = {0}, v = rank;
    MPI_Request req;

    /* a valid hierarchical call first, so that the collx modules set up */
    MPI_Allreduce(&v, out, 1, MPI_INT, MPI_SUM, comm);

    expect_error(comm, "MPI_Bcast root -1", MPI_Bcast(buf, 4, MPI_INT, -1, comm));
    expect_error(comm, "MPI_Bcast root = size", MPI_Bcast(buf, 4, MPI_INT, size, comm));
    expect_error(comm, "MPI_Bcast count -1", MPI_Bcast(buf, -1, MPI_INT, 0, comm));
    expect_error(comm, "MPI_Bcast MPI_DATATYPE_NULL", MPI_Bcast(buf, 4, MPI_DATATYPE_NULL, 0, comm));
    expect_error(comm, "MPI_Ibcast root = size", MPI_Ibcast(buf, 4, MPI_INT, size, comm, &req));
    expect_error(comm, "MPI_Reduce root -1",
                 MPI_Reduce(buf, out, 4, MPI_INT, MPI_SUM, -1, comm));
    expect_error(comm, "MPI_Reduce count -1",
                 MPI_Reduce(buf, out, -1, MPI_INT, MPI_SUM, 0, comm));
    expect_error(comm, "MPI_Reduce MPI_OP_NULL",
                 MPI_Reduce(buf, out, 4, MPI_INT, MPI_OP_NULL, 0, comm));
    expect_error(comm, "MPI_Ireduce root = size",
                 MPI_Ireduce(buf, out, 4, MPI_INT, MPI_SUM, size, comm, &req));
    expect_error(comm, "MPI_Allreduce count -1",
                 MPI_Allreduce(buf, out, -1, MPI_INT, MPI_SUM, comm));
    expect_error(comm, "MPI_Allreduce MPI_DATATYPE_NULL",
                 MPI_Allreduce(buf, out, 4, MPI_DATATYPE_NULL, MPI_SUM, comm));
    expect_error(comm, "MPI_Allreduce MPI_IN_PLACE as receive buffer",
                 MPI_Allreduce(buf, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, comm));
    expect_error(comm, "MPI_Iallreduce MPI_IN_PLACE as receive buffer",
                 MPI_Iallreduce(buf, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, comm, &req));
    expect_error(comm, "MPI_Allgather MPI_IN_PLACE as receive buffer",
                 MPI_Allgather(buf, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, comm));
    expect_error(comm, "MPI_Gather root = size",
                 MPI_Gather(buf, 1, MPI_INT, out, 1, MPI_INT, size, comm));
    expect_error(comm, "MPI_Scatter count -1",
                 MPI_Scatter(out, -1, MPI_INT, buf, -1, MPI_INT, 0, comm));
    expect_error(comm, "MPI_Alltoall MPI_DATATYPE_NULL",
                 MPI_Alltoall(out, 1, MPI_DATATYPE_NULL, out, 1, MPI_INT, comm));
    expect_error(comm, "MPI_Reduce_scatter_block MPI_IN_PLACE as receive buffer",
                 MPI_Reduce_scatter_block(out, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, comm));
    expect_error(comm, "MPI_Scan MPI_OP_NULL", MPI_Scan(buf, out, 1, MPI_INT, MPI_OP_NULL, comm));
    if (self_test)
        expect_error(comm, "self-test: a VALID MPI_Bcast (must FAIL here)",
                     MPI_Bcast(buf, 4, MPI_INT, 0, comm));

    /* the communicator still works */
    int sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, comm);
    int still = sum == size * (size - 1) / 2;
    if (rank == 0) printf("bad_args: %s: communicator works after the errors\n",
                          still ? "PASS" : "FAIL");
    if (!still) ++failures;
    MPI_Comm_free(&comm);
    if (rank == 0) printf("bad_args: %d failure(s)\n", failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
