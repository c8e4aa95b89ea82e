"""Evaluation metrics for structured outputs: sequences, chunks, label sets and matchings.

Sequence metrics take ``y_true`` and ``y_pred`` as lists of per-sequence label arrays
(the form every sequence estimator here predicts) and return fractions in [0, 1], like
:mod:`sklearn.metrics`. Every function can be wrapped by :func:`sklearn.metrics.make_scorer`;
ready-made scorers are in :data:`SCORERS`.

Chunk scores follow the rules of ``conlleval.pl``, the official CoNLL-2000 evaluation
script, token for token (see :func:`chunk_precision_recall_f1`).
"""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import make_scorer
from sklearn.utils._param_validation import StrOptions, validate_params

from ._segment_errors import segment_error_events, segment_error_table, segment_f1_if_fixed
from .utils.validation import _as_list, check_sequence_labels

__all__ = [
    "token_accuracy",
    "chunk_precision_recall_f1",
    "chunk_f1_score",
    "segment_report",
    "segment_error_events",
    "segment_error_table",
    "segment_f1_if_fixed",
    "hamming_loss_multilabel",
    "subset_accuracy",
    "matching_error",
    "SCORERS",
]


# ----------------------------------------------------------------------------- sequences


def token_accuracy(y_true, y_pred):
    """Fraction of tokens, over all sequences, whose predicted label is correct.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True labels, one array per sequence. A single 1D ndarray counts as one
        sequence, a 2D ndarray as one sequence per row.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted labels, with the same lengths as ``y_true``.

    Returns
    -------
    accuracy : float
        Correct tokens divided by all tokens (longer sequences weigh more).

    Examples
    --------
    >>> from sklearn_struct.metrics import token_accuracy
    >>> token_accuracy([["B-NP", "I-NP"], ["O"]], [["B-NP", "O"], ["O"]])
    0.666...
    """
    true, pred = _check_sequence_pair(y_true, y_pred)
    return float(np.mean(np.concatenate(true) == np.concatenate(pred)))


