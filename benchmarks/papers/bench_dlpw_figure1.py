"""Figure 1 of Meshi et al. (2010): eq. 7 objective against training time, DLPW vs Pegasos-LP vs cutting plane.

All three methods minimise the same objective (eq. 7: ``1/2 ||w||^2 + C/n sum_m LP-hinge_m``, normalised
Hamming loss, fully connected label graph, the overcomplete representation) on the same model code:

* DLPW: Algorithm 1 (``n_inner`` = R = 10 star passes per visit, Pegasos step 1/t, sqrt(C) ball), cyclic order;
* Pegasos-LP: the same Pegasos steps, each on the exact loss-augmented LP of one sample (HiGHS, one live
  model re-solved from the previous basis; the paper used GLPK);
* cutting plane: 1-slack structural SVM with the same exact LP oracle, working-set QP by HiGHS.

Sets: yeast and scene (MULAN training splits, standardised features), a Reuters-like sparse set (30 labels,
3000 sparse features, generated: RCV1 is not in the shared data) and the paper's synthetic 20-label 4-state
model (100 samples, y by ICM from a random model). The objective is evaluated at checkpoints (time excluded):
every sample's LP solved by star updates to convergence (binary labels: equal to the LP, tested against
HiGHS) or by HiGHS (4-state set). Reported: time for each method to come within 1% of the best objective any
method reaches, and the ratios to DLPW. Every method gets the same time budget per set (stated in the table).

Run: ``python benchmarks/papers/bench_dlpw_figure1.py [--sets yeast scene reuters synthetic] [--scale 1.0]``
(writes results/dlpw_figure1/dlpw_figure1.{md,json,png}; ``--scale`` multiplies the time budgets). The committed
results: all sets at scale 1, then yeast again at scale 3 (``--sets yeast --scale 3 --out
dlpw_figure1_yeast_long``) merged in with ``--merge results/dlpw_figure1/dlpw_figure1_yeast_long.json``.
"""

import sys
import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import (add_report_only, finish, load_json, parse_args, save_figure, save_json,  # noqa: E402
                         write_text)
from _lib.results import results_dir  # noqa: E402
from _lib.dlpw_baselines import cutting_plane, dlpw, exact_objective, pegasos_lp  # noqa: E402
from _lib.internals import _augment  # noqa: E402
from sklearn_struct.datasets import load_scene, load_yeast
from sklearn_struct.oracles.lp import icm, make_lp_graph

RESULTS = results_dir("dlpw_figure1")
C = 1.0
WITHIN = 0.01
PAPER = {"yeast": "DLPW 6x faster than Pegasos, 43x faster than cutting plane",
         "scene": "subgradient methods much faster than cutting plane; small advantage of DLPW over Pegasos",
         "reuters": "DLPW less than half the time of Pegasos",
         "synthetic": "cutting plane beats Pegasos; DLPW significantly faster than both"}
BUDGET = {"yeast": 80.0, "scene": 30.0, "reuters": 80.0, "synthetic": 60.0}


def load_set(name, rng):
    """Features (CSR with intercept), labels, graph, objective evaluation method, description."""
    if name in ("yeast", "scene"):
        data = (load_yeast if name == "yeast" else load_scene)("train")
        X = StandardScaler().fit_transform(data.data)
        Y = data.target.astype(np.int64)
        desc = f"MULAN {name} train, {X.shape[0]} x {X.shape[1]}, {Y.shape[1]} labels"
        return _augment(X, True), Y, _complete(Y.shape[1], 2), "star", desc
    if name == "reuters":
        X, Y = make_reuters_like(rng)
        desc = f"generated sparse, {X.shape[0]} x {X.shape[1]} ({X.nnz / X.shape[0]:.0f} nnz/row), 30 labels"
        return _augment(X, True), Y, _complete(30, 2), "star", desc
    X, Y = make_synthetic(rng)
    return _augment(X, True), Y, _complete(20, 4), "star", "synthetic 100 x 20, 20 labels x 4 states"


def _complete(d, S):
    return make_lp_graph(np.stack(np.triu_indices(d, 1), 1), np.full(d, S))


