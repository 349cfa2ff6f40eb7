// Backend selection and the staging engine: a device buffer with a derived
// datatype is packed on the device, chunk by chunk (one stream per stage),
// into host memory; the receive side mirrors it.
//
// Wire protocol: one MPI message of the N packed bytes (MPI_BYTE) on (comm,
// tag), exactly what a plain send of the same type map puts on the wire.  A
// staged peer therefore interoperates with a host-buffer (plain MPI) peer
// for every message size, a receive may be posted for more than is sent,
// and no tags are reserved.  The pipelining is between the device and host
// memory (chunk i+1 packed while chunk i is copied), not on the wire.
// Sends to one (comm, dest, tag) are posted to MPI in program order.
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
