#include "staging.hpp"
#include "collx/gpu_dtype.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#ifndef COLLX_GPU_CUDA_LIBDIR
#define COLLX_GPU_CUDA_LIBDIR ""
#endif

namespace collx_gpu {

// ------------------------------------------------------------ fake backend
// "Device" memory is host memory registered by the test; the pack/unpack run
// on the CPU, synchronously, through the same calls the CUDA backend serves.
namespace {
std::mutex fake_mu;
std::map<uintptr_t, size_t> fake_ranges;

int fake_is_device(const void *p) {
    uintptr_t a = uintptr_t(p);
    std::lock_guard<std::mutex> g(fake_mu);
    auto it = fake_ranges.upper_bound(a);
    if (it == fake_ranges.begin()) return 0;
    --it;
    return a < it->first + it->second;
}
void *fake_host_alloc(size_t n) { return std::malloc(n ? n : 1); }
void fake_host_free(void *p) { std::free(p); }
int fake_stream_token;
void *fake_stream_get() { return &fake_stream_token; }
void fake_stream_put(void *) {}
int fake_pack(const collx_gpu_desc_t *d, const void *buf, int64_t count, int64_t begin, int64_t end, void *dst,
              void *) {
    pack_range(*static_cast<const Form *>(d->form), static_cast<const char *>(buf), count, begin, end,
               static_cast<char *>(dst));
    return 0;
}
int fake_unpack(const collx_gpu_desc_t *d, void *buf, int64_t count, int64_t begin, int64_t end, const void *src,
                void *) {
    unpack_range(*static_cast<const Form *>(d->form), static_cast<char *>(buf), count, begin, end,
                 static_cast<const char *>(src));
    return 0;
}
int fake_query(void *) { return 1; }
int fake_sync(void *) { return 0; }
int fake_copy(void *dst, const void *src, size_t n) {
    std::memmove(dst, src, n);
    return 0;
}
const char *fake_error() { return "fake backend: no error"; }
int fake_register_(void *p, size_t n);
void *fake_dev_alloc(size_t n) {
    void *p = std::malloc(n ? n : 1);
    if (p) fake_register_(p, n ? n : 1);
    return p;
}
void fake_unregister_(void *p);
void fake_dev_free(void *p) {
    fake_unregister_(p);
    std::free(p);
}

const collx_gpu_backend_t fake = {"fake",         fake_is_device, fake_host_alloc, fake_host_free,
                                  fake_stream_get, fake_stream_put, fake_pack,      fake_unpack,
                                  fake_query,      fake_sync,       fake_copy,      fake_error,
                                  fake_dev_alloc,  fake_dev_free};

std::mutex be_mu;
const collx_gpu_backend_t *current = nullptr;
bool chosen = false;

const collx_gpu_backend_t *load_cuda() {
    std::vector<std::string> names;
    if (const char *e = std::getenv("COLLX_GPU_CUDA_LIB")) names.push_back(e);
    if (*COLLX_GPU_CUDA_LIBDIR) names.push_back(std::string(COLLX_GPU_CUDA_LIBDIR) + "/libcollx_gpu_cuda.so");
    names.push_back("libcollx_gpu_cuda.so");
    for (auto &n : names) {
        void *h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!h) continue;
        auto fn = reinterpret_cast<collx_gpu_cuda_backend_fn>(dlsym(h, "collx_gpu_cuda_backend"));
        const collx_gpu_backend_t *b = fn ? fn() : nullptr;
        if (b) return b;
        dlclose(h);
    }
    return nullptr;
}
} // namespace

const collx_gpu_backend_t *fake_backend() { return &fake; }

int select_backend(const char *name) {
    std::string n = name ? name : "auto";
    const collx_gpu_backend_t *b = nullptr;
    if (n == "none") b = nullptr;
    else if (n == "fake") b = &fake;
    else if (n == "cuda" || n == "auto") {
        b = load_cuda();
        if (!b && n == "cuda") {
            set_error("collx_gpu: CUDA backend requested but libcollx_gpu_cuda.so did not load or found no GPU "
                      "(set COLLX_GPU_CUDA_LIB to its path)");
            return COLLX_GPU_ERR_BACKEND;
        }
    } else {
        set_error("collx_gpu: unknown backend '" + n + "' (auto, cuda, fake, none)");
        return COLLX_GPU_ERR_ARG;
    }
    std::lock_guard<std::mutex> g(be_mu);
    current = b;
    chosen = true;
    return COLLX_GPU_SUCCESS;
}

