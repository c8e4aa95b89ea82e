"""Model files: named arrays and a JSON header in one ``.npz`` (no pickle), read as hostile input.

Every model file of the package (:meth:`ChainCRF.save <sklearn_struct.ChainCRF.save>`, the
``model_filename`` of :class:`sklearn_struct.crfsuite.CRF`) goes through :func:`save_model_file`
and :func:`load_model_file`.

**Format.** A zip archive (what :func:`numpy.savez` writes, so any NumPy tool opens it) of
uncompressed ``.npy`` members: ``meta.npy``, a 0-d string holding a JSON header (format name,
version, the estimator's parameters and scalar fitted attributes, its labels, and a SHA-256 over
every array's name, dtype, shape and bytes and over the header), and one C-ordered member per
array of booleans, integers, floats or (legacy) fixed-width strings. Values that JSON cannot hold
exactly (labels, parameters) are stored in a typed encoding (:func:`encode_value`): ints, floats
(``nan`` and ``inf`` too), bools, strings (NULs included), bytes, tuples, lists, dicts, None and
NumPy scalars come back with their exact types, without pickle.

**Reading.** :func:`load_model_file` refuses, with a :class:`ModelFileError` (a ValueError) that
names the file and what is wrong, before anything large is allocated or inflated: a path that is
not a regular file (a directory, FIFO or device: never opened for reading), an empty, truncated
or non-zip file, a member that is encrypted, of an unknown compression, duplicated, unexpected or
missing, members that overlap, a member that would inflate more than ``MAX_INFLATION`` times its
compressed size or past its declared size (members are read in bounded chunks and the read stops at the declared size),
a ``.npy`` header whose dtype is not plain numbers or whose shape does not match the member's size
(or the shape the estimator expects), a header nested deeper than ``MAX_JSON_DEPTH``, a bad CRC or
checksum, a format or version this code does not read. The estimator then checks what it read
like ``fit`` checks its input (:func:`check_model_array`, :func:`load_params`, :func:`check_labels`).

**Writing.** :func:`save_model_file` writes through :func:`~sklearn_struct.utils._files.atomic_write`:
a temporary file beside the target (named after it and the writing process), fsynced and renamed
over it; a temporary left by a killed writer is removed by the next save or load of that file.
Model files get the mode an ordinary new file gets (``0o666`` less the umask, 0644 usually).
"""

import hashlib
import io
import itertools
import json
import math
import os
import re
import stat
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ._files import atomic_write, remove_stale_temporaries

__all__ = ["ModelFileError", "check_labels", "check_model_array", "decode_label_array", "decode_value",
           "encode_label_array", "encode_value", "load_model_file", "load_params", "meta_number",
           "model_file_bytes", "save_model_file"]

MAX_MEMBERS = 64  # members in one archive
MAX_INFLATION = 100  # a compressed member may inflate to at most this many times its size ...
INFLATION_FLOOR = 1 << 20  # ... or to this many bytes
MAX_META_BYTES = 64 << 20  # the JSON header member (4 bytes a character)
MAX_JSON_DEPTH = 32
_CHUNK = 1 << 20
_NPY_HEADER_MAX = 10000  # numpy's own limit for a .npy header
_ZIP_MAGIC = b"PK\x03\x04"
_MEMBER_NAME = re.compile(r"[A-Za-z0-9_]{1,64}\.npy")
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # same model, same bytes


class ModelFileError(ValueError):
    """A model file that cannot be used: damaged, hostile, of another format or version, or whose
    contents do not make a valid model. The message names the file (also in ``path``) and the problem.

    A ValueError, so ``except ValueError`` catches it. A missing file raises FileNotFoundError
    instead, as ``open`` does.
    """

    __module__ = "sklearn_struct.exceptions"  # where users import it from

    def __init__(self, message, path=None):
        super().__init__(message)
        self.path = path


def _fail(path, problem):
    """A ModelFileError whose message starts with the file's path."""
    sep = " " if problem.startswith(("is ", "has ")) else ": "
    return ModelFileError(f"{path}{sep}{problem}", path=str(path))


# ---------------------------------------------------------------------- writing


