"""Loopy belief propagation on pairwise discrete graphs: sum-/max-product, TRW, Bethe free energy.

A graph is ``unary`` log-potentials ``(n_nodes, n_states)``, undirected ``edges`` ``(n_edges, 2)``
and pairwise log-potentials ``pairwise`` of shape ``(n_states, n_states)`` (one table shared by
every edge) or ``(n_edges, n_states, n_states)`` (one per edge), where ``pairwise[e, a, b]`` scores
``y[edges[e, 0]] = a`` and ``y[edges[e, 1]] = b``. The model is
``p(y) ∝ exp(sum_i unary[i, y_i] + sum_e pairwise[e, y_u, y_v])``.

Data layout
-----------
Adjacency is CSR over nodes: row ``i`` lists the directed messages *out of* node ``i``, so message
slot ``k`` (``indptr[i] <= k < indptr[i + 1]``) is the message ``i -> neighbors[k]`` over edge
``edge_ids[k]``, and ``reverse[k]`` is the slot of the opposite message. All messages live in one
``(2 * n_edges, n_states)`` array of log-values normalised so that their maximum is 0.

Update and cost
---------------
With edge appearance probabilities ``rho`` (all 1 for plain BP), the tree-reweighted update of
Wainwright, Jaakkola & Willsky (2005) is::

    b_i(a)      = unary[i, a] + sum_{k -> i} rho_k * m_{k->i}(a)            (log node belief)
    m_{i->j}(b) = log sum_a exp(b_i(a) - m_{j->i}(a) + pairwise_ij(a, b) / rho_ij)

since ``prod_{k != j} m_k^rho_k / m_j^(1 - rho_j) = prod_k m_k^rho_k / m_j``; with ``rho = 1`` it is
ordinary BP. Max-product replaces the sum by a max. Per message and state count ``S`` the kernel
does ``S`` subtractions, ``S`` exps of the cavity, ``S^2`` multiply-adds against the pre-exponentiated
table and ``S`` logs; the convergence test compares max-normalised log messages (no extra exp).
For binary models: 2 exps, 2 logs and 4 multiply-adds per message update.

The ``S^2`` product runs in probability space after shifting the cavity and the table by their
maxima, so nothing overflows. If an entry of the result falls below ``1e-200`` (terms below the
double range could then matter), that one message is recomputed with exact log-sum-exp, so
potentials of magnitude 1e3 give correct answers, not NaN.

Schedules: ``"parallel"`` (flooding: every message from the previous iteration's messages; on a
large graph each sweep is split into chunks of nodes run on threads) and ``"sequential"`` (nodes in index order, then in reverse order
on the next sweep, each node sending all its messages from the current ones; converges in fewer
sweeps). Both skip a node none of whose incoming messages changed by more than ``tol`` since it
last sent (its messages would not change), so converged regions, converged connected components
(a tree converges within diameter + 1 sweeps) and nodes without edges cost nothing. Damping mixes the new and old max-normalised messages in probability space (sum-product) or in
log space (max-product): ``m <- (1 - damping) m_new + damping m_old``.

References
----------
Wainwright, M., Jaakkola, T., Willsky, A. "A new class of upper bounds on the log partition
function." IEEE Trans. Inf. Theory 51(7), 2005.
Yedidia, J., Freeman, W., Weiss, Y. "Constructing free-energy approximations and generalized
belief propagation algorithms." IEEE Trans. Inf. Theory 51(7), 2005.
"""

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..utils.validation import check_edge_list, check_float_array, check_scalar_param
from ._loopy_kernels import _LOG_TOL, _absorb, _edge_beliefs, _log_softmax_rows, _run_bp, _seed_gains, _sweep_range
from ._threads import n_threads_for, run_chunks_in_threads, token_chunks

__all__ = [
    "Adjacency",
    "BPResult",
    "build_adjacency",
    "loopy_bp",
    "bethe_free_energy",
    "trw_edge_probabilities",
    "check_pairwise_graph",
    "check_edge_list",
    "seed_gains",
    "absorbed_unary",
    "log_softmax",
]

# Finite potentials above this magnitude are rejected: sums over neighbours and the division
# by TRW edge probabilities (>= 1e-12) would overflow float64 (the error names the overflow).
_MAX_POTENTIAL = 1e100
# Binary sum-product messages take the kernel's unrolled path (the same operations as the
# generic one, bit for bit; tests set this to False to compare the two).
_UNROLLED = True


