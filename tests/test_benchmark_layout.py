"""benchmarks/ by purpose: scripts in papers/ peers/ product/ studies/, shared code in _lib/ (the only place
that imports package internals), no script importing another, no import circle, results by benchmark."""

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from _lib import check_imports  # noqa: E402
from _lib.results import results_dir  # noqa: E402


def test_benchmarks_keep_the_layout_and_have_no_import_circle():
    assert check_imports.problems() == []


def test_the_check_finds_a_circle_a_script_import_and_internals(tmp_path):
    (tmp_path / "_lib").mkdir()
    (tmp_path / "papers").mkdir()
    (tmp_path / "_lib" / "__init__.py").write_text("")
    (tmp_path / "_lib" / "a.py").write_text("def f():\n    from . import b\n")  # function-local counts
    (tmp_path / "_lib" / "b.py").write_text("from _lib import a\n")
    (tmp_path / "papers" / "bench_x.py").write_text("from _lib import a\n")
    (tmp_path / "papers" / "bench_y.py").write_text("import bench_x\nfrom sklearn_struct._chain_crf import f\n")
    (tmp_path / "bench_flat.py").write_text("")
    found = check_imports.problems(tmp_path)
    assert "papers.bench_y imports papers.bench_x: scripts import _lib only" in found
    assert any(p.startswith("papers.bench_y imports package internals") for p in found)
    assert "bench_flat: a script outside papers, peers, product, studies" in found
    assert any(p.startswith("import circle: _lib.a -> _lib.b -> _lib.a") for p in found)
    assert not any("bench_x imports" in p for p in found)


def test_results_are_grouped_by_benchmark():
    scripts = {p.stem.removeprefix("bench_") for p in BENCHMARKS.glob("*/bench_*.py")}
    results = BENCHMARKS / "results"
    assert not [p.name for p in results.iterdir() if p.is_file()], "results/<benchmark>/ only"
    assert {p.name for p in results.iterdir()} <= scripts
    assert results_dir("ocr_table4", create=False) == results / "ocr_table4"
