"""Bipartite matching oracles: Ryser permanent, assignment MAP, rho-Bethe free energy, FW and BP marginals.

A matching model on ``n_left <= n_right`` nodes has log-weights ``scores`` ``(n_left, n_right)``::

    p(Y) ∝ exp(sum_ij scores[i, j] * Y[i, j])

over 0/1 matrices ``Y`` with one 1 per row and at most one per column (``n_left == n_right``: the
permutation matrices). ``Z = perm(exp(scores))`` (the rectangular permanent).

Exact reference (Ryser 1963)
----------------------------
``perm(A) = (-1)^n sum_{S ⊆ cols} (-1)^|S| prod_i sum_{j in S} A[i, j]``, the subsets visited in
Gray-code order so each step adds or removes one column from the row sums. Unequal sides are
**padded** with ``n_right - n_left`` rows of ones (log-weight 0): the square permanent then counts every
injection ``(n_right - n_left)!`` times, which is divided out. Before the sum, the matrix is scaled to
near doubly-stochastic form by a few log-domain Sinkhorn sweeps (``log perm`` shifts by the scalings),
so entries are in ``[0, 1]``, the permanent is at least ``n!/n^n`` and nothing overflows. The same pass
accumulates ``d perm / d A[i, j]`` (products of the other rows' sums, by prefix/suffix products), so
the exact marginals ``A[i, j] * d perm / d A[i, j] / perm`` cost ``O(2^n n^2)``; ``n_right <= 20``.

rho-reweighted Bethe free energy (Tang et al. 2016, App. C)
-----------------------------------------------------------
For pseudo-marginals ``tau`` (rows sum to 1, columns to at most 1) and a uniform ``rho``::

    H_rho(tau) = sum_ij [(2 rho - 1)(1 - tau_ij) log(1 - tau_ij) - tau_ij log tau_ij]
                 - rho * sum_j (1 - c_j) log(1 - c_j),          c_j = sum_i tau_ij
    F_rho(tau) = -<scores, tau> - H_rho(tau),       log Z_rho = -min_tau F_rho(tau)

(the row vertex terms vanish since rows sum to 1; the column terms vanish for square problems).
``rho = 1`` is the Bethe permanent (Vontobel 2013; ``Z_1 <= Z``, Gurvits), ``rho = 0.5`` leaves
``-sum tau log tau``, concave, with ``Z_0.5 >= Z``. The gradient of ``-H_rho`` is
``1 + log tau_ij + (2 rho - 1)(1 + log(1 - tau_ij)) - rho (1 + log(1 - c_j))``; logs are clamped at
``1e-300`` so nothing is NaN at the boundary.

Frank-Wolfe inference minimises ``F_rho`` over the polytope with the assignment LMO
(:func:`scipy.optimize.linear_sum_assignment`) and an exact line search (bisection on the sign of the
directional derivative, which is monotone because ``F_rho`` is convex, Theorem C.1). The duality gap
``<tau - s, grad F(tau)>`` bounds ``F(tau) - min F``.

BP baseline (Bayati et al. 2008; Huang & Jebara 2009): sum-product on the edge-variable factor graph,
log-ratio messages, left factors "exactly one", right factors "exactly one" (square) or "at most one"::

    l_ij = s_ij - log sum_{k != j} exp(r_ik)               (edge ij -> right factor j)
    r_ij = s_ij - log(c + sum_{l != i} exp(l_lj))          (edge ij -> left factor i), c = [n_left < n_right]
    logit tau_ij = l_ij + r_ij - s_ij

with damping on the log-messages. Its fixed points are the stationary points of ``F_1``.
"""

import math

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from numba import njit
from scipy.optimize import linear_sum_assignment

from ..utils.validation import check_float_array, check_scalar_param
from ._permanent_log import log_permanent_dp

__all__ = [
    "MAX_RYSER_SIZE",
    "assignment",
    "batched_assignment",
    "bethe_free_energy",
    "bp_matching_marginals",
    "exact_marginals",
    "fw_bethe_marginals",
    "log_permanent",
    "sample_matchings",
]

