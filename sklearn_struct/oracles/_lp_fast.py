"""Fast DLPW training kernels (private; used by :class:`~sklearn_struct.DLPWClassifier`).

Two things make an epoch of :func:`~sklearn_struct.oracles.lp_learning.dlpw_epoch` cost more than it
needs to on many labels, and this module removes both:

* the Pegasos step and the averaged iterate touch every weight at every step (``O(n_features * L *
  S)``) although a step changes only the columns of the labels whose loss-augmented maximiser
  differs from the truth. Here the step runs over those columns only, and the average is kept
  lazily: with scale ``a_t`` (``w_t = a_t V_t``) and ``A_t = a_1 + ... + a_t``, ``sum_t w_t =
  A_T V_T - U_T`` where ``U`` gains ``A_{t-1} dV_t`` for each change ``dV_t`` of ``V`` (the same
  trick as averaged SGD's), so a step costs ``O(nnz(x) * changed labels * S)``.
* on an acyclic label graph (``edges="tree"``, a forest) the local polytope is tight: the
  loss-augmented LP (eq. 7) is solved exactly by max-product dynamic programming, two passes of
  ``O(n_edges * S^2)``, instead of ``n_inner`` star passes on stored messages (the limit of the
  paper's ``R -> infinity``; no messages are stored).

The step is the same projected Pegasos step as :func:`~sklearn_struct.oracles.lp_learning.pegasos_step`
(same shrink, projection and fold of the scale), so the iterates agree with the plain kernels to
rounding (``tests/test_dlpw_fast.py``).
"""

import math

import numpy as np

from ..utils._jit import helper, kernel
from ._lp_kernels import _belief_argmax, _edge_max, _passes_one

_NEG = -np.inf


