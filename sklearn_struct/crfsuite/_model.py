"""The fitted model of :class:`~sklearn_struct.crfsuite.CRF`: named weights, prediction, model file, tagger.

A :class:`CRFModel` keeps what CRFsuite's model file keeps: the active attributes (those with a
non-zero weight), the labels, the state weights ``(attribute, label)``, the transition weights
``(label_from, label_to)``, and a per-label bias (0 for :class:`~sklearn_struct.crfsuite.CRF`,
whose model is CRFsuite's). Predictions run the chain oracle (Viterbi, forward-backward) on
``rows @ state + bias``.
"""

import numbers
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from ..oracles.chain import forward_backward, viterbi
from ..utils._model_file import (
    ModelFileError,
    check_labels,
    check_model_array,
    decode_value,
    encode_value,
    load_model_file,
    meta_number,
    model_file_bytes,
    save_model_file,
)
from ._features import AttributeVocabulary

_FORMAT, _VERSION = "sklearn_struct.crfsuite.CRF", 2  # 2: labels in their exact types, a checksum


class CRFModel:
    """Named CRF weights: ``state`` CSR ``(n_attributes, n_labels)``, ``bias`` and ``transition``."""

    def __init__(self, attributes, labels, state, bias, transition):
        self.attributes, self.labels = list(attributes), list(labels)
        self.state = sp.csr_matrix(state, dtype=np.float64)
        self.bias, self.transition = np.asarray(bias, dtype=np.float64), np.asarray(transition, dtype=np.float64)
        self.vocabulary = AttributeVocabulary(self.attributes)

    @classmethod
    def from_weights(cls, names, labels, coef, bias, transition):
        """Keep the attributes of ``names`` (rows of dense ``coef``) that have a non-zero weight."""
        active = np.flatnonzero(np.any(coef != 0, axis=1))
        return cls([names[i] for i in active], labels, coef[active], bias, transition)

    # ------------------------------------------------------------------ prediction
    def predict(self, X, what="X"):
        """Viterbi label sequences (lists of labels) of the feature-dict sequences ``X``."""
        unary, offsets = self._unary(X, what)
        labels = _label_array(self.labels)
        path = viterbi(unary, self.transition, _nonempty(offsets))[0] if unary.shape[0] else np.empty(0, int)
        return [labels[path[lo:hi]].tolist() for lo, hi in zip(offsets[:-1], offsets[1:])]

    def marginals(self, X, what="X"):
        """Per-token label marginals, one ``(n_tokens_i, n_labels)`` array per sequence."""
        unary, offsets = self._unary(X, what)
        node = unary[:0]
        if unary.shape[0]:
            node = forward_backward(unary, self.transition, _nonempty(offsets), edge_marginals="none")[1]
        return [node[lo:hi] for lo, hi in zip(offsets[:-1], offsets[1:])]

    def log_probability(self, xseq, yseq):
        """``log P(yseq | xseq)``: the path's score minus the log partition function."""
        unary, offsets = self._unary([xseq], "xseq")
        index = {label: k for k, label in enumerate(self.labels)}
        unknown = [label for label in yseq if label not in index]
        if len(yseq) != unary.shape[0] or unknown:
            raise ValueError(f"yseq must have one known label per item ({unary.shape[0]}); got {len(yseq)} labels"
                             + (f", unknown {unknown[:3]}" if unknown else "") + ".")
        if not len(yseq):
            return 0.0
        path = np.array([index[label] for label in yseq])
        score = unary[np.arange(len(path)), path].sum() + self.transition[path[:-1], path[1:]].sum()
        log_z = forward_backward(unary, self.transition, offsets, edge_marginals="none")[0][0]
        return float(score - log_z)

    def _unary(self, X, what):
        rows, offsets = self.vocabulary.transform(X, what)
        return (rows @ self.state).toarray() + self.bias, offsets

    # ------------------------------------------------------------------ named weights
    def state_features(self):
        """``{(attribute, label): weight}`` of the non-zero state weights."""
        coo = self.state.tocoo()
        return {(self.attributes[a], self.labels[k]): float(w) for a, k, w in zip(coo.row, coo.col, coo.data) if w}

    def transition_features(self):
        """``{(label_from, label_to): weight}`` of the non-zero transition weights."""
        L = self.labels
        return {(L[i], L[j]): float(self.transition[i, j]) for i, j in zip(*np.nonzero(self.transition))}

    # ------------------------------------------------------------------ model file
    def to_bytes(self):
        """The model file's content (what :meth:`save` writes): see :meth:`save`."""
        return model_file_bytes(_FORMAT, _VERSION, *self._file_contents())

    def save(self, path):
        """Write the model file to ``path`` through a temporary file renamed into place.

        The file is an ``.npz`` of plain arrays (no pickle): the attribute names as UTF-8 bytes
        with their end offsets, the non-zero state weights as (row, column, value), the bias and
        the transition weights, plus a JSON header with the labels in their exact types (ints,
        strings with any characters, tuples, bytes ..., see
        :func:`~sklearn_struct.utils._model_file.encode_value`) and a SHA-256 checksum. ValueError
        (nothing written) if a label is of a type the file cannot hold.
        """
        save_model_file(path, _FORMAT, _VERSION, *self._file_contents())

    def _file_contents(self):
        try:
            labels = [encode_value(label) for label in self.labels]
        except ValueError as exc:
            raise ValueError(f"the CRF's labels cannot be saved: {exc}") from None
        names = [a.encode("utf-8", "surrogatepass") for a in self.attributes]
        coo = self.state.tocoo()
        arrays = {"attribute_bytes": np.frombuffer(b"".join(names), dtype=np.uint8),
                  "attribute_ends": np.cumsum([len(n) for n in names], dtype=np.int64),
                  "state_row": coo.row.astype(np.int64), "state_col": coo.col.astype(np.int64),
                  "state_value": coo.data.astype(np.float64), "bias": self.bias, "transition": self.transition}
        return arrays, {"labels": labels, "n_attributes": len(names), "n_state": int(coo.nnz)}

    @classmethod
    def load(cls, path):
        """Read a model file written by :meth:`save` (or by version 1, whose labels were strings).

        Raises :class:`~sklearn_struct.exceptions.ModelFileError` (a ValueError) naming the file and
        what is wrong: see :func:`~sklearn_struct.utils._model_file.load_model_file`, then labels or
        attributes that are not distinct, weights that do not match them or are not finite.
        """
        arrays, meta = load_model_file(path, _FORMAT, _VERSION, expect=lambda m: _expected_arrays(path, m),
                                       what="sklearn_struct.crfsuite model file")
        if meta["version"] >= 2:
            labels = [decode_value(path, v, f"labels[{i}]") for i, v in enumerate(meta["labels"])]
            attributes = _decode_names(path, arrays["attribute_bytes"], arrays["attribute_ends"])
        else:
            labels, attributes = arrays["labels"].tolist(), arrays["attributes"].tolist()
        check_labels(path, labels, "labels")
        if len(set(attributes)) != len(attributes):
            raise ModelFileError(f"{path}: the attribute names are not distinct.", str(path))
        state = _state_matrix(path, arrays, len(attributes), len(labels))
        L = len(labels)
        bias = check_model_array(path, arrays, "bias", (L,))
        transition = check_model_array(path, arrays, "transition", (L, L))
        return cls(attributes, labels, state, bias, transition)


