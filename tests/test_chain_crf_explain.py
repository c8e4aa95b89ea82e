"""explain_prediction (exact per-token attributions) and the eli5 hooks."""

import sys

import numpy as np
import pytest

from _bounded import run_cpu_bounded
import scipy.sparse as sp
from sklearn.pipeline import make_pipeline

from sklearn_struct import ChainCRF
from sklearn_struct.crfsuite import CRF
from sklearn_struct.explain import explain_prediction
from sklearn_struct.oracles.chain import forward_backward, viterbi
from sklearn_struct.preprocessing import SequenceVectorizer


def _data(n_seq=40, n_labels=4, n_features=9, seed=0):
    rng = np.random.RandomState(seed)
    W, A = 2.0 * rng.randn(n_features, n_labels), rng.randn(n_labels, n_labels)
    X, y = [], []
    for _ in range(n_seq):
        T = rng.randint(1, 7)
        x = rng.rand(T, n_features) * (rng.rand(T, n_features) < 0.4)
        labels, _ = viterbi(x @ W + rng.randn(T, n_labels), A, np.array([0, T]))
        X.append(sp.csr_matrix(x))
        y.append(np.array(["abcd"[k] for k in labels]))
    return X, y


def _path_score(unary, A, path):
    return unary[np.arange(len(path)), path].sum() + A[path[:-1], path[1:]].sum()


@pytest.fixture(scope="module")
def fitted():
    X, y = _data()
    return ChainCRF(c2=0.1).fit(X, y), X


def test_parts_sum_to_the_scores_and_the_path_score(fitted):
    crf, X = fitted
    for x in X[:15]:
        ex = explain_prediction(crf, x)
        unary = np.asarray(x @ crf.coef_) + crf.intercept_
        A = crf.transition_
        path = np.searchsorted(crf.classes_, ex.labels)
        assert list(ex.labels) == list(crf.predict([x])[0])
        assert np.isclose(ex.path_score, _path_score(unary, A, path), rtol=1e-12)
        log_z = forward_backward(unary, A, np.array([0, len(path)]))[0][0]
        assert np.isclose(ex.log_probability, ex.path_score - log_z)
        total = 0.0
        for t, tok in enumerate(ex.tokens):
            for part in (tok.chosen, tok.runner_up):
                parts = [c for *_, c in part.features] + [part.bias, part.transition_in, part.transition_out]
                assert part.score == pytest.approx(sum(parts), rel=1e-14, abs=1e-14)
                k = int(np.searchsorted(crf.classes_, part.label))
                assert np.isclose(sum(c for *_, c in part.features) + part.bias, unary[t, k], rtol=1e-12, atol=1e-12)
                for name, value, weight, contrib in part.features:
                    j = int(name[1:])
                    assert value == x[t, j] and weight == crf.coef_[j, k] and contrib == value * weight
            total += tok.chosen.score - tok.chosen.transition_out
            # the runner-up: the best single-token switch, and its margin is the path score's change
            best = max((k for k in range(len(crf.classes_)) if k != path[t]),
                       key=lambda k: _path_score(unary, A, np.where(np.arange(len(path)) == t, k, path)))
            switched = np.where(np.arange(len(path)) == t, best, path)
            assert tok.runner_up.label == crf.classes_[best]
            assert np.isclose(tok.margin, _path_score(unary, A, path) - _path_score(unary, A, switched))
            assert tok.margin >= -1e-12
        assert np.isclose(total, ex.path_score)


def test_top_keeps_the_sum(fitted):
    crf, X = fitted
    full, short = explain_prediction(crf, X[0]), explain_prediction(crf, X[0], top=1)
    for a, b in zip(full.tokens, short.tokens):
        assert len(b.chosen.features) <= 1 and np.isclose(a.chosen.score, b.chosen.score)
    assert "score" in short.to_text()


