"""Fit from a corpus that lives on a dask cluster: no machine ever holds the whole of it.

A :class:`ClusterCorpus` names where the training sequences are: the partitions of a
:class:`dask.bag.Bag` of ``(tokens, labels)`` pairs, or per-shard loader functions (e.g.
``functools.partial(load_conll, path)`` for one file each). ``ChainCRF().fit(corpus)`` then runs
in four steps, each shard staying on one worker from the first to the last
(:class:`~sklearn_struct.utils.shards.ResidentShards`):

1. each worker loads its shard and featurises it with its own vocabulary, and sends back only
   its feature names, their token counts and its label set;
2. the driver merges them into the vocabulary (and label set) the featurizer would have learnt
   from the whole corpus, sorted the same way, the ``min_freq`` rule applied to the summed counts,
   and sends each shard, once, the numbers of its columns in it (and the labels); each worker
   renumbers its columns and encodes its labels, and sends back its (attribute, label) and
   transition counts;
3. the driver merges those into the weights the model has (the pairs CRFsuite keeps, the
   transitions that are features) and sends the pairs once; each worker packs its shard;
4. L-BFGS (OWL-QN with ``c1 > 0``) on the resident shards: only ``theta`` out, each shard's
   (value, gradient) back.

The crfsuite drop-in (:class:`sklearn_struct.crfsuite.CRF`) runs the same steps with its own
attribute rules and labels in order of first appearance (a featurizer that brings its shard
methods, see :func:`_is_shard_featurizer`).

The driver holds vocabularies and counts, never a sequence. The model is the one ``ChainCRF``
fits locally on ``featurizer.fit_transform(X)`` (up to the order of floating-point sums over
the shards). A worker lost during the fit has its shard made again on a live worker by its
loader, through the steps already done (see :mod:`sklearn_struct.utils.shards`).
"""

import sys
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.feature_extraction import DictVectorizer

from ._chain_crf import ChainData, ChainObjective, _add_l2, _chunk_loss, warm_start_params
from ._chain_crf_constrained import structure_from
from ._chain_crf_fit import check_solver_options, minimize_chain_objective, DEFAULT_MAX_ITER
from .oracles.linear import LinearFeatures, all_pairs
from .preprocessing import SequenceVectorizer, WindowFeaturizer, _call_on_tokens, _check_dict_sequences
from .utils.packing import transition_pairs
from .utils.progress import Progress
from .utils.shards import ResidentShards, _check_client, dask_client

__all__ = ["ClusterCorpus"]


