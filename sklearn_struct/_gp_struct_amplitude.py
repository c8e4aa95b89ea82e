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

from ._gp_likelihoods import CHAIN
from ._gp_struct_model import SparsePrior, VarParams, map_marginals, sample_marginals
from .utils.packing import subset_sequences

AMPLITUDE_GRID = tuple(4.0**k for k in range(-2, 5))  # 1/16 ... 256


class _Rows:
    """The whitened features of some tokens (``B`` (G, n, M)), for :func:`sparse_map`; with their
    sequences' ``offsets`` and residual variances ``Ktil`` also a prior for :func:`sample_marginals`."""

    unary_mean = SparsePrior.unary_mean

    def __init__(self, B, offsets=None, Ktil=None):
        self.B, self.offsets, self.Ktil = B, offsets, Ktil


def scaled_kernel(kernel, amplitude):
    """``ConstantKernel(amplitude, fixed) * kernel`` (for each kernel of a list)."""
    if isinstance(kernel, list):
        return [scaled_kernel(k, amplitude) for k in kernel]
    return ConstantKernel(amplitude, constant_value_bounds="fixed") * kernel


def cv_amplitude(prior1, y, offsets, Q, rng, grid=AMPLITUDE_GRID, n_folds=3, n_repeats=1, decoder="map",
                 n_samples=100, max_iter=200, likelihood=CHAIN):
    """The amplitude of ``grid`` with the lowest K-fold held-out token error of the sparse MAP.

    The fold's model is the sparse MAP of ``likelihood`` (a
    :class:`~sklearn_struct._gp_likelihoods.Likelihood`: chain or piecewise), decoded by that
    model's decoder (the chain's forward-backward; for the piecewise model token by token, see
    :func:`sample_marginals`).

    ``prior1`` is the :class:`SparsePrior` of the training tokens at amplitude 1. Folds are
    random sets of sequences (``n_folds``, at most the number of sequences; with one sequence
    the amplitude is 1), drawn anew ``n_repeats`` times (the scores average all folds of all
    repeats). ``decoder="map"`` scores the forward-backward marginals of the fold's MAP;
    ``"sampled"`` the decoder of ``predict``: marginals averaged over ``n_samples`` draws of the
    fold's MAP start (diagonal Laplace covariances) with the residual variance ``K~`` of the
    held-out tokens. Returns ``(amplitude, scores)``: ``scores`` (len(grid), 2) holds the mean
    held-out error and log-loss per amplitude.
    """
    from ._gp_struct_optim import sparse_map

    n_seq = offsets.shape[0] - 1
    if n_seq < 2:
        return 1.0, np.zeros((len(grid), 2))
    splits = [np.array_split(rng.permutation(n_seq), min(n_folds, n_seq)) for _ in range(n_repeats)]
    seed = int(rng.randint(np.iinfo(np.int32).max)) if decoder == "sampled" else None
    scores = np.zeros((len(grid), 2))
    n_fits = sum(len(folds) for folds in splits)
    for held in (np.sort(h) for folds in splits for h in folds):
        rows_tr, _, off_tr = subset_sequences(offsets, np.setdiff1d(np.arange(n_seq), held))
        rows_te, _, off_te = subset_sequences(offsets, held)
        B_tr, B_te, yt = prior1.B[:, rows_tr], prior1.B[:, rows_te], y[rows_te]
        for i, a in enumerate(grid):
            fit = sparse_map(_Rows(np.sqrt(a) * B_tr), y[rows_tr], off_tr, Q, max_iter=max_iter, likelihood=likelihood)
            test = _Rows(np.sqrt(a) * B_te, off_te)
            node = _held_out_marginals(fit, test, prior1, held, a, decoder, n_samples, seed, likelihood)
            scores[i, 0] += np.mean(np.argmax(node, axis=1) != yt) / n_fits
            scores[i, 1] += -np.mean(np.log(np.maximum(node[np.arange(yt.size), yt], 1e-300))) / n_fits
    best = min(range(len(grid)), key=lambda i: (round(scores[i, 0], 12), scores[i, 1]))
    return float(grid[best]), scores


def _held_out_marginals(fit, test, prior1, held, a, decoder, n_samples, seed, likelihood):
    """Node marginals (n_held_tokens, Q) of the held-out sequences ``held`` (their rows ``test`` at
    amplitude ``a``) from ``fit``, the outputs of :func:`sparse_map` on the fold's training part, by
    the ``decoder`` of :func:`cv_amplitude` (the residual variances are scaled only to sample)."""
    from ._gp_struct_optim import set_laplace_diagonal

    v, mb, var_v, var_bin, _ = fit
    if decoder == "map":
        return map_marginals(test.unary_mean(v), mb, test.offsets, likelihood)
    test.Ktil = [a * prior1.Ktil[s] for s in held]
    p = VarParams(1, mb.shape[0], v.shape[1], True)
    set_laplace_diagonal(p, v, mb, var_v, var_bin)
    return np.concatenate(sample_marginals(test, p, np.arange(len(held)), n_samples, seed, likelihood=likelihood))
