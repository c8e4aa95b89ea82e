"""Explain a chain CRF's prediction: each token's label score split into its parts.

For one sequence, :func:`explain_prediction` decodes the most likely labels (Viterbi) and, at
every token ``t``, splits the score of the chosen label ``y_t`` and of the runner-up label
into

* one contribution per active feature, ``x_tf * W[f, label]`` (named by attribute when the
  input came as token dicts through :class:`sklearn_struct.crfsuite.CRF`, or through a
  featurizer with ``get_feature_names_out`` in a :class:`~sklearn.pipeline.Pipeline`),
* the label bias ``b[label]``,
* the transition in, ``A[y_{t-1}, label]``, and the transition out, ``A[label, y_{t+1}]``
  (to and from the *predicted* neighbours).

``score = sum(contributions) + bias + transition_in + transition_out`` exactly (the parts are
summed with ``math.fsum``). The runner-up is the best other label at that token with its
neighbours kept: changing ``y_t`` to it changes the path's score by exactly
``runner_up.score - chosen.score`` (which is <= 0 at the Viterbi path), so the two tables
say why the model preferred its label. The path's score is the sum over tokens of
``contributions + bias + transition_in`` of the chosen labels.

A model with ``allowed_transitions`` (in training, or at decoding only) is explained as it
predicts: the path, ``log P(path | x)`` and the marginals are those within the mask, and the
runner-up is the best other label the mask allows there (with the predicted neighbours;
the best one by score, of marginal 0, when the mask allows none).

eli5 integration lives in :mod:`sklearn_struct._eli5` (``eli5.explain_weights`` and
``eli5.explain_prediction`` for these CRFs, registered when eli5 is imported).
"""

import math
import numbers
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from ._chain_crf_constrained import structure_from
from .oracles.chain_constrained import constrain_potentials, constrained_forward_backward, constrained_viterbi
from .utils.validation import check_sequences

__all__ = ["explain_prediction", "SequenceExplanation", "TokenExplanation", "LabelScore"]


@dataclass
class LabelScore:
    """One label's score at one token, split into its parts.

    ``features`` lists ``(name, value, weight, contribution)`` of the active features, largest
    ``|contribution|`` first (at most ``top`` of them when :func:`explain_prediction` was given
    one; ``other_features`` then holds the sum of the rest).
    """

    label: object
    score: float
    bias: float
    transition_in: float
    transition_out: float
    features: list = field(default_factory=list)
    other_features: float = 0.0
    marginal: float = float("nan")


@dataclass
class TokenExplanation:
    """The chosen label of token ``position`` and the runner-up, each as a :class:`LabelScore`."""

    position: int
    chosen: LabelScore
    runner_up: LabelScore

    @property
    def margin(self):
        """``chosen.score - runner_up.score``: how much the path's score drops if this token switches."""
        return self.chosen.score - self.runner_up.score


@dataclass
class SequenceExplanation:
    """:func:`explain_prediction`'s answer: the path, its score and one :class:`TokenExplanation` per token."""

    labels: list
    path_score: float
    log_probability: float
    tokens: list

    def to_text(self, top=5):
        """A plain-text table: per token the chosen and runner-up labels and their largest parts."""
        lines = [f"path score {self.path_score:.4f}, log P(path | x) {self.log_probability:.4f}"]
        for tok in self.tokens:
            for tag, part in (("chosen", tok.chosen), ("runner-up", tok.runner_up)):
                feats = ", ".join(f"{n}={c:+.3f}" for n, _, _, c in part.features[:top])
                lines.append(f"{tok.position:>4} {tag:<9} {str(part.label):<10} score {part.score:+.4f} "
                             f"(bias {part.bias:+.3f}, in {part.transition_in:+.3f}, out {part.transition_out:+.3f}"
                             f"{', ' + feats if feats else ''})")
        return "\n".join(lines)


