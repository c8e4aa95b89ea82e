"""Cold start: import time and the first-ever fit + predict of each estimator, in fresh processes.

Each estimator is fitted on small generated data in a new Python process, first with an empty
numba cache (``NUMBA_CACHE_DIR`` pointing at a new folder: every kernel is compiled, as in a fresh
install), then again with the cache that run left behind (a user's second session). Import time
is measured in the same processes, and the CPU time spent compiling numba kernels during fit +
predict is recorded from numba's compile events (the rest is the fit itself). Goal (issues 13, 20):
the first-ever fit + predict of any estimator under 5 CPU seconds on 2 cores, and the first-ever
quick tour (``python -m sklearn_struct``, every estimator and its baseline) under 20 CPU seconds,
measured the same way (a fresh process with an empty cache, then one with the cache it left).

Run: ``python benchmarks/product/bench_cold_start.py [--repeats 2]``; writes
``benchmarks/results/cold_start/cold_start.md`` and ``.json``.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import add_report_only, finish, load_json, parse_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

RESULTS = results_dir("cold_start")

# Each snippet defines X, y (and optionally Xt) and `est`; the runner times fit + predict.
CASES = {
    "ChainCRF": """
from sklearn_struct import ChainCRF
from sklearn_struct.datasets import make_chain_data
X, y = make_chain_data(50, n_labels=4, random_state=0)
est = ChainCRF(max_iter=20)
""",
    "ChainCRF (token dicts, Pipeline)": """
from sklearn.pipeline import make_pipeline
from sklearn_struct import ChainCRF
from sklearn_struct.datasets import make_chain_data
from sklearn_struct.preprocessing import SequenceVectorizer
X0, y = make_chain_data(50, n_labels=4, random_state=0)
X = [[{"w": str(int(3 * v)), "pos": "NN" if v > 0 else "VB"} for v in x[:, 0]] for x in X0]
est = make_pipeline(SequenceVectorizer(), ChainCRF(max_iter=20))
""",
    "NonLocalCRF (word dictionary)": """
from sklearn_struct import NonLocalCRF
from sklearn_struct.datasets import make_chain_data
from sklearn_struct.energies import WordDictionaryEnergy
X, y = make_chain_data(50, n_labels=4, min_length=5, max_length=5, random_state=0)
est = NonLocalCRF(WordDictionaryEnergy(), max_iter=20, n_epochs=1, random_state=0)
""",
    "PrunedBPMarginals": """
from sklearn_struct import PrunedBPMarginals
from sklearn_struct.datasets._ising import make_ising_grid
from sklearn_struct.utils.graph import images_to_graphs
images, labels = make_ising_grid(n_noisy=2, shape=(10, 10), random_state=0)
X, y = images_to_graphs(images), list(labels.reshape(len(labels), -1))
est = PrunedBPMarginals(max_iter=10)
""",
    "DLPWClassifier": """
from sklearn_struct import DLPWClassifier
from sklearn_struct.datasets import make_multilabel_pairwise
X, y = make_multilabel_pairwise(100, n_features=5, n_labels=4, random_state=0)
est = DLPWClassifier(max_epochs=5)
""",
    "GPStructClassifier": """
from sklearn_struct import GPStructClassifier
from sklearn_struct.datasets import make_chain_data
X, y = make_chain_data(20, n_labels=2, n_features=3, random_state=0)
est = GPStructClassifier(optimizer="lbfgs", n_inducing=10, n_samples=20, max_iter=1, random_state=0)
""",
    "MLEStructMatcher": """
from sklearn_struct import MLEStructMatcher
from sklearn_struct.datasets import make_matchings
X, y = make_matchings(20, n_nodes=6, random_state=0)
est = MLEStructMatcher(max_iter=20, random_state=0)
""",
    "DependencyParserBP": """
from sklearn_struct import DependencyParserBP
from sklearn_struct.datasets import make_dependency_treebank
X, y = make_dependency_treebank(50, random_state=0)
est = DependencyParserBP(max_iter=2, random_state=0)
""",
}

RUNNER = """
import time, warnings, json
warnings.simplefilter("ignore")
t0, c0 = time.perf_counter(), time.process_time()
import sklearn_struct
t_import, c_import = time.perf_counter() - t0, time.process_time() - c0
from numba.core import event


class CompileTimer(event.Listener):
    # CPU seconds inside outermost numba compilations (nested ones are part of their caller's)
    depth, cpu = 0, 0.0

    def on_start(self, ev):
        if self.depth == 0:
            self.start = time.process_time()
        self.depth += 1

    def on_end(self, ev):
        self.depth -= 1
        if self.depth == 0:
            self.cpu += time.process_time() - self.start


