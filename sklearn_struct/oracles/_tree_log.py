"""Non-projective tree marginals in log space, without subtraction: for scores of any magnitude.

The matrix-tree theorem (:mod:`sklearn_struct.oracles.tree`) takes a determinant and an inverse in
probability space. When the link weights span more than float64 holds (scores whose differences
reach the hundreds, or any scores of magnitude 1e300), the Laplacian is singular or so ill
conditioned that the marginals ``A[h, m] (B[m, m] - B[m, h])`` cancel to nonsense. This module is
the fallback: it eliminates the words one at a time from the weighted graph (the Schur complement
of a Laplacian is the Laplacian of the reduced graph, so the pivot is the sum of the eliminated
word's remaining in-weights and the new weights ``A[h, m] + A[h, k] A[k, m] / D_k`` are sums of
positive terms). Every step is a log-sum-exp, ``log Z = sum_k log D_k``, and the marginals are the
reverse-mode derivative of that sequence, each log-sum-exp passing its adjoint on in normalised
softmax shares, so they stay probabilities whatever the magnitudes (at 1e300 the shares are 0/1
and the marginals those of the best tree, as the exact distribution is). Log-weights are carried
in two parts (``hi + lo``, see ``_SPLIT``) so that exact ties among the best trees keep their
counts at 1e300, where ``x + log 2 == x``.

* Several roots: the root is a node like the words, never eliminated; ``Z = prod_k D_k``.
* One root (exactly one word attaches to 0): ``Z = sum_r A[0, r] T_r`` with ``T_r`` the trees over
  the words rooted at word ``r``. The root's links ride along as an extra row that is reduced like
  the others but never counted in a pivot (the first-order term of root weights ``eps A[0, r]``),
  and the elimination ends at a word ``f`` that reaches every word (so ``T_f > 0``):
  ``Z = T_f * A'[0, f]``.

Cost: O(n^3) log-sum-exp terms and 2 n^3 / 3 stored values for the reverse pass (144 MB at 300
words); it runs only when the probability-space matrix-tree result fails its error check.
"""

import math

import numpy as np

from ..utils._jit import helper

NEG_INF = -np.inf


@helper
def _lae(a, b):
    """log(e^a + e^b)."""
    if a == NEG_INF:
        return b
    if b == NEG_INF:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@helper
def _share(a, b):
    """Share of ``b`` in ``log(e^a + e^b)``: ``e^b / (e^a + e^b)``, exactly normalised against ``a``'s."""
    if b == NEG_INF:
        return 0.0
    if a == NEG_INF:
        return 1.0
    if a > b:
        e = math.exp(b - a)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(a - b))


@helper
def _shifted_scores(S, single_root):
    """Scores less their column maxima (and the root row less its maximum for one root): same
    distribution (every tree has one head per word and, for one root, one root link), no
    magnitude left in the terms; returns (a, total shift, False if a word has no possible head
    or, for one root, the root no possible child). -inf on the diagonal and column 0; the total
    is +-inf only where it lies beyond float64's range."""
    N = S.shape[0]
    a = np.full((N, N), NEG_INF)
    total = 0.0
    for m in range(1, N):
        top = NEG_INF
        for h in range(N):
            if h != m and S[h, m] > top:
                top = S[h, m]
        if top == NEG_INF:
            return a, NEG_INF, False
        total += top
        for h in range(N):
            if h != m:
                a[h, m] = S[h, m] - top
    if single_root:
        top = NEG_INF
        for m in range(1, N):
            if a[0, m] > top:
                top = a[0, m]
        if top == NEG_INF:
            return a, NEG_INF, False
        total += top
        for m in range(1, N):
            a[0, m] -= top
    return a, total, True


@helper
def _reaches_all(a, f):
    """Does word ``f`` reach every word over the links of finite weight between words?"""
    N = a.shape[0]
    seen = np.zeros(N, dtype=np.bool_)
    stack = np.empty(N, dtype=np.int64)
    seen[f] = True
    stack[0] = f
    top, count = 1, 1
    while top > 0:
        top -= 1
        h = stack[top]
        for m in range(1, N):
            if not seen[m] and a[h, m] > NEG_INF:
                seen[m] = True
                stack[top] = m
                top += 1
                count += 1
    return count == N - 1


# Log-weights are kept as two floats, ``hi + lo``: an input beyond ``_SPLIT`` goes to ``hi`` whole, the
# rest (moderate scores, and the log-counts that sums of tied terms add) to ``lo``. At 1e300 a
# single float cannot add log 2 to a log-weight, so two tied best trees would count as one; with
# the two parts, equal high parts compare exactly and the counts stay in the low part.
_SPLIT = 2.0**20


