"""A second fit of one estimator object while a fit runs is refused (issue 34, item 6).

Two threads fitting one NonLocalCRF could leave it with the labels of one fit and the weights of
the other. The running fit is held inside its callback (no timing), the second fit must raise at
once and change nothing, and the object then ends exactly as the first fit leaves it.
"""

import copy
import pickle
import threading

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_struct import ChainCRF, DependencyParserBP, NonLocalCRF


def _sequences(seed, labels):
    rng = np.random.RandomState(seed)
    X = [rng.normal(size=(5, 3)) for _ in range(20)]
    y = [np.array(labels)[(x[:, 0] > 0).astype(int)] for x in X]
    return X, y


def _sentences(seed):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(10):
        n_adj = int(rng.integers(0, 2))
        X.append([("the", "DET")] + [("big", "ADJ")] * n_adj + [("dog", "NOUN"), ("barks", "VERB")])
        y.append(np.array([2 + n_adj] + [2 + n_adj] * n_adj + [3 + n_adj, 0]))
    return X, y


class _Held:
    """A callback that blocks the fit at its first call until released."""

    def __init__(self):
        self.inside, self.release = threading.Event(), threading.Event()

    def __call__(self, *args):
        self.inside.set()
        assert self.release.wait(60), "the test never released the fit"
        return False


CASES = {
    "NonLocalCRF": (lambda cb: NonLocalCRF(callback=cb, max_iter=3), _sequences(0, ["a", "b"]),
                    _sequences(1, [10, 20])),
    "ChainCRF": (lambda cb: ChainCRF(callback=cb, max_iter=3), _sequences(0, ["a", "b"]), _sequences(1, [10, 20])),
    "DependencyParserBP": (lambda cb: DependencyParserBP(callback=cb, max_iter=1, n_hash_bits=10), _sentences(0),
                           _sentences(1)),
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_concurrent_second_fit_is_refused_and_changes_nothing(name):
    make, (X1, y1), (X2, y2) = CASES[name]
    held = _Held()
    model = make(held)
    errors = []

    def first():
        try:
            model.fit(X1, y1)
        except BaseException as exc:  # reported to the main thread
            errors.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert held.inside.wait(60)
        model.set_params(callback=None)  # the running fit keeps its own (its working copy's)
        before = pickle.dumps(model)  # pickling, clone and deepcopy work while a fit runs
        clone(model), copy.deepcopy(model)
        with pytest.raises(RuntimeError, match=rf"{name}\.fit was called while another fit .* is running"):
            model.fit(X2, y2)
        assert pickle.dumps(model) == before  # the refused fit changed nothing
    finally:
        held.release.set()
        thread.join(60)
    assert not errors and not thread.is_alive()
    reference = make(None).fit(X1, y1)  # the first fit alone, same data
    if hasattr(reference, "classes_"):
        assert list(model.classes_) == list(reference.classes_)
    for a, b in zip(model.predict(X1), reference.predict(X1)):
        np.testing.assert_array_equal(a, b)
    model.set_params(callback=None).fit(X2, y2)  # the lock is released: fitting again works
    assert pickle.loads(pickle.dumps(model)).predict(X2[:1])[0].shape == (len(X2[0]),)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_failed_fit_releases_the_lock():
    X, y = _sequences(0, ["a", "b"])
    model = NonLocalCRF(max_iter=3)
    with pytest.raises(ValueError):
        model.fit(X, y[:-1])
    model.fit(X, y)  # not refused
    assert list(model.classes_) == ["a", "b"]
