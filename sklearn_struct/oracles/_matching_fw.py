"""Compiled kernels of Bethe learning of matchings: the assignment LMO and whole block-coordinate FW passes.

The default ``MLEStructMatcher`` fit is block-coordinate Frank-Wolfe on the dual of Tang et al. (2016,
App. D): ~100 examples per pass, hundreds of passes, each block step one gradient (entropy part plus
``-G_m theta``), one assignment problem, one exact line search. Here a whole pass is one call, and
each step does the same arithmetic as the Python step it replaced (``_reference_step`` in
``tests/test_mle_struct_kernels.py``, checked against it) with less work:

- Assignment: shortest augmenting paths with dual potentials (Jonker & Volgenant 1987; the
  rectangular form of Crouse 2016), exact for finite costs; a square block starts from the column
  duals of its last solve, so most rows are assigned by the start and few paths remain.
- Caches per block: ``log tau`` and ``log(1 - tau)`` (a step to a vertex multiplies ``tau`` or
  ``1 - tau`` by ``1 - eta``, so one ``log1p`` per entry updates them, by its series when small),
  ``-H_rho`` and ``G_m^T tau_m``; the gradient's entropy part needs no log and
  ``b = -G_m^T d`` reads ``n_left`` rows of ``G_m``, so one streaming read of ``G_m`` per step remains.
- Line search: the same safeguarded Newton and stopping rule as
  :func:`~sklearn_struct.oracles.matching.packed_bisect_step`; trial steps ``eta <= 0.02`` (late in a
  fit, nearly all) sum the entries off the vertex with ``tau <= 1/2`` by a series in ``eta`` over
  moments computed once per step.
"""

import numpy as np

from ..utils._jit import helper, kernel
from .matching import _TINY, _safe_log

__all__ = ["lsap", "lsap_warm", "bcfw_state", "bcfw_pass"]


@helper
def _lsap_into(cost, col4row, u, v, shortest, path, row4col, remaining, in_rows, in_cols, warm):
    """Minimum-cost assignment of every row of ``cost`` (``n_left <= n_right``) into ``col4row``.

    Column duals ``v``: 0, or with ``warm`` (square problems only) the ones passed in (those of the
    last solve of a nearby cost matrix, updated in place). Starts from ``u[i] = min_j cost[i, j] - v[j]``
    (feasible duals) with each row on its argmin column when that column is still free (reduced cost
    0: complementary slackness holds), then one shortest augmenting path per row left unassigned."""
    n_left, n_right = cost.shape
    warm = warm and n_left == n_right
    for j in range(n_right):
        if not warm:
            v[j] = 0.0
        row4col[j] = -1
    for i in range(n_left):
        best_j = 0
        for j in range(1, n_right):
            if cost[i, j] - v[j] < cost[i, best_j] - v[best_j]:
                best_j = j
        u[i] = cost[i, best_j] - v[best_j]
        col4row[i] = -1
        if row4col[best_j] < 0:
            col4row[i] = best_j
            row4col[best_j] = i
    for cur in range(n_left):
        if col4row[cur] >= 0:
            continue
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



_LOG_TINY = float(np.log(_TINY))
_SERIES_MAX = 0.02  # log1p by its series below this: 11 terms, truncation < 1e-17 relative


@helper
def _log1p(x):
    """``log(1 + x)`` for ``x >= 0``: the alternating series (Horner) when small, else the library call."""
    if x >= _SERIES_MAX:
        return np.log1p(x)
    acc = 1.0 / 11.0
    for k in range(10, 0, -1):
        acc = 1.0 / k - x * acc
    return x * acc



@helper
def _ratio(t, log1mt):
    """``t / (1 - t)``; near 1, where ``1 - t`` has lost its digits to rounding, from the cached
    ``log(1 - t)`` (exact there)."""
    if t <= 0.5:
        return t / (1.0 - t)
    return t * np.exp(-log1mt)

@helper
def _block_grad(logt, log1mt, tau, n_left, n_right, rho, out):
    """``grad(-H_rho)`` of one block (as :func:`~sklearn_struct.oracles.matching.neg_entropy_grad`)
    from the cached ``log tau`` and ``log(1 - tau)``."""
    w = 2.0 * rho - 1.0
    for j in range(n_right):
        col = 0.0
        if n_left < n_right:
            c = 0.0
            for i in range(n_left):
                c += tau[i * n_right + j]
            col = rho * (1.0 + _safe_log(1.0 - c))
        for i in range(n_left):
            r = i * n_right + j
            out[r] = 1.0 + logt[r] + w * (1.0 + log1mt[r]) - col


