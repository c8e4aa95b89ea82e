"""Edge appearance probabilities in the spanning-tree polytope, for tree-reweighted BP on any graph.

TRW's free energy bounds log Z from above only if ``rho`` is a convex combination of spanning-tree
(forest) indicator vectors of the graph (Wainwright, Jaakkola & Willsky 2005). One constant per
connected component, ``(n_c - 1) / |E_c|``, is such a point only for graphs as uniform as a torus:
on a triangle with a 7-edge tail it gives the tail edges 0.9 although every spanning tree contains
them, and the bound fails. Two valid constructions are here:

* ``effective_resistances``: ``rho_e = R_eff(e)`` with unit conductances, which is exactly the
  probability that ``e`` lies in a uniformly random spanning tree of its component (Kirchhoff);
  so it is the marginal vector of a distribution over spanning trees, a point of the polytope.
  Dangling trees are peeled first (their edges are in every spanning tree: ``rho = 1``; peeling
  does not change any other edge's resistance, since no current between the endpoints of a cycle
  edge enters a dangling tree). The rest, the 2-core, is solved per connected component with a
  dense inverse of its Laplacian grounded at one node, ``R(u, v) = X_uu + X_vv - 2 X_uv``
  (small components batched into one stacked inverse). O(n_core^3) per component.
* ``covering_forests``: the average of spanning forests, each a Kruskal maximum spanning forest of
  the 2-core for random keys that favour the edges covered least so far, until every edge is in
  at least one forest; the average of spanning forests is in the polytope by definition.
  O(n_forests * |E| log |E|), for components too large for the dense solve.
"""

import numpy as np
from numba import njit

from ..utils.validation import check_edge_list

__all__ = ["peel_dangling_trees", "effective_resistances", "covering_forests", "spanning_tree_rho"]

# 2-core components up to this many nodes get exact effective resistances in "auto" mode (batched
# dense solves; one solve per component of a hundred nodes or more already costs more than TRW on a
# pruned 64x64 grid); larger ones get covering forests.
MAX_DENSE_NODES = 64


@njit(cache=True, nogil=True)
def _peel(edges, n_nodes):
    """Mask of edges in dangling trees (removed by repeatedly deleting degree-1 nodes)."""
    n_edges = edges.shape[0]
    degree = np.zeros(n_nodes, dtype=np.int64)
    indptr = np.zeros(n_nodes + 1, dtype=np.int64)
    for e in range(n_edges):
        degree[edges[e, 0]] += 1
        degree[edges[e, 1]] += 1
    for i in range(n_nodes):
        indptr[i + 1] = indptr[i] + degree[i]
    fill = indptr[:-1].copy()
    incident = np.empty(2 * n_edges, dtype=np.int64)
    for e in range(n_edges):
        for side in range(2):
            node = edges[e, side]
            incident[fill[node]] = e
            fill[node] += 1
    peeled = np.zeros(n_edges, dtype=np.bool_)
    stack = np.empty(n_nodes, dtype=np.int64)
    top = 0
    for i in range(n_nodes):
        if degree[i] == 1:
            stack[top] = i
            top += 1
    while top > 0:
        top -= 1
        i = stack[top]
        if degree[i] != 1:
            continue
        for k in range(indptr[i], indptr[i + 1]):
            e = incident[k]
            if not peeled[e]:
                peeled[e] = True
                other = edges[e, 1] if edges[e, 0] == i else edges[e, 0]
                degree[i] -= 1
                degree[other] -= 1
                if degree[other] == 1:
                    stack[top] = other
                    top += 1
                break
    return peeled


