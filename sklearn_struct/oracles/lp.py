"""LP-MAP over the local polytope of pairwise models: dual block-coordinate descent ("star" updates).

A batch of ``n_samples`` pairwise models shares one graph (``edges`` ``(n_edges, 2)``, ``n_states``
per node, padded to ``S = max(n_states)``) and one pairwise table per edge ``pairwise``
``(n_edges, S, S)`` (``pairwise[e, a, b]`` scores ``y[edges[e, 0]] = a, y[edges[e, 1]] = b``); each
sample has its own ``unary`` ``(n_nodes, S)``, so the batch is ``unary`` ``(n_samples, n_nodes, S)``.
Entries for padded states are never read. Public functions validate their arguments (errors name
the argument and index): potentials must be finite (max-sum has no log-space rescaling, so
``|value| * (n_nodes + n_edges + 1) * (max_degree + 2)`` must stay below ``1e300``; give a forbidden
state a large negative finite score); ``check_input=False`` skips the checks for callers that
built the arrays themselves.

Dual (Werner 2007; Meshi et al. 2010, eq. 8)
--------------------------------------------
Messages are packed per sample as ``delta`` ``(n_samples, 2 * n_edges, S)``: ``delta[m, 2e + s]`` is
the message from edge ``e`` into its endpoint ``edges[e, s]``. The dual function is::

    g(delta) = sum_i max_a [unary_i(a) + sum_{e ∋ i} delta_{e->i}(a)]
             + sum_e max_{a,b} [pairwise_e(a, b) - delta_{e->u}(a) - delta_{e->v}(b)]

an upper bound on the LP relaxation of MAP for every ``delta``, equal to it at the minimum.
The star update of node ``j`` (Meshi et al. eqs. 11-12, an MPLP-type block update) minimises
``g`` exactly over all messages into ``j`` at once::

    gamma_e(b) = max_a [pairwise_e(a, b) - delta_{e->i}(a)]         (e = ij, i the other end)
    delta_{e->j}(b) = gamma_e(b) - (unary_j(b) + sum_{e' ∋ j} gamma_e'(b)) / (1 + deg j)

so ``g`` never increases. One pass updates every node in index order; each costs
``deg * S^2`` operations. Messages take ``n_samples * 2 * n_edges * S`` floats (float64 or
float32; arithmetic is in float64 either way).

Decoding and certificates
-------------------------
The labelling ``y_i = argmax_a b_i(a)`` of the node beliefs ``b_i = unary_i + sum delta_{e->i}``
has the primal score ``sum_i unary_i(y_i) + sum_e pairwise_e(y_u, y_v) <= MAP <= LP <= g``, so
``g - primal <= tol`` certifies that the labelling is a MAP labelling (and that the LP is tight).
Where it is not tight, :func:`icm` improves the labelling by iterated conditional modes.

References
----------
Meshi, O., Sontag, D., Jaakkola, T., Globerson, A. "Learning efficiently with approximate
inference via dual losses." ICML 2010.
Werner, T. "A linear programming approach to max-sum problem: a review." IEEE TPAMI 29(7), 2007.
Globerson, A., Jaakkola, T. "Fixing max-product: convergent message passing algorithms for MAP
LP-relaxations." NIPS 2008.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ..utils.validation import (
    check_edge_list,
    check_float_array,
    check_int_array,
    check_scalar_param,
)
from ._lp_kernels import (
    _conditional_batch,
    _decode_batch,
    _dual_batch,
    _icm_batch,
    _lp_map_batch,
    _max_marginals_batch,
    _primal_batch,
    _pseudo_marginals_batch,
    _star_passes_batch,
)
from ._threads import n_threads_for, run_chunks_in_threads
from .loopy import build_adjacency

__all__ = [
    "LPGraph",
    "make_lp_graph",
    "star_passes",
    "dual_values",
    "decode",
    "primal_values",
    "lp_map",
    "icm",
    "pseudo_marginals",
    "max_marginals",
    "conditional_scores",
    "local_polytope_lp",
    "LocalPolytopeLP",
]


@dataclass
class LPGraph:
    """Graph of a batch of pairwise models, with the CSR lists of messages into each node.

    Attributes
    ----------
    edges : ndarray of shape (n_edges, 2), int64
    n_states : ndarray of shape (n_nodes,), int64
    indptr : ndarray of shape (n_nodes + 1,), int64
        Messages into node ``j`` are ``slots[indptr[j]:indptr[j + 1]]``.
    slots : ndarray of shape (2 * n_edges,), int64
        Message index ``2e + s`` (edge ``e`` into its endpoint ``edges[e, s]``).
    """

    edges: np.ndarray
    n_states: np.ndarray
    indptr: np.ndarray
    slots: np.ndarray

    @property
    def n_nodes(self):
        return self.n_states.shape[0]

    @property
    def n_edges(self):
        return self.edges.shape[0]

    @property
    def max_states(self):
        return int(self.n_states.max()) if self.n_states.size else 1

    @property
    def max_degree(self):
        return int(np.diff(self.indptr).max()) if self.n_nodes else 0


def make_lp_graph(edges, n_states, name="graph"):
    """Validate ``edges`` and ``n_states`` (one count per node, each >= 1) and build an :class:`LPGraph`.

    Examples
    --------
    >>> g = make_lp_graph([[0, 1], [1, 2]], [2, 2, 3])
    >>> g.indptr.tolist(), g.slots.tolist()
    ([0, 1, 3, 4], [0, 1, 2, 3])
    """
    n_states = check_int_array(n_states, f"{name}: n_states", ndim=1, low=1)
    if n_states.size == 0:
        raise ValueError(f"{name}: n_states must be a non-empty 1D array of integers >= 1 (one per node).")
    edges = check_edge_list(edges, n_states.size, name)
    adj = build_adjacency(edges, n_states.size)
    # loopy's slots list messages out of each node; the message into node j over edge e is 2e + side
    side = np.where(adj.forward == 1, 0, 1)
    slots = np.ascontiguousarray(2 * adj.edge_ids + side, dtype=np.int64)
    return LPGraph(edges, n_states, adj.indptr, slots)


# --------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------


# Largest |potential| accepted: the dual sums about (n_nodes + n_edges) * (max_degree + 2) terms of
# that size, which must stay finite in float64 (max-sum has no log-space rescaling to fall back on).
_MAX_ABS = 1e300


def check_lp_graph(graph):
    """Check that ``graph`` is a consistent :class:`LPGraph` (as built by :func:`make_lp_graph`)."""
    if not isinstance(graph, LPGraph):
        raise TypeError(f"graph must be an LPGraph (see make_lp_graph), got {type(graph).__name__}.")
    n_states = check_int_array(graph.n_states, "graph.n_states", ndim=1, low=1)
    if n_states.size == 0:
        raise ValueError("graph.n_states is empty: the graph needs at least one node.")
    edges = check_edge_list(graph.edges, n_states.size, "graph")
    E = edges.shape[0]
    indptr = check_int_array(graph.indptr, "graph.indptr", ndim=1, low=0, high=2 * E + 1)
    slots = check_int_array(graph.slots, "graph.slots", ndim=1, low=0, high=max(2 * E, 1))
    if indptr.shape[0] != n_states.size + 1 or indptr[0] != 0 or indptr[-1] != 2 * E or np.any(np.diff(indptr) < 0) \
            or slots.shape[0] != 2 * E:
        raise ValueError("graph: indptr / slots do not match edges and n_states; build the graph with make_lp_graph.")
    node = np.repeat(np.arange(n_states.size), np.diff(indptr))
    if E and not np.array_equal(edges[slots >> 1, slots & 1], node):
        raise ValueError("graph: slots do not list the messages into each node; build it with make_lp_graph.")
    return graph


def _too_large(arr, name, terms):
    """Raise if ``terms`` entries of the size of ``arr``'s largest could overflow when summed."""
    if arr.size and np.abs(arr).max() > _MAX_ABS / terms:  # divided: the product itself may overflow
        at = np.unravel_index(int(np.abs(arr).argmax()), arr.shape)
        raise ValueError(f"{name} holds {arr[at]:.3g} at index {tuple(int(i) for i in at)}: the dual sums "
                         f"{terms} such terms and would overflow; rescale the potentials.")