def save_model_file(path, fmt, version, arrays, meta):
    """Write ``arrays`` (name -> array of numbers or strings) and the JSON-able dict ``meta`` to
    ``path`` atomically, with a checksum over both."""
    atomic_write(path, lambda fh: _write_archive(fh, fmt, version, arrays, meta))


def model_file_bytes(fmt, version, arrays, meta):
    """The bytes :func:`save_model_file` writes for the same arguments (it writes the same bytes each time)."""
    buffer = io.BytesIO()
    _write_archive(buffer, fmt, version, arrays, meta)
    return buffer.getvalue()


def _write_archive(fh, fmt, version, arrays, meta):
    arrays = {name: _array_to_save(name, value) for name, value in arrays.items()}
    meta = dict(meta, format=fmt, version=version)
    meta.pop("sha256", None)
    meta["sha256"] = _checksum(arrays, meta)
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name in sorted(arrays):
            _write_member(archive, name, arrays[name])


def _write_member(archive, name, arr):
    """One C-ordered ``.npy`` member, its data written from the array's own buffer (no copy)."""
    info = zipfile.ZipInfo(f"{name}.npy", date_time=_FIXED_TIME)
    info.external_attr = 0o644 << 16
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, np.lib.format.header_data_from_array_1_0(arr))
    with archive.open(info, "w", force_zip64=arr.nbytes > (1 << 30)) as out:
        out.write(header.getvalue())
        out.write(_bytes_of(arr))


def _bytes_of(arr):
    """The bytes of the C-contiguous ``arr`` as a buffer (no copy)."""
    return arr.reshape(-1).view(np.uint8).data


def _array_to_save(name, value):
    if not _MEMBER_NAME.fullmatch(f"{name}.npy") or name == "meta":
        raise ValueError(f"model file array name {name!r} is not a short name of letters, digits and '_'.")
    arr = np.ascontiguousarray(value)
    if arr.dtype.kind not in "biufU" or arr.dtype.fields is not None:
        raise ValueError(f"model file array {name!r} has dtype {arr.dtype}; only numbers and strings are stored.")
    return arr


def _checksum(arrays, meta):
    digest = hashlib.sha256()
    for name in sorted(arrays):
        arr = np.ascontiguousarray(arrays[name])
        digest.update(_array_prefix(name, arr.dtype, arr.shape))
        digest.update(_bytes_of(arr))
    return _finish_checksum(digest, meta)


def _array_prefix(name, dtype, shape):
    return f"{name}|{dtype.str}|{tuple(shape)}|".encode()


def _finish_checksum(digest, meta):
    digest.update(json.dumps({k: v for k, v in meta.items() if k != "sha256"}, sort_keys=True).encode())
    return digest.hexdigest()


# ---------------------------------------------------------------------- reading


def load_model_file(path, fmt, version, checksum_from=2, expect=None, what=None):
    """``(arrays, meta)`` of a file written by :func:`save_model_file` with this ``fmt`` and a version
    from 1 to ``version``; files of versions below ``checksum_from`` carry no checksum.

    ``expect(meta)``, when given, returns ``{name: (dtype kinds, shape)}`` (a shape entry None: any
    length): the arrays the file must hold, checked against each member's ``.npy`` header before
    its array is allocated. ``what`` names the kind of file in messages (default: "<class> file").
    Raises :class:`ModelFileError` naming the file and the problem (FileNotFoundError if it is missing).
    """
    what = what or f"{_short(fmt)} file"
    path = _regular_file_path(path, what)
    remove_stale_temporaries(path)
    with _open_regular(path, what) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            raise _fail(path, f"is empty: not a {what}.")
        if fh.read(len(_ZIP_MAGIC)) != _ZIP_MAGIC:
            raise _fail(path, f"is not a {what}: not an .npz archive.")
        members = _members(path, fh, size)
        if "meta" not in members:
            raise _fail(path, f"is not a {what}: it has no 'meta' header.")
        meta = _read_meta(path, fh, size, members.pop("meta"), fmt, version, what)
        checked = meta["version"] >= checksum_from
        expected = None if expect is None else expect(meta)
        if expected is not None:
            _check_member_names(path, set(members), set(expected))
        digest = hashlib.sha256()
        arrays = {name: _read_array(path, fh, size, name, members[name], digest if checked else None,
                                    None if expected is None else expected[name]) for name in sorted(members)}
    if checked and meta.pop("sha256", None) != _finish_checksum(digest, meta):
        raise _fail(path, "has a bad checksum: its bytes were changed after it was saved.")
    return arrays, meta


