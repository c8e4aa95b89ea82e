"""What tuning C costs with DLPWClassifierCV: CPU per value of C against one plain fit (issue 36).

Protocol: yeast and scene (MULAN's *training* parts only), standardised features. For each C of the
grid (``1e-4 ... 3e-2``, the multi-label benchmark's), one plain ``DLPWClassifier(C=C).fit`` on the
whole training part (its process CPU); then ``DLPWClassifierCV(Cs=grid, cv=3 shuffled folds,
refit=False)`` (the warm-started path on each fold) and, on the same folds, separate cold fits of
every fold and C. Reported: the search's CPU divided by the number of C values and by the mean plain
fit ("plain fits per C": the goal is about 1, as ``LogisticRegressionCV``), the epochs of the path's
fits against the cold ones, and the held-out subset accuracies of the path against the separate
fits (the same choice of C, scores within the noise of the stopping rule). The refit on the whole
training part: ``DLPWClassifierCV(refit=True)`` again (its refit starts from the folds' weights at
``C_``, ``sklearn_struct.dlpw_cv.refit_start``), its CPU beyond the ``refit=False`` search, epochs and
final eq. 9 bound against the plain (cold) fit at ``C_``. One BLAS thread.

Run: ``python benchmarks/product/bench_dlpw_cv_path.py [--set yeast|scene] [--report-only [--check]]``
(writes results/dlpw_cv_path.{md,json}; rows cached per data set; the md is rendered from the json only).
"""

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.model_selection import KFold  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import add_report_only, finish, load_json, parse_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from sklearn_struct import DLPWClassifier, DLPWClassifierCV  # noqa: E402
from sklearn_struct.datasets import load_scene, load_yeast  # noqa: E402

RESULTS = results_dir("dlpw_cv_path")
JSON = RESULTS / "dlpw_cv_path.json"
GRID = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2]
CV = KFold(3, shuffle=True, random_state=0)
# the previous path (weights kept as they were, schedule capped at 10 epochs), measured once on yeast's
# training part in the same protocol before the change (10-epoch cap, weights kept): 1.61 plain fits per C
PREVIOUS = {"yeast": 1.61, "scene": "–"}


def run(name):
    d = (load_yeast if name == "yeast" else load_scene)("train")
    X, Y = StandardScaler().fit_transform(d.data), d.target
    plain, plain_epochs, plain_fits = [], [], []
    for C in GRID:
        start = time.process_time()
        clf = DLPWClassifier(C=C).fit(X, Y)
        plain.append(time.process_time() - start)
        plain_epochs.append(int(clf.n_iter_))
        plain_fits.append(clf)
    start = time.process_time()
    cv = DLPWClassifierCV(Cs=GRID, cv=CV, refit=False).fit(X, Y)
    search = time.process_time() - start
    start = time.process_time()
    with_refit = DLPWClassifierCV(Cs=GRID, cv=CV).fit(X, Y)
    search_refit = time.process_time() - start
    warm, cold = with_refit.best_estimator_, plain_fits[GRID.index(with_refit.C_)]
    refit = {"C": with_refit.C_, "warm_cpu_s": search_refit - search, "cold_cpu_s": plain[GRID.index(with_refit.C_)],
             "warm_epochs": int(warm.n_iter_), "cold_epochs": int(cold.n_iter_),
             "warm_bound": float(warm.objective_curve_[-1, 2]), "cold_bound": float(cold.objective_curve_[-1, 2]),
             "warm_train_subset": float(warm.score(X, Y)), "cold_train_subset": float(cold.score(X, Y)),
             "agree": float(np.mean(np.all(warm.predict(X) == cold.predict(X), axis=1)))}
    folds = list(CV.split(X))
    cold = [[DLPWClassifier(C=C).fit(X[tr], Y[tr]) for C in GRID] for tr, _ in folds]
    sep = np.array([[c.score(X[te], Y[te]) for c in row] for row, (_, te) in zip(cold, folds)])
    sep_epochs = np.array([[c.n_iter_ for c in row] for row in cold])
    return {"plain_cpu_s": plain, "plain_epochs": plain_epochs, "search_cpu_s": search,
            "plain_fits_per_C": search / len(GRID) / float(np.mean(plain)), "search_refit_cpu_s": search_refit,
            "refit": refit,
            "path_epochs": cv.n_iter_.tolist(), "separate_epochs": sep_epochs.tolist(),
            "path_scores": cv.scores_.tolist(), "separate_scores": sep.tolist(),
            "C_path": cv.C_, "C_separate": GRID[int(np.argmax(sep.mean(axis=0)))]}