@dataclass
class Adjacency:
    """CSR adjacency of an undirected graph with one slot per directed message.

    Attributes
    ----------
    indptr : ndarray of shape (n_nodes + 1,)
        Messages out of node ``i`` are slots ``indptr[i]:indptr[i + 1]``.
    neighbors : ndarray of shape (2 * n_edges,)
        Receiver of the message in each slot.
    edge_ids : ndarray of shape (2 * n_edges,)
        Undirected edge of each slot.
    reverse : ndarray of shape (2 * n_edges,)
        Slot of the opposite message (``neighbors[k] -> i``).
    forward : ndarray of shape (2 * n_edges,)
        1 if the sender is ``edges[e, 0]`` (table read as ``pairwise[e, sender, receiver]``).
    """

    indptr: np.ndarray
    neighbors: np.ndarray
    edge_ids: np.ndarray
    reverse: np.ndarray
    forward: np.ndarray

    @property
    def n_nodes(self):
        return self.indptr.shape[0] - 1

    @property
    def n_messages(self):
        return self.neighbors.shape[0]


@dataclass
class BPResult:
    """Output of :func:`loopy_bp`.

    Attributes
    ----------
    node_marginals : ndarray of shape (n_nodes, n_states)
        Normalised beliefs (max-marginals, normalised to sum 1, for ``mode="max"``).
    edge_marginals : ndarray of shape (n_edges, n_states, n_states) or None
        Pairwise beliefs, ``[e, a, b]`` for ``y_u = a, y_v = b``; only when requested.
    free_energy : float or None
        Bethe (TRW when ``rho`` is not 1) free energy; ``-free_energy`` approximates log Z
        (exact on trees, an upper bound for TRW with ``rho`` in the spanning-tree polytope).
    node_energy_terms, edge_energy_terms : ndarray or None
        Per-node and per-edge parts of the free energy (their sums give ``free_energy``), so that
        callers can total it per connected component or per sample.
    log_messages : ndarray of shape (2 * n_edges, n_states)
        Final messages in CSR slot order (pass back as ``init_messages`` to warm-start).
    adjacency : Adjacency
    n_iter : int
        Iterations (sweeps) run.
    converged : bool
        Whether the largest message change fell to ``tol``.
    max_delta : float
        Largest change of an entry of a max-normalised log message in the last iteration (log
        space: what ``tol`` is compared with).
    n_message_updates : int
        Message updates performed (nodes whose incoming messages did not change are skipped,
        so this is at most ``n_iter * 2 * n_edges``).
    """

    node_marginals: np.ndarray
    edge_marginals: object
    free_energy: object
    node_energy_terms: object
    edge_energy_terms: object
    log_messages: np.ndarray
    adjacency: Adjacency
    n_iter: int
    converged: bool
    max_delta: float
    n_message_updates: int


# --------------------------------------------------------------------------------------
# Python API
# --------------------------------------------------------------------------------------


def check_pairwise_graph(unary, edges, pairwise, name="graph", allow_zero=False):
    """Validate and convert a pairwise model; return ``(unary, edges, pairwise3d)``.

    ``pairwise3d`` is ``(1, S, S)`` for a shared table, else ``(n_edges, S, S)``. Raises a
    ``ValueError`` naming ``name`` for wrong shapes, non-finite potentials, edges out of range,
    self-loops and duplicate edges. Graphs without edges are legal (independent nodes).
    ``allow_zero``: log-potentials may be ``-inf`` (potential 0, a hard constraint), but not a
    whole unary row or pairwise table (nothing allowed).
    """
    unary = check_float_array(unary, f"{name}: unary", check_values=False)
    if unary.ndim != 2:
        raise ValueError(f"{name}: unary must be 2D (n_nodes, n_states), got shape {unary.shape}.")
    n_nodes, S = unary.shape
    if n_nodes == 0:
        raise ValueError(f"{name} is empty: it has 0 nodes, at least 1 is required.")
    if S == 0:
        raise ValueError(f"{name}: unary has 0 states.")
    if allow_zero:
        _check_zero_potentials(unary, unary, f"{name}: unary", "node")
    elif not np.all(np.isfinite(unary)):
        at = tuple(int(a) for a in np.argwhere(~np.isfinite(unary))[0])
        raise ValueError(
            f"{name}: unary potentials contain NaN or infinity (node {at[0]}, state {at[1]}); use large "
            "finite values (e.g. -1e3) for near-forbidden states."
        )
    edges = check_edge_list(edges, n_nodes, name)
    pairwise = check_float_array(pairwise, f"{name}: pairwise", check_values=False)
    if pairwise.ndim == 2:
        pairwise = pairwise[None]
    n_edges = edges.shape[0]
    if pairwise.ndim != 3 or pairwise.shape[1:] != (S, S) or pairwise.shape[0] not in (1, n_edges):
        raise ValueError(
            f"{name}: pairwise must have shape ({S}, {S}) or (n_edges={n_edges}, {S}, {S}) to "
            f"match {S} states, got {np.shape(pairwise)}."
        )
    if allow_zero:
        _check_zero_potentials(pairwise, pairwise.reshape(pairwise.shape[0], S * S), f"{name}: pairwise", "table")
    elif not np.all(np.isfinite(pairwise)):
        at = tuple(int(a) for a in np.argwhere(~np.isfinite(pairwise))[0])
        raise ValueError(f"{name}: pairwise potentials contain NaN or infinity (table {at[0]}, entry {at[1:]}).")
    for what, arr in (("unary", unary), ("pairwise", pairwise)):
        big = np.abs(np.where(np.isfinite(arr), arr, 0.0))
        if arr.size and big.max() > _MAX_POTENTIAL:
            at = tuple(int(a) for a in np.argwhere(big > _MAX_POTENTIAL)[0])
            raise ValueError(
                f"{name}: {what} potential {arr[at]:.3g} at index {at} is too large: BP sums and rescales "
                f"potentials, which overflows float64 beyond |{_MAX_POTENTIAL:.0e}|; rescale them."
            )
    return np.ascontiguousarray(unary), edges, np.ascontiguousarray(pairwise)


