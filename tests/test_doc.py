"""The documentation: the API reference is current and the Sphinx build has no warnings."""

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

from _bounded import run_cpu_bounded

DOC = Path(__file__).resolve().parents[1] / "doc"


def test_api_reference_is_up_to_date():
    spec = importlib.util.spec_from_file_location("make_api", DOC / "make_api.py")
    make_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_api)
    assert (DOC / "api.rst").read_text() == make_api.render(), "run: python doc/make_api.py"


def _conf(monkeypatch, data):
    if data is None:
        monkeypatch.delenv("SKLEARN_STRUCT_DATA", raising=False)
    else:
        monkeypatch.setenv("SKLEARN_STRUCT_DATA", str(data))
    spec = importlib.util.spec_from_file_location("doc_conf", DOC / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


@pytest.mark.parametrize("data", [None, "missing", "folder"])
def test_gallery_runs_the_data_examples_only_with_the_data(monkeypatch, tmp_path, data):
    """Without SKLEARN_STRUCT_DATA the build runs the generated-data examples and skips (renders
    without running) exactly those that read real data; every example that calls a loader is one of them."""
    conf = _conf(monkeypatch, {None: None, "missing": tmp_path / "nothing", "folder": tmp_path}[data])
    examples = sorted((DOC.parent / "examples").glob("plot_*.py"))
    needing = set(conf.examples_needing_data())
    assert needing == {p.name for p in examples if re.search(r"\b(load|fetch)_\w+\(", p.read_text())}
    pattern = conf.sphinx_gallery_conf["filename_pattern"]
    run = {p.name for p in examples if re.search(pattern, str(p))}
    expected_skipped = needing if data != "folder" else set()
    assert run == {p.name for p in examples} - expected_skipped and set(conf.SKIPPED_EXAMPLES) == expected_skipped
    assert run, "the generated-data examples always run"


def test_sphinx_build_has_no_warnings(tmp_path):
    """``make -C doc html`` in CI form: warnings are errors; the gallery is rendered, not run
    (``tests/test_examples.py`` runs every example)."""
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("sphinx_gallery")
    pytest.importorskip("myst_parser")
    pytest.importorskip("pydata_sphinx_theme")
    env = dict(os.environ, SKLEARN_STRUCT_DOC_EXAMPLES="0")
    proc = run_cpu_bounded(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", str(DOC), str(tmp_path / "html")],
        cpu_seconds=900, capture_output=True, text=True, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert (tmp_path / "html" / "generated" / "sklearn_struct.NonLocalCRF.html").exists()
