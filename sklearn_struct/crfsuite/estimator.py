"""sklearn-crfsuite's ``CRF`` on :class:`~sklearn_struct.ChainCRF`: same constructor, data and attributes."""

import numbers
import os
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils._param_validation import Interval, Options, StrOptions

from .._chain_crf_fit import ALGORITHMS
from ..chain_crf import ChainCRF
from ..cluster_corpus import is_cluster_corpus
from ..utils._params import atomic_fit, store_init_params
from . import _structure
from ._extensions import chain_class_weight, partial_fit_crf
from ._features import AttributeVocabulary, split_rows
from ._lean_fit import fit_releasing_features, lean_fit_applies
from ._model import CRFModel, Tagger
from ._trainlog import TrainingLog, format_iteration, format_scores, holdout_scores

__all__ = ["CRF"]

# our parameter -> the ChainCRF parameter it sets (the others are solver_options)
_CHAIN_PARAMS = {"c1": "c1", "c2": "c2", "max_iterations": "max_iter", "epsilon": "epsilon", "period": "period",
                 "delta": "tol"}
_FROM_CHAIN = {chain: ours for ours, chain in _CHAIN_PARAMS.items()}
# the CRFsuite parameters each training algorithm has (CRFsuite refuses the others), from ChainCRF's table
_ALGORITHM_PARAMS = {name: {"max_iterations", *(_FROM_CHAIN[p] for p in algorithm.params), *algorithm.options}
                     for name, algorithm in ALGORITHMS.items()}
_SOLVER_OPTIONS = tuple(option for algorithm in ALGORITHMS.values() for option in algorithm.options)


def _positive(kind=numbers.Real, low=0, closed="neither"):
    return [Interval(kind, low, None, closed=closed), None]


