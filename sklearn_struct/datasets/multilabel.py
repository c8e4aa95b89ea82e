"""Multi-label loaders: MULAN ARFF files (dense or sparse) and LIBSVM multi-label files."""

import io
import re

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.preprocessing import MultiLabelBinarizer
from sklearn.utils import Bunch

from ..utils._files import as_file_path, named_read_errors, read_bytes, text_lines
from ._base import find_data_file
from ._fetch import fetch_file

__all__ = [
    "load_arff_multilabel",
    "load_libsvm_multilabel",
    "load_yeast",
    "load_scene",
    "fetch_yeast",
    "fetch_scene",
]

# The official MULAN repository, pinned to the commit the shared copies were taken from.
MULAN_URL = (
    "https://raw.githubusercontent.com/tsoumakas/mulan/43f6389095ad71984264db4387a8074b22bc7d4a/"
    "data/multi-label/{name}/{name}-{subset}.arff"
)
MULAN_SHA256 = {
    ("yeast", "train"): "e759dc991ff54694a4ff9c4314f3be0d6fd2b1994a4b563f57e416394c6aebbd",
    ("yeast", "test"): "4aaac102bff9669a765bf0b378602e5cc8c3b181048282e2f003117b496d552a",
    ("scene", "train"): "b53ba93bdf412de922e3960389bcee24744fa3e872ce610511fc1d750888b64d",
    ("scene", "test"): "ea38d20296b3ff7e220f477a3b802a9bcb2d768881fe6ee163efbc97ea527a42",
}
_N_LABELS = {"yeast": 14, "scene": 6}
_NUMERIC_TYPES = {"numeric", "real", "integer"}
_ATTRIBUTE = re.compile(r"""@attribute\s+('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\S+)\s+(.+)$""", re.IGNORECASE)


def load_arff_multilabel(path, n_labels):
    """Read a multi-label ARFF file (MULAN layout: the last ``n_labels`` attributes are the labels).

    Supports numeric (``numeric``, ``real``, ``integer``) and nominal (``{a,b,...}``)
    attributes, dense rows and sparse rows (``{index value, ...}``, omitted values are 0),
    and ``?`` for a missing feature value (read as NaN). Nominal values that are numbers
    are read as those numbers, other nominal values as their index in the declaration.

    Parameters
    ----------
    path : str or path-like
    n_labels : int
        Number of label attributes, at the end of the attribute list.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` float ndarray ``(n_samples, n_features)``, ``target`` int ndarray
        ``(n_samples, n_labels)`` in {0, 1}, ``feature_names``, ``target_names``,
        ``relation`` and ``filename``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        For a malformed header or row (the message gives the line number), an unsupported
        attribute type, or labels that are not 0/1.
    """
    path = as_file_path(path)
    lines = [line for _, line in text_lines(path)]
    relation, attributes, first_data = _parse_header(lines, path)
    if not (isinstance(n_labels, (int, np.integer)) and 1 <= n_labels < len(attributes)):
        raise ValueError(
            f"n_labels must be an integer in [1, {len(attributes) - 1}] for {path} "
            f"({len(attributes)} attributes), got {n_labels!r}."
        )
    rows = [(k + 1, line.strip()) for k, line in enumerate(lines[first_data:], start=first_data)]
    rows = [(n, line) for n, line in rows if line and not line.startswith("%")]
    if not rows:
        raise ValueError(f"{path} has no data rows.")
    converters = [_converter(values) for _, values in attributes]
    if any(line.startswith("{") for _, line in rows):
        values = _parse_rows_one_by_one(rows, converters, attributes, path)
    else:
        values = _parse_dense_rows(rows, converters, attributes, path)

    names = [name for name, _ in attributes]
    X, Y = values[:, :-n_labels], values[:, -n_labels:]
    bad = np.argwhere(~np.isin(Y, (0.0, 1.0)))
    if bad.size:
        i, j = bad[0]
        raise ValueError(
            f"{path}, line {rows[i][0]}: label attribute {names[len(names) - n_labels + j]!r} has value "
            f"{float(Y[i, j])!r}; labels must be 0 or 1 (is n_labels={n_labels} right?)."
        )
    return Bunch(
        data=np.ascontiguousarray(X),
        target=Y.astype(np.int64),
        feature_names=names[:-n_labels],
        target_names=names[-n_labels:],
        relation=relation,
        filename=str(path),
    )


