"""The Monte-Carlo ELBO of GP-struct over the whole data: local chunks, or resident shards on a
dask cluster (only the variational parameters travel).

It sits above :mod:`._gp_struct_model` (the per-sequence estimates) and :mod:`._gp_struct_shards`
(the cluster path), so neither imports the other back.
"""
import numpy as np

from ._gp_struct_model import _per_sequence, assemble_elbo, collect, estimate_work
from ._gp_struct_shards import resident, run_resident


def mc_estimate(prior, p, seqs, y, n_samples, seed, likelihood, grad=True, control_variate=True, n_jobs=None):
    """MC expected log-likelihood of sequences ``seqs`` and its score-function gradient parts.

    Returns a dict with ``ell`` (len(seqs),) and its Monte-Carlo variance ``ell_var``, and with ``grad``: ``gb`` (tokens, K, Q)
    gradient w.r.t. the latent means, ``U`` (tokens, K, Q, M) with
    ``dELL/dL_kj = 2 B^T U_kj``, and pairwise ``g_mb``, ``g_lsb`` (len(seqs), Q, Q).
    """
    seqs = np.asarray(seqs, dtype=np.int64)
    shards = resident(prior, y, n_jobs)
    if shards is not None:  # on a dask cluster: only the parameters travel
        return collect(run_resident(shards, p, "mc", seqs, n_samples, seed, (likelihood, grad, control_variate)),
                       grad)
    work = estimate_work(p, seqs, y, prior.offsets, likelihood, grad, control_variate)
    return collect(_per_sequence(prior, p, seqs, n_samples, seed, n_jobs, work), grad)


def elbo(prior, p, seqs, y, n_samples, seed, likelihood, grad=True, control_variate=True, n_jobs=None):
    """MC ELBO of the whole data (ELL of ``seqs`` + KL terms) and its gradient (unary vector, pairwise vector)."""
    est = mc_estimate(prior, p, seqs, y, n_samples, seed, likelihood, grad=grad,
                      control_variate=control_variate, n_jobs=n_jobs)
    return assemble_elbo(prior, p, seqs, est, grad)
