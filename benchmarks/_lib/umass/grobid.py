"""The held-back GROBID folds as the UMass studies use them: ``papers/bench_citations.py``'s 5-fold split and
features, each fold's c2 from its capped run (``protocol.GROBID_C2``), IO segment F1."""
import json

from sklearn.model_selection import KFold

from . import protocol as bt
from .. import citations as bc

SCHEME = "IO"


def fold_data(k):
    """Fold ``k`` of ``bench_citations``' split: (Xtr, ytr, Xte, yte, c2), c2 from ``bt.GROBID_C2``."""
    saved = {f["fold"]: f for f in json.loads(bt.GROBID_C2.read_text())["folds"]}
    feats, y = bc.load()
    train, test = list(KFold(5, shuffle=True, random_state=0).split(feats))[k]
    Xtr, Xte = bc.vectorize(feats, train, test)
    return Xtr, [y[i] for i in train], Xte, [y[i] for i in test], saved[k]["c2_ours"]
