"""Token features for the citation benchmark (shared by our CRF and sklearn-crfsuite)."""

import re

_YEAR = re.compile(r"^\(?(1[5-9]\d\d|20\d\d)[a-z]?\)?[.,;:]?$")
_INITIAL = re.compile(r"^[A-Z][a-z]?\.[,;]?$|^[A-Z]\.-?[A-Z]\.[,;]?$")
_PAGES = re.compile(r"^\d+[-\u2013]+\d+[.,;]?$")
_PUNCT_END = re.compile(r"[.,;:)\]\"'`]+$")


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


def citation_features(words):
    """CRFsuite-style feature dicts for one reference: the token, its neighbours +-2, position."""
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
    return out
