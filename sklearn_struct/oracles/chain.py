"""Linear-chain oracles: forward-backward (log Z, node and edge marginals), Viterbi, sampling.

All kernels take every sequence at once, packed: ``unary`` is ``(n_tokens, n_labels)`` of
log-potentials for all tokens of all sequences and ``offsets`` ``(n_sequences + 1,)`` marks
where each sequence starts. Transition log-potentials are either shared, ``(L, L)``, or
per-position, ``(n_tokens - n_sequences, L, L)`` packed with
:func:`sklearn_struct.utils.edge_offsets` (row ``k`` of sequence ``s`` is the transition
from token ``k`` to token ``k + 1`` of that sequence).

Speed and stability
-------------------
Forward-backward runs in probability space with per-token scaling (the classic scaled
recursion): potentials are exponentiated once, after subtracting their maximum, and each
step is a small matrix-vector product, which numba vectorises. That costs about ``3 L^2``
multiply-adds per token (forward, backward, edge counts) and no ``exp`` in the inner loop.
Scaling keeps every quantity in range, but a term can still underflow when potentials
differ by more than ~700 in log space. A flushed term (absolute error below ``1e-307`` in a
step normalised to sum 1) can only matter if a scaling constant is tiny or the future
amplifies it, so the kernel checks each sequence: if a scaling constant falls below
``1e-100``, a backward value exceeds ``1e190`` or a result is not finite (then a flushed
term could move a marginal by more than ~1e-17), that sequence alone is recomputed in log
space. The log-space recursion normalises at every step (forward messages by their
log-sum-exp, backward messages by their maximum) and normalises each node and edge
marginal table directly, so no quantity ever holds the running total ``log Z`` of a long
sequence: marginals stay exact to rounding (~1e-12 relative) at any length and magnitude,
where unnormalised log messages (``log alpha + log beta - log Z``, each ~1e8 for 100k
tokens of potentials 1e3) would lose ~1e-4. Typical CRF potentials never take the slow
path (its kernel is compiled only when first needed); potentials of 1e3 do, and stay exact.

The summed edge counts used in training are accumulated as outer products per chunk and
multiplied by the shared transition table once at the end, so the ``(T - 1) x L x L``
array of per-position edge marginals is never materialised unless asked for.

Large batches are split into contiguous chunks of sequences with near-equal token counts,
run on threads by :func:`~sklearn_struct.oracles._threads.run_chunks_in_threads` (serial
``nogil`` kernels: numba's ``parallel=True`` made a fresh install's first fit compile for
~10 s).
"""

import math

import numpy as np

from ..utils._jit import helper, kernel
from ..utils.packing import edge_offsets
from ..utils.validation import check_float_array, check_offsets
from ._threads import n_threads_for, run_chunks_in_threads, token_chunks

__all__ = ["forward_backward", "viterbi", "sample_chain", "check_chain_potentials"]

# Below this scaling constant the probability-space recursion may have flushed a term
# that matters (each flushed term is < 1e-308), so the sequence is redone in log space.
_SCALE_FLOOR = 1e-100
# Above this backward value, a flushed forward term (< 1e-307) could matter: redo in log space.
_BETA_CEIL = 1e190
# log-sum-exp skips terms this far below the maximum: with large potentials most terms are,
# so the log-space path costs little more than Viterbi (exact: e^-50 < 2e-22).
_LSE_CUTOFF = -50.0
_EDGE_NONE, _EDGE_SUM, _EDGE_POSITION = 0, 1, 2
# fastmath without 'nnan'/'ninf': -inf potentials (forbidden transitions) stay legal.
_FM = {"nsz", "arcp", "contract", "reassoc"}


# --------------------------------------------------------------------------------------
# Kernels (one sequence at a time; the chunk kernels below run them over contiguous sequences)
# --------------------------------------------------------------------------------------


@kernel(fastmath=_FM)
def _exp_shifted(log_table, out):
    """out = exp(log_table - max) for an (L, L) table; returns the max (the shift to add back)."""
    n, m = log_table.shape
    shift = -np.inf
    for i in range(n):
        for j in range(m):
            if log_table[i, j] > shift:
                shift = log_table[i, j]
    if shift == -np.inf:
        out[:, :] = 0.0
        return shift
    for i in range(n):
        for j in range(m):
            out[i, j] = math.exp(log_table[i, j] - shift)
    return shift