def make_reuters_like(rng, n=1000, n_features=3000, n_labels=30, words=60):
    """tf-idf-like rows (Zipf word frequencies, L2-normalised); labels from a sparse pairwise model by ICM."""
    freq = 1.0 / np.arange(1, n_features + 1) ** 1.1
    freq /= freq.sum()
    rows = [np.unique(rng.choice(n_features, size=words, p=freq)) for _ in range(n)]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    data = np.concatenate([rng.exponential(size=len(r)) * np.log(1 / (n_features * freq[r])) for r in rows])
    X = sp.csr_matrix((data, np.concatenate(rows), indptr), shape=(n, n_features))
    X = sp.diags(1 / np.sqrt(X.multiply(X).sum(axis=1).A1)) @ X
    W = rng.normal(size=(n_features, n_labels)) * (rng.random((n_features, n_labels)) < 0.05) * 8
    unary = np.zeros((n, n_labels, 2))
    unary[:, :, 1] = (X @ W) - 1.5  # labels are sparse, as in RCV1
    graph = _complete(n_labels, 2)
    pair = np.zeros((graph.n_edges, 2, 2))
    pair[:, 1, 1] = rng.normal(scale=1.0, size=graph.n_edges)
    Y, _ = icm(graph, unary, pair, unary.argmax(axis=2))
    return X.tocsr(), Y


def make_synthetic(rng, n=100, d=20, S=4):
    """The paper's synthetic set: f_i(y_i, x) = x_i in position y_i, random w and x, y by ICM."""
    X = rng.normal(size=(n, d))
    w_unary = rng.normal(size=(d, S))
    graph = _complete(d, S)
    pair = rng.normal(size=(graph.n_edges, S, S))
    unary = X[:, :, None] * w_unary[None]
    Y, _ = icm(graph, unary, pair, unary.argmax(axis=2))
    return X, Y


def run_method(method, Xa, Y, graph, evaluation, budget):
    """Train one method under the budget; returns [(seconds, eq7 objective), ...] at its checkpoints."""
    n = Y.shape[0]
    warm = np.zeros((n, 2 * graph.n_edges, graph.max_states))
    curve = []

    def record(model, seconds):
        curve.append((seconds, exact_objective(model, Xa, Y, C, method=evaluation, warm=warm)))
        return False

    if method == "DLPW":
        checkpoints = sorted(set(np.unique(np.round(np.geomspace(1, 2000, 60)).astype(int))))
        model, _ = dlpw(Xa, Y, graph, C, n_inner=10, max_epochs=2000, time_budget=budget,
                        checkpoint_epochs=checkpoints, callback=record)
    elif method == "Pegasos-LP":
        model, _ = pegasos_lp(Xa, Y, graph, C, max_epochs=1000, time_budget=budget, checkpoint_every=max(1, n // 5),
                              callback=record)
    else:
        model, hist = cutting_plane(Xa, Y, graph, C, max_iter=100000, eps=1e-4, time_budget=budget)
        curve = [(s, obj) for s, obj in hist[:, 1:3]]  # its oracle solves every LP: exact eq. 7 values
    return curve, model


def time_to_reach(curve, target):
    for seconds, obj in curve:
        if obj <= target:
            return seconds
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", nargs="+", default=["yeast", "scene", "reuters", "synthetic"])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--out", default="dlpw_figure1")
    parser.add_argument("--merge", nargs="*", default=[],
                        help="result files (json) of other runs whose sets replace these; no training")
    add_report_only(parser)
    args = parse_args(parser)
    RESULTS.mkdir(exist_ok=True)
    out_json = RESULTS / f"{args.out}.json"
    results = load_json(out_json) if out_json.exists() else {}
    if args.report_only:
        write_report(results, args.out)
        return finish()
    if args.merge:
        for other in args.merge:
            results.update(load_json(Path(other)))
        save_json(out_json, results)
        write_report(results, args.out)
        return
    for name in args.sets:
        rng = np.random.default_rng(0)
        Xa, Y, graph, evaluation, desc = load_set(name, rng)
        budget = BUDGET[name] * args.scale
        curves, check = {}, {}
        for method in ("DLPW", "Pegasos-LP", "cutting plane"):
            start = time.perf_counter()
            curves[method], model = run_method(method, Xa, Y, graph, evaluation, budget)
            if graph.max_states > 2:  # star updates may stall above the LP for non-binary labels: check by HiGHS
                check[method] = {"star": exact_objective(model, Xa, Y, C),
                                 "highs": exact_objective(model, Xa, Y, C, method="highs")}
            print(f"{name} {method}: {len(curves[method])} checkpoints, best {min(o for _, o in curves[method]):.6g}, "
                  f"wall {time.perf_counter() - start:.0f}s", flush=True)
        best = min(o for c in curves.values() for _, o in c)
        reach = {m: time_to_reach(c, best * (1 + WITHIN)) for m, c in curves.items()}
        results[name] = {"description": desc, "budget_s": budget, "C": C, "best": best, "curves": curves,
                         "time_to_1pct": reach, "paper": PAPER[name],
                         "final_star_vs_highs": check}
        save_json(out_json, results)
    write_report(load_json(out_json), args.out)


