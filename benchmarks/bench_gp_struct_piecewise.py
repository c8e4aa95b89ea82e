"""What limits gp-var-p (the piecewise pseudo-likelihood, issue #22): its sparse MAP decoded three ways.

gp-var-p trains the GP on the piecewise pseudo-likelihood (each token's unary factor normalised
over its label; each transition by its two conditionals, Sutton & McCallum 2007) and predicts,
like gp-var-b / gp-var-s, by the chain's forward-backward marginals. The edge pieces never see the
unaries, so the transition table learns the whole label-bigram statistics, label frequencies
included, which the unary pieces learn as well; the chain decoder then counts them twice.

On the papers' protocol (``bench_gp_struct_table1.paper_split``: the pool, the shared splits, the
train.data feature dictionary), M = 500 SVD inducing inputs as ``GPStructClassifier()`` builds
them, for amplitudes 1 / 16 / 64 (the range the amplitude CV picks), this measures the test error
of the sparse MAP (the start of every GP fit, see ``_gp_struct_optim.sparse_map``):

- the piecewise MAP decoded by the chain (what gp-var-p's ``predict`` does from its start);
- the same MAP decoded token by token (argmax of the unary scores; transitions dropped);
- the chain MAP decoded by the chain (gp-var-b's and gp-var-s's start);

and the range of the piecewise MAP's transition table. No fitting on test data: the test columns
only score. Writes ``results/gp_struct_piecewise.{md,json}``::

    SKLEARN_STRUCT_DATA=../shared/data python benchmarks/bench_gp_struct_piecewise.py [splits]
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state

sys.path.insert(0, str(Path(__file__).parent))

from bench_gp_struct_table1 import TASKS, paper_split  # noqa: E402
from sklearn_struct import GPStructClassifier  # noqa: E402
from sklearn_struct._gp_struct_amplitude import _Rows  # noqa: E402
from sklearn_struct._gp_struct_model import SparsePrior  # noqa: E402
from sklearn_struct._gp_struct_optim import sparse_map  # noqa: E402
from sklearn_struct.gp_struct import _fresh_kernels  # noqa: E402
from sklearn_struct.oracles.chain import forward_backward  # noqa: E402
from sklearn_struct.utils.packing import pack_sequences  # noqa: E402

RESULTS = Path(__file__).parent / "results"
AMPLITUDES = (1.0, 16.0, 64.0)
DECODERS = ("piecewise MAP, chain decoder", "piecewise MAP, per-token decoder", "chain MAP, chain decoder")


def whitened(task, split):
    """Whitened features of the training and test tokens at amplitude 1 (``B``, as the estimator
    builds them), the encoded labels (a test label unseen in training is -1: always an error), Q."""
    _, Xtr, ytr, Xte, yte = paper_split(task, split)
    enc = LabelEncoder().fit(np.concatenate(ytr))
    y = enc.transform(np.concatenate(ytr))
    seen = np.isin(np.concatenate(yte), enc.classes_)
    yt = np.full(seen.size, -1)
    yt[seen] = enc.transform(np.concatenate(yte)[seen])
    gp = GPStructClassifier()
    kernel = _fresh_kernels(gp.kernel, len(enc.classes_), learn_amplitude=False)
    Xp, off = pack_sequences(Xtr)
    Xq, offq = pack_sequences(Xte)
    Z = gp._inducing_inputs(kernel, Xp, check_random_state(split))
    return (SparsePrior(kernel, Z, Xp, off).B, y, off), (SparsePrior(kernel, Z, Xq, offq).B, yt, offq), len(enc.classes_)


def decoded_errors(train, test, Q, a):
    """Test error % of the three decoders at amplitude ``a`` and the piecewise transition table's range."""
    (B, y, off), (Bt, yt, offq) = train, test
    rows, rows_t = _Rows(np.sqrt(a) * B), _Rows(np.sqrt(a) * Bt)
    v, mb = sparse_map(rows, y, off, Q, likelihood="piecewise")[:2]
    vc, mbc = sparse_map(rows, y, off, Q, likelihood="chain")[:2]
    unary = rows_t.unary_mean(v)
    errors = [forward_backward(unary, mb, offq)[1], unary, forward_backward(rows_t.unary_mean(vc), mbc, offq)[1]]
    return [100 * float(np.mean(s.argmax(axis=1) != yt)) for s in errors], (float(mb.min()), float(mb.max()))


def run(splits):
    rows = []
    for task, name, _ in TASKS:
        for split in splits:
            t0 = time.process_time()
            train, test, Q = whitened(task, split)
            for a in AMPLITUDES:
                err, rng = decoded_errors(train, test, Q, a)
                rows.append(dict(task=name, split=split, amplitude=a, errors=err, mb_range=rng))
            print(name, split, [r["errors"] for r in rows[-len(AMPLITUDES):]], f"{time.process_time() - t0:.0f} CPU s",
                  flush=True)
    return rows


def report(rows, splits):
    lines = ["# gp-var-p: the piecewise sparse MAP decoded three ways (papers' protocol)", "",
             f"Test error % (mean over splits {', '.join(map(str, splits))}) of the sparse MAP every GP fit starts from; "
             "script: `benchmarks/bench_gp_struct_piecewise.py` (its docstring says what each column is).", "",
             "| task | amplitude | " + " | ".join(DECODERS) + " | piecewise transition table min / max |",
             "|---|---|" + "---|" * (len(DECODERS) + 1)]
    for _, name, _ in TASKS:
        for a in AMPLITUDES:
            sel = [r for r in rows if r["task"] == name and r["amplitude"] == a]
            mean = np.mean([r["errors"] for r in sel], axis=0)
            lo, hi = min(r["mb_range"][0] for r in sel), max(r["mb_range"][1] for r in sel)
            lines.append(f"| {name} | {a:g} | " + " | ".join(f"{m:.2f}" for m in mean) + f" | {lo:.1f} / {hi:.1f} |")
    return lines


def main():
    os.environ.setdefault("SKLEARN_STRUCT_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    splits = [int(s) for s in sys.argv[1].split(",")] if len(sys.argv) > 1 else [0, 1, 2, 3, 4]
    rows = run(splits)
    lines = report(rows, splits)
    (RESULTS / "gp_struct_piecewise.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "gp_struct_piecewise.json").write_text(json.dumps(rows, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
