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

from ._gp_struct_model import SparsePrior, VarParams, sample_marginals
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


def cv_amplitude(prior1, y, offsets, Q, rng, grid=AMPLITUDE_GRID, n_folds=3, n_repeats=1, decoder="map",
                 n_samples=100, max_iter=200):
    """The amplitude of ``grid`` with the lowest K-fold held-out token error of the sparse MAP.

    ``prior1`` is the :class:`SparsePrior` of the training tokens at amplitude 1. Folds are
    random sets of sequences (``n_folds``, at most the number of sequences; with one sequence
    the amplitude is 1), drawn anew ``n_repeats`` times (the scores average all folds of all
    repeats). ``decoder="map"`` scores the forward-backward marginals of the fold's MAP;
    ``"sampled"`` the decoder of ``predict``: marginals averaged over ``n_samples`` draws of the
    fold's MAP start (diagonal Laplace covariances) with the residual variance ``K~`` of the
    held-out tokens. Returns ``(amplitude, scores)``: ``scores`` (len(grid), 2) holds the mean
    held-out error and log-loss per amplitude.
    """
    n_seq = offsets.shape[0] - 1
    if n_seq < 2:
        return 1.0, np.zeros((len(grid), 2))
    splits = [np.array_split(rng.permutation(n_seq), min(n_folds, n_seq)) for _ in range(n_repeats)]
    seed = int(rng.randint(np.iinfo(np.int32).max)) if decoder == "sampled" else None
    scores = np.zeros((len(grid), 2))
    n_fits = sum(len(folds) for folds in splits)
    for held in (h for folds in splits for h in folds):
        train = np.setdiff1d(np.arange(n_seq), held)
        fold = (_FoldPrior(prior1, offsets, train), _FoldPrior(prior1, offsets, np.sort(held)))
        for i, a in enumerate(grid):
            node = _held_out_marginals(fold, a, y, Q, decoder, n_samples, seed, max_iter)
            yt = y[fold[1].rows]
            scores[i, 0] += np.mean(np.argmax(node, axis=1) != yt) / n_fits
            scores[i, 1] += -np.mean(np.log(np.maximum(node[np.arange(yt.size), yt], 1e-300))) / n_fits
    best = min(range(len(grid)), key=lambda i: (round(scores[i, 0], 12), scores[i, 1]))
    return float(grid[best]), scores


class _FoldPrior:
    """The :class:`SparsePrior` quantities of the sequences ``seqs`` (``B``, ``Ktil``, packed
    ``offsets``, their token ``rows`` in the full batch), scaled to amplitude ``a`` by :meth:`at`."""

    unary_mean = SparsePrior.unary_mean

    def __init__(self, prior1, offsets, seqs):
        self.rows, _, self.offsets = subset_sequences(offsets, seqs)
        self.B, self.Ktil, self.seqs = prior1.B[:, self.rows], [prior1.Ktil[s] for s in seqs], seqs

    def at(self, a):
        new = _FoldPrior.__new__(_FoldPrior)
        new.rows, new.offsets, new.seqs = self.rows, self.offsets, self.seqs
        new.B, new.Ktil = np.sqrt(a) * self.B, [a * k for k in self.Ktil]
        return new


def _held_out_marginals(fold, a, y, Q, decoder, n_samples, seed, max_iter):
    """Node marginals (n_held_tokens, Q) of the held-out part of ``fold`` from the sparse MAP of its
    training part at amplitude ``a``, by the ``decoder`` of :func:`cv_amplitude`."""
    from ._gp_struct_optim import set_laplace_diagonal, sparse_map

    train, held = fold[0].at(a), fold[1].at(a)
    v, mb, var_v, var_bin, _ = sparse_map(train, y[train.rows], train.offsets, Q, max_iter=max_iter)
    if decoder == "map":
        return forward_backward(held.unary_mean(v), mb, held.offsets)[1]
    p = VarParams(1, Q, v.shape[1], True)
    set_laplace_diagonal(p, v, mb, var_v, var_bin)
    return np.concatenate(sample_marginals(held, p, np.arange(len(held.seqs)), n_samples, seed))
