"""Bad input to the LP-MAP, DLPW and matching oracles: named ValueErrors/TypeErrors, never numba errors or NaN.

Each case here reached numba (TypingError, garbage or NaN) or raised an unnamed error before the
public entry points validated their arguments. The ``check_input=False`` fast path used by the
estimators must give exactly the validated path's results.
"""

import numpy as np
import pytest

from sklearn_struct.oracles import lp, lp_learning, matching


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    graph = lp.make_lp_graph([[0, 1], [1, 2], [0, 2]], [2, 3, 2])
    return graph, rng.normal(size=(2, 3, 3)), rng.normal(size=(3, 3, 3)), np.array([[1, 2, 0], [0, 1, 1]])


def test_lp_functions_reject_bad_graph_labels_and_messages(problem):
    graph, unary, pw, Y = problem
    with pytest.raises(TypeError, match="graph must be an LPGraph"):
        lp.lp_map(None, unary, pw)
    bad = lp.LPGraph(graph.edges + 7, graph.n_states, graph.indptr, graph.slots)
    with pytest.raises(ValueError, match=r"graph: edge 0 .* outside"):
        lp.dual_values(bad, unary, pw)
    with pytest.raises(ValueError, match="graph: slots"):
        lp.decode(lp.LPGraph(graph.edges, graph.n_states, graph.indptr, graph.slots[::-1].copy()), unary)
    over = Y.copy()
    over[0, 0] = 2  # node 0 has 2 states
    with pytest.raises(ValueError, match=r"Y\[0, 0\] = 2 is out of range: node 0 has 2 states"):
        lp.primal_values(graph, unary, pw, over)
    with pytest.raises(ValueError, match=r"Y\[\(1, 2\)\] = -1"):
        lp.icm(graph, unary, pw, np.r_[Y[:1], [[0, 1, -1]]])
    delta = np.zeros((2, 6, 3))
    delta[1, 5, 2] = np.nan
    with pytest.raises(ValueError, match=r"delta contains NaN at index \(1, 5, 2\)"):
        lp.star_passes(graph, unary, pw, delta)
    with pytest.raises(ValueError, match="unary contains NaN"):
        lp.max_marginals(graph, np.where(unary > 1, np.nan, unary), pw, np.zeros((2, 6, 3)))
    with pytest.raises(ValueError, match="pairwise holds 1e.308 .* overflow"):
        lp.lp_map(graph, unary, np.full_like(pw, 1e308))
    with pytest.raises(ValueError, match="make_lp_graph|n_states"):
        lp.make_lp_graph([[0, 1]], [2, 0])
    with pytest.raises(ValueError, match="solver"):
        lp.LocalPolytopeLP(graph, solver="simplex")
    with pytest.raises(TypeError, match="max_iter"):
        lp.lp_map(graph, unary, pw, max_iter=2.5)


def test_lp_fast_path_matches_validated_path(problem):
    graph, unary, pw, Y = problem
    checked = lp.lp_map(graph, unary, pw)
    fast = lp.lp_map(graph, unary, pw, check_input=False)
    np.testing.assert_array_equal(checked.labels, fast.labels)
    np.testing.assert_array_equal(checked.dual, fast.dual)
    for f in (lp.conditional_scores, lp.primal_values):
        np.testing.assert_array_equal(f(graph, unary, pw, Y), f(graph, unary, pw, Y, check_input=False))
    value, mu_n, _ = lp.local_polytope_lp(graph, unary[0], pw)
    assert np.isclose(value, lp.lp_map(graph, unary[:1], pw, max_iter=5000, tol=1e-10).dual[0], atol=1e-6) \
        or not checked.certified[0]
    np.testing.assert_allclose(mu_n.sum(axis=1), 1.0)


def test_dlpw_epoch_is_checked_before_numba(problem):
    graph, _, _, Y = problem
    kw = {"order": np.array([1, 0]), "t0": 0, "C": 1.0, "n_inner": 2, "loss_weight": 1 / 3,
          "Xp": np.array([0, 2, 3]), "Xi": np.array([0, 2, 1]), "Xd": np.array([1.0, 2.0, 1.0]), "Y": Y,
          "V": np.zeros((3, 9)), "P": np.zeros((3, 3, 3)), "state": np.array([1.0, 0.0]), "edges": graph.edges,
          "n_states": graph.n_states, "indptr": graph.indptr, "slots": graph.slots, "delta": np.zeros((2, 6, 3))}
    assert lp_learning.dlpw_epoch(**kw) == 2
    assert np.all(np.isfinite(kw["V"])) and kw["state"][0] > 0
    for arg, value, msg in [("order", np.array([0, 5]), r"order\[1\] = 5"), ("Xi", np.array([0, 9, 1]), r"Xi\[1\]"),
                            ("Xd", np.array([1.0, np.nan, 1.0]), "Xd contains NaN at index 1"),
                            ("V", None, "V must be a float64 ndarray"), ("Xp", np.array([0, 3, 2]), "Xp"),
                            ("delta", np.zeros((2, 6, 2)), "delta must be"), ("C", 0.0, "C must be in")]:
        with pytest.raises((ValueError, TypeError), match=msg):
            lp_learning.dlpw_epoch(**{**kw, arg: value})
    with pytest.raises(ValueError, match="xv holds 1e.308"):
        lp_learning.pegasos_step(2, 1.0, np.array([0]), np.array([1e308]), np.zeros(9), np.zeros((3, 3, 3)),
                                 np.zeros((3, 9)), np.zeros((3, 3, 3)), np.array([1.0, 0.0]))


def test_matching_functions_name_their_arguments():
    s = np.random.default_rng(1).normal(size=(3, 4))
    with pytest.raises(ValueError, match=r"scores contains NaN at index \(2, 3\)"):
        matching.log_permanent(np.where(np.arange(12).reshape(3, 4) == 11, np.nan, s))
    with pytest.raises(ValueError, match=r"scores must be a numeric array"):
        matching.exact_marginals("abc")
    with pytest.raises(ValueError, match="scores holds 1e.308"):
        matching.fw_bethe_marginals(np.full((3, 4), 1e308))
    with pytest.raises(ValueError, match="costs must have 1 <= n_left <= n_right"):
        matching.assignment(s.T)  # used to return uninitialised entries
    with pytest.raises(ValueError, match=r"costs_list\[1\] contains NaN"):
        matching.batched_assignment([s, np.full((2, 2), np.nan)])
    with pytest.raises(TypeError, match="n_samples"):
        matching.sample_matchings(s, 2.5)
    with pytest.raises(ValueError, match=r"tau\[0, 0\] = -0.1 is outside \[0, 1\]"):
        matching.bethe_free_energy(np.r_[[[-0.1, 0.4, 0.4, 0.3]], np.full((2, 4), 0.25)], s)
    with pytest.raises(ValueError, match="tau0"):
        matching.fw_bethe_marginals(s, tau0=np.eye(3, 4))
    with pytest.raises(ValueError, match="max_iter"):
        matching.bp_matching_marginals(s, max_iter=0)  # used to return an uninitialised array
    with pytest.raises(ValueError, match=r"messages\[0\]"):
        matching.bp_matching_marginals(s, messages=(np.zeros((2, 2)), np.zeros((3, 4))))
    y = matching.assignment(s)
    np.testing.assert_array_equal(y, matching.assignment(s, check_input=False))
    assert len(set(y.tolist())) == 3
