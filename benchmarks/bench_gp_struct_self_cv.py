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
Writes ``results/gp_struct_self_cv.{json,md}``::

    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/bench_gp_struct_self_cv.py SPLIT [SPLIT ...]
    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/bench_gp_struct_self_cv.py report
"""

import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import KFold

sys.path.insert(0, str(Path(__file__).parent))

from bench_gp_struct_table1 import error_rate, paper_split  # noqa: E402
from sklearn_struct import GPStructClassifier  # noqa: E402

RESULTS = Path(__file__).parent / "results"
GRID = (64.0, 256.0, 1024.0)
TASK = "JapaneseNE"


def _path(split):
    return RESULTS / f"gp_struct_self_cv_split{split}.json"


def self_cv(split):
    """Pooled held-out token error % of gp-var-b at each amplitude of ``GRID`` (3 folds in the training half)."""
    _, Xtr, ytr, _, _ = paper_split(TASK, split)
    folds = list(KFold(3, shuffle=True, random_state=split).split(Xtr))
    row = {"split": split, "cv": {}, "cpu_s": {}}
    for a in GRID:
        t, wrong, total = time.process_time(), 0, 0
        for tr, te in folds:
            gp = GPStructClassifier(amplitude=a, random_state=split).fit([Xtr[i] for i in tr], [ytr[i] for i in tr])
            pred = gp.predict([Xtr[i] for i in te])
            n = sum(len(ytr[i]) for i in te)
            wrong += error_rate(pred, [ytr[i] for i in te]) * n / 100
            total += n
        row["cv"][str(a)] = 100 * wrong / total
        row["cpu_s"][str(a)] = time.process_time() - t
        print(split, a, row["cv"][str(a)], row["cpu_s"][str(a)], flush=True)
        _path(split).write_text(json.dumps(row))
    return row


def report():
    rows = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("gp_struct_self_cv_split*.json"))]
    rows = [r for r in rows if all(str(a) in r["cv"] for a in GRID)]  # splits whose grid is complete
    from bench_gp_struct_amplitude_range import merged

    rng = merged()
    fixed = {float(k.split("@ ")[1]): {r["split"]: r["error"] for r in v}  # gp-var-b at one amplitude, by hand
             for k, v in rng["fits"].items() if k.startswith("japanese ne @ ") and "," not in k}
    at_1024 = fixed[1024.0]
    table = json.loads((RESULTS / "gp_struct_table1_paper_JapaneseNE_splits0-1-2-3-4.json").read_text())
    t1 = {k: (err, note.split("amplitude ")[1].split(",")[0]) for k, (err, _, note) in enumerate(table["rows"]["gp-var-b"])}
    L = ["# GP-struct: gp-var-b's own 3-fold CV for the kernel amplitude (Japanese NE, papers' protocol)", "",
         "Script: `benchmarks/bench_gp_struct_self_cv.py` (its docstring says what is measured). Held-out token "
         "error % of gp-var-b in 3-fold CV inside the training half at each amplitude; the test error of "
         "gp-var-b fitted on the whole training half at the amplitude the estimator's rule picks (the sparse MAP's "
         "CV, Table 1) and at 1,024 (outcome only).", "",
         "| split | " + " | ".join(f"CV @ {a:g}" for a in GRID) + " | pick | CV CPU s (all fits) | "
         "test at the sparse MAP's pick (Table 1) | test @ 1,024 | test at this CV's pick |",
         "|---|" + "---|" * (len(GRID) + 5)]
    picked, table1 = [], []
    for r in rows:
        cv = [r["cv"][str(a)] for a in GRID]
        pick, (t1_err, t1_amp) = GRID[int(np.argmin(cv))], t1[r["split"]]
        known = {a: f[r["split"]] for a, f in fixed.items() if r["split"] in f}  # test errors of fits run
        known[float(t1_amp)] = t1_err
        picked.append(known.get(pick))
        table1.append(t1_err)
        L.append(f"| {r['split']} | " + " | ".join(f"{v:.2f}" for v in cv) + f" | {pick:g} | "
                 f"{sum(r['cpu_s'].values()):.0f} | {t1_err:.2f} (@ {float(t1_amp):g}) | "
                 f"{at_1024.get(r['split'], float('nan')):.2f} | "
                 + ("not run |" if picked[-1] is None else f"{picked[-1]:.2f} |"))
    if rows and None not in picked:
        L += ["", f"Mean over splits {[r['split'] for r in rows]}: at this CV's picks {np.mean(picked):.2f}, at the "
              f"sparse MAP's picks (Table 1) {np.mean(table1):.2f}, at 1,024 "
              f"{np.mean([at_1024[r['split']] for r in rows]):.2f}."]
    (RESULTS / "gp_struct_self_cv.md").write_text("\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    if sys.argv[1:] == ["report"]:
        report()
    else:
        for s in sys.argv[1:]:
            self_cv(int(s))
