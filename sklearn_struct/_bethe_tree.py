"""Non-local inference by Bethe projections on tree-structured MRFs (Vilnis et al. 2015, Algorithm 1).

The Bethe entropy is exact on trees, so eq. 2,

    mu* = argmin_{mu in M(tree)}  -H_B(mu) - <theta, mu> + L_psi(mu),

is solved by the same Bethe-RDA as on chains (:mod:`sklearn_struct._bethe_inference`),
with the chain's forward-backward replaced by sum-product belief propagation on the tree,
which is exact there (:func:`sklearn_struct.oracles.loopy.loopy_bp`, messages warm-started
from the previous oracle call). A tree of ``n`` nodes has ``n - 1`` edges, so its edge
marginals ``(n - 1, L, L)`` (``[e, a, b]`` for ``y_u = a, y_v = b`` with ``(u, v) = edges[e]``)
have the layout the energies expect for one sequence; an energy's "transitions" are then the
label pairs of the tree's edges, and "first" / "last" positions are nodes 0 and ``n - 1``.
"""

import numbers

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from sklearn.utils import Bunch

from .oracles.loopy import check_pairwise_graph, loopy_bp

__all__ = ["bethe_inference_tree"]


def _check_tree(edges, n_nodes):
    if edges.shape[0] != n_nodes - 1:
        raise ValueError(f"edges: a tree on {n_nodes} nodes has {n_nodes - 1} edges, got {edges.shape[0]}.")
    if n_nodes > 1:
        adj = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n_nodes, n_nodes))
        n_comp, _ = connected_components(adj, directed=False)
        if n_comp != 1:
            raise ValueError(f"edges: the graph has {n_comp} connected components; a tree has one.")


def bethe_inference_tree(unary, edges, pairwise, energy, psi=1.0, *, max_iter=40, tol=1e-4, bp_tol=1e-12,
                         energy_index=None):
    """Marginals and MAP of one tree-structured MRF under a non-local energy (Bethe-RDA, beta = 0).

    Parameters
    ----------
    unary : ndarray of shape (n_nodes, n_labels)
        Node log-potentials ``theta``.
    edges : array-like of int of shape (n_nodes - 1, 2)
        The tree's edges ``(u, v)``.
    pairwise : ndarray of shape (n_labels, n_labels) or (n_nodes - 1, n_labels, n_labels)
        Edge log-potentials ``[a, b]`` for ``y_u = a, y_v = b``.
    energy : Energy
        A fitted energy (:mod:`sklearn_struct.energies`, :mod:`sklearn_struct.constraints`).
    psi : float or ndarray of shape (n_weights,), default=1.0
        Non-negative energy weights.
    max_iter : int, default=40
        Cap on RDA iterations (oracle calls after ``mu_0``).
    tol : float, default=1e-4
        Stop when no node marginal changes by more than ``tol``.
    bp_tol : float, default=1e-12
        Message tolerance of the BP oracle (exact on trees once converged).
    energy_index : int, default=None
        Which of the energy's own sequences this tree is (energies holding per-sequence data).

    Returns
    -------
    result : Bunch with ``node`` (n_nodes, n_labels), ``edge`` (n_nodes - 1, n_labels, n_labels),
        ``dual_unary`` and ``dual_pairwise`` (the MRF ``theta_t`` of Prop. 1), ``labels`` (its MAP
        by max-product), ``n_iter`` and ``converged``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.constraints import AtMostTokens, ConstraintEnergy
    >>> energy = ConstraintEnergy([AtMostTokens(1, 1)]).fit(None, 2)  # at most one node labelled 1
    >>> unary = np.array([[0.0, 1.0]] * 4)  # every node prefers label 1
    >>> res = bethe_inference_tree(unary, [[0, 1], [0, 2], [0, 3]], np.zeros((2, 2)), energy, psi=5.0)
    >>> bool(res.node[:, 1].sum() < 4 * 0.73)  # less mass on label 1 than the base model's 0.73 per node
    True
    """
    unary, edges, pairwise = check_pairwise_graph(unary, edges, pairwise)
    n, L = unary.shape
    _check_tree(edges, n)
    if not (isinstance(max_iter, numbers.Integral) and max_iter >= 0):
        raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}.")
    E = edges.shape[0]
    pair = np.broadcast_to(pairwise, (E, L, L)) if pairwise.shape[0] == 1 else pairwise
    K = energy.n_weights
    psi = np.broadcast_to(np.asarray(psi, dtype=np.float64).reshape(-1), (K,)).reshape(1, K)
    if np.any(psi < 0) or not np.all(np.isfinite(psi)):
        raise ValueError("psi must be finite and >= 0.")
    offsets = np.array([0, n])
    index = None if energy_index is None else np.array([energy_index])
    energy.check_batch(offsets, L, index=index)
    uses_edges = bool(energy.uses_edges)

    def oracle(un, pw, init):
        res = loopy_bp(un, edges, pw, edge_marginals=True, max_iter=10 * n + 10, tol=bp_tol,
                       init_messages=init, check_input=False)
        return res.node_marginals, res.edge_marginals, res.log_messages

    node, edge, msgs = oracle(unary, pair, None)
    g_node, g_edge = np.zeros((n, L)), np.zeros((E, L, L))
    dual_unary, dual_pair = unary, pair
    n_iter, converged = 0, False
    for t in range(1, max_iter + 1):
        gn, ge = energy.gradient(node, edge if uses_edges else None, offsets, psi, index=index)
        g_node += gn
        if ge is not None:
            g_edge += ge
        dual_unary = unary - g_node / t
        dual_pair = pair - g_edge / t if uses_edges else pair
        new_node, edge, msgs = oracle(dual_unary, dual_pair, msgs)
        delta = np.max(np.abs(new_node - node))
        node, n_iter = new_node, t
        if delta < tol:
            converged = True
            break
    labels = np.argmax(loopy_bp(dual_unary, edges, dual_pair, mode="max", max_iter=10 * n + 10, tol=bp_tol,
                                check_input=False).node_marginals, axis=1)
    return Bunch(node=node, edge=edge, dual_unary=dual_unary, dual_pairwise=dual_pair, labels=labels,
                 n_iter=n_iter, converged=converged)
