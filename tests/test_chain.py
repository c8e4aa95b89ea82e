"""Chain oracle against brute-force enumeration on small random chains."""

import itertools
from unittest import mock

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sklearn_struct.oracles.chain import forward_backward, sample_chain, viterbi
from sklearn_struct.utils import edge_offsets, lengths_to_offsets


def _brute_force(unary, trans, offsets, per_position):
    """log Z, node and per-position edge marginals and the argmax of each chain, by enumeration."""
    results = []
    eoffs = edge_offsets(offsets)
    L = unary.shape[1]
    for s in range(len(offsets) - 1):
        lo, hi, elo = offsets[s], offsets[s + 1], eoffs[s]
        n = hi - lo
        paths = np.array(list(itertools.product(range(L), repeat=n)))
        scores = unary[lo + np.arange(n), paths].sum(axis=1)
        for t in range(1, n):
            table = trans[elo + t - 1] if per_position else trans
            scores = scores + table[paths[:, t - 1], paths[:, t]]
        top = scores.max()
        log_z = top + np.log(np.exp(scores - top).sum())
        prob = np.exp(scores - log_z)
        node = np.zeros((n, L))
        edge = np.zeros((n - 1, L, L))
        for t in range(n):
            np.add.at(node[t], paths[:, t], prob)
        for t in range(1, n):
            np.add.at(edge[t - 1], (paths[:, t - 1], paths[:, t]), prob)
        results.append((log_z, node, edge, paths[np.argmax(scores)]))
    return results


@st.composite
def chains(draw, magnitude=st.sampled_from([1.0, 5.0])):
    n_seq = draw(st.integers(1, 4))
    lengths = draw(st.lists(st.integers(1, 6), min_size=n_seq, max_size=n_seq))
    L = draw(st.integers(1, 4))
    per_position = draw(st.booleans())
    seed = draw(st.integers(0, 2**31 - 1))
    scale = draw(magnitude)
    rng = np.random.default_rng(seed)
    offsets = lengths_to_offsets(lengths)
    n_tok = int(offsets[-1])
    unary = rng.normal(size=(n_tok, L)) * scale
    shape = (n_tok - n_seq, L, L) if per_position else (L, L)
    trans = rng.normal(size=shape) * scale
    return unary, trans, offsets, per_position


def _check_against_brute_force(unary, trans, offsets, per_position, atol):
    log_z, node, edge = forward_backward(unary, trans, offsets, edge_marginals="per_position")
    log_z_sum, node_sum, edge_sum = forward_backward(unary, trans, offsets, edge_marginals="sum")
    labels, scores = viterbi(unary, trans, offsets)
    eoffs = edge_offsets(offsets)
    expected_sum = 0.0
    for s, (bz, bnode, bedge, bpath) in enumerate(_brute_force(unary, trans, offsets, per_position)):
        lo, hi = offsets[s], offsets[s + 1]
        assert abs(log_z[s] - bz) <= atol * max(1.0, abs(bz))
        np.testing.assert_allclose(node[lo:hi], bnode, atol=atol)
        np.testing.assert_allclose(edge[eoffs[s] : eoffs[s + 1]], bedge, atol=atol)
        np.testing.assert_array_equal(labels[lo:hi], bpath)
        expected_sum = expected_sum + bedge.sum(axis=0)
    np.testing.assert_allclose(log_z_sum, log_z, rtol=1e-12)
    np.testing.assert_allclose(node_sum, node, atol=1e-12)
    np.testing.assert_allclose(edge_sum, expected_sum, atol=atol * len(offsets))


@settings(max_examples=150, deadline=None)
@given(chains())
def test_forward_backward_and_viterbi_match_enumeration(problem):
    _check_against_brute_force(*problem, atol=1e-8)


@settings(max_examples=40, deadline=None)
@given(chains(magnitude=st.just(1e3)))
def test_potentials_of_magnitude_1e3_stay_exact(problem):
    unary, trans, offsets, per_position = problem
    log_z, node, edge = forward_backward(unary, trans, offsets)
    assert np.all(np.isfinite(log_z)) and np.all(np.isfinite(node)) and np.all(np.isfinite(edge))
    # relative tolerance: log Z is ~1e3 * length here, enumeration itself loses ~1e-13 relative
    _check_against_brute_force(unary, trans, offsets, per_position, atol=1e-8)


