"""Model files: named arrays and a JSON header in one ``.npz`` (no pickle), guarded by a checksum.

:func:`save_model_file` writes the arrays and the header (format name, version, the
estimator's parameters and scalar fitted attributes) atomically (see
:func:`~sklearn_struct.utils._files.atomic_write`), with a SHA-256 over every array's dtype,
shape and bytes and over the header. :func:`load_model_file` reads it back; a file that is
missing, empty, truncated, not an ``.npz``, of another format or version, or whose bytes no
longer match the checksum raises a ValueError naming the file and what is wrong. The
estimator then checks what it read like ``fit`` checks its input (:func:`check_model_array`,
:func:`load_params`).
"""

import hashlib
import json
import numbers
import zipfile

import numpy as np

from ._files import as_file_path, atomic_write

__all__ = ["check_model_array", "load_model_file", "load_params", "save_model_file"]

_NPZ_MAGIC = b"PK\x03\x04"


def save_model_file(path, fmt, version, arrays, meta):
    """Write ``arrays`` (name -> ndarray) and the JSON-able dict ``meta`` to ``path`` atomically."""
    arrays = {name: np.asarray(value) for name, value in arrays.items()}
    meta = dict(meta, format=fmt, version=version)
    meta["sha256"] = _checksum(arrays, meta)
    header = np.array(json.dumps(meta))
    atomic_write(path, lambda fh: np.savez(fh, meta=header, **arrays))


def load_model_file(path, fmt, version, checksum_from=2):
    """``(arrays, meta)`` of a file written by :func:`save_model_file` with this ``fmt`` and ``version``.

    Files of versions below ``checksum_from`` carry no checksum and are read without one.
    """
    path = as_file_path(path, "model file")
    with open(path, "rb") as fh:
        magic = fh.read(len(_NPZ_MAGIC))
    if magic != _NPZ_MAGIC:
        what = "empty" if not magic else "not an .npz archive"
        raise ValueError(f"{path} is not a {_short(fmt)} file: {what}.")
    try:
        with np.load(path, allow_pickle=False) as data:
            contents = {name: data[name] for name in data.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as exc:
        raise ValueError(f"{path} is truncated or corrupt: {type(exc).__name__}: {str(exc)[:120]}.") from None
    meta = _read_meta(path, fmt, contents.pop("meta", None))
    if not isinstance(meta.get("version"), int) or not 1 <= meta["version"] <= version:
        raise ValueError(f"{path} is a {_short(fmt)} file of version {meta.get('version')!r}; this version reads 1 to "
                         f"{version}.")
    if meta["version"] >= checksum_from:
        expected = meta.pop("sha256", None)
        if expected != _checksum(contents, meta):
            raise ValueError(f"{path} has a bad checksum: its bytes were changed after it was saved.")
    return contents, meta


def _read_meta(path, fmt, header):
    if header is None:
        raise ValueError(f"{path} is not a {_short(fmt)} file: it has no 'meta' header.")
    try:
        meta = json.loads(str(header))
    except ValueError:
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        found = meta.get("format") if isinstance(meta, dict) else "no JSON header"
        raise ValueError(f"{path} is not a {_short(fmt)} file (format {found!r}).")
    return meta


def _short(fmt):
    return fmt.rsplit(".", 1)[-1]


def _checksum(arrays, meta):
    digest = hashlib.sha256()
    for name in sorted(arrays):
        arr = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{arr.dtype.str}|{arr.shape}|".encode())
        digest.update(arr.tobytes())
    digest.update(json.dumps({k: v for k, v in meta.items() if k != "sha256"}, sort_keys=True).encode())
    return digest.hexdigest()


def check_model_array(path, arrays, name, shape, kinds="f"):
    """``arrays[name]``, checked: present, of one of the dtype ``kinds``, of ``shape`` (None: any length), finite."""
    if name not in arrays:
        raise ValueError(f"{path} has no array {name!r}.")
    arr = arrays[name]
    if arr.dtype.kind not in kinds:
        raise ValueError(f"{path}: array {name!r} has dtype {arr.dtype}, expected kind {kinds!r}.")
    if arr.ndim != len(shape) or any(want is not None and got != want for got, want in zip(arr.shape, shape)):
        expected = tuple("any" if want is None else want for want in shape)
        raise ValueError(f"{path}: array {name!r} has shape {arr.shape}, expected {expected}.")
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        at = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ValueError(f"{path}: array {name!r} holds {arr[at]} at index {at}; values must be finite.")
    return arr


def load_params(path, cls, meta):
    """An unfitted ``cls`` with the parameters in ``meta['params']``, validated like ``fit`` validates them."""
    params = meta.get("params")
    if not isinstance(params, dict):
        raise ValueError(f"{path}: the header has no parameters.")
    unknown = sorted(set(params) - set(cls().get_params()))
    if unknown:
        raise ValueError(f"{path}: unknown {cls.__name__} parameters {unknown}.")
    model = cls(**params)
    try:
        model._validate_params()
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return model


def meta_number(path, meta, name, kind, low):
    """``meta[name]``: an int (``kind='int'``) or finite float at least ``low`` (None: no bound)."""
    value = meta.get(name)
    ok_type = isinstance(value, numbers.Integral) if kind == "int" else isinstance(value, numbers.Real)
    if isinstance(value, bool) or not ok_type or not np.isfinite(value) or (low is not None and value < low):
        bound = "" if low is None else f" >= {low}"
        raise ValueError(f"{path}: {name} = {value!r} in the header is not a finite {kind}{bound}.")
    return int(value) if kind == "int" else float(value)
