"""Progress of every iterative fit: ``verbose`` lines with elapsed seconds, and a ``callback``
``(iteration, objective, seconds)`` that receives the fit's numbers and may stop it early."""

import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import NonLocalCRF
from sklearn_struct.energies import WordDictionaryEnergy
from sklearn_struct.utils.progress import Progress

from test_sklearn_conformance import CASES, IDS

# Enough iterations that an unstopped fit runs more than one (GP's conformance case runs one).
_LONGER = {"GPStructClassifier": {"max_iter": 3, "tol": 0.0}, "MLEStructMatcher": {"tol": 0.0}}
_SECONDS = re.compile(r"\(\d+\.\d s\)$")


def _n_iter(est):
    return est.n_iter_


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # the unstopped fits
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_verbose_lines_and_callback_that_stops(case, capsys):
    X, y, _ = case.data()
    params = _LONGER.get(case.name, {})
    seen = []

    def record(iteration, objective, seconds):
        seen.append((iteration, objective, seconds))

    est = case.make(verbose=1, callback=record, **params)
    assert est.get_params()["callback"] is record  # stored unchanged
    est.fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    ours = [line for line in lines if line.startswith(f"[{case.name}]")]
    assert ours and all(_SECONDS.search(line) for line in ours), lines[:5]
    assert len(seen) >= 2 and [s[0] for s in seen[:2]] == [1, 2]
    assert all(isinstance(o, float) and np.isfinite(o) and s >= 0 for _, o, s in seen)
    assert [s for *_, s in seen] == sorted(s for *_, s in seen)
    full = _n_iter(est)
    assert full >= 2

    calls = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # a stop asked for is no failure to converge
        stopped = clone(est).set_params(verbose=0, callback=lambda *a: calls.append(a) or True).fit(X, y)
    assert len(calls) == 1 and calls[0][0] == 1
    assert _n_iter(stopped) == 1 < full
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_callback_is_validated(case):
    X, y, _ = case.data()
    with pytest.raises(ValueError, match="callback"):
        case.make(callback="print").fit(X, y)


def _word_data(n=30, seed=0):
    rng = np.random.RandomState(seed)
    words = [np.array([0, 1, 1, 0, 1]), np.array([1, 1, 0, 0, 0])]
    y = [words[i % 2] for i in range(n)]
    X = [np.eye(2)[w] + rng.normal(scale=1.2, size=(5, 2)) for w in y]
    return X, y


def test_nonlocal_callback_covers_the_psi_epochs(capsys):
    X, y = _word_data()
    params = dict(energy=WordDictionaryEnergy(), n_epochs=3, psi_holdout=None, random_state=0)
    seen = []

    def second_stage_stops(iteration, objective, seconds):
        seen.append(iteration)
        return len(seen) > 1 and iteration == 1  # the first epoch of Algorithm 3

    model = NonLocalCRF(callback=second_stage_stops, verbose=1, **params).fit(X, y)
    out = capsys.readouterr().out
    assert "[NonLocalCRF] epoch    1  psi gradient" in out and "epoch    2" not in out
    assert model.psi_history_.shape[0] == 2 and seen[-1] == 1 and len(seen) == model.n_iter_ + 1
    base_stopped = NonLocalCRF(callback=lambda *a: True, **params).fit(X, y)
    assert base_stopped.n_iter_ == 1 and np.all(base_stopped.psi_ == 1.0)  # psi step skipped: psi_init
    assert base_stopped.psi_history_.shape[0] == 1


def test_progress_ignores_non_boolean_answers_and_iteration_zero(capsys):
    calls = []
    progress = Progress("M", callback=lambda *a: calls.append(a) or "yes")
    assert not progress(0, 1.0) and not progress(1, 0.5, seconds=2.0)
    assert calls == [(1, 0.5, 2.0)] and capsys.readouterr().out == ""
    assert Progress("M", callback=lambda *a: np.True_)(1, 0.0)
