"""How good must a per-reference choice of constraints be for learned constraints to reach +1.0?

Issue #23. The oracle ceiling (``bench_umass_learners.py``) lets every reference keep exactly the candidates its own gold
satisfies; it reaches +1.5 / +1.8 on dev (psi 3 / 10) and +1.1 / +1.4 on test, and every
realizable learner gets a third of it. A candidate can only change a reference whose base
decoding breaks it, so the choice that matters is made on those (reference, candidate) pairs:
*helpful* ones (the gold keeps the candidate: keeping it can fix the reference) and *harmful*
ones (the gold breaks it too: keeping it pushes the reference away from its gold). This step
degrades the oracle on exactly those pairs and measures where +1.0 is lost, on the main run's
base CRF and family (UMass dev and test; the gold is read: a diagnostic, not a model):

- ``keep_helpful``: the share of the helpful pairs the selector keeps (the oracle: 1);
- ``keep_harmful``: the share of the harmful pairs it keeps (the oracle: 0);
- every other pair as the oracle has it (kept where the gold keeps it); one draw, seed 0.

Beside it, the sampled gate (``psi_gate="probability"``, 100 exact samples of the base CRF per
reference) as the selector everywhere: keep a pair when its satisfaction probability is at least
``t``, its measured shares on the same pairs, its ROC area there, and its gain at the same
strengths. Output: ``umass_selector.json``.

``--grobid FOLD ...``: the same on the held-back GROBID folds (``bench_umass_grobid_ceiling.py``'s
base CRFs run to CRFsuite's stop, the family from each training fold's labels at the UMass-dev
``min_support``, IO segment F1), ``umass_selector_grobid.json``.

Run (after ``papers/bench_umass_table1.py``'s main run)::

    SKLEARN_STRUCT_DATA=../shared/data nice -n 10 python benchmarks/studies/bench_umass_selector.py
    SKLEARN_STRUCT_DATA=../shared/data nice -n 10 python benchmarks/studies/bench_umass_selector.py --grobid 0 1 2 3 4
    python benchmarks/studies/bench_umass_selector.py --report-only   # the tables from the saved results

Output: ``benchmarks/results/umass_selector/umass_selector.md`` and the json above.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numba
import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.internals import fit_energy, satisfaction_probability  # noqa: E402
from _lib.report import add_report_only, finish, parse_args, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from _lib.umass import grobid as gc  # noqa: E402
from _lib.umass import protocol as bt  # noqa: E402

from sklearn_struct import NonLocalCRF  # noqa: E402
from sklearn_struct.constraint_learning import ConstraintFamily  # noqa: E402

RESULTS = results_dir("umass_selector")
PATH = RESULTS / "umass_selector.json"
GROBID_PATH = RESULTS / "umass_selector_grobid.json"
KEEP_HELPFUL = (1.0, 0.75, 0.5, 0.25)
KEEP_HARMFUL = (0.0, 0.05, 0.1, 0.25, 0.5)
THRESHOLDS = (0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.9)
N_SAMPLES = 100


def sweep_split(base, fitted, X, y, log, name, scheme="IOB2"):
    """The oracle degraded on the pairs that matter, and the gate's thresholds, at each ceiling strength."""
    gold = [np.searchsorted(base.classes_, v) for v in y]
    energy = fitted.bind(X)
    broken = energy.violations(gold) > 0
    data, unary = bt.predict_unary(X, base.coef_, base.intercept_)
    labels, _ = bt.viterbi(unary, base.transition_, data.offsets)
    base_broken = energy.packed_violations(labels, data.offsets) > 0
    helpful, harmful = base_broken & ~broken, base_broken & broken
    p = satisfaction_probability(energy, unary, base.transition_, data.offsets, N_SAMPLES, random_state=0)
    base_f1 = bt.seg_f1(y, base.predict(X), scheme)
    out = {"base": base_f1, "n_refs": len(y), "n_helpful": int(helpful.sum()), "n_harmful": int(harmful.sum()),
           "n_broken": int(broken.sum()), "refs_helpful": int(helpful.any(axis=1).sum()),
           "gate_auc": float(roc_auc_score(helpful[base_broken], p[base_broken])), "degraded": [], "gate": []}
    log(f"{name}: base {base_f1:.2f}, {out['n_helpful']} helpful and {out['n_harmful']} harmful pairs, "
        f"gate ROC area {out['gate_auc']:.3f}")
    u = np.random.RandomState(0).random_sample(broken.shape)
    oracle_keep = ~broken
    for w in bt.CEILING_STRENGTHS:
        for h in KEEP_HELPFUL:
            for f in KEEP_HARMFUL:
                keep = np.where(helpful, u < h, np.where(harmful, u < f, oracle_keep))
                pred, conv = bt.decode_psi(base, energy, unary, data, np.where(keep, w, 0.0))
                out["degraded"].append(dict(strength=w, keep_helpful=h, keep_harmful=f, f1=bt.seg_f1(y, pred, scheme),
                                            converged=conv))
                log(f"{name} psi {w:g} keep helpful {h} harmful {f}: {out['degraded'][-1]['f1'] - base_f1:+.2f}")
        for t in THRESHOLDS:
            keep = p >= t
            row = dict(strength=w, threshold=t, keep_helpful=float(keep[helpful].mean()),
                       keep_harmful=float(keep[harmful].mean()))
            pred, row["converged"] = bt.decode_psi(base, energy, unary, data, np.where(keep, w, 0.0))
            row["f1"] = bt.seg_f1(y, pred, scheme)
            elsewhere = np.where(base_broken, keep, oracle_keep)  # the gate where it matters, the oracle elsewhere
            pred, _ = bt.decode_psi(base, energy, unary, data, np.where(elsewhere, w, 0.0))
            row["f1_oracle_elsewhere"] = bt.seg_f1(y, pred, scheme)
            out["gate"].append(row)
            log(f"{name} psi {w:g} gate p >= {t}: keeps {row['keep_helpful']:.2f} helpful, "
                f"{row['keep_harmful']:.2f} harmful: {row['f1'] - base_f1:+.2f} "
                f"(oracle elsewhere {row['f1_oracle_elsewhere'] - base_f1:+.2f})")
    return out


