"""Feature-weight products for packed token features, parallel over chunks of rows.

A CRF scores token ``r`` for label ``l`` as ``sum_f X[r, f] * W[f, l]``. With sparse
features most ``(f, l)`` weights are never supported by data, so, like CRFsuite, the
weights can be restricted to a list of *pairs* ``(f, l)``: for attribute ``f`` the pairs
``pair_ptr[f]:pair_ptr[f + 1]`` name its labels ``pair_label[p]`` and weights ``w[p]``.
All pairs (``pair_ptr[f] = f * L``) is the ordinary dense weight matrix.

Two products per objective evaluation:

* scores ``S[r, l] = sum_{f in row r} X[r, f] * w[pairs of f with label l]`` -- a gather,
  ``nnz(X) * (pairs per attribute)`` multiply-adds, parallel over chunks of tokens;
* gradient ``g[p] = sum_{r: X[r, f] != 0} X[r, f] * D[r, pair_label[p]]`` -- the same walk
  over the rows of ``X``, parallel over token chunks with one accumulator per chunk (no
  atomics; cost ``n_chunks * n_pairs`` extra for the final reduction).

Chunks hold near-equal numbers of non-zeros and run on threads
(:func:`~sklearn_struct.oracles._threads.run_chunks_in_threads`), one per
``MIN_WORK_PER_THREAD`` multiply-adds.

Dense feature matrices use BLAS instead (every pair is present).
"""

import numpy as np
import scipy.sparse as sp

from ..utils._jit import kernel
from ..utils.validation import check_float_array, check_int_array, check_offsets, check_scalar_param
from ._threads import n_threads_for, run_chunks_in_threads, token_chunks

__all__ = ["LinearFeatures", "observed_pairs", "all_pairs", "frequent_pairs", "state_pairs"]


# The kernels index flat arrays with unsigned offsets: numba must otherwise guard every
# signed index against negative wraparound, which keeps LLVM from vectorising the L-wide
# row updates (measured ~2.5x slower on CoNLL-2000). ``code[k]`` is the dense row of the
# attribute of non-zero ``k``, or ``-1 - attribute`` for an attribute stored as pairs.


@kernel
def _pair_scores(indptr, code, data, pair_ptr, pair_label, w, W_dense, bias, r_lo, r_hi, out, row_max):
    """Scores of rows r_lo:r_hi into the flat ``out``.

    ``data`` None: binary features (all values 1), so the value stream is never read.
    ``row_max`` of length n_rows: each row is shifted by its maximum, which is stored there.
    """
    n_labels = bias.shape[0]
    L = np.uint64(n_labels)
    shift = row_max.shape[0] == indptr.shape[0] - 1
    for r in range(r_lo, r_hi):
        base = np.uint64(r) * L
        for j in range(L):
            out[base + j] = bias[j]
        for k in range(indptr[r], indptr[r + 1]):
            d = code[k]
            v = 1.0 if data is None else data[k]
            if d >= 0:  # many labels: one vectorised L-wide update
                row = np.uint64(d) * L
                for j in range(L):
                    out[base + j] += v * W_dense[row + j]
            else:  # few labels: touch only the supported ones
                f = -1 - d
                for p in range(pair_ptr[f], pair_ptr[f + 1]):
                    out[base + np.uint64(pair_label[p])] += v * w[p]
        if shift:
            m = out[base]
            for j in range(1, n_labels):
                m = max(m, out[base + j])
            if not np.isfinite(m):
                m = 0.0
            for j in range(L):
                out[base + j] -= m
            row_max[r] = m


@kernel
def _pair_gradient(indptr, code, data, pair_ptr, pair_label, D, n_labels, r_lo, r_hi, g, g_dense):
    """Add the gradient terms of rows r_lo:r_hi: pairs into ``g``, dense rows into the flat ``g_dense``.

    The same cache-friendly walk as :func:`_pair_scores`; a caller splitting the rows over
    threads gives each chunk its own accumulators (no atomics), balanced however skewed the
    attribute counts are (a 'bias' attribute fires on every token).
    """
    L = np.uint64(n_labels)
    for r in range(r_lo, r_hi):
        base = np.uint64(r) * L
        for k in range(indptr[r], indptr[r + 1]):
            d = code[k]
            v = 1.0 if data is None else data[k]
            if d >= 0:
                row = np.uint64(d) * L
                for j in range(L):
                    g_dense[row + j] += v * D[base + j]
            else:
                f = -1 - d
                for p in range(pair_ptr[f], pair_ptr[f + 1]):
                    g[p] += v * D[base + np.uint64(pair_label[p])]


