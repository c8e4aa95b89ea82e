"""Loader for the Taskar et al. OCR handwriting data (``letter.data``): words as sequences of letters."""

import hashlib
import io

import numpy as np
from sklearn.utils import Bunch

from ..utils._files import as_file_path, named_read_errors, read_bytes
from ._base import find_data_file
from ._fetch import fetch_file

__all__ = ["load_ocr_letters", "fetch_ocr_letters", "read_letter_data"]

OCR_URL = "https://ai.stanford.edu/~btaskar/ocr/letter.data.gz"
# No published digest of the original letter.data.gz is known and the shared data folder's copy was
# rebuilt (renumbered ids), so a download is pinned by a SHA-256 of its content instead (the words'
# letters, pixels and folds; independent of id numbering and line order): _check_ocr_download.
OCR_N_LETTERS, OCR_N_WORDS = 52152, 6877
OCR_CONTENT_SHA256 = "5dbd54963e460faf503aae9112f19f22856ca70b357608603df6c4d82651d61d"
_OCR_FILES = ["ocr_letters/letter.data.gz", "ocr_letters/letter.data"]
_N_PIXELS = 128  # 16 x 8 binary images, row-major
# numeric columns of a line: id, next_id, word_id, position, fold, p_0 .. p_127 (column 1 is the letter)
_NUMERIC_COLUMNS = [0] + list(range(2, 6 + _N_PIXELS))


def load_ocr_letters(data_home=None, dtype=np.float64):
    """Load the OCR letters data set as words (sequences of 16x8 letter images).

    Reads ``ocr_letters/letter.data.gz`` (or ``letter.data``) under the data home.

    Parameters
    ----------
    data_home : str or path-like, default=None
        See :func:`~sklearn_struct.datasets.get_data_home`.
    dtype : dtype, default=np.float64
        Type of the pixel arrays (``np.uint8`` saves memory; pixels are 0 or 1).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        - ``images``: list of 6,877 arrays ``(n_letters_i, 128)``, one row per letter
          (reshape a row to ``(16, 8)`` to view it).
        - ``labels``: list of 1D arrays of single-letter str, one per word.
        - ``folds``: int array ``(n_words,)``, the cross-validation fold (0-9) of each word.
        - ``words``: list of str (the words lack their first, capital letter, as in the
          original data).
        - ``word_ids``: int array ``(n_words,)``, the word ids of the file.
        - ``image_shape``: ``(16, 8)``.

    Examples
    --------
    >>> from sklearn_struct.datasets import load_ocr_letters
    >>> ocr = load_ocr_letters()  # doctest: +SKIP
    >>> len(ocr.images), sum(len(w) for w in ocr.words), ocr.images[0].shape  # doctest: +SKIP
    (6877, 52152, (8, 128))
    """
    return read_letter_data(find_data_file(_OCR_FILES, data_home), dtype=dtype)


def fetch_ocr_letters(data_home=None, download_if_missing=True, dtype=np.float64):
    """Load the OCR letters, downloading ``letter.data.gz`` from Taskar's page first if missing.

    The download is pinned by its address (HTTPS) and by a SHA-256 of its content, not of its
    bytes: no digest of the original ``letter.data.gz`` is published, and the shared data folder's
    copy was rebuilt from a public pickle (ids renumbered), so its bytes cannot give one. The
    content digest (``_ocr_content_digest``: every word's fold, letters and pixels, sorted, so
    independent of id numbering and line order) was computed from that copy. A download is kept
    only if it parses as the data set (52,152 letters in 6,877 words, every pixel 0 or 1, folds
    0 to 9) with that digest; otherwise it is deleted and an OSError says why.

    Parameters
    ----------
    data_home : str or path-like, default=None
    download_if_missing : bool, default=True
        If False, raise FileNotFoundError instead of downloading.
    dtype : dtype, default=np.float64

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        See :func:`load_ocr_letters`.
    """
    fetch_file(
        _OCR_FILES, OCR_URL, name="OCR letters", data_home=data_home, download_if_missing=download_if_missing,
        validate=_check_ocr_download,
    )
    return load_ocr_letters(data_home, dtype=dtype)