def _check_zero_potentials(arr, rows, what, row_name):
    """Log-potentials that may be -inf (zero potentials), but not NaN, +inf or -inf over a whole row."""
    bad = np.isnan(arr) | (arr == np.inf)
    if bad.any():
        at = tuple(int(a) for a in np.argwhere(bad)[0])
        raise ValueError(f"{what} log-potentials contain NaN or +inf at index {at} (-inf, a zero potential, is "
                         "allowed).")
    dead = np.all(rows == -np.inf, axis=1)
    if dead.any():
        raise ValueError(f"{what}: {row_name} {int(np.flatnonzero(dead)[0])} is -inf everywhere (every potential "
                         "0): the model has no configuration of positive probability.")


def build_adjacency(edges, n_nodes):
    """CSR message slots of an undirected graph (validated edges, int64 ``(n_edges, 2)``).

    Examples
    --------
    >>> import numpy as np
    >>> adj = build_adjacency(np.array([[0, 1], [1, 2]]), 3)
    >>> adj.indptr.tolist(), adj.neighbors.tolist()
    ([0, 1, 3, 4], [1, 0, 2, 1])
    """
    return _adjacency_of(check_edge_list(edges, n_nodes, name="build_adjacency"), n_nodes)


def _adjacency_of(edges, n_nodes):
    """:func:`build_adjacency` of edges validated already (int64 ``(n_edges, 2)``)."""
    n_edges = edges.shape[0]
    # entry e of (first ends, second ends) is the message edges[e, 0] -> edges[e, 1], entry
    # n_edges + e the reverse one; a node's slots hold its messages in edge order
    owner = np.concatenate([edges[:, 0], edges[:, 1]])
    edge_ids = np.tile(np.arange(n_edges, dtype=np.int64), 2)
    order = np.argsort(owner * n_edges + edge_ids, kind="stable")
    slot = np.empty(2 * n_edges, dtype=np.int64)
    slot[order] = np.arange(2 * n_edges)
    indptr = np.zeros(int(n_nodes) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=int(n_nodes)), out=indptr[1:])
    return Adjacency(
        indptr=indptr, neighbors=np.concatenate([edges[:, 1], edges[:, 0]])[order], edge_ids=edge_ids[order],
        reverse=slot[(order + n_edges) % max(1, 2 * n_edges)], forward=(order < n_edges).astype(np.int64),
    )


def _check_adjacency(adjacency, n_nodes, n_edges):
    """A user-given Adjacency must fit the graph: every index the kernels follow is in range."""
    if not isinstance(adjacency, Adjacency):
        raise TypeError(f"adjacency must be an Adjacency from build_adjacency, got {type(adjacency).__name__}.")
    n_msg = 2 * n_edges
    arrays = {name: np.asarray(getattr(adjacency, name)) for name in ("indptr", "neighbors", "edge_ids",
                                                                       "reverse", "forward")}
    expected = {"indptr": (n_nodes + 1, 0, n_msg + 1), "neighbors": (n_msg, 0, n_nodes),
                "edge_ids": (n_msg, 0, max(n_edges, 1)), "reverse": (n_msg, 0, max(n_msg, 1)),
                "forward": (n_msg, 0, 2)}
    for name, (size, low, high) in expected.items():
        arr = arrays[name]
        if arr.dtype != np.int64 or arr.shape != (size,) or (size and (arr.min() < low or arr.max() >= high)):
            raise ValueError(f"adjacency.{name} does not fit this graph ({n_nodes} nodes, {n_edges} edges); "
                             "build it with build_adjacency(edges, n_nodes).")
    indptr = arrays["indptr"]
    if indptr[0] != 0 or indptr[-1] != n_msg or np.any(np.diff(indptr) < 0):
        raise ValueError("adjacency.indptr must rise from 0 to 2 * n_edges; build it with build_adjacency.")