@helper
def _block_neg_entropy(logt, log1mt, tau, n_left, n_right, rho):
    """``-H_rho`` of one block (as :func:`~sklearn_struct.oracles.matching.neg_entropy`) from the caches."""
    w = 2.0 * rho - 1.0
    total = 0.0
    for r in range(n_left * n_right):
        total += tau[r] * logt[r] - w * (1.0 - tau[r]) * log1mt[r]
    if n_left < n_right:
        for j in range(n_right):
            c = 0.0
            for i in range(n_left):
                c += tau[i * n_right + j]
            if c < 1.0:
                total += rho * (1.0 - c) * np.log(1.0 - c)
    return total


@helper
def _vertex_slope_curv(tau, log1mt, ratio, y, n_left, n_right, eta, rho, lin, quad, s0, s0_log, c, dc):
    """Slope and curvature of ``lin eta + quad eta^2 / 2 - H_rho(tau + eta d)`` for a FW direction to
    a vertex, ``d = s - tau`` (``s[i, y[i]] = 1``): the terms of
    :func:`~sklearn_struct.oracles.matching.neg_entropy_slope_curv` rewritten with ``d = -tau`` off the
    vertex. There ``t = tau (1 - eta)``, so ``sum d log t`` and ``sum d^2 / t`` are the sums
    ``s0 = sum tau``, ``s0_log = sum tau log tau`` of the entries off the vertex and ``log(1 - eta)``, and
    ``log(1 - t) = log(1 - tau) + log1p(eta ratio)``, ``ratio = tau / (1 - tau)``; on the vertex
    ``1 - t = (1 - tau)(1 - eta)``. ``eta < 1``."""
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
                x = eta * ratio[r]
                slope -= w * t0 * (1.0 + max(_LOG_TINY, log1mt[r] + _log1p(x)))
                curv -= w * t0 * ratio[r] / (1.0 + x)
    if n_left < n_right:
        for j in range(n_right):
            cc = c[j] + eta * dc[j]
            slope -= rho * dc[j] * (1.0 + _safe_log(1.0 - cc))
            curv += rho * dc[j] * dc[j] / max(1.0 - cc, _TINY)
    return slope, curv


_N_MOMENTS = 10  # series terms of the small entries: truncation < 0.02^11 / 11 relative


@helper
def _slope_curv_by_moments(tau, log1mt, y, big, n_big, n_left, n_right, eta, rho, lin, quad, s0, s0_log, c_small,
                           moments, c, dc):
    """:func:`_vertex_slope_curv` for ``eta <= _SERIES_MAX``, the off-vertex entries with ``ratio <= 1``
    summed by series in ``eta`` over their precomputed moments ``sum tau ratio^k``
    (``sum tau log1p(eta ratio) = sum_k (-1)^(k+1) eta^k / k moments[k-1]``): ``O(n_left + n_big)``."""
    w = 2.0 * rho - 1.0
    om = 1.0 - eta
    log_om = np.log(om)
    slope = lin + quad * eta - (s0_log + log_om * s0)
    curv = quad + s0 / om
    for i in range(n_left):
        r = i * n_right + y[i]
        dd = 1.0 - tau[r]
        t = tau[r] + eta * dd
        slope += dd * (_safe_log(t) + w * (1.0 + log1mt[r] + log_om))
        curv += dd * dd / max(t, _TINY) - w * dd / om
    if w != 0.0:
        for k in range(n_big):
            r = big[k]
            t0 = tau[r]
            ratio = _ratio(t0, log1mt[r])
            x = eta * ratio
            slope -= w * t0 * (1.0 + max(_LOG_TINY, log1mt[r] + _log1p(x)))
            curv -= w * t0 * ratio / (1.0 + x)
        series = 0.0
        series_curv = 0.0
        for k in range(_N_MOMENTS - 1, -1, -1):  # Horner in eta
            series = moments[k] / (k + 1) - eta * series
            series_curv = moments[k] - eta * series_curv
        slope += c_small - w * eta * series
        curv -= w * series_curv
    if n_left < n_right:
        for j in range(n_right):
            cc = c[j] + eta * dc[j]
            slope -= rho * dc[j] * (1.0 + _safe_log(1.0 - cc))
            curv += rho * dc[j] * dc[j] / max(1.0 - cc, _TINY)
    return slope, curv


