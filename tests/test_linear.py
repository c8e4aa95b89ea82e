"""Feature-weight kernels against plain scipy products, for every attribute/label support."""

from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_struct.oracles.linear import LinearFeatures, all_pairs, frequent_pairs, observed_pairs


@settings(max_examples=60, deadline=None)
@given(
    n_rows=st.integers(1, 30),
    n_feat=st.integers(1, 12),
    n_labels=st.integers(1, 9),
    density=st.floats(0.05, 1.0),
    seed=st.integers(0, 2**31 - 1),
)
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_scores_and_gradient_match_scipy(n_rows, n_feat, n_labels, density, seed, binary, n_threads):
    # n_threads 3: the rows are split into chunks on threads, as for large inputs
    with mock.patch("sklearn_struct.oracles.linear.n_threads_for", lambda work: n_threads):
        _check_scores_and_gradient(n_rows, n_feat, n_labels, density, seed, binary)


def _check_scores_and_gradient(n_rows, n_feat, n_labels, density, seed, binary):
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, n_feat, density=density, format="csr", random_state=seed)
    if binary:  # indicator features take the kernels' value-free path
        X.data[:] = 1.0
    y = rng.integers(0, n_labels, size=n_rows)
    for pairs in (observed_pairs(X, y, n_labels), all_pairs(n_feat, n_labels), None):
        lf = LinearFeatures(X, n_labels, pairs=pairs)
        w = rng.normal(size=lf.n_weights)
        W = lf.dense_coef(w)
        bias = rng.normal(size=n_labels)
        expected = X @ W + bias
        np.testing.assert_allclose(lf.scores(w, bias=bias), expected, atol=1e-12)
        row_max = np.empty(n_rows)  # shifted rows: maximum 0, the shift returned
        shifted = lf.scores(w, bias=bias, row_max=row_max)
        np.testing.assert_allclose(row_max, expected.max(axis=1), atol=1e-12)
        np.testing.assert_allclose(shifted, expected - expected.max(axis=1, keepdims=True), atol=1e-12)
        D = rng.normal(size=(n_rows, n_labels))
        full = X.T @ D  # gradient w.r.t. every (attribute, label) weight
        ptr, lab = lf.pairs
        rows = np.repeat(np.arange(n_feat), np.diff(ptr))
        np.testing.assert_allclose(lf.gradient(D), full[rows, lab], atol=1e-12)


def test_dense_input_uses_blas_and_every_pair():
    X = np.arange(6.0).reshape(3, 2)
    lf = LinearFeatures(X, 2)
    w = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(lf.scores(w), X @ w.reshape(2, 2))
    row_max = np.empty(3)
    shifted = lf.scores(w, row_max=row_max)
    np.testing.assert_allclose(shifted + row_max[:, None], X @ w.reshape(2, 2))
    np.testing.assert_allclose(shifted.max(axis=1), 0.0)
    np.testing.assert_allclose(lf.gradient(np.ones((3, 2))), (X.T @ np.ones((3, 2))).ravel())


def test_observed_pairs_are_the_support():
    X = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]))
    ptr, lab = observed_pairs(X, np.array([0, 1, 1]), 2)
    np.testing.assert_array_equal(ptr, [0, 2, 3])
    np.testing.assert_array_equal(lab, [0, 1, 1])


def test_scores_reject_buffers_of_the_wrong_shape():
    lf = LinearFeatures(sp.csr_matrix(np.eye(3)), 2)
    w = np.zeros(lf.n_weights)
    with pytest.raises(ValueError, match="row_max must be a C-contiguous float64 array of shape \\(3,\\)"):
        lf.scores(w, row_max=np.empty(2))
    with pytest.raises(ValueError, match="bias must have shape \\(2,\\)"):
        lf.scores(w, bias=np.zeros(3))
    with pytest.raises(ValueError, match="out must be"):
        lf.scores(w, out=np.empty((2, 2)))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), min_freq=st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0]),
       all_possible=st.booleans())
def test_frequent_pairs_is_crfsuites_minfreq_rule(seed, min_freq, all_possible):
    """Against counting token by token: candidates are the seen pairs (plus every pair at frequency 0
    with all_possible), kept when their summed value is >= min_freq."""
    rng = np.random.default_rng(seed)
    n_tok, n_feat, n_labels = 12, 5, 3
    dense = rng.choice([0.0, 0.0, 1.0, -1.0, 2.0], size=(n_tok, n_feat))
    y = rng.integers(0, n_labels, n_tok)
    freq, seen = {}, set()
    for t in range(n_tok):
        for a in np.flatnonzero(dense[t]):
            freq[a, y[t]] = freq.get((a, y[t]), 0.0) + dense[t, a]
            seen.add((a, y[t]))
    candidates = {(a, k) for a in range(n_feat) for k in range(n_labels)} if all_possible else seen
    expected = {p for p in candidates if freq.get(p, 0.0) >= min_freq}
    ptr, lab = frequent_pairs(sp.csr_matrix(dense), y, n_labels, min_freq, all_possible)
    assert {(a, k) for a in range(n_feat) for k in lab[ptr[a]:ptr[a + 1]]} == expected
    assert all(np.all(np.diff(lab[ptr[a]:ptr[a + 1]]) > 0) for a in range(n_feat))  # sorted labels per attribute
