"""Bethe-RDA on the convex CGM problem (eq. 23): beta schedules, prox-centre, certified gaps.

References are exact minimisers of eq. 2 on tiny chains, found without the library's
inference: on a chain, minimising -H(p) - <theta, mu(p)> + L(mu(p)) over *all joint
distributions* p has the same minimising marginals and value as eq. 2 (the maximum-entropy
distribution with given marginals has entropy H_B), and is smooth in a softmax of p.
"""

import functools
import itertools

import numpy as np
import pytest

from sklearn_struct._bethe_inference import bethe_inference, nonlocal_objective
from sklearn_struct.energies import PoissonCountEnergy, WordDictionaryEnergy
from sklearn_struct.oracles.chain import forward_backward
from sklearn_struct.utils.optimize import lbfgs
from sklearn_struct.utils.packing import lengths_to_offsets


def _joint_minimum(unary, trans, energy, psi, index=0):
    """(node marginals, value) minimising eq. 2 for one chain, over joint label distributions."""
    n, L = unary.shape
    Y = np.array(list(itertools.product(range(L), repeat=n)))
    S = np.zeros((len(Y), n, L))
    for k, y in enumerate(Y):
        S[k, np.arange(n), y] = 1
    score = (S * unary).sum((1, 2)) + sum(trans[Y[:, i], Y[:, i + 1]] for i in range(n - 1))
    off, psi, idx = np.array([0, n]), np.atleast_2d(psi), np.array([index])

    def f(z):
        logp = z - np.logaddexp.reduce(z)
        p = np.exp(logp)
        mu = np.tensordot(p, S, 1)
        g, _ = energy.gradient(mu, None, off, psi, index=idx)
        gp = logp + 1 - score + (S * g).sum((1, 2))
        return p @ logp - p @ score + energy.value(mu, None, off, psi, index=idx)[0], p * (gp - p @ gp)

    # the library's generic L-BFGS (tested on its own in test_utils), ~30x faster per
    # iteration here than scipy's L-BFGS-B; none of the inference code under test is used
    res = lbfgs(f, score.copy(), max_iter=20000, tol=0, gtol=1e-12)
    p = np.exp(res.x - np.logaddexp.reduce(res.x))
    return np.tensordot(p, S, 1), res.fun


def _cgm(seed, n=5, L=4, population=10_000, alpha=0.5, outlier=True):
    """A tiny CGM chain: birds drift to the next label; Poisson counts of the model's marginals.

    With ``outlier`` a few birds are also counted where the base model expects ~1e-5 of the
    population, which makes Bethe-RDA's first step (beta = 0) overshoot.
    """
    rng = np.random.RandomState(seed)
    unary = np.zeros((n, L))
    unary[0] = np.log([0.7, 0.2, 0.07, 0.03])
    trans = -2.0 * (np.subtract.outer(np.arange(L), np.arange(L)) - 0.5) ** 2 + rng.normal(scale=0.5, size=(L, L))
    _, mu, _ = forward_backward(unary, trans, np.array([0, n]), edge_marginals="none")
    counts = rng.poisson(alpha * population * mu).astype(float)
    if outlier:
        t, l = np.unravel_index(np.argmin(mu), mu.shape)
        counts[t, l] += rng.randint(1, 4)
    energy = PoissonCountEnergy(counts=counts, rate=alpha * population).fit(None, L)
    return unary, trans, energy, 1.0 / population


def _objective(res, unary, trans, energy, psi):
    return nonlocal_objective(res.node, res.edge, unary, trans, np.array([0, unary.shape[0]]), energy, psi)[0]


@functools.lru_cache(maxsize=None)
def _cgm_minimum(seed):
    """A tiny CGM without outliers and its exact minimiser, computed once per seed."""
    unary, trans, energy, psi = _cgm(seed, outlier=False)
    return (unary, trans, energy, psi), _joint_minimum(unary, trans, energy, psi)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("beta", [0.0, 1.0, "auto"])
