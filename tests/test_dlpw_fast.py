"""The fast DLPW epoch (oracles/_lp_fast.py): exact tree MAP against enumeration, the sparse step with its
lazy average against the dense Pegasos step over all labellings (sets_epoch), the forest schedule."""

import itertools

import numpy as np
import pytest

from sklearn_struct import DLPWClassifier
from sklearn_struct.datasets import make_multilabel_pairwise
from sklearn_struct.dlpw import _augment, _Model, objective_eq7
from sklearn_struct.oracles._lp_fast import _fast_epoch, _tree_hinge_batch, _tree_map, forest_schedule
from sklearn_struct.oracles.lp import make_lp_graph
from sklearn_struct.oracles.lp_learning import pegasos_step, sets_epoch

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _random_forest(rng, L):
    """Random forest on L nodes: each node after the first joins an earlier one, or starts a tree (1 in 4)."""
    edges = [sorted((int(rng.integers(0, i)), i)) for i in range(1, L) if rng.random() > 0.25]
    return np.array(edges, dtype=np.int64).reshape(-1, 2)


def _score(unary, P, edges, y):
    return sum(unary[i, y[i]] for i in range(len(y))) + sum(P[e, y[u], y[v]] for e, (u, v) in enumerate(edges))


def test_forest_schedule_orders_parents_first_and_rejects_cycles():
    rng = np.random.default_rng(0)
    for _ in range(20):
        L = int(rng.integers(1, 9))
        edges = _random_forest(rng, L)
        order, parent, pedge, side = forest_schedule(edges, L)
        assert sorted(order.tolist()) == list(range(L))
        pos = np.empty(L, dtype=int)
        pos[order] = np.arange(L)
        for i in range(L):
            if parent[i] >= 0:
                assert pos[parent[i]] < pos[i] and edges[pedge[i], side[i]] == i
                assert edges[pedge[i], 1 - side[i]] == parent[i]
        assert (parent >= 0).sum() == len(edges)
    assert forest_schedule(np.array([[0, 1], [1, 2], [0, 2]]), 3) is None
    assert forest_schedule(np.array([[0, 1], [0, 1]]), 2) is None


def test_tree_map_matches_enumeration():
    rng = np.random.default_rng(1)
    for _ in range(60):
        L = int(rng.integers(1, 7))
        n_states = rng.integers(1, 4, size=L).astype(np.int64)
        S = int(n_states.max())
        edges = _random_forest(rng, L)
        unary = rng.normal(size=(L, S))
        P = rng.normal(size=(len(edges), S, S))
        a = float(rng.uniform(0.1, 2.0))
        y = np.zeros(L, dtype=np.int64)
        value = _tree_map(unary, P, a, edges, n_states, *forest_schedule(edges, L), np.empty((L, S)),
                          np.zeros((L, S), dtype=np.int64), y)
        best = max(_score(unary, a * P, edges, lab) for lab in itertools.product(*[range(k) for k in n_states]))
        assert value == pytest.approx(best, abs=1e-10)
        assert _score(unary, a * P, edges, y) == pytest.approx(best, abs=1e-10)
        assert np.all(y < n_states)


def _problem(seed, n=15, L=4):
    X, Y = make_multilabel_pairwise(n, n_features=3, n_labels=L, random_state=seed)
    return _augment(X, True), np.ascontiguousarray(Y, dtype=np.int64)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tree_epoch_equals_dense_pegasos_over_all_labellings(seed):
    """On a tree, the fast epoch (exact DP, sparse steps, lazy average) takes the same steps as sets_epoch
    with the Hamming loss over all 2^L labellings (brute-force loss-augmented MAP, dense steps)."""
    L = 4
    Xa, Y = _problem(seed, L=L)
    edges = np.array([[0, 1], [1, 2], [1, 3]], dtype=np.int64)
    g = make_lp_graph(edges, np.full(L, 2))
    sets = np.array(list(itertools.product([0, 1], repeat=L)), dtype=np.int64)
    target = np.array([int("".join(map(str, row)), 2) for row in Y], dtype=np.int64)
    order = np.random.default_rng(seed).permutation(len(Y)).astype(np.int64)
    fast, ref = _Model(g, Xa.shape[1]), _Model(g, Xa.shape[1])
    C = 3.0 if seed else 1e-3  # large: the projection binds
    t_fast = t_ref = 0
    if seed == 2:  # a scale about to fall below 1e-8: folded into the weights during the epoch
        rng = np.random.default_rng(seed)
        V0, P0 = rng.normal(size=fast.V.shape), rng.normal(size=fast.P.shape)
        for m in (fast, ref):
            m.V[:], m.P[:], m.state[0] = V0, P0, 1.1e-8
            m.refresh_norm()
        t_fast = t_ref = 20
    for _ in range(3):
        sf = (np.zeros_like(fast.V), np.zeros_like(fast.P))
        sr = (np.zeros_like(ref.V), np.zeros_like(ref.P))
        t_fast = _fast_epoch(order, t_fast, C, 1, 1 / L, Xa.indptr, Xa.indices, Xa.data, Y, fast.V, fast.P,
                             fast.state, g.edges, g.n_states, g.indptr, g.slots, np.zeros((len(Y), 0, 2)),
                             *forest_schedule(edges, L), *sf)
        t_ref = sets_epoch(order, t_ref, C, "hamming", Xa.indptr, Xa.indices, Xa.data, target, sets, ref.V, ref.P,
                           ref.state, edges, g.n_states, average=sr)
        assert t_fast == t_ref
        assert seed != 2 or min(fast.state[0], ref.state[0]) > 1e-6  # both folded
        for got, want in zip(fast.weights(), ref.weights()):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        for got, want in zip(sf, sr):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert np.abs(fast.V).sum() > 0


