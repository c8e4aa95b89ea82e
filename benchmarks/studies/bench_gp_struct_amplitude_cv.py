"""GPStructClassifier's amplitude CV against the test error of each amplitude (issue #22).

On the papers' protocol (the splits and features of ``bench_gp_struct_table1.py``), for each
amplitude of the CV grid: the CV scores of ``cv_amplitude`` as the default fit computes them
(single 3-fold, sparse MAP decoder), with the predict decoder (``decoder="sampled"``) and with
repeated folds; next to the test error of the training half's sparse MAP (MAP decoder, and the
sampled decoder of its Laplace start) and, with ``fits``, of full default fits at given amplitudes.
Everything before the test columns uses the training half only.

    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_amplitude_cv.py cv chunking,JapaneseNE 0,1
    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_amplitude_cv.py fits chunking 0 4,16,64
    ... fits chunking 3 4,16 101  # random_state=101 instead of the split's: the seed-to-seed spread
    ... fits chunking 0,1,2,3,4 cv 101  # the default fit (amplitude by CV) at random_state=101
    python benchmarks/studies/bench_gp_struct_amplitude_cv.py --report-only  # gp_struct_amplitude_cv.md
"""

import copy
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.preprocessing import LabelEncoder

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, report_only_requested, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from _lib.gp_struct import error_rate, paper_split  # noqa: E402

from sklearn_struct import GPStructClassifier  # noqa: E402
from _lib.internals import (_fresh_kernels, _held_out_marginals, _Rows, AMPLITUDE_GRID, cv_amplitude, sparse_map,  # noqa: E402
                            SparsePrior)
from sklearn_struct.utils.packing import pack_sequences  # noqa: E402

OUT = results_dir("gp_struct_amplitude_cv") / "gp_struct_amplitude_cv.json"
CV_VARIANTS = {"map x1": dict(), "sampled x1": dict(decoder="sampled"), "map x3": dict(n_repeats=3),
               "sampled x3": dict(decoder="sampled", n_repeats=3)}


def fit_prior(Xtr, ytr, split):
    """The default fit's classes, packed training labels, kernel, Z and amplitude-1 prior, and its rng at
    the point where ``fit`` runs the amplitude CV (the same calls in the same order)."""
    gp = GPStructClassifier(random_state=split)
    enc = LabelEncoder().fit(np.concatenate(ytr))
    Xp, offsets = pack_sequences(Xtr)
    rng = np.random.RandomState(split)
    kernel = _fresh_kernels(None, len(enc.classes_), learn_amplitude=False)
    Z = gp._inducing_inputs(kernel, Xp, rng)
    y = enc.transform(np.concatenate(ytr)).astype(np.int64)
    return enc, y, offsets, kernel, Z, SparsePrior(kernel, Z, Xp, offsets), rng


def cv_rows(task, split):
    _, Xtr, ytr, Xte, yte = paper_split(task, split)
    enc, y, offsets, kernel, Z, prior1, rng = fit_prior(Xtr, ytr, split)
    Q = len(enc.classes_)
    out = dict(task=task, split=split, grid=list(AMPLITUDE_GRID), cv={}, cpu={})
    for name, kw in CV_VARIANTS.items():
        t = time.process_time()
        a, scores = cv_amplitude(prior1, y, offsets, Q, copy.deepcopy(rng), **kw)
        out["cpu"][name] = time.process_time() - t
        out["cv"][name] = dict(pick=a, error=(100 * scores[:, 0]).tolist(), logloss=scores[:, 1].tolist())
    Xq, off_te = pack_sequences(Xte)
    prior_te = SparsePrior(kernel, Z, Xq, off_te)
    held = np.arange(len(Xte))
    yt = np.concatenate(yte)  # a test label unseen in training (-1) is always an error
    yt = np.where(np.isin(yt, enc.classes_), np.searchsorted(enc.classes_, yt), -1)
    fits = [sparse_map(_Rows(np.sqrt(a) * prior1.B), y, offsets, Q, max_iter=200) for a in AMPLITUDE_GRID]
    for decoder in ("map", "sampled"):
        out[f"test {decoder}"] = [
            float(100 * np.mean(_held_out_marginals(fit, _Rows(np.sqrt(a) * prior_te.B, off_te), prior_te, held, a,
                                                    decoder, 100, split).argmax(1) != yt))
            for a, fit in zip(AMPLITUDE_GRID, fits)]
    print(json.dumps(out), flush=True)
    return out


def fit_rows(task, split, amplitudes, seed=None):
    """Test error of default fits at fixed amplitudes (``random_state`` the split, or ``seed``: the
    seed-to-seed spread of a fit)."""
    _, Xtr, ytr, Xte, yte = paper_split(task, split)
    out = {}
    for a in amplitudes:
        t = time.process_time()
        rs = split if seed is None else seed
        gp = GPStructClassifier(amplitude=a, random_state=rs, n_predict_samples=100).fit(Xtr, ytr)
        key = str(a) if seed is None else f"{a} seed {seed}"
        out[key] = dict(error=error_rate(gp.predict(Xte), yte), cpu=time.process_time() - t, n_iter=gp.n_iter_,
                        amplitude=gp.amplitude_)
        out[key]["error 1000 samples"] = error_rate(gp.set_params(n_predict_samples=1000).predict(Xte), yte)
        out[key]["error viterbi_mean"] = error_rate(gp.set_params(decode="viterbi_mean").predict(Xte), yte)
        print(task, split, key, out[key], flush=True)
    return out