@kernel(fastmath=_FM)
def _fb_scaled(unary, pre_exp, exp_unary, lo, hi, exp_trans, trans_shift, trans, per_position, elo,
               node_out, edge_mode, edge_out, outer_acc, direct_acc, scale, u_buf, beta, beta_next, scratch):
    """Scaled forward-backward for tokens lo:hi. Returns (log Z, ok); ok False means redo in log space.

    Node marginals go to node_out[lo:hi]. Edge counts: mode SUM with shared transitions adds
    sum_t alpha_{t-1} (x) v_t into outer_acc (multiplied by exp_trans later); with
    per-position transitions it adds the full edge marginals into direct_acc; mode POSITION
    writes them to edge_out[elo + t - 1].
    """
    n = hi - lo
    L = unary.shape[1]
    log_z = 0.0
    # forward: alpha_t stored (scaled) in node_out[lo + t]; u_t kept in u_buf[t]
    for t in range(n):
        if pre_exp:  # rows shifted to maximum 0 and exponentiated by the caller
            m = 0.0
            for j in range(L):
                u_buf[t, j] = exp_unary[lo + t, j]
        else:
            row = unary[lo + t]
            m = -np.inf
            for j in range(L):
                if row[j] > m:
                    m = row[j]
            if m == -np.inf:
                return -np.inf, False
            for j in range(L):
                u_buf[t, j] = math.exp(row[j] - m)
        a = node_out[lo + t]
        if t == 0:
            for j in range(L):
                a[j] = u_buf[t, j]
        else:
            E = exp_trans
            if per_position:
                E = scratch
                sh = _exp_shifted(trans[elo + t - 1], scratch)
                if sh == -np.inf:
                    return -np.inf, False
                log_z += sh
            else:
                log_z += trans_shift
            prev = node_out[lo + t - 1]
            acc = beta_next  # free during the forward pass
            for j in range(L):
                acc[j] = 0.0
            for i in range(L):
                p = prev[i]
                Ei = E[i]
                for j in range(L):
                    acc[j] += p * Ei[j]
            for j in range(L):
                a[j] = acc[j] * u_buf[t, j]
        c = 0.0
        for j in range(L):
            c += a[j]
        if not (c >= _SCALE_FLOOR and c < np.inf):
            return -np.inf, False
        inv = 1.0 / c
        for j in range(L):
            a[j] *= inv
        scale[t] = c
        log_z += math.log(c) + m
    # backward: beta_t scaled by the same constants, so alpha_t * beta_t are the marginals
    for j in range(L):
        beta[j] = 1.0
    for t in range(n - 1, 0, -1):
        E = exp_trans
        if per_position:
            E = scratch
            _exp_shifted(trans[elo + t - 1], scratch)
        inv = 1.0 / scale[t]
        v = beta_next  # v_t = u_t * beta_t / c_t
        for j in range(L):
            v[j] = u_buf[t, j] * beta[j] * inv
        prev = node_out[lo + t - 1]
        if edge_mode == _EDGE_SUM and not per_position:
            for i in range(L):
                p = prev[i]
                row = outer_acc[i]
                for j in range(L):
                    row[j] += p * v[j]
        elif edge_mode != _EDGE_NONE:
            target = direct_acc if edge_mode == _EDGE_SUM else edge_out[elo + t - 1]
            for i in range(L):
                p = prev[i]
                for j in range(L):
                    target[i, j] += p * E[i, j] * v[j]
        # finish node t now that beta_t is used, then step beta back
        a = node_out[lo + t]
        for j in range(L):
            a[j] *= beta[j]
        big = 0.0
        for i in range(L):
            s = 0.0
            Ei = E[i]
            for j in range(L):
                s += Ei[j] * v[j]
            beta[i] = s
            big = max(big, s)
        if not big <= _BETA_CEIL:
            return -np.inf, False
    a = node_out[lo]
    for j in range(L):
        a[j] *= beta[j]
    for t in range(n):
        for j in range(L):
            if not (node_out[lo + t, j] < np.inf):
                return -np.inf, False
    return log_z, True


@helper
def _vmax(v):
    """Largest entry of a 1D array (-inf if empty), in one plain loop."""
    m = -np.inf
    for x in v:
        if x > m:
            m = x
    return m


