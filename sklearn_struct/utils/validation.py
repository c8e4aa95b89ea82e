"""Validation of sequence data: lists of per-sequence feature matrices and label arrays.

Every error names the offending sequence, so that a user with 10,000 sentences can find
the one that is wrong. Messages follow scikit-learn's wording where an equivalent exists.
"""

import numbers

import numpy as np
import scipy.sparse as sp

__all__ = [
    "check_edge_list",
    "check_sequences",
    "check_sequence_labels",
    "check_random_state_seed",
    "check_float_array",
    "check_int_array",
    "check_offsets",
    "check_scalar_param",
    "check_sample_weight_vector",
    "check_y_given",
]


def _as_list(X, what):
    if isinstance(X, (str, bytes)):
        raise ValueError(f"{what} must be a list of sequences, got a string.")
    if sp.issparse(X):
        raise ValueError(
            f"{what} must be a list of sequences (one 2D array or sparse matrix per sequence); "
            f"got a single sparse matrix of shape {X.shape}."
        )
    if isinstance(X, np.ndarray) and X.dtype != object:
        if X.ndim == 3:  # equal-length sequences given as one 3D array
            return list(X)
        raise ValueError(
            f"{what} must be a list of sequences (one 2D array per sequence); "
            f"got a single {X.ndim}D array of shape {X.shape}."
        )
    if X is None:
        raise ValueError(f"{what} must be a list of sequences, got None.")
    return as_nonempty_list(X, what, "sequences")


def as_nonempty_list(X, what, items):
    """``list(X)``; a ValueError naming ``what`` if ``X`` is not iterable or empty (``items``: its entries)."""
    try:
        out = list(X)
    except TypeError:
        raise ValueError(f"{what} must be a list of {items}, got {type(X).__name__}.") from None
    if not out:
        raise ValueError(f"{what} is empty: found 0 {items}, at least 1 is required.")
    return out


def _check_one_sequence(x, i, accept_sparse, dtype):
    """Return sequence ``i`` as a float 2D array (or CSR), or raise naming it."""
    if sp.issparse(x):
        if not accept_sparse:
            raise ValueError(f"Sequence {i}: sparse input is not supported here; pass dense arrays.")
        if x.dtype.kind == "c":
            raise ValueError(f"Sequence {i}: features are complex; only real features are supported.")
        if not (isinstance(x, sp.csr_matrix) and x.dtype == dtype):  # a new matrix copies a view's arrays
            x = sp.csr_matrix(x, dtype=dtype)
        data = x.data
    else:
        try:
            raw = np.asarray(x)
            if raw.dtype.kind == "c":
                raise ValueError(f"Sequence {i}: features are complex; only real features are supported.")
            x = np.asarray(raw, dtype=dtype)
        except OverflowError:  # Python ints beyond float64 in an object array
            raise ValueError(f"Sequence {i}: a feature value is beyond the float64 range (|x| > 1.8e308).") from None
        except (TypeError, ValueError) as exc:
            if "complex" in str(exc):
                raise
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


def check_y_length(X, y, noun):
    """Raise a ValueError unless ``y`` has one entry per item of ``X`` (``noun``: the items, plural)."""
    if len(y) != len(X):
        raise ValueError(f"X has {len(X)} {noun} but y has {len(y)}.")


def check_y_given(y, estimator):
    """Raise scikit-learn's ValueError for a supervised ``fit`` called with ``y=None``."""
    if y is None:
        name = estimator if isinstance(estimator, str) else type(estimator).__name__
        raise ValueError(f"{name} requires y to be passed, but the target y is None.")


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

    try:
        rng = check_random_state(random_state)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"random_state: {exc}") from None
    return int(rng.randint(np.iinfo(np.int32).max))


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


# --------------------------------------------------------------------------------------
# Arrays, indices and offsets for the lower-level public functions (oracles, packing).
# Each raises a ValueError (TypeError for a wrong type) naming the argument and the first
# offending index, so that no public function hands numba an unchecked index.
# --------------------------------------------------------------------------------------


