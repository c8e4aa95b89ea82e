"""Learning kernels for pairwise models scored by LP relaxations: DLPW epochs and Pegasos steps.

The model (Meshi et al. 2010, sec. 5, the overcomplete representation): ``n_nodes`` labels with
``n_states[i]`` states (padded to ``S``), features ``x`` shared by all labels, unary weights
``W[:, i * S + a]`` (the score of ``y_i = a`` is ``x . W[:, i * S + a]``) and one free table
``P[e, a, b]`` per edge. The weights are stored scaled, ``w = scale * (V, P)``, so that the Pegasos
shrink ``w <- (1 - 1/t) w`` costs O(1); ``state = [scale, ||V||^2 + ||P||^2]`` (the squared norm is
updated entry by entry, so the projection on the ``sqrt(C)`` ball is O(1) too).

Features arrive as CSR rows (``indptr, indices, data``; dense data converted once): a step costs
O(nnz(x) * changed labels * S) for the unary weights and O(n_edges * S^2) for the tables.

Pegasos step (Shalev-Shwartz et al. 2007, with lambda = 1/C, as rebuilt in the DLPW brief)::

    w <- (1 - 1/t) w - (C / t) G,     w <- min(1, sqrt(C) / ||w||) w

for a subgradient ``G`` of one sample's loss, given as node coefficients ``node_g`` (``n_nodes * S``:
``G_W = x outer node_g``) and edge coefficients ``edge_g`` (``(n_edges, S, S)``).
"""

import math

import numpy as np

from ..utils._jit import helper, kernel
from ..utils.validation import (
    check_edge_list,
    check_float_array,
    check_int_array,
    check_offsets,
    check_scalar_param,
)
from ._lp_fast import _fast_epoch, _flush, _full_step
from .lp import (
    LPGraph,
    _check_delta,
    _check_labels,
    check_lp_graph,
)

__all__ = ["pegasos_step", "dlpw_epoch", "sets_epoch"]


@helper
def _step(t, C, xi, xv, node_g, edge_g, V, P, state):
    shrink = 1.0 - 1.0 / t
    if shrink <= 0.0:
        V[:] = 0.0
        P[:] = 0.0
        state[0], state[1] = 1.0, 0.0
    else:
        state[0] *= shrink
    a = state[0]
    coef = -(C / t) / a
    sq = state[1]
    nq = node_g.shape[0]
    for p in range(xi.shape[0]):
        f, x = xi[p], xv[p]
        for q in range(nq):
            g = node_g[q]
            if g != 0.0:
                old = V[f, q]
                new = old + coef * x * g
                sq += new * new - old * old
                V[f, q] = new
    E, S = P.shape[0], P.shape[1]
    for e in range(E):
        for u in range(S):
            for v in range(S):
                g = edge_g[e, u, v]
                if g != 0.0:
                    old = P[e, u, v]
                    new = old + coef * g
                    sq += new * new - old * old
                    P[e, u, v] = new
    sq = max(sq, 0.0)
    norm2 = a * a * sq
    if norm2 > C:
        a *= math.sqrt(C / norm2)
    if a < 1e-8:  # fold the scale back in before it underflows
        for f in range(V.shape[0]):
            for q in range(nq):
                V[f, q] *= a
        for e in range(E):
            for u in range(S):
                for v in range(S):
                    P[e, u, v] *= a
        sq *= a * a
        a = 1.0
    state[0], state[1] = a, sq


@kernel
def _pegasos_step(t, C, xi, xv, node_g, edge_g, V, P, state):
    _step(t, C, xi, xv, node_g, edge_g, V, P, state)


def _check_inplace(arr, name, ndim):
    """A writeable C-contiguous float64 array of ``ndim`` dimensions with finite entries (updated in place)."""
    if not isinstance(arr, np.ndarray) or arr.dtype != np.float64:
        what = type(arr).__name__ if not isinstance(arr, np.ndarray) else f"dtype {arr.dtype}"
        raise TypeError(f"{name} must be a float64 ndarray (updated in place), got {what}.")
    if arr.ndim != ndim or not arr.flags.c_contiguous or not arr.flags.writeable:
        raise ValueError(f"{name} must be a writeable C-contiguous {ndim}D array, got shape {arr.shape}.")
    _bounded(check_float_array(arr, name, allow_empty=False), name)
    return arr


