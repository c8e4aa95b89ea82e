"""Non-local marginal inference by Bethe projections (Vilnis et al. 2015, Algorithms 1, 4, 5).

Solves, for every sequence of a packed batch of linear chains,

    mu* = argmin_{mu in M}  -H_B(mu) - <theta, mu> + L_psi(mu)            (eq. 2)

where ``H_B`` is the Bethe entropy (exact on chains) and ``L_psi`` a non-local energy
(:mod:`sklearn_struct.energies`). Every step is one call of the chain marginal oracle
(forward-backward) with modified potentials, so every iterate is a valid set of marginals.

Algorithms (with the corrections of the brief)
----------------------------------------------
``"rda"`` (Algorithm 1, Bethe-RDA, eq. 10)::

    g_sum_t = g_sum_{t-1} + grad L(mu_{t-1})          (the printed mu_t must be mu_{t-1})
    theta_t = theta - g_sum_t / (t + beta_t)          (= theta - t / (t + beta_t) * gbar_t, as printed)
    mu_t    = ORACLE(theta_t)

This is eq. 10 with the prox-function ``phi(mu) = KL(mu || mu_0)``, the Bregman divergence
of ``-H_B`` centred at the algorithm's "prox-center" ``mu_0 = ORACLE(theta)``: Xiao's RDA
(2010) needs the minimiser of ``phi`` to minimise the regulariser ``R = -H_B - <theta, mu>``
too, which ``mu_0`` does. Taking ``phi = -H_B`` literally, as the text after eq. 10 does,
centres the prox term at the uniform marginals and gives
``theta_t = t / (t + beta) * (theta - gbar_t)`` (``prox_center="uniform"``); both agree at
``beta = 0``. With ``beta_t = 0`` (the paper's choice) ``theta_t`` is ``theta`` minus the mean
of all gradients so far.

``beta="auto"`` keeps ``beta_t = 0`` unless an oracle call lands on marginals whose energy
gradient is more than twice as large (l2 norm, per sequence) as at ``mu_0``; the step is then
redone with ``beta_t`` raised (1, 2, 4, ...). Xiao's analysis allows any non-negative,
non-decreasing ``beta_t``, and its O(ln t / t) rate (Prop. 4) assumes bounded gradients,
which this enforces. It matters for energies whose gradient is unbounded on ``M``, such as
the Poisson likelihood of eq. 23 (``y / mu`` as ``mu -> 0``): there one overshooting step
can put a marginal near 0, and the huge negative gradient that follows stays in RDA's
running sum until later gradients cancel it; they are bounded above (by ``psi * rate``), so
that takes about ``|g| / (psi * rate)`` iterations: RDA with ``beta = 0`` never recovers.

``"md"`` (Algorithm 4, Bethe-MD, composite mirror descent with the sign corrected)::

    theta_t = (theta_{t-1} + eta_t * (theta - grad L(mu_{t-1}))) / (1 + eta_t),  theta_0 = theta
    mu_t    = ORACLE(theta_t)

with ``eta_t = 1 / (lambda t)`` and ``lambda = 1 / (2 (2n - 1)^2)`` (Prop. 6) by default.

``"accelerated"`` (Algorithm 5)::

    c_t = 2 / (t + 1);  u_t = (1 - c_t) mu_{t-1} + c_t nu_{t-1}
    g_t = (1 - c_t) g_{t-1} + c_t grad L(u_t)
    nu_t = ORACLE(t (t + 1) / (4 Lip + t (t + 1)) * (theta - g_t));  mu_t = (1 - c_t) mu_{t-1} + c_t nu_t

with ``Lip`` the energy's l2 Lipschitz constant divided by the strong-convexity modulus of
``-H_B`` (Prop. 3), as the O(1/t^2) analysis of accelerated RDA requires (see ``lipschitz``).

Stopping: a sequence stops when the largest change of its node marginals between two
iterates is below ``tol``, or after ``max_iter`` iterations. Only the sequences still
running are passed to the oracle, all of them in one batched call per iteration.
With ``gap_tol`` (convex energies, last iterate of RDA or MD) a sequence also needs a
certified relative duality gap: for convex ``L`` and ``g = grad L(mu)``,

    min_nu f(nu) >= -log Z(theta - g) + L(mu) - <g, mu>

(``L`` replaced by its linearisation at ``mu``), and at an oracle output
``mu = ORACLE(theta_t)`` the objective is ``f(mu) = -log Z(theta_t) + <theta_t - theta, mu> + L(mu)``;
one extra forward-backward per check gives ``gap = f(mu) - bound >= f(mu) - min f``.

MAP: the returned dual potentials are ``theta_t`` (the last oracle input) for the
last-iterate RDA and MD (``ORACLE(theta_t) = mu_t`` exactly, Prop. 1), and
``theta - grad L(mu)`` at the returned ``mu`` for primal averages and the accelerated
method, whose ``mu`` is not an oracle output.
"""

