"""Peak fit memory per token: ChainCRF, NonLocalCRF's base CRF and the ``sklearn_struct.crfsuite`` drop-in
against sklearn-crfsuite, on the same features, in one run.

Every fit runs in its own fresh process. The process loads its input (the CSR matrices
:class:`~sklearn_struct.preprocessing.WindowFeaturizer` makes of CoNLL-2000's training set for
the array estimators; the feature dicts those matrices are made of, from
``WindowFeaturizer.to_dicts``, for the two CRFsuite APIs), warms up with a fit on 20 sentences
(so that loading the compiled numba kernels is not billed to the fit), and then measures:

* the *baseline*: its resident set size (``VmRSS``) with the data loaded, after ``gc.collect()``;
* the fit's *peak*: ``VmHWM`` after the fit, the high-water mark having been reset right after
  the baseline (``echo 5 > /proc/self/clear_refs``; ``ru_maxrss`` of the child where that is not
  possible, which then includes the loading).

``(peak - baseline) / n_tokens`` is the fit's memory per token: everything the fit allocates
(its copies of the data, the per-token buffers of an objective evaluation, the L-BFGS memories).
All fits take ``c2 = 1``, no bias (CRFsuite's model), weights for the (attribute, label) pairs seen
in training, and stop after ``MAX_ITER`` L-BFGS iterations: the peak is reached in the first
evaluations and once the L-BFGS memories are filled (6 pairs), so a full fit would only take longer.
The corpus is CoNLL-2000's training set (211,727 tokens) and the same list of sentences 4 times
(847k tokens; sentences repeated by reference, so the input costs no more to hold).

Writes ``benchmarks/results/memory_per_token/memory_per_token.{md,json}``. Goal (issue #33): our peak per token at
most 1.2x sklearn-crfsuite's. Needs ``SKLEARN_STRUCT_DATA`` (CoNLL-2000) and sklearn-crfsuite.
Run: ``SKLEARN_STRUCT_DATA=../shared/data python benchmarks/product/bench_memory_per_token.py [--factors 1 4]``.

``--stages`` fits only the drop-in, its fit split into stages by the probes of
``_lib/memory_stages.py`` (the high-water mark reset at each stage's end), and writes
``stages.{md,json}``: where the bytes per token go (``--before-stages`` adds an earlier run's table).
"""

import argparse
import json
import os
import pickle
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import add_report_only, finish, load_json, parse_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

RESULTS = results_dir("memory_per_token")
ROOT = Path(__file__).resolve().parents[2]  # the repository: the children import its package
C2 = 1.0
MAX_ITER = 10
GOAL = 1.2
FITTERS = {
    "ChainCRF": "sklearn_struct.ChainCRF on CSR matrices",
    "NonLocalCRF": "sklearn_struct.NonLocalCRF (no energy: its base CRF) on CSR matrices",
    "crfsuite.CRF": "sklearn_struct.crfsuite.CRF (the drop-in) on feature dicts",
    "sklearn-crfsuite": "sklearn_crfsuite.CRF on feature dicts",
}

CHILD = r"""
import gc, json, pickle, resource, sys, time, warnings
sys.path.insert(0, {root!r})
fitter, store, factor, stages = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "stages"
from sklearn.exceptions import ConvergenceWarning
warnings.simplefilter("ignore", ConvergenceWarning)


def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def make(fitter, max_iter):
    if fitter == "ChainCRF":
        from sklearn_struct import ChainCRF
        return ChainCRF(c2={c2}, fit_intercept=False, max_iter=max_iter)
    if fitter == "NonLocalCRF":
        from sklearn_struct import NonLocalCRF
        return NonLocalCRF(c2={c2}, max_iter=max_iter)
    if fitter == "crfsuite.CRF":
        from sklearn_struct.crfsuite import CRF
        return CRF(algorithm="lbfgs", c2={c2}, max_iterations=max_iter)
    import sklearn_crfsuite
    return sklearn_crfsuite.CRF(algorithm="lbfgs", c2={c2}, max_iterations=max_iter)


if stages:  # imported before the baseline is read
    sys.path.insert(0, {benchmarks!r})
    from _lib.memory_stages import install
with open(store, "rb") as fh:
    X, y = pickle.load(fh)
X, y = X * factor, y * factor
make(fitter, 2).fit(X[:20], y[:20])  # warm-up: load the compiled kernels
gc.collect()
n_tokens = sum(len(s) for s in y)
baseline = status("VmRSS")
try:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset VmHWM to the current RSS
    reset = True
except OSError:
    reset = False
marks = []
if stages:  # the drop-in's fit split into stages: each one's peak and the memory in use at its end
    def mark(stage):
        marks.append({{"stage": stage, "peak_bytes": status("VmHWM") - baseline, "end_bytes": status("VmRSS") - baseline}})
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")

    install(mark)
start = time.perf_counter()
model = make(fitter, {max_iter}).fit(X, y)
seconds = time.perf_counter() - start
peak = status("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
if stages:
    mark("the model and the training log")
    peak = baseline + max(m["peak_bytes"] for m in marks)
print(json.dumps({{"fitter": fitter, "factor": factor, "n_sequences": len(y), "n_tokens": n_tokens,
                  "baseline_bytes": baseline, "peak_bytes": peak, "hwm_reset": reset, "seconds": seconds,
                  "bytes_per_token": (peak - baseline) / n_tokens, "stages": marks}}))
"""


