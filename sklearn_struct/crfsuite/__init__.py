"""sklearn-crfsuite's API on sklearn_struct: ``import sklearn_struct.crfsuite as sklearn_crfsuite``.

:class:`CRF` takes the same constructor, feature dicts and labels as ``sklearn_crfsuite.CRF``
and trains :class:`~sklearn_struct.ChainCRF`; :mod:`~sklearn_struct.crfsuite.metrics` and
:mod:`~sklearn_struct.crfsuite.scorers` are sklearn-crfsuite's. What differs, and why, is listed
in :class:`CRF`'s docstring and on the documentation page ``doc/crfsuite.md``.
"""

from . import metrics, scorers
from .estimator import CRF

__all__ = ["CRF"]
