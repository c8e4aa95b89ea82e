"""Numba kernels of loopy BP / TRW and of the pruning seed (private; see :mod:`sklearn_struct.oracles.loopy`).

The public functions in ``loopy.py`` validate their input and call these on plain arrays.
"""

import math

import numpy as np
from numba import njit

from ..utils._jit import kernel

# Below this a message entry computed in probability space (each term <= 1 after shifting)
# may have lost terms to underflow: that message is recomputed in log space.
_UNDERFLOW_GUARD = 1e-200
# The gain of a factor with a zero potential where the seed puts mass (KL = inf), kept finite
# so that the selection rules can sum and sort gains.
_INFINITE_GAIN = 1e300
# Message changes are measured over every entry, however small: a message entry at e^-100 of
# its maximum still decides a belief when a unary or table of magnitude 100 multiplies it back
# up, so ignoring such changes stopped BP on trees with wrong marginals at potentials >= 1e2.
_LOG_TOL = -np.inf


@njit(cache=True, nogil=True, inline="always")
def _node_log_belief(i, indptr, edge_ids, reverse, unary, rho, msgs, belief):
    """belief[i] = unary[i] + sum of rho-weighted incoming log messages."""
    S = unary.shape[1]
    for a in range(S):
        belief[i, a] = unary[i, a]
    for k in range(indptr[i], indptr[i + 1]):
        r = reverse[k]
        w = rho[edge_ids[k]]
        for a in range(S):
            belief[i, a] += w * msgs[r, a]


@njit(cache=True, nogil=True, inline="always")
def _cavity_entry(i, a, skip, indptr, edge_ids, reverse, unary, rho, msgs, belief):
    """``belief[i, a]`` without the message in slot ``skip`` (into ``i``), -inf safe.

    ``belief - message`` unless both are -inf (a zero potential: the message itself may be
    what forbids ``a``), where the sum is redone without that message.
    """
    m = msgs[skip, a]
    if m != -np.inf:
        return belief[i, a] - m
    out = unary[i, a]
    for k in range(indptr[i], indptr[i + 1]):
        r = reverse[k]
        if r != skip:
            out += rho[edge_ids[k]] * msgs[r, a]
    return out


