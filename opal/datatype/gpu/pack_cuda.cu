// CUDA backend of the collx GPU datatype engine: pack/unpack kernels over
// the flattened canonical form (backend.h), one launch for the whole byte
// range of type x count, word size chosen from the alignment of the form and
// of both buffers.  Built as libcollx_gpu_cuda.so (CUDA runtime linked
// statically) and dlopen'ed by the engine, so nothing else needs CUDA.
#include "backend.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

thread_local std::string g_err;
const char *last_err() { return g_err.c_str(); }
bool check(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return true;
    g_err = std::string(what) + ": " + cudaGetErrorString(e);
    return false;
}

struct DevForm {
    collx_gpu_flat_item_t *items = nullptr;
    int64_t *pref = nullptr;  // packed bytes before item i within one element (nitems+1)
    int nitems = 0;
};
std::mutex g_mu;
std::unordered_map<uint64_t, DevForm> g_forms;

const DevForm *dev_form(const collx_gpu_desc_t *d) {
    std::lock_guard<std::mutex> g(g_mu);
    auto it = g_forms.find(d->id);
    if (it != g_forms.end()) return &it->second;
    DevForm f;
    f.nitems = d->nitems;
    std::vector<int64_t> pref(size_t(d->nitems) + 1, 0);
    for (int i = 0; i < d->nitems; ++i) {
        int64_t nb = 1;
        for (int k = 0; k < d->items[i].nd; ++k) nb *= d->items[i].count[k];
        pref[i + 1] = pref[i] + nb * d->items[i].len;
    }
    if (!check(cudaMalloc(&f.items, sizeof(collx_gpu_flat_item_t) * (d->nitems + 1)), "cudaMalloc") ||
        !check(cudaMalloc(&f.pref, sizeof(int64_t) * pref.size()), "cudaMalloc") ||
        !check(cudaMemcpy(f.items, d->items, sizeof(collx_gpu_flat_item_t) * d->nitems, cudaMemcpyHostToDevice),
               "cudaMemcpy") ||
        !check(cudaMemcpy(f.pref, pref.data(), sizeof(int64_t) * pref.size(), cudaMemcpyHostToDevice), "cudaMemcpy"))
        return nullptr;
    return &(g_forms[d->id] = f);
}

template <int W> struct Word;
template <> struct Word<1> { using T = uint8_t; };
template <> struct Word<2> { using T = uint16_t; };
template <> struct Word<4> { using T = uint32_t; };
template <> struct Word<8> { using T = uint64_t; };
template <> struct Word<16> { using T = uint4; };

// Thread u handles word u of the byte range [e0*size, e1*size): it finds its
// item by binary search over the per-element prefix, its block by dividing
// out the item's dimensions, and copies W bytes (byte-wise at the edges of
// [begin, end)).  The divisions are done in Ix: 32-bit when the call's
// packed bytes fit (one 32-bit division costs a fraction of a 64-bit one,
// which the GPU emulates), else 64-bit.
template <int W, bool PACK, typename Ix>
__global__ void k_move(const collx_gpu_flat_item_t *__restrict__ items, const int64_t *__restrict__ pref, int nitems,
                       char *mem, char *pk, int64_t extent, int64_t size, int64_t e0, int64_t nwords, int64_t begin,
                       int64_t end) {
    using T = typename Word<W>::T;
    const Ix wpe = Ix(size / W);  // words per element
    for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < nwords;
         u += int64_t(gridDim.x) * blockDim.x) {
        int64_t e = e0 + int64_t(Ix(u) / wpe);
        int64_t r = int64_t(Ix(u) % wpe) * W;  // byte within the element's packed stream
        int lo = 0, hi = nitems - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >> 1;
            if (pref[mid] <= r) lo = mid;
            else hi = mid - 1;
        }
        const collx_gpu_flat_item_t &it = items[lo];
        int64_t off = r - pref[lo];
        Ix blk = Ix(off) / Ix(it.len);
        int64_t inblk = off - int64_t(blk) * it.len;
        int64_t s = it.src + inblk, p = it.pk + inblk;
        for (int d = it.nd - 1; d >= 0; --d) {
            Ix c = Ix(it.count[d]);
            int64_t i = int64_t(blk % c);
            blk /= c;
            s += i * it.sstride[d];
            p += i * it.pstride[d];
        }
        s += e * extent;
        p += e * size;
        if (p >= begin && p + W <= end) {
            if (PACK) *reinterpret_cast<T *>(pk + (p - begin)) = *reinterpret_cast<const T *>(mem + s);
            else *reinterpret_cast<T *>(mem + s) = *reinterpret_cast<const T *>(pk + (p - begin));
        } else {
            for (int b = 0; b < W; ++b) {
                int64_t q = p + b;
                if (q < begin || q >= end) continue;
                if (PACK) pk[q - begin] = mem[s + b];
                else mem[s + b] = pk[q - begin];
            }
        }
    }
}

