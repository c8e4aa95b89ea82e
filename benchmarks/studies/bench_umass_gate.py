"""The learned family on citations through the sampled gate: each reference chooses its candidates.

One psi vector over Anzaroot et al.'s candidates gets about a third of what the candidates can
do when each reference may choose its own (the oracle ceiling, ``bench_umass_learners.py``), because the
gold of most references breaks some candidate. ``NonLocalCRF(psi_gate="probability")`` lets
each reference choose without reading the gold: term ``k`` acts on reference ``i`` with weight
``psi_k * p_ik``, ``p_ik`` the share of 100 exact samples of the base CRF on ``x_i`` that satisfy
it (``sklearn_struct._psi_gate``).

Default (UMass, after ``papers/bench_umass_table1.py``'s main run): the main run's protocol. The base CRF of training at
the main run's c2 and cap; the candidate family from the training labels; every setting chosen
on dev; testing once. Dev grid: the family's ``min_support`` (0.9, 0.95) x psi either flat
(every candidate at ``psi_init`` in FLAT, no psi learning: ``n_epochs=0``) or learned by
Algorithm 3 through the gate (LEARNED, on 3-fold cross-fitted training marginals, each
training reference's gate under the base CRF that did not see it). Beside it, on the same base,
the ungated learned family at the main run's choice (the Table 1 model). Output:
``umass_gate.json``.

``--grobid FOLD ...`` (held-back data, after the default run): GROBID folds of ``bench_citations.py``,
base CRFs run to CRFsuite's stop (as ``bench_umass_grobid_ceiling.py``), the family from each training
fold's labels (IO), the UMass-dev choice applied unchanged. Output: ``umass_gate_grobid.json``.

``--paper`` (after ``bench_umass_table1.py --paper-protocol``): the paper's protocol (a) through the
gate. Output: ``umass_gate_paper.json``.

Run::

    SKLEARN_STRUCT_DATA=../shared/data nice -n 10 python benchmarks/studies/bench_umass_gate.py
    SKLEARN_STRUCT_DATA=../shared/data nice -n 10 python benchmarks/studies/bench_umass_gate.py --grobid 0 1 2 3 4
    python benchmarks/studies/bench_umass_gate.py --report-only   # the tables from the saved results

Output: ``benchmarks/results/umass_gate/umass_gate.md`` and the json above.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.internals import in_sample_thetas  # noqa: E402
from _lib.report import add_report_only, finish, parse_args, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from _lib.umass import grobid as gc  # noqa: E402
from _lib.umass import paper_protocol as pp  # noqa: E402
from _lib.umass import protocol as bt  # noqa: E402

from sklearn_struct import NonLocalCRF  # noqa: E402
from sklearn_struct.constraint_learning import ConstraintFamily  # noqa: E402

RESULTS = results_dir("umass_gate")
PATH = RESULTS / "umass_gate.json"
GROBID_PATH = RESULTS / "umass_gate_grobid.json"
MIN_SUPPORT = (0.9, 0.95)
FLAT = (2.0, 3.0, 5.0)
LEARNED = [dict(psi_init=3.0, learning_rate=3.0, psi_l1=l1) for l1 in (0.0, 0.003)]


def settings_grid():
    """Every dev setting: (min_support, NonLocalCRF parameters beside psi_gate)."""
    grid = [(ms, dict(psi_init=s, n_epochs=0)) for ms in MIN_SUPPORT for s in FLAT]
    return grid + [(ms, dict(bt.FAMILY_FIXED, **kw)) for ms in MIN_SUPPORT for kw in LEARNED]


def gated(base, fam, thetas, X, y_enc, params):
    """``base`` plus ``fam``'s candidates through the gate (as ``NonLocalCRF(..., psi_gate=...)``)."""
    return bt.with_energy(base, fam.constraints_, thetas, X, y_enc, psi_gate="probability", **params)


