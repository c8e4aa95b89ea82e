"""Selection rules, pruned inference, graph helpers, make_ising_grid and the PrunedBPMarginals estimator."""

import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression

from sklearn_struct.datasets._ising import make_ising_grid
from sklearn_struct.oracles.loopy import loopy_bp, seed_gains
from sklearn_struct.pruned_bp import PrunedBPMarginals, pruned_marginals, select_factors
from sklearn_struct.utils.graph import check_graphs, grid_edges, images_to_graphs

GAINS = arrays(np.float64, st.integers(0, 40), elements=st.floats(0, 5, allow_nan=False))


# ----------------------------------------------------------------------------- selection rules
@settings(max_examples=100, deadline=None)
@given(GAINS, st.floats(0, 20))
def test_min_size_keeps_the_smallest_set_within_the_budget(gains, epsilon):
    kept = select_factors(gains, "min_size", epsilon=epsilon)
    assert gains[~kept].sum() <= epsilon + 1e-12
    # the most factors one can drop within epsilon is the longest prefix of the sorted gains
    n_droppable = int(np.sum(np.cumsum(np.sort(gains)) <= epsilon))
    assert (~kept).sum() == n_droppable
    if kept.any():  # dropping any further kept factor would break the budget
        assert gains[~kept].sum() + gains[kept].min() > epsilon


@settings(max_examples=100, deadline=None)
@given(GAINS, st.integers(0, 50))
def test_min_divergence_keeps_exactly_m_highest(gains, m):
    kept = select_factors(gains, "min_divergence", m=m)
    assert kept.sum() == min(m, gains.size)
    if kept.any() and (~kept).any():
        assert gains[kept].min() >= gains[~kept].max()


@settings(max_examples=100, deadline=None)
@given(GAINS, st.floats(0, 5))
def test_min_joint_keeps_all_with_gain_at_least_gamma(gains, gamma):
    kept = select_factors(gains, "min_joint", gamma=gamma)
    assert np.array_equal(kept, gains >= gamma)


def test_min_divergence_fraction_and_bad_objective():
    assert select_factors(np.arange(10.0), "min_divergence", m=0.3).tolist() == [False] * 7 + [True] * 3
    assert select_factors(np.arange(3.0), "none").all()
    with pytest.raises(ValueError, match="objective"):
        select_factors(np.arange(3.0), "min_everything")


def _reference_selection(gains, objective, gamma=None, epsilon=None, m=None):
    """The selection rules written as plain loops over the gains (ties: lower index dropped first)."""
    n = len(gains)
    if objective == "min_joint":
        return np.array([g >= gamma for g in gains], dtype=bool)
    order = sorted(range(n), key=lambda i: (gains[i], i))
    kept = np.ones(n, dtype=bool)
    if objective == "min_size":
        total = 0.0
        for i in order:
            if total + gains[i] > epsilon:
                break
            total += gains[i]
            kept[i] = False
        return kept
    n_keep = int(round(m * n)) if isinstance(m, float) else min(m, n)
    for i in order[: n - n_keep]:
        kept[i] = False
    return kept


# ----------------------------------------------------------------------------- pruned inference
def _ising(alpha=3.0, shape=(12, 12), seed=0):
    images, _ = make_ising_grid(n_noisy=1, shape=shape, random_state=seed)
    unary = np.c_[np.zeros(images[0].size), alpha * images[0].ravel()]
    return unary, grid_edges(shape), np.eye(2)


def test_pruned_marginals_extremes():
    unary, edges, pairwise = _ising()
    full = loopy_bp(unary, edges, pairwise).node_marginals
    none, report = pruned_marginals(unary, edges, pairwise, objective="none", return_report=True)
    np.testing.assert_allclose(none, full)
    assert report.kept_fraction == 1.0 and report.dropped_gain == 0.0
    seed, report = pruned_marginals(unary, edges, pairwise, gamma=np.inf, return_report=True)
    np.testing.assert_allclose(seed, np.exp(unary) / np.exp(unary).sum(axis=1, keepdims=True))
    assert report.kept_fraction == 0.0 and report.bp_result is None and report.bp_time == 0.0
    assert np.isclose(report.dropped_gain, seed_gains(unary, edges, pairwise).sum())


