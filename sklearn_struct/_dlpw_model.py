"""The pairwise model of :class:`~sklearn_struct.DLPWClassifier` and its training objectives.

``_Model`` holds the scaled weights the Pegasos steps update; ``objective_eq9`` is the paper's eq. 9 bound with
the stored dual messages (eq. 7 exactly on a forest), ``objective_eq7`` eq. 7 with every sample's LP solved.
"""

import numpy as np
import scipy.sparse as sp

from .oracles._lp_fast import _fast_epoch, _tree_hinge_batch
from .oracles.lp import dual_values, lp_map, primal_values

__all__ = ["loss_augmented", "objective_eq7", "objective_eq9"]


class _Model:
    """Scaled weights ``w = state[0] * (V, P)`` of a pairwise model (see oracles.lp_learning)."""

    def __init__(self, graph, n_features, edge_features=False):
        S = graph.max_states
        self.graph = graph
        self.V = np.zeros((n_features, graph.n_nodes * S + (graph.n_edges * S * S if edge_features else 0)))
        self.P = np.zeros((graph.n_edges, S, S))
        self.state = np.array([1.0, 0.0])

    def refresh_norm(self):
        self.state[1] = float(np.vdot(self.V, self.V) + np.vdot(self.P, self.P))

    def averaged(self, sum_W, sum_P, n_steps):
        """The model whose weights are ``(sum_W, sum_P) / n_steps`` (an epoch's averaged iterate)."""
        avg = _Model(self.graph, self.V.shape[0], self.V.shape[1] > self.graph.n_nodes * self.graph.max_states)
        avg.V, avg.P = sum_W / n_steps, sum_P / n_steps
        avg.refresh_norm()
        return avg

    @property
    def sq_norm(self):
        return self.state[0] ** 2 * (np.vdot(self.V, self.V) + np.vdot(self.P, self.P))

    def weights(self):
        return self.state[0] * self.V, self.state[0] * self.P


def _augment(X, fit_intercept):
    X = sp.csr_matrix(X, dtype=np.float64)
    if fit_intercept:
        X = sp.hstack([X, np.ones((X.shape[0], 1))], format="csr")
    X.sort_indices()
    return X


def _unary(Xa, W, graph):
    W = W[:, : graph.n_nodes * graph.max_states]  # without the edge-feature columns, if any
    return np.ascontiguousarray(np.asarray(Xa @ W).reshape(Xa.shape[0], graph.n_nodes, graph.max_states))


def _edge_unary(Xa, W, graph):
    """The input-dependent edge potentials ``(n, n_edges, S, S)`` (``edge_features=True``), else None."""
    S, nS = graph.max_states, graph.n_nodes * graph.max_states
    if W.shape[1] == nS:
        return None
    return np.asarray(Xa @ W[:, nS:]).reshape(Xa.shape[0], graph.n_edges, S, S)


def loss_augmented(model, Xa, Y, loss_weight):
    """Loss-augmented unary potentials ``(n, n_nodes, S)`` and edge tables at the current weights."""
    W, P = model.weights()
    unary = _unary(Xa, W, model.graph)
    S = model.graph.max_states
    unary += loss_weight * (np.arange(S)[None, None, :] != Y[:, :, None])
    return unary, P


def objective_eq9(model, Xa, Y, delta, C, loss_weight, forest=None):
    """Eq. 9 with the current messages: ``1/2 ||w||^2 + C/n sum_m [g(delta_m) - score_m(y_m)]`` (>= eq. 7);
    on a forest (``forest``: its :func:`~sklearn_struct.oracles._lp_fast.forest_schedule`), eq. 7 exactly."""
    if forest is not None:
        W, P = model.weights()
        hinge = np.empty(Xa.shape[0])
        _tree_hinge_batch(Xa.indptr, Xa.indices, Xa.data, np.ascontiguousarray(W), np.ascontiguousarray(P), Y,
                          loss_weight, model.graph.n_states, model.graph.edges, *forest, hinge)
        return 0.5 * model.sq_norm + C * float(np.mean(hinge))
    unary, P = loss_augmented(model, Xa, Y, loss_weight)
    g = dual_values(model.graph, unary, P, np.ascontiguousarray(delta), check_input=False)
    truth = primal_values(model.graph, unary, P, Y, check_input=False)
    return 0.5 * model.sq_norm + C * float(np.mean(g - truth))


def _epoch(order, t, C, n_inner, loss_weight, Xa, Y, model, g, delta, forest, sums):
    """One epoch of Algorithm 1 by the sparse-step kernel (exact tree MAP if ``forest``); returns the step count."""
    tree = forest if forest is not None else (np.zeros(0, dtype=np.int64),) * 4
    sum_W, sum_P = sums if sums is not None else (np.zeros((0, 0)), np.zeros((0, 0, 0)))
    return _fast_epoch(order.astype(np.int64), t, C, n_inner, loss_weight, Xa.indptr, Xa.indices, Xa.data, Y,
                       model.V, model.P, model.state, g.edges, g.n_states, g.indptr, g.slots, delta, *tree,
                       sum_W, sum_P)


def objective_eq7(model, Xa, Y, delta, C, loss_weight, tol=1e-7, max_iter=5000):
    """Eq. 7: the per-sample LP solved by star updates to convergence (warm start from a copy of ``delta``)."""
    unary, P = loss_augmented(model, Xa, Y, loss_weight)
    start = np.array(delta, dtype=np.float64)
    res = lp_map(model.graph, unary, P, start, max_iter=max_iter, tol=tol, local_search=False, check_input=False)
    truth = primal_values(model.graph, unary, P, Y, check_input=False)
    return 0.5 * model.sq_norm + C * float(np.mean(res.dual - truth))
