"""DLPWClassifierCV: DLPWClassifier with C chosen by cross-validation along a warm-started path."""

import numbers

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import NotFittedError
from sklearn.metrics import check_scoring, get_scorer_names
from sklearn.model_selection import check_cv
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, indexable, validate_data

from .dlpw import DLPWClassifier, _as_2d_targets, _Model
from .oracles.lp import make_lp_graph
from .utils._params import atomic_fit, shared_constraints, store_init_params

__all__ = ["DLPWClassifierCV"]

class DLPWClassifierCV(ClassifierMixin, BaseEstimator):
    """:class:`DLPWClassifier` with ``C`` chosen by cross-validation, as ``LogisticRegressionCV``.

    On each training fold, the values of ``Cs`` are fitted in increasing order, each fit starting
    from the previous one's weights (rescaled by the square root of the ratio of the ``C`` values,
    see :func:`warm_start`), its dual messages and its place in the ``1/t`` step schedule, and
    scored on the held-out fold; ``C_`` is the value with the best mean score (the smaller on
    ties), refitted on all the data starting from the folds' fits at ``C_`` (their weights averaged,
    see :func:`refit_start`). On the training parts of yeast and scene (6 values, 3 folds) the
    whole search with the refit costs 0.67 and 0.58 plain fits on all the data per value of ``C``
    (0.92 and 0.63 with a refit from zero: the warm refit takes 32 epochs instead of 231 on yeast,
    14 instead of 52 on scene, to a bound no higher; ``benchmarks/product/bench_dlpw_cv_path.py``).

    Parameters
    ----------
    Cs : int or array-like of float, default=5
        The values of ``C`` (scikit-learn's meaning, see :class:`DLPWClassifier`), or their number
        on a log grid from 1e-4 to 1e-2.
    cv : int, cross-validation generator or iterable, default=3
        As in ``GridSearchCV`` (an int gives ``KFold`` for multi-label ``y``, ``StratifiedKFold``
        for one column).
    scoring : str, callable or None, default=None
        Scorer of the held-out folds; None is the estimator's ``score``, subset accuracy.
    refit : bool, default=True
        Refit on all the data with ``C_`` (then ``predict`` and the other methods use that fit),
        warm-started from the folds' fits at ``C_``.
    edges, label_sets, loss, n_inner, max_epochs, tol, n_iter_no_change, fit_intercept, dtype
        Passed to every :class:`DLPWClassifier` fit.
    n_jobs : int or None, default=None
        Joblib jobs over the folds (each fold's path is sequential).
    verbose : int, default=0
    random_state : int, RandomState instance or None, default=None
        Passed to the fits (used by ``order="shuffle"`` only; the path uses the cyclic order).

    Attributes
    ----------
    Cs_ : ndarray of shape (n_Cs,)
        The grid, increasing.
    C_ : float
        The chosen ``C``.
    scores_ : ndarray of shape (n_folds, n_Cs)
        Held-out score of every fold and ``C``.
    n_iter_ : ndarray of shape (n_folds, n_Cs)
        Epochs of every path fit.
    best_estimator_ : DLPWClassifier
        The refit (``refit=True``).
    classes_, n_features_in_
        As the refit's.

    See Also
    --------
    DLPWClassifier : the estimator fitted along the path.
    sklearn.linear_model.LogisticRegressionCV : the same idea for logistic regression.

    Examples
    --------
    >>> from sklearn_struct import DLPWClassifierCV
    >>> from sklearn_struct.datasets import make_multilabel_pairwise
    >>> X, Y = make_multilabel_pairwise(150, n_features=5, n_labels=4, noise=0.3, random_state=0)
    >>> clf = DLPWClassifierCV(Cs=[0.01, 0.1], max_epochs=200).fit(X, Y)
    >>> clf.scores_.shape, float(clf.C_) in (0.01, 0.1)
    ((3, 2), True)
    """

    _parameter_constraints = {
        "Cs": [Interval(numbers.Integral, 1, None, closed="left"), "array-like"],
        "cv": ["cv_object"],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        "refit": ["boolean"],
        "edges": ["array-like", StrOptions({"auto", "complete", "tree"}),
                  Interval(numbers.Integral, 0, None, closed="left"), None],
        "label_sets": [StrOptions({"auto", "train", "all"})],
        "loss": [StrOptions({"hamming", "subset"})],
        "n_inner": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
        "fit_intercept": ["boolean"],
        "dtype": [StrOptions({"float64", "float32"})],
        **shared_constraints("n_jobs", "verbose", "random_state"),
    }

    def __init__(self, *, Cs=5, cv=3, scoring=None, refit=True, edges="auto", label_sets="auto", loss="hamming", n_inner=10,
                 max_epochs=1000, tol=1e-3, n_iter_no_change=5, fit_intercept=True, dtype="float64", n_jobs=None,
                 verbose=0, random_state=None):
        store_init_params(self, locals())

    def _base(self, C):
        return DLPWClassifier(C=float(C), edges=self.edges, label_sets=self.label_sets, loss=self.loss, n_inner=self.n_inner,
                              max_epochs=self.max_epochs, tol=self.tol, n_iter_no_change=self.n_iter_no_change,
                              fit_intercept=self.fit_intercept, dtype=self.dtype, random_state=self.random_state)

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Score every ``C`` on every fold along warm-started paths, pick ``C_``, refit.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_labels)

        Returns
        -------
        self
        """
        if y is None:
            validate_data(self, X, y)  # raises scikit-learn's "requires y" error
        try:
            Cs = np.logspace(-4, -2, self.Cs) if isinstance(self.Cs, numbers.Integral) else np.asarray(self.Cs, float)
        except (ValueError, TypeError):
            raise ValueError(f"Cs must be a positive int or a non-empty 1D array of positive floats, got "
                             f"{self.Cs!r}.") from None
        if Cs.ndim != 1 or Cs.size == 0 or not np.all(np.isfinite(Cs)) or np.any(Cs <= 0):
            raise ValueError(f"Cs must be a positive int or a non-empty 1D array of positive floats, got {self.Cs!r}.")
        self.Cs_ = np.sort(Cs)
        X, y = indexable(X, y)
        Y, one_d = _as_2d_targets(y)
        cv = check_cv(self.cv, Y[:, 0] if one_d else Y, classifier=True)
        folds = list(cv.split(X, Y[:, 0] if one_d else Y))
        scorer = check_scoring(self._base(1.0), scoring=self.scoring)
        out = Parallel(n_jobs=self.n_jobs, verbose=self.verbose)(
            delayed(_path)(self, X, y, train, test, scorer) for train, test in folds)
        self.scores_ = np.array([o[0] for o in out])
        self.n_iter_ = np.array([o[1] for o in out])
        mean = self.scores_.mean(axis=0)
        self.C_ = float(self.Cs_[int(np.flatnonzero(mean >= mean.max() - 1e-12)[0])])
        if self.refit:
            best = self._base(self.C_)
            best._validate_params()
            k = int(np.flatnonzero(self.Cs_ == self.C_)[0])
            best._fit(X, y, warm=refit_start(best, y, [(o[2][k], o[3]) for o in out]))
            self.best_estimator_ = best
            self.classes_ = self.best_estimator_.classes_
            self.n_features_in_ = self.best_estimator_.n_features_in_
        return self

    def _fitted(self):
        check_is_fitted(self)
        if not self.refit:
            raise NotFittedError("DLPWClassifierCV(refit=False) has no fitted model: refit DLPWClassifier(C=C_), "
                                 "or fit with refit=True.")
        return self.best_estimator_

    def predict(self, X):
        """Labels of the refit model (see :meth:`DLPWClassifier.predict`)."""
        return self._fitted().predict(X)

    def predict_with_certificates(self, X):
        """See :meth:`DLPWClassifier.predict_with_certificates`."""
        return self._fitted().predict_with_certificates(X)

    def decision_function(self, X):
        """See :meth:`DLPWClassifier.decision_function`."""
        return self._fitted().decision_function(X)

    def predict_marginals(self, X):
        """See :meth:`DLPWClassifier.predict_marginals`."""
        return self._fitted().predict_marginals(X)

    def score(self, X, y, sample_weight=None):
        """Subset accuracy of the refit model (see :meth:`DLPWClassifier.score`)."""
        return self._fitted().score(X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = tags.classifier_tags.multi_label = True
        return tags


def warm_start(state, C_prev, C):
    """The start of the fit at ``C`` from the fit at ``C_prev``'s ``_warm_state`` ``(model, messages, steps)``.

    The weights are rescaled by ``sqrt(C / C_prev)``, the ratio of the radii of the balls Pegasos
    projects on, and the ``1/t`` schedule continues at the same step count with the same messages.
    Measured on the training parts of yeast and scene (6 values of C, 3 folds;
    ``benchmarks/product/bench_dlpw_cv_path.py``): rescaling by ``C / C_prev`` (unprojected Pegasos'
    iterate is ``-C`` times the mean of its subgradients) overshoots at large C (3.0 plain fits per
    C on scene), keeping the weights undershoots (1.0 on scene, held-out scores further from
    separate fits'), the square root costs 0.6-0.7. ``model`` is rescaled in place.
    """
    model, delta, steps = state
    model.state[0] *= (C / C_prev) ** 0.5
    return model, delta, steps


def _rows(a, idx):
    return a[idx] if hasattr(a, "shape") else [a[i] for i in idx]


def _path(cv_est, X, y, train, test, scorer):
    """One fold: fit the increasing ``Cs_`` with warm starts, score each on the held-out part."""
    Xtr, ytr, Xte, yte = _rows(X, train), _rows(np.asarray(y), train), _rows(X, test), _rows(np.asarray(y), test)
    warm, scores, epochs, weights = None, [], [], []
    for k, C in enumerate(cv_est.Cs_):
        est = cv_est._base(C)
        est._validate_params()
        est._fit(Xtr, ytr, warm=None if warm is None else warm_start(warm, cv_est.Cs_[k - 1], C),
                 keep_warm_state=True)
        warm, est._warm_state = est._warm_state, None
        scores.append(scorer(est, Xte, yte))
        epochs.append(est.n_iter_)
        weights.append((*warm[0].weights(), warm[2]))
    return scores, epochs, weights, (est._classes, est.edges_, len(train))


def refit_start(est, y, folds):
    """The warm start of the refit on all the data from the folds' fits at its ``C``, or None (cold).

    ``folds``: per fold, ``((W, P, steps), (classes, edges, n_train))`` from :func:`_path`. Each
    fold's weights are rescaled by ``sqrt(n / n_train)`` (the ratio of the radii of the balls
    Pegasos projects on, as in :func:`warm_start`) and averaged; an edge of the refit's graph takes
    the mean of its tables (and edge-feature weights) over the folds whose graph has it (learned
    graphs may differ), zero elsewhere. The ``1/t`` schedule starts at the folds' mean step count
    times ``n / n_train``, which keeps the folds' last step size ``C n / t``; the dual messages
    start at zero. Cold (None) when a fold saw other classes than the whole data (its state codes
    would mean other labels). Calls ``est``'s target encoding and graph (its ``fit`` redoes both).
    """
    Y = est._encode_fit_targets(y)
    edges = est._check_edges(Y)
    n = Y.shape[0]
    for (_, (classes, _, _)) in folds:
        if len(classes) != len(est._classes) or any(
                len(a) != len(b) or np.any(a != b) for a, b in zip(classes, est._classes)):
            return None
    graph = make_lp_graph(edges, est.n_states_, name="edges")
    S, nS, E = graph.max_states, graph.n_nodes * graph.max_states, len(edges)
    model = _Model(graph, folds[0][0][0].shape[0], est.edge_features)
    unary = np.zeros((model.V.shape[0], nS))
    edge_W = np.zeros((model.V.shape[0], E, S * S))
    P, count, steps = np.zeros_like(model.P), np.zeros(E), 0.0
    index = {(int(i), int(j)): e for e, (i, j) in enumerate(edges)}
    for (W, Pf, t), (_, fold_edges, n_train) in folds:
        scale = np.sqrt(n / n_train)
        unary += scale * W[:, :nS]
        fold_W = W[:, nS:].reshape(W.shape[0], -1, S * S)
        for f, (i, j) in enumerate(fold_edges):
            e = index.get((int(i), int(j)))
            if e is not None:
                P[e] += scale * Pf[f]
                if est.edge_features:
                    edge_W[:, e] += scale * fold_W[:, f]
                count[e] += 1
        steps += t * n / n_train / len(folds)
    share = 1.0 / np.maximum(count, 1)
    V = np.hstack([unary / len(folds)] + ([(edge_W * share[None, :, None]).reshape(len(unary), -1)]
                                          if est.edge_features else []))
    P *= share[:, None, None]
    model.V[:], model.P[:] = V, P
    model.refresh_norm()
    return model, 0.0, int(round(steps))
