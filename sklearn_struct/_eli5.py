"""eli5 hooks for the chain CRFs: ``eli5.explain_weights`` and ``eli5.explain_prediction``.

eli5 is not a dependency. :func:`install` (called when sklearn_struct is imported) registers
the hooks at once if eli5 is already imported, else puts a one-shot finder on
``sys.meta_path`` that registers them right after ``import eli5`` finishes, so importing
sklearn_struct never imports eli5.

``explain_weights`` gives what eli5 gives for sklearn-crfsuite's ``CRF``: eli5 reads
``attributes_``, ``classes_``, ``state_features_`` and ``transition_features_``, which
:class:`sklearn_struct.crfsuite.CRF` has; a :class:`~sklearn_struct.ChainCRF` is shown
through the same view (feature names ``x{j}`` unless given, labels as strings, the label
bias as the pseudo-attribute ``<BIAS>``). eli5's own function is used when it can be
imported (it needs sklearn-crfsuite installed); otherwise :func:`_weights_explanation`
builds the same explanation from eli5's building blocks.

``explain_prediction(crf, doc)`` explains one sequence: one target per token (``"t: label"``)
whose feature weights are the contributions of :func:`sklearn_struct.explain.explain_prediction`
plus ``<BIAS>``, ``<TRANSITION IN>`` and ``<TRANSITION OUT>``, summing to the token's score.
"""

import importlib.abc
import importlib.util
import sys
import warnings

import numpy as np

__all__ = ["install", "register"]

_REGISTERED = False


def install():
    """Register the hooks now if eli5 is imported, else when it is (no import of eli5 here)."""
    if "eli5" in sys.modules and hasattr(sys.modules["eli5"], "explain_weights"):
        register()
    elif not any(isinstance(f, _Eli5Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Eli5Finder())


class _Eli5Finder(importlib.abc.MetaPathFinder):
    """Wraps eli5's loader once, so that :func:`register` runs after ``import eli5``."""

    def find_spec(self, name, path, target=None):
        if name != "eli5":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module):
            exec_module(module)
            try:
                register()
            except Exception as exc:  # never break `import eli5`
                warnings.warn(f"sklearn_struct could not register its eli5 hooks: {exc!r}", RuntimeWarning)

        spec.loader.exec_module = exec_then_register
        return spec


def register():
    """Register ``explain_weights`` / ``explain_prediction`` for ChainCRF and crfsuite.CRF with eli5."""
    global _REGISTERED
    if _REGISTERED:
        return
    from eli5 import explain_prediction, explain_weights

    from .chain_crf import ChainCRF
    from .crfsuite import CRF

    for cls in (ChainCRF, CRF):
        explain_weights.register(cls)(explain_weights_crf)
        explain_prediction.register(cls)(explain_prediction_crf)
    _REGISTERED = True


class _CRFView:
    """sklearn-crfsuite's fitted attributes of a ChainCRF, as eli5 reads them."""

    def __init__(self, crf, feature_names=None):
        coef = np.asarray(crf.coef_)
        names = [f"x{j}" for j in range(coef.shape[0])] if feature_names is None else [str(n) for n in feature_names]
        if len(names) != coef.shape[0]:
            raise ValueError(f"feature_names has {len(names)} names for {coef.shape[0]} features.")
        self.classes_ = [str(c) for c in crf.classes_]
        active = [j for j in range(coef.shape[0]) if np.any(coef[j] != 0)]
        self.attributes_ = [names[j] for j in active]
        self.state_features_ = {(names[j], self.classes_[k]): float(coef[j, k])
                                for j in active for k in np.flatnonzero(coef[j])}
        bias = np.asarray(crf.intercept_)
        if np.any(bias != 0):
            self.attributes_.append("<BIAS>")
            self.state_features_.update({("<BIAS>", c): float(b) for c, b in zip(self.classes_, bias) if b != 0})
        T = np.asarray(crf.transition_)
        self.transition_features_ = {(self.classes_[i], self.classes_[j]): float(T[i, j])
                                     for i, j in zip(*np.nonzero(T))}
        self._repr = repr(crf)

    def __repr__(self):
        return self._repr