def run(saved, log):
    """The main run's base CRF (its c2 and cap) and family; the sweep on dev and on test."""
    X, y, data, _ = bt.load_features()
    ms = saved["family_choice"]["min_support"]
    out = {"c2": saved["c2"], "max_iter": bt.MAX_ITER, "min_support": ms}
    base = bt.timed(out, "fit_base_s", bt.quiet, NonLocalCRF(c2=saved["c2"], max_iter=bt.MAX_ITER,
                                                           random_state=0).fit, X["train"], y["train"])
    fam = ConstraintFamily(min_support=ms).fit(data["train"].labels)
    y_enc = [np.searchsorted(base.classes_, v) for v in y["train"]]
    fitted = fit_energy(fam.constraints_, y_enc, base.classes_)
    out["n_candidates"] = len(fam.constraints_)
    for split in ("dev", "test"):
        t0 = time.perf_counter()
        out[split] = sweep_split(base, fitted, X[split], y[split], log, split)
        out[split]["seconds"] = time.perf_counter() - t0
    return out


def run_grobid(folds, log):
    """The sweep on GROBID test folds (each fold written as soon as done, beside earlier runs' folds)."""
    ms = json.loads((bt.RESULTS / "umass_table1.json").read_text())["family_choice"]["min_support"]
    for k in folds:
        Xtr, ytr, Xte, yte, c2 = gc.fold_data(k)
        base = bt.quiet(NonLocalCRF(c2=c2, max_iter=None, random_state=0).fit, Xtr, ytr)
        fam = ConstraintFamily(min_support=ms, scheme=gc.SCHEME).fit([list(v) for v in ytr])
        fitted = fit_energy(fam.constraints_, [np.searchsorted(base.classes_, v) for v in ytr], base.classes_)
        row = dict(sweep_split(base, fitted, Xte, yte, log, f"GROBID fold {k}", gc.SCHEME), fold=k, c2=c2,
                   min_support=ms, n_candidates=len(fam.constraints_))
        rows = json.loads(GROBID_PATH.read_text()) if GROBID_PATH.exists() else []
        GROBID_PATH.write_text(json.dumps(sorted([r for r in rows if r["fold"] != k] + [row], key=lambda r: r["fold"])))


def grobid_report(rows):
    """Markdown: the degraded oracle and the gate on GROBID, mean gain over the folds."""
    def mean_gain(key, match):
        return np.mean([next(x for x in r[key] if all(x[a] == b for a, b in match.items()))["f1"] - r["base"]
                        for r in rows])

    L = [f"GROBID folds {[r['fold'] for r in rows]} (`--grobid`, held back; base CRFs to CRFsuite's stop, "
         f"{', '.join(str(r['n_candidates']) for r in rows)} candidates, IO segment F1): mean gain over the base "
         f"CRF ({np.mean([r['base'] for r in rows]):.2f}); {sum(r['n_helpful'] for r in rows)} helpful and "
         f"{sum(r['n_harmful'] for r in rows)} harmful pairs in all, the gate's ROC area "
         f"{np.mean([r['gate_auc'] for r in rows]):.3f} (mean over folds).", "",
         "| psi | keep helpful | " + " | ".join(f"keep harmful {f}" for f in KEEP_HARMFUL) + " |",
         "|---|---|" + "---:|" * len(KEEP_HARMFUL)]
    for w in bt.CEILING_STRENGTHS:
        for h in KEEP_HELPFUL:
            L.append(f"| {w:g} | {h} | " + " | ".join(
                f"{mean_gain('degraded', dict(strength=w, keep_helpful=h, keep_harmful=f)):+.2f}" for f in KEEP_HARMFUL)
                + " |")
    L += ["", "| psi | t | keeps helpful | keeps harmful | gain | gain, the gate on the pairs that matter and the "
          "oracle elsewhere |", "|---|---|---:|---:|---:|---:|"]
    for w in bt.CEILING_STRENGTHS:
        for t in THRESHOLDS:
            g = [next(x for x in r["gate"] if x["strength"] == w and x["threshold"] == t) for r in rows]
            gain = mean_gain("gate", dict(strength=w, threshold=t))
            elsewhere = np.mean([x["f1_oracle_elsewhere"] - r["base"] for x, r in zip(g, rows)])
            L.append(f"| {w:g} | {t} | {np.mean([x['keep_helpful'] for x in g]):.2f} | "
                     f"{np.mean([x['keep_harmful'] for x in g]):.2f} | {gain:+.2f} | {elsewhere:+.2f} |")
    return L + [""]


