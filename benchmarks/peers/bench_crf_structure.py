"""ChainCRF structure features on CoNLL-2000 and GROBID citations (issue #35): valid BIO, n-best, partial labels.

Two data sets: CoNLL-2000 (official split, window features
:class:`~sklearn_struct.preprocessing.WindowFeaturizer`) and GROBID citations (fold 0 of
``bench_citations.py``'s 5-fold split, its citation features, the 13 fields as BIO chunks: a
``B-field`` opens every maximal run of one field). Per data set one run, the same features for
every model (sklearn-crfsuite gets them as dicts), c2 = 1, L-BFGS on every side either to its own
stopping rule (``--max-iter`` not given: ChainCRF's default ``max_iter=None`` and CRFsuite's
``max_iterations=None``, both CRFsuite's ``delta`` = ``epsilon`` = 1e-5 over ``period`` 10) or
with the same iteration budget (``--max-iter N``; the first CoNLL run used 100, the shared data
README's sklearn-crfsuite reference):

1. invalid BIO chunk sequences in the test predictions (an ``I-X`` not preceded by ``B-X`` /
   ``I-X``) and chunk F1: ChainCRF without and with ``allowed_transitions="BIO"`` (the mask in
   training and decoding), ``allowed_transitions_in_fit=False`` (the plain model's fit, the mask at
   decoding only; its weights are checked equal to the plain fit's), beside sklearn-crfsuite (goal:
   0 with it, F1 not lower); iterations and how each fit stopped; ``--part decode`` reruns only the
   decoding-only row (and the plain fit it must equal) into the saved table;
2. oracle chunk F1 of the 5-best and 20-best lists of ``predict_topk`` (per sentence the list's
   labelling with the highest sentence F1);
3. partial labels: 25 / 50 / 75% of the training tokens hidden at random (each given as the set
   of every training label, which is ``None`` with the label inventory declared), the
   partial-label fit (marginalising over the hidden tokens) against a fit on the sentences that
   kept every label (goal: above it at every rate);

and the CPU time of each new path against the plain one, as ratios (the machine is shared).
Run: ``SKLEARN_STRUCT_DATA=../shared/data python benchmarks/peers/bench_crf_structure.py [--dataset grobid]
[--max-iter N] [--part valid|topk|partial]``; ``--report-only`` rewrites the md from the saved json
(``--check``: write nothing, exit 1 if the md would change; ``benchmarks/_lib/report.py``).
"""

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import ChainCRF
from sklearn_struct.datasets import load_conll2000
from sklearn_struct.metrics import chunk_f1_score
from sklearn_struct.preprocessing import WindowFeaturizer
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.results import results_dir  # noqa: E402
from _lib import citations  # noqa: E402
from _lib.report import add_report_only, finish, load_json, parse_args, save_json, write_text  # noqa: E402

RESULTS = results_dir("crf_structure")
C2 = 1.0
RATES = (0.25, 0.5, 0.75)
DATASETS = {"conll2000": "CoNLL-2000 (official split)",
            "grobid": "GROBID citations (fold 0 of 5, fields as BIO chunks)"}


def cpu(fn):
    """(result, CPU seconds of this process: all threads)."""
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


def invalid_bio(predictions):
    """Tokens ``I-X`` that do not continue a chunk of type X (conlleval would open a chunk there)."""
    count = 0
    for p in predictions:
        prev = "O"
        for lab in p:
            count += lab.startswith("I-") and not (prev[:2] in ("B-", "I-") and prev[2:] == lab[2:])
            prev = lab
    return int(count)


def fit_ours(X, y, max_iter, **params):
    """(fitted model, CPU s); ``model.stopped_`` says how the fit ended (its tolerance or the budget)."""
    model = ChainCRF(c2=C2, max_iter=max_iter, **params)
    with warnings.catch_warnings(record=True) as caught:  # with a budget, the budget is the stop (as crfsuite's)
        warnings.simplefilter("always", ConvergenceWarning)
        _, seconds = cpu(lambda: model.fit(X, y))
    hit = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    model.stopped_ = f"budget ({max_iter})" if hit else "tolerance"
    return model, seconds


