"""The quick tour (``python -m sklearn_struct``): rows stream as they finish, every estimator beats its baseline."""

import io

import pytest

from sklearn_struct import __main__ as tour


@pytest.fixture(scope="module")
def run():
    out = io.StringIO()
    printed_before = []

    def watched(entry):
        def run_entry():
            printed_before.append(len(out.getvalue().splitlines()))
            return entry()
        return run_entry

    entries = list(tour.TOUR)
    tour.TOUR[:] = [watched(e) for e in entries]
    try:
        rows = tour.main(out=out)
    finally:
        tour.TOUR[:] = entries
    return rows, out.getvalue(), printed_before


def test_rows_are_printed_as_each_entry_finishes(run):
    rows, text, printed_before = run
    assert len(printed_before) == len(tour.TOUR)
    # each entry starts after the rows of the previous ones are out: two rows (estimator, baseline) per entry
    header = printed_before[0]
    assert printed_before == [header + 2 * k for k in range(len(tour.TOUR))]
    assert text.splitlines()[-1].startswith("(whole tour:") and "s CPU" in text.splitlines()[-1]
    assert sum(line.startswith("First run") for line in text.splitlines()) <= 1


def test_every_estimator_beats_its_baseline(run):
    rows = run[0]
    assert len(rows) == 2 * len(tour.TOUR)
    for (name, _, score, _), (baseline, _, base_score, _) in zip(rows[::2], rows[1::2]):
        assert baseline.strip().startswith("baseline:")
        assert score > base_score + 0.02, (name, score, baseline, base_score)