@njit(cache=True, nogil=True)
def _find(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@njit(cache=True, nogil=True)
def _covering_forests(edges, n_nodes, min_forests, max_forests, seed):
    """Counts of each edge over Kruskal forests for keys ``coverage + U(0, 1)`` (least covered first)."""
    np.random.seed(seed)
    n_edges = edges.shape[0]
    counts = np.zeros(n_edges)
    parent = np.empty(n_nodes, dtype=np.int64)
    keys = np.empty(n_edges)
    n_forests = 0
    while n_forests < max_forests:
        for e in range(n_edges):
            keys[e] = counts[e] + np.random.random()
        order = np.argsort(keys)
        for i in range(n_nodes):
            parent[i] = i
        for k in range(n_edges):
            e = order[k]
            a, b = _find(parent, edges[e, 0]), _find(parent, edges[e, 1])
            if a != b:
                parent[a] = b
                counts[e] += 1.0
        n_forests += 1
        if n_forests >= min_forests and counts.min() > 0:
            break
    return counts / n_forests


def peel_dangling_trees(edges, n_nodes):
    """Boolean mask of the edges outside the 2-core (in every spanning tree of their component)."""
    edges = check_edge_list(edges, n_nodes, name="peel_dangling_trees")
    return _peel(edges, int(n_nodes))


def _core_components(edges, n_nodes):
    """Peeled mask, and the connected components (labels per node) of the 2-core."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    peeled = _peel(edges, n_nodes)  # edges were checked by the caller
    core = edges[~peeled]
    adj = coo_matrix((np.ones(core.shape[0]), (core[:, 0], core[:, 1])), shape=(n_nodes, n_nodes))
    _, labels = connected_components(adj, directed=False)
    return peeled, labels


def _grounded_resistances(edges, sel_groups, local, sizes, K):
    """Effective resistances of the edges of several components at once (batched dense inverse).

    Each component gets a ``K x K`` slot holding its Laplacian with local node 0 grounded (its row
    and column replaced by the identity's) and identity padding; one batched inverse serves all.
    """
    B = len(sel_groups)
    lap = np.zeros((B, K, K))
    lap[:, np.arange(K), np.arange(K)] = 1.0
    for b in range(B):
        lap[b, : sizes[b], : sizes[b]] = 0.0
    sel = np.concatenate(sel_groups)
    slot = np.repeat(np.arange(B), [g.size for g in sel_groups])
    u, v = local[edges[sel, 0]], local[edges[sel, 1]]
    np.add.at(lap, (slot, u, v), -1.0)
    np.add.at(lap, (slot, v, u), -1.0)
    np.add.at(lap, (slot, u, u), 1.0)
    np.add.at(lap, (slot, v, v), 1.0)
    lap[:, 0, :] = 0.0
    lap[:, :, 0] = 0.0
    lap[:, 0, 0] = 1.0
    inv = np.linalg.inv(lap)
    inv[:, 0, :] = 0.0
    inv[:, :, 0] = 0.0
    return sel, inv[slot, u, u] + inv[slot, v, v] - 2.0 * inv[slot, u, v]


def effective_resistances(edges, n_nodes):
    """Effective resistance of every edge with unit conductances (= uniform spanning-tree marginals).

    Examples
    --------
    >>> effective_resistances([[0, 1], [1, 2], [2, 0], [2, 3]], 4).round(4).tolist()
    [0.6667, 0.6667, 0.6667, 1.0]
    """
    return spanning_tree_rho(edges, n_nodes, method="resistance")


def covering_forests(edges, n_nodes, *, min_forests=8, max_forests=64, random_state=0):
    """Average of spanning forests that together cover every edge (a point of the polytope).

    Examples
    --------
    >>> rho = covering_forests([[0, 1], [1, 2], [2, 0], [2, 3]], 4)
    >>> bool(np.isclose(rho.sum(), 3.0)), float(rho[3])
    (True, 1.0)
    """
    return spanning_tree_rho(edges, n_nodes, method="forests", min_forests=min_forests,
                             max_forests=max_forests, random_state=random_state)


def spanning_tree_rho(edges, n_nodes, method="auto", *, min_forests=8, max_forests=64, random_state=0):
    """Valid TRW edge appearance probabilities: resistances, covering forests, or "auto".

    ``"auto"``: exact effective resistances for 2-core components of at most ``MAX_DENSE_NODES``
    nodes, covering forests for larger ones (each component gets a valid point, so the whole
    vector is valid). Edges outside the 2-core get 1.
    """
    edges = check_edge_list(edges, n_nodes, name="spanning_tree_rho")
    n_nodes = int(n_nodes)
    n_edges = edges.shape[0]
    rho = np.ones(n_edges)
    if n_edges == 0:
        return rho
    peeled, labels = _core_components(edges, n_nodes)
    core_edges = np.flatnonzero(~peeled)
    if core_edges.size == 0:
        return rho
    comp = labels[edges[core_edges, 0]]
    order = np.argsort(comp, kind="stable")
    bounds = np.flatnonzero(np.diff(comp[order])) + 1
    groups = np.split(order, bounds)
    core_nodes = np.unique(edges[core_edges])
    node_order = core_nodes[np.argsort(labels[core_nodes], kind="stable")]
    comp_sizes = np.bincount(labels[core_nodes])
    first = np.concatenate([[0], np.cumsum(comp_sizes)[:-1]])
    local = np.zeros(n_nodes, dtype=np.int64)  # index of a node within its component
    local[node_order] = np.arange(node_order.size) - first[labels[node_order]]
    if method not in ("auto", "resistance", "forests"):
        raise ValueError(f"method must be 'auto', 'resistance' or 'forests', got {method!r}.")
    buckets, large = {}, []
    for group in groups:
        sel = core_edges[group]
        size = int(comp_sizes[labels[edges[sel[0], 0]]])
        if method == "resistance" or (method == "auto" and size <= MAX_DENSE_NODES):
            K = size if size > 64 else 1 << int(np.ceil(np.log2(size)))  # small ones share a batch
            buckets.setdefault(K, []).append((sel, size))
        else:
            large.append(sel)
    for K, items in buckets.items():
        sel, values = _grounded_resistances(edges, [it[0] for it in items], local, [it[1] for it in items], K)
        rho[sel] = values
    if large:
        sel = np.concatenate(large)
        rho[sel] = _covering_forests(edges[sel], int(n_nodes), int(min_forests), int(max_forests),
                                     int(random_state))
    return np.clip(rho, 1e-12, 1.0)
