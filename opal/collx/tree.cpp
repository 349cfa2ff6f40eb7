#include "tree.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

namespace collx {

namespace {

// A node of a range tree over virtual ranks [0, n) rooted at 0, in virtual
// ranks: parent (-1 at 0), children ascending, and their subtree sizes.
struct VNode {
    int parent = -1;
    std::vector<int> children;
    std::vector<int> sizes;
};

void add(VNode &t, int child, int size) {
    t.children.push_back(child);
    t.sizes.push_back(size);
}

VNode knomial(int k, int n, int v) {
    VNode t;
    // weight of v's lowest non-zero base-k digit bounds its children
    long long low = 1;
    if (v != 0) {
        while ((v / low) % k == 0) low *= k;
        t.parent = static_cast<int>(v - ((v / low) % k) * low);
    } else {
        low = 1;
        while (low < n) low *= k;
    }
    for (long long w = 1; w < low && v + w < n; w *= k)
        for (int j = 1; j < k; ++j) {
            long long c = v + j * w;
            if (c >= n) break;
            add(t, static_cast<int>(c), static_cast<int>(std::min<long long>(w, n - c)));
        }
    return t;
}

VNode binary(int n, int v) {
    // pre-order: node lo, left subtree [lo+1, lo+1+L), right [lo+1+L, lo+n)
    VNode t;
    int lo = 0, size = n, parent = -1;
    for (;;) {
        const int rest = size - 1, left = (rest + 1) / 2, right = rest - left;
        if (v == lo) {
            t.parent = parent;
            if (left) add(t, lo + 1, left);
            if (right) add(t, lo + 1 + left, right);
            return t;
        }
        parent = lo;
        if (v < lo + 1 + left) {
            lo = lo + 1;
            size = left;
        } else {
            lo = lo + 1 + left;
            size = right;
        }
    }
}

VNode chains(int f, int n, int v) {
    // the root heads f chains over consecutive blocks of [1, n)
    VNode t;
    const int rest = n - 1;
    f = std::max(1, std::min(f, std::max(rest, 1)));
    auto block_start = [&](int b) { return 1 + (int)((long long)rest * b / f); };
    if (v == 0) {
        for (int b = 0; b < f; ++b) {
            const int s = block_start(b), e = block_start(b + 1);
            if (e > s) add(t, s, e - s);
        }
        return t;
    }
    int b = 0;
    while (block_start(b + 1) <= v) ++b;
    const int s = block_start(b), e = block_start(b + 1);
    t.parent = v == s ? 0 : v - 1;
    if (v + 1 < e) add(t, v + 1, e - v - 1);
    return t;
}

VNode linear(int n, int v) {
    VNode t;
    if (v != 0) {
        t.parent = 0;
        return t;
    }
    for (int c = 1; c < n; ++c) add(t, c, 1);
    return t;
}

VNode range_node(const TreeShape &s, int n, int v) {
    switch (s.kind) {
        case TreeKind::Binomial:
        case TreeKind::InOrderBinomial:
        case TreeKind::RecursiveDoubling: return knomial(2, n, v);
        case TreeKind::Knomial: return knomial(std::max(2, s.fanout), n, v);
        case TreeKind::Binary: return binary(n, v);
        case TreeKind::Chain: return chains(s.fanout, n, v);
        case TreeKind::Pipeline:
        case TreeKind::Ring: return chains(1, n, v);
        case TreeKind::Linear: return linear(n, v);
        case TreeKind::Topo: return knomial(2, n, v);  // not a range tree
    }
    return linear(n, v);
}

// The range tree over real ranks base + ((v + shift) mod n).
TreeNode in_range(const TreeShape &s, int n, int base, int shift, int rank) {
    const int v = ((rank - base) - shift % n + 2 * n) % n;
    auto real = [&](int vr) { return base + (vr + shift) % n; };
    VNode vn = range_node(s, n, v);
    TreeNode t;
    t.rank = rank;
    t.parent = vn.parent < 0 ? -1 : real(vn.parent);
    for (int c : vn.children) t.children.push_back(real(c));
    t.subtree = vn.sizes;
    t.own_pos = 0;
    return t;
}

}  // namespace

TreeNode tree_node(const TreeShape &shape, int P, int root, int rank) {
    if (shape.kind == TreeKind::InOrderBinomial) return ordered_node(shape, P, root, rank);
    if (shape.kind == TreeKind::Topo && shape.node_of)
        return topo_node(shape.node_of, P, root, rank);
    return in_range(shape, P, 0, root, rank);
}

NodeGroups node_groups(const int *node_of, int P) {
    std::vector<int> order(node_of, node_of + P);
    std::sort(order.begin(), order.end());
    order.erase(std::unique(order.begin(), order.end()), order.end());
    NodeGroups g;
    g.members.resize(order.size());
    g.node_index.resize(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) {
        const int k = static_cast<int>(std::lower_bound(order.begin(), order.end(), node_of[r]) -
                                       order.begin());
        g.node_index[static_cast<std::size_t>(r)] = k;
        g.members[static_cast<std::size_t>(k)].push_back(r);
    }
    return g;
}

namespace {

// The topology-aware trees: the root's node is led by the root, every other
// node by its lowest rank; a tree over the leaders (ring: a chain round the
// nodes in the order of their ids, from the root's node; else a binomial
// tree, the root's node first, then nodes by increasing leader rank), and a
// binomial tree inside each node fans out from its leader.
TreeNode topo_tree(const NodeGroups &g, int root, int rank, bool ring) {
    const auto &members = g.members;
    const int nn = static_cast<int>(members.size());
    const int root_node = g.node_index[static_cast<std::size_t>(root)];
    const auto leader = [&](int k) { return k == root_node ? root : members[k][0]; };
    std::vector<int> nodes_in_tree{root_node};
    for (int k = 1; k < nn; ++k) nodes_in_tree.push_back((root_node + k) % nn);
    if (!ring)
        std::sort(nodes_in_tree.begin() + 1, nodes_in_tree.end(),
                  [&](int a, int b) { return leader(a) < leader(b); });

    TreeNode t;
    t.rank = rank;
    const int my_node = g.node_index[static_cast<std::size_t>(rank)];
    std::vector<int> mine = members[my_node];  // in rank order; the leader goes first
    if (my_node == root_node) {
        const auto at = std::find(mine.begin(), mine.end(), root);
        std::rotate(mine.begin(), at, at + 1);  // the root leads its node
    }
    const int pos = static_cast<int>(std::find(mine.begin(), mine.end(), rank) - mine.begin());
    if (pos == 0) {  // a leader: its place in the leaders' tree
        const int lv = static_cast<int>(
            std::find(nodes_in_tree.begin(), nodes_in_tree.end(), my_node) - nodes_in_tree.begin());
        VNode up = ring ? chains(1, nn, lv) : knomial(2, nn, lv);
        if (up.parent >= 0) t.parent = leader(nodes_in_tree[up.parent]);
        for (std::size_t i = 0; i < up.children.size(); ++i) {
            int ranks_below = 0;  // all ranks of the nodes in that leader subtree
            for (int k = up.children[i]; k < up.children[i] + up.sizes[i]; ++k)
                ranks_below += static_cast<int>(members[nodes_in_tree[k]].size());
            t.children.push_back(leader(nodes_in_tree[up.children[i]]));
            t.subtree.push_back(ranks_below);
        }
    }
    VNode in = knomial(2, static_cast<int>(mine.size()), pos);
    if (pos != 0) t.parent = mine[in.parent];
    for (std::size_t i = 0; i < in.children.size(); ++i) {
        t.children.push_back(mine[in.children[i]]);
        t.subtree.push_back(in.sizes[i]);
    }
    return t;
}

}  // namespace

TreeNode topo_node(const int *node_of, int P, int root, int rank) {
    return topo_tree(node_groups(node_of, P), root, rank, false);
}

TreeNode topo_ring_node(const NodeGroups &groups, int root, int rank) {
    return topo_tree(groups, root, rank, true);
}

TreeNode ordered_node(const TreeShape &shape, int P, int root, int rank) {
    if (root == 0) return in_range(shape, P, 0, 0, rank);
    if (rank == root) {
        TreeNode t;
        t.rank = rank;
        t.children.push_back(0);
        t.subtree.push_back(root);
        t.own_pos = 1;
        if (root + 1 < P) {
            t.children.push_back(root + 1);
            t.subtree.push_back(P - root - 1);
        }
        return t;
    }
    TreeNode t = rank < root ? in_range(shape, root, 0, 0, rank)
                             : in_range(shape, P - root - 1, root + 1, 0, rank);
    if (t.parent < 0) t.parent = root;
    return t;
}

void order_for_bcast(TreeNode &t) {
    std::vector<std::size_t> idx(t.children.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](std::size_t a, std::size_t b) { return t.subtree[a] > t.subtree[b]; });
    std::vector<int> c, s;
    for (std::size_t i : idx) {
        c.push_back(t.children[i]);
        s.push_back(t.subtree[i]);
    }
    t.children = c;
    t.subtree = s;
}