def _scaled_tables(pairwise, rho, n_edges):
    """Log tables ``pairwise / rho`` and their shifted exponentials, one per edge if needed."""
    if rho.size == 0 or np.all(rho == rho[0]):
        scale = rho[0] if rho.size else 1.0
        log_tables = pairwise / scale
    else:
        base = np.broadcast_to(pairwise, (n_edges,) + pairwise.shape[1:])
        log_tables = base / rho[:, None, None]
    log_tables = np.ascontiguousarray(log_tables)
    shift = log_tables.max(axis=(1, 2), keepdims=True)
    exp_tables = np.exp(log_tables - shift)
    return log_tables, exp_tables


def loopy_bp(unary, edges, pairwise, *, rho=None, mode="sum", schedule="sequential", damping=0.0,
             max_iter=100, tol=1e-6, edge_marginals=False, free_energy=False, init_messages=None,
             adjacency=None, check_input=True, warn=True):
    """Loopy belief propagation (sum- or max-product, optionally tree-reweighted).

    Potentials may be 0 (log-potential ``-inf``: hard constraints, as in the UAI inference
    competition models): messages are computed in log space, entries of forbidden states are
    ``-inf``, never NaN, and every message keeps its maximum at 0. A node or edge left with no
    allowed state by contradicting constraints gets uniform messages and marginals.

    Parameters
    ----------
    unary : array-like of shape (n_nodes, n_states)
        Node log-potentials (``-inf`` allowed, not for every state of a node).
    edges : array-like of int of shape (n_edges, 2)
        Undirected edges; no self-loops or duplicates. May be empty.
    pairwise : array-like of shape (n_states, n_states) or (n_edges, n_states, n_states)
        Edge log-potentials ``[e, a, b]`` for ``y_u = a, y_v = b`` with ``(u, v) = edges[e]``
        (``-inf`` allowed, not for a whole table).
    rho : float or array-like of shape (n_edges,), default=None
        Edge appearance probabilities in (0, 1] for tree-reweighted BP; None (or 1) is plain BP.
        See :func:`trw_edge_probabilities`.
    mode : {"sum", "max"}, default="sum"
        Sum-product (marginals) or max-product (max-marginals; argmax gives the MAP on trees).
    schedule : {"sequential", "parallel"}, default="sequential"
        Node-sequential sweeps alternating direction, or flooding (parallel over nodes).
    damping : float in [0, 1), default=0.0
        Weight of the old message in each update.
    max_iter : int, default=100
        Maximum number of iterations (sweeps over all messages).
    tol : float, default=1e-6
        Stop when no entry of a max-normalised log message changes by more than ``tol`` in an
        iteration (measured in log space, as ``max_delta``; since ``|dp| <= |d log p|`` for
        ``p <= 1``, no max-normalised message then changed by more than ``tol`` in probability
        either).
    edge_marginals : bool, default=False
        Also compute pairwise beliefs.
    free_energy : bool, default=False
        Also compute the Bethe / TRW free energy (implies edge marginals; sum-product only).
    init_messages : ndarray of shape (2 * n_edges, n_states), default=None
        Warm start (``log_messages`` of an earlier result on the same edges); zeros otherwise.
    adjacency : Adjacency, default=None
        Precomputed :func:`build_adjacency` of ``edges``.
    check_input : bool, default=True
        Validate shapes, values and edges (skip only for data checked already).
    warn : bool, default=True
        Warn (``ConvergenceWarning``) when BP stops at ``max_iter`` iterations unconverged;
        callers that report it themselves (``BPResult.converged``) pass False.

    Returns
    -------
    result : BPResult

    Examples
    --------
    >>> import numpy as np
    >>> res = loopy_bp(np.array([[0.0, 1.0], [0.0, 0.0]]), [[0, 1]], np.eye(2), free_energy=True)
    >>> np.round(res.node_marginals[1], 4).tolist(), res.converged
    ([0.3932, 0.6068], True)
    """
    if mode not in ("sum", "max"):
        raise ValueError(f"mode must be 'sum' or 'max', got {mode!r}.")
    if schedule not in ("sequential", "parallel"):
        raise ValueError(f"schedule must be 'sequential' or 'parallel', got {schedule!r}.")
    damping = check_scalar_param(damping, "damping", low=0.0, high=1.0, closed="left")
    max_iter = check_scalar_param(max_iter, "max_iter", kind="int", low=0)
    tol = check_scalar_param(tol, "tol", low=0.0)
    if free_energy and mode != "sum":
        raise ValueError("free_energy is defined for sum-product only (mode='sum').")
    if check_input:
        unary, edges, pairwise = check_pairwise_graph(unary, edges, pairwise, allow_zero=True)
    else:
        pairwise = pairwise[None] if pairwise.ndim == 2 else pairwise
    n_nodes, S = unary.shape
    n_edges = edges.shape[0]
    rho = _check_rho(rho, n_edges)
    if adjacency is None:
        adjacency = _adjacency_of(edges, n_nodes) if check_input else build_adjacency(edges, n_nodes)
    elif check_input:
        _check_adjacency(adjacency, n_nodes, n_edges)
    log_tables, exp_tables = _scaled_tables(pairwise, rho, n_edges)
    if init_messages is None:
        msgs = np.zeros((2 * n_edges, S))
    else:  # a copy: BP updates it in place
        msgs = check_float_array(init_messages, "init_messages", shape=(2 * n_edges, S)).copy()
        if msgs.size and np.abs(msgs).max() > _MAX_POTENTIAL:
            raise ValueError(f"init_messages hold values beyond |{_MAX_POTENTIAL:.0e}|, which overflow; "
                             "pass log_messages of an earlier result.")
    # one flooding sweep costs ~S^2 per directed message; small graphs stay on one thread
    n_threads = n_threads_for(2 * n_edges * S * S) if schedule == "parallel" else 1
    run = _run_bp if n_threads == 1 else _run_bp_threads
    active = (np.diff(adjacency.indptr) > 0).astype(np.uint8)  # nodes without edges send nothing
    n_iter, delta, n_updates, log_belief = run(
        adjacency.indptr, adjacency.neighbors, adjacency.edge_ids, adjacency.reverse, adjacency.forward,
        unary, rho, log_tables, exp_tables, mode == "max", schedule == "parallel", float(damping),
        int(max_iter), float(tol), msgs, active, _UNROLLED, *(() if n_threads == 1 else (n_threads,)),
    )
    node = np.exp(_log_softmax_rows(log_belief))
    edge = None
    energy = node_terms = edge_terms = None
    if edge_marginals or free_energy:
        slot_uv = _forward_slots(adjacency, n_edges)
        edge = _edge_beliefs(edges, slot_uv, adjacency.reverse, log_belief, msgs, log_tables, adjacency.indptr,
                             adjacency.edge_ids, unary, rho)
    if free_energy:
        node_terms, edge_terms = bethe_free_energy(unary, edges, pairwise, node, edge, rho=rho, terms=True)
        energy = float(node_terms.sum() + edge_terms.sum())
    if warn and max_iter > 0 and not delta <= tol:
        warnings.warn(f"loopy BP did not converge in max_iter={max_iter} iterations: the largest message change "
                      f"in the last one was {delta:.3g} (log space) > tol={tol:g}; increase max_iter or damping, "
                      "or read BPResult.converged and pass warn=False.", ConvergenceWarning, stacklevel=2)
    return BPResult(
        node_marginals=node, edge_marginals=edge, free_energy=energy, node_energy_terms=node_terms,
        edge_energy_terms=edge_terms, log_messages=msgs, adjacency=adjacency, n_iter=int(n_iter),
        converged=bool(delta <= tol), max_delta=float(delta), n_message_updates=int(n_updates),
    )


