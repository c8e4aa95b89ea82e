"""The OCR Table 4 pipeline (benchmarks/papers/bench_ocr_table4.py) on a small subset of one fold.

Trains on 600 words of folds 1-9 and tests on 200 words of fold 0: the pipeline runs end
to end, the word-dictionary energy L^w beats the base CRF on held-out words, and the
report files are written. Skipped without ``SKLEARN_STRUCT_DATA``.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "papers" / "bench_ocr_table4.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_ocr_table4", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def one_numba_thread():
    """Algorithm 3 runs many tiny batches: one numba thread is faster, and much faster on a busy machine."""
    numba = pytest.importorskip("numba")
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)


@pytest.fixture(scope="module")
def small_fold(data_home, bench):
    X, y, folds = bench.load_words(data_home)
    rng = np.random.RandomState(0)
    train = rng.choice(np.flatnonzero(folds != 0), 600, replace=False)
    test = rng.choice(np.flatnonzero(folds == 0), 200, replace=False)
    idx = np.r_[train, test]
    return [X[i] for i in idx], [y[i] for i in idx], folds[idx]


def test_word_energy_beats_base_crf_on_held_out_words(bench, small_fold, monkeypatch, one_numba_thread):
    X, y, folds = small_fold
    monkeypatch.setattr(bench, "CLF_C_GRID", (1.0,))  # the benchmark's weak penalties are slow on tiny data
    monkeypatch.setattr(bench, "C2_GRID", (0.1, 1.0))  # tuned inside the fold's training part
    monkeypatch.setattr(bench, "MM_COMPONENTS", 300)
    rows = bench.run_fold(X, y, folds, 0, ["crf", "Lw", "clf_mm"], log=lambda s: None)
    acc = {r["model"]: r["accuracy"] for r in rows}
    assert set(acc) == {"crf", "Lw", "clf_mm"}
    assert all(0 <= a <= 100 for a in acc.values())
    assert acc["Lw"] > acc["crf"] + 2.0, acc
    lw = next(r for r in rows if r["model"] == "Lw")
    assert lw["psi"] > 0 and lw["converged"] > 0.9
    assert lw["c2"] in (0.1, 1.0) and lw["clf_C"] == 1.0  # chosen inside the fold


def test_report_files(bench, small_fold, tmp_path):
    rows = [
        dict(fold=0, model="crf", accuracy=85.0, fit_s=1.0, predict_s=0.1),
        dict(fold=1, model="crf", accuracy=87.0, fit_s=3.0, predict_s=0.1, lbfgs_iter=10),
    ]
    summary = bench.summarize(rows, ["crf", "Lw"])
    assert len(summary) == 1 and summary[0]["accuracy"] == pytest.approx(86.0)
    bench.write_csv(rows, tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_text().splitlines()[0].startswith("fold,model,accuracy")
    back = bench.read_csv(tmp_path / "t.csv")
    assert [r["fold"] for r in back] == [0, 1] and back[1]["accuracy"] == pytest.approx(87.0)
    text = bench.markdown(summary, [0, 1], 60.0)
    assert "| 2-gram CRF (base model) | 86.00 |" in text and "84.93" in text
