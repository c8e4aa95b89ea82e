"""Dataset loaders (real files and small synthetic ones), fetchers (offline) and generators."""

import gzip
import hashlib
import io
import itertools
import urllib.error
import urllib.request

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from sklearn_struct.datasets import (
    fetch_cmu_house_hotel,
    fetch_conll2000,
    fetch_crfpp,
    fetch_ocr_letters,
    fetch_scene,
    fetch_yeast,
    load_arff_multilabel,
    load_cmu_house_hotel,
    load_conll,
    load_conll2000,
    load_crfpp,
    load_libsvm_multilabel,
    load_ocr_letters,
    load_scene,
    load_yeast,
    make_matchings,
    make_multilabel_pairwise,
    read_landmark_file,
    read_letter_data,
)
from sklearn_struct.datasets import conll

# ---------------------------------------------------------------------------------------------
# Real data (skipped when SKLEARN_STRUCT_DATA is not set)
# ---------------------------------------------------------------------------------------------


def _counts(data):
    n_tokens = sum(len(s) for s in data.sequences)
    return len(data.sequences), n_tokens, len({t for tags in data.labels for t in tags})


@pytest.mark.parametrize("subset, expected", [("train", (8936, 211727, 22)), ("test", (2012, 47377, 19))])
def test_conll2000_counts(data_home, subset, expected):
    data = load_conll2000(subset, data_home=data_home)
    assert _counts(data) == expected
    assert [len(s) for s in data.sequences] == [len(t) for t in data.labels]
    assert data.columns == ["word", "pos", "chunk"] and data.feature_names == ["word", "pos"]
    assert set(data.sequences[0][0]) == {"word", "pos"}


def test_conll2000_tag_set(data_home):
    tags = set()
    for subset in ("train", "test"):
        tags.update(t for seq in load_conll2000(subset, data_home=data_home).labels for t in seq)
    assert len(tags) == 23  # 22 in train; I-LST occurs only in test
    assert {"O", "B-NP", "I-NP", "B-VP"} <= tags


# (sequences, tokens, distinct labels) as found in the files: the README's label counts are
# those of the training files; chunking and JapaneseNE test files hold a few more tags.
CRFPP_COUNTS = {
    ("basenp", "train"): (77, 1896, 3),
    ("basenp", "test"): (823, 19172, 3),
    ("chunking", "train"): (77, 1896, 14),
    ("chunking", "test"): (823, 19172, 17),
    ("JapaneseNE", "train"): (216, 4772, 17),
    ("JapaneseNE", "test"): (500, 12678, 18),
    ("seg", "train"): (36, 965, 2),
    ("seg", "test"): (19, 981, 2),
}
CRFPP_N_FIELDS = {"basenp": 2, "chunking": 2, "JapaneseNE": 3, "seg": 2}


@pytest.mark.parametrize("task, subset", sorted(CRFPP_COUNTS))
def test_crfpp_counts(data_home, task, subset):
    data = load_crfpp(task, subset, data_home=data_home)
    assert _counts(data) == CRFPP_COUNTS[task, subset]
    assert all(len(tok) == CRFPP_N_FIELDS[task] for seq in data.sequences for tok in seq)
    assert data.template is not None and data.template.endswith("template")
    with open(data.template, encoding="ascii") as f:
        assert "%x[" in f.read()


def test_crfpp_non_ascii_text(data_home):
    ne = load_crfpp("JapaneseNE", "train", data_home=data_home)
    assert ne.sequences[0][0] == ("病院", "M1", "名詞-一般")
    # the ideographic space U+3000 is a token of its own, not a column separator
    assert load_crfpp("JapaneseNE", "test", data_home=data_home).sequences[0][0][0] == "\u3000"
    seg = load_crfpp("seg", "train", data_home=data_home)
    assert seg.sequences[0][0] == ("毎", "k") and set(seg.labels[0]) <= {"B", "I"}


def test_ocr_letters_counts(data_home):
    ocr = load_ocr_letters(data_home=data_home)
    assert len(ocr.images) == len(ocr.labels) == len(ocr.words) == len(ocr.folds) == 6877
    assert sum(len(w) for w in ocr.words) == sum(x.shape[0] for x in ocr.images) == 52152
    assert np.array_equal(np.unique(ocr.folds), np.arange(10))
    assert all(x.shape == (len(w), 128) for x, w in zip(ocr.images, ocr.words))
    assert set(np.unique(np.concatenate(ocr.images))) == {0.0, 1.0}
    assert set("".join(ocr.words)) <= set("abcdefghijklmnopqrstuvwxyz")
    assert ocr.words[0] == "".join(ocr.labels[0])


