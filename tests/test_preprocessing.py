"""Tests of sklearn_struct.preprocessing: SequenceVectorizer and WindowFeaturizer."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline

from sklearn_struct.datasets import load_conll
from sklearn_struct.preprocessing import SequenceVectorizer, WindowFeaturizer, _word_shape

TOKENS = [
    [
        {"w": "the", "len": 3, "cap": False},
        {"w": "Cat", "len": 3, "cap": True, "tags": ["n", "sg"]},
    ],
    [{"w": "sat", "len": 3.5}],
    [{"w": "the", "tags": ["det"]}, {"w": "mat"}, {"w": "on", "cap": False}],
]


def _expected_items(token):
    """The (column name, value) pairs a token dict must produce, zeros left out."""
    items = {}
    for key, value in token.items():
        if isinstance(value, str):
            items[f"{key}={value}"] = 1.0
        elif isinstance(value, list):
            items.update({f"{key}={v}": 1.0 for v in value})
        elif value:
            items[key] = float(value)
    return items


def _row_items(row, names):
    row = sp.csr_matrix(row)
    return {names[j]: v for j, v in zip(row.indices, row.data)}


# ----------------------------------------------------------------------- SequenceVectorizer


def test_round_trip_of_feature_dicts():
    vec = SequenceVectorizer()
    Xt = vec.fit_transform(TOKENS)
    names = vec.get_feature_names_out()
    assert [x.shape[0] for x in Xt] == [2, 1, 3]
    assert all(sp.isspmatrix_csr(x) and x.shape[1] == len(names) for x in Xt)
    for seq, x in zip(TOKENS, Xt):
        for token, row in zip(seq, x):
            assert _row_items(row, names) == _expected_items(token)
    assert list(names) == sorted(names)


def test_fit_then_transform_equals_fit_transform():
    Xa = SequenceVectorizer().fit_transform(TOKENS)
    vec = SequenceVectorizer().fit(TOKENS)
    Xb = vec.transform(TOKENS)
    assert all((a != b).nnz == 0 for a, b in zip(Xa, Xb))
    new = vec.transform([[{"w": "cat"}, {"w": "the", "len": 1}]])
    assert new[0].shape == (2, Xa[0].shape[1])


def test_unseen_features_are_ignored():
    vec = SequenceVectorizer().fit(TOKENS)
    names = vec.get_feature_names_out()
    (x,) = vec.transform([[{"w": "dog", "new": 1.0, "tags": ["det", "pl"]}, {"other": "x"}]])
    assert _row_items(x[0], names) == {"tags=det": 1.0}
    assert x[1].nnz == 0


def test_min_freq_drops_rare_features():
    vec = SequenceVectorizer(min_freq=2).fit(TOKENS)
    # w=the (2), len (3; zero values are not counted), cap (1 true value) -> only two kept
    assert vec.get_feature_names_out().tolist() == ["len", "w=the"]
    assert vec.vocabulary_ == {"len": 0, "w=the": 1}
    (x,) = vec.transform([[{"w": "the", "cap": True, "len": 2}]])
    assert x.toarray().tolist() == [[2.0, 1.0]]
    with pytest.raises(ValueError, match="No features left.*min_freq=10"):
        SequenceVectorizer(min_freq=10).fit(TOKENS)


def test_dense_output_dtype_and_unsorted_columns():
    Xt = SequenceVectorizer(sparse=False, dtype=np.float32).fit_transform(TOKENS)
    assert all(isinstance(x, np.ndarray) and x.dtype == np.float32 for x in Xt)
    assert [x.shape[0] for x in Xt] == [2, 1, 3]
    vec = SequenceVectorizer(sort=False).fit(TOKENS)
    assert vec.get_feature_names_out()[:2].tolist() == ["w=the", "len"]


@pytest.mark.parametrize(
    "X, message",
    [
        ([], "X is empty"),
        ("tokens", "X must be a list of sequences"),
        ({"w": "a"}, "X must be a list of sequences"),
        ([[{"w": "a"}], []], "Sequence 1 is empty"),
        ([[{"w": "a"}], {"w": "b"}], "Sequence 1: expected a list of token feature dicts"),
        ([[{"w": "a"}], [{"w": "b"}, "c"]], "Sequence 1, token 1: expected a dict of .* got str"),
        ([[{"w": "a"}, {"w": {"nested": 1}}]], "Sequence 0, token 1: feature 'w' .* type dict"),
        ([[{"w": "a"}], [{"x": [1, 2]}]], "Sequence 1, token 0: feature 'x' .* type list"),
        ([[{"w": "a"}], [{"x": np.nan}]], "Sequence 1, token 0: feature 'x' is NaN"),
        ([[{"w": "a"}], [{"x": None}]], "Sequence 1, token 0: feature 'x' is NaN, .* or None"),
    ],
)
def test_vectorizer_bad_input_names_the_sequence(X, message):
    with pytest.raises(ValueError, match=message):
        SequenceVectorizer().fit(X)
    fitted = SequenceVectorizer().fit([[{"w": "a", "x": 1.0}]])
    with pytest.raises(ValueError, match=message):
        fitted.transform(X)


def test_vectorizer_parameters_are_validated_in_fit():
    vec = SequenceVectorizer(min_freq=0)  # stored unchanged
    assert vec.get_params()["min_freq"] == 0
    with pytest.raises(ValueError, match="min_freq"):
        vec.fit(TOKENS)
    with pytest.raises(NotFittedError):
        SequenceVectorizer().transform(TOKENS)


# -------------------------------------------------------------------------- WindowFeaturizer

SENTS = [
    [("He", "PRP", "B-NP"), ("reckons", "VBZ", "B-VP"), ("the", "DT", "B-NP"),
     ("1,250", "CD", "I-NP"), ("deficit", "NN", "I-NP")],
    [("Rates", "NNS", "B-NP")],
    [("IBM", "NNP", "B-NP"), ("rose", "VBD", "B-VP")],
]


def test_window_features_at_sentence_boundaries():
    dicts = WindowFeaturizer(window=2).to_dicts(SENTS)
    first, second, last = dicts[0][0], dicts[0][1], dicts[0][-1]
    assert first["BOS"] is True and "EOS" not in first
    assert not any(k.startswith("-") for k in first)
    assert {"+1:word.lower()", "+2:word.lower()"} <= set(first)
    assert "-1:postag" in second and "-2:postag" not in second
    assert last["EOS"] is True and not any(k.startswith("+") for k in last)
    single = dicts[1][0]
    assert single["BOS"] is True and single["EOS"] is True
    assert not any(k[0] in "+-" for k in single)
    # a neighbour's features are that neighbour's own, prefixed
    for i in range(1, 5):
        for key in ("word.lower()", "word.shape", "postag", "postag[:2]"):
            assert dicts[0][i][f"-1:{key}"] == dicts[0][i - 1][key]
    assert not any(k[0] in "+-" for k in WindowFeaturizer(window=0).to_dicts(SENTS)[0][2])


def test_token_features():
    d = WindowFeaturizer().to_dicts(SENTS)[0][3]  # "1,250"
    assert d["bias"] == 1.0
    assert d["word.lower()"] == "1,250" and d["word[-2:]"] == "50" and d["word[-3:]"] == "250"
    assert d["word.shape"] == "d,dd" and d["postag"] == "CD" and d["postag[:2]"] == "CD"
    assert "word.isdigit()" not in d and "word.isupper()" not in d  # false flags are absent
    assert d["-1:word.lower()"] == "the" and d["+1:postag"] == "NN"
    ibm = WindowFeaturizer().to_dicts(SENTS)[2][0]
    assert ibm["word.isupper()"] is True and ibm["+1:word.lower()"] == "rose"
    assert [_word_shape(w) for w in ("Smith", "McDonald", "1987", "a", "U.S.")] == [
        "Xxx", "XxXxx", "dd", "x", "X.X."
    ]


def test_token_forms_give_the_same_features():
    feat = WindowFeaturizer()
    as_tuples = feat.to_dicts(SENTS)
    as_dicts = feat.to_dicts([[{"word": w, "pos": p} for w, p, _ in s] for s in SENTS])
    as_arrays = feat.to_dicts([np.array(s) for s in SENTS])
    assert as_tuples == as_dicts == as_arrays
    words_only = feat.to_dicts([[w for w, _, _ in s] for s in SENTS])
    assert words_only[0][1]["word.lower()"] == "reckons"
    assert not any("postag" in k for s in words_only for d in s for k in d)


def test_featurizer_equals_vectorizer_on_its_dicts():
    feat = WindowFeaturizer(min_freq=1)
    Xt = feat.fit_transform(SENTS)
    vec = SequenceVectorizer()
    Xv = vec.fit_transform(feat.to_dicts(SENTS))
    assert feat.get_feature_names_out().tolist() == vec.get_feature_names_out().tolist()
    assert all((a != b).nnz == 0 for a, b in zip(Xt, Xv))
    Xs = feat.transform(SENTS)
    assert all((a != b).nnz == 0 for a, b in zip(Xt, Xs))
    # unseen words at transform: known POS columns still fire, the word is ignored
    (x,) = feat.transform([[("zebras", "NNS")]])
    names = feat.get_feature_names_out()
    active = set(names[x.indices])
    assert "postag=NNS" in active and not any("zebras" in n for n in active)


def test_featurizer_min_freq():
    full = WindowFeaturizer().fit(SENTS).get_feature_names_out()
    pruned = WindowFeaturizer(min_freq=2).fit(SENTS).get_feature_names_out()
    assert set(pruned) < set(full)
    assert {"bias", "BOS", "EOS", "postag[:2]=NN"} <= set(pruned)
    assert "word.lower()=rose" not in pruned


@pytest.mark.parametrize(
    "X, message",
    [
        ([], "X is empty"),
        ([[("a", "DT")], []], "Sequence 1 is empty"),
        ([[("a", "DT")], [("b", "NN"), 3]], "Sequence 1, token 1: expected a \\(word, POS"),
        ([[("a", "DT")], [("b", 7)]], "Sequence 1, token 0: the word and POS must be str"),
        ([[("a", "DT")], [{"pos": "NN"}]], "Sequence 1, token 0: the word and POS must be str"),
        ([[("a", "DT")], [()]], "Sequence 1, token 0: expected"),
        ("a sentence", "X must be a list of sequences"),
    ],
)
def test_featurizer_bad_input_names_the_sequence(X, message):
    with pytest.raises(ValueError, match=message):
        WindowFeaturizer().fit(X)
    with pytest.raises(ValueError, match=message):
        WindowFeaturizer().to_dicts(X)


def test_featurizer_parameters():
    with pytest.raises(ValueError, match="window"):
        WindowFeaturizer(window=-1).fit(SENTS)
    with pytest.raises(ValueError, match="suffix_lengths"):
        WindowFeaturizer(suffix_lengths=(0, 2)).fit(SENTS)
    with pytest.raises(ValueError, match="suffix_lengths"):
        WindowFeaturizer(suffix_lengths=["x"]).to_dicts(SENTS)
    d = WindowFeaturizer(suffix_lengths=[4]).to_dicts(SENTS)[0][1]
    assert d["word[-4:]"] == "kons" and "word[-2:]" not in d
    with pytest.raises(NotFittedError):
        WindowFeaturizer().transform(SENTS)


class _ShapeRecorder(BaseEstimator):
    """Final pipeline step: checks it gets a list of CSR matrices of one width."""

    def fit(self, X, y=None):
        assert all(sp.issparse(x) for x in X)
        self.n_features_in_ = X[0].shape[1]
        assert all(x.shape[1] == self.n_features_in_ for x in X)
        return self

    def predict(self, X):
        return [np.full(x.shape[0], "O") for x in X]

    def score(self, X, y):
        return float(np.mean(np.concatenate(self.predict(X)) == np.concatenate(y)))


@pytest.mark.parametrize("transformer", [WindowFeaturizer(window=1), SequenceVectorizer()])
def test_clone_params_pickle(transformer):
    params = transformer.get_params()
    twin = clone(transformer)
    assert twin.get_params() == params and twin is not transformer
    X = SENTS if isinstance(transformer, WindowFeaturizer) else TOKENS
    fitted = clone(transformer).fit(X)
    restored = pickle.loads(pickle.dumps(fitted))
    assert all((a != b).nnz == 0 for a, b in zip(fitted.transform(X), restored.transform(X)))
    assert transformer.__sklearn_tags__().input_tags.two_d_array is False


def test_pipeline_and_grid_search():
    y = [[t for _, _, t in s] for s in SENTS]
    pipe = Pipeline([("feat", WindowFeaturizer()), ("model", _ShapeRecorder())])
    pipe.set_params(feat__window=1).fit(SENTS, y)
    assert pipe.named_steps["model"].n_features_in_ == len(pipe[0].get_feature_names_out())
    assert [len(p) for p in pipe.predict(SENTS)] == [5, 1, 2]
    grid = GridSearchCV(pipe, {"feat__window": [0, 2]}, cv=KFold(3)).fit(SENTS, y)
    assert grid.best_params_["feat__window"] in (0, 2)


# ------------------------------------------------------------------------------ real data


@pytest.mark.slow
def test_conll2000_featurization(data_home):
    train = load_conll(data_home / "conll2000" / "train.txt.gz").sequences
    test = load_conll(data_home / "conll2000" / "test.txt.gz").sequences
    assert sum(map(len, train)) == 211727
    feat = WindowFeaturizer()
    X_train = feat.fit_transform(train)  # its speed is tracked by benchmarks/peers/bench_conll_crfsuite.py
    X_test = feat.transform(test)
    n_features = len(feat.get_feature_names_out())
    assert n_features > 50_000
    assert [x.shape[0] for x in X_train] == [len(s) for s in train]
    assert {x.shape[1] for x in X_train} == {x.shape[1] for x in X_test} == {n_features}
    bias = feat.vectorizer_.vocabulary_["bias"]
    train_nnz = np.array([x.nnz for x in X_train]) / np.array([x.shape[0] for x in X_train])
    assert 15 < train_nnz.mean() < 35
    assert all(np.all(x[:, bias].toarray() == 1) for x in X_test[:50])
