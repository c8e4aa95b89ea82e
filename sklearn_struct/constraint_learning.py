"""Soft constraints learned from data: Anzaroot et al. (2014)'s candidate family, generated from labels.

Anzaroot, Passos, Belanger and McCallum (2014) add to a chain CRF hundreds of soft linear
constraints over the label counts of a citation ("no more last names than first names",
"one title", "journal and booktitle exclude each other"), generated automatically from
templates over the training labels, and learn one non-negative penalty per constraint so
that most end at zero. Vilnis et al. (2015, Table 1) use the same measurements ``a_j`` as
smoothed-hinge energies on the marginals, their weights ``psi_j`` learned by Algorithm 3.

:class:`ConstraintFamily` generates the candidates from training labels; every candidate is
a :class:`~sklearn_struct.constraints.LinearConstraint` with a readable name, so the list
``constraints_`` can be inspected, edited and passed to
:class:`~sklearn_struct.NonLocalCRF` (alone or beside hand-written templates). Fit the model
with a sparsity penalty ``psi_l1 > 0`` and read the constraints it kept with
:func:`kept_constraints`.

The measurement of a field ``f`` is its number of segments: the tokens labelled ``B-f``
with BIO labels, the maximal runs of ``f`` with plain (IO) labels (tokens minus expected
``f -> f`` transitions). Candidate kinds, each kept only if the gold labels of at least
``min_support`` of the training sequences satisfy it:

- ``"count"``: ``#f <= k`` and ``#f >= k`` (singleton constraints), ``k`` the tightest
  bound with that support (no ``#f <= 0``: a rare field is the base model's label bias);
- ``"difference"``: ``lo <= #a - #b <= hi`` for fields that occur together in at least
  ``min_cooccurrence`` of the sequences (pairwise constraints, e.g. ``#person-first -
  #person-last``), when the interval is tighter than the count bounds imply;
- ``"exclusive"``: ``#a + #b <= k`` for fields that are rarely both present (in at most
  ``1 - min_support`` of the sequences with either; journal and booktitle), tighter than the
  count bounds imply;
- ``"implies"``: ``k_a * #b - #a >= 0``, "if ``a`` occurs, so does ``b``", with ``k_a`` the
  count bound of ``a`` (exact while ``#a <= k_a``), for ``b`` not already required;
- ``"conditional"`` (input-dependent, BIO labels, needs ``patterns`` and ``X``): ``#f >= k``
  or ``#f <= k`` only in the sequences where a token pattern is present (or absent), e.g.
  "a reference with a year-like token has a year", when tighter than ``f``'s count bounds
  (an :class:`~sklearn_struct.constraints.InputDependent` rule with a per-sequence bound);
- ``"cue"`` (input-dependent, BIO labels, needs ``X``): the same rules with the patterns
  found in the training data, not given: a pattern is one feature column on at some token
  of the sequence (a lexical cue such as the word ``pp.``); per field and direction, the
  ``n_cues`` columns whose rule binds in the most training sequences (with ``min_support``
  there and tighter than the count bounds; a column whose sequences repeat a kept one's is
  skipped);
- ``"length"``: ``tokens(f) <= k #f`` and ``tokens(f) >= k #f`` (segment length bounds, ``k``
  the tightest with ``min_support`` among the sequences with ``f``; ``k >= 2`` for the lower
  bound, which holds at ``k = 1`` by definition), measured as ``tokens(f) / k - #f`` so that its
  coefficients are no larger than a count's (a segment merged with a neighbour is too long);
- ``"position"``: ``first token in S`` and ``last token in S``, ``S`` the fewest labels that
  start (end) ``min_support`` of the training sequences (a citation starts with its authors or
  a reference marker, not with its title);
- ``"region"`` (BIO labels): ``#f in the first third >= k`` / ``<= k`` (and the last third),
  counts of ``f``'s segments among the tokens at those relative positions, tighter than ``f``'s
  count bounds (the authors come first): the count's energy then acts where the field sits.

Hierarchical labels (``groups``, e.g. from :func:`hierarchy_groups` of the UMass paths): a
group of fields (``person`` = person-first / -middle / -last) counts as one more field, its
segments the maximal runs of its fields' labels, so every template also relates a parent to
its children (``#[person] - #person-last``), parents to each other and a parent to itself
(``#[venue] <= 1``).
"""