struct Stream {
    cudaStream_t s = nullptr;
    char *scratch = nullptr;
    size_t cap = 0;
};
std::vector<Stream *> g_pool;

bool scratch_for(Stream *st, size_t n) {
    if (st->cap >= n) return true;
    if (st->scratch) {
        cudaStreamSynchronize(st->s);
        cudaFree(st->scratch);
    }
    st->scratch = nullptr;
    st->cap = 0;
    if (!check(cudaMalloc(&st->scratch, n), "cudaMalloc (scratch)")) return false;
    st->cap = n;
    return true;
}

int is_dev(const void *p) {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

template <bool PACK>
int launch(const collx_gpu_desc_t *d, char *mem, char *pk, int64_t count, int64_t begin, int64_t end, cudaStream_t s) {
    if (end <= begin || d->size == 0) return 0;
    if (!d->items) {
        g_err = "datatype too deeply nested for the CUDA kernels (more than 8 strided levels)";
        return -1;
    }
    // one dense block per element with extent == size: a plain copy
    const collx_gpu_flat_item_t &i0 = d->items[0];
    if (d->nitems == 1 && i0.nd == 0 && i0.len == d->extent) {
        bool ok = PACK ? check(cudaMemcpyAsync(pk, mem + i0.src + begin, end - begin, cudaMemcpyDefault, s), "cudaMemcpyAsync")
                       : check(cudaMemcpyAsync(mem + i0.src + begin, pk, end - begin, cudaMemcpyDefault, s), "cudaMemcpyAsync");
        return ok ? 0 : -1;
    }
    const DevForm *f = dev_form(d);
    if (!f) return -1;
    int64_t e0 = begin / d->size, e1 = (end + d->size - 1) / d->size;
    if (e1 > count) e1 = count;
    int W = d->align;
    while (W > 1 && ((uintptr_t(mem) | (uintptr_t(pk) - uintptr_t(begin))) & uintptr_t(W - 1))) W >>= 1;
    int64_t nwords = (e1 - e0) * (d->size / W);
    int threads = 256;
    int64_t blocks = (nwords + threads - 1) / threads;
    if (blocks > 132 * 32) blocks = 132 * 32;
    if (blocks < 1) blocks = 1;
    // 32-bit divisions when every quotient and dividend fits: word indices
    // (nwords) and bytes within one element (size)
    bool narrow = nwords < (int64_t(1) << 32) && d->size < (int64_t(1) << 32);
#define COLLX_LAUNCH(w)                                                                                              \
    (narrow ? k_move<w, PACK, uint32_t><<<unsigned(blocks), threads, 0, s>>>(f->items, f->pref, f->nitems, mem, pk,    \
                                                                            d->extent, d->size, e0, nwords, begin, end) \
            : k_move<w, PACK, int64_t><<<unsigned(blocks), threads, 0, s>>>(f->items, f->pref, f->nitems, mem, pk,     \
                                                                           d->extent, d->size, e0, nwords, begin, end))
    switch (W) {
    case 16: COLLX_LAUNCH(16); break;
    case 8: COLLX_LAUNCH(8); break;
    case 4: COLLX_LAUNCH(4); break;
    case 2: COLLX_LAUNCH(2); break;
    default: COLLX_LAUNCH(1); break;
    }
#undef COLLX_LAUNCH
    return check(cudaGetLastError(), "kernel launch") ? 0 : -1;
}

void *h_alloc(size_t n) {
    void *p = nullptr;
    return check(cudaMallocHost(&p, n ? n : 1), "cudaMallocHost") ? p : nullptr;
}
void h_free(void *p) { cudaFreeHost(p); }
void *s_get() {
    std::lock_guard<std::mutex> g(g_mu);
    if (!g_pool.empty()) {
        Stream *s = g_pool.back();
        g_pool.pop_back();
        return s;
    }
    Stream *s = new Stream();
    if (!check(cudaStreamCreateWithFlags(&s->s, cudaStreamNonBlocking), "cudaStreamCreate")) {
        delete s;
        return nullptr;
    }
    return s;
}
void s_put(void *p) {
    std::lock_guard<std::mutex> g(g_mu);
    g_pool.push_back(static_cast<Stream *>(p));
}

int pack(const collx_gpu_desc_t *d, const void *buf, int64_t count, int64_t begin, int64_t end, void *dst, void *sp) {
    Stream *st = static_cast<Stream *>(sp);
    int64_t n = end - begin;
    if (n <= 0) return 0;
    if (is_dev(dst)) return launch<true>(d, (char *)buf, (char *)dst, count, begin, end, st->s);
    // host destination: pack on the device, then one copy
    if (!scratch_for(st, size_t(n))) return -1;
    if (launch<true>(d, (char *)buf, st->scratch, count, begin, end, st->s)) return -1;
    return check(cudaMemcpyAsync(dst, st->scratch, size_t(n), cudaMemcpyDeviceToHost, st->s), "cudaMemcpyAsync") ? 0 : -1;
}

int unpack(const collx_gpu_desc_t *d, void *buf, int64_t count, int64_t begin, int64_t end, const void *src, void *sp) {
    Stream *st = static_cast<Stream *>(sp);
    int64_t n = end - begin;
    if (n <= 0) return 0;
    if (is_dev(src)) return launch<false>(d, (char *)buf, (char *)src, count, begin, end, st->s);
    if (!scratch_for(st, size_t(n))) return -1;
    if (!check(cudaMemcpyAsync(st->scratch, src, size_t(n), cudaMemcpyHostToDevice, st->s), "cudaMemcpyAsync")) return -1;
    return launch<false>(d, (char *)buf, st->scratch, count, begin, end, st->s);
}

int query(void *sp) {
    cudaError_t e = cudaStreamQuery(static_cast<Stream *>(sp)->s);
    if (e == cudaSuccess) return 1;
    if (e == cudaErrorNotReady) return 0;
    check(e, "stream");
    return -1;
}
int sync(void *sp) { return check(cudaStreamSynchronize(static_cast<Stream *>(sp)->s), "cudaStreamSynchronize") ? 0 : -1; }
int copy(void *dst, const void *src, size_t n) { return check(cudaMemcpy(dst, src, n, cudaMemcpyDefault), "cudaMemcpy") ? 0 : -1; }

void *d_alloc(size_t n) {
    void *p = nullptr;
    return check(cudaMalloc(&p, n ? n : 1), "cudaMalloc") ? p : nullptr;
}
void d_free(void *p) { cudaFree(p); }

const collx_gpu_backend_t g_cuda = {"cuda", is_dev, h_alloc, h_free, s_get,  s_put,  pack,
                                    unpack, query,  sync,    copy,   last_err, d_alloc, d_free};

} // namespace

extern "C" __attribute__((visibility("default"))) const collx_gpu_backend_t *collx_gpu_cuda_backend(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        return nullptr;
    }
    return &g_cuda;
}
