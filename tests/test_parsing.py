"""DependencyParserBP, pruned link inference and the Proposition 2 bound."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sklearn_struct.oracles.factor_bp import grandparent_pairs, link_bp, sibling_pairs
from sklearn_struct.oracles.tree import tree_marginals
from sklearn_struct.parsing import (
    DependencyParserBP,
    attachment_score,
    divergence_bound,
    is_projective,
    pruned_link_marginals,
)
from test_factor_bp import exact_second_order


def make_treebank(n_sentences, seed):
    """Sentences 'DET ADJ* NOUN VERB (DET NOUN) (ADP DET NOUN)' with their (projective) trees."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sentences):
        toks, heads = [], []
        n_adj = int(rng.integers(0, 3))
        subj = [("the", "DET")] + [("big", "ADJ")] * n_adj + [("dog", "NOUN")]
        noun = len(subj)
        verb = noun + 1
        toks += subj + [("saw", "VERB")]
        heads += [noun] * (noun - 1) + [verb, 0]
        if rng.random() < 0.7:
            toks += [("a", "DET"), ("cat", "NOUN")]
            heads += [len(toks), verb]
        if rng.random() < 0.5:
            toks += [("in", "ADP"), ("the", "DET"), ("park", "NOUN")]
            k = len(toks)
            heads += [k, k, verb]
        X.append(toks)
        y.append(np.array(heads))
    return X, y


@pytest.mark.parametrize("projective, siblings, objective", [
    (False, False, "none"), (True, True, "min_joint"), (False, True, "min_size"), (True, False, "min_divergence"),
])
def test_parser_learns_a_generated_treebank(projective, siblings, objective):
    X, y = make_treebank(40, 0)
    Xt, yt = make_treebank(20, 1)
    parser = DependencyParserBP(projective=projective, siblings=siblings, objective=objective, gamma=1e-3,
                                epsilon=0.1, m=0.2, max_iter=5, n_hash_bits=16, random_state=0).fit(X, y)
    assert parser.score(Xt, yt) == 1.0
    pred = parser.predict(Xt)
    assert all(is_projective(p) for p in pred) or not projective
    marg = parser.predict_marginals(Xt[:3])
    for mu, sent in zip(marg, Xt[:3]):
        assert mu.shape == (len(sent) + 1, len(sent) + 1)
    state = dict(vars(parser))
    same, reports = parser.predict_marginals(Xt[:3], return_reports=True)
    assert len(reports) == 3 and all(r.total_time >= 0 for r in reports)
    for a, b in zip(marg, same):
        np.testing.assert_array_equal(a, b)
    assert vars(parser).keys() == state.keys()  # predicting leaves no state behind


def test_first_order_model_is_exact_and_reproducible():
    X, y = make_treebank(15, 2)
    a = DependencyParserBP(grandparents=False, max_iter=2, n_hash_bits=14, random_state=0).fit(X, y)
    b = DependencyParserBP(grandparents=False, max_iter=2, n_hash_bits=14, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    U, pairs, theta = a.potentials(X[:1])[0]
    assert pairs.shape == (0, 4)
    np.testing.assert_allclose(a.predict_marginals(X[:1])[0][:, 1:], tree_marginals(U, False, True)[1][:, 1:],
                               atol=1e-10)


def test_pruned_inference_extremes():
    rng = np.random.default_rng(0)
    n = 6
    U = rng.normal(size=(n + 1, n + 1))
    pairs = np.concatenate([grandparent_pairs(n), sibling_pairs(n)])
    theta = rng.normal(size=len(pairs))
    full = link_bp(U, pairs, theta, projective=True).link_marginals
    np.testing.assert_allclose(pruned_link_marginals(U, pairs, theta, projective=True, objective="none"), full)
    np.testing.assert_allclose(pruned_link_marginals(U, pairs, theta, projective=True, gamma=0.0), full)
    seed = tree_marginals(U, True, True)[1]
    mu, rep = pruned_link_marginals(U, pairs, theta, projective=True, gamma=np.inf, return_report=True)
    np.testing.assert_allclose(mu, seed)
    assert rep.kept_fraction == 0.0 and rep.n_iter == 0 and rep.bp_result is None
    _, rep = pruned_link_marginals(U, pairs, theta, objective="min_divergence", m=10, return_report=True)
    assert rep.kept.sum() == 10 and rep.gains[rep.kept].min() >= rep.gains[~rep.kept].max()
    _, rep = pruned_link_marginals(U, pairs, theta, objective="min_size", epsilon=0.5, return_report=True)
    assert rep.dropped_gain <= 0.5


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 4), st.integers(0, 2**31 - 1), st.floats(0.0, 0.3), st.booleans())
def test_proposition2_bound_holds(n, seed, gamma, projective):
    """D(p_H || p_F) <= bound, with exact E_H[phi] of the dropped factors (by enumeration)."""
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(n + 1, n + 1))
    pairs = np.concatenate([grandparent_pairs(n), sibling_pairs(n)]).reshape(-1, 4)
    theta = 1.5 * rng.normal(size=len(pairs))
    _, rep = pruned_link_marginals(U, pairs, theta, projective=projective, gamma=gamma, return_report=True)
    kept = rep.kept
    log_zf, _, _ = exact_second_order(U, pairs, theta, projective, True)
    theta_h = np.where(kept, theta, 0.0)
    log_zh, _, mu_h = exact_second_order(U, pairs, theta_h, projective, True)
    # D(p_H || p_F) = log Z_F - log Z_H - E_H[sum_R theta phi]
    kl = log_zf - log_zh - mu_h[~kept] @ theta[~kept]
    bound = divergence_bound(mu_h[~kept], theta[~kept])
    assert kl >= -1e-9
    assert bound >= kl - 1e-9
    assert bound <= np.abs(theta[~kept]).sum() - np.where(theta < 0, 1 - mu_h, mu_h)[~kept] @ np.abs(theta[~kept]) + 1e-9


