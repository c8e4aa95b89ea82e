"""Training-only rules for the kernel amplitude (issue #22): can any of them see Japanese NE's weak regularisation?

On Japanese NE the sparse MAP's test error keeps falling as the amplitude ``a`` (the prior variance
of the linear kernel's weights) grows far past what ``amplitude="cv"`` (3-fold CV inside the
training half) picks, while that CV error is flat from 16 up (``bench_gp_struct_amplitude_range.py``).
This measures, on the papers' protocol (``_lib.gp_struct.paper_split``, splits 0-4, M = 500
SVD inducing inputs as ``GPStructClassifier()`` builds them, the chain likelihood), which amplitude
of the wide grid 4^-2 ... 4^8 each rule picks from the training half alone, and the test error of
the sparse MAP fitted on the whole training half at that amplitude (outcome only):

- ``cv3``: 3-fold CV over the training sequences (the estimator's rule, on the wide grid);
- ``cv10``: 10-fold CV (fold models trained on 90% of the half instead of 67%);
- ``loo``: leave-one-sequence-out CV (tasks with at most 50 training sequences);
- ``evidence``: the Laplace approximation of the marginal likelihood (empirical Bayes, the GP's own
  rule, here for the sparse MAP: ``log p(y | a) ~ log p(y | v*, F*) - |v*|^2 / 2 - |F*|^2 / 2
  - 1/2 sum_j log det(I + a B^T diag(c_j) B) - 1/2 sum log(1 + c_F)``, the Gauss-Newton curvature
  ``c = p (1 - p)`` of every token's score per label, labels and tokens decoupled as in the
  estimator's Laplace start, ``_gp_struct_optim.sparse_map``).

CV picks the lowest held-out token error (the smallest amplitude among ties), as the estimator
does. Writes ``results/gp_struct_amplitude_rules/gp_struct_amplitude_rules.{md,json}``::

    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_amplitude_rules.py [TASKS]
"""

import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, load_json, report_only_requested, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

from _lib.gp_struct import cv_errors, DECODERS, GRID, TASKS, whitened  # noqa: E402
from _lib.internals import CHAIN, _Rows, map_marginals, sparse_map, transition_counts  # noqa: E402

RESULTS = results_dir("gp_struct_amplitude_rules")
PATH = RESULTS / "gp_struct_amplitude_rules.json"
RULES = ("cv3", "cv10", "loo", "evidence")
LOO_MAX = 50  # leave-one-out only where the training half has at most this many sequences


def _log_det_terms(B, curv):
    """``sum_j log det(I + B^T diag(curv_j) B)`` over the labels (the smaller of the two Gram forms)."""
    total = 0.0
    for c in np.maximum(curv, 0.0).T:
        root = np.sqrt(c)[:, None] * B
        gram = root @ root.T if B.shape[0] < B.shape[1] else root.T @ root
        total += np.linalg.slogdet(np.eye(gram.shape[0]) + gram)[1]
    return total


def laplace_evidence(B, y, offsets, Q, a):
    """(Laplace log evidence, test-ready MAP ``(v, F)``) of the chain sparse MAP at amplitude ``a``."""
    rows = _Rows(np.sqrt(a) * B)
    v, mb, _, _, curv = sparse_map(rows, y, offsets, Q)
    counts = transition_counts(y, offsets, Q)
    nll, _, _, _, curv_bin = CHAIN.map_objective(rows.unary_mean(v), mb, offsets, np.eye(Q)[y], counts)
    log_det = _log_det_terms(rows.B[0], curv) + float(np.sum(np.log1p(np.maximum(curv_bin, 0.0))))
    value = -nll - 0.5 * float(np.sum(v * v)) - 0.5 * float(np.sum(mb * mb)) - 0.5 * log_det
    return value, (v, mb)