def run_crfsuite(train_dicts, y_train, test_dicts, max_iter):
    """(predictions, fit CPU s, predict CPU s, iterations, how it stopped)."""
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=C2, max_iterations=max_iter)
    _, fit_s = cpu(lambda: crf.fit(train_dicts, [list(v) for v in y_train]))
    pred, pred_s = cpu(lambda: crf.predict(test_dicts))
    n_iter = int(crf.training_log_.last_iteration["num"])
    stopped = f"budget ({max_iter})" if max_iter is not None and n_iter >= max_iter else "tolerance"
    return [np.asarray(p) for p in pred], fit_s, pred_s, n_iter, stopped


def _chunks(labels):
    """Chunks ``(start, end, type)`` by conlleval's rules (an I-X that continues no X chunk opens one)."""
    out, start, kind = set(), None, None
    for t, lab in enumerate(list(labels) + ["O"]):
        tag, _, typ = lab.partition("-")
        if start is not None and (tag != "I" or typ != kind):
            out.add((start, t, kind))
            start = None
        if tag == "B" or (tag == "I" and start is None):
            start, kind = t, typ
    return out


def paired_bootstrap(y_test, pred_a, pred_b, n_boot=2000, seed=0):
    """95% interval of F1(b) - F1(a) (chunk F1, in points) over test sequences resampled with replacement."""
    counts = []
    for gold, a, b in zip(y_test, pred_a, pred_b):
        g, pa, pb = _chunks(gold), _chunks(a), _chunks(b)
        counts.append((len(g), len(pa), len(g & pa), len(pb), len(g & pb)))
    counts = np.array(counts, dtype=float)
    idx = np.random.RandomState(seed).randint(0, len(counts), size=(n_boot, len(counts)))
    tot = counts[idx].sum(axis=1)  # (n_boot, 5)
    f_a = 2 * tot[:, 2] / (tot[:, 0] + tot[:, 1])
    f_b = 2 * tot[:, 4] / (tot[:, 0] + tot[:, 3])
    lo, hi = np.percentile(100 * (f_b - f_a), [2.5, 97.5])
    changed = sum(not np.array_equal(a, b) for a, b in zip(pred_a, pred_b))
    return {"low": float(lo), "high": float(hi), "sequences_that_differ": int(changed)}


def oracle_f1(y_test, y_topk):
    """Corpus chunk F1 when each sentence takes the labelling of its list with the best sentence F1."""
    picked = []
    for gold, cands in zip(y_test, y_topk):
        g = _chunks(gold)
        scores = []
        for c in cands:
            p = _chunks(c)
            scores.append(2 * len(g & p) / max(1, len(g) + len(p)))
        picked.append(cands[int(np.argmax(scores))])
    return 100 * chunk_f1_score(y_test, picked)


def hide(y_train, rate, seed):
    """Hide tokens at random: each becomes the set of every training label (the label inventory is
    known). ``None`` means the same, any label of ``classes_``, but ``classes_`` then holds only the
    labels still seen: at 50% a rare ``B-UCP`` can vanish while an ``I-UCP`` stays, which BIO makes
    infeasible (fit raises a ValueError naming the sentence)."""
    rng = np.random.RandomState(seed)
    inventory = frozenset(np.concatenate(y_train).tolist())
    out = []
    for y in y_train:
        seq = np.array(y, dtype=object)
        for t in np.flatnonzero(rng.rand(len(y)) < rate):
            seq[t] = inventory
        out.append(seq)
    return out


DECODE_ONLY = 'ChainCRF(allowed_transitions="BIO", allowed_transitions_in_fit=False)'


def same_weights(a, b):
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("coef_", "intercept_", "transition_"))


