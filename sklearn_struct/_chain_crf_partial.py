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
``"l2sgd"`` calibrates its initial rate ``eta0`` on the first call's batch and spreads ``c2``
over the distinct sequences seen so far, ``lam = 2 c2 / n_seen``: a sequence seen again in a
later call (the same feature and label arrays; found by a 64-bit hash of them) is not counted
again, as ``fit`` counts each training sequence once however many epochs it runs (a sequence
that occurs ``m`` times in one call counts ``m`` times). After one pass over the data ``lam`` is
``fit``'s and stays so over further passes, and the rate ``eta0 / (1 + lam eta0 t)``, ``t``
counting every step of every call as ``SGDClassifier``'s schedule does, is then ``fit``'s too:
``k`` calls on the same data are ``fit`` with ``max_iter=k`` for ``"l2sgd"`` as well. (Counting
every call's sequences instead would spread ``c2`` over ``k`` copies of the data after ``k``
passes, weakening the penalty ``k``-fold.)
"""

import hashlib


import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import LabelEncoder

from ._chain_crf_fit import ONLINE_ALGORITHMS
from ._chain_crf_online import TrainingData
from ._chain_crf_sgd import calibrate_t0
from ._chain_crf_weights import sequence_weights
from .oracles._chain_online import ALGORITHMS, online_epoch, sgd_epoch
from .utils.validation import check_sequences, encode_sequence_labels

__all__ = ["OnlineState", "partial_fit_epoch", "partial_fit_chain"]


class OnlineState:
    """What ``partial_fit`` keeps between calls (see the module docstring).

    The parameters are flat vectors in the layout of the union of the (attribute, label) pairs
    seen so far (``pair_ptr``, ``pair_label``, CSR over the attributes, labels sorted), followed
    by the ``L`` biases and ``L * L`` transitions, as the kernels take them: a batch that
    brings no new pair runs on them directly, one that does remaps them once.
    """

    def __init__(self, algorithm, options, n_features, n_labels):
        self.algorithm, self.options = algorithm, dict(options)
        self.n_features, self.n_labels = n_features, n_labels
        self.pair_ptr = np.zeros(n_features + 1, dtype=np.int64)
        self.pair_label = np.zeros(0, dtype=np.int64)
        self.keys = np.zeros(0, dtype=np.int64)  # attribute * L + label of each pair, sorted
        self.variance = float(options.get("variance", 1.0))
        size = n_labels + n_labels * n_labels
        self.w, self.ws, self.cov = np.zeros(size), np.zeros(size), np.full(size, self.variance)
        self.u = 1
        self.t, self.t0, self.lam = 0.0, None, None
        self.seen_keys, self.seen_counts = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
        self.trans_ok = np.zeros(n_labels * n_labels, dtype=bool)
        self.rng = np.random.RandomState(0)  # the orders ``fit`` uses
        self.epochs = 0

    @property
    def n_weights(self):
        return int(self.pair_ptr[-1])

    def copy(self):
        """A deep copy (``partial_fit`` works on a copy, so a failing call changes nothing)."""
        out = object.__new__(OnlineState)
        out.__dict__.update(self.__dict__)
        for name in ("w", "ws", "cov", "pair_ptr", "pair_label", "trans_ok"):  # keys: replaced, never changed
            setattr(out, name, getattr(self, name).copy())
        out.rng = np.random.RandomState()
        out.rng.set_state(self.rng.get_state())
        return out

    def start_from(self, coef, intercept, transition):
        """Start from a fitted model: its non-zero (attribute, label) weights are the pairs."""
        coef = sp.csr_matrix(np.asarray(coef, dtype=np.float64))
        coef.sort_indices()
        self.pair_ptr, self.pair_label = coef.indptr.astype(np.int64), coef.indices.astype(np.int64)
        self.keys = None
        tail = np.concatenate([np.asarray(intercept, dtype=np.float64), np.ravel(transition)])
        self.w = np.concatenate([coef.data, tail])
        self.ws = np.zeros_like(self.w)
        self.cov = np.full_like(self.w, self.variance)

    def grow(self, n_features):
        """Admit new attributes: the columns beyond the current ``n_features`` (no pairs yet)."""
        if n_features > self.n_features:  # the keys (attribute * L + label) keep their order
            extra = np.full(n_features - self.n_features, self.pair_ptr[-1], dtype=np.int64)
            self.pair_ptr = np.concatenate([self.pair_ptr, extra])
            self.n_features = n_features

    def merge_pairs(self, pair_ptr, pair_label):
        """Make the pairs the union with a batch's; the parameters move to the new layout (new ones 0).

        Costs one pass over the pairs only when the batch brings new ones.
        """
        L = self.n_labels
        old = self.keys if getattr(self, "keys", None) is not None else _pair_keys(self.pair_ptr, self.pair_label, L)
        batch = _pair_keys(pair_ptr, pair_label, L)
        pos = np.searchsorted(old, batch)
        known = pos < old.shape[0]
        known[known] = old[pos[known]] == batch[known]
        self.keys = old
        if known.all():
            return
        missing = batch[~known]  # sorted, distinct
        union = np.insert(old, np.searchsorted(old, missing), missing)
        where = np.arange(old.shape[0]) + np.searchsorted(missing, old)
        n_w, n_old = union.shape[0], self.n_weights
        for name, fill in (("w", 0.0), ("ws", 0.0), ("cov", self.variance)):
            flat = getattr(self, name)
            new = np.full(n_w + L + L * L, fill)
            new[where] = flat[:n_old]
            new[n_w:] = flat[n_old:]
            setattr(self, name, new)
        self.pair_ptr = np.searchsorted(union // L, np.arange(self.n_features + 1)).astype(np.int64)
        self.pair_label = (union % L).astype(np.int64)
        self.keys = union

    def model(self):
        """The model's dense ``(coef, intercept, transition)``: averaged where the algorithm averages."""
        averaging = self.algorithm == "ap" or (self.algorithm == "pa" and self.options["averaging"])
        theta = self.w - self.ws / self.u if averaging else self.w
        L, n_w = self.n_labels, self.n_weights
        coef = np.zeros((self.n_features, L))
        coef[np.repeat(np.arange(self.n_features), np.diff(self.pair_ptr)), self.pair_label] = theta[:n_w]
        return coef, theta[n_w : n_w + L].copy(), theta[n_w + L :].reshape(L, L).copy()


