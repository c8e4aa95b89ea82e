"""Sequence featurizers: token feature dicts or (word, POS) tokens -> per-sequence CSR matrices.

:class:`SequenceVectorizer` turns the feature dicts that sklearn-crfsuite users already
have into the list of sparse matrices the estimators here take. :class:`WindowFeaturizer`
computes the classic CoNLL word / POS / suffix / shape features in a window and
vectorises them the same way; its :meth:`~WindowFeaturizer.to_dicts` gives the identical
features as dicts, for sklearn-crfsuite.
"""

import re
from collections.abc import Iterable, Mapping
from itertools import chain
from numbers import Integral, Number

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction import DictVectorizer
from sklearn.utils._param_validation import Interval

from ._crfpp_template import CRFppTemplateFeaturizer  # noqa: F401  (re-export)
from ._featurizer import SequenceFeaturizer, split_csr
from .utils._params import store_init_params
from .utils.packing import lengths_to_offsets

__all__ = ["SequenceVectorizer", "WindowFeaturizer", "CRFppTemplateFeaturizer"]


class SequenceVectorizer(SequenceFeaturizer):
    """Vectorise sequences of token feature dicts into per-sequence sparse matrices.

    One :class:`~sklearn.feature_extraction.DictVectorizer` is fitted over the tokens of
    all sequences, so every sequence shares one column space. Feature values follow
    DictVectorizer (and sklearn-crfsuite): a str value ``v`` of key ``k`` becomes the
    one-hot column ``k=v``; a number or bool is the value of column ``k``; a list of str
    gives one one-hot column per element.

    The whole corpus goes through DictVectorizer in one call and the result is split
    by sequence offsets, so there is no per-sequence overhead.

    Parameters
    ----------
    dtype : dtype, default=np.float64
        Type of the matrix values.
    separator : str, default="="
        Separator between key and value in one-hot feature names.
    sparse : bool, default=True
        Return CSR matrices when True, dense ndarrays when False.
    sort : bool, default=True
        Sort the feature names (columns) alphabetically.
    min_freq : int, default=1
        Drop features that are non-zero in fewer than ``min_freq`` training tokens.

    Attributes
    ----------
    vectorizer_ : DictVectorizer
        The fitted vectoriser over all training tokens (after ``min_freq``).
    vocabulary_ : dict
        Feature name to column index.

    See Also
    --------
    WindowFeaturizer : CoNLL window features for (word, POS) tokens.
    sklearn.feature_extraction.DictVectorizer : the same for a flat list of dicts.

    Examples
    --------
    >>> from sklearn_struct.preprocessing import SequenceVectorizer
    >>> X = [[{"w": "the", "len": 3}, {"w": "cat", "len": 3}],
    ...      [{"w": "sat", "tags": ["verb", "past"]}]]
    >>> vec = SequenceVectorizer()
    >>> Xt = vec.fit_transform(X)
    >>> [x.shape for x in Xt]
    [(2, 6), (1, 6)]
    >>> vec.get_feature_names_out().tolist()
    ['len', 'tags=past', 'tags=verb', 'w=cat', 'w=sat', 'w=the']
    >>> vec.transform([[{"w": "the", "unseen": "x"}]])[0].toarray()
    array([[0., 0., 0., 0., 0., 1.]])
    """

    _parameter_constraints: dict = {
        "dtype": "no_validation",  # DictVectorizer checks it
        "separator": [str],
        "sparse": ["boolean"],
        "sort": ["boolean"],
        "min_freq": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, *, dtype=np.float64, separator="=", sparse=True, sort=True, min_freq=1):
        store_init_params(self, locals())

    _input_tag = "dict"

    def _fit(self, X):
        tokens, offsets, seqs = _check_dict_sequences(X)
        return _call_on_tokens(self._fit_packed, tokens, offsets, seqs), offsets

    def _transform(self, X):
        tokens, offsets, seqs = _check_dict_sequences(X)
        return _call_on_tokens(self._transform_packed, tokens, offsets, seqs), offsets

    # Private steps on a flat iterable of token dicts, shared with WindowFeaturizer,
    # which streams its dicts straight in (no per-token validation, no list kept).

    def _fit_packed(self, tokens, offsets):
        vec = DictVectorizer(dtype=self.dtype, separator=self.separator, sort=self.sort)
        packed = sp.csr_matrix(vec.fit_transform(tokens))
        packed.eliminate_zeros()  # False / 0 values: absent, as in CRFsuite
        if self.min_freq > 1:
            keep = np.bincount(packed.indices, minlength=packed.shape[1]) >= self.min_freq
            vec.restrict(keep)
            packed = packed[:, keep]
        if packed.shape[1] == 0:
            raise ValueError(
                "No features left: the token dicts are empty"
                + (f" or every feature occurs in fewer than min_freq={self.min_freq} tokens."
                   if self.min_freq > 1 else ".")
            )
        _check_finite(packed, offsets, vec)
        self.vectorizer_ = vec
        self.vocabulary_ = vec.vocabulary_
        return packed

    def _transform_packed(self, tokens, offsets):
        packed = sp.csr_matrix(self.vectorizer_.transform(tokens))
        packed.eliminate_zeros()
        _check_finite(packed, offsets, self.vectorizer_)
        return packed

    def _matrices(self, packed, offsets):
        if not self.sparse:
            return np.split(packed.toarray(), offsets[1:-1])
        return split_csr(packed, offsets)


