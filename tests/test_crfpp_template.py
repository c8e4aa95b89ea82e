"""CRFppTemplateFeaturizer against hand-computed features; WindowFeaturizer column choice."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from sklearn_struct.preprocessing import CRFppTemplateFeaturizer, WindowFeaturizer

TEMPLATE = [
    "# Unigram",
    "U00:%x[-2,0]",
    "U01:%x[1,0]",
    "U05:%x[-1,0]/%x[0,0]",
    "",
    "U10:%x[0,1]/lit",
    "# Bigram",
    "B",
]
SEQ = [("He", "PRP"), ("ran", "VBD"), ("home", "NN")]


def _features(feat, Xt, s, t):
    names = feat.get_feature_names_out()
    return sorted(names[Xt[s][t].indices])


def test_hand_computed_features():
    feat = CRFppTemplateFeaturizer(TEMPLATE)
    Xt = feat.fit_transform([SEQ])
    assert feat.has_bigram_ and feat.n_columns_ == 2
    assert _features(feat, Xt, 0, 0) == sorted(["U00:_B-2", "U01:ran", "U05:_B-1/He", "U10:PRP/lit"])
    assert _features(feat, Xt, 0, 1) == sorted(["U00:_B-1", "U01:home", "U05:He/ran", "U10:VBD/lit"])
    assert _features(feat, Xt, 0, 2) == sorted(["U00:He", "U01:_B+1", "U05:ran/home", "U10:NN/lit"])
    assert sp.isspmatrix_csr(Xt[0]) and Xt[0].shape == (3, 12)
    np.testing.assert_array_equal(Xt[0].sum(axis=1).A.ravel(), [4, 4, 4])


def test_unseen_ignored_and_file_template(tmp_path):
    path = tmp_path / "template"
    path.write_text("\n".join(TEMPLATE) + "\n")
    feat = CRFppTemplateFeaturizer(str(path)).fit([SEQ])
    out = feat.transform([[("He", "XX")]])[0]
    names = feat.get_feature_names_out()
    assert sorted(names[out.indices]) == ["U00:_B-2", "U01:_B+1", "U05:_B-1/He"]  # U10:XX/lit unseen
    assert out.shape == (1, len(names))
    again = feat.transform([SEQ])[0]
    np.testing.assert_array_equal(again.toarray(), feat.fit_transform([SEQ])[0].toarray())


def test_min_freq_and_clone():
    X = [SEQ, [("He", "PRP")]]
    feat = CRFppTemplateFeaturizer(["U0:%x[0,0]"], min_freq=2).fit(X)
    assert feat.get_feature_names_out().tolist() == ["U0:He"]
    assert clone(feat).get_params()["min_freq"] == 2


@pytest.mark.parametrize(
    "lines, message",
    [
        (["U00:%x[0,0]", "X01:%x[0,0]"], "line 2"),
        (["# c", "U00:%x[a,0]"], "line 2: malformed macro"),
        (["U00:%x[0,-1]"], "line 1: malformed macro"),
        (["U00:%x[0,0", ""], "line 1: malformed"),
        (["", "", "B01:%x[0,0]"], "line 3"),
        (["U00:%x[0,5]"], "line 1: %x\\[0,5\\] reads column 5"),
        (["B"], "no unigram"),
    ],
)
def test_malformed_templates_name_the_line(lines, message):
    with pytest.raises(ValueError, match=message):
        CRFppTemplateFeaturizer(lines).fit([SEQ])


def test_bad_sequences():
    feat = CRFppTemplateFeaturizer(TEMPLATE).fit([SEQ])
    with pytest.raises(ValueError, match="Sequence 1, token 0 has 3 columns"):
        feat.transform([SEQ, [("a", "b", "c")]])
    with pytest.raises(ValueError, match="Sequence 0 is empty"):
        feat.transform([[]])


def test_pipeline_before_a_classifier():
    from sklearn_struct import NonLocalCRF

    X = [SEQ, [("She", "PRP"), ("ran", "VBD")]]
    y = [np.array(["B", "V", "N"]), np.array(["B", "V"])]
    pipe = make_pipeline(CRFppTemplateFeaturizer(TEMPLATE), NonLocalCRF(max_iter=20))
    pipe.fit(X, y)
    assert [list(p) for p in pipe.predict(X)] == [list(t) for t in y]


def test_window_featurizer_columns_are_chosen():
    rows = [[("x1", "He", "PRP"), ("x2", "ran", "VBD")]]
    d = WindowFeaturizer(word_column=1, pos_column=2, window=0).to_dicts(rows)[0][0]
    assert d["word.lower()"] == "he" and d["postag"] == "PRP"
    d = WindowFeaturizer(word_column=1, pos_column=None, window=0).to_dicts(rows)[0][0]
    assert "postag" not in d
    # default: CoNLL-2000 (word, POS, chunk) unchanged
    d = WindowFeaturizer(window=0).to_dicts([[("He", "PRP", "B-NP")]])[0][0]
    assert d["word.lower()"] == "he" and d["postag"] == "PRP"
    d = WindowFeaturizer(word_column="w", pos_column="p", window=0).to_dicts([[{"w": "A", "p": "DT"}]])[0][0]
    assert d["postag"] == "DT"
    with pytest.raises(ValueError, match="word_column=3"):
        WindowFeaturizer(word_column=3).fit(rows)
    with pytest.raises(ValueError, match="int word_column"):
        WindowFeaturizer(word_column="w").fit(rows)
