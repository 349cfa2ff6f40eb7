// Hierarchical collectives as stages (collx.h, collx_hier_plan): the one
// description of hanx's bcast, reduce, allreduce and barrier, which hanx
// runs on Open MPI's communicators and the simulator on its own.
//
// A collective is, for each rank, a list of stages: "bcast on my level-1
// communicator from its rank 2", "reduce on level 0 to its rank 0", ...
// Every stage has a global number, the same on all members of its
// communicator, and numbers follow the data: a segment goes through a
// rank's stages in increasing number (a bcast goes up the root's groups,
// then down the others; a reduce goes up).
#include <algorithm>
#include <vector>

#include "collx/collx.h"

namespace {

struct Builder {
    const collx_hier_t &h;
    int rank, root;
    const int *level_size;
    collx_hier_plan_t &out;

    int L() const { return h.nlevels; }
    bool member(int k) const { return collx_hier_member(&h, k, rank) != 0; }
    int size(int k) const {
        return level_size ? level_size[k] : collx_hier_level_size(&h, k, rank);
    }
    // a member of a level-k communicator of two or more ranks
    bool runs(int k) const { return member(k) && size(k) > 1; }
    int me_in(int k) const { return h.rank_in[k][rank]; }
    void add(int number, int level, int kind, int stage_root, int sbuf, int rbuf,
             int chunk = 0) {
        out.st[out.nstages++] =
            collx_hier_stage_t{number, level, kind, stage_root, sbuf, rbuf, chunk};
    }
    void copy(int from, int to) {
        if (from == to) return;
        out.copy_from = from;
        out.copy_to = to;
    }

    // Up the root's groups (stage k at level k) as far as the root is not
    // its group's leader yet, then down the others (stage 2(L-1)-k at
    // level k): a group the root leads is served on the way down.
    void bcast() {
        for (int k = 0; k < L(); ++k) {
            if (!runs(k)) continue;
            const int root_here = h.rank_in[k][root];
            if (h.leader[k][rank] == h.leader[k][root] && (k == L() - 1 || root_here != 0))
                add(k, k, COLLX_HSTEP_BCAST, root_here, COLLX_HBUF_NONE, COLLX_HBUF_RECV);
            else
                add(2 * (L() - 1) - k, k, COLLX_HSTEP_BCAST, 0, COLLX_HBUF_NONE, COLLX_HBUF_RECV);
        }
    }

    // The node as one communicator: level 0 on two levels.
    int node_level() const { return L() == 2 ? 0 : COLLX_HLEVEL_NODE; }
    // The root's rail (COLLX_HIER_ROOT_RAIL): where it applies, the root's
    // place in its node (> 0), else -1.
    int rail_place(int flags) const {
        if (!(flags & COLLX_HIER_ROOT_RAIL)) return -1;
        const int place = collx_hier_place(&h, root);
        return place > 0 && collx_hier_split_parts(&h) > 0 ? place : -1;
    }
    // Rank of the root in its rail (the ranks at its place, in rank order;
    // every node has one: nodes of one size): one pass over the ranks
    // below the root (O(1) each with a place table, as hanx and the
    // simulator give).
    int rail_rank_of_root(int place) const {
        int n = 0;
        for (int q = 0; q < root; ++q) n += collx_hier_place(&h, q) == place;
        return n;
    }
    // From a root at place p > 0: the root's rail, then every node from
    // its rank at place p.
    void bcast_rail(int place) {
        if (collx_hier_place(&h, rank) == place)
            add(0, COLLX_HLEVEL_RAIL, COLLX_HSTEP_BCAST, rail_rank_of_root(place), COLLX_HBUF_NONE,
                COLLX_HBUF_RECV);
        add(1, node_level(), COLLX_HSTEP_BCAST, place, COLLX_HBUF_NONE, COLLX_HBUF_RECV);
    }
    // To a root at place p > 0: every node into its rank at place p (the
    // root's receive buffer, the others' accumulators), then the root's
    // rail into the root.  Rank order where ranks are in blocks by node:
    // each node's ranks, then the nodes in rank order.
    void reduce_rail(int place, bool in_place) {
        const bool i_am_root = rank == root, on_rail = collx_hier_place(&h, rank) == place;
        const int my_data = i_am_root && in_place ? COLLX_HBUF_RECV : COLLX_HBUF_SEND;
        const int acc = i_am_root ? COLLX_HBUF_RECV : on_rail ? COLLX_HBUF_ACC : COLLX_HBUF_NONE;
        out.need_acc = acc == COLLX_HBUF_ACC;
        add(0, node_level(), COLLX_HSTEP_REDUCE, place,
            on_rail && my_data == acc ? COLLX_HBUF_IN_PLACE : my_data, acc);
        if (on_rail)
            add(1, COLLX_HLEVEL_RAIL, COLLX_HSTEP_REDUCE, rail_rank_of_root(place),
                i_am_root ? COLLX_HBUF_IN_PLACE : acc, i_am_root ? acc : COLLX_HBUF_NONE);
    }

