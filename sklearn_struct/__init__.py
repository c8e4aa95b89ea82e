"""sklearn_struct: structured-prediction estimators with the scikit-learn API.

Run ``python -m sklearn_struct`` for a quick tour that fits every estimator on
generated data next to a plain scikit-learn baseline.
"""

from .gp_struct import GPStructClassifier
from .nonlocal_crf import NonLocalCRF
from .pruned_bp import PrunedBPMarginals, pruned_marginals

__version__ = "0.1.0.dev0"

__all__ = ["GPStructClassifier", "NonLocalCRF", "PrunedBPMarginals", "pruned_marginals"]
