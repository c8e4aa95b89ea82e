"""LP-MAP dual oracle (star updates) against HiGHS on the local polytope and brute-force MAP."""

import itertools
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_struct.oracles.lp import (
    LocalPolytopeLP,
    conditional_scores,
    decode,
    dual_values,
    icm,
    lp_map,
    make_lp_graph,
    max_marginals,
    primal_values,
    pseudo_marginals,
    star_passes,
)


@st.composite
def models(draw, max_nodes=5, max_states=3, binary=False):
    n = draw(st.integers(1, max_nodes))
    pairs = list(itertools.combinations(range(n), 2))
    keep = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    edges = np.array([p for p, k in zip(pairs, keep) if k], dtype=np.int64).reshape(-1, 2)
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    ns = np.full(n, 2) if binary else rng.integers(1, max_states + 1, size=n)
    S = int(ns.max())
    scale = draw(st.sampled_from([0.5, 2.0, 10.0]))
    unary = rng.normal(size=(n, S))
    pairwise = scale * rng.normal(size=(len(edges), S, S))
    return make_lp_graph(edges, ns), unary, pairwise


def brute_force(graph, unary, pairwise):
    """All labellings' scores, their states, and the max-marginals."""
    states = np.array(list(itertools.product(*[range(k) for k in graph.n_states])), dtype=np.int64)
    scores = primal_values(graph, np.repeat(unary[None], len(states), 0), pairwise, states)
    mm = np.full(unary.shape, -np.inf)
    for i in range(graph.n_nodes):
        for a in range(graph.n_states[i]):
            mm[i, a] = scores[states[:, i] == a].max()
    return states, scores, mm


@settings(max_examples=60, deadline=None)
@given(models())
def test_star_updates_never_increase_dual(model):
    graph, unary, pairwise = model
    delta = np.zeros((1, 2 * graph.n_edges, graph.max_states))
    g = dual_values(graph, unary, pairwise, delta)[0]
    for _ in range(15):
        star_passes(graph, unary, pairwise, delta, 1)
        g_new = dual_values(graph, unary, pairwise, delta)[0]
        assert g_new <= g + 1e-9 * max(1.0, abs(g))
        g = g_new


