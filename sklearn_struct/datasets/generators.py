"""Seeded generators of structured data: multi-label data with label couplings, bipartite matchings."""

import numbers

import numpy as np
from sklearn.utils import Bunch, check_random_state

__all__ = ["make_multilabel_pairwise", "make_matchings"]

_MAX_EXACT_LABELS = 16  # 2**16 joint states per sample is still cheap to enumerate in chunks
_CHUNK_ENTRIES = 1 << 22  # samples x joint states scored at once (32 MB of float64)


def make_multilabel_pairwise(
    n_samples=200,
    *,
    n_features=20,
    n_labels=6,
    edge_strength=1.0,
    noise=1.0,
    return_params=False,
    random_state=None,
):
    r"""Multi-label data drawn exactly from a fully connected pairwise binary label model.

    Features are standard normal. Given ``x``, the labels ``y`` in {0, 1}^n_labels follow

    .. math::

        P(y \mid x) \propto \exp\Big(\big(\sum_l y_l (x^\top W_{:, l} + b_l)
        + \sum_{k < l} C_{kl} \, y_k y_l\big) / \text{noise}\Big),

    and are sampled by exact enumeration of all ``2 ** n_labels`` joint states, so the
    true model is the Bayes-optimal predictor. ``W`` has entries ``N(0, 1 / n_features)``
    (unary scores of unit scale), ``b`` is ``N(0, 1)`` and the symmetric couplings ``C``
    are ``N(0, edge_strength**2 / (n_labels - 1))``, so that the total pairwise input
    to one label has the scale ``edge_strength`` whatever the number of labels.

    Parameters
    ----------
    n_samples : int, default=200
    n_features : int, default=20
    n_labels : int, default=6
        At most 16 (exact enumeration).
    edge_strength : float, default=1.0
        Scale of the label couplings; 0 gives independent labels given ``x``.
    noise : float, default=1.0
        Temperature of the label distribution: small values make the labels nearly
        deterministic, large ones nearly uniform; 0 gives the most probable (MAP) labels.
    return_params : bool, default=False
        Also return the true parameters.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    Y : ndarray of shape (n_samples, n_labels), int in {0, 1}
    params : :class:`~sklearn.utils.Bunch`
        ``coef`` (n_features, n_labels), ``intercept`` (n_labels,), ``pairwise``
        (n_labels, n_labels), symmetric with a zero diagonal, and ``noise``.
        Only if ``return_params`` is True.

    Examples
    --------
    >>> from sklearn_struct.datasets import make_multilabel_pairwise
    >>> X, Y = make_multilabel_pairwise(n_samples=5, n_features=3, n_labels=4, random_state=0)
    >>> X.shape, Y.shape, set(Y.ravel()) <= {0, 1}
    ((5, 3), (5, 4), True)
    """
    _check_int("n_samples", n_samples, 1)
    _check_int("n_features", n_features, 1)
    _check_int("n_labels", n_labels, 1, _MAX_EXACT_LABELS)
    _check_nonnegative("edge_strength", edge_strength)
    _check_nonnegative("noise", noise)

    rng = check_random_state(random_state)
    W = rng.normal(scale=1.0 / np.sqrt(n_features), size=(n_features, n_labels))
    b = rng.normal(size=n_labels)
    C = np.triu(rng.normal(scale=edge_strength / np.sqrt(max(n_labels - 1, 1)), size=(n_labels, n_labels)), 1)
    C = C + C.T
    X = rng.normal(size=(n_samples, n_features))
    Y = _sample_pairwise_labels(X @ W + b, C, noise, rng)
    if return_params:
        return X, Y, Bunch(coef=W, intercept=b, pairwise=C, noise=float(noise))
    return X, Y


def make_matchings(n_samples=50, *, n_nodes=10, n_features=8, noise=0.1, random_state=None):
    """Bipartite matching problems whose true permutation is recoverable from pair features.

    For each sample, ``n_nodes`` left points ``f_i`` are drawn from ``N(0, I)`` and a
    random permutation ``pi``; the right point ``g_{pi(i)}`` is ``f_i`` plus Gaussian
    noise. The pair features are ``X[i, j, k] = -|f_{ik} - g_{jk}|``, largest (0) for
    matched pairs when ``noise`` is 0, so a linear scorer with positive weights recovers
    ``pi`` (exactly at ``noise=0``, with errors growing with ``noise``).

    Parameters
    ----------
    n_samples : int, default=50
    n_nodes : int, default=10
        Number of nodes on each side.
    n_features : int, default=8
        Dimension of the points, and number of pair features.
    noise : float, default=0.1
        Standard deviation of the displacement of the right points.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : list of ndarray of shape (n_nodes, n_nodes, n_features)
        Pair features, left node first.
    y : list of ndarray of shape (n_nodes,), int
        ``y[s][i] = j``: left node ``i`` is matched to right node ``j``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import linear_sum_assignment
    >>> from sklearn_struct.datasets import make_matchings
    >>> X, y = make_matchings(n_samples=2, n_nodes=5, noise=0.0, random_state=0)
    >>> X[0].shape
    (5, 5, 8)
    >>> _, match = linear_sum_assignment(X[0].sum(axis=2), maximize=True)
    >>> bool(np.array_equal(match, y[0]))
    True
    """
    _check_int("n_samples", n_samples, 1)
    _check_int("n_nodes", n_nodes, 1)
    _check_int("n_features", n_features, 1)
    _check_nonnegative("noise", noise)

    rng = check_random_state(random_state)
    X, y = [], []
    for _ in range(n_samples):
        left = rng.normal(size=(n_nodes, n_features))
        perm = rng.permutation(n_nodes)
        right = np.empty_like(left)
        right[perm] = left + noise * rng.normal(size=left.shape)
        X.append(-np.abs(left[:, None, :] - right[None, :, :]))
        y.append(perm.astype(np.int64))
    return X, y


def _joint_states(n_labels):
    """All ``2 ** n_labels`` label vectors, row s holding the bits of s (label l = bit l)."""
    return ((np.arange(2**n_labels)[:, None] >> np.arange(n_labels)) & 1).astype(np.float64)


def _sample_pairwise_labels(unary, pairwise, noise, rng):
    """Exact samples (or the MAP if ``noise == 0``) of the pairwise model, one per row of ``unary``."""
    n_samples, n_labels = unary.shape
    states = _joint_states(n_labels)
    pair_scores = 0.5 * np.einsum("sk,kl,sl->s", states, pairwise, states)  # sum over k < l
    chunk = max(1, _CHUNK_ENTRIES // len(states))
    Y = np.empty((n_samples, n_labels), dtype=np.int64)
    for start in range(0, n_samples, chunk):
        scores = unary[start : start + chunk] @ states.T + pair_scores
        if noise == 0:
            index = np.argmax(scores, axis=1)
        else:
            # inverse-CDF sampling; shifting by the row max keeps exp() from overflowing
            weights = np.exp((scores - scores.max(axis=1, keepdims=True)) / noise)
            cdf = np.cumsum(weights, axis=1)
            u = rng.random_sample(len(scores))[:, None] * cdf[:, -1:]
            index = np.minimum((cdf <= u).sum(axis=1), len(states) - 1)
        Y[start : start + chunk] = states[index]
    return Y


def _check_int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low or (
        high is not None and value > high
    ):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be an integer {bound}, got {value!r}.")


def _check_nonnegative(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")

