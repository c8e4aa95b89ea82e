"""DLPWClassifier in the comparison a multi-label user makes (issue 36): yeast and scene against BR, CC, LP.

Protocol: MULAN's own train/test splits of yeast (1500 / 917, 103 features, 14 labels) and scene
(1211 / 1196, 294 features, 6 labels); features standardised (``StandardScaler`` in a ``Pipeline``,
fitted on the training part). Every method is run twice:

* **default**: its default settings (``LogisticRegression()``'s ``C = 1``; ``DLPWClassifier()``);
* **tuned**: ``GridSearchCV`` over ``C`` by 3-fold CV (shuffled, seed 0) on the training part only,
  scored by subset accuracy (the goal's metric), refitted on the whole training part.

Each model is then scored once on the test split: subset accuracy, Hamming loss, micro / macro F1,
and the fit's CPU seconds (process time of ``fit``, including the search when tuned; BLAS limited to
one thread). Baselines (``LogisticRegression(max_iter=2000)``): binary relevance
(``MultiOutputClassifier``), an ensemble of 10 ``ClassifierChain`` with random label orders
(probabilities averaged, threshold 0.5) and label powerset (one multinomial model over the label sets
seen in training); see ``benchmarks/_lib/dlpw_baselines.py``.

The cost goal ("the sparse graph at most 3x BR's fit on a 50-label set") is measured on a generated set
(``_lib.multilabel_data.make_many_labels``, 2000 x 50 features, 50 labels), default settings (``--cost``), the least fit CPU
of three fits each.

Results are cached row by row in ``results/dlpw_multilabel/dlpw_multilabel.json`` (2 shared cores: a rerun only fits
the rows that are missing; ``--force NAME[,=EXACT]`` refits the rows whose method contains NAME or is EXACT; the
cost rows likewise, in ``dlpw_multilabel_cost.json``).

``--bootstrap``: a few DLPW rows refitted at their recorded C beside the best tuned baseline, and a paired
bootstrap of their test subset accuracy (the per-sample hits are resampled together).

Run: ``python benchmarks/peers/bench_dlpw_multilabel.py [--cost | --cost-only] [--force NAME] [--set yeast|scene]
[--bootstrap] [--report-only [--check]]`` (writes results/dlpw_multilabel/dlpw_multilabel.{md,json}; the md is rendered from the
saved json only: the rows from ``dlpw_multilabel.json``, the cost table from ``dlpw_multilabel_cost.json``).
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import f1_score, make_scorer  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold  # noqa: E402
from sklearn.multioutput import MultiOutputClassifier  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import add_report_only, finish, load_json, parse_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from _lib.multilabel_data import make_many_labels  # noqa: E402
from _lib.dlpw_baselines import ChainEnsemble, LabelPowerset  # noqa: E402
from sklearn_struct import DLPWClassifier, DLPWClassifierCV  # noqa: E402
from sklearn_struct.datasets import load_scene, load_yeast  # noqa: E402
from sklearn_struct.metrics import hamming_loss_multilabel, subset_accuracy  # noqa: E402

RESULTS = results_dir("dlpw_multilabel")
JSON = RESULTS / os.environ.get("DLPW_BENCH_JSON", "dlpw_multilabel.json")  # a second process: its own file
COST_JSON = RESULTS / "dlpw_multilabel_cost.json"
LR_GRID = [0.001, 0.01, 0.1, 1.0, 10.0]
DLPW_GRID = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2]
CV = KFold(3, shuffle=True, random_state=0)
SUBSET = make_scorer(subset_accuracy)
COST_REPEATS = 3


def _dlpw(**kw):
    return lambda: DLPWClassifier(**kw)


# name -> (factory of the classifier at its defaults, the parameter GridSearchCV tunes, its grid); None: no search
METHODS = {
    "BR (LogReg)": (lambda: MultiOutputClassifier(LogisticRegression(max_iter=2000)), "estimator__C", LR_GRID),
    "CC x10 (LogReg)": (lambda: ChainEnsemble(), "C", LR_GRID),
    "LP (LogReg)": (lambda: LabelPowerset(), "C", LR_GRID),
    "DLPW": (_dlpw(), "C", DLPW_GRID),  # DLPWClassifier() at the current defaults
    "DLPW, edges='tree'": (_dlpw(edges="tree"), "C", DLPW_GRID),
    "DLPW, edges='tree', label_sets='all'": (_dlpw(edges="tree", label_sets="all"), None, None),
    "DLPW, edges='tree', label_sets='train'": (_dlpw(edges="tree", label_sets="train"), None, None),
    "DLPW, label_sets='all' (LP-MAP)": (_dlpw(label_sets="all"), None, None),
    "DLPW, previous default (C=0.01, LP-MAP)": (_dlpw(C=0.01, label_sets="all"), None, None),
    "DLPW, loss='subset'": (_dlpw(loss="subset"), "C", DLPW_GRID),
    # the 0/1 loss over every labelling, through the loss-augmented LP (witness node), with LP-MAP prediction
    "DLPW, loss='subset', label_sets='all' (subset loss through the LP)": (_dlpw(loss="subset", label_sets="all"),
                                                                          "C", DLPW_GRID),
    "DLPW, edges='tree', loss='subset', label_sets='all' (exact on the tree)": (
        _dlpw(edges="tree", loss="subset", label_sets="all"), None, None),
    "DLPW, edges='tree', edge_features": (_dlpw(edges="tree", edge_features=True), "C", DLPW_GRID),
    "DLPW, edges='tree', edge_features, loss='subset'": (_dlpw(edges="tree", edge_features=True, loss="subset"),
                                                         None, None),
    # the best DLPW configuration of the training-part CV study (studies/bench_dlpw_tuned_options.py): C fixed there
    "DLPW, edge_features, C=1e-4 (chosen by training-part CV)": (_dlpw(edge_features=True, C=1e-4), None, None),
    # tuned by its own path over DLPW_GRID (3-fold, subset accuracy): the 'default' row is the tuned one
    "DLPWClassifierCV": (lambda: DLPWClassifierCV(Cs=DLPW_GRID, cv=CV), None, None),
}
BASELINES = ("BR (LogReg)", "CC x10 (LogReg)", "LP (LogReg)")
COST_ONLY = ("DLPW, edges='tree', label_sets='train'",)  # on yeast and scene the default's choice already


def load(name):
    fn = load_yeast if name == "yeast" else load_scene
    train, test = fn("train"), fn("test")
    return train.data, train.target, test.data, test.target


def scores(Yt, pred):
    return {"subset": float(subset_accuracy(Yt, pred)), "hamming": float(hamming_loss_multilabel(Yt, pred)),
            "micro_f1": float(f1_score(Yt, pred, average="micro", zero_division=0)),
            "macro_f1": float(f1_score(Yt, pred, average="macro", zero_division=0))}


def fit_row(method, mode, X, Y, Xt, Yt):
    factory, param, grid = METHODS[method]
    model = Pipeline([("scale", StandardScaler()), ("clf", factory())])
    row = {}
    start = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        if mode == "tuned" and param is not None:
            search = GridSearchCV(model, {f"clf__{param}": grid}, scoring=SUBSET, cv=CV).fit(X, Y)
            model = search.best_estimator_
            row["C"] = search.best_params_[f"clf__{param}"]
            row["cv_subset"] = float(search.best_score_)
        else:
            model.fit(X, Y)
    row["fit_cpu_s"] = time.process_time() - start
    row["convergence_warnings"] = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    clf = model.named_steps["clf"]
    if mode == "default" or param is None:
        row["C"] = getattr(clf, "C", getattr(getattr(clf, "estimator", None), "C", None))
    for attr in ("C_", "n_iter_"):
        if hasattr(clf, attr) and np.ndim(getattr(clf, attr)) == 0:
            row[attr] = float(getattr(clf, attr))
    fitted = getattr(clf, "best_estimator_", clf)
    if hasattr(fitted, "label_sets_mode_"):
        row["label_sets_mode"] = fitted.label_sets_mode_
    row.update(scores(Yt, model.predict(Xt)))
    return row


def cost_rows(previous, force=None):
    """Fit CPU on a generated 50-label set: BR against DLPW with the tree (default settings otherwise); the
    least of ``COST_REPEATS`` fits each (the loaded machine's noise only adds); the edge-feature row (every
    step scores all 2,000 training label sets) is fitted once. Rows in ``previous`` are kept unless ``force``
    names them (as ``--force``)."""
    X, Y = make_many_labels(3000, n_features=50, n_labels=50, random_state=0)
    X, Xt, Y, Yt = X[:2000], X[2000:], Y[:2000], Y[2000:]
    rows = dict(previous)
    for method, repeats in (("BR (LogReg)", COST_REPEATS), ("DLPW, edges='tree'", COST_REPEATS),
                            ("DLPW, edges='tree', label_sets='all'", COST_REPEATS),
                            ("DLPW, edges='tree', label_sets='train'", COST_REPEATS),
                            ("DLPW, edges='tree', loss='subset', label_sets='all' (exact on the tree)",
                             COST_REPEATS),
                            ("DLPW, edges='tree', edge_features", 1)):  # the slow one: once
        if method in rows and not (force and _forced(force, method)):
            continue
        fits = [fit_row(method, "default", X, Y, Xt, Yt) for _ in range(repeats)]
        rows[method] = min(fits, key=lambda r: r["fit_cpu_s"])
        rows[method]["fit_cpu_s_all"] = [r["fit_cpu_s"] for r in fits]
        print("cost", method, rows[method], flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost", action="store_true", help="also measure the fit cost on a generated 50-label set")
    parser.add_argument("--cost-only", action="store_true", help="measure only the fit cost")
    parser.add_argument("--force", help="NAME[,=EXACT]: refit the rows whose method contains NAME or is EXACT")
    parser.add_argument("--set", choices=("yeast", "scene"), help="run this data set only (default both)")
    parser.add_argument("--bootstrap", action="store_true",
                        help="paired bootstrap of test subset accuracy: DLPW rows against the best tuned baseline")
    add_report_only(parser)
    args = parse_args(parser)
    if not args.report_only:
        run(args)
    store = load_json(JSON)
    if COST_JSON.exists():
        store["cost"] = load_json(COST_JSON)
    write_md(store)
    return finish()


def run(args):
    """Fit the missing (and the forced) rows, and the cost rows when asked; each saved as it is fitted."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    store = load_json(JSON) if JSON.exists() else {"rows": {}}
    DLPWClassifier(max_epochs=1, tol=0).fit(np.eye(4)[:, :3], np.eye(4)[:, :2].astype(int))  # compile first
    for name in () if args.cost_only else [args.set] if args.set else ["yeast", "scene"]:
        data = load(name)
        for method in [m for m in METHODS if m not in COST_ONLY]:
            for mode in ("default", "tuned"):
                key = f"{name}|{method}|{mode}"
                if mode == "tuned" and METHODS[method][1] is None:
                    continue  # a fixed setting, or a model that tunes itself (its 'default' row)
                if key in store["rows"] and not (args.force and _forced(args.force, method)):
                    continue
                store["rows"][key] = fit_row(method, mode, *data)
                print(key, store["rows"][key], flush=True)
                save_json(JSON, store)
    if args.cost or args.cost_only:
        save_json(COST_JSON, cost_rows(load_json(COST_JSON) if COST_JSON.exists() else {}, args.force))
    if args.bootstrap:
        store["bootstrap"] = bootstrap_rows(store["rows"])
        save_json(JSON, store)