def _first_index(mask):
    """The first True position of a boolean array as a tuple (a plain int for 1D)."""
    where = np.unravel_index(int(np.flatnonzero(mask.ravel())[0]), mask.shape)
    return int(where[0]) if len(where) == 1 else tuple(int(w) for w in where)


def check_float_array(arr, name, *, ndim=None, shape=None, allow_neg_inf=False, allow_empty=True,
                      check_values=True):
    """Convert ``arr`` to a C-contiguous float64 array and check its ndim, shape and values.

    Parameters
    ----------
    arr : array-like
    name : str
        The argument's name, used in every message.
    ndim : int or tuple of int, default=None
        Allowed numbers of dimensions.
    shape : tuple, default=None
        Required shape; ``None`` entries match any size.
    allow_neg_inf : bool, default=False
        Whether ``-inf`` is legal (log-potentials: a forbidden state). NaN and ``+inf`` never are.
    allow_empty : bool, default=True
    check_values : bool, default=True
        False: convert and check the shape only (the caller names bad values itself).

    Returns
    -------
    arr : ndarray of float64

    Examples
    --------
    >>> check_float_array([[0.0, -np.inf]], "unary", ndim=2, allow_neg_inf=True)
    array([[  0., -inf]])
    """
    if sp.issparse(arr):
        raise TypeError(f"{name} must be a dense array, got a sparse matrix.")
    try:
        raw = np.asarray(arr)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise ValueError(f"{name} must be a numeric array ({exc}).") from None
    if raw.dtype.kind == "c":
        raise ValueError(f"{name} must be real, got complex values.")
    if raw.dtype.kind not in "biuf":
        try:
            raw = raw.astype(np.float64)
        except OverflowError:  # Python ints beyond float64 in an object array
            raise ValueError(f"{name} holds a number beyond the float64 range (|x| > 1.8e308).") from None
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a numeric array, got dtype {raw.dtype}.") from None
    out = np.asarray(raw, dtype=np.float64, order="C")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, numbers.Integral) else tuple(ndim)
        if out.ndim not in allowed:
            want = " or ".join(f"{d}D" for d in allowed)
            raise ValueError(f"{name} must be {want}, got {out.ndim}D with shape {out.shape}.")
    if shape is not None:
        if out.ndim != len(shape) or any(w is not None and w != s for w, s in zip(shape, out.shape)):
            parts = ", ".join("any" if w is None else str(w) for w in shape)
            want = f"({parts},)" if len(shape) == 1 else f"({parts})"
            raise ValueError(f"{name} must have shape {want}, got {out.shape}.")
    if not allow_empty and out.size == 0:
        raise ValueError(f"{name} is empty (shape {out.shape}).")
    with np.errstate(over="ignore", invalid="ignore"):
        finite_sum = np.isfinite(out.sum())
    if check_values and not finite_sum:  # fast path: a finite sum has no NaN and no inf
        bad = np.isnan(out) | (out == np.inf)
        if not allow_neg_inf:
            bad |= out == -np.inf
        if bad.any():
            at = _first_index(bad)
            what = "NaN" if np.isnan(out[at]) else "infinity"
            if allow_neg_inf:
                what += " (only -inf is allowed)"
            raise ValueError(f"{name} contains {what} at index {at}.")
        if not allow_neg_inf and np.isinf(out).any():  # overflow of the sum alone is fine
            at = _first_index(np.isinf(out))
            raise ValueError(f"{name} contains infinity at index {at}.")
    return out


