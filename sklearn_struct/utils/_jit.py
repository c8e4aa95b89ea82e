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
"""

import os
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

_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])
_ANNOUNCED = threading.Event()


class NumbaCacheWarning(UserWarning):
    """numba cannot cache the package's kernels where it looks first: a fallback is in use."""


def _is_ours(py_file):
    try:
        return os.path.commonpath([_PACKAGE_DIR, str(Path(py_file).resolve())]) == _PACKAGE_DIR
    except (TypeError, ValueError, OSError):
        return False


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


class _FallbackLocator(_caching.UserProvidedCacheLocator):
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
    """Append the fallback locator and wrap ``enable_caching`` (idempotent, also across a module reload)."""
    locators = _caching.CacheImpl._locator_classes
    locators[:] = [c for c in locators if c.__qualname__ != "_FallbackLocator" or c.__module__ != __name__]
    locators.append(_FallbackLocator)
    _dispatcher.Dispatcher.enable_caching = _enable_caching


_ORIGINAL_ENABLE_CACHING = getattr(_dispatcher.Dispatcher.enable_caching, "original",
                                   _dispatcher.Dispatcher.enable_caching)
_enable_caching.original = _ORIGINAL_ENABLE_CACHING
_install_cache_policy()
