"""ChainCRF's CRFsuite algorithms: OWL-QN (c1), l2sgd, averaged perceptron, PA, AROW; options, log, dev set."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import ChainCRF
from sklearn_struct._chain_crf import ChainObjective
from sklearn_struct._chain_crf_online import TrainingData
from sklearn_struct.oracles._chain_online import sgd_epoch
from sklearn_struct.oracles.chain import viterbi


def _linear_chain_data(n_seq, n_labels=3, n_features=12, noise=0.0, seed=0):
    """Sparse binary token features; labels the Viterbi path of a random linear chain model (+ noise)."""
    rng = np.random.RandomState(seed)
    W, A = 2.0 * rng.randn(n_features, n_labels), rng.randn(n_labels, n_labels)
    X, y = [], []
    for _ in range(n_seq):
        T = rng.randint(2, 9)
        x = (rng.rand(T, n_features) < 0.25).astype(float)
        unary = x @ W + noise * rng.randn(T, n_labels)
        labels, _ = viterbi(unary, A, np.array([0, T]))
        X.append(sp.csr_matrix(x))
        y.append(labels)
    return X, y


def _separable_chain_data(n_seq, n_labels=3, n_features=12, gap=1.5, seed=0):
    """Sequences a linear chain model labels with a margin: every token's best unary score leads by ``gap``
    and the transitions are too weak to overturn it (so the labels are separable with margin)."""
    rng = np.random.RandomState(seed)
    W, A = 2.0 * rng.randn(n_features, n_labels), 0.1 * rng.randn(n_labels, n_labels)
    X, y = [], []
    while len(X) < n_seq:
        x = (rng.rand(rng.randint(2, 9), n_features) < 0.4).astype(float)
        top2 = np.sort(x @ W, axis=1)[:, -2:]
        if np.all(top2[:, 1] - top2[:, 0] > gap):
            labels, _ = viterbi(x @ W, A, np.array([0, x.shape[0]]))
            X.append(sp.csr_matrix(x))
            y.append(labels)
    return X, y


@pytest.fixture(scope="module")
def noisy():
    return _linear_chain_data(80, noise=1.5, seed=1)


def _theta_and_objective(crf, X, y, c2):
    """The fitted flat theta and the smooth objective (NLL + c2 |.|^2) it minimises, in ChainObjective's layout."""
    objective = ChainObjective(X, y, len(crf.classes_), c2)
    return objective.params_from(crf.coef_, crf.intercept_, crf.transition_), objective


def test_owlqn_meets_the_l1_optimality_conditions(noisy):
    X, y = noisy
    c1, c2 = 0.8, 0.05
    crf = ChainCRF(c1=c1, c2=c2, tol=0.0, epsilon=1e-9).fit(X, y)
    theta, objective = _theta_and_objective(crf, X, y, c2)
    _, g = objective(theta)
    n_w, L = objective.n_weights, 3
    pen = np.ones(theta.size, bool)
    pen[n_w : n_w + L] = False
    nz, z = pen & (theta != 0), pen & (theta == 0)
    assert z.sum() > 5 and nz.sum() > 5  # a sparse, non-trivial solution
    np.testing.assert_allclose(g[nz] + c1 * np.sign(theta[nz]), 0.0, atol=1e-4)
    assert np.all(np.abs(g[z]) <= c1 + 1e-4)
    np.testing.assert_allclose(g[~pen], 0.0, atol=1e-4)  # the bias is not penalised


def test_owlqn_objective_matches_a_bound_constrained_reference(noisy):
    X, y = noisy
    c1, c2 = 0.3, 0.1
    crf = ChainCRF(c1=c1, c2=c2, tol=0.0, epsilon=1e-9).fit(X, y)
    _, objective = _theta_and_objective(crf, X, y, c2)
    n = objective.n_params

    def split(z):  # theta = z+ - z-, both >= 0: a smooth, bound-constrained problem
        f, g = objective(z[:n] - z[n:])
        l1 = np.ones(n)
        l1[objective.n_weights : objective.n_weights + 3] = 0.0
        return f + c1 * l1 @ (z[:n] + z[n:]), np.concatenate([g + c1 * l1, -g + c1 * l1])

    ref = minimize(split, np.zeros(2 * n), jac=True, method="L-BFGS-B", bounds=[(0, None)] * (2 * n),
                   options={"ftol": 1e-14, "gtol": 1e-10, "maxiter": 5000})
    assert crf.objective_ <= ref.fun + 1e-6 * abs(ref.fun)
    assert crf.objective_ >= ref.fun - 1e-4 * abs(ref.fun)