timer = CompileTimer()
event.register("numba:compile", timer)
{snippet}
timer.cpu = 0.0
t1, c1 = time.perf_counter(), time.process_time()
est.fit(X, y)
est.predict(X)
t_fit, c_fit = time.perf_counter() - t1, time.process_time() - c1
print(json.dumps({{"import": t_import, "fit_predict": t_fit, "import_cpu": c_import, "fit_predict_cpu": c_fit,
                  "compile_cpu": timer.cpu}}))
"""


def _run(snippet, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    proc = subprocess.run([sys.executable, "-c", RUNNER.format(snippet=snippet)], capture_output=True,
                          text=True, env=env, timeout=900)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ``python -m sklearn_struct`` with a listener recording each numba compilation: per kernel, the CPU
# seconds of its own compilation (nested compilations of its callees excluded) and of the ones
# started from Python (callees included), written as JSON to the file named by argv[1].
TOUR_RUNNER = """
import collections, json, runpy, sys, time
from numba.core import event
stack, own, outer, count = [], collections.Counter(), collections.Counter(), collections.Counter()


class Listener(event.Listener):
    def on_start(self, ev):
        stack.append([time.process_time(), 0.0])

    def on_end(self, ev):
        start, nested = stack.pop()
        spent = time.process_time() - start
        f = ev.data["dispatcher"].py_func
        name = f.__module__ + "." + f.__qualname__
        own[name] += spent - nested
        count[name] += 1
        if stack:
            stack[-1][1] += spent
        else:
            outer[name] += spent


event.register("numba:compile", Listener())
sys.argv = ["sklearn_struct"]
try:
    runpy.run_module("sklearn_struct", run_name="__main__", alter_sys=True)
finally:
    with open(PROFILE, "w") as fh:
        json.dump({k: [own[k], outer[k], count[k]] for k in own}, fh)
"""


def _run_tour(cache_dir):
    """CPU and wall seconds of the quick tour in a fresh process (children's rusage), and its compile profile."""
    import time

    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    profile = Path(cache_dir) / "compile_profile.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", TOUR_RUNNER.replace("PROFILE", repr(str(profile)))],
                          capture_output=True, text=True, env=env, timeout=1800)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    kernels = json.loads(profile.read_text()) if profile.exists() else {}
    profile.unlink(missing_ok=True)
    return {"cpu": cpu, "wall": wall, "output": proc.stdout, "kernels": kernels}


