"""Held-out learning of the energy weights psi (NonLocalCRF(psi_holdout=...))."""

import numpy as np
import pytest

from sklearn_struct import NonLocalCRF
from sklearn_struct.energies import SoftConstraintEnergy


def _one_segment_task(n, seed, d=300, T=12, signal=1.5):
    """Every sequence has exactly one segment (3 tokens) of label 1; one weak informative
    feature among d noise features, so the base CRF memorises its training set."""
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n):
        lab = np.zeros(T, dtype=int)
        s = rng.randint(0, T - 3)
        lab[s : s + 3] = 1
        x = rng.normal(size=(T, d))
        x[:, 0] += signal * lab
        X.append(x)
        y.append(lab)
    return X, y


# "at most one segment of label 1": tokens(1) - transitions(1 -> 1) <= 1
AT_MOST_ONE = SoftConstraintEnergy(node_coef=[[0.0, -1.0]], edge_coef=[[[0.0, 0.0], [0.0, 1.0]]], offset=-2.0)


def _fit(X, y, holdout, seed=0):
    return NonLocalCRF(AT_MOST_ONE, c2=0.01, psi_holdout=holdout, psi_init=0.5, n_epochs=3,
                       learning_rate=1.0, random_state=seed).fit(X, y)


def test_held_out_psi_learning_moves_psi_where_in_sample_does_not():
    X, y = _one_segment_task(80, seed=0)
    in_sample = _fit(X, y, None)
    assert in_sample.score(X, y) == 1.0  # memorised: in-sample marginals are the gold labels
    assert abs(in_sample.psi_[0] - 0.5) < 0.01  # so the psi-gradient vanishes (the bug)
    for holdout in (0.3, 3):
        model = _fit(X, y, holdout)
        # held-out marginals put mass on extra segments of label 1: the constraint's weight grows
        assert model.psi_[0] > 0.5 + 0.3, holdout
    # the exact surrogate gradient, with mini-batches that mix folds (per-position transitions)
    exact = NonLocalCRF(AT_MOST_ONE, c2=0.01, psi_holdout=3, psi_init=0.5, n_epochs=3, learning_rate=1.0,
                        psi_gradient="exact", random_state=0).fit(X, y)
    assert exact.psi_[0] > 0.5 + 0.3


def test_psi_holdout_final_base_crf_uses_all_data_and_is_reproducible():
    X, y = _one_segment_task(40, seed=1, d=20)
    plain = NonLocalCRF(c2=0.01).fit(X, y)
    for holdout in (0.25, 2):
        a, b = _fit(X, y, holdout, seed=3), _fit(X, y, holdout, seed=3)
        np.testing.assert_allclose(a.coef_, plain.coef_)  # the final theta: all sequences
        np.testing.assert_array_equal(a.psi_, b.psi_)  # random_state fixes the split and the steps
    # a float holds out that fraction: Algorithm 3 ran on 10 of the 40 sequences
    assert _fit(X, y, 0.25).inference_n_iter_.shape == (10,)
    assert _fit(X, y, 2).inference_n_iter_.shape == (40,)


def test_psi_holdout_validation():
    X, y = _one_segment_task(6, seed=2, d=3)
    with pytest.raises(ValueError, match="psi_holdout=10 folds, but there are only 6"):
        _fit(X, y, 10)
    with pytest.raises(ValueError, match="holds out 0 of 6"):
        _fit(X, y, 0.01)
    with pytest.raises(ValueError, match="psi_holdout"):
        NonLocalCRF(AT_MOST_ONE, psi_holdout=1).fit(X, y)
    with pytest.raises(ValueError, match="learn_theta=True"):
        NonLocalCRF(AT_MOST_ONE, psi_holdout=2, learn_theta=True).fit(X, y)


