"""Fit time of a default ``MLEStructMatcher`` on a 30-node, 100-pair training set (issue goal: < 10 s on 2 cores).

The set is the first 100 CMU house frame pairs at gap 10 with PointSetPairFeatures (as in
``bench_mle_struct_single_double.py``); ``MLEStructMatcher(alpha=1, n_jobs=2)`` with the default
``max_iter`` and ``tol`` (1000 passes and 1e-2 per left node since issue 20; the table states them). Reported: wall time and process CPU time (median of 3 fits,
after a compile run), since the shared machine's load changes wall times several-fold, plus the training
matching accuracy and whether the duality-gap rule stopped the solver before ``max_iter``.

Run: ``python benchmarks/product/bench_mle_struct_fit_time.py`` (writes results/mle_struct_fit_time/mle_struct_fit_time.md).
"""

import sys
import os
import time
import warnings
from pathlib import Path

import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, load_json, load_saved, report_only_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from _lib.matching import training_set  # noqa: E402
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import MLEStructMatcher

RESULTS = results_dir("mle_struct_fit_time")
CPU_BEFORE_S = 17.63  # the same fit with one Python call per block step (before the compiled pass)


def main():
    warnings.simplefilter("ignore", ConvergenceWarning)
    F, y = training_set()
    MLEStructMatcher(alpha=1.0, max_iter=2).fit(F[:5], y[:5])  # compile
    runs = []
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        est = MLEStructMatcher(alpha=1.0, n_jobs=2, random_state=0).fit(F, y)
        runs.append((time.perf_counter() - wall, time.process_time() - cpu))
    wall, cpu = np.median(np.array(runs), axis=0)
    save_json(RESULTS / "mle_struct_fit_time.json", dict(
        wall_s=float(wall), cpu_s=float(cpu), runs=runs, max_iter=est.max_iter, tol=est.tol, n_iter=int(est.n_iter_),
        converged=bool(est.converged_), gap_per_node=float(est.gap_curve_[-1] / 3000),
        train_accuracy=float(est.score(F, y)),
        load_average=os.getloadavg()[0]))
    report(load_json(RESULTS / "mle_struct_fit_time.json"))


def report(saved):
    """The md from the saved json."""
    wall, cpu = saved["wall_s"], saved["cpu_s"]
    lines = [
        "# Default MLEStructMatcher fit on 100 CMU house pairs (30 nodes each, 62 features)",
        "",
        f"Defaults: max_iter={saved['max_iter']}, tol={saved['tol']:g} (duality gap per left node).",
        "",
        "| wall s (median of 3) | CPU s (median of 3) | passes | gap rule stopped | gap per node | train accuracy | 1-min load average |",
        "|---|---|---|---|---|---|---|",
        f"| {wall:.2f} | {cpu:.2f} | {saved['n_iter']} | {saved['converged']} | {saved['gap_per_node']:.3g} "
        f"| {saved['train_accuracy']:.4f} | {saved['load_average']:.1f} |",
        "",
        f"Goal (< 10 s on 2 cores): {'met' if wall < 10 else 'not met'} in wall time at this load "
        f"(1-min load average {saved['load_average']:.1f} on 2 cores); the fit needs {cpu:.1f} CPU s "
        f"({'met' if cpu < 10 else 'not met'} on an idle core: one core does the block steps), "
        f"{cpu / CPU_BEFORE_S:.2f} x the {CPU_BEFORE_S} CPU s of the Python block loop (scipy assignment per "
        "step) it replaced, with the same passes, gap and weights (to 1e-12).",
    ]
    write_text(RESULTS / "mle_struct_fit_time.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if report_only_args(description=__doc__.split("\n")[0]).report_only:
        report(load_saved(RESULTS / "mle_struct_fit_time.json"))
        finish()
    else:
        main()
