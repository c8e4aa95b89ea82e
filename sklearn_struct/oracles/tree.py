"""Spanning-tree factor over the link variables of one sentence: log Z, marginals, BP messages, MAP.

A sentence of ``n`` words has nodes ``0..n`` (0 is the root) and link variables ``z[h, m]``
(head ``h``, modifier ``m >= 1``, ``h != m``). A link-score matrix ``S`` of shape ``(n + 1, n + 1)``
holds log-potentials ``S[h, m]`` (column 0 and the diagonal are ignored), and the tree distribution
is ``p(tree) ∝ exp(sum_{(h, m) in tree} S[h, m])`` over dependency trees rooted at 0.

* ``single_root=True`` (the UD and CoNLL-U convention: exactly one word attaches to the root)
  or ``False`` (the root may have several children).
* Projective trees (no crossing links): inside-outside over Eisner's O(n^3) chart of complete and
  incomplete spans; the outside pass is the reverse-mode derivative of the inside pass, so a
  link's marginal is ``d log Z / d S[h, m]``. The chart runs in probability space on
  ``exp(S - column max)`` (no exp in the cubic loops) and falls back to a log-space chart
  (:mod:`sklearn_struct.oracles._eisner_log`) when ``Z`` is too small there (below 1e-250), so
  large scores never overflow or underflow. Single
  root: ``log Z = logsumexp_m (S[0, m] + C_left[1, m] + C_right[m, n])`` over the root's only
  child ``m``.
* Non-projective trees: the matrix-tree theorem (Koo, Globerson, Carreras & Collins 2007). With
  ``A = exp(S - c)`` (``c[m]`` the column maxima, so nothing overflows; every tree has one head per
  word, so ``log Z = log det L + sum c``), the Laplacian over words ``1..n`` is ``L[h, m] = -A[h, m]``,
  ``L[m, m] = sum_h A[h, m]`` (the root's column included for multiple roots). For a single root the
  first row is replaced by the root scores ``A[0, m]`` (Koo et al.'s root-edge variant). With
  ``B = L^{-1}``, marginals are ``A[h, m] * d log det L / d A[h, m]``, i.e. ``A[0, m] B[m, 0]``
  (single root) or ``A[0, m] B[m, m]`` (multi-root) for root links and
  ``A[h, m] ([m != 1] B[m, m] - [h != 1] B[m, h])`` for word links (``[.] = 1`` for multi-root).
  That difference cancels when ``L`` is ill conditioned (scores whose spread reaches the tens
  already do it, 1e300 always): where the error bound ``2 n eps cond(L) max|B|`` exceeds
  ``MAX_MARGINAL_ERROR`` (1e-8), the marginals come from a subtraction-free elimination in log
  space instead (:mod:`sklearn_struct.oracles._tree_log`, about 40 times slower at 300 words).

Magnitudes: scores of any finite magnitude give marginals that are probabilities, each column
summing to one, and match enumeration (checked at scales 30 to 1e300). At 1e300 they are those of
the best tree by the exact sum of the given floats. ``log Z`` is +-inf only where it lies beyond
float64's range. Exact ties keep their counts at any magnitude: both log-space algorithms first
shift the scores by their column maxima and then carry log-weights in two parts (``hi + lo``,
:mod:`sklearn_struct.oracles._tree_log`), since at 1e300 one float cannot add ``log 2``.

As a factor in BP (Smith & Eisner 2008) the tree factor receives a message ``(q0, q1)`` from every
link variable; with ``S = log(q1 / q0)`` the factor's belief of each link is the tree marginal, and
its outgoing message is that marginal's odds divided by the incoming odds: in log-odds,
``out = logit(mu) - S``, for all links in one O(n^3) pass (``logit(mu)`` clipped to ±40).

MAP: Eisner's algorithm (projective) and Chu-Liu-Edmonds (non-projective; for a single root, the
best tree with each root child in turn when the unconstrained one has several).
"""

import math

import numpy as np
from numba import njit

