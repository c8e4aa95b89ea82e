"""Loaders for the real data formats and seeded generators of structured data."""

from ._base import get_data_home
from ._chain import make_chain_data

__all__ = ["get_data_home", "make_chain_data"]
