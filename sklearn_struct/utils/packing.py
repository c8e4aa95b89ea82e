"""Packing ragged sequence data into one matrix plus offsets, and back.

Kernels in :mod:`sklearn_struct.oracles` work on one packed array of all tokens,
``offsets`` of length ``n_sequences + 1`` marking where each sequence starts, so that a
single call covers a whole data set (parallel over chunks of sequences).

Per-position edge arrays (one ``(L, L)`` table per transition) are packed the same way
with ``edge_offsets = offsets - arange(n_sequences + 1)``: sequence ``i`` owns rows
``edge_offsets[i]:edge_offsets[i + 1]``, i.e. ``n_tokens_i - 1`` transitions.
"""

import numpy as np
import scipy.sparse as sp

from .validation import as_nonempty_list, check_float_array, check_int_array, check_offsets

__all__ = [
    "pack_sequences",
    "unpack_sequences",
    "lengths_to_offsets",
    "edge_offsets",
    "segment_sum",
    "segment_repeat",
    "subset_sequences",
    "transition_pairs",
]


def lengths_to_offsets(lengths):
    """Offsets (n + 1,) of int64 from sequence lengths.

    >>> lengths_to_offsets([3, 1, 2])
    array([0, 3, 4, 6])
    """
    lengths = check_int_array(lengths, "lengths", ndim=1, low=0)
    offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def edge_offsets(offsets):
    """Offsets of per-position edge rows: sequence i owns ``n_tokens_i - 1`` of them."""
    offsets = check_offsets(offsets, allow_empty_segments=False)
    return offsets - np.arange(offsets.shape[0], dtype=np.int64)


def pack_sequences(X):
    """Stack a list of 2D arrays (or CSR matrices) into one matrix and offsets.

    Returns a dense ndarray when every sequence is dense, else a CSR matrix.

    >>> import numpy as np
    >>> packed, offsets = pack_sequences([np.ones((2, 3)), np.zeros((1, 3))])
    >>> packed.shape, offsets
    ((3, 3), array([0, 2, 3]))
    """
    X = _check_matrix_list(X)
    offsets = lengths_to_offsets([x.shape[0] for x in X])
    if any(sp.issparse(x) for x in X):
        # a CSR matrix is taken as it is: wrapping a view in a new one makes scipy copy it
        X = [x if isinstance(x, sp.csr_matrix) else sp.csr_matrix(x) for x in X]
        packed = _adjacent_views(X, offsets)
        if packed is None:
            packed = sp.vstack(X, format="csr")
    else:
        packed = np.ascontiguousarray(np.concatenate([np.asarray(x) for x in X], axis=0))
    return packed, offsets


def csr_rows(packed, offsets):
    """The sequences of a packed CSR matrix as CSR matrices on views of its arrays, not copies.

    :func:`pack_sequences` packs them back without a copy either. (A row slice of a CSR
    matrix copies its values, and so does scipy's constructor for a view under half of its
    array, so the views are assigned to the matrices, not passed to the constructor.)

    >>> import scipy.sparse as sp
    >>> packed = sp.csr_matrix(np.eye(4))
    >>> parts = csr_rows(packed, [0, 1, 4])
    >>> [p.shape for p in parts], np.shares_memory(parts[1].data, packed.data)
    ([(1, 4), (3, 4)], True)
    >>> np.shares_memory(pack_sequences(parts)[0].data, packed.data)
    True
    """
    data, indices, indptr = packed.data, packed.indices, packed.indptr
    offsets = check_offsets(offsets, n_rows=packed.shape[0])
    out = []
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        start, stop = indptr[lo], indptr[hi]
        part = sp.csr_matrix((hi - lo, packed.shape[1]), dtype=data.dtype)
        part.data, part.indices, part.indptr = data[start:stop], indices[start:stop], indptr[lo : hi + 1] - start
        out.append(part)
    return out


def _adjacent_views(X, offsets):
    """The CSR matrix of the rows of ``X`` without a copy, when the sequences are consecutive row
    views of one matrix's arrays (as :func:`csr_rows` makes them) with sorted indices (so that
    sorting them later writes nothing); else None."""
    data, indices = _span([x.data for x in X]), _span([x.indices for x in X])
    if data is None or indices is None:
        return None
    indptr = np.empty(offsets[-1] + 1, dtype=np.int64)
    indptr[0] = 0
    for x, lo, hi in zip(X, offsets[:-1], offsets[1:]):
        indptr[lo + 1 : hi + 1] = x.indptr[1:] - x.indptr[0] + indptr[lo]
    packed = sp.csr_matrix((data, indices, indptr), shape=(offsets[-1], X[0].shape[1]))
    return packed if packed.has_sorted_indices else None


def _span(parts):
    """One view of the 1D arrays ``parts`` when they lie one after the other in one array, else None."""
    base = parts[0].base
    if not isinstance(base, np.ndarray) or base.ndim != 1 or not base.flags.c_contiguous:
        return None
    address, size = base.__array_interface__["data"][0], base.itemsize
    start = at = (parts[0].__array_interface__["data"][0] - address) // size
    for part in parts:
        if part.ndim != 1 or part.dtype != base.dtype:
            return None
        if part.shape[0] == 0:  # an empty slice may point anywhere
            continue
        if part.base is not base or part.__array_interface__["data"][0] != address + at * size:
            return None
        at += part.shape[0]
    return base[start:at]