import itertools
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._constraint_kinds import Ones as _Ones
from ._constraint_kinds import PatternBound as _PatternBound
from ._constraint_kinds import bounds as _bounds
from ._constraint_kinds import cue_candidates as _cue_candidates
from ._constraint_kinds import length_candidates as _length_candidates
from ._constraint_kinds import position_candidates as _position_candidates
from ._constraint_kinds import region_candidates as _region_candidates
from .constraints import ConstraintEnergy, InputDependent, LinearConstraint
from .utils._params import store_init_params

__all__ = ["ConstraintFamily", "kept_constraints", "hierarchy_groups"]

_KINDS = ("count", "difference", "exclusive", "implies")
_ALL_KINDS = _KINDS + ("conditional", "cue", "length", "position", "region")


class ConstraintFamily(BaseEstimator):
    """Candidate soft constraints over label counts, generated from training labels (Anzaroot and others, 2014).

    Parameters
    ----------
    kinds : tuple of {"count", "difference", "exclusive", "implies", "conditional", "cue", "length", "position", \
            "region"}, \
            default=the first four
        Which templates to instantiate (see the module docstring).
    min_support : float in (0, 1], default=0.95
        A candidate is kept only if at least this fraction of the training sequences satisfy it.
    min_cooccurrence : float in [0, 1], default=0.02
        Pairs of fields (``"difference"``) must both occur in at least this fraction of the
        sequences; ``"exclusive"`` and ``"implies"`` need each field in at least this fraction.
    scheme : {"auto", "BIO", "IO"}, default="auto"
        How labels name fields: ``"BIO"`` (``B-f`` / ``I-f``, segments are ``B-f`` tokens),
        ``"IO"`` (the label is the field, segments are maximal runs) or ``"auto"`` (BIO when
        every label other than ``"O"`` starts with ``B-`` or ``I-``).
    outside : str, default="O"
        The label of tokens outside every field (never constrained).
    groups : dict of str -> list of str, default=None
        Parent labels as groups of fields (``{"person": ["person-first", "person-last"]}``):
        each is one more field ``[name]`` whose segments are the runs of its fields.
    patterns : dict of str -> callable, default=None
        Token patterns for ``"conditional"``: ``pattern(x) -> bool`` on a sequence's feature
        matrix (is the pattern present in the sequence).
    n_cues : int >= 1, default=3
        ``"cue"``: how many feature columns to keep per field and direction.
    feature_names : list of str, default=None
        ``"cue"``: the names of the feature columns, used in the candidates' names
        (default ``"x[j]"``).

    Attributes
    ----------
    constraints_ : list of LinearConstraint
        The candidates, each with a readable ``name`` (e.g. ``"#person-first - #person-last <= 0"``).
    kinds_ : list of str
        The kind of each candidate.
    support_ : ndarray of shape (n_constraints,)
        Fraction of the training sequences whose gold labels satisfy each candidate.
    fields_ : list of str
        The fields found in the labels.
    scheme_ : str
        The label scheme used.

    See Also
    --------
    kept_constraints : the candidates a fitted NonLocalCRF kept (psi > 0).
    sklearn_struct.constraints : hand-written templates by label name.

    References
    ----------
    S. Anzaroot, A. Passos, D. Belanger, A. McCallum. "Learning Soft Linear Constraints with
    Application to Citation Field Extraction." ACL 2014.

    Examples
    --------
    >>> y = [["B-first", "B-last", "B-title", "I-title"], ["B-first", "B-last", "B-first", "B-last"]]
    >>> family = ConstraintFamily(kinds=("count", "difference"), min_support=1.0).fit(y)
    >>> [c.name for c in family.constraints_]  # doctest: +NORMALIZE_WHITESPACE
    ['#first <= 2', '#first >= 1', '#last <= 2', '#last >= 1', '#title <= 1',
     '#first - #last <= 0', '#first - #last >= 0']
    """

    _parameter_constraints = {
        "kinds": [tuple, list],
        "min_support": [Interval(numbers.Real, 0, 1, closed="right")],
        "min_cooccurrence": [Interval(numbers.Real, 0, 1, closed="both")],
        "scheme": [StrOptions({"auto", "BIO", "IO"})],
        "outside": [str],
        "groups": [dict, None],
        "patterns": [dict, None],
        "n_cues": [Interval(numbers.Integral, 1, None, closed="left")],
        "feature_names": ["array-like", None],
    }

    def __init__(self, kinds=_KINDS, *, min_support=0.95, min_cooccurrence=0.02, scheme="auto", outside="O",
                 groups=None, patterns=None, n_cues=3, feature_names=None):
        store_init_params(self, locals())

    def fit(self, y, X=None):
        """Generate the candidates from the label sequences ``y`` (lists of label names).

        ``X`` (the sequences' feature matrices) is needed only by ``"conditional"`` and ``"cue"``.

        Returns
        -------
        self : ConstraintFamily
        """
        self._validate_params()
        bad = [k for k in self.kinds if k not in _ALL_KINDS]
        if bad or not self.kinds:
            raise ValueError(f"kinds must be a non-empty subset of {_ALL_KINDS}, got {self.kinds!r}.")
        y = _check_labels(y)
        if X is not None:
            X = list(X)
            _check_features(X, y)
        self.scheme_ = _scheme(y, self.scheme, self.outside)
        leaves, counts = _segment_counts(y, self.scheme_, self.outside)
        self._labels = sorted({lab for seq in y for lab in seq} - {self.outside})
        groups = _check_groups(self.groups, leaves)
        self.fields_ = leaves + [f"[{g}]" for g in groups]
        self._members = {f"[{g}]": set(m) for g, m in groups.items()}
        if groups:
            counts = np.hstack([counts, _group_counts(y, groups.values(), self.scheme_, self.outside)])
        bounds = {f: _bounds(counts[:, j], self.min_support) for j, f in enumerate(self.fields_)}
        present = (counts > 0).mean(axis=0)
        cands = []  # (kind, constraint, satisfied per training sequence)
        for kind in _KINDS:
            if kind in self.kinds:
                cands += [(kind, self._linear(*c[1:5]), _satisfied(*c[3:])) for c in
                          getattr(self, f"_{kind}")(counts, bounds, present)]
        if "conditional" in self.kinds:
            cands += self._conditional(counts[:, : len(leaves)], leaves, bounds, X, len(y))
        if "cue" in self.kinds:
            cands += _cue_candidates(self, counts[:, : len(leaves)], leaves, bounds, X, len(y))
        if "length" in self.kinds:
            cands += _length_candidates(self, y, counts[:, : len(leaves)], leaves)
        if "position" in self.kinds:
            cands += _position_candidates(self, y)
        if "region" in self.kinds:
            cands += _region_candidates(self, y, counts[:, : len(leaves)], leaves, bounds)
        self.constraints_ = [c for _, c, _ in cands]
        self.kinds_ = [k for k, _, _ in cands]
        self.support_ = np.array([np.mean(ok) for _, _, ok in cands])
        return self

    def _linear(self, name, coef, sense, bound):
        node, edge = {}, {}
        for f, c in coef.items():
            members = self._members.get(f)
            if members is None:
                n, e = _coefficients({f: c}, self.scheme_)
            else:  # a group: runs of its fields' labels
                labs = tuple(lab for lab in self._labels if _field(lab, self.scheme_) in members)
                n, e = {labs: c}, {(labs, labs): -c}
            node.update(n)
            edge.update(e)
        return LinearConstraint(node=node, edge=edge or None, sense=sense, bound=int(bound), name=name)

    # ---- templates -----------------------------------------------------------------------
    def _count(self, counts, bounds, present):
        out = []
        for j, f in enumerate(self.fields_):
            lo, hi = bounds[f]
            if hi >= 1:  # "f never occurs" is the base model's label bias, not a constraint
                out.append(("count", f"#{f} <= {hi}", {f: 1}, "at_most", hi, counts[:, j]))
            if lo >= 1:
                out.append(("count", f"#{f} >= {lo}", {f: 1}, "at_least", lo, counts[:, j]))
        return out

    def _difference(self, counts, bounds, present):
        out = []
        for (i, a), (j, b) in itertools.combinations(enumerate(self.fields_), 2):
            both = np.mean((counts[:, i] > 0) & (counts[:, j] > 0))
            if both < max(self.min_cooccurrence, 1e-12):
                continue
            diff = counts[:, i] - counts[:, j]
            lo, hi = _bounds(diff, self.min_support)
            (lo_a, hi_a), (lo_b, hi_b) = bounds[a], bounds[b]
            coef = {a: 1, b: -1}
            if hi < hi_a - lo_b:  # tighter than the count bounds imply
                out.append(("difference", f"#{a} - #{b} <= {hi}", coef, "at_most", hi, diff))
            if lo > lo_a - hi_b:
                out.append(("difference", f"#{a} - #{b} >= {lo}", coef, "at_least", lo, diff))
        return out

    def _exclusive(self, counts, bounds, present):
        out = []
        for (i, a), (j, b) in itertools.combinations(enumerate(self.fields_), 2):
            both = np.mean((counts[:, i] > 0) & (counts[:, j] > 0))
            either = np.mean((counts[:, i] > 0) | (counts[:, j] > 0))
            if min(present[i], present[j]) < self.min_cooccurrence or both > (1 - self.min_support) * either:
                continue
            total = counts[:, i] + counts[:, j]
            _, hi = _bounds(total, self.min_support)
            if hi < bounds[a][1] + bounds[b][1]:
                out.append(("exclusive", f"#{a} + #{b} <= {hi}", {a: 1, b: 1}, "at_most", hi, total))
        return out

    def _implies(self, counts, bounds, present):
        out = []
        for (i, a), (j, b) in itertools.permutations(enumerate(self.fields_), 2):
            if present[i] < self.min_cooccurrence or bounds[b][0] >= 1:
                continue
            k = max(bounds[a][1], 1)
            values = k * counts[:, j] - counts[:, i]
            if np.mean(values >= 0) >= self.min_support and np.mean(counts[counts[:, i] > 0, j] > 0) >= self.min_support:
                out.append(("implies", f"{a} => {b} ({k} #{b} - #{a} >= 0)", {b: k, a: -1}, "at_least", 0, values))
        return out

    def _conditional(self, counts, leaves, bounds, X, n_seq):
        """``#f >= k`` / ``#f <= k`` in the sequences with (or without) a token pattern."""
        if not self.patterns or X is None or len(X) != n_seq:
            raise ValueError("kinds 'conditional' needs patterns (name -> callable x -> bool) and X, one feature "
                             "matrix per label sequence, in fit.")
        if self.scheme_ != "BIO":
            raise ValueError("kinds 'conditional' needs BIO labels (its counts are B- tokens).")
        out = []
        for pname, pattern in self.patterns.items():
            if not callable(pattern):
                raise ValueError(f"patterns[{pname!r}] must be a callable x -> bool.")
            has = np.array([bool(pattern(x)) for x in X])
            for present in (True, False):
                where = has == present
                if where.mean() < max(self.min_cooccurrence, 1e-12):
                    continue
                cond = pname if present else f"not {pname}"
                for j, f in enumerate(leaves):
                    lo, hi = _bounds(counts[where, j], self.min_support)
                    for sense, k, tighter in (("at_least", lo, lo > bounds[f][0]), ("at_most", hi, hi < bounds[f][1])):
                        if not tighter:
                            continue
                        name = f"#{f} {'>=' if sense == 'at_least' else '<='} {k} if {cond}"
                        rule = InputDependent(f"B-{f}", _Ones(), sense=sense,
                                              bound=_PatternBound(pattern, present, k, sense), name=name)
                        ok = ~where | (counts[:, j] >= k if sense == "at_least" else counts[:, j] <= k)
                        out.append(("conditional", rule, ok))
        return out


