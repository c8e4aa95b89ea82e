"""sklearn_struct.crfsuite beyond sklearn-crfsuite's own tests: python-crfsuite's feature rules
(checked against python-crfsuite itself), the same model as ChainCRF, exact sequence
probabilities, the model file, bad input, model selection with crfsuite's scorers."""

import inspect
import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score

import sklearn_struct.crfsuite as sklearn_crfsuite
from sklearn_struct import ChainCRF
from sklearn_struct.crfsuite import CRF, scorers
from sklearn_struct.crfsuite._features import AttributeVocabulary, _item_attributes, split_rows

pycrfsuite = pytest.importorskip("pycrfsuite")


def _weather(n=30, seed=0):
    """Tokens whose label depends on their own features and on the previous label."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        length = rng.integers(2, 8)
        labels, tokens, prev = [], [], "sunny"
        for _ in range(length):
            label = prev if rng.random() < 0.7 else ("rainy" if prev == "sunny" else "sunny")
            cue = "umbrella" if label == "rainy" else "hat"
            tokens.append({"obj": cue if rng.random() < 0.8 else "coat", "temp": float(rng.normal(label == "sunny")),
                           "tags": ["x", "y"] if rng.random() < 0.5 else [], "day": {"week": bool(rng.random() < 0.5)}})
            labels.append(label)
            prev = label
        X.append(tokens)
        y.append(labels)
    return X, y


# ------------------------------------------------------------------ features: python-crfsuite's rules
_names = st.text(alphabet="abc:é", min_size=1, max_size=3)
_leaf = st.one_of(st.floats(-3, 3, allow_nan=False), st.booleans(), st.integers(-3, 3), _names,
                  _names.map(lambda s: s.encode("utf8")))
_values = st.recursive(_leaf, lambda inner: st.one_of(st.dictionaries(_names, inner, max_size=3),
                                                      st.lists(_names, max_size=3)), max_leaves=6)
_items = st.one_of(st.dictionaries(_names, _values, max_size=4), st.lists(_names, max_size=3))


@settings(max_examples=200, deadline=None)
@given(_items)
def test_attributes_are_python_crfsuites(item):
    ours = _item_attributes(item, 0, 0, "X")
    names = [name for name, _ in ours]
    theirs = pycrfsuite.ItemSequence([item]).items()[0]
    if len(set(names)) == len(names):  # python-crfsuite's items() keeps one value per name
        assert dict(ours) == pytest.approx(theirs)
    else:
        assert set(names) == set(theirs)


def test_repeated_attributes_add_up_and_zeros_are_dropped():
    vocab = AttributeVocabulary()
    rows, offsets = vocab.fit_transform([[{"a": "x", "a:x": 2.0, "b": False}], [["a:x"]]])
    assert vocab.names() == ["a:x"] and rows.toarray().tolist() == [[3.0], [1.0]]
    assert offsets.tolist() == [0, 1, 2]


@pytest.mark.parametrize("X, message", [
    ([[{"a": None}]], "sequence 0, token 0: value of 'a' must be a number"),
    ([[{"a": 1}], [{"a": float("nan")}]], "sequence 1, token 0: attribute value nan is not finite"),
    ([[{"a": 1}, 3]], "sequence 0, token 1: token features must be a dict"),
    ([[{1: 1}]], "sequence 0, token 0: attribute name must be str or bytes"),
    ([[{"a": b"\xff"}]], "sequence 0, token 0: value of 'a' b'\\\\xff' is not UTF-8"),
    ([{"a": 1}], "X, sequence 0: expected a list of token features"),
    ([], "X is empty"),
])
def test_bad_features_name_the_token(X, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        CRF().fit(X, [["s"] * len(x) if isinstance(x, list) else ["s"] for x in X])


def test_bad_labels_and_parameters():
    X, y = _weather(5)
    with pytest.raises(ValueError, match="y, sequence 2: 1 labels for"):
        CRF().fit(X, y[:2] + [["sunny"]] + y[3:])
    with pytest.raises(ValueError, match="one label sequence per sequence of X"):
        CRF().fit(X, y[:4])
    with pytest.raises(ValueError, match="Pass both X_dev and y_dev"):
        CRF().fit(X, y, y_dev=y)
    with pytest.raises(ValueError, match="c1 = 0.1 is not a parameter of algorithm 'l2sgd'"):
        CRF(algorithm="l2sgd", c1=0.1).fit(X, y)
    with pytest.raises(ValueError, match="pa_type"):
        CRF(algorithm="pa", pa_type=3).fit(X, y)
    with pytest.raises(ValueError, match="trainer_cls"):
        CRF(trainer_cls=object).fit(X, y)


# ------------------------------------------------------------------ the model
def test_constructor_is_sklearn_crfsuites():
    theirs = pytest.importorskip("sklearn_crfsuite").CRF
    ours, ref = inspect.signature(CRF).parameters, inspect.signature(theirs).parameters
    same = [(p.name, p.default, p.kind) for p in ours.values()][: len(ref)]
    assert same == [(p.name, p.default, p.kind) for p in ref.values()]
    # extensions come after them, keyword-only, off by default
    assert all(p.kind == p.KEYWORD_ONLY and p.default is None for p in list(ours.values())[len(ref):])
    assert [p.name for p in list(ours.values())[len(ref):]] == ["allowed_transitions", "class_weight",
                                                                "allowed_transitions_in_fit"]


def test_same_model_as_chain_crf_on_the_vectorised_data():
    X, y = _weather(40)
    crf = CRF(c2=0.1, all_possible_transitions=True, max_iterations=50).fit(X, y)
    vocab = AttributeVocabulary()
    rows, offsets = vocab.fit_transform(X)
    chain = ChainCRF(c2=0.1, max_iter=50, fit_intercept=False, min_freq=0.0)  # CRFsuite's default feature.minfreq
    chain.fit(split_rows(rows, offsets), [np.array(s) for s in y])
    assert crf.predict(X) == [p.tolist() for p in chain.predict(split_rows(rows, offsets))]
    for dicts, arr in zip(crf.predict_marginals(X[:5]), chain.predict_marginals(split_rows(rows, offsets)[:5])):
        got = np.array([[d[label] for label in chain.classes_] for d in dicts])
        np.testing.assert_allclose(got, arr, atol=1e-10)
    names = vocab.names()
    for (attr, label), w in crf.state_features_.items():
        assert w == pytest.approx(chain.coef_[names.index(attr), list(chain.classes_).index(label)], abs=1e-9)
    assert crf.classes_ == ["sunny", "rainy"] or crf.classes_ == list(dict.fromkeys(sum(y, [])))


def test_sequence_probabilities_are_exact():
    X, y = _weather(30)
    crf = CRF(c2=0.5).fit(X, y)
    tagger, xseq = crf.tagger_, X[0][:4]
    tagger.set(xseq)
    probs = {path: tagger.probability(list(path)) for path in itertools.product(crf.classes_, repeat=len(xseq))}
    assert sum(probs.values()) == pytest.approx(1.0, abs=1e-12)
    assert list(max(probs, key=probs.get)) == tagger.tag(xseq) == crf.predict_single(xseq)
    for pos, label in itertools.product(range(len(xseq)), crf.classes_):
        exact = sum(p for path, p in probs.items() if path[pos] == label)
        assert tagger.marginal(label, pos) == pytest.approx(exact, abs=1e-12)
        assert crf.predict_marginals_single(xseq)[pos][label] == pytest.approx(exact, abs=1e-12)


# hand-counted frequencies: (a, P) 2, (a, Q) 1, (b, P) 2.0, (b, Q) 0.5, (c, P) 1 + 2 = 3, (d, P) -2 (d's
# values sum below 0 although each is non-zero); transitions P->P 2, P->Q 1, Q->P 1
MIN_FREQ_X = [[{"a": 1, "b": 2.0, "d": -1}, {"a": 1, "d": -1}, {"b": 0.5}], [{"a": 1}, {"c": 1}],
              [{"c": 1}, {"c": 1}]]
MIN_FREQ_Y = [["P", "P", "Q"], ["Q", "P"], ["P", "P"]]


@pytest.mark.parametrize("min_freq, states, transitions", [
    (None, {("a", "P"), ("a", "Q"), ("b", "P"), ("b", "Q"), ("c", "P")}, {("P", "P"), ("P", "Q"), ("Q", "P")}),
    (1.0, {("a", "P"), ("a", "Q"), ("b", "P"), ("c", "P")}, {("P", "P"), ("P", "Q"), ("Q", "P")}),
    (2.0, {("a", "P"), ("b", "P"), ("c", "P")}, {("P", "P")}),
    (2.5, {("c", "P")}, set()),
])
@pytest.mark.parametrize("all_possible", [False, True])
def test_min_freq_drops_rare_state_and_transition_features(min_freq, states, transitions, all_possible):
    """CRFsuite's rule, hand-counted: each (attribute, label) pair and each transition below min_freq (None:
    CRFsuite's 0) goes, also those all_possible_* adds (frequency 0); with c1 = 0 every kept feature has a
    non-zero weight. sklearn-crfsuite keeps the same ones."""
    if all_possible and min_freq is None:  # CRFsuite's default 0: the unseen pairs (frequency 0) stay, (d, P) goes
        states = set(itertools.product("abcd", "PQ")) - {("d", "P")}
        transitions = set(itertools.product("PQ", "PQ"))
    crf = CRF(c2=0.1, min_freq=min_freq, all_possible_states=all_possible,
              all_possible_transitions=all_possible).fit(MIN_FREQ_X, MIN_FREQ_Y)
    assert set(crf.state_features_) == states
    assert set(crf.transition_features_) == transitions
    assert crf.num_attributes_ == len({attr for attr, _ in states})
    theirs = pytest.importorskip("sklearn_crfsuite").CRF(c2=0.1, min_freq=min_freq, all_possible_states=all_possible,
                                                         all_possible_transitions=all_possible)
    theirs.fit(MIN_FREQ_X, MIN_FREQ_Y)
    assert set(theirs.state_features_) == states and set(theirs.transition_features_) == transitions


def test_chain_crf_min_freq_needs_sparse_features():
    X = [np.ones((3, 2)), np.ones((2, 2))]
    y = [[0, 1, 0], [1, 1]]
    with pytest.raises(ValueError, match="min_freq=2.0 needs sparse features"):
        ChainCRF(min_freq=2.0).fit(X, y)
    with pytest.raises(ValueError, match="min_freq"):
        ChainCRF(min_freq=np.nan).fit(X, y)


def test_unknown_attributes_and_empty_sequences_at_predict():
    X, y = _weather(20)
    crf = CRF().fit(X, y)
    assert crf.predict([[], [{"never": "seen"}]])[0] == []
    assert len(crf.predict_marginals([[{"never": 1}]])[0]) == 1


def test_model_file_round_trip_and_bad_file(tmp_path):
    X, y = _weather(20)
    path = tmp_path / "model.crfsuite"
    crf = CRF(model_filename=str(path)).fit(X, y)
    loaded = CRF(model_filename=str(path))
    assert loaded.predict(X) == crf.predict(X)
    assert loaded.state_features_ == crf.state_features_ and loaded.size_ == path.stat().st_size == crf.size_
    bad = tmp_path / "bad.crfsuite"
    bad.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="bad.crfsuite is not a sklearn_struct.crfsuite model file"):
        CRF(model_filename=str(bad)).predict(X)


def test_training_log_and_holdout():
    X, y = _weather(30)
    crf = CRF(max_iterations=20).fit(X[:20], y[:20], X_dev=X[20:], y_dev=y[20:])
    log = crf.training_log_
    assert 1 <= len(log.iterations) <= 20 and log.last_iteration is log.iterations[-1]
    assert [it["num"] for it in log.iterations] == list(range(1, len(log.iterations) + 1))
    losses = [it["loss"] for it in log.iterations]
    assert losses[-1] < losses[0]
    last = log.last_iteration
    y_pred = crf.predict(X[20:])
    assert last["item_accuracy_float"] == pytest.approx(sklearn_crfsuite.metrics.flat_accuracy_score(y[20:], y_pred))
    assert last["scores"]["rainy"].ref == sum(s.count("rainy") for s in y[20:])


def test_model_selection_with_crfsuite_scorers():
    X, y = _weather(30)
    search = GridSearchCV(CRF(max_iterations=30), {"c2": [0.01, 10.0]}, cv=3, scoring=scorers.sequence_accuracy)
    search.fit(X, y)
    assert search.best_params_["c2"] in (0.01, 10.0) and 0 <= search.best_score_ <= 1
    assert cross_val_score(CRF(max_iterations=30), X, y, cv=3, scoring=scorers.flat_accuracy).mean() > 0.6
    crf = clone(CRF("lbfgs", c1=0.1)).fit(X, y)
    assert crf.get_params()["c1"] == 0.1 and pickle.loads(pickle.dumps(crf)).predict(X) == crf.predict(X)


def test_verbose_prints_one_line_per_iteration_and_the_holdout_table(capsys):
    X, y = _weather(20)
    crf = CRF(max_iterations=5, verbose=True).fit(X[:15], y[:15], X_dev=X[15:], y_dev=y[15:])
    out = capsys.readouterr().out.splitlines()
    iterations = [line for line in out if line.startswith("Iter ")]
    assert len(iterations) == len(crf.training_log_.iterations) and "loss=" in iterations[0]
    assert "Acc(item/seq)=" in iterations[-1]
    assert any(line.split()[:1] == ["rainy"] for line in out)  # the per-label table of the last iteration