def _check_weights(V, P, state):
    V, P, state = _check_inplace(V, "V", 2), _check_inplace(P, "P", 3), _check_inplace(state, "state", 1)
    if P.shape[1] != P.shape[2]:
        raise ValueError(f"P must have shape (n_edges, S, S), got {P.shape}.")
    if state.shape != (2,) or not state[0] > 0 or state[1] < 0:
        raise ValueError(f"state must be [scale > 0, squared norm >= 0], got {state!r}.")
    return V, P, state


def _check_features(xi, xv, n_features, names=("xi", "xv")):
    xi = check_int_array(xi, names[0], ndim=1, low=0, high=n_features)
    xv = _bounded(check_float_array(xv, names[1], ndim=1), names[1])
    if xv.shape != xi.shape:
        raise ValueError(f"{names[0]} and {names[1]} must have the same length, got {xi.shape[0]} and {xv.shape[0]}.")
    return xi, xv


# Largest |entry| of features, weights and subgradients: the step updates squared norms in place.
_MAX_ABS = 1e100


def _bounded(arr, name):
    if arr.size and np.abs(arr).max() > _MAX_ABS:
        at = np.unravel_index(int(np.abs(arr).argmax()), arr.shape)
        at = int(at[0]) if len(at) == 1 else tuple(int(i) for i in at)
        raise ValueError(f"{name} holds {arr[at]:.3g} at index {at}: |entries| above {_MAX_ABS:g} overflow the "
                         "squared norm; rescale.")
    return arr


def pegasos_step(t, C, xi, xv, node_g, edge_g, V, P, state, *, check_input=True):
    """One projected Pegasos step at iteration ``t`` (>= 1) in place on ``V``, ``P`` and ``state``.

    ``xi, xv``: indices and values of the sample's features; ``node_g`` ``(n_nodes * S,)`` and
    ``edge_g`` ``(n_edges, S, S)`` the subgradient coefficients of its loss (see module docstring).
    ``V`` ``(n_features, n_nodes * S)``, ``P`` ``(n_edges, S, S)`` and ``state`` ``(2,)`` are
    float64 arrays updated in place. ``check_input=False`` skips the validation.

    Examples
    --------
    >>> import numpy as np
    >>> V, P, state = np.zeros((3, 4)), np.zeros((1, 2, 2)), np.array([1.0, 0.0])
    >>> pegasos_step(2, 1.0, np.array([0]), np.array([1.0]), np.array([1.0, -1.0, 0.0, 0.0]),
    ...              np.zeros((1, 2, 2)), V, P, state)
    >>> (state[0] * V[0]).tolist(), state.tolist()  # w = scale * V; state = [scale, ||V||^2]
    ([-0.5, 0.5, 0.0, 0.0], [0.5, 2.0])
    """
    if check_input:
        t = check_scalar_param(t, "t", low=1.0)
        C = check_scalar_param(C, "C", low=0.0, closed="neither")
        V, P, state = _check_weights(V, P, state)
        xi, xv = _check_features(xi, xv, V.shape[0])
        node_g = _bounded(check_float_array(node_g, "node_g", ndim=1), "node_g")
        edge_g = _bounded(check_float_array(edge_g, "edge_g", ndim=3), "edge_g")
        if node_g.shape[0] != V.shape[1] or edge_g.shape != P.shape:
            raise ValueError(f"node_g {node_g.shape} and edge_g {edge_g.shape} must match the columns of V "
                             f"{V.shape} and the shape of P {P.shape}.")
    _pegasos_step(float(t), float(C), xi, xv, np.ascontiguousarray(node_g, dtype=np.float64),
          np.ascontiguousarray(edge_g, dtype=np.float64), V, P, state)