def run_umass(saved, log):
    """Dev grid, then testing once: base, ungated learned family, gated family at the dev choice."""
    X, y, data, _ = bt.load_features()
    out = {"c2": saved["c2"], "max_iter": bt.MAX_ITER, "ungated_setting": saved["family_choice"]}
    base = bt.timed(out, "fit_base_s", bt.quiet, NonLocalCRF(c2=saved["c2"], max_iter=bt.MAX_ITER,
                                                           random_state=0).fit, X["train"], y["train"])
    y_enc = [np.searchsorted(base.classes_, v) for v in y["train"]]
    thetas = bt.timed(out, "cross_fit_s", bt.cross_fitted, base, X["train"], y_enc)
    out["base_dev"] = bt.seg_f1(y["dev"], base.predict(X["dev"]))
    log(f"base dev {out['base_dev']:.2f}")
    fams = {ms: ConstraintFamily(min_support=ms).fit(data["train"].labels) for ms in MIN_SUPPORT}
    choice = saved["family_choice"]
    ungated = bt.with_energy(base, fams[choice["min_support"]].constraints_, thetas, X["train"], y_enc,
                             **bt.FAMILY_FIXED, **{k: v for k, v in choice.items() if k != "min_support"})
    out["ungated_dev"] = bt.seg_f1(y["dev"], ungated.predict(X["dev"]))
    log(f"ungated learned family: dev {out['ungated_dev']:.2f}")
    out["dev"], best = [], None
    for ms, params in settings_grid():
        t0 = time.perf_counter()
        model = gated(base, fams[ms], thetas, X["train"], y_enc, params)
        row = dict(min_support=ms, params=params, n_candidates=len(fams[ms].constraints_),
                   dev=bt.seg_f1(y["dev"], model.predict(X["dev"])), seconds=time.perf_counter() - t0)
        out["dev"].append(row)
        log(f"gated {ms} {params}: dev {row['dev']:.2f} ({row['dev'] - out['base_dev']:+.2f})")
        if best is None or row["dev"] > best[0]["dev"]:
            best = (row, model)
    row, model = best
    out["choice"] = {"min_support": row["min_support"], **row["params"]}
    res = model.infer(X["test"])
    preds = {"base": base.predict(X["test"]), "ungated": ungated.predict(X["test"]), "gated": res.labels}
    out["test"] = {k: {"f1": bt.seg_f1(y["test"], p), "fields": bt.per_field(y["test"], p)} for k, p in preds.items()}
    out["n_iter"], out["converged"] = res.n_iter.tolist(), res.converged.tolist()
    out["psi"] = dict(zip(model.energy_.term_names_, model.psi_.tolist()))
    log("test: " + ", ".join(f"{k} {v['f1']:.2f}" for k, v in out["test"].items()))
    return out


def run_grobid(folds, choice, log):
    """The UMass-dev choice on GROBID folds (base CRFs to CRFsuite's stop), each written when done."""
    params = {k: v for k, v in choice.items() if k != "min_support"}
    for k in folds:
        t0 = time.perf_counter()
        Xtr, ytr, Xte, yte, c2 = gc.fold_data(k)
        row = {"fold": k, "c2": c2, "choice": choice}
        base = bt.timed(row, "fit_base_s", bt.quiet, NonLocalCRF(c2=c2, max_iter=None, random_state=0).fit, Xtr, ytr)
        row["base_n_iter"] = int(base.n_iter_)
        row["base"] = bt.seg_f1(yte, base.predict(Xte), gc.SCHEME)
        fam = ConstraintFamily(min_support=choice["min_support"], scheme=gc.SCHEME).fit([list(v) for v in ytr])
        row["n_candidates"] = len(fam.constraints_)
        y_enc = [np.searchsorted(base.classes_, v) for v in ytr]
        if params.get("n_epochs", 1) == 0:  # psi stays psi_init: no held-out base CRFs needed
            thetas = in_sample_thetas((base.coef_, base.intercept_, base.transition_), len(Xtr))
        else:
            thetas = bt.cross_fitted(base, Xtr, y_enc)
        model = gated(base, fam, thetas, Xtr, y_enc, params)
        row["gated"] = bt.seg_f1(yte, model.predict(Xte), gc.SCHEME)
        row["seconds"] = time.perf_counter() - t0
        log(f"GROBID fold {k}: base {row['base']:.2f} ({row['base_n_iter']} iterations), gated {row['gated']:.2f} "
            f"({row['gated'] - row['base']:+.2f}), {row['n_candidates']} candidates")
        rows = json.loads(GROBID_PATH.read_text()) if GROBID_PATH.exists() else []
        rows = sorted([r for r in rows if r["fold"] != k] + [row], key=lambda r: r["fold"])
        GROBID_PATH.write_text(json.dumps(rows))