@settings(max_examples=60, deadline=None)
@given(chains(magnitude=st.sampled_from([1.0, 1e3])))
def test_chunks_on_several_threads_match_enumeration(problem):
    # large inputs are split into chunks of sequences run on threads (each with its own edge
    # counts and log-space redo); force that on these small ones
    with mock.patch("sklearn_struct.oracles.chain.n_threads_for", lambda work: 3):
        _check_against_brute_force(*problem, atol=1e-8)


def test_huge_potentials_take_the_log_space_path_correctly():
    # scaled recursion would flush exp(-2000) to 0 at every step; the result must still be exact
    unary = np.array([[2000.0, 0.0], [0.0, 2000.0], [2000.0, 0.0]])
    trans = np.array([[0.0, -2000.0], [-2000.0, 0.0]])
    log_z, node, edge = forward_backward(unary, trans, np.array([0, 3]))
    (bz, bnode, bedge, _), = _brute_force(unary, trans, np.array([0, 3]), False)
    assert np.isclose(log_z[0], bz, rtol=1e-14)
    np.testing.assert_allclose(node, bnode, atol=1e-12)
    np.testing.assert_allclose(edge, bedge.sum(0), atol=1e-12)


def test_forbidden_transitions_and_infeasible_sequence():
    unary = np.zeros((2, 2))
    trans = np.array([[-np.inf, 0.0], [0.0, -np.inf]])  # labels must alternate
    log_z, node, edge = forward_backward(unary, trans, np.array([0, 2]))
    assert np.isclose(log_z[0], np.log(2))
    np.testing.assert_allclose(edge, [[0, 0.5], [0.5, 0]])
    with pytest.raises(ValueError, match="Sequence 1 has no label sequence"):
        forward_backward(np.array([[0.0], [0.0], [0.0]]), np.array([[-np.inf]]), np.array([0, 1, 3]))


def test_length_one_sequences_only():
    unary = np.log(np.array([[1.0, 3.0], [2.0, 2.0]]))
    log_z, node, edge = forward_backward(unary, np.zeros((0, 2, 2)), np.array([0, 1, 2]))
    np.testing.assert_allclose(log_z, np.log([4.0, 4.0]))
    np.testing.assert_allclose(node, [[0.25, 0.75], [0.5, 0.5]])
    assert edge.shape == (2, 2) and np.all(edge == 0)
    np.testing.assert_array_equal(viterbi(unary, np.zeros((2, 2)), np.array([0, 1, 2]))[0], [1, 0])


def test_sampling_matches_marginals_and_is_reproducible():
    rng = np.random.default_rng(3)
    offsets = lengths_to_offsets([4] * 4000)
    unary = np.tile(rng.normal(size=(4, 3)), (4000, 1))
    trans = rng.normal(size=(3, 3))
    draw = sample_chain(unary, trans, offsets, random_state=0)
    np.testing.assert_array_equal(draw, sample_chain(unary, trans, offsets, random_state=0))
    _, node, _ = forward_backward(unary[:4], trans, offsets[:2])
    freq = np.stack([np.bincount(draw[t::4], minlength=3) / 4000 for t in range(4)])
    np.testing.assert_allclose(freq, node, atol=0.03)  # ~4 standard errors