MAX_RYSER_SIZE = 20
# Above this bound on Ryser's relative round-off, the permanent comes from the log-space DP instead.
MAX_RYSER_ERROR = 1e-8
_TINY = 1e-300


# ============================================================================ Ryser permanent


@njit(cache=True)
def _sinkhorn_log(logA, max_sweeps, tol):
    """Scale rows/columns of a square log-matrix in place until every column log-sum is within ``tol``
    of 0 (rows are exact after each sweep); return the total log-scaling removed."""
    n = logA.shape[0]
    shift = 0.0
    for sweep in range(max_sweeps):
        worst = 0.0
        for axis in range(2):
            for a in range(n):
                m = -np.inf
                for b in range(n):
                    v = logA[a, b] if axis == 0 else logA[b, a]
                    m = max(m, v)
                s = 0.0
                for b in range(n):
                    v = logA[a, b] if axis == 0 else logA[b, a]
                    s += math.exp(v - m)
                lse = m + math.log(s)
                if axis == 1:
                    worst = max(worst, abs(lse))
                shift += lse
                for b in range(n):
                    if axis == 0:
                        logA[a, b] -= lse
                    else:
                        logA[b, a] -= lse
        if worst < tol:
            break
    return shift


@njit(cache=True)
def _ryser_kernel(logA, want_grad):
    """log perm of a square log-matrix and, if asked, the marginals ``A_ij dperm/dA_ij / perm``."""
    n = logA.shape[0]
    L = logA.copy()
    shift = _sinkhorn_log(L, 100000, 1e-6)
    A = np.exp(L)
    rows = np.zeros(n)
    grad = np.zeros((n, n))
    prefix = np.empty(n + 1)
    suffix = np.empty(n + 1)
    in_set = np.zeros(n, dtype=np.bool_)
    total = 0.0
    magnitude = 0.0  # sum of the terms' magnitudes: the round-off of the alternating sum is eps times it
    size = 0
    for k in range(1, 1 << n):
        j = 0
        while not (k >> j) & 1:  # the bit that flips between Gray codes k-1 and k
            j += 1
        if in_set[j]:
            in_set[j] = False
            size -= 1
            for i in range(n):
                rows[i] -= A[i, j]
        else:
            in_set[j] = True
            size += 1
            for i in range(n):
                rows[i] += A[i, j]
        sign = -1.0 if (size & 1) else 1.0
        prefix[0] = 1.0
        for i in range(n):
            prefix[i + 1] = prefix[i] * rows[i]
        total += sign * prefix[n]
        magnitude += abs(prefix[n])
        if want_grad:
            suffix[n] = 1.0
            for i in range(n - 1, -1, -1):
                suffix[i] = suffix[i + 1] * rows[i]
            for i in range(n):
                others = sign * prefix[i] * suffix[i + 1]
                for jj in range(n):
                    if in_set[jj]:
                        grad[i, jj] += others
    if n & 1:
        total = -total
        grad = -grad
    if not (total > 0.0) or 2.0 * n * 2.220446049250313e-16 * magnitude > MAX_RYSER_ERROR * total:
        return np.nan, grad  # cancelled: the caller uses the log-space DP (_permanent_log)
    marg = A * grad / total
    return math.log(total) + shift, marg


def _ryser(logA, want_grad):
    """Ryser's (log perm, marginals), or the subtraction-free log-space DP where Ryser's alternating
    sum cancels beyond ``MAX_RYSER_ERROR`` (relative error bound ``2 n eps sum|terms| / perm``)."""
    log_z, marg = _ryser_kernel(logA, want_grad)
    if np.isnan(log_z):
        return log_permanent_dp(np.ascontiguousarray(logA, dtype=np.float64), want_grad)
    return log_z, marg


# Largest |score| accepted: differences of scores (and sums of n_right of them) must stay finite.
_MAX_ABS_SCORE = 1e300