@helper
def _logsumexp_vec(v):
    """log sum exp(v); terms below ``max - 50`` are skipped (together < L e^-50, far below rounding)."""
    m = _vmax(v)
    if m == -np.inf or m == np.inf:  # nothing allowed, or overflow (reported by the caller)
        return m
    s = 0.0
    for x in v:
        d = x - m
        if d > _LSE_CUTOFF:
            s += math.exp(d)
    return m + math.log(s)


@helper
def _exp_normalised(wf, of):
    """of = exp(wf - max) / sum: a normalised table from log weights (1D; pass tables flattened)."""
    m = _vmax(wf)
    total = 0.0
    for k in range(wf.shape[0]):
        d = wf[k] - m
        of[k] = math.exp(d) if d > -746.0 else 0.0  # exp underflows to 0 there anyway: skip it
        total += of[k]
    inv = 1.0 / total
    for k in range(wf.shape[0]):
        of[k] *= inv


@helper
def _fb_log(unary, lo, hi, trans, per_position, elo, node_out, edge_mode, edge_out, direct_acc,
            log_alpha, log_beta, tmp, w_edge, p_edge):
    """Step-normalised log-space forward-backward: exact for any magnitude and length.

    ``log_alpha[t]`` is normalised to log-sum-exp 0 and ``log_beta[t]`` to maximum 0 at
    every step; log Z is the (compensated) sum of the forward normalisers. Marginal tables
    are normalised directly, never by subtracting log Z from a large sum.
    """
    n = hi - lo
    L = unary.shape[1]
    log_z, comp = 0.0, 0.0
    for t in range(n):
        if t == 0:
            for j in range(L):
                log_alpha[0, j] = unary[lo, j]
        else:
            T = trans[elo + t - 1] if per_position else trans[0]
            for j in range(L):
                for i in range(L):
                    tmp[i] = log_alpha[t - 1, i] + T[i, j]
                log_alpha[t, j] = _logsumexp_vec(tmp) + unary[lo + t, j]
        c = _logsumexp_vec(log_alpha[t])
        if c == -np.inf:
            return -np.inf
        for j in range(L):
            log_alpha[t, j] -= c
        # Neumaier summation: log Z of 1e5 tokens at potentials 1e6 is ~1e11
        s = log_z + c
        comp += (log_z - s) + c if abs(log_z) >= abs(c) else (c - s) + log_z
        log_z = s
    for j in range(L):
        log_beta[n - 1, j] = 0.0
    for t in range(n - 2, -1, -1):
        T = trans[elo + t] if per_position else trans[0]
        m = -np.inf
        for i in range(L):
            for j in range(L):
                tmp[j] = T[i, j] + unary[lo + t + 1, j] + log_beta[t + 1, j]
            log_beta[t, i] = _logsumexp_vec(tmp)
            m = max(m, log_beta[t, i])
        if m > -np.inf:
            for i in range(L):
                log_beta[t, i] -= m
    for t in range(n):
        for j in range(L):
            tmp[j] = log_alpha[t, j] + log_beta[t, j]
        _exp_normalised(tmp, node_out[lo + t])
    if edge_mode != _EDGE_NONE:
        for t in range(1, n):
            T = trans[elo + t - 1] if per_position else trans[0]
            for i in range(L):
                for j in range(L):
                    w_edge[i, j] = log_alpha[t - 1, i] + T[i, j] + unary[lo + t, j] + log_beta[t, j]
            _exp_normalised(w_edge.ravel(), p_edge.ravel())  # one compiled signature
            target = direct_acc if edge_mode == _EDGE_SUM else edge_out[elo + t - 1]
            for i in range(L):
                for j in range(L):
                    target[i, j] += p_edge[i, j]
    return log_z + comp


