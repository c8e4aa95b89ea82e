"""Candidate kinds of ConstraintFamily beyond Anzaroot et al.'s four: lexical cues and segment lengths.

Private helpers of :mod:`sklearn_struct.constraint_learning` (the bounds and per-sequence
pattern rules are shared with its ``"conditional"`` kind). Each generator returns
``(kind, constraint, satisfied per training sequence)`` triples.
"""

import numpy as np
import scipy.sparse as sp

from .constraints import InputDependent, LinearConstraint

SAME_CUE = 0.8  # Jaccard overlap of two cue columns' sequences above which they count as one cue


def bounds(values, support, cast=int):
    """Tightest (lo, hi) with P(values >= lo) >= support and P(values <= hi) >= support."""
    v = np.sort(values)
    k = max(int(np.ceil(support * len(v))) - 1, 0)
    return cast(v[len(v) - 1 - k]), cast(v[k])


class Ones:
    """Weight 1 on every token (an input-dependent term that counts B- tokens)."""

    def __call__(self, x):
        return np.ones(x.shape[0])


class PatternBound:
    """The bound ``k`` where ``pattern(x) == present``, a bound every labelling meets elsewhere."""

    def __init__(self, pattern, present, k, sense):
        self.pattern, self.present, self.k, self.sense = pattern, present, k, sense

    def __call__(self, x):
        if bool(self.pattern(x)) == self.present:
            return float(self.k)
        return 0.0 if self.sense == "at_least" else float(x.shape[0])


class ColumnPresent:
    """Is feature column ``column`` on (non-zero) at some token of the sequence."""

    def __init__(self, column):
        self.column = int(column)

    def __call__(self, x):
        if self.column >= x.shape[1]:
            raise ValueError(f"a cue rule reads feature column {self.column}, but the sequence has {x.shape[1]} "
                             "features.")
        col = x[:, self.column]
        return bool(col.count_nonzero() > 0) if sp.issparse(col) else bool(np.any(np.asarray(col) != 0))


def check_bio_x(kind, family, X, n_seq):
    """ValueError unless the family reads BIO labels and ``X`` has one feature matrix per sequence."""
    if X is None or len(X) != n_seq:
        raise ValueError(f"kinds {kind!r} needs X in fit, one feature matrix per label sequence ({n_seq}), got "
                         f"{'none' if X is None else len(X)}.")
    if family.scheme_ != "BIO":
        raise ValueError(f"kinds {kind!r} needs BIO labels (its counts are B- tokens).")


def presence(X, n_seq):
    """(n_sequences, n_features) sparse 0/1 matrix: is column j on somewhere in sequence i."""
    rows, cols, width = [], [], X[0].shape[1]
    for i, x in enumerate(X):  # shapes checked by ConstraintFamily.fit
        on = np.unique(sp.csr_matrix(x).nonzero()[1]) if sp.issparse(x) else np.flatnonzero(np.any(np.asarray(x) != 0, 0))
        rows.append(np.full(on.size, i))
        cols.append(on)
    data = np.ones(sum(c.size for c in cols))
    return sp.csr_matrix((data, (np.concatenate(rows), np.concatenate(cols))), shape=(n_seq, width))


def cue_candidates(family, counts, leaves, count_bounds, X, n_seq):
    """``#f >= k if <column on>`` / ``#f <= k if <column on>`` for the columns that bind most often."""
    check_bio_x("cue", family, X, n_seq)
    H = presence(X, n_seq)
    names = family.feature_names
    if names is not None and len(names) != H.shape[1]:
        raise ValueError(f"feature_names has {len(names)} names, X has {H.shape[1]} features.")
    n_on = np.asarray(H.sum(axis=0)).ravel()
    usable = (n_on >= max(family.min_cooccurrence * n_seq, 1)) & (n_on < n_seq)
    HT = H.T.tocsr()
    out = []
    for j, f in enumerate(leaves):
        c = counts[:, j]
        lo, hi = count_bounds[f]
        for sense in ("at_least", "at_most"):
            ks = range(lo + 1, c.max() + 1) if sense == "at_least" else range(hi - 1, -1, -1)
            best = np.full(H.shape[1], -1)  # per column the tightest k with support
            for k in ks:
                ok = (c >= k) if sense == "at_least" else (c <= k)
                supp = np.asarray(HT @ ok.astype(float)).ravel() / np.maximum(n_on, 1)
                best[usable & (supp >= family.min_support)] = k
            out += _top_cues(family, HT, c, f, sense, best, n_on, names, lo if sense == "at_least" else hi)
    return out


def _top_cues(family, HT, c, f, sense, best, n_on, names, unconditional):
    """The ``n_cues`` columns whose rule binds in the most sequences (then the tightest); a column whose
    sequences overlap a kept one's by ``SAME_CUE`` (Jaccard) or more is the same cue and skipped."""
    cols = np.flatnonzero(best >= 0)
    order = cols[np.lexsort((-np.abs(best[cols] - unconditional), -n_on[cols]))]
    out, kept = [], []
    for col in order:
        rows = set(HT.indices[HT.indptr[col] : HT.indptr[col + 1]].tolist())
        if any(len(rows & r) >= SAME_CUE * len(rows | r) for r in kept):
            continue
        kept.append(rows)
        k = int(best[col])
        cue = str(names[col]) if names is not None else f"x[{col}]"
        name = f"#{f} {'>=' if sense == 'at_least' else '<='} {k} if {cue}"
        rule = InputDependent(f"B-{f}", Ones(), sense=sense, bound=PatternBound(ColumnPresent(col), True, k, sense),
                              name=name)
        where = np.zeros(len(c), dtype=bool)
        where[list(rows)] = True
        ok = ~where | ((c >= k) if sense == "at_least" else (c <= k))
        out.append(("cue", rule, ok))
        if len(out) == family.n_cues:
            break
    return out


