"""MLE-Struct for bipartite matchings: rho-Bethe maximum likelihood by Frank-Wolfe over assignment calls.

Tang, Ruozzi, Belanger & Jebara (2016), "Bethe Learning of Graphical Models via MAP Decoding", AISTATS.

Model (App. D): ``p(Y | G; theta) ∝ exp(sum_k theta_k <G_k, Y>)`` over assignments ``Y`` of the
``n_left`` left nodes to distinct right nodes, ``(G_k)_ij`` the k-th pair feature. Maximum likelihood
with ``log Z`` replaced by the rho-reweighted Bethe approximation ``log Z_rho = -min_tau F_rho(tau)``
is a saddle point; eliminating ``theta`` in closed form gives the convex dual over pseudo-marginals
(App. D form; eqs. 3 and 6 print it with typos, see the brief)::

    h(tau) = 1/(2 alpha) ||a(tau)||^2 - sum_m H_rho(tau^m),   a(tau) = sum_m G^(m)T (y^m - tau^m)
    theta*(tau) = a(tau) / alpha

with ``tau^m`` row-stochastic, column-substochastic. ``grad_m h = -G^(m) theta* + grad(-H_rho)(tau^m)``,
so one Frank-Wolfe step is one assignment problem per example (the LMO), no inner inference loop.
``a`` is kept up to date (``a += eta G^T (tau^m - s^m)``), so a step costs two matrix-vector products
with ``G^(m)`` plus the assignment (bcfw: one, ``G^(m)T tau^m`` being cached per block; a whole pass
is one compiled call, see ``oracles/_matching_fw.py``). The exact line search minimises
``||a + eta b||^2 / (2 alpha) - H(tau + eta d)`` (App. D.2, "(1 - tau)" read as "(1 - eta)") by
safeguarded Newton on its slope, the step capped at 1/2 (see ``_MAX_STEP``). The FW duality gap ``<tau - s, grad h(tau)> >= h(tau) - h*``
is the stopping rule.
"""

import numbers
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .metrics import matching_error
from .oracles._matching_fw import bcfw_pass, bcfw_state
from .oracles.matching import (
    assignment,
    batched_assignment,
    fw_bethe_marginals,
    packed_bisect_step,
    packed_neg_entropy,
    packed_neg_entropy_grad,
)
from .utils._proba import MarginalsAsProbaMixin
from .utils._params import atomic_fit, shared_constraints, store_init_params
from .utils.progress import Progress
from .utils.validation import check_matchings

__all__ = ["MLEStructMatcher"]

_N_BISECT = 60
# Largest line-search step. A step of (nearly) 1 puts a block at (nearly) a vertex, where the
# entropy's curvature is unbounded and FW only slowly mixes other vertices back in (the brief's
# "keep gamma < 1"); on 30-node problems a cap of 1/2 halves the passes needed (see tests).
_MAX_STEP = 0.5


