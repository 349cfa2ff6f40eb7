// Discrete-event simulator: engine, transport, flat and hanx collectives,
// parameter fitting.  See sim.hpp and docs/simulator.md.
#include "sim.hpp"

#include <algorithm>
#include <deque>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "executor.hpp"
#include "schedule.hpp"

namespace collx {
namespace sim {

namespace {
constexpr std::uint32_t NONE = 0xffffffffu;
enum EvType : std::uint32_t { INJECT, ARRIVE, RTS, CTS, SEND_DONE, RECV_DONE, CALL };
}  // namespace

const char *level_name(int lv) {
    switch (lv) {
        case SameSocket: return "socket";
        case SameNode: return "node";
        case Net: return "net";
    }
    return "?";
}

// One message: created by whichever of isend/irecv comes first and
// completed by the other (FIFO per (src, dst, tag), as MPI matches).
struct Engine::Msg {
    int src = -1, dst = -1;
    std::size_t bytes = 0;
    Level lv = Net;
    bool has_send = false, has_recv = false;
    bool rndv = false;
    bool arrived = false;      // eager: data here; rendezvous: RTS here
    bool send_done = false, recv_done = false;
    void *send_token = nullptr, *recv_token = nullptr;
    char *recv_buf = nullptr;
    std::size_t recv_cap = 0;
    double recv_posted = 0;     // when the receiver's CPU got to post it
    std::vector<char> payload;  // data mode
    std::uint32_t next = NONE;  // FIFO link while waiting for the other half
};

struct Engine::Ep {
    Engine *e;
    int rank;                         // global
    const std::vector<int> *members;  // group rank -> global, or nullptr
    collx_transport_t t;
    int global(int peer) const {
        if (!members) return peer;
        if (peer < 0 || peer >= static_cast<int>(members->size())) return -1;
        return (*members)[static_cast<std::size_t>(peer)];
    }
};

Engine::Engine(const Params &p, const Topology &topo, bool data)
    : p_(p), topo_(topo), data_(data) {
    if (topo_.P < 1 || topo_.P >= (1 << 17) || topo_.per_node < 1 || topo_.per_socket < 0)
        throw std::invalid_argument("simulator: bad topology (1 <= P < 131072 ranks)");
    const auto P = static_cast<std::size_t>(topo_.P);
    cpu_.assign(P, 0.0);
    port_.assign(P, 0.0);
    last_inject_.assign(P, -1e300);
    nic_out_.assign(static_cast<std::size_t>(topo_.nodes()), 0.0);
    nic_in_ = nic_out_;
    waiting_.reserve(P * 2);
}

Engine::~Engine() = default;

const collx_transport_t *Engine::transport(int rank, const std::vector<int> *members) {
    auto ep = std::make_unique<Ep>();
    ep->e = this;
    ep->rank = rank;
    ep->members = members && !members->empty() ? members : nullptr;
    collx_transport_t &t = ep->t;
    t.ctx = ep.get();
    if (ep->members) {
        t.size = static_cast<int>(members->size());
        t.rank = static_cast<int>(std::find(members->begin(), members->end(), rank) -
                                  members->begin());
        if (t.rank == t.size) throw std::invalid_argument("simulator: rank not in its group");
    } else {
        t.size = topo_.P;
        t.rank = rank;
    }
    t.isend = &Engine::isend_cb;
    t.irecv = &Engine::irecv_cb;
    t.reduce_local = &Engine::reduce_cb;
    t.copy = &Engine::copy_cb;
    eps_.push_back(std::move(ep));
    return &eps_.back()->t;
}

void Engine::push(double t, std::uint32_t type, std::uint32_t id) {
    q_.push(Event{t, seq_++, type, id});
}

void Engine::at(double t, std::function<void()> f) {
    std::uint32_t id;
    if (!free_calls_.empty()) {
        id = free_calls_.back();
        free_calls_.pop_back();
        calls_[id] = std::move(f);
    } else {
        id = static_cast<std::uint32_t>(calls_.size());
        calls_.push_back(std::move(f));
    }
    push(std::max(t, now_), CALL, id);
}

std::uint32_t Engine::new_msg() {
    if (!free_msgs_.empty()) {
        std::uint32_t id = free_msgs_.back();
        free_msgs_.pop_back();
        msgs_[id] = Msg{};
        return id;
    }
    msgs_.emplace_back();
    return static_cast<std::uint32_t>(msgs_.size() - 1);
}

void Engine::free_msg(std::uint32_t id) {
    msgs_[id].payload = std::vector<char>();
    free_msgs_.push_back(id);
}

void Engine::maybe_free(std::uint32_t id) {
    if (msgs_[id].send_done && msgs_[id].recv_done) free_msg(id);
}

// The record this half (send or receive) belongs to: the oldest record of
// the other kind waiting on (src, dst, tag), or a new one queued there.
std::uint32_t Engine::pair(int src, int dst, int tag, bool is_send) {
    // ranks < 2^17 (P <= 65536 + slack), tags < 2^30: an exact key
    if (tag < 0 || tag >= (1 << 30)) throw std::runtime_error("simulator: tag out of range");
    const std::uint64_t key = (static_cast<std::uint64_t>(src) << 47) |
                              (static_cast<std::uint64_t>(dst) << 30) |
                              static_cast<std::uint64_t>(tag);
    auto it = waiting_.find(key);
    if (it != waiting_.end()) {
        const std::uint32_t head = it->second.first;
        Msg &m = msgs_[head];
        if (is_send ? !m.has_send : !m.has_recv) {  // the other half is waiting
            it->second.first = m.next;
            if (m.next == NONE) waiting_.erase(it);
            m.next = NONE;
            return head;
        }
    }
    const std::uint32_t id = new_msg();
    Msg &m = msgs_[id];
    m.src = src;
    m.dst = dst;
    auto [jt, fresh] = waiting_.try_emplace(key, id, id);
    if (!fresh) {
        msgs_[jt->second.second].next = id;
        jt->second.second = id;
    }
    return id;
}

int Engine::isend_cb(void *ctx, const void *buf, std::size_t count, const collx_dtype_t *dt,
                     int peer, int tag, void *token) {
    auto *ep = static_cast<Ep *>(ctx);
    Engine &e = *ep->e;
    const int a = ep->rank, b = ep->global(peer);
    if (b < 0 || b >= e.topo_.P || b == a) return 2;
    const std::size_t bytes = count * dt->size;
    const std::uint32_t id = e.pair(a, b, tag, true);
    Msg &m = e.msgs_[id];
    m.has_send = true;
    m.bytes = bytes;
    m.send_token = token;
    m.lv = e.topo_.level(a, b);
    const LevelParams &lp = e.p_.level[m.lv];
    m.rndv = bytes > lp.eager;
    if (e.data_) {
        const char *p = static_cast<const char *>(buf);
        m.payload.assign(p, p + bytes);
    }
    ++e.nmsg_;
    double &cpu = e.cpu_[static_cast<std::size_t>(a)];
    const double c0 = std::max(e.now_, cpu);
    cpu = c0 + lp.o;
    if (m.rndv)
        e.push(c0 + lp.o + lp.L, RTS, id);  // the envelope reaches the receiver
    else
        e.push(c0 + lp.o, INJECT, id);
    return 0;
}

int Engine::irecv_cb(void *ctx, void *buf, std::size_t count, const collx_dtype_t *dt, int peer,
                     int tag, void *token) {
    auto *ep = static_cast<Ep *>(ctx);
    Engine &e = *ep->e;
    const int b = ep->rank, a = ep->global(peer);
    if (a < 0 || a >= e.topo_.P || a == b) return 2;
    const std::uint32_t id = e.pair(a, b, tag, false);
    Msg &m = e.msgs_[id];
    m.has_recv = true;
    m.recv_token = token;
    m.recv_buf = static_cast<char *>(buf);
    m.recv_cap = count * dt->size;
    // posted in program order: after whatever the CPU is still busy with
    m.recv_posted = std::max(e.now_, e.cpu_[static_cast<std::size_t>(b)]);
    if (m.has_send && m.arrived) {
        if (m.rndv)
            e.push(m.recv_posted + e.p_.level[m.lv].L, CTS, id);
        else
            e.deliver(id, true);
    }
    return 0;
}

int Engine::reduce_cb(void *ctx, const void *in, void *inout, std::size_t count,
                      const collx_dtype_t *dt, void *op) {
    auto *ep = static_cast<Ep *>(ctx);
    Engine &e = *ep->e;
    double &cpu = e.cpu_[static_cast<std::size_t>(ep->rank)];
    cpu = std::max(e.now_, cpu) + static_cast<double>(count * dt->size) * e.p_.reduce_ns_per_byte;
    if (e.data_ && op) static_cast<ReduceFn *>(op)->fn(in, inout, count);
    return 0;
}

int Engine::copy_cb(void *ctx, void *dst, const void *src, std::size_t count,
                    const collx_dtype_t *dt) {
    auto *ep = static_cast<Ep *>(ctx);
    Engine &e = *ep->e;
    double &cpu = e.cpu_[static_cast<std::size_t>(ep->rank)];
    cpu = std::max(e.now_, cpu) + static_cast<double>(count * dt->size) * e.p_.copy_ns_per_byte;
    if (e.data_ && count) std::memmove(dst, src, count * dt->size);
    return 0;
}

// The data leaves the sender's port (and across nodes its node's NIC, then
// enters the receiving node's NIC).
void Engine::inject(std::uint32_t id) {
    Msg &m = msgs_[id];
    const LevelParams &lp = p_.level[m.lv];
    const auto a = static_cast<std::size_t>(m.src);
    const double dur = static_cast<double>(m.bytes) * lp.G;
    double start = std::max({now_, port_[a], last_inject_[a] + lp.g});
    const bool nic = p_.nic && m.lv == Net;
    const auto na = static_cast<std::size_t>(topo_.node(m.src));
    const auto nb = static_cast<std::size_t>(topo_.node(m.dst));
    if (nic) start = std::max(start, nic_out_[na]);
    const double end = start + dur;
    port_[a] = end;
    last_inject_[a] = start;
    double arrive = end + lp.L;
    if (nic) nic_out_[na] = end;
    if (nic && p_.nic_in) {
        const double rx = std::max(start + lp.L, nic_in_[nb]);
        arrive = rx + dur;
        nic_in_[nb] = arrive;
    }
    push(end, SEND_DONE, id);
    push(arrive, ARRIVE, id);
}

// The receive completes: the receiver's CPU spends o (and a copy out of
// the unexpected-message buffer for an eager message that came first).
void Engine::deliver(std::uint32_t id, bool unexpected) {
    Msg &m = msgs_[id];
    const LevelParams &lp = p_.level[m.lv];
    double &cpu = cpu_[static_cast<std::size_t>(m.dst)];
    double t = std::max(now_, cpu) + lp.o;
    if (unexpected && !m.rndv) t += static_cast<double>(m.bytes) * p_.copy_ns_per_byte;
    cpu = t;
    push(t, RECV_DONE, id);
}

double Engine::run() {
    while (!q_.empty()) {
        const Event ev = q_.top();
        q_.pop();
        now_ = ev.t;
        ++nevents_;
        switch (ev.type) {
            case CALL: {
                std::function<void()> f = std::move(calls_[ev.id]);
                calls_[ev.id] = nullptr;
                free_calls_.push_back(ev.id);
                f();
                break;
            }
            case INJECT: inject(ev.id); break;
            case RTS: {
                Msg &m = msgs_[ev.id];
                m.arrived = true;
                if (m.has_recv) push(std::max(now_, m.recv_posted) + p_.level[m.lv].L, CTS, ev.id);
                break;
            }
            case CTS: inject(ev.id); break;
            case ARRIVE: {
                Msg &m = msgs_[ev.id];
                if (m.rndv) {
                    deliver(ev.id, false);
                } else {
                    m.arrived = true;
                    if (m.has_recv) deliver(ev.id, m.recv_posted > now_);
                }
                break;
            }
            case SEND_DONE: {
                Msg &m = msgs_[ev.id];
                m.send_done = true;
                void *tok = m.send_token;
                maybe_free(ev.id);  // (before the callback: it may post and grow msgs_)
                complete(tok, 0);
                break;
            }
            case RECV_DONE: {
                Msg &m = msgs_[ev.id];
                int status = 0;
                if (m.bytes > m.recv_cap) status = 1;  // truncation
                else if (data_ && m.bytes) std::memcpy(m.recv_buf, m.payload.data(), m.bytes);
                m.recv_done = true;
                void *tok = m.recv_token;
                maybe_free(ev.id);
                complete(tok, status);
                break;
            }
        }
    }
    return now_;
}

// ------------------------------------------------------------ collectives

const char *coll_name(Coll c) { return collx_coll_name(static_cast<int>(c)); }

bool parse_coll(const std::string &s, Coll *out) {
    for (Coll c : {Coll::Bcast, Coll::Reduce, Coll::Allreduce, Coll::Allgather,
                   Coll::ReduceScatterBlock})
        if (s == coll_name(c)) return *out = c, true;
    return false;
}

namespace {

bool parse_tree(const std::string &s, int *out) {
    for (int k = 0; k < COLLX_TREE_COUNT; ++k)
        if (s == collx_tree_name(k)) return *out = k, true;
    return false;
}

bool parse_level(const std::string &s, int *out) {
    if (s == "module") return *out = kModuleTree, true;
    return parse_tree(s, out);
}

const char *level_tree_name(int tree) { return tree == kModuleTree ? "module" : collx_tree_name(tree); }

}  // namespace

bool parse_algo(const std::string &name, Algo *out) {
    Algo a;
    std::string s = name;
    if (s == "hanx-split" || s.rfind("hanx-split:", 0) == 0 || s.rfind("hanx-split-sched", 0) == 0) {
        a.split = true;  // split-rail allreduce
        s = "hanx" + s.substr(10);
    }
    if (s == "hanx-sched" || s.rfind("hanx-sched:", 0) == 0) {  // hanx on its schedules
        a.schedule = true;
        s = "hanx" + s.substr(10);
    }
    if (s == "hanx" || s.rfind("hanx:", 0) == 0) {
        a.hanx = true;
        if (s.size() > 4) {
            const std::string rest = s.substr(5);
            const auto colon = rest.find(':');
            if (colon == std::string::npos) return false;
            if (!parse_level(rest.substr(0, colon), &a.low) ||
                !parse_level(rest.substr(colon + 1), &a.up))
                return false;
            if (a.low == COLLX_TREE_TOPO || a.up == COLLX_TREE_TOPO) return false;
        }
        *out = a;
        return true;
    }
    if (a.schedule || !parse_tree(s, &a.tree)) return false;
    *out = a;
    return true;
}

std::string algo_name(const Algo &a) {
    if (!a.hanx) return collx_tree_name(a.tree);
    const std::string h =
        std::string("hanx") + (a.split ? "-split" : "") + (a.schedule ? "-sched" : "");
    if (a.low == kModuleTree && a.up == kModuleTree) return h;
    return h + ":" + level_tree_name(a.low) + ":" + level_tree_name(a.up);
}

std::vector<Algo> all_algos() {
    std::vector<Algo> v;
    for (int k = 0; k < COLLX_TREE_COUNT; ++k) {
        Algo a;
        a.tree = k;
        v.push_back(a);
    }
    Algo h;
    h.hanx = true;
    v.push_back(h);
    h.low = COLLX_TREE_BINOMIAL;  // hanx:binomial:pipeline
    h.up = COLLX_TREE_PIPELINE;
    v.push_back(h);
    return v;
}

std::size_t default_segment(const Params &, const Topology &t, Coll c, const Algo &a,
                            std::size_t bytes) {
    if (a.hanx) return collx_hier_segment_bytes(static_cast<int>(c), bytes);  // 0 = one segment
    return collx_tree_segment_bytes(static_cast<int>(c), a.tree, bytes, t.P, a.fanout,
                                    COLLX_LP_ALPHA_NS_DEFAULT * 1e-9,
                                    COLLX_LP_BETA_PS_DEFAULT * 1e-12);
}

namespace {

// Dummy buffers of the data-free mode (never read or written).
char dummy_send[16], dummy_recv[16];

// Data-free datatype: one "element" per byte, zero extent, so the
// executor's segment offsets are all 0 and its scratch buffers are 1 byte:
// nothing proportional to the message is allocated at any scale.
collx_dtype_t nodata_dtype() {
    collx_dtype_t d{};
    d.size = 1;
    d.extent = 0;
    d.true_lb = 0;
    d.true_extent = 0;
    return d;
}

collx_tuning_t tuning_for(const Params &p, int tree, int fanout, std::size_t seg,
                          const int *node_of) {
    collx_tuning_t tun{};
    tun.tree = tree;
    tun.fanout = fanout;
    tun.segment_bytes = seg;
    tun.max_send = p.max_send;
    tun.max_recv = p.max_recv;
    tun.node_of = node_of;
    return tun;
}

// Collects the ranks' finish times and failures.
struct Runner {
    Engine &e;
    std::vector<double> finish;
    int failed = 0;
    explicit Runner(Engine &eng) : e(eng), finish(static_cast<std::size_t>(eng.topology().P), -1) {}
};

struct FlatCtx {
    Runner *run;
    int rank;
    std::unique_ptr<Operation> op;
};

void flat_done(void *ctx, int status) {
    auto *f = static_cast<FlatCtx *>(ctx);
    Runner &r = *f->run;
    if (status != COLLX_OK) ++r.failed;
    r.finish[static_cast<std::size_t>(f->rank)] = std::max(r.e.now(), r.e.cpu_free(f->rank));
}

Result finish_result(Runner &r, Engine &e) {
    Result res;
    res.finish_ns = r.finish;
    for (double t : r.finish) {
        if (t < 0) throw std::runtime_error("simulator: a rank never finished (deadlock)");
        res.time_ns = std::max(res.time_ns, t);
    }
    if (r.failed) throw std::runtime_error("simulator: a transfer failed (truncation)");
    res.messages = e.messages();
    res.events = e.events();
    return res;
}

Result run_flat(Engine &e, Coll c, const Algo &a, std::size_t count, std::size_t seg, int root,
                const Buffers *bufs) {
    const Topology &topo = e.topology();
    const int P = topo.P;
    std::vector<int> node_of;
    if (a.tree == COLLX_TREE_TOPO) {
        node_of.resize(static_cast<std::size_t>(P));
        for (int r = 0; r < P; ++r) node_of[static_cast<std::size_t>(r)] = topo.node(r);
    }
    const collx_tuning_t tun =
        tuning_for(e.params(), a.tree, a.fanout, seg, node_of.empty() ? nullptr : node_of.data());
    const collx_dtype_t dt = bufs ? bufs->dt : nodata_dtype();
    Runner run(e);
    std::vector<FlatCtx> ctx(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) {
        const auto ri = static_cast<std::size_t>(r);
        ctx[ri].run = &run;
        ctx[ri].rank = r;
        const collx_transport_t &t = *e.transport(r);
        const collx_notify_t nt{&flat_done, &ctx[ri]};
        void *sb = bufs ? bufs->send[ri] : dummy_send;
        void *rb = bufs ? bufs->recv[ri] : dummy_recv;
        void *op = bufs ? static_cast<void *>(bufs->op) : nullptr;
        const bool commute = bufs ? bufs->commutative : true;
        if (c == Coll::Bcast)
            ctx[ri].op = make_bcast(t, rb, count, dt, root, 1, tun, &nt);
        else
            ctx[ri].op = make_reduce(t, sb, rb, count, dt, op, commute, root, c == Coll::Allreduce,
                                     1, tun, &nt);
        ctx[ri].op->start();
    }
    e.run();
    return finish_result(run, e);
}

// ------------------------------------------------------------------- hanx
//
// coll/hanx's collectives: the core's stages (collx_hier_plan, the ones
// hanx runs) on 2 levels (node, node leaders) or, where a node has several
// sockets, 3 (socket, node, node leaders); any root.  A call of one
// segment runs its stages one after the other (hanx_step); a pipelined one
// runs on the core's schedule engine, as hanx does: step (stage, segment)
// starts when its input is done and the steps before it on its
// communicator have started -- for a blocking call (Algo::schedule false)
// finished: its schedule is serial.  The sub-collectives are collx trees:
// Algo::up across the node leaders, Algo::low below; the message from the
// root's representative to a root that does not represent its node is a
// bcast of the pair.

struct Stage {
    collx_hier_stage_t st;
    const collx_transport_t *tr;
    int root;          // in the stage's group
    bool in_place;     // reductions: sendbuf = MPI_IN_PLACE
    char *sbuf, *rbuf; // segment-0 addresses (nullptr: unused)
    int place;         // split rails: the rank's place in its node (its chunk)
};


struct HanxCtx;

struct HanxRank;
struct SubStep {  // a step the schedule started: its sub-collective and token
    HanxRank *r;
    void *token;
    std::unique_ptr<Operation> op;
};

struct HanxRank {
    HanxCtx *h;
    int rank;
    std::vector<Stage> stages;
    std::unique_ptr<Operation> sched;          // schedule mode: the rank's pipeline
    std::deque<SubStep> subs;                  // ... and its started steps
    std::size_t step = 0, nsteps = 0;
    int pending = 0;
    std::vector<std::unique_ptr<Operation>> ops;  // of the running step
};

struct HanxCtx {
    Engine *e;
    Runner *run;
    const Params *p;
    const Algo *a;
    collx_dtype_t dt;
    ReduceFn *op;
    bool commutative;
    int nlevels;
    int coll;             // COLLX_COLL_*
    std::size_t bytes;    // the whole message (count x the type's size)
    std::size_t count, per_seg, nseg, inner_seg;
    int parts = 0;       // split rails: ranks per node (chunks per segment); else 0
    int tag_stride = 1;  // tags per (stage, segment): split rails' groups take parts + 1
    std::vector<std::unique_ptr<HanxRank>> ranks;
    std::vector<std::vector<char>> temp;  // accumulators (reduce, data mode)
    std::deque<std::vector<int>> pairs;   // groups of the messages (live as long as the run)
};

// A level left to Open MPI's module (kModuleTree): the executor tree
// closest to what coll/tuned's fixed decision (Open MPI 4.1 and 5.0) runs
// on a communicator of P ranks for `bytes`, unsegmented as tuned runs it.
// Allreduce: recursive doubling below 8 KiB and for non-commutative ops,
// above that tuned's reduce-scatter + allgather family (Rabenseifner,
// ring), which the ring models.  On 4 to 7 ranks, bcast: a tree below
// 8 KiB, then the root sends to every rank (linear) up to 1 MiB, then a
// chain; a commutative reduce: every rank sends to the root (tuned's
// unsegmented chain of fanout 4) from 4 KiB to 64 KiB.  The rest: the
// binomial tree (tuned's binomial and binary trees differ little on the 2
// to 4 ranks of the emulated levels).
int module_tree(int kind, int P, std::size_t bytes, bool commutative) {
    if (kind == COLLX_HSTEP_ALLREDUCE)
        return bytes < 8192 || !commutative ? COLLX_TREE_RECURSIVE_DOUBLING : COLLX_TREE_RING;
    const bool bcast = kind == COLLX_HSTEP_BCAST || kind == COLLX_HSTEP_RECV ||
                       kind == COLLX_HSTEP_SEND;
    const bool few = P >= 4 && P < 8;
    if (bcast && few && bytes >= 8192)
        return bytes < (std::size_t(1) << 20) ? COLLX_TREE_LINEAR : COLLX_TREE_PIPELINE;
    if (kind == COLLX_HSTEP_REDUCE && few && commutative && bytes >= 4096 && bytes < 65536)
        return COLLX_TREE_LINEAR;
    return COLLX_TREE_BINOMIAL;
}

// A level left to Open MPI's module in a non-blocking call (Algo::schedule):
// the executor tree closest to what libnbc (Open MPI 4.1's i-collectives)
// runs for `bytes` on P ranks, its segment in *seg (libnbc's binomial and
// linear schedules are unsegmented, its chain moves fragments).  Ibcast:
// the root sends to every rank on up to 4 ranks, a binomial tree below
// 64 KiB, a chain in 8 KiB fragments below 512 KiB and in 32 KiB ones
// above.  Iallreduce: hanx's leaders' stage is in place, where libnbc
// always takes its binomial reduce then bcast (the executor's binomial
// allreduce).  The rest as the blocking module (module_tree): hanx runs
// its non-blocking reduce and small allreduce levels on collx trees
// (collx_hier_level_tree), and its point-to-point steps are the PML's.
int libnbc_tree(int kind, int P, std::size_t bytes, bool commutative, std::size_t *seg) {
    *seg = std::max<std::size_t>(bytes, 1);
    if (kind == COLLX_HSTEP_BCAST) {
        if (P <= 4) return COLLX_TREE_LINEAR;
        if (bytes < 65536) return COLLX_TREE_BINOMIAL;
        *seg = bytes < 524288 ? 8192 : 32768;
        return COLLX_TREE_PIPELINE;
    }
    if (kind == COLLX_HSTEP_ALLREDUCE) return COLLX_TREE_BINOMIAL;
    return module_tree(kind, P, bytes, commutative);
}

// The sub-collective of stage s on segment seg: a collx tree on the
// stage's group (Algo::up on the top level, Algo::low below), one tag per
// (stage, segment) that all members agree on.
std::unique_ptr<Operation> stage_op(const HanxCtx &h, const Stage &s, std::size_t seg,
                                    const collx_notify_t &nt) {
    const std::size_t first = seg * h.per_seg;
    std::size_t n = std::min(h.per_seg, h.count - first);
    std::ptrdiff_t off = static_cast<std::ptrdiff_t>(first) * h.dt.extent;
    const bool up = s.st.level == h.nlevels - 1 || s.st.level == COLLX_HLEVEL_RAIL;
    // a level left to the module: hanx's built-in collx tree where it has
    // one (the core's collx_hier_level_tree; the schedules stand for the
    // non-blocking calls), else the module's algorithm, unsegmented
    int level_tree = up ? h.a->up : h.a->low;
    std::size_t inner = h.inner_seg;
    if (level_tree == kModuleTree) {
        level_tree = collx_hier_level_tree(h.coll, h.bytes, up, s.tr->size, h.a->schedule);
        if (level_tree < 0) {
            inner = std::max<std::size_t>(n * h.dt.size, 1);  // (one segment)
            level_tree = h.a->schedule
                             ? libnbc_tree(s.st.kind, s.tr->size, inner, h.commutative, &inner)
                             : module_tree(s.st.kind, s.tr->size, inner, h.commutative);
        }
    }
    const collx_tuning_t tun = tuning_for(*h.p, level_tree, h.a->fanout, inner, nullptr);
    const int tag = 2 + h.tag_stride * static_cast<int>(static_cast<std::size_t>(s.st.number) * h.nseg + seg);
    // split rails: chunk c of the segment, [at(c).first, + at(c).second)
    // (by value: the groups' kids are made after this returns)
    const auto at = [n, parts = h.parts, extent = h.dt.extent](int c) {
        std::size_t f = 0, k = 0;
        collx_hier_chunk(n, parts, c, &f, &k);
        return std::pair<std::ptrdiff_t, std::size_t>{static_cast<std::ptrdiff_t>(f) * extent, k};
    };
    const auto shifted = [](char *b, std::ptrdiff_t o) { return b ? b + o : nullptr; };
    // split rails' reduce-scatter and allgather on the collx ring's halves
    // (the level's tree, commutative ops): the whole segment, each rank's
    // chunk at its place
    const bool rs = s.st.kind == COLLX_HSTEP_REDUCE_SCATTER;
    const bool halves = rs || s.st.kind == COLLX_HSTEP_ALLGATHER;
    if (halves && level_tree == COLLX_TREE_RING && h.commutative) {
        const char *sb = !rs ? nullptr : s.sbuf ? s.sbuf + off : dummy_send;
        return make_ring(*s.tr, rs ? COLLX_RING_REDUCE_SCATTER : COLLX_RING_ALLGATHER, sb,
                         s.rbuf ? s.rbuf + off : dummy_recv, n, h.dt, h.op, tag, tun, &nt);
    }
    // else one reduce per chunk, to the chunk's owner, and one bcast per
    // chunk, from its owner, all chunks at once, where a real run uses the
    // node communicator's module
    if (halves) {
        const Stage *sp = &s;
        const HanxCtx *hp = &h;
        return make_group(h.parts, [=](int c, const collx_notify_t &knt) {
            const auto [o, k] = at(c);
            char *mine = shifted(sp->rbuf, off + o);
            const int ktag = tag + 1 + c;
            if (!rs)  // chunk c from its owner, in place everywhere
                return make_bcast(*sp->tr, mine ? mine : dummy_recv, k, hp->dt, c, ktag, tun, &knt);
            const char *from = shifted(sp->sbuf, off + o);
            return make_reduce(*sp->tr, from ? from : dummy_send,
                               c == sp->place && mine ? mine : dummy_recv, k, hp->dt, hp->op,
                               hp->commutative, c, false, ktag, tun, &knt);
        }, &nt);
    }
    if (s.st.chunk) {  // the rank's chunk alone
        const auto [o, k] = at(s.place);
        off += o;
        n = k;
    }
    char *rb = s.rbuf ? s.rbuf + off : dummy_recv;
    const char *sb = s.in_place ? nullptr : (s.sbuf ? s.sbuf + off : dummy_send);
    switch (s.st.kind) {
        case COLLX_HSTEP_BCAST:
        case COLLX_HSTEP_RECV: return make_bcast(*s.tr, rb, n, h.dt, s.root, tag, tun, &nt);
        case COLLX_HSTEP_SEND:  // the pair's bcast from the sender
            return make_bcast(*s.tr, const_cast<char *>(sb), n, h.dt, s.root, tag, tun, &nt);
        default:  // reduce, allreduce
            return make_reduce(*s.tr, sb, rb, n, h.dt, h.op, h.commutative, s.root,
                               s.st.kind == COLLX_HSTEP_ALLREDUCE, tag, tun, &nt);
    }
}

void hanx_step(HanxRank &r);

void next_step(HanxRank &r) {
    r.ops.clear();  // all finished; not inside any of them here
    ++r.step;
    hanx_step(r);
}

void stage_done(void *ctx, int status) {
    auto &r = *static_cast<HanxRank *>(ctx);
    if (status != COLLX_OK) ++r.h->run->failed;
    // the next step once the rank's CPU is done with this one (a blocking
    // stage returns after its last reduction), from outside the operation
    Engine &e = *r.h->e;
    if (--r.pending == 0) e.at(std::max(e.now(), e.cpu_free(r.rank)), [&r]() { next_step(r); });
}

void hanx_step(HanxRank &r) {
    HanxCtx &h = *r.h;
    Engine &e = *h.e;
    while (r.step < r.nsteps) {
        const std::size_t t = r.step;
        for (const Stage &s : r.stages) {
            if (static_cast<std::size_t>(s.st.number) > t) continue;
            const std::size_t seg = t - static_cast<std::size_t>(s.st.number);
            if (seg >= h.nseg) continue;
            const collx_notify_t nt{&stage_done, &r};
            r.ops.push_back(stage_op(h, s, seg, nt));
        }
        if (r.ops.empty()) {  // nothing in this step
            ++r.step;
            continue;
        }
        // start after all are made; the guard keeps one that finishes
        // inside start() from continuing the rank from in there
        r.pending = static_cast<int>(r.ops.size()) + 1;
        for (auto &op : r.ops) op->start();
        if (--r.pending > 0) return;  // stage_done continues
        if (e.cpu_free(r.rank) > e.now()) {  // as in stage_done
            e.at(e.cpu_free(r.rank), [&r]() { next_step(r); });
            return;
        }
        r.ops.clear();
        ++r.step;
    }
    h.run->finish[static_cast<std::size_t>(r.rank)] = std::max(e.now(), e.cpu_free(r.rank));
}

// hanx on its schedules (pipelined calls): the core's schedule engine
// starts step (stage, segment) when its input is done, COLLX_HIER_WINDOW
// segments in flight; serial for a blocking call, not for Algo::schedule
// (coll_hanx_blocking_schedule 1, and the non-blocking calls).
void sub_done(void *ctx, int status) {
    collx_xfer_complete(static_cast<SubStep *>(ctx)->token, status);
}

int sched_step(void *ctx, int stage, std::size_t seg, void *token) {
    auto &r = *static_cast<HanxRank *>(ctx);
    r.subs.push_back(SubStep{&r, token, nullptr});  // (a deque: earlier steps stay put)
    SubStep &st = r.subs.back();
    const collx_notify_t nt{&sub_done, &st};
    st.op = stage_op(*r.h, r.stages[static_cast<std::size_t>(stage)], seg, nt);
    st.op->start();
    return 0;
}

void sched_done(void *ctx, int status) {
    auto &r = *static_cast<HanxRank *>(ctx);
    if (status != COLLX_OK) ++r.h->run->failed;
    Engine &e = *r.h->e;
    r.h->run->finish[static_cast<std::size_t>(r.rank)] = std::max(e.now(), e.cpu_free(r.rank));
}

// hanx's level tables for the topology (collx_hier_fill, as hanx fills
// them from the communicator): 3 levels where a node has several sockets.
struct Levels {
    collx_hier_t h{};
    std::vector<std::vector<int>> tab;
    std::vector<std::vector<std::vector<int>>> groups;  // [k][leader]: members, in rank order
    explicit Levels(const Topology &t) {
        const int P = t.P;
        const bool sockets = t.per_socket > 0 && t.per_socket < t.per_node;
        const int L = sockets ? 3 : 2;
        h.nlevels = L;
        h.size = P;
        tab.assign(static_cast<std::size_t>(2 * L + 1), std::vector<int>(static_cast<std::size_t>(P)));
        for (int k = 0; k < L; ++k) {
            h.leader[k] = tab[static_cast<std::size_t>(k)].data();
            h.rank_in[k] = tab[static_cast<std::size_t>(L + k)].data();
        }
        h.place = tab[static_cast<std::size_t>(2 * L)].data();
        std::vector<int> lead(static_cast<std::size_t>(P * (L - 1)));
        for (int r = 0; r < P; ++r) {
            const int node_lead = t.node(r) * t.per_node;
            if (sockets) lead[static_cast<std::size_t>(2 * r)] = node_lead + t.socket(r) * t.per_socket;
            lead[static_cast<std::size_t>((L - 1) * r + L - 2)] = node_lead;
        }
        collx_hier_fill(&h, lead.data(), L - 1);
        groups.assign(static_cast<std::size_t>(L),
                      std::vector<std::vector<int>>(static_cast<std::size_t>(P)));
        for (int k = 0; k < L; ++k)
            for (int r = 0; r < P; ++r)
                if (collx_hier_member(&h, k, r))
                    groups[static_cast<std::size_t>(k)][static_cast<std::size_t>(h.leader[k][r])]
                        .push_back(r);
    }
    const std::vector<int> &group(int k, int r) const {
        return groups[static_cast<std::size_t>(k)][static_cast<std::size_t>(h.leader[k][r])];
    }
    // split rails: r's node (all its ranks, in rank order) and r's rail
    // (the ranks at r's place of every node)
    int place(int r) const { return collx_hier_place(&h, r); }
    const std::vector<int> &node(int r) const {
        return nodes_.at(static_cast<std::size_t>(h.leader[h.nlevels - 2][r]));
    }
    const std::vector<int> &rail(int r) const { return rails_.at(static_cast<std::size_t>(place(r))); }
    void make_rails() {
        nodes_.assign(static_cast<std::size_t>(h.size), {});
        for (int r = 0; r < h.size; ++r)
            nodes_[static_cast<std::size_t>(h.leader[h.nlevels - 2][r])].push_back(r);
        rails_.clear();
        for (int r = 0; r < h.size; ++r) {
            const auto i = static_cast<std::size_t>(place(r));
            if (rails_.size() <= i) rails_.resize(i + 1);
            rails_[i].push_back(r);
        }
    }

