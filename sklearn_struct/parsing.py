"""DependencyParserBP: second-order dependency parsing by (pruned) loopy BP with a tree factor.

The model of Smith & Eisner (2008), the parsing experiment of Riedel, Smith & McCallum (2010):
one binary variable per candidate link ``z[h, m]`` of a sentence, a spanning-tree factor over all
of them (projective: Eisner inside-outside; non-projective: matrix-tree theorem; one root child, as
in UD), unary link scores ``U = w . f(h, m)`` from hashed first-order features, and pairwise factors
``exp(theta_f z_a z_b)`` with ``theta_f = w . f(pair)`` for grandparents ``(g, h), (h, m)`` and, if
asked, siblings ``(h, m), (h, s)`` (same side of ``h``): O(n^3) binary factors per sentence.

Inference (:func:`pruned_link_marginals`) is Algorithm 1 of the pruned-BP paper with the same
selection rules as :class:`~sklearn_struct.pruned_bp.PrunedBPMarginals`
(:func:`~sklearn_struct.pruned_bp.select_factors`):

1. Seed G = unary factors + tree factor. Its link marginals are exact (one O(n^3) tree pass).
   The tree factor is in the seed, not left to pruning, because a unary-only seed would give
   every link the marginal ``sigmoid(U)`` with no "one head per word" constraint, so the gains
   would be wrong for exactly the links that compete, and H without the tree factor would not be
   a parser. The paper's F counts only the binary factors, which is consistent with this choice.
2. Gain of each pairwise factor, ``g = log(1 - mu + mu e^theta) - mu theta`` with
   ``mu = mu_a mu_b`` from the seed link marginals (see
   :func:`~sklearn_struct.oracles.factor_bp.pair_gains`).
3. MinSize (epsilon) / MinDivergence (m) / MinJoint (gamma) picks the factors to add.
4. BP on H = G + kept factors (:func:`~sklearn_struct.oracles.factor_bp.link_bp`), at most
   ``bp_max_iter`` (10) iterations, starting from the seed's tree messages; if nothing is kept the
   seed marginals are returned. ``objective="none"`` is full BP (every factor).

Training: approximate maximum likelihood with BP marginals (Smith & Eisner): for each sentence,
the gradient of ``log Z - score(gold)`` is ``sum_links (mu - z_gold) f(link) + sum_pairs (b_11 -
z_gold_a z_gold_b) f(pair)`` with full-BP link and pair beliefs; averaged SGD over shuffled
sentences for ``max_iter`` epochs (averaging instead of an L2 penalty). Projective models skip
non-projective training trees (they have probability 0 under the model).

Decoding (``predict``): the tree with the largest sum of link marginals (MBR), by Eisner
(projective) or Chu-Liu-Edmonds (non-projective).
"""

import functools
import numbers
import time
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from . import _parsing_features as feats
from .oracles.factor_bp import (
    _check_pair_scores,
    _normalised_unary,
    _pair_gains,
    check_pairs,
    grandparent_pairs,
    link_bp,
    seed_tree_messages,
    sibling_pairs,
)
from .oracles.tree import check_link_scores, decode_tree
from .pruned_bp import PruningReport, select_factors
from .utils._proba import MarginalsAsProbaMixin
from .utils._params import atomic_fit, shared_constraints, store_init_params
from .utils.parallel import even_chunks, run_chunks
from .utils.shards import n_shards
from .utils.progress import Progress
from .utils.validation import check_float_array, check_int_array, check_scalar_param, check_y_length

__all__ = ["DependencyParserBP", "pruned_link_marginals", "LinkPruningReport", "divergence_bound",
           "attachment_score", "is_projective"]

_OBJECTIVES = ("none", "min_joint", "min_size", "min_divergence")
_LONG_SENTENCE = 100  # predict prints a progress line after each sentence this long when verbose


# --------------------------------------------------------------------------------------
# Pruned inference on one sentence
# --------------------------------------------------------------------------------------