def decode_only_row(plain, X_train, y_train, X_test, y_test, pred_plain, max_iter):
    """The BIO mask at decoding only, by the option: (table row, paired bootstrap against plain)."""
    decode, fit_decode = fit_ours(X_train, y_train, max_iter, allowed_transitions="BIO",
                                  allowed_transitions_in_fit=False)
    pred = decode.predict(X_test)
    row = valid_row(DECODE_ONLY, y_test, pred, fit_decode, decode.n_iter_, decode.stopped_)
    row["same_weights_as_plain"] = same_weights(decode, plain)
    return row, paired_bootstrap(y_test, pred_plain, pred)


def valid_row(name, y_test, pred, fit_s, n_iter, stopped):
    return {"model": name, "invalid_I_tokens": invalid_bio(pred), "sentences_with_invalid": sum(invalid_bio([p]) > 0
                                                                                              for p in pred),
            "chunk_f1": 100 * chunk_f1_score(y_test, pred), "fit_cpu_s": fit_s, "n_iter": int(n_iter),
            "stopped": stopped}


def experiment_valid(X_train, y_train, X_test, y_test, train_dicts, test_dicts, max_iter, out):
    plain, fit_plain = fit_ours(X_train, y_train, max_iter)
    bio, fit_bio = fit_ours(X_train, y_train, max_iter, allowed_transitions="BIO")
    pred_plain, predict_plain = cpu(lambda: plain.predict(X_test))
    pred_bio, predict_bio = cpu(lambda: bio.predict(X_test))
    decode, decode_bootstrap = decode_only_row(plain, X_train, y_train, X_test, y_test, pred_plain, max_iter)
    rows = [("ChainCRF", pred_plain, fit_plain, plain.n_iter_, plain.stopped_),
            ('ChainCRF(allowed_transitions="BIO")', pred_bio, fit_bio, bio.n_iter_, bio.stopped_)]
    if train_dicts is not None:
        pred_cs, fit_cs, _, n_cs, stop_cs = run_crfsuite(train_dicts, y_train, test_dicts, max_iter)
        rows.append(("sklearn-crfsuite (CRFsuite L-BFGS)", pred_cs, fit_cs, n_cs, stop_cs))
    out["valid"] = [valid_row(name, y_test, *rest) for name, *rest in rows]
    out["valid"].insert(2, decode)
    out["objective"] = {"plain": float(plain.objective_), "bio": float(bio.objective_)}
    out["bio_minus_plain"] = {"trained": paired_bootstrap(y_test, pred_plain, pred_bio),
                              "decoding_only": decode_bootstrap}
    out["timing"] = {"fit_bio_over_plain": fit_bio / fit_plain,
                     "predict_bio_over_plain": predict_bio / predict_plain}
    return plain, bio, predict_plain


def experiment_decode(X_train, y_train, X_test, y_test, max_iter, stored_path):
    """Rerun only the decoding-only row (and the plain fit it must equal) into the saved part 'valid'."""
    stored = load_json(stored_path)
    plain, _ = fit_ours(X_train, y_train, max_iter)
    pred_plain = plain.predict(X_test)
    row, bootstrap = decode_only_row(plain, X_train, y_train, X_test, y_test, pred_plain, max_iter)
    before = next(r for r in stored["valid"] if r["model"] == "ChainCRF")
    row["rerun_alone"] = {"plain_f1_as_stored": bool(100 * chunk_f1_score(y_test, pred_plain) == before["chunk_f1"]),
                          "plain_n_iter_as_stored": int(plain.n_iter_) == before["n_iter"]}
    rows = [r for r in stored["valid"] if r["model"] not in (DECODE_ONLY, "ChainCRF, BIO mask at decoding only")]
    stored["valid"] = rows[:2] + [row] + rows[2:]
    stored["bio_minus_plain"]["decoding_only"] = bootstrap
    save_json(stored_path, stored)
    write()


