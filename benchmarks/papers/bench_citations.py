"""Citation field extraction (Table 1 and Figures 1-2 of Vilnis et al. 2015): learned soft constraints.

Protocol
--------
Data: the GROBID citation corpus in Cora's 13 field labels
(``$SKLEARN_STRUCT_DATA/citations``, 5,084 references, 88,796 whitespace tokens; CC-BY 4.0,
GROBID / Patrice Lopez and contributors, see its PROVENANCE.txt). The paper used the UMass
citation set (Anzaroot & McCallum 2013), which we do not have; this is the same task
(segmenting reference strings into fields) on other data, so absolute numbers differ.
There is no official split: 5-fold cross-validation over references (``KFold(5,
shuffle=True, random_state=0)``), every fold tested once.

Features (the same for every system): CRFsuite-style token dicts
(``benchmarks/_lib/citation_features.py``): lower-cased word with and without trailing
punctuation, word shape, prefixes and suffixes, year / initial / page-range / URL flags,
digit count, case, punctuation characters, relative and absolute position, the words,
shapes and flags of the tokens within +-3, and the previous-word bigram. Our CRF gets them
through ``SequenceVectorizer(min_freq=2)`` fitted on the training part; sklearn-crfsuite
gets the dicts of the same vectorised features (features seen once are dropped for both).

Systems, per fold:

``base CRF``
    ``NonLocalCRF`` without energy: L-BFGS on the L2-penalised likelihood (CRFsuite's
    objective), run to L-BFGS's own stop (``max_iter=None``: CRFsuite's stopping rule,
    relative objective change over 10 iterations below ``tol`` = 1e-5 or gradient test
    ``epsilon`` = 1e-5; the same as ``bench_umass_table1.py --grobid --to-convergence`` and
    ``studies/bench_umass_grobid_ceiling.py``). ``c2`` chosen on an 80/20 split of the fold's training
    part (grid ``C2_GRID``), never on the test fold, its fits also run to the stop (see
    :func:`tune_c2`). It is exactly the base model of the next row (same fitted ``theta``).
    Before this rerun every fit stopped at ``CAPPED_MAX_ITER`` = 100 L-BFGS iterations (the
    c2 grid at 60), far from converged with ChainCRF's L-BFGS (fold 0: 81.69 at the cap,
    86.17 at the stop); the README keeps that run's numbers as "previous run (cap 100)".
``+ constraints (psi held out)``
    The same base CRF plus the soft-constraint templates ``TEMPLATES`` (each field at most
    one segment; at least one author, title and date segment; journal and booktitle
    exclusive; the first token an author), one learned weight per term (smoothed hinge,
    eq. 20), ``psi`` learned by Algorithm 3 on out-of-fold base-CRF marginals
    (``psi_holdout=PSI_HOLDOUT``, K-fold cross-fitting inside the training part; the
    cross-fitting CRFs take the model's ``max_iter``, so they too run to the stop).
    Inference: Bethe-RDA, beta = 0, capped at 40 iterations, tolerance 1e-4; prediction by
    Viterbi under the final dual potentials.
``+ constraints (psi in-sample)``
    The same, with ``psi`` learned on the base CRF's own training marginals
    (``psi_holdout=None``, the library's behaviour before held-out learning).
``sklearn-crfsuite``
    CRFsuite L-BFGS (``c1 = 0``, ``all_possible_transitions=True``, as our full transition
    table) on the same features, with the ``c2`` chosen for our CRF: both minimise the
    same L2-penalised likelihood (ours leaves the label bias unpenalised), so the tuned
    value transfers; tuning it separately would double the cost on our shared machine.
    Run to CRFsuite's own stop (``max_iterations=None``: its defaults, ``epsilon`` =
    ``delta`` = 1e-5, ``period`` = 10, the rule our L-BFGS copies).

Metrics: segment F1 (every maximal run of one label is a segment, ``scheme="IO"`` of
:func:`sklearn_struct.metrics.chunk_precision_recall_f1`), micro over fields and per
field (:func:`sklearn_struct.metrics.segment_report`), and token accuracy. Figures 1-2:
on every test fold, segment F1 of the constrained model against the cap on inference
iterations, and the distribution of iterations to convergence at the cap of 40.

The constraint set, ``PSI_HOLDOUT`` and the Algorithm 3 settings were chosen on fold 0's
training part (its 80/20 inner split; ``/work/notes``-style exploration recorded in the
results' notes), never on a test fold; that exploration used capped L-BFGS fits and was not
redone when the fits were run to the stop.

Run::

    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/papers/bench_citations.py

``--folds 0 1`` runs a subset of folds; ``--report-only`` rewrites the table from the JSON
(``--merge citations citations_f3 ...`` joins folds run by separate processes; the whole-run
time is then the sum of the processes' times).
Output: ``benchmarks/results/citations/citations.{md,json,png}``.
"""