@helper
def _vertex_line_search(tau, logt, log1mt, ratio, y, n_left, n_right, rho, lin, quad, max_step, n_max, c, dc):
    """:func:`~sklearn_struct.oracles.matching.packed_bisect_step` (the same safeguarded Newton and
    stopping rule) for a direction to a vertex, capped at ``max_step``: once the root is known to be
    above the cap, the cap is returned. Trial steps ``eta <= _SERIES_MAX`` (late in a fit, nearly all)
    are evaluated by :func:`_slope_curv_by_moments`, the others entry by entry."""
    w = 2.0 * rho - 1.0
    s0 = 0.0
    s0_log = 0.0
    c_small = 0.0
    moments = np.zeros(_N_MOMENTS)
    big = np.empty(n_left * n_right, np.int64)
    n_big = 0
    for i in range(n_left):
        for j in range(n_right):
            r = i * n_right + j
            ratio[r] = _ratio(tau[r], log1mt[r])
            if j != y[i]:
                s0 += tau[r]
                s0_log += tau[r] * logt[r]
                if ratio[r] > 1.0:
                    big[n_big] = r
                    n_big += 1
                else:
                    c_small -= w * tau[r] * (1.0 + log1mt[r])
                    term = tau[r]
                    for k in range(_N_MOMENTS):
                        term *= ratio[r]
                        moments[k] += term
    if n_left < n_right:
        for j in range(n_right):
            c[j] = 0.0
        for i in range(n_left):
            for j in range(n_right):
                c[j] += tau[i * n_right + j]
        for j in range(n_right):
            dc[j] = -c[j]
        for i in range(n_left):
            dc[y[i]] += 1.0
    g0, h = _slope_curv_by_moments(tau, log1mt, y, big, n_big, n_left, n_right, 0.0, rho, lin, quad, s0, s0_log,
                                   c_small, moments, c, dc)
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
        if eta <= _SERIES_MAX:
            g, h = _slope_curv_by_moments(tau, log1mt, y, big, n_big, n_left, n_right, eta, rho, lin, quad, s0,
                                          s0_log, c_small, moments, c, dc)
        else:
            g, h = _vertex_slope_curv(tau, log1mt, ratio, y, n_left, n_right, eta, rho, lin, quad, s0, s0_log, c, dc)
    return min(max_step, eta if (hi < 1.0 or g <= 0.0) else lo)


@helper
def _vertex_update(tau, logt, log1mt, ratio, y, n_left, n_right, eta):
    """``tau += eta (s - tau)`` and its caches: off the vertex ``log t`` gains ``log(1 - eta)`` and
    ``log(1 - t)`` gains ``log1p(eta ratio)``; on it the other way round."""
    log_om = np.log(1.0 - eta)
    for i in range(n_left):
        for j in range(n_right):
            r = i * n_right + j
            if j == y[i]:
                tau[r] += eta * (1.0 - tau[r])
                logt[r] = _safe_log(tau[r])
                log1mt[r] = max(_LOG_TINY, log1mt[r] + log_om)
            else:
                tau[r] -= eta * tau[r]
                logt[r] = max(_LOG_TINY, logt[r] + log_om)
                log1mt[r] = min(0.0, max(_LOG_TINY, log1mt[r] + _log1p(eta * ratio[r])))


@helper
def _lsap_buffers(n):
    return (np.empty(n), np.empty(n), np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64),
            np.empty(n, np.int64), np.empty(n, np.bool_), np.empty(n, np.bool_))


@kernel
def lsap_warm(cost, v):
    """:func:`lsap` of a square ``cost`` started from the column duals ``v`` (any values; updated in
    place to optimal duals, a warm start for the next, nearby, cost matrix)."""
    n_left, n_right = cost.shape
    y = np.empty(n_left, np.int64)
    u, _, shortest, path, row4col, remaining, in_rows, in_cols = _lsap_buffers(n_right)
    _lsap_into(cost, y, u, v, shortest, path, row4col, remaining, in_rows, in_cols, True)
    return y


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
    _lsap_into(cost, y, u, v, shortest, path, row4col, remaining, in_rows, in_cols, False)
    return y



@helper
def _sub_scores(G, lo, hi, a, alpha, out):
    """``out -= G[lo:hi] @ a / alpha``, four partial sums per row (one streaming read of the block)."""
    n_feat = a.shape[0]
    for r in range(hi - lo):
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        f = 0
        while f + 4 <= n_feat:
            s0 += G[lo + r, f] * a[f]
            s1 += G[lo + r, f + 1] * a[f + 1]
            s2 += G[lo + r, f + 2] * a[f + 2]
            s3 += G[lo + r, f + 3] * a[f + 3]
            f += 4
        while f < n_feat:
            s0 += G[lo + r, f] * a[f]
            f += 1
        out[r] -= ((s0 + s1) + (s2 + s3)) / alpha

def bcfw_state(G, tau, offsets, shapes, rho):
    """Caches of :func:`bcfw_pass` for the packed ``tau``: ``log tau``, ``log(1 - tau)``, each block's
    ``-H_rho``, each block's ``G_m^T tau_m``, each block's assignment column duals (warm starts).
    numpy, once per fit (no kernel to compile)."""
    with np.errstate(divide="ignore"):
        logt = np.maximum(np.log(tau), _LOG_TINY)
        log1mt = np.maximum(np.log1p(-tau), _LOG_TINY)
    starts = offsets[:-1]
    w = 2.0 * rho - 1.0
    neg_h = np.add.reduceat(tau * logt - w * (1.0 - tau) * log1mt, starts)
    gt_tau = np.stack([G[a:b].T @ tau[a:b] for a, b in zip(offsets[:-1], offsets[1:])])
    for m, (n_left, n_right) in enumerate(shapes):
        if n_left < n_right:
            free = 1.0 - tau[offsets[m] : offsets[m + 1]].reshape(n_left, n_right).sum(axis=0)
            free = free[free > 0.0]
            neg_h[m] += rho * float(free @ np.log(free))
    duals = np.zeros((len(shapes), max(1, int(shapes[:, 1].max()))))
    return logt, log1mt, neg_h, gt_tau, duals


