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


def to_bio(labels):
    """Field labels (IO: one label per token, no "O") as BIO: ``B-field`` opens every maximal run."""
    labels = np.asarray(labels)
    starts = np.r_[True, labels[1:] != labels[:-1]]
    return np.array([("B-" if s else "I-") + lab for s, lab in zip(starts, labels)], dtype=object)


def bio_split(fold=0):
    """GROBID citations as a chunking task: fold ``fold`` of ``bench_citations.py``'s
    ``KFold(5, shuffle=True, random_state=0)``, the citation features vectorised on the training
    part (``min_freq=MIN_FREQ``), labels in BIO. Returns ``X_train, y_train, X_test, y_test``; the
    columns' names are then in ``VOCAB_NAMES`` (for :func:`crfsuite_dicts`)."""
    from sklearn.model_selection import KFold

    feats, y = load()
    train, test = list(KFold(5, shuffle=True, random_state=0).split(feats))[fold]
    X_train, X_test = vectorize(feats, train, test)
    return X_train, [to_bio(y[i]).astype(str) for i in train], X_test, [to_bio(y[i]).astype(str) for i in test]
