"""The subset (0/1) loss through the loss-augmented LP: a witness node (private; ``DLPWClassifier(loss="subset",
label_sets="all")``).

The 0/1 loss of a labelling, ``[y != y*] = max_i [y_i != y*_i]``, is not a sum of node terms, but it
is exactly a pairwise one with an auxiliary *witness* node ``u`` of ``L + 1`` states (0: no loss;
``k + 1``: label ``k`` is wrong), unary ``loss * [u != 0]`` and one factor ``(u, y_k)`` per label,
``0`` everywhere except ``-inf`` at ``(u = k + 1, y_k = y*_k)`` (the witness must not name a right
label). Then ``max_{y, u} score(y) + loss [u != 0] = max_y score(y) + loss [y != y*]``, and the
loss-augmented MAP is a pairwise problem on the label graph plus the witness star. Its local
polytope relaxes the loss to ``min(1, sum_k mu_k(wrong))`` (exact for integral ``mu``), and its dual
(Meshi et al. 2010, eq. 8) gets two more kinds of messages, handled analytically:

* into ``u``: after a star update of ``u`` (eqs. 11-12), the message of factor ``k`` is
  ``gamma_k(u) - c(u) / (1 + L)`` with ``gamma_k(u) = A_k`` for ``u != k + 1`` and ``B_k`` at
  ``u = k + 1``, where ``A_k = -min_b dw_k(b)``, ``B_k = -min_{b != y*_k} dw_k(b)`` (``dw_k``: the
  message of factor ``k`` into ``y_k``), and ``c(0) = T = sum_k A_k``, ``c(k + 1) = T + D_k``,
  ``D_k = loss + B_k - A_k``. So they are ``2 L`` numbers, recomputed from ``dw`` at the start of
  every pass and never stored; the dual value is taken with ``u``'s block minimised out:
  ``W(dw) = T + max(0, max_k D_k)``.
* into ``y_j``: ``dw_j``, one message of ``n_states[j]`` entries per label; the witness factor is one
  more neighbour in ``y_j``'s star update, its max-message ``gamma^w_j(b) = max_u [phi_j(u, b) -
  delta_{j->u}(u)]`` is ``(T + E_j) / (1 + L) - A_j`` at ``b = y*_j`` (``E_j = max(0, max_{k != j}
  D_k)``) and ``max(that, (T + D_j) / (1 + L) - B_j)`` elsewhere, ``O(1)`` per entry.

Messages per sample: ``delta`` ``(2 n_edges + n_labels, S)``: rows ``0 .. 2 n_edges - 1`` are the
label graph's (as in :mod:`sklearn_struct.oracles.lp`), row ``2 n_edges + j`` is ``dw_j``; so the
witness adds ``n_labels * S`` floats per sample (e.g. 28 to yeast's 364), no ``L + 1``-state message
is stored. A pass updates ``u``, then every label in index order: ``L + 1`` star updates, each
lowering the dual ``g(delta) = g_labels(unary + dw; delta) + W(dw)`` (never increasing it).
The witness factors carry no weights: the subgradient of ``g`` in ``w`` comes from the labels'
beliefs ``unary_j + sum_e delta_{e->j} + dw_j`` and the label edges, as for the Hamming loss.

On a forest of labels the witness closes cycles, but the loss-augmented MAP is still exact and
cheap: max-product over pairs (state, whether the subtree differs from ``y*``), ``O(n_edges S^2)``
(:func:`subset_tree_map`; the epoch :func:`subset_tree_epoch` stores no messages).
"""

import numpy as np

from ..utils._jit import helper, kernel
from ._lp_fast import _augmented_unary, _dual_step, _epoch_buffers, _flush, _scaled, _star_buffers, _tree_step
from ._lp_kernels import _belief_argmax, _dual_one, _primal_one, _star_gather, _star_scatter

_NEG = -np.inf


@helper
def _center(y, n_states, delta, loss, A, B, D):
    """``u``'s star update from the witness messages ``dw`` (the last ``L`` rows of ``delta``): fills ``A``,
    ``B``, ``D``; returns ``T = sum A`` and ``max(0, max D)``, its argmax (-1 if none is positive) and
    ``max(0, second largest D)``."""
    L = n_states.shape[0]
    off = delta.shape[0] - L
    T, d1, k1, d2 = 0.0, 0.0, -1, 0.0
    for k in range(L):
        lo_all, lo_wrong = np.inf, np.inf
        for s in range(n_states[k]):
            v = delta[off + k, s]
            lo_all = min(lo_all, v)
            if s != y[k]:
                lo_wrong = min(lo_wrong, v)
        A[k], B[k] = -lo_all, -lo_wrong
        T += A[k]
        D[k] = loss + B[k] - A[k] if lo_wrong < np.inf else _NEG
        if D[k] > d1:
            d2, d1, k1 = d1, D[k], k
        elif D[k] > d2:
            d2 = D[k]
    return T, d1, k1, d2


