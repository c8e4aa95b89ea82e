"""GPStructClassifier's training sequences as resident shards on a dask cluster.

Under joblib's dask backend each block of sequences goes to one worker once, with its rows of
the sparse prior (``B``, the per-sequence ``K~``) and its labels
(:class:`~sklearn_struct.utils.shards.ResidentShards`). An evaluation sends the variational
parameters (their flat vectors) and the sequence indices and seed of the request; each shard
runs the same per-sequence work as the local fit, on the same per-sequence seeds, and sends
back its sequences' results, which the driver reduces exactly as locally (so the model is the
local one bit for bit). The importance-sampling draws of the batch optimiser stay on the
workers with their sequences. A new prior (the kernel hyperparameters changed) scatters again.
"""

import itertools

import numpy as np

from ._gp_struct_model import VarParams, _per_sequence, estimate_work, fixed_work, is_work, sequence_seeds
from .utils.parallel import even_chunks
from .utils.shards import ResidentShards, ShardLostError, dask_client, n_shards

_TOKENS = itertools.count()
_KEEP_FIXED = 4  # sample sets kept per shard (the optimiser uses the newest)


class _PriorRows:
    """The sparse prior of a block of sequences: ``B`` rows, ``Ktil`` and offsets from 0."""

    def __init__(self, prior, sl):
        lo, hi = prior.offsets[sl.start], prior.offsets[sl.stop]
        self.B = np.ascontiguousarray(prior.B[:, lo:hi])
        self.Ktil = list(prior.Ktil[sl])
        self.offsets = prior.offsets[sl.start:sl.stop + 1] - lo


class _Shard:
    def __init__(self, prior, y, sl):
        self.prior = _PriorRows(prior, sl)
        self.y = y[prior.offsets[sl.start]:prior.offsets[sl.stop]]
        self.first, self.stop = sl.start, sl.stop
        self.fixed = {}


def resident(prior, y, n_jobs):
    """The resident shards of ``prior`` and labels ``y`` on the active dask cluster, or None locally."""
    client = dask_client()
    if client is None:
        return None
    cached = getattr(prior, "_resident", None)
    if cached is not None and cached[0] is y and cached[1] == n_jobs:
        return cached[2]
    n_seq = prior.offsets.shape[0] - 1
    count = n_shards(n_jobs, client)
    if count <= 1:
        return None
    shards = ResidentShards([_Shard(prior, y, sl) for sl in even_chunks(n_seq, count)], client=client)
    prior._resident = (y, n_jobs, shards)
    return shards


def _pack(p):
    return (p.K, p.Q, p.M, p.diagonal, p.get_unary(), p.get_pair())


def _unpack(packed):
    K, Q, M, diagonal, unary, pair = packed
    p = VarParams(K, Q, M, diagonal)
    p.set_unary(unary)
    p.set_pair(pair)
    return p


def run_resident(shards, p, kind, seqs, n_samples, seed, options):
    """Per-sequence results of ``kind`` (``"mc"``: :func:`mc_estimate`'s, ``"is"``: importance-
    weighted, ``"fix"``: draw and keep samples, returns their token) for ``seqs``, in order."""
    seqs = np.asarray(seqs, dtype=np.int64)
    n_seq = shards.shards[-1].stop
    everything = seqs.shape[0] == n_seq and np.array_equal(seqs, np.arange(n_seq))
    token = next(_TOKENS) if kind == "fix" else None
    request = (kind, None if everything else seqs, n_seq, n_samples, seed, options, token)
    parts = shards.map(_evaluate, _pack(p), request)
    if kind == "fix":
        return token
    out = [None] * seqs.shape[0]
    for positions, results in parts:
        for i, r in zip(positions, results):
            out[i] = r
    return out


def _evaluate(shard, packed, request):
    """A shard's part of a request: (positions in ``seqs``, per-sequence results)."""
    kind, seqs, n_seq, n_samples, seed, options, token = request
    seqs = np.arange(n_seq) if seqs is None else seqs
    positions = np.flatnonzero((seqs >= shard.first) & (seqs < shard.stop))
    local = seqs[positions] - shard.first
    p = _unpack(packed)
    if kind == "is":
        fixed_token, grad = options
        if fixed_token not in shard.fixed:
            raise ShardLostError(f"the importance samples {fixed_token} of sequences {shard.first}-{shard.stop - 1} "
                                 "are gone (their worker was lost); refit.")
        samples, logliks, logq0s = shard.fixed[fixed_token]
        res = _per_sequence(shard.prior, p, local, None, None, None, is_work(logliks, logq0s, grad), samples=samples)
        return positions, res
    seeds = sequence_seeds(seed, seqs.shape[0])[positions]
    if kind == "mc":
        work = estimate_work(p, local, shard.y, shard.prior.offsets, *options)
        return positions, _per_sequence(shard.prior, p, local, n_samples, None, None, work, seeds=seeds)
    res = _per_sequence(shard.prior, p, local, n_samples, None, None,
                        fixed_work(p, local, shard.y, shard.prior.offsets, *options), seeds=seeds)
    shard.fixed[token] = ([r[0] for r in res], [r[1] for r in res], [r[2] for r in res])
    for old in sorted(shard.fixed)[:-_KEEP_FIXED]:
        del shard.fixed[old]
    return positions, None
