"""Segment errors of a labelling by type: what each kind of mistake costs in segment F1.

The public functions are :func:`sklearn_struct.metrics.segment_error_events`,
:func:`~sklearn_struct.metrics.segment_error_table` and
:func:`~sklearn_struct.metrics.segment_f1_if_fixed`; this module holds their implementation.

The segments of a BIO labelling follow conlleval's rules (``chunk_precision_recall_f1(scheme=
"IOB2")``): a segment starts at ``B-f``, or at ``I-f`` after ``O`` or another field, and runs
while the tags are ``I-f``. A predicted segment is correct when a gold one has the same field
and span. The remaining (wrong) gold and predicted segments are joined when they share a token;
each connected group is one *error event*, classified by its shape (:data:`SEGMENT_ERROR_TYPES`).
Fixing an event turns its gold segments into correct ones and removes its predicted ones, so
its cost in micro segment F1 is what F1 gains when it (or a whole type) is fixed.
"""

from collections import Counter

from .utils.validation import _as_list, check_sequence_labels

__all__ = []

SEGMENT_ERROR_TYPES = ("boundary", "wrong label", "label+boundary", "split", "merged", "many-to-many", "missed",
                       "spurious")


def segment_error_events(y_true, y_pred):
    """Split the segment errors of a BIO labelling into error events, each classified by its shape.

    Wrong gold and predicted segments (conlleval's segments, as in
    ``chunk_precision_recall_f1(scheme="IOB2")``) that share a token form one *error event*. Its
    type is one of:

    - ``"boundary"``: as many predicted as gold segments, the same fields in the same order,
      other spans (a segment moved, or the boundary between two neighbours shifted);
    - ``"wrong label"``: one gold and one predicted segment, same span, another field;
    - ``"label+boundary"``: one gold and one predicted segment, another field and span;
    - ``"split"``: one gold segment cut into several predicted ones;
    - ``"merged"``: several gold segments predicted as one;
    - ``"many-to-many"``: several of each;
    - ``"missed"``: gold segments no predicted segment touches (predicted ``O``);
    - ``"spurious"``: predicted segments over gold ``O`` tokens only.

    Parameters
    ----------
    y_true : list of array-like of str
        Gold BIO tags (``"B-field"``, ``"I-field"`` or ``"O"``), one array per sequence.
    y_pred : list of array-like of str
        Predicted BIO tags, with the same lengths as ``y_true``.

    Returns
    -------
    events : list of dict
        One dict per event: ``"seq"`` (the sequence's index), ``"type"``, ``"gold"`` and
        ``"pred"`` (its segments, lists of ``(field, start, end)`` with ``end`` exclusive) and
        ``"count_visible"`` (fixing it changes the number of segments of some field in its
        sequence: only such an event can a constraint over segment counts detect).
    totals : dict
        ``"tp"`` (correct segments), ``"n_gold"`` and ``"n_pred"`` over all sequences: with
        ``events``, what :func:`segment_f1_if_fixed` and :func:`segment_error_table` need.

    See Also
    --------
    segment_error_table : Events and F1 gain per error type (or any grouping).
    segment_report : Per-field segment precision, recall and F1.

    Examples
    --------
    >>> from sklearn_struct.metrics import segment_error_events
    >>> y_true = [["B-title", "I-title", "B-year", "O"]]
    >>> y_pred = [["B-title", "B-title", "B-venue", "O"]]
    >>> events, totals = segment_error_events(y_true, y_pred)
    >>> for e in events:
    ...     print(e["type"], e["gold"], e["pred"])
    split [('title', 0, 2)] [('title', 0, 1), ('title', 1, 2)]
    wrong label [('year', 2, 3)] [('venue', 2, 3)]
    >>> totals
    {'tp': 0, 'n_gold': 2, 'n_pred': 3}
    """
    true, pred = _check_pair(y_true, y_pred)
    events, totals = [], Counter(tp=0, n_gold=0, n_pred=0)
    for i, (t, p) in enumerate(zip(true, pred)):
        gold, predicted = _bio_segments(t, f"y_true sequence {i}"), _bio_segments(p, f"y_pred sequence {i}")
        right = set(gold) & set(predicted)
        totals.update(tp=len(right), n_gold=len(gold), n_pred=len(predicted))
        for g, q in _components([s for s in gold if s not in right], [s for s in predicted if s not in right]):
            events.append({"seq": i, "type": _shape(g, q), "gold": g, "pred": q,
                           "count_visible": Counter(f for f, _, _ in g) != Counter(f for f, _, _ in q)})
    return events, dict(totals)


def segment_f1_if_fixed(events, totals):
    """Micro segment F1, in points (0-100), once the given error events are fixed.

    Parameters
    ----------
    events : list of dict
        Some of the events of :func:`segment_error_events` (``[]``: the F1 of the labelling).
    totals : dict
        The totals :func:`segment_error_events` returned with them.

    Returns
    -------
    f1 : float
        The segment F1 (x 100) if every event in ``events`` were predicted right.

    Examples
    --------
    >>> from sklearn_struct.metrics import segment_error_events, segment_f1_if_fixed
    >>> events, totals = segment_error_events([["B-a", "O", "B-b"]], [["B-a", "O", "O"]])
    >>> segment_f1_if_fixed([], totals), segment_f1_if_fixed(events, totals)
    (66.66666666666667, 100.0)
    """
    tp, n_gold, n_pred = _check_totals(totals)
    events = _check_events(events)
    tp += sum(len(e["gold"]) for e in events)
    n_pred += sum(len(e["gold"]) - len(e["pred"]) for e in events)
    return 200.0 * tp / max(n_gold + n_pred, 1)


