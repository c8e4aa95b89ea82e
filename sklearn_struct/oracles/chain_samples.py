"""Linear-chain oracles over Monte-Carlo samples of the potentials of one sequence.

Stochastic inference with the chain as a black-box likelihood (the gray-box GP-struct
model) evaluates ``log p(y | f)`` for thousands of sampled potential tables of the same
sequence, each with its own transition table. Packing every sample as a separate chain
for :func:`sklearn_struct.oracles.chain.forward_backward` would copy the transition table
to every position; these kernels instead keep the sample index innermost:

- ``unary`` is ``(n_labels, n_tokens, n_samples)`` (sample ``s`` of the potential of
  label ``j`` at token ``t`` is ``unary[j, t, s]``),
- ``transition`` is ``(n_labels, n_labels, n_samples)`` (``[from, to, sample]``),

so every step of the forward recursion is a loop over samples that the compiler
vectorises. The recursion runs in log space with shifted exponentials: per step ``L``
exponentials of the forward messages, ``L^2`` multiply-adds against the pre-exponentiated
transition columns (each column shifted by its maximum) and ``L`` logarithms per sample.
A sum that underflows (log-potentials more than ~700 apart) is redone exactly by
log-sum-exp, so results stay finite and exact for any finite potentials.
"""

import numpy as np

from ..utils._jit import helper, kernel
from ..utils.validation import check_float_array, check_int_array

__all__ = ["sampled_log_likelihood", "sampled_marginals"]

_FM = {"nsz", "arcp", "contract", "reassoc"}
MAX_PATH_SCORE = 1e306  # |score of any path| must stay below this (float64 tops out at 1.8e308)


@helper(fastmath=_FM)
def _shifted_columns(trans, E, cmax):
    """``E[i, j, s] = exp(trans[i, j, s] - cmax[j, s])`` with ``cmax[j, s] = max_i trans[i, j, s]``."""
    L, _, S = trans.shape
    for j in range(L):
        for s in range(S):
            cmax[j, s] = trans[0, j, s]
        for i in range(1, L):
            for s in range(S):
                cmax[j, s] = max(cmax[j, s], trans[i, j, s])
        for i in range(L):
            for s in range(S):
                E[i, j, s] = np.exp(trans[i, j, s] - cmax[j, s])


@helper(fastmath=_FM)
def _step(prev, trans, E, cmax, nxt, ea, amax, acc):
    """``nxt[a, s] = log sum_b exp(prev[b, s] + trans[b, a, s])`` for all samples (one message step).

    ``E`` and ``cmax`` are :func:`_shifted_columns` of ``trans``; an entry whose shifted sum
    underflows is recomputed exactly.
    """
    L, S = prev.shape
    for s in range(S):
        amax[s] = prev[0, s]
    for b in range(1, L):
        for s in range(S):
            amax[s] = max(amax[s], prev[b, s])
    for b in range(L):
        for s in range(S):
            ea[b, s] = np.exp(prev[b, s] - amax[s])
    for a in range(L):
        for s in range(S):
            acc[s] = 0.0
        for b in range(L):
            for s in range(S):
                acc[s] += ea[b, s] * E[b, a, s]
        for s in range(S):
            if acc[s] > 1e-300:
                nxt[a, s] = amax[s] + cmax[a, s] + np.log(acc[s])
            else:
                nxt[a, s] = _exact_lse(prev, trans, a, s)


@helper
def _exact_lse(prev, trans, a, s):
    """``log sum_b exp(prev[b, s] + trans[b, a, s])`` computed directly (the underflow fallback)."""
    L = prev.shape[0]
    m = -np.inf
    for b in range(L):
        m = max(m, prev[b, s] + trans[b, a, s])
    tot = 0.0
    for b in range(L):
        tot += np.exp(prev[b, s] + trans[b, a, s] - m)
    return m + np.log(tot)


@helper(fastmath=_FM)
def _log_z(last, out):
    L, S = last.shape
    for s in range(S):
        m = last[0, s]
        for j in range(1, L):
            m = max(m, last[j, s])
        tot = 0.0
        for j in range(L):
            tot += np.exp(last[j, s] - m)
        out[s] = m + np.log(tot)


@helper
def _forward(unary, trans, alpha):
    """Log forward messages of every token: ``alpha[t]`` is (L, S); ``alpha`` is (T or 2, L, S).

    With a 2-row ``alpha`` the rows alternate and only the last message is kept; returns its row.
    """
    L, T, S = unary.shape
    E, cmax = np.empty((L, L, S)), np.empty((L, S))
    _shifted_columns(trans, E, cmax)
    ea, amax, acc = np.empty((L, S)), np.empty(S), np.empty(S)
    keep_all = alpha.shape[0] == T
    # explicit loops, not ``alpha[0] = unary[:, 0, :]``: an array-to-array assignment makes numba
    # compile its shape-mismatch error message, seconds of a fresh install's first fit
    for j in range(L):
        for s in range(S):
            alpha[0, j, s] = unary[j, 0, s]
    cur = 0
    for t in range(1, T):
        nxt = t if keep_all else 1 - cur
        _step(alpha[cur], trans, E, cmax, alpha[nxt], ea, amax, acc)
        for j in range(L):
            for s in range(S):
                alpha[nxt, j, s] += unary[j, t, s]
        cur = nxt
    return cur


