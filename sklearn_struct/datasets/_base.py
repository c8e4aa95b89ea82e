"""Where data sets live: ``data_home``, else ``$SKLEARN_STRUCT_DATA``, else ``~/sklearn_struct_data``."""

import os
from pathlib import Path

__all__ = ["get_data_home", "find_data_file"]


def get_data_home(data_home=None):
    """Return the folder that holds the data sets (it is not created).

    Parameters
    ----------
    data_home : str or path-like, default=None
        Explicit folder; if None, ``$SKLEARN_STRUCT_DATA`` is used, else ``~/sklearn_struct_data``.
    """
    if data_home is None:
        data_home = os.environ.get("SKLEARN_STRUCT_DATA") or os.path.join("~", "sklearn_struct_data")
    return Path(os.path.expanduser(str(data_home)))


def find_data_file(relative_paths, data_home=None):
    """First existing file among ``relative_paths`` under the data home, or a clear FileNotFoundError."""
    if isinstance(relative_paths, (str, os.PathLike)):
        relative_paths = [relative_paths]
    if not isinstance(relative_paths, (list, tuple)) or not relative_paths or not all(
        isinstance(rel, (str, os.PathLike)) for rel in relative_paths
    ):
        raise ValueError(f"relative_paths must be a path or a non-empty list of paths, got {relative_paths!r}.")
    home = get_data_home(data_home)
    for rel in relative_paths:
        path = home / rel
        if path.exists():
            return path
    tried = ", ".join(str(home / rel) for rel in relative_paths)
    raise FileNotFoundError(
        f"Data file not found (looked for: {tried}). Pass data_home=..., set SKLEARN_STRUCT_DATA, "
        f"or call the matching fetch_* function to download it."
    )