def segment_error_table(events, totals, *, key=None):
    """Number of error events and the F1 points gained by fixing them, per error type or any grouping.

    Parameters
    ----------
    events : list of dict
        The events of :func:`segment_error_events`.
    totals : dict
        The totals returned with them.
    key : callable or None, default=None
        Maps an event (dict) to its group. ``None`` groups by ``event["type"]`` and lists every
        type, in the order of :func:`segment_error_events`' list, with ``(0, 0.0)`` where none
        occurred.

    Returns
    -------
    table : dict
        ``{group: (n_events, f1_gain)}``: ``f1_gain`` is :func:`segment_f1_if_fixed` of the
        group's events minus the F1 of the labelling, in points.

    Examples
    --------
    >>> from sklearn_struct.metrics import segment_error_events, segment_error_table
    >>> y_true = [["B-a", "I-a", "O", "B-b"], ["B-a", "O", "B-b", "I-b"]]
    >>> y_pred = [["B-a", "B-a", "O", "B-b"], ["B-a", "O", "B-c", "I-c"]]
    >>> table = segment_error_table(*segment_error_events(y_true, y_pred))
    >>> {k: (n, round(gain, 2)) for k, (n, gain) in table.items() if n}
    {'wrong label': (1, 22.22), 'split': (1, 30.56)}
    >>> by_sequence = segment_error_table(*segment_error_events(y_true, y_pred), key=lambda e: e["seq"])
    >>> {k: (n, round(gain, 2)) for k, (n, gain) in by_sequence.items()}
    {0: (1, 30.56), 1: (1, 22.22)}
    """
    if key is not None and not callable(key):
        raise TypeError(f"key must be a callable or None, got {type(key).__name__}.")
    events = _check_events(events)
    base = segment_f1_if_fixed([], totals)
    groups = {t: [] for t in SEGMENT_ERROR_TYPES} if key is None else {}
    for e in events:
        groups.setdefault(e["type"] if key is None else key(e), []).append(e)
    return {k: (len(v), segment_f1_if_fixed(v, totals) - base if v else 0.0) for k, v in groups.items()}


def _check_pair(y_true, y_pred):
    seqs = {}
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        try:
            seqs[name] = check_sequence_labels(_as_list(y, name))
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
    if len(seqs["y_true"]) != len(seqs["y_pred"]):
        raise ValueError(f"y_true has {len(seqs['y_true'])} sequences, y_pred {len(seqs['y_pred'])}.")
    for i, (t, p) in enumerate(zip(seqs["y_true"], seqs["y_pred"])):
        if len(t) != len(p):
            raise ValueError(f"sequence {i}: y_true has {len(t)} tokens, y_pred {len(p)}.")
    return seqs["y_true"], seqs["y_pred"]


def _check_totals(totals):
    if not isinstance(totals, dict) or not {"tp", "n_gold", "n_pred"} <= set(totals):
        raise TypeError("totals must be the dict segment_error_events returns (keys 'tp', 'n_gold', 'n_pred').")
    values = [totals[k] for k in ("tp", "n_gold", "n_pred")]
    if not all(isinstance(v, int) and v >= 0 for v in values) or values[0] > min(values[1:]):
        raise ValueError(f"totals must hold counts with tp <= n_gold, n_pred; got {totals}.")
    return values


def _check_events(events):
    if not isinstance(events, (list, tuple)):
        raise TypeError(f"events must be a list of the dicts segment_error_events returns, "
                        f"got {type(events).__name__}.")
    for i, e in enumerate(events):
        if not isinstance(e, dict) or not {"type", "gold", "pred"} <= set(e):
            raise TypeError(f"events[{i}] is not an event of segment_error_events "
                            "(a dict with 'type', 'gold', 'pred').")
    return events


def _bio_segments(tags, where="sequence"):
    """``[(field, start, end), ...]`` (``end`` exclusive) of a BIO tag sequence, conlleval's rules."""
    out, field, start = [], None, 0
    for t, tag in enumerate(list(tags) + ["O"]):
        tag = str(tag)
        if tag != "O" and tag[:2] not in ("B-", "I-"):
            raise ValueError(f"{where}: tag {tag!r} at token {t} is not a BIO tag (B-x, I-x or 'O').")
        continues = tag[:2] == "I-" and tag[2:] == field
        if field is not None and not continues:
            out.append((field, start, t))
            field = None
        if tag != "O" and not continues:
            field, start = tag[2:], t
    return out


def _shape(gold, pred):
    if not pred:
        return "missed"
    if not gold:
        return "spurious"
    if [f for f, _, _ in gold] == [f for f, _, _ in pred]:
        return "boundary"
    if len(gold) == 1 and len(pred) == 1:
        return "wrong label" if gold[0][1:] == pred[0][1:] else "label+boundary"
    if len(gold) == 1:
        return "split"
    return "merged" if len(pred) == 1 else "many-to-many"


def _components(gold, pred):
    """Groups of gold and predicted segments joined by shared tokens (segments sorted by start)."""
    items = [("g", s) for s in gold] + [("p", s) for s in pred]
    items.sort(key=lambda it: (it[1][1], it[1][2]))
    groups, end = [], -1
    for side, seg in items:  # segments of one side never overlap: sweep by start
        if seg[1] >= end:
            groups.append(([], []))
        groups[-1][0 if side == "g" else 1].append(seg)
        end = max(end, seg[2]) if seg[1] < end else seg[2]
    return groups