def _check_scores(scores, name="scores", max_size=None):
    """A finite float64 ``(n_left, n_right)`` array with ``1 <= n_left <= n_right``; errors name ``name`` and the index."""
    scores = check_float_array(scores, name, ndim=2)
    n_left, n_right = scores.shape
    if n_left == 0 or n_left > n_right:
        raise ValueError(f"{name} must have 1 <= n_left <= n_right, got shape {scores.shape}.")
    big = np.abs(scores) > _MAX_ABS_SCORE / n_right
    if big.any():
        at = tuple(int(i) for i in np.argwhere(big)[0])
        raise ValueError(f"{name} holds {scores[at]:.3g} at index {at}: |scores| must stay below "
                         f"{_MAX_ABS_SCORE / n_right:.3g} so that their sums do not overflow.")
    if max_size is not None and n_right > max_size:
        raise ValueError(f"{name}: Ryser's algorithm is limited to n_right <= {max_size}, got {n_right}.")
    return scores


def _padded(scores):
    n_left, n_right = scores.shape
    if n_left == n_right:
        return scores
    return np.vstack([scores, np.zeros((n_right - n_left, n_right))])


def log_permanent(scores):
    """Exact ``log perm(exp(scores))`` by Ryser's formula (rectangular: sum over injections).

    Parameters
    ----------
    scores : array-like of shape (n_left, n_right)
        Log-weights, ``n_left <= n_right <= 20``.

    Returns
    -------
    log_z : float

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.oracles.matching import log_permanent
    >>> round(float(np.exp(log_permanent(np.zeros((3, 3))))), 6)  # 3! permutations
    6.0
    """
    scores = _check_scores(scores, max_size=MAX_RYSER_SIZE)
    n_left, n_right = scores.shape
    log_z, _ = _ryser(_padded(scores), False)
    return float(log_z - math.lgamma(n_right - n_left + 1))


def exact_marginals(scores):
    """Exact edge marginals ``P(Y_ij = 1)`` and ``log Z`` by one Ryser pass.

    Parameters
    ----------
    scores : array-like of shape (n_left, n_right)

    Returns
    -------
    marginals : ndarray of shape (n_left, n_right)
    log_z : float
    """
    return _exact_marginals(_check_scores(scores, max_size=MAX_RYSER_SIZE))


def _exact_marginals(scores):
    n_left, n_right = scores.shape
    log_z, marg = _ryser(_padded(scores), True)
    return marg[:n_left], float(log_z - math.lgamma(n_right - n_left + 1))


def sample_matchings(scores, n_samples, random_state=None):
    """Exact samples ``y`` (``y[i] = j``) from ``p(Y) ∝ exp(<scores, Y>)``, row by row.

    Row ``i``'s partner is drawn from its exact marginal given rows ``< i`` (Ryser on the remaining
    rows and free columns).

    Parameters
    ----------
    scores : array-like of shape (n_left, n_right), ``n_left <= n_right <= 20``
    n_samples : int >= 0
    random_state : None, int, numpy Generator or RandomState

    Returns
    -------
    samples : ndarray of shape (n_samples, n_left), int
    """
    scores = _check_scores(scores, max_size=MAX_RYSER_SIZE)
    n_samples = check_scalar_param(n_samples, "n_samples", kind="int", low=0)
    if isinstance(random_state, (float, str, bytes)):
        raise TypeError(f"random_state must be None, an int seed or a numpy Generator, got {random_state!r}.")
    if isinstance(random_state, np.random.RandomState):  # scikit-learn style state: draw a seed from it
        random_state = int(random_state.randint(np.iinfo(np.int32).max))
    try:
        rng = np.random.default_rng(random_state)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"random_state: {exc}") from None
    n_left, n_right = scores.shape
    out = np.empty((n_samples, n_left), dtype=np.int64)
    for s in range(n_samples):
        free = np.ones(n_right, dtype=bool)
        for i in range(n_left):
            cols = np.flatnonzero(free)
            marg, _ = _exact_marginals(np.ascontiguousarray(scores[i:, cols]))
            p = np.clip(marg[0], 0.0, None)
            j = cols[rng.choice(len(cols), p=p / p.sum())]
            out[s, i] = j
            free[j] = False
    return out


# ============================================================================ assignment LMO