class CRF(BaseEstimator):
    """Linear-chain CRF with sklearn-crfsuite's interface, trained by :class:`~sklearn_struct.ChainCRF`.

    The model is CRFsuite's: state weights per (attribute, label) pair, transition weights, no
    bias (``ChainCRF(fit_intercept=False)``), the same objective and training algorithms.

    ``import sklearn_struct.crfsuite as sklearn_crfsuite`` is the only line a sklearn-crfsuite
    user changes: the constructor has the same parameters in the same order with the same
    defaults (``None`` meaning CRFsuite's default), ``fit`` takes the same lists of lists of
    feature dicts (python-crfsuite's rules: ``{"key": "v"}`` is attribute ``key:v`` with value 1,
    numbers and bools are values, nested dicts and lists prefix their keys with ``key:``, bytes are
    UTF-8) and the fitted model answers with the same attributes. Differences, all of them:

    * ``tagger_`` is a :class:`~sklearn_struct.crfsuite._model.Tagger` with ``pycrfsuite.Tagger``'s
      methods (``labels``, ``tag``, ``set``, ``marginal``, ``probability``, ``info``) over this
      model, not the CRFsuite C tagger; the model file (``model_filename``) is an ``.npz``
      of the weights (see :meth:`CRFModel.save <sklearn_struct.crfsuite._model.CRFModel.save>`),
      not a CRFsuite binary model, and ``size_`` is its size in bytes;
    * no temporary files are made, so ``keep_tempfiles`` has nothing to keep, and ``trainer_cls``
      (a ``pycrfsuite.Trainer`` subclass) must be None: use ``verbose`` or ``training_log_``;
    * ``predict_marginals`` gives lists of lists of dicts, as sklearn-crfsuite's ``list(map(...))``.

    Extensions (what sklearn-crfsuite does not have): ``fit(..., sample_weight=)`` (one weight per
    sequence), the keyword-only ``class_weight``, :meth:`partial_fit` for the online algorithms,
    :meth:`predict_proba` (the marginals as arrays, reachable through a ``Pipeline``),
    :func:`sklearn_struct.explain.explain_prediction` (per-token attributions by attribute name) and
    ``fit(ClusterCorpus(bag))``: a :class:`~sklearn_struct.cluster_corpus.ClusterCorpus` of
    ``(xseq, yseq)`` pairs on a dask cluster, featurised there by the same rules, gives the model
    of the local ``fit(X, y)`` on the same sequences (``"lbfgs"`` only; see the Scaling out page).

    Parameters
    ----------
    algorithm : {"lbfgs", "l2sgd", "ap", "pa", "arow"}, default=None
        Training algorithm (None: "lbfgs"): L-BFGS (OWL-QN when ``c1 > 0``), SGD with L2,
        averaged perceptron, passive-aggressive, AROW.
    min_freq : float, default=None
        CRFsuite's ``feature.minfreq`` (None: 0): drop each (attribute, label) pair whose
        frequency (the attribute's values summed over the training tokens of that label) is below
        it, and each transition seen fewer times (see ``ChainCRF``'s ``min_freq``).
    all_possible_states : bool, default=None
        Weights for every (attribute, label) pair, not only the pairs seen in training (None: False).
    all_possible_transitions : bool, default=None
        Weights for every label pair, not only the transitions seen in training (None: False).
    c1, c2 : float, default=None
        L1 (lbfgs) and L2 (lbfgs, l2sgd) coefficients (None: 0 and 1).
    max_iterations : int, default=None
        Maximum number of iterations (None: CRFsuite's default of the algorithm).
    num_memories, epsilon, period, delta, linesearch, max_linesearch : default=None
        L-BFGS settings as CRFsuite names them (``delta``: stop when the objective improved by
        less than ``delta`` over the last ``period`` iterations).
    calibration_eta, calibration_rate, calibration_samples, calibration_candidates, calibration_max_trials : default=None
        l2sgd's learning-rate calibration.
    pa_type, c, error_sensitive, averaging : default=None
        Passive-aggressive settings (``pa_type`` 0, 1 or 2).
    variance, gamma : float, default=None
        AROW settings.
    verbose : bool, default=False
        Print one line per iteration (and the held-out per-label table), when training ends.
    model_filename : str or path-like, default=None
        Where ``fit`` writes the model file; a CRF made with the name of an existing model
        file predicts with it without a fit.
    keep_tempfiles : bool, default=False
        Accepted for compatibility; no temporary files are made.
    trainer_cls : None
        Accepted for compatibility; must be None.
    allowed_transitions : str, ndarray of shape (n_labels, n_labels) or None, default=None
        Extension (not in sklearn-crfsuite): label bigrams that may occur, in training
        (``"lbfgs"``) and in every prediction; a scheme name (``"BIO"``, ``"IOB2"``, ``"BIOES"``,
        ``"BILOU"``) derived from the label names, or a boolean array over ``classes_`` (see
        :class:`~sklearn_struct.ChainCRF`). Give it by name to keep it with a model file.
    allowed_transitions_in_fit : bool or None, default=None
        Extension: False trains the plain model (the weights of a fit without
        ``allowed_transitions``) and applies ``allowed_transitions`` only when predicting
        (decoding only), as in :class:`~sklearn_struct.ChainCRF`; None or True: in training
        (``"lbfgs"``) and decoding.
    class_weight : dict, "balanced" or None, default=None
        An extension (keyword-only): per-label weights on the loss, ``{label: weight}`` or
        ``"balanced"``, as in :class:`sklearn_struct.ChainCRF` (each sequence weighted by the
        mean of its tokens' label weights).

    Notes
    -----
    Extensions beyond sklearn-crfsuite, all on the same model: partial labels in ``fit``
    (``None`` at an unknown token, or a ``set`` of the labels it may take; ``"lbfgs"``),
    ``predict(X, fixed=...)`` / ``predict_marginals(X, fixed=...)`` (forced decoding, conditional
    marginals), :meth:`predict_topk` (n-best lists), :meth:`sequence_log_proba`,
    ``sample_weight`` and ``class_weight``, :meth:`partial_fit` (online algorithms),
    ``allowed_transitions`` in training and decoding or, with ``allowed_transitions_in_fit=False``,
    in decoding only.

    Attributes
    ----------
    classes_ : list of str
        Labels in order of first appearance in the training data (None before fit).
    state_features_ : dict
        ``{(attribute, label): weight}``, non-zero weights only.
    transition_features_ : dict
        ``{(label_from, label_to): weight}``, non-zero weights only.
    attributes_ : list of str
        Attributes with a non-zero weight; ``num_attributes_`` their number.
    size_ : int
        Size of the model file in bytes.
    training_log_ : TrainingLog
        Per-iteration records, shaped like python-crfsuite's ``TrainLogParser``.
    tagger_ : Tagger
    estimator_ : ChainCRF
        The fitted array-level model (after ``fit``; not after loading a model file).

    See Also
    --------
    sklearn_struct.ChainCRF : the same model on arrays.

    Examples
    --------
    >>> import sklearn_struct.crfsuite as sklearn_crfsuite
    >>> X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}, {"w": "runs"}]]
    >>> y = [["DET", "NOUN"], ["DET", "NOUN", "VERB"]]
    >>> crf = sklearn_crfsuite.CRF(c2=0.01).fit(X, y)
    >>> crf.predict(X)
    [['DET', 'NOUN'], ['DET', 'NOUN', 'VERB']]
    >>> crf.classes_
    ['DET', 'NOUN', 'VERB']
    """

    _parameter_constraints = {
        "algorithm": [StrOptions(set(_ALGORITHM_PARAMS)), None],
        "min_freq": _positive(closed="left"),
        "all_possible_states": ["boolean", None],
        "all_possible_transitions": ["boolean", None],
        "c1": _positive(closed="left"),
        "c2": _positive(closed="left"),
        "max_iterations": _positive(numbers.Integral, 1, "left"),
        "num_memories": _positive(numbers.Integral, 1, "left"),
        "epsilon": _positive(closed="left"),
        "period": _positive(numbers.Integral, 1, "left"),
        "delta": _positive(closed="left"),
        "linesearch": [StrOptions({"MoreThuente", "Backtracking", "StrongBacktracking"}), None],
        "max_linesearch": _positive(numbers.Integral, 1, "left"),
        "calibration_eta": _positive(),
        "calibration_rate": _positive(),
        "calibration_samples": _positive(numbers.Integral, 1, "left"),
        "calibration_candidates": _positive(numbers.Integral, 1, "left"),
        "calibration_max_trials": _positive(numbers.Integral, 1, "left"),
        "pa_type": [Options(numbers.Integral, {0, 1, 2}), None],
        "c": _positive(),
        "error_sensitive": ["boolean", None],
        "averaging": ["boolean", None],
        "variance": _positive(),
        "gamma": _positive(),
        "verbose": ["verbose"],
        "model_filename": [str, os.PathLike, None],
        "keep_tempfiles": ["boolean"],
        "trainer_cls": [None],
        "allowed_transitions": [str, "array-like", None],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "allowed_transitions_in_fit": ["boolean", None],
    }

    def __init__(self, algorithm=None, min_freq=None, all_possible_states=None, all_possible_transitions=None,
                 c1=None, c2=None, max_iterations=None, num_memories=None, epsilon=None, period=None, delta=None,
                 linesearch=None, max_linesearch=None, calibration_eta=None, calibration_rate=None,
                 calibration_samples=None, calibration_candidates=None, calibration_max_trials=None, pa_type=None,
                 c=None, error_sensitive=None, averaging=None, variance=None, gamma=None, verbose=False,
                 model_filename=None, keep_tempfiles=False, trainer_cls=None, *, allowed_transitions=None,
                 class_weight=None, allowed_transitions_in_fit=None):
        # positional, like sklearn-crfsuite (its tests call CRF("lbfgs")); stored unchanged
        store_init_params(self, locals())

    # ------------------------------------------------------------------ training
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y=None, X_dev=None, y_dev=None, sample_weight=None):
        """Train on lists of lists of feature dicts ``X`` and lists of labels ``y``.

        Parameters
        ----------
        X : list of lists of dicts or ClusterCorpus
            Token features in python-crfsuite's format. Or an extension: a
            :class:`~sklearn_struct.cluster_corpus.ClusterCorpus` of ``(xseq, yseq)`` pairs made
            with ``featurizer=None``, featurised and fitted on a dask cluster (``y`` None;
            ``"lbfgs"`` only; the model of the local fit on the same sequences; see the Scaling
            out page).
        y : list of lists of str
            Extension: ``None`` at a token whose label is unknown, or a ``set`` of the labels it
            may take (partial labels, ``"lbfgs"`` only).
        X_dev, y_dev : list of lists, default=None
            Held-out data evaluated after every iteration (in ``training_log_``); give both or neither.
        sample_weight : array-like of shape (n_sequences,), default=None
            An extension: one weight per sequence, as in :meth:`sklearn_struct.ChainCRF.fit`
            (CRFsuite's instance weights); routed by scikit-learn's metadata routing.

        Returns
        -------
        self : CRF
        """
        start = time.perf_counter()
        if is_cluster_corpus(X):  # sequences that live on a dask cluster, featurised there
            from ._cluster import fit_from_corpus

            chain, names, labels = fit_from_corpus(self, X, self._chain_params(), y, X_dev, y_dev, sample_weight)
            holdout, featgen_seconds = None, 0.0
        else:
            chain, names, labels, holdout, featgen_seconds = self._fit_local(X, y, X_dev, y_dev, sample_weight, start)
        model = CRFModel.from_weights(names, labels, chain.coef_, chain.intercept_, chain.transition_)
        log = self._training_log(chain, model, holdout, featgen_seconds,
                                 time.perf_counter() - start - featgen_seconds)
        if self.model_filename is not None:
            model.save(self.model_filename)
        self.__dict__.pop("_partial_state", None)
        self._set_fitted(model, chain, log)
        return self

    def _fit_local(self, X, y, X_dev, y_dev, sample_weight, start):
        """The fit on feature dicts: (ChainCRF, attribute names, labels, holdout, featgen seconds)."""
        data = self._vectorise(X, y, X_dev, y_dev)
        featgen_seconds = time.perf_counter() - start
        structure = _structure.model_structure(self.allowed_transitions, data.labels)
        chain = ChainCRF(**self._chain_params(), allowed_transitions=None if structure is None else tuple(structure),
                         class_weight=chain_class_weight(self.class_weight, data.labels),
                         allowed_transitions_in_fit=self.allowed_transitions_in_fit is not False)
        with warnings.catch_warnings():  # max_iterations is a budget in CRFsuite: reaching it is no failure
            warnings.filterwarnings("ignore", message=".*did not converge.*max_iter", category=ConvergenceWarning)
            if lean_fit_applies(chain, data, structure):  # the same fit, the feature matrix freed early
                fit_releasing_features(chain, data, sample_weight)
            else:
                chain.fit(data.X, data.y, **data.dev, sample_weight=sample_weight)
        return chain, data.names, data.labels, data.holdout, featgen_seconds

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """An extension: one epoch of the online ``algorithm`` (``"l2sgd"``, ``"ap"``, ``"pa"``, ``"arow"``) on a batch.

        As :meth:`sklearn_struct.ChainCRF.partial_fit`: ``classes`` (every label) on the first
        call, the training state kept between calls; attributes first seen in a later batch
        are added to the model. ``fit`` starts again from scratch.

        Parameters
        ----------
        X : list of lists of dicts
        y : list of lists of str
        classes : list of str, default=None
        sample_weight : array-like of shape (n_sequences,), default=None

        Returns
        -------
        self : CRF
        """
        names, labels, chain, state = partial_fit_crf(self, X, y, classes, sample_weight, _check_labels, _encode)
        model = CRFModel.from_weights(names, labels, chain.coef_, chain.intercept_, chain.transition_)
        self._set_fitted(model, chain, None)
        self._partial_state = state
        return self

    def _vectorise(self, X, y, X_dev, y_dev):
        """Rows and encoded labels for ChainCRF: attributes by python-crfsuite's rules, labels
        numbered in order of first appearance as CRFsuite numbers them (so that ties, e.g. all
        weights 0 at the start of the online algorithms, break the same way)."""
        if (X_dev is None) != (y_dev is None):
            raise ValueError("Pass both X_dev and y_dev to use the holdout data")
        vocabulary = AttributeVocabulary()
        rows, offsets = vocabulary.fit_transform(X, "X")
        y = _check_labels(y, offsets, "y")
        partial = _structure.encode_partial(y)
        labels = _first_appearance(y) if partial is None else partial[0]
        codes = {label: k for k, label in enumerate(labels)}
        dev, holdout = {}, None
        if X_dev is not None:
            dev_rows, dev_offsets = vocabulary.transform(X_dev, "X_dev")
            holdout = (X_dev, _check_labels(y_dev, dev_offsets, "y_dev"))
            dev = {"X_dev": split_rows(dev_rows, dev_offsets), "y_dev": _encode(holdout[1], codes, "y_dev")}
        y_coded = _encode(y, codes, "y") if partial is None else partial[1]
        return SimpleNamespace(X=split_rows(rows, offsets), y=y_coded, names=vocabulary.names(),
                               labels=labels, dev=dev, holdout=holdout, partial=partial is not None,
                               positive=rows.nnz == 0 or bool(rows.data.min() > 0))

    def _chain_params(self):
        algorithm = self.algorithm or "lbfgs"
        given = {name for name in set().union(*_ALGORITHM_PARAMS.values()) if getattr(self, name) is not None}
        foreign = sorted(given - _ALGORITHM_PARAMS[algorithm])
        if foreign:
            raise ValueError(f"Parameter not found: {foreign[0]} = {getattr(self, foreign[0])!r} is not a parameter of "
                             f"algorithm {algorithm!r} (it has {sorted(_ALGORITHM_PARAMS[algorithm])}).")
        params = {_CHAIN_PARAMS[k]: getattr(self, k) for k in _CHAIN_PARAMS if k in given}
        options = {k: getattr(self, k) for k in _SOLVER_OPTIONS if k in given}
        if algorithm in ("ap", "pa", "arow") and "epsilon" not in params:
            params["epsilon"] = 0.0  # CRFsuite's default for the online algorithms (its log prints it): no early stop
        return dict(params, algorithm=algorithm, all_possible_states=bool(self.all_possible_states),
                    all_possible_transitions=bool(self.all_possible_transitions), min_freq=self.min_freq or 0.0,
                    fit_intercept=False,
                    solver_options=options or None)  # no bias: CRFsuite's model

    def _training_log(self, chain, model, holdout, featgen_seconds, training_seconds):
        records = [dict(r) for r in getattr(chain, "training_log_", [])]
        if holdout is not None and records:
            X_dev, y_dev = holdout
            records[-1].update(holdout_scores(y_dev, model.predict(X_dev, "X_dev"), model.labels))
        n_weights = model.state.nnz + int((model.transition != 0).sum())
        log = TrainingLog(records, num_features=n_weights, featgen_seconds=featgen_seconds,
                          training_seconds=training_seconds)
        if self.verbose:
            print("".join(log.log), end="")
            if log.last_iteration and log.last_iteration["scores"]:
                print(format_scores(log.last_iteration["scores"]))
        return log

    def _set_fitted(self, model, chain, log):
        self._model, self._fitted_log = model, log
        self._tagger = Tagger(model, len(model.to_bytes()))
        if chain is not None:
            self.estimator_ = chain

    # ------------------------------------------------------------------ prediction
    def predict(self, X, fixed=None):
        """Most likely label sequences (Viterbi).

        Parameters
        ----------
        X : list of lists of dicts
        fixed : list or None, default=None
            Extension: per sequence None or one entry per token, its given label, None (free) or a
            set of allowed labels; the best labelling that agrees with it is returned.

        Returns
        -------
        y : list of lists of str
        """
        model = self._fitted_model()
        structure = _structure.model_structure(self.allowed_transitions, model.labels)
        if structure is None and fixed is None:
            return model.predict(X, "X")
        return _structure.predict(model, structure, X, fixed)

    def predict_single(self, xseq):
        """Most likely labels of one sequence ``xseq`` (a list of feature dicts)."""
        if self.allowed_transitions is not None:
            return self.predict([xseq])[0]
        return self._fitted_model().predict([xseq], "xseq")[0]

    def predict_marginals(self, X, fixed=None):
        """Per-token label probabilities.

        Parameters
        ----------
        X : list of lists of dicts
        fixed : list or None, default=None
            Extension: tokens whose labels are given, as in :meth:`predict`; the marginals are
            conditional on them.

        Returns
        -------
        marginals : list of lists of dicts ``{label: probability}``
        """
        model = self._fitted_model()
        structure = _structure.model_structure(self.allowed_transitions, model.labels)
        node = model.marginals(X, "X") if structure is None and fixed is None else \
            _structure.marginals(model, structure, X, fixed)
        return [_marginal_dicts(m, model.labels) for m in node]

    def predict_topk(self, X, k=5):
        """Extension: the ``k`` most probable label sequences of each sequence (exact k-best Viterbi).

        Returns
        -------
        y_topk : list of lists of lists of str
            Per sequence, up to ``k`` labellings, best first.
        log_proba : list of lists of float
            Their ``log P(y | x)``.
        """
        model = self._fitted_model()
        return _structure.topk(model, _structure.model_structure(self.allowed_transitions, model.labels), X, k)

    def sequence_log_proba(self, X, y):
        """Extension: ``log P(y_i | x_i)`` of each given label sequence (``Tagger.probability`` in logs).

        Returns
        -------
        log_proba : ndarray of shape (n_sequences,)
        """
        model = self._fitted_model()
        return _structure.log_proba(model, _structure.model_structure(self.allowed_transitions, model.labels), X, y)

    def predict_marginals_single(self, xseq):
        """Per-token label probabilities of one sequence: a list of ``{label: probability}`` dicts."""
        if self.allowed_transitions is not None:
            return self.predict_marginals([xseq])[0]
        model = self._fitted_model()
        return _marginal_dicts(model.marginals([xseq], "xseq")[0], model.labels)

    def predict_proba(self, X):
        """Per-token label probabilities as arrays (an extension; columns in ``classes_`` order).

        The same numbers as :meth:`predict_marginals` without the dicts, under scikit-learn's
        name, so that a :class:`~sklearn.pipeline.Pipeline` ending in this CRF reaches them.

        Returns
        -------
        marginals : list of ndarray of shape (n_tokens_i, n_classes)
        """
        return list(self._fitted_model().marginals(X, "X"))

    def score(self, X, y):
        """Token accuracy of :meth:`predict` (see :mod:`sklearn_struct.crfsuite.metrics` for others)."""
        from .metrics import flat_accuracy_score

        return flat_accuracy_score(y, self.predict(X))

    # ------------------------------------------------------------------ fitted attributes
    def __sklearn_is_fitted__(self):
        return self._loaded_model() is not None

    def _loaded_model(self):
        model = self.__dict__.get("_model")
        if model is None and self.model_filename is not None and Path(self.model_filename).exists():
            model = CRFModel.load(self.model_filename)
            self._set_fitted(model, None, None)
        return model

    def _fitted_model(self):
        model = self._loaded_model()
        if model is None:
            raise NotFittedError("This CRF instance is not fitted yet. Call 'fit' with appropriate arguments "
                                 "before using this estimator.")
        return model

    def _fitted(self, attribute):
        model = self._loaded_model()
        return None if model is None else getattr(self, "_" + attribute)(model)

    @property
    def tagger_(self):
        """The :class:`~sklearn_struct.crfsuite._model.Tagger` of the fitted model (None before fit)."""
        return None if self._loaded_model() is None else self._tagger

    @property
    def training_log_(self):
        """Per-iteration records of the last fit (None before fit)."""
        self._loaded_model()
        return self.__dict__.get("_fitted_log")

    @property
    def classes_(self):
        """Labels, in order of their first appearance in the training data (None before fit)."""
        return self._fitted("classes")

    @property
    def size_(self):
        """Size of the model file in bytes (None before fit)."""
        return None if self._loaded_model() is None else int(self._tagger.info().header["size"])

    @property
    def num_attributes_(self):
        """Number of attributes with a non-zero weight (None before fit)."""
        return self._fitted("num_attributes")

    @property
    def attributes_(self):
        """Attributes with a non-zero weight (None before fit)."""
        return self._fitted("attributes")

    @property
    def state_features_(self):
        """``{(attribute, label): weight}`` of the non-zero state weights (None before fit)."""
        return self._fitted("state_features")

    @property
    def transition_features_(self):
        """``{(label_from, label_to): weight}`` of the non-zero transition weights (None before fit)."""
        return self._fitted("transition_features")

    _classes = staticmethod(lambda m: list(m.labels))
    _num_attributes = staticmethod(lambda m: len(m.attributes))
    _attributes = staticmethod(lambda m: list(m.attributes))
    _state_features = staticmethod(lambda m: m.state_features())
    _transition_features = staticmethod(lambda m: m.transition_features())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        tags.target_tags.required = True
        return tags


