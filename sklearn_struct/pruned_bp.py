"""PrunedBPMarginals: loopy BP on a graph pruned by MinSize / MinDivergence / MinJoint.

Inference follows Algorithm 1 of Riedel, Smith & McCallum: the seed graph ``G`` holds the unary
factors only, so its marginals are exact and closed-form; every pairwise factor ``e`` gets the gain
``g(e) = KL(p_G || p_{G+e})`` from them; one selection rule picks the factors ``N`` to add; loopy BP
(or TRW) then runs once on ``H = G ∪ N``. Factors left out are dropped, not reparametrised
(``dropped="drop"``, the default: the paper's method).

The three rules minimise the factorised divergence estimate ``D1 = sum of the dropped gains``:

* ``min_size`` (epsilon): drop factors in increasing order of gain while the dropped sum stays
  ``<= epsilon`` (the factor that would push it over is kept, so ``D1 <= epsilon``); the fewest
  factors that satisfy the bound.
* ``min_divergence`` (m): keep the ``m`` factors of highest gain (``m`` counts added pairwise
  factors, i.e. ``m - |G|`` in the paper's Eq. 8; a float in (0, 1] is a fraction of them).
* ``min_joint`` (gamma): keep every factor with ``g(e) >= gamma`` (minimises ``D1 + gamma |H|``); O(n).

Ties in gain are broken by edge index (lower index dropped first), so results are deterministic.

Extension beyond the paper (``dropped="absorb"``): the paper lists reparametrising the dropped
factors as future work. With ``"absorb"`` each dropped factor ``e = (u, v)`` is not discarded but
folded into the unaries of its endpoints as its factor-to-node message computed from the seed
marginal of the other endpoint, ``m_{e->u}(a) = log sum_b exp(pairwise_e(a, b)) q_v(b)``: one
pass, O(n_dropped S^2), and the selection still uses the paper's gains. It is exact for the node
marginals when a dropped factor's endpoints have no other factors, and it keeps the collective
effect of many weak factors on one node (which dropping loses). It is not the paper's method.
"""

import itertools
import numbers
import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .oracles.loopy import (
    absorbed_unary,
    check_pairwise_graph,
    log_softmax,
    loopy_bp,
    seed_gains,
    trw_edge_probabilities,
)
from .utils._proba import MarginalsAsProbaMixin
from .utils._params import atomic_fit, shared_constraints, store_init_params
from .utils.graph import check_graph_labels, check_graphs
from .utils.parallel import even_chunks, run_chunks
from .utils.progress import Progress
from .utils.shards import ResidentShards, n_shards
from .utils.validation import check_float_array, check_sample_weight_vector, check_scalar_param, check_y_given

__all__ = [
    "PrunedBPMarginals",
    "pruned_marginals",
    "select_factors",
    "PruningReport",
]

_OBJECTIVES = ("min_joint", "min_size", "min_divergence", "none")
_DROPPED = ("drop", "absorb")


# --------------------------------------------------------------------------------------
# Selection rules and one-shot pruned inference
# --------------------------------------------------------------------------------------


def select_factors(gains, objective="min_joint", *, gamma=1e-2, epsilon=1.0, m=0.5):
    """Which candidate factors to add to the seed graph (boolean mask), by one rule of Algorithm 1.

    Parameters
    ----------
    gains : array-like of shape (n_candidates,)
        Gains ``g(e) >= 0`` (see :func:`sklearn_struct.oracles.loopy.seed_gains`).
    objective : {"min_joint", "min_size", "min_divergence", "none"}, default="min_joint"
        ``"none"`` keeps every factor (full BP).
    gamma : float, default=1e-2
        MinJoint threshold: keep factors with gain ``>= gamma``.
    epsilon : float, default=1.0
        MinSize budget on the sum of dropped gains.
    m : int or float, default=0.5
        MinDivergence: number of factors to keep, or a fraction of the candidates if a float in
        (0, 1] (rounded to the nearest count).

    Returns
    -------
    kept : ndarray of bool of shape (n_candidates,)

    Examples
    --------
    >>> select_factors([0.5, 0.01, 0.2], "min_size", epsilon=0.25).tolist()
    [True, False, False]
    >>> select_factors([0.5, 0.01, 0.2], "min_divergence", m=2).tolist()
    [True, False, True]
    >>> select_factors([0.5, 0.01, 0.2], "min_joint", gamma=0.2).tolist()
    [True, False, True]
    """
    gains = check_float_array(gains, "gains", ndim=1)
    if (gains < 0).any():
        raise ValueError(f"gains must be >= 0; gains[{int(np.flatnonzero(gains < 0)[0])}] is negative.")
    gamma, epsilon = _check_selection_params(gamma, epsilon, m)
    n = gains.shape[0]
    if objective == "none":
        return np.ones(n, dtype=bool)
    if objective == "min_joint":
        return gains >= gamma
    if objective not in ("min_size", "min_divergence"):
        raise ValueError(f"objective must be one of {_OBJECTIVES}, got {objective!r}.")
    order = np.argsort(gains, kind="stable")  # increasing gain; ties: lower index first
    kept = np.ones(n, dtype=bool)
    if objective == "min_size":
        # the longest prefix of the sorted gains whose sum is <= epsilon is dropped
        n_drop = int(np.searchsorted(np.cumsum(gains[order]), epsilon, side="right"))
    else:
        n_keep = _count_from_m(m, n)
        n_drop = n - n_keep
    kept[order[:n_drop]] = False
    return kept