def assignment(costs, *, check_input=True):
    """Minimum-cost assignment of every row: ``y[i] = j`` (``linear_sum_assignment``).

    Parameters
    ----------
    costs : array-like of shape (n_rows, n_cols), finite, ``1 <= n_rows <= n_cols``
    check_input : bool, default=True
        False skips the validation (callers in inner loops that built ``costs`` themselves).

    Returns
    -------
    y : ndarray of shape (n_rows,), int64

    Examples
    --------
    >>> assignment([[0.0, 1.0], [1.0, 0.0]]).tolist()
    [0, 1]
    """
    if check_input:
        costs = _check_scores(costs, "costs")
    return _assign(costs)


def _assign(costs):
    if not np.all(np.isfinite(costs)):  # scores that overflowed (features or weights near the float64 limit)
        raise ValueError("assignment: the matching scores are not finite (they overflow float64); rescale the "
                         "pair features X or the weights.")
    rows, cols = linear_sum_assignment(costs)
    y = np.empty(costs.shape[0], dtype=np.int64)
    y[rows] = cols
    return y


def _assign_chunk(costs_chunk):
    return [_assign(c) for c in costs_chunk]


def batched_assignment(costs_list, n_jobs=None, *, check_input=True):
    """:func:`assignment` for a list of cost matrices; contiguous chunks run in parallel with joblib.

    With one effective job (``n_jobs=None`` outside a ``parallel_config``) this is a plain loop; otherwise
    the active joblib backend (threads by default, or e.g. dask) runs one chunk per job.
    ``check_input=False`` skips the validation of each matrix.

    Examples
    --------
    >>> [y.tolist() for y in batched_assignment([[[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0, 2.0]]])]
    [[0, 1], [1]]
    """
    if check_input:
        if isinstance(costs_list, (str, bytes, dict)) or not hasattr(costs_list, "__iter__"):
            raise TypeError(f"costs_list must be a list of 2D cost matrices, got {type(costs_list).__name__}.")
        if isinstance(costs_list, np.ndarray) and costs_list.ndim != 3:
            raise ValueError(f"costs_list must be a list of 2D cost matrices, got an array of shape "
                             f"{costs_list.shape}.")
        costs_list = [_check_scores(c, f"costs_list[{m}]") for m, c in enumerate(costs_list)]
        if n_jobs is not None and (not isinstance(n_jobs, (int, np.integer)) or isinstance(n_jobs, bool)
                                   or n_jobs == 0):
            raise ValueError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}.")
    costs_list = list(costs_list)
    n_chunks = min(effective_n_jobs(n_jobs), len(costs_list) // 4)
    if n_chunks <= 1:
        return _assign_chunk(costs_list)
    bounds = np.linspace(0, len(costs_list), n_chunks + 1).round().astype(int)
    parts = Parallel(n_jobs=n_jobs, prefer="threads")(
        delayed(_assign_chunk)(costs_list[a:b]) for a, b in zip(bounds[:-1], bounds[1:])
    )
    return [y for part in parts for y in part]


# ============================================================================ rho-Bethe free energy


@njit(cache=True)
def _xlogx(x):
    return x * math.log(x) if x > 0.0 else 0.0


@njit(cache=True)
def _safe_log(x):
    return math.log(max(_TINY, x))


@njit(cache=True)
def neg_entropy(tau, rho):
    """``-H_rho(tau)`` of one ``(n_left, n_right)`` pseudo-marginal matrix."""
    n_left, n_right = tau.shape
    total = 0.0
    for j in range(n_right):
        c = 0.0
        for i in range(n_left):
            t = tau[i, j]
            c += t
            total += _xlogx(t) - (2.0 * rho - 1.0) * _xlogx(1.0 - t)
        if n_left < n_right:
            total += rho * _xlogx(1.0 - c)
    return total


@njit(cache=True)
def neg_entropy_grad(tau, rho, out):
    """Write ``grad(-H_rho)(tau)`` into ``out``."""
    n_left, n_right = tau.shape
    for j in range(n_right):
        c = 0.0
        for i in range(n_left):
            c += tau[i, j]
        col = rho * (1.0 + _safe_log(1.0 - c)) if n_left < n_right else 0.0
        for i in range(n_left):
            t = tau[i, j]
            out[i, j] = 1.0 + _safe_log(t) + (2.0 * rho - 1.0) * (1.0 + _safe_log(1.0 - t)) - col


@njit(cache=True)
def neg_entropy_slope_curv(tau, d, eta, rho):
    """First and second derivative of ``eta -> -H_rho(tau + eta d)``."""
    n_left, n_right = tau.shape
    slope = 0.0
    curv = 0.0
    for j in range(n_right):
        c = 0.0
        dc = 0.0
        for i in range(n_left):
            dij = d[i, j]
            t = tau[i, j] + eta * dij
            c += t
            dc += dij
            if dij != 0.0:
                slope += dij * (_safe_log(t) + (2.0 * rho - 1.0) * (1.0 + _safe_log(1.0 - t)))
                curv += dij * dij * (1.0 / max(t, _TINY) - (2.0 * rho - 1.0) / max(1.0 - t, _TINY))
        if n_left < n_right:
            slope -= rho * dc * (1.0 + _safe_log(1.0 - c))
            curv += rho * dc * dc / max(1.0 - c, _TINY)
    return slope, curv


@njit(cache=True)
def _bethe_energy_grad(tau, scores, rho, grad):
    neg_entropy_grad(tau, rho, grad)
    f = neg_entropy(tau, rho)
    for i in range(tau.shape[0]):
        for j in range(tau.shape[1]):
            f -= scores[i, j] * tau[i, j]
            grad[i, j] -= scores[i, j]
    return f


def bethe_free_energy(tau, scores, rho=1.0):
    """``F_rho(tau) = -<scores, tau> - H_rho(tau)`` and its gradient.

    Parameters
    ----------
    tau : ndarray of shape (n_left, n_right)
        Rows sum to 1, columns to at most 1, entries in ``[0, 1]``.
    scores : ndarray of shape (n_left, n_right)
    rho : float in [0, 1]

    Returns
    -------
    f : float
    grad : ndarray of shape (n_left, n_right)
    """
    scores = _check_scores(scores)
    tau = check_float_array(tau, "tau", ndim=2)
    if tau.shape != scores.shape:
        raise ValueError(f"tau has shape {tau.shape} but scores has shape {scores.shape}.")
    tau = _check_tau(tau, "tau", scores.shape)
    rho = check_scalar_param(rho, "rho", low=0.0, high=1.0)
    grad = np.empty_like(tau)
    return float(_bethe_energy_grad(tau, scores, float(rho), grad)), grad


def _check_tau(tau, name, shape, interior=False):
    """Marginals of ``shape`` in ``[0, 1]`` (``(0, 1)`` if ``interior``), rows summing to 1, columns to <= 1."""
    tau = check_float_array(tau, name, shape=shape)
    bad = (tau <= 0.0) | (tau >= 1.0) if interior else (tau < 0.0) | (tau > 1.0)
    if interior and shape[1] == 1:
        bad = tau != 1.0
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        rng = "(0, 1)" if interior else "[0, 1]"
        raise ValueError(f"{name}[{at[0]}, {at[1]}] = {tau[at]:.6g} is outside {rng}.")
    if interior:
        rows = np.flatnonzero(np.abs(tau.sum(axis=1) - 1.0) > 1e-6)
        cols = np.flatnonzero(tau.sum(axis=0) > 1.0 + 1e-6)
        if rows.size or cols.size:
            what = f"row {rows[0]} sums to {tau[rows[0]].sum():.6g}" if rows.size else \
                f"column {cols[0]} sums to {tau[:, cols[0]].sum():.6g}"
            raise ValueError(f"{name}: {what}; rows must sum to 1 and columns to at most 1.")
    return tau


def bisect_step(tau, d, rho, lin, quad, n_max):
    """Exact minimiser over ``eta in [0, 1]`` of the convex ``lin eta + quad eta^2 / 2 - H_rho(tau + eta d)``,
    by safeguarded Newton on its slope (see :func:`packed_bisect_step`)."""
    offsets = np.array([0, tau.size], dtype=np.int64)
    shapes = np.array([tau.shape], dtype=np.int64)
    return packed_bisect_step(tau.reshape(-1), d.reshape(-1), offsets, shapes, float(rho), lin, quad, n_max)


def uniform_start(n_left, n_right):
    """The strictly interior uniform point ``tau_ij = 1 / n_right``."""
    return np.full((n_left, n_right), 1.0 / n_right)


def fw_bethe_marginals(scores, rho=1.0, *, max_iter=1000, tol=1e-8, step="line", tau0=None, callback=None):
    """rho-Bethe marginals by Frank-Wolfe on ``F_rho`` with the assignment LMO.

    Parameters
    ----------
    scores : array-like of shape (n_left, n_right)
    rho : float in [0, 1], default=1.0
    max_iter : int, default=1000
    tol : float, default=1e-8
        Stop when the duality gap falls below ``tol``.
    step : {"line", "2/(t+2)"}, default="line"
        Exact line search, or ``2 / (t + 2)`` with ``t`` starting at 1 (iterates stay interior).
    tau0 : ndarray, default=None
        Start (strictly interior); the uniform matrix by default.
    callback : callable, default=None
        ``callback(t, tau)`` after every step (``tau`` is the live iterate: copy it to keep it).

    Returns
    -------
    tau : ndarray of shape (n_left, n_right)
    log_z : float
        ``-F_rho(tau)``, the Bethe estimate of ``log Z`` (a lower bound on ``-min F``'s negation
        error of at most the final gap).
    gaps : ndarray
        Duality gap at every iteration.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.oracles.matching import fw_bethe_marginals
    >>> tau, log_z, gaps = fw_bethe_marginals(np.zeros((3, 3)))
    >>> np.allclose(tau, 1 / 3)
    True
    """
    scores = _check_scores(scores)
    rho = check_scalar_param(rho, "rho", low=0.0, high=1.0)
    max_iter = check_scalar_param(max_iter, "max_iter", kind="int", low=0)
    tol = check_scalar_param(tol, "tol", low=0.0)
    if not isinstance(step, str) or step not in ("line", "2/(t+2)"):
        raise ValueError(f"step must be 'line' or '2/(t+2)', got {step!r}.")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}.")
    tau = uniform_start(*scores.shape) if tau0 is None else _check_tau(tau0, "tau0", scores.shape, True).copy()
    grad = np.empty_like(tau)
    gaps = []
    rows = np.arange(scores.shape[0])
    for t in range(1, max_iter + 1):
        f = _bethe_energy_grad(tau, scores, rho, grad)
        y = _assign(grad)
        s = np.zeros_like(tau)
        s[rows, y] = 1.0
        d = s - tau
        gap = -float(np.sum(d * grad))
        gaps.append(gap)
        if gap <= tol:
            break
        if step == "line":
            eta = bisect_step(tau, d, rho, -float(np.sum(scores * d)), 0.0, 60)
        else:
            eta = 2.0 / (t + 2.0)
        tau += eta * d
        if callback is not None:
            callback(t, tau)
    f = _bethe_energy_grad(tau, scores, rho, grad)
    return tau, -float(f), np.asarray(gaps)