@helper
def _passes(n_passes, unary, pairwise, edges, n_states, indptr, slots, delta, y, loss, gamma, total, A, B, D, gw):
    """``n_passes`` sweeps: the witness ``u``, then each label's star (its edges and its witness factor)."""
    L = n_states.shape[0]
    off = delta.shape[0] - L
    for _ in range(n_passes):
        T, d1, k1, d2 = _center(y, n_states, delta, loss, A, B, D)
        for j in range(L):
            deg = _star_gather(j, unary, pairwise, edges, n_states, indptr, slots, delta, gamma, total)
            base = (T + (d2 if j == k1 else d1)) / (1.0 + L) - A[j]
            alt = (T + D[j]) / (1.0 + L) - B[j] if D[j] > _NEG else _NEG
            for b in range(n_states[j]):
                gw[b] = base if b == y[j] else max(base, alt)
                total[b] += gw[b]
            scale = 1.0 / (2.0 + deg)
            _star_scatter(j, n_states, indptr, slots, delta, gamma, total, scale)
            for b in range(n_states[j]):
                delta[off + j, b] = gw[b] - scale * total[b]


@helper
def _with_witness(unary, n_states, delta, out):
    """out = unary + dw: the labels' potentials with their witness messages folded in."""
    off = delta.shape[0] - n_states.shape[0]
    for i in range(n_states.shape[0]):
        for s in range(n_states[i]):
            out[i, s] = unary[i, s] + delta[off + i, s]


@helper
def _dual(unary, pairwise, edges, n_states, indptr, slots, delta, y, loss, ubuf, buf, A, B, D):
    """g(delta) with the witness block minimised out: g_labels(unary + dw) + T + max(0, max D)."""
    _with_witness(unary, n_states, delta, ubuf)
    T, d1, _, _ = _center(y, n_states, delta, loss, A, B, D)
    return _dual_one(ubuf, pairwise, edges, n_states, indptr, slots, delta, buf) + T + d1


@helper
def _decode(unary, n_states, indptr, slots, delta, ubuf, buf, yhat):
    """yhat_i = argmax of label i's belief (witness message included)."""
    _with_witness(unary, n_states, delta, ubuf)
    for i in range(n_states.shape[0]):
        yhat[i] = _belief_argmax(i, ubuf, n_states, indptr, slots, delta, buf)


@helper
def _scratch(L, S, max_deg):
    return (np.empty((max(max_deg, 1), S)), np.empty(S), np.empty(L), np.empty(L), np.empty(L), np.empty(S),
            np.empty((L, S)), np.empty(S))


# ------------------------------------------------------------------------------- batched kernels


@kernel
def _passes_batch(n_passes, unary, pairwise, edges, n_states, indptr, slots, delta, Y, loss, max_deg):
    L, S = unary.shape[1], unary.shape[2]
    gamma, total, A, B, D, gw, _, _ = _scratch(L, S, max_deg)
    for m in range(unary.shape[0]):
        _passes(n_passes, unary[m], pairwise, edges, n_states, indptr, slots, delta[m], Y[m], loss, gamma, total,
                A, B, D, gw)


@kernel
def _dual_batch(unary, pairwise, edges, n_states, indptr, slots, delta, Y, loss, out):
    L, S = unary.shape[1], unary.shape[2]
    _, _, A, B, D, _, ubuf, buf = _scratch(L, S, 1)
    for m in range(unary.shape[0]):
        out[m] = _dual(unary[m], pairwise, edges, n_states, indptr, slots, delta[m], Y[m], loss, ubuf, buf, A, B, D)


@helper
def _augmented_primal(u, pairwise, edges, yh, y, loss):
    """Score of the labelling ``yh`` plus the subset loss ``loss`` if it differs from ``y`` anywhere."""
    p = _primal_one(u, pairwise, edges, yh)
    for i in range(y.shape[0]):
        if yh[i] != y[i]:
            return p + loss
    return p


