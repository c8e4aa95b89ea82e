"""L-BFGS and OWL-QN for the chain CRF, with CRFsuite's (libLBFGS's) line searches and stopping rules.

Minimises ``F(x) = f(x) + c1 * sum_{k penalised} |x_k|`` for a smooth ``f`` (the CRF's
negative log-likelihood plus its L2 term). With ``c1 = 0`` this is plain L-BFGS (Nocedal
1980); with ``c1 > 0`` it is OWL-QN (Andrew & Gao, "Scalable training of L1-regularized
log-linear models", ICML 2007), as libLBFGS implements it for CRFsuite:

* the *pseudo-gradient* ``pg`` replaces the gradient: at ``x_k != 0`` it is
  ``g_k + c1 sign(x_k)``; at ``x_k = 0`` it is the one-sided derivative that decreases ``F``
  (``g_k + c1`` if that is negative, ``g_k - c1`` if that is positive, else 0);
* the quasi-Newton direction ``d = -H pg`` (two-loop recursion over the pairs
  ``s = x_{k+1} - x_k``, ``y = g_{k+1} - g_k`` of the *smooth* gradient) has every component
  that disagrees in sign with ``-pg`` set to zero;
* the backtracking line search (halving from the unit step; ``1 / ||d||`` at the first
  iteration) projects each trial point onto the orthant of the current point (the sign of
  ``x_k``, or of ``-pg_k`` where ``x_k = 0``): coordinates that would cross zero are set to
  zero, which is how exact zeros arise. The sufficient-decrease test is
  ``F(x) <= F(x_k) + ftol * pg . (x - x_k)``.

Line searches for ``c1 = 0`` (libLBFGS's names, as CRFsuite's ``linesearch`` option):
``"MoreThuente"`` (Moré & Thuente 1994, the MINPACK ``dcsrch`` algorithm as shipped in scipy),
``"Backtracking"`` (Armijo plus the Wolfe curvature condition, steps scaled by 0.5 / 2.1) and
``"StrongBacktracking"`` (the same with the strong Wolfe condition). As in CRFsuite,
``c1 > 0`` always uses the orthant-wise backtracking search.

Stopping rules (CRFsuite's): ``||pg|| / max(1, ||x||) < epsilon``; the relative decrease of
``F`` over the last ``period`` iterations, ``(F_{k-period} - F_k) / F_k``, below ``delta``;
``max_iter`` iterations.
"""

import numpy as np

from .utils._jit import kernel
from .utils.optimize import _dot, _lbfgs_direction

__all__ = ["minimize_crfsuite", "LINESEARCHES"]

LINESEARCHES = ("MoreThuente", "Backtracking", "StrongBacktracking")
_FTOL, _WOLFE = 1e-4, 0.9  # libLBFGS's sufficient-decrease and curvature constants
_MIN_STEP, _MAX_STEP = 1e-20, 1e20


@kernel
def _l1_norm(x, skip_lo, skip_hi):
    """sum |x_k| over the penalised entries (all but skip_lo:skip_hi)."""
    total = 0.0
    for k in range(x.shape[0]):
        if not skip_lo <= k < skip_hi:
            total += abs(x[k])
    return total


@kernel
def _pseudo_gradient(x, g, c1, skip_lo, skip_hi, out):
    """OWL-QN's pseudo-gradient of ``f + c1 |x|_1`` (entries skip_lo:skip_hi unpenalised)."""
    for k in range(x.shape[0]):
        if skip_lo <= k < skip_hi:
            out[k] = g[k]
        elif x[k] > 0.0:
            out[k] = g[k] + c1
        elif x[k] < 0.0:
            out[k] = g[k] - c1
        elif g[k] + c1 < 0.0:  # moving up decreases F
            out[k] = g[k] + c1
        elif g[k] - c1 > 0.0:  # moving down decreases F
            out[k] = g[k] - c1
        else:
            out[k] = 0.0
    return out


@kernel
def _constrain_direction(d, pg, skip_lo, skip_hi):
    """Zero the components of d that do not point against the pseudo-gradient."""
    for k in range(d.shape[0]):
        if not skip_lo <= k < skip_hi and d[k] * pg[k] >= 0.0:
            d[k] = 0.0


@kernel
def _owlqn_trial(xp, step, d, pg, skip_lo, skip_hi, out):
    """``xp + step d`` projected onto the orthant of xp (sign of ``-pg`` where xp is 0).

    Returns ``pg . (out - xp)``, the directional term of the sufficient-decrease test.
    """
    dg = 0.0
    for k in range(xp.shape[0]):
        v = xp[k] + step * d[k]
        if not skip_lo <= k < skip_hi:
            orthant = xp[k] if xp[k] != 0.0 else -pg[k]
            if v * orthant <= 0.0:
                v = 0.0
        out[k] = v
        dg += (v - xp[k]) * pg[k]
    return dg


@kernel
def _axpy_into(xp, step, d, out):
    for k in range(xp.shape[0]):
        out[k] = xp[k] + step * d[k]


def _backtracking(evaluate, x, xp, fp, gp, d, step, mode, max_linesearch):
    """libLBFGS's backtracking search with the (strong) Wolfe conditions; returns (f, g, step) or None."""
    dginit = _dot(gp, d)
    for _ in range(max_linesearch):
        _axpy_into(xp, step, d, x)
        f, g = evaluate(x)
        width = 0.5
        if f <= fp + _FTOL * step * dginit:
            dg = _dot(g, d)
            if dg >= _WOLFE * dginit and (mode == "Backtracking" or dg <= -_WOLFE * dginit):
                return f, g, step
            width = 2.1 if dg < _WOLFE * dginit else 0.5
        if not _MIN_STEP <= step * width <= _MAX_STEP:
            return None
        step *= width
    return None