    // Level 0 into the group leaders' accumulators, the levels above into
    // their leaders -- at the top into the root's representative (the
    // holder), who hands the result, segment by segment, to a root that
    // does not represent its node.  (A reduce's non-root gets no receive
    // buffer: some algorithms would use it as scratch, and it may be the
    // send buffer.)
    void reduce(bool in_place) {
        const int holder = h.leader[L() - 2][root];
        const bool i_am_root = rank == root;
        const int my_data = i_am_root && in_place ? COLLX_HBUF_RECV : COLLX_HBUF_SEND;
        bool represents = false;  // takes part above level 0
        for (int k = 1; k < L(); ++k) represents = represents || member(k);
        int acc = COLLX_HBUF_NONE;
        if (i_am_root && rank == holder)
            acc = COLLX_HBUF_RECV;
        else if (represents)
            acc = COLLX_HBUF_ACC;
        out.need_acc = acc == COLLX_HBUF_ACC;
        if (size(0) > 1)
            add(0, 0, COLLX_HSTEP_REDUCE, 0,
                represents && my_data == acc ? COLLX_HBUF_IN_PLACE : my_data,
                represents ? acc : COLLX_HBUF_NONE);
        else if (acc != COLLX_HBUF_NONE)
            copy(my_data, acc);
        for (int k = 1; k < L(); ++k) {
            if (!runs(k)) continue;
            const int to = k == L() - 1 ? h.rank_in[k][root] : 0;
            const bool i_receive = me_in(k) == to;
            add(k, k, COLLX_HSTEP_REDUCE, to, i_receive ? COLLX_HBUF_IN_PLACE : acc,
                i_receive ? acc : COLLX_HBUF_NONE);
        }
        if (root != holder && rank == holder)
            add(L(), COLLX_HLEVEL_P2P, COLLX_HSTEP_SEND, root, acc, COLLX_HBUF_NONE);
        if (root != holder && i_am_root)
            add(L(), COLLX_HLEVEL_P2P, COLLX_HSTEP_RECV, holder, COLLX_HBUF_NONE, COLLX_HBUF_RECV);
    }

    // Up: reduce into each group leader's receive buffer; top: allreduce
    // (or reduce, then bcast); down: bcast from the group leaders.
    void allreduce(bool in_place, bool split_top) {
        const int my_data = in_place ? COLLX_HBUF_RECV : COLLX_HBUF_SEND;
        if (size(0) > 1) {
            const bool lead0 = me_in(0) == 0;
            add(0, 0, COLLX_HSTEP_REDUCE, 0,
                lead0 && my_data == COLLX_HBUF_RECV ? COLLX_HBUF_IN_PLACE : my_data,
                lead0 ? COLLX_HBUF_RECV : COLLX_HBUF_NONE);
        } else {
            copy(my_data, COLLX_HBUF_RECV);
        }
        for (int k = 1; k < L() - 1; ++k)
            if (runs(k)) reduce_to_leader(k, k);
        const int top = L() - 1;
        if (runs(top)) {
            if (split_top) {
                reduce_to_leader(top, top);
                add(top + 1, top, COLLX_HSTEP_BCAST, 0, COLLX_HBUF_NONE, COLLX_HBUF_RECV);
            } else {
                add(top, top, COLLX_HSTEP_ALLREDUCE, 0, COLLX_HBUF_IN_PLACE, COLLX_HBUF_RECV);
            }
        }
        const int down0 = top + (split_top ? 1 : 0);  // the last top-level stage
        for (int k = L() - 2; k >= 0; --k)
            if (runs(k))
                add(down0 + (L() - 1 - k), k, COLLX_HSTEP_BCAST, 0, COLLX_HBUF_NONE,
                    COLLX_HBUF_RECV);
    }
    // Split rails (multi-leader): every rank of a node carries one chunk
    // of each segment across the nodes, so every rank's links work and
    // each byte crosses a node boundary on one rail only.  The
    // reduce-scatter cannot write into the data it reads: with IN_PLACE
    // the message is copied to the accumulator first.
    void split_allreduce(bool in_place) {
        const int node = L() == 2 ? 0 : COLLX_HLEVEL_NODE;
        int from = COLLX_HBUF_SEND;
        if (in_place) {
            out.need_acc = 1;
            copy(COLLX_HBUF_RECV, COLLX_HBUF_ACC);
            from = COLLX_HBUF_ACC;
        }
        add(0, node, COLLX_HSTEP_REDUCE_SCATTER, 0, from, COLLX_HBUF_RECV, 1);
        add(1, COLLX_HLEVEL_RAIL, COLLX_HSTEP_ALLREDUCE, 0, COLLX_HBUF_IN_PLACE, COLLX_HBUF_RECV,
            1);
        add(2, node, COLLX_HSTEP_ALLGATHER, 0, COLLX_HBUF_IN_PLACE, COLLX_HBUF_RECV);
    }
    void reduce_to_leader(int number, int k) {
        const bool lead = me_in(k) == 0;
        add(number, k, COLLX_HSTEP_REDUCE, 0, lead ? COLLX_HBUF_IN_PLACE : COLLX_HBUF_RECV,
            lead ? COLLX_HBUF_RECV : COLLX_HBUF_NONE);
    }

