"""The DLPW benchmarks' baselines (``benchmarks/_lib/dlpw_baselines.py``): Pegasos with an exact LP, 1-slack
cutting plane, label powerset and the chain ensemble, on the DLPW model code."""

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from sklearn_struct.datasets import make_multilabel_pairwise
from sklearn_struct.dlpw import _augment
from sklearn_struct.oracles.lp import make_lp_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _lib.dlpw_baselines import (_project, _solve_qp, ChainEnsemble, cutting_plane, dlpw, exact_objective,  # noqa: E402
                                 LabelPowerset, pegasos_lp)


def test_qp_solver_matches_slsqp():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 20))
    b = rng.uniform(0.5, 1.5, size=6)
    for C, method in [(0.1, "fista"), (10.0, "fista"), (0.1, "highs"), (10.0, "highs")]:
        alpha = _solve_qp(A @ A.T, b, C, np.zeros(6), method=method, max_iter=20000, tol=1e-14)
        ref = minimize(lambda a: 0.5 * a @ A @ A.T @ a - b @ a, np.zeros(6), jac=lambda a: A @ A.T @ a - b,
                       bounds=[(0, None)] * 6, constraints=[{"type": "ineq", "fun": lambda a: C - a.sum()}],
                       method="SLSQP", options={"ftol": 1e-14, "maxiter": 1000})
        val = lambda a: b @ a - 0.5 * a @ A @ A.T @ a  # noqa: E731
        assert val(alpha) == pytest.approx(val(ref.x), rel=1e-7, abs=1e-10)
        assert np.all(alpha >= 0) and alpha.sum() <= C + 1e-12
    v = rng.normal(size=8)
    p = _project(v, 0.5)
    assert p.sum() <= 0.5 + 1e-12 and np.all(p >= 0)
    # optimality of the projection: no feasible point nearer among random candidates
    cand = np.array([_project(rng.normal(size=8), 0.5) for _ in range(200)])
    assert np.all(np.linalg.norm(cand - v, axis=1) >= np.linalg.norm(p - v) - 1e-12)


def test_three_solvers_reach_the_same_eq7_optimum():
    X, Y = make_multilabel_pairwise(40, n_features=3, n_labels=4, edge_strength=2.0, noise=0.3, random_state=0)
    Xa = _augment(X, True)
    graph = make_lp_graph(np.stack(np.triu_indices(4, 1), 1), np.full(4, 2))
    C = 5.0
    cp_model, hist = cutting_plane(Xa, Y, graph, C, max_iter=300, eps=1e-3)
    final = exact_objective(cp_model, Xa, Y, C, method="highs")
    assert hist[-1, 2] == pytest.approx(final, rel=1e-6)  # its own oracle values are exact eq. 7 values
    lower = hist[-1, 4]  # working-set QP optimum: a lower bound on the optimum
    assert np.all(np.diff(hist[1:, 4]) >= -1e-9 * lower) and np.all(hist[:, 2] >= lower * (1 - 1e-9))
    assert final <= lower * 1.005
    peg, _ = pegasos_lp(Xa, Y, graph, C, max_epochs=30)
    ours, _ = dlpw(Xa, Y, graph, C, max_epochs=300)
    for model, slack in ((peg, 1.08), (ours, 1.01)):
        value = exact_objective(model, Xa, Y, C)
        assert value == pytest.approx(exact_objective(model, Xa, Y, C, method="highs"), rel=1e-6)
        assert lower * (1 - 1e-9) <= value <= slack * lower


def test_label_powerset_and_chain_ensemble():
    from sklearn.linear_model import LogisticRegression

    X, Y = make_multilabel_pairwise(150, n_features=4, n_labels=4, noise=0.3, random_state=0)
    lp = LabelPowerset(C=0.5).fit(X[:100], Y[:100])
    sets, codes = np.unique(Y[:100], axis=0, return_inverse=True)
    ref = LogisticRegression(C=0.5, max_iter=2000).fit(X[:100], codes.ravel())
    np.testing.assert_array_equal(lp.predict(X[100:]), sets[ref.predict(X[100:])])
    ce = ChainEnsemble(C=0.5, n_chains=3).fit(X[:100], Y[:100])
    proba = np.mean([c.predict_proba(X[100:]) for c in ce.chains_], axis=0)
    np.testing.assert_array_equal(ce.predict(X[100:]), (proba >= 0.5).astype(int))
    assert len({tuple(c.order_) for c in ce.chains_}) > 1  # random orders
