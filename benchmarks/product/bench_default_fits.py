"""Every estimator with its DEFAULT settings on every bundled data set it applies to (issue 20).

Each row fits one estimator, as a new user would: default parameters, only the data preparation the
estimator's page asks for (featurising tokens, standardising X, pair features for point sets, ...),
under ``warnings.simplefilter("error")``, so that any warning (a ``ConvergenceWarning`` above all)
fails the row. A failed row is refitted with the warnings ignored, to still report its score. Beside
each fit, in the same process and on the same prepared data: a plain scikit-learn baseline a user
would otherwise pick (``LogisticRegression()`` per token / label / pair, with its defaults; its own
warnings are noted, they do not fail the row).

Recorded per row: data, n train / n test (and any subsampling), fit CPU seconds (process time, all
threads; numba kernels are compiled or loaded from the cache by a small warm-up fit first, not
counted), ``n_iter_`` and the stop reason (``stop_reason_`` where the estimator has one, else the
stopping test that ended the fit), the test score and the baseline's, and "none" or the warnings.

Data: ``$SKLEARN_STRUCT_DATA`` (see ../shared/data/README.md); the loaders' standard train/test splits
(UD: train on dev, test on test; GROBID citations have no split: fold 0 of a seeded 5-fold split).

Run: ``python benchmarks/product/bench_default_fits.py [--only NAME[,NAME]] [--quick]``. NAMEs: chain,
nonlocal, pruned_bp, dlpw, mle, parser, gp, crfsuite (or the class names). Rows are merged into
results/default_fits/default_fits.{md,json} by (estimator, data), so a rerun of one estimator updates its rows only;
``--quick`` (small subsamples, a smoke test) writes results/default_fits/default_fits_quick.* instead; ``--pending
REASON`` writes a pending row for the ``--only`` estimators without fitting (a row that could not run).
"""

import argparse
import json
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import add_report_only, finish, load_json, parse_args, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

RESULTS = results_dir("default_fits")
QUICK_N = 150  # training sequences / samples / pairs per row with --quick


# ---------------------------------------------------------------- running one row


def _fit_timed(model, X, y, *, error):
    """Fit under warnings as errors (error=True) or ignored; returns (CPU s, wall s)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error" if error else "ignore")
        cpu, wall = time.process_time(), time.perf_counter()
        model.fit(X, y)
        return time.process_time() - cpu, time.perf_counter() - wall


def _warm_up(model, X, y):
    """Compile (or load from numba's cache) the kernels on a tiny fit, outside the measurement."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            clone(model).fit(X[:3], y[:3])
        except ValueError:  # a 3-sample fit may be impossible (e.g. a label missing); the row still runs
            pass


def _final_step(model):
    return model.steps[-1][1] if hasattr(model, "steps") else model


def _stop_reason(est):
    """The estimator's own stop reason, or the test that ended its fit (read from its attributes)."""
    if hasattr(est, "stop_reason_"):
        return str(est.stop_reason_)
    if hasattr(est, "converged_"):
        return "converged (gap rule)" if est.converged_ else "max_iter"
    cap = next((getattr(est, a) for a in ("max_iter", "max_epochs") if getattr(est, a, None) is not None), None)
    n_iter = _n_iter(est)
    if cap is not None and n_iter is not None and n_iter >= cap:
        return f"max_iter ({cap})" if hasattr(est, "tol") else f"its {cap} epochs (max_iter; no convergence test)"
    log = getattr(est, "training_log_", None)
    log = getattr(log, "iterations", log)  # crfsuite.CRF's TrainingLog holds ChainCRF's records
    if log:
        last = log[-1]
        if last.get("error_norm") is not None and last["error_norm"] < (getattr(est, "epsilon", None) or 1e-5):
            return "converged (epsilon: gradient norm)"
        return "converged (delta: improvement over period)" if "improvement" in last else "stopped"
    return "-" if cap is None or n_iter is None else f"converged (before max_iter={cap})"


def run_row(model, data, baseline=None, note=""):
    """Fit ``model`` on ``data`` (dict: X, y, Xt, yt, name, score) under warnings-as-errors; score it.

    ``data["score"](model, Xt, yt)`` scores a fitted model; ``baseline(data)`` returns
    (name, score, warnings) for the scikit-learn baseline.
    """
    X, y, Xt, yt = data["X"], data["y"], data["Xt"], data["yt"]
    _warm_up(model, X, y)
    row = {"data": data["name"], "n_train": len(y), "n_test": len(yt), "note": note}
    try:
        cpu, wall = _fit_timed(model, X, y, error=True)
        row["warnings"] = "none"
    except Warning as w:
        row["warnings"] = f"{type(w).__name__}: {w}"
        model = clone(model)
        cpu, wall = _fit_timed(model, X, y, error=False)
    est = _final_step(model)
    stop = _stop_reason(est)
    if stop == "-" and row["warnings"] == "none":
        stop = "converged (its stopping rule, no warning)"
    row.update(fit_cpu_s=round(cpu, 2), fit_wall_s=round(wall, 2), n_iter=_n_iter(est),
               stop_reason=stop, metric=data["metric"], score=float(data["score"](model, Xt, yt)))
    if baseline is not None:
        row["baseline"], row["baseline_score"], row["baseline_warnings"] = _run_baseline(baseline, data)
    return row


_BASELINES = {}  # (data, n train) -> (name, score, warnings): rows on the same data share one baseline fit


def _run_baseline(baseline, data):
    key = (data.get("baseline_key", data["name"]), len(data["y"]))
    if key not in _BASELINES:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            name, score = baseline(data)
        texts = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in caught})
        _BASELINES[key] = (name, score, "; ".join(texts) or "none")
    return _BASELINES[key]


