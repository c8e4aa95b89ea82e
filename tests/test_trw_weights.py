"""Valid TRW edge appearance probabilities (oracles/spanning.py) and the TRW bound on pruned graphs."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_struct.oracles.loopy import loopy_bp, trw_edge_probabilities
from sklearn_struct.oracles.spanning import covering_forests, effective_resistances, peel_dangling_trees
from sklearn_struct.pruned_bp import pruned_marginals
from sklearn_struct.utils.graph import grid_edges

SETTINGS = settings(max_examples=15, deadline=None)


def brute_log_z(unary, edges, table):
    n = unary.shape[0]
    ys = np.array(list(itertools.product(range(2), repeat=n)))
    scores = unary[np.arange(n), ys].sum(axis=1)
    for u, v in edges:
        scores = scores + table[ys[:, u], ys[:, v]]
    return np.logaddexp.reduce(scores)


def spanning_trees(edges, n):
    """All spanning forests (maximal acyclic edge sets) by enumeration."""
    from scipy.sparse.csgraph import connected_components
    from scipy.sparse import coo_matrix

    edges = np.asarray(edges)
    adj = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    n_comp = connected_components(adj, directed=False)[0]
    size = n - n_comp
    out = []
    for subset in itertools.combinations(range(len(edges)), size):
        sub = edges[list(subset)]
        a = coo_matrix((np.ones(size), (sub[:, 0], sub[:, 1])), shape=(n, n))
        if connected_components(a, directed=False)[0] == n_comp:
            out.append(subset)
    return out


@st.composite
def random_graph(draw, max_nodes=8):
    """A random sparse graph: cycles with dangling paths, as pruning leaves them."""
    n = draw(st.integers(3, max_nodes))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    pick = rng.random(len(pairs)) < draw(st.floats(0.2, 0.8))
    pick[rng.integers(len(pairs))] = True
    return n, np.array([p for p, k in zip(pairs, pick) if k], dtype=np.int64)


def triangle_with_tail(tail=7):
    edges = [[0, 1], [1, 2], [2, 0]] + [[2 + i, 3 + i] for i in range(tail)]
    return np.array(edges), 3 + tail


def test_uniform_weights_break_the_bound_on_a_triangle_with_a_tail_and_auto_fixes_it():
    edges, n = triangle_with_tail()
    unary = np.zeros((n, 2))
    table = 3.0 * np.eye(2)
    log_z = brute_log_z(unary, edges, table)
    bounds = {}
    for method in ("uniform", "auto", "forests"):
        rho = trw_edge_probabilities(edges, n, method)
        res = loopy_bp(unary, edges, table, rho=rho, damping=0.5, tol=1e-12, max_iter=5000, free_energy=True)
        assert res.converged
        bounds[method] = -res.free_energy
    assert bounds["uniform"] < log_z - 1e-3  # the defect of the old default
    assert bounds["auto"] >= log_z - 1e-9
    assert bounds["forests"] >= log_z - 1e-9
    np.testing.assert_allclose(trw_edge_probabilities(edges, n, "auto"), [2 / 3] * 3 + [1.0] * 7)


@SETTINGS
@given(random_graph(max_nodes=6))
def test_resistances_are_the_uniform_spanning_tree_marginals(graph):
    n, edges = graph
    trees = spanning_trees(edges, n)
    exact = np.zeros(len(edges))
    for t in trees:
        exact[list(t)] += 1.0 / len(trees)
    np.testing.assert_allclose(effective_resistances(edges, n), exact, atol=1e-10)
    np.testing.assert_allclose(trw_edge_probabilities(edges, n, "auto"), exact, atol=1e-10)


@SETTINGS
@given(random_graph())
def test_covering_forests_lie_in_the_spanning_tree_polytope(graph):
    n, edges = graph
    rho = covering_forests(edges, n)
    assert np.all(rho > 0) and np.all(rho <= 1)
    # rank constraints: for every node subset S, rho(E(S)) <= rank of E(S) (= |S| - components)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    for r in range(2, n + 1):
        for subset in itertools.combinations(range(n), r):
            inside = np.isin(edges, subset).all(axis=1)
            sub = edges[inside]
            a = coo_matrix((np.ones(len(sub)), (sub[:, 0], sub[:, 1])), shape=(n, n))
            rank = n - connected_components(a, directed=False)[0]
            assert rho[inside].sum() <= rank + 1e-9
    a = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    assert np.isclose(rho.sum(), n - connected_components(a, directed=False)[0])


@SETTINGS
@given(random_graph(), st.floats(0.0, 0.15), st.integers(0, 2**31 - 1))
def test_default_trw_on_pruned_graphs_bounds_log_z(graph, gamma, seed):
    n, edges = graph
    rng = np.random.default_rng(seed)
    unary = np.c_[np.zeros(n), 2.0 * rng.normal(size=n)]
    table = 1.0 * np.eye(2)
    _, rep = pruned_marginals(unary, edges, table, gamma=gamma, inference="trw", damping=0.7, tol=1e-12,
                              max_iter=5000, return_report=True)
    if rep.bp_result is None:
        return
    res = rep.bp_result
    assert res.converged
    kept = edges[rep.kept]
    # -F of the kept graph's TRW, with the node terms of all nodes, bounds that graph's log Z
    from sklearn_struct.oracles.loopy import bethe_free_energy

    rho = trw_edge_probabilities(kept, n, "auto")
    edge = loopy_bp(unary, kept, table, rho=rho, damping=0.7, tol=1e-12, max_iter=5000, free_energy=True)
    np.testing.assert_allclose(edge.node_marginals, res.node_marginals, atol=1e-6)
    assert -edge.free_energy >= brute_log_z(unary, kept, table) - 1e-7
    assert np.isfinite(bethe_free_energy(unary, kept, table, edge.node_marginals, edge.edge_marginals, rho=rho))


def test_peeling_and_large_components():
    edges, n = triangle_with_tail(4)
    assert peel_dangling_trees(edges, n).tolist() == [False] * 3 + [True] * 4
    grid = grid_edges((12, 12))
    exact = trw_edge_probabilities(grid, 144, "resistance")
    assert np.isclose(exact.sum(), 143)
    forests = trw_edge_probabilities(grid, 144, "forests")
    assert np.isclose(forests.sum(), 143) and forests.min() > 0
    with pytest.raises(ValueError, match="method"):
        trw_edge_probabilities(grid, 144, "bogus")
