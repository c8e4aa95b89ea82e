"""Figure 1 of Tang et al. (2016): exact likelihood of Bethe, rho=0.5 ("RW") and exact MLE estimates.

10 x 10 matchings are drawn exactly (Ryser, row by row) from eq. (11) ``f(Y) ∝ exp(tr(W Y) / 2)`` with
``W`` = ``c`` off the diagonal and 0 on it: ``c = -2`` (high SNR) and ``c = -0.5`` (low SNR). The model
learns ``W`` directly (one indicator pair feature per edge, 100 parameters; ``theta_ij`` is the score
of edge ij). The paper gives neither the sample sizes nor lambda: we use M in {10, 30, 100, 300} and
``alpha = 1``, 3 seeds each.

- Exact MLE: L-BFGS on the exact (Ryser) log-likelihood.
- Bethe (rho=1) and RW (rho=0.5): ``MLEStructMatcher`` (BCFW, line search, tol 1e-4 per node, at most
  300 passes).

(a)/(b): the exact regularised log-likelihood per sample at each estimate (higher is better, exact MLE
the upper bound). (c)/(d): the optimal values of the exact and approximate objectives per sample: the
Bethe and RW optima are bracketed by the dual objective minus its duality gap and the dual objective,
and should sandwich the exact optimum, ``L_RW* <= L* <= L_Bethe*`` (eqs. 12-13).

Run: ``python benchmarks/papers/bench_mle_struct_figure1.py`` (a few minutes; writes results/mle_struct_figure1/mle_struct_figure1.*).
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
from _lib.report import finish, load_json, report_only_args, save_figure, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from _lib.matching_baselines import exact_log_likelihood, exact_matching_mle  # noqa: E402
from sklearn_struct.oracles.matching import sample_matchings

RESULTS = results_dir("mle_struct_figure1")
N = 10
ALPHA = 1.0
SIZES = [10, 30, 100, 300]
SEEDS = [0, 1, 2]
SNR = {"high SNR (W=-2)": -2.0, "low SNR (W=-0.5)": -0.5}


def one_hot_features(n):
    X = np.zeros((n, n, n * n))
    X[np.arange(n)[:, None], np.arange(n)[None, :], np.arange(n * n).reshape(n, n)] = 1.0
    return X


def run_cell(c, M, seed, X1):
    W = c * (1.0 - np.eye(N))
    scores = 0.5 * W.T  # tr(W Y) / 2 = sum_ij W_ji Y_ij / 2
    y = list(sample_matchings(scores, M, random_state=seed))
    X = [X1] * M
    out = {}
    theta_exact, best = exact_matching_mle(X, y, alpha=ALPHA)
    out["exact"] = {"loglik": best / M, "opt": best / M}
    for name, rho in [("bethe", 1.0), ("rw", 0.5)]:
        est = MLEStructMatcher(alpha=ALPHA, rho=rho, max_iter=300, tol=1e-4, random_state=seed).fit(X, y)
        ll, _ = exact_log_likelihood(X, y, est.coef_, ALPHA)
        # min h = max of the approximate objective; h(tau) - gap <= min h <= h(tau)
        out[name] = {
            "loglik": ll / M,
            "opt_upper": est.objective_curve_[-1] / M,
            "opt_lower": (est.objective_curve_[-1] - est.gap_curve_[-1]) / M,
            "passes": int(est.n_iter_),
            "converged": bool(est.converged_),
        }
    return out


def main():
    warnings.simplefilter("ignore", ConvergenceWarning)
    X1 = one_hot_features(N)
    results = {}
    start = time.perf_counter()
    for label, c in SNR.items():
        results[label] = {}
        for M in SIZES:
            cells = [run_cell(c, M, seed, X1) for seed in SEEDS]
            results[label][M] = cells
            mean = lambda k, f: float(np.mean([cell[k][f] for cell in cells]))
            print(f"{label} M={M}: exact {mean('exact', 'loglik'):.4f} bethe {mean('bethe', 'loglik'):.4f} "
                  f"rw {mean('rw', 'loglik'):.4f}", flush=True)
    save_json(RESULTS / "mle_struct_figure1.json", {
        "total_seconds": time.perf_counter() - start,
        "regimes": {k: {str(M): v for M, v in d.items()} for k, d in results.items()}})
    write(load_json(RESULTS / "mle_struct_figure1.json"))


def _sandwich(cells):
    """'yes' if every seed confirms L_RW* <= L* <= L_Bethe* from the dual brackets, 'no' if one
    contradicts it, else '? (within gap)'."""
    verdicts = []
    for c in cells:
        L = c["exact"]["opt"]
        if c["rw"]["opt_lower"] > L + 1e-9 or c["bethe"]["opt_upper"] < L - 1e-9:
            verdicts.append("no")
        elif c["rw"]["opt_upper"] <= L + 1e-9 and c["bethe"]["opt_lower"] >= L - 1e-9:
            verdicts.append("yes")
        else:
            verdicts.append("?")
    if "no" in verdicts:
        return "no"
    return "yes" if all(v == "yes" for v in verdicts) else "? (within the duality gap)"


def write(saved):
    """Table and figure from the saved json (``{"total_seconds", "regimes": {label: {M: cells}}}``)."""
    total = saved["total_seconds"]
    results = {k: {int(M): v for M, v in d.items()} for k, d in saved["regimes"].items()}
    lines = [
        "# Synthetic 10x10 matchings (Tang et al. 2016, Fig. 1): exact regularised log-likelihood per sample",
        "",
        f"alpha = {ALPHA}, {len(SEEDS)} seeds per cell (mean shown); total {total:.0f} s. The paper has plots only:",
        "Bethe above RW in both regimes, Bethe nearly as probable as the exact MLE at high SNR, all close at low SNR.",
        "",
        "| regime | M | exact MLE | Bethe (rho=1) | RW (rho=0.5) | Bethe >= RW | L_RW* <= L* <= L_Bethe* (from dual brackets) | passes B / RW (converged) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    n_goal = n_cells = 0
    for label, d in results.items():
        for M, cells in d.items():
            m = lambda k, f: float(np.mean([c[k][f] for c in cells]))
            goal = all(c["bethe"]["loglik"] >= c["rw"]["loglik"] for c in cells)
            sandwich = _sandwich(cells)
            n_goal += goal
            n_cells += 1
            conv = f"{m('bethe', 'passes'):.0f} / {m('rw', 'passes'):.0f} " \
                   f"({sum(c['bethe']['converged'] for c in cells)}/{len(cells)}, {sum(c['rw']['converged'] for c in cells)}/{len(cells)})"
            lines.append(f"| {label} | {M} | {m('exact', 'loglik'):.4f} | {m('bethe', 'loglik'):.4f} | {m('rw', 'loglik'):.4f} "
                         f"| {'yes' if goal else 'no'} | {sandwich} | {conv} |")
    lines += ["", f"Goal (Bethe likelihood at least RW's): met in {n_goal} of {n_cells} cells (every seed)."]
    write_text(RESULTS / "mle_struct_figure1.md", "\n".join(lines) + "\n")
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for col, (label, d) in enumerate(results.items()):
        Ms = list(d)
        for key, style in [("exact", "k-"), ("bethe", "o-"), ("rw", "s-")]:
            axes[0, col].plot(Ms, [np.mean([c[key]["loglik"] for c in d[M]]) for M in Ms], style, label=key)
        axes[0, col].set_title(f"{label}: exact log-lik at the estimates")
        axes[1, col].plot(Ms, [np.mean([c["exact"]["opt"] for c in d[M]]) for M in Ms], "k-", label="exact optimum")
        axes[1, col].plot(Ms, [np.mean([c["bethe"]["opt_upper"] for c in d[M]]) for M in Ms], "o-", label="Bethe optimum")
        axes[1, col].plot(Ms, [np.mean([c["rw"]["opt_upper"] for c in d[M]]) for M in Ms], "s-", label="RW optimum")
        axes[1, col].set_title(f"{label}: optimal objective values")
        for row in range(2):
            axes[row, col].set_xscale("log")
            axes[row, col].set_xlabel("sample size M")
            axes[row, col].set_ylabel("per-sample regularised log-likelihood")
            axes[row, col].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, RESULTS / "mle_struct_figure1.png", dpi=100)
    print("\n".join(lines))


if __name__ == "__main__":
    if report_only_args(description=__doc__.split("\n")[0]).report_only:
        write(load_json(RESULTS / "mle_struct_figure1.json"))
        finish()
    else:
        main()