def _check_selection_params(gamma, epsilon, m):
    """Finite gamma and epsilon >= 0; m an int >= 0 or a fraction in (0, 1]."""
    gamma = check_scalar_param(gamma, "gamma", low=0.0, allow_inf=True)  # inf: keep no factor
    epsilon = check_scalar_param(epsilon, "epsilon", low=0.0, allow_inf=True)  # inf: drop every factor
    if isinstance(m, numbers.Integral) and not isinstance(m, bool):
        check_scalar_param(m, "m", kind="int", low=0)
    else:
        check_scalar_param(m, "m", low=0.0, high=1.0, closed="right")
    return gamma, epsilon


def _check_rho_for(rho, n_edges):
    """rho as a scalar or one value per edge of the full graph, in (0, 1]."""
    rho = check_float_array(rho, "rho", ndim=(0, 1))
    if rho.ndim == 1 and rho.shape[0] != n_edges:
        raise ValueError(f"rho must be a scalar or have one value per edge ({n_edges}), got {rho.shape[0]}.")
    rho = np.broadcast_to(rho, (n_edges,))
    if not np.all((rho > 0) & (rho <= 1)):
        e = int(np.flatnonzero(~((rho > 0) & (rho <= 1)))[0])
        raise ValueError(f"rho must lie in (0, 1]; rho[{e}] = {rho[e]!r}.")
    return rho


def _count_from_m(m, n):
    if isinstance(m, numbers.Integral):
        return int(min(max(m, 0), n))
    if not 0.0 < m <= 1.0:
        raise ValueError(f"m must be a non-negative int or a fraction in (0, 1], got {m!r}.")
    return int(round(m * n))


@dataclass
class PruningReport:
    """What :func:`pruned_marginals` did.

    Attributes
    ----------
    kept : ndarray of bool of shape (n_edges,)
        Pairwise factors in the final graph ``H``.
    gains : ndarray of shape (n_edges,)
    kept_fraction : float
        ``kept.mean()`` (1.0 for a graph without edges).
    dropped_gain : float
        Sum of the gains of the dropped factors: the divergence estimate ``D1``.
    seed_time : float
        Seconds for the seed marginals, the gains, the selection and (``dropped="absorb"``) folding
        the dropped factors into the unaries.
    bp_time : float
        Seconds for BP on ``H`` (0 when no factor was kept).
    bp_result : BPResult or None
        BP output on the kept subgraph (edge indices there follow ``np.flatnonzero(kept)``).
    """

    kept: np.ndarray
    gains: np.ndarray
    kept_fraction: float
    dropped_gain: float
    seed_time: float
    bp_time: float
    bp_result: object

    @property
    def total_time(self):
        return self.seed_time + self.bp_time