def _n_terms(graph):
    return (graph.n_nodes + graph.n_edges + 1) * (graph.max_degree + 2)


def _check_potentials(graph, unary, pairwise, need_pairwise=True):
    S = graph.max_states
    unary = check_float_array(unary, "unary", ndim=(2, 3), allow_empty=False)
    if unary.ndim == 2:
        unary = unary[None]
    if unary.shape[1:] != (graph.n_nodes, S):
        raise ValueError(f"unary must have shape (n_samples, {graph.n_nodes}, {S}), got {unary.shape}.")
    if not need_pairwise:
        _too_large(unary, "unary", _n_terms(graph))
        return unary, None
    pairwise = check_float_array(pairwise, "pairwise", ndim=(2, 3))
    if pairwise.size != graph.n_edges * S * S or (pairwise.ndim == 3 and pairwise.shape[0] != graph.n_edges):
        raise ValueError(f"pairwise must have shape ({graph.n_edges}, {S}, {S}), got {pairwise.shape}.")
    pairwise = pairwise.reshape(graph.n_edges, S, S)
    _too_large(unary, "unary", _n_terms(graph))
    _too_large(pairwise, "pairwise", _n_terms(graph))
    return unary, pairwise


def _check_delta(graph, delta, n_samples):
    want = (n_samples, 2 * graph.n_edges, graph.max_states)
    if not isinstance(delta, np.ndarray) or delta.dtype not in (np.float64, np.float32):
        raise TypeError(f"delta must be a float64 or float32 ndarray (updated in place), got {type(delta).__name__}"
                        f"{'' if not isinstance(delta, np.ndarray) else ' of dtype ' + str(delta.dtype)}.")
    if delta.shape != want or not delta.flags.c_contiguous or not delta.flags.writeable:
        raise ValueError(f"delta must be a writeable C-contiguous array of shape {want} (n_samples of unary, "
                         f"2 * n_edges, max n_states), got {delta.shape}.")
    _too_large(check_float_array(delta, "delta"), "delta", _n_terms(graph))  # NaN / inf named with their index
    return delta


