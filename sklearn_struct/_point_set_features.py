"""Pair features for matching two 2D point sets (Caetano et al. 2009, linear assignment features).

Every point gets a log-polar shape context (Belongie, Malik & Puzicha 2002): the histogram of the
positions of the other points of its set relative to it, ``n_radial`` log-spaced distance bins between
``r_inner`` and ``r_outer`` times the set's mean pairwise distance (closer points fall in the first
bin, farther ones are dropped) by ``n_angular`` angle bins, normalised to sum 1 (5 x 12 = 60 bins by
default). The pair features of left point ``i`` and right point ``j`` are the per-bin negated absolute
differences ``-|sc_i - sc'_j|`` (one learned weight per bin, as in Caetano et al.'s "linear"
setting), followed, when ``geometry=True``, by two terms relating each point to its set's centroid:
``-|r_i - r'_j|`` (distance to the centroid over the mean such distance) and
``-(1 - cos(a_i - a'_j)) / 2`` (difference of the direction to the centroid).
"""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval

from .utils._params import store_init_params

__all__ = ["PointSetPairFeatures"]


class PointSetPairFeatures(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Turn pairs of 2D point sets into ``(n_left, n_right, n_features)`` pair features.

    Parameters
    ----------
    n_radial : int, default=5
    n_angular : int, default=12
    r_inner, r_outer : float, default=0.125, 2.0
        Radial range of the shape-context bins, in units of the set's mean pairwise distance.
    geometry : bool, default=True
        Append the distance-to-centroid and direction-to-centroid terms.

    Attributes
    ----------
    n_features_out_ : int
        ``n_radial * n_angular + 2 * geometry``.

    References
    ----------
    T. Caetano, J. McAuley, L. Cheng, Q. Le, A. Smola. Learning Graph Matching. IEEE TPAMI 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.preprocessing import PointSetPairFeatures
    >>> P = np.random.default_rng(0).normal(size=(6, 2))
    >>> feats = PointSetPairFeatures().fit_transform([(P, P[::-1])])
    >>> feats[0].shape
    (6, 6, 62)
    >>> bool(np.allclose(feats[0][np.arange(6), np.arange(6)[::-1]], 0))  # same points: no difference
    True
    """

    _parameter_constraints = {
        "n_radial": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_angular": [Interval(numbers.Integral, 1, None, closed="left")],
        "r_inner": [Interval(numbers.Real, 0, None, closed="neither")],
        "r_outer": [Interval(numbers.Real, 0, None, closed="neither")],
        "geometry": ["boolean"],
    }

    def __init__(self, *, n_radial=5, n_angular=12, r_inner=0.125, r_outer=2.0, geometry=True):
        store_init_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the parameters (the features have nothing to learn)."""
        if self.r_inner >= self.r_outer:
            raise ValueError(f"r_inner={self.r_inner} must be smaller than r_outer={self.r_outer}.")
        _check_pairs(X)
        self.n_features_out_ = self.n_radial * self.n_angular + 2 * bool(self.geometry)
        return self

    def transform(self, X):
        """Pair features of every ``(left_points, right_points)`` pair.

        Parameters
        ----------
        X : list of tuple (ndarray (n_left, 2), ndarray (n_right, 2))

        Returns
        -------
        features : list of ndarray of shape (n_left, n_right, n_features_out_)
        """
        pairs = _check_pairs(X)
        return [self._pair_features(P, Q) for P, Q in pairs]

    def _pair_features(self, P, Q):
        sc_p, sc_q = self._shape_context(P), self._shape_context(Q)
        feats = [-np.abs(sc_p[:, None, :] - sc_q[None, :, :])]
        if self.geometry:
            (r_p, a_p), (r_q, a_q) = _polar_to_centroid(P), _polar_to_centroid(Q)
            feats.append(-np.abs(r_p[:, None] - r_q[None, :])[..., None])
            feats.append(-((1.0 - np.cos(a_p[:, None] - a_q[None, :])) / 2.0)[..., None])
        return np.concatenate(feats, axis=2)

    def _shape_context(self, P):
        n = len(P)
        diff = P[None, :, :] - P[:, None, :]  # diff[i, k] = p_k - p_i
        dist = np.hypot(diff[..., 0], diff[..., 1])
        off = ~np.eye(n, dtype=bool)
        scale = dist[off].mean() if n > 1 else 1.0
        scale = scale if scale > 0 else 1.0
        r = dist / scale
        edges = np.geomspace(self.r_inner, self.r_outer, self.n_radial + 1)
        r_bin = np.clip(np.searchsorted(edges, r, side="right") - 1, 0, None)  # below r_inner -> bin 0
        angle = np.mod(np.arctan2(diff[..., 1], diff[..., 0]), 2 * np.pi)
        a_bin = np.minimum((angle / (2 * np.pi) * self.n_angular).astype(int), self.n_angular - 1)
        keep = off & (r <= self.r_outer)
        hist = np.zeros((n, self.n_radial * self.n_angular))
        rows = np.broadcast_to(np.arange(n)[:, None], (n, n))[keep]
        np.add.at(hist, (rows, (r_bin * self.n_angular + a_bin)[keep]), 1.0)
        return hist / np.maximum(hist.sum(axis=1, keepdims=True), 1.0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.requires_fit = False
        return tags


def _polar_to_centroid(P):
    v = P - P.mean(axis=0)
    r = np.hypot(v[:, 0], v[:, 1])
    mean = r.mean()
    return r / (mean if mean > 0 else 1.0), np.arctan2(v[:, 1], v[:, 0])


def _check_pairs(X):
    if not isinstance(X, (list, tuple)) or len(X) == 0:
        raise ValueError("X must be a non-empty list of (left_points, right_points) pairs.")
    out = []
    for m, pair in enumerate(X):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"X[{m}] must be a (left_points, right_points) pair.")
        sets = []
        for side, pts in zip(("left", "right"), pair):
            try:
                pts = np.asarray(pts, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"X[{m}]: {side} points are not a numeric array.") from None
            if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) == 0:
                raise ValueError(f"X[{m}]: {side} points must be an (n, 2) array, got shape {pts.shape}.")
            if not np.all(np.isfinite(pts)):
                raise ValueError(f"X[{m}]: {side} points contain NaN or infinite values.")
            sets.append(pts)
        if len(sets[0]) > len(sets[1]):
            raise ValueError(f"X[{m}]: the left set ({len(sets[0])} points) must not be larger than the right ({len(sets[1])}).")
        out.append(tuple(sets))
    return out
