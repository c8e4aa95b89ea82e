"""The two numba decorators of the package's kernels, chosen for the first fit after an install.

numba compiles every jitted function it meets into a library of its own (typing, lowering, LLVM
optimisation, machine code), then links that library's optimised code into each caller's library
and optimises and compiles it there again. So, in a fresh install, each helper costs its own
compilation plus a share of every kernel that calls it, and each library carries wrappers:

- ``kernel``: an entry point called from Python. ``@njit(cache=True, nogil=True)`` without the
  C-callback (``cfunc``) wrapper numba adds for taking the function's address, which nothing in
  the package does.
- ``helper``: a function called only from other kernels (``numba.extending.register_jitable``).
  Inside numba it compiles as an overload, once per signature, without the Python-call wrapper and
  with literal arguments typed as their plain type (so ``f(1, ...)`` does not compile a second
  specialisation for the constant); from Python it is the plain Python function (slow, but never
  a crash). Together the two cut about a tenth of a first fit's compilation
  (``benchmarks/results/cold_start/cold_start.md``).

Both take numba's options (``fastmath=...``), as ``kernel(fastmath=F)`` or bare ``@kernel``.

Cache policy (issue #34): ``cache=True`` must never stop the package from importing or fitting.
numba looks for a writable cache directory when a cached function is *decorated* (``NUMBA_CACHE_DIR``,
then the module's ``__pycache__``, then the user-wide cache under ``HOME``) and raises
``RuntimeError: cannot cache function ...: no locator available`` if there is none (a read-only
install run by a user with a read-only HOME). For the package's own functions only (whether
decorated here or by a bare ``njit(cache=True)``), this module adds two last resorts, installed
when it is first imported (``sklearn_struct/__init__.py`` imports it before any kernel):

1. a per-user cache directory under :func:`tempfile.gettempdir` (created 0700 and used only if it
   is owned by this user and writable by nobody else: numba's cache files are pickles);
2. failing that, no cache at all (every process compiles again).

Either one is announced once per process by a :class:`NumbaCacheWarning` that names the
directories that could not be used and says how to choose one (``NUMBA_CACHE_DIR``).

Freshness: numba stamps a cached function with a hash of *its own file* only, yet a kernel's machine
code contains every ``helper`` and kernel it calls, compiled from other files. Alone, numba would keep
running a kernel's stale copy of a helper after only the helper's module changed (an edit, a
``git pull``, an upgrade in place). So, for the package's own functions only, every locator above
(``NUMBA_CACHE_DIR``, ``__pycache__``, the user cache, the per-user fallback) stamps the cache with a
SHA-256 of the contents and relative paths of all the package's ``.py`` files instead: any change to
the package's sources recompiles all its kernels once, an unchanged tree keeps loading them from the
cache. Contents rather than modification times, so that a checkout that only touches files costs
no recompilation, and an edit that keeps a file's size and time is still seen. The digest is
computed once per process, when the first kernel is decorated (about 3 ms for the ~1.4 MB of
sources, ~40 ms if none is in the page cache); other functions keep numba's own stamp.
"""

import hashlib
import os
import sys
import tempfile
import threading
import warnings
from pathlib import Path

from numba import njit
from numba.core import caching as _caching
from numba.core import dispatcher as _dispatcher
from numba.extending import register_jitable

__all__ = ["kernel", "helper", "NumbaCacheWarning"]

_COMMON = {"cache": True, "nogil": True, "no_cfunc_wrapper": True}


def kernel(func=None, **options):
    """``@njit(cache=True, nogil=True)`` without the cfunc wrapper: a kernel called from Python."""
    decorator = njit(**_COMMON, **options)
    return decorator(func) if func is not None else decorator


def helper(func=None, **options):
    """A function called only from kernels: compiled into them, plain Python when called from Python."""
    decorator = register_jitable(**_COMMON, **options)
    return decorator(func) if func is not None else decorator


# --------------------------------------------------------------------------- cache policy

_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])  # what is "ours" (tests point it elsewhere)
_ANNOUNCED = threading.Event()
_STAMPS = {}  # package root -> digest of its sources, computed once per process
_STAMP_LOCK = threading.Lock()


class NumbaCacheWarning(UserWarning):
    """numba cannot cache the package's kernels where it looks first: a fallback is in use."""


def _is_ours(py_file):
    try:
        return os.path.commonpath([_PACKAGE_DIR, str(Path(py_file).resolve())]) == _PACKAGE_DIR
    except (TypeError, ValueError, OSError):
        return False