import numbers

import numpy as np
from sklearn.utils import Bunch

from .oracles.chain import check_chain_potentials, forward_backward
from .utils.packing import edge_offsets, segment_sum, subset_sequences

__all__ = ["bethe_inference", "nonlocal_objective", "chain_entropy"]

_METHODS = ("rda", "md", "accelerated")
_PROX_CENTERS = ("base", "uniform")
_AUTO_GROWTH = 2.0  # beta="auto": largest accepted gradient norm, relative to the one at mu_0
_AUTO_MAX_DOUBLINGS = 50  # beta="auto": after this many retries of one step, accept it anyway


def _check_psi(psi, n_seq, n_weights):
    psi = np.asarray(psi, dtype=np.float64)
    if psi.ndim == 0:
        psi = np.full((n_seq, n_weights), float(psi))
    elif psi.ndim == 1:
        if psi.shape[0] != n_weights:
            raise ValueError(f"psi must have {n_weights} weights (one per energy term), got {psi.shape[0]}.")
        psi = np.broadcast_to(psi, (n_seq, n_weights))
    elif psi.shape != (n_seq, n_weights):
        raise ValueError(
            f"psi must be a scalar, ({n_weights},) or (n_sequences={n_seq}, {n_weights}); got shape {psi.shape}."
        )
    bad = ~np.isfinite(psi)
    if bad.any():
        s = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ValueError(f"Sequence {s}: energy weights psi contain NaN or infinity.")
    if np.any(psi < 0):
        s = int(np.flatnonzero((psi < 0).any(axis=1))[0])
        raise ValueError(
            f"Sequence {s}: energy weights psi must be >= 0 (negative weights make the energy non-convex "
            "and reverse its meaning); clip them at 0."
        )
    return np.ascontiguousarray(psi)


def _checked_eta(eta, t, shape):
    """``eta(t)`` broadcast to ``shape``; ValueError unless every value is a finite number > 0."""
    value = eta(t)
    try:
        out = np.broadcast_to(np.asarray(value, dtype=np.float64), shape)
    except (TypeError, ValueError):
        raise ValueError(f"eta(t) must return a number or one per sequence ({shape[0]}), got {value!r} at "
                         f"t={t}.") from None
    if not np.all(np.isfinite(out) & (out > 0)):
        raise ValueError(f"eta(t) must return finite step sizes > 0, got {value!r} at t={t}.")
    return out


def _eta_schedule(eta, lengths):
    """Per-sequence step size function t -> (n_seq,) for Bethe-MD."""
    if eta is None:
        lam = 0.5 / (2.0 * lengths - 1.0) ** 2  # strong convexity of -H_B (Prop. 3)
        return lambda t: 1.0 / (lam * t)
    if callable(eta):
        return lambda t: _checked_eta(eta, t, lengths.shape)
    if isinstance(eta, numbers.Real) and eta > 0 and np.isfinite(eta):
        return lambda t: np.full(lengths.shape, float(eta))
    raise ValueError(f"eta must be None, a positive number or a callable t -> eta_t, got {eta!r}.")