def row_slice(packed, lo, hi):
    """Rows ``lo:hi`` of a packed matrix, copying as little as scipy allows: a view of a dense array;
    all rows of a CSR matrix are the matrix itself; other CSR rows a matrix on views of ``data`` and
    ``indices`` (scipy copies them when they are under half of the matrix).

    >>> import scipy.sparse as sp
    >>> packed = sp.csr_matrix(np.eye(3))
    >>> part = row_slice(packed, 1, 3)
    >>> part.toarray().tolist(), np.shares_memory(part.data, packed.data)
    ([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], True)
    """
    if not sp.issparse(packed):
        return packed[lo:hi]
    if lo == 0 and hi == packed.shape[0]:
        return packed
    start, stop = packed.indptr[lo], packed.indptr[hi]
    return sp.csr_matrix((packed.data[start:stop], packed.indices[start:stop], packed.indptr[lo : hi + 1] - start),
                         shape=(hi - lo, packed.shape[1]))


def _check_matrix_list(X):
    """A non-empty list of 2D arrays or sparse matrices with one number of columns (named by index)."""
    if isinstance(X, (str, bytes)) or sp.issparse(X) or (isinstance(X, np.ndarray) and X.dtype != object):
        raise ValueError("X must be a list of 2D arrays (one per sequence), not a single array.")
    X = as_nonempty_list(X, "X", "sequences")
    out = []
    for i, x in enumerate(X):
        if not sp.issparse(x):
            x = check_float_array(x, f"X[{i}]", ndim=2, check_values=False)  # NaN may mean "missing"
        elif x.ndim != 2:
            raise ValueError(f"X[{i}] must be 2D, got shape {x.shape}.")
        if x.shape[1] != (out[0].shape[1] if out else x.shape[1]):
            raise ValueError(f"X[{i}] has {x.shape[1]} columns, but X[0] has {out[0].shape[1]}.")
        out.append(x)
    return out


def _check_packed(arr, offsets, name="arr"):
    """Validated packed array (any ndim >= 1, numeric) and offsets ending at its number of rows."""
    arr = np.asarray(arr)
    if arr.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension (one row per token or edge).")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}.")
    return arr, check_offsets(offsets, n_rows=arr.shape[0])


def unpack_sequences(packed, offsets):
    """Split a packed array back into a list of per-sequence arrays (views where possible)."""
    if not sp.issparse(packed):
        packed = np.asarray(packed)
        if packed.ndim == 0:
            raise ValueError("packed must have at least one dimension (one row per token).")
    offsets = check_offsets(offsets, n_rows=packed.shape[0])
    return [packed[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]


def segment_sum(arr, offsets):
    """Sum the rows of a packed array within each sequence: ``(n_seq,) + arr.shape[1:]``.

    Empty segments (the edges of length-1 sequences) give zeros.

    >>> import numpy as np
    >>> segment_sum(np.arange(6.0).reshape(3, 2), np.array([0, 2, 2, 3]))
    array([[2., 4.],
           [0., 0.],
           [4., 5.]])
    """
    arr, offsets = _check_packed(arr, offsets)
    nonempty = offsets[1:] > offsets[:-1]
    out = np.zeros((offsets.shape[0] - 1,) + arr.shape[1:], dtype=np.result_type(arr.dtype, np.float64))
    if nonempty.any():
        out[nonempty] = np.add.reduceat(arr, offsets[:-1][nonempty], axis=0)
    return out


def segment_repeat(per_seq, offsets):
    """Broadcast one row per sequence to every row (token or edge) of that sequence."""
    per_seq = np.asarray(per_seq)
    offsets = check_offsets(offsets)
    if per_seq.ndim == 0 or per_seq.shape[0] != offsets.shape[0] - 1:
        raise ValueError(
            f"per_seq must have one row per sequence ({offsets.shape[0] - 1}), got shape {per_seq.shape}."
        )
    return np.repeat(per_seq, np.diff(offsets), axis=0)


def subset_sequences(offsets, idx):
    """Token rows, edge rows and offsets of the sequences ``idx`` of a packed batch.

    >>> tok, etok, sub = subset_sequences(np.array([0, 2, 3, 6]), np.array([0, 2]))
    >>> tok, etok, sub
    (array([0, 1, 3, 4, 5]), array([0, 1, 2]), array([0, 2, 5]))
    """
    offsets = check_offsets(offsets, allow_empty_segments=False)
    idx = check_int_array(idx, "idx", ndim=1, low=0, high=offsets.shape[0] - 1)
    if idx.shape[0] == 0:
        raise ValueError("idx is empty: select at least one sequence.")
    starts = offsets[idx]
    lengths = offsets[idx + 1] - starts
    sub = lengths_to_offsets(lengths)
    tok = np.repeat(starts - sub[:-1], lengths) + np.arange(sub[-1])
    eoff = edge_offsets(offsets)
    esub = edge_offsets(sub)
    etok = np.repeat(eoff[idx] - esub[:-1], lengths - 1) + np.arange(esub[-1])
    return tok, etok, sub


def transition_pairs(y, offsets):
    """Labels ``(from, to)`` of every transition of packed label sequences, in edge-row order.

    >>> transition_pairs(np.array([0, 1, 2, 3, 4]), np.array([0, 2, 5]))
    (array([0, 2, 3]), array([1, 3, 4]))
    """
    offsets = check_offsets(offsets, allow_empty_segments=False)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != offsets[-1]:
        raise ValueError(f"y must be 1D with one label per token ({offsets[-1]}), got shape {y.shape}.")
    has_predecessor = np.ones(offsets[-1], dtype=bool)
    has_predecessor[offsets[:-1]] = False  # a token has one iff it starts no sequence
    idx = np.flatnonzero(has_predecessor)
    return y[idx - 1], y[idx]