@kernel(fastmath=_FM)
def _fb_chunk(unary, exp_unary, trans, per_position, offsets, s_lo, s_hi, edge_mode, exp_trans, trans_shift,
              node, edge_out, outer_acc, direct_acc, log_z, failed):
    """Scaled forward-backward of sequences s_lo:s_hi; ``failed[s]`` marks those to redo in log space.

    A sequence's summed edge counts are added to the accumulators only once it has succeeded,
    so a failed one leaves nothing for the log-space pass to undo.
    """
    pre_exp = exp_unary.shape[0] == unary.shape[0]
    L = unary.shape[1]
    max_len = 1
    for s in range(s_lo, s_hi):
        max_len = max(max_len, offsets[s + 1] - offsets[s])
    scale = np.empty(max_len)
    u_buf = np.empty((max_len, L))
    beta = np.empty(L)
    beta_next = np.empty(L)
    scratch = np.empty((L, L))
    seq_outer = np.zeros((L, L))
    seq_direct = np.zeros((L, L))
    for s in range(s_lo, s_hi):
        lo, hi = offsets[s], offsets[s + 1]
        ok = False
        if trans_shift > -np.inf:
            lz, ok = _fb_scaled(unary, pre_exp, exp_unary, lo, hi, exp_trans, trans_shift, trans, per_position,
                                lo - s, node, edge_mode, edge_out, seq_outer, seq_direct, scale, u_buf, beta,
                                beta_next, scratch)
            if ok:
                log_z[s] = lz
            if edge_mode == _EDGE_SUM:  # move this sequence's edge counts to the chunk's (if it succeeded)
                for i in range(L):
                    for j in range(L):
                        outer_acc[i, j] += seq_outer[i, j] if ok else 0.0
                        direct_acc[i, j] += seq_direct[i, j] if ok else 0.0
                        seq_outer[i, j] = 0.0
                        seq_direct[i, j] = 0.0
        failed[s] = not ok


@kernel
def _fb_log_chunk(unary, trans, per_position, offsets, seqs, edge_mode, node, edge_out, direct_acc, log_z):
    """Log-space forward-backward of the sequences listed in ``seqs`` (those the scaled pass gave up on)."""
    L = unary.shape[1]
    max_len = 1
    for s in seqs:
        max_len = max(max_len, offsets[s + 1] - offsets[s])
    log_alpha = np.empty((max_len, L))
    log_beta = np.empty((max_len, L))
    tmp = np.empty(L)
    w_edge = np.empty((L, L))
    p_edge = np.empty((L, L))
    for s in seqs:
        lo, hi = offsets[s], offsets[s + 1]
        if edge_mode == _EDGE_POSITION:
            for k in range(lo - s, hi - s - 1):
                edge_out[k, :, :] = 0.0
        log_z[s] = _fb_log(unary, lo, hi, trans, per_position, lo - s, node, edge_mode, edge_out, direct_acc,
                           log_alpha, log_beta, tmp, w_edge, p_edge)


@helper
def _shift_to_max_zero(v):
    """Subtract the maximum from v in place and return it (-inf: left unchanged)."""
    m = _vmax(v)
    if m > -np.inf:
        for j in range(v.shape[0]):
            v[j] -= m
    return m


@kernel
def _viterbi_chunk(unary, trans, per_position, offsets, s_lo, s_hi, labels, scores):
    """Viterbi of sequences s_lo:s_hi into the packed ``labels`` and per-sequence ``scores``."""
    L = unary.shape[1]
    max_len = 1
    for s in range(s_lo, s_hi):
        max_len = max(max_len, offsets[s + 1] - offsets[s])
    back = np.empty((max_len, L), dtype=np.int32)
    delta = np.empty(L)
    new = np.empty(L)
    for s in range(s_lo, s_hi):
        lo, hi, elo = offsets[s], offsets[s + 1], offsets[s] - s
        # delta is kept at maximum 0 (its shifts summed apart) so that comparisons
        # between paths keep full precision on long chains with large potentials
        for j in range(L):
            delta[j] = unary[lo, j]
        total = _shift_to_max_zero(delta)
        for t in range(1, hi - lo):
            T = trans[elo + t - 1] if per_position else trans[0]
            for j in range(L):
                best = -np.inf
                arg = 0
                for i in range(L):
                    v = delta[i] + T[i, j]
                    if v > best:
                        best = v
                        arg = i
                new[j] = best + unary[lo + t, j]
                back[t, j] = arg
            for j in range(L):
                delta[j] = new[j]
            total += _shift_to_max_zero(delta)
        arg = 0
        for j in range(L):
            if delta[j] > delta[arg]:
                arg = j
        scores[s] = total
        labels[hi - 1] = arg
        for t in range(hi - lo - 1, 0, -1):
            arg = back[t, arg]
            labels[lo + t - 1] = arg


