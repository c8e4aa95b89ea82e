"""A lean unconstrained L-BFGS for large smooth objectives (CRF likelihoods).

scipy's L-BFGS-B spends tens of milliseconds per iteration on bound-constraint
bookkeeping when the problem has ~10^5-10^6 parameters, which is as much as one CRF
gradient evaluation. Unconstrained problems need only the two-loop recursion
(``4 m n`` flops) and a line search, which is what this module does.

The line search backtracks from the unit step (quasi-Newton steps are well scaled)
with safeguarded quadratic interpolation until the Armijo condition holds. A
curvature pair is stored only when ``s.y > 0``, which keeps the inverse-Hessian
approximation positive definite; for a strictly convex objective (a CRF with ``c2 > 0``)
that always holds.
"""

from collections import deque

import numpy as np
from scipy.optimize import OptimizeResult

__all__ = ["lbfgs"]


def _two_loop(g, pairs):
    """Apply the L-BFGS inverse-Hessian approximation to g."""
    q = g.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        a = rho * np.dot(s, q)
        q -= a * y
        alphas.append(a)
    if pairs:
        s, y, _ = pairs[-1]
        q *= np.dot(s, y) / np.dot(y, y)
    for (s, y, rho), a in zip(pairs, reversed(alphas)):
        b = rho * np.dot(y, q)
        q += (a - b) * s
    return q


def lbfgs(fun, x0, *, max_iter=100, tol=1e-5, gtol=1e-10, memory=10, callback=None, max_backtracks=30):
    """Minimise ``fun`` (returning value and gradient) with L-BFGS.

    Parameters
    ----------
    fun : callable ``x -> (f, g)``
    x0 : ndarray
    max_iter : int
        Maximum number of iterations (each needs one or more evaluations).
    tol : float
        Stop when the relative decrease ``(f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1)``
        falls to ``tol`` or below (scipy's ``ftol`` convention).
    gtol : float
        Stop when ``max |g| <= gtol``.
    memory : int
        Number of curvature pairs kept.
    callback : callable ``(k, f, x) -> None``, optional

    Returns
    -------
    OptimizeResult with ``x``, ``fun``, ``jac``, ``nit``, ``nfev``, ``success``, ``message``.

    Examples
    --------
    >>> import numpy as np
    >>> res = lbfgs(lambda x: (np.sum((x - 3) ** 2), 2 * (x - 3)), np.zeros(4), tol=0)
    >>> np.allclose(res.x, 3), res.success
    (True, True)
    """
    x = np.array(x0, dtype=np.float64)
    f, g = fun(x)
    nfev = 1
    pairs = deque(maxlen=memory)
    message, success = "max_iter reached", False
    nit = 0
    for nit in range(1, max_iter + 1):
        if np.max(np.abs(g)) <= gtol:
            message, success, nit = "gradient below gtol", True, nit - 1
            break
        d = -_two_loop(g, pairs)
        slope = np.dot(g, d)
        if not slope < 0:  # not a descent direction: restart from steepest descent
            pairs.clear()
            d, slope = -g, -np.dot(g, g)
        step = 1.0 if pairs else min(1.0, 1.0 / np.sqrt(-slope))
        for _ in range(max_backtracks):
            x_new = x + step * d
            f_new, g_new = fun(x_new)
            nfev += 1
            if np.isfinite(f_new) and f_new <= f + 1e-4 * step * slope:
                break
            # minimiser of the quadratic through f, slope and f_new, kept within [0.1, 0.5] * step
            curv = f_new - f - slope * step if np.isfinite(f_new) else np.inf
            trial = -slope * step * step / (2.0 * curv) if curv > 0 else 0.5 * step
            step = min(max(trial, 0.1 * step), 0.5 * step)
        else:
            message = "line search failed to decrease the objective"
            break
        s, y = x_new - x, g_new - g
        sy = np.dot(s, y)
        if sy > 1e-12 * np.dot(y, y):
            pairs.append((s, y, 1.0 / sy))
        decrease = (f - f_new) / max(abs(f), abs(f_new), 1.0)
        x, f, g = x_new, f_new, g_new
        if callback is not None:
            callback(nit, f, x)
        if decrease <= tol:
            message, success = "relative decrease below tol", True
            break
    return OptimizeResult(x=x, fun=f, jac=g, nit=nit, nfev=nfev, success=success, message=message)