@kernel
def bcfw_pass(G, tau, a, offsets, shapes, order, alpha, rho, line_search, k0, max_step, n_bisect, gaps_only,
              block_gaps, logt, log1mt, neg_h, gt_tau, duals):
    """Block-coordinate FW steps on the examples ``order`` (in turn) of the packed dual, in place.

    ``tau`` (packed pseudo-marginals), ``a = sum_m G_m^T (y_m - tau_m)``, ``block_gaps[m]`` (the FW gap
    of block ``m`` before its step) and the caches of :func:`bcfw_state` are updated. ``gaps_only``:
    only the gaps, no step (the exact gap with ``order`` all examples). The gradient's entropy part
    is the cached one: accurate where ``1 - tau`` is below the rounding of ``tau``.
    ``line_search``: exact line search capped at ``max_step``, else the step ``2 M / (2 M + k)``,
    ``k = k0 + 1, ...`` the global step count.
    Returns -1, or the first example whose scores are not finite (then stops there, before its
    assignment).
    """
    n_samples = shapes.shape[0]
    size = 0
    width = 1
    for m in range(n_samples):
        size = max(size, offsets[m + 1] - offsets[m])
        width = max(width, shapes[m, 1])
    grad_buf = np.empty(size)
    d_buf = np.empty(size)
    ratio_buf = np.empty(size)
    y = np.empty(width, np.int64)
    u, _, shortest, path, row4col, remaining, in_rows, in_cols = _lsap_buffers(width)
    c = np.empty(width)
    dc = np.empty(width)
    b = np.empty(a.shape[0])
    k = k0
    for m in order:
        k += 1
        lo, hi = offsets[m], offsets[m + 1]
        n_left, n_right = shapes[m, 0], shapes[m, 1]
        tau_m, logt_m, log1mt_m = tau[lo:hi], logt[lo:hi], log1mt[lo:hi]
        grad = grad_buf[: hi - lo]
        _block_grad(logt_m, log1mt_m, tau_m, n_left, n_right, rho, grad)
        _sub_scores(G, lo, hi, a, alpha, grad)
        for r in range(hi - lo):
            if not np.isfinite(grad[r]):  # scores that overflowed: the assignment would follow garbage
                return m
        v = duals[m, :n_right]
        _lsap_into(grad.reshape((n_left, n_right)), y, u, v, shortest, path, row4col, remaining, in_rows, in_cols,
                   True)
        d = d_buf[: hi - lo]
        for r in range(hi - lo):
            d[r] = -tau_m[r]
        for i in range(n_left):
            d[i * n_right + y[i]] += 1.0
        gap = 0.0
        for r in range(hi - lo):
            gap -= d[r] * grad[r]
        block_gaps[m] = max(gap, 0.0)
        if gap <= 0.0 or gaps_only:
            continue
        # b = -G_m^T d = G_m^T tau_m - sum_i G_m[i, y_i]: one row per left node instead of all of G_m
        n_feat = a.shape[0]
        for f in range(n_feat):
            b[f] = gt_tau[m, f]
        for i in range(n_left):
            row = lo + i * n_right + y[i]
            for f in range(n_feat):
                b[f] -= G[row, f]
        ratio = ratio_buf[: hi - lo]
        if line_search:
            lin = 0.0
            quad = 0.0
            for f in range(n_feat):
                lin += a[f] * b[f]
                quad += b[f] * b[f]
            lin /= alpha
            quad /= alpha
            eta = _vertex_line_search(tau_m, logt_m, log1mt_m, ratio, y, n_left, n_right, rho, lin, quad, max_step,
                                      n_bisect, c, dc)
        else:
            for r in range(hi - lo):
                ratio[r] = _ratio(tau_m[r], log1mt_m[r])
            eta = 2.0 * n_samples / (2.0 * n_samples + k)
        if eta <= 0.0:
            continue
        _vertex_update(tau_m, logt_m, log1mt_m, ratio, y, n_left, n_right, eta)
        for f in range(n_feat):
            a[f] += eta * b[f]
            gt_tau[m, f] -= eta * b[f]
        neg_h[m] = _block_neg_entropy(logt_m, log1mt_m, tau_m, n_left, n_right, rho)
    return -1