def test_rda_reaches_the_cgm_minimum(seed, beta):
    (unary, trans, energy, psi), (ref_node, ref_value) = _cgm_minimum(seed)
    res = bethe_inference(unary, trans, np.array([0, 5]), energy, psi, beta=beta, max_iter=3000, tol=1e-10)
    np.testing.assert_allclose(res.node, ref_node, atol=1e-5)
    assert abs(_objective(res, unary, trans, energy, psi) - ref_value) <= 1e-7 * abs(ref_value)
    if beta == "auto":  # counts consistent with the model: nothing to damp, the paper's beta = 0
        plain = bethe_inference(unary, trans, np.array([0, 5]), energy, psi, max_iter=3000, tol=1e-10)
        assert res.beta[0] == 0.0
        np.testing.assert_array_equal(res.node, plain.node)


def test_beta_zero_fails_and_auto_recovers_on_an_outlier_count():
    # seed 106: 1-3 birds counted where the base model puts 2e-5 of the population
    unary, trans, energy, psi = _cgm(106)
    ref_node, ref_value = _joint_minimum(unary, trans, energy, psi)
    off = np.array([0, 5])
    plain = bethe_inference(unary, trans, off, energy, psi, max_iter=300, tol=1e-8)
    # the first step overshoots, marginals collapse to ~0 where counts are observed and the
    # resulting gradients (~1e12) freeze the running average: a wrong point that looks converged
    assert _objective(plain, unary, trans, energy, psi) > ref_value + 0.5 * abs(ref_value)
    # the certified gap exposes it
    checked = bethe_inference(unary, trans, off, energy, psi, max_iter=300, tol=1e-8, gap_tol=1e-6)
    assert not checked.converged[0] and checked.gap[0] > 0.5 * abs(ref_value)

    res = bethe_inference(unary, trans, off, energy, psi, beta="auto", max_iter=3000, tol=1e-6, gap_tol=1e-7)
    assert res.converged[0] and res.beta[0] >= 1
    np.testing.assert_allclose(res.node, ref_node, atol=1e-4)
    value = _objective(res, unary, trans, energy, psi)
    assert value - ref_value <= 1e-6 * abs(ref_value)
    assert value - ref_value <= res.gap[0] + 1e-9 * abs(ref_value)  # the certificate bounds the true gap


def test_auto_beta_is_per_sequence_in_a_batch():
    parts = [_cgm(106), _cgm(1, outlier=False), _cgm(2)]
    unary = np.concatenate([p[0] for p in parts])
    # per-position transitions, one table per edge of each sequence
    trans = np.concatenate([np.broadcast_to(p[1], (4, 4, 4)) for p in parts])
    energy = PoissonCountEnergy(counts=[p[2].counts for p in parts], rate=parts[0][2].rate).fit(None, 4)
    offsets = lengths_to_offsets([5, 5, 5])
    kw = dict(beta="auto", max_iter=500, tol=1e-8, gap_tol=1e-6)
    batch = bethe_inference(unary, trans, offsets, energy, parts[0][3], **kw)
    assert batch.beta[0] >= 1 and batch.beta[1] == 0
    for s, (u, tr, e, psi) in enumerate(parts):
        alone = bethe_inference(u, tr, np.array([0, 5]), e, psi, **kw)
        assert alone.n_iter[0] == batch.n_iter[s] and alone.beta[0] == batch.beta[s]
        np.testing.assert_allclose(batch.node[5 * s:5 * s + 5], alone.node, atol=1e-12)
        np.testing.assert_allclose(batch.gap[s], alone.gap[0], rtol=1e-6, atol=1e-12)


