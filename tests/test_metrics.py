"""Tests of sklearn_struct.metrics: conlleval chunk scores, token, multi-label, matching."""


import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import accuracy_score, hamming_loss, make_scorer
from sklearn.model_selection import KFold, cross_val_score

from sklearn_struct.datasets import load_conll
from sklearn_struct.metrics import (
    SCORERS,
    _chunk_counts,
    chunk_f1_score,
    chunk_precision_recall_f1,
    hamming_loss_multilabel,
    matching_error,
    segment_report,
    subset_accuracy,
    token_accuracy,
)

# --------------------------------------------------------------------------------------
# Reference: an independent per-token re-implementation of conlleval's chunk rules (its
# end-of-chunk / start-of-chunk tag tables and counting), reading a CoNLL "file" token by
# token. Deliberately a plain loop, structured unlike the vectorised library version.


def _split(tag):
    if "-" in tag:
        head, kind = tag.split("-", 1)
    else:
        head, kind = tag, ""
    return head, ("" if kind in ("", "0") else kind)


def _ref_end(prev, tag, prev_type, kind, iobes):
    pairs = {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
    if iobes:
        pairs |= {("B", "S"), ("I", "S"), ("E", "S"), ("E", "B")}
        pairs |= {("S", t) for t in "EIOSB"}
    end = (prev, tag) in pairs
    if prev not in ("O", ".") and prev_type != kind:
        end = True
    if prev in ("]", "["):
        end = True
    return end


def _ref_start(prev, tag, prev_type, kind, iobes):
    pairs = {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}
    if iobes:
        pairs |= {("S", "B"), ("E", "B"), ("S", "I"), ("S", "E")}
        pairs |= {(p, "S") for p in "BIOSE"}
    start = (prev, tag) in pairs
    if tag not in ("O", ".") and prev_type != kind:
        start = True
    if tag in ("[", "]"):
        start = True
    return start


def conlleval_reference(y_true, y_pred, iobes=False):
    """(correct, found_correct, found_guessed) exactly as conlleval.pl computes them."""
    lines = []
    for t_seq, p_seq in zip(y_true, y_pred):
        lines.extend(zip(t_seq, p_seq))
        lines.append(None)  # blank line between sentences
    correct_chunks = found_correct = found_guessed = 0
    in_correct = False
    last_c, last_c_type, last_g, last_g_type = "O", "", "O", ""
    for line in lines:
        if line is None:
            c, c_type, g, g_type = "O", "", "O", ""
        else:
            (c, c_type), (g, g_type) = _split(line[0]), _split(line[1])
        end_c = _ref_end(last_c, c, last_c_type, c_type, iobes)
        end_g = _ref_end(last_g, g, last_g_type, g_type, iobes)
        start_c = _ref_start(last_c, c, last_c_type, c_type, iobes)
        start_g = _ref_start(last_g, g, last_g_type, g_type, iobes)
        if in_correct:
            if end_c and end_g and last_g_type == last_c_type:
                in_correct = False
                correct_chunks += 1
            elif end_c != end_g or g_type != c_type:
                in_correct = False
        if start_c and start_g and g_type == c_type:
            in_correct = True
        found_correct += start_c
        found_guessed += start_g
        last_c, last_c_type, last_g, last_g_type = c, c_type, g, g_type
    if in_correct:
        correct_chunks += 1
    return correct_chunks, found_correct, found_guessed


# --------------------------------------------------------------------------------------
# Hand-computed cases (IOB rules of the conlleval documentation)


@pytest.mark.parametrize(
    "y_true, y_pred, expected",
    [
        # I- after O starts a chunk: IOB1 "I-NP I-NP" equals IOB2 "B-NP I-NP"
        ([["O", "I-NP", "I-NP"]], [["O", "B-NP", "I-NP"]], (1, 1, 1)),
        # B- of the same type splits a chunk: 2 true chunks vs 1 predicted, none correct
        ([["B-NP", "I-NP", "B-NP"]], [["B-NP", "I-NP", "I-NP"]], (0, 2, 1)),
        # a type change starts a new chunk even with I-; both chunks found
        ([["B-NP", "I-VP", "I-VP"]], [["B-NP", "B-VP", "I-VP"]], (2, 2, 2)),
        # IOB1: I-X after I-Y starts a chunk; B-X only between same-type chunks
        ([["I-NP", "I-NP", "B-NP", "I-VP"]], [["B-NP", "I-NP", "B-NP", "B-VP"]], (3, 3, 3)),
        # same span, wrong type: found but not correct
        ([["B-NP", "I-NP"]], [["B-VP", "I-VP"]], (0, 1, 1)),
        # predicted chunk ends too early
        ([["B-NP", "I-NP", "I-NP"]], [["B-NP", "I-NP", "O"]], (0, 1, 1)),
        # predicted chunk runs on: still wrong
        ([["B-NP", "O", "B-VP"]], [["B-NP", "I-NP", "B-VP"]], (1, 2, 2)),
        # chunks never cross sequences: I-NP opening sequence 1 is a new chunk
        ([["B-NP", "I-NP"], ["I-NP", "O"]], [["B-NP", "I-NP"], ["B-NP", "O"]], (2, 2, 2)),
        # all outside
        ([["O", "O"]], [["O", "O"]], (0, 0, 0)),
        # hyphens inside the type: the type is everything after the first hyphen
        ([["B-PP-LOC", "I-PP-LOC"]], [["B-PP-LOC", "I-PP-LOC"]], (1, 1, 1)),
    ],
)
def test_chunk_counts_hand_cases(y_true, y_pred, expected):
    assert _chunk_counts(y_true, y_pred) == expected
    assert conlleval_reference(y_true, y_pred) == expected


def test_chunk_scores_from_counts():
    y_true = [["B-NP", "I-NP", "O", "B-VP", "B-NP"], ["B-PP", "B-NP"]]
    y_pred = [["B-NP", "I-NP", "O", "B-NP", "B-NP"], ["B-PP", "I-PP"]]
    # true chunks: NP, VP, NP, PP, NP (5); predicted: NP, NP, NP, PP (4); correct: NP, NP (2)
    assert _chunk_counts(y_true, y_pred) == (2, 5, 4)
    p, r, f = chunk_precision_recall_f1(y_true, y_pred)
    assert (p, r) == (0.5, 0.4)
    assert f == pytest.approx(2 * 0.5 * 0.4 / 0.9)
    assert chunk_f1_score(y_true, y_pred) == f


def test_chunk_iobes_rules():
    # conlleval has no S- rules: two adjacent single-token chunks merge into one
    assert _chunk_counts([["S-NP", "S-NP"]], [["S-NP", "S-NP"]], "conlleval") == (1, 1, 1)
    assert _chunk_counts([["S-NP", "S-NP"]], [["S-NP", "S-NP"]], "auto") == (2, 2, 2)
    # ... nor for B- after E-
    iobes = [["B-NP", "E-NP", "B-NP", "E-NP", "S-VP", "O"]]
    assert _chunk_counts(iobes, iobes, "conlleval") == (2, 2, 2)
    assert _chunk_counts(iobes, iobes, "IOBES") == (3, 3, 3)
    assert chunk_f1_score(iobes, [["B-NP", "I-NP", "I-NP", "E-NP", "S-VP", "O"]]) == pytest.approx(
        2 * 1 / (3 + 2)
    )
    # on IOB tags the extended rules are conlleval's
    iob = [["B-NP", "I-NP", "B-NP", "O", "I-VP", "I-NP"]]
    assert _chunk_counts(iob, iob, "auto") == _chunk_counts(iob, iob, "conlleval") == (4, 4, 4)


def test_chunk_odd_tags_do_not_crash():
    tags = [["[", ".", "]", "O", "E-NP", "S-NP", "B", "I", "x-y", "O-NP", "B-0"]]
    for scheme in ("auto", "conlleval"):
        got = _chunk_counts(tags, tags, scheme)
        assert got == conlleval_reference(tags, tags, iobes=scheme == "auto")
        assert 0 <= chunk_f1_score(tags, tags, scheme=scheme) <= 1
    # conlleval quirk: a bare "S" never closes its chunk, so the candidate stays open
    # across "O" and is dropped only because the current types differ at "I-NP"/"I-VP"
    y_true, y_pred = [["B", "S", "O", "I-NP", "O"]], [["B", "S", "O", "I-VP", "O"]]
    assert _chunk_counts(y_true, y_pred, "conlleval") == (0, 2, 2)
    assert conlleval_reference(y_true, y_pred) == (0, 2, 2)


def test_chunk_scheme_validation_names_sequence():
    with pytest.raises(ValueError, match=r"y_pred: sequence 1 has tag 'S-NP'.*IOB2"):
        chunk_f1_score([["B-NP"], ["O"]], [["B-NP"], ["S-NP"]], scheme="IOB2")
    with pytest.raises(ValueError, match="sequence 0 has tag 'X-NP'"):
        chunk_f1_score([["X-NP"]], [["O"]], scheme="IOBES")
    assert chunk_f1_score([["S-NP"]], [["S-NP"]], scheme="IOBES") == 1.0
    with pytest.raises(ValueError, match="scheme"):
        chunk_f1_score([["O"]], [["O"]], scheme="BILOU")


def test_chunk_input_forms():
    # a flat list of tags is one sequence; ndarrays of str work
    assert chunk_f1_score(["B-NP", "I-NP", "O"], ["B-NP", "I-NP", "O"]) == 1.0
    assert chunk_f1_score(np.array(["B-NP", "O"]), np.array(["B-NP", "O"])) == 1.0
    y = [np.array(["B-NP", "I-NP"], dtype=object), np.array(["O"])]
    assert chunk_f1_score(y, y) == 1.0
    with pytest.raises(ValueError, match="sequence 0 holds int64 labels"):
        chunk_f1_score([np.array([0, 1])], [np.array([0, 1])], scheme="conlleval")
    # integer labels are plain labels: IO segments under "auto"
    assert chunk_f1_score([np.array([0, 1])], [np.array([0, 1])]) == 1.0


def test_chunk_zero_division():
    assert chunk_precision_recall_f1([["O"]], [["O"]]) == (0.0, 0.0, 0.0)
    assert chunk_precision_recall_f1([["O"]], [["O"]], zero_division=1.0) == (1.0, 1.0, 1.0)
    p, r, f = chunk_precision_recall_f1([["B-NP"]], [["O"]], zero_division=1.0)
    assert (p, r, f) == (1.0, 0.0, 0.0)
    assert np.isnan(chunk_precision_recall_f1([["O"]], [["O"]], zero_division="nan")[2])


# IOB and IOBES tags plus conlleval's odd cases: brackets, ".", bare prefixes
_TAGS = ["O", "B-NP", "I-NP", "B-VP", "I-VP", "E-NP", "S-NP", "E-VP", "S-VP"]
_TAGS += ["[", "]", ".", "B", "I", "S"]


@st.composite
def _tag_pairs(draw, alphabet):
    lengths = draw(st.lists(st.integers(1, 8), min_size=1, max_size=5))
    tag = st.sampled_from(alphabet)
    y_true = [draw(st.lists(tag, min_size=n, max_size=n)) for n in lengths]
    y_pred = [draw(st.lists(tag, min_size=n, max_size=n)) for n in lengths]
    return y_true, y_pred


@settings(max_examples=300, deadline=None)
@given(_tag_pairs(["O", "B-NP", "I-NP", "B-VP", "I-VP"]))
def test_chunk_counts_match_conlleval_iob(pair):
    y_true, y_pred = pair
    expected = conlleval_reference(y_true, y_pred)
    assert _chunk_counts(y_true, y_pred, "conlleval") == expected
    assert _chunk_counts(y_true, y_pred, "auto") == expected  # same rules without S-/E-


@settings(max_examples=300, deadline=None)
@given(_tag_pairs(_TAGS), st.booleans())
def test_chunk_counts_match_conlleval_any_tags(pair, iobes):
    y_true, y_pred = pair
    scheme = "auto" if iobes else "conlleval"
    assert _chunk_counts(y_true, y_pred, scheme) == conlleval_reference(y_true, y_pred, iobes)


@settings(max_examples=100, deadline=None)
@given(_tag_pairs(["O", "B-NP", "I-NP", "B-VP", "I-VP", "E-NP", "S-NP", "E-VP", "S-VP"]))
def test_chunk_scores_bounded_and_perfect_on_self(pair):
    y_true, y_pred = pair
    p, r, f = chunk_precision_recall_f1(y_true, y_pred)
    assert 0 <= min(p, r, f) and max(p, r, f) <= 1
    n_correct, n_true, _ = _chunk_counts(y_true, y_true)
    assert n_correct == n_true


def test_conll2000_gold_and_noisy(data_home):
    gold = load_conll(data_home / "conll2000" / "test.txt.gz").labels
    assert len(gold) == 2012 and sum(map(len, gold)) == 47377
    assert chunk_precision_recall_f1(gold, gold) == (1.0, 1.0, 1.0)
    assert token_accuracy(gold, gold) == 1.0
    # corrupt 10% of the tags: vectorised counts still equal the token-by-token reference
    rng = np.random.default_rng(0)
    tag_set = sorted({t for s in gold for t in s})
    noisy = [
        [rng.choice(tag_set) if rng.random() < 0.1 else t for t in s] for s in gold
    ]
    assert _chunk_counts(gold, noisy) == conlleval_reference(gold, noisy)
    assert 0.7 < chunk_f1_score(gold, noisy) < 0.95


# --------------------------------------------------------------------------------------
# token accuracy and validation


def test_token_accuracy_matches_flat_accuracy():
    rng = np.random.default_rng(0)
    y_true = [rng.integers(0, 3, n) for n in (4, 1, 7)]
    y_pred = [rng.integers(0, 3, n) for n in (4, 1, 7)]
    flat = accuracy_score(np.concatenate(y_true), np.concatenate(y_pred))
    assert token_accuracy(y_true, y_pred) == pytest.approx(flat)
    assert token_accuracy(np.array([1, 2, 3]), np.array([1, 2, 0])) == pytest.approx(2 / 3)
    assert token_accuracy(["abc", "de"], ["abd", "de"]) == pytest.approx(4 / 5)  # OCR words


@pytest.mark.parametrize(
    "y_true, y_pred, message",
    [
        ([[1, 2], [3]], [[1, 2]], "different numbers of sequences: 2 and 1"),
        ([[1, 2], [3]], [[1, 2], [3, 4]], "Sequence 1: y_true has 1 labels but y_pred has 2"),
        ([], [], "y_true is empty"),
        ([[1]], [], "y_pred is empty"),
        ([[1], []], [[1], []], "y_true: Sequence 1: labels are empty"),
        ([[1], [[1, 2]]], [[1], [1]], "y_true: Sequence 1: labels must be 1D"),
    ],
)
def test_sequence_validation(y_true, y_pred, message):
    for metric in (token_accuracy, chunk_f1_score):
        with pytest.raises(ValueError, match=message):
            metric(y_true, y_pred)


# --------------------------------------------------------------------------------------
# multi-label


def test_multilabel_metrics_agree_with_sklearn():
    rng = np.random.default_rng(0)
    Y_true = rng.integers(0, 2, (30, 5))
    Y_pred = rng.integers(0, 2, (30, 5))
    Y_pred[:5] = Y_true[:5]
    assert hamming_loss_multilabel(Y_true, Y_pred) == pytest.approx(hamming_loss(Y_true, Y_pred))
    assert subset_accuracy(Y_true, Y_pred) == pytest.approx(accuracy_score(Y_true, Y_pred))
    # sparse input, either side
    S_true, S_pred = sp.csr_matrix(Y_true), sp.csr_matrix(Y_pred)
    assert hamming_loss_multilabel(S_true, S_pred) == pytest.approx(hamming_loss(S_true, S_pred))
    assert subset_accuracy(S_true, Y_pred) == pytest.approx(accuracy_score(Y_true, Y_pred))


@pytest.mark.parametrize(
    "Y_true, Y_pred, message",
    [
        ([[0, 1]], [[0, 1, 1]], "different shapes"),
        ([[0, 2]], [[0, 1]], "only 0 and 1"),
        ([0, 1], [0, 1], "2D"),
        (np.zeros((0, 3)), np.zeros((0, 3)), "empty"),
    ],
)
def test_multilabel_validation(Y_true, Y_pred, message):
    for metric in (hamming_loss_multilabel, subset_accuracy):
        with pytest.raises(ValueError, match=message):
            metric(Y_true, Y_pred)


# --------------------------------------------------------------------------------------
# matchings


def test_matching_error():
    y_true = [np.arange(4), np.array([2, 0, 1])]
    y_pred = [np.array([1, 0, 2, 3]), np.array([2, 0, 1])]
    assert matching_error(y_true, y_pred) == pytest.approx(2 / 7)
    assert matching_error(np.array([[0, 1, 2]]), np.array([[0, 1, 2]])) == 0.0


@pytest.mark.parametrize(
    "y_pred, message",
    [
        ([[0, 1, 2], [0, 0]], "y_pred: sample 1 is not a permutation of 0..1"),
        ([[0, 1, 3], [1, 0]], "y_pred: sample 0 is not a permutation"),
        ([[0, 1, -1], [1, 0]], "sample 0 is not a permutation"),
        ([[0, 1, 2], [1, 0, 2]], "Sequence 1: y_true has 2 labels but y_pred has 3"),
        ([[0, 1, 2], [0.5, 1]], "entries must be integers"),
    ],
)
def test_matching_validation(y_pred, message):
    with pytest.raises(ValueError, match=message):
        matching_error([[0, 1, 2], [1, 0]], y_pred)


# --------------------------------------------------------------------------------------
# scorers on list-of-sequences data


class _EchoTagger(ClassifierMixin, BaseEstimator):
    """Predicts the tags stored in each 'sequence' of X (X is a list of (tokens, tags))."""

    def fit(self, X, y):
        self.classes_ = np.unique(np.concatenate([np.asarray(s) for s in y]))
        return self

    def predict(self, X):
        return [np.array(tags) for _, tags in X]


def _echo_data():
    y = [["B-NP", "I-NP", "O"], ["B-VP", "O"], ["B-NP"], ["O", "B-PP"]]
    pred = [["B-NP", "I-NP", "O"], ["B-NP", "O"], ["B-NP"], ["O", "B-PP"]]
    X = [(list(range(len(p))), p) for p in pred]
    return X, y


def test_make_scorer_on_sequences():
    X, y = _echo_data()
    est = _EchoTagger().fit(X, y)
    pred = est.predict(X)
    assert make_scorer(chunk_f1_score)(est, X, y) == pytest.approx(chunk_f1_score(y, pred))
    assert make_scorer(token_accuracy)(est, X, y) == pytest.approx(7 / 8)
    assert SCORERS["chunk_f1"](est, X, y) == pytest.approx(0.75)
    # sequence targets are ragged: stratified splitting does not apply, so pass a KFold
    scores = cross_val_score(_EchoTagger(), X, y, cv=KFold(2), scoring=SCORERS["token_accuracy"])
    assert scores.shape == (2,)


def test_loss_scorers_are_negated():
    class Fixed(BaseEstimator):
        def fit(self, X, y):
            return self

        def predict(self, X):
            return np.asarray(X)

    Y = np.array([[1, 0], [0, 1]])
    assert SCORERS["neg_hamming_loss"](Fixed(), [[1, 1], [0, 1]], Y) == -0.25
    assert SCORERS["subset_accuracy"](Fixed(), [[1, 1], [0, 1]], Y) == 0.5
    assert SCORERS["neg_matching_error"](Fixed(), [[1, 0, 2]], [[0, 1, 2]]) == pytest.approx(-2 / 3)


# --------------------------------------------------------------------------------------
# IO scheme (plain labels) and the per-type report. Reference: a plain loop that lists the
# (sequence, start, end, type) of every maximal run of one label and compares sets.


def _ref_segments(seqs, outside="O"):
    out = set()
    for i, s in enumerate(seqs):
        s = [str(t)[2:] if str(t).startswith("I-") else t for t in s]
        start = 0
        for k in range(1, len(s) + 1):
            if k == len(s) or s[k] != s[start]:
                if s[start] != outside:
                    out.add((i, start, k - 1, s[start]))
                start = k
    return out


def _ref_io_counts(y_true, y_pred):
    t, p = _ref_segments(y_true), _ref_segments(y_pred)
    return len(t & p), len(t), len(p)


@pytest.mark.parametrize(
    "y_true, y_pred, expected",
    [
        # identical plain labels: every run is a segment, all correct (the silent zero)
        ([["author", "author", "title"]], [["author", "author", "title"]], (2, 2, 2)),
        # a field split in two by one wrong token: 3 predicted segments, none of the 2 true correct
        ([["title", "title", "title", "date"]], [["title", "note", "title", "date"]], (1, 2, 4)),
        # a run that extends into the next field is wrong, and so is the shortened next field
        ([["author", "title", "title"]], [["author", "author", "title"]], (0, 2, 2)),
        # runs never cross sequences
        ([["a", "a"], ["a"]], [["a", "a"], ["a"]], (2, 2, 2)),
        # "O" is outside, "I-X" is type X
        ([["O", "I-PER", "I-PER", "O"]], [["O", "PER", "PER", "O"]], (1, 1, 1)),
    ],
)
def test_io_counts_hand_cases(y_true, y_pred, expected):
    assert _chunk_counts(y_true, y_pred, "IO") == expected
    assert _ref_io_counts(y_true, y_pred) == expected


def test_plain_labels_never_score_a_silent_zero():
    y = [["author", "author", "title", "date"], ["title", "journal"]]
    assert chunk_precision_recall_f1(y, y) == (1.0, 1.0, 1.0)  # "auto" picks IO
    assert chunk_precision_recall_f1(y, y, scheme="IO") == (1.0, 1.0, 1.0)
    with pytest.warns(UserWarning, match="scheme='IO'"):  # forced conlleval: warn, not silence
        assert chunk_precision_recall_f1(y, y, scheme="conlleval") == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="y_pred: sequence 1 has tag 'B-NP'.*IO scheme"):
        chunk_f1_score([["O"], ["O"]], [["O"], ["B-NP"]], scheme="IO")