@validate_params(
    {
        "y_true": ["array-like"],
        "y_pred": ["array-like"],
        "scheme": [StrOptions({"auto", "conlleval", "IOB1", "IOB2", "IOBES", "IO"})],
        "zero_division": [StrOptions({"nan"}), numbers.Real],  # which reals: _zero_division_value
    },
    prefer_skip_nested_validation=True,
)
def chunk_precision_recall_f1(y_true, y_pred, *, scheme="auto", zero_division=0.0):
    """Chunk precision, recall and F1 with the rules of ``conlleval.pl``.

    A predicted chunk is correct when a true chunk of the same type starts and ends on
    the same tokens. Tags are ``"O"`` or ``PREFIX-TYPE`` (``"B-NP"``, ``"I-VP"``); the
    prefix is the text before the first hyphen, the type everything after it. Chunks
    never cross sequence boundaries.

    Plain labels without prefixes (``"author"``, ``"title"``, or integers), as in field
    extraction, are read in the ``"IO"`` scheme: every maximal run of one label is a
    segment (``"O"`` and ``"I-X"`` are also understood there: ``"O"`` is outside and
    ``"I-X"`` has type ``X``). ``scheme="auto"`` picks it when no tag carries a conlleval
    prefix, so plain labels never score a silent zero.

    Boundaries follow conlleval exactly: a chunk starts at ``B-X``, at ``I-X`` after
    ``O`` and at any tag whose type differs from the previous tag's (so ``I-X`` after
    ``I-Y`` starts one: IOB1 and IOB2 are read alike); it ends before ``B``, ``O``, a
    type change, and after ``E-X`` (IOE); ``[`` and ``]`` are one-token chunks and
    ``.`` counts as outside.

    Parameters
    ----------
    y_true : list of array-like of str
        True tags, one array per sequence (a flat list of str is one sequence).
    y_pred : list of array-like of str
        Predicted tags, with the same lengths as ``y_true``.
    scheme : {"auto", "conlleval", "IOB1", "IOB2", "IOBES", "IO"}, default="auto"
        - ``"IO"``: each maximal run of one label is a segment of that label's type
          (``"I-X"`` counts as type ``X``, ``"O"`` as outside; ``"B-"``, ``"E-"`` and
          ``"S-"`` tags are an error). Labels may be any hashable values, e.g. ints.
        - ``"conlleval"``: the original script's rules and nothing else. It has no
          rules for ``S-`` tags nor for ``B-X`` after ``E-X``, so on IOBES tags it merges
          neighbouring chunks of one type; choose it only to reproduce its figures.
        - ``"auto"``: ``"IO"`` when no tag other than ``"O"`` starts with a conlleval
          prefix (``B I E S [ ] .`` followed by a hyphen or alone) or the labels are not
          strings; otherwise conlleval's rules plus those of its IOBES variant (``S-X`` is
          a one-token chunk, ``E-X`` and ``S-X`` close a chunk, ``B-X`` and ``S-X`` always
          open one). On tags without ``S-`` or ``E-`` prefixes it is conlleval exactly.
        - ``"IOB1"``, ``"IOB2"``: conlleval's rules, after checking that every tag is
          ``O``, ``B-*`` or ``I-*``.
        - ``"IOBES"``: the ``"auto"`` rules, after checking that every prefix is one of
          ``B, I, O, E, S``.
    zero_division : {0.0, 1.0, np.nan, "nan"}, default=0.0
        Value of precision (recall) when no chunk is predicted (exists), and of F1 when
        both precision and recall are 0. conlleval reports 0.

    Returns
    -------
    precision : float
        Correct chunks divided by predicted chunks, a fraction (conlleval prints percent).
    recall : float
        Correct chunks divided by true chunks.
    f1 : float
        Harmonic mean of precision and recall.

    See Also
    --------
    chunk_f1_score : the F1 alone, for scoring.
    segment_report : precision, recall and F1 per chunk type.

    References
    ----------
    E. F. Tjong Kim Sang and S. Buchholz. "Introduction to the CoNLL-2000 Shared Task:
    Chunking." CoNLL 2000. ``conlleval.pl``, version 2004-01-26.

    Examples
    --------
    >>> from sklearn_struct.metrics import chunk_precision_recall_f1
    >>> y_true = [["B-NP", "I-NP", "O", "B-VP"]]
    >>> y_pred = [["B-NP", "I-NP", "O", "B-NP"]]
    >>> chunk_precision_recall_f1(y_true, y_pred)
    (0.5, 0.5, 0.5)
    >>> chunk_precision_recall_f1([["S-NP", "S-NP"]], [["B-NP", "E-NP"]])
    (0.0, 0.0, 0.0)
    >>> chunk_precision_recall_f1([["author", "author", "title"]], [["author", "title", "title"]])
    (0.0, 0.0, 0.0)
    >>> chunk_precision_recall_f1([["author", "author", "title"]], [["author", "author", "title"]])
    (1.0, 1.0, 1.0)
    """
    zero = _zero_division_value(zero_division)
    n_correct, n_true, n_pred = _chunk_counts(y_true, y_pred, scheme)
    precision = n_correct / n_pred if n_pred else zero
    recall = n_correct / n_true if n_true else zero
    # 2PR / (P + R) written on counts: defined whenever any chunk exists, as in sklearn.
    f1 = 2 * n_correct / (n_true + n_pred) if n_true + n_pred else zero
    return float(precision), float(recall), float(f1)


def chunk_f1_score(y_true, y_pred, *, scheme="auto", zero_division=0.0):
    """Chunk F1 with the rules of ``conlleval.pl``, a fraction in [0, 1].

    The third value of :func:`chunk_precision_recall_f1`; see it for the parameters.

    Examples
    --------
    >>> from sklearn_struct.metrics import chunk_f1_score
    >>> chunk_f1_score([["B-NP", "I-NP"]], [["B-NP", "I-NP"]])
    1.0
    """
    return chunk_precision_recall_f1(
        y_true, y_pred, scheme=scheme, zero_division=zero_division
    )[2]