def _n_iter(est):
    if hasattr(est, "n_iter_"):
        return int(np.max(est.n_iter_))
    log = getattr(est, "training_log_", None)
    return len(log.iterations) if hasattr(log, "iterations") else None


def _subsample(seq, n):
    return seq if n is None else seq[:n]


# ---------------------------------------------------------------- data


def _token_score(model, Xt, yt):
    pred = model.predict(Xt)
    return float(np.mean(np.concatenate([np.asarray(p) for p in pred]) == np.concatenate([np.asarray(t) for t in yt])))


def _token_logreg(data):
    """Per-token LogisticRegression() on the same token feature rows."""
    stack = sp.vstack if sp.issparse(data["X"][0]) else np.vstack
    lr = LogisticRegression().fit(stack(list(data["X"])), np.concatenate([np.asarray(t) for t in data["y"]]))
    return "LogisticRegression() per token", float(lr.score(stack(list(data["Xt"])), np.concatenate(
        [np.asarray(t) for t in data["yt"]])))


def _sequences(name, X, y, Xt, yt):
    return {"name": name, "X": X, "y": y, "Xt": Xt, "yt": yt, "metric": "token accuracy", "score": _token_score}


def conll2000(n):
    from sklearn_struct.datasets import load_conll2000
    from sklearn_struct.preprocessing import WindowFeaturizer

    train, test = load_conll2000("train"), load_conll2000("test")
    feat = WindowFeaturizer()
    X = feat.fit_transform(_subsample(train.sequences, n))
    return _sequences("CoNLL-2000 (WindowFeaturizer)", X, _subsample(train.labels, n), feat.transform(test.sequences),
                      test.labels)


def crfpp(task, n):
    from sklearn_struct.datasets import load_crfpp
    from sklearn_struct.preprocessing import CRFppTemplateFeaturizer

    train, test = load_crfpp(task, "train"), load_crfpp(task, "test")
    feat = CRFppTemplateFeaturizer(train.template, encoding=train.encoding)
    X = feat.fit_transform(_subsample(train.sequences, n))
    return _sequences(f"CRF++ {task} (its template)", X, _subsample(train.labels, n), feat.transform(test.sequences),
                      test.labels)


def ocr(n):
    from sklearn_struct.datasets import load_ocr_letters

    data = load_ocr_letters()
    train, test = np.flatnonzero(data.folds != 0), np.flatnonzero(data.folds == 0)
    train = _subsample(train, n)
    return _sequences("OCR letters (folds 1-9 / fold 0, raw pixels)", [data.images[i] for i in train],
                      [data.labels[i] for i in train], [data.images[i] for i in test], [data.labels[i] for i in test])


