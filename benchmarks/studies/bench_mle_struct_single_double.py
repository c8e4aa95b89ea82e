"""Single loop (MLE-Struct) against the double loop (gradient steps on theta, BP marginals inside).

Training sets (``--setting``):

- ``cmu`` (default): the first 100 CMU house frame pairs at gap 10 (30 landmarks each, right points
  shuffled), PointSetPairFeatures (62 pair features), rho = 1, alpha = 1 (the 30-node, 100-pair set);
  nearly every pair is matched perfectly, so the Bethe marginals at the optimum are close to 0/1;
- ``synthetic``: 100 examples of 10 x 10 matchings drawn exactly (Ryser) from eq. (11) with 6 standard
  normal pair features and theta ~ N(0, 0.5^2) (marginals of high entropy), rho = 1, alpha = 1.

- single loop: ``MLEStructMatcher`` (BCFW, exact line search, tol 1e-4 per node, at most 300 passes);
  its ``coef_path_`` / ``time_curve_`` give theta and the time after every pass;
- double loop: :func:`double_loop_bethe_mle` (Armijo gradient ascent on theta, BP for every example at
  every trial step, messages warm-started, damping 0.5, BP tol 1e-8), at most 300 steps.

Both paths are scored afterwards, untimed, by the same evaluator: the regularised Bethe
log-likelihood ``L(theta)`` with BP marginals to 1e-10. For relative tolerances eps, the time each
method needs to first reach ``L >= L_ref - eps |L_ref|``, with ``L_ref`` the double loop's final value
(the paper's "reaches the double loop's objective") and the best value either reached. The dual
objective ``h`` of the single loop is an upper bound on the optimum and brackets it.
Also reported: wall time of a default ``MLEStructMatcher(alpha=1, n_jobs=2).fit`` on this set.

Run: ``python benchmarks/studies/bench_mle_struct_single_double.py`` (writes results/mle_struct_single_double/mle_struct_single_double.*).
"""

import sys
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import MLEStructMatcher
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import (add_report_only, finish, load_json, needs_rerun, parse_args, save_figure,  # noqa: E402
                         save_json, write_text)
from _lib.results import results_dir  # noqa: E402
from _lib.matching_baselines import _bp_likelihood, _true_features, double_loop_bethe_mle  # noqa: E402
from _lib.matching import training_set  # noqa: E402

RESULTS = results_dir("mle_struct_single_double")
ALPHA = 1.0
EPS = [1e-2, 1e-3, 1e-4]


def synthetic_set():
    from sklearn_struct.oracles.matching import sample_matchings

    rng = np.random.default_rng(0)
    theta = 0.5 * rng.normal(size=6)
    F = [rng.normal(size=(10, 10, 6)) for _ in range(100)]
    y = [sample_matchings(x @ theta, 1, random_state=rng)[0] for x in F]
    return F, y


def evaluate(F, y, thetas):
    phi = _true_features(F, y)
    values = []
    for theta in thetas:
        msgs = [(np.zeros(x.shape[:2]), np.zeros(x.shape[:2])) for x in F]
        v, _, _, ok = _bp_likelihood(F, phi, np.asarray(theta), ALPHA, msgs, 1e-10, 20000, 0.5)
        values.append(v if ok else np.nan)
    return np.array(values)


def checkpoints(n, k=40):
    return np.unique(np.round(np.geomspace(1, n, k)).astype(int) - 1)


def time_to(times, values, target):
    hit = np.flatnonzero(values >= target)
    return float(times[hit[0]]) if len(hit) else np.nan


