"""The GROBID citations protocol of ``papers/bench_citations.py`` (features, constraint templates, the
vectorizer, the Algorithm 3 settings), also used by the UMass studies on GROBID folds."""
import numpy as np

from sklearn_struct.constraints import AtLeastSegments, AtMostSegments, FirstLabel, MutuallyExclusive
from sklearn_struct.datasets import load_grobid_citations
from sklearn_struct.preprocessing import SequenceVectorizer

from .citation_features import citation_features


FIELDS = ("author", "booktitle", "date", "editor", "institution", "journal", "location", "note", "pages",
          "publisher", "tech", "title", "volume")


TEMPLATES = ([AtMostSegments(f, 1) for f in FIELDS]
             + [AtLeastSegments(f, 1) for f in ("author", "title", "date")]
             + [MutuallyExclusive("journal", "booktitle"), FirstLabel("author")])


MAX_ITER = None  # L-BFGS to its own (CRFsuite's) stopping rule, for both CRFs


CAPPED_MAX_ITER = 100  # the previous run's cap (bench_umass_table1.py --grobid without --to-convergence)


PSI_SETTINGS = dict(psi_init=1.0, learning_rate=3.0, n_epochs=3, batch_size=16)


MIN_FREQ = 2


def load():
    data = load_grobid_citations()
    feats = [citation_features(w) for w in data.words]
    y = [np.array(lab) for lab in data.labels]
    return feats, y


def crfsuite_dicts(X):
    """The vectorised features back as {name: value} dicts, so CRFsuite sees exactly our columns."""
    out = []
    for x in X:
        x = x.tocsr()
        names = VOCAB_NAMES
        out.append([{names[j]: float(v) for j, v in zip(x.indices[x.indptr[t]:x.indptr[t + 1]],
                                                         x.data[x.indptr[t]:x.indptr[t + 1]])}
                    for t in range(x.shape[0])])
    return out


VOCAB_NAMES = None


def vectorize(feats, train, test):
    global VOCAB_NAMES
    vec = SequenceVectorizer(min_freq=MIN_FREQ)
    Xtr = vec.fit_transform([feats[i] for i in train])
    Xte = vec.transform([feats[i] for i in test])
    VOCAB_NAMES = list(vec.get_feature_names_out())
    return Xtr, Xte
