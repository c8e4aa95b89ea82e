"""ChainCRF's sample_weight and class_weight: gradients, duplication equivalence, routing."""

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from scipy.optimize import check_grad

from sklearn_struct import ChainCRF
from sklearn_struct._chain_crf import ChainObjective
from sklearn_struct._chain_crf_weights import label_weights, sequence_weights
from sklearn_struct.oracles.chain import viterbi


def _data(n_seq=30, n_labels=3, n_features=8, seed=0, noise=1.0):
    rng = np.random.RandomState(seed)
    W, A = 2.0 * rng.randn(n_features, n_labels), rng.randn(n_labels, n_labels)
    X, y = [], []
    for _ in range(n_seq):
        T = rng.randint(1, 7)
        x = (rng.rand(T, n_features) < 0.3).astype(float)
        labels, _ = viterbi(x @ W + noise * rng.randn(T, n_labels), A, np.array([0, T]))
        X.append(sp.csr_matrix(x))
        y.append(labels)
    return X, y


@pytest.mark.parametrize("n_chunks", [1, 2])
def test_weighted_objective_gradient_matches_finite_differences(n_chunks):
    X, y = _data(12)
    weights = np.random.RandomState(1).rand(12) * 3
    objective = ChainObjective(X, y, 3, 0.1, n_chunks=n_chunks, all_possible_states=True, sample_weight=weights)
    theta = np.random.RandomState(2).randn(objective.n_params)
    err = check_grad(lambda t: objective(t)[0], lambda t: objective(t)[1], theta, epsilon=1e-6)
    assert err < 1e-4 * max(1.0, np.linalg.norm(objective(theta)[1]))


def test_weighted_objective_is_the_weighted_sum_of_per_sequence_objectives():
    X, y = _data(6)
    weights = np.array([0.5, 2.0, 0.0, 1.0, 3.5, 1.25])
    theta_of = ChainObjective(X, y, 3, 0.0, all_possible_states=True)
    theta = np.random.RandomState(3).randn(theta_of.n_params)
    total = ChainObjective(X, y, 3, 0.0, all_possible_states=True, sample_weight=weights)(theta)[0]
    parts = [ChainObjective(X, y, 3, 0.0, all_possible_states=True, sample_weight=np.eye(6)[i])(theta)[0]
             for i in range(6)]
    assert np.isclose(total, np.dot(weights, parts))


def test_weighted_objective_large_scores_take_the_log_space_path():
    X, y = _data(5)
    X = [x * 500.0 for x in X]
    w = np.array([1.0, 2.0, 0.5, 1.0, 3.0])
    dup_X = [x for x, k in zip(X, [2, 4, 1, 2, 6]) for _ in range(k)]
    dup_y = [v for v, k in zip(y, [2, 4, 1, 2, 6]) for _ in range(k)]
    weighted = ChainObjective(X, y, 3, 0.0, all_possible_states=True, sample_weight=w)
    copies = ChainObjective(dup_X, dup_y, 3, 0.0, all_possible_states=True)
    theta = np.random.RandomState(0).randn(weighted.n_params)
    fw, gw = weighted(theta)
    fc, gc = copies(theta)
    assert np.isclose(2 * fw, fc) and np.allclose(2 * gw, gc)


def _duplicated(X, y, counts):
    return ([x for x, k in zip(X, counts) for _ in range(k)], [v for v, k in zip(y, counts) for _ in range(k)])


def test_integer_sample_weight_equals_duplicating_sequences_lbfgs():
    X, y = _data(25, seed=4)
    counts = np.random.RandomState(5).randint(1, 4, size=25)
    a = ChainCRF(c2=0.1, tol=1e-9, epsilon=1e-9, max_iter=500).fit(X, y, sample_weight=counts)
    b = ChainCRF(c2=0.1, tol=1e-9, epsilon=1e-9, max_iter=500).fit(*_duplicated(X, y, counts))
    assert np.allclose(a.coef_, b.coef_, atol=1e-5)
    assert np.allclose(a.transition_, b.transition_, atol=1e-5)
    assert np.isclose(a.objective_, b.objective_)


def test_zero_weight_drops_a_sequence_but_keeps_its_features():
    X, y = _data(20, seed=6)
    w = np.ones(20)
    w[3] = 0.0
    a = ChainCRF(c2=0.1, tol=1e-9, epsilon=1e-9, max_iter=500, all_possible_states=True).fit(X, y, sample_weight=w)
    keep = [i for i in range(20) if i != 3]
    b = ChainCRF(c2=0.1, tol=1e-9, epsilon=1e-9, max_iter=500, all_possible_states=True).fit(
        [X[i] for i in keep], [y[i] for i in keep])
    if np.array_equal(a.classes_, b.classes_):
        assert np.allclose(a.coef_, b.coef_, atol=1e-5)


@pytest.mark.parametrize("algorithm", ["ap", "pa", "arow"])
def test_online_unit_weights_are_the_unweighted_fit(algorithm):
    X, y = _data(20, seed=7)
    a = ChainCRF(algorithm=algorithm, max_iter=5).fit(X, y, sample_weight=np.ones(20))
    b = ChainCRF(algorithm=algorithm, max_iter=5).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.transition_, b.transition_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_l2sgd_unit_weights_are_the_unweighted_fit():
    X, y = _data(20, seed=7)
    a = ChainCRF(algorithm="l2sgd", c2=0.1, max_iter=5).fit(X, y, sample_weight=np.ones(20))
    b = ChainCRF(algorithm="l2sgd", c2=0.1, max_iter=5).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("algorithm", ["l2sgd", "ap", "pa", "arow"])
