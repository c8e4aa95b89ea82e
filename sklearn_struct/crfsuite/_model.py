"""The fitted model of :class:`~sklearn_struct.crfsuite.CRF`: named weights, prediction, model file, tagger.

A :class:`CRFModel` keeps what CRFsuite's model file keeps: the active attributes (those with a
non-zero weight), the labels, the state weights ``(attribute, label)``, the transition weights
``(label_from, label_to)``, and a per-label bias (0 for :class:`~sklearn_struct.crfsuite.CRF`,
whose model is CRFsuite's). Predictions run the chain oracle (Viterbi, forward-backward) on
``rows @ state + bias``.
"""

import io
import json
import numbers
import os
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from ..oracles.chain import forward_backward, viterbi
from ._features import AttributeVocabulary

_FORMAT, _VERSION = "sklearn_struct.crfsuite.CRF", 1


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
        labels = np.array(self.labels, dtype=object)
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
        """The model file's content: an ``.npz`` of plain arrays plus a JSON header (no pickle)."""
        buffer = io.BytesIO()
        coo = self.state.tocoo()
        meta = {"format": _FORMAT, "version": _VERSION}
        np.savez(buffer, attributes=np.array(self.attributes, dtype=str), labels=np.array(self.labels, dtype=str),
                 state_row=coo.row.astype(np.int64), state_col=coo.col.astype(np.int64), state_value=coo.data,
                 bias=self.bias, transition=self.transition, meta=np.array(json.dumps(meta)))
        return buffer.getvalue()

    def save(self, path):
        """Write the model file to ``path`` through a temporary file renamed into place."""
        path = Path(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(self.to_bytes())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path):
        """Read a model file written by :meth:`save`; ValueError naming the file when it is not one."""
        try:
            with np.load(Path(path), allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            meta = json.loads(str(arrays["meta"]))
            attributes, labels = arrays["attributes"].tolist(), arrays["labels"].tolist()
            A, L = len(attributes), len(labels)
            state = sp.csr_matrix((arrays["state_value"], (arrays["state_row"], arrays["state_col"])), shape=(A, L))
            bias, transition = arrays["bias"], arrays["transition"]
        except (OSError, KeyError, ValueError) as exc:
            raise ValueError(f"{path} is not a sklearn_struct.crfsuite model file: {exc}") from None
        if meta.get("format") != _FORMAT or meta.get("version") != _VERSION:
            raise ValueError(f"{path}: format {meta.get('format')!r} version {meta.get('version')!r}, "
                             f"expected {_FORMAT!r} version {_VERSION}.")
        if bias.shape != (L,) or transition.shape != (L, L) or not np.all(np.isfinite(state.data)):
            raise ValueError(f"{path}: arrays do not match {L} labels, or weights are not finite.")
        return cls(attributes, labels, state, bias, transition)


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


def _nonempty(offsets):
    """The offsets without the empty sequences (which have no rows): what the chain oracle takes."""
    return np.concatenate([[0], offsets[1:][np.diff(offsets) > 0]]).astype(np.int64)
