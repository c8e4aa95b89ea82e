"""Constrained chain CRFs: allowed transitions (BIO / BIOES schemes), fixed tokens, partial labels.

Everything here becomes masks for :mod:`sklearn_struct.oracles.chain_constrained`:

* :func:`structure_from` turns ``allowed_transitions`` (a scheme name or a boolean
  ``(n_classes, n_classes)`` array) into a :class:`Structure`: the transitions that may occur and
  the labels that may start and end a sequence;
* :func:`token_masks` turns labels with unknown tokens (``None``, or a ``set`` of the labels a
  token may take) into per-token allowed masks, for ``fit`` (partial labels) and for
  ``predict(..., fixed=...)`` alike;
* :class:`ConstrainedChainObjective` is CRFsuite's objective with both: forbidden transitions
  at ``-inf`` (out of the partition function), and, for sequences with unknown tokens, the
  negative log of the probability of the labels they allow (Tsuboi et al., COLING 2008)::

      NLL_i = log Z(x_i) - log Z(x_i; y_i's allowed labels)
      grad  = E[phi] - E[phi | allowed labels]

  both expectations by (masked) forward-backward; fully labelled sequences keep the usual
  ``log Z - score(y)``, whose constrained term is the gold score.
"""

import re
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ._chain_crf import ChainData, ChainObjective, _add_l2, unpack_params
from .oracles.chain import expected_counts
from .oracles._chain_weighted import weighted_expected_counts
from .oracles.chain import forward_backward
from .oracles.chain_constrained import (chain_scores, constrain_potentials, constrained_forward_backward,
                                        constrained_viterbi, kbest_viterbi)
from .oracles.linear import state_pairs
from .utils.packing import pack_sequences, row_slice, transition_pairs
from .utils.parallel import even_chunks
from .utils.shards import ResidentShards
from .utils.optimize import _dot

__all__ = ["Structure", "SCHEMES", "structure_from", "has_unknown_labels", "token_masks", "check_feasible",
           "ConstrainedChainObjective", "masked_potentials", "topk_of_chain", "log_proba_of_chain"]

# scheme name -> (prefix of a chunk's first, inside, last, single-token label); BIO has no last / single
SCHEMES = {"BIO": "BI", "IOB2": "BI", "IOB": "BI", "BIOES": "BIES", "IOBES": "BIES", "BILOU": "BILU",
           "BIOLU": "BILU"}
_TAG = re.compile(r"^([A-Za-z])[-_](.+)$")


class Structure(NamedTuple):
    """Allowed label bigrams ``transitions[from, to]`` and the labels that may ``start`` / ``end`` a sequence."""

    transitions: np.ndarray
    start: np.ndarray
    end: np.ndarray


def structure_from(allowed_transitions, classes):
    """The :class:`Structure` of ``allowed_transitions`` over ``classes`` (None: no constraint).

    A scheme name derives it from the label names (``"B-NP"``, ``"I-NP"``, ``"O"``; ``-`` or ``_``
    after the prefix): in ``"BIO"`` (also ``"IOB2"``, ``"IOB"``) an ``I-X`` follows only ``B-X`` or
    ``I-X`` and never starts a sequence; in ``"BIOES"`` (``"IOBES"``; ``"BILOU"`` with ``L`` / ``U``
    for ``E`` / ``S``) ``B-X`` and ``I-X`` are followed by ``I-X`` or ``E-X`` only, these follow
    only ``B-X`` or ``I-X``, and a sequence starts outside a chunk and ends outside one. Labels
    without a prefix (``"O"``, any other) are outside every chunk. A boolean array
    ``(n_classes, n_classes)`` gives the transitions directly (every label may start and end); a
    tuple ``(transitions, start, end)`` of boolean arrays gives all three.
    """
    if allowed_transitions is None:
        return None
    L = len(classes)
    if isinstance(allowed_transitions, str):
        return _scheme_structure(allowed_transitions, classes)
    if isinstance(allowed_transitions, tuple) and len(allowed_transitions) == 3:  # (transitions, start, end)
        shapes = [(L, L), (L,), (L,)]
        parts = [_as_mask_array(a) for a in allowed_transitions]
        if any(a.shape != sh or a.dtype != np.bool_ for a, sh in zip(parts, shapes)):
            raise ValueError(f"allowed_transitions as a tuple must be boolean arrays (transitions, start, end) of "
                             f"shapes ({L}, {L}), ({L},), ({L},); got {[(a.dtype.name, a.shape) for a in parts]}.")
        return Structure(*(a.copy() for a in parts))
    mask = _as_mask_array(allowed_transitions)
    if mask.shape != (L, L) or mask.dtype != np.bool_:
        raise ValueError(f"allowed_transitions must be a scheme name ({sorted(SCHEMES)}) or a boolean array of "
                         f"shape (n_classes, n_classes) = ({L}, {L}) over classes_, got {mask.dtype} of shape "
                         f"{mask.shape}.")
    return Structure(mask.copy(), np.ones(L, dtype=bool), np.ones(L, dtype=bool))


