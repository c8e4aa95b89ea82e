"""The rule of DLPWClassifier(label_sets="auto"): decode over the training label sets, or any labelling (issue 36).

``label_sets="train"`` predicts only label sets seen in training (exact, as label powerset);
``"all"`` decodes any labelling by the LP relaxation. Which one wins depends on how often a new
sample's label set was never seen in training. Its Good-Turing estimate from the training labels
alone is the *missing mass*: the share of training samples whose label set occurs exactly once
(``missing_mass`` of ``sklearn_struct._dlpw_sets``, the criterion of ``label_sets="auto"``).

Protocol (training data only, 3 shuffled folds, seed 0): yeast and scene (MULAN's *training* parts;
their test parts are never read), generated sets spanning the missing mass from 0.04 to 1 (labels
from a linear model plus shared latent factors with label noise, ``make_many_labels`` of
``benchmarks/_lib/multilabel_data.py``, 8-24 labels, and ``make_multilabel_pairwise``, 12 and 16
labels), and the 50-label set of that script's cost table (``edges="tree"``, as there; every other
set on the default complete graph). Standardised features, ``DLPWClassifier`` at its defaults
otherwise. One fit per fold (training does not depend on ``label_sets``): its LP-MAP predictions
(``label_sets="all"``) and the best training label set under the same weights (``"train"``, scored
here from the public ``coef_``, ``intercept_`` and ``pairwise_``), each scored by Hamming loss and
subset accuracy on the held-out fold, beside the missing mass of the fold's training labels.

The threshold: the rule picks ``"all"`` on a fold when its training missing mass exceeds it; every
threshold between two consecutive observed missing masses is scored by the mean over the sets of
the rule's CV Hamming loss relative to the better decoding's and by its mean subset accuracy; the
thresholds within ``TOL`` of the best on both form a plateau, and the choice is its middle, rounded
to 0.05 (the package's ``MISSING_MASS_THRESHOLD``, recorded in the json at each run).

Run: ``python benchmarks/product/bench_dlpw_label_sets_rule.py [--report-only [--check]]`` (writes
results/dlpw_label_sets_rule/dlpw_label_sets_rule.{md,json}; rows cached per set, a rerun fits only the
missing ones; the md is rendered from the json only).
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
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import KFold  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import add_report_only, finish, load_json, parse_args, save_json, write_text  # noqa: E402
from _lib.internals import MISSING_MASS_THRESHOLD, missing_mass  # noqa: E402
from _lib.multilabel_data import make_many_labels  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from sklearn_struct import DLPWClassifier  # noqa: E402
from sklearn_struct.datasets import load_scene, load_yeast, make_multilabel_pairwise  # noqa: E402
from sklearn_struct.metrics import hamming_loss_multilabel, subset_accuracy  # noqa: E402

RESULTS = results_dir("dlpw_label_sets_rule")
JSON = RESULTS / "dlpw_label_sets_rule.json"
CV = KFold(3, shuffle=True, random_state=0)
THRESHOLD_KEY = "package threshold"  # DLPWClassifier's label_sets='auto' threshold when the json was last written
TOL = 5e-4  # of the mean relative Hamming loss and of the mean subset accuracy: the plateau of the threshold
# name -> (loader, DLPWClassifier keywords); generated: 1200 samples x 20 features
LATENT = [(8, 0.5), (10, 0.5), (12, 0.5), (12, 1.0), (16, 0.25), (16, 1.0), (20, 1.0), (24, 0.5)]
PAIRWISE = [(12, 0.5), (12, 1.0), (16, 0.5), (16, 1.0)]


def data_sets():
    out = {"yeast (train part)": (lambda: (load_yeast("train").data, load_yeast("train").target), {}),
           "scene (train part)": (lambda: (load_scene("train").data, load_scene("train").target), {})}
    for L, noise in LATENT:
        out[f"latent factors, {L} labels, noise {noise:g}"] = (
            lambda L=L, noise=noise: make_many_labels(1200, 20, L, noise=noise), {})
    for L, noise in PAIRWISE:
        out[f"pairwise model, {L} labels, noise {noise:g}"] = (
            lambda L=L, noise=noise: make_multilabel_pairwise(1200, n_features=20, n_labels=L, noise=noise,
                                                              random_state=0), {})
    out["50 labels (cost table's set), edges='tree'"] = (
        lambda: tuple(a[:2000] for a in make_many_labels(3000, 50, 50)), {"edges": "tree"})
    return out


def train_set_decoding(clf, X, sets):
    """The best of the label sets ``sets`` (K, L) under the fitted binary model ``clf``, from its public weights."""
    unary = np.einsum("nf,lsf->nls", X, clf.coef_) + clf.intercept_[None]  # (n, L, 2)
    L = sets.shape[1]
    scores = unary[:, np.arange(L)[:, None], sets.T].sum(axis=1)  # (n, K)
    e = clf.edges_
    scores += clf.pairwise_[np.arange(len(e))[:, None], sets[:, e[:, 0]].T, sets[:, e[:, 1]].T].sum(axis=0)[None]
    return sets[scores.argmax(axis=1)]


def run_set(load, kw):
    X, Y = load()
    folds = []
    for tr, te in CV.split(X):
        scaler = StandardScaler().fit(X[tr])
        Xtr, Xte = scaler.transform(X[tr]), scaler.transform(X[te])
        start = time.process_time()
        clf = DLPWClassifier(label_sets="all", **kw).fit(Xtr, Y[tr])
        fit_cpu = time.process_time() - start
        pred_all = clf.predict(Xte)
        pred_train = train_set_decoding(clf, Xte, np.unique(Y[tr], axis=0))
        folds.append({"missing_mass": missing_mass(Y[tr]), "n_sets": int(len(np.unique(Y[tr], axis=0))),
                      "fit_cpu_s": fit_cpu, "n_iter": int(clf.n_iter_),
                      "hamming": {"train": float(hamming_loss_multilabel(Y[te], pred_train)),
                                  "all": float(hamming_loss_multilabel(Y[te], pred_all))},
                      "subset": {"train": float(subset_accuracy(Y[te], pred_train)),
                                 "all": float(subset_accuracy(Y[te], pred_all))}})
    return {"n_samples": int(len(Y)), "n_labels": int(Y.shape[1]), "missing_mass": missing_mass(Y),
            "keywords": kw, "folds": folds}


def run(store):
    warnings.simplefilter("error", ConvergenceWarning)
    store[THRESHOLD_KEY] = {"value": MISSING_MASS_THRESHOLD}
    for name, (load, kw) in data_sets().items():
        if name in store:
            continue
        store[name] = run_set(load, kw)
        print(name, store[name]["missing_mass"], [(f["hamming"], f["subset"]) for f in store[name]["folds"]],
              flush=True)
        save_json(JSON, store)
    return store


def _sets(store):
    return {k: v for k, v in store.items() if k != THRESHOLD_KEY}


def rule_scores(store, threshold):
    """Per set: the rule's mean CV Hamming loss and subset accuracy (``"all"`` on a fold whose training
    missing mass exceeds ``threshold``)."""
    out = {}
    for name, r in _sets(store).items():
        pick = ["all" if f["missing_mass"] > threshold else "train" for f in r["folds"]]
        out[name] = (np.mean([f["hamming"][p] for f, p in zip(r["folds"], pick)]),
                     np.mean([f["subset"][p] for f, p in zip(r["folds"], pick)]))
    return out


def choose_threshold(store):
    """The plateau of thresholds whose mean relative Hamming loss and mean subset accuracy are both within
    ``TOL`` of the best threshold's, as ``(lo, hi)`` fold missing masses, its round middle, and every cut's scores."""
    store = _sets(store)
    masses = sorted({f["missing_mass"] for r in store.values() for f in r["folds"]} | {0.0, 1.0})
    cuts = [(a + b) / 2 for a, b in zip(masses[:-1], masses[1:])]
    best_h = {n: min(np.mean([f["hamming"][m] for f in r["folds"]]) for m in ("train", "all"))
              for n, r in store.items()}
    best_s = {n: max(np.mean([f["subset"][m] for f in r["folds"]]) for m in ("train", "all"))
              for n, r in store.items()}
    rows = []
    for c in cuts:
        s = rule_scores(store, c)
        rows.append((float(np.mean([s[n][0] / best_h[n] for n in store])),
                     float(np.mean([s[n][1] - best_s[n] for n in store])), c))
    h_best, s_best = min(r[0] for r in rows), max(r[1] for r in rows)
    good = [i for i, r in enumerate(rows) if r[0] <= h_best + TOL and r[1] >= s_best - TOL]
    lo, hi = masses[good[0]], masses[good[-1] + 1]
    return lo, hi, round((lo + hi) / 2 / 0.05) * 0.05, rows


def write_md(store):
    lo, hi, pick, rows = choose_threshold(store)
    lines = ["# DLPWClassifier(label_sets='auto'): the missing-mass rule, 3-fold CV on training data only", "",
             "*Missing mass*: the Good-Turing estimate of the probability that a new sample's label set was never "
             "seen in training, the share of training samples whose label set occurs once (whole set; per fold in "
             "the rule). Standardised features, `DLPWClassifier()` defaults (complete graph, C = 0.001; the 50-label "
             "set on `edges='tree'`); one fit per fold, decoded both ways. Generated: 1200 x 20 (latent factors: "
             "`make_many_labels`' model with the given label noise; pairwise model: `make_multilabel_pairwise`).", "",
             "| set | labels | missing mass | distinct sets (fold) | Hamming, train | Hamming, all | subset acc, "
             "train | subset acc, all | better decoding (Hamming) | fit CPU s (fold) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    sets = _sets(store)
    order = sorted(sets, key=lambda n: sets[n]["missing_mass"])
    for name in order:
        r = sets[name]
        f = r["folds"]
        h = {m: np.mean([x["hamming"][m] for x in f]) for m in ("train", "all")}
        s = {m: np.mean([x["subset"][m] for x in f]) for m in ("train", "all")}
        better = "train" if h["train"] < h["all"] else "all" if h["all"] < h["train"] else "tie"
        lines.append(f"| {name} | {r['n_labels']} | {r['missing_mass']:.3f} | "
                     f"{np.mean([x['n_sets'] for x in f]):.0f} | {h['train']:.4f} | {h['all']:.4f} | "
                     f"{s['train']:.4f} | {s['all']:.4f} | {better} | {np.mean([x['fit_cpu_s'] for x in f]):.1f} |")
    h_best, s_best = min(r[0] for r in rows), max(r[1] for r in rows)
    lines += ["", "The rule on each fold: `'all'` when the fold's training missing mass exceeds the threshold. Over "
              "the thresholds between consecutive fold missing masses, the least mean Hamming loss relative to each "
              f"set's better decoding is {h_best:.5f} (1 = always the better one) and the best mean subset accuracy "
              f"{s_best:+.5f} against the better one. Thresholds from {lo:.3f} to {hi:.3f} are within {TOL:g} of both; "
              f"their round middle: **{pick:.2f}** (the package's `label_sets='auto'` threshold when the json was "
              f"written: {store.get(THRESHOLD_KEY, {}).get('value', 'none')}).", ""]
    for t in (0.0, 0.1, 0.2, 0.3, 0.5, 1.0):
        s = rule_scores(store, t)
        lines.append(f"- threshold {t:g}: mean Hamming " + f"{np.mean([v[0] for v in s.values()]):.4f}, mean subset "
                     f"accuracy {np.mean([v[1] for v in s.values()]):.4f}"
                     + (" (always 'train')" if t == 1.0 else " (always 'all')" if t == 0.0 else ""))
    write_text(RESULTS / "dlpw_label_sets_rule.md", "\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_report_only(parser)
    args = parse_args(parser)
    if not args.report_only:
        RESULTS.mkdir(parents=True, exist_ok=True)
        run(load_json(JSON) if JSON.exists() else {})
    write_md(load_json(JSON))
    return finish()


if __name__ == "__main__":
    main()
