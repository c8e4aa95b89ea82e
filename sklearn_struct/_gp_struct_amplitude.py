"""GPStructClassifier's kernel amplitude chosen on the training data by cross-validation.

The ELBO of the sparse model picks a small amplitude (the prior variance of the linear
kernel's weights: 0.03-0.2 on the CRF++ tasks, issue #22) while held-out error keeps falling
up to amplitudes near the CRF's cross-validated ``1 / (2 c2)``. ``amplitude="cv"`` chooses it
the way the CRF's ``c2`` is chosen: K-fold over the *training* sequences, each fold's model
the sparse MAP (:func:`sparse_map`, the GP's posterior mode, a CRF on the whitened inducing
features with the ``N(0, I)`` prior as its penalty) at each amplitude of a grid, scored by
held-out token error (ties broken by held-out log-loss of the token marginals).

Scaling the kernel by ``a`` scales the whitened features ``B = K_xz L_zz^{-T}`` by ``sqrt(a)``
exactly (the jitter is relative), so one :class:`SparsePrior` at amplitude 1 serves the grid.
"""

import numpy as np
from sklearn.gaussian_process.kernels import ConstantKernel

from ._gp_struct_model import SparsePrior
from .oracles.chain import forward_backward
from .utils.packing import subset_sequences

AMPLITUDE_GRID = tuple(4.0**k for k in range(-2, 5))  # 1/16 ... 256


class _Rows:
    """The whitened features of some tokens (``B`` (G, n, M)), for :func:`sparse_map`."""

    unary_mean = SparsePrior.unary_mean

    def __init__(self, B):
        self.B = B


def scaled_kernel(kernel, amplitude):
    """``ConstantKernel(amplitude, fixed) * kernel`` (for each kernel of a list)."""
    if isinstance(kernel, list):
        return [scaled_kernel(k, amplitude) for k in kernel]
    return ConstantKernel(amplitude, constant_value_bounds="fixed") * kernel


def cv_amplitude(prior1, y, offsets, Q, rng, grid=AMPLITUDE_GRID, n_folds=3, max_iter=200):
    """The amplitude of ``grid`` with the lowest K-fold held-out token error of the sparse MAP.

    ``prior1`` is the :class:`SparsePrior` of the training tokens at amplitude 1. Folds are
    random sets of sequences (``n_folds``, at most the number of sequences; with one sequence
    the amplitude is 1). Returns ``(amplitude, scores)``: ``scores`` (len(grid), 2) holds the
    mean held-out error and log-loss per amplitude.
    """
    from ._gp_struct_optim import sparse_map

    n_seq = offsets.shape[0] - 1
    if n_seq < 2:
        return 1.0, np.zeros((len(grid), 2))
    folds = np.array_split(rng.permutation(n_seq), min(n_folds, n_seq))
    scores = np.zeros((len(grid), 2))
    for held in folds:
        train = np.setdiff1d(np.arange(n_seq), held)
        rows_tr, _, off_tr = subset_sequences(offsets, train)
        rows_te, _, off_te = subset_sequences(offsets, np.sort(held))
        B_tr, B_te = prior1.B[:, rows_tr], prior1.B[:, rows_te]
        for i, a in enumerate(grid):
            v, mb = sparse_map(_Rows(np.sqrt(a) * B_tr), y[rows_tr], off_tr, Q, max_iter=max_iter)[:2]
            _, node, _ = forward_backward(_Rows(np.sqrt(a) * B_te).unary_mean(v), mb, off_te)
            yt = y[rows_te]
            scores[i, 0] += np.mean(np.argmax(node, axis=1) != yt) / len(folds)
            scores[i, 1] += -np.mean(np.log(np.maximum(node[np.arange(yt.size), yt], 1e-300))) / len(folds)
    best = min(range(len(grid)), key=lambda i: (round(scores[i, 0], 12), scores[i, 1]))
    return float(grid[best]), scores
