"""Learning the constraint weights ``psi`` by the structured perceptron on decoded labels (Anzaroot et al. 2014).

Anzaroot, Passos, Belanger and McCallum (2014) fix the base CRF and learn the penalties of
their soft constraints by a subgradient (perceptron-style) method on the decoded output:
for a sequence whose constrained MAP labelling ``y_hat`` differs from the gold ``y``, every
constraint ``j`` moves by ``v_j(y_hat) - v_j(y)`` (its violation by the prediction minus its
violation by the gold), so a constraint moves only where it separates a wrong prediction
from the truth. Its weight is the subgradient step of the structured perceptron loss
``max_y' [theta . S(y') - sum_j psi_j v_j(y')] - [theta . S(y) - sum_j psi_j v_j(y)]`` in
``psi``, with the L1 penalty of :func:`sklearn_struct._psi_learning.learn_psi` as a
proximal step and the weights averaged over steps (the averaged perceptron).

Unlike Algorithm 3's surrogate likelihood, a constraint the gold labels break does not pay
where the prediction is already right: the objective sees only the decoding errors. The
decoding is the model's own: Bethe-RDA marginals at the current ``psi``, then Viterbi under
the final dual potentials (:meth:`NonLocalCRF.infer`).
"""

import numpy as np
from sklearn.utils import Bunch, check_random_state

from ._bethe_inference import bethe_inference
from ._chain_crf import ChainData
from ._chain_crf_constrained import masked_potentials
from .oracles.chain import viterbi
from .utils.packing import subset_sequences, unpack_sequences

__all__ = ["learn_psi_perceptron"]


def learn_psi_perceptron(est, X, y_enc, energy, seqs, params, fold, stopped=False, structure=None):
    """Averaged structured perceptron for ``psi`` on the sequences ``seqs``, each under ``params[fold]``.

    ``est`` is the NonLocalCRF being fitted (``psi_init``, ``n_epochs``, ``batch_size``,
    ``learning_rate(_schedule)``, ``psi_l1``, ``random_state`` and the inference settings); ``energy``
    the fitted (unbound) :class:`~sklearn_struct.constraints.ConstraintEnergy`, which must
    provide ``violations``; ``structure`` (or None) the allowed transitions decoding obeys. Each step: decode the batch at the current ``psi``, then
    ``psi <- max(0, psi + lr * (mean_i [v(y_hat_i) - v(y_i)] - psi_l1))``. Returns a Bunch
    with ``psi`` (the average of the iterates, so the L1 zeros of the late steps stay
    small), no epoch when ``stopped``; ``history`` (averaged psi after each epoch), ``n_iter`` (inference iterations of
    the last epoch per sequence) and ``n_wrong`` (wrongly decoded sequences per epoch).
    """
    if not hasattr(energy, "violations"):
        raise ValueError("psi_gradient='perceptron' needs an energy with violations() "
                         f"(a ConstraintEnergy), got {type(energy).__name__}.")
    data = ChainData([X[i] for i in seqs])
    packed, offsets = data.packed, data.offsets
    n_seq = offsets.shape[0] - 1
    lengths = np.diff(offsets)
    gold = [np.asarray(y_enc[i], dtype=np.int64) for i in seqs]
    v_gold = energy.violations(gold, [X[i] for i in seqs])
    tok_fold = np.repeat(fold, lengths)
    unary_all = np.empty((packed.shape[0], len(est.classes_)))
    for k, (c, b, _) in enumerate(params):
        rows = np.flatnonzero(tok_fold == k)
        unary_all[rows] = np.asarray(packed[rows] @ c) + b
    trans_stack = np.stack([p[2] for p in params])
    K = energy.n_weights
    bound = energy.bind(X)  # input-dependent terms: indexed by the training sequence (seqs)
    psi = np.full(K, float(est.psi_init))
    psi_sum, n_steps = np.zeros(K), 0
    rng = check_random_state(est.random_state)
    kwargs = est._inference_kwargs()
    n_iter = np.zeros(n_seq, dtype=np.int64)
    history, n_wrong = [psi.copy()], []
    for _ in range(0 if stopped else est.n_epochs):
        order = rng.permutation(n_seq)
        wrong = 0
        for lo in range(0, n_seq, est.batch_size):
            idx = np.sort(order[lo : lo + est.batch_size])
            pred, n_it = _decode(unary_all, trans_stack, offsets, lengths, fold, idx, bound, psi, seqs, kwargs,
                                 structure)
            n_iter[idx] = n_it
            v_pred = energy.violations(pred, [X[i] for i in seqs[idx]])
            diff = v_pred - v_gold[idx]
            wrong += sum(not np.array_equal(p, gold[i]) for p, i in zip(pred, idx))
            lr = est.learning_rate
            if est.learning_rate_schedule == "invscaling":
                lr = lr / np.sqrt(1.0 + n_steps)
            psi = np.maximum(psi + lr * (diff.mean(axis=0) - est.psi_l1), 0.0)
            psi_sum += psi
            n_steps += 1
        history.append(psi_sum / n_steps)
        n_wrong.append(wrong)
    if n_steps:  # the averaged iterates, on the support of the last one (the L1 zeros stay zero)
        psi = np.where(psi > 0, psi_sum / n_steps, 0.0)
    return Bunch(psi=psi, history=np.array(history), n_iter=n_iter,
                 n_wrong=np.array(n_wrong), psi_coef=None, theta=None)


def _decode(unary_all, trans_stack, offsets, lengths, fold, idx, bound, psi, seqs, kwargs, structure=None):
    """Constrained MAP labels of the sequences ``idx`` (Bethe inference, then Viterbi on its duals)."""
    tok, _, sub = subset_sequences(offsets, idx)
    folds_b = fold[idx]
    if np.all(folds_b == folds_b[0]):
        trans = trans_stack[folds_b[0]]
    else:
        trans = np.repeat(trans_stack[folds_b], lengths[idx] - 1, axis=0)
    unary, trans = masked_potentials(unary_all[tok], trans, sub, structure)
    psi_b = np.broadcast_to(psi, (idx.shape[0], psi.shape[0]))
    res = bethe_inference(unary, trans, sub, bound, psi_b, return_edges=False, energy_index=seqs[idx], **kwargs)
    labels, _ = viterbi(res.dual_unary, res.dual_transition, sub)
    return unpack_sequences(labels, sub), res.n_iter
