"""The chain CRF's online training algorithms: averaged perceptron, passive-aggressive, AROW.

Each epoch is one call of :func:`sklearn_struct.oracles._chain_online.online_epoch` over the
sequences in a fresh random order (CRFsuite shuffles every epoch too); this module sets up
the packed arrays, keeps the averaged weights and applies CRFsuite's stopping rule: stop
when the epoch's summed loss divided by the number of sequences falls below ``epsilon``,
or after ``max_iter`` epochs.

* ``ap``: the averaged perceptron (Collins, "Discriminative training methods for hidden
  Markov models", EMNLP 2002): on a wrong Viterbi path, ``w += phi(gold) - phi(viterbi)``; the
  model is the average of the weights after every sequence. Loss: the fraction of wrong labels.
* ``pa``: passive-aggressive (Crammer et al., "Online passive-aggressive algorithms", JMLR
  2006) with CRFsuite's structured cost ``s(viterbi) - s(gold) + sqrt(#wrong labels)``
  (``+ 1`` when not error-sensitive), types 0 / 1 / 2 (no slack, ``tau <= c``, squared slack);
  averaged weights unless ``averaging=False``.
* ``arow``: adaptive regularisation of weights (Crammer, Kulesza, Dredze, NIPS 2009) with a
  diagonal covariance, updated on the features where the two paths differ; cost
  ``s(viterbi) - s(gold) + #wrong labels``; no averaging (the mean is the model).
"""

import numpy as np
import scipy.sparse as sp

from .oracles._chain_online import ALGORITHMS, online_epoch
from .oracles.linear import state_pairs
from .utils.packing import pack_sequences, transition_pairs

__all__ = ["TrainingData", "fit_online", "transition_mask"]


class TrainingData:
    """Packed CSR features, labels and the feature set of a chain CRF fit.

    The parameter vector is laid out as the chain CRF's ``theta = (w, b, A)``: one weight per
    (attribute, label) pair (those seen in training unless ``all_possible_states``; all for
    dense features; with a ``min_freq``, those CRFsuite's ``feature.minfreq`` keeps),
    ``n_labels`` biases, ``n_labels^2`` transitions, of which only ``trans_ok`` are features
    (those seen in training unless ``all_possible_transitions``; with a ``min_freq``, those
    seen at least that often); the biases only if ``fit_intercept``. ``weights`` holds one
    weight per sequence (``sample_weight``, ones by default) for the kernels.
    """

    def __init__(self, X, y_enc, n_labels, all_possible_states, all_possible_transitions, fit_intercept=True,
                 min_freq=None, sample_weight=None):
        packed, offsets = pack_sequences(X)
        self.y = np.concatenate(y_enc).astype(np.int64)
        self.pairs = state_pairs(packed, self.y, n_labels, all_possible_states, min_freq)
        packed = sp.csr_matrix(packed, dtype=np.float64)
        packed.sort_indices()
        self.indptr, self.indices = packed.indptr.astype(np.int64), packed.indices.astype(np.int64)
        self.data = packed.data
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.n_labels, self.n_features = n_labels, packed.shape[1]
        self.trans_ok = transition_mask(self.y, self.offsets, n_labels, all_possible_transitions, min_freq)
        self.use_bias = bool(fit_intercept)
        self.n_weights = int(self.pairs[0][-1])
        self.n_params = self.n_weights + n_labels + n_labels * n_labels
        n_seq = self.offsets.shape[0] - 1
        self.weights = np.ones(n_seq) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)

    @property
    def n_sequences(self):
        return self.offsets.shape[0] - 1

    def kernel_args(self):
        """The arrays every per-sequence kernel takes, in its order."""
        return (self.indptr, self.indices, self.data, *self.pairs, self.n_weights, self.trans_ok, self.use_bias,
                self.offsets, self.y, self.weights)

    def params_from(self, coef, intercept, transition):
        """Flat theta from dense (coef, intercept, transition); transitions that are no feature set to 0."""
        rows = np.repeat(np.arange(self.n_features), np.diff(self.pairs[0]))
        A = np.where(self.trans_ok, np.ravel(transition), 0.0)
        b = np.asarray(intercept) if self.use_bias else np.zeros(self.n_labels)
        return np.concatenate([np.asarray(coef)[rows, self.pairs[1]], b, A])

    def split_params(self, theta):
        """(coef (n_features, L) dense, intercept, transition) from the flat theta."""
        L, n_w = self.n_labels, self.n_weights
        coef = np.zeros((self.n_features, L))
        coef[np.repeat(np.arange(self.n_features), np.diff(self.pairs[0])), self.pairs[1]] = theta[:n_w]
        return coef, theta[n_w : n_w + L].copy(), theta[n_w + L :].reshape(L, L).copy()