# positives per label, as listed in the data's PROVENANCE files
YEAST_TRAIN_POSITIVES = [476, 645, 598, 532, 441, 378, 261, 289, 98, 161, 198, 1128, 1116, 21]


@pytest.mark.parametrize(
    "loader, subset, n_samples, n_features, positives",
    [
        (load_yeast, "train", 1500, 103, YEAST_TRAIN_POSITIVES),
        (load_yeast, "test", 917, 103, [286, 393, 385, 330, 281, 219, 167, 191, 80, 92, 91, 688, 683, 13]),
        (load_scene, "train", 1211, 294, [227, 165, 197, 196, 277, 224]),
        (load_scene, "test", 1196, 294, [200, 199, 200, 237, 256, 207]),
    ],
)
def test_multilabel_shapes(data_home, loader, subset, n_samples, n_features, positives):
    data = loader(subset, data_home=data_home)
    assert data.data.shape == (n_samples, n_features) and data.data.dtype == np.float64
    assert data.target.shape == (n_samples, len(positives))
    assert np.all(np.isfinite(data.data))
    assert data.target.sum(axis=0).tolist() == positives
    assert len(data.feature_names) == n_features and len(data.target_names) == len(positives)


def test_scene_label_names(data_home):
    data = load_scene("train", data_home=data_home)
    assert data.target_names == ["Beach", "Sunset", "FallFoliage", "Field", "Mountain", "Urban"]
    assert data.data.min() >= 0 and data.data.max() <= 1


@pytest.mark.parametrize("sequence, n_frames, atol", [("house", 111, 1e-5), ("hotel", 101, 0.0)])
def test_cmu_mat_and_text_agree(data_home, sequence, n_frames, atol):
    from_mat = load_cmu_house_hotel(sequence, data_home=data_home).points
    from_text = load_cmu_house_hotel(sequence, data_home=data_home, source="text").points
    assert from_mat.shape == from_text.shape == (n_frames, 30, 2)
    # the house text files carry 8 significant digits, the hotel ones were written from the .mat
    np.testing.assert_allclose(from_mat, from_text, rtol=0, atol=atol)


def _refuse_network(*args, **kwargs):
    raise AssertionError("a fetch_* function tried to download a file that exists")


def test_fetch_uses_existing_files(data_home, monkeypatch):
    monkeypatch.setattr(urllib.request, "urlopen", _refuse_network)
    assert len(fetch_conll2000("test", data_home=data_home).sequences) == 2012
    assert len(fetch_crfpp("seg", "test", data_home=data_home).sequences) == 19
    assert len(fetch_ocr_letters(data_home=data_home, dtype=np.uint8).words) == 6877
    assert fetch_yeast("test", data_home=data_home).data.shape == (917, 103)
    assert fetch_scene("test", data_home=data_home).data.shape == (1196, 294)
    assert fetch_cmu_house_hotel("hotel", data_home=data_home).points.shape == (101, 30, 2)


# ---------------------------------------------------------------------------------------------
# CoNLL / CRF++ column files
# ---------------------------------------------------------------------------------------------

CONLL_TEXT = "He PRP B-NP\nreckons VBZ B-VP\n\n\nThe DT B-NP\ncurrent JJ I-NP\naccount NN I-NP\n"


def _write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def test_load_conll_tuples(tmp_path):
    data = load_conll(_write(tmp_path / "a.txt", CONLL_TEXT))
    assert data.sequences == [
        [("He", "PRP"), ("reckons", "VBZ")],
        [("The", "DT"), ("current", "JJ"), ("account", "NN")],
    ]
    assert data.labels == [["B-NP", "B-VP"], ["B-NP", "I-NP", "I-NP"]]
    assert data.columns == ["x0", "x1", "label"] and data.feature_names == ["x0", "x1"]


