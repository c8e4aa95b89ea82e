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
from ._chain_crf_fit import check_solver_options, fit_chain_algorithm
from .oracles.chain import forward_backward, viterbi
from .utils._model_file import check_model_array, load_model_file, load_params, meta_number, save_model_file
from .utils._params import atomic_fit, shared_constraints, store_init_params
from .utils.packing import edge_offsets, unpack_sequences
from .utils.validation import check_sequences, encode_sequence_labels

__all__ = ["ChainCRF"]

_FORMAT = "sklearn_struct.ChainCRF"
_FORMAT_VERSION = 2  # 2: with a checksum; files of version 1 still load


class ChainCRF(ChainTagsMixin, BaseEstimator):
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
        "algorithm": [StrOptions({"lbfgs", "l2sgd", "ap", "pa", "arow"})],
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
        **shared_constraints("warm_start", "callback", "n_jobs", "verbose"),
    }

    def __init__(self, *, algorithm="lbfgs", c1=0.0, c2=1.0, max_iter=None, tol=1e-5, period=10, epsilon=1e-5,
                 all_possible_states=False, all_possible_transitions=True, min_freq=None, fit_intercept=True,
                 solver_options=None, warm_start=False, callback=None, n_jobs=None, verbose=0):
        store_init_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y, X_dev=None, y_dev=None):
        """Fit the CRF by ``algorithm``.

        Starts from zero, or with ``warm_start`` from the parameters of the previous fit.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        y : list of array-like of shape (n_tokens_i,)
            Labels of each token; any hashable values.
        X_dev, y_dev : like X and y, default=None
            A development set, evaluated after every iteration (see ``training_log_``).

        Returns
        -------
        self : ChainCRF
        """
        check_solver_options(self.algorithm, self.solver_options)
        if (X_dev is None) != (y_dev is None):
            raise ValueError("X_dev and y_dev must be given together (a development set), got only one of them.")
        progress, X, y_enc, previous = start_chain_fit(self, X, y)
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
        *fitted, self.training_log_ = fit_chain_algorithm(X, y_enc, len(self.classes_), self.get_params(),
                                                          previous=previous, progress=progress, dev=dev)
        self.coef_, self.intercept_, self.transition_, self.n_iter_, self.objective_ = fitted
        return self

    def _unary(self, X):
        check_is_fitted(self)
        X = check_sequences(X, n_features=self.n_features_in_)
        return predict_unary(X, self.coef_, self.intercept_)

    def predict(self, X):
        """Most likely label sequence of each sequence (Viterbi).

        Returns
        -------
        y : list of ndarray of shape (n_tokens_i,)
        """
        data, unary = self._unary(X)
        labels, _ = viterbi(unary, self.transition_, data.offsets)
        return [self.classes_[part] for part in unpack_sequences(labels, data.offsets)]

    def predict_marginals(self, X):
        """Per-token label marginals, columns in ``classes_`` order.

        Returns
        -------
        marginals : list of ndarray of shape (n_tokens_i, n_classes)
        """
        data, unary = self._unary(X)
        _, node, _ = forward_backward(unary, self.transition_, data.offsets, edge_marginals="none")
        return unpack_sequences(node, data.offsets)

    def predict_edge_marginals(self, X):
        """Marginals of consecutive label pairs: ``P(y_t = a, y_{t+1} = b | x)``.

        Returns
        -------
        marginals : list of ndarray of shape (n_tokens_i - 1, n_classes, n_classes)
        """
        data, unary = self._unary(X)
        _, _, edge = forward_backward(unary, self.transition_, data.offsets, edge_marginals="per_position")
        return unpack_sequences(edge, edge_offsets(data.offsets))

    def score(self, X, y):
        """Token accuracy of :meth:`predict` on ``X`` against ``y``."""
        return token_score(self.predict(X), y)

    # ------------------------------------------------------------------ save / load
    def save(self, path):
        """Write the fitted model to one ``.npz`` file that loads without pickle.

        The file holds the arrays ``coef``, ``intercept``, ``transition`` and ``classes``
        (numbers or strings) and ``meta``: a JSON string with the format name and version,
        the constructor parameters (those that are JSON values), ``n_features_in_``,
        ``n_iter_``, ``objective_`` and a SHA-256 checksum over all of it. Any NumPy-reading
        tool can use it. The file is written to a temporary file beside ``path`` and renamed
        over it once complete: a full disk or an interruption leaves an existing ``path`` intact.

        Parameters
        ----------
        path : str or path-like
        """
        check_is_fitted(self)
        classes = np.asarray(self.classes_)
        if classes.dtype.kind not in "biufU":
            raise ValueError(
                f"save needs labels that are numbers or strings; classes_ has dtype {classes.dtype}."
            )
        params = {k: getattr(v, "item", lambda: v)()  # NumPy scalars as Python numbers
                  for k, v in self.get_params().items() if _is_json_value(v)}
        meta = {"params": params, "n_features_in_": int(self.n_features_in_), "n_iter_": int(self.n_iter_),
                "objective_": float(self.objective_)}
        arrays = {"coef": self.coef_, "intercept": self.intercept_, "transition": self.transition_, "classes": classes}
        save_model_file(path, _FORMAT, _FORMAT_VERSION, arrays, meta)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`, checked like :meth:`fit` checks its input.

        Parameters
        ----------
        path : str or path-like

        Returns
        -------
        model : ChainCRF

        Raises
        ------
        ValueError
            Naming the file and what is wrong: empty, truncated or not a model file, a bad
            checksum (changed bytes), parameters ``fit`` would refuse, arrays of the wrong
            shape or dtype, non-finite values.
        """
        arrays, meta = load_model_file(path, _FORMAT, _FORMAT_VERSION)
        model = load_params(path, cls, meta)
        n_features = meta_number(path, meta, "n_features_in_", "int", 1)
        classes = check_model_array(path, arrays, "classes", (None,), kinds="biufU")
        if classes.size == 0 or not np.array_equal(np.unique(classes), classes):
            raise ValueError(f"{path}: classes must be non-empty, sorted and distinct, got {classes.tolist()[:10]}.")
        L = len(classes)
        model.coef_ = check_model_array(path, arrays, "coef", (n_features, L))
        model.intercept_ = check_model_array(path, arrays, "intercept", (L,))
        model.transition_ = check_model_array(path, arrays, "transition", (L, L))
        model.classes_, model.n_features_in_ = classes, n_features
        model.n_iter_ = meta_number(path, meta, "n_iter_", "int", 0)
        model.objective_ = meta_number(path, meta, "objective_", "float", None)
        return model


def _encode_dev(classes, y_dev):
    """Label indices of the development labels (ValueError naming a sequence with a label unseen in training)."""
    encoder = LabelEncoder()
    encoder.classes_ = classes
    try:
        return encode_sequence_labels(encoder, y_dev)
    except ValueError as exc:
        raise ValueError(f"y_dev: {exc}") from None


def _is_json_value(value):
    return value is None or isinstance(value, (bool, numbers.Integral, numbers.Real, str))