def experiment_topk(plain, bio, X_test, y_test, predict_plain, out):
    out["topk"] = []
    for name, model in (("ChainCRF", plain), ('ChainCRF(allowed_transitions="BIO")', bio)):
        row = {"model": name, "1-best": 100 * chunk_f1_score(y_test, model.predict(X_test))}
        for k in (5, 20):
            (y_topk, log_proba), seconds = cpu(lambda k=k: model.predict_topk(X_test, k))
            row[f"oracle {k}-best"] = oracle_f1(y_test, y_topk)
            row[f"topk{k}_over_predict"] = seconds / predict_plain
            row[f"mean prob mass of {k}-best"] = float(np.mean([np.exp(lp).sum() for lp in log_proba]))
            if k == 20:
                row["invalid_I_tokens_in_20_best"] = sum(invalid_bio(list(c)) for c in y_topk)
        out["topk"].append(row)
    seen = [i for i, y in enumerate(y_test) if np.isin(y, bio.classes_).all()]  # test has I-LST, unseen in training
    _, seconds = cpu(lambda: bio.sequence_log_proba([X_test[i] for i in seen], [y_test[i] for i in seen]))
    out["timing"]["sequence_log_proba_over_predict"] = seconds / predict_plain
    known = set(bio.classes_)  # every other token given (the test's I-LST, unseen in training, left free)
    fixed = [[lab if t % 2 == 0 and lab in known else None for t, lab in enumerate(y)] for y in y_test]
    _, seconds = cpu(lambda: bio.predict_marginals(X_test, fixed=fixed))
    _, seconds_plain = cpu(lambda: bio.predict_marginals(X_test))
    pred_fixed = bio.predict(X_test, fixed=fixed)
    out["timing"]["marginals_fixed_over_marginals"] = seconds / seconds_plain
    out["fixed_every_other_token_f1"] = 100 * chunk_f1_score(y_test, pred_fixed)


def experiment_partial(X_train, y_train, X_test, y_test, fit_full, max_iter, out, rates, store):
    out["partial"] = []
    for rate in rates:
        hidden = hide(y_train, rate, seed=0)
        partial, fit_partial = fit_ours(X_train, hidden, max_iter, allowed_transitions="BIO")
        full_only = [i for i, y in enumerate(hidden) if not any(isinstance(v, frozenset) for v in y)]
        row = {"hidden": rate, "partial_label_f1": 100 * chunk_f1_score(y_test, partial.predict(X_test)),
               "partial_fit_over_full_fit": fit_partial / fit_full, "n_iter": int(partial.n_iter_),
               "fully_labelled_sentences": len(full_only)}
        row["full_sentences_only_f1"] = 0.0  # no model from fewer than 2 sentences
        if len(full_only) >= 2:
            base, _ = fit_ours([X_train[i] for i in full_only], [y_train[i] for i in full_only], max_iter,
                               allowed_transitions="BIO")
            pred = base.predict(X_test)  # labels unseen by the small model are simply never predicted
            row["full_sentences_only_f1"] = 100 * chunk_f1_score(y_test, pred)
        out["partial"].append(row)
        store(out)


def run_tag(max_iter):
    return "conv" if max_iter is None else f"i{max_iter}"


def save(out, dataset, part):
    """Store one part's json (``crf_structure_<dataset>_<conv|iN>_<part>.json``) and rewrite the md."""
    path = RESULTS / f"crf_structure_{dataset}_{run_tag(out['max_iter'])}_{part}.json"
    save_json(path, out)
    write()


def merged_runs():
    """Every saved part merged per (data set, run): ``{(dataset, tag): out}``, data sets in DATASETS' order,
    runs to convergence first."""
    runs = {}
    for path in sorted(RESULTS.glob("crf_structure_*_*_*.json")):
        _, _, dataset, tag, _ = path.stem.split("_", 4)
        stored = load_json(path)
        merged = runs.setdefault((dataset, tag), {"partial": {}, "timing": {}})
        merged["timing"].update(stored.pop("timing", {}))
        merged["partial"].update({r["hidden"]: r for r in stored.pop("partial", [])})
        merged.update(stored)
    for merged in runs.values():
        merged["partial"] = [merged["partial"][k] for k in sorted(merged["partial"])]
    order = lambda key: (list(DATASETS).index(key[0]), key[1] != "conv", key[1])  # noqa: E731
    return {key: runs[key] for key in sorted(runs, key=order)}


