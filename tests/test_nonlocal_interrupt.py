"""A NonLocalCRF fit that fails or is interrupted leaves a fitted model exactly as it was (issue 19, item 3)."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_struct import NonLocalCRF
from sklearn_struct.constraints import AtMostSegments


def _data(seed, n_features, labels):
    rng = np.random.RandomState(seed)
    X = [rng.normal(size=(6, n_features)) for _ in range(30)]
    y = [np.array(labels)[(x[:, 0] > 0).astype(int) + (x[:, 1] > 1)] for x in X]
    return X, y


class _Interrupt:
    """A callback that raises KeyboardInterrupt (as Ctrl-C would) at its ``at``-th call."""

    def __init__(self, at):
        self.at, self.calls = at, 0

    def __call__(self, iteration, objective, seconds):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt


@pytest.mark.parametrize("energy", [None, [AtMostSegments("b", 1)]])
@pytest.mark.parametrize("at", [1, 3, "last"])  # in the base CRF's L-BFGS, or the last call (energy: Algorithm 3)
def test_interrupted_fit_keeps_previous_model(energy, at):
    X_old, y_old = _data(0, 3, ["a", "b", "c"])
    X_new, y_new = _data(1, 5, ["a", "b", "c"])  # other features
    model = NonLocalCRF(energy, n_epochs=2, psi_holdout=None, random_state=0).fit(X_old, y_old)  # converges
    before = pickle.dumps(vars(model))
    pred = model.predict(X_old)
    if at == "last":  # the number of calls of an uninterrupted fit
        counter = _Interrupt(0)
        clone(model).set_params(callback=counter).fit(X_new, y_new)
        at = counter.calls
    interrupt = _Interrupt(at)
    model.set_params(callback=interrupt)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X_new, y_new)
    assert interrupt.calls == at
    model.set_params(callback=None)
    assert pickle.dumps(vars(model)) == before  # every attribute as before, fitted ones included
    for p, q in zip(model.predict(X_old), pred):
        np.testing.assert_array_equal(p, q)


def test_failed_fit_keeps_previous_model():
    X, y = _data(0, 3, ["a", "b", "c"])
    model = NonLocalCRF([AtMostSegments("b", 1)], n_epochs=1, psi_holdout=None, random_state=0).fit(X, y)
    before = pickle.dumps(vars(model))
    model.set_params(energy=[AtMostSegments("no such label", 1)])
    with pytest.raises(ValueError, match="no such label"):
        model.fit(*_data(1, 4, ["a", "b", "c"]))  # fails after the base CRF, in the energy's fit
    model.set_params(energy=[AtMostSegments("b", 1)])
    assert pickle.dumps(vars(model)) == before