@kernel
def _pair_label_counts(indptr, code, data, pair_ptr, pair_label, y, n_labels, g, g_dense):
    """Add ``X[r, f]`` to the weight of the pair (f, y[r]) of every token r: the gradient of a
    one-hot ``D`` (the observed counts of a CRF) without building that (n_tokens, n_labels) matrix."""
    L = np.uint64(n_labels)
    for r in range(indptr.shape[0] - 1):
        label = y[r]
        for k in range(indptr[r], indptr[r + 1]):
            d = code[k]
            v = 1.0 if data is None else data[k]
            if d >= 0:
                g_dense[np.uint64(d) * L + np.uint64(label)] += v
            else:
                f = -1 - d
                for p in range(pair_ptr[f], pair_ptr[f + 1]):
                    if pair_label[p] == label:
                        g[p] += v


@kernel
def _attribute_codes(indices, dense_row, out):
    """``out[k]``: the dense row of the attribute of non-zero k, or ``-1 - attribute`` (one pass, no temporaries)."""
    for k in range(indices.shape[0]):
        f = indices[k]
        d = dense_row[f]
        out[k] = d if d >= 0 else -1 - f


@kernel
def _mark_pairs(indptr, indices, data, y, support):
    """``support[f, y[r]] = True`` for every non-zero ``X[r, f]``."""
    for r in range(indptr.shape[0] - 1):
        label = y[r]
        for k in range(indptr[r], indptr[r + 1]):
            if data[k] != 0.0:
                support[indices[k], label] = True


@kernel
def _attribute_counts(indices, n_attr):
    """How many non-zeros each attribute has (``np.bincount`` without its int64 copy of ``indices``)."""
    counts = np.zeros(n_attr, dtype=np.int64)
    for k in range(indices.shape[0]):
        counts[indices[k]] += 1
    return counts


@kernel
def _all_ones(data):
    for k in range(data.shape[0]):
        if data[k] != 1.0:
            return False
    return True


def _index_dtype(largest):
    """int32 where every index fits (half the memory of int64 per non-zero), else int64."""
    return np.int32 if largest < np.iinfo(np.int32).max else np.int64


def _dense_rows(pair_ptr, indices, n_labels):
    """Row of every attribute in the dense weight block, or -1 for one kept as pairs.

    Attributes paired with at least L/8 labels are computed as dense L-wide rows (zeros
    off the support, so the model is unchanged): a vectorised row update costs less than
    the scattered, cache-missing scalar updates of the pair path (on CoNLL-2000 the
    threshold L/8 beat L/4, L/2 and all-dense for scores plus gradient). Rows are ordered
    by how often the attribute fires, so the hot rows share cache lines.
    """
    n_attr = pair_ptr.shape[0] - 1
    wide = np.diff(pair_ptr) * 8 >= n_labels
    order = np.argsort(-_attribute_counts(indices, n_attr), kind="stable")
    order = order[wide[order]]
    rows = np.full(n_attr, -1, dtype=np.int64)
    rows[order] = np.arange(order.size)
    return rows


def all_pairs(n_features, n_labels):
    """Every (attribute, label) pair: the dense weight matrix in pair form."""
    n_features = check_scalar_param(n_features, "n_features", kind="int", low=0)
    n_labels = check_scalar_param(n_labels, "n_labels", kind="int", low=1)
    pair_ptr = np.arange(n_features + 1, dtype=np.int64) * n_labels
    pair_label = np.tile(np.arange(n_labels, dtype=np.int64), n_features)
    return pair_ptr, pair_label


def observed_pairs(X, y, n_labels):
    """(attribute, label) pairs with a non-zero feature on some token of that label.

    Parameters
    ----------
    X : csr_matrix of shape (n_tokens, n_features)
    y : ndarray of shape (n_tokens,), label indices
    """
    n_labels = check_scalar_param(n_labels, "n_labels", kind="int", low=1)
    X = _check_features(X)
    y = check_int_array(y, "y", ndim=1, low=0, high=n_labels)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y has {y.shape[0]} labels, but X has {X.shape[0]} rows (tokens).")
    # one bool per (attribute, label), 1/8 of the dense coef_ a fit returns: no copy of X, whose
    # |X|.T @ one-hot(y) product (the obvious way) cost two CSR copies at the peak of a fit's set-up
    X = X if sp.issparse(X) else sp.csr_matrix(X)
    support = np.zeros((X.shape[1], n_labels), dtype=np.bool_)
    _mark_pairs(X.indptr, X.indices, X.data, y, support)
    pair_ptr = np.zeros(X.shape[1] + 1, dtype=np.int64)
    np.cumsum(support.sum(axis=1), out=pair_ptr[1:])
    return pair_ptr, np.nonzero(support)[1].astype(np.int64)


