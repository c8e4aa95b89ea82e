"""Sparse label graphs of DLPWClassifier: mutual information, Chow-Liu tree, top-k pairs."""

from itertools import combinations

import numpy as np
import pytest
from sklearn.metrics import mutual_info_score

from sklearn_struct import DLPWClassifier
from sklearn_struct._dlpw_graph import chow_liu_edges, label_mutual_information, top_k_edges
from sklearn_struct.dlpw import AUTO_COMPLETE_MAX_LABELS
from sklearn_struct.datasets import make_multilabel_pairwise


def _random_labels(rng, n, L, S=2):
    """Correlated labels: each column copies a random earlier one with some probability."""
    Y = rng.integers(0, S, size=(n, L))
    for j in range(1, L):
        src = rng.integers(0, j)
        copy = rng.random(n) < rng.uniform(0, 0.9)
        Y[copy, j] = Y[copy, src]
    return Y


def _is_tree(edges, L):
    parent = list(range(L))

    def find(a):
        while parent[a] != a:
            a = parent[a]
        return a

    for i, j in edges:
        ri, rj = find(i), find(j)
        if ri == rj:
            return False
        parent[ri] = rj
    return len(edges) == L - 1


def _brute_force_mst_weight(mi):
    L = mi.shape[0]
    pairs = list(combinations(range(L), 2))
    return max(sum(mi[i, j] for i, j in tree) for tree in combinations(pairs, L - 1) if _is_tree(tree, L))


@pytest.mark.parametrize("seed", range(12))
def test_chow_liu_tree_is_a_maximum_spanning_tree_of_mutual_information(seed):
    rng = np.random.default_rng(seed)
    L = int(rng.integers(2, 7))
    S = int(rng.integers(2, 4))
    Y = _random_labels(rng, int(rng.integers(5, 60)), L, S)
    mi = label_mutual_information(Y, np.full(L, S))
    for i, j in combinations(range(L), 2):  # against scikit-learn's mutual information, pair by pair
        assert mi[i, j] == pytest.approx(mutual_info_score(Y[:, i], Y[:, j]), abs=1e-12)
        assert mi[j, i] == mi[i, j]
    edges = chow_liu_edges(mi)
    assert _is_tree([tuple(e) for e in edges], L) and np.all(edges[:, 0] < edges[:, 1])
    assert sum(mi[i, j] for i, j in edges) == pytest.approx(_brute_force_mst_weight(mi), abs=1e-12)


def test_top_k_edges_are_the_most_dependent_pairs():
    rng = np.random.default_rng(0)
    Y = _random_labels(rng, 80, 6)
    mi = label_mutual_information(Y)
    for k in (0, 1, 4, 15, 40):
        edges = top_k_edges(mi, k)
        assert len(edges) == min(k, 15)
        chosen = {tuple(e) for e in edges}
        rest = [mi[i, j] for i, j in combinations(range(6), 2) if (i, j) not in chosen]
        if chosen and rest:
            assert min(mi[i, j] for i, j in chosen) >= max(rest)


def test_estimator_learns_the_graph_from_training_labels():
    X, Y = make_multilabel_pairwise(120, n_features=4, n_labels=6, noise=0.2, random_state=0)
    tree = DLPWClassifier(C=0.1, edges="tree", max_epochs=30, tol=0).fit(X, Y)
    assert tree.edges_.shape == (5, 2) and _is_tree([tuple(e) for e in tree.edges_], 6)
    np.testing.assert_array_equal(tree.edges_, chow_liu_edges(label_mutual_information(Y)))
    top = DLPWClassifier(C=0.1, edges=3, max_epochs=30, tol=0).fit(X, Y)
    assert top.edges_.shape == (3, 2) and top.pairwise_.shape == (3, 2, 2)
    assert DLPWClassifier(C=0.1, edges=0, max_epochs=5, tol=0).fit(X, Y).edges_.shape == (0, 2)
    assert top.predict(X).shape == Y.shape
    with pytest.raises(ValueError, match="edges"):
        DLPWClassifier(edges="chow-liu").fit(X, Y)
    with pytest.raises(ValueError, match="edges"):
        DLPWClassifier(edges=-1).fit(X, Y)


@pytest.mark.parametrize("n_labels", [3, AUTO_COMPLETE_MAX_LABELS, AUTO_COMPLETE_MAX_LABELS + 1])
def test_auto_edges_are_complete_for_few_labels_and_the_tree_above(n_labels):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    Y = _random_labels(rng, 60, n_labels)
    fitted = DLPWClassifier(max_epochs=2, tol=0).fit(X, Y)  # edges="auto" is the default
    if n_labels <= AUTO_COMPLETE_MAX_LABELS:
        i, j = np.triu_indices(n_labels, 1)
        np.testing.assert_array_equal(fitted.edges_, np.stack([i, j], axis=1))
    else:
        np.testing.assert_array_equal(fitted.edges_, chow_liu_edges(label_mutual_information(Y)))
