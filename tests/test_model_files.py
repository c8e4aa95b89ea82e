"""Model files as hostile input and exact round trips (issue #34, items 2, 3 and the file parts of 6).

Every model file of the package goes through ``sklearn_struct.utils._model_file``: the tests run
each case on both writers, :meth:`ChainCRF.save` and :class:`sklearn_struct.crfsuite.CRF`'s
``model_filename``.
"""

import copy
import io
import json
import os
import signal
import struct
import threading
import tracemalloc
import warnings
import zipfile
import zlib

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import ChainCRF
from sklearn_struct.crfsuite import CRF
from sklearn_struct.crfsuite._model import CRFModel
from sklearn_struct.datasets import make_chain_data
from sklearn_struct.exceptions import ModelFileError
from sklearn_struct.utils import _model_file
from sklearn_struct.utils._model_file import decode_value, encode_value, save_model_file

# crfsuite labels of every kind a user may pass (distinct under ==, so a dict keeps them apart)
# no None and no sets: in y those mark partial labels (an unknown token, the labels a token may take)
CRF_LABELS = [4, np.int64(5), "B-NP", "O", "O\x00", (1, "x"), ("B", ("nested", 2)), b"\x00b", 2.5, np.str_("s")]


# ---------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def chain():
    X, y = make_chain_data(6, n_features=4, n_labels=3, random_state=0)
    return _fit(ChainCRF(c2=0.1, max_iter=30), X, y), X


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a few iterations are enough for a round trip
        return model.fit(X, y)


def _crf_data(labels, n=8):
    rng = np.random.RandomState(0)
    X = [[{"w": str(rng.randint(4)), "v": float(rng.rand())} for _ in range(6)] for _ in range(n)]
    y = [[labels[(len(X[0]) * s + t * (s + 1)) % len(labels)] for t in range(6)] for s in range(n)]
    return X, y


def _fitted_crf(folder, labels):
    X, y = _crf_data(labels)
    path = folder / "model.crfsuite"
    return CRF(max_iterations=20, model_filename=str(path)).fit(X, y), X, path


@pytest.fixture(scope="module")
def crfsuite(tmp_path_factory):
    return _fitted_crf(tmp_path_factory.mktemp("crfsuite"), ["B-NP", "I-NP", "O"])


@pytest.fixture(params=["ChainCRF", "crfsuite"])
def good(request, chain, crfsuite, tmp_path):
    """``(path of a good model file, load(path) -> comparable state, format name)`` for each writer."""
    path = tmp_path / "good.npz"
    if request.param == "ChainCRF":
        chain[0].save(path)
        return path, lambda p: _chain_state(ChainCRF.load(p)), "sklearn_struct.ChainCRF"
    path.write_bytes(crfsuite[2].read_bytes())
    return path, lambda p: _crf_state(CRFModel.load(p)), "sklearn_struct.crfsuite.CRF"


def _chain_state(model):
    return (_typed(model.classes_.tolist()), model.classes_.dtype.str, model.coef_.tobytes(),
            model.intercept_.tobytes(), model.transition_.tobytes(), repr(model.get_params()))


def _crf_state(model):
    return (_typed(model.labels), model.attributes, model.state.toarray().tobytes(), model.bias.tobytes(),
            model.transition.tobytes())


def _typed(values):
    """Values with their types, so that 4 and '4', 'O' and 'O\\x00', (1,) and [1] compare unequal."""
    if isinstance(values, (list, tuple)):
        return (type(values).__name__, [_typed(v) for v in values])
    return (type(values).__name__, repr(values))


# ---------------------------------------------------------------------- hand-made archives


def _members(path):
    """``{name: stored member bytes}`` of a model file."""
    with zipfile.ZipFile(path) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def _meta(path):
    return json.loads(str(np.load(io.BytesIO(_members(path)["meta.npy"]))[()]))


def _npy(arr):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(arr), allow_pickle=False)
    return buffer.getvalue()


