"""Fuzz suite: every public callable against every kind of bad input (issue #8).

The probe itself lives in ``tests/_fuzz_probe.py`` and runs in a child interpreter, so that
a segfault (e.g. numba reading an unchecked index) fails this test with the name of the last
case started instead of killing pytest. It walks every public callable listed in
doc/api.rst and in the ``__all__`` of each module, calls it once with valid input and then
with each applicable bad input (empty, ragged, NaN/inf, wrong ndim/dtype/shape,
out-of-range and negative indices, wrong-length weights, huge and tiny magnitudes), and
finishes with hypothesis-drawn arrays for the oracles and packing helpers. Every outcome
must be a ValueError/TypeError naming the argument (and the index, where there is one) or
a NaN-free, correct result.

Coverage by construction (issue #34): the probe lists every public callable of every public module
that has an ``__all__`` (found by walking the package, plus doc/api.rst). Each must have an
explicit fuzz entry (a valid call or a bad-input case in ``tests/_fuzz_probe*.py``); being reached
only by the generic None / NaN / string probe is not enough. The list itself is kept in
``tests/fuzz_public_callables.txt`` (regenerate with ``python tests/_fuzz_probe.py --list``), so a
new public function fails :func:`test_the_list_of_public_callables_is_current` until it is added
there, and :func:`test_every_public_callable_survives_every_bad_input` until it has an entry.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from _bounded import run_cpu_bounded
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sklearn_struct.utils.validation import check_float_array, check_int_array, check_offsets

PROBE = Path(__file__).with_name("_fuzz_probe.py")
LISTED = Path(__file__).with_name("fuzz_public_callables.txt")


def test_every_public_callable_survives_every_bad_input():
    proc = run_cpu_bounded([sys.executable, str(PROBE), "40"], cpu_seconds=900, capture_output=True, text=True)
    last = proc.stderr.strip().splitlines()[-3:]
    assert proc.returncode == 0, f"probe crashed (exit {proc.returncode}); last cases: {last}\n{proc.stderr[-2000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["cases"] > 4000
    assert report["failures"] == [], "\n".join(report["failures"])  # nothing tolerated
    missing = sorted(set(report["listed"]) - set(report["visited"]))
    assert not missing, (f"public callables with no fuzz entry (reached only by the generic probe, if at all): "
                         f"{missing}; add a valid call and bad inputs for each to tests/_fuzz_probe*.py")


def test_the_list_of_public_callables_is_current():
    proc = run_cpu_bounded([sys.executable, str(PROBE), "--list"], cpu_seconds=300, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    current = proc.stdout.split()
    assert len(current) > 150
    assert current == LISTED.read_text().split(), (
        "the public API changed: regenerate tests/fuzz_public_callables.txt with `python tests/_fuzz_probe.py "
        "--list > tests/fuzz_public_callables.txt` and give every new callable a fuzz entry")


# in-process properties of the shared validation helpers (pure NumPy: no crash possible)

_values = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e308, -1e308, 1e-308]))


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(0, 4), st.integers(0, 4)), elements=_values), st.booleans())
def test_check_float_array_names_the_first_bad_entry(arr, allow_neg_inf):
    bad = np.isnan(arr) | (arr == np.inf) | ((arr == -np.inf) & (not allow_neg_inf))
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        with pytest.raises(ValueError, match=rf"^x contains .* at index \({at[0]}, {at[1]}\)"):
            check_float_array(arr, "x", allow_neg_inf=allow_neg_inf)
    else:
        np.testing.assert_array_equal(check_float_array(arr, "x", allow_neg_inf=allow_neg_inf), arr)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-5, 12), max_size=6), st.integers(1, 8))
def test_check_int_array_and_offsets(values, n):
    arr = np.array(values, dtype=np.int64)
    out_of_range = (arr < 0) | (arr >= n)
    if out_of_range.any():
        k = int(np.flatnonzero(out_of_range)[0])
        with pytest.raises(ValueError, match=rf"idx\[{k}\] = {arr[k]} is out of range \[0, {n - 1}\]"):
            check_int_array(arr, "idx", low=0, high=n)
    else:
        np.testing.assert_array_equal(check_int_array(arr, "idx", low=0, high=n), arr)
    valid = len(arr) >= 2 and arr[0] == 0 and np.all(np.diff(arr) >= 0)
    if valid:
        np.testing.assert_array_equal(check_offsets(arr), arr)
    else:
        with pytest.raises(ValueError, match="offsets"):
            check_offsets(arr)
