"""ChainCRF model files with ``allowed_transitions`` given as arrays (format version 4, issue #35).

A boolean mask, or the ``(transitions, start, end)`` tuple, is stored as boolean members beside the
weights; the reader checks their dtype and shape against ``classes_`` before allocating them.
"""

import io
import json
import warnings
import zipfile

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import ChainCRF
from sklearn_struct.exceptions import ModelFileError
from sklearn_struct.utils import _model_file
from sklearn_struct.utils._model_file import save_model_file

CHUNKS = np.array(["B-NP", "I-NP", "O"])


def _data(n=30, seed=0):
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        seq, prev = [], "O"
        for _ in range(rng.randint(2, 7)):
            lab = "I-NP" if prev != "O" and rng.rand() < 0.5 else rng.choice(["B-NP", "O"])
            seq.append(lab)
            prev = lab
        Y.append(np.array(seq))
        X.append((CHUNKS[None, :] == np.array(seq)[:, None]) * 1.0 + rng.randn(len(seq), 3) * 1.5)
    return X, Y


MASK = np.array([[True, True, True], [True, True, True], [True, False, True]])  # no O -> I-NP
START = np.array([True, False, True])
END = np.ones(3, dtype=bool)


def _fit(allowed, algorithm="lbfgs"):
    X, Y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return ChainCRF(algorithm=algorithm, max_iter=20, allowed_transitions=allowed).fit(X, Y), X


def _contents(path):
    with zipfile.ZipFile(path) as archive:
        members = {info.filename[:-4]: archive.read(info) for info in archive.infolist()}
    meta = json.loads(str(np.load(io.BytesIO(members.pop("meta")))[()]))
    return {name: np.load(io.BytesIO(data)) for name, data in members.items()}, meta


def _forge(src, dst, arrays=None, drop=(), **meta_edits):
    """``src`` with arrays replaced / dropped and its header edited, checksum recomputed."""
    stored, meta = _contents(src)
    stored.update(arrays or {})
    for name in drop:
        stored.pop(name)
    meta.update(meta_edits)
    version = meta.pop("version")
    meta.pop("format"), meta.pop("sha256")
    save_model_file(dst, "sklearn_struct.ChainCRF", version, stored, meta)
    return dst


@pytest.mark.parametrize("allowed", [MASK, (MASK, START, END), MASK.tolist(), "BIO", None],
                         ids=["mask", "tuple", "nested-list", "scheme", "none"])
@pytest.mark.parametrize("algorithm", ["lbfgs", "ap"])
def test_allowed_transitions_round_trip(tmp_path, allowed, algorithm):
    model, X = _fit(allowed, algorithm)
    model.save(tmp_path / "m.npz")
    loaded = ChainCRF.load(tmp_path / "m.npz")
    arrays, meta = _contents(tmp_path / "m.npz")
    assert meta["version"] == 4
    if allowed is None or isinstance(allowed, str):
        assert loaded.allowed_transitions == allowed and "allowed_transitions" not in arrays
    else:
        assert arrays["allowed_transitions"].dtype == bool
        parts = loaded.allowed_transitions if isinstance(allowed, tuple) else (loaded.allowed_transitions,)
        want = allowed if isinstance(allowed, tuple) else (np.asarray(allowed),)
        assert all(np.array_equal(a, b) and a.dtype == bool for a, b in zip(parts, want))
    for name in ("transitions", "start", "end"):
        a, b = getattr(loaded.allowed_transitions_, name, None), getattr(model.allowed_transitions_, name, None)
        assert (a is None and b is None) or np.array_equal(a, b)
    Xt = [np.random.RandomState(1).randn(6, 3) * 4 for _ in range(40)]
    assert all(np.array_equal(a, b) for a, b in zip(loaded.predict(Xt), model.predict(Xt)))
    assert all(np.array_equal(a, b) for a, b in zip(loaded.predict_marginals(Xt), model.predict_marginals(Xt)))
    if allowed is not None:  # the mask is in force after loading: no O -> I-NP
        for p in loaded.predict(Xt):
            assert not any(a == "O" and b == "I-NP" for a, b in zip(p[:-1], p[1:]))
    # and saving the loaded model gives the same bytes
    loaded.save(tmp_path / "again.npz")
    assert (tmp_path / "again.npz").read_bytes() == (tmp_path / "m.npz").read_bytes()