    // The node's blocks into its leader's share of the receive buffer, the
    // leaders' allgather of the shares in place, the node's bcast of the
    // whole (the runner sizes the blocks: node order).
    void allgather() {
        const int nl = node_level();
        add(0, nl, COLLX_HSTEP_GATHERV, 0, COLLX_HBUF_SEND, COLLX_HBUF_NODE);
        if (member(L() - 1))
            add(1, L() - 1, COLLX_HSTEP_ALLGATHERV, 0, COLLX_HBUF_IN_PLACE, COLLX_HBUF_RECV);
        if (node_size() > 1) add(2, nl, COLLX_HSTEP_BCAST, 0, COLLX_HBUF_NONE, COLLX_HBUF_RECV);
    }
    // The size of my node: level 0's on two levels; on three, the split
    // plans' S where every node has it (O(1) with the cached parts, as hanx
    // and the simulator give), counted only where nodes differ.
    int node_size() const {
        if (node_level() == 0) return size(0);
        if (const int S = collx_hier_split_parts(&h); S > 0) return S;
        const int *node_leader = h.leader[L() - 2];
        int n = 0;
        for (int q = 0; q < h.size; ++q) n += node_leader[q] == node_leader[rank];
        return n;
    }

    // Fan in level by level (a leader leaves its group's barrier only once
    // all of the group entered), the top barrier, then fan out: the
    // leaders enter their groups' second barrier only after the top one.
    void barrier() {
        for (int k = 0; k < L(); ++k)
            if (runs(k)) add(k, k, COLLX_HSTEP_BARRIER, 0, COLLX_HBUF_NONE, COLLX_HBUF_NONE);
        for (int k = L() - 2; k >= 0; --k)
            if (runs(k))
                add(L() + (L() - 2 - k), k, COLLX_HSTEP_BARRIER, 0, COLLX_HBUF_NONE,
                    COLLX_HBUF_NONE);
    }
};

bool tables_ok(const collx_hier_t *h) {
    if (h == nullptr || h->nlevels < 2 || h->nlevels > COLLX_HIER_MAX_LEVELS || h->size < 1)
        return false;
    for (int k = 0; k < h->nlevels; ++k)
        if (h->leader[k] == nullptr || h->rank_in[k] == nullptr) return false;
    return true;
}

}  // namespace

