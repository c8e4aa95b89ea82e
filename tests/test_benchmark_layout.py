"""benchmarks/ by purpose: scripts in papers/ peers/ product/ studies/, shared code in _lib/ (the only place
that imports package internals), no script importing another, no import circle, results by benchmark."""

import json
import os
import sys
from pathlib import Path

import pytest

from _bounded import run_cpu_bounded

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


# --report-only: every script rewrites its tables from its saved results without fitting
# (benchmarks/_lib/report.py); the check re-renders each committed md and compares it byte for byte.
NEEDS_RERUN = set()  # scripts whose committed table predates the json they now save (rerun them to save it)
STALE = {"papers/bench_ocr_table4.py"}  # the committed md has an older settings text than the script writes
REPORT_ONLY_API = ("add_report_only", "report_only_args", "report_only_requested")


def _scripts():
    return sorted(str(p.relative_to(BENCHMARKS)) for p in BENCHMARKS.glob("*/bench_*.py"))


def test_every_script_takes_report_only_from_lib_report():
    scripts = _scripts()
    assert NEEDS_RERUN | STALE <= set(scripts)
    missing = [s for s in scripts if not any(name + "(" in (BENCHMARKS / s).read_text() for name in REPORT_ONLY_API)]
    assert missing == [], "scripts without --report-only (benchmarks/_lib/report.py)"


def test_report_only_rewrites_the_committed_tables_byte_for_byte():
    scripts = _scripts()
    env = {k: v for k, v in os.environ.items() if k != "SKLEARN_STRUCT_DATA"}  # saved results only
    env["PYTHONPATH"] = str(BENCHMARKS.parent)
    proc = run_cpu_bounded([sys.executable, str(BENCHMARKS / "_lib" / "report.py"), *scripts], 120,
                           cwd=BENCHMARKS, env=env, capture_output=True, text=True)
    codes = json.loads(proc.stdout[proc.stdout.index("{"):])
    expected = {s: 2 if s in NEEDS_RERUN else 1 if s in STALE else 0 for s in scripts}
    assert codes == expected, proc.stderr[-3000:]


def test_check_mode_compares_instead_of_writing(tmp_path):
    from _lib import report

    table = tmp_path / "t.md"
    table.write_text("a\n")
    report.report_only_args(["--report-only", "--check"])
    try:
        report.write_text(table, "a\n")
        assert report.stale == []
        report.write_text(table, "b\n")
        assert report.stale == [str(table)] and table.read_text() == "a\n"
        with pytest.raises(SystemExit) as stop:
            report.finish()
        assert stop.value.code == 1
        with pytest.raises(SystemExit) as stop:
            report.load_saved(tmp_path / "none.json")
        assert stop.value.code == report.NO_SAVED_RESULTS
    finally:
        report.report_only_args([])
    report.write_text(table, "b\n")
    assert table.read_text() == "b\n"


def test_check_without_report_only_and_old_flags_are_refused():
    from _lib import report

    for argv in (["--check"], ["--from-json"], ["--report-only", "--bogus"]):
        with pytest.raises(SystemExit) as stop:  # argparse's usage error, never a run
            report.report_only_args(argv)
        assert stop.value.code == 2
    report.report_only_args([])
