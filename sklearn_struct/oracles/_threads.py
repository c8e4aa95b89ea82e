"""Choose how many numba threads a kernel call gets from the amount of work it has.

A parallel region ends in a barrier: every thread must finish before the call returns.
When the machine is busy (other processes, joblib workers, a grid search), one
descheduled thread makes the others wait for a whole scheduler time slice, which costs
far more than a small problem's work (on this project's loaded 2-core machine, a small CRF
fit ran several times slower on two threads than on one). So a call gets one thread per
``MIN_WORK_PER_THREAD`` multiply-adds, at most all of numba's.
"""

from contextlib import contextmanager

import numba

__all__ = ["threads_for", "MIN_WORK_PER_THREAD"]

MIN_WORK_PER_THREAD = 2_000_000  # ~1 ms of arithmetic: large against a barrier's cost


@contextmanager
def threads_for(work):
    """Run the enclosed numba calls with ``min(all, work // MIN_WORK_PER_THREAD)`` threads (at least 1)."""
    available = numba.get_num_threads()
    wanted = max(1, min(available, int(work // MIN_WORK_PER_THREAD)))
    if wanted == available:
        yield wanted
        return
    numba.set_num_threads(wanted)
    try:
        yield wanted
    finally:
        numba.set_num_threads(available)
