"""Which label graph DLPWClassifier should use by default: complete graph or Chow-Liu tree, by label count (issue 36).

The complete graph has ``L (L - 1) / 2`` edges, so a DLPW epoch costs ``O(L^2)``; the Chow-Liu tree
(``edges="tree"``) has ``L - 1`` and its loss-augmented MAP is solved exactly. For each data set:
yeast and scene (MULAN's *training* parts only, 14 and 6 labels) and generated sets with 10 to 50
labels (``_lib.multilabel_data.make_many_labels``: 2,000 samples, 50 features, labels correlated
through 5 latent factors), standardised features, ``DLPWClassifier`` at its defaults but for
``edges`` (and ``label_sets="all"`` on the generated sets, whose label sets are nearly all distinct,
``"train"`` on yeast and scene), 3-fold CV (shuffled, seed 0): subset accuracy, Hamming loss and the
mean fit CPU per fold. One BLAS thread.

Run: ``python benchmarks/product/bench_dlpw_edges_rule.py [--report-only [--check]]`` (writes
results/dlpw_edges_rule/dlpw_edges_rule.{md,json}; rows cached, a rerun fits only the missing ones; the
table is rendered from the json only).
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import KFold  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.multilabel_data import make_many_labels  # noqa: E402
from _lib.report import add_report_only, finish, load_json, parse_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from sklearn_struct import DLPWClassifier  # noqa: E402
from sklearn_struct.datasets import load_scene, load_yeast  # noqa: E402

RESULTS = results_dir("dlpw_edges_rule")
JSON = RESULTS / "dlpw_edges_rule.json"
GRAPHS = {"complete": "complete", "tree": "tree"}
GENERATED_LABELS = (10, 20, 30, 50)


def data_sets():
    """name -> (X, Y, label_sets)."""
    out = {}
    for name, fn in (("yeast (train part)", load_yeast), ("scene (train part)", load_scene)):
        d = fn("train")
        out[name] = (d.data, d.target, "train")
    for L in GENERATED_LABELS:
        X, Y = make_many_labels(2000, n_features=50, n_labels=L, random_state=0)
        out[f"generated, {L} labels"] = (X, Y, "all")
    return out


def cv_row(X, Y, est):
    """3-fold CV: subset accuracy, Hamming loss, mean fit CPU seconds, mean epochs."""
    subset, hamming, cpu, epochs = [], [], [], []
    for train, test in KFold(3, shuffle=True, random_state=0).split(X):
        pipe = clone(est)
        start = time.process_time()
        pipe.fit(X[train], Y[train])
        cpu.append(time.process_time() - start)
        P = pipe.predict(X[test])
        subset.append(float(np.all(P == Y[test], axis=1).mean()))
        hamming.append(float((P != Y[test]).mean()))
        epochs.append(pipe[-1].n_iter_)
    return {"subset": float(np.mean(subset)), "hamming": float(np.mean(hamming)), "fit_cpu_s": float(np.mean(cpu)),
            "epochs": float(np.mean(epochs))}


def run(store):
    """Fit the missing rows of ``store`` (cached in the json after each)."""
    warnings.simplefilter("error", ConvergenceWarning)
    for name, (X, Y, label_sets) in data_sets().items():
        for graph, edges in GRAPHS.items():
            key = f"{name}|{graph}"
            if key in store:
                continue
            est = make_pipeline(StandardScaler(), DLPWClassifier(edges=edges, label_sets=label_sets))
            store[key] = {"n_labels": int(Y.shape[1]), "label_sets": label_sets, **cv_row(X, Y, est)}
            print(key, store[key], flush=True)
            save_json(JSON, store)
    return store


def write_md(store):
    """The md from the saved results ``store`` only."""
    names = list(dict.fromkeys(k.split("|")[0] for k in store))
    lines = ["# DLPWClassifier's label graph by label count: complete graph against the Chow-Liu tree", "",
             "3-fold CV on training data only (yeast, scene: MULAN training parts, `label_sets=\"train\"`; generated: "
             "`make_many_labels`, 2,000 x 50, `label_sets=\"all\"`), standardised features, other settings at their "
             "defaults. Fit CPU: mean per fold, one BLAS thread. *tree / complete*: the ratio of the tree's to the "
             "complete graph's.", "",
             "| data | labels | complete: subset acc ↑ | tree: subset acc ↑ | complete: Hamming ↓ | tree: Hamming ↓ | "
             "complete: fit CPU s | tree: fit CPU s | CPU tree / complete |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        c, t = store.get(f"{name}|complete"), store.get(f"{name}|tree")
        if c is None or t is None:
            continue
        lines.append(f"| {name} | {c['n_labels']} | {c['subset']:.4f} | {t['subset']:.4f} | {c['hamming']:.4f} | "
                     f"{t['hamming']:.4f} | {c['fit_cpu_s']:.2f} | {t['fit_cpu_s']:.2f} | "
                     f"{t['fit_cpu_s'] / c['fit_cpu_s']:.3f} |")
    write_text(RESULTS / "dlpw_edges_rule.md", "\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_report_only(parser)
    args = parse_args(parser)
    if not args.report_only:
        run(load_json(JSON) if JSON.exists() else {})
    write_md(load_json(JSON))
    return finish()


if __name__ == "__main__":
    main()
