"""The README's results table is what ``benchmarks/product/make_readme_table.py`` generates from
``benchmarks/results/`` (so it cannot drift from the benchmark outputs)."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def make_table():
    spec = importlib.util.spec_from_file_location("make_readme_table", ROOT / "benchmarks" / "product" / "make_readme_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_results_section_is_generated(make_table):
    readme = (ROOT / "README.md").read_text()
    assert make_table.readme_section(readme) == make_table.render(), "run: python benchmarks/product/make_readme_table.py"
    doc = (ROOT / "doc" / "benchmarks.md").read_text()
    assert make_table.readme_section(doc) == make_table.render(headline=False), \
        "run: python benchmarks/product/make_readme_table.py"


def test_the_readme_keeps_one_headline_row_per_benchmark(make_table):
    """12-15 rows in the README, each a row of the full table in the docs."""
    headline, every = make_table.headline_rows(), make_table.rows()
    assert 12 <= len(headline) <= 15
    assert all(row in every for row in headline)
    assert len({row.benchmark.rsplit("(`", 1)[1] for row in headline}) >= 12  # different benchmarks


def test_every_benchmark_family_has_rows(make_table):
    rows = make_table.rows()
    sources = {row.benchmark.rsplit("(`", 1)[1].rstrip("`)") for row in rows}
    assert {"conll_crfsuite", "ocr_table4_heldout", "cgm_table5", "citations", "parsing_table1", "dlpw_figure1",
            "dlpw_accuracy", "mle_struct_cmu", "gp_struct_table1", "loopy_vs_pgmpy", "chain_oracle"} <= sources
    assert all(isinstance(row.ours, float) for row in rows)


def test_rows_follow_the_result_files(make_table, tmp_path, monkeypatch):
    """A changed result changes the table; a missing result file drops its rows."""
    for name in ("cold_start/cold_start.json", "mle_struct_cmu/mle_struct_cmu.json"):  # results/<benchmark>/
        (tmp_path / name).parent.mkdir()
        (tmp_path / name).write_text((make_table.RESULTS / name).read_text())
    data = json.loads((tmp_path / "cold_start/cold_start.json").read_text())
    runs = data["estimators"] if isinstance(data, dict) else data  # {"estimators", "tour"} since the tour is measured
    runs[0]["cold_fit_predict_cpu_s"] = 99.0
    (tmp_path / "cold_start/cold_start.json").write_text(json.dumps(data))
    monkeypatch.setattr(make_table, "RESULTS", tmp_path)
    rows = make_table.rows()
    assert {r.benchmark.split(" (`")[0].split(",")[0] for r in rows} == {"MLE-Struct", "cold start"}
    slowest = next(r for r in rows if "slowest first fit" in r.benchmark)
    assert slowest.ours == 99.0 and runs[0]["estimator"] in slowest.benchmark


def test_cells_and_ratios(make_table):
    assert make_table._number("5.70 [6.8]") == 5.7 and make_table._number("36,423 s") == 36423.0
    assert make_table._ratio(1.0, 141.0) == "1/141" and make_table._ratio(0.51, 1.0) == "0.51"
    assert make_table._ratio(1.0, None) == "–" and make_table._cell(0.04046, "") == "0.0405"
    with pytest.raises(ValueError, match="results:start"):
        make_table.readme_section("no markers here")