  private:
    std::vector<std::vector<int>> nodes_, rails_;
};

// (given: the topology's tables where the caller already built them)
Result run_hanx(Engine &e, const Params &p, Coll c, const Algo &a, std::size_t count,
                std::size_t seg, int root, const Buffers *bufs, Levels *given = nullptr) {
    const Topology &topo = e.topology();
    const int P = topo.P;
    std::optional<Levels> own;
    Levels &lv = given ? *given : own.emplace(topo);
    // split rails where hanx runs them (an allreduce on nodes of one size)
    const int parts = a.split && c == Coll::Allreduce ? lv.h.parts : 0;
    const bool split = parts > 0;
    // bcast and reduce from a root that does not lead its node run on the
    // root's rail where the nodes are of one size (coll_hanx_root_rail's
    // default; the core ignores the flag elsewhere)
    const bool root_rail = (c == Coll::Bcast || c == Coll::Reduce) && lv.h.parts > 0;
    if (split || root_rail) lv.make_rails();
    Runner run(e);
    HanxCtx h;
    h.e = &e;
    h.run = &run;
    h.p = &p;
    h.a = &a;
    h.dt = bufs ? bufs->dt : nodata_dtype();
    h.op = bufs ? bufs->op : nullptr;
    h.commutative = bufs ? bufs->commutative : true;
    h.nlevels = lv.h.nlevels;
    h.coll = static_cast<int>(c);
    h.count = count;
    h.bytes = count * std::max<std::size_t>(h.dt.size, 1);
    h.parts = parts;
    h.tag_stride = parts + 1;  // (1 without split rails)
    const std::size_t esize = std::max<std::size_t>(h.dt.size, 1);
    std::size_t seg_count = seg ? std::max<std::size_t>(1, seg / esize) : count;
    if (seg_count > count) seg_count = count;
    h.per_seg = std::max<std::size_t>(seg_count, 1);
    h.nseg = count ? (count + h.per_seg - 1) / h.per_seg : 0;
    h.inner_seg = a.inner_seg ? a.inner_seg
                              : collx_tree_segment_bytes(static_cast<int>(c), COLLX_TREE_BINOMIAL,
                                                         0, 0, 0, 0, 0);
    h.temp.resize(static_cast<std::size_t>(P));
    const std::size_t bytes = count * static_cast<std::size_t>(std::max<std::ptrdiff_t>(h.dt.extent, 0));
    for (int r = 0; r < P; ++r) {
        const auto ri = static_cast<std::size_t>(r);
        auto hr = std::make_unique<HanxRank>();
        hr->h = &h;
        hr->rank = r;
        int level_size[COLLX_HIER_MAX_LEVELS] = {0};
        for (int k = 0; k < lv.h.nlevels; ++k)
            level_size[k] = collx_hier_member(&lv.h, k, r) ? static_cast<int>(lv.group(k, r).size()) : 0;
        collx_hier_plan_t plan;
        if (collx_hier_plan(&lv.h, static_cast<int>(c), r, root, level_size,
                            split       ? COLLX_HIER_SPLIT_RAIL
                            : root_rail ? COLLX_HIER_ROOT_RAIL
                                        : 0,
                            &plan) != COLLX_OK)
            throw std::invalid_argument("simulator: hanx has no stages for this call");
        char *buf[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
        if (bufs) {
            buf[COLLX_HBUF_SEND] = static_cast<char *>(bufs->send[ri]);
            buf[COLLX_HBUF_RECV] = static_cast<char *>(bufs->recv[ri]);
            if (plan.need_acc) {
                h.temp[ri].resize(std::max<std::size_t>(bytes, 1));
                buf[COLLX_HBUF_ACC] = h.temp[ri].data();
            }
            if (plan.copy_to != COLLX_HBUF_NONE && bytes)
                std::memcpy(buf[plan.copy_to], buf[plan.copy_from], bytes);
        }
        int last = 0;
        for (int i = 0; i < plan.nstages; ++i) {
            const collx_hier_stage_t &st = plan.st[i];
            Stage s{st, nullptr, st.root, st.sbuf == COLLX_HBUF_IN_PLACE, buf[st.sbuf], buf[st.rbuf],
                    split ? lv.place(r) : 0};
            if (st.level == COLLX_HLEVEL_RAIL) {
                s.tr = e.transport(r, &lv.rail(r));
            } else if (st.level == COLLX_HLEVEL_NODE || (split && st.level == 0)) {
                s.tr = e.transport(r, &lv.node(r));
            } else if (st.level == COLLX_HLEVEL_P2P) {  // a pair, the sender first
                const bool sends = st.kind == COLLX_HSTEP_SEND;
                h.pairs.push_back({sends ? r : st.root, sends ? st.root : r});
                s.tr = e.transport(r, &h.pairs.back());
                s.root = 0;
            } else {
                s.tr = e.transport(r, &lv.group(st.level, r));
            }
            last = std::max(last, st.number);
            hr->stages.push_back(s);
        }
        hr->nsteps = h.nseg && plan.nstages ? h.nseg + static_cast<std::size_t>(last) : 0;
        if (h.nseg > 1 && plan.nstages) {  // (one segment: one stage after the other, as hanx)
            std::vector<collx_stage_t> cs;
            for (const Stage &st : hr->stages) cs.push_back(collx_stage_t{st.st.number, st.st.level});
            const collx_notify_t nt{&sched_done, hr.get()};
            // a blocking call's schedule is serial (one step per
            // communicator at a time), a non-blocking call's not
            hr->sched = make_pipeline(cs, h.nseg, COLLX_HIER_WINDOW, !a.schedule, &sched_step,
                                      hr.get(), &nt);
        }
        h.ranks.push_back(std::move(hr));
    }
    for (auto &hr : h.ranks) {
        HanxRank *rp = hr.get();
        e.at(0, [rp]() {
            if (rp->sched)
                rp->sched->start();
            else
                hanx_step(*rp);
        });
    }
    e.run();
    return finish_result(run, e);
}

// ------------------------------------------- hanx's reduce_scatter_block
//
// coll/hanx's reduce_scatter_block (coll_hanx_scan.c), one stage after
// the other on every rank (no segments: each ring segments itself).  Split
// rails: the vector put in rail order (collx_hier_rail_layout, the layout
// hanx runs), the node's reduce-scatter of the rails' parts, the rail's of
// its ranks' pieces, my piece copied out.  A level runs the collx ring's
// reduce-scatter half (the core's, in place, as hanx) where its tree is the
// ring and the op commutes, else its module: one reduce per chunk to the
// chunk's owner, all at once (as split rails' node steps above).  The
// levels (hanx's form on nodes of different sizes, or below
// COLLX_RS_SPLIT_RING_MIN_BYTES): the node's sum of the whole vector at its
// leader (the module's reduce), the leaders' reduce_scatter of the nodes'
// shares (tuned's ring, unsegmented), each node's share scattered by its
// leader (tuned's linear scatterv: one message per rank, all at once).

using MakeOp = std::function<std::unique_ptr<Operation>(const collx_notify_t &)>;

struct SeqRank {  // a rank's stages, one after the other
    Runner *run;
    Engine *e;
    int rank;
    std::vector<MakeOp> steps;  // a step that makes nothing is local (copies)
    std::size_t next = 0;
    std::unique_ptr<Operation> op;
};

void seq_go(SeqRank &r);

void seq_done(void *ctx, int status) {
    auto &r = *static_cast<SeqRank *>(ctx);
    if (status != COLLX_OK) ++r.run->failed;
    Engine &e = *r.e;
    e.at(std::max(e.now(), e.cpu_free(r.rank)), [&r]() {
        r.op.reset();  // finished; not inside it here
        seq_go(r);
    });
}

void seq_go(SeqRank &r) {
    Engine &e = *r.e;
    while (r.next < r.steps.size()) {
        const collx_notify_t nt{&seq_done, &r};
        r.op = r.steps[r.next++](nt);
        if (r.op) {
            r.op->start();
            return;  // seq_done goes on
        }
        if (e.cpu_free(r.rank) > e.now()) {  // the next step once the copies are done
            e.at(e.cpu_free(r.rank), [&r]() { seq_go(r); });
            return;
        }
    }
    r.run->finish[static_cast<std::size_t>(r.rank)] = std::max(e.now(), e.cpu_free(r.rank));
}

// The collx ring's tuning for `bytes` over a group of P ranks, in the
// segments the components give it (collx_tree_segment_bytes, adaptx's LP
// defaults, as hanx's glue starts it).
collx_tuning_t ring_tuning(const Params &p, int coll, std::size_t bytes, int P) {
    return tuning_for(p, COLLX_TREE_RING, 4,
                      collx_tree_segment_bytes(coll, COLLX_TREE_RING, bytes, P, 4,
                                               COLLX_LP_ALPHA_NS_DEFAULT * 1e-9,
                                               COLLX_LP_BETA_PS_DEFAULT * 1e-12),
                      nullptr);
}

// Each node's share of a vector of `count` elements per rank (its ranks'
// blocks), in the order of its leaders.
std::vector<std::size_t> node_shares(const Levels &lv, const std::vector<int> &leaders,
                                     std::size_t count) {
    std::vector<std::size_t> v;
    for (int q : leaders) v.push_back(lv.node(q).size() * count);
    return v;
}

// Every rank's stages from time 0, one after the other.
Result run_seq(Engine &e, Runner &run, std::vector<std::unique_ptr<SeqRank>> &ranks) {
    for (auto &sr : ranks) {
        SeqRank *rp = sr.get();
        e.at(0, [rp]() { seq_go(*rp); });
    }
    e.run();
    return finish_result(run, e);
}

// Tuned's linear gatherv (gather) or scatterv inside a node as rank r
// runs it: nd the node's ranks, nd[0] the leader, one message of `count`
// elements between the leader and each other rank, all at once (a bcast
// of the pair from its sender).  The leader's blocks: blocks[0 ..
// nd.size()), its own block copied between `mine` and blocks[0]; the other
// ranks send (gather) or receive (scatter) `mine`.  pairs keeps the pairs'
// groups alive.
MakeOp linear_blocks(Engine &e, std::deque<std::vector<int>> &pairs, int r,
                     const std::vector<int> &nd, bool gather, char *blocks, char *mine,
                     std::size_t count, const collx_dtype_t &dt, int tag,
                     const collx_tuning_t &tun) {
    if (r != nd[0]) {
        pairs.push_back(gather ? std::vector<int>{r, nd[0]} : std::vector<int>{nd[0], r});
        const collx_transport_t *pair = e.transport(r, &pairs.back());
        return [=](const collx_notify_t &nt) {
            return make_bcast(*pair, mine, count, dt, 0, tag, tun, &nt);
        };
    }
    const int n = static_cast<int>(nd.size());
    std::vector<const collx_transport_t *> with;
    for (int k = 1; k < n; ++k) {
        const int q = nd[static_cast<std::size_t>(k)];
        pairs.push_back(gather ? std::vector<int>{q, r} : std::vector<int>{r, q});
        with.push_back(e.transport(r, &pairs.back()));
    }
    const collx_transport_t *self = e.transport(r);
    const std::ptrdiff_t ext = dt.extent;
    return [=](const collx_notify_t &nt) {
        if (gather)
            self->copy(self->ctx, blocks, mine, count, &dt);
        else
            self->copy(self->ctx, mine, blocks, count, &dt);
        if (n == 1) return std::unique_ptr<Operation>();
        return make_group(n - 1, [=](int k, const collx_notify_t &knt) {
            char *block = blocks + static_cast<std::ptrdiff_t>(k + 1) *
                                       static_cast<std::ptrdiff_t>(count) * ext;
            return make_bcast(*with[static_cast<std::size_t>(k)], block, count, dt, 0, tag, tun,
                              &knt);
        }, &nt);
    };
}

// low, up: the node's and the rail's (or leaders') tree; kModuleTree: the module
Result run_reduce_scatter(Engine &e, const Params &p, const Algo &a, std::size_t count,
                          bool split, const Buffers *bufs) {
    const Topology &topo = e.topology();
    const int P = topo.P;
    Levels lv(topo);
    lv.make_rails();
    const int S = lv.h.parts;
    if (split && S == 0) split = false;  // (hanx: nodes of different sizes take the levels)
    const collx_dtype_t dt = bufs ? bufs->dt : nodata_dtype();
    void *op = bufs ? static_cast<void *>(bufs->op) : nullptr;
    const bool commute = bufs ? bufs->commutative : true;
    const std::ptrdiff_t ext = dt.extent;
    const std::size_t total = count * static_cast<std::size_t>(P);
    const auto elem = [ext](char *b, std::size_t i) {
        return b + static_cast<std::ptrdiff_t>(i) * ext;
    };
    // the collx ring's reduce-scatter half on `tr`, in place on buf, as
    // hanx's glue starts it (the core's segment size for it)
    const auto ring = [&p, &dt, op](const collx_transport_t *tr, char *buf, std::size_t n,
                                    const std::size_t *chunks, int tag) -> MakeOp {
        const collx_tuning_t tun =
            ring_tuning(p, COLLX_COLL_REDUCE_SCATTER, n * dt.size, tr->size);
        return [=](const collx_notify_t &nt) {
            return make_ring(*tr, COLLX_RING_REDUCE_SCATTER, nullptr, buf, n, dt, op, tag, tun,
                             &nt, chunks);
        };
    };
    // the module's reduce_scatter: chunk c (chunks[c] elements at its
    // offset in `from`) reduced to the group's rank c, into `into` there
    const auto module_rs = [&p, &dt, op, commute, elem](const collx_transport_t *tr, char *from,
                                                        char *into, const std::size_t *chunks,
                                                        int me, int tag) -> MakeOp {
        return [=](const collx_notify_t &nt) {
            return make_group(tr->size, [=](int c, const collx_notify_t &knt) {
                std::size_t at = 0;
                for (int k = 0; k < c; ++k) at += chunks[k];
                const std::size_t n = chunks[c];
                const collx_tuning_t tun = tuning_for(
                    p, module_tree(COLLX_HSTEP_REDUCE, tr->size, n * dt.size, commute), 4,
                    std::max<std::size_t>(n * dt.size, 1), nullptr);
                return make_reduce(*tr, from ? elem(from, at) : dummy_send,
                                   c == me && into ? into : dummy_recv, n, dt, op, commute, c,
                                   false, tag + c, tun, &knt);
            }, &nt);
        };
    };
    Runner run(e);
    std::vector<std::unique_ptr<SeqRank>> ranks;
    std::deque<std::vector<char>> mem;       // scratch vectors (data mode)
    std::deque<std::vector<std::size_t>> counts;
    std::deque<std::vector<int>> pairs;      // the scatterv's messages' groups
    const auto scratch = [&](std::size_t n) -> char * {
        if (!bufs) return dummy_recv;
        mem.emplace_back(std::max<std::size_t>(n * static_cast<std::size_t>(ext), 1));
        return mem.back().data();
    };
    for (int r = 0; r < P; ++r) {
        const auto ri = static_cast<std::size_t>(r);
        ranks.push_back(std::make_unique<SeqRank>(SeqRank{&run, &e, r, {}, 0, nullptr}));
        if (count == 0) continue;  // (hanx returns at once)
        SeqRank *const me = ranks.back().get();
        char *send = bufs ? static_cast<char *>(bufs->send[ri]) : dummy_send;
        char *recv = bufs ? static_cast<char *>(bufs->recv[ri]) : dummy_recv;
        const collx_transport_t *self = e.transport(r);
        const collx_transport_t *node = e.transport(r, &lv.node(r));
        const int l = lv.place(r);
        if (split) {
            const int N = P / S;
            std::vector<int> order(static_cast<std::size_t>(P));
            const std::vector<int> rc(static_cast<std::size_t>(P), static_cast<int>(count));
            counts.emplace_back(static_cast<std::size_t>(S + N));
            std::size_t *chunks = counts.back().data(), mine = 0, piece = 0;
            if (collx_hier_rail_layout(&lv.h, r, rc.data(), order.data(), chunks, &mine, &piece) !=
                COLLX_OK)
                throw std::invalid_argument("simulator: no split rails' layout");
            char *ord = scratch(total);
            me->steps.push_back([=](const collx_notify_t &) {  // the vector in rail order
                for (int i = 0; i < P; ++i)
                    self->copy(self->ctx, elem(ord, static_cast<std::size_t>(i) * count),
                               elem(send, static_cast<std::size_t>(order[i]) * count), count, &dt);
                return std::unique_ptr<Operation>();
            });
            const bool node_ring = a.low == COLLX_TREE_RING && commute;
            char *mid = node_ring ? elem(ord, mine) : scratch(chunks[l]);
            me->steps.push_back(node_ring ? ring(node, ord, total, chunks, 2)
                                          : module_rs(node, ord, mid, chunks, l, 2));
            const collx_transport_t *rail = e.transport(r, &lv.rail(r));
            // my rank in the rail: the pieces before mine in my rail's part, all of count
            const int j = static_cast<int>(piece / count);
            if (a.up == COLLX_TREE_RING && commute) {
                me->steps.push_back(ring(rail, mid, chunks[l], chunks + S, 3));
                me->steps.push_back([=](const collx_notify_t &) {  // my piece out
                    self->copy(self->ctx, recv, elem(mid, piece), count, &dt);
                    return std::unique_ptr<Operation>();
                });
            } else {
                me->steps.push_back(module_rs(rail, mid, recv, chunks + S, j, 3));
            }
        } else {
            // the levels: the node's sum at its leader (place 0), the
            // leaders' reduce_scatter by node, the node's scatterv
            const std::vector<int> &nd = lv.node(r);
            const int nsize = static_cast<int>(nd.size()), nnodes = topo.nodes();
            char *acc = l == 0 ? scratch(total) : nullptr;
            if (nsize > 1) {
                const collx_tuning_t tun = tuning_for(
                    p, module_tree(COLLX_HSTEP_REDUCE, nsize, total * dt.size, commute), 4,
                    std::max<std::size_t>(total * dt.size, 1), nullptr);
                me->steps.push_back([=](const collx_notify_t &nt) {
                    return make_reduce(*node, send, acc ? acc : dummy_recv, total, dt, op, commute,
                                       0, false, 2, tun, &nt);
                });
            } else {
                me->steps.push_back([=](const collx_notify_t &) {
                    self->copy(self->ctx, acc, send, total, &dt);
                    return std::unique_ptr<Operation>();
                });
            }
            char *share = acc;  // (the leader's: its node's share, after the leaders' step)
            if (l == 0) {
                const std::vector<int> &group = lv.group(lv.h.nlevels - 1, r);
                counts.push_back(node_shares(lv, group, count));
                const std::size_t *ncnt = counts.back().data();
                std::size_t share_at = 0;
                for (int n = 0; n < topo.node(r); ++n) share_at += ncnt[n];
                const collx_transport_t *leaders = e.transport(r, &group);
                const collx_tuning_t tun = tuning_for(p, COLLX_TREE_RING, 4,
                                                      std::max<std::size_t>(total * dt.size, 1),
                                                      nullptr);
                share = elem(acc, share_at);
                if (nnodes > 1 && commute) {  // tuned's ring, in place
                    me->steps.push_back([=](const collx_notify_t &nt) {
                        return make_ring(*leaders, COLLX_RING_REDUCE_SCATTER, nullptr, acc, total,
                                         dt, op, 3, tun, &nt, ncnt);
                    });
                } else if (nnodes > 1) {  // (tuned: a reduce and a scatterv, in rank order)
                    share = scratch(ncnt[topo.node(r)]);
                    me->steps.push_back(module_rs(leaders, acc, share, ncnt, topo.node(r), 3));
                }
            }
            // the scatterv: the leader's share, piece i to its node's rank i
            me->steps.push_back(linear_blocks(
                e, pairs, r, nd, false, share, recv, count, dt, 4,
                tuning_for(p, COLLX_TREE_BINOMIAL, 4, std::max<std::size_t>(count * dt.size, 1),
                           nullptr)));
        }
    }
    return run_seq(e, run, ranks);
}

// hanx's node ring (collx_allgather_start, as hanx runs it): every rank's
// block broadcast at once round the nodes, the core's make_allgather over
// all ranks on the topology's nodes, in the topo tree's segments; in data
// mode each rank's block is first copied to its place in the receive
// buffer (hanx's local copy, not timed).  The parts and their countdown
// are the simulator's own: collx_allgather_start does not take the
// data-free mode's zero-extent datatype.
struct RingRank {
    Runner *run;
    int rank;
    std::size_t left;
    std::vector<std::unique_ptr<Operation>> parts;
};

void ring_part_done(void *ctx, int status) {
    auto *g = static_cast<RingRank *>(ctx);
    Runner &r = *g->run;
    if (status != COLLX_OK) ++r.failed;
    if (--g->left == 0)
        r.finish[static_cast<std::size_t>(g->rank)] = std::max(r.e.now(), r.e.cpu_free(g->rank));
}

Result run_node_ring(Engine &e, const Params &p, std::size_t count, const Buffers *bufs) {
    const Topology &topo = e.topology();
    const int P = topo.P;
    const collx_dtype_t dt = bufs ? bufs->dt : nodata_dtype();
    std::vector<int> node_of(static_cast<std::size_t>(P));
    std::vector<std::size_t> counts(static_cast<std::size_t>(P), count), displs(counts.size());
    for (int r = 0; r < P; ++r) {
        node_of[static_cast<std::size_t>(r)] = topo.node(r);
        displs[static_cast<std::size_t>(r)] = static_cast<std::size_t>(r) * count;
    }
    const collx_tuning_t tun = tuning_for(
        p, COLLX_TREE_TOPO, 2,
        collx_tree_segment_bytes(COLLX_COLL_ALLGATHER, COLLX_TREE_TOPO, count * dt.size, P, 2, 0, 0),
        nullptr);
    Runner run(e);
    std::vector<RingRank> ranks(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) {
        const auto ri = static_cast<std::size_t>(r);
        RingRank &g = ranks[ri];
        g.run = &run;
        g.rank = r;
        g.left = static_cast<std::size_t>(P);
        char *recv = bufs ? static_cast<char *>(bufs->recv[ri]) : dummy_recv;
        if (bufs && count)
            std::memcpy(recv + static_cast<std::ptrdiff_t>(displs[ri]) * dt.extent, bufs->send[ri],
                        static_cast<std::size_t>(dt.extent) * (count - 1) + dt.size);
        const collx_notify_t nt{&ring_part_done, &g};
        g.parts = make_allgather(*e.transport(r), recv, counts.data(), displs.data(), dt,
                                 node_of.data(), 1000, tun, &nt);
    }
    for (RingRank &g : ranks)
        for (auto &op : g.parts) op->start();
    e.run();
    return finish_result(run, e);
}

// --------------------------------------------------- hanx's allgather
//
// coll/hanx's allgather on block placement: the core's stages
// (collx_hier_plan, the ones hanx runs) one after the other on each rank,
// on the receive buffer (each node's blocks one run of it, as hanx's
// direct form).  The node's gatherv to its leader as tuned's linear one
// (each rank's block one message to the leader, all at once); the
// leaders' exchange of the nodes' shares, in place, on the collx ring's
// allgather half (Algo::up ring, in its own segments) or as their module
// (tuned's allgather, since stop 45, where the nodes' shares are equal,
// else its allgatherv: the ring, unsegmented, standing for their ring,
// neighbour exchange, Bruck and recursive doubling algorithms -- the
// last two take log2 steps where the ring takes P-1, so small calls on 4
// leaders or more are predicted slow); the node's bcast as the
// module's (module_tree).  Without a measured machine (what "hanx"
// models) the one flag leaves the leaders' stage to the module.
Result run_allgather(Engine &e, const Params &p, const Algo &a, std::size_t count,
                     const Buffers *bufs) {
    const Topology &topo = e.topology();
    const int P = topo.P;
    // hanx-split (a rule's "node_ring"), or the one flag's choice from
    // collx_allgather_node_ring (whatever the levels would run)
    if (a.split ||
        collx_allgather_node_ring(count * (bufs ? bufs->dt.size : 1), topo.nodes(), P))
        return run_node_ring(e, p, count, bufs);
    Levels lv(topo);
    lv.make_rails();  // (the nodes as groups)
    const int L = lv.h.nlevels;
    const collx_dtype_t dt = bufs ? bufs->dt : nodata_dtype();
    const std::ptrdiff_t ext = dt.extent;
    const std::size_t total = count * static_cast<std::size_t>(P);
    const auto elem = [ext](char *b, std::size_t i) {
        return b + static_cast<std::ptrdiff_t>(i) * ext;
    };
    const auto once = [&p, &dt](int tree, std::size_t n) {  // unsegmented
        return tuning_for(p, tree, 4, std::max<std::size_t>(n * dt.size, 1), nullptr);
    };
    Runner run(e);
    std::vector<std::unique_ptr<SeqRank>> ranks;
    std::deque<std::vector<int>> pairs;  // the gatherv's messages' groups
    std::deque<std::vector<std::size_t>> shares;
    for (int r = 0; r < P; ++r) {
        const auto ri = static_cast<std::size_t>(r);
        ranks.push_back(std::make_unique<SeqRank>(SeqRank{&run, &e, r, {}, 0, nullptr}));
        SeqRank *const me = ranks.back().get();
        if (count == 0) continue;  // (hanx returns at once)
        char *send = bufs ? static_cast<char *>(bufs->send[ri]) : dummy_send;
        char *recv = bufs ? static_cast<char *>(bufs->recv[ri]) : dummy_recv;
        const std::vector<int> &nd = lv.node(r);
        const int nsize = static_cast<int>(nd.size());
        char *share = elem(recv, static_cast<std::size_t>(nd[0]) * count);  // my node's blocks
        int level_size[COLLX_HIER_MAX_LEVELS] = {0};
        for (int k = 0; k < L; ++k)
            level_size[k] = collx_hier_member(&lv.h, k, r) ? static_cast<int>(lv.group(k, r).size()) : 0;
        collx_hier_plan_t plan;
        if (collx_hier_plan(&lv.h, COLLX_COLL_ALLGATHER, r, 0, level_size, 0, &plan) != COLLX_OK)
            throw std::invalid_argument("simulator: hanx has no allgather stages for this call");
        for (int i = 0; i < plan.nstages; ++i) {
            const collx_hier_stage_t st = plan.st[i];
            const int tag = 5 + st.number;
            if (st.kind == COLLX_HSTEP_GATHERV) {  // (the node: level 0 or COLLX_HLEVEL_NODE)
                me->steps.push_back(linear_blocks(e, pairs, r, nd, true, share, send, count, dt,
                                                  tag, once(COLLX_TREE_BINOMIAL, count)));
            } else if (st.kind == COLLX_HSTEP_ALLGATHERV) {  // the leaders, in node order
                const std::vector<int> &leaders = lv.group(L - 1, r);
                const collx_transport_t *tr = e.transport(r, &leaders);
                shares.push_back(node_shares(lv, leaders, count));
                const std::size_t *chunks = shares.back().data();
                const collx_tuning_t tun =
                    a.up == COLLX_TREE_RING
                        ? ring_tuning(p, COLLX_COLL_ALLGATHER, total * dt.size, tr->size)
                        : once(COLLX_TREE_RING, total);
                if (tr->size > 1)
                    me->steps.push_back([=](const collx_notify_t &nt) {
                        return make_ring(*tr, COLLX_RING_ALLGATHER, nullptr, recv, total, dt, nullptr,
                                         tag, tun, &nt, chunks);
                    });
            } else if (st.kind == COLLX_HSTEP_BCAST) {
                const collx_transport_t *tr = e.transport(r, &nd);
                const collx_tuning_t tun =
                    once(module_tree(COLLX_HSTEP_BCAST, nsize, total * dt.size, true), total);
                me->steps.push_back([=](const collx_notify_t &nt) {
                    return make_bcast(*tr, recv, total, dt, 0, tag, tun, &nt);
                });
            } else {
                throw std::logic_error("simulator: unexpected allgather stage");
            }
        }
    }
    return run_seq(e, run, ranks);
}

}  // namespace

Result run(const Params &p, const Topology &t, Coll c, const Algo &a, std::size_t count,
           std::size_t seg, int root, const Buffers *bufs) {
    if (t.P < 1 || t.per_node < 1) throw std::invalid_argument("simulator: bad topology");
    if (root < 0 || root >= t.P) throw std::invalid_argument("simulator: root out of range");
    if (a.tree < 0 || a.tree >= COLLX_TREE_COUNT) throw std::invalid_argument("simulator: bad tree");
    if (bufs && (bufs->send.size() != static_cast<std::size_t>(t.P) ||
                 bufs->recv.size() != static_cast<std::size_t>(t.P)))
        throw std::invalid_argument("simulator: one buffer per rank needed");
    const std::size_t bytes = bufs ? count * bufs->dt.size : count;
    Engine e(p, t, bufs != nullptr);
    if (c == Coll::Allgather) {  // hanx only; count: each rank's block
        if (!a.hanx) throw std::invalid_argument("simulator: allgather runs on hanx only");
        return run_allgather(e, p, a, count, bufs);
    }
    if (c == Coll::ReduceScatterBlock) {
        // hanx only (coll/hanx's reduce_scatter_block); count: each rank's
        // block.  The one flag takes split rails with the collx ring on both
        // levels from COLLX_RS_SPLIT_RING_MIN_BYTES of vector on nodes of
        // one size (collx_reduce_scatter_builtin), else the levels; a
        // "split" rule (hanx-split) at every size.  On split rails a level
        // left alone (kModuleTree) runs the ring, as in hanx; one named
        // (hanx:LOW:UP, coll_hanx_low/up_algorithm) the ring where it says
        // so, else its module.
        // hanx-sched (MPI_Ireduce_scatter_block): hanx runs split rails on
        // both rings itself -- the same stages, one segment, one after the
        // other -- and hands every other case to the previous module
        // (libnbc), which the simulator does not model.
        if (!a.hanx) throw std::invalid_argument("simulator: reduce_scatter_block runs on hanx only");
        const int parts = Levels(t).h.parts;
        const bool split = a.split || collx_reduce_scatter_builtin(
                                          bytes * static_cast<std::size_t>(t.P), t.nodes(), parts) != 0;
        Algo rings = a;
        if (rings.low == kModuleTree) rings.low = COLLX_TREE_RING;
        if (rings.up == kModuleTree) rings.up = COLLX_TREE_RING;
        if (a.schedule && !(split && parts > 0 && rings.low == COLLX_TREE_RING &&
                            rings.up == COLLX_TREE_RING && (!bufs || bufs->commutative) && count))
            throw std::invalid_argument(
                "simulator: hanx hands this MPI_Ireduce_scatter_block to the previous module "
                "(libnbc; not modelled): only split rails on the collx rings, a commutative op, "
                "run on hanx's schedules");
        return run_reduce_scatter(e, p, rings, count, split, bufs);
    }
    // hanx with both levels left to the module is the one flag's built-in
    // choice (no tuning file, the machine not measured), which takes a
    // large commutative allreduce where the core says so
    // (collx_allreduce_builtin; block placement here) as split rails with
    // the collx ring on the rails, in the core's segments, or as one collx
    // ring over all ranks, in the ring's own segments, and a small blocking
    // one as one topo tree over all ranks (not on the schedules: hanx's
    // non-blocking calls keep their levels)
    const int nnodes = (t.P + t.per_node - 1) / t.per_node;
    if (a.hanx && !a.split && a.low == kModuleTree && a.up == kModuleTree &&
        c == Coll::Allreduce && (!bufs || bufs->commutative)) {
        Levels lv(t);
        const int builtin = collx_allreduce_builtin(bytes, nnodes, t.P, lv.h.parts, 1);
        switch (builtin) {
            case COLLX_ALLREDUCE_SPLIT_RING: {
                Algo rails = a;  // (the node's module inside the node)
                rails.split = true;
                rails.up = COLLX_TREE_RING;
                return run_hanx(e, p, c, rails, count, seg ? seg : COLLX_SPLIT_RING_SEGMENT_BYTES,
                                root, bufs, &lv);
            }
            case COLLX_ALLREDUCE_FLAT_TOPO:
                if (a.schedule) break;
                [[fallthrough]];
            case COLLX_ALLREDUCE_FLAT_RING: {
                Algo flat;
                flat.tree = COLLX_ALLREDUCE_FLAT_TOPO == builtin ? COLLX_TREE_TOPO : COLLX_TREE_RING;
                return run_flat(e, c, flat, count, default_segment(p, t, c, flat, bytes), root,
                                bufs);
            }
        }
    }
    if (seg == 0) seg = default_segment(p, t, c, a, bytes);
    return a.hanx ? run_hanx(e, p, c, a, count, seg, root, bufs)
                  : run_flat(e, c, a, count, seg ? seg : bytes, root, bufs);
}

double predict(const Params &p, const Topology &t, Coll c, const Algo &a, std::size_t bytes,
               std::size_t seg) {
    return run(p, t, c, a, bytes, seg, 0, nullptr).time_ns * 1e-9;
}


// ------------------------------------------------------------- parameters

Params Params::defaults() {
    Params p;
    // same socket / same node: shared memory (vader); one-way ~2.5-3 us
    // small-message latency, a few GB/s for large ones
    p.level[SameSocket] = LevelParams{1200, 600, 0, 0.25, 4096};
    p.level[SameNode] = LevelParams{1500, 700, 0, 0.30, 4096};
    // across emulated nodes: TCP over a veth bridge; one-way ~13 us, ~1 GB/s
    p.level[Net] = LevelParams{9000, 2000, 0, 1.0, 65536};
    p.reduce_ns_per_byte = 0.25;
    p.copy_ns_per_byte = 0.15;
    p.nic = true;
    return p;
}

namespace {
using json = nlohmann::json;

void read_num(const json &j, const char *key, double *v) {
    if (!j.contains(key)) return;
    if (!j[key].is_number()) throw std::runtime_error(std::string("\"") + key + "\" must be a number");
    *v = j[key].get<double>();
    if (!(*v >= 0)) throw std::runtime_error(std::string("\"") + key + "\" must be >= 0");
}
}  // namespace

Params Params::from_json_text(const std::string &text, const Params &base) {
    Params p = base;
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception &ex) {
        throw std::runtime_error(std::string("not JSON: ") + ex.what());
    }
    if (!j.is_object()) throw std::runtime_error("parameters: a JSON object expected");
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string &k = it.key();
        const json &v = it.value();
        int lv = -1;
        for (int l = 0; l < NLevels; ++l)
            if (k == level_name(l)) lv = l;
        if (lv >= 0) {
            if (!v.is_object()) throw std::runtime_error("\"" + k + "\" must be an object");
            LevelParams &lp = p.level[lv];
            for (auto f = v.begin(); f != v.end(); ++f)
                if (f.key() != "L_ns" && f.key() != "o_ns" && f.key() != "g_ns" &&
                    f.key() != "G_ns_per_byte" && f.key() != "eager_bytes")
                    throw std::runtime_error("unknown key \"" + f.key() + "\" in \"" + k + "\"");
            read_num(v, "L_ns", &lp.L);
            read_num(v, "o_ns", &lp.o);
            read_num(v, "g_ns", &lp.g);
            read_num(v, "G_ns_per_byte", &lp.G);
            double eager = static_cast<double>(lp.eager);
            read_num(v, "eager_bytes", &eager);
            lp.eager = static_cast<std::size_t>(eager);
        } else if (k == "reduce_ns_per_byte") {
            read_num(j, "reduce_ns_per_byte", &p.reduce_ns_per_byte);
        } else if (k == "copy_ns_per_byte") {
            read_num(j, "copy_ns_per_byte", &p.copy_ns_per_byte);
        } else if (k == "nic" || k == "nic_in") {
            if (!v.is_boolean()) throw std::runtime_error("\"" + k + "\" must be true or false");
            (k == "nic" ? p.nic : p.nic_in) = v.get<bool>();
        } else if (k == "max_send" || k == "max_recv") {
            if (!v.is_number_integer() || v.get<long long>() < 1)
                throw std::runtime_error("\"" + k + "\" must be an integer >= 1");
            (k == "max_send" ? p.max_send : p.max_recv) = static_cast<int>(v.get<long long>());
        } else if (k == "format" || k == "comment") {
            // free text
        } else {
            throw std::runtime_error("unknown key \"" + k + "\"");
        }
    }
    return p;
}

Params Params::load(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot be read");
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        return from_json_text(ss.str());
    } catch (const std::runtime_error &ex) {
        throw std::runtime_error(path + ": " + ex.what());
    }
}

