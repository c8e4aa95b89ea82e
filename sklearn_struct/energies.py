"""Non-local energies ``L_psi(mu)`` for :class:`~sklearn_struct.NonLocalCRF` and Bethe inference.

An energy is a function of the node marginals ``mu_n`` (and optionally the edge marginals
``mu_e``) of every sequence, linear in a vector of non-negative weights ``psi``::

    L_psi(mu) = sum_k psi_k * ell_k(mu)

which covers every energy of Vilnis et al. (2015): soft linear-measurement constraints
(eqs. 4-5, 20), the unigram-count and word dictionaries of the OCR experiment (eqs. 21-22)
and the Poisson count likelihood of collective graphical models (eq. 23).

Layout
------
All methods work on a whole batch of sequences at once, packed as in
:mod:`sklearn_struct.oracles.chain`: ``node`` is ``(n_tokens, n_labels)``, ``edge`` is the
per-position edge marginals ``(n_tokens - n_sequences, n_labels, n_labels)`` (or None when the
energy does not use them, see ``uses_edges``), ``offsets`` is ``(n_sequences + 1,)`` and
``psi`` is ``(n_sequences, n_weights)``: one weight vector per sequence, because ``psi`` may
depend on the input (see :class:`RandomFourierMeanMap`).

``index`` (optional, ``(n_sequences,)`` ints) tells energies that hold per-sequence data
(such as the observed counts of :class:`PoissonCountEnergy`) which of their sequences the
batch holds; inference passes it when it iterates on a subset of sequences.

Writing your own energy
-----------------------
Subclass :class:`Energy` and implement ``n_weights``, ``term_values`` (the ``ell_k`` per
sequence), ``gradient`` (the gradient of ``L_psi`` with respect to the marginals) and
``term_gradient_dot`` (``<grad ell_k(mu_s), d_s>`` per sequence and term, which the
psi-gradient of the learning algorithm needs). Set ``uses_edges = True`` if the energy
depends on edge marginals and ``convex = True`` if every ``ell_k`` is convex.
"""

import numbers

import numpy as np
from scipy.special import gammaln
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.kernel_approximation import RBFSampler
from sklearn.utils.validation import check_is_fitted

from .utils.packing import edge_offsets, pack_sequences, segment_repeat, segment_sum  # noqa: F401 (re-exported)
from .utils.validation import check_float_array, check_offsets, check_scalar_param

__all__ = [
    "Energy",
    "SoftConstraintEnergy",
    "UnigramDictionaryEnergy",
    "WordDictionaryEnergy",
    "PoissonCountEnergy",
    "RandomFourierMeanMap",
    "smoothed_hinge",
]


# --------------------------------------------------------------------------------------
# helpers on packed batches
# --------------------------------------------------------------------------------------


def smoothed_hinge(z):
    """Rennie's smoothed hinge and its derivative: ``(h(z), h'(z))``.

    ``h(z) = 1/2 - z`` for ``z <= 0``, ``(1 - z)^2 / 2`` for ``0 < z < 1`` and ``0`` for
    ``z >= 1``: convex, with a 1-Lipschitz derivative, equal to the hinge ``max(1 - z, 0)``
    up to the smoothing of its corner.

    >>> smoothed_hinge(np.array([-1.0, 0.5, 2.0]))
    (array([1.5  , 0.125, 0.   ]), array([-1. , -0.5,  0. ]))
    """
    z = check_float_array(z, "z")
    value = np.where(z <= 0, 0.5 - z, np.where(z < 1, 0.5 * (1 - z) ** 2, 0.0))
    deriv = np.where(z <= 0, -1.0, np.where(z < 1, z - 1.0, 0.0))
    return value, deriv


# --------------------------------------------------------------------------------------
# base class
# --------------------------------------------------------------------------------------


