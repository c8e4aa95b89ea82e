"""NonLocalCRF: a linear-chain CRF plus learned non-local energies, inferred by Bethe projections.

With ``energy=None`` this is a standard linear-chain CRF trained by L2-regularised
conditional maximum likelihood with L-BFGS (the same objective as CRFsuite).
"""

import numbers
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted
from joblib import effective_n_jobs

from ._chain_crf import ChainObjective, predict_unary
from .oracles.chain import forward_backward, viterbi
from .utils.optimize import lbfgs
from .utils.packing import unpack_sequences
from .utils.validation import check_sequence_labels, check_sequences

__all__ = ["NonLocalCRF"]


class NonLocalCRF(BaseEstimator):
    """Linear-chain CRF with optional learned non-local energies (Bethe projections).

    With ``energy=None`` the model is a standard linear-chain conditional random field:
    unary scores ``X @ W + b`` per token, a shared transition table ``A``, trained by
    minimising ``sum_i -log P(y_i | x_i) + c2 * (||W||^2 + ||A||^2)`` with L-BFGS. The
    gradient is exact (forward-backward in :mod:`sklearn_struct.oracles.chain`, parallel
    over sequences).

    Parameters
    ----------
    energy : None
        Non-local energy added to the CRF at inference time; None for a plain CRF.
    c2 : float, default=1.0
        L2 regularisation strength, as in CRFsuite (``c2 * ||theta||^2``).
    all_possible_states : bool, default=False
        With sparse features, create unary weights only for (attribute, label) pairs that
        occur in the training data (CRFsuite's default, far fewer parameters) when False,
        or for every pair when True. Dense features always use every pair.
    max_iter : int, default=100
        Maximum number of L-BFGS iterations for the base CRF.
    tol : float, default=1e-5
        Stop L-BFGS when the relative decrease of the objective falls below ``tol``.
    n_jobs : int, default=None
        Number of joblib jobs over chunks of sequences. ``None`` means one chunk, run by
        numba's own threads (fastest on one machine), unless a joblib ``parallel_config``
        context says otherwise (e.g. the dask backend to use a cluster).
    verbose : int, default=0
        Print the objective at each L-BFGS iteration when > 0.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels seen in ``fit``, sorted.
    coef_ : ndarray of shape (n_features, n_classes)
        Unary feature weights ``W`` (zero off the supported pairs).
    intercept_ : ndarray of shape (n_classes,)
        Per-label bias ``b``.
    transition_ : ndarray of shape (n_classes, n_classes)
        Transition log-potentials ``A[from, to]``.
    n_features_in_ : int
    n_iter_ : int
        L-BFGS iterations run.

    See Also
    --------
    sklearn_struct.oracles.chain.forward_backward : the marginal oracle.

    References
    ----------
    L. Vilnis, D. Belanger, D. Sheldon, A. McCallum. "Bethe Projections for Non-Local
    Inference." UAI 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct import NonLocalCRF
    >>> rng = np.random.RandomState(0)
    >>> X = [rng.normal(size=(5, 3)) for _ in range(20)]
    >>> y = [(x[:, 0] > 0).astype(int) for x in X]
    >>> crf = NonLocalCRF(c2=0.01).fit(X, y)
    >>> crf.score(X, y) > 0.9
    True
    """

    _parameter_constraints = {
        "energy": [None],
        "c2": [Interval(numbers.Real, 0, None, closed="left")],
        "all_possible_states": ["boolean"],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "n_jobs": [numbers.Integral, None],
        "verbose": ["verbose"],
    }

    def __init__(
        self, energy=None, *, c2=1.0, all_possible_states=False, max_iter=100, tol=1e-5, n_jobs=None, verbose=0
    ):
        self.energy = energy
        self.c2 = c2
        self.all_possible_states = all_possible_states
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the CRF on a list of sequences.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        y : list of array-like of shape (n_tokens_i,)
            Labels of each token; any hashable values.

        Returns
        -------
        self : NonLocalCRF
        """
        X, y = check_sequences(X, y)
        self.n_features_in_ = X[0].shape[1]
        self._label_encoder = LabelEncoder().fit(np.concatenate(y))
        self.classes_ = self._label_encoder.classes_
        y_enc = [self._label_encoder.transform(labels) for labels in y]
        self._fit_base_crf(X, y_enc)
        return self

    def _fit_base_crf(self, X, y_enc):
        L = len(self.classes_)
        n_jobs = effective_n_jobs(self.n_jobs)
        objective = ChainObjective(
            X, y_enc, L, self.c2, n_chunks=max(1, n_jobs), n_jobs=self.n_jobs,
            all_possible_states=self.all_possible_states,
        )
        theta0 = np.zeros(objective.n_params)
        start = time.perf_counter()

        def report(iteration, value, _):
            if self.verbose:
                elapsed = time.perf_counter() - start
                print(f"[NonLocalCRF] iter {iteration:4d}  objective {value:.6g}  ({elapsed:.1f} s)")

        result = lbfgs(objective, theta0, max_iter=self.max_iter, tol=self.tol, callback=report)
        if not result.success:
            warnings.warn(
                f"L-BFGS did not converge ({result.message}) after {result.nit} iterations; "
                "increase max_iter or tol.",
                ConvergenceWarning,
            )
        self.coef_, self.intercept_, self.transition_ = objective.split_params(result.x)
        self.n_iter_ = int(result.nit)
        self.objective_ = float(result.fun)

    # ---------------------------------------------------------------- prediction
    def _unary(self, X):
        """Validated, packed data and its unary scores under the base model."""
        check_is_fitted(self)
        X = check_sequences(X, n_features=self.n_features_in_)
        return predict_unary(X, self.coef_, self.intercept_)

    def predict(self, X):
        """Most likely label sequence of each input sequence (Viterbi).

        Returns
        -------
        y : list of ndarray of shape (n_tokens_i,)
        """
        data, unary = self._unary(X)
        labels, _ = viterbi(unary, self.transition_, data.offsets)
        return [self.classes_[part] for part in unpack_sequences(labels, data.offsets)]

    def predict_marginals(self, X):
        """Per-token label marginals.

        Returns
        -------
        marginals : list of ndarray of shape (n_tokens_i, n_classes)
            Columns follow ``classes_``.
        """
        data, unary = self._unary(X)
        _, node, _ = forward_backward(unary, self.transition_, data.offsets, edge_marginals="none")
        return unpack_sequences(node, data.offsets)

    def score(self, X, y):
        """Token accuracy of :meth:`predict` on ``X`` against ``y``."""
        y_pred = self.predict(X)
        y = check_sequence_labels(y, lengths=[len(p) for p in y_pred])
        return float(np.mean(np.concatenate(y_pred) == np.concatenate(y)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        return tags
