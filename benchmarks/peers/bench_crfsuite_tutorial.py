"""sklearn-crfsuite's tutorial end to end on CoNLL-2000: ``sklearn_struct.crfsuite`` against sklearn-crfsuite.

The tutorial (sklearn-crfsuite's docs/CoNLL2002.ipynb) on CoNLL-2000 chunking (CoNLL-2002 is not
in the shared data): its ``word2features``, its model ``CRF(algorithm='lbfgs', c1=0.1, c2=0.1,
max_iterations=100, all_possible_transitions=True)``, its score (``flat_f1_score`` weighted over
all labels but 'O'; conlleval chunk F1 is reported too), its ``RandomizedSearchCV`` over
``c1 ~ expon(0.5)``, ``c2 ~ expon(0.05)`` with the same scorer (``N_ITER`` candidates and ``CV``
folds instead of 50 and 3, to fit this machine; the same candidates for both sides), and how
sparse ``c1`` makes the model (``num_attributes_``, non-zero state weights) for a few values of c1.

Both sides run in this one process on one thread (CRFsuite is single-threaded; numba is set to
one thread) and are timed end to end: ``fit`` on the feature dicts, vectorising included.
Goals (issue #21): F1 at least crfsuite's - 0.1 point at the same settings, fit and search at
most 0.5x crfsuite's time.
Run: ``SKLEARN_STRUCT_DATA=../shared/data nice -n 10 python benchmarks/peers/bench_crfsuite_tutorial.py``.
"""

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numba
import numpy as np
import scipy.stats
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import make_scorer
from sklearn.model_selection import RandomizedSearchCV

import sklearn_struct.crfsuite as ours_crfsuite
from sklearn_struct.datasets import load_conll2000
from sklearn_struct.metrics import chunk_f1_score

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import (add_report_only, finish, load_json, parse_args, save_figure, save_json,  # noqa: E402
                         write_text)
from _lib.results import results_dir  # noqa: E402
from _lib.crf_tutorial import (tutorial_sent2features as sent2features, tutorial_sent2labels as sent2labels)  # noqa: E402  (the tutorial's feature code)

RESULTS = results_dir("crfsuite_tutorial")
SETTINGS = dict(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100, all_possible_transitions=True)
N_ITER, CV, SEED = 3, 2, 0
C1_VALUES = [0.0, 0.1, 0.5, 2.0]  # 0.1 is the tutorial fit itself


def timed(fn):
    """``(fn(), CPU seconds of this process)``: one thread each, so CPU time is the fair measure on a
    shared machine (wall time is reported next to it)."""
    start, wall = time.process_time(), time.perf_counter()
    out = fn()
    timed.wall = time.perf_counter() - wall
    return out, time.process_time() - start


def sents(subset):
    data = load_conll2000(subset)
    return [[(tok["word"], tok["pos"], lab) for tok, lab in zip(seq, labels)]
            for seq, labels in zip(data.sequences, data.labels)]


def tutorial_fit(module, X_train, y_train, X_test, y_test, labels):
    crf = module.CRF(**SETTINGS)
    _, fit_s = timed(lambda: crf.fit(X_train, y_train))
    wall_s = timed.wall
    y_pred = crf.predict(X_test)
    f1 = module.metrics.flat_f1_score(y_test, y_pred, average="weighted", labels=labels)
    chunk = chunk_f1_score([np.asarray(s) for s in y_test], [np.asarray(s) for s in y_pred])
    return {"fit_s": fit_s, "fit_wall_s": wall_s, "flat_f1": float(f1), "chunk_f1": float(chunk), "num_attributes": crf.num_attributes_,
            "state_weights": len(crf.state_features_), "transition_weights": len(crf.transition_features_),
            "iterations": len(crf.training_log_.iterations),
            "final_objective": float(crf.training_log_.last_iteration["loss"])}  # the same objective on both sides