def _short(fmt):
    return fmt.rsplit(".", 1)[-1]


def _regular_file_path(path, what):
    """``path`` as a Path to a regular file: FileNotFoundError if missing, ModelFileError if it is another
    kind of file (checked before opening: a FIFO would block ``open``)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or path-like object, got {type(path).__name__}.")
    path = Path(os.path.expanduser(os.fspath(path)))
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"No such {what}: {path}") from None
    except OSError as exc:
        raise _fail(path, f"cannot be read: {exc.strerror or exc}.") from None
    if not stat.S_ISREG(mode):
        raise _fail(path, f"is a {_file_kind(mode)}, not a {what} (model files are regular files).")
    return path


def _file_kind(mode):
    kinds = [(stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISCHR, "character device"),
             (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")]
    return next((name for test, name in kinds if test(mode)), "special file")


def _open_regular(path, what):
    """Open without blocking (a FIFO swapped in after the check cannot hang us), then check again."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise FileNotFoundError(f"No such {what}: {path}") from None
        raise _fail(path, f"cannot be opened: {exc.strerror or exc}.") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _fail(path, f"is a {_file_kind(mode)}, not a {what} (model files are regular files).")
    return os.fdopen(fd, "rb")


def _members(path, fh, size):
    """The archive's members (name without ``.npy`` -> ZipInfo), each checked before it is read."""
    try:
        with zipfile.ZipFile(fh) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, struct.error,
            NotImplementedError, RuntimeError, OverflowError, UnicodeDecodeError) as exc:
        raise _fail(path, f"is truncated or corrupt: its zip directory cannot be read ({_brief(exc)}).") from None
    if len(infos) > MAX_MEMBERS:
        raise _fail(path, f"is not a model file: it has {len(infos)} members (at most {MAX_MEMBERS}).")
    members, total = {}, 0
    for info in infos:
        _check_member(path, info, size)
        name = info.filename[: -len(".npy")]
        if name in members:
            raise _fail(path, f"is corrupt: member {info.filename!r} appears twice.")
        members[name] = info
        total += info.file_size
    spans = sorted((info.header_offset, info.header_offset + 30 + len(_raw_name(info)) + info.compress_size)
                   for info in infos)
    if any(end > start for (_, end), (start, _) in zip(spans, spans[1:])):
        raise _fail(path, "is corrupt or hostile: two of its members overlap.")
    if total > max(INFLATION_FLOOR, MAX_INFLATION * size):
        raise _fail(path, f"is refused: its members inflate to {total} bytes from a {size}-byte file "
                          f"(more than {MAX_INFLATION} times).")
    return members


def _check_member(path, info, size):
    name = info.filename
    if not _MEMBER_NAME.fullmatch(name):
        raise _fail(path, f"is not a model file: unexpected member {name[:80]!r}.")
    if info.flag_bits & 0x1:
        raise _fail(path, f"is not a model file: member {name!r} is encrypted.")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise _fail(path, f"is not a model file: member {name!r} uses compression method {info.compress_type}.")
    if info.header_offset < 0 or info.header_offset + 30 + info.compress_size > size:
        raise _fail(path, f"is truncated or corrupt: member {name!r} ends past the end of the file.")
    if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
        raise _fail(path, f"is corrupt: stored member {name!r} declares {info.file_size} bytes but holds "
                          f"{info.compress_size}.")
    if info.file_size > max(INFLATION_FLOOR, MAX_INFLATION * info.compress_size):
        raise _fail(path, f"is refused: member {name!r} would inflate from {info.compress_size} to {info.file_size} "
                          f"bytes (more than {MAX_INFLATION} times: a decompression bomb).")