def _expected_arrays(path, meta):
    """The arrays of a model file of ``meta``'s version: names, dtype kinds, shapes (checked before reading)."""
    if meta["version"] < 2:
        return {"attributes": ("U", (None,)), "labels": ("U", (None,)), "state_row": ("iu", (None,)),
                "state_col": ("iu", (None,)), "state_value": ("f", (None,)), "bias": ("f", (None,)),
                "transition": ("f", (None, None))}
    if type(meta.get("labels")) is not list:
        raise ModelFileError(f"{path}: the header has no list of labels.", str(path))
    L, A = len(meta["labels"]), meta_number(path, meta, "n_attributes", "int", 0)
    nnz = meta_number(path, meta, "n_state", "int", 0)
    return {"attribute_bytes": ("u", (None,)), "attribute_ends": ("i", (A,)), "state_row": ("i", (nnz,)),
            "state_col": ("i", (nnz,)), "state_value": ("f", (nnz,)), "bias": ("f", (L,)), "transition": ("f", (L, L))}


def _decode_names(path, blob, ends):
    """The attribute names stored as UTF-8 ``blob`` cut at ``ends``."""
    blob = blob.tobytes()
    if ends.size and (ends[0] < 0 or np.any(np.diff(ends) < 0) or ends[-1] != len(blob)) or (
            not ends.size and blob):
        raise ModelFileError(f"{path}: attribute_ends do not cut attribute_bytes into names.", str(path))
    starts = [0, *ends[:-1].tolist()]
    try:
        return [blob[lo:hi].decode("utf-8", "surrogatepass") for lo, hi in zip(starts, ends.tolist())]
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"{path}: an attribute name is not UTF-8 ({exc.reason}).", str(path)) from None