def pruned_marginals(unary, edges, pairwise, *, objective="min_joint", gamma=1e-2, epsilon=1.0, m=0.5,
                     dropped="drop", inference="bp", rho=None, schedule="sequential", damping=0.0, max_iter=100,
                     tol=1e-6, edge_marginals=False, return_report=False, check_input=True, warn=True):
    """Node marginals of a pairwise model by BP on the graph pruned by one selection rule.

    Runs Algorithm 1 of Riedel, Smith & McCallum once: exact unary-only seed marginals, the gain
    of every pairwise factor, the selection rule, then BP (or TRW) on the kept graph. If no factor
    is kept, the seed marginals are returned without running BP.

    Parameters
    ----------
    unary : array-like of shape (n_nodes, n_states)
    edges : array-like of int of shape (n_edges, 2)
    pairwise : array-like of shape (n_states, n_states) or (n_edges, n_states, n_states)
        Log-potentials, as in :func:`sklearn_struct.oracles.loopy.loopy_bp`.
    objective : {"min_joint", "min_size", "min_divergence", "none"}, default="min_joint"
    gamma, epsilon, m : see :func:`select_factors`
    dropped : {"drop", "absorb"}, default="drop"
        What happens to the factors left out of ``H``. ``"drop"``: they are removed (the paper's
        method). ``"absorb"`` (an extension, the reparametrisation the paper leaves to future
        work): each one is folded into the unaries of its two endpoints as its factor-to-node
        message from the seed marginal of the other endpoint,
        ``m_{e->u}(a) = log sum_b exp(pairwise_e(a, b)) q_v(b)`` (see
        :func:`~sklearn_struct.oracles.loopy.absorbed_unary`); one pass, O(n_dropped S^2). The
        selection is unchanged.
    inference : {"bp", "trw"}, default="bp"
    rho : array-like of shape (n_edges,), default=None
        TRW edge appearance probabilities of the full graph's edges (the kept ones are used);
        None: ``trw_edge_probabilities(kept_edges, method="auto")`` of the pruned graph, a valid
        point of its spanning-tree polytope for any graph (effective resistances, i.e. uniform
        spanning-tree edge marginals; 1 on dangling trees, where TRW is BP), so that TRW's
        ``-free_energy`` bounds the pruned graph's log Z. Absorbed factors are part of the
        unaries and have no rho.
    schedule, damping, max_iter, tol, warn : passed to :func:`~sklearn_struct.oracles.loopy.loopy_bp`
        (``warn``: a ``ConvergenceWarning`` when BP stops unconverged at ``max_iter``).
    edge_marginals : bool, default=False
        Also compute pairwise beliefs of the kept edges (in ``report.bp_result``).
    return_report : bool, default=False
        Also return a :class:`PruningReport`.
    check_input : bool, default=True

    Returns
    -------
    marginals : ndarray of shape (n_nodes, n_states)
    report : PruningReport, only if ``return_report``

    References
    ----------
    Riedel, Smith & McCallum, UAI 2010 (see :class:`PrunedBPMarginals`), Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.utils.graph import grid_edges
    >>> rng = np.random.RandomState(0)
    >>> unary = np.c_[np.zeros(100), 3 * rng.normal(size=100)]
    >>> marg, rep = pruned_marginals(unary, grid_edges((10, 10)), np.eye(2), gamma=0.05,
    ...                              return_report=True)
    >>> marg.shape, 0.0 < rep.kept_fraction < 1.0
    ((100, 2), True)
    """
    if inference not in ("bp", "trw"):
        raise ValueError(f"inference must be 'bp' or 'trw', got {inference!r}.")
    if dropped not in _DROPPED:
        raise ValueError(f"dropped must be one of {_DROPPED}, got {dropped!r}.")
    if objective not in _OBJECTIVES:
        raise ValueError(f"objective must be one of {_OBJECTIVES}, got {objective!r}.")
    _check_selection_params(gamma, epsilon, m)
    check_scalar_param(max_iter, "max_iter", kind="int", low=0)
    check_scalar_param(tol, "tol", low=0.0)
    check_scalar_param(damping, "damping", low=0.0, high=1.0, closed="left")
    if check_input:
        unary, edges, pairwise = check_pairwise_graph(unary, edges, pairwise, allow_zero=True)
    elif pairwise.ndim == 2:
        pairwise = pairwise[None]
    start = time.perf_counter()
    log_q = log_softmax(unary)
    if objective == "none":
        gains = np.zeros(edges.shape[0])
        kept = np.ones(edges.shape[0], dtype=bool)
    else:
        gains = seed_gains(unary, edges, pairwise, log_seed_marginals=log_q, check_input=False)
        kept = select_factors(gains, objective, gamma=gamma, epsilon=epsilon, m=m)
    sub_edges = edges[kept]
    sub_pairwise = pairwise if pairwise.shape[0] == 1 else pairwise[kept]
    if dropped == "absorb" and not kept.all():
        unary = absorbed_unary(unary, edges[~kept], pairwise if pairwise.shape[0] == 1 else pairwise[~kept],
                               log_seed_marginals=log_q, check_input=False)
        log_q = None
    seed_time = time.perf_counter() - start
    result = None
    start = time.perf_counter()
    if sub_edges.shape[0] == 0:  # H == G: the (absorbed) seed marginals are exact for H
        marginals = np.exp(log_softmax(unary) if log_q is None else log_q)
    else:
        sub_rho = None
        if inference == "trw":
            sub_rho = (trw_edge_probabilities(sub_edges, unary.shape[0], "auto") if rho is None
                       else _check_rho_for(rho, edges.shape[0])[kept])
        result = loopy_bp(unary, sub_edges, sub_pairwise, rho=sub_rho, schedule=schedule, damping=damping,
                          max_iter=max_iter, tol=tol, edge_marginals=edge_marginals, check_input=False, warn=warn)
        marginals = result.node_marginals
    bp_time = time.perf_counter() - start if result is not None else 0.0
    if not return_report:
        return marginals
    report = PruningReport(
        kept=kept, gains=gains, kept_fraction=float(kept.mean()) if kept.size else 1.0,
        dropped_gain=float(gains[~kept].sum()), seed_time=seed_time, bp_time=bp_time, bp_result=result,
    )
    return marginals, report


