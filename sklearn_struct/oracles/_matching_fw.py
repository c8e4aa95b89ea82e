"""Compiled kernels of Bethe learning of matchings: the assignment LMO and whole block-coordinate FW passes.

The default ``MLEStructMatcher`` fit is block-coordinate Frank-Wolfe on the dual of Tang et al. (2016,
App. D): ~100 examples per pass, hundreds of passes, each block step one gradient (entropy part plus
``-G_m theta``), one assignment problem, one exact line search. Called from Python per block, the
step's fixed costs (dispatch of four kernels, ``scipy.optimize.linear_sum_assignment`` and its
checks, numpy temporaries) were about half its time; here a whole pass is one call.

Assignment: shortest augmenting paths with dual potentials (Jonker & Volgenant 1987; the
rectangular form of Crouse 2016), one row added per augmentation, Dijkstra over the reduced costs
``cost[i, j] - u[i] - v[j] >= 0``. ``O(n_left^2 n_right)``, exact for finite costs.

The block step is the one of ``_bcfw_step`` in ``sklearn_struct/mle_struct.py`` (the Python path it
replaces, kept in the tests as the reference): the same gradient, vertex, gap, line search (the
shared :func:`~sklearn_struct.oracles.matching.packed_bisect_step`) and step cap.
"""

import numpy as np

from ..utils._jit import helper, kernel
from .matching import _TINY, _safe_log

__all__ = ["lsap", "bcfw_pass"]


@helper
def _lsap_into(cost, col4row, u, v, shortest, path, row4col, remaining, in_rows, in_cols):
    """Minimum-cost assignment of every row of ``cost`` (``n_left <= n_right``) into ``col4row``."""
    n_left, n_right = cost.shape
    for i in range(n_left):
        u[i] = 0.0
        col4row[i] = -1
    for j in range(n_right):
        v[j] = 0.0
        row4col[j] = -1
    for cur in range(n_left):
        for j in range(n_right):
            shortest[j] = np.inf
            remaining[j] = n_right - 1 - j
            in_cols[j] = False
        for i in range(n_left):
            in_rows[i] = False
        n_remaining = n_right
        min_val = 0.0
        i = cur
        sink = -1
        while sink < 0:
            in_rows[i] = True
            best, best_at = np.inf, -1
            base = min_val - u[i]
            for k in range(n_remaining):
                j = remaining[k]
                r = base + cost[i, j] - v[j]
                if r < shortest[j]:
                    path[j] = i
                    shortest[j] = r
                if shortest[j] < best or (shortest[j] == best and row4col[j] < 0):
                    best, best_at = shortest[j], k
            min_val = best
            j = remaining[best_at]
            in_cols[j] = True
            n_remaining -= 1
            remaining[best_at] = remaining[n_remaining]
            if row4col[j] < 0:
                sink = j
            else:
                i = row4col[j]
        u[cur] += min_val
        for i in range(n_left):
            if in_rows[i] and i != cur:
                u[i] += min_val - shortest[col4row[i]]
        for j in range(n_right):
            if in_cols[j]:
                v[j] -= min_val - shortest[j]
        j = sink
        while True:
            i = path[j]
            row4col[j] = i
            nxt = col4row[i]
            col4row[i] = j
            j = nxt
            if i == cur:
                break


@helper
def _grad_and_logs(tau, n_left, n_right, rho, out, log1mt):
    """``grad(-H_rho)(tau)`` into ``out`` (as :func:`~sklearn_struct.oracles.matching.neg_entropy_grad`),
    ``log(1 - tau)`` into ``log1mt``."""
    w = 2.0 * rho - 1.0
    for j in range(n_right):
        c = 0.0
        for i in range(n_left):
            c += tau[i * n_right + j]
        col = rho * (1.0 + _safe_log(1.0 - c)) if n_left < n_right else 0.0
        for i in range(n_left):
            r = i * n_right + j
            t = tau[r]
            log1mt[r] = _safe_log(1.0 - t)
            out[r] = 1.0 + _safe_log(t) + w * (1.0 + log1mt[r]) - col


@helper
def _vertex_slope_curv(tau, log1mt, y, n_left, n_right, eta, rho, lin, quad, s0, s0_log, c, dc):
    """Slope and curvature of ``lin eta + quad eta^2 / 2 - H_rho(tau + eta d)`` for a FW direction to
    a vertex, ``d = s - tau`` (``s[i, y[i]] = 1``), the terms of
    :func:`~sklearn_struct.oracles.matching.neg_entropy_slope_curv` rewritten with ``d = -tau`` off the
    vertex: there ``t = tau (1 - eta)``, so ``sum d log t`` and ``sum d^2 / t`` are the sums ``s0 = sum tau``,
    ``s0_log = sum tau log tau`` of the entries off the vertex plus ``log(1 - eta)``; on it
    ``1 - t = (1 - tau)(1 - eta)``. One log per entry instead of two. ``eta < 1``."""
    w = 2.0 * rho - 1.0
    om = 1.0 - eta
    log_om = np.log(om)
    slope = lin + quad * eta - (s0_log + log_om * s0)
    curv = quad + s0 / om
    for i in range(n_left):
        for j in range(n_right):
            r = i * n_right + j
            t0 = tau[r]
            if j == y[i]:
                dd = 1.0 - t0
                t = t0 + eta * dd
                slope += dd * (_safe_log(t) + w * (1.0 + log1mt[r] + log_om))
                curv += dd * dd / max(t, _TINY) - w * dd / om
            elif w != 0.0:
                q = 1.0 - t0 * om
                slope -= w * t0 * (1.0 + _safe_log(q))
                curv -= w * t0 * t0 / max(q, _TINY)
    if n_left < n_right:
        for j in range(n_right):
            cc = c[j] + eta * dc[j]
            slope -= rho * dc[j] * (1.0 + _safe_log(1.0 - cc))
            curv += rho * dc[j] * dc[j] / max(1.0 - cc, _TINY)
    return slope, curv


