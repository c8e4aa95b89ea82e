"""Non-local inference (Algorithms 1, 4, 5), Algorithm 3 and the NonLocalCRF estimator.

The reference for inference is a brute-force minimiser of eq. 2 on tiny chains: the
objective over *all joint distributions* p of the chain, -H(p) - <theta, mu(p)> + L(mu(p)),
has the same minimising marginals as eq. 2 (on a chain the maximum-entropy distribution
with given marginals has entropy H_B), and is smooth in a softmax parametrisation of p.
"""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import clone

from sklearn_struct import NonLocalCRF
from sklearn_struct._bethe_inference import bethe_inference, nonlocal_objective
from sklearn_struct.energies import (
    PoissonCountEnergy,
    RandomFourierMeanMap,
    SoftConstraintEnergy,
    UnigramDictionaryEnergy,
    WordDictionaryEnergy,
)
from sklearn_struct._psi_learning import _surrogate_gradient
from sklearn_struct.oracles.chain import forward_backward
from sklearn_struct.utils.packing import edge_offsets, lengths_to_offsets

L = 3


def _brute_force(unary, trans, energy, psi, index):
    """Marginals minimising eq. 2 for one chain, by optimising over joint distributions."""
    n = unary.shape[0]
    Y = np.array(list(itertools.product(range(L), repeat=n)))
    Sn = np.zeros((len(Y), n, L))
    Se = np.zeros((len(Y), max(n - 1, 0), L, L))
    for k, y in enumerate(Y):
        Sn[k, np.arange(n), y] = 1
        Se[k, np.arange(n - 1), y[:-1], y[1:]] = 1
    score = (Sn * unary).sum((1, 2)) + (Se * trans).sum((1, 2, 3))
    off, psi, idx = np.array([0, n]), np.atleast_2d(psi), np.array([index])

    def f(z):
        p = np.exp(z - z.max())
        p /= p.sum()
        logp = np.log(np.maximum(p, 1e-300))
        mn, me = np.tensordot(p, Sn, 1), np.tensordot(p, Se, 1)
        val = p @ logp - p @ score + energy.value(mn, me, off, psi, index=idx)[0]
        gn, ge = energy.gradient(mn, me, off, psi, index=idx)
        gp = logp + 1 - score + (Sn * gn).sum((1, 2))
        if ge is not None:
            gp = gp + (Se * ge).sum((1, 2, 3))
        return val, p * (gp - p @ gp)

    res = minimize(f, score.copy(), jac=True, method="L-BFGS-B",
                   options=dict(maxiter=5000, ftol=1e-15, gtol=1e-11))
    p = np.exp(res.x - res.x.max())
    p /= p.sum()
    return np.tensordot(p, Sn, 1)


def _problem(kind, seed=0):
    rng = np.random.RandomState(seed)
    lengths = [3, 2, 1]
    offsets = lengths_to_offsets(lengths)
    unary = rng.normal(size=(offsets[-1], L))
    trans = rng.normal(size=(L, L))
    if kind == "soft":
        energy = SoftConstraintEnergy(rng.normal(size=(2, L)), offset=[2.5, 2.0])
        psi = np.array([[1.0, 2.0], [0.5, 1.0], [1.0, 1.0]])
    elif kind == "soft_edges":
        energy = SoftConstraintEnergy(rng.normal(size=(2, L)), 0.5 * rng.normal(size=(2, L, L)), offset=[3.0, 2.5])
        psi = np.array([[1.0, 2.0], [0.5, 1.0], [1.0, 1.0]])
    else:  # Poisson counts drawn from a model near theta, as in a CGM
        _, mu, _ = forward_backward(unary + 0.3 * rng.normal(size=unary.shape), trans, offsets, edge_marginals="none")
        counts = rng.poisson(20.0 * mu).astype(float)
        energy = PoissonCountEnergy(counts=[counts[a:b] for a, b in zip(offsets[:-1], offsets[1:])], rate=20.0)
        psi = np.full((3, 1), 0.05)
    return unary, trans, offsets, energy.fit(None, L), psi


@pytest.fixture(scope="module")
def references():
    out = {}
    for kind in ("soft", "soft_edges", "poisson"):
        unary, trans, offsets, energy, psi = _problem(kind)
        ref = np.concatenate([
            _brute_force(unary[a:b], trans, energy, psi[s], s)
            for s, (a, b) in enumerate(zip(offsets[:-1], offsets[1:]))
        ])
        out[kind] = (unary, trans, offsets, energy, psi, ref)
    return out