def _check_labels(graph, Y, n_samples, name="Y"):
    Y = check_int_array(Y, name, ndim=None, low=0)
    if Y.ndim not in (1, 2) or Y.size != n_samples * graph.n_nodes:
        raise ValueError(f"{name} must have shape (n_samples of unary, n_nodes) = ({n_samples}, {graph.n_nodes}), "
                         f"got {Y.shape}.")
    Y = Y.reshape(n_samples, graph.n_nodes)
    bad = Y >= graph.n_states[None, :]
    if bad.any():
        m, i = np.argwhere(bad)[0]
        raise ValueError(f"{name}[{m}, {i}] = {Y[m, i]} is out of range: node {i} has {graph.n_states[i]} states.")
    return Y


_NO_PAIRWISE = object()  # decode / pseudo_marginals read no pairwise table


def _prep(graph, unary, pairwise, delta=None, check_input=True):
    if check_input:
        check_lp_graph(graph)
        unary, pairwise = _check_potentials(graph, unary, pairwise, pairwise is not _NO_PAIRWISE)
        if delta is not None:
            delta = _check_delta(graph, delta, unary.shape[0])
    else:
        unary = np.ascontiguousarray(unary, dtype=np.float64)
        unary = unary[None] if unary.ndim == 2 else unary
        if pairwise is not _NO_PAIRWISE:
            pairwise = np.ascontiguousarray(pairwise, dtype=np.float64).reshape(graph.n_edges, graph.max_states,
                                                                                 graph.max_states)
    S = graph.max_states
    if pairwise is _NO_PAIRWISE or pairwise is None:
        pairwise = np.zeros((graph.n_edges, S, S))
    if delta is None:
        delta = np.zeros((unary.shape[0], 2 * graph.n_edges, S))
    return unary, pairwise, delta


def _work(graph, n_samples, passes=1):
    return n_samples * passes * (2 * graph.n_edges * graph.max_states**2 + graph.n_nodes)


def _in_blocks(n_samples, work, kernel):
    """Call ``kernel(lo, hi)`` on contiguous blocks of samples, one block per thread that ``work`` pays
    for (:func:`~sklearn_struct.oracles._threads.n_threads_for`); the serial nogil kernels run in parallel."""
    n_blocks = max(1, min(n_threads_for(work), n_samples))
    bounds = np.linspace(0, n_samples, n_blocks + 1).astype(np.int64)
    run_chunks_in_threads(lambda c: kernel(bounds[c], bounds[c + 1]), n_blocks)