@pytest.mark.parametrize("objective, kwargs", [("min_joint", {"gamma": 0.05}), ("min_size", {"epsilon": 3.0}),
                                               ("min_divergence", {"m": 0.5})])
@pytest.mark.parametrize("inference", ["bp", "trw"])
def test_pruned_marginals_report(objective, kwargs, inference):
    unary, edges, pairwise = _ising()
    marg, rep = pruned_marginals(unary, edges, pairwise, objective=objective, inference=inference,
                                 return_report=True, **kwargs)
    assert marg.shape == unary.shape and np.allclose(marg.sum(axis=1), 1)
    # independent references: the gains from seed_gains, the rule by a plain loop, the marginals by
    # running BP / TRW on the kept subgraph ourselves
    np.testing.assert_allclose(rep.gains, seed_gains(unary, edges, pairwise))
    np.testing.assert_array_equal(rep.kept, _reference_selection(rep.gains, objective, **kwargs))
    assert np.isclose(rep.dropped_gain, sum(g for g, k in zip(rep.gains, rep.kept) if not k))
    if inference == "bp":
        sub = loopy_bp(unary, edges[rep.kept], pairwise).node_marginals
        np.testing.assert_allclose(marg, sub, atol=1e-6)
    assert rep.seed_time > 0 and rep.total_time >= rep.bp_time


def test_dropping_low_gain_factors_changes_little():
    unary, edges, pairwise = _ising(alpha=6.0, shape=(16, 16))
    full = loopy_bp(unary, edges, pairwise, tol=1e-10).node_marginals
    gains = seed_gains(unary, edges, pairwise)
    gamma = np.quantile(gains, 0.2)
    marg = pruned_marginals(unary, edges, pairwise, gamma=gamma, tol=1e-10)
    worse = pruned_marginals(unary, edges, pairwise, objective="min_divergence",
                             m=int(np.sum(gains >= gamma)), tol=1e-10)
    assert np.abs(marg - full).mean() < 0.01
    np.testing.assert_allclose(marg, worse)  # same count, same (highest-gain) factors


# ----------------------------------------------------------------------------- dropped="absorb"
def _exact_marginals(unary, edges, pairwise):
    """Node marginals by enumerating every labelling (pairwise: one table per edge)."""
    n, S = unary.shape
    ys = np.array(list(itertools.product(range(S), repeat=n)))
    scores = unary[np.arange(n), ys].sum(axis=1)
    for e, (u, v) in enumerate(edges):
        scores = scores + pairwise[e][ys[:, u], ys[:, v]]
    p = np.exp(scores - np.logaddexp.reduce(scores))
    return np.stack([np.bincount(ys[:, i], weights=p, minlength=S) for i in range(n)])


@st.composite
def ferromagnetic_tree(draw, max_nodes=8):
    """Binary tree model with Potts weights >= 0 and fields >= 0 (every node leans to state 1)."""
    n = draw(st.integers(2, max_nodes))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    edges = np.array([[i, int(rng.integers(0, i))] for i in range(1, n)], dtype=np.int64)
    unary = np.c_[np.zeros(n), rng.uniform(0, 2, size=n)]
    pairwise = rng.uniform(0, 2.5, size=len(edges))[:, None, None] * np.eye(2)
    return unary, edges, pairwise


@settings(max_examples=60, deadline=None)
@given(ferromagnetic_tree(), st.floats(0, 0.3))
def test_absorb_lies_between_drop_and_exact_on_ferromagnetic_trees(model, gamma):
    # Every true message into a node favours state 1 at least as much as the absorbed one (the
    # sender's other factors only add evidence for 1), and that one at least as much as none, so
    # per node: drop <= absorb <= exact. Absorbing never increases any node's error here.
    unary, edges, pairwise = model
    exact = _exact_marginals(unary, edges, pairwise)[:, 1]
    drop = pruned_marginals(unary, edges, pairwise, gamma=gamma, tol=1e-12)[:, 1]
    absorb, rep = pruned_marginals(unary, edges, pairwise, gamma=gamma, dropped="absorb", tol=1e-12,
                                   return_report=True)
    absorb = absorb[:, 1]
    assert np.all(drop <= absorb + 1e-9) and np.all(absorb <= exact + 1e-9)
    if rep.kept.all():
        np.testing.assert_allclose(absorb, drop, atol=1e-12)
        np.testing.assert_allclose(absorb, exact, atol=1e-8)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(2, 3), st.integers(0, 2**31 - 1))