@kernel
def _sweep_range(lo, hi, backward, in_place, indptr, neighbors, edge_ids, reverse, forward, unary, rho,
                 log_tables, exp_tables, max_product, damping, tol, log_tol, msgs_in, target, belief,
                 active, active_next, unrolled):
    """Send every message out of the active nodes ``lo <= i < hi``; return (largest change, updates).

    Node ``i`` reads its incoming messages from ``msgs_in`` and writes its outgoing ones into
    ``target``. ``in_place`` (sequential schedule): ``target`` is ``msgs_in`` and ``active_next``
    is ``active``, so a node is cleared when processed and re-flagged if a later neighbour changes
    a message into it (the outgoing slots of i are never read while i is processed). Otherwise
    (flooding), inactive nodes copy their messages into ``target``. Receivers of a message that
    changed by more than ``tol`` are flagged in ``active_next``: a node none of whose incoming
    messages changed would resend the same messages, so converged regions (and nodes without
    edges) cost nothing. With damping the sender is flagged too: its damped message moved only
    part of the way to the update (without this, damped BP stopped at non-fixed points).

    The change is measured on max-normalised log messages over every entry (``log_tol`` is
    -inf: an entry ignored for being small can be multiplied back up by large potentials);
    since |dp| <= |d log p| for p <= 1, a change <= tol implies a probability change <= tol.

    The whole update is written out in this one function on purpose: numba reference-counts array
    arguments at every call of a compiled function, which cost more than the update itself when
    made per node or per message.

    ``unrolled`` (True outside tests): a binary sum-product message without -inf entries is
    computed with the generic loops unrolled into scalars and without ``exp(0)`` (the same
    operations in the same order, so the same bits; ~1.3x the generic path's message rate on a
    binary grid, where the scratch arrays and loops over 2 states cost as much as the exp/log).
    """
    S = unary.shape[1]
    single_table = exp_tables.shape[0] == 1
    binary_sum = unrolled and S == 2 and not max_product
    cavity = np.empty(S)
    out = np.empty(S)
    delta = 0.0
    n_updates = 0
    for step in range(hi - lo):
        i = hi - 1 - step if backward else lo + step
        if not active[i]:
            if not in_place:
                for k in range(indptr[i], indptr[i + 1]):
                    for b in range(S):
                        target[k, b] = msgs_in[k, b]
            continue
        if in_place:
            active[i] = 0
        _node_log_belief(i, indptr, edge_ids, reverse, unary, rho, msgs_in, belief)
        for k in range(indptr[i], indptr[i + 1]):
            r = reverse[k]
            fwd = forward[k] == 1
            t = 0 if single_table else edge_ids[k]
            done = False
            if binary_sum:  # the generic sum-product update below, unrolled for 2 states (same operations)
                c0 = belief[i, 0] - msgs_in[r, 0]
                c1 = belief[i, 1] - msgs_in[r, 1]
                done = c0 > -np.inf and c1 > -np.inf  # not NaN either: no -inf message entry (zero potential)
                if done:
                    cmax = c1 if c1 > c0 else c0
                    w0 = 1.0 if c0 == cmax else math.exp(c0 - cmax)  # exp(0) is 1 exactly
                    w1 = 1.0 if c1 == cmax else math.exp(c1 - cmax)
                    a0, a1 = (0, 1) if fwd else (1, 0)  # table entry (a, b) read as [a, b] or [b, a]
                    o0 = w0 * exp_tables[t, 0, 0]
                    o0 += w1 * exp_tables[t, a1, a0]
                    o1 = w0 * exp_tables[t, a0, a1]
                    o1 += w1 * exp_tables[t, 1, 1]
                    done = min(o0, o1) >= _UNDERFLOW_GUARD  # else the generic path redoes it in log space
                    if done:
                        out[0] = math.log(o0)
                        out[1] = math.log(o1)
            if not done:
                cmax = -np.inf
                zero = False
                for a in range(S):  # cavity: the belief of i without the message from the receiver
                    cavity[a] = belief[i, a] - msgs_in[r, a]
                    zero |= msgs_in[r, a] == -np.inf
                if zero:  # a zero potential: redo the -inf entries without that message
                    for a in range(S):
                        cavity[a] = _cavity_entry(i, a, r, indptr, edge_ids, reverse, unary, rho, msgs_in, belief)
                for a in range(S):
                    if cavity[a] > cmax:
                        cmax = cavity[a]
                exact = max_product
                if cmax == -np.inf:  # zero potentials leave i no state: a uniform message (no NaN)
                    for b in range(S):
                        out[b] = 0.0
                    exact = False
                elif not max_product:  # probability space, shifted so that every term is <= 1
                    for b in range(S):
                        out[b] = 0.0
                    for a in range(S):
                        w = math.exp(cavity[a] - cmax)
                        for b in range(S):
                            out[b] += w * (exp_tables[t, a, b] if fwd else exp_tables[t, b, a])
                    low = np.inf
                    for b in range(S):
                        low = min(low, out[b])
                    exact = low < _UNDERFLOW_GUARD  # flushed terms could matter: redo in log space
                    if not exact:
                        for b in range(S):
                            out[b] = math.log(out[b])
                if exact:  # log-sum-exp (or max) over the sender's states
                    for b in range(S):
                        top = -np.inf
                        for a in range(S):
                            top = max(top, cavity[a] + (log_tables[t, a, b] if fwd else log_tables[t, b, a]))
                        if max_product or top == -np.inf:  # -inf: b is impossible whatever i's state
                            out[b] = top
                        else:
                            acc = 0.0
                            for a in range(S):
                                acc += math.exp(cavity[a] + (log_tables[t, a, b] if fwd else log_tables[t, b, a]) - top)
                            out[b] = top + math.log(acc)
            top = -np.inf
            for b in range(S):
                top = max(top, out[b])
            if top == -np.inf:  # every state of the receiver forbidden: a uniform message (no NaN)
                for b in range(S):
                    out[b] = 0.0
                top = 0.0
            change = 0.0
            for b in range(S):
                old = msgs_in[k, b]
                new = out[b] - top
                if damping > 0.0 and new > -np.inf:  # a zero (hard constraint) is not damped: it would never reach -inf
                    if max_product:
                        new = (1.0 - damping) * new + damping * old
                    else:
                        new = math.log((1.0 - damping) * math.exp(new) + damping * math.exp(old))
                if (new > log_tol or old > log_tol) and new != old:  # -inf == -inf: no change (not NaN)
                    change = max(change, abs(new - old))
                target[k, b] = new
            if change > tol:
                active_next[neighbors[k]] = 1
                if damping > 0.0:  # a damped message has only moved part of the way: resend it
                    active_next[i] = 1
            delta = max(delta, change)
        n_updates += indptr[i + 1] - indptr[i]
    return delta, n_updates


