"""Loader for the GROBID citation field-extraction set (Cora-style labels)."""

import numpy as np
from sklearn.utils import Bunch

from ._base import find_data_file
from .conll import load_conll

__all__ = ["load_grobid_citations"]

CITATION_FIELDS = ("author", "booktitle", "date", "editor", "institution", "journal", "location", "note",
                   "pages", "publisher", "tech", "title", "volume")


def load_grobid_citations(fieldsplit=False, data_home=None):
    """Load the GROBID citation corpus converted to Cora's 13 field labels.

    5,084 reference strings (88,796 whitespace tokens), each token labelled with one of 13
    fields (author, title, booktitle, journal, date, volume, pages, publisher, location,
    institution, editor, tech, note); there is no "O" label and no official split. Reads
    ``citations/grobid_citations{,.fieldsplit}.conll.gz`` under the data home; see its
    ``PROVENANCE.txt`` for the conversion rules.

    Licence: the annotations are GROBID's (Patrice Lopez and contributors,
    https://github.com/kermitt2/grobid), distributed under CC-BY 4.0
    (https://creativecommons.org/licenses/by/4.0/); this version was changed (converted to
    Cora labels, re-tokenised, de-duplicated, Cora references removed).

    Parameters
    ----------
    fieldsplit : bool, default=False
        Read the variant in which a whitespace token is also split where two different
        fields touch without a space (``"21,731"`` -> volume ``"21,"`` + pages ``"731"``).
    data_home : str or path-like, default=None
        See :func:`~sklearn_struct.datasets.get_data_home`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``words`` (list of lists of str, one list per reference), ``labels`` (list of lists
        of str), ``fields`` (the 13 labels, sorted) and ``filename``.
    """
    if not isinstance(fieldsplit, (bool, np.bool_)):
        raise ValueError(f"load_grobid_citations: fieldsplit must be True or False, got {fieldsplit!r}.")
    name = "grobid_citations.fieldsplit.conll.gz" if fieldsplit else "grobid_citations.conll.gz"
    path = find_data_file([f"citations/{name}"], data_home=data_home)
    raw = load_conll(path)
    words = [[tok[0] for tok in seq] for seq in raw.sequences]
    return Bunch(words=words, labels=raw.labels, fields=list(CITATION_FIELDS), filename=raw.filename)