def _fmt_ratio(reach, method):
    ours, theirs = reach["DLPW"], reach[method]
    if ours is None:
        return "n/a (DLPW did not reach)"
    if theirs is None:
        return "> budget / DLPW"
    return f"{theirs / ours:.1f}x"


def write_report(results, out):
    lines = [
        "# DLPW Figure 1: eq. 7 objective against training time",
        "",
        f"C = {C}; R = 10 star passes per visit; time to come within {WITHIN:.0%} of the best objective any method "
        "reaches (objective evaluation excluded from the times); each method gets the same time budget per set "
        "(a budget cap: a method that does not reach the target within it shows '> budget'). "
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores shared with other jobs "
        "(absolute seconds are noisy; the ratios come from one process).",
        "",
        "| set | budget (s) | best eq. 7 | DLPW (s) | Pegasos-LP (s) | cutting plane (s) | Pegasos / DLPW "
        "| cutting plane / DLPW | paper |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        reach = r["time_to_1pct"]
        cell = {m: ("> budget" if reach[m] is None else f"{reach[m]:.2f}") for m in reach}
        lines.append(f"| {name}: {r['description']} | {r['budget_s']:.0f} | {r['best']:.5g} | {cell['DLPW']} | "
                     f"{cell['Pegasos-LP']} | {cell['cutting plane']} | {_fmt_ratio(reach, 'Pegasos-LP')} | "
                     f"{_fmt_ratio(reach, 'cutting plane')} | {r['paper']} |")
    lines += ["", "Where a baseline does not come within 1% in its budget, a lower bound on the speed-up: the time the "
              "baseline took to reach its own best objective, over the time DLPW took to reach that objective.", "",
              "| set | Pegasos-LP: own best (s) / DLPW (s) | cutting plane: own best (s) / DLPW (s) |", "|---|---|---|"]
    for name, r in results.items():
        cells = []
        for method in ("Pegasos-LP", "cutting plane"):
            c = np.array(r["curves"][method])
            k = int(np.argmin(c[:, 1]))
            t_dlpw = time_to_reach(r["curves"]["DLPW"], c[k, 1])
            cells.append("no progress from w = 0 in the budget" if c[k, 0] == 0 else "n/a" if t_dlpw is None else
                         f"{c[k, 0]:.2f} / {t_dlpw:.2f} = {c[k, 0] / max(t_dlpw, 1e-9):.1f}x")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Final objective of each method at the end of its budget:", "",
              "| set | DLPW | Pegasos-LP | cutting plane |", "|---|---|---|---|"]
    for name, r in results.items():
        finals = {m: min(o for _, o in c) for m, c in r["curves"].items()}
        lines.append(f"| {name} | " + " | ".join(f"{finals[m]:.5g}" for m in ("DLPW", "Pegasos-LP", "cutting plane"))
                     + " |")
    for name, r in results.items():
        for method, v in r.get("final_star_vs_highs", {}).items():
            lines.append(f"\n{name}, {method}: final eq. 7 by star updates {v['star']:.6g}, by HiGHS {v['highs']:.6g}")
    write_text(RESULTS / f"{out}.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    plot(results, out)


def plot(results, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 3.6), squeeze=False)
    for ax, (name, r) in zip(axes[0], results.items()):
        for method, curve in r["curves"].items():
            c = np.array(curve)
            ax.plot(np.maximum(c[:, 0], 1e-3), c[:, 1], marker=".", label=method)
        ax.axhline(r["best"] * (1 + WITHIN), color="gray", ls=":", lw=1, label="best + 1%")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("eq. 7 objective")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, RESULTS / f"{out}.png", dpi=110)


if __name__ == "__main__":
    main()
