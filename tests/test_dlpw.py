"""DLPWClassifier: known answers on generated data, Algorithm 1 pieces, bad input, scikit-learn conformance."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.multioutput import MultiOutputClassifier

from sklearn_struct.datasets import make_multilabel_pairwise
from sklearn_struct._dlpw_model import _augment, _Model, loss_augmented, objective_eq7, objective_eq9
from sklearn_struct.dlpw import DLPWClassifier
from sklearn_struct.oracles.lp import dual_values, make_lp_graph, primal_values, star_passes
from sklearn_struct.oracles.lp_learning import dlpw_epoch

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def coupled_data():
    X, Y = make_multilabel_pairwise(1000, n_features=8, n_labels=6, edge_strength=2.5, noise=0.2, random_state=1)
    return X[:500], Y[:500], X[500:], Y[500:]


def test_beats_independent_logistic_regression_on_coupled_labels(coupled_data):
    X, Y, Xt, Yt = coupled_data
    clf = DLPWClassifier(C=0.2, max_epochs=100).fit(X, Y)
    br = MultiOutputClassifier(LogisticRegression()).fit(X, Y)
    ours, theirs = clf.score(Xt, Yt), float((br.predict(Xt) == Yt).all(axis=1).mean())
    assert ours >= theirs + 0.05, (ours, theirs)
    assert np.mean(clf.predict(Xt) != Yt) <= np.mean(br.predict(Xt) != Yt) + 0.005
    # the learned couplings have the sign of the true ones on the strongest pairs
    _, _, params = make_multilabel_pairwise(1000, n_features=8, n_labels=6, edge_strength=2.5, noise=0.2,
                                            return_params=True, random_state=1)
    table = clf.pairwise_
    coupling = table[:, 1, 1] + table[:, 0, 0] - table[:, 0, 1] - table[:, 1, 0]
    true = params.pairwise[clf.edges_[:, 0], clf.edges_[:, 1]]
    strong = np.abs(true) > np.quantile(np.abs(true), 0.5)
    assert np.mean(np.sign(coupling[strong]) == np.sign(true[strong])) >= 0.85


def test_objective_curve_bound_and_decrease(coupled_data):
    X, Y, _, _ = coupled_data
    clf = DLPWClassifier(C=0.05, max_epochs=15, tol=0, track_objective=True).fit(X[:200], Y[:200])
    curve = clf.objective_curve_
    assert curve.shape == (15, 4) and clf.n_iter_ == 15 and clf.n_steps_ == 15 * 200
    assert np.all(curve[:, 2] >= curve[:, 3] - 1e-9)  # eq. 9 bounds eq. 7
    assert np.all(np.diff(curve[:, 1]) >= 0)
    assert curve[-1, 3] < 0.5 * curve[0, 3]
    # eq. 7 at w = 0 is C * (LP of the loss alone) = C (normalised Hamming of the all-wrong labelling)
    assert curve[-1, 3] < 10.0


def test_subgradient_matches_finite_differences():
    """The kernel's step w -> (1 - 1/t) w - (C/t) G uses G = d g(delta; theta(w)) / dw (messages fixed)."""
    rng = np.random.default_rng(0)
    n_labels, n_feat = 4, 3
    X = rng.normal(size=(1, n_feat))
    Y = rng.integers(0, 2, size=(1, n_labels))
    edges = np.array([[0, 1], [1, 2], [2, 3], [0, 3], [0, 2]])
    graph = make_lp_graph(edges, np.full(n_labels, 2))
    Xa = _augment(X, True)
    model = _Model(graph, Xa.shape[1])
    model.V[:] = 1e-3 * rng.normal(size=model.V.shape)  # ||w||^2 < C: no projection before or after the step
    model.P[:] = 1e-3 * rng.normal(size=model.P.shape)
    model.refresh_norm()
    delta = rng.normal(size=(1, 2 * len(edges), 2))

    def g_of(V, P):
        m = _Model(graph, Xa.shape[1])
        m.V[:], m.P[:] = V, P
        unary, pair = loss_augmented(m, Xa, Y, 1 / n_labels)
        return dual_values(graph, unary, pair, delta)[0] - primal_values(graph, unary, pair, Y)[0]

    V0, P0 = model.V.copy(), model.P.copy()
    C, t = 1e-2, 1  # t0 = 1: the step is t = 2, shrink 1/2
    dlpw_epoch(np.zeros(1, dtype=np.int64), t, C, 0, 1 / n_labels, Xa.indptr, Xa.indices, Xa.data, Y, model.V,
               model.P, model.state, graph.edges, graph.n_states, graph.indptr, graph.slots, delta)
    a = model.state[0]
    GV = (0.5 * V0 - a * model.V) * 2 / C
    GP = (0.5 * P0 - a * model.P) * 2 / C
    for _ in range(5):
        dV, dP = rng.normal(size=V0.shape), rng.normal(size=P0.shape)
        h = 1e-8
        fd = (g_of(V0 + h * dV, P0 + h * dP) - g_of(V0 - h * dV, P0 - h * dP)) / (2 * h)
        assert fd == pytest.approx(np.vdot(GV, dV) + np.vdot(GP, dP), rel=1e-5, abs=1e-6)


