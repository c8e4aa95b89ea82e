"""GPStructClassifier() at its defaults on real base NP (issue #20 item 4): CPU seconds, stop reason, error.

Two fits, each ``GPStructClassifier(random_state=0)`` with nothing else set:

- the first 100 sentences of CRF++ base NP (``train.data`` then ``test.data``; template features
  from them), tested on the remaining sentences;
- the papers' protocol, split 0 (150 training sentences of the pool, the other 150 test; the
  train.data feature dictionary, see ``_lib.gp_struct.paper_split``).

A ConvergenceWarning is recorded, not raised. Writes ``results/gp_struct_default_fit/gp_struct_default_fit.{md,json}``::

    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/product/bench_gp_struct_default_fit.py
"""

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from sklearn_struct import GPStructClassifier
from sklearn_struct.datasets import load_crfpp
from sklearn_struct.preprocessing import CRFppTemplateFeaturizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, load_json, report_only_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

RESULTS = results_dir("gp_struct_default_fit")


def first_100():
    tr, te = load_crfpp("basenp", "train"), load_crfpp("basenp", "test")
    seqs, labels = tr.sequences + te.sequences, [np.asarray(y) for y in tr.labels + te.labels]
    feat = CRFppTemplateFeaturizer(tr.template, encoding=tr.encoding)
    Xtr = feat.fit_transform(seqs[:100])
    return Xtr, labels[:100], feat.transform(seqs[100:]), labels[100:]


def paper_split0():
    from _lib.gp_struct import paper_split

    _, Xtr, ytr, Xte, yte = paper_split("basenp", 0)
    return Xtr, ytr, Xte, yte


def measure(name, data):
    Xtr, ytr, Xte, yte = data
    gp = GPStructClassifier(random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = time.process_time()
        gp.fit(Xtr, ytr)
        cpu = time.process_time() - t
    err = 100.0 * float(np.mean(np.concatenate(gp.predict(Xte)) != np.concatenate(yte)))
    row = dict(data=name, n_train=len(Xtr), n_tokens=int(sum(x.shape[0] for x in Xtr)), n_test=len(Xte),
               fit_cpu_s=cpu, stop_reason=gp.stop_reason_, n_iter=gp.n_iter_, amplitude=gp.amplitude_,
               error_pct=err, warnings=[str(w.message) for w in caught])
    print(row, flush=True)
    return row


def main():
    os.environ.setdefault("SKLEARN_STRUCT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    rows = [measure("base NP first 100 sentences -> the rest", first_100()),
            measure("base NP papers' split 0 (150 / 150)", paper_split0())]
    defaults = {k: v for k, v in GPStructClassifier().get_params().items() if k not in ("callback",)}
    save_json(RESULTS / "gp_struct_default_fit.json", {
        "defaults": ", ".join(f"{k}={v!r}" for k, v in defaults.items() if k != "random_state"), "rows": rows})
    report(load_json(RESULTS / "gp_struct_default_fit.json"))


def report(saved):
    """The md from the saved json (``defaults``: the estimator's defaults at run time, as written)."""
    rows = saved["rows"]
    lines = ["# GPStructClassifier() at its defaults on real base NP", "",
             "`GPStructClassifier(random_state=0)`, nothing else set (defaults: "
             + saved["defaults"]
             + "). CPU seconds of this process (single-threaded work, shared machine).", "",
             "| data | train sentences | tokens | fit CPU s | stop_reason_ | n_iter_ | amplitude_ | test error % | warnings |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['data']} | {r['n_train']} | {r['n_tokens']} | {r['fit_cpu_s']:.1f} | {r['stop_reason']} | "
                     f"{r['n_iter']} | {r['amplitude']:g} | {r['error_pct']:.2f} | {len(r['warnings'])} |")
    write_text(RESULTS / "gp_struct_default_fit.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if report_only_args(description=__doc__.split("\n")[0]).report_only:
        report(load_json(RESULTS / "gp_struct_default_fit.json"))
        finish()
    else:
        main()