def load_libsvm_multilabel(path, n_features=None, classes=None):
    """Read a LIBSVM / svmlight multi-label file (``l1,l2 idx:val ...``).

    Parameters
    ----------
    path : str or path-like
    n_features : int, default=None
        Number of features; inferred from the file when None (pass it to make a test file
        agree with its training file).
    classes : sequence, default=None
        The label values, in column order; inferred (sorted) from the file when None.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` CSR matrix ``(n_samples, n_features)``, ``target`` int ndarray
        ``(n_samples, n_labels)`` in {0, 1}, ``target_names`` (the label values) and
        ``filename``.
    """
    path = as_file_path(path)
    raw = read_bytes(path)
    if not raw.strip():
        raise ValueError(f"{path} holds no samples (the file is empty).")
    try:
        X, y = load_svmlight_file(io.BytesIO(raw), n_features=n_features, multilabel=True)
    except ValueError as exc:
        with named_read_errors(path):
            raise ValueError(_libsvm_bad_line(raw, path) or str(exc)) from None
    y = [tuple(int(v) if float(v).is_integer() else v for v in labels) for labels in y]
    if classes is not None:
        unknown = sorted({v for labels in y for v in labels} - set(classes), key=str)
        if unknown:
            raise ValueError(f"{path} has labels {unknown[:10]} that are not in classes.")
    binarizer = MultiLabelBinarizer(classes=classes)
    Y = binarizer.fit_transform(y).astype(np.int64)
    return Bunch(data=X, target=Y, target_names=list(binarizer.classes_), filename=str(path))


def load_yeast(subset="train", data_home=None):
    """Load the Yeast multi-label data (MULAN split): train 1,500 / test 917, 103 features, 14 labels.

    Gene functional classes from micro-array expression and phylogenetic profiles (Elisseeff &
    Weston 2001). Reads ``multilabel/yeast/yeast-{subset}.arff`` under the data home.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        The part of MULAN's split.
    data_home : str or path-like, default=None
        The data folder (see :func:`~sklearn_struct.datasets.get_data_home`).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        See :func:`load_arff_multilabel`.
    """
    return _load_mulan("yeast", subset, data_home)


def load_scene(subset="train", data_home=None):
    """Load the Scene multi-label data (MULAN split): train 1,211 / test 1,196, 294 features, 6 labels.

    Natural scenes (beach, sunset, fall foliage, field, mountain, urban) described by colour and
    texture features (Boutell et al. 2004). Reads ``multilabel/scene/scene-{subset}.arff`` under the
    data home.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
    data_home : str or path-like, default=None

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        See :func:`load_arff_multilabel`.
    """
    return _load_mulan("scene", subset, data_home)


def fetch_yeast(subset="train", data_home=None, download_if_missing=True):
    """Load Yeast, downloading it from the MULAN repository first if missing (see :func:`load_yeast`)."""
    return _fetch_mulan("yeast", subset, data_home, download_if_missing)


def fetch_scene(subset="train", data_home=None, download_if_missing=True):
    """Load Scene, downloading it from the MULAN repository first if missing (see :func:`load_scene`)."""
    return _fetch_mulan("scene", subset, data_home, download_if_missing)


def _libsvm_bad_line(raw, path):
    """The first malformed line of a LIBSVM multi-label file, as a message naming it (None if none is)."""
    for lineno, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        labels = [] if ":" in fields[0] else fields.pop(0).split(",")
        for label in labels:
            if not _is_number(label):
                return f"{path}, line {lineno}: label {label!r} of {','.join(labels)!r} is not a number."
        for pair in fields:
            index, _, value = pair.partition(":")
            if not index.isdigit() or not _is_number(value):
                return f"{path}, line {lineno}: {pair!r} is not an index:value pair."
    return None


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _mulan_file(name, subset):
    if not isinstance(subset, str) or subset not in ("train", "test"):
        raise ValueError(f"subset must be one of ['train', 'test'], got {subset!r}.")
    return f"multilabel/{name}/{name}-{subset}.arff"


def _load_mulan(name, subset, data_home):
    path = find_data_file(_mulan_file(name, subset), data_home)
    return load_arff_multilabel(path, _N_LABELS[name])


def _fetch_mulan(name, subset, data_home, download_if_missing):
    fetch_file(
        _mulan_file(name, subset),
        MULAN_URL.format(name=name, subset=subset),
        name=f"{name} {subset} (MULAN)",
        data_home=data_home,
        download_if_missing=download_if_missing,
        sha256=MULAN_SHA256[(name, subset)],
    )
    return _load_mulan(name, subset, data_home)


# --- ARFF parsing -------------------------------------------------------------------------------


def _parse_header(lines, path):
    """(relation, [(name, nominal values or None)], index of the first line after @data)."""
    relation, attributes = None, []
    for k, line in enumerate(lines):
        text = line.strip()
        low = text.lower()
        if not text or text.startswith("%"):
            continue
        if low.startswith("@relation"):
            relation = _unquote(text[len("@relation") :].strip())
        elif low.startswith("@attribute"):
            attributes.append(_parse_attribute(text, path, k + 1))
        elif low.startswith("@data"):
            if not attributes:
                raise ValueError(f"{path}, line {k + 1}: @data before any @attribute.")
            return relation, attributes, k + 1
        else:
            raise ValueError(f"{path}, line {k + 1}: unexpected header line {text[:80]!r}.")
    raise ValueError(f"{path}: no @data section; is this an ARFF file?")


