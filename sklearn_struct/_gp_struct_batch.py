"""gp-var-b's objective: the ELBO estimated by self-normalised importance sampling from fixed draws.

L-BFGS needs an objective whose values and gradients agree. With the likelihood a black box
the plain Monte-Carlo ELBO does not give that: its score-function gradient is an unbiased
estimate of the gradient of the expectation, not the gradient of the value computed from
common random numbers, so the line search and the quasi-Newton pairs see two different
functions (measured: L-BFGS stalled far below SAGA's ELBO). Here the samples ``f_s`` of
every sequence are drawn once at ``theta_0`` and their log-likelihoods ``l_s`` computed once
(the only likelihood calls); for parameters ``theta`` near ``theta_0`` the expected
log-likelihood of a sequence is estimated as

    ELL(theta) = sum_s w_s l_s,   w_s proportional to q_theta(f_s) / q_theta0(f_s),  sum_s w_s = 1,

per mixture component. It is a smooth deterministic function of ``theta``, its gradient is

    grad ELL(theta) = sum_s w_s (l_s - ELL(theta)) grad log q_theta(f_s),

which at ``theta_0`` is the paper's score-function estimator with the sample mean as the
control variate (consistent, bias O(1/S)), and it costs no likelihood call, only the
Gaussian densities. The estimate is trusted while the weights stay spread: the caller
keeps the mean effective sample size (as a fraction of S) above a floor and draws a new
set when it falls.
"""

import numpy as np

from ._gp_struct_model import _per_sequence, assemble_elbo, collect, fixed_work, is_work
from ._gp_struct_shards import resident, run_resident


class FixedSamples:
    """Posterior draws of sequences ``seqs`` at the parameters ``p`` with their log-likelihoods
    ``loglik[i]`` (K, S) under ``likelihood`` (a :class:`~sklearn_struct._gp_likelihoods.Likelihood`)
    and log-densities ``logq0[i]`` (K, S) under ``p``."""

    def __init__(self, prior, p, seqs, y, n_samples, seed, likelihood, n_jobs=None):
        self.seqs = np.asarray(seqs, dtype=np.int64)
        self.n_jobs = n_jobs
        self.shards = resident(prior, y, n_jobs)
        if self.shards is not None:  # the draws stay on the workers, with the sequences they belong to
            self.token = run_resident(self.shards, p, "fix", self.seqs, n_samples, seed, (likelihood,))
            return
        res = _per_sequence(prior, p, self.seqs, n_samples, seed, n_jobs,
                            fixed_work(p, self.seqs, y, prior.offsets, likelihood))
        self.samples = [r[0] for r in res]
        self.loglik = [r[1] for r in res]
        self.logq0 = [r[2] for r in res]


def is_estimate(prior, p, fixed, grad=True):
    """Importance-weighted ELL of every fixed sequence under ``p`` and its exact gradient parts.

    Returns the dict of :func:`~sklearn_struct._gp_struct_elbo.mc_estimate` with ``ell_var``
    replaced by ``ess``, each sequence's effective sample size as a fraction of S (mean over
    components). ``grad="pair"`` computes only the pairwise parts (the unary ones are the
    costly ``B^T U`` products).
    """
    if fixed.shards is not None:
        res = run_resident(fixed.shards, p, "is", fixed.seqs, None, None, (fixed.token, grad))
        return collect(res, bool(grad), extra="ess")
    work = is_work(fixed.loglik, fixed.logq0, grad)
    res = _per_sequence(prior, p, fixed.seqs, None, None, fixed.n_jobs, work, samples=fixed.samples)
    return collect(res, bool(grad), extra="ess")


def is_elbo(prior, p, fixed, grad=True):
    """Importance-weighted ELBO (value, unary gradient, pairwise gradient, estimate); with
    ``grad="pair"`` the unary gradient is None."""
    return assemble_elbo(prior, p, fixed.seqs, is_estimate(prior, p, fixed, grad=grad), bool(grad))


def trusted_elbo(prior, p, fixed, grad, min_ess):
    """:func:`is_elbo` inside the trust region: ``(value, unary gradient, pairwise gradient, mean
    ESS)``, with the value ``-inf`` where the mean effective sample size is below ``min_ess``, a
    trial point overflows or its latent covariance is not positive definite."""
    try:
        with np.errstate(all="ignore"):
            value, gu, gp, est = is_elbo(prior, p, fixed, grad=grad)
    except ValueError:  # _cholesky: not positive definite even with jitter
        return -np.inf, None, None, 0.0
    ess = float(est["ess"].mean())
    finite = np.isfinite(value) and all(g is None or np.all(np.isfinite(g)) for g in (gu, gp))
    return (value if ess >= min_ess and finite else -np.inf), gu, gp, ess
