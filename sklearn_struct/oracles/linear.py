"""Feature-weight products for packed token features, parallel over rows.

Training a CRF needs two products per objective evaluation: scores ``X @ W`` (tokens x
labels) and the gradient ``X.T @ G``. With sparse binary features both are gathers of
``L``-wide rows of a dense matrix; scipy runs them on one thread, these kernels on all of
numba's. The transposed product runs over a precomputed ``X.T`` in CSR, so it is a
row-parallel gather too and needs no atomic scatter.
"""

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

__all__ = ["LinearFeatures"]


@njit(cache=True, parallel=True, nogil=True)
def _csr_dense_dot(indptr, indices, data, W):
    n_rows = indptr.shape[0] - 1
    L = W.shape[1]
    out = np.zeros((n_rows, L))
    for r in prange(n_rows):
        for k in range(indptr[r], indptr[r + 1]):
            c = indices[k]
            v = data[k]
            for j in range(L):
                out[r, j] += v * W[c, j]
    return out


class LinearFeatures:
    """Packed token features with fast ``X @ W`` and ``X.T @ G`` (dense or CSR).

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_tokens, n_features)
    transpose : bool, default=True
        Precompute ``X.T`` in CSR for :meth:`rmatmul` (training needs it, prediction not).
    """

    def __init__(self, X, transpose=True):
        self.sparse = sp.issparse(X)
        self.shape = X.shape
        if self.sparse:
            X = sp.csr_matrix(X, dtype=np.float64)
            X.sort_indices()
            self._X = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data)
            self._Xt = None
            if transpose:
                Xt = X.T.tocsr()
                self._Xt = (Xt.indptr.astype(np.int64), Xt.indices.astype(np.int64), Xt.data)
        else:
            self._X = np.ascontiguousarray(X, dtype=np.float64)

    def matmul(self, W):
        """``X @ W`` for W of shape (n_features, L)."""
        W = np.ascontiguousarray(W, dtype=np.float64)
        if self.sparse:
            return _csr_dense_dot(*self._X, W)
        return self._X @ W

    def rmatmul(self, G):
        """``X.T @ G`` for G of shape (n_tokens, L)."""
        G = np.ascontiguousarray(G, dtype=np.float64)
        if self.sparse:
            if self._Xt is None:
                raise RuntimeError("LinearFeatures was built with transpose=False.")
            return _csr_dense_dot(*self._Xt, G)
        return self._X.T @ G