def report(out, grobid=None):
    """Markdown section of ``umass_gate.md``."""
    t, dev0 = out["test"], out["base_dev"]
    gain, ungain = t["gated"]["f1"] - t["base"]["f1"], t["ungated"]["f1"] - t["base"]["f1"]
    L = ["## The sampled gate: each reference chooses its candidates", "",
         f"`NonLocalCRF(psi_gate=\"probability\")`: candidate k acts on reference i with weight psi_k * p_ik, p_ik "
         "the share of 100 exact samples of the base CRF on reference i that satisfy it. A refitted base CRF "
         f"(c2 {out['c2']}, cap {out['max_iter']}; dev {dev0:.2f}), everything chosen on dev, testing once.", "",
         "| model (test, once) | segment F1 | over base |", "|---|---:|---:|",
         f"| base CRF | {t['base']['f1']:.2f} | |",
         f"| + learned family, no gate (the Table 1 model, {out['ungated_setting']}) | {t['ungated']['f1']:.2f} | "
         f"{ungain:+.2f} |",
         f"| + learned family through the gate ({out['choice']}) | **{t['gated']['f1']:.2f}** | **{gain:+.2f}** |", "",
         f"Goal (+1.0 over the base): {'met' if gain >= 1.0 else 'NOT met'}. Dev: base {dev0:.2f}, no gate "
         f"{out['ungated_dev'] - dev0:+.2f}; through the gate:", "",
         "| min_support | psi | dev over base |", "|---|---|---:|"]
    for r in out["dev"]:
        p = r["params"]
        how = (f"flat {p['psi_init']:g}, not learned" if p.get("n_epochs") == 0 else
               f"Algorithm 3 from {p['psi_init']:g}, step {p['learning_rate']:g}, psi_l1 {p['psi_l1']:g}")
        L.append(f"| {r['min_support']} ({r['n_candidates']} candidates) | {how} | {r['dev'] - dev0:+.2f} |")
    L += ["", "Per field (test segment F1): "
          + "; ".join(f"{f} {t['base']['fields'][f]:.2f} -> {t['gated']['fields'][f]:.2f}"
                      for f in bt.REPORT_FIELDS if f in t["base"]["fields"]) + ".",
          f"Inference (test, cap 40): {100 * np.mean(out['converged']):.1f}% converged, mean "
          f"{np.mean(out['n_iter']):.1f} iterations.", ""]
    if grobid:
        g = np.array([r["gated"] - r["base"] for r in grobid])
        L += [f"GROBID (held back; the UMass-dev choice unchanged, base CRFs to CRFsuite's stop, IO segment F1), "
              f"folds {[r['fold'] for r in grobid]}: base {np.mean([r['base'] for r in grobid]):.2f}, through the "
              f"gate {np.mean([r['gated'] for r in grobid]):.2f}: **{g.mean():+.2f}** (per fold "
              f"{', '.join(f'{v:+.2f}' for v in g)}; goal +0.5: {'met' if g.mean() >= 0.5 else 'NOT met'}).", ""]
    return L


# ---------------------------------------------------------------- the paper's protocol (a) through the gate
PAPER_PATH = RESULTS / "umass_gate_paper.json"
PAPER_GRID = [dict(min_support=ms, psi_init=init, psi_l1=l1, learning_rate=lr, n_epochs=3, psi_gate="probability")
              for ms in (0.85, 0.9) for init in (0.0, 3.0) for l1 in (0.0003, 0.003) for lr in (3.0, 30.0)]