def length_candidates(family, y, counts, leaves):
    """``tokens(f) <= k #f`` and ``tokens(f) >= k #f`` (k >= 2) for the fields in ``min_cooccurrence``,
    each measured as ``tokens(f) / k - #f`` against 0."""
    tokens = token_counts(y, leaves, family.scheme_, family.outside)
    out = []
    for j, f in enumerate(leaves):
        seg, tok = counts[:, j], tokens[:, j]
        there = seg > 0
        if there.mean() < max(family.min_cooccurrence, 1e-12) or (family.scheme_ == "BIO" and not np.any(tok > seg)):
            continue  # rare, or never longer than one token (no I- label to constrain)
        per_seg = tok[there] / seg[there]
        lo, hi = bounds(per_seg, family.min_support, float)
        k_hi, k_lo = int(np.ceil(hi)), int(np.floor(lo))
        for sense, k, valid in (("at_most", k_hi, True), ("at_least", k_lo, k_lo >= 2)):
            if not valid:
                continue
            values = tok - k * seg
            name = f"tokens({f}) {'<=' if sense == 'at_most' else '>='} {k} #{f}"
            # measured as tokens / k - #f (coefficients below 1 in size, like a count's): one token too many is
            # 1 / k of a unit, and a long field's rule cannot outweigh the counts
            if family.scheme_ == "BIO":
                node, edge = {f"B-{f}": 1 / k - 1, f"I-{f}": 1 / k}, None
            else:  # tokens / k - runs = (1 / k - 1) * tokens + (f -> f transitions)
                node, edge = {f: 1 / k - 1}, {(f, f): 1.0}
            rule = LinearConstraint(node=node, edge=edge, sense=sense, bound=0, name=name)
            out.append(("length", rule, values <= 0 if sense == "at_most" else values >= 0))
    return out


def position_candidates(family, y):
    """``first token in S`` / ``last token in S``: S the fewest labels that start (end) ``min_support`` of the
    sequences, most frequent first (all those seen there at most: the labels never seen there are excluded)."""
    out = []
    for side, at in (("first", 0), ("last", -1)):
        labels = [seq[at] for seq in y]
        ranked = sorted(set(labels), key=lambda lab: (-labels.count(lab), lab))
        share = np.cumsum([labels.count(lab) for lab in ranked]) / len(labels)
        S = ranked[: int(np.searchsorted(share, family.min_support - 1e-12)) + 1]
        rule = LinearConstraint(**{side: {lab: 1 for lab in S}}, sense="at_least", bound=1,
                                name=f"{side} token in {{{', '.join(sorted(S))}}}")
        out.append(("position", rule, np.isin(labels, S)))
    return out


class Region:
    """Weight 1 on the tokens whose relative position ``(t + 1/2) / n`` lies in ``[lo, hi)``."""

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __call__(self, x):
        pos = (np.arange(x.shape[0]) + 0.5) / x.shape[0]
        return ((pos >= self.lo) & (pos < self.hi)).astype(float)


REGIONS = {"first third": (0.0, 1 / 3), "last third": (2 / 3, 1.0)}


def region_candidates(family, y, counts, leaves, count_bounds):
    """``#f in the first (last) third >= k`` / ``<= k``, tighter than ``f``'s count bounds (BIO labels):
    the count rule placed where the field sits, so its energy acts on those tokens."""
    if family.scheme_ != "BIO":
        raise ValueError("kinds 'region' needs BIO labels (its counts are B- tokens).")
    out = []
    for rname, (lo_r, hi_r) in REGIONS.items():
        weights = Region(lo_r, hi_r)
        inside = np.zeros((len(y), len(leaves)), dtype=np.int64)
        index = {f"B-{f}": j for j, f in enumerate(leaves)}
        for i, seq in enumerate(y):
            for lab, w in zip(seq, weights(np.empty((len(seq), 0)))):
                if w and lab in index:
                    inside[i, index[lab]] += 1
        for j, f in enumerate(leaves):
            lo, hi = bounds(inside[:, j], family.min_support)
            for sense, k, tighter in (("at_least", lo, lo >= 1), ("at_most", hi, hi < count_bounds[f][1])):
                if not tighter or (counts[:, j] > 0).mean() < family.min_cooccurrence:
                    continue
                name = f"#{f} in the {rname} {'>=' if sense == 'at_least' else '<='} {k}"
                rule = InputDependent(f"B-{f}", weights, sense=sense, bound=float(k), name=name)
                out.append(("region", rule, inside[:, j] >= k if sense == "at_least" else inside[:, j] <= k))
    return out


def token_counts(y, fields, scheme, outside):
    """(n_sequences, n_fields) numbers of tokens of each field."""
    index = {f: j for j, f in enumerate(fields)}
    out = np.zeros((len(y), len(fields)), dtype=np.int64)
    for i, seq in enumerate(y):
        for lab in seq:
            if lab != outside:
                out[i, index[lab[2:] if scheme == "BIO" else lab]] += 1
    return out
