"""sklearn-crfsuite's metrics: scikit-learn's classification metrics on flattened sequences.

Every ``flat_*`` function takes ``y_true`` and ``y_pred`` as lists of label sequences, joins
each into one flat list of token labels and calls the scikit-learn metric of the same name
with the remaining arguments (``average``, ``labels``, ``digits``, ...) unchanged.

Examples
--------
>>> from sklearn_struct.crfsuite import metrics
>>> y_true, y_pred = [["B", "I", "O"], ["O"]], [["B", "O", "O"], ["O"]]
>>> metrics.flat_accuracy_score(y_true, y_pred)
0.75
>>> metrics.sequence_accuracy_score(y_true, y_pred)
0.5
"""

from functools import wraps
from itertools import chain

import numpy as np
from sklearn import metrics as _sk

__all__ = ["flat_accuracy_score", "flat_precision_score", "flat_recall_score", "flat_f1_score",
           "flat_fbeta_score", "flat_classification_report", "sequence_accuracy_score"]


def flatten(y):
    """One flat list of the items of a list of sequences.

    >>> flatten([[1, 2], [3]])
    [1, 2, 3]
    """
    return list(chain.from_iterable(y))


def _flattens_y(metric):
    @wraps(metric)
    def flat_metric(y_true, y_pred, *args, **kwargs):
        _check_lengths(y_true, y_pred)
        return metric(flatten(y_true), flatten(y_pred), *args, **kwargs)

    return flat_metric


def _check_lengths(y_true, y_pred):
    """ValueError unless both are lists of label sequences of equal lengths (naming the first that is not)."""
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
            raise ValueError(f"{name} must be a list of label sequences, got {type(y).__name__}.")
        for i, seq in enumerate(y):
            if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__") or np.ndim(seq) != 1:
                raise ValueError(f"{name}, sequence {i}: expected a 1D sequence of labels, got {type(seq).__name__}.")
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} sequences but y_pred has {len(y_pred)}.")
    for i, (a, b) in enumerate(zip(y_true, y_pred)):
        if len(a) != len(b):
            raise ValueError(f"sequence {i}: y_true has {len(a)} labels but y_pred has {len(b)}.")


@_flattens_y
def flat_accuracy_score(y_true, y_pred):
    """Accuracy over all tokens (:func:`sklearn.metrics.accuracy_score` on flattened sequences)."""
    return _sk.accuracy_score(y_true, y_pred)


@_flattens_y
def flat_precision_score(y_true, y_pred, **kwargs):
    """Precision over all tokens (:func:`sklearn.metrics.precision_score` on flattened sequences)."""
    return _sk.precision_score(y_true, y_pred, **kwargs)


@_flattens_y
def flat_recall_score(y_true, y_pred, **kwargs):
    """Recall over all tokens (:func:`sklearn.metrics.recall_score` on flattened sequences)."""
    return _sk.recall_score(y_true, y_pred, **kwargs)


@_flattens_y
def flat_f1_score(y_true, y_pred, **kwargs):
    """F1 over all tokens (:func:`sklearn.metrics.f1_score` on flattened sequences)."""
    return _sk.f1_score(y_true, y_pred, **kwargs)


@_flattens_y
def flat_fbeta_score(y_true, y_pred, beta, **kwargs):
    """F-beta over all tokens (:func:`sklearn.metrics.fbeta_score` on flattened sequences)."""
    return _sk.fbeta_score(y_true, y_pred, beta=beta, **kwargs)


@_flattens_y
def flat_classification_report(y_true, y_pred, labels=None, **kwargs):
    """:func:`sklearn.metrics.classification_report` over all tokens."""
    return _sk.classification_report(y_true, y_pred, labels=labels, **kwargs)


def sequence_accuracy_score(y_true, y_pred):
    """Fraction of sequences predicted entirely right (0 for no sequences, as sklearn-crfsuite)."""
    _check_lengths(y_true, y_pred)
    if not len(y_true):
        return 0
    matches = sum(list(a) == list(b) for a, b in zip(y_true, y_pred))
    return matches / len(y_true)