def _check_options(method, max_iter, tol, beta, prox_center, gap_tol, average, energy):
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}.")
    if not (isinstance(max_iter, numbers.Integral) and max_iter >= 0):
        raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}.")
    if not (isinstance(tol, numbers.Real) and tol >= 0):
        raise ValueError(f"tol must be a number >= 0, got {tol!r}.")
    auto = isinstance(beta, str) and beta == "auto"
    if not auto and not (isinstance(beta, numbers.Real) and np.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta must be a finite number >= 0 or 'auto', got {beta!r}.")
    if prox_center not in _PROX_CENTERS:
        raise ValueError(f"prox_center must be one of {_PROX_CENTERS}, got {prox_center!r}.")
    if auto and prox_center != "base":
        # raising beta must pull theta_t back to theta (mu_t -> mu_0, where the gradient is
        # small by definition); with the uniform centre it pulls towards uniform marginals
        raise ValueError("beta='auto' needs prox_center='base'.")
    if gap_tol is not None:
        if not (isinstance(gap_tol, numbers.Real) and gap_tol >= 0):
            raise ValueError(f"gap_tol must be None or a number >= 0, got {gap_tol!r}.")
        if method == "accelerated" or average:
            raise ValueError("gap_tol needs the last iterate of method='rda' or 'md' (average=False): "
                             "the objective is evaluated from the oracle's log-partition function.")
        if energy is not None and energy.n_weights and not energy.convex:
            raise ValueError(f"gap_tol needs a convex energy ({type(energy).__name__} is not): the bound "
                             "replaces L by its linearisation, a lower bound only for convex L.")
    return auto


def _compose(rows, sub_rows):
    """Rows of a subset of a subset (``rows`` may be the full slice)."""
    if isinstance(rows, slice):
        return sub_rows
    return rows if isinstance(sub_rows, slice) else rows[sub_rows]


def bethe_inference(
    unary,
    transition,
    offsets,
    energy,
    psi=1.0,
    *,
    method="rda",
    max_iter=40,
    tol=1e-4,
    beta=0.0,
    prox_center="base",
    eta=None,
    lipschitz=None,
    average=False,
    gap_tol=None,
    return_edges=True,
    energy_index=None,
):
    """Marginals of linear chains under a non-local energy, by Bethe projections.

    Parameters
    ----------
    unary : ndarray of shape (n_tokens, n_labels)
        Base log-potentials ``theta`` of every token, packed.
    transition : ndarray of shape (n_labels, n_labels) or (n_tokens - n_sequences, n_labels, n_labels)
        Shared or per-position transition log-potentials ``[from, to]``.
    offsets : ndarray of shape (n_sequences + 1,)
    energy : Energy or None
        The non-local energy (fitted). None gives plain forward-backward.
    psi : float, ndarray of shape (n_weights,) or (n_sequences, n_weights), default=1.0
        Non-negative energy weights, shared or per sequence.
    method : {"rda", "md", "accelerated"}, default="rda"
        Algorithm 1 (Bethe-RDA), 4 (Bethe-MD) or 5 (accelerated Bethe-RDA).
    max_iter : int, default=40
        Maximum number of iterations after the initial ``mu_0 = ORACLE(theta)``.
    tol : float, default=1e-4
        A sequence stops once ``max |mu_t - mu_{t-1}|`` over its node marginals is below ``tol``.
    beta : float or "auto", default=0.0
        RDA's ``beta_t``: a constant (0, the paper's choice, needs no step size; ``beta > 0``
        damps the steps, ``theta_t = theta - g_sum_t / (t + beta)``), or ``"auto"``: 0 until
        a step lands where the energy gradient exceeds twice its norm at ``mu_0``, then
        raised (1, 2, 4, ...) and the step redone, per sequence. Use ``"auto"`` for energies
        with unbounded gradients such as :class:`~sklearn_struct.energies.PoissonCountEnergy`.
        Each retry costs one oracle call.
    prox_center : {"base", "uniform"}, default="base"
        Centre of RDA's proximal term for ``beta > 0``: the base marginals ``mu_0``
        (Algorithm 1 as printed) or the uniform marginals (``phi = -H_B`` literally, which
        also shrinks ``theta``: ``theta_t = t / (t + beta) (theta - gbar_t)``; it converges
        only at rate ``beta / t`` towards the optimum). Irrelevant at ``beta = 0``.
    eta : None, float or callable, default=None
        Bethe-MD step sizes ``eta_t``: None for ``1 / (lambda t)`` with the strong-convexity
        constant ``lambda = 1 / (2 (2n - 1)^2)`` of a chain of ``n`` nodes, a constant, or a
        function of ``t``.
    lipschitz : None, float or ndarray of shape (n_sequences,), default=None
        ``Lip`` of the accelerated method (Algorithm 5): the Lipschitz constant of
        ``grad L_psi`` measured relative to the strong convexity of the prox function
        ``-H_B``. None computes it as ``energy.lipschitz / sigma_n``, the l2 constant of
        the energy divided by the modulus ``sigma_n = 1 / (2 (2n - 1)^2)`` of a chain of
        ``n`` nodes (Prop. 3); only with such a constant does Xiao's (2010) O(1/t^2) bound
        for accelerated RDA apply, and it makes the early steps very short on long
        sequences. A number given here is used as it is (faster, without that guarantee).
    average : bool, default=False
        Return the primal average of the iterates ``mu_0 .. mu_t`` (Props. 4 and 6) instead
        of the last iterate (RDA and MD; the accelerated ``mu_t`` is already an average).
    gap_tol : float or None, default=None
        Also require a certified relative duality gap ``(f(mu) - bound) <= gap_tol |f(mu)|``
        before a sequence stops (convex energies; RDA or MD, last iterate). Checked when
        the marginals change less than ``tol``; a failed check divides that sequence's
        ``tol`` by 10. Each check costs one forward-backward.
    return_edges : bool, default=True
        Also return per-position edge marginals.
    energy_index : ndarray of shape (n_sequences,), default=None
        Which of the energy's own sequences (for energies holding per-sequence data, such
        as observed counts) the batch holds; None for all of them, in order.

    Returns
    -------
    result : Bunch with
        ``node`` (n_tokens, n_labels) node marginals ``mu``;
        ``edge`` (n_tokens - n_sequences, n_labels, n_labels) edge marginals, or None;
        ``dual_unary`` (n_tokens, n_labels) and ``dual_transition`` ((L, L) or per-position)
        potentials of the MRF ``theta_tilde`` for MAP (Viterbi) prediction;
        ``n_iter`` (n_sequences,) iterations used; ``converged`` (n_sequences,) bool;
        ``beta`` (n_sequences,) RDA's final ``beta_t``; ``gap`` (n_sequences,) certified
        duality gap ``f(mu) - min f`` bound at the returned marginals (None without ``gap_tol``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.energies import SoftConstraintEnergy
    >>> energy = SoftConstraintEnergy(node_coef=[[-1.0, 1.0]], offset=-1.0).fit(None, 2)
    >>> unary = np.array([[1.0, 0.0]] * 4)  # label 0 preferred at every token
    >>> res = bethe_inference(unary, np.zeros((2, 2)), np.array([0, 4]), energy, psi=5.0, max_iter=200)
    >>> bool(res.node[:, 1].sum() > 4 * 0.27)  # the constraint (#1 - #0 >= 0) pulls mass to label 1
    True
    >>> res = bethe_inference(unary, np.zeros((2, 2)), np.array([0, 4]), energy, psi=5.0, max_iter=200,
    ...                       tol=1e-3, gap_tol=1e-8)
    >>> f = nonlocal_objective(res.node, res.edge, unary, np.zeros((2, 2)), np.array([0, 4]), energy, 5.0)
    >>> bool(res.converged[0] and 0 <= res.gap[0] <= 1e-8 * abs(f[0]))  # certified: f(mu) - min f <= gap
    True
    """
    unary, trans3, per_position, offsets = check_chain_potentials(unary, transition, offsets)
    n_seq = offsets.shape[0] - 1
    auto = _check_options(method, max_iter, tol, beta, prox_center, gap_tol, average, energy)
    if energy is None or energy.n_weights == 0:
        return _plain_marginals(unary, trans3, per_position, offsets, return_edges, gap_tol)
    psi = _check_psi(psi, n_seq, energy.n_weights)
    if energy_index is not None:
        energy_index = np.asarray(energy_index, dtype=np.int64)
        if energy_index.shape != (n_seq,):
            raise ValueError(f"energy_index must have shape ({n_seq},), got {energy_index.shape}.")
    energy.check_batch(offsets, unary.shape[1], index=energy_index)
    run = _BetheRun(unary, trans3, per_position, offsets, energy, psi, energy_index, method=method, tol=tol,
                    beta=beta, auto=auto, prox_center=prox_center, gap_tol=gap_tol, average=average,
                    return_edges=return_edges)
    if method == "accelerated":
        run.set_lipschitz(lipschitz)
        step = run.accelerated_step
    elif method == "md":
        run.eta_fn = _eta_schedule(eta, run.lengths.astype(np.float64))
        step = run.md_step
    else:
        step = run.rda_step
    for t in range(1, max_iter + 1):
        idx = np.flatnonzero(run.active)
        if idx.size == 0:
            break
        step(idx, t)
        run.stop_converged(idx)
    return run.result()


def _plain_marginals(unary, trans3, per_position, offsets, return_edges, gap_tol):
    """No energy: the base model's marginals by one forward-backward."""
    n_seq = offsets.shape[0] - 1
    base_trans = trans3[: unary.shape[0] - n_seq] if per_position else trans3[0]
    _, node, edge = forward_backward(unary, base_trans, offsets,
                                     edge_marginals="per_position" if return_edges else "none")
    return Bunch(node=node, edge=edge, dual_unary=unary, dual_transition=base_trans,
                 n_iter=np.zeros(n_seq, dtype=np.int64), converged=np.ones(n_seq, dtype=bool),
                 beta=np.zeros(n_seq), gap=None if gap_tol is None else np.zeros(n_seq))


class _BetheRun:
    """State of one batched run of Bethe projections: the problem, the iterates and per-sequence status.

    The three methods share everything but their step (:meth:`rda_step`, :meth:`md_step`,
    :meth:`accelerated_step`); each step ends in :meth:`commit`, which stores an oracle call's
    output for the sequences that accept it.
    """

    def __init__(self, unary, trans3, per_position, offsets, energy, psi, energy_index, *, method, tol, beta,
                 auto, prox_center, gap_tol, average, return_edges):
        self.unary, self.per_position, self.offsets = unary, per_position, offsets
        self.energy, self.psi, self.energy_index = energy, psi, energy_index
        self.method, self.prox_center, self.beta, self.auto, self.gap_tol = method, prox_center, beta, auto, gap_tol
        self.return_edges = return_edges
        self.n_seq = n_seq = offsets.shape[0] - 1
        T, L = unary.shape
        E = T - n_seq
        self.lengths = np.diff(offsets)
        self.base_trans = trans3[:E] if per_position else trans3[0]
        self.need_edges = need_edges = bool(energy.uses_edges)
        # RDA with the uniform prox-centre scales the transitions too (theta_t's edge part moves)
        self.scaled_edges = method == "rda" and prox_center == "uniform" and not auto and beta > 0
        self.use_avg = average and method != "accelerated"
        iter_edges = (need_edges or (return_edges and (average or method == "accelerated"))
                      or (gap_tol is not None and self.scaled_edges))
        self.edge_mode = "per_position" if iter_edges else "none"
        # mu_0 = ORACLE(theta): the prox-center
        self.log_z, self.mu_node, self.mu_edge = forward_backward(unary, self.base_trans, offsets,
                                                                  edge_marginals=self.edge_mode)
        self.dual_unary = unary.copy()
        self.dual_edge = np.broadcast_to(self.base_trans, (E, L, L)).copy() if need_edges else None
        self.beta_s = np.zeros(n_seq) if auto else np.full(n_seq, float(beta))
        self.tol_s = np.full(n_seq, float(tol))
        self.final_scale = np.ones(n_seq)  # prox_center="uniform": t / (t + beta) at each sequence's last step
        self.n_iter = np.zeros(n_seq, dtype=np.int64)
        self.converged = np.zeros(n_seq, dtype=bool)
        self.active = np.ones(n_seq, dtype=bool)
        self.delta = np.zeros(n_seq)
        self.gap = np.full(n_seq, np.nan) if gap_tol is not None else None
        self.gap_iter = np.full(n_seq, -1, dtype=np.int64)  # iteration at which gap was computed
        # energy gradient at the current marginals, kept between iterations (RDA, MD, gap checks)
        self.cur_gn = np.zeros((T, L))
        self.cur_ge = np.zeros((E, L, L)) if need_edges else None
        self.fresh = np.zeros(n_seq, dtype=bool)
        self.g_node = np.zeros((T, L))  # RDA: running sum; accelerated: weighted average
        self.g_edge = np.zeros((E, L, L)) if need_edges else None
        if method == "md":
            self.th_node = unary.copy()
            self.th_edge = np.broadcast_to(self.base_trans, (E, L, L)).copy() if need_edges else None
        if method == "accelerated":
            self.nu_node = self.mu_node.copy()
            self.nu_edge = None if self.mu_edge is None else self.mu_edge.copy()
        if self.use_avg:
            self.sum_node = self.mu_node.copy()
            self.sum_edge = None if self.mu_edge is None else self.mu_edge.copy()
        if auto:
            self.refresh(np.arange(n_seq))
            sq_edge = None if self.cur_ge is None else self.cur_ge ** 2
            self.grad_bound = _AUTO_GROWTH * np.sqrt(self.seq_sum(self.cur_gn ** 2, sq_edge, offsets))

    # ------------------------------------------------------------------ helpers
    def rows(self, idx):
        """Token rows, edge rows and offsets of sequences idx (slices for the whole batch)."""
        if idx.size == self.n_seq:
            return slice(None), slice(None), self.offsets
        return subset_sequences(self.offsets, idx)

    def e_index(self, idx):
        return idx if self.energy_index is None else self.energy_index[idx]

    def base_edges(self, etok):
        return self.base_trans[etok] if self.per_position else self.base_trans[None]

    def shared_or_rows(self, etok):
        """The base transitions of edge rows etok, as the oracle takes them (shared table or per position)."""
        return self.base_trans[etok] if self.per_position else self.base_trans

    @staticmethod
    def seq_sum(node_part, edge_part, sub):
        """Per-sequence sum of a node array and/or an edge array (either may be None)."""
        out = np.zeros(sub.shape[0] - 1)
        if node_part is not None:
            out += segment_sum(node_part.sum(axis=1), sub)
        if edge_part is not None and edge_part.shape[0]:
            out += segment_sum(edge_part.sum(axis=(1, 2)), edge_offsets(sub))
        return out

    def gradient(self, node, edge, sub, idx):
        return self.energy.gradient(node, edge if self.need_edges else None, sub, self.psi[idx],
                                    index=self.e_index(idx))

    def refresh(self, idx):
        """Make the kept energy gradients of sequences idx current."""
        stale = idx[~self.fresh[idx]]
        if stale.size:
            tok, etok, sub = self.rows(stale)
            gn, ge = self.gradient(self.mu_node[tok], self.mu_edge[etok] if self.need_edges else None, sub, stale)
            self.cur_gn[tok] = gn
            if self.need_edges:
                self.cur_ge[etok] = ge
            self.fresh[stale] = True

    def commit(self, idx, tok, etok, sub, loc, t, lz, new_node, new_edge, un, tr, scale, grads=None):
        """Store the accepted part ``loc`` (positions in idx) of an oracle call on sequences idx."""
        if loc is None:
            acc, ctok, cetok, csub, ltok, letok = idx, tok, etok, sub, slice(None), slice(None)
        else:
            acc = idx[loc]
            ltok, letok, csub = subset_sequences(sub, loc)
            ctok, cetok = _compose(tok, ltok), _compose(etok, letok)
        nn = new_node[ltok]
        self.delta[acc] = np.maximum.reduceat(np.max(np.abs(nn - self.mu_node[ctok]), axis=1), csub[:-1])
        self.mu_node[ctok] = nn
        if self.mu_edge is not None:
            self.mu_edge[cetok] = new_edge[letok]
        if self.method != "accelerated":
            self.dual_unary[ctok] = un[ltok]
            if self.need_edges:
                self.dual_edge[cetok] = tr[letok]
        self.log_z[acc] = lz if loc is None else lz[loc]
        self.final_scale[acc] = scale
        if self.use_avg:
            self.sum_node[ctok] += nn
            if self.sum_edge is not None:
                self.sum_edge[cetok] += new_edge[letok]
        if grads is None:
            self.fresh[acc] = False
        else:
            self.cur_gn[ctok] = grads[0][ltok]
            if self.need_edges:
                self.cur_ge[cetok] = grads[1][letok]
            self.fresh[acc] = True
        self.n_iter[acc] = t

    # ------------------------------------------------------------------ the three steps
    def rda_potentials(self, idx, tok, etok, t):
        """theta_t of Algorithm 1 for sequences idx, and the uniform-centre scale."""
        if self.prox_center == "base":
            w = 1.0 / (t + self.beta_s[idx])
            un = self.unary[tok] - np.repeat(w, self.lengths[idx])[:, None] * self.g_node[tok]
            if self.need_edges:
                tr = self.base_edges(etok) - np.repeat(w, self.lengths[idx] - 1)[:, None, None] * self.g_edge[etok]
            else:
                tr = self.shared_or_rows(etok)
            return un, tr, 1.0
        s = t / (t + float(self.beta))  # uniform prox-centre: scalar beta
        un = s * (self.unary[tok] - self.g_node[tok] / t)
        if self.need_edges:
            tr = s * (self.base_edges(etok) - self.g_edge[etok] / t)
        else:
            tr = s * self.shared_or_rows(etok)
        return un, tr, s

    def rda_step(self, idx, t):
        """Algorithm 1; with beta="auto", steps whose gradient explodes are redone with a larger beta."""
        tok, etok, sub = self.rows(idx)
        self.refresh(idx)
        self.g_node[tok] += self.cur_gn[tok]
        if self.need_edges:
            self.g_edge[etok] += self.cur_ge[etok]
        pending, ptok, petok, psub = idx, tok, etok, sub
        for attempt in range(_AUTO_MAX_DOUBLINGS + 1):
            un, tr, scale = self.rda_potentials(pending, ptok, petok, t)
            lz, new_node, new_edge = forward_backward(un, tr, psub, edge_marginals=self.edge_mode)
            if not self.auto:
                self.commit(pending, ptok, petok, psub, None, t, lz, new_node, new_edge, un, tr, scale)
                return
            gn, ge = self.gradient(new_node, new_edge, psub, pending)
            norm = np.sqrt(self.seq_sum(gn ** 2, None if ge is None else ge ** 2, psub))
            ok = norm <= self.grad_bound[pending]  # NaN fails too
            if ok.all() or attempt == _AUTO_MAX_DOUBLINGS:
                self.commit(pending, ptok, petok, psub, None, t, lz, new_node, new_edge, un, tr, scale, (gn, ge))
                return
            if ok.any():
                self.commit(pending, ptok, petok, psub, np.flatnonzero(ok), t, lz, new_node, new_edge, un, tr,
                            scale, (gn, ge))
            # redo the step of the others with a stronger pull towards mu_0
            pending = pending[~ok]
            self.beta_s[pending] = np.maximum(1.0, 2.0 * self.beta_s[pending])
            ptok, petok, psub = self.rows(pending)

    def md_step(self, idx, t):
        """Algorithm 4 (sign corrected): theta_t = (theta_{t-1} + eta_t (theta - grad L)) / (1 + eta_t)."""
        tok, etok, sub = self.rows(idx)
        self.refresh(idx)
        gn, ge = self.cur_gn[tok], (self.cur_ge[etok] if self.need_edges else None)
        eta_s = self.eta_fn(t)[idx]
        eta_tok = np.repeat(eta_s, np.diff(sub))[:, None]
        self.th_node[tok] = (self.th_node[tok] + eta_tok * (self.unary[tok] - gn)) / (1.0 + eta_tok)
        un = self.th_node[tok]
        if self.need_edges:
            eta_e = np.repeat(eta_s, np.diff(sub) - 1)[:, None, None]
            self.th_edge[etok] = (self.th_edge[etok] + eta_e * (self.base_edges(etok) - ge)) / (1.0 + eta_e)
            tr = self.th_edge[etok]
        else:  # (A + eta A) / (1 + eta) = A: shared transitions stay shared
            tr = self.shared_or_rows(etok)
        lz, new_node, new_edge = forward_backward(un, tr, sub, edge_marginals=self.edge_mode)
        self.commit(idx, tok, etok, sub, None, t, lz, new_node, new_edge, un, tr, 1.0)

    def set_lipschitz(self, lipschitz):
        """Lip of Algorithm 5 per sequence (see ``lipschitz`` of :func:`bethe_inference`)."""
        if lipschitz is None:
            # Xiao's accelerated RDA needs Lip relative to the prox function's strong-convexity
            # modulus: -H_B is sigma = 1 / (2 (2n - 1)^2)-strongly convex in l2 (Prop. 3)
            sigma = 0.5 / (2.0 * self.lengths - 1.0) ** 2
            lipschitz = self.energy.lipschitz(self.offsets, self.psi, index=self.energy_index) / sigma
        lip = np.broadcast_to(np.asarray(lipschitz, dtype=np.float64), (self.n_seq,))
        if not np.all(np.isfinite(lip)) or np.any(lip < 0):
            raise ValueError("lipschitz must be finite and >= 0.")
        self.lip, self.uniform_lip = lip, bool(np.all(lip == lip[0]))

    def accelerated_step(self, idx, t):
        """Algorithm 5: gradient at u_t = (1 - c) mu + c nu, oracle at the weighted average, mu averaged."""
        tok, etok, sub = self.rows(idx)
        old_node = self.mu_node[tok]
        old_edge = None if self.mu_edge is None else self.mu_edge[etok]
        c = 2.0 / (t + 1.0)
        u_node = (1 - c) * old_node + c * self.nu_node[tok]
        u_edge = (1 - c) * old_edge + c * self.nu_edge[etok] if self.need_edges else None
        gn, ge = self.gradient(u_node, u_edge, sub, idx)
        self.g_node[tok] = (1 - c) * self.g_node[tok] + c * gn
        w = t * (t + 1.0) / (4.0 * self.lip[idx] + t * (t + 1.0))
        un = np.repeat(w, np.diff(sub))[:, None] * (self.unary[tok] - self.g_node[tok])
        w_e = np.repeat(w, np.diff(sub) - 1)[:, None, None]
        if self.need_edges:
            self.g_edge[etok] = (1 - c) * self.g_edge[etok] + c * ge
            tr = w_e * (self.base_edges(etok) - self.g_edge[etok])
        elif self.uniform_lip and not self.per_position:
            tr = w[0] * self.base_trans
        else:
            tr = w_e * self.base_edges(etok)
        lz, new_node, new_edge = forward_backward(un, tr, sub, edge_marginals=self.edge_mode)
        self.nu_node[tok] = new_node
        new_node = (1 - c) * old_node + c * new_node
        if new_edge is not None:
            self.nu_edge[etok] = new_edge
            new_edge = (1 - c) * old_edge + c * new_edge
        self.commit(idx, tok, etok, sub, None, t, lz, new_node, new_edge, un, tr, 1.0)

    # ------------------------------------------------------------------ stopping and the result
    def certified_gap(self, idx):
        """f(mu) - lower bound, for sequences whose mu is the oracle output of dual_unary / dual_edge."""
        self.refresh(idx)
        tok, etok, sub = self.rows(idx)
        node = self.mu_node[tok]
        edge = self.mu_edge[etok] if self.mu_edge is not None else None
        gn = self.cur_gn[tok]
        if self.need_edges:
            ge = self.cur_ge[etok]
            lin_tr = self.base_edges(etok) - ge
        else:
            ge = None
            lin_tr = self.shared_or_rows(etok)
        lz_lin, _, _ = forward_backward(self.unary[tok] - gn, lin_tr, sub, edge_marginals="none")
        value = self.energy.value(node, edge if self.need_edges else None, sub, self.psi[idx],
                                  index=self.e_index(idx))
        bound = -lz_lin + value - self.seq_sum(gn * node, None if ge is None else ge * edge, sub)
        shift = self.seq_sum((self.dual_unary[tok] - self.unary[tok]) * node, None, sub)
        if self.need_edges:
            shift = shift + self.seq_sum(None, (self.dual_edge[etok] - self.base_edges(etok)) * edge, sub)
        elif self.scaled_edges:
            shift = shift + (self.final_scale[idx] - 1.0) * self.seq_sum(None, self.base_edges(etok) * edge, sub)
        f = -self.log_z[idx] + shift + value
        self.gap[idx] = f - bound
        self.gap_iter[idx] = self.n_iter[idx]
        return self.gap[idx] <= self.gap_tol * np.abs(f)

    def stop_converged(self, idx):
        """Stop the sequences of idx whose marginals settled (and, with gap_tol, whose gap is certified)."""
        done = idx[self.delta[idx] < self.tol_s[idx]]
        if self.gap_tol is not None and done.size:
            certified = self.certified_gap(done)
            self.tol_s[done[~certified]] /= 10.0  # not there yet: look again once the iterates settle further
            done = done[certified]
        self.converged[done] = True
        self.active[done] = False

    def result(self):
        """The returned marginals, dual potentials for MAP, and per-sequence status."""
        if self.gap_tol is not None:
            stale = np.flatnonzero(self.gap_iter != self.n_iter)
            if stale.size:
                self.certified_gap(stale)
        mu_node, mu_edge = self.mu_node, self.mu_edge
        if self.use_avg:
            mu_node = self.sum_node / np.repeat(self.n_iter + 1.0, self.lengths)[:, None]
            if self.sum_edge is not None:
                mu_edge = self.sum_edge / np.repeat(self.n_iter + 1.0, self.lengths - 1)[:, None, None]
        dual_unary, dual_trans = self._dual_potentials(mu_node, mu_edge)
        edge_out = None
        if self.return_edges:
            if mu_edge is None:  # last iterate of RDA / MD: mu_t = ORACLE(theta_t) exactly
                _, _, mu_edge = forward_backward(dual_unary, dual_trans, self.offsets, edge_marginals="per_position")
            edge_out = mu_edge
        return Bunch(node=mu_node, edge=edge_out, dual_unary=dual_unary, dual_transition=dual_trans,
                     n_iter=self.n_iter, converged=self.converged, beta=self.beta_s, gap=self.gap)

    def _dual_potentials(self, mu_node, mu_edge):
        """Potentials whose MAP is the prediction: theta_t, or theta - grad L(mu) where mu is no oracle output."""
        if self.use_avg or self.method == "accelerated":
            # mu is not an oracle output: MAP under theta - grad L(mu) (Prop. 1's fixed point)
            gn, ge = self.energy.gradient(mu_node, mu_edge if self.need_edges else None, self.offsets, self.psi,
                                          index=self.energy_index)
            dual_trans = self.base_edges(slice(None)) - ge if self.need_edges else self.base_trans
            return self.unary - gn, dual_trans
        if self.need_edges:
            return self.dual_unary, self.dual_edge
        if not self.scaled_edges:
            return self.dual_unary, self.base_trans
        if self.per_position or not np.all(self.final_scale == self.final_scale[0]):
            return self.dual_unary, np.repeat(self.final_scale, self.lengths - 1)[:, None, None] * self.base_edges(
                slice(None))
        return self.dual_unary, self.final_scale[0] * self.base_trans


def chain_entropy(node, edge, offsets):
    """Bethe entropy of chain marginals per sequence (the exact entropy on chains).

    ``H_B = sum_edges H(mu_e) - sum_t (deg_t - 1) H(mu_t)``.
    """

    def ent(p):
        p = np.asarray(p)
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.where(p > 0, p * np.log(p), 0.0)

    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    T = node.shape[0]
    deg = np.full(T, 2.0)
    deg[offsets[:-1]] -= 1
    deg[offsets[1:] - 1] -= 1
    h_node = ent(node).sum(axis=1) * (1.0 - deg)
    out = segment_sum(h_node, offsets)
    if edge is not None and edge.shape[0]:
        out = out + segment_sum(ent(edge).sum(axis=(1, 2)), edge_offsets(offsets))
    elif np.any(lengths > 1):
        raise ValueError("edge marginals are needed for sequences longer than 1.")
    return out


def nonlocal_objective(node, edge, unary, transition, offsets, energy=None, psi=1.0, energy_index=None):
    """Per-sequence value of eq. 2, ``-H_B(mu) - <theta, mu> + L_psi(mu)``, at given marginals."""

    offsets = np.asarray(offsets, dtype=np.int64)
    n_seq = offsets.shape[0] - 1
    trans = np.asarray(transition, dtype=np.float64)
    lin = segment_sum(np.sum(unary * node, axis=1), offsets)
    if edge is not None and edge.shape[0]:
        te = trans if trans.ndim == 3 else trans[None]
        lin = lin + segment_sum(np.sum(te * edge, axis=(1, 2)), edge_offsets(offsets))
    value = -chain_entropy(node, edge, offsets) - lin
    if energy is not None:
        value = value + energy.value(node, edge, offsets, _check_psi(psi, n_seq, energy.n_weights),
                                     index=energy_index)
    return value