def grobid_citations(n):
    from sklearn.model_selection import KFold

    from sklearn_struct.datasets import load_grobid_citations
    from sklearn_struct.preprocessing import WindowFeaturizer

    data = load_grobid_citations()
    train, test = next(KFold(5, shuffle=True, random_state=0).split(data.words))
    train = _subsample(train, n)
    feat = WindowFeaturizer(pos_column=None)
    X = feat.fit_transform([data.words[i] for i in train])
    return _sequences("GROBID citations (fold 0 of 5, WindowFeaturizer)", X, [data.labels[i] for i in train],
                      feat.transform([data.words[i] for i in test]), [data.labels[i] for i in test])


def umass(n):
    from sklearn_struct.datasets import load_umass_citations
    from sklearn_struct.preprocessing import WindowFeaturizer

    train, test = load_umass_citations("train"), load_umass_citations("test")
    feat = WindowFeaturizer(pos_column=None)
    X = feat.fit_transform(_subsample(train.words, n))
    return _sequences("UMass citations (leaf BIO labels, WindowFeaturizer)", X, _subsample(train.labels, n),
                      feat.transform(test.words), test.labels)


def multilabel(name, n):
    from sklearn_struct.datasets import load_scene, load_yeast

    load = load_yeast if name == "yeast" else load_scene
    train, test = load("train"), load("test")
    return {"name": f"{name} (MULAN split)", "X": _subsample(train.data, n), "y": _subsample(train.target, n),
            "Xt": test.data, "yt": test.target, "metric": "subset accuracy", "score": lambda m, X, Y: m.score(X, Y)}


def cmu(sequence, n, gap=50):
    """All frame pairs (i, i + gap): even i train, odd i test; right points shuffled per pair."""
    from sklearn_struct.datasets import load_cmu_house_hotel

    points = load_cmu_house_hotel(sequence).points
    rng = np.random.default_rng(0)
    X, y = [], []
    for i in range(len(points) - gap):
        perm = rng.permutation(len(points[i]))
        X.append((points[i], points[i + gap][perm]))
        y.append(np.argsort(perm))
    tr, te = slice(0, None, 2), slice(1, None, 2)
    return {"name": f"CMU {sequence}, frame gap {gap} (even / odd frames)", "X": _subsample(X[tr], n),
            "y": _subsample(y[tr], n), "Xt": X[te], "yt": y[te], "metric": "node accuracy",
            "score": lambda m, X, Y: m.score(X, Y)}


def ud(language, n):
    from sklearn_struct.datasets import load_ud

    train, test = load_ud(language, "dev"), load_ud(language, "test")
    return {"name": f"UD {language} (dev / test)", "X": _subsample(train.sentences, n), "y": _subsample(train.heads, n),
            "Xt": test.sentences, "yt": test.heads, "metric": "UAS", "score": lambda m, X, Y: m.score(X, Y)}


def ocr_graphs(n):
    """OCR words as chain graphs (one node per letter, edges between neighbours)."""
    data = ocr(n)
    for key in ("X", "Xt"):
        data[key] = [(x, np.c_[np.arange(len(x) - 1), np.arange(1, len(x))].astype(np.intp)) for x in data[key]]
    data["name"] = "OCR words as chain graphs (folds 1-9 / fold 0)"
    return data


def ising(n):
    from sklearn_struct.datasets import make_ising_grid
    from sklearn_struct.utils.graph import images_to_graphs

    train_img, train_lab = make_ising_grid(n_noisy=4, shape=(32, 32), noise=1.0, random_state=0)
    test_img, test_lab = make_ising_grid(n_noisy=4, shape=(32, 32), noise=1.0, random_state=1)
    return {"name": "generated Ising grids 32x32 (make_ising_grid; no bundled grid data)",
            "X": images_to_graphs(train_img), "y": list(train_lab.reshape(len(train_lab), -1)),
            "Xt": images_to_graphs(test_img), "yt": list(test_lab.reshape(len(test_lab), -1)),
            "metric": "pixel accuracy", "score": lambda m, X, Y: m.score(X, Y)}