from ..utils._jit import helper, kernel
from ..utils.validation import check_float_array
from ._eisner_log import eisner_log
from ._tree_log import _inverse_error, _slogdet_inv, matrix_tree_log

__all__ = [
    "tree_marginals",
    "tree_messages",
    "eisner",
    "chu_liu_edmonds",
    "decode_tree",
    "check_link_scores",
]

NEG_INF = -np.inf
# Tree-factor beliefs (log-odds) are clipped to this magnitude (a link the tree forces gets odds e^40, not inf).
MAX_LOG_ODDS = 40.0
# Above this error bound, matrix-tree marginals in probability space give way to the log-space elimination.
MAX_MARGINAL_ERROR = 1e-8


@helper
def _empty_charts(N):
    """Eisner's four (N, N) charts IR, IL, CR, CL: -inf, with the empty spans CR[s, s] = CL[s, s] = 0."""
    IR = np.full((N, N), NEG_INF)
    IL = np.full((N, N), NEG_INF)
    CR = np.full((N, N), NEG_INF)
    CL = np.full((N, N), NEG_INF)
    for s in range(N):
        CR[s, s] = 0.0
        CL[s, s] = 0.0
    return IR, IL, CR, CL


@kernel
def _eisner_marginals(S, single_root):
    """Projective log Z and link marginals by the log-space chart (:mod:`._eisner_log`)."""
    return eisner_log(S, single_root)


@helper
def _eisner_marginals_scaled(S, single_root):
    """Inside-outside in probability space on ``A = exp(S - column max)``: no exp in the O(n^3) loops.

    Every column of ``A`` has maximum 1, so chart entries stay below the number of subtrees
    (< 4^n) and ``Z >= the best tree's weight``. Returns ``(nan, _)`` when ``Z`` falls below
    ``1e-250`` (or is not finite), where terms flushed to zero could matter: the caller then
    uses the log-space chart. Otherwise a flushed term weighs < 1e-308 * 4^n, negligible against Z.
    """
    N = S.shape[0]
    A = np.zeros((N, N))
    log_shift = 0.0
    for m in range(1, N):
        top = NEG_INF
        for h in range(N):
            if h != m and S[h, m] > top:
                top = S[h, m]
        if top == NEG_INF:
            return np.nan, np.zeros((N, N))
        log_shift += top
        for h in range(N):
            if h != m:
                A[h, m] = math.exp(S[h, m] - top)
    IR = np.zeros((N, N))
    IL = np.zeros((N, N))
    CR = np.zeros((N, N))
    CL = np.zeros((N, N))
    ACC = np.zeros((N, N))
    for s in range(N):
        CR[s, s] = 1.0
        CL[s, s] = 1.0
    for width in range(1, N):
        for s in range(N - width):
            t = s + width
            acc = 0.0
            for r in range(s, t):
                acc += CR[s, r] * CL[r + 1, t]
            ACC[s, t] = acc
            IR[s, t] = A[s, t] * acc
            if s > 0:
                IL[s, t] = A[t, s] * acc
            acc = 0.0
            for r in range(s, t):
                acc += CL[s, r] * IL[r, t]
            CL[s, t] = acc
            acc = 0.0
            for r in range(s + 1, t + 1):
                acc += IR[s, r] * CR[r, t]
            CR[s, t] = acc
    gA = np.zeros((N, N))
    gIR = np.zeros((N, N))
    gIL = np.zeros((N, N))
    gCR = np.zeros((N, N))
    gCL = np.zeros((N, N))
    if single_root:
        Z = 0.0
        for m in range(1, N):
            Z += A[0, m] * CL[1, m] * CR[m, N - 1]
            gA[0, m] = CL[1, m] * CR[m, N - 1]
            gCL[1, m] += A[0, m] * CR[m, N - 1]
            gCR[m, N - 1] += A[0, m] * CL[1, m]
    else:
        Z = CR[0, N - 1]
        gCR[0, N - 1] = 1.0
    if not (Z > 1e-250) or not np.isfinite(Z):
        return np.nan, np.zeros((N, N))
    for width in range(N - 1, 0, -1):
        for s in range(N - width):
            t = s + width
            g = gCR[s, t]
            if g != 0.0:
                for r in range(s + 1, t + 1):
                    gIR[s, r] += g * CR[r, t]
                    gCR[r, t] += g * IR[s, r]
            g = gCL[s, t]
            if g != 0.0:
                for r in range(s, t):
                    gCL[s, r] += g * IL[r, t]
                    gIL[r, t] += g * CL[s, r]
            gA[s, t] += gIR[s, t] * ACC[s, t]
            gA[t, s] += gIL[s, t] * ACC[s, t]
            g = gIR[s, t] * A[s, t] + gIL[s, t] * A[t, s]
            if g != 0.0:
                for r in range(s, t):
                    gCR[s, r] += g * CL[r + 1, t]
                    gCL[r + 1, t] += g * CR[s, r]
    marg = np.zeros((N, N))
    for h in range(N):
        for m in range(1, N):
            if h != m:
                marg[h, m] = min(max(A[h, m] * gA[h, m] / Z, 0.0), 1.0)
    return math.log(Z) + log_shift, marg