# ============================================================================ BP baseline


@njit(cache=True)
def _loo_logsumexp(x, c, out):
    """``out[j] = log(c + sum_{k != j} exp(x[k]))`` without cancellation."""
    n = x.shape[0]
    i1 = 0
    for k in range(1, n):
        if x[k] > x[i1]:
            i1 = k
    m = max(x[i1], 0.0) if c > 0.0 else x[i1]
    total = c * math.exp(-m) if c > 0.0 else 0.0
    for k in range(n):
        total += math.exp(x[k] - m)
    for j in range(n):
        if j != i1:
            out[j] = m + math.log(total - math.exp(x[j] - m))
    m2 = 0.0 if c > 0.0 else -np.inf
    for k in range(n):
        if k != i1 and x[k] > m2:
            m2 = x[k]
    if m2 == -np.inf:
        out[i1] = -np.inf
        return
    s = c * math.exp(-m2) if c > 0.0 else 0.0
    for k in range(n):
        if k != i1:
            s += math.exp(x[k] - m2)
    out[i1] = m2 + math.log(s)


@njit(cache=True)
def _bp_kernel(S, damping, max_iter, tol, logl, logr):
    n_left, n_right = S.shape
    c = 1.0 if n_left < n_right else 0.0
    row_buf = np.empty(n_right)
    col_in = np.empty(n_left)
    col_buf = np.empty(n_left)
    tau = np.empty((n_left, n_right))
    old = np.empty((n_left, n_right))
    for i in range(n_left):
        for j in range(n_right):
            old[i, j] = 1.0 / (1.0 + math.exp(-(logl[i, j] + logr[i, j] - S[i, j])))
    scale = 1.0
    for i in range(n_left):
        for j in range(n_right):
            scale = max(scale, abs(S[i, j]))
    old_z = np.empty((n_left, n_right))
    for i in range(n_left):
        for j in range(n_right):
            old_z[i, j] = logl[i, j] + logr[i, j] - S[i, j]
    for it in range(max_iter):
        for i in range(n_left):  # edge -> right factor, through the left factor
            _loo_logsumexp(logr[i], 0.0, row_buf)
            for j in range(n_right):
                logl[i, j] = (1.0 - damping) * (S[i, j] - row_buf[j]) + damping * logl[i, j]
        for j in range(n_right):  # edge -> left factor, through the right factor
            for i in range(n_left):
                col_in[i] = logl[i, j]
            _loo_logsumexp(col_in, c, col_buf)
            for i in range(n_left):
                logr[i, j] = (1.0 - damping) * (S[i, j] - col_buf[i]) + damping * logr[i, j]
        delta = 0.0
        doubt = 0.0  # largest loss of a belief's confidence (|log-odds|): pinned beliefs hide it
        for i in range(n_left):
            for j in range(n_right):
                z = logl[i, j] + logr[i, j] - S[i, j]
                doubt = max(doubt, abs(old_z[i, j]) - abs(z))
                old_z[i, j] = z
                t = 1.0 / (1.0 + math.exp(-z)) if z > -700.0 else 0.0
                tau[i, j] = t
                delta = max(delta, abs(t - old[i, j]))
                old[i, j] = t
        # With large scores the beliefs pin at 0 / 1 long before BP settles: the log-odds of a
        # fixed point may still grow (the optimum lies on the boundary) but none may shrink towards
        # a flip, and every row sums to one (every column too, for square problems).
        if delta < tol and doubt <= 1e-9 * scale and _normalised(tau, n_left == n_right, max(100.0 * tol, 1e-9)):
            return tau, it + 1, True
    return tau, max_iter, False


