#include "staging.hpp"
#include "collx/gpu_dtype.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
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
static int shadow_tag(int tag) { return (1 << 30) | (tag & ((1 << 30) - 1)); }

// ------------------------------------------------------------ transfers
enum StageState { FREE, DEV, NET };
struct Stage {
    char *host = nullptr;
    void *stream = nullptr;
    StageState st = FREE;
    int64_t chunk = -1;
    MPI_Request req = MPI_REQUEST_NULL;
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
    int64_t next = 0;        // next chunk to pack (send) / to receive (recv)
    int64_t next_net = 0;    // send: next chunk to put on the wire (in order)
    int64_t finished = 0;
    int phase = 0;           // recv: 0 chunk 0, 1 header, 2 pipeline; send: 0 queued, 1 running
    bool queued = false;     // holds a slot in the shadow-tag queue
    int64_t hdr = 0;
    MPI_Request hreq = MPI_REQUEST_NULL;
    bool hdr_posted = false;
    int src = MPI_ANY_SOURCE, rtag = MPI_ANY_TAG;
    int err = 0;
    bool done = false;
};

namespace {
std::recursive_mutex mu;
std::vector<Xfer *> active;  // creation order
using Key = std::tuple<MPI_Comm, int, int, bool>;  // comm, peer, shadow tag, send side
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

Key key_of(Xfer *x) { return Key{x->comm, x->is_send ? x->peer : x->src, shadow_tag(x->is_send ? x->tag : x->rtag), x->is_send}; }
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
}

int64_t chunk_lo(Xfer *x, int64_t i) { return i * x->C; }
int64_t chunk_hi(Xfer *x, int64_t i) { return std::min(x->N, (i + 1) * x->C); }

bool mpi_test(MPI_Request *r, MPI_Status *s = MPI_STATUS_IGNORE) {
    int flag = 0;
    PMPI_Test(r, &flag, s);
    return flag;
}

void finish(Xfer *x) {
    x->done = true;
    dequeue(x);
}

void step_send(Xfer *x) {
    if (x->phase == 0) {
        if (!at_head(x)) return;
        x->phase = 1;
    }
    // hand packed chunks to MPI in order; recycle stages whose send completed
    for (bool moved = true; moved;) {
        moved = false;
        for (auto &s : x->st) {
            if (s.st == DEV && s.chunk == x->next_net) {
                int q = x->be->query(s.stream);
                if (q < 0) return fail(x, COLLX_GPU_ERR_BACKEND, std::string("collx_gpu: device pack failed: ") + x->be->error());
                if (!q) continue;
                int64_t n = chunk_hi(x, s.chunk) - chunk_lo(x, s.chunk);
                if (s.chunk == 0) {
                    PMPI_Isend(s.host, int(n), MPI_BYTE, x->peer, x->tag, x->comm, &s.req);
                    if (x->nchunks > 1) {
                        x->hdr = x->N;
                        PMPI_Isend(&x->hdr, 8, MPI_BYTE, x->peer, shadow_tag(x->tag), x->comm, &x->hreq);
                    }
                } else {
                    PMPI_Isend(s.host, int(n), MPI_BYTE, x->peer, shadow_tag(x->tag), x->comm, &s.req);
                }
                s.st = NET;
                ++x->next_net;
                moved = true;
            } else if (s.st == NET && mpi_test(&s.req)) {
                s.st = FREE;
                ++x->finished;
                moved = true;
            }
        }
        for (auto &s : x->st) {
            if (s.st != FREE || x->next >= x->nchunks) continue;
            s.chunk = x->next++;
            int rc = x->be->pack(&x->f->desc, x->buf, x->count, chunk_lo(x, s.chunk), chunk_hi(x, s.chunk), s.host,
                                 s.stream);
            if (rc) return fail(x, COLLX_GPU_ERR_BACKEND, std::string("collx_gpu: device pack failed: ") + x->be->error());
            s.st = DEV;
            moved = true;
        }
    }
    if (x->finished == x->nchunks && (x->hreq == MPI_REQUEST_NULL || mpi_test(&x->hreq))) finish(x);
}

void start_unpack(Xfer *x, Stage &s) {
    int rc = x->be->unpack(&x->f->desc, x->buf, x->count, chunk_lo(x, s.chunk), chunk_hi(x, s.chunk), s.host,
                           s.stream);
    if (rc) return fail(x, COLLX_GPU_ERR_BACKEND, std::string("collx_gpu: device unpack failed: ") + x->be->error());
    s.st = DEV;
}

