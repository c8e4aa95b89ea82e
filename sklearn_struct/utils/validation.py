"""Validation of sequence data: lists of per-sequence feature matrices and label arrays.

Every error names the offending sequence, so that a user with 10,000 sentences can find
the one that is wrong. Messages follow scikit-learn's wording where an equivalent exists.
"""

import numbers

import numpy as np
import scipy.sparse as sp

__all__ = ["check_sequences", "check_sequence_labels", "check_random_state_seed"]


def _as_list(X, what):
    if isinstance(X, (str, bytes)):
        raise ValueError(f"{what} must be a list of sequences, got a string.")
    if isinstance(X, np.ndarray) and X.dtype != object:
        if X.ndim == 3:  # equal-length sequences given as one 3D array
            return list(X)
        raise ValueError(
            f"{what} must be a list of per-sequence arrays (one 2D array per sequence); "
            f"got a single {X.ndim}D array of shape {X.shape}."
        )
    try:
        seqs = list(X)
    except TypeError:
        raise ValueError(f"{what} must be a list of sequences, got {type(X).__name__}.") from None
    if len(seqs) == 0:
        raise ValueError(f"{what} is empty: found 0 sequences, at least 1 is required.")
    return seqs


def _check_one_sequence(x, i, accept_sparse, dtype):
    """Return sequence ``i`` as a float 2D array (or CSR), or raise naming it."""
    if sp.issparse(x):
        if not accept_sparse:
            raise ValueError(f"Sequence {i}: sparse input is not supported here; pass dense arrays.")
        x = sp.csr_matrix(x, dtype=dtype)
        data = x.data
    else:
        try:
            x = np.asarray(x, dtype=dtype)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Sequence {i}: features are not numeric ({exc}).") from None
        if x.ndim != 2:
            raise ValueError(
                f"Sequence {i}: expected a 2D array (n_tokens, n_features), got {x.ndim}D "
                f"with shape {x.shape}."
            )
        data = x
    if x.shape[0] == 0:
        raise ValueError(f"Sequence {i} is empty: it has 0 tokens, at least 1 is required.")
    if not np.all(np.isfinite(data)):
        bad = "NaN" if np.any(np.isnan(data)) else "infinity"
        raise ValueError(f"Sequence {i}: features contain {bad}.")
    return x


def check_sequences(X, y=None, *, accept_sparse=True, n_features=None, dtype=np.float64):
    """Validate a list of sequences and, optionally, their labels.

    Parameters
    ----------
    X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        One 2D feature matrix per sequence.
    y : list of array-like of shape (n_tokens_i,), default=None
        One 1D label array per sequence.
    accept_sparse : bool, default=True
        Whether scipy.sparse matrices are accepted (converted to CSR).
    n_features : int, default=None
        If given, every sequence must have exactly this many features (predict time).
    dtype : dtype, default=np.float64

    Returns
    -------
    X : list of ndarray or csr_matrix
    y : list of ndarray, only if ``y`` was given

    Examples
    --------
    >>> import numpy as np
    >>> X = [np.zeros((3, 2)), np.ones((1, 2))]
    >>> [x.shape for x in check_sequences(X)]
    [(3, 2), (1, 2)]
    """
    seqs = _as_list(X, "X")
    out = [_check_one_sequence(x, i, accept_sparse, dtype) for i, x in enumerate(seqs)]
    expected = n_features if n_features is not None else out[0].shape[1]
    for i, x in enumerate(out):
        if x.shape[1] != expected:
            where = "as seen during fit" if n_features is not None else "as sequence 0"
            raise ValueError(
                f"Sequence {i} has {x.shape[1]} features, but {expected} are expected ({where})."
            )
    if y is None:
        return out
    return out, check_sequence_labels(y, lengths=[x.shape[0] for x in out])


