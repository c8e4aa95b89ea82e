"""numba's cache of the package's kernels is keyed on *all* the package's sources (``utils/_jit.py``).

numba stamps a cached function's index with its own file only, so a kernel that compiles in a
``helper`` from another module kept running the helper's old machine code after that module
changed. The end-to-end test runs a tiny package (``a.py``: a kernel calling ``b.py``'s helper)
treated as the package, in child interpreters sharing one ``NUMBA_CACHE_DIR``.
"""

import json
import os
import sys

import pytest
from numba.core import caching as _caching

from _bounded import run_cpu_bounded

from sklearn_struct.utils import _jit

# The child loads _jit.py alone (not the whole package: it is faster) under its own name, points
# its package root at the tiny package and calls the kernel once.
CHILD = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("sklearn_struct.utils._jit", sys.argv[1])
jit = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = jit
spec.loader.exec_module(jit)
jit._PACKAGE_DIR = sys.argv[2]
sys.path.insert(0, sys.argv[2])
import a
value = a.kernel(0)
print(json.dumps({"value": value, "hits": sum(a.kernel.stats.cache_hits.values()),
                  "misses": sum(a.kernel.stats.cache_misses.values())}))
"""

A = """from sklearn_struct.utils._jit import kernel
from b import helper


@kernel
def kernel(x):
    return helper(x)
"""

B = """from sklearn_struct.utils._jit import helper


@helper
def helper(x):
    return x + {}
"""


def _run(root, cache):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYTHON"))}
    env.update(NUMBA_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")
    proc = run_cpu_bounded([sys.executable, "-c", CHILD, _jit.__file__, str(root)], cpu_seconds=120,
                           capture_output=True, text=True, env=env, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_kernel_is_recompiled_when_only_its_helpers_module_changes(tmp_path):
    root, cache = (tmp_path / "pkg").resolve(), tmp_path / "cache"
    root.mkdir()
    (root / "a.py").write_text(A)
    (root / "b.py").write_text(B.format(1))
    assert _run(root, cache) == {"value": 1, "hits": 0, "misses": 1}
    a_stat = os.stat(root / "a.py")
    (root / "b.py").write_text(B.format(2))  # same size; a.py untouched
    os.utime(root / "a.py", ns=(a_stat.st_atime_ns, a_stat.st_mtime_ns))
    assert _run(root, cache) == {"value": 2, "hits": 0, "misses": 1}  # numba alone: 1, from the stale cache
    assert _run(root, cache) == {"value": 2, "hits": 1, "misses": 0}  # unchanged tree: loaded from the cache


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A tiny package tree treated as the package, with a fresh once-per-process digest."""
    root = (tmp_path / "pkg").resolve()
    (root / "sub" / "__pycache__").mkdir(parents=True)
    (root / "a.py").write_text(A)
    (root / "sub" / "b.py").write_text(B.format(1))
    (root / "sub" / "__pycache__" / "b.cpython.pyc").write_text("compiled")
    (root / "notes.txt").write_text("not a source")
    monkeypatch.setattr(_jit, "_PACKAGE_DIR", str(root))
    monkeypatch.setattr(_jit, "_STAMPS", {})
    return root


def _fresh_stamp():
    _jit._STAMPS.clear()  # what a new process computes
    return _jit._package_stamp()


def test_the_stamp_changes_with_any_other_source_and_only_with_sources(tree):
    stamp = _fresh_stamp()
    assert _fresh_stamp() == stamp
    (tree / "sub" / "b.py").write_text(B.format(2))  # another file than a.py, same size
    changed = _fresh_stamp()
    assert changed != stamp
    os.utime(tree / "sub" / "b.py", ns=(0, 0))  # touched only
    (tree / "notes.txt").write_text("edited")
    (tree / "sub" / "__pycache__" / "b.cpython.pyc").write_text("recompiled")
    assert _fresh_stamp() == changed
    (tree / "sub" / "c.py").write_text("")  # a new module
    assert _fresh_stamp() != changed
    (tree / "sub" / "c.py").rename(tree / "c.py")  # moved
    assert _fresh_stamp() not in (stamp, changed)


def test_the_stamp_is_computed_once_per_process(tree):
    stamp = _fresh_stamp()
    (tree / "a.py").write_text("changed")
    assert _jit._package_stamp() is stamp


def _func_in(path):
    namespace = {}
    exec(compile("def f(x):\n    return x\n", str(path), "exec"), namespace)
    return namespace["f"]


def test_package_functions_get_the_package_stamp_and_others_numbas(tree, tmp_path, monkeypatch):
    monkeypatch.setattr("numba.core.config.CACHE_DIR", str(tmp_path / "cache"))
    ours, theirs = tree / "sub" / "b.py", tmp_path / "elsewhere.py"
    theirs.write_text("def f(x):\n    return x\n")
    stamp = _fresh_stamp()
    for cls in (_jit._UserProvidedLocator, _jit._InTreeLocator, _jit._UserWideLocator):
        locator = cls.from_function(_func_in(ours), str(ours))
        assert locator is not None and locator.get_source_stamp() == stamp, cls
        assert cls.from_function(_func_in(theirs), str(theirs)) is None, cls  # left to numba's own locator
    impl = _caching.CompileResultCacheImpl(_func_in(theirs))
    assert type(impl.locator) is _caching.UserProvidedCacheLocator
    assert impl.locator.get_source_stamp() != stamp
    impl = _caching.CompileResultCacheImpl(_func_in(ours))
    assert type(impl.locator) is _jit._UserProvidedLocator
    fallback = _jit._FallbackLocator(_func_in(ours), str(ours), str(tmp_path / "fallback"))
    assert fallback.get_source_stamp() == stamp


def test_the_policy_is_installed_once_around_numbas_locators():
    _jit._install_cache_policy()
    locators = _caching.CacheImpl._locator_classes
    assert locators[:3] == [_jit._UserProvidedLocator, _jit._InTreeLocator, _jit._UserWideLocator]
    assert locators[-1] is _jit._FallbackLocator
    assert sum(c.__module__ == _jit.__name__ for c in locators) == 4