@pytest.mark.parametrize("kind", ["soft", "soft_edges", "poisson"])
@pytest.mark.parametrize("method,kwargs", [
    ("rda", dict(max_iter=1500)),
    ("accelerated", dict(max_iter=1500)),
    ("md", dict(max_iter=1500, eta=0.03)),
])
def test_inference_matches_brute_force(references, kind, method, kwargs):
    unary, trans, offsets, energy, psi, ref = references[kind]
    if method == "accelerated":
        # the energy's own bound (sum psi_j ||a_j||^2) is safe but slow; the Poisson gradient has none
        kwargs = dict(kwargs, lipschitz=1.0)
    res = bethe_inference(unary, trans, offsets, energy, psi, method=method, tol=1e-10, **kwargs)
    np.testing.assert_allclose(res.node, ref, atol=2e-4)
    # the objective at our marginals is the brute-force optimum
    ours = nonlocal_objective(res.node, res.edge, unary, trans, offsets, energy, psi)
    _, mu0, e0 = forward_backward(unary, trans, offsets, edge_marginals="per_position")
    base = nonlocal_objective(mu0, e0, unary, trans, offsets, energy, psi)
    assert np.all(ours <= base + 1e-12)
    if method != "accelerated":  # last iterate: mu = ORACLE(theta_t) exactly
        _, node, edge = forward_backward(res.dual_unary, res.dual_transition, offsets, edge_marginals="per_position")
        np.testing.assert_allclose(node, res.node, atol=1e-12)
        np.testing.assert_allclose(edge, res.edge, atol=1e-12)


def test_rda_default_converges_in_few_iterations(references):
    unary, trans, offsets, energy, psi, ref = references["soft"]
    res = bethe_inference(unary, trans, offsets, energy, psi)  # defaults: 40 iterations, tol 1e-4
    assert res.n_iter.max() <= 40 and res.converged.any()
    np.testing.assert_allclose(res.node, ref, atol=5e-3)


def test_primal_average_and_beta_converge(references):
    unary, trans, offsets, energy, psi, ref = references["soft"]
    avg = bethe_inference(unary, trans, offsets, energy, psi, average=True, max_iter=2000, tol=0)
    np.testing.assert_allclose(avg.node, ref, atol=5e-3)
    shrunk = bethe_inference(unary, trans, offsets, energy, psi, beta=1.0, max_iter=2000, tol=0)
    np.testing.assert_allclose(shrunk.node, ref, atol=5e-4)


def test_first_steps_follow_corrected_algorithms(references):
    unary, trans, offsets, energy, psi, _ = references["soft_edges"]
    _, mu0, e0 = forward_backward(unary, trans, offsets, edge_marginals="per_position")
    gn, ge = energy.gradient(mu0, e0, offsets, psi)
    # eq. 10 with beta, prox term centred on mu_0 (Algorithm 1's line): theta_1 = theta - g_1 / (1 + beta)
    res = bethe_inference(unary, trans, offsets, energy, psi, beta=2.0, max_iter=1, tol=0)
    np.testing.assert_allclose(res.dual_unary, unary - gn / 3.0)
    np.testing.assert_allclose(res.dual_transition, trans[None] - ge / 3.0)
    # centred on the uniform marginals (-H_B as the prox function), theta is shrunk too
    res = bethe_inference(unary, trans, offsets, energy, psi, beta=2.0, prox_center="uniform", max_iter=1, tol=0)
    np.testing.assert_allclose(res.dual_unary, (unary - gn) / 3.0)
    np.testing.assert_allclose(res.dual_transition, (trans[None] - ge) / 3.0)
    # Bethe-MD (sign corrected): theta_1 = (theta_0 + eta (theta - grad L(mu_0))) / (1 + eta)
    res = bethe_inference(unary, trans, offsets, energy, psi, method="md", eta=0.5, max_iter=1, tol=0)
    np.testing.assert_allclose(res.dual_unary, (unary + 0.5 * (unary - gn)) / 1.5)
    np.testing.assert_allclose(res.dual_transition, (trans[None] + 0.5 * (trans[None] - ge)) / 1.5)


