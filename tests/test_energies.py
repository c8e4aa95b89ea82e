"""Energies: values, gradients against finite differences, psi pieces, bad input."""

import numpy as np
import pytest

from sklearn_struct.energies import (
    PoissonCountEnergy,
    RandomFourierMeanMap,
    SoftConstraintEnergy,
    UnigramDictionaryEnergy,
    WordDictionaryEnergy,
    segment_sum,
    smoothed_hinge,
)
from sklearn_struct.oracles.chain import forward_backward
from sklearn_struct.utils.packing import lengths_to_offsets

L = 3


def _batch(lengths, seed=0):
    """Random interior chain marginals (from forward-backward) for a batch of sequences."""
    rng = np.random.RandomState(seed)
    offsets = lengths_to_offsets(lengths)
    T = offsets[-1]
    _, node, edge = forward_backward(rng.normal(size=(T, L)), rng.normal(size=(L, L)), offsets,
                                     edge_marginals="per_position")
    return node, edge, offsets


def _tangent(node, edge, rng):
    """A direction that keeps node rows and edge tables summing to the same totals."""
    dn = rng.normal(size=node.shape)
    dn -= dn.mean(axis=1, keepdims=True)
    de = rng.normal(size=edge.shape)
    de -= de.mean(axis=(1, 2), keepdims=True)
    return dn, de


def _energies():
    rng = np.random.RandomState(1)
    train = [np.array([0, 1, 2, 0]), np.array([1, 1, 0]), np.array([2, 0, 1, 1, 0]), np.array([0, 2])]
    counts = [rng.poisson(4.0, size=(n, L)).astype(float) for n in (4, 3, 5, 2)]
    counts[0][1, 2] = np.nan  # unobserved
    return [
        SoftConstraintEnergy(rng.normal(size=(2, L)), offset=[2.0, 1.0]).fit(train, L),
        SoftConstraintEnergy(rng.normal(size=(2, L)), rng.normal(size=(2, L, L)), offset=[2.0, 1.0]).fit(train, L),
        UnigramDictionaryEnergy().fit(train, L),
        WordDictionaryEnergy().fit(train, L),
        PoissonCountEnergy(counts=counts, rate=10.0).fit(None, L),
    ]


@pytest.mark.parametrize("energy", _energies(), ids=lambda e: type(e).__name__ + ("E" if e.uses_edges else ""))
def test_gradient_matches_finite_differences(energy):
    node, edge, offsets = _batch([4, 3, 5, 2])
    rng = np.random.RandomState(2)
    psi = rng.uniform(0.5, 2.0, size=(4, energy.n_weights))
    gn, ge = energy.gradient(node, edge, offsets, psi)
    assert gn.shape == node.shape and (ge is None) == (not energy.uses_edges)
    for _ in range(3):
        dn, de = _tangent(node, edge, rng)
        h = 1e-6
        fd = (energy.value(node + h * dn, edge + h * de, offsets, psi)
              - energy.value(node - h * dn, edge - h * de, offsets, psi)) / (2 * h)
        analytic = segment_sum(np.sum(gn * dn, axis=1), offsets)
        if ge is not None:
            analytic = analytic + segment_sum(np.sum(ge * de, axis=(1, 2)), lengths_to_offsets([3, 2, 4, 1]))
        np.testing.assert_allclose(analytic, fd, rtol=1e-5, atol=1e-6)
        # the per-term pieces used by the psi-gradient agree with the gradient
        pieces = energy.term_gradient_dot(node, edge, offsets, dn, de)
        np.testing.assert_allclose(np.sum(psi * pieces, axis=1), analytic, rtol=1e-10, atol=1e-10)


def test_values_known_answers():
    node = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    offsets = np.array([0, 3])
    words = WordDictionaryEnergy().fit([np.array([0, 1, 2]), np.array([1, 1, 1])], L)
    # ||onehot(0,1,2) - mu||_1 = 2 * (3 - 0.7 - 0.8 - 0.4)
    np.testing.assert_allclose(words.value(node, None, offsets, [[2.0]]), [2.0 * 2 * 1.1])
    uni = UnigramDictionaryEnergy().fit([np.array([0, 1, 2]), np.array([2, 2, 2])], L)
    np.testing.assert_allclose(uni.value(node, None, offsets, [[1.0]]), [np.abs(node.sum(0) - 1).sum()])
    z = np.linspace(-2, 3, 11)
    v, d = smoothed_hinge(z)
    np.testing.assert_allclose(v, np.where(z <= 0, 0.5 - z, np.where(z < 1, 0.5 * (1 - z) ** 2, 0)))
    np.testing.assert_allclose((smoothed_hinge(z + 1e-7)[0] - smoothed_hinge(z - 1e-7)[0]) / 2e-7, d, atol=1e-6)


def test_word_dictionary_unknown_length():
    e = WordDictionaryEnergy().fit([np.array([0, 1])], L)
    node, edge, offsets = _batch([2, 3])
    g, _ = e.gradient(node, edge, offsets, [[1.0], [1.0]])
    assert np.all(g[2:] == 0) and np.any(g[:2] != 0)  # length 3: no word, no energy
    assert e.value(node, edge, offsets, [[1.0], [1.0]])[1] == 0
    strict = WordDictionaryEnergy(unknown_length="error").fit([np.array([0, 1])], L)
    with pytest.raises(ValueError, match="sequence 1 has length 3"):
        strict.check_batch(offsets, L)