def segment_report(y_true, y_pred, *, scheme="auto", digits=2, output_dict=False, zero_division=0.0):
    """Per-type chunk (segment) precision, recall, F1 and support, like ``classification_report``.

    Counts chunks exactly as :func:`chunk_precision_recall_f1` (same ``scheme`` rules), per
    chunk type, and adds the micro average (all chunks pooled: the value of
    :func:`chunk_precision_recall_f1`) and the macro average over the types that occur in
    ``y_true`` or ``y_pred``.

    Parameters
    ----------
    y_true : list of array-like
        True labels, one array per sequence.
    y_pred : list of array-like
        Predicted labels, with the same lengths as ``y_true``.
    scheme : {"auto", "conlleval", "IOB1", "IOB2", "IOBES", "IO"}, default="auto"
        Chunk rules; see :func:`chunk_precision_recall_f1`. Plain labels use ``"IO"``.
    digits : int, default=2
        Digits of the formatted text report.
    output_dict : bool, default=False
        Return a dict ``{type: {"precision", "recall", "f1-score", "support"}}`` (plus
        ``"micro avg"`` and ``"macro avg"``, always the summary rows: a chunk type named like
        one of them is reported under its quoted name, ``"'micro avg'"``) instead of text.
    zero_division : {0.0, 1.0, np.nan, "nan"}, default=0.0
        Value of a score whose denominator is zero (as in scikit-learn).

    Returns
    -------
    report : str or dict
        Scores are fractions; ``support`` is the number of true chunks.

    Examples
    --------
    >>> from sklearn_struct.metrics import segment_report
    >>> y_true = [["author", "author", "title", "title", "date"]]
    >>> y_pred = [["author", "title", "title", "title", "date"]]
    >>> print(segment_report(y_true, y_pred))
              precision    recall  f1-score   support
    <BLANKLINE>
       author      0.00      0.00      0.00         1
         date      1.00      1.00      1.00         1
        title      0.00      0.00      0.00         1
    <BLANKLINE>
    micro avg      0.33      0.33      0.33         3
    macro avg      0.33      0.33      0.33         3
    >>> segment_report(y_true, y_pred, output_dict=True)["date"]["f1-score"]
    1.0
    """
    if scheme not in ("auto", "conlleval", "IOB1", "IOB2", "IOBES", "IO"):
        raise ValueError(f"scheme must be one of auto, conlleval, IOB1, IOB2, IOBES, IO; got {scheme!r}.")
    zero = _zero_division_value(zero_division)
    if not isinstance(digits, numbers.Integral) or digits < 0:
        raise ValueError(f"digits must be an integer >= 0, got {digits!r}.")
    names, correct, n_true, n_pred = _chunk_counts_by_type(y_true, y_pred, scheme)
    present = (n_true + n_pred) > 0
    report = {}

    def scores(c, t, p):
        return {
            "precision": float(c / p) if p else zero,
            "recall": float(c / t) if t else zero,
            "f1-score": float(2 * c / (t + p)) if t + p else zero,
            "support": int(t),
        }

    for name, c, t, p in zip(names[present], correct[present], n_true[present], n_pred[present]):
        report[_type_key(name, report)] = scores(c, t, p)
    per_type = list(report.values())
    report["micro avg"] = scores(correct.sum(), n_true.sum(), n_pred.sum())
    report["macro avg"] = {
        key: float(np.mean([v[key] for v in per_type])) if per_type else zero
        for key in ("precision", "recall", "f1-score")
    }
    report["macro avg"]["support"] = int(n_true.sum())
    if output_dict:
        return report
    width = max([len(k) for k in report] + [len("micro avg")])
    head = " " * width + "".join(f"{h:>10}" for h in ("precision", "recall", "f1-score", "support"))
    lines = [head, ""]

    def row(k, v):
        return f"{k:>{width}}" + "".join(f"{v[h]:>10.{digits}f}" for h in ("precision", "recall", "f1-score")) + (
            f"{v['support']:>10}"
        )

    lines += [row(k, v) for k, v in list(report.items())[:-2]]
    lines += ["", row("micro avg", report["micro avg"]), row("macro avg", report["macro avg"])]
    return "\n".join(lines)


