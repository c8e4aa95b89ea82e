"""Loaders for CoNLL / CRF++ column files: one token per line, blank line between sequences."""

import gzip
import hashlib
import numbers
import operator
import re
import zlib

from sklearn.utils import Bunch

from ..utils._files import as_file_path, text_lines
from ._base import find_data_file
from ._fetch import fetch_file

__all__ = ["load_conll", "load_conll2000", "fetch_conll2000", "load_crfpp", "fetch_crfpp"]

CONLL2000_URL = "https://www.clips.uantwerpen.be/conll2000/chunking/{subset}.txt.gz"
# What pins a CoNLL-2000 download (issue #34): the digests torchtext publishes for the official files
# (datasets/conll2000chunking.py), the MD5 of each .gz (CONLL2000_CHECKSUMS) and the MD5 of its
# decompressed text (CONLL2000_TEXT_MD5, checked by _conll2000_text_check), both required. No SHA-256:
# none is published, and the copies in the project's shared data folder cannot stand in for the
# originals to compute one -- neither their .gz MD5s (train 9387bc1b..., test da4f5281...) nor the
# MD5s of their decompressed text (train d79fd028..., test 01a63b4f...) are the published ones, so
# their bytes differ from the published bytes (not only their compression), and a SHA-256 taken from
# them would refuse the real download. Forging a file would take an MD5 collision on the .gz that
# also decompresses to a text with the published MD5.
CONLL2000_CHECKSUMS = {
    "train": {"md5": "6969c2903a1f19a83569db643e43dcc8"},
    "test": {"md5": "a916e1c2d83eb3004b38fc6fcd628939"},
}
CONLL2000_TEXT_MD5 = {"train": "2e2f24e90e20fcb910ab2251b5ed8cd0", "test": "56944df34be553b72a2a634e539a0951"}
_CONLL2000_MAX_TEXT = 16 << 20  # the texts hold 2.8 MB and 0.6 MB: a download inflating beyond is refused
# CRF++'s examples at a fixed commit (master in February 2025), each file pinned by SHA-256 (checked byte
# for byte against that commit and against the shared data folder's copies).
CRFPP_COMMIT = "c603ea6fc2cc8e5317d2754971bc787da383f7e5"
CRFPP_URL = f"https://raw.githubusercontent.com/taku910/crfpp/{CRFPP_COMMIT}/example/{{task}}/{{file}}"
CRFPP_SHA256 = {
    ("basenp", "train.data"): "eff25bc47150895e6234d439652efa8ebd598f69da28289d9f448468a2a0cba7",
    ("basenp", "test.data"): "b85caf6b655c5600fa638754880bb524f7c0f0c3fdfd186f9dbd7f5839231885",
    ("basenp", "template"): "ddbd16fe5459c5d5baf10932f7d938dc5e91a52558b1bac60ecfb43f702e5d7e",
    ("chunking", "train.data"): "ff9a48ed819c8c235e5f6172b1bfb39b3d65f1fab578ae80fd5396f19597a3b7",
    ("chunking", "test.data"): "066c6c2ec7d276b008928401b1bd17b28c0f97cd41404f629784b3c7743b778d",
    ("chunking", "template"): "7529f65974655f60293637cb4aae34a3fa486de25c567d0949bec15e5d96a76b",
    ("JapaneseNE", "train.data"): "de24257c3c1429b6c0be60728d6b225ccc0c2274d8b76e83977549495b9c8f27",
    ("JapaneseNE", "test.data"): "f8e5f52d5cb23f6744e13de9f6a9a869a47cb0687a11b90e8978b85dcba691fe",
    ("JapaneseNE", "template"): "5c2735c3a4287056bbc67223443c75e926201fc1295f3be787391922933ef2bd",
    ("seg", "train.data"): "f3d00c3bb22417c3df17cbbfa1b73485789987742b2899c643b78480d580d73d",
    ("seg", "test.data"): "c6d930fbf2b6f293e8b4524286e44e997188ef667d30df9318ed49b7022a34c9",
    ("seg", "template"): "0e1d4090dff7a36e0aba7438f8cbf3fd981b6c72fb9ac210efaa587fc699ddc8",
}

# Encodings of the CRF++ example tasks (JapaneseNE is EUC-JP, seg is UTF-8, the rest ASCII).
CRFPP_ENCODINGS = {"basenp": "ascii", "chunking": "ascii", "JapaneseNE": "euc_jp", "seg": "utf-8"}
_SUBSETS = ("train", "test")
_ASCII_SPACE_CHARS = " \t\n\r\x0b\x0c"  # what bytes.split() splits on; str.split() would also split on
_ASCII_SPACE = re.compile(f"[{_ASCII_SPACE_CHARS}]+")  # U+3000 and other Unicode spaces inside tokens


