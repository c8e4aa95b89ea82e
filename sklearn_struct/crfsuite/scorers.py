"""Scorers for ``cross_val_score``, ``GridSearchCV``, ``RandomizedSearchCV``: sklearn-crfsuite's two.

``flat_accuracy`` (token accuracy) and ``sequence_accuracy`` (whole sequences right); build
others with ``sklearn.metrics.make_scorer(metrics.flat_f1_score, average=..., labels=...)``.
"""

from sklearn.metrics import make_scorer

from . import metrics


flat_accuracy = make_scorer(metrics.flat_accuracy_score)
sequence_accuracy = make_scorer(metrics.sequence_accuracy_score)
