"""CRF++ feature templates: column data -> per-sequence sparse features.

A CRF++ template file lists one feature template a line. ``U`` lines are unigram
templates: the line text with every macro ``%x[row,col]`` replaced by the value of column
``col`` of the token ``row`` positions away is one binary feature of the current token
(``U05:%x[-1,0]/%x[0,0]`` gives ``U05:He/reckons``). Positions before the start of the
sequence read ``_B-1``, ``_B-2``, ... and those after its end ``_B+1``, ``_B+2``, ..., as
CRF++ does. A ``B`` line asks for label-bigram (transition) features, which every chain
model here has already; ``B`` lines with macros (edge features) are not supported.
Lines starting with ``#`` and blank lines are skipped.
"""

import os
import re
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval

from ._featurizer import SequenceFeaturizer
from .utils._files import text_lines
from .utils._params import store_init_params
from .utils.packing import lengths_to_offsets

__all__ = ["CRFppTemplateFeaturizer", "parse_crfpp_template"]

_MACRO = re.compile(r"%x\[\s*(-?\d+)\s*,\s*(\d+)\s*\]")


def parse_crfpp_template(lines):
    """Parse CRF++ template lines into unigram templates and the bigram flag.

    Parameters
    ----------
    lines : iterable of str
        The lines of a template file.

    Returns
    -------
    unigram : list of (pieces, macros, lineno)
        ``pieces`` are the literal text parts (one more than ``macros``), ``macros`` the
        ``(row, col)`` pairs in order, ``lineno`` the 1-based line number.
    bigram : bool
        Whether a plain ``B`` line is present.

    Raises
    ------
    ValueError
        For a line that is neither a comment, blank, a ``U`` nor a ``B`` template, or
        whose ``%x`` macro is malformed; the message gives the line number.

    Examples
    --------
    >>> uni, bi = parse_crfpp_template(["# c", "U01:%x[-1,0]/%x[0,1]", "", "B"])
    >>> uni[0][0], uni[0][1], bi
    (['U01:', '/', ''], [(-1, 0), (0, 1)], True)
    """
    unigram, bigram = [], False
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        kind = line[0]
        if kind not in "UB":
            raise ValueError(
                f"template line {lineno}: {line!r} must start with 'U' (unigram) or 'B' (bigram), "
                "or '#' for a comment."
            )
        macros = [(int(m.group(1)), int(m.group(2))) for m in _MACRO.finditer(line)]
        pieces = _MACRO.split(line)[::3]
        if any("%x" in p for p in pieces) or any("%" in p for p in pieces):
            raise ValueError(
                f"template line {lineno}: malformed macro in {line!r}; expected %x[row,col] with "
                "integer row and non-negative integer col."
            )
        if kind == "B":
            if macros:
                raise ValueError(
                    f"template line {lineno}: bigram templates with %x macros ({line!r}) define edge "
                    "features, which the chain models here do not take; use a plain 'B'."
                )
            bigram = True
            continue
        if not macros and ":" not in line:
            raise ValueError(f"template line {lineno}: unigram template {line!r} has no %x[row,col] macro.")
        unigram.append((pieces, macros, lineno))
    return unigram, bigram


