"""The chain fit's lean structures (issue #33's memory diet) against the plain computations they replace."""

from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_struct._chain_crf import ChainData, ChainObjective, unpack_params
from sklearn_struct.crfsuite._features import AttributeVocabulary
from sklearn_struct.oracles.chain import expected_counts_inplace, forward_backward
from sklearn_struct.oracles.linear import LinearFeatures, all_pairs, observed_pairs
from sklearn_struct.utils.packing import csr_rows, pack_sequences, row_slice
from sklearn_struct.utils.validation import check_sequences


def _sparse_task(seed, n_seq=12, n_feat=15, n_labels=4, binary=True):
    rng = np.random.default_rng(seed)
    X = [sp.random(int(rng.integers(1, 9)), n_feat, density=0.3, format="csr", random_state=int(rng.integers(1 << 30)))
         for _ in range(n_seq)]
    if binary:
        for x in X:
            x.data[:] = 1.0
    y = [rng.integers(0, n_labels, size=x.shape[0]) for x in X]
    return X, y


def _reference_objective(X, y, n_labels, c2, theta, n_weights, pairs):
    """NLL + c2 ||.||^2 from the public forward-backward on the full score matrix (no shared buffers)."""
    packed, offsets = pack_sequences(X)
    features = LinearFeatures(packed, n_labels, pairs=pairs)
    w, b, A = unpack_params(theta, n_weights, n_labels)
    unary = features.scores(w, bias=b)
    log_z, node, edge = forward_backward(unary, A, offsets)
    labels = np.concatenate(y)
    onehot = np.eye(n_labels)[labels]
    starts = np.zeros(len(labels), dtype=bool)
    starts[offsets[:-1]] = True
    frm, to = labels[:-1][~starts[1:]], labels[1:][~starts[1:]]
    gold = unary[np.arange(len(labels)), labels].sum() + A[frm, to].sum()
    trans = np.zeros((n_labels, n_labels))
    np.add.at(trans, (frm, to), 1.0)
    grad = np.concatenate([features.gradient(node - onehot), (node - onehot).sum(axis=0), (edge - trans).ravel()])
    f = log_z.sum() - gold + c2 * (np.sum(theta[:n_weights] ** 2) + np.sum(theta[n_weights + n_labels:] ** 2))
    grad[:n_weights] += 2 * c2 * theta[:n_weights]
    grad[n_weights + n_labels:] += 2 * c2 * theta[n_weights + n_labels:]
    return f, grad


@pytest.mark.parametrize("scale", [0.0, 1.0, 3e3])  # 3e3: every sequence of length > 1 takes the log-space path
@pytest.mark.parametrize("n_chunks", [1, 3])
@pytest.mark.parametrize("binary", [True, False])
def test_objective_equals_the_unshared_computation(scale, n_chunks, binary):
    X, y = _sparse_task(0, binary=binary)
    objective = ChainObjective(X, y, 4, c2=0.3, n_chunks=n_chunks)
    theta = np.random.default_rng(1).normal(size=objective.n_params) * scale
    with mock.patch("sklearn_struct.oracles.chain.n_threads_for", lambda work: 2):  # two forward-backward chunks
        f, g = objective(theta)
    pairs = observed_pairs(*pack_sequences(X)[:1], np.concatenate(y), 4)
    f_ref, g_ref = _reference_objective(X, y, 4, 0.3, theta, objective.n_weights, pairs)
    assert f == pytest.approx(f_ref, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(g_ref).max()))


def test_log_space_runs_get_their_scores_back():
    """Sequences the scaled pass gives up on, alone and in runs, are redone from their rescored rows."""
    rng = np.random.default_rng(3)
    offsets = np.array([0, 3, 4, 9, 11, 12, 20])  # sequences 1 and 4 have no transition
    unary = rng.normal(size=(20, 3)) * 1e3
    trans = rng.normal(size=(3, 3)) * 1e3  # scaling constants far below 1e-100: log space
    shifted = unary - unary.max(axis=1, keepdims=True)
    probs = np.exp(shifted)
    asked = []

    def rescore(lo, hi):
        asked.append((lo, hi))
        return shifted[lo:hi]

    log_z, edge = expected_counts_inplace(probs, trans, offsets, rescore)
    ref_z, ref_node, ref_edge = forward_backward(shifted, trans, offsets)
    np.testing.assert_allclose(log_z, ref_z, rtol=1e-12)
    np.testing.assert_allclose(probs, ref_node, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(edge, ref_edge, rtol=1e-10, atol=1e-12)
    assert asked == [(0, 3), (4, 11), (12, 20)]  # sequence 0, the run of 2 and 3, and 5


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_labels=st.integers(1, 20), binary=st.booleans())
def test_label_counts_is_the_gradient_of_the_one_hot_labels(seed, n_labels, binary):
    rng = np.random.default_rng(seed)
    X = sp.random(25, 9, density=0.4, format="csr", random_state=seed)
    if binary:
        X.data[:] = 1.0
    y = rng.integers(0, n_labels, size=25)
    onehot = np.eye(n_labels)[y]
    for features in (LinearFeatures(X, n_labels, pairs=observed_pairs(X, y, n_labels)),
                     LinearFeatures(X, n_labels, pairs=all_pairs(9, n_labels)), LinearFeatures(X.toarray(), n_labels)):
        np.testing.assert_allclose(features.label_counts(y), features.gradient(onehot), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("dense", [False, True])
def test_row_scores_are_the_shifted_rows_of_scores(dense):
    X, _ = _sparse_task(5, n_labels=6, binary=False)
    packed, _ = pack_sequences(X)
    features = LinearFeatures(packed.toarray() if dense else packed, 6)
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=features.n_weights), rng.normal(size=6)
    full, shift = np.empty((packed.shape[0], 6)), np.empty(packed.shape[0])
    features.scores(w, bias=b, out=full, row_max=shift)
    np.testing.assert_allclose(features.row_scores(w, b, 3, 11), full[3:11], rtol=1e-14, atol=1e-14)


