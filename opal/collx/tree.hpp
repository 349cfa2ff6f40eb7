// Communication trees over P ranks: who a rank receives from and sends to.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace collx {

// One rank's view of a tree.  For reductions, `children` are listed in the
// order in which their (subtree) contributions must be combined, and the
// rank's own contribution stands at index `own_pos` of that sequence: the
// rank computes c[0] op ... op own op ... op c[k-1].  For broadcasts the
// children are listed in the order they should be served.
struct TreeNode {
    int rank = 0;
    int parent = -1;  // -1 at the root
    std::vector<int> children;
    std::size_t own_pos = 0;
};

// Binomial tree rooted at `root`, ranks rotated so that root is virtual 0.
// Children are listed by increasing subtree distance (v+1, v+2, v+4 ...),
// so in virtual ranks each subtree is a contiguous range starting at its
// root.  Depth ceil(log2 P).
TreeNode binomial_node(int P, int root, int rank);

// Same tree, children listed largest subtree first: for broadcasts, where
// the deepest subtree should get each segment first.
TreeNode binomial_bcast_node(int P, int root, int rank);

// Order-preserving reduction tree: every subtree covers a contiguous range
// of *real* ranks and own_pos places each rank's contribution at its rank
// position, so folding operands in list order yields x_0 op ... op x_{P-1}
// whatever the root.  Root 0: the binomial tree above.  Root r > 0: the
// root combines [binomial over 0..r-1] op x_r op [binomial over r+1..P-1].
TreeNode ordered_reduce_node(int P, int root, int rank);

// Whole-tree helpers (used by tests and by tools, O(P)).
std::vector<TreeNode> build_all(int P, int root, TreeNode (*node)(int, int, int));

// Checks that `nodes` is a spanning tree rooted at `root`: parent/child
// links agree, every rank is reached exactly once from the root, no cycles.
// Returns an empty string when valid, else a description of the defect.
std::string validate_tree(const std::vector<TreeNode> &nodes, int root);

// For an order-preserving tree: the sequence of ranks whose contributions
// the root's fold combines, in order (expanding subtrees recursively).
std::vector<int> fold_order(const std::vector<TreeNode> &nodes, int root);

}  // namespace collx