class Energy(BaseEstimator):
    """Base class of non-local energies ``L_psi(mu) = sum_k psi_k ell_k(mu)``.

    Subclasses take their settings in ``__init__`` (stored unchanged, scikit-learn style)
    and build data-dependent parts (dictionaries) in :meth:`fit`, which receives the
    encoded training label sequences. See the module docstring for the array layout.

    Attributes
    ----------
    uses_edges : bool
        Whether the energy depends on edge marginals (then ``gradient`` returns an edge
        gradient and inference carries per-position edge potentials).
    convex : bool
        Whether ``L_psi`` is convex for ``psi >= 0`` (needed for the guarantees of
        Bethe-RDA and for the accelerated method).
    """

    uses_edges = False
    convex = True

    def fit(self, y, n_labels):
        """Build data-dependent parts from encoded training labels (default: only checks).

        Parameters
        ----------
        y : list of int arrays of shape (n_tokens_i,)
            Training label sequences, encoded as ``0 .. n_labels - 1``.
        n_labels : int

        Returns
        -------
        self
        """
        n_labels = check_scalar_param(n_labels, "n_labels", kind="int", low=1)
        self.n_labels_ = n_labels
        self._check_n_labels(n_labels)
        return self

    @property
    def n_weights(self):
        """Number of weights ``psi_k`` (terms ``ell_k``)."""
        raise NotImplementedError

    def _check_n_labels(self, n_labels):
        """Raise a ValueError if the energy does not fit a label set of this size."""

    def check_batch(self, offsets, n_labels, index=None):
        """Raise a ValueError if the energy cannot be evaluated on this batch."""
        self._check_n_labels(n_labels)

    # ---- to implement --------------------------------------------------------------
    def term_values(self, node, edge, offsets, index=None):
        """``ell_k(mu_s)`` for every sequence ``s`` and term ``k``: ``(n_seq, n_weights)``."""
        raise NotImplementedError

    def gradient(self, node, edge, offsets, psi, index=None):
        """(Sub)gradient of ``L_psi`` with respect to the marginals.

        Returns
        -------
        grad_node : ndarray of shape (n_tokens, n_labels)
        grad_edge : ndarray of shape (n_tokens - n_sequences, n_labels, n_labels) or None
            None when the energy does not depend on edge marginals.
        """
        raise NotImplementedError

    def term_gradient_dot(self, node, edge, offsets, d_node, d_edge, index=None):
        """``<grad ell_k(mu_s), d_s>`` per sequence and term: ``(n_seq, n_weights)``.

        With ``d = S(y) - m`` this gives the psi-gradient of the surrogate likelihood
        (eq. 12, with the corrected sign ``d log Q / d psi_k = -<grad ell_k, S(y) - m>``).
        """
        raise NotImplementedError

    def lipschitz(self, offsets, psi, index=None):
        """Per-sequence Lipschitz constant of ``grad L_psi`` (accelerated inference)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no Lipschitz-continuous gradient; pass lipschitz= explicitly "
            "to use accelerated inference."
        )

    # ---- derived ------------------------------------------------------------------------
    def value(self, node, edge, offsets, psi, index=None):
        """``L_psi(mu_s)`` for every sequence: ``(n_seq,)``."""
        node = check_float_array(node, "node", ndim=2)
        n_labels = getattr(self, "n_labels_", None)
        if n_labels is not None and node.shape[1] != n_labels:
            raise ValueError(f"node must have one column per label ({n_labels}), got shape {node.shape}.")
        offsets = check_offsets(offsets, n_rows=node.shape[0], allow_empty_segments=False)
        psi = check_float_array(psi, "psi")
        if psi.size != (len(offsets) - 1) * self.n_weights:
            raise ValueError(f"psi must hold {self.n_weights} weight(s) per sequence ({len(offsets) - 1} sequences), "
                             f"got shape {psi.shape}.")
        psi = psi.reshape(len(offsets) - 1, -1)
        return np.sum(psi * self.term_values(node, edge, offsets, index=index), axis=1)


# --------------------------------------------------------------------------------------
# soft linear-measurement constraints (eqs. 4-5, 20)
# --------------------------------------------------------------------------------------


class SoftConstraintEnergy(Energy):
    """Soft constraints on linear measurements: ``sum_j psi_j h(<a_j, mu> - b_j)`` (equations 4-5, 20).

    The measurement ``a_j . mu`` of a sequence is a weighted count of expected labels and,
    optionally, expected transitions over its positions::

        a_j . mu = sum_t node_coef[j] . mu_t  +  sum_t <edge_coef[j], mu_{t,t+1}>

    (e.g. ``node_coef[j] = e_first - e_last`` measures "#first names - #last names") and
    ``h`` is Rennie's smoothed hinge (:func:`smoothed_hinge`), which penalises measurements
    below ``b_j + 1``. With ``psi >= 0`` the energy is convex with a Lipschitz gradient.

    Parameters
    ----------
    node_coef : array-like of shape (n_constraints, n_labels)
        Per-label coefficients of each measurement.
    edge_coef : array-like of shape (n_constraints, n_labels, n_labels), default=None
        Per-transition coefficients ``[from, to]``; None for node-only measurements.
    offset : float or array-like of shape (n_constraints,), default=0.0
        ``b_j``.

    Examples
    --------
    >>> import numpy as np
    >>> e = SoftConstraintEnergy(node_coef=[[1.0, -1.0]]).fit([np.array([0, 1])], 2)
    >>> node = np.full((2, 2), 0.5); offsets = np.array([0, 2])
    >>> e.value(node, None, offsets, psi=[[2.0]])  # measurement 0 -> h(0) = 1/2
    array([1.])
    """

    convex = True

    def __init__(self, node_coef, edge_coef=None, offset=0.0):
        self.node_coef = node_coef
        self.edge_coef = edge_coef
        self.offset = offset

    def _arrays(self):
        A = check_float_array(self.node_coef, "node_coef", check_values=False)
        if A.ndim != 2:
            raise ValueError(f"node_coef must be 2D (n_constraints, n_labels), got shape {A.shape}.")
        check_float_array(A, "node_coef")  # names the first NaN / infinity
        E = None
        if self.edge_coef is not None:
            E = np.asarray(self.edge_coef, dtype=np.float64)
            if E.shape != (A.shape[0], A.shape[1], A.shape[1]):
                raise ValueError(
                    f"edge_coef must have shape {(A.shape[0], A.shape[1], A.shape[1])} "
                    f"(n_constraints, n_labels, n_labels), got {E.shape}."
                )
            if not np.all(np.isfinite(E)):
                raise ValueError("edge_coef contains NaN or infinity.")
        b = np.broadcast_to(np.asarray(self.offset, dtype=np.float64), (A.shape[0],))
        if not np.all(np.isfinite(b)):
            raise ValueError("offset contains NaN or infinity.")
        return A, E, b

    @property
    def uses_edges(self):
        return self.edge_coef is not None

    @property
    def n_weights(self):
        return int(np.asarray(self.node_coef).shape[0])

    def _check_n_labels(self, n_labels):
        A, _, _ = self._arrays()
        if A.shape[1] != n_labels:
            raise ValueError(
                f"SoftConstraintEnergy: node_coef has {A.shape[1]} label columns but the model has "
                f"{n_labels} labels."
            )

    def _measure(self, node, edge, offsets, A, E):
        """``a_j . d`` per sequence (without the offset): (n_seq, n_constraints)."""
        m = segment_sum(node, offsets) @ A.T
        if E is not None:
            if edge is None:
                raise ValueError("SoftConstraintEnergy with edge_coef needs edge marginals.")
            es = segment_sum(edge, edge_offsets(offsets))
            m = m + es.reshape(es.shape[0], -1) @ E.reshape(E.shape[0], -1).T
        return m

    def term_values(self, node, edge, offsets, index=None):
        A, E, b = self._arrays()
        return smoothed_hinge(self._measure(node, edge, offsets, A, E) - b)[0]

    def gradient(self, node, edge, offsets, psi, index=None):
        A, E, b = self._arrays()
        psi = np.asarray(psi, dtype=np.float64).reshape(len(offsets) - 1, -1)
        _, deriv = smoothed_hinge(self._measure(node, edge, offsets, A, E) - b)
        w = psi * deriv  # (n_seq, J)
        grad_node = segment_repeat(w @ A, offsets)
        grad_edge = None
        if E is not None:
            L = A.shape[1]
            per_seq = (w @ E.reshape(E.shape[0], -1)).reshape(-1, L, L)
            grad_edge = segment_repeat(per_seq, edge_offsets(offsets))
        return grad_node, grad_edge

    def term_gradient_dot(self, node, edge, offsets, d_node, d_edge, index=None):
        A, E, b = self._arrays()
        _, deriv = smoothed_hinge(self._measure(node, edge, offsets, A, E) - b)
        return deriv * self._measure(d_node, d_edge, offsets, A, E)

    def lipschitz(self, offsets, psi, index=None):
        """``sum_j psi_j ||a_j||_2^2`` per sequence (``h''`` is at most 1)."""
        A, E, _ = self._arrays()
        psi = np.asarray(psi, dtype=np.float64).reshape(len(offsets) - 1, -1)
        n = np.diff(offsets).astype(np.float64)
        sq = n[:, None] * np.sum(A**2, axis=1)[None]
        if E is not None:
            sq = sq + (n - 1)[:, None] * np.sum(E.reshape(E.shape[0], -1) ** 2, axis=1)[None]
        return np.sum(psi * sq, axis=1)


# --------------------------------------------------------------------------------------
# dictionary energies (eqs. 21-22)
# --------------------------------------------------------------------------------------


def _check_fitted_labels(energy, n_labels):
    check_is_fitted(energy, "n_labels_")
    if n_labels != energy.n_labels_:
        raise ValueError(
            f"{type(energy).__name__} was fitted for {energy.n_labels_} labels but the batch has {n_labels}."
        )


def _check_encoded_labels(y, n_labels, who):
    if isinstance(n_labels, bool) or not isinstance(n_labels, numbers.Integral) or n_labels < 1:
        raise ValueError(f"{who}: n_labels must be a positive integer, got {n_labels!r}.")
    if y is None or isinstance(y, (str, bytes)) or not hasattr(y, "__iter__"):
        raise ValueError(f"{who}: y must be a list of label sequences, got {type(y).__name__}.")
    out = []
    for i, labels in enumerate(y):
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.shape[0] == 0:
            raise ValueError(f"{who}: training sequence {i} must be a non-empty 1D label array.")
        if labels.dtype.kind not in "iu" or labels.min() < 0 or labels.max() >= n_labels:
            raise ValueError(
                f"{who}: training sequence {i} must hold encoded labels in [0, {n_labels - 1}]."
            )
        out.append(labels.astype(np.int64))
    if not out:
        raise ValueError(f"{who}: no training sequences to build the dictionary from.")
    return out


class UnigramDictionaryEnergy(Energy):
    """Unigram-count dictionary ``psi * min_i ||u_i - U(mu)||_1`` (equation 21; non-convex).

    ``U(mu) = sum_t mu_t`` is the vector of expected label counts of a sequence and the
    ``u_i`` are the distinct label-count vectors of the training sequences (built by
    :meth:`fit`). The subgradient uses the closest ``u_i`` (first one on ties) and
    ``sign(U(mu) - u_i)``.

    Attributes
    ----------
    counts_ : ndarray of shape (n_words, n_labels)
        The distinct training unigram-count vectors.

    Examples
    --------
    >>> import numpy as np
    >>> e = UnigramDictionaryEnergy().fit([np.array([0, 1, 1]), np.array([1, 1, 0])], 2)
    >>> e.counts_
    array([[1., 2.]])
    """

    convex = False

    def __init__(self):
        pass

    @property
    def n_weights(self):
        return 1

    def fit(self, y, n_labels):
        y = _check_encoded_labels(y, n_labels, "UnigramDictionaryEnergy")
        counts = np.stack([np.bincount(labels, minlength=n_labels) for labels in y]).astype(np.float64)
        self.counts_ = np.unique(counts, axis=0)
        self.n_labels_ = int(n_labels)
        return self

    def _check_n_labels(self, n_labels):
        _check_fitted_labels(self, n_labels)

    def _closest(self, node, offsets):
        U = segment_sum(node, offsets)  # (n_seq, L)
        # one array op over (n_seq, n_words, L), chunked to bound memory
        n_seq, n_words = U.shape[0], self.counts_.shape[0]
        step = max(1, int(2e7 // max(1, n_words * U.shape[1])))
        best = np.empty(n_seq, dtype=np.int64)
        dist = np.empty(n_seq)
        for lo in range(0, n_seq, step):
            d = np.abs(U[lo : lo + step, None, :] - self.counts_[None]).sum(axis=2)
            best[lo : lo + step] = np.argmin(d, axis=1)
            dist[lo : lo + step] = d[np.arange(d.shape[0]), best[lo : lo + step]]
        return U, best, dist

    def term_values(self, node, edge, offsets, index=None):
        return self._closest(node, offsets)[2][:, None]

    def _sign(self, node, offsets):
        U, best, _ = self._closest(node, offsets)
        return np.sign(U - self.counts_[best])  # (n_seq, L)

    def gradient(self, node, edge, offsets, psi, index=None):
        psi = np.asarray(psi, dtype=np.float64).reshape(len(offsets) - 1, -1)
        return segment_repeat(psi[:, :1] * self._sign(node, offsets), offsets), None

    def term_gradient_dot(self, node, edge, offsets, d_node, d_edge, index=None):
        return np.sum(self._sign(node, offsets) * segment_sum(d_node, offsets), axis=1)[:, None]


class WordDictionaryEnergy(Energy):
    """Word dictionary ``psi * min_i ||w_i - mu||_1`` over same-length words (equation 22; non-convex).

    The ``w_i`` are the distinct training label sequences (built by :meth:`fit`), as
    concatenated one-hot node vectors, and ``mu`` the node marginals of a sequence. Only
    words of the sequence's own length are compared (a distance between vectors of
    different lengths is undefined). Since node marginals sum to one,
    ``||w - mu||_1 = 2 * sum_t (1 - mu_t[w_t])``; the subgradient at the closest word
    ``w*`` (first one on ties) is ``1 - 2 * onehot(w*)`` per position.

    Parameters
    ----------
    unknown_length : {"ignore", "error"}, default="ignore"
        What happens to a sequence whose length matches no training word: ``"ignore"``
        gives it no energy (zero value and gradient, so inference returns the base CRF's
        marginals for it); ``"error"`` raises a ValueError.

    Attributes
    ----------
    words_ : dict of int -> ndarray of shape (n_words_of_length, length)
        Distinct training words grouped by length.

    Examples
    --------
    >>> import numpy as np
    >>> e = WordDictionaryEnergy().fit([np.array([0, 1]), np.array([1, 1, 0])], 2)
    >>> sorted(e.words_)
    [2, 3]
    >>> node = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> e.value(node, None, np.array([0, 2]), psi=[[1.0]])  # 2 * (0.1 + 0.2)
    array([0.6])
    """

    convex = False

    def __init__(self, unknown_length="ignore"):
        self.unknown_length = unknown_length

    @property
    def n_weights(self):
        return 1

    def fit(self, y, n_labels):
        if self.unknown_length not in ("ignore", "error"):
            raise ValueError(f"unknown_length must be 'ignore' or 'error', got {self.unknown_length!r}.")
        y = _check_encoded_labels(y, n_labels, "WordDictionaryEnergy")
        by_len = {}
        for labels in y:
            by_len.setdefault(labels.shape[0], []).append(labels)
        self.words_ = {n: np.unique(np.stack(ws), axis=0) for n, ws in sorted(by_len.items())}
        self.n_labels_ = int(n_labels)
        return self

    def _check_n_labels(self, n_labels):
        _check_fitted_labels(self, n_labels)

    def check_batch(self, offsets, n_labels, index=None):
        self._check_n_labels(n_labels)
        if self.unknown_length == "error":
            lengths = np.diff(offsets)
            missing = ~np.isin(lengths, list(self.words_))
            if missing.any():
                s = int(np.flatnonzero(missing)[0])
                raise ValueError(
                    f"WordDictionaryEnergy: sequence {s} has length {lengths[s]}, and no training word has "
                    "that length (unknown_length='error')."
                )

    def _closest(self, node, offsets):
        """Per sequence: the closest word's distance (0 if none) and its token-level labels (-1 if none)."""
        lengths = np.diff(offsets)
        dist = np.zeros(lengths.shape[0])
        best_tokens = np.full(node.shape[0], -1, dtype=np.int64)
        for n in np.unique(lengths):
            words = self.words_.get(int(n))
            seqs = np.flatnonzero(lengths == n)
            if words is None:
                continue
            # (n_seqs_of_len, n, L) gathered at the word labels: one array op per length group
            mu = node[offsets[seqs][:, None] + np.arange(n)[None, :]]
            score = mu[:, np.arange(n)[None, :], words].sum(axis=2)  # (n_seqs, n_words)
            best = np.argmax(score, axis=1)
            dist[seqs] = 2.0 * (n - score[np.arange(seqs.shape[0]), best])
            best_tokens[offsets[seqs][:, None] + np.arange(n)[None, :]] = words[best]
        return dist, best_tokens

    def _direction(self, node, offsets):
        """The l1 subgradient ``1 - 2 onehot(w*)`` per token (zero rows where no word)."""
        _, best_tokens = self._closest(node, offsets)
        g = np.ones_like(node)
        has = best_tokens >= 0
        g[~has] = 0.0
        rows = np.flatnonzero(has)
        g[rows, best_tokens[rows]] = -1.0
        return g

    def term_values(self, node, edge, offsets, index=None):
        return self._closest(node, offsets)[0][:, None]

    def gradient(self, node, edge, offsets, psi, index=None):
        psi = np.asarray(psi, dtype=np.float64).reshape(len(offsets) - 1, -1)
        return segment_repeat(psi[:, :1], offsets) * self._direction(node, offsets), None

    def term_gradient_dot(self, node, edge, offsets, d_node, d_edge, index=None):
        return segment_sum(np.sum(self._direction(node, offsets) * d_node, axis=1), offsets)[:, None]


