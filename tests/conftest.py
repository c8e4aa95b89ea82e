"""Shared fixtures: the real-data folder (tests skip cleanly when it is absent)."""

import os
from pathlib import Path

import pytest


def _data_home():
    path = os.environ.get("SKLEARN_STRUCT_DATA")
    return Path(path) if path else None


@pytest.fixture(scope="session")
def data_home():
    """The folder of ../shared/data, or skip the test when SKLEARN_STRUCT_DATA is not set/missing."""
    home = _data_home()
    if home is None or not home.is_dir():
        pytest.skip("real data not available: set SKLEARN_STRUCT_DATA to the shared data folder")
    return home
