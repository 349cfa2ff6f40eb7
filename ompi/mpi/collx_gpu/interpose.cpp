// PMPI interposer: device buffers with any datatype go through the staged,
// pipelined path of the engine on a CUDA-unaware MPI; host buffers go
// straight to PMPI (one backend check).  Use with LD_PRELOAD, or link
// before -lmpi.  Covered: Send, Recv, Isend, Irecv (their requests are
// generalised requests completed by our Wait/Test family), Pack, Unpack,
// Bcast, Reduce, Allreduce (the collectives of coll/hanx and coll/adaptx).
#include "canonical.hpp"
#include "collx/gpu_dtype.h"
#include "staging.hpp"

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

using namespace collx_gpu;

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// device buffer?  (no backend: false at once)
bool dev(const void *buf, MPI_Datatype type) {
    if (!backend() || !buf || buf == MPI_IN_PLACE || buf == MPI_BOTTOM) return false;
    FormP f;
    if (get_form(type, f)) return on_device(buf);
    return on_device(buf, *f);
}

int to_mpi(int rc, MPI_Comm comm, const char *fn) {
    if (!rc) return MPI_SUCCESS;
    std::fprintf(stderr, "collx_gpu interposer: %s: %s\n", fn, last_error().c_str());
    int code = rc == COLLX_GPU_ERR_TRUNCATE ? MPI_ERR_TRUNCATE
             : rc == COLLX_GPU_ERR_ARG ? MPI_ERR_ARG
             : rc == COLLX_GPU_ERR_UNCOMMITTED || rc == COLLX_GPU_ERR_UNSUPPORTED ? MPI_ERR_TYPE
             : MPI_ERR_OTHER;
    return PMPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code), code;
}

// our generalised requests and their transfers
std::mutex mu;
std::unordered_map<MPI_Request, Xfer *> reqs;
struct GState {
    Xfer *x;
    MPI_Status st;
    bool completed = false;
};
std::unordered_map<MPI_Request, GState *> gstates;

int g_query(void *extra, MPI_Status *st) {
    *st = static_cast<GState *>(extra)->st;
    return MPI_SUCCESS;
}
int g_free(void *extra) {
    delete static_cast<GState *>(extra);
    return MPI_SUCCESS;
}
int g_cancel(void *, int) { return MPI_SUCCESS; }

int start(bool send, void *buf, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm, MPI_Request *req) {
    Xfer *x;
    int rc = xfer_start(send, buf, count, type, peer, tag, comm, &x);
    if (rc) return to_mpi(rc, comm, send ? "MPI_Isend" : "MPI_Irecv");
    auto *g = new GState{x, {}};
    PMPI_Grequest_start(g_query, g_free, g_cancel, g, req);
    std::lock_guard<std::mutex> l(mu);
    gstates[*req] = g;
    return MPI_SUCCESS;
}

// progress every staged transfer; complete the generalised requests whose
// transfer finished (their status is kept for the query callback)
void advance() {
    progress_all();
    std::lock_guard<std::mutex> l(mu);
    for (auto it = gstates.begin(); it != gstates.end();) {
        GState *g = it->second;
        if (!g->completed && xfer_done(g->x)) {
            xfer_status(g->x, &g->st);
            xfer_free(g->x);
            g->x = nullptr;
            g->completed = true;
            PMPI_Grequest_complete(it->first);
            it = gstates.erase(it);
        } else {
            ++it;
        }
    }
}
bool ours_pending(int n, const MPI_Request *r) {
    std::lock_guard<std::mutex> l(mu);
    if (gstates.empty()) return false;
    for (int i = 0; i < n; ++i)
        if (r[i] != MPI_REQUEST_NULL && gstates.count(r[i])) return true;
    return false;
}
bool any_staged() {
    std::lock_guard<std::mutex> l(mu);
    return !gstates.empty();
}

} // namespace

EXPORT int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    if (!dev(buf, type)) return PMPI_Send(buf, count, type, dest, tag, comm);
    Xfer *x;
    int rc = xfer_start(true, const_cast<void *>(buf), count, type, dest, tag, comm, &x);
    if (!rc) rc = xfer_wait(x, MPI_STATUS_IGNORE);
    return to_mpi(rc, comm, "MPI_Send");
}

EXPORT int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status) {
    if (!dev(buf, type)) return PMPI_Recv(buf, count, type, source, tag, comm, status);
    Xfer *x;
    int rc = xfer_start(false, buf, count, type, source, tag, comm, &x);
    if (!rc) rc = xfer_wait(x, status);
    return to_mpi(rc, comm, "MPI_Recv");
}

EXPORT int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    if (!dev(buf, type)) return PMPI_Isend(buf, count, type, dest, tag, comm, req);
    return start(true, const_cast<void *>(buf), count, type, dest, tag, comm, req);
}

EXPORT int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *req) {
    if (!dev(buf, type)) return PMPI_Irecv(buf, count, type, source, tag, comm, req);
    return start(false, buf, count, type, source, tag, comm, req);
}

