"""Loaders for the real data formats and seeded generators of structured data."""

from ._base import get_data_home

__all__ = ["get_data_home"]
