"""The two numba decorators of the package's kernels, chosen for the first fit after an install.

numba compiles every jitted function it meets into a library of its own (typing, lowering, LLVM
optimisation, machine code), then links that library's optimised code into each caller's library
and optimises and compiles it there again. So, in a fresh install, each helper costs its own
compilation plus a share of every kernel that calls it, and each library carries wrappers:

- ``kernel``: an entry point called from Python. ``@njit(cache=True, nogil=True)`` without the
  C-callback (``cfunc``) wrapper numba adds for taking the function's address, which nothing in
  the package does.
- ``helper``: a function called only from other kernels (``numba.extending.register_jitable``).
  Inside numba it compiles as an overload, once per signature, without the Python-call wrapper and
  with literal arguments typed as their plain type (so ``f(1, ...)`` does not compile a second
  specialisation for the constant); from Python it is the plain Python function (slow, but never
  a crash). Together the two cut about a tenth of a first fit's compilation
  (``benchmarks/results/cold_start.md``).

Both take numba's options (``fastmath=...``), as ``kernel(fastmath=F)`` or bare ``@kernel``.
"""

from numba import njit
from numba.extending import register_jitable

__all__ = ["kernel", "helper"]

_COMMON = {"cache": True, "nogil": True, "no_cfunc_wrapper": True}


def kernel(func=None, **options):
    """``@njit(cache=True, nogil=True)`` without the cfunc wrapper: a kernel called from Python."""
    decorator = njit(**_COMMON, **options)
    return decorator(func) if func is not None else decorator


def helper(func=None, **options):
    """A function called only from kernels: compiled into them, plain Python when called from Python."""
    decorator = register_jitable(**_COMMON, **options)
    return decorator(func) if func is not None else decorator
