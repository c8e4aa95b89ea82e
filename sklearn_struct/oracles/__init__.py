"""Numba kernels on plain arrays, shared by the estimators (no scikit-learn, no state)."""