@kernel
def _run_bp(indptr, neighbors, edge_ids, reverse, forward, unary, rho, log_tables, exp_tables,
            max_product, flooding, damping, max_iter, tol, msgs, active, unrolled):
    """Iterate BP on one thread; msgs is updated in place. Returns (n_iter, max_delta, n_updates, log beliefs).

    ``active`` (uint8, updated in place) flags the nodes that send in the first sweep: those
    with edges (a node without edges sends nothing; its belief is its unary). ``flooding``:
    every node sends from the previous iteration's messages (the parallel schedule, which
    :func:`sklearn_struct.oracles.loopy.loopy_bp` runs over chunks of nodes on several threads
    when the graph is large). Otherwise nodes update in place, in alternating order. With
    ``max_iter`` 0 this only computes the log beliefs of ``msgs``. ``unrolled``: see ``_sweep_range``.
    """
    n_nodes = unary.shape[0]
    belief = np.empty((n_nodes, unary.shape[1]))
    other = msgs.copy()  # flooding's second buffer
    active_next = np.zeros(n_nodes, dtype=np.uint8)
    delta = np.inf
    n_iter = 0
    n_updates = 0
    current = msgs
    for it in range(max_iter):
        n_iter = it + 1
        target = other if flooding else current
        flags_next = active_next if flooding else active
        delta, done = _sweep_range(0, n_nodes, not flooding and it % 2 == 1, not flooding, indptr, neighbors,
                                   edge_ids, reverse, forward, unary, rho, log_tables, exp_tables, max_product,
                                   damping, tol, _LOG_TOL, current, target, belief, active, flags_next, unrolled)
        if flooding:
            current, other = other, current
            active, active_next = active_next, active
            for i in range(n_nodes):
                active_next[i] = 0
        n_updates += done
        if delta <= tol:
            break
    if flooding and n_iter % 2 == 1:  # an odd number of swaps left the result in the scratch buffer
        for k in range(msgs.shape[0]):
            for b in range(msgs.shape[1]):
                msgs[k, b] = current[k, b]
    for i in range(n_nodes):
        _node_log_belief(i, indptr, edge_ids, reverse, unary, rho, msgs, belief)
    return n_iter, delta, n_updates, belief


@kernel
def _edge_beliefs(edges, adjacency_slot, reverse, log_belief, msgs, log_tables, indptr, edge_ids, unary, rho):
    """Pairwise beliefs b_e(a, b) ∝ exp(cav_u(a) + cav_v(b) + pairwise_e(a, b) / rho_e).

    ``adjacency_slot[e]`` is the slot of the message u -> v; its reverse is v -> u. An edge
    whose every pair of states has probability 0 (contradicting zero potentials) gets uniform
    beliefs.
    """
    n_edges = edges.shape[0]
    S = log_belief.shape[1]
    single_table = log_tables.shape[0] == 1
    out = np.empty((n_edges, S, S))
    for e in range(n_edges):
        u, v = edges[e, 0], edges[e, 1]
        k_uv = adjacency_slot[e]
        k_vu = reverse[k_uv]
        t = 0 if single_table else e
        top = -np.inf
        for a in range(S):
            for b in range(S):
                val = _cavity_entry(u, a, k_vu, indptr, edge_ids, reverse, unary, rho, msgs, log_belief) \
                    + _cavity_entry(v, b, k_uv, indptr, edge_ids, reverse, unary, rho, msgs, log_belief) \
                    + log_tables[t, a, b]
                out[e, a, b] = val
                if val > top:
                    top = val
        acc = 0.0
        for a in range(S):
            for b in range(S):
                out[e, a, b] = math.exp(out[e, a, b] - top) if top > -np.inf else 1.0
                acc += out[e, a, b]
        for a in range(S):
            for b in range(S):
                out[e, a, b] /= acc
    return out


