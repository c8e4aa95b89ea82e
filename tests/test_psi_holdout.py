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