def _digest_sources(root):
    """SHA-256 of the relative path and content of every ``.py`` file under ``root``, in a fixed order."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):  # errors while listing are skipped, never raised
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for name in sorted(f for f in filenames if f.endswith(".py")):
            path = os.path.join(dirpath, name)
            try:
                with open(path, "rb") as f:
                    data = f.read()
                content = len(data).to_bytes(8, "little") + data
            except OSError:
                content = b"unreadable"  # numba cannot compile from it either
            digest.update(os.path.relpath(path, root).encode("utf-8", "surrogateescape") + b"\0" + content)
    return digest.hexdigest()


def _package_stamp():
    """The cache stamp of every package function: the digest of the package's sources, once per process."""
    root = _PACKAGE_DIR
    stamp = _STAMPS.get(root)
    if stamp is None:
        with _STAMP_LOCK:
            stamp = _STAMPS.get(root)
            if stamp is None:
                stamp = _STAMPS[root] = ("sklearn_struct sources", _digest_sources(root))
    return stamp


class _PackageStamp:
    """Mixin of a numba cache locator: the package's functions only, stamped with all its sources."""

    def get_source_stamp(self):
        return _package_stamp()

    @classmethod
    def from_function(cls, py_func, py_file):
        if getattr(sys, "frozen", False) or not _is_ours(py_file):
            return None  # numba's own locators, next in the list, take it
        return super().from_function(py_func, py_file)


class _UserProvidedLocator(_PackageStamp, _caching.UserProvidedCacheLocator):
    """``NUMBA_CACHE_DIR``, for the package's functions."""


class _InTreeLocator(_PackageStamp, _caching.InTreeCacheLocator):
    """The module's ``__pycache__``, for the package's functions."""


class _UserWideLocator(_PackageStamp, _caching.UserWideCacheLocator):
    """The user-wide cache under ``HOME``, for the package's functions."""


def fallback_cache_dir():
    """The per-user cache directory under the temporary directory, or None if it is unsafe or unwritable."""
    getuid = getattr(os, "getuid", None)
    path = Path(tempfile.gettempdir()) / f"sklearn_struct-numba-cache-{getuid() if getuid else 'user'}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(path)
        if getuid is not None and (not os.path.isdir(path) or os.path.islink(path) or st.st_uid != getuid()
                                   or st.st_mode & 0o022):
            return None  # another user's (or a link): its pickles must not be loaded
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return None
    return str(path)


def _announce(where):
    if _ANNOUNCED.is_set():
        return
    _ANNOUNCED.set()
    user = os.environ.get("NUMBA_CACHE_DIR")
    looked = f"NUMBA_CACHE_DIR={user!r}, " if user else ""
    warnings.warn(
        f"sklearn_struct: numba cannot write its cache where it looks ({looked}{_PACKAGE_DIR}/**/__pycache__, "
        f"the user cache under HOME); {where}. Set NUMBA_CACHE_DIR to a writable directory to choose one.",
        NumbaCacheWarning, stacklevel=3)


class _FallbackLocator(_PackageStamp, _caching.UserProvidedCacheLocator):
    """numba's last resort for the package's own files: the per-user directory of :func:`fallback_cache_dir`."""

    def __init__(self, py_func, py_file, root):
        super().__init__(py_func, py_file)
        self._cache_path = os.path.join(root, self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func, py_file):
        root = fallback_cache_dir() if _is_ours(py_file) else None
        if root is None:
            return None
        self = cls(py_func, py_file, root)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        _announce(f"compiled kernels are cached in {root} instead")
        return self


def _enable_caching(self):
    """``Dispatcher.enable_caching``: for the package's functions, no cache rather than a failed import."""
    try:
        _ORIGINAL_ENABLE_CACHING(self)
    except RuntimeError:
        if not _is_ours(getattr(self.py_func, "__code__", None) and self.py_func.__code__.co_filename):
            raise
        self._cache = _caching.NullCache()
        _announce("no directory is writable, so kernels are compiled again in every process (cache off)")


def _install_cache_policy():
    """Put the package's locators around numba's and wrap ``enable_caching`` (idempotent, also on reload)."""
    locators = _caching.CacheImpl._locator_classes
    locators[:] = [c for c in locators if c.__module__ != __name__]
    locators[:0] = [_UserProvidedLocator, _InTreeLocator, _UserWideLocator]
    locators.append(_FallbackLocator)
    _dispatcher.Dispatcher.enable_caching = _enable_caching


_ORIGINAL_ENABLE_CACHING = getattr(_dispatcher.Dispatcher.enable_caching, "original",
                                   _dispatcher.Dispatcher.enable_caching)
_enable_caching.original = _ORIGINAL_ENABLE_CACHING
_install_cache_policy()
