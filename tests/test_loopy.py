"""Loopy BP / TRW oracle against brute-force enumeration of small graphs."""

import itertools
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_struct.oracles.loopy import (
    absorbed_unary,
    bethe_free_energy,
    build_adjacency,
    log_softmax,
    loopy_bp,
    seed_gains,
    trw_edge_probabilities,
)
from sklearn_struct.utils.graph import grid_edges

SETTINGS = settings(max_examples=30, deadline=None)


# ----------------------------------------------------------------------------- references
def enumerate_model(unary, edges, pairwise):
    """log Z, node marginals, edge marginals and all (assignment, score) pairs by brute force."""
    n, S = unary.shape
    pairwise = np.asarray(pairwise)
    tables = pairwise[None] if pairwise.ndim == 2 else pairwise
    ys = np.array(list(itertools.product(range(S), repeat=n)))
    scores = unary[np.arange(n), ys].sum(axis=1)
    for e, (u, v) in enumerate(edges):
        scores = scores + tables[0 if tables.shape[0] == 1 else e][ys[:, u], ys[:, v]]
    log_z = np.logaddexp.reduce(scores)
    p = np.exp(scores - log_z)
    node = np.stack([np.bincount(ys[:, i], weights=p, minlength=S) for i in range(n)])
    edge = np.stack([np.bincount(ys[:, u] * S + ys[:, v], weights=p, minlength=S * S).reshape(S, S)
                     for u, v in edges]) if len(edges) else np.zeros((0, S, S))
    return log_z, node, edge, ys, scores


@st.composite
def random_tree(draw, max_nodes=7, max_states=3, scale=2.0):
    n = draw(st.integers(1, max_nodes))
    S = draw(st.integers(2, max_states))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    parents = [int(rng.integers(0, i)) for i in range(1, n)]
    edges = np.array([[i, p] if rng.random() < 0.5 else [p, i] for i, p in zip(range(1, n), parents)],
                     dtype=np.int64).reshape(-1, 2)
    unary = scale * rng.normal(size=(n, S))
    pairwise = scale * rng.normal(size=(len(edges), S, S))
    return unary, edges, pairwise


@st.composite
def random_loopy(draw, coupling=0.2):
    n = draw(st.integers(3, 7))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    pick = rng.random(len(pairs)) < 0.6
    pick[rng.integers(len(pairs))] = True
    edges = np.array([p for p, keep in zip(pairs, pick) if keep], dtype=np.int64)
    S = int(rng.integers(2, 4))
    unary = rng.normal(size=(n, S))
    pairwise = coupling * rng.normal(size=(len(edges), S, S))
    return unary, edges, pairwise


# ----------------------------------------------------------------------------- trees: exact
@SETTINGS
@given(random_tree(), st.sampled_from(["sequential", "parallel"]))
def test_sum_product_exact_on_trees(model, schedule):
    unary, edges, pairwise = model
    log_z, node, edge, _, _ = enumerate_model(unary, edges, pairwise)
    res = loopy_bp(unary, edges, pairwise, schedule=schedule, tol=1e-13, max_iter=200, free_energy=True)
    assert res.converged
    np.testing.assert_allclose(res.node_marginals, node, atol=1e-8)
    np.testing.assert_allclose(res.edge_marginals, edge, atol=1e-8)
    assert abs(-res.free_energy - log_z) < 1e-8


@SETTINGS
@given(random_tree())
def test_max_product_gives_map_on_trees(model):
    unary, edges, pairwise = model
    _, _, _, ys, scores = enumerate_model(unary, edges, pairwise)
    res = loopy_bp(unary, edges, pairwise, mode="max", tol=1e-13, max_iter=200)
    labels = res.node_marginals.argmax(axis=1)
    found = scores[np.flatnonzero((ys == labels).all(axis=1))[0]]
    assert found >= scores.max() - 1e-9