def measure(task, split):
    """Per amplitude of ``GRID``: each rule's training-only score and the MAP's test error %."""
    train, test, Q, rng = whitened(task, split)
    state = rng.get_state()
    B, y, off = train
    n_seq = off.shape[0] - 1
    chain = DECODERS.index("chain")
    out = dict(split=split, n_seq=n_seq, n_tok=int(y.size), evidence=[], test=[])
    for a in GRID:
        value, (v, mb) = laplace_evidence(B, y, off, Q, a)
        node = map_marginals(_Rows(np.sqrt(a) * test[0]).unary_mean(v), mb, test[2], CHAIN)
        out["evidence"].append(value)
        out["test"].append(100 * float(np.mean(node.argmax(axis=1) != test[1])))
    for rule, folds in (("cv3", 3), ("cv10", 10), ("loo", n_seq)):
        if rule == "loo" and n_seq > LOO_MAX:
            continue
        rng.set_state(state)  # every CV draws its partition where the estimator draws its own
        out[rule] = cv_errors(train, Q, rng, n_folds=min(folds, n_seq), grid=GRID, likelihood="chain")[:, chain].tolist()
    return out


def pick(row, rule):
    """Index into ``GRID`` of ``rule``'s choice on one split (None if the rule did not run)."""
    if rule not in row:
        return None
    if rule == "evidence":
        return int(np.argmax(row[rule]))
    return int(np.argmin(np.round(row[rule], 12)))


def report(out):
    lines = ["# GP-struct: training-only rules for the kernel amplitude (papers' protocol)", "",
             "Script: `benchmarks/studies/bench_gp_struct_amplitude_rules.py` (its docstring says what each rule is). "
             "Chain sparse MAP, M = 500 SVD inducing inputs, amplitude grid 4^-2 ... 4^8, splits 0-4. Each cell: "
             "the amplitudes picked on the five splits, then the mean test error % of the MAP at those picks "
             "(outcome only; nothing here is chosen on it). Last column: the best single amplitude in "
             "hindsight (test-chosen, a bound, not a rule).", "",
             "| task | " + " | ".join(RULES) + " | best fixed amplitude (hindsight) |", "|---|" + "---|" * (len(RULES) + 1)]
    for name, rows in out.items():
        cells = []
        for rule in RULES:
            idx = [pick(r, rule) for r in rows]
            if any(i is None for i in idx):
                cells.append("–")
                continue
            err = np.mean([r["test"][i] for r, i in zip(rows, idx)])
            cells.append(f"{', '.join(f'{GRID[i]:g}' for i in idx)}: **{err:.2f}**")
        mean_test = np.mean([r["test"] for r in rows], axis=0)
        best = int(np.argmin(mean_test))
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {GRID[best]:g}: {mean_test[best]:.2f} |")
    lines += ["", "Mean over the splits per amplitude (CV: held-out token error %; evidence: Laplace log evidence "
              "per training token; test: error %):", "",
              "| task | row | " + " | ".join(f"{a:g}" for a in GRID) + " |", "|---|---|" + "---|" * len(GRID)]
    for name, rows in out.items():
        for rule in (*RULES, "test"):
            if any(rule not in r for r in rows):
                continue
            per_token = rule == "evidence"
            vals = np.mean([np.asarray(r[rule]) / (r["n_tok"] if per_token else 1) for r in rows], axis=0)
            lines.append(f"| {name} | {rule} | " + " | ".join(f"{v:.3f}" if per_token else f"{v:.2f}" for v in vals) + " |")
    write_text(RESULTS / "gp_struct_amplitude_rules.md", "\n".join(lines) + "\n")


def main():
    os.environ.setdefault("SKLEARN_STRUCT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    if report_only_requested(description=__doc__.split("\n")[0]):  # or the first word `report`
        report(load_json(PATH))
        return finish()
    tasks = sys.argv[1].split(",") if len(sys.argv) > 1 else [t[0] for t in TASKS]
    out = json.loads(PATH.read_text()) if PATH.exists() else {}
    for task, name, _ in TASKS:
        if task not in tasks:
            continue
        out[name] = []
        for split in range(5):
            out[name].append(measure(task, split))
            print(name, split, {k: pick(out[name][-1], k) for k in RULES}, flush=True)
            PATH.write_text(json.dumps(out, indent=1))
    report(out)


if __name__ == "__main__":
    main()