class ClusterCorpus:
    """Training sequences that live on a dask cluster, featurised and packed where they live.

    Pass it to :meth:`sklearn_struct.ChainCRF.fit` in place of ``X`` (``y`` None: the labels are
    in the corpus). Each bag partition (or loader) is one shard, resident on one worker for the
    whole fit; ``ChainCRF``'s ``n_jobs`` does not apply (repartition the bag to choose the count).
    ``allowed_transitions`` needs ``allowed_transitions_in_fit=False``: the cluster fits the plain
    model and the mask applies at prediction (training with it is a ValueError).

    Parameters
    ----------
    source : dask.bag.Bag or list of callable
        A bag of ``(tokens, labels)`` pairs, one per sequence; or loaders, module-level
        functions (or ``functools.partial`` of them) that a worker calls to get one shard:
        a list of ``(tokens, labels)`` pairs, or an object with ``sequences`` and ``labels``
        (what :func:`sklearn_struct.datasets.load_conll` returns). A bag's partition is computed
        on the worker that will hold it (``scheduler="sync"``), so build the bag from files
        (``dask.bag.read_text(...).map(...)``, ``dask.bag.from_delayed``) rather than from
        data already persisted on the cluster.
    featurizer : SequenceVectorizer, WindowFeaturizer or None, default=None
        How tokens become features (token feature dicts, or CoNLL (word, POS) tokens); cloned,
        its vocabulary learnt from the whole corpus. ``sparse=True`` only. Needed by
        ``ChainCRF``; None for :class:`sklearn_struct.crfsuite.CRF`, which featurises
        python-crfsuite feature dicts by its own rules (``CRF().fit(ClusterCorpus(bag))``).
    client : distributed.Client, default=None
        The cluster; by default the client of joblib's active ``"dask"`` backend
        (``with joblib.parallel_backend("dask"):``). A fit without either is a ValueError.

    Attributes
    ----------
    featurizer_ : SequenceVectorizer or WindowFeaturizer
        The featurizer fitted on the whole corpus by the last fit (its vocabulary merged from the
        workers'): ``crf.predict(corpus.featurizer_.transform(X_test))``. After a
        ``crfsuite.CRF`` fit, the attribute names (``names_``) and labels (``labels_``) instead.
    n_sequences_, n_tokens_ : int
        Size of the corpus, counted on the workers by the last fit.

    See Also
    --------
    sklearn_struct.utils.shards.ResidentShards : the shards under the fit.

    Examples
    --------
    >>> from sklearn_struct.preprocessing import SequenceVectorizer
    >>> corpus = ClusterCorpus([], SequenceVectorizer())
    Traceback (most recent call last):
    ...
    ValueError: ClusterCorpus: source is an empty list of loaders: at least one shard is needed.

    On a cluster (see the Scaling out page)::

        bag = dask.bag.from_sequence(zip(X_dicts, y), npartitions=4)
        with joblib.parallel_backend("dask"):
            crf = ChainCRF(c2=0.1).fit(ClusterCorpus(bag, SequenceVectorizer()))
    """

    def __init__(self, source, featurizer=None, *, client=None):
        self.loaders = _loaders(source)
        if featurizer is not None and not _is_shard_featurizer(featurizer):
            if not isinstance(featurizer, (SequenceVectorizer, WindowFeaturizer)):
                raise ValueError("ClusterCorpus: featurizer must be a SequenceVectorizer or a WindowFeaturizer (or "
                                 f"None for sklearn_struct.crfsuite.CRF), got {type(featurizer).__name__}.")
            if getattr(featurizer, "sparse", True) is not True:
                raise ValueError("ClusterCorpus: the featurizer must give sparse features (sparse=True).")
            featurizer._validate_params()
        self.featurizer = featurizer
        self.client = _check_client(client, ("nthreads", "submit", "scatter"))

    @property
    def n_shards(self):
        """Number of shards (bag partitions or loaders)."""
        return len(self.loaders)

    def _client(self):
        client = self.client if self.client is not None else dask_client()
        if client is None:
            raise ValueError("ClusterCorpus: no dask cluster to fit on: fit inside joblib.parallel_backend('dask') "
                             "(with a distributed.Client) or pass ClusterCorpus(..., client=client).")
        return client

    def _objective(self, c2, all_possible_states, min_freq, featurizer=None):
        """Steps 1-3 on the cluster: the resident objective, the classes and the transition counts (L, L).

        ``featurizer`` (default: the corpus's) is a SequenceVectorizer, a WindowFeaturizer or an
        object with the shard-featurizer methods (see :func:`_is_shard_featurizer`)."""
        featurizer = self.featurizer if featurizer is None else featurizer
        if featurizer is None:
            raise ValueError("ChainCRF.fit on a ClusterCorpus needs its featurizer: ClusterCorpus(source, "
                             "featurizer), a SequenceVectorizer or a WindowFeaturizer (featurizer=None is for "
                             "sklearn_struct.crfsuite.CRF, which turns feature dicts into attributes itself).")
        client = self._client()
        proto = clone(featurizer)
        load = [partial(_featurized, loader, i, proto) for i, loader in enumerate(self.loaders)]
        # always through the cluster, even for one shard: the driver must not load it
        shards = ResidentShards.from_loaders(load, client=client)
        try:
            stats = shards.map(_vocabulary_stats, None)
            names, classes, label_codes = self._merge_vocabulary(stats, featurizer)
            # each shard gets its own columns' numbers in the corpus's vocabulary, not the vocabulary
            index = {name: i for i, name in enumerate(names)}
            columns = [(np.array([index.get(n, -1) for n in s["names"]], dtype=_int_type(len(names))), len(names),
                        len(classes), codes) for s, codes in zip(stats, label_codes)]
            del stats, index
            shards._loaders = [partial(_coded, f, c) for f, c in zip(load, columns)]
            counts = shards._map_each(_encode, columns)
            pairs, transitions = _merge_counts(counts, len(names), len(classes), all_possible_states, min_freq)
            del counts
            sent = tuple(a.astype(_int_type(max(len(pairs[1]), len(classes)))) for a in pairs)  # half the bytes
            shards._loaders = [partial(_built, f, sent, len(classes)) for f in shards._loaders]
            shards.map(_build, sent, len(classes))
        except BaseException:
            shards.close()
            raise
        return _CorpusObjective(shards, len(names), len(classes), c2, pairs), classes, transitions

    def _merge_vocabulary(self, stats, featurizer):
        """The whole corpus's feature names (the featurizer's order and ``min_freq``), classes and
        each shard's label codes in them; sets ``featurizer_``, ``n_sequences_``, ``n_tokens_``."""
        self.n_sequences_ = sum(s["n_sequences"] for s in stats)
        self.n_tokens_ = sum(s["n_tokens"] for s in stats)
        if self.n_sequences_ == 0:
            raise ValueError(f"ClusterCorpus: the corpus is empty: its {len(stats)} shards hold 0 sequences.")
        counts = {}
        for s in stats:  # first appearance over the shards in order: DictVectorizer's order with sort=False
            for name, c in zip(s["names"], s["counts"]):
                counts[name] = counts.get(name, 0) + int(c)
        if _is_shard_featurizer(featurizer):  # e.g. the crfsuite drop-in's: its own orders
            names = featurizer._corpus_names(counts)
            labels = featurizer._corpus_labels([s["labels"] for s in stats])
            index = {label: k for k, label in enumerate(labels)}
            codes = [np.array([index[label] for label in s["labels"]], dtype=np.int64) for s in stats]
            self.featurizer_ = featurizer._fitted(names, labels)
            return names, np.arange(len(labels)), codes
        names = list(counts)
        vectorizer = _vectorizer_of(featurizer)
        if vectorizer.sort:
            names.sort()
        if vectorizer.min_freq > 1:
            names = [n for n in names if counts[n] >= vectorizer.min_freq]
        if not names:
            raise ValueError("ClusterCorpus: no features left: the token dicts are empty"
                             + (f" or every feature occurs in fewer than min_freq={vectorizer.min_freq} tokens."
                                if vectorizer.min_freq > 1 else "."))
        classes = np.unique(np.concatenate([s["labels"] for s in stats if len(s["labels"])]))
        self.featurizer_ = _fitted_featurizer(featurizer, names)
        return names, classes, [np.searchsorted(classes, s["labels"]).astype(np.int64) for s in stats]