def _run_bp_threads(indptr, neighbors, edge_ids, reverse, forward, unary, rho, log_tables, exp_tables,
                    max_product, flooding, damping, max_iter, tol, msgs, active, unrolled, n_threads):
    """Flooding BP with each iteration's sweep split over ``n_threads`` chunks of nodes (see ``_run_bp``).

    A flooding sweep reads only the previous messages, so the chunks are independent; they
    hold near-equal numbers of message slots.
    """
    belief, other, active_next = np.empty(unary.shape), msgs.copy(), np.zeros_like(active)
    bounds = token_chunks(indptr, n_threads)
    current = msgs
    delta, n_iter, n_updates = np.inf, 0, 0
    for it in range(max_iter):
        n_iter = it + 1

        def sweep(c, current=current, other=other, active=active, active_next=active_next):
            return _sweep_range(bounds[c], bounds[c + 1], False, False, indptr, neighbors, edge_ids, reverse,
                                forward, unary, rho, log_tables, exp_tables, max_product, damping, tol, _LOG_TOL,
                                current, other, belief, active, active_next, unrolled)

        parts = run_chunks_in_threads(sweep, bounds.shape[0] - 1)
        delta = max(p[0] for p in parts)
        current, other = other, current
        active, active_next = active_next, active
        active_next[:] = 0
        n_updates += sum(int(p[1]) for p in parts)
        if delta <= tol:
            break
    if n_iter % 2 == 1:  # an odd number of swaps left the result in the scratch buffer
        msgs[:] = current
    log_belief = _run_bp(indptr, neighbors, edge_ids, reverse, forward, unary, rho, log_tables, exp_tables,
                         max_product, flooding, damping, 0, tol, msgs, active, unrolled)[3]
    return n_iter, delta, n_updates, log_belief