def tour_rows(repeats):
    """The whole tour, cold and warm cache, median of ``repeats``."""
    cold, warm = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(_run_tour(cache))
            warm.append(_run_tour(cache))
    errors = [r["error"] for r in cold + warm if "error" in r]
    med = lambda runs, key: sorted(r.get(key, float("nan")) for r in runs)[len(runs) // 2]  # noqa: E731
    ok = sorted((r for r in cold if "cpu" in r), key=lambda r: r["cpu"])
    median_run = ok[len(ok) // 2] if ok else {}
    return {"cold_cpu_s": med(cold, "cpu"), "cold_wall_s": med(cold, "wall"), "warm_cpu_s": med(warm, "cpu"),
            "warm_wall_s": med(warm, "wall"), "error": errors[0] if errors else None,
            "cold_output": median_run.get("output", ""), "cold_kernels": median_run.get("kernels", {})}


def profile_lines(kernels, top=25):
    """Markdown: the kernels whose compilation costs most in the cold tour, and the total per module."""
    total = sum(v[0] for v in kernels.values())
    lines = ["| kernel | compiling it: CPU s | started from Python, callees included: CPU s | compilations |",
             "|---|---|---|---|"]
    for name, (own, outer, n) in sorted(kernels.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"| `{name}` | {own:.2f} | {outer:.2f} | {n} |")
    per_module = {}
    for name, (own, _, _) in kernels.items():
        module = name.split(".<locals>")[0].rsplit(".", 1)[0]
        module = module if module.startswith("sklearn_struct") else "numba (array allocation, builtins)"
        per_module[module] = per_module.get(module, 0.0) + own
    lines += ["", f"All compilations of the cold tour: {total:.1f} CPU s, by module:", "",
              "| module | CPU s |", "|---|---|"]
    lines += [f"| `{m}` | {t:.2f} |" for m, t in sorted(per_module.items(), key=lambda kv: -kv[1])]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="cold/warm pairs per estimator (median kept)")
    add_report_only(parser)
    args = parse_args(parser)
    if args.report_only:
        report(load_json(RESULTS / "cold_start.json"))
        return finish()
    import sklearn_struct

    load = os.getloadavg()[0]
    rows = []
    for name, snippet in CASES.items():
        if name.split()[0] not in sklearn_struct.__all__:
            continue
        cold, warm = [], []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as cache:
                cold.append(_run(snippet, cache))
                warm.append(_run(snippet, cache))
        pick = lambda runs, key: sorted(r.get(key, float("nan")) for r in runs)[len(runs) // 2]  # noqa: E731
        errors = [r["error"] for r in cold + warm if "error" in r]
        rows.append({
            "estimator": name,
            "import_s": pick(cold, "import"),
            "import_cpu_s": pick(cold, "import_cpu"),
            "cold_fit_predict_s": pick(cold, "fit_predict"),
            "cold_fit_predict_cpu_s": pick(cold, "fit_predict_cpu"),
            "cold_compile_cpu_s": pick(cold, "compile_cpu"),
            "warm_fit_predict_s": pick(warm, "fit_predict"),
            "warm_fit_predict_cpu_s": pick(warm, "fit_predict_cpu"),
            "error": errors[0] if errors else None,
        })
        print(rows[-1], flush=True)
    tour = tour_rows(args.repeats)
    print(tour, flush=True)
    save_json(RESULTS / "cold_start.json", {"estimators": rows, "tour": tour, "setup": dict(
        cpu_count=os.cpu_count(), repeats=args.repeats, load_average=load)})
    report(load_json(RESULTS / "cold_start.json"))


def report(saved):
    """The md from the saved json."""
    rows, tour, setup = saved["estimators"], saved["tour"], saved["setup"]
    lines = ["# Cold start", "",
             f"Fresh processes on this machine ({setup['cpu_count']} cores); median of {setup['repeats']} run(s). "
             "Cold: empty numba cache (every kernel compiled, as after a fresh install). Warm: the cache "
             "the cold run left. Goal: cold fit + predict under 5 CPU s for every estimator. CPU seconds "
             "(all threads of the process) grow less with the machine's load than wall seconds do; numba "
             "compiles on one thread. Compiling: CPU seconds inside numba compilations during fit + predict; "
             "the rest of the cold CPU time is the fit itself (and Python). "
             f"1-min load average at the start: {setup['load_average']:.1f}.", "",
             "| estimator | import: CPU s | first fit + predict, cold cache: CPU s | of which compiling "
             "| of which fitting | same, wall s | warm cache: wall s | goal < 5 CPU s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ok = "error: " + r["error"] if r["error"] else ("met" if r["cold_fit_predict_cpu_s"] < 5 else "not met")
        lines.append(f"| {r['estimator']} | {r['import_cpu_s']:.2f} | {r['cold_fit_predict_cpu_s']:.2f} "
                     f"| {r['cold_compile_cpu_s']:.2f} | {r['cold_fit_predict_cpu_s'] - r['cold_compile_cpu_s']:.2f} "
                     f"| {r['cold_fit_predict_s']:.2f} | {r['warm_fit_predict_s']:.2f} | {ok} |")
    ok = "error: " + tour["error"] if tour["error"] else ("met" if tour["cold_cpu_s"] < 20 else "not met")
    lines += ["", "The whole quick tour (`python -m sklearn_struct`), a fresh process each:", "",
              "| run | cold cache: CPU s | cold: wall s | warm cache: CPU s | warm: wall s | goal < 20 CPU s |",
              "|---|---|---|---|---|---|",
              f"| tour | {tour['cold_cpu_s']:.1f} | {tour['cold_wall_s']:.1f} | {tour['warm_cpu_s']:.1f} "
              f"| {tour['warm_wall_s']:.1f} | {ok} |", "", "The cold tour's output:", "", "```",
              tour["cold_output"].rstrip(), "```"]
    compiling = sum(r["cold_compile_cpu_s"] for r in rows)
    first = sum(r["cold_fit_predict_cpu_s"] for r in rows)
    kernels = tour.get("cold_kernels", {})
    tour_compiling = sum(v[0] for v in kernels.values())
    lines += ["", f"What limits it: numba's compilation. Over the estimators above it is {compiling:.1f} of the "
              f"{first:.1f} CPU s of their first fits ({compiling / first:.0%}); in the cold tour (the median "
              f"run) {tour_compiling:.1f} of its {tour['cold_cpu_s']:.1f} CPU s, against {tour['warm_cpu_s']:.1f} "
              "with a warm cache. numba compiles every jitted function into a library of its own (typing, "
              "lowering, LLVM optimisation, machine code) and optimises and compiles its code again inside "
              "every caller's library, so the cost follows the size of the code each model runs and the depth "
              "of its calls. The kernels whose compilation costs most in the cold tour:", ""]
    lines += profile_lines(kernels)
    write_text(RESULTS / "cold_start.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