def test_load_conll_dicts_gzip_and_label_column(tmp_path):
    path = tmp_path / "a.txt.gz"
    path.write_bytes(gzip.compress(CONLL_TEXT.replace(" ", "\t").encode()))
    data = load_conll(path, columns=["word", "pos", "chunk"], label_column="pos")
    assert data.sequences[0][0] == {"word": "He", "chunk": "B-NP"}
    assert data.labels[1] == ["DT", "JJ", "NN"] and data.label_name == "pos"
    first = load_conll(path, label_column=0)
    assert first.sequences[0][0] == ("PRP", "B-NP") and first.labels[0] == ["He", "reckons"]
    assert first.columns == ["label", "x0", "x1"]
    unlabeled = load_conll(path, label_column=None)
    assert unlabeled.labels is None and unlabeled.sequences[0][0] == ("He", "PRP", "B-NP")


def test_load_conll_encoding(tmp_path):
    path = _write(tmp_path / "ja.data", "東京 名詞 B\n都 名詞 I\n", encoding="euc_jp")
    assert load_conll(path, encoding="euc_jp").sequences[0][0] == ("東京", "名詞")
    with pytest.raises(ValueError, match=r"line 1: cannot decode as 'utf-8'"):
        load_conll(path)


def test_load_conll_missing_file(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        load_conll(missing)


def test_load_conll_bad_column_count(tmp_path):
    path = _write(tmp_path / "bad.txt", "a DT B\nb NN\n\nc NN I\n")
    with pytest.raises(ValueError, match=r"bad.txt, line 2: expected 3 columns .* found 2"):
        load_conll(path)
    with pytest.raises(ValueError, match=r"line 1: 3 columns found but 2 names"):
        load_conll(_write(tmp_path / "ok.txt", "a DT B\n"), columns=["w", "t"])
    with pytest.raises(ValueError, match="no tokens"):
        load_conll(_write(tmp_path / "empty.txt", "\n\n"))
    with pytest.raises(ValueError, match="label_column=5"):
        load_conll(_write(tmp_path / "ok2.txt", "a DT B\n"), label_column=5)


def test_named_loaders_reject_bad_options(tmp_path):
    with pytest.raises(ValueError, match="subset"):
        load_conll2000("dev", data_home=tmp_path)
    with pytest.raises(ValueError, match="task"):
        load_crfpp("ner", data_home=tmp_path)
    with pytest.raises(FileNotFoundError, match="conll2000"):
        load_conll2000("train", data_home=tmp_path)


# ---------------------------------------------------------------------------------------------
# OCR letter.data
# ---------------------------------------------------------------------------------------------


def _letter_line(id_, letter, next_id, word_id, position, fold, pixel):
    return "\t".join(map(str, [id_, letter, next_id, word_id, position, fold] + [pixel] * 128)) + "\t"


def test_read_letter_data_groups_words(tmp_path):
    lines = [  # two words, lines out of order
        _letter_line(3, "c", -1, 2, 1, 4, 1),
        _letter_line(2, "b", -1, 1, 2, 0, 0),
        _letter_line(1, "a", 2, 1, 1, 0, 1),
    ]
    path = tmp_path / "letter.data.gz"
    path.write_bytes(gzip.compress("\n".join(lines).encode()))
    ocr = read_letter_data(path, dtype=np.uint8)
    assert ocr.words == ["ab", "c"] and ocr.folds.tolist() == [0, 4]
    assert ocr.images[0].dtype == np.uint8 and ocr.images[0][:, 0].tolist() == [1, 0]
    assert ocr.labels[1].tolist() == ["c"]


def test_read_letter_data_inconsistent_links(tmp_path):
    path = tmp_path / "letter.data"
    path.write_text("\n".join([_letter_line(1, "a", 5, 1, 1, 0, 0), _letter_line(2, "b", -1, 1, 2, 0, 0)]))
    with pytest.raises(ValueError, match="letter id 1 has next_id 5"):
        read_letter_data(path)
    with pytest.raises(FileNotFoundError, match="ocr_letters"):
        load_ocr_letters(data_home=tmp_path)


# ---------------------------------------------------------------------------------------------
# Multi-label files
# ---------------------------------------------------------------------------------------------

ARFF_HEADER = """% a comment
@relation 'tiny: -C 2'

@attribute 'f one' numeric
@attribute color {red,green}
@attribute l1 {0,1}
@attribute l2 {0,1}

@data
"""


def test_load_arff_dense(tmp_path):
    path = _write(tmp_path / "t.arff", ARFF_HEADER + "0.5,green,1,0\n?, red ,0,1\n\n")
    data = load_arff_multilabel(path, n_labels=2)
    np.testing.assert_array_equal(data.data, [[0.5, 1.0], [np.nan, 0.0]])
    assert data.target.tolist() == [[1, 0], [0, 1]] and data.target.dtype == np.int64
    assert data.feature_names == ["f one", "color"] and data.target_names == ["l1", "l2"]
    assert data.relation == "tiny: -C 2"


def test_load_arff_sparse(tmp_path):
    path = _write(tmp_path / "s.arff", ARFF_HEADER + "{0 2.5,3 1}\n{}\n0,green,1,1\n")
    data = load_arff_multilabel(path, n_labels=2)
    np.testing.assert_array_equal(data.data, [[2.5, 0.0], [0.0, 0.0], [0.0, 1.0]])
    assert data.target.tolist() == [[0, 1], [0, 0], [1, 1]]


def test_load_arff_errors(tmp_path):
    bad_count = _write(tmp_path / "a.arff", ARFF_HEADER + "0.5,green,1,0\n0.1,red,1\n")
    with pytest.raises(ValueError, match=r"line 11: expected 4 values, found 3"):
        load_arff_multilabel(bad_count, n_labels=2)
    bad_value = _write(tmp_path / "b.arff", ARFF_HEADER + "0.5,blue,1,0\n")
    with pytest.raises(ValueError, match=r"line 10: 'color' value 'blue'"):
        load_arff_multilabel(bad_value, n_labels=2)
    bad_number = _write(tmp_path / "c.arff", ARFF_HEADER + "0.5,red,1,0\nx,red,1,0\n")
    with pytest.raises(ValueError, match=r"line 11: 'f one' value 'x' is not a number"):
        load_arff_multilabel(bad_number, n_labels=2)
    numeric_labels = "@relation r\n@attribute a numeric\n@attribute l numeric\n@data\n"
    bad_label = _write(tmp_path / "d.arff", numeric_labels + "1,0\n1,2\n")
    with pytest.raises(ValueError, match=r"line 6: label attribute 'l' has value 2.0; labels must be 0 or 1"):
        load_arff_multilabel(bad_label, n_labels=1)
    good = _write(tmp_path / "g.arff", ARFF_HEADER + "0.5,red,1,0\n")
    with pytest.raises(ValueError, match="n_labels must be"):
        load_arff_multilabel(good, n_labels=4)
    with pytest.raises(ValueError, match="no @data"):
        load_arff_multilabel(_write(tmp_path / "e.arff", "@relation x\n@attribute a numeric\n"), n_labels=1)
    with pytest.raises(FileNotFoundError, match="missing.arff"):
        load_arff_multilabel(tmp_path / "missing.arff", n_labels=1)


def test_load_libsvm_multilabel(tmp_path):
    path = _write(tmp_path / "t.svm", "0,2 1:0.5 3:1\n 2:2\n1 1:1\n")
    data = load_libsvm_multilabel(path, n_features=4)
    assert data.data.shape == (3, 4) and data.target_names == [0, 1, 2]
    assert data.target.tolist() == [[1, 0, 1], [0, 0, 0], [0, 1, 0]]
    wide = load_libsvm_multilabel(path, classes=[0, 1, 2, 3])
    assert wide.target.shape == (3, 4) and wide.target[:, 3].sum() == 0
    with pytest.raises(ValueError, match="not in classes"):
        load_libsvm_multilabel(path, classes=[0, 1])


# ---------------------------------------------------------------------------------------------
# CMU landmarks
# ---------------------------------------------------------------------------------------------


def test_read_landmark_file(tmp_path):
    path = _write(tmp_path / "house1", "  2.0866129e+002  3.4114516e+002\n  1.5e+002  2.5e+002\n")
    np.testing.assert_allclose(read_landmark_file(path), [[208.66129, 341.14516], [150.0, 250.0]])
    with pytest.raises(ValueError, match="expected 2 columns"):
        read_landmark_file(_write(tmp_path / "bad", "1 2 3\n"))
    with pytest.raises(ValueError, match="sequence must be"):
        load_cmu_house_hotel("castle", data_home=tmp_path)


# ---------------------------------------------------------------------------------------------
# fetch_*: offline error, no download when present, download path with a fake server
# ---------------------------------------------------------------------------------------------


def _offline(url, *args, **kwargs):
    raise urllib.error.URLError("Temporary failure in name resolution")


@pytest.mark.parametrize(
    "fetch, url_part, file_part",
    [
        (lambda home: fetch_conll2000("train", data_home=home), "uantwerpen.be/conll2000", "train.txt.gz"),
        (lambda home: fetch_ocr_letters(data_home=home), "ai.stanford.edu/~btaskar/ocr", "letter.data.gz"),
        (lambda home: fetch_yeast("test", data_home=home), "tsoumakas/mulan", "yeast-test.arff"),
        (lambda home: fetch_crfpp("basenp", data_home=home), "taku910/crfpp", "train.data"),
        (lambda home: fetch_cmu_house_hotel(data_home=home), "Lpbox-ADMM", "cmum.mat"),
    ],
)
def test_fetch_offline_error(tmp_path, monkeypatch, fetch, url_part, file_part):
    monkeypatch.setattr(urllib.request, "urlopen", _offline)
    with pytest.raises(OSError, match="could not download") as info:
        fetch(tmp_path)
    message = str(info.value)
    assert url_part in message and file_part in message and "place the file at" in message
    assert isinstance(info.value.__cause__, urllib.error.URLError)
    assert list(tmp_path.rglob("*")) == []  # nothing created, no partial file


def test_fetch_no_download_when_not_allowed(tmp_path, monkeypatch):
    monkeypatch.setattr(urllib.request, "urlopen", _refuse_network)
    with pytest.raises(FileNotFoundError, match="download_if_missing=False"):
        fetch_scene("train", data_home=tmp_path, download_if_missing=False)


class _FakeResponse(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def test_fetch_downloads_into_data_home(tmp_path, monkeypatch):
    payload = gzip.compress(CONLL_TEXT.encode())
    requested = []

    def fake_urlopen(url, timeout=None):
        requested.append(url)
        return _FakeResponse(payload)

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    monkeypatch.setitem(conll.CONLL2000_CHECKSUMS, "test", {"md5": hashlib.md5(payload).hexdigest()})
    monkeypatch.setitem(conll.CONLL2000_TEXT_MD5, "test", hashlib.md5(CONLL_TEXT.encode()).hexdigest())
    data = fetch_conll2000("test", data_home=tmp_path)
    assert requested == ["https://www.clips.uantwerpen.be/conll2000/chunking/test.txt.gz"]
    assert (tmp_path / "conll2000" / "test.txt.gz").read_bytes() == payload
    assert data.labels[0] == ["B-NP", "B-VP"]
    fetch_conll2000("test", data_home=tmp_path)  # second call reads the file, no new request
    assert len(requested) == 1


def test_fetch_checksum_mismatch(tmp_path, monkeypatch):
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=None: _FakeResponse(b"not an arff"))
    with pytest.raises(OSError, match="checksum mismatch"):
        fetch_yeast("train", data_home=tmp_path)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


# ---------------------------------------------------------------------------------------------
# Generators
# ---------------------------------------------------------------------------------------------


def _exact_pairwise_moments(X, params):
    """Brute force: per-sample label marginals and pairwise moments E[y_k y_l] of the true model."""
    n_labels = params.intercept.shape[0]
    states = np.array(list(itertools.product([0, 1], repeat=n_labels)), dtype=float)
    unary = X @ params.coef + params.intercept
    edges = list(itertools.combinations(range(n_labels), 2))
    pair = np.array([sum(params.pairwise[k, l] * s[k] * s[l] for k, l in edges) for s in states])
    logits = (unary @ states.T + pair) / params.noise
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return p @ states, np.einsum("ns,sk,sl->nkl", p, states, states)


def test_make_multilabel_pairwise_matches_exact_marginals():
    X, Y, params = make_multilabel_pairwise(
        4000, n_features=3, n_labels=4, edge_strength=2.0, noise=1.0, return_params=True, random_state=0
    )
    marginals, moments = _exact_pairwise_moments(X, params)
    # sum over samples of independent Bernoullis: z-scores against the exact expectation
    z = (Y.sum(axis=0) - marginals.sum(axis=0)) / np.sqrt((marginals * (1 - marginals)).sum(axis=0))
    assert np.all(np.abs(z) < 4), z
    pairs = np.einsum("nk,nl->nkl", Y, Y)
    z_pairs = (pairs.sum(axis=0) - moments.sum(axis=0)) / np.sqrt((moments * (1 - moments)).sum(axis=0))
    assert np.all(np.abs(z_pairs) < 4), z_pairs
    # the couplings matter: ignoring them gives visibly different pairwise moments
    independent = np.einsum("nk,nl->kl", marginals, marginals) / len(X)
    assert np.abs(moments.mean(axis=0) - independent)[np.triu_indices(4, 1)].max() > 0.02


def test_make_multilabel_pairwise_zero_noise_is_map():
    X, Y, params = make_multilabel_pairwise(
        50, n_features=4, n_labels=5, noise=0.0, return_params=True, random_state=1
    )
    params.noise = 1.0  # any temperature has the same mode
    states = np.array(list(itertools.product([0, 1], repeat=5)))
    unary = X @ params.coef + params.intercept
    scores = unary @ states.T + 0.5 * np.einsum("sk,kl,sl->s", states, params.pairwise, states)
    np.testing.assert_array_equal(Y, states[np.argmax(scores, axis=1)])


def test_make_multilabel_pairwise_shapes_and_seeds():
    X, Y, params = make_multilabel_pairwise(30, n_features=7, n_labels=3, return_params=True, random_state=2)
    assert X.shape == (30, 7) and Y.shape == (30, 3) and Y.dtype == np.int64
    assert set(np.unique(Y)) <= {0, 1}
    assert params.coef.shape == (7, 3) and params.intercept.shape == (3,)
    np.testing.assert_array_equal(params.pairwise, params.pairwise.T)
    assert np.all(np.diag(params.pairwise) == 0)
    X2, Y2 = make_multilabel_pairwise(30, n_features=7, n_labels=3, random_state=2)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(Y, Y2)
    X3, _ = make_multilabel_pairwise(30, n_features=7, n_labels=3, random_state=3)
    assert not np.allclose(X, X3)
    assert make_multilabel_pairwise(3, n_labels=16, random_state=0)[1].shape == (3, 16)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_samples": 0}, "n_samples"),
        ({"n_features": 2.5}, "n_features"),
        ({"n_labels": 17}, r"n_labels must be an integer in \[1, 16\]"),
        ({"n_labels": True}, "n_labels"),
        ({"edge_strength": -1.0}, "edge_strength"),
        ({"noise": np.nan}, "noise"),
    ],
)
def test_make_multilabel_pairwise_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_multilabel_pairwise(**kwargs)


