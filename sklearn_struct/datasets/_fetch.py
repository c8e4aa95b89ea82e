"""Download a data file into the data home when it is missing (used by the ``fetch_*`` functions).

Nothing is downloaded when the file is already there. Downloads go to ``<name>.part`` first
and are renamed into place only once complete and verified, so an interrupted or altered
download never leaves a file that a loader would read. Every download is pinned (issue #34):
by a SHA-256 digest, by other published digests of the same file (``checksums``), or, where no
digest of the original is known, by a ``validate`` callable that checks the content; a call
with none of them is refused.
"""

import hashlib
import http.client
import os
import shutil
import urllib.error
import urllib.request

from ._base import get_data_home

__all__ = ["fetch_file"]

_TIMEOUT = 60  # seconds without data before giving up


def fetch_file(relative_paths, url, *, name, data_home=None, download_if_missing=True, sha256=None,
               checksums=None, validate=None):
    """Path of a data file under the data home, downloading it first if it is missing.

    Parameters
    ----------
    relative_paths : str or list of str
        Accepted locations of the file relative to the data home; if any exists it is
        returned as is. A download is written to the first one.
    url : str
        Public address of the file.
    name : str
        Human-readable name of the data set, used in error messages.
    data_home : str or path-like, default=None
        See :func:`~sklearn_struct.datasets.get_data_home`.
    download_if_missing : bool, default=True
        If False and the file is missing, raise FileNotFoundError instead of downloading.
    sha256 : str, default=None
        Expected SHA-256 hex digest of the download.
    checksums : dict, default=None
        Other expected digests, ``{algorithm: hex digest}`` (any :mod:`hashlib` name), all checked.
    validate : callable, default=None
        ``validate(path)`` raises ValueError if the downloaded file's content is wrong.

    Returns
    -------
    path : pathlib.Path
    """
    digests = dict(checksums or {})
    if sha256 is not None:
        digests["sha256"] = sha256
    if not digests and validate is None:
        raise ValueError(f"fetch_file: the download of {name} is not pinned: give sha256=, checksums= or validate=.")
    if isinstance(relative_paths, (str, os.PathLike)):
        relative_paths = [relative_paths]
    home = get_data_home(data_home)
    for rel in relative_paths:
        if (home / rel).exists():
            return home / rel
    target = home / relative_paths[0]
    if not download_if_missing:
        raise FileNotFoundError(
            f"{name} not found at {target} and download_if_missing=False; "
            f"download it from {url} and place it there."
        )
    _download(url, target, name=name, digests=digests, validate=validate)
    return target


def _download(url, target, *, name, digests, validate=None):
    """Stream ``url`` to ``target`` atomically; any failure becomes an OSError naming both."""
    partial = target.with_name(target.name + ".part")

    def fail(reason, cause=None):
        partial.unlink(missing_ok=True)
        message = f"could not download {name} from {url}: {reason}; place the file at {target}"
        raise OSError(message) from cause

    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT) as response:
            target.parent.mkdir(parents=True, exist_ok=True)  # only once the server answered
            with open(partial, "wb") as out:
                shutil.copyfileobj(response, out)
    except (OSError, http.client.HTTPException) as exc:  # URLError, HTTPError, timeouts are OSErrors
        fail(exc, exc)
    for algorithm, expected in digests.items():
        digest = _digest(partial, algorithm)
        if digest != expected.lower():
            fail(f"checksum mismatch (expected {algorithm} {expected}, got {digest}); the file was deleted")
    if validate is not None:
        try:
            validate(partial)
        except ValueError as exc:
            fail(f"the content is not the expected data set ({exc}); the file was deleted", exc)
    os.replace(partial, target)


def _digest(path, algorithm="sha256"):
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
