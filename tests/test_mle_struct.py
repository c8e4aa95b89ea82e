"""MLEStructMatcher: dual gradient, Bethe-MLE optimality, recovery of theta from eq. 11, API and bad input."""

import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import GridSearchCV

from sklearn_struct import MLEStructMatcher
from sklearn_struct.datasets import make_matchings
from sklearn_struct.mle_struct import _DualProblem
from sklearn_struct.oracles.matching import bp_matching_marginals, sample_matchings
from sklearn_struct.utils.validation import check_matchings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _lib.matching_baselines import double_loop_bethe_mle, exact_log_likelihood, exact_matching_mle  # noqa: E402


def _eq11_data(n_samples, n_left, n_right, theta, seed):
    """Pair features N(0, 1); assignments drawn exactly from p(y) ∝ exp(<theta, sum_i X[i, y_i]>)."""
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(n_left, n_right, len(theta))) for _ in range(n_samples)]
    y = [sample_matchings(x @ theta, 1, random_state=rng)[0] for x in X]
    return X, y


@pytest.fixture(scope="module")
def eq11():
    return _eq11_data(200, 6, 6, np.array([1.0, -0.5, 0.8]), seed=0)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5)])
def test_dual_gradient_matches_finite_differences(shape):
    X, y = _eq11_data(5, *shape, np.array([0.5, -1.0]), seed=1)
    X, y = check_matchings(X, y)
    p = _DualProblem(X, y, alpha=0.7, rho=0.8)
    rng = np.random.default_rng(2)
    for m in range(len(X)):  # a random interior point
        sl, (n_left, n_right) = p.block(m)
        t = rng.uniform(0.5, 1.5, size=(n_left, n_right))
        t *= 0.9 / t.sum(1, keepdims=True) if n_left < n_right else 1.0 / t.sum(1, keepdims=True)
        t += 0.1 / n_right if n_left < n_right else 0.0
        p.tau[sl] = t.ravel()
    p.a = p.G.T @ (p.y_ind - p.tau)
    grad = p.full_gradient().copy()
    tau0 = p.tau.copy()

    def h(tau):
        p.tau[:] = tau
        p.a = p.G.T @ (p.y_ind - tau)
        return p.objective()

    for _ in range(5):
        d = rng.normal(size=tau0.shape) * 1e-3
        eps = 1e-4
        fd = (h(tau0 + eps * d) - h(tau0 - eps * d)) / (2 * eps)
        assert grad @ d == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_learned_theta_is_the_bethe_mle():
    X, y = _eq11_data(8, 4, 4, np.array([0.8, -0.6]), seed=3)
    est = MLEStructMatcher(alpha=1.0, max_iter=3000, tol=1e-5, random_state=0).fit(X, y)
    assert est.converged_
    # stationarity of the primal Bethe likelihood at coef_, marginals by an independent BP
    grad = sum(x[np.arange(4), a].sum(0) for x, a in zip(X, y)) - est.alpha * est.coef_
    for x in X:
        tau, _, ok = bp_matching_marginals(x @ est.coef_, tol=1e-12, max_iter=20000)
        assert ok
        grad -= np.einsum("ijk,ij->k", x, tau)
    assert np.linalg.norm(grad) < 1e-2
    # double loop (BP inside gradient steps) finds the same theta
    theta_dl, hist = double_loop_bethe_mle(X, y, alpha=1.0, max_iter=300, tol=1e-9)
    np.testing.assert_allclose(est.coef_, theta_dl, atol=2e-3)
    # strong duality: min h = max L (within the final duality gap)
    assert est.objective_curve_[-1] >= hist["value"][-1] - 1e-6
    assert est.objective_curve_[-1] - hist["value"][-1] <= est.gap_curve_[-1] + 1e-3