def log_softmax(unary):
    """Row-wise log-softmax: the exact log marginals of a unary-only (fully factorised) model.

    ``unary`` may have any number of dimensions >= 1; the softmax runs over the last axis (a
    1D input is one row). ``-inf`` entries (forbidden states) are allowed, but not a row that
    is ``-inf`` everywhere (no state left), NaN or ``+inf``.

    Examples
    --------
    >>> import numpy as np
    >>> np.exp(log_softmax(np.array([0.0, np.log(3.0)]))).round(2).tolist()
    [0.25, 0.75]
    """
    unary = check_float_array(unary, "unary", ndim=range(1, 33), allow_neg_inf=True)
    if unary.shape[-1] == 0:
        raise ValueError(f"unary has 0 states (shape {unary.shape}).")
    rows = unary.reshape(-1, unary.shape[-1])
    dead = np.all(rows == -np.inf, axis=1)
    if dead.any():
        at = np.unravel_index(int(np.flatnonzero(dead)[0]), unary.shape[:-1])
        at = at[0] if len(at) == 1 else tuple(int(a) for a in at)
        raise ValueError(f"unary row {at} is -inf for every state: no state is allowed.")
    return _log_softmax_rows(rows).reshape(unary.shape)


def absorbed_unary(unary, edges, pairwise, *, log_seed_marginals=None, check_input=True):
    """Unary log-potentials with each given pairwise factor folded into its two endpoints.

    Factor ``e = (u, v)`` is replaced by its factor-to-node messages computed from the seed
    marginals ``q`` of the *other* endpoint::

        unary'[u, a] += log sum_b exp(pairwise_e(a, b)) q_v(b)
        unary'[v, b] += log sum_a exp(pairwise_e(a, b)) q_u(a)

    (each message shifted so that its maximum is 0, which does not change any marginal). With
    the unary-only seed (``q = softmax(unary)``, the default) this is one BP step from the seed;
    node marginals are exact for a factor whose endpoints have no other pairwise factors.
    Cost O(n_edges * n_states^2).

    Parameters
    ----------
    unary, edges, pairwise : as in :func:`loopy_bp`
        ``edges`` (and a per-edge ``pairwise``) list only the factors to fold in.
    log_seed_marginals : ndarray of shape (n_nodes, n_states), default=None
        ``log q``; None: ``log_softmax(unary)``.
    check_input : bool, default=True

    Returns
    -------
    unary : ndarray of shape (n_nodes, n_states)
        A new array.

    Examples
    --------
    >>> import numpy as np
    >>> unary = np.array([[0.0, 1.0], [0.0, 0.0]])
    >>> joint = absorbed_unary(unary, [[0, 1]], np.eye(2))
    >>> exact = loopy_bp(unary, [[0, 1]], np.eye(2)).node_marginals
    >>> bool(np.allclose(np.exp(log_softmax(joint)), exact))
    True
    """
    unary, edges, pairwise, log_q, exp_tables, _ = _seed_inputs(unary, edges, pairwise, log_seed_marginals,
                                                                check_input)
    return _absorb(np.array(unary, dtype=np.float64), np.exp(log_q), log_q, edges, pairwise, exp_tables)


