"""CRFsuite's ``l2sgd``: stochastic gradient descent on the L2-regularised CRF likelihood.

The objective ``sum_i -log P(y_i | x_i) + c2 |theta|^2`` is split into per-sequence terms
``-log P(y_i | x_i) + (lam / 2) |theta|^2`` with ``lam = 2 c2 / N``, and minimised with the
Pegasos learning rate ``eta_t = 1 / (lam (t0 + t))`` (Shalev-Shwartz, Singer, Srebro, ICML
2007; without the projection step, as in CRFsuite), ``t`` counting sequences over all epochs.
The epochs run in :func:`sklearn_struct.oracles._chain_online.sgd_epoch`.

``t0 = 1 / (lam eta0)`` comes from CRFsuite's calibration: on ``calibration_samples``
sequences, one epoch from zero weights is run for each candidate ``eta0``, starting at
``calibration_eta`` and multiplied by ``calibration_rate`` while the sample's loss
(log-loss plus ``lam / 2 |theta|^2 N``) falls below its value at zero, then divided by it
from ``calibration_eta / calibration_rate`` down, until ``calibration_candidates`` rates
decreased the loss each way or ``calibration_max_trials`` were tried; the rate with the
lowest loss wins.

Training stops when the epoch's loss (the sum of the per-sequence losses, each taken just
before its update, plus the penalty) improved by less than ``delta`` relative to ``period``
epochs before, or after ``max_iter`` epochs; the weights of the epoch with the lowest loss
are returned, as in CRFsuite.
"""

import numpy as np

from .oracles._chain_online import sgd_epoch

__all__ = ["fit_l2sgd"]


def _epoch(data, theta, order, lam, t0, t, n_total):
    """One SGD epoch in place; returns (loss including the penalty, t)."""
    loss, t = sgd_epoch(*data.kernel_args(), order, theta, lam, t0, t)
    L, n_w = data.n_labels, data.n_weights
    penalised = np.concatenate([theta[:n_w], theta[n_w + L :]])
    return loss + 0.5 * lam * float(penalised @ penalised) * n_total, t


def calibrate_t0(data, lam, options, rng):
    """CRFsuite's calibration of the initial learning rate; returns ``t0 = 1 / (lam * eta0)``."""
    N = data.n_sequences
    sample = rng.permutation(N)[: min(N, options["calibration_samples"])].astype(np.int64)
    init = _sample_loss_at_zero(data, sample)
    eta = best_eta = init_eta = options["calibration_eta"]
    rate, candidates = options["calibration_rate"], options["calibration_candidates"]
    best_loss, decreasing, left, trials = np.inf, False, candidates, 1
    while left > 0 or not decreasing:
        theta = np.zeros(data.n_params)
        loss, _ = _epoch(data, theta, sample, lam, _t0(lam, eta), 0.0, N)
        ok = np.isfinite(loss) and loss < init
        left -= ok
        if np.isfinite(loss) and loss < best_loss:
            best_loss, best_eta = loss, eta
        if decreasing:
            eta /= rate
        elif ok and left > 0:
            eta *= rate
        else:
            decreasing, left, eta = True, candidates, init_eta / rate
        trials += 1
        if trials >= options["calibration_max_trials"]:
            break
    return _t0(lam, best_eta)


def _improvement(history, loss, period):
    """Relative improvement over ``period`` epochs; NaN before, 0 at a zero loss (one class: nothing to learn)."""
    if len(history) < period:
        return np.nan
    return (history[0] - loss) / loss if loss > 0 else 0.0


def _t0(lam, eta):
    """``t0 = 1 / (lam eta)``, kept in [1, 1e300]: Pegasos's first step at most zeroes the weights.

    ``t0 < 1`` (``lam eta > 1``, e.g. a huge ``c2`` or ``calibration_eta``) would make the first
    steps' shrink factor ``1 - eta_t lam`` negative and zero; ``lam eta`` under- or overflowing
    (``calibration_rate`` of 1e300) would divide by zero.
    """
    prod = lam * eta
    if not prod < 1.0:
        return 1.0
    return 1e300 if prod < 1e-300 else 1.0 / prod


def _sample_loss_at_zero(data, sample):
    """Summed (weighted) log-loss of the sample's sequences at theta = 0: ``sum_i s_i n_i log L``."""
    lengths = data.offsets[sample + 1] - data.offsets[sample]
    return float(np.sum(lengths * data.weights[sample])) * np.log(data.n_labels)


def fit_l2sgd(data, theta0, *, c2, max_iter, delta, period, options, rng, report):
    """Train by SGD from ``theta0``; returns (theta of the best epoch, n_iter, reached max_iter).

    ``report(epoch, loss, theta, improvement=...)`` after every epoch; True stops the fit.
    """
    N = data.n_sequences
    lam = 2.0 * c2 / N
    if lam <= 0:
        raise ValueError("algorithm='l2sgd' needs c2 > 0 (its learning rate is 1 / (2 c2 / N (t0 + t))).")
    t0 = calibrate_t0(data, lam, options, rng)
    theta = np.array(theta0, dtype=np.float64)
    best, best_loss, history, t = theta.copy(), np.inf, [], 0.0
    for epoch in range(1, max_iter + 1):
        loss, t = _epoch(data, theta, rng.permutation(N).astype(np.int64), lam, t0, t, N)
        if not np.isfinite(loss):
            raise ValueError(f"l2sgd: the loss overflowed at epoch {epoch}; rescale the features or lower "
                             "solver_options['calibration_eta'].")
        if loss < best_loss:
            best, best_loss = theta.copy(), loss
        improvement = _improvement(history, loss, period)
        history = (history + [loss])[-period:]
        if report(epoch, loss, theta, improvement=improvement) or improvement < delta:
            return best, epoch, False
    return best, max_iter, True
