"""Loader for the UMass citation field-extraction set (Anzaroot & McCallum 2013), hierarchical labels."""

import numbers
import re

from sklearn.utils import Bunch

from ..utils._files import text_lines
from ._base import find_data_file

__all__ = ["load_umass_citations", "parse_umass_line"]

_SUBSETS = {"train": "training", "dev": "dev", "test": "testing"}
# an opening or closing tag; "</<name>" (a typo on two lines of the distributed files) closes ``name``
_TAG = re.compile(r"(<(?:/<?)?[A-Za-z][\w.-]*>)")


def load_umass_citations(subset="train", depth=None, scheme="BIO", errors="repair", data_home=None):
    """Load one split of the UMass citation field-extraction set, labels cut at a chosen depth.

    The data of Table 1 of Vilnis et al. (2015) and of Anzaroot et al. (2014): reference
    strings with nested field tags (``authors > person > person-first / person-middle /
    person-last``, ``venue > journal / volume / pages / date > year``, ``title``,
    ``ref-marker``, ...). 1,457 / 660 / 367 references in ``training`` / ``dev`` /
    ``testing``, read from ``citations/umass/{training,dev,testing}.docs.gz`` under the data
    home (see its ``PROVENANCE.txt``; research use, cite Anzaroot & McCallum 2013).

    Each token's *path* is the tuple of tags that enclose it, outermost first (tokens outside
    every tag have the empty path and the label ``"O"``). Its label is the innermost tag of the
    path cut at ``depth`` levels (``depth=None``: the innermost tag, the "leaf" label).

    Parameters
    ----------
    subset : {"train", "dev", "test"}, default="train"
    depth : int >= 1 or None, default=None
        Cut every path at this many levels before taking its innermost tag, e.g. 1 gives
        ``authors / title / venue / ref-marker / ...``, 2 gives ``person / journal / date / ...``.
    scheme : {"BIO", "IO"}, default="BIO"
        ``"BIO"``: ``B-`` on the first token of every tag element at the chosen depth and
        ``I-`` on the others, so two adjacent elements with the same tag stay two segments
        (score with ``chunk_precision_recall_f1(scheme="IOB2")``). ``"IO"``: the plain tag
        (adjacent elements with one tag merge; score with ``scheme="IO"``).
    errors : {"repair", "raise"}, default="repair"
        What to do with a line whose tags do not nest. The distributed files have 8 such
        lines in ``training`` (4 in ``dev``, 5 in ``testing``), e.g. ``<year> (1996) </venue> . </year>`` or
        ``</<person-first>``. ``"repair"``: a closing tag closes the innermost open element
        of its name (crossing tags), a closing tag without one is dropped, elements still
        open at the end of the line close there; the line numbers are in
        ``repaired_lines``. ``"raise"``: ValueError naming the file and the line.
    data_home : str or path-like, default=None
        See :func:`~sklearn_struct.datasets.get_data_home`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``words`` (list of lists of str, one per reference, the tokens' text), ``labels``
        (list of lists of str), ``paths`` (list of lists of tuples of str), ``fields``
        (sorted labels without scheme prefix, ``"O"`` excluded), ``repaired_lines`` (1-based
        line numbers read with ``errors="repair"``'s rules) and ``filename``.

    Raises
    ------
    ValueError
        A line without tokens, or (``errors="raise"``) whose tags do not nest, naming the file
        and the line.

    Examples
    --------
    >>> from sklearn_struct.datasets import parse_umass_line
    >>> words, paths = parse_umass_line("<authors> <person> <person-first> A. </person-first> "
    ...                                 "<person-last> Gnedin , </person-last> </person> </authors>")
    >>> words, paths[1]
    (['A.', 'Gnedin', ','], ('authors', 'person', 'person-last'))
    """
    if not isinstance(subset, str) or subset not in _SUBSETS:
        raise ValueError(f"subset must be one of {sorted(_SUBSETS)}, got {subset!r}.")
    if depth is not None and (not isinstance(depth, numbers.Integral) or isinstance(depth, bool) or depth < 1):
        raise ValueError(f"depth must be None or an integer >= 1, got {depth!r}.")
    if scheme not in ("BIO", "IO"):
        raise ValueError(f"scheme must be 'BIO' or 'IO', got {scheme!r}.")
    if errors not in ("repair", "raise"):
        raise ValueError(f"errors must be 'repair' or 'raise', got {errors!r}.")
    path = find_data_file([f"citations/umass/{_SUBSETS[subset]}.docs.gz", f"citations/umass/{_SUBSETS[subset]}.docs"],
                          data_home=data_home)
    words, labels, paths, repaired = [], [], [], []
    for lineno, line in text_lines(path):
        if not line.strip():
            continue
        try:
            w, p, ids, fixed = _parse(line, repair=errors == "repair")
        except ValueError as exc:
            raise ValueError(f"{path}, line {lineno}: {exc}") from None
        if fixed:
            repaired.append(lineno)
        words.append(w)
        paths.append(p)
        labels.append(_labels(p, ids, depth, scheme))
    if not words:
        raise ValueError(f"{path} holds no references (empty or only blank lines).")
    fields = sorted({lab.split("-", 1)[1] if scheme == "BIO" and lab != "O" else lab
                     for seq in labels for lab in seq} - {"O"})
    return Bunch(words=words, labels=labels, paths=paths, fields=fields, repaired_lines=repaired,
                 filename=str(path))


