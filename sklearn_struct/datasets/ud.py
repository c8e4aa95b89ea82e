"""CoNLL-U reader (Universal Dependencies treebanks) for dependency parsing."""

import numbers

import numpy as np
from sklearn.utils import Bunch

from ..utils._files import as_file_path, text_lines
from ._base import find_data_file

__all__ = ["load_conllu", "load_ud", "make_dependency_treebank"]

_FIELDS = ("form", "lemma", "upos", "xpos", "feats")
UD_TREEBANKS = {
    "english": ("UD_English-EWT", "en_ewt"),
    "dutch": ("UD_Dutch-Alpino", "nl_alpino"),
    "italian": ("UD_Italian-ISDT", "it_isdt"),
}


def load_conllu(path, encoding="utf-8"):
    """Read a CoNLL-U file (plain or gzip): words, heads and relations of every sentence.

    Ten tab-separated columns ``ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC``; ``#``
    lines are comments; a blank line ends a sentence. Multi-word token lines (ID ``3-4``) and
    empty nodes (ID ``8.1``) are not words and are skipped, so words are numbered ``1..n`` and
    ``HEAD`` 0 is the root.

    Parameters
    ----------
    path : str or path-like
    encoding : str, default="utf-8"

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        - ``sentences``: list of lists of dicts with keys ``form, lemma, upos, xpos, feats``.
        - ``heads``: list of int arrays of shape (n_words,), the head of words ``1..n``.
        - ``deprels``: list of lists of str.
        - ``sent_ids``: list of the ``# sent_id`` values (None where absent).
        - ``filename``.

    Raises
    ------
    ValueError
        If a word line does not have 10 columns, its ID is not the next word number, or its
        head is not an integer in ``0..n`` (the message names the line).
    """
    path = as_file_path(path)
    sentences, heads, deprels, sent_ids = [], [], [], []
    words, hs, rels, sent_id, start = [], [], [], None, 1

    def close(lineno):
        n = len(words)
        arr = np.array(hs, dtype=np.int64)
        if arr.size and (arr.min() < 0 or arr.max() > n):
            raise ValueError(f"{path}, sentence ending at line {lineno}: a head lies outside 0..{n}.")
        sentences.append(words)
        heads.append(arr)
        deprels.append(rels)
        sent_ids.append(sent_id)

    for lineno, line in text_lines(path, encoding):
        if not line.strip():
            if words:
                close(lineno)
            words, hs, rels, sent_id, start = [], [], [], None, lineno + 1
            continue
        if line.startswith("#"):
            if line.startswith("# sent_id"):
                sent_id = line.split("=", 1)[-1].strip()
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise ValueError(f"{path}, line {lineno}: {len(cols)} tab-separated columns, expected 10.")
        if "-" in cols[0] or "." in cols[0]:  # multi-word token or empty node
            continue
        if cols[0] != str(len(words) + 1):
            raise ValueError(f"{path}, line {lineno}: word ID {cols[0]!r}, expected {len(words) + 1}.")
        try:
            hs.append(int(cols[6]))
        except ValueError:
            raise ValueError(f"{path}, line {lineno}: HEAD {cols[6]!r} is not an integer.") from None
        words.append(dict(zip(_FIELDS, cols[1:6])))
        rels.append(cols[7])
    if words:
        close(start)
    if not sentences:
        raise ValueError(f"{path}: no sentences found.")
    return Bunch(sentences=sentences, heads=heads, deprels=deprels, sent_ids=sent_ids, filename=str(path))


def load_ud(language, subset="dev", data_home=None):
    """One of the UD treebanks shipped in the data home (``ud/``): English EWT, Dutch Alpino, Italian ISDT.

    Parameters
    ----------
    language : {"english", "dutch", "italian"}
    subset : {"dev", "test"}, default="dev"
        Only the dev and test parts are stored (train on dev, test on test).
    data_home : str or path-like, default=None

    Returns
    -------
    data : Bunch, as :func:`load_conllu`.

    Notes
    -----
    Licences: English EWT and Dutch Alpino CC BY-SA 4.0; Italian ISDT CC BY-NC-SA 3.0.
    """
    if not isinstance(language, str) or language not in UD_TREEBANKS:
        raise ValueError(f"language must be one of {sorted(UD_TREEBANKS)}, got {language!r}.")
    if not isinstance(subset, str) or subset not in ("dev", "test"):
        raise ValueError(f"subset must be 'dev' or 'test', got {subset!r}.")
    folder, prefix = UD_TREEBANKS[language]
    path = find_data_file([f"ud/{folder}/{prefix}-ud-{subset}.conllu.gz", f"ud/{folder}/{prefix}-ud-{subset}.conllu"],
                          data_home)
    return load_conllu(path)


def make_dependency_treebank(n_sentences=100, *, random_state=None):
    """Generated dependency treebank: noun phrases, a verb and prepositional phrases.

    Sentences follow ``DET ADJ* NOUN VERB [DET ADJ* NOUN] (ADP DET NOUN)*``; a prepositional
    phrase attaches to the preceding noun for "of" and to the verb for "with" / "in" / "on", so
    the right head depends on a word two positions away. Trees are projective with one root.

    Parameters
    ----------
    n_sentences : int >= 1, default=100
    random_state : int, RandomState or None, default=None

    Returns
    -------
    sentences : list of lists of dicts with ``form`` and ``upos``
    heads : list of int arrays (0 = root)

    Examples
    --------
    >>> X, y = make_dependency_treebank(2, random_state=0)
    >>> len(X), all(len(s) == len(h) for s, h in zip(X, y))
    (2, True)
    """
    from sklearn.utils import check_random_state

    if isinstance(n_sentences, bool) or not isinstance(n_sentences, numbers.Integral) or n_sentences < 1:
        raise ValueError(f"make_dependency_treebank: n_sentences must be an int >= 1, got {n_sentences!r}.")
    rng = check_random_state(random_state)
    nouns, adjs = ["dog", "cat", "park", "man", "telescope", "hill"], ["big", "old", "red"]
    sentences, heads = [], []

    def noun_phrase(tokens, hs):
        start = len(tokens)
        n_adj = rng.randint(0, 3)
        tokens += [("the", "DET")] + [(adjs[rng.randint(3)], "ADJ") for _ in range(n_adj)]
        tokens.append((nouns[rng.randint(len(nouns))], "NOUN"))
        noun = len(tokens)  # 1-based id of the noun
        hs += [noun] * (noun - start - 1) + [None]
        return noun

    for _ in range(n_sentences):
        tokens, hs = [], []
        subj = noun_phrase(tokens, hs)
        tokens.append(("saw", "VERB"))
        verb = len(tokens)
        hs[subj - 1] = verb
        hs.append(0)
        last_noun = verb
        if rng.rand() < 0.8:
            last_noun = noun_phrase(tokens, hs)
            hs[last_noun - 1] = verb
        for _ in range(rng.randint(0, 3)):
            prep = ["of", "with", "in", "on"][rng.randint(4)]
            tokens.append((prep, "ADP"))
            hs.append(None)
            p = len(tokens)
            noun = noun_phrase(tokens, hs)
            hs[p - 1] = noun
            hs[noun - 1] = last_noun if prep == "of" and last_noun != verb else verb
            last_noun = noun
        sentences.append([{"form": f, "upos": t} for f, t in tokens])
        heads.append(np.array(hs, dtype=np.int64))
    return sentences, heads
