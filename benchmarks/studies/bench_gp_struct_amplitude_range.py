"""How far the amplitude grid reaches (issue #22): the sparse MAP over amplitudes 4^-2 ... 4^8.

``amplitude="cv"`` picks the kernel amplitude from 4^-2 ... 4^4 (``AMPLITUDE_GRID``) by 3-fold CV
inside the training half. On Japanese NE a chain CRF on the same splits and features keeps improving
as its L2 weight c2 falls far below the CRF grid (c2 = 1e-5 errs 5.19, the CRF grid's lowest 0.01
5.46; the linear kernel's amplitude ``a`` is the prior variance of the weights, so ``a ~ 1 / (2 c2)``
and 4^4 = 256 matches c2 ~ 0.002). This measures, on the papers' protocol
(``_lib.gp_struct.paper_split``; M = 500 SVD inducing inputs as ``GPStructClassifier()``
builds them, the chain likelihood), for each amplitude of the wider grid 4^-2 ... 4^8:

- the held-out token error of 3-fold CV inside the training half (the partition the estimator
  draws), i.e. what ``amplitude="cv"`` would see with the wider grid;
- the test error of the sparse MAP fitted on the whole training half (outcome only).

``fit AMPLITUDE TASK [SPLITS [METHOD]]`` also runs gp-var-b (``GPStructClassifier(amplitude=AMPLITUDE,
random_state=split)``, all else at its defaults; METHOD gp-var-s / gp-var-p: Table 1's settings of that
variant, ``_lib.gp_struct.GP_PAPER``) at one fixed amplitude: a diagnostic of what a larger
amplitude would give, not a setting chosen on training data. Writes
``results/gp_struct_amplitude_range/gp_struct_amplitude_range.{md,json}``::

    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_amplitude_range.py [TASKS]
    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_amplitude_range.py fit 1024 JapaneseNE
    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_amplitude_range.py crf

``crf`` sweeps a ChainCRF's c2 from 1e-5 to 10 on the same splits and features (outcome only).
``kernels [TASKS]`` asks whether another kernel lowers the floor the linear one reaches at large
amplitudes: the chain sparse MAP with the linear kernel, ``RBF`` (length scales 8 and 16; a token has ~25 active binary
features, so squared distances run 0-50) and ``DotProduct(1) ** 2`` (feature pairs), every distinct
training token an inducing input (the exact GP on the training tokens; the most the kernel can give),
test error over ``KERNEL_AMPLITUDES`` (outcome only; the lowest is a bound in hindsight, not a rule).
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, report_only_requested, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

from _lib.gp_struct import (cv_errors, DECODERS, error_rate, errors, GP_PAPER, GRID, merged, paper_split, TASKS,  # noqa: E402
                            whitened)
from sklearn.gaussian_process.kernels import RBF, DotProduct  # noqa: E402
from sklearn.preprocessing import LabelEncoder  # noqa: E402

from sklearn_struct import ChainCRF, GPStructClassifier  # noqa: E402
from _lib.internals import AMPLITUDE_GRID, SparsePrior  # noqa: E402
from sklearn_struct.utils.packing import pack_sequences  # noqa: E402

RESULTS = results_dir("gp_struct_amplitude_range")
PATH = RESULTS / "gp_struct_amplitude_range.json"
KERNELS = {"DotProduct(1)": lambda: DotProduct(1.0), "RBF(8)": lambda: RBF(8.0), "RBF(16)": lambda: RBF(16.0),
           "DotProduct(1)^2": lambda: DotProduct(1.0) ** 2}
KERNEL_AMPLITUDES = (1.0, 16.0, 256.0, 4096.0, 65536.0, 1048576.0)
C2_SWEEP = (1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0)  # Table 1's CRF grid is 0.01 ... 10


def map_errors(task, split):
    """(CV error %, test error %) of the chain sparse MAP, decoded by the chain, at each amplitude of ``GRID``."""
    train, test, Q, rng = whitened(task, split)
    cv = cv_errors(train, Q, rng, grid=GRID, likelihood="chain")[:, DECODERS.index("chain")]
    test_err = [errors(*train, *test, Q, a, "chain")[0][0] for a in GRID]
    return cv.tolist(), test_err


def _per_split(tasks, key, measure):
    """``measure(task, split)`` on splits 0-4 of each task of ``tasks``, saved under ``key`` after each task."""
    out = json.loads(PATH.read_text()) if PATH.exists() else {}
    for task, name, _ in TASKS:
        if task not in tasks:
            continue
        rows = []
        for split in range(5):
            rows.append(measure(task, split))
            print(name, split, key, rows[-1], flush=True)
        out.setdefault(key, {})[name] = rows
        PATH.write_text(json.dumps(out, indent=1))
    return merged()


def run_maps(tasks):
    def measure(task, split):
        cv, test_err = map_errors(task, split)
        return dict(split=split, cv=cv, test=test_err)

    return _per_split(tasks, "maps", measure)


def crf_sweep(tasks):
    """Test error % of ``ChainCRF(c2)`` (500 L-BFGS iterations at most) over ``C2_SWEEP``, per split:
    where the CRF's regularisation would have to be (outcome only, nothing is chosen on it)."""
    def measure(task, split):
        _, Xtr, ytr, Xte, yte = paper_split(task, split)
        return [error_rate(ChainCRF(c2=c2, max_iter=500).fit(Xtr, ytr).predict(Xte), yte) for c2 in C2_SWEEP]

    return _per_split(tasks, "crf", measure)


def kernel_errors(task, split):
    """Test error % of the chain sparse MAP with each of ``KERNELS`` at each of ``KERNEL_AMPLITUDES``,
    every distinct training token an inducing input."""
    _, Xtr, ytr, Xte, yte = paper_split(task, split)
    enc = LabelEncoder().fit(np.concatenate(ytr))
    y, yt = enc.transform(np.concatenate(ytr)), np.concatenate(yte)
    seen = np.isin(yt, enc.classes_)  # a test label unseen in training is -1: always an error
    yt = np.where(seen, enc.transform(np.where(seen, yt, enc.classes_[0])), -1)
    (Xp, off), (Xq, offq) = pack_sequences(Xtr), pack_sequences(Xte)
    Z = np.unique(Xp.toarray() if hasattr(Xp, "toarray") else np.asarray(Xp), axis=0)
    out = {"split": split, "n_inducing": int(Z.shape[0])}
    for name, make in KERNELS.items():
        B, Bt = SparsePrior(make(), Z, Xp, off).B, SparsePrior(make(), Z, Xq, offq).B
        out[name] = [errors(B, y, off, Bt, yt, offq, len(enc.classes_), a, "chain")[0][0] for a in KERNEL_AMPLITUDES]
    return out


def kernel_sweep(tasks):
    return _per_split(tasks, "kernels", kernel_errors)


def _fits_part(task, method, amplitude):
    return RESULTS / f"gp_struct_amplitude_range_{task}_{method}_{amplitude:g}.json"


def run_fits(amplitude, task, splits, method="gp-var-b"):
    """Fits at one fixed amplitude, saved after each split to their own part file (so runs of other
    tasks or variants can go beside it); ``report`` merges the parts."""
    name = dict((t[0], t[1]) for t in TASKS)[task]
    key = f"{name} @ {amplitude:g}" + ("" if method == "gp-var-b" else f", {method}")
    params = {} if method == "gp-var-b" else dict(GP_PAPER[method])
    part = _fits_part(task, method, amplitude)
    rows = json.loads(part.read_text())[key] if part.exists() else []
    for split in splits:
        _, Xtr, ytr, Xte, yte = paper_split(task, split)
        t = time.process_time()
        gp = GPStructClassifier(random_state=split, **{**params, "amplitude": amplitude}).fit(Xtr, ytr)
        row = dict(split=split, error=error_rate(gp.predict(Xte), yte), cpu_s=time.process_time() - t,
                   stop=gp.stop_reason_, n_iter=gp.n_iter_, elbo=[gp.elbo_curve_[0], gp.elbo_curve_[-1]])
        print(key, row, flush=True)
        rows = sorted([r for r in rows if r["split"] != split] + [row], key=lambda r: r["split"])
        part.write_text(json.dumps({key: rows}, indent=1))
    return merged()


