"""Token features for the citation benchmark (shared by our CRF and sklearn-crfsuite)."""

import re

_YEAR = re.compile(r"^\(?(1[5-9]\d\d|20\d\d)[a-z]?\)?[.,;:]?$")
_INITIAL = re.compile(r"^[A-Z][a-z]?\.[,;]?$|^[A-Z]\.-?[A-Z]\.[,;]?$")
_PAGES = re.compile(r"^\d+[-\u2013]+\d+[.,;]?$")
_PUNCT_END = re.compile(r"[.,;:)\]\"'`]+$")
_NOT_LETTER = re.compile(r"[^a-z]")
FIRST_BINS = ((100, "100"), (1000, "1k"))  # frequency-rank bins of the first-name list (5k names)
LAST_BINS = ((1000, "1k"), (10000, "10k"))  # and of the last-name list (89k names)


def _shape(word):
    s = re.sub(r"[A-Z]", "X", word)
    s = re.sub(r"[a-z]", "x", s)
    s = re.sub(r"[0-9]", "9", s)
    return re.sub(r"(.)\1+", r"\1\1", s)[:8]


def _token(word):
    core = _PUNCT_END.sub("", word)
    low = core.lower()
    return {
        "w": low,
        "raw": word.lower(),
        "chars": "".join(sorted({c for c in word if c in "()[]-/:;,.&\"'"})) or "-",
        "shape": _shape(word),
        "p2": low[:2],
        "p3": low[:3],
        "s2": low[-2:],
        "s3": low[-3:],
        "end": word[-1] if word[-1] in ".,;:)]\"'" else "-",
        "start": word[0] if word[0] in "([\"'" else "-",
        "year": bool(_YEAR.match(word)),
        "initial": bool(_INITIAL.match(word)),
        "pagerange": bool(_PAGES.match(word)),
        "digits": min(sum(c.isdigit() for c in word), 5),
        "upper": word.isupper(),
        "title": word[:1].isupper(),
        "len": min(len(core), 10),
        "url": "http" in low or "www" in low or "doi" in low or "arxiv" in low,
    }


def _rank_bin(rank, bins):
    if rank is None:
        return "-"
    return next((name for top, name in bins if rank <= top), "all")


def lexicon_token(word, lexicons):
    """Name-lexicon features of one token.

    Parameters
    ----------
    word : str
        The token as written (``"Norman,"``).
    lexicons : dict
        ``{"first": {name: rank}, "last": {name: rank}}`` with lower-cased names, as
        ``_name_lexicons.load_name_lexicons`` returns.

    Returns
    -------
    dict
        ``fn`` / ``ln``: the lower-cased token without its non-letters (at least 2 letters) is in
        the first / last-name list; ``lex``: ``"F"``, ``"L"``, ``"FL"`` (both) or ``"-"``;
        ``lexcap``: ``lex`` with the token's case (``"F|X"``: capitalised first name), ``"-"`` if no
        list holds it; ``fnr`` / ``lnr``: frequency-rank bin (``FIRST_BINS`` / ``LAST_BINS``,
        ``"all"`` beyond them, ``"-"`` absent).
    """
    key = _NOT_LETTER.sub("", word.lower())
    rf = lexicons["first"].get(key) if len(key) > 1 else None
    rl = lexicons["last"].get(key) if len(key) > 1 else None
    lex = ("F" if rf else "") + ("L" if rl else "") or "-"
    return {"fn": rf is not None, "ln": rl is not None, "lex": lex,
            "lexcap": "-" if lex == "-" else lex + ("|X" if word[:1].isupper() else "|x"),
            "fnr": _rank_bin(rf, FIRST_BINS), "lnr": _rank_bin(rl, LAST_BINS)}


def _add_lexicon(out, words, lexicons):
    """Each token's lexicon features, its neighbours' (+-2) ``lex`` / ``lexcap``, and the next token's ``lex`` pair."""
    lex = [lexicon_token(w, lexicons) for w in words]
    n = len(words)
    for t, f in enumerate(out):
        f.update(lex[t])
        for d in (-2, -1, 1, 2):
            k = t + d
            if 0 <= k < n:
                f[f"{d}:lex"] = lex[k]["lex"]
                f[f"{d}:lexcap"] = lex[k]["lexcap"]
        if t + 1 < n:
            f["lex|+1:lex"] = lex[t]["lexcap"] + "|" + lex[t + 1]["lexcap"]
    return out


def citation_features(words, lexicons=None):
    """CRFsuite-style feature dicts for one reference: the token, its neighbours +-3, position.

    Parameters
    ----------
    words : list of str
        The reference's tokens.
    lexicons : dict, default=None
        Name lexicons (``{"first": {name: rank}, "last": {name: rank}}``); when given, every
        token also gets :func:`lexicon_token`'s features and its neighbours'. ``None`` (the
        default) gives exactly the features of the runs without lexicons.

    Returns
    -------
    list of dict
        One feature dict per token.
    """
    toks = [_token(w) for w in words]
    n = len(words)
    out = []
    for t in range(n):
        f = {"bias": 1.0, "pos": str(min(10 * t // max(n, 1), 9)), "abs": str(min(t, 12)),
             "rev": str(min(n - 1 - t, 12))}
        f.update(toks[t])
        for d in (-3, -2, -1, 1, 2, 3):
            k = t + d
            if 0 <= k < n:
                f[f"{d}:w"] = toks[k]["w"]
                f[f"{d}:shape"] = toks[k]["shape"]
                f[f"{d}:end"] = toks[k]["end"]
                f[f"{d}:year"] = toks[k]["year"]
                f[f"{d}:initial"] = toks[k]["initial"]
                f[f"{d}:chars"] = toks[k]["chars"]
            else:
                f[f"{d}:w"] = "<pad>"
        if t > 0:
            f["-1:w|w"] = toks[t - 1]["w"] + "|" + toks[t]["w"]
        if t == 0:
            f["BOS"] = True
        if t == n - 1:
            f["EOS"] = True
        out.append(f)
    return _add_lexicon(out, words, lexicons) if lexicons is not None else out