def test_feature_names_through_a_pipeline_and_crfsuite():
    X = [[{"w": "the", "len": 3}, {"w": "cat", "len": 3}], [{"w": "a", "len": 1}, {"w": "dog", "len": 3},
                                                             {"w": "runs", "len": 4}]]
    y = [["DET", "NOUN"], ["DET", "NOUN", "VERB"]]
    pipe = make_pipeline(SequenceVectorizer(), ChainCRF(c2=0.01)).fit(X, y)
    ex = explain_prediction(pipe, X[1])
    names = {f[0] for tok in ex.tokens for f in tok.chosen.features}
    assert "w=dog" in names or any("dog" in n for n in names)
    crf = CRF(c2=0.01).fit(X, y)
    ex = explain_prediction(crf, X[1])
    assert ex.labels == crf.predict_single(X[1])
    assert {f[0] for f in ex.tokens[2].chosen.features} >= {"w:runs"}
    assert np.isclose(ex.log_probability, crf._fitted_model().log_probability(X[1], ex.labels))
    for tok in ex.tokens:
        assert tok.chosen.bias == 0.0  # CRFsuite's model has no bias


def test_chain_crf_feature_names_are_checked(fitted):
    crf, X = fitted
    with pytest.raises(ValueError, match="feature_names"):
        explain_prediction(crf, X[0], feature_names=["a"])


# ------------------------------------------------------------------ eli5
def test_eli5_explain_weights_is_what_eli5_gives_sklearn_crfsuite():
    eli5 = pytest.importorskip("eli5")
    from sklearn_struct._eli5 import _weights_explanation

    X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}, {"w": "runs"}], [{"w": "I-x"}]]
    y = [["B-NP", "I-NP"], ["B-NP", "I-NP", "O"], ["O"]]
    crf = CRF(c2=0.01).fit(X, y)
    ours = eli5.format_as_text(eli5.explain_weights(crf, top=3))
    assert "w:runs" in ours and "Transition features" in ours
    kwargs = dict(top=2, target_names=None, targets=["O", "B-NP"], feature_re="w:", feature_filter=None)
    built = eli5.format_as_text(_weights_explanation(crf, **kwargs))
    try:
        from eli5.sklearn_crfsuite.explain_weights import explain_weights_sklearn_crfsuite
    except ImportError:
        pytest.skip("sklearn-crfsuite is not installed: eli5's own CRF function cannot be imported")
    assert built == eli5.format_as_text(explain_weights_sklearn_crfsuite(crf, **kwargs))
    assert ours == eli5.format_as_text(explain_weights_sklearn_crfsuite(crf, top=3))


def test_eli5_on_chain_crf_and_predictions(fitted):
    eli5 = pytest.importorskip("eli5")
    crf, X = fitted
    text = eli5.format_as_text(eli5.explain_weights(crf, feature_names=[f"f{j}" for j in range(9)]))
    assert "f0" in text and "<BIAS>" in text
    ex = eli5.explain_prediction(crf, X[0])
    ours = explain_prediction(crf, X[0])
    assert len(ex.targets) == len(ours.tokens)
    for target, tok in zip(ex.targets, ours.tokens):
        weights = [f.weight for f in target.feature_weights.pos + target.feature_weights.neg]
        assert np.isclose(sum(weights), tok.chosen.score) and np.isclose(target.score, tok.chosen.score)


@pytest.mark.parametrize("order", ["eli5 first", "sklearn_struct first"])
def test_eli5_hooks_register_in_either_import_order(order):
    pytest.importorskip("eli5")
    imports = ["import eli5", "import sklearn_struct.crfsuite as sc"]
    if order != "eli5 first":
        imports.reverse()
    code = "\n".join(imports + [
        "import sklearn_struct.crfsuite as sc",
        "crf = sc.CRF(c2=0.01).fit([[{'w': 'a'}, {'w': 'b'}]], [['X', 'Y']])",
        "print(eli5.format_as_text(eli5.explain_weights(crf)))",
    ])
    out = run_cpu_bounded([sys.executable, "-c", code], cpu_seconds=300, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "not supported" not in out.stdout and "w:a" in out.stdout
