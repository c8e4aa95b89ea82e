"""Loopy BP over the link variables of one sentence with a spanning-tree factor and pairwise link factors.

The model (Smith & Eisner 2008) has one binary variable ``z[h, m]`` per candidate link of a sentence
with nodes ``0..n`` (0 is the root), and::

    p(z) ∝ TREE(z) * exp( sum_links U[h, m] z[h, m] + sum_f theta_f z[a_f] z[b_f] )

where ``TREE`` is 1 if the links form a dependency tree (projective or not, one root child or
several; see :mod:`sklearn_struct.oracles.tree`) and each pairwise factor ``f`` couples two links,
e.g. a grandparent ``(g, h), (h, m)`` or siblings ``(h, m), (h, s)``: ``Psi_f = exp(theta_f phi_f)``
with ``phi_f = z_a z_b``, the binary factors of Riedel, Smith & McCallum.

Messages are log-odds (``log m(1) - log m(0)``), so a variable's belief is the sum of its unary and
incoming log-odds. A pairwise factor's message to ``b`` from the cavity log-odds ``x_a`` of ``a`` is
``softplus(x_a + theta) - softplus(x_a)``; the tree factor's messages come from the tree marginals
under the cavity log-odds of all links (one O(n^3) pass, :func:`~sklearn_struct.oracles.tree.tree_messages`).

Schedule: the tree factor's messages are initialised from the unary log-odds (the exact seed of
the unary + tree model: no pairwise factor has spoken yet); then each iteration updates the
pairwise factors one after another (each from the current beliefs, in place) and then the tree
factor, and stops after ``max_iter`` iterations (10 in the paper) or when no link marginal
changed by more than ``tol`` (in probability; log-odds of links that are all but impossible keep
moving without changing anything). With no pairwise factors the initial tree messages already give the exact
marginals of the first-order model (0 iterations).
"""

import math
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.special import expit

from ..utils._jit import helper, kernel
from ..utils.validation import check_float_array, check_scalar_param
from .tree import _tree_messages, belief_log_odds, check_link_scores

MAX_PAIR_SCORE = 1e6

__all__ = ["LinkBPResult", "link_bp", "grandparent_pairs", "sibling_pairs", "pair_gains", "check_pairs"]


@dataclass
class LinkBPResult:
    """Output of :func:`link_bp`.

    Attributes
    ----------
    link_marginals : ndarray of shape (n + 1, n + 1)
        Beliefs ``P(z[h, m] = 1)`` (0 on the diagonal and in column 0).
    pair_marginals : ndarray of shape (n_pairs,) or None
        Factor beliefs ``P(z_a = 1, z_b = 1)`` (None if not asked for).
    log_odds : ndarray of shape (n + 1, n + 1)
        Belief log-odds.
    tree_log_z : float
        Log partition function of the tree factor under its incoming messages (the exact log Z of
        the first-order model when there are no pairwise factors).
    n_iter : int
    converged : bool
    max_delta : float
        Largest change of a link marginal in the last iteration.
    n_message_updates : int
        Messages sent: two per pairwise factor and ``n^2`` from the tree factor per iteration.
    """

    link_marginals: np.ndarray
    pair_marginals: np.ndarray
    log_odds: np.ndarray
    tree_log_z: float
    n_iter: int
    converged: bool
    max_delta: float
    n_message_updates: int


