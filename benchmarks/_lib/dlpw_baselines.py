"""Baselines of the DLPW paper's Figure 1, on the same pairwise model code as :class:`DLPWClassifier`.

* :func:`pegasos_lp`: Pegasos where every step solves the loss-augmented LP relaxation of one sample
  to optimality with ``scipy.optimize.linprog`` (HiGHS) on the local polytope, and steps along the
  subgradient read from its (possibly fractional) optimal marginals.
* :func:`cutting_plane`: the 1-slack cutting-plane structured SVM (Joachims, Finley & Yu 2009; the
  LP-relaxed oracle of Finley & Joachims 2008): each iteration calls the same LP oracle on every
  sample, adds the aggregated most violated constraint, and re-solves the dual QP over the working
  set (a small dense QP: HiGHS's QP solver, or accelerated projected gradient, :func:`_solve_qp`).
* :func:`dlpw`: Algorithm 1 with the same callback protocol, for side-by-side timing.
* :class:`LabelPowerset`, :class:`ChainEnsemble`: the multi-label baselines a user compares against
  (``peers/bench_dlpw_multilabel.py``), on ``LogisticRegression``.

All three minimise eq. 7, ``1/2 ||w||^2 + C/n sum_m max_{mu in M_L} mu . theta_m(w)`` with the
normalised Hamming loss, and call ``callback(model, seconds)`` at checkpoints; the time spent in
the callback (objective evaluation) is excluded from ``seconds``. Used by the benchmarks
(``papers/bench_dlpw_figure1.py``, ``peers/bench_dlpw_multilabel.py``) and, as oracles, by the tests.
"""

import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.multioutput import ClassifierChain

from sklearn_struct._dlpw_model import loss_augmented
from sklearn_struct.oracles.lp import LocalPolytopeLP, lp_map, primal_values
from sklearn_struct.oracles.lp_learning import dlpw_epoch, pegasos_step

from .internals import _highspy, _Model

__all__ = ["pegasos_lp", "cutting_plane", "dlpw", "exact_objective", "LabelPowerset", "ChainEnsemble"]


class _Clock:
    """Training time with the callbacks' time taken out; stops at ``time_budget`` seconds."""

    def __init__(self, time_budget):
        self.budget = np.inf if time_budget is None else float(time_budget)
        self.seconds = 0.0
        self._start = time.perf_counter()

    def checkpoint(self, callback, model):
        self.seconds += time.perf_counter() - self._start
        stop = callback(model, self.seconds) if callback is not None else False
        self._start = time.perf_counter()
        return bool(stop) or self.seconds >= self.budget


def _one_hot_targets(Y, graph):
    S = graph.max_states
    node = np.zeros((Y.shape[0], graph.n_nodes, S))
    np.put_along_axis(node, Y[:, :, None], 1.0, axis=2)
    edge = np.zeros((Y.shape[0], graph.n_edges, S, S))
    e = np.arange(graph.n_edges)
    for m in range(Y.shape[0]):
        edge[m, e, Y[m, graph.edges[:, 0]], Y[m, graph.edges[:, 1]]] = 1.0
    return node, edge


def _sample_unary(model, Xa, m, y_m, loss_weight):
    W, P = model.weights()
    row = Xa[m]
    S = model.graph.max_states
    unary = np.asarray(row @ W).reshape(model.graph.n_nodes, S)
    unary = unary + loss_weight * (np.arange(S)[None, :] != y_m[:, None])
    return unary, P


def pegasos_lp(Xa, Y, graph, C, *, max_epochs=10, time_budget=None, checkpoint_every=None, callback=None,
               order="cyclic", random_state=0):
    """Pegasos with the loss-augmented LP solved exactly (HiGHS) at every step; returns ``(model, steps)``."""
    rng = np.random.RandomState(random_state)
    n = Y.shape[0]
    loss_weight = 1.0 / Y.shape[1]
    model = _Model(graph, Xa.shape[1])
    lp = LocalPolytopeLP(graph)
    node_t, edge_t = _one_hot_targets(Y, graph)
    every = checkpoint_every or n
    clock = _Clock(time_budget)
    t = 0
    for _ in range(max_epochs):
        for m in (rng.permutation(n) if order == "shuffle" else range(n)):
            unary, P = _sample_unary(model, Xa, m, Y[m], loss_weight)
            _, mu_n, mu_e = lp.solve(unary, P)
            lo, hi = Xa.indptr[m], Xa.indptr[m + 1]
            t += 1
            pegasos_step(t, C, Xa.indices[lo:hi], Xa.data[lo:hi], (mu_n - node_t[m]).ravel(), mu_e - edge_t[m],
                         model.V, model.P, model.state, check_input=False)
            if t % every == 0 and clock.checkpoint(callback, model):
                return model, t
    return model, t


