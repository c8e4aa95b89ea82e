"""Shared protocols and helpers of the benchmark scripts (see ``benchmarks/README.md``).

The scripts in ``papers/``, ``peers/``, ``product/`` and ``studies/`` import this package and nothing
else of ``benchmarks/``; it is the only place that imports package internals (``internals``).
"""