def run_paper(saved, saved_pp, log):
    """``--paper``: protocol (a) of ``--paper-protocol`` (psi by Algorithm 3 on the dev references under
    the base CRF of training, theta fixed, settings by 3-fold CV inside dev) with the gate, beside (a)
    without it at ``--paper-protocol``'s choice, on the same base; testing once."""
    from sklearn.model_selection import KFold

    X, y, data, _ = bt.load_features()
    out = {"c2": saved["c2"], "ungated_setting": saved_pp["psi_dev_setting"]}
    base = bt.timed(out, "fit_base_s", bt.quiet, NonLocalCRF(c2=saved["c2"], max_iter=bt.MAX_ITER,
                                                           random_state=0).fit, X["train"], y["train"])
    sups = {s["min_support"] for s in PAPER_GRID} | {out["ungated_setting"]["min_support"]}
    fams = {ms: ConstraintFamily(min_support=ms).fit(data["train"].labels) for ms in sorted(sups)}
    Xd, yd = X["dev"], y["dev"]
    yd_enc = [np.searchsorted(base.classes_, v) for v in yd]
    folds = list(KFold(pp.CV_FOLDS, shuffle=True, random_state=0).split(Xd))
    out["base_dev"] = bt.seg_f1(yd, base.predict(Xd))
    choice = pp.choose("cv_gate", PAPER_GRID, base, fams, Xd, yd, yd_enc, folds, out, log, path=PAPER_PATH)
    out["choice"] = choice
    models = {"ungated": pp.learn_on_dev(base, fams, Xd, yd_enc, out["ungated_setting"]),
              "gated": pp.learn_on_dev(base, fams, Xd, yd_enc, choice)}
    out["test"] = {"base": pp.scores_on(base, X["test"], y["test"], infer=False)}
    out["test"].update({k: pp.scores_on(m, X["test"], y["test"]) for k, m in models.items()})
    log("test: " + ", ".join(f"{k} {v['f1']:.2f}" for k, v in out["test"].items()))
    return out


def paper_report(out):
    t = out["test"]
    g = {k: t[k]["f1"] - t["base"]["f1"] for k in ("ungated", "gated")}
    best = max(out["cv_gate"], key=lambda r: r["cv_dev"])
    ungated_cv = max(r["cv_dev"] for r in json.loads(pp.PATH.read_text())["cv_psi"])
    return [f"The paper's protocol (a) through the gate (`--paper`): psi by Algorithm 3 on the dev references "
            f"through the gate, theta fixed, the setting by 3-fold CV inside dev over {len(out['cv_gate'])} settings "
            f"(min_support, psi_init, psi_l1, step; CV dev {best['cv_dev']:.2f}, without the gate "
            f"{ungated_cv:.2f}, base dev {out['base_dev']:.2f}) -> "
            f"{out['choice']}. Test, once: base {t['base']['f1']:.2f}; (a) without the gate "
            f"({out['ungated_setting']}) {t['ungated']['f1']:.2f} ({g['ungated']:+.2f}); (a) through the gate "
            f"**{t['gated']['f1']:.2f} ({g['gated']:+.2f})**; goal +1.0: {'met' if g['gated'] >= 1.0 else 'NOT met'}.",
            ""]


# ---------------------------------------------------------------- command line
def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grobid", type=int, nargs="*", help="after the default run: its UMass-dev choice on "
                        "GROBID folds, base CRFs to convergence (umass_gate_grobid.json)")
    parser.add_argument("--paper", action="store_true", help="after bench_umass_table1.py --paper-protocol: its "
                        "protocol (a) through the sampled gate (umass_gate_paper.json)")
    add_report_only(parser)
    args = parse_args(parser)
    numba.set_num_threads(1)
    start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - start:7.0f}s] {msg}", flush=True)

    if not args.report_only:
        saved = json.loads((bt.RESULTS / "umass_table1.json").read_text())  # the main run's choices
        if args.paper:
            res = run_paper(saved, json.loads(pp.PATH.read_text()), log)
            PAPER_PATH.write_text(json.dumps(dict(res, elapsed=time.perf_counter() - start)))
        elif args.grobid:
            run_grobid(args.grobid, json.loads(PATH.read_text())["choice"], log)
        else:
            res = run_umass(saved, log)
            PATH.write_text(json.dumps(dict(res, elapsed=time.perf_counter() - start)))
    L = report(json.loads(PATH.read_text()), json.loads(GROBID_PATH.read_text()) if GROBID_PATH.exists() else None)
    if PAPER_PATH.exists() and "test" in json.loads(PAPER_PATH.read_text()):
        L += paper_report(json.loads(PAPER_PATH.read_text()))
    L[0] = "# " + L[0].removeprefix("## ")
    L += ["Script: `benchmarks/studies/bench_umass_gate.py`; numbers: `umass_gate.json`, `umass_gate_grobid.json`, "
          "`umass_gate_paper.json`.", ""]
    write_text(RESULTS / "umass_gate.md", "\n".join(L))
    print("\n".join(L))


if __name__ == "__main__":
    main()
    finish()  # with --report-only --check: exit 1 if a table would change