def check_int_array(arr, name, *, ndim=1, low=None, high=None):
    """Convert ``arr`` to int64, checking ndim and that every entry lies in ``[low, high)``.

    Integer-valued floats are accepted; fractional, non-finite, boolean or non-numeric
    entries are not. The message names the first entry out of range and its index.

    Examples
    --------
    >>> check_int_array([0, 2], "idx", low=0, high=3)
    array([0, 2])
    """
    if sp.issparse(arr):
        raise TypeError(f"{name} must be a dense array of integers, got a sparse matrix.")
    try:
        raw = np.asarray(arr)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of integers ({exc}).") from None
    if raw.dtype.kind == "b":
        raise TypeError(f"{name} must hold integer indices, got booleans.")
    if raw.dtype.kind not in "iu":
        if raw.dtype.kind == "f" and raw.size and np.all(np.isfinite(raw)) and np.all(raw == np.round(raw)):
            raw = raw.astype(np.int64)
        elif raw.dtype.kind == "f" and raw.size == 0:
            raw = raw.astype(np.int64)
        else:
            raise ValueError(f"{name} must hold integers, got dtype {raw.dtype}.")
    if raw.dtype.kind == "u" and raw.size and raw.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name} holds values too large for int64.")
    out = np.asarray(raw, dtype=np.int64, order="C")
    if ndim is not None and out.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}D, got {out.ndim}D with shape {out.shape}.")
    if out.size:
        bad = np.zeros(out.shape, dtype=bool)
        if low is not None:
            bad |= out < low
        if high is not None:
            bad |= out >= high
        if bad.any():
            at = _first_index(bad)
            lo_txt = "-inf" if low is None else str(low)
            hi_txt = "inf" if high is None else str(high - 1)
            raise ValueError(f"{name}[{at}] = {out[at]} is out of range [{lo_txt}, {hi_txt}].")
    return out


def check_offsets(offsets, name="offsets", *, n_rows=None, allow_empty_segments=True):
    """Validate sequence offsets: 1D integers, start at 0, non-decreasing, end at ``n_rows``.

    Returns int64 offsets. Messages name the offending sequence.

    Examples
    --------
    >>> check_offsets([0, 2, 5], n_rows=5)
    array([0, 2, 5])
    """
    offsets = check_int_array(offsets, name, ndim=1)
    if offsets.shape[0] < 2:
        raise ValueError(f"{name} must be 1D with at least 2 entries (n_sequences + 1), got {offsets.shape[0]}.")
    if offsets[0] != 0:
        raise ValueError(f"{name} must start at 0, got {offsets[0]}.")
    lengths = np.diff(offsets)
    bad = lengths < 0 if allow_empty_segments else lengths <= 0
    if bad.any():
        s = int(np.flatnonzero(bad)[0])
        what = "decrease" if lengths[s] < 0 else "give it no rows"
        raise ValueError(f"{name}: sequence {s} has length {lengths[s]} ({name} {what} there).")
    if n_rows is not None and offsets[-1] != n_rows:
        raise ValueError(f"{name} must end at the number of rows, {n_rows}; got {offsets[-1]}.")
    return offsets


def check_scalar_param(value, name, *, kind="real", low=None, high=None, closed="both", allow_inf=False):
    """Validate a scalar parameter: an int (``kind="int"``) or finite real in a range.

    ``closed`` is one of ``"both"``, ``"left"``, ``"right"``, ``"neither"`` (which bounds are included).
    ``allow_inf``: infinite reals are legal (still subject to the range); NaN never is.

    Examples
    --------
    >>> check_scalar_param(0.5, "gamma", low=0.0)
    0.5
    """
    if kind == "int":
        ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        if not ok:
            raise TypeError(f"{name} must be an integer, got {value!r}.")
        value = int(value)
    else:
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not ok:
            raise TypeError(f"{name} must be a real number, got {value!r}.")
        value = float(value)
        if np.isnan(value) or (np.isinf(value) and not allow_inf):
            raise ValueError(f"{name} must be finite, got {value!r}.")
    lo_ok = low is None or (value >= low if closed in ("both", "left") else value > low)
    hi_ok = high is None or (value <= high if closed in ("both", "right") else value < high)
    if not (lo_ok and hi_ok):
        left = "[" if closed in ("both", "left") else "("
        right = "]" if closed in ("both", "right") else ")"
        rng = f"{left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
        raise ValueError(f"{name} must be in {rng}, got {value!r}.")
    return value


