"""The training log of :class:`~sklearn_struct.crfsuite.CRF`, shaped like python-crfsuite's ``TrainLogParser``.

python-crfsuite parses CRFsuite's text log into ``iterations`` (one dict per iteration: ``num``,
``loss``, ``time``, ``active_features``, and with held-out data ``scores`` per
label, ``avg_precision``, ``avg_recall``, ``avg_f1``, ``item_accuracy(_float)``,
``instance_accuracy(_float)``), ``last_iteration`` and timings. Here the same dicts are filled
directly from :class:`~sklearn_struct.ChainCRF`'s per-iteration records, and ``log`` holds the
lines that ``verbose`` prints.
"""

from collections import namedtuple
from fractions import Fraction

import numpy as np

LabelScore = namedtuple("LabelScore", "match model ref precision recall f1")

# ChainCRF's record keys -> python-crfsuite's names (keys not listed are kept as they are)
_ALIASES = {"iteration": "num", "dev_accuracy": "item_accuracy_float"}


class TrainingLog:
    """Per-iteration records of one fit (see the module docstring for the keys).

    Attributes
    ----------
    iterations : list of dict
    last_iteration : dict or None
    log : list of str
        The lines ``verbose`` prints, one per iteration.
    featgen_num_features : int
        Number of (attribute, label) state weights plus transition weights trained.
    featgen_seconds, training_seconds : float
        Seconds spent turning feature dicts into rows, and training.
    """

    def __init__(self, records=(), *, num_features=None, featgen_seconds=None, training_seconds=None):
        self.iterations = [_crfsuite_record(r, p) for r, p in zip(records, [{}] + list(records))]
        self.last_iteration = self.iterations[-1] if self.iterations else None
        self.log = [format_iteration(r) + "\n" for r in self.iterations]
        self.featgen_num_features = num_features
        self.featgen_seconds = featgen_seconds
        self.training_seconds = training_seconds
        self.storing_seconds = None

    def __repr__(self):
        return f"TrainingLog({len(self.iterations)} iterations)"


def _crfsuite_record(record, previous):
    """python-crfsuite's keys; ``time`` is the iteration's seconds (``seconds`` those since the start)."""
    out = {_ALIASES.get(k, k): v for k, v in dict(record).items()}
    if "seconds" in out:
        out["time"] = out["seconds"] - previous.get("seconds", 0.0)
    out.setdefault("scores", {})
    return out


def holdout_scores(y_true, y_pred, labels):
    """The held-out evaluation CRFsuite logs: per-label scores, macro averages, item and instance accuracy."""
    flat_true = np.array([label for seq in y_true for label in seq], dtype=object)
    flat_pred = np.array([label for seq in y_pred for label in seq], dtype=object)
    scores = {}
    for label in labels:
        match = int(np.sum((flat_true == label) & (flat_pred == label)))
        model, ref = int(np.sum(flat_pred == label)), int(np.sum(flat_true == label))
        p = match / model if model else None
        r = match / ref if ref else None
        f1 = 2 * p * r / (p + r) if p and r else (0.0 if model or ref else None)
        scores[label] = LabelScore(match, model, ref, p, r, f1)
    known = [s for s in scores.values() if s.model or s.ref]

    def mean(field):
        return float(np.mean([getattr(s, field) or 0.0 for s in known])) if known else 0.0

    item = Fraction(int(np.sum(flat_true == flat_pred)), max(len(flat_true), 1))
    instance = Fraction(sum(list(a) == list(b) for a, b in zip(y_true, y_pred)), max(len(y_true), 1))
    return {"scores": scores, "avg_precision": mean("precision"), "avg_recall": mean("recall"),
            "avg_f1": mean("f1"), "item_accuracy": item, "item_accuracy_float": float(item),
            "instance_accuracy": instance, "instance_accuracy_float": float(instance)}


def format_iteration(info):
    """One line per iteration, as sklearn-crfsuite's ``LinePerIterationTrainer`` prints it."""
    parts = [f"Iter {info.get('num', 0):<3} ", f"time={info.get('time', 0.0):<5.2f} ", f"loss={info.get('loss', 0.0):<8.2f} "]
    if "active_features" in info:
        parts.append(f"active={info['active_features']:<5} ")
    if "avg_precision" in info:
        parts.append(f"precision={info['avg_precision']:0.3f}  recall={info['avg_recall']:0.3f}  "
                     f"F1={info['avg_f1']:0.3f}  Acc(item/seq)={info['item_accuracy_float']:0.3f} "
                     f"{info['instance_accuracy_float']:0.3f}  ")
    if "feature_norm" in info:
        parts.append(f"feature_norm={info['feature_norm']:<8.2f}")
    return "".join(parts).strip()


def format_scores(scores):
    """The per-label table printed at the end of a verbose fit with held-out data."""
    lines = [f"{'Label':<10} {'Precision':>9} {'Recall':>9} {'F1':>9} {'Support':>9}"]
    for label, s in sorted(scores.items()):
        lines.append(f"{label:<10} {s.precision or 0:9.3f} {s.recall or 0:9.3f} {s.f1 or 0:9.3f} {s.ref:9d}")
    return "\n".join(lines)
