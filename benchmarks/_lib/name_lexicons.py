"""Person-name lexicons for the citation benchmarks: the US Census 1990 name lists.

Source: the frequently occurring first and last names of the 1990 US Census (U.S. Census
Bureau, "Frequently Occurring Surnames from the 1990 Census"; public domain, a work of the US
government), as shipped in the PyPI package ``names`` (Trey Hunner, MIT licence):
``dist.male.first`` (1,219 names), ``dist.female.first`` (4,275) and ``dist.all.last`` (88,799),
one name a line, most frequent first. The lists are read from the installed package and never
copied into this repository; install them with ``pip install names`` (the ``bench`` extra).
"""

from pathlib import Path

FILES = {"first": ("dist.male.first", "dist.female.first"), "last": ("dist.all.last",)}


def _package_dir():
    try:
        import names
    except ImportError as exc:
        raise ImportError("the name lexicons need the PyPI package 'names' (US Census 1990 name lists, MIT): "
                          "pip install names, or pip install 'sklearn_struct[bench]'") from exc
    return Path(names.__file__).parent


def read_ranks(lines):
    """``{name: rank}`` of a Census list: lower-cased first column, rank = 1-based line order.

    Parameters
    ----------
    lines : iterable of str
        Lines such as ``"JAMES          3.318  3.318      1"``.

    Returns
    -------
    dict of str to int
        The first (most frequent) rank of every name; blank lines are skipped.
    """
    ranks = {}
    for line in lines:
        parts = line.split()
        if parts:
            ranks.setdefault(parts[0].lower(), len(ranks) + 1)
    return ranks


def load_name_lexicons(folder=None):
    """The first-name and last-name lists of the 1990 US Census as ``{name: frequency rank}``.

    Parameters
    ----------
    folder : path-like, default=None
        Directory holding ``dist.male.first``, ``dist.female.first`` and ``dist.all.last``;
        ``None`` reads them from the installed ``names`` package.

    Returns
    -------
    dict
        ``{"first": {name: rank}, "last": {name: rank}}``, names lower-cased; a first name in
        both the male and the female list takes its better (smaller) rank.

    Raises
    ------
    ImportError
        If ``folder`` is None and the ``names`` package is not installed.
    FileNotFoundError
        If a list is missing from the folder.
    """
    folder = _package_dir() if folder is None else Path(folder)
    out = {}
    for kind, files in FILES.items():
        ranks = {}
        for name in files:
            path = folder / name
            if not path.exists():
                raise FileNotFoundError(f"name list {path} not found (expected in the 'names' package)")
            for word, rank in read_ranks(path.read_text(encoding="ascii").splitlines()).items():
                ranks[word] = min(rank, ranks.get(word, rank))
        out[kind] = ranks
    return out
