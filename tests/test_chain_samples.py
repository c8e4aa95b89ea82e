"""Sampled-chain oracles against brute-force enumeration of all label sequences."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from sklearn_struct.oracles.chain_samples import sampled_log_likelihood, sampled_marginals


def _enumerate(unary, trans):
    """Per sample: dict path -> score, and log Z."""
    L, T, S = unary.shape
    out = []
    for s in range(S):
        scores = {path: sum(unary[path[t], t, s] for t in range(T))
                  + sum(trans[path[t - 1], path[t], s] for t in range(1, T))
                  for path in itertools.product(range(L), repeat=T)}
        out.append((scores, logsumexp(list(scores.values()))))
    return out


@settings(max_examples=40, deadline=None)
@given(L=st.integers(1, 3), T=st.integers(1, 4), S=st.integers(1, 4), scale=st.sampled_from([0.1, 3.0, 300.0, 3e3]),
       seed=st.integers(0, 10**6))
def test_loglik_and_marginals_match_enumeration(L, T, S, scale, seed):
    rng = np.random.RandomState(seed)
    unary, trans = scale * rng.normal(size=(L, T, S)), scale * rng.normal(size=(L, L, S))
    y = rng.randint(L, size=T)
    ll, marg = sampled_log_likelihood(unary, trans, y), sampled_marginals(unary, trans)
    ref_m = np.zeros((T, L))
    for s, (scores, log_z) in enumerate(_enumerate(unary, trans)):
        assert abs(ll[s] - (scores[tuple(y)] - log_z)) <= 1e-9 * (1 + abs(log_z))
        for path, v in scores.items():
            ref_m[np.arange(T), path] += np.exp(v - log_z) / S
    np.testing.assert_allclose(marg, ref_m, atol=1e-9)
    np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-12)


def test_bad_input():
    u, tr = np.zeros((2, 3, 4)), np.zeros((2, 2, 4))
    with pytest.raises(ValueError, match="transition must have shape"):
        sampled_marginals(u, np.zeros((2, 2, 3)))
    with pytest.raises(ValueError, match="3D"):
        sampled_log_likelihood(u[0], tr, [0, 1, 1])
    with pytest.raises(ValueError, match="labels for 3 tokens"):
        sampled_log_likelihood(u, tr, [0, 1])
    with pytest.raises(ValueError, match=r"labels in \[0, 2\)"):
        sampled_log_likelihood(u, tr, [0, 2, 1])
    bad = u.copy()
    bad[1, 2, 3] = np.nan
    with pytest.raises(ValueError):
        sampled_log_likelihood(bad, tr, [0, 1, 1])
    with pytest.raises(ValueError, match="non-empty"):
        sampled_marginals(np.zeros((2, 3, 0)), np.zeros((2, 2, 0)))
    inf = tr.copy()
    inf[0, 1, 2] = np.inf
    with pytest.raises(ValueError, match="transition"):
        sampled_marginals(u, inf)