@dataclass
class LinkPruningReport(PruningReport):
    """What :func:`pruned_link_marginals` did on one sentence.

    The attributes of :class:`~sklearn_struct.pruned_bp.PruningReport` (over the candidate
    pairwise factors of the sentence; ``bp_result`` is a ``LinkBPResult`` or None), and:

    Attributes
    ----------
    n_iter : int
        BP iterations on H (0 if nothing was kept).
    n_message_updates : int
    bound : float
        Proposition 2's post-hoc bound on ``D(p_H || p_F)`` (:func:`divergence_bound`) with
        ``E_H[z_a z_b]`` of each dropped factor taken as the product of its links' H marginals
        (not timed).
    """

    n_iter: int
    n_message_updates: int
    bound: float = np.nan


def pruned_link_marginals(unary, pairs, pair_scores, *, projective=False, single_root=True, objective="min_joint",
                          gamma=1e-2, epsilon=1.0, m=0.1, max_iter=10, tol=1e-4, return_report=False,
                          check_input=True):
    """Link marginals by BP on the factor graph pruned by one selection rule (Algorithm 1).

    Parameters
    ----------
    unary : ndarray of shape (n + 1, n + 1)
        Link log-odds.
    pairs : ndarray of int of shape (n_pairs, 4)
        Candidate pairwise factors ``(h_a, m_a, h_b, m_b)``.
    pair_scores : ndarray of shape (n_pairs,)
    projective, single_root : bool
        Tree factor variant.
    objective : {"none", "min_joint", "min_size", "min_divergence"}, default="min_joint"
        ``"none"``: full BP with every factor.
    gamma, epsilon, m : see :func:`sklearn_struct.pruned_bp.select_factors`
    max_iter, tol : BP iteration cap and tolerance (10 as in the paper).
    return_report : bool, default=False
    check_input : bool, default=True
        Validate the inputs (outside the timed part).

    Returns
    -------
    marginals : ndarray of shape (n + 1, n + 1)
    report : LinkPruningReport, only if ``return_report``

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.oracles.factor_bp import grandparent_pairs
    >>> rng = np.random.default_rng(0)
    >>> U, pairs = rng.normal(size=(6, 6)), grandparent_pairs(5)
    >>> theta = rng.normal(size=len(pairs))
    >>> mu, rep = pruned_link_marginals(U, pairs, theta, gamma=0.05, return_report=True)
    >>> mu.shape, bool(np.allclose(mu[:, 1:].sum(axis=0), 1.0, atol=0.2)), 0 < rep.kept_fraction < 1
    ((6, 6), True, True)
    """
    if check_input:
        if objective not in _OBJECTIVES:
            raise ValueError(f"objective must be one of {_OBJECTIVES}, got {objective!r}.")
        unary = check_link_scores(unary, "unary")
        pair_scores = _check_pair_scores(pair_scores)
        pairs = check_pairs(pairs, unary.shape[0], pair_scores.shape[0])
        max_iter = check_scalar_param(max_iter, "max_iter", kind="int", low=1)
        tol = check_scalar_param(tol, "tol", low=0.0)
    start = time.perf_counter()
    # the same model with log-odds near 0 (so the seed's messages, added back to U, keep their precision)
    U = _normalised_unary(np.ascontiguousarray(unary, dtype=np.float64), single_root)[0]
    tree_msgs, _, seed = seed_tree_messages(U, projective, single_root)
    if objective == "none":
        kept = np.ones(pairs.shape[0], dtype=bool)
        gains = None  # all zero (made only for a report: 8 bytes a factor)
    else:
        gains = _pair_gains(seed, pairs, pair_scores)  # checked above (pair_gains re-checks all n^3 pairs)
        kept = select_factors(gains, objective, gamma=gamma, epsilon=epsilon, m=m)
    seed_time = time.perf_counter() - start
    start = time.perf_counter()
    result = None
    if kept.any():
        sub = kept.all()
        result = link_bp(U, pairs if sub else pairs[kept], pair_scores if sub else pair_scores[kept],
                         projective=projective, single_root=single_root, max_iter=max_iter, tol=tol,
                         tree_messages=tree_msgs, check_input=False, pair_marginals=return_report)
        marginals = result.link_marginals
    else:
        marginals = seed
    bp_time = time.perf_counter() - start
    if not return_report:
        return marginals
    gains = np.zeros(pairs.shape[0]) if gains is None else gains
    report = LinkPruningReport(
        kept=kept, gains=gains, kept_fraction=float(kept.mean()) if kept.size else 1.0,
        dropped_gain=float(gains[~kept].sum()), seed_time=seed_time, bp_time=bp_time,
        n_iter=result.n_iter if result is not None else 0,
        n_message_updates=result.n_message_updates if result is not None else 0, bp_result=result,
    )
    if not kept.all():
        drop = pairs[~kept]
        mu_h = marginals[drop[:, 0], drop[:, 1]] * marginals[drop[:, 2], drop[:, 3]]
        report.bound = divergence_bound(mu_h, pair_scores[~kept])
    else:
        report.bound = 0.0
    return marginals, report


