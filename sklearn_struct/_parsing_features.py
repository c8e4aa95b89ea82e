"""Hashed sparse features of dependency links and of grandparent / sibling link pairs (numba).

A sentence is two int arrays over nodes ``0..n`` (0 is the root): word ids and POS ids (the root
has its own ids). Every template instance is hashed into ``2**n_bits`` weights; a link's score is
the sum of the weights of its features, and a gradient step adds ``coef`` to the same weights.

First-order link templates (McDonald, Crammer & Pereira 2005), each with and without the
direction + distance bucket ``ad``: head / modifier word and POS, their pairs, POS of the words
around head and modifier, and one ``(head POS, in-between POS, modifier POS)`` feature per word in
between (its value is the count). Grandparent ``(g, h, m)``: POS triple, with directions, and the
grandparent-modifier pairs; sibling ``(h, m, s)``: POS triple with direction, the sibling POS pair
with direction and distance, and word-POS pairs of the siblings.
"""

import numpy as np
from numba import njit

from .utils._jit import helper, kernel

_MIX1 = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)
_MIX3 = np.uint64(0x94D049BB133111EB)
N_LINK_TEMPLATES = 26  # upper bound of first-order feature instances per link, besides in-between ones


@helper
def _mix(h, v):
    x = (h ^ np.uint64(v)) * _MIX1
    x = (x ^ (x >> np.uint64(30))) * _MIX2
    x = (x ^ (x >> np.uint64(27))) * _MIX3
    return x ^ (x >> np.uint64(31))


@helper
def _h(mask, t, a, b, c, d):
    x = _mix(np.uint64(t + 1), a)
    x = _mix(x, b)
    x = _mix(x, c)
    x = _mix(x, d)
    return np.int64(x & mask)


@helper
def _bucket(d):
    if d <= 5:
        return d
    if d <= 10:
        return 6
    return 7


@njit(cache=True, nogil=True, inline="always")
def _link_features(words, pos, h, m, mask, out):
    """Write the feature ids of link (h, m) into out; return how many (in-between ones last)."""
    n = words.shape[0]
    ad = (1 if h < m else 0) * 8 + _bucket(abs(h - m))
    hw, hp, mw, mp = words[h], pos[h], words[m], pos[m]
    hp1 = pos[h + 1] if h + 1 < n else -1
    hm1 = pos[h - 1] if h > 0 else -1
    mp1 = pos[m + 1] if m + 1 < n else -1
    mm1 = pos[m - 1] if m > 0 else -1
    k = 0
    for with_ad in range(2):
        a = ad if with_ad else -7
        base = 13 * with_ad
        out[k] = _h(mask, base + 0, hp, mp, a, 0)
        out[k + 1] = _h(mask, base + 1, hw, mp, a, 0)
        out[k + 2] = _h(mask, base + 2, hp, mw, a, 0)
        out[k + 3] = _h(mask, base + 3, hw, mw, a, 0)
        out[k + 4] = _h(mask, base + 4, hw, hp, a, 0)
        out[k + 5] = _h(mask, base + 5, mw, mp, a, 0)
        out[k + 6] = _h(mask, base + 6, hp, a, 0, 0)
        out[k + 7] = _h(mask, base + 7, mp, a, 0, 0)
        out[k + 8] = _h(mask, base + 8, hp, hp1, mm1, mp * 64 + a)
        out[k + 9] = _h(mask, base + 9, hm1, hp, mp, mp1 * 64 + a)
        out[k + 10] = _h(mask, base + 10, hp, hp1, mp, mp1 * 64 + a)
        out[k + 11] = _h(mask, base + 11, hm1, hp, mm1, mp * 64 + a)
        out[k + 12] = _h(mask, base + 12, hw, hp, mw, mp * 64 + a)
        k += 13
    lo, hi = min(h, m), max(h, m)
    for b in range(lo + 1, hi):
        out[k] = _h(mask, 40, hp, pos[b], mp, ad)
        k += 1
    return k


# Scoring and the gradient step share one kernel per factor type (the gradient when ``coef`` is
# not empty): numba compiles a kernel's inlined feature code once, and each costs most of a second
# in a fresh install.
_NO_COEF_2D = np.zeros((0, 0))
_NO_COEF_1D = np.zeros(0)


