"""make_chain_data: exact samples from a random linear-chain CRF."""

import numbers

import numpy as np
from sklearn.utils import Bunch, check_random_state

from ..oracles.chain import sample_chain
from ..utils.packing import lengths_to_offsets

__all__ = ["make_chain_data"]


def make_chain_data(n_sequences=200, *, n_labels=4, n_features=10, min_length=3, max_length=12, unary_scale=1.0,
                    transition_scale=2.0, return_params=False, random_state=None):
    """Sequences drawn exactly from a random linear-chain CRF.

    Token features are standard normal; the CRF has unary scores ``X @ W`` and a shared
    transition table ``A``. Labels are sampled exactly from ``P(y | x)`` by forward
    filtering and backward sampling, so the true model is the Bayes-optimal predictor
    and any fitted CRF can be compared with it.

    Parameters
    ----------
    n_sequences : int, default=200
    n_labels : int, default=4
    n_features : int, default=10
    min_length, max_length : int, default=3, 12
        Sequence lengths are uniform on ``[min_length, max_length]``.
    unary_scale : float, default=1.0
        Standard deviation of the entries of ``W``.
    transition_scale : float, default=2.0
        Standard deviation of the entries of ``A``: larger values make the chain
        structure matter more.
    return_params : bool, default=False
        Also return the true ``W`` and ``A`` (as ``coef`` and ``transition``).
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : list of ndarray of shape (n_tokens_i, n_features)
    y : list of ndarray of shape (n_tokens_i,), int labels in ``range(n_labels)``
    params : Bunch with ``coef`` (n_features, n_labels) and ``transition`` (n_labels, n_labels)
        Only if ``return_params`` is True.

    Examples
    --------
    >>> from sklearn_struct.datasets import make_chain_data
    >>> X, y = make_chain_data(n_sequences=3, n_features=2, random_state=0)
    >>> len(X), X[0].shape[1], X[0].shape[0] == y[0].shape[0]
    (3, 2, True)
    """
    for name, value, low in [
        ("n_sequences", n_sequences, 1),
        ("n_labels", n_labels, 1),
        ("n_features", n_features, 1),
        ("min_length", min_length, 1),
        ("max_length", max_length, 1),
    ]:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
    if max_length < min_length:
        raise ValueError(f"max_length={max_length} must be >= min_length={min_length}.")
    for name, value in [("unary_scale", unary_scale), ("transition_scale", transition_scale)]:
        if not (isinstance(value, numbers.Real) and np.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")

    rng = check_random_state(random_state)
    W = rng.normal(scale=unary_scale, size=(n_features, n_labels))
    A = rng.normal(scale=transition_scale, size=(n_labels, n_labels))
    lengths = rng.randint(min_length, max_length + 1, size=n_sequences)
    offsets = lengths_to_offsets(lengths)
    X_packed = rng.normal(size=(int(offsets[-1]), n_features))
    labels = sample_chain(X_packed @ W, A, offsets, random_state=rng)
    X = [X_packed[offsets[i] : offsets[i + 1]] for i in range(n_sequences)]
    y = [labels[offsets[i] : offsets[i + 1]] for i in range(n_sequences)]
    if return_params:
        return X, y, Bunch(coef=W, transition=A)
    return X, y
