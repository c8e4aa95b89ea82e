"""Soft constraints by label name: templates for :class:`~sklearn_struct.NonLocalCRF`.

Each template states one rule about a label sequence ("each reference has at most one
title segment", "the first token is an author") in terms of label names. The rules are
compiled at fit time, against the model's ``classes_``, into linear measurements of the
node and edge marginals, and each becomes one smoothed-hinge term of a
:class:`ConstraintEnergy` with its own learned weight ``psi_j`` (eqs. 4-5 and 20 of Vilnis
et al. 2015)::

    L_psi(mu) = sum_j psi_j h(a_j . mu - b_j)

with ``h`` Rennie's smoothed hinge (:func:`~sklearn_struct.energies.smoothed_hinge`),
which is zero once ``a_j . mu - b_j >= 1``. For a hard labelling the measurement is an
integer count and the term is ``h(1 - v)``, with ``v >= 0`` the number of units by which
the rule is violated (:meth:`ConstraintEnergy.violations` returns ``v``); ``h(1 - v) = 0``
when the rule holds and ``v - 1/2`` when it is broken.

Pass a list of templates as ``NonLocalCRF(energy=[...])`` (or wrap it in
:class:`ConstraintEnergy` yourself); a custom :class:`~sklearn_struct.energies.Energy`
remains possible.

What is linear in the marginals
-------------------------------
Bethe projections need ``a_j . mu`` linear in the node and edge marginals of a chain:

- tokens of a label set ``S``: ``sum_t sum_{l in S} mu_t[l]`` (exact);
- segments of ``S`` (maximal runs of labels in ``S``): tokens minus the expected
  ``S -> S`` transitions, ``sum_t mu_t[S] - sum_t mu_{t,t+1}[S, S]``, which is the
  expected number of segment starts (exact);
- the label at the first or last position: ``mu_0[S]`` or ``mu_{n-1}[S]`` (exact);
- input-dependent counts ``sum_t w_t(x) mu_t[S]`` with weights computed from the
  sequence's features (exact).

Two of the requested rules are not linear, and the templates use linear stand-ins:

- **mutual exclusion** ("a and b do not both occur") is ``min(#a, #b) = 0``, a concave
  function of the counts. :class:`MutuallyExclusive` uses ``segments(a) + segments(b) <= 1``
  instead: exact for sequences with at most one segment of each (the case of citation
  fields such as journal / booktitle), and stricter otherwise (two journal segments also
  violate it).
- **order** ("every a comes before every b") needs the joint label distribution of
  non-adjacent positions, which the Bethe marginals of a chain do not contain.
  :class:`Precedes` counts only the adjacent violations, the expected ``b -> a``
  transitions ``sum_t mu_{t,t+1}[b, a]``; an ``a`` that follows a ``b`` after other labels
  is not penalised.
"""

import copy
import numbers
from collections.abc import Mapping

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .energies import Energy, smoothed_hinge
from .utils._params import store_init_params
from .utils.packing import edge_offsets, segment_repeat, segment_sum, transition_pairs
from .utils.validation import check_int_array, check_offsets

__all__ = [
    "ConstraintEnergy",
    "AtMostSegments",
    "AtLeastSegments",
    "ExactlySegments",
    "AtMostTokens",
    "AtLeastTokens",
    "MutuallyExclusive",
    "FirstLabel",
    "LastLabel",
    "Precedes",
    "InputDependent",
    "LinearConstraint",
]


# --------------------------------------------------------------------------------------
# templates
# --------------------------------------------------------------------------------------


