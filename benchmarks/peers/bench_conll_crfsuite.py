"""CoNLL-2000 chunking: our base chain CRF against sklearn-crfsuite, same features, one run.

Both models get exactly the same token features (the window featurizer of
:mod:`sklearn_struct.preprocessing`: word, lower-case word, suffixes, shape and POS in a
+-2 window): crfsuite as the feature dicts, ours as the CSR matrices those dicts
vectorise to. Both minimise the same objective, the negative log-likelihood plus
``c2 * ||w||^2`` with ``c2 = 1``, with L-BFGS run to CRFsuite's own stopping rule (its defaults:
``delta = 1e-5`` over ``period = 10`` iterations, ``epsilon = 1e-5``, no iteration cap; ours
``max_iter=None``, ``tol=1e-5``, ``period=10``, the defaults), and both create
unary weights only for (attribute, label) pairs seen in training (CRFsuite's default).

Scores: chunk F1 with conlleval's rules and token accuracy on the official test split.
Goal (issue #3): F1 no lower than crfsuite's minus 0.2 points; fit time at most 0.5x.
Run: ``SKLEARN_STRUCT_DATA=../shared/data python benchmarks/peers/bench_conll_crfsuite.py``.
"""

import os
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np

from sklearn_struct import NonLocalCRF
from sklearn_struct.datasets import load_conll2000
from sklearn_struct.metrics import chunk_f1_score, token_accuracy
from sklearn_struct.preprocessing import WindowFeaturizer
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, load_json, load_saved, report_only_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

RESULTS = results_dir("conll_crfsuite")
C2 = 1.0


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run_crfsuite(train_dicts, y_train, test_dicts):
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=C2)  # CRFsuite's stopping rule
    _, fit_s = timed(lambda: crf.fit(train_dicts, [list(y) for y in y_train]))
    pred, pred_s = timed(lambda: crf.predict(test_dicts))
    return [np.asarray(p) for p in pred], fit_s, pred_s, len(crf.training_log_.iterations)


def run_ours(X_train, y_train, X_test, n_threads):
    crf = NonLocalCRF(c2=C2)  # the defaults: CRFsuite's stopping rule
    previous = numba.get_num_threads()
    numba.set_num_threads(n_threads)
    try:
        _, fit_s = timed(lambda: crf.fit(X_train, y_train))
        pred, pred_s = timed(lambda: crf.predict(X_test))
    finally:
        numba.set_num_threads(previous)
    return pred, fit_s, pred_s, crf.n_iter_


def main():
    train, test = load_conll2000("train"), load_conll2000("test")
    y_train = [np.asarray(labels) for labels in train.labels]
    y_test = [np.asarray(labels) for labels in test.labels]

    featurizer = WindowFeaturizer()
    (X_train, X_test), feat_s = timed(
        lambda: (featurizer.fit_transform(train.sequences), featurizer.transform(test.sequences))
    )
    train_dicts, test_dicts = featurizer.to_dicts(train.sequences), featurizer.to_dicts(test.sequences)

    # warm the numba cache so that compilation is not billed to the fit
    NonLocalCRF(max_iter=2).fit(X_train[:20], y_train[:20]).predict(X_test[:5])

    n_threads = numba.get_num_threads()
    pred_cs, fit_cs, predict_cs, n_iter_cs = run_crfsuite(train_dicts, y_train, test_dicts)
    pred_us, fit_us, predict_us, n_iter = run_ours(X_train, y_train, X_test, n_threads)
    pred_1t, fit_1t, predict_1t, _ = run_ours(X_train, y_train, X_test, 1)

    rows = []
    for name, pred, fit_s, pred_s in [
        (f"sklearn-crfsuite 0.5 (CRFsuite L-BFGS, {n_iter_cs} iterations, one thread)", pred_cs, fit_cs, predict_cs),
        (f"sklearn_struct NonLocalCRF ({n_iter} iterations, {n_threads} numba threads)", pred_us, fit_us, predict_us),
        (f"sklearn_struct NonLocalCRF ({n_iter} iterations, 1 numba thread)", pred_1t, fit_1t, predict_1t),
    ]:
        rows.append(dict(model=name, f1=100 * chunk_f1_score(y_test, pred), accuracy=100 * token_accuracy(y_test, pred),
                         fit_s=fit_s, predict_s=pred_s))
    save_json(RESULTS / "conll_crfsuite.json", dict(
        machine=platform.machine(), cpu_count=os.cpu_count(), n_attributes=X_train[0].shape[1], featurise_s=feat_s,
        c2=C2, n_train=len(y_train), n_test=len(y_test), rows=rows))
    report(load_json(RESULTS / "conll_crfsuite.json"))


def report(saved):
    """The table from the saved json (rows: crfsuite, ours with all numba threads, ours with one)."""
    rows = [(r["model"], r["f1"], r["accuracy"], r["fit_s"], r["predict_s"]) for r in saved["rows"]]
    (_, f1_cs, _, fit_cs, _), (_, f1_us, _, fit_us, _), (_, _, _, fit_1t, _) = rows
    lines = [
        "# CoNLL-2000 chunking: NonLocalCRF (base CRF) vs sklearn-crfsuite",
        "",
        f"Machine: {saved['machine']}, {saved['cpu_count']} cores; same features for both "
        f"({saved['n_attributes']} attributes, featurised in {saved['featurise_s']:.1f} s, not counted); "
        f"c2={saved['c2']}, "
        f"L-BFGS to CRFsuite's stopping rule (delta 1e-5 over 10 iterations) on both sides; "
        f"train {saved['n_train']} / test {saved['n_test']} sentences.",
        "",
        "| model | chunk F1 | token accuracy | fit s | predict s |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {n} | {f:.2f} | {a:.2f} | {t:.1f} | {p:.2f} |" for n, f, a, t, p in rows]
    lines += [
        "",
        f"Fit-time ratio ours / crfsuite: **{fit_us / fit_cs:.2f}** (goal <= 0.5); with one numba "
        f"thread, like CRFsuite: {fit_1t / fit_cs:.2f}. "
        f"F1 difference ours - crfsuite: **{f1_us - f1_cs:+.2f}** points (goal >= -0.2).",
        "Reference in ../shared/data/README.md, same machine type: crfsuite fit 28.8 s, F1 93.51, accuracy 95.82.",
    ]
    text = "\n".join(lines) + "\n"
    write_text(RESULTS / "conll_crfsuite.md", text)
    print(text)


if __name__ == "__main__":
    if report_only_args(description=__doc__.split("\n")[0]).report_only:
        report(load_saved(RESULTS / "conll_crfsuite.json"))
        finish()
    else:
        main()
