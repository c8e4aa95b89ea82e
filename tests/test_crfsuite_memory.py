"""The drop-in's lean L-BFGS fit (sklearn_struct.crfsuite._lean_fit): the feature matrix it builds from the
dicts is released before the first objective evaluation, and the fitted model is bit for bit the one
``ChainCRF.fit`` gives on the same matrix."""

import gc
import weakref
from types import SimpleNamespace

import numpy as np
import pytest

import sklearn_struct.crfsuite._lean_fit as lean_fit
from sklearn_struct import ChainCRF
import sklearn_struct.crfsuite.estimator as estimator
from sklearn_struct.crfsuite import CRF
from sklearn_struct.crfsuite._features import AttributeVocabulary


def _corpus(n=40, seed=0, numbers=True):
    """Feature dicts with strings, negative and positive numbers, bools, nested dicts and lists
    (strings and lists only, all values 1, without ``numbers``)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        labels, tokens, prev = [], [], "A"
        for _ in range(rng.integers(1, 9)):
            label = prev if rng.random() < 0.6 else str(rng.choice(["A", "B", "C"]))
            token = {"w": f"{label.lower()}{rng.integers(3)}", "tags": ["t"] if rng.random() < 0.3 else []}
            if numbers:
                token.update({"x": float(rng.normal(label == "B")), "flag": bool(rng.random() < 0.5),
                              "n": {"k": int(rng.integers(-2, 3))}})
            tokens.append(token)
            labels.append(label)
            prev = label
        X.append(tokens)
        y.append(labels)
    return X, y


def _fit_both(monkeypatch, params, numbers=True, **fit_params):
    X, y = _corpus(numbers=numbers)
    lean = CRF(**params).fit(X, y, **fit_params)
    with monkeypatch.context() as m:
        m.setattr(estimator, "lean_fit_applies", lambda *args: False)
        full = CRF(**params).fit(X, y, **fit_params)
    return lean, full, X


def _without_seconds(log):
    return [{k: v for k, v in record.items() if k != "seconds"} for record in log]


@pytest.mark.parametrize("params, fit_params", [
    ({"c2": 0.1, "max_iterations": 30}, {}),
    ({"c2": 0.1, "max_iterations": 30}, {"numbers": False}),  # all values 1: min_freq 0 without the counts
    ({"c2": 0.1, "max_iterations": 30, "all_possible_states": True}, {"numbers": False}),
    ({"c1": 0.05, "c2": 0.01, "max_iterations": 25, "all_possible_states": True}, {}),
    ({"c2": 0.5, "min_freq": 1.5, "all_possible_transitions": True, "max_iterations": 20,
      "class_weight": {"B": 2.0}}, {"sample_weight": np.linspace(0.5, 2.0, 40)}),
    ({"c2": 0.3, "max_iterations": 15, "num_memories": 3, "linesearch": "Backtracking"},
     {"X_dev": _corpus(8, 1)[0], "y_dev": _corpus(8, 1)[1]}),
])
def test_lean_fit_is_chain_crf_fit(monkeypatch, params, fit_params):
    lean, full, X = _fit_both(monkeypatch, params, **fit_params)
    a, b = lean.estimator_, full.estimator_
    for name in ("coef_", "intercept_", "transition_", "classes_"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.n_iter_, a.objective_, a.n_features_in_) == (b.n_iter_, b.objective_, b.n_features_in_)
    assert a.allowed_transitions_ is None and b.allowed_transitions_ is None
    assert _without_seconds(a.training_log_) == _without_seconds(b.training_log_)
    assert lean.state_features_ == full.state_features_
    assert lean.transition_features_ == full.transition_features_
    assert lean.predict(X) == full.predict(X)
    assert lean.training_log_.last_iteration["loss"] == full.training_log_.last_iteration["loss"]


def test_lean_fit_is_used_only_where_it_is_the_same_fit():
    X, y = _corpus(10)
    calls = []
    original = lean_fit.fit_releasing_features

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(estimator, "fit_releasing_features", spy)
        CRF(max_iterations=3).fit(X, y)
        assert len(calls) == 1
        CRF(algorithm="ap", max_iterations=2).fit(X, y)  # online algorithms: ChainCRF.fit
        CRF(max_iterations=3, allowed_transitions=np.ones((3, 3), bool)).fit(X, y)  # constraints: ChainCRF.fit
        chain = ChainCRF(fit_intercept=False, warm_start=True)
        assert not lean_fit.lean_fit_applies(chain, SimpleNamespace(partial=False), None)  # a parameter it ignores
        assert lean_fit.lean_fit_applies(ChainCRF(fit_intercept=False, c2=0.5), SimpleNamespace(partial=False), None)
        partial = [list(labels) for labels in y]
        partial[0][0] = None
        CRF(max_iterations=3).fit(X, partial)  # partial labels: ChainCRF.fit
        assert len(calls) == 1


def test_feature_matrix_is_freed_before_the_first_evaluation(monkeypatch):
    X, y = _corpus()
    refs, alive = [], []
    fit_transform = AttributeVocabulary.fit_transform
    minimize = lean_fit.minimize_chain_objective

    def keep_refs(self, *args, **kwargs):
        rows, offsets = fit_transform(self, *args, **kwargs)
        refs.extend(weakref.ref(a) for a in (rows, rows.data, rows.indices))
        return rows, offsets

    def check_then_minimize(*args, **kwargs):
        gc.collect()
        alive.append([ref() is not None for ref in refs])
        return minimize(*args, **kwargs)

    monkeypatch.setattr(AttributeVocabulary, "fit_transform", keep_refs)
    monkeypatch.setattr(lean_fit, "minimize_chain_objective", check_then_minimize)
    crf = CRF(c2=0.1, max_iterations=5).fit(X, y)
    assert alive == [[False, False, False]]
    assert crf.predict(X[:2]) == CRF(c2=0.1, max_iterations=5).fit(X, y).predict(X[:2])


@pytest.mark.parametrize("X, y", [
    ([[{"a": "x"}, {"a": "y"}], [], [{"a": "x"}]], [["A", "B"], [], ["A"]]),
    ([[]], [[]]),
])
def test_lean_fit_refuses_what_chain_crf_fit_refuses(monkeypatch, X, y):
    with pytest.raises(ValueError) as lean:
        CRF(max_iterations=3).fit(X, y)
    monkeypatch.setattr(estimator, "lean_fit_applies", lambda *args: False)
    with pytest.raises(ValueError) as full:
        CRF(max_iterations=3).fit(X, y)
    assert str(lean.value) == str(full.value) and "is empty" in str(lean.value)