def forest_schedule(edges, n_nodes):
    """Breadth-first order of an acyclic graph, or None if ``edges`` has a cycle (or a repeated pair).

    Returns ``(order, parent, parent_edge, side)``: ``order`` visits every node after its parent
    (roots first, ``parent[root] = -1``); node ``i`` is endpoint ``edges[parent_edge[i], side[i]]``.
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    root = np.arange(n_nodes)

    def find(i):
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for u, v in edges:
        ru, rv = find(u), find(v)
        if ru == rv:
            return None
        root[ru] = rv
    adj = [[] for _ in range(n_nodes)]
    for e, (u, v) in enumerate(edges):
        adj[u].append((v, e, 1))
        adj[v].append((u, e, 0))
    parent = np.full(n_nodes, -1, dtype=np.int64)
    parent_edge = np.full(n_nodes, -1, dtype=np.int64)
    side = np.zeros(n_nodes, dtype=np.int64)
    seen = np.zeros(n_nodes, dtype=bool)
    order = []
    for r in range(n_nodes):
        if seen[r]:
            continue
        seen[r] = True
        queue = [r]
        while queue:
            i = queue.pop(0)
            order.append(i)
            for j, e, s in adj[i]:
                if not seen[j]:
                    seen[j] = True
                    parent[j], parent_edge[j], side[j] = i, e, s
                    queue.append(j)
    return np.array(order, dtype=np.int64), parent, parent_edge, side


@helper
def _tree_map(unary, P, a, edges, n_states, order, parent, pedge, side, bel, arg, y):
    """Exact MAP of ``unary + a * P`` on a forest by max-product; labels in ``y``, returns the score."""
    L = order.shape[0]
    for i in range(L):
        for s in range(n_states[i]):
            bel[i, s] = unary[i, s]
    for k in range(L - 1, -1, -1):  # leaves up: each node's belief is complete when it is reached
        i = order[k]
        p = parent[i]
        if p < 0:
            continue
        e = pedge[i]
        for b in range(n_states[p]):
            best, ba = _NEG, 0
            for s in range(n_states[i]):
                v = bel[i, s] + a * (P[e, s, b] if side[i] == 0 else P[e, b, s])
                if v > best:
                    best, ba = v, s
            arg[i, b] = ba
            bel[p, b] += best
    total = 0.0
    for k in range(L):  # roots down
        i = order[k]
        p = parent[i]
        if p < 0:
            best, bs = _NEG, 0
            for s in range(n_states[i]):
                if bel[i, s] > best:
                    best, bs = bel[i, s], s
            y[i] = bs
            total += best
        else:
            y[i] = arg[i, y[p]]
    return total


@helper
def _row_scores(m, Xp, Xi, Xd, V, ncols, out):
    """out[q] = x_m . V[:, q] for q < ncols (flat; padded states get zeros, never read)."""
    for q in range(ncols):
        out[q] = 0.0
    for p in range(Xp[m], Xp[m + 1]):
        f, x = Xi[p], Xd[p]
        for q in range(ncols):
            out[q] += x * V[f, q]


@helper
def _sparse_step(t, shrink, C, xi, xv, qidx, qval, nq, pidx, pval, npair, V, Pf, state, acc, UW, UP):
    """The projected Pegasos step of ``pegasos_step`` (scale times ``shrink``) for a subgradient with ``nq``
    nonzero node coefficients (columns ``qidx``, values ``qval``) and ``npair`` nonzero table entries (flat
    indices ``pidx`` into ``P``); ``acc = [A, use]``: lazy average (``UW``, ``UP`` gain ``A * dV``)."""
    state[0] *= shrink
    a = state[0]
    coef = -(C / t) / a
    sq = state[1]
    use, A = acc[1] > 0.0, acc[0]
    for k in range(nq):
        q, g = qidx[k], qval[k]
        for p in range(xi.shape[0]):
            f = xi[p]
            old = V[f, q]
            d = coef * xv[p] * g
            new = old + d
            sq += new * new - old * old
            V[f, q] = new
            if use:
                UW[f, q] += A * d
    for k in range(npair):
        j = pidx[k]
        old = Pf[j]
        d = coef * pval[k]
        new = old + d
        sq += new * new - old * old
        Pf[j] = new
        if use:
            UP[j] += A * d
    sq = max(sq, 0.0)
    norm2 = a * a * sq
    if norm2 > C:
        a *= math.sqrt(C / norm2)
    state[0], state[1] = a, sq
    acc[0] += a


@helper
def _flush(V, Pf, state, acc, UW, UP, sum_W, sum_Pf):
    """sum += A V - U (the steps since the last flush), then A = U = 0."""
    A = acc[0]
    if acc[1] > 0.0:
        for f in range(V.shape[0]):
            for q in range(V.shape[1]):
                sum_W[f, q] += A * V[f, q] - UW[f, q]
                UW[f, q] = 0.0
        for j in range(Pf.shape[0]):
            sum_Pf[j] += A * Pf[j] - UP[j]
            UP[j] = 0.0
    acc[0] = 0.0


@helper
def _full_step(t, C, xi, xv, qidx, qval, nq, pidx, pval, npair, V, Pf, state, acc, UW, UP, sum_W, sum_Pf):
    """One step; the rare cases of ``_step`` first: at ``t = 1`` the weights are reset to zero, and a scale
    about to fall below 1e-8 is folded into the weights (after flushing the lazy average)."""
    shrink = 1.0 - 1.0 / t
    if shrink <= 0.0 or state[0] * shrink < 1e-8:
        _flush(V, Pf, state, acc, UW, UP, sum_W, sum_Pf)
        a = state[0] if shrink > 0.0 else 0.0
        for f in range(V.shape[0]):
            for q in range(V.shape[1]):
                V[f, q] *= a
        for j in range(Pf.shape[0]):
            Pf[j] *= a
        state[0], state[1] = 1.0, state[1] * a * a
        if shrink <= 0.0:
            shrink = 1.0  # the weights are zero: w <- -C G
    _sparse_step(t, shrink, C, xi, xv, qidx, qval, nq, pidx, pval, npair, V, Pf, state, acc, UW, UP)


def _fast_epoch(order, t0, C, n_inner, loss_weight, Xp, Xi, Xd, Y, V, P, state, edges, n_states, indptr, slots,
                delta, tree_order, parent, pedge, side, sum_W, sum_P):
    """One DLPW epoch (see ``lp_learning.dlpw_epoch``): star passes on ``delta``, or the exact tree MAP if
    ``tree_order`` is not empty; sparse steps; lazy average into ``sum_W``, ``sum_P`` if not empty. Two
    kernels, so that a fit compiles only the one its graph needs."""
    if tree_order.shape[0] > 0:
        return _tree_epoch(order, t0, C, loss_weight, Xp, Xi, Xd, Y, V, P, state, edges, n_states, tree_order,
                           parent, pedge, side, sum_W, sum_P)
    return _star_epoch(order, t0, C, n_inner, loss_weight, Xp, Xi, Xd, Y, V, P, state, edges, n_states, indptr,
                       slots, delta, sum_W, sum_P)


@helper
def _epoch_buffers(V, P, L, E, sum_W, sum_P):
    S = P.shape[1]
    use = sum_W.size > 0
    UW = np.zeros_like(V) if use else np.zeros((1, 1))
    UP = np.zeros(E * S * S) if use else np.zeros(1)
    acc = np.array([0.0, 1.0 if use else 0.0])
    return UW, UP, acc, P.reshape(E * S * S), sum_P.reshape(sum_P.size)


@helper
def _augmented_unary(m, Xp, Xi, Xd, V, a, Y, loss_weight, n_states, flat, unary):
    """unary[i, s] = a * x_m . V[:, i*S + s] + loss_weight * [s != y_mi]."""
    S = unary.shape[1]
    _row_scores(m, Xp, Xi, Xd, V, n_states.shape[0] * S, flat)
    for i in range(n_states.shape[0]):
        for s in range(n_states[i]):
            unary[i, s] = a * flat[i * S + s] + (loss_weight if s != Y[m, i] else 0.0)


@helper
def _node_changes(m, Y, yhat, S, qidx, qval):
    """The nonzero node coefficients of f(yhat) - f(y_m); returns their number."""
    nq = 0
    for i in range(yhat.shape[0]):
        if yhat[i] != Y[m, i]:
            qidx[nq], qval[nq] = i * S + yhat[i], 1.0
            qidx[nq + 1], qval[nq + 1] = i * S + Y[m, i], -1.0
            nq += 2
    return nq


@helper
def _tree_step(m, t, C, Xp, Xi, Xd, Y, yhat, edges, S, qidx, qval, pidx, pval, V, Pf, state, acc, UW, UP, sum_W,
               sum_Pf):
    """The step along ``f(yhat) - f(y_m)`` for a labelling ``yhat`` (each edge follows its two nodes)."""
    npair = 0
    for e in range(edges.shape[0]):
        u, v = edges[e, 0], edges[e, 1]
        npair = _edge_change(e, S, yhat[u], yhat[v], Y[m, u], Y[m, v], pidx, pval, npair)
    _changes_step(m, t, C, Xp, Xi, Xd, Y, yhat, S, qidx, qval, pidx, pval, npair, V, Pf, state, acc, UW, UP,
                  sum_W, sum_Pf)


@helper
def _edge_change(e, S, a, b, yu, yv, pidx, pval, npair):
    """Record edge ``e``'s coefficients of f(yhat) - f(y_m) when its maximiser ``(a, b)`` is not the truth
    ``(yu, yv)``; returns the new count."""
    if a != yu or b != yv:
        pidx[npair], pval[npair] = (e * S + a) * S + b, 1.0
        pidx[npair + 1], pval[npair + 1] = (e * S + yu) * S + yv, -1.0
        npair += 2
    return npair


@helper
def _changes_step(m, t, C, Xp, Xi, Xd, Y, yhat, S, qidx, qval, pidx, pval, npair, V, Pf, state, acc, UW, UP,
                  sum_W, sum_Pf):
    """The Pegasos step of sample ``m`` along the recorded edge changes and the node changes of ``yhat``."""
    nq = _node_changes(m, Y, yhat, S, qidx, qval)
    lo, hi = Xp[m], Xp[m + 1]
    _full_step(float(t), C, Xi[lo:hi], Xd[lo:hi], qidx, qval, nq, pidx, pval, npair, V, Pf, state, acc, UW,
               UP, sum_W, sum_Pf)


@kernel
def _tree_epoch(order, t0, C, loss_weight, Xp, Xi, Xd, Y, V, P, state, edges, n_states, tree_order, parent, pedge,
                side, sum_W, sum_P):
    L, S, E = n_states.shape[0], P.shape[1], P.shape[0]
    UW, UP, acc, Pf, sum_Pf = _epoch_buffers(V, P, L, E, sum_W, sum_P)
    flat, unary, bel = np.empty(L * S), np.empty((L, S)), np.empty((L, S))
    arg, yhat = np.zeros((L, S), dtype=np.int64), np.zeros(L, dtype=np.int64)
    qidx, qval = np.empty(2 * L, dtype=np.int64), np.empty(2 * L)
    pidx, pval = np.empty(2 * E, dtype=np.int64), np.empty(2 * E)
    t = t0
    for m in order:
        t += 1
        a = state[0]
        _augmented_unary(m, Xp, Xi, Xd, V, a, Y, loss_weight, n_states, flat, unary)
        _tree_map(unary, P, a, edges, n_states, tree_order, parent, pedge, side, bel, arg, yhat)
        _tree_step(m, t, C, Xp, Xi, Xd, Y, yhat, edges, S, qidx, qval, pidx, pval, V, Pf, state, acc, UW, UP,
                   sum_W, sum_Pf)
    if acc[1] > 0.0:
        _flush(V, Pf, state, acc, UW, UP, sum_W, sum_Pf)
    return t


@helper
def _star_buffers(P, n_states, indptr):
    """Scratch of a star epoch: flat scores, unary, tables, labels, star gammas, subgradient indices."""
    L, S, E = n_states.shape[0], P.shape[1], P.shape[0]
    max_deg = 1
    for i in range(L):
        max_deg = max(max_deg, indptr[i + 1] - indptr[i])
    return (np.empty(L * S), np.empty((L, S)), np.empty_like(P), np.zeros(L, dtype=np.int64),
            np.empty((max_deg, S)), np.empty(S), np.empty(S), np.empty(2 * L, dtype=np.int64), np.empty(2 * L),
            np.empty(2 * E, dtype=np.int64), np.empty(2 * E))


@helper
def _scaled(P, a, pair):
    """pair = a * P (the tables at the current scale)."""
    for e in range(P.shape[0]):
        for u in range(P.shape[1]):
            for v in range(P.shape[2]):
                pair[e, u, v] = a * P[e, u, v]


@helper
def _dual_step(m, t, C, Xp, Xi, Xd, Y, yhat, pair, edges, n_states, dm, qidx, qval, pidx, pval, V, Pf, state, acc,
               UW, UP, sum_W, sum_Pf):
    """The Pegasos step of a visit to sample ``m`` along the subgradient of ``g(dm)``: node labels ``yhat`` (the
    beliefs' maximisers) and each edge's maximiser of its reparametrised table ``pair - dm`` (the edge
    maximisers need not agree with the node ones)."""
    S = pair.shape[1]
    npair = 0
    for e in range(pair.shape[0]):
        _, ea, eb = _edge_max(e, pair, edges, n_states, dm)
        npair = _edge_change(e, S, ea, eb, Y[m, edges[e, 0]], Y[m, edges[e, 1]], pidx, pval, npair)
    _changes_step(m, t, C, Xp, Xi, Xd, Y, yhat, S, qidx, qval, pidx, pval, npair, V, Pf, state, acc, UW, UP,
                  sum_W, sum_Pf)


@kernel
def _star_epoch(order, t0, C, n_inner, loss_weight, Xp, Xi, Xd, Y, V, P, state, edges, n_states, indptr, slots,
                delta, sum_W, sum_P):
    L, S, E = n_states.shape[0], P.shape[1], P.shape[0]
    UW, UP, acc, Pf, sum_Pf = _epoch_buffers(V, P, L, E, sum_W, sum_P)
    flat, unary, pair, yhat, gamma, total, buf, qidx, qval, pidx, pval = _star_buffers(P, n_states, indptr)
    t = t0
    for m in order:
        t += 1
        a = state[0]
        _augmented_unary(m, Xp, Xi, Xd, V, a, Y, loss_weight, n_states, flat, unary)
        _scaled(P, a, pair)
        dm = delta[m]
        _passes_one(n_inner, unary, pair, edges, n_states, indptr, slots, dm, gamma, total)
        for i in range(L):
            yhat[i] = _belief_argmax(i, unary, n_states, indptr, slots, dm, buf)
        _dual_step(m, t, C, Xp, Xi, Xd, Y, yhat, pair, edges, n_states, dm, qidx, qval, pidx, pval, V, Pf, state,
                   acc, UW, UP, sum_W, sum_Pf)
    if acc[1] > 0.0:
        _flush(V, Pf, state, acc, UW, UP, sum_W, sum_Pf)
    return t


@kernel
def _tree_hinge_batch(Xp, Xi, Xd, W, P, Y, loss_weight, n_states, edges, tree_order, parent, pedge, side, out):
    """out[m] = max_y [score_m(y) + loss(y, y_m)] - score_m(y_m) under weights ``(W, P)`` (exact on a forest)."""
    L, S, E = n_states.shape[0], P.shape[1], P.shape[0]
    nS = L * S
    flat = np.empty(nS)
    unary = np.empty((L, S))
    bel = np.empty((L, S))
    arg = np.zeros((L, S), dtype=np.int64)
    yhat = np.zeros(L, dtype=np.int64)
    for m in range(Xp.shape[0] - 1):
        _row_scores(m, Xp, Xi, Xd, W, nS, flat)
        truth = 0.0
        for i in range(L):
            for s in range(n_states[i]):
                unary[i, s] = flat[i * S + s] + (loss_weight if s != Y[m, i] else 0.0)
            truth += flat[i * S + Y[m, i]]
        for e in range(E):
            truth += P[e, Y[m, edges[e, 0]], Y[m, edges[e, 1]]]
        out[m] = _tree_map(unary, P, 1.0, edges, n_states, tree_order, parent, pedge, side, bel, arg, yhat) - truth
