"""Learning the energy weights ``psi`` of :class:`~sklearn_struct.NonLocalCRF` (Algorithm 3).

The base CRF's marginals on its own training sequences are nearly the gold labels, so the
psi step runs on held-out marginals (:func:`psi_thetas`: a held-out fraction or K-fold
cross-fitting); :func:`learn_psi` is Algorithm 3 of Vilnis et al. (2015) with its sign
corrected and an optional L1 (sparsity) penalty, so candidate constraints that do not help
end at exactly zero (:mod:`sklearn_struct.constraint_learning`).
"""

import inspect
import numbers

import numpy as np
from sklearn.base import clone
from sklearn.utils import Bunch, check_random_state

from ._bethe_inference import bethe_inference
from ._chain_crf import ChainData
from ._chain_crf_constrained import masked_potentials
from ._psi_perceptron import learn_psi_perceptron
from .constraints import ConstraintEnergy
from .oracles.chain import forward_backward
from .utils.packing import edge_offsets, segment_sum, subset_sequences, transition_pairs
from .utils.progress import Progress

__all__ = ["fit_energy", "bind", "psi_thetas", "in_sample_thetas", "psi_values", "learn_psi"]

_AUTO_HOLDOUT_FOLDS = 3  # psi_holdout="auto": K-fold cross-fitting for the psi step


def in_sample_thetas(base, n_seq):
    """:func:`psi_thetas` without held-out fits: every sequence under the full-data base CRF ``base``."""
    return np.arange(n_seq), [tuple(base)], np.zeros(n_seq, dtype=np.int64)

def psi_thetas(est, X, y_enc, base):
    """Base-CRF parameters under which Algorithm 3 sees each training sequence.

    ``est`` is the NonLocalCRF being fitted (its parameters, and its ``_lbfgs_crf`` fits the
    held-out base CRFs); ``base`` the full-data base CRF's ``(coef, intercept, transition)``.

    Returns ``(seqs, params, fold)``: the sequences used for the psi step, a list of
    (coef, intercept, transition) and, per used sequence, the index into that list.
    ``psi_holdout=None``: the full-data base CRF on every sequence (in-sample). A float:
    a base CRF fitted on the other sequences, for the held-out fraction. An int K:
    K base CRFs, each fitted on K-1 folds, for the sequences of the remaining fold.
    """
    n_seq = len(X)
    holdout = est.psi_holdout
    if isinstance(holdout, str):  # "auto"
        holdout = None if est.learn_theta else min(_AUTO_HOLDOUT_FOLDS, n_seq)
        if holdout is not None and holdout < 2:
            holdout = None
    if holdout is None or est.n_epochs == 0:  # n_epochs=0: psi stays psi_init, no held-out fits needed
        return in_sample_thetas(base, n_seq)
    rng = check_random_state(est.random_state)
    order = rng.permutation(n_seq)
    if isinstance(holdout, numbers.Integral):
        if holdout > n_seq:
            raise ValueError(f"psi_holdout={holdout} folds, but there are only {n_seq} training sequences.")
        parts = np.array_split(order, int(holdout))
    else:
        n_out = int(round(holdout * n_seq))
        if n_out < 1 or n_out >= n_seq:
            raise ValueError(
                f"psi_holdout={holdout} holds out {n_out} of {n_seq} training sequences; "
                "at least 1 must be held out and at least 1 kept for the base CRF."
            )
        parts = [order[:n_out]]
    params, fold = [], np.empty(n_seq, dtype=np.int64)
    for k, part in enumerate(parts):
        rest = np.setdiff1d(order, part)
        Xk = [X[i] for i in rest]
        yk = [y_enc[i] for i in rest]
        p, _, _ = est._lbfgs_crf(Xk, yk, what=f"the base CRF without psi fold {k}")
        params.append(p)
        fold[part] = k
    seqs = np.sort(np.concatenate(parts))
    return seqs, params, fold[seqs]

# ---------------------------------------------------------------- psi features


def psi_values(phi, psi, psi_coef):
    """Per-sequence energy weights (n_seq, K) and the mask where the clip is inactive."""
    if psi_coef is None or phi is None:
        return np.broadcast_to(psi, (1 if phi is None else phi.shape[0], psi.shape[0])), None
    raw = phi @ psi_coef + psi
    return np.maximum(raw, 0.0), raw >= 0  # the kink counts as active: a start at psi_init=0 can move

# ---------------------------------------------------------------- Algorithm 3


