"""Generated multi-label data for the DLPW benchmarks (many labels, correlated through latent factors)."""

import numpy as np


def make_many_labels(n, n_features, n_labels, rank=5, random_state=0, noise=0.5):
    """Labels from a linear model of ``x`` plus ``rank`` shared latent factors (correlated labels) and Gaussian
    label noise of scale ``noise``."""
    rng = np.random.RandomState(random_state)
    X = rng.normal(size=(n, n_features))
    W = rng.normal(size=(n_features, n_labels)) / np.sqrt(n_features)
    Z = rng.normal(size=(n, rank)) @ rng.normal(size=(rank, n_labels)) / np.sqrt(rank)
    bias = rng.normal(-1.0, 0.5, size=n_labels)  # sparse label sets
    Y = (X @ W + Z + bias + noise * rng.normal(size=(n, n_labels)) > 0).astype(np.int64)
    return X, Y
