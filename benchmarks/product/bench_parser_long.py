"""Cost of DependencyParserBP.predict per sentence length: full BP and MinJoint, CPU time and peak memory.

The model: the default second-order parser (non-projective tree factor + grandparent factors, one
root child) trained for one epoch on 300 sentences of UD English EWT dev. Long test sentences are
made by concatenating EWT test sentences (real tokens) up to each length. Each (length, inference)
cell runs in a fresh process (the model is loaded from a temporary file), so its peak resident
memory is its own; the process first predicts a 5-word sentence (compilation excluded from the
timings). Times are CPU seconds of the predict call (the machine is shared: wall time varies with
the load); the ratio column is the time over the 100-word time, to be read against n^3 growth.

Run: ``python benchmarks/product/bench_parser_long.py [--lengths 50 100 150 200 300]`` from the repository
root (``PYTHONPATH=.``); writes results/parser_long/parser_long.{md,json}. A few minutes on 2 cores.
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import joblib
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import add_report_only, finish, load_json, parse_args, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

RESULTS = results_dir("parser_long")


def long_sentence(sentences, n):
    """The first ``n`` tokens of the concatenated test sentences."""
    out = []
    for sent in sentences:
        out += sent
        if len(out) >= n:
            return out[:n]
    raise ValueError(f"the test sentences hold fewer than {n} tokens")


def cell(model_path, n, objective):
    """Predict one n-word sentence in this process; print a JSON line."""
    from sklearn_struct.datasets import load_ud

    parser = joblib.load(model_path).set_params(objective=objective, max_length=None)
    test = load_ud("english", "test").sentences
    parser.predict([test[0][:5]])  # compile outside the timing
    sentence = long_sentence(test, n)
    cpu, wall = time.process_time(), time.perf_counter()
    parser.predict([sentence])  # what a user calls: no reports (a report's bound costs as much as BP)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MiB (Linux: KiB)
    print(json.dumps({"n": n, "objective": objective, "cpu_s": cpu, "wall_s": wall, "peak_mib": peak,
                      "n_factors": n * (n - 1) ** 2}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[25, 50, 100, 150, 200, 300])
    parser.add_argument("--objectives", nargs="+", default=["none", "min_joint"])
    parser.add_argument("--cell", nargs=3, metavar=("MODEL", "N", "OBJECTIVE"), help=argparse.SUPPRESS)
    add_report_only(parser)
    args = parse_args(parser)
    if args.report_only:
        report(load_json(RESULTS / "parser_long.json"))
        return finish()
    if args.cell:
        return cell(args.cell[0], int(args.cell[1]), args.cell[2])
    from sklearn_struct import DependencyParserBP
    from sklearn_struct.datasets import load_ud

    dev = load_ud("english", "dev")
    start = time.perf_counter()
    model = DependencyParserBP(max_iter=1, random_state=0).fit(dev.sentences[:300], dev.heads[:300])
    fit_s = time.perf_counter() - start
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "parser.joblib")
        joblib.dump(model, path)
        for objective in args.objectives:
            for n in args.lengths:
                out = subprocess.run([sys.executable, __file__, "--cell", path, str(n), objective],
                                     capture_output=True, text=True, check=True)
                rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(rows[-1], flush=True)
    write(rows, fit_s)


def write(rows, fit_s):
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)", "python": platform.python_version(),
            "fit_seconds": fit_s, "load_average": os.getloadavg()[0]}
    write_text(RESULTS / "parser_long.json", json.dumps({"meta": meta, "rows": rows}, indent=1))
    report(load_json(RESULTS / "parser_long.json"))


def report(saved):
    """The md from the saved json."""
    meta, rows = saved["meta"], saved["rows"]
    lines = ["# DependencyParserBP.predict on one long sentence", "",
             "Default second-order model (non-projective, grandparents, one root child), trained for one epoch",
             "on 300 UD EWT dev sentences; long sentences concatenate EWT test sentences. One fresh process",
             "per cell (peak memory is the whole process's, about 200 MiB of it the interpreter and the",
             "model). CPU seconds of predict (no reports); ratio: over the 100-word time of the same",
             "inference (n^3 growth would give 3.4 at 150, 8 at 200, 27 at 300 words).",
             f"Machine: {meta['machine']}, load average {meta['load_average']:.1f} at the end.", "",
             "| inference | words | pairwise factors | CPU s | ratio to 100 words | peak memory MiB |",
             "|---|---|---|---|---|---|"]
    for objective in dict.fromkeys(r["objective"] for r in rows):
        cells = [r for r in rows if r["objective"] == objective]
        ref = next((r["cpu_s"] for r in cells if r["n"] == 100), np.nan)
        name = "full BP (objective='none', the default)" if objective == "none" else f"objective='{objective}'"
        for r in cells:
            lines.append(f"| {name} | {r['n']} | {r['n_factors']:,} | {r['cpu_s']:.2f} | {r['cpu_s'] / ref:.1f} | "
                         f"{r['peak_mib']:.0f} |")
    write_text(RESULTS / "parser_long.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