def transition_mask(y, offsets, n_labels, all_possible_transitions, min_freq=None):
    """Flat (L * L,) mask of the transitions that are features: all, or those seen in y.

    With a ``min_freq``, CRFsuite's ``feature.minfreq`` rule: of those, the ones seen at least
    ``min_freq`` times in y (the unseen ones that ``all_possible_transitions`` adds have frequency 0).
    """
    L = n_labels
    src, dst = transition_pairs(y, offsets)
    known = (src >= 0) & (dst >= 0)  # -1: a token of a partial label sequence
    counts = np.bincount(src[known] * L + dst[known], minlength=L * L)
    mask = np.full(L * L, True) if all_possible_transitions else counts > 0
    return mask if min_freq is None else mask & (counts >= min_freq)



def fit_online(data, algorithm, theta0, *, max_iter, epsilon, options, rng, report):
    """Train by ``algorithm`` in {"ap", "pa", "arow"} from ``theta0``; returns (theta, n_iter, last loss).

    ``options`` are the algorithm's (validated) CRFsuite options; ``rng`` a RandomState for the
    epoch orders; ``report(epoch, loss, theta)`` is called after every epoch with the model's
    weights (averaged where the algorithm averages) and returns True to stop.
    """
    algo = ALGORITHMS[algorithm]
    _check_step_range(data, algorithm)
    w = np.array(theta0, dtype=np.float64)
    ws = np.zeros_like(w)
    cov = np.full(w.shape[0], float(options.get("variance", 1.0)))
    averaging = algorithm == "ap" or (algorithm == "pa" and options["averaging"])
    u = 1
    loss, epoch, theta = np.nan, 0, w
    for epoch in range(1, max_iter + 1):
        order = rng.permutation(data.n_sequences).astype(np.int64)
        loss, u = online_epoch(algo, *data.kernel_args(), order, w, ws, cov, u, int(options.get("pa_type", 0)),
                               float(options.get("c", 1.0)), bool(options.get("error_sensitive", True)),
                               float(options.get("gamma", 1.0)))
        theta = w - ws / u if averaging else w.copy()
        if not (np.isfinite(loss) and np.all(np.isfinite(theta))):
            raise ValueError(f"algorithm={algorithm!r}: the weights overflowed at epoch {epoch}; rescale the "
                             "features (X) to smaller magnitudes.")
        if report(epoch, loss, theta) or loss / data.weights.sum() < epsilon:
            break
    return theta, epoch, float(loss)


def _check_step_range(data, algorithm):
    """ValueError if the features are so large that a step's squared norm overflows (PA, AROW divide by it)."""
    values = np.abs(data.data)
    biggest = float(values.max()) if values.size else 0.0
    longest = int(np.max(np.diff(data.offsets))) if data.offsets.size > 1 else 0
    if biggest * max(longest, 1) > 1e150:
        raise ValueError(f"algorithm={algorithm!r}: feature values up to {biggest:.3g} make the squared norm of an "
                         "update overflow float64; rescale the features (X) to smaller magnitudes.")
