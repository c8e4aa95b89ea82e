"""Linear-chain CRF core: parameter packing, the L2-regularised likelihood and its gradient.

Shared by :class:`~sklearn_struct.NonLocalCRF` (its base model theta) and any estimator that
needs a plain chain CRF. Everything heavy runs in :mod:`sklearn_struct.oracles`: scores by
:class:`~sklearn_struct.oracles.linear.LinearFeatures`, expectations by
:func:`~sklearn_struct.oracles.chain.forward_backward`.

Parameterisation: ``theta = (W, b, A)`` with unary scores ``X @ W + b`` per token and a
shared transition table ``A[from, to]``. The objective is CRFsuite's::

    f(theta) = sum_i [log Z_i - score_i(y_i)] + c2 * ||theta||^2

so that ``c2`` means the same as in sklearn-crfsuite (the bias ``b`` is not penalised).
"""

import numpy as np

from .oracles.chain import forward_backward
from .oracles.linear import LinearFeatures
from .utils.packing import pack_sequences
from .utils.parallel import even_chunks, run_chunks


class ChainData:
    """Packed training data for one chunk of sequences: features, offsets, label indices."""

    def __init__(self, X_list, y_list=None, transpose=True):
        packed, self.offsets = pack_sequences(X_list)
        self.features = LinearFeatures(packed, transpose=transpose)
        self.n_tokens, self.n_features = packed.shape
        self.n_sequences = len(X_list)
        self.y = None if y_list is None else np.concatenate(y_list).astype(np.int64)

    def empirical_counts(self, n_labels):
        """Observed unary (one-hot, per token), label totals and transition counts."""
        onehot = np.zeros((self.n_tokens, n_labels))
        onehot[np.arange(self.n_tokens), self.y] = 1.0
        starts = self.offsets[:-1]
        inner = np.ones(self.n_tokens, dtype=bool)
        inner[starts] = False  # token k has a predecessor iff it is not a sequence start
        idx = np.flatnonzero(inner)
        trans = np.zeros((n_labels, n_labels))
        np.add.at(trans, (self.y[idx - 1], self.y[idx]), 1.0)
        return onehot, trans


def n_params(n_features, n_labels):
    return n_features * n_labels + n_labels + n_labels * n_labels


def unpack_params(theta, n_features, n_labels):
    """Views (W, b, A) into the flat parameter vector."""
    F, L = n_features, n_labels
    W = theta[: F * L].reshape(F, L)
    b = theta[F * L : F * L + L]
    A = theta[F * L + L :].reshape(L, L)
    return W, b, A


def unary_scores(data, W, b):
    return data.features.matmul(W) + b


def chunk_nll_grad(data, theta, n_labels, onehot, emp_trans):
    """Negative log-likelihood of one chunk and its gradient (no regulariser)."""
    W, b, A = unpack_params(theta, data.n_features, n_labels)
    unary = unary_scores(data, W, b)
    log_z, node, edge = forward_backward(unary, A, data.offsets, edge_marginals="sum")
    gold = np.sum(unary[np.arange(data.n_tokens), data.y]) + np.sum(emp_trans * A)
    diff = node - onehot  # expected minus observed
    grad = np.concatenate([data.features.rmatmul(diff).ravel(), diff.sum(axis=0), (edge - emp_trans).ravel()])
    return float(np.sum(log_z) - gold), grad


class ChainObjective:
    """The regularised CRF objective over data split into chunks, evaluated with joblib.

    One chunk (the default) runs all sequences in a single numba call, parallel over
    sequences on numba's threads. More chunks go through :func:`run_chunks`, so the
    active joblib backend (threads, loky, dask) evaluates them.
    """

    def __init__(self, X_list, y_list, n_labels, c2, n_chunks=1, n_jobs=None):
        self.n_labels = n_labels
        self.c2 = c2
        self.n_jobs = n_jobs
        self.chunks = []
        for sl in even_chunks(len(X_list), n_chunks):
            data = ChainData(X_list[sl], y_list[sl])
            onehot, trans = data.empirical_counts(n_labels)
            self.chunks.append((data, onehot, trans))
        self.n_features = self.chunks[0][0].n_features
        self.n_calls = 0

    def __call__(self, theta):
        self.n_calls += 1
        L = self.n_labels

        def one(chunk):
            return chunk_nll_grad(chunk[0], theta, L, chunk[1], chunk[2])

        results = run_chunks(one, self.chunks, n_jobs=self.n_jobs)
        f = sum(r[0] for r in results)
        g = np.sum([r[1] for r in results], axis=0)
        # CRFsuite's L2: c2 * ||w||^2 on weights and transitions, not on the bias
        W, b, A = unpack_params(theta, self.n_features, L)
        gW, gb, gA = unpack_params(g, self.n_features, L)
        f += self.c2 * (np.dot(W.ravel(), W.ravel()) + np.dot(A.ravel(), A.ravel()))
        gW += 2.0 * self.c2 * W
        gA += 2.0 * self.c2 * A
        return f, g