def test_first_step_for_each_prox_centre():
    unary, trans, energy, psi = _cgm(3)
    off = np.array([0, 5])
    _, mu0, _ = forward_backward(unary, trans, off, edge_marginals="none")
    g, _ = energy.gradient(mu0, None, off, [[psi]])
    # Algorithm 1 as printed (prox-centre mu_0): theta_1 = theta - g / (1 + beta)
    res = bethe_inference(unary, trans, off, energy, psi, beta=2.0, max_iter=1, tol=0)
    np.testing.assert_allclose(res.dual_unary, unary - g / 3.0)
    np.testing.assert_array_equal(res.dual_transition, trans)
    # eq. 10 read with phi = -H_B (uniform prox-centre): theta_1 = (theta - g) / (1 + beta)
    res = bethe_inference(unary, trans, off, energy, psi, beta=2.0, prox_center="uniform", max_iter=1, tol=0)
    np.testing.assert_allclose(res.dual_unary, (unary - g) / 3.0)
    np.testing.assert_allclose(res.dual_transition, trans / 3.0)
    _, node, _ = forward_backward(res.dual_unary, res.dual_transition, off, edge_marginals="none")
    np.testing.assert_allclose(res.node, node, atol=1e-14)


def test_uniform_prox_centre_is_slow_to_forget_the_centre():
    # the shrinkage t / (t + beta) of theta decays like beta / t: far from the optimum when
    # the marginals already change little (what session 1 saw as "a worse point")
    unary, trans, energy, psi = _cgm(0, outlier=False)
    _, ref_value = _joint_minimum(unary, trans, energy, psi)
    off = np.array([0, 5])
    base = bethe_inference(unary, trans, off, energy, psi, beta=10.0, max_iter=3000, tol=1e-5)
    uniform = bethe_inference(unary, trans, off, energy, psi, beta=10.0, prox_center="uniform",
                              max_iter=3000, tol=1e-5)
    err_base = _objective(base, unary, trans, energy, psi) - ref_value
    err_uniform = _objective(uniform, unary, trans, energy, psi) - ref_value
    assert err_base < 1e-5 * abs(ref_value) and err_uniform > max(1e-4 * abs(ref_value), 50 * err_base)


@pytest.mark.parametrize("method", ["rda", "md"])
def test_certified_gap_bounds_the_suboptimality(method):
    unary, trans, energy, psi = _cgm(4)
    _, ref_value = _joint_minimum(unary, trans, energy, psi)
    off = np.array([0, 5])
    kw = dict(eta=0.3) if method == "md" else dict(beta="auto")
    for max_iter in (0, 1, 3, 10):  # valid far from the optimum too
        res = bethe_inference(unary, trans, off, energy, psi, method=method, max_iter=max_iter, tol=0,
                              gap_tol=0.0, **kw)
        value = _objective(res, unary, trans, energy, psi)
        assert res.gap[0] >= value - ref_value - 1e-10 * abs(ref_value)
    res = bethe_inference(unary, trans, off, energy, psi, method=method, max_iter=2000, tol=1e-4, gap_tol=1e-7, **kw)
    assert res.converged[0] and 0 <= res.gap[0] <= 1e-7 * abs(_objective(res, unary, trans, energy, psi))


def test_bad_options():
    unary, trans, energy, psi = _cgm(0)
    off = np.array([0, 5])
    with pytest.raises(ValueError, match="beta must be a finite number >= 0 or 'auto'"):
        bethe_inference(unary, trans, off, energy, psi, beta="fast")
    with pytest.raises(ValueError, match="prox_center must be one of"):
        bethe_inference(unary, trans, off, energy, psi, prox_center="mu0")
    with pytest.raises(ValueError, match="beta='auto' needs prox_center='base'"):
        bethe_inference(unary, trans, off, energy, psi, beta="auto", prox_center="uniform")
    with pytest.raises(ValueError, match="gap_tol must be None or a number >= 0"):
        bethe_inference(unary, trans, off, energy, psi, gap_tol=-1.0)
    with pytest.raises(ValueError, match="gap_tol needs the last iterate"):
        bethe_inference(unary, trans, off, energy, psi, gap_tol=1e-6, average=True)
    with pytest.raises(ValueError, match="gap_tol needs the last iterate"):
        bethe_inference(unary, trans, off, energy, psi, gap_tol=1e-6, method="accelerated", lipschitz=1.0)
    words = WordDictionaryEnergy().fit([np.array([0, 1, 2, 3, 0])], 4)
    with pytest.raises(ValueError, match="gap_tol needs a convex energy"):
        bethe_inference(unary, trans, off, words, 1.0, gap_tol=1e-6)
