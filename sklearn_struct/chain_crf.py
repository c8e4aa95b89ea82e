"""ChainCRF: the plain linear-chain CRF, a drop-in for sklearn-crfsuite users.

The model and its training live in :mod:`sklearn_struct._chain_crf` (shared with
:class:`~sklearn_struct.NonLocalCRF`, whose base model is this CRF); the recursions in
:mod:`sklearn_struct.oracles.chain`.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._chain_crf import ChainTagsMixin, predict_unary, start_chain_fit, token_score
from ._chain_crf_fit import ALGORITHMS, check_solver_options, fit_chain_algorithm
from ._chain_crf_constrained import (check_feasible, fixed_masks, has_unknown_labels, log_proba_of_chain,
                                     onehot_masks, start_partial_fit, structure_from, topk_of_chain)
from ._chain_crf_partial import partial_fit_chain
from ._chain_crf_weights import sequence_weights
from .cluster_corpus import fit_chain_crf_from_corpus, is_cluster_corpus
from .oracles.chain import forward_backward, viterbi
from .utils._proba import MarginalsAsProbaMixin
from .utils._model_file import (
    ModelFileError,
    check_labels,
    check_model_array,
    decode_label_array,
    encode_label_array,
    encode_value,
    load_model_file,
    load_params,
    meta_number,
    save_model_file,
)
from .oracles.chain_constrained import constrain_potentials, constrained_forward_backward, constrained_viterbi
from .utils._params import atomic_fit, shared_constraints, store_init_params
from .utils.packing import edge_offsets, unpack_sequences
from .utils.validation import check_sequences, encode_sequence_labels

__all__ = ["ChainCRF"]

_FORMAT = "sklearn_struct.ChainCRF"
_FORMAT_VERSION = 4  # 2: with a checksum; 3: labels and parameters with their exact types; 4: allowed_transitions
# as arrays (a mask, or the (transitions, start, end) tuple). 1 to 3 still load
_MASK_MEMBERS = {"mask": ("allowed_transitions",), "tuple": ("allowed_transitions", "allowed_start", "allowed_end")}


class ChainCRF(MarginalsAsProbaMixin, ChainTagsMixin, BaseEstimator):
    """Linear-chain conditional random field with CRFsuite's objective and training algorithms.

    Unary scores ``X @ W + b`` per token and a transition table ``A[from, to]``. The default,
    ``algorithm="lbfgs"``, minimises CRFsuite's objective
    ``sum_i -log P(y_i | x_i) + c1 * (|W|_1 + |A|_1) + c2 * (||W||^2 + ||A||^2)`` (the bias ``b``
    is not penalised) with exact gradients from forward-backward: L-BFGS, or OWL-QN when
    ``c1 > 0``. The other algorithms are CRFsuite's too: ``"l2sgd"`` (SGD on the same objective
    with ``c1 = 0``), and the online large-margin learners ``"ap"`` (averaged perceptron),
    ``"pa"`` (passive-aggressive) and ``"arow"`` (AROW), which ignore ``c1`` and ``c2``.

    With sparse features only the (attribute, label) pairs seen in training get a weight, as
    in CRFsuite; ``all_possible_states=True`` gives every pair one. Likewise
    ``all_possible_transitions=False`` gives weights only to label bigrams seen in training
    (the others stay 0).

    From sklearn-crfsuite: :mod:`sklearn_struct.crfsuite` takes token feature dicts directly;
    here put :class:`~sklearn_struct.preprocessing.SequenceVectorizer` in front,
    ``make_pipeline(SequenceVectorizer(), ChainCRF(c1=0.1, c2=0.1))``.

    Parameters
    ----------
    algorithm : {"lbfgs", "l2sgd", "ap", "pa", "arow"}, default="lbfgs"
        Training algorithm, with CRFsuite's names and meanings.
    c1 : float, default=0.0
        L1 coefficient (``"lbfgs"`` only: OWL-QN when > 0; gives exact zeros).
    c2 : float, default=1.0
        L2 coefficient, as in CRFsuite (``c2 * ||theta||^2``; ``"lbfgs"`` and ``"l2sgd"``).
    max_iter : int or None, default=None
        Maximum number of iterations (epochs for the online algorithms). None: CRFsuite's
        default, unlimited for ``"lbfgs"`` (its stopping rules decide), 1000 for ``"l2sgd"``
        and 100 for ``"ap"``, ``"pa"``, ``"arow"``.
    tol : float, default=1e-5
        CRFsuite's ``delta`` (``"lbfgs"``, ``"l2sgd"``): stop when the objective improved by
        less than this fraction over the last ``period`` iterations.
    period : int, default=10
        CRFsuite's ``period``: the number of iterations of the ``tol`` test.
    epsilon : float, default=1e-5
        ``"lbfgs"``: stop when ``||g|| / max(1, ||theta||) < epsilon`` (the pseudo-gradient
        with ``c1 > 0``). ``"ap"``, ``"pa"``, ``"arow"``: stop when the epoch's loss per
        sequence falls below it.
    all_possible_states : bool, default=False
        With sparse features, weights for every (attribute, label) pair (True) or only for
        the pairs that occur in the training data (False, CRFsuite's default).
    all_possible_transitions : bool, default=True
        Weights for every label bigram (True) or only for those seen in training (False,
        CRFsuite's default; the others are fixed at 0).
    min_freq : float or None, default=None
        CRFsuite's ``feature.minfreq`` (sparse features only; None: no threshold): of the
        pairs and bigrams above, only the (attribute, label) pairs whose frequency (the
        attribute's values summed over the training tokens of that label) is at least
        ``min_freq``, and the bigrams seen at least ``min_freq`` times, get a weight. Those
        that only ``all_possible_*`` adds have frequency 0, so ``min_freq > 0`` drops them, and
        ``min_freq=0`` (CRFsuite's default) drops the pairs whose values sum below 0.
    fit_intercept : bool, default=True
        Learn the unpenalised label bias ``b`` (True) or fix it at 0 (False: CRFsuite's model,
        which has none). Without it the objective and the iterates are CRFsuite's; with
        it, a constant "bias" attribute in the features is redundant with ``b``, and the
        penalty alone then splits the two, which makes L-BFGS / OWL-QN need more iterations
        (on CoNLL-2000 with the tutorial's features, 50% more evaluations at c1 = c2 = 0.1).
    solver_options : dict or None, default=None
        Algorithm-specific settings, named as in CRFsuite. ``"lbfgs"``: ``num_memories`` (6),
        ``linesearch`` (``"MoreThuente"``, ``"Backtracking"``, ``"StrongBacktracking"``; with
        ``c1 > 0`` the orthant-wise backtracking search is used, as in CRFsuite),
        ``max_linesearch`` (20). ``"l2sgd"``: ``calibration_eta`` (0.1), ``calibration_rate``
        (2.0), ``calibration_samples`` (1000), ``calibration_candidates`` (10),
        ``calibration_max_trials`` (20). ``"pa"``: ``pa_type`` (1; 0, 1 or 2), ``c`` (1.0),
        ``error_sensitive`` (True), ``averaging`` (True). ``"arow"``: ``variance`` (1.0),
        ``gamma`` (1.0). ``"ap"``: none.
    warm_start : bool, default=False
        Start the next ``fit`` (same features and labels) from the fitted parameters: continued
        training, e.g. ``max_iter`` more iterations.
    callback : callable or None, default=None
        Called after every iteration as ``callback(iteration, objective, seconds)``;
        returning True stops training there (no convergence warning is raised then).
    n_jobs : int, default=None
        ``"lbfgs"``: number of chunks of sequences (shards) under every joblib backend, evaluated on
        threads (one chunk, threaded inside, when None); under joblib's dask backend each chunk stays
        on one worker for the whole fit (None: one per worker thread; see :mod:`sklearn_struct.utils.shards`).
        The other algorithms update after every sequence and run on one thread.
    verbose : int, default=0
        Print one line per iteration (objective and elapsed seconds) when > 0.
    allowed_transitions : str, ndarray of shape (n_classes, n_classes) or None, default=None
        Label bigrams that may occur, used in training and in every prediction: a boolean array
        ``[from, to]`` over ``classes_``, or a chunk scheme derived from the label names
        (``"BIO"`` / ``"IOB2"``: ``I-X`` only after ``B-X`` or ``I-X``, never first; ``"BIOES"`` /
        ``"IOBES"`` / ``"BILOU"``: chunks also end with ``E-X`` and single tokens are ``S-X``, so
        a sequence also may not end inside a chunk), or a tuple ``(transitions, start, end)`` of
        boolean arrays adding the labels that may start / end a sequence. Forbidden transitions have log-potential
        ``-inf``: they are out of the likelihood's partition function and no prediction contains
        them (``transition_`` keeps 0 there). ``"lbfgs"`` trains with them; the online
        algorithms train without and decode with them. Training sequences must obey them.
        See ``allowed_transitions_in_fit`` to apply them at prediction only.
    allowed_transitions_in_fit : bool, default=True
        Whether ``"lbfgs"`` trains with ``allowed_transitions`` (True: ``log Z`` sums over the
        allowed sequences only, a different model) or trains the plain model, exactly the
        weights of a fit without ``allowed_transitions``, and applies the mask only in
        :meth:`predict`, :meth:`predict_marginals`, :meth:`predict_topk`,
        :meth:`sequence_log_proba`, :meth:`predict_edge_marginals` and explanations (False:
        decoding only; the training sequences need not obey the mask then). On CoNLL-2000 and
        GROBID citations the BIO mask at decoding only keeps the plain model's chunk F1 (93.12,
        88.02) with no invalid chunk, where training with it loses 0.06 F1. The online
        algorithms always train without the mask. Ignored without ``allowed_transitions``.
    class_weight : dict, "balanced" or None, default=None
        Per-label weights on the loss, as in ``LogisticRegression``: sequence ``i`` is
        weighted by the mean over its tokens of ``class_weight[y_it]`` (labels not in the dict
        weigh 1; ``"balanced"``: ``n_tokens / (n_classes * count(label))``), times its
        ``sample_weight``. See :meth:`fit`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_features, n_classes)
    intercept_ : ndarray of shape (n_classes,)
    transition_ : ndarray of shape (n_classes, n_classes)
        Transition log-potentials ``A[from, to]`` (0 for bigrams that are no feature).
    n_features_in_ : int
    n_iter_ : int
        Iterations (epochs) of the last fit.
    allowed_transitions_ : tuple of ndarray or None
        The masks of ``allowed_transitions`` over ``classes_``, a named tuple ``(transitions,
        start, end)`` of boolean arrays (None without it).
    objective_ : float
        Final value of the regularised objective (``"lbfgs"``, ``"l2sgd"``); for ``"ap"``,
        ``"pa"``, ``"arow"`` the loss of the last epoch as CRFsuite defines it.
    training_log_ : list of dict
        One dict per iteration: ``iteration``, ``loss`` (the objective, or the epoch's loss),
        ``seconds``, ``active_features`` (non-zero weights and transitions), ``error_norm`` and
        ``improvement`` (``"lbfgs"``; ``improvement`` for ``"l2sgd"``), and ``dev_accuracy``,
        ``dev_loss`` (negative log-likelihood) when ``fit`` was given a development set.

    See Also
    --------
    NonLocalCRF : this CRF plus learned non-local energies.
    sklearn_struct.preprocessing.SequenceVectorizer : token feature dicts to sparse sequences.

    References
    ----------
    J. Lafferty, A. McCallum, F. Pereira. "Conditional Random Fields: Probabilistic Models for
    Segmenting and Labeling Sequence Data." ICML 2001.

    N. Okazaki. "CRFsuite: a fast implementation of Conditional Random Fields." 2007.

    G. Andrew, J. Gao. "Scalable training of L1-regularized log-linear models." ICML 2007.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_struct import ChainCRF
    >>> from sklearn_struct.preprocessing import SequenceVectorizer
    >>> X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}, {"w": "runs"}]]
    >>> y = [["DET", "NOUN"], ["DET", "NOUN", "VERB"]]
    >>> model = make_pipeline(SequenceVectorizer(), ChainCRF(c2=0.01)).fit(X, y)
    >>> [p.tolist() for p in model.predict(X)]
    [['DET', 'NOUN'], ['DET', 'NOUN', 'VERB']]
    """

    _parameter_constraints = {
        "algorithm": [StrOptions(set(ALGORITHMS))],
        "c1": [Interval(numbers.Real, 0, None, closed="left")],
        "c2": [Interval(numbers.Real, 0, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "period": [Interval(numbers.Integral, 1, None, closed="left")],
        "epsilon": [Interval(numbers.Real, 0, None, closed="left")],
        "all_possible_states": ["boolean"],
        "all_possible_transitions": ["boolean"],
        "min_freq": [Interval(numbers.Real, None, None, closed="neither"), None],
        "fit_intercept": ["boolean"],
        "solver_options": [dict, None],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        **shared_constraints("warm_start", "callback", "n_jobs", "verbose"),
        "allowed_transitions": [str, "array-like", None],
        "allowed_transitions_in_fit": ["boolean"],
    }

    def __init__(self, *, algorithm="lbfgs", c1=0.0, c2=1.0, max_iter=None, tol=1e-5, period=10, epsilon=1e-5,
                 all_possible_states=False, all_possible_transitions=True, min_freq=None, fit_intercept=True,
                 solver_options=None, warm_start=False, callback=None, n_jobs=None, verbose=0,
                 allowed_transitions=None, class_weight=None, allowed_transitions_in_fit=True):
        store_init_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y=None, X_dev=None, y_dev=None, sample_weight=None):
        """Fit the CRF by ``algorithm``.

        Starts from zero, or with ``warm_start`` from the parameters of the previous fit.
        With ``sample_weight`` and / or ``class_weight``, sequence ``i``'s term of the
        objective (its update, for the online algorithms) is weighted by
        ``sample_weight[i] * mean_t class_weight[y_it]``: an integer weight is the same
        objective as that many copies of the sequence.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features), or ClusterCorpus
            Or a :class:`sklearn_struct.cluster_corpus.ClusterCorpus`: sequences that live on a
            dask cluster, featurised and fitted there (``y`` None; ``"lbfgs"`` only).
        y : list of array-like of shape (n_tokens_i,)
            Labels of each token; any hashable values. Partial labels (``"lbfgs"`` only): ``None``
            at a token whose label is unknown, or a ``set`` of the labels it may take; the fit
            then maximises the probability of the labellings ``y`` allows (marginalising over
            the unknown tokens; Tsuboi et al., COLING 2008).
        X_dev, y_dev : like X and y, default=None
            A development set, evaluated after every iteration (see ``training_log_``).
        sample_weight : array-like of shape (n_sequences,), default=None
            One non-negative weight per sequence; None weighs all 1. Routed by scikit-learn's
            metadata routing (``set_fit_request(sample_weight=True)``).

        Returns
        -------
        self : ChainCRF
        """
        if is_cluster_corpus(X):  # sequences that live on a dask cluster
            return fit_chain_crf_from_corpus(self, X, y, X_dev, y_dev, sample_weight)
        check_solver_options(self.algorithm, self.solver_options)
        if (X_dev is None) != (y_dev is None):
            raise ValueError("X_dev and y_dev must be given together (a development set), got only one of them.")
        if has_unknown_labels(y):
            progress, X, y_enc, previous, allowed = start_partial_fit(self, X, y)
        else:
            (progress, X, y_enc, previous), allowed = start_chain_fit(self, X, y), None
        structure = structure_from(self.allowed_transitions, self.classes_)
        trained = structure if self.allowed_transitions_in_fit else None  # False: the mask at decoding only
        constraints = None
        if trained is not None or allowed is not None:
            masks = allowed if allowed is not None else onehot_masks(y_enc, len(self.classes_))
            check_feasible([len(v) for v in y_enc], masks, trained)
            constraints = (allowed, trained)
        if self.min_freq is not None and not sp.issparse(X[0]):
            raise ValueError(f"min_freq={self.min_freq} needs sparse features (it counts attribute values per "
                             "label); X holds dense arrays.")
        dev = None
        if X_dev is not None:
            try:
                X_dev, y_dev = check_sequences(X_dev, y_dev, n_features=self.n_features_in_)
            except ValueError as exc:
                raise ValueError(f"X_dev, y_dev: {exc}") from None
            dev = (X_dev, _encode_dev(self.classes_, y_dev))
        self.__dict__.pop("_online_state", None)  # partial_fit starts again from this fit
        weights = sequence_weights(sample_weight, self.class_weight, y_enc, self.classes_)
        *fitted, self.training_log_ = fit_chain_algorithm(X, y_enc, len(self.classes_), self.get_params(),
                                                          previous=previous, progress=progress, dev=dev,
                                                          constraints=constraints, sample_weight=weights)
        self.coef_, self.intercept_, self.transition_, self.n_iter_, self.objective_ = fitted
        self.allowed_transitions_ = structure
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One epoch of the online ``algorithm`` (``"l2sgd"``, ``"ap"``, ``"pa"``, ``"arow"``) over one batch.

        The state (current and averaged weights, AROW's covariances, SGD's step count and
        calibrated rate, the random orders) is kept between calls, so the calls continue one
        training run: one call on all the data is ``fit`` with ``max_iter=1``, ``k`` calls
        ``max_iter=k``; ``"l2sgd"`` spreads ``c2`` over the distinct sequences seen so far (one passed
        again in a later call is not counted again), so later passes keep ``fit``'s penalty. A batch
        may bring new attributes as extra columns at the end of its feature matrices (the weight
        vector grows; e.g. from :class:`sklearn_struct.crfsuite.CRF`, whose attribute vocabulary
        grows); new (attribute, label) pairs seen in a batch get
        weights. After a ``fit``, ``partial_fit`` continues from the fitted model. For
        ``"lbfgs"`` use ``warm_start=True`` and ``fit`` instead (a ValueError says so).

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        y : list of array-like of shape (n_tokens_i,)
        classes : array-like, default=None
            Every label any batch may hold; required on the first call (as for
            ``SGDClassifier.partial_fit``), optional later (must then be the same).
        sample_weight : array-like of shape (n_sequences,), default=None
            One weight per sequence of the batch, as in :meth:`fit`.

        Returns
        -------
        self : ChainCRF
        """
        options = check_solver_options(self.algorithm, self.solver_options)
        return partial_fit_chain(self, X, y, classes, sample_weight, options)

    def _unary(self, X):
        check_is_fitted(self)
        X = check_sequences(X, n_features=self.n_features_in_)
        return predict_unary(X, self.coef_, self.intercept_)

    def predict(self, X, fixed=None):
        """Most likely label sequence of each sequence (Viterbi), among those ``allowed_transitions`` allows.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        fixed : list or None, default=None
            Forced decoding: one entry per sequence, None (nothing given) or one entry per token:
            its label, None (free) or a ``set`` of the labels it may take (the format of partial
            labels in :meth:`fit`). The best labelling that agrees with it is returned.

        Returns
        -------
        y : list of ndarray of shape (n_tokens_i,)
        """
        data, unary, masks = self._constrained_unary(X, fixed)
        if masks:
            labels, _ = constrained_viterbi(unary, self.transition_, data.offsets, **masks)
        else:
            labels, _ = viterbi(unary, self.transition_, data.offsets)
        return [self.classes_[part] for part in unpack_sequences(labels, data.offsets)]

    def predict_marginals(self, X, fixed=None):
        """Per-token label marginals, columns in ``classes_`` order.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        fixed : list or None, default=None
            Tokens whose labels are given, as in :meth:`predict`: the marginals are then
            conditional on them (and on ``allowed_transitions``).

        Returns
        -------
        marginals : list of ndarray of shape (n_tokens_i, n_classes)
        """
        data, unary, masks = self._constrained_unary(X, fixed)
        if masks:
            _, node, _ = constrained_forward_backward(unary, self.transition_, data.offsets, edge_marginals="none",
                                                      **masks)
        else:
            _, node, _ = forward_backward(unary, self.transition_, data.offsets, edge_marginals="none")
        return unpack_sequences(node, data.offsets)

    def predict_topk(self, X, k=5):
        """The ``k`` most probable label sequences of each sequence, with their log-probabilities.

        Exact (k-best Viterbi, no sampling), within ``allowed_transitions``; best first. A
        sequence with fewer than ``k`` possible labellings gets all of them.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        k : int, default=5

        Returns
        -------
        y_topk : list of ndarray of shape (k_i, n_tokens_i)
            Row ``r`` is the rank-``r`` labelling.
        log_proba : list of ndarray of shape (k_i,)
            ``log P(y | x)`` of each row, non-increasing.
        """
        data, unary, masks = self._constrained_unary(X, None)
        unary, trans = constrain_potentials(unary, self.transition_, data.offsets, **masks)
        return topk_of_chain(unary, trans, data.offsets, k, self.classes_)

    def sequence_log_proba(self, X, y):
        """``log P(y_i | x_i)`` of given label sequences (python-crfsuite's ``Tagger.probability``, in logs).

        A labelling that ``allowed_transitions`` forbids has ``-inf``.

        Returns
        -------
        log_proba : ndarray of shape (n_sequences,)
        """
        data, unary, masks = self._constrained_unary(X, None)
        unary, trans = constrain_potentials(unary, self.transition_, data.offsets, **masks)
        return log_proba_of_chain(unary, trans, data.offsets, X, y, self.classes_)

    def _constrained_unary(self, X, fixed):
        """Packed data, unary scores and the masks of ``allowed_transitions`` and ``fixed``."""
        data, unary = self._unary(X)
        structure = getattr(self, "allowed_transitions_", None)
        if structure is None and "allowed_transitions_" not in self.__dict__:  # loaded from a file
            structure = structure_from(self.allowed_transitions, self.classes_)
        masks = {} if structure is None else structure._asdict()
        if fixed is not None:
            masks["allowed"] = fixed_masks(fixed, self.classes_, np.diff(data.offsets))
        return data, unary, masks

    def predict_edge_marginals(self, X):
        """Marginals of consecutive label pairs: ``P(y_t = a, y_{t+1} = b | x)``.

        Returns
        -------
        marginals : list of ndarray of shape (n_tokens_i - 1, n_classes, n_classes)
        """
        data, unary, masks = self._constrained_unary(X, None)  # within allowed_transitions
        unary, trans = constrain_potentials(unary, self.transition_, data.offsets, **masks)
        _, _, edge = forward_backward(unary, trans, data.offsets, edge_marginals="per_position")
        return unpack_sequences(edge, edge_offsets(data.offsets))

    def score(self, X, y):
        """Token accuracy of :meth:`predict` on ``X`` against ``y``."""
        return token_score(self.predict(X), y)

    # ------------------------------------------------------------------ save / load
    def save(self, path):
        """Write the fitted model to one ``.npz`` file that loads without pickle.

        The file holds the arrays ``coef``, ``intercept`` and ``transition`` (and, when
        ``allowed_transitions`` is a boolean mask, ``allowed_transitions``; a ``(transitions, start,
        end)`` tuple adds ``allowed_start`` and ``allowed_end``) and ``meta``: a JSON
        string with the format name and version, the constructor parameters (all but callables:
        ``solver_options`` included; a scheme name for ``allowed_transitions`` among them), ``classes_`` with its dtype and each label's exact type (ints,
        floats, bools, strings with any characters, bytes, tuples, None, NumPy scalars), the scalar
        fitted attributes and a SHA-256 checksum over all of it. Any NumPy-reading tool can open
        it. The file is written to a temporary file beside ``path`` and renamed over it once
        complete: a full disk or an interruption leaves an existing ``path`` intact.

        Parameters
        ----------
        path : str or path-like

        Raises
        ------
        ValueError
            If a label or parameter is of a type the file cannot hold (nothing is written).
        """
        check_is_fitted(self)
        try:
            classes = encode_label_array(self.classes_)
        except ValueError as exc:
            raise ValueError(f"save: classes_ cannot be stored: {exc}") from None
        form, masks = _mask_arrays(self.allowed_transitions, len(self.classes_))
        params = {k: encode_value(v) for k, v in self.get_params().items()
                  if not callable(v) and not (form and k == "allowed_transitions")}
        meta = {"params": params, "n_features_in_": int(self.n_features_in_), "n_iter_": int(self.n_iter_),
                "objective_": float(self.objective_), "classes": classes}
        if form:
            meta["allowed_transitions"] = form
        arrays = {"coef": self.coef_, "intercept": self.intercept_, "transition": self.transition_, **masks}
        save_model_file(path, _FORMAT, _FORMAT_VERSION, arrays, meta)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`, checked like :meth:`fit` checks its input.

        Reads files of every earlier format version too (versions 1 and 2 stored ``classes_``
        as an array of numbers or strings; version 3 had no ``allowed_transitions`` arrays).

        Parameters
        ----------
        path : str or path-like

        Returns
        -------
        model : ChainCRF

        Raises
        ------
        sklearn_struct.exceptions.ModelFileError
            A ValueError naming the file and what is wrong: not a regular file (a directory or
            a FIFO), empty, truncated, damaged or not a model file, a bad checksum (changed
            bytes), members whose declared sizes or shapes do not match (checked before anything
            is allocated or inflated), parameters ``fit`` would refuse, labels that are not
            distinct or do not match the weights, non-finite values, an ``allowed_transitions``
            mask that is not boolean of shape ``(n_classes, n_classes)`` (or a scheme name that
            does not fit the labels).
        FileNotFoundError
            If ``path`` does not exist.
        """
        arrays, meta = load_model_file(path, _FORMAT, _FORMAT_VERSION, expect=lambda m: _expected_arrays(path, m))
        model = load_params(path, cls, meta)
        try:
            check_solver_options(model.algorithm, model.solver_options)
        except ValueError as exc:
            raise ModelFileError(f"{path}: {exc}", str(path)) from None
        classes = arrays.pop("classes") if meta["version"] < 3 else decode_label_array(path, meta.get("classes"))
        check_labels(path, classes.tolist() if classes.dtype != object else list(classes), "classes")
        if not _is_sorted(classes):
            raise ModelFileError(f"{path}: classes must be sorted and distinct, got {classes.tolist()[:10]}.",
                                 str(path))
        L = len(classes)
        model.n_features_in_ = meta_number(path, meta, "n_features_in_", "int", 1)
        model.coef_ = check_model_array(path, arrays, "coef", (model.n_features_in_, L))
        model.intercept_ = check_model_array(path, arrays, "intercept", (L,))
        model.transition_ = check_model_array(path, arrays, "transition", (L, L))
        model.classes_ = classes
        model.n_iter_ = meta_number(path, meta, "n_iter_", "int", 0)
        model.objective_ = meta_number(path, meta, "objective_", "float", None)
        form = meta.get("allowed_transitions")
        if form is not None:
            if "allowed_transitions" in meta["params"]:
                raise ModelFileError(f"{path}: allowed_transitions is both a parameter and an array.", str(path))
            parts = tuple(arrays[name] for name in _MASK_MEMBERS[form])  # checked by _expected_arrays
            model.allowed_transitions = parts[0] if form == "mask" else parts
        try:
            model.allowed_transitions_ = structure_from(model.allowed_transitions, classes)
        except ValueError as exc:
            raise ModelFileError(f"{path}: {exc}", str(path)) from None
        return model


def _expected_arrays(path, meta):
    """The arrays of a ChainCRF model file of ``meta``'s version: names, dtype kinds and shapes."""
    n = meta_number(path, meta, "n_features_in_", "int", 1)
    if meta["version"] < 3:
        return {"coef": ("f", (n, None)), "intercept": ("f", (None,)), "transition": ("f", (None, None)),
                "classes": ("biufU", (None,))}
    labels = meta.get("classes")
    L = len(labels["values"]) if isinstance(labels, dict) and isinstance(labels.get("values"), list) else None
    out = {"coef": ("f", (n, L)), "intercept": ("f", (L,)), "transition": ("f", (L, L))}
    form = meta.get("allowed_transitions")
    if form is None:
        return out
    if meta["version"] < 4 or not isinstance(form, str) or form not in _MASK_MEMBERS:
        raise ModelFileError(f"{path}: allowed_transitions = {str(form)[:40]!r} in the header is not one of "
                             f"{sorted(_MASK_MEMBERS)} (format version {meta['version']}).", str(path))
    shapes = {"allowed_transitions": (L, L), "allowed_start": (L,), "allowed_end": (L,)}
    return {**out, **{name: ("b", shapes[name]) for name in _MASK_MEMBERS[form]}}


def _mask_arrays(allowed_transitions, n_classes):
    """``(form, arrays)`` of an ``allowed_transitions`` given as arrays (``form`` None for a scheme name or None)."""
    if allowed_transitions is None or isinstance(allowed_transitions, str):
        return None, {}
    structure = structure_from(allowed_transitions, np.arange(n_classes))  # as fit checked it: boolean, shaped
    if isinstance(allowed_transitions, tuple) and len(allowed_transitions) == 3:
        return "tuple", dict(zip(_MASK_MEMBERS["tuple"], structure))
    return "mask", {"allowed_transitions": structure.transitions}


def _is_sorted(classes):
    """Whether ``classes`` is in the order LabelEncoder gives (sorted); labels that do not sort are kept as stored."""
    try:
        return np.array_equal(np.unique(classes), classes)
    except TypeError:
        return True


def _encode_dev(classes, y_dev):
    """Label indices of the development labels (ValueError naming a sequence with a label unseen in training)."""
    encoder = LabelEncoder()
    encoder.classes_ = classes
    try:
        return encode_sequence_labels(encoder, y_dev)
    except ValueError as exc:
        raise ValueError(f"y_dev: {exc}") from None