@helper
def _softplus(x):
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@helper
def _sigmoid(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit(cache=True, nogil=True, inline="always")
def _link_bp(U, pa, pb, theta, projective, single_root, max_iter, tol, B0, msg_a, msg_b, log_fallback):
    """Run BP from beliefs ``B0`` (in place on msg_a, msg_b); return (belief log-odds, log Z tree, n_iter,
    delta, T', mu).

    ``B0 = U + T`` are the link beliefs under the initial tree messages ``T`` (the seed's own
    beliefs when BP starts from the seed). A belief is kept as the tree factor's belief ``Lb``
    at its last update plus the change of the pairwise messages ``P`` since then, never as
    ``U + T + P``: with a unary of -1e300 the tree message is +1e300 and their sum would round
    the belief away. The tree factor's cavity is ``U + P``.

    ``T'`` and ``mu`` are the tree factor's last outgoing messages and marginals: with no pairwise
    factor, ``max_iter`` 0 and ``B0 = U``, the seed (see :func:`seed_tree_messages`). n_iter is -1
    when the tree factor failed in probability space without ``log_fallback`` (see
    :func:`~sklearn_struct.oracles.tree._tree_messages`): the caller runs again with it.
    """
    N = U.shape[0]
    F = pa.shape[0]
    Lb = np.zeros(N * N)
    P = np.zeros(N * N)  # sum of the pairwise messages into each link
    Pt = np.zeros(N * N)  # ... when the tree factor last spoke
    for h in range(N):
        for m in range(1, N):
            if h != m:
                Lb[h * N + m] = B0[h, m]
    for f in range(F):
        P[pa[f]] += msg_a[f]
        P[pb[f]] += msg_b[f]
    X = np.zeros((N, N))
    newT = np.zeros((N, N))
    prev = np.empty(N * N)
    for k in range(N * N):
        prev[k] = _sigmoid(Lb[k] + P[k])
    # Without iterations (no pairs, or max_iter 0) the tree still gives log Z under the
    # unchanged cavity odds. One call site of the tree factor: it is inlined (see below).
    iterate = max_iter > 0 and F > 0
    delta = 0.0 if F == 0 and max_iter > 0 else np.inf
    n_iter = 0
    while True:
        if iterate:
            for f in range(F):
                a, b = pa[f], pb[f]
                t = min(max(theta[f], -MAX_PAIR_SCORE), MAX_PAIR_SCORE)
                xa = Lb[a] + (P[a] - Pt[a]) - msg_a[f]
                xb = Lb[b] + (P[b] - Pt[b]) - msg_b[f]
                na = _softplus(xb + t) - _softplus(xb)
                nb = _softplus(xa + t) - _softplus(xa)
                P[a] += na - msg_a[f]
                P[b] += nb - msg_b[f]
                msg_a[f] = na
                msg_b[f] = nb
        for h in range(N):
            for m in range(1, N):
                if h != m:
                    X[h, m] = U[h, m] + P[h * N + m]
        log_z, marg = _tree_messages(X, projective, single_root, newT, log_fallback)
        if not log_fallback and np.isnan(log_z):
            return Lb, log_z, -1, delta, newT, marg
        if F > 0 and not iterate:  # no iteration: the beliefs stay those of the initial messages
            break
        for h in range(N):
            for m in range(1, N):
                if h != m:
                    k = h * N + m
                    Lb[k] = belief_log_odds(marg[h, m], X[h, m])
                    Pt[k] = P[k]
        if not iterate:
            break
        delta = 0.0
        for k in range(N * N):
            p = _sigmoid(Lb[k])
            delta = max(delta, abs(p - prev[k]))
            prev[k] = p
        n_iter += 1
        if delta <= tol or n_iter == max_iter:
            break
    for k in range(N * N):
        Lb[k] += P[k] - Pt[k]
    return Lb, log_z, n_iter, delta, newT, marg


# One entry point per tree algorithm, so that a model compiles only the one it uses (each costs
# seconds in a fresh install): ``_link_bp`` and ``_tree_messages`` are inlined here, where
# ``projective`` and ``log_fallback`` are constants, and numba prunes the other branches before
# compiling. The projective log-space chart (``_link_bp_projective_log``) is compiled only when a
# sentence's probability-space chart fails.
@kernel
def _link_bp_projective(U, pa, pb, theta, single_root, max_iter, tol, T, msg_a, msg_b):
    return _link_bp(U, pa, pb, theta, True, single_root, max_iter, tol, T, msg_a, msg_b, False)


@kernel
def _link_bp_projective_log(U, pa, pb, theta, single_root, max_iter, tol, T, msg_a, msg_b):
    return _link_bp(U, pa, pb, theta, True, single_root, max_iter, tol, T, msg_a, msg_b, True)


@kernel
def _link_bp_nonprojective(U, pa, pb, theta, single_root, max_iter, tol, T, msg_a, msg_b):
    return _link_bp(U, pa, pb, theta, False, single_root, max_iter, tol, T, msg_a, msg_b, False)


@kernel
def _link_bp_nonprojective_log(U, pa, pb, theta, single_root, max_iter, tol, T, msg_a, msg_b):
    return _link_bp(U, pa, pb, theta, False, single_root, max_iter, tol, T, msg_a, msg_b, True)


def _run_link_bp(U, pa, pb, theta, projective, single_root, max_iter, tol, B0, msg_a, msg_b):
    """The BP kernel of the tree variant on checked arrays (see ``_link_bp``); the log-space rerun if needed."""
    args = tuple(np.ascontiguousarray(a) for a in (U, pa, pb, theta))
    args += (bool(single_root), int(max_iter), float(tol), np.ascontiguousarray(B0, dtype=np.float64))
    fast, robust = ((_link_bp_projective, _link_bp_projective_log) if projective
                    else (_link_bp_nonprojective, _link_bp_nonprojective_log))
    out = fast(*args, msg_a, msg_b)
    if out[2] < 0:  # the tree factor failed in probability space: again from the start, in log space
        msg_a[:], msg_b[:] = 0.0, 0.0
        out = robust(*args, msg_a, msg_b)
    return out


def _normalised_unary(U, single_root):
    """``U`` less its column maxima (and, for one root, the root row less its maximum): (U', shift, total).

    The same distribution, with or without pairwise factors: every tree has one head per word
    (and one root link), so the shift adds the same ``total`` to every tree's score. BP then works
    on log-odds near 0 whatever the magnitude of ``U`` (1e308 everywhere is all zeros), and a
    large common offset cannot swamp the messages added to it. ``shift[h, m]`` is what was taken
    from ``U[h, m]``.
    """
    N = U.shape[0]
    S = U.astype(np.float64, copy=True)
    S[:, 0] = -np.inf
    np.fill_diagonal(S, -np.inf)
    col = S.max(axis=0)
    col[~np.isfinite(col)] = 0.0  # column 0, or a word with no possible head
    shift = np.broadcast_to(col, (N, N)).copy()
    root = 0.0
    if single_root and N > 1:
        root_row = S[0, 1:] - col[1:]
        root = float(root_row.max()) if np.isfinite(root_row).any() else 0.0
        shift[0, 1:] += root
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.where(np.isneginf(U), -np.inf, U - shift)
        total = float(col[1:].sum() + root)
    return np.ascontiguousarray(out), shift, total


def _check_pair_scores(pair_scores, name="pair_scores"):
    """Validate pairwise factor scores: finite, of magnitude at most ``MAX_PAIR_SCORE`` (1e6).

    BP adds the factors' messages (up to ``|theta|`` each) to link log-odds in float64; beyond
    1e6 the sums would round away the beliefs they are added to. A factor ``exp(1e6 z_a z_b)``
    already decides its links whenever it can, so larger scores say nothing more.
    """
    theta = check_float_array(pair_scores, name).reshape(-1)
    big = np.flatnonzero(np.abs(theta) > MAX_PAIR_SCORE)
    if big.size:
        f = int(big[0])
        raise ValueError(f"{name}[{f}] = {theta[f]:g} is beyond ±{MAX_PAIR_SCORE:g}, the largest pairwise score BP "
                         f"keeps exact in float64 log-odds (a factor exp(1e6 z_a z_b) is already hard); scale the "
                         f"scores down.")
    return theta


@kernel
def _link_indices(pairs, N):
    """Flat indices ``h * N + m`` of the two links of every pair (one pass, no temporaries)."""
    pa = np.empty(pairs.shape[0], dtype=np.int64)
    pb = np.empty(pairs.shape[0], dtype=np.int64)
    for f in range(pairs.shape[0]):
        pa[f] = pairs[f, 0] * N + pairs[f, 1]
        pb[f] = pairs[f, 2] * N + pairs[f, 3]
    return pa, pb


def _pair_beliefs(B, pa, pb, theta, msg_a, msg_b):
    """P(z_a = 1, z_b = 1) of every pairwise factor's belief (NumPy: one call per sentence)."""
    xa = B[pa] - msg_a
    xb = B[pb] - msg_b
    s = np.clip(theta, -MAX_PAIR_SCORE, MAX_PAIR_SCORE) + xa + xb  # as the kernel does
    top = np.maximum(np.maximum(0.0, xa), np.maximum(xb, s))
    return np.exp(s - top) / (np.exp(-top) + np.exp(xa - top) + np.exp(xb - top) + np.exp(s - top))


def _marginals_from_log_odds(B, N):
    """Link marginals ``sigmoid(B)`` as an (N, N) matrix, zero on the diagonal and in column 0."""
    out = expit(B).reshape(N, N)
    out[:, 0] = 0.0
    np.fill_diagonal(out, 0.0)
    return out


def seed_tree_messages(unary, projective=False, single_root=True):
    """Tree-factor messages and exact link marginals of the first-order (unary + tree) model.

    Returns
    -------
    messages : ndarray of shape (n + 1, n + 1)
        ``logit(marginals) - unary`` (0 for forbidden links); with a unary of magnitude 1e300 they
        are as large, and adding them back to it rounds: :func:`link_bp` computes its own seed.
    log_z : float
    marginals : ndarray of shape (n + 1, n + 1)
    """
    U = check_link_scores(unary, "unary")
    N = U.shape[0]
    Un, shift, total = _normalised_unary(U, single_root)
    none = np.zeros(0, dtype=np.int64)
    # the BP kernel without pairwise factors or iterations: one call of the tree factor on U (so a
    # parser compiles one kernel per tree algorithm, not this one besides)
    _, log_z, _, _, messages, marg = _run_link_bp(Un, none, none, np.zeros(0), projective, single_root, 0, 0.0,
                                                  Un, np.zeros(0), np.zeros(0))
    with np.errstate(over="ignore", invalid="ignore"):
        messages = np.where(np.isneginf(U), 0.0, messages - shift)
    return messages, float(log_z + total), marg


def check_pairs(pairs, n_nodes, n_scores=None):
    """Validate ``(n_pairs, 4)`` link pairs ``(h_a, m_a, h_b, m_b)``; return them as int64."""
    if isinstance(pairs, (str, bytes)):
        raise TypeError(f"pairs must be an (n_pairs, 4) integer array, got {type(pairs).__name__}.")
    pairs = np.asarray(pairs)
    if pairs.size == 0:
        pairs = pairs.reshape(0, 4)
    if pairs.ndim != 2 or pairs.shape[1] != 4:
        raise ValueError(f"pairs must have shape (n_pairs, 4) = (h_a, m_a, h_b, m_b), got {pairs.shape}.")
    if not np.issubdtype(pairs.dtype, np.integer):
        raise ValueError("pairs must hold integers.")
    pairs = pairs.astype(np.int64)
    bad = ((pairs < 0) | (pairs >= n_nodes)).any(axis=1) | (pairs[:, 1] == 0) | (pairs[:, 3] == 0) \
        | (pairs[:, 0] == pairs[:, 1]) | (pairs[:, 2] == pairs[:, 3]) \
        | ((pairs[:, 0] == pairs[:, 2]) & (pairs[:, 1] == pairs[:, 3]))
    if bad.any():
        f = int(np.flatnonzero(bad)[0])
        raise ValueError(f"pairs[{f}] = {pairs[f].tolist()} is not a pair of two distinct links (h != m, "
                         f"m >= 1) of a sentence with {n_nodes} nodes.")
    if n_scores is not None and n_scores != pairs.shape[0]:
        raise ValueError(f"pair_scores must have shape ({pairs.shape[0]},), got ({n_scores},).")
    return np.ascontiguousarray(pairs)


def link_bp(unary, pairs, pair_scores, *, projective=False, single_root=True, max_iter=10, tol=1e-4,
            tree_messages=None, check_input=True, pair_marginals=True):
    """Sum-product BP on link variables with a tree factor and pairwise link factors.

    Parameters
    ----------
    unary : array-like of shape (n + 1, n + 1)
        Link log-odds ``U[h, m]`` (column 0 and the diagonal are ignored).
    pairs : array-like of int of shape (n_pairs, 4)
        Factors ``(h_a, m_a, h_b, m_b)`` coupling links ``(h_a, m_a)`` and ``(h_b, m_b)``.
    pair_scores : array-like of shape (n_pairs,)
        ``theta_f``: the factor is ``exp(theta_f z_a z_b)``.
    projective, single_root : bool
        The tree factor's variant (see :mod:`sklearn_struct.oracles.tree`).
    max_iter : int, default=10
        Iterations (each: every pairwise factor, then the tree factor); 10 as in the paper.
    tol : float, default=1e-4
        Stop when no link marginal (belief probability) changed by more than ``tol`` in an iteration.
    tree_messages : ndarray of shape (n + 1, n + 1), default=None
        Initial tree-factor messages, e.g. from :func:`seed_tree_messages` when its seed was
        computed already; None computes them from ``unary``.
    check_input : bool, default=True
    pair_marginals : bool, default=True
        Compute the factor beliefs (``LinkBPResult.pair_marginals``; None if False: they cost
        as much as an iteration and prediction does not need them).

    Returns
    -------
    result : LinkBPResult

    Examples
    --------
    >>> import numpy as np
    >>> U = np.zeros((3, 3))
    >>> res = link_bp(U, [[0, 1, 1, 2]], [2.0])  # grandparent factor on 0 -> 1 -> 2
    >>> bool(res.link_marginals[1, 2] > 0.5), round(float(res.link_marginals[:, 2].sum()), 6)
    (True, 1.0)
    """
    if check_input:
        U = check_link_scores(unary, "unary")
        N = U.shape[0]
        theta = _check_pair_scores(pair_scores)
        pairs = check_pairs(pairs, N, theta.shape[0])
        max_iter = check_scalar_param(max_iter, "max_iter", kind="int", low=0)
        tol = check_scalar_param(tol, "tol", low=0.0)
    else:
        U, N, theta = unary, unary.shape[0], pair_scores
    pa, pb = _link_indices(pairs, N)
    Un, _, total = _normalised_unary(U, single_root)  # the same model, log-odds near 0 (see there)
    none = np.zeros(0, dtype=np.int64)
    if tree_messages is None:  # start from the seed's beliefs themselves (not U + its messages: they round)
        B0 = _run_link_bp(Un, none, none, np.zeros(0), projective, single_root, 0, 0.0, Un, np.zeros(0),
                          np.zeros(0))[0].reshape(N, N)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            B0 = np.clip(U + np.asarray(tree_messages, dtype=np.float64), None, np.finfo(np.float64).max)
    msg_a = np.zeros(pa.shape[0])
    msg_b = np.zeros(pa.shape[0])
    B, log_z, n_iter, delta = _run_link_bp(Un, pa, pb, theta, projective, single_root, max_iter, tol, B0, msg_a,
                                           msg_b)[:4]
    pair_marg = _pair_beliefs(B, pa, pb, theta, msg_a, msg_b) if pair_marginals else None
    n_links = (N - 1) * (N - 1)
    return LinkBPResult(
        link_marginals=_marginals_from_log_odds(B, N), pair_marginals=pair_marg, log_odds=B.reshape(N, N),
        tree_log_z=float(log_z + total), n_iter=int(n_iter), converged=bool(delta <= tol), max_delta=float(delta),
        n_message_updates=int(n_iter * (2 * pa.shape[0] + n_links)),
    )


def grandparent_pairs(n_words, max_words=300):
    """All grandparent factors ``(g, h), (h, m)`` of a sentence: distinct g, h, m with h, m >= 1.

    Parameters
    ----------
    n_words : int
    max_words : int or None, default=300
        Refuse longer sentences with a ``ValueError`` before allocating: the list holds
        ``n (n - 1)^2`` pairs of 32 bytes (860 MB at 300 words, 32 GB at 1,000). The default is
        :class:`~sklearn_struct.parsing.DependencyParserBP`'s ``max_length``; None: no limit.

    Examples
    --------
    >>> grandparent_pairs(2).tolist()
    [[0, 1, 1, 2], [0, 2, 2, 1]]
    """
    n = _check_n_words(n_words, max_words, lambda k: k * (k - 1) ** 2, "grandparent_pairs")
    return _grandparent_pairs(n + 1)


def _check_n_words(n_words, max_words, count, name):
    """``n_words`` checked against ``max_words`` (an O(n^3) list is refused before it is allocated)."""
    n = check_scalar_param(n_words, "n_words", kind="int", low=1)
    if max_words is not None:
        max_words = check_scalar_param(max_words, "max_words", kind="int", low=1)
        if n > max_words:
            raise ValueError(
                f"n_words={n} is more than max_words={max_words}: {name} would allocate {count(n):,} pairs "
                f"({32 * count(n) / 1e9:.3g} GB). Pass max_words=None (or higher) to build it anyway.")
    if count(n) > 2**57:  # beyond any memory (and beyond int64 bytes): not even with max_words=None
        raise ValueError(f"n_words={n} is too large: {name} would allocate {count(n):,} pairs.")
    return n


@kernel
def _grandparent_pairs(N):
    """In the order g, h, m (written in one pass: the factor lists of long sentences take GBs)."""
    out = np.empty(((N - 1) * (N - 2) * (N - 2) if N > 2 else 0, 4), dtype=np.int64)
    f = 0
    for g in range(N):
        for h in range(1, N):
            if h == g:
                continue
            for m in range(1, N):
                if m != g and m != h:
                    out[f, 0], out[f, 1], out[f, 2], out[f, 3] = g, h, h, m
                    f += 1
    return out


def sibling_pairs(n_words, max_words=300):
    """Sibling factors ``(h, m), (h, s)``: words ``m < s`` on the same side of a word head ``h``.

    The root is left out (it has one child in a single-root tree). ``max_words`` as in
    :func:`grandparent_pairs` (about ``n^3 / 3`` pairs).

    Examples
    --------
    >>> sibling_pairs(3).tolist()
    [[1, 2, 1, 3], [3, 1, 3, 2]]
    """
    n = _check_n_words(n_words, max_words, lambda k: k * (k - 1) * (k - 2) // 3, "sibling_pairs")
    return _sibling_pairs(n + 1)


@kernel
def _sibling_pairs(N):
    """In the order h, m, s."""
    count = 0
    for h in range(1, N):  # pairs of words left of h, and right of h
        count += (h - 1) * (h - 2) // 2 + (N - 1 - h) * (N - 2 - h) // 2
    out = np.empty((count, 4), dtype=np.int64)
    f = 0
    for h in range(1, N):
        for m in range(1, N):
            if m == h:
                continue
            for s in range(m + 1, N):
                if s != h and (m > h) == (s > h):
                    out[f, 0], out[f, 1], out[f, 2], out[f, 3] = h, m, h, s
                    f += 1
    return out


def pair_gains(link_marginals, pairs, pair_scores):
    """Gains ``log(1 - mu + mu e^theta) - mu theta`` of pairwise factors, ``mu = mu_a mu_b`` from the seed.

    The seed (unary + tree factor) gives exact link marginals; the factor's feature mean
    ``E[z_a z_b]`` is taken as the product of its two links' marginals (exact pairwise tree
    marginals would cost more than the pruning saves).

    Examples
    --------
    >>> import numpy as np
    >>> mu = np.array([[0, 0.5, 0.5], [0, 0, 0.5], [0, 0.5, 0]])
    >>> float(pair_gains(mu, np.array([[0, 1, 1, 2]]), np.array([0.0]))[0])
    0.0
    """
    marg = check_float_array(link_marginals, "link_marginals", ndim=2)
    if marg.shape[0] != marg.shape[1] or marg.shape[0] < 1 or marg.min() < 0 or marg.max() > 1:
        raise ValueError(f"link_marginals must be a square matrix of probabilities, got shape {marg.shape} "
                         f"with values in [{marg.min() if marg.size else 0}, {marg.max() if marg.size else 0}].")
    theta = check_float_array(pair_scores, "pair_scores", ndim=1)
    pairs = check_pairs(pairs, marg.shape[0], theta.shape[0])
    return _pair_gains(marg, pairs, theta)


@kernel
def _pair_gains(marg, pairs, theta):
    out = np.empty(pairs.shape[0])
    for f in range(pairs.shape[0]):
        mu = marg[pairs[f, 0], pairs[f, 1]] * marg[pairs[f, 2], pairs[f, 3]]
        t = theta[f]
        if t > 0.0:  # log(1 - mu + mu e^t) = t + log(mu + (1 - mu) e^-t)
            g = t + math.log(mu + (1.0 - mu) * math.exp(-t))
        else:
            g = math.log1p(mu * math.expm1(t))
        out[f] = max(g - mu * t, 0.0)
    return out
