"""ChainCRF.partial_fit: the same epochs as fit, state kept between calls, growing features."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import ChainCRF
from sklearn_struct.oracles.chain import viterbi

ONLINE = ["l2sgd", "ap", "pa", "arow"]


def _data(n_seq=60, n_labels=3, n_features=10, seed=0, noise=0.5):
    rng = np.random.RandomState(seed)
    W, A = 2.0 * rng.randn(n_features, n_labels), rng.randn(n_labels, n_labels)
    X, y = [], []
    for _ in range(n_seq):
        T = rng.randint(2, 8)
        x = (rng.rand(T, n_features) < 0.3).astype(float)
        labels, _ = viterbi(x @ W + noise * rng.randn(T, n_labels), A, np.array([0, T]))
        X.append(sp.csr_matrix(x))
        y.append(labels)
    return X, y


def _fit(algorithm, X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return ChainCRF(algorithm=algorithm, c2=0.1, **params).fit(X, y)


@pytest.mark.parametrize("algorithm", ONLINE)
def test_one_call_on_all_data_is_fit_with_one_epoch(algorithm):
    X, y = _data()
    a = _fit(algorithm, X, y, max_iter=1)
    b = ChainCRF(algorithm=algorithm, c2=0.1).partial_fit(X, y, classes=[0, 1, 2])
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.transition_, b.transition_)
    assert np.array_equal(a.intercept_, b.intercept_) and b.n_iter_ == 1


@pytest.mark.parametrize("algorithm", ONLINE)
def test_three_calls_are_three_epochs_state_kept(algorithm):
    """Averaging sums, AROW covariances, SGD's step count and penalty and the random orders carry over:
    exactly fit(max_iter=3). (l2sgd once spread c2 over every call's sequences, 3 copies of the data.)"""
    X, y = _data(seed=1)
    a = _fit(algorithm, X, y, max_iter=3, epsilon=0.0)
    b = ChainCRF(algorithm=algorithm, c2=0.1)
    for _ in range(3):
        b.partial_fit(X, y, classes=[0, 1, 2])
    assert np.allclose(a.coef_, b.coef_, rtol=0, atol=1e-12) and np.allclose(a.transition_, b.transition_, atol=1e-12)
    assert b.n_iter_ == 3


def test_l2sgd_second_pass_keeps_fits_penalty():
    """Two passes over three batches: the second pass brings no new sequence, so c2 stays spread over
    the data (lam = 2 c2 / N), as in fit; a sequence repeated within one call counts twice."""
    X, y = _data(30, seed=8)
    crf = ChainCRF(algorithm="l2sgd", c2=0.1)
    for _ in range(2):
        for lo in range(0, 30, 10):
            crf.partial_fit(X[lo : lo + 10], y[lo : lo + 10], classes=[0, 1, 2])
        assert crf._online_state.lam == pytest.approx(2 * 0.1 / 30)
    crf.partial_fit(X[:5] + X[:5], y[:5] + y[:5])
    assert crf._online_state.lam == pytest.approx(2 * 0.1 / 35)


@pytest.mark.parametrize("algorithm", ONLINE)
def test_batches_come_close_to_one_fit(algorithm):
    X, y = _data(120, seed=2, noise=0.3)
    X_test, y_test = _data(60, seed=3, noise=0.3)
    full = _fit(algorithm, X, y, max_iter=10)
    part = ChainCRF(algorithm=algorithm, c2=0.1)
    for _ in range(10):
        for lo in range(0, 120, 30):
            part.partial_fit(X[lo : lo + 30], y[lo : lo + 30], classes=[0, 1, 2])
    assert part.score(X_test, y_test) > full.score(X_test, y_test) - 0.05


def test_new_attributes_grow_the_weights():
    X, y = _data(40, seed=4)
    narrow = [x[:, :6] for x in X]
    crf = ChainCRF(algorithm="ap").partial_fit(narrow[:20], y[:20], classes=[0, 1, 2])
    assert crf.coef_.shape == (6, 3)
    crf.partial_fit(X[20:], y[20:])
    assert crf.coef_.shape == (10, 3) and crf.n_features_in_ == 10
    assert np.any(crf.coef_[6:] != 0)
    assert len(crf.predict(X[:3])) == 3
    with pytest.raises(ValueError, match="never drop"):
        crf.partial_fit(narrow[:5], y[:5])


def test_partial_fit_errors_and_atomicity():
    X, y = _data(20, seed=5)
    with pytest.raises(ValueError, match="classes must be given"):
        ChainCRF(algorithm="ap").partial_fit(X, y)
    with pytest.raises(ValueError, match="warm_start"):
        ChainCRF().partial_fit(X, y, classes=[0, 1, 2])
    crf = ChainCRF(algorithm="pa").partial_fit(X, y, classes=[0, 1, 2])
    coef = crf.coef_.copy()
    y_bad = [np.full(len(v), 7) for v in y]
    with pytest.raises(ValueError, match="label 7"):
        crf.partial_fit(X, y_bad)
    assert np.array_equal(crf.coef_, coef)
    with pytest.raises(ValueError, match="differs"):
        crf.partial_fit(X, y, classes=[0, 1])


def test_partial_fit_labels_absent_from_first_batch():
    X, y = _data(30, seed=6)
    only = [(x, v) for x, v in zip(X, y) if 2 not in v]
    crf = ChainCRF(algorithm="arow").partial_fit([x for x, _ in only], [v for _, v in only], classes=[0, 1, 2, 9])
    assert list(crf.classes_) == [0, 1, 2, 9]
    crf.partial_fit(X, y)
    assert crf.coef_.shape == (10, 4)


def test_partial_fit_after_fit_continues_and_takes_weights():
    X, y = _data(30, seed=7)
    crf = _fit("ap", X, y, max_iter=2)
    before = crf.coef_.copy()
    crf.partial_fit(X, y, sample_weight=np.full(30, 2.0))
    assert crf.n_iter_ == 3 and crf.coef_.shape == before.shape
    fresh = ChainCRF(algorithm="ap").partial_fit(X, y, classes=[0, 1, 2], sample_weight=np.eye(30)[0])
    assert fresh.coef_.shape == (10, 3)


def test_crfsuite_partial_fit_grows_the_vocabulary_and_takes_weights():
    from sklearn_struct.crfsuite import CRF

    X1 = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}]]
    y1 = [["DET", "NOUN"], ["DET", "NOUN"]]
    X2 = [[{"w": "a"}, {"w": "dog"}, {"w": "runs"}]]
    y2 = [["DET", "NOUN", "VERB"]]
    crf = CRF(algorithm="ap").partial_fit(X1, y1, classes=["DET", "NOUN", "VERB"])
    assert "w:runs" not in crf.attributes_
    crf.partial_fit(X2, y2, sample_weight=[2.0])
    assert "w:runs" in crf.attributes_ and crf.predict_single(X2[0]) == y2[0]
    with pytest.raises(ValueError, match="classes must be given"):
        CRF(algorithm="pa").partial_fit(X1, y1)
    with pytest.raises(ValueError, match="warm_start"):
        CRF().partial_fit(X1, y1, classes=["DET", "NOUN"])


def test_crfsuite_sample_and_class_weights_reach_the_chain():
    from sklearn_struct.crfsuite import CRF

    X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}, {"w": "runs"}]]
    y = [["DET", "NOUN"], ["DET", "NOUN", "VERB"]]
    dup = CRF(c2=0.01).fit(X + X[1:], y + y[1:])
    weighted = CRF(c2=0.01).fit(X, y, sample_weight=[1, 2])
    assert np.allclose(weighted.estimator_.coef_, dup.estimator_.coef_, atol=1e-5)
    cw = CRF(c2=0.01, class_weight={"VERB": 3.0}).fit(X, y)
    s = CRF(c2=0.01).fit(X, y, sample_weight=[1.0, 5 / 3])
    assert np.allclose(cw.estimator_.coef_, s.estimator_.coef_, atol=1e-6)
    with pytest.raises(ValueError, match="'ADJ'"):
        CRF(class_weight={"ADJ": 2.0}).fit(X, y)