def _state_matrix(path, arrays, A, L):
    """The state weights as CSR ``(A, L)``; ModelFileError unless the (row, column) pairs are in range and distinct."""
    row, col = (check_model_array(path, arrays, name, (None,), "iu") for name in ("state_row", "state_col"))
    value = check_model_array(path, arrays, "state_value", (None,))
    if not len(row) == len(col) == len(value):
        raise ModelFileError(f"{path}: state_row, state_col and state_value differ in length.", str(path))
    if row.size and (row.min() < 0 or row.max() >= A or col.min() < 0 or col.max() >= L):
        raise ModelFileError(f"{path}: state weights refer to attributes or labels outside the {A} attributes "
                             f"and {L} labels.", str(path))
    keys = np.sort(row.astype(np.int64) * L + col)
    if keys.size > 1 and np.any(keys[1:] == keys[:-1]):
        raise ModelFileError(f"{path}: a state weight (attribute, label) appears twice.", str(path))
    return sp.csr_matrix((value, (row, col)), shape=(A, L))


class Tagger:
    """The nearest equivalent of ``pycrfsuite.Tagger`` for a fitted :class:`~sklearn_struct.crfsuite.CRF`.

    Same methods: :meth:`labels`, :meth:`tag`, :meth:`set`, :meth:`marginal`, :meth:`probability`,
    :meth:`info`; it runs this library's chain oracle on the CRF's weights, not the CRFsuite C tagger.
    """

    def __init__(self, model, size):
        self._model, self._size = model, size
        self._xseq, self._marginals = None, None

    def labels(self):
        """The labels, in order of their first appearance in the training data."""
        return list(self._model.labels)

    def set(self, xseq):
        """Set the sequence that :meth:`tag`, :meth:`marginal` and :meth:`probability` work on."""
        self._xseq, self._marginals = xseq, None

    def tag(self, xseq=None):
        """Viterbi labels of ``xseq`` (or of the sequence given to :meth:`set`)."""
        if xseq is not None:
            self.set(xseq)
        return self._model.predict([self._current()], "xseq")[0]

    def marginal(self, y, pos):
        """``P(label y at position pos)`` for the sequence given to :meth:`set`."""
        if self._marginals is None:
            self._marginals = self._model.marginals([self._current()], "xseq")[0]
        n = len(self._marginals)
        if not isinstance(pos, numbers.Integral) or isinstance(pos, bool) or not 0 <= pos < n:
            raise ValueError(f"marginal: position pos={pos!r} must be an int in 0..{n - 1}.")
        if y not in self._model.labels:
            raise ValueError(f"marginal: unknown label y={y!r}; the labels are {list(self._model.labels)}.")
        return float(self._marginals[pos, self._model.labels.index(y)])

    def probability(self, yseq):
        """``P(yseq | x)`` for the sequence given to :meth:`set`."""
        return float(np.exp(self._model.log_probability(self._current(), yseq)))

    def info(self):
        """The model's contents as ``pycrfsuite.Tagger.info()`` gives them: ``header``, ``labels``,
        ``attributes``, ``transitions``, ``state_features``."""
        m = self._model
        header = {"size": str(self._size), "num_attrs": str(len(m.attributes)), "num_labels": str(len(m.labels))}
        return SimpleNamespace(header=header, labels={label: str(i) for i, label in enumerate(m.labels)},
                               attributes={a: str(i) for i, a in enumerate(m.attributes)},
                               transitions=m.transition_features(), state_features=m.state_features())

    def _current(self):
        if self._xseq is None:
            raise ValueError("no sequence: call set(xseq) or tag(xseq) first.")
        return self._xseq


def _label_array(labels):
    """``labels`` as a 1-D object array (``np.array`` would turn tuple labels into rows)."""
    out = np.empty(len(labels), dtype=object)
    for k, label in enumerate(labels):
        out[k] = label
    return out


def _nonempty(offsets):
    """The offsets without the empty sequences (which have no rows): what the chain oracle takes."""
    return np.concatenate([[0], offsets[1:][np.diff(offsets) > 0]]).astype(np.int64)