class _Term:
    """One compiled linear measurement ``a . mu`` with its offset ``b`` (arrays over labels)."""

    def __init__(self, n_labels, name):
        L = n_labels
        self.name = name
        self.node = np.zeros(L)  # every position
        self.edge = np.zeros((L, L))  # every transition [from, to]
        self.first = np.zeros(L)
        self.last = np.zeros(L)
        self.offset = 0.0
        self.weights = None  # input-dependent: callable x -> (n_tokens,) on node coefficients `inp`
        self.inp = np.zeros(L)
        self.bound = None  # input-dependent bound: "all", a number or a callable x -> float
        self.sign = 1.0  # input-dependent: +1 for "at least bound", -1 for "at most bound"

    def add_tokens(self, S, sign):
        self.node[S] += sign

    def add_segments(self, S, sign):
        self.node[S] += sign
        self.edge[np.ix_(S, S)] -= sign

    def at_least(self, k):
        """The measurement so far must be ``>= k``: ``m - (k - 1) >= 1``."""
        self.offset = float(k) - 1.0
        return self

    def at_most(self, k):
        """The measurement so far must be ``<= k``: ``-m + k + 1 >= 1``."""
        self.node, self.edge, self.first, self.last = -self.node, -self.edge, -self.first, -self.last
        self.inp = -self.inp
        self.offset = -(float(k) + 1.0)
        return self


def _label_set(label, index_of, who):
    labels = list(label) if isinstance(label, (list, tuple, set, frozenset, np.ndarray)) else [label]
    if not labels:
        raise ValueError(f"{who}: empty label set.")
    out = []
    for lab in labels:
        if lab not in index_of:
            raise ValueError(
                f"{who}: label {lab!r} is not one of the model's classes {list(index_of)}."
            )
        out.append(index_of[lab])
    return np.array(sorted(set(out)), dtype=np.int64)


def _check_count(k, who, name="k"):
    if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 0:
        raise ValueError(f"{who}: {name} must be an integer >= 0, got {k!r}.")
    return int(k)


class Constraint(BaseEstimator):
    """Base class of constraint templates (compiled by :class:`ConstraintEnergy`)."""

    def _terms(self, index_of, n_labels):
        raise NotImplementedError

    def _who(self):
        return repr(self)

    def _check_sense(self):
        """Check the ``sense`` parameter; returns the template's name for messages."""
        if self.sense not in ("at_least", "at_most"):
            raise ValueError(f"{self._who()}: sense must be 'at_least' or 'at_most', got {self.sense!r}.")
        return self._who()


class _CountBound(Constraint):
    """``label`` (a label or a list of labels) counted in ``_unit`` ("segments" or "tokens"),
    bounded by ``k`` in the direction ``_sense`` ("at_most" or "at_least")."""

    _unit, _sense = "segments", "at_most"

    def __init__(self, label, k=1):
        self.label = label
        self.k = k

    def _terms(self, index_of, n_labels):
        who = self._who()
        t = _Term(n_labels, f"{self._unit}({self.label!r}) {'<=' if self._sense == 'at_most' else '>='} {self.k}")
        getattr(t, f"add_{self._unit}")(_label_set(self.label, index_of, who), 1.0)
        return [getattr(t, self._sense)(_check_count(self.k, who))]


class AtMostSegments(_CountBound):
    """At most ``k`` segments (maximal runs) of ``label`` (a label or a list of labels).

    Examples
    --------
    >>> AtMostSegments("title", 1)
    AtMostSegments(label='title')
    """


class AtLeastSegments(_CountBound):
    """At least ``k`` segments of ``label`` (a label or a list of labels)."""

    _sense = "at_least"


class ExactlySegments(Constraint):
    """Exactly ``k`` segments of ``label``: two terms (at least and at most), two weights."""

    def __init__(self, label, k=1):
        self.label = label
        self.k = k

    def _terms(self, index_of, n_labels):
        return (AtLeastSegments(self.label, self.k)._terms(index_of, n_labels)
                + AtMostSegments(self.label, self.k)._terms(index_of, n_labels))


class AtMostTokens(_CountBound):
    """At most ``k`` tokens labelled ``label`` (a label or a list of labels)."""

    _unit = "tokens"

    def __init__(self, label, k):  # no default bound on the number of tokens
        super().__init__(label, k)


class AtLeastTokens(_CountBound):
    """At least ``k`` tokens labelled ``label`` (a label or a list of labels)."""

    _unit, _sense = "tokens", "at_least"


