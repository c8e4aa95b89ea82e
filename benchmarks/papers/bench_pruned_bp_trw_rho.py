"""Figure 1's TRW rows with the old and the new default edge appearance probabilities, same process.

The setting of ``bench_pruned_bp_figure1.py`` section 3 (64x64 Ising denoising, alpha = 5, MinJoint
gamma sweep, TRW on the pruned graph and on the full grid, errors against full-grid TRW marginals
with the grid's uniform rho 4095/8064): each pruned graph gets either the old default rho, one
constant ``(n_c - 1) / |E_c|`` per connected component (not a point of the spanning-tree polytope on
components that mix cycles and dangling paths, so TRW's bound can fail), or the new default
``trw_edge_probabilities(kept_edges, method="auto")`` (effective resistances, covering forests for
2-core components above 64 nodes; valid for any graph). Times include computing rho.

Run: ``python benchmarks/papers/bench_pruned_bp_trw_rho.py [--n-noisy 5]`` (writes results/pruned_bp_trw_rho/pruned_bp_trw_rho.md).
"""

import sys
import argparse
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import (add_report_only, finish, load_json, load_saved, parse_args, save_json,  # noqa: E402
                         write_text)
from _lib.results import results_dir  # noqa: E402
from _lib.internals import make_ising_grid  # noqa: E402
from sklearn_struct.oracles.loopy import loopy_bp, seed_gains, trw_edge_probabilities
from sklearn_struct.pruned_bp import select_factors
from sklearn_struct.utils.graph import grid_edges

RESULTS = results_dir("pruned_bp_trw_rho")
GAMMAS = [0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.11, 0.12]
BP = dict(schedule="sequential", tol=1e-6, max_iter=100)
PAIRWISE = np.eye(2)


def pruned_trw(unary, edges, gamma, method, dropped):
    """The pruned_marginals TRW path with the pruned graph's rho from ``method`` (timed by the caller)."""
    from sklearn_struct.oracles.loopy import absorbed_unary

    gains = seed_gains(unary, edges, PAIRWISE)
    kept = select_factors(gains, "min_joint", gamma=gamma)
    if dropped == "absorb" and not kept.all():
        unary = absorbed_unary(unary, edges[~kept], PAIRWISE)
    sub = edges[kept]
    if sub.shape[0] == 0:
        return None, kept
    rho = trw_edge_probabilities(sub, unary.shape[0], method)
    return loopy_bp(unary, sub, PAIRWISE, rho=rho, **BP), kept


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-noisy", type=int, default=5)
    add_report_only(ap)
    args = parse_args(ap)
    if args.report_only:
        report(load_saved(RESULTS / "pruned_bp_trw_rho.json"))
        return finish()
    images, _ = make_ising_grid(n_noisy=args.n_noisy, noise=0.6, random_state=0)
    edges = grid_edges(images.shape[1:])
    n = images[0].size
    grid_rho = trw_edge_probabilities(edges, n)
    stats = {}
    for x in images:
        unary = np.c_[np.zeros(n), 5.0 * x.ravel()]
        start = time.perf_counter()
        full = loopy_bp(unary, edges, PAIRWISE, rho=trw_edge_probabilities(edges, n), **BP)
        t_full = time.perf_counter() - start
        assert np.allclose(trw_edge_probabilities(edges, n), grid_rho)
        for g in GAMMAS:
            for dropped in ("drop", "absorb"):
                for method in ("uniform", "auto"):
                    start = time.perf_counter()
                    res, kept = pruned_trw(unary, edges, g, method, dropped)
                    t = time.perf_counter() - start
                    marg = res.node_marginals if res is not None else None
                    err = np.abs(marg[:, 1] - full.node_marginals[:, 1]).mean() if marg is not None else np.nan
                    conv = res.converged if res is not None else True
                    stats.setdefault((g, dropped, method), []).append(
                        [float(kept.mean()), float(err), t_full / t, bool(conv)])
    save_json(RESULTS / "pruned_bp_trw_rho.json", dict(
        n_noisy=args.n_noisy, n_images=len(images),
        cells=[dict(gamma=g, dropped=d, method=m, per_image=v) for (g, d, m), v in stats.items()]))
    report(load_json(RESULTS / "pruned_bp_trw_rho.json"))


def report(saved):
    """The table from the saved json: per (gamma, dropped, rho method), per image [kept, err, speed-up, converged]."""
    stats = {(c["gamma"], c["dropped"], c["method"]): c["per_image"] for c in saved["cells"]}
    lines = ["# Figure 1 TRW rows: old vs new default rho on the pruned graphs (same process)", "",
             f"make_ising_grid(n_noisy={saved['n_noisy']}, noise=0.6): {saved['n_images']} images of 64x64, "
             "alpha = 5, MinJoint; "
             "errors = mean |marginal error| against full-grid TRW (grid rho 4095/8064); speed-up = full-grid TRW "
             "time / pruned time (seed, gains, selection, rho and TRW), one run each on a shared 2-core machine. "
             "old = (n_c - 1)/|E_c| per component (the previous default, invalid on cycles with dangling paths); "
             "new = trw_edge_probabilities(kept_edges, 'auto') (effective resistances; covering forests above "
             "64 2-core nodes).", "",
             "| gamma | kept | drop: err old | err new | speed-up old | speed-up new | absorb: err old | err new | "
             "speed-up old | speed-up new | converged old / new |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for g in GAMMAS:
        cells = [f"{g:g}", f"{np.mean([s[0] for s in stats[g, 'drop', 'auto']]):.3f}"]
        for dropped in ("drop", "absorb"):
            for col in (1, 2):
                for method in ("uniform", "auto"):
                    vals = [s[col] for s in stats[g, dropped, method]]
                    cells.append(f"{np.nanmean(vals):.4f}" if col == 1 else f"{np.mean(vals):.2f}x")
        conv = [np.mean([s[3] for s in stats[g, d, m]]) for m in ("uniform", "auto") for d in ("drop", "absorb")]
        cells.append(f"{min(conv[0], conv[1]):.0%} / {min(conv[2], conv[3]):.0%}")
        lines.append("| " + " | ".join(cells) + " |")
    write_text(RESULTS / "pruned_bp_trw_rho.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
