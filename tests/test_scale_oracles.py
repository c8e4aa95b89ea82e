"""Scale tests: oracles on long sequences and large potentials against log-space references.

The chain reference below is written independently of :mod:`sklearn_struct.oracles.chain`
(textbook log-space recursions, forward normalised by its maximum, backward by its
log-sum-exp, marginals normalised per position), so it shares no code with the kernels.
"""

import itertools
import math

import numpy as np
import pytest
from numba import njit

from sklearn_struct.oracles.chain import forward_backward, viterbi
from sklearn_struct.oracles.loopy import bethe_free_energy, loopy_bp, trw_edge_probabilities

N_TOKENS = 100_000
N_LABELS = 22


@njit(cache=False)
def _lse(v):
    m = -np.inf
    for x in v:
        m = max(m, x)
    if m == -np.inf:
        return m
    acc = 0.0
    for x in v:
        acc += math.exp(x - m)
    return m + math.log(acc)


@njit(cache=False)
def _reference_chain(unary, trans):
    """Node marginals, summed edge marginals, log Z and the Viterbi path of one chain."""
    n, L = unary.shape
    la = np.empty((n, L))
    lb = np.zeros((n, L))
    tmp = np.empty(L)
    m = unary[0].max()
    la[0] = unary[0] - m
    log_z = m
    for t in range(1, n):
        for j in range(L):
            for i in range(L):
                tmp[i] = la[t - 1, i] + trans[i, j]
            la[t, j] = _lse(tmp) + unary[t, j]
        m = la[t].max()
        la[t] -= m
        log_z += m
    log_z += _lse(la[n - 1])
    for t in range(n - 2, -1, -1):
        for i in range(L):
            for j in range(L):
                tmp[j] = trans[i, j] + unary[t + 1, j] + lb[t + 1, j]
            lb[t, i] = _lse(tmp)
        lb[t] -= _lse(lb[t])
    node = np.empty((n, L))
    for t in range(n):
        for j in range(L):
            tmp[j] = la[t, j] + lb[t, j]
        z = _lse(tmp)
        for j in range(L):
            node[t, j] = math.exp(tmp[j] - z)
    edge = np.zeros((L, L))
    w2 = np.empty((L, L))
    for t in range(1, n):
        for i in range(L):
            for j in range(L):
                w2[i, j] = la[t - 1, i] + trans[i, j] + unary[t, j] + lb[t, j]
        z = _lse(w2.ravel())
        for i in range(L):
            for j in range(L):
                edge[i, j] += math.exp(w2[i, j] - z)
    # Viterbi with delta kept at maximum 0
    back = np.empty((n, L), dtype=np.int64)
    d = unary[0] - unary[0].max()
    new = np.empty(L)
    for t in range(1, n):
        for j in range(L):
            best, arg = -np.inf, 0
            for i in range(L):
                if d[i] + trans[i, j] > best:
                    best, arg = d[i] + trans[i, j], i
            back[t, j] = arg
            new[j] = best + unary[t, j]
        d[:] = new - new.max()
    path = np.empty(n, dtype=np.int64)
    path[n - 1] = np.argmax(d)
    for t in range(n - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return node, edge, log_z, path


def _path_score(unary, trans, path):
    terms = np.concatenate([unary[np.arange(len(path)), path], trans[path[:-1], path[1:]]])
    return math.fsum(terms)


@pytest.mark.parametrize("scale", [1e3, 1e6])
def test_chain_100k_tokens_large_potentials_match_log_space_reference(scale):
    rng = np.random.default_rng(int(scale) % 97)
    unary = rng.normal(size=(N_TOKENS, N_LABELS)) * scale
    trans = rng.normal(size=(N_LABELS, N_LABELS)) * scale
    offsets = np.array([0, N_TOKENS])
    log_z, node, edge = forward_backward(unary, trans, offsets)
    ref_node, ref_edge, ref_log_z, ref_path = _reference_chain(unary, trans)
    # marginals are exact to 1e-9 at any length and scale (they used to lose 1e-4 .. 1e-1)
    np.testing.assert_allclose(node.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(node, ref_node, atol=1e-9)
    np.testing.assert_allclose(edge, ref_edge, atol=1e-9 * N_TOKENS)
    assert abs(edge.sum() - (N_TOKENS - 1)) < 1e-9 * N_TOKENS
    assert abs(log_z[0] - ref_log_z) <= 1e-12 * abs(ref_log_z)
    labels, scores = viterbi(unary, trans, offsets)
    np.testing.assert_array_equal(labels, ref_path)
    assert abs(scores[0] - _path_score(unary, trans, labels)) <= 1e-12 * abs(scores[0])


def test_chain_large_potentials_in_a_batch_with_per_position_transitions():
    # many sequences, per-position tables, mixed magnitudes: each sequence against the reference
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 400, size=30)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    scales = rng.choice([1.0, 1e3, 1e6], size=30)
    unary = rng.normal(size=(offsets[-1], 6)) * np.repeat(scales, lengths)[:, None]
    trans = rng.normal(size=(offsets[-1] - 30, 6, 6)) * np.repeat(scales, lengths - 1)[:, None, None]
    _, node, edge = forward_backward(unary, trans, offsets, edge_marginals="per_position")
    eoff = offsets - np.arange(31)
    for s in range(30):
        lo, hi = offsets[s], offsets[s + 1]
        ref_node, _, _, _ = _reference_chain_per_position(unary[lo:hi], trans[eoff[s] : eoff[s + 1]])
        np.testing.assert_allclose(node[lo:hi], ref_node, atol=1e-9)
        np.testing.assert_allclose(edge[eoff[s] : eoff[s + 1]].sum(axis=2), ref_node[:-1], atol=1e-9)


def _reference_chain_per_position(unary, trans):
    """Per-position version of the reference by brute log-space recursion in NumPy."""
    n, L = unary.shape
    la = np.empty((n, L))
    lb = np.zeros((n, L))
    la[0] = unary[0] - unary[0].max()
    for t in range(1, n):
        w = la[t - 1][:, None] + trans[t - 1]
        m = w.max(axis=0)
        la[t] = m + np.log(np.exp(w - m).sum(axis=0)) + unary[t]
        la[t] -= la[t].max()
    for t in range(n - 2, -1, -1):
        w = trans[t] + unary[t + 1] + lb[t + 1]
        m = w.max(axis=1)
        lb[t] = m + np.log(np.exp(w - m[:, None]).sum(axis=1))
        lb[t] -= lb[t].max()
    w = la + lb
    node = np.exp(w - w.max(axis=1, keepdims=True))
    return node / node.sum(axis=1, keepdims=True), None, None, None


# ------------------------------------------------------------------ loopy BP and TRW


def _enumerate(unary, edges, pairwise):
    n, S = unary.shape
    states = np.array(list(itertools.product(range(S), repeat=n)))
    score = unary[np.arange(n), states].sum(axis=1)
    for e, (u, v) in enumerate(edges):
        score = score + pairwise[e][states[:, u], states[:, v]]
    top = score.max()
    log_z = top + math.log(math.fsum(np.exp(score - top)))
    prob = np.exp(score - log_z)
    node = np.stack([np.bincount(states[:, i], weights=prob, minlength=S) for i in range(n)])
    return log_z, node, states[np.argmax(score)]


@pytest.mark.parametrize("scale", [1e3, 1e6])
@pytest.mark.parametrize("schedule", ["sequential", "parallel"])
def test_loopy_bp_on_a_tree_is_exact_at_large_magnitudes(scale, schedule):
    rng = np.random.default_rng(1)
    n, S = 9, 3
    parents = [rng.integers(0, i) for i in range(1, n)]
    edges = np.array([[p, i] for i, p in zip(range(1, n), parents)])
    # potentials of this magnitude that still leave real uncertainty: rounded to a grid of
    # `scale`, so that ties (and hence non-degenerate marginals) occur on purpose
    unary = rng.integers(-2, 3, size=(n, S)) * scale
    pairwise = rng.integers(-2, 3, size=(n - 1, S, S)) * scale
    log_z, node, _ = _enumerate(unary, edges, pairwise)
    for rho in (None, 1.0):
        res = loopy_bp(unary, edges, pairwise, rho=rho, schedule=schedule, free_energy=True, max_iter=50)
        assert res.converged
        np.testing.assert_allclose(res.node_marginals, node, atol=1e-9)
        assert abs(-res.free_energy - log_z) <= 1e-9 * abs(log_z)
        assert np.all(np.isfinite(res.edge_marginals))
    mp = loopy_bp(unary, edges, pairwise, mode="max", schedule=schedule)
    assert np.all(np.isfinite(mp.node_marginals))


def _grid(side):
    idx = np.arange(side * side).reshape(side, side)
    return np.concatenate([np.c_[idx[:, :-1].ravel(), idx[:, 1:].ravel()], np.c_[idx[:-1].ravel(), idx[1:].ravel()]])


@pytest.mark.parametrize("seed", [2, 3])
@pytest.mark.parametrize("scale", [1.0, 1e3, 1e6])
def test_trw_on_a_grid_is_finite_normalised_and_bounds_log_z(scale, seed):
    rng = np.random.default_rng(seed)
    edges = _grid(3)
    unary = rng.normal(size=(9, 2)) * scale
    pairwise = rng.normal(size=(len(edges), 2, 2)) * scale
    log_z, node, _ = _enumerate(unary, edges, pairwise)
    for method in ("uniform", "spanning_tree"):
        rho = trw_edge_probabilities(edges, 9, method=method)
        res = loopy_bp(unary, edges, pairwise, rho=rho, free_energy=True, max_iter=300, tol=1e-9)
        assert res.converged
        assert np.all(np.isfinite(res.node_marginals)) and np.all(np.isfinite(res.edge_marginals))
        np.testing.assert_allclose(res.node_marginals.sum(axis=1), 1.0, atol=1e-12)
        # the TRW free energy bounds log Z (Wainwright et al. 2005); at large magnitude the
        # bound is tight (zero-temperature limit) and the beliefs are the exact marginals
        assert -res.free_energy >= log_z - 1e-12 * max(1.0, abs(log_z))
        if scale > 1.0:
            assert -res.free_energy == pytest.approx(log_z, rel=1e-12)
            np.testing.assert_allclose(res.node_marginals, node, atol=1e-9)
        again = bethe_free_energy(unary, edges, pairwise, res.node_marginals, res.edge_marginals, rho=rho)
        assert again == pytest.approx(res.free_energy, rel=1e-12)


@pytest.mark.parametrize("scale", [3.0, 30.0])
@pytest.mark.parametrize("rho", [None, "uniform"])
def test_damped_bp_stops_at_the_undamped_fixed_point(scale, rho):
    # damping must not change the fixed point; BP used to stop at a half-damped message
    rng = np.random.default_rng(2)
    edges = _grid(3)
    unary = rng.normal(size=(9, 2)) * scale
    pairwise = rng.normal(size=(len(edges), 2, 2)) * scale
    if rho == "uniform":
        rho = trw_edge_probabilities(edges, 9)
    plain = loopy_bp(unary, edges, pairwise, rho=rho, free_energy=True, max_iter=1000, tol=1e-10)
    for damping in (0.5, 0.8):
        damped = loopy_bp(unary, edges, pairwise, rho=rho, free_energy=True, damping=damping, max_iter=2000,
                          tol=1e-10)
        assert plain.converged and damped.converged
        np.testing.assert_allclose(damped.node_marginals, plain.node_marginals, atol=1e-8)
        assert damped.free_energy == pytest.approx(plain.free_energy, rel=1e-9)
