"""Scale-out: ChainCRF on a two-process dask LocalCluster against the local fit (issue #33).

CoNLL-2000 chunking (WindowFeaturizer features), the training set concatenated ``k`` times
(``--sizes 1,4`` by default; 16 with ``--sizes 1,4,16``), ``ChainCRF(n_jobs=2, max_iter=30)``
fitted

- locally: two resident shards evaluated on two threads of this process;
- on ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`` under
  ``joblib.parallel_backend("dask")``: each shard scattered once to a worker, every evaluation
  sending theta only (:mod:`sklearn_struct.utils.shards`).

Measured: the bytes each worker receives (counted on the workers by
:func:`~sklearn_struct.utils.shards.count_worker_bytes`) in the first evaluation (the scatter)
and in each later one, against the pickled parameter vector; wall and CPU seconds (this process,
and the workers' own CPU); the largest difference between the two models. From the measured
compute per token and bytes per evaluation, a projection of one L-BFGS evaluation at 10M / 100M
tokens on 8 / 32 / 128 workers over 10 Gbit/s. Writes ``benchmarks/results/scaleout/scaleout.{md,json}``.
With ``--corpus 1,4``: the same fit from a :class:`~sklearn_struct.cluster_corpus.ClusterCorpus` of
CoNLL-2000 split into two files that the workers read, featurise and pack themselves, against the
local fit of the same sentences: the bytes of the preparation (vocabularies, counts) and of each
evaluation, and the model difference. ``--merge`` adds the rows run to the stored results.
Needs ``SKLEARN_STRUCT_DATA`` (CoNLL-2000). Run: ``python benchmarks/product/bench_scaleout.py``.
"""

import argparse
import json
import os
import pickle
import platform
import resource
import sys
import tempfile
import time
import warnings
from functools import partial
from pathlib import Path

import joblib
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import Bunch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.internals import ChainObjective  # noqa: E402
from _lib.report import add_report_only, finish, load_json, parse_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

from sklearn_struct import ChainCRF  # noqa: E402
from sklearn_struct.cluster_corpus import ClusterCorpus  # noqa: E402
from sklearn_struct.datasets import load_conll, load_conll2000  # noqa: E402
from sklearn_struct.preprocessing import WindowFeaturizer  # noqa: E402
from sklearn_struct.utils.shards import ResidentShards, count_worker_bytes  # noqa: E402

RESULTS = results_dir("scaleout")
MAX_ITER = 30
GBIT = 10e9 / 8  # bytes per second of a 10 Gbit/s link


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class _Meter:
    """Bytes the workers receive per evaluation of resident shards (first = the scatter)."""

    def __init__(self, client):
        self.read, self.rows = count_worker_bytes(client), []
        self.originals = {name: getattr(ResidentShards, name) for name in ("map", "_map_each")}
        for name, original in self.originals.items():
            setattr(ResidentShards, name, self._metered(original))

    def _metered(self, original):
        meter = self

        def method(shards, func, params, *args):
            before = sum(meter.read().values())
            out = original(shards, func, params, *args)
            if shards.distributed:
                meter.rows.append((sum(meter.read().values()) - before, len(pickle.dumps(params)),
                                   getattr(params, "size", 0)))
            return out

        return method

    def close(self):
        for name, original in self.originals.items():
            setattr(ResidentShards, name, original)