const collx_gpu_backend_t *backend() {
    if (__builtin_expect(chosen, 1)) return current;
    const char *e = std::getenv("COLLX_GPU_BACKEND");
    if (select_backend(e ? e : "auto") != COLLX_GPU_SUCCESS) select_backend("none");
    return current;
}

namespace {
int fake_register_(void *p, size_t n) {
    std::lock_guard<std::mutex> g(fake_mu);
    fake_ranges[uintptr_t(p)] = n;
    return 0;
}
void fake_unregister_(void *p) {
    std::lock_guard<std::mutex> g(fake_mu);
    fake_ranges.erase(uintptr_t(p));
}
} // namespace

int fake_register(void *p, size_t n) {
    std::lock_guard<std::mutex> g(fake_mu);
    fake_ranges[uintptr_t(p)] = n;
    return 0;
}
int fake_unregister(void *p) {
    std::lock_guard<std::mutex> g(fake_mu);
    return fake_ranges.erase(uintptr_t(p)) ? 0 : COLLX_GPU_ERR_ARG;
}

// ------------------------------------------------------------ parameters
static int64_t env_i64(const char *name, int64_t dflt, int64_t lo, int64_t hi) {
    const char *e = std::getenv(name);
    if (!e || !*e) return dflt;
    long long v = std::strtoll(e, nullptr, 0);
    return std::min<int64_t>(hi, std::max<int64_t>(lo, v));
}
static int64_t chunk_bytes() {
    static int64_t c = env_i64("COLLX_GPU_CHUNK_BYTES", 1 << 20, 64, int64_t(1) << 30) & ~int64_t(15);
    return c;
}
static int nstages() {
    static int n = int(env_i64("COLLX_GPU_STAGES", 2, 1, 8));
    return n;
}

// ------------------------------------------------------------ transfers
// Wire format: one MPI message of the N packed bytes on (comm, tag), i.e.
// exactly what a plain MPI_Send/MPI_Recv of the same type map moves.  So a
// staged peer interoperates with a host-buffer peer for every size, and no
// tags are reserved.  The pipelining is on the device side: the message is
// packed (send) or unpacked (recv) in chunks of C bytes, one chunk per stage
// and stream, so that the device work of chunk i+1 overlaps the copy of
// chunk i.
enum StageState { FREE, DEV };
struct Stage {
    void *stream = nullptr;
    StageState st = FREE;
};

struct Xfer {
    bool is_send;
    FormP f;
    const collx_gpu_backend_t *be;
    char *buf;
    int64_t count, N = 0, cap = 0, C, nchunks = 0;
    MPI_Comm comm;
    int peer, tag;
    std::vector<Stage> st;
    char *host = nullptr;        // the whole packed message
    bool host_pinned = false;    // from the pinned pool (size C) or malloc
    MPI_Datatype wire = MPI_BYTE;  // MPI_BYTE, or a derived byte type above INT_MAX bytes
    MPI_Request req = MPI_REQUEST_NULL;
    int64_t next = 0;            // next chunk to start on the device
    int64_t finished = 0;        // chunks done on the device
    int phase = 0;               // send: 0 packing, 1 on the wire; recv: 0 on the wire, 1 unpacking
    bool queued = false;         // send: holds a slot in its (comm, peer, tag) queue
    int src = MPI_ANY_SOURCE, rtag = MPI_ANY_TAG;
    int err = 0;
    bool done = false;
};