def hierarchy_groups(paths, min_share=0.9):
    """Parent tags as groups of leaf fields, from token paths (``load_umass_citations(...).paths``).

    Every tag that encloses another is a group of itself (its own tokens carry its label as
    leaf label) and of the innermost tags below it, e.g. ``{"person": ["person", "person-first",
    "person-last", "person-middle"], ...}``. A leaf field joins a group only if at least
    ``min_share`` of its tokens lie inside that tag (``person-first`` belongs to ``authors``,
    not to ``editor``, whose names use the same leaf tags); groups of one field are dropped.

    Parameters
    ----------
    paths : list of list of tuple of str
        Per sequence, per token, its tags from the outermost to the leaf.
    min_share : float in (0, 1], default=0.9

    Returns
    -------
    groups : dict of str -> list of str
        Parent tag -> its member fields, for ``ConstraintFamily(groups=...)``.

    Examples
    --------
    >>> paths = [[("authors", "person", "person-first"), ("authors", "person", "person-last"),
    ...           ("title",)]]
    >>> hierarchy_groups(paths)
    {'authors': ['person-first', 'person-last'], 'person': ['person-first', 'person-last']}
    """
    _check_paths(paths)
    if isinstance(min_share, bool) or not isinstance(min_share, numbers.Real) or not 0 < min_share <= 1:
        raise ValueError(f"hierarchy_groups: min_share must be a number in (0, 1], got {min_share!r}.")
    inside, total, parents = {}, {}, set()
    for seq in paths:
        for path in seq:
            if not path:
                continue
            total[path[-1]] = total.get(path[-1], 0) + 1
            parents.update(path[:-1])
            for a in set(path):
                inside[a, path[-1]] = inside.get((a, path[-1]), 0) + 1
    groups = {}
    for (a, leaf), n in sorted(inside.items()):
        if a in parents and n >= min_share * total[leaf]:
            groups.setdefault(a, []).append(leaf)
    return {g: m for g, m in groups.items() if len(m) >= 2}


