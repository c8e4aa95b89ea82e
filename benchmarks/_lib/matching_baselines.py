"""Reference learners for matching models, used by the benchmarks and tests next to ``MLEStructMatcher``.

- :class:`MatchingSSVM`: structured SVM (Caetano et al. 2009 "linear + learning": margin rescaled by
  the normalised Hamming loss) trained by block-coordinate Frank-Wolfe (Lacoste-Julien et al. 2013,
  Algorithm 4), with the same assignment oracle.
- :func:`double_loop_bethe_mle`: Bethe maximum likelihood by gradient ascent on ``theta`` with the
  marginals of every example recomputed by BP at every step (Huang & Jebara 2009; Bayati et al.),
  the double loop MLE-Struct avoids.
- :func:`exact_matching_mle` / :func:`exact_log_likelihood`: exact (Ryser) maximum likelihood by
  L-BFGS, for ``n_right <= 20``.

Every objective here is the regularised log-likelihood
``L(theta) = sum_m [<theta, phi_m(y_m)> - log Z_m(theta)] - alpha / 2 ||theta||^2``.
"""

import numbers
import time

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval

from sklearn_struct.oracles.matching import (
    assignment,
    bethe_free_energy,
    bp_matching_marginals,
    exact_marginals,
    fw_bethe_marginals,
)
from sklearn_struct.utils.validation import check_matchings

from .internals import _LinearMatcherMixin, atomic_fit, store_init_params

__all__ = ["MatchingSSVM", "bethe_log_likelihood", "double_loop_bethe_mle", "exact_log_likelihood", "exact_matching_mle"]


def _true_features(X, y):
    return sum(x[np.arange(len(a)), a].sum(axis=0) for x, a in zip(X, y))


# ----------------------------------------------------------------------------- structured SVM


class MatchingSSVM(_LinearMatcherMixin, BaseEstimator):
    """Structured SVM for matchings (margin rescaling, normalised Hamming loss) by BCFW.

    ``min_w alpha/2 ||w||^2 + 1/M sum_m max_y [Delta(y_m, y) - <w, phi_m(y_m) - phi_m(y)>]``.

    Parameters
    ----------
    alpha : float > 0, default=1e-2
    max_iter : int, default=100
        Passes over the data.
    tol : float, default=1e-4
        Stop when the summed block duality gaps fall below ``tol``.
    random_state : int or None, default=None
    """

    _parameter_constraints = {
        "alpha": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, *, alpha=1e-2, max_iter=100, tol=1e-4, random_state=None):
        store_init_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        X, y = check_matchings(X, y)
        rng = check_random_state(self.random_state)
        M, K, lam = len(X), X[0].shape[2], float(self.alpha)
        phi_true = [x[np.arange(len(a)), a].sum(axis=0) for x, a in zip(X, y)]
        w, ell = np.zeros(K), 0.0
        w_blocks, ell_blocks = np.zeros((M, K)), np.zeros(M)
        block_gaps = np.full(M, np.inf)
        self.gap_curve_ = []
        for it in range(self.max_iter):
            for m in rng.randint(M, size=M):
                x, a = X[m], y[m]
                n = len(a)
                aug = x @ w + 1.0 / n  # + normalised Hamming loss of every pair ...
                aug[np.arange(n), a] -= 1.0 / n  # ... except the true ones
                y_star = assignment(-aug, check_input=False)
                loss = float(np.mean(y_star != a))
                w_s = (phi_true[m] - x[np.arange(n), y_star].sum(axis=0)) / (lam * M)
                ell_s = loss / M
                dw = w_blocks[m] - w_s
                block_gaps[m] = lam * float(dw @ w) - ell_blocks[m] + ell_s
                denom = lam * float(dw @ dw)
                gamma = 1.0 if denom <= 0 else min(1.0, max(0.0, block_gaps[m] / denom))
                new_w = (1 - gamma) * w_blocks[m] + gamma * w_s
                new_ell = (1 - gamma) * ell_blocks[m] + gamma * ell_s
                w += new_w - w_blocks[m]
                ell += new_ell - ell_blocks[m]
                w_blocks[m], ell_blocks[m] = new_w, new_ell
            gap = float(block_gaps.sum())
            self.gap_curve_.append(gap)
            if gap <= self.tol:
                break
        self.coef_ = w
        self.n_iter_ = it + 1
        self.n_features_in_ = K
        self.gap_curve_ = np.asarray(self.gap_curve_)
        return self


# ----------------------------------------------------------------------------- likelihoods


def exact_log_likelihood(X, y, theta, alpha=0.0):
    """Exact regularised log-likelihood and its gradient (Ryser; ``n_right <= 20``)."""
    theta = np.asarray(theta, dtype=np.float64)
    value = float(theta @ _true_features(X, y)) - alpha / 2 * float(theta @ theta)
    grad = _true_features(X, y) - alpha * theta
    for x in X:
        marg, log_z = exact_marginals(x @ theta)
        value -= log_z
        grad -= np.einsum("ijk,ij->k", x, marg)
    return value, grad


