"""DLPW test-set accuracy on yeast and scene beside scikit-learn's multi-label baselines, same script.

Protocol (the issue's): official MULAN train/test splits; features standardised (``StandardScaler`` in a
``Pipeline``, fitted on the training part); for every method C is chosen by 3-fold CV on the training part
only, separately for each metric (Hamming loss, subset accuracy), then the model is refitted on the whole
training part with that C and scored once on the test split. Methods: ``DLPWClassifier`` (fully connected
label graph, R = 10, default max_epochs (1000) and stopping rule, cyclic), ``MultiOutputClassifier(LogisticRegression)``
(binary relevance) and ``ClassifierChain(LogisticRegression)`` (label order 0..d-1).

Also measured: peak memory (tracemalloc) and epochs per second of a yeast fit, the prediction certificates.

C is scikit-learn's (on the summed loss, issue 20): the paper's C on the mean loss is this C times the
number of training samples (about 1000 per CV fold).

Data: MULAN yeast (Elisseeff & Weston 2001) and scene (Boutell et al. 2004), from the MULAN repository
(see data/multilabel/*/PROVENANCE.txt for licences).

Run: ``python benchmarks/papers/bench_dlpw_accuracy.py`` (writes results/dlpw_accuracy/dlpw_accuracy.{md,json}); with
``--diagnostic``: the same protocol for DLPW without label edges and for ``MultiOutputClassifier(LinearSVC)``
(writes results/dlpw_accuracy/dlpw_accuracy_diagnostic.{md,json}).
"""

import argparse
import json
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.multioutput import ClassifierChain, MultiOutputClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_struct import DLPWClassifier
from sklearn_struct.datasets import load_scene, load_yeast
from sklearn_struct.metrics import hamming_loss_multilabel, subset_accuracy
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import (add_report_only, finish, load_json, parse_args, save_figure, save_json,  # noqa: E402
                         write_text)
from _lib.results import results_dir  # noqa: E402

RESULTS = results_dir("dlpw_accuracy")
GOALS = {"yeast": (0.1986, 0.20), "scene": (0.0998, 0.60)}  # measured with this protocol (issue 14)
SCORING = {"hamming": make_scorer(hamming_loss_multilabel, greater_is_better=False),
           "subset": make_scorer(subset_accuracy)}
GRIDS = {
    # scikit-learn's C: the paper's C / n (n ~ 1000 per fold). Yeast's subset-accuracy CV picks the top, 0.01
    # (the default): a rerun should add 0.03 and 0.1 (not done in issue 20's rerun for lack of machine time)
    "DLPW": ("clf__C", [1e-4, 3e-4, 1e-3, 3e-3, 1e-2]),
    "BR(LogReg)": ("clf__estimator__C", [0.01, 0.1, 1.0, 10.0]),
    "CC(LogReg)": ("clf__estimator__C", [0.01, 0.1, 1.0, 10.0]),
}
# --diagnostic: where does the gap come from? the same hinge loss without the label graph, and linear SVMs
DIAGNOSTIC_GRIDS = {
    "DLPW without edges": ("clf__C", [1e-4, 3e-4, 1e-3, 3e-3, 1e-2]),
    "BR(LinearSVC)": ("clf__estimator__C", [0.0003, 0.001, 0.01, 0.1]),
}


def make(method):
    if method == "DLPW without edges":
        clf = DLPWClassifier(edges=[])
    elif method == "BR(LinearSVC)":
        from sklearn.svm import LinearSVC

        clf = MultiOutputClassifier(LinearSVC())
    elif method == "DLPW":
        clf = DLPWClassifier()
    elif method == "BR(LogReg)":
        clf = MultiOutputClassifier(LogisticRegression(max_iter=2000))
    else:
        clf = ClassifierChain(LogisticRegression(max_iter=2000))
    return Pipeline([("scale", StandardScaler()), ("clf", clf)])