_SUMMARY_ROWS = ("micro avg", "macro avg")


def _type_key(name, report):
    """The report key of a chunk type: its name, quoted (repeatedly) where that is a summary row's key or taken."""
    key = str(name)
    while key in _SUMMARY_ROWS or key in report:
        key = repr(key)
    return key


# ------------------------------------------------------------------------ multi-label


def hamming_loss_multilabel(Y_true, Y_pred):
    """Fraction of (sample, label) entries predicted wrong, for {0, 1} label matrices.

    Equals :func:`sklearn.metrics.hamming_loss` on multilabel-indicator input.

    Parameters
    ----------
    Y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
        True label indicators: 1 where the sample has the label.
    Y_pred : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Predicted label indicators.

    Returns
    -------
    loss : float

    Examples
    --------
    >>> from sklearn_struct.metrics import hamming_loss_multilabel
    >>> hamming_loss_multilabel([[1, 0], [0, 1]], [[1, 1], [0, 1]])
    0.25
    """
    Y_true, Y_pred = _check_indicator_pair(Y_true, Y_pred)
    n_wrong = _row_mismatches(Y_true, Y_pred).sum()
    return float(n_wrong / (Y_true.shape[0] * Y_true.shape[1]))


def subset_accuracy(Y_true, Y_pred):
    """Fraction of samples whose whole label set is predicted exactly (exact match).

    Equals :func:`sklearn.metrics.accuracy_score` on multilabel-indicator input.

    Parameters
    ----------
    Y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
    Y_pred : {array-like, sparse matrix} of shape (n_samples, n_labels)

    Returns
    -------
    accuracy : float
        Samples with every label right, divided by all samples.

    Examples
    --------
    >>> from sklearn_struct.metrics import subset_accuracy
    >>> Y_true = [[1, 0], [0, 1]]
    >>> subset_accuracy(Y_true, [[1, 1], [0, 1]])  # only the second sample is all right
    0.5
    """
    Y_true, Y_pred = _check_indicator_pair(Y_true, Y_pred)
    return float(np.mean(_row_mismatches(Y_true, Y_pred) == 0))


# --------------------------------------------------------------------------- matchings


def matching_error(y_true, y_pred):
    """Fraction of nodes matched to the wrong partner (Hamming error of permutations).

    Parameters
    ----------
    y_true : list of array-like of int
        True matchings, one permutation per sample: ``y[i] = j`` matches left node
        ``i`` to right node ``j``. A 2D int array is one permutation per row.
    y_pred : list of array-like of int
        Predicted permutations, each the same length as its true one.

    Returns
    -------
    error : float
        Wrongly matched nodes divided by all nodes, over all samples.

    Examples
    --------
    >>> from sklearn_struct.metrics import matching_error
    >>> matching_error([[0, 1, 2, 3]], [[1, 0, 2, 3]])
    0.5
    """
    true, pred = _check_sequence_pair(y_true, y_pred)
    for name, perms in (("y_true", true), ("y_pred", pred)):
        for i, perm in enumerate(perms):
            _check_permutation(perm, i, name)
    return float(np.mean(np.concatenate(true) != np.concatenate(pred)))


# ----------------------------------------------------------------------------- scorers

SCORERS = {
    "token_accuracy": make_scorer(token_accuracy),
    "chunk_f1": make_scorer(chunk_f1_score),
    "subset_accuracy": make_scorer(subset_accuracy),
    "neg_hamming_loss": make_scorer(hamming_loss_multilabel, greater_is_better=False),
    "neg_matching_error": make_scorer(matching_error, greater_is_better=False),
}
"""Scorers for ``scoring=`` in ``GridSearchCV`` / ``cross_val_score``, by name.

Losses are negated (``neg_*``), as in scikit-learn, so that greater is always better.
"""


# ----------------------------------------------------------------------------- helpers