void step_recv(Xfer *x) {
    Stage &s0 = x->st[0];
    if (x->phase == 0) {
        MPI_Status st;
        if (!mpi_test(&s0.req, &st)) return;
        if (st.MPI_ERROR != MPI_SUCCESS && st.MPI_ERROR != MPI_ERR_PENDING) {
            // (PMPI_Test leaves MPI_ERROR alone on success in some versions)
        }
        int k0 = 0;
        PMPI_Get_count(&st, MPI_BYTE, &k0);
        x->src = st.MPI_SOURCE;
        x->rtag = st.MPI_TAG;
        x->N = k0;
        s0.chunk = 0;
        if (k0 < x->C || x->cap <= x->C) {
            x->nchunks = 1;
            x->phase = 2;
            x->next = 1;
        } else {
            x->phase = 1;
            x->nchunks = 1;  // until the header tells
            x->next = 1;
            enqueue(x);
        }
        start_unpack(x, s0);
        if (x->done) return;
    }
    if (x->phase == 1) {
        if (!at_head(x)) goto stages;
        if (!x->hdr_posted) {
            PMPI_Irecv(&x->hdr, 8, MPI_BYTE, x->src, shadow_tag(x->rtag), x->comm, &x->hreq);
            x->hdr_posted = true;
        }
        if (!mpi_test(&x->hreq)) goto stages;
        if (x->hdr > x->cap)
            return fail(x, COLLX_GPU_ERR_TRUNCATE,
                        "collx_gpu: staged message of " + std::to_string(x->hdr) + " bytes exceeds the receive buffer (" +
                            std::to_string(x->cap) + " bytes)");
        x->N = x->hdr;
        x->nchunks = (x->N + x->C - 1) / x->C;
        x->phase = 2;
    }
stages:
    for (bool moved = true; moved && !x->done;) {
        moved = false;
        for (auto &s : x->st) {
            if (s.st == NET && mpi_test(&s.req)) {
                start_unpack(x, s);
                moved = true;
            } else if (s.st == DEV) {
                int q = x->be->query(s.stream);
                if (q < 0) return fail(x, COLLX_GPU_ERR_BACKEND, std::string("collx_gpu: device unpack failed: ") + x->be->error());
                if (q) {
                    s.st = FREE;
                    ++x->finished;
                    moved = true;
                }
            }
        }
        if (x->phase != 2) break;
        for (auto &s : x->st) {
            if (s.st != FREE || x->next >= x->nchunks) continue;
            s.chunk = x->next++;
            int64_t n = chunk_hi(x, s.chunk) - chunk_lo(x, s.chunk);
            PMPI_Irecv(s.host, int(n), MPI_BYTE, x->src, shadow_tag(x->rtag), x->comm, &s.req);
            s.st = NET;
            moved = true;
        }
    }
    if (!x->done && x->phase == 2 && x->finished == x->nchunks) finish(x);
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
    x->st.resize(size_t(nstages()));
    for (auto &s : x->st) {
        s.host = buf_get(be, size_t(x->C));
        s.stream = be->stream_get();
        if (!s.host || !s.stream) {
            xfer_free(x);
            set_error("collx_gpu: cannot allocate pinned staging buffers or streams");
            return COLLX_GPU_ERR_NOMEM;
        }
    }
    if (is_send) {
        x->N = total;
        x->nchunks = total <= x->C ? 1 : (total + x->C - 1) / x->C;
        enqueue(x);  // sends to one (comm, dest, tag) leave in program order
        if (total == 0) x->nchunks = 1;  // one empty message
    } else {
        x->cap = total;
        x->src = peer;
        x->rtag = tag;
        // chunk 0 is posted now, so that MPI matches it in program order
        Stage &s0 = x->st[0];
        PMPI_Irecv(s0.host, int(std::min(total, x->C)), MPI_BYTE, peer, tag, comm, &s0.req);
        s0.st = NET;
        s0.chunk = 0;
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
    st->MPI_ERROR = x->err ? MPI_ERR_OTHER : MPI_SUCCESS;
    MPI_Status_set_elements_x(st, MPI_BYTE, x->is_send ? 0 : x->N);
    MPI_Status_set_cancelled(st, 0);
}

void xfer_free(Xfer *x) {
    std::lock_guard<std::recursive_mutex> g(mu);
    for (auto &s : x->st) {
        if (s.req != MPI_REQUEST_NULL) {  // only after an error
            PMPI_Cancel(&s.req);
            PMPI_Request_free(&s.req);
        }
        if (s.stream) {
            x->be->sync(s.stream);
            x->be->stream_put(s.stream);
        }
        if (s.host) buf_put(x->be, s.host);
    }
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