std::string Params::to_json_text() const {
    nlohmann::ordered_json j;
    j["format"] = "collx-sim-params";
    for (int l = 0; l < NLevels; ++l) {
        nlohmann::ordered_json v;
        v["L_ns"] = level[l].L;
        v["o_ns"] = level[l].o;
        v["g_ns"] = level[l].g;
        v["G_ns_per_byte"] = level[l].G;
        v["eager_bytes"] = level[l].eager;
        j[level_name(l)] = v;
    }
    j["reduce_ns_per_byte"] = reduce_ns_per_byte;
    j["copy_ns_per_byte"] = copy_ns_per_byte;
    j["nic"] = nic;
    j["nic_in"] = nic_in;
    j["max_send"] = max_send;
    j["max_recv"] = max_recv;
    return j.dump(2) + "\n";
}

// --------------------------------------------------------------- fitting

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

// Per level, from one-way times t(k) (ns) of k-byte messages:
//   G      the least-squares slope over the large samples: those of the
//          largest sample's protocol with k >= largest / 16 (the asymptotic
//          cost per byte; a straight line through all sizes would be pulled
//          by caches, bursts and protocol switches);
//   L + 2o the median of t - kG over the small eager samples (k <= 1 KiB,
//          else the three smallest eager ones);
//   L      the median of (t - kG - (L + 2o)) / 2 over the rendezvous
//          samples up to 4x the eager limit (their two extra latencies)
//          when it lies in (0, L + 2o); else L + 2o is split by o_share
//          (o = o_share (L + 2o) / 2).
Params fit(const std::vector<Sample> &samples, const Params &base, double o_share,
           std::string *report) {
    Params p = base;
    std::ostringstream rep;
    for (int l = 0; l < NLevels; ++l) {
        LevelParams &lp = p.level[l];
        std::vector<Sample> v;
        for (const Sample &s : samples)
            if (s.level == l && s.bytes >= 0 && s.us >= 0) v.push_back(s);
        if (v.empty()) continue;
        std::sort(v.begin(), v.end(), [](const Sample &x, const Sample &y) { return x.bytes < y.bytes; });
        const double eager = static_cast<double>(lp.eager);
        auto rndv = [&](const Sample &s) { return s.bytes > eager; };
        const Sample &big = v.back();
        // G: slope over the large samples of the largest one's protocol
        double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
        for (const Sample &s : v)
            if (s.bytes >= big.bytes / 16 && rndv(s) == rndv(big)) {
                const double y = s.us * 1000.0;
                sx += s.bytes, sy += y, sxx += s.bytes * s.bytes, sxy += s.bytes * y, n += 1;
            }
        double G = 0;
        if (n >= 2 && n * sxx - sx * sx > 0) G = (n * sxy - sx * sy) / (n * sxx - sx * sx);
        else if (big.bytes > 0) G = big.us * 1000.0 / big.bytes;  // one size: through the origin
        G = std::max(0.0, G);
        // L + 2o: the small eager samples
        std::vector<double> small;
        for (const Sample &s : v)
            if (!rndv(s) && s.bytes <= 1024) small.push_back(s.us * 1000.0 - s.bytes * G);
        for (const Sample &s : v)
            if (small.size() < 3 && !rndv(s) && s.bytes > 1024) small.push_back(s.us * 1000.0 - s.bytes * G);
        const double a = small.empty() ? 0.0 : std::max(0.0, median(small));
        // L from the extra round trip of the rendezvous samples nearest the
        // eager limit (where an error in G matters least), if plausible
        std::vector<double> extra;
        for (const Sample &s : v)
            if (rndv(s) && s.bytes <= 4 * eager) extra.push_back((s.us * 1000.0 - s.bytes * G - a) / 2);
        double L = (1.0 - o_share) * a;
        if (!extra.empty() && !small.empty()) {
            const double x = median(extra);
            if (x > 0 && x < a) L = x;
        }
        lp.G = G;
        lp.L = L;
        lp.o = (a - L) / 2;
        double worst = 0;
        for (const Sample &s : v) {
            const double pred = (rndv(s) ? 3 : 1) * lp.L + 2 * lp.o + s.bytes * lp.G;
            const double y = s.us * 1000.0;
            worst = std::max(worst, std::fabs(pred - y) / std::max(y, 1.0));
        }
        rep << level_name(l) << ": " << v.size() << " samples, L " << lp.L << " ns, o " << lp.o
            << " ns, G " << lp.G << " ns/B (" << (lp.G > 0 ? 1.0 / lp.G : 0.0)
            << " GB/s); worst relative error " << worst * 100 << "%\n";
    }
    if (report) *report = rep.str();
    return p;
}

