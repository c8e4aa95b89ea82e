"""The documentation: the API reference is current and the Sphinx build has no warnings."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "doc"


def test_api_reference_is_up_to_date():
    spec = importlib.util.spec_from_file_location("make_api", DOC / "make_api.py")
    make_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_api)
    assert (DOC / "api.rst").read_text() == make_api.render(), "run: python doc/make_api.py"


def test_sphinx_build_has_no_warnings(tmp_path):
    """``make -C doc html`` in CI form: warnings are errors; the gallery is rendered, not run
    (``tests/test_examples.py`` runs every example)."""
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("sphinx_gallery")
    pytest.importorskip("myst_parser")
    pytest.importorskip("pydata_sphinx_theme")
    env = dict(os.environ, SKLEARN_STRUCT_DOC_EXAMPLES="0")
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", str(DOC), str(tmp_path / "html")],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert (tmp_path / "html" / "generated" / "sklearn_struct.NonLocalCRF.html").exists()