# --------------------------------------------------------------------------------------
# Public functions (validated wrappers around the kernels in _lp_kernels.py)
# --------------------------------------------------------------------------------------


def star_passes(graph, unary, pairwise, delta, n_passes=1, *, check_input=True):
    """Run ``n_passes`` star-update passes over all nodes of every sample, updating ``delta`` in place.

    ``check_input=False`` skips the validation of every argument (callers that pass arrays they built).
    """
    if check_input:
        n_passes = check_scalar_param(n_passes, "n_passes", kind="int", low=0)
        if delta is None:
            raise TypeError("delta must be an ndarray of messages (updated in place), got None.")
    unary, pairwise, delta = _prep(graph, unary, pairwise, delta, check_input)
    _in_blocks(unary.shape[0], _work(graph, unary.shape[0], n_passes), lambda lo, hi: _star_passes_batch(
        int(n_passes), unary[lo:hi], pairwise, graph.edges, graph.n_states, graph.indptr, graph.slots, delta[lo:hi],
        graph.max_degree, graph.max_states))
    return delta


def dual_values(graph, unary, pairwise, delta=None, *, check_input=True):
    """The dual function g(delta) of each sample (an upper bound on its LP and MAP values)."""
    unary, pairwise, delta = _prep(graph, unary, pairwise, delta, check_input)
    out = np.empty(unary.shape[0])
    _in_blocks(unary.shape[0], _work(graph, unary.shape[0]), lambda lo, hi: _dual_batch(
        unary[lo:hi], pairwise, graph.edges, graph.n_states, graph.indptr, graph.slots, delta[lo:hi],
        graph.max_states, out[lo:hi]))
    return out


def decode(graph, unary, delta=None, *, check_input=True):
    """Labelling ``argmax_a b_i(a)`` of the node beliefs, ``(n_samples, n_nodes)`` int64."""
    unary, _, delta = _prep(graph, unary, _NO_PAIRWISE, delta, check_input)
    Y = np.empty(unary.shape[:2], dtype=np.int64)
    _in_blocks(unary.shape[0], _work(graph, unary.shape[0]), lambda lo, hi: _decode_batch(
        unary[lo:hi], graph.n_states, graph.indptr, graph.slots, delta[lo:hi], graph.max_states, Y[lo:hi]))
    return Y


def primal_values(graph, unary, pairwise, Y, *, check_input=True):
    """Score ``sum_i unary_i(y_i) + sum_e pairwise_e(y_u, y_v)`` of each labelling."""
    unary, pairwise, _ = _prep(graph, unary, pairwise, None, check_input)
    if check_input:
        Y = _check_labels(graph, Y, unary.shape[0])
    Y = np.ascontiguousarray(Y, dtype=np.int64).reshape(unary.shape[0], graph.n_nodes)
    out = np.empty(unary.shape[0])
    _in_blocks(unary.shape[0], _work(graph, unary.shape[0]), lambda lo, hi: _primal_batch(
        unary[lo:hi], pairwise, graph.edges, Y[lo:hi], out[lo:hi]))
    return out


@dataclass
class LPMapResult:
    """Output of :func:`lp_map`: labels, dual bound, primal score, certificate flag, passes, messages."""

    labels: np.ndarray
    dual: np.ndarray
    primal: np.ndarray
    certified: np.ndarray
    n_iter: np.ndarray
    delta: np.ndarray


