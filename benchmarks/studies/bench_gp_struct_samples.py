"""gp-var-b with more Monte-Carlo samples (issue #22): does S limit the refinement from the MAP start?

``GPStructClassifier()`` at its defaults uses S = 100 samples per sequence and sample set; the
paper's batch runs use S = 10,000. On chunking split 0 the default fit ends 0.5 points above the
sparse MAP it starts from (7.27 against 6.72). This runs the default fit at ``n_samples`` S = 100
and a larger S on the papers' protocol (``_lib.gp_struct.paper_split``), same seed
(``random_state=split``), same process, and reports test error, the final ELBO (each fit's own
common-random-numbers estimate), iterations and CPU seconds. Writes
``results/gp_struct_samples/gp_struct_samples_{task}_splits{...}.json`` per run and merges every run of the task
into ``results/gp_struct_samples/gp_struct_samples_{task}.{md,json}`` (``report TASK`` merges again)::

    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_samples.py chunking 0,1,2,3,4 100,1000
    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_samples.py JapaneseNE 3,4 100,1000
    python benchmarks/studies/bench_gp_struct_samples.py report JapaneseNE   # --report-only: every task's table
    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_samples.py seg 0,1,2,3,4 1000 gp-var-s

An optional fourth argument runs another Table 1 variant at its Table 1 settings
(``_lib.gp_struct.GP_PAPER``, e.g. gp-var-s: SAGA, where S is the sample count of each step)
with ``n_samples=S``; its files are ``gp_struct_samples_{method}_{task}*`` (``report TASK METHOD``).
At S = 100 the gp-var-s rows are Table 1's (same settings and seeds).
"""

import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, report_only_requested, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

from _lib.gp_struct import GP_PAPER, PAPER, TASKS, error_rate, paper_split  # noqa: E402
from sklearn_struct import GPStructClassifier  # noqa: E402

RESULTS = results_dir("gp_struct_samples")


def fit_one(task, split, n_samples, method="gp-var-b"):
    _, Xtr, ytr, Xte, yte = paper_split(task, split)
    params = {} if method == "gp-var-b" else dict(GP_PAPER[method])
    t0 = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gp = GPStructClassifier(random_state=split, **{**params, "n_samples": n_samples}).fit(Xtr, ytr)
    return dict(split=split, n_samples=n_samples, error=error_rate(gp.predict(Xte), yte),
                fit_cpu_s=time.process_time() - t0, n_iter=int(gp.n_iter_), stop=gp.stop_reason_,
                amplitude=gp.amplitude_, elbo=float(gp.elbo_curve_[-1]), warnings=len(caught))


def report(task, rows, sizes, method="gp-var-b"):
    name = dict((t[0], t[1]) for t in TASKS)[task]
    paper = PAPER[method][[t[0] for t in TASKS].index(task)][0]
    setting = ("`GPStructClassifier(random_state=split, n_samples=S)`, all else at its defaults" if method == "gp-var-b"
               else f"`GPStructClassifier(random_state=split, n_samples=S, **{GP_PAPER[method]})` (Table 1's {method})")
    paper_s = "10,000" if method == "gp-var-b" else "4,000"
    lines = [f"# {method} on {name}: S = {' / '.join(map(str, sizes))} Monte-Carlo samples (papers' protocol)", "",
             f"{setting}; same splits, seeds "
             f"and process. Paper {method} (S = {paper_s}): {paper:.2f}. Script: `benchmarks/studies/bench_gp_struct_samples.py`.",
             "", "| S | splits | test error % mean (per split) | final ELBO per split | iterations | stop | "
             "fit CPU s mean / max |", "|---|---|---|---|---|---|---|"]
    for s in sizes:
        sel = [r for r in rows if r["n_samples"] == s]
        if not sel:  # a run in progress
            continue
        errs = [r["error"] for r in sel]
        per_split = ", ".join(f"{e:.2f}" for e in errs)
        elbos = ", ".join(f"{r['elbo']:.0f}" for r in sel)
        iters = ", ".join(str(r["n_iter"]) for r in sel)
        stops = ", ".join(sorted({r["stop"] for r in sel}))
        cpu = [r["fit_cpu_s"] for r in sel]
        lines.append(f"| {s} | {', '.join(str(r['split']) for r in sel)} | {np.mean(errs):.2f} ({per_split}) | "
                     f"{elbos} | {iters} | {stops} | {np.mean(cpu):.0f} / {max(cpu):.0f} |")
    return lines


def write(task, rows, sizes, name, method="gp-var-b"):
    lines = report(task, rows, sizes, method)
    write_text(RESULTS / f"{name}.md", "\n".join(lines) + "\n")
    write_text(RESULTS / f"{name}.json", json.dumps(rows, indent=1))
    return lines


def _stem(task, method):
    return f"gp_struct_samples_{task}" if method == "gp-var-b" else f"gp_struct_samples_{method}_{task}"


def merge(task, method="gp-var-b"):
    """``gp_struct_samples_{task}.{md,json}`` from the part files of runs on some splits (one row per
    split and S; the first part file's row where two ran the same fit)."""
    rows = {}
    for part in sorted(RESULTS.glob(f"{_stem(task, method)}_splits*.json")):
        for r in json.loads(part.read_text()):
            rows.setdefault((r["split"], r["n_samples"]), r)
    rows = [rows[k] for k in sorted(rows)]
    return write(task, rows, sorted({r["n_samples"] for r in rows}), _stem(task, method), method)


def main():
    os.environ.setdefault("SKLEARN_STRUCT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    if {"--report-only", "-h", "--help"} & set(sys.argv[1:]):  # every merged table from its part files
        report_only_requested(description=__doc__.split("\n")[0])
        for table in sorted(RESULTS.glob("gp_struct_samples_*.md")):
            rest = table.stem.removeprefix("gp_struct_samples_")
            method, task = rest.split("_", 1) if rest.startswith("gp-var-") else ("gp-var-b", rest)
            merge(task, method)
        return finish()
    if sys.argv[1] == "report":  # one task's table: report TASK [METHOD]
        print("\n".join(merge(sys.argv[2], *sys.argv[3:4])))
        return
    task = sys.argv[1]
    splits = [int(s) for s in sys.argv[2].split(",")]
    sizes = [int(s) for s in sys.argv[3].split(",")]
    method = sys.argv[4] if len(sys.argv) > 4 else "gp-var-b"
    rows = []
    for split in splits:
        for s in sizes:
            rows.append(fit_one(task, split, s, method))
            print(rows[-1], flush=True)
            part = RESULTS / f"{_stem(task, method)}_splits{'-'.join(map(str, splits))}.json"
            part.write_text(json.dumps(rows, indent=1))
    print("\n".join(merge(task, method)))


if __name__ == "__main__":
    main()