def dlpw_epoch(order, t0, C, n_inner, loss_weight, Xp, Xi, Xd, Y, V, P, state, edges, n_states, indptr, slots,
               delta, *, average=None, check_input=True):
    """One pass of Algorithm 1 (DLPW) over the samples in ``order``; returns the new step count.

    For each sample ``m``: build the loss-augmented potentials from the current weights, run
    ``n_inner`` star passes on its stored messages ``delta[m]`` (warm start, updated in place),
    read the subgradient of ``g(delta_m; theta_m(w))`` from the maximisers of its node and edge
    terms, and take a projected Pegasos step.

    Parameters
    ----------
    order : ndarray of int, sample indices in ``[0, n_samples)``
    t0 : int, steps taken so far (>= 0)
    C, loss_weight : float, regularisation (> 0) and Hamming loss weight (>= 0)
    n_inner : int, star passes per sample (>= 0)
    Xp, Xi, Xd : CSR features (``indptr``, ``indices``, ``data``) of the ``n_samples`` rows
    Y : ndarray of shape (n_samples, n_nodes), int, the true labellings
    V, P, state : float64 weights updated in place (see :func:`pegasos_step`)
    edges, n_states, indptr, slots : the fields of an :class:`~sklearn_struct.oracles.lp.LPGraph`
    delta : ndarray of shape (n_samples, 2 * n_edges, S), messages updated in place
    average : tuple (sum_W, sum_P) of float64 arrays shaped like ``V`` and ``P``, optional
        If given, the weights ``w_t = scale * (V, P)`` after every step of the pass are added to
        them in place (for the averaged iterate, the output Pegasos' guarantee is stated for).
    check_input : bool, default=True
        False skips the validation (the estimator passes arrays it built).
    """
    if check_input:
        order, t0, C, n_inner, loss_weight, Xp, Xi, Xd, Y, V, P, state, delta = _check_epoch(
            order, t0, C, n_inner, loss_weight, Xp, Xi, Xd, Y, V, P, state, LPGraph(edges, n_states, indptr, slots),
            delta)
        if average is not None and (average[0].shape != V.shape or average[1].shape != P.shape
                                    or average[0].dtype != np.float64 or average[1].dtype != np.float64):
            raise ValueError(f"average must be two float64 arrays of shapes {V.shape} and {P.shape}.")
    sum_W, sum_P = average if average is not None else (np.zeros((0, 0)), np.zeros((0, 0, 0)))
    no_tree = np.zeros(0, dtype=np.int64)  # star passes on the stored messages, whatever the graph
    return _fast_epoch(order, t0, C, n_inner, loss_weight, Xp, Xi, Xd, Y, V, P, state, edges, n_states, indptr,
                       slots, delta, no_tree, no_tree, no_tree, no_tree, sum_W, sum_P)


def _check_epoch(order, t0, C, n_inner, loss_weight, Xp, Xi, Xd, Y, V, P, state, graph, delta):
    check_lp_graph(graph)
    t0 = check_scalar_param(t0, "t0", kind="int", low=0)
    C = check_scalar_param(C, "C", low=0.0, closed="neither")
    n_inner = check_scalar_param(n_inner, "n_inner", kind="int", low=0)
    loss_weight = check_scalar_param(loss_weight, "loss_weight", low=0.0)
    V, P, state = _check_weights(V, P, state)
    S = graph.max_states
    if P.shape != (graph.n_edges, S, S):
        raise ValueError(f"P must have shape ({graph.n_edges}, {S}, {S}) for this graph, got {P.shape}.")
    if V.shape[1] != graph.n_nodes * S:
        raise ValueError(f"V must have n_nodes * S = {graph.n_nodes * S} columns, got {V.shape[1]}.")
    Xi, Xd = _check_features(Xi, Xd, V.shape[0], ("Xi", "Xd"))
    Xp = check_offsets(Xp, "Xp", n_rows=Xi.shape[0])
    n_samples = Xp.shape[0] - 1
    Y = np.ascontiguousarray(_check_labels(graph, Y, n_samples))
    order = check_int_array(order, "order", ndim=1, low=0, high=n_samples)
    delta = _check_delta(graph, delta, n_samples)
    return order, t0, C, n_inner, loss_weight, Xp, Xi, Xd, Y, V, P, state, delta