def test_bad_energy_input():
    with pytest.raises(ValueError, match="label columns"):
        SoftConstraintEnergy(np.ones((2, 4))).fit(None, L)
    with pytest.raises(ValueError, match="edge_coef must have shape"):
        SoftConstraintEnergy(np.ones((2, L)), np.ones((2, L))).fit(None, L)
    with pytest.raises(ValueError, match="NaN"):
        SoftConstraintEnergy(np.full((1, L), np.nan)).fit(None, L)
    with pytest.raises(ValueError, match=r"encoded labels in \[0, 2\]"):
        WordDictionaryEnergy().fit([np.array([0, 5])], L)
    with pytest.raises(ValueError, match=">= 0"):
        PoissonCountEnergy(counts=-np.ones((2, L))).fit(None, L)
    e = PoissonCountEnergy(counts=np.ones((4, L))).fit(None, L)
    node, edge, offsets = _batch([3])
    with pytest.raises(ValueError, match="sequence 0 has 3 positions but its counts have 4"):
        e.value(node, edge, offsets, [[1.0]])
    fitted = WordDictionaryEnergy().fit([np.array([0, 1])], L)
    with pytest.raises(ValueError, match="fitted for 3 labels"):
        fitted.check_batch(offsets, 4)


def test_random_fourier_mean_map():
    rng = np.random.RandomState(0)
    X = [rng.normal(size=(n, 4)) for n in (3, 5)]
    mm = RandomFourierMeanMap(n_components=50, gamma=0.5, random_state=0).fit(X)
    Z = mm.transform(X)
    assert Z.shape == (2, 50)
    np.testing.assert_allclose(Z[1], mm.sampler_.transform(X[1]).mean(axis=0))
    np.testing.assert_array_equal(Z, RandomFourierMeanMap(n_components=50, gamma=0.5, random_state=0).fit_transform(X))
    with pytest.raises(ValueError, match="5 features"):
        mm.transform([rng.normal(size=(2, 5))])


def test_mean_map_default_bandwidth_scales_with_the_data():
    from sklearn_struct.energies import RandomFourierMeanMap

    rng = np.random.RandomState(0)
    letters = [rng.randint(2, size=(5, 128)).astype(float) for _ in range(40)]
    def mean_cross_kernel(phi):  # approximate kernel between the mean maps of different sequences
        K = phi @ phi.T
        return (K.sum() - np.trace(K)) / (len(phi) * (len(phi) - 1))

    phi = RandomFourierMeanMap(n_components=200, random_state=0).fit_transform(letters)
    assert phi.shape == (40, 200) and np.isfinite(phi).all()
    fixed = RandomFourierMeanMap(n_components=200, gamma=1.0, random_state=0).fit_transform(letters)
    # gamma=1 on 128 binary pixels: exp(-32) between typical letters, the kernel vanishes
    assert mean_cross_kernel(fixed) < 0.01 < 0.05 < mean_cross_kernel(phi)


def test_poisson_below_floor_is_a_convex_taylor_continuation():
    counts = np.array([[3.0, 0.0, np.nan], [1.0, 2.0, 5.0]])
    e = PoissonCountEnergy(counts=counts, rate=10.0, floor=0.2).fit(None, L)
    off, psi = np.array([0, 2]), [[0.5]]

    def value(mu):
        return e.value(mu, None, off, psi)[0]

    # above the floor: the plain negative log-likelihood
    mu = np.array([[0.5, 0.3, 0.2], [0.3, 0.3, 0.4]])
    obs = ~np.isnan(counts)
    y = np.nan_to_num(counts)
    lam = 10.0 * mu
    from scipy.special import gammaln
    exact = 0.5 * np.sum(np.where(obs, lam - y * np.log(lam) + gammaln(y + 1), 0.0))
    np.testing.assert_allclose(value(mu), exact)
    # below it (and at 0): finite, gradient = finite differences, continuous value and slope at the floor
    rng = np.random.RandomState(0)
    for mu in (np.array([[0.05, 0.0, 0.95], [0.0, 0.15, 0.85]]), np.array([[0.2, 0.1, 0.7], [0.2, 0.2, 0.6]])):
        g, _ = e.gradient(mu, None, off, psi)
        assert np.all(np.isfinite(g)) and np.isfinite(value(mu))
        for _ in range(3):
            d = rng.normal(size=mu.shape)
            h = 1e-7
            np.testing.assert_allclose(np.sum(g * d), (value(mu + h * d) - value(mu - h * d)) / (2 * h), rtol=1e-6)
    # at mu = 0 the slope is rate - 2 y / floor; the continuation never exceeds the true -log
    g0, _ = e.gradient(np.zeros((2, L)), None, off, psi)
    np.testing.assert_allclose(g0[1], 0.5 * (10.0 - 2 * np.array([1.0, 2.0, 5.0]) / 0.2))
    low = np.array([[0.1, 0.1, 0.8], [0.05, 0.1, 0.85]])
    plain = PoissonCountEnergy(counts=counts, rate=10.0, floor=1e-300).fit(None, L)
    assert e.value(low, None, off, psi)[0] < plain.value(low, None, off, psi)[0]
    # convex along any segment, across the floor
    a, b = np.full((2, L), 0.01), np.full((2, L), 0.6)
    ts = np.linspace(0, 1, 21)
    vals = np.array([value((1 - s) * a + s * b) for s in ts])
    assert np.all(vals[1:-1] <= 0.5 * (vals[:-2] + vals[2:]) + 1e-12)


def test_poisson_bad_floor():
    with pytest.raises(ValueError, match="floor must be a positive number"):
        PoissonCountEnergy(counts=np.ones((2, L)), floor=0.0).fit(None, L)