def _npy_header(descr, shape):
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def _zip(members):
    """A zip archive written by hand: ``members`` is a list of ``(name, stored bytes, method, crc, declared size)``,
    so that sizes, CRCs and compression can lie."""
    out, central = bytearray(), bytearray()
    for name, data, method, crc, size in members:
        raw, offset = name.encode(), len(out)
        out += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, len(data), size, len(raw), 0)
        out += raw + data
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, len(data), size,
                               len(raw), 0, 0, 0, 0, 0, offset) + raw
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(out), 0)
    return bytes(out + central + end)


def _stored(name, data):
    return (name, data, zipfile.ZIP_STORED, zlib.crc32(data), len(data))


def _deflate(chunks):
    compress = zlib.compressobj(9, zlib.DEFLATED, -15)
    return b"".join(compress.compress(chunk) for chunk in chunks) + compress.flush()


def _load(fmt, path):
    return ChainCRF.load(path) if fmt == "sklearn_struct.ChainCRF" else CRFModel.load(path)


# ---------------------------------------------------------------------- damaged files


def test_truncated_and_empty_files_raise_model_file_error(good, tmp_path):
    path, state, fmt = good
    raw = path.read_bytes()
    bad = tmp_path / "bad.npz"
    for cut in sorted({0, 1, 3, 4, 30, len(raw) // 2, len(raw) - 22, len(raw) - 1, *range(0, len(raw), 97)}):
        bad.write_bytes(raw[:cut])
        with pytest.raises(ModelFileError, match=f"{bad}.*(empty|truncated|not an .npz)") as info:
            _load(fmt, bad)
        assert info.value.path == str(bad)


def test_every_flipped_byte_is_caught_or_harmless(good, tmp_path):
    """A flipped byte anywhere raises ModelFileError, or (in a field the model does not use, e.g. a
    timestamp) loads the very same model: never another exception, never a different model."""
    path, state, fmt = good
    raw, expected = path.read_bytes(), state(path)
    bad = tmp_path / "flipped.npz"
    caught = 0
    for pos in range(0, len(raw), max(1, len(raw) // 300)):
        bad.write_bytes(raw[:pos] + bytes([raw[pos] ^ 0x10]) + raw[pos + 1:])
        try:
            got = state(bad)
        except ModelFileError as exc:
            assert str(bad) in str(exc)
            caught += 1
        else:
            assert got == expected, f"byte {pos}: a changed model loaded"
    assert caught > 0.8 * len(range(0, len(raw), max(1, len(raw) // 300)))


def test_crfsuite_estimator_refuses_a_damaged_model_file(crfsuite, tmp_path):
    _, X, path = crfsuite
    bad = tmp_path / "bad.crfsuite"
    bad.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(ModelFileError, match="bad.crfsuite is truncated"):
        CRF(model_filename=str(bad)).predict(X)


# ---------------------------------------------------------------------- hostile files


def test_a_huge_declared_shape_is_refused_before_allocating(good, tmp_path):
    path, _, fmt = good
    members = _members(path)
    victim = "coef.npy" if "coef.npy" in members else "transition.npy"
    for shape in [(2**40,), (2**37, 3), (2**62, 2**62)]:
        header = _npy_header("<f8", shape)
        bad = tmp_path / "huge.npz"
        bad.write_bytes(_zip([_stored(n, header + b"\0" * 64 if n == victim else d) for n, d in members.items()]))
        tracemalloc.start()
        try:
            with pytest.raises(ModelFileError, match="shape") as info:
                _load(fmt, bad)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert str(bad) in str(info.value) and peak < 4 << 20


def test_the_generic_reader_checks_the_shape_against_the_member_size(tmp_path):
    bad = tmp_path / "huge.npz"
    meta = _npy(np.array(json.dumps({"format": "f", "version": 1})))
    bad.write_bytes(_zip([_stored("meta.npy", meta), _stored("w.npy", _npy_header("<f8", (2**40,)) + b"\0" * 8)]))
    with pytest.raises(ModelFileError, match=r"declares shape \(1099511627776,\).*holds 8 bytes"):
        _model_file.load_model_file(bad, "f", 1)
    bad.write_bytes(_zip([_stored("meta.npy", meta), _stored("w.npy", _npy_header("|O", (1,)) + b"\0" * 8)]))
    with pytest.raises(ModelFileError, match="dtype object"):
        _model_file.load_model_file(bad, "f", 1)


def test_a_member_inflating_past_its_declared_size_is_stopped(good, tmp_path):
    """A deflated member whose directory entry (size and CRC) describes only its first bytes, while the
    stream goes on for 1 MiB of zeros: the read stops at the declared size and refuses the file."""
    path, _, fmt = good
    members = _members(path)
    victim = "coef.npy" if "coef.npy" in members else "transition.npy"
    honest = members[victim]
    bomb = _deflate([honest, b"\0" * (1 << 20)])
    assert len(bomb) < 8 << 10
    entries = [_stored(n, d) if n != victim else (n, bomb, zipfile.ZIP_DEFLATED, zlib.crc32(honest), len(honest))
               for n, d in members.items()]
    bad = tmp_path / "bomb.npz"
    bad.write_bytes(_zip(entries))
    with pytest.raises(ModelFileError, match=f"{victim[:-4]}.*inflates past its declared size"):
        _load(fmt, bad)


def test_a_decompression_bomb_is_refused_before_inflating(good, tmp_path):
    """An honest bomb: a member of 16 MiB of zeros in 16 KiB, sizes and CRC all true. Refused from the
    zip directory, before anything is inflated or allocated."""
    path, _, fmt = good
    size = 16 << 20
    payload = [_npy_header("<f8", (size // 8,))] + [b"\0" * (1 << 20)] * 16
    crc = 0
    for chunk in payload:
        crc = zlib.crc32(chunk, crc)
    bomb = ("extra.npy", _deflate(payload), zipfile.ZIP_DEFLATED, crc, sum(map(len, payload)))
    bad = tmp_path / "bomb.npz"
    bad.write_bytes(_zip([_stored(n, d) for n, d in _members(path).items()] + [bomb]))
    assert bad.stat().st_size < 64 << 10
    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError, match="decompression bomb"):
            _load(fmt, bad)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


def test_members_hidden_inside_other_members_are_refused(good, tmp_path):
    """A member whose data holds a whole second member (its local header and data): reading both
    would allocate the same bytes twice, so overlapping members are refused from the directory."""
    path, _, fmt = good
    members = _members(path)
    inner_name, inner = next((n, d) for n, d in members.items() if n != "meta.npy")
    raw = inner_name.encode()
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0x21, zlib.crc32(inner), len(inner), len(inner),
                        len(raw), 0) + raw + inner
    outer = _npy_header("|u1", (len(local),)) + local  # a valid array of bytes that happen to hold a member
    entries = [_stored(n, d) for n, d in members.items() if n != inner_name] + [_stored("outer.npy", outer)]
    archive = bytearray(_zip(entries))
    start = archive.index(local)  # add a directory entry for the member hidden in outer.npy's data
    cd = archive.index(b"PK\x01\x02")
    end = archive.index(b"PK\x05\x06")
    hidden = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0x21, zlib.crc32(inner), len(inner),
                         len(inner), len(raw), 0, 0, 0, 0, 0, start) + raw
    count = len(entries) + 1
    tail = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, end - cd + len(hidden), cd, 0)
    bad = tmp_path / "nested.npz"
    bad.write_bytes(bytes(archive[:end]) + hidden + tail)
    with pytest.raises(ModelFileError, match="members overlap"):  # the generic reader, no expected names
        _model_file.load_model_file(bad, fmt, _meta(path)["version"])
    with pytest.raises(ModelFileError, match="members overlap"):
        _load(fmt, bad)


def test_a_deeply_nested_header_is_refused(good, tmp_path):
    path, _, fmt = good
    members = _members(path)
    text = '{"format": "%s", "version": 1, "x": %s%s}' % (fmt, "[" * 100_000, "]" * 100_000)
    members["meta.npy"] = _npy(np.array(text))
    bad = tmp_path / "deep.npz"
    bad.write_bytes(_zip([_stored(n, d) for n, d in members.items()]))
    with pytest.raises(ModelFileError, match="nests deeper than"):
        _load(fmt, bad)


def _forge(src, dst, fmt, **meta_edits):
    """``src`` with its header edited and its checksum recomputed: only the loader's own checks can refuse it."""
    arrays = {name[:-4]: np.load(io.BytesIO(data)) for name, data in _members(src).items() if name != "meta.npy"}
    meta = _meta(src)
    meta.update(meta_edits)
    version = meta.pop("version")
    meta.pop("format"), meta.pop("sha256")
    save_model_file(dst, fmt, version, arrays, meta)
    return dst


def test_duplicate_labels_are_refused(chain, crfsuite, tmp_path):
    model, _ = chain
    model.save(tmp_path / "chain.npz")
    L = len(model.classes_)
    bad = _forge(tmp_path / "chain.npz", tmp_path / "dup.npz", "sklearn_struct.ChainCRF",
                 classes={"dtype": "object", "values": ["B-NP"] * L})
    with pytest.raises(ModelFileError, match="not distinct, 'B-NP' appears twice"):
        ChainCRF.load(bad)
    path = crfsuite[2]
    n = len(_meta(path)["labels"])
    bad = _forge(path, tmp_path / "dup.crfsuite", "sklearn_struct.crfsuite.CRF", labels=["B-NP"] * n)
    with pytest.raises(ModelFileError, match="not distinct, 'B-NP' appears twice"):
        CRF(model_filename=str(bad)).predict(crfsuite[1])
    bad = _forge(path, tmp_path / "dup2.crfsuite", "sklearn_struct.crfsuite.CRF",
                 labels=[4, True] + _meta(path)["labels"][2:])  # 4 == True is not, but 1 == True is
    CRFModel.load(bad)
    bad = _forge(path, tmp_path / "dup3.crfsuite", "sklearn_struct.crfsuite.CRF",
                 labels=[1, True] + _meta(path)["labels"][2:])
    with pytest.raises(ModelFileError, match="appears twice"):
        CRFModel.load(bad)


def test_a_label_count_that_does_not_match_the_weights_is_refused(chain, crfsuite, tmp_path):
    model, _ = chain
    model.save(tmp_path / "chain.npz")
    classes = {"dtype": "<i8", "values": list(range(len(model.classes_) + 1))}
    bad = _forge(tmp_path / "chain.npz", tmp_path / "more.npz", "sklearn_struct.ChainCRF", classes=classes)
    with pytest.raises(ModelFileError, match=r"has shape \(4, 3\), expected \(4, 4\)"):
        ChainCRF.load(bad)
    path = crfsuite[2]
    labels = _meta(path)["labels"]
    bad = _forge(path, tmp_path / "fewer.crfsuite", "sklearn_struct.crfsuite.CRF", labels=labels[:-1])
    with pytest.raises(ModelFileError, match="has shape"):
        CRFModel.load(bad)


def test_typed_values_that_lie_are_refused(chain, tmp_path):
    model, _ = chain
    model.save(tmp_path / "chain.npz")
    L = len(model.classes_)
    cases = [
        ({"dtype": "<i1", "values": [1, 2, 300][:L]}, "do not fit the stored dtype"),
        ({"dtype": "<U999999999999", "values": ["a", "b", "c"][:L]}, "do not fit the stored dtype"),
        ({"dtype": "|O", "values": [0, 1, 2][:L]}, "do not fit the stored dtype"),
        ({"dtype": "object", "values": [{"$set": []}, 1, 2][:L]}, "is not a stored value"),
        ({"dtype": "object", "values": [{"$numpy": ["<i8", "x"]}, 1, 2][:L]}, "is not a NumPy int64 value"),
        ({"dtype": "object", "values": [{"$bytes": "zz"}, 1, 2][:L]}, "is not a stored value"),
        ({"dtype": "object", "values": [[1], [2], [3]][:L]}, "unhashable"),
        ([0, 1, 2], "not a stored label array"),
    ]
    for k, (classes, message) in enumerate(cases):
        bad = _forge(tmp_path / "chain.npz", tmp_path / f"lie{k}.npz", "sklearn_struct.ChainCRF", classes=classes)
        with pytest.raises(ModelFileError, match=message):
            ChainCRF.load(bad)


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_path_that_is_not_a_regular_file_is_refused_without_opening(chain, crfsuite, tmp_path, kind):
    target = tmp_path / "model"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    X = crfsuite[1]
    outcome = {}

    def load():
        for name, call in [("ChainCRF", lambda: ChainCRF.load(target)),
                           ("crfsuite", lambda: CRF(model_filename=str(target)).predict(X))]:
            try:
                call()
                outcome[name] = "loaded"
            except Exception as exc:  # noqa: BLE001 - the test inspects it
                outcome[name] = exc

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # blocked in open(): unblock it by opening the write end, then fail
        with open(target, "wb"):
            pass
        worker.join(30)
        pytest.fail(f"loading a {kind} blocked")
    label = "FIFO" if kind == "fifo" else "directory"
    for name, exc in outcome.items():
        assert isinstance(exc, ModelFileError) and f"{target} is a {label}" in str(exc), (name, exc)


# ---------------------------------------------------------------------- exact round trips


@pytest.mark.parametrize("labels", [
    [4, 7, 9], [np.int64(4), np.int64(-2)], ["O", "O\x00", "B-NP"], [b"a", b"b\x00c"], [True, False],
    [1.5, -0.0, 2.5],
], ids=["int", "np.int64", "str-nul", "bytes", "bool", "float"])
@pytest.mark.parametrize("algorithm", ["lbfgs", "l2sgd", "pa"])
def test_chain_crf_round_trip_keeps_labels_options_and_predictions(tmp_path, labels, algorithm):
    X, y_int = make_chain_data(6, n_features=4, n_labels=len(labels), random_state=1)
    values = np.empty(len(labels), dtype=object)
    values[:] = labels
    y = [values[seq] if isinstance(labels[0], str) else np.array([labels[k] for k in seq]) for seq in y_int]
    options = {"lbfgs": {"num_memories": 4}, "l2sgd": {"calibration_eta": 0.2}, "pa": {"pa_type": 2, "c": 0.5}}
    model = ChainCRF(algorithm=algorithm, max_iter=15, solver_options=options[algorithm],
                     c2=np.float64(0.5) if algorithm != "pa" else 1.0)
    _fit(model, X, y)
    model.save(tmp_path / "m.npz")
    loaded = ChainCRF.load(tmp_path / "m.npz")
    assert loaded.solver_options == options[algorithm] and loaded.classes_.dtype == model.classes_.dtype
    assert _typed(list(loaded.classes_)) == _typed(list(model.classes_))
    assert repr(loaded.get_params()) == repr(model.get_params())
    before, after = model.predict(X), loaded.predict(X)
    assert all(_typed(a.tolist()) == _typed(b.tolist()) for a, b in zip(before, after))
    assert all(np.array_equal(a, b) for a, b in zip(model.predict_marginals(X), loaded.predict_marginals(X)))


def test_crfsuite_round_trip_keeps_labels_of_every_type(tmp_path):
    crf, X, path = _fitted_crf(tmp_path, CRF_LABELS)
    assert sorted(map(repr, _typed(crf.classes_)[1])) == sorted(map(repr, _typed(CRF_LABELS)[1]))
    loaded = CRF(model_filename=str(path))
    assert _typed(loaded.classes_) == _typed(crf.classes_)
    before, after = crf.predict(X), loaded.predict(X)
    assert _typed(before) == _typed(after)
    assert tuple in {type(label) for seq in after for label in seq}, "tuple labels stay tuples (not lists)"
    assert loaded.predict_marginals(X) == crf.predict_marginals(X)
    assert loaded.state_features_ == crf.state_features_ and loaded.size_ == path.stat().st_size == crf.size_


def test_crfsuite_attribute_names_keep_every_character(tmp_path):
    X = [[{"a\x00": 1.0, "\udcff": 2.0, "é": "x\x00"}, {"a": 1.0}], [{"b\x00": 1.0}, {"a\x00": 0.5}]]
    y = [["x", "y"], ["y", "x"]]
    crf = CRF(max_iterations=10, model_filename=str(tmp_path / "m.crfsuite")).fit(X, y)
    loaded = CRF(model_filename=str(tmp_path / "m.crfsuite"))
    assert loaded.attributes_ == crf.attributes_ and "a\x00" in loaded.attributes_
    assert loaded.predict(X) == crf.predict(X)


def test_saving_a_label_of_another_type_fails_before_writing(chain, tmp_path):
    model, _ = chain
    broken = copy.copy(model)
    broken.classes_ = np.array([object(), 1, 2][: len(model.classes_)], dtype=object)
    with pytest.raises(ValueError, match="type object"):
        broken.save(tmp_path / "m.npz")
    assert not list(tmp_path.iterdir())
    X, y = _crf_data([1j, "a"])
    with pytest.raises(ValueError, match="type complex"):
        CRF(max_iterations=5, model_filename=str(tmp_path / "m.crfsuite")).fit(X, y)
    assert not list(tmp_path.iterdir())


def test_typed_values_round_trip_through_json():
    values = [4, np.int64(5), "O\x00", (1, "x", (2.5, None)), b"\x00z", float("nan"), float("-inf"), 2**100,
              np.float32(0.1), np.uint8(255), np.bool_(True), np.bytes_(b"z"), {"a": 1, (1, 2): [3]}, True, None]
    for value in values:
        back = decode_value("f", json.loads(json.dumps(encode_value(value), allow_nan=False)))
        assert _typed_deep(back) == _typed_deep(value)
    for value in [object(), {1, 2}, 1j, np.complex128(1), np.datetime64("2020"), (((((((((((1,),),),),),),),),),),)]:
        with pytest.raises(ValueError, match="cannot be stored"):
            encode_value(value)


def _typed_deep(value):
    if isinstance(value, dict):
        return ("dict", sorted((repr(_typed_deep(k)), repr(_typed_deep(v))) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_typed_deep(v) for v in value])
    return (type(value).__name__, "nan" if value != value else repr(value))


# ---------------------------------------------------------------------- older files


def test_files_of_the_previous_versions_still_load(chain, crfsuite, tmp_path):
    model, X = chain
    # ChainCRF version 2: classes_ as an array, a Fortran-ordered coef (numpy.savez keeps the order)
    arrays = {"coef": np.asfortranarray(model.coef_), "intercept": model.intercept_,
              "transition": model.transition_, "classes": model.classes_}
    meta = {"params": {"c2": 0.1, "max_iter": 30}, "n_features_in_": 4, "n_iter_": int(model.n_iter_),
            "objective_": float(model.objective_), "format": "sklearn_struct.ChainCRF", "version": 2}
    meta["sha256"] = _model_file._checksum(arrays, meta)
    np.savez(tmp_path / "v2.npz", meta=np.array(json.dumps(meta)), **arrays)
    loaded = ChainCRF.load(tmp_path / "v2.npz")
    assert all(np.array_equal(a, b) for a, b in zip(loaded.predict(X), model.predict(X)))
    meta["objective_"] = 0.5
    np.savez(tmp_path / "v2-changed.npz", meta=np.array(json.dumps(meta)), **arrays)
    with pytest.raises(ModelFileError, match="bad checksum"):
        ChainCRF.load(tmp_path / "v2-changed.npz")
    # crfsuite version 1: attributes and labels as string arrays, no checksum
    Xs, ys = _crf_data(["B-NP", "O", "I-NP"])
    crf = CRF(max_iterations=10).fit(Xs, ys)
    m = crf._model
    coo = m.state.tocoo()
    with open(tmp_path / "v1.crfsuite", "wb") as fh:  # a file object: savez would append .npz to a name
        np.savez(fh, attributes=np.array(m.attributes, dtype=str),
                 labels=np.array(m.labels, dtype=str), state_row=coo.row.astype(np.int64),
                 state_col=coo.col.astype(np.int64), state_value=coo.data, bias=m.bias, transition=m.transition,
                 meta=np.array(json.dumps({"format": "sklearn_struct.crfsuite.CRF", "version": 1})))
    assert CRF(model_filename=str(tmp_path / "v1.crfsuite")).predict(Xs) == crf.predict(Xs)
    with pytest.raises(ModelFileError, match="version 3; this version of sklearn_struct reads versions 1 to 2"):
        _forge(crfsuite[2], tmp_path / "v3.crfsuite", "sklearn_struct.crfsuite.CRF", version=3)
        CRFModel.load(tmp_path / "v3.crfsuite")


# ---------------------------------------------------------------------- writing: temporary files, file mode


def _strays(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _killed_save(model, target):
    """Save ``model`` in a forked child that SIGKILLs itself halfway through writing the file."""
    pid = os.fork()
    if pid == 0:  # the child: no pytest, no cleanup, just die mid-write
        try:
            def dying(archive, name, array):
                archive.fp.write(b"half a model")
                archive.fp.flush()
                os.kill(os.getpid(), signal.SIGKILL)

            _model_file._write_member = dying
            model.save(target)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def test_a_save_killed_midway_leaves_no_stray_file_after_the_next_save_or_load(good, tmp_path):
    path, state, fmt = good
    model = _load(fmt, path)
    folder = tmp_path / "models"
    folder.mkdir()
    target = folder / "model.npz"
    target.write_bytes(path.read_bytes())
    _killed_save(model, target)
    first = _strays(folder)
    assert len(first) == 1 and target.read_bytes() == path.read_bytes()
    _killed_save(model, target)  # the next save removes the first one's temporary file (then dies too)
    second = _strays(folder)
    assert len(second) == 1 and second != first
    assert state(target) == state(path)  # a load removes the temporary files of dead writers too
    assert sorted(p.name for p in folder.iterdir()) == ["model.npz"]


def test_a_failing_rename_leaves_no_stray_file(good, tmp_path, monkeypatch):
    path, _, fmt = good
    target = tmp_path / "model.npz"

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match=f"could not write {target}"):
        _load(fmt, path).save(target)
    assert not target.exists() and _strays(tmp_path) == []


def test_a_running_writer_temporary_file_is_kept(tmp_path):
    """Only temporaries of dead processes are removed: a concurrent writer's file stays."""
    from sklearn_struct.utils._files import _host_tag, remove_stale_temporaries

    target = tmp_path / "model.npz"
    alive = tmp_path / f".model.npz.abcdefgh.{_host_tag()}-{os.getppid()}.tmp"
    other_host = tmp_path / ".model.npz.abcdefgh.00000000-999999999.tmp"
    other_name = tmp_path / f".other.npz.abcdefgh.{_host_tag()}-999999999.tmp"
    for p in (alive, other_host, other_name):
        p.write_bytes(b"x")
    remove_stale_temporaries(target)
    assert _strays(tmp_path) == sorted(p.name for p in (alive, other_host, other_name))


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_every_model_file_gets_the_mode_of_an_ordinary_new_file(chain, tmp_path, umask):
    model, _ = chain
    X, y = _crf_data(["a", "b"])
    old = os.umask(umask)
    try:
        model.save(tmp_path / "chain.npz")
        CRF(max_iterations=5, model_filename=str(tmp_path / "m.crfsuite")).fit(X, y)
        with open(tmp_path / "plain.txt", "w"):
            pass
    finally:
        os.umask(old)
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in tmp_path.iterdir()}
    assert set(modes.values()) == {oct(0o666 & ~umask)}, modes