def learn_psi(est, X, y_enc, energy, phi, seqs, params, fold, progress=None, gate=None, structure=None):
    """Algorithm 3 on the training sequences ``seqs``, each under the base CRF ``params[fold]``.

    ``est`` is the NonLocalCRF being fitted (its parameters: ``psi_init``, ``n_epochs``,
    ``batch_size``, ``learning_rate(_schedule)``, ``psi_l1``, ``learn_theta``,
    ``theta_learning_rate``, ``psi_gradient``, ``c2``, ``random_state`` and the inference settings), ``energy`` the
    fitted energy, ``phi`` the psi features of all training sequences (or None), ``gate`` the
    sampled gate of the sequences ``seqs`` (``(len(seqs), n_weights)``, :mod:`._psi_gate`; the
    weights of sequence ``i`` are then ``psi * gate[i]``) or None, ``structure`` the
    :class:`~sklearn_struct._chain_crf_constrained.Structure` of ``allowed_transitions`` (or None):
    inference runs on the chain with its forbidden choices at ``-inf``. No epoch runs once
    ``progress`` (the fit's reporter) has been stopped.

    Each step is a projected (proximal) gradient-ascent step on the batch's mean surrogate
    log-likelihood minus ``psi_l1 * sum(psi)``: ``psi <- max(0, psi + lr * (g - psi_l1))``,
    so a weight whose gradient stays below ``psi_l1`` ends at exactly zero.

    Returns a Bunch with ``psi``, ``psi_coef``, ``history`` (psi after each epoch),
    ``n_iter`` (inference iterations of the last epoch per sequence) and ``theta`` (the
    updated ``(coef, intercept, transition)`` with ``learn_theta``, else None).
    """
    if progress is None:
        progress = Progress(type(est).__name__, est.verbose, est.callback)
    if est.psi_gradient == "perceptron":
        if phi is not None or est.learn_theta or gate is not None:
            raise ValueError("psi_gradient='perceptron' learns one psi vector with theta fixed: it takes no "
                             "psi_features / psi_featurizer, no psi_gate and no learn_theta=True.")
        return learn_psi_perceptron(est, X, y_enc, energy, seqs, params, fold, stopped=progress.stopped,
                                    structure=structure)
    energy = bind(energy, X)
    L = len(est.classes_)
    K = energy.n_weights
    data = ChainData([X[i] for i in seqs])
    packed, offsets = data.packed, data.offsets
    n_seq = offsets.shape[0] - 1
    lengths = np.diff(offsets)
    y_all = np.concatenate([y_enc[i] for i in seqs]).astype(np.int64)
    edge_from, edge_to = transition_pairs(y_all, offsets)  # in packed edge-row order
    uses_edges = bool(energy.uses_edges)
    phi = None if phi is None else phi[seqs]

    psi = np.full(K, float(est.psi_init))
    psi_coef = None if phi is None else np.zeros((phi.shape[1], K))
    coef, intercept, trans = (p.copy() for p in params[0])
    if not est.learn_theta:  # theta stays fixed: every token's unary scores once
        tok_fold = np.repeat(fold, lengths)
        unary_all = np.empty((packed.shape[0], L))
        for k, (c, b, _) in enumerate(params):
            rows = np.flatnonzero(tok_fold == k)
            unary_all[rows] = np.asarray(packed[rows] @ c) + b
        trans_stack = np.stack([p[2] for p in params])
    rng = check_random_state(est.random_state)
    n_iter = np.zeros(n_seq, dtype=np.int64)
    history = [psi.copy()]
    step = 0
    kwargs = est._inference_kwargs()
    epochs = Progress(progress.name, est.verbose, est.callback, unit="epoch",
                      objective="psi gradient", start=progress.start)
    for epoch in range(0 if progress.stopped else est.n_epochs):
        order = rng.permutation(n_seq)
        g_epoch = np.zeros(K)
        for lo in range(0, n_seq, est.batch_size):
            idx = np.sort(order[lo : lo + est.batch_size])
            tok, etok, sub = subset_sequences(offsets, idx)
            Xb = packed[tok]
            if est.learn_theta:
                unary = np.asarray(Xb @ coef) + intercept
                _check_diverged(est, epoch, unary, trans, what="the CRF's potentials")
            else:
                unary = unary_all[tok]
                folds_b = fold[idx]
                if np.all(folds_b == folds_b[0]):
                    trans = trans_stack[folds_b[0]]
                else:  # sequences of several held-out folds: per-position transitions
                    trans = np.repeat(trans_stack[folds_b], lengths[idx] - 1, axis=0)
            phi_b = None if phi is None else phi[idx]
            psi_b, clip_on = psi_values(phi_b, psi, psi_coef)
            psi_b = np.broadcast_to(psi_b, (idx.shape[0], K))
            if gate is not None:
                psi_b = psi_b * gate[idx]
            paper_form = est.psi_gradient == "algorithm3"
            unary_m, trans_m = masked_potentials(unary, trans, sub, structure)  # forbidden choices at -inf
            res = bethe_inference(unary_m, trans_m, sub, energy, psi_b,
                                  return_edges=uses_edges or (paper_form and est.learn_theta),
                                  energy_index=seqs[idx], **kwargs)
            n_iter[idx] = res.n_iter
            if paper_form:
                sur = _algorithm3_gradient(energy, res.node, res.edge, sub, y_all[tok], edge_from[etok],
                                           edge_to[etok], index=seqs[idx], edge_sum=est.learn_theta)
            else:
                sur = _surrogate_gradient(energy, res.node, res.edge, unary_m, trans_m, sub, psi_b,
                                          y_all[tok], edge_from[etok], edge_to[etok], index=seqs[idx],
                                          edge_sum=est.learn_theta)
            g_psi, d_node, m_edge = sur.g_psi, sur.d_node, sur.m_edge
            if gate is not None:  # chain rule through psi_b = psi * gate
                g_psi = g_psi * gate[idx]
            g_epoch += g_psi.sum(axis=0)
            decay = 1.0 / np.sqrt(1.0 + step) if est.learning_rate_schedule == "invscaling" else 1.0
            lr = est.learning_rate * decay
            nb = idx.shape[0]
            if psi_coef is None:  # projected (with the L1 term: proximal) ascent
                psi = np.maximum(psi + lr * (g_psi.mean(axis=0) - est.psi_l1), 0.0)
            else:
                g_eff = g_psi * clip_on
                psi = psi + lr * (g_eff.mean(axis=0) - est.psi_l1)
                psi_coef = psi_coef + lr * (phi_b.T @ g_eff) / nb
            if est.learn_theta:
                exp_edges = m_edge.sum(axis=0) if uses_edges else m_edge
                g_coef, g_int, g_trans = _theta_gradient(Xb, d_node, edge_from[etok], edge_to[etok], exp_edges,
                                                         coef, trans, nb, est.c2 / n_seq)
                lr_theta = lr if est.theta_learning_rate is None else est.theta_learning_rate * decay
                coef += lr_theta * g_coef
                intercept += lr_theta * g_int
                trans += lr_theta * g_trans
            _check_diverged(est, epoch, psi, psi_coef, *((coef, intercept, trans) if est.learn_theta else ()))
            step += 1
        history.append(psi.copy())
        if epochs(epoch + 1, np.linalg.norm(g_epoch / n_seq), psi=psi, mean_inference_iterations=n_iter.mean()):
            break
    est_theta = (coef, intercept, trans) if est.learn_theta else None
    return Bunch(psi=psi, psi_coef=psi_coef, history=np.array(history), n_iter=n_iter, theta=est_theta)