def _check_paths(paths):
    """ValueError naming the sequence and token unless ``paths`` is a list of lists of tag paths."""
    if isinstance(paths, (str, bytes)) or not isinstance(paths, (list, tuple)):
        raise ValueError(f"hierarchy_groups: paths must be a list of sequences of tag paths, got {type(paths).__name__}.")
    for i, seq in enumerate(paths):
        if isinstance(seq, (str, bytes)) or not isinstance(seq, (list, tuple)):
            raise ValueError(f"hierarchy_groups: sequence {i} must be a list of tag paths, got {type(seq).__name__}.")
        for t, path in enumerate(seq):
            if isinstance(path, (str, bytes)) or not isinstance(path, (list, tuple)) or \
                    not all(isinstance(tag, str) for tag in path):
                raise ValueError(f"hierarchy_groups: token {t} of sequence {i} must be a tuple of tag names "
                                 f"(outermost first), got {path!r}.")


def kept_constraints(model, tol=0.0):
    """The constraint templates of a fitted NonLocalCRF whose learned weight is above ``tol``.

    Parameters
    ----------
    model : NonLocalCRF
        Fitted with a list of constraint templates (or a ConstraintEnergy) as ``energy``.
    tol : float, default=0.0

    Returns
    -------
    kept : list of (template, psi) pairs, largest psi first; a template with several terms
        (e.g. ``ExactlySegments``) is kept when any of its terms is, with its largest weight.
    """
    from .nonlocal_crf import NonLocalCRF  # the estimator layer sits beside this module

    if not isinstance(model, NonLocalCRF):
        raise ValueError(f"kept_constraints: model must be a fitted NonLocalCRF, got {type(model).__name__}.")
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not tol >= 0 or not np.isfinite(tol):
        raise ValueError(f"kept_constraints: tol must be a finite number >= 0, got {tol!r}.")
    check_is_fitted(model)
    energy = getattr(model, "energy_", None)
    if not isinstance(energy, ConstraintEnergy) or not hasattr(model, "psi_"):
        raise ValueError("kept_constraints needs a NonLocalCRF fitted with constraint templates as its energy; "
                         f"this one was fitted with energy={model.energy!r}, so it has no constraints to keep.")
    index_of = {c.item() if hasattr(c, "item") else c: i for i, c in enumerate(model.classes_)}
    kept, start = [], 0
    for c in energy.constraints:
        n = len(c._terms(index_of, len(model.classes_)))
        w = float(np.max(model.psi_[start : start + n]))
        start += n
        if w > tol:
            kept.append((c, w))
    return sorted(kept, key=lambda cw: -cw[1])