def search(module, X_train, y_train, X_test, y_test, labels):
    crf = module.CRF(algorithm="lbfgs", max_iterations=100, all_possible_transitions=True)
    params_space = {"c1": scipy.stats.expon(scale=0.5), "c2": scipy.stats.expon(scale=0.05)}
    f1_scorer = make_scorer(module.metrics.flat_f1_score, average="weighted", labels=labels)
    rs = RandomizedSearchCV(crf, params_space, cv=CV, n_jobs=1, n_iter=N_ITER, scoring=f1_scorer, random_state=SEED)
    _, seconds = timed(lambda: rs.fit(X_train, y_train))
    y_pred = rs.best_estimator_.predict(X_test)
    return {"search_s": seconds, "search_wall_s": timed.wall, "best_params": {k: float(v) for k, v in rs.best_params_.items()},
            "best_cv_f1": float(rs.best_score_),
            "test_f1": float(module.metrics.flat_f1_score(y_test, y_pred, average="weighted", labels=labels)),
            "candidates": [{k: float(v) for k, v in p.items()} for p in rs.cv_results_["params"]],
            "cv_f1": [float(s) for s in rs.cv_results_["mean_test_score"]]}


def sparsity(module, X_train, y_train, tutorial):
    rows = []
    for c1 in C1_VALUES:
        if c1 == SETTINGS["c1"]:
            rows.append({"c1": c1, "num_attributes": tutorial["num_attributes"], "state_weights": tutorial["state_weights"]})
            continue
        crf = module.CRF(**dict(SETTINGS, c1=c1)).fit(X_train, y_train)
        rows.append({"c1": c1, "num_attributes": crf.num_attributes_, "state_weights": len(crf.state_features_)})
    return rows


def main(stages=("tutorial", "sparsity", "search")):
    import sklearn_crfsuite
    import sklearn_crfsuite.metrics  # noqa: F401  (the tutorial imports it as `from sklearn_crfsuite import metrics`)

    # the tutorial's weighted F1 over all labels but 'O' includes labels a CV fold may lack (scikit-learn warns)
    warnings.filterwarnings("ignore", category=UndefinedMetricWarning)

    sides = {"sklearn_struct.crfsuite": ours_crfsuite, "sklearn-crfsuite 0.5": sklearn_crfsuite}
    train, test = sents("train"), sents("test")
    X_train, y_train = [sent2features(s) for s in train], [sent2labels(s) for s in train]
    X_test, y_test = [sent2features(s) for s in test], [sent2labels(s) for s in test]
    labels = sorted({label for s in y_train for label in s} - {"O"})
    numba.set_num_threads(1)
    ours_crfsuite.CRF(max_iterations=3, c1=0.1).fit(X_train[:30], y_train[:30]).predict(X_test[:5])  # numba cache warm

    out = {"settings": SETTINGS, "n_iter": N_ITER, "cv": CV, "c1_values": C1_VALUES, "threads": 1,
           "machine": f"{platform.processor() or platform.machine()}, numba {numba.__version__}",
           "n_train": len(X_train), "n_test": len(X_test), "tutorial": {}, "search": {}, "sparsity": {}}
    if "tutorial" not in stages:  # a later stage alone: add it to the saved results of the earlier ones
        out = json.loads((RESULTS / "crfsuite_tutorial.json").read_text())
    for name, module in sides.items() if "tutorial" in stages else ():
        out["tutorial"][name] = tutorial_fit(module, X_train, y_train, X_test, y_test, labels)
        print(name, out["tutorial"][name], flush=True)
    save(out)
    for name, module in sides.items() if "sparsity" in stages else ():
        out["sparsity"][name] = sparsity(module, X_train, y_train, out["tutorial"][name])
        print(name, out["sparsity"][name], flush=True)
    save(out)
    search_results = {name: search(module, X_train, y_train, X_test, y_test, labels)
                      for name, module in (sides.items() if "search" in stages else ())}
    if search_results:
        if "tutorial" not in stages:  # re-read: the earlier stages may have been saved meanwhile
            out = json.loads((RESULTS / "crfsuite_tutorial.json").read_text())
        out["search"] = search_results
        print({n: {k: v for k, v in r.items() if k != "candidates"} for n, r in search_results.items()}, flush=True)
        save(out)


def save(out):
    """Write what is measured so far (the search, the longest part, comes last)."""
    RESULTS.mkdir(exist_ok=True)
    save_json(RESULTS / "crfsuite_tutorial.json", out)
    report(load_json(RESULTS / "crfsuite_tutorial.json"))


def report(out):
    """The table (and figure) from the saved json."""
    write_text(RESULTS / "crfsuite_tutorial.md", markdown(out))
    if len(out["sparsity"]) == 2:
        plot(out, RESULTS / "crfsuite_tutorial.png")