def _as_mask_array(value):
    """``np.asarray(value)``, with a ValueError naming ``allowed_transitions`` for ragged nested lists."""
    try:
        return np.asarray(value)
    except ValueError as exc:
        raise ValueError(f"allowed_transitions must be a boolean array, got a ragged sequence ({exc}).") from None


def _scheme_structure(name, classes):
    key = name.upper()
    if key not in SCHEMES:
        raise ValueError(f"allowed_transitions={name!r} is no known scheme; use one of {sorted(SCHEMES)} or a "
                         "boolean (n_classes, n_classes) array.")
    first, inside, *rest = SCHEMES[key]
    last, single = rest if rest else (None, None)
    prefix, kind = [], []
    for label in classes:
        match = _TAG.match(label) if isinstance(label, str) else None
        if match is None or match.group(1).upper() not in SCHEMES[key]:
            if match is not None and isinstance(label, str) and len(match.group(1)) == 1 and label[0] != "O":
                raise ValueError(f"allowed_transitions={name!r}: label {label!r} has prefix {match.group(1)!r}, "
                                 f"which the scheme does not have (its prefixes: {', '.join(SCHEMES[key])} and O).")
            prefix.append("O")
            kind.append(None)
        else:
            prefix.append(match.group(1).upper())
            kind.append(match.group(2))
    prefix = np.array(prefix)
    kind = np.array(kind, dtype=object)
    same = kind[:, None] == kind[None, :]
    opens = np.isin(prefix, [first, inside])  # followed by the same chunk's inside / last
    continues = np.isin(prefix, [inside] + ([last] if last else []))
    if last is None:  # BIO: an I-X only after B-X / I-X; anything may follow anything else
        trans = ~continues[None, :] | (opens[:, None] & same)
        end = np.ones(len(classes), dtype=bool)
    else:
        trans = np.where(opens[:, None], continues[None, :] & same, ~continues[None, :])
        end = ~opens
    return Structure(trans, ~continues, end)


def has_unknown_labels(y):
    """Whether any token of the label sequences ``y`` (not yet validated) is None or a set of labels."""
    try:
        return any(not (isinstance(labels, np.ndarray) and labels.dtype != object)
                   and any(v is None or isinstance(v, (set, frozenset)) for v in labels) for labels in y)
    except TypeError:  # not a list of sequences: fit's validation names the problem
        return False


def partial_classes(y):
    """The sorted distinct labels of ``y``, counting the members of sets and skipping None."""
    seen = set()
    for labels in y:
        for v in labels:
            if isinstance(v, (set, frozenset)):
                seen.update(v)
            elif v is not None:
                seen.add(v)
    try:
        return np.array(sorted(seen))
    except TypeError:
        raise ValueError("y: labels must be mutually comparable (e.g. all strings or all numbers).") from None


def token_masks(y, classes, what="y"):
    """Encoded labels and allowed-label masks of label sequences with unknown tokens.

    Each token of ``y`` is a label, ``None`` (any label) or a ``set`` of the labels it may take.

    Returns
    -------
    y_enc : list of ndarray of int64
        Label indices, ``-1`` where a token allows more than one label.
    allowed : ndarray of shape (n_tokens, n_classes), bool
        The labels each token may take, packed over all sequences.
    """
    index = {c.item() if hasattr(c, "item") else c: k for k, c in enumerate(classes)}
    L = len(classes)
    y_enc, rows = [], []
    for i, labels in enumerate(y):
        mask = np.zeros((len(labels), L), dtype=bool)
        for t, v in enumerate(labels):
            members = range(L) if v is None else ([index.get(u, -1) for u in v] if isinstance(v, (set, frozenset))
                                                   else [index.get(v, -1)])
            if v is not None and (not members or min(members) < 0):
                raise ValueError(f"{what}, sequence {i}, token {t}: {v!r} is no label seen during fit "
                                 f"(nor an empty set); give a label, a set of labels or None.")
            mask[t, list(members)] = True
        enc = np.where(mask.sum(axis=1) == 1, mask.argmax(axis=1), -1).astype(np.int64)
        y_enc.append(enc)
        rows.append(mask)
    return y_enc, np.concatenate(rows)


