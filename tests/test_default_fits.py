"""benchmarks/product/bench_default_fits.py: a warning fails a row, rows merge per estimator."""

import importlib.util
from pathlib import Path

from sklearn_struct import ChainCRF
from sklearn_struct.datasets import make_chain_data

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "product" / "bench_default_fits.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_default_fits", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _chain_task():
    X, y = make_chain_data(60, n_labels=3, n_features=4, random_state=0)
    return {"name": "generated", "X": X[:40], "y": y[:40], "Xt": X[40:], "yt": y[40:], "metric": "token accuracy",
            "score": lambda m, X, Y: m.score(X, Y)}


def test_a_warning_fails_the_row_and_the_refit_still_scores():
    bench = _bench()
    row = bench.run_row(ChainCRF(max_iter=2), _chain_task(), bench._token_logreg)
    assert row["warnings"].startswith("ConvergenceWarning")
    assert row["n_iter"] == 2 and row["stop_reason"] == "max_iter (2)"
    assert 0 <= row["score"] <= 1 and row["baseline_score"] > 0.3


def test_a_default_fit_row_reports_its_stopping_test():
    bench = _bench()
    row = bench.run_row(ChainCRF(), _chain_task())
    assert row["warnings"] == "none"
    assert row["stop_reason"].startswith("converged")
    assert row["score"] > 1 / 3 and row["n_train"] == 40 and row["n_test"] == 20


def test_rerun_rows_replace_that_estimators_rows_only():
    bench = _bench()
    old = [{"estimator": "ChainCRF", "data": "a", "note": ""}, {"estimator": "ChainCRF", "data": "b", "note": ""},
           {"estimator": "DLPWClassifier", "data": "yeast", "note": ""}]
    new = [{"estimator": "ChainCRF", "data": "a", "note": "", "score": 1.0}]
    rows = bench.merge_rows(old, new, rerun={"ChainCRF"})
    assert [(r["estimator"], r["data"]) for r in rows] == [("ChainCRF", "a"), ("DLPWClassifier", "yeast")]
    assert rows[0]["score"] == 1.0
    assert sorted(map(str, bench.merge_rows(old, [], rerun=()))) == sorted(map(str, old))  # nothing rerun: kept