def _parse_attribute(text, path, lineno):
    match = _ATTRIBUTE.match(text)
    if match is None:
        raise ValueError(f"{path}, line {lineno}: malformed @attribute line {text[:80]!r}.")
    name, kind = _unquote(match.group(1)), match.group(2).strip()
    if kind.startswith("{"):
        if not kind.endswith("}"):
            raise ValueError(f"{path}, line {lineno}: unterminated nominal values in {text[:80]!r}.")
        return name, [_unquote(v.strip()) for v in kind[1:-1].split(",")]
    if kind.lower() in _NUMERIC_TYPES:
        return name, None
    raise ValueError(
        f"{path}, line {lineno}: attribute {name!r} has type {kind!r}; only numeric and nominal "
        f"attributes are supported."
    )


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


def _unquote(text):
    """A quoted ARFF name or value without its quotes and with its backslash escapes resolved
    (``'Swainson\\'s Thrush'`` -> ``Swainson's Thrush``), as Weka writes them."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text[1:-1], flags=re.DOTALL)
    return text


def _converter(nominal_values):
    """None for a numeric attribute, else a dict nominal value -> float."""
    if nominal_values is None:
        return None
    try:
        return {v: float(v) for v in nominal_values}
    except ValueError:
        return {v: float(i) for i, v in enumerate(nominal_values)}


def _parse_dense_rows(rows, converters, attributes, path):
    """All rows dense: split once, then convert column blocks with numpy."""
    n_attributes = len(attributes)
    fields = []
    for lineno, line in rows:
        parts = line.split(",")
        if len(parts) != n_attributes:
            raise ValueError(f"{path}, line {lineno}: expected {n_attributes} values, found {len(parts)}.")
        fields.append(parts)
    table = np.char.strip(np.array(fields, dtype=str))
    values = np.empty(table.shape, dtype=np.float64)
    numeric = [j for j, conv in enumerate(converters) if conv is None]
    if numeric:
        block = table[:, numeric]
        missing = block == "?"
        try:
            values[:, numeric] = np.where(missing, "nan", block).astype(np.float64)
        except ValueError:  # find the offending cell for the message
            for i, j in np.ndindex(block.shape):
                _to_float(block[i, j], rows[i][0], attributes[numeric[j]][0], path)
    for j, conv in enumerate(converters):
        if conv is not None:
            uniques, inverse = np.unique(table[:, j], return_inverse=True)
            mapped = np.empty(len(uniques))
            for k, text in enumerate(uniques):
                first_row = rows[int(np.argmax(inverse == k))][0] if _unquote(text) not in conv else None
                mapped[k] = _nominal(conv, text, first_row, attributes[j][0], path)
            values[:, j] = mapped[inverse]
    return values


def _parse_rows_one_by_one(rows, converters, attributes, path):
    """Mixed dense and sparse rows: convert value by value."""
    n_attributes = len(converters)
    names = [name for name, _ in attributes]
    # omitted sparse values are 0: for a nominal attribute that is its first declared value
    defaults = np.array([0.0 if c is None else next(iter(c.values())) for c in converters])
    values = np.tile(defaults, (len(rows), 1))
    for i, (lineno, line) in enumerate(rows):
        if line.startswith("{"):
            if not line.endswith("}"):
                raise ValueError(f"{path}, line {lineno}: sparse row is missing its closing '}}'.")
            body = line[1:-1].strip()
            for item in body.split(",") if body else []:
                parts = item.split()
                if len(parts) != 2 or not parts[0].isdigit() or int(parts[0]) >= n_attributes:
                    raise ValueError(f"{path}, line {lineno}: malformed sparse entry {item.strip()!r}.")
                j = int(parts[0])
                values[i, j] = _convert(converters[j], _unquote(parts[1]), lineno, names[j], path)
        else:
            parts = line.split(",")
            if len(parts) != n_attributes:
                found = len(parts)
                raise ValueError(f"{path}, line {lineno}: expected {n_attributes} values, found {found}.")
            for j, text in enumerate(parts):
                values[i, j] = _convert(converters[j], _unquote(text.strip()), lineno, names[j], path)
    return values


def _convert(conv, text, lineno, name, path):
    if conv is None:
        return np.nan if text == "?" else _to_float(text, lineno, name, path)
    return _nominal(conv, text, lineno, name, path)


def _to_float(text, lineno, name, path):
    text = str(text)  # plain str, so messages show 'x' rather than np.str_('x')
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{path}, line {lineno}: {name!r} value {text!r} is not a number.") from None


def _nominal(conv, text, lineno, name, path):
    text = _unquote(str(text))
    if text == "?":
        return np.nan
    if text not in conv:
        raise ValueError(f"{path}, line {lineno}: {name!r} value {text!r} is not one of {list(conv)}.")
    return conv[text]