def lp_map(graph, unary, pairwise, delta=None, *, max_iter=1000, tol=1e-7, local_search=True, check_input=True):
    """LP-MAP of every sample: star passes until certified or converged, then decoding (and ICM).

    Parameters
    ----------
    graph : LPGraph
    unary : ndarray of shape (n_samples, n_nodes, S)
    pairwise : ndarray of shape (n_edges, S, S)
    delta : ndarray of shape (n_samples, 2 * n_edges, S), optional
        Starting messages (updated in place); zeros if omitted.
    max_iter : int
        Most star passes per sample.
    tol : float
        Relative tolerance: a sample is certified when ``dual - primal <= tol * max(1, |dual|)``;
        passes stop earlier when one pass lowers the dual by less than ``tol / 100`` of that scale.
    local_search : bool
        Run ICM from the decoded labelling where it is not certified.
    check_input : bool, default=True
        False skips the validation of every argument (for callers passing arrays they built).

    Returns
    -------
    LPMapResult
        ``certified[m]`` is True only if ``labels[m]`` is a MAP labelling (up to ``tol``).

    Examples
    --------
    >>> import numpy as np
    >>> g = make_lp_graph([[0, 1]], [2, 2])
    >>> res = lp_map(g, np.array([[[0.0, 1.0], [0.0, 0.5]]]), np.array([[[0.0, 0.0], [0.0, -2.0]]]))
    >>> res.labels.tolist(), res.certified.tolist(), round(float(res.dual[0]), 6)
    ([[1, 0]], [True], 1.0)
    """
    if check_input:
        max_iter = check_scalar_param(max_iter, "max_iter", kind="int", low=0)
        tol = check_scalar_param(tol, "tol", low=0.0)
        if not isinstance(local_search, (bool, np.bool_)):
            raise TypeError(f"local_search must be a bool, got {local_search!r}.")
    unary, pairwise, delta = _prep(graph, unary, pairwise, delta, check_input)
    n = unary.shape[0]
    Y = np.empty((n, graph.n_nodes), dtype=np.int64)
    dual, primal, n_iter = np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)
    _in_blocks(n, _work(graph, n, 20), lambda lo, hi: _lp_map_batch(
        unary[lo:hi], pairwise, graph.edges, graph.n_states, graph.indptr, graph.slots, delta[lo:hi],
        graph.max_degree, graph.max_states, int(max_iter), float(tol), Y[lo:hi], dual[lo:hi], primal[lo:hi],
        n_iter[lo:hi]))
    certified = dual - primal <= tol * np.maximum(1.0, np.abs(dual))
    if local_search and not certified.all():
        rest = np.flatnonzero(~certified)
        Yr, pr = icm(graph, unary[rest], pairwise, Y[rest], check_input=False)
        better = pr > primal[rest]
        Y[rest[better]], primal[rest[better]] = Yr[better], pr[better]
        certified = dual - primal <= tol * np.maximum(1.0, np.abs(dual))
    return LPMapResult(Y, dual, primal, certified, n_iter, delta)


def icm(graph, unary, pairwise, Y, max_sweeps=100, *, check_input=True):
    """Iterated conditional modes from the labellings ``Y``; returns ``(labels, primal scores)``."""
    unary, pairwise, _ = _prep(graph, unary, pairwise, None, check_input)
    if check_input:
        max_sweeps = check_scalar_param(max_sweeps, "max_sweeps", kind="int", low=0)
        Y = _check_labels(graph, Y, unary.shape[0])
    Y = np.array(Y, dtype=np.int64).reshape(unary.shape[0], graph.n_nodes)
    primal = np.empty(unary.shape[0])
    _in_blocks(unary.shape[0], _work(graph, unary.shape[0], 3), lambda lo, hi: _icm_batch(
        unary[lo:hi], pairwise, graph.edges, graph.n_states, graph.indptr, graph.slots, Y[lo:hi], int(max_sweeps),
        graph.max_states, primal[lo:hi]))
    return Y, primal


def pseudo_marginals(graph, unary, delta, rtol=1e-6, *, check_input=True):
    """LP pseudo-marginals read from (converged) dual messages, ``(n_samples, n_nodes, S)``.

    By complementary slackness an optimal LP solution puts its node mass on the maximisers of the
    node beliefs at the dual optimum; this returns the uniform distribution over those maximisers
    (within ``rtol``): one-hot where the belief has a unique maximum, 1/2 on binary ties (binary
    local-polytope vertices are half-integral).
    """
    if check_input:
        rtol = check_scalar_param(rtol, "rtol", low=0.0)
    unary, _, delta = _prep(graph, unary, _NO_PAIRWISE, delta, check_input)
    out = np.empty(unary.shape)
    _in_blocks(unary.shape[0], _work(graph, unary.shape[0]), lambda lo, hi: _pseudo_marginals_batch(
        unary[lo:hi], graph.n_states, graph.indptr, graph.slots, delta[lo:hi], float(rtol), out[lo:hi]))
    return out