def test_absorb_is_exact_at_the_centre_of_a_star_with_every_factor_dropped(n_leaves, S, seed):
    rng = np.random.default_rng(seed)
    unary = 2 * rng.normal(size=(n_leaves + 1, S))
    edges = np.array([[0, i] if i % 2 else [i, 0] for i in range(1, n_leaves + 1)])
    pairwise = 2 * rng.normal(size=(n_leaves, S, S))
    exact = _exact_marginals(unary, edges, pairwise)
    marg, rep = pruned_marginals(unary, edges, pairwise, gamma=np.inf, dropped="absorb", return_report=True)
    assert not rep.kept.any() and rep.bp_result is None
    np.testing.assert_allclose(marg[0], exact[0], atol=1e-12)  # leaves send their exact messages
    if n_leaves == 1:  # a single factor: both endpoints exact
        np.testing.assert_allclose(marg, exact, atol=1e-12)


def test_absorb_cuts_the_error_of_dropping_on_ising_denoising():
    unary, edges, pairwise = _ising(alpha=5.0, shape=(24, 24))
    full = loopy_bp(unary, edges, pairwise, tol=1e-10).node_marginals
    for gamma in (0.02, 0.08, np.inf):
        drop = pruned_marginals(unary, edges, pairwise, gamma=gamma)
        absorb = pruned_marginals(unary, edges, pairwise, gamma=gamma, dropped="absorb")
        assert np.abs(absorb - full).mean() < 0.5 * np.abs(drop - full).mean()


def test_absorb_with_trw_and_shared_or_per_edge_tables():
    unary, edges, pairwise = _ising(alpha=4.0)
    per_edge = np.repeat(pairwise[None], len(edges), axis=0)
    for inference in ("bp", "trw"):
        a = pruned_marginals(unary, edges, pairwise, gamma=0.05, dropped="absorb", inference=inference)
        b = pruned_marginals(unary, edges, per_edge, gamma=0.05, dropped="absorb", inference=inference)
        np.testing.assert_allclose(a, b, atol=1e-12)
    with pytest.raises(ValueError, match="dropped"):
        pruned_marginals(unary, edges, pairwise, dropped="reweight")


# ----------------------------------------------------------------------------- graph helpers
def test_grid_edges_counts_and_validation():
    assert grid_edges((5, 7)).shape == (5 * 6 + 4 * 7, 2)
    assert grid_edges((5, 7), 8).shape == (5 * 6 + 4 * 7 + 2 * 4 * 6, 2)
    assert grid_edges((1, 1)).shape == (0, 2)
    with pytest.raises(ValueError, match="connectivity"):
        grid_edges((3, 3), connectivity=6)


def test_images_to_graphs_with_edge_features():
    X = images_to_graphs(np.arange(24.0).reshape(2, 3, 4), connectivity=8, edge_features="abs_diff")
    feats, edges, efeats = X[0]
    assert feats.shape == (12, 1) and efeats.shape == (len(edges), 2)
    np.testing.assert_allclose(efeats[:, 1], np.abs(feats[edges[:, 0], 0] - feats[edges[:, 1], 0]))


