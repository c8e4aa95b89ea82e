"""ChainCRF's training algorithms behind one call: CRFsuite's five, their options, the training log.

``algorithm`` is one of CRFsuite's: ``"lbfgs"`` (L-BFGS, OWL-QN when ``c1 > 0``:
:mod:`sklearn_struct._chain_crf_lbfgs`), ``"l2sgd"`` (:mod:`sklearn_struct._chain_crf_sgd`),
``"ap"``, ``"pa"``, ``"arow"`` (:mod:`sklearn_struct._chain_crf_online`). Each returns the flat
parameters ``theta = (w, b, A)``; this module validates the algorithm's options, records one
:attr:`training_log_` entry per iteration (evaluating the development set when given) and
turns theta into ``coef_``, ``intercept_``, ``transition_``.
"""

import numbers
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from ._chain_crf import ChainObjective, unpack_params
from ._chain_crf_constrained import ConstrainedChainObjective
from ._chain_crf_lbfgs import LINESEARCHES, minimize_crfsuite
from ._chain_crf_online import TrainingData, fit_online, transition_mask
from ._chain_crf_sgd import fit_l2sgd
from .oracles.chain import forward_backward, viterbi
from .oracles.linear import LinearFeatures
from .utils.packing import pack_sequences, transition_pairs
from .utils.shards import n_shards

__all__ = ["ALGORITHMS", "SOLVER_OPTIONS", "ONLINE_ALGORITHMS", "check_solver_options", "fit_chain_algorithm",
           "DevSet", "minimize_chain_objective"]

# CRFsuite's options of each algorithm: (default, check, description of valid values)
_POSITIVE_INT = (lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1, "an int >= 1")
_POSITIVE = (lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool) and v > 0 and np.isfinite(v),
             "a finite number > 0")
_BOOL = (lambda v: isinstance(v, (bool, np.bool_)) or (isinstance(v, numbers.Integral) and v in (0, 1)),
         "a bool")
class Algorithm(NamedTuple):
    """One of CRFsuite's training algorithms, declared once: ChainCRF's parameter check, its fit,
    ``partial_fit`` and :class:`sklearn_struct.crfsuite.CRF`'s parameter table all read it."""

    options: dict  # solver_options: name -> (CRFsuite's default, check, description of valid values)
    default_max_iter: object  # CRFsuite's default (None: no cap, the stopping rules decide)
    params: tuple  # the ChainCRF parameters it reads besides algorithm and max_iter
    online: bool  # updates after every sequence (partial_fit, one thread)


ALGORITHMS = {
    "lbfgs": Algorithm({"num_memories": (6, *_POSITIVE_INT), "max_linesearch": (20, *_POSITIVE_INT),
                        "linesearch": ("MoreThuente", lambda v: v in LINESEARCHES, f"one of {list(LINESEARCHES)}")},
                       None, ("c1", "c2", "epsilon", "period", "tol"), False),
    "l2sgd": Algorithm({"calibration_eta": (0.1, *_POSITIVE), "calibration_rate": (2.0, *_POSITIVE),
                        "calibration_samples": (1000, *_POSITIVE_INT), "calibration_candidates": (10, *_POSITIVE_INT),
                        "calibration_max_trials": (20, *_POSITIVE_INT)},
                       1000, ("c2", "period", "tol"), True),
    "ap": Algorithm({}, 100, ("epsilon",), True),
    "pa": Algorithm({"pa_type": (1, lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                 and v in (0, 1, 2), "0, 1 or 2"),
                     "c": (1.0, *_POSITIVE), "error_sensitive": (True, *_BOOL), "averaging": (True, *_BOOL)},
                    100, ("epsilon",), True),
    "arow": Algorithm({"variance": (1.0, *_POSITIVE), "gamma": (1.0, *_POSITIVE)}, 100, ("epsilon",), True),
}
SOLVER_OPTIONS = {name: algorithm.options for name, algorithm in ALGORITHMS.items()}
DEFAULT_MAX_ITER = {name: algorithm.default_max_iter for name, algorithm in ALGORITHMS.items()}
ONLINE_ALGORITHMS = tuple(name for name, algorithm in ALGORITHMS.items() if algorithm.online)


