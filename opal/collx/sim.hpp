// Discrete-event simulator of collx_transport_t (LogGP style), running the
// real schedules of the core (make_bcast / make_reduce) for up to 64k
// virtual ranks, hanx's staged pipeline (the core's stages) over sub-groups,
// and hanx's reduce_scatter_block (split rails on the core's layout and
// rings, or its levels).  The model and its parameters: docs/simulator.md.
//
// Virtual time is in nanoseconds (double).  Events are ordered by (time,
// sequence number): the same inputs give the same times.  Each rank has a
// CPU (per-message overhead o, reduce and copy costs), a send port (G per
// byte, gap g between injections), and each node a NIC that serialises
// the node's outgoing and incoming inter-node bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "collx/collx.h"

namespace collx {
namespace sim {

// Where two ranks are relative to each other.
enum Level { SameSocket = 0, SameNode = 1, Net = 2, NLevels = 3 };
const char *level_name(int lv);  // "socket", "node", "net"

// LogGP parameters of one level (ns, ns per byte).
struct LevelParams {
    double L = 0;   // latency: wire/propagation time of a message
    double o = 0;   // CPU overhead per message, at sender and at receiver
    double g = 0;   // least time between two injections of one rank
    double G = 0;   // time per byte on the sender's port (and the NIC, across nodes)
    std::size_t eager = 4096;  // larger messages use rendezvous (+ a round trip)
};

struct Params {
    LevelParams level[NLevels];
    double reduce_ns_per_byte = 0;  // reduce_local cost
    double copy_ns_per_byte = 0;    // copy cost (also unexpected eager messages)
    bool nic = true;                // one NIC per node serialises inter-node bytes
    bool nic_in = true;             // ... also incoming ones (false: only egress is a
                                    // bottleneck, as with cluster.sh --rate's shaping)
    int max_send = 8;               // executor limits (adaptx defaults)
    int max_recv = 8;

    // Plausible for the emulated cluster of test/cluster (docs/simulator.md).
    static Params defaults();
    // JSON format of docs/simulator.md; missing keys keep their default.
    // Throws std::runtime_error with a readable message.
    static Params from_json_text(const std::string &text, const Params &base = defaults());
    static Params load(const std::string &path);
    std::string to_json_text() const;
};

// Block placement: ranks [k*per_node, (k+1)*per_node) on node k; within a
// node, blocks of per_socket ranks share a socket (0: sockets unknown, all
// same-node pairs use the SameNode level).
struct Topology {
    int P = 1;
    int per_node = 1;
    int per_socket = 0;

    int node(int r) const { return r / per_node; }
    int nodes() const { return (P + per_node - 1) / per_node; }
    int socket(int r) const { return per_socket > 0 ? (r % per_node) / per_socket : 0; }
    Level level(int a, int b) const {
        if (node(a) != node(b)) return Net;
        return per_socket > 0 && socket(a) == socket(b) ? SameSocket : SameNode;
    }
};

// Reduction for data mode: inout[i] = in[i] op inout[i] over `count` elements.
struct ReduceFn {
    void (*fn)(const void *in, void *inout, std::size_t count);
};

// The event engine and the transport.  Usable alone (tests post raw
// transfers with a custom completion hook) or through run_* below.
class Engine {
  public:
    Engine(const Params &p, const Topology &topo, bool data);
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    // A transport for global rank `rank` in a group: members[i] is the
    // global rank of group rank i (nullptr/empty: the whole world).  The
    // returned object lives as long as the engine.
    const collx_transport_t *transport(int rank, const std::vector<int> *members = nullptr);

    double now() const { return now_; }
    double cpu_free(int rank) const { return cpu_[static_cast<std::size_t>(rank)]; }
    // Run f at time t (>= now).
    void at(double t, std::function<void()> f);
    // Process events until none is left; returns the time of the last one.
    double run();

    // Completion hook (default collx_xfer_complete): tests post raw
    // transfers with their own tokens.
    void (*complete)(void *token, int status) = collx_xfer_complete;

    const Params &params() const { return p_; }
    const Topology &topology() const { return topo_; }
    bool data() const { return data_; }
    std::uint64_t messages() const { return nmsg_; }
    std::uint64_t events() const { return nevents_; }

  private:
    struct Msg;
    struct Ep;
    struct Event {
        double t;
        std::uint64_t seq;
        std::uint32_t type, id;
        bool operator>(const Event &o) const { return t != o.t ? t > o.t : seq > o.seq; }
    };
    static int isend_cb(void *ctx, const void *buf, std::size_t count, const collx_dtype_t *dt,
                        int peer, int tag, void *token);
    static int irecv_cb(void *ctx, void *buf, std::size_t count, const collx_dtype_t *dt, int peer,
                        int tag, void *token);
    static int reduce_cb(void *ctx, const void *in, void *inout, std::size_t count,
                         const collx_dtype_t *dt, void *op);
    static int copy_cb(void *ctx, void *dst, const void *src, std::size_t count,
                       const collx_dtype_t *dt);

    void push(double t, std::uint32_t type, std::uint32_t id);
    std::uint32_t new_msg();
    void free_msg(std::uint32_t id);
    std::uint32_t pair(int src, int dst, int tag, bool is_send);  // FIFO matching
    void inject(std::uint32_t id);
    void deliver(std::uint32_t id, bool unexpected);
    void maybe_free(std::uint32_t id);

