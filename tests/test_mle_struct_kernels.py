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

