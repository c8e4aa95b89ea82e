"""DLPWClassifier(label_sets="train"): exact decoding over the training label sets."""

import numpy as np

from sklearn_struct import DLPWClassifier
from sklearn_struct._dlpw_sets import best_sets, set_max_marginals, set_scores
from sklearn_struct.datasets import make_multilabel_pairwise


def _score(clf, x, y):
    """sum_i x . coef_[i, y_i] + intercept_[i, y_i] + sum_e pairwise_[e, y_u, y_v], written out."""
    s = sum(clf.coef_[i, y[i]] @ x + clf.intercept_[i, y[i]] for i in range(len(y)))
    return s + sum(clf.pairwise_[e, y[u], y[v]] for e, (u, v) in enumerate(clf.edges_))


def test_predict_is_the_best_training_label_set_by_enumeration():
    X, Y = make_multilabel_pairwise(150, n_features=4, n_labels=5, noise=0.3, random_state=1)
    clf = DLPWClassifier(C=0.05, max_epochs=30, tol=0).fit(X[:100], Y[:100])
    sets = np.unique(Y[:100], axis=0)
    np.testing.assert_array_equal(clf.label_sets_, sets)
    pred, cert = clf.predict_with_certificates(X[100:])
    assert cert.all()
    for x, p in zip(X[100:], pred):
        scores = [_score(clf, x, y) for y in sets]
        assert any(np.array_equal(p, y) for y in sets)
        assert _score(clf, x, p) >= max(scores) - 1e-9
    dec = clf.decision_function(X[100:])
    np.testing.assert_array_equal((dec > 0).astype(int), pred)
    full = DLPWClassifier(C=0.05, max_epochs=30, tol=0, label_sets="all").fit(X[:100], Y[:100])
    np.testing.assert_allclose(full.coef_, clf.coef_)  # same training; only the decoding differs


def test_set_kernels_against_brute_force():
    rng = np.random.default_rng(0)
    n, L, S, K = 7, 4, 3, 9
    unary = rng.normal(size=(n, L, S))
    edges = np.array([[0, 1], [1, 2], [0, 3]])
    pair = rng.normal(size=(3, S, S))
    sets = rng.integers(0, S, size=(K, L))
    sets[:, 2] = np.minimum(sets[:, 2], 1)  # state 2 of label 2 unreachable
    brute = np.array([[unary[m, np.arange(L), y].sum() + sum(pair[e, y[u], y[v]] for e, (u, v) in enumerate(edges))
                       for y in sets] for m in range(n)])
    np.testing.assert_allclose(set_scores(unary, pair, edges, sets), brute)
    idx, best = best_sets(unary, pair, edges, sets)
    np.testing.assert_array_equal(idx, brute.argmax(axis=1))
    M = set_max_marginals(unary, pair, edges, sets)
    for i in range(L):
        for a in range(S):
            take = sets[:, i] == a
            want = brute[:, take].max(axis=1) if take.any() else brute.min(axis=1) - 1
            np.testing.assert_allclose(M[:, i, a], want)


def test_empty_set_never_predicted_when_training_has_none():
    X, Y = make_multilabel_pairwise(200, n_features=4, n_labels=4, noise=0.3, random_state=2)
    keep = Y.sum(axis=1) > 0
    clf = DLPWClassifier(C=0.01, max_epochs=20, tol=0).fit(X[keep], Y[keep])
    assert (clf.predict(X).sum(axis=1) > 0).all()