@kernel
def _loglik_kernel(unary, trans, y, out):
    L, T, S = unary.shape
    alpha = np.empty((2, L, S))
    last = _forward(unary, trans, alpha)
    _log_z(alpha[last], out)
    for s in range(S):
        score = unary[y[0], 0, s]
        for t in range(1, T):
            score += unary[y[t], t, s] + trans[y[t - 1], y[t], s]
        out[s] = score - out[s]


@kernel
def _marginals_kernel(unary, trans, out):
    L, T, S = unary.shape
    alpha = np.empty((T, L, S))
    _forward(unary, trans, alpha)
    trans_t = np.empty((L, L, S))  # backward = forward on the transposed table
    for i in range(L):
        for j in range(L):
            for s in range(S):
                trans_t[i, j, s] = trans[j, i, s]
    E, cmax = np.empty((L, L, S)), np.empty((L, S))
    _shifted_columns(trans_t, E, cmax)
    ea, amax, acc = np.empty((L, S)), np.empty(S), np.empty(S)
    beta, emit = np.zeros((L, S)), np.empty((L, S))
    for t in range(T - 1, -1, -1):
        if t < T - 1:
            for j in range(L):
                for s in range(S):
                    emit[j, s] = beta[j, s] + unary[j, t + 1, s]
            _step(emit, trans_t, E, cmax, beta, ea, amax, acc)
        _normalised_mean(alpha[t], beta, emit, out[t])


@helper
def _normalised_mean(alpha_t, beta, v, out_t):
    """``out_t[j] = mean_s p_s(j)`` with ``p_s(j)`` proportional to ``exp(alpha_t[j, s] + beta[j, s])``.

    Normalised per token and sample (not by ``log Z``), so each row sums to 1 even where
    ``alpha + beta - log Z`` cancels catastrophically (potentials near +-1e300).
    """
    L, S = alpha_t.shape
    for j in range(L):
        out_t[j] = 0.0
    for s in range(S):
        m = -np.inf
        for j in range(L):
            v[j, s] = alpha_t[j, s] + beta[j, s]
            m = max(m, v[j, s])
        tot = 0.0
        for j in range(L):
            v[j, s] = np.exp(v[j, s] - m)
            tot += v[j, s]
        for j in range(L):
            out_t[j] += v[j, s] / tot / S


def _check(unary, transition):
    unary = check_float_array(unary, "unary")
    transition = check_float_array(transition, "transition")
    if unary.ndim != 3 or min(unary.shape) == 0:
        raise ValueError(f"unary must be 3D (n_labels, n_tokens, n_samples) and non-empty, got shape {unary.shape}.")
    L, _, S = unary.shape
    if transition.shape != (L, L, S):
        raise ValueError(f"transition must have shape ({L}, {L}, {S}) (from, to, sample), got {transition.shape}.")
    T = unary.shape[1]
    u_max, a_max = float(np.max(np.abs(unary))), float(np.max(np.abs(transition)))
    if T * u_max + (T - 1) * a_max > MAX_PATH_SCORE:  # a path's score would overflow float64
        raise ValueError(f"unary (|.| up to {u_max:.3g}) and transition (|.| up to {a_max:.3g}) are too large: a "
                         f"path over {T} tokens may score beyond {MAX_PATH_SCORE:.0e}, which overflows float64 "
                         "in the forward sums; scale the potentials down.")
    return unary, transition


def sampled_log_likelihood(unary, transition, y):
    """``log p(y | potentials)`` of one chain under each sample of its potentials.

    Parameters
    ----------
    unary : ndarray of shape (n_labels, n_tokens, n_samples)
        Sampled unary log-potentials ``[label, token, sample]``.
    transition : ndarray of shape (n_labels, n_labels, n_samples)
        Sampled transition log-potentials ``[from, to, sample]``.
    y : array-like of int of shape (n_tokens,)
        The label sequence.

    Returns
    -------
    loglik : ndarray of shape (n_samples,)
        ``log p(y | unary[..., s], transition[..., s])`` for every sample ``s``: the score of
        ``y`` minus the log partition function.

    Examples
    --------
    >>> import numpy as np
    >>> ll = sampled_log_likelihood(np.zeros((2, 3, 4)), np.zeros((2, 2, 4)), [0, 1, 1])
    >>> bool(np.allclose(ll, -3 * np.log(2)))
    True
    """
    unary, transition = _check(unary, transition)
    y = check_int_array(y, "y", ndim=1)
    if y.shape[0] != unary.shape[1]:
        raise ValueError(f"y has {y.shape[0]} labels for {unary.shape[1]} tokens.")
    if y.size and (y.min() < 0 or y.max() >= unary.shape[0]):
        raise ValueError(f"y must hold labels in [0, {unary.shape[0]}), got values in [{y.min()}, {y.max()}].")
    out = np.empty(unary.shape[2])
    _loglik_kernel(unary, transition, y, out)
    return out


def sampled_marginals(unary, transition):
    """Node marginals of one chain averaged over samples of its potentials.

    Parameters
    ----------
    unary, transition : ndarray
        The sampled potentials, laid out as in :func:`sampled_log_likelihood`.

    Returns
    -------
    marginals : ndarray of shape (n_tokens, n_labels)
        ``mean_s p_s(y_t = j)``; each row sums to 1.

    Examples
    --------
    >>> import numpy as np
    >>> sampled_marginals(np.zeros((2, 2, 3)), np.zeros((2, 2, 3)))
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """
    unary, transition = _check(unary, transition)
    out = np.empty((unary.shape[1], unary.shape[0]))
    _marginals_kernel(unary, transition, out)
    return out