def _solve_qp(G, b, C, alpha0, method="auto", max_iter=5000, tol=1e-9):
    """max_a b.a - 1/2 a' G a  s.t. a >= 0, sum(a) <= C; returns alpha.

    ``method="highs"``: HiGHS's active-set QP solver (``highspy``), used when installed;
    ``"fista"``: accelerated projected gradient (fallback).
    Stops when the duality gap of the 1-slack QP (primal ``1/2 a'Ga + C max(0, max_c (b - G a)_c)``)
    falls below ``tol`` times the dual value.
    """
    hs = _highspy()
    if method == "highs" or (method == "auto" and hs is not None):
        return _solve_qp_highs(hs, G, b, C)
    L = max(float(np.linalg.eigvalsh(G)[-1]), 1e-12)
    alpha = _project(alpha0, C)
    z, s = alpha.copy(), 1.0
    for it in range(max_iter):
        new = _project(z + (b - G @ z) / L, C)
        s_new = 0.5 * (1 + np.sqrt(1 + 4 * s * s))
        z = new + ((s - 1) / s_new) * (new - alpha)
        alpha, s = new, s_new
        if it % 10 == 0:
            Ga = G @ alpha
            dual = b @ alpha - 0.5 * alpha @ Ga
            primal = 0.5 * alpha @ Ga + C * max(0.0, float(np.max(b - Ga)))
            if primal - dual <= tol * max(1e-12, abs(dual)):
                break
    return alpha


def _solve_qp_highs(hs, G, b, C):
    K = len(b)
    h = hs.Highs()
    h.setOptionValue("output_flag", False)
    lp = hs.HighsLp()
    lp.num_col_, lp.num_row_ = K, 1
    lp.col_cost_ = -np.asarray(b, dtype=np.float64)
    lp.col_lower_, lp.col_upper_ = np.zeros(K), np.full(K, hs.kHighsInf)
    lp.row_lower_, lp.row_upper_ = np.array([-hs.kHighsInf]), np.array([float(C)])
    lp.a_matrix_.format_ = hs.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.arange(K + 1, dtype=np.int32)
    lp.a_matrix_.index_ = np.zeros(K, dtype=np.int32)
    lp.a_matrix_.value_ = np.ones(K)
    model = hs.HighsModel()
    model.lp_ = lp
    lower = sp.csc_matrix(np.tril(0.5 * (G + G.T)))
    hess = hs.HighsHessian()
    hess.dim_, hess.format_ = K, hs.HessianFormat.kTriangular
    hess.start_, hess.index_, hess.value_ = lower.indptr, lower.indices, lower.data
    model.hessian_ = hess
    h.passModel(model)
    h.run()
    if h.getModelStatus() != hs.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS QP failed: {h.modelStatusToString(h.getModelStatus())}")
    return np.maximum(np.asarray(h.getSolution().col_value), 0.0)


def _project(v, C):
    """Euclidean projection onto {a >= 0, sum(a) <= C}."""
    a = np.maximum(v, 0.0)
    if a.sum() <= C:
        return a
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - C
    k = np.nonzero(u - css / np.arange(1, len(u) + 1) > 0)[0][-1]
    return np.maximum(v - css[k] / (k + 1), 0.0)


def cutting_plane(Xa, Y, graph, C, *, max_iter=100, eps=1e-3, time_budget=None, callback=None):
    """1-slack cutting-plane structured SVM with the LP oracle; returns ``(model, history)``.

    ``history`` rows: iteration, seconds, eq. 7 objective at the iterate the oracle was called on
    (exact: every sample's LP is solved), working-set size, and the working-set QP optimum (a lower
    bound on the optimum of eq. 7). Stops when the new constraint is violated
    by at most ``eps`` times the objective, after ``max_iter`` iterations or at ``time_budget``.
    """
    n, loss_weight = Y.shape[0], 1.0 / Y.shape[1]
    model = _Model(graph, Xa.shape[1])
    lp = LocalPolytopeLP(graph)
    node_t, edge_t = _one_hot_targets(Y, graph)
    XT = Xa.T.tocsr()
    A, B, history = [], [], []
    alpha = np.zeros(0)
    clock = _Clock(time_budget)
    xi, lower = 0.0, 0.0
    for it in range(1, max_iter + 1):
        unary, P = loss_augmented(model, Xa, Y, loss_weight)
        mu_n = np.empty_like(unary)
        mu_e = np.empty((n,) + P.shape)
        values = np.empty(n)
        for m in range(n):
            values[m], mu_n[m], mu_e[m] = lp.solve(unary[m], P)
        truth = primal_values(graph, unary, P, Y, check_input=False)
        objective = 0.5 * model.sq_norm + C * float(np.mean(values - truth))
        # constraint: xi >= b - w.a with a = mean f(y_m) - f(mu_m), b = mean loss(mu_m)
        a_node = np.asarray(XT @ (node_t - mu_n).reshape(n, -1)) / n
        a = np.concatenate([a_node.ravel(), (edge_t - mu_e).mean(axis=0).ravel()])
        S = graph.max_states
        b = loss_weight * float(np.mean(np.sum(mu_n * (np.arange(S)[None, None, :] != Y[:, :, None]), axis=(1, 2))))
        W, Pw = model.weights()
        w = np.concatenate([W.ravel(), Pw.ravel()])
        violation = b - w @ a
        history.append((it, clock.seconds, objective, len(A), lower))
        if clock.checkpoint(callback, model):
            break
        if violation <= xi + eps * max(objective, 1e-12) / C:
            break
        A.append(a)
        B.append(b)
        Am = np.array(A)
        alpha = _solve_qp(Am @ Am.T, np.array(B), C, np.append(alpha, 0.0))
        w = alpha @ Am
        model.state[:] = (1.0, 0.0)
        model.V[:] = w[: model.V.size].reshape(model.V.shape)
        model.P[:] = w[model.V.size:].reshape(model.P.shape)
        model.refresh_norm()
        xi = max(0.0, float(np.max(np.array(B) - Am @ w)))
        lower = 0.5 * float(w @ w) + C * xi
    return model, np.array(history)


