"""Non-local inference on trees (sklearn_struct._bethe_tree) against brute force."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from sklearn_struct._bethe_inference import bethe_inference
from sklearn_struct._bethe_tree import bethe_inference_tree
from sklearn_struct.constraints import AtLeastTokens, AtMostTokens, ConstraintEnergy, LinearConstraint
from sklearn_struct.energies import SoftConstraintEnergy

L = 3


def _random_tree(n, rng):
    return np.array([[rng.randint(0, v), v] for v in range(1, n)])


def _brute_force(unary, edges, pairwise, energy, psi):
    """Marginals minimising eq. 2 on a tree, over all joint distributions (softmax-parametrised)."""
    n = unary.shape[0]
    Y = np.array(list(itertools.product(range(L), repeat=n)))
    Sn = np.zeros((len(Y), n, L))
    Se = np.zeros((len(Y), len(edges), L, L))
    for k, y in enumerate(Y):
        Sn[k, np.arange(n), y] = 1
        Se[k, np.arange(len(edges)), y[edges[:, 0]], y[edges[:, 1]]] = 1
    score = (Sn * unary).sum((1, 2)) + (Se * pairwise).sum((1, 2, 3))
    off, psi = np.array([0, n]), np.atleast_2d(psi)

    def f(z):
        p = np.exp(z - z.max())
        p /= p.sum()
        logp = np.log(np.maximum(p, 1e-300))
        mn, me = np.tensordot(p, Sn, 1), np.tensordot(p, Se, 1)
        val = p @ logp - p @ score + energy.value(mn, me, off, psi)[0]
        gn, ge = energy.gradient(mn, me, off, psi)
        gp = logp + 1 - score + (Sn * gn).sum((1, 2))
        if ge is not None:
            gp = gp + (Se * ge).sum((1, 2, 3))
        return val, p * (gp - p @ gp)

    res = minimize(f, score.copy(), jac=True, method="L-BFGS-B", options=dict(maxiter=5000, ftol=1e-15, gtol=1e-11))
    p = np.exp(res.x - res.x.max())
    p /= p.sum()
    return np.tensordot(p, Sn, 1), Y[np.argmax(score)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tree_inference_matches_brute_force(seed):
    rng = np.random.RandomState(seed)
    n = 5
    edges = _random_tree(n, rng)
    unary, pairwise = rng.normal(size=(n, L)), rng.normal(size=(len(edges), L, L))
    classes = np.arange(L)
    rules = [AtMostTokens(0, 1), AtLeastTokens(2, 2), LinearConstraint(edge={(1, 1): 1.0}, sense="at_most", bound=0)]
    energy = ConstraintEnergy(rules).fit(None, L, classes)
    psi = rng.uniform(0.5, 2.0, size=energy.n_weights)
    ref, _ = _brute_force(unary, edges, pairwise, energy, psi)
    res = bethe_inference_tree(unary, edges, pairwise, energy, psi, max_iter=1500, tol=1e-10)
    np.testing.assert_allclose(res.node, ref, atol=2e-4)
    assert np.abs(res.node - bethe_inference_tree(unary, edges, pairwise, energy, 0.0).node).max() > 1e-3


def test_map_without_energy_is_the_brute_force_map():
    rng = np.random.RandomState(3)
    edges = _random_tree(6, rng)
    unary, pairwise = rng.normal(size=(6, L)), rng.normal(size=(L, L))
    energy = SoftConstraintEnergy(node_coef=np.ones((1, L))).fit(None, L)
    _, best = _brute_force(unary, edges, np.broadcast_to(pairwise, (5, L, L)), energy, [0.0])
    res = bethe_inference_tree(unary, edges, pairwise, energy, 0.0)
    np.testing.assert_array_equal(res.labels, best)


def test_a_chain_given_as_a_tree_runs_the_chain_algorithm():
    rng = np.random.RandomState(4)
    n = 7
    unary, trans = rng.normal(size=(n, L)), rng.normal(size=(L, L))
    energy = SoftConstraintEnergy(node_coef=rng.normal(size=(2, L)), edge_coef=rng.normal(size=(2, L, L)),
                                  offset=1.0).fit(None, L)
    psi = np.array([1.0, 2.0])
    for t in (1, 5):  # the same RDA iterates, step for step
        chain = bethe_inference(unary, trans, np.array([0, n]), energy, psi, max_iter=t, tol=0)
        tree = bethe_inference_tree(unary, np.c_[np.arange(n - 1), np.arange(1, n)], trans, energy, psi,
                                    max_iter=t, tol=0)
        np.testing.assert_allclose(tree.node, chain.node, atol=1e-9)
        np.testing.assert_allclose(tree.edge, chain.edge, atol=1e-9)


def test_not_a_tree():
    energy = SoftConstraintEnergy(node_coef=np.ones((1, L))).fit(None, L)
    with pytest.raises(ValueError, match="has 3 edges"):
        bethe_inference_tree(np.zeros((4, L)), [[0, 1], [1, 2]], np.zeros((L, L)), energy)
    with pytest.raises(ValueError, match="2 connected components"):
        bethe_inference_tree(np.zeros((4, L)), [[0, 1], [1, 2], [0, 2]], np.zeros((L, L)), energy)


def test_estimator_infer_tree_matches_brute_force():
    from sklearn_struct import NonLocalCRF

    rng = np.random.RandomState(5)
    X = [rng.normal(size=(6, 2)) for _ in range(30)]
    y = [(x[:, 0] > 0).astype(int) + (x[:, 1] > 1) for x in X]
    model = NonLocalCRF([AtMostTokens(2, 1), AtLeastTokens(0, 1)], psi_init=2.0, n_epochs=0,
                        inference_max_iter=1500, inference_tol=1e-10).fit(X, y)
    x = rng.normal(size=(5, 2))
    edges = _random_tree(5, rng)
    res = model.infer_tree(x, edges)
    unary = x @ model.coef_ + model.intercept_
    pair = np.broadcast_to(model.transition_, (4, L, L))
    ref, _ = _brute_force(unary, edges, pair, model.energy_, model.psi_)
    np.testing.assert_allclose(res.marginals, ref, atol=2e-4)
    assert set(res.labels) <= set(model.classes_)
    base = NonLocalCRF().fit(X, y)
    plain = base.infer_tree(x, edges)  # no energy: exact BP and max-product
    ref0, best = _brute_force(x @ base.coef_ + base.intercept_, edges, np.broadcast_to(base.transition_, (4, L, L)),
                              SoftConstraintEnergy(node_coef=np.ones((1, L))).fit(None, L), [0.0])
    np.testing.assert_allclose(plain.marginals, ref0, atol=1e-5)
    np.testing.assert_array_equal(plain.labels, best)