def _fit(X, y, n_jobs=2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start, cpu = time.perf_counter(), _cpu()
        crf = ChainCRF(n_jobs=n_jobs, max_iter=MAX_ITER, c2=1.0).fit(X, y)
        return crf, time.perf_counter() - start, _cpu() - cpu


def run_corpus(data, client, copies=1, n_files=2):
    """ChainCRF from CoNLL files (the training set ``copies`` times) read, featurised and packed on the
    workers (a ClusterCorpus) against the local fit of the same sentences (featurised here, one shard)."""
    data = Bunch(sequences=data.sequences * copies, labels=data.labels * copies)
    featurizer = WindowFeaturizer()
    local, wall_local, cpu_local = _fit(featurizer.fit_transform(data.sequences), data.labels, n_jobs=None)
    with tempfile.TemporaryDirectory() as folder:
        paths = _split_files(data, folder, n_files)
        file_bytes = sum(os.path.getsize(p) for p in paths)
        corpus = ClusterCorpus([partial(load_conll, p, columns=("word", "pos", "chunk")) for p in paths],
                               WindowFeaturizer())
        meter, worker_cpu = _Meter(client), _worker_cpu(client)
        try:
            with joblib.parallel_backend("dask"):
                remote, wall_dask, cpu_driver = _fit(corpus, None)
        finally:
            meter.close()
    later = np.array([row[0] for row in meter.rows[3:]], dtype=float)
    theta_bytes = meter.rows[-1][1]
    diff = max(np.max(np.abs(remote.coef_ - local.coef_)), np.max(np.abs(remote.transition_ - local.transition_)))
    return {"copies": copies, "files": n_files, "file_bytes": int(file_bytes), "n_tokens": int(corpus.n_tokens_),
            "n_features": int(remote.n_features_in_), "theta_bytes": int(theta_bytes),
            "same_vocabulary": corpus.featurizer_.vectorizer_.vocabulary_ == featurizer.vectorizer_.vocabulary_,
            "preparation_bytes": [int(row[0]) for row in meter.rows[:3]], "evaluations": len(later),
            "later_bytes_mean": float(later.mean()), "later_bytes_max": float(later.max()),
            "ratio_to_theta_max": float(later.max() / theta_bytes), "wall_local": wall_local, "cpu_local": cpu_local,
            "wall_dask": wall_dask, "cpu_dask_driver": cpu_driver, "cpu_dask_workers": _worker_cpu(client) - worker_cpu,
            "max_abs_model_difference": float(diff), "same_n_iter": bool(local.n_iter_ == remote.n_iter_)}


def _split_files(data, folder, n_files):
    """The sentences in ``n_files`` CoNLL files of contiguous blocks (so the files' order is the data's)."""
    bounds = np.linspace(0, len(data.sequences), n_files + 1).astype(int)
    paths = []
    for f in range(n_files):
        paths.append(os.path.join(folder, f"train-{f}.txt"))
        with open(paths[-1], "w") as out:
            for i in range(bounds[f], bounds[f + 1]):
                tokens = zip(data.sequences[i], data.labels[i])
                out.write("".join(f"{t['word']} {t['pos']} {lab}\n" for t, lab in tokens)
                          + "\n")
    return paths


def _worker_cpu(client):
    return sum(client.run(_cpu).values())


def per_token_compute(X, y, n_labels):
    """CPU seconds per token of one objective evaluation (one shard, numba on one thread): CPU time,
    not wall time, which on the shared machine counts the other jobs' share of the cores too."""
    import numba

    objective = ChainObjective(X, y, n_labels, 1.0)
    theta = np.zeros(objective.n_params)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        objective(theta)  # warm
        times = []
        for _ in range(3):
            start = time.process_time()
            objective(theta)
            times.append(time.process_time() - start)
    finally:
        numba.set_num_threads(threads)
    return min(times) / sum(x.shape[0] for x in X)


def run_size(k, X1, y1, client):
    X, y = X1 * k, y1 * k
    n_tokens = sum(x.shape[0] for x in X)
    local, wall_local, cpu_local = _fit(X, y)
    meter, worker_cpu = _Meter(client), _worker_cpu(client)
    try:
        with joblib.parallel_backend("dask"):
            remote, wall_dask, cpu_driver = _fit(X, y)
    finally:
        meter.close()
    cpu_workers = _worker_cpu(client) - worker_cpu
    later = np.array([row[0] for row in meter.rows[1:]], dtype=float)
    theta_bytes = meter.rows[0][1]
    diff = max(np.max(np.abs(remote.coef_ - local.coef_)), np.max(np.abs(remote.transition_ - local.transition_)))
    return {"copies": k, "n_tokens": int(n_tokens), "n_params": int(meter.rows[0][2]),
            "theta_bytes": int(theta_bytes), "n_iter": int(local.n_iter_), "evaluations": len(meter.rows),
            "first_evaluation_bytes": int(meter.rows[0][0]), "later_bytes_mean": float(later.mean()),
            "later_bytes_max": float(later.max()), "ratio_to_theta_max": float(later.max() / theta_bytes),
            "wall_local": wall_local, "cpu_local": cpu_local, "wall_dask": wall_dask, "cpu_dask_driver": cpu_driver,
            "cpu_dask_workers": cpu_workers, "max_abs_model_difference": float(diff),
            "same_n_iter": bool(local.n_iter_ == remote.n_iter_)}


def projection(per_token, theta_bytes, latency):
    """One evaluation's seconds: compute N / W per core + params out to W workers and W gradients
    back through the driver's 10 Gbit/s link + the measured per-evaluation latency."""
    rows = []
    for n_tokens in (10e6, 100e6):
        one_core = per_token * n_tokens
        for workers in (8, 32, 128):
            comm = 2 * workers * theta_bytes / GBIT
            total = one_core / workers + comm + latency
            rows.append({"tokens": n_tokens, "workers": workers, "compute_s": one_core / workers,
                         "comm_s": comm, "latency_s": latency, "evaluation_s": total,
                         "speedup_vs_one_core": one_core / total, "efficiency": one_core / total / workers})
    return rows


def latency(client, theta_bytes):
    """Median seconds of an evaluation that does nothing on two shards (scheduling + transfers)."""
    theta = np.zeros(theta_bytes // 8)
    with ResidentShards([np.zeros(1), np.zeros(1)], client=client) as shards:
        times = []
        for _ in range(20):
            start = time.perf_counter()
            shards.map(_noop, theta)
            times.append(time.perf_counter() - start)
    return float(np.median(times[2:]))


def idle_cpu(client, seconds=30.0):
    """CPU seconds per minute the idle cluster costs: this process (client and, in a LocalCluster,
    the scheduler) and the workers (heartbeats, memory and system monitors)."""
    driver, workers = _cpu(), _worker_cpu(client)
    time.sleep(seconds)
    scale = 60.0 / seconds
    return {"driver": (_cpu() - driver) * scale, "workers": (_worker_cpu(client) - workers) * scale}


def _noop(shard, theta):
    return 0.0


def write(out):
    """Render ``scaleout.md`` from the results ``out`` (what ``scaleout.json`` holds)."""
    lines = ["# Scale-out: ChainCRF on a 2-process dask LocalCluster vs the local fit", "",
             f"CoNLL-2000 train x k, WindowFeaturizer features, `ChainCRF(n_jobs=2, max_iter={MAX_ITER}, c2=1)`; "
             "dask: `LocalCluster(n_workers=2, threads_per_worker=1, processes=True)` under "
             "`joblib.parallel_backend(\"dask\")`. Bytes: received by the two workers, counted on the workers. "
             f"Machine: {out['machine']} (shared, loaded: compare ratios, not times).", "",
             "| corpus | tokens | params | first evaluation (scatter) | later evaluations, mean (max) | "
             "max / theta | evaluations | wall local / dask | CPU local / dask (driver + workers) | "
             "model difference |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in out["sizes"]:
        lines.append(
            f"| {r['copies']}x | {r['n_tokens']:,} | {r['n_params']:,} | "
            f"{r['first_evaluation_bytes'] / 1e6:.1f} MB | {r['later_bytes_mean'] / 1e6:.2f} "
            f"({r['later_bytes_max'] / 1e6:.2f}) MB | {r['ratio_to_theta_max']:.2f}x | {r['evaluations']} | "
            f"{r['wall_local']:.1f} / {r['wall_dask']:.1f} s | {r['cpu_local']:.1f} / "
            f"{r['cpu_dask_driver']:.1f} + {r['cpu_dask_workers']:.1f} s | {r['max_abs_model_difference']:.1e} |")
    if "idle_cpu_per_minute" in out:
        idle = out["idle_cpu_per_minute"]
        lines += ["", f"The idle cluster itself costs {idle['driver']:.2f} s of CPU per minute in this process (client "
                  f"and scheduler) and {idle['workers']:.2f} s in the two workers (dask's heartbeats and monitors): "
                  "included in "
                  "the dask CPU columns, in proportion to the wall time."]
    lines += ["", "Before (issue #33, the same fit on the same cluster): 115.2 MB per evaluation against a 1.45 MB "
              "weight vector (79.6x), the dask fit 1.9-2.5x slower than one local chunk.", "",
              "## Projection: one L-BFGS evaluation, 10 Gbit/s", "",
              f"Measured: {out['per_token_us']:.3f} us of compute (CPU time) per token per evaluation on one core, "
              f"theta {out['theta_bytes'] / 1e6:.2f} MB (CoNLL-2000's features; more features scale the "
              f"communication in proportion), {out['latency_ms']:.1f} ms per evaluation of scheduling "
              "(a do-nothing evaluation on this cluster). Model: compute N / W + 2 W theta / 10 Gbit/s "
              "(theta out to every worker and a gradient back from each, through the driver's link) + latency.",
              "", "| tokens | workers | compute | communication | evaluation | speed-up vs one core | efficiency |",
              "|---|---|---|---|---|---|---|"]
    for p in out["projection"]:
        lines.append(f"| {p['tokens'] / 1e6:.0f}M | {p['workers']} | {p['compute_s']:.3f} s | {p['comm_s']:.3f} s | "
                     f"{p['evaluation_s']:.3f} s | {p['speedup_vs_one_core']:.1f}x | {p['efficiency']:.0%} |")
    if out.get("corpus"):
        rows = out["corpus"] if isinstance(out["corpus"], list) else [out["corpus"]]
        lines += ["", "## A corpus the driver never holds (`ClusterCorpus`)", "",
                  f"CoNLL-2000 train x k in {rows[0]['files']} CoNLL files, each read, featurised "
                  "(`WindowFeaturizer`) and packed on one worker; the driver merges the vocabularies and counts. "
                  "Against the local fit of the same sentences (featurised in this process beforehand, one shard), "
                  "same `ChainCRF(max_iter=30, c2=1)`: the dask times include reading and featurising on the workers, "
                  "the local ones do not. The preparation sends each worker its columns' numbers in the merged "
                  "vocabulary and the weighted (attribute, label) pairs, once.", "",
                  "| corpus | files | tokens | features | bytes to the workers: load / vocabulary / pairs | later "
                  "evaluations, mean (max) | max / theta | same vocabulary | wall local / dask | CPU local / dask "
                  "(driver + workers) | model difference |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for c in rows:
            lines.append(
                f"| {c.get('copies', 1)}x | {c['file_bytes'] / 1e6:.1f} MB | {c['n_tokens']:,} | {c['n_features']:,} | "
                + " / ".join(f"{b / 1e6:.2f}" for b in c["preparation_bytes"]) + " MB | "
                f"{c['later_bytes_mean'] / 1e6:.2f} ({c['later_bytes_max'] / 1e6:.2f}) MB | "
                f"{c['ratio_to_theta_max']:.2f}x | "
                f"{c['same_vocabulary']} | {c['wall_local']:.1f} / {c['wall_dask']:.1f} s | {c['cpu_local']:.1f} / "
                f"{c['cpu_dask_driver']:.1f} + {c['cpu_dask_workers']:.1f} s | {c['max_abs_model_difference']:.1e} |")
    write_text(RESULTS / "scaleout.md", "\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,4", help="corpus copies, comma-separated (default 1,4)")
    parser.add_argument("--corpus", default="", help="corpus copies to fit from a ClusterCorpus of CoNLL files "
                        "read on the workers, comma-separated (default none)")
    parser.add_argument("--merge", action="store_true",
                        help="add the rows of --sizes to the stored results (keeping the other sizes; the "
                        "projection measured again)")
    add_report_only(parser)
    args = parse_args(parser)
    if args.report_only:
        write(load_json(RESULTS / "scaleout.json"))
        return finish()
    if not os.environ.get("SKLEARN_STRUCT_DATA"):
        sys.exit("Set SKLEARN_STRUCT_DATA to the folder holding conll2000/.")
    import distributed

    data = load_conll2000("train")
    X1 = WindowFeaturizer().fit_transform(data.sequences)
    y1 = [np.asarray(lab) for lab in data.labels]
    n_labels = len(np.unique(np.concatenate(y1)))
    stored = json.loads((RESULTS / "scaleout.json").read_text()) if args.merge else None
    per_token = per_token_compute(X1, _encode(y1), n_labels)
    out = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "max_iter": MAX_ITER, "sizes": []}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  worker_dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        for k in (int(s) for s in args.sizes.split(",") if s):
            out["sizes"].append(run_size(k, X1, y1, client))
            print(json.dumps(out["sizes"][-1]), flush=True)
        out["corpus"] = []
        for k in (int(s) for s in args.corpus.split(",") if s):
            out["corpus"].append(run_corpus(data, client, k))
            print(json.dumps(out["corpus"][-1]), flush=True)
        if stored:
            out = _merged(stored, out["sizes"], out.get("corpus"))
        out["latency_ms"] = 1e3 * latency(client, out["sizes"][0]["theta_bytes"])
        out["idle_cpu_per_minute"] = idle_cpu(client)
    out["per_token_us"] = 1e6 * per_token
    out["theta_bytes"] = out["sizes"][0]["theta_bytes"]
    out["projection"] = projection(per_token, out["theta_bytes"], out["latency_ms"] / 1e3)
    RESULTS.mkdir(parents=True, exist_ok=True)
    save_json(RESULTS / "scaleout.json", out)
    write(load_json(RESULTS / "scaleout.json"))


def _merged(stored, rows, corpus=None):
    """The stored results with ``rows`` (and ``corpus``) added (a stored row of the same size replaced)."""
    if corpus:
        old = stored.get("corpus") or []
        old = old if isinstance(old, list) else [old]
        new = {c["copies"] for c in corpus}
        stored["corpus"] = sorted([c for c in old if c.get("copies", 1) not in new] + corpus,
                                  key=lambda c: c["copies"])
    new = {r["copies"] for r in rows}
    stored["sizes"] = sorted([r for r in stored["sizes"] if r["copies"] not in new] + rows, key=lambda r: r["copies"])
    return stored


def _encode(y):
    classes = np.unique(np.concatenate(y))
    return [np.searchsorted(classes, lab).astype(np.int64) for lab in y]


if __name__ == "__main__":
    main()