def test_large_c1_gives_exact_zeros(noisy):
    X, y = noisy
    crf = ChainCRF(c1=1e4, c2=0.0).fit(X, y)
    assert np.count_nonzero(crf.coef_) == 0 and np.count_nonzero(crf.transition_) == 0
    assert crf.training_log_[-1]["active_features"] == 0
    sparse = ChainCRF(c1=2.0, c2=0.1).fit(X, y)
    dense = ChainCRF(c1=0.0, c2=0.1).fit(X, y)
    assert 0 < np.count_nonzero(sparse.coef_) < np.count_nonzero(dense.coef_)


@pytest.mark.parametrize("linesearch", ["MoreThuente", "Backtracking", "StrongBacktracking"])
def test_lbfgs_line_searches_reach_the_optimum(noisy, linesearch):
    X, y = noisy
    ref = ChainCRF(c2=0.1, tol=0.0, epsilon=1e-8).fit(X, y)
    crf = ChainCRF(c2=0.1, solver_options={"linesearch": linesearch, "num_memories": 4}).fit(X, y)
    assert abs(crf.objective_ - ref.objective_) <= 1e-4 * ref.objective_
    theta, objective = _theta_and_objective(ref, X, y, 0.1)
    assert abs(objective(theta)[0] - ref.objective_) < 1e-8 * ref.objective_  # objective_ is the objective


def test_unseen_transitions_stay_zero(noisy):
    X, y = noisy
    y = [np.where(labels == 2, 1, labels) for labels in y]
    y[0] = np.array([2, 2] + [0] * (len(y[0]) - 2))  # label 2 only ever follows 2 (and starts)
    crf = ChainCRF(c2=0.1, all_possible_transitions=False).fit(X, y)
    seen = np.zeros((3, 3), bool)
    for labels in y:
        seen[labels[:-1], labels[1:]] = True
    assert np.all(crf.transition_[~seen] == 0.0) and np.all(crf.transition_[seen] != 0.0)
    full = ChainCRF(c2=0.1).fit(X, y)
    assert np.count_nonzero(full.transition_) == 9 and full.objective_ < crf.objective_


def test_l2sgd_reaches_the_lbfgs_objective(noisy):
    X, y = noisy
    ref = ChainCRF(c2=1.0, tol=0.0, epsilon=1e-8).fit(X, y)
    sgd = ChainCRF(algorithm="l2sgd", c2=1.0, period=30, tol=1e-6).fit(X, y)
    assert sgd.objective_ >= ref.objective_ - 1e-6 * ref.objective_
    assert sgd.objective_ <= ref.objective_ * 1.005, (sgd.objective_, ref.objective_)
    assert [r["iteration"] for r in sgd.training_log_] == list(range(1, sgd.n_iter_ + 1))


def test_sgd_step_matches_a_hand_computation(noisy):
    X, y = noisy
    data = TrainingData(X[:1], y[:1], 3, all_possible_states=False, all_possible_transitions=True)
    rng = np.random.RandomState(0)
    theta = 0.1 * rng.randn(data.n_params)
    lam, t0 = 0.5, 3.0
    eta = 1.0 / (lam * t0)
    bias = slice(data.n_weights, data.n_weights + 3)
    shrunk = (1 - eta * lam) * theta  # CRFsuite's order: shrink, then the log-loss gradient at the shrunk weights
    shrunk[bias] = theta[bias]  # the bias is not penalised
    f, g = ChainObjective(X[:1], y[:1], 3, c2=0.0)(shrunk)
    expected = shrunk - eta * g
    loss, t = sgd_epoch(*data.kernel_args(), np.array([0]), theta, lam, t0, 0.0)
    assert t == 1.0 and loss == pytest.approx(f, rel=1e-10)
    np.testing.assert_allclose(theta, expected, rtol=1e-10, atol=1e-12)


def _tiny():
    """One sequence of 3 tokens: attributes 0, 1, 0 (values 1, 2, 1); gold labels [1, 0, 1]."""
    return [sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 0.0]]))], [np.array([1, 0, 1])]


