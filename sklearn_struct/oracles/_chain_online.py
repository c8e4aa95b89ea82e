"""Per-sequence training kernels of the chain CRF: one epoch of SGD, perceptron, PA or AROW.

Every kernel walks the sequences in a given order and updates the parameters after each one,
so an epoch is one numba call (no Python per sequence or token). The parameters are one flat
vector laid out as the chain CRF's ``theta = (w, b, A)``: ``w[p]`` for the (attribute, label)
pairs ``p`` (``pair_ptr`` / ``pair_label``, labels sorted within an attribute, see
:mod:`sklearn_struct.oracles.linear`), the label bias ``b`` at ``n_w + l`` and the
transitions ``A[i, j]`` at ``n_w + L + i L + j``; ``trans_ok[i L + j]`` says which
transitions are features (the others stay 0), ``use_bias`` whether the bias is (else it stays 0). Features are the packed CSR rows
(``indptr``, ``indices``, ``data``) of all tokens; ``offsets`` mark the sequences.

Viterbi and forward-backward are those of :mod:`sklearn_struct.oracles.chain`, run on one
sequence's score buffer at a time.
"""

import numpy as np

from ..utils._jit import kernel
from .chain import _EDGE_SUM, _exp_shifted, _fb_chunk, _fb_log_chunk, _viterbi_chunk

ALGORITHMS = {"ap": 0, "pa": 1, "arow": 2}