class WindowFeaturizer(SequenceFeaturizer):
    """CoNLL word / POS / suffix / shape features in a window, as per-sequence CSR matrices.

    The features of sklearn-crfsuite's CoNLL tutorial, extended with word shape. For a
    token at position ``i``:

    - ``bias``; the lower-cased word ``word.lower()``; its suffixes ``word[-2:]``,
      ``word[-3:]`` (one per ``suffix_lengths``); the flags ``word.isupper()``,
      ``word.istitle()``, ``word.isdigit()`` (present only when true); the collapsed shape
      ``word.shape`` (``X`` upper, ``x`` lower, ``d`` digit, other characters kept, runs
      cut to two: "Smith" -> "Xxx", "1,250" -> "d,dd"); ``postag`` and ``postag[:2]``;
    - for each neighbour at offset ``d`` in ``[-window, window]`` inside the sequence, the
      same without bias and suffixes, keys prefixed ``"-1:"``, ``"+2:"``, ...;
    - ``BOS`` on the first token and ``EOS`` on the last.

    String features are one-hot columns (``postag=NN``), flags and bias are 1; all go
    through one :class:`SequenceVectorizer`.

    Parameters
    ----------
    window : int, default=2
        Neighbours on each side whose features are added.
    suffix_lengths : tuple of int, default=(2, 3)
        Lengths of the word suffixes used as features of the current token.
    min_freq : int, default=1
        Drop features that occur in fewer than ``min_freq`` training tokens.
    dtype : dtype, default=np.float64
        Type of the matrix values.
    word_column : int or str, default=0
        Where a token holds its word: index into a tuple token, or key of a dict token
        (an int means key ``"word"`` for dict tokens).
    pos_column : int, str or None, default=1
        Where a token holds its POS tag (same rules; an int means key ``"pos"`` for dict
        tokens); None: no POS features. The defaults read CoNLL-2000 rows
        ``(word, POS, chunk)``; for other column layouts name the columns explicitly.

    Attributes
    ----------
    vectorizer_ : SequenceVectorizer
        The fitted vectoriser of the token dicts.

    See Also
    --------
    SequenceVectorizer : vectorise your own token feature dicts.

    Notes
    -----
    A token is a tuple or list of columns (``word_column`` and ``pos_column`` say which
    are used; a tuple too short for ``pos_column`` has no POS), a dict with keys
    ``"word"`` and optionally ``"pos"`` (or the keys given), or a plain str (word only).

    Examples
    --------
    >>> from sklearn_struct.preprocessing import WindowFeaturizer
    >>> X = [[("He", "PRP"), ("reckons", "VBZ")], [("Rates", "NNS")]]
    >>> feat = WindowFeaturizer(window=1)
    >>> Xt = feat.fit_transform(X)
    >>> [x.shape for x in Xt]
    [(2, 31), (1, 31)]
    >>> d = feat.to_dicts(X)[0][1]   # the same features, as sklearn-crfsuite takes them
    >>> d["word.lower()"], d["word.shape"], d["-1:postag"], d["EOS"]
    ('reckons', 'xx', 'PRP', True)
    """

    _parameter_constraints: dict = {
        "window": [Interval(Integral, 0, None, closed="left")],
        "suffix_lengths": ["array-like"],
        "min_freq": [Interval(Integral, 1, None, closed="left")],
        "dtype": "no_validation",
        "word_column": [Interval(Integral, 0, None, closed="left"), str],
        "pos_column": [Interval(Integral, 0, None, closed="left"), str, None],
    }

    def __init__(self, *, window=2, suffix_lengths=(2, 3), min_freq=1, dtype=np.float64, word_column=0,
                 pos_column=1):
        store_init_params(self, locals())

    def _transform(self, X):
        words, tags, offsets = self._parse(X)
        return self.vectorizer_._transform_packed(self._iter_dicts(words, tags), offsets), offsets

    def to_dicts(self, X):
        """The window features of ``X`` as lists of token dicts (no fitting needed).

        These are exactly the features :meth:`transform` vectorises, in the form
        sklearn-crfsuite's ``CRF.fit`` takes, for like-for-like comparisons.

        Parameters
        ----------
        X : list of list of tokens

        Returns
        -------
        X_dicts : list of list of dict
        """
        words, tags, offsets = self._parse(X)
        dicts = iter(self._iter_dicts(words, tags))
        return [[next(dicts) for _ in range(n)] for n in np.diff(offsets)]

    def _fit(self, X):
        words, tags, offsets = self._parse(X)
        vectorizer = SequenceVectorizer(dtype=self.dtype, min_freq=self.min_freq)
        packed = vectorizer._fit_packed(self._iter_dicts(words, tags), offsets)
        self.vectorizer_ = vectorizer
        return packed, offsets

    def _parse(self, X):
        self._validate_params()  # to_dicts may run before fit
        suffixes = np.asarray(self.suffix_lengths)
        if suffixes.ndim != 1 or suffixes.dtype.kind not in "iu" or np.any(suffixes < 1):
            raise ValueError(
                f"suffix_lengths must be a sequence of positive ints, got {self.suffix_lengths!r}."
            )
        return _parse_word_tokens(X, self.word_column, self.pos_column)

    def _iter_dicts(self, words, tags):
        """Yield the feature dict of every token, sequence after sequence.

        Each distinct (word, POS) gets its per-offset dicts built once; a token's dict is
        then a merge of its neighbours' cached dicts.
        """
        window = self.window
        suffixes = tuple(int(k) for k in self.suffix_lengths)
        cache = {}
        for seq_words, seq_tags in zip(words, tags):
            parts = []
            for key in zip(seq_words, seq_tags):
                part = cache.get(key)
                if part is None:
                    part = cache[key] = _offset_dicts(key[0], key[1], window, suffixes)
                parts.append(part)
            n = len(parts)
            for i in range(n):
                features = dict(parts[i][window])
                for d in range(1, window + 1):
                    if i - d >= 0:
                        features.update(parts[i - d][window - d])
                    if i + d < n:
                        features.update(parts[i + d][window + d])
                if i == 0:
                    features["BOS"] = True
                if i == n - 1:
                    features["EOS"] = True
                yield features


