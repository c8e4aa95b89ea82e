"""DLPW with the subset (0/1) loss through the loss-augmented LP (``DLPWClassifier(loss="subset", label_sets="all")``).

The loss-augmented MAP ``max_y score(y) + [y != y*]`` is the MAP of a pairwise model: the label graph
plus a witness node joined to every label (:mod:`sklearn_struct.oracles._lp_subset`). Its local
polytope relaxes the loss to ``min(1, sum_i mu_i(wrong))``, and Algorithm 1 runs on its dual unchanged:
per sample, ``n_inner`` star passes (the witness, then each label) on the stored messages, then a
Pegasos step. The witness adds one message of ``S`` entries per label and sample. On an acyclic label
graph the loss-augmented MAP is solved exactly instead (max-product over (state, differs-from-``y*``)
pairs, :func:`~sklearn_struct.oracles._lp_subset.subset_tree_map`) and no messages are stored.
"""

import numpy as np

from .oracles.lp import primal_values
from .oracles._lp_subset import subset_dual_values, subset_epoch, subset_lp, subset_tree_epoch, subset_tree_map

__all__ = ["uses_witness", "n_witness_messages", "witness_epoch", "witness_objective"]


def uses_witness(est):
    """Whether ``est`` trains the subset loss by DLPW with dual messages (not exactly over the training sets):
    its decoding (``label_sets_mode_``, set by ``fit`` before training) is over every labelling."""
    return est.loss == "subset" and est.label_sets_mode_ == "all" and not est.edge_features


def n_witness_messages(graph):
    """Message rows per sample: the label graph's ``2 n_edges`` and one witness message per label."""
    return 2 * graph.n_edges + graph.n_nodes


def witness_epoch(order, t, C, n_inner, Xa, Y, model, delta, sums, forest=None):
    """One epoch of Algorithm 1 with the subset loss (exact on a ``forest``); returns the new step count."""
    sum_W, sum_P = sums if sums is not None else (None, None)
    if forest is not None:
        return subset_tree_epoch(order.astype(np.int64), t, C, Xa.indptr, Xa.indices, Xa.data, Y, model.V, model.P,
                                 model.state, model.graph, forest, sum_W, sum_P)
    return subset_epoch(order.astype(np.int64), t, C, int(n_inner), 1.0, Xa.indptr, Xa.indices, Xa.data, Y,
                        model.V, model.P, model.state, model.graph, delta, sum_W, sum_P)


def witness_objective(model, unary, Y, delta, C, exact=False, tol=1e-9, max_iter=5000, forest=None):
    """``1/2 ||w||^2 + C/n sum_m [g_m - score_m(y_m)]``: eq. 9 with the messages ``delta`` (an upper bound on eq. 7),
    or with ``exact`` eq. 7 itself (each sample's LP by passes to convergence from a copy of its messages).

    ``unary`` ``(n, n_labels, S)``: the scores ``x . w_i[s]`` under ``model``'s weights (no loss term). On a
    ``forest`` (its schedule), eq. 7 exactly by max-product (``delta`` unused)."""
    P = model.weights()[1]
    g = model.graph
    if forest is not None:
        dual = subset_tree_map(g, unary, P, Y, forest)[1]
    elif exact:
        dual = subset_lp(g, unary, P, Y, np.array(delta, dtype=np.float64), max_iter=max_iter, tol=tol)[1]
    else:
        dual = subset_dual_values(g, unary, P, Y, delta)
    truth = primal_values(g, unary, P, Y, check_input=False)
    return 0.5 * model.sq_norm + C * float(np.mean(dual - truth))
