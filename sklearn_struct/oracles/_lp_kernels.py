"""Numba kernels of LP-MAP dual coordinate descent (private; see :mod:`sklearn_struct.oracles.lp`).

The public functions in ``lp.py`` validate their input and call these on plain arrays; the math
(dual, star update, decoding, certificates) is documented there.
"""

import numpy as np
from numba import njit

from ..utils._jit import helper, kernel

_NEG = -np.inf

# --------------------------------------------------------------------------------------
# Per-sample kernels
# --------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _table(pairwise, e, side, a, b):
    """pairwise_e with the *other* endpoint in state ``a`` and the receiving endpoint (``side``) in ``b``."""
    if side == 1:
        return pairwise[e, a, b]
    return pairwise[e, b, a]


@helper(inline="always")  # inlined in numba IR: as a call, the passes ran 13% slower
def _star_gather(j, unary, pairwise, edges, n_states, indptr, slots, delta, gamma, total):
    """The first half of node ``j``'s star update: ``gamma[p - lo, b] = max_a [pairwise_e(a, b) - delta_{e->i}(a)]``
    for each edge slot ``p`` of ``j`` and ``total[b] = unary_j(b) + sum gamma``; returns ``deg j``."""
    lo, hi = indptr[j], indptr[j + 1]
    nj = n_states[j]
    for b in range(nj):
        total[b] = unary[j, b]
    for p in range(lo, hi):
        k = slots[p]
        e, side = k >> 1, k & 1
        ni = n_states[edges[e, 1 - side]]
        ko = k ^ 1
        for b in range(nj):
            best = _NEG
            for a in range(ni):
                v = _table(pairwise, e, side, a, b) - delta[ko, a]
                if v > best:
                    best = v
            gamma[p - lo, b] = best
            total[b] += best
    return hi - lo


@helper(inline="always")
def _star_scatter(j, n_states, indptr, slots, delta, gamma, total, scale):
    """The second half: ``delta_{e->j}(b) = gamma_e(b) - scale * total(b)`` (``scale = 1 / (1 + blocks' degree)``)."""
    lo, hi, nj = indptr[j], indptr[j + 1], n_states[j]
    for p in range(lo, hi):
        k = slots[p]
        for b in range(nj):
            delta[k, b] = gamma[p - lo, b] - scale * total[b]


@helper
def _passes_one(n_passes, unary, pairwise, edges, n_states, indptr, slots, delta, gamma, total):
    """``n_passes`` sweeps of star updates: each node's incoming messages minimise g exactly, in turn."""
    for _ in range(n_passes):
        for j in range(n_states.shape[0]):
            if indptr[j + 1] == indptr[j]:
                continue
            deg = _star_gather(j, unary, pairwise, edges, n_states, indptr, slots, delta, gamma, total)
            _star_scatter(j, n_states, indptr, slots, delta, gamma, total, 1.0 / (1.0 + deg))


@helper
def _belief(i, unary, n_states, indptr, slots, delta, out):
    for a in range(n_states[i]):
        out[a] = unary[i, a]
    for p in range(indptr[i], indptr[i + 1]):
        k = slots[p]
        for a in range(n_states[i]):
            out[a] += delta[k, a]


@helper
def _edge_max(e, pairwise, edges, n_states, delta):
    """max_{a,b} pairwise_e(a, b) - delta_{e->u}(a) - delta_{e->v}(b), and its argmax (a, b)."""
    best, ba, bb = _NEG, 0, 0
    for a in range(n_states[edges[e, 0]]):
        da = delta[2 * e, a]
        for b in range(n_states[edges[e, 1]]):
            v = pairwise[e, a, b] - da - delta[2 * e + 1, b]
            if v > best:
                best, ba, bb = v, a, b
    return best, ba, bb


@helper
def _dual_one(unary, pairwise, edges, n_states, indptr, slots, delta, buf):
    g = 0.0
    for i in range(n_states.shape[0]):
        _belief(i, unary, n_states, indptr, slots, delta, buf)
        best = _NEG
        for a in range(n_states[i]):
            if buf[a] > best:
                best = buf[a]
        g += best
    for e in range(edges.shape[0]):
        g += _edge_max(e, pairwise, edges, n_states, delta)[0]
    return g


