"""Run a child interpreter bounded by its CPU time, not by the wall clock.

A wall-clock timeout fails a test whenever the machine is busy (a loaded 2-core CI box ran an
example 2.5x slower than alone); CPU seconds do not grow with load. ``RLIMIT_CPU`` makes the
kernel stop the child once it has used ``cpu_seconds`` (all its threads together); the wall
clock keeps only a generous guard against a child that hangs without using CPU.
"""

import resource
import subprocess

__all__ = ["run_cpu_bounded"]

HANG_GUARD_SECONDS = 3600  # a hang guard only: no load makes a bounded child take this long


def run_cpu_bounded(args, cpu_seconds, **kwargs):
    """``subprocess.run(args, **kwargs)`` with the child's CPU time capped at ``cpu_seconds``.

    A child over its budget is killed by SIGXCPU / SIGKILL and returns a negative exit code.
    """

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_seconds), int(cpu_seconds) + 5))

    return subprocess.run(args, preexec_fn=limit, timeout=HANG_GUARD_SECONDS, **kwargs)