def _more_thuente(evaluate, x, xp, fp, gp, d, step, max_linesearch):
    """Moré-Thuente search (MINPACK's dcsrch, from scipy); returns (f, g, step) or None."""
    from scipy.optimize._dcsrch import DCSRCH  # the MINPACK-2 line search, ported by scipy

    cache = {}

    def at(alpha):
        if alpha not in cache:
            _axpy_into(xp, alpha, d, x)
            cache.clear()
            cache[alpha] = evaluate(x)
        return cache[alpha]

    search = DCSRCH(lambda a: at(a)[0], lambda a: _dot(at(a)[1], d), _FTOL, _WOLFE, 1e-16, _MIN_STEP, _MAX_STEP)
    alpha, f, _, task = search(step, phi0=fp, derphi0=_dot(gp, d), maxiter=max_linesearch)
    if alpha is None or not task.startswith(b"CONV"):
        return None
    f, g = at(alpha)
    return f, g, alpha


def _owlqn_search(evaluate, x, xp, fp, pg, d, step, c1, skip, max_linesearch):
    """Orthant-wise backtracking (halving); returns (F, g, step) or None."""
    for _ in range(max_linesearch):
        dg = _owlqn_trial(xp, step, d, pg, skip[0], skip[1], x)
        f, g = evaluate(x)
        f += c1 * _l1_norm(x, *skip)
        if f <= fp + _FTOL * dg:
            return f, g, step
        if step * 0.5 < _MIN_STEP:
            return None
        step *= 0.5
    return None


def minimize_crfsuite(fun, x0, *, c1=0.0, skip=(0, 0), num_memories=6, linesearch="MoreThuente",
                      max_linesearch=20, max_iter=None, delta=1e-5, period=10, epsilon=1e-5, callback=None):
    """Minimise ``fun(x)[0] + c1 * |x|_1`` (entries ``skip[0]:skip[1]`` unpenalised) from ``x0``.

    ``fun`` returns the smooth value and its gradient (a fresh array). ``callback(k, F, x)``
    after iteration k; returning True stops. Returns a dict with ``x``, ``fun`` (F),
    ``nit``, ``status`` (``"converged"``: epsilon or delta test met; ``"max_iter"``;
    ``"linesearch"``: no acceptable step; ``"callback"``), ``error_norm`` and
    ``improvement`` of the last iteration.
    """
    skip = (int(skip[0]), int(skip[1]))
    x = np.array(x0, dtype=np.float64)
    f, g = fun(x)
    if c1 > 0:
        f += c1 * _l1_norm(x, *skip)
    pg = _pseudo_gradient(x, g, c1, *skip, np.empty_like(x)) if c1 > 0 else g
    out = {"x": x, "fun": f, "nit": 0, "status": "converged", "error_norm": np.nan, "improvement": np.nan}
    if np.sqrt(_dot(pg, pg)) / max(1.0, np.sqrt(_dot(x, x))) <= epsilon:
        return out
    S, Y = np.empty((num_memories, x.size)), np.empty((num_memories, x.size))
    rho = np.empty(num_memories)
    stored = []
    history = [f]  # F of the last `period` iterations
    d = -pg
    step = 1.0 / np.sqrt(_dot(d, d))
    xp = np.empty_like(x)
    k = 0
    while True:
        k += 1
        xp[:] = x
        fp, gp, pgp = f, g, pg
        if c1 > 0:
            found = _owlqn_search(fun, x, xp, fp, pgp, d, step, c1, skip, max_linesearch)
        elif linesearch == "MoreThuente":
            found = _more_thuente(fun, x, xp, fp, gp, d, step, max_linesearch)
        else:
            found = _backtracking(fun, x, xp, fp, gp, d, step, linesearch, max_linesearch)
        if found is None:  # keep the last accepted point
            x[:] = xp
            out.update(x=x, fun=fp, nit=k - 1, status="linesearch")
            return out
        f, g, step = found
        pg = _pseudo_gradient(x, g, c1, *skip, np.empty_like(x)) if c1 > 0 else g
        error_norm = np.sqrt(_dot(pg, pg)) / max(1.0, np.sqrt(_dot(x, x)))
        improvement = (history[0] - f) / f if len(history) > period - 1 and f != 0 else np.nan
        history.append(f)
        del history[:-period]
        out.update(x=x, fun=f, nit=k, error_norm=error_norm, improvement=improvement)
        if callback is not None and callback(k, f, x, error_norm, improvement) is True:
            out["status"] = "callback"
            return out
        if error_norm <= epsilon or abs(improvement) < delta:
            return out
        if max_iter is not None and k >= max_iter:
            out["status"] = "max_iter"
            return out
        _store_pair(S, Y, rho, stored, x - xp, g - gp)
        _lbfgs_direction(pg, S, Y, rho, np.array(stored, dtype=np.int64), d)
        if c1 > 0:
            _constrain_direction(d, pg, *skip)
        step = 1.0


def _store_pair(S, Y, rho, stored, s, y):
    """Keep the curvature pair (s, y) in the ring buffer if ``s.y > 0`` (oldest pair replaced)."""
    sy = _dot(s, y)
    if not sy > 1e-12 * _dot(y, y):
        return
    free = [r for r in range(S.shape[0]) if r not in stored]
    row = free[0] if free else stored.pop(0)
    S[row], Y[row], rho[row] = s, y, 1.0 / sy
    stored.append(row)