@helper
def _belief_argmax(i, unary, n_states, indptr, slots, delta, buf):
    """The state of node ``i`` with the largest belief (``buf``: scratch of length >= its states)."""
    _belief(i, unary, n_states, indptr, slots, delta, buf)
    best, arg = _NEG, 0
    for a in range(n_states[i]):
        if buf[a] > best:
            best, arg = buf[a], a
    return arg


@helper
def _decode_one(unary, n_states, indptr, slots, delta, buf, y):
    for i in range(n_states.shape[0]):
        y[i] = _belief_argmax(i, unary, n_states, indptr, slots, delta, buf)


@helper
def _primal_one(unary, pairwise, edges, y):
    s = 0.0
    for i in range(y.shape[0]):
        s += unary[i, y[i]]
    for e in range(edges.shape[0]):
        s += pairwise[e, y[edges[e, 0]], y[edges[e, 1]]]
    return s


@helper
def _icm_one(unary, pairwise, edges, n_states, indptr, slots, y, max_sweeps, buf):
    """Iterated conditional modes from ``y`` (in place); returns the number of sweeps."""
    for sweep in range(max_sweeps):
        changed = False
        for i in range(n_states.shape[0]):
            for a in range(n_states[i]):
                buf[a] = unary[i, a]
            for p in range(indptr[i], indptr[i + 1]):
                k = slots[p]
                e, side = k >> 1, k & 1
                other = y[edges[e, 1 - side]]
                for a in range(n_states[i]):
                    buf[a] += _table(pairwise, e, side, other, a)
            best, arg = buf[y[i]], y[i]
            for a in range(n_states[i]):
                if buf[a] > best + 1e-12 * (1.0 + abs(best)):
                    best, arg = buf[a], a
            if arg != y[i]:
                y[i] = arg
                changed = True
        if not changed:
            return sweep + 1
    return max_sweeps


# --------------------------------------------------------------------------------------
# Batched kernels: serial and nogil over a block of samples; lp.py runs blocks on threads
# (oracles/_threads.py) instead of numba's parallel=True, whose compile cost dominated a first fit
# --------------------------------------------------------------------------------------


@kernel
def _star_passes_batch(n_passes, unary, pairwise, edges, n_states, indptr, slots, delta, max_deg, S):
    gamma = np.empty((max(max_deg, 1), S))
    total = np.empty(S)
    for m in range(unary.shape[0]):
        _passes_one(n_passes, unary[m], pairwise, edges, n_states, indptr, slots, delta[m], gamma, total)


@kernel
def _dual_batch(unary, pairwise, edges, n_states, indptr, slots, delta, S, out):
    buf = np.empty(S)
    for m in range(unary.shape[0]):
        out[m] = _dual_one(unary[m], pairwise, edges, n_states, indptr, slots, delta[m], buf)


@kernel
def _decode_batch(unary, n_states, indptr, slots, delta, S, Y):
    buf = np.empty(S)
    for m in range(unary.shape[0]):
        _decode_one(unary[m], n_states, indptr, slots, delta[m], buf, Y[m])


@kernel
def _primal_batch(unary, pairwise, edges, Y, out):
    for m in range(unary.shape[0]):
        out[m] = _primal_one(unary[m], pairwise, edges, Y[m])