def check_feasible(lengths, allowed, structure, what="y"):
    """ValueError naming a sequence that the token masks and the structure leave without any labelling."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    L = allowed.shape[1]
    kw = {} if structure is None else structure._asdict()
    try:
        constrained_viterbi(np.zeros((offsets[-1], L)), np.zeros((L, L)), offsets, allowed=allowed, **kw)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc} Its given labels break allowed_transitions (or contradict each "
                         "other).") from None


class _Chunk:
    """One chunk's data plus what the constrained objective needs of it."""

    def __init__(self, data, y, allowed, n_labels, weights=None):
        self.data = data
        L = n_labels
        offsets = data.offsets
        lengths = np.diff(offsets)
        # per-sequence weights of the objective (None: all 1) and each token's, as ChainData's
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        self.tw = None if weights is None else np.repeat(self.weights, lengths)
        seq = np.repeat(np.arange(len(lengths)), lengths)
        partial_seq = np.zeros(len(lengths), dtype=bool)
        np.logical_or.at(partial_seq, seq, y < 0)
        in_partial = partial_seq[seq]
        self.known_rows = np.flatnonzero(~in_partial)
        self.known_labels = y[self.known_rows]
        self.p_rows = np.flatnonzero(in_partial)
        self.p_offsets = np.concatenate([[0], np.cumsum(lengths[partial_seq])]).astype(np.int64)
        self.p_allowed = allowed[self.p_rows] if allowed is not None else None
        self.p_weights = None if weights is None else self.weights[partial_seq]
        self.first, self.last = offsets[:-1], offsets[1:] - 1
        onehot = np.zeros((data.n_tokens, L))
        onehot[self.known_rows, self.known_labels] = 1.0 if weights is None else self.tw[self.known_rows]
        y_known = np.where(in_partial, 0, y)
        src, dst = transition_pairs(y_known, offsets)
        has_prev = np.flatnonzero(_has_prev(offsets))  # edges in token order, as transition_pairs
        keep = ~in_partial[has_prev]
        self.trans_known = np.zeros((L, L))
        np.add.at(self.trans_known, (src[keep], dst[keep]), 1.0 if weights is None else self.tw[has_prev][keep])
        self.counts = np.concatenate([data.features.gradient(onehot), onehot.sum(axis=0), self.trans_known.ravel()])


def _has_prev(offsets):
    has = np.ones(offsets[-1], dtype=bool)
    has[offsets[:-1]] = False
    return has


class ConstrainedChainObjective(ChainObjective):
    """:class:`~sklearn_struct._chain_crf.ChainObjective` with a :class:`Structure` and partial labels.

    ``y_list`` holds label indices with ``-1`` at tokens that allow several labels, ``allowed`` the
    packed ``(n_tokens, n_labels)`` masks of those (None: all labels known). With sparse features
    the (attribute, label) pairs that get a weight are those of the known tokens.
    """

    def __init__(self, X_list, y_list, n_labels, c2, *, allowed=None, structure=None, n_chunks=1, n_jobs=None,
                 all_possible_states=False, min_freq=None, sample_weight=None):
        self.n_labels, self.c2, self.n_jobs = n_labels, c2, n_jobs
        self.structure = structure
        self.n_features = X_list[0].shape[1]
        packed, offsets = pack_sequences(X_list)
        y = np.concatenate(y_list).astype(np.int64)
        known = y >= 0
        pairs = None
        if sp.issparse(packed) and (min_freq is not None or not all_possible_states):
            pairs = state_pairs(packed[known], y[known], n_labels, all_possible_states, min_freq)
        self.chunks = []
        for sl in even_chunks(len(X_list), n_chunks):
            lo, hi = offsets[sl.start], offsets[sl.stop]
            data = ChainData.from_packed(row_slice(packed, lo, hi), offsets[sl.start : sl.stop + 1] - lo, y[lo:hi],
                                         n_labels, pairs)
            self.chunks.append((data, _Chunk(data, y[lo:hi], None if allowed is None else allowed[lo:hi], n_labels,
                                             None if sample_weight is None else sample_weight[sl])))
        self.features = self.chunks[0][0].features
        self.shards = ResidentShards(self.chunks, n_jobs=n_jobs)
        self.n_weights = self.features.n_weights
        self.n_params = self.n_weights + n_labels + n_labels * n_labels

    def forbidden_transitions(self):
        """Flat indices (into theta) of the transitions the structure forbids: kept at 0."""
        if self.structure is None:
            return np.zeros(0, dtype=np.int64)
        return self.n_weights + self.n_labels + np.flatnonzero(~self.structure.transitions.ravel())

    def __call__(self, theta):
        L = self.n_labels
        f, g = self.shards.sum(_constrained_chunk_loss, theta, L, self.structure)
        f += _add_l2(theta, g, self.c2, self.n_weights, self.n_weights + L)
        return f, g