def write():
    """The md (and a json of everything) from the saved parts only."""
    runs = merged_runs()
    machines = " / ".join(sorted({out["machine"] for out in runs.values()}))
    lines = ["# ChainCRF structure features on CoNLL-2000 and GROBID citations (issue #35)", "",
             f"Machine: {machines} (shared); CPU seconds of this process. "
             "Each section is one run of the script on one data set: ChainCRF and sklearn-crfsuite on the same "
             "features, c2 = 1, L-BFGS to its stopping rule or with a fixed budget as its heading says.", ""]
    for (dataset, tag), out in runs.items():
        budget = "L-BFGS to its stopping rule" if tag == "conv" else f"L-BFGS budget {out['max_iter']} iterations"
        lines += [f"## {DATASETS[dataset]}: {budget}", "", f"Setup: {out['setup']}.", ""]
        lines += _valid_lines(out) if "valid" in out else []
        lines += _topk_lines(out) if "topk" in out else []
        lines += _partial_lines(out) if out.get("partial") else []
        lines += _timing_lines(out) if "sequence_log_proba_over_predict" in out["timing"] else []
    text = "\n".join(lines) + "\n"
    write_text(RESULTS / "crf_structure.md", text)
    save_json(RESULTS / "crf_structure.json", {f"{dataset}_{tag}": out for (dataset, tag), out in runs.items()})
    print(text, flush=True)


def _valid_lines(out):
    lines = ["### 1. Valid BIO chunks", "",
             "| model | invalid I- tokens | sequences with one | chunk F1 | fit CPU s | iterations | stopped by |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['model']} | {r['invalid_I_tokens']} | {r['sentences_with_invalid']} | {r['chunk_f1']:.2f} | "
              f"{r['fit_cpu_s']:.0f} | {r['n_iter']} | {r['stopped']} |" for r in out["valid"]]
    for key, what in (("trained", "trained and decoded with the mask"), ("decoding_only", "mask at decoding only")):
        d = out.get("bio_minus_plain", {}).get(key)
        if d is not None:
            lines += ["", f"F1 with BIO ({what}) minus without: 95% paired bootstrap interval over the test "
                      f"sequences [{d['low']:+.2f}, {d['high']:+.2f}] points; {d['sequences_that_differ']} test "
                      "sequences decoded differently."]
    for r in out["valid"]:
        if "same_weights_as_plain" in r:
            same = "exactly" if r["same_weights_as_plain"] else "NOT"
            lines += ["", f"`allowed_transitions_in_fit=False` trained {same} the plain model's weights "
                      "(`coef_`, `intercept_`, `transition_` compared with `==`)."]
        elif r["model"] == "ChainCRF, BIO mask at decoding only":
            lines += ["", "Decoding only: the plain model's weights copied by hand into the BIO model (run before "
                      "`allowed_transitions_in_fit` existed; its fit is the plain one)."]
        rerun = r.get("rerun_alone")
        if rerun:
            lines += ["", "That row was rerun alone (`--part decode`, with a plain fit beside it) after the rest of "
                      "the table: the plain fit gave " + ("the same" if rerun["plain_f1_as_stored"] else "a DIFFERENT")
                      + " F1 and " + ("the same" if rerun["plain_n_iter_as_stored"] else "a DIFFERENT")
                      + " number of iterations as the plain row above."]
    if "objective" in out:
        lines += ["", f"Final training objective (penalised negative log-likelihood; with the mask, `log Z` sums "
                  f"over the valid sequences only): {out['objective']['plain']:.1f} without, "
                  f"{out['objective']['bio']:.1f} with `allowed_transitions`."]
    return lines + [""]


