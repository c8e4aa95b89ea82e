"""The base linear-chain CRF (NonLocalCRF with energy=None): learning, API, bad input."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from joblib import parallel_backend
from scipy.optimize import approx_fprime
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from sklearn_struct import NonLocalCRF
from sklearn_struct._chain_crf import ChainObjective
from sklearn_struct.datasets import make_chain_data
from sklearn_struct.oracles.chain import forward_backward, viterbi
from sklearn_struct.utils import pack_sequences


@pytest.fixture(scope="module")
def chain_task():
    X, y, params = make_chain_data(
        1500, n_labels=4, n_features=6, transition_scale=2.0, return_params=True, random_state=1
    )
    return X[:1000], y[:1000], X[1000:], y[1000:], params


@pytest.mark.parametrize("sparse", [False, True])
def test_gradient_matches_finite_differences(sparse):
    # sparse input uses observed (attribute, label) pairs only: a different parameter vector
    rng = np.random.RandomState(0)
    X = [rng.normal(size=(rng.randint(1, 6), 4)) for _ in range(8)]
    if sparse:
        X = [sp.csr_matrix(np.where(np.abs(x) > 0.7, x, 0.0)) for x in X]
    y = [rng.randint(0, 3, size=x.shape[0]) for x in X]
    objective = ChainObjective(X, y, 3, c2=0.3, n_chunks=2)
    theta = rng.normal(size=objective.n_params)
    numeric = approx_fprime(theta, lambda t: objective(t)[0], 1e-6)
    np.testing.assert_allclose(objective(theta)[1], numeric, rtol=1e-4, atol=1e-4)


def test_learns_the_generating_crf(chain_task):
    X_tr, y_tr, X_te, y_te, params = chain_task
    crf = NonLocalCRF(c2=0.01).fit(X_tr, y_tr)
    packed, offsets = pack_sequences(X_te)
    true_labels, _ = viterbi(packed @ params.coef, params.transition, offsets)
    bayes_acc = np.mean(true_labels == np.concatenate(y_te))
    assert crf.score(X_te, y_te) > bayes_acc - 0.015
    # marginals agree with the true model's
    _, true_node, _ = forward_backward(packed @ params.coef, params.transition, offsets, edge_marginals="none")
    fitted = np.vstack(crf.predict_marginals(X_te))
    assert np.mean(np.abs(fitted - true_node)) < 0.03
    # and it beats a model without transitions by a clear margin
    with pytest.warns(ConvergenceWarning, match="after 1 iterations"):  # a deliberately short fit
        short = NonLocalCRF(c2=0.01, max_iter=1).fit(X_tr, y_tr)
    assert crf.score(X_te, y_te) > short.score(X_te, y_te)


def test_any_hashable_labels_and_marginals_follow_classes(chain_task):
    X_tr, y_tr, *_ = chain_task
    names = np.array(["NP", "VP", "O", "PP"])
    y_str = [names[labels] for labels in y_tr[:200]]
    crf = NonLocalCRF(c2=0.1).fit(X_tr[:200], y_str)
    np.testing.assert_array_equal(crf.classes_, np.sort(names))
    pred = crf.predict(X_tr[:5])
    marg = crf.predict_marginals(X_tr[:5])
    for p, m in zip(pred, marg):
        assert p.dtype.kind == "U" and m.shape == (len(p), 4)
        np.testing.assert_allclose(m.sum(axis=1), 1.0)


def test_sparse_and_dense_fit_agree(chain_task):
    X_tr, y_tr, *_ = chain_task
    dense = NonLocalCRF(c2=0.1).fit(X_tr[:100], y_tr[:100])
    X_sp = [sp.csr_matrix(x) for x in X_tr[:100]]
    sparse = NonLocalCRF(c2=0.1, all_possible_states=True).fit(X_sp, y_tr[:100])
    np.testing.assert_allclose(dense.coef_, sparse.coef_, atol=1e-6)


def test_observed_pairs_restrict_the_weights():
    # attribute 0 only ever fires on label 0, attribute 1 on both labels
    X = [sp.csr_matrix(np.array([[1.0, 1.0], [0.0, 1.0]]))] * 5
    y = [np.array([0, 1])] * 5
    crf = NonLocalCRF(c2=0.1).fit(X, y)
    assert crf.coef_[0, 1] == 0.0 and crf.coef_[0, 0] != 0.0 and np.all(crf.coef_[1] != 0.0)
    full = NonLocalCRF(c2=0.1, all_possible_states=True).fit(X, y)
    assert full.coef_[0, 1] != 0.0


def test_length_one_sequences():
    X = [np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])] * 10
    y = [np.array([0]), np.array([1])] * 10
    crf = NonLocalCRF(c2=0.01).fit(X, y)
    assert crf.score(X, y) == 1.0


def test_sklearn_citizenship(chain_task):
    X_tr, y_tr, X_te, y_te, _ = chain_task
    crf = NonLocalCRF(c2=0.5)
    assert clone(crf).get_params() == crf.get_params()
    crf.fit(X_tr[:200], y_tr[:200])
    restored = pickle.loads(pickle.dumps(crf))
    np.testing.assert_array_equal(np.concatenate(restored.predict(X_te)), np.concatenate(crf.predict(X_te)))
    scores = cross_val_score(NonLocalCRF(), X_tr[:150], y_tr[:150], cv=KFold(3))
    assert scores.shape == (3,) and np.all(scores > 0.5)
    search = GridSearchCV(NonLocalCRF(), {"c2": [0.01, 100.0]}, cv=3).fit(X_tr[:150], y_tr[:150])
    assert search.best_params_ == {"c2": 0.01}


def test_joblib_backends_give_the_same_model(chain_task):
    X_tr, y_tr, *_ = chain_task
    ref = NonLocalCRF(c2=0.1).fit(X_tr[:120], y_tr[:120])
    chunked = NonLocalCRF(c2=0.1, n_jobs=2).fit(X_tr[:120], y_tr[:120])
    np.testing.assert_allclose(chunked.coef_, ref.coef_, atol=1e-6)


def test_dask_backend(chain_task):
    distributed = pytest.importorskip("dask.distributed")
    X_tr, y_tr, *_ = chain_task
    ref = NonLocalCRF(c2=0.1).fit(X_tr[:60], y_tr[:60])
    with distributed.Client(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None):
        with parallel_backend("dask"):
            est = NonLocalCRF(c2=0.1, n_jobs=2).fit(X_tr[:60], y_tr[:60])
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-6)


def test_not_fitted_and_bad_input():
    crf = NonLocalCRF()
    with pytest.raises(NotFittedError):
        crf.predict([np.zeros((2, 3))])
    X = [np.zeros((3, 2)), np.zeros((2, 2))]
    with pytest.raises(ValueError, match="Sequence 1: 2 tokens in X but 3 labels"):
        crf.fit(X, [np.zeros(3), np.zeros(3)])
    with pytest.raises(ValueError, match="inconsistent numbers of sequences"):
        crf.fit(X, [np.zeros(3)])
    with pytest.raises(ValueError, match="Sequence 1: features contain NaN"):
        crf.fit([np.zeros((3, 2)), np.full((2, 2), np.nan)], [np.zeros(3), np.zeros(2)])
    with pytest.raises(ValueError, match="Sequence 1 has 3 features"):
        crf.fit([np.zeros((3, 2)), np.zeros((2, 3))], [np.zeros(3), np.zeros(2)])
    with pytest.raises(ValueError, match="Sequence 0 is empty"):
        crf.fit([np.zeros((0, 2))], [np.zeros(0)])
    with pytest.raises(ValueError, match="X is empty"):
        crf.fit([], [])
    with pytest.raises(ValueError, match="expected a 2D array"):
        crf.fit([np.zeros(3)], [np.zeros(3)])
    with pytest.raises(ValueError, match="c2"):
        NonLocalCRF(c2=-1.0).fit(X, [np.zeros(3), np.zeros(2)])
    crf.fit(X, [np.array([0, 1, 0]), np.array([1, 0])])
    with pytest.raises(ValueError, match="Sequence 0 has 5 features, but 2 are expected"):
        crf.predict([np.zeros((2, 5))])


def test_warm_start_reuses_the_fitted_crf(chain_task):
    import copy

    X_tr, y_tr, *_ = chain_task
    X_sp = [sp.csr_matrix(np.where(np.abs(x) > 0.5, x, 0.0)) for x in X_tr[:150]]
    cold = NonLocalCRF(c2=0.1, tol=1e-9, max_iter=300).fit(X_sp, y_tr[:150])
    warm = copy.deepcopy(cold).set_params(warm_start=True).fit(X_sp, y_tr[:150])
    # starts at the optimum, so the first delta test (CRFsuite's period: 10 iterations) stops it
    assert warm.n_iter_ <= 10 < cold.n_iter_
    assert warm.objective_ <= cold.objective_ + 1e-9
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-4)
    with pytest.raises(ValueError, match="warm_start=True needs the same features"):
        warm.fit([x[:, :3] for x in X_sp], y_tr[:150])
