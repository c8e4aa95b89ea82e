"""ChainCRF: the plain linear-chain CRF, a drop-in for sklearn-crfsuite users.

The model and its training live in :mod:`sklearn_struct._chain_crf` (shared with
:class:`~sklearn_struct.NonLocalCRF`, whose base model is this CRF); the recursions in
:mod:`sklearn_struct.oracles.chain`.
"""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ._chain_crf import ChainTagsMixin, fit_chain_crf, predict_unary, start_chain_fit, token_score
from .oracles.chain import forward_backward, viterbi
from .utils._model_file import check_model_array, load_model_file, load_params, meta_number, save_model_file
from .utils._params import atomic_fit, shared_constraints, store_init_params
from .utils.packing import edge_offsets, unpack_sequences
from .utils.validation import check_sequences

__all__ = ["ChainCRF"]

_FORMAT = "sklearn_struct.ChainCRF"
_FORMAT_VERSION = 2  # 2: with a checksum; files of version 1 still load


class ChainCRF(ChainTagsMixin, BaseEstimator):
    """Linear-chain conditional random field trained by L-BFGS (the CRFsuite objective).

    Unary scores ``X @ W + b`` per token and a transition table ``A[from, to]``, trained by
    minimising ``sum_i -log P(y_i | x_i) + c2 * (||W||^2 + ||A||^2)`` (the bias is not
    penalised) with exact gradients from forward-backward, parallel over sequences.
    With sparse features only the (attribute, label) pairs seen in training get a weight, as
    in CRFsuite; ``all_possible_states=True`` gives every pair one.

    From sklearn-crfsuite: keep your token feature dicts and put
    :class:`~sklearn_struct.preprocessing.SequenceVectorizer` in front,
    ``make_pipeline(SequenceVectorizer(), ChainCRF(c2=0.1))``.

    Parameters
    ----------
    c2 : float, default=1.0
        L2 regularisation strength, as in CRFsuite (``c2 * ||theta||^2``).
    all_possible_states : bool, default=False
        With sparse features, weights for every (attribute, label) pair (True) or only for
        the pairs that occur in the training data (False, CRFsuite's default).
    max_iter : int, default=100
        Maximum number of L-BFGS iterations.
    tol : float, default=1e-5
        Stop when the relative decrease of the objective falls below ``tol``.
    warm_start : bool, default=False
        Start the next ``fit`` (same features and labels) from the fitted parameters: continued
        training, e.g. ``max_iter`` more iterations.
    callback : callable or None, default=None
        Called after every L-BFGS iteration as ``callback(iteration, objective, seconds)``;
        returning True stops training there (no convergence warning is raised then).
    n_jobs : int, default=None
        Number of joblib jobs over chunks of sequences (one chunk, threaded inside, when None).
    verbose : int, default=0
        Print one line per iteration (objective and elapsed seconds) when > 0.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_features, n_classes)
    intercept_ : ndarray of shape (n_classes,)
    transition_ : ndarray of shape (n_classes, n_classes)
        Transition log-potentials ``A[from, to]``.
    n_features_in_ : int
    n_iter_ : int
        L-BFGS iterations of the last fit.
    objective_ : float
        Final value of the regularised objective.

    See Also
    --------
    NonLocalCRF : this CRF plus learned non-local energies.
    sklearn_struct.preprocessing.SequenceVectorizer : token feature dicts to sparse sequences.

    References
    ----------
    J. Lafferty, A. McCallum, F. Pereira. "Conditional Random Fields: Probabilistic Models for
    Segmenting and Labeling Sequence Data." ICML 2001.

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
        "c2": [Interval(numbers.Real, 0, None, closed="left")],
        "all_possible_states": ["boolean"],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        **shared_constraints("warm_start", "callback", "n_jobs", "verbose"),
    }

    def __init__(self, *, c2=1.0, all_possible_states=False, max_iter=100, tol=1e-5, warm_start=False,
                 callback=None, n_jobs=None, verbose=0):
        store_init_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Fit the CRF by L-BFGS.

        Minimises the penalised negative log-likelihood from zero, or with ``warm_start`` from
        the parameters of the previous fit.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        y : list of array-like of shape (n_tokens_i,)
            Labels of each token; any hashable values.

        Returns
        -------
        self : ChainCRF
        """
        progress, X, y_enc, previous = start_chain_fit(self, X, y)
        fitted = fit_chain_crf(X, y_enc, len(self.classes_), c2=self.c2, max_iter=self.max_iter, tol=self.tol,
                               all_possible_states=self.all_possible_states, n_jobs=self.n_jobs,
                               previous=previous, progress=progress)
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


def _is_json_value(value):
    return value is None or isinstance(value, (bool, numbers.Integral, numbers.Real, str))