@pytest.mark.parametrize("case, edit, message", [
    ("wrong-shape", dict(arrays={"allowed_transitions": np.ones((2, 2), dtype=bool)}),
     r"array 'allowed_transitions' has shape \(2, 2\), expected \(3, 3\)"),
    ("wrong-shape-3d", dict(arrays={"allowed_transitions": np.ones((3, 3, 1), dtype=bool)}),
     "array 'allowed_transitions' has shape"),
    ("float-mask", dict(arrays={"allowed_transitions": np.ones((3, 3))}),
     "array 'allowed_transitions' has dtype float64, expected kind 'b'"),
    ("missing-member", dict(drop=("allowed_transitions",)), "has no array 'allowed_transitions'"),
    ("unknown-form", dict(allowed_transitions="lattice"), "allowed_transitions = 'lattice' in the header"),
    ("form-not-a-string", dict(allowed_transitions=[1, 2]), "allowed_transitions = '\\[1, 2\\]' in the header"),
    ("old-version", dict(version=3), r"allowed_transitions = 'mask' in the header .*format version 3"),
    ("both", dict(params="ADD"), "both a parameter and an array"),
    ("tuple-without-start", dict(allowed_transitions="tuple"), "has no array 'allowed_end'"),
], ids=lambda v: v if isinstance(v, str) and " " not in v and "\\" not in v else "")
def test_a_hostile_mask_is_refused(tmp_path, case, edit, message):
    model, _ = _fit(MASK)
    model.save(tmp_path / "m.npz")
    edit = dict(edit)
    if edit.get("params") == "ADD":
        params = _contents(tmp_path / "m.npz")[1]["params"]
        edit["params"] = dict(params, allowed_transitions="BIO")
    bad = _forge(tmp_path / "m.npz", tmp_path / f"{case}.npz", **edit)
    with pytest.raises(ModelFileError, match=message) as info:
        ChainCRF.load(bad)
    assert str(bad) in str(info.value)


def test_the_shape_is_refused_before_the_mask_is_allocated(tmp_path, monkeypatch):
    model, _ = _fit(MASK)
    model.save(tmp_path / "m.npz")
    bad = _forge(tmp_path / "m.npz", tmp_path / "big.npz",
                 arrays={"allowed_transitions": np.ones((300, 300), dtype=bool)})
    allocated = []
    real_empty = np.empty
    monkeypatch.setattr(_model_file.np, "empty", lambda shape, *a, **k: allocated.append(shape) or
                        real_empty(shape, *a, **k))
    with pytest.raises(ModelFileError, match="expected \\(3, 3\\)"):
        ChainCRF.load(bad)
    assert (300, 300) not in allocated


def test_a_scheme_that_does_not_fit_the_labels_is_refused_at_load(tmp_path):
    model, _ = _fit("BIO")
    model.save(tmp_path / "m.npz")
    params = _contents(tmp_path / "m.npz")[1]["params"]
    bad = _forge(tmp_path / "m.npz", tmp_path / "scheme.npz", params=dict(params, allowed_transitions="nope"))
    with pytest.raises(ModelFileError, match="no known scheme"):
        ChainCRF.load(bad)


def test_a_version_3_file_with_a_scheme_still_loads(tmp_path):
    model, X = _fit("BIO")
    model.save(tmp_path / "m.npz")
    old = _forge(tmp_path / "m.npz", tmp_path / "v3.npz", version=3)
    loaded = ChainCRF.load(old)
    assert loaded.allowed_transitions == "BIO"
    assert all(np.array_equal(a, b) for a, b in zip(loaded.predict(X), model.predict(X)))