@pytest.mark.parametrize(
    "X, match",
    [
        ([(np.zeros((3, 1)), [[0, 1]]), (np.zeros((3, 1)), [[0, 5]])], "Sample 1: edge 0"),
        ([(np.zeros((3, 1)), [[0, 1]]), (np.zeros((3, 1)), [[2, 2]])], "Sample 1: edge 0 is a self-loop"),
        ([(np.zeros((3, 1)), [[0, 1], [1, 0]])], "Sample 0: edges 0 and 1"),
        ([(np.zeros((3, 1)), [[0, 1]]), (np.full((3, 1), np.nan), [[0, 1]])], "Sample 1: node features contain NaN"),
        ([(np.zeros((3, 1)), [[0, 1]]), (np.zeros((0, 1)), np.zeros((0, 2)))], "Sample 1 is empty"),
        ([(np.zeros((3, 1)), [[0, 1]]), (np.zeros((3, 2)), [[0, 1]])], "Sample 1 has 2 node features"),
        ([(np.zeros((3, 1)), [[0, 1]], np.ones((2, 1)))], "Sample 0: edge features must have shape"),
        ([(np.zeros((3, 1)), [[0, 1]]), (np.zeros((3, 1)), [[0, 1]], np.ones((1, 1)))], "Sample 1 has 1 edge"),
        ([np.zeros((3, 1))], "Sample 0: expected a tuple"),
        ([], "empty"),
        ((np.zeros((3, 1)), np.array([[0, 1]])), "single sample"),
    ],
)
def test_check_graphs_names_the_sample(X, match):
    with pytest.raises(ValueError, match=match):
        check_graphs(X)


def test_check_graphs_labels():
    X = [(np.zeros((3, 1)), [[0, 1]]), (np.zeros((2, 1)), np.zeros((0, 2)))]
    with pytest.raises(ValueError, match="Sample 1: 2 nodes in X but 3 labels"):
        check_graphs(X, [[0, 1, 0], [1, 0, 1]])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        check_graphs(X, [[0, 1, 0]])
    graphs, y = check_graphs(X, [[0, 1, 0], [1, 0]])  # disconnected / edgeless graphs are legal
    assert graphs[1][1].shape == (0, 2) and len(y[1]) == 2


# ----------------------------------------------------------------------------- make_ising_grid
def test_make_ising_grid():
    images, labels = make_ising_grid(n_images=5, n_noisy=3, shape=(20, 24), random_state=0)
    assert images.shape == labels.shape == (15, 20, 24)
    np.testing.assert_allclose(images.mean(axis=(1, 2)), 0, atol=1e-12)
    assert np.array_equal(labels[12], labels[0])  # shapes repeat cyclically
    again, _ = make_ising_grid(n_images=5, n_noisy=3, shape=(20, 24), random_state=0)
    np.testing.assert_array_equal(images, again)
    assert 0.1 < labels.mean() < 0.6
    with pytest.raises(ValueError, match="n_noisy"):
        make_ising_grid(n_noisy=0)


# ----------------------------------------------------------------------------- estimator
@pytest.fixture(scope="module")
def denoising_data():
    shape = (20, 20)
    train_images, train_labels = make_ising_grid(n_noisy=3, shape=shape, noise=1.0, random_state=0)
    test_images, test_labels = make_ising_grid(n_noisy=3, shape=shape, noise=1.0, random_state=1)
    X, Xt = images_to_graphs(train_images), images_to_graphs(test_images)
    y = list(train_labels.reshape(len(train_labels), -1))
    yt = list(test_labels.reshape(len(test_labels), -1))
    return X, y, Xt, yt


@pytest.fixture(scope="module")
def fitted(denoising_data):
    X, y, _, _ = denoising_data
    return PrunedBPMarginals(gamma=1e-3).fit(X, y)


def test_learns_a_denoiser_that_beats_unary_logistic_regression(denoising_data, fitted):
    X, y, Xt, yt = denoising_data
    logreg = LogisticRegression().fit(np.concatenate([g[0] for g in X]), np.concatenate(y))
    baseline = logreg.score(np.concatenate([g[0] for g in Xt]), np.concatenate(yt))
    ours = fitted.score(Xt, yt)
    assert ours > baseline + 0.05, (ours, baseline)
    assert fitted.edge_coef_[0, 0, 0] > 0.5  # learned smoothing
    full = clone(fitted).set_params(objective="none")
    full.__dict__.update({k: v for k, v in fitted.__dict__.items() if k.endswith("_")})
    assert abs(full.score(Xt, yt) - ours) < 0.02


