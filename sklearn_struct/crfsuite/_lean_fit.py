"""The drop-in's L-BFGS fit with the feature matrix released once the objective holds the features.

``ChainCRF.fit(X, y)`` keeps its ``X`` until it returns, but the objective it builds keeps only
what an evaluation reads (row pointers, int32 pair codes, no values when all are 1). The drop-in
makes ``X`` itself from the feature dicts, so nothing outside holds it: building the same
objective here (:class:`~sklearn_struct._chain_crf.ChainObjective`, the same L-BFGS /
OWL-QN of :func:`~sklearn_struct._chain_crf_fit.minimize_chain_objective`, the same fitted
``ChainCRF`` attributes) lets the CSR matrix (12 bytes per non-zero, ~280 bytes per token
on CoNLL-2000's window features) go before the first evaluation allocates its per-token
buffers, instead of staying alive through the fit. Used for the common case only: ``"lbfgs"``,
full labels, no ``allowed_transitions``; the others go through ``ChainCRF.fit``.
"""

import numpy as np

from .._chain_crf import ChainObjective
from .._chain_crf_fit import DEFAULT_MAX_ITER, check_solver_options, minimize_chain_objective
from .._chain_crf_online import transition_mask
from .._chain_crf_weights import sequence_weights
from ..utils.progress import Progress
from ..utils.shards import n_shards
from ..utils.validation import check_sequences

__all__ = ["lean_fit_applies", "fit_releasing_features"]


# the ChainCRF parameters fit_releasing_features reads; any other one must be at its default
_HANDLED = {"algorithm", "c1", "c2", "max_iter", "tol", "period", "epsilon", "all_possible_states",
            "all_possible_transitions", "min_freq", "fit_intercept", "solver_options", "n_jobs", "verbose",
            "callback", "class_weight"}
_MISSING = object()  # a parameter ChainCRF() does not have


def lean_fit_applies(chain, data, structure):
    """Whether :func:`fit_releasing_features` fits ``chain`` on the drop-in's ``data`` as ``chain.fit`` would:
    L-BFGS on full labels, no allowed transitions, no warm start, no parameter it does not read."""
    defaults = type(chain)().get_params()
    others = {name: value for name, value in chain.get_params().items() if name not in _HANDLED}
    return (chain.algorithm == "lbfgs" and not data.partial and structure is None
            and all(_at_default(value, defaults.get(name, _MISSING)) for name, value in others.items()))


def _at_default(value, default):
    return value is default or (isinstance(value, (bool, int, float, str)) and type(value) is type(default)
                                and value == default)


def fit_releasing_features(chain, data, sample_weight=None):
    """``chain.fit(data.X, data.y, **data.dev, sample_weight=sample_weight)``, dropping ``data.X`` early.

    ``data`` is the drop-in's vectorised training set: ``X``, per-sequence CSR views of one
    packed matrix with sorted indices; ``y``, label codes ``0 .. L-1`` in first-appearance
    order, every code present; ``positive``, whether every value in ``X`` is > 0 (then
    ``min_freq=0`` keeps exactly the pairs seen, and the pair counts are skipped); ``dev``.
    ``data.X`` (and ``data.y``) are deleted once the objective is built, so that the last
    reference to the matrix goes. Sets the fitted attributes ``chain.fit`` sets, with the same values.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> import numpy as np, scipy.sparse as sp
    >>> from sklearn_struct import ChainCRF
    >>> X = [sp.csr_matrix(np.eye(2)), sp.csr_matrix(np.eye(2)[::-1])]
    >>> y = [np.array([0, 1]), np.array([1, 0])]
    >>> data = SimpleNamespace(X=X, y=y, dev={}, partial=False, positive=True)
    >>> chain = fit_releasing_features(ChainCRF(fit_intercept=False), data)
    >>> hasattr(data, "X"), hasattr(data, "y"), chain.predict(X)[1].tolist()
    (False, False, [1, 0])
    """
    chain._validate_params()  # as ChainCRF.fit's _fit_context does
    params = chain.get_params()
    options = check_solver_options("lbfgs", params["solver_options"])
    max_iter = params["max_iter"] if params["max_iter"] is not None else DEFAULT_MAX_ITER["lbfgs"]
    progress = Progress(type(chain).__name__, chain.verbose, chain.callback)
    X, y_enc = check_sequences(data.X, data.y)  # ChainCRF.fit's checks and errors (e.g. an empty sequence)
    n_labels, n_features = int(max(int(v.max()) for v in y_enc)) + 1, X[0].shape[1]
    classes = np.arange(n_labels, dtype=np.int64)  # ChainCRF's LabelEncoder on the codes 0 .. L-1
    dev = None
    if data.dev:
        dev = (data.dev["X_dev"], data.dev["y_dev"])
    min_freq = params["min_freq"]
    if min_freq == 0 and data.positive:  # minfreq 0 keeps every pair seen (its frequency > 0): no counts needed
        min_freq = None
    weights = sequence_weights(sample_weight, params["class_weight"], y_enc, classes)
    objective = ChainObjective(X, y_enc, n_labels, params["c2"], n_chunks=n_shards(params["n_jobs"]),
                               n_jobs=params["n_jobs"], all_possible_states=params["all_possible_states"],
                               min_freq=min_freq, sample_weight=weights)
    del X, data.X  # the objective holds what it reads: the last reference to the matrix goes here
    y = np.concatenate(y_enc)
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in y_enc])])
    transitions = transition_mask(y, offsets, n_labels, params["all_possible_transitions"], min_freq)
    del y, offsets, y_enc, data.y  # the objective holds its own copy of the labels
    *fitted, log = minimize_chain_objective(objective, transitions, params, options, max_iter, None, progress, dev)
    chain.classes_, chain.n_features_in_ = classes, n_features
    chain.coef_, chain.intercept_, chain.transition_, chain.n_iter_, chain.objective_ = fitted
    chain.training_log_, chain.allowed_transitions_ = log, None
    return chain