def _assignment(x):
    """MAP matching of a linear scorer with unit weights on the pair features."""
    return linear_sum_assignment(x.sum(axis=2), maximize=True)[1]


def test_make_matchings_recoverable_and_seeded():
    X, y = make_matchings(20, n_nodes=7, n_features=5, noise=0.05, random_state=0)
    assert len(X) == len(y) == 20
    assert all(x.shape == (7, 7, 5) for x in X)
    assert all(np.array_equal(np.sort(p), np.arange(7)) for p in y)
    assert all(np.array_equal(_assignment(x), p) for x, p in zip(X, y))
    X2, y2 = make_matchings(20, n_nodes=7, n_features=5, noise=0.05, random_state=0)
    assert all(np.array_equal(a, b) for a, b in zip(X, X2))
    assert all(np.array_equal(a, b) for a, b in zip(y, y2))
    _, y3 = make_matchings(20, n_nodes=7, n_features=5, noise=0.05, random_state=1)
    assert any(not np.array_equal(a, b) for a, b in zip(y, y3))


def test_make_matchings_noise_makes_it_harder():
    def error(noise):
        X, y = make_matchings(30, n_nodes=10, n_features=2, noise=noise, random_state=0)
        return np.mean([np.mean(_assignment(x) != p) for x, p in zip(X, y)])

    assert error(0.0) == 0.0
    assert error(1.0) > 0.2


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_samples": -1}, "n_samples"),
        ({"n_nodes": 0}, "n_nodes"),
        ({"n_features": "8"}, "n_features"),
        ({"noise": -0.1}, "noise"),
    ],
)
def test_make_matchings_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_matchings(**kwargs)