def markdown(out):
    ours, theirs = "sklearn_struct.crfsuite", "sklearn-crfsuite 0.5"
    t, s = out["tutorial"], out["search"]
    lines = [
        "# sklearn-crfsuite's tutorial on CoNLL-2000: sklearn_struct.crfsuite vs sklearn-crfsuite",
        "",
        f"`benchmarks/peers/bench_crfsuite_tutorial.py`; {out['n_train']} training / {out['n_test']} test sentences, "
        f"the tutorial's `word2features` and `CRF({', '.join(f'{k}={v!r}' for k, v in out['settings'].items())})`; "
        f"one thread each, same process ({out['machine']}). Flat F1: `flat_f1_score(average='weighted')` over all "
        "labels but 'O' (the tutorial's score); chunk F1: conlleval.",
        "",
        "## The tutorial's model",
        "",
        "Times are CPU seconds of the process (one thread each, so the fair measure on a shared machine); "
        "wall seconds in brackets.",
        "",
        "| model | flat F1 | chunk F1 | fit CPU s (wall) | L-BFGS iterations | attributes | state weights | "
        "transition weights |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in (ours, theirs):
        r = t[name]
        lines.append(f"| {name} | {r['flat_f1']:.4f} | {100 * r['chunk_f1']:.2f} | {r['fit_s']:.1f} ({r['fit_wall_s']:.0f}) | "
                     f"{r['iterations']} | {r['num_attributes']} | {r['state_weights']} | {r['transition_weights']} |")
    lines += ["", f"Fit time ratio (ours / crfsuite): **{t[ours]['fit_s'] / t[theirs]['fit_s']:.2f}**; "
              f"flat F1 difference (ours - crfsuite): **{t[ours]['flat_f1'] - t[theirs]['flat_f1']:+.4f}**."]
    if "final_objective" in t[ours]:
        lines += ["", f"Objective after the last iteration (negative log-likelihood + c1 |w|_1 + c2 ||w||^2, the "
                  f"same function on both sides): ours {t[ours]['final_objective']:.1f}, crfsuite "
                  f"{t[theirs]['final_objective']:.1f}."]
    if len(out["sparsity"]) == 2:
        lines += ["", "## Sparsity from c1 (c2 = 0.1, 100 iterations)", "",
                  "| c1 | attributes (ours) | attributes (crfsuite) | state weights (ours) | state weights (crfsuite) |",
                  "|---|---|---|---|---|"]
        for a, b in zip(out["sparsity"][ours], out["sparsity"][theirs]):
            lines.append(f"| {a['c1']} | {a['num_attributes']} | {b['num_attributes']} | {a['state_weights']} | "
                         f"{b['state_weights']} |")
    if len(s) == 2:
        lines += ["", f"## RandomizedSearchCV over c1, c2 (n_iter={out['n_iter']}, cv={out['cv']}, n_jobs=1; "
                  "the tutorial: 50 and 3)", "",
                  "| model | search CPU s (wall) | best c1 | best c2 | best CV F1 | test F1 of best |",
                  "|---|---|---|---|---|---|"]
        for name in (ours, theirs):
            r = s[name]
            lines.append(f"| {name} | {r['search_s']:.0f} ({r['search_wall_s']:.0f}) | {r['best_params']['c1']:.4f} | "
                         f"{r['best_params']['c2']:.4f} | {r['best_cv_f1']:.4f} | {r['test_f1']:.4f} |")
        lines += ["", f"Search time ratio (ours / crfsuite): **{s[ours]['search_s'] / s[theirs]['search_s']:.2f}**; "
                  "the same candidates (same seed) on both sides."]
    return "\n".join(lines) + "\n"


def plot(out, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for (name, rows), color in zip(out["sparsity"].items(), ("C0", "C1")):
        c1 = [max(r["c1"], 0.01) for r in rows]
        ax.plot(c1, [r["state_weights"] for r in rows], "o-", color=color, label=f"{name}: non-zero state weights")
        ax.plot(c1, [r["num_attributes"] for r in rows], "s--", color=color, label=f"{name}: attributes")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("c1 (0 drawn at 0.01)")
    ax.set_ylabel("count")
    ax.set_title("CoNLL-2000, tutorial features: sparsity from L1")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stages", type=lambda v: v.split(","), default=("tutorial", "sparsity", "search"),
                        help="e.g. `search`: run the search alone and add it to the saved results")
    add_report_only(parser)
    args = parse_args(parser)
    if args.report_only:
        report(load_json(RESULTS / "crfsuite_tutorial.json"))
        finish()
    else:
        main(args.stages)
