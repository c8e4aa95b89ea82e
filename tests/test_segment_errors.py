"""Segment error events by type (sklearn_struct.metrics.segment_error_*), worked out by hand."""

import pytest

from sklearn_struct._segment_errors import _bio_segments as bio_segments
from sklearn_struct.metrics import chunk_precision_recall_f1
from sklearn_struct.metrics import segment_error_events as segment_events
from sklearn_struct.metrics import segment_error_table as error_table
from sklearn_struct.metrics import segment_f1_if_fixed as f1_fixed

GOLD = [["B-a", "I-a", "O", "B-b", "I-b", "B-c", "B-d", "I-d", "I-d", "B-e", "B-f", "I-f", "O"],
        ["B-a", "B-b", "I-b", "B-c", "I-c", "O", "B-d"]]
PRED = [["B-a", "I-a", "B-b", "I-b", "I-b", "B-x", "B-d", "B-d", "I-d", "B-e", "I-e", "B-f", "B-g"],
        ["B-a", "I-a", "B-b", "B-b", "I-b", "I-b", "O"]]


def test_bio_segments_follow_conlleval():
    assert bio_segments(["B-a", "I-a", "I-b", "O", "I-b", "B-b"]) == [("a", 0, 2), ("b", 2, 3), ("b", 4, 5),
                                                                      ("b", 5, 6)]
    with pytest.raises(ValueError, match="y_pred sequence 3: tag 'x' at token 1"):
        bio_segments(["O", "x"], "y_pred sequence 3")


def test_events_by_hand():
    events, totals = segment_events(GOLD, PRED)
    shapes = sorted((e["seq"], e["type"], e["count_visible"]) for e in events)
    # seq 0: b's start moves (boundary), c -> x (wrong label), d cut in two (split), e grows into f's first token
    # and f loses it (two segments, same fields, other spans: boundary), g over gold O (spurious)
    # seq 1: a and b shift their shared edge (boundary), c is predicted b over one more token
    # (label+boundary), d predicted O (missed)
    assert shapes == [(0, "boundary", False), (0, "boundary", False), (0, "split", True), (0, "spurious", True),
                      (0, "wrong label", True), (1, "boundary", False), (1, "label+boundary", True),
                      (1, "missed", True)]
    # right: a (seq 0) only
    assert totals == {"tp": 1, "n_gold": 10, "n_pred": 11}
    assert f1_fixed([], totals) == pytest.approx(100 * chunk_precision_recall_f1(GOLD, PRED, scheme="IOB2")[2])
    assert f1_fixed(events, totals) == pytest.approx(100.0)
    table = error_table(events, totals)
    # fixing the split: its gold d becomes right (tp 2) and its two predicted pieces become one (n_pred 10)
    assert table["split"] == (1, pytest.approx(200 * 2 / 20 - 200 / 21))
    # the three boundary events: five gold segments right, predicted count unchanged
    assert table["boundary"] == (3, pytest.approx(200 * 6 / 21 - 200 / 21))


def test_bad_input_names_the_sequence():
    with pytest.raises(ValueError, match="sequence 1: y_true has 7 tokens, y_pred 6"):
        segment_events(GOLD, [PRED[0], PRED[1][:-1]])
    with pytest.raises(ValueError, match="2 sequences, y_pred 1"):
        segment_events(GOLD, PRED[:1])


def test_table_lists_every_type_and_checks_its_input():
    events, totals = segment_events(GOLD, PRED)
    table = error_table(events, totals)
    assert list(table)[:3] == ["boundary", "wrong label", "label+boundary"] and len(table) == 8
    assert table["merged"] == (0, 0.0) and table["many-to-many"] == (0, 0.0)
    by_seq = error_table(events, totals, key=lambda e: e["seq"])
    assert sorted(by_seq) == [0, 1] and sum(n for n, _ in by_seq.values()) == len(events)
    with pytest.raises(TypeError, match="key must be a callable"):
        error_table(events, totals, key="type")
    with pytest.raises(TypeError, match="events"):
        f1_fixed(None, totals)
    with pytest.raises(TypeError, match="totals"):
        f1_fixed(events, {"tp": 1})
    with pytest.raises(ValueError, match="tp <= n_gold"):
        f1_fixed([], {"tp": 3, "n_gold": 2, "n_pred": 5})
    with pytest.raises(ValueError, match="y_pred sequence 0: tag 'x' at token 1"):
        segment_events([["O", "O"]], [["O", "x"]])