# --------------------------------------------------------------------------- helpers


def _check_dict_sequences(X):
    """Flatten a list of sequences of dicts; raise naming the sequence (and token)."""
    seqs = _as_sequence_list(X, "token feature dicts")
    tokens = list(chain.from_iterable(seqs))
    if not all(type(t) is dict for t in tokens):  # fast path; Mappings are fine too
        for k, token in enumerate(tokens):
            if not isinstance(token, Mapping):
                i, j = _locate(k, seqs)
                raise ValueError(
                    f"Sequence {i}, token {j}: expected a dict of features, "
                    f"got {type(token).__name__}."
                )
    offsets = lengths_to_offsets([len(s) for s in seqs])
    return tokens, offsets, seqs


def _as_sequence_list(X, what):
    if isinstance(X, (str, bytes, Mapping)) or not isinstance(X, Iterable):
        raise ValueError(f"X must be a list of sequences of {what}, got {type(X).__name__}.")
    seqs = list(X)
    if not seqs:
        raise ValueError("X is empty: found 0 sequences, at least 1 is required.")
    for i, seq in enumerate(seqs):
        if isinstance(seq, (str, bytes, Mapping)) or not hasattr(seq, "__len__"):
            raise ValueError(
                f"Sequence {i}: expected a list of {what}, got {type(seq).__name__}."
            )
        if len(seq) == 0:
            raise ValueError(f"Sequence {i} is empty: it has 0 tokens, at least 1 is required.")
    return seqs


def _locate(k, seqs):
    """(sequence, token) of flat token index ``k``."""
    offsets = lengths_to_offsets([len(s) for s in seqs])
    i = int(np.searchsorted(offsets, k, side="right") - 1)
    return i, int(k - offsets[i])


