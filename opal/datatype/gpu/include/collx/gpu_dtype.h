/* collx GPU datatype engine: C API.
 *
 * From a committed MPI datatype the engine builds a canonical form (strided
 * blocks of any depth, block lists where no stride exists, type-map order
 * kept, 64-bit offsets), caches it per datatype, and packs/unpacks with it on
 * the CPU or, when a CUDA backend is loaded, on the GPU.  The transfer calls
 * (collx_gpu_isend/irecv...) move device buffers through a CUDA-unaware MPI by
 * packing into pinned host staging buffers in pipelined chunks.
 *
 * Every call returns COLLX_GPU_SUCCESS (0) or a negative error code; the
 * message of the last error of the calling thread is collx_gpu_last_error().
 */
#ifndef COLLX_GPU_DTYPE_H
#define COLLX_GPU_DTYPE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLLX_GPU_API __attribute__((visibility("default")))

enum {
    COLLX_GPU_SUCCESS = 0,
    COLLX_GPU_ERR_ARG = -1,         /* bad argument (null pointer, negative count...) */
    COLLX_GPU_ERR_UNCOMMITTED = -2, /* datatype not committed */
    COLLX_GPU_ERR_UNSUPPORTED = -3, /* combiner or named type the engine cannot describe */
    COLLX_GPU_ERR_MPI = -4,         /* an MPI call failed */
    COLLX_GPU_ERR_NOMEM = -5,
    COLLX_GPU_ERR_TRUNCATE = -6,    /* output buffer too small / message longer than buffer */
    COLLX_GPU_ERR_BACKEND = -7      /* device backend missing or failed */
};

/* Canonical form of a datatype (opaque, owned by the cache). */
typedef struct collx_gpu_dtype collx_gpu_dtype_t;

COLLX_GPU_API const char *collx_gpu_last_error(void);

/* Canonical form of a committed datatype, built once and cached (the entry
 * is dropped when the datatype is freed, through an attribute delete
 * callback, or by collx_gpu_dtype_forget). */
COLLX_GPU_API int collx_gpu_dtype_get(MPI_Datatype type, const collx_gpu_dtype_t **form);
COLLX_GPU_API int collx_gpu_dtype_forget(MPI_Datatype type);
/* Packed bytes of one element, extent and lb as MPI reports them. */
COLLX_GPU_API int64_t collx_gpu_dtype_size(const collx_gpu_dtype_t *form);
COLLX_GPU_API int64_t collx_gpu_dtype_extent(const collx_gpu_dtype_t *form);
/* 1 if both forms describe the same type map (same canonical form). */
COLLX_GPU_API int collx_gpu_dtype_same(const collx_gpu_dtype_t *a, const collx_gpu_dtype_t *b);
/* Text of the canonical form (for logs and tests); returns chars needed. */
COLLX_GPU_API size_t collx_gpu_dtype_describe(const collx_gpu_dtype_t *form, char *buf, size_t len);

/* Bytes [begin, end) of the packed stream of `count` elements at `buf`
 * (host memory), to/from `packed` (packed[0] is stream byte `begin`). */
COLLX_GPU_API int collx_gpu_pack_range_cpu(const collx_gpu_dtype_t *form, const void *buf, int64_t count,
                                           int64_t begin, int64_t end, void *packed);
COLLX_GPU_API int collx_gpu_unpack_range_cpu(const collx_gpu_dtype_t *form, void *buf, int64_t count,
                                             int64_t begin, int64_t end, const void *packed);

/* MPI_Pack / MPI_Unpack semantics (position in bytes, advanced), 64-bit;
 * buffers may be device memory when a device backend is active. */
COLLX_GPU_API int collx_gpu_pack(const void *inbuf, int64_t incount, MPI_Datatype type, void *outbuf,
                                 int64_t outsize, int64_t *position);
COLLX_GPU_API int collx_gpu_unpack(const void *inbuf, int64_t insize, int64_t *position, void *outbuf,
                                   int64_t outcount, MPI_Datatype type);

/* ---- device backends: "auto" (CUDA if libcollx_gpu_cuda.so loads and a
 * GPU is present, else none), "cuda", "fake" (host memory registered with
 * collx_gpu_fake_register stands in for device memory: tests), "none". The
 * environment variable COLLX_GPU_BACKEND picks the default. */
COLLX_GPU_API int collx_gpu_set_backend(const char *name);
COLLX_GPU_API const char *collx_gpu_backend_name(void);
COLLX_GPU_API int collx_gpu_is_device(const void *ptr);
COLLX_GPU_API int collx_gpu_fake_register(void *ptr, size_t len);
COLLX_GPU_API int collx_gpu_fake_unregister(void *ptr);
/* device memory of the current backend (tests and tools); NULL without one */
COLLX_GPU_API void *collx_gpu_device_alloc(size_t len);
COLLX_GPU_API void collx_gpu_device_free(void *ptr);
/* synchronous copy between any two of host/device memory */
COLLX_GPU_API int collx_gpu_memcpy(void *dst, const void *src, size_t len);

/* ---- staged point-to-point for a CUDA-unaware MPI (device buffers are
 * packed/unpacked on the device in chunks, pipelined between device and
 * host memory; host buffers go straight to MPI).  On the wire a message is
 * one MPI_BYTE message of the packed bytes, as a plain MPI_Send of the same
 * type map, so either side may be a host buffer, for any size, and no tags
 * are reserved.  Chunk size: COLLX_GPU_CHUNK_BYTES (default 1 MiB),
 * chunks in flight per transfer: COLLX_GPU_STAGES (default 2). */
typedef struct collx_gpu_request *collx_gpu_request_t;
COLLX_GPU_API int collx_gpu_isend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                                  MPI_Comm comm, collx_gpu_request_t *req);
COLLX_GPU_API int collx_gpu_irecv(void *buf, int count, MPI_Datatype type, int source, int tag,
                                  MPI_Comm comm, collx_gpu_request_t *req);
COLLX_GPU_API int collx_gpu_test(collx_gpu_request_t *req, int *flag, MPI_Status *status);
COLLX_GPU_API int collx_gpu_wait(collx_gpu_request_t *req, MPI_Status *status);
COLLX_GPU_API int collx_gpu_send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                                 MPI_Comm comm);
COLLX_GPU_API int collx_gpu_recv(void *buf, int count, MPI_Datatype type, int source, int tag,
                                 MPI_Comm comm, MPI_Status *status);

#ifdef __cplusplus
}
#endif
#endif