# --------------------------------------------------------------------------------------
# collective graphical models (eq. 23)
# --------------------------------------------------------------------------------------


class PoissonCountEnergy(Energy):
    """Poisson likelihood of observed aggregate counts, for collective graphical models (equation 23).

    Each position ``t`` and label ``l`` of a sequence may carry an observed count
    ``y[t, l] ~ Poisson(rate * mu_t[l])``: ``mu`` are the node marginals of a population of
    ``N`` individuals moving along the chain (the CGM of Sheldon et al., 2013, with
    ``rate = detection_rate * N``). The energy is the negative log-likelihood::

        L_psi(mu) = psi * sum_{t, l observed} [rate * mu_t[l] - y[t, l] log(rate * mu_t[l])
                                                + log y[t, l]!]

    which is convex in ``mu``. With ``psi = 1 / N`` the non-local objective (2) equals the
    approximate CGM MAP objective of Sheldon et al. (2013) divided by ``N``.

    Parameters
    ----------
    counts : array-like of shape (n_tokens, n_labels) or list of such arrays
        Observed counts of each sequence (one array per sequence, or one array for a
        single sequence); NaN marks an unobserved count.
    rate : float, default=1.0
        Expected count of a label with marginal 1 (``detection_rate * population``).
    floor : float, default=1e-12
        Below ``floor`` the ``log`` is continued by its second-order Taylor expansion at
        ``floor``, so the energy stays convex and finite at ``mu = 0`` with a bounded
        gradient (``-2 psi y / floor`` there). The minimiser of eq. 2 is unchanged whenever
        its marginals are at least ``floor`` wherever a count is observed (the continuation
        lies below ``-log`` and meets it with equal value and slope at ``floor``).

    Notes
    -----
    The gradient ``psi * (rate - y / mu)`` is bounded above but not below: it grows like
    ``1 / mu`` where a count is observed and the marginal is small. A first RDA step from
    a base model that gives such a cell little mass (a bird seen where the model expects
    almost none) can overshoot and drive other marginals to ~0; their huge gradients then
    dominate RDA's gradient average for as many iterations as their size, and Bethe-RDA with
    ``beta = 0`` does not recover. Use ``bethe_inference(..., beta="auto")``, which damps such
    steps (Xiao's non-decreasing ``beta_t``) and otherwise runs the paper's ``beta = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> e = PoissonCountEnergy(counts=np.array([[3.0, np.nan]]), rate=10.0).fit(None, 2)
    >>> g, _ = e.gradient(np.array([[0.3, 0.7]]), None, np.array([0, 1]), psi=[[1.0]])
    >>> g  # rate - y / mu where observed
    array([[0., 0.]])
    >>> e = PoissonCountEnergy(counts=np.array([[3.0]]), rate=10.0, floor=0.1).fit(None, 1)
    >>> e.gradient(np.array([[0.0]]), None, np.array([0, 1]), psi=[[1.0]])[0]  # rate - 2 y / floor
    array([[-50.]])
    """

    convex = True

    def __init__(self, counts, rate=1.0, floor=1e-12):
        self.counts = counts
        self.rate = rate
        self.floor = floor

    @property
    def n_weights(self):
        return 1

    def fit(self, y=None, n_labels=None):
        counts = self.counts
        if isinstance(counts, np.ndarray) and counts.ndim == 2:
            counts = [counts]
        arrays = []
        for i, c in enumerate(counts):
            c = np.asarray(c, dtype=np.float64)
            if c.ndim != 2 or c.shape[0] == 0:
                raise ValueError(f"PoissonCountEnergy: counts of sequence {i} must be a non-empty 2D array.")
            obs = c[~np.isnan(c)]
            if np.any(obs < 0) or not np.all(np.isfinite(obs)):
                raise ValueError(f"PoissonCountEnergy: counts of sequence {i} must be finite and >= 0.")
            arrays.append(c)
        if not (isinstance(self.rate, numbers.Real) and np.isfinite(self.rate) and self.rate > 0):
            raise ValueError(f"PoissonCountEnergy: rate must be a positive number, got {self.rate!r}.")
        if not (isinstance(self.floor, numbers.Real) and np.isfinite(self.floor) and self.floor > 0):
            raise ValueError(f"PoissonCountEnergy: floor must be a positive number, got {self.floor!r}.")
        L = arrays[0].shape[1]
        if any(c.shape[1] != L for c in arrays):
            raise ValueError("PoissonCountEnergy: every sequence's counts must have the same number of labels.")
        if n_labels is not None and L != n_labels:
            raise ValueError(f"PoissonCountEnergy: counts have {L} label columns but the model has {n_labels}.")
        self.counts_, self.counts_offsets_ = pack_sequences(arrays)
        self.observed_ = ~np.isnan(self.counts_)
        self.log_factorial_ = np.where(self.observed_, gammaln(np.nan_to_num(self.counts_) + 1.0), 0.0)
        self.n_labels_ = L
        return self

    def _rows(self, offsets, index):
        """Rows of counts_ for the batch, checking lengths."""
        check_is_fitted(self, "counts_")
        n_seq = len(offsets) - 1
        co = self.counts_offsets_
        if index is None:
            if n_seq != len(co) - 1:
                raise ValueError(
                    f"PoissonCountEnergy holds counts for {len(co) - 1} sequences but the batch has {n_seq}; "
                    "pass index= to select them."
                )
            index = np.arange(n_seq)
        index = np.asarray(index, dtype=np.int64)
        lengths = np.diff(offsets)
        have = co[index + 1] - co[index]
        if np.any(have != lengths):
            s = int(np.flatnonzero(have != lengths)[0])
            raise ValueError(
                f"PoissonCountEnergy: sequence {s} has {lengths[s]} positions but its counts have {have[s]} rows."
            )
        if np.array_equal(index, np.arange(len(co) - 1)):
            return slice(None)
        return np.repeat(co[index] - offsets[:-1], lengths) + np.arange(offsets[-1])

    def check_batch(self, offsets, n_labels, index=None):
        if n_labels != self.n_labels_:
            raise ValueError(f"PoissonCountEnergy: counts have {self.n_labels_} labels, the batch {n_labels}.")
        self._rows(offsets, index)

    def _log(self, mu):
        """``log(mu)``, continued below ``floor`` by its second-order Taylor expansion, and its derivative."""
        eps = self.floor
        low = mu < eps
        d = np.where(low, mu - eps, 0.0)
        safe = np.where(low, 1.0, mu)  # keeps log and 1 / mu away from the continued part
        log_mu = np.where(low, np.log(eps) + d / eps - 0.5 * (d / eps) ** 2, np.log(safe))
        inv_mu = np.where(low, (1.0 - d / eps) / eps, 1.0 / safe)
        return log_mu, inv_mu

    def term_values(self, node, edge, offsets, index=None):
        rows = self._rows(offsets, index)
        y, obs = np.nan_to_num(self.counts_[rows]), self.observed_[rows]
        log_mu, _ = self._log(node)
        nll = np.where(obs, self.rate * node - y * (np.log(self.rate) + log_mu) + self.log_factorial_[rows], 0.0)
        return segment_sum(nll.sum(axis=1), offsets)[:, None]

    def gradient(self, node, edge, offsets, psi, index=None):
        psi = np.asarray(psi, dtype=np.float64).reshape(len(offsets) - 1, -1)
        rows = self._rows(offsets, index)
        y, obs = np.nan_to_num(self.counts_[rows]), self.observed_[rows]
        _, inv_mu = self._log(node)
        g = np.where(obs, self.rate - y * inv_mu, 0.0)
        return segment_repeat(psi[:, :1], offsets) * g, None

    def term_gradient_dot(self, node, edge, offsets, d_node, d_edge, index=None):
        g, _ = self.gradient(node, edge, offsets, np.ones((len(offsets) - 1, 1)), index=index)
        return segment_sum(np.sum(g * d_node, axis=1), offsets)[:, None]


