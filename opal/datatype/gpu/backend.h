/* Device backend interface of the collx GPU datatype engine (C, shared by
 * the core library and the separately built CUDA piece).  A backend moves
 * bytes of the packed stream between device memory and a destination/source
 * that may be pinned host or device memory, asynchronously on a stream. */
#ifndef COLLX_GPU_BACKEND_H
#define COLLX_GPU_BACKEND_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLLX_GPU_MAX_FLAT_DIMS 8

/* One leaf of the canonical form with all enclosing dimensions: block with
 * multi-index i lives at src + sum i_d*sstride[d] and packs at
 * pk + sum i_d*pstride[d]; len bytes. */
typedef struct collx_gpu_flat_item {
    int64_t src, pk, len;
    int32_t nd, pad_;
    int64_t count[COLLX_GPU_MAX_FLAT_DIMS];
    int64_t sstride[COLLX_GPU_MAX_FLAT_DIMS];
    int64_t pstride[COLLX_GPU_MAX_FLAT_DIMS];
} collx_gpu_flat_item_t;

typedef struct collx_gpu_desc {
    uint64_t id;                         /* unique per canonical form (device caches key on it) */
    const collx_gpu_flat_item_t *items;  /* NULL when the form is too deep to flatten */
    int32_t nitems;
    int32_t align;                       /* power of two <= 16 dividing all offsets and lengths */
    int64_t size, extent;                /* packed bytes and extent of one element */
    const void *form;                    /* the C++ form (host-side backends only) */
} collx_gpu_desc_t;

typedef struct collx_gpu_backend {
    const char *name;
    int (*is_device)(const void *p);
    void *(*host_alloc)(size_t n);       /* pinned host memory */
    void (*host_free)(void *p);
    void *(*stream_get)(void);           /* a stream (pooled) */
    void (*stream_put)(void *s);
    /* stream bytes [begin,end) of count elements at device `buf` -> dst
     * (host or device), and the reverse; asynchronous on stream s */
    int (*pack)(const collx_gpu_desc_t *d, const void *buf, int64_t count, int64_t begin, int64_t end,
                void *dst, void *s);
    int (*unpack)(const collx_gpu_desc_t *d, void *buf, int64_t count, int64_t begin, int64_t end,
                  const void *src, void *s);
    int (*query)(void *s);               /* 1 done, 0 pending, <0 error */
    int (*sync)(void *s);                /* 0 or <0 error */
    int (*copy)(void *dst, const void *src, size_t n); /* any direction, synchronous */
    const char *(*error)(void);
    void *(*dev_alloc)(size_t n);        /* device memory (tests, tools) */
    void (*dev_free)(void *p);
} collx_gpu_backend_t;

/* exported by libcollx_gpu_cuda.so; NULL when no usable GPU */
typedef const collx_gpu_backend_t *(*collx_gpu_cuda_backend_fn)(void);

#ifdef __cplusplus
}
#endif
#endif