def fit_chain_crf_from_corpus(estimator, corpus, y=None, X_dev=None, y_dev=None, sample_weight=None, *,
                              featurizer=None):
    """``ChainCRF.fit`` on a :class:`ClusterCorpus` (called by it); sets the fitted attributes.

    ``featurizer`` replaces the corpus's (the crfsuite drop-in passes its attribute rules); then
    the classes are the label codes ``0 .. L-1`` and ``corpus.featurizer_.labels_`` their labels."""
    params = estimator.get_params()
    given = {"y": y, "X_dev": X_dev, "y_dev": y_dev, "sample_weight": sample_weight,
             "class_weight": params["class_weight"]}
    for name, value in given.items():
        if value is not None:
            raise ValueError(f"ChainCRF.fit on a ClusterCorpus: {name} is not supported (got {type(value).__name__}); "
                             "the labels are in the corpus" + (" (pass y=None)." if name == "y" else "."))
    if params["allowed_transitions"] is not None and params["allowed_transitions_in_fit"]:
        raise ValueError("ChainCRF.fit on a ClusterCorpus: allowed_transitions in training is not supported; set "
                         "allowed_transitions_in_fit=False to fit the plain model on the cluster and apply "
                         "allowed_transitions at prediction only.")
    if params["algorithm"] != "lbfgs":
        raise ValueError(f"ChainCRF.fit on a ClusterCorpus needs algorithm='lbfgs', got {params['algorithm']!r}.")
    options = check_solver_options("lbfgs", params["solver_options"])
    max_iter = params["max_iter"] if params["max_iter"] is not None else DEFAULT_MAX_ITER["lbfgs"]
    progress = Progress(type(estimator).__name__, estimator.verbose, estimator.callback)
    objective, classes, transitions = corpus._objective(params["c2"], params["all_possible_states"],
                                                        params["min_freq"], featurizer)
    with objective:  # resident shards released at the end of the fit, even on an error
        structure = structure_from(params["allowed_transitions"], classes)  # at prediction only: checked first
        previous = warm_start_params(estimator, objective.n_features, classes)
        L = len(classes)
        counts = transitions.ravel()
        mask = np.full(L * L, True) if params["all_possible_transitions"] else counts > 0
        if params["min_freq"] is not None:
            mask &= counts >= params["min_freq"]
        *fitted, log = minimize_chain_objective(objective, mask, params, options, max_iter, previous, progress)
    estimator.classes_, estimator.n_features_in_ = classes, objective.n_features
    estimator.__dict__.pop("_online_state", None)
    estimator.coef_, estimator.intercept_, estimator.transition_, estimator.n_iter_, estimator.objective_ = fitted
    estimator.training_log_, estimator.allowed_transitions_ = log, structure
    return estimator


