"""Linear-chain CRF core: parameter packing, the L2-regularised likelihood and its gradient.

Shared by :class:`~sklearn_struct.NonLocalCRF` (its base model theta) and any estimator that
needs a plain chain CRF. Everything heavy runs in :mod:`sklearn_struct.oracles`: scores by
:class:`~sklearn_struct.oracles.linear.LinearFeatures`, expectations by
:func:`~sklearn_struct.oracles.chain.expected_counts` (forward-backward).

Parameterisation: ``theta = (w, b, A)`` with unary scores ``X @ W + b`` per token, where
``W`` holds the weights ``w`` of the supported (attribute, label) pairs (see
:mod:`sklearn_struct.oracles.linear`), and a shared transition table ``A[from, to]``. The objective is CRFsuite's::

    f(theta) = sum_i [log Z_i - score_i(y_i)] + c2 * ||theta||^2

so that ``c2`` means the same as in sklearn-crfsuite (the bias ``b`` is not penalised).
"""

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import LabelEncoder

from .utils._jit import kernel
from .oracles._chain_weighted import weighted_expected_counts
from .oracles.chain import expected_counts_inplace
from .oracles.linear import LinearFeatures, state_pairs
from .utils.packing import pack_sequences, row_slice, transition_pairs
from .utils.optimize import _dot
from .utils.parallel import even_chunks
from .utils.progress import Progress
from .utils.shards import ResidentShards
from .utils.validation import check_sequence_labels, check_sequences, check_y_given, encode_sequence_labels


class ChainData:
    """Packed data for one chunk of sequences: features, offsets, label indices.

    With ``n_labels`` (training) only the :class:`LinearFeatures` built from the packed matrix
    are kept (``packed`` is None): an objective evaluation reads nothing else.
    """

    def __init__(self, X_list, y_list=None, n_labels=None, pairs=None):
        packed, offsets = pack_sequences(X_list)
        y = None if y_list is None else np.concatenate(y_list)
        self._set(packed, offsets, y, n_labels, pairs)

    @classmethod
    def from_packed(cls, packed, offsets, y=None, n_labels=None, pairs=None):
        """Build from already packed features (rows of all sequences) and their offsets."""
        data = cls.__new__(cls)
        data._set(packed, offsets, y, n_labels, pairs)
        return data

    def _set(self, packed, offsets, y, n_labels, pairs):
        self.packed, self.offsets = packed, np.asarray(offsets, dtype=np.int64)
        self.n_tokens, self.n_features = packed.shape
        self.n_sequences = len(self.offsets) - 1
        self.y = None if y is None else np.asarray(y, dtype=np.int64)
        self.weights = None  # one weight per sequence (a weighted objective), or None
        self.features = None
        if n_labels is not None:
            self.features = LinearFeatures(packed, n_labels, pairs=pairs)
            self.packed = None

    def set_weights(self, weights):
        """Weight each sequence's term of the objective by ``weights`` (n_sequences,), or None for 1."""
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        return self

    def token_weights(self):
        """Each token's sequence weight (n_tokens,), or None."""
        return None if self.weights is None else np.repeat(self.weights, np.diff(self.offsets))

    def buffers(self, n_labels):
        """Arrays reused by every evaluation on this chunk: one ``(n_tokens, n_labels)`` buffer (scores,
        then their exp, then the node marginals) and the rows' shifts."""
        if getattr(self, "_buffers", None) is None:
            self._buffers = (np.empty((self.n_tokens, n_labels)), np.empty(self.n_tokens))
        return self._buffers

    def __getstate__(self):  # scratch buffers are not worth pickling to joblib workers
        state = self.__dict__.copy()
        state["_buffers"] = None
        return state

    def empirical_counts(self, n_labels):
        """Observed sufficient statistics of this chunk, laid out like ``theta = (w, b, A)``.

        The likelihood's gold score is linear in theta, ``<counts, theta>``, and its gradient
        is expected minus these counts, so they are computed once per fit, not per evaluation.
        """
        trans = np.zeros((n_labels, n_labels))
        tw = self.token_weights()
        src, dst = transition_pairs(self.y, self.offsets)
        if tw is None:
            np.add.at(trans, (src, dst), 1.0)
            bias = np.bincount(self.y, minlength=n_labels).astype(np.float64)
            return np.concatenate([self.features.label_counts(self.y), bias, trans.ravel()])
        onehot = np.zeros((self.n_tokens, n_labels))  # weighted: each token's row holds its sequence's weight
        onehot[np.arange(self.n_tokens), self.y] = tw
        np.add.at(trans, (src, dst), _edge_token_weights(tw, self.offsets))
        return np.concatenate([self.features.gradient(onehot), onehot.sum(axis=0), trans.ravel()])