@kernel
def _sample_batch(unary, trans, per_position, offsets, uniforms, max_len):
    """Forward filtering (log space) once per sequence, then backward sampling once per row of
    the pre-drawn ``uniforms`` (n_samples, n_tokens): labels (n_samples, n_tokens) and log Z."""
    n_seq = offsets.shape[0] - 1
    L = unary.shape[1]
    n_samples = uniforms.shape[0]
    eoffs = offsets - np.arange(n_seq + 1)
    labels = np.empty(uniforms.shape, dtype=np.int64)
    log_z = np.empty(n_seq)
    log_alpha = np.empty((max_len, L))
    w = np.empty(L)
    tmp = np.empty(L)
    for s in range(n_seq):
        lo, hi, elo = offsets[s], offsets[s + 1], eoffs[s]
        for j in range(L):
            log_alpha[0, j] = unary[lo, j]
        for t in range(1, hi - lo):
            T = trans[elo + t - 1] if per_position else trans[0]
            for j in range(L):
                for i in range(L):
                    tmp[i] = log_alpha[t - 1, i] + T[i, j]
                log_alpha[t, j] = _logsumexp_vec(tmp) + unary[lo + t, j]
        log_z[s] = _logsumexp_vec(log_alpha[hi - lo - 1])
        if log_z[s] == -np.inf:  # infeasible: the caller raises
            continue
        for k in range(n_samples):
            nxt = -1
            for t in range(hi - lo - 1, -1, -1):
                for i in range(L):
                    w[i] = log_alpha[t, i]
                    if nxt >= 0:
                        T = trans[elo + t] if per_position else trans[0]
                        w[i] += T[i, nxt]
                lz = _logsumexp_vec(w)
                r = uniforms[k, lo + t]
                acc = 0.0
                pick = L - 1
                for i in range(L):
                    acc += math.exp(w[i] - lz)
                    if r < acc:
                        pick = i
                        break
                labels[k, lo + t] = pick
                nxt = pick
    return labels, log_z


# --------------------------------------------------------------------------------------
# Python API: validation, then one kernel call
# --------------------------------------------------------------------------------------


def check_chain_potentials(unary, transition, offsets):
    """Validate packed chain potentials; return (unary, trans3d, per_position, offsets).

    Raises a ValueError naming the problem (and the sequence, where there is one).
    ``-inf`` log-potentials are allowed (forbidden labels or transitions); NaN and ``+inf`` are not.
    """
    unary = check_float_array(unary, "unary", check_values=False)
    if unary.ndim != 2 or unary.shape[1] == 0:
        raise ValueError(f"unary must be 2D (n_tokens, n_labels) with n_labels >= 1, got shape {unary.shape}.")
    offsets = check_offsets(offsets)
    if offsets[0] != 0 or offsets[-1] != unary.shape[0]:
        raise ValueError(
            f"offsets must start at 0 and end at n_tokens={unary.shape[0]}; got {offsets[0]} and {offsets[-1]}."
        )
    lengths = np.diff(offsets)
    if np.any(lengths <= 0):
        s = int(np.flatnonzero(lengths <= 0)[0])
        raise ValueError(f"Sequence {s} is empty or offsets decrease there (length {lengths[s]}).")
    n_seq, L = offsets.shape[0] - 1, unary.shape[1]
    # fast path: a finite sum means no NaN and no +-inf (one pass instead of four)
    with np.errstate(over="ignore", invalid="ignore"):
        finite_sum = np.isfinite(unary.sum())
    bad = None if finite_sum else np.isnan(unary) | (unary == np.inf)
    if bad is not None and bad.any():
        tok = int(np.flatnonzero(bad.any(axis=1))[0])
        s = int(np.searchsorted(offsets, tok, side="right") - 1)
        raise ValueError(f"Sequence {s}: unary potentials contain NaN or +inf (token {tok - offsets[s]}).")
    trans = check_float_array(transition, "transition", check_values=False)
    if trans.ndim == 2:
        if trans.shape != (L, L):
            raise ValueError(f"transition must have shape ({L}, {L}), got {trans.shape}.")
        trans, per_position = trans[None], False
    elif trans.ndim == 3:
        n_edges = unary.shape[0] - n_seq
        if trans.shape != (n_edges, L, L):
            raise ValueError(
                f"per-position transitions must have shape ({n_edges}, {L}, {L}) "
                f"(n_tokens - n_sequences, L, L), got {trans.shape}."
            )
        per_position = True
    else:
        raise ValueError(f"transition must be 2D (L, L) or 3D (n_edges, L, L), got {trans.ndim}D.")
    check_float_array(trans, "transition", allow_neg_inf=True)  # names the first NaN / +inf
    if per_position and trans.shape[0] == 0:
        trans = np.zeros((1, L, L))  # only length-1 sequences: keep a valid array for the kernel
    return unary, trans, per_position, offsets