def read_letter_data(path, dtype=np.float64):
    """Parse a ``letter.data`` file (plain or gzip) into words; see :func:`load_ocr_letters`.

    Each line is ``id letter next_id word_id position fold p_0 ... p_127`` (tab separated).
    Letters are grouped into words by ``word_id`` and ordered by ``position``; the
    ``next_id`` links are checked against that order.
    """
    raw = read_bytes(path)
    path = as_file_path(path)
    # numpy parses the whole file at C speed; loadtxt errors name the offending line
    with named_read_errors(path):
        numbers = np.loadtxt(io.BytesIO(raw), delimiter="\t", usecols=_NUMERIC_COLUMNS, dtype=np.int64, ndmin=2)
        letters = np.loadtxt(io.BytesIO(raw), delimiter="\t", usecols=[1], dtype=str, encoding="ascii", ndmin=1)
    if numbers.shape[0] == 0:
        raise ValueError(f"{path} holds no letters.")
    not_single = np.flatnonzero(np.char.str_len(letters) != 1)
    if not_single.size:
        bad = int(not_single[0])
        raise ValueError(
            f"{path}, line {bad + 1}: the letter column holds {str(letters[bad])!r}, not one character."
        )
    ids, next_ids, word_ids, positions, folds = numbers[:, :5].T
    order = np.lexsort((positions, word_ids))
    starts = np.flatnonzero(np.r_[True, np.diff(word_ids[order]) != 0])
    _check_links(path, ids[order], next_ids[order], starts, folds[order])

    pixels = numbers[order, 5:].astype(dtype)
    letters = letters[order]
    bounds = np.r_[starts, len(order)]
    images = [pixels[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    labels = [letters[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    return Bunch(
        images=images,
        labels=labels,
        folds=folds[order][starts],
        words=["".join(w) for w in labels],
        word_ids=word_ids[order][starts],
        image_shape=(16, 8),
        filename=str(path),
    )


def _check_links(path, ids, next_ids, starts, folds):
    """Within each word (sorted by position) next_id must point at the next letter, -1 at the end."""
    is_last = np.zeros(len(ids), dtype=bool)
    is_last[np.r_[starts[1:], len(ids)] - 1] = True
    expected = np.where(is_last, -1, np.r_[ids[1:], -1])
    bad = np.flatnonzero(next_ids != expected)
    if bad.size:
        k = bad[0]
        raise ValueError(
            f"{path}: letter id {ids[k]} has next_id {next_ids[k]}, expected {expected[k]} from the "
            f"word_id/position columns; the file is inconsistent."
        )
    word_of = np.cumsum(np.isin(np.arange(len(ids)), starts)) - 1
    mixed = np.flatnonzero(folds != folds[starts][word_of])
    if mixed.size:
        raise ValueError(f"{path}: letter id {ids[mixed[0]]} is in another fold than the rest of its word.")


def _check_ocr_download(path):
    """ValueError unless ``path`` parses as the OCR data set: 52,152 binary 16x8 letters in 6,877 words, 10 folds."""
    data = read_letter_data(path, dtype=np.uint8)
    n_letters = sum(len(w) for w in data.labels)
    if n_letters != OCR_N_LETTERS or len(data.labels) != OCR_N_WORDS:
        raise ValueError(f"{n_letters} letters in {len(data.labels)} words, expected {OCR_N_LETTERS} in {OCR_N_WORDS}")
    if set(np.unique(data.folds).tolist()) != set(range(10)) or any(np.any(im > 1) for im in data.images):
        raise ValueError("folds are not 0..9 or pixels are not 0/1")
    digest = _ocr_content_digest(data)
    if digest != OCR_CONTENT_SHA256:
        raise ValueError(f"content SHA-256 {digest}, expected {OCR_CONTENT_SHA256} (the words' letters, pixels "
                         f"and folds differ from the data set's)")


def _ocr_content_digest(data):
    """SHA-256 of an OCR data set's content: each word's fold, letters and 0/1 pixels, sorted.

    Independent of letter and word ids and of the order of lines and words, so two files holding
    the same words in the same folds have the same digest whatever their numbering.
    """
    records = sorted(
        b"%d\t%s\t" % (int(fold), "".join(labels).encode("ascii")) + np.packbits(np.asarray(im) > 0.5).tobytes()
        for fold, labels, im in zip(data.folds, data.labels, data.images)
    )
    h = hashlib.sha256()
    for r in records:
        h.update(len(r).to_bytes(4, "little"))
        h.update(r)
    return h.hexdigest()
