"""The structured-SVM matcher of the MLE-Struct benchmarks (``benchmarks/_lib/matching_baselines.py``)."""

import itertools
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from sklearn_struct.datasets import make_matchings
from sklearn_struct.oracles.matching import sample_matchings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _lib.matching_baselines import MatchingSSVM  # noqa: E402


def _eq11_data(n_samples, n_left, n_right, theta, seed):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(n_left, n_right, len(theta))) for _ in range(n_samples)]
    y = [sample_matchings(x @ theta, 1, random_state=rng)[0] for x in X]
    return X, y


def test_ssvm_predicts_better_than_chance():
    X, y = make_matchings(n_samples=40, n_nodes=8, n_features=4, noise=0.5, random_state=0)
    ssvm = MatchingSSVM(random_state=0).fit(X[:30], y[:30])
    assert ssvm.score(X[30:], y[30:]) > 0.8
    X, y = make_matchings(n_samples=20, n_nodes=6, n_features=3, noise=0.3, random_state=0)
    assert MatchingSSVM(random_state=0).fit(X[:15], y[:15]).score(X[15:], y[15:]) > 0.8


def test_ssvm_reaches_the_primal_optimum_by_enumeration():
    X, y = _eq11_data(6, 4, 4, np.array([1.0, -1.0]), seed=7)
    lam = 0.05
    perms = [np.array(p) for p in itertools.permutations(range(4))]

    def primal(w):
        total = lam / 2 * w @ w
        for x, a in zip(X, y):
            true = x[np.arange(4), a].sum(0) @ w
            total += max(np.mean(p != a) - true + x[np.arange(4), p].sum(0) @ w for p in perms) / len(X)
        return total

    ssvm = MatchingSSVM(alpha=lam, max_iter=3000, tol=1e-9, random_state=0).fit(X, y)
    best = minimize(primal, np.zeros(2), method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-10}).fun
    # the BCFW duality gap bounds the suboptimality, and it is small
    assert primal(ssvm.coef_) - best <= ssvm.gap_curve_[-1] + 1e-9
    assert ssvm.gap_curve_[-1] < 2e-3