@helper
def _lae2(h1, l1, h2, l2):
    """``log(e^(h1 + l1) + e^(h2 + l2))`` as (hi, lo)."""
    if h1 == NEG_INF:
        return h2, l2
    if h2 == NEG_INF:
        return h1, l1
    if h1 >= h2:
        return h1, _lae(l1, l2 + (h2 - h1))
    return h2, _lae(l1 + (h1 - h2), l2)


@helper
def _share2(oh, ol, th, tl):
    """Share of ``t`` in ``log(e^old + e^t)`` (two-part log-weights)."""
    if th == NEG_INF:
        return 0.0
    if oh == NEG_INF:
        return 1.0
    x = (th - oh) + (tl - ol)
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@helper
def _split_parts(a):
    """Two-part log-weights of the shifted scores (see ``_SPLIT``)."""
    N = a.shape[0]
    hi = np.zeros((N, N))
    lo = np.zeros((N, N))
    for h in range(N):
        for m in range(N):
            v = a[h, m]
            if v == NEG_INF or abs(v) >= _SPLIT:
                hi[h, m] = v
            else:
                lo[h, m] = v
    return hi, lo


@helper
def matrix_tree_log(S, single_root):
    """(log Z, marginals) of non-projective trees by log-space elimination (see the module docstring)."""
    N = S.shape[0]
    marg = np.zeros((N, N))
    a, shift, ok = _shifted_scores(S, single_root)
    if not ok:
        return NEG_INF, marg
    final = 0
    if single_root:  # the last word standing: one the root reaches trees through (T_f > 0), best root link
        final = -1
        for f in range(1, N):
            if a[0, f] > NEG_INF and _reaches_all(a, f) and (final < 0 or a[0, f] > a[0, final]):
                final = f
        if final < 0:
            for f in range(1, N):
                if _reaches_all(a, f):
                    final = f
                    break
        if final < 0:
            return NEG_INF, marg
    ah, al = _split_parts(a)
    first = 1 if single_root else 0  # pivots count in-weights from these rows on (not the root's, for one root)
    order = np.empty(N - 2 if single_root else N - 1, dtype=np.int64)
    i = 0
    for k in range(N - 1, 0, -1):
        if k != final:
            order[i] = k
            i += 1
    n_steps = order.shape[0]
    alive = np.ones(N, dtype=np.bool_)  # not yet eliminated
    n_hist = 0
    for i in range(n_steps):  # rows (the root's and the remaining words) x the remaining words
        n_left = n_steps - i - 1 + (1 if single_root else 0)  # words left besides k
        n_hist += n_left * n_left  # (n_left + 1) rows x n_left columns, less the diagonal
    hist_h = np.empty(n_hist)
    hist_l = np.empty(n_hist)
    dh_ = np.empty(n_steps)
    dl_ = np.empty(n_steps)
    z_hi, z_lo = 0.0, 0.0
    p = 0
    for i in range(n_steps):
        k = order[i]
        alive[k] = False
        dh, dl = NEG_INF, 0.0
        for h in range(first, N):
            if alive[h]:
                dh, dl = _lae2(dh, dl, ah[h, k], al[h, k])
        if dh == NEG_INF:  # k has no head left: no tree
            return NEG_INF, marg
        dh_[i], dl_[i] = dh, dl
        z_hi += dh
        z_lo += dl
        for h in range(N):
            if h > 0 and not alive[h]:
                continue
            for m in range(1, N):
                if not alive[m] or m == h:
                    continue
                hist_h[p], hist_l[p] = ah[h, m], al[h, m]
                p += 1
                th = ah[h, k] + ah[k, m] - dh
                if th > NEG_INF:
                    ah[h, m], al[h, m] = _lae2(ah[h, m], al[h, m], th, al[h, k] + al[k, m] - dl)
    if single_root:
        z_hi += ah[0, final]
        z_lo += al[0, final]
    # reverse pass: G = d log Z / d (log weight) of every entry as it stood, back to the input
    G = np.zeros((N, N))
    if single_root:
        G[0, final] = 1.0
    for i in range(n_steps - 1, -1, -1):
        k = order[i]
        dh, dl = dh_[i], dl_[i]
        gd = 1.0
        n_left = n_steps - i - 1 + (1 if single_root else 0)
        p -= n_left * n_left  # the step's stored entries start here
        q = p
        for h in range(N):
            if h > 0 and not alive[h]:
                continue
            for m in range(1, N):
                if not alive[m] or m == h:
                    continue
                oh, ol = hist_h[q], hist_l[q]
                q += 1
                g = G[h, m]
                th = ah[h, k] + ah[k, m] - dh
                if g != 0.0 and th > NEG_INF:
                    w = _share2(oh, ol, th, al[h, k] + al[k, m] - dl)
                    G[h, m] = g * (1.0 - w)
                    G[h, k] += g * w
                    G[k, m] += g * w
                    gd -= g * w
                ah[h, m], al[h, m] = oh, ol
        # d_k = logsumexp of the remaining in-weights of k: normalised softmax shares
        top_h = NEG_INF
        for h in range(first, N):
            if alive[h] and ah[h, k] > top_h:
                top_h = ah[h, k]
        top = NEG_INF
        for h in range(first, N):
            if alive[h] and ah[h, k] > NEG_INF:
                top = max(top, (ah[h, k] - top_h) + al[h, k])
        total = 0.0
        for h in range(first, N):
            if alive[h] and ah[h, k] > NEG_INF:
                total += math.exp((ah[h, k] - top_h) + al[h, k] - top)
        for h in range(first, N):
            if alive[h] and ah[h, k] > NEG_INF:
                G[h, k] += gd * math.exp((ah[h, k] - top_h) + al[h, k] - top) / total
        alive[k] = True
    for h in range(N):
        for m in range(1, N):
            if h != m:
                marg[h, m] = min(max(G[h, m], 0.0), 1.0)
    return shift + (z_hi + z_lo), marg