def test_many_samples_match_pair_marginals_from_one_forward_pass():
    """``n_samples`` draws share one forward pass: each row is an exact draw (edge frequencies match
    the edge marginals), rows differ, and one row is the single draw of the same seed."""
    rng = np.random.default_rng(4)
    offsets = lengths_to_offsets([5, 3])
    unary, trans = rng.normal(size=(8, 3)), rng.normal(size=(3, 3))
    draws = sample_chain(unary, trans, offsets, random_state=1, n_samples=6000)
    assert draws.shape == (6000, 8)
    np.testing.assert_array_equal(draws[0], sample_chain(unary, trans, offsets[:], random_state=1, n_samples=1)[0])
    np.testing.assert_array_equal(sample_chain(unary, trans, offsets, random_state=2),
                                  sample_chain(unary, trans, offsets, random_state=2, n_samples=1)[0])
    _, _, edge = forward_backward(unary, trans, offsets, edge_marginals="per_position")
    for e, (t0, t1) in enumerate([(0, 1), (1, 2), (2, 3), (3, 4), (5, 6), (6, 7)]):
        freq = np.zeros((3, 3))
        np.add.at(freq, (draws[:, t0], draws[:, t1]), 1.0 / 6000)
        np.testing.assert_allclose(freq, edge[e], atol=0.025)  # ~4 standard errors
    with pytest.raises(ValueError, match="n_samples must be a positive integer"):
        sample_chain(unary, trans, offsets, n_samples=0)


@pytest.mark.parametrize(
    "unary, trans, offsets, match",
    [
        (np.zeros((3, 2)), np.zeros((3, 3)), [0, 3], "transition must have shape"),
        (np.zeros((3, 2)), np.zeros((5, 2, 2)), [0, 3], "per-position transitions"),
        (np.zeros((3, 2)), np.zeros((2, 2)), [0, 2], "end at n_tokens=3"),
        (np.zeros((3, 2)), np.zeros((2, 2)), [0, 3, 3], "Sequence 1 is empty"),
        (np.array([[0.0, 0], [np.nan, 0], [0, 0]]), np.zeros((2, 2)), [0, 1, 3], "Sequence 1: unary"),
        (np.zeros((3, 2)), np.full((2, 2), np.nan), [0, 3], "NaN"),
        (np.zeros(3), np.zeros((2, 2)), [0, 3], "unary must be 2D"),
    ],
)
def test_bad_input_raises_clear_errors(unary, trans, offsets, match):
    with pytest.raises(ValueError, match=match):
        forward_backward(unary, trans, np.asarray(offsets))
    with pytest.raises(ValueError, match=match):
        viterbi(unary, trans, np.asarray(offsets))


def test_bad_edge_mode():
    with pytest.raises(ValueError, match="edge_marginals must be one of"):
        forward_backward(np.zeros((2, 2)), np.zeros((2, 2)), np.array([0, 2]), edge_marginals="all")


def test_make_chain_data_is_seeded_and_validates():
    from sklearn_struct.datasets import make_chain_data

    X1, y1 = make_chain_data(5, random_state=3)
    X2, y2 = make_chain_data(5, random_state=3)
    X3, _ = make_chain_data(5, random_state=4)
    assert all(np.array_equal(a, b) for a, b in zip(X1, X2)) and all(np.array_equal(a, b) for a, b in zip(y1, y2))
    assert not all(a.shape == b.shape and np.allclose(a, b) for a, b in zip(X1, X3))
    for kwargs, match in [
        ({"n_labels": 0}, "n_labels must be an integer >= 1"),
        ({"min_length": 5, "max_length": 2}, "max_length=2 must be >= min_length=5"),
        ({"transition_scale": -1.0}, "transition_scale must be a finite number"),
        ({"unary_scale": np.nan}, "unary_scale must be a finite number"),
    ]:
        with pytest.raises(ValueError, match=match):
            make_chain_data(3, **kwargs)


@settings(max_examples=60, deadline=None)
@given(chains(magnitude=st.sampled_from([1.0, 5.0, 1e3])))
def test_expected_counts_is_forward_backward_on_shifted_rows(problem):
    # the training path: pre-exponentiated, max-shifted rows (1e3 takes the log-space redo)
    from sklearn_struct.oracles.chain import expected_counts

    unary, trans, offsets, per_position = problem
    assume(not per_position)
    log_z, node, edge = forward_backward(unary, trans, offsets, edge_marginals="sum")
    shift = unary.max(axis=1)
    shifted = unary - shift[:, None]
    lz, node2, edge2 = expected_counts(shifted, np.exp(shifted), trans, offsets, np.empty_like(unary))
    per_seq = np.add.reduceat(shift, offsets[:-1])
    np.testing.assert_allclose(lz + per_seq, log_z, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(node2, node, atol=1e-10)
    np.testing.assert_allclose(edge2, edge, atol=1e-9)
