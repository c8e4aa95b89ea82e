"""Does gp-var-b's own held-out error see Japanese NE's weak regularisation? (issue #22)

``amplitude="cv"`` scores the chain sparse MAP in 3-fold CV inside the training half; on Japanese NE
that CV error is flat from amplitude 16 up, picks 64-256 and gp-var-b errs 5.36 there, while gp-var-b
fitted at 1,024 (set by hand) errs 5.22 (paper 5.23; ``gp_struct_amplitude_range.md``). This runs the
costlier rule a user could state: 3-fold CV of **gp-var-b itself** (``GPStructClassifier(amplitude=A,
random_state=split)``, all else at its defaults) inside the training half over ``GRID``, on the papers'
protocol. Only the training half is used; the test error at the pick is read from the fits of the
same estimator on the whole training half (Table 1's gp-var-b row for the sparse MAP's picks, the
``fit AMPLITUDE`` rows of ``gp_struct_amplitude_range.json`` for the others), so nothing here is chosen
on test data.

``run TASK METHOD GRID SPLITS`` is the same rule for another task and variant (Table 1's settings of
METHOD, ``_lib.gp_struct.GP_PAPER``), self-contained: the CV, then the fit on the whole
training half at the pick and its test error, as ``GridSearchCV(refit=True)`` would do it (scored by
pooled token error). Writes ``results/gp_struct_self_cv/gp_struct_self_cv.md``, the per-split json files and a Table 1
part file per task and variant (the row "METHOD, amplitude by its own 3-fold CV")::

    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_self_cv.py SPLIT [SPLIT ...]
    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_self_cv.py run seg gp-var-s 0.25,1,4,16 0,1,2,3,4
    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_self_cv.py --report-only
"""

import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import KFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, report_only_requested, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

from _lib.gp_struct import GP_PAPER, OWN_CV_RULE, error_rate, paper_split  # noqa: E402
from sklearn_struct import GPStructClassifier  # noqa: E402

RESULTS = results_dir("gp_struct_self_cv")
GRID = (64.0, 256.0, 1024.0)
TASK = "JapaneseNE"
TABLE1 = results_dir("gp_struct_table1")  # this study writes a part of Table 1 (its own-CV rows)
PART = TABLE1 / "gp_struct_table1_paper_JapaneseNE_gp-var-b-own-cv_splits0-1-2-3-4.json"


def _path(split):
    return RESULTS / f"gp_struct_self_cv_split{split}.json"


def _cv(Xtr, ytr, params, grid, split, save):
    """Pooled held-out token error % of ``GPStructClassifier(amplitude=a, **params)`` at each ``a`` of ``grid``
    (3 folds in the training half); ``save(row)`` after each amplitude."""
    folds = list(KFold(3, shuffle=True, random_state=split).split(Xtr))
    row = {"split": split, "cv": {}, "cpu_s": {}}
    for a in grid:
        t, wrong, total = time.process_time(), 0, 0
        for tr, te in folds:
            gp = GPStructClassifier(amplitude=a, **params).fit([Xtr[i] for i in tr], [ytr[i] for i in tr])
            pred = gp.predict([Xtr[i] for i in te])
            n = sum(len(ytr[i]) for i in te)
            wrong += error_rate(pred, [ytr[i] for i in te]) * n / 100
            total += n
        row["cv"][str(a)] = 100 * wrong / total
        row["cpu_s"][str(a)] = time.process_time() - t
        print(split, a, row["cv"][str(a)], row["cpu_s"][str(a)], flush=True)
        save(row)
    return row


def self_cv(split):
    """gp-var-b on Japanese NE over ``GRID`` (the test errors are read from fits run elsewhere)."""
    _, Xtr, ytr, _, _ = paper_split(TASK, split)
    return _cv(Xtr, ytr, dict(random_state=split), GRID, split, lambda row: _path(split).write_text(json.dumps(row)))


def _run_path(task, method, split):
    return RESULTS / f"gp_struct_self_cv_{task}_{method}_split{split}.json"