def _member_chunks(path, fh, size, info):
    """The member's bytes in chunks of at most 1 MiB, never more than its declared size, CRC checked."""
    name = info.filename
    fh.seek(start := _local_header_end(path, fh, info))
    if start + info.compress_size > size:
        raise _fail(path, f"is truncated or corrupt: member {name!r} ends past the end of the file.")
    left_in, left_out, crc = info.compress_size, info.file_size, 0
    inflate = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
    while left_in or (inflate is not None and inflate.unconsumed_tail and not inflate.eof):
        if inflate is not None and inflate.unconsumed_tail:
            data = inflate.unconsumed_tail
        else:
            data = fh.read(min(_CHUNK, left_in))
            if not data:
                raise _fail(path, f"is truncated: member {name!r} ends early.")
            left_in -= len(data)
        if inflate is not None:
            try:
                data = inflate.decompress(data, min(_CHUNK, left_out + 1))
            except zlib.error as exc:
                raise _fail(path, f"is corrupt: member {name!r} does not inflate ({exc}).") from None
        if len(data) > left_out:
            raise _fail(path, f"is corrupt or hostile: member {name!r} inflates past its declared size of "
                              f"{info.file_size} bytes (reading stopped there).")
        left_out -= len(data)
        crc = zlib.crc32(data, crc)
        if data:
            yield data
        if inflate is not None and inflate.eof:
            break
    if left_out or (inflate is not None and not inflate.eof):
        raise _fail(path, f"is truncated or corrupt: member {name!r} holds fewer bytes than the "
                          f"{info.file_size} it declares.")
    if crc != info.CRC:
        raise _fail(path, f"is corrupt: member {name!r} fails its CRC check (damaged bytes).")


def _local_header_end(path, fh, info):
    """Where the member's data starts, after its local header; that header must agree with the directory."""
    fh.seek(info.header_offset)
    local = fh.read(30)
    if len(local) == 30:
        magic, _, flags, method, _, _, crc, packed, size, n_name, n_extra = struct.unpack("<4s5H3L2H", local)
        name = fh.read(n_name)
        same = (magic == _ZIP_MAGIC and method == info.compress_type and name == _raw_name(info)
                and (flags & 0x08 or 0xFFFFFFFF in (packed, size)
                     or (crc, packed, size) == (info.CRC, info.compress_size, info.file_size)))
        if same:
            return info.header_offset + 30 + n_name + n_extra
    raise _fail(path, f"is truncated or corrupt: the local header of member {info.filename!r} is damaged.")


def _raw_name(info):
    return info.filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")


class _MemberReader:
    """``read(n)`` over :func:`_member_chunks`, then :meth:`fill` for the array data."""

    def __init__(self, chunks):
        self._chunks, self._buffer = chunks, b""

    def read(self, n):
        """Up to ``n`` bytes (fewer at the member's end); used for the small ``.npy`` header."""
        while len(self._buffer) < n:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer += chunk
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def fill(self, view, digest):
        """Copy the rest of the member into the byte memoryview ``view``; the number of bytes it had."""
        pos = 0
        for piece in itertools.chain([self._buffer], self._chunks):
            end = pos + len(piece)
            if end <= len(view):
                view[pos:end] = piece
                if digest is not None:
                    digest.update(piece)
            pos = end
        self._buffer = b""
        return pos


def _read_array(path, fh, size, name, info, digest, expected):
    counter = _CountingReader(_MemberReader(_member_chunks(path, fh, size, info)))
    try:
        major, minor = np.lib.format.read_magic(counter)
        if (major, minor) not in ((1, 0), (2, 0), (3, 0)):
            raise ValueError(f"unknown .npy version {major}.{minor}")
        read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(counter, max_header_size=_NPY_HEADER_MAX)
    except ModelFileError:
        raise
    except Exception as exc:  # numpy's header parser raises ValueError, SyntaxError, tokenize.TokenError ...
        raise _fail(path, f"is corrupt: member {name!r} has no valid .npy header ({_brief(exc)}).") from None
    shape = _check_array_header(path, name, dtype, shape, expected)
    n_bytes = math.prod(shape) * dtype.itemsize
    if n_bytes != info.file_size - counter.count:
        raise _fail(path, f"is corrupt: array {name!r} declares shape {shape} of {dtype} ({n_bytes} bytes) but its "
                          f"member holds {info.file_size - counter.count} bytes of data.")
    arr = np.empty(shape[::-1] if fortran else shape, dtype=dtype)
    if digest is not None and not fortran:
        digest.update(_array_prefix(name, dtype, shape))
    got = counter.reader.fill(memoryview(arr.reshape(-1).view(np.uint8)), None if fortran else digest)
    if got != n_bytes:
        raise _fail(path, f"is truncated or corrupt: array {name!r} has {got} bytes of data, expected {n_bytes}.")
    if fortran:  # written by an older numpy.savez: C-ordered bytes for the checksum
        arr = arr.T
        if digest is not None:
            digest.update(_array_prefix(name, dtype, shape))
            digest.update(np.ascontiguousarray(arr).tobytes())
    return arr


