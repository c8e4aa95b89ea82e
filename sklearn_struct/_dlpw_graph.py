"""Sparse label graphs for :class:`~sklearn_struct.DLPWClassifier` learned from the training labels.

``edges="tree"``: the Chow-Liu tree, the maximum spanning tree of the labels' pairwise empirical
mutual information (the best tree-structured approximation of their joint distribution in KL);
``edges=k``: the ``k`` pairs of largest mutual information. Both keep the number of edges (so the
messages, the tables and the cost of an epoch) linear in the number of labels, against
``L (L - 1) / 2`` for the complete graph.
"""

import numpy as np

__all__ = ["label_mutual_information", "chow_liu_edges", "top_k_edges"]


def label_mutual_information(Y, n_states=None):
    """Pairwise empirical mutual information (nats) of the columns of ``Y`` (integer codes ``0..S-1``).

    Joint counts come from one matrix product of the one-hot codes, ``O(n (L S)^2)``.

    Parameters
    ----------
    Y : ndarray of shape (n_samples, n_labels), int
    n_states : ndarray of shape (n_labels,), optional
        States per column (default: ``Y.max(axis=0) + 1``).

    Returns
    -------
    mi : ndarray of shape (n_labels, n_labels)
        Symmetric, zero diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[0, 0, 1], [1, 1, 0], [0, 0, 0], [1, 1, 1]])
    >>> np.round(label_mutual_information(Y), 3).tolist()
    [[0.0, 0.693, 0.0], [0.693, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    Y = np.asarray(Y, dtype=np.int64)
    n, L = Y.shape
    S = int(Y.max()) + 1 if n_states is None else int(np.max(n_states))
    onehot = np.zeros((n, L * S))
    onehot[np.repeat(np.arange(n), L), (np.arange(L) * S + Y).ravel()] = 1.0
    joint = (onehot.T @ onehot / n).reshape(L, S, L, S)  # p(y_i = a, y_j = b)
    p = onehot.mean(axis=0).reshape(L, S)
    outer = p[:, :, None, None] * p[None, None, :, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * np.log(joint / np.where(outer > 0, outer, 1.0)), 0.0)
    mi = terms.sum(axis=(1, 3))
    mi = np.maximum(0.5 * (mi + mi.T), 0.0)  # exactly symmetric (the two sums round apart)
    np.fill_diagonal(mi, 0.0)
    return mi


def chow_liu_edges(mi):
    """Maximum spanning tree of the weights ``mi`` (Prim's algorithm, ``O(L^2)``); edges ``(i, j)``, ``i < j``.

    Every pair is a candidate (zero weights included), so the tree always spans all ``L`` labels
    with ``L - 1`` edges. Ties go to the lower label index.

    Examples
    --------
    >>> import numpy as np
    >>> chow_liu_edges(np.array([[0, 3, 1], [3, 0, 2], [1, 2, 0]])).tolist()
    [[0, 1], [1, 2]]
    """
    mi = np.asarray(mi, dtype=np.float64)
    L = mi.shape[0]
    if L < 2:
        return np.zeros((0, 2), dtype=np.int64)
    in_tree = np.zeros(L, dtype=bool)
    in_tree[0] = True
    best = mi[0].copy()
    parent = np.zeros(L, dtype=np.int64)
    edges = []
    for _ in range(L - 1):
        cand = np.where(in_tree, -np.inf, best)
        j = int(np.argmax(cand))
        edges.append(sorted((int(parent[j]), j)))
        in_tree[j] = True
        better = (mi[j] > best) & ~in_tree
        best[better] = mi[j][better]
        parent[better] = j
    return _sorted_edges(edges)


def top_k_edges(mi, k):
    """The ``k`` pairs ``(i, j)``, ``i < j``, of largest weight (all pairs if ``k`` is larger); stable ties."""
    L = mi.shape[0]
    i, j = np.triu_indices(L, 1)
    order = np.argsort(-mi[i, j], kind="stable")[: int(k)]
    return _sorted_edges(np.stack([i[order], j[order]], axis=1))


def _sorted_edges(edges):
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return edges[np.lexsort((edges[:, 1], edges[:, 0]))]


def learned_edges(spec, Y, n_states):
    """The edges for ``DLPWClassifier(edges="tree")`` or ``edges=k`` (an int) from the encoded labels."""
    mi = label_mutual_information(Y, n_states)
    return chow_liu_edges(mi) if isinstance(spec, str) else top_k_edges(mi, spec)