def _check_labels(y, offsets, what):
    """``y`` as a list of label lists, one label per token of the matching sequence."""
    n = len(offsets) - 1
    if isinstance(y, (str, bytes)) or not hasattr(y, "__len__") or len(y) != n:
        raise ValueError(f"{what} must hold one label sequence per sequence of X ({n}), "
                         f"got {len(y) if hasattr(y, '__len__') else type(y).__name__}.")
    out = []
    for i, labels in enumerate(y):
        if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
            raise ValueError(f"{what}, sequence {i}: expected a list of labels, got {type(labels).__name__}.")
        if len(labels) != offsets[i + 1] - offsets[i]:
            raise ValueError(f"{what}, sequence {i}: {len(labels)} labels for {offsets[i + 1] - offsets[i]} tokens.")
        labels = list(labels)
        if not all(map(_label_or_partial, labels)):
            t = next(t for t, label in enumerate(labels) if not _label_or_partial(label))
            raise ValueError(f"{what}, sequence {i}, token {t}: label {labels[t]!r} is not hashable (labels must be "
                             "str, numbers or tuples; None or a set of labels for a partially labelled token).")
        out.append(labels)
    return out


def _label_or_partial(label):
    """A label, or a partial label (None: unknown; a set of the labels the token may take)."""
    if isinstance(label, (set, frozenset)):
        return all(map(_hashable, label))
    return _hashable(label)


def _encode(y, codes, what):
    """Label sequences as integer arrays; ValueError naming a label unseen in training."""
    out = []
    for i, labels in enumerate(y):
        try:
            out.append(np.array([codes[label] for label in labels], dtype=np.int64))
        except (KeyError, TypeError):
            unknown = [label for label in labels if label not in codes] if all(map(_hashable, labels)) else labels
            raise ValueError(f"{what}, sequence {i}: labels {unknown[:3]} do not occur in y.") from None
    return out


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _first_appearance(y):
    return list(dict.fromkeys(label for labels in y for label in labels))


def _marginal_dicts(marginals, labels):
    return [dict(zip(labels, row.tolist())) for row in marginals]