# DLPW rows set against the best tuned baseline by a paired bootstrap of the test samples
BOOTSTRAP_ROWS = ("DLPW|default", "DLPW|tuned", "DLPW, edges='tree', edge_features|default",
                  "DLPW, edges='tree', edge_features|tuned", "DLPW, loss='subset'|tuned")
N_BOOTSTRAP = 10000


def _refit_hits(method, C, X, Y, Xt, Yt):
    """Per-sample subset hits (0/1) of ``method`` refitted at its recorded ``C`` (no search)."""
    factory = METHODS[method][0]
    clf = factory()
    if C is not None:
        clf.set_params(**{"estimator__C" if method.startswith("BR") else "C": C})
    model = Pipeline([("scale", StandardScaler()), ("clf", clf)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, Y)
    return np.all(model.predict(Xt) == Yt, axis=1).astype(np.int8)


def bootstrap_rows(rows):
    """For each set: the best tuned baseline and the BOOTSTRAP_ROWS refitted at their recorded C, their per-sample
    test hits, and the paired bootstrap (N_BOOTSTRAP resamples of the test samples, seed 0) of the difference."""
    out = {}
    for name in ("yeast", "scene"):
        X, Y, Xt, Yt = load(name)
        best = max(BASELINES, key=lambda b: rows[f"{name}|{b}|tuned"]["subset"])
        base = _refit_hits(best, rows[f"{name}|{best}|tuned"]["C"], X, Y, Xt, Yt)
        idx = np.random.default_rng(0).integers(0, len(Yt), size=(N_BOOTSTRAP, len(Yt)))
        out[name] = {"baseline": f"{best}|tuned", "baseline_subset": float(base.mean()), "rows": {}}
        for key in BOOTSTRAP_ROWS:
            method, mode = key.split("|")
            hits = _refit_hits(method, rows[f"{name}|{method}|{mode}"]["C"], X, Y, Xt, Yt)
            diff = (hits - base).astype(np.float64)
            boot = diff[idx].mean(axis=1)
            lo, hi = np.percentile(boot, [2.5, 97.5])
            out[name]["rows"][key] = {"subset": float(hits.mean()), "diff": float(diff.mean()), "ci95": [float(lo), float(hi)],
                                      "p_not_behind": float(np.mean(boot >= 0))}
            print("bootstrap", name, key, out[name]["rows"][key], "recorded", rows[f"{name}|{method}|{mode}"]["subset"],
                  flush=True)
    return out


def _forced(force, method):
    """``--force a,=b``: refit the methods containing ``a`` and the method named exactly ``b``."""
    return any(method == f[1:] if f.startswith("=") else f in method for f in force.split(","))


def write_md(store):
    rows = store["rows"]
    lines = ["# DLPWClassifier against the multi-label baselines users pick (yeast, scene; MULAN test splits)", "",
             "Standardised features; `default`: every method at its defaults; `tuned`: C by 3-fold GridSearchCV "
             "on the training part, scored by subset accuracy, refitted. Baselines on "
             "`LogisticRegression(max_iter=2000)`: BR = `MultiOutputClassifier`, CC x10 = 10 `ClassifierChain`s "
             "with random orders (probabilities averaged), LP = label powerset. Fit CPU: process seconds of "
             "`fit` (with the search when tuned), one BLAS thread; ratios to BR's in the same mode.", ""]
    for name in ("yeast", "scene"):
        lines += [f"## {name}", "", "| method | mode | C | subset acc ↑ | Hamming ↓ | micro F1 ↑ | macro F1 ↑ | "
                  "fit CPU s | x BR |", "|---|---|---|---|---|---|---|---|---|"]
        for mode in ("default", "tuned"):
            br = rows.get(f"{name}|BR (LogReg)|{mode}", {}).get("fit_cpu_s", np.nan)
            for method in METHODS:
                r = rows.get(f"{name}|{method}|{mode}")
                if r is None:
                    continue
                C = r.get("C_", r.get("C"))
                lines.append(f"| {method} | {mode} | {C if C is None else format(C, 'g')} | {r['subset']:.4f} | "
                             f"{r['hamming']:.4f} | {r['micro_f1']:.4f} | {r['macro_f1']:.4f} | "
                             f"{r['fit_cpu_s']:.1f} | {r['fit_cpu_s'] / br:.1f} |")
        lines += [""] + goal_lines(rows, name) + [""]
    if store.get("cost"):
        cost = store["cost"]
        br = cost["BR (LogReg)"]["fit_cpu_s"]
        lines += ["## Fit cost on a generated 50-label set (2000 x 50, default settings)", "",
                  "`make_many_labels` (`benchmarks/_lib/multilabel_data.py`): labels from a linear model plus 5 shared latent factors.", "",
                  "| method | fit CPU s | x BR | subset acc | Hamming |", "|---|---|---|---|---|"]
        for method, r in cost.items():
            if "not_run" in r:
                lines.append(f"| {method} | not run: {r['not_run']} | | | |")
                continue
            chose = f" (decoding: '{r['label_sets_mode']}')" if "label_sets_mode" in r else ""
            lines.append(f"| {method}{chose} | {r['fit_cpu_s']:.2f} | {r['fit_cpu_s'] / br:.1f} | {r['subset']:.4f} | "
                         f"{r['hamming']:.4f} |")
    lines += bootstrap_lines(store.get("bootstrap"))
    write_text(RESULTS / "dlpw_multilabel.md", "\n".join(lines) + "\n")


def bootstrap_lines(boot):
    """The paired-bootstrap table (``--bootstrap``), if run."""
    if not boot:
        return []
    lines = ["", "## Paired bootstrap of test subset accuracy against the best tuned baseline", "",
             f"Each row refitted at its recorded C (no search) beside the best tuned baseline, both scored on the same test "
             f"samples; {N_BOOTSTRAP} resamples of the test samples (seed 0). *diff*: row - baseline; "
             "*P(not behind)*: the share of resamples where the difference is >= 0.", "",
             "| data | row | baseline | row subset acc | baseline subset acc | diff | 95% interval | P(not behind) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, b in boot.items():
        for key, r in b["rows"].items():
            lines.append(f"| {name} | {key.replace('|', ', ')} | {b['baseline'].replace('|', ', ')} | {r['subset']:.4f} | "
                         f"{b['baseline_subset']:.4f} | {r['diff']:+.4f} | [{r['ci95'][0]:+.4f}, {r['ci95'][1]:+.4f}] | "
                         f"{r['p_not_behind']:.3f} |")
    return lines


def goal_lines(rows, name):
    """The issue's goals for each DLPW variant against the best baseline of the same mode."""
    out = []
    for method in [m for m in METHODS if m.startswith("DLPW")]:
        for mode in ("default", "tuned"):
            r = rows.get(f"{name}|{method}|{mode}")
            # tuned by itself, or its C by the training-part CV study
            against = "tuned" if method.startswith("DLPWClassifierCV") or "training-part CV" in method else mode
            base = [rows.get(f"{name}|{b}|{against}") for b in BASELINES]
            if r is None or any(b is None for b in base):
                continue
            best_s = max(b["subset"] for b in base)
            best_h = min(b["hamming"] for b in base)
            s_ok = r["subset"] >= best_s
            h_ok = r["hamming"] <= best_h + 0.002
            goal = (f"subset {r['subset']:.4f} vs best {best_s:.4f} ({'met' if s_ok else 'NOT met'})"
                    + (f", Hamming {r['hamming']:.4f} vs best {best_h:.4f} + 0.002 "
                       f"({'met' if h_ok else 'NOT met'})" if against == "default" else ""))
            out.append(f"- {method}, {mode if against == mode else 'tuned on the training part, against the tuned baselines'}: {goal}")
    return out


if __name__ == "__main__":
    main()