@kernel
def _lp_map_batch(unary, pairwise, edges, n_states, indptr, slots, delta, max_deg, S, max_iter, tol,
                  Y, dual, primal, n_iter):
    """Star passes per sample until certified (gap <= tol_abs) or the dual stalls, then the decoding.

    One kernel (no per-sample helper): each helper numba compiles is compiled again into its callers.
    """
    gamma = np.empty((max(max_deg, 1), S))
    total = np.empty(S)
    buf = np.empty(S)
    for m in range(unary.shape[0]):
        u, dm, y = unary[m], delta[m], Y[m]
        g_old = _dual_one(u, pairwise, edges, n_states, indptr, slots, dm, buf)
        it = 0
        while True:
            _decode_one(u, n_states, indptr, slots, dm, buf, y)
            p = _primal_one(u, pairwise, edges, y)
            scale = max(1.0, abs(g_old))
            if g_old - p <= tol * scale or it >= max_iter:
                dual[m], primal[m], n_iter[m] = g_old, p, it
                break
            _passes_one(1, u, pairwise, edges, n_states, indptr, slots, dm, gamma, total)
            it += 1
            g = _dual_one(u, pairwise, edges, n_states, indptr, slots, dm, buf)
            if g_old - g <= 0.01 * tol * scale:
                _decode_one(u, n_states, indptr, slots, dm, buf, y)
                dual[m], primal[m], n_iter[m] = g, _primal_one(u, pairwise, edges, y), it
                break
            g_old = g


@kernel
def _icm_batch(unary, pairwise, edges, n_states, indptr, slots, Y, max_sweeps, S, primal):
    buf = np.empty(S)
    for m in range(unary.shape[0]):
        _icm_one(unary[m], pairwise, edges, n_states, indptr, slots, Y[m], max_sweeps, buf)
        primal[m] = _primal_one(unary[m], pairwise, edges, Y[m])


@kernel
def _pseudo_marginals_batch(unary, n_states, indptr, slots, delta, rtol, out):
    S = out.shape[2]
    buf = np.empty(S)
    for m in range(unary.shape[0]):
        for i in range(n_states.shape[0]):
            _belief(i, unary[m], n_states, indptr, slots, delta[m], buf)
            best = _NEG
            for a in range(n_states[i]):
                best = max(best, buf[a])
            cut = best - rtol * max(1.0, abs(best))
            count = 0
            for a in range(n_states[i]):
                if buf[a] >= cut:
                    count += 1
            for a in range(S):
                out[m, i, a] = 1.0 / count if (a < n_states[i] and buf[a] >= cut) else 0.0


@kernel
def _max_marginals_batch(unary, pairwise, edges, n_states, indptr, slots, delta, max_deg, out):
    """out[m, i, a] = g(delta) - star_i(delta) + unary_i(a) + sum_e gamma_e(a): the dual bound with y_i = a."""
    S = out.shape[2]
    buf = np.empty(S)
    for m in range(unary.shape[0]):
        u, dm = unary[m], delta[m]
        g = _dual_one(u, pairwise, edges, n_states, indptr, slots, dm, buf)
        for i in range(n_states.shape[0]):
            ni = n_states[i]
            _belief(i, u, n_states, indptr, slots, dm, buf)
            star = _NEG
            for a in range(ni):
                star = max(star, buf[a])
                out[m, i, a] = u[i, a]
            for a in range(ni, S):
                out[m, i, a] = _NEG
            for p in range(indptr[i], indptr[i + 1]):
                k = slots[p]
                e, side = k >> 1, k & 1
                star += _edge_max(e, pairwise, edges, n_states, dm)[0]
                no = n_states[edges[e, 1 - side]]
                for b in range(ni):
                    best = _NEG
                    for a in range(no):
                        best = max(best, _table(pairwise, e, side, a, b) - dm[k ^ 1, a])
                    out[m, i, b] += best
            for a in range(ni):
                out[m, i, a] += g - star


@kernel
def _conditional_batch(unary, pairwise, edges, n_states, indptr, slots, Y, out):
    """out[m, i, a] = unary_i(a) + sum_{e = ik} pairwise_e(a, y_k): the score terms touching y_i = a."""
    S = out.shape[2]
    for m in range(unary.shape[0]):
        for i in range(n_states.shape[0]):
            for a in range(S):
                out[m, i, a] = unary[m, i, a] if a < n_states[i] else _NEG
            for p in range(indptr[i], indptr[i + 1]):
                k = slots[p]
                e, side = k >> 1, k & 1
                other = Y[m, edges[e, 1 - side]]
                for a in range(n_states[i]):
                    out[m, i, a] += _table(pairwise, e, side, other, a)