TreeNode binomial_node(int P, int root, int rank) {
    return tree_node(TreeShape{TreeKind::Binomial, 2}, P, root, rank);
}

TreeNode ordered_reduce_node(int P, int root, int rank) {
    return ordered_node(TreeShape{TreeKind::Binomial, 2}, P, root, rank);
}

const char *tree_kind_name(TreeKind k) {
    switch (k) {
        case TreeKind::Binomial: return "binomial";
        case TreeKind::InOrderBinomial: return "in_order_binomial";
        case TreeKind::Binary: return "binary";
        case TreeKind::Knomial: return "knomial";
        case TreeKind::Chain: return "chain";
        case TreeKind::Pipeline: return "pipeline";
        case TreeKind::Linear: return "linear";
        case TreeKind::Topo: return "topo";
        case TreeKind::Ring: return "ring";
        case TreeKind::RecursiveDoubling: return "recursive_doubling";
    }
    return "?";
}

std::string validate_tree(const std::vector<TreeNode> &nodes, int root) {
    const int P = static_cast<int>(nodes.size());
    std::ostringstream err;
    if (root < 0 || root >= P) return "root out of range";
    if (nodes[root].parent != -1) {
        err << "root " << root << " has parent " << nodes[root].parent;
        return err.str();
    }
    for (int r = 0; r < P; ++r) {
        const TreeNode &n = nodes[r];
        if (n.rank != r) {
            err << "node " << r << " claims rank " << n.rank;
            return err.str();
        }
        if (r != root && (n.parent < 0 || n.parent >= P)) {
            err << "rank " << r << " has invalid parent " << n.parent;
            return err.str();
        }
        if (n.own_pos > n.children.size()) {
            err << "rank " << r << " own_pos " << n.own_pos << " beyond children";
            return err.str();
        }
        if (n.subtree.size() != n.children.size()) {
            err << "rank " << r << " subtree sizes do not match children";
            return err.str();
        }
        for (int c : n.children) {
            if (c < 0 || c >= P || nodes[c].parent != r) {
                err << "rank " << r << " lists child " << c << " whose parent is "
                    << (c >= 0 && c < P ? nodes[c].parent : -2);
                return err.str();
            }
        }
    }
    // Every non-root rank appears exactly once as a child, a walk from the
    // root reaches everyone, and each listed subtree size is the real one.
    std::vector<int> seen(P, 0);
    std::vector<int> size(P, 1), order;
    std::vector<int> stack{root};
    seen[root] = 1;
    while (!stack.empty()) {
        int r = stack.back();
        stack.pop_back();
        order.push_back(r);
        for (int c : nodes[r].children) {
            if (seen[c]++) {
                err << "rank " << c << " reached twice";
                return err.str();
            }
            stack.push_back(c);
        }
    }
    if (static_cast<int>(order.size()) != P) {
        err << "only " << order.size() << " of " << P << " ranks reachable from root";
        return err.str();
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it)
        for (int c : nodes[*it].children) size[*it] += size[c];
    for (int r = 0; r < P; ++r)
        for (std::size_t i = 0; i < nodes[r].children.size(); ++i)
            if (nodes[r].subtree[i] != size[nodes[r].children[i]]) {
                err << "rank " << r << " says child " << nodes[r].children[i] << " has "
                    << nodes[r].subtree[i] << " ranks below, it has "
                    << size[nodes[r].children[i]];
                return err.str();
            }
    return {};
}

std::vector<int> fold_order(const std::vector<TreeNode> &nodes, int root) {
    std::vector<int> out;
    auto rec = [&](auto &&self, int r) -> void {
        const TreeNode &n = nodes[r];
        for (std::size_t i = 0; i <= n.children.size(); ++i) {
            if (i == n.own_pos) out.push_back(r);
            if (i < n.children.size()) self(self, n.children[i]);
        }
    };
    rec(rec, root);
    return out;
}

int tree_depth(const std::vector<TreeNode> &nodes, int root) {
    int best = 0;
    auto rec = [&](auto &&self, int r, int d) -> void {
        best = std::max(best, d);
        for (int c : nodes[r].children) self(self, c, d + 1);
    };
    rec(rec, root, 0);
    return best;
}

}  // namespace collx