def write_md(store):
    lines = ["# DLPWClassifierCV: CPU per value of C against one plain fit", "",
             "Training parts only, standardised; grid " + ", ".join(f"{c:g}" for c in GRID) + "; 3 shuffled folds "
             "(seed 0). *Plain fits per C*: the search's CPU / (number of C values x mean CPU of a plain fit on the "
             "whole training part); the goal is about 1 (`LogisticRegressionCV`'s warm-started path). *Separate*: "
             "each fold and C fitted cold.", "",
             "| data | plain fits per C: search + refit ↓ | search + cold refit | search only | search only, before "
             "the warm-started path | C chosen (path / separate) | mean held-out subset acc, path | separate | "
             "largest fold difference | epochs per fold: path / separate |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in store.items():
        path, sep = np.array(r["path_scores"]), np.array(r["separate_scores"])
        unit = len(GRID) * float(np.mean(r["plain_cpu_s"]))
        f = r.get("refit")
        with_refit = f"{r['search_refit_cpu_s'] / unit:.2f}" if f else "–"
        cold_refit = f"{(r['search_cpu_s'] + f['cold_cpu_s']) / unit:.2f}" if f else "–"
        lines.append(f"| {name} | {with_refit} | {cold_refit} | {r['plain_fits_per_C']:.2f} | "
                     f"{PREVIOUS.get(name, '–')} | {r['C_path']:g} / {r['C_separate']:g} | {path.mean():.4f} | "
                     f"{sep.mean():.4f} | {np.abs(path - sep).max():.4f} | "
                     f"{np.sum(r['path_epochs']) / 3:.0f} / {np.sum(r['separate_epochs']) / 3:.0f} |")
    lines += ["", "The refit on the whole training part at `C_`: warm (from the folds' weights, `refit_start`) against "
              "the plain cold fit. Warm CPU: the search with the refit minus the search without it.", "",
              "| data | C_ | epochs warm / cold | CPU s warm / cold | final eq. 9 bound warm / cold | training subset "
              "acc warm / cold | same predictions |", "|---|---|---|---|---|---|---|"]
    for name, r in store.items():
        f = r.get("refit")
        if f:
            lines.append(f"| {name} | {f['C']:g} | {f['warm_epochs']} / {f['cold_epochs']} | {f['warm_cpu_s']:.2f} / "
                         f"{f['cold_cpu_s']:.2f} | {f['warm_bound']:.4f} / {f['cold_bound']:.4f} | "
                         f"{f['warm_train_subset']:.4f} / {f['cold_train_subset']:.4f} | {f['agree']:.3f} |")
    lines += ["", "Per C (mean over folds):", ""]
    for name, r in store.items():
        lines += [f"**{name}**", "", "| C | plain fit CPU s | plain epochs | path epochs | separate epochs | "
                  "path subset acc | separate subset acc |", "|---|---|---|---|---|---|---|"]
        for k, C in enumerate(GRID):
            pe = np.mean([f[k] for f in r["path_epochs"]])
            se = np.mean([f[k] for f in r["separate_epochs"]])
            ps = np.mean([f[k] for f in r["path_scores"]])
            ss = np.mean([f[k] for f in r["separate_scores"]])
            lines.append(f"| {C:g} | {r['plain_cpu_s'][k]:.2f} | {r['plain_epochs'][k]} | {pe:.0f} | {se:.0f} | "
                         f"{ps:.4f} | {ss:.4f} |")
        lines.append("")
    write_text(RESULTS / "dlpw_cv_path.md", "\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("yeast", "scene"), help="run this data set only (default both)")
    add_report_only(parser)
    args = parse_args(parser)
    if not args.report_only:
        store = load_json(JSON) if JSON.exists() else {}
        DLPWClassifier(max_epochs=1, tol=0).fit(np.eye(5)[:, :4], np.eye(5)[:, :3].astype(int))  # compile first
        for name in [args.set] if args.set else ["yeast", "scene"]:
            store[name] = run(name)
            save_json(JSON, store)
    write_md(load_json(JSON))
    return finish()


if __name__ == "__main__":
    main()