class MutuallyExclusive(Constraint):
    """``a`` and ``b`` do not both occur, as ``segments(a) + segments(b) <= max_segments``.

    A linear stand-in for the non-linear rule ``min(#a, #b) = 0`` (see the module
    docstring): exact when each label forms at most one segment.
    """

    def __init__(self, a, b, max_segments=1):
        self.a = a
        self.b = b
        self.max_segments = max_segments

    def _terms(self, index_of, n_labels):
        who = self._who()
        A, B = _label_set(self.a, index_of, who), _label_set(self.b, index_of, who)
        if np.intersect1d(A, B).size:
            raise ValueError(f"{who}: the two label sets overlap.")
        t = _Term(n_labels, f"segments({self.a!r}) + segments({self.b!r}) <= {self.max_segments}")
        t.add_segments(A, 1.0)
        t.add_segments(B, 1.0)
        return [t.at_most(_check_count(self.max_segments, who, "max_segments"))]


class _EndLabel(Constraint):
    """The token at the ``_end`` ("first" or "last") of the sequence is labelled ``label``."""

    _end = "first"

    def __init__(self, label):
        self.label = label

    def _terms(self, index_of, n_labels):
        t = _Term(n_labels, f"{self._end} in {self.label!r}")
        getattr(t, self._end)[_label_set(self.label, index_of, self._who())] = 1.0
        return [t.at_least(1)]


class FirstLabel(_EndLabel):
    """The first token is labelled ``label`` (or one of a list of labels)."""


class LastLabel(_EndLabel):
    """The last token is labelled ``label`` (or one of a list of labels)."""

    _end = "last"


class Precedes(Constraint):
    """``a`` comes before ``b``: no ``b`` token is directly followed by an ``a`` token.

    Linear stand-in for the order rule (see the module docstring): it counts the adjacent
    ``b -> a`` transitions only.
    """

    def __init__(self, a, b):
        self.a = a
        self.b = b

    def _terms(self, index_of, n_labels):
        who = self._who()
        A, B = _label_set(self.a, index_of, who), _label_set(self.b, index_of, who)
        t = _Term(n_labels, f"{self.a!r} before {self.b!r} (adjacent)")
        t.edge[np.ix_(B, A)] = 1.0
        return [t.at_most(0)]


class InputDependent(Constraint):
    """A rule whose coefficients come from the sequence's features.

    The measurement is ``sum_t w_t(x) mu_t[label]`` with ``w = weights(x)``, one
    non-negative number per token computed from the sequence's feature matrix ``x`` (an
    array or a sparse row matrix, as passed to ``fit`` / ``predict``). ``sense="at_least"``
    asks for ``measurement >= bound``, ``"at_most"`` for ``measurement <= bound``.
    ``bound="all"`` is ``sum_t w_t`` (with 0/1 weights: every flagged token has the label);
    a number or a callable ``x -> float`` also work. ``name``, if given, is the term's name
    in :attr:`ConstraintEnergy.term_names_`.

    Examples
    --------
    "Every token whose feature 7 is on (say, it contains 'pp.') is pages":

    >>> import numpy as np
    >>> rule = InputDependent("pages", lambda x: np.asarray(x[:, 7].todense()).ravel() > 0)
    """

    def __init__(self, label, weights, sense="at_least", bound="all", name=None):
        store_init_params(self, locals())

    def _terms(self, index_of, n_labels):
        who = self._check_sense()
        if not callable(self.weights):
            raise ValueError(f"{who}: weights must be a callable x -> (n_tokens,) array.")
        bound = self.bound
        if not (callable(bound) or bound == "all" or (isinstance(bound, numbers.Real) and np.isfinite(bound))):
            raise ValueError(f"{who}: bound must be 'all', a finite number or a callable, got {bound!r}.")
        if self.name is not None and not isinstance(self.name, str):
            raise ValueError(f"{who}: name must be a str or None, got {type(self.name).__name__}.")
        t = _Term(n_labels, self.name or f"input-dependent tokens({self.label!r}) {self.sense}")
        t.inp[_label_set(self.label, index_of, who)] = 1.0
        t.weights = self.weights
        t.bound = bound
        t.sign = 1.0 if self.sense == "at_least" else -1.0
        return [t.at_least(0) if self.sense == "at_least" else t.at_most(0)]