@kernel
def _log_softmax_rows(unary):
    """Row-wise log-softmax (numerically safe for any magnitude)."""
    n, S = unary.shape
    out = np.empty_like(unary)
    for i in range(n):
        top = -np.inf
        for a in range(S):
            top = max(top, unary[i, a])
        if top == -np.inf:  # no state left (contradicting zero potentials): uniform, not NaN
            for a in range(S):
                out[i, a] = -math.log(S)
            continue
        acc = 0.0
        for a in range(S):
            acc += math.exp(unary[i, a] - top)
        norm = top + math.log(acc)
        for a in range(S):
            out[i, a] = unary[i, a] - norm
    return out


@kernel
def _absorb(out, q, log_q, edges, log_tables, exp_tables):
    """Add to ``out`` the factor-to-node message of every edge, from the other endpoint's ``q``.

    Each message is max-normalised. Probability-space product against the shifted table, with
    an exact log-sum-exp fallback when an entry underflows (as in the BP kernel).
    """
    S = q.shape[1]
    single_table = exp_tables.shape[0] == 1
    msg = np.empty(S)
    for e in range(edges.shape[0]):
        t = 0 if single_table else e
        for side in range(2):  # side 0: message to edges[e, 0] (table rows), side 1: to edges[e, 1]
            recv, send = (edges[e, 0], edges[e, 1]) if side == 0 else (edges[e, 1], edges[e, 0])
            low = np.inf
            high = 0.0
            for a in range(S):  # a: state of the receiver
                acc = 0.0
                for b in range(S):
                    acc += q[send, b] * (exp_tables[t, a, b] if side == 0 else exp_tables[t, b, a])
                msg[a] = acc
                low = min(low, acc)
                high = max(high, acc)
            if low >= _UNDERFLOW_GUARD:
                for a in range(S):
                    out[recv, a] += 0.0 if msg[a] == high else math.log(msg[a] / high)
                continue
            top_all = -np.inf
            for a in range(S):
                top = -np.inf
                for b in range(S):
                    top = max(top, log_q[send, b] + (log_tables[t, a, b] if side == 0 else log_tables[t, b, a]))
                if top == -np.inf:  # zero potentials: a is impossible given the sender
                    msg[a] = top
                    continue
                acc = 0.0
                for b in range(S):
                    acc += math.exp(log_q[send, b] + (log_tables[t, a, b] if side == 0 else log_tables[t, b, a]) - top)
                msg[a] = top + math.log(acc)
                top_all = max(top_all, msg[a])
            if top_all == -np.inf:  # contradicting zeros: nothing folded in (no NaN)
                continue
            for a in range(S):
                out[recv, a] += msg[a] - top_all
    return out


@kernel
def _seed_gains(q, log_q, edges, log_tables, exp_tables, shifts):
    """g_e = log E_q[Psi_e] - E_q[log Psi_e] under the product of node marginals q (see seed_gains)."""
    n_edges = edges.shape[0]
    S = q.shape[1]
    single_table = log_tables.shape[0] == 1
    out = np.empty(n_edges)
    for e in range(n_edges):
        u, v = edges[e, 0], edges[e, 1]
        t = 0 if single_table else e
        mean_psi = 0.0  # E[exp(theta - shift)]
        mean_log = 0.0  # E[theta]
        for a in range(S):
            for b in range(S):
                w = q[u, a] * q[v, b]
                if w > 0.0:  # 0 * -inf (a zero potential where the seed has no mass) counts 0
                    mean_psi += w * exp_tables[t, a, b]
                    mean_log += w * log_tables[t, a, b]
        if mean_log == -np.inf:  # the factor forbids states the seed gives mass: infinite gain
            out[e] = _INFINITE_GAIN
            continue
        if mean_psi >= _UNDERFLOW_GUARD:
            log_mean = shifts[t] + math.log(mean_psi)
        else:  # the weight sits where the table is ~1e3 below its maximum: exact log-sum-exp
            top = -np.inf
            for a in range(S):
                for b in range(S):
                    val = log_q[u, a] + log_q[v, b] + log_tables[t, a, b]
                    if val > top:
                        top = val
            acc = 0.0
            for a in range(S):
                for b in range(S):
                    acc += math.exp(log_q[u, a] + log_q[v, b] + log_tables[t, a, b] - top)
            log_mean = top + math.log(acc)
        gain = log_mean - mean_log
        out[e] = gain if gain > 0.0 else 0.0  # >= 0 by Jensen; clip rounding noise
    return out