# --------------------------------------------------------------------------------------
# Estimator
# --------------------------------------------------------------------------------------


class PrunedBPMarginals(MarginalsAsProbaMixin, BaseEstimator):
    """Pairwise CRF on graphs with marginals from loopy BP on a pruned graph.

    The model is a conditional random field over node labels ``y``::

        p(y | x) ∝ exp( sum_i <x_i W + b, e_{y_i}> + sum_{(u,v)} sum_g z_uv,g T_g[y_u, y_v] )

    with node features ``x_i`` and edge features ``z_uv`` (one constant feature when the samples
    carry none, so ``T`` is one shared table). ``T_g`` is a Potts table ``w_g * [y_u = y_v]`` by
    default or a full ``n_classes x n_classes`` table. ``fit`` maximises the Bethe approximation
    of the conditional log-likelihood (an L2-penalised, LogisticRegression-style objective) with
    L-BFGS, computing the gradient from BP node and edge marginals. Prediction runs the pruned
    inference of Riedel, Smith & McCallum: unary-only seed, gains, one selection rule, BP on the
    kept graph (see :func:`pruned_marginals`).

    Parameters
    ----------
    objective : {"min_joint", "min_size", "min_divergence", "none"}, default="min_joint"
        Selection rule used at prediction ("none": BP on the full graph).
    gamma : float, default=1e-2
        MinJoint gain threshold.
    epsilon : float, default=1.0
        MinSize budget on the dropped gain sum, per graph.
    m : int or float, default=0.5
        MinDivergence: factors kept per graph, or a fraction of them if a float in (0, 1].
    dropped : {"drop", "absorb"}, default="drop"
        At prediction, what happens to the factors left out: removed (``"drop"``, the paper's
        method) or folded into their endpoints' unaries as factor-to-node messages from the seed
        marginals (``"absorb"``, an extension beyond the paper: the reparametrisation it leaves to
        future work; see :func:`pruned_marginals`). Training is not affected (see
        ``fit_inference``).
    inference : {"bp", "trw"}, default="bp"
        Loopy BP or tree-reweighted BP (valid spanning-tree edge probabilities, method "auto").
    fit_inference : {"full", "pruned"}, default="full"
        Marginals used for the training gradient. "full": BP on the whole graph (the gradient of
        the Bethe likelihood). "pruned": the pruned graph, with each dropped factor's expected
        features taken from ``b_u b_v Psi_e`` (the factor added in isolation) and ``log Z``
        corrected by ``log E[Psi_e]`` under the product of beliefs; faster but approximate.
    edge_model : {"potts", "full"}, default="potts"
        Shape of each edge-feature table ``T_g``.
    fit_intercept : bool, default=True
        Learn a per-class node bias ``b`` (not penalised).
    C : float, default=1.0
        Inverse L2 penalty: minimise ``C * sum_samples NLL + ||W||^2 / 2 + ||T||^2 / 2``.
    max_iter : int, default=1000
        At most this many L-BFGS iterations; the fit normally stops earlier by ``tol``
        (OCR words as chain graphs, 1,000 words: 153 iterations). A fit that reaches the cap
        warns with a ``ConvergenceWarning``.
    tol : float, default=1e-5
        L-BFGS relative tolerance on the objective (scipy ``ftol``).
    bp_max_iter : int, default=100
        BP sweeps per inference.
    bp_tol : float, default=1e-5
        BP convergence threshold on message changes.
    damping : float, default=0.0
        BP message damping in [0, 1).
    n_jobs : int, default=None
        Number of chunks of samples (shards), under every joblib backend: in ``fit`` each is
        evaluated on a thread, or under joblib's dask backend kept on one worker for the whole fit
        (see :mod:`sklearn_struct.utils.shards`); ``None`` means one locally, one per worker thread
        on a dask cluster.
    callback : callable or None, default=None
        Called after every L-BFGS iteration as ``callback(iteration, objective, seconds)``;
        returning True stops training there (no convergence warning is raised then).
    verbose : int, default=0
        Print one line per L-BFGS iteration: training objective and elapsed seconds.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_features, n_classes)
        Node weights ``W``.
    intercept_ : ndarray of shape (n_classes,)
    edge_coef_ : ndarray of shape (n_edge_features, n_classes, n_classes)
        Edge tables ``T_g`` (Potts tables are ``w_g`` times the identity).
    n_features_in_ : int
    n_edge_features_in_ : int
        Edge features per sample (0 if the samples carry none).
    n_iter_ : int
        L-BFGS iterations run.
    objective_ : float
        Final value of the (scaled) training objective.

    See Also
    --------
    pruned_marginals : the same inference on given potentials.
    sklearn_struct.oracles.loopy.loopy_bp : the BP / TRW oracle.

    References
    ----------
    S. Riedel, D. A. Smith, A. McCallum. "Inference by Minimizing Size, Divergence, or their Sum."
    UAI 2010.

    Examples
    --------
    >>> from sklearn_struct.datasets import make_ising_grid
    >>> from sklearn_struct.pruned_bp import PrunedBPMarginals
    >>> from sklearn_struct.utils.graph import images_to_graphs
    >>> images, labels = make_ising_grid(n_noisy=2, shape=(12, 12), noise=1.0, random_state=0)
    >>> X, y = images_to_graphs(images), list(labels.reshape(len(labels), -1))
    >>> est = PrunedBPMarginals(gamma=1e-3).fit(X, y)
    >>> est.predict_marginals(X[:1])[0].shape
    (144, 2)
    >>> bool(est.edge_coef_[0, 0, 0] > 0)  # neighbours are encouraged to agree
    True
    """

    _parameter_constraints = {
        "objective": [StrOptions(set(_OBJECTIVES))],
        "gamma": [Interval(numbers.Real, 0, None, closed="left")],
        "epsilon": [Interval(numbers.Real, 0, None, closed="left")],
        "m": [Interval(numbers.Integral, 0, None, closed="left"), Interval(numbers.Real, 0, 1, closed="right")],
        "dropped": [StrOptions(set(_DROPPED))],
        "inference": [StrOptions({"bp", "trw"})],
        "fit_inference": [StrOptions({"full", "pruned"})],
        "edge_model": [StrOptions({"potts", "full"})],
        "fit_intercept": ["boolean"],
        "C": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "bp_max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "bp_tol": [Interval(numbers.Real, 0, None, closed="left")],
        "damping": [Interval(numbers.Real, 0, 1, closed="left")],
        **shared_constraints("n_jobs", "callback", "verbose"),
    }

    def __init__(self, *, objective="min_joint", gamma=1e-2, epsilon=1.0, m=0.5, dropped="drop", inference="bp",
                 fit_inference="full", edge_model="potts", fit_intercept=True, C=1.0, max_iter=1000, tol=1e-5,
                 bp_max_iter=100, bp_tol=1e-5, damping=0.0, n_jobs=None, callback=None, verbose=0):
        store_init_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Fit node and edge weights by approximate (Bethe) maximum likelihood.

        L-BFGS on the penalised negative Bethe log-likelihood, whose gradient takes the BP
        marginals of every training graph (full or pruned, as ``fit_inference`` says).

        Parameters
        ----------
        X : list of tuple
            ``(node_features, edges)`` or ``(node_features, edges, edge_features)`` per graph.
        y : list of array-like of shape (n_nodes_i,)
            Node labels (any hashable values).

        Returns
        -------
        self : PrunedBPMarginals
        """
        progress = Progress(type(self).__name__, self.verbose, self.callback)
        check_y_given(y, self)
        graphs, y = check_graphs(X, y)
        self.n_features_in_ = graphs[0][0].shape[1]
        self.n_edge_features_in_ = graphs[0][2].shape[1] if graphs[0][2] is not None else 0
        encoder = LabelEncoder().fit(np.concatenate(y))
        self.classes_ = encoder.classes_
        if len(self.classes_) < 2:
            raise ValueError(f"y must contain at least 2 classes, got only {self.classes_.tolist()}.")
        y_enc = [encoder.transform(lab).astype(np.int64) for lab in y]
        problem = _Problem(graphs, y_enc, len(self.classes_), self)
        theta0 = np.zeros(problem.n_params)
        iterations = itertools.count(1)

        def report(intermediate_result):  # scipy passes the iterate's OptimizeResult to this argument name
            if progress(next(iterations), intermediate_result.fun):
                raise StopIteration  # scipy >= 1.11 ends the solver there (status 99)

        with problem.shards:  # resident shards (dask workers under joblib's dask backend) released at the end
            result = minimize(problem, theta0, jac=True, method="L-BFGS-B", callback=report,
                              options={"maxiter": self.max_iter, "ftol": self.tol, "gtol": 1e-8})
        if not result.success and result.nit >= self.max_iter and not progress.stopped:
            warnings.warn(
                f"L-BFGS did not converge after {result.nit} iterations; increase max_iter.", ConvergenceWarning
            )
        self.coef_, self.intercept_, self.edge_coef_ = problem.split(result.x)
        self.n_iter_ = int(result.nit)
        self.objective_ = float(result.fun)
        return self

    # ------------------------------------------------------------------ prediction
    def predict_marginals(self, X):
        """Node label marginals from BP on each pruned graph.

        Parameters
        ----------
        X : list of tuple
            Graph samples, as in :meth:`fit`.

        Returns
        -------
        marginals : list of ndarray of shape (n_nodes_i, n_classes)
            Columns follow ``classes_``.
        """
        check_is_fitted(self)
        graphs = check_graphs(X, n_features=self.n_features_in_, n_edge_features=self.n_edge_features_in_)
        potentials = [_potentials(g, self.coef_, self.intercept_, self.edge_coef_) for g in graphs]
        options = dict(objective=self.objective, gamma=self.gamma, epsilon=self.epsilon, m=self.m,
                       dropped=self.dropped, inference=self.inference, max_iter=self.bp_max_iter, tol=self.bp_tol,
                       damping=self.damping, warn=False)  # bp_max_iter: a budget per graph
        # each task gets its own graphs only (a closure over all potentials would ship them to every task)
        chunks = [(potentials[sl], options) for sl in even_chunks(len(potentials), n_shards(self.n_jobs))]
        parts = run_chunks(_infer_chunk, chunks, n_jobs=self.n_jobs, verbose=self.verbose)
        return [marg for part in parts for marg in part]

    def predict(self, X):
        """Label of each node with the largest marginal.

        Returns
        -------
        y : list of ndarray of shape (n_nodes_i,)
        """
        return [self.classes_[np.argmax(marg, axis=1)] for marg in self.predict_marginals(X)]

    def score(self, X, y, sample_weight=None):
        """Node accuracy of :meth:`predict` (optionally weighted per sample)."""
        y_pred = self.predict(X)
        y = check_graph_labels(y, [len(p) for p in y_pred])
        correct = np.array([np.mean(p == t) for p, t in zip(y_pred, y)])
        sizes = np.array([len(p) for p in y_pred], dtype=np.float64)
        weights = sizes * check_sample_weight_vector(sample_weight, len(y_pred))
        return float(np.sum(correct * weights) / np.sum(weights))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.target_tags.required = True
        tags.non_deterministic = False
        return tags


# --------------------------------------------------------------------------------------
# Private helpers
# --------------------------------------------------------------------------------------


def _infer_chunk(chunk):
    """Pruned-BP marginals of one prediction chunk ``(potentials, options)``."""
    potentials, options = chunk
    return [pruned_marginals(unary, edges, pairwise, check_input=False, **options)
            for unary, edges, pairwise in potentials]


def _potentials(graph, coef, intercept, edge_coef):
    """Unary (n_nodes, S) and pairwise ((S, S) shared or (n_edges, S, S)) log-potentials of a graph."""
    feats, edges, edge_feats = graph
    unary = feats @ coef + intercept
    if edge_feats is None:
        pairwise = edge_coef[0]
    else:
        pairwise = np.einsum("eg,gab->eab", edge_feats, edge_coef)
    return np.ascontiguousarray(unary), edges, np.ascontiguousarray(pairwise)


class _Problem:
    """Penalised Bethe negative log-likelihood and its gradient over all training graphs.

    Graphs are split into ``n_shards(n_jobs)`` chunks; each chunk is packed into one disjoint
    union so that one BP call serves all its graphs, and keeps its BP messages to warm-start the
    next evaluation. The chunks are :class:`~sklearn_struct.utils.shards.ResidentShards`: in this
    process, or each on one dask worker (the messages stay there too), every evaluation sending
    only theta.
    """

    def __init__(self, graphs, y_enc, n_classes, est):
        self.S = n_classes
        self.est = est
        self.n_features = graphs[0][0].shape[1]
        self.has_edge_features = graphs[0][2] is not None
        self.n_edge_features = graphs[0][2].shape[1] if self.has_edge_features else 1
        self.potts = est.edge_model == "potts"
        self.n_nodes_total = sum(g[0].shape[0] for g in graphs)
        chunks = [_Resident(_pack(graphs[s], y_enc[s], n_classes))
                  for s in even_chunks(len(graphs), n_shards(est.n_jobs))]
        self.shards = ResidentShards(chunks, n_jobs=est.n_jobs)
        n_edge_params = self.n_edge_features * (1 if self.potts else n_classes * n_classes)
        self.n_params = self.n_features * n_classes + n_classes + n_edge_params
        self.settings = {"dims": (self.n_features, n_classes, self.n_edge_features, self.potts,
                                  bool(est.fit_intercept)),
                         **{k: getattr(est, k) for k in ("fit_inference", "objective", "gamma", "epsilon", "m",
                                                         "inference", "bp_max_iter", "bp_tol", "damping")}}

    def split(self, theta):
        return _split(theta, *self.settings["dims"])

    def __call__(self, theta):
        coef, intercept, edge_coef = self.split(theta)
        est = self.est
        nll, g_coef, g_intercept, g_edge = self.shards.sum(_shard_nll, theta, self.settings)
        scale = 1.0 / (est.C * self.n_nodes_total)  # objective per node: well-scaled for L-BFGS
        F, S = self.n_features, self.S
        edge_theta = theta[F * S + S :]
        penalty = 0.5 * (np.sum(coef**2) + np.sum(edge_theta**2))  # the intercept is not penalised
        value = scale * (est.C * nll + penalty)
        if self.potts:  # d/dw_g of the table w_g * I is the trace of the table gradient
            g_edge = np.trace(g_edge, axis1=1, axis2=2)
        grad = np.concatenate([
            (est.C * g_coef + coef).ravel(),
            est.C * g_intercept if est.fit_intercept else np.zeros(S),
            est.C * np.ravel(g_edge) + edge_theta,
        ])
        return value, scale * grad


def _split(theta, F, S, G, potts, fit_intercept):
    """(coef (F, S), intercept (S,), edge tables (G, S, S)) from the flat parameters."""
    coef = theta[: F * S].reshape(F, S)
    intercept = theta[F * S : F * S + S] if fit_intercept else np.zeros(S)
    rest = theta[F * S + S :]
    if potts:
        edge_coef = rest[:, None, None] * np.eye(S)[None]
    else:
        edge_coef = rest.reshape(G, S, S)
    return coef.copy(), np.array(intercept, dtype=np.float64), np.array(edge_coef, dtype=np.float64)


class _Resident:
    """A training chunk and its last BP messages (the warm start of its next evaluation)."""

    def __init__(self, chunk):
        self.chunk, self.messages = chunk, None


def _shard_nll(shard, theta, settings):
    """One resident chunk's (nll, g_coef, g_intercept, g_edge) at ``theta``; keeps its messages."""
    coef, intercept, edge_coef = _split(theta, *settings["dims"])
    *out, shard.messages = _chunk_nll(shard.chunk, coef, intercept, edge_coef, _Settings(settings), shard.messages)
    return tuple(out)


