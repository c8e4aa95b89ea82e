"""One scikit-learn conformance suite over every estimator of the package.

Each estimator is registered once in ``CASES`` with small data in its own form, a parameter to
tune, a featurizer to put in front of it and bad inputs; every test below runs over all of them:
``clone`` / ``get_params`` / ``set_params``, pickle and ``joblib.dump`` / ``load``, ``GridSearchCV``
and ``cross_val_score``, a ``Pipeline``, ``random_state`` determinism, ``n_jobs=1`` against
``n_jobs=2``, the dask backend on a two-process ``LocalCluster``, and bad input.

``check_estimator`` applies only where the estimator takes scikit-learn's own 2-D data
(``DLPWClassifier``); the sequence, graph and matching estimators take lists of structured
samples, which the generic checks cannot generate, so their contract is checked here instead.
"""

import pickle
from dataclasses import dataclass, field
from typing import Callable

import joblib
import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold, check_cv, cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn.preprocessing import StandardScaler

from sklearn_struct import (ChainCRF, DependencyParserBP, DLPWClassifier, GPStructClassifier, MLEStructMatcher,
                            NonLocalCRF, PrunedBPMarginals)
from sklearn_struct.datasets import make_chain_data, make_matchings, make_multilabel_pairwise
from sklearn_struct.datasets._ising import make_ising_grid
from sklearn_struct.preprocessing import PointSetPairFeatures, SequenceVectorizer
from sklearn_struct.utils.graph import images_to_graphs


@dataclass
class Case:
    """How to exercise one estimator: its data, a parameter grid, a front featurizer, bad inputs."""

    name: str
    make: Callable  # **params -> estimator
    data: Callable  # () -> X_train, y_train, X_test
    grid: dict
    front: Callable  # () -> (transformer, X_raw_train, y_train, X_raw_test)
    bad: list = field(default_factory=list)  # (X, y, regex) for fit
    random: bool = True  # has random_state
    parallel: bool = True  # has n_jobs
    forms: dict = field(default_factory=lambda: dict(_LIST_FORMS))  # label form -> y converter


def _outputs(est, X):
    """Everything an estimator predicts on X, as a flat list of arrays."""
    out = []
    for method in ("predict", "predict_marginals"):
        res = getattr(est, method)(X)
        out.extend(np.asarray(r, dtype=float) if np.asarray(r).dtype.kind in "fiub" else np.asarray(r)
                   for r in (res if isinstance(res, list) else [res]))
    return out