def explain_prediction(estimator, X_one, *, feature_names=None, top=None):
    """Per-token attribution of a chain CRF's prediction for one sequence.

    Parameters
    ----------
    estimator : ChainCRF, sklearn_struct.crfsuite.CRF or Pipeline ending in a ChainCRF
        A fitted linear-chain CRF.
    X_one : one sequence
        What the estimator's ``predict`` takes for one sequence: a ``(n_tokens, n_features)``
        array or sparse matrix (ChainCRF), a list of feature dicts (crfsuite.CRF), the raw
        sequence a Pipeline's featurizer takes.
    feature_names : sequence of str, default=None
        Names of the feature columns (ChainCRF); by default the featurizer's
        ``get_feature_names_out``, the attribute names of crfsuite.CRF, else ``"x{j}"``.
    top : int, default=None
        Keep only the ``top`` largest contributions per label (the rest summed in
        ``other_features``); None keeps all.

    Returns
    -------
    explanation : SequenceExplanation

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct import ChainCRF
    >>> X = [np.eye(2)[[0, 1, 1]], np.eye(2)[[1, 0]]]
    >>> crf = ChainCRF(c2=0.1).fit(X, [np.array([0, 1, 1]), np.array([1, 0])])
    >>> ex = explain_prediction(crf, X[0], feature_names=["a", "b"])
    >>> ex.labels, [t.chosen.features[0][0] for t in ex.tokens]
    ([0, 1, 1], ['a', 'b', 'b'])
    >>> bool(np.isclose(sum(t.chosen.score - t.chosen.transition_out for t in ex.tokens), ex.path_score))
    True
    """
    if top is not None and (isinstance(top, bool) or not isinstance(top, numbers.Integral) or top < 0):
        raise ValueError(f"top must be None or a non-negative integer, got {top!r}.")
    if feature_names is not None and (isinstance(feature_names, (str, bytes)) or not hasattr(feature_names, "__len__")):
        raise TypeError(f"feature_names must be a sequence of str, got {type(feature_names).__name__}.")
    rows, coef, bias, transition, classes, names, structure = _resolve(estimator, X_one, feature_names)
    rows = sp.csr_matrix(rows, dtype=np.float64)
    coef_dense = coef.toarray() if sp.issparse(coef) else np.asarray(coef, dtype=np.float64)
    unary = np.asarray(rows @ coef_dense) + bias
    n = unary.shape[0]
    offsets = np.array([0, n])
    masks = {} if structure is None else structure._asdict()
    path = constrained_viterbi(unary, transition, offsets, **masks)[0] if n else np.empty(0, dtype=np.int64)
    log_z, node, _ = constrained_forward_backward(unary, transition, offsets, edge_marginals="none", **masks) \
        if n else ([0.0], None, None)
    path_score = float(unary[np.arange(n), path].sum() + transition[path[:-1], path[1:]].sum()) if n else 0.0
    masked_unary, masked_transition = constrain_potentials(unary, transition, offsets, **masks) if n else (unary, None)
    tokens = []
    for t in range(n):
        local, masked = unary[t].copy(), masked_unary[t].copy()  # each label's score with the neighbours kept
        if t > 0:
            local += transition[path[t - 1]]
            masked += masked_transition[path[t - 1]]
        if t < n - 1:
            local += transition[:, path[t + 1]]
            masked += masked_transition[:, path[t + 1]]
        others = np.delete(np.arange(len(classes)), path[t])
        allowed = others[np.isfinite(masked[others])]  # the alternatives the mask allows here
        pool = allowed if allowed.size else others
        runner = int(pool[np.argmax(local[pool])]) if pool.size else int(path[t])
        parts = [_label_score(rows, t, lab, coef_dense, bias, transition, path, classes, names, node, top)
                 for lab in (int(path[t]), runner)]
        tokens.append(TokenExplanation(t, *parts))
    return SequenceExplanation([classes[k] for k in path], path_score, float(path_score - log_z[0]), tokens)


def _label_score(rows, t, label, coef, bias, transition, path, classes, names, node, top):
    start, end = rows.indptr[t], rows.indptr[t + 1]
    cols, values = rows.indices[start:end], rows.data[start:end]
    weights = coef[cols, label]
    contrib = values * weights
    keep = contrib != 0
    feats = sorted(((names[c], float(v), float(w), float(x)) for c, v, w, x in
                    zip(cols[keep], values[keep], weights[keep], contrib[keep])), key=lambda f: -abs(f[3]))
    n = len(path)
    t_in = float(transition[path[t - 1], label]) if t > 0 else 0.0
    t_out = float(transition[label, path[t + 1]]) if t < n - 1 else 0.0
    shown, rest = (feats, []) if top is None else (feats[:top], feats[top:])
    other = math.fsum(f[3] for f in rest)
    score = math.fsum([f[3] for f in shown] + [other, float(bias[label]), t_in, t_out])
    return LabelScore(classes[label], score, float(bias[label]), t_in, t_out, shown, other, float(node[t, label]))


def _resolve(estimator, X_one, feature_names):
    """``(rows, coef, bias, transition, classes, names, structure)`` of one sequence under a fitted chain CRF
    (``structure``: the masks of ``allowed_transitions`` over the labels, or None)."""
    if hasattr(estimator, "steps"):  # a Pipeline: featurize with all but the last step
        front, crf = estimator[:-1], estimator[-1]
        rows = front.transform([X_one])[0]
        if feature_names is None and hasattr(front, "get_feature_names_out"):
            try:
                feature_names = list(front.get_feature_names_out())
            except (AttributeError, ValueError, TypeError):
                feature_names = None
        return _resolve(crf, rows, feature_names)
    if hasattr(estimator, "_fitted_model"):  # sklearn_struct.crfsuite.CRF: named attributes and labels
        model = estimator._fitted_model()
        rows, _ = model.vocabulary.transform([X_one], "xseq")
        structure = structure_from(getattr(estimator, "allowed_transitions", None),
                                   np.array(model.labels, dtype=object))
        return rows, model.state, model.bias, model.transition, list(model.labels), model.attributes, structure
    check_is_fitted(estimator, "coef_")
    if not all(hasattr(estimator, a) for a in ("transition_", "intercept_", "classes_", "n_features_in_")):
        raise TypeError(f"estimator must be a fitted ChainCRF, sklearn_struct.crfsuite.CRF or a Pipeline ending in a "
                        f"ChainCRF, got {type(estimator).__name__} (no transition_).")
    (x,) = check_sequences([X_one], n_features=estimator.n_features_in_)
    n_features = estimator.n_features_in_
    names = [f"x{j}" for j in range(n_features)] if feature_names is None else list(feature_names)
    if len(names) != n_features:
        raise ValueError(f"feature_names has {len(names)} names for {n_features} features.")
    classes = np.asarray(estimator.classes_).tolist()
    structure = getattr(estimator, "allowed_transitions_", None)
    if structure is None and "allowed_transitions_" not in estimator.__dict__ and \
            getattr(estimator, "allowed_transitions", None) is not None:  # fitted by partial_fit
        structure = structure_from(estimator.allowed_transitions, estimator.classes_)
    return x, estimator.coef_, estimator.intercept_, estimator.transition_, classes, names, structure
