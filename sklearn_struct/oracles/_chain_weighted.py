"""Weighted training forward-backward: summed edge counts with one weight per sequence.

A weighted CRF objective ``sum_i s_i [log Z_i - score_i(y_i)]`` needs the edge expectations
summed as ``sum_i s_i E_i[edges]``. :func:`weighted_expected_counts` runs the scaled
forward-backward of :mod:`sklearn_struct.oracles.chain` one sequence at a time (its own
chunk kernel on a one-sequence range, so nothing is re-implemented) and adds each
sequence's edge counts times its weight; sequences the scaled pass gives up on are redone
by the log-space kernel, also one at a time. Node marginals and ``log Z`` are returned
unweighted: the caller weights their rows.
"""

import numpy as np

from ..utils._jit import kernel
from ._threads import n_threads_for, run_chunks_in_threads, token_chunks
from .chain import _EDGE_SUM, _exp_shifted, _fb_chunk, _fb_log_chunk

__all__ = ["weighted_expected_counts"]


@kernel
def _weighted_chunk(unary, exp_unary, trans, offsets, s_lo, s_hi, exp_trans, trans_shift, weights, node, outer_acc,
                    direct_acc, log_z):
    """Sequences s_lo:s_hi: ``outer_acc += w_s * outer_s``, ``direct_acc += w_s * direct_s``."""
    L = unary.shape[1]
    seq_outer = np.zeros((1, L, L))
    seq_direct = np.zeros((1, L, L))
    no_edges = np.empty((0, L, L))
    failed = np.zeros(offsets.shape[0] - 1, dtype=np.bool_)
    one = np.zeros(1, dtype=np.int64)
    for s in range(s_lo, s_hi):
        seq_outer[:, :, :] = 0.0
        seq_direct[:, :, :] = 0.0
        _fb_chunk(unary, exp_unary, trans, False, offsets, s, s + 1, _EDGE_SUM, exp_trans, trans_shift, node,
                  no_edges, seq_outer[0], seq_direct[0], log_z, failed)
        if failed[s]:  # huge scores: the exact log-space pass, on the unshifted-exp scores
            one[0] = s
            seq_direct[:, :, :] = 0.0
            _fb_log_chunk(unary, trans, False, offsets, one, _EDGE_SUM, node, no_edges, seq_direct[0], log_z)
            seq_outer[:, :, :] = 0.0
        ws = weights[s]
        for i in range(L):
            for j in range(L):
                outer_acc[i, j] += ws * seq_outer[0, i, j]
                direct_acc[i, j] += ws * seq_direct[0, i, j]


def weighted_expected_counts(unary, exp_unary, transition, offsets, weights, out):
    """Like :func:`~sklearn_struct.oracles.chain.expected_counts`, with edge counts weighted per sequence.

    Returns ``(log_z, node, edge_sum)``: ``log_z`` (n_sequences,) and the node marginals
    (in ``out``) unweighted, ``edge_sum = sum_s weights[s] * E_s[transition counts]``.
    ``unary`` rows are shifted to maximum 0 and ``exp_unary`` is their exp, as for
    ``expected_counts``; ``weights`` a float array (n_sequences,).
    """
    trans = np.ascontiguousarray(transition, dtype=np.float64)[None]
    n_seq = offsets.shape[0] - 1
    n_tok, L = unary.shape
    bounds = token_chunks(offsets, n_threads_for(3 * n_tok * L * L))
    n_chunks = bounds.shape[0] - 1
    log_z = np.empty(n_seq)
    outer_acc = np.zeros((n_chunks, L, L))
    direct_acc = np.zeros((n_chunks, L, L))
    exp_trans = np.zeros((L, L))
    trans_shift = _exp_shifted(trans[0], exp_trans)
    weights = np.ascontiguousarray(weights, dtype=np.float64)

    def one(c):
        _weighted_chunk(unary, exp_unary, trans, offsets, bounds[c], bounds[c + 1], exp_trans, trans_shift, weights,
                        out, outer_acc[c], direct_acc[c], log_z)

    run_chunks_in_threads(one, n_chunks)
    edge_sum = np.zeros((L, L))
    for c in range(n_chunks):
        edge_sum += outer_acc[c] * exp_trans + direct_acc[c]
    return log_z, out, edge_sum