def frequent_pairs(X, y, n_labels, min_freq, all_possible=False):
    """(attribute, label) pairs kept by CRFsuite's ``feature.minfreq`` rule.

    A pair's frequency is the attribute's values summed over the tokens of that label. The
    candidates are the pairs seen (non-zero on some token of that label), and with
    ``all_possible`` every other pair too, at frequency 0; those with a frequency of at least
    ``min_freq`` are kept. So ``min_freq = 0`` drops the seen pairs whose values sum below 0,
    and ``min_freq > 0`` drops every unseen pair, whatever ``all_possible``.

    Parameters
    ----------
    X : csr_matrix of shape (n_tokens, n_features)
    y : ndarray of shape (n_tokens,), label indices
    min_freq : float
    all_possible : bool, default=False
    """
    min_freq = check_scalar_param(min_freq, "min_freq")
    seen_ptr, seen_label = observed_pairs(X, y, n_labels)
    X = sp.csr_matrix(_check_features(X))  # as observed_pairs read it (e.g. numeric strings as floats)
    Y = sp.csr_matrix((np.ones(len(y)), (np.arange(len(y)), np.asarray(y))), shape=(len(y), n_labels))
    freq = (X.T @ Y).tocsr()
    rows = np.repeat(np.arange(X.shape[1]), np.diff(seen_ptr))
    keep = np.zeros((X.shape[1], n_labels), dtype=np.bool_)
    if all_possible and min_freq <= 0:
        keep[:] = True  # the unseen pairs' frequency 0 passes
    keep[rows, seen_label] = np.asarray(freq[rows, seen_label]).ravel() >= min_freq
    kept = sp.csr_matrix(keep)
    kept.sort_indices()
    return kept.indptr.astype(np.int64), kept.indices.astype(np.int64)


def state_pairs(X, y, n_labels, all_possible_states, min_freq=None):
    """The (attribute, label) pairs with a weight, as ``(pair_ptr, pair_label)``: all for dense
    features; with sparse ones those seen in y (all with ``all_possible_states``), and with a
    ``min_freq`` those of them that CRFsuite's ``feature.minfreq`` keeps."""
    if not sp.issparse(X):
        return all_pairs(_check_features(X).shape[1], n_labels)
    if min_freq is not None:
        return frequent_pairs(X, y, n_labels, min_freq, all_possible_states)
    if all_possible_states:
        return all_pairs(X.shape[1], n_labels)
    return observed_pairs(X, y, n_labels)


def _check_features(X):
    """A 2D real, finite feature matrix (dense float64 or CSR)."""
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"X must be 2D (n_tokens, n_features), got shape {X.shape}.")
        if X.dtype.kind == "c":
            raise ValueError("X must be real, got complex values.")
        X = sp.csr_matrix(X, dtype=np.float64)
        check_float_array(X.data, "X (non-zero values)")
        return X
    return check_float_array(X, "X", ndim=2)


def _check_pairs(pairs, n_features, n_labels):
    """(pair_ptr, pair_label) with every index in range for these features and labels."""
    try:
        pair_ptr, pair_label = pairs
    except (TypeError, ValueError):
        raise ValueError("pairs must be a tuple (pair_ptr, pair_label).") from None
    arr = np.asarray(pair_ptr)
    if n_features == 0 and arr.shape == (1,) and arr.dtype.kind in "iu" and arr[0] == 0:
        pair_ptr = arr.astype(np.int64)  # no features, no pairs (a model of transitions and intercepts only)
    else:
        pair_ptr = check_offsets(pair_ptr, "pair_ptr")
    if pair_ptr.shape[0] != n_features + 1:
        raise ValueError(f"pair_ptr must have n_features + 1 = {n_features + 1} entries, got {pair_ptr.shape[0]}.")
    pair_label = check_int_array(pair_label, "pair_label", ndim=1, low=0, high=n_labels)
    if pair_label.shape[0] != pair_ptr[-1]:
        raise ValueError(f"pair_label has {pair_label.shape[0]} entries, but pair_ptr ends at {pair_ptr[-1]}.")
    return pair_ptr, pair_label


