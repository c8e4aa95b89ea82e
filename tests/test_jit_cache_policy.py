"""numba's cache policy (issue #34 item 1): import and fit never fail because no cache can be written.

The package is copied to a temporary directory that numba cannot cache into, and run in a child
interpreter with ``NUMBA_CACHE_DIR`` and ``HOME`` pointing where nothing can be written. Write
protection alone does not stop root (CI runs as root), so every place numba looks is made
impossible for any user: each ``__pycache__`` of the copy is a regular file, and
``NUMBA_CACHE_DIR`` / ``HOME`` lie *under* a regular file (mkdir fails with ENOTDIR); the copy is
also made read-only for a non-root run. Without the policy in ``sklearn_struct/utils/_jit.py``
``import sklearn_struct`` raises ``RuntimeError: cannot cache function ...: no locator available``.
"""

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from _bounded import run_cpu_bounded

import sklearn_struct
from sklearn_struct.utils import _jit

CHILD = r"""
import json, sys, tempfile, warnings
if sys.argv[1] != "-":
    tempfile.tempdir = sys.argv[1]  # the temporary directory too (root ignores permissions)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import sklearn_struct
    from sklearn_struct import ChainCRF
    import numpy as np
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(n, 3)) for n in (4, 3, 5)]
    y = [np.array(list("abab")), np.array(list("bba")), np.array(list("aabba"))]
    pred = ChainCRF(algorithm="ap", max_iter=3).fit(X, y).predict(X)
    again = ChainCRF(algorithm="ap", max_iter=3).fit(X, y).predict(X)  # compiled once: the second fit reuses it
print(json.dumps({
    "file": sklearn_struct.__file__,
    "pred": [list(p) for p in pred],
    "same": all(list(a) == list(b) for a, b in zip(pred, again)),
    "cache_warnings": [str(w.message) for w in caught if type(w.message).__name__ == "NumbaCacheWarning"],
}))
"""


def _read_only_install(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(Path(sklearn_struct.__file__).parent, site / "sklearn_struct",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for d in [site / "sklearn_struct", *(p for p in (site / "sklearn_struct").rglob("*") if p.is_dir())]:
        (d / "__pycache__").write_text("a file where numba wants a directory\n")
    for p in [*site.rglob("*"), site]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    blocker.chmod(0o444)
    return site, blocker


def _run(site, blocker, tempdir, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_", "PYTHON"))}
    env.update(PYTHONPATH=str(site), NUMBA_CACHE_DIR=str(blocker / "numba"), HOME=str(blocker / "home"),
               PYTHONDONTWRITEBYTECODE="1", TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    proc = run_cpu_bounded([sys.executable, "-c", CHILD, tempdir], cpu_seconds=600, capture_output=True, text=True,
                           env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["file"] == str(site / "sklearn_struct" / "__init__.py")
    assert out["same"] and len(out["pred"]) == 3
    assert len(out["cache_warnings"]) == 1, out["cache_warnings"]  # said once per process
    return out["cache_warnings"][0]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_read_only_install_falls_back_to_a_per_user_temporary_cache(tmp_path):
    site, blocker = _read_only_install(tmp_path)
    message = _run(site, blocker, "-", tmp_path)
    cache = tmp_path / "tmp" / f"sklearn_struct-numba-cache-{os.getuid()}"
    assert str(cache) in message and "NUMBA_CACHE_DIR" in message
    assert any(p.suffix == ".nbi" for p in cache.rglob("*")), "nothing was cached in the fallback directory"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_nothing_writable_turns_the_cache_off(tmp_path):
    site, blocker = _read_only_install(tmp_path)
    message = _run(site, blocker, str(blocker / "tmp"), tmp_path)
    assert "cache off" in message
    assert not list((tmp_path / "tmp").iterdir())


def test_fallback_directory_of_another_user_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    good = _jit.fallback_cache_dir()
    assert good is not None and Path(good).parent == tmp_path
    Path(good).chmod(0o777)  # writable by others: someone could plant pickles there
    assert _jit.fallback_cache_dir() is None
    Path(good).rmdir()
    Path(good).symlink_to(tmp_path)
    assert _jit.fallback_cache_dir() is None
