"""Numeric edges of the training algorithms and oracles (issue #34 item 4).

Each case ended in a raw ZeroDivisionError / OverflowError / RecursionError / IndexError or in
marginals that do not sum to 1; each now trains correctly or raises a ValueError saying what is wrong.
"""

import numpy as np
import pytest

from sklearn_struct import ChainCRF
from sklearn_struct.crfsuite import CRF
from sklearn_struct.oracles.chain_samples import sampled_log_likelihood, sampled_marginals

X_DICTS = [[{"a": 1.0, "b": 0.5}, {"a": 0.2}], [{"b": 1.0}, {"a": 1.0, "c": 2.0}, {"c": 1.0}]]
Y_DICTS = [["x", "y"], ["y", "x", "x"]]


@pytest.mark.parametrize("params", [{"c2": 1e300}, {"calibration_eta": 1e300}, {"calibration_rate": 1e300},
                                    {"calibration_eta": 1e-300}, {"c2": 1e-300, "calibration_eta": 1e-300}])
def test_l2sgd_extreme_rates_train(params):
    crf = CRF(algorithm="l2sgd", max_iterations=3, **params).fit(X_DICTS, Y_DICTS)
    assert all(np.isfinite(v) for v in crf.state_features_.values())
    assert [len(p) for p in crf.predict(X_DICTS)] == [2, 3]


def test_l2sgd_huge_c2_gives_zero_weights_not_a_division_by_zero():
    X = [np.eye(3)[[0, 1, 2]], np.eye(3)[[2, 1]]]
    y = [np.array([0, 1, 0]), np.array([1, 1])]
    crf = ChainCRF(algorithm="l2sgd", c2=1e300, max_iter=20).fit(X, y)
    assert np.all(np.isfinite(crf.coef_)) and np.max(np.abs(crf.coef_)) < 1e-6


def test_l2sgd_one_class_stops_at_zero_loss():
    X = [np.ones((3, 2)), np.ones((2, 2))]
    y = [np.zeros(3, int), np.zeros(2, int)]
    crf = ChainCRF(algorithm="l2sgd").fit(X, y)  # the loss is 0 from the start: stops after `period` epochs
    assert crf.n_iter_ == 11
    assert [list(p) for p in crf.predict(X)] == [[0, 0, 0], [0, 0]]


@pytest.mark.parametrize("algorithm", ["ap", "pa", "arow"])
def test_online_algorithms_refuse_features_whose_updates_overflow(algorithm):
    huge = [[{k: v * 1e300 for k, v in tok.items()} for tok in seq] for seq in X_DICTS]
    with pytest.raises(ValueError, match=r"algorithm='\w+': feature values up to 2e\+300 .* rescale the features"):
        CRF(algorithm=algorithm, max_iterations=3).fit(huge, Y_DICTS)


def test_feature_value_beyond_float_is_named():
    for X in ([[{"a": 10**400}], [{"a": 1.0}]], [[{"a": {"b": -(10**400)}}], [{"a": 1.0}]]):
        with pytest.raises(ValueError, match=r"X, sequence 0, token 0: .*not finite .*beyond the float64 range"):
            CRF(max_iterations=3).fit(X, [["x"], ["y"]])


def test_deeply_nested_and_self_containing_feature_dicts_are_refused():
    deep = {"a": 1.0}
    for _ in range(5000):
        deep = {"n": deep}
    loop = {}
    loop["x"] = loop
    for item in (deep, loop):
        with pytest.raises(ValueError, match=r"sequence 0, token 1: .*nested more than 100 levels"):
            CRF(max_iterations=3).fit([[{"a": 1.0}, item], [{"a": 1.0}]], [["x", "y"], ["y"]])
    shallow = {"a": 1.0}
    for _ in range(50):
        shallow = {"n": shallow}
    CRF(max_iterations=3).fit([[shallow, {"b": 1.0}]], [["x", "y"]])


def test_tagger_marginal_position_must_be_an_int_in_range():
    crf = CRF(max_iterations=5).fit(X_DICTS, Y_DICTS)
    tagger = crf.tagger_
    tagger.set(X_DICTS[0])
    assert tagger.marginal("x", 1) + tagger.marginal("y", 1) == pytest.approx(1.0)
    assert tagger.marginal("x", np.int64(0)) == pytest.approx(1 - tagger.marginal("y", 0))
    for pos in (1.5, "1", None, True, 2, -1):
        with pytest.raises(ValueError, match=r"pos=.* must be an int in 0\.\.1"):
            tagger.marginal("x", pos)
    with pytest.raises(ValueError, match="unknown label y='z'"):
        tagger.marginal("z", 0)


def _brute_marginals(unary, trans):
    """Sample-averaged node marginals by enumeration, in exact log space (small L, T)."""
    import itertools

    L, T, S = unary.shape
    out = np.zeros((T, L))
    for s in range(S):
        paths = list(itertools.product(range(L), repeat=T))
        scores = np.array([sum(unary[p[t], t, s] for t in range(T)) + sum(trans[p[t - 1], p[t], s]
                                                                         for t in range(1, T)) for p in paths])
        w = np.exp(scores - scores.max())
        w /= w.sum()
        for p, wp in zip(paths, w):
            for t in range(T):
                out[t, p[t]] += wp / S
    return out


@pytest.mark.parametrize("scale", [1.0, 1e3, 1e300])
def test_sampled_marginals_sum_to_one_at_huge_potentials(scale):
    rng = np.random.default_rng(3)
    unary = rng.choice([-1.0, 0.5, 1.0], size=(3, 4, 2)) * scale
    trans = rng.normal(size=(3, 3, 2))
    out = sampled_marginals(unary, trans)
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    np.testing.assert_allclose(out, _brute_marginals(unary, trans), atol=1e-9)


def test_sampled_potentials_that_overflow_a_path_score_are_refused():
    rng = np.random.default_rng(0)
    unary, trans = rng.normal(size=(3, 4, 5)), np.full((3, 3, 5), 1e308)
    for f, args in ((sampled_marginals, ()), (sampled_log_likelihood, ([0, 1, 2, 0],))):
        with pytest.raises(ValueError, match=r"transition \(\|\.\| up to 1e\+308\) are too large"):
            f(unary, trans, *args)
    with pytest.raises(ValueError, match=r"unary \(\|\.\| up to 1e\+306\)"):
        sampled_marginals(np.full((2, 3, 1), 1e306), np.zeros((2, 2, 1)))


def test_numbers_beyond_float64_in_arrays_are_named():
    from sklearn_struct import DLPWClassifier, NonLocalCRF
    from sklearn_struct.oracles.chain import forward_backward
    from sklearn_struct.utils.validation import check_float_array

    big = np.array([[10**400, 1]], dtype=object)
    for est in (ChainCRF(), NonLocalCRF()):
        with pytest.raises(ValueError, match="Sequence 0: a feature value is beyond the float64 range"):
            est.fit([big], [np.array([0])])
    with pytest.raises(ValueError, match="X holds a feature value beyond the float64 range"):
        DLPWClassifier().fit(np.array([[10**400, 1], [1, 2]], dtype=object), np.array([[0, 1], [1, 0]]))
    with pytest.raises(ValueError, match="unary holds a number beyond the float64 range"):
        forward_backward(big, np.zeros((2, 2)), np.array([0, 1]))
    with pytest.raises(ValueError, match="w holds a number beyond"):
        check_float_array([-(10**400), 1.0], "w")