class LinearFeatures:
    """Packed token features with fast scores and gradients (dense or CSR).

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_tokens, n_features)
    pairs : tuple (pair_ptr, pair_label), default=None
        Weight support for sparse ``X``; None means all pairs. Ignored for dense ``X``.
    n_labels : int
    """

    def __init__(self, X, n_labels, pairs=None):
        X = _check_features(X)
        n_labels = check_scalar_param(n_labels, "n_labels", kind="int", low=1)
        if pairs is not None and sp.issparse(X):
            pairs = _check_pairs(pairs, X.shape[1], n_labels)
        self.sparse = sp.issparse(X)
        self.shape = X.shape
        self.n_labels = n_labels
        if self.sparse:
            X = sp.csr_matrix(X, dtype=np.float64)
            X.sort_indices()
            # Only what a product reads is kept (not X itself), with int32 indices where they fit:
            # row pointers, one code per non-zero and the values unless all are 1.
            self._indptr = X.indptr.astype(_index_dtype(X.nnz), copy=False)
            # binary features (the usual indicator attributes) pass no value array at all
            self._data = None if _all_ones(X.data) else X.data
            self.pairs = pairs if pairs is not None else all_pairs(X.shape[1], n_labels)
            self._dense_row = _dense_rows(self.pairs[0], X.indices, n_labels)
            self._n_dense = int(np.count_nonzero(self._dense_row >= 0))
            self._code = np.empty(X.nnz, dtype=_index_dtype(X.shape[1] + 1))
            _attribute_codes(X.indices, self._dense_row, self._code)
            self._work = X.nnz * n_labels  # an upper bound on the multiply-adds of one product
            # pairs of attributes held as dense rows, and their slots in the flat dense block
            pair_row = self._dense_row[np.repeat(np.arange(X.shape[1]), np.diff(self.pairs[0]))]
            self._dense_pairs = np.flatnonzero(pair_row >= 0)
            self._dense_slots = pair_row[self._dense_pairs] * n_labels + self.pairs[1][self._dense_pairs]
        else:
            self._X = np.ascontiguousarray(X, dtype=np.float64)
            self.pairs = None

    def _row_chunks(self):
        """Row bounds of the chunks (near-equal non-zeros), one per thread the work pays for."""
        return token_chunks(self._indptr, n_threads_for(self._work))

    @property
    def n_weights(self):
        return self.shape[1] * self.n_labels if self.pairs is None else int(self.pairs[0][-1])

    def scores(self, w, bias=None, out=None, row_max=None):
        """Token scores ``X @ W (+ bias)``, shape (n_tokens, n_labels), for the flat weights ``w``.

        ``out`` (C-contiguous float64 of that shape) receives the result when given: a fit
        reuses one buffer, since a fresh array this large costs page faults on every call.
        ``row_max`` (float64 of shape (n_tokens,)), when given, receives each row's maximum,
        which is subtracted from the row (while it is still in cache): the shift a
        forward-backward pass needs before exponentiating.
        """
        w = check_float_array(w, "w", shape=(self.n_weights,))
        n_rows, L = self.shape[0], self.n_labels
        if out is None:
            out = np.empty((n_rows, L))
        elif out.shape != (n_rows, L) or out.dtype != np.float64 or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous float64 array of shape {(n_rows, L)}.")
        bias = np.zeros(L) if bias is None else check_float_array(bias, "bias", shape=(L,))
        if row_max is not None and (row_max.shape != (n_rows,) or row_max.dtype != np.float64
                                    or not row_max.flags.c_contiguous):
            raise ValueError(f"row_max must be a C-contiguous float64 array of shape ({n_rows},).")
        if self.sparse:
            W_flat = self._dense_block(w)
            bounds, flat = self._row_chunks(), out.reshape(-1)
            shifts = np.empty(0) if row_max is None else row_max

            def one(c):
                _pair_scores(self._indptr, self._code, self._data, *self.pairs, w, W_flat, bias, bounds[c],
                             bounds[c + 1], flat, shifts)

            run_chunks_in_threads(one, bounds.shape[0] - 1)
            return out
        np.dot(self._X, w.reshape(self.shape[1], L), out=out)
        out += bias
        if row_max is not None:
            np.max(out, axis=1, out=row_max)
            row_max[~np.isfinite(row_max)] = 0.0
            out -= row_max[:, None]
        return out

    def _dense_block(self, w):
        """The flat block of the weights of the attributes held as dense rows, zeros off the support."""
        W_flat = np.zeros(self._n_dense * self.n_labels)
        W_flat[self._dense_slots] = w[self._dense_pairs]
        return W_flat

    def row_scores(self, w, bias, lo, hi):
        """The rows ``lo:hi`` of :meth:`scores` with ``row_max``: each shifted by its maximum.

        The same arithmetic as the full product, for a caller that kept only a function of the
        scores (their exponentials) and needs a few rows back.
        """
        L = self.n_labels
        if self.sparse:
            out = np.empty((hi - lo, L))
            _pair_scores(self._indptr[lo : hi + 1], self._code, self._data, *self.pairs, w, self._dense_block(w),
                         bias, 0, hi - lo, out.reshape(-1), np.empty(hi - lo))
            return out
        out = self._X[lo:hi] @ w.reshape(self.shape[1], L) + bias
        row_max = out.max(axis=1)
        row_max[~np.isfinite(row_max)] = 0.0
        out -= row_max[:, None]
        return out

    def label_counts(self, y):
        """:meth:`gradient` of the one-hot ``D`` of the labels ``y`` (n_tokens,), without building it.

        A CRF's observed feature counts: per pair (f, l) the values of attribute f summed over the
        tokens labelled l.
        """
        n_rows, L = self.shape[0], self.n_labels
        y = check_int_array(y, "y", ndim=1, low=0, high=L)
        if y.shape[0] != n_rows:
            raise ValueError(f"y has {y.shape[0]} labels, but X has {n_rows} rows (tokens).")
        if self.sparse:
            g, g_dense = np.zeros(self.n_weights), np.zeros(self._n_dense * L)
            _pair_label_counts(self._indptr, self._code, self._data, *self.pairs, y, L, g, g_dense)
            g[self._dense_pairs] += g_dense[self._dense_slots]
            return g
        Y = sp.csr_matrix((np.ones(n_rows), (np.arange(n_rows), y)), shape=(n_rows, L))
        return np.ascontiguousarray((Y.T @ self._X).T).ravel()

    def gradient(self, D):
        """Flat gradient ``d/dw sum_{r,l} D[r, l] * scores[r, l]`` for D of shape (n_tokens, n_labels)."""
        return self._gradient(check_float_array(D, "D", shape=(self.shape[0], self.n_labels)))

    def _gradient(self, D):
        """:meth:`gradient` without input checks, for a caller that built ``D`` itself (a fit's inner loop,
        where checking a (n_tokens, n_labels) array every evaluation costs ~5% of the evaluation)."""
        D = np.ascontiguousarray(D, dtype=np.float64)
        if self.sparse:
            # one chunk per thread: every chunk carries a full gradient accumulator
            bounds, flat, L = self._row_chunks(), D.reshape(-1), self.n_labels
            n_chunks = bounds.shape[0] - 1
            acc = np.zeros((n_chunks, self.n_weights))
            acc_dense = np.zeros((n_chunks, self._n_dense * L))

            def one(c):
                _pair_gradient(self._indptr, self._code, self._data, *self.pairs, flat, L, bounds[c], bounds[c + 1],
                               acc[c], acc_dense[c])

            run_chunks_in_threads(one, n_chunks)
            out, dense = (acc[0], acc_dense[0]) if n_chunks == 1 else (acc.sum(axis=0), acc_dense.sum(axis=0))
            # dense rows: keep only the supported labels
            out[self._dense_pairs] += dense[self._dense_slots]
            return out
        return (self._X.T @ D).ravel()

    def pair_weights(self, W):
        """The flat weight vector of a dense (n_features, n_labels) matrix: its supported entries."""
        W = check_float_array(W, "W", shape=(self.shape[1], self.n_labels))
        if self.pairs is None:
            return W.ravel().copy()
        return W[self._pair_rows(), self.pairs[1]]

    def dense_coef(self, w):
        """The weights as a dense (n_features, n_labels) matrix (zeros off the support)."""
        w = check_float_array(w, "w", shape=(self.n_weights,))
        if self.pairs is None:
            return np.asarray(w).reshape(self.shape[1], self.n_labels).copy()
        W = np.zeros((self.shape[1], self.n_labels))
        W[self._pair_rows(), self.pairs[1]] = w
        return W

    def _pair_rows(self):
        """The attribute (row of W) of every pair."""
        return np.repeat(np.arange(self.shape[1]), np.diff(self.pairs[0]))