def explain_weights_crf(crf, top=20, target_names=None, targets=None, feature_re=None, feature_filter=None,
                        feature_names=None):
    """eli5's ``explain_weights`` for our CRFs: the explanation eli5 gives sklearn-crfsuite's CRF."""
    view = crf if hasattr(crf, "state_features_") else _CRFView(crf, feature_names)
    kwargs = dict(top=top, target_names=target_names, targets=targets, feature_re=feature_re,
                  feature_filter=feature_filter)
    try:
        from eli5.sklearn_crfsuite.explain_weights import explain_weights_sklearn_crfsuite
    except ImportError:  # sklearn-crfsuite is not installed: the same explanation, built here
        return _weights_explanation(view, **kwargs)
    return explain_weights_sklearn_crfsuite(view, **kwargs)


def _ner_order(labels):
    """Labels with "B-X" / "I-X" grouped by entity type X, plain labels first (eli5's default order)."""
    return sorted(labels, key=lambda c: (c.split("-", 1)[1], c) if len(c) > 2 and c[1] == "-" else ("", c))


def _weights_explanation(view, top, target_names, targets, feature_re, feature_filter):
    from eli5._feature_names import FeatureNames
    from eli5._feature_weights import get_top_features
    from eli5.base import Explanation, TargetExplanation, TransitionFeatureWeights
    from eli5.utils import get_target_display_names

    names = np.array(view.attributes_)
    column = {name: j for j, name in enumerate(view.attributes_)}
    row = {label: k for k, label in enumerate(view.classes_)}
    state = np.zeros((len(view.classes_), len(names)))
    for (attribute, label), value in view.state_features_.items():
        state[row[label], column[attribute]] = value
    if feature_filter is not None or feature_re is not None:
        kept, indices = FeatureNames(names).handle_filter(feature_filter, feature_re)
        names, state = np.array(kept.feature_names), state[:, indices]
    L = len(view.classes_)
    trans = np.array([[view.transition_features_.get((a, b), 0) for b in view.classes_] for a in view.classes_])
    trans = trans.reshape(L, L)
    shown = get_target_display_names(view.classes_, target_names, _ner_order(view.classes_) if targets is None
                                     else targets)
    indices, labels = zip(*shown)
    idx = np.array(indices)
    return Explanation(
        targets=[TargetExplanation(target=label, feature_weights=get_top_features(names, state[k], top))
                 for k, label in zip(indices, labels)],
        transition_features=TransitionFeatureWeights(class_names=list(labels), coef=trans[idx][:, idx]),
        estimator=repr(view), method="CRF")


def explain_prediction_crf(crf, doc, top=None, feature_names=None, **_ignored):
    """eli5's ``explain_prediction`` for our CRFs: per-token attributions of one sequence ``doc``."""
    from eli5.base import Explanation, FeatureWeight, FeatureWeights, TargetExplanation

    from .explain import explain_prediction

    ex = explain_prediction(crf, doc, feature_names=feature_names, top=top)
    targets = []
    for tok in ex.tokens:
        part = tok.chosen
        items = [FeatureWeight(name, contrib, value=value) for name, value, _, contrib in part.features]
        for name, value in (("<BIAS>", part.bias), ("<TRANSITION IN>", part.transition_in),
                            ("<TRANSITION OUT>", part.transition_out), ("<OTHER FEATURES>", part.other_features)):
            if value != 0:
                items.append(FeatureWeight(name, value, value=1.0))
        pos = sorted((f for f in items if f.weight > 0), key=lambda f: -f.weight)
        neg = sorted((f for f in items if f.weight <= 0), key=lambda f: f.weight)
        targets.append(TargetExplanation(target=f"{tok.position}: {part.label}", score=part.score,
                                         proba=part.marginal, feature_weights=FeatureWeights(pos=pos, neg=neg)))
    return Explanation(estimator=repr(crf), method="CRF per-token attribution", targets=targets)