@helper
def _matrix_tree_marginals(S, single_root):
    """Non-projective log Z and link marginals by the matrix-tree theorem (Koo et al. 2007).

    Log Z is NaN where the determinant is not positive or the error bound of the marginals
    (:func:`_inverse_error`) exceeds ``MAX_MARGINAL_ERROR``: scores spanning more than float64
    holds. :func:`_nonprojective_marginals` then runs the log-space elimination.
    """
    N = S.shape[0]
    n = N - 1
    marg = np.zeros((N, N))
    shift = np.zeros(N)
    for m in range(1, N):
        top = NEG_INF
        for h in range(N):
            if h != m and S[h, m] > top:
                top = S[h, m]
        shift[m] = top if top > NEG_INF else 0.0
    A = np.zeros((N, N))
    for h in range(N):
        for m in range(1, N):
            if h != m:
                A[h, m] = math.exp(S[h, m] - shift[m])
    L = np.zeros((n, n))
    for m in range(1, N):
        for h in range(1, N):
            if h != m:
                L[h - 1, m - 1] = -A[h, m]
                L[m - 1, m - 1] += A[h, m]
        if not single_root:
            L[m - 1, m - 1] += A[0, m]
    if single_root:
        for m in range(1, N):
            L[0, m - 1] = A[0, m]
    sign, logdet, B = _slogdet_inv(L)
    if sign <= 0.0 or not np.isfinite(logdet) or _inverse_error(L, B) > MAX_MARGINAL_ERROR:
        return np.nan, marg  # singular or ill conditioned here: the caller uses the log-space elimination
    log_z = logdet
    for m in range(1, N):
        log_z += shift[m]
    for m in range(1, N):
        if single_root:
            marg[0, m] = A[0, m] * B[m - 1, 0]
        else:
            marg[0, m] = A[0, m] * B[m - 1, m - 1]
        for h in range(1, N):
            if h == m:
                continue
            d = 0.0
            if not single_root or m != 1:
                d += B[m - 1, m - 1]
            if not single_root or h != 1:
                d -= B[m - 1, h - 1]
            marg[h, m] = A[h, m] * d
    for h in range(N):  # round-off: marginals are probabilities
        for m in range(1, N):
            marg[h, m] = min(max(marg[h, m], 0.0), 1.0)
    return log_z, marg


@helper
def _nonprojective_marginals(S, single_root):
    log_z, marg = _matrix_tree_marginals(S, single_root)
    if np.isnan(log_z):  # ill conditioned in probability space: the log-space elimination
        return matrix_tree_log(S, single_root)
    return log_z, marg


@helper
def _projective_marginals(S, single_root):
    log_z, marg = _eisner_marginals_scaled(S, single_root)
    if np.isnan(log_z):  # Z too small for probability space: the log-space chart
        return _eisner_marginals(S, single_root)
    return log_z, marg


