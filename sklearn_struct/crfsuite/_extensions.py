"""The CRF's extensions beyond sklearn-crfsuite: class weights by label name and ``partial_fit``.

``partial_fit`` keeps the attribute vocabulary, the label list and the underlying
:class:`~sklearn_struct.ChainCRF` (with its online state) between calls: attributes first
seen in a later batch get new columns at the end, and the chain's weights grow with them.
"""

import numpy as np

from ..chain_crf import ChainCRF
from ._features import AttributeVocabulary, split_rows

__all__ = ["chain_class_weight", "partial_fit_crf"]


def chain_class_weight(class_weight, labels):
    """``class_weight`` keyed by label (or "balanced", None) as ChainCRF's, keyed by label code."""
    if class_weight is None or isinstance(class_weight, str):
        return class_weight
    codes = {label: k for k, label in enumerate(labels)}
    unknown = [label for label in class_weight if label not in codes]
    if unknown:
        raise ValueError(f"class_weight: label {unknown[0]!r} does not occur in y (labels {labels[:20]}).")
    return {codes[label]: weight for label, weight in class_weight.items()}


def partial_fit_crf(crf, X, y, classes, sample_weight, check_labels, encode):
    """One epoch of ``crf``'s online algorithm over ``(X, y)``; returns ``(model inputs, chain)``.

    ``check_labels`` and ``encode`` are the estimator's label checks. Returns
    ``(names, labels, chain, state)``: the attribute names, the label list, the fitted chain and
    the state to keep for the next call.
    """
    state = crf.__dict__.get("_partial_state")
    if state is None:
        if classes is None:
            raise ValueError("classes must be given on the first call to partial_fit (all the labels any batch "
                             "may hold), as for SGDClassifier.")
        labels = list(dict.fromkeys(classes))
        vocabulary = AttributeVocabulary()
        params = crf._chain_params()
        if not crf.min_freq:  # CRFsuite's 0 only drops pairs of negative summed value: no threshold per batch
            params["min_freq"] = None
        chain = ChainCRF(**params, class_weight=chain_class_weight(crf.class_weight, labels))
    else:
        names, labels, chain = state
        if classes is not None and set(classes) != set(labels):
            raise ValueError(f"classes={list(classes)} differs from the classes of the previous calls {labels}.")
        vocabulary = AttributeVocabulary(names)  # a copy: a failing call leaves the state as it was
    rows, offsets = vocabulary.fit_transform(X, "X")
    y_enc = encode(check_labels(y, offsets, "y"), {label: k for k, label in enumerate(labels)}, "y")
    chain.partial_fit(split_rows(rows, offsets), y_enc, classes=np.arange(len(labels)), sample_weight=sample_weight)
    names = vocabulary.names()
    return names, labels, chain, (names, labels, chain)