@kernel
def _solve_batch(unary, pairwise, edges, n_states, indptr, slots, delta, Y, loss, max_deg, max_iter, tol, labels,
                 dual, primal):
    """Passes per sample until the decoded labelling's loss-augmented score meets the dual (certified) or the
    dual stalls (relative decrease below ``tol``) or ``max_iter`` passes."""
    L, S = unary.shape[1], unary.shape[2]
    gamma, total, A, B, D, gw, ubuf, buf = _scratch(L, S, max_deg)
    for m in range(unary.shape[0]):
        u, dm, y, yh = unary[m], delta[m], Y[m], labels[m]
        g = _dual(u, pairwise, edges, n_states, indptr, slots, dm, y, loss, ubuf, buf, A, B, D)
        for it in range(max_iter + 1):
            _decode(u, n_states, indptr, slots, dm, ubuf, buf, yh)
            p = _augmented_primal(u, pairwise, edges, yh, y, loss)
            scale = max(1.0, abs(g))
            if g - p <= tol * scale or it == max_iter:
                break
            _passes(1, u, pairwise, edges, n_states, indptr, slots, dm, y, loss, gamma, total, A, B, D, gw)
            g_new = _dual(u, pairwise, edges, n_states, indptr, slots, dm, y, loss, ubuf, buf, A, B, D)
            stalled = g - g_new <= 0.01 * tol * scale
            g = g_new
            if stalled:
                _decode(u, n_states, indptr, slots, dm, ubuf, buf, yh)
                p = _augmented_primal(u, pairwise, edges, yh, y, loss)
                break
        dual[m], primal[m] = g, p


@kernel
def _witness_epoch(order, t0, C, n_inner, loss, Xp, Xi, Xd, Y, V, P, state, edges, n_states, indptr, slots, delta,
                   sum_W, sum_P):
    """One DLPW epoch with the subset loss (see :func:`subset_epoch`)."""
    L, S, E = n_states.shape[0], P.shape[1], P.shape[0]
    UW, UP, acc, Pf, sum_Pf = _epoch_buffers(V, P, L, E, sum_W, sum_P)
    flat, unary, pair, yhat, gamma, total, buf, qidx, qval, pidx, pval = _star_buffers(P, n_states, indptr)
    A, B, D, gw, ubuf = np.empty(L), np.empty(L), np.empty(L), np.empty(S), np.empty((L, S))
    t = t0
    for m in order:
        t += 1
        a = state[0]
        _augmented_unary(m, Xp, Xi, Xd, V, a, Y, 0.0, n_states, flat, unary)  # the loss is the witness's
        _scaled(P, a, pair)
        dm = delta[m]
        _passes(n_inner, unary, pair, edges, n_states, indptr, slots, dm, Y[m], loss, gamma, total, A, B, D, gw)
        _decode(unary, n_states, indptr, slots, dm, ubuf, buf, yhat)
        _dual_step(m, t, C, Xp, Xi, Xd, Y, yhat, pair, edges, n_states, dm, qidx, qval, pidx, pval, V, Pf, state,
                   acc, UW, UP, sum_W, sum_Pf)
    if acc[1] > 0.0:
        _flush(V, Pf, state, acc, UW, UP, sum_W, sum_Pf)
    return t


# ------------------------------------------------------------------------------- Python entry points


def _max_deg(graph):
    return int(np.diff(graph.indptr).max()) if graph.n_nodes else 0


def _delta(graph, delta, n):
    if delta is None:
        return np.zeros((n, 2 * graph.n_edges + graph.n_nodes, graph.max_states))
    want = (n, 2 * graph.n_edges + graph.n_nodes, graph.max_states)
    if delta.shape != want:
        raise ValueError(f"delta must have shape {want} (2 n_edges + n_labels message rows), got {delta.shape}.")
    return delta


def subset_star_passes(graph, unary, pairwise, Y, delta, n_passes=1, loss=1.0):
    """``n_passes`` witness + star passes on ``delta`` ``(n, 2 n_edges + n_labels, S)`` in place (arrays as built by
    the estimator: float64 C-contiguous ``unary`` ``(n, n_labels, S)``, int64 ``Y`` the true labellings)."""
    delta = _delta(graph, delta, unary.shape[0])
    _passes_batch(int(n_passes), unary, pairwise, graph.edges, graph.n_states, graph.indptr, graph.slots, delta,
                  Y, float(loss), _max_deg(graph))
    return delta


def subset_dual_values(graph, unary, pairwise, Y, delta=None, loss=1.0):
    """The dual bound ``g(delta) >= max_y score(y) + loss [y != y*]`` per sample (witness block minimised out)."""
    delta = _delta(graph, delta, unary.shape[0])
    out = np.empty(unary.shape[0])
    _dual_batch(unary, pairwise, graph.edges, graph.n_states, graph.indptr, graph.slots,
                np.ascontiguousarray(delta), Y, float(loss), out)
    return out


