"""Loader for the CMU house and hotel landmark sequences (graph-matching benchmark)."""

import io
import re
import struct
import zlib

import numpy as np
import scipy.io
from sklearn.utils import Bunch

from ..utils._files import as_file_path, named_read_errors, read_bytes
from ._base import find_data_file
from ._fetch import fetch_file

__all__ = ["load_cmu_house_hotel", "fetch_cmu_house_hotel", "read_landmark_file"]

# Feng Zhou's cmum.mat as vendored in Lpbox-ADMM, pinned to the commit the shared copy came from.
CMUM_URL = (
    "https://raw.githubusercontent.com/wubaoyuan/Lpbox-ADMM/cecfb0ad2aa9710bac666166978687e754e92ae4/"
    "matlab/demo/matching/data/cmum/cmum.mat"
)
CMUM_SHA256 = "d428f3a01bee927dfeb71deaeb5229dbcf0cd2da07d3842e820a84f23ec50091"
_MAT_FILE = "cmu_house_hotel/cmum.mat"
# text label folders: the original house labels, and hotel labels written from cmum.mat
_TEXT_DIRS = {"house": "cmu_house_hotel/house/label", "hotel": "cmu_house_hotel/hotel/label_derived"}


def load_cmu_house_hotel(sequence="house", data_home=None, source="mat"):
    """Load the 2D landmarks of the CMU house (111 frames) or hotel (101 frames) sequence.

    Every frame has the same 30 hand-labelled points in the same order, so the true
    matching between any two frames is the identity permutation.

    Parameters
    ----------
    sequence : {"house", "hotel"}, default="house"
    data_home : str or path-like, default=None
        See :func:`~sklearn_struct.datasets.get_data_home`.
    source : {"mat", "text"}, default="mat"
        Read ``cmu_house_hotel/cmum.mat`` (``CMUM.<sequence>.XTs``), or the per-frame text
        files (``house/label/houseN``, ``hotel/label_derived/hotelN``).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        - ``points``: float ndarray ``(n_frames, 30, 2)`` of ``(x, y)`` pixel coordinates,
          frames in order.
        - ``sequence``: the sequence name.
        - ``filename``: the file (or folder) read.

    Examples
    --------
    >>> from sklearn_struct.datasets import load_cmu_house_hotel
    >>> load_cmu_house_hotel("hotel").points.shape  # doctest: +SKIP
    (101, 30, 2)
    """
    if not isinstance(sequence, str) or sequence not in _TEXT_DIRS:
        raise ValueError(f"sequence must be one of ['house', 'hotel'], got {sequence!r}.")
    if source == "mat":
        path = find_data_file(_MAT_FILE, data_home)
        points = _read_cmum(path, sequence)
    elif source == "text":
        path = find_data_file(_TEXT_DIRS[sequence], data_home)
        points = _read_label_folder(path, sequence)
    else:
        raise ValueError(f"source must be 'mat' or 'text', got {source!r}.")
    return Bunch(points=points, sequence=sequence, filename=str(path))


def fetch_cmu_house_hotel(sequence="house", data_home=None, download_if_missing=True):
    """Load a CMU sequence from ``cmum.mat``, downloading the file first if it is missing.

    Parameters
    ----------
    sequence : {"house", "hotel"}, default="house"
        Which of the two image sequences.
    data_home : str or path-like, default=None
        The data folder, where a download is stored (see
        :func:`~sklearn_struct.datasets.get_data_home`).
    download_if_missing : bool, default=True
        Download ``cmum.mat`` when it is not there; if False, raise FileNotFoundError then.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        See :func:`load_cmu_house_hotel`.
    """
    if not isinstance(sequence, str) or sequence not in _TEXT_DIRS:
        raise ValueError(f"sequence must be one of ['house', 'hotel'], got {sequence!r}.")
    fetch_file(
        _MAT_FILE,
        CMUM_URL,
        name="CMU house/hotel landmarks (cmum.mat)",
        data_home=data_home,
        download_if_missing=download_if_missing,
        sha256=CMUM_SHA256,
    )
    return load_cmu_house_hotel(sequence, data_home=data_home, source="mat")


def read_landmark_file(path):
    """Read one landmark file: one ``x y`` pair per line, returned as an ``(n_points, 2)`` float array.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    points : ndarray of shape (n_points, 2)
    """
    path = as_file_path(path)
    raw = read_bytes(path)
    if not raw.strip():
        raise ValueError(f"{path} holds no points (the file is empty).")
    with named_read_errors(path):
        points = np.loadtxt(io.BytesIO(raw), dtype=np.float64, ndmin=2)
    if not np.all(np.isfinite(points)):
        row = int(np.argwhere(~np.isfinite(points))[0, 0])
        raise ValueError(f"{path}: point {row} is not finite: {points[row].tolist()}.")
    if points.shape[1] != 2:
        raise ValueError(f"{path}: expected 2 columns (x y) per line, found {points.shape[1]}.")
    return points


# what scipy's MAT reader raises on a damaged file (bad header, truncated or corrupt zlib stream, ...)
_MAT_ERRORS = (scipy.io.matlab.MatReadError, zlib.error, EOFError, ValueError, TypeError, struct.error,
               OverflowError, IndexError, KeyError, AttributeError, NotImplementedError)


def _read_cmum(path, sequence):
    try:
        mat = scipy.io.loadmat(path, simplify_cells=True)
    except (*_MAT_ERRORS, OSError) as exc:
        if isinstance(exc, OSError) and exc.filename is not None:  # the file system's error (permissions, ...)
            raise
        raise ValueError(f"{path} is damaged or not a MATLAB file: {type(exc).__name__}: {str(exc)[:200]}") from None
    try:
        frames = mat["CMUM"][sequence]["XTs"]
    except (KeyError, TypeError, IndexError):
        raise ValueError(f"{path} has no CMUM.{sequence}.XTs cell array.") from None
    try:
        points = np.stack([np.asarray(frame, dtype=np.float64).T for frame in frames])  # (2, 30) -> (30, 2)
    except (ValueError, TypeError):
        points = None
    if points is None or points.ndim != 3 or points.shape[2] != 2 or points.shape[1] == 0:
        raise ValueError(f"{path}: CMUM.{sequence}.XTs frames are not 2 x n_points arrays of numbers.")
    bad = np.argwhere(~np.isfinite(points))
    if bad.size:
        raise ValueError(f"{path}: CMUM.{sequence}.XTs frame {bad[0, 0]}, point {bad[0, 1]} is not finite: "
                         f"{points[bad[0, 0], bad[0, 1]].tolist()}.")
    return points


def _read_label_folder(folder, sequence):
    """Frames ``<sequence>1 .. <sequence>N`` of a label folder, in numeric order (other files ignored)."""
    pattern = re.compile(rf"{sequence}(\d+)")
    numbered = {}
    for file in folder.iterdir():
        match = pattern.fullmatch(file.name)
        if match:
            numbered[int(match.group(1))] = file
    if not numbered:
        raise FileNotFoundError(f"No {sequence}N label files in {folder}.")
    missing = sorted(set(range(1, max(numbered) + 1)) - set(numbered))
    if missing:
        raise ValueError(f"{folder}: frames {missing[:10]} are missing.")
    frames = [read_landmark_file(numbered[i]) for i in range(1, max(numbered) + 1)]
    if len({f.shape for f in frames}) != 1:
        raise ValueError(f"{folder}: frames have different numbers of points.")
    return np.stack(frames)