def _tree_marginals(S, projective, single_root):
    """(log Z, marginals) of checked scores, calling the one algorithm needed.

    The projective log-space chart is called (and so compiled) only when the probability-space
    one fails, as in :func:`_projective_marginals`.
    """
    if S.shape[0] < 2:
        return 0.0, np.zeros(S.shape)
    if projective:
        log_z, marg = _eisner_scaled_kernel(S, single_root)
        if np.isnan(log_z):
            return _eisner_marginals(S, single_root)
        return log_z, marg
    log_z, marg = _matrix_tree_kernel(S, single_root)
    if np.isnan(log_z):
        return _matrix_tree_log_kernel(S, single_root)
    return log_z, marg


@helper
def belief_log_odds(mu, log_odds):
    """The tree factor's belief of a link in log-odds, ``logit(mu)`` clipped to ``±MAX_LOG_ODDS``
    (-inf for a forbidden link, ``log_odds`` -inf)."""
    if log_odds == NEG_INF:
        return NEG_INF
    if mu <= 0.0:
        return -MAX_LOG_ODDS
    if mu >= 1.0:
        return MAX_LOG_ODDS
    return min(max(math.log(mu) - math.log1p(-mu), -MAX_LOG_ODDS), MAX_LOG_ODDS)


@helper
def _messages_from_marginals(log_odds, marg, out):
    """Outgoing log-odds ``logit(mu) - log_odds`` of every link into ``out``.

    The belief ``logit(mu)`` is clipped (a link the tree forces gets odds e^40, not inf), not the
    message: a link with incoming odds e^100 and marginal 1/2 gets the message -100 (clipping that
    to -40 left it a belief of e^60). Forbidden links get 0.
    """
    N = log_odds.shape[0]
    for h in range(N):
        for m in range(1, N):
            if h == m:
                continue
            x = log_odds[h, m]
            out[h, m] = 0.0 if x == NEG_INF else belief_log_odds(marg[h, m], x) - x


@njit(cache=True, nogil=True, inline="always")
def _tree_messages(log_odds, projective, single_root, out, log_fallback):
    """Tree-factor messages into ``out``; returns (log Z, mu).

    Inlined into its numba callers: where ``projective`` and ``log_fallback`` are constants there,
    the other branches are pruned before compilation (each algorithm costs seconds in a fresh
    install). Without ``log_fallback``: log Z is NaN when the probability-space chart or
    matrix-tree result fails (``out`` untouched), and the caller redoes its work with ``log_fallback``.
    """
    if log_odds.shape[0] < 2:
        return 0.0, np.zeros(log_odds.shape)
    if projective and log_fallback:
        log_z, marg = _projective_marginals(log_odds, single_root)
    elif projective:
        log_z, marg = _eisner_marginals_scaled(log_odds, single_root)
        if np.isnan(log_z):
            return log_z, marg
    elif log_fallback:
        log_z, marg = _nonprojective_marginals(log_odds, single_root)
    else:
        log_z, marg = _matrix_tree_marginals(log_odds, single_root)
        if np.isnan(log_z):
            return log_z, marg
    _messages_from_marginals(log_odds, marg, out)
    return log_z, marg


# Entry points for Python callers; the BP kernels call the helpers above directly (compiled into
# them, without the Python-call wrappers a kernel carries).
@kernel
def _eisner_scaled_kernel(S, single_root):
    return _eisner_marginals_scaled(S, single_root)


@kernel
def _matrix_tree_kernel(S, single_root):
    return _matrix_tree_marginals(S, single_root)


@kernel
def _matrix_tree_log_kernel(S, single_root):
    return matrix_tree_log(S, single_root)


@kernel
def _messages_kernel(log_odds, marg, out):
    _messages_from_marginals(log_odds, marg, out)


# --------------------------------------------------------------------------------------
# MAP decoders
# --------------------------------------------------------------------------------------