# --------------------------------------------------------------------------------------
# per-sequence features for psi
# --------------------------------------------------------------------------------------


class RandomFourierMeanMap(TransformerMixin, BaseEstimator):
    """Approximate RBF kernel mean map of a sequence: random Fourier features averaged over tokens.

    Each token's feature vector goes through :class:`sklearn.kernel_approximation.RBFSampler`
    (random projection and cosine) and the results are averaged over the sequence, giving
    one vector per sequence (the "MM" features of Vilnis et al. 2015, Section 8.2) on which
    ``psi`` can depend linearly (``NonLocalCRF(psi_featurizer=...)``).

    Parameters
    ----------
    n_components : int, default=1000
    gamma : "scale" or float, default="scale"
        RBF bandwidth parameter ``exp(-gamma ||x - x'||^2)``. ``"scale"`` uses
        ``1 / (n_features * X.var())`` over all tokens, as scikit-learn's RBF estimators do;
        a fixed 1.0 makes the kernel vanish on, e.g., 128-pixel letter images.
    random_state : int, RandomState instance or None, default=None

    Examples
    --------
    >>> import numpy as np
    >>> X = [np.zeros((3, 2)), np.ones((2, 2))]
    >>> RandomFourierMeanMap(n_components=5, random_state=0).fit_transform(X).shape
    (2, 5)
    """

    def __init__(self, n_components=1000, gamma="scale", random_state=None):
        self.n_components = n_components
        self.gamma = gamma
        self.random_state = random_state

    def fit(self, X, y=None):
        from .utils.validation import check_sequences

        check_scalar_param(self.n_components, "n_components", kind="int", low=1)
        X = check_sequences(X)
        packed, _ = pack_sequences(X)
        self.sampler_ = RBFSampler(
            gamma=self.gamma, n_components=self.n_components, random_state=self.random_state
        ).fit(packed)
        self.n_features_in_ = packed.shape[1]
        return self

    def transform(self, X):
        from .utils.validation import check_sequences

        check_is_fitted(self)
        X = check_sequences(X, n_features=self.n_features_in_)
        packed, offsets = pack_sequences(X)
        Z = self.sampler_.transform(packed)
        return segment_sum(Z, offsets) / np.diff(offsets)[:, None]