def test_per_sequence_stopping_matches_single_runs(references):
    unary, trans, offsets, energy, psi, _ = references["soft_edges"]
    psi = psi.copy()
    psi[1] = 0.0  # no energy on sequence 1: converged after one step
    res = bethe_inference(unary, trans, offsets, energy, psi, max_iter=60, tol=1e-6)
    assert res.n_iter[1] == 1 and res.n_iter[0] > 1
    eoff = edge_offsets(offsets)
    for s in range(3):
        a, b = offsets[s], offsets[s + 1]
        alone = bethe_inference(unary[a:b], trans, np.array([0, b - a]), energy, psi[s:s + 1],
                                max_iter=60, tol=1e-6)
        assert alone.n_iter[0] == res.n_iter[s]
        np.testing.assert_allclose(alone.node, res.node[a:b], atol=1e-12)
        np.testing.assert_allclose(alone.edge, res.edge[eoff[s]:eoff[s + 1]], atol=1e-12)


@pytest.mark.parametrize("energy_kind", ["soft_edges", "words", "unigram"])
def test_psi_gradient_matches_finite_differences(energy_kind):
    rng = np.random.RandomState(3)
    lengths = [4, 3, 5]
    offsets = lengths_to_offsets(lengths)
    T = offsets[-1]
    unary, trans = rng.normal(size=(T, L)), rng.normal(size=(L, L))
    y = rng.randint(L, size=T)
    inner = np.ones(T, dtype=bool)
    inner[offsets[:-1]] = False
    e_from, e_to = y[np.flatnonzero(inner) - 1], y[np.flatnonzero(inner)]
    train = [y[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    if energy_kind == "soft_edges":
        energy = SoftConstraintEnergy(rng.normal(size=(2, L)), rng.normal(size=(2, L, L)), offset=[2.0, 1.0])
    elif energy_kind == "words":
        energy = WordDictionaryEnergy()
    else:
        energy = UnigramDictionaryEnergy()
    energy.fit(train, L)
    K = energy.n_weights
    psi = rng.uniform(0.5, 1.5, size=(3, K))
    mu = bethe_inference(unary, trans, offsets, energy, psi, max_iter=10)  # fixed mu_i (E-step)

    def loglik(p):
        return _surrogate_gradient(energy, mu.node, mu.edge, unary, trans, offsets, p, y, e_from, e_to).log_lik

    g = _surrogate_gradient(energy, mu.node, mu.edge, unary, trans, offsets, psi, y, e_from, e_to).g_psi
    h = 1e-6
    for k in range(K):
        step = np.zeros_like(psi)
        step[:, k] = h
        fd = (loglik(psi + step) - loglik(psi - step)) / (2 * h)
        np.testing.assert_allclose(g[:, k], fd, rtol=1e-5, atol=1e-7)
    assert np.any(np.abs(g) > 1e-3)


# ------------------------------------------------------------------------- estimator


def _dictionary_task(n=120, seed=0, noise=1.3):
    rng = np.random.RandomState(seed)
    words = [rng.randint(4, size=k) for k in (3, 3, 4, 4, 5, 5, 6, 6)]
    y = [words[i] for i in rng.randint(len(words), size=n)]
    X = [np.eye(4)[w] + noise * rng.normal(size=(len(w), 4)) for w in y]
    return X, y


@pytest.fixture(scope="module")
def dictionary_task():
    X, y = _dictionary_task(160)
    return X[:100], y[:100], X[100:], y[100:]


def test_word_dictionary_energy_improves_accuracy(dictionary_task):
    X, y, Xt, yt = dictionary_task
    base = NonLocalCRF(c2=0.1).fit(X, y)
    model = NonLocalCRF(WordDictionaryEnergy(), c2=0.1, n_epochs=3, random_state=0).fit(X, y)
    assert model.psi_.shape == (1,) and model.psi_[0] > 0
    assert model.score(Xt, yt) > base.score(Xt, yt) + 0.05
    assert model.inference_n_iter_.shape == (100,) and model.inference_n_iter_.max() <= 40
    info = model.infer(Xt, max_iter=3)
    assert info.n_iter.max() <= 3 and len(info.labels) == len(Xt)
    marg = model.predict_marginals(Xt)
    np.testing.assert_allclose(np.concatenate(marg).sum(axis=1), 1.0)
    # same random_state, same model
    again = NonLocalCRF(WordDictionaryEnergy(), c2=0.1, n_epochs=3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(again.psi_history_, model.psi_history_)
    assert clone(model).get_params()["energy"].unknown_length == "ignore"


def test_featurized_psi_and_learn_theta(dictionary_task):
    X, y, Xt, yt = dictionary_task
    model = NonLocalCRF(UnigramDictionaryEnergy(), c2=0.1, n_epochs=2, random_state=0, learn_theta=True,
                        psi_gradient="exact",
                        psi_featurizer=RandomFourierMeanMap(n_components=20, gamma=0.1)).fit(X, y)
    assert model.psi_coef_.shape == (20, 1) and model.n_psi_features_in_ == 20
    assert model.score(Xt, yt) > 0.5
    base = NonLocalCRF(c2=0.1).fit(X, y)
    assert not np.allclose(model.coef_, base.coef_)
    # explicit psi features override the featurizer, with their width checked
    phi = np.ones((len(X), 2))
    m2 = NonLocalCRF(UnigramDictionaryEnergy(), n_epochs=1, random_state=0).fit(X, y, psi_features=phi)
    assert m2.psi_coef_.shape == (2, 1)
    m2.predict(Xt, psi_features=np.ones((len(Xt), 2)))
    with pytest.raises(ValueError, match="3 columns, but 2 were seen"):
        m2.predict(Xt, psi_features=np.ones((len(Xt), 3)))
    with pytest.raises(ValueError, match="NaN"):
        m2.predict(Xt, psi_features=np.full((len(Xt), 2), np.nan))
    with pytest.raises(ValueError, match="pass psi_features"):
        m2.predict(Xt)


def test_algorithm3_and_exact_psi_gradients_agree_when_inference_converges(dictionary_task):
    # L^w inference converges (mu_i is a fixed point, Prop. 1), so m_i = mu_i and both forms
    # of the psi-gradient take the same steps; with learn_theta the theta steps agree too
    X, y, _, _ = dictionary_task
    for learn_theta in (False, True):
        fits = [NonLocalCRF(WordDictionaryEnergy(), c2=0.1, n_epochs=2, random_state=0, learn_theta=learn_theta,
                            inference_tol=1e-9, psi_gradient=form).fit(X, y) for form in ("algorithm3", "exact")]
        assert np.all(fits[0].inference_n_iter_ < 40)
        np.testing.assert_allclose(fits[0].psi_history_, fits[1].psi_history_, rtol=1e-6)
        np.testing.assert_allclose(fits[0].coef_, fits[1].coef_, rtol=1e-6, atol=1e-9)


# The three inference methods inside the estimator (RDA, MD, accelerated) are checked against each
# other's learned psi and marginals in tests/test_nonlocal_methods.py (a former test here only
# asserted psi >= 0, which the projection guarantees).


def test_bad_input():
    rng = np.random.RandomState(0)
    offsets = np.array([0, 3])
    unary, trans = rng.normal(size=(3, L)), np.zeros((L, L))
    energy = SoftConstraintEnergy(np.ones((2, L))).fit(None, L)
    for psi, msg in [(-1.0, ">= 0"), (np.nan, "NaN"), (np.ones(3), "2 weights"), (np.ones((2, 2)), "shape")]:
        with pytest.raises(ValueError, match=msg):
            bethe_inference(unary, trans, offsets, energy, psi)
    with pytest.raises(ValueError, match="label columns"):
        bethe_inference(rng.normal(size=(3, 4)), np.zeros((4, 4)), offsets, energy, 1.0)
    with pytest.raises(ValueError, match="method"):
        bethe_inference(unary, trans, offsets, energy, 1.0, method="newton")
    with pytest.raises(NotImplementedError, match="lipschitz"):
        bethe_inference(unary, trans, offsets, WordDictionaryEnergy().fit([np.array([0, 1, 2])], L), 1.0,
                        method="accelerated")
    X, y = _dictionary_task(20)
    with pytest.raises(ValueError, match="label columns"):
        NonLocalCRF(SoftConstraintEnergy(np.ones((1, 3)))).fit(X, y)
    with pytest.raises(ValueError, match="psi_init"):
        NonLocalCRF(WordDictionaryEnergy(), psi_init=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="psi_features must have shape"):
        NonLocalCRF(WordDictionaryEnergy(), n_epochs=1).fit(X, y, psi_features=np.ones((3, 2)))
    with pytest.raises(ValueError, match="energy"):
        NonLocalCRF(energy="words").fit(X, y)


def test_featurized_psi_learns_from_psi_init_zero(dictionary_task):
    """psi(x) = max(0, phi @ psi_coef + psi) starts at the kink when psi_init=0: the step must still move it
    (a clip mask of raw > 0 left every weight dead at zero, the model equal to its base CRF)."""
    X, y, Xt, yt = dictionary_task
    model = NonLocalCRF(WordDictionaryEnergy(), c2=0.1, n_epochs=3, psi_init=0.0, random_state=0).fit(
        X, y, psi_features=np.ones((len(X), 1)))
    psi = np.maximum(model.psi_coef_[0] + model.psi_, 0.0)
    assert psi[0] > 0