@kernel
def _eisner_map(S, single_root):
    """Best projective tree (heads array, heads[0] = -1) by Eisner's algorithm with back-pointers."""
    N = S.shape[0]
    IR, IL, CR, CL = _empty_charts(N)
    bI = np.zeros((N, N), dtype=np.int64)
    bR = np.zeros((N, N), dtype=np.int64)
    bL = np.zeros((N, N), dtype=np.int64)
    for width in range(1, N):
        for s in range(N - width):
            t = s + width
            best, arg = NEG_INF, s
            for r in range(s, t):
                v = CR[s, r] + CL[r + 1, t]
                if v > best:
                    best, arg = v, r
            bI[s, t] = arg
            IR[s, t] = S[s, t] + best
            if s > 0:
                IL[s, t] = S[t, s] + best
            best, arg = NEG_INF, s
            for r in range(s, t):
                v = CL[s, r] + IL[r, t]
                if v > best:
                    best, arg = v, r
            CL[s, t], bL[s, t] = best, arg
            best, arg = NEG_INF, t
            for r in range(s + 1, t + 1):
                v = IR[s, r] + CR[r, t]
                if v > best:
                    best, arg = v, r
            CR[s, t], bR[s, t] = best, arg
    heads = np.full(N, -1, dtype=np.int64)
    # stack of (kind, s, t): 0 = CR, 1 = CL, 2 = IR, 3 = IL
    stack = np.zeros((4 * N + 4, 3), dtype=np.int64)
    top = 0
    if single_root:
        best, root_child = NEG_INF, 1
        for m in range(1, N):
            v = S[0, m] + CL[1, m] + CR[m, N - 1]
            if v > best:
                best, root_child = v, m
        heads[root_child] = 0
        stack[0, 0], stack[0, 1], stack[0, 2] = 1, 1, root_child
        stack[1, 0], stack[1, 1], stack[1, 2] = 0, root_child, N - 1
        top = 2
    else:
        stack[0, 0], stack[0, 1], stack[0, 2] = 0, 0, N - 1
        top = 1
    while top > 0:
        top -= 1
        kind, s, t = stack[top, 0], stack[top, 1], stack[top, 2]
        if s == t:
            continue
        if kind == 0:
            r = bR[s, t]
            stack[top, 0], stack[top, 1], stack[top, 2] = 2, s, r
            stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = 0, r, t
            top += 2
        elif kind == 1:
            r = bL[s, t]
            stack[top, 0], stack[top, 1], stack[top, 2] = 1, s, r
            stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = 3, r, t
            top += 2
        else:
            if kind == 2:
                heads[t] = s
            else:
                heads[s] = t
            r = bI[s, t]
            stack[top, 0], stack[top, 1], stack[top, 2] = 0, s, r
            stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = 1, r + 1, t
            top += 2
    return heads


def _find_cycle(heads):
    """Nodes of one cycle of the head graph (heads[0] = -1), or None."""
    N = heads.shape[0]
    state = np.zeros(N, dtype=np.int64)  # 0 new, 1 on the current path, 2 done
    for start in range(1, N):
        path = []
        v = start
        while v > 0 and state[v] == 0:
            state[v] = 1
            path.append(v)
            v = heads[v]
        if v > 0 and state[v] == 1:
            return np.array(path[path.index(v):])
        for u in path:
            state[u] = 2
    return None


