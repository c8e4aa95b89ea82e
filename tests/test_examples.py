"""Every example runs and writes its figure."""

import os
import sys
from pathlib import Path

import pytest

from _bounded import run_cpu_bounded

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("plot_*.py"))
# the rule doc/conf.py applies too: an example that reads real data names SKLEARN_STRUCT_DATA in its description
_NEEDS_DATA = {p.name for p in EXAMPLES if "SKLEARN_STRUCT_DATA" in p.read_text()}


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_and_writes_its_figure(script, tmp_path):
    pytest.importorskip("matplotlib")
    if script.name in _NEEDS_DATA and not os.environ.get("SKLEARN_STRUCT_DATA"):
        pytest.skip("real data not available: set SKLEARN_STRUCT_DATA to the shared data folder")
    # bounded by CPU seconds, not the wall clock: a busy machine slows an example, it does not fail it
    proc = run_cpu_bounded([sys.executable, str(script)], cpu_seconds=900, cwd=tmp_path, capture_output=True,
                           text=True)
    assert proc.returncode == 0, f"exit {proc.returncode} (negative: killed, e.g. over its CPU budget)\n" + proc.stderr[-3000:]
    assert list(tmp_path.glob("*.png")), f"{script.name} wrote no figure"