class _CountingReader:
    def __init__(self, reader):
        self.reader, self.count = reader, 0

    def read(self, n):
        out = self.reader.read(n)
        self.count += len(out)
        return out


def _check_array_header(path, name, dtype, shape, expected):
    if dtype.kind not in "biufU" or dtype.fields is not None or dtype.subdtype is not None or dtype.hasobject:
        raise _fail(path, f"is not a model file: array {name!r} has dtype {dtype}; model files hold only numbers "
                          "and strings.")
    if not isinstance(shape, tuple) or len(shape) > 32 or any(type(d) is not int or d < 0 for d in shape):
        raise _fail(path, f"is corrupt: array {name!r} has an invalid shape {shape!r}.")
    if expected is not None:
        kinds, want = expected
        if dtype.kind not in kinds:
            raise _fail(path, f"array {name!r} has dtype {dtype}, expected kind {kinds!r}.")
        if len(shape) != len(want) or any(w is not None and g != w for g, w in zip(shape, want)):
            shown = tuple("any" if w is None else w for w in want)
            raise _fail(path, f"array {name!r} has shape {shape}, expected {shown}.")
    return shape


def _read_meta(path, fh, size, info, fmt, version, what):
    if info.file_size > MAX_META_BYTES:
        raise _fail(path, f"is refused: its header is {info.file_size} bytes (at most {MAX_META_BYTES}).")
    header = _read_array(path, fh, size, "meta", info, None, ("U", ()))
    text = str(header[()])
    _check_json_depth(path, text)
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _fail(path, f"is not a {what}: its header is not JSON ({_brief(exc)}).") from None
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        found = meta.get("format") if isinstance(meta, dict) else "no JSON header"
        raise _fail(path, f"is not a {what} (format {str(found)[:80]!r}).")
    found = meta.get("version")
    if type(found) is not int or not 1 <= found <= version:
        raise _fail(path, f"is a {_short(fmt)} file of version {str(found)[:40]}; this version of sklearn_struct "
                          f"reads versions 1 to {version}.")
    return meta


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _check_json_depth(path, text):
    """ModelFileError if the JSON text nests deeper than MAX_JSON_DEPTH (json.loads would recurse)."""
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise _fail(path, f"is refused: its header nests deeper than {MAX_JSON_DEPTH} levels.")
        elif token in "]}":
            depth -= 1


def _check_member_names(path, found, expected):
    missing, extra = sorted(expected - found), sorted(found - expected)
    if missing:
        raise _fail(path, f"has no array {missing[0]!r}.")
    if extra:
        raise _fail(path, f"has an unexpected array {extra[0]!r} (expected {sorted(expected)}).")


def _brief(exc):
    return f"{type(exc).__name__}: {str(exc)[:120]}"


# ---------------------------------------------------------------------- typed values (labels, parameters)

_MAX_VALUE_NESTING = 8  # containers in a stored value (each adds up to 3 JSON levels)
_NUMPY_SCALAR_TYPES = {"b": bool, "i": int, "u": int, "f": float, "U": str, "S": bytes}


