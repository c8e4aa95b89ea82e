"""Compiled kernels of the MLEStructMatcher fit: the assignment LMO against brute force and scipy, a
compiled block-coordinate FW pass against the Python block step it replaced (the reference below)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from sklearn_struct.datasets import make_matchings
from sklearn_struct.mle_struct import _MAX_STEP, _N_BISECT, _DualProblem
from sklearn_struct.oracles._matching_fw import bcfw_pass, bcfw_state, lsap, lsap_warm
from sklearn_struct.oracles.matching import assignment, bisect_step, neg_entropy_grad
from sklearn_struct.utils.validation import check_matchings


def _brute_force_cost(cost):
    n_left, n_right = cost.shape
    return min(cost[np.arange(n_left), list(p)].sum() for p in itertools.permutations(range(n_right), n_left))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(0, 2), st.integers(0, 2**31 - 1), st.booleans())
def test_lsap_is_a_minimum_cost_assignment(n_left, extra, seed, integer_costs):
    rng = np.random.default_rng(seed)
    cost = rng.normal(size=(n_left, n_left + extra))
    if integer_costs:  # many ties
        cost = np.round(cost * 2)
    y = lsap(cost)
    assert len(set(y.tolist())) == n_left and ((0 <= y) & (y < n_left + extra)).all()
    assert np.isclose(cost[np.arange(n_left), y].sum(), _brute_force_cost(cost), rtol=0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**31 - 1), st.booleans())
def test_warm_started_lsap_is_a_minimum_cost_assignment(n, seed, integer_costs):
    rng = np.random.default_rng(seed)
    cost = rng.normal(size=(n, n))
    if integer_costs:
        cost = np.round(cost * 2)
    v = rng.normal(size=n) * 3  # any start
    for _ in range(3):  # and the duals it returns, on perturbed costs
        y = lsap_warm(cost, v)
        assert sorted(y.tolist()) == list(range(n))
        assert np.isclose(cost[np.arange(n), y].sum(), _brute_force_cost(cost), rtol=0, atol=1e-12)
        u = (cost - v).min(axis=1)  # v are optimal duals: the row minima close the duality gap
        assert np.isclose(u.sum() + v.sum(), cost[np.arange(n), y].sum(), rtol=0, atol=1e-9)
        cost = cost + rng.normal(size=cost.shape) * 0.1


def test_lsap_matches_scipy_on_larger_problems():
    rng = np.random.default_rng(0)
    for shape in [(30, 30), (20, 35), (1, 7), (50, 50)]:
        cost = rng.normal(size=shape) * rng.uniform(0.01, 100)
        np.testing.assert_array_equal(lsap(cost), linear_sum_assignment(cost)[1])


# ------------------------------------------------------------------ the Python block step (reference)


def _reference_step(p, m, k, line, grad_buf):
    """The block step of MLEStructMatcher before the compiled pass (public oracles, scipy LMO)."""
    sl, shape = p.block(m)
    tau_m = p.tau[sl]
    grad = grad_buf[: tau_m.size]
    neg_entropy_grad(tau_m.reshape(shape), p.rho, grad.reshape(shape))
    grad -= p.G[sl] @ (p.a / p.alpha)
    d = p.vertex(m, assignment(grad.reshape(shape), check_input=False)) - tau_m
    gap = -float(d @ grad)
    if gap <= 0.0:
        return max(gap, 0.0)
    b = -(p.G[sl].T @ d)
    if line:
        lin, quad = float(p.a @ b) / p.alpha, float(b @ b) / p.alpha
        eta = min(_MAX_STEP, bisect_step(tau_m.reshape(shape), d.reshape(shape), p.rho, lin, quad, _N_BISECT))
    else:
        eta = 2.0 * p.n_samples / (2.0 * p.n_samples + k)
    tau_m += eta * d
    p.a += eta * b
    return gap


def _problem(shape, rho, seed):
    X, y = make_matchings(n_samples=8, n_nodes=shape[1], n_features=3, noise=0.5, random_state=seed)
    X = [x[: shape[0]] for x in X]
    y = [a[: shape[0]] for a in y]
    X, y = check_matchings(X, y)
    return _DualProblem(X, y, 0.3, rho)


@pytest.mark.parametrize("line", [True, False])
@pytest.mark.parametrize("shape, rho", [((5, 5), 1.0), ((4, 6), 1.0), ((5, 5), 0.5), ((3, 5), 0.3)])
def test_compiled_pass_follows_the_python_block_steps(shape, rho, line):
    ref, new = _problem(shape, rho, 0), _problem(shape, rho, 0)
    rng = np.random.default_rng(1)
    gaps_ref, gaps_new = np.zeros(ref.n_samples), np.zeros(ref.n_samples)
    grad_buf = np.empty(ref.tau.size)
    tau0 = ref.tau.copy()
    caches = bcfw_state(new.G, new.tau, new.offsets, new.shapes, new.rho)
    k = 0
    for _ in range(40):
        order = rng.integers(ref.n_samples, size=ref.n_samples)
        for i, m in enumerate(order):
            gaps_ref[m] = _reference_step(ref, m, k + i + 1, line, grad_buf)
        bcfw_pass(new.G, new.tau, new.a, new.offsets, new.shapes, order, new.alpha, new.rho, line, k, _MAX_STEP,
                  _N_BISECT, False, gaps_new, *caches)
        k += len(order)
        logt, log1mt, neg_h, gt_tau, _ = caches
        np.testing.assert_allclose(np.exp(logt), new.tau, rtol=1e-10, atol=1e-13)  # up to the rounding of tau
        np.testing.assert_allclose(-np.expm1(log1mt), new.tau, rtol=1e-10, atol=1e-13)
        for m in range(new.n_samples):
            sl = new.block(m)[0]
            np.testing.assert_allclose(gt_tau[m], new.G[sl].T @ new.tau[sl], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(new.objective(), float(new.a @ new.a) / (2 * new.alpha) + neg_h.sum(), rtol=1e-10)
        np.testing.assert_allclose(new.tau, ref.tau, rtol=0, atol=1e-9)
        np.testing.assert_allclose(new.a, ref.a, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(gaps_new, gaps_ref, rtol=1e-5, atol=1e-6)  # differences of large terms
    assert np.abs(new.tau - tau0).max() > 0.1  # the steps moved (not all zero)



@settings(max_examples=80, deadline=None)
@given(st.sampled_from([(4, 4), (3, 6), (5, 5)]), st.sampled_from([1.0, 0.5, 0.3]), st.integers(0, 2**31 - 1),
       st.floats(-7, 1))
def test_vertex_line_search_is_the_exact_line_search(shape, rho, seed, log_scale):
    """Series (moments) and entry-by-entry evaluations against the packed bisection of the Python path."""
    from sklearn_struct.oracles._matching_fw import _vertex_line_search
    from sklearn_struct.oracles.matching import packed_bisect_step

    rng = np.random.default_rng(seed)
    n_left, n_right = shape
    weights = rng.dirichlet(np.full(4, 0.3))
    if rng.random() < 0.5:  # near a vertex: entries close to 1 (the ratio > 1 branch)
        weights = 0.999 * np.eye(4)[0] + 0.001 * weights
    tau = sum(w * np.eye(n_right)[rng.permutation(n_right)[:n_left]] for w in weights).ravel()
    tau = 0.999 * tau + 0.001 / n_right  # interior
    y = rng.permutation(n_right)[:n_left]
    d = -tau.copy()
    d[np.arange(n_left) * n_right + y] += 1.0
    quad = rng.uniform(0.1, 10.0)
    entropy_grad = np.empty(shape)
    neg_entropy_grad(tau.reshape(shape), rho, entropy_grad)
    lin = -(10.0 ** log_scale) - d @ entropy_grad.ravel()  # slope -10^log_scale at 0: tiny to large steps
    expected = min(_MAX_STEP, packed_bisect_step(tau, d, np.array([0, tau.size]), np.array([shape]), rho, lin, quad,
                                                 _N_BISECT))
    got = _vertex_line_search(tau, np.log(tau), np.log1p(-tau), np.empty(tau.size), y, n_left, n_right, rho, lin,
                              quad, _MAX_STEP, _N_BISECT, np.empty(n_right), np.empty(n_right))
    assert 0.0 < expected
    assert got == pytest.approx(expected, rel=1e-8, abs=1e-12)