@settings(max_examples=150, deadline=None)
@given(_tag_pairs(["author", "title", "date", "O", "I-title"]))
def test_io_counts_match_reference(pair):
    y_true, y_pred = pair
    assert _chunk_counts(y_true, y_pred, "IO") == _ref_io_counts(y_true, y_pred)
    ints_t = [[len(str(t)) for t in s] for s in y_true]  # integer labels work the same way
    ints_p = [[len(str(t)) for t in s] for s in y_pred]
    expected = _ref_io_counts(ints_t, ints_p)
    assert _chunk_counts([np.array(s) for s in ints_t], [np.array(s) for s in ints_p]) == expected


@settings(max_examples=100, deadline=None)
@given(_tag_pairs(["author", "title", "date"]) | _tag_pairs(["O", "B-NP", "I-NP", "B-VP", "I-VP"]))
def test_segment_report_per_type_matches_reference(pair):
    y_true, y_pred = pair
    io = not any("-" in t for s in y_true + y_pred for t in s)
    report = segment_report(y_true, y_pred, output_dict=True)
    micro = chunk_precision_recall_f1(y_true, y_pred)
    assert (report["micro avg"]["precision"], report["micro avg"]["recall"],
            report["micro avg"]["f1-score"]) == pytest.approx(micro)
    t_all = _ref_segments(y_true) if io else None
    for kind, row in report.items():
        if kind.endswith("avg"):
            continue
        if io:  # per-type counts against the plain-loop reference
            t = {x for x in t_all if x[3] == kind}
            p = {x for x in _ref_segments(y_pred) if x[3] == kind}
            assert row["support"] == len(t)
            assert row["f1-score"] == pytest.approx(2 * len(t & p) / (len(t) + len(p)))
        else:  # per type = conlleval's counts on the sequences with the other types replaced by O
            keep = [[x if x.endswith(kind) else "O" for x in s] for s in y_true]
            keep_p = [[x if x.endswith(kind) else "O" for x in s] for s in y_pred]
            c, t, p = conlleval_reference(keep, keep_p)
            assert row["support"] == t
            assert row["f1-score"] == pytest.approx(2 * c / (t + p) if t + p else 0.0)
    per_type = [v["f1-score"] for k, v in report.items() if not k.endswith("avg")]
    if per_type:
        assert report["macro avg"]["f1-score"] == pytest.approx(np.mean(per_type))