def divergence_bound(mu_dropped, theta_dropped):
    """Post-hoc bound on ``D(p_H || p_F)`` from first moments (Proposition 2, sign corrected).

    ``mu_dropped[i] = E_H[phi_i]`` and ``theta_dropped[i]`` for the dropped factors ``R``. A factor
    with ``theta < 0`` is rewritten as ``exp(|theta| (1 - phi))`` (the same distribution), so all
    ``theta > 0``. Sorting by increasing ``mu`` gives ``mu'_1..mu'_L`` (``mu'_0 = 0``,
    ``mu'_{L+1} = 1``) and ``C = log sum_{j=0}^{L} (mu'_{j+1} - mu'_j) exp(-sum_{k<=j} theta_k) <= 0``;
    the bound is ``||theta_R||_1 - <mu_R, theta_R> + C`` (the paper prints ``- C`` and ``mu^G``;
    see the brief, section 8). Computed in log space.

    Examples
    --------
    >>> round(divergence_bound([0.5], [2.0]), 6)  # one factor: the bound is its exact KL
    0.433781
    """
    mu = check_float_array(mu_dropped, "mu_dropped").reshape(-1)
    theta = check_float_array(theta_dropped, "theta_dropped").reshape(-1)
    if mu.shape != theta.shape:
        raise ValueError(f"mu_dropped and theta_dropped must have the same length, got {mu.size} and {theta.size}.")
    if not (np.isfinite(theta).all() and np.all((mu >= 0) & (mu <= 1))):
        raise ValueError("theta_dropped must be finite and mu_dropped in [0, 1].")
    if mu.size == 0:
        return 0.0
    mu = np.clip(np.where(theta < 0, 1.0 - mu, mu), 0.0, 1.0)
    theta = np.abs(theta)
    order = np.argsort(mu, kind="stable")
    mu, theta = mu[order], theta[order]
    steps = np.diff(np.concatenate([[0.0], mu, [1.0]]))
    cum = np.concatenate([[0.0], np.cumsum(theta)])
    with np.errstate(divide="ignore"):
        C = np.logaddexp.reduce(np.log(steps) - cum)
    return float(theta.sum() - mu @ theta + C)


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def is_projective(heads):
    """Whether a tree (heads of words 1..n, 0 = root) has no crossing links (root arcs included)."""
    heads = _check_heads(heads, "heads")
    n = heads.shape[0]
    lo = np.minimum(heads, np.arange(1, n + 1))
    hi = np.maximum(heads, np.arange(1, n + 1))
    a, c = lo[:, None], lo[None, :]
    b, d = hi[:, None], hi[None, :]
    return not np.any((a < c) & (c < b) & (b < d))