def _topk_lines(out):
    lines = ["### 2. Oracle F1 of the n-best lists (`predict_topk`)", "",
              "| model | 1-best F1 | oracle 5-best | oracle 20-best | prob. mass 5 / 20 | "
              "5-best / 20-best CPU vs predict |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {r['model']} | {r['1-best']:.2f} | {r['oracle 5-best']:.2f} | {r['oracle 20-best']:.2f} | "
              f"{r['mean prob mass of 5-best']:.3f} / {r['mean prob mass of 20-best']:.3f} | "
              f"{r['topk5_over_predict']:.1f}x / {r['topk20_over_predict']:.1f}x |" for r in out["topk"]]
    return lines + ["", f"Forced decoding with every other test token's label given (`predict(X, fixed=...)`): "
                    f"F1 {out['fixed_every_other_token_f1']:.2f}.", ""]


def _partial_lines(out):
    note = ("A hidden token is the set of every training label (any label).") if out.get("hidden_as_set") else (
        "A hidden token is `None` (25%, 50%; first run) or the set of every training label (75%: with `None` "
        "a rare B-UCP vanished from the known labels while an I-UCP stayed, which BIO makes infeasible, and fit "
        "raised a ValueError naming the sentence). Both mean any label; the same tokens are hidden.")
    lines = ["### 3. Partial labels (tokens hidden at random)", "", note, "",
              "| hidden | partial-label fit F1 | fit on fully labelled sentences only F1 (sentences) | "
              "partial fit CPU vs full-label fit | iterations |", "|---|---|---|---|---|"]
    lines += [f"| {100 * r['hidden']:.0f}% | {r['partial_label_f1']:.2f} | {r['full_sentences_only_f1']:.2f} "
              f"({r['fully_labelled_sentences']}) | {r['partial_fit_over_full_fit']:.2f}x | {r['n_iter']} |"
              for r in out["partial"]]
    full = [r["chunk_f1"] for r in out.get("valid", []) if "BIO" in r["model"]]
    if full:
        lines += ["", f"Every label known (table 1's BIO model, the ceiling): F1 {full[0]:.2f}. At 50% and more "
                  "hidden, hardly any sequence keeps all its labels, so the second column is the floor a user "
                  "without partial-label training is left with."]
    return lines + [""]


def _timing_lines(out):
    t = out["timing"]
    lines = ["### Timings (CPU-time ratios, new path / plain path)", "",
             f"- fit with allowed_transitions='BIO' / plain fit: {t['fit_bio_over_plain']:.2f}",
             f"- predict with the BIO mask / plain predict: {t['predict_bio_over_plain']:.2f}",
             f"- sequence_log_proba / plain predict: {t['sequence_log_proba_over_predict']:.2f}",
             f"- predict_marginals(fixed=...) / predict_marginals: {t['marginals_fixed_over_marginals']:.2f}"]
    if out.get("partial"):
        lines.append("- partial-label fit / full-label fit (same budget): see table 3.")
    return lines + [""]