def test_observed_pairs_is_the_support_of_abs_x_times_one_hot():
    rng = np.random.default_rng(2)
    X = sp.random(40, 13, density=0.3, format="csr", random_state=2)
    X.data -= 0.5  # negative values and explicit zeros too
    X.data[::7] = 0.0
    y = rng.integers(0, 5, size=40)
    support = (abs(X).T @ sp.csr_matrix(np.eye(5)[y])).toarray() != 0
    pair_ptr, pair_label = observed_pairs(X, y, 5)
    np.testing.assert_array_equal(pair_ptr, np.concatenate([[0], np.cumsum(support.sum(axis=1))]))
    np.testing.assert_array_equal(pair_label, np.nonzero(support)[1])


def test_training_chunks_keep_only_int32_codes_and_one_buffer():
    X, y = _sparse_task(4)
    objective = ChainObjective(X, y, 4, c2=1.0)
    data = objective.chunks[0][0]
    assert data.packed is None  # the evaluation reads only the features' own arrays
    assert data.features._code.dtype == np.int32 and data.features._indptr.dtype == np.int32
    assert data.features._data is None  # binary features: no values kept
    objective(np.zeros(objective.n_params))
    node, shift = data.buffers(4)
    assert node.shape == (data.n_tokens, 4) and shift.shape == (data.n_tokens,)
    assert ChainData(X).packed is not None  # prediction and psi learning still read the packed rows


def test_row_slice_shares_the_whole_matrix_and_slices_rows():
    X, _ = _sparse_task(6, binary=False)
    packed, _ = pack_sequences(X)
    assert row_slice(packed, 0, packed.shape[0]) is packed
    np.testing.assert_array_equal(row_slice(packed, 4, 30).toarray(), packed[4:30].toarray())
    dense = packed.toarray()
    assert np.shares_memory(row_slice(dense, 2, 5), dense)


def test_vocabulary_rows_are_int32_csr_with_summed_duplicates():
    X = [[{"w": "a", "x": 1.5}, {"w": "b", "n": {"k": 2.0}}], [["a", "a"], {}]]
    rows, offsets = AttributeVocabulary().fit_transform(X)
    assert rows.indices.dtype == np.int32 and rows.has_canonical_format
    np.testing.assert_array_equal(offsets, [0, 2, 4])
    np.testing.assert_array_equal(rows.toarray(), [[1, 1.5, 0, 0, 0], [0, 0, 1, 2, 0], [0, 0, 0, 0, 2], [0] * 5])


def test_csr_rows_are_views_that_pack_back_without_a_copy():
    X, _ = _sparse_task(7, n_seq=20, binary=False)
    packed, offsets = pack_sequences(X)
    packed.sort_indices()
    parts = csr_rows(packed, offsets)
    for part, x in zip(parts, X):
        assert np.shares_memory(part.data, packed.data)
        np.testing.assert_array_equal(part.toarray(), x.toarray())
    again, again_offsets = pack_sequences(check_sequences(parts))  # as a fit validates and packs them
    assert np.shares_memory(again.data, packed.data) and np.shares_memory(again.indices, packed.indices)
    np.testing.assert_array_equal(again.toarray(), packed.toarray())
    np.testing.assert_array_equal(again_offsets, offsets)
    for other in (parts[::-1], parts + parts, parts[:5] + parts[6:]):  # not one after the other: copied
        copy, _ = pack_sequences(other)
        assert not np.shares_memory(copy.data, packed.data)
        np.testing.assert_array_equal(copy.toarray(), sp.vstack(other).toarray())


def test_unsorted_views_are_copied_so_the_callers_arrays_stay_as_they_are():
    packed = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 1], dtype=np.int32),
                            np.array([0, 2, 3], dtype=np.int32)), shape=(2, 3))
    before = packed.indices.copy()
    parts = csr_rows(packed, [0, 1, 2])
    objective = ChainObjective(parts, [np.array([0]), np.array([1])], 2, c2=1.0)
    assert not np.shares_memory(pack_sequences(parts)[0].indices, packed.indices)
    np.testing.assert_array_equal(packed.indices, before)
    assert objective.n_weights == 3


def test_observed_pairs_of_dense_features():
    X = np.array([[1.0, 0.0, -2.0], [0.0, 0.0, 3.0]])
    np.testing.assert_array_equal(observed_pairs(X, np.array([1, 0]), 2)[1], [1, 0, 1])
    np.testing.assert_array_equal(observed_pairs(X, np.array([1, 0]), 2)[0], [0, 1, 1, 3])