def test_learn_theta_step_is_the_surrogate_likelihood_gradient():
    # Algorithm 3's theta step (learn_theta=True, exact form) against central finite differences of
    # J = mean_i log Q_i(y_i; theta - grad L(mu_i)) - c2' (||W||^2 + ||A||^2) at fixed marginals mu_i
    from sklearn_struct._psi_learning import _surrogate_gradient, _theta_gradient
    from sklearn_struct.oracles.chain import forward_backward
    from sklearn_struct.utils.packing import transition_pairs

    rng = np.random.RandomState(0)
    L, d, lengths = 3, 4, [4, 2, 5]
    offsets = np.cumsum([0] + lengths).astype(np.int64)
    Xb = rng.normal(size=(offsets[-1], d))
    y = rng.randint(L, size=offsets[-1])
    ef, et = transition_pairs(y, offsets)
    coef, b, A = rng.normal(size=(d, L)), rng.normal(size=L), rng.normal(size=(L, L))
    energy = SoftConstraintEnergy(node_coef=rng.normal(size=(2, L)), edge_coef=rng.normal(size=(2, L, L)),
                                  offset=0.3).fit(None, L)
    psi = rng.uniform(0.5, 2, size=(3, 2))
    _, mu, mu_e = forward_backward(rng.normal(size=(offsets[-1], L)), rng.normal(size=(L, L)), offsets,
                                   edge_marginals="per_position")  # any fixed marginals
    c2 = 0.07

    def J(coef, b, A):
        sur = _surrogate_gradient(energy, mu, mu_e, Xb @ coef + b, A, offsets, psi, y, ef, et, edge_sum=True)
        return sur.log_lik.mean() - c2 * (np.sum(coef**2) + np.sum(A**2)), sur

    _, sur = J(coef, b, A)
    grads = _theta_gradient(Xb, sur.d_node, ef, et, sur.m_edge.sum(axis=0), coef, A, 3, c2)
    eps = 1e-6
    for k, g in enumerate(grads):
        direction = rng.normal(size=g.shape)
        plus = [coef, b, A]
        minus = [coef, b, A]
        plus[k] = plus[k] + eps * direction
        minus[k] = minus[k] - eps * direction
        fd = (J(*plus)[0] - J(*minus)[0]) / (2 * eps)
        assert np.sum(g * direction) == pytest.approx(fd, rel=1e-6, abs=1e-8), k


def test_theta_learning_rate_scales_only_the_theta_step():
    # learn_theta=True: theta_learning_rate=None steps theta with learning_rate; a tiny
    # theta_learning_rate leaves theta at the base CRF and psi where theta-fixed learning puts it
    X, y = _one_segment_task(30, seed=4, d=10)
    kw = dict(c2=0.01, psi_holdout=None, psi_init=0.5, n_epochs=2, learning_rate=1.0, random_state=0)
    fixed = NonLocalCRF(AT_MOST_ONE, **kw).fit(X, y)
    same = NonLocalCRF(AT_MOST_ONE, learn_theta=True, **kw).fit(X, y)
    explicit = NonLocalCRF(AT_MOST_ONE, learn_theta=True, theta_learning_rate=1.0, **kw).fit(X, y)
    np.testing.assert_allclose(explicit.coef_, same.coef_)
    np.testing.assert_allclose(explicit.psi_, same.psi_)
    tiny = NonLocalCRF(AT_MOST_ONE, learn_theta=True, theta_learning_rate=1e-12, **kw).fit(X, y)
    np.testing.assert_allclose(tiny.coef_, fixed.coef_, atol=1e-9)
    np.testing.assert_allclose(tiny.psi_, fixed.psi_, rtol=1e-7)
    assert not np.allclose(same.coef_, fixed.coef_, atol=1e-3)
    slow = NonLocalCRF(AT_MOST_ONE, learn_theta=True, theta_learning_rate=0.1, **kw).fit(X, y)
    moved = lambda m: np.abs(m.coef_ - fixed.coef_).sum()  # noqa: E731
    assert 0 < moved(slow) < moved(same)


@pytest.mark.parametrize("bad", [0.0, -1.0, "fast", np.nan])
def test_theta_learning_rate_rejects_bad_values_and_keeps_the_fitted_model(bad):
    X, y = _one_segment_task(20, seed=5, d=6)
    kw = dict(c2=0.01, psi_holdout=None, n_epochs=1, learn_theta=True, random_state=0)
    model = NonLocalCRF(AT_MOST_ONE, **kw).fit(X, y)
    coef, psi = model.coef_.copy(), model.psi_.copy()
    with pytest.raises(ValueError, match="theta_learning_rate"):
        model.set_params(theta_learning_rate=bad).fit(X, y)
    np.testing.assert_array_equal(model.coef_, coef)
    np.testing.assert_array_equal(model.psi_, psi)