# With zero weights Viterbi predicts [0, 0, 0] (ties go to the first label): 2 wrong labels, and
# phi(gold) - phi(pred) is
_DELTA_COEF = np.array([[-2.0, 2.0], [0.0, 0.0]])
_DELTA_B, _DELTA_A = np.array([-2.0, 2.0]), np.array([[-2.0, 1.0], [1.0, 0.0]])
_NORM2 = 22.0  # |delta|^2 = 4 + 4 + 4 + 4 + 4 + 1 + 1


@pytest.mark.parametrize("options, step", [
    ({"pa_type": 0, "averaging": False}, np.sqrt(2) / _NORM2),
    ({"pa_type": 1, "c": 0.01, "averaging": False}, 0.01),
    ({"pa_type": 2, "c": 0.1, "averaging": False}, np.sqrt(2) / (_NORM2 + 5.0)),
    ({"pa_type": 0, "error_sensitive": False, "averaging": False}, 1.0 / _NORM2),
    ({"pa_type": 0}, np.sqrt(2) / _NORM2 / 2),  # averaged over the 2 weight vectors (before, after)
])
def test_pa_update_matches_a_hand_computation(options, step):
    X, y = _tiny()
    crf = ChainCRF(algorithm="pa", max_iter=1, all_possible_states=True, solver_options=options).fit(X, y)
    np.testing.assert_allclose(crf.coef_, step * _DELTA_COEF)
    np.testing.assert_allclose(crf.intercept_, step * _DELTA_B)
    np.testing.assert_allclose(crf.transition_, step * _DELTA_A)


def test_perceptron_and_arow_updates_match_a_hand_computation():
    X, y = _tiny()
    ap = ChainCRF(algorithm="ap", max_iter=1, all_possible_states=True).fit(X, y)
    np.testing.assert_allclose(ap.coef_, _DELTA_COEF / 2)  # w = delta, averaged with the zero start
    np.testing.assert_allclose(ap.transition_, _DELTA_A / 2)
    arow = ChainCRF(algorithm="arow", max_iter=1, all_possible_states=True,
                    solver_options={"variance": 0.5, "gamma": 2.0}).fit(X, y)
    alpha = 2.0 / (2.0 + 0.5 * _NORM2)  # cost = margin 0 + 2 wrong labels
    np.testing.assert_allclose(arow.coef_, alpha * 0.5 * _DELTA_COEF)
    np.testing.assert_allclose(arow.intercept_, alpha * 0.5 * _DELTA_B)


@pytest.mark.parametrize("algorithm", ["ap", "pa"])
def test_perceptron_and_pa_separate_separable_data(algorithm):
    X, y = _separable_chain_data(150, seed=2)  # with a weight for every (attribute, label) pair
    stopped = ChainCRF(algorithm=algorithm, max_iter=300, all_possible_states=True).fit(X, y)
    assert stopped.training_log_[-1]["loss"] == 0.0 and stopped.n_iter_ < 300  # an epoch without a mistake
    # the averaged weights separate too once the separating weights dominate the average
    crf = ChainCRF(algorithm=algorithm, max_iter=3 * stopped.n_iter_, epsilon=0.0, all_possible_states=True).fit(X, y)
    assert crf.score(X, y) == 1.0


def test_arow_learns_generated_data():
    X, y = _linear_chain_data(300, seed=3)
    crf = ChainCRF(algorithm="arow", max_iter=50).fit(X[:200], y[:200])
    assert crf.score(X[:200], y[:200]) >= 0.97 and crf.score(X[200:], y[200:]) >= 0.9