def check_solver_options(algorithm, options):
    """The algorithm's options: CRFsuite's defaults updated by ``options``; ValueError naming a bad one."""
    known = SOLVER_OPTIONS[algorithm]
    options = {} if options is None else options
    if not isinstance(options, dict):
        raise ValueError(f"solver_options must be a dict or None, got {type(options).__name__}.")
    out = {name: spec[0] for name, spec in known.items()}
    for name, value in options.items():
        if name not in known:
            raise ValueError(f"solver_options: unknown option {name!r} for algorithm={algorithm!r}; "
                             f"its options are {sorted(known)}.")
        _, check, valid = known[name]
        if not check(value):
            raise ValueError(f"solver_options[{name!r}] must be {valid} for algorithm={algorithm!r}, got {value!r}.")
        out[name] = value
    return out


class DevSet:
    """A development set evaluated during training: token accuracy and negative log-likelihood."""

    def __init__(self, X, y_enc, n_labels, pairs, sparse):
        packed, self.offsets = pack_sequences(X)
        packed = sp.csr_matrix(packed) if sparse else (packed.toarray() if sp.issparse(packed) else packed)
        self.features = LinearFeatures(packed, n_labels, pairs=pairs if sparse else None)
        self.y = np.concatenate(y_enc).astype(np.int64)
        self.transitions = transition_pairs(self.y, self.offsets)
        self.n_labels = n_labels

    def __call__(self, theta):
        w, b, A = unpack_params(theta, self.features.n_weights, self.n_labels)
        unary = self.features.scores(w, bias=b)
        labels, _ = viterbi(unary, A, self.offsets)
        log_z, _, _ = forward_backward(unary, A, self.offsets, edge_marginals="none")
        gold = unary[np.arange(self.y.shape[0]), self.y].sum() + A[self.transitions].sum()
        return {"dev_accuracy": float(np.mean(labels == self.y)), "dev_loss": float(np.sum(log_z) - gold)}


class _Log:
    """The training log: one dict per iteration, printed / passed to the callback by ``progress``."""

    def __init__(self, progress, bias_slice, dev=None):
        self.progress, self.bias, self.dev = progress, bias_slice, dev
        self.records = []

    def __call__(self, iteration, loss, theta, **extra):
        active = np.count_nonzero(theta) - np.count_nonzero(theta[self.bias])
        record = {"iteration": int(iteration), "loss": float(loss), "seconds": self.progress.elapsed(),
                  "active_features": int(active), **{k: float(v) for k, v in extra.items()}}
        if self.dev is not None:
            record.update(self.dev(theta))
        self.records.append(record)
        shown = {k: v for k, v in record.items() if k not in ("iteration", "loss", "seconds") and np.isfinite(v)}
        return self.progress(iteration, loss, seconds=record["seconds"], **shown)


def fit_chain_algorithm(X, y_enc, n_labels, params, *, previous=None, progress, dev=None, what="the CRF",
                        constraints=None, sample_weight=None):
    """Train a chain CRF by ``params["algorithm"]`` on validated, encoded sequences.

    ``params`` holds ChainCRF's parameters; ``dev`` is ``(X_dev, y_dev_enc)`` or None; ``what``
    names the model in a convergence warning; ``constraints`` is None or ``(allowed, structure)``
    (:mod:`sklearn_struct._chain_crf_constrained`: token masks of partial labels, ``y_enc`` -1
    there, and allowed transitions), which only ``"lbfgs"`` trains with; ``sample_weight``
    (n_sequences,) or None weighs each sequence (see
    :func:`sklearn_struct._chain_crf_weights.sequence_weights`). Returns
    ``(coef, intercept, transition, n_iter, objective, training_log)``. Shared by
    :class:`~sklearn_struct.ChainCRF` and :class:`~sklearn_struct.NonLocalCRF` (its base CRF).
    """
    algorithm = params["algorithm"]
    options = check_solver_options(algorithm, params["solver_options"])
    max_iter = params["max_iter"] if params["max_iter"] is not None else DEFAULT_MAX_ITER[algorithm]
    if algorithm == "lbfgs":
        return _fit_lbfgs(X, y_enc, n_labels, params, options, max_iter, previous, progress, dev, what, constraints,
                          sample_weight)
    if constraints is not None and constraints[0] is not None:
        raise ValueError(f"algorithm={algorithm!r} cannot train on partial labels (tokens labelled None or with a "
                         "set of labels); use algorithm='lbfgs', which marginalises over them.")
    data = TrainingData(X, y_enc, n_labels, params["all_possible_states"], params["all_possible_transitions"],
                        params["fit_intercept"], params["min_freq"], sample_weight)
    theta0 = np.zeros(data.n_params) if previous is None else data.params_from(*previous)
    log = _Log(progress, slice(data.n_weights, data.n_weights + n_labels), _dev(dev, n_labels, data.pairs, True))
    rng = np.random.RandomState(0)  # CRFsuite's shuffles are reproducible too
    if algorithm == "l2sgd":
        theta, n_iter, hit_max = fit_l2sgd(data, theta0, c2=params["c2"], max_iter=max_iter, delta=params["tol"],
                                           period=params["period"], options=options, rng=rng, report=log)
        if hit_max and not progress.stopped:
            _warn_max_iter("SGD", n_iter, what)
        # the exact objective at the result (the epochs' losses mix weights of different steps)
        objective = ChainObjective(X, y_enc, n_labels, params["c2"], all_possible_states=params["all_possible_states"],
                                   min_freq=params["min_freq"], sample_weight=sample_weight)
        objective = objective(theta)[0]
    else:
        theta, n_iter, objective = fit_online(data, algorithm, theta0, max_iter=max_iter, epsilon=params["epsilon"],
                                              options=options, rng=rng, report=log)
    return (*data.split_params(theta), n_iter, float(objective), log.records)


