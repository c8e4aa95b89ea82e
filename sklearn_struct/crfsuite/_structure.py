"""The structure extensions of :class:`~sklearn_struct.crfsuite.CRF` on its named model.

sklearn-crfsuite has none of these; they run :mod:`sklearn_struct.oracles.chain_constrained` on
the model's unary scores, with the masks of ``allowed_transitions`` (over the model's labels, in
their order of first appearance) and of ``fixed`` tokens.
"""

import numpy as np

from .._chain_crf_constrained import fixed_masks, has_unknown_labels, structure_from
from ..oracles.chain import forward_backward
from ..oracles.chain_constrained import (chain_scores, constrain_potentials, constrained_forward_backward,
                                         constrained_viterbi, kbest_viterbi)

__all__ = ["model_structure", "encode_partial", "predict", "marginals", "topk", "log_proba"]


def model_structure(allowed_transitions, labels):
    """The Structure of ``allowed_transitions`` over the model's ``labels`` (None: unconstrained)."""
    return structure_from(allowed_transitions, np.array(labels, dtype=object))


def encode_partial(y):
    """Labels (first appearance, counting set members, skipping None) and ``y`` coded for ChainCRF:
    label indices, None, and sets of indices. None when ``y`` has no unknown token."""
    if not has_unknown_labels(y):
        return None
    labels = list(dict.fromkeys(u for seq in y for v in seq if v is not None
                                for u in (sorted(v, key=str) if isinstance(v, (set, frozenset)) else [v])))
    codes = {label: k for k, label in enumerate(labels)}
    coded = []
    for seq in y:
        out = np.empty(len(seq), dtype=object)
        out[:] = [None if v is None else ({codes[u] for u in v} if isinstance(v, (set, frozenset)) else codes[v])
                  for v in seq]
        coded.append(out)
    return labels, coded


def _masked(model, structure, X, fixed):
    """Unary scores of the non-empty sequences, their offsets, the masks, and which sequences they are."""
    unary, offsets = model._unary(X, "X")
    lengths = np.diff(offsets)
    keep = np.flatnonzero(lengths > 0)
    nonempty = np.concatenate([[0], np.cumsum(lengths[keep])]).astype(np.int64)
    masks = {} if structure is None else structure._asdict()
    if fixed is not None:
        if len(fixed) != len(lengths):
            raise ValueError(f"fixed must hold one entry per sequence of X ({len(lengths)}).")
        labels = np.array(model.labels, dtype=object)
        masks["allowed"] = fixed_masks([fixed[i] for i in keep], labels, lengths[keep])
    return unary, nonempty, masks, keep, len(lengths)


def predict(model, structure, X, fixed):
    """Best label lists within the masks."""
    unary, offsets, masks, keep, n = _masked(model, structure, X, fixed)
    out = [[] for _ in range(n)]
    if unary.shape[0]:
        path = constrained_viterbi(unary, model.transition, offsets, **masks)[0]
        labels = np.array(model.labels, dtype=object)
        for s, (lo, hi) in zip(keep, zip(offsets[:-1], offsets[1:])):
            out[s] = labels[path[lo:hi]].tolist()
    return out


def marginals(model, structure, X, fixed):
    """Per-token marginal arrays within the masks (conditional on fixed tokens)."""
    unary, offsets, masks, keep, n = _masked(model, structure, X, fixed)
    out = [np.zeros((0, len(model.labels))) for _ in range(n)]
    if unary.shape[0]:
        node = constrained_forward_backward(unary, model.transition, offsets, edge_marginals="none", **masks)[1]
        for s, (lo, hi) in zip(keep, zip(offsets[:-1], offsets[1:])):
            out[s] = node[lo:hi]
    return out


def topk(model, structure, X, k):
    """The k best label lists of each sequence and their log-probabilities."""
    unary, offsets, masks, keep, n = _masked(model, structure, X, None)
    out, logp = [[[]] for _ in range(n)], [[0.0] for _ in range(n)]
    if unary.shape[0]:
        unary, trans = constrain_potentials(unary, model.transition, offsets, **masks)
        paths, scores = kbest_viterbi(unary, trans, offsets, k)
        log_z = forward_backward(unary, trans, offsets, edge_marginals="none")[0]
        labels = np.array(model.labels, dtype=object)
        for i, (s, lo, hi) in enumerate(zip(keep, offsets[:-1], offsets[1:])):
            found = np.flatnonzero(np.isfinite(scores[i]))
            out[s] = [labels[paths[r, lo:hi]].tolist() for r in found]
            logp[s] = np.minimum(scores[i, found] - log_z[i], 0.0).tolist()
    return out, logp


def log_proba(model, structure, X, y):
    """``log P(y_i | x_i)`` per sequence (``-inf`` for a labelling the structure forbids)."""
    unary, offsets, masks, keep, n = _masked(model, structure, X, None)
    if len(y) != n:
        raise ValueError(f"y must hold one label sequence per sequence of X ({n}), got {len(y)}.")
    index = {label: j for j, label in enumerate(model.labels)}
    codes = []
    for i, seq in enumerate(y):
        unknown = [v for v in seq if v not in index]
        if unknown:
            raise ValueError(f"y, sequence {i}: labels {unknown[:3]} are not labels of the model.")
        codes.append([index[v] for v in seq])
    lengths = np.zeros(n, dtype=np.int64)
    lengths[keep] = np.diff(offsets)
    for i in range(n):
        if len(codes[i]) != lengths[i]:
            raise ValueError(f"y, sequence {i}: {len(codes[i])} labels for {lengths[i]} tokens.")
    out = np.zeros(n)
    if unary.shape[0]:
        flat = np.array([c for s in keep for c in codes[s]], dtype=np.int64)
        unary, trans = constrain_potentials(unary, model.transition, offsets, **masks)
        log_z = forward_backward(unary, trans, offsets, edge_marginals="none")[0]
        out[keep] = chain_scores(unary, trans, offsets, flat) - log_z
    return out