def _as_label_sequences(y, name):
    """A list of 1D label arrays from a list of sequences or a 1D/2D ndarray."""
    if isinstance(y, np.ndarray) and y.dtype != object and y.ndim in (1, 2):
        y = [y] if y.ndim == 1 else list(y)
    seqs = _as_list(y, name)
    try:
        return check_sequence_labels(seqs)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _check_sequence_pair(y_true, y_pred):
    true = _as_label_sequences(y_true, "y_true")
    pred = _as_label_sequences(y_pred, "y_pred")
    if len(true) != len(pred):
        raise ValueError(
            f"y_true and y_pred have different numbers of sequences: "
            f"{len(true)} and {len(pred)}."
        )
    for i, (t, p) in enumerate(zip(true, pred)):
        if t.shape[0] != p.shape[0]:
            raise ValueError(
                f"Sequence {i}: y_true has {t.shape[0]} labels but y_pred has {p.shape[0]}."
            )
    return true, pred


def _check_permutation(perm, i, name):
    n = perm.shape[0]
    if perm.dtype.kind not in "iu":
        if perm.dtype.kind != "f" or not np.all(perm == np.round(perm)):
            raise ValueError(f"{name}: sample {i} is not a permutation: entries must be integers.")
    counts = np.bincount(perm.astype(np.int64), minlength=n) if perm.min() >= 0 else None
    if counts is None or counts.shape[0] != n or np.any(counts != 1):
        raise ValueError(
            f"{name}: sample {i} is not a permutation of 0..{n - 1}: "
            "each node must be matched to exactly one partner."
        )


def _check_indicator(Y, name):
    if sp.issparse(Y):
        Y = sp.csr_matrix(Y)
        values = Y.data
    else:
        Y = np.asarray(Y)
        values = Y
    if Y.ndim != 2:
        raise ValueError(f"{name} must be a 2D (n_samples, n_labels) array, got {Y.ndim}D.")
    if Y.shape[0] == 0 or Y.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {Y.shape}.")
    if not np.all((values == 0) | (values == 1)):
        raise ValueError(f"{name} must hold only 0 and 1 (a multilabel indicator matrix).")
    return Y


def _check_indicator_pair(Y_true, Y_pred):
    Y_true = _check_indicator(Y_true, "Y_true")
    Y_pred = _check_indicator(Y_pred, "Y_pred")
    if Y_true.shape != Y_pred.shape:
        raise ValueError(
            f"Y_true and Y_pred have different shapes: {Y_true.shape} and {Y_pred.shape}."
        )
    return Y_true, Y_pred


def _row_mismatches(Y_true, Y_pred):
    """Number of wrong labels in each row; sparse input stays sparse."""
    if sp.issparse(Y_true) or sp.issparse(Y_pred):
        diff = sp.csr_matrix(Y_true, dtype=np.int8) - sp.csr_matrix(Y_pred, dtype=np.int8)
        diff.eliminate_zeros()
        return np.diff(diff.indptr)
    return np.sum(Y_true != Y_pred, axis=1)


# ------------------------------------------------------------------- conlleval chunking

# Tag prefixes conlleval tests for; anything else is _OTHER (it matches no rule).
_O, _B, _I, _E, _S, _OPEN, _CLOSE, _DOT, _OTHER = range(9)
_PREFIX_CODE = {"O": _O, "B": _B, "I": _I, "E": _E, "S": _S, "[": _OPEN, "]": _CLOSE, ".": _DOT}
_SCHEME_PREFIXES = {"IOB1": "BIO", "IOB2": "BIO", "IOBES": "BIOES"}


def _chunk_counts(y_true, y_pred, scheme="auto"):
    """(correct chunks, true chunks, predicted chunks) as conlleval counts them."""
    _, correct, n_true, n_pred = _chunk_counts_by_type(y_true, y_pred, scheme)
    return int(correct.sum()), int(n_true.sum()), int(n_pred.sum())