@kernel
def _find_pair(pair_ptr, pair_label, f, label):
    """Index of the pair (f, label), or -1 if it is not a feature (binary search)."""
    lo, hi = pair_ptr[f], pair_ptr[f + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if pair_label[mid] < label:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < pair_ptr[f + 1] and pair_label[lo] == label else -1


@kernel
def sequence_scores(indptr, indices, data, pair_ptr, pair_label, theta, n_w, lo, hi, scale, out):
    """Unary scores of tokens lo:hi into out[:hi - lo]: ``b + scale * (x_t . w)``.

    Flat unsigned indexing, as in :mod:`sklearn_struct.oracles.linear`: numba then needs no
    negative-index guard in the scattered inner loop.
    """
    L = out.shape[1]
    flat = out.reshape(-1)
    for t in range(hi - lo):
        r = lo + t
        base = np.uint64(t) * np.uint64(L)
        for j in range(L):
            flat[base + np.uint64(j)] = theta[n_w + j]
        for k in range(indptr[r], indptr[r + 1]):
            f = indices[k]
            v = scale * data[k]
            for p in range(np.uint64(pair_ptr[f]), np.uint64(pair_ptr[f + 1])):
                flat[base + np.uint64(pair_label[p])] += v * theta[p]


@kernel
def _add(delta, mark, stamp, actives, n_act, idx, value):
    """delta[idx] += value, listing idx in actives the first time it is touched under this stamp."""
    if mark[idx] != stamp:
        mark[idx] = stamp
        delta[idx] = 0.0
        actives[n_act] = idx
        n_act += 1
    delta[idx] += value
    return n_act


@kernel
def _add_state(indptr, indices, data, pair_ptr, pair_label, n_w, use_bias, r, label, c, delta, mark, stamp, actives,
               n_act):
    """Add ``c`` times the state features of token r with ``label`` (and its bias) to delta."""
    for k in range(indptr[r], indptr[r + 1]):
        p = _find_pair(pair_ptr, pair_label, indices[k], label)
        if p >= 0:
            n_act = _add(delta, mark, stamp, actives, n_act, p, c * data[k])
    if use_bias:
        n_act = _add(delta, mark, stamp, actives, n_act, n_w + label, c)
    return n_act


@kernel
def collect_difference(indptr, indices, data, pair_ptr, pair_label, n_w, trans_ok, use_bias, lo, gold, pred, delta,
                       mark, stamp, actives):
    """Add ``phi(x, gold) - phi(x, pred)`` (tokens lo:lo+len) to delta; returns the number of actives.

    Only the tokens and label bigrams where the two paths differ are visited: the others'
    features cancel. (Most tokens of a mislabelled sequence are right, so this skips most of
    the binary searches of the weights.)
    """
    L = int(np.sqrt(trans_ok.shape[0]))
    n_act = 0
    for t in range(gold.shape[0]):
        if gold[t] != pred[t]:
            for label, c in ((gold[t], 1.0), (pred[t], -1.0)):
                n_act = _add_state(indptr, indices, data, pair_ptr, pair_label, n_w, use_bias, lo + t, label, c,
                                   delta, mark, stamp, actives, n_act)
        if t > 0 and (gold[t - 1] != pred[t - 1] or gold[t] != pred[t]):
            q, qp = gold[t - 1] * L + gold[t], pred[t - 1] * L + pred[t]
            if trans_ok[q]:
                n_act = _add(delta, mark, stamp, actives, n_act, n_w + L + q, 1.0)
            if trans_ok[qp]:
                n_act = _add(delta, mark, stamp, actives, n_act, n_w + L + qp, -1.0)
    return n_act


@kernel
def _path_score(unary, trans, labels):
    total = 0.0
    for t in range(labels.shape[0]):
        total += unary[t, labels[t]]
        if t > 0:
            total += trans[labels[t - 1], labels[t]]
    return total


@kernel
def _max_len(offsets):
    m = 1
    for s in range(offsets.shape[0] - 1):
        m = max(m, offsets[s + 1] - offsets[s])
    return m


@kernel
def _step_size(algo, cost, d, delta, actives, n_act, cov, pa_type, pa_c, gamma):
    """The update's step: 1 (perceptron), PA's tau (type 0/1/2) or AROW's alpha; 0 skips it."""
    if algo == 0:
        return 1.0
    norm = gamma if algo == 2 else 0.0
    for a in range(n_act):
        k = actives[a]
        norm += delta[k] * delta[k] * (cov[k] if algo == 2 else 1.0)
    if norm <= 0.0:  # the two paths have the same features: nothing to move
        return 0.0
    if algo == 2 or pa_type == 0:
        return cost / norm
    if pa_type == 1:
        return min(pa_c, cost / norm)
    return cost / (norm + 0.5 / pa_c)


@kernel
def online_epoch(algo, indptr, indices, data, pair_ptr, pair_label, n_w, trans_ok, use_bias, offsets, y, sw, order,
                 w, ws, cov, u, pa_type, pa_c, error_sensitive, gamma):
    """One epoch of the averaged perceptron (algo 0), passive-aggressive (1) or AROW (2).

    For each sequence in ``order``: Viterbi under ``w``; if ``d > 0`` labels are wrong,
    ``delta = phi(gold) - phi(viterbi)`` and

    * perceptron: ``w += delta``; loss ``d / n``;
    * PA: cost ``s(viterbi) - s(gold) + sqrt(d)`` (``+ 1`` unless error_sensitive), tau by
      ``pa_type`` (``cost / |delta|^2``, capped at ``pa_c``, or ``cost / (|delta|^2 + 1 / (2 pa_c))``),
      ``w += tau delta``; loss the cost;
    * AROW: cost ``s(viterbi) - s(gold) + d``, ``alpha = cost / (gamma + sum_k delta_k^2 cov_k)``,
      ``w_k += alpha cov_k delta_k``, ``1 / cov_k += delta_k^2 / gamma``; loss the cost.

    Perceptron and PA also add ``step * u * delta`` to ``ws`` (``u`` counts the sequences
    seen, from 1), so that ``w - ws / u`` is the average of all the weight vectors visited.

    ``sw[s]`` weighs sequence s (1 everywhere: the plain algorithms; 0 skips it): the
    perceptron's step is ``sw``; PA's ``c`` becomes ``sw * c`` (types 1, 2) and its type-0
    step is multiplied by ``sw``; AROW's ``gamma`` becomes ``gamma / sw`` (in ``alpha`` and in
    the covariance update, as if the sequence were seen ``sw`` times at once). The loss
    adds ``sw`` times each sequence's cost.
    Returns ``(loss, u)``.
    """
    L = int(np.sqrt(trans_ok.shape[0]))
    max_len = _max_len(offsets)
    unary = np.empty((max_len, L))
    pred = np.empty(max_len, dtype=np.int64)
    score = np.empty(1)
    local = np.zeros(2, dtype=np.int64)
    delta = np.zeros(w.shape[0])
    mark = np.full(w.shape[0], -1, dtype=np.int64)
    max_nnz = 0
    for s in range(offsets.shape[0] - 1):
        max_nnz = max(max_nnz, indptr[offsets[s + 1]] - indptr[offsets[s]])
    actives = np.empty(2 * (max_nnz + 2 * max_len), dtype=np.int64)
    trans = w[n_w + L :].reshape((1, L, L))
    loss = 0.0
    for i in range(order.shape[0]):
        s = order[i]
        lo, hi = offsets[s], offsets[s + 1]
        n = hi - lo
        gold = y[lo:hi]
        sequence_scores(indptr, indices, data, pair_ptr, pair_label, w, n_w, lo, hi, 1.0, unary)
        local[1] = n
        _viterbi_chunk(unary, trans, False, local, 0, 1, pred, score)
        d = 0
        for t in range(n):
            d += pred[t] != gold[t]
        weight = sw[s]
        if d > 0 and weight > 0.0:
            margin = score[0] - _path_score(unary, trans[0], gold)
            n_act = collect_difference(indptr, indices, data, pair_ptr, pair_label, n_w, trans_ok, use_bias, lo, gold,
                                       pred[:n], delta, mark, i, actives)
            if algo == 0:
                cost = d / n
            elif algo == 1:
                cost = margin + (np.sqrt(d) if error_sensitive else 1.0)
            else:
                cost = margin + d
            g = gamma / weight
            step = _step_size(algo, cost, d, delta, actives, n_act, cov, pa_type, pa_c * weight, g)
            if algo == 0 or (algo == 1 and pa_type == 0):
                step *= weight
            for a in range(n_act):
                k = actives[a]
                if algo == 2:
                    w[k] += step * cov[k] * delta[k]
                    cov[k] = cov[k] * g / (g + delta[k] * delta[k] * cov[k])  # 1/cov += d^2/g, no overflow
                else:
                    w[k] += step * delta[k]
                    ws[k] += step * u * delta[k]
            loss += weight * cost
        u += 1
    return loss, u


@kernel
def sgd_epoch(indptr, indices, data, pair_ptr, pair_label, n_w, trans_ok, use_bias, offsets, y, sw, order, theta, lam,
              t0, t):
    """One epoch of L2-regularised SGD on the CRF likelihood, Pegasos-style (Shalev-Shwartz et al. 2007).

    Step ``t`` (counted over all epochs) uses ``eta = 1 / (lam (t0 + t))`` on the loss
    ``-log P(y_s | x_s) + lam / 2 |w|^2``: the weights shrink by ``1 - eta lam`` and move by
    ``eta`` times the negative gradient of the log-loss. The shrinking is kept as one scale
    factor (the penalised weights are ``decay * theta``), so a step touches only the
    features of its sequence; the bias is not penalised (not scaled). On return ``theta``
    holds the actual weights. ``sw[s]`` weighs sequence s: its log-loss gradient step is
    multiplied by ``sw[s]`` (the shrinking is not: the penalty is per step). Returns
    ``(sum of the sequences' weighted log-losses, t)``, each log-loss taken before its own update.
    """
    L = int(np.sqrt(trans_ok.shape[0]))
    max_len = _max_len(offsets)
    unary = np.empty((max_len, L))
    node = np.empty((max_len, L))
    no_exp = np.empty((0, L))
    no_edges = np.empty((0, L, L))
    trans = np.empty((1, L, L))
    exp_trans = np.empty((L, L))
    outer = np.zeros((L, L))
    direct = np.zeros((L, L))
    log_z = np.empty(1)
    failed = np.empty(1, dtype=np.bool_)
    first = np.zeros(1, dtype=np.int64)
    local = np.zeros(2, dtype=np.int64)
    decay = 1.0
    loss = 0.0
    for i in range(order.shape[0]):
        s = order[i]
        lo, hi = offsets[s], offsets[s + 1]
        n = hi - lo
        eta = 1.0 / (lam * (t0 + t))
        shrink = 1.0 - eta * lam
        if decay * shrink < 1e-100:  # a zeroing (t0 + t = 1) or underflowing shrink: fold it in now
            _scale_penalised(theta, n_w, L, decay * shrink)
            decay = 1.0
        else:
            decay *= shrink
        gain = eta / decay
        weight = sw[s]
        sequence_scores(indptr, indices, data, pair_ptr, pair_label, theta, n_w, lo, hi, decay, unary)
        for q in range(L * L):
            trans[0, q // L, q % L] = decay * theta[n_w + L + q]
        shift = _exp_shifted(trans[0], exp_trans)
        local[1] = n
        outer[:, :] = 0.0
        direct[:, :] = 0.0
        _fb_chunk(unary, no_exp, trans, False, local, 0, 1, _EDGE_SUM, exp_trans, shift, node, no_edges, outer,
                  direct, log_z, failed)
        if failed[0]:  # huge scores: the exact log-space pass
            _fb_log_chunk(unary, trans, False, local, first, _EDGE_SUM, node, no_edges, direct, log_z)
        loss += weight * (log_z[0] - _path_score(unary, trans[0], y[lo:hi]))
        for t_ in range(n):  # node gradient: observed minus expected
            r, yt = lo + t_, y[lo + t_]
            node[t_, yt] -= 1.0
            for k in range(indptr[r], indptr[r + 1]):
                v = weight * gain * data[k]
                f = indices[k]
                for p in range(pair_ptr[f], pair_ptr[f + 1]):
                    theta[p] -= v * node[t_, pair_label[p]]
            for j in range(L if use_bias else 0):
                theta[n_w + j] -= weight * eta * node[t_, j]
            if t_ > 0:
                direct[y[r - 1], yt] -= 1.0
        for q in range(L * L):
            if trans_ok[q]:
                i_, j_ = q // L, q % L
                theta[n_w + L + q] -= weight * gain * (outer[i_, j_] * exp_trans[i_, j_] + direct[i_, j_])
        t += 1.0
        if decay < 1e-100:  # fold the scale into the weights before it underflows
            _scale_penalised(theta, n_w, L, decay)
            decay = 1.0
    _scale_penalised(theta, n_w, L, decay)
    return loss, t


@kernel
def _scale_penalised(theta, n_w, L, factor):
    for k in range(theta.shape[0]):
        if not n_w <= k < n_w + L:
            theta[k] *= factor
