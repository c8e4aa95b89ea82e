"""The sklearn-crfsuite tutorial's token features (CoNLL-2002 notebook), for the CoNLL-2000 peer comparisons.

``word2features`` / ``sent2features`` take tokens as dicts (``{"word": ..., "pos": ...}``);
``tutorial_sent2features`` / ``tutorial_sent2labels`` are the tutorial's own code on (word, pos, label)
tuples, kept verbatim in ``tests/test_crfsuite_tutorial.py`` (the test that runs the tutorial).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from test_crfsuite_tutorial import sent2features as tutorial_sent2features  # noqa: E402, F401
from test_crfsuite_tutorial import sent2labels as tutorial_sent2labels  # noqa: E402, F401


def word2features(sent, i):
    """The sklearn-crfsuite tutorial's token features (CoNLL-2002 notebook), on CoNLL-2000 tokens."""
    word, pos = sent[i]["word"], sent[i]["pos"]
    features = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:], "word[-2:]": word[-2:],
                "word.isupper()": word.isupper(), "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit(),
                "postag": pos, "postag[:2]": pos[:2]}
    for offset, edge in ((-1, "BOS"), (1, "EOS")):
        j = i + offset
        if 0 <= j < len(sent):
            other, other_pos = sent[j]["word"], sent[j]["pos"]
            features.update({f"{offset:+d}:word.lower()": other.lower(), f"{offset:+d}:word.istitle()": other.istitle(),
                             f"{offset:+d}:word.isupper()": other.isupper(), f"{offset:+d}:postag": other_pos,
                             f"{offset:+d}:postag[:2]": other_pos[:2]})
        else:
            features[edge] = True
    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]
