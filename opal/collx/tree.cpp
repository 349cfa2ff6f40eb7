#include "tree.hpp"

#include <algorithm>
#include <sstream>

namespace collx {

namespace {

// Binomial node over a range of `n` ranks [base, base+n), rooted at the
// range's virtual rank 0, real rank = base + ((v + shift) % n).
TreeNode binomial_in_range(int n, int base, int shift, int rank) {
    TreeNode t;
    t.rank = rank;
    const int v = ((rank - base) - shift + n) % n;
    auto real = [&](int vr) { return base + (vr + shift) % n; };
    if (v != 0) {
        const int low = v & -v;
        t.parent = real(v - low);
    }
    for (int mask = 1; mask < n; mask <<= 1) {
        if (v & mask) break;  // children only below v's lowest set bit
        const int c = v | mask;
        if (c < n) t.children.push_back(real(c));
    }
    t.own_pos = 0;
    return t;
}

}  // namespace

TreeNode binomial_node(int P, int root, int rank) { return binomial_in_range(P, 0, root, rank); }

TreeNode binomial_bcast_node(int P, int root, int rank) {
    TreeNode t = binomial_node(P, root, rank);
    std::reverse(t.children.begin(), t.children.end());
    return t;
}

TreeNode ordered_reduce_node(int P, int root, int rank) {
    if (root == 0) return binomial_node(P, 0, rank);
    if (rank == root) {
        TreeNode t;
        t.rank = rank;
        t.children.push_back(0);
        t.own_pos = 1;
        if (root + 1 < P) t.children.push_back(root + 1);
        return t;
    }
    TreeNode t = rank < root ? binomial_in_range(root, 0, 0, rank)
                             : binomial_in_range(P - root - 1, root + 1, 0, rank);
    if (t.parent < 0) t.parent = root;
    return t;
}

std::vector<TreeNode> build_all(int P, int root, TreeNode (*node)(int, int, int)) {
    std::vector<TreeNode> all;
    all.reserve(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) all.push_back(node(P, root, r));
    return all;
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
        for (int c : n.children) {
            if (c < 0 || c >= P || nodes[c].parent != r) {
                err << "rank " << r << " lists child " << c << " whose parent is "
                    << (c >= 0 && c < P ? nodes[c].parent : -2);
                return err.str();
            }
        }
    }
    // Every non-root rank must appear exactly once as a child, and a walk
    // from the root must reach everyone (no cycles, no orphans).
    std::vector<int> seen(P, 0);
    std::vector<int> stack{root};
    seen[root] = 1;
    int reached = 1;
    while (!stack.empty()) {
        int r = stack.back();
        stack.pop_back();
        for (int c : nodes[r].children) {
            if (seen[c]++) {
                err << "rank " << c << " reached twice";
                return err.str();
            }
            ++reached;
            stack.push_back(c);
        }
    }
    if (reached != P) {
        err << "only " << reached << " of " << P << " ranks reachable from root";
        return err.str();
    }
    return {};
}

std::vector<int> fold_order(const std::vector<TreeNode> &nodes, int root) {
    std::vector<int> out;
    // explicit recursion via a lambda
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

}  // namespace collx
