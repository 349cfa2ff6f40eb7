// The C API of gpu_dtype.h over the C++ engine.
#include "collx/gpu_dtype.h"
#include "canonical.hpp"
#include "staging.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

using namespace collx_gpu;

struct collx_gpu_dtype {};  // opaque: really a collx_gpu::Form
static const Form *F(const collx_gpu_dtype_t *d) { return reinterpret_cast<const Form *>(d); }

struct collx_gpu_request {
    Xfer *x = nullptr;
    MPI_Request plain = MPI_REQUEST_NULL;
};

extern "C" {

const char *collx_gpu_last_error(void) { return last_error().c_str(); }

int collx_gpu_dtype_get(MPI_Datatype type, const collx_gpu_dtype_t **out) {
    if (!out) {
        set_error("collx_gpu_dtype_get: null output pointer");
        return COLLX_GPU_ERR_ARG;
    }
    FormP f;
    int rc = get_form(type, f);
    if (rc) return rc;
    *out = reinterpret_cast<const collx_gpu_dtype_t *>(f.get());  // the cache keeps it alive
    return COLLX_GPU_SUCCESS;
}
int collx_gpu_dtype_forget(MPI_Datatype type) { return forget_form(type); }
int64_t collx_gpu_dtype_size(const collx_gpu_dtype_t *d) { return d ? F(d)->size : -1; }
int64_t collx_gpu_dtype_extent(const collx_gpu_dtype_t *d) { return d ? F(d)->extent : -1; }
int collx_gpu_dtype_same(const collx_gpu_dtype_t *a, const collx_gpu_dtype_t *b) {
    if (!a || !b) return 0;
    return F(a)->extent == F(b)->extent && F(a)->lb == F(b)->lb && same_seq(*F(a)->root, *F(b)->root);
}
size_t collx_gpu_dtype_describe(const collx_gpu_dtype_t *d, char *buf, size_t len) {
    std::string s = d ? F(d)->describe() : std::string("(null)");
    if (buf && len) {
        std::strncpy(buf, s.c_str(), len - 1);
        buf[len - 1] = 0;
    }
    return s.size() + 1;
}

int collx_gpu_pack_range_cpu(const collx_gpu_dtype_t *d, const void *buf, int64_t count, int64_t begin, int64_t end,
                             void *packed) {
    if (!d || count < 0 || begin < 0 || end < begin || end > count * F(d)->size || (end > begin && (!buf || !packed))) {
        set_error("collx_gpu_pack_range_cpu: bad arguments (null buffer, negative count or range outside the stream)");
        return COLLX_GPU_ERR_ARG;
    }
    pack_range(*F(d), static_cast<const char *>(buf), count, begin, end, static_cast<char *>(packed));
    return COLLX_GPU_SUCCESS;
}
int collx_gpu_unpack_range_cpu(const collx_gpu_dtype_t *d, void *buf, int64_t count, int64_t begin, int64_t end,
                               const void *packed) {
    if (!d || count < 0 || begin < 0 || end < begin || end > count * F(d)->size || (end > begin && (!buf || !packed))) {
        set_error("collx_gpu_unpack_range_cpu: bad arguments (null buffer, negative count or range outside the stream)");
        return COLLX_GPU_ERR_ARG;
    }
    unpack_range(*F(d), static_cast<char *>(buf), count, begin, end, static_cast<const char *>(packed));
    return COLLX_GPU_SUCCESS;
}

// device-aware pack: the source on the device packs through the backend
// (its destination may be host or device); a host source packs on the CPU
// (into a bounce buffer when the destination is on the device)
int collx_gpu_pack(const void *inbuf, int64_t incount, MPI_Datatype type, void *outbuf, int64_t outsize,
                   int64_t *position) {
    if (!position || incount < 0 || *position < 0) {
        set_error("collx_gpu_pack: null position, negative count or negative position");
        return COLLX_GPU_ERR_ARG;
    }
    FormP f;
    int rc = get_form(type, f);
    if (rc) return rc;
    int64_t n = incount * f->size;
    if (*position + n > outsize) {
        set_error("collx_gpu_pack: output buffer too small (" + std::to_string(outsize) + " bytes, need " +
                  std::to_string(*position + n) + ")");
        return COLLX_GPU_ERR_TRUNCATE;
    }
    if (n == 0) return COLLX_GPU_SUCCESS;
    char *dst = static_cast<char *>(outbuf) + *position;
    const collx_gpu_backend_t *be = backend();
    bool din = on_device(inbuf, *f), dout = on_device(outbuf);
    if (din) {
        void *s = be->stream_get();
        rc = be->pack(&f->desc, inbuf, incount, 0, n, dst, s);
        if (!rc) rc = be->sync(s);
        be->stream_put(s);
        if (rc) {
            set_error(std::string("collx_gpu_pack: device pack failed: ") + be->error());
            return COLLX_GPU_ERR_BACKEND;
        }
    } else if (dout) {
        char *tmp = static_cast<char *>(std::malloc(size_t(n)));
        if (!tmp) return set_error("collx_gpu_pack: out of memory"), COLLX_GPU_ERR_NOMEM;
        pack_range(*f, static_cast<const char *>(inbuf), incount, 0, n, tmp);
        rc = be->copy(dst, tmp, size_t(n));
        std::free(tmp);
        if (rc) return set_error("collx_gpu_pack: copy to device failed"), COLLX_GPU_ERR_BACKEND;
    } else {
        pack_range(*f, static_cast<const char *>(inbuf), incount, 0, n, dst);
    }
    *position += n;
    return COLLX_GPU_SUCCESS;
}

int collx_gpu_unpack(const void *inbuf, int64_t insize, int64_t *position, void *outbuf, int64_t outcount,
                     MPI_Datatype type) {
    if (!position || outcount < 0 || *position < 0) {
        set_error("collx_gpu_unpack: null position, negative count or negative position");
        return COLLX_GPU_ERR_ARG;
    }
    FormP f;
    int rc = get_form(type, f);
    if (rc) return rc;
    int64_t n = outcount * f->size;
    if (*position + n > insize) {
        set_error("collx_gpu_unpack: input holds " + std::to_string(insize - *position) + " bytes, " +
                  std::to_string(n) + " needed");
        return COLLX_GPU_ERR_TRUNCATE;
    }
    if (n == 0) return COLLX_GPU_SUCCESS;
    const char *src = static_cast<const char *>(inbuf) + *position;
    const collx_gpu_backend_t *be = backend();
    bool din = on_device(inbuf), dout = on_device(outbuf, *f);
    if (dout) {
        void *s = be->stream_get();
        rc = be->unpack(&f->desc, outbuf, outcount, 0, n, src, s);
        if (!rc) rc = be->sync(s);
        be->stream_put(s);
        if (rc) {
            set_error(std::string("collx_gpu_unpack: device unpack failed: ") + be->error());
            return COLLX_GPU_ERR_BACKEND;
        }
    } else if (din) {
        char *tmp = static_cast<char *>(std::malloc(size_t(n)));
        if (!tmp) return set_error("collx_gpu_unpack: out of memory"), COLLX_GPU_ERR_NOMEM;
        rc = be->copy(tmp, src, size_t(n));
        if (!rc) unpack_range(*f, static_cast<char *>(outbuf), outcount, 0, n, tmp);
        std::free(tmp);
        if (rc) return set_error("collx_gpu_unpack: copy from device failed"), COLLX_GPU_ERR_BACKEND;
    } else {
        unpack_range(*f, static_cast<char *>(outbuf), outcount, 0, n, src);
    }
    *position += n;
    return COLLX_GPU_SUCCESS;
}

int collx_gpu_set_backend(const char *name) { return select_backend(name); }
const char *collx_gpu_backend_name(void) {
    const collx_gpu_backend_t *b = backend();
    return b ? b->name : "none";
}
int collx_gpu_is_device(const void *p) { return on_device(p); }
int collx_gpu_fake_register(void *p, size_t n) { return fake_register(p, n); }
int collx_gpu_fake_unregister(void *p) { return fake_unregister(p); }
void *collx_gpu_device_alloc(size_t n) {
    const collx_gpu_backend_t *b = backend();
    if (!b) set_error("collx_gpu_device_alloc: no device backend");
    return b ? b->dev_alloc(n) : nullptr;
}
void collx_gpu_device_free(void *p) {
    if (const collx_gpu_backend_t *b = backend()) b->dev_free(p);
}
int collx_gpu_memcpy(void *dst, const void *src, size_t n) {
    const collx_gpu_backend_t *b = backend();
    if (!b) {
        std::memmove(dst, src, n);
        return 0;
    }
    if (b->copy(dst, src, n)) {
        set_error(std::string("collx_gpu_memcpy: ") + b->error());
        return COLLX_GPU_ERR_BACKEND;
    }
    return 0;
}

static int start(bool send, const void *buf, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                 collx_gpu_request_t *req) {
    if (!req || count < 0) {
        set_error("collx_gpu_isend/irecv: null request or negative count");
        return COLLX_GPU_ERR_ARG;
    }
    auto *r = new collx_gpu_request();
    int rc;
    FormP f;
    bool dev = false;
    if (backend()) dev = get_form(type, f) == 0 ? on_device(buf, *f) : on_device(buf);
    if (dev) {
        rc = xfer_start(send, const_cast<void *>(buf), count, type, peer, tag, comm, &r->x);
    } else {
        rc = send ? PMPI_Isend(buf, count, type, peer, tag, comm, &r->plain)
                  : PMPI_Irecv(const_cast<void *>(buf), count, type, peer, tag, comm, &r->plain);
        if (rc != MPI_SUCCESS) {
            set_error("collx_gpu_isend/irecv: MPI call failed");
            rc = COLLX_GPU_ERR_MPI;
        }
    }
    if (rc) {
        delete r;
        return rc;
    }
    *req = r;
    return COLLX_GPU_SUCCESS;
}

int collx_gpu_isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                    collx_gpu_request_t *req) {
    return start(true, buf, count, type, dest, tag, comm, req);
}
int collx_gpu_irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                    collx_gpu_request_t *req) {
    return start(false, buf, count, type, source, tag, comm, req);
}

