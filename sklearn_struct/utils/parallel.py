"""joblib helpers: split work into chunks and run them with the active joblib backend.

Estimators call :func:`run_chunks` instead of ``joblib.Parallel`` directly so that
``with joblib.parallel_backend("dask"): est.fit(X, y)`` sends the chunks to a dask cluster,
and ``n_jobs=None`` defers to the active ``parallel_config`` exactly as scikit-learn does.
Inside one chunk the numba kernels parallelise over sequences on their own threads.
"""

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

__all__ = ["run_chunks", "even_chunks"]


def even_chunks(n_items, n_chunks):
    """Split ``range(n_items)`` into at most ``n_chunks`` contiguous, near-equal slices.

    >>> even_chunks(5, 2)
    [slice(0, 2, None), slice(2, 5, None)]
    """
    from .validation import check_scalar_param

    n_items = check_scalar_param(n_items, "n_items", kind="int", low=0)
    n_chunks = check_scalar_param(n_chunks, "n_chunks", kind="int", low=1)
    n_chunks = max(1, min(n_chunks, n_items))
    bounds = np.linspace(0, n_items, n_chunks + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def run_chunks(func, items, *, n_jobs=None, verbose=0, prefer="threads"):
    """Apply ``func`` to each item of ``items`` with joblib; return the results in order.

    With one effective job (the default when no backend is configured) this is a plain
    loop and costs nothing; otherwise it uses the active joblib backend, so a
    ``parallel_backend("dask")`` context set by the user is honoured.
    """
    if not callable(func):
        raise TypeError(f"func must be callable, got {type(func).__name__}.")
    items = list(items)
    if len(items) <= 1 or effective_n_jobs(n_jobs) == 1:
        return [func(item) for item in items]
    return Parallel(n_jobs=n_jobs, verbose=verbose, prefer=prefer)(delayed(func)(item) for item in items)