def test_warm_started_messages_lower_the_bound():
    """Star passes inside an epoch only lower each sample's dual for fixed weights (Algorithm 1's inner loop)."""
    X, Y = make_multilabel_pairwise(50, n_features=4, n_labels=5, random_state=0)
    Xa = _augment(X, True)
    graph = make_lp_graph(np.stack(np.triu_indices(5, 1), 1), np.full(5, 2))
    model = _Model(graph, Xa.shape[1])
    rng = np.random.default_rng(0)
    model.V[:] = rng.normal(size=model.V.shape)
    model.P[:] = rng.normal(size=model.P.shape)
    model.refresh_norm()
    delta = np.zeros((50, 2 * graph.n_edges, 2))
    before = objective_eq9(model, Xa, Y, delta, 1.0, 0.2)
    unary, pair = loss_augmented(model, Xa, Y, 0.2)
    star_passes(graph, unary, pair, delta, 3)
    after = objective_eq9(model, Xa, Y, delta, 1.0, 0.2)
    exact = objective_eq7(model, Xa, Y, delta, 1.0, 0.2)
    assert before >= after >= exact - 1e-9


def test_general_mode_four_states_and_certificates():
    """The paper's synthetic model: 4-state labels on a given graph, y from a random model by ICM."""
    rng = np.random.default_rng(0)
    d, n = 6, 300
    edges = np.array([[i, j] for i in range(d) for j in range(i + 1, d)])
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(d, 4))
    P = rng.normal(scale=0.5, size=(len(edges), 4, 4))
    graph = make_lp_graph(edges, np.full(d, 4))
    from sklearn_struct.oracles.lp import icm

    unary = X[:, :, None] * W[None]  # f_i(y_i, x) = x_i in position y_i
    Y, _ = icm(graph, unary, P, unary.argmax(axis=2))
    clf = DLPWClassifier(C=0.5, edges=edges, n_states=4, max_epochs=60).fit(X[:200], Y[:200])
    assert clf.n_states_.tolist() == [4] * d and len(clf.classes_) == d
    pred, cert = clf.predict_with_certificates(X[200:])
    assert pred.shape == (100, d) and cert.dtype == bool
    assert np.mean(pred == Y[200:]) > 0.8
    marg = clf.predict_marginals(X[200:])
    assert len(marg) == d and np.allclose(marg[0].sum(axis=1), 1)
    scores = clf.decision_function(X[200:])
    assert all(np.array_equal(s.argmax(axis=1), pred[:, l]) for l, s in enumerate(scores))


def test_single_column_multiclass_and_string_labels():
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=4, size=(3, 2))
    y = rng.integers(0, 3, size=300)
    X = centers[y] + rng.normal(size=(300, 2))
    labels = np.array(["a", "b", "c"])[y]
    clf = DLPWClassifier(C=10.0 / 300).fit(X, labels)
    assert clf.classes_.tolist() == ["a", "b", "c"] and clf.edges_.shape == (0, 2)
    lr = LogisticRegression().fit(X, labels).score(X, labels)
    assert clf.score(X, labels) >= lr - 0.02 and clf.n_certified_ == 300
    assert np.array_equal(clf.classes_[clf.decision_function(X).argmax(axis=1)], clf.predict(X))


def test_float32_messages_sparse_input_and_reproducibility(coupled_data):
    X, Y, Xt, _ = coupled_data
    a = DLPWClassifier(C=0.02, max_epochs=10, order="shuffle", random_state=0).fit(X, Y)
    b = DLPWClassifier(C=0.02, max_epochs=10, order="shuffle", random_state=0).fit(sp.csr_matrix(X), Y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-10)
    c = DLPWClassifier(C=0.02, max_epochs=10, order="shuffle", random_state=0, dtype="float32").fit(X, Y)
    np.testing.assert_allclose(a.coef_, c.coef_, atol=1e-3)
    d = DLPWClassifier(C=0.02, max_epochs=10, order="shuffle", random_state=1).fit(X, Y)
    assert not np.allclose(a.coef_, d.coef_)
    assert np.array_equal(a.predict(Xt), b.predict(sp.csr_matrix(Xt)))


def test_decision_function_and_marginals_consistent_with_predict(coupled_data):
    X, Y, Xt, _ = coupled_data
    clf = DLPWClassifier(C=0.2, max_epochs=20, label_sets="all").fit(X, Y)
    pred = clf.predict(Xt)
    assert np.array_equal((clf.decision_function(Xt) > 0).astype(int), pred)
    marg = clf.predict_marginals(Xt)
    _, cert = clf.predict_with_certificates(Xt)
    assert np.array_equal(np.round(marg[cert]).astype(int), pred[cert])


@pytest.mark.parametrize(
    "params, y_change, match",
    [
        ({"edges": [[0, 1], [1, 7]]}, None, r"edge 1 .* outside"),
        ({"edges": [[0, 1], [1, 0]]}, None, "edges 0 and 1"),
        ({"edges": [[2, 2]]}, None, "edge 0 is a self-loop"),
        ({"n_states": [2, 2]}, None, r"one per column"),
        ({"n_states": 2}, "three", r"y\[3, 1\] = 2.0 is outside range"),
        ({}, "nan", r"sample 4, column 2"),
        ({}, "3d", "y must have shape"),
    ],
)
def test_bad_input(params, y_change, match):
    X, Y = make_multilabel_pairwise(20, n_features=3, n_labels=4, random_state=0)
    Y = Y.astype(float)
    if y_change == "three":
        Y[3, 1] = 2
    elif y_change == "nan":
        Y[4, 2] = np.nan
    elif y_change == "3d":
        Y = Y[:, :, None]
    with pytest.raises(ValueError, match=match):
        DLPWClassifier(max_epochs=2, **params).fit(X, Y)


def test_bad_X_and_unseen_labels():
    X, Y = make_multilabel_pairwise(20, n_features=3, n_labels=4, random_state=0)
    Xb = X.copy()
    Xb[5, 1] = np.inf
    with pytest.raises(ValueError, match="sample 5, feature 1"):
        DLPWClassifier(max_epochs=2).fit(Xb, Y)
    clf = DLPWClassifier(max_epochs=2).fit(X, Y)
    with pytest.raises(ValueError, match="sample 5, feature 1"):
        clf.predict(sp.csr_matrix(Xb))
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :2])
    Yb = Y.copy()
    Yb[7, 3] = 5
    with pytest.raises(ValueError, match=r"y\[7, 3\] = 5 is not seen at fit"):
        clf.score(X, Yb)
    with pytest.raises(ValueError, match="columns"):
        clf.score(X, Y[:, :3])
    with pytest.raises(ValueError, match="samples"):
        DLPWClassifier(max_epochs=2).fit(X, Y[:10])


def test_convergence_warning():
    X, Y = make_multilabel_pairwise(30, n_features=3, n_labels=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        with pytest.raises(ConvergenceWarning):
            DLPWClassifier(max_epochs=1, tol=1e-12).fit(X, Y)


def test_epoch_average_is_the_mean_of_the_steps_weights():
    """``average`` accumulates ``scale * (V, P)`` after every step: one pass with it equals the mean of the
    weights read after each single-sample pass (the same steps, taken one call at a time)."""
    X, Y = make_multilabel_pairwise(12, n_features=3, n_labels=3, random_state=2)
    graph = make_lp_graph(np.array([[0, 1], [1, 2], [0, 2]]), np.full(3, 2))
    Xa = _augment(X, True)
    Y = Y.astype(np.int64)

    def fresh():
        return _Model(graph, Xa.shape[1]), np.zeros((12, 6, 2))

    def epoch(model, delta, order, t, average=None):
        return dlpw_epoch(np.asarray(order, dtype=np.int64), t, 5.0, 3, 1 / 3, Xa.indptr, Xa.indices, Xa.data, Y,
                          model.V, model.P, model.state, graph.edges, graph.n_states, graph.indptr, graph.slots,
                          delta, average=average)

    model, delta = fresh()
    sums = (np.zeros_like(model.V), np.zeros_like(model.P))
    epoch(model, delta, range(12), 0, sums)
    other, delta2 = fresh()
    mean_V, mean_P = np.zeros_like(model.V), np.zeros_like(model.P)
    for m in range(12):
        epoch(other, delta2, [m], m)
        mean_V += other.state[0] * other.V / 12
        mean_P += other.state[0] * other.P / 12
    np.testing.assert_allclose(sums[0] / 12, mean_V, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sums[1] / 12, mean_P, rtol=1e-10, atol=1e-12)
    assert np.abs(mean_V).sum() > 0
    with pytest.raises(ValueError, match="average"):
        epoch(model, delta, range(12), 12, (np.zeros((1, 1)), sums[1]))