@SETTINGS
@given(random_tree(), st.floats(0.2, 1.0))
def test_trw_on_a_tree_with_rho_one_is_bp_and_damping_keeps_fixed_point(model, keep):
    unary, edges, pairwise = model
    bp = loopy_bp(unary, edges, pairwise, tol=1e-13, max_iter=300)
    trw = loopy_bp(unary, edges, pairwise, rho=np.ones(len(edges)), damping=1 - keep, tol=1e-13,
                   max_iter=2000)
    np.testing.assert_allclose(trw.node_marginals, bp.node_marginals, atol=1e-8)


def _tree_depths(edges, n):
    """Eccentricity of every node (BFS from each), for the diameter of each component."""
    adj = [[] for _ in range(n)]
    for u, v in edges:
        adj[u].append(v)
        adj[v].append(u)
    ecc = np.zeros(n, dtype=int)
    for s in range(n):
        dist = {s: 0}
        frontier = [s]
        while frontier:
            frontier = [w for x in frontier for w in adj[x] if w not in dist and not dist.update({w: dist[x] + 1})]
        ecc[s] = max(dist.values())
    return ecc


@SETTINGS
@given(random_tree(max_nodes=9), random_tree(max_nodes=9), st.integers(0, 20))
def test_forest_converges_within_diameter_sweeps_and_isolated_nodes_are_free(a, b, n_isolated):
    # two trees (same number of states) and isolated nodes, shuffled node indices
    (ua, ea, pa), (ub, eb, pb) = a, b
    S = min(ua.shape[1], ub.shape[1])
    ua, ub, pa, pb = ua[:, :S], ub[:, :S], pa[:, :S, :S], pb[:, :S, :S]
    rng = np.random.default_rng(len(ea) * 31 + n_isolated)
    unary = np.vstack([ua, ub, rng.normal(size=(n_isolated, S))])
    edges = np.vstack([ea, eb + len(ua)]).astype(np.int64)
    perm = rng.permutation(len(unary))
    inv = np.argsort(perm)
    unary, edges = unary[perm], inv[edges]
    pairwise = np.concatenate([pa, pb])
    res = loopy_bp(unary, edges, pairwise, tol=1e-12, max_iter=100)
    diameter = _tree_depths(edges, len(unary)).max()
    # a message with h factors behind it is final after h + 1 sweeps; one more sweep confirms it
    assert res.converged and res.n_iter <= diameter + 1
    _, node, _, _, _ = enumerate_model(unary, edges, pairwise) if len(unary) <= 12 else (0, None, 0, 0, 0)
    if node is not None:
        np.testing.assert_allclose(res.node_marginals, node, atol=1e-9)
    connected = np.zeros(len(unary), dtype=bool)
    connected[edges.ravel()] = True
    if connected.any():  # isolated nodes send nothing and do not change the schedule of the others
        alone = loopy_bp(unary[connected], np.searchsorted(np.flatnonzero(connected), edges), pairwise, tol=1e-12)
        assert res.n_message_updates == alone.n_message_updates
    else:
        assert res.n_message_updates == 0
    np.testing.assert_allclose(res.node_marginals[~connected], np.exp(log_softmax(unary[~connected])))


@SETTINGS
@given(random_tree(max_nodes=8), st.integers(0, 2**31 - 1))
def test_absorbing_pendant_factors_keeps_the_rest_of_a_tree_exact(model, seed):
    # a leaf's factor-to-node message from its unary alone is the exact BP message into its parent
    unary, edges, pairwise = model
    n = unary.shape[0]
    if n < 2:
        return
    _, node, _, _, _ = enumerate_model(unary, edges, pairwise)
    degree = np.bincount(edges.ravel(), minlength=n)
    pendant = (degree[edges] == 1).any(axis=1)
    drop = pendant & (np.random.default_rng(seed).random(len(edges)) < 0.7)
    absorbed = absorbed_unary(unary, edges[drop], pairwise[drop])
    res = loopy_bp(absorbed, edges[~drop], pairwise[~drop], tol=1e-13, max_iter=200)
    # exact except at a leaf whose factor was absorbed (its parent's other factors are missing)
    leaf_of_dropped = np.zeros(n, dtype=bool)
    for u, v in edges[drop]:
        if degree[u] == 1 and degree[v] > 1:
            leaf_of_dropped[u] = True
        elif degree[v] == 1 and degree[u] > 1:
            leaf_of_dropped[v] = True
    np.testing.assert_allclose(res.node_marginals[~leaf_of_dropped], node[~leaf_of_dropped], atol=1e-9)


