"""Which decoder suits gp-var-p (the piecewise pseudo-likelihood, issue #22): chosen by CV on the training half.

gp-var-p trains the GP on the piecewise pseudo-likelihood (each token's unary factor normalised
over its label; each transition by its two conditionals, Sutton & McCallum 2007). The paper gives
no prediction rule. The edge pieces never see the unaries, so the transition table learns the
whole label-bigram statistics, label frequencies included, which the unary pieces learn as well;
the chain decoder with that table counts them twice. Three decoders of the piecewise sparse MAP
(the start of every GP fit, see ``_gp_struct_optim.sparse_map``):

- ``chain``: the chain's forward-backward marginals with the trained table ``F`` (the decoder of
  gp-var-b / gp-var-s, and gp-var-p's before issue #22's decoder change);
- ``token``: token by token, the softmax of the unary scores (transitions dropped);
- ``pmi``: the chain with ``F``'s pointwise mutual information (``_gp_struct_model.pmi_transitions``:
  the chain re-assembled from the pieces, label frequencies counted once).

The decoder is chosen on training data only: inside each training half, 3-fold CV over its
sequences (one random partition, the one ``cv_amplitude`` draws with ``random_state = split``)
at every amplitude of ``AMPLITUDE_GRID``, each fold's model the piecewise MAP, scored by held-out
token error. Reported: the CV error at amplitude 1 and at each decoder's best amplitude (the
amplitude the piecewise model's CV picks with that decoder), and, only as the outcome, the test
error of each decoder on the MAP fitted on the whole training half at amplitude 1 and at that
decoder's CV amplitude; the chain MAP decoded by the chain (gp-var-b's start) at amplitude 1 for
reference. Papers' protocol (``_lib.gp_struct.paper_split``), M = 500 SVD inducing inputs
as ``GPStructClassifier()`` builds them. Writes ``results/gp_struct_piecewise/gp_struct_piecewise.{md,json}``::

    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/studies/bench_gp_struct_piecewise.py [splits] [tasks]
    python benchmarks/studies/bench_gp_struct_piecewise.py --report-only # the table from the stored json
    python benchmarks/studies/bench_gp_struct_piecewise.py fits TASK [splits]  # the decoders on Table 1's gp-var-p fits
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, load_json, report_only_requested, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

from _lib.gp_struct import cv_errors, DECODERS, errors, paper_split, TASKS, whitened  # noqa: E402
from sklearn_struct import GPStructClassifier  # noqa: E402
from _lib.internals import (_fresh_kernels, _Rows, AMPLITUDE_GRID, pmi_transitions, sparse_map, SparsePrior,  # noqa: E402
                            token_marginals)
from sklearn_struct.oracles.chain import forward_backward  # noqa: E402
from sklearn_struct.utils.packing import pack_sequences, subset_sequences  # noqa: E402

RESULTS = results_dir("gp_struct_piecewise")


def run(splits, tasks=None):
    rows = []
    for task, name, _ in TASKS:
        if tasks is not None and task not in tasks:
            continue
        for split in splits:
            t0 = time.process_time()
            train, test, Q, rng = whitened(task, split)
            cv = cv_errors(train, Q, rng)
            best = {d: float(AMPLITUDE_GRID[int(np.argmin(cv[:, j]))]) for j, d in enumerate(DECODERS)}
            test_err, tables = {}, {}
            for a in sorted({1.0, *best.values()}):
                test_err[a], mb = errors(*train, *test, Q, a)
                tables[a] = (float(mb.min()), float(mb.max()), float(np.abs(pmi_transitions(mb)).max()))
            chain_ref = errors(*train, *test, Q, 1.0, likelihood="chain")[0][0]
            rows.append(dict(task=name, split=split, cv=cv.tolist(), cv_amplitude=best,
                             test={str(a): e for a, e in test_err.items()},
                             tables={str(a): t for a, t in tables.items()}, chain_map=chain_ref))
            print(name, split, "cv@1", np.round(cv[AMPLITUDE_GRID.index(1.0)], 2), "best", best,
                  "test", {a: np.round(e, 2).tolist() for a, e in test_err.items()}, "chain MAP", round(chain_ref, 2),
                  f"{time.process_time() - t0:.0f} CPU s", flush=True)
    return rows


def fitted_decoders(task, splits):
    """Outcome only (test error %, nothing chosen on it): gp-var-p fitted as in Table 1 (papers' protocol,
    ``GP_PAPER["gp-var-p"]``, ``random_state = split``), its posterior decoded by the three decoders, each
    averaged over the same ``n_predict_samples`` posterior draws (``token`` is what ``predict`` does)."""
    from _lib.gp_struct import GP_PAPER, error_rate, gp_params

    from _lib.internals import _marginals_kernel, _per_sequence

    n_train = dict((t[0], t[2]) for t in TASKS)[task]
    out = []
    for split in splits:
        _, Xtr, ytr, Xte, yte = paper_split(task, split)
        gp = GPStructClassifier(random_state=split, **gp_params("gp-var-p", n_train, "paper")).fit(Xtr, ytr)
        prior, offsets = gp._test_prior(Xte)
        p = gp.params_

        def work(draw, i):
            fbin = draw.fbin(p)
            res = []
            for table in (fbin, None, pmi_transitions(fbin, axes=(1, 2))):
                if table is None:
                    res.append(token_marginals(draw.f, axis=1).mean(axis=(0, 3)).T)
                    continue
                acc, part = 0.0, np.empty((draw.f.shape[2], p.Q))
                for k in range(p.K):
                    _marginals_kernel(draw.f[k], np.ascontiguousarray(table[k]), part)
                    acc = acc + part / p.K
                res.append(acc)
            return res

        S = max(1, -(-gp.n_predict_samples // p.K))
        per_seq = _per_sequence(prior, p, np.arange(len(Xte)), S, gp._predict_seed, None, work)
        err = [error_rate([gp.classes_[m[j].argmax(1)] for m in per_seq], yte) for j in range(len(DECODERS))]
        out.append(dict(task=task, split=split, amplitude=gp.amplitude_, errors=err,
                        predict=error_rate(gp.predict(Xte), yte)))
        print(task, split, gp.amplitude_, dict(zip(DECODERS, np.round(err, 2))), flush=True)
    assert GP_PAPER["gp-var-p"]["likelihood"] == "piecewise"
    return out


def report(rows, splits):
    i1 = AMPLITUDE_GRID.index(1.0)
    lines = ["# gp-var-p: which decoder for the piecewise model (chosen by CV on the training half)", "",
             f"Error % (mean over splits {', '.join(map(str, splits))}, papers' protocol) of the piecewise sparse MAP "
             "every gp-var-p fit starts from, decoded three ways: `chain` (forward-backward with the trained "
             "transition table F), `token` (softmax of the unary scores), `pmi` (forward-backward with F's pointwise "
             "mutual information, `pmi_transitions`). CV columns: 3-fold CV inside each training half (the choice "
             "is made on these); test columns: the outcome only. 'CV amplitude': each decoder's amplitude of lowest CV "
             "error (the grid 1/16 ... 256), the MAP refitted on the whole training half there. "
             "Script: `benchmarks/studies/bench_gp_struct_piecewise.py`.", "",
             "| task | " + " | ".join(f"CV {d} @1" for d in DECODERS) + " | "
             + " | ".join(f"CV {d} @CV amp." for d in DECODERS) + " | "
             + " | ".join(f"test {d} @1" for d in DECODERS) + " | "
             + " | ".join(f"test {d} @CV amp." for d in DECODERS) + " | CV amplitudes (chain / token / pmi) | "
             "test chain MAP, chain decoder @1 | F min / max, max abs PMI @1 |",
             "|---|" + "---|" * (4 * len(DECODERS) + 3)]
    wins, per_fit = [], []
    for _, name, _ in TASKS:
        sel = [r for r in rows if r["task"] == name]
        if not sel:
            continue
        cv = np.array([r["cv"] for r in sel])
        cv1 = cv[:, i1].mean(axis=0)
        cvb = np.mean([np.min(c, axis=0) for c in cv], axis=0)
        t1 = np.mean([r["test"]["1.0"] for r in sel], axis=0)
        tb = np.mean([[r["test"][str(r["cv_amplitude"][d])][j] for j, d in enumerate(DECODERS)] for r in sel], axis=0)
        amps = " / ".join(",".join(f"{r['cv_amplitude'][d]:g}" for r in sel) for d in DECODERS)
        tab = [r["tables"]["1.0"] for r in sel]
        cells = [f"{x:.2f}" for x in (*cv1, *cvb, *t1, *tb)]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {amps} | {np.mean([r['chain_map'] for r in sel]):.2f} | "
                     f"{min(t[0] for t in tab):.1f} / {max(t[1] for t in tab):.1f}, {max(t[2] for t in tab):.1f} |")
        wins.append((name, DECODERS[int(np.argmin(cv1))], DECODERS[int(np.argmin(cvb))]))
        per_fit.append((name, *_per_split_choice(sel)))
    lines += ["", "Lowest CV error (the choice): " + "; ".join(f"{n}: {a} at amplitude 1, {b} at the CV amplitude"
                                                           for n, a, b in wins) + "."]
    lines += ["", "Decoder chosen per split with the amplitude by the same CV (not built; test error, outcome only): "
              + "; ".join(f"{n} {e:.2f} ({c})" for n, e, c in per_fit) + "."]
    return lines + fits_lines()


def _per_split_choice(sel):
    """Mean test error % when each split takes the decoder (and its amplitude) of lowest CV error, and the choices."""
    errs, picks = [], []
    for r in sel:
        j = int(np.argmin(np.min(r["cv"], axis=0)))
        errs.append(r["test"][str(r["cv_amplitude"][DECODERS[j]])][j])
        picks.append(DECODERS[j])
    return float(np.mean(errs)), ",".join(picks)


def fits_lines():
    """The table of :func:`fitted_decoders` (``results/gp_struct_piecewise/gp_struct_piecewise_fits.json``), if it was run."""
    path = RESULTS / "gp_struct_piecewise_fits.json"
    if not path.exists():
        return []
    fits = json.loads(path.read_text())
    lines = ["", "Outcome only (nothing chosen on it): test error % of Table 1's gp-var-p fits (papers' protocol, "
             "`GP_PAPER['gp-var-p']`, the token decoder's CV amplitude), the same posterior decoded three ways, "
             "each averaged over the same 100 posterior draws (`token` is `predict`): "
             "`bench_gp_struct_piecewise.py fits TASK`.", "",
             "| task | splits | " + " | ".join(DECODERS) + " | amplitudes |", "|---|---|" + "---|" * (len(DECODERS) + 1)]
    for task, name, _ in TASKS:
        sel = sorted((r for r in fits if r["task"] == task), key=lambda r: r["split"])
        if sel:
            mean = np.mean([r["errors"] for r in sel], axis=0)
            lines.append(f"| {name} | {','.join(str(r['split']) for r in sel)} | " + " | ".join(f"{m:.2f}" for m in mean)
                         + " | " + ",".join(f"{r['amplitude']:g}" for r in sel) + " |")
    return lines


def main():
    os.environ.setdefault("SKLEARN_STRUCT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    if sys.argv[1:2] == ["fits"]:  # outcome only: the three decoders on Table 1's gp-var-p fits of a task
        splits = [int(s) for s in sys.argv[3].split(",")] if len(sys.argv) > 3 else [0, 1, 2, 3, 4]
        res = fitted_decoders(sys.argv[2], splits)
        path = RESULTS / "gp_struct_piecewise_fits.json"
        old = json.loads(path.read_text()) if path.exists() else []
        keep = [r for r in old if (r["task"], r["split"]) not in {(q["task"], q["split"]) for q in res}]
        path.write_text(json.dumps(keep + res, indent=1))
        return
    report_only = report_only_requested(description=__doc__.split("\n")[0])  # or the first word `report`
    if report_only:  # rewrite the table from the stored rows
        rows = load_json(RESULTS / "gp_struct_piecewise.json")
        splits = sorted({r["split"] for r in rows})
    else:
        splits = [int(s) for s in sys.argv[1].split(",")] if len(sys.argv) > 1 else [0, 1, 2, 3, 4]
        rows = run(splits, sys.argv[2].split(",") if len(sys.argv) > 2 else None)
    lines = report(rows, splits)
    write_text(RESULTS / "gp_struct_piecewise.md", "\n".join(lines) + "\n")
    if not report_only:
        (RESULTS / "gp_struct_piecewise.json").write_text(json.dumps(rows, indent=1))
    print("\n".join(lines))
    finish()


if __name__ == "__main__":
    main()
