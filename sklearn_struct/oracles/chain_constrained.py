"""Constrained linear chains: masked forward-backward / Viterbi, k-best Viterbi, path scores.

One mechanism serves every constraint on a chain: a label that a token may not take, a label
bigram that may not occur, a label that may not start or end a sequence. Each becomes a
``-inf`` log-potential (:func:`constrain_potentials`), and the recursions of
:mod:`sklearn_struct.oracles.chain` run unchanged on the result: their scaled forward-backward
treats ``exp(-inf) = 0`` exactly and falls back to its log-space recursion if the constraints
leave a sequence with tiny scaling constants; Viterbi never picks a ``-inf`` term while a
finite one exists. So

* forced decoding (some tokens' labels given) and conditional marginals are
  :func:`constrained_viterbi` / :func:`constrained_forward_backward` with a token x label mask,
* training on partial labels (Tsuboi et al., COLING 2008) needs ``log Z`` and the expectations
  under the unconstrained and the token-constrained model: the same two calls,
* structural constraints such as valid BIO / BIOES chunk sequences are a transition mask plus
  start and end masks, in training and decoding alike.

The k-best Viterbi (:func:`kbest_viterbi`) keeps, for every token and label, the ``k`` best
partial paths ending there, sorted; each step merges the ``L`` sorted lists of the previous
token (plus the transition score) by always taking the best head, so one step costs
``O(L^2 k)`` and the result is exact (no sampling, no pruning beyond the k kept).
"""

import numpy as np

from ..utils._jit import kernel
from ..utils.validation import check_offsets
from ._threads import n_threads_for, run_chunks_in_threads, token_chunks
from .chain import _raise_if_infeasible, check_chain_potentials, forward_backward, viterbi

__all__ = ["constrain_potentials", "constrained_forward_backward", "constrained_viterbi", "kbest_viterbi",
           "chain_scores"]


def constrain_potentials(unary, transition, offsets, *, allowed=None, transitions=None, start=None, end=None):
    """Potentials with every forbidden choice set to ``-inf`` (copies; the inputs are unchanged).

    Parameters
    ----------
    unary : ndarray of shape (n_tokens, n_labels)
        Packed log-potentials, as for :func:`~sklearn_struct.oracles.chain.forward_backward`.
    transition : ndarray of shape (n_labels, n_labels) or (n_tokens - n_sequences, n_labels, n_labels)
    offsets : ndarray of shape (n_sequences + 1,)
    allowed : ndarray of shape (n_tokens, n_labels), bool, default=None
        Labels each token may take (None: all).
    transitions : ndarray of shape (n_labels, n_labels), bool, default=None
        Label bigrams ``[from, to]`` that may occur (None: all).
    start, end : ndarray of shape (n_labels,), bool, default=None
        Labels that may start / end a sequence (None: all).

    Returns
    -------
    unary, transition : ndarray
        With ``-inf`` at every forbidden entry.

    Examples
    --------
    >>> import numpy as np
    >>> u, t = constrain_potentials(np.zeros((2, 2)), np.zeros((2, 2)), np.array([0, 2]),
    ...                             transitions=np.array([[True, False], [True, True]]))
    >>> t.tolist()
    [[0.0, -inf], [0.0, 0.0]]
    """
    unary, trans, per_position, offsets = check_chain_potentials(unary, transition, offsets)
    n_tok, L = unary.shape
    unary = unary.copy()
    if allowed is not None:
        allowed = _check_mask(allowed, (n_tok, L), "allowed")
        unary[~allowed] = -np.inf
    if start is not None:
        rows = unary[offsets[:-1]]
        rows[:, ~_check_mask(start, (L,), "start")] = -np.inf
        unary[offsets[:-1]] = rows
    if end is not None:
        rows = unary[offsets[1:] - 1]
        rows[:, ~_check_mask(end, (L,), "end")] = -np.inf
        unary[offsets[1:] - 1] = rows
    trans = trans[: n_tok - (offsets.shape[0] - 1)] if per_position else trans[0]  # undo the padding of length-1 chains
    if transitions is not None:
        trans = np.where(_check_mask(transitions, (L, L), "transitions"), trans, -np.inf)
    return unary, trans


def _check_mask(mask, shape, name):
    try:
        mask = np.asarray(mask)
    except ValueError as exc:  # ragged
        raise ValueError(f"{name} must be a boolean array of shape {shape} ({exc}).") from None
    if mask.shape != shape or mask.dtype != np.bool_:
        raise ValueError(f"{name} must be a boolean array of shape {shape}, got {mask.dtype} of shape {mask.shape}.")
    return mask


