/*
 * --stderr DIR of the MPI test programs: this rank's stderr (the
 * components' verbose lines among it) to DIR/rank.N from the call on.
 * mpirun forwards the ranks' output in chunks that may end inside a line,
 * so lines of several ranks can be spliced together; tests that count or
 * exclude lines read these files.
 */
#ifndef COLLX_TEST_RANK_STDERR_H
#define COLLX_TEST_RANK_STDERR_H

#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

static inline void rank_stderr_to(const char *dir)
{
    char path[4096];
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    snprintf(path, sizeof path, "%s/rank.%d", dir, rank);
    fflush(stderr);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    close(fd);
}

#endif
