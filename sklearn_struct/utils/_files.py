"""Files: one reader for every text loader, one atomic writer for every ``save``.

Reading: :func:`text_lines` is the line reader of every text loader (CoNLL, CoNLL-U, CRF++
templates, LIBSVM, landmark files ...): plain or gzip (recognised by its magic number), every
failure a ValueError (or OSError) that names the file and, where there is one, the line: a
missing path, a directory, an unknown encoding, bytes that do not decode, a truncated gzip stream.

Writing: :func:`atomic_write` writes a file through a temporary file in the same directory,
flushed and fsynced, then renamed over the target: a full disk or a crash mid-write leaves the
old file as it was; the temporary file is removed on failure, or, if the writer was killed, by the
next write of that file.
"""

import codecs
import contextlib
import gzip
import hashlib
import os
import re
import socket
import tempfile
import zlib
from pathlib import Path

__all__ = ["as_file_path", "atomic_write", "check_encoding", "named_read_errors", "read_bytes",
           "remove_stale_temporaries", "text_lines"]


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
    OSError names ``path``. The temporary file's name holds the target's name, the host and the
    writing process (``.NAME.XXXXXXXX.HOST-PID.tmp``), so one left by a killed writer is removed by
    the next write (or model file load) of ``path`` (:func:`remove_stale_temporaries`). The file
    gets the old file's permissions, else those of a new file (``0o666`` less the umask).
    """
    path = Path(os.fspath(path))
    remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".{_host_tag()}-{os.getpid()}.tmp", dir=path.parent)
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


def remove_stale_temporaries(path):
    """Remove the temporary files :func:`atomic_write` left beside ``path`` in processes of this host
    that no longer run (killed mid-write); never one of a running process. Errors are ignored."""
    path = Path(os.fspath(path))
    prefix, suffix = f".{path.name}.", ".tmp"
    with contextlib.suppress(OSError):
        with os.scandir(path.parent if str(path.parent) else ".") as entries:
            names = [e.name for e in entries if e.name.startswith(prefix) and e.name.endswith(suffix)]
        for name in names:
            owner = _TEMP_OWNER.fullmatch(name[len(prefix):-len(suffix)])
            if owner and owner["host"] == _host_tag() and not _process_runs(int(owner["pid"])):
                with contextlib.suppress(OSError):
                    os.unlink(path.parent / name)


_TEMP_OWNER = re.compile(r"[a-z0-9_]{8}\.(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]{1,10})")


def _host_tag():
    return hashlib.sha256(socket.gethostname().encode("utf-8", "surrogatepass")).hexdigest()[:8]


def _process_runs(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):
        return True  # another user's process (EPERM), or a pid we cannot ask about: keep its file
    return True


def _new_file_mode(path):
    """The permissions ``open(path, "w")`` would give: the old file's, else 0o666 less the umask."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return 0o666 & ~_umask()


def _umask():
    """The process umask, read without changing it where the system says it (Linux), else by setting it back."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    umask = os.umask(0o022)
    os.umask(umask)
    return umask
