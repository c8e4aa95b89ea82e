"""DLPWClassifierCV: the warm-started path over C against separate fits."""

import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import make_scorer
from sklearn.model_selection import KFold

from sklearn_struct import DLPWClassifier, DLPWClassifierCV
from sklearn_struct.datasets import make_multilabel_pairwise
from sklearn_struct.dlpw import _augment, _Model
from sklearn_struct.dlpw_cv import refit_start, warm_start
from sklearn_struct.metrics import hamming_loss_multilabel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _lib.dlpw_baselines import exact_objective  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return make_multilabel_pairwise(180, n_features=5, n_labels=4, noise=0.4, random_state=3)


def _eq7(clf, X, Y):
    """The exact eq. 7 objective (the paper's C = C * n) at a fitted model's weights."""
    model = _Model(clf._graph, X.shape[1] + 1)
    model.V[:], model.P[:] = clf._W, clf._pairwise_full
    model.refresh_norm()
    return exact_objective(model, _augment(X, True), Y, clf.C * len(Y))


def test_path_matches_separate_fits(data):
    X, Y = data
    Cs = [0.003, 0.03, 0.1]
    cv = KFold(3, shuffle=True, random_state=0)
    cvest = DLPWClassifierCV(Cs=Cs, cv=cv, tol=1e-4).fit(X, Y)
    assert cvest.scores_.shape == (3, 3) and cvest.n_iter_.shape == (3, 3)
    separate = np.zeros((3, 3))
    for f, (train, test) in enumerate(cv.split(X, Y)):
        for k, C in enumerate(Cs):
            cold = DLPWClassifier(C=C, tol=1e-4).fit(X[train], Y[train])
            separate[f, k] = cold.score(X[test], Y[test])
            # the warm path's fit of this fold and C reaches the optimum as well as the separate fit
            prev = None
            for j, C2 in enumerate(Cs[: k + 1]):
                warm = DLPWClassifier(C=C2, tol=1e-4)
                warm._validate_params()
                warm._fit(X[train], Y[train], warm=None if prev is None else warm_start(prev, Cs[j - 1], C2),
                          keep_warm_state=True)
                prev = warm._warm_state
            assert _eq7(warm, X[train], Y[train]) <= _eq7(cold, X[train], Y[train]) * 1.02 + 1e-9
    # held-out subset accuracies agree with separate fits' (a few samples may flip near the optimum)
    np.testing.assert_allclose(cvest.scores_, separate, atol=0.05)
    assert cvest.C_ == Cs[int(np.argmax(cvest.scores_.mean(axis=0)))]
    # the refit starts warm from the folds' fits (refit_start): it reaches a cold refit's objective
    ref = DLPWClassifier(C=cvest.C_, tol=1e-4).fit(X, Y)
    assert _eq7(cvest.best_estimator_, X, Y) <= _eq7(ref, X, Y) * 1.02 + 1e-9
    assert np.mean(np.all(cvest.predict(X) == ref.predict(X), axis=1)) >= 0.95


def test_warm_start_rescales_the_weights_and_keeps_the_schedule(data):
    X, Y = data
    a = DLPWClassifier(C=1e-3, max_epochs=2, tol=0)
    a._validate_params()
    a._fit(X, Y, keep_warm_state=True)
    model, delta, steps = a._warm_state
    before = model.weights()[0].copy()
    out = warm_start(a._warm_state, 1e-3, 4e-3)
    assert out[1] is delta and out[2] == steps == 2 * len(Y)
    np.testing.assert_allclose(out[0].weights()[0], 2.0 * before)
    assert out[0].sq_norm == pytest.approx(4.0 * float(np.vdot(before, before) + np.vdot(*[a._pairwise_full] * 2)))


def test_scoring_refit_and_validation(data):
    X, Y = data
    ham = make_scorer(hamming_loss_multilabel, greater_is_better=False)
    est = DLPWClassifierCV(Cs=2, scoring=ham, refit=False, max_epochs=300).fit(X, Y)
    np.testing.assert_allclose(est.Cs_, [1e-4, 1e-2])
    assert np.all(est.scores_ <= 0)
    with pytest.raises(AttributeError, match="refit=False"):
        est.predict(X)
    clone(est).set_params(Cs=[0.01]).fit(X[:60], Y[:60])
    with pytest.raises(ValueError, match="Cs"):
        DLPWClassifierCV(Cs=[0.1, -1.0]).fit(X, Y)
    with pytest.raises(ValueError, match="Cs"):
        DLPWClassifierCV(Cs=0).fit(X, Y)


def test_refit_starts_from_the_folds_and_reaches_a_cold_fits_objective(data):
    X, Y = data
    cv = KFold(3, shuffle=True, random_state=1)
    for edges in (None, "tree"):
        cvest = DLPWClassifierCV(Cs=[0.03, 0.3], cv=cv, edges=edges, tol=1e-4).fit(X, Y)
        warm = cvest.best_estimator_
        cold = DLPWClassifier(C=cvest.C_, edges=edges, tol=1e-4).fit(X, Y)
        np.testing.assert_array_equal(warm.edges_, cold.edges_)
        # started near the optimum, not from zero: a lower first bound and fewer epochs
        assert warm.objective_curve_[0, 2] < 0.5 * cold.objective_curve_[0, 2]
        assert warm.n_iter_ < cold.n_iter_
        assert _eq7(warm, X, Y) <= _eq7(cold, X, Y) * 1.01 + 1e-9


def test_refit_start_averages_matching_edges_and_rescales():
    y = np.array([[0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1]])
    est = DLPWClassifier(edges=[[0, 1], [1, 2]])
    rng = np.random.default_rng(0)
    cls = [np.array([0, 1])] * 3
    # fold A has the refit's edges, fold B (a learned graph) one of them and another
    WA, WB = rng.normal(size=(2, 4, 6))
    PA, PB = rng.normal(size=(2, 2, 2, 2))
    folds = [((WA, PA, 40), (cls, np.array([[0, 1], [1, 2]]), 4)),
             ((WB, PB, 30), (cls, np.array([[0, 2], [0, 1]]), 3))]
    model, delta, steps = refit_start(est, y, folds)
    W, P = model.weights()
    np.testing.assert_allclose(W, (np.sqrt(6 / 4) * WA + np.sqrt(6 / 3) * WB) / 2)
    np.testing.assert_allclose(P[0], (np.sqrt(6 / 4) * PA[0] + np.sqrt(6 / 3) * PB[1]) / 2)
    np.testing.assert_allclose(P[1], np.sqrt(6 / 4) * PA[1])  # only fold A has edge (1, 2)
    assert delta == 0.0 and steps == round((40 * 6 / 4 + 30 * 6 / 3) / 2)
    # a fold that saw fewer classes of a column codes its states differently: cold refit
    y3 = np.array([[0, 1], [2, 1], [1, 0], [0, 0]])
    est3 = DLPWClassifier()
    small = [np.array([0, 2]), np.array([0, 1])]
    assert refit_start(est3, y3, [((np.zeros((3, 6)), np.zeros((1, 3, 3)), 5), (small, np.array([[0, 1]]), 3))]) \
        is None