def constrained_forward_backward(unary, transition, offsets, *, allowed=None, transitions=None, start=None, end=None,
                                 edge_marginals="sum"):
    """log Z and marginals over the label sequences the masks allow (see :func:`constrain_potentials`).

    Returns what :func:`~sklearn_struct.oracles.chain.forward_backward` returns, for the
    distribution restricted to (and renormalised over) the allowed sequences; a ValueError
    names a sequence that the masks leave without any allowed labelling.

    Examples
    --------
    >>> import numpy as np
    >>> allowed = np.array([[True, False], [True, True]])  # token 0 fixed to label 0
    >>> log_z, node, _ = constrained_forward_backward(np.zeros((2, 2)), np.zeros((2, 2)), np.array([0, 2]),
    ...                                               allowed=allowed)
    >>> bool(np.isclose(log_z[0], np.log(2))), node[0].tolist()
    (True, [1.0, 0.0])
    """
    unary, trans = constrain_potentials(unary, transition, offsets, allowed=allowed, transitions=transitions,
                                        start=start, end=end)
    return forward_backward(unary, trans, offsets, edge_marginals=edge_marginals)


def constrained_viterbi(unary, transition, offsets, *, allowed=None, transitions=None, start=None, end=None):
    """The best label sequence among those the masks allow: (labels, scores) as :func:`viterbi` returns.

    Examples
    --------
    >>> import numpy as np
    >>> unary = np.array([[0.0, 1.0], [0.0, 1.0]])
    >>> constrained_viterbi(unary, np.zeros((2, 2)), np.array([0, 2]), start=np.array([True, False]))[0]
    array([0, 1])
    """
    unary, trans = constrain_potentials(unary, transition, offsets, allowed=allowed, transitions=transitions,
                                        start=start, end=end)
    return viterbi(unary, trans, offsets)


@kernel
def _kbest_chunk(unary, trans, per_position, offsets, s_lo, s_hi, k, labels, scores):
    """k-best Viterbi of sequences s_lo:s_hi: ``labels[r]`` (packed) and ``scores[s, r]`` of rank r.

    ``delta[t, j, :]`` holds the k best partial scores ending in label j at token t, sorted
    (kept relative to a running shift, as in Viterbi); ``back_i`` / ``back_r`` the label and
    rank of the predecessor. Ranks that do not exist (fewer than k allowed paths) score -inf.
    """
    L = unary.shape[1]
    max_len = 1
    for s in range(s_lo, s_hi):
        max_len = max(max_len, offsets[s + 1] - offsets[s])
    delta = np.empty((max_len, L, k))
    back_i = np.zeros((max_len, L, k), dtype=np.int32)
    back_r = np.zeros((max_len, L, k), dtype=np.int32)
    heads = np.empty(L, dtype=np.int64)
    for s in range(s_lo, s_hi):
        lo, hi, elo = offsets[s], offsets[s + 1], offsets[s] - s
        n = hi - lo
        total = -np.inf
        for j in range(L):
            delta[0, j, 0] = unary[lo, j]
            total = max(total, unary[lo, j])
            for r in range(1, k):
                delta[0, j, r] = -np.inf
        if total > -np.inf:
            for j in range(L):
                delta[0, j, 0] -= total
        for t in range(1, n):
            T = trans[elo + t - 1] if per_position else trans[0]
            for j in range(L):
                u = unary[lo + t, j]
                for i in range(L):
                    heads[i] = 0
                for r in range(k):  # merge the L sorted lists of token t - 1 by their best heads
                    best = -np.inf
                    arg = -1
                    for i in range(L):
                        h = heads[i]
                        if h < k:
                            v = delta[t - 1, i, h] + T[i, j]
                            if v > best:
                                best = v
                                arg = i
                    if arg < 0 or u == -np.inf:
                        for q in range(r, k):
                            delta[t, j, q] = -np.inf
                        break
                    delta[t, j, r] = best + u
                    back_i[t, j, r] = arg
                    back_r[t, j, r] = heads[arg]
                    heads[arg] += 1
            m = -np.inf
            for j in range(L):
                m = max(m, delta[t, j, 0])
            if m > -np.inf:
                for j in range(L):
                    for r in range(k):
                        delta[t, j, r] -= m
                total += m
        for j in range(L):
            heads[j] = 0
        for r in range(k):  # the k best over the last token's lists, then backtrack each
            best = -np.inf
            arg = -1
            for j in range(L):
                h = heads[j]
                if h < k and delta[n - 1, j, h] > best:
                    best = delta[n - 1, j, h]
                    arg = j
            if arg < 0:
                scores[s, r] = -np.inf
                for t in range(n):
                    labels[r, lo + t] = -1
                continue
            rank = heads[arg]
            heads[arg] += 1
            scores[s, r] = best + total
            j = arg
            for t in range(n - 1, -1, -1):
                labels[r, lo + t] = j
                if t > 0:
                    j, rank = back_i[t, j, rank], back_r[t, j, rank]