def test_absorbed_unary_with_potentials_of_magnitude_1e3():
    rng = np.random.default_rng(4)
    unary, pairwise = 1e3 * rng.normal(size=(2, 3)), 1e3 * rng.normal(size=(3, 3))
    _, node, _, _, _ = enumerate_model(unary, np.array([[0, 1]]), pairwise)
    absorbed = absorbed_unary(unary, [[0, 1]], pairwise)
    assert np.all(np.isfinite(absorbed))
    np.testing.assert_allclose(np.exp(log_softmax(absorbed)), node, atol=1e-12)
    np.testing.assert_array_equal(absorbed_unary(unary, np.zeros((0, 2), dtype=int), pairwise), unary)


def test_bethe_free_energy_is_minus_log_z_on_a_forest():
    rng = np.random.default_rng(3)
    edges = np.array([[0, 1], [1, 2], [3, 4]])  # two components and an isolated node 5
    unary, pairwise = rng.normal(size=(6, 3)), rng.normal(size=(3, 3, 3))
    log_z, node, edge, _, _ = enumerate_model(unary, edges, pairwise)
    res = loopy_bp(unary, edges, pairwise, tol=1e-13, free_energy=True)
    assert abs(bethe_free_energy(unary, edges, pairwise, node, edge) + log_z) < 1e-10
    assert abs(res.free_energy + log_z) < 1e-9
    assert np.isclose(res.node_energy_terms.sum() + res.edge_energy_terms.sum(), res.free_energy)


# ----------------------------------------------------------------------------- loopy graphs
@SETTINGS
@given(random_loopy(), st.sampled_from(["sequential", "parallel"]))
def test_sum_product_close_on_weakly_coupled_loopy_graphs(model, schedule):
    unary, edges, pairwise = model
    log_z, node, _, _, _ = enumerate_model(unary, edges, pairwise)
    res = loopy_bp(unary, edges, pairwise, schedule=schedule, tol=1e-10, max_iter=500, free_energy=True)
    assert res.converged
    assert np.abs(res.node_marginals - node).max() < 0.02
    assert abs(-res.free_energy - log_z) < 0.05


@SETTINGS
@given(random_loopy(coupling=0.5))
def test_trw_bounds_log_z_from_above(model):
    unary, edges, pairwise = model
    log_z = enumerate_model(unary, edges, pairwise)[0]
    rho = trw_edge_probabilities(edges, unary.shape[0], method="spanning_tree")
    res = loopy_bp(unary, edges, pairwise, rho=rho, damping=0.5, tol=1e-10, max_iter=3000, free_energy=True)
    assert res.converged
    assert -res.free_energy >= log_z - 1e-7


def test_spanning_tree_probabilities():
    # a triangle with a pendant edge: cycle edges appear in 2 of 3 spanning trees, the bridge in all
    rho = trw_edge_probabilities([[0, 1], [1, 2], [2, 0], [2, 3]], 4, method="spanning_tree")
    np.testing.assert_allclose(rho, [2 / 3, 2 / 3, 2 / 3, 1.0])
    # Foster: the exact values sum to n - 1 per component, the uniform constant is their mean
    edges = grid_edges((4, 5))
    exact = trw_edge_probabilities(edges, 20, method="spanning_tree")
    assert np.isclose(exact.sum(), 19)
    np.testing.assert_allclose(trw_edge_probabilities(edges, 20), exact.mean())