def subset_lp(graph, unary, pairwise, Y, delta=None, loss=1.0, max_iter=5000, tol=1e-9):
    """The loss-augmented LP per sample by passes to convergence (``delta`` updated in place if given).

    Returns ``(labels, dual, primal)``: the decoded labelling, the dual bound and the decoded
    labelling's loss-augmented score ``score(y) + loss [y != y*]`` (``<=`` the exact maximum ``<= dual``;
    equal to ``dual`` where the LP is tight and the decoding exact)."""
    delta = _delta(graph, delta, unary.shape[0])
    n = unary.shape[0]
    labels, dual, primal = np.zeros((n, graph.n_nodes), dtype=np.int64), np.empty(n), np.empty(n)
    _solve_batch(unary, pairwise, graph.edges, graph.n_states, graph.indptr, graph.slots, delta, Y, float(loss),
                 _max_deg(graph), int(max_iter), float(tol), labels, dual, primal)
    return labels, dual, primal


def subset_epoch(order, t0, C, n_inner, loss, Xp, Xi, Xd, Y, V, P, state, graph, delta, sum_W=None, sum_P=None):
    """One epoch of Algorithm 1 with the subset loss: per sample, ``n_inner`` witness + star passes on its messages
    ``delta[m]`` ``(2 n_edges + n_labels, S)`` (warm start), then the sparse Pegasos step of
    :mod:`~sklearn_struct.oracles._lp_fast` along the subgradient of ``g``; returns the new step count."""
    if sum_W is None:
        sum_W, sum_P = np.zeros((0, 0)), np.zeros((0, 0, 0))
    return _witness_epoch(order, t0, C, n_inner, float(loss), Xp, Xi, Xd, Y, V, P, state, graph.edges,
                          graph.n_states, graph.indptr, graph.slots, delta, sum_W, sum_P)


# ------------------------------------------------------------------------------- forests: exact, no messages


@helper
def _tree_subset_map(unary, P, a, y, loss, n_states, order, parent, pedge, side, bel, arg, choice, yhat, flag):
    """Exact ``max_y score(y) + loss [y != y*]`` on a forest (``unary + a * P``), labels in ``yhat``; returns it.

    Max-product over (state, differs-from-``y*``-in-the-subtree) pairs: ``bel[i, s, f]`` is the best score of
    ``i``'s subtree with ``y_i = s`` and ``f`` = whether it differs from ``y*`` there, ``O(n_edges S^2)``.
    ``choice[i, b, f]`` records, for the merge of child ``i`` into its parent in state ``b`` (roots: into the
    forest's running total), which (flag before, child flag) made the flag ``f``."""
    L = order.shape[0]
    for i in range(L):
        for s in range(n_states[i]):
            d = 1 if s != y[i] else 0
            bel[i, s, d], bel[i, s, 1 - d] = unary[i, s], _NEG
    tot0, tot1 = 0.0, _NEG
    for k in range(L - 1, -1, -1):  # leaves up
        i = order[k]
        p = parent[i]
        if p >= 0:
            e = pedge[i]
            for b in range(n_states[p]):
                m0, m1, a0, a1 = _NEG, _NEG, 0, 0
                for s in range(n_states[i]):
                    w = a * (P[e, s, b] if side[i] == 0 else P[e, b, s])
                    if bel[i, s, 0] + w > m0:
                        m0, a0 = bel[i, s, 0] + w, s
                    if bel[i, s, 1] + w > m1:
                        m1, a1 = bel[i, s, 1] + w, s
                arg[i, b, 0], arg[i, b, 1] = a0, a1
                p0, p1 = bel[p, b, 0], bel[p, b, 1]
                bel[p, b, 0] = p0 + m0
                choice[i, b, 0] = 0
                bel[p, b, 1], choice[i, b, 1] = _merge1(p0, p1, m0, m1)
    for k in range(L):  # the roots, into the forest's total (in this order)
        i = order[k]
        if parent[i] >= 0:
            continue
        m0, m1, a0, a1 = _NEG, _NEG, 0, 0
        for s in range(n_states[i]):
            if bel[i, s, 0] > m0:
                m0, a0 = bel[i, s, 0], s
            if bel[i, s, 1] > m1:
                m1, a1 = bel[i, s, 1], s
        arg[i, 0, 0], arg[i, 0, 1] = a0, a1
        t0 = tot0 + m0
        choice[i, 0, 0] = 0
        tot1, choice[i, 0, 1] = _merge1(tot0, tot1, m0, m1)
        tot0 = t0
    F = 1 if tot1 + loss > tot0 else 0
    best = tot1 + loss if F == 1 else tot0
    for k in range(L - 1, -1, -1):  # roots down, the last merged first
        i = order[k]
        if parent[i] >= 0:
            continue
        c = choice[i, 0, F]
        F, flag[i] = c >> 1, c & 1
        yhat[i] = arg[i, 0, flag[i]]
    for k in range(L):  # parents before children; a parent's children in reverse merge order
        i = order[k]
        p = parent[i]
        if p < 0:
            continue
        c = choice[i, yhat[p], flag[p]]
        flag[p], flag[i] = c >> 1, c & 1
        yhat[i] = arg[i, yhat[p], flag[i]]
    return best