def _cle(S):
    """Chu-Liu-Edmonds maximum spanning arborescence rooted at 0 (root may have several children)."""
    N = S.shape[0]
    S = S.copy()
    np.fill_diagonal(S, -np.inf)
    S[:, 0] = -np.inf
    heads = S.argmax(axis=0)
    heads[0] = -1
    cycle = _find_cycle(heads)
    if cycle is None:
        return heads
    in_cycle = np.zeros(N, dtype=bool)
    in_cycle[cycle] = True
    rest = np.flatnonzero(~in_cycle)  # contains 0 first
    R = rest.size
    T = np.full((R + 1, R + 1), -np.inf)
    T[:R, :R] = S[np.ix_(rest, rest)]
    enter = S[np.ix_(rest, cycle)] - S[heads[cycle], cycle][None, :]
    best_v = cycle[enter.argmax(axis=1)]
    T[:R, R] = enter.max(axis=1)
    leave = S[np.ix_(cycle, rest)]
    best_u = cycle[leave.argmax(axis=0)]
    T[R, :R] = leave.max(axis=0)
    sub = _cle(T)
    out = heads.copy()
    for i in range(1, R):
        h = sub[i]
        out[rest[i]] = rest[h] if h < R else best_u[i]
    h = sub[R]
    out[best_v[h]] = rest[h]
    return out


def _tree_score(S, heads):
    return float(S[heads[1:], np.arange(1, S.shape[0])].sum())


def chu_liu_edmonds(scores, single_root=True):
    """Highest-scoring non-projective dependency tree (heads; ``heads[0] = -1``).

    Examples
    --------
    >>> import numpy as np
    >>> S = np.array([[0, 5, 1, 0], [0, 0, 11, 4], [0, 10, 0, 5], [0, 9, 8, 0]], dtype=float)
    >>> chu_liu_edmonds(S).tolist()
    [-1, 0, 1, 2]
    """
    return _map_tree(scores, single_root, _cle_rooted)


def _cle_rooted(S, single_root):
    """CLE; for a single root, the best tree over each root child ``m`` in turn (the smallest ``m`` on ties).

    The children are tried in decreasing order of an upper bound on their best tree's score,
    ``S[0, m] + sum_{v != m} max_{h >= 1} S[h, v]``, and a child whose bound cannot beat the best
    tree found so far is skipped: the same tree as trying all ``n`` children, usually after one or
    two (each try is a CLE run, so trying all of them made decoding O(n) CLE runs).
    """
    heads = _cle(S)
    if not single_root or np.count_nonzero(heads == 0) == 1:
        return heads
    N = S.shape[0]
    words = S[1:, 1:].copy()
    np.fill_diagonal(words, -np.inf)
    best_in = words.max(axis=0)  # best word head of each word 1..n (-inf if none)
    with np.errstate(invalid="ignore"):
        bound = S[0, 1:] + (best_in.sum() - best_in)
    finite = np.isfinite(best_in)
    if finite.sum() < N - 2:  # two words without a word head: no single-root tree bound from the sum
        bound[:] = np.inf
    elif not finite.all():  # one word without a word head: only it can be the root child
        bound[finite] = -np.inf
        bound[~finite] = S[0, 1:][~finite] + best_in[finite].sum()
    with np.errstate(invalid="ignore", over="ignore"):  # slack for the round-off of the sums
        bound = bound + 1e-9 * (np.abs(S[0, 1:]) + np.abs(best_in[finite]).sum())
    bound = np.where(np.isnan(bound), np.inf, bound)
    best, best_m, best_heads = -np.inf, N, heads
    for i in np.argsort(-bound, kind="stable"):
        m = int(i) + 1
        if S[0, m] == -np.inf or bound[i] < best or (bound[i] == best and m > best_m):
            continue
        T = S.copy()
        T[0, :] = -np.inf
        T[0, m] = S[0, m]
        cand = _cle(T)
        score = _tree_score(T, cand)  # -inf when no tree has m as the only root child (CLE then uses a -inf link)
        if score == -np.inf:
            continue
        if score > best or (score == best and m < best_m):
            best, best_m, best_heads = score, m, cand
    return best_heads