# ---------------------------------------------------------------- baselines


def _node_logreg(data):
    lr = LogisticRegression().fit(np.vstack([g[0] for g in data["X"]]), np.concatenate(data["y"]))
    return "LogisticRegression() per node", float(lr.score(np.vstack([g[0] for g in data["Xt"]]),
                                                           np.concatenate(data["yt"])))


def _multilabel_logreg(data):
    from sklearn.multioutput import MultiOutputClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), MultiOutputClassifier(LogisticRegression())).fit(data["X"], data["y"])
    return "StandardScaler + MultiOutput(LogisticRegression())", float(model.score(data["Xt"], data["yt"]))


def _pair_logreg(data):
    """LogisticRegression() on single pairs (same pair features) + linear assignment."""
    from scipy.optimize import linear_sum_assignment

    from sklearn_struct.preprocessing import PointSetPairFeatures

    feat = PointSetPairFeatures().fit(data["X"])
    F, Ft = feat.transform(data["X"]), feat.transform(data["Xt"])
    lr = LogisticRegression().fit(np.vstack([f.reshape(-1, f.shape[2]) for f in F]),
                                  np.concatenate([np.eye(f.shape[1])[a].ravel() for f, a in zip(F, data["y"])]))
    correct = [np.mean(linear_sum_assignment(-lr.decision_function(f.reshape(-1, f.shape[2])).reshape(f.shape[:2]))[1]
                       == a) for f, a in zip(Ft, data["yt"])]
    return "LogisticRegression() per pair + assignment", float(np.mean(correct))


def _head_logreg(data):
    """LogisticRegression() predicting each word's head offset from its word and POS window."""
    from sklearn.feature_extraction import DictVectorizer

    def rows(X):
        out = []
        for sent in X:
            tags = ["<s>", "<s>"] + [w["upos"] for w in sent] + ["</s>", "</s>"]
            out += [{"w": w["form"], "p": w["upos"], "p-2": tags[i], "p-1": tags[i + 1], "p+1": tags[i + 3],
                     "p+2": tags[i + 4]} for i, w in enumerate(sent)]
        return out

    def offsets(Y):
        return np.concatenate([np.where(h == 0, 0, h - np.arange(1, len(h) + 1)) for h in map(np.asarray, Y)])

    vec = DictVectorizer()
    lr = LogisticRegression().fit(vec.fit_transform(rows(data["X"])), offsets(data["y"]))
    return "LogisticRegression() head offset per word", float(np.mean(lr.predict(vec.transform(rows(data["Xt"])))
                                                                     == offsets(data["yt"])))


# ---------------------------------------------------------------- the rows of each estimator


def rows_chain(quick):
    from sklearn_struct import ChainCRF

    n = QUICK_N if quick else None
    sets = [conll2000(n), ocr(n)] + [crfpp(t, n) for t in ("basenp", "chunking", "JapaneseNE", "seg")]
    sets += [grobid_citations(n), umass(n)]
    for data in sets:
        yield run_row(ChainCRF(), data, _token_logreg)


def rows_crfsuite(quick):
    from sklearn_struct.crfsuite import CRF
    from sklearn_struct.datasets import load_conll2000
    from sklearn_struct.preprocessing import WindowFeaturizer

    n = QUICK_N if quick else None
    train, test = load_conll2000("train"), load_conll2000("test")
    feat = WindowFeaturizer().fit(_subsample(train.sequences, n))
    data = {"name": "CoNLL-2000 (WindowFeaturizer.to_dicts: crfsuite's token dicts)",
            "X": feat.to_dicts(_subsample(train.sequences, n)), "y": [list(t) for t in _subsample(train.labels, n)],
            "Xt": feat.to_dicts(test.sequences), "yt": test.labels, "metric": "token accuracy", "score": _token_score}

    data["baseline_key"] = "CoNLL-2000 (WindowFeaturizer)"  # the same baseline rows as ChainCRF's CoNLL row

    def baseline(_):
        return _token_logreg({"X": feat.transform(_subsample(train.sequences, n)), "y": data["y"],
                              "Xt": feat.transform(test.sequences), "yt": data["yt"]})

    yield run_row(CRF(), data, baseline)