# ---- helpers -----------------------------------------------------------------------------
def _check_features(X, y):
    """ValueError naming the sequence unless ``X`` (when it has one entry per label sequence) holds 2D
    feature matrices of one width, one row per token and finite values; a count mismatch is left to
    the kinds that read ``X``."""
    if len(X) != len(y):
        return
    width = None
    for i, x in enumerate(X):
        if not hasattr(x, "shape") or len(x.shape) != 2:
            raise ValueError(f"X: sequence {i} must be a 2D feature matrix, got {type(x).__name__}.")
        if width is not None and x.shape[1] != width:
            raise ValueError(f"X: sequence {i} has {x.shape[1]} features, sequence 0 has {width}.")
        width = x.shape[1]
        if x.shape[0] != len(y[i]):
            raise ValueError(f"X: sequence {i} has {x.shape[0]} rows, but its labels have {len(y[i])} tokens.")
        data = x.data if sp.issparse(x) else x
        try:
            finite = np.all(np.isfinite(np.asarray(data, dtype=float)))
        except (TypeError, ValueError):
            raise ValueError(f"X: sequence {i} has non-numeric features.") from None
        if not finite:
            raise ValueError(f"X: sequence {i} has NaN or infinite features.")


def _check_labels(y):
    if isinstance(y, (str, bytes)) or not hasattr(y, "__len__") or len(y) == 0:
        raise ValueError("y must be a non-empty list of label sequences.")
    out = []
    for i, seq in enumerate(y):
        seq = np.asarray(seq, dtype=object).ravel()
        if seq.size == 0:
            raise ValueError(f"y: sequence {i} is empty.")
        out.append([str(v) for v in seq])
    return out