import argparse
import copy
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numba
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import add_report_only, finish, load_json, parse_args, save_figure, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from _lib.citation_features import citation_features  # noqa: E402

from sklearn_struct import NonLocalCRF  # noqa: E402
from _lib.internals import learn_psi  # noqa: E402
from sklearn_struct.constraints import AtLeastSegments, AtMostSegments, FirstLabel, MutuallyExclusive  # noqa: E402
from sklearn_struct.datasets import load_grobid_citations  # noqa: E402
from sklearn_struct.metrics import chunk_precision_recall_f1, segment_report, token_accuracy  # noqa: E402
from sklearn_struct.preprocessing import SequenceVectorizer  # noqa: E402
from _lib.citations import (CAPPED_MAX_ITER, crfsuite_dicts, FIELDS, load, MAX_ITER, PSI_SETTINGS, TEMPLATES,  # noqa: E402
                            vectorize)

RESULTS = results_dir("citations")
C2_GRID = (0.3, 1.0)
TUNE_MAX_ITER = None  # the c2 grid fits too (see tune_c2)
PSI_HOLDOUT = 3
CAPS = (0, 1, 2, 3, 5, 10, 20, 40)
PAPER = {"base": 94.47, "constrained": 95.47, "anzaroot_base": 94.41, "soft_dd": 95.39}


def seg_f1(y_true, y_pred):
    return chunk_precision_recall_f1(y_true, y_pred, scheme="IO")[2]


OUT = "citations"


def fit_ours(X, y, c2, energy=None, max_iter=MAX_ITER, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return NonLocalCRF(energy, c2=c2, max_iter=max_iter, random_state=0, **kw).fit(X, y)


def fit_crfsuite(D, y, c2):
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=c2, max_iterations=MAX_ITER,
                               all_possible_transitions=True)
    crf.fit(D, [list(v) for v in y])
    crf.n_iter_ = len(crf.training_log_.iterations)
    return crf


def tune_c2(feats, y, train, seed):
    """c2 on an 80/20 split of the training part (our CRF; CRFsuite minimises the same objective).

    The grid fits run like the final fits, to L-BFGS's stop (``TUNE_MAX_ITER = None``). The
    previous run capped them at 60 iterations to save time; with the final fits now converged
    that cap would compare the grid's values at an early stop that itself regularises (fold 0's
    base is 5 points below its converged F1 at 100 iterations), not the converged fits whose c2
    it picks. The cost is two more converged fits per fold (on 80% of its training part).
    Returns the pick, the validation F1 per c2 and the L-BFGS iterations per c2.
    """
    rng = np.random.RandomState(seed)
    perm = rng.permutation(train)
    cut = int(0.8 * len(perm))
    itr, iva = perm[:cut], perm[cut:]
    Xtr, Xva = vectorize(feats, itr, iva)
    ytr, yva = [y[i] for i in itr], [y[i] for i in iva]
    scores, n_iter = {}, {}
    for c2 in C2_GRID:
        model = fit_ours(Xtr, ytr, c2, max_iter=TUNE_MAX_ITER)
        scores[c2], n_iter[c2] = seg_f1(yva, model.predict(Xva)), int(model.n_iter_)
        print(f"    tune c2={c2}: validation segment F1 {100 * scores[c2]:.2f} ({n_iter[c2]} L-BFGS iterations)",
              flush=True)
    return max(scores, key=scores.get), scores, n_iter