def report(data):
    """Per task and split, one line per amplitude: the CV scores (held-out error %) of each variant and the
    test errors; the picks of each CV variant and the test error of the fits at them."""
    lines = ["# GPStructClassifier: amplitude CV against the test error of each amplitude (papers' protocol)", "",
             __doc__.split("\n\n")[1].replace("\n", " "), "",
             "CV columns: held-out token error % on the training half (x1: one 3-fold partition, the default "
             "fit's; x3: three; map: the fold's sparse MAP; sampled: marginals averaged over 100 samples of its "
             "Laplace start with K~). Test columns: the training half's MAP and its sampled Laplace start, and "
             "full default fits at that amplitude (random_state = split; '-' not run).", ""]
    for key, row in data["cv"].items():
        fits = data["fits"].get(key, {})
        lines += [f"## {key}", "", "| amplitude | " + " | ".join(f"cv {v}" for v in CV_VARIANTS)
                  + " | test MAP | test sampled Laplace | test full fit |", "|---" * (len(CV_VARIANTS) + 4) + "|"]
        for i, a in enumerate(row["grid"]):
            cv = " | ".join(f"{row['cv'][v]['error'][i]:.2f}" for v in CV_VARIANTS)
            fit = fits.get(str(a), {}).get("error")
            lines.append(f"| {a:g} | {cv} | {row['test map'][i]:.2f} | {row['test sampled'][i]:.2f} | "
                         + ("-" if fit is None else f"{fit:.2f}") + " |")
        picks = ", ".join(f"{v} {row['cv'][v]['pick']:g}" for v in CV_VARIANTS)
        seeds = ", ".join(f"{k}: {v['error']:.2f}" for k, v in fits.items() if "seed" in k)
        lines += ["", f"Picks: {picks}. CPU s of the CV: " + ", ".join(f"{v} {row['cpu'][v]:.1f}" for v in CV_VARIANTS)
                  + (f". Other seeds: {seeds}" if seeds else "") + ".", ""]
    return lines


def summary(data, task):
    """Mean over the splits of the full-fit test error at each CV variant's picks (where all were fitted),
    of the training-half MAP at the default CV's picks, per fixed amplitude, and of the default fits at
    another seed."""
    keys = sorted(k for k in data["cv"] if k.startswith(task + "/"))
    fits = [data["fits"].get(k, {}) for k in keys]
    out = []
    for v in CV_VARIANTS:
        errs = [f.get(str(data["cv"][k]["cv"][v]["pick"]), {}).get("error") for k, f in zip(keys, fits)]
        picks = "/".join(f"{data['cv'][k]['cv'][v]['pick']:g}" for k in keys)
        out.append(f"cv {v} (picks {picks}): " + (f"{np.mean(errs):.2f}" if None not in errs else "not all fitted"))
    grid = data["cv"][keys[0]]["grid"]
    maps = [data["cv"][k]["test map"][grid.index(data["cv"][k]["cv"]["map x1"]["pick"])] for k in keys]
    out.append(f"training-half MAP at the default CV's picks: {np.mean(maps):.2f}")
    for a in grid:
        errs = [f.get(str(a), {}).get("error") for f in fits]
        if None not in errs:
            out.append(f"fixed amplitude {a:g}: {np.mean(errs):.2f} (" + " / ".join(f"{e:.2f}" for e in errs) + ")")
    seeds = [f.get("cv seed 101", {}).get("error") for f in fits]
    if None not in seeds:
        out.append("default fits at random_state=101: " + f"{np.mean(seeds):.2f} (" + " / ".join(f"{e:.2f}" for e in seeds) + ")")
    return [f"- {task}: " + "; ".join(out)]


def main():
    data = json.loads(OUT.read_text()) if OUT.exists() else {"cv": {}, "fits": {}}
    if report_only_requested(description=__doc__.split("\n")[0]):  # or the first word `report`
        tasks = sorted({k.split("/")[0] for k in data["cv"]})
        lines = report(data) + ["## Summary (test error %, mean over the splits)", ""]
        lines += [line for t in tasks for line in summary(data, t)]
        write_text(OUT.with_suffix(".md"), "\n".join(lines) + "\n")
        return finish()
    what, tasks, splits = sys.argv[1], sys.argv[2].split(","), [int(s) for s in sys.argv[3].split(",")]
    for task in tasks:
        for split in splits:
            key = f"{task}/{split}"
            if what == "cv":
                data["cv"][key] = cv_rows(task, split)
            else:
                amps = [a if a == "cv" else float(a) for a in sys.argv[4].split(",")]
                seed = int(sys.argv[5]) if len(sys.argv) > 5 else None
                data["fits"].setdefault(key, {}).update(fit_rows(task, split, amps, seed))
            OUT.write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
