"""DLPWClassifier(label_sets="train"): exact decoding over the training label sets."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_struct import DLPWClassifier
from sklearn_struct._dlpw_sets import best_sets, set_max_marginals, set_scores, sets_objective
from sklearn_struct.oracles.lp import make_lp_graph
from sklearn_struct.oracles.lp_learning import pegasos_step, sets_epoch
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


def _brute_step_gradient(x, y_idx, sets, W, P, edges, zero_one):
    """Node / edge subgradient coefficients of one sample's set hinge, by enumeration in Python."""
    L = sets.shape[1]
    S = P.shape[1]

    def score(y):
        return sum(x @ W[:, i * S + y[i]] for i in range(L)) + sum(P[e, y[u], y[v]] for e, (u, v) in enumerate(edges))

    truth = sets[y_idx]
    aug = [score(y) + ((k != y_idx) if zero_one else np.mean(y != truth)) for k, y in enumerate(sets)]
    best = sets[int(np.argmax(aug))]
    node_g, edge_g = np.zeros(L * S), np.zeros(P.shape)
    for i in range(L):
        node_g[i * S + best[i]] += 1
        node_g[i * S + truth[i]] -= 1
    for e, (u, v) in enumerate(edges):
        edge_g[e, best[u], best[v]] += 1
        edge_g[e, truth[u], truth[v]] -= 1
    return node_g, edge_g, max(aug) - score(truth)


@pytest.mark.parametrize("zero_one", [True, False])
def test_sets_epoch_is_pegasos_on_the_enumerated_set_hinge(zero_one):
    rng = np.random.default_rng(4)
    n, F, L, K = 6, 3, 4, 5
    X = rng.normal(size=(n, F))
    sets = np.unique(rng.integers(0, 2, size=(K, L)), axis=0)
    target = rng.integers(0, len(sets), size=n)
    edges = np.array([[0, 1], [1, 2], [2, 3], [0, 3]])
    graph = make_lp_graph(edges, np.full(L, 2))
    Xs = sp.csr_matrix(X)
    V, P, state = rng.normal(size=(F, 2 * L)), rng.normal(size=(4, 2, 2)), np.array([1.0, 0.0])
    state[1] = np.vdot(V, V) + np.vdot(P, P)
    V2, P2, state2 = V.copy(), P.copy(), state.copy()
    C = 0.7
    t = sets_epoch(np.arange(n), 3, C, "subset" if zero_one else "hamming", Xs.indptr, Xs.indices, Xs.data, target,
                   sets, V, P, state, graph.edges, graph.n_states)
    assert t == 3 + n
    for m in range(n):  # the same steps written out: brute-force argmax, then pegasos_step
        W, Pw = state2[0] * V2, state2[0] * P2
        node_g, edge_g, _ = _brute_step_gradient(X[m], target[m], sets, W, Pw, edges, zero_one)
        pegasos_step(4 + m, C, np.arange(F), X[m], node_g, edge_g, V2, P2, state2)
    np.testing.assert_allclose(state[0] * V, state2[0] * V2, atol=1e-12)
    np.testing.assert_allclose(state[0] * P, state2[0] * P2, atol=1e-12)
    # the exact objective against the enumeration
    W, Pw = state[0] * V, state[0] * P
    Xa = sp.csr_matrix(X)
    want = 0.5 * (np.vdot(W, W) + np.vdot(Pw, Pw)) + C * np.mean(
        [_brute_step_gradient(X[m], target[m], sets, W, Pw, edges, zero_one)[2] for m in range(n)])
    assert sets_objective(W, Pw, Xa, edges, target, sets, C, zero_one) == pytest.approx(want, rel=1e-12)