extern "C" {

void collx_hier_fill(collx_hier_t *h, const int *lead, int stride) {
    const int L = h->nlevels, P = h->size;
    for (int r = 0; r < P; ++r) {
        for (int j = 0; j < L - 1; ++j) h->leader[j][r] = lead[r * stride + j];
        h->leader[L - 1][r] = 0;
    }
    // members of a level-k group are numbered in rank order; a rank's
    // representative above level 0 is its level-(k-1) leader
    std::vector<int> counter(static_cast<std::size_t>(P)), index(static_cast<std::size_t>(P));
    for (int k = 0; k < L; ++k) {
        std::fill(counter.begin(), counter.end(), 0);
        for (int r = 0; r < P; ++r)
            index[r] = collx_hier_member(h, k, r) ? counter[h->leader[k][r]]++ : -1;
        for (int r = 0; r < P; ++r) h->rank_in[k][r] = index[k == 0 ? r : h->leader[k - 1][r]];
    }
    if (h->place != nullptr) {  // each node's ranks counted in rank order
        std::fill(counter.begin(), counter.end(), 0);
        for (int r = 0; r < P; ++r) h->place[r] = counter[h->leader[L - 2][r]]++;
    }
    h->parts_known = 0;
    h->parts = collx_hier_split_parts(h);
    h->parts_known = 1;
}

int collx_hier_place(const collx_hier_t *h, int r) {
    if (h->place != nullptr) return h->place[r];
    if (h->nlevels == 2) return h->rank_in[0][r];
    const int *node_leader = h->leader[h->nlevels - 2];
    int n = 0;
    for (int q = node_leader[r]; q < r; ++q) n += node_leader[q] == node_leader[r];
    return n;
}

int collx_hier_member(const collx_hier_t *h, int k, int rank) {
    return k == 0 || h->leader[k - 1][rank] == rank;
}

int collx_hier_level_size(const collx_hier_t *h, int k, int rank) {
    if (!collx_hier_member(h, k, rank)) return 0;
    int n = 0;
    for (int r = 0; r < h->size; ++r)
        if (collx_hier_member(h, k, r) && h->leader[k][r] == h->leader[k][rank]) ++n;
    return n;
}

int collx_hier_plan(const collx_hier_t *h, int coll, int rank, int root, const int *level_size,
                    int flags, collx_hier_plan_t *out) {
    if (!tables_ok(h) || out == nullptr || rank < 0 || rank >= h->size || root < 0 ||
        root >= h->size)
        return COLLX_ERR_ARG;
    *out = collx_hier_plan_t{};
    out->copy_from = out->copy_to = COLLX_HBUF_NONE;
    Builder b{*h, rank, root, level_size, *out};
    switch (coll) {
        case COLLX_COLL_BCAST:
            if (const int place = b.rail_place(flags); place > 0)
                b.bcast_rail(place);
            else
                b.bcast();
            break;
        case COLLX_COLL_REDUCE:
            if (const int place = b.rail_place(flags); place > 0)
                b.reduce_rail(place, (flags & COLLX_HIER_IN_PLACE) != 0);
            else
                b.reduce((flags & COLLX_HIER_IN_PLACE) != 0);
            break;
        case COLLX_COLL_ALLREDUCE:
            if (flags & COLLX_HIER_SPLIT_RAIL) {
                if (collx_hier_split_parts(h) == 0) return COLLX_ERR_ARG;
                b.split_allreduce((flags & COLLX_HIER_IN_PLACE) != 0);
            } else {
                b.allreduce((flags & COLLX_HIER_IN_PLACE) != 0,
                            (flags & COLLX_HIER_SPLIT_TOP) != 0);
            }
            break;
        case COLLX_COLL_BARRIER: b.barrier(); break;
        case COLLX_COLL_ALLGATHER: b.allgather(); break;
        default: return COLLX_ERR_ARG;
    }
    return COLLX_OK;
}

int collx_hier_split_parts(const collx_hier_t *h) {
    if (!tables_ok(h)) return 0;
    if (h->parts_known) return h->parts;
    std::vector<int> members(static_cast<std::size_t>(h->size), 0);
    const int *node_leader = h->leader[h->nlevels - 2];
    for (int r = 0; r < h->size; ++r) ++members[node_leader[r]];
    int parts = 0, groups = 0;
    for (int r = 0; r < h->size; ++r) {
        if (members[r] == 0) continue;
        if (groups++ > 0 && members[r] != parts) return 0;
        parts = members[r];
    }
    return groups >= 2 && parts >= 2 ? parts : 0;
}

void collx_hier_chunk(size_t n, int parts, int i, size_t *first, size_t *count) {
    const size_t p = parts > 0 ? static_cast<size_t>(parts) : 1, q = n / p, extra = n % p;
    const size_t j = static_cast<size_t>(i);
    *count = q + (j < extra ? 1 : 0);
    *first = j * q + std::min(j, extra);
}

int collx_hier_rail_layout(const collx_hier_t *h, int rank, const int *rcounts, int *order,
                           size_t *chunks, size_t *mine, size_t *piece) {
    const int S = collx_hier_split_parts(h);
    if (S == 0 || rank < 0 || rank >= h->size || !rcounts || !order || !chunks) return COLLX_ERR_ARG;
    const int size = h->size, N = size / S, l = collx_hier_place(h, rank);
    // rail p's ranks at order[p * N ...], rank order kept (N each: nodes of one size)
    std::vector<int> filled(static_cast<std::size_t>(S), 0);
    int j = 0;
    for (int q = 0; q < size; ++q) {
        const int p = collx_hier_place(h, q);
        if (p < 0 || p >= S || filled[static_cast<std::size_t>(p)] >= N) return COLLX_ERR_ARG;
        if (q == rank) j = filled[static_cast<std::size_t>(p)];
        order[p * N + filled[static_cast<std::size_t>(p)]++] = q;
    }
    *mine = *piece = 0;
    for (int p = 0; p < S; ++p) {
        chunks[p] = 0;
        for (int k = 0; k < N; ++k) chunks[p] += static_cast<size_t>(rcounts[order[p * N + k]]);
        if (p < l) *mine += chunks[p];
    }
    for (int k = 0; k < N; ++k) {
        chunks[S + k] = static_cast<size_t>(rcounts[order[l * N + k]]);
        if (k < j) *piece += chunks[S + k];
    }
    return COLLX_OK;
}

}  // extern "C"