@njit(cache=True)
def _normalised(tau, square, tol):
    """Every row of ``tau`` sums to 1 within ``tol`` (and every column, if ``square``)."""
    n_left, n_right = tau.shape
    for i in range(n_left):
        if abs(tau[i].sum() - 1.0) > tol:
            return False
    if square:
        for j in range(n_right):
            if abs(tau[:, j].sum() - 1.0) > tol:
                return False
    return True


def bp_matching_marginals(scores, *, damping=0.5, max_iter=1000, tol=1e-8, messages=None):
    """Bethe marginals of a matching model by damped log-domain sum-product BP.

    Parameters
    ----------
    scores : array-like of shape (n_left, n_right)
    damping : float in [0, 1), default=0.5
        Weight of the old log-message in each update.
    max_iter : int, default=1000
    tol : float, default=1e-8
        Stop when no marginal moves by more than ``tol`` in a sweep and every row (and, for
        square problems, every column) sums to 1 within ``max(100 tol, 1e-9)``: with large scores
        the marginals pin at 0 / 1 while the messages still move.
    messages : tuple of two ndarrays, default=None
        Warm-start log-messages ``(l, r)`` (updated in place); zeros by default.

    Returns
    -------
    tau : ndarray of shape (n_left, n_right)
        Beliefs ``P(Y_ij = 1)`` (rows sum to 1 only at a fixed point).
    n_iter : int
    converged : bool

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.oracles.matching import bp_matching_marginals
    >>> tau, n_iter, ok = bp_matching_marginals(np.zeros((4, 4)))
    >>> ok and np.allclose(tau, 0.25)
    True
    """
    scores = _check_scores(scores)
    damping = check_scalar_param(damping, "damping", low=0.0, high=1.0, closed="left")
    max_iter = check_scalar_param(max_iter, "max_iter", kind="int", low=1)
    tol = check_scalar_param(tol, "tol", low=0.0)
    if messages is None:
        messages = (np.zeros_like(scores), np.zeros_like(scores))
    if not isinstance(messages, (tuple, list)) or len(messages) != 2:
        raise TypeError(f"messages must be a pair (l, r) of log-message arrays, got {type(messages).__name__}.")
    for name, msg in zip(("messages[0]", "messages[1]"), messages):
        if not isinstance(msg, np.ndarray) or msg.dtype != np.float64 or msg.shape != scores.shape \
                or not msg.flags.c_contiguous or not msg.flags.writeable:
            raise ValueError(f"{name} must be a writeable C-contiguous float64 array of shape {scores.shape} "
                             "(updated in place).")
        check_float_array(msg, name)
    logl, logr = messages
    tau, n_iter, ok = _bp_kernel(scores, float(damping), int(max_iter), float(tol), logl, logr)
    return tau, int(n_iter), bool(ok)