int collx_gpu_test(collx_gpu_request_t *req, int *flag, MPI_Status *status) {
    if (!req || !*req || !flag) {
        set_error("collx_gpu_test: null request or flag");
        return COLLX_GPU_ERR_ARG;
    }
    collx_gpu_request *r = *req;
    int rc = 0;
    if (r->x) {
        progress_all();
        *flag = xfer_done(r->x);
        if (!*flag) return 0;
        rc = xfer_error(r->x);
        xfer_status(r->x, status);
        xfer_free(r->x);
    } else {
        if (PMPI_Test(&r->plain, flag, status) != MPI_SUCCESS) rc = COLLX_GPU_ERR_MPI;
        if (!*flag) return rc;
    }
    delete r;
    *req = nullptr;
    return rc;
}

int collx_gpu_wait(collx_gpu_request_t *req, MPI_Status *status) {
    int flag = 0, rc;
    do rc = collx_gpu_test(req, &flag, status);
    while (!rc && !flag);
    return rc;
}

int collx_gpu_send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    collx_gpu_request_t r;
    int rc = collx_gpu_isend(buf, count, type, dest, tag, comm, &r);
    return rc ? rc : collx_gpu_wait(&r, MPI_STATUS_IGNORE);
}
int collx_gpu_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status) {
    collx_gpu_request_t r;
    int rc = collx_gpu_irecv(buf, count, type, source, tag, comm, &r);
    return rc ? rc : collx_gpu_wait(&r, status);
}

} // extern "C"