def test_online_zero_weight_sequences_do_not_move_the_model(algorithm):
    X, y = _data(20, seed=8)
    w = np.zeros(20)
    w[:10] = 1.0
    # the zero-weight sequences carry a label permutation: if they moved anything, the model would change
    y_bad = [v if i < 10 else (v + 1) % 3 for i, v in enumerate(y)]
    a = ChainCRF(algorithm=algorithm, c2=0.1, max_iter=3, all_possible_states=True).fit(X, y_bad, sample_weight=w)
    b = ChainCRF(algorithm=algorithm, c2=0.1, max_iter=3, all_possible_states=True).fit(X, y, sample_weight=w)
    assert np.allclose(a.coef_, b.coef_) and np.allclose(a.transition_, b.transition_)


def test_perceptron_weight_two_equals_a_doubled_update():
    """A single pass over one sequence: weight 2 moves the perceptron exactly as two identical updates
    would from the same mistake (the second copy would see the same Viterbi path only if the first
    update did not fix it, so the comparison is with the doubled step)."""
    X, y = _data(1, seed=9)
    a = ChainCRF(algorithm="ap", max_iter=1, all_possible_states=True).fit(X, y, sample_weight=[2.0])
    b = ChainCRF(algorithm="ap", max_iter=1, all_possible_states=True).fit(X, y)
    assert np.allclose(a.coef_, 2 * b.coef_) and np.allclose(a.transition_, 2 * b.transition_)


def test_class_weight_definition_and_balanced():
    y_enc = [np.array([0, 0, 1]), np.array([2]), np.array([0, 2])]
    classes = np.array(["a", "b", "c"])
    cw = label_weights("balanced", y_enc, classes)
    assert np.allclose(cw, 6 / (3 * np.array([3, 1, 2])))
    s = sequence_weights([1.0, 2.0, 0.5], {"b": 4.0}, y_enc, classes)
    assert np.allclose(s, [1.0 * (1 + 1 + 4) / 3, 2.0 * 1.0, 0.5 * 1.0])
    with pytest.raises(ValueError, match="label 'z'"):
        sequence_weights(None, {"z": 2.0}, y_enc, classes)
    with pytest.raises(ValueError, match="one weight per sequence"):
        sequence_weights([1.0], None, y_enc, classes)
    with pytest.raises(ValueError, match="sequence 1"):
        sequence_weights([1.0, -1.0, 1.0], None, y_enc, classes)


def test_class_weight_is_the_sample_weight_it_defines():
    X, y = _data(20, seed=10)
    cw = {0: 3.0, 2: 0.5}
    a = ChainCRF(c2=0.1, tol=1e-9, epsilon=1e-9, max_iter=500, class_weight=cw).fit(X, y)
    s = [np.mean([cw.get(v, 1.0) for v in labels]) for labels in y]
    b = ChainCRF(c2=0.1, tol=1e-9, epsilon=1e-9, max_iter=500).fit(X, y, sample_weight=s)
    assert np.allclose(a.coef_, b.coef_, atol=1e-6)


def test_sample_weight_routed_by_grid_search():
    from sklearn.model_selection import GridSearchCV, cross_validate

    X, y = _data(24, seed=11)
    w = np.random.RandomState(0).rand(24) + 0.5
    with sklearn.config_context(enable_metadata_routing=True):
        crf = ChainCRF(c2=0.1).set_fit_request(sample_weight=True)
        seen = []
        original = ChainCRF.fit

        def spy(self, X, y, X_dev=None, y_dev=None, sample_weight=None):
            seen.append(None if sample_weight is None else len(sample_weight))
            return original(self, X, y, X_dev=X_dev, y_dev=y_dev, sample_weight=sample_weight)

        ChainCRF.fit = spy
        try:
            GridSearchCV(crf, {"c2": [0.1, 1.0]}, cv=3).fit(X, y, sample_weight=w)
            cross_validate(crf, X, y, cv=3, params={"sample_weight": w})
        finally:
            ChainCRF.fit = original
    assert seen and all(n is not None for n in seen)
    assert 16 in seen and 24 in seen


def test_nonlocal_crf_base_takes_sample_weight():
    from sklearn_struct import NonLocalCRF
    from sklearn_struct.energies import UnigramDictionaryEnergy

    X, y = _data(20, seed=12)
    counts = np.random.RandomState(1).randint(1, 3, size=20)
    a = NonLocalCRF(energy=None, c2=0.1, tol=1e-9).fit(X, y, sample_weight=counts)
    b = NonLocalCRF(energy=None, c2=0.1, tol=1e-9).fit(*_duplicated(X, y, counts))
    assert np.allclose(a.coef_, b.coef_, atol=1e-4)
    with pytest.raises(ValueError, match="energy=None"):
        NonLocalCRF(c2=0.1, energy=UnigramDictionaryEnergy()).fit(X, y, sample_weight=counts)