@njit(cache=True, nogil=True, inline="always")
def _sum_of(w, ids, k):
    """Sum of the weights of the first ``k`` feature ids."""
    s = 0.0
    for j in range(k):
        s += w[ids[j]]
    return s


@njit(cache=True, nogil=True, inline="always")
def _add_to(w, ids, k, value):
    """Add ``value`` to the weights of the first ``k`` feature ids."""
    for j in range(k):
        w[ids[j]] += value


@kernel
def _link_pass(words, pos, w, mask, coef, scale, U):
    """U[h, m] = score of link (h, m), or (``coef`` not empty) w[f] += scale * coef[h, m] for its features."""
    N = words.shape[0]
    gradient = coef.shape[0] > 0
    buf = np.empty(N_LINK_TEMPLATES + N, dtype=np.int64)
    for h in range(N):
        for m in range(1, N):
            if h == m or (gradient and coef[h, m] == 0.0):
                continue
            k = _link_features(words, pos, h, m, mask, buf)
            if gradient:
                _add_to(w, buf, k, scale * coef[h, m])
            else:
                U[h, m] = _sum_of(w, buf, k)


def link_scores(words, pos, w, mask):
    """U[h, m] = sum of the weights of link (h, m)'s features (0 on the diagonal and in column 0)."""
    N = words.shape[0]
    U = np.zeros((N, N))
    _link_pass(words, pos, w, mask, _NO_COEF_2D, 0.0, U)
    return U


def add_link_gradient(words, pos, coef, w, mask, scale):
    """w[f] += scale * coef[h, m] for every feature f of every link (h, m) with coef != 0."""
    _link_pass(words, pos, w, mask, coef, float(scale), _NO_COEF_2D)


@njit(cache=True, nogil=True, inline="always")
def _pair_features(words, pos, p, mask, out):
    """Feature ids of the pairwise factor (h_a, m_a, h_b, m_b): grandparent if m_a == h_b, else sibling."""
    ha, ma, hb, mb = p[0], p[1], p[2], p[3]
    if ma == hb:  # grandparent g = ha, h = ma, m = mb
        g, h, m = ha, ma, mb
        d = (1 if g < h else 0) * 2 + (1 if h < m else 0)
        out[0] = _h(mask, 50, pos[g], pos[h], pos[m], 0)
        out[1] = _h(mask, 51, pos[g], pos[h], pos[m], d)
        out[2] = _h(mask, 52, pos[g], pos[m], d, 0)
        out[3] = _h(mask, 53, words[g], pos[m], d, 0)
        out[4] = _h(mask, 54, pos[g], words[m], d, 0)
        return 5
    h, m, s = ha, ma, mb  # siblings m < s of h, same side
    d = 1 if h < m else 0
    out[0] = _h(mask, 60, pos[h], pos[m], pos[s], d)
    out[1] = _h(mask, 61, pos[m], pos[s], d, _bucket(s - m))
    out[2] = _h(mask, 62, words[m], pos[s], d, 0)
    out[3] = _h(mask, 63, pos[m], words[s], d, 0)
    out[4] = _h(mask, 64, pos[h], pos[m], pos[s], d * 16 + _bucket(s - m))
    return 5


@kernel
def _pair_pass(words, pos, pairs, w, mask, coef, scale, out):
    """out[f] = score of pair factor f, or (``coef`` not empty) w[g] += scale * coef[f] for its features."""
    gradient = coef.shape[0] > 0
    buf = np.empty(8, dtype=np.int64)
    for f in range(pairs.shape[0]):
        if gradient and coef[f] == 0.0:
            continue
        k = _pair_features(words, pos, pairs[f], mask, buf)
        if gradient:
            _add_to(w, buf, k, scale * coef[f])
        else:
            out[f] = _sum_of(w, buf, k)


def pair_scores(words, pos, pairs, w, mask):
    """Score of each pair factor (grandparent or sibling) of ``pairs``."""
    out = np.empty(pairs.shape[0])
    _pair_pass(words, pos, pairs, w, mask, _NO_COEF_1D, 0.0, out)
    return out


def add_pair_gradient(words, pos, pairs, coef, w, mask, scale):
    """w[g] += scale * coef[f] for every feature g of every pair factor f with coef != 0."""
    _pair_pass(words, pos, pairs, w, mask, coef, float(scale), _NO_COEF_1D)
