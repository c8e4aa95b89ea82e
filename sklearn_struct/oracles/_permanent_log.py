"""Exact log-permanent and matching marginals in log space, without subtraction.

Ryser's formula (:mod:`sklearn_struct.oracles.matching`) is an alternating sum: once the weights
span more than float64 holds (scores of ~1e5 on four rows already), its terms cancel to zero or
a negative total and the marginals to NaN. This module is the fallback: the dynamic programme
over the sets of columns taken by the first rows, ``f[S] = logsumexp_{j in S} f[S - j] +
logA[|S| - 1, j]`` forward and its mirror ``g`` backward (the rows still to place), both sums of
positive terms. The marginal of ``(i, j)`` gathers ``f[S] + logA[i, j] + g[S + j]`` over the sets
``S`` of ``i`` columns without ``j``, normalised per row by its own sum (every row's entries add
up to the permanent), so the marginals stay probabilities at any magnitude: at 1e297 they are
the best matching's indicator, as the exact distribution is.

Cost: O(2^n n) log-sum-exp terms and two arrays of 2^n floats (n <= 20: 16 MB).
"""

import math

import numpy as np

from ..utils._jit import kernel

NEG_INF = -np.inf


@kernel
def log_permanent_dp(logA, want_grad):
    """(log perm(exp(logA)), marginals) of a square log-matrix by the subset DP."""
    n = logA.shape[0]
    full = (1 << n) - 1
    f = np.full(1 << n, NEG_INF)
    f[0] = 0.0
    size = np.zeros(1 << n, dtype=np.int64)
    for S in range(1, full + 1):
        size[S] = size[S & (S - 1)] + 1
        i = size[S] - 1  # the row placed last
        top = NEG_INF
        for j in range(n):
            if (S >> j) & 1:
                top = max(top, f[S ^ (1 << j)] + logA[i, j])
        if top == NEG_INF:
            continue
        acc = 0.0
        for j in range(n):
            if (S >> j) & 1:
                acc += math.exp(f[S ^ (1 << j)] + logA[i, j] - top)
        f[S] = top + math.log(acc)
    log_z = f[full]
    marg = np.zeros((n, n))
    if not want_grad or log_z == NEG_INF:
        return log_z, marg
    g = np.full(1 << n, NEG_INF)
    g[full] = 0.0
    for S in range(full - 1, -1, -1):
        i = size[S]  # the next row to place
        top = NEG_INF
        for j in range(n):
            if not (S >> j) & 1:
                top = max(top, logA[i, j] + g[S | (1 << j)])
        if top == NEG_INF:
            continue
        acc = 0.0
        for j in range(n):
            if not (S >> j) & 1:
                acc += math.exp(logA[i, j] + g[S | (1 << j)] - top)
        g[S] = top + math.log(acc)
    row_top = np.full(n, NEG_INF)  # per row: the largest term, then the terms' shares
    for S in range(full):
        if f[S] == NEG_INF:
            continue
        i = size[S]
        for j in range(n):
            if not (S >> j) & 1:
                row_top[i] = max(row_top[i], f[S] + logA[i, j] + g[S | (1 << j)])
    for S in range(full):
        if f[S] == NEG_INF:
            continue
        i = size[S]
        for j in range(n):
            if not (S >> j) & 1:
                v = f[S] + logA[i, j] + g[S | (1 << j)]
                if v > NEG_INF:
                    marg[i, j] += math.exp(v - row_top[i])
    for i in range(n):
        total = 0.0
        for j in range(n):
            total += marg[i, j]
        for j in range(n):
            marg[i, j] = min(max(marg[i, j] / total, 0.0), 1.0)
    return log_z, marg