def _constrained_chunk_loss(chunk, theta, n_labels, structure):
    """One resident chunk ``(data, _Chunk)``: its negative log-likelihood and gradient."""
    return _constrained_nll_grad(chunk[1], theta, n_labels, structure)


def _constrained_nll_grad(chunk, theta, n_labels, structure):
    """NLL of one chunk (partial sequences: ``log Z - log Z_allowed``) and its gradient, no regulariser.

    With sequence weights ``s_i`` every sequence's term is multiplied by ``s_i``: token rows of the
    marginals by their sequence's weight here, the edge sums in the weighted kernel.
    """
    data = chunk.data
    n_weights = data.features.n_weights
    w, b, A = unpack_params(theta, n_weights, n_labels)
    node, shift = data.buffers(n_labels)
    unary = np.empty_like(node)  # kept beside the marginals: the constrained pass below reads it
    data.features.scores(w, bias=b, out=unary, row_max=shift)
    if structure is not None:
        A = np.where(structure.transitions, A, -np.inf)
        unary[np.ix_(chunk.first, ~structure.start)] = -np.inf
        unary[np.ix_(chunk.last, ~structure.end)] = -np.inf
    tw = chunk.tw
    if tw is None:
        log_z, node, edge = expected_counts(unary, np.exp(unary), A, data.offsets, out=node)
    else:
        log_z, node, edge = weighted_expected_counts(unary, np.exp(unary), A, data.offsets, chunk.weights, out=node)
        node *= tw[:, None]
        log_z, shift = log_z * chunk.weights, shift * tw
    f = float(np.sum(log_z) + np.sum(shift) - _dot(chunk.counts, theta))
    if chunk.p_rows.size:
        log_zc, node_c, edge_c = _allowed_counts(unary[chunk.p_rows], A, chunk)
        f -= float(np.sum(log_zc) + np.sum(shift[chunk.p_rows]))
        node[chunk.p_rows] -= node_c
        edge = edge - edge_c
    node[chunk.known_rows, chunk.known_labels] -= 1.0 if tw is None else tw[chunk.known_rows]
    grad = np.empty_like(theta)
    gw, gb, gA = unpack_params(grad, n_weights, n_labels)
    gw[:] = data.features._gradient(node)
    gb[:] = node.sum(axis=0)
    gA[:] = edge - chunk.trans_known
    return f, grad


def _allowed_counts(unary, A, chunk):
    """log Z_allowed, node and summed edge marginals of the partial sequences (weighted by their sequences'
    weights when the chunk has them)."""
    if chunk.weights is None:
        return constrained_forward_backward(unary, A, chunk.p_offsets, allowed=chunk.p_allowed)
    u, trans = constrain_potentials(unary, A, chunk.p_offsets, allowed=chunk.p_allowed)
    row_max = u.max(axis=1, keepdims=True)  # a token's allowed labels: finite, one at least
    u = u - row_max
    log_zc, node_c, edge_c = weighted_expected_counts(u, np.exp(u), trans, chunk.p_offsets, chunk.p_weights,
                                                      out=np.empty_like(u))
    tw = chunk.tw[chunk.p_rows]
    log_zc = (log_zc + np.add.reduceat(row_max[:, 0], chunk.p_offsets[:-1])) * chunk.p_weights
    return log_zc, node_c * tw[:, None], edge_c