def test_tree_hinge_is_the_exact_loss_augmented_lp():
    """The tree objective (eq. 7 by DP) equals eq. 7 by star updates to convergence (the LP is tight on trees)."""
    Xa, Y = _problem(3, n=20, L=5)
    edges = np.array([[0, 1], [1, 2], [2, 3], [2, 4]], dtype=np.int64)
    g = make_lp_graph(edges, np.full(5, 2))
    rng = np.random.default_rng(3)
    model = _Model(g, Xa.shape[1])
    model.V[:], model.P[:] = rng.normal(size=model.V.shape), rng.normal(size=model.P.shape)
    model.refresh_norm()
    hinge = np.empty(len(Y))
    W, P = model.weights()
    _tree_hinge_batch(Xa.indptr, Xa.indices, Xa.data, W, P, Y, 0.2, g.n_states, edges, *forest_schedule(edges, 5),
                      hinge)
    ref = objective_eq7(model, Xa, Y, np.zeros((len(Y), 2 * len(edges), 2)), 1.0, 0.2, tol=1e-12)
    assert 0.5 * model.sq_norm + np.mean(hinge) == pytest.approx(ref, rel=1e-7)
    assert np.all(hinge >= -1e-12)


def test_tree_fit_stores_no_messages_and_reports_the_exact_objective():
    X, Y = make_multilabel_pairwise(120, n_features=4, n_labels=5, random_state=0)
    clf = DLPWClassifier(edges="tree", C=0.05, max_epochs=8, tol=0, track_objective=True).fit(X, Y)
    curve = clf.objective_curve_
    np.testing.assert_array_equal(curve[:, 2], curve[:, 3])  # the bound is eq. 7 itself on a tree
    assert curve[-1, 2] < curve[0, 2]
    loopy = DLPWClassifier(edges=[[0, 1], [1, 2], [0, 2]], C=0.05, max_epochs=3, tol=0).fit(X, Y)
    assert clf._forest is not None and loopy._forest is None


@pytest.mark.parametrize("edge_x", [False, True])
def test_sets_epoch_sparse_steps_equal_dense_pegasos_steps(edge_x):
    """sets_epoch (sparse steps, lazy average) against the same choices stepped by the dense pegasos_step."""
    L, S = 3, 2
    Xa, Y = _problem(5, n=12, L=L)
    edges = np.array([[0, 1], [1, 2], [0, 2]], dtype=np.int64)
    E = len(edges)
    sets, target = np.unique(Y, axis=0, return_inverse=True)
    target = target.ravel().astype(np.int64)
    cols = L * S + (E * S * S if edge_x else 0)
    V, P, state = np.zeros((Xa.shape[1], cols)), np.zeros((E, S, S)), np.array([1.0, 0.0])
    sums = (np.zeros_like(V), np.zeros_like(P))
    order = np.arange(len(Y), dtype=np.int64)
    C = 2.0
    sets_epoch(order, 0, C, "hamming", Xa.indptr, Xa.indices, Xa.data, target, sets, V, P, state, edges,
               np.full(L, 2), average=sums)
    Vr, Pr, sr = np.zeros_like(V), np.zeros_like(P), np.array([1.0, 0.0])
    mean_V, mean_P = np.zeros_like(V), np.zeros_like(P)
    for t, m in enumerate(order, start=1):
        x = Xa[m].toarray().ravel()
        w, pw = sr[0] * Vr, sr[0] * Pr
        score = []
        for k, lab in enumerate(sets):
            sc = sum((x @ w[:, i * S + lab[i]]) for i in range(L))
            for e, (u, v) in enumerate(edges):
                sc += pw[e, lab[u], lab[v]] + (x @ w[:, L * S + (e * S + lab[u]) * S + lab[v]] if edge_x else 0.0)
            score.append(sc + np.mean(lab != sets[target[m]]))
        k, y = int(np.argmax(score)), sets[target[m]]
        node_g, edge_g = np.zeros(cols), np.zeros((E, S, S))
        if k != target[m]:
            for i in range(L):
                node_g[i * S + sets[k, i]] += 1.0
                node_g[i * S + y[i]] -= 1.0
            for e, (u, v) in enumerate(edges):
                edge_g[e, sets[k, u], sets[k, v]] += 1.0
                edge_g[e, y[u], y[v]] -= 1.0
                if edge_x:
                    node_g[L * S + (e * S + sets[k, u]) * S + sets[k, v]] += 1.0
                    node_g[L * S + (e * S + y[u]) * S + y[v]] -= 1.0
        pegasos_step(t, C, Xa[m].indices, Xa[m].data, node_g, edge_g, Vr, Pr, sr)
        mean_V += sr[0] * Vr
        mean_P += sr[0] * Pr
    np.testing.assert_allclose(state[0] * V, sr[0] * Vr, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(state[0] * P, sr[0] * Pr, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sums[0], mean_V, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sums[1], mean_P, rtol=1e-9, atol=1e-12)
    assert np.abs(V).sum() > 0
