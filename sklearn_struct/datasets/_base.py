"""Where data sets live: ``data_home``, else ``$SKLEARN_STRUCT_DATA``, else ``~/sklearn_struct_data``."""

import contextlib
import gzip
import os
import zlib
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


@contextlib.contextmanager
def _named_read_errors(path):
    """Re-raise a truncated or corrupt (gzip) file's EOFError / zlib error as a ValueError naming ``path``."""
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ValueError(f"{path} is truncated or corrupt and cannot be read ({type(exc).__name__}: {exc}).") from None