def bethe_log_likelihood(X, y, theta, alpha=0.0, rho=1.0, *, tol=1e-9, max_iter=5000):
    """rho-Bethe regularised log-likelihood and gradient, marginals by FW inference (any ``rho``)."""
    theta = np.asarray(theta, dtype=np.float64)
    value = float(theta @ _true_features(X, y)) - alpha / 2 * float(theta @ theta)
    grad = _true_features(X, y) - alpha * theta
    for x in X:
        tau, log_z, _ = fw_bethe_marginals(x @ theta, rho, max_iter=max_iter, tol=tol)
        value -= log_z
        grad -= np.einsum("ijk,ij->k", x, tau)
    return value, grad


def exact_matching_mle(X, y, alpha=1.0, *, tol=1e-9, theta0=None):
    """Exact maximum-likelihood ``theta`` by L-BFGS on the Ryser log-likelihood.

    Returns
    -------
    theta : ndarray of shape (n_features,)
    value : float
        The maximised regularised log-likelihood.
    """
    X, y = check_matchings(X, y)
    theta0 = np.zeros(X[0].shape[2]) if theta0 is None else np.asarray(theta0, dtype=np.float64)

    def negative(theta):
        v, g = exact_log_likelihood(X, y, theta, alpha)
        return -v, -g

    res = minimize(negative, theta0, jac=True, method="L-BFGS-B", options={"gtol": tol, "ftol": 1e-14, "maxiter": 1000})
    return res.x, -float(res.fun)


# ----------------------------------------------------------------------------- double loop


def _bp_likelihood(X, phi, theta, alpha, messages, bp_tol, bp_max_iter, damping):
    value = float(theta @ phi) - alpha / 2 * float(theta @ theta)
    grad = phi - alpha * theta
    n_bp, all_ok = 0, True
    for x, msg in zip(X, messages):
        S = x @ theta
        tau, n_it, ok = bp_matching_marginals(S, damping=damping, max_iter=bp_max_iter, tol=bp_tol, messages=msg)
        n_bp += n_it
        all_ok &= ok
        value += bethe_free_energy(np.clip(tau, 1e-300, 1.0), S)[0]  # - log Z_Bethe = F(tau)
        grad -= np.einsum("ijk,ij->k", x, tau)
    return value, grad, n_bp, all_ok


def double_loop_bethe_mle(
    X, y, alpha=1.0, *, max_iter=200, tol=1e-6, step0=1.0, damping=0.5, bp_tol=1e-8, bp_max_iter=2000, callback=None
):
    """Bethe MLE by gradient ascent on ``theta`` with BP marginals of every example inside each step.

    Steps are backtracked (Armijo) from twice the last accepted step; BP messages are warm-started
    from the previous step. Stops when ``||grad|| <= tol * max(1, |L|)`` or after ``max_iter`` steps.

    Returns
    -------
    theta : ndarray of shape (n_features,)
    history : dict
        ``time``, ``value`` (Bethe regularised log-likelihood), ``theta``, ``bp_sweeps`` per accepted
        step and ``bp_failures`` (BP runs that hit ``bp_max_iter``).
    """
    X, y = check_matchings(X, y)
    start = time.perf_counter()
    phi = _true_features(X, y)
    theta = np.zeros(X[0].shape[2])
    messages = [(np.zeros(x.shape[:2]), np.zeros(x.shape[:2])) for x in X]
    value, grad, sweeps, ok = _bp_likelihood(X, phi, theta, alpha, messages, bp_tol, bp_max_iter, damping)
    history = {"time": [time.perf_counter() - start], "value": [value], "theta": [theta.copy()], "bp_sweeps": [sweeps]}
    failures = int(not ok)
    step = step0
    for _ in range(max_iter):
        if np.linalg.norm(grad) <= tol * max(1.0, abs(value)):
            break
        step *= 2.0
        while True:
            cand = theta + step * grad
            trial = [(l.copy(), r.copy()) for l, r in messages]
            v, g, sw, ok = _bp_likelihood(X, phi, cand, alpha, trial, bp_tol, bp_max_iter, damping)
            sweeps += sw
            failures += int(not ok)
            if v >= value + 1e-4 * step * float(grad @ grad) or step < 1e-12:
                break
            step *= 0.5
        theta, value, grad, messages = cand, v, g, trial
        history["time"].append(time.perf_counter() - start)
        history["value"].append(value)
        history["theta"].append(theta.copy())
        history["bp_sweeps"].append(sweeps)
        if callback is not None:
            callback(theta, value)
    history["bp_failures"] = failures
    return theta, history