def seed_gains(unary, edges, pairwise, *, log_seed_marginals=None, check_input=True):
    """Gain of adding each pairwise factor to the unary-only seed graph (Riedel & Smith 2010).

    With the seed ``G`` (unary factors only, marginals ``q_i = softmax(unary_i)`` in closed form)
    the divergence caused by leaving out factor ``e`` on its own is::

        g(e) = KL(p_G || p_{G + e}) = log E_G[Psi_e] - E_G[log Psi_e],
        E_G[.] = sum_{a, b} q_u(a) q_v(b) (.)(a, b),

    which for a binary factor ``Psi = exp(theta * phi)`` is the paper's
    ``log(1 - mu + mu e^theta) - mu theta``. Gains are >= 0, invariant to adding a constant to a
    table, and 0 for a constant table. A factor with a zero potential (``-inf``) on a pair of
    states the seed gives mass has an infinite gain, returned as 1e300.

    Parameters
    ----------
    unary, edges, pairwise : as in :func:`loopy_bp`
    log_seed_marginals : ndarray of shape (n_nodes, n_states), default=None
        Use these log marginals instead of the unary-only ones.
    check_input : bool, default=True

    Returns
    -------
    gains : ndarray of shape (n_edges,)

    Examples
    --------
    >>> import numpy as np
    >>> g = seed_gains(np.zeros((2, 2)), [[0, 1]], [[0.0, 0.0], [0.0, 2.0]])
    >>> bool(np.isclose(g[0], np.log(0.75 + 0.25 * np.exp(2)) - 0.25 * 2))
    True
    """
    unary, edges, pairwise, log_q, exp_tables, shifts = _seed_inputs(unary, edges, pairwise, log_seed_marginals,
                                                                     check_input)
    return _seed_gains(np.exp(log_q), log_q, edges, pairwise, exp_tables, shifts)


def _seed_inputs(unary, edges, pairwise, log_seed_marginals, check_input):
    """Checked inputs, seed log marginals and max-shifted exponentiated tables (with their shifts)."""
    if check_input:
        unary, edges, pairwise = check_pairwise_graph(unary, edges, pairwise, allow_zero=True)
    elif pairwise.ndim == 2:
        pairwise = pairwise[None]
    if log_seed_marginals is None:
        log_q = log_softmax(unary)
    else:
        log_q = check_float_array(log_seed_marginals, "log_seed_marginals", check_values=False)
        if check_input and log_q.shape != unary.shape:
            raise ValueError(f"log_seed_marginals must have the unary's shape {unary.shape}, got {log_q.shape}.")
        if check_input and (np.isnan(log_q).any() or (log_q == np.inf).any()):
            raise ValueError("log_seed_marginals contain NaN or +inf (log marginals are <= 0; -inf is allowed).")
    shifts = pairwise.max(axis=(1, 2))
    exp_tables = np.exp(pairwise - shifts[:, None, None])
    return unary, edges, pairwise, log_q, exp_tables, shifts


def _forward_slots(adjacency, n_edges):
    """Slot of the message edges[e, 0] -> edges[e, 1] for every edge."""
    slots = np.empty(n_edges, dtype=np.int64)
    is_fwd = adjacency.forward == 1
    slots[adjacency.edge_ids[is_fwd]] = np.flatnonzero(is_fwd)
    return slots


def _check_rho(rho, n_edges):
    if rho is None:
        return np.ones(n_edges)
    rho = check_float_array(rho, "rho", ndim=(0, 1))
    if rho.ndim == 0:
        rho = np.full(n_edges, float(rho))
    if rho.shape != (n_edges,):
        raise ValueError(f"rho must be a scalar or have shape ({n_edges},), got {rho.shape}.")
    bad = ~((rho > 0) & (rho <= 1))
    if bad.any():
        e = int(np.flatnonzero(bad)[0])
        raise ValueError(f"rho (edge appearance probabilities) must lie in (0, 1]; rho[{e}] = {rho[e]!r}.")
    return np.ascontiguousarray(rho)


def _check_marginals(marginals, name, shape):
    if marginals is None:
        raise ValueError(f"{name} are required (shape {shape}).")
    marginals = check_float_array(marginals, name, shape=shape)
    bad = (marginals < 0) | (marginals > 1.0 + 1e-9)
    if bad.any():
        at = tuple(int(a) for a in np.argwhere(bad)[0])
        raise ValueError(f"{name} must lie in [0, 1]; entry {at} is {marginals[at]!r}.")
    return marginals


def _xlogx(p):
    return np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)


