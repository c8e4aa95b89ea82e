"""Loopy BP with zero potentials (log -inf, hard constraints) and unconverged runs (issue 34, item 8)."""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct.oracles.loopy import loopy_bp
from sklearn_struct.utils.graph import grid_edges


def brute_marginals(unary, edges, pairwise):
    """Exact node and edge marginals by enumeration (-inf log-potentials are zeros)."""
    n, S = unary.shape
    configs = np.array(list(itertools.product(range(S), repeat=n)))
    score = unary[np.arange(n), configs].sum(axis=1)
    for e, (u, v) in enumerate(edges):
        score = score + pairwise[e][configs[:, u], configs[:, v]]
    p = np.exp(score - score.max())
    p /= p.sum()
    node = np.zeros((n, S))
    for i in range(n):
        np.add.at(node[i], configs[:, i], p)
    edge = np.zeros((len(edges), S, S))
    for e, (u, v) in enumerate(edges):
        np.add.at(edge[e], (configs[:, u], configs[:, v]), p)
    return node, edge


@st.composite
def constrained_tree(draw):
    """A random tree with zero potentials everywhere except on one witness configuration."""
    n = draw(st.integers(2, 6))
    S = draw(st.integers(2, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    edges = np.array([[int(rng.integers(0, v)), v] for v in range(1, n)], dtype=np.int64)
    unary = rng.normal(size=(n, S))
    pairwise = 1.5 * rng.normal(size=(n - 1, S, S))
    witness = rng.integers(0, S, n)  # keeps Z > 0
    frac = draw(st.sampled_from([0.2, 0.5, 0.8]))
    zero_u = rng.random((n, S)) < frac
    zero_u[np.arange(n), witness] = False
    unary[zero_u] = -np.inf
    zero_p = rng.random(pairwise.shape) < frac
    zero_p[np.arange(n - 1), witness[edges[:, 0]], witness[edges[:, 1]]] = False
    pairwise[zero_p] = -np.inf
    return unary, edges, pairwise


@settings(max_examples=40, deadline=None)
@given(constrained_tree(), st.sampled_from(["sequential", "parallel"]))
def test_zero_potentials_on_trees_give_exact_marginals(model, schedule):
    unary, edges, pairwise = model
    node, edge = brute_marginals(unary, edges, pairwise)
    res = loopy_bp(unary, edges, pairwise, schedule=schedule, max_iter=50, tol=1e-12, edge_marginals=True,
                   free_energy=False)
    assert res.converged
    assert not np.isnan(res.log_messages).any() and np.all(res.log_messages.max(axis=1) == 0.0)
    np.testing.assert_allclose(res.node_marginals, node, atol=1e-9)
    np.testing.assert_allclose(res.edge_marginals, edge, atol=1e-9)


def test_zero_potentials_on_a_loopy_grid_stay_finite_and_normalised():
    # a 4x4 grid (as in the UAI competition's grids) with hard constraints: no NaN, rows sum to 1,
    # states with zero unary potential get marginal 0; close to the exact marginals
    rng = np.random.default_rng(0)
    edges = grid_edges((3, 3))
    unary = rng.normal(size=(9, 2))
    unary[[0, 4, 8], 1] = -np.inf  # hard evidence
    pairwise = np.array([[0.5, -np.inf], [0.0, 0.5]])  # forbids (0, 1) on every edge
    res = loopy_bp(unary, edges, pairwise, max_iter=200, tol=1e-10, damping=0.3)
    assert np.isfinite(res.node_marginals).all()
    np.testing.assert_allclose(res.node_marginals.sum(axis=1), 1.0)
    assert np.all(res.node_marginals[[0, 4, 8], 1] == 0.0)
    exact, _ = brute_marginals(unary, edges, np.broadcast_to(pairwise, (len(edges), 2, 2)))
    assert np.abs(res.node_marginals - exact).max() < 0.05


def test_contradicting_constraints_give_uniform_marginals_not_nan():
    # node 0 must be 0, node 1 must be 1, and the edge forbids (0, 1): Z = 0
    unary = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    pairwise = np.array([[0.0, -np.inf], [0.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = loopy_bp(unary, [[0, 1]], pairwise, max_iter=5, edge_marginals=True)
    assert not np.isnan(res.node_marginals).any() and not np.isnan(res.edge_marginals).any()
    assert not np.isnan(res.log_messages).any()


def test_zero_potential_input_checks():
    with pytest.raises(ValueError, match="node 1 is -inf everywhere"):
        loopy_bp(np.array([[0.0, 0.0], [-np.inf, -np.inf]]), [[0, 1]], np.zeros((2, 2)))
    with pytest.raises(ValueError, match="table 0 is -inf everywhere"):
        loopy_bp(np.zeros((2, 2)), [[0, 1]], np.full((2, 2), -np.inf))
    with pytest.raises(ValueError, match=r"NaN or \+inf"):
        loopy_bp(np.zeros((2, 2)), [[0, 1]], np.array([[0.0, np.inf], [0.0, 0.0]]))
    with pytest.raises(ValueError, match=r"NaN or \+inf"):
        loopy_bp(np.array([[np.nan, 0.0]]), np.zeros((0, 2), dtype=int), np.zeros((2, 2)))


def test_an_unconverged_run_warns_and_says_so():
    # a frustrated loop at strong coupling does not converge in 3 sweeps
    edges = grid_edges((4, 4))
    rng = np.random.default_rng(1)
    unary = rng.normal(size=(16, 2))
    with pytest.warns(ConvergenceWarning, match=r"did not converge in max_iter=3 .* \(log space\)"):
        res = loopy_bp(unary, edges, 3.0 * np.array([[1.0, -1.0], [-1.0, 1.0]]), max_iter=3, tol=1e-12)
    assert not res.converged and res.max_delta > 1e-12
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = loopy_bp(unary, edges, 3.0 * np.array([[1.0, -1.0], [-1.0, 1.0]]), max_iter=3, tol=1e-12,
                         warn=False)
    assert not quiet.converged


@settings(max_examples=20, deadline=None)
@given(constrained_tree())
def test_bethe_free_energy_with_zero_potentials_is_exact_on_trees(model):
    unary, edges, pairwise = model
    n, S = unary.shape
    configs = np.array(list(itertools.product(range(S), repeat=n)))
    score = unary[np.arange(n), configs].sum(axis=1)
    for e, (u, v) in enumerate(edges):
        score = score + pairwise[e][configs[:, u], configs[:, v]]
    log_z = np.logaddexp.reduce(score)
    res = loopy_bp(unary, edges, pairwise, max_iter=50, tol=1e-12, free_energy=True)
    assert abs(-res.free_energy - log_z) < 1e-8


@settings(max_examples=20, deadline=None)
@given(constrained_tree(), st.sampled_from(["min_joint", "min_size", "none"]), st.sampled_from(["drop", "absorb"]))
def test_pruned_marginals_accept_zero_potentials(model, objective, dropped):
    # UAI-style hard constraints through the pruned-BP entry point: finite, normalised marginals,
    # zero where the unary forbids a state, exact when every factor is kept (a tree)
    from sklearn_struct.oracles.loopy import seed_gains
    from sklearn_struct.pruned_bp import pruned_marginals

    unary, edges, pairwise = model
    gains = seed_gains(unary, edges, pairwise)
    assert np.all(gains >= 0) and not np.isnan(gains).any()
    marg, report = pruned_marginals(unary, edges, pairwise, objective=objective, dropped=dropped, gamma=1e-3,
                                    max_iter=50, tol=1e-12, return_report=True)
    assert np.isfinite(marg).all()
    np.testing.assert_allclose(marg.sum(axis=1), 1.0)
    assert np.all(marg[np.isneginf(unary)] == 0.0)
    if report.kept.all():
        np.testing.assert_allclose(marg, brute_marginals(unary, edges, pairwise)[0], atol=1e-9)