# The probability-space matrix-tree theorem's linear algebra (used by tree.py) and its error bound


@helper
def _slogdet_inv(A):
    """(sign, log |det A|, A^-1) from one LU factorisation with partial pivoting (as LAPACK's getrf).

    Written out because numba's ``np.linalg.slogdet`` and ``inv`` cost about a second of
    compilation in a fresh install, more than the few loops here; the inverse is
    meaningless when the sign is 0 (a singular matrix).
    """
    n = A.shape[0]
    LU = A.copy()
    perm = np.empty(n, dtype=np.int64)
    for i in range(n):
        perm[i] = i
    sign, logdet = 1.0, 0.0
    for k in range(n):
        p = k
        for i in range(k + 1, n):
            if abs(LU[i, k]) > abs(LU[p, k]):
                p = i
        piv = LU[p, k]
        if piv == 0.0:
            return 0.0, NEG_INF, LU
        if p != k:
            for j in range(n):
                LU[k, j], LU[p, j] = LU[p, j], LU[k, j]
            perm[k], perm[p] = perm[p], perm[k]
            sign = -sign
        if piv < 0.0:
            sign = -sign
        logdet += math.log(abs(piv))
        for i in range(k + 1, n):
            f = LU[i, k] / piv
            LU[i, k] = f
            for j in range(k + 1, n):
                LU[i, j] -= f * LU[k, j]
    # A^-1 solves L U X = P: forward, then back substitution, a row at a time (vectorised over columns)
    inv = np.zeros((n, n))
    for i in range(n):
        inv[i, perm[i]] = 1.0
        for j in range(i):
            f = LU[i, j]
            if f != 0.0:
                for c in range(n):
                    inv[i, c] -= f * inv[j, c]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            f = LU[i, j]
            if f != 0.0:
                for c in range(n):
                    inv[i, c] -= f * inv[j, c]
        piv = LU[i, i]
        for c in range(n):
            inv[i, c] /= piv
    return sign, logdet, inv


@helper
def _inverse_error(L, B):
    """A bound on the error of the marginals ``A (B[m, m] - B[m, h])`` (``A <= 1``) from ``B = L^-1``:
    ``2 n eps cond_1(L) max |B|``, the normwise forward error of the inverse (about 1e3 times the
    error seen on random problems)."""
    n = L.shape[0]
    norm_l, norm_b, top = 0.0, 0.0, 0.0
    for c in range(n):
        col_l, col_b = 0.0, 0.0
        for r in range(n):
            col_l += abs(L[r, c])
            col_b += abs(B[r, c])
            top = max(top, abs(B[r, c]))
        norm_l = max(norm_l, col_l)
        norm_b = max(norm_b, col_b)
    return 2.0 * n * 2.220446049250313e-16 * norm_l * norm_b * top
