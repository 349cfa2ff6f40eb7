// Backend selection and the pipelined staging engine: a device buffer with
// a derived datatype is packed on the device, chunk by chunk, into pinned
// host staging buffers that go on the wire with plain MPI_BYTE messages
// (pack chunk i+1 while chunk i is in flight); the receive side mirrors it.
//
// Wire protocol (both sides staged): a message of N <= C packed bytes is one
// MPI_BYTE message on (comm, tag).  A longer one is chunk 0 (C bytes) on
// (comm, tag), then an 8-byte header holding N and chunks 1.. on (comm,
// shadow tag = 2^30 | tag).  Transfers on one (comm, peer, shadow tag) are
// serialised so that their shadow messages cannot interleave.
#pragma once
#include "backend.h"
#include "canonical.hpp"

namespace collx_gpu {

const collx_gpu_backend_t *backend();            // current backend, NULL = none
int select_backend(const char *name);            // "auto", "cuda", "fake", "none"
const collx_gpu_backend_t *fake_backend();
int fake_register(void *p, size_t n);
int fake_unregister(void *p);
inline bool on_device(const void *p) {
    const collx_gpu_backend_t *b = backend();
    return b && p && b->is_device(p);
}

// A typed buffer's pointer need not point into its allocation (positive
// lb): ask about the first byte of the type map.
inline bool on_device(const void *p, const Form &f) {
    return on_device(p ? static_cast<const char *>(p) + f.true_lb : p);
}

struct Xfer;
// Start a staged transfer (buf must be device memory).  Never blocks.
int xfer_start(bool is_send, void *buf, int64_t count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
               Xfer **out);
bool xfer_done(const Xfer *x);
int xfer_error(const Xfer *x);
void xfer_status(const Xfer *x, MPI_Status *st);   // source, tag, error, byte count
void xfer_free(Xfer *x);
// Advance every active transfer one non-blocking step.
void progress_all();
int xfer_wait(Xfer *x, MPI_Status *st);            // progress until done, then free

// Whole-buffer moves between a device buffer and a host mirror laid out like
// it (same type map, base pointer mirror_base): for collectives.
int device_to_mirror(const FormP &f, const void *dev, int64_t count, void *mirror_base);
int mirror_to_device(const FormP &f, const void *mirror_base, int64_t count, void *dev);
// Host allocation able to hold `count` elements; returns the base pointer
// (type-map offsets apply to it) and the allocation to free.
void *mirror_alloc(const FormP &f, int64_t count, void **alloc);

} // namespace collx_gpu