def encode_value(value, _depth=0):
    """``value`` as JSON with its exact type kept, for :func:`decode_value`; ValueError if it cannot be.

    ints, finite floats, bools, str and None are plain JSON (lists too); the others are one-key
    objects: ``{"$float": "nan"}``, ``{"$bytes": "<hex>"}``, ``{"$tuple": [...]}``,
    ``{"$dict": [[key, value], ...]}``, ``{"$numpy": ["<i8", 4]}`` (NumPy bool, integer, float and
    string scalars).

    Examples
    --------
    >>> import numpy as np
    >>> encode_value((4, "B-NP\\x00", b"\\x01", np.int64(2), None))
    {'$tuple': [4, 'B-NP\\x00', {'$bytes': '01'}, {'$numpy': ['<i8', 2]}, None]}
    >>> decode_value("model.npz", _) == (4, "B-NP\\x00", b"\\x01", np.int64(2), None)
    True
    """
    if _depth > _MAX_VALUE_NESTING:
        raise ValueError(f"a value nested deeper than {_MAX_VALUE_NESTING} levels cannot be stored in a model file.")
    kind = type(value)
    if isinstance(value, np.generic):
        if value.dtype.kind not in _NUMPY_SCALAR_TYPES or value.dtype.fields is not None:
            raise ValueError(f"a NumPy {value.dtype} value ({value!r:.60}) cannot be stored in a model file.")
        return {"$numpy": [value.dtype.str, encode_value(value.item(), _depth + 1)]}
    if value is None or kind in (bool, str, int):
        return value
    if kind is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if kind is bytes:
        return {"$bytes": value.hex()}
    if kind in (tuple, list):
        items = [encode_value(item, _depth + 1) for item in value]
        return {"$tuple": items} if kind is tuple else items
    if kind is dict:
        return {"$dict": [[encode_value(k, _depth + 1), encode_value(v, _depth + 1)] for k, v in value.items()]}
    raise ValueError(f"a value of type {kind.__name__} ({value!r:.60}) cannot be stored in a model file: it "
                     "stores ints, floats, bools, str, bytes, None, NumPy scalars and tuples, lists and dicts of them.")


def decode_value(path, obj, what="value"):
    """The value :func:`encode_value` encoded as ``obj``; ModelFileError naming ``path`` and ``what`` if it is
    not one."""
    kind = type(obj)
    if obj is None or kind in (bool, str, int, float):
        return obj
    if kind is list:
        return [decode_value(path, item, what) for item in obj]
    if kind is dict and len(obj) == 1:
        (tag, payload), = obj.items()
        decoded = _decode_tagged(path, tag, payload, what)
        if decoded is not _INVALID:
            return decoded
    raise _fail(path, f"{what}: {str(obj)[:80]} is not a stored value.")


_INVALID = object()


def _decode_tagged(path, tag, payload, what):
    if tag == "$float" and payload in ("nan", "inf", "-inf"):
        return float(payload)
    if tag == "$bytes" and type(payload) is str and re.fullmatch(r"(?:[0-9a-f]{2})*", payload):
        return bytes.fromhex(payload)
    if tag == "$tuple" and type(payload) is list:
        return tuple(decode_value(path, item, what) for item in payload)
    if tag == "$dict" and type(payload) is list and all(type(p) is list and len(p) == 2 for p in payload):
        pairs = [(decode_value(path, k, what), decode_value(path, v, what)) for k, v in payload]
        if not all(_hashable(k) for k, _ in pairs):
            raise _fail(path, f"{what}: a stored dict has an unhashable key.")
        return dict(pairs)
    if tag == "$numpy" and type(payload) is list and len(payload) == 2 and type(payload[0]) is str:
        return _numpy_scalar(path, payload[0], decode_value(path, payload[1], what), what)
    return _INVALID


def _numpy_scalar(path, dtype, value, what):
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError, OverflowError, SyntaxError):
        raise _fail(path, f"{what}: {dtype[:40]!r} is not a NumPy dtype.") from None
    if (dtype.kind not in _NUMPY_SCALAR_TYPES or dtype.fields is not None or dtype.subdtype is not None
            or type(value) is not _NUMPY_SCALAR_TYPES[dtype.kind]):
        raise _fail(path, f"{what}: a {type(value).__name__} is not a NumPy {dtype} value.")
    try:
        scalar = dtype.type(value)
    except (TypeError, ValueError, OverflowError):
        scalar = None
    if scalar is None or not _same_value(scalar.item(), value):
        raise _fail(path, f"{what}: {value!r:.60} does not fit NumPy's {dtype}.")
    return scalar


def _same_value(a, b):
    if type(a) is not type(b):
        return False
    if type(a) is float and math.isnan(a):
        return math.isnan(b)
    return a == b


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True


# ---------------------------------------------------------------------- labels


