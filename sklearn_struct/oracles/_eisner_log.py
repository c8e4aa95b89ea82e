"""Projective tree marginals in log space (Eisner's chart) for scores of any magnitude.

The fallback of :mod:`sklearn_struct.oracles.tree`'s probability-space chart (used when ``Z``
falls below 1e-250 there). Inside-outside over Eisner's four charts of complete and incomplete
spans, with the outside pass as the reverse-mode derivative of the inside pass, on the scores
less their column maxima (the same distribution), and with log-weights in two parts as in
:mod:`sklearn_struct.oracles._tree_log` (``hi + lo``: exact ties at 1e300 keep their counts).
Every adjoint is passed on in softmax shares normalised by their own sum, so the marginals are
probabilities whatever the magnitudes. Single root: ``log Z = logsumexp_m (S[0, m] +
C_left[1, m] + C_right[m, n])`` over the root's only child ``m``.
"""

import math

import numpy as np

from ..utils._jit import helper
from ._tree_log import NEG_INF, _lae2, _shifted_scores, _split_parts


@helper
def _lse_split2(Xh, Xl, xs, Yh, Yl, yt, lo, hi, shift):
    """log sum_{r = lo}^{hi - 1} exp(X[xs, r] + Y[r + shift, yt]) on two-part charts."""
    zh, zl = NEG_INF, 0.0
    for r in range(lo, hi):
        vh = Xh[xs, r] + Yh[r + shift, yt]
        if vh > NEG_INF:
            zh, zl = _lae2(zh, zl, vh, Xl[xs, r] + Yl[r + shift, yt])
    return zh, zl


@helper
def _split_back2(Xh, Xl, xs, Yh, Yl, yt, lo, hi, shift, g, GX, GY):
    """Adjoint of :func:`_lse_split2`: ``g`` to its terms in softmax shares normalised by their sum."""
    top_h = NEG_INF
    for r in range(lo, hi):
        top_h = max(top_h, Xh[xs, r] + Yh[r + shift, yt])
    if top_h == NEG_INF:
        return
    top = NEG_INF
    for r in range(lo, hi):
        vh = Xh[xs, r] + Yh[r + shift, yt]
        if vh > NEG_INF:
            top = max(top, (vh - top_h) + (Xl[xs, r] + Yl[r + shift, yt]))
    acc = 0.0
    for r in range(lo, hi):
        vh = Xh[xs, r] + Yh[r + shift, yt]
        if vh > NEG_INF:
            acc += math.exp((vh - top_h) + (Xl[xs, r] + Yl[r + shift, yt]) - top)
    for r in range(lo, hi):
        vh = Xh[xs, r] + Yh[r + shift, yt]
        if vh > NEG_INF:
            w = g * math.exp((vh - top_h) + (Xl[xs, r] + Yl[r + shift, yt]) - top) / acc
            GX[xs, r] += w
            GY[r + shift, yt] += w


@helper
def _chart(N):
    """A two-part chart: -inf, with the empty spans [s, s] at 0 (for the complete charts)."""
    h = np.full((N, N), NEG_INF)
    for s in range(N):
        h[s, s] = 0.0
    return h, np.zeros((N, N))


@helper
def eisner_log(S, single_root):
    """(log Z, marginals) of projective trees by the log-space inside-outside chart."""
    N = S.shape[0]
    marg = np.zeros((N, N))
    a, shift, ok = _shifted_scores(S, single_root)
    if not ok:
        return NEG_INF, marg
    Sh, Sl = _split_parts(a)
    IRh, IRl = np.full((N, N), NEG_INF), np.zeros((N, N))
    ILh, ILl = np.full((N, N), NEG_INF), np.zeros((N, N))
    CRh, CRl = _chart(N)
    CLh, CLl = _chart(N)
    for width in range(1, N):
        for s in range(N - width):
            t = s + width
            ah, al = _lse_split2(CRh, CRl, s, CLh, CLl, t, s, t, 1)  # CR[s, r] + CL[r + 1, t]
            IRh[s, t], IRl[s, t] = Sh[s, t] + ah, Sl[s, t] + al
            if s > 0:  # nothing heads the root
                ILh[s, t], ILl[s, t] = Sh[t, s] + ah, Sl[t, s] + al
            CLh[s, t], CLl[s, t] = _lse_split2(CLh, CLl, s, ILh, ILl, t, s, t, 0)  # CL[s, r] + IL[r, t]
            CRh[s, t], CRl[s, t] = _lse_split2(IRh, IRl, s, CRh, CRl, t, s + 1, t + 1, 0)  # IR[s, r] + CR[r, t]
    gIR = np.zeros((N, N))
    gIL = np.zeros((N, N))
    gCR = np.zeros((N, N))
    gCL = np.zeros((N, N))
    if single_root:
        zh, zl = NEG_INF, 0.0
        top_h = NEG_INF
        for m in range(1, N):
            vh = Sh[0, m] + CLh[1, m] + CRh[m, N - 1]
            if vh > NEG_INF:
                zh, zl = _lae2(zh, zl, vh, Sl[0, m] + CLl[1, m] + CRl[m, N - 1])
                top_h = max(top_h, vh)
        if zh == NEG_INF:
            return NEG_INF, marg
        top = NEG_INF  # the root's child in normalised shares
        for m in range(1, N):
            vh = Sh[0, m] + CLh[1, m] + CRh[m, N - 1]
            if vh > NEG_INF:
                top = max(top, (vh - top_h) + (Sl[0, m] + CLl[1, m] + CRl[m, N - 1]))
        acc = 0.0
        for m in range(1, N):
            vh = Sh[0, m] + CLh[1, m] + CRh[m, N - 1]
            if vh > NEG_INF:
                acc += math.exp((vh - top_h) + (Sl[0, m] + CLl[1, m] + CRl[m, N - 1]) - top)
        for m in range(1, N):
            vh = Sh[0, m] + CLh[1, m] + CRh[m, N - 1]
            if vh > NEG_INF:
                w = math.exp((vh - top_h) + (Sl[0, m] + CLl[1, m] + CRl[m, N - 1]) - top) / acc
                marg[0, m] += w
                gCL[1, m] += w
                gCR[m, N - 1] += w
    else:
        zh, zl = CRh[0, N - 1], CRl[0, N - 1]
        if zh == NEG_INF:
            return NEG_INF, marg
        gCR[0, N - 1] = 1.0
    for width in range(N - 1, 0, -1):
        for s in range(N - width):
            t = s + width
            if gCR[s, t] != 0.0:
                _split_back2(IRh, IRl, s, CRh, CRl, t, s + 1, t + 1, 0, gCR[s, t], gIR, gCR)
            if gCL[s, t] != 0.0:
                _split_back2(CLh, CLl, s, ILh, ILl, t, s, t, 0, gCL[s, t], gCL, gIL)
            gr, gl = gIR[s, t], gIL[s, t]
            marg[s, t] += gr
            marg[t, s] += gl
            if gr != 0.0 or gl != 0.0:
                _split_back2(CRh, CRl, s, CLh, CLl, t, s, t, 1, gr + gl, gCR, gCL)
    for h in range(N):
        for m in range(1, N):
            marg[h, m] = min(max(marg[h, m], 0.0), 1.0)
    return shift + (zh + zl), marg