namespace {
std::recursive_mutex mu;
std::vector<Xfer *> active;  // creation order
using Key = std::tuple<MPI_Comm, int, int>;  // comm, dest, tag of a send
std::map<Key, std::deque<Xfer *>> queues;

// pinned staging buffers of chunk size, pooled per backend
std::vector<std::pair<const collx_gpu_backend_t *, char *>> pool;
char *buf_get(const collx_gpu_backend_t *be, size_t n) {
    for (size_t i = 0; i < pool.size(); ++i)
        if (pool[i].first == be) {
            char *p = pool[i].second;
            pool.erase(pool.begin() + i);
            return p;
        }
    return static_cast<char *>(be->host_alloc(n));
}
void buf_put(const collx_gpu_backend_t *be, char *p) {
    if (pool.size() < 16) pool.push_back({be, p});
    else be->host_free(p);
}

// Sends to one (comm, dest, tag) reach MPI in program order (MPI's
// non-overtaking rule): each waits for the one before it to be posted.
Key key_of(Xfer *x) { return Key{x->comm, x->peer, x->tag}; }
bool at_head(Xfer *x) {
    auto &q = queues[key_of(x)];
    return !q.empty() && q.front() == x;
}
void enqueue(Xfer *x) {
    queues[key_of(x)].push_back(x);
    x->queued = true;
}
void dequeue(Xfer *x) {
    if (!x->queued) return;
    auto it = queues.find(key_of(x));
    if (it != queues.end()) {
        auto &q = it->second;
        q.erase(std::remove(q.begin(), q.end(), x), q.end());
        if (q.empty()) queues.erase(it);
    }
    x->queued = false;
}

void fail(Xfer *x, int err, const std::string &msg) {
    set_error(msg);
    x->err = err;
    x->done = true;
    dequeue(x);
}

int64_t chunk_lo(Xfer *x, int64_t i) { return i * x->C; }
int64_t chunk_hi(Xfer *x, int64_t i) { return std::min(x->N, (i + 1) * x->C); }

// a message of n bytes as (count, type): MPI_BYTE up to INT_MAX, else a
// struct of 1 GiB blocks plus the rest (freed by the caller)
int wire_type(int64_t n, MPI_Datatype *t, int *cnt) {
    if (n <= INT32_MAX) {
        *t = MPI_BYTE;
        *cnt = int(n);
        return MPI_SUCCESS;
    }
    const int64_t G = int64_t(1) << 30;
    MPI_Datatype g;
    PMPI_Type_contiguous(int(G), MPI_BYTE, &g);
    int bl[2] = {int(n / G), int(n % G)};
    MPI_Aint dp[2] = {0, MPI_Aint(n / G * G)};
    MPI_Datatype ty[2] = {g, MPI_BYTE};
    int rc = PMPI_Type_create_struct(bl[1] ? 2 : 1, bl, dp, ty, t);
    if (rc == MPI_SUCCESS) rc = PMPI_Type_commit(t);
    PMPI_Type_free(&g);
    *cnt = 1;
    return rc;
}

// the request completed?  An MPI error (e.g. a truncated receive under
// MPI_ERRORS_RETURN) fails the transfer.
bool req_done(Xfer *x, MPI_Status *s) {
    int flag = 0;
    int rc = PMPI_Test(&x->req, &flag, s);
    if (rc != MPI_SUCCESS) {
        int cls = MPI_ERR_OTHER;
        PMPI_Error_class(rc, &cls);
        fail(x, cls == MPI_ERR_TRUNCATE ? COLLX_GPU_ERR_TRUNCATE : COLLX_GPU_ERR_MPI,
             std::string("collx_gpu: staged ") + (x->is_send ? "send" : "receive") + " failed in MPI" +
                 (cls == MPI_ERR_TRUNCATE ? " (message longer than the receive buffer)" : ""));
        return false;
    }
    return flag;
}

void finish(Xfer *x) {
    x->done = true;
    dequeue(x);
}

// Device side of the pipeline: retire finished chunks, start new ones.
// Returns false on a backend error (x failed).
bool device_steps(Xfer *x) {
    for (bool moved = true; moved;) {
        moved = false;
        for (auto &s : x->st) {
            if (s.st == DEV) {
                int q = x->be->query(s.stream);
                if (q < 0) {
                    fail(x, COLLX_GPU_ERR_BACKEND, std::string("collx_gpu: device ") + (x->is_send ? "pack" : "unpack") +
                                                       " failed: " + x->be->error());
                    return false;
                }
                if (q) {
                    s.st = FREE;
                    ++x->finished;
                    moved = true;
                }
            }
            if (s.st == FREE && x->next < x->nchunks) {
                int64_t i = x->next++, lo = chunk_lo(x, i), hi = chunk_hi(x, i);
                int rc = x->is_send ? x->be->pack(&x->f->desc, x->buf, x->count, lo, hi, x->host + lo, s.stream)
                                    : x->be->unpack(&x->f->desc, x->buf, x->count, lo, hi, x->host + lo, s.stream);
                if (rc) {
                    fail(x, COLLX_GPU_ERR_BACKEND, std::string("collx_gpu: device ") + (x->is_send ? "pack" : "unpack") +
                                                       " failed: " + x->be->error());
                    return false;
                }
                s.st = DEV;
                moved = true;
            }
        }
    }
    return true;
}

void step_send(Xfer *x) {
    if (x->phase == 0) {
        if (!device_steps(x)) return;
        if (x->finished < x->nchunks || !at_head(x)) return;
        int cnt;
        int rc = wire_type(x->N, &x->wire, &cnt);
        if (rc == MPI_SUCCESS) rc = PMPI_Isend(x->host, cnt, x->wire, x->peer, x->tag, x->comm, &x->req);
        if (rc != MPI_SUCCESS) return fail(x, COLLX_GPU_ERR_MPI, "collx_gpu: MPI_Isend of the packed message failed");
        dequeue(x);  // posted: the next send to this (comm, dest, tag) may go
        x->phase = 1;
    }
    if (req_done(x, MPI_STATUS_IGNORE)) finish(x);
}

void step_recv(Xfer *x) {
    if (x->phase == 0) {
        MPI_Status st;
        if (!req_done(x, &st)) return;
        MPI_Count n = 0;
        PMPI_Get_elements_x(&st, x->wire, &n);
        x->src = st.MPI_SOURCE;
        x->rtag = st.MPI_TAG;
        x->N = n;
        x->nchunks = (x->N + x->C - 1) / x->C;
        x->phase = 1;
    }
    if (!device_steps(x)) return;
    if (x->finished == x->nchunks) finish(x);
}

void step(Xfer *x) {
    if (x->done) return;
    if (x->is_send) step_send(x);
    else step_recv(x);
}
} // namespace