def encode_label_array(classes):
    """``classes`` (a 1-D label array, e.g. ``classes_``) as ``{"dtype": ..., "values": [...]}`` with
    each value's exact type (:func:`encode_value`); ValueError if a label cannot be stored."""
    classes = np.asarray(classes)
    if classes.ndim != 1 or (classes.dtype != object and classes.dtype.kind not in _NUMPY_SCALAR_TYPES):
        raise ValueError(f"labels of dtype {classes.dtype} and shape {classes.shape} cannot be stored in a model file.")
    if classes.dtype == object:
        return {"dtype": "object", "values": [encode_value(v) for v in classes]}
    return {"dtype": classes.dtype.str, "values": [encode_value(v) for v in classes.tolist()]}


def decode_label_array(path, obj, what="classes"):
    """The label array :func:`encode_label_array` encoded as ``obj``, its labels checked (:func:`check_labels`)."""
    if type(obj) is not dict or set(obj) != {"dtype", "values"} or type(obj["values"]) is not list:
        raise _fail(path, f"{what} in the header is not a stored label array.")
    values = [decode_value(path, v, f"{what}[{i}]") for i, v in enumerate(obj["values"])]
    check_labels(path, values, what)
    if obj["dtype"] == "object":
        labels = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            labels[i] = value
        return labels
    try:
        dtype = np.dtype(obj["dtype"])
        ok = dtype.kind in _NUMPY_SCALAR_TYPES and dtype.fields is None and dtype.itemsize <= 4 * (
            max((len(v) for v in values if isinstance(v, (str, bytes))), default=0) + 8)
        labels = np.array(values, dtype=dtype) if ok else None
    except (TypeError, ValueError, OverflowError, SyntaxError):
        labels = None
    if labels is None or labels.shape != (len(values),) or not all(map(_same_value, labels.tolist(), values)):
        raise _fail(path, f"{what}: the labels do not fit the stored dtype {str(obj['dtype'])[:40]!r}.")
    return labels


def check_labels(path, labels, what="labels"):
    """ModelFileError unless ``labels`` (a sequence) is non-empty, hashable and distinct."""
    if len(labels) == 0:
        raise _fail(path, f"{what}: the model has no labels.")
    seen = set()
    for i, label in enumerate(labels):
        if not _hashable(label):
            raise _fail(path, f"{what}[{i}] = {label!r:.60} is not a label (unhashable).")
        if label in seen:
            raise _fail(path, f"{what}: the labels are not distinct, {label!r:.60} appears twice.")
        seen.add(label)
    return labels


# ---------------------------------------------------------------------- checks of what was read


def check_model_array(path, arrays, name, shape, kinds="f"):
    """``arrays[name]``, checked: present, of one of the dtype ``kinds``, of ``shape`` (None: any length), finite."""
    if name not in arrays:
        raise _fail(path, f"has no array {name!r}.")
    arr = arrays[name]
    _check_array_header(path, name, arr.dtype, arr.shape, (kinds, shape))
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        at = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise _fail(path, f"array {name!r} holds {arr[at]} at index {at}; values must be finite.")
    return arr


def load_params(path, cls, meta):
    """An unfitted ``cls`` with the parameters in ``meta['params']`` (typed values), validated like ``fit``
    validates them."""
    params = meta.get("params")
    if not isinstance(params, dict):
        raise _fail(path, "the header has no parameters.")
    unknown = sorted(set(params) - set(cls().get_params()))
    if unknown:
        raise _fail(path, f"unknown {cls.__name__} parameters {unknown}.")
    model = cls(**{name: decode_value(path, value, f"parameter {name!r}") for name, value in params.items()})
    try:
        model._validate_params()
    except (ValueError, TypeError) as exc:
        raise _fail(path, str(exc)) from None
    return model


def meta_number(path, meta, name, kind, low):
    """``meta[name]``: an int (``kind='int'``) or finite float at least ``low`` (None: no bound)."""
    value = meta.get(name)
    ok = type(value) is int or (kind == "float" and type(value) is float)
    try:
        ok = ok and math.isfinite(value) and (low is None or value >= low)
    except OverflowError:  # an int beyond float's range
        ok = kind == "int" and (low is None or value >= low)
    if not ok:
        bound = "" if low is None else f" >= {low}"
        raise _fail(path, f"{name} = {str(value)[:40]} in the header is not a finite {kind}{bound}.")
    return int(value) if kind == "int" else float(value)