def dlpw(Xa, Y, graph, C, *, n_inner=10, max_epochs=100, time_budget=None, checkpoint_epochs=None, callback=None,
         dtype=np.float64):
    """Algorithm 1 (the kernel :class:`DLPWClassifier` runs), with checkpoints after the given epochs."""
    n, loss_weight = Y.shape[0], 1.0 / Y.shape[1]
    model = _Model(graph, Xa.shape[1])
    delta = np.zeros((n, 2 * graph.n_edges, graph.max_states), dtype=dtype)
    order = np.arange(n, dtype=np.int64)
    checkpoints = set(range(1, max_epochs + 1) if checkpoint_epochs is None else checkpoint_epochs)
    clock = _Clock(time_budget)
    t = 0
    for epoch in range(1, max_epochs + 1):
        t = dlpw_epoch(order, t, float(C), int(n_inner), loss_weight, Xa.indptr, Xa.indices, Xa.data, Y, model.V,
                       model.P, model.state, graph.edges, graph.n_states, graph.indptr, graph.slots, delta, check_input=False)
        if epoch in checkpoints or epoch == max_epochs:
            model.refresh_norm()
            if clock.checkpoint(callback, model):
                break
    return model, delta


def exact_objective(model, Xa, Y, C, *, method="star", warm=None, tol=1e-9):
    """Eq. 7 at the model's weights: each sample's LP by star updates to convergence or by HiGHS.

    ``warm`` (messages, updated in place) warm-starts the star updates between calls; the star
    dual converges to the LP value for binary labels (tested against HiGHS).
    """
    loss_weight = 1.0 / Y.shape[1]
    unary, P = loss_augmented(model, Xa, Y, loss_weight)
    truth = primal_values(model.graph, unary, P, Y, check_input=False)
    if method == "highs":
        lp = LocalPolytopeLP(model.graph)
        values = np.array([lp.solve(unary[m], P)[0] for m in range(Y.shape[0])])
    else:
        res = lp_map(model.graph, unary, P, warm, max_iter=100000, tol=tol, local_search=False, check_input=False)
        values = res.dual
    return 0.5 * model.sq_norm + C * float(np.mean(values - truth))


# ---------------------------------------------------------------------- multi-label baselines users pick


class LabelPowerset(ClassifierMixin, BaseEstimator):
    """Label powerset: one multi-class ``LogisticRegression`` over the label sets seen in training.

    Each distinct row of ``y`` is one class; prediction returns the row of the most probable class,
    so it never predicts a label set absent from the training data. Used by the benchmarks as the
    joint baseline a multi-label user would pick (scikit-multilearn's ``LabelPowerset``, written here).
    """

    def __init__(self, C=1.0, max_iter=2000):
        self.C = C
        self.max_iter = max_iter

    def fit(self, X, y):
        Y = np.asarray(y)
        self.sets_, codes = np.unique(Y, axis=0, return_inverse=True)
        codes = codes.ravel()
        self.classes_ = np.array([0, 1])
        if len(self.sets_) == 1:
            self._const = True
            return self
        self._const = False
        self.clf_ = LogisticRegression(C=self.C, max_iter=self.max_iter).fit(X, codes)
        return self

    def predict(self, X):
        if self._const:
            return np.repeat(self.sets_[:1], np.shape(X)[0], axis=0)
        return self.sets_[self.clf_.predict(X)]


class ChainEnsemble(ClassifierMixin, BaseEstimator):
    """``n_chains`` ``ClassifierChain(LogisticRegression(C))`` with random label orders, probabilities averaged.

    A label is predicted where the mean chain probability is at least 0.5 (the ensemble of
    classifier chains of Read et al. 2011, with scikit-learn's chain).
    """

    def __init__(self, C=1.0, n_chains=10, max_iter=2000, random_state=0):
        self.C = C
        self.n_chains = n_chains
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X, y):
        rng = np.random.RandomState(self.random_state)
        self.classes_ = np.array([0, 1])
        self.chains_ = [ClassifierChain(LogisticRegression(C=self.C, max_iter=self.max_iter), order="random",
                                        random_state=int(rng.randint(2**31 - 1))).fit(X, y)
                        for _ in range(self.n_chains)]
        return self

    def predict(self, X):
        proba = np.mean([c.predict_proba(X) for c in self.chains_], axis=0)
        return (proba >= 0.5).astype(np.int64)