def is_cluster_corpus(X):
    """Whether ``X`` is a :class:`ClusterCorpus` (what ``ChainCRF.fit`` checks first)."""
    return isinstance(X, ClusterCorpus)


# ---------------------------------------------------------------------------- driver side
def _loaders(source):
    bag = sys.modules.get("dask.bag")
    if bag is not None and isinstance(source, bag.Bag):
        return [partial(_partition, part) for part in source.to_delayed()]
    if isinstance(source, (str, bytes, dict)) or not isinstance(source, (list, tuple)):
        raise ValueError("ClusterCorpus: source must be a dask.bag.Bag of (tokens, labels) pairs or a list of loader "
                         f"callables, got {type(source).__name__}.")
    if not source:
        raise ValueError("ClusterCorpus: source is an empty list of loaders: at least one shard is needed.")
    for i, load in enumerate(source):
        if not callable(load):
            raise ValueError(f"ClusterCorpus: source[{i}] is not callable ({type(load).__name__}): a loader must be.")
    return list(source)


def _is_shard_featurizer(featurizer):
    """Whether ``featurizer`` brings its own shard methods (a featurizer protocol, used by the crfsuite
    drop-in): ``_shard_features(X) -> (rows, offsets, names)`` and ``_shard_labels(y, offsets) ->
    (labels, codes)`` on a worker (names and labels in the shard's order, codes into its labels);
    ``_corpus_names(counts)`` (``{name: token count}`` in first-appearance order over the shards),
    ``_corpus_labels(shard_labels)`` and ``_fitted(names, labels)`` on the driver."""
    return all(hasattr(featurizer, m) for m in ("_shard_features", "_shard_labels", "_corpus_names",
                                                  "_corpus_labels", "_fitted"))


def _vectorizer_of(featurizer):
    """The SequenceVectorizer settings that name and keep the columns."""
    if isinstance(featurizer, WindowFeaturizer):
        return SequenceVectorizer(dtype=featurizer.dtype, min_freq=featurizer.min_freq)
    return featurizer


def _fitted_featurizer(featurizer, names):
    """A clone of ``featurizer`` fitted to the columns ``names`` (as its own fit on the corpus would be)."""
    fitted, vectorizer = clone(featurizer), clone(_vectorizer_of(featurizer))
    vec = DictVectorizer(dtype=vectorizer.dtype, separator=vectorizer.separator, sort=vectorizer.sort)
    vec.feature_names_ = list(names)
    vec.vocabulary_ = {name: i for i, name in enumerate(names)}
    vectorizer.vectorizer_, vectorizer.vocabulary_ = vec, vec.vocabulary_
    if isinstance(fitted, WindowFeaturizer):
        fitted.vectorizer_ = vectorizer
        return fitted
    return vectorizer