def attachment_score(heads_true, heads_pred):
    """Unlabelled attachment score (fraction of words with the right head), over all words."""
    for name, value in (("heads_true", heads_true), ("heads_pred", heads_pred)):
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
            raise TypeError(f"{name} must be a list of head arrays, got {type(value).__name__}.")
    if len(heads_true) != len(heads_pred):
        raise ValueError(f"heads_true and heads_pred have different lengths ({len(heads_true)} and {len(heads_pred)}).")
    true = [_check_heads(t, f"heads_true[{s}]") for s, t in enumerate(heads_true)]
    pred = [_check_heads(p, f"heads_pred[{s}]") for s, p in enumerate(heads_pred)]
    for s, (t, p) in enumerate(zip(true, pred)):
        if t.shape != p.shape:
            raise ValueError(f"Sentence {s}: {t.shape[0]} true heads but {p.shape[0]} predicted.")
    correct = sum(int(np.sum(t == p)) for t, p in zip(true, pred))
    total = sum(t.shape[0] for t in true)
    return correct / max(total, 1)


def _check_heads(heads, name):
    """A 1-D array of head indices 0..n for the n words of one sentence."""
    if isinstance(heads, (str, bytes)) or heads is None:
        raise TypeError(f"{name} must be an array of head indices, got {type(heads).__name__}.")
    heads = np.asarray(heads)
    if heads.ndim != 1 or heads.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of head indices, got shape {heads.shape}.")
    return check_int_array(heads, name, low=0, high=heads.shape[0] + 1)


def _candidate_pairs(n, grandparents, siblings):
    """The model's candidate pairwise factors of a sentence of ``n`` words (read-only; cached up to 64 words).

    Not cached for longer sentences: a list takes ``32 n^3`` bytes (860 MB at 300 words).
    """
    if n <= _CACHED_PAIRS_MAX_WORDS:
        return _cached_candidate_pairs(n, grandparents, siblings)
    return _make_candidate_pairs(n, grandparents, siblings)


_CACHED_PAIRS_MAX_WORDS = 64


@functools.lru_cache(maxsize=_CACHED_PAIRS_MAX_WORDS)
def _cached_candidate_pairs(n, grandparents, siblings):
    return _make_candidate_pairs(n, grandparents, siblings)


def _make_candidate_pairs(n, grandparents, siblings):
    parts = []
    if grandparents:
        parts.append(grandparent_pairs(n, max_words=None))  # the estimator's max_length bounds n
    if siblings:
        parts.append(sibling_pairs(n, max_words=None))
    if not parts:
        return np.zeros((0, 4), dtype=np.int64)
    out = parts[0] if len(parts) == 1 else np.ascontiguousarray(np.concatenate(parts).reshape(-1, 4))
    out.setflags(write=False)
    return out


def _token_parts(token, s, i):
    if isinstance(token, dict):
        try:
            return str(token["form"]), str(token["upos"])
        except KeyError:
            raise ValueError(f"X[{s}][{i}] must have keys 'form' and 'upos', got {sorted(token)}.") from None
    if isinstance(token, (tuple, list)) and len(token) >= 2:
        return str(token[0]), str(token[1])
    raise ValueError(f"X[{s}][{i}] must be a dict with 'form' and 'upos' or a (form, pos) tuple, got {token!r}.")