def check_sequence_labels(y, lengths=None):
    """Validate a list of 1D label arrays, optionally against sequence lengths."""
    seqs = _as_list(y, "y")
    if lengths is not None and len(seqs) != len(lengths):
        raise ValueError(
            f"X and y have inconsistent numbers of sequences: {len(lengths)} in X, {len(seqs)} in y."
        )
    out = []
    for i, labels in enumerate(seqs):
        if isinstance(labels, str):  # a sequence of characters, as in OCR words
            labels = list(labels)
        labels = np.asarray(labels)
        if labels.ndim != 1:
            raise ValueError(
                f"Sequence {i}: labels must be 1D, got shape {labels.shape}."
            )
        if labels.shape[0] == 0:
            raise ValueError(f"Sequence {i}: labels are empty.")
        if lengths is not None and labels.shape[0] != lengths[i]:
            raise ValueError(
                f"Sequence {i}: {lengths[i]} tokens in X but {labels.shape[0]} labels in y."
            )
        if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
            raise ValueError(f"Sequence {i}: labels contain NaN or infinity.")
        out.append(labels)
    return out


def check_random_state_seed(random_state):
    """Draw a reproducible 32-bit seed for numba kernels from a random_state."""
    from sklearn.utils import check_random_state

    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def check_finite_potentials(arr, name):
    """Raise a ValueError if a potential array holds NaN (inf of either sign is legal: -inf = forbidden)."""
    arr = np.asarray(arr, dtype=np.float64)
    if np.any(np.isnan(arr)):
        raise ValueError(f"{name} contains NaN.")
    if np.any(arr == np.inf):
        raise ValueError(f"{name} contains +inf; use large finite values or -inf for forbidden states.")
    return arr


def check_positive_int(value, name):
    if not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def encode_sequence_labels(encoder, y):
    """Encode a list of label arrays with a fitted LabelEncoder in one call (not one per sequence).

    Raises a ValueError naming the first sequence that holds a label unseen at fit.
    """
    lengths = [len(labels) for labels in y]
    flat = np.concatenate(y)
    known = np.isin(flat, encoder.classes_)
    if not known.all():
        first = int(np.flatnonzero(~known)[0])
        seq = int(np.searchsorted(np.cumsum(lengths), first, side="right"))
        raise ValueError(f"Sequence {seq}: label {flat[first].item()!r} was not seen during fit.")
    codes = encoder.transform(flat)
    return np.split(codes, np.cumsum(lengths)[:-1])


def check_matchings(X, y=None, *, n_features=None):
    """Validate matching data: ``X`` a list of ``(n_left, n_right, n_features)`` pair-feature arrays,
    ``y`` a list of assignments (``y[m][i] = j``, injective, one entry per left node).

    Returns float64 C-contiguous copies of ``X`` and int64 arrays for ``y``. Errors name the example.
    """
    if isinstance(X, np.ndarray) and X.ndim == 4:
        X = list(X)
    if not isinstance(X, (list, tuple)) or len(X) == 0:
        raise ValueError("X must be a non-empty list of (n_left, n_right, n_features) pair-feature arrays.")
    out = []
    for m, x in enumerate(X):
        try:
            x = np.ascontiguousarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"X[{m}]: pair features are not a numeric (ragged?) array.") from None
        if x.ndim != 3:
            raise ValueError(f"X[{m}]: expected a 3D (n_left, n_right, n_features) array, got shape {x.shape}.")
        if x.shape[0] == 0 or x.shape[0] > x.shape[1]:
            raise ValueError(f"X[{m}]: need 1 <= n_left <= n_right (left side the smaller), got shape {x.shape[:2]}.")
        if n_features is None:
            n_features = x.shape[2]
        if x.shape[2] != n_features:
            raise ValueError(f"X[{m}] has {x.shape[2]} features, expected {n_features}.")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"X[{m}] contains NaN or infinite values.")
        out.append(x)
    if y is None:
        return out
    if len(y) != len(out):
        raise ValueError(f"X has {len(out)} examples but y has {len(y)}.")
    ys = []
    for m, (x, a) in enumerate(zip(out, y)):
        a = np.asarray(a)
        if a.ndim != 1 or a.shape[0] != x.shape[0]:
            raise ValueError(f"y[{m}] must be a 1D assignment of length n_left={x.shape[0]}, got shape {a.shape}.")
        if a.size and not np.issubdtype(a.dtype, np.integer):
            if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
                raise ValueError(f"y[{m}] must hold integer right-node indices.")
        a = a.astype(np.int64)
        if a.min() < 0 or a.max() >= x.shape[1]:
            raise ValueError(f"y[{m}] has indices outside [0, n_right={x.shape[1]}).")
        if len(np.unique(a)) != len(a):
            raise ValueError(f"y[{m}] is not injective: two left nodes share a right node.")
        ys.append(a)
    return out, ys