class CRFppTemplateFeaturizer(SequenceFeaturizer):
    """Binary features from a CRF++ template file, as per-sequence CSR matrices.

    Every ``U`` template of the file yields, for each token, one feature string (the
    template with its ``%x[row,col]`` macros filled in from the column data); ``fit``
    learns the vocabulary of these strings and ``transform`` one-hot encodes them, so a
    CRF++ task runs with its own template in any estimator here (``GPStructClassifier``,
    ``NonLocalCRF``), e.g. in a :class:`~sklearn.pipeline.Pipeline`.

    Parameters
    ----------
    template : str, path-like or list of str
        Path of a CRF++ template file, or its lines.
    encoding : str, default="utf-8"
        Encoding of the template file.
    min_freq : int, default=1
        Drop features seen in fewer than ``min_freq`` training tokens (CRF++'s ``-f``).
    dtype : dtype, default=np.float64
        Type of the matrix values.

    Attributes
    ----------
    vocabulary_ : dict
        Feature string to column index.
    n_columns_ : int
        Number of data columns per token seen at fit.
    has_bigram_ : bool
        Whether the template asks for label-bigram features (a ``B`` line).

    See Also
    --------
    WindowFeaturizer : fixed CoNLL word / POS window features.
    sklearn_struct.datasets.load_crfpp : the CRF++ example tasks and their templates.

    Notes
    -----
    A sequence is a list of tokens, each a tuple (or list) of str column values, as
    :func:`~sklearn_struct.datasets.load_conll` returns them (label column removed), or a
    2D array of str. Features unseen at fit are ignored at transform.

    Examples
    --------
    >>> from sklearn_struct.preprocessing import CRFppTemplateFeaturizer
    >>> feat = CRFppTemplateFeaturizer(["U00:%x[-1,0]", "U01:%x[0,0]/%x[0,1]", "B"])
    >>> Xt = feat.fit_transform([[("He", "PRP"), ("ran", "VBD")]])
    >>> feat.get_feature_names_out().tolist()
    ['U00:He', 'U00:_B-1', 'U01:He/PRP', 'U01:ran/VBD']
    >>> Xt[0].toarray()
    array([[0., 1., 1., 0.],
           [1., 0., 0., 1.]])
    """

    _parameter_constraints: dict = {
        "template": [str, os.PathLike, list, tuple],
        "encoding": [str],
        "min_freq": [Interval(Integral, 1, None, closed="left")],
        "dtype": "no_validation",
    }

    def __init__(self, template, *, encoding="utf-8", min_freq=1, dtype=np.float64):
        store_init_params(self, locals())

    def _transform(self, X):
        return _expand(self.unigram_, _check_column_sequences(X, self.n_columns_))

    def _feature_names(self):
        names = np.empty(len(self.vocabulary_), dtype=object)  # e.g. "U05:_B-1/He"
        for name, j in self.vocabulary_.items():
            names[j] = name
        return names

    def _fit(self, X):
        in_file = not isinstance(self.template, (list, tuple))
        where = f"template {self.template}" if in_file else "template"
        lines = _template_lines(self.template, self.encoding)
        try:
            unigram, bigram = parse_crfpp_template(lines)
        except ValueError as exc:
            if not in_file:
                raise
            raise ValueError(f"{self.template}: {exc}") from None
        if not unigram:
            raise ValueError(f"{where} has no unigram ('U') template lines.")
        seqs = _check_column_sequences(X, None)
        n_columns = len(seqs[0][0])
        for pieces, macros, lineno in unigram:
            for row, col in macros:
                if col >= n_columns:
                    raise ValueError(
                        f"{where}, line {lineno}: %x[{row},{col}] reads column {col}, but the tokens "
                        f"have {n_columns} columns (0..{n_columns - 1})."
                    )
        strings, lengths = _expand(unigram, seqs)
        counts = {}
        for s in strings:
            counts[s] = counts.get(s, 0) + 1
        kept = sorted(s for s, c in counts.items() if c >= self.min_freq)
        self.vocabulary_ = {s: j for j, s in enumerate(kept)}
        self.unigram_ = unigram
        self.has_bigram_ = bigram
        self.n_columns_ = n_columns
        return strings, lengths

    def _matrices(self, strings, lengths):
        vocab = self.vocabulary_
        n_templates = len(self.unigram_)
        cols = np.fromiter((vocab.get(s, -1) for s in strings), dtype=np.int64, count=len(strings))
        rows = np.repeat(np.arange(len(strings) // max(n_templates, 1)), n_templates)
        keep = cols >= 0
        n_tok = int(sum(lengths))
        packed = sp.csr_matrix(
            (np.ones(int(keep.sum()), dtype=self.dtype), (rows[keep], cols[keep])),
            shape=(n_tok, len(vocab)),
        )
        packed.sum_duplicates()
        offsets = lengths_to_offsets(lengths)
        return [packed[offsets[i]:offsets[i + 1]] for i in range(len(lengths))]


def _template_lines(template, encoding):
    if isinstance(template, (list, tuple)):
        if not all(isinstance(t, str) for t in template):
            raise ValueError("template given as a list must hold str lines.")
        return list(template)
    return [line for _, line in text_lines(template, encoding, what="template file")]


def _check_column_sequences(X, n_columns):
    """List of sequences of str tuples; every token with the same number of columns."""
    if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
        raise ValueError(f"X must be a list of sequences of column tokens, got {type(X).__name__}.")
    if len(X) == 0:
        raise ValueError("X holds no sequences.")
    seqs = []
    for i, seq in enumerate(X):
        if len(seq) == 0:
            raise ValueError(f"Sequence {i} is empty.")
        tokens = []
        for j, tok in enumerate(seq):
            if isinstance(tok, str) or not hasattr(tok, "__len__"):
                tok = (tok,)
            tok = tuple(str(v) for v in tok)
            if n_columns is None:
                n_columns = len(tok)
                if n_columns == 0:
                    raise ValueError(f"Sequence {i}, token {j} has no columns.")
            elif len(tok) != n_columns:
                raise ValueError(
                    f"Sequence {i}, token {j} has {len(tok)} columns; expected {n_columns} (as at fit)."
                )
            tokens.append(tok)
        seqs.append(tokens)
    return seqs


def _expand(unigram, seqs):
    """Feature strings of every (token, template), token-major; and sequence lengths."""
    strings, lengths = [], []
    for seq in seqs:
        n = len(seq)
        lengths.append(n)
        for t in range(n):
            for pieces, macros, _ in unigram:
                parts = [pieces[0]]
                for (row, col), lit in zip(macros, pieces[1:]):
                    p = t + row
                    if p < 0:
                        parts.append(f"_B{p}")
                    elif p >= n:
                        parts.append(f"_B+{p - n + 1}")
                    else:
                        parts.append(seq[p][col])
                    parts.append(lit)
                strings.append("".join(parts))
    return strings, lengths
