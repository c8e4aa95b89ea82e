"""CoNLL-2000 chunking: each CRFsuite training algorithm, ChainCRF against sklearn-crfsuite, one run.

Both sides get the sklearn-crfsuite tutorial's token features (its ``word2features``: bias,
lower-cased word, suffixes, case flags, POS and its prefix, the same for the neighbours,
BOS / EOS): sklearn-crfsuite as the feature dicts, ChainCRF as the CSR matrices
:class:`~sklearn_struct.preprocessing.SequenceVectorizer` makes of them. Each algorithm runs
with the same settings on both sides (CRFsuite's defaults unless listed), one thread each
(numba limited to one thread). Label bigrams: all transitions (the tutorial's setting). Ours
without the intercept (``fit_intercept=False``), so both fit CRFsuite's model.

Reported per algorithm: fit CPU seconds (wall seconds in brackets; the machine is shared, so
CPU time is the measure) and their ratio ours / crfsuite (issue #21's goal: <= 0.5), iterations, token accuracy and chunk F1 (conlleval rules) on the official test
split, and our ConvergenceWarnings (a default fit must converge without one).
Run: ``SKLEARN_STRUCT_DATA=../shared/data python benchmarks/peers/bench_crf_algorithms.py [--quick] [--rows 0,3]``
(``--quick``: the first 2,000 training sentences, into ``crf_algorithms_quick.md``; ``--rows``:
only these rows of ``RUNS``, into ``crf_algorithms_rows_0_3.md`` etc.).
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numba
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import ChainCRF
from sklearn_struct.datasets import load_conll2000
from sklearn_struct.metrics import chunk_f1_score, token_accuracy
from sklearn_struct.preprocessing import SequenceVectorizer
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import add_report_only, finish, load_json, load_saved, parse_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from _lib.crf_tutorial import sent2features  # noqa: E402

RESULTS = results_dir("crf_algorithms")
# (name, algorithm, shared settings in crfsuite's names)
RUNS = [
    ("lbfgs c1=0.1 c2=0.1, 100 iter (tutorial)", "lbfgs", {"c1": 0.1, "c2": 0.1, "max_iterations": 100}),
    ("lbfgs c2=1 to convergence (defaults)", "lbfgs", {"c2": 1.0}),
    ("l2sgd c2=1", "l2sgd", {"c2": 1.0}),
    ("ap, 100 epochs", "ap", {}),
    ("pa (type 1), 100 epochs", "pa", {}),
    ("arow, 100 epochs", "arow", {}),
]
OURS = {"max_iterations": "max_iter"}


def timed(fn):
    """``fn()`` and its CPU seconds (this process: both sides run on one thread here, so CPU time is
    their time with the other jobs of a shared machine taken out) and wall seconds."""
    start, wall = time.process_time(), time.perf_counter()
    out = fn()
    return out, (time.process_time() - start, time.perf_counter() - wall)


def run_crfsuite(algorithm, settings, train_dicts, y_train, test_dicts):
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm=algorithm, all_possible_transitions=True, **settings)
    _, fit_s = timed(lambda: crf.fit(train_dicts, y_train))
    n_iter = len(crf.training_log_.iterations) if crf.training_log_ is not None else -1
    return [np.asarray(p) for p in crf.predict(test_dicts)], fit_s, n_iter, ""


def run_ours(algorithm, settings, X_train, y_train, X_test):
    params = {OURS.get(k, k): v for k, v in settings.items()}
    crf = ChainCRF(algorithm=algorithm, all_possible_transitions=True, fit_intercept=False, **params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        _, fit_s = timed(lambda: crf.fit(X_train, y_train))
    status = "; ".join(str(w.message)[:60] for w in caught if issubclass(w.category, ConvergenceWarning))
    return crf.predict(X_test), fit_s, crf.n_iter_, status or "no warning"


def main(quick=False, rows=None):
    train, test = load_conll2000("train"), load_conll2000("test")
    n_train = 2000 if quick else len(train.sequences)
    train_dicts = [sent2features(s) for s in train.sequences[:n_train]]
    test_dicts = [sent2features(s) for s in test.sequences]
    y_train = [list(labels) for labels in train.labels[:n_train]]
    y_test = [np.asarray(labels) for labels in test.labels]
    vectorizer = SequenceVectorizer()
    X_train, X_test = vectorizer.fit_transform(train_dicts), vectorizer.transform(test_dicts)
    numba.set_num_threads(1)
    for algorithm in ("lbfgs", "l2sgd", "ap", "pa", "arow"):  # compile outside the timings
        ChainCRF(algorithm=algorithm, c1=0.1, max_iter=2).fit(X_train[:30], y_train[:30]).predict(X_test[:5])
    measured = []
    for name, algorithm, settings in [RUNS[i] for i in rows] if rows else RUNS:
        cs = run_crfsuite(algorithm, settings, train_dicts, y_train, test_dicts)
        us = run_ours(algorithm, settings, X_train, y_train, X_test)
        for side, (pred, fit_s, n_iter, status) in (("crfsuite", cs), ("ours", us)):
            measured.append(dict(algorithm=name, side=side, fit_cpu_s=fit_s[0], fit_wall_s=fit_s[1],
                                 crfsuite_cpu_s=cs[1][0], n_iter=n_iter, accuracy=100 * token_accuracy(y_test, pred),
                                 f1=100 * chunk_f1_score(y_test, pred), status=status))
            print(measured[-1], flush=True)
    suffix = ("_quick" if quick else "") + ("_rows_" + "_".join(map(str, rows)) if rows else "")
    save_json(RESULTS / f"crf_algorithms{suffix}.json", dict(n_train=n_train, rows=measured))
    report(RESULTS / f"crf_algorithms{suffix}.json")


def report(path):
    """The md beside the saved json ``path`` (one run: all algorithms, ``--quick`` or ``--rows``)."""
    saved = load_json(path)
    n_train = saved["n_train"]
    lines = [
        f"# CoNLL-2000: CRFsuite's training algorithms, ChainCRF vs sklearn-crfsuite ({n_train} training sentences)",
        "",
        "Tutorial features (word2features), all transitions, one thread each, same process. "
        "Goal (issue #21): fit-time ratio <= 0.5.",
        "",
        "| algorithm | side | fit CPU s (wall s) | ratio ours/crfsuite (CPU) | iterations | token acc | chunk F1 | status |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in saved["rows"]:
        ratio = f"**{r['fit_cpu_s'] / r['crfsuite_cpu_s']:.2f}**" if r["side"] == "ours" else ""
        lines.append(f"| {r['algorithm']} | {r['side']} | {r['fit_cpu_s']:.1f} ({r['fit_wall_s']:.1f}) | {ratio} | "
                     f"{r['n_iter']} | {r['accuracy']:.2f} | {r['f1']:.2f} | {r['status']} |")
    out = path.with_suffix(".md")
    write_text(out, "\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2000 training sentences")
    parser.add_argument("--rows", type=lambda v: [int(r) for r in v.split(",")], help="only these RUNS, e.g. 3,4,5")
    add_report_only(parser)
    args = parse_args(parser)
    if args.report_only:  # every saved run's md (tables written before the json was saved need a rerun)
        for table in sorted(RESULTS.glob("crf_algorithms*.md")):
            load_saved(table.with_suffix(".json"))  # exits when a table predates its json
            report(table.with_suffix(".json"))
        finish()
    else:
        main(quick=args.quick, rows=args.rows)