def _chunk_counts_by_type(y_true, y_pred, scheme="auto"):
    """Chunk types and, per type, (correct, true, predicted) chunk counts."""
    true, pred = _check_sequence_pair(_one_sequence_if_flat(y_true), _one_sequence_if_flat(y_pred))
    if scheme == "auto":
        scheme = "IO" if _plain_labels(true, pred) else "auto"
    if scheme == "IO":
        return _io_counts(true, pred)
    true_tags = _flat_tags(true, "y_true")
    pred_tags = _flat_tags(pred, "y_pred")
    # "O" is always added: it is the tag conlleval reads at every sentence boundary.
    all_tags = np.concatenate([true_tags, pred_tags, ["O"]])
    uniques, codes = np.unique(all_tags, return_inverse=True)
    prefix, kind, names = _parse_tags(uniques)
    if scheme in _SCHEME_PREFIXES:
        _check_scheme(uniques, prefix, scheme, true, pred)
    iobes = scheme in ("auto", "IOBES")

    lengths = np.array([t.shape[0] for t in true], dtype=np.int64)
    boundary = codes[-1]
    n_tokens = true_tags.shape[0]
    c_prefix, c_type = _stream(codes[:n_tokens], lengths, prefix, kind, boundary)
    g_prefix, g_type = _stream(codes[n_tokens:-1], lengths, prefix, kind, boundary)

    c_start, c_end = _boundaries(c_prefix, c_type, iobes)
    g_start, g_end = _boundaries(g_prefix, g_type, iobes)
    counted, last_open = _count_correct(c_start, c_end, c_type, g_start, g_end, g_type)
    n = names.shape[0]
    correct = np.bincount(c_type[:-1][counted], minlength=n)
    if last_open:
        correct[c_type[-1]] += 1
    n_true = np.bincount(c_type[1:][c_start], minlength=n)
    n_pred = np.bincount(g_type[1:][g_start], minlength=n)
    if n_true.sum() == 0 and np.any((prefix == _OTHER) & (uniques != "O")):
        warnings.warn(
            "No chunk was found in y_true: tags such as "
            f"{str(uniques[(prefix == _OTHER) & (uniques != 'O')][0])!r} have no B-/I-/E-/S- prefix "
            "and are outside every conlleval chunk; pass scheme='IO' to score each run of one label "
            "as a segment.",
            UserWarning,
            stacklevel=3,
        )
    return names, correct, n_true, n_pred


def _plain_labels(true, pred):
    """True when the labels are not strings or no tag other than "O" has a conlleval prefix."""
    for seqs in (true, pred):
        for s in seqs:
            if s.dtype.kind == "U":
                continue
            if s.dtype.kind == "O" and all(isinstance(t, str) for t in s):
                continue
            return True
    tags = np.unique(np.concatenate([np.concatenate(true), np.concatenate(pred)]).astype(str))
    prefix = np.array([_PREFIX_CODE.get(t.partition("-")[0], _OTHER) for t in tags])
    return bool(np.all((prefix == _OTHER) | (tags == "O")))