def _check_diverged(est, epoch, *arrays, what="the learned parameters"):
    """ValueError naming the step sizes if the gradient ascent made a parameter NaN or infinite."""
    if all(a is None or np.all(np.isfinite(a)) for a in arrays):
        return
    rates = f"learning_rate={est.learning_rate!r}"
    if est.learn_theta:
        rates += f", theta_learning_rate={est.theta_learning_rate!r}"
    raise ValueError(f"the psi / theta gradient ascent diverged at epoch {epoch + 1}: {what} are no longer finite; "
                     f"lower the step sizes ({rates}).")


def _theta_gradient(Xb, d_node, edge_from, edge_to, exp_edges, coef, trans, n_batch, c2):
    """Gradient of Algorithm 3's theta objective on a batch, per block (coef, intercept, transition).

    The objective is the batch mean of the surrogate log-likelihood (eq. 12) minus the
    base CRF's L2 penalty spread over the training sequences,
    ``(1 / n_batch) sum_i log Q_i(y_i) - c2 * (||W||^2 + ||A||^2)`` (``c2`` already divided
    by the number of sequences); ``d_node = S(y) - m`` on the tokens, ``exp_edges`` the
    summed transition marginals of the ``Q_i``. Every block is a per-sequence mean, the
    unpenalised intercept included.
    """
    L = d_node.shape[1]
    emp = np.zeros((L, L))
    np.add.at(emp, (edge_from, edge_to), 1.0)
    g_coef = np.asarray(Xb.T @ d_node) / n_batch - 2.0 * c2 * coef
    g_int = d_node.sum(axis=0) / n_batch
    g_trans = (emp - exp_edges) / n_batch - 2.0 * c2 * trans
    return g_coef, g_int, g_trans