def _check_sentences(X, y=None, single_root=False, max_length=None):
    """Validated (forms, tags) per sentence and head arrays (trees; with one root word if ``single_root``).

    Every length is checked against ``max_length`` before any token is read, so a too-long
    sentence is refused before any work.
    """
    if isinstance(X, (str, bytes)) or not hasattr(X, "__len__") or len(X) == 0:
        raise ValueError("X must be a non-empty list of sentences (lists of tokens).")
    for s, sent in enumerate(X):
        if isinstance(sent, (str, bytes)) or not hasattr(sent, "__len__") or len(sent) == 0:
            raise ValueError(f"X[{s}] must be a non-empty list of tokens.")
        if max_length is not None and len(sent) > max_length:
            raise ValueError(
                f"X[{s}] has {len(sent)} words, more than max_length={max_length}: inference costs O(n^3) "
                f"time and memory per sentence (see the table in DependencyParserBP's documentation); set "
                f"max_length higher (or None) to parse it anyway, or split the sentence.")
    sents = []
    for s, sent in enumerate(X):
        sents.append([_token_parts(tok, s, i) for i, tok in enumerate(sent)])
    if y is None:
        return sents
    check_y_length(sents, y, "sentences")
    return sents, [_check_training_heads(h, s, len(sent), single_root) for s, (sent, h) in enumerate(zip(sents, y))]


def _check_training_heads(h, s, n, single_root):
    """The head array ``y[s]`` of a sentence of ``n`` words, checked to be a tree rooted at 0, as int64."""
    h = np.asarray(h)
    if h.shape != (n,) or not np.issubdtype(h.dtype, np.integer):
        raise ValueError(f"y[{s}] must be {n} integer heads, got {h.shape} {h.dtype}.")
    h = h.astype(np.int64)
    if h.min() < 0 or h.max() > n or np.any(h == np.arange(1, n + 1)):
        raise ValueError(f"y[{s}] has a head outside 0..{n} or a self-loop.")
    roots = np.flatnonzero(h == 0) + 1
    if roots.size == 0 or (single_root and roots.size > 1):
        raise ValueError(f"y[{s}] is not a tree with {'one root word' if single_root else 'a root'}: words "
                         f"{roots.tolist()} attach to the root (single_root={single_root}).")
    cycle = _cycle(h)
    if cycle:
        raise ValueError(f"y[{s}] is not a tree: words {cycle} form a cycle.")
    return h


def _cycle(heads):
    """Words ``1..n`` on a cycle of the head array (following heads never reaches 0), or []."""
    state = np.zeros(heads.shape[0] + 1, dtype=np.int8)  # 0 unseen, 1 on the current path, 2 reaches the root
    state[0] = 2
    for start in range(1, heads.shape[0] + 1):
        path, m = [], start
        while state[m] == 0:
            state[m] = 1
            path.append(m)
            m = int(heads[m - 1])
        if state[m] == 1:
            return path[path.index(m):]
        state[path] = 2
    return []


def _encode(sents, words, tags):
    """Word and POS id arrays over nodes 0..n (root ids 1, unknown 0)."""
    out = []
    for sent in sents:
        w = np.array([1] + [words.get(f.lower(), 0) for f, _ in sent], dtype=np.int64)
        p = np.array([1] + [tags.get(t, 0) for _, t in sent], dtype=np.int64)
        out.append((w, p))
    return out


# --------------------------------------------------------------------------------------
# Estimator
# --------------------------------------------------------------------------------------


