"""python-crfsuite's item features, turned into one sparse row per token.

The rules are python-crfsuite's (``ItemSequence``), so the same feature dicts give the same
attributes and values:

* ``{"key": 1.5}``: attribute ``key`` with value 1.5; ``{"key": True}`` value 1.0, ``False`` 0.0;
* ``{"key": "value"}`` (str or UTF-8 bytes): attribute ``key:value`` with value 1.0;
* ``{"key": {...}}``, ``{"key": [...]}``, ``{"key": {..set..}}``: the nested item's attributes,
  each prefixed by ``key:``;
* a token given as a list (or set) of strings: each string an attribute with value 1.0.

An attribute named twice in one token adds its values (CRFsuite sums an item's contents).
Attributes with value 0 are dropped: they add nothing to any score or gradient, as in CRFsuite.
"""

import numbers
from array import array

import numpy as np
import scipy.sparse as sp

from ..utils.packing import csr_rows

_SEP = ":"


class AttributeVocabulary:
    """Attribute names to columns, in order of first appearance (CRFsuite's attribute ids)."""

    def __init__(self, names=()):
        self.index = {name: i for i, name in enumerate(names)}

    def fit_transform(self, X, what="X"):
        """Learn the attributes of the sequences ``X`` and return their rows (see :meth:`transform`)."""
        return self._rows(X, what, grow=True)

    def transform(self, X, what="X"):
        """``(rows, offsets)``: all tokens' attributes as one CSR matrix ``(n_tokens, n_attributes)``
        and the start of each sequence in it; unknown attributes are ignored."""
        return self._rows(X, what, grow=False)

    def names(self):
        """Attribute names in column order."""
        return list(self.index)

    def _rows(self, X, what, grow):
        # Typed arrays, not lists: 12 bytes per non-zero instead of a list's ~36 (pointers
        # and spare capacity), turned into the matrix's arrays without a copy.
        X = _check_sequence_list(X, what)
        data, indices, indptr, lengths = array("d"), array("i"), array("q", [0]), []
        index = self.index
        add_col, add_value, end_row = indices.append, data.append, indptr.append
        for s, xseq in enumerate(X):
            lengths.append(_n_items(xseq, s, what))
            for t, item in enumerate(xseq):
                pairs = item.items() if type(item) is dict else _slow_pairs(item, s, t, what)
                for key, value in pairs:
                    kind = type(value)
                    if kind is str and type(key) is str:
                        name = key + _SEP + value
                        value = 1.0
                    elif (kind is float or kind is int or kind is bool) and type(key) is str:
                        if not value:
                            continue
                        if kind is int and not -_FLOAT_MAX <= value <= _FLOAT_MAX:
                            value = _float_or_inf(value)  # beyond float64: inf, named by _check_finite
                        name = key
                    else:
                        for name, value in _slow_pairs({key: value}, s, t, what):
                            col = index.get(name)
                            if col is None and grow:
                                col = index[name] = len(index)
                            if col is not None:
                                add_col(col)
                                add_value(_float_or_inf(value) if type(value) is int else value)
                        continue
                    col = index.get(name)
                    if col is None:
                        if not grow:
                            continue
                        col = index[name] = len(index)  # past 2**31 - 1 attributes array('i') raises
                    add_col(col)
                    add_value(value)
                end_row(len(indices))
        data = np.frombuffer(data, dtype=np.float64)
        indptr = np.frombuffer(indptr, dtype=np.int64)
        _check_finite(data, indptr, lengths, what)
        matrix = sp.csr_matrix((data, np.frombuffer(indices, dtype=np.int32), indptr),
                               shape=(len(indptr) - 1, len(index)))
        matrix.sum_duplicates()  # in place
        return matrix, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def split_rows(rows, offsets):
    """The per-sequence CSR matrices of packed ``rows``: views of its arrays, which a fit packs back
    without a copy (so the features are held once, not two or three times)."""
    return csr_rows(rows, offsets)


def _check_sequence_list(X, what):
    if isinstance(X, (str, bytes, dict)) or not hasattr(X, "__len__"):
        raise ValueError(f"{what} must be a list of sequences (lists of feature dicts), got {type(X).__name__}.")
    if len(X) == 0:
        raise ValueError(f"{what} is empty: it needs at least one sequence.")
    return X


def _n_items(xseq, s, what):
    if isinstance(xseq, (str, bytes, dict)) or not hasattr(xseq, "__len__"):
        raise ValueError(f"{what}, sequence {s}: expected a list of token features, got {type(xseq).__name__}.")
    return len(xseq)


def _slow_pairs(item, s, t, what):
    """The non-zero (name, value) pairs of a token that is not a flat dict of str, bool and numbers."""
    return [(name, value) for name, value in _item_attributes(item, s, t, what) if value != 0]


_FLOAT_MAX = 1.7976931348623157e308


def _float_or_inf(value):
    try:
        return float(value)
    except OverflowError:
        return np.inf if value > 0 else -np.inf


def _check_finite(data, indptr, lengths, what):
    """ValueError naming the first token with a non-finite attribute value."""
    bad = np.flatnonzero(~np.isfinite(data))
    if bad.size:
        row = int(np.searchsorted(indptr, bad[0], side="right") - 1)
        starts = np.cumsum([0] + list(lengths))
        s = int(np.searchsorted(starts, row, side="right") - 1)
        raise ValueError(f"{what}, sequence {s}, token {row - starts[s]}: attribute value {data[bad[0]]} is not finite "
                         "(NaN, inf, or beyond the float64 range).")


def _item_attributes(item, s, t, what):
    """(name, value) pairs of one token by python-crfsuite's rules; ValueError naming the token."""
    try:
        return list(_attributes(item, ""))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what}, sequence {s}, token {t}: {exc}") from None


MAX_DEPTH = 100  # nested feature dicts deeper than this are refused (and a dict holding itself)


def _attributes(item, prefix, depth=0):
    if depth > MAX_DEPTH:
        raise ValueError(f"feature dicts / lists are nested more than {MAX_DEPTH} levels deep (at {prefix[:60]!r}...)")
    if isinstance(item, dict):
        for key, value in item.items():
            name = prefix + _text(key, "attribute name")
            if isinstance(value, (dict, list, set)):
                yield from _attributes(value, name + _SEP, depth + 1)
            elif isinstance(value, (str, bytes)):
                yield name + _SEP + _text(value, f"value of {name!r}"), 1.0
            else:
                yield name, _weight(value, name)
    elif isinstance(item, (list, set, tuple, frozenset)):
        for key in item:
            yield prefix + _text(key, "attribute name"), 1.0
    else:
        raise TypeError(f"token features must be a dict or a list of strings, got {type(item).__name__}")


def _text(value, what):
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf8")
        except UnicodeDecodeError:
            raise ValueError(f"{what} {value!r} is not UTF-8") from None
    raise TypeError(f"{what} must be str or bytes, got {type(value).__name__} {value!r}")


def _weight(value, name):
    if not isinstance(value, numbers.Real):
        raise TypeError(f"value of {name!r} must be a number, bool, str, bytes, dict or list, "
                        f"got {type(value).__name__}")
    value = _float_or_inf(value)
    if not np.isfinite(value):
        raise ValueError(f"value of {name!r} is not finite (NaN, inf, or beyond the float64 range)")
    return value
