"""Exact decoding of a pairwise label model over the label sets seen in training (``label_sets="train"``).

The pairwise tables of :class:`~sklearn_struct.DLPWClassifier` do not depend on ``x``, so the score
of a fixed labelling ``y_k`` is ``sum_i unary[i, y_ki] + c_k`` with ``c_k = sum_e P_e[y_k]``: all ``K``
training label sets are scored by one product with their one-hot codes, ``O(n K L)``, and the best
is exact (no relaxation). Restricting the outputs to label sets seen in training is what label
powerset does; here the sets keep sharing the pairwise model's parameters.
"""

import numpy as np

__all__ = ["distinct_label_sets", "set_scores", "best_sets", "set_max_marginals", "missing_mass", "auto_label_sets",
           "MISSING_MASS_THRESHOLD"]

_BLOCK = 1 << 22  # most score entries held at once
# label_sets="auto" decodes any labelling above this missing mass: the middle of the thresholds within 5e-4 of the
# best mean relative Hamming loss and subset accuracy in 3-fold CV on training data only (yeast, scene, 13
# generated sets of missing mass 0.03-1; benchmarks/product/bench_dlpw_label_sets_rule.py)
MISSING_MASS_THRESHOLD = 0.3


def missing_mass(Y):
    """Good-Turing estimate of the probability that a new sample's label set is not a row of ``Y``.

    The share of the rows of ``Y`` (n_samples, n_labels) whose label set occurs exactly once
    (Good 1953: the mass of the unseen outcomes is estimated by the frequency of the singletons).

    Examples
    --------
    >>> missing_mass([[0, 1], [0, 1], [1, 1], [1, 0]])
    0.5
    """
    _, counts = np.unique(np.asarray(Y), axis=0, return_counts=True)
    return float(np.sum(counts == 1) / max(int(np.sum(counts)), 1))


def auto_label_sets(Y, needs_sets=False):
    """``"train"`` or ``"all"`` for ``label_sets="auto"``: ``"all"`` when :func:`missing_mass` of the
    encoded training labels ``Y`` exceeds :data:`MISSING_MASS_THRESHOLD`, unless ``needs_sets`` (a loss
    or model defined over the training label sets only)."""
    return "all" if not needs_sets and missing_mass(Y) > MISSING_MASS_THRESHOLD else "train"


def distinct_label_sets(Y):
    """The distinct rows of the encoded labels ``Y`` (n_samples, n_labels), sorted."""
    return np.unique(np.asarray(Y, dtype=np.int64), axis=0)


def _one_hot(sets, S):
    K, L = sets.shape
    onehot = np.zeros((K, L * S))
    onehot[np.repeat(np.arange(K), L), (np.arange(L) * S + sets).ravel()] = 1.0
    return onehot


def _set_constants(pair, edges, sets):
    if len(edges) == 0:
        return np.zeros(len(sets))
    e = np.arange(len(edges))[:, None]
    return pair[e, sets[:, edges[:, 0]].T, sets[:, edges[:, 1]].T].sum(axis=0)


def set_scores(unary, pair, edges, sets, edge_unary=None):
    """Scores ``(n, K)`` of every label set (rows of ``sets``) under ``unary`` ``(n, L, S)`` and tables ``pair``;
    ``edge_unary`` ``(n, n_edges, S, S)``: input-dependent edge potentials added to ``pair``."""
    n, L, S = unary.shape
    out = unary.reshape(n, L * S) @ _one_hot(sets, S).T + _set_constants(pair, edges, sets)[None, :]
    if edge_unary is not None and len(edges):
        E = len(edges)
        codes = (np.arange(E)[None, :] * S + sets[:, edges[:, 0]]) * S + sets[:, edges[:, 1]]  # (K, E)
        onehot = np.zeros((len(sets), E * S * S))
        onehot[np.repeat(np.arange(len(sets)), E), codes.ravel()] = 1.0
        out += edge_unary.reshape(n, E * S * S) @ onehot.T
    return out


def _blocks(n, K):
    step = max(1, _BLOCK // max(K, 1))
    return [slice(lo, min(n, lo + step)) for lo in range(0, n, step)]


def best_sets(unary, pair, edges, sets, edge_unary=None):
    """Index of the best label set per sample and its score (first on ties), in blocks of samples."""
    n = unary.shape[0]
    idx, best = np.empty(n, dtype=np.int64), np.empty(n)
    for b in _blocks(n, len(sets)):
        s = set_scores(unary[b], pair, edges, sets, None if edge_unary is None else edge_unary[b])
        idx[b] = s.argmax(axis=1)
        best[b] = s[np.arange(s.shape[0]), idx[b]]
    return idx, best


def set_max_marginals(unary, pair, edges, sets, edge_unary=None):
    """``M[m, i, a] = max {score_m(y_k) : y_ki = a}`` over the label sets; states no set takes get the
    sample's lowest set score minus 1 (below every reachable state)."""
    n, L, S = unary.shape
    M = np.full((n, L, S), -np.inf)
    for b in _blocks(n, len(sets)):
        s = set_scores(unary[b], pair, edges, sets, None if edge_unary is None else edge_unary[b])
        for i in range(L):
            for a in range(S):
                take = sets[:, i] == a
                if take.any():
                    M[b, i, a] = s[:, take].max(axis=1)
        floor = s.min(axis=1) - 1.0
        M[b] = np.where(np.isfinite(M[b]), M[b], floor[:, None, None])
    return M


def sets_objective(W, P, Xa, edges, target, sets, C, zero_one):
    """``1/2 ||w||^2 + C/n sum_m max_k [score_m(s_k) + loss(k, target_m) - score_m(s_target_m)]`` (exact).

    ``W`` ``(n_features, L * S [+ n_edges * S * S])``: unary weights, then edge-feature weights if any."""
    n = Xa.shape[0]
    K, L = sets.shape
    S = P.shape[1] if P.ndim == 3 and P.size else W.shape[1] // L
    nS = L * S
    total = 0.0
    for b in _blocks(n, K):
        scores = np.asarray(Xa[b] @ W)
        unary = scores[:, :nS].reshape(-1, L, S)
        edge_unary = scores[:, nS:].reshape(-1, len(edges), S, S) if W.shape[1] > nS else None
        s = set_scores(unary, P, edges, sets, edge_unary)
        t = target[b]
        loss = (np.arange(K)[None, :] != t[:, None]).astype(float) if zero_one else \
            (sets[None, :, :] != sets[t][:, None, :]).mean(axis=2)
        total += float(np.sum((s + loss).max(axis=1) - s[np.arange(len(t)), t]))
    return 0.5 * (float(np.vdot(W, W)) + float(np.vdot(P, P))) + C * total / n