class DependencyParserBP(MarginalsAsProbaMixin, BaseEstimator):
    """Second-order dependency parser: tree factor + grandparent / sibling factors, (pruned) loopy BP.

    Parameters
    ----------
    projective : bool, default=False
        Projective trees (Eisner chart) or all trees (matrix-tree theorem).
    single_root : bool, default=True
        Exactly one word attaches to the root (UD).
    grandparents : bool, default=True
        Pairwise factors ``(g, h), (h, m)``.
    siblings : bool, default=False
        Pairwise factors ``(h, m), (h, s)`` for words on the same side of a word head.
    objective : {"none", "min_joint", "min_size", "min_divergence"}, default="none"
        Inference at prediction: full BP ("none") or pruned BP with one selection rule.
    gamma, epsilon, m : float
        MinJoint gain threshold; MinSize budget (per sentence); MinDivergence count or fraction
        (see :func:`sklearn_struct.pruned_bp.select_factors`).
    max_iter : int, default=5
        Training epochs (averaged SGD).
    learning_rate : float, default=0.05
    n_hash_bits : int, default=20
        ``2**n_hash_bits`` hashed feature weights.
    bp_max_iter : int, default=10
        BP iteration cap (training and prediction), 10 as in the paper.
    bp_tol : float, default=1e-3
        BP stops when no link marginal changed by more than this in an iteration.
    random_state : int, RandomState or None, default=None
        Shuffling of the training sentences.
    n_jobs : int, default=None
        Prediction runs over chunks of sentences with joblib.
    callback : callable or None, default=None
        Called after every training epoch as ``callback(epoch, loss, seconds)``, ``loss`` being
        the epoch's summed approximate negative log-likelihood (BP link marginals of the gold
        heads, before each step); returning True stops training there.
    max_length : int or None, default=300
        Longest sentence (in words) that ``fit`` and ``predict`` accept: a longer one raises
        ``ValueError`` before any work. None: no limit. See Notes for the cost per length.
    verbose : int, default=0
        Print one line per epoch: approximate NLL and elapsed seconds; at prediction, one line
        per sentence of 100 words or more (every sentence if ``verbose >= 2``).

    Notes
    -----
    Cost per sentence of ``n`` words: ``n (n - 1)^2`` grandparent factors (and about ``n^3 / 3``
    sibling factors), each with its hashed score, two messages per BP iteration and about 70
    bytes of arrays, so time and memory grow as ``n^3``. Measured on one core of a shared
    machine (``benchmarks/results/parser_long/parser_long.md``, default model, full BP; CPU seconds, peak
    process memory): 100 words 1.0 s and 0.3 GB, 150 words 2.9 s and 0.5 GB, 200 words 5.3 s
    and 0.8 GB, 300 words 17 s and 2.1 GB. Hence the default ``max_length=300``. Pruned
    inference (``objective="min_joint"``) prunes nearly all factors but still scores them all:
    300 words in 3 s and 1.5 GB.

    Attributes
    ----------
    coef_ : ndarray of shape (2**n_hash_bits,)
        Averaged feature weights.
    vocabulary_ : dict
        Lower-cased word forms seen in training (with ids).
    tags_ : dict
        POS tags seen in training (with ids).
    n_iter_ : int
        Training epochs run.
    n_train_skipped_ : int
        Non-projective training trees skipped by a projective model.

    References
    ----------
    D. A. Smith, J. Eisner. "Dependency parsing by belief propagation." EMNLP 2008.
    S. Riedel, D. A. Smith, A. McCallum. "Inference by Minimizing Size, Divergence, or their Sum."
    UAI 2010.

    Examples
    --------
    >>> from sklearn_struct.parsing import DependencyParserBP
    >>> X = [[("the", "DET"), ("dog", "NOUN"), ("barks", "VERB")],
    ...      [("a", "DET"), ("cat", "NOUN"), ("sleeps", "VERB")]]
    >>> y = [[2, 3, 0], [2, 3, 0]]
    >>> parser = DependencyParserBP(max_iter=10, random_state=0).fit(X, y)
    >>> parser.predict([[("the", "DET"), ("cat", "NOUN"), ("barks", "VERB")]])[0].tolist()
    [2, 3, 0]
    """

    _parameter_constraints = {
        "projective": ["boolean"],
        "single_root": ["boolean"],
        "grandparents": ["boolean"],
        "siblings": ["boolean"],
        "objective": [StrOptions(set(_OBJECTIVES))],
        "gamma": [Interval(numbers.Real, 0, None, closed="left")],
        "epsilon": [Interval(numbers.Real, 0, None, closed="left")],
        "m": [Interval(numbers.Integral, 0, None, closed="left"), Interval(numbers.Real, 0, 1, closed="right")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "n_hash_bits": [Interval(numbers.Integral, 8, 28, closed="both")],
        "bp_max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "bp_tol": [Interval(numbers.Real, 0, None, closed="left")],
        "max_length": [Interval(numbers.Integral, 1, None, closed="left"), None],
        **shared_constraints("random_state", "n_jobs", "callback", "verbose"),
    }

    def __init__(self, *, projective=False, single_root=True, grandparents=True, siblings=False, objective="none",
                 gamma=1e-2, epsilon=1.0, m=0.1, max_iter=5, learning_rate=0.05, n_hash_bits=20, bp_max_iter=10,
                 bp_tol=1e-3, max_length=300, random_state=None, n_jobs=None, callback=None, verbose=0):
        store_init_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Train by averaged SGD on the BP approximation of the conditional log-likelihood.

        Each epoch visits the training trees in a random order (a projective model skips the
        non-projective ones); ``coef_`` is the average of the weights over all steps.

        Parameters
        ----------
        X : list of sentences
            Each a list of tokens: dicts with ``form`` and ``upos`` (as :func:`load_conllu` gives)
            or ``(form, pos)`` tuples.
        y : list of array-like of int
            Heads of words ``1..n`` (0 = root).

        Returns
        -------
        self : DependencyParserBP
        """
        progress = Progress(type(self).__name__, self.verbose, self.callback, unit="epoch", objective="approximate NLL")
        sents, heads = _check_sentences(X, y, single_root=self.single_root, max_length=self.max_length)
        forms = sorted({f.lower() for sent in sents for f, _ in sent})
        tags = sorted({t for sent in sents for _, t in sent})
        self.vocabulary_ = {f: i + 2 for i, f in enumerate(forms)}
        self.tags_ = {t: i + 2 for i, t in enumerate(tags)}
        data = _encode(sents, self.vocabulary_, self.tags_)
        keep = [s for s in range(len(sents)) if not self.projective or is_projective(heads[s])]
        self.n_train_skipped_ = len(sents) - len(keep)
        if not keep:
            raise ValueError("no training tree fits the model (all are non-projective).")
        rng = check_random_state(self.random_state)
        mask = (1 << self.n_hash_bits) - 1
        w = np.zeros(1 << self.n_hash_bits)
        u = np.zeros_like(w)  # averaging: w_avg = w - u / c
        c = 1.0
        for epoch in range(1, self.max_iter + 1):
            loss = 0.0
            for s in rng.permutation(keep):
                words, pos = data[s]
                loss += self._sgd_step(words, pos, heads[s], w, u, c, mask)
                c += 1.0
            if progress(epoch, loss):
                break
        self.coef_ = w - u / c
        self.n_iter_ = epoch
        return self

    def _gold(self, heads, pairs):
        N = heads.shape[0] + 1
        gold = np.zeros((N, N))
        gold[heads, np.arange(1, N)] = 1.0
        return gold, gold[pairs[:, 0], pairs[:, 1]] * gold[pairs[:, 2], pairs[:, 3]]

    def _sgd_step(self, words, pos, heads, w, u, c, mask):
        """One averaged-SGD step on a sentence; returns its approximate NLL (Bethe-free part omitted)."""
        n = heads.shape[0]
        pairs = _candidate_pairs(n, self.grandparents, self.siblings)
        U = feats.link_scores(words, pos, w, mask)
        theta = feats.pair_scores(words, pos, pairs, w, mask)
        res = link_bp(U, pairs, theta, projective=self.projective, single_root=self.single_root,
                      max_iter=self.bp_max_iter, tol=self.bp_tol, check_input=False)
        gold, gold_pairs = self._gold(heads, pairs)
        link_coef = res.link_marginals - gold
        pair_coef = res.pair_marginals - gold_pairs
        lr = self.learning_rate
        feats.add_link_gradient(words, pos, link_coef, w, mask, -lr)
        feats.add_link_gradient(words, pos, link_coef, u, mask, -lr * c)
        if pairs.shape[0]:
            feats.add_pair_gradient(words, pos, pairs, pair_coef, w, mask, -lr)
            feats.add_pair_gradient(words, pos, pairs, pair_coef, u, mask, -lr * c)
        return float(-np.log(np.maximum(res.link_marginals[heads, np.arange(1, n + 1)], 1e-300)).sum())

    # ------------------------------------------------------------------ prediction
    def potentials(self, X):
        """Link log-odds, candidate pairs and pair scores of each sentence (the model's factors).

        Returns
        -------
        potentials : list of tuple (unary, pairs, pair_scores)
        """
        return [self._potentials(words, pos) for words, pos in self._encoded(X)]

    def _encoded(self, X):
        """Word and POS ids of the checked sentences of ``X`` (lengths checked against ``max_length``)."""
        check_is_fitted(self)
        sents = _check_sentences(X, max_length=self.max_length)
        return _encode(sents, self.vocabulary_, self.tags_)

    def _potentials(self, words, pos):
        mask = (1 << self.n_hash_bits) - 1
        pairs = _candidate_pairs(words.shape[0] - 1, self.grandparents, self.siblings)
        return feats.link_scores(words, pos, self.coef_, mask), pairs, feats.pair_scores(words, pos, pairs,
                                                                                        self.coef_, mask)

    def predict_marginals(self, X, *, return_reports=False):
        """Link marginals ``P(head of m is h)`` of each sentence, by full or pruned BP (``objective``).

        Parameters
        ----------
        X : list of sentences
            As in :meth:`fit`.
        return_reports : bool, default=False
            Also return the inference report of each sentence (factors kept, timings, BP
            iterations); the model itself is left unchanged.

        Returns
        -------
        marginals : list of ndarray of shape (n_words_i + 1, n_words_i + 1)
        reports : list of LinkPruningReport, only if ``return_reports``
        """
        data = self._encoded(X)
        options = dict(projective=self.projective, single_root=self.single_root, objective=self.objective,
                       gamma=self.gamma, epsilon=self.epsilon, m=self.m, max_iter=self.bp_max_iter,
                       tol=self.bp_tol, return_report=bool(return_reports), check_input=False)
        progress = Progress(type(self).__name__, self.verbose, unit="sentence", objective="words")

        # each task gets its own sentences only, and builds one sentence's factors at a time (a long
        # sentence's take GBs; a closure over all potentials shipped every sentence to every task)
        chunks = [(self, [data[s] for s in range(sl.start, sl.stop)], sl.start, options, bool(return_reports), progress)
                  for sl in even_chunks(len(data), n_shards(self.n_jobs))]
        parts = run_chunks(_infer_chunk, chunks, n_jobs=self.n_jobs, verbose=self.verbose)
        results = [r for part in parts for r in part]
        marginals = [marg for marg, _ in results]
        return (marginals, [report for _, report in results]) if return_reports else marginals

    def decode(self, marginals):
        """MBR trees: the tree maximising the sum of link marginals (Eisner / Chu-Liu-Edmonds)."""
        return [decode_tree(mu, self.projective, self.single_root)[1:] for mu in marginals]

    def predict(self, X):
        """Heads of words ``1..n`` of each sentence (MBR decoding of the link marginals)."""
        return self.decode(self.predict_marginals(X))

    def score(self, X, y):
        """Unlabelled attachment score of :meth:`predict` over all words."""
        _, heads = _check_sentences(X, y)
        return attachment_score(heads, self.predict(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.non_deterministic = False
        return tags


def _infer_chunk(chunk):
    """Link marginals (and reports) of one prediction chunk ``(parser, sentences, first index, options,
    return_reports, progress)``, building one sentence's factors at a time."""
    parser, sentences, first, options, return_reports, progress = chunk
    out = []
    for i, sentence in enumerate(sentences):
        result = pruned_link_marginals(*parser._potentials(*sentence), **options)
        out.append(result if return_reports else (result, None))
        n = sentence[0].shape[0] - 1
        if n >= _LONG_SENTENCE or parser.verbose > 1:  # seconds: since the call started
            progress(first + i, n)
    return out