@helper
def _vertex_line_search(tau, log1mt, y, n_left, n_right, rho, lin, quad, max_step, n_max, c, dc):
    """:func:`~sklearn_struct.oracles.matching.packed_bisect_step` (the same safeguarded Newton and
    stopping rule) for a direction to a vertex, capped at ``max_step``: once the root is known to be
    above the cap, the cap is returned."""
    s0 = 0.0
    s0_log = 0.0
    for i in range(n_left):
        for j in range(n_right):
            if j != y[i]:
                t0 = tau[i * n_right + j]
                s0 += t0
                s0_log += t0 * _safe_log(t0)
    for j in range(n_right):
        c[j] = 0.0
    for i in range(n_left):
        for j in range(n_right):
            c[j] += tau[i * n_right + j]
    for j in range(n_right):
        dc[j] = -c[j]
    for i in range(n_left):
        dc[y[i]] += 1.0
    g0, h = _vertex_slope_curv(tau, log1mt, y, n_left, n_right, 0.0, rho, lin, quad, s0, s0_log, c, dc)
    if g0 >= 0.0:
        return 0.0
    lo, hi = 0.0, 1.0
    eta, g = 0.0, g0
    for _ in range(n_max):
        if g < 0.0:
            lo = eta
        else:
            hi = eta
        if lo >= max_step:
            return max_step
        if hi - lo < 1e-12 or abs(g) <= 1e-10 * abs(g0):
            break
        nxt = eta - g / h if h > 0.0 else -1.0
        eta = nxt if lo < nxt < hi else 0.5 * (lo + hi)
        g, h = _vertex_slope_curv(tau, log1mt, y, n_left, n_right, eta, rho, lin, quad, s0, s0_log, c, dc)
    return min(max_step, eta if (hi < 1.0 or g <= 0.0) else lo)


@helper
def _lsap_buffers(n):
    return (np.empty(n), np.empty(n), np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64),
            np.empty(n, np.int64), np.empty(n, np.bool_), np.empty(n, np.bool_))


@kernel
def lsap(cost):
    """Minimum-cost assignment ``y[i] = j`` of every row of a finite ``(n_left, n_right)`` matrix,
    ``n_left <= n_right`` (no validation: see :func:`~sklearn_struct.oracles.matching.assignment`).

    Examples
    --------
    >>> import numpy as np
    >>> lsap(np.array([[0.0, 1.0], [1.0, 0.0]])).tolist()
    [0, 1]
    """
    n_left, n_right = cost.shape
    y = np.empty(n_left, np.int64)
    u, v, shortest, path, row4col, remaining, in_rows, in_cols = _lsap_buffers(n_right)
    _lsap_into(cost, y, u, v, shortest, path, row4col, remaining, in_rows, in_cols)
    return y


@kernel
def bcfw_pass(G, tau, a, offsets, shapes, order, alpha, rho, line_search, k0, max_step, n_bisect, block_gaps):
    """Block-coordinate FW steps on the examples ``order`` (in turn) of the packed dual, in place.

    ``tau`` (packed pseudo-marginals), ``a = sum_m G_m^T (y_m - tau_m)`` and ``block_gaps[m]`` (the
    FW gap of block ``m`` before its step) are updated. ``line_search``: exact line search capped at
    ``max_step``, else the step ``2 M / (2 M + k)``, ``k = k0 + 1, ...`` the global step count.
    """
    n_samples = shapes.shape[0]
    size = 0
    width = 1
    for m in range(n_samples):
        size = max(size, offsets[m + 1] - offsets[m])
        width = max(width, shapes[m, 1])
    grad_buf = np.empty(size)
    d_buf = np.empty(size)
    y = np.empty(width, np.int64)
    u, v, shortest, path, row4col, remaining, in_rows, in_cols = _lsap_buffers(width)
    log1mt = np.empty(size)
    c = np.empty(width)
    dc = np.empty(width)
    k = k0
    for m in order:
        k += 1
        lo, hi = offsets[m], offsets[m + 1]
        n_left, n_right = shapes[m, 0], shapes[m, 1]
        tau_m = tau[lo:hi]
        G_m = G[lo:hi]
        grad = grad_buf[: hi - lo]
        _grad_and_logs(tau_m, n_left, n_right, rho, grad, log1mt)
        scores = np.dot(G_m, a)
        for r in range(hi - lo):
            grad[r] -= scores[r] / alpha
        _lsap_into(grad.reshape((n_left, n_right)), y, u, v, shortest, path, row4col, remaining, in_rows, in_cols)
        d = d_buf[: hi - lo]
        for r in range(hi - lo):
            d[r] = -tau_m[r]
        for i in range(n_left):
            d[i * n_right + y[i]] += 1.0
        gap = 0.0
        for r in range(hi - lo):
            gap -= d[r] * grad[r]
        if gap <= 0.0:
            block_gaps[m] = max(gap, 0.0)
            continue
        b = -np.dot(G_m.T, d)
        if line_search:
            lin = np.dot(a, b) / alpha
            quad = np.dot(b, b) / alpha
            eta = _vertex_line_search(tau_m, log1mt, y, n_left, n_right, rho, lin, quad, max_step, n_bisect, c, dc)
        else:
            eta = 2.0 * n_samples / (2.0 * n_samples + k)
        for r in range(hi - lo):
            tau_m[r] += eta * d[r]
        for f in range(a.shape[0]):
            a[f] += eta * b[f]
        block_gaps[m] = gap
