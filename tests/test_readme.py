"""Every Python code block of the README runs as a script, as a reader would paste it, and prints."""

import re
import sys
from pathlib import Path

import pytest

from _bounded import run_cpu_bounded

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
_FIRST_LINES = [block.strip().splitlines()[0][:60] for block in BLOCKS]


def test_the_readme_is_a_front_page():
    assert len(README.read_text().splitlines()) <= 250
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("block", BLOCKS, ids=_FIRST_LINES)
def test_readme_code_block_runs(block, tmp_path):
    if "dask" in block:
        pytest.importorskip("distributed")
    script = tmp_path / "block.py"
    script.write_text(block)
    proc = run_cpu_bounded([sys.executable, str(script)], cpu_seconds=600, cwd=tmp_path, capture_output=True,
                           text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip(), "a README example should show its result"
