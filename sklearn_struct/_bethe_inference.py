"""Non-local marginal inference by Bethe projections (Vilnis et al. 2015, Algorithms 1, 4, 5).

Solves, for every sequence of a packed batch of linear chains,

    mu* = argmin_{mu in M}  -H_B(mu) - <theta, mu> + L_psi(mu)            (eq. 2)

where ``H_B`` is the Bethe entropy (exact on chains) and ``L_psi`` a non-local energy
(:mod:`sklearn_struct.energies`). Every step is one call of the chain marginal oracle
(forward-backward) with modified potentials, so every iterate is a valid set of marginals.

Algorithms (with the corrections of the brief)
----------------------------------------------
``"rda"`` (Algorithm 1, Bethe-RDA, eq. 10)::

    g_sum_t = g_sum_{t-1} + grad L(mu_{t-1})         (the printed mu_t must be mu_{t-1})
    theta_t = t / (t + beta) * (theta - g_sum_t / t)  (eq. 10 scales theta too; = printed at beta=0)
    mu_t    = ORACLE(theta_t)

``"md"`` (Algorithm 4, Bethe-MD, composite mirror descent with the sign corrected)::

    theta_t = (theta_{t-1} + eta_t * (theta - grad L(mu_{t-1}))) / (1 + eta_t),  theta_0 = theta
    mu_t    = ORACLE(theta_t)

with ``eta_t = 1 / (lambda t)`` and ``lambda = 1 / (2 (2n - 1)^2)`` (Prop. 6) by default.

``"accelerated"`` (Algorithm 5)::

    c_t = 2 / (t + 1);  u_t = (1 - c_t) mu_{t-1} + c_t nu_{t-1}
    g_t = (1 - c_t) g_{t-1} + c_t grad L(u_t)
    nu_t = ORACLE(t (t + 1) / (4 Lip + t (t + 1)) * (theta - g_t));  mu_t = (1 - c_t) mu_{t-1} + c_t nu_t

Stopping: a sequence stops when the largest change of its node marginals between two
iterates is below ``tol``, or after ``max_iter`` iterations. Only the sequences still
running are passed to the oracle, all of them in one batched call per iteration.

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


def _eta_schedule(eta, lengths):
    """Per-sequence step size function t -> (n_seq,) for Bethe-MD."""
    if eta is None:
        lam = 0.5 / (2.0 * lengths - 1.0) ** 2  # strong convexity of -H_B (Prop. 3)
        return lambda t: 1.0 / (lam * t)
    if callable(eta):
        return lambda t: np.broadcast_to(np.asarray(eta(t), dtype=np.float64), lengths.shape)
    if isinstance(eta, numbers.Real) and eta > 0 and np.isfinite(eta):
        return lambda t: np.full(lengths.shape, float(eta))
    raise ValueError(f"eta must be None, a positive number or a callable t -> eta_t, got {eta!r}.")


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
    eta=None,
    lipschitz=None,
    average=False,
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
        Maximum number of oracle calls after the initial ``mu_0 = ORACLE(theta)``.
    tol : float, default=1e-4
        A sequence stops once ``max |mu_t - mu_{t-1}|`` over its node marginals is below ``tol``.
    beta : float, default=0.0
        RDA's ``beta_t`` (constant). 0 needs no step size; ``beta > 0`` adds the proximal
        term of eq. 10 and shrinks ``theta_t`` by ``t / (t + beta)``.
    eta : None, float or callable, default=None
        Bethe-MD step sizes ``eta_t``: None for ``1 / (lambda t)`` with the strong-convexity
        constant ``lambda = 1 / (2 (2n - 1)^2)`` of a chain of ``n`` nodes, a constant, or a
        function of ``t``.
    lipschitz : None, float or ndarray of shape (n_sequences,), default=None
        Lipschitz constant of ``grad L_psi`` for the accelerated method; None asks the
        energy (``energy.lipschitz``).
    average : bool, default=False
        Return the primal average of the iterates ``mu_0 .. mu_t`` (Props. 4 and 6) instead
        of the last iterate (RDA and MD; the accelerated ``mu_t`` is already an average).
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
        ``n_iter`` (n_sequences,) iterations used; ``converged`` (n_sequences,) bool.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.energies import SoftConstraintEnergy
    >>> energy = SoftConstraintEnergy(node_coef=[[-1.0, 1.0]], offset=-1.0).fit(None, 2)
    >>> unary = np.array([[1.0, 0.0]] * 4)  # label 0 preferred at every token
    >>> res = bethe_inference(unary, np.zeros((2, 2)), np.array([0, 4]), energy, psi=5.0, max_iter=200)
    >>> bool(res.node[:, 1].sum() > 4 * 0.27)  # the constraint (#1 - #0 >= 0) pulls mass to label 1
    True
    """
    unary, trans3, per_position, offsets = check_chain_potentials(unary, transition, offsets)
    n_seq = offsets.shape[0] - 1
    T, L = unary.shape
    E = T - n_seq
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}.")
    if not (isinstance(max_iter, numbers.Integral) and max_iter >= 0):
        raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}.")
    if not (isinstance(tol, numbers.Real) and tol >= 0):
        raise ValueError(f"tol must be a number >= 0, got {tol!r}.")
    if not (isinstance(beta, numbers.Real) and np.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta must be a finite number >= 0, got {beta!r}.")
    base_trans = trans3[:E] if per_position else trans3[0]
    lengths = np.diff(offsets)

    if energy is None or energy.n_weights == 0:
        _, node, edge = forward_backward(
            unary, base_trans, offsets, edge_marginals="per_position" if return_edges else "none"
        )
        return Bunch(node=node, edge=edge, dual_unary=unary, dual_transition=base_trans,
                     n_iter=np.zeros(n_seq, dtype=np.int64), converged=np.ones(n_seq, dtype=bool))

    K = energy.n_weights
    psi = _check_psi(psi, n_seq, K)
    if energy_index is not None:
        energy_index = np.asarray(energy_index, dtype=np.int64)
        if energy_index.shape != (n_seq,):
            raise ValueError(f"energy_index must have shape ({n_seq},), got {energy_index.shape}.")
    energy.check_batch(offsets, L, index=energy_index)

    need_edges = bool(energy.uses_edges)
    iter_edges = need_edges or (return_edges and (average or method == "accelerated"))
    edge_mode = "per_position" if iter_edges else "none"

    def base_edges(etok):
        return base_trans[etok] if per_position else base_trans[None]

    if method == "accelerated":
        lip = energy.lipschitz(offsets, psi, index=energy_index) if lipschitz is None else lipschitz
        lip = np.broadcast_to(np.asarray(lip, dtype=np.float64), (n_seq,))
        if not np.all(np.isfinite(lip)) or np.any(lip < 0):
            raise ValueError("lipschitz must be finite and >= 0.")
        uniform_lip = bool(np.all(lip == lip[0]))
    if method == "md":
        eta_fn = _eta_schedule(eta, lengths.astype(np.float64))

    # mu_0 = ORACLE(theta): the prox-center
    _, mu_node, mu_edge = forward_backward(unary, base_trans, offsets, edge_marginals=edge_mode)
    dual_unary = unary.copy()
    dual_edge = np.broadcast_to(base_trans, (E, L, L)).copy() if (need_edges or per_position) else None
    final_scale = np.ones(n_seq)  # RDA with beta > 0: t / (t + beta) at each sequence's last step
    n_iter = np.zeros(n_seq, dtype=np.int64)
    converged = np.zeros(n_seq, dtype=bool)
    active = np.ones(n_seq, dtype=bool)

    g_node = np.zeros((T, L))  # RDA: running sum; accelerated: weighted average
    g_edge = np.zeros((E, L, L)) if need_edges else None
    if method == "md":
        th_node = unary.copy()
        th_edge = np.broadcast_to(base_trans, (E, L, L)).copy() if need_edges else None
    if method == "accelerated":
        nu_node, nu_edge = mu_node.copy(), None if mu_edge is None else mu_edge.copy()
    use_avg = average and method != "accelerated"
    if use_avg:
        sum_node = mu_node.copy()
        sum_edge = None if mu_edge is None else mu_edge.copy()

    for t in range(1, max_iter + 1):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        if idx.size == n_seq:
            tok, etok, sub = slice(None), slice(None), offsets
        else:
            tok, etok, sub = subset_sequences(offsets, idx)
        psi_a = psi[idx]
        e_idx = idx if energy_index is None else energy_index[idx]
        old_node = mu_node[tok]
        old_edge = None if mu_edge is None else mu_edge[etok]

        if method == "rda":
            gn, ge = energy.gradient(old_node, old_edge, sub, psi_a, index=e_idx)
            g_node[tok] += gn
            s = t / (t + beta)
            un = s * (unary[tok] - g_node[tok] / t)
            if need_edges:
                g_edge[etok] += ge
                tr = s * (base_edges(etok) - g_edge[etok] / t)
            else:
                tr = s * (base_trans[etok] if per_position else base_trans)
            final_scale[idx] = s
        elif method == "md":
            gn, ge = energy.gradient(old_node, old_edge, sub, psi_a, index=e_idx)
            eta_s = eta_fn(t)[idx]
            eta_tok = np.repeat(eta_s, np.diff(sub))[:, None]
            th_node[tok] = (th_node[tok] + eta_tok * (unary[tok] - gn)) / (1.0 + eta_tok)
            un = th_node[tok]
            if need_edges:
                eta_e = np.repeat(eta_s, np.diff(sub) - 1)[:, None, None]
                th_edge[etok] = (th_edge[etok] + eta_e * (base_edges(etok) - ge)) / (1.0 + eta_e)
                tr = th_edge[etok]
            else:  # (A + eta A) / (1 + eta) = A: shared transitions stay shared
                tr = base_trans[etok] if per_position else base_trans
        else:  # accelerated
            c = 2.0 / (t + 1.0)
            u_node = (1 - c) * old_node + c * nu_node[tok]
            u_edge = None
            if need_edges:
                u_edge = (1 - c) * old_edge + c * nu_edge[etok]
            gn, ge = energy.gradient(u_node, u_edge, sub, psi_a, index=e_idx)
            g_node[tok] = (1 - c) * g_node[tok] + c * gn
            w = t * (t + 1.0) / (4.0 * lip[idx] + t * (t + 1.0))
            un = np.repeat(w, np.diff(sub))[:, None] * (unary[tok] - g_node[tok])
            w_e = np.repeat(w, np.diff(sub) - 1)[:, None, None]
            if need_edges:
                g_edge[etok] = (1 - c) * g_edge[etok] + c * ge
                tr = w_e * (base_edges(etok) - g_edge[etok])
            elif uniform_lip and not per_position:
                tr = w[0] * base_trans
            else:
                tr = w_e * (base_trans[etok] if per_position else base_trans[None])

        _, new_node, new_edge = forward_backward(un, tr, sub, edge_marginals=edge_mode)
        if method == "accelerated":
            nu_node[tok] = new_node
            new_node = (1 - c) * old_node + c * new_node
            if new_edge is not None:
                nu_edge[etok] = new_edge
                new_edge = (1 - c) * old_edge + c * new_edge
        else:
            dual_unary[tok] = un
            if dual_edge is not None and (need_edges or per_position):
                dual_edge[etok] = tr if np.ndim(tr) == 3 else tr[None]
        delta = np.maximum.reduceat(np.max(np.abs(new_node - old_node), axis=1), sub[:-1])
        mu_node[tok] = new_node
        if mu_edge is not None:
            mu_edge[etok] = new_edge
        if use_avg:
            sum_node[tok] += new_node
            if sum_edge is not None:
                sum_edge[etok] += new_edge
        n_iter[idx] = t
        done = delta < tol
        converged[idx[done]] = True
        active[idx[done]] = False

    if use_avg:
        count_tok = np.repeat(n_iter + 1.0, lengths)[:, None]
        mu_node = sum_node / count_tok
        if sum_edge is not None:
            mu_edge = sum_edge / np.repeat(n_iter + 1.0, lengths - 1)[:, None, None]

    if use_avg or method == "accelerated":
        # mu is not an oracle output: MAP under theta - grad L(mu) (Prop. 1's fixed point)
        gn, ge = energy.gradient(mu_node, mu_edge if need_edges else None, offsets, psi, index=energy_index)
        dual_unary = unary - gn
        if need_edges:
            dual_trans = base_edges(slice(None)) - ge
        else:
            dual_trans = base_trans
    elif need_edges or per_position:
        dual_trans = dual_edge
    elif beta > 0 and not np.all(final_scale == final_scale[0]):
        dual_trans = np.repeat(final_scale, lengths - 1)[:, None, None] * base_trans[None]
    else:
        dual_trans = final_scale[0] * base_trans

    edge_out = None
    if return_edges:
        if mu_edge is None:  # last iterate of RDA / MD: mu_t = ORACLE(theta_t) exactly
            _, node_check, mu_edge = forward_backward(dual_unary, dual_trans, offsets, edge_marginals="per_position")
        edge_out = mu_edge
    return Bunch(node=mu_node, edge=edge_out, dual_unary=dual_unary, dual_transition=dual_trans,
                 n_iter=n_iter, converged=converged)


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