def start_partial_fit(estimator, X, y):
    """:func:`~sklearn_struct._chain_crf.start_chain_fit` for labels with unknown tokens.

    ``classes_`` are the labels that occur (as labels or in sets). Returns ``(progress, X, y_enc,
    previous, allowed)``: ``y_enc`` -1 at the tokens that allow several labels, ``allowed`` the
    packed token masks.
    """
    from ._chain_crf import warm_start_params
    from .utils.progress import Progress
    from .utils.validation import check_sequences

    progress = Progress(type(estimator).__name__, estimator.verbose, estimator.callback)
    X, y = check_sequences(X, y)
    classes = partial_classes(y)
    if classes.size == 0:
        raise ValueError("y: every token is unknown (None); at least one label must be given.")
    y_enc, allowed = token_masks(y, classes)
    previous = warm_start_params(estimator, X[0].shape[1], classes)
    estimator.classes_, estimator.n_features_in_ = classes, X[0].shape[1]
    return progress, X, y_enc, previous, allowed


def fixed_masks(fixed, classes, lengths):
    """Packed token masks of ``predict(..., fixed=...)``: one entry per sequence, None (all free) or
    one entry per token (a label, None for a free token, or a set of allowed labels)."""
    if isinstance(fixed, (str, bytes)) or not hasattr(fixed, "__len__") or len(fixed) != len(lengths):
        raise ValueError(f"fixed must hold one entry per sequence of X ({len(lengths)}): None or one label / "
                         "None / set per token.")
    rows = []
    for i, (entry, n) in enumerate(zip(fixed, lengths)):
        entry = [None] * n if entry is None else list(entry)
        if len(entry) != n:
            raise ValueError(f"fixed, sequence {i}: {len(entry)} entries for {n} tokens.")
        rows.append(np.array(entry + [None], dtype=object)[:-1])  # 1D object array even for sets
    return token_masks(rows, classes, what="fixed")[1]


def onehot_masks(y_enc, n_labels):
    """Packed one-hot masks of fully known label sequences."""
    y = np.concatenate(y_enc)
    mask = np.zeros((y.shape[0], n_labels), dtype=bool)
    mask[np.arange(y.shape[0]), y] = True
    return mask


def masked_potentials(unary, transition, offsets, structure=None, allowed=None):
    """``(unary, transition)`` with ``-inf`` wherever ``structure`` (a :class:`Structure` or None) and the
    token masks ``allowed`` (``(n_tokens, n_labels)`` or None) forbid a choice; unchanged without masks."""
    masks = {} if structure is None else structure._asdict()
    if allowed is not None:
        masks["allowed"] = allowed
    if not masks:
        return unary, transition
    return constrain_potentials(unary, transition, offsets, **masks)


def topk_of_chain(unary, transition, offsets, k, classes):
    """The ``k`` best label sequences of each chain and their log-probabilities, as lists per sequence.

    ``unary`` / ``transition`` are the (masked) log-potentials of the chain distribution; returns
    ``(y_topk, log_proba)`` as :meth:`ChainCRF.predict_topk <sklearn_struct.ChainCRF.predict_topk>`.
    """
    labels, scores = kbest_viterbi(unary, transition, offsets, k)
    log_z, _, _ = forward_backward(unary, transition, offsets, edge_marginals="none")
    y_topk, log_proba = [], []
    for s, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        found = np.isfinite(scores[s])
        y_topk.append(classes[labels[found, lo:hi]])
        log_proba.append(np.minimum(scores[s, found] - log_z[s], 0.0))
    return y_topk, log_proba


def log_proba_of_chain(unary, transition, offsets, X, y, classes):
    """``log P(y_i | x_i)`` under the chain distribution of the (masked) potentials; ``-inf`` where a
    labelling is forbidden. ``y`` is validated against ``X`` and encoded over ``classes``."""
    from sklearn.preprocessing import LabelEncoder

    from .utils.validation import check_sequences, encode_sequence_labels

    _, y = check_sequences(X, y)  # lengths against X
    encoder = LabelEncoder()
    encoder.classes_ = classes
    y_enc = np.concatenate(encode_sequence_labels(encoder, y))
    log_z, _, _ = forward_backward(unary, transition, offsets, edge_marginals="none")
    return chain_scores(unary, transition, offsets, y_enc) - log_z