def _gain(row, base):
    return f"{row['f1'] - base:+.2f}"


def report(out):
    """Markdown section: the degraded oracle's gain over the base CRF, and the gate's operating points."""
    L = ["## How good must a per-reference selector be? (reads the gold: a diagnostic)", "",
         f"The main run's base CRF (c2 {out['c2']}, cap {out['max_iter']}) and family (min_support "
         f"{out['min_support']}, {out['n_candidates']} candidates). A candidate changes a reference only if the "
         "base decoding breaks it; of those pairs, *helpful* ones are kept by the gold (keeping the candidate can "
         "fix the reference), *harmful* ones are broken by the gold too. The oracle ceiling keeps every helpful pair "
         "and no harmful one; below, each helpful pair is kept with probability *keep helpful* and each harmful one "
         "with probability *keep harmful* (one draw, seed 0), every other pair as the oracle has it, kept pairs at "
         "strength psi. Segment F1 gain over the base CRF.", ""]
    for split in ("dev", "test"):
        s = out[split]
        L += [f"**{split}** (base {s['base']:.2f}; {s['n_helpful']} helpful pairs in {s['refs_helpful']} of "
              f"{s['n_refs']} references, {s['n_harmful']} harmful pairs):", "",
              "| psi | keep helpful | " + " | ".join(f"keep harmful {f}" for f in KEEP_HARMFUL) + " |",
              "|---|---|" + "---:|" * len(KEEP_HARMFUL)]
        for w in bt.CEILING_STRENGTHS:
            for h in KEEP_HELPFUL:
                cells = [_gain(next(x for x in s["degraded"] if x["strength"] == w and x["keep_helpful"] == h
                                    and x["keep_harmful"] == f), s["base"]) for f in KEEP_HARMFUL]
                L.append(f"| {w:g} | {h} | " + " | ".join(cells) + " |")
        L += ["", f"The sampled gate as the selector on {split}, on every pair (keep a pair when it holds in at least "
              f"a share t of {N_SAMPLES} base-CRF samples); its ROC area between helpful and harmful pairs "
              f"{s['gate_auc']:.3f}:", "",
              "| psi | t | keeps helpful | keeps harmful | gain | converged | gain, the gate on the pairs that matter "
              "and the oracle elsewhere |", "|---|---|---:|---:|---:|---:|---:|"]
        L += [f"| {g['strength']:g} | {g['threshold']} | {g['keep_helpful']:.2f} | {g['keep_harmful']:.2f} | "
              f"{_gain(g, s['base'])} | {100 * g['converged']:.0f}% | "
              f"{g['f1_oracle_elsewhere'] - s['base']:+.2f} |" for g in s["gate"]]
        L.append("")
    if GROBID_PATH.exists():
        L += grobid_report(json.loads(GROBID_PATH.read_text()))
    return L


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grobid", type=int, nargs="*", help="the same on GROBID folds, base CRFs to "
                        "convergence (umass_selector_grobid.json)")
    add_report_only(parser)
    args = parse_args(parser)
    numba.set_num_threads(1)
    start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - start:7.0f}s] {msg}", flush=True)

    if args.grobid and not args.report_only:
        run_grobid(args.grobid, log)
    elif not args.report_only:
        res = run(json.loads((bt.RESULTS / "umass_table1.json").read_text()), log)
        PATH.write_text(json.dumps(dict(res, elapsed=time.perf_counter() - start)))
    L = report(json.loads(PATH.read_text()))
    L[0] = "# " + L[0].removeprefix("## ")
    L += ["Script: `benchmarks/studies/bench_umass_selector.py`; numbers: `umass_selector.json`, "
          "`umass_selector_grobid.json`.", ""]
    write_text(RESULTS / "umass_selector.md", "\n".join(L))
    print("\n".join(L))


if __name__ == "__main__":
    main()
    finish()  # with --report-only --check: exit 1 if a table would change
