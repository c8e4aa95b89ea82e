"""DLPWClassifier(label_sets="auto"): the Good-Turing missing mass of the training label sets picks the decoding."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_struct import DLPWClassifier
from sklearn_struct._dlpw_sets import MISSING_MASS_THRESHOLD, auto_label_sets, missing_mass
from sklearn_struct.datasets import make_multilabel_pairwise


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2), min_size=3, max_size=3), min_size=1, max_size=25))
def test_missing_mass_is_the_share_of_singleton_label_sets(rows):
    rows = [tuple(r) for r in rows]
    singletons = sum(rows.count(r) == 1 for r in rows)  # brute force: count each row's occurrences
    assert missing_mass(np.array(rows)) == pytest.approx(singletons / len(rows))


def test_auto_rule_at_the_threshold():
    assert MISSING_MASS_THRESHOLD == 0.3
    base = [[0, 0]] * 3 + [[1, 1]] * 3  # two sets seen three times each
    at = np.array(base + [[0, 1], [1, 0], [2, 2], [2, 0]][:3] + [[0, 0]])  # 3 singletons of 10: 0.3, not above
    above = np.array(base + [[0, 1], [1, 0], [2, 2], [2, 0]])  # 4 of 10
    assert missing_mass(at) == pytest.approx(0.3) and auto_label_sets(at) == "train"
    assert missing_mass(above) == pytest.approx(0.4) and auto_label_sets(above) == "all"
    assert auto_label_sets(above, needs_sets=True) == "train"


def _distinct_sets(n=60, L=12, seed=0):
    """Training labels whose sets are all distinct (missing mass 1)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    Y = (rng.random((n, L)) < 0.5).astype(int)
    Y = np.unique(Y, axis=0)
    return X[: len(Y)], Y


def test_auto_matches_train_on_few_label_sets_and_all_on_distinct_ones():
    X, Y = make_multilabel_pairwise(150, n_features=4, n_labels=3, noise=0.3, random_state=1)
    kw = dict(C=0.05, max_epochs=20, tol=0)
    auto = DLPWClassifier(**kw).fit(X, Y)  # the default
    assert auto.label_sets == "auto" and auto.label_sets_mode_ == "train"
    assert auto.missing_mass_ == pytest.approx(missing_mass(Y)) and auto.missing_mass_ <= 0.3
    train = DLPWClassifier(label_sets="train", **kw).fit(X, Y)
    np.testing.assert_array_equal(auto.label_sets_, train.label_sets_)
    np.testing.assert_array_equal(auto.predict(X), train.predict(X))

    X, Y = _distinct_sets()
    auto = DLPWClassifier(**kw).fit(X, Y)
    assert auto.missing_mass_ == 1.0 and auto.label_sets_mode_ == "all" and auto.label_sets_ is None
    every = DLPWClassifier(label_sets="all", **kw).fit(X, Y)
    np.testing.assert_array_equal(auto.predict(X), every.predict(X))
    np.testing.assert_allclose(auto.decision_function(X), every.decision_function(X))
    # a labelling no training sample has can be predicted under "all" only
    train = DLPWClassifier(label_sets="train", **kw).fit(X, Y)
    assert train.label_sets_mode_ == "train" and train.missing_mass_ == 1.0
    seen = {tuple(r) for r in Y}
    Xt = np.random.default_rng(1).normal(size=(40, 4)) * 3
    assert all(tuple(r) in seen for r in train.predict(Xt))
    assert any(tuple(r) not in seen for r in auto.predict(Xt))


def test_auto_picks_training_sets_for_edge_features():
    X, Y = _distinct_sets(40, 6)
    kw = {"edge_features": True, "edges": "tree"}
    clf = DLPWClassifier(C=0.05, max_epochs=5, tol=0, **kw).fit(X, Y)
    assert clf.missing_mass_ > MISSING_MASS_THRESHOLD and clf.label_sets_mode_ == "train"
    assert {tuple(r) for r in clf.predict(X)} <= {tuple(r) for r in Y}
    with pytest.raises(ValueError, match="label_sets='train' \\(or 'auto'"):
        DLPWClassifier(label_sets="all", **kw).fit(X, Y)


def test_auto_subset_loss_follows_the_rule_and_trains_accordingly():
    """The subset loss is trained over the training sets or through the loss-augmented LP (a witness node), as
    ``label_sets="auto"`` decides before training: the same fit as the explicit choice."""
    X, Y = _distinct_sets(40, 6)
    auto = DLPWClassifier(C=0.05, max_epochs=5, tol=0, loss="subset").fit(X, Y)
    every = DLPWClassifier(C=0.05, max_epochs=5, tol=0, loss="subset", label_sets="all").fit(X, Y)
    assert auto.missing_mass_ > MISSING_MASS_THRESHOLD and auto.label_sets_mode_ == "all" and auto.label_sets_ is None
    np.testing.assert_array_equal(auto.coef_, every.coef_)
    np.testing.assert_array_equal(auto.objective_curve_[:, 2], every.objective_curve_[:, 2])
    Xr, Yr = np.random.default_rng(2).normal(size=(40, 4)), np.repeat(Y[:4], 10, axis=0)  # 4 sets, 10 times each
    few = DLPWClassifier(C=0.05, max_epochs=5, tol=0, loss="subset").fit(Xr, Yr)
    sets = DLPWClassifier(C=0.05, max_epochs=5, tol=0, loss="subset", label_sets="train").fit(Xr, Yr)
    assert few.label_sets_mode_ == "train"
    np.testing.assert_array_equal(few.coef_, sets.coef_)
