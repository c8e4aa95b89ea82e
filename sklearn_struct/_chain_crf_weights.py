"""Sequence weights of a chain CRF fit: ``sample_weight`` per sequence times ``class_weight`` per token.

The weighted objective of every algorithm is the plain one with sequence ``i``'s term
multiplied by

    s_i = sample_weight[i] * mean_t class_weight[y_it]

(``lbfgs``: ``sum_i s_i [log Z_i - score_i(y_i)] + c1 |theta|_1 + c2 ||theta||^2``; the online
algorithms scale their per-sequence updates, see
:func:`sklearn_struct.oracles._chain_online.online_epoch`). Taking the class weights as a
mean over the sequence's tokens keeps the objective a weighted log-likelihood of whole
sequences (convex, with the same gradient machinery), and a sequence whose tokens all have
class weight 1 keeps weight ``sample_weight[i]``. ``class_weight="balanced"`` is
scikit-learn's ``n_tokens / (n_classes * count(label))`` over the training tokens.
"""

import numpy as np
from sklearn.utils.class_weight import compute_class_weight

__all__ = ["sequence_weights"]


def sequence_weights(sample_weight, class_weight, y_enc, classes):
    """The per-sequence weights ``s_i`` (n_sequences,), or None when both are None.

    Parameters
    ----------
    sample_weight : array-like of shape (n_sequences,) or None
        Non-negative, finite, not all zero.
    class_weight : dict, "balanced" or None
        ``{label: weight}`` (labels not listed weigh 1; a key that is no label of ``y`` is a
        ValueError, as in scikit-learn) or ``"balanced"``.
    y_enc : list of int arrays
        The encoded labels of each sequence.
    classes : ndarray
        ``classes_``: the label of each code.
    """
    n_seq = len(y_enc)
    weights = None
    if sample_weight is not None:
        weights = _check_sample_weight(sample_weight, n_seq)
    if class_weight is not None:
        per_label = label_weights(class_weight, y_enc, classes)
        # over the known tokens (a partial label, -1, has no class of its own); 1 if none is known
        means = np.array([per_label[y[y >= 0]].mean() if np.any(y >= 0) else 1.0 for y in y_enc])
        weights = means if weights is None else weights * means
        if not np.any(weights > 0):
            raise ValueError("class_weight and sample_weight give every sequence weight 0.")
    return weights


def label_weights(class_weight, y_enc, classes):
    """The weight of each label code (n_classes,) from a dict or ``"balanced"``."""
    y = np.concatenate(y_enc)
    y = y[y >= 0]  # partial labels (-1) count for no class
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"class_weight must be a dict, 'balanced' or None, got {class_weight!r}.")
        return compute_class_weight("balanced", classes=np.arange(len(classes)), y=y)
    if not isinstance(class_weight, dict):
        raise ValueError(f"class_weight must be a dict, 'balanced' or None, got {type(class_weight).__name__}.")
    out = np.ones(len(classes))
    index = {label: k for k, label in enumerate(classes.tolist())}
    for label, value in class_weight.items():
        key = label.item() if hasattr(label, "item") else label
        if key not in index:
            raise ValueError(f"class_weight: label {label!r} is not in the training labels {classes.tolist()[:20]}.")
        if not (isinstance(value, (int, float, np.number)) and np.isfinite(value) and value >= 0):
            raise ValueError(f"class_weight[{label!r}] must be a finite number >= 0, got {value!r}.")
        out[index[key]] = float(value)
    return out


def _check_sample_weight(sample_weight, n_seq):
    try:
        weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("sample_weight must be numbers, one per sequence.") from None
    if weights.ndim != 1 or weights.shape[0] != n_seq:
        raise ValueError(f"sample_weight must have one weight per sequence ({n_seq}), got shape {weights.shape}.")
    bad = np.flatnonzero(~np.isfinite(weights) | (weights < 0))
    if bad.size:
        raise ValueError(f"sample_weight must be finite and >= 0; sequence {bad[0]} has {weights[bad[0]]}.")
    if not np.any(weights > 0):
        raise ValueError("sample_weight is 0 for every sequence: nothing to fit.")
    return weights