std::vector<Sample> parse_samples(const std::string &text) {
    std::vector<Sample> out;
    auto level_of = [](const std::string &name) {
        for (int l = 0; l < NLevels; ++l)
            if (name == level_name(l)) return l;
        throw std::runtime_error("unknown level \"" + name + "\" (socket, node or net)");
    };
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') {
        json j;
        try {
            j = json::parse(text);
        } catch (const json::exception &ex) {
            throw std::runtime_error(std::string("not JSON: ") + ex.what());
        }
        for (auto it = j.begin(); it != j.end(); ++it) {
            if (it.key() == "comment" || it.key() == "format") continue;
            const int l = level_of(it.key());
            if (!it.value().is_array()) throw std::runtime_error("\"" + it.key() + "\": [[bytes, us], ...] expected");
            for (const json &pt : it.value()) {
                if (!pt.is_array() || pt.size() != 2 || !pt[0].is_number() || !pt[1].is_number())
                    throw std::runtime_error("\"" + it.key() + "\": [[bytes, us], ...] expected");
                out.push_back(Sample{l, pt[0].get<double>(), pt[1].get<double>()});
            }
        }
        return out;
    }
    std::istringstream in(text);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        const auto h = line.find('#');
        if (h != std::string::npos) line.erase(h);
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        std::replace(line.begin(), line.end(), ',', ' ');
        std::istringstream ls(line);
        std::string lvl;
        double b, us;
        if (!(ls >> lvl >> b >> us))
            throw std::runtime_error("line " + std::to_string(n) + ": \"level,bytes,us\" expected");
        out.push_back(Sample{level_of(lvl), b, us});
    }
    return out;
}

}  // namespace sim
}  // namespace collx