def _io_counts(true, pred):
    """IO scheme: every maximal run of one label (type) is a segment; "O" is outside."""
    lengths = np.array([t.shape[0] for t in true], dtype=np.int64)
    flat_t, flat_p = np.concatenate(true), np.concatenate(pred)
    strings = flat_t.dtype.kind in "UO" or flat_p.dtype.kind in "UO"
    if strings:
        flat_t, flat_p = _io_types(flat_t, true, "y_true"), _io_types(flat_p, pred, "y_pred")
    try:
        names, codes = np.unique(np.concatenate([flat_t, flat_p]), return_inverse=True)
    except TypeError:
        raise ValueError("y_true and y_pred hold labels of mixed types that cannot be compared.") from None
    codes = codes.astype(np.int64)
    n = flat_t.shape[0]
    t_code, p_code = codes[:n], codes[n:]
    if strings:  # "O" (after removing "I-" prefixes) is outside
        outside = np.flatnonzero(names == "O")
        if outside.size:
            t_code = np.where(t_code == outside[0], -1, t_code)
            p_code = np.where(p_code == outside[0], -1, p_code)
    first = np.zeros(n, dtype=bool)
    first[np.concatenate([[0], np.cumsum(lengths)[:-1]])] = True
    last = np.roll(first, -1)
    last[-1] = True

    def runs(code):
        start = (code >= 0) & (first | (code != np.roll(code, 1)))
        end = (code >= 0) & (last | (code != np.roll(code, -1)))
        return start, end

    t_start, t_end = runs(t_code)
    p_start, p_end = runs(p_code)
    # a true segment [s, e] is correct iff every token agrees and the prediction starts at s, ends at e
    wrong = np.concatenate([[0], np.cumsum(t_code != p_code)])
    s_idx, e_idx = np.flatnonzero(t_start), np.flatnonzero(t_end)
    ok = (wrong[e_idx + 1] == wrong[s_idx]) & p_start[s_idx] & p_end[e_idx]
    m = names.shape[0]
    correct = np.bincount(t_code[s_idx[ok]], minlength=m)
    n_true = np.bincount(t_code[t_start], minlength=m)
    n_pred = np.bincount(p_code[p_start], minlength=m)
    keep = np.ones(m, dtype=bool)
    if strings:
        keep = names != "O"
    return names[keep], correct[keep], n_true[keep], n_pred[keep]


def _io_types(flat, seqs, name):
    """Types of IO tags as str: "I-X" -> "X"; other prefixes raise, naming the sequence."""
    flat = flat.astype(str)
    heads = np.char.partition(flat, "-")
    prefixed = heads[:, 1] == "-"
    bad = prefixed & np.isin(heads[:, 0], ["B", "E", "S"])
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        i = int(np.searchsorted(np.cumsum([s.shape[0] for s in seqs]), k, side="right"))
        raise ValueError(
            f"{name}: sequence {i} has tag {str(flat[k])!r}, which is not valid in the IO scheme "
            "(plain labels, 'I-X' or 'O'); use scheme='auto' or 'IOB2' for B-/E-/S- tags."
        )
    return np.where(prefixed & (heads[:, 0] == "I"), heads[:, 2], flat)


def _one_sequence_if_flat(y):
    """A flat list of str tags is one sequence (chunk tags are never single characters)."""
    if isinstance(y, (list, tuple)) and len(y) > 0 and all(isinstance(t, str) for t in y):
        return [list(y)]
    return y


def _flat_tags(seqs, name):
    for i, s in enumerate(seqs):
        if s.dtype.kind == "O" and all(isinstance(t, str) for t in s):
            continue
        if s.dtype.kind != "U":
            raise ValueError(
                f"{name}: sequence {i} holds {s.dtype} labels; chunk tags must be strings "
                "such as 'B-NP', 'I-NP' or 'O'."
            )
    return np.concatenate(seqs).astype(str)


def _parse_tags(uniques):
    """Prefix code and type id of each distinct tag, split at the first hyphen."""
    prefix = np.empty(uniques.shape[0], dtype=np.int8)
    types = []
    for k, tag in enumerate(uniques):
        head, _, kind = tag.partition("-")
        prefix[k] = _PREFIX_CODE.get(head, _OTHER)
        # conlleval reads the type with Perl truthiness: a type "0" becomes "".
        types.append("" if kind == "0" else kind)
    names, kind_ids = np.unique(np.array(types, dtype=str), return_inverse=True)
    return prefix, kind_ids.astype(np.int64), names


def _check_scheme(uniques, prefix, scheme, true, pred):
    allowed = [_PREFIX_CODE[p] for p in _SCHEME_PREFIXES[scheme]]
    bad = [str(t) for t, p in zip(uniques, prefix) if p not in allowed or (p == _O and t != "O")]
    if not bad:
        return
    for name, seqs in (("y_true", true), ("y_pred", pred)):
        for i, s in enumerate(seqs):
            found = np.isin(s.astype(str), bad)
            if found.any():
                prefixes = ", ".join(_SCHEME_PREFIXES[scheme])
                raise ValueError(
                    f"{name}: sequence {i} has tag {str(s[found.argmax()])!r}, which is not "
                    f"valid in the {scheme} scheme (prefixes {prefixes})."
                )


