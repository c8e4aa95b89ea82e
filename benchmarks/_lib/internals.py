"""Every package internal the benchmarks use, in one place (the scripts import them from here).

Private modules (``sklearn_struct._*``) and private names may change without notice; a change
that breaks a benchmark then shows here, not in a dozen scripts."""
from sklearn_struct._bethe_inference import bethe_inference, nonlocal_objective  # noqa: F401
from sklearn_struct._chain_crf import ChainObjective, predict_unary  # noqa: F401
from sklearn_struct._gp_struct_amplitude import AMPLITUDE_GRID, _Rows, _held_out_marginals, cv_amplitude  # noqa: F401
from sklearn_struct._gp_likelihoods import CHAIN, LIKELIHOODS, token_marginals  # noqa: F401
from sklearn_struct._gp_struct_elbo import elbo  # noqa: F401
from sklearn_struct._gp_struct_model import (SparsePrior, VarParams, _per_sequence, init_inducing,  # noqa: F401
                                             map_marginals, pmi_transitions)
from sklearn_struct._gp_struct_optim import sparse_map, transition_counts  # noqa: F401
from sklearn_struct._psi_gate import fit_gate, satisfaction_probability  # noqa: F401
from sklearn_struct._psi_learning import bind, fit_energy, in_sample_thetas, learn_psi  # noqa: F401
from sklearn_struct.datasets._base import find_data_file  # noqa: F401
from sklearn_struct.datasets._ising import make_ising_grid  # noqa: F401
from sklearn_struct.dlpw import _augment, _Model  # noqa: F401
from sklearn_struct._dlpw_sets import MISSING_MASS_THRESHOLD, missing_mass  # noqa: F401
from sklearn_struct.mle_struct import _LinearMatcherMixin  # noqa: F401
from sklearn_struct.oracles.lp import _highspy  # noqa: F401
from sklearn_struct.utils._params import atomic_fit, store_init_params  # noqa: F401
from sklearn_struct.gp_struct import _fresh_kernels  # noqa: F401
from sklearn_struct.oracles.chain_samples import _marginals_kernel  # noqa: F401
# modules whose functions memory_stages wraps (the drop-in's fit split into stages)
from sklearn_struct import _chain_crf_fit as chain_crf_fit_module  # noqa: F401,E402
from sklearn_struct.crfsuite import _lean_fit as crfsuite_lean_fit_module  # noqa: F401,E402
from sklearn_struct.crfsuite import estimator as crfsuite_estimator_module  # noqa: F401,E402
