"""DLPWClassifier: structured learning with LP relaxations through dual losses (Meshi et al. 2010).

The estimator learns a pairwise model over the labels (columns of ``y``) by minimising the
structured hinge loss with the loss-augmented MAP replaced by its LP relaxation over the local
polytope (eq. 7), written through the LP dual as a joint objective in the weights and one set of
dual messages per sample (eq. 9). Algorithm 1 alternates, sample by sample, ``n_inner`` star
(MPLP-type) block-coordinate passes on that sample's stored messages with a projected Pegasos
step on the weights; the kernels live in :mod:`sklearn_struct.oracles.lp` and
:mod:`sklearn_struct.oracles.lp_learning`.
"""

import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight, check_consistent_length, check_is_fitted, validate_data

from .oracles.lp import (
    conditional_scores,
    lp_map,
    make_lp_graph,
    max_marginals,
    primal_values,
    pseudo_marginals,
)
from ._dlpw_graph import learned_edges
from ._dlpw_model import _augment, _edge_unary, _epoch, _Model, _unary, objective_eq7, objective_eq9
from ._dlpw_sets import (auto_label_sets, best_sets, distinct_label_sets, missing_mass, set_max_marginals,
                         sets_objective)
from ._dlpw_subset import n_witness_messages, uses_witness, witness_epoch, witness_objective
from .oracles.lp_learning import sets_epoch
from .oracles._lp_fast import forest_schedule
from .utils._params import atomic_fit, shared_constraints, store_init_params
from .utils.parallel import even_chunks, run_chunks
from .utils.shards import n_shards
from .utils.progress import Progress

__all__ = ["DLPWClassifier"]

# edges="auto": the complete graph up to this many labels, the Chow-Liu tree above
# (benchmarks/product/bench_dlpw_edges_rule.py)
AUTO_COMPLETE_MAX_LABELS = 15