def run(fitter, store, factor, stages=False):
    code = CHILD.format(root=str(ROOT), benchmarks=str(ROOT / "benchmarks"), c2=C2, max_iter=MAX_ITER)
    proc = subprocess.run([sys.executable, "-c", code, fitter, store, str(factor), "stages" if stages else "-"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{fitter} x{factor} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def prepare(tmp):
    """Featurise CoNLL-2000's training set once: CSR matrices and the dicts they are made of."""
    from sklearn_struct.datasets import load_conll2000
    from sklearn_struct.preprocessing import WindowFeaturizer

    train = load_conll2000("train")
    y = [list(labels) for labels in train.labels]
    featurizer = WindowFeaturizer()
    X = featurizer.fit_transform(train.sequences)
    stores = {"csr": str(Path(tmp) / "csr.pkl"), "dicts": str(Path(tmp) / "dicts.pkl")}
    with open(stores["csr"], "wb") as fh:
        pickle.dump((X, y), fh, protocol=pickle.HIGHEST_PROTOCOL)
    with open(stores["dicts"], "wb") as fh:
        pickle.dump((featurizer.to_dicts(train.sequences), y), fh, protocol=pickle.HIGHEST_PROTOCOL)
    nnz = sum(x.nnz for x in X)
    info = {"n_tokens": int(sum(x.shape[0] for x in X)), "n_attributes": int(X[0].shape[1]),
            "nnz_per_token": nnz / sum(x.shape[0] for x in X), "n_labels": len({v for s in y for v in s})}
    return stores, info


def table(results, info, factors, fitters, before=None):
    """Bytes per token and the ratio to sklearn-crfsuite's (and the same from ``before``, an earlier run)."""
    runs = [("", results)] + ([("before: ", before)] if before else [])
    head = "| fit | " + " | ".join(f"{tag}x{f}: bytes / token | {tag}x{f}: ratio to sklearn-crfsuite"
                                   for tag, _ in runs for f in factors)
    lines = [head + " |", "|---|" + "---|---|" * len(factors) * len(runs)]
    for fitter in fitters:
        cells = []
        for _, res in runs:
            for f in factors:
                r, ref = res.get((fitter, f)), res.get(("sklearn-crfsuite", f))
                if r is None:
                    cells += ["-", "-"]
                    continue
                ratio = r["bytes_per_token"] / ref["bytes_per_token"] if ref else float("nan")
                cells += [f"{r['bytes_per_token']:.0f}", f"{ratio:.2f}"]
        lines.append(f"| {FITTERS[fitter]} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| fit | " + " | ".join(f"x{f}: tokens | x{f}: baseline MiB | x{f}: peak MiB" for f in factors) + " |")
    lines.append("|---|" + "---|---|---|" * len(factors))
    for fitter in fitters:
        cells = []
        for f in factors:
            r = results[(fitter, f)]
            cells += [f"{r['n_tokens']:,}", f"{r['baseline_bytes'] / 2**20:.0f}", f"{r['peak_bytes'] / 2**20:.0f}"]
        lines.append(f"| {fitter} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factors", type=int, nargs="+", default=[1, 4], help="corpus repetitions")
    parser.add_argument("--fitters", nargs="+", default=list(FITTERS), choices=list(FITTERS))
    parser.add_argument("--label", default="", help="a note on the code measured, written into the table")
    parser.add_argument("--before", help="the json of an earlier run (other code), shown beside this one")
    parser.add_argument("--update", action="store_true",
                        help="keep the other fits of the last results (and their 'before'); rerun only these")
    parser.add_argument("--before-stages", help="with --stages: the stages json of an earlier run (other code), "
                                                "shown as a second table")
    parser.add_argument("--stages", action="store_true",
                        help="only the drop-in, its fit split into stages (memory at each one's peak and end): "
                             "writes stages.{md,json}")
    add_report_only(parser)
    args = parse_args(parser)
    if args.report_only:
        report(load_json(RESULTS / "memory_per_token.json"))
        if (RESULTS / "stages.json").exists():
            report_stages(load_json(RESULTS / "stages.json"))
        return finish()
    if not os.environ.get("SKLEARN_STRUCT_DATA"):
        sys.exit("Set SKLEARN_STRUCT_DATA to the folder holding conll2000/.")
    if args.stages:
        return run_stages(args)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        stores, info = prepare(tmp)
        for factor in args.factors:
            for fitter in args.fitters:
                store = stores["csr" if fitter in ("ChainCRF", "NonLocalCRF") else "dicts"]
                results[(fitter, factor)] = r = run(fitter, store, factor)
                r["label"] = args.label
                print(f"{fitter} x{factor}: {r['bytes_per_token']:.0f} bytes/token "
                      f"({r['peak_bytes'] / 2**20:.0f} MiB peak, {r['baseline_bytes'] / 2**20:.0f} MiB baseline)",
                      flush=True)
    before = previous = None
    if args.update and (RESULTS / "memory_per_token.json").exists():
        last = load_json(RESULTS / "memory_per_token.json")
        for r in last["runs"]:
            r.setdefault("label", last.get("label", ""))
        results = {**{(r["fitter"], r["factor"]): r for r in last["runs"]}, **results}
        previous = last["before"] if not args.before else None
    if args.before:
        previous = load_json(Path(args.before))
    if previous:
        before = {"label": previous.get("label"), "runs": previous["runs"]}
    save_json(RESULTS / "memory_per_token.json", {
        "info": info, "max_iter": MAX_ITER, "c2": C2, "label": args.label,
        "runs": [results[k] for k in sorted(results)],
        "before": before, "setup": dict(machine=platform.machine(), cpu_count=os.cpu_count(),
                                        python=platform.python_version())}, indent=2)
    report(load_json(RESULTS / "memory_per_token.json"))


def run_stages(args):
    """The drop-in's fit at each factor in a fresh process, its stages probed (``_lib.memory_stages``)."""
    with tempfile.TemporaryDirectory() as tmp:
        stores, info = prepare(tmp)
        runs = [dict(run("crfsuite.CRF", stores["dicts"], factor, stages=True), label=args.label)
                for factor in args.factors]
    before = load_json(Path(args.before_stages))["runs"] if args.before_stages else None
    save_json(RESULTS / "stages.json", {"info": info, "max_iter": MAX_ITER, "c2": C2, "runs": runs, "before": before})
    report_stages(load_json(RESULTS / "stages.json"))


def report_stages(payload):
    """The stages tables (this run's, and an earlier one's): bytes per token over the baseline at
    each stage's peak and at its end."""
    lines = ["# The drop-in's fit by stage", "",
             "Bytes per token over the baseline (the dicts loaded), in a fresh process as in the main table: at the "
             "peak of each stage and at its end.", ""]
    for runs in (payload["runs"], payload.get("before")):
        if runs:
            lines += _stage_table(runs)
    text = "\n".join(lines)
    write_text(RESULTS / "stages.md", text)
    print(text)


def _stage_table(runs):
    lines = ["Code: " + "; ".join(f"x{r['factor']}: {r['label']}" for r in runs) + ".", "",
             "| stage | " + " | ".join(f"x{r['factor']}: peak | x{r['factor']}: at its end" for r in runs) + " |",
             "|---|" + "---|---|" * len(runs)]
    for i, stage in enumerate(m["stage"] for m in runs[0]["stages"]):
        cells = [f"{r['stages'][i][key] / r['n_tokens']:.0f}" for r in runs for key in ("peak_bytes", "end_bytes")]
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    peaks = [cell for r in runs for cell in (f"**{r['bytes_per_token']:.0f}**", "")]
    lines.append("| **the fit's peak** | " + " | ".join(peaks) + " |")
    return lines + [""]


def report(payload):
    """The md from the saved json (this run's fits, and an earlier run's as 'before' where given)."""
    info, setup = payload["info"], payload["setup"]
    results = {(r["fitter"], r["factor"]): r for r in payload["runs"]}
    factors = sorted({f for _, f in results})
    fitters = [f for f in FITTERS if any(k[0] == f for k in results)]
    header = (
        "# Peak fit memory per token\n\n"
        f"Machine: {setup['machine']}, {setup['cpu_count']} cores, Python {setup['python']}. "
        f"CoNLL-2000 training set ({info['n_tokens']:,} tokens, {info['n_attributes']:,} WindowFeaturizer "
        f"attributes, {info['nnz_per_token']:.1f} per token, {info['n_labels']} labels) and 4x that; "
        f"c2={payload['c2']}, no bias, {payload['max_iter']} L-BFGS iterations. Each fit in a fresh process: "
        "(peak RSS during the fit - RSS "
        "with the data loaded) / tokens. Goal (issue #33): at most "
        f"{GOAL}x sklearn-crfsuite's.\n\n"
    )
    before = None
    if payload["before"]:
        before = {(r["fitter"], r["factor"]): r for r in payload["before"]["runs"]}
        header += f"Before: {payload['before'].get('label') or ''}\n\n"
    labels = sorted({r.get("label", "") for r in results.values()} - {""})
    if len(labels) == 1:
        header += f"Code: {labels[0]}.\n\n"
    if len(labels) > 1:
        header += "Fits by code version: " + "; ".join(
            f"{', '.join(sorted({f'{k[0]} x{k[1]}' for k, r in results.items() if r.get('label') == lab}))}: {lab}"
            for lab in labels) + "\n\n"
    text = header + table(results, info, factors, fitters, before) + "\n"
    write_text(RESULTS / "memory_per_token.md", text)
    print(text)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