def parse_umass_line(line, errors="raise"):
    """Tokens of one tagged reference line and each token's path of enclosing tags.

    Returns ``(words, paths)``; with ``errors="raise"`` a ValueError if the tags do not nest
    (see :func:`load_umass_citations` for ``errors="repair"``).
    """
    if errors not in ("repair", "raise"):
        raise ValueError(f"errors must be 'repair' or 'raise', got {errors!r}.")
    if not isinstance(line, str):
        raise ValueError(f"line must be a str, got {type(line).__name__}.")
    words, paths, _, _ = _parse(line, repair=errors == "repair")
    return words, paths


def _parse(line, repair=False):
    """(words, paths, element ids, repaired): the ids number every tag element of the line, per token.

    With ``repair``, a closing tag closes the innermost open element of its name even when
    others were opened after it (crossing tags), a closing tag with no open element of its
    name is dropped, and elements still open at the end of the line are closed there.
    """
    words, paths, ids = [], [], []
    stack, stack_ids, n_elements, repaired = [], [], 0, False
    for chunk in line.split():
        for part in _TAG.split(chunk):
            if not part:
                continue
            if not _TAG.fullmatch(part):
                words.append(part)
                paths.append(tuple(stack))
                ids.append(tuple(stack_ids))
            elif not part.startswith("</"):
                stack.append(part.strip("<>"))
                stack_ids.append(n_elements)
                n_elements += 1
            else:
                name = part.strip("</>")
                if stack and stack[-1] == name:
                    k = len(stack) - 1
                elif repair:
                    repaired = True
                    k = max((i for i, s in enumerate(stack) if s == name), default=None)
                    if k is None:
                        continue
                else:
                    open_tag = f"<{stack[-1]}>" if stack else "no open tag"
                    raise ValueError(f"closing tag {part} does not match {open_tag} (after token {len(words)}); "
                                     "pass errors='repair' to read such lines leniently.")
                del stack[k], stack_ids[k]
    if stack and not repair:
        raise ValueError(f"tag <{stack[-1]}> is not closed by the end of the line; "
                         "pass errors='repair' to close it there.")
    if not words:
        raise ValueError("the line holds no tokens.")
    return words, paths, ids, repaired or bool(stack)


def _labels(paths, ids, depth, scheme):
    out, previous = [], None
    for path, elements in zip(paths, ids):
        cut = path if depth is None else path[:depth]
        if not cut:
            out.append("O")
            previous = None
            continue
        element = (elements if depth is None else elements[:depth])[-1]
        if scheme == "IO":
            out.append(cut[-1])
        else:
            out.append(("I-" if element == previous else "B-") + cut[-1])
        previous = element
    return out