def run(task, method, grid, split):
    """The CV over ``grid``, then the fit on the whole training half at the pick and its test error."""
    _, Xtr, ytr, Xte, yte = paper_split(task, split)
    params = dict(GP_PAPER[method], random_state=split)
    path = _run_path(task, method, split)
    row = _cv(Xtr, ytr, params, grid, split, lambda r: path.write_text(json.dumps(dict(r, grid=list(grid)))))
    pick = grid[int(np.argmin([row["cv"][str(a)] for a in grid]))]
    t = time.process_time()
    gp = GPStructClassifier(amplitude=pick, **params).fit(Xtr, ytr)
    row.update(grid=list(grid), final=dict(amplitude=pick, error=error_rate(gp.predict(Xte), yte),
                                           cpu_s=time.process_time() - t, stop=gp.stop_reason_))
    print(split, "final", row["final"], flush=True)
    path.write_text(json.dumps(row))
    return row


def _part_row(error, cv_cpu, fit_cpu, pick, method, stop):
    """A Table 1 row entry (error, CPU s of the whole rule, note) of the fit at the CV's pick."""
    return [error, cv_cpu + fit_cpu, f"amplitude {pick:g} by {method}'s 3-fold CV ({cv_cpu:.0f} CPU s) + the final "
            f"fit ({fit_cpu:.0f} s), stop: {stop}"]


def _write_part(path, method, entries):
    """Table 1 part file of the row "METHOD, amplitude by its own 3-fold CV"; ``entries``: [(split, row entry)]."""
    write_text(path, json.dumps(dict(n_splits=len(entries), rows={f"{method}, {OWN_CV_RULE}": [e for _, e in entries]},
                                     splits=[k for k, _ in entries]), indent=1))


def run_report():
    """Markdown of every ``run`` (task, variant), and its Table 1 part file."""
    from _lib.gp_struct import TASKS

    names = dict((t[0], t[1]) for t in TASKS)
    groups = {}
    for p in sorted(RESULTS.glob("gp_struct_self_cv_*_gp-var-*_split*.json")):
        task, method = p.stem.split("_")[4:6]
        r = json.loads(p.read_text())
        if "final" in r:
            groups.setdefault((task, method), []).append(r)
    L = []
    for (task, method), rows in sorted(groups.items()):
        rows.sort(key=lambda r: r["split"])
        grid = rows[0]["grid"]
        L += ["", f"## {method} on {names[task]}: its own 3-fold CV over amplitudes {', '.join(f'{a:g}' for a in grid)}",
              "", f"`run {task} {method}`: Table 1's {method} settings; the CV, then the fit on the whole training "
              "half at the pick (test error: outcome only).", "",
              "| split | " + " | ".join(f"CV @ {a:g}" for a in grid) + " | pick | CV CPU s | test | final fit CPU s |",
              "|---|" + "---|" * (len(grid) + 4)]
        part = []
        for r in rows:
            f, cv_cpu = r["final"], sum(r["cpu_s"].values())
            L.append(f"| {r['split']} | " + " | ".join(f"{r['cv'][str(a)]:.2f}" for a in grid)
                     + f" | {f['amplitude']:g} | {cv_cpu:.0f} | {f['error']:.2f} | {f['cpu_s']:.0f} |")
            part.append((r["split"], _part_row(f["error"], cv_cpu, f["cpu_s"], f["amplitude"], method, f["stop"])))
        L += ["", f"Mean test error over splits {[r['split'] for r in rows]}: {np.mean([e[0] for _, e in part]):.2f}."]
        _write_part(TABLE1 / f"gp_struct_table1_paper_{task}_{method}-own-cv_splits"
                    f"{'-'.join(str(r['split']) for r in rows)}.json", method, part)
    return L