int xfer_start(bool is_send, void *buf, int64_t count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
               Xfer **out) {
    const collx_gpu_backend_t *be = backend();
    if (!be) {
        set_error("collx_gpu: no device backend for a staged transfer");
        return COLLX_GPU_ERR_BACKEND;
    }
    FormP f;
    int rc = get_form(type, f);
    if (rc) return rc;
    if (count < 0) {
        set_error("collx_gpu: negative count");
        return COLLX_GPU_ERR_ARG;
    }
    std::lock_guard<std::recursive_mutex> g(mu);
    Xfer *x = new Xfer();
    x->is_send = is_send;
    x->f = f;
    x->be = be;
    x->buf = static_cast<char *>(buf);
    x->count = count;
    x->comm = comm;
    x->peer = peer;
    x->tag = tag;
    x->C = chunk_bytes();
    int64_t total = count * f->size;
    // the whole message in host memory: a pinned staging buffer when it
    // fits one chunk, else plain memory (pages only touched as bytes arrive)
    if (total <= x->C) {
        x->host = buf_get(be, size_t(x->C));
        x->host_pinned = true;
    } else {
        x->host = static_cast<char *>(std::malloc(size_t(total)));
    }
    x->st.resize(size_t(std::min<int64_t>(nstages(), std::max<int64_t>(1, (total + x->C - 1) / x->C))));
    bool ok = x->host != nullptr;
    for (auto &s : x->st) {
        s.stream = be->stream_get();
        ok = ok && s.stream;
    }
    if (!ok) {
        xfer_free(x);
        set_error("collx_gpu: cannot allocate host staging memory or streams");
        return COLLX_GPU_ERR_NOMEM;
    }
    if (is_send) {
        x->N = total;
        x->nchunks = (total + x->C - 1) / x->C;
        enqueue(x);
    } else {
        x->cap = total;
        x->src = peer;
        x->rtag = tag;
        // posted now, so that MPI matches it in program order; it accepts
        // any message of up to cap bytes from a staged or a plain sender
        int cnt;
        rc = wire_type(total, &x->wire, &cnt);
        if (rc == MPI_SUCCESS) rc = PMPI_Irecv(x->host, cnt, x->wire, peer, tag, comm, &x->req);
        if (rc != MPI_SUCCESS) {
            xfer_free(x);
            set_error("collx_gpu: MPI_Irecv failed (bad source, tag or communicator?)");
            return COLLX_GPU_ERR_MPI;
        }
    }
    active.push_back(x);
    step(x);
    *out = x;
    return COLLX_GPU_SUCCESS;
}