def test_parallel_and_sequential_reach_the_same_fixed_point():
    rng = np.random.default_rng(0)
    edges = grid_edges((6, 6))
    unary = np.c_[np.zeros(36), 2 * rng.normal(size=36)]
    a = loopy_bp(unary, edges, 0.5 * np.eye(2), schedule="parallel", tol=1e-12, max_iter=500)
    b = loopy_bp(unary, edges, 0.5 * np.eye(2), schedule="sequential", tol=1e-12, max_iter=500)
    np.testing.assert_allclose(a.node_marginals, b.node_marginals, atol=1e-9)
    warm = loopy_bp(unary, edges, 0.5 * np.eye(2), init_messages=b.log_messages, tol=1e-12)
    assert warm.n_iter <= 2


@pytest.mark.parametrize("mode, damping", [("sum", 0.0), ("sum", 0.3), ("max", 0.0)])
def test_flooding_on_several_threads_is_the_one_thread_run(mode, damping):
    # large graphs split each flooding sweep into chunks of nodes on threads: the same messages
    rng = np.random.default_rng(3)
    edges = grid_edges((7, 9))
    unary = 2 * rng.normal(size=(63, 3))
    pairwise = rng.normal(size=(len(edges), 3, 3))
    one = loopy_bp(unary, edges, pairwise, mode=mode, damping=damping, schedule="parallel", max_iter=40)
    with mock.patch("sklearn_struct.oracles.loopy.n_threads_for", lambda work: 3):
        three = loopy_bp(unary, edges, pairwise, mode=mode, damping=damping, schedule="parallel", max_iter=40)
    assert (three.n_iter, three.n_message_updates, three.max_delta) == (one.n_iter, one.n_message_updates,
                                                                        one.max_delta)
    np.testing.assert_array_equal(three.log_messages, one.log_messages)
    np.testing.assert_array_equal(three.node_marginals, one.node_marginals)


# ----------------------------------------------------------------------------- stability
def test_potentials_of_magnitude_1e3_on_a_tree():
    rng = np.random.default_rng(1)
    unary = 1e3 * rng.normal(size=(6, 3))
    edges = np.array([[1, 0], [2, 0], [3, 1], [4, 1], [5, 4]])
    pairwise = 1e3 * rng.normal(size=(5, 3, 3))
    log_z, node, _, _, _ = enumerate_model(unary, edges, pairwise)
    res = loopy_bp(unary, edges, pairwise, tol=1e-13, free_energy=True)
    np.testing.assert_allclose(res.node_marginals, node, atol=1e-10)
    assert abs(-res.free_energy - log_z) < 1e-9 * abs(log_z)


@pytest.mark.parametrize("mode", ["sum", "max"])
def test_potentials_of_magnitude_1e3_on_a_grid_stay_finite(mode):
    rng = np.random.default_rng(2)
    edges = grid_edges((8, 8))
    res = loopy_bp(1e3 * rng.normal(size=(64, 2)), edges, 1e3 * rng.normal(size=(len(edges), 2, 2)),
                   mode=mode, max_iter=30)
    assert np.all(np.isfinite(res.node_marginals))
    np.testing.assert_allclose(res.node_marginals.sum(axis=1), 1.0)


# ----------------------------------------------------------------------------- gains
@SETTINGS
@given(random_tree(max_nodes=4, scale=1.5))
def test_seed_gains_equal_exact_kl_by_enumeration(model):
    unary, edges, pairwise = model
    if len(edges) == 0:
        return
    gains = seed_gains(unary, edges, pairwise)
    _, _, _, ys, base = enumerate_model(unary, np.zeros((0, 2), dtype=int), pairwise[:0])
    log_p_seed = base - np.logaddexp.reduce(base)
    for e, (u, v) in enumerate(edges):
        with_e = base + pairwise[e][ys[:, u], ys[:, v]]
        log_p_e = with_e - np.logaddexp.reduce(with_e)
        kl = np.sum(np.exp(log_p_seed) * (log_p_seed - log_p_e))
        assert abs(gains[e] - kl) < 1e-10