def split_fields(y_seqs):
    """References in which some field forms more than one segment."""
    n = 0
    for s in y_seqs:
        starts = s[np.r_[True, s[1:] != s[:-1]]]
        n += len(starts) != len(set(starts.tolist()))
    return n


def run_fold(k, feats, y, train, test):
    print(f"fold {k}: {len(train)} train / {len(test)} test references", flush=True)
    out = {"fold": k}
    c2_ours, grid, tune_iter = tune_c2(feats, y, train, seed=100 + k)
    c2_cs = c2_ours
    out.update(c2_ours=c2_ours, c2_crfsuite=c2_cs, tune=grid, tune_n_iter=tune_iter, max_iter=MAX_ITER)
    Xtr, Xte = vectorize(feats, train, test)
    ytr, yte = [y[i] for i in train], [y[i] for i in test]

    t0 = time.perf_counter()
    model = fit_ours(Xtr, ytr, c2_ours, TEMPLATES, psi_holdout=PSI_HOLDOUT, **PSI_SETTINGS)
    out["fit_constrained_s"] = time.perf_counter() - t0
    out["base_n_iter"] = int(model.n_iter_)
    base = copy.deepcopy(model)
    base.energy = None
    t0 = time.perf_counter()
    pred_base = base.predict(Xte)
    out["predict_base_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = model.infer(Xte)
    out["predict_constrained_s"] = time.perf_counter() - t0
    out["psi"] = model.psi_.tolist()
    out["term_names"] = model.energy_.term_names_
    out["n_iter"] = res.n_iter.tolist()
    out["converged"] = res.converged.tolist()
    out["cap_f1"] = {str(c): seg_f1(yte, model.infer(Xte, max_iter=c).labels) for c in CAPS}

    # psi learned in-sample (psi_holdout=None) on the same base CRF: only the psi step differs
    insample = copy.deepcopy(model)
    insample.psi_holdout = None
    y_enc = [np.searchsorted(model.classes_, v) for v in ytr]
    base_theta = (model.coef_, model.intercept_, model.transition_)
    res_in = learn_psi(insample, Xtr, y_enc, model.energy_, None, *insample._psi_thetas(Xtr, y_enc, base_theta))
    insample.psi_ = res_in.psi
    out["psi_insample"] = insample.psi_.tolist()

    Dtr, Dte = crfsuite_dicts(Xtr), crfsuite_dicts(Xte)
    t0 = time.perf_counter()
    cs = fit_crfsuite(Dtr, ytr, c2_cs)
    out["fit_crfsuite_s"] = time.perf_counter() - t0
    out["crfsuite_n_iter"] = cs.n_iter_
    pred_cs = [np.array(p) for p in cs.predict(Dte)]

    preds = {"base": pred_base, "constrained": res.labels, "insample": insample.predict(Xte), "crfsuite": pred_cs}
    for name, pred in preds.items():
        out[name] = {
            "f1": seg_f1(yte, pred),
            "acc": token_accuracy(yte, pred),
            "fields": {f: v["f1-score"] for f, v in segment_report(yte, pred, scheme="IO", output_dict=True).items()
                       if not f.endswith("avg")},
            "split_refs": split_fields(pred),
        }
    out["gold_split_refs"] = split_fields(yte)
    print(f"  base {100 * out['base']['f1']:.2f} ({out['base_n_iter']} L-BFGS iterations; crfsuite "
          f"{out['crfsuite_n_iter']})  constrained {100 * out['constrained']['f1']:.2f}  "
          f"in-sample psi {100 * out['insample']['f1']:.2f}  crfsuite {100 * out['crfsuite']['f1']:.2f}", flush=True)
    return out


NOTES = """## Notes

- **What was tried to reach +1.0 (fold 0's training part only: its 80/20 inner split, c2 = 0.3,
  150 L-BFGS iterations, psi_holdout = 3; validation segment F1, base CRF 83.27):**
  - each field at most one segment, psi learned with the library's old step size 0.1: 83.51;
  - the issue's hand-written set (at most one segment per field; at least one author, title,
    date; journal xor booktitle), step 0.1: 83.77 (psi barely leaves 1.0);
  - the same with psi fixed (no learning) at 3: 83.60, at 10: 81.40 (too strong: fields are
    merged or relabelled to satisfy the counts);
  - learned with step 3: 83.84, step 10: 83.85 (psi 1-2.9 for the "at most one" terms of
    author, date, title, pages, journal-xor-booktitle);
  - plus "the first token is an author": 83.84 (its psi falls to ~0.6: many references start
    with an editor, a title or a collaboration);
  - plus eight "a before b" rules (author/title/date/journal/volume/pages order, adjacent form):
    83.77; with 6 epochs instead of 3: 83.79.

  The benchmark uses the issue's set plus the first-author rule with step 3 and 3 epochs. This
  exploration used capped fits on the earlier L-BFGS; it was not redone with the base CRFs run to
  L-BFGS's stop (the rerun above keeps its choices).
- **Run to the stop, the gain nearly vanishes.** With every CRF fitted to L-BFGS's stop the base
  CRF gains about 4 points over the capped run's, and the constraints' gain falls from +0.30 to
  about +0.05: most of the capped run's gain made up for the under-fitted base (the same as
  `bench_umass_table1.py --grobid --to-convergence` and `bench_umass_grobid_ceiling.py` found). They still
  remove split fields (references with a field in several segments, last column), about as many
  as the gold has.
- **Why the gain is small here.** Most remaining errors are whole fields given the wrong label
  (title vs journal vs booktitle, note vs title, publisher vs title), which no count constraint
  can tell apart, and boundary shifts by one token (punctuation between fields, labelled by the
  converter's rules A/B), which leave the segment counts unchanged. The count constraints fix
  split fields: on the validation split, references with a field in more than one segment fell
  from 67 (base) to 55 (gold: 48, so "at most one segment" is itself wrong for 6% of the
  references). The paper's UMass data has hundreds of constraints learned from its labels
  (Anzaroot et al. 2014); we use 18 hand-written ones.
- **psi in-sample vs held out.** In-sample (`psi_holdout=None`) the base CRF's marginals on its
  own training references are close to the gold labels. With the capped base CRFs psi moved less
  from psi_init in-sample than held out; with the converged ones the two move differently (learned
  psi above): held out raises the "at most one segment" weights (author, date, title, pages,
  journal-xor-booktitle to 1.2-1.6), in-sample leaves them near 1 or lowers them, and drives the
  "at least one" and first-author weights to about 0 (held out: 0.15-1.0). Test F1 is the same
  within noise for both. On generated data where the base CRF memorises its training set,
  in-sample learning does not move psi at all (`tests/test_psi_holdout.py`).
- **Figure 1.** Most of the (small) gain comes in the first one or two Bethe-RDA iterations,
  as in the paper's Figure 1; on some folds F1 after one iteration is above F1 at convergence.
"""


def previous_run():
    """The previous run's line (every L-BFGS fit capped at 100 iterations, the c2 grid at 60)."""
    path = RESULTS / "citations_cap100.json"
    if not path.exists():
        return []
    old = json.loads(path.read_text())["folds"]
    m = {k: 100 * np.mean([f[k]["f1"] for f in old]) for k in ("base", "constrained", "insample", "crfsuite")}
    gain = [100 * (f["constrained"]["f1"] - f["base"]["f1"]) for f in old]
    return ["", f"Previous run (cap 100: every L-BFGS fit stopped at {CAPPED_MAX_ITER} iterations, the c2 grid at 60, "
            "an earlier L-BFGS; `citations_cap100.json`), folds "
            f"{[f['fold'] for f in old]}: base {m['base']:.2f}, + constraints psi held out {m['constrained']:.2f} "
            f"({np.mean(gain):+.2f}; per fold {', '.join(f'{g:+.2f}' for g in gain)}), psi in-sample "
            f"{m['insample']:.2f}, sklearn-crfsuite {m['crfsuite']:.2f}; c2 {[f['c2_ours'] for f in old]}."]


def report(folds, elapsed):
    rows = [("base CRF (ours)", "base", PAPER["base"]),
            ("+ constraints, psi held out (ours)", "constrained", PAPER["constrained"]),
            ("+ constraints, psi in-sample (psi_holdout=None)", "insample", None),
            ("sklearn-crfsuite, same features", "crfsuite", None)]

    def ms(name, key):
        v = 100 * np.array([f[name][key] for f in folds])
        return v.mean(), v.std()

    gain = 100 * np.array([f["constrained"]["f1"] - f["base"]["f1"] for f in folds])
    lines = ["# Citation field extraction (Table 1, Figures 1-2 of Vilnis et al. 2015): learned soft constraints", ""]
    lines.append(f"GROBID citations, 13 Cora fields, 5,084 references; {len(folds)}-fold CV (folds "
                 f"{', '.join(str(f['fold']) for f in folds)}), mean (std) over folds. Segment F1 = every maximal run "
                 "of one label is a segment. Machine: 2 shared cores, one numba thread; whole run "
                 f"{elapsed / 60:.1f} min. The paper's numbers are on the UMass citation set (other data).")
    lines += ["", "| model | segment F1 | std | token acc. | refs with a split field | paper F1 |",
              "|---|---:|---:|---:|---:|---:|"]
    for label, key, paper in rows:
        f1, sd = ms(key, "f1")
        acc, _ = ms(key, "acc")
        split = np.mean([f[key]["split_refs"] for f in folds])
        lines.append(f"| {label} | {f1:.2f} | {sd:.2f} | {acc:.2f} | {split:.1f} | {'' if paper is None else paper} |")
    lines.append(f"| gold | | | | {np.mean([f['gold_split_refs'] for f in folds]):.1f} | |")
    lines += ["", f"Gain of the constraints over the base CRF: {gain.mean():+.2f} segment-F1 points "
              f"(per fold: {', '.join(f'{g:+.2f}' for g in gain)}); paper: +1.00 (94.47 -> 95.47). "
              f"Goal (>= +1.00): {'met' if gain.mean() >= 1.0 else 'NOT met'}."]
    lines += ["", "Per field (segment F1, mean over folds):", "",
              "| field | base | + constraints | crfsuite |", "|---|---:|---:|---:|"]
    for field in FIELDS:
        vals = [np.mean([100 * f[k]["fields"].get(field, 0.0) for f in folds])
                for k in ("base", "constrained", "crfsuite")]
        lines.append(f"| {field} | {vals[0]:.2f} | {vals[1]:.2f} | {vals[2]:.2f} |")
    it = np.concatenate([f["n_iter"] for f in folds])
    conv = np.concatenate([f["converged"] for f in folds])
    lines += ["", "Figure 2 (inference at the cap of 40 on the test references): "
              f"{100 * conv.mean():.1f}% converged (paper 93.7%), mean {it.mean():.1f} iterations (paper 9.8), "
              f"median {np.median(it):.0f}, 95th percentile {np.percentile(it, 95):.0f}.", "",
              "Figure 1 (segment F1 against the cap on inference iterations, mean over folds): "
              + ", ".join(f"{c}: {100 * np.mean([f['cap_f1'][str(c)] for f in folds]):.2f}" for c in CAPS) + "."]
    names = folds[0]["term_names"]
    psi = np.mean([f["psi"] for f in folds], axis=0)
    psi_in = np.mean([f["psi_insample"] for f in folds], axis=0)
    lines += ["", "Learned psi (mean over folds; held out / in-sample, psi_init 1.0): "
              + "; ".join(f"{n}: {a:.2f} / {b:.2f}" for n, a, b in zip(names, psi, psi_in)) + "."]
    fit_ratio = np.mean([f["fit_constrained_s"] / f["fit_crfsuite_s"] for f in folds])
    tune_iter = "; ".join(", ".join(f"{c}: {n}" for c, n in f["tune_n_iter"].items()) for f in folds)
    lines += ["", f"Settings: c2 chosen per fold on an 80/20 split of its training part from {C2_GRID} "
              f"(grid fits to L-BFGS's stop, iterations per fold and c2: {tune_iter}; chosen: "
              f"{[f['c2_ours'] for f in folds]}, used by both CRFs); both CRFs' L-BFGS run to CRFsuite's stopping "
              f"rule (no cap): ours {[f['base_n_iter'] for f in folds]} iterations, CRFsuite "
              f"{[f['crfsuite_n_iter'] for f in folds]}; psi_holdout={PSI_HOLDOUT} (cross-fitting CRFs also to the "
              f"stop); Algorithm 3 {PSI_SETTINGS}; "
              "Bethe-RDA beta=0, cap 40, tol 1e-4. Fit time of the constrained model (base CRF + "
              f"{PSI_HOLDOUT} cross-fitting CRFs + psi) / CRFsuite's fit: {fit_ratio:.1f}x; per fold (s): "
              + ", ".join(f"{f['fit_constrained_s']:.0f} / {f['fit_crfsuite_s']:.0f}" for f in folds) + "."]
    lines += previous_run()
    lines += ["", "Per-fold numbers: `citations.json`. Script: `benchmarks/papers/bench_citations.py`.", "", NOTES]
    write_text(RESULTS / f"{OUT}.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    plot(folds)


def plot(folds):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    f1 = np.array([[100 * f["cap_f1"][str(c)] for c in CAPS] for f in folds])
    ax[0].errorbar(CAPS, f1.mean(axis=0), yerr=f1.std(axis=0), marker="o", capsize=3)
    ax[0].axhline(100 * np.mean([f["base"]["f1"] for f in folds]), color="gray", ls="--", label="base CRF")
    ax[0].set_xlabel("cap on Bethe-RDA iterations")
    ax[0].set_ylabel("test segment F1 (%)")
    ax[0].set_title("Figure 1: F1 vs inference cap")
    ax[0].legend()
    it = np.concatenate([f["n_iter"] for f in folds])
    ax[1].hist(it, bins=np.arange(0, 42, 1))
    ax[1].set_xlabel("iterations to converge (cap 40)")
    ax[1].set_ylabel("test references")
    ax[1].set_title("Figure 2: iterations to converge")
    fig.tight_layout()
    save_figure(fig, RESULTS / f"{OUT}.png", dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folds", type=int, nargs="*", default=list(range(5)))
    add_report_only(parser)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="use only the first N references (smoke test)")
    parser.add_argument("--out", default="citations", help="output name under benchmarks/results/")
    parser.add_argument("--merge", nargs="*", help="with --report-only: result names whose folds to merge")
    args = parse_args(parser)
    global OUT
    OUT = args.out
    path = RESULTS / f"{OUT}.json"
    if args.report_only:
        # --merge a b ...: folds run by separate processes (e.g. --folds 3 --out citations_f3) into one table
        folds, elapsed = {}, 0.0
        for name in args.merge or [OUT]:
            saved = load_json(RESULTS / f"{name}.json")
            for f in saved["folds"]:
                folds.setdefault(f["fold"], f)
            elapsed += saved["elapsed"]
        folds = [folds[k] for k in sorted(folds)]
        if args.merge:
            write_text(path, json.dumps({"folds": folds, "elapsed": elapsed, "python": platform.python_version()}))
        report(folds, elapsed)
        return finish()
    numba.set_num_threads(args.threads)
    start = time.perf_counter()
    feats, y = load()
    if args.limit:
        feats, y = feats[: args.limit], y[: args.limit]
    splits = list(KFold(5, shuffle=True, random_state=0).split(feats))
    folds = []
    for k in args.folds:
        folds.append(run_fold(k, feats, y, *splits[k]))
        elapsed = time.perf_counter() - start
        path.write_text(json.dumps({"folds": folds, "elapsed": elapsed, "python": platform.python_version()}))
    report(folds, time.perf_counter() - start)


if __name__ == "__main__":
    main()