def _assert_same(a, b, rtol=1e-7, atol=1e-9):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        if u.dtype.kind in "fiub":
            np.testing.assert_allclose(u, v, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(u, v)


# ------------------------------------------------------------------------------- the cases
def _lists_of_str(y):
    """The loaders' label form (load_conll2000, load_crfpp): a list of lists of strings."""
    return [[f"L{v}" for v in t] for t in y]


def _lists_of_int(y):
    return [[int(v) for v in t] for t in y]


# the generators' and loaders' forms for lists of per-sample label arrays (sequences, graphs, matchings, heads)
_LIST_FORMS = {"list of arrays": list, "list of lists of int": _lists_of_int}
_SEQUENCE_FORMS = {**_LIST_FORMS, "list of lists of str": _lists_of_str}


def _chain_data():
    X, y = make_chain_data(60, n_labels=3, n_features=6, min_length=3, max_length=8, random_state=0)
    return X[:40], y[:40], X[40:]


def _token_dicts(X):
    return [[{f"f{j}": float(v) for j, v in enumerate(row)} for row in x] for x in X]


def _chain_front():
    X, y, Xt = _chain_data()
    return SequenceVectorizer(), _token_dicts(X), y, _token_dicts(Xt)


def _grid_data():
    images, labels = make_ising_grid(n_noisy=2, shape=(8, 8), noise=1.0, random_state=0)
    X = images_to_graphs(images)
    y = list(labels.reshape(len(labels), -1))
    return X[:6], y[:6], X[6:]


def _grid_front():
    images, labels = make_ising_grid(n_noisy=2, shape=(8, 8), noise=1.0, random_state=0)
    y = list(labels.reshape(len(labels), -1))
    return FunctionTransformer(images_to_graphs), list(images[:6]), y[:6], list(images[6:])


def _multilabel_data():
    X, Y = make_multilabel_pairwise(120, n_features=5, n_labels=4, noise=0.2, random_state=0)
    return X[:80], Y[:80], X[80:]


def _multilabel_front():
    X, Y, Xt = _multilabel_data()
    return StandardScaler(), X * 3.0 + 1.0, Y, Xt * 3.0 + 1.0


def _matching_data():
    X, y = make_matchings(30, n_nodes=5, n_features=3, noise=0.3, random_state=0)
    return X[:20], y[:20], X[20:]


def _point_sets(n_pairs, n_points=6, seed=0):
    """Pairs of 2-D landmark sets: a noisy, rotated, shuffled copy of each set, and the permutation."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_pairs):
        P = rng.normal(size=(n_points, 2))
        perm = rng.permutation(n_points)
        angle = rng.uniform(-0.3, 0.3)
        R = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
        Q = np.empty_like(P)
        Q[perm] = P @ R.T + 0.05 * rng.normal(size=P.shape)
        X.append((P, Q))
        y.append(perm)
    return X, y


def _matching_front():
    X, y = _point_sets(24)
    return PointSetPairFeatures(), X[:16], y[:16], X[16:]


_NOUNS, _VERBS, _ADJS = ["dog", "cat", "bird", "fish"], ["sees", "likes", "eats"], ["big", "red"]


def _noun_phrase(rng):
    words = [("the", "DET")] + ([(str(rng.choice(_ADJS)), "ADJ")] if rng.random() < 0.5 else [])
    return words + [(str(rng.choice(_NOUNS)), "NOUN")]


def _sentences(n, seed=0):
    """A toy treebank: subject NP, verb, object NP; heads as in UD (the verb is the root, 0)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        subj, obj = _noun_phrase(rng), _noun_phrase(rng)
        verb = len(subj) + 1  # 1-based position of the verb
        words = subj + [(str(rng.choice(_VERBS)), "VERB")] + obj
        heads = [len(subj)] * (len(subj) - 1) + [verb] + [0] + [verb + len(obj)] * (len(obj) - 1) + [verb]
        X.append(words)
        y.append(np.array(heads))
    return X, y


def _parse_data():
    X, y = _sentences(40)
    return X[:30], y[:30], X[30:]


def _upper_words(X):
    return [[(w.upper(), t) for w, t in s] for s in X]


def _parse_front():
    X, y = _sentences(40)
    return FunctionTransformer(_upper_words), X[:30], y[:30], X[30:]


_X3 = [np.zeros((3, 6)), np.zeros((4, 6))]
_SEQ_BAD = [
    ([], [], "empty|at least one"),
    (_X3, [np.zeros(3)], "(?i)X.*y|number of"),
    ([np.zeros((3, 6)), np.zeros((4, 5))], [np.zeros(3), np.zeros(4)], "Sequence 1"),
    ([np.zeros((3, 6)), np.full((4, 6), np.nan)], [np.zeros(3), np.zeros(4)], "Sequence 1"),
    (_X3, [np.zeros(3), np.zeros(3)], "Sequence 1"),
]
CASES = [
    Case("ChainCRF", lambda **p: ChainCRF(**{"c2": 0.1, "max_iter": 100, **p}), _chain_data, {"c2": [0.1, 1.0]},
         _chain_front, bad=_SEQ_BAD, random=False, forms=_SEQUENCE_FORMS),
    Case(
        "NonLocalCRF",
        lambda **p: NonLocalCRF(**{"c2": 0.1, **p}),
        _chain_data,
        {"c2": [0.1, 1.0]},
        _chain_front,
        bad=_SEQ_BAD,
        random=False,
        forms=_SEQUENCE_FORMS,
    ),
    Case(
        "PrunedBPMarginals",
        lambda **p: PrunedBPMarginals(**{"gamma": 1e-3, "max_iter": 20, **p}),
        _grid_data,
        {"C": [1.0, 10.0]},
        _grid_front,
        bad=[
            ([], [], "empty|at least one"),
            ([(np.zeros((3, 2)), [[0, 1], [1, 5]])], [np.array([0, 1, 0])], "(?i)sample 0|edge"),
            ([(np.full((3, 2), np.inf), [[0, 1]])], [np.array([0, 1, 0])], "Sample 0"),
            ([(np.zeros((3, 2)), [[0, 1]])], [np.array([0, 1])], "Sample 0"),
        ],
        random=False,
        forms=_SEQUENCE_FORMS,
    ),
]
CASES += [
    Case("DLPWClassifier", lambda **p: DLPWClassifier(**{"C": 0.125, "max_epochs": 20, "tol": 0, "random_state": 0, **p}), _multilabel_data,
         {"C": [0.0125, 0.125]}, _multilabel_front,
         bad=[(np.full((4, 5), np.nan), np.zeros((4, 4), dtype=int), "(?i)nan|infinity"),
              (np.zeros((4, 5)), np.zeros((3, 4), dtype=int), "(?i)inconsistent|samples")],
         forms={"2D indicator array": np.asarray}),
    Case("MLEStructMatcher", lambda **p: MLEStructMatcher(**{"alpha": 0.1, "max_iter": 300, "tol": 2e-2, "random_state": 0, **p}), _matching_data,
         {"alpha": [0.1, 1.0]}, _matching_front,
         bad=[([], [], "empty|at least one"),
              ([np.zeros((3, 3, 2)), np.zeros((3, 3))], [np.arange(3), np.arange(3)], "(?i)example 1|X\\[1\\]"),
              ([np.zeros((3, 3, 2))], [np.array([0, 0, 1])], "(?i)example 0|[Xy]\\[0\\]"),
              ([np.full((3, 3, 2), np.nan)], [np.arange(3)], "(?i)example 0|[Xy]\\[0\\]")]),
    Case("GPStructClassifier",
         lambda **p: GPStructClassifier(**{"optimizer": "lbfgs", "n_inducing": 8, "n_samples": 20, "max_iter": 1,
                                            "block_iters": (3, 2, 0), "n_predict_samples": 20, "random_state": 0,
                                            **p}),
         _chain_data, {"n_inducing": [5, 8]}, _chain_front, bad=_SEQ_BAD, forms=_SEQUENCE_FORMS),
    Case("DependencyParserBP", lambda **p: DependencyParserBP(**{"max_iter": 3, "n_hash_bits": 14, "random_state": 0,
                                                                 **p}),
         _parse_data, {"learning_rate": [0.05, 0.2]}, _parse_front,
         bad=[([], [], "empty|at least one"),
              ([[("the", "DET"), ("dog", "NOUN")]], [np.array([2, 3])], "(?i)sentence 0|y\\[0\\]"),
              ([[("the", "DET"), ("dog", "NOUN")]], [np.array([2])], "(?i)sentence 0|y\\[0\\]")]),
]
IDS = [c.name for c in CASES]


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def case(request):
    return request.param


@pytest.fixture(scope="module")
def fitted(case):
    X, y, Xt = case.data()
    return case.make().fit(X, y), X, y, Xt


# ------------------------------------------------------------------------------- the tests
def test_clone_and_params_round_trip(case):
    est = case.make()
    params = est.get_params()
    assert clone(est).get_params() == params
    key, values = next(iter(case.grid.items()))
    assert est.set_params(**{key: values[-1]}).get_params()[key] == values[-1]
    with pytest.raises(NotFittedError):
        case.make().predict(case.data()[2])


def test_pickle_and_joblib_round_trips_predict_the_same(fitted, tmp_path):
    est, _, _, Xt = fitted
    expected = _outputs(est, Xt)
    _assert_same(_outputs(pickle.loads(pickle.dumps(est)), Xt), expected, rtol=0, atol=0)
    joblib.dump(est, tmp_path / "model.joblib")
    _assert_same(_outputs(joblib.load(tmp_path / "model.joblib"), Xt), expected, rtol=0, atol=0)


@pytest.mark.parametrize("cv", [3, None], ids=["cv=3", "cv=None"])
def test_integer_cv_on_every_label_form(case, cv):
    """Integer and default ``cv`` on each label form: ``KFold`` over samples (the structured
    estimators are not classifiers, DLPW's 2-D targets are multi-label), never a crash in
    ``type_of_target`` on lists of lists."""
    X, y, _ = case.data()
    key = next(iter(case.grid))
    for form, convert in case.forms.items():
        yf = convert(y)
        assert type(check_cv(cv, yf, classifier=is_classifier(case.make()))) is KFold, form
        scores = cross_val_score(case.make(), X, yf, cv=cv)
        assert scores.shape == (cv or 5,) and np.all((scores >= 0) & (scores <= 1)), form
        search = GridSearchCV(case.make(), case.grid, cv=cv).fit(X, yf)
        assert search.best_params_[key] in case.grid[key], form
        assert 0 <= search.score(X, yf) <= 1, form


def test_pipeline_with_a_featurizer_in_front(case):
    front, X_raw, y, Xt_raw = case.front()
    pipe = make_pipeline(front, case.make()).fit(X_raw, y)
    Xt = clone(front).fit(X_raw, y).transform(Xt_raw)
    direct = case.make().fit(clone(front).fit_transform(X_raw, y), y)
    _assert_same(_outputs(pipe[-1], pipe[:-1].transform(Xt_raw)), _outputs(direct, Xt))
    _assert_same([np.concatenate(pipe.predict(Xt_raw))], [np.concatenate(direct.predict(Xt))])
    assert isinstance(pipe, Pipeline) and 0 <= pipe.score(X_raw, y) <= 1
    # the marginals stay reachable through the Pipeline: predict_proba is predict_marginals (not for
    # DLPWClassifier, a scikit-learn classifier whose predict_proba would have to agree with predict and
    # decision_function, which LP pseudo-marginals do not)
    if hasattr(pipe[-1], "predict_proba"):
        proba, marginals = pipe.predict_proba(Xt_raw), pipe[-1].predict_marginals(pipe[:-1].transform(Xt_raw))
        _assert_same([np.asarray(p, dtype=float) for p in (proba if isinstance(proba, list) else [proba])],
                     [np.asarray(m, dtype=float) for m in (marginals if isinstance(marginals, list) else [marginals])],
                     rtol=0, atol=0)


def test_random_state_makes_fits_reproducible(case):
    X, y, Xt = case.data()
    params = {"random_state": 0} if case.random else {}
    a, b = case.make(**params).fit(X, y), case.make(**params).fit(X, y)
    _assert_same(_outputs(a, Xt), _outputs(b, Xt), rtol=0, atol=0)


def test_n_jobs_does_not_change_the_model(case):
    if not case.parallel:
        pytest.skip(f"{case.name} has no n_jobs")
    X, y, Xt = case.data()
    a, b = case.make(n_jobs=1).fit(X, y), case.make(n_jobs=2).fit(X, y)
    _assert_same(_outputs(a, Xt), _outputs(b, Xt), rtol=1e-6, atol=1e-8)


def test_bad_input_gets_a_value_error_naming_the_item(case):
    for X, y, match in case.bad:
        with pytest.raises(ValueError, match=match):
            case.make().fit(X, y)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


def test_dask_cluster_fit_equals_the_local_fit(case, dask_client):
    if not case.parallel:
        pytest.skip(f"{case.name} has no n_jobs")
    X, y, Xt = case.data()
    local = case.make(n_jobs=2).fit(X, y)
    with joblib.parallel_backend("dask"):
        remote = case.make(n_jobs=2).fit(X, y)
    _assert_same(_outputs(remote, Xt), _outputs(local, Xt), rtol=1e-6, atol=1e-8)