def max_marginals(graph, unary, pairwise, delta, *, check_input=True):
    """Dual upper bounds on the max-marginals, ``(n_samples, n_nodes, S)`` (``-inf`` on padded states).

    ``out[m, i, a]`` is the dual value of sample ``m`` with node ``i`` clamped to ``a`` after an exact
    star update at ``i``: an upper bound on ``max {score(y) : y_i = a}`` for any messages, equal to the
    MAP score at the MAP state of ``i`` when the messages certify the MAP labelling.
    """
    unary, pairwise, delta = _prep(graph, unary, pairwise, delta, check_input)
    out = np.empty(unary.shape)
    _in_blocks(unary.shape[0], _work(graph, unary.shape[0], 2), lambda lo, hi: _max_marginals_batch(
        unary[lo:hi], pairwise, graph.edges, graph.n_states, graph.indptr, graph.slots, delta[lo:hi],
        graph.max_degree, out[lo:hi]))
    return out


def conditional_scores(graph, unary, pairwise, Y, *, check_input=True):
    """Score terms touching each node given the others' labels, ``(n_samples, n_nodes, S)``.

    ``score(Y with y_i = a) - score(Y) = out[m, i, a] - out[m, i, Y[m, i]]`` (``-inf`` on padded states).
    """
    unary, pairwise, _ = _prep(graph, unary, pairwise, None, check_input)
    if check_input:
        Y = _check_labels(graph, Y, unary.shape[0])
    Y = np.ascontiguousarray(Y, dtype=np.int64).reshape(unary.shape[0], graph.n_nodes)
    out = np.empty(unary.shape)
    _in_blocks(unary.shape[0], _work(graph, unary.shape[0]), lambda lo, hi: _conditional_batch(
        unary[lo:hi], pairwise, graph.edges, graph.n_states, graph.indptr, graph.slots, Y[lo:hi], out[lo:hi]))
    return out


# --------------------------------------------------------------------------------------
# Reference: the local-polytope LP solved by HiGHS (baselines and tests)
# --------------------------------------------------------------------------------------