def _merge_counts(counts, n_features, n_labels, all_possible_states, min_freq):
    """The weighted (attribute, label) pairs as ``state_pairs`` chooses them from the whole corpus,
    and the summed transition counts."""
    L = n_labels
    seen = sum((c["seen"] for c in counts), sp.csr_matrix((n_features, L)))
    transitions = sum(c["transitions"] for c in counts)
    if min_freq is not None:
        freq = sum((c["freq"] for c in counts), sp.csr_matrix((n_features, L))).tocsr()
        if all_possible_states and min_freq <= 0:  # every pair but the seen ones below min_freq: dense anyway
            keep = np.ones((n_features, L), dtype=bool)
            support = seen.toarray() > 0
            keep[support] = freq.toarray()[support] >= min_freq
            kept = sp.csr_matrix(keep)
        else:  # the seen pairs at min_freq or more, never a dense (n_features, L) array
            seen = sp.csr_matrix(seen)
            seen.eliminate_zeros()
            rows, cols = seen.nonzero()
            keep = np.asarray(freq[rows, cols]).ravel() >= min_freq if rows.size else np.zeros(0, dtype=bool)
            kept = sp.csr_matrix((np.ones(int(keep.sum())), (rows[keep], cols[keep])), shape=(n_features, L))
        kept.sort_indices()
        return (kept.indptr.astype(np.int64), kept.indices.astype(np.int64)), transitions
    if all_possible_states:
        return all_pairs(n_features, L), transitions
    seen = sp.csr_matrix(seen)
    seen.eliminate_zeros()
    seen.sort_indices()
    return (seen.indptr.astype(np.int64), seen.indices.astype(np.int64)), transitions


class _CorpusObjective(ChainObjective):
    """ChainObjective's interface over shards made on the workers (the driver holds no data)."""

    def __init__(self, shards, n_features, n_labels, c2, pairs):
        self.n_labels, self.c2, self.n_jobs, self.n_features = n_labels, c2, None, n_features
        self.shards, self.chunks = shards, []
        self.features = LinearFeatures(sp.csr_matrix((0, n_features)), n_labels, pairs=pairs)
        self.n_weights = self.features.n_weights
        self.n_params = self.n_weights + n_labels + n_labels * n_labels

    def __call__(self, theta):
        f, g = self.shards.sum(_shard_loss, theta, self.n_labels, self.n_params)
        f += _add_l2(theta, g, self.c2, self.n_weights, self.n_weights + self.n_labels)
        return f, g


# ---------------------------------------------------------------------------- worker side
def _partition(part):
    """One bag partition, computed here (on the worker that holds its shard)."""
    return list(part.compute(scheduler="sync"))


def _featurized(load, index, featurizer):
    """Shard ``index`` loaded and featurised with its own vocabulary (step 1)."""
    data = load()
    if hasattr(data, "sequences") and hasattr(data, "labels"):
        X, y = list(data.sequences), data.labels
        if y is None or len(y) != len(X):
            raise ValueError(f"ClusterCorpus shard {index}: the loader gave {len(X)} sequences and "
                             f"{'no' if y is None else len(y)} label sequences.")
    else:
        pairs = list(data)
        for j, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"ClusterCorpus shard {index}, sequence {j}: expected a (tokens, labels) pair, "
                                 f"got {type(pair).__name__}.")
        X, y = [p[0] for p in pairs], [p[1] for p in pairs]
    shard = {"index": index, "n_sequences": len(X), "n_tokens": 0, "names": [], "counts": np.zeros(0, np.int64),
             "labels": np.zeros(0)}
    if not X:
        return shard
    if _is_shard_featurizer(featurizer):
        try:
            packed, offsets, names = featurizer._shard_features(X)
            labels, y = featurizer._shard_labels(y, offsets)
        except ValueError as exc:
            raise ValueError(f"ClusterCorpus shard {index}: {exc}") from None
        return _featurized_shard(shard, packed, offsets, names, labels, y)
    y = [np.asarray(lab) for lab in y]
    for j, (tokens, lab) in enumerate(zip(X, y)):
        if lab.ndim != 1 or len(tokens) != lab.shape[0]:
            raise ValueError(f"ClusterCorpus shard {index}, sequence {j}: {len(tokens)} tokens but "
                             f"{lab.shape[0] if lab.ndim == 1 else lab.shape} labels.")
        if len(tokens) == 0:
            raise ValueError(f"ClusterCorpus shard {index}, sequence {j} is empty: it has 0 tokens.")
    vectorizer = SequenceVectorizer(dtype=_vectorizer_of(featurizer).dtype,
                                    separator=_vectorizer_of(featurizer).separator, sort=False)
    try:
        if isinstance(featurizer, WindowFeaturizer):
            words, tags, offsets = featurizer._parse(X)
            packed = vectorizer._fit_packed(featurizer._iter_dicts(words, tags), offsets)
        else:
            tokens, offsets, seqs = _check_dict_sequences(X)
            packed = _call_on_tokens(vectorizer._fit_packed, tokens, offsets, seqs)
    except ValueError as exc:
        raise ValueError(f"ClusterCorpus shard {index}: {exc}") from None
    y = np.concatenate(y)
    if any(v is None for v in y.tolist()):
        raise ValueError(f"ClusterCorpus shard {index}: a label is None (partial labels need a local fit).")
    labels, y = np.unique(y, return_inverse=True)
    return _featurized_shard(shard, packed, offsets, vectorizer.vectorizer_.feature_names_, labels, y)