class _LinearMatcherMixin:
    """Prediction of a matcher whose pair scores are linear in the features (``X[m] @ coef_``):
    the maximum-score assignment, its node accuracy as ``score`` and the scikit-learn tags of
    matching data. Shared with the structured-SVM baseline."""

    def decision_function(self, X):
        """Learned pair scores ``X[m] @ coef_``: a list of ``(n_left, n_right)`` arrays."""
        check_is_fitted(self)
        X = check_matchings(X, n_features=self.n_features_in_)
        return [x @ self.coef_ for x in X]

    def predict(self, X):
        """Most probable assignment of every example (the maximum-score assignment).

        Returns
        -------
        y : list of ndarray of shape (n_left,), int
        """
        return [assignment(-s) for s in self.decision_function(X)]

    def score(self, X, y):
        """``1 - matching_error(y, predict(X))``: the fraction of correctly matched left nodes."""
        return 1.0 - matching_error(y, self.predict(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.three_d_array = True
        tags.target_tags.required = True
        return tags


class MLEStructMatcher(MarginalsAsProbaMixin, _LinearMatcherMixin, BaseEstimator):
    """Matching model learned by rho-Bethe maximum likelihood with (block-coordinate) Frank-Wolfe.

    Learns the weights ``coef_`` of ``p(y | X) ∝ exp(sum_i <coef_, X[i, y[i]]>)`` over assignments
    ``y`` of the left nodes to distinct right nodes, maximising the training log-likelihood with the
    partition function replaced by its rho-reweighted Bethe approximation, minus
    ``alpha / 2 ||coef_||^2``. The convex dual over pseudo-marginals is minimised by Frank-Wolfe, one
    assignment problem (shortest augmenting paths, warm-started from the example's last duals) per
    example and step; the
    weights are the closed-form ``coef_ = sum_m G_m^T (y_m - tau_m) / alpha`` (Tang et al. 2016).

    Parameters
    ----------
    alpha : float > 0, default=1.0
        L2 regularisation (the paper's lambda).
    rho : float in [0, 1], default=1.0
        Entropy reweighting: 1 is the Bethe approximation (``Z_Bethe <= Z``), 0.5 the concave
        ``-sum tau log tau`` (an upper bound on ``Z``).
    solver : {"bcfw", "fw"}, default="bcfw"
        Block-coordinate FW (one random example per step) or batch FW (all examples per step).
    step : {"line", "decreasing"}, default="line"
        Exact line search (capped at 1/2 so that no block jumps next to a vertex), or ``2 / (t + 2)`` (fw) / ``2M / (2M + t)`` (bcfw), ``t`` from 1 so that
        iterates stay strictly inside the polytope.
    max_iter : int, default=1000
        Maximum number of passes over the data (a bcfw pass is ``n_samples`` block steps). Frank-Wolfe
        converges as ``O(1/t)``: fits usually stop on ``tol`` well before this bound.
    tol : float >= 0, default=1e-2
        Stop when the duality gap divided by the number of left nodes in the training set is below
        ``tol`` (on the CMU house and hotel landmarks the predictions at 1e-2 and at 1e-3 are the
        same, and 1e-2 is reached in about 650 passes). For bcfw the sum of the blocks' last gaps is checked after each pass and, when below
        the threshold, confirmed by an exact gap (one assignment per example). ``tol=0`` runs all
        ``max_iter`` passes, without a convergence warning.
    random_state : int, RandomState instance or None, default=None
        Block order of bcfw.
    n_jobs : int, default=None
        Parallel assignment problems (joblib) in the batch passes of ``solver="fw"`` (bcfw steps run
        one after another in a compiled loop).
    callback : callable or None, default=None
        Called after every pass as ``callback(pass, dual_objective, seconds)`` (the entries of
        ``objective_curve_`` and ``time_curve_``); returning True stops the solver there (no
        convergence warning is raised then).
    verbose : int, default=0
        Print one line per pass: dual objective, duality gap per left node, elapsed seconds.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    n_features_in_ : int
    n_iter_ : int
        Passes run.
    gap_curve_ : ndarray of shape (``n_iter_ + 1``,)
        Duality gap (bcfw: the block-gap estimate, exact where it was checked) before each pass.
    objective_curve_ : ndarray of shape (``n_iter_ + 1``,)
        Dual objective ``h(tau)`` before each pass. It decreases to
        ``min h = max_theta [sum_m (<theta, phi(y_m)> - log Z_rho,m(theta)) - alpha/2 ||theta||^2]``,
        the maximised regularised approximate log-likelihood.
    time_curve_ : ndarray of shape (``n_iter_ + 1``,)
        Seconds since the start of the solver.
    coef_path_ : ndarray of shape (``n_iter_ + 1``, n_features)
        ``coef`` before each pass (the last row is ``coef_``).
    converged_ : bool

    See Also
    --------
    sklearn_struct.oracles.matching.fw_bethe_marginals : the test-time inference.

    References
    ----------
    K. Tang, N. Ruozzi, D. Belanger, T. Jebara. Bethe Learning of Graphical Models via MAP Decoding.
    AISTATS 2016.

    Examples
    --------
    >>> from sklearn_struct import MLEStructMatcher
    >>> from sklearn_struct.datasets import make_matchings
    >>> X, y = make_matchings(n_samples=20, n_nodes=6, n_features=3, noise=0.3, random_state=0)
    >>> est = MLEStructMatcher(alpha=0.1, random_state=0).fit(X[:15], y[:15])
    >>> est.score(X[15:], y[15:]) > 0.8
    True
    >>> est.predict_marginals(X[15:16])[0].sum(axis=1).round(6)
    array([1., 1., 1., 1., 1., 1.])
    """

    _parameter_constraints = {
        "alpha": [Interval(numbers.Real, 0, None, closed="neither")],
        "rho": [Interval(numbers.Real, 0, 1, closed="both")],
        "solver": [StrOptions({"fw", "bcfw"})],
        "step": [StrOptions({"line", "decreasing"})],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        **shared_constraints("random_state", "n_jobs", "callback", "verbose"),
    }

    def __init__(self, *, alpha=1.0, rho=1.0, solver="bcfw", step="line", max_iter=1000, tol=1e-2, random_state=None,
                 n_jobs=None, callback=None, verbose=0):
        store_init_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Learn ``coef_`` from pair features and true assignments.

        Parameters
        ----------
        X : list of ndarray of shape (n_left, n_right, n_features)
            Pair features, ``n_left <= n_right`` (sizes may differ between examples).
        y : list of ndarray of shape (n_left,), int
            ``y[m][i] = j``: left node ``i`` of example ``m`` matches right node ``j``.

        Returns
        -------
        self
        """
        X, y = check_matchings(X, y)
        problem = _DualProblem(X, y, float(self.alpha), float(self.rho))
        solve = _solve_bcfw if self.solver == "bcfw" else _solve_fw
        progress = Progress(type(self).__name__, self.verbose, self.callback, unit="pass", objective="dual objective")
        run = solve(problem, self, check_random_state(self.random_state), progress)
        self.coef_ = problem.theta()
        self.n_features_in_ = X[0].shape[2]
        self.n_iter_ = run["n_iter"]
        self.gap_curve_ = np.asarray(run["gaps"])
        self.objective_curve_ = np.asarray(run["objectives"])
        self.time_curve_ = np.asarray(run["times"])
        self.coef_path_ = np.asarray(run["thetas"])
        self.converged_ = run["converged"]
        if not self.converged_ and not progress.stopped and self.tol > 0:
            warnings.warn(
                f"MLEStructMatcher did not reach tol={self.tol} in {self.max_iter} passes "
                f"(gap per node {self.gap_curve_[-1] / problem.n_nodes:.3g}).",
                ConvergenceWarning,
            )
        return self

    def predict_marginals(self, X, *, max_iter=1000, tol=1e-8):
        """rho-Bethe edge marginals of the learned model, by Frank-Wolfe on ``F_rho`` (line search).

        Parameters
        ----------
        X : list of ndarray of shape (n_left, n_right, n_features)
        max_iter : int, default=1000
        tol : float, default=1e-8
            Duality-gap threshold of the inference.

        Returns
        -------
        marginals : list of ndarray of shape (n_left, n_right)
            Rows sum to 1, columns to at most 1 (exactly 1 for square problems).
        """
        return [fw_bethe_marginals(s, self.rho, max_iter=max_iter, tol=tol)[0] for s in self.decision_function(X)]


# ----------------------------------------------------------------------------- the dual problem


class _DualProblem:
    """Packed data and state of the dual: ``tau``, ``a = sum_m G_m^T (y_m - tau_m)``."""

    def __init__(self, X, y, alpha, rho):
        self.alpha, self.rho = alpha, rho
        self.shapes = np.array([x.shape[:2] for x in X], dtype=np.int64)
        sizes = self.shapes[:, 0] * self.shapes[:, 1]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.G = np.concatenate([x.reshape(-1, x.shape[2]) for x in X])
        self.y_ind = np.zeros(len(self.G))
        for m, a in enumerate(y):
            self.y_ind[self.offsets[m] + np.arange(len(a)) * self.shapes[m, 1] + a] = 1.0
        self.tau = np.concatenate([np.full(n, 1.0 / self.shapes[m, 1]) for m, n in enumerate(sizes)])
        self.a = self.G.T @ (self.y_ind - self.tau)
        self.n_samples = len(X)
        self.n_nodes = int(self.shapes[:, 0].sum())
        self._grad = np.empty_like(self.tau)

    def theta(self):
        return self.a / self.alpha

    def objective(self):
        return float(self.a @ self.a) / (2 * self.alpha) + packed_neg_entropy(self.tau, self.offsets, self.shapes, self.rho)

    def block(self, m):
        return slice(self.offsets[m], self.offsets[m + 1]), (int(self.shapes[m, 0]), int(self.shapes[m, 1]))

    def full_gradient(self):
        packed_neg_entropy_grad(self.tau, self.offsets, self.shapes, self.rho, self._grad)
        self._grad -= self.G @ self.theta()
        return self._grad

    def vertex(self, m, assignment_m):
        sl, (n_left, n_right) = self.block(m)
        s = np.zeros(n_left * n_right)
        s[np.arange(n_left) * n_right + assignment_m] = 1.0
        return s

    def batch_lmo(self, n_jobs):
        """Gradient, FW direction ``d = s - tau`` (packed) and per-example gaps."""
        grad = self.full_gradient()
        costs = [grad[self.block(m)[0]].reshape(self.block(m)[1]) for m in range(self.n_samples)]
        assignments = batched_assignment(costs, n_jobs=n_jobs, check_input=False)
        d = np.concatenate([self.vertex(m, a) for m, a in enumerate(assignments)]) - self.tau
        gaps = -np.add.reduceat(d * grad, self.offsets[:-1])
        return d, gaps


def _solve_fw(p, est, rng, progress):
    """Batch Frank-Wolfe: all examples' assignments per step, exact line search or 2/(t+2)."""
    start = time.perf_counter()
    gaps, objectives, times, thetas = [], [], [], []
    threshold = est.tol * p.n_nodes
    converged = False
    for t in range(1, est.max_iter + 2):
        d, block_gaps = p.batch_lmo(est.n_jobs)
        gap = float(block_gaps.sum())
        gaps.append(gap), objectives.append(p.objective()), times.append(time.perf_counter() - start)
        thetas.append(p.theta())
        stop = progress(t - 1, objectives[-1], times[-1], gap_per_node=gap / p.n_nodes)
        if gap <= threshold:
            converged = True
            break
        if t > est.max_iter or stop:
            break
        b = -(p.G.T @ d)
        if est.step == "line":
            lin, quad = float(p.a @ b) / p.alpha, float(b @ b) / p.alpha
            eta = min(_MAX_STEP, packed_bisect_step(p.tau, d, p.offsets, p.shapes, p.rho, lin, quad, _N_BISECT))
        else:
            eta = 2.0 / (t + 2.0)
        p.tau += eta * d
        p.a += eta * b
    return {"n_iter": len(gaps) - 1, "gaps": gaps, "objectives": objectives, "times": times, "thetas": thetas,
            "converged": converged}


def _solve_bcfw(p, est, rng, progress):
    """Block-coordinate FW (Lacoste-Julien et al. 2013): one uniformly drawn example per step, a pass of
    ``n_samples`` steps per compiled call (:func:`~sklearn_struct.oracles._matching_fw.bcfw_pass`)."""
    start = time.perf_counter()
    threshold = est.tol * p.n_nodes
    caches = bcfw_state(p.G, p.tau, p.offsets, p.shapes, p.rho)  # log tau, log(1 - tau), -H_rho, ...
    block_gaps = np.zeros(p.n_samples)

    def bcfw_pass_(order, k, gaps_only):
        bad = bcfw_pass(p.G, p.tau, p.a, p.offsets, p.shapes, order, p.alpha, p.rho, est.step == "line", k,
                        _MAX_STEP, _N_BISECT, gaps_only, block_gaps, *caches)
        if bad >= 0:
            raise ValueError(f"assignment: the matching scores are not finite (they overflow float64) at sample "
                             f"{bad}; rescale the pair features X or the weights.")

    every = np.arange(p.n_samples)
    bcfw_pass_(every, 0, True)  # exact gaps of the uniform start
    gaps = [float(block_gaps.sum())]
    objective = lambda: float(p.a @ p.a) / (2 * p.alpha) + float(caches[2].sum())  # noqa: E731
    objectives, times, thetas = [objective()], [time.perf_counter() - start], [p.theta()]
    converged, k = gaps[0] <= threshold, 0
    n_pass = 0
    while not converged and n_pass < est.max_iter:
        bcfw_pass_(rng.randint(p.n_samples, size=p.n_samples), k, False)
        k += p.n_samples
        n_pass += 1
        gap = float(block_gaps.sum())
        if gap <= threshold:  # confirm the stale estimate by an exact gap
            bcfw_pass_(every, k, True)
            gap = float(block_gaps.sum())
            converged = gap <= threshold
        gaps.append(gap), objectives.append(objective()), times.append(time.perf_counter() - start)
        thetas.append(p.theta())
        if progress(n_pass, objectives[-1], times[-1], gap_per_node=gap / p.n_nodes):
            break
    return {"n_iter": n_pass, "gaps": gaps, "objectives": objectives, "times": times, "thetas": thetas,
            "converged": converged}