_MAX_KBEST_CELLS = 2**28  # 2 GiB of float64: a larger k is a mistake, not a request


def kbest_viterbi(unary, transition, offsets, k):
    """The ``k`` highest-scoring label sequences of each chain, best first (exact, by k-best Viterbi).

    Parameters
    ----------
    unary, transition, offsets
        As for :func:`~sklearn_struct.oracles.chain.viterbi`; ``-inf`` entries are forbidden
        (use :func:`constrain_potentials` for masks).
    k : int
        Number of sequences per chain.

    Returns
    -------
    labels : ndarray of shape (k, n_tokens), int64
        ``labels[r]`` holds the rank-``r`` sequence of every chain, packed like ``unary``;
        ``-1`` where a chain has fewer than ``r + 1`` allowed labellings.
    scores : ndarray of shape (n_sequences, k)
        Their log-potentials, non-increasing along each row (``-inf`` for missing ranks).

    Examples
    --------
    >>> import numpy as np
    >>> labels, scores = kbest_viterbi(np.array([[0.0, 1.0], [0.0, 2.0]]), np.zeros((2, 2)), np.array([0, 2]), 3)
    >>> labels.tolist(), scores[0].tolist()
    ([[1, 1], [0, 1], [1, 0]], [3.0, 2.0, 1.0])
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}.")
    unary, trans, per_position, offsets = check_chain_potentials(unary, transition, offsets)
    n_seq = offsets.shape[0] - 1
    max_len = int(np.diff(offsets).max()) if n_seq else 0
    cells = int(k) * (unary.shape[0] + n_seq + 3 * max_len * unary.shape[1])  # labels, scores, per-chunk tables
    if cells > _MAX_KBEST_CELLS:
        raise ValueError(f"k = {k} is too large: the k-best tables would hold {cells:.3g} entries (at most "
                         f"{_MAX_KBEST_CELLS:.3g}); ask for fewer sequences.")
    labels = np.empty((int(k), unary.shape[0]), dtype=np.int64)
    scores = np.empty((n_seq, int(k)))
    bounds = token_chunks(offsets, n_threads_for(unary.shape[0] * unary.shape[1] ** 2 * int(k)))

    def one(c):
        _kbest_chunk(unary, trans, per_position, offsets, bounds[c], bounds[c + 1], int(k), labels, scores)

    run_chunks_in_threads(one, bounds.shape[0] - 1)
    _raise_if_infeasible(scores[:, 0], unary, trans)
    return labels, scores


def chain_scores(unary, transition, offsets, labels):
    """Log-potential of given label sequences: ``sum_t unary[t, y_t] + sum_t A[y_t, y_{t+1}]`` per chain.

    ``labels`` are packed label indices ``(n_tokens,)``. With ``log Z`` from forward-backward,
    ``chain_scores - log_z`` is ``log P(y | x)``.

    Examples
    --------
    >>> import numpy as np
    >>> chain_scores(np.array([[1.0, 0.0], [0.0, 2.0]]), np.array([[0.0, 5.0], [0.0, 0.0]]), [0, 2], [0, 1])
    array([8.])
    """
    unary, trans, per_position, offsets = check_chain_potentials(unary, transition, offsets)
    try:
        labels = np.asarray(labels)
    except ValueError as exc:  # ragged
        raise ValueError(f"labels must be integer label indices, one per token ({exc}).") from None
    if labels.shape != (unary.shape[0],) or labels.dtype.kind not in "iu":
        raise ValueError(f"labels must be integer label indices, one per token ({unary.shape[0]}), "
                         f"got {labels.dtype} of shape {labels.shape}.")
    L = unary.shape[1]
    if labels.size and (labels.min() < 0 or labels.max() >= L):
        raise ValueError(f"labels must lie in [0, {L}), got values from {labels.min()} to {labels.max()}.")
    offsets = check_offsets(offsets)
    n_seq = offsets.shape[0] - 1
    seq = np.repeat(np.arange(n_seq), np.diff(offsets))
    total = np.bincount(seq, weights=unary[np.arange(labels.shape[0]), labels], minlength=n_seq)
    has_prev = np.ones(labels.shape[0], dtype=bool)
    has_prev[offsets[:-1]] = False
    idx = np.flatnonzero(has_prev)
    edge = trans[idx - seq[idx] - 1, labels[idx - 1], labels[idx]] if per_position else \
        trans[0, labels[idx - 1], labels[idx]]
    with np.errstate(invalid="ignore"):
        return total + np.bincount(seq[idx], weights=edge, minlength=n_seq)