def evaluate(name, grids=GRIDS):
    load = load_yeast if name == "yeast" else load_scene
    train, test = load("train"), load("test")
    X, Y, Xt, Yt = train.data, train.target, test.data, test.target
    rows = {}
    for method, (param, grid) in grids.items():
        start = time.perf_counter()
        search = GridSearchCV(make(method), {param: grid}, scoring=SCORING, refit=False,
                              cv=KFold(3, shuffle=True, random_state=0))
        search.fit(X, Y)
        row = {}
        for metric in ("hamming", "subset"):
            best_C = search.cv_results_["params"][int(np.argmax(search.cv_results_[f"mean_test_{metric}"]))][param]
            model = make(method).set_params(**{param: best_C}).fit(X, Y)
            pred = model.predict(Xt)
            row[metric] = {"C": best_C, "hamming": hamming_loss_multilabel(Yt, pred),
                           "subset": subset_accuracy(Yt, pred)}
            if method.startswith("DLPW"):
                _, cert = model.named_steps["clf"].predict_with_certificates(model.named_steps["scale"].transform(Xt))
                row[metric]["certified"] = float(cert.mean())
        row["seconds"] = time.perf_counter() - start
        rows[method] = row
        print(name, method, json.dumps(row), flush=True)
    return rows


def yeast_speed_and_memory():
    train = load_yeast("train")
    X = StandardScaler().fit_transform(train.data)
    DLPWClassifier(max_epochs=1, tol=0).fit(X[:50], train.target[:50])  # compile outside the measurement
    tracemalloc.start()
    clf = DLPWClassifier(C=1.0 / len(X), max_epochs=50, tol=0).fit(X, train.target)  # the paper's C = 1
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    clf32 = DLPWClassifier(C=1.0 / len(X), max_epochs=50, tol=0, dtype="float32").fit(X, train.target)
    seconds = clf.objective_curve_[-1, 1]
    messages = X.shape[0] * 2 * len(clf.edges_) * 2
    return {"epochs": int(clf.n_iter_), "train_seconds": float(seconds), "epochs_per_s": clf.n_iter_ / seconds,
            "epochs_per_s_float32": clf32.n_iter_ / clf32.objective_curve_[-1, 1],
            "peak_MB": peak / 2**20, "message_floats": messages, "message_MB_float64": messages * 8 / 2**20}


def diagnostic():
    save_json(RESULTS / "dlpw_accuracy_diagnostic.json", {name: evaluate(name, DIAGNOSTIC_GRIDS)
                                                          for name in ("yeast", "scene")})
    diagnostic_report(load_json(RESULTS / "dlpw_accuracy_diagnostic.json"))


