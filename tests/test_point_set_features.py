"""PointSetPairFeatures: shape contexts vs a plain loop, invariances, Pipeline with the matcher, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.pipeline import make_pipeline

from sklearn_struct import MLEStructMatcher
from sklearn_struct.preprocessing import PointSetPairFeatures


def _loop_shape_context(P, n_r=5, n_a=12, r_in=0.125, r_out=2.0):
    n = len(P)
    mean = np.mean([math.dist(P[i], P[k]) for i in range(n) for k in range(n) if i != k])
    hist = np.zeros((n, n_r * n_a))
    for i in range(n):
        for k in range(n):
            if i == k:
                continue
            r = math.dist(P[i], P[k]) / mean
            if r > r_out:
                continue
            rb = 0
            for b in range(n_r):
                if r >= r_in * (r_out / r_in) ** (b / n_r):
                    rb = b
            a = math.atan2(P[k][1] - P[i][1], P[k][0] - P[i][0]) % (2 * math.pi)
            hist[i, rb * n_a + min(int(a / (2 * math.pi) * n_a), n_a - 1)] += 1
        hist[i] /= max(hist[i].sum(), 1)
    return hist


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 9), st.integers(0, 10_000))
def test_shape_context_matches_loop_and_is_invariant(n, seed):
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(n, 2)) * 10
    feats = PointSetPairFeatures()
    sc = feats._shape_context(P)
    np.testing.assert_allclose(sc, _loop_shape_context(P), atol=1e-12)
    # translation and scale invariant; permuting the right set permutes the feature columns
    perm = rng.permutation(n)
    F = feats.fit_transform([(P, P)])[0]
    G = feats.transform([(P, 3.0 * P[perm] + 5.0)])[0]
    np.testing.assert_allclose(G, F[:, perm], atol=1e-9)
    assert F.shape == (n, n, 62) and np.all(F[np.arange(n), np.arange(n)] == 0) and np.all(F <= 0)


def test_pipeline_learns_to_match_noisy_point_sets():
    rng = np.random.default_rng(0)
    X, y = [], []
    for _ in range(40):
        P = rng.uniform(0, 100, size=(12, 2))
        perm = rng.permutation(12)
        Q = (P + rng.normal(scale=2.0, size=P.shape))[perm]  # Q[k] is P[perm[k]]
        X.append((P, Q))
        y.append(np.argsort(perm))
    pipe = make_pipeline(PointSetPairFeatures(), MLEStructMatcher(alpha=0.1, random_state=0))
    pipe.fit(X[:30], y[:30])
    assert pipe.score(X[30:], y[30:]) > 0.9


@pytest.mark.parametrize(
    "X,match",
    [
        ([(np.zeros((3, 2)),)], r"X\[0\] must be a \(left_points"),
        ([(np.zeros((3, 3)), np.zeros((3, 2)))], r"X\[0\]: left points must be an \(n, 2\)"),
        ([(np.zeros((4, 2)), np.zeros((3, 2)))], r"X\[0\]: the left set"),
        ([(np.zeros((3, 2)), np.full((3, 2), np.inf))], r"X\[0\]: right points contain NaN"),
        ([], "non-empty"),
    ],
)
def test_bad_input(X, match):
    with pytest.raises(ValueError, match=match):
        PointSetPairFeatures().fit_transform(X)