def fit_energy(energy, y_enc, classes):
    """Clone and fit the energy (a list of constraint templates becomes a ConstraintEnergy)."""
    if isinstance(energy, list):
        energy = ConstraintEnergy(energy)
    energy = clone(energy)
    if "classes" in inspect.signature(energy.fit).parameters:  # templates by label name
        return energy.fit(y_enc, len(classes), classes=classes)
    return energy.fit(y_enc, len(classes))


def bind(energy, X):
    """The energy with the input-dependent coefficients of X, for energies that have them."""
    return energy.bind(X) if hasattr(energy, "bind") else energy


def _algorithm3_gradient(energy, node, edge, offsets, y, edge_from, edge_to, index=None, edge_sum=False):
    """Algorithm 3's gradients at the inference output ``mu_i`` (sign corrected).

    ``d/d theta = S(y_i) - mu_i`` and ``d/d psi_ik = -<grad ell_k(mu_i), S(y_i) - mu_i>``: the
    surrogate-likelihood gradient of :func:`_surrogate_gradient` with ``m_i`` replaced by
    ``mu_i``, its value at a fixed point of inference (Prop. 1). Same return layout.
    """
    rows = np.arange(y.shape[0])
    d_node = -node
    d_node[rows, y] += 1.0
    d_edge = m_edge = None
    if energy.uses_edges:
        d_edge = -edge
        d_edge[np.arange(d_edge.shape[0]), edge_from, edge_to] += 1.0
        m_edge = edge
    elif edge_sum:
        m_edge = edge.sum(axis=0)
    g_psi = -energy.term_gradient_dot(node, edge, offsets, d_node, d_edge, index=index)
    return Bunch(log_lik=None, g_psi=g_psi, d_node=d_node, m_edge=m_edge)


def _surrogate_gradient(energy, node, edge, unary, transition, offsets, psi, y, edge_from, edge_to,
                        index=None, edge_sum=False):
    """Surrogate log-likelihood (eq. 12) of a batch at fixed marginals ``mu`` and its psi-gradient.

    ``Q_i`` is the chain MRF with potentials ``rho_i = theta - grad L_psi(mu_i)`` (eq. 11);
    with ``m_i = ORACLE(rho_i)``, ``d log Q_i(y_i) / d rho_i = S(y_i) - m_i`` and, since
    ``L_psi = sum_k psi_k ell_k``, ``d log Q_i / d psi_ik = -<grad ell_k(mu_i), S(y_i) - m_i>``
    (the sign the paper's Algorithm 3 drops).

    Returns a Bunch with ``log_lik`` (n_seq,), ``g_psi`` (n_seq, n_weights), ``d_node``
    (``S(y) - m`` on nodes) and ``m_edge`` (per-position edge marginals of Q when the energy
    uses edges, their sum when ``edge_sum``, else None).
    """

    gn, ge = energy.gradient(node, edge, offsets, psi, index=index)
    rho_unary = unary - gn
    transition = np.asarray(transition, dtype=np.float64)
    if ge is None:
        rho_trans = transition
    else:
        rho_trans = (transition[None] if transition.ndim == 2 else transition) - ge
    uses_edges = ge is not None or bool(energy.uses_edges)
    mode = "per_position" if uses_edges else ("sum" if edge_sum else "none")
    log_z, m_node, m_edge = forward_backward(rho_unary, rho_trans, offsets, edge_marginals=mode)
    rows = np.arange(y.shape[0])
    d_node = -m_node
    d_node[rows, y] += 1.0
    d_edge = None
    if uses_edges:
        d_edge = -m_edge
        d_edge[np.arange(d_edge.shape[0]), edge_from, edge_to] += 1.0
    trans3 = np.asarray(rho_trans)
    if trans3.ndim == 2:
        gold_trans = trans3[edge_from, edge_to]
    else:
        gold_trans = trans3[np.arange(trans3.shape[0]), edge_from, edge_to]
    score = segment_sum(rho_unary[rows, y], offsets) + segment_sum(gold_trans, edge_offsets(offsets))
    g_psi = -energy.term_gradient_dot(node, edge, offsets, d_node, d_edge, index=index)
    return Bunch(log_lik=score - log_z, g_psi=g_psi, d_node=d_node, m_edge=m_edge)
