"""BP with a tree factor and pairwise link factors (oracles/factor_bp.py) against enumeration."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_struct.oracles.factor_bp import (
    grandparent_pairs,
    link_bp,
    pair_gains,
    seed_tree_messages,
    sibling_pairs,
)
from sklearn_struct.oracles.tree import tree_marginals
from test_tree import all_trees

SETTINGS = settings(max_examples=25, deadline=None)
VARIANTS = [(p, r) for p in (False, True) for r in (False, True)]


def exact_second_order(U, pairs, theta, projective, single_root):
    """log Z, link marginals and pair marginals of the second-order model by enumerating trees."""
    n = U.shape[0] - 1
    trees = all_trees(n, projective, single_root)
    N = n + 1
    z = np.zeros((len(trees), N, N))
    z[np.arange(len(trees))[:, None], trees, np.arange(1, N)[None, :]] = 1.0
    scores = (z * U).sum(axis=(1, 2))
    za = z[:, pairs[:, 0], pairs[:, 1]]
    zb = z[:, pairs[:, 2], pairs[:, 3]]
    scores = scores + (za * zb * theta).sum(axis=1)
    log_z = np.logaddexp.reduce(scores)
    p = np.exp(scores - log_z)
    return log_z, np.einsum("t,thm->hm", p, z), p @ (za * zb)


@st.composite
def sentence(draw, max_words=5, pair_scale=0.5, siblings=True):
    n = draw(st.integers(2, max_words))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    U = 1.5 * rng.normal(size=(n + 1, n + 1))
    pairs = grandparent_pairs(n)
    if siblings:
        pairs = np.concatenate([pairs, sibling_pairs(n)]).reshape(-1, 4)
    theta = pair_scale * rng.normal(size=len(pairs))
    return U, pairs, theta


@SETTINGS
@given(sentence(max_words=6), st.sampled_from(VARIANTS))
def test_tree_factor_alone_is_exact(model, variant):
    projective, single_root = variant
    U = model[0]
    res = link_bp(U, np.zeros((0, 4), dtype=np.int64), [], projective=projective, single_root=single_root)
    log_z, marg = tree_marginals(U, projective, single_root)
    np.testing.assert_allclose(res.link_marginals[:, 1:], marg[:, 1:], atol=1e-8)
    assert abs(res.tree_log_z - log_z) < 1e-9 and res.converged and res.n_iter == 0
    # with every pairwise factor at theta = 0, BP is still exact, and stops after one iteration
    pairs = grandparent_pairs(U.shape[0] - 1)
    res0 = link_bp(U, pairs, np.zeros(len(pairs)), projective=projective, single_root=single_root)
    np.testing.assert_allclose(res0.link_marginals[:, 1:], marg[:, 1:], atol=1e-8)
    assert res0.n_iter == 1 and abs(res0.tree_log_z - log_z) < 1e-9
    np.testing.assert_allclose(res0.pair_marginals, marg[pairs[:, 0], pairs[:, 1]] * marg[pairs[:, 2], pairs[:, 3]],
                               atol=1e-8)


def reference_bp(U, pairs, theta, projective, single_root, n_iter):
    """The same schedule written plainly, tree messages from enumerated tree marginals."""
    n = U.shape[0] - 1
    trees = all_trees(n, projective, single_root)
    cols = np.arange(1, n + 1)

    def tree_msgs(X):
        scores = X[trees, cols].sum(axis=1)
        p = np.exp(scores - np.logaddexp.reduce(scores))
        mu = np.zeros_like(X)
        for m in cols:
            np.add.at(mu[:, m], trees[:, m - 1], p)
        with np.errstate(divide="ignore"):
            return np.clip(np.log(mu) - np.log1p(-mu), -40, 40) - X  # the belief clipped, not the message

    sp = lambda x: np.logaddexp(0.0, x)  # noqa: E731
    T = tree_msgs(U.copy())
    ma, mb = np.zeros(len(pairs)), np.zeros(len(pairs))
    B = U + T
    for f, (ha, a, hb, b) in enumerate(pairs):
        B[ha, a] += ma[f]
        B[hb, b] += mb[f]
    for _ in range(n_iter):
        for f, (ha, a, hb, b) in enumerate(pairs):
            xa, xb = B[ha, a] - ma[f], B[hb, b] - mb[f]
            ma[f], mb[f] = sp(xb + theta[f]) - sp(xb), sp(xa + theta[f]) - sp(xa)
            B[ha, a], B[hb, b] = xa + ma[f], xb + mb[f]
        X = B - T
        T = tree_msgs(X)
        B = X + T
    mask = np.ones_like(U, dtype=bool)
    mask[:, 0] = False
    np.fill_diagonal(mask, False)
    return np.where(mask, 1.0 / (1.0 + np.exp(-B)), 0.0)


@SETTINGS
@given(sentence(max_words=4, pair_scale=1.5), st.sampled_from(VARIANTS), st.integers(1, 6))
def test_messages_match_a_plain_reference_implementation(model, variant, n_iter):
    projective, single_root = variant
    U, pairs, theta = model
    res = link_bp(U, pairs, theta, projective=projective, single_root=single_root, max_iter=n_iter, tol=0.0)
    ref = reference_bp(U, pairs, theta, projective, single_root, n_iter)
    np.testing.assert_allclose(res.link_marginals, ref, atol=1e-7)


def test_second_order_bp_is_close_to_enumeration():
    # loopy BP is approximate: over 40 random sentences it must cut the seed's error (the
    # first-order marginals, pairwise factors ignored) by more than half, and stay close
    rng = np.random.default_rng(0)
    err_bp, err_seed, err_pair = [], [], []
    for i in range(40):
        n = int(rng.integers(2, 6))
        projective, single_root = VARIANTS[i % 4]
        U = 1.5 * rng.normal(size=(n + 1, n + 1))
        pairs = np.concatenate([grandparent_pairs(n), sibling_pairs(n)]).reshape(-1, 4)
        theta = 0.5 * rng.normal(size=len(pairs))
        _, exact, exact_pairs = exact_second_order(U, pairs, theta, projective, single_root)
        _, seed = tree_marginals(U, projective, single_root)
        res = link_bp(U, pairs, theta, projective=projective, single_root=single_root, max_iter=50, tol=1e-10)
        err_bp.append(np.abs(res.link_marginals - exact)[:, 1:].mean())
        err_seed.append(np.abs(seed - exact)[:, 1:].mean())
        err_pair.append(np.abs(res.pair_marginals - exact_pairs).mean())
        assert np.all((res.pair_marginals >= 0) & (res.pair_marginals <= 1))
    assert np.mean(err_bp) < 0.5 * np.mean(err_seed)
    assert np.mean(err_bp) < 0.03 and np.mean(err_pair) < 0.06


def test_strong_factors_and_iteration_cap():
    rng = np.random.default_rng(3)
    n = 5
    U = rng.normal(size=(n + 1, n + 1))
    pairs = np.concatenate([grandparent_pairs(n), sibling_pairs(n)])
    theta = 3.0 * rng.normal(size=len(pairs))
    res = link_bp(U, pairs, theta, projective=True, max_iter=10, tol=0.0)
    assert res.n_iter == 10 and not res.converged
    assert np.isfinite(res.link_marginals).all()
    assert res.n_message_updates == 10 * (2 * len(pairs) + n * n)
    seed_msgs, _, seed = seed_tree_messages(U, projective=True)
    warm = link_bp(U, pairs, theta, projective=True, max_iter=10, tol=0.0, tree_messages=seed_msgs)
    np.testing.assert_allclose(warm.link_marginals, res.link_marginals)


def test_gains_and_pair_helpers():
    assert len(grandparent_pairs(5)) == 5 * 4 * 4  # h, m distinct words, g any other node
    sib = sibling_pairs(6)
    assert ((sib[:, 1] > sib[:, 0]) == (sib[:, 3] > sib[:, 0])).all()
    rng = np.random.default_rng(0)
    mu = rng.random((4, 4))
    pairs = grandparent_pairs(3)
    theta = rng.normal(scale=3, size=len(pairs))
    g = pair_gains(mu, pairs, theta)
    m = mu[pairs[:, 0], pairs[:, 1]] * mu[pairs[:, 2], pairs[:, 3]]
    np.testing.assert_allclose(g, np.log(1 - m + m * np.exp(theta)) - m * theta, atol=1e-12)
    assert (g >= 0).all()


@pytest.mark.parametrize("pairs, scores, match", [
    ([[0, 1, 1]], [1.0], "shape"),
    ([[0, 1, 1, 1]], [1.0], "distinct links"),
    ([[0, 1, 0, 1]], [1.0], "distinct links"),
    ([[0, 1, 1, 9]], [1.0], "distinct links"),
    ([[0, 1, 1, 2]], [1.0, 2.0], "pair_scores"),
    ([[0, 1, 1, 2]], [np.nan], "pair_scores contains NaN"),
])
def test_bad_input(pairs, scores, match):
    with pytest.raises(ValueError, match=match):
        link_bp(np.zeros((3, 3)), np.array(pairs), scores)


@pytest.mark.parametrize("single_root", [False, True])
def test_projective_chart_underflow_reruns_in_log_space(single_root):
    # huge scores: the probability-space chart fails, the fast kernel stops (n_iter -1) and link_bp
    # runs again from the start with the log-space chart, compiled only then
    from sklearn_struct.oracles.factor_bp import _link_bp_projective, _link_bp_projective_log, _normalised_unary

    rng = np.random.default_rng(7)
    n = 6
    U = 400.0 * rng.normal(size=(n + 1, n + 1))
    pairs = np.concatenate([grandparent_pairs(n), sibling_pairs(n)])
    theta = 0.5 * rng.normal(size=len(pairs))
    N = n + 1
    Un = _normalised_unary(U, single_root)[0]  # link_bp's first step: the same model near 0
    none, z = np.zeros(0, dtype=np.int64), np.zeros(0)
    B0 = _link_bp_projective_log(Un, none, none, z, single_root, 0, 0.0, Un, z, z)[0].reshape(N, N)  # the seed
    pa, pb = pairs[:, 0] * N + pairs[:, 1], pairs[:, 2] * N + pairs[:, 3]
    out = _link_bp_projective(Un, pa, pb, theta, single_root, 3, 0.0, B0, np.zeros(len(pairs)), np.zeros(len(pairs)))
    assert out[2] == -1
    res = link_bp(U, pairs, theta, projective=True, single_root=single_root, max_iter=3, tol=0.0)
    B = _link_bp_projective_log(Un, pa, pb, theta, single_root, 3, 0.0, B0, np.zeros(len(pairs)),
                                np.zeros(len(pairs)))[0]
    assert res.n_iter == 3 and np.isfinite(res.link_marginals).all()
    np.testing.assert_array_equal(res.log_odds.ravel(), B)
    alone = link_bp(U, np.zeros((0, 4), dtype=np.int64), [], projective=True, single_root=single_root)
    log_z = tree_marginals(U, True, single_root)[0]
    assert alone.n_iter == 0 and abs(alone.tree_log_z - log_z) < 1e-9 * abs(log_z)


# Large potentials (issue #34). The tree factor's messages were clipped to +-40 in log-odds, so a
# link with unary log-odds 100 and marginal 1/2 kept a belief of e^60: the tree factor alone was
# wrong from a unary of ~30 N(0, 1) on (91 of 160 random cases), and a unary of 1e308 gave every
# link belief 1; pair scores of 1e308 overflowed to NaN.
@settings(max_examples=40, deadline=None)
@given(st.integers(2, 5), st.sampled_from([30.0, 1e3, 1e6, 1e100, 1e300]), st.integers(0, 2**31 - 1),
       st.sampled_from(VARIANTS))
def test_tree_factor_alone_is_exact_at_any_magnitude(n, scale, seed, variant):
    projective, single_root = variant
    U = scale * np.random.default_rng(seed).normal(size=(n + 1, n + 1))
    _, marg = tree_marginals(U, projective, single_root)  # itself checked against enumeration
    res = link_bp(U, np.zeros((0, 4), dtype=np.int64), [], projective=projective, single_root=single_root)
    np.testing.assert_allclose(res.link_marginals[:, 1:], marg[:, 1:], atol=1e-9)
    pairs = grandparent_pairs(n)  # theta = 0: BP is still exact
    res0 = link_bp(U, pairs, np.zeros(len(pairs)), projective=projective, single_root=single_root)
    np.testing.assert_allclose(res0.link_marginals[:, 1:], marg[:, 1:], atol=1e-9)
    assert np.isfinite(res0.pair_marginals).all()


@pytest.mark.parametrize("projective, single_root", VARIANTS)
def test_a_huge_unary_per_word_changes_nothing_with_pairs(projective, single_root):
    # a score per word (column) is the same for every tree, pairwise factors or not: BP on it is BP on zeros
    n = 4
    pairs = np.concatenate([grandparent_pairs(n), sibling_pairs(n)])
    theta = 2.0 * np.random.default_rng(0).normal(size=len(pairs))
    ref = link_bp(np.zeros((n + 1, n + 1)), pairs, theta, projective=projective, single_root=single_root)
    for offset in (1e300, -1e300, 1e308, -1e308):
        U = np.broadcast_to(offset * np.array([1.0, 1.0, 0.5, 1.0, 0.25]), (n + 1, n + 1))
        res = link_bp(U, pairs, theta, projective=projective, single_root=single_root)
        np.testing.assert_allclose(res.link_marginals, ref.link_marginals, atol=1e-12)
        np.testing.assert_allclose(res.pair_marginals, ref.pair_marginals, atol=1e-12)
        assert res.n_iter == ref.n_iter


def test_pair_scores_beyond_the_documented_magnitude_are_refused():
    from sklearn_struct.parsing import pruned_link_marginals

    pairs = grandparent_pairs(3)
    theta = np.ones(len(pairs))
    theta[5] = 1e308
    with pytest.raises(ValueError, match=r"pair_scores\[5\] = 1e\+308 is beyond ±1e\+06"):
        link_bp(np.zeros((4, 4)), pairs, theta)
    with pytest.raises(ValueError, match=r"pair_scores\[5\] = 1e\+308 is beyond ±1e\+06"):
        pruned_link_marginals(np.zeros((4, 4)), pairs, theta)
    theta[5] = -1e6  # the largest magnitude allowed: a hard factor, beliefs still normalised
    for f in (link_bp, pruned_link_marginals):
        out = f(np.zeros((4, 4)), pairs, theta)
        mu = out.link_marginals if hasattr(out, "link_marginals") else out
        np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-9)


@pytest.mark.parametrize("single_root", [False, True])
def test_pruned_marginals_at_huge_unaries(single_root):
    from sklearn_struct.parsing import pruned_link_marginals

    pairs = grandparent_pairs(3)
    theta = np.random.default_rng(1).normal(size=len(pairs))
    ref = pruned_link_marginals(np.zeros((4, 4)), pairs, theta, single_root=single_root, objective="none")
    for U in (np.full((4, 4), 1e308), np.full((4, 4), -1e308)):
        mu = pruned_link_marginals(U, pairs, theta, single_root=single_root, objective="none")
        np.testing.assert_allclose(mu, ref, atol=1e-12)


def test_pair_lists_are_bounded_before_allocating():
    # grandparent_pairs(10**9) tried to allocate O(n^3) pairs; refused like the parser's max_length
    for f, count in ((grandparent_pairs, 301 * 300**2), (sibling_pairs, 301 * 300 * 299 // 3)):
        with pytest.raises(ValueError, match=rf"n_words=301 is more than max_words=300: .*{count:,} pairs"):
            f(301)
        with pytest.raises(ValueError, match=r"n_words=1000000000 is more than max_words=300"):
            f(10**9)
        with pytest.raises(ValueError, match=r"n_words=1000000000 is too large"):
            f(10**9, max_words=None)
        assert len(f(12, max_words=None)) == len(f(12)) and len(f(40, max_words=40)) > 0
        with pytest.raises(ValueError, match="max_words"):
            f(3, max_words=0)