@helper
def _merge1(p0, p1, m0, m1):
    """Flag 1 after merging a part (best ``m0`` / ``m1`` without / with a difference) into ``p0`` / ``p1``: the best
    of (1, 0), (1, 1), (0, 1), and its code ``before * 2 + part``."""
    best, code = p1 + m0, 2
    if p1 + m1 > best:
        best, code = p1 + m1, 3
    if p0 + m1 > best:
        best, code = p0 + m1, 1
    return best, code


@kernel
def _tree_subset_batch(unary, P, Y, loss, n_states, order, parent, pedge, side, labels, out):
    """out[m] = max_y score_m(y) + loss [y != Y[m]] (exact on a forest), the maximiser in ``labels[m]``."""
    L, S = unary.shape[1], unary.shape[2]
    bel, arg, choice = np.empty((L, S, 2)), np.zeros((L, S, 2), dtype=np.int64), np.zeros((L, S, 2), dtype=np.int64)
    flag = np.zeros(L, dtype=np.int64)
    for m in range(unary.shape[0]):
        out[m] = _tree_subset_map(unary[m], P, 1.0, Y[m], loss, n_states, order, parent, pedge, side, bel, arg,
                                  choice, labels[m], flag)


@kernel
def _tree_subset_epoch(order, t0, C, loss, Xp, Xi, Xd, Y, V, P, state, edges, n_states, tree_order, parent, pedge,
                       side, sum_W, sum_P):
    """One DLPW epoch with the subset loss on a forest: the loss-augmented MAP exactly, then the sparse step."""
    L, S, E = n_states.shape[0], P.shape[1], P.shape[0]
    UW, UP, acc, Pf, sum_Pf = _epoch_buffers(V, P, L, E, sum_W, sum_P)
    flat, unary = np.empty(L * S), np.empty((L, S))
    bel, arg, choice = np.empty((L, S, 2)), np.zeros((L, S, 2), dtype=np.int64), np.zeros((L, S, 2), dtype=np.int64)
    yhat, flag = np.zeros(L, dtype=np.int64), np.zeros(L, dtype=np.int64)
    qidx, qval = np.empty(2 * L, dtype=np.int64), np.empty(2 * L)
    pidx, pval = np.empty(2 * E, dtype=np.int64), np.empty(2 * E)
    t = t0
    for m in order:
        t += 1
        a = state[0]
        _augmented_unary(m, Xp, Xi, Xd, V, a, Y, 0.0, n_states, flat, unary)
        _tree_subset_map(unary, P, a, Y[m], loss, n_states, tree_order, parent, pedge, side, bel, arg, choice, yhat,
                         flag)
        _tree_step(m, t, C, Xp, Xi, Xd, Y, yhat, edges, S, qidx, qval, pidx, pval, V, Pf, state, acc, UW, UP,
                   sum_W, sum_Pf)
    if acc[1] > 0.0:
        _flush(V, Pf, state, acc, UW, UP, sum_W, sum_Pf)
    return t


def subset_tree_map(graph, unary, pairwise, Y, forest, loss=1.0):
    """Exact loss-augmented MAP with the subset loss on a forest (``forest``: its ``forest_schedule``); returns
    ``(labels, values)``."""
    n = unary.shape[0]
    labels, out = np.zeros((n, graph.n_nodes), dtype=np.int64), np.empty(n)
    _tree_subset_batch(unary, pairwise, Y, float(loss), graph.n_states, *forest, labels, out)
    return labels, out


def subset_tree_epoch(order, t0, C, Xp, Xi, Xd, Y, V, P, state, graph, forest, sum_W=None, sum_P=None, loss=1.0):
    """One epoch of Algorithm 1 with the subset loss on a forest (exact, no messages); returns the new step count."""
    if sum_W is None:
        sum_W, sum_P = np.zeros((0, 0)), np.zeros((0, 0, 0))
    return _tree_subset_epoch(order, t0, C, float(loss), Xp, Xi, Xd, Y, V, P, state, graph.edges, graph.n_states,
                              *forest, sum_W, sum_P)
