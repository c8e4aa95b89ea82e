"""ChainCRF's ``partial_fit``: one epoch of an online algorithm per call, its state kept between calls.

The state (:class:`OnlineState`) holds the model's parameters as dense arrays laid out like
``(coef, intercept, transition)`` so that they can grow when a later batch brings new
attributes (more columns): the current weights ``w``, the averaging sums ``ws`` and the
step counter ``u`` (``"ap"``, ``"pa"``), AROW's diagonal covariances, SGD's step count
``t`` and its calibrated ``t0`` and ``lam``, the features' (attribute, label) pairs and
transitions (the union over all calls so far) and the random generator of the epoch orders.

Each call builds the batch's packed :class:`~sklearn_struct._chain_crf_online.TrainingData`
over that union, runs one epoch of the same kernel ``fit`` runs
(:func:`~sklearn_struct.oracles._chain_online.online_epoch` or ``sgd_epoch``) and writes the
state back. One call on all the data is therefore exactly ``fit`` with ``max_iter=1``, and
``k`` calls on the same data exactly ``fit`` with ``max_iter=k`` (the same random orders).
``"l2sgd"`` calibrates ``t0`` on the first call's batch and spreads ``c2`` over its
sequences: ``lam = 2 c2 / n_first`` for all later calls.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import LabelEncoder

from ._chain_crf_online import TrainingData
from ._chain_crf_sgd import calibrate_t0
from ._chain_crf_weights import sequence_weights
from .oracles._chain_online import ALGORITHMS, online_epoch, sgd_epoch
from .utils.validation import check_sequences, encode_sequence_labels

__all__ = ["OnlineState", "partial_fit_epoch", "partial_fit_chain"]


class OnlineState:
    """What ``partial_fit`` keeps between calls (see the module docstring)."""

    def __init__(self, algorithm, options, n_features, n_labels):
        self.algorithm, self.options = algorithm, dict(options)
        self.n_features, self.n_labels = n_features, n_labels
        L = n_labels
        self.w = _zeros(n_features, L)
        self.ws = _zeros(n_features, L)
        variance = float(options.get("variance", 1.0))
        self.cov = tuple(np.full_like(a, variance) for a in _zeros(n_features, L))
        self.u = 1
        self.t, self.t0, self.lam = 0.0, None, None
        self.pairs = sp.csr_matrix((n_features, L), dtype=np.int8)
        self.trans_ok = np.zeros(L * L, dtype=bool)
        self.rng = np.random.RandomState(0)  # the orders ``fit`` uses
        self.epochs = 0

    def copy(self):
        """A deep copy (``partial_fit`` works on a copy, so a failing call changes nothing)."""
        out = object.__new__(OnlineState)
        out.__dict__.update(self.__dict__)
        out.w, out.ws, out.cov = (tuple(a.copy() for a in arrays) for arrays in (self.w, self.ws, self.cov))
        out.pairs, out.trans_ok = self.pairs.copy(), self.trans_ok.copy()
        out.rng = np.random.RandomState()
        out.rng.set_state(self.rng.get_state())
        return out

    def grow(self, n_features):
        """Admit new attributes: the columns beyond the current ``n_features`` (weights 0)."""
        extra = n_features - self.n_features
        if extra <= 0:
            return
        variance = float(self.options.get("variance", 1.0))
        pad = np.zeros((extra, self.n_labels))
        self.w = (np.vstack([self.w[0], pad]), *self.w[1:])
        self.ws = (np.vstack([self.ws[0], pad]), *self.ws[1:])
        self.cov = (np.vstack([self.cov[0], pad + variance]), *self.cov[1:])
        self.pairs = sp.vstack([self.pairs, sp.csr_matrix((extra, self.n_labels), dtype=np.int8)]).tocsr()
        self.n_features = n_features

    def model(self):
        """The model's ``(coef, intercept, transition)``: averaged where the algorithm averages."""
        averaging = self.algorithm == "ap" or (self.algorithm == "pa" and self.options["averaging"])
        if not averaging:
            return tuple(a.copy() for a in self.w)
        return tuple(w - ws / self.u for w, ws in zip(self.w, self.ws))


def _zeros(n_features, L):
    return np.zeros((n_features, L)), np.zeros(L), np.zeros((L, L))


def partial_fit_epoch(state, X, y_enc, params, sample_weight=None):
    """One epoch of ``state.algorithm`` over the batch ``(X, y_enc)``, updating ``state`` in place.

    Returns the epoch's loss (summed over the batch's sequences, weighted).
    """
    data = TrainingData(X, y_enc, state.n_labels, params["all_possible_states"], params["all_possible_transitions"],
                        params["fit_intercept"], None, sample_weight)
    _extend_features(state, data)
    if state.algorithm == "l2sgd":
        return _sgd_epoch(state, data, params)
    options = state.options
    flat = [data.params_from(*arrays) for arrays in (state.w, state.ws, state.cov)]
    w, ws, cov = flat
    order = state.rng.permutation(data.n_sequences).astype(np.int64)
    loss, state.u = online_epoch(ALGORITHMS[state.algorithm], *data.kernel_args(), order, w, ws, cov, state.u,
                                 int(options.get("pa_type", 0)), float(options.get("c", 1.0)),
                                 bool(options.get("error_sensitive", True)), float(options.get("gamma", 1.0)))
    state.w, state.ws = _write_back(state.w, data, w), _write_back(state.ws, data, ws)
    state.cov = _write_back(state.cov, data, cov)
    state.epochs += 1
    return float(loss)


