"""Defects the round-three fuzz sections (tests/_fuzz_probe_round3.py) found, each pinned by a direct test."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_struct.crfsuite import CRF
from sklearn_struct.datasets import load_umass_citations, make_multilabel_pairwise
from sklearn_struct.oracles.linear import frequent_pairs
from sklearn_struct.oracles.matching import assignment


def test_crfsuite_unhashable_label_is_named():
    X = [[{"a": 1.0}, {"b": 1.0}]]
    with pytest.raises(ValueError, match=r"y, sequence 0, token 0: label \['x'\] is not hashable"):
        CRF(max_iterations=3).fit(X, [[["x"], "y"]])


def test_umass_subset_of_the_wrong_type_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"subset must be one of .*got \['train'\]"):
        load_umass_citations(subset=["train"], data_home=tmp_path)


def test_matcher_refuses_scores_that_overflowed():
    from sklearn_struct import MLEStructMatcher
    from sklearn_struct.datasets import make_matchings

    G, perms = make_matchings(n_samples=4, n_nodes=4, n_features=2, random_state=0)[:2]
    huge = [np.full_like(G[0], 1e308)] + list(G[1:])
    with pytest.raises(ValueError, match="matching scores are not finite .* rescale the pair features X"):
        MLEStructMatcher(max_iter=3).fit(huge, perms)
    assert assignment(np.array([[0.0, 1.0], [1.0, 0.0]])).tolist() == [0, 1]


def test_dlpw_divergence_names_c():
    from sklearn_struct import DLPWClassifier

    X, Y = make_multilabel_pairwise(n_samples=30, n_features=4, n_labels=3, random_state=0)[:2]
    with pytest.raises(ValueError, match=r"C=1e\+300\): the features or C overflow"):
        DLPWClassifier(C=1e300, max_epochs=3, tol=1e-2).fit(X, Y)


def test_frequent_pairs_reads_x_as_observed_pairs_does():
    X, y = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]), np.array([0, 1, 0])
    expected = frequent_pairs(sp.csr_matrix(X), y, 2, 1)
    got = frequent_pairs(X.astype(str), y, 2, 1)  # numeric strings, accepted by observed_pairs
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
