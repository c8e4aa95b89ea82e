"""sklearn_struct: structured-prediction estimators with the scikit-learn API.

Run ``python -m sklearn_struct`` for a quick tour that fits every estimator on
generated data next to a plain scikit-learn baseline.
"""

from .utils import _jit  # noqa: F401  (numba's cache policy, installed before any kernel is decorated)
from .chain_crf import ChainCRF
from .dlpw import DLPWClassifier
from .dlpw_cv import DLPWClassifierCV
from .gp_struct import GPStructClassifier
from .mle_struct import MLEStructMatcher
from .nonlocal_crf import NonLocalCRF
from .parsing import DependencyParserBP
from .pruned_bp import PrunedBPMarginals, pruned_marginals

__version__ = "0.1.0.dev0"

__all__ = ["ChainCRF", "DLPWClassifier", "DLPWClassifierCV", "GPStructClassifier", "MLEStructMatcher", "NonLocalCRF", "DependencyParserBP", "PrunedBPMarginals", "pruned_marginals"]

from ._eli5 import install as _install_eli5_hooks  # noqa: E402  (registers with eli5 once it is imported)

_install_eli5_hooks()