def _edge_token_weights(token_weights, offsets):
    """The weights of the transitions ``transition_pairs`` lists: each token's but a sequence's first."""
    keep = np.ones(token_weights.shape[0], dtype=bool)
    keep[offsets[:-1][np.diff(offsets) > 0]] = False
    return token_weights[keep]


def unpack_params(theta, n_weights, n_labels):
    """Views (w, b, A) into the flat parameter vector: unary weights, label bias, transitions."""
    L = n_labels
    return theta[:n_weights], theta[n_weights : n_weights + L], theta[n_weights + L :].reshape(L, L)


def predict_unary(X_list, coef, intercept):
    """Packed data and unary scores ``X @ coef + intercept`` for prediction."""
    data = ChainData(X_list)
    return data, np.asarray(data.packed @ coef) + intercept


def chunk_nll_grad(data, theta, n_labels, counts):
    """Negative log-likelihood of one chunk and its gradient (no regulariser).

    ``counts`` are the chunk's :meth:`ChainData.empirical_counts`.
    """
    n_weights = data.features.n_weights
    w, b, A = unpack_params(theta, n_weights, n_labels)
    node, shift = data.buffers(n_labels)
    data.features.scores(w, bias=b, out=node, row_max=shift)  # rows shifted to maximum 0
    if data.weights is None:
        np.exp(node, out=node)  # in place: a sequence that needs log space gets its scores recomputed

        def rescore(lo, hi):
            return data.features.row_scores(w, b, lo, hi)

        log_z, edge = expected_counts_inplace(node, A, data.offsets, rescore)  # node marginals into node
    else:  # sum_i s_i [log Z_i - score_i(y_i)]: edges weighted in the kernel, rows here
        unary = node.copy()
        log_z, node, edge = weighted_expected_counts(unary, np.exp(unary), A, data.offsets, data.weights, out=node)
        tw = data.token_weights()
        node *= tw[:, None]
        log_z, shift = log_z * data.weights, shift * tw
    grad = np.empty_like(theta)
    gw, gb, gA = unpack_params(grad, n_weights, n_labels)
    gw[:] = data.features._gradient(node)  # node comes from forward-backward: no checks needed
    gb[:] = node.sum(axis=0)
    gA[:] = edge
    grad -= counts  # expected minus observed
    return float(np.sum(log_z) + np.sum(shift) - _dot(counts, theta)), grad


class ChainObjective:
    """The regularised CRF objective over data split into chunks (shards), each kept where it is evaluated.

    One chunk (the default) runs all sequences in a single numba call, parallel over
    sequences on threads. More chunks are :class:`~sklearn_struct.utils.shards.ResidentShards`:
    on threads of this process, or, under joblib's dask backend, each scattered once to a
    worker, every evaluation sending only ``theta`` (use the objective as a context manager to
    release them at the end of a fit).

    With sparse features and ``all_possible_states=False`` the unary weights exist only
    for (attribute, label) pairs seen in the training data, as in CRFsuite; otherwise
    for every pair; a ``min_freq`` keeps of those the pairs CRFsuite's ``feature.minfreq`` keeps.
    ``sample_weight`` (n_sequences,) weights each sequence's negative log-likelihood
    (``sum_i s_i [log Z_i - score_i(y_i)] + c2 ||theta||^2``); None weighs them all 1.
    """

    def __init__(self, X_list, y_list, n_labels, c2, n_chunks=1, n_jobs=None, all_possible_states=False,
                 min_freq=None, sample_weight=None):
        self.n_labels = n_labels
        self.c2 = c2
        self.n_jobs = n_jobs
        self.n_features = X_list[0].shape[1]
        packed, offsets = pack_sequences(X_list)  # once: chunks are row slices of it
        y = np.concatenate(y_list).astype(np.int64)
        pairs = None
        if sp.issparse(packed) and (min_freq is not None or not all_possible_states):
            pairs = state_pairs(packed, y, n_labels, all_possible_states, min_freq)
        self.chunks = []
        for sl in even_chunks(len(X_list), n_chunks):
            lo, hi = offsets[sl.start], offsets[sl.stop]
            data = ChainData.from_packed(row_slice(packed, lo, hi), offsets[sl.start : sl.stop + 1] - lo, y[lo:hi],
                                         n_labels, pairs)
            data.set_weights(None if sample_weight is None else sample_weight[sl])
            self.chunks.append((data, data.empirical_counts(n_labels)))
        self.features = self.chunks[0][0].features
        self.shards = ResidentShards(self.chunks, n_jobs=n_jobs)
        self.n_weights = self.features.n_weights
        self.n_params = self.n_weights + n_labels + n_labels * n_labels

    def params_from(self, coef, intercept, transition):
        """Flat ``theta`` from dense (coef, intercept, transition): the inverse of :meth:`split_params`."""
        return np.concatenate([self.features.pair_weights(coef), intercept, np.ravel(transition)])

    def split_params(self, theta):
        """(coef (n_features, L) dense, intercept (L,), transition (L, L)) copies from ``theta``."""
        w, b, A = unpack_params(theta, self.n_weights, self.n_labels)
        return self.features.dense_coef(w), b.copy(), A.copy()

    def __call__(self, theta):
        L = self.n_labels
        f, g = self.shards.sum(_chunk_loss, theta, L)
        # CRFsuite's L2: c2 * ||theta||^2 on weights and transitions, not on the bias
        f += _add_l2(theta, g, self.c2, self.n_weights, self.n_weights + L)
        return f, g

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shards.close()
        return False