def main(setting="cmu"):
    warnings.simplefilter("ignore", ConvergenceWarning)
    F, y = training_set() if setting == "cmu" else synthetic_set()
    n_nodes = sum(len(a) for a in y)
    MLEStructMatcher(alpha=ALPHA, max_iter=2).fit(F[:5], y[:5])  # compile
    t0 = time.perf_counter()
    default = MLEStructMatcher(alpha=ALPHA, n_jobs=2, random_state=0).fit(F, y)
    default_time = time.perf_counter() - t0

    single = MLEStructMatcher(alpha=ALPHA, tol=1e-4, max_iter=300, random_state=0).fit(F, y)
    theta_dl, hist = double_loop_bethe_mle(F, y, alpha=ALPHA, max_iter=300, step0=1e-4, tol=1e-7)

    idx_s = checkpoints(len(single.coef_path_))
    idx_d = checkpoints(len(hist["theta"]))
    ts, vs = single.time_curve_[idx_s], evaluate(F, y, single.coef_path_[idx_s])
    td, vd = np.array(hist["time"])[idx_d], evaluate(F, y, np.array(hist["theta"])[idx_d])
    L_dl = float(vd[-1])
    L_best = float(np.nanmax(np.concatenate([vs, vd])))
    rows = []
    for ref_name, ref in [("double loop's final value", L_dl), ("best value reached", L_best)]:
        for eps in EPS:
            target = ref - eps * abs(ref)
            a, b = time_to(ts, vs, target), time_to(td, vd, target)
            rows.append({"reference": ref_name, "eps": eps, "single_s": a, "double_s": b, "ratio": b / a})
    info = {
        "default_fit_seconds": default_time, "default_passes": int(default.n_iter_),
        "default_max_iter": int(default.max_iter), "default_tol": float(default.tol),
        "default_converged": bool(default.converged_), "default_gap_per_node": float(default.gap_curve_[-1] / n_nodes), "setting": setting,
        "single_passes": int(single.n_iter_), "single_converged": bool(single.converged_),
        "single_final_dual": float(single.objective_curve_[-1]), "single_final_gap": float(single.gap_curve_[-1]),
        "double_steps": len(hist["theta"]) - 1, "double_bp_failures": int(hist["bp_failures"]),
        "double_bp_sweeps": int(hist["bp_sweeps"][-1]), "L_double_final": L_dl, "L_best": L_best,
        "L_single_final": float(vs[-1]),
    }
    stem = _stem(setting)
    curves = {"single_s": ts, "single_L": vs, "double_s": td, "double_L": vd}
    save_json(RESULTS / f"{stem}.json", {"rows": rows, "info": info, "curves": curves})
    write(load_json(RESULTS / f"{stem}.json"))


def _stem(setting):
    return "mle_struct_single_double" + ("" if setting == "cmu" else "_" + setting)


def write(saved):
    """The md, and the figure where the json holds the curves (runs before --report-only saved none)."""
    rows, info, curves = saved["rows"], saved["info"], saved.get("curves")
    stem = _stem(info["setting"])
    lines = [
        "# Single loop (MLE-Struct, BCFW) vs double loop (gradient steps + BP): "
        + ("100 CMU house pairs (30 nodes)" if info["setting"] == "cmu" else "100 synthetic 10x10 matchings (eq. 11)"),
        "",
        "Time to first reach L >= L_ref - eps |L_ref| (regularised Bethe log-likelihood, same evaluator for both).",
        "",
        "| reference | eps | single loop (s) | double loop (s) | ratio double / single |",
        "|---|---|---|---|---|",
    ]
    fmt = lambda v, f: "not reached" if v is None or not np.isfinite(v) else format(v, f)
    for r in rows:
        lines.append(f"| {r['reference']} | {r['eps']:g} | {fmt(r['single_s'], '.2f')} | {fmt(r['double_s'], '.2f')} "
                     f"| {fmt(r['ratio'], '.2f')} |")
    i = info
    lines += [
        "",
        f"Final values: single loop L = {i['L_single_final']:.3f} after {i['single_passes']} passes "
        f"(dual h = {i['single_final_dual']:.3f}, gap {i['single_final_gap']:.3g}, converged {i['single_converged']}); "
        f"double loop L = {i['L_double_final']:.3f} after {i['double_steps']} steps "
        f"({i['double_bp_sweeps']} BP sweeps, {i['double_bp_failures']} BP runs without convergence).",
        f"Default fit (alpha=1, n_jobs=2, default max_iter={i['default_max_iter']} and tol={i['default_tol']:g}): "
        f"{i['default_fit_seconds']:.2f} s, {i['default_passes']} passes, "
        f"converged {i['default_converged']} (gap per node {i['default_gap_per_node']:.2g})"
        + (". Goal < 10 s for this 30-node, 100-pair set." if i["setting"] == "cmu" else "."),
    ]
    write_text(RESULTS / f"{stem}.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    if curves is None:
        return
    ts, vs, td, vd = (np.asarray(curves[k]) for k in ("single_s", "single_L", "double_s", "double_L"))
    best = info["L_best"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(ts, best - vs + 1e-6 * abs(best), "o-", ms=3, label="single loop (MLE-Struct BCFW)")
    ax.loglog(td, best - vd + 1e-6 * abs(best), "s-", ms=3, label="double loop (gradient + BP)")
    ax.set_xlabel("seconds")
    ax.set_ylabel("L_best - L(theta)")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, RESULTS / f"{stem}.png", dpi=100)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--setting", choices=["cmu", "synthetic"], default="cmu")
    add_report_only(parser)
    args = parse_args(parser)
    if args.report_only:  # both settings' tables
        for setting in ("cmu", "synthetic"):
            saved = load_json(RESULTS / f"{_stem(setting)}.json")
            if "default_max_iter" not in saved["info"]:
                needs_rerun(RESULTS / f"{_stem(setting)}.json", "written by an older wording of the table")
            write(saved)
        finish()
    else:
        main(args.setting)
