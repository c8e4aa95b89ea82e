"""DLPWClassifier's default settings against a default LogisticRegression, on raw and standardised data.

The question a scikit-learn user asks first: with no tuning, is ``DLPWClassifier()`` at least as good
as ``MultiOutputClassifier(LogisticRegression())`` (binary relevance, one-vs-rest per label)? ``C``
has scikit-learn's meaning (it multiplies the summed loss, as in ``LinearSVC``), so the same values are
compared on both data sets; the row with the default ``C`` is marked. Every fit is recorded with its
epochs and whether it ended in a ``ConvergenceWarning``.

Protocol: official MULAN train/test splits of yeast (1500 x 103, 14 labels) and scene (1211 x 294,
6 labels); every model fitted on the training split with its default settings except ``C``, scored
once on the test split (subset accuracy, Hamming loss); "standardised" puts ``StandardScaler`` in a
``Pipeline`` in front of both sides. CPU seconds are process time of fit + predict (numba compiled
before the first measurement).

Run: ``python benchmarks/product/bench_dlpw_defaults.py`` (writes results/dlpw_defaults/dlpw_defaults.{md,json}).
"""

import sys
import time
import warnings
from pathlib import Path

from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.multioutput import MultiOutputClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_struct import DLPWClassifier
from sklearn_struct.datasets import load_scene, load_yeast
from sklearn_struct.metrics import hamming_loss_multilabel, subset_accuracy
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, load_json, report_only_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

RESULTS = results_dir("dlpw_defaults")
C_GRID = [0.001, 0.01, 0.1]
DEFAULT_C = DLPWClassifier().C


def run(model, X, Y, Xt, Yt):
    start = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(X, Y)
        pred = model.predict(Xt)
    last = model[-1] if hasattr(model, "steps") else model
    return {"subset": float(subset_accuracy(Yt, pred)), "hamming": float(hamming_loss_multilabel(Yt, pred)),
            "cpu_s": time.process_time() - start, "epochs": int(getattr(last, "n_iter_", 0)),
            "converged": not any(issubclass(w.category, ConvergenceWarning) for w in caught)}


def main():
    data = {"yeast": load_yeast, "scene": load_scene}
    DLPWClassifier(max_epochs=1, tol=0).fit(load_yeast("train").data[:20], load_yeast("train").target[:20])
    rows = []
    for name, load in data.items():
        train, test = load("train"), load("test")
        for scaling in ("raw", "standardised"):
            def wrap(est):
                return make_pipeline(StandardScaler(), est) if scaling == "standardised" else est
            args = (train.data, train.target, test.data, test.target)
            base = run(wrap(MultiOutputClassifier(LogisticRegression())), *args)
            rows.append({"set": name, "scaling": scaling, "method": "MultiOutput(LogisticRegression())", "C": 1.0,
                         **base})
            for C in C_GRID:
                res = run(wrap(DLPWClassifier(C=C)), *args)
                rows.append({"set": name, "scaling": scaling, "method": "DLPWClassifier", "C": C, **res,
                             "default": C == DEFAULT_C, "vs_baseline_subset": res["subset"] - base["subset"]})
                print(rows[-1], flush=True)
    save_json(RESULTS / "dlpw_defaults.json", {"default_C": DEFAULT_C, "rows": rows})
    report(load_json(RESULTS / "dlpw_defaults.json"))


def report(saved):
    """The md from the saved json."""
    rows = saved["rows"]
    lines = ["# DLPWClassifier defaults against a default LogisticRegression (yeast, scene; MULAN test splits)", "",
             f"Default `C = {saved['default_C']}` (scikit-learn's meaning: it multiplies the summed loss). Every other "
             "setting at its default; the baseline is `MultiOutputClassifier(LogisticRegression())` with its "
             "defaults. `*` marks the default C; 'converged' is False where the fit ended in a ConvergenceWarning.",
             "", "| set | X | method | C | subset accuracy ↑ | Hamming loss ↓ | epochs | converged | CPU s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        star = "*" if r.get("default") else ""
        lines.append(f"| {r['set']} | {r['scaling']} | {r['method']} | {r['C']:g}{star} | {r['subset']:.4f} | "
                     f"{r['hamming']:.4f} | {r['epochs'] or '–'} | {r['converged']} | {r['cpu_s']:.1f} |")
    lines += ["", "Default DLPW minus the baseline (subset accuracy):", ""]
    for r in rows:
        if r.get("default"):
            verdict = "at least as good" if r["vs_baseline_subset"] >= 0 else "WORSE"
            lines.append(f"- {r['set']}, {r['scaling']}: {r['vs_baseline_subset']:+.4f} ({verdict})")
    write_text(RESULTS / "dlpw_defaults.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if report_only_args(description=__doc__.split("\n")[0]).report_only:
        report(load_json(RESULTS / "dlpw_defaults.json"))
        finish()
    else:
        main()