def _stream(codes, lengths, prefix, kind, boundary):
    """Prefix and type arrays of conlleval's input stream for one column.

    The stream is an initial "O" state, then each sequence followed by the "O" that
    conlleval reads for the blank line after every sentence.
    """
    n_seq = lengths.shape[0]
    total = 1 + lengths.sum() + n_seq
    p = np.full(total, prefix[boundary], dtype=np.int8)
    t = np.full(total, kind[boundary], dtype=np.int64)
    positions = np.arange(codes.shape[0]) + 1 + np.repeat(np.arange(n_seq), lengths)
    p[positions] = prefix[codes]
    t[positions] = kind[codes]
    return p, t


def _boundaries(p, t, iobes):
    """conlleval's startOfChunk and endOfChunk at every step of the stream (index >= 1)."""
    pp, pt, cp, ct = p[:-1], t[:-1], p[1:], t[1:]

    def prev(*codes):
        return np.isin(pp, codes)

    def cur(*codes):
        return np.isin(cp, codes)

    type_change = pt != ct
    end = (
        (prev(_B, _I) & cur(_B, _O))
        | (prev(_E) & cur(_E, _I, _O))
        | (~prev(_O, _DOT) & type_change)
        | prev(_OPEN, _CLOSE)
    )
    start = (
        (prev(_B, _I, _O) & cur(_B))
        | (prev(_O) & cur(_I, _E))
        | (prev(_E) & cur(_E, _I))
        | (~cur(_O, _DOT) & type_change)
        | cur(_OPEN, _CLOSE)
    )
    if iobes:  # the S-/E- rules of the IOBES version of conlleval
        end |= (
            (prev(_B, _I) & cur(_S))
            | (prev(_E) & cur(_S, _B))
            | (prev(_S) & cur(_B, _I, _O, _E, _S))
        )
        start |= (
            (prev(_E, _S) & cur(_B))
            | (prev(_B, _I, _O, _E, _S) & cur(_S))
            | (prev(_S) & cur(_I, _E))
        )
    return start, end


def _count_correct(c_start, c_end, c_type, g_start, g_end, g_type):
    """conlleval's ``inCorrect`` state machine, vectorised over the stream.

    At step k (tag k after tag k-1): if a candidate chunk is open and both columns end
    a chunk of one type, it is correct and closes; if only one ends or the current
    types differ, it is dropped. Then a candidate opens where both columns start a
    chunk of the same type. So the state after step k is "open" iff the last opening
    at or before k is not older than the last closing at or before k.

    Returns the steps at which a correct chunk is counted (its type is the previous
    tag's) and whether a candidate is still open after the last step.
    """
    c_type_cur, g_type_cur = c_type[1:], g_type[1:]
    same_last_type = c_type[:-1] == g_type[:-1]
    counted = c_end & g_end & same_last_type
    closes = counted | (c_end != g_end) | (g_type_cur != c_type_cur)
    opens = c_start & g_start & (g_type_cur == c_type_cur)

    steps = np.arange(opens.shape[0])
    last_open = np.maximum.accumulate(np.where(opens, steps, -1))
    last_close = np.maximum.accumulate(np.where(closes, steps, -1))
    open_after = (last_open >= 0) & (last_open >= last_close)
    open_before = np.concatenate([[False], open_after[:-1]])
    return open_before & counted, bool(open_after[-1])


def _zero_division_value(zero_division):
    """The score used for 0 / 0: 0.0, 1.0 or NaN, as scikit-learn allows; ValueError for anything else."""
    if isinstance(zero_division, str) and zero_division == "nan":
        return np.nan
    if isinstance(zero_division, numbers.Real) and not isinstance(zero_division, bool):
        value = float(zero_division)
        if np.isnan(value) or value in (0.0, 1.0):
            return value
    raise ValueError(f"zero_division must be 0.0, 1.0, np.nan or 'nan' (the value of a score whose denominator "
                     f"is 0), got {zero_division!r}.")