def _sgd_epoch(state, data, params):
    if state.lam is None:
        state.lam = 2.0 * params["c2"] / data.n_sequences
        if state.lam <= 0:
            raise ValueError("algorithm='l2sgd' needs c2 > 0 (its learning rate is 1 / (2 c2 / N (t0 + t))).")
        state.t0 = calibrate_t0(data, state.lam, state.options, state.rng)
    theta = data.params_from(*state.w)
    order = state.rng.permutation(data.n_sequences).astype(np.int64)
    loss, state.t = sgd_epoch(*data.kernel_args(), order, theta, state.lam, state.t0, state.t)
    if not np.isfinite(loss):
        raise ValueError("l2sgd: the loss overflowed; rescale the features or lower "
                         "solver_options['calibration_eta'].")
    state.w = _write_back(state.w, data, theta)
    state.epochs += 1
    return float(loss)


def _extend_features(state, data):
    """Make the batch's feature set the union of the state's and the batch's (pairs and transitions)."""
    pair_ptr, pair_label = data.pairs
    batch = sp.csr_matrix((np.ones(pair_label.shape[0], dtype=np.int8), pair_label, pair_ptr),
                          shape=(data.n_features, state.n_labels))
    union = ((state.pairs + batch) > 0).astype(np.int8).tocsr()
    union.sort_indices()
    state.pairs = union
    state.trans_ok = state.trans_ok | data.trans_ok
    data.pairs = (union.indptr.astype(np.int64), union.indices.astype(np.int64))
    data.n_weights = int(union.indptr[-1])
    data.n_params = data.n_weights + state.n_labels + state.n_labels ** 2
    data.trans_ok = state.trans_ok.copy()


def _write_back(dense, data, theta):
    """The dense (coef, intercept, transition) with the batch's flat theta written over its features."""
    coef, intercept, transition = data.split_params(theta)
    rows = np.repeat(np.arange(data.n_features), np.diff(data.pairs[0]))
    out = dense[0].copy()
    out[rows, data.pairs[1]] = coef[rows, data.pairs[1]]
    trans = np.where(data.trans_ok.reshape(transition.shape), transition, dense[2])
    bias = intercept if data.use_bias else dense[1]
    return out, bias.copy(), trans


def partial_fit_chain(estimator, X, y, classes, sample_weight, options):
    """``ChainCRF.partial_fit``'s work on a validated estimator (see :meth:`ChainCRF.partial_fit`)."""
    algorithm = estimator.algorithm
    if algorithm == "lbfgs":
        raise ValueError("partial_fit needs an online algorithm ('l2sgd', 'ap', 'pa' or 'arow'); for "
                         "algorithm='lbfgs' continue training with warm_start=True and fit.")
    if estimator.min_freq is not None:
        raise ValueError("partial_fit does not take min_freq (a frequency over the whole training set); "
                         "set min_freq=None.")
    state = getattr(estimator, "_online_state", None)
    fitted = hasattr(estimator, "classes_")
    classes_now = _first_classes(classes) if not fitted else estimator.classes_
    if fitted and classes is not None and not np.array_equal(_first_classes(classes), estimator.classes_):
        raise ValueError(f"classes={list(np.unique(classes))} differs from the classes of the previous calls "
                         f"{list(estimator.classes_)}.")
    if not fitted and classes is None:
        raise ValueError("classes must be given on the first call to partial_fit (all the labels any batch "
                         "may hold), as for SGDClassifier.")
    X, y = check_sequences(X, y)
    n_features = X[0].shape[1]
    encoder = LabelEncoder()
    encoder.classes_ = classes_now
    y_enc = encode_sequence_labels(encoder, y)
    if state is not None and state.algorithm != algorithm:
        raise ValueError(f"algorithm={algorithm!r} differs from the previous partial_fit calls "
                         f"({state.algorithm!r}); refit from scratch.")
    if state is None:
        state = OnlineState(algorithm, options, n_features if not fitted else estimator.n_features_in_,
                            len(classes_now))
        if fitted:  # continue from a model trained by fit
            state.w = tuple(np.array(a, dtype=np.float64) for a in
                            (estimator.coef_, estimator.intercept_, estimator.transition_))
            state.pairs = sp.csr_matrix(state.w[0] != 0, dtype=np.int8)
    else:
        state = state.copy()
    if n_features < state.n_features:
        raise ValueError(f"X has {n_features} features, but the previous calls had {state.n_features}: a later "
                         "batch may add attributes (columns at the end), never drop them.")
    state.grow(n_features)
    weights = sequence_weights(sample_weight, estimator.class_weight, y_enc, classes_now)
    loss = partial_fit_epoch(state, X, y_enc, estimator.get_params(), weights)
    estimator.classes_, estimator.n_features_in_ = classes_now, n_features
    estimator.coef_, estimator.intercept_, estimator.transition_ = state.model()
    estimator.n_iter_ = getattr(estimator, "n_iter_", 0) + 1 if fitted else 1
    estimator.objective_ = loss
    estimator._online_state = state
    return estimator


def _first_classes(classes):
    classes = np.unique(np.asarray(classes))
    if classes.size == 0:
        raise ValueError("classes must hold at least one label.")
    return classes