def sets_epoch(order, t0, C, loss, Xp, Xi, Xd, target, sets, V, P, state, edges, n_states, *, average=None,
               check_input=True):
    """One Pegasos pass of the structured hinge whose loss-augmented MAP runs over a list of label sets.

    The labellings are the rows of ``sets`` ``(K, n_nodes)``; sample ``m``'s truth is row
    ``target[m]``. Each step scores every set exactly, ``score_k = sum_i x . w_i[s_ki] +
    sum_e P_e[s_ku, s_kv] + loss(k, target[m])`` (``O(K (n_nodes + n_edges))``, no relaxation, no
    messages), and steps along ``f(best) - f(truth)`` (see :func:`pegasos_step`). ``loss`` is
    ``"subset"`` (0/1: ``1`` for every other set) or ``"hamming"`` (normalised Hamming distance).
    Edge features: if ``V`` has ``n_nodes * S + n_edges * S * S`` columns, column
    ``n_nodes * S + (e * S + a) * S + b`` holds ``w_e[a, b]`` and the edge term of a set is
    ``P_e[s_ku, s_kv] + x . w_e[s_ku, s_kv]`` (pairwise potentials that depend on the input).
    ``average``: as in :func:`dlpw_epoch`. Returns the new step count.
    """
    if check_input:
        order, t0, C, Xp, Xi, Xd, target, sets, edges, n_states = _check_sets_epoch(
            order, t0, C, loss, Xp, Xi, Xd, target, sets, V, P, state, edges, n_states)
        if average is not None and (not isinstance(average, (tuple, list)) or len(average) != 2
                                    or not all(isinstance(a, np.ndarray) for a in average)
                                    or average[0].shape != V.shape or average[1].shape != P.shape
                                    or average[0].dtype != np.float64 or average[1].dtype != np.float64):
            raise ValueError(f"average must be two float64 arrays of shapes {V.shape} and {P.shape}.")
    sum_W, sum_P = average if average is not None else (np.zeros((0, 0)), np.zeros((0, 0, 0)))
    return _sets_epoch(order, t0, float(C), loss == "subset", Xp, Xi, Xd, target, sets, V, P, state, edges,
                       n_states, sum_W, sum_P)


def _check_sets_epoch(order, t0, C, loss, Xp, Xi, Xd, target, sets, V, P, state, edges, n_states):
    t0 = check_scalar_param(t0, "t0", kind="int", low=0)
    C = check_scalar_param(C, "C", low=0.0, closed="neither")
    if not isinstance(loss, str) or loss not in ("subset", "hamming"):
        raise ValueError(f"loss must be 'subset' or 'hamming', got {loss!r}.")
    V, P, state = _check_weights(V, P, state)
    n_states = check_int_array(n_states, "n_states", ndim=1, low=1)
    if n_states.size == 0:
        raise ValueError("n_states is empty: the graph needs at least one node.")
    n_nodes, S = n_states.shape[0], P.shape[1]
    if n_states.max() > S:
        raise ValueError(f"n_states must be at most S = P.shape[1] = {S}, got {int(n_states.max())} at index "
                         f"{int(n_states.argmax())}.")
    edges = check_edge_list(edges, n_nodes, "edges")
    E = edges.shape[0]
    if P.shape[0] != E:
        raise ValueError(f"P must have shape ({E}, S, S) for the {E} edges, got {P.shape}.")
    if V.shape[1] not in (n_nodes * S, n_nodes * S + E * S * S):
        raise ValueError(f"V must have n_nodes * S = {n_nodes * S} (or, with edge features, "
                         f"{n_nodes * S + E * S * S}) columns, got {V.shape[1]}.")
    Xi, Xd = _check_features(Xi, Xd, V.shape[0], ("Xi", "Xd"))
    Xp = check_offsets(Xp, "Xp", n_rows=Xi.shape[0])
    n_samples = Xp.shape[0] - 1
    sets = check_int_array(sets, "sets", ndim=2, low=0)
    if sets.shape[0] == 0 or sets.shape[1] != n_nodes:
        raise ValueError(f"sets must have shape (n_sets >= 1, n_nodes = {n_nodes}), got {sets.shape}.")
    over = np.argwhere(sets >= n_states[None, :])
    if over.size:
        k, i = (int(v) for v in over[0])
        raise ValueError(f"sets[{k}, {i}] = {int(sets[k, i])} is not a state of node {i} (n_states[{i}] = "
                         f"{int(n_states[i])}).")
    target = check_int_array(target, "target", ndim=1, low=0, high=sets.shape[0])
    if target.shape[0] != n_samples:
        raise ValueError(f"target must hold one set index per sample ({n_samples}), got {target.shape[0]}.")
    order = check_int_array(order, "order", ndim=1, low=0, high=n_samples)
    return order, t0, C, Xp, Xi, Xd, target, sets, edges, n_states


