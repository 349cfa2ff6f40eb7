// Event-driven execution of segmented tree collectives (ADAPT style): an
// operation posts what is ready, and advances only when a transfer's
// completion is reported -- no step waits for all ranks.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "collx/collx.h"
#include "tree.hpp"

namespace collx {

// Geometry of a segmented buffer: `count` elements cut into segments of
// `per_seg` elements (the last may be shorter).
struct Segmentation {
    std::size_t count = 0;
    std::size_t per_seg = 1;
    std::size_t nseg = 0;

    Segmentation(std::size_t count_, std::size_t elem_size, std::size_t segment_bytes);
    std::size_t first(std::size_t s) const { return s * per_seg; }
    std::size_t length(std::size_t s) const {
        return s + 1 < nseg ? per_seg : count - s * per_seg;
    }
};

// Fixed-size scratch buffers able to hold one segment with the datatype's
// true extent; recycled so that steady state allocates nothing.
class BufferPool {
  public:
    BufferPool(const collx_dtype_t &dt, std::size_t elems);
    // Returns a pointer usable as an MPI buffer address for `elems` elements.
    char *get();
    void put(char *buf);
    std::size_t in_use() const { return in_use_; }

  private:
    std::size_t bytes_;
    std::ptrdiff_t shift_;  // buffer address = storage - true_lb
    std::vector<std::unique_ptr<char[]>> storage_;
    std::vector<char *> free_;
    std::size_t in_use_ = 0;
};

// One posted transfer; its address is the token given to the transport.
struct Xfer {
    class Operation *op = nullptr;
    enum Kind { Send, Recv };  // (what post() posts)
    enum Phase { Up, Down } phase = Down;  // towards the root, or away from it
    std::size_t step = 0;      // the step of its schedule (Schedule)
    std::size_t seg = 0;       // its segment
};

TreeShape shape_of(const collx_tuning_t &tun);

class Operation {
  public:
    Operation(const collx_transport_t &t, const collx_dtype_t &dt, int tag,
              const collx_tuning_t &tun, const collx_notify_t *notify);
    virtual ~Operation() = default;

    void start();
    void complete(Xfer *x, int status);  // called via collx_xfer_complete
    bool finished(int *status);

  protected:
    // Subclass hooks, called with the lock held.
    virtual void on_done(Xfer &x) = 0;  // a transfer finished successfully
    virtual void post_ready() = 0;      // post whatever may be posted now
    virtual bool all_done() const = 0;  // nothing more to do or to wait for

    // Post helpers: return false (and record the error) on failure.
    bool send(const void *buf, std::size_t count, int peer, Xfer x);
    bool recv(void *buf, std::size_t count, int peer, Xfer x);
    bool reduce(const void *in, void *inout, std::size_t count, void *op);
    bool copy(void *dst, const void *src, std::size_t count);
    // Start a step of a schedule through fn (collx_step_fn); its completion
    // comes back as an event like a transfer's.
    bool start_step(collx_step_fn fn, void *ctx, int stage, Xfer x);
    bool failed() const { return status_ != COLLX_OK; }

    collx_transport_t t_;
    collx_dtype_t dt_;
    int tag_;
    collx_tuning_t tun_;

  private:
    bool post(Xfer::Kind kind, void *buf, std::size_t count, int peer, Xfer x);
    bool drive();  // true when this call finished the operation
    std::recursive_mutex mu_;
    std::vector<std::pair<Xfer *, int>> events_;  // completions to handle, from next_event_
    std::size_t next_event_ = 0;
    bool driving_ = false;
    bool done_ = false;
    int status_ = COLLX_OK;
    collx_notify_t notify_{nullptr, nullptr};
    int in_flight_ = 0;  // transfers and steps posted, not yet completed
};

std::unique_ptr<Operation> make_bcast(const collx_transport_t &t, void *buf, std::size_t count,
                                      const collx_dtype_t &dt, int root, int tag,
                                      const collx_tuning_t &tun, const collx_notify_t *notify);

// An allgather(v) in place: one broadcast from every rank at once, rank r's
// counts[r] elements at buf + displs[r] extents, each on the topology-aware
// ring tree (topo_ring_node over node_of; nullptr: every rank its own node,
// a chain round the ranks) with tag tag - r (the caller reserves P tags).
// Each part notifies `notify` when it finishes; the caller starts them.
std::vector<std::unique_ptr<Operation>> make_allgather(const collx_transport_t &t, void *buf,
                                                       const std::size_t *counts,
                                                       const std::size_t *displs,
                                                       const collx_dtype_t &dt,
                                                       const int *node_of, int tag,
                                                       const collx_tuning_t &tun,
                                                       const collx_notify_t *notify);

// all = true: allreduce (root ignored; the tree is rooted at rank 0).
std::unique_ptr<Operation> make_reduce(const collx_transport_t &t, const void *sendbuf,
                                       void *recvbuf, std::size_t count, const collx_dtype_t &dt,
                                       void *op, bool commutative, int root, bool all, int tag,
                                       const collx_tuning_t &tun, const collx_notify_t *notify);

// The ring (commutative ops): both halves (COLLX_RING_ALLREDUCE) or one
// (collx_ring_start); chunks: the P chunks' counts in rank order (summing
// to count), or nullptr for collx_hier_chunk's.
std::unique_ptr<Operation> make_ring(const collx_transport_t &t, int phases, const void *sendbuf,
                                     void *recvbuf, std::size_t count, const collx_dtype_t &dt,
                                     void *op, int tag, const collx_tuning_t &tun,
                                     const collx_notify_t *notify,
                                     const std::size_t *chunks = nullptr);

}  // namespace collx