def rows_nonlocal(quick):
    from sklearn_struct import NonLocalCRF
    from sklearn_struct.energies import WordDictionaryEnergy

    n = QUICK_N if quick else None
    yield run_row(NonLocalCRF(), ocr(n), _token_logreg, note="energy=None (the plain chain CRF)")
    sub = QUICK_N if quick else 2000
    yield run_row(NonLocalCRF(WordDictionaryEnergy()), ocr(sub), _token_logreg,
                  note=f"WordDictionaryEnergy(); first {sub} training words")
    yield run_row(NonLocalCRF(), umass(n), _token_logreg, note="energy=None")


def rows_pruned_bp(quick):
    from sklearn_struct import PrunedBPMarginals

    yield run_row(PrunedBPMarginals(), ocr_graphs(QUICK_N if quick else 1000), _node_logreg,
                  note="first 1000 training words" if not quick else "")
    yield run_row(PrunedBPMarginals(), ising(None), _node_logreg)


def rows_dlpw(quick):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_struct import DLPWClassifier

    for name in ("yeast", "scene"):
        yield run_row(make_pipeline(StandardScaler(), DLPWClassifier()), multilabel(name, 400 if quick else None),
                      _multilabel_logreg, note="StandardScaler first (the page's advice)")


def rows_mle(quick):
    from sklearn.pipeline import make_pipeline

    from sklearn_struct import MLEStructMatcher
    from sklearn_struct.preprocessing import PointSetPairFeatures

    for sequence in ("house", "hotel"):
        yield run_row(make_pipeline(PointSetPairFeatures(), MLEStructMatcher()), cmu(sequence, 20 if quick else None),
                      _pair_logreg, note="PointSetPairFeatures first")


def rows_parser(quick):
    from sklearn_struct import DependencyParserBP

    for language, n in (("english", 600), ("dutch", None), ("italian", None)):
        n = 60 if quick else n
        note = f"first {n} dev sentences" if n else ""
        yield run_row(DependencyParserBP(), ud(language, n), _head_logreg, note=note)


def rows_gp(quick):
    from sklearn_struct import GPStructClassifier

    data = crfpp("basenp", 50)
    data["Xt"], data["yt"] = data["Xt"][:300], data["yt"][:300]
    data["name"] = "CRF++ basenp (its template), 50 train / first 300 test sentences"
    yield run_row(GPStructClassifier(), data, _token_logreg, note="training set kept small (the page's advice)")


ESTIMATORS = {"chain": ("ChainCRF", rows_chain), "nonlocal": ("NonLocalCRF", rows_nonlocal),
              "pruned_bp": ("PrunedBPMarginals", rows_pruned_bp), "dlpw": ("DLPWClassifier", rows_dlpw),
              "mle": ("MLEStructMatcher", rows_mle), "parser": ("DependencyParserBP", rows_parser),
              "gp": ("GPStructClassifier", rows_gp), "crfsuite": ("crfsuite.CRF", rows_crfsuite)}


# ---------------------------------------------------------------- results


def _key(row):
    return f"{row['estimator']} | {row['data']} | {row.get('note', '')}"


def merge_rows(old, new_rows, rerun=()):
    """The ``old`` rows without those of the estimators in ``rerun``, plus ``new_rows``."""
    merged = {_key(r): r for r in old if r["estimator"] not in rerun}
    merged.update({_key(r): r for r in new_rows})
    names = [name for name, _ in ESTIMATORS.values()]
    return sorted(merged.values(), key=lambda r: (names.index(r["estimator"]) if r["estimator"] in names else 99,
                                                  r["data"], r.get("note", "")))


def write(rows, stem, machine=None):
    """Save the rows and the machine line, then render the md from the saved json."""
    machine = machine or (f"Machine: {os.cpu_count()} cores, shared; 1-min load average at the end "
                          f"{os.getloadavg()[0]:.1f}.")
    write_text(RESULTS / f"{stem}.json", json.dumps({"rows": rows, "machine": machine}, indent=1) + "\n")
    report(stem)


