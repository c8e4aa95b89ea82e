"""Files: one reader for every text loader, one atomic writer for every ``save``.

Reading: :func:`text_lines` is the line reader of every text loader (CoNLL, CoNLL-U, CRF++
templates, LIBSVM, landmark files ...): plain or gzip (recognised by its magic number), every
failure a ValueError (or OSError) that names the file and, where there is one, the line: a
missing path, a directory, an unknown encoding, bytes that do not decode, a truncated gzip stream.

Writing: :func:`atomic_write` writes a file through a temporary file in the same directory,
flushed and fsynced, then renamed over the target: a full disk or a crash mid-write leaves the
old file as it was and no partial file behind.
"""

import codecs
import contextlib
import gzip
import os
import tempfile
import zlib
from pathlib import Path

__all__ = ["as_file_path", "atomic_write", "check_encoding", "named_read_errors", "read_bytes", "text_lines"]


def as_file_path(path, what="data file"):
    """``path`` as a Path to an existing file; TypeError, IsADirectoryError or FileNotFoundError naming it."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or path-like object, got {type(path).__name__}.")
    path = Path(os.path.expanduser(os.fspath(path)))
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a {what}.")
    if not path.is_file():
        raise FileNotFoundError(f"No such {what}: {path}")
    return path


def check_encoding(encoding):
    """ValueError unless ``encoding`` names a text codec Python knows."""
    try:
        codecs.lookup(encoding)
    except (LookupError, TypeError):
        raise ValueError(f"encoding={encoding!r} is not a known text encoding.") from None
    return encoding


@contextlib.contextmanager
def named_read_errors(path):
    """Errors while parsing ``path`` as ValueErrors that name it.

    A truncated or corrupt gzip stream (EOFError, zlib error) becomes "truncated or corrupt";
    a parser's ValueError (including UnicodeDecodeError) that does not name the file gets its path.
    """
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ValueError(f"{path} is truncated or corrupt and cannot be read ({type(exc).__name__}: {exc}).") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: cannot decode byte {exc.start} as {exc.encoding!r} ({exc.reason}); "
                         "pass the file's encoding=.") from None
    except ValueError as exc:
        if str(path) in str(exc):
            raise
        raise ValueError(f"{path}: cannot be parsed ({type(exc).__name__}: {str(exc)[:200]}).") from None


def open_binary(path):
    """Open a plain or gzip file for reading bytes (gzip detected by its magic number)."""
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def read_bytes(path, what="data file"):
    """The whole content of a plain or gzip file (decompressed), errors naming the file."""
    path = as_file_path(path, what)
    with named_read_errors(path), open_binary(path) as f:
        return f.read()


def text_lines(path, encoding="utf-8", what="data file"):
    """Yield ``(lineno, line)`` of a plain or gzip text file, line endings removed, lines numbered from 1.

    The path and encoding are checked before the first line is read; a line that does not decode
    raises a ValueError naming the file, the line and the encoding, a truncated gzip stream one
    naming the file.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "a.txt")
    ...     _ = open(path, "wb").write(b"one\\ntwo\\r\\n")
    ...     list(text_lines(path))
    [(1, 'one'), (2, 'two')]
    """
    path = as_file_path(path, what)
    check_encoding(encoding)
    with named_read_errors(path), open_binary(path) as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                line = raw.decode(encoding)
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}, line {lineno}: cannot decode as {encoding!r} ({exc.reason}); pass the "
                                 "file's encoding= (e.g. 'euc_jp' for CRF++'s JapaneseNE).") from None
            yield lineno, line.rstrip("\r\n")


def atomic_write(path, write):
    """Write ``path`` by ``write(fh)`` on a binary temporary file beside it, then rename it over ``path``.

    The temporary file is flushed and fsynced before :func:`os.replace`, so ``path`` holds either
    its old content or the complete new one, never a part. On any failure (a full disk, an
    exception in ``write``, Ctrl-C) the temporary file is removed and the error re-raised; an
    OSError names ``path``.
    """
    path = Path(os.fspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), _new_file_mode(path))
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and str(path) not in str(exc):
            message = f"could not write {path}: {exc.strerror or exc}"
            raise (OSError(exc.errno, message) if exc.errno else OSError(message)) from exc
        raise


def _new_file_mode(path):
    """The permissions ``open(path, "w")`` would give: the old file's, else 0o666 less the umask."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask
