"""How many inducing inputs (issue #22): the sparse GP's residual variance, and gp-var-b with as many as the data's rank.

With the linear kernel and ``inducing="auto"`` the inducing inputs span the top-M right singular
subspace of the training tokens' features (M = ``n_inducing``, 500 by default, the paper's M). What
the subspace leaves out enters the model as the residual variance ``K~ = k(x, x) - q(x, x)``: noise
on every token's unary scores, with the kernel's variance, so ``a K~`` at amplitude ``a``. This
measures, on the papers' protocol (``_lib.gp_struct.paper_split``):

- ``ktil``: per task (split 0), the mean prior variance ``k(x, x)`` of a token's score and the mean
  ``K~`` of the training and of the test tokens at amplitude 1, with M = 500;
- ``fit TASK M [SPLITS]``: gp-var-b (``GPStructClassifier(n_inducing=M, random_state=split)``, all
  else at its defaults, the amplitude by its 3-fold CV) on the given splits; with M at least the
  rank of the training features the subspace holds every training token exactly (``K~ = 0`` there),
  and the SVD keeps only the rank's directions (``inducing_inputs_.shape[0]``). Test error of both
  decoders, fit CPU seconds, stop reason, the amplitude picked and the M used. An optional METHOD
  (``gp-var-s`` / ``gp-var-p``) runs that variant at Table 1's settings (``GP_PAPER``) instead, and an
  optional AMPLITUDE after it fixes the amplitude (a diagnostic of what would pass, not a rule).

Writes ``results/gp_struct_inducing/gp_struct_inducing.{md,json}``::

    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_inducing.py ktil
    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_inducing.py fit JapaneseNE 1500 0,1,2,3,4
    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_inducing.py fit JapaneseNE 1500 0,1,2,3,4 gp-var-p
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.utils import check_random_state

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, load_json, report_only_requested, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

from _lib.gp_struct import GP_PAPER, TASKS, error_rate, paper_split  # noqa: E402
from sklearn_struct import GPStructClassifier  # noqa: E402
from _lib.internals import _fresh_kernels, SparsePrior  # noqa: E402
from sklearn_struct.utils.packing import pack_sequences  # noqa: E402

RESULTS = results_dir("gp_struct_inducing")
PATH = RESULTS / "gp_struct_inducing.json"


def residual_variance(task, split=0, n_inducing=500):
    """Mean ``k(x, x)`` and mean ``K~`` (amplitude 1) of the training and test tokens."""
    _, Xtr, _, Xte, _ = paper_split(task, split)
    gp = GPStructClassifier(n_inducing=n_inducing)
    kernel = _fresh_kernels(gp.kernel, 1, learn_amplitude=False)
    Xp, off = pack_sequences(Xtr)
    Z = gp._inducing_inputs(kernel, Xp, check_random_state(split))
    out = dict(M=int(Z.shape[0]))
    for part, X in (("train", Xtr), ("test", Xte)):
        prior = SparsePrior(kernel, Z, *pack_sequences(X))
        ktil = np.concatenate([np.diag(k[0]) for k in prior.Ktil])
        out[part] = dict(n_tokens=int(ktil.size), prior=float(np.mean(ktil + np.sum(prior.B[0]**2, axis=1))),
                         ktil=float(np.mean(ktil)))
    return out


def fit(task, n_inducing, split, method="gp-var-b", amplitude="cv"):
    _, Xtr, ytr, Xte, yte = paper_split(task, split)
    t = time.process_time()
    params = dict({} if method == "gp-var-b" else GP_PAPER[method], amplitude=amplitude)
    gp = GPStructClassifier(n_inducing=n_inducing, random_state=split, **params).fit(Xtr, ytr)
    cpu = time.process_time() - t
    row = dict(split=split, error=error_rate(gp.predict(Xte), yte), cpu_s=cpu, stop=gp.stop_reason_,
               n_iter=gp.n_iter_, amplitude=gp.amplitude_, M=int(gp.inducing_inputs_.shape[0]))
    row["error_viterbi_mean"] = error_rate(gp.set_params(decode="viterbi_mean").predict(Xte), yte)
    return row


def report(out):
    lines = ["# GP-struct: the residual variance of the sparse GP, and the number of inducing inputs (papers' protocol)",
             "", "Script: `benchmarks/studies/bench_gp_struct_inducing.py` (its docstring says what is measured).", ""]
    if out.get("ktil"):
        lines += ["Mean prior variance k(x, x) of a token's unary score and mean residual variance K~ (amplitude 1; "
                  "scaled by the amplitude in the model), M = 500 SVD inducing inputs, split 0:", "",
                  "| task | M | train k(x, x) | train K~ | test k(x, x) | test K~ | test K~ / k(x, x) |",
                  "|---|---|---|---|---|---|---|"]
        for name, r in out["ktil"].items():
            tr, te = r["train"], r["test"]
            lines.append(f"| {name} | {r['M']} | {tr['prior']:.2f} | {tr['ktil']:.2f} | {te['prior']:.2f} | "
                         f"{te['ktil']:.2f} | {te['ktil'] / te['prior']:.3f} |")
    if out.get("fits"):
        lines += ["", "gp-var-b (`GPStructClassifier(n_inducing=M, random_state=split)`, all else at its defaults; rows "
                  "marked gp-var-s / gp-var-p: Table 1's settings of that variant, whose M = 500 rows are in Table 1), "
                  "test error % (argmax of the averaged marginals / Viterbi on the mean). For M = 500 (the default) see Table 1's "
                  "gp-var-b row (`gp_struct_table1.md`: same seeds and amplitude rule, an earlier run, not this script): "
                  "chunking 8.27, Japanese NE 5.36 (per split 6.21 / 5.77 / 4.70 / 5.61 / 4.49).", "",
                  "| task, n_inducing | splits | M used | amplitudes (by the CV unless fixed) | test error % | Viterbi on the mean | "
                  "fit CPU s mean / max | stops |", "|---|---|---|---|---|---|---|---|"]
        for key, rows in out["fits"].items():
            cpu = [r["cpu_s"] for r in rows]
            amplitudes = ", ".join(format(r["amplitude"], "g") for r in rows)
            lines.append(f"| {key} | {', '.join(str(r['split']) for r in rows)} | "
                         f"{', '.join(str(r['M']) for r in rows)} | {amplitudes} | "
                         f"{np.mean([r['error'] for r in rows]):.2f} | {np.mean([r['error_viterbi_mean'] for r in rows]):.2f} | "
                         f"{np.mean(cpu):.0f} / {max(cpu):.0f} | {', '.join(r['stop'] for r in rows)} |")
    write_text(RESULTS / "gp_struct_inducing.md", "\n".join(lines) + "\n")


def main():
    os.environ.setdefault("SKLEARN_STRUCT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    if report_only_requested(description=__doc__.split("\n")[0]):  # or the first word `report`
        report(load_json(PATH))
        return finish()
    out = json.loads(PATH.read_text()) if PATH.exists() else {}
    if sys.argv[1] == "ktil":
        out["ktil"] = {name: residual_variance(task) for task, name, _ in TASKS}
        PATH.write_text(json.dumps(out, indent=1))
    elif sys.argv[1] == "fit":
        task, n_inducing = sys.argv[2], int(sys.argv[3])
        splits = [int(s) for s in sys.argv[4].split(",")] if len(sys.argv) > 4 else range(5)
        method = sys.argv[5] if len(sys.argv) > 5 else "gp-var-b"
        amplitude = float(sys.argv[6]) if len(sys.argv) > 6 else "cv"
        key = f"{dict((t[0], t[1]) for t in TASKS)[task]}, n_inducing = {n_inducing}"
        key += "" if method == "gp-var-b" else f", {method} (Table 1's settings)"
        key += "" if amplitude == "cv" else f", amplitude {amplitude:g} fixed"
        for split in splits:
            row = fit(task, n_inducing, split, method, amplitude)
            print(key, row, flush=True)
            out = json.loads(PATH.read_text()) if PATH.exists() else {}
            rows = [r for r in out.setdefault("fits", {}).get(key, []) if r["split"] != split]
            out["fits"][key] = sorted(rows + [row], key=lambda r: r["split"])
            PATH.write_text(json.dumps(out, indent=1))
    report(out)


if __name__ == "__main__":
    main()
