"""Validation, packing, joblib helper and the L-BFGS optimiser."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from joblib import parallel_backend
from scipy.optimize import rosen, rosen_der

from sklearn_struct.utils import (
    check_sequence_labels,
    check_sequences,
    edge_offsets,
    even_chunks,
    lengths_to_offsets,
    pack_sequences,
    run_chunks,
    unpack_sequences,
)
from sklearn_struct.utils.optimize import lbfgs


def test_check_sequences_accepts_dense_sparse_and_3d():
    X = [np.ones((2, 3)), sp.csr_matrix(np.ones((1, 3))), [[1, 2, 3]]]
    out = check_sequences(X)
    assert [x.shape for x in out] == [(2, 3), (1, 3), (1, 3)]
    assert sp.issparse(out[1]) and out[0].dtype == np.float64
    assert len(check_sequences(np.zeros((4, 2, 3)))) == 4  # equal-length batch as one 3D array


@pytest.mark.parametrize(
    "X, y, match",
    [
        ([], None, "X is empty"),
        ("abc", None, "got a string"),
        (np.zeros((3, 2)), None, "got a single 2D array"),
        (5, None, "must be a list of sequences"),
        ([np.zeros((2, 2)), np.zeros((0, 2))], None, "Sequence 1 is empty"),
        ([np.zeros((2, 2)), np.zeros(2)], None, "Sequence 1: expected a 2D array"),
        ([np.zeros((2, 2)), np.array([[np.inf, 0.0]])], None, "Sequence 1: features contain infinity"),
        ([np.zeros((2, 2)), sp.csr_matrix(np.array([[np.nan, 0.0]]))], None, "Sequence 1: features contain NaN"),
        ([np.zeros((2, 2)), np.array([["a", "b"]])], None, "Sequence 1: features are not numeric"),
        ([np.zeros((2, 2)), np.zeros((2, 3))], None, "Sequence 1 has 3 features, but 2 are expected"),
        ([np.zeros((2, 2))], [[0, 1], [1]], "inconsistent numbers of sequences"),
        ([np.zeros((2, 2))], [[0]], "Sequence 0: 2 tokens in X but 1 labels"),
        ([np.zeros((2, 2))], [[[0, 1]]], "Sequence 0: labels must be 1D"),
        ([np.zeros((1, 2))], [[np.nan]], "Sequence 0: labels contain NaN"),
    ],
)
def test_check_sequences_errors_name_the_sequence(X, y, match):
    with pytest.raises(ValueError, match=match):
        check_sequences(X, y)


def test_sparse_rejected_when_not_accepted_and_fixed_width():
    with pytest.raises(ValueError, match="Sequence 0: sparse input is not supported"):
        check_sequences([sp.csr_matrix(np.ones((1, 2)))], accept_sparse=False)
    with pytest.raises(ValueError, match="as seen during fit"):
        check_sequences([np.ones((1, 2))], n_features=3)


def test_string_labels_as_character_sequences():
    (labels,) = check_sequence_labels(["abc"], lengths=[3])
    np.testing.assert_array_equal(labels, ["a", "b", "c"])


def test_pack_unpack_round_trip_dense_and_sparse():
    X = [np.arange(6.0).reshape(3, 2), np.ones((1, 2))]
    packed, offsets = pack_sequences(X)
    np.testing.assert_array_equal(offsets, [0, 3, 4])
    for a, b in zip(unpack_sequences(packed, offsets), X):
        np.testing.assert_array_equal(a, b)
    packed_sp, _ = pack_sequences([sp.csr_matrix(x) for x in X])
    assert sp.issparse(packed_sp)
    np.testing.assert_array_equal(packed_sp.toarray(), packed)
    np.testing.assert_array_equal(edge_offsets(offsets), [0, 2, 2])
    np.testing.assert_array_equal(lengths_to_offsets([]), [0])


def test_even_chunks_cover_everything_once():
    for n in range(0, 12):
        for k in range(1, 6):
            covered = np.concatenate([np.arange(n)[sl] for sl in even_chunks(n, k)] or [np.array([], int)])
            np.testing.assert_array_equal(covered, np.arange(n))


def test_run_chunks_follows_the_active_backend():
    assert run_chunks(lambda v: v * 2, [1, 2, 3]) == [2, 4, 6]
    assert run_chunks(lambda v: v * 2, [1, 2, 3], n_jobs=2) == [2, 4, 6]
    with parallel_backend("threading", n_jobs=2):
        assert run_chunks(lambda v: v + 1, range(5)) == [1, 2, 3, 4, 5]


def test_lbfgs_minimises_rosenbrock_and_respects_max_iter():
    res = lbfgs(lambda x: (rosen(x), rosen_der(x)), np.full(6, -1.0), max_iter=500, tol=0)
    np.testing.assert_allclose(res.x, 1.0, atol=1e-5)
    short = lbfgs(lambda x: (rosen(x), rosen_der(x)), np.full(6, -1.0), max_iter=3, tol=0)
    assert short.nit == 3 and not short.success


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 30), m=st.integers(0, 6), memory=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_lbfgs_direction_matches_textbook_two_loop(n, m, memory, seed):
    from sklearn_struct.utils.optimize import _lbfgs_direction

    m = min(m, memory)
    rng = np.random.RandomState(seed)
    S, Y = rng.normal(size=(memory, n)), rng.normal(size=(memory, n))
    Y[:] += 3 * S  # keep s.y > 0 as stored pairs have
    rho = 1.0 / np.einsum("ij,ij->i", S, Y)
    order = rng.permutation(memory)[:m]  # ring-buffer rows, oldest first
    g = rng.normal(size=n)
    # textbook form (Nocedal & Wright, Algorithm 7.4), on explicit copies
    q, alphas = g.copy(), []
    for r in order[::-1]:
        alphas.append(rho[r] * S[r] @ q)
        q -= alphas[-1] * Y[r]
    if m:
        q *= (S[order[-1]] @ Y[order[-1]]) / (Y[order[-1]] @ Y[order[-1]])
    for r, a in zip(order, alphas[::-1]):
        q += (a - rho[r] * Y[r] @ q) * S[r]
    out = _lbfgs_direction(g, S, Y, rho, order.astype(np.int64), np.empty(n))
    np.testing.assert_allclose(out, -q, rtol=1e-9, atol=1e-12)


def test_lbfgs_recovers_from_non_finite_trial_points():
    # exp blows up for a long first step; the line search must back off, not return inf
    fun = lambda x: (float(np.sum(np.exp(x) - 2 * x)), np.exp(x) - 2)  # noqa: E731
    res = lbfgs(fun, np.full(3, 50.0), max_iter=200, tol=0, gtol=1e-9)
    np.testing.assert_allclose(res.x, np.log(2), atol=1e-6)


def test_encode_sequence_labels_in_one_call_and_unseen_labels():
    from sklearn.preprocessing import LabelEncoder

    from sklearn_struct.utils.validation import encode_sequence_labels

    enc = LabelEncoder().fit(["B", "I", "O"])
    codes = encode_sequence_labels(enc, [np.array(["O", "B"]), np.array(["I"])])
    assert [c.tolist() for c in codes] == [[2, 0], [1]]
    with pytest.raises(ValueError, match="Sequence 1: label 'X' was not seen during fit"):
        encode_sequence_labels(enc, [np.array(["O"]), np.array(["B", "X"])])