def forward_backward(unary, transition, offsets, *, edge_marginals="sum", out=None):
    """Log partition function, node marginals and edge marginals of linear-chain CRFs.

    Parameters
    ----------
    unary : ndarray of shape (n_tokens, n_labels)
        Log-potentials of every token of every sequence, packed.
    transition : ndarray of shape (n_labels, n_labels) or (n_tokens - n_sequences, n_labels, n_labels)
        Shared or per-position transition log-potentials ``[from, to]``.
    offsets : ndarray of shape (n_sequences + 1,)
        Start of each sequence in ``unary``; the last entry is ``n_tokens``.
    edge_marginals : {"sum", "per_position", "none"}, default="sum"
        ``"sum"``: expected transition counts summed over all positions and sequences,
        ``(L, L)`` (what training needs). ``"per_position"``: one ``(L, L)`` table per
        transition, packed like per-position potentials. ``"none"``: skip them.
    out : ndarray of shape (n_tokens, n_labels), default=None
        Buffer for the node marginals (C-contiguous float64), e.g. reused across the
        objective evaluations of a fit: a fresh array this large costs page faults each call.

    Returns
    -------
    log_z : ndarray of shape (n_sequences,)
    node_marginals : ndarray of shape (n_tokens, n_labels)
    edge : ndarray of shape (L, L) or (n_tokens - n_sequences, L, L), or None

    Examples
    --------
    >>> import numpy as np
    >>> unary = np.zeros((3, 2)); offsets = np.array([0, 3])
    >>> log_z, node, edge = forward_backward(unary, np.zeros((2, 2)), offsets)
    >>> bool(np.isclose(log_z[0], 3 * np.log(2))), node[0], float(edge.sum())
    (True, array([0.5, 0.5]), 2.0)
    """
    modes = {"none": _EDGE_NONE, "sum": _EDGE_SUM, "per_position": _EDGE_POSITION}
    if not isinstance(edge_marginals, str) or edge_marginals not in modes:
        raise ValueError(f"edge_marginals must be one of {sorted(modes)}, got {edge_marginals!r}.")
    unary, trans, per_position, offsets = check_chain_potentials(unary, transition, offsets)
    log_z, node, edge_sum, edge_pos = _run_forward_backward(
        unary, np.empty((0, unary.shape[1])), trans, per_position, offsets, modes[edge_marginals],
        _output_buffer(out, unary.shape),
    )
    _raise_if_infeasible(log_z, unary, trans)
    edge = {"none": None, "sum": edge_sum, "per_position": edge_pos}[edge_marginals]
    return log_z, node, edge


def expected_counts(unary, exp_unary, transition, offsets, out):
    """Training's forward-backward: log Z per sequence, node marginals (in ``out``), summed edge marginals.

    The fast path of :func:`forward_backward` for a CRF objective, whose caller has already
    shifted every row of ``unary`` to maximum 0 and exponentiated it into ``exp_unary``
    (e.g. with :meth:`LinearFeatures.scores` ``row_max`` and NumPy's vectorised ``exp``,
    a third of the cost of exponentiating inside the kernel). ``log Z`` is that of the
    shifted rows. No input checks: the caller builds these arrays; a non-finite result is
    reported by a non-finite ``log Z``, never an exception.
    """
    trans = np.ascontiguousarray(transition, dtype=np.float64)[None]
    log_z, node, edge_sum, _ = _run_forward_backward(unary, exp_unary, trans, False, offsets, _EDGE_SUM, out)
    return log_z, node, edge_sum


