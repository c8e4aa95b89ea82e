"""Accelerated Bethe-RDA's rate and agreement of the inference methods inside NonLocalCRF."""

import numpy as np
import pytest

from sklearn_struct import NonLocalCRF
from sklearn_struct._bethe_inference import bethe_inference, nonlocal_objective
from sklearn_struct.energies import SoftConstraintEnergy


def _soft_problem(seed=0, lengths=(6, 3, 9), L=3):
    rng = np.random.RandomState(seed)
    offsets = np.cumsum([0, *lengths]).astype(np.int64)
    unary = rng.normal(size=(offsets[-1], L))
    trans = rng.normal(scale=0.5, size=(L, L))
    energy = SoftConstraintEnergy(node_coef=rng.normal(size=(2, L)), edge_coef=rng.normal(size=(2, L, L)),
                                  offset=1.0).fit(None, L)
    psi = rng.uniform(0.5, 2.0, size=(len(lengths), 2))
    return unary, trans, offsets, energy, psi


def test_accelerated_default_meets_xiaos_bound():
    # With Lip = (energy's l2 constant) / sigma_n (Prop. 3), accelerated RDA guarantees
    # f(mu_t) - f* <= 4 Lip D / (t (t + 1)), D = -H_B(mu*) - min(-H_B) <= n log L.
    unary, trans, offsets, energy, psi = _soft_problem()
    ref = bethe_inference(unary, trans, offsets, energy, psi, max_iter=5000, tol=1e-9, gap_tol=1e-12)
    f_star = nonlocal_objective(ref.node, ref.edge, unary, trans, offsets, energy, psi)
    n = np.diff(offsets)
    lip = energy.lipschitz(offsets, psi) / (0.5 / (2.0 * n - 1) ** 2)
    D = n * np.log(unary.shape[1])
    gaps = []
    for t in (1, 2, 4, 8, 16, 64, 256):
        res = bethe_inference(unary, trans, offsets, energy, psi, method="accelerated", max_iter=t, tol=0)
        f = nonlocal_objective(res.node, res.edge, unary, trans, offsets, energy, psi)
        assert np.all(f - f_star >= -1e-9)  # f* is the minimum
        assert np.all(f - f_star <= 4 * lip * D / (t * (t + 1)) + 1e-9), t
        gaps.append(f - f_star)
    assert np.all(gaps[-1] < gaps[0])  # and it makes progress (slowly: the early steps are short)


@pytest.fixture(scope="module")
def one_segment_task():
    rng = np.random.RandomState(0)
    X, y = [], []
    for _ in range(60):
        lab = np.zeros(6, dtype=int)
        s = rng.randint(0, 4)
        lab[s : s + 2] = 1
        X.append(np.eye(2)[lab] + rng.normal(scale=1.0, size=(6, 2)))
        y.append(lab)
    return X, y


def test_methods_learn_the_same_psi_when_inference_converges(one_segment_task):
    # Algorithm 3's psi-step depends on inference only through mu_i, the unique minimiser of the
    # convex problem (2): RDA, MD and accelerated RDA, run to convergence, must take the same
    # steps. This replaces a test that only checked psi >= 0 (guaranteed by the projection).
    X, y = one_segment_task
    energy = SoftConstraintEnergy(node_coef=[[0.0, -1.0]], edge_coef=[[[0.0, 0.0], [0.0, 1.0]]], offset=-2.0)
    common = dict(c2=0.1, psi_holdout=2, psi_init=0.5, n_epochs=1, batch_size=20, learning_rate=2.0,
                  psi_gradient="exact", inference_max_iter=3000, inference_tol=1e-9, random_state=0)
    fits = {m: NonLocalCRF(energy, inference=m, lipschitz=(5.0 if m == "accelerated" else None),
                           eta=(0.5 if m == "md" else None), **common).fit(X, y) for m in ("rda", "md", "accelerated")}
    assert abs(fits["rda"].psi_[0] - 0.5) > 0.05  # psi moved: the comparison is not between constants
    for m in ("md", "accelerated"):
        np.testing.assert_allclose(fits[m].psi_history_, fits["rda"].psi_history_, rtol=1e-3, err_msg=m)
        # and their test-time marginals agree too
        for a, b in zip(fits[m].predict_marginals(X[:5]), fits["rda"].predict_marginals(X[:5])):
            np.testing.assert_allclose(a, b, atol=1e-3, err_msg=m)