class LocalPolytopeLP:
    """The local-polytope LP of one graph, constraints built once, solved by HiGHS.

    Variables: node marginals ``mu_i(a)`` (``n_states[i]`` each, in node order) then edge marginals
    ``mu_e(a, b)`` (row-major per edge). Constraints: each node sums to one; each edge's row and
    column sums equal its endpoints' marginals.

    ``solver="linprog"`` calls ``scipy.optimize.linprog(method="highs")`` for every solve;
    ``solver="highspy"`` keeps one HiGHS model (the ``highspy`` package) alive, changes only the
    costs between solves and so re-solves from the previous optimal basis (same solver, no
    per-call model building: about 3x faster on yeast-sized LPs). ``"auto"`` picks ``highspy``
    when it is installed.
    """

    def __init__(self, graph, solver="auto"):
        check_lp_graph(graph)
        if not isinstance(solver, str):
            raise TypeError(f"solver must be 'auto', 'linprog' or 'highspy', got {solver!r}.")
        if solver == "auto":
            solver = "highspy" if _highspy() is not None else "linprog"
        if solver not in ("linprog", "highspy"):
            raise ValueError(f"solver must be 'auto', 'linprog' or 'highspy', got {solver!r}.")
        self.solver = solver
        self.graph = graph
        ns, edges = graph.n_states, graph.edges
        self.node_off = np.concatenate([[0], np.cumsum(ns)])
        n_node_vars = int(self.node_off[-1])
        sizes = ns[edges[:, 0]] * ns[edges[:, 1]] if graph.n_edges else np.zeros(0, dtype=np.int64)
        self.edge_off = n_node_vars + np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.n_vars = int(self.edge_off[-1])
        rows, cols, vals = [], [], []
        r = 0
        for i in range(graph.n_nodes):
            for a in range(ns[i]):
                rows.append(r), cols.append(self.node_off[i] + a), vals.append(1.0)
            r += 1
        for e, (u, v) in enumerate(edges):
            base = self.edge_off[e]
            for a in range(ns[u]):  # sum_b mu_e(a, b) = mu_u(a)
                for b in range(ns[v]):
                    rows.append(r), cols.append(base + a * ns[v] + b), vals.append(1.0)
                rows.append(r), cols.append(self.node_off[u] + a), vals.append(-1.0)
                r += 1
            for b in range(ns[v]):  # sum_a mu_e(a, b) = mu_v(b)
                for a in range(ns[u]):
                    rows.append(r), cols.append(base + a * ns[v] + b), vals.append(1.0)
                rows.append(r), cols.append(self.node_off[v] + b), vals.append(-1.0)
                r += 1
        self.A_eq = sp.csr_matrix((vals, (rows, cols)), shape=(r, self.n_vars))
        self.b_eq = np.zeros(r)
        self.b_eq[: graph.n_nodes] = 1.0
        self._highs = self._build_highs() if solver == "highspy" else None

    def _build_highs(self):
        hs = _highspy()
        A = sp.csc_matrix(self.A_eq)
        h = hs.Highs()
        h.setOptionValue("output_flag", False)
        lp = hs.HighsLp()
        lp.num_col_, lp.num_row_ = self.n_vars, A.shape[0]
        lp.col_cost_ = np.zeros(self.n_vars)
        lp.col_lower_ = np.zeros(self.n_vars)
        lp.col_upper_ = np.full(self.n_vars, hs.kHighsInf)
        lp.row_lower_ = lp.row_upper_ = self.b_eq
        lp.a_matrix_.format_ = hs.MatrixFormat.kColwise
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
        lp.sense_ = hs.ObjSense.kMaximize
        h.passModel(lp)
        self._cols = np.arange(self.n_vars, dtype=np.int32)
        return h

    def objective(self, unary, pairwise):
        """Flatten one sample's potentials into the LP's cost vector (to maximise)."""
        ns, edges = self.graph.n_states, self.graph.edges
        c = np.empty(self.n_vars)
        for i in range(self.graph.n_nodes):
            c[self.node_off[i] : self.node_off[i + 1]] = unary[i, : ns[i]]
        for e, (u, v) in enumerate(edges):
            c[self.edge_off[e] : self.edge_off[e + 1]] = pairwise[e, : ns[u], : ns[v]].ravel()
        return c

    def solve(self, unary, pairwise):
        """Maximise over the local polytope; returns ``(value, node marginals (n, S), edge marginals (E, S, S))``."""
        unary, pairwise = _check_potentials(self.graph, unary, pairwise)
        if unary.shape[0] != 1:
            raise ValueError(f"unary must hold one sample, shape ({self.graph.n_nodes}, {self.graph.max_states}); "
                             f"got {unary.shape[0]} samples.")
        c = self.objective(unary[0], pairwise)
        if self._highs is not None:
            h = self._highs
            h.changeColsCost(self.n_vars, self._cols, c)
            h.run()
            if h.getModelStatus() != _highspy().HighsModelStatus.kOptimal:
                raise RuntimeError(f"HiGHS failed on the local polytope: {h.modelStatusToString(h.getModelStatus())}")
            return h.getInfo().objective_function_value, *self.unpack(np.asarray(h.getSolution().col_value))
        res = linprog(-c, A_eq=self.A_eq, b_eq=self.b_eq, bounds=(0, None), method="highs")
        if res.status != 0:
            raise RuntimeError(f"linprog (HiGHS) failed on the local polytope: {res.message}")
        return -res.fun, *self.unpack(res.x)

    def unpack(self, x):
        g = self.graph
        S = g.max_states
        mu_n = np.zeros((g.n_nodes, S))
        mu_e = np.zeros((g.n_edges, S, S))
        for i in range(g.n_nodes):
            mu_n[i, : g.n_states[i]] = x[self.node_off[i] : self.node_off[i + 1]]
        for e, (u, v) in enumerate(g.edges):
            mu_e[e, : g.n_states[u], : g.n_states[v]] = x[self.edge_off[e] : self.edge_off[e + 1]].reshape(
                g.n_states[u], g.n_states[v])
        return mu_n, mu_e


def _highspy():
    try:
        import highspy
    except ImportError:  # optional: scipy's linprog wraps the same solver
        return None
    return highspy


def local_polytope_lp(graph, unary, pairwise):
    """Value and marginals of the local-polytope LP of one model by HiGHS (see :class:`LocalPolytopeLP`)."""
    return LocalPolytopeLP(graph).solve(unary, pairwise)