class _Settings:
    """The estimator's inference settings as attributes (what :func:`_chunk_nll` reads)."""

    def __init__(self, settings):
        self.__dict__.update(settings)


@dataclass
class _Chunk:
    feats: np.ndarray  # (n_nodes, F) of all graphs in the chunk
    edges: np.ndarray  # (n_edges, 2), node indices offset per graph
    edge_feats: object  # (n_edges, G) or None
    onehot: np.ndarray  # (n_nodes, S) empirical node statistics
    pair_counts: np.ndarray  # (G, S, S) empirical edge-feature statistics
    labels: np.ndarray
    node_graph: np.ndarray  # graph index of each node (within the chunk)
    edge_offsets: np.ndarray  # (n_graphs + 1,) edge ranges per graph


def _pack(graphs, y_enc, S):
    """Disjoint union of graphs with their empirical sufficient statistics."""
    sizes = np.array([g[0].shape[0] for g in graphs])
    node_offsets = np.concatenate([[0], np.cumsum(sizes)])
    n_edges = np.array([g[1].shape[0] for g in graphs])
    feats = np.concatenate([g[0] for g in graphs])
    edges = np.concatenate([g[1] + off for g, off in zip(graphs, node_offsets[:-1])]).reshape(-1, 2)
    edge_feats = None if graphs[0][2] is None else np.concatenate([g[2] for g in graphs]).reshape(-1, graphs[0][2].shape[1])
    labels = np.concatenate(y_enc)
    onehot = np.eye(S)[labels]
    z = np.ones((edges.shape[0], 1)) if edge_feats is None else edge_feats
    pair = np.zeros((z.shape[1], S, S))
    if edges.shape[0]:
        pair_index = labels[edges[:, 0]] * S + labels[edges[:, 1]]
        for g in range(z.shape[1]):  # one bincount per edge feature
            pair[g] = np.bincount(pair_index, weights=z[:, g], minlength=S * S).reshape(S, S)
    return _Chunk(feats, np.ascontiguousarray(edges, dtype=np.int64), edge_feats, onehot, pair, labels,
                  np.repeat(np.arange(len(graphs)), sizes), np.concatenate([[0], np.cumsum(n_edges)]))