bool xfer_done(const Xfer *x) { return x->done; }
int xfer_error(const Xfer *x) { return x->err; }
void xfer_status(const Xfer *x, MPI_Status *st) {
    if (!st || st == MPI_STATUS_IGNORE) return;
    st->MPI_SOURCE = x->is_send ? x->peer : x->src;
    st->MPI_TAG = x->is_send ? x->tag : x->rtag;
    st->MPI_ERROR = x->err ? (x->err == COLLX_GPU_ERR_TRUNCATE ? MPI_ERR_TRUNCATE : MPI_ERR_OTHER) : MPI_SUCCESS;
    MPI_Status_set_elements_x(st, MPI_BYTE, x->is_send ? 0 : x->N);
    MPI_Status_set_cancelled(st, 0);
}

void xfer_free(Xfer *x) {
    std::lock_guard<std::recursive_mutex> g(mu);
    if (x->req != MPI_REQUEST_NULL) {  // only after an error
        PMPI_Cancel(&x->req);
        PMPI_Request_free(&x->req);
    }
    for (auto &s : x->st)
        if (s.stream) {
            x->be->sync(s.stream);
            x->be->stream_put(s.stream);
        }
    if (x->host) {
        if (x->host_pinned) buf_put(x->be, x->host);
        else std::free(x->host);
    }
    if (x->wire != MPI_BYTE) PMPI_Type_free(&x->wire);
    dequeue(x);
    active.erase(std::remove(active.begin(), active.end(), x), active.end());
    delete x;
}

void progress_all() {
    std::lock_guard<std::recursive_mutex> g(mu);
    std::vector<Xfer *> now = active;
    for (Xfer *x : now) step(x);
}

int xfer_wait(Xfer *x, MPI_Status *st) {
    while (!x->done) progress_all();
    int err = x->err;
    xfer_status(x, st);
    xfer_free(x);
    return err;
}

// ------------------------------------------------------------ mirrors
void *mirror_alloc(const FormP &f, int64_t count, void **alloc) {
    if (count <= 0) {
        *alloc = std::malloc(1);
        return *alloc;
    }
    int64_t a = f->true_lb, b = f->true_lb + f->true_extent;
    int64_t last = (count - 1) * f->extent;
    int64_t lo = std::min(a, a + last), hi = std::max(b, b + last);
    *alloc = std::malloc(size_t(hi - lo) + 1);
    return static_cast<char *>(*alloc) - lo;
}

int device_to_mirror(const FormP &f, const void *dev, int64_t count, void *mirror) {
    const collx_gpu_backend_t *be = backend();
    int64_t n = count * f->size;
    if (n == 0) return 0;
    char *tmp = static_cast<char *>(be->host_alloc(size_t(n)));
    void *s = be->stream_get();
    int rc = be->pack(&f->desc, dev, count, 0, n, tmp, s);
    if (!rc) rc = be->sync(s);
    if (!rc) unpack_range(*f, static_cast<char *>(mirror), count, 0, n, tmp);
    be->stream_put(s);
    be->host_free(tmp);
    if (rc) set_error(std::string("collx_gpu: device pack failed: ") + be->error());
    return rc ? COLLX_GPU_ERR_BACKEND : 0;
}

int mirror_to_device(const FormP &f, const void *mirror, int64_t count, void *dev) {
    const collx_gpu_backend_t *be = backend();
    int64_t n = count * f->size;
    if (n == 0) return 0;
    char *tmp = static_cast<char *>(be->host_alloc(size_t(n)));
    pack_range(*f, static_cast<const char *>(mirror), count, 0, n, tmp);
    void *s = be->stream_get();
    int rc = be->unpack(&f->desc, dev, count, 0, n, tmp, s);
    if (!rc) rc = be->sync(s);
    be->stream_put(s);
    be->host_free(tmp);
    if (rc) set_error(std::string("collx_gpu: device unpack failed: ") + be->error());
    return rc ? COLLX_GPU_ERR_BACKEND : 0;
}

} // namespace collx_gpu
