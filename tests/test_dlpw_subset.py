"""The subset (0/1) loss through the loss-augmented LP (witness node): oracle against enumeration, training."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_struct import DLPWClassifier
from sklearn_struct._dlpw_subset import witness_objective
from sklearn_struct.datasets import make_multilabel_pairwise
from sklearn_struct.dlpw import _Model, _augment, _unary
from sklearn_struct.oracles.lp import make_lp_graph, primal_values
from sklearn_struct.oracles._lp_fast import forest_schedule
from sklearn_struct.oracles._lp_subset import (
    subset_dual_values,
    subset_epoch,
    subset_lp,
    subset_star_passes,
    subset_tree_map,
)

SETTINGS = settings(max_examples=30, deadline=None)


def _scores(unary, pair, edges, n_states, y, loss):
    """Every labelling and its loss-augmented score ``score(y') + loss [y' != y]`` (enumeration)."""
    out = []
    for ys in itertools.product(*[range(k) for k in n_states]):
        s = sum(unary[i, a] for i, a in enumerate(ys)) + sum(pair[e, ys[u], ys[v]] for e, (u, v) in enumerate(edges))
        out.append(s + loss * (tuple(ys) != tuple(y)))
    return np.array(out)


@st.composite
def problem(draw, cyclic):
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    L = draw(st.integers(3 if cyclic else 1, 4))
    n_states = np.array([draw(st.integers(2 if cyclic else 1, 3)) for _ in range(L)])
    S = int(n_states.max())
    if cyclic:  # the complete graph, or a cycle
        pairs = list(itertools.combinations(range(L), 2)) if draw(st.booleans()) else \
            [(i, (i + 1) % L) for i in range(L)]
        edges = np.array(sorted(tuple(sorted(p)) for p in pairs), dtype=np.int64)
    else:
        edges = np.zeros((0, 2), dtype=np.int64)
    n = 3
    scale = draw(st.sampled_from([0.1, 1.0, 4.0]))
    unary = np.ascontiguousarray(scale * rng.normal(size=(n, L, S)))
    pair = np.ascontiguousarray(rng.normal(size=(len(edges), S, S)))
    Y = np.stack([[rng.integers(k) for k in n_states] for _ in range(n)]).astype(np.int64)
    return make_lp_graph(edges, n_states), unary, pair, Y, draw(st.sampled_from([1.0, 0.25, 3.0]))


@SETTINGS
@given(problem(cyclic=False))
def test_witness_star_alone_is_exact(prob):
    """No label edges: the witness star is a tree, the LP is tight and its solution is the enumerated maximum."""
    g, unary, pair, Y, loss = prob
    labels, dual, primal = subset_lp(g, unary, pair, Y, loss=loss, tol=1e-13)
    for m in range(len(Y)):
        scores = _scores(unary[m], pair, g.edges, g.n_states, Y[m], loss)
        assert dual[m] == pytest.approx(scores.max(), abs=1e-8)
        assert primal[m] == pytest.approx(scores.max(), abs=1e-8)
        want = primal_values(g, unary[m:m + 1], pair, labels[m:m + 1])[0] + loss * (not np.array_equal(labels[m], Y[m]))
        assert want == pytest.approx(primal[m], abs=1e-12)


@SETTINGS
@given(problem(cyclic=True))
def test_dual_bounds_the_loss_augmented_max_on_cyclic_graphs(prob):
    """The dual never increases over passes, bounds the enumerated maximum, and meets it where certified."""
    g, unary, pair, Y, loss = prob
    delta = subset_star_passes(g, unary, pair, Y, None, n_passes=0, loss=loss)
    best = np.array([_scores(unary[m], pair, g.edges, g.n_states, Y[m], loss).max() for m in range(len(Y))])
    prev = subset_dual_values(g, unary, pair, Y, delta, loss=loss)
    for _ in range(15):
        subset_star_passes(g, unary, pair, Y, delta, n_passes=1, loss=loss)
        cur = subset_dual_values(g, unary, pair, Y, delta, loss=loss)
        assert np.all(cur <= prev + 1e-9) and np.all(cur >= best - 1e-9)
        prev = cur
    _, dual, primal = subset_lp(g, unary, pair, Y, delta, loss=loss, tol=1e-12)
    assert np.all(dual >= best - 1e-9) and np.all(primal <= best + 1e-9)
    certified = dual - primal <= 1e-9
    np.testing.assert_allclose(dual[certified], best[certified], atol=1e-7)


@st.composite
def forest_problem(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    L = draw(st.integers(1, 5))
    n_states = np.array([draw(st.integers(1, 3)) for _ in range(L)])
    perm = rng.permutation(L)  # a random forest: each node joins an earlier one or starts a tree
    pairs = [sorted((int(perm[rng.integers(j)]), int(perm[j]))) for j in range(1, L) if rng.random() < 0.75]
    edges = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    S = int(n_states.max())
    unary = np.ascontiguousarray(draw(st.sampled_from([0.1, 1.0, 4.0])) * rng.normal(size=(3, L, S)))
    pair = np.ascontiguousarray(rng.normal(size=(len(edges), S, S)))
    Y = np.stack([[rng.integers(k) for k in n_states] for _ in range(3)]).astype(np.int64)
    return make_lp_graph(edges, n_states), unary, pair, Y, draw(st.sampled_from([1.0, 0.25, 3.0]))


@SETTINGS
@given(forest_problem())
def test_forest_subset_map_is_exact(prob):
    """On a forest, max-product over (state, differs) pairs gives the enumerated maximum and a maximiser."""
    g, unary, pair, Y, loss = prob
    labels, values = subset_tree_map(g, unary, pair, Y, forest_schedule(g.edges, g.n_nodes), loss)
    for m in range(len(Y)):
        scores = _scores(unary[m], pair, g.edges, g.n_states, Y[m], loss)
        assert values[m] == pytest.approx(scores.max(), abs=1e-9)
        got = primal_values(g, unary[m:m + 1], pair, labels[m:m + 1])[0] + loss * (not np.array_equal(labels[m], Y[m]))
        assert got == pytest.approx(scores.max(), abs=1e-9)


def test_forest_fit_reports_the_exact_objective():
    X, Y = make_multilabel_pairwise(80, n_features=3, n_labels=4, noise=0.3, random_state=4)
    clf = DLPWClassifier(C=0.05, loss="subset", label_sets="all", edges="tree", max_epochs=6, tol=0,
                         track_objective=True).fit(X, Y)
    curve = clf.objective_curve_
    np.testing.assert_array_equal(curve[:, 2], curve[:, 3])
    assert curve[-1, 2] < curve[0, 2]
    model = _Model(clf._graph, X.shape[1] + 1)
    model.V[:], model.P[:] = clf._W, clf._pairwise_full
    model.refresh_norm()
    assert curve[-1, 2] == pytest.approx(_exact_objective(model, _augment(X, True), Y.astype(np.int64),
                                                          clf.C * len(Y)), rel=1e-9)


def _exact_objective(model, Xa, Y, C):
    """1/2 ||w||^2 + C mean_m [max_y score_m(y) + [y != y_m] - score_m(y_m)] by enumeration (eq. 3)."""
    W, P = model.weights()
    unary = _unary(Xa, W, model.graph)
    g = model.graph
    hinge = [_scores(unary[m], P, g.edges, g.n_states, Y[m], 1.0).max()
             - primal_values(g, unary[m:m + 1], P, Y[m:m + 1])[0] for m in range(len(Y))]
    return 0.5 * model.sq_norm + C * float(np.mean(hinge))


def test_training_objective_bounds_the_exact_one_and_decreases():
    X, Y = make_multilabel_pairwise(90, n_features=4, n_labels=4, noise=0.3, random_state=2)
    clf = DLPWClassifier(C=0.05, loss="subset", label_sets="all", max_epochs=12, tol=0, track_objective=True)
    clf.fit(X, Y)
    curve = clf.objective_curve_
    assert curve[-1, 2] < curve[0, 2] and curve[-1, 3] < curve[0, 3]
    assert np.all(curve[:, 2] >= curve[:, 3] - 1e-9)  # eq. 9 (current messages) >= eq. 7 (LP solved)
    # at the fitted weights: eq. 9 >= eq. 7 >= the integral objective (enumeration)
    g = clf._graph
    model = _Model(g, X.shape[1] + 1)
    model.V[:], model.P[:] = clf._W, clf._pairwise_full
    model.refresh_norm()
    Xa, Cn = _augment(X, True), clf.C * len(Y)
    unary = _unary(Xa, clf._W, g)
    codes = Y.astype(np.int64)
    messages = np.zeros((len(Y), 2 * g.n_edges + g.n_nodes, 2))
    subset_star_passes(g, unary, clf._pairwise_full, codes, messages, n_passes=3)
    eq9 = witness_objective(model, unary, codes, messages, Cn)
    eq7 = witness_objective(model, unary, codes, messages, Cn, exact=True)
    exact = _exact_objective(model, Xa, codes, Cn)
    assert eq9 >= eq7 - 1e-9 and eq7 >= exact - 1e-9
    assert eq7 < eq9 or eq7 == pytest.approx(eq9)


def test_epoch_step_follows_a_subgradient_of_the_dual_loss():
    """One step at t = 2 is ``w/2 - (C/2) G``: ``G`` must satisfy ``h(w') >= h(w) + <G, w' - w>`` for the sample's
    ``h(w) = g(delta; theta(w)) - score_w(y)`` at the messages the epoch left (convexity, random ``w'``)."""
    rng = np.random.default_rng(4)
    L, F = 4, 3
    edges = np.array([[0, 1], [1, 2], [0, 2], [2, 3]], dtype=np.int64)
    g = make_lp_graph(edges, np.full(L, 2))
    Xa = sp.csr_matrix(rng.normal(size=(1, F)))
    Y = np.array([[1, 0, 1, 1]], dtype=np.int64)
    model = _Model(g, F)
    V0, P0 = rng.normal(scale=0.05, size=model.V.shape), rng.normal(scale=0.05, size=model.P.shape)
    model.V[:], model.P[:] = V0, P0
    model.refresh_norm()
    delta = np.zeros((1, 2 * len(edges) + L, 2))
    C = 0.1
    subset_epoch(np.array([0]), 1, C, 5, 1.0, Xa.indptr, Xa.indices, Xa.data, Y, model.V, model.P, model.state,
                 g, delta)
    assert model.sq_norm < C * (1 - 1e-6)  # the projection did not bind
    Wn, Pn = model.weights()
    GW, GP = (V0 - 2 * Wn) / C, (P0 - 2 * Pn) / C
    assert np.abs(GW).sum() + np.abs(GP).sum() > 0  # the loss is active: a nonzero step

    def h(W, P):
        unary = np.ascontiguousarray(np.asarray(Xa @ W).reshape(1, L, 2))
        return subset_dual_values(g, unary, P, Y, delta)[0] - primal_values(g, unary, P, Y)[0]

    h0 = h(V0, P0)
    for _ in range(40):
        W1, P1 = V0 + rng.normal(size=V0.shape), P0 + rng.normal(size=P0.shape)
        assert h(W1, P1) >= h0 + np.vdot(GW, W1 - V0) + np.vdot(GP, P1 - P0) - 1e-9


def test_subset_loss_through_the_lp_approaches_the_bayes_predictor():
    """Known answer: data drawn from a pairwise model; held-out subset accuracy near the true model's."""
    X, Y, p = make_multilabel_pairwise(900, n_features=4, n_labels=5, noise=0.3, edge_strength=2.0,
                                       return_params=True, random_state=0)
    sets = np.array(list(itertools.product([0, 1], repeat=5)))
    scores = (X @ p["coef"] + p["intercept"]) @ sets.T + 0.5 * np.einsum("kl,ak,al->a", p["pairwise"], sets, sets)
    bayes = np.mean(np.all(sets[scores[600:].argmax(axis=1)] == Y[600:], axis=1))
    clf = DLPWClassifier(C=0.05, loss="subset", label_sets="all").fit(X[:600], Y[:600])
    assert clf.label_sets_ is None and clf.n_certified_ > 550
    assert clf.score(X[600:], Y[600:]) >= bayes - 0.06
    assert clf.score(X[600:], Y[600:]) > 0.5  # labels independent of x: 2^-5


def test_subset_lp_fit_options_and_errors():
    X, Y = make_multilabel_pairwise(60, n_features=3, n_labels=4, noise=0.3, random_state=1)
    kw = dict(C=0.05, loss="subset", label_sets="all", max_epochs=5, tol=0)
    a = DLPWClassifier(**kw).fit(X, Y)
    b = DLPWClassifier(dtype="float32", **kw).fit(X, Y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-4)
    tree = DLPWClassifier(edges="tree", **kw).fit(X, Y)
    assert tree._forest is not None and tree.predict(X).shape == Y.shape  # exact on the tree, no messages
    with pytest.raises(ValueError, match="label_sets='train'"):
        DLPWClassifier(edge_features=True, **kw).fit(X, Y)
    Xbad = X.copy()
    Xbad[7, 2] = np.nan
    with pytest.raises(ValueError, match="sample 7, feature 2"):
        DLPWClassifier(**kw).fit(Xbad, Y)
    Ybad = Y.copy()
    Ybad[3, 1] = 2
    with pytest.raises(ValueError, match=r"y\[3, 1\]"):
        DLPWClassifier(n_states=2, **kw).fit(X, Ybad)
    with pytest.raises(ValueError, match="delta must have shape"):
        subset_dual_values(a._graph, np.zeros((2, 4, 2)), a._pairwise_full, Y[:2], np.zeros((2, 3, 2)))