def report(out):
    lines = ["# GP-struct: the sparse MAP over a wider amplitude grid (papers' protocol)", "",
             "Script: `benchmarks/studies/bench_gp_struct_amplitude_range.py` (its docstring says what is measured). "
             "Chain likelihood, M = 500 SVD inducing inputs; mean over splits 0-4 of the held-out token error % "
             "in 3-fold CV inside the training half (what `amplitude=\"cv\"` sees) and of the test error % of the "
             "MAP fitted on the whole training half (outcome only). The estimator's grid is "
             f"{AMPLITUDE_GRID[0]:g} ... {AMPLITUDE_GRID[-1]:g}.", "",
             "| task | " + " | ".join(f"{a:g}" for a in GRID) + " | CV's pick over the wider grid: test |",
             "|---|" + "---|" * (len(GRID) + 1)]
    for name, rows in out.get("maps", {}).items():
        cv, te = np.mean([r["cv"] for r in rows], axis=0), np.mean([r["test"] for r in rows], axis=0)
        picked = np.mean([r["test"][int(np.argmin(np.round(r["cv"], 12)))] for r in rows])
        lines.append(f"| {name} CV | " + " | ".join(f"{v:.2f}" for v in cv) + " | |")
        lines.append(f"| {name} test | " + " | ".join(f"{v:.2f}" for v in te) + f" | {picked:.2f} |")
    if out.get("crf"):
        lines += ["", "`ChainCRF(c2=c2, max_iter=500)` on the same splits and features, test error % (mean over splits "
                  "0-4; outcome only; Table 1's CRF takes c2 from 0.01 ... 10 by 3-fold CV on the training half):", "",
                  "| task | " + " | ".join(f"c2 = {c:g}" for c in C2_SWEEP) + " |", "|---|" + "---|" * len(C2_SWEEP)]
        for name, rows in out["crf"].items():
            lines.append(f"| {name} | " + " | ".join(f"{v:.2f}" for v in np.mean(rows, axis=0)) + " |")
    if out.get("fits"):
        lines += ["", "gp-var-b (`GPStructClassifier(amplitude=A, random_state=split)`, all else at its defaults; rows "
                  "marked gp-var-s / gp-var-p: Table 1's settings of that variant) at one fixed amplitude (a "
                  "diagnostic, not chosen on training data):", "",
                  "| task @ amplitude | splits | test error % | fit CPU s mean / max | stops |", "|---|---|---|---|---|"]
        for key, rows in out["fits"].items():
            cpu = [r["cpu_s"] for r in rows]
            lines.append(f"| {key} | {', '.join(str(r['split']) for r in rows)} | "
                         f"{np.mean([r['error'] for r in rows]):.2f} | {np.mean(cpu):.0f} / {max(cpu):.0f} | "
                         f"{', '.join(r['stop'] for r in rows)} |")
    lines += kernel_report(out)
    write_text(RESULTS / "gp_struct_amplitude_range.md", "\n".join(lines) + "\n")


def kernel_report(out):
    """Markdown: the sparse MAP's test error with the other kernels, beside the linear one's."""
    if not out.get("kernels"):
        return []
    lines = ["", "Other kernels (`kernels`): the chain sparse MAP's test error % (mean over splits 0-4; outcome only) "
             "with every distinct training token an inducing input, at each amplitude; last column the lowest "
             "(a bound in hindsight). The row 'linear, M = 500 SVD' is the first table's (the estimator's inducing "
             "inputs); `DotProduct(1)` is the same linear kernel with every training token an inducing input.", "",
             "| task | kernel | " + " | ".join(f"{a:.0f}" for a in KERNEL_AMPLITUDES) + " | lowest |",
             "|---|---|" + "---|" * (len(KERNEL_AMPLITUDES) + 1)]
    for name, rows in out["kernels"].items():
        lin = np.mean([r["test"] for r in out["maps"][name]], axis=0)
        lines.append(f"| {name} | linear, M = 500 SVD (grid {GRID[0]:g} ... {GRID[-1]:g}) | "
                     + " | ".join(f"{lin[GRID.index(a)]:.2f}" if a in GRID else "-" for a in KERNEL_AMPLITUDES)
                     + f" | {lin.min():.2f} |")
        for kernel in KERNELS:
            m = np.mean([r[kernel] for r in rows], axis=0)
            lines.append(f"| {name} | {kernel} | " + " | ".join(f"{v:.2f}" for v in m) + f" | {m.min():.2f} |")
    return lines


def main():
    os.environ.setdefault("SKLEARN_STRUCT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    if report_only_requested(description=__doc__.split("\n")[0]):  # or the first word `report`
        report(merged())
        return finish()
    if len(sys.argv) > 1 and sys.argv[1] == "fit":
        splits = [int(s) for s in sys.argv[4].split(",")] if len(sys.argv) > 4 else range(5)
        out = run_fits(float(sys.argv[2]), sys.argv[3], splits, *sys.argv[5:6])
    elif len(sys.argv) > 1 and sys.argv[1] == "crf":
        out = crf_sweep(sys.argv[2].split(",") if len(sys.argv) > 2 else [t[0] for t in TASKS])
    elif len(sys.argv) > 1 and sys.argv[1] == "kernels":
        out = kernel_sweep(sys.argv[2].split(",") if len(sys.argv) > 2 else [t[0] for t in TASKS])
    else:
        out = run_maps(sys.argv[1].split(",") if len(sys.argv) > 1 else [t[0] for t in TASKS])
    report(out)


if __name__ == "__main__":
    main()