def test_predict_outputs(denoising_data, fitted):
    _, _, Xt, _ = denoising_data
    marg = fitted.predict_marginals(Xt[:2])
    pred = fitted.predict(Xt[:2])
    assert len(marg) == 2 and marg[0].shape == (400, 2)
    np.testing.assert_allclose(marg[0].sum(axis=1), 1)
    np.testing.assert_array_equal(pred[1], fitted.classes_[marg[1].argmax(axis=1)])


def test_string_labels_edge_features_full_tables_and_trw():
    images, labels = make_ising_grid(n_noisy=1, shape=(10, 10), noise=0.8, random_state=2)
    X = images_to_graphs(images, edge_features="abs_diff")
    y = [np.where(lab.ravel() == 1, "fg", "bg") for lab in labels]
    est = PrunedBPMarginals(edge_model="full", inference="trw", objective="min_size", epsilon=2.0,
                            max_iter=30).fit(X, y)
    assert est.edge_coef_.shape == (2, 2, 2) and est.n_edge_features_in_ == 2
    assert set(np.concatenate(est.predict(X))) <= {"bg", "fg"}
    assert est.score(X, y) > 0.7


def test_estimator_absorb_predicts_with_absorbed_factors(denoising_data, fitted):
    _, _, Xt, _ = denoising_data
    est = clone(fitted).set_params(dropped="absorb", gamma=0.05)
    est.__dict__.update({k: v for k, v in fitted.__dict__.items() if k.endswith("_")})
    feats, edges = Xt[0][0], Xt[0][1]
    unary = feats @ est.coef_ + est.intercept_
    expected = pruned_marginals(unary, edges, est.edge_coef_[0], gamma=0.05, dropped="absorb", tol=est.bp_tol)
    np.testing.assert_allclose(est.predict_marginals(Xt[:1])[0], expected)
    dropping = est.set_params(dropped="drop").predict_marginals(Xt[:1])[0]
    assert np.abs(dropping - expected).max() > 1e-3
    with pytest.raises(ValueError, match="dropped"):
        PrunedBPMarginals(dropped="keep").fit(*denoising_data[:2])


def test_pruned_fitting_and_joblib_chunks_agree(denoising_data):
    X, y, Xt, yt = denoising_data
    a = PrunedBPMarginals(fit_inference="pruned", gamma=1e-3, max_iter=20).fit(X, y)
    b = PrunedBPMarginals(fit_inference="pruned", gamma=1e-3, max_iter=20, n_jobs=2).fit(X, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-8)
    assert a.score(Xt, yt) > 0.75


def test_sklearn_citizenship(denoising_data, fitted):
    X, _, Xt, yt = denoising_data
    est = PrunedBPMarginals(gamma=0.5, C=3.0)
    assert clone(est).get_params() == est.get_params()
    assert est.set_params(m=3).m == 3
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(restored.predict_marginals(Xt[:1])[0], fitted.predict_marginals(Xt[:1])[0])
    assert not fitted.__sklearn_tags__().input_tags.two_d_array
    with pytest.raises(NotFittedError):
        PrunedBPMarginals().predict(X)


def test_estimator_bad_input(denoising_data, fitted):
    X, y, _, _ = denoising_data
    with pytest.raises(ValueError, match="Sample 1: .* labels"):
        PrunedBPMarginals().fit(X[:2], [y[0], y[1][:-1]])
    with pytest.raises(ValueError, match="at least 2 classes"):
        PrunedBPMarginals().fit(X[:1], [np.zeros(len(y[0]))])
    with pytest.raises(ValueError, match="Sample 0 has 2 node features, but 1 are expected"):
        fitted.predict([(np.zeros((4, 2)), [[0, 1]])])
    bad = [X[0], (X[1][0], np.vstack([X[1][1], [[0, 0]]]))]
    with pytest.raises(ValueError, match="Sample 1: edge .* self-loop"):
        fitted.predict(bad)
    with pytest.raises(ValueError, match="objective"):
        PrunedBPMarginals(objective="max_size").fit(X, y)
    with pytest.raises(ValueError, match="gamma"):
        PrunedBPMarginals(gamma=-1.0).fit(X, y)
