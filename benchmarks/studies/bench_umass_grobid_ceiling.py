"""What limits the learned family on the held-back GROBID folds: the oracle and in-sample ceilings.

On each fold of ``bench_citations.py``'s 5-fold split, the base CRF run to CRFsuite's stop
(``NonLocalCRF(c2=fold's c2, max_iter=None)``, as ``bench_umass_table1.py --grobid --to-convergence``) and, on the
test fold:

- ``base``: the base CRF;
- ``learned``: the learned family at the UMass-dev choice, psi by Algorithm 3 on 3-fold
  cross-fitted training marginals (held out: the same model as ``--to-convergence``'s row);
- ``oracle``: each test reference keeps, at a fixed psi (3 or 10), exactly the candidates its
  own gold satisfies (a **ceiling** that reads the gold, not a model);
- ``in_sample``: one psi vector fitted by the perceptron on the test fold's own gold and scored
  on the same fold (a **ceiling** for one psi over the family, in-sample by construction).

Every segment F1 with GROBID's IO scheme; the family setting is the main run's choice on UMass dev
(``results/umass_table1/umass_table1.json``: run ``papers/bench_umass_table1.py`` first).

Run::

    SKLEARN_STRUCT_DATA=../shared/data nice -n 10 python benchmarks/studies/bench_umass_grobid_ceiling.py 0 1 2 3 4
    python benchmarks/studies/bench_umass_grobid_ceiling.py --report-only   # the table from the saved folds

Output: ``benchmarks/results/umass_grobid_ceiling/umass_grobid_ceiling.{md,json}``.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.internals import fit_energy, in_sample_thetas  # noqa: E402
from _lib.report import add_report_only, finish, parse_args, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from _lib.umass import protocol as bt  # noqa: E402
from _lib.umass.grobid import fold_data, SCHEME  # noqa: E402

from sklearn_struct import NonLocalCRF  # noqa: E402
from sklearn_struct.constraint_learning import ConstraintFamily  # noqa: E402

RESULTS = results_dir("umass_grobid_ceiling")
PATH = RESULTS / "umass_grobid_ceiling.json"


def learned_f1(row, base, fam, Xtr, ytr, Xte, yte, choice):
    """Held-out learned family (Algorithm 3 on cross-fitted marginals) on the test fold."""
    y_enc = [np.searchsorted(base.classes_, v) for v in ytr]
    thetas = bt.timed(row, "cross_fit_s", bt.cross_fitted, base, Xtr, y_enc)
    settings = {k: v for k, v in choice.items() if k != "min_support"}
    model = bt.with_energy(base, fam.constraints_, thetas, Xtr, y_enc, **bt.FAMILY_FIXED, **settings)
    row["n_kept"] = int(np.sum(model.psi_ > 0))
    return bt.seg_f1(yte, model.predict(Xte), SCHEME)


def in_sample_f1(base, fam, Xte, yte, n_epochs=None, choice=None):
    """One psi fitted on the test fold's own gold, scored there (in-sample).

    By the perceptron (step 3, no L1, ``n_epochs``), or with ``choice`` by Algorithm 3 at the
    UMass-dev family setting under the full-data base CRF's marginals.
    """
    y_enc = [np.searchsorted(base.classes_, v) for v in yte]
    theta = (base.coef_, base.intercept_, base.transition_)
    if choice is None:
        settings = dict(bt.PERCEPTRON_FIXED, psi_l1=0.0, learning_rate=3.0, n_epochs=n_epochs)
    else:
        settings = dict(bt.FAMILY_FIXED, **{k: v for k, v in choice.items() if k != "min_support"})
    model = bt.with_energy(base, fam.constraints_, in_sample_thetas(theta, len(y_enc)), Xte, y_enc, **settings)
    return bt.seg_f1(yte, model.predict(Xte), SCHEME), int(np.sum(model.psi_ > 0))


def ceiling_fold(k, choice, log):
    """Base, held-out learned family, oracle ceilings and in-sample psi on GROBID fold ``k``."""
    Xtr, ytr, Xte, yte, c2 = fold_data(k)
    row = {"fold": k, "c2": c2, "family_setting": choice}
    base = bt.timed(row, "fit_base_s", bt.quiet, NonLocalCRF(c2=c2, max_iter=None, random_state=0).fit, Xtr, ytr)
    row["base_n_iter"] = int(base.n_iter_)
    row["base"] = bt.seg_f1(yte, base.predict(Xte), SCHEME)
    fam = ConstraintFamily(min_support=choice["min_support"], scheme=SCHEME).fit([list(v) for v in ytr])
    row["n_candidates"] = len(fam.constraints_)
    log(f"fold {k}: base {row['base']:.2f} ({row['base_n_iter']} iterations), {row['n_candidates']} candidates")
    energy = fit_energy(fam.constraints_, [np.searchsorted(base.classes_, v) for v in ytr], base.classes_)
    row["oracle"] = {str(w): bt.oracle_ceiling(base, energy, Xte, yte, w, SCHEME) for w in bt.CEILING_STRENGTHS}
    log(f"fold {k}: oracle ceiling {row['oracle']}")
    row["in_sample"] = [dict(zip(("n_epochs", "f1", "n_kept"), (e,) + in_sample_f1(base, fam, Xte, yte, e)))
                        for e in bt.IN_SAMPLE_EPOCHS]
    row["in_sample_alg3"] = in_sample_f1(base, fam, Xte, yte, choice=choice)[0]
    log(f"fold {k}: in-sample {row['in_sample']}, Algorithm 3 in-sample {row['in_sample_alg3']:.2f}")
    row["learned"] = learned_f1(row, base, fam, Xtr, ytr, Xte, yte, choice)
    log(f"fold {k}: learned (held out) {row['learned']:.2f}")
    return row


def run(folds, log):
    """Run ``folds`` (each written as soon as done, beside earlier runs' other folds)."""
    choice = json.loads((bt.RESULTS / "umass_table1.json").read_text())["family_choice"]
    for k in folds:
        t0 = time.perf_counter()
        row = ceiling_fold(k, choice, log)
        row["seconds"] = time.perf_counter() - t0
        rows = json.loads(PATH.read_text()) if PATH.exists() else []
        rows = sorted([r for r in rows if r["fold"] != k] + [row], key=lambda r: r["fold"])
        PATH.write_text(json.dumps(rows))
    return json.loads(PATH.read_text())


def _gain(rows, f):
    return np.array([f(r) - r["base"] for r in rows])


def report(rows):
    """Markdown section: base, held-out learned, oracle and in-sample ceilings per fold and on average."""
    cols = [("learned family, held out (Algorithm 3)", lambda r: r["learned"])]
    cols += [(f"oracle ceiling, psi = {w:g} (reads the gold)", lambda r, w=w: r["oracle"][str(w)][0])
             for w in bt.CEILING_STRENGTHS]
    cols += [(f"one psi fitted on the fold's own gold, {e} epochs (in-sample)",
              lambda r, i=i: r["in_sample"][i]["f1"]) for i, e in enumerate(bt.IN_SAMPLE_EPOCHS)]
    alg3 = [r for r in rows if "in_sample_alg3" in r]
    base = np.array([r["base"] for r in rows])
    L = ["## GROBID: what limits the learned family (oracle and in-sample ceilings)", "",
         f"Folds {[r['fold'] for r in rows]}, base CRFs to CRFsuite's stop "
         f"({', '.join(str(r['base_n_iter']) for r in rows)} L-BFGS iterations), the UMass-dev family setting "
         f"{rows[0]['family_setting']} ({', '.join(str(r['n_candidates']) for r in rows)} candidates); IO segment "
         "F1 on each test fold. The oracle and in-sample rows read the test fold's gold: ceilings, not models.", "",
         "| model | segment F1 (mean) | over base (mean) | over base per fold |", "|---|---:|---:|---|",
         f"| base CRF | {base.mean():.2f} | | {', '.join(f'{v:.2f}' for v in base)} |"]
    for label, f in cols:
        g = _gain(rows, f)
        L.append(f"| {label} | {np.mean([f(r) for r in rows]):.2f} | {g.mean():+.2f} | "
                 f"{', '.join(f'{v:+.2f}' for v in g)} |")
    if alg3:
        g = _gain(alg3, lambda r: r["in_sample_alg3"])
        L.append(f"| one psi fitted on the fold's own gold by Algorithm 3, UMass-dev setting (in-sample; folds "
                 f"{[r['fold'] for r in alg3]}) | {np.mean([r['in_sample_alg3'] for r in alg3]):.2f} | {g.mean():+.2f} | "
                 f"{', '.join(f'{v:+.2f}' for v in g)} |")
    conv = {w: 100 * np.mean([r["oracle"][str(w)][1] for r in rows]) for w in bt.CEILING_STRENGTHS}
    L += ["", "Oracle inference (cap " + str(bt.CEILING_MAX_ITER) + "): "
          + ", ".join(f"psi = {w:g}: {c:.0f}% of test references converged" for w, c in conv.items()) + "."]
    return L + [""]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folds", type=int, nargs="*", help="GROBID folds to run (0-4)")
    add_report_only(parser)
    args = parse_args(parser)
    numba.set_num_threads(1)
    start = time.perf_counter()
    if args.folds and not args.report_only:
        run(args.folds, lambda msg: print(f"[{time.perf_counter() - start:7.0f}s] {msg}", flush=True))
    L = report(json.loads(PATH.read_text()))
    L[0] = "# " + L[0].removeprefix("## ")
    L += ["Script: `benchmarks/studies/bench_umass_grobid_ceiling.py`; numbers: `umass_grobid_ceiling.json`.", ""]
    write_text(RESULTS / "umass_grobid_ceiling.md", "\n".join(L))
    print("\n".join(L))


if __name__ == "__main__":
    main()
    finish()  # with --report-only --check: exit 1 if a table would change