def _pair_keys(pair_ptr, pair_label, L):
    """Sorted keys ``attribute * L + label`` of the pairs."""
    rows = np.repeat(np.arange(pair_ptr.shape[0] - 1, dtype=np.int64), np.diff(pair_ptr))
    return rows * L + pair_label


def partial_fit_epoch(state, X, y_enc, params, sample_weight=None):
    """One epoch of ``state.algorithm`` over the batch ``(X, y_enc)``, updating ``state`` in place.

    Returns the epoch's loss (summed over the batch's sequences, weighted).
    """
    data = TrainingData(X, y_enc, state.n_labels, params["all_possible_states"], params["all_possible_transitions"],
                        params["fit_intercept"], None, sample_weight)
    state.merge_pairs(*data.pairs)
    state.trans_ok |= data.trans_ok
    data.pairs = (state.pair_ptr, state.pair_label)
    data.n_weights = state.n_weights
    data.n_params = state.w.shape[0]
    data.trans_ok = state.trans_ok.copy()
    if state.algorithm == "l2sgd":
        return _sgd_epoch(state, data, params)
    options = state.options
    order = state.rng.permutation(data.n_sequences).astype(np.int64)
    loss, state.u = online_epoch(ALGORITHMS[state.algorithm], *data.kernel_args(), order, state.w, state.ws, state.cov,
                                 state.u, int(options.get("pa_type", 0)), float(options.get("c", 1.0)),
                                 bool(options.get("error_sensitive", True)), float(options.get("gamma", 1.0)))
    state.epochs += 1
    return float(loss)


def _sgd_epoch(state, data, params):
    """One SGD epoch; ``c2`` spread over the distinct sequences seen so far (``lam = 2 c2 / n_seen``), the
    initial rate ``eta0`` calibrated on the first batch, the rate ``eta0 / (1 + lam eta0 t)``."""
    if params["c2"] <= 0:
        raise ValueError("algorithm='l2sgd' needs c2 > 0 (its learning rate is 1 / (2 c2 / N (t0 + t))).")
    lam = 2.0 * params["c2"] / _count_seen(state, data)
    if state.t0 is None:  # CRFsuite's calibration on the first batch: eta0 = 1 / (lam t0)
        state.t0 = calibrate_t0(data, lam, state.options, state.rng)
        state.eta0 = 1.0 / (lam * state.t0)
    elif lam != state.lam:
        state.t0 = 1.0 / (lam * state.eta0)
    state.lam = lam
    order = state.rng.permutation(data.n_sequences).astype(np.int64)
    loss, state.t = sgd_epoch(*data.kernel_args(), order, state.w, state.lam, state.t0, state.t)
    if not np.isfinite(loss):
        raise ValueError("l2sgd: the loss overflowed; rescale the features or lower "
                         "solver_options['calibration_eta'].")
    state.epochs += 1
    return float(loss)


def _sequence_keys(data):
    """A 64-bit hash of each packed sequence's feature columns, values and labels."""
    keys = np.empty(data.n_sequences, dtype=np.uint64)
    indptr, offsets = data.indptr, data.offsets
    for s in range(data.n_sequences):
        lo, hi = offsets[s], offsets[s + 1]
        a, b = indptr[lo], indptr[hi]
        h = hashlib.blake2b(digest_size=8)
        for part in (indptr[lo : hi + 1] - a, data.indices[a:b], data.data[a:b], data.y[lo:hi]):
            h.update(np.ascontiguousarray(part).tobytes())
        keys[s] = int.from_bytes(h.digest(), "little")
    return keys


def _count_seen(state, data):
    """Number of distinct sequences over all calls so far, this batch included (see the module docstring):
    each sequence counted with its largest multiplicity in any one call."""
    keys, counts = np.unique(_sequence_keys(data), return_counts=True)
    all_keys = np.concatenate([state.seen_keys, keys])
    union, where = np.unique(all_keys, return_inverse=True)
    best = np.zeros(union.shape[0], dtype=np.int64)
    np.maximum.at(best, where, np.concatenate([state.seen_counts, counts]))
    state.seen_keys, state.seen_counts = union, best  # new arrays: a state copy keeps its own
    return int(best.sum())


def partial_fit_chain(estimator, X, y, classes, sample_weight, options):
    """``ChainCRF.partial_fit``'s work on a validated estimator (see :meth:`ChainCRF.partial_fit`)."""
    algorithm = estimator.algorithm
    if algorithm not in ONLINE_ALGORITHMS:
        raise ValueError(f"partial_fit needs an online algorithm (one of {list(ONLINE_ALGORITHMS)}); for "
                         f"algorithm={algorithm!r} continue training with warm_start=True and fit.")
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
            state.start_from(estimator.coef_, estimator.intercept_, estimator.transition_)
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