def load_conll(path, columns=None, encoding="utf-8", label_column=-1):
    """Read a CoNLL / CRF++ column file.

    One token per line with whitespace-separated columns (spaces or tabs), sequences
    separated by blank lines. Gzip-compressed files are recognised by their content.

    Parameters
    ----------
    path : str or path-like
        The file (plain text or gzip).
    columns : sequence of str, default=None
        Names of all columns, in file order. When given, tokens are returned as dicts
        keyed by these names; otherwise as tuples.
    encoding : str, default="utf-8"
        Text encoding of the file. It must be ASCII-compatible (UTF-8, EUC-JP,
        Shift-JIS, Latin-1, ...), because lines and columns are split on ASCII bytes.
    label_column : int, str or None, default=-1
        Index (or name, if ``columns`` is given) of the label column, which is left out of
        the tokens and returned in ``labels``. None means the file has no label column.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        - ``sequences``: list of lists of tokens, one tuple (or dict) of the non-label
          column values per token.
        - ``labels``: list of lists of str (the label column), or None.
        - ``columns``: names of all columns in file order (by default the token fields are
          ``x0, x1, ...`` in token order and the label column is ``label``).
        - ``feature_names``: names of the token fields, in token-tuple order.
        - ``label_name``: name of the label column, or None.
        - ``filename``: the path read.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If a line has a different number of columns than the first token line (the
        message gives the line number), a line cannot be decoded with ``encoding``, or
        the file holds no tokens.
    """
    n_columns = None if columns is None else len(columns)
    state = None  # (n_columns, label index, token getter), fixed by the first token line
    sequences, labels = [], []
    tokens, tags = [], []
    path = as_file_path(path)
    for lineno, line in text_lines(path, encoding):
        fields = line.split() if line.isascii() else _ASCII_SPACE.split(line.strip(_ASCII_SPACE_CHARS))
        if not fields or fields == [""]:
            if tokens:
                sequences.append(tokens)
                labels.append(tags)
                tokens, tags = [], []
            continue
        if state is None:
            n_columns = _check_first_line(fields, n_columns, path, lineno)
            state = _column_plan(n_columns, label_column, columns)
        elif len(fields) != state[0]:
            raise ValueError(
                f"{path}, line {lineno}: expected {state[0]} columns (as on the first token "
                f"line), found {len(fields)}: {line.strip()[:80]!r}"
            )
        _, label_idx, get_token = state
        tokens.append(get_token(fields))
        if label_idx is not None:
            tags.append(fields[label_idx])
    if tokens:
        sequences.append(tokens)
        labels.append(tags)
    if not sequences:
        raise ValueError(f"{path} holds no tokens (empty or only blank lines).")

    n_columns, label_idx, _ = state
    names = _column_names(n_columns, label_idx, columns)
    feature_names = [n for j, n in enumerate(names) if j != label_idx]
    if columns is not None:
        sequences = [[dict(zip(feature_names, tok)) for tok in seq] for seq in sequences]
    return Bunch(
        sequences=sequences,
        labels=labels if label_idx is not None else None,
        columns=names,
        feature_names=feature_names,
        label_name=None if label_idx is None else names[label_idx],
        filename=str(path),
    )


def load_conll2000(subset="train", data_home=None):
    """Load the CoNLL-2000 chunking data (official split) from the data home.

    Reads ``conll2000/{subset}.txt.gz`` (or an uncompressed ``{subset}.txt``).
    Tokens are dicts ``{"word": ..., "pos": ...}``; labels are the IOB chunk tags.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
    data_home : str or path-like, default=None
        See :func:`~sklearn_struct.datasets.get_data_home`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        As :func:`load_conll`: train has 8,936 sentences (211,727 tokens), test 2,012
        (47,377).

    Examples
    --------
    >>> from sklearn_struct.datasets import load_conll2000
    >>> data = load_conll2000("test")  # doctest: +SKIP
    >>> data.sequences[0][0], data.labels[0][0]  # doctest: +SKIP
    ({'word': 'Rockwell', 'pos': 'NNP'}, 'B-NP')
    """
    _check_option("subset", subset, _SUBSETS)
    path = find_data_file([f"conll2000/{subset}.txt.gz", f"conll2000/{subset}.txt"], data_home)
    return load_conll(path, columns=("word", "pos", "chunk"), encoding="ascii")


def fetch_conll2000(subset="train", data_home=None, download_if_missing=True):
    """Load CoNLL-2000, downloading it from the CoNLL-2000 site first if it is missing.

    A download is kept only if the ``.gz`` has the MD5 torchtext publishes for the official file
    and its decompressed text the MD5 torchtext publishes for that (no SHA-256 of the originals is
    published, and the shared data folder's copies are not byte-identical to them, so none could
    be taken offline); otherwise it is deleted and an OSError says why.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        The training file (8,936 sentences) or the test file (2,012).
    data_home : str or path-like, default=None
        Folder of the data sets; the file goes to its ``conll2000/`` subfolder.
    download_if_missing : bool, default=True
        If False, raise FileNotFoundError instead of downloading.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        See :func:`load_conll2000`.
    """
    _check_option("subset", subset, _SUBSETS)
    fetch_file(
        [f"conll2000/{subset}.txt.gz", f"conll2000/{subset}.txt"],
        CONLL2000_URL.format(subset=subset),
        name=f"CoNLL-2000 {subset}",
        data_home=data_home,
        download_if_missing=download_if_missing,
        checksums=CONLL2000_CHECKSUMS[subset],
        validate=lambda path: _conll2000_text_check(path, subset),
    )
    return load_conll2000(subset, data_home=data_home)


