"""DLPWClassifier.predict_proba: the marginals reachable through a Pipeline, in scikit-learn's multi-label format."""
import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_struct import DLPWClassifier
from sklearn_struct.datasets import make_multilabel_pairwise


@pytest.fixture(scope="module")
def data():
    return make_multilabel_pairwise(n_samples=80, n_labels=4, random_state=0)


def test_predict_proba_is_the_marginal_of_state_one_through_a_pipeline(data):
    X, Y = data
    pipe = make_pipeline(StandardScaler(), DLPWClassifier(random_state=0)).fit(X, Y)
    proba = pipe.predict_proba(X)
    direct = pipe[-1].predict_marginals(pipe[0].transform(X))
    assert proba.shape == Y.shape
    np.testing.assert_array_equal(proba, direct)
    assert np.all((proba >= 0) & (proba <= 1))


def test_predict_proba_hidden_where_its_contract_cannot_hold(data):
    X, Y = data
    assert hasattr(DLPWClassifier(), "predict_proba")  # unfitted: a Pipeline may still offer it
    one_column = DLPWClassifier(random_state=0).fit(X, Y[:, 0])
    assert not hasattr(one_column, "predict_proba")  # would have to agree with the joint predict
    with pytest.raises(AttributeError, match="predict_proba") as info:
        one_column.predict_proba(X)
    assert "use predict_marginals" in str(info.value.__cause__)
    edge = DLPWClassifier(random_state=0, edge_features=True).fit(X, Y)
    assert not hasattr(edge, "predict_proba")


def test_cv_estimator_passes_predict_proba_through(data):
    from sklearn_struct import DLPWClassifierCV

    X, Y = data
    cv = DLPWClassifierCV(Cs=[1e-3, 1e-2], cv=2, random_state=0).fit(X, Y)
    np.testing.assert_array_equal(cv.predict_proba(X), cv.best_estimator_.predict_marginals(X))