def test_binary_gain_matches_the_paper_formula():
    theta, q_u, q_v = 1.7, 0.3, 0.8
    unary = np.log([[1 - q_u, q_u], [1 - q_v, q_v]])
    table = np.array([[0.0, 0.0], [0.0, theta]])  # phi = y_u AND y_v, mu = q_u q_v
    mu = q_u * q_v
    expected = np.log(1 - mu + mu * np.exp(theta)) - mu * theta
    assert np.isclose(seed_gains(unary, [[0, 1]], table)[0], expected)
    assert seed_gains(unary, [[0, 1]], np.full((2, 2), 5.0))[0] == 0.0  # constant table: no gain
    assert np.isfinite(seed_gains(1e3 * unary, [[0, 1]], 1e3 * table)[0])


# ----------------------------------------------------------------------------- structure / input
def test_graph_without_edges_gives_unary_softmax():
    unary = np.array([[0.0, 1.0], [2.0, 0.0]])
    res = loopy_bp(unary, np.zeros((0, 2), dtype=int), np.eye(2), free_energy=True)
    expected = np.exp(unary) / np.exp(unary).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(res.node_marginals, expected)
    assert np.isclose(-res.free_energy, np.logaddexp.reduce(unary, axis=1).sum())


def test_adjacency_slots_are_consistent():
    edges = grid_edges((3, 4), connectivity=8)
    adj = build_adjacency(edges, 12)
    owner = np.repeat(np.arange(12), np.diff(adj.indptr))
    assert np.array_equal(adj.neighbors[adj.reverse], owner)
    assert np.array_equal(adj.reverse[adj.reverse], np.arange(adj.n_messages))
    fwd = adj.forward == 1
    assert np.array_equal(edges[adj.edge_ids[fwd], 0], owner[fwd])


@pytest.mark.parametrize(
    "edges, pairwise, unary, match",
    [
        ([[0, 3]], np.eye(2), np.zeros((3, 2)), "outside"),
        ([[1, 1]], np.eye(2), np.zeros((3, 2)), "self-loop"),
        ([[0, 1], [1, 0]], np.eye(2), np.zeros((3, 2)), "both join nodes 0 and 1"),
        ([[0, 1]], np.eye(3), np.zeros((3, 2)), "pairwise must have shape"),
        ([[0, 1]], np.ones((2, 2, 2)), np.zeros((3, 2)), "pairwise must have shape"),
        ([[0, 1]], np.eye(2), np.full((3, 2), np.nan), "NaN"),
        ([[0, 1]], np.full((2, 2), np.nan), np.zeros((3, 2)), "NaN"),
        ([[0, 1]], np.eye(2), np.zeros((0, 2)), "empty"),
        ([[0.5, 1]], np.eye(2), np.zeros((3, 2)), "integer"),
        ([0, 1, 2], np.eye(2), np.zeros((3, 2)), r"shape \(n_edges, 2\)"),
    ],
)
def test_bad_input_errors(edges, pairwise, unary, match):
    with pytest.raises(ValueError, match=match):
        loopy_bp(unary, edges, pairwise)


def test_bad_options():
    with pytest.raises(ValueError, match="mode"):
        loopy_bp(np.zeros((2, 2)), [[0, 1]], np.eye(2), mode="mean")
    with pytest.raises(ValueError, match="damping"):
        loopy_bp(np.zeros((2, 2)), [[0, 1]], np.eye(2), damping=1.0)
    with pytest.raises(ValueError, match="rho"):
        loopy_bp(np.zeros((2, 2)), [[0, 1]], np.eye(2), rho=0.0)
    with pytest.raises(ValueError, match="sum-product"):
        loopy_bp(np.zeros((2, 2)), [[0, 1]], np.eye(2), mode="max", free_energy=True)


@pytest.mark.parametrize("func", [seed_gains, absorbed_unary])
@pytest.mark.parametrize(
    "log_q, match",
    [
        (np.zeros((2, 2)), "log_seed_marginals must have the unary's shape"),
        (np.full((3, 2), np.nan), "log_seed_marginals contain NaN"),
        (np.full((3, 2), np.inf), "log_seed_marginals contain NaN or \\+inf"),
    ],
)
def test_bad_seed_marginals(func, log_q, match):
    with pytest.raises(ValueError, match=match):
        func(np.zeros((3, 2)), [[0, 1], [1, 2]], np.eye(2), log_seed_marginals=log_q)
