"""Segment errors of a labelling by type: what each kind of mistake costs in segment F1.

The segments of a BIO labelling follow conlleval's rules (``chunk_precision_recall_f1(scheme=
"IOB2")``): a segment starts at ``B-f``, or at ``I-f`` after ``O`` or another field, and runs
while the tags are ``I-f``. A predicted segment is correct when a gold one has the same field
and span. The remaining (wrong) gold and predicted segments are joined when they share a token;
each connected group is one *error event*, classified by its shape:

- ``"missed"``: gold segments that no predicted segment touches (predicted ``O``);
- ``"spurious"``: predicted segments over gold ``O`` tokens only;
- ``"wrong label"``: one gold, one predicted segment, same span, another field;
- ``"boundary"``: as many predicted as gold segments, with the same fields in the same order,
  other spans (one segment moved, or the boundary between two neighbours shifted);
- ``"label+boundary"``: one gold, one predicted segment, another field and span;
- ``"split"``: one gold segment cut into several predicted ones;
- ``"merged"``: several gold segments predicted as one;
- ``"many-to-many"``: several of each.

Fixing an event turns its gold segments into correct ones and removes its predicted ones, so
its cost in micro segment F1 is what F1 gains when it (or a whole type) is fixed. An event is
*count-visible* when fixing it changes the number of segments of some field in its sequence:
a constraint over segment counts can only ever tell the wrong labelling from the right one
through such an event.
"""

from collections import Counter

__all__ = []

TYPES = ("boundary", "wrong label", "label+boundary", "split", "merged", "many-to-many", "missed", "spurious")


def bio_segments(tags, where="sequence"):
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


def segment_events(y_true, y_pred):
    """Error events of every sequence and the totals of the F1.

    Returns
    -------
    events : list of dict
        ``seq``, ``type``, ``gold`` and ``pred`` (lists of ``(field, start, end)``) and
        ``count_visible`` (fixing it changes a field's number of segments).
    totals : dict
        ``tp``, ``n_gold``, ``n_pred`` over all sequences.
    """
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} sequences, y_pred {len(y_pred)}.")
    events, totals = [], Counter()
    for i, (t, p) in enumerate(zip(y_true, y_pred)):
        if len(t) != len(p):
            raise ValueError(f"sequence {i}: y_true has {len(t)} tokens, y_pred {len(p)}.")
        gold, pred = bio_segments(t, f"y_true sequence {i}"), bio_segments(p, f"y_pred sequence {i}")
        right = set(gold) & set(pred)
        totals.update(tp=len(right), n_gold=len(gold), n_pred=len(pred))
        for g, q in _components([s for s in gold if s not in right], [s for s in pred if s not in right]):
            events.append({"seq": i, "type": _shape(g, q), "gold": g, "pred": q,
                           "count_visible": Counter(f for f, _, _ in g) != Counter(f for f, _, _ in q)})
    return events, dict(totals)


def f1_fixed(events, totals):
    """Micro segment F1 (in points) once ``events`` are fixed."""
    tp = totals["tp"] + sum(len(e["gold"]) for e in events)
    n_pred = totals["n_pred"] + sum(len(e["gold"]) - len(e["pred"]) for e in events)
    return 200.0 * tp / max(totals["n_gold"] + n_pred, 1)


def error_table(events, totals, key=lambda e: e["type"]):
    """``{group: (n_events, F1 points gained by fixing the group)}`` for the groups ``key`` forms."""
    base = f1_fixed([], totals)
    groups = {}
    for e in events:
        groups.setdefault(key(e), []).append(e)
    return {k: (len(v), f1_fixed(v, totals) - base) for k, v in groups.items()}


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