def bethe_free_energy(unary, edges, pairwise, node_marginals, edge_marginals, *, rho=None, terms=False):
    """Bethe free energy of beliefs (TRW free energy with edge appearance probabilities ``rho``).

    ``F = -sum_i <b_i, unary_i> - sum_e <b_e, pairwise_e> - sum_i (1 - sum_{e ∋ i} rho_e) H(b_i)
    - sum_e rho_e H(b_e)``; with ``rho = 1`` this is the Bethe free energy, whose negative at a
    BP fixed point equals log Z on a tree.

    Parameters
    ----------
    unary, edges, pairwise : as in :func:`loopy_bp` (validated)
    node_marginals : ndarray of shape (n_nodes, n_states)
    edge_marginals : ndarray of shape (n_edges, n_states, n_states)
    rho : array-like of shape (n_edges,), default=None
    terms : bool, default=False
        Return per-node and per-edge parts instead of the total.

    Returns
    -------
    free_energy : float, or (node_terms, edge_terms) if ``terms``.
    """
    unary, edges, pairwise = check_pairwise_graph(unary, edges, pairwise, allow_zero=True)
    n_nodes, S = unary.shape
    node_marginals = _check_marginals(node_marginals, "node_marginals", (n_nodes, S))
    if edges.shape[0] or edge_marginals is not None:
        edge_marginals = _check_marginals(edge_marginals, "edge_marginals", (edges.shape[0], S, S))
    rho = _check_rho(rho, edges.shape[0])
    rho_degree = np.bincount(edges.ravel(), weights=np.repeat(rho, 2), minlength=n_nodes)
    node_entropy = -_xlogx(node_marginals).sum(axis=1)
    node_terms = -_mean_potential(node_marginals, unary, (1,)) - (1.0 - rho_degree) * node_entropy
    if edges.shape[0]:
        edge_entropy = -_xlogx(edge_marginals).sum(axis=(1, 2))
        edge_terms = -_mean_potential(edge_marginals, pairwise, (1, 2)) - rho * edge_entropy
    else:
        edge_terms = np.zeros(0)
    if terms:
        return node_terms, edge_terms
    return float(node_terms.sum() + edge_terms.sum())


def _mean_potential(marginals, log_potentials, axis):
    """``sum marginals * log_potentials`` over ``axis``, with ``0 * -inf = 0`` (a zero potential unused)."""
    with np.errstate(invalid="ignore"):
        prod = marginals * log_potentials
    return np.where(marginals > 0, prod, 0.0).sum(axis=axis)


def trw_edge_probabilities(edges, n_nodes, method="uniform"):
    """Edge appearance probabilities for tree-reweighted BP.

    Parameters
    ----------
    edges : array-like of int of shape (n_edges, 2)
    n_nodes : int
    method : {"uniform", "spanning_tree", "resistance", "forests", "auto"}, default="uniform"
        ``"spanning_tree"`` (alias ``"resistance"``): the exact appearance probability of each
        edge in a uniformly random spanning tree of its connected component, which is the edge's
        effective resistance (Kirchhoff); a valid point of the spanning-tree polytope, so TRW
        gives an upper bound on log Z. Dangling trees are peeled (rho 1), the rest is a dense
        inverse per component (fine up to a few thousand nodes). ``"forests"``: the average
        of spanning forests covering every edge (valid, cheap for any size). ``"auto"``: exact
        resistances for components of the 2-core up to 64 nodes, covering forests beyond (valid
        for any graph; the default of :func:`sklearn_struct.pruned_bp.pruned_marginals`). See
        :mod:`sklearn_struct.oracles.spanning`. ``"uniform"``: one constant per component,
        ``(n_c - 1) / n_edges_c``, the average of the exact values (Foster's theorem); exact for
        edge-transitive graphs such as tori and close to it on grids, and 1 on trees, but NOT a
        valid point on components mixing cycles and dangling paths (TRW may then fall below log Z).

    Returns
    -------
    rho : ndarray of shape (n_edges,)

    Examples
    --------
    >>> trw_edge_probabilities([[0, 1], [1, 2], [2, 0]], 3).round(4).tolist()
    [0.6667, 0.6667, 0.6667]
    >>> trw_edge_probabilities([[0, 1], [1, 2], [2, 0], [2, 3]], 4, "auto").round(4).tolist()
    [0.6667, 0.6667, 0.6667, 1.0]
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from .spanning import spanning_tree_rho

    edges = check_edge_list(edges, n_nodes)
    n_edges = edges.shape[0]
    if n_edges == 0:
        return np.ones(0)
    if method in ("spanning_tree", "resistance", "forests", "auto"):
        return spanning_tree_rho(edges, n_nodes, "resistance" if method == "spanning_tree" else method)
    if method != "uniform":
        raise ValueError(f"method must be 'uniform', 'spanning_tree', 'resistance', 'forests' or 'auto', "
                         f"got {method!r}.")
    adj = coo_matrix((np.ones(n_edges), (edges[:, 0], edges[:, 1])), shape=(n_nodes, n_nodes))
    n_comp, labels = connected_components(adj, directed=False)
    comp_of_edge = labels[edges[:, 0]]
    nodes_per = np.bincount(labels, minlength=n_comp)
    edges_per = np.bincount(comp_of_edge, minlength=n_comp)
    value = (nodes_per - 1) / np.maximum(edges_per, 1)
    return np.clip(value[comp_of_edge], 1e-12, 1.0)
