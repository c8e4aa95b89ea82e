"""Peak memory of a CoNLL-2000 fit: NonLocalCRF's base CRF on WindowFeaturizer features.

Two fresh processes, each reporting its own peak resident set size (``ru_maxrss``):

1. ``featurise+fit``: load the CoNLL-2000 training set, featurise it with
   :class:`~sklearn_struct.preprocessing.WindowFeaturizer`, fit ``NonLocalCRF(c2=1)``
   (no energy: the plain chain CRF, trained to CRFsuite's stopping rule, the default), as a user
   script would;
2. ``fit only``: load the already featurised matrices (saved by step 1 with pickle) and
   fit the same model, i.e. the memory of the fit itself plus its input.

The baseline of a process that only imports sklearn_struct (numpy, scipy, numba) is
measured the same way and reported beside them. Writes
``benchmarks/results/memory_conll/memory_conll.md``. Needs ``SKLEARN_STRUCT_DATA`` (CoNLL-2000, from the
CoNLL-2000 shared task site; see the data README for its licence terms).
Run: ``python benchmarks/product/bench_memory_conll.py``.
"""

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, load_json, report_only_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

RESULTS = results_dir("memory_conll")
ROOT = Path(__file__).resolve().parents[2]
C2 = 1.0

CHILD = r"""
import json, pickle, resource, sys, time
sys.path.insert(0, {root!r})
mode, store = sys.argv[1], sys.argv[2]
import numpy as np
from sklearn_struct import NonLocalCRF
from sklearn_struct.datasets import load_conll2000
from sklearn_struct.preprocessing import WindowFeaturizer
out = {{"mode": mode}}
start = time.perf_counter()
if mode == "baseline":
    pass
elif mode == "featurise+fit":
    data = load_conll2000("train")
    X = WindowFeaturizer().fit_transform(data.sequences)
    y = data.labels
    out["featurised_peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open(store, "wb") as fh:
        pickle.dump((X, y), fh, protocol=pickle.HIGHEST_PROTOCOL)
else:
    with open(store, "rb") as fh:
        X, y = pickle.load(fh)
if mode != "baseline":
    crf = NonLocalCRF(c2={c2}).fit(X, y)
    out.update(n_iter=int(crf.n_iter_), n_sequences=len(X), n_tokens=int(sum(x.shape[0] for x in X)),
               n_attributes=int(X[0].shape[1]), n_labels=len(crf.classes_))
out["seconds"] = time.perf_counter() - start
out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run(mode, store):
    code = CHILD.format(root=str(ROOT), c2=C2)
    proc = subprocess.run([sys.executable, "-c", code, mode, store], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    if not os.environ.get("SKLEARN_STRUCT_DATA"):
        sys.exit("Set SKLEARN_STRUCT_DATA to the folder holding conll2000/.")
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "features.pkl")
        base = run("baseline", store)
        full = run("featurise+fit", store)
        fit = run("fit only", store)
    save_json(RESULTS / "memory_conll.json", {"baseline": base, "featurise_fit": full, "fit": fit, "setup": dict(
        machine=platform.machine(), cpu_count=os.cpu_count(), python=platform.python_version(), c2=C2)}, indent=2)
    report(load_json(RESULTS / "memory_conll.json"))


def report(saved):
    """The md from the saved json."""
    base, full, fit, setup = saved["baseline"], saved["featurise_fit"], saved["fit"], saved["setup"]
    rows = [
        ("import sklearn_struct only (baseline)", f"{base['peak_mib']:.0f} MiB", "-"),
        ("load + featurise (peak so far)", f"{full['featurised_peak_mib']:.0f} MiB", "-"),
        ("load + featurise + fit (one process)", f"{full['peak_mib']:.0f} MiB", f"{full['seconds']:.0f} s"),
        ("fit on featurised input (fresh process)", f"{fit['peak_mib']:.0f} MiB", f"{fit['seconds']:.0f} s"),
    ]
    lines = [f"| {a} | {b} | {c} |" for a, b, c in rows]
    table = "| process | peak RSS | wall time |\n|---|---|---|\n" + "\n".join(lines)
    header = (
        "# Peak memory of a CoNLL-2000 fit\n\n"
        f"Machine: {setup['machine']}, {setup['cpu_count']} cores, Python {setup['python']}. "
        f"NonLocalCRF(c2={setup['c2']}) without energy (the base chain CRF, CRFsuite's stopping rule) on "
        f"{fit['n_sequences']} sentences / {fit['n_tokens']} tokens, {fit['n_attributes']} WindowFeaturizer "
        f"attributes, {fit['n_labels']} labels; {fit['n_iter']} L-BFGS iterations. Peak resident set size "
        "(`ru_maxrss`) of fresh processes. The issue's earlier measurement: 579 MiB (fit) / 714 MiB "
        "(with featurising).\n\n"
    )
    write_text(RESULTS / "memory_conll.md", header + table + "\n")
    print(header + table)


if __name__ == "__main__":
    t0 = time.perf_counter()
    if report_only_args(description=__doc__.split("\n")[0]).report_only:
        report(load_json(RESULTS / "memory_conll.json"))
        finish()
    else:
        main()
    print(f"({time.perf_counter() - t0:.0f} s)")
