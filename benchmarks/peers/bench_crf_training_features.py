"""CoNLL-2000 and GROBID citations: ChainCRF's training features of issue #35 (partial_fit, sample / class weights).

Data: CoNLL-2000 (official split; the sklearn-crfsuite tutorial's ``word2features``, as in
``bench_crf_algorithms.py``) and GROBID citations (fold 0 of ``bench_citations.py``'s 5-fold
split, its citation features, the 13 fields as BIO chunks), vectorised once by
:class:`~sklearn_struct.preprocessing.SequenceVectorizer`; all transitions, CRFsuite's model
(``fit_intercept=False``), numba on one thread; chunk F1 by conlleval's rules on the test part.
CPU seconds (the machine is shared), quoted as ratios.

(4) ``partial_fit`` over 10 batches (consecutive tenths of the training set; one call per batch
    is one epoch over it) against one ``fit`` on all, for the online algorithms: ``E`` passes
    over the 10 batches against ``fit(max_iter=E)``, for E = 1 and E = 10. Goal: within 0.5 F1.
    The tenths of the training set in its file order are no random batches (CoNLL-2000 runs
    through WSJ sections, GROBID's references come grouped by the paper they were taken from),
    and one pass of SGD or a perceptron favours the last batches, so E = 1 is also run on
    ``ORDERS`` random partitions (the training sequences permuted with seed r = 0, 1, ..., both
    ``fit`` and the 10 ``partial_fit`` batches on that permutation): one pass also depends on the
    visiting order by several tenths of F1, hence the means.
(5a) ``sample_weight``: each training sentence gets an integer weight 1 or 2 at random, against
    the training set with the weight-2 sentences duplicated; L-BFGS (c2=1, CRFsuite's stopping
    rule): the largest weight difference and both F1 (goal: the same model). The averaged
    perceptron (10 epochs) too, where the visiting order differs (a copy is a separate update).
(5b) ``class_weight="balanced"`` against none (L-BFGS, c2=1): overall F1 and the token recall of
    the rare labels (under 1% of the training tokens).

Run: ``SKLEARN_STRUCT_DATA=../shared/data python benchmarks/peers/bench_crf_training_features.py
[--dataset grobid] [--parts partial_fit sample_weight class_weight] [--quick]`` (``--quick``: 1,500
training sequences, into ``crf_training_features_<dataset>_quick.json``, left out of the md);
``--report-only`` rewrites the md from the saved json (``crf_training_features_<dataset>.json``;
``--check``: write nothing, exit 1 if the md would change; ``benchmarks/_lib/report.py``).
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numba
import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.results import results_dir  # noqa: E402
from _lib.crf_tutorial import sent2features  # noqa: E402  (the tutorial's features, written once)
from _lib import citations  # noqa: E402
from _lib.report import add_report_only, finish, load_json, parse_args, save_json, write_text  # noqa: E402

from sklearn_struct import ChainCRF  # noqa: E402
from sklearn_struct.datasets import load_conll2000  # noqa: E402
from sklearn_struct.metrics import chunk_f1_score  # noqa: E402
from sklearn_struct.preprocessing import SequenceVectorizer  # noqa: E402

RESULTS = results_dir("crf_training_features")
ONLINE = ["l2sgd", "ap", "pa", "arow"]
BASE = {"all_possible_transitions": True, "fit_intercept": False}
ORDERS = 5
DATASETS = {"conll2000": "CoNLL-2000 (official split)",
            "grobid": "GROBID citations (fold 0 of 5, fields as BIO chunks)"}


def cpu(fn):
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


def f1(y_test, pred):
    return 100 * chunk_f1_score(y_test, pred)


def quiet_fit(crf, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return crf.fit(*args, **kwargs)


def _passes(params, X, y, bounds, classes, epochs):
    part = ChainCRF(**params)
    for _ in range(epochs):
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            part.partial_fit(X[lo:hi], y[lo:hi], classes=classes)
    return part


def _shuffled(X, y, seed):
    """The training sequences permuted with ``seed``: its tenths are then batches drawn at random."""
    perm = np.random.RandomState(seed).permutation(len(X))
    return [X[i] for i in perm], [y[i] for i in perm]


def part_partial_fit(X, y, X_test, y_test, classes):
    rows, orders = [], []
    bounds = np.linspace(0, len(X), 11).astype(int)
    for algorithm in ONLINE:
        params = dict(BASE, algorithm=algorithm, c2=1.0)
        for epochs in (1, 10):
            full, full_s = cpu(lambda: quiet_fit(ChainCRF(**params, max_iter=epochs), X, y))
            part, part_s = cpu(lambda: _passes(params, X, y, bounds, classes, epochs))
            a, b = f1(y_test, full.predict(X_test)), f1(y_test, part.predict(X_test))
            rows.append({"algorithm": algorithm, "epochs": epochs, "fit_f1": a, "partial_fit_f1": b,
                         "difference": b - a, "within_0.5": bool(abs(b - a) <= 0.5), "cpu_ratio": part_s / full_s,
                         "fit_cpu_s": full_s})
            print(rows[-1], flush=True)
        fits, parts = [], []
        for seed in range(ORDERS):
            Xs, ys = _shuffled(X, y, seed)
            fits.append(f1(y_test, quiet_fit(ChainCRF(**params, max_iter=1), Xs, ys).predict(X_test)))
            parts.append(f1(y_test, _passes(params, Xs, ys, bounds, classes, 1).predict(X_test)))
        diff = float(np.mean(parts) - np.mean(fits))
        orders.append({"algorithm": algorithm, "fit_f1": fits, "partial_fit_f1": parts, "mean_difference": diff,
                       "within_0.5": bool(abs(diff) <= 0.5)})
        print(orders[-1], flush=True)
    return rows, orders


def part_sample_weight(X, y, X_test, y_test, rng):
    weights = rng.randint(1, 3, size=len(X))
    X_dup = [x for x, k in zip(X, weights) for _ in range(k)]
    y_dup = [v for v, k in zip(y, weights) for _ in range(k)]
    rows = []
    for name, params in (("lbfgs c2=1 (to convergence)", dict(BASE, c2=1.0)),
                         ("ap, 10 epochs", dict(BASE, algorithm="ap", max_iter=10))):
        plain, plain_s = cpu(lambda: quiet_fit(ChainCRF(**params), X, y))
        weighted, weighted_s = cpu(lambda: quiet_fit(ChainCRF(**params), X, y, sample_weight=weights))
        dup, dup_s = cpu(lambda: quiet_fit(ChainCRF(**params), X_dup, y_dup))
        diff = max(np.abs(weighted.coef_ - dup.coef_).max(), np.abs(weighted.transition_ - dup.transition_).max())
        scale = max(np.abs(dup.coef_).max(), np.abs(dup.transition_).max())
        rows.append({"setting": name, "max_abs_weight_difference": float(diff), "max_abs_weight": float(scale),
                     "weighted_iterations": int(weighted.n_iter_), "duplicated_iterations": int(dup.n_iter_),
                     "weighted_f1": f1(y_test, weighted.predict(X_test)),
                     "duplicated_f1": f1(y_test, dup.predict(X_test)), "plain_f1": f1(y_test, plain.predict(X_test)),
                     "cpu_weighted_over_plain": weighted_s / plain_s,
                     "cpu_weighted_over_duplicated": weighted_s / dup_s})
        print(rows[-1], flush=True)
    return rows, int(weights.sum())


def part_class_weight(X, y, X_test, y_test, classes):
    flat = np.concatenate(y)
    share = {c: float(np.mean(flat == c)) for c in classes}
    rare = [c for c in classes if 0 < share[c] < 0.01]
    truth = np.concatenate(y_test)
    out = {}
    times = {}
    for name, cw in (("none", None), ("balanced", "balanced")):
        crf, times[name] = cpu(lambda: quiet_fit(ChainCRF(**BASE, c2=1.0, class_weight=cw), X, y))
        pred = crf.predict(X_test)
        flat_pred = np.concatenate(pred)
        recall = {c: float(np.mean(flat_pred[truth == c] == c)) if np.any(truth == c) else None for c in rare}
        out[name] = {"f1": f1(y_test, pred), "recall": recall, "iterations": int(crf.n_iter_)}
        print(name, out[name], flush=True)
    return {"rare_labels": rare, "train_share": {c: share[c] for c in rare}, "results": out,
            "cpu_balanced_over_none": times["balanced"] / times["none"]}


def _dataset_lines(results):
    lines = [f"## {DATASETS[results['dataset']]}: {results['n_train']} training / {results['n_test']} test "
             f"sequences", "", f"Features: {results['features']}.", ""]
    lines += _partial_fit_lines(results) if "partial_fit" in results else []
    lines += _sample_weight_lines(results) if "sample_weight" in results else []
    lines += _class_weight_lines(results) if "class_weight" in results else []
    return lines


def _partial_fit_lines(results):
    lines = ["### (4) partial_fit over 10 batches against one fit on all (goal: within 0.5 F1)", "",
             "Batches: the consecutive tenths of the training set in its file order.", "",
             "| algorithm | epochs (passes) | fit F1 | partial_fit F1 | difference | within 0.5 | CPU partial / fit |",
             "|---|---|---|---|---|---|---|"]
    for r in results["partial_fit"]:
        lines.append(f"| {r['algorithm']} | {r['epochs']} | {r['fit_f1']:.2f} | {r['partial_fit_f1']:.2f} | "
                     f"{r['difference']:+.2f} | {'yes' if r['within_0.5'] else '**no**'} | {r['cpu_ratio']:.2f} |")
    if "partial_fit_orders" in results:
        lines += ["", f"One pass, batches drawn at random: the training set permuted with "
                  f"{len(results['partial_fit_orders'][0]['fit_f1'])} seeds, `fit` and the 10 `partial_fit` batches "
                  "(its tenths) on each permutation; mean and spread (min - max) of the F1.", "",
                  "| algorithm | fit F1 mean (min - max) | partial_fit F1 mean (min - max) | mean difference | "
                  "within 0.5 |", "|---|---|---|---|---|"]
        for r in results["partial_fit_orders"]:
            a, b = np.array(r["fit_f1"]), np.array(r["partial_fit_f1"])
            lines.append(f"| {r['algorithm']} | {a.mean():.2f} ({a.min():.2f} - {a.max():.2f}) | {b.mean():.2f} "
                         f"({b.min():.2f} - {b.max():.2f}) | {r['mean_difference']:+.2f} | "
                         f"{'yes' if r['within_0.5'] else '**no**'} |")
    return lines + [""]


def _sample_weight_lines(results):
    lines = [f"### (5a) sample_weight (weights 1 or 2; {results['n_duplicated']} sequences when duplicated) "
             "against duplicating the sequences", "",
             "| setting | max abs weight diff (largest weight) | iterations weighted / duplicated | F1 weighted | "
             "F1 duplicated | F1 unweighted | CPU weighted / unweighted | CPU weighted / duplicated |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results["sample_weight"]:
        lines.append(f"| {r['setting']} | {r['max_abs_weight_difference']:.2e} ({r['max_abs_weight']:.2f}) | "
                     f"{r['weighted_iterations']} / {r['duplicated_iterations']} | {r['weighted_f1']:.2f} | "
                     f"{r['duplicated_f1']:.2f} | {r['plain_f1']:.2f} | {r['cpu_weighted_over_plain']:.2f} | "
                     f"{r['cpu_weighted_over_duplicated']:.2f} |")
    return lines + [""]


def _class_weight_lines(results):
    cw = results["class_weight"]
    lines = ["### (5b) class_weight='balanced' against none (L-BFGS, c2=1)", "",
             "Each sequence weighted by the mean of its tokens' balanced label weights. Token recall of the labels "
             "under 1% of the training tokens:", "",
             "| label | train share | recall (none) | recall (balanced) |", "|---|---|---|---|"]
    none, bal = cw["results"]["none"], cw["results"]["balanced"]
    for c in cw["rare_labels"]:
        r0, r1 = none["recall"][c], bal["recall"][c]
        fmt = lambda v: "n/a (not in test)" if v is None else f"{100 * v:.1f}"  # noqa: E731
        lines.append(f"| {c} | {100 * cw['train_share'][c]:.2f}% | {fmt(r0)} | {fmt(r1)} |")
    lines += ["", f"Chunk F1: {none['f1']:.2f} (none), {bal['f1']:.2f} (balanced); iterations {none['iterations']} / "
                  f"{bal['iterations']}; CPU balanced / none {cw['cpu_balanced_over_none']:.2f}.", ""]
    return lines


def save(results, quick):
    """Store the data set's json (the parts run so far) and rewrite the md from every data set's json."""
    stem = f"crf_training_features_{results['dataset']}" + ("_quick" if quick else "")
    save_json(RESULTS / f"{stem}.json", results)
    write()


def write():
    """The md from every data set's saved json only (the ``_quick`` ones left out)."""
    lines = ["# partial_fit, sample_weight, class_weight on CoNLL-2000 and GROBID citations (issue #35)", "",
             "All transitions, CRFsuite's model, one thread; chunk F1 on the test part. Ratios of CPU seconds.", ""]
    for dataset in DATASETS:
        path = RESULTS / f"crf_training_features_{dataset}.json"
        if path.exists():
            lines += _dataset_lines(load_json(path))
    write_text(RESULTS / "crf_training_features.md", "\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    print(f"wrote {RESULTS / 'crf_training_features.md'}")


FEATURES = {"conll2000": "the sklearn-crfsuite tutorial's word2features",
            "grobid": "bench_citations.py's citation features (min_freq 2)"}


def load(dataset, quick):
    """X, y, X_test, y_test (X vectorised), the training part cut to 1,500 sequences with ``quick``."""
    n_train = 1500 if quick else None
    if dataset == "grobid":
        X, y, X_test, y_test = citations.bio_split()
        return X[:n_train], y[:n_train], X_test, y_test
    train, test = load_conll2000("train"), load_conll2000("test")
    vectorizer = SequenceVectorizer()
    X = vectorizer.fit_transform([sent2features(s) for s in train.sequences[:n_train]])
    X_test = vectorizer.transform([sent2features(s) for s in test.sequences])
    return X, [np.asarray(v) for v in train.labels[:n_train]], X_test, [np.asarray(v) for v in test.labels]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=list(DATASETS), default="conll2000")
    parser.add_argument("--parts", nargs="+", choices=["partial_fit", "sample_weight", "class_weight"],
                        default=["partial_fit", "sample_weight", "class_weight"])
    parser.add_argument("--quick", action="store_true")
    add_report_only(parser)
    args = parse_args(parser)
    if args.report_only:
        write()
        return finish()
    X, y, X_test, y_test = load(args.dataset, args.quick)
    classes = np.unique(np.concatenate(y))
    numba.set_num_threads(1)
    for algorithm in ("lbfgs", *ONLINE):  # compile outside the timings
        quiet_fit(ChainCRF(algorithm=algorithm, max_iter=2), X[:30], y[:30], sample_weight=np.ones(30))
        ChainCRF(algorithm=algorithm).partial_fit(X[:30], y[:30], classes=classes) if algorithm != "lbfgs" else None
    stored = RESULTS / f"crf_training_features_{args.dataset}{'_quick' if args.quick else ''}.json"
    results = load_json(stored) if stored.exists() else {}
    results.update({"dataset": args.dataset, "n_train": len(X), "n_test": len(X_test),
                    "features": FEATURES[args.dataset]})
    if "partial_fit" in args.parts:
        results["partial_fit"], results["partial_fit_orders"] = part_partial_fit(X, y, X_test, y_test, classes)
        save(results, args.quick)
    if "sample_weight" in args.parts:
        rng = np.random.RandomState(0)
        results["sample_weight"], results["n_duplicated"] = part_sample_weight(X, y, X_test, y_test, rng)
        save(results, args.quick)
    if "class_weight" in args.parts:
        results["class_weight"] = part_class_weight(X, y, X_test, y_test, classes)
        save(results, args.quick)


if __name__ == "__main__":
    main()
