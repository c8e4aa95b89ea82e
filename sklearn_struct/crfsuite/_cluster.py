"""The drop-in's fit from a :class:`~sklearn_struct.cluster_corpus.ClusterCorpus` of feature-dict sequences.

``CRF().fit(ClusterCorpus(bag))``, the bag holding ``(xseq, yseq)`` pairs in python-crfsuite's
format, runs :func:`~sklearn_struct.cluster_corpus.fit_chain_crf_from_corpus` (the shards stay on
the workers, only the parameters travel) with :class:`CRFsuiteAttributes` as the featurizer: each
worker turns its dicts into attributes with the drop-in's own
:class:`~sklearn_struct.crfsuite._features.AttributeVocabulary` and numbers its labels in order of
first appearance; the driver merges the attribute names and the labels in order of first
appearance over the shards in order, which is their order in the whole corpus. So the attributes,
the labels and the model are those of ``CRF().fit(X, y)`` on the corpus in one list (up to the
order of the sums over the shards).
"""

import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning

from .._chain_crf_constrained import structure_from
from ..chain_crf import ChainCRF
from ..cluster_corpus import fit_chain_crf_from_corpus
from . import _structure
from ._features import AttributeVocabulary

__all__ = ["CRFsuiteAttributes", "fit_from_corpus"]


class CRFsuiteAttributes(BaseEstimator):
    """python-crfsuite's attribute rules as a ClusterCorpus featurizer (its shard-featurizer methods).

    After a fit, ``names_`` holds the attributes (columns) and ``labels_`` the labels (codes), both
    in order of first appearance in the corpus.

    Examples
    --------
    >>> f = CRFsuiteAttributes()
    >>> rows, offsets, names = f._shard_features([[{"w": "a", "n": 2}], [{"w": "b"}]])
    >>> names, rows.toarray().tolist()
    (['w:a', 'n', 'w:b'], [[1.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
    >>> f._shard_labels([["B"], ["A"]], offsets)
    (['B', 'A'], array([0, 1]))
    """

    def _shard_features(self, X):
        vocabulary = AttributeVocabulary()
        rows, offsets = vocabulary.fit_transform(X, "X")
        return rows, offsets, vocabulary.names()

    def _shard_labels(self, y, offsets):
        from .estimator import _check_labels  # the drop-in's checks and messages

        y = _check_labels(y, offsets, "y")
        for i, labels in enumerate(y):
            if not labels:
                raise ValueError(f"sequence {i} is empty: it has 0 tokens.")
            if any(label is None or isinstance(label, (set, frozenset)) for label in labels):
                raise ValueError(f"y, sequence {i}: partial labels (None or a set at a token) need a local fit.")
        index = {}
        codes = np.fromiter((index.setdefault(label, len(index)) for labels in y for label in labels),
                            dtype=np.int64, count=int(offsets[-1]))
        return list(index), codes

    def _corpus_names(self, counts):
        return list(counts)  # first appearance over the shards in order: AttributeVocabulary's order

    def _corpus_labels(self, shard_labels):
        return list(dict.fromkeys(label for labels in shard_labels for label in labels))

    def _fitted(self, names, labels):
        fitted = CRFsuiteAttributes()
        fitted.names_, fitted.labels_ = list(names), list(labels)
        return fitted


def fit_from_corpus(crf, corpus, chain_params, y, X_dev, y_dev, sample_weight):
    """``crf.fit(corpus)``: the fitted ChainCRF, the attribute names and the labels.

    ``chain_params``: the ChainCRF parameters of ``crf`` (``crf._chain_params()``).
    """
    given = {"y": y, "X_dev": X_dev, "y_dev": y_dev, "sample_weight": sample_weight,
             "class_weight": crf.class_weight}
    for name, value in given.items():
        if value is not None:
            raise ValueError(f"CRF.fit on a ClusterCorpus: {name} is not supported (got {type(value).__name__}); "
                             + ("the labels are in the corpus (pass y=None)." if name == "y" else "fit locally."))
    if chain_params["algorithm"] != "lbfgs":
        raise ValueError(f"CRF.fit on a ClusterCorpus: algorithm={crf.algorithm!r} is not supported; only "
                         "'lbfgs' (the default) fits from a cluster.")
    if crf.allowed_transitions is not None and crf.allowed_transitions_in_fit is not False:
        raise ValueError("CRF.fit on a ClusterCorpus: allowed_transitions in training is not supported; set "
                         "allowed_transitions_in_fit=False to fit the plain model and apply allowed_transitions "
                         "at prediction only.")
    if corpus.featurizer is not None and not isinstance(corpus.featurizer, CRFsuiteAttributes):
        raise ValueError("CRF.fit on a ClusterCorpus: the corpus's featurizer must be None (the CRF turns feature "
                         "dicts into attributes by python-crfsuite's rules), got "
                         f"{type(corpus.featurizer).__name__}.")
    chain = ChainCRF(**chain_params)
    chain._validate_params()  # as ChainCRF.fit's _fit_context does
    with warnings.catch_warnings():  # max_iterations is a budget in CRFsuite: reaching it is no failure
        warnings.filterwarnings("ignore", message=".*did not converge.*max_iter", category=ConvergenceWarning)
        fit_chain_crf_from_corpus(chain, corpus, featurizer=CRFsuiteAttributes())
    names, labels = corpus.featurizer_.names_, corpus.featurizer_.labels_
    structure = _structure.model_structure(crf.allowed_transitions, labels)
    if structure is not None:  # as the local fit's ChainCRF: the plain model, the mask at its prediction
        allowed = tuple(structure)
        chain.set_params(allowed_transitions=allowed, allowed_transitions_in_fit=False)
        chain.allowed_transitions_ = structure_from(allowed, chain.classes_)
    return chain, names, labels
