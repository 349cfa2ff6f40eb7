// Communication trees over P ranks: who a rank receives from and sends to.
//
// Every tree here is a "range tree": over virtual ranks 0..n-1 rooted at 0,
// each node's subtree is a contiguous range of virtual ranks that starts at
// the node itself, and a node's children are listed in increasing order.
// Two properties follow: rotating virtual ranks (v = rank - root mod P)
// roots the tree anywhere, and without rotation a subtree's contributions
// are a contiguous run of real ranks -- what an order-preserving reduction
// for non-commutative operations needs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace collx {

enum class TreeKind {
    Binomial,         // children v+1, v+2, v+4 ...; depth ceil(log2 n)
    InOrderBinomial,  // binomial without rotation: subtrees follow rank order
    Binary,           // pre-order binary tree: halves of the remaining range
    Knomial,          // radix-k generalisation of binomial (fanout = k)
    Chain,            // `fanout` chains hanging off the root
    Pipeline,         // one chain: the linear-pipelining (LP) schedule
    Linear,           // the root talks to everybody
    Topo,             // binomial over node leaders, then binomial within each node
    Ring,             // as a tree, the pipeline chain (the executor runs a
                      // commutative allreduce around the ring instead)
    RecursiveDoubling,  // as a tree, binomial (the executor runs an allreduce
                        // by pairwise exchanges instead)
};

// One rank's view of a tree.  For reductions, `children` are listed in the
// order in which their (subtree) contributions must be combined, and the
// rank's own contribution stands at index `own_pos` of that sequence: the
// rank computes c[0] op ... op own op ... op c[k-1].
struct TreeNode {
    int rank = 0;
    int parent = -1;  // -1 at the root
    std::vector<int> children;
    std::vector<int> subtree;  // size of each child's subtree
    std::size_t own_pos = 0;
};

struct TreeShape {
    TreeKind kind = TreeKind::Binomial;
    int fanout = 2;                // Knomial radix (>= 2), Chain count (>= 1)
    const int *node_of = nullptr;  // Topo: node number of each rank
};

// Tree rooted at `root`, virtual ranks rotated so the root is virtual 0
// (for broadcasts and commutative reductions).  InOrderBinomial is never
// rotated: it is ordered_node() with the binomial shape.  Topo is
// topo_node() (binomial when node_of is missing).
TreeNode tree_node(const TreeShape &shape, int P, int root, int rank);

// Topology-aware tree: the root's node is led by the root, every other
// node by its lowest rank; a binomial tree over the leaders (root's node
// first, then nodes by increasing leader rank) crosses each node boundary
// exactly once, and a binomial tree inside each node fans out from its
// leader.  Not a range tree: tree_node() uses it for broadcasts and
// commutative reductions only.
TreeNode topo_node(const int *node_of, int P, int root, int rank);

// The nodes of a node map (node_of[r] for r < P): members[k] the ranks of
// the k-th node in the order of node numbers, in rank order; node_index[r]
// r's k.  Built once, it serves every root's topo_ring_node.
struct NodeGroups {
    std::vector<std::vector<int>> members;
    std::vector<int> node_index;
};
NodeGroups node_groups(const int *node_of, int P);

// The same with the leaders in a chain round the nodes (in the order of
// their node numbers, from the root's): every node's link carries one copy
// out and one in, whichever rank is the root, so P broadcasts at once, one
// from each rank (collx_allgather_start), load every node's link alike:
// each rank's data leaves its node once and enters every other node once.
TreeNode topo_ring_node(const NodeGroups &groups, int root, int rank);

// Order-preserving tree: every subtree covers a contiguous range of *real*
// ranks and own_pos places each rank's contribution at its rank position,
// so folding operands in list order yields x_0 op ... op x_{P-1} whatever
// the root.  (Topo has no order-preserving form: binomial is used.)  Root 0: the shape's tree over 0..P-1 unrotated.  Root r > 0:
// the root combines [tree over 0..r-1] op x_r op [tree over r+1..P-1].
TreeNode ordered_node(const TreeShape &shape, int P, int root, int rank);

// Children ordered for a broadcast: largest subtree first, so the deepest
// part of the tree gets each segment earliest.
void order_for_bcast(TreeNode &t);

// Shorthands used by tests: the binomial shape, rotated and order-preserving.
TreeNode binomial_node(int P, int root, int rank);
TreeNode ordered_reduce_node(int P, int root, int rank);

const char *tree_kind_name(TreeKind k);

// Whole-tree helpers (used by tests and by tools, O(P)).
template <class F>
std::vector<TreeNode> build_all(int P, int root, F node) {
    std::vector<TreeNode> all;
    all.reserve(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) all.push_back(node(P, root, r));
    return all;
}

// Checks that `nodes` is a spanning tree rooted at `root`: parent/child
// links agree, every rank is reached exactly once from the root, no cycles,
// subtree sizes are right.  Returns "" when valid, else the defect.
std::string validate_tree(const std::vector<TreeNode> &nodes, int root);

// For an order-preserving tree: the sequence of ranks whose contributions
// the root's fold combines, in order (expanding subtrees recursively).
std::vector<int> fold_order(const std::vector<TreeNode> &nodes, int root);

// Depth of the tree (longest root-to-leaf path, in edges).
int tree_depth(const std::vector<TreeNode> &nodes, int root);

}  // namespace collx