class DLPWClassifier(ClassifierMixin, BaseEstimator):
    """Pairwise structured classifier trained by DLPW (Dual Loss Primal Weights).

    The labels ``y_1..y_d`` (the columns of ``y``) form a pairwise model scored by
    ``sum_i x . w_i[y_i] + sum_{ij in E} w_ij[y_i, y_j]`` (the paper's overcomplete
    representation: one weight vector per label and state, plus an intercept, and one free table
    per edge). Training minimises ``1/2 ||w||^2 + C sum_m LP-hinge_m(w)`` where the loss-augmented
    MAP (normalised Hamming loss) is relaxed to the local polytope, by Algorithm 1 of the paper:
    for each sample in turn, ``n_inner`` passes of star updates on the sample's stored dual
    messages (warm-started from its previous visit), then a Pegasos step of size ``1/t`` with
    ``lambda = 1/(C n)`` and projection onto the ball of radius ``sqrt(C n)``. On an acyclic label
    graph (``edges="tree"``, or a forest given in ``edges``) the local polytope is tight: each visit
    then solves the loss-augmented MAP exactly by max-product (two passes over the tree; the limit
    of many star passes), no messages are stored, and the stopping rule watches eq. 7 itself. A
    step updates only the weights of the labels whose loss-augmented maximiser differs from the
    truth (the averaged iterate is kept lazily), so its cost grows with the mistakes, not with
    ``n_features * n_labels``.

    ``C`` has scikit-learn's meaning: it multiplies the *summed* loss, as in ``LinearSVC`` and
    ``LogisticRegression``, so the same ``C`` regularises alike whatever the number of samples
    (the paper's ``C`` on the mean loss is ``C * n_samples``). Standardise ``X`` first
    (``make_pipeline(StandardScaler(), DLPWClassifier())``): the Pegasos steps converge slowly on
    features of very different scales.

    Two modes:

    * multi-label (``y`` a 0/1 indicator matrix with two or more columns): binary labels on a
      graph given by ``edges`` (by default all pairs up to 15 labels, the Chow-Liu tree above),
      ``classes_ = [0, 1]``;
    * general: ``y`` columns with any labels (multi-output multi-class, encoded per column),
      ``n_states`` states per column (inferred, or given with ``y`` coded ``0..n_states-1``), edges
      given by ``edges`` (default as above). A single column is a one-node model (then the method
      is a multi-class SVM trained by Pegasos).

    Prediction (``label_sets="train"``, the default's choice unless many training label sets occur
    once) returns the best-scoring label set among those seen in training, exactly. With
    ``label_sets="all"`` it solves the LP relaxation of MAP by star
    updates from zero messages until the dual bound meets the score of the decoded labelling (a
    certificate of optimality) or stops decreasing; uncertified labellings are improved by ICM.

    Memory: the messages take ``n_samples * 2 * n_edges * S`` floats (``S`` = largest number of
    states), e.g. 2 * 91 * 2 * 1500 = 546,000 for yeast; ``dtype="float32"`` halves that. Acyclic
    graphs (and ``loss="subset"``, ``edge_features=True``, which score the training label sets
    exactly) store none. ``loss="subset", label_sets="all"`` stores ``n_samples * (2 * n_edges +
    n_labels) * S`` on a graph with cycles (the witness adds one message per label: 588,000 for
    yeast), none on a forest (its loss-augmented MAP is solved exactly).

    Parameters
    ----------
    C : float, default=0.001
        Weight of the summed loss, as in ``LinearSVC``: the objective is
        ``1/2 ||w||^2 + C sum_m loss_m`` (eq. 7 with the paper's ``C`` equal to ``C * n_samples``).
        The default is chosen by 3-fold CV subset accuracy on the training parts of yeast and scene
        and on two generated sets (``benchmarks/product/bench_dlpw_default_c.py``); on standardised
        features. :class:`DLPWClassifierCV` chooses it by cross-validation.
    edges : array-like of shape (n_edges, 2), "auto", "complete", "tree", int or None, default="auto"
        Label graph over the columns of ``y``; None or "complete" means all pairs (``L (L - 1) / 2``
        edges for ``L`` labels). Learned from the training labels: ``"tree"``, the Chow-Liu tree
        (maximum spanning tree of the labels' pairwise mutual information, ``L - 1`` edges); an
        integer ``k``, the ``k`` pairs of largest mutual information. Sparse graphs make an epoch's
        cost grow with ``L`` instead of ``L^2``. ``"auto"``: the complete graph up to
        ``15`` labels (105 edges), the Chow-Liu tree above. By 3-fold CV on training data
        (``benchmarks/product/bench_dlpw_edges_rule.py``) the complete graph gains 0.010 / 0.007
        subset accuracy on yeast (14 labels) / scene (6) for 5x / 3x the tree's CPU, and nothing on
        generated sets of 10 to 50 labels, where it costs 24x (10 labels) to 190x (50 labels) the tree's.
    n_states : int, array-like of shape (n_labels,) or None, default=None
        States per label. None infers them from ``y``; if given, ``y`` must hold integer codes
        ``0 <= y[:, l] < n_states[l]``.
    n_inner : int, default=10
        Star-update passes per sample visit (R in the paper); unused on an acyclic graph, whose
        loss-augmented MAP is solved exactly.
    max_epochs : int, default=1000
        Most passes over the training set (as ``SGDClassifier``'s ``max_iter``; fits stop on ``tol``
        first: on yeast and scene after 60 to 540 epochs at the defaults).
    tol : float, default=1e-3
        Stop when ``n_iter_no_change`` epochs in a row lower the eq. 9 bound by less than ``tol``
        times its best value (the rule of scikit-learn's ``SGDClassifier``, relative); ``tol=0``
        runs all ``max_epochs`` without a convergence warning.
    n_iter_no_change : int, default=5
        Epochs without sufficient decrease before stopping.
    order : {"cyclic", "shuffle"}, default="cyclic"
        Sample order in each epoch (the paper's convergence proof assumes cyclic).
    average : bool, default=True
        Output (and test for convergence) the average of the weights over each epoch's Pegasos
        steps, the iterate Pegasos' convergence guarantee is stated for, instead of the last
        step's weights (``False``: the paper's Algorithm 1 as printed). The last iterate of the
        ``1/t`` steps oscillates by ``O(C n ||x|| / t)``: on raw (unscaled) features it stays far
        from the optimum for hundreds of epochs.
    fit_intercept : bool, default=True
        Add a constant feature (its weights are regularised like the others).
    dtype : {"float64", "float32"}, default="float64"
        Storage type of the dual messages.
    track_objective : bool, default=False
        Also compute the exact eq. 7 objective after each epoch (LP solved to convergence for
        every sample; costs more than an epoch).
    label_sets : {"auto", "train", "all"}, default="auto"
        The labellings :meth:`predict` chooses from. ``"train"``: the distinct rows of the training
        ``y`` (the best one under the model is found exactly by scoring them all, ``O(K L)`` per
        sample for ``K`` distinct rows), as label powerset does, while every set shares the pairwise
        model's weights: on yeast and scene this raises test subset accuracy by 0.02-0.14 over the
        LP-MAP (``benchmarks/peers/bench_dlpw_multilabel.py``); a label set never seen in training
        (e.g. the empty set when every training sample has a label) is never predicted.
        ``"all"``: any labelling, by the LP relaxation of MAP (below). ``"auto"``: ``"all"`` when the
        Good-Turing estimate of the probability that a new sample's label set was never seen in
        training, the share of training samples whose label set occurs exactly once
        (``missing_mass_``), exceeds 0.3, else ``"train"``. In 3-fold CV on training data only
        (``benchmarks/product/bench_dlpw_label_sets_rule.py``), ``"train"`` wins below a missing mass
        of 0.06 (scene 0.002: subset accuracy 0.668 against 0.508; yeast 0.04: 0.172 against 0.148,
        equal Hamming loss), the two tie from 0.1 to 0.45, and ``"all"`` wins on Hamming loss above
        0.5 (a generated 50-label set whose training label sets are all distinct: 0.206 against
        0.260); the thresholds from 0.06 to 0.5 are all within 5e-4 of the best on both, 0.3 is their
        middle. ``edge_features=True`` is defined over the training label sets: ``"auto"`` then
        always picks ``"train"`` (``"all"`` raises). With ``loss="subset"`` the choice is made before
        training and decides how the loss is trained (over the training sets, or through the LP). :meth:`decision_function` follows the choice
        (``label_sets_mode_``); :meth:`predict_marginals` always describes the LP relaxation.
    loss : {"hamming", "subset"}, default="hamming"
        The loss in the structured hinge. ``"hamming"``: the normalised Hamming loss, with the
        loss-augmented MAP relaxed to the local polytope and trained by DLPW (the paper's method).
        ``"subset"``: the 0/1 loss of the whole label set (what subset accuracy scores). With
        ``label_sets="train"`` its loss-augmented MAP runs exactly over the training label sets
        (Pegasos steps without dual messages, :func:`~sklearn_struct.oracles.lp_learning.sets_epoch`,
        ``O(K (L + n_edges))`` per step): on scene it raises test subset accuracy from 0.656 to
        0.696 at ``C = 0.001``; on yeast (198 label sets, 14 labels) it lowers it and costs 0.03
        Hamming loss. With ``label_sets="all"`` it is trained by DLPW over every labelling: the
        0/1 loss is a witness node joined to every label (``max_i [y_i != y*_i]`` as a pairwise
        model), so the loss-augmented MAP stays an LP over the local polytope (its relaxed loss is
        ``min(1, sum_i mu_i(wrong))``) and each sample's dual messages get one more per label
        (:mod:`sklearn_struct.oracles._lp_subset`). Against the Hamming loss with the same LP-MAP
        decoding it raises test subset accuracy on scene (0.536 against 0.518, tuned 0.561) and
        lowers it on yeast (0.169 against 0.190, Hamming 0.229 against 0.197); decoding over the
        training sets (the default's choice on both) is ahead of both
        (``benchmarks/peers/bench_dlpw_multilabel.py``).
    edge_features : bool, default=False
        Pairwise potentials that depend on the input: each edge's table becomes
        ``pairwise_[e] + x . edge_coef_[e]`` (one weight vector per edge and pair of states, as the
        paper's framework allows: ``f_ij(y_i, y_j, x)``). The LP oracle takes one table per edge for
        all samples, so the model is trained and decoded over the training label sets (needs
        ``label_sets="train"``; with ``loss="hamming"`` the Hamming loss is then exact over the sets
        too). Adds ``n_edges * S^2 * n_features`` weights: use it with a sparse graph
        (``edges="tree"``) when there are many labels.
    predict_max_iter : int, default=1000
        Most star passes per sample at prediction (``label_sets="all"``).
    predict_tol : float, default=1e-6
        Relative duality gap under which a prediction is certified optimal.
    n_jobs : int or None, default=None
        Joblib jobs for LP-MAP prediction (chunks of samples; numba threads within each chunk),
        including the certificates of the training set at the end of ``fit``. Training steps are
        sequential by nature (each Pegasos step uses the weights of the previous one).
    callback : callable or None, default=None
        Called after every epoch as ``callback(epoch, bound, seconds)`` with the eq. 9 bound
        and the training seconds (evaluation excluded) of ``objective_curve_``; returning True
        stops training there (no convergence warning is raised then).
    verbose : int, default=0
        Print one line per epoch: the eq. 9 bound, the eq. 7 objective (with
        ``track_objective``) and the training seconds.
    random_state : int, RandomState instance or None, default=None
        Used by ``order="shuffle"``.

    Attributes
    ----------
    classes_ : ndarray or list of ndarray
        ``[0, 1]`` in multi-label mode, the classes of the single column, or one array per column.
    coef_ : ndarray of shape (n_labels, S, n_features)
        Unary weights per label and state.
    intercept_ : ndarray of shape (n_labels, S)
    pairwise_ : ndarray of shape (n_edges, S, S)
        Edge tables, ``pairwise_[e, a, b]`` for ``y[edges_[e, 0]] = a, y[edges_[e, 1]] = b``.
    edges_ : ndarray of shape (n_edges, 2)
    n_states_ : ndarray of shape (n_labels,)
    n_iter_ : int
        Epochs run.
    n_steps_ : int
        Pegasos steps taken.
    objective_curve_ : ndarray of shape (``n_iter_``, 4)
        Per epoch: epoch, training seconds (evaluation excluded), eq. 9 bound with the current
        messages, exact eq. 7 objective (NaN unless ``track_objective``), both at the weights the
        epoch outputs (its average with ``average=True``).
    certified_ : ndarray of shape (n_samples,), bool
        Whether the prediction for each training sample is certified optimal (always with
        ``label_sets="train"``: the decoding is exact).
    edge_coef_ : ndarray of shape (n_edges, S, S, n_features) or None
        The edge-feature weights (``edge_features=True``); their intercepts are in ``pairwise_``.
    label_sets_ : ndarray of shape (n_sets, n_labels) or None
        The distinct training label sets predictions choose from (``label_sets_mode_ == "train"``).
    label_sets_mode_ : {"train", "all"}
        The decoding used: ``label_sets``, or the choice of ``"auto"``.
    missing_mass_ : float
        Share of training samples whose label set occurs once (the estimated probability that a new
        sample's label set was never seen in training; ``label_sets="auto"``'s criterion).
    n_certified_ : int
    n_features_in_ : int

    See Also
    --------
    sklearn.multioutput.ClassifierChain : a probabilistic chain of independent classifiers.

    References
    ----------
    Meshi, O., Sontag, D., Jaakkola, T., Globerson, A. "Learning efficiently with approximate
    inference via dual losses." ICML 2010.

    Examples
    --------
    >>> from sklearn_struct import DLPWClassifier
    >>> from sklearn_struct.datasets import make_multilabel_pairwise
    >>> X, Y = make_multilabel_pairwise(200, n_features=5, n_labels=4, noise=0.2, random_state=0)
    >>> clf = DLPWClassifier(C=0.5, max_epochs=50, tol=0).fit(X, Y)
    >>> clf.predict(X[:3]).shape
    (3, 4)
    >>> bool(clf.score(X, Y) > 0.6), clf.n_certified_
    (True, 200)
    """

    _parameter_constraints = {
        "C": [Interval(numbers.Real, 0, None, closed="neither")],
        "edges": ["array-like", StrOptions({"auto", "complete", "tree"}),
                  Interval(numbers.Integral, 0, None, closed="left"), None],
        "n_states": ["array-like", Interval(numbers.Integral, 1, None, closed="left"), None],
        "n_inner": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
        "order": [StrOptions({"cyclic", "shuffle"})],
        "average": ["boolean"],
        "fit_intercept": ["boolean"],
        "dtype": [StrOptions({"float64", "float32"})],
        "track_objective": ["boolean"],
        "label_sets": [StrOptions({"auto", "train", "all"})],
        "loss": [StrOptions({"hamming", "subset"})],
        "edge_features": ["boolean"],
        "predict_max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "predict_tol": [Interval(numbers.Real, 0, None, closed="left")],
        **shared_constraints("n_jobs", "callback", "verbose", "random_state"),
    }

    def __init__(self, *, C=0.001, edges="auto", n_states=None, n_inner=10, max_epochs=1000, tol=1e-3, n_iter_no_change=5,
                 order="cyclic", average=True, fit_intercept=True, dtype="float64", track_objective=False,
                 label_sets="auto", loss="hamming", edge_features=False,
                 predict_max_iter=1000, predict_tol=1e-6, n_jobs=None, callback=None, verbose=0, random_state=None):
        store_init_params(self, locals())

    # ------------------------------------------------------------------ fit

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Learn the pairwise model by Algorithm 1 (DLPW).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_labels)

        Returns
        -------
        self
        """
        return self._fit(X, y)

    def _fit(self, X, y, warm=None, keep_warm_state=False):
        """``fit``'s body. ``warm = (model, messages, t0)`` (from a fit on the same samples with
        ``keep_warm_state``, :class:`DLPWClassifierCV`'s path) starts from those weights and messages
        instead of zeros, ``t0`` steps into the ``1/t`` schedule; ``keep_warm_state`` stores them as
        ``_warm_state``."""
        if y is None:
            validate_data(self, X, y)  # raises scikit-learn's "requires y" error
        if self.edge_features and self.label_sets == "all":
            raise ValueError("edge_features=True trains over the training label sets: it needs label_sets='train' "
                             "(or 'auto', which then picks it); loss='subset' with label_sets='all' trains through "
                             "the loss-augmented LP.")
        Y = self._encode_fit_targets(y)
        X = self._check_X(X, reset=True)
        if X.shape[0] != Y.shape[0]:
            raise ValueError(f"X has {X.shape[0]} samples but y has {Y.shape[0]}.")
        self.edges_ = self._check_edges(Y)
        self.missing_mass_ = missing_mass(Y)
        # decided before training: loss="subset" trains over the training sets or through the LP accordingly
        self.label_sets_mode_ = self.label_sets if self.label_sets != "auto" else \
            auto_label_sets(Y, needs_sets=bool(self.edge_features))
        graph = make_lp_graph(self.edges_, self.n_states_, name="edges")
        self._graph = graph
        Xa = _augment(X, self.fit_intercept)
        model = _Model(graph, Xa.shape[1], self.edge_features)
        # no messages: the sets are scored exactly, or the tree's loss-augmented MAP is solved exactly
        self._forest = None if self._train_over_sets() else forest_schedule(graph.edges, graph.n_nodes)
        n_msg = 0 if self._train_over_sets() or self._forest is not None else 2 * graph.n_edges
        if uses_witness(self) and n_msg:  # the subset loss's witness: one more message per label
            n_msg = n_witness_messages(graph)
        delta = np.zeros((Y.shape[0], n_msg, graph.max_states), dtype=np.dtype(self.dtype))
        t0 = 0
        if warm is not None:
            wmodel, wdelta, t0 = warm
            model.V[:], model.P[:] = wmodel.weights()
            model.refresh_norm()
            delta[:] = wdelta
        self.objective_curve_, self.n_iter_, self.n_steps_, model = self._train(Xa, Y, model, delta, t0)
        self.n_steps_ -= t0
        self._warm_state = (model, delta, t0 + self.n_steps_) if keep_warm_state else None
        self._set_weights(model)
        self._sets = distinct_label_sets(Y) if self.label_sets_mode_ == "train" else None
        self.label_sets_ = None if self._sets is None else self._decode_labels(self._sets)
        # decoding over the training sets is exact: every prediction is certified, none is decoded here
        certified = self._predict_codes(Xa)[1] if self._sets is None else np.ones(Y.shape[0], dtype=bool)
        self.certified_ = certified
        self.n_certified_ = int(certified.sum())
        return self

    def _train_over_sets(self):
        return (self.loss == "subset" and not uses_witness(self)) or bool(self.edge_features)

    def _train(self, Xa, Y, model, delta, t0=0):
        rng = check_random_state(self.random_state)
        n = Y.shape[0]
        C = float(self.C) * n  # the paper's C, on the mean loss
        loss_weight = 1.0 / Y.shape[1]
        g = model.graph
        curve, seconds, t, best, stale = [], 0.0, t0, np.inf, 0
        over_sets = self._train_over_sets()
        witness = uses_witness(self)
        if over_sets:  # the loss-augmented MAP over the training label sets, exact
            sets, target = np.unique(Y, axis=0, return_inverse=True)
            target = target.ravel().astype(np.int64)
        converged = False
        progress = Progress(type(self).__name__, self.verbose, self.callback, unit="epoch", objective="eq9 bound")
        for epoch in range(1, self.max_epochs + 1):
            order = rng.permutation(n) if self.order == "shuffle" else np.arange(n)
            start = time.perf_counter()
            sums = (np.zeros_like(model.V), np.zeros_like(model.P)) if self.average else None
            if over_sets:
                t = sets_epoch(order.astype(np.int64), t, C, self.loss, Xa.indptr, Xa.indices, Xa.data, target,
                               sets, model.V, model.P, model.state, g.edges, g.n_states, average=sums,
                               check_input=False)
            elif witness:
                t = witness_epoch(order, t, C, self.n_inner, Xa, Y, model, delta, sums, self._forest)
            else:
                t = _epoch(order, t, C, int(self.n_inner), loss_weight, Xa, Y, model, g, delta, self._forest, sums)
            seconds += time.perf_counter() - start
            model.refresh_norm()
            out = model.averaged(*sums, n) if self.average else model
            bound = (sets_objective(*out.weights(), Xa, g.edges, target, sets, C, self.loss == "subset") if over_sets
                     else witness_objective(out, _unary(Xa, out.weights()[0], g), Y, delta, C, forest=self._forest)
                     if witness
                     else objective_eq9(out, Xa, Y, delta, C, loss_weight, self._forest))
            if not np.isfinite(bound):
                raise ValueError(f"DLPW: the training scores are not finite at epoch {epoch} (largest |x| = "
                                 f"{np.abs(Xa.data).max():.3g}, C={self.C!r}): the features or C overflow float64; "
                                 "rescale X or lower C.")
            exact = np.nan if not self.track_objective else bound if over_sets or self._forest is not None else \
                witness_objective(out, _unary(Xa, out.weights()[0], g), Y, delta, C, exact=True) if witness else \
                objective_eq7(out, Xa, Y, delta, C, loss_weight)
            curve.append((epoch, seconds, bound, exact))
            if progress(epoch, bound, seconds, **({"eq7": exact} if self.track_objective else {})):
                break
            stale = stale + 1 if bound > best - self.tol * abs(best) else 0
            best = min(best, bound)
            if stale >= self.n_iter_no_change and self.tol > 0:
                converged = True
                break
        if not converged and not progress.stopped and self.tol > 0:
            warnings.warn(f"DLPW did not converge in {self.max_epochs} epochs (tol={self.tol}); "
                          "increase max_epochs.", ConvergenceWarning)
        return np.array(curve, dtype=np.float64).reshape(-1, 4), epoch, t, out

    # ------------------------------------------------------------------ predict

    def predict(self, X):
        """LP-MAP labels (decoded from the converged dual, ICM where the LP is not tight).

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_labels)
        """
        return self.predict_with_certificates(X)[0]

    def predict_with_certificates(self, X):
        """Predicted labels and whether each is certified optimal (dual bound == its score).

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_labels)
        certified : ndarray of shape (n_samples,), bool
        """
        check_is_fitted(self)
        Xa = _augment(self._check_X(X, reset=False), self.fit_intercept)
        labels, certified = self._predict_codes(Xa)
        return self._decode_labels(labels), certified

    def decision_function(self, X):
        """Max-marginal score differences, consistent with :meth:`predict`.

        For label ``i`` and state ``a``, ``M_i(a)`` estimates ``max {score(y) : y_i = a}``: the
        prediction's score for its own state; for other states the LP dual bound with ``y_i``
        clamped (:func:`~sklearn_struct.oracles.lp.max_marginals`) where the prediction is certified
        (then both are exact or upper bounds, and never above the prediction's score), else the
        score of the prediction with ``y_i`` changed (ICM leaves no improving change).

        Returns
        -------
        scores : ndarray
            ``M_i(1) - M_i(0)`` of shape (n_samples, n_labels) in multi-label mode, of shape
            (n_samples,) for one binary column, ``M(a)`` of shape (n_samples, n_classes) for one
            multi-class column, else a list of (n_samples, n_states[l]) arrays.
        """
        check_is_fitted(self)
        Xa = _augment(self._check_X(X, reset=False), self.fit_intercept)
        if self._sets is not None:
            unary = self._unary_checked(Xa)
            M = set_max_marginals(unary, self._pairwise_full, self.edges_, self._sets,
                                  _edge_unary(Xa, self._W, self._graph))
            return self._format_per_label(M, binary_diff=True)
        labels, certified, unary, delta = self._map(Xa)
        g = self._graph
        pair = self._pairwise_full
        bound = max_marginals(g, unary, pair, delta, check_input=False)
        cond = conditional_scores(g, unary, pair, labels, check_input=False)
        score = primal_values(g, unary, pair, labels, check_input=False)
        own = np.take_along_axis(cond, labels[:, :, None], axis=2)
        M = np.where(certified[:, None, None], np.minimum(bound, score[:, None, None]),
                     score[:, None, None] + cond - own)
        np.put_along_axis(M, labels[:, :, None], score[:, None, None], axis=2)
        return self._format_per_label(M, binary_diff=True)

    def predict_marginals(self, X):
        """Per-label LP pseudo-marginals at the converged dual (see :func:`~sklearn_struct.oracles.lp.pseudo_marginals`).

        Returns
        -------
        marginals : ndarray or list of ndarray
            The marginal of state 1, (n_samples, n_labels), in multi-label mode; (n_samples,
            n_classes) for one column; else one (n_samples, n_states[l]) array per column.
        """
        check_is_fitted(self)
        if self.edge_coef_ is not None:
            raise ValueError("predict_marginals describes the LP relaxation with input-independent edge tables: "
                             "not available with edge_features=True (use decision_function).")
        Xa = _augment(self._check_X(X, reset=False), self.fit_intercept)
        _, _, unary, delta = self._map(Xa)
        return self._format_per_label(pseudo_marginals(self._graph, unary, delta, check_input=False), binary_diff=False)

    def score(self, X, y, sample_weight=None):
        """Subset accuracy (all labels of a sample right), as scikit-learn's ``accuracy_score``.

        Labels unseen at fit raise a ValueError naming the sample and column.
        """
        check_is_fitted(self)
        self._encode_targets(y, fit=False)
        Y = np.asarray(y)
        if Y.ndim != 2:
            return super().score(X, y, sample_weight=sample_weight)
        # several columns: accuracy_score takes binary indicators only, the columns may hold any classes
        pred = np.asarray(self.predict(X))
        check_consistent_length(pred, Y)
        hit = np.all(pred == Y, axis=1).astype(np.float64)
        if sample_weight is None:
            return float(hit.mean())
        return float(np.average(hit, weights=_check_sample_weight(sample_weight, hit)))

    # ------------------------------------------------------------------ helpers

    def _predict_codes(self, Xa):
        """Encoded labels and certificates: the best training label set (exact), or the LP-MAP."""
        if self._sets is None:
            return self._map(Xa)[:2]
        idx, _ = best_sets(self._unary_checked(Xa), self._pairwise_full, self.edges_, self._sets,
                           _edge_unary(Xa, self._W, self._graph))
        return self._sets[idx], np.ones(len(idx), dtype=bool)

    def _unary_checked(self, Xa):
        unary = _unary(Xa, self._W, self._graph)
        bad = ~np.isfinite(unary.reshape(unary.shape[0], -1)).all(axis=1)
        if bad.any():
            raise ValueError(f"X: the scores of sample {int(np.flatnonzero(bad)[0])} are not finite (its features "
                             "overflow float64 with the fitted weights); rescale X.")
        return unary

    def _map(self, Xa):
        """LP-MAP of every row (joblib chunks); returns labels, certificates, unary, messages."""
        g = self._graph
        unary = self._unary_checked(Xa)
        pair = self._pairwise_full

        # each task gets its own rows only (a closure over ``unary`` shipped all of them to every task)
        chunks = [(g, unary[sl], pair, self.predict_max_iter, self.predict_tol)
                  for sl in even_chunks(unary.shape[0], _n_chunks(self.n_jobs))]
        out = run_chunks(_solve_chunk, chunks, n_jobs=self.n_jobs, verbose=self.verbose)
        labels = np.concatenate([o[0] for o in out])
        certified = np.concatenate([o[1] for o in out])
        delta = np.concatenate([o[2] for o in out])
        return labels, certified, unary, delta

    def _set_weights(self, model):
        a = model.state[0]
        g = model.graph
        S, d = g.max_states, g.n_nodes
        W = a * model.V
        self._W = W
        self._pairwise_full = a * model.P
        n_feat = self.n_features_in_
        self.edge_coef_ = None
        if W.shape[1] > d * S:  # edge features: w_e[a, b] . x (+ its intercept, folded into pairwise_ below)
            Wedge = W[:, d * S:].reshape(-1, g.n_edges, S, S)
            self.edge_coef_ = np.moveaxis(Wedge[:n_feat], 0, -1).copy()
        W = W[:, : d * S]
        self.coef_ = W[:n_feat].T.reshape(d, S, n_feat).copy()
        self.intercept_ = W[n_feat].reshape(d, S).copy() if self.fit_intercept else np.zeros((d, S))
        self.pairwise_ = self._pairwise_full.copy()
        if self.edge_coef_ is not None and self.fit_intercept:
            self.pairwise_ += Wedge[n_feat]

    def _check_X(self, X, reset):
        try:
            X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=reset, ensure_all_finite=False)
        except OverflowError:  # Python ints beyond float64 in an object array
            raise ValueError("X holds a feature value beyond the float64 range (|x| > 1.8e308).") from None
        except (TypeError, ValueError):
            bad = _first_non_numeric(X)
            if bad is None:
                raise
            raise ValueError(f"X must be a numeric array or sparse matrix (n_samples, n_features): {bad}.") from None
        data = X.data if sp.issparse(X) else X
        bad = ~np.isfinite(data)
        if bad.any():
            if sp.issparse(X):
                pos = int(np.flatnonzero(bad)[0])
                row = int(np.searchsorted(X.indptr, pos, side="right") - 1)
                col = int(X.indices[pos])
            else:
                row, col = (int(v) for v in np.argwhere(bad)[0])
            raise ValueError(f"X contains NaN or infinity: sample {row}, feature {col}.")
        return X

    def _check_edges(self, Y):
        n_labels = Y.shape[1]
        edges = self.edges
        if isinstance(edges, str) and edges == "auto":
            edges = "complete" if n_labels <= AUTO_COMPLETE_MAX_LABELS else "tree"
        if (isinstance(edges, str) and edges == "tree") or isinstance(edges, numbers.Integral):
            return learned_edges(edges, Y, self.n_states_)
        if edges is None or (isinstance(edges, str) and edges == "complete"):
            i, j = np.triu_indices(n_labels, 1)
            return np.stack([i, j], axis=1).astype(np.int64)
        edges = np.asarray(self.edges)
        if edges.size == 0:
            return np.zeros((0, 2), dtype=np.int64)
        return make_lp_graph(edges, np.ones(n_labels, dtype=np.int64), name="edges").edges

    def _encode_fit_targets(self, y):
        Y, self._y_1d = _as_2d_targets(y)
        check_classification_targets(Y if Y.shape[1] > 1 else Y[:, 0])
        n_labels = Y.shape[1]
        if self.n_states is not None:
            ns = np.broadcast_to(np.asarray(self.n_states), (n_labels,)) if np.ndim(self.n_states) == 0 \
                else np.asarray(self.n_states)
            if ns.shape != (n_labels,) or ns.dtype.kind not in "iu" or np.any(ns < 1):
                raise ValueError(f"n_states must be an integer >= 1 or one per column of y ({n_labels}), "
                                 f"got {self.n_states!r}.")
            self.n_states_ = ns.astype(np.int64).copy()
            classes = [np.arange(k) for k in self.n_states_]
        else:
            classes = [np.unique(Y[:, l]) for l in range(n_labels)]
            self.n_states_ = np.array([len(c) for c in classes], dtype=np.int64)
        self._multilabel = (n_labels > 1 and type_of_target(Y) == "multilabel-indicator"
                            and (self.n_states is None or np.all(self.n_states_ == 2)))
        if self._multilabel:
            classes = [np.array([0, 1]) for _ in range(n_labels)]
            self.n_states_ = np.full(n_labels, 2, dtype=np.int64)
        self._classes = classes
        if self._multilabel:
            self.classes_ = np.array([0, 1])
        elif n_labels == 1:
            self.classes_ = classes[0]
        else:
            self.classes_ = classes
        return self._encode_targets(Y, fit=True)

    def _encode_targets(self, y, fit):
        Y = y if fit else _as_2d_targets(y)[0]
        n_labels = len(self._classes)
        if Y.shape[1] != n_labels:
            raise ValueError(f"y has {Y.shape[1]} columns but the model was fitted with {n_labels}.")
        codes = np.empty(Y.shape, dtype=np.int64)
        for l, cls in enumerate(self._classes):
            col = Y[:, l]
            try:
                pos = np.searchsorted(cls, col)
                pos = np.minimum(pos, len(cls) - 1)
                ok = cls[pos] == col
            except TypeError:
                ok = np.zeros(len(col), dtype=bool)
                pos = np.zeros(len(col), dtype=np.int64)
            if not ok.all():
                m = int(np.flatnonzero(~ok)[0])
                what = (f"outside range(n_states[{l}]) = range({len(cls)})" if self.n_states is not None
                        else "not seen at fit" if not fit else "not a class")
                value = col[m].item() if isinstance(col[m], np.generic) else col[m]
                raise ValueError(f"y[{m}, {l}] = {value!r} is {what} (column {l} classes: {cls.tolist()}).")
            codes[:, l] = pos
        return codes

    def _decode_labels(self, labels):
        out = np.column_stack([self._classes[l][labels[:, l]] for l in range(labels.shape[1])]) \
            if not self._multilabel else labels.copy()
        return out[:, 0] if self._y_1d else out

    def _format_per_label(self, M, binary_diff):
        S2 = all(len(c) == 2 for c in self._classes)
        if self._multilabel or (S2 and len(self._classes) == 1):
            out = M[:, :, 1] - M[:, :, 0] if binary_diff else M[:, :, 1]
            return out[:, 0] if len(self._classes) == 1 and self._y_1d else out
        per = [M[:, l, : len(c)] for l, c in enumerate(self._classes)]
        return per[0] if len(per) == 1 else per

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = tags.classifier_tags.multi_label = True  # y: one column per label
        return tags


def _as_2d_targets(y):
    y_arr = np.asarray(y)
    if y_arr.ndim == 1:
        Y, one_d = y_arr[:, None], True
    elif y_arr.ndim == 2 and y_arr.shape[1] >= 1:
        Y, one_d = y_arr, False
    else:
        raise ValueError(f"y must have shape (n_samples,) or (n_samples, n_labels), got {y_arr.shape}.")
    if Y.shape[0] == 0:
        raise ValueError("y is empty (0 samples).")
    if Y.dtype.kind == "f":
        bad = ~np.isfinite(Y)
        if bad.any():
            m, l = (int(v) for v in np.argwhere(bad)[0])
            raise ValueError(f"y contains NaN or infinity: sample {m}, column {l}.")
    elif Y.dtype.kind == "O":
        for m, l in np.argwhere(np.vectorize(lambda v: v is None or (isinstance(v, float) and not np.isfinite(v)))(Y)):
            raise ValueError(f"y contains a missing value (None or NaN): sample {m}, column {l}.")
    return Y, one_d


def _first_non_numeric(X):
    """Which sample of the list ``X`` is not a row of numbers (dicts: use DictVectorizer first), or None."""
    rows = X if isinstance(X, (list, tuple)) else []
    for i, row in enumerate(rows):
        if i and hasattr(row, "__len__") and hasattr(rows[0], "__len__") and len(row) != len(rows[0]):
            return f"sample {i} has {len(row)} features, sample 0 has {len(rows[0])}"
        hint = " (vectorize dicts with sklearn.feature_extraction.DictVectorizer)" if isinstance(row, dict) else ""
        try:
            ok = not isinstance(row, (dict, str, bytes)) and np.asarray(row, dtype=np.float64) is not None
        except (TypeError, ValueError):
            ok = False
        if not ok:
            return f"sample {i} is a {type(row).__name__}, not a row of numbers{hint}"
    return None


def _n_chunks(n_jobs):
    return n_shards(n_jobs)


def _solve_chunk(chunk):
    """LP-MAP of one prediction chunk ``(graph, unary rows, pairwise, max_iter, tol)``."""
    g, unary, pair, max_iter, tol = chunk
    res = lp_map(g, unary, pair, max_iter=max_iter, tol=tol, check_input=False)
    return res.labels, res.certified, res.delta