@kernel
def _sets_epoch(order, t0, C, zero_one, Xp, Xi, Xd, target, sets, V, P, state, edges, n_states, sum_W, sum_P):
    n_nodes, S, E = n_states.shape[0], P.shape[1], P.shape[0]
    K = sets.shape[0]
    nS = n_nodes * S
    edge_x = V.shape[1] > nS  # edge features: columns nS + (e * S + a) * S + b score x . w_e[a, b]
    unary = np.empty((n_nodes, S))
    ex = np.zeros((E, S, S))
    qidx = np.empty(2 * (n_nodes + E), dtype=np.int64)
    qval = np.empty(2 * (n_nodes + E))
    pidx = np.empty(2 * E, dtype=np.int64)
    pval = np.empty(2 * E)
    use = sum_W.size > 0
    UW = np.zeros_like(V) if use else np.zeros((1, 1))
    UP = np.zeros(E * S * S) if use else np.zeros(1)
    Pf = P.reshape(E * S * S)
    sum_Pf = sum_P.reshape(sum_P.size)
    acc = np.array([0.0, 1.0 if use else 0.0])
    t = t0
    for m in order:
        t += 1
        a = state[0]
        unary[:] = 0.0
        for p in range(Xp[m], Xp[m + 1]):
            f, x = Xi[p], Xd[p]
            for i in range(n_nodes):
                for s in range(n_states[i]):
                    unary[i, s] += x * V[f, i * S + s]
        if edge_x:
            ex[:] = 0.0
            for p in range(Xp[m], Xp[m + 1]):
                f, x = Xi[p], Xd[p]
                for e in range(E):
                    for u in range(S):
                        for v in range(S):
                            ex[e, u, v] += x * V[f, nS + (e * S + u) * S + v]
        y = target[m]
        best, arg = -np.inf, y
        for k in range(K):
            sc = 0.0
            diff = 0
            for i in range(n_nodes):
                sc += unary[i, sets[k, i]]
                if sets[k, i] != sets[y, i]:
                    diff += 1
            for e in range(E):
                sc += P[e, sets[k, edges[e, 0]], sets[k, edges[e, 1]]]
                if edge_x:
                    sc += ex[e, sets[k, edges[e, 0]], sets[k, edges[e, 1]]]
            sc *= a
            if zero_one:
                sc += 1.0 if k != y else 0.0
            else:
                sc += diff / n_nodes
            if sc > best:
                best, arg = sc, k
        nq, npair = 0, 0
        if arg != y:  # the subgradient f(best) - f(truth): its nonzero entries, each index once
            for i in range(n_nodes):
                u, v = sets[arg, i], sets[y, i]
                if u != v:
                    qidx[nq], qval[nq], qidx[nq + 1], qval[nq + 1] = i * S + u, 1.0, i * S + v, -1.0
                    nq += 2
            for e in range(E):
                i, j = edges[e, 0], edges[e, 1]
                if sets[arg, i] != sets[y, i] or sets[arg, j] != sets[y, j]:
                    hi, lo = (e * S + sets[arg, i]) * S + sets[arg, j], (e * S + sets[y, i]) * S + sets[y, j]
                    pidx[npair], pval[npair], pidx[npair + 1], pval[npair + 1] = hi, 1.0, lo, -1.0
                    npair += 2
                    if edge_x:
                        qidx[nq], qval[nq], qidx[nq + 1], qval[nq + 1] = nS + hi, 1.0, nS + lo, -1.0
                        nq += 2
        lo, hi = Xp[m], Xp[m + 1]
        _full_step(float(t), C, Xi[lo:hi], Xd[lo:hi], qidx, qval, nq, pidx, pval, npair, V, Pf, state, acc, UW,
                   UP, sum_W, sum_Pf)
    if use:
        _flush(V, Pf, state, acc, UW, UP, sum_W, sum_Pf)
    return t