class LinearConstraint(Constraint):
    """A general linear rule by label name: ``measurement >= bound`` or ``<= bound``.

    ``measurement = sum_t node[l] mu_t[l] + sum_t edge[(a, b)] mu_{t,t+1}[a, b]
    + first[l] mu_0[l] + last[l] mu_{n-1}[l]``, with the coefficients given as dicts keyed
    by label (``edge`` by ``(from, to)`` pairs). ``name``, if given, is the term's name in
    :attr:`ConstraintEnergy.term_names_` (default: ``"linear <sense> <bound>"``).

    Examples
    --------
    "As many first names as last names" (Anzaroot et al.'s kind of constraint), as two rules:

    >>> le = LinearConstraint(node={"first": 1, "last": -1}, sense="at_most", bound=0)
    >>> ge = LinearConstraint(node={"first": 1, "last": -1}, sense="at_least", bound=0)
    """

    def __init__(self, node=None, edge=None, first=None, last=None, sense="at_least", bound=0, name=None):
        store_init_params(self, locals())

    def _terms(self, index_of, n_labels):
        who = self._check_sense()
        if not (isinstance(self.bound, numbers.Real) and np.isfinite(self.bound)):
            raise ValueError(f"{who}: bound must be a finite number, got {self.bound!r}.")
        if self.name is not None and not isinstance(self.name, str):
            raise ValueError(f"{who}: name must be a str or None, got {type(self.name).__name__}.")
        t = _Term(n_labels, self.name or f"linear {self.sense} {self.bound}")
        for part, arr in (("node", t.node), ("first", t.first), ("last", t.last)):
            for lab, c in _coefficients(self, part, who):
                arr[_label_set(lab, index_of, who)] += c
        for pair, c in _coefficients(self, "edge", who):
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise ValueError(f"{who}: edge keys must be (from_label, to_label) pairs, got {pair!r}.")
            t.edge[np.ix_(_label_set(pair[0], index_of, who), _label_set(pair[1], index_of, who))] += c
        return [t.at_least(self.bound) if self.sense == "at_least" else t.at_most(self.bound)]


def _coefficients(rule, part, who):
    """``(key, coefficient)`` pairs of the dict parameter ``part`` of ``rule``, each a finite number."""
    value = getattr(rule, part)
    if value is None:
        return []
    if not isinstance(value, Mapping):
        raise ValueError(f"{who}: {part} must be a dict label -> coefficient, got a {type(value).__name__}.")
    for key, c in value.items():
        if isinstance(c, bool) or not isinstance(c, numbers.Real) or not np.isfinite(c):
            raise ValueError(f"{who}: {part}[{key!r}] = {c!r} is not a finite number.")
    return [(key, float(c)) for key, c in value.items()]


# --------------------------------------------------------------------------------------
# the energy
# --------------------------------------------------------------------------------------


