"""DLPWClassifier as a scikit-learn citizen: check_estimator, GridSearchCV, Pipeline, dask backend."""

import warnings

import joblib
import numpy as np
import pytest
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

from sklearn_struct import DLPWClassifier, DLPWClassifierCV
from sklearn_struct.datasets import make_multilabel_pairwise
from sklearn_struct.metrics import hamming_loss_multilabel, subset_accuracy

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def test_check_estimator():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(DLPWClassifier(), on_fail=None)
    failed = [(r["check_name"], repr(r["exception"])) for r in results if r["status"] == "failed"]
    assert not failed
    tags = DLPWClassifier().__sklearn_tags__()
    assert tags.target_tags.multi_output and tags.classifier_tags.multi_label and tags.input_tags.sparse


@pytest.mark.parametrize("est", [DLPWClassifier(edges="tree", edge_features=True, loss="subset"),
                                 DLPWClassifierCV(Cs=2, cv=2, max_epochs=20, tol=0)], ids=["edge-subset", "cv"])
def test_check_estimator_options(est):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None)
    failed = [(r["check_name"], repr(r["exception"])) for r in results if r["status"] == "failed"]
    assert not failed


def _data():
    X, Y = make_multilabel_pairwise(240, n_features=6, n_labels=5, edge_strength=2.0, noise=0.3, random_state=3)
    return 5.0 * X + 2.0, Y  # unscaled features: the pipeline standardises them


def test_grid_search_over_C_with_structured_scorers_in_a_pipeline():
    X, Y = _data()
    pipe = make_pipeline(StandardScaler(), DLPWClassifier(max_epochs=30, tol=0))
    scoring = {
        "hamming": make_scorer(hamming_loss_multilabel, greater_is_better=False),
        "subset": make_scorer(subset_accuracy),
    }
    search = GridSearchCV(pipe, {"dlpwclassifier__C": [0.0006, 0.6]}, scoring=scoring, refit="subset", cv=3)
    search.fit(X, Y)
    assert search.best_params_["dlpwclassifier__C"] == 0.6
    res = search.cv_results_
    assert np.all(res["mean_test_hamming"] <= 0) and np.all(res["mean_test_subset"] >= 0)
    assert res["mean_test_hamming"][1] > res["mean_test_hamming"][0]
    assert search.predict(X).shape == Y.shape


def test_dask_backend_gives_the_same_result():
    distributed = pytest.importorskip("dask.distributed")
    X, Y = _data()
    clf = DLPWClassifier(C=0.125, max_epochs=10, tol=0, n_jobs=2, track_objective=True)
    ref = clf.fit(X, Y)
    pred, dec, curve = ref.predict(X), ref.decision_function(X), ref.objective_curve_[:, 2:]
    with distributed.Client(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"):
        with joblib.parallel_backend("dask"):
            other = DLPWClassifier(C=0.125, max_epochs=10, tol=0, n_jobs=2, track_objective=True).fit(X, Y)
            np.testing.assert_array_equal(other.predict(X), pred)
            np.testing.assert_allclose(other.decision_function(X), dec)
    np.testing.assert_allclose(other.objective_curve_[:, 2:], curve)
    np.testing.assert_allclose(other.coef_, ref.coef_)