def report(stem):
    """``<stem>.md`` from ``<stem>.json`` (its rows and the run's machine line)."""
    saved = load_json(RESULTS / f"{stem}.json")
    rows = saved["rows"]
    lines = ["# Default fits on the bundled data sets (`bench_default_fits.py`)", "",
             "Every estimator with default parameters and the data preparation its page asks for, under "
             "`warnings.simplefilter(\"error\")`: 'warnings' is none or the warning that failed the row (the score "
             "is then from a refit with warnings ignored). Baseline: a default scikit-learn LogisticRegression on "
             "the same prepared data, same process. CPU s: process time of the fit (all threads), numba kernels "
             "compiled or cache-loaded beforehand.", "",
             "| estimator | data | n train / test | note | fit CPU s | n_iter_ | stop | metric | score | baseline "
             "| baseline score | warnings |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("status") == "pending":
            lines.append(f"| {r['estimator']} | {r['data']} | | {r.get('note', '')} | | | | | pending | | | "
                         f"{r.get('reason', '')} |")
            continue
        base = r.get("baseline", "-")
        bscore = f"{r['baseline_score']:.4f}" if "baseline_score" in r else "-"
        bw = "" if r.get("baseline_warnings", "none") == "none" else f" (baseline: {r['baseline_warnings']})"
        lines.append(f"| {r['estimator']} | {r['data']} | {r['n_train']} / {r['n_test']} | {r['note']} | "
                     f"{r['fit_cpu_s']:.1f} | {r['n_iter'] if r['n_iter'] is not None else '-'} | {r['stop_reason']} | "
                     f"{r['metric']} | {r['score']:.4f} | {base} | {bscore} | {r['warnings']}{bw} |")
    n_warn = sum(1 for r in rows if r.get("warnings", "none") != "none" and r.get("status") != "pending")
    n_behind = sum(1 for r in rows if "baseline_score" in r and r["score"] < r["baseline_score"])
    lines += ["", f"{len(rows)} rows: {n_warn} ended in a warning; {n_behind} scored below their baseline.",
              saved["machine"]]
    write_text(RESULTS / f"{stem}.md", "\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated estimators: " + ", ".join(ESTIMATORS))
    parser.add_argument("--quick", action="store_true", help="small subsamples (writes default_fits_quick.*)")
    parser.add_argument("--pending", metavar="REASON", help="do not fit: mark the --only estimators' rows pending")
    add_report_only(parser)
    args = parse_args(parser, argv)
    if args.report_only:
        report("default_fits_quick" if args.quick else "default_fits")
        return finish()
    lookup = {k: k for k in ESTIMATORS} | {v[0].lower(): k for k, v in ESTIMATORS.items()}
    chosen = [lookup.get(s.strip().lower()) for s in args.only.split(",") if s.strip()] or list(ESTIMATORS)
    if None in chosen:
        parser.error(f"--only takes {', '.join(ESTIMATORS)} (got {args.only!r})")
    stem = "default_fits_quick" if args.quick else "default_fits"
    rerun = {ESTIMATORS[k][0] for k in chosen}
    done = []  # this run's rows; they replace the rerun estimators' old rows
    for key in chosen:
        name, rows_of = ESTIMATORS[key]
        if args.pending:
            done.append({"estimator": name, "data": "(not run)", "status": "pending", "reason": args.pending})
            _save(stem, done, rerun)
            continue
        try:
            for row in rows_of(args.quick):
                done.append({"estimator": name, **row})
                print(json.dumps(done[-1]), flush=True)
                _save(stem, done, rerun)
        except Exception:  # one estimator's crash is a result too: report it, go on with the others
            traceback.print_exc()
            done.append({"estimator": name, "data": "(crashed)", "status": "pending",
                         "reason": traceback.format_exc().strip().splitlines()[-1]})
            _save(stem, done, rerun)


def _save(stem, done, rerun):
    """Merge this run's rows into the file as it is now (another run may have written other estimators)."""
    path = RESULTS / f"{stem}.json"
    old = load_json(path)["rows"] if path.exists() else []
    write(merge_rows(old, done, rerun), stem)


if __name__ == "__main__":
    sys.exit(main())