def load(dataset, n_train, n_test, with_dicts):
    """``X_train, y_train, X_test, y_test, train_dicts, test_dicts`` (dicts None without the peer)."""
    if dataset == "grobid":
        X_train, y_train, X_test, y_test = citations.bio_split()
        X_train, y_train, X_test, y_test = X_train[:n_train], y_train[:n_train], X_test[:n_test], y_test[:n_test]
        dicts = (citations.crfsuite_dicts(X_train), citations.crfsuite_dicts(X_test)) if with_dicts else (None, None)
        return X_train, y_train, X_test, y_test, *dicts
    train, test = load_conll2000("train"), load_conll2000("test")
    y_train = [np.asarray(v) for v in train.labels[:n_train]]
    y_test = [np.asarray(v) for v in test.labels[:n_test]]
    featurizer = WindowFeaturizer()
    X_train, X_test = featurizer.fit_transform(train.sequences[:n_train]), featurizer.transform(test.sequences[:n_test])
    dicts = (None, None)
    if with_dicts:
        dicts = featurizer.to_dicts(train.sequences[:n_train]), featurizer.to_dicts(test.sequences[:n_test])
    return X_train, y_train, X_test, y_test, *dicts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=list(DATASETS), default="conll2000")
    parser.add_argument("--max-iter", type=int, default=None, help="L-BFGS budget (default: to the stopping rule)")
    parser.add_argument("--n-train", type=int, default=None, help="first N training sequences (default all)")
    parser.add_argument("--n-test", type=int, default=None, help="first N test sequences (default all)")
    parser.add_argument("--no-crfsuite", action="store_true")
    parser.add_argument("--rates", default=None, help="hidden-token rates of part 'partial', e.g. 0.5,0.75")
    parser.add_argument("--part", choices=["valid", "topk", "partial", "decode"], nargs="+",
                        default=["valid", "topk", "partial"],
                        help="the experiments to run (topk without valid refits its two models; partial reads its "
                             "fit time; decode reruns only the decoding-only row of a saved valid part)")
    add_report_only(parser)
    args = parse_args(parser)
    if args.report_only:
        write()
        return finish()
    X_train, y_train, X_test, y_test, train_dicts, test_dicts = load(
        args.dataset, args.n_train, args.n_test, not args.no_crfsuite and "valid" in args.part)
    fit_ours(X_train[:20], y_train[:20], 2, allowed_transitions="BIO")[0].predict_topk(X_test[:5], 3)  # compile
    budget = "to the stopping rule" if args.max_iter is None else f"budget {args.max_iter} iterations"
    out = {"setup": f"train {len(y_train)} / test {len(y_test)} sequences, {X_train[0].shape[1]} attributes, "
                    f"{len(np.unique(np.concatenate(y_train)))} labels, c2={C2}, L-BFGS {budget} on every side",
           "max_iter": args.max_iter, "hidden_as_set": True, "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    tag = run_tag(args.max_iter)
    if "decode" in args.part:
        experiment_decode(X_train, y_train, X_test, y_test, args.max_iter,
                          RESULTS / f"crf_structure_{args.dataset}_{tag}_valid.json")
    if "valid" in args.part:
        plain, bio, predict_plain = experiment_valid(X_train, y_train, X_test, y_test, train_dicts, test_dicts,
                                                     args.max_iter, out)
        save(out, args.dataset, "valid")
    if "topk" in args.part:
        if "valid" not in args.part:  # the two models of part 'valid' again, without the peer
            topk_out = dict(out)
            plain, bio, predict_plain = experiment_valid(X_train, y_train, X_test, y_test, None, None,
                                                         args.max_iter, topk_out)
            out["timing"] = {"predict_bio_over_plain": topk_out["timing"]["predict_bio_over_plain"]}
        out = {k: v for k, v in out.items() if k not in ("valid", "objective", "bio_minus_plain")}
        experiment_topk(plain, bio, X_test, y_test, predict_plain, out)
        save(out, args.dataset, "topk")
    if "partial" in args.part:
        stored = RESULTS / f"crf_structure_{args.dataset}_{tag}_valid.json"
        if "valid" in out or stored.exists():
            valid = out if "valid" in out else load_json(stored)
            fit_full = next(r["fit_cpu_s"] for r in valid["valid"] if "BIO" in r["model"])
        else:  # no part 'valid' at this budget: time the full-label fit here
            fit_full = fit_ours(X_train, y_train, args.max_iter, allowed_transitions="BIO")[1]
        rates = RATES if args.rates is None else tuple(float(r) for r in args.rates.split(","))
        part = "partial" if args.rates is None else "partial_" + args.rates.replace(",", "_")
        out = {k: v for k, v in out.items() if k not in ("valid", "objective", "bio_minus_plain", "topk", "timing")}
        experiment_partial(X_train, y_train, X_test, y_test, fit_full, args.max_iter, out, rates,
                           lambda o: save(o, args.dataset, part))


if __name__ == "__main__":
    main()