def check_sample_weight_vector(sample_weight, n_samples, name="sample_weight"):
    """``None`` -> ones; else a finite, non-negative 1D float array of length ``n_samples`` with a positive sum.

    Examples
    --------
    >>> check_sample_weight_vector(None, 2)
    array([1., 1.])
    """
    n_samples = check_scalar_param(n_samples, "n_samples", kind="int", low=0)
    if sample_weight is None:
        return np.ones(n_samples)
    if isinstance(sample_weight, numbers.Real) and not isinstance(sample_weight, bool):
        sample_weight = np.full(n_samples, float(sample_weight))
    w = check_float_array(sample_weight, name, ndim=1)
    if w.shape[0] != n_samples:
        raise ValueError(f"{name} has {w.shape[0]} entries, but there are {n_samples} samples.")
    if (w < 0).any():
        raise ValueError(f"{name}[{_first_index(w < 0)}] is negative; weights must be >= 0.")
    if n_samples and not w.sum() > 0:
        raise ValueError(f"{name} sums to 0: at least one sample needs a positive weight.")
    return w


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
        label = flat[first]
        label = label.item() if isinstance(label, np.generic) else label  # object arrays hold plain values
        raise ValueError(f"Sequence {seq}: label {label!r} was not seen during fit.")
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
    check_y_length(out, y, "examples")
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


def check_edge_list(edges, n_nodes, name="graph"):
    """Validate an ``(n_edges, 2)`` integer edge list for a graph of ``n_nodes`` nodes."""
    n_nodes = check_scalar_param(n_nodes, "n_nodes", kind="int", low=1)
    if isinstance(edges, (str, bytes)) or sp.issparse(edges):
        raise TypeError(f"{name}: edges must be an (n_edges, 2) array of node indices, got {type(edges).__name__}.")
    try:
        edges = np.asarray(edges)
    except ValueError as exc:  # ragged
        raise ValueError(f"{name}: edges must be an (n_edges, 2) array of node indices ({exc}).") from None
    if edges.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"{name}: edges must have shape (n_edges, 2), got {edges.shape}.")
    if edges.dtype.kind not in "iu" or edges.dtype.kind == "b":
        if edges.dtype.kind == "f" and np.all(np.isfinite(edges)) and np.all(edges == np.round(edges)):
            edges = edges.astype(np.int64)
        else:
            raise ValueError(f"{name}: edges must be integer node indices, got dtype {edges.dtype}.")
    edges = np.ascontiguousarray(edges, dtype=np.int64)
    bad = np.flatnonzero((edges < 0).any(axis=1) | (edges >= n_nodes).any(axis=1))
    if bad.size:
        raise ValueError(
            f"{name}: edge {bad[0]} = {tuple(edges[bad[0]].tolist())} refers to a node outside "
            f"[0, {n_nodes - 1}] ({n_nodes} nodes)."
        )
    loops = np.flatnonzero(edges[:, 0] == edges[:, 1])
    if loops.size:
        raise ValueError(f"{name}: edge {loops[0]} is a self-loop on node {edges[loops[0], 0]}.")
    lo, hi = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    key = lo * n_nodes + hi
    order = np.argsort(key, kind="stable")
    dup = np.flatnonzero(key[order][1:] == key[order][:-1])
    if dup.size:
        first, second = order[dup[0]], order[dup[0] + 1]
        raise ValueError(
            f"{name}: edges {first} and {second} both join nodes {lo[first]} and {hi[first]} "
            "(edges are undirected; merge duplicate factors by adding their potentials)."
        )
    return edges