def expected_counts_inplace(probs, transition, offsets, rescore):
    """:func:`expected_counts` in one buffer: ``probs`` holds the exponentiated shifted scores on
    entry and the node marginals on return; returns ``(log Z, summed edge marginals)``.

    The scaled recursion reads a token's row before it writes that token's marginals, so they
    can share the buffer, and the shifted scores need not be kept beside their exponentials:
    for the rare sequence that needs the log-space pass, ``rescore(lo, hi)`` returns the
    shifted scores of the rows ``lo:hi`` again (runs of consecutive such sequences at once).
    A CRF objective then holds one ``(n_tokens, n_labels)`` float64 array instead of three,
    with the same results as :func:`expected_counts`. No input checks, as there.
    """
    trans = np.ascontiguousarray(transition, dtype=np.float64)[None]
    n_seq = offsets.shape[0] - 1
    n_tok, L = probs.shape
    bounds = token_chunks(offsets, n_threads_for(3 * n_tok * L * L))
    n_chunks = bounds.shape[0] - 1
    log_z = np.empty(n_seq)
    failed = np.empty(n_seq, dtype=np.bool_)
    no_edges = np.zeros((0, L, L))
    outer_acc = np.zeros((n_chunks, L, L))
    direct_acc = np.zeros((n_chunks, L, L))
    exp_trans = np.zeros((L, L))
    trans_shift = _exp_shifted(trans[0], exp_trans)

    def scaled(c):
        _fb_chunk(probs, probs, trans, False, offsets, bounds[c], bounds[c + 1], _EDGE_SUM, exp_trans, trans_shift,
                  probs, no_edges, outer_acc[c], direct_acc[c], log_z, failed)

    run_chunks_in_threads(scaled, n_chunks)
    redo = np.flatnonzero(failed)
    if redo.shape[0]:  # rare: huge potentials or long sequences
        breaks = np.flatnonzero(np.diff(redo) != 1) + 1
        runs = [(int(r[0]), int(r[-1]) + 1) for r in np.split(redo, breaks)]
        groups = [runs[c::n_chunks] for c in range(min(n_chunks, len(runs)))]

        def log_space(c):
            for s_lo, s_hi in groups[c]:
                lo, hi = offsets[s_lo], offsets[s_hi]
                unary = np.ascontiguousarray(rescore(lo, hi), dtype=np.float64)
                _fb_log_chunk(unary, trans, False, offsets[s_lo : s_hi + 1] - lo, np.arange(s_hi - s_lo), _EDGE_SUM,
                              probs[lo:hi], no_edges, direct_acc[c], log_z[s_lo:s_hi])

        run_chunks_in_threads(log_space, len(groups))
    edge_sum = np.zeros((L, L))
    for c in range(n_chunks):
        edge_sum += outer_acc[c] * exp_trans + direct_acc[c]
    return log_z, edge_sum


def _run_forward_backward(unary, exp_unary, trans, per_position, offsets, edge_mode, out):
    """The chunk kernels on checked arrays, on as many threads as the work pays for.

    ``exp_unary`` empty: exponentiate inside. Chunks are contiguous runs of sequences with
    near-equal token counts, each with its own edge accumulators (summed at the end).
    """
    n_seq = offsets.shape[0] - 1
    n_tok, L = unary.shape
    bounds = token_chunks(offsets, n_threads_for(3 * n_tok * L * L))
    n_chunks = bounds.shape[0] - 1
    log_z = np.empty(n_seq)
    failed = np.empty(n_seq, dtype=np.bool_)
    edge_out = np.zeros((n_tok - n_seq if edge_mode == _EDGE_POSITION else 0, L, L))
    outer_acc = np.zeros((n_chunks, L, L))
    direct_acc = np.zeros((n_chunks, L, L))
    exp_trans = np.zeros((L, L))
    trans_shift = 0.0 if per_position else _exp_shifted(trans[0], exp_trans)

    def scaled(c):
        _fb_chunk(unary, exp_unary, trans, per_position, offsets, bounds[c], bounds[c + 1], edge_mode, exp_trans,
                  trans_shift, out, edge_out, outer_acc[c], direct_acc[c], log_z, failed)

    run_chunks_in_threads(scaled, n_chunks)
    redo = np.flatnonzero(failed)
    if redo.shape[0]:  # rare: huge potentials or long sequences; compiled only when first needed
        parts = np.array_split(redo, min(n_chunks, redo.shape[0]))

        def log_space(c):
            _fb_log_chunk(unary, trans, per_position, offsets, parts[c], edge_mode, out, edge_out, direct_acc[c],
                          log_z)

        run_chunks_in_threads(log_space, len(parts))
    edge_sum = np.zeros((L, L))
    if edge_mode == _EDGE_SUM:
        for c in range(n_chunks):
            edge_sum += outer_acc[c] * exp_trans + direct_acc[c]
    return log_z, out, edge_sum, edge_out


