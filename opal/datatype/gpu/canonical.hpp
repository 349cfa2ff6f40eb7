// Canonical form of an MPI datatype: a sequence of segments in type-map
// order; a segment is a body (a contiguous run of `len` bytes, or a child
// sequence) repeated over strided dimensions (outermost first).  Built from
// MPI_Type_get_envelope/get_contents, simplified (dense streams folded,
// adjacent blocks merged, count-1 levels dropped, periodic block lists
// folded) so that equivalent types get the same form.  64-bit throughout.
#pragma once
#include <mpi.h>
#include "backend.h"
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace collx_gpu {

struct Dim {
    int64_t count, stride;
    bool operator==(const Dim &o) const { return count == o.count && stride == o.stride; }
};

struct Seq;
using SeqP = std::shared_ptr<const Seq>;

struct Seg {
    int64_t disp = 0;        // byte offset of the first block (relative to the parent origin)
    std::vector<Dim> dims;   // outer to inner
    int64_t len = 0;         // leaf: bytes of the contiguous block
    SeqP child;              // non-leaf: the repeated sequence (its own offsets from disp)
    // derived (set by normalize):
    int64_t nblocks = 1;             // product of dims counts
    std::vector<int64_t> pk;         // packed bytes per step of each dim
    int64_t body() const;            // packed bytes of one body
    int64_t bytes() const { return nblocks * body(); }
};

// CPU plan of a sequence: runs of small leaf segments (a block, or a short
// strided run of blocks) stored as two plain arrays, so that the CPU
// backend walks 8 bytes per block instead of a Seg.  Offsets are relative
// to the disp of the run's first segment (shift() keeps the plan valid).
struct BlockRun {
    int64_t s0, s1;        // segments [s0, s1) of the sequence
    int64_t b0, n;         // blocks [b0, b0 + n) of off/len
    int64_t bytes;         // packed bytes of the run
    int32_t ulen;          // every block has this length, or 0
    int32_t minlen, maxlen;
};
struct BlockPlan {
    std::vector<BlockRun> runs;   // in segment order
    std::vector<int32_t> off, len;
};

struct Seq {
    std::vector<Seg> segs;
    std::shared_ptr<const BlockPlan> plan;   // null when no run qualifies
    int64_t size = 0;        // packed bytes
    int depth = 1;           // nesting depth (1 = only leaves)
};

bool same_shape(const Seg &a, const Seg &b);   // all but disp
bool same_seq(const Seq &a, const Seq &b);

// One leaf of the tree with all enclosing dimensions (backend.h): the
// form the GPU kernels use.
constexpr int kMaxFlatDims = COLLX_GPU_MAX_FLAT_DIMS;
using FlatItem = collx_gpu_flat_item_t;

struct Form {
    SeqP root;
    int64_t size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
    bool contiguous = false;        // one dense block of size bytes at offset true_lb, extent == size
    std::vector<FlatItem> flat;     // empty if some leaf has more than kMaxFlatDims dims
    bool flat_ok = false;
    int64_t align = 1;              // largest power of two (<=16) dividing all offsets/strides/lengths
    collx_gpu_desc_t desc{};        // what device backends see
    std::string describe() const;
};
using FormP = std::shared_ptr<const Form>;

// Errors: return codes of gpu_dtype.h; message kept per thread.
void set_error(const std::string &msg);
const std::string &last_error();

// Build (uncached) / cached lookup.  Returns COLLX_GPU_* code.
int build_form(MPI_Datatype type, FormP &out);
int get_form(MPI_Datatype type, FormP &out);
int forget_form(MPI_Datatype type);

// Builders (exposed for tests).
SeqP make_leaf(int64_t disp, int64_t len);
SeqP repeat(const SeqP &t, int64_t n, int64_t stride);
SeqP shift(const SeqP &t, int64_t delta);
SeqP concat(const std::vector<SeqP> &parts);
FormP form_from_seq(SeqP root, int64_t lb, int64_t extent);

// CPU pack/unpack of stream bytes [begin,end) of `count` elements.
void pack_range(const Form &f, const char *buf, int64_t count, int64_t begin, int64_t end, char *packed);
void unpack_range(const Form &f, char *buf, int64_t count, int64_t begin, int64_t end, const char *packed);

} // namespace collx_gpu