# ============================================================================ packed examples (learning)
# Many examples share one flat array: example m is ``flat[offsets[m]:offsets[m + 1]]`` reshaped to
# ``shapes[m]`` (row-major).


@njit(cache=True)
def packed_neg_entropy(tau, offsets, shapes, rho):
    """``sum_m -H_rho(tau^m)`` over packed examples."""
    total = 0.0
    for m in range(shapes.shape[0]):
        block = tau[offsets[m] : offsets[m + 1]].reshape((shapes[m, 0], shapes[m, 1]))
        total += neg_entropy(block, rho)
    return total


@njit(cache=True)
def packed_neg_entropy_grad(tau, offsets, shapes, rho, out):
    """Write ``grad(-H_rho)`` of every packed example into the flat ``out``."""
    for m in range(shapes.shape[0]):
        a, b = offsets[m], offsets[m + 1]
        block = tau[a:b].reshape((shapes[m, 0], shapes[m, 1]))
        neg_entropy_grad(block, rho, out[a:b].reshape((shapes[m, 0], shapes[m, 1])))


@njit(cache=True)
def _packed_slope_curv(tau, d, offsets, shapes, eta, rho, lin, quad):
    slope, curv = lin + quad * eta, quad
    for m in range(shapes.shape[0]):
        a, b = offsets[m], offsets[m + 1]
        shape = (shapes[m, 0], shapes[m, 1])
        s, c = neg_entropy_slope_curv(tau[a:b].reshape(shape), d[a:b].reshape(shape), eta, rho)
        slope += s
        curv += c
    return slope, curv


@njit(cache=True)
def packed_bisect_step(tau, d, offsets, shapes, rho, lin, quad, n_max):
    """Exact line search of ``lin eta + quad eta^2 / 2 + sum_m -H_rho(tau^m + eta d^m)`` on [0, 1].

    The slope is non-decreasing (convexity), negative at 0 unless ``d`` is not a descent direction.
    Newton steps are taken while they stay inside the bracket ``[lo, hi]`` of the root, bisection
    otherwise; the result never reaches 1 unless the slope is still negative there.
    """
    g0, h = _packed_slope_curv(tau, d, offsets, shapes, 0.0, rho, lin, quad)
    if g0 >= 0.0:
        return 0.0
    lo, hi = 0.0, 1.0
    eta, g = 0.0, g0
    for _ in range(n_max):
        if g < 0.0:
            lo = eta
        else:
            hi = eta
        if hi - lo < 1e-12 or abs(g) <= 1e-10 * abs(g0):
            break
        nxt = eta - g / h if h > 0.0 else -1.0
        eta = nxt if lo < nxt < hi else 0.5 * (lo + hi)
        g, h = _packed_slope_curv(tau, d, offsets, shapes, eta, rho, lin, quad)
    return eta if (hi < 1.0 or g <= 0.0) else lo
