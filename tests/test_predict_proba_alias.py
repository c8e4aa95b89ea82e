"""predict_proba: the structured estimators' marginals under the name Pipeline delegates."""

import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_struct import (ChainCRF, DependencyParserBP, GPStructClassifier, MLEStructMatcher, NonLocalCRF,
                            PrunedBPMarginals)
from sklearn_struct.crfsuite import CRF
from sklearn_struct.datasets import make_chain_data
from sklearn_struct.preprocessing import SequenceVectorizer


def test_every_marginal_estimator_has_the_alias():
    for cls in (ChainCRF, NonLocalCRF, GPStructClassifier, PrunedBPMarginals, MLEStructMatcher, DependencyParserBP,
                CRF):
        assert callable(getattr(cls, "predict_proba", None)), cls.__name__


def test_chain_pipeline_predict_proba_is_the_marginals():
    X, y = make_chain_data(30, n_labels=3, n_features=5, min_length=2, max_length=6, random_state=0)
    dicts = [[{f"f{j}": float(v) for j, v in enumerate(row)} for row in x] for x in X]
    pipe = make_pipeline(SequenceVectorizer(), ChainCRF(c2=0.1)).fit(dicts, y)
    proba = pipe.predict_proba(dicts)
    expected = pipe[-1].predict_marginals(pipe[0].transform(dicts))
    assert all(p.shape == (len(x), 3) and np.array_equal(p, e) for p, e, x in zip(proba, expected, X))
    assert np.allclose(np.concatenate(proba).sum(axis=1), 1.0)


def test_crfsuite_crf_predict_proba_arrays_in_classes_order():
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}, {"w": "c"}]]
    y = [["x", "y"], ["y", "x", "z"]]
    pipe = make_pipeline(FunctionTransformer(lambda X: X), CRF(c2=0.01)).fit(X, y)
    crf = pipe[-1]
    proba = pipe.predict_proba(X)
    dicts = crf.predict_marginals(X)
    for p, d in zip(proba, dicts):
        assert p.shape == (len(d), len(crf.classes_))
        assert np.allclose(p, [[row[label] for label in crf.classes_] for row in d])