def test_segment_report_text_and_validation():
    text = segment_report([["a", "a", "b"]], [["a", "b", "b"]], digits=3)
    assert "micro avg" in text and "0.000" in text
    with pytest.raises(ValueError, match="scheme"):
        segment_report([["a"]], [["a"]], scheme="BILOU")
    with pytest.raises(ValueError, match="different numbers of sequences"):
        segment_report([["a"]], [["a"], ["b"]])


def test_segment_report_summary_rows_never_collide_with_chunk_types():
    # a chunk type named "micro avg" used to overwrite the summary row (macro F1 1.0 instead of 0.5)
    y_true = [["B-micro avg", "O", "B-NP"]]
    y_pred = [["B-micro avg", "O", "O"]]
    report = segment_report(y_true, y_pred, output_dict=True)
    assert sorted(report) == sorted(["'micro avg'", "NP", "micro avg", "macro avg"])
    assert report["'micro avg'"]["f1-score"] == 1.0 and report["NP"]["f1-score"] == 0.0
    assert report["macro avg"]["f1-score"] == pytest.approx(0.5)
    assert report["micro avg"]["f1-score"] == pytest.approx(2 / 3)
    text = segment_report(y_true, y_pred)
    assert text.splitlines()[-1].split()[-2] == "0.50"  # macro avg F1
    assert "'micro avg'" in text