def _conll2000_text_check(path, subset):
    """The decompressed text of a downloaded CoNLL-2000 file has the published MD5 (ValueError if not)."""
    digest, size = hashlib.md5(), 0
    try:
        with gzip.open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                size += len(block)
                if size > _CONLL2000_MAX_TEXT:
                    raise ValueError(f"it decompresses to more than {_CONLL2000_MAX_TEXT >> 20} MB")
                digest.update(block)
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"not a gzip file ({exc})") from None
    if digest.hexdigest() != CONLL2000_TEXT_MD5[subset]:
        raise ValueError(f"its decompressed text has md5 {digest.hexdigest()}, not the published "
                         f"{CONLL2000_TEXT_MD5[subset]}")


def load_crfpp(task, subset="train", data_home=None):
    """Load one of the four CRF++ example tasks from ``crfpp/{task}/{subset}.data``.

    Tokens are tuples of the non-label columns, so ``token[c]`` is what CRF++'s
    template macro ``%x[row,c]`` refers to. The last column is the label.

    Parameters
    ----------
    task : {"basenp", "chunking", "JapaneseNE", "seg"}
        Base-NP chunking, chunking, Japanese named entities (EUC-JP encoded) or
        character-level word segmentation (UTF-8).
    subset : {"train", "test"}, default="train"
    data_home : str or path-like, default=None

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        As :func:`load_conll`, plus ``template``: the path of the task's CRF++
        feature-template file (None if it is absent) and ``encoding``.
    """
    _check_option("task", task, tuple(CRFPP_ENCODINGS))
    _check_option("subset", subset, _SUBSETS)
    path = find_data_file(f"crfpp/{task}/{subset}.data", data_home)
    data = load_conll(path, encoding=CRFPP_ENCODINGS[task])
    template = path.parent / "template"
    data.template = str(template) if template.is_file() else None
    data.encoding = CRFPP_ENCODINGS[task]
    return data


def fetch_crfpp(task, subset="train", data_home=None, download_if_missing=True):
    """Load a CRF++ example task, downloading its data and template from CRF++'s repository if missing.

    Parameters
    ----------
    task : {"basenp", "chunking", "JapaneseNE", "seg"}
    subset : {"train", "test"}, default="train"
    data_home : str or path-like, default=None
    download_if_missing : bool, default=True

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        See :func:`load_crfpp`.
    """
    _check_option("task", task, tuple(CRFPP_ENCODINGS))
    _check_option("subset", subset, _SUBSETS)
    for file in (f"{subset}.data", "template"):
        fetch_file(
            f"crfpp/{task}/{file}",
            CRFPP_URL.format(task=task, file=file),
            name=f"CRF++ {task} {file}",
            data_home=data_home,
            download_if_missing=download_if_missing,
            sha256=CRFPP_SHA256[(task, file)],
        )
    return load_crfpp(task, subset, data_home=data_home)


def _check_first_line(fields, n_columns, path, lineno):
    if n_columns is not None and len(fields) != n_columns:
        raise ValueError(
            f"{path}, line {lineno}: {len(fields)} columns found but {n_columns} names were "
            f"given in columns="
        )
    return len(fields)


def _column_plan(n_columns, label_column, columns):
    """(n_columns, label index or None, function values -> token tuple)."""
    if label_column is None:
        return n_columns, None, tuple
    if isinstance(label_column, str):
        if columns is None or label_column not in columns:
            raise ValueError(f"label_column={label_column!r} is not one of columns={columns!r}.")
        label_idx = list(columns).index(label_column)
    elif isinstance(label_column, numbers.Integral) and -n_columns <= label_column < n_columns:
        label_idx = int(label_column) % n_columns
    else:
        raise ValueError(
            f"label_column={label_column!r} is out of range for a file with {n_columns} columns."
        )
    if n_columns == 1:
        return n_columns, label_idx, lambda values: ()
    if label_idx == n_columns - 1:
        return n_columns, label_idx, lambda values: tuple(values[:-1])
    keep = [j for j in range(n_columns) if j != label_idx]
    getter = operator.itemgetter(*keep)
    if len(keep) == 1:
        return n_columns, label_idx, lambda values: (getter(values),)
    return n_columns, label_idx, getter


def _column_names(n_columns, label_idx, columns):
    if columns is not None:
        return [str(c) for c in columns]
    # token fields are numbered in token order, so names match CRF++'s %x[row,col] columns
    features = iter(f"x{k}" for k in range(n_columns))
    return ["label" if j == label_idx else next(features) for j in range(n_columns)]


def _check_option(name, value, options):
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}.")