def _fits():
    """gp-var-b fits on the whole training half, each ``(test error, fit CPU s, stop)``: ``fixed``
    ``{split: {amplitude: fit}}`` of ``gp_struct_amplitude_range``'s fixed amplitudes and ``table1``
    ``{split: (amplitude, fit)}`` of Table 1's (at the sparse MAP's pick)."""
    from _lib.gp_struct import merged

    fixed = {}
    for key, rows in merged()["fits"].items():
        if key.startswith("japanese ne @ ") and "," not in key:
            for r in rows:
                fixed.setdefault(r["split"], {})[float(key.split("@ ")[1])] = (r["error"], r["cpu_s"], r["stop"])
    table = json.loads((TABLE1 / "gp_struct_table1_paper_JapaneseNE_splits0-1-2-3-4.json").read_text())
    table1 = {k: (float(note.split("amplitude ")[1].split(",")[0]), (err, cpu, note.split("stop: ")[1].split(",")[0]))
              for k, (err, cpu, note) in enumerate(table["rows"]["gp-var-b"])}
    return fixed, table1


def report():
    rows = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("gp_struct_self_cv_split*.json"))]
    rows = [r for r in rows if all(str(a) in r["cv"] for a in GRID)]  # splits whose grid is complete
    fixed, table1_fits = _fits()
    L = ["# GP-struct: gp-var-b's own 3-fold CV for the kernel amplitude (Japanese NE, papers' protocol)", "",
         "Script: `benchmarks/studies/bench_gp_struct_self_cv.py` (its docstring says what is measured). Held-out token "
         "error % of gp-var-b in 3-fold CV inside the training half at each amplitude; the test error of "
         "gp-var-b fitted on the whole training half at the amplitude the estimator's rule picks (the sparse MAP's "
         "CV, Table 1) and at 1,024 (outcome only).", "",
         "| split | " + " | ".join(f"CV @ {a:g}" for a in GRID) + " | pick | CV CPU s (all fits) | "
         "test at the sparse MAP's pick (Table 1) | test @ 1,024 | test at this CV's pick | its fit CPU s |",
         "|---|" + "---|" * (len(GRID) + 6)]
    picked, table1, at_1024, part = [], [], [], []
    for r in rows:
        cv, (t1_amp, t1) = [r["cv"][str(a)] for a in GRID], table1_fits[r["split"]]
        known = {**fixed.get(r["split"], {}), t1_amp: t1}  # test errors of the fits run
        pick, cv_cpu = GRID[int(np.argmin(cv))], sum(r["cpu_s"].values())
        fit = known.get(pick)
        picked.append(None if fit is None else fit[0])
        table1.append(t1[0])
        at_1024.append(known[1024.0][0] if 1024.0 in known else float("nan"))
        L.append(f"| {r['split']} | " + " | ".join(f"{v:.2f}" for v in cv) + f" | {pick:g} | {cv_cpu:.0f} | "
                 f"{t1[0]:.2f} (@ {t1_amp:g}) | {at_1024[-1]:.2f} | "
                 + ("not run | |" if fit is None else f"{fit[0]:.2f} | {fit[1]:.0f} |"))
        if fit is not None:
            part.append((r["split"], _part_row(fit[0], cv_cpu, fit[1], pick, "gp-var-b", fit[2])))
    if rows and None not in picked:
        L += ["", f"Mean over splits {[r['split'] for r in rows]}: at this CV's picks {np.mean(picked):.2f}, at the "
              f"sparse MAP's picks (Table 1) {np.mean(table1):.2f}, at 1,024 {np.mean(at_1024):.2f}. Table 1 "
              f"shows the first as the row 'gp-var-b, {OWN_CV_RULE}' (its fit seconds: the CV's and the final fit's CPU)."]
    _write_part(PART, "gp-var-b", part)
    L += run_report()
    write_text(RESULTS / "gp_struct_self_cv.md", "\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    if report_only_requested(description=__doc__.split("\n")[0]):  # or the first word `report`
        report()
        finish()
    elif sys.argv[1] == "run":
        for s in sys.argv[5].split(","):
            run(sys.argv[2], sys.argv[3], tuple(float(a) for a in sys.argv[4].split(",")), int(s))
        report()
    else:
        for s in sys.argv[1:]:
            self_cv(int(s))