def _chunk_loss(chunk, theta, n_labels):
    """One resident chunk ``(data, counts)``: its negative log-likelihood and gradient."""
    return chunk_nll_grad(chunk[0], theta, n_labels, chunk[1])


@kernel
def _add_l2(theta, grad, c2, skip_lo, skip_hi):
    """Add the gradient of ``c2 ||theta||^2`` (entries skip_lo:skip_hi excluded) to grad; return the penalty.

    One pass and no temporaries: NumPy's version allocated fresh parameter-sized arrays,
    whose page faults cost more than the arithmetic.
    """
    total = 0.0
    for k in range(theta.shape[0]):
        if skip_lo <= k < skip_hi:
            continue
        total += theta[k] * theta[k]
        grad[k] += 2.0 * c2 * theta[k]
    return c2 * total


class ChainTagsMixin:
    """The scikit-learn tags of the chain estimators: lists of sequences (or one 3D array of
    equal-length ones), dense or sparse, and ``y`` (one label array per sequence) to fit.

    Like sklearn-crfsuite's ``CRF``, a chain estimator is not a scikit-learn classifier (no
    ``ClassifierMixin``, ``estimator_type`` None): a sample is a whole sequence, which has no
    single class to stratify on, so an integer ``cv`` gets ``KFold`` over sequences. As a
    classifier it would get ``StratifiedKFold``, whose ``type_of_target`` rejects the loaders'
    lists of lists of labels ("legacy multi-label data representation").
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.three_d_array = True
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags


def token_score(y_pred, y):
    """Token accuracy of the predicted sequences ``y_pred`` against ``y`` (checked against their lengths)."""
    y = check_sequence_labels(y, lengths=[len(p) for p in y_pred])
    return float(np.mean(np.concatenate(y_pred) == np.concatenate(y)))


def start_chain_fit(estimator, X, y):
    """The common start of a chain estimator's ``fit``: validate ``X`` and ``y``, encode the labels.

    Sets ``classes_`` and ``n_features_in_``; returns ``(progress, X, y_enc, previous)``: the
    fit's :class:`~sklearn_struct.utils.progress.Progress`, the validated sequences, their
    encoded labels and the warm-start parameters (see :func:`warm_start_params`).
    """
    progress = Progress(type(estimator).__name__, estimator.verbose, estimator.callback)
    check_y_given(y, estimator)
    X, y = check_sequences(X, y)
    encoder = LabelEncoder().fit(np.concatenate(y))
    previous = warm_start_params(estimator, X[0].shape[1], encoder.classes_)
    estimator.classes_ = encoder.classes_
    estimator.n_features_in_ = X[0].shape[1]
    return progress, X, encode_sequence_labels(encoder, y), previous


def warm_start_params(estimator, n_features, classes):
    """The fitted ``(coef_, intercept_, transition_)`` of a chain estimator to start from, or None.

    None unless ``estimator.warm_start`` is set and it is fitted; a ValueError when the features or
    labels differ from the previous fit.
    """
    if not estimator.warm_start or not hasattr(estimator, "coef_"):
        return None
    if n_features != estimator.n_features_in_ or not np.array_equal(classes, estimator.classes_):
        raise ValueError(
            "warm_start=True needs the same features and labels as the previous fit: got "
            f"{n_features} features and labels {list(classes)}, previously {estimator.n_features_in_} "
            f"and {list(estimator.classes_)}."
        )
    return estimator.coef_, estimator.intercept_, estimator.transition_