def _field(lab, scheme):
    return lab[2:] if scheme == "BIO" else lab


def _satisfied(sense, bound, values):
    return values <= bound if sense == "at_most" else values >= bound


def _check_groups(groups, leaves):
    if groups is None:
        return {}
    if not isinstance(groups, dict):
        raise ValueError(f"groups must be a dict name -> list of fields, got {type(groups).__name__}.")
    out = {}
    for g, members in groups.items():
        if isinstance(members, (str, bytes)) or not isinstance(members, (list, tuple, set, frozenset)):
            raise ValueError(f"groups[{g!r}] must be a list of field names, got {type(members).__name__} "
                             f"{members!r}.")
        members = [m for m in members if m in leaves]
        if len(members) >= 2:  # a group of one field is that field
            out[g] = members
    return out


def _group_counts(y, groups, scheme, outside):
    """(n_sequences, n_groups) numbers of maximal runs of each group's fields."""
    out = np.zeros((len(y), len(groups)), dtype=np.int64)
    for i, seq in enumerate(y):
        fields = [None if lab == outside else _field(lab, scheme) for lab in seq]
        for j, members in enumerate(groups):
            inside = [f in members for f in fields]
            out[i, j] = sum(cur and (t == 0 or not inside[t - 1]) for t, cur in enumerate(inside))
    return out


def _scheme(y, scheme, outside):
    if scheme != "auto":
        return scheme
    labels = {lab for seq in y for lab in seq} - {outside}
    return "BIO" if labels and all(lab[:2] in ("B-", "I-") for lab in labels) else "IO"


def _segment_counts(y, scheme, outside):
    """Fields (sorted) and the (n_sequences, n_fields) matrix of their segment counts."""
    per_seq = []
    for seq in y:
        counts = {}
        for t, lab in enumerate(seq):
            if lab == outside:
                continue
            if scheme == "BIO":
                if lab[:2] not in ("B-", "I-"):
                    raise ValueError(f"y: label {lab!r} is not a BIO label (B-x, I-x or {outside!r}).")
                field, start = lab[2:], lab[:2] == "B-" or t == 0 or seq[t - 1][2:] != lab[2:]
            else:
                field, start = lab, t == 0 or seq[t - 1] != lab
            counts[field] = counts.get(field, 0) + int(start)
        per_seq.append(counts)
    fields = sorted({f for c in per_seq for f in c})
    return fields, np.array([[c.get(f, 0) for f in fields] for c in per_seq], dtype=np.int64)


def _coefficients(coef, scheme):
    """``{field: c}`` as node (and, for IO, edge) coefficients of segment counts."""
    if scheme == "BIO":
        return {f"B-{f}": c for f, c in coef.items()}, {}
    return dict(coef), {(f, f): -c for f, c in coef.items()}
