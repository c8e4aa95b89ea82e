"""Run serial numba kernels over chunks of the work on several threads, as many as the work pays for.

The hot kernels are plain ``@njit(nogil=True)`` functions over a contiguous chunk of the
packed data; :func:`run_chunks_in_threads` calls one per chunk on a small pool of Python
threads (the kernels release the GIL, so the chunks run truly in parallel). This keeps
numba's ``parallel=True`` out of the hot paths: a ``prange`` kernel costs several times
more to compile (parfor lowering, a gufunc, LLVM over the whole inlined loop nest), which
dominated a fresh install's first ``fit``.

A parallel call ends in a barrier: every thread must finish before the call returns.
When the machine is busy (other processes, joblib workers, a grid search), one
descheduled thread makes the others wait for a whole scheduler time slice, which costs
far more than a small problem's work (on this project's loaded 2-core machine, a small CRF
fit ran several times slower on two threads than on one). So a call gets one thread per
``MIN_WORK_PER_THREAD`` multiply-adds, at most ``numba.get_num_threads()`` (the
``NUMBA_NUM_THREADS`` budget, lowered by ``numba.set_num_threads``); one thread runs the
kernel directly in the calling thread.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

__all__ = ["n_threads_for", "run_chunks_in_threads", "token_chunks", "MIN_WORK_PER_THREAD"]

MIN_WORK_PER_THREAD = 2_000_000  # ~1 ms of arithmetic: large against a barrier's cost

_POOL = None
_POOL_PID = None
_POOL_LOCK = threading.Lock()


def n_threads_for(work):
    """``min(numba.get_num_threads(), work // MIN_WORK_PER_THREAD)``, at least 1."""
    return max(1, min(numba.get_num_threads(), int(work // MIN_WORK_PER_THREAD)))


def _pool():
    """The process's worker threads (made again after a fork: a forked child has none)."""
    global _POOL, _POOL_PID
    with _POOL_LOCK:
        if _POOL is None or _POOL_PID != os.getpid():
            _POOL = ThreadPoolExecutor(max_workers=max(1, numba.config.NUMBA_NUM_THREADS - 1),
                                       thread_name_prefix="sklearn_struct")
            _POOL_PID = os.getpid()
        return _POOL


def run_chunks_in_threads(func, n_chunks):
    """Call ``func(c)`` for ``c`` in ``range(n_chunks)``, chunk 0 in this thread and the rest in the pool.

    ``func`` should spend its time in a ``nogil`` kernel. Exceptions propagate; the results
    are returned in chunk order.
    """
    if n_chunks <= 1:
        return [func(c) for c in range(n_chunks)]
    futures = [_pool().submit(func, c) for c in range(1, n_chunks)]
    first = func(0)
    return [first] + [f.result() for f in futures]


def token_chunks(offsets, n_chunks):
    """Sequence bounds ``(n_chunks + 1,)`` splitting packed sequences into chunks of near-equal token counts.

    Every chunk holds at least one sequence (fewer chunks when there are fewer sequences).

    >>> token_chunks(np.array([0, 5, 6, 7, 12]), 2)
    array([0, 2, 4])
    """
    n_seq = offsets.shape[0] - 1
    n_chunks = max(1, min(n_chunks, n_seq))
    targets = np.linspace(0, offsets[-1], n_chunks + 1)[1:-1]
    inner = np.searchsorted(offsets, targets, side="left")
    bounds = np.unique(np.concatenate([[0], np.clip(inner, 1, n_seq - 1) if n_seq > 1 else [], [n_seq]]))
    return bounds.astype(np.int64)