def diagnostic_report(results):
    """dlpw_accuracy_diagnostic.md from the saved diagnostic json."""
    lines = ["# DLPW accuracy diagnostic: hinge-loss models without the label graph", "",
             "Same protocol as dlpw_accuracy.md (C by 3-fold CV on the training part, per metric).", "",
             "| set | method | Hamming loss (C) | subset accuracy (C) |", "|---|---|---|---|"]
    for name in ("yeast", "scene"):
        for method, row in results[name].items():
            lines.append(f"| {name} | {method} | {row['hamming']['hamming']:.4f} ({row['hamming']['C']:g}) | "
                         f"{row['subset']['subset']:.4f} ({row['subset']['C']:g}) |")
    write_text(RESULTS / "dlpw_accuracy_diagnostic.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


def plot(results):
    """dlpw_accuracy.png: test Hamming loss and subset accuracy of every method on both sets."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, (metric, label) in zip(axes, [("hamming", "test Hamming loss (lower is better)"),
                                          ("subset", "test subset accuracy (higher is better)")]):
        for k, name in enumerate(("yeast", "scene")):
            methods = list(results[name])
            values = [results[name][m][metric][metric] for m in methods]
            x = np.arange(len(methods)) + 4 * k
            ax.bar(x, values, color=["tab:blue", "tab:gray", "tab:olive"][: len(methods)])
            for xi, v in zip(x, values):
                ax.text(xi, v, f"{v:.3f}", ha="center", va="bottom", fontsize=7)
        ticks = [i + 4 * k for k in range(2) for i in range(3)]
        ax.set_xticks(ticks, [f"{m}\n{n}" for n in ("yeast", "scene") for m in results[n]], fontsize=7)
        ax.set_title(label, fontsize=9)
    fig.suptitle("DLPW vs scikit-learn baselines, C by CV on the training part", fontsize=10)
    fig.tight_layout()
    save_figure(fig, RESULTS / "dlpw_accuracy.png", dpi=100)


def main():
    warnings.simplefilter("ignore", ConvergenceWarning)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--diagnostic", action="store_true", help="the hinge-loss models without the label graph")
    add_report_only(parser)
    args = parse_args(parser)
    if args.report_only:  # both tables and the figure from the saved json, no fitting
        report(load_json(RESULTS / "dlpw_accuracy.json"))
        diagnostic_report(load_json(RESULTS / "dlpw_accuracy_diagnostic.json"))
        return finish()
    if args.diagnostic:
        diagnostic()
        return
    results = {name: evaluate(name) for name in ("yeast", "scene")}
    results["speed"] = yeast_speed_and_memory()
    save_json(RESULTS / "dlpw_accuracy.json", results)
    report(load_json(RESULTS / "dlpw_accuracy.json"))


def report(results):
    """The table and figure of the measured (or saved) results."""
    plot(results)
    lines = ["# DLPW accuracy on the official MULAN test splits", "",
             "C by 3-fold CV on the training part only, per metric (the Hamming column uses the C that minimised "
             "CV Hamming loss, the subset column the C that maximised CV subset accuracy); standardised features.",
             "", "| set | method | Hamming loss (C) | subset accuracy (C) | goal (Hamming <= / subset >=) |",
             "|---|---|---|---|---|"]
    for name in ("yeast", "scene"):
        for method, row in results[name].items():
            goal = GOALS[name] if method == "DLPW" else ("", "")
            goal_cell = f"{goal[0]} / {goal[1]}" if method == "DLPW" else ""
            lines.append(f"| {name} | {method} | {row['hamming']['hamming']:.4f} ({row['hamming']['C']:g}) | "
                         f"{row['subset']['subset']:.4f} ({row['subset']['C']:g}) | {goal_cell} |")
    for name in ("yeast", "scene"):
        d = results[name]["DLPW"]
        lines.append(f"\n{name}: DLPW test predictions certified optimal: {d['hamming']['certified']:.1%} "
                     f"(Hamming model), {d['subset']['certified']:.1%} (subset model).")
        best_h = min(r["hamming"]["hamming"] for m, r in results[name].items() if m != "DLPW")
        best_s = max(r["subset"]["subset"] for m, r in results[name].items() if m != "DLPW")
        lines.append(f"{name}: goal 'at least as good as the best baseline': Hamming "
                     f"{'met' if d['hamming']['hamming'] <= best_h else 'NOT met'} "
                     f"({d['hamming']['hamming']:.4f} vs {best_h:.4f}), subset accuracy "
                     f"{'met' if d['subset']['subset'] >= best_s else 'NOT met'} ({d['subset']['subset']:.4f} vs "
                     f"{best_s:.4f}).")
    s = results["speed"]
    lines += ["", "Yeast fit (1500 x 103, 14 labels, 91 edges, the paper's C = 1 (C = 1/n), 50 epochs, R = 10):", "",
              "| epochs/s (float64 messages) | epochs/s (float32) | peak traced memory (MB) | message floats "
              "| messages (MB, float64) |", "|---|---|---|---|---|",
              f"| {s['epochs_per_s']:.1f} | {s['epochs_per_s_float32']:.1f} | {s['peak_MB']:.1f} | "
              f"{s['message_floats']:,} | {s['message_MB_float64']:.2f} |"]
    write_text(RESULTS / "dlpw_accuracy.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