    Params p_;
    Topology topo_;
    bool data_;
    double now_ = 0;
    std::uint64_t seq_ = 0, nmsg_ = 0, nevents_ = 0;
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> q_;
    std::vector<double> cpu_, port_, last_inject_;  // per rank
    std::vector<double> nic_out_, nic_in_;          // per node
    std::vector<Msg> msgs_;
    std::vector<std::uint32_t> free_msgs_;
    // (src, dst, tag) -> FIFO of records waiting for their other half
    std::unordered_map<std::uint64_t, std::pair<std::uint32_t, std::uint32_t>> waiting_;
    std::vector<std::unique_ptr<Ep>> eps_;
    std::vector<std::function<void()>> calls_;
    std::vector<std::uint32_t> free_calls_;
};

// ------------------------------------------------------------ collectives

// The collectives the simulator runs: entries of the core's table (collx.h).
// allgather and reduce_scatter_block: hanx's only; count is each rank's
// block (allgather: send buffers hold one block, receive buffers P;
// reduce_scatter_block: the other way round).
enum class Coll {
    Bcast = COLLX_COLL_BCAST,
    Reduce = COLLX_COLL_REDUCE,
    Allreduce = COLLX_COLL_ALLREDUCE,
    Allgather = COLLX_COLL_ALLGATHER,
    ReduceScatterBlock = COLLX_COLL_REDUCE_SCATTER_BLOCK
};
const char *coll_name(Coll c);
bool parse_coll(const std::string &s, Coll *out);

// hanx's level left to Open MPI's module ("module", coll/hanx's default
// for coll_hanx_low/up_algorithm): the executor tree closest to what
// tuned's fixed decision runs there (module_tree in sim.cpp).
constexpr int kModuleTree = -1;

// A flat executor tree (adaptx) or hanx's pipeline of the core's stages
// (collx_hier_plan: 2 levels, or 3 where nodes have several sockets).
struct Algo {
    bool hanx = false;
    int tree = COLLX_TREE_BINOMIAL;  // flat: the tree; hanx: not used
    int fanout = 4;                  // knomial radix / chain count (adaptx default)
    int low = kModuleTree;           // hanx: tree within a node (kModuleTree: the module's)
    int up = kModuleTree;            // hanx: tree across the node leaders (likewise)
    std::size_t inner_seg = 0;       // hanx: segment size of the sub-collectives (0: default)
    bool schedule = false;           // hanx: every step an i-collective, not serial
                                     // (coll_hanx_blocking_schedule 1, the non-blocking
                                     // calls); else a blocking call's serial schedule
    bool split = false;              // hanx: allreduce as split rails (a rule's "split"),
                                     // where the nodes are of one size; else the levels;
                                     // allgather: the node ring (a rule's "node_ring")
};
// "binomial", ..., "topo", "hanx" (the one flag's built-in choice: every
// level left to the module, as coll/hanx runs it by default, and a large
// allreduce as one ring where hanx takes it), "hanx:LOW:UP" (the levels,
// e.g. hanx:binomial:pipeline; LOW or UP may be "module"),
// "hanx-sched", "hanx-sched:LOW:UP" (hanx's non-blocking calls), and the same
// with "hanx-split" for "hanx" (split-rail allreduce; the rail runs UP):
// "hanx-split", "hanx-split-sched:LOW:UP".
bool parse_algo(const std::string &s, Algo *out);
std::string algo_name(const Algo &a);
// The flat trees and hanx, as the sweep uses them.
std::vector<Algo> all_algos();

// Segment size used when the caller gives 0, as the components choose it
// by default, from the core's one place (collx_tree_segment_bytes with
// adaptx's default LP constants, collx_hier_segment_bytes for hanx).
std::size_t default_segment(const Params &p, const Topology &t, Coll c, const Algo &a,
                            std::size_t bytes);

struct Result {
    std::vector<double> finish_ns;  // per rank: its operation done and its CPU idle
    double time_ns = 0;             // the collective's time: the latest finish
    std::uint64_t messages = 0, events = 0;
};

// Buffers for data mode (one entry per rank; element type `dt`, contiguous).
// For bcast only `recv` is used (the buffer); reductions read `send`, write
// `recv` (every rank for allreduce, the root for reduce).
struct Buffers {
    std::vector<void *> send, recv;
    collx_dtype_t dt{};
    ReduceFn *op = nullptr;
    bool commutative = true;
};

// Run one collective from time 0 on every rank.  count = elements of
// bufs->dt in data mode; with bufs == nullptr (data-free) count = bytes.
// seg: bytes per segment (0 = default_segment).  Any root.
// Throws std::invalid_argument on bad arguments, std::runtime_error when
// the schedule did not finish (a deadlock: a bug).
Result run(const Params &p, const Topology &t, Coll c, const Algo &a, std::size_t count,
           std::size_t seg, int root = 0, const Buffers *bufs = nullptr);

// Predicted time of the collective in seconds (data-free).
double predict(const Params &p, const Topology &t, Coll c, const Algo &a, std::size_t bytes,
               std::size_t seg = 0);

// --------------------------------------------------------------- fitting

// A measured ping-pong: one-way time (half the round trip) for `bytes`.
struct Sample {
    int level;  // Level
    double bytes;
    double us;
};
// Per level: G from the slope of the largest samples (asymptotic cost per
// byte), L + 2o from the small eager ones, L from the rendezvous samples'
// extra round trip (3L + 2o + kG), else L + 2o split by o_share
// (o = o_share * (L + 2o) / 2); medians against noise.  Levels without
// samples keep `base`'s values.  Details: docs/simulator.md.
Params fit(const std::vector<Sample> &samples, const Params &base, double o_share = 0.25,
           std::string *report = nullptr);
// Samples from JSON {"net": [[bytes, us], ...], "node": [...], "socket": [...]}
// or CSV lines "level,bytes,us" (# comments).  Throws std::runtime_error.
std::vector<Sample> parse_samples(const std::string &text);

}  // namespace sim
}  // namespace collx