def _output_buffer(out, shape):
    if out is None:
        return np.empty(shape)
    if not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float64 array of shape {shape}.")
    return out


def _raise_if_infeasible(scores, unary, trans):
    """Name the first sequence whose log Z (or best score) is not finite, and why."""
    if not np.all(np.isfinite(scores)):
        s = int(np.flatnonzero(~np.isfinite(scores))[0])
        huge = any(np.any(np.abs(a[np.isfinite(a)]) > 1e300) for a in (unary, trans))
        if scores[s] == -np.inf and not huge:  # else -inf may be an overflow of huge negative sums
            raise ValueError(
                f"Sequence {s} has no label sequence with finite potential (every path is forbidden by -inf)."
            )
        raise ValueError(
            f"Sequence {s}: its potentials overflow float64 (a path's total is not finite); "
            "rescale them (|potentials| near 1e308 cannot be summed)."
        )


def viterbi(unary, transition, offsets):
    """Highest-scoring label sequence of each chain (max-sum in log space).

    Parameters are those of :func:`forward_backward`.

    Returns
    -------
    labels : ndarray of shape (n_tokens,), int64
        Label indices, packed like ``unary``.
    scores : ndarray of shape (n_sequences,)
        Log-potential of each returned sequence.

    Examples
    --------
    >>> import numpy as np
    >>> unary = np.array([[1.0, 0.0], [0.0, 1.0]]); trans = np.array([[0.0, -5.0], [0.0, 0.0]])
    >>> viterbi(unary, trans, np.array([0, 2]))[0]
    array([0, 0])
    """
    unary, trans, per_position, offsets = check_chain_potentials(unary, transition, offsets)
    n_seq = offsets.shape[0] - 1
    labels = np.empty(unary.shape[0], dtype=np.int64)
    scores = np.empty(n_seq)
    bounds = token_chunks(offsets, n_threads_for(unary.shape[0] * unary.shape[1] ** 2))

    def one(c):
        _viterbi_chunk(unary, trans, per_position, offsets, bounds[c], bounds[c + 1], labels, scores)

    run_chunks_in_threads(one, bounds.shape[0] - 1)
    _raise_if_infeasible(scores, unary, trans)
    return labels, scores


MAX_SAMPLED_LABELS = 2**28  # sample_chain: n_samples * n_tokens per call (4 GiB of uniforms and labels)


def sample_chain(unary, transition, offsets, random_state=None, n_samples=None):
    """Exact samples from chain CRFs (forward filtering, backward sampling).

    Returns packed label indices ``(n_tokens,)``, or ``(n_samples, n_tokens)`` independent
    draws with ``n_samples`` (one forward pass per sequence, then ``O(L)`` per token and
    draw); the same ``random_state`` gives the same draws.
    """
    from sklearn.utils import check_random_state

    unary, trans, per_position, offsets = check_chain_potentials(unary, transition, offsets)
    if n_samples is not None and (not isinstance(n_samples, (int, np.integer)) or isinstance(n_samples, bool)
                                  or n_samples < 1):
        raise ValueError(f"sample_chain: n_samples must be a positive integer or None, got {n_samples!r}.")
    shape = (1 if n_samples is None else int(n_samples), unary.shape[0])
    if shape[0] * shape[1] > MAX_SAMPLED_LABELS:  # checked before allocating 16 bytes per label
        raise ValueError(f"sample_chain: n_samples={shape[0]} draws of {shape[1]} tokens would hold "
                         f"{shape[0] * shape[1]:.3g} labels (16 bytes each); at most {MAX_SAMPLED_LABELS:.3g} "
                         "per call: draw in batches.")
    uniforms = check_random_state(random_state).random_sample(shape)
    max_len = int(np.max(np.diff(offsets)))
    labels, log_z = _sample_batch(unary, trans, per_position, offsets, uniforms, max_len)
    _raise_if_infeasible(log_z, unary, trans)
    return labels[0] if n_samples is None else labels


def per_position_offsets(offsets):
    """Alias of :func:`sklearn_struct.utils.edge_offsets` for callers of this module."""
    return edge_offsets(offsets)
