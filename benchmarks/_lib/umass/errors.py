"""Segment-error analysis of the UMass base CRF (``studies/bench_umass_errors.py``, the lexicon study)."""
from collections import Counter

from sklearn_struct.metrics import segment_error_events as segment_events
from sklearn_struct.metrics import segment_error_table, segment_f1_if_fixed as f1_fixed

TYPES = ("boundary", "wrong label", "label+boundary", "split", "merged", "many-to-many", "missed", "spurious")


def error_table(events, totals, key=lambda e: e["type"]):
    """``{group: (n_events, F1 gain)}`` over the groups that occur (``segment_error_table`` with a key)."""
    return segment_error_table(events, totals, key=key)


def analyse(y_true, y_pred, words):
    events, totals = segment_events(y_true, y_pred)
    base = f1_fixed([], totals)
    out = {"f1": base, "totals": totals, "n_events": len(events),
           "by_type": error_table(events, totals),
           "by_type_visible": error_table(events, totals, lambda e: (e["type"], e["count_visible"])),
           "visible": error_table(events, totals, lambda e: e["count_visible"]),
           "all": f1_fixed(events, totals) - base}
    field_of = lambda e: (e["gold"] or e["pred"])[0][0]  # noqa: E731
    out["by_field"] = error_table(events, totals, field_of)
    out["by_field_type"] = error_table(events, totals, lambda e: (field_of(e), e["type"]))
    # references whose predicted counts equal the gold counts: no count constraint separates them
    invisible = {i for i in {e["seq"] for e in events}
                 if not any(e["count_visible"] for e in events if e["seq"] == i)}
    out["invisible_refs"] = (len(invisible), len({e["seq"] for e in events}),
                             f1_fixed([e for e in events if e["seq"] in invisible], totals) - base)
    out["confusions"] = Counter(f"{e['gold'][0][0]} -> {e['pred'][0][0]}" for e in events
                                if e["type"] in ("wrong label", "label+boundary")).most_common(12)
    out["merged_patterns"] = Counter(" + ".join(f for f, _, _ in e["gold"]) + f" -> {e['pred'][0][0]}" for e in events
                                     if e["type"] == "merged").most_common(8)
    swallowed = [e for e in events if e["pred"] and any(f.startswith("person") for f, _, _ in e["gold"])
                 and not any(f.startswith("person") for f, _, _ in e["pred"]) and e["type"] == "merged"]
    out["authors_swallowed"] = (len(swallowed), f1_fixed(swallowed, totals) - base)
    out["boundary"] = boundary_detail([e for e in events if e["type"] == "boundary"], y_true, y_pred, words)
    return out


def boundary_detail(events, y_true, y_pred, words):
    """Boundary shifts: how far the edges move, the tokens that change field and between which fields."""
    size, moved, pairs = Counter(), Counter(), Counter()
    for e in events:
        i = e["seq"]
        for (_, sg, eg), (_, sp, ep) in zip(e["gold"], e["pred"]):
            size.update(min(abs(a - b), 4) for a, b in ((sg, sp), (eg, ep)) if a != b)
        lo, hi = e["gold"][0][1], e["gold"][-1][2]
        for t in range(min(lo, e["pred"][0][1]), max(hi, e["pred"][-1][2])):
            g, p = str(y_true[i][t])[2:] or "O", str(y_pred[i][t])[2:] or "O"
            if g != p:
                moved[words[i][t]] += 1
                pairs[f"{g} -> {p}"] += 1
    return {"tokens_moved": {str(k): v for k, v in sorted(size.items())},
            "top_words": moved.most_common(15), "fields": pairs.most_common(10)}