def _chunk_nll(chunk, coef, intercept, edge_coef, est, messages):
    """Bethe NLL of a chunk, its gradients w.r.t. coef, intercept and the edge tables, and the BP
    messages to warm-start the chunk's next evaluation (``messages``: the last ones, or None)."""
    unary, edges, pairwise = _potentials((chunk.feats, chunk.edges, chunk.edge_feats), coef, intercept, edge_coef)
    pw3 = pairwise[None] if pairwise.ndim == 2 else pairwise
    n_edges = edges.shape[0]
    if est.fit_inference == "pruned" and est.objective != "none" and n_edges:
        kept = _select_per_graph(unary, edges, pw3, chunk.edge_offsets, est)
    else:
        kept = np.ones(n_edges, dtype=bool)
    sub_edges = edges[kept]
    sub_pw = pw3 if pw3.shape[0] == 1 else pw3[kept]
    rho = trw_edge_probabilities(sub_edges, unary.shape[0], "auto") if est.inference == "trw" else None
    warm = messages if kept.all() else None
    res = loopy_bp(unary, sub_edges, sub_pw, rho=rho, max_iter=est.bp_max_iter, tol=est.bp_tol,
                   damping=est.damping, free_energy=True, init_messages=warm, check_input=False,
                   warn=False)  # a budget per gradient evaluation: reported by the fit's own stop rule
    messages = res.log_messages if kept.all() else messages
    node = res.node_marginals
    edge_marg = np.empty((n_edges, unary.shape[1], unary.shape[1]))
    edge_marg[kept] = res.edge_marginals
    log_z = -res.free_energy
    if not kept.all():  # dropped factors added in isolation to the pruned model
        u, v = edges[~kept, 0], edges[~kept, 1]
        table = pw3[0][None] if pw3.shape[0] == 1 else pw3[~kept]
        log_node = np.log(np.maximum(node, 1e-300))
        logits = log_node[u][:, :, None] + log_node[v][:, None, :] + table
        top = logits.max(axis=(1, 2), keepdims=True)
        weights = np.exp(logits - top)
        mass = weights.sum(axis=(1, 2), keepdims=True)
        edge_marg[~kept] = weights / mass
        log_z += float(np.sum(top.ravel() + np.log(mass.ravel())))
    score = np.sum(unary[np.arange(unary.shape[0]), chunk.labels])
    if n_edges:
        score += np.sum(pw3[0 if pw3.shape[0] == 1 else np.arange(n_edges), chunk.labels[edges[:, 0]],
                            chunk.labels[edges[:, 1]]])
    diff = node - chunk.onehot
    g_coef = chunk.feats.T @ diff
    g_intercept = diff.sum(axis=0)
    z = np.ones((n_edges, 1)) if chunk.edge_feats is None else chunk.edge_feats
    g_edge = np.einsum("eg,eab->gab", z, edge_marg) - chunk.pair_counts
    return log_z - score, g_coef, g_intercept, g_edge, messages


def _select_per_graph(unary, edges, pw3, edge_offsets, est):
    """Kept mask over a packed chunk, the selection rule applied to each graph's own factors."""
    gains = seed_gains(unary, edges, pw3, check_input=False)
    if est.objective == "min_joint":  # elementwise: no need to split per graph
        return gains >= est.gamma
    kept = np.ones(edges.shape[0], dtype=bool)
    for lo, hi in zip(edge_offsets[:-1], edge_offsets[1:]):
        kept[lo:hi] = select_factors(gains[lo:hi], est.objective, epsilon=est.epsilon, m=est.m)
    return kept
