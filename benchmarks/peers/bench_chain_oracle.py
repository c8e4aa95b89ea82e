"""Forward-backward on CoNLL-2000-sized input: our numba oracle against a batched NumPy version.

Both compute, for 8,936 sequences of mean length ~24 with 22 labels: log Z per sequence,
node marginals (n_tokens, 22) and the summed expected transition counts (22, 22), i.e.
exactly what one CRF training step needs.

The NumPy reference is the best plain-NumPy form of the same scaled recursion: sequences
padded to one (n_seq, T_max, L) array, one BLAS matrix product (n_seq, L) @ (L, L) per
time step for the forward and backward passes, and the transition counts as one batched
product per step. Padding positions get unit potentials and are masked out.

Sequence lengths come from the real CoNLL-2000 training set when SKLEARN_STRUCT_DATA is
set, else from a Poisson(24) draw. Run: ``python benchmarks/peers/bench_chain_oracle.py``.
"""

import gzip
import os
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np

from sklearn_struct.oracles.chain import forward_backward, viterbi
from sklearn_struct.utils import lengths_to_offsets
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.report import finish, load_json, load_saved, report_only_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402

RESULTS = results_dir("chain_oracle")
N_LABELS = 22


def conll_lengths():
    home = os.environ.get("SKLEARN_STRUCT_DATA")
    path = Path(home or "/nonexistent") / "conll2000" / "train.txt.gz"
    if not path.exists():
        rng = np.random.default_rng(0)
        return np.maximum(1, rng.poisson(24, size=8936)), "Poisson(24)"
    lengths, n = [], 0
    with gzip.open(path, "rt") as fh:
        for line in fh:
            if line.strip():
                n += 1
            elif n:
                lengths.append(n)
                n = 0
    if n:
        lengths.append(n)
    return np.array(lengths), "CoNLL-2000 train"


def numpy_forward_backward(unary, trans, offsets):
    """Scaled forward-backward, batched over padded sequences with BLAS products."""
    lengths = np.diff(offsets)
    n_seq, T, L = len(lengths), lengths.max(), unary.shape[1]
    pos = np.arange(T)
    mask = pos[None, :] < lengths[:, None]  # (n_seq, T)
    seq_idx = np.repeat(np.arange(n_seq), lengths)
    tok_pos = np.arange(unary.shape[0]) - offsets[seq_idx]
    shift = unary.max(axis=1)
    U = np.ones((n_seq, T, L))
    U[seq_idx, tok_pos] = np.exp(unary - shift[:, None])
    tshift = trans.max()
    E = np.exp(trans - tshift)
    alpha = np.empty((n_seq, T, L))
    c = np.ones((n_seq, T))
    a = U[:, 0]
    c[:, 0] = a.sum(1)
    alpha[:, 0] = a / c[:, :1]
    for t in range(1, T):
        a = (alpha[:, t - 1] @ E) * U[:, t]
        live = mask[:, t]
        a[~live] = alpha[~live, t - 1]  # padded steps carry alpha unchanged
        s = a.sum(1)
        s[~live] = 1.0
        c[:, t] = s
        alpha[:, t] = a / s[:, None]
    log_z = (np.log(c) * mask).sum(1) + np.add.reduceat(shift, offsets[:-1]) + (lengths - 1) * tshift
    beta = np.ones((n_seq, L))
    node = np.empty((n_seq, T, L))
    counts = np.zeros((L, L))
    for t in range(T - 1, 0, -1):
        live = mask[:, t]
        node[:, t] = alpha[:, t] * beta
        v = U[:, t] * beta / c[:, t : t + 1]
        v[~live] = 0.0
        counts += alpha[:, t - 1].T @ v
        new_beta = v @ E.T
        beta = np.where(live[:, None], new_beta, beta)
    node[:, 0] = alpha[:, 0] * beta
    counts *= E
    return log_z, node[mask], counts


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    lengths, source = conll_lengths()
    offsets = lengths_to_offsets(lengths)
    n_tok = int(offsets[-1])
    rng = np.random.default_rng(0)
    unary = rng.normal(scale=3.0, size=(n_tok, N_LABELS))
    trans = rng.normal(scale=1.0, size=(N_LABELS, N_LABELS))

    forward_backward(unary[: offsets[2]], trans, offsets[:3])  # compile / load the cache
    viterbi(unary[: offsets[2]], trans, offsets[:3])
    t_ours, (lz, node, counts) = best_of(lambda: forward_backward(unary, trans, offsets), 10)
    t_np, (lz_np, node_np, counts_np) = best_of(lambda: numpy_forward_backward(unary, trans, offsets), 3)
    t_vit, _ = best_of(lambda: viterbi(unary, trans, offsets), 10)
    err = max(np.abs(lz - lz_np).max(), np.abs(node - node_np).max(), np.abs(counts - counts_np).max() / n_tok)
    save_json(RESULTS / "chain_oracle.json", dict(
        machine=platform.processor() or platform.machine(), cpu_count=os.cpu_count(), threads=numba.get_num_threads(),
        source=source, n_sequences=len(lengths), n_tokens=n_tok, n_labels=N_LABELS, ours_s=t_ours, numpy_s=t_np,
        viterbi_s=t_vit, max_abs_diff=float(err)))
    report(load_json(RESULTS / "chain_oracle.json"))


def report(saved):
    """The table from the saved json (seconds are best-of times)."""
    L, n_tok, t_ours, t_np = saved["n_labels"], saved["n_tokens"], saved["ours_s"], saved["numpy_s"]
    t_vit, err = saved["viterbi_s"], saved["max_abs_diff"]
    flops = n_tok * 3 * 2 * L * L  # forward, backward, edge counts: L^2 multiply-adds each
    pp_bytes = (n_tok - saved["n_sequences"]) * L * L * 8
    rows = [
        ("sequences / tokens / labels", f"{saved['n_sequences']} / {n_tok} / {L} (lengths: {saved['source']})"),
        ("numba threads", str(saved["threads"])),
        ("ours: forward-backward (log Z, node marginals, summed edge counts)", f"{t_ours * 1e3:.1f} ms"),
        ("NumPy batched BLAS, same outputs", f"{t_np * 1e3:.1f} ms"),
        ("speed-up over NumPy", f"{t_np / t_ours:.1f}x"),
        ("ours: Viterbi", f"{t_vit * 1e3:.1f} ms"),
        ("ours: arithmetic rate", f"{flops / t_ours / 1e9:.2f} GFLOP/s ({3 * L * L} multiply-adds per token)"),
        ("max abs difference to NumPy", f"{err:.2e}"),
        ("per-position edge marginals if materialised", f"{pp_bytes / 1e6:.0f} MB (never built on the training path)"),
        ("target: whole batch < 0.1 s on 2 cores", "met" if t_ours < 0.1 else "NOT met"),
    ]
    table = "| measure | value |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)
    header = (f"# Chain forward-backward, CoNLL-2000 size\n\nMachine: {saved['machine']}, {saved['cpu_count']} cores. "
              "Best of 10 (ours) / 3 (NumPy) runs.\n\n")
    write_text(RESULTS / "chain_oracle.md", header + table + "\n")
    print(header + table)


if __name__ == "__main__":
    if report_only_args(description=__doc__.split("\n")[0]).report_only:
        report(load_saved(RESULTS / "chain_oracle.json"))
        finish()
    else:
        main()