def test_recovers_theta_of_eq11_and_is_close_to_exact_mle(eq11):
    X, y = eq11
    theta_true = np.array([1.0, -0.5, 0.8])
    est = MLEStructMatcher(alpha=1.0, max_iter=100, tol=1e-6, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    np.testing.assert_allclose(est.coef_, theta_true, atol=0.15)
    theta_exact, best = exact_matching_mle(X, y, alpha=1.0)
    np.testing.assert_allclose(est.coef_, theta_exact, atol=0.15)
    # the Bethe estimate is nearly as probable as the exact MLE (Fig. 1's claim), far better than 0
    at_bethe, _ = exact_log_likelihood(X, y, est.coef_, alpha=1.0)
    at_zero, _ = exact_log_likelihood(X, y, np.zeros(3), alpha=1.0)
    assert best - at_bethe < 0.02 * (best - at_zero)


@pytest.mark.parametrize("step", ["line", "decreasing"])
def test_fw_and_bcfw_reach_the_same_optimum(step):
    X, y = _eq11_data(6, 4, 5, np.array([1.0, -1.0]), seed=4)
    objectives = []
    for solver in ["fw", "bcfw"]:
        est = MLEStructMatcher(alpha=2.0, solver=solver, step=step, max_iter=4000, tol=1e-5, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, y)
        assert len(est.gap_curve_) == est.n_iter_ + 1 == len(est.objective_curve_)
        objectives.append(est.objective_curve_[-1] - est.gap_curve_[-1])  # lower bound on min h
        objectives.append(est.objective_curve_[-1])
    lower, upper = max(objectives[0], objectives[2]), min(objectives[1], objectives[3])
    assert lower <= upper + 1e-9
    assert upper - lower < 1e-3 * abs(upper) + 0.05


def test_gap_stopping_rule_and_reproducibility(eq11):
    X, y = eq11[0][:30], eq11[1][:30]
    est = MLEStructMatcher(alpha=1.0, tol=2e-2, random_state=5).fit(X, y)
    assert est.converged_ and est.gap_curve_[-1] <= 2e-2 * 6 * 30
    assert np.all(est.gap_curve_[:-1] > 2e-2 * 6 * 30)
    again = MLEStructMatcher(alpha=1.0, tol=2e-2, random_state=5).fit(X, y)
    np.testing.assert_array_equal(est.coef_, again.coef_)
    parallel = MLEStructMatcher(alpha=1.0, tol=2e-2, solver="fw", max_iter=20, n_jobs=2)
    serial = clone(parallel).set_params(n_jobs=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        np.testing.assert_allclose(parallel.fit(X, y).coef_, serial.fit(X, y).coef_)


def test_unequal_sides():
    X, y = _eq11_data(40, 4, 7, np.array([1.5, -1.0]), seed=6)
    est = MLEStructMatcher(alpha=1.0, max_iter=50, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X[:30], y[:30])
    assert est.coef_[0] > 0.5 and est.coef_[1] < -0.3
    for pred in est.predict(X[30:]):
        assert len(set(pred)) == 4 and pred.max() < 7
    for marg in est.predict_marginals(X[30:32]):
        np.testing.assert_allclose(marg.sum(1), 1.0)
        assert np.all(marg.sum(0) <= 1 + 1e-9) and np.all(marg > 0)


def test_predicts_better_than_chance():
    X, y = make_matchings(n_samples=40, n_nodes=8, n_features=4, noise=0.5, random_state=0)
    est = MLEStructMatcher(alpha=0.5, random_state=0).fit(X[:30], y[:30])
    assert est.score(X[30:], y[30:]) > 0.8
    assert len(est.decision_function(X[:2])) == 2


def test_sklearn_citizenship():
    X, y = make_matchings(n_samples=12, n_nodes=5, n_features=3, noise=0.3, random_state=0)
    est = MLEStructMatcher(alpha=0.5, random_state=0)
    assert clone(est).get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        est.predict(X)
    est.fit(X, y)
    restored = pickle.loads(pickle.dumps(est))
    assert [list(a) for a in restored.predict(X)] == [list(a) for a in est.predict(X)]
    assert est.n_features_in_ == 3 and est.n_iter_ >= 1
    search = GridSearchCV(MLEStructMatcher(random_state=0), {"alpha": [0.1, 1.0]}, cv=2).fit(X, y)
    assert search.best_params_["alpha"] in (0.1, 1.0)
    with pytest.raises(ValueError, match="alpha"):
        MLEStructMatcher(alpha=-1).fit(X, y)


_GOOD = np.zeros((3, 4, 2))


@pytest.mark.parametrize(
    "X,y,match",
    [
        ([_GOOD, np.zeros((3, 4))], [[0, 1, 2]] * 2, r"X\[1\]: expected a 3D"),
        ([_GOOD, np.zeros((3, 4, 3))], [[0, 1, 2]] * 2, r"X\[1\] has 3 features"),
        ([_GOOD, np.zeros((5, 4, 2))], [[0, 1, 2], [0, 1, 2, 3, 0]], r"X\[1\]: need 1 <= n_left <= n_right"),
        ([_GOOD, np.full((3, 4, 2), np.nan)], [[0, 1, 2]] * 2, r"X\[1\] contains NaN"),
        ([_GOOD, _GOOD], [[0, 1, 2], [0, 0, 1]], r"y\[1\] is not injective"),
        ([_GOOD, _GOOD], [[0, 1, 2], [0, 1]], r"y\[1\] must be a 1D assignment of length"),
        ([_GOOD, _GOOD], [[0, 1, 2], [0, 1, 4]], r"y\[1\] has indices outside"),
        ([_GOOD, _GOOD], [[0, 1, 2]], "2 examples but y has 1"),
        ([_GOOD, [[[0.0]], [[0.0, 1.0]]]], [[0, 1, 2]] * 2, r"X\[1\]: pair features are not"),
        ([], [], "non-empty list"),
    ],
)
def test_bad_input_names_the_example(X, y, match):
    with pytest.raises(ValueError, match=match):
        MLEStructMatcher().fit(X, y)


def test_predict_checks_feature_count():
    X, y = make_matchings(n_samples=6, n_nodes=4, n_features=3, random_state=0)
    est = MLEStructMatcher(max_iter=5, tol=0).fit(X, y)  # tol=0: a 5-pass fit, no convergence test
    with pytest.raises(ValueError, match=r"X\[0\] has 2 features, expected 3"):
        est.predict([np.zeros((4, 4, 2))])