def test_subset_loss_trains_and_edge_features_need_training_label_sets():
    X, Y = make_multilabel_pairwise(200, n_features=4, n_labels=5, noise=0.3, random_state=5)
    clf = DLPWClassifier(C=0.05, loss="subset").fit(X[:150], Y[:150])
    curve = clf.objective_curve_[:, 2]
    assert curve[-1] <= curve[0] and clf.n_certified_ == 150
    hamming = DLPWClassifier(C=0.05).fit(X[:150], Y[:150])
    assert clf.score(X[:150], Y[:150]) >= hamming.score(X[:150], Y[:150]) - 0.02
    with pytest.raises(ValueError, match="label_sets='train'"):
        DLPWClassifier(loss="subset", label_sets="all", edge_features=True).fit(X, Y)


@pytest.mark.parametrize("zero_one", [True, False])
def test_edge_feature_step_is_the_finite_difference_gradient(zero_one):
    """One kernel step at t = 2 is ``w/2 - (C/2) g``: recover g, compare with finite differences of the objective."""
    rng = np.random.default_rng(6)
    F, L, K = 3, 4, 6
    sets = np.unique(rng.integers(0, 2, size=(K, L)), axis=0)
    edges = np.array([[0, 1], [1, 2], [2, 3]])
    graph = make_lp_graph(edges, np.full(L, 2))
    E, nS = len(edges), 2 * L
    x = rng.normal(size=(1, F))
    Xs = sp.csr_matrix(x)
    target = np.array([1])
    V, P = rng.normal(scale=0.02, size=(F, nS + E * 4)), rng.normal(scale=0.02, size=(E, 2, 2))
    x *= 10
    C = 0.01  # small weights and C: the step stays inside the sqrt(C) ball (no projection)
    state = np.array([1.0, np.vdot(V, V) + np.vdot(P, P)])
    V1, P1 = V.copy(), P.copy()
    sets_epoch(np.array([0]), 1, C, "subset" if zero_one else "hamming", Xs.indptr, Xs.indices, Xs.data, target,
               sets, V1, P1, state, graph.edges, graph.n_states)
    gV = (0.5 * V - state[0] * V1) * 2 / C
    gP = (0.5 * P - state[0] * P1) * 2 / C

    def loss(V_, P_):  # the sample's hinge: the objective without the regulariser, C = 1
        return sets_objective(V_, P_, Xs, edges, target, sets, 1.0, zero_one) - 0.5 * (np.vdot(V_, V_) + np.vdot(P_, P_))

    h = 1e-6
    for arr, g in ((V, gV), (P, gP)):
        fd = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            up, down = arr.copy(), arr.copy()
            up[idx] += h
            down[idx] -= h
            args_up = (up, P) if arr is V else (V, up)
            args_down = (down, P) if arr is V else (V, down)
            fd[idx] = (loss(*args_up) - loss(*args_down)) / (2 * h)
        np.testing.assert_allclose(g, fd, atol=1e-6)
    assert np.abs(gV[:, nS:]).sum() > 0  # the edge-feature weights moved


def test_edge_features_estimator():
    X, Y = make_multilabel_pairwise(200, n_features=4, n_labels=4, noise=0.3, random_state=7)
    clf = DLPWClassifier(C=0.05, edge_features=True, edges="tree").fit(X[:150], Y[:150])
    assert clf.edge_coef_.shape == (3, 2, 2, 4)
    pred = clf.predict(X[150:])
    sets = clf.label_sets_
    for xi, p in zip(X[150:], pred):  # the prediction is the best training set under the edge-feature scores
        def score(y):
            s = sum(clf.coef_[i, y[i]] @ xi + clf.intercept_[i, y[i]] for i in range(4))
            return s + sum(clf.pairwise_[e, y[u], y[v]] + clf.edge_coef_[e, y[u], y[v]] @ xi
                           for e, (u, v) in enumerate(clf.edges_))
        assert score(p) >= max(score(y) for y in sets) - 1e-9
    np.testing.assert_array_equal((clf.decision_function(X[150:]) > 0).astype(int), pred)
    with pytest.raises(ValueError, match="edge_features"):
        clf.predict_marginals(X)
    with pytest.raises(ValueError, match="label_sets='train'"):
        DLPWClassifier(edge_features=True, label_sets="all").fit(X, Y)
