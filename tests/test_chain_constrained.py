"""Constrained chain oracles (masks, k-best Viterbi, path scores) against brute-force enumeration."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_struct.oracles.chain_constrained import (
    chain_scores, constrained_forward_backward, constrained_viterbi, kbest_viterbi)
from sklearn_struct.utils import edge_offsets


def _enumerate(unary, trans, offsets, per_position, allowed=None, transitions=None, start=None, end=None):
    """Per chain: every allowed path, its score, log Z, node and edge marginals over the allowed paths."""
    eoffs = edge_offsets(offsets)
    L = unary.shape[1]
    out = []
    for s in range(len(offsets) - 1):
        lo, hi = offsets[s], offsets[s + 1]
        n = hi - lo
        paths = np.array(list(itertools.product(range(L), repeat=n)))
        ok = np.ones(len(paths), dtype=bool)
        if allowed is not None:
            ok &= allowed[lo + np.arange(n), paths].all(axis=1)
        if start is not None:
            ok &= start[paths[:, 0]]
        if end is not None:
            ok &= end[paths[:, -1]]
        scores = unary[lo + np.arange(n), paths].sum(axis=1)
        for t in range(1, n):
            table = trans[eoffs[s] + t - 1] if per_position else trans
            scores = scores + table[paths[:, t - 1], paths[:, t]]
            if transitions is not None:
                ok &= transitions[paths[:, t - 1], paths[:, t]]
        paths, scores = paths[ok], scores[ok]
        if not len(paths):
            out.append((paths, scores, -np.inf, None, None))
            continue
        top = scores.max()
        log_z = top + np.log(np.exp(scores - top).sum())
        prob = np.exp(scores - log_z)
        node = np.zeros((n, L))
        edge = np.zeros((max(n - 1, 0), L, L))
        for t in range(n):
            np.add.at(node[t], paths[:, t], prob)
        for t in range(1, n):
            np.add.at(edge[t - 1], (paths[:, t - 1], paths[:, t]), prob)
        out.append((paths, scores, log_z, node, edge))
    return out


@st.composite
def _problems(draw):
    L = draw(st.integers(1, 3))
    lengths = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = offsets[-1]
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.RandomState(seed)
    scale = draw(st.sampled_from([1.0, 5.0, 300.0]))
    unary = rng.randn(n, L) * scale
    per_position = draw(st.booleans())
    trans = rng.randn(n - len(lengths), L, L) * scale if per_position else rng.randn(L, L) * scale
    masks = {}
    if draw(st.booleans()):
        masks["allowed"] = rng.rand(n, L) < 0.7
    if draw(st.booleans()):
        masks["transitions"] = rng.rand(L, L) < 0.7
    if draw(st.booleans()):
        masks["start"] = rng.rand(L) < 0.7
    if draw(st.booleans()):
        masks["end"] = rng.rand(L) < 0.7
    return unary, trans, offsets, per_position, masks


def _feasible(brute):
    return all(len(b[0]) for b in brute)


@settings(max_examples=150, deadline=None)
@given(_problems())
def test_constrained_forward_backward_matches_enumeration(problem):
    unary, trans, offsets, per_position, masks = problem
    brute = _enumerate(unary, trans, offsets, per_position, **masks)
    if not _feasible(brute):
        with pytest.raises(ValueError, match="no label sequence"):
            constrained_forward_backward(unary, trans, offsets, **masks)
        return
    log_z, node, edge = constrained_forward_backward(unary, trans, offsets, edge_marginals="per_position", **masks)
    eoffs = edge_offsets(offsets)
    for s, (_, _, bz, bnode, bedge) in enumerate(brute):
        assert np.isclose(log_z[s], bz, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(node[offsets[s]:offsets[s + 1]], bnode, atol=1e-9)
        np.testing.assert_allclose(edge[eoffs[s]:eoffs[s + 1]], bedge, atol=1e-9)


@settings(max_examples=150, deadline=None)
@given(_problems(), st.integers(1, 30))
def test_kbest_viterbi_is_top_k_of_enumeration(problem, k):
    unary, trans, offsets, per_position, masks = problem
    brute = _enumerate(unary, trans, offsets, per_position, **masks)
    if not _feasible(brute):
        return
    from sklearn_struct.oracles.chain_constrained import constrain_potentials
    cu, ct = constrain_potentials(unary, trans, offsets, **masks)
    labels, scores = kbest_viterbi(cu, ct, offsets, k)
    for s, (paths, bscores, *_rest) in enumerate(brute):
        lo, hi = offsets[s], offsets[s + 1]
        expected = np.sort(bscores)[::-1][:k]
        m = len(expected)
        np.testing.assert_allclose(scores[s, :m], expected, rtol=1e-9, atol=1e-7 * max(1, abs(expected).max()))
        assert np.all(scores[s, m:] == -np.inf) and np.all(labels[m:, lo:hi] == -1)
        got = [tuple(labels[r, lo:hi]) for r in range(m)]
        assert len(set(got)) == m  # distinct paths
        index = {tuple(p): v for p, v in zip(paths, bscores)}
        for r, path in enumerate(got):  # each is an allowed path with the score claimed
            assert path in index
            assert np.isclose(index[path], scores[s, r], rtol=1e-9, atol=1e-7 * max(1, abs(expected).max()))


@settings(max_examples=100, deadline=None)
@given(_problems())
def test_constrained_viterbi_and_chain_scores(problem):
    unary, trans, offsets, per_position, masks = problem
    brute = _enumerate(unary, trans, offsets, per_position, **masks)
    if not _feasible(brute):
        return
    labels, scores = constrained_viterbi(unary, trans, offsets, **masks)
    own = chain_scores(unary, trans, offsets, labels)
    for s, (_, bscores, *_rest) in enumerate(brute):
        tol = 1e-9 * max(1, abs(bscores).max())
        assert np.isclose(scores[s], bscores.max(), atol=tol)
        assert np.isclose(own[s], bscores.max(), atol=tol)


def test_kbest_first_is_viterbi_and_log_probs_sum_to_one():
    rng = np.random.RandomState(0)
    unary, trans, offsets = rng.randn(7, 3), rng.randn(3, 3), np.array([0, 3, 7])
    labels, scores = kbest_viterbi(unary, trans, offsets, 3**4)
    best, _ = constrained_viterbi(unary, trans, offsets)
    np.testing.assert_array_equal(labels[0], best)
    log_z, _, _ = constrained_forward_backward(unary, trans, offsets, edge_marginals="none")
    finite = np.isfinite(scores)
    assert np.allclose([np.exp(scores[s][finite[s]] - log_z[s]).sum() for s in range(2)], 1.0)


def test_bad_arguments_are_named():
    unary, trans, offsets = np.zeros((2, 2)), np.zeros((2, 2)), np.array([0, 2])
    with pytest.raises(ValueError, match="k must be"):
        kbest_viterbi(unary, trans, offsets, 0)
    with pytest.raises(ValueError, match="allowed must be a boolean"):
        constrained_viterbi(unary, trans, offsets, allowed=np.ones((2, 3), bool))
    with pytest.raises(ValueError, match="labels must lie"):
        chain_scores(unary, trans, offsets, np.array([0, 2]))