def _featurized_shard(shard, packed, offsets, names, labels, y):
    """The shard of step 1: its rows, its names and labels (in its own order) and its tokens' label codes."""
    shard.update(packed=packed, offsets=offsets, y=np.asarray(y, dtype=np.int64).ravel(), n_tokens=packed.shape[0],
                 names=names, counts=np.bincount(packed.indices, minlength=packed.shape[1]), labels=labels)
    return shard


def _vocabulary_stats(shard, _):
    return {k: shard[k] for k in ("n_sequences", "n_tokens", "names", "counts", "labels")}


def _int_type(largest):
    return np.int32 if largest < np.iinfo(np.int32).max else np.int64


def _coded(load, columns):
    """Step 2 (after ``load``, step 1): columns renumbered to the corpus's, labels encoded."""
    shard = load()
    _encode(shard, columns)
    return shard


def _encode(shard, columns):
    """``columns``: (this shard's column -> the corpus's, -1 for a dropped one; n_features; n_labels;
    this shard's label codes -> the corpus's)."""
    column, n_features, L, label_codes = columns
    out = {"seen": sp.csr_matrix((n_features, L)), "freq": sp.csr_matrix((n_features, L)),
           "transitions": np.zeros((L, L))}
    if "packed" not in shard:
        return out
    packed = shard["packed"].tocsr()
    cols = column[packed.indices]
    keep = cols >= 0
    if keep.all():
        X = sp.csr_matrix((packed.data, cols, packed.indptr), shape=(packed.shape[0], n_features))
    else:  # columns below min_freq dropped: each row keeps its remaining entries
        kept = np.concatenate([[0], np.cumsum(keep)])
        X = sp.csr_matrix((packed.data[keep], cols[keep], kept[packed.indptr]), shape=(packed.shape[0], n_features))
    X.sort_indices()
    y = label_codes[shard["y"]]
    Y = sp.csr_matrix((np.ones(len(y)), (np.arange(len(y)), y)), shape=(len(y), L))
    pattern = sp.csr_matrix((np.ones(X.nnz), X.indices, X.indptr), shape=X.shape)
    src, dst = transition_pairs(y, shard["offsets"])
    out.update(seen=(pattern.T @ Y).tocsr(), freq=(X.T @ Y).tocsr(),
               transitions=np.bincount(src * L + dst, minlength=L * L).reshape(L, L).astype(np.float64))
    for key in ("packed", "names", "counts"):
        del shard[key]
    shard.update(X=X, y=y)
    return out


def _built(load, pairs, n_labels):
    """Step 3 (after ``load``, steps 1-2): the shard packed for the objective."""
    shard = load()
    _build(shard, pairs, n_labels)
    return shard


def _build(shard, pairs, n_labels):
    if "X" in shard:
        data = ChainData.from_packed(shard.pop("X"), shard["offsets"], shard.pop("y"), n_labels, pairs)
        shard["chunk"] = (data, data.empirical_counts(n_labels))
    return None


def _shard_loss(shard, theta, n_labels, n_params):
    if "chunk" not in shard:  # a shard without sequences
        return 0.0, np.zeros(n_params)
    return _chunk_loss(shard["chunk"], theta, n_labels)