def test_helpers():
    assert is_projective([2, 0, 2]) and not is_projective([3, 4, 0, 3, 1])
    assert attachment_score([[2, 0]], [[2, 1]]) == 0.5
    assert divergence_bound([], []) == 0.0


def test_sklearn_citizenship_and_bad_input():
    X, y = make_treebank(5, 3)
    parser = DependencyParserBP(max_iter=1, n_hash_bits=12)
    assert clone(parser).get_params() == parser.get_params()
    with pytest.raises(NotFittedError):
        parser.predict(X)
    with pytest.raises(ValueError, match=r"y\[1\]"):
        parser.fit(X, [y[0], y[1][:-1]] + y[2:])
    with pytest.raises(ValueError, match=r"X\[0\]\[1\]"):
        parser.fit([[("a", "DET"), 5]], [[0, 1]])
    with pytest.raises(ValueError, match="self-loop"):
        parser.fit([[("a", "DET")]], [[1]])
    with pytest.raises(ValueError, match="non-empty"):
        parser.fit([], [])
    with pytest.raises(ValueError, match="objective"):
        DependencyParserBP(objective="bogus").fit(X, y)
    parser.fit(X, y)
    assert parser.n_iter_ == 1 and parser.coef_.shape == (4096,)


def test_pruned_link_marginals_bad_input():
    U = np.zeros((4, 4))
    pairs = grandparent_pairs(3)
    with pytest.raises(ValueError, match="objective"):
        pruned_link_marginals(U, pairs, np.zeros(len(pairs)), objective="bogus")
    with pytest.raises(ValueError, match="pair_scores"):
        pruned_link_marginals(U, pairs, np.zeros(3))
    with pytest.raises(ValueError, match="pair_scores contains NaN"):
        pruned_link_marginals(U, pairs, np.full(len(pairs), np.nan))
    with pytest.raises(ValueError, match="pairs"):
        pruned_link_marginals(U, pairs + 5, np.zeros(len(pairs)))
    with pytest.raises(ValueError, match="same length"):
        divergence_bound([0.5], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        divergence_bound([1.5], [1.0])


def test_max_length_refuses_long_sentences_before_any_work(monkeypatch):
    from sklearn_struct import _parsing_features

    X, y = make_treebank(6, 4)
    parser = DependencyParserBP(max_iter=1, n_hash_bits=12, max_length=10).fit(X, y)
    long = X[0] * 3  # more than 10 words

    def no_work(*args, **kwargs):
        raise AssertionError("features computed for a refused input")

    monkeypatch.setattr(_parsing_features, "link_scores", no_work)
    for method in (parser.predict, parser.predict_marginals, parser.potentials):
        with pytest.raises(ValueError, match=rf"X\[1\] has {len(long)} words, more than max_length=10"):
            method([X[1], long])
    with pytest.raises(ValueError, match=r"X\[0\] has .* more than max_length=10"):
        clone(parser).fit([long], [np.r_[0, np.ones(len(long) - 1, dtype=int)]])
    monkeypatch.undo()
    assert len(parser.set_params(max_length=None).predict([long])[0]) == len(long)
    assert DependencyParserBP().max_length == 300


def test_verbose_prediction_reports_sentences(capsys):
    X, y = make_treebank(6, 5)
    parser = DependencyParserBP(max_iter=1, n_hash_bits=12).fit(X, y)
    quiet = parser.predict(X[:2])
    capsys.readouterr()
    parser.set_params(verbose=1).predict(X[:2])
    assert capsys.readouterr().out == ""  # only long sentences are reported at verbose=1
    loud = parser.set_params(verbose=2).predict(X[:2])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:3] for line in lines] == [["[DependencyParserBP]", "sentence", str(s)] for s in (0, 1)]
    assert all(f"words {len(X[s])}" in line for s, line in zip((0, 1), lines))
    for a, b in zip(quiet, loud):
        np.testing.assert_array_equal(a, b)


def test_candidate_factor_lists_match_their_definition():
    from sklearn_struct.parsing import _CACHED_PAIRS_MAX_WORDS, _cached_candidate_pairs, _candidate_pairs

    for n in range(1, 9):
        N = n + 1
        gp = [(g, h, h, m) for g in range(N) for h in range(1, N) for m in range(1, N) if len({g, h, m}) == 3]
        sib = [(h, m, h, s) for h in range(1, N) for m in range(1, N) for s in range(m + 1, N)
               if h not in (m, s) and (m > h) == (s > h)]
        assert grandparent_pairs(n).reshape(-1, 4).tolist() == [list(p) for p in gp]
        assert sibling_pairs(n).reshape(-1, 4).tolist() == [list(p) for p in sib]
        both = _candidate_pairs(n, True, True)
        assert both.tolist() == [list(p) for p in gp + sib] and not both.flags.writeable
    # long sentences' lists (32 n^3 bytes) are not kept in the cache
    _cached_candidate_pairs.cache_clear()
    _candidate_pairs(_CACHED_PAIRS_MAX_WORDS + 1, True, False)
    assert _cached_candidate_pairs.cache_info().currsize == 0