@settings(max_examples=60, deadline=None)
@given(models(max_nodes=6, binary=True))
def test_binary_converged_dual_equals_highs(model):
    graph, unary, pairwise = model
    res = lp_map(graph, unary, pairwise, max_iter=20000, tol=1e-9, local_search=False)
    lp_value = LocalPolytopeLP(graph).solve(unary, pairwise)[0]
    assert res.dual[0] == pytest.approx(lp_value, rel=1e-6, abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(models())
def test_dual_bounds_lp_and_map_and_certificates_are_correct(model):
    graph, unary, pairwise = model
    res = lp_map(graph, unary, pairwise, max_iter=5000, tol=1e-8)
    lp_value = LocalPolytopeLP(graph, solver="linprog").solve(unary, pairwise)[0]
    direct = LocalPolytopeLP(graph, solver="highspy")
    assert direct.solve(unary, pairwise)[0] == pytest.approx(lp_value, rel=1e-7, abs=1e-7)
    assert direct.solve(unary, -pairwise)[0] == pytest.approx(  # re-solve from the previous basis
        LocalPolytopeLP(graph, solver="linprog").solve(unary, -pairwise)[0], rel=1e-7, abs=1e-7)
    states, scores, _ = brute_force(graph, unary, pairwise)
    map_value = scores.max()
    assert res.dual[0] >= lp_value - 1e-7 * max(1, abs(lp_value))
    assert lp_value >= map_value - 1e-7 * max(1, abs(map_value))
    assert res.primal[0] <= map_value + 1e-9
    assert res.primal[0] == pytest.approx(primal_values(graph, unary, pairwise, res.labels)[0])
    if res.certified[0]:
        assert res.primal[0] == pytest.approx(map_value, rel=1e-6, abs=1e-6)
        assert res.dual[0] == pytest.approx(map_value, rel=1e-6, abs=1e-6)
    if abs(lp_value - map_value) <= 1e-9 * max(1, abs(map_value)) and res.dual[0] - lp_value < 1e-9:
        # tight LP solved: the dual equals the brute-force MAP value
        assert res.dual[0] == pytest.approx(map_value, rel=1e-6, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(models(), st.integers(0, 20))
def test_max_marginals_bound_brute_force(model, n_passes):
    graph, unary, pairwise = model
    delta = np.zeros((1, 2 * graph.n_edges, graph.max_states))
    star_passes(graph, unary, pairwise, delta, n_passes)
    mm = max_marginals(graph, unary, pairwise, delta)[0]
    _, scores, mm_true = brute_force(graph, unary, pairwise)
    valid = np.isfinite(mm_true)
    assert np.all(mm[valid] >= mm_true[valid] - 1e-7 * np.maximum(1, np.abs(mm_true[valid])))
    assert np.all(np.isneginf(mm[~valid]))
    res = lp_map(graph, unary, pairwise, max_iter=5000, tol=1e-9, local_search=False)
    if res.certified[0]:
        mm = max_marginals(graph, unary, pairwise, res.delta)[0]
        at_map = mm[np.arange(graph.n_nodes), res.labels[0]]
        np.testing.assert_allclose(at_map, scores.max(), rtol=1e-6, atol=1e-6)
        marg = pseudo_marginals(graph, unary, res.delta)[0]
        assert np.all(marg[np.arange(graph.n_nodes), res.labels[0]] > 0)


@settings(max_examples=40, deadline=None)
@given(models())
def test_pseudo_marginals_and_icm(model):
    graph, unary, pairwise = model
    res = lp_map(graph, unary, pairwise, max_iter=2000, tol=1e-8, local_search=False)
    marg = pseudo_marginals(graph, unary, res.delta)[0]
    np.testing.assert_allclose(marg.sum(axis=1), 1.0)
    for i, k in enumerate(graph.n_states):
        assert np.all(marg[i, k:] == 0)
    start = decode(graph, unary, res.delta)
    y, score = icm(graph, unary, pairwise, start)
    assert score[0] >= primal_values(graph, unary, pairwise, start)[0] - 1e-12
    # a local optimum: no single-node change improves it
    for i in range(graph.n_nodes):
        for a in range(graph.n_states[i]):
            z = y.copy()
            z[0, i] = a
            assert primal_values(graph, unary, pairwise, z)[0] <= score[0] + 1e-9


def test_batch_float32_matches_float64_and_threads():
    rng = np.random.default_rng(0)
    edges = np.array(list(itertools.combinations(range(8), 2)))
    graph = make_lp_graph(edges, np.full(8, 2))
    unary = rng.normal(size=(300, 8, 2))
    pairwise = rng.normal(size=(len(edges), 2, 2))
    d64 = star_passes(graph, unary, pairwise, np.zeros((300, 2 * len(edges), 2)), 5)
    d32 = star_passes(graph, unary, pairwise, np.zeros((300, 2 * len(edges), 2), dtype=np.float32), 5)
    assert d32.dtype == np.float32
    np.testing.assert_allclose(d32, d64, atol=1e-4)
    one = np.stack([star_passes(graph, unary[m], pairwise, np.zeros((1, 2 * len(edges), 2)), 5)[0]
                    for m in range(3)])
    np.testing.assert_allclose(d64[:3], one)


def test_bad_graphs():
    with pytest.raises(ValueError, match="self-loop"):
        make_lp_graph([[0, 0]], [2, 2])
    with pytest.raises(ValueError, match="edge 1"):
        make_lp_graph([[0, 1], [0, 5]], [2, 2])
    with pytest.raises(ValueError, match="both join"):
        make_lp_graph([[0, 1], [1, 0]], [2, 2])
    with pytest.raises(ValueError, match="n_states"):
        make_lp_graph([[0, 1]], [2, 0])


def test_blocks_on_threads_give_the_one_thread_answer():
    """The batched kernels run serial blocks of samples on threads: any split gives the same numbers."""
    rng = np.random.default_rng(1)
    edges = np.array(list(itertools.combinations(range(6), 2)))
    graph = make_lp_graph(edges, np.array([2, 3, 2, 3, 2, 2]))
    unary = rng.normal(size=(37, 6, 3))
    pairwise = rng.normal(size=(len(edges), 3, 3))

    def everything():
        res = lp_map(graph, unary, pairwise, max_iter=50)
        Y = res.labels
        return [res.labels, res.dual, res.primal, res.delta, dual_values(graph, unary, pairwise, res.delta),
                decode(graph, unary, res.delta), primal_values(graph, unary, pairwise, Y),
                pseudo_marginals(graph, unary, res.delta), max_marginals(graph, unary, pairwise, res.delta),
                conditional_scores(graph, unary, pairwise, Y), icm(graph, unary, pairwise, Y)[1],
                star_passes(graph, unary, pairwise, np.zeros_like(res.delta), 3)]

    one = everything()
    with mock.patch("sklearn_struct.oracles.lp.n_threads_for", lambda work: 4):
        four = everything()
    for a, b in zip(one, four):
        np.testing.assert_array_equal(a, b)
