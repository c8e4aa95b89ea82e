"""The sampled gate of :class:`~sklearn_struct.NonLocalCRF` (``psi_gate="probability"``).

One weight vector ``psi`` over count constraints cannot tell the references a rule fixes from
those it breaks: on UMass dev the gold labels themselves break at least one candidate of
Anzaroot et al.'s family in 392 of 660 references (``benchmarks/results/umass_table1/umass_table1.md``).
The gate lets each sequence choose: term ``k`` acts on sequence ``i`` with weight
``psi_k * p_ik``, where ``p_ik`` is the probability under the base CRF that a labelling of
``x_i`` satisfies the term, estimated from exact samples (forward filtering, backward
sampling). A rule the base model finds implausible for this input (``p`` near 0: e.g. "at
most one title" where the model is sure of two) is switched off; a rule the MAP breaks but
many likely labellings keep is enforced.
"""

import numpy as np
from sklearn.utils import check_random_state

from ._chain_crf import predict_unary
from ._chain_crf_constrained import masked_potentials
from .oracles.chain import sample_chain

__all__ = ["satisfaction_probability", "training_gate", "fit_gate"]


def satisfaction_probability(energy, unary, transition, offsets, n_samples, random_state=None, index=None):
    """Fraction of ``n_samples`` exact chain-CRF samples that satisfy each energy term.

    Parameters
    ----------
    energy : ConstraintEnergy
        A fitted energy with ``packed_violations`` (bound to the inputs if it has
        input-dependent terms).
    unary, transition, offsets : the chain CRF (as :func:`~sklearn_struct.oracles.chain.sample_chain`).
    n_samples : int
    random_state : int, RandomState instance or None
    index : int ndarray of shape (n_sequences,), default=None
        Which bound input each sequence is.

    Returns
    -------
    p : ndarray of shape (n_sequences, n_terms)
        ``p[i, k]``: the share of samples of sequence ``i`` with no violation of term ``k``.
    """
    draws = sample_chain(unary, transition, offsets, random_state=random_state, n_samples=int(n_samples))
    p = 0.0
    for labels in draws:
        p = p + (energy.packed_violations(labels, offsets, index) <= 0.0)
    return p / draws.shape[0]


def training_gate(energy, X, seqs, params, fold, n_samples, random_state, structure=None):
    """The gate of the psi step's sequences ``seqs``, each under its base CRF ``params[fold]``.

    Returns ``(len(seqs), n_terms)`` in the order of ``seqs`` (as :func:`psi_thetas` gives them).
    ``structure`` (or None): the allowed transitions, which the samples obey.
    """
    rng = check_random_state(random_state)
    gate = np.empty((len(seqs), energy.n_weights))
    for k, (coef, intercept, trans) in enumerate(params):
        rows = np.flatnonzero(fold == k)
        if rows.size == 0:
            continue
        data, unary = predict_unary([X[i] for i in seqs[rows]], coef, intercept)
        unary, trans = masked_potentials(unary, trans, data.offsets, structure)
        gate[rows] = satisfaction_probability(energy, unary, trans, data.offsets, n_samples, rng,
                                              index=np.asarray(seqs)[rows])
    return gate


def fit_gate(energy, X, thetas, n_samples, random_state, n_epochs, structure=None):
    """What ``NonLocalCRF.fit`` draws for the gate: ``(gate, seed)``.

    ``gate``: :func:`training_gate` of the psi step's sequences (``thetas = (seqs, params, fold)``),
    or None when psi does not move (``n_epochs == 0``); ``seed``: the seed of the gate's samples at
    prediction. ``energy`` is bound to ``X``.
    """
    rng = check_random_state(random_state)
    seed = int(rng.randint(2**31 - 1))
    gate = training_gate(energy, X, *thetas, n_samples, rng, structure) if n_epochs > 0 else None
    return gate, seed