def _dev(dev, n_labels, pairs, sparse):
    return None if dev is None else DevSet(dev[0], dev[1], n_labels, pairs, sparse)


def _warn_max_iter(name, n_iter, what):
    warnings.warn(f"{name} did not converge for {what} after {n_iter} iterations (max_iter); increase max_iter "
                  "or tol.", ConvergenceWarning)


def _fit_lbfgs(X, y_enc, n_labels, params, options, max_iter, previous, progress, dev, what, constraints=None,
               sample_weight=None):
    """L-BFGS / OWL-QN on ChainCRF's objective; transitions that are no feature (and the bias without
    ``fit_intercept``) stay at 0, as do the transitions ``constraints`` forbid."""
    n_jobs = params["n_jobs"]
    common = dict(n_chunks=n_shards(n_jobs), n_jobs=n_jobs,
                  all_possible_states=params["all_possible_states"], min_freq=params["min_freq"])
    if constraints is None:
        objective = ChainObjective(X, y_enc, n_labels, params["c2"], sample_weight=sample_weight, **common)
    else:
        objective = ConstrainedChainObjective(X, y_enc, n_labels, params["c2"], allowed=constraints[0],
                                              structure=constraints[1], sample_weight=sample_weight, **common)
    y = np.concatenate(y_enc)
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in y_enc])])
    transitions = transition_mask(y, offsets, n_labels, params["all_possible_transitions"], params["min_freq"])
    return minimize_chain_objective(objective, transitions, params, options, max_iter, previous, progress, dev, what,
                                    constraints)


def minimize_chain_objective(objective, transitions, params, options, max_iter, previous, progress, dev=None,
                             what="the CRF", constraints=None):
    """L-BFGS / OWL-QN on a built chain objective (:class:`~sklearn_struct._chain_crf.ChainObjective`
    or one with its interface, e.g. over a cluster-resident corpus); ``transitions`` is the flat
    (L * L,) mask of the transitions that are features. Returns ``_fit_lbfgs``'s tuple."""
    n_w, L = objective.n_weights, objective.n_labels
    fixed = n_w + L + np.flatnonzero(~transitions)
    if constraints is not None:
        fixed = np.union1d(fixed, objective.forbidden_transitions())
    if not params["fit_intercept"]:
        fixed = np.concatenate([n_w + np.arange(L), fixed])
    theta0 = np.zeros(objective.n_params) if previous is None else objective.params_from(*previous)
    theta0[fixed] = 0.0

    def fun(theta):
        f, g = objective(theta)
        g[fixed] = 0.0
        return f, g

    sparse = objective.features.pairs is not None
    log = _Log(progress, slice(n_w, n_w + L), _dev(dev, L, objective.features.pairs, sparse))
    with objective:  # resident shards released at the end of the fit
        result = minimize_crfsuite(
            fun, theta0, c1=params["c1"], skip=(n_w, n_w + L), num_memories=options["num_memories"],
            linesearch=options["linesearch"], max_linesearch=options["max_linesearch"], max_iter=max_iter,
            delta=params["tol"], period=params["period"], epsilon=params["epsilon"],
            callback=lambda k, f, x, error_norm, improvement: log(k, f, x, error_norm=error_norm,
                                                                  improvement=improvement))
    if result["status"] == "max_iter":
        _warn_max_iter("L-BFGS", result["nit"], what)
    elif result["status"] == "linesearch" and result["nit"] == 0:
        warnings.warn(f"L-BFGS: the line search found no decrease from the starting point for {what}.",
                      ConvergenceWarning)
    coef, intercept, transition = objective.split_params(result["x"])
    return coef, intercept, transition, int(result["nit"]), float(result["fun"]), log.records