// ---- completion: drive staged transfers, never block inside PMPI on one
EXPORT int MPI_Wait(MPI_Request *r, MPI_Status *st) {
    while (ours_pending(1, r)) advance();
    return PMPI_Wait(r, st);
}
EXPORT int MPI_Waitall(int n, MPI_Request r[], MPI_Status st[]) {
    while (ours_pending(n, r)) advance();
    return PMPI_Waitall(n, r, st);
}
EXPORT int MPI_Test(MPI_Request *r, int *flag, MPI_Status *st) {
    if (any_staged()) advance();
    return PMPI_Test(r, flag, st);
}
EXPORT int MPI_Testall(int n, MPI_Request r[], int *flag, MPI_Status st[]) {
    if (any_staged()) advance();
    return PMPI_Testall(n, r, flag, st);
}
EXPORT int MPI_Waitany(int n, MPI_Request r[], int *idx, MPI_Status *st) {
    if (!ours_pending(n, r)) return PMPI_Waitany(n, r, idx, st);
    for (;;) {
        advance();
        int flag = 0;
        int rc = PMPI_Testany(n, r, idx, &flag, st);
        if (rc != MPI_SUCCESS || flag) return rc;
    }
}
EXPORT int MPI_Testany(int n, MPI_Request r[], int *idx, int *flag, MPI_Status *st) {
    if (any_staged()) advance();
    return PMPI_Testany(n, r, idx, flag, st);
}
EXPORT int MPI_Waitsome(int n, MPI_Request r[], int *outc, int idx[], MPI_Status st[]) {
    if (!ours_pending(n, r)) return PMPI_Waitsome(n, r, outc, idx, st);
    for (;;) {
        advance();
        int rc = PMPI_Testsome(n, r, outc, idx, st);
        if (rc != MPI_SUCCESS || *outc != 0) return rc;
    }
}
EXPORT int MPI_Testsome(int n, MPI_Request r[], int *outc, int idx[], MPI_Status st[]) {
    if (any_staged()) advance();
    return PMPI_Testsome(n, r, outc, idx, st);
}

// ---- pack / unpack
EXPORT int MPI_Pack(const void *in, int incount, MPI_Datatype type, void *out, int outsize, int *position, MPI_Comm comm) {
    if (!backend() || (!dev(in, type) && !on_device(out))) return PMPI_Pack(in, incount, type, out, outsize, position, comm);
    int64_t pos = *position;
    int rc = collx_gpu_pack(in, incount, type, out, outsize, &pos);
    if (!rc) *position = int(pos);
    return to_mpi(rc, comm, "MPI_Pack");
}
EXPORT int MPI_Unpack(const void *in, int insize, int *position, void *out, int outcount, MPI_Datatype type, MPI_Comm comm) {
    if (!backend() || (!dev(out, type) && !on_device(in))) return PMPI_Unpack(in, insize, position, out, outcount, type, comm);
    int64_t pos = *position;
    int rc = collx_gpu_unpack(in, insize, &pos, out, outcount, type);
    if (!rc) *position = int(pos);
    return to_mpi(rc, comm, "MPI_Unpack");
}

// ---- collectives: through a host mirror laid out like the device buffer,
// so the collective sees the caller's own (count, datatype)
namespace {
struct Mirror {
    void *base = nullptr, *alloc = nullptr;
    ~Mirror() { std::free(alloc); }
};
int mirror_in(MPI_Datatype type, const void *d, int count, Mirror &m, bool copy_in) {
    FormP f;
    int rc = get_form(type, f);
    if (rc) return rc;
    m.base = mirror_alloc(f, count, &m.alloc);
    return copy_in ? device_to_mirror(f, d, count, m.base) : 0;
}
int mirror_out(MPI_Datatype type, const Mirror &m, int count, void *d) {
    FormP f;
    int rc = get_form(type, f);
    return rc ? rc : mirror_to_device(f, m.base, count, d);
}
} // namespace

EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
    if (!dev(buf, type)) return PMPI_Bcast(buf, count, type, root, comm);
    int rank;
    PMPI_Comm_rank(comm, &rank);
    Mirror m;
    int rc = mirror_in(type, buf, count, m, rank == root);
    if (rc) return to_mpi(rc, comm, "MPI_Bcast");
    int mrc = PMPI_Bcast(m.base, count, type, root, comm);
    if (mrc != MPI_SUCCESS) return mrc;
    if (rank != root) rc = mirror_out(type, m, count, buf);
    return to_mpi(rc, comm, "MPI_Bcast");
}

// A reduction with device buffers: host mirrors of the send buffer (or, in
// place, of the receive buffer's input) and of the receive buffer, the
// host call, the result copied back.  ds/dr: which side is on the device.
template <class Call>
static int mirrored_reduction(const void *sbuf, void *rbuf, int count, MPI_Datatype type, bool ds,
                              bool dr, MPI_Comm comm, const char *what, Call call) {
    Mirror ms, mr;
    int rc = 0;
    const void *s = sbuf;
    void *r = rbuf;
    if (sbuf == MPI_IN_PLACE) {
        if (dr && !(rc = mirror_in(type, rbuf, count, mr, true))) r = mr.base;
    } else {
        if (ds && !(rc = mirror_in(type, sbuf, count, ms, true))) s = ms.base;
        if (!rc && dr && !(rc = mirror_in(type, rbuf, count, mr, false))) r = mr.base;
    }
    if (rc) return to_mpi(rc, comm, what);
    int mrc = call(s, r);
    if (mrc != MPI_SUCCESS) return mrc;
    if (dr) rc = mirror_out(type, mr, count, rbuf);
    return to_mpi(rc, comm, what);
}

EXPORT int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    bool ds = dev(sbuf, type), dr = dev(rbuf, type);
    if (!ds && !dr) return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
    return mirrored_reduction(sbuf, rbuf, count, type, ds, dr, comm, "MPI_Allreduce",
                              [&](const void *s, void *r) { return PMPI_Allreduce(s, r, count, type, op, comm); });
}

EXPORT int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
    int rank;
    PMPI_Comm_rank(comm, &rank);
    bool ds = dev(sbuf, type), dr = rank == root && dev(rbuf, type);
    if (!ds && !dr) return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
    return mirrored_reduction(sbuf, rbuf, count, type, ds, dr, comm, "MPI_Reduce",
                              [&](const void *s, void *r) { return PMPI_Reduce(s, r, count, type, op, root, comm); });
}