def eisner(scores, single_root=True):
    """Highest-scoring projective dependency tree (heads; ``heads[0] = -1``) by Eisner's algorithm.

    Where the best tree has crossing arcs, the best projective one differs from
    :func:`chu_liu_edmonds`' (below, word 2 takes word 4 as its head instead of word 3).

    Examples
    --------
    >>> import numpy as np
    >>> S = np.array([[0, 3, 2, 0, 7], [0, 0, 0, 2, 7], [0, 9, 0, 3, 3], [0, 3, 4, 0, 2], [0, 1, 4, 6, 0]], float)
    >>> eisner(S).tolist(), chu_liu_edmonds(S).tolist()
    ([-1, 2, 4, 4, 0], [-1, 2, 3, 4, 0])
    """
    return _map_tree(scores, single_root, _eisner_map)


def _map_tree(scores, single_root, solve):
    """Validate the link scores and solve for the MAP heads (no tree search for a lone root)."""
    S = check_link_scores(scores)
    if S.shape[0] < 2:
        return np.full(S.shape[0], -1, dtype=np.int64)
    return solve(S, bool(single_root))


def decode_tree(scores, projective=False, single_root=True):
    """MAP tree: :func:`eisner` if ``projective`` else :func:`chu_liu_edmonds`."""
    return (eisner if projective else chu_liu_edmonds)(scores, single_root=single_root)


def check_link_scores(scores, name="scores"):
    """Validate a square ``(n + 1, n + 1)`` float matrix of link log-potentials (no NaN, no +inf)."""
    S = check_float_array(scores, name, check_values=False).copy()
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] < 1:
        raise ValueError(f"{name} must be a square (n_words + 1, n_words + 1) matrix, got shape {S.shape}.")
    if np.isnan(S).any() or (S == np.inf).any():
        bad = np.argwhere(np.isnan(S) | (S == np.inf))[0]
        raise ValueError(f"{name} contain NaN or +inf (first at link {tuple(int(i) for i in bad)}).")
    return S


def tree_marginals(scores, projective=False, single_root=True):
    """Log partition function and link marginals of the tree distribution ``∝ exp(sum of S[h, m])``.

    Parameters
    ----------
    scores : array-like of shape (n_words + 1, n_words + 1)
        Link log-potentials ``S[h, m]`` (node 0 is the root; column 0 and the diagonal are ignored;
        ``-inf`` forbids a link).
    projective : bool, default=False
        Projective trees (Eisner inside-outside) or all trees (matrix-tree theorem).
    single_root : bool, default=True
        Exactly one word attaches to the root (UD), or any number.

    Returns
    -------
    log_z : float
    marginals : ndarray of shape (n_words + 1, n_words + 1)
        ``P(h is the head of m)``; each column ``m >= 1`` sums to 1.

    Examples
    --------
    >>> import numpy as np
    >>> log_z, mu = tree_marginals(np.zeros((3, 3)))  # two words: 0->1->2 or 0->2->1
    >>> round(float(np.exp(log_z)), 6), mu[:, 1].round(3).tolist()
    (2.0, [0.5, 0.0, 0.5])
    """
    S = check_link_scores(scores)
    log_z, marg = _tree_marginals(S, projective, bool(single_root))
    return float(log_z), marg


def tree_messages(log_odds, projective=False, single_root=True):
    """Outgoing BP messages of the tree factor (log-odds) from incoming link log-odds.

    The tree factor's belief of link ``(h, m)`` is its marginal ``mu`` under link weights
    ``exp(log_odds)``; the message back to the link is ``logit(mu) - log_odds[h, m]``, with
    ``logit(mu)`` clipped to ``±MAX_LOG_ODDS`` (0 for a forbidden link).

    Returns
    -------
    out : ndarray of shape (n_words + 1, n_words + 1)
    log_z : float
    marginals : ndarray of shape (n_words + 1, n_words + 1)

    Examples
    --------
    >>> import numpy as np
    >>> out, _, mu = tree_messages(np.zeros((3, 3)))
    >>> round(float(out[1, 2]), 6)  # mu = 0.5: the message says nothing
    0.0
    """
    S = check_link_scores(log_odds, "log_odds")
    out = np.zeros_like(S)
    log_z, marg = _tree_marginals(S, projective, single_root)
    _messages_kernel(S, marg, out)
    return out, float(log_z), marg