def _call_on_tokens(step, tokens, offsets, seqs):
    """Run a DictVectorizer step; turn its TypeError into a ValueError naming the token."""
    try:
        return step(tokens, offsets)
    except TypeError:
        for i, seq in enumerate(seqs):
            for j, token in enumerate(seq):
                for key, value in token.items():
                    if not _is_supported_value(value):
                        raise ValueError(
                            f"Sequence {i}, token {j}: feature {key!r} has a value of "
                            f"unsupported type {type(value).__name__}; use a str, a number, "
                            "a bool or a list of str."
                        ) from None
        raise


def _is_supported_value(value):
    if isinstance(value, (str, Number)):
        return True
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        return all(isinstance(v, str) for v in value)
    return False


def _check_finite(packed, offsets, vectorizer):
    """NaN / inf values (or None, which DictVectorizer reads as NaN) name their token."""
    bad = ~np.isfinite(packed.data)
    if not bad.any():
        return
    pos = int(np.argmax(bad))
    row = int(np.searchsorted(packed.indptr, pos, side="right") - 1)
    i = int(np.searchsorted(offsets, row, side="right") - 1)
    name = vectorizer.feature_names_[packed.indices[pos]]
    raise ValueError(
        f"Sequence {i}, token {row - offsets[i]}: feature {name!r} is NaN, infinite or None."
    )


_TOKEN_FORMS = "a (word, POS, ...) tuple, a dict with a 'word' key, or a str"


def _parse_word_tokens(X, word_column=0, pos_column=1):
    """Words and POS tags (None when absent) per sequence, and token offsets."""
    seqs = _as_sequence_list(X, "tokens")
    wkey = "word" if isinstance(word_column, Integral) else word_column
    pkey = "pos" if isinstance(pos_column, Integral) else pos_column
    words, tags = [], []
    for i, seq in enumerate(seqs):
        seq_words, seq_tags = [], []
        for j, token in enumerate(seq):
            if isinstance(token, str):
                word, pos = token, None
            elif isinstance(token, Mapping):
                word, pos = token.get(wkey), (None if pkey is None else token.get(pkey))
            elif isinstance(token, (tuple, list, np.ndarray)) and len(token) > 0:
                if not isinstance(word_column, Integral) or not (pos_column is None or isinstance(pos_column, Integral)):
                    raise ValueError(
                        f"Sequence {i}, token {j}: tuple tokens need int word_column / pos_column, got "
                        f"{word_column!r} / {pos_column!r} (str names are for dict tokens)."
                    )
                if word_column >= len(token):
                    raise ValueError(
                        f"Sequence {i}, token {j}: word_column={word_column} but the token has "
                        f"{len(token)} columns."
                    )
                word = token[word_column]
                pos = token[pos_column] if pos_column is not None and pos_column < len(token) else None
            else:
                raise ValueError(
                    f"Sequence {i}, token {j}: expected {_TOKEN_FORMS}, got {token!r}."
                )
            if not isinstance(word, str) or not (pos is None or isinstance(pos, str)):
                raise ValueError(
                    f"Sequence {i}, token {j}: the word and POS must be str, got {token!r}."
                )
            seq_words.append(word)
            seq_tags.append(pos)
        words.append(seq_words)
        tags.append(seq_tags)
    return words, tags, lengths_to_offsets([len(w) for w in words])


_SHAPE_RUNS = re.compile(r"(.)\1\1+")


def _word_shape(word):
    """'X' upper, 'x' lower, 'd' digit, others kept; runs cut to two ("McDonald" -> "XxXxx")."""
    classes = "".join(
        "X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c for c in word
    )
    return _SHAPE_RUNS.sub(r"\1\1", classes)


def _offset_dicts(word, pos, window, suffixes):
    """The features one token contributes at each offset -window..window (index d + window)."""
    shared = {"word.lower()": word.lower()}
    if word.isupper():
        shared["word.isupper()"] = True
    if word.istitle():
        shared["word.istitle()"] = True
    if word.isdigit():
        shared["word.isdigit()"] = True
    shared["word.shape"] = _word_shape(word)
    if pos is not None:
        shared["postag"] = pos
        shared["postag[:2]"] = pos[:2]
    center = {"bias": 1.0, **shared}
    for k in suffixes:
        center[f"word[-{k}:]"] = word[-k:]
    parts = []
    for d in range(-window, window + 1):
        if d == 0:
            parts.append(center)
        else:
            parts.append({f"{d:+d}:{key}": value for key, value in shared.items()})
    return parts
from ._point_set_features import PointSetPairFeatures  # noqa: E402,F401  (matching featurizer, re-exported)