def test_training_log_and_dev_set(noisy):
    X, y = noisy
    for algorithm in ("lbfgs", "l2sgd", "ap", "pa", "arow"):
        crf = ChainCRF(algorithm=algorithm, max_iter=3, c1=0.1 if algorithm == "lbfgs" else 0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            crf.fit(X[:60], y[:60], X_dev=X[60:], y_dev=y[60:])
        log = crf.training_log_
        assert len(log) == crf.n_iter_ == 3
        assert {"iteration", "loss", "seconds", "active_features", "dev_accuracy", "dev_loss"} <= set(log[-1])
        assert log[-1]["dev_accuracy"] == pytest.approx(crf.score(X[60:], y[60:]))
    with pytest.warns(ConvergenceWarning):
        assert "error_norm" in ChainCRF(max_iter=2).fit(X, y).training_log_[0]


def test_bad_options_and_dev_sets_are_named(noisy):
    X, y = noisy
    with pytest.raises(ValueError, match="unknown option 'gamma' for algorithm='pa'"):
        ChainCRF(algorithm="pa", solver_options={"gamma": 1.0}).fit(X, y)
    with pytest.raises(ValueError, match="pa_type"):
        ChainCRF(algorithm="pa", solver_options={"pa_type": 3}).fit(X, y)
    with pytest.raises(ValueError, match="linesearch"):
        ChainCRF(solver_options={"linesearch": "Wolfe"}).fit(X, y)
    with pytest.raises(ValueError, match="calibration_samples"):
        ChainCRF(algorithm="l2sgd", solver_options={"calibration_samples": 0}).fit(X, y)
    with pytest.raises(ValueError, match="algorithm"):
        ChainCRF(algorithm="sgd").fit(X, y)
    with pytest.raises(ValueError, match="together"):
        ChainCRF().fit(X, y, X_dev=X)
    with pytest.raises(ValueError, match="y_dev: Sequence 1: label 7"):
        ChainCRF().fit(X, y, X_dev=X[:2], y_dev=[y[0], np.full(len(y[1]), 7)])
    with pytest.raises(ValueError, match="X_dev, y_dev: .*features"):
        ChainCRF().fit(X, y, X_dev=[x[:, :5] for x in X[:2]], y_dev=y[:2])
    with pytest.raises(ValueError, match="c2 > 0"):
        ChainCRF(algorithm="l2sgd", c2=0.0).fit(X, y)


def test_max_iter_warns_only_when_it_stops_lbfgs(noisy):
    X, y = noisy
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        ChainCRF(max_iter=2).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ChainCRF().fit(X, y)
        ChainCRF(algorithm="ap", max_iter=2).fit(X, y)  # epochs are the online algorithms' budget


def test_default_fit_on_conll_converges_without_a_warning():
    from sklearn_struct.datasets import load_conll2000
    from sklearn_struct.preprocessing import WindowFeaturizer

    try:
        train = load_conll2000("train")
    except (FileNotFoundError, OSError):
        pytest.skip("CoNLL-2000 not available (set SKLEARN_STRUCT_DATA)")
    X = WindowFeaturizer().fit_transform(train.sequences[:300])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        crf = ChainCRF().fit(X, train.labels[:300])
    assert crf.training_log_[-1]["improvement"] < 1e-5 and crf.score(X, train.labels[:300]) > 0.9


@pytest.mark.parametrize("algorithm", ["lbfgs", "l2sgd", "ap", "pa", "arow"])
def test_without_intercept_the_bias_stays_zero(noisy, algorithm):
    X, y = noisy
    crf = ChainCRF(algorithm=algorithm, c1=0.1 if algorithm == "lbfgs" else 0.0, fit_intercept=False,
                   max_iter=20 if algorithm == "l2sgd" else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit(X, y)
    assert np.all(crf.intercept_ == 0.0) and np.count_nonzero(crf.coef_) > 0 and crf.score(X, y) > 0.6


def test_owlqn_reaches_crfsuites_objective(noisy):
    """Without the intercept the model is CRFsuite's: same c1 / c2, same features, same optimum."""
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    from sklearn_struct.preprocessing import SequenceVectorizer

    X, y = noisy
    dicts = [[{f"f{j}": 1.0 for j in row.indices} for row in x] for x in X]
    labels = [[f"L{v}" for v in seq] for seq in y]
    ref = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.3, c2=0.1, all_possible_transitions=True, epsilon=1e-10,
                               delta=1e-12, period=5).fit(dicts, labels)
    ours = ChainCRF(c1=0.3, c2=0.1, fit_intercept=False, epsilon=1e-10, tol=1e-12, period=5)
    ours.fit(SequenceVectorizer().fit_transform(dicts), labels)
    crfsuite_loss = ref.training_log_.last_iteration["loss"]
    assert ours.objective_ == pytest.approx(crfsuite_loss, rel=1e-5)
    assert np.count_nonzero(ours.coef_) + np.count_nonzero(ours.transition_) == \
        ref.training_log_.last_iteration["active_features"]
