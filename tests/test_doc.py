"""The API reference is generated from the docstrings and must be current."""

import importlib.util
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "doc"


def test_api_reference_is_up_to_date():
    spec = importlib.util.spec_from_file_location("make_api", DOC / "make_api.py")
    make_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_api)
    assert (DOC / "api.md").read_text() == make_api.render(), "run: python doc/make_api.py"