class ConstraintEnergy(Energy):
    """Soft constraints given as templates by label name, one learned weight per term.

    ``L_psi(mu) = sum_j psi_j h(a_j . mu - b_j)``, where each template of ``constraints``
    contributes one term (two for :class:`ExactlySegments`); see the module docstring.
    Label names are resolved against the model's ``classes_`` in :meth:`fit`.

    Parameters
    ----------
    constraints : list of Constraint
        The rules, e.g. ``[AtMostSegments("title"), FirstLabel("author")]``.

    Attributes
    ----------
    term_names_ : list of str
        A readable name per term (the order of ``psi_``).
    node_coef_, first_coef_, last_coef_ : ndarray of shape (n_terms, n_labels)
        Coefficients of the node marginals at every, the first and the last position.
    edge_coef_ : ndarray of shape (n_terms, n_labels, n_labels) or None
        Coefficients of the transition marginals ``[from, to]``; None if no term uses them.
    offset_ : ndarray of shape (n_terms,)
        ``b_j`` (input-dependent terms add their per-sequence bound).

    Examples
    --------
    >>> import numpy as np
    >>> energy = ConstraintEnergy([AtMostSegments("title", 1), FirstLabel("author")])
    >>> energy = energy.fit(None, 2, classes=np.array(["author", "title"]))
    >>> energy.term_names_
    ["segments('title') <= 1", "first in 'author'"]
    >>> y = [np.array([0, 1, 0, 1]), np.array([1, 1, 0])]  # encoded: 0 = author, 1 = title
    >>> energy.violations(y)  # 2 title segments (1 too many); first token a title
    array([[1., 0.],
           [0., 1.]])
    """

    convex = True

    def __init__(self, constraints):
        self.constraints = constraints

    @property
    def uses_edges(self):
        return getattr(self, "edge_coef_", None) is not None

    @property
    def n_weights(self):
        check_is_fitted(self, "term_names_")
        return len(self.term_names_)

    def fit(self, y, n_labels, classes=None):
        """Resolve the templates' label names against ``classes`` (default: the integers from 0 to ``n_labels - 1``)."""
        if not isinstance(n_labels, numbers.Integral) or n_labels < 1:
            raise ValueError(f"ConstraintEnergy: n_labels must be a positive integer, got {n_labels!r}.")
        classes = np.arange(n_labels) if classes is None else np.asarray(classes)
        if classes.shape != (n_labels,):
            raise ValueError(f"ConstraintEnergy: classes must have {n_labels} entries, got {classes.shape}.")
        constraints = self.constraints
        if isinstance(constraints, Constraint) or not isinstance(constraints, (list, tuple)) or not constraints:
            raise ValueError("ConstraintEnergy: constraints must be a non-empty list of constraint templates.")
        index_of = {c.item() if hasattr(c, "item") else c: i for i, c in enumerate(classes)}
        terms = []
        for i, c in enumerate(constraints):
            if not isinstance(c, Constraint):
                raise ValueError(
                    f"ConstraintEnergy: constraint {i} is a {type(c).__name__}, not a template from "
                    "sklearn_struct.constraints."
                )
            terms.extend(c._terms(index_of, int(n_labels)))
        self.term_names_ = [t.name for t in terms]
        self.node_coef_ = np.array([t.node for t in terms])
        self.first_coef_ = np.array([t.first for t in terms])
        self.last_coef_ = np.array([t.last for t in terms])
        edge = np.array([t.edge for t in terms])
        self.edge_coef_ = edge if np.any(edge) else None
        self.offset_ = np.array([t.offset for t in terms])
        self.input_terms_ = np.array([j for j, t in enumerate(terms) if t.weights is not None], dtype=np.int64)
        self._input = [(t.weights, t.bound, t.sign, t.inp) for t in terms if t.weights is not None]
        self.n_labels_ = int(n_labels)
        self._bound = None
        return self

    def _check_n_labels(self, n_labels):
        check_is_fitted(self, "term_names_")
        if n_labels != self.n_labels_:
            raise ValueError(f"ConstraintEnergy was fitted for {self.n_labels_} labels but the batch has {n_labels}.")

    # ---- input-dependent terms ---------------------------------------------------------
    def bind(self, X):
        """A copy holding the input-dependent coefficients of the sequences ``X`` (self if none)."""
        check_is_fitted(self, "term_names_")
        if not self._input:
            return self
        lengths = np.array([x.shape[0] for x in X], dtype=np.int64)
        W = np.zeros((int(lengths.sum()), len(self._input)))
        B = np.zeros((len(X), len(self._input)))
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        for s, x in enumerate(X):
            for j, (weights, bound, sign, _) in enumerate(self._input):
                w = np.asarray(weights(x), dtype=np.float64).ravel()
                if w.shape != (lengths[s],) or not np.all(np.isfinite(w)):
                    name = self.term_names_[self.input_terms_[j]]
                    raise ValueError(
                        f"ConstraintEnergy: the weights of input-dependent term {name!r} "
                        f"must be {lengths[s]} finite numbers for sequence {s}, got shape {w.shape}."
                    )
                b = float(np.sum(w)) if isinstance(bound, str) else float(bound(x) if callable(bound) else bound)
                if not np.isfinite(b):
                    raise ValueError(f"ConstraintEnergy: the bound of sequence {s} is not finite.")
                W[offsets[s] : offsets[s + 1], j] = w
                B[s, j] = sign * b
        bound_copy = copy.copy(self)
        bound_copy._bound = (W, B, offsets)
        return bound_copy

    def _rows(self, offsets, index):
        """Token rows and sequence rows of the bound inputs for this batch."""
        if self._bound is None:
            raise ValueError(
                "ConstraintEnergy has input-dependent terms: call bind(X) with the batch's sequences first."
            )
        W, B, own = self._bound
        n_seq = len(offsets) - 1
        index = np.arange(n_seq) if index is None else np.asarray(index, dtype=np.int64)
        if index.shape != (n_seq,) or (index.size and (index.min() < 0 or index.max() >= len(own) - 1)):
            raise ValueError(f"ConstraintEnergy: the batch's {n_seq} sequences do not match the bound inputs.")
        lengths = np.diff(offsets)
        if np.any(own[index + 1] - own[index] != lengths):
            s = int(np.flatnonzero(own[index + 1] - own[index] != lengths)[0])
            raise ValueError(f"ConstraintEnergy: sequence {s} of the batch differs in length from its bound input.")
        tok = np.repeat(own[index] - offsets[:-1], lengths) + np.arange(offsets[-1])
        return W[tok], B[index]

    def check_batch(self, offsets, n_labels, index=None):
        self._check_n_labels(n_labels)
        if self._input:
            self._rows(offsets, index)

    # ---- the energy --------------------------------------------------------------------
    def _measure(self, node, edge, offsets, W=None):
        """Linear part ``a_j . d`` per sequence: (n_seq, n_terms)."""
        first, last = offsets[:-1], offsets[1:] - 1
        m = segment_sum(node, offsets) @ self.node_coef_.T
        m += node[first] @ self.first_coef_.T + node[last] @ self.last_coef_.T
        if self.edge_coef_ is not None:
            if edge is None:
                raise ValueError("ConstraintEnergy with transition terms needs edge marginals.")
            J, L = self.edge_coef_.shape[:2]
            es = segment_sum(edge, edge_offsets(offsets))
            m += es.reshape(es.shape[0], -1) @ self.edge_coef_.reshape(J, -1).T
        if W is not None:
            inp = np.array([c[3] for c in self._input])  # (J_in, L)
            m[:, self.input_terms_] += segment_sum(W * (node @ inp.T), offsets)
        return m

    def _z(self, node, edge, offsets, index):
        offsets = np.asarray(offsets, dtype=np.int64)
        W = B = None
        if self._input:
            W, B = self._rows(offsets, index)
        z = self._measure(node, edge, offsets, W) - self.offset_
        if B is not None:
            z[:, self.input_terms_] -= B
        return z, W

    def term_values(self, node, edge, offsets, index=None):
        return smoothed_hinge(self._z(node, edge, offsets, index)[0])[0]

    def gradient(self, node, edge, offsets, psi, index=None):
        offsets = np.asarray(offsets, dtype=np.int64)
        psi = np.asarray(psi, dtype=np.float64).reshape(len(offsets) - 1, -1)
        z, W = self._z(node, edge, offsets, index)
        w = psi * smoothed_hinge(z)[1]  # (n_seq, J)
        grad_node = segment_repeat(w @ self.node_coef_, offsets)
        grad_node[offsets[:-1]] += w @ self.first_coef_
        grad_node[offsets[1:] - 1] += w @ self.last_coef_
        if W is not None:
            inp = np.array([c[3] for c in self._input])
            grad_node += (W * segment_repeat(w[:, self.input_terms_], offsets)) @ inp
        grad_edge = None
        if self.edge_coef_ is not None:
            J, L = self.edge_coef_.shape[:2]
            per_seq = (w @ self.edge_coef_.reshape(J, -1)).reshape(-1, L, L)
            grad_edge = segment_repeat(per_seq, edge_offsets(offsets))
        return grad_node, grad_edge

    def term_gradient_dot(self, node, edge, offsets, d_node, d_edge, index=None):
        offsets = np.asarray(offsets, dtype=np.int64)
        z, W = self._z(node, edge, offsets, index)
        return smoothed_hinge(z)[1] * self._measure(d_node, d_edge, offsets, W)

    def lipschitz(self, offsets, psi, index=None):
        """``sum_j psi_j ||a_j||_2^2`` per sequence (``h''`` is at most 1)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        psi = np.asarray(psi, dtype=np.float64).reshape(len(offsets) - 1, -1)
        n = np.diff(offsets).astype(np.float64)[:, None]
        A, F, G = self.node_coef_, self.first_coef_, self.last_coef_
        sq = (n * np.sum(A**2, axis=1) + np.sum(F**2, axis=1) + np.sum(G**2, axis=1)
              + 2 * np.sum(A * F, axis=1) + 2 * np.sum(A * G, axis=1) + (n == 1) * 2 * np.sum(F * G, axis=1))
        if self.edge_coef_ is not None:
            sq = sq + (n - 1) * np.sum(self.edge_coef_.reshape(len(A), -1) ** 2, axis=1)
        if self._input:
            W, _ = self._rows(offsets, index)
            inp = np.array([c[3] for c in self._input])
            sq[:, self.input_terms_] += segment_sum(W**2, offsets) * np.sum(inp**2, axis=1)
        return np.sum(psi * sq, axis=1)

    def violations(self, y, X=None):
        """By how many units each sequence breaks each rule: ``max(0, 1 - (<a_j, S(y)> - b_j))``.

        Parameters
        ----------
        y : list of int arrays
            Encoded label sequences (indices into ``classes``).
        X : list of feature matrices, default=None
            Needed for input-dependent terms (unless the energy is already bound to them).

        Returns
        -------
        violations : ndarray of shape (n_sequences, n_terms)
        """
        check_is_fitted(self, "term_names_")
        L = self.n_labels_
        if not isinstance(y, (list, tuple)) or not y:
            raise ValueError("ConstraintEnergy.violations: y must be a non-empty list of encoded label sequences.")
        y = [check_int_array(v, f"ConstraintEnergy.violations: y[{i}]", low=0, high=L) for i, v in enumerate(y)]
        for i, v in enumerate(y):
            if v.size == 0:
                raise ValueError(f"ConstraintEnergy.violations: sequence {i} of y is empty.")
        offsets = np.concatenate([[0], np.cumsum([len(v) for v in y])]).astype(np.int64)
        energy = self.bind(X) if X is not None else self
        return energy.packed_violations(np.concatenate(y), offsets)

    def packed_violations(self, labels, offsets, index=None):
        """:meth:`violations` of packed label sequences (many at once, no one-hot arrays).

        Parameters
        ----------
        labels : int ndarray of shape (n_tokens,)
            Encoded labels of all sequences, one after another.
        offsets : int ndarray of shape (n_sequences + 1,)
            Sequence ``i`` owns ``labels[offsets[i]:offsets[i + 1]]``; no empty sequence.
        index : int ndarray of shape (n_sequences,), default=None
            Which bound input each sequence is (input-dependent terms; see :meth:`bind`).

        Returns
        -------
        violations : ndarray of shape (n_sequences, n_terms)
        """
        check_is_fitted(self, "term_names_")
        L = self.n_labels_
        offsets = check_offsets(offsets, allow_empty_segments=False)
        labels = check_int_array(labels, "ConstraintEnergy.packed_violations: labels", ndim=1, low=0, high=L)
        if labels.shape[0] != offsets[-1]:
            raise ValueError(f"ConstraintEnergy.packed_violations: labels has {labels.shape[0]} tokens, "
                             f"offsets {offsets[-1]}.")
        n_seq = offsets.shape[0] - 1
        seq = np.repeat(np.arange(n_seq), np.diff(offsets))
        counts = np.zeros((n_seq, L))
        np.add.at(counts, (seq, labels), 1.0)
        z = counts @ self.node_coef_.T + self.first_coef_.T[labels[offsets[:-1]]]
        z += self.last_coef_.T[labels[offsets[1:] - 1]]
        if self.edge_coef_ is not None:
            src, dst = transition_pairs(labels, offsets)
            pairs = np.zeros((n_seq, L * L))
            np.add.at(pairs, (np.repeat(np.arange(n_seq), np.diff(offsets) - 1), src * L + dst), 1.0)
            z += pairs @ self.edge_coef_.reshape(len(self.term_names_), -1).T
        if self._input:
            W, B = self._rows(offsets, index)
            inp = np.array([c[3] for c in self._input])  # (J_in, L)
            z[:, self.input_terms_] += segment_sum(W * inp.T[labels], offsets) - B
        return np.maximum(0.0, 1.0 - (z - self.offset_))
