"""Resident shards on a two-process dask cluster: same model as the local fit, only parameters on the wire.

One ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`` serves the module. The bytes
each worker receives are counted on the workers (``count_worker_bytes`` wraps distributed's frame
decoding in each worker process), so "only the parameters travel" is measured, not assumed.
"""

import os
import pickle
import re
import signal
import sys
import warnings
from functools import partial
from pathlib import Path

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from _bounded import run_cpu_bounded

from sklearn_struct import ChainCRF, GPStructClassifier, PrunedBPMarginals
from sklearn_struct.datasets import make_chain_data
from sklearn_struct.datasets._ising import make_ising_grid
from sklearn_struct.utils.graph import images_to_graphs
from sklearn_struct.utils import shards as shard_module
from sklearn_struct.utils.shards import ResidentShards, ShardLostError, count_worker_bytes, n_shards, shard_options

distributed = pytest.importorskip("dask.distributed")

TIMEOUT = 120  # seconds: no test of this module may wait longer on the cluster


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  worker_dashboard_address=":0") as cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=TIMEOUT)
        yield c


@pytest.fixture
def healthy(client):
    """The cluster with both workers up (a previous test may have killed one)."""
    client.wait_for_workers(2, timeout=TIMEOUT)
    return client


def _chain_data(n_seq=240, n_features=1500, seed=0):
    """Sparse sequences whose data (~0.5 MB) dwarfs the parameter vector (~50 KB)."""
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n_seq):
        T = rng.randint(8, 20)
        labels = rng.randint(0, 4, size=T)
        cols = (rng.randint(0, n_features // 4, size=(T, 8)) * 4 + labels[:, None]) % n_features
        rows = np.repeat(np.arange(T), 8)
        X.append(sp.csr_matrix((np.ones(T * 8), (rows, cols.ravel())), shape=(T, n_features)))
        y.append(labels)
    return X, y


class _Meter:
    """Counts evaluations of resident shards and the bytes the workers receive during each one."""

    def __init__(self, client, monkeypatch):
        self.read = count_worker_bytes(client)
        self.per_evaluation = []
        original = ResidentShards.map

        def map(shards, func, params, *args):
            before = sum(self.read().values())
            out = original(shards, func, params, *args)
            if shards.distributed:
                self.per_evaluation.append((sum(self.read().values()) - before, len(pickle.dumps(params))))
            return out

        monkeypatch.setattr(ResidentShards, "map", map)
        monkeypatch.setattr(ResidentShards, "_map_each", _metered(self, ResidentShards._map_each))

    def check(self, max_ratio=3.0, overhead=0):
        """Every evaluation after the first (which scatters the shards) ships at most
        ``max_ratio`` x params + ``overhead`` bytes (task messages, for tiny parameter vectors)."""
        assert len(self.per_evaluation) >= 3
        first_bytes, theta_bytes = self.per_evaluation[0]
        later = np.array([b for b, _ in self.per_evaluation[1:]])
        assert first_bytes > 5 * np.max(later)  # the scatter: the data went out once
        assert np.all(later <= max_ratio * theta_bytes + overhead), (later, theta_bytes)
        return first_bytes, later


def _metered(meter, original):
    """``original`` (a ResidentShards method taking ``(func, params, ...)``) recording its bytes in ``meter``."""
    def method(shards, func, params, *args):
        before = sum(meter.read().values())
        out = original(shards, func, params, *args)
        if shards.distributed:
            meter.per_evaluation.append((sum(meter.read().values()) - before, len(pickle.dumps(params))))
        return out
    return method


def _fit_quiet(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


def test_n_shards_follows_n_jobs(healthy):
    assert n_shards(3) == 3 and n_shards(None) == 1
    with joblib.parallel_backend("dask"):
        assert n_shards(5) == 5  # not the cluster's thread count
        assert n_shards(None) == n_shards(-1) == 2
    with healthy.as_current():
        assert shard_module.dask_client() is None  # a client alone keeps fits local: the backend decides


def test_shards_sum_in_a_fixed_order_on_the_cluster(healthy):
    parts = [np.random.RandomState(i).normal(size=(50, 4)) for i in range(5)]
    local = ResidentShards(parts).sum(_loss, np.ones(4))
    with ResidentShards(parts, client=healthy) as remote:
        assert remote.distributed
        value, grad = remote.sum(_loss, np.ones(4))
        assert len(set(remote.workers)) == 2
    assert value == local[0] and np.array_equal(grad, local[1])
    # per-shard parameters: each task gets its own (a ClusterCorpus sends each shard its column numbers)
    offsets = [np.full(4, float(i)) for i in range(5)]
    with ResidentShards(parts, client=healthy) as remote:
        each = remote._map_each(np.add, offsets)
    for a, b in zip(each, ResidentShards(parts)._map_each(np.add, offsets)):
        assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="per_shard has 4 entries for 5 shards"):
        ResidentShards(parts)._map_each(np.add, offsets[:4])


def _loss(shard, theta):
    r = shard @ theta
    return float(r @ r), 2.0 * shard.T @ r


def test_chain_crf_on_the_cluster_equals_the_local_fit_and_ships_only_theta(healthy, monkeypatch):
    X, y = _chain_data()
    local = _fit_quiet(ChainCRF(n_jobs=2, max_iter=8, c2=0.1), X, y)
    meter = _Meter(healthy, monkeypatch)
    with joblib.parallel_backend("dask"):
        remote = _fit_quiet(ChainCRF(n_jobs=2, max_iter=8, c2=0.1), X, y)
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(remote.transition_, local.transition_, rtol=1e-12, atol=1e-12)
    assert remote.n_iter_ == local.n_iter_
    first, later = meter.check()
    print("chain: first evaluation", first, "bytes; later ones", later.min(), "-", later.max(), "bytes; theta",
          meter.per_evaluation[0][1])


def test_pruned_bp_on_the_cluster_equals_the_local_fit_and_ships_only_theta(healthy, monkeypatch):
    images, labels = make_ising_grid(n_noisy=6, shape=(16, 16), noise=1.0, random_state=0)
    X, y = images_to_graphs(images), list(labels.reshape(len(labels), -1))
    local = _fit_quiet(PrunedBPMarginals(n_jobs=2, max_iter=6, gamma=1e-3), X, y)
    meter = _Meter(healthy, monkeypatch)
    with joblib.parallel_backend("dask"):
        remote = _fit_quiet(PrunedBPMarginals(n_jobs=2, max_iter=6, gamma=1e-3), X, y)
        marginals = remote.predict_marginals(X[:3])
    for name in ("coef_", "intercept_", "edge_coef_"):
        np.testing.assert_allclose(getattr(remote, name), getattr(local, name), rtol=1e-12, atol=1e-12)
    for a, b in zip(marginals, local.predict_marginals(X[:3])):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # 5 parameters: the fixed cost of two task messages dominates, far below the data sent once
    first, later = meter.check(overhead=8000)
    print("pruned bp: first", first, "later", later.min(), "-", later.max())
    assert np.max(later) < 0.05 * first


def test_gp_struct_on_the_cluster_equals_the_local_fit_and_ships_only_parameters(healthy, monkeypatch):
    X, y = make_chain_data(80, n_labels=3, n_features=6, min_length=3, max_length=8, random_state=0)
    params = dict(optimizer="lbfgs", n_inducing=40, n_samples=10, max_iter=1, block_iters=(3, 2, 0),
                  n_predict_samples=10, random_state=0, n_jobs=2)
    local = _fit_quiet(GPStructClassifier(**params), X, y)
    meter = _Meter(healthy, monkeypatch)
    with joblib.parallel_backend("dask"):
        remote = _fit_quiet(GPStructClassifier(**params), X, y)
    np.testing.assert_allclose(remote.elbo_curve_, local.elbo_curve_, rtol=1e-12)
    np.testing.assert_allclose(remote.params_.get_unary(), local.params_.get_unary(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(remote.params_.get_pair(), local.params_.get_pair(), rtol=1e-12, atol=1e-12)
    # requests that draw new samples carry the sequence indices and seed too; the task messages add ~4 KB
    first, later = meter.check(overhead=8000)
    print("gp: first", first, "later", later.min(), "-", later.max(), "params", meter.per_evaluation[0][1])


def _tokens_and_features(shard, theta):
    """(tokens, feature sums scaled by theta) of a shard of raw sequences."""
    X, _ = shard
    return float(sum(x.shape[0] for x in X)), theta * sum(x.sum(axis=0) for x in X)


def test_shards_made_by_loaders_on_the_workers_never_pass_through_the_driver(healthy):
    loaders = [partial(make_chain_data, 150, n_features=4, random_state=i) for i in range(3)]
    local = ResidentShards.from_loaders(loaders).sum(_tokens_and_features, np.ones(4))
    read = count_worker_bytes(healthy)
    with ResidentShards.from_loaders(loaders, client=healthy) as shards, shard_options(timeout=TIMEOUT, poll=0.2):
        assert shards.distributed
        first = shards.sum(_tokens_and_features, np.ones(4))
        assert sum(read().values()) < 20_000  # the sequences (~100 KB) were made on the workers
        _kill(healthy, shards.workers[0])  # shard 0 is made again by its loader on a live worker
        again = shards.sum(_tokens_and_features, np.ones(4))
        assert shards._recoveries == 1
    for a in (first, again):
        assert a[0] == local[0] and np.array_equal(a[1], local[1])


def _kill(client, worker):
    pid = client.run(os.getpid, workers=[worker])[worker]
    os.kill(pid, signal.SIGKILL)


def _killer(client, iteration, every_worker=False):
    """A ChainCRF callback killing the worker of shard 0 (or every worker) at ``iteration``."""
    def callback(k, objective, seconds):
        if k == iteration:
            workers = sorted(client.nthreads()) if every_worker else [_SHARDS[-1].workers[0]]
            for w in workers:
                _kill(client, w)
        return False
    return callback


_SHARDS = []


@pytest.fixture
def track_shards(monkeypatch):
    original = ResidentShards.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        _SHARDS.append(self)

    monkeypatch.setattr(ResidentShards, "__init__", init)
    yield
    _SHARDS.clear()


def test_a_lost_worker_is_recovered_and_the_model_unchanged(healthy, track_shards):
    X, y = _chain_data(n_seq=120)
    local = _fit_quiet(ChainCRF(n_jobs=2, max_iter=6, c2=0.1), X, y)
    with joblib.parallel_backend("dask"), shard_options(timeout=TIMEOUT, poll=0.2):
        remote = _fit_quiet(ChainCRF(n_jobs=2, max_iter=6, c2=0.1, callback=_killer(healthy, 2)), X, y)
    assert _SHARDS[-1]._recoveries == 1
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("every_worker", [False, True])
def test_a_lost_worker_without_recovery_is_a_clear_error(healthy, track_shards, every_worker):
    X, y = _chain_data(n_seq=120)
    est = _fit_quiet(ChainCRF(n_jobs=2, max_iter=6, c2=0.1), X, y)
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(est).items()}
    est.set_params(callback=_killer(healthy, 2, every_worker))
    recoveries = 3 if every_worker else 0  # with every worker gone there is nothing to recover to
    with joblib.parallel_backend("dask"), shard_options(timeout=TIMEOUT, poll=0.2, max_recoveries=recoveries):
        with pytest.raises(ShardLostError, match="tcp://"):
            _fit_quiet(est, X, y)
    for k, v in before.items():
        if k != "callback":
            assert np.array_equal(getattr(est, k), v) if isinstance(v, np.ndarray) else getattr(est, k) == v, k



# ---------------------------------------------------------------------------- a corpus that lives on the cluster
def _tagged_corpus(n_seq=150, seed=0):
    """(word, POS) token sequences and chunk-like labels that depend on the POS and the previous label."""
    rng = np.random.RandomState(seed)
    words = [f"w{i}" for i in range(60)] + ["The", "IBM", "1990"]
    tags = ["NN", "VB", "DT", "JJ", "IN"]
    X, y = [], []
    for _ in range(n_seq):
        T = rng.randint(3, 12)
        pos = rng.randint(0, len(tags), size=T)
        X.append([(words[rng.randint(len(words))], tags[p]) for p in pos])
        labels = ["B-NP" if p in (0, 2) else "I-NP" if p == 3 else "O" for p in pos]
        y.append([lab if rng.rand() > 0.1 else "O" for lab in labels])
    return X, y


def _as_dicts(X):
    return [[{"w": w, "pos": p, "len": len(w), "tags": [p[:1], "x"]} for w, p in seq] for seq in X]


def _write_conll(path, X, y):
    path.write_text("".join("".join(f"{w} {p} {lab}\n" for (w, p), lab in zip(seq, labs)) + "\n"
                            for seq, labs in zip(X, y)))
    return str(path)


def _corpus_maps(meter, n_prep=3):  # load + vocabulary, columns + counts, pairs
    """(bytes of the preparation maps, of the later evaluations, theta bytes) from a _Meter."""
    prep = [b for b, _ in meter.per_evaluation[:n_prep]]
    later = np.array([b for b, _ in meter.per_evaluation[n_prep:]])
    return prep, later, meter.per_evaluation[-1][1]


@pytest.mark.parametrize("params", [dict(), dict(all_possible_states=True, all_possible_transitions=False,
                                                 min_freq=2.0)], ids=["observed-pairs", "min-freq"])
def test_chain_crf_fits_a_bag_featurised_on_the_workers_as_it_fits_locally(healthy, monkeypatch, params):
    db = pytest.importorskip("dask.bag")
    from sklearn_struct.cluster_corpus import ClusterCorpus
    from sklearn_struct.preprocessing import SequenceVectorizer

    X, y = _tagged_corpus()
    X = _as_dicts(X)
    vectorizer = SequenceVectorizer(min_freq=2)
    local = _fit_quiet(ChainCRF(max_iter=8, c2=0.1, **params), vectorizer.fit_transform(X), y)
    corpus = ClusterCorpus(db.from_sequence(list(zip(X, y)), npartitions=3), SequenceVectorizer(min_freq=2))
    meter = _Meter(healthy, monkeypatch)
    with joblib.parallel_backend("dask"):
        remote = _fit_quiet(ChainCRF(max_iter=8, c2=0.1, **params), corpus, None)
    assert corpus.featurizer_.vocabulary_ == vectorizer.vocabulary_  # merged from the workers' vocabularies
    assert corpus.n_sequences_ == len(X) and corpus.n_tokens_ == sum(map(len, X))
    assert np.array_equal(remote.classes_, local.classes_) and remote.n_iter_ == local.n_iter_
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(remote.transition_, local.transition_, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(remote.intercept_, local.intercept_, rtol=1e-9, atol=1e-10)
    Xt = corpus.featurizer_.transform(X[:20])
    assert remote.predict(Xt)[0].tolist() == local.predict(vectorizer.transform(X[:20]))[0].tolist()
    prep, later, theta = _corpus_maps(meter)
    assert len(later) >= 3 and np.all(later <= 3 * theta + 8000), (later, theta)  # 3 shards: theta in 3 tasks
    print("bag corpus: preparation", prep, "bytes; evaluations", later.min(), "-", later.max(), "; theta", theta)


def test_chain_crf_fits_conll_files_loaded_on_the_workers_and_survives_a_lost_worker(healthy, monkeypatch,
                                                                                       track_shards, tmp_path):
    from sklearn_struct.cluster_corpus import ClusterCorpus
    from sklearn_struct.datasets import load_conll
    from sklearn_struct.preprocessing import WindowFeaturizer

    X, y = _tagged_corpus(n_seq=600, seed=1)
    paths = [_write_conll(tmp_path / f"part{i}.txt", X[i::2], y[i::2]) for i in range(2)]
    order = [i for k in range(2) for i in range(k, len(X), 2)]  # the files' sequences, in file order
    featurizer = WindowFeaturizer(window=1)
    Xl = featurizer.fit_transform([X[i] for i in order])
    local = _fit_quiet(ChainCRF(max_iter=8, c2=0.1), Xl, [y[i] for i in order])
    corpus = ClusterCorpus([partial(load_conll, p) for p in paths], WindowFeaturizer(window=1))
    original_map = ResidentShards.map
    meter = _Meter(healthy, monkeypatch)
    with joblib.parallel_backend("dask"):
        remote = _fit_quiet(ChainCRF(max_iter=8, c2=0.1), corpus, None)
    prep, later, theta = _corpus_maps(meter)
    corpus_bytes = sum(os.path.getsize(p) for p in paths)
    assert prep[0] < 0.2 * corpus_bytes  # the files were read on the workers, not sent by the driver
    assert np.all(later <= 3 * theta + 8000), (later, theta)
    print("file corpus", corpus_bytes, "bytes; preparation", prep, "evaluations", later.min(), "-", later.max())
    monkeypatch.setattr(ResidentShards, "map", original_map)
    with joblib.parallel_backend("dask"), shard_options(timeout=TIMEOUT, poll=0.2):
        again = _fit_quiet(ChainCRF(max_iter=8, c2=0.1, callback=_killer(healthy, 2)), corpus, None)
    assert _SHARDS[-1]._recoveries == 1  # made again on the live worker: loaded, featurised, packed
    assert corpus.featurizer_.vectorizer_.vocabulary_ == featurizer.vectorizer_.vocabulary_
    for model in (remote, again):
        np.testing.assert_allclose(model.coef_, local.coef_, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(model.transition_, local.transition_, rtol=1e-9, atol=1e-10)


def _invalid_bio(predictions):
    return sum(lab.startswith("I-") and prev[2:] != lab[2:] for p in predictions for prev, lab in zip(["O", *p], p))


def test_chain_crf_fits_a_corpus_plain_and_decodes_within_allowed_transitions(healthy):
    db = pytest.importorskip("dask.bag")
    from sklearn_struct.cluster_corpus import ClusterCorpus
    from sklearn_struct.preprocessing import SequenceVectorizer

    X, y = _tagged_corpus(n_seq=60, seed=2)  # the labels break BIO: an I-NP after O
    X = _as_dicts(X)
    vectorizer = SequenceVectorizer()
    Xl = vectorizer.fit_transform(X)
    params = dict(max_iter=8, c2=0.1, allowed_transitions="BIO", allowed_transitions_in_fit=False)
    plain = _fit_quiet(ChainCRF(max_iter=8, c2=0.1), Xl, y)
    local = _fit_quiet(ChainCRF(**params), Xl, y)
    corpus = ClusterCorpus(db.from_sequence(list(zip(X, y)), npartitions=2), SequenceVectorizer())
    with joblib.parallel_backend("dask"):
        remote = _fit_quiet(ChainCRF(**params), corpus, None)
    assert np.array_equal(remote.classes_, plain.classes_) and remote.n_iter_ == plain.n_iter_
    for name in ("coef_", "intercept_", "transition_"):  # the plain model's weights
        np.testing.assert_allclose(getattr(remote, name), getattr(plain, name), rtol=1e-9, atol=1e-10)
    for mask in ("transitions", "start", "end"):
        assert np.array_equal(getattr(remote.allowed_transitions_, mask), getattr(local.allowed_transitions_, mask))
    Xt = corpus.featurizer_.transform(X)
    assert _invalid_bio(plain.predict(Xt)) > 0 and _invalid_bio(remote.predict(Xt)) == 0
    assert [p.tolist() for p in remote.predict(Xt)] == [p.tolist() for p in local.predict(Xt)]
    for a, b in zip(remote.predict_marginals(Xt[:10]), local.predict_marginals(Xt[:10])):
        np.testing.assert_allclose(a, b, atol=1e-8)


def test_cluster_corpus_rejects_bad_input(healthy):
    db = pytest.importorskip("dask.bag")
    from sklearn_struct.cluster_corpus import ClusterCorpus
    from sklearn_struct.preprocessing import SequenceVectorizer, WindowFeaturizer

    X, y = _tagged_corpus(n_seq=20)
    good = ClusterCorpus(db.from_sequence(list(zip(_as_dicts(X), y)), npartitions=2), SequenceVectorizer())
    with pytest.raises(ValueError, match="no dask cluster"):
        ChainCRF().fit(good)
    for bad, match in [(([], SequenceVectorizer()), "empty list of loaders"), (("abc", SequenceVectorizer()), "Bag"),
                       (([1], SequenceVectorizer()), r"source\[0\] is not callable"),
                       ((db.from_sequence([1]), object()), "featurizer"),
                       ((db.from_sequence([1]), SequenceVectorizer(sparse=False)), "sparse")]:
        with pytest.raises(ValueError, match=match):
            ClusterCorpus(*bad)
    with joblib.parallel_backend("dask"):
        for est, kwargs, match in [(ChainCRF(), {"y": y}, "y is not supported"),
                                   (ChainCRF(algorithm="ap"), {}, "algorithm='lbfgs'"),
                                   (ChainCRF(class_weight="balanced"), {}, "class_weight"),
                                   (ChainCRF(allowed_transitions="BIO"), {}, "allowed_transitions_in_fit=False"),
                                   (ChainCRF(allowed_transitions=np.ones((9, 9), bool), allowed_transitions_in_fit=False),
                                    {}, "allowed_transitions must be")]:
            with pytest.raises(ValueError, match=match):
                est.fit(good, **kwargs)
        cases = [(db.from_sequence([], npartitions=1), "the corpus is empty"),
                 (db.from_sequence([(X[0], y[0][:-1])] + list(zip(X[1:], y[1:])), npartitions=2),
                  r"shard 0, sequence 0: \d+ tokens but \d+ labels"),
                 (db.from_sequence([X[0]], npartitions=1), r"shard 0, sequence 0: expected a \(tokens, labels\)")]
        for bag, match in cases:
            with pytest.raises(ValueError, match=match):
                ChainCRF().fit(ClusterCorpus(bag, WindowFeaturizer()))


# ---------------------------------------------------------------------------- the crfsuite drop-in on a corpus
def _crfsuite_corpus(n_seq=60, seed=3):
    """python-crfsuite feature dicts (str, number, nested dict, list values) with BIO-like string labels."""
    X, y = _tagged_corpus(n_seq=n_seq, seed=seed)
    X = [[{"w": w, "pos": p, "len": len(w), "shape": {"upper": w[:1].isupper(), "digit": w[-1:].isdigit()},
           "sfx": [w[-1:]], "bias": 1.0} for w, p in seq] for seq in X]
    return X, y


@pytest.mark.parametrize("params", [dict(c2=0.1), dict(c1=0.05, c2=0.01, min_freq=2, all_possible_transitions=True,
                                                       allowed_transitions="BIO", allowed_transitions_in_fit=False)],
                         ids=["default", "owlqn-minfreq-bio"])
def test_crfsuite_crf_fits_a_bag_of_feature_dicts_as_it_fits_locally(healthy, monkeypatch, tmp_path, params):
    db = pytest.importorskip("dask.bag")
    from sklearn_struct.cluster_corpus import ClusterCorpus
    from sklearn_struct.crfsuite import CRF

    X, y = _crfsuite_corpus()
    params = dict(params, max_iterations=10)
    local = CRF(**params, model_filename=str(tmp_path / "local.npz")).fit(X, y)
    corpus = ClusterCorpus(db.from_sequence(list(zip(X, y)), npartitions=3))
    meter = _Meter(healthy, monkeypatch)
    with joblib.parallel_backend("dask"):
        remote = CRF(**params, model_filename=str(tmp_path / "remote.npz")).fit(corpus)
    prep, later, theta = _corpus_maps(meter)
    assert len(later) >= 3 and np.all(later <= 3 * theta + 8000), (later, theta)  # only theta on the wire
    # labels in first appearance (not sorted), attributes in first appearance, as the local drop-in numbers them
    assert remote.classes_ == local.classes_ == list(dict.fromkeys(lab for seq in y for lab in seq))
    assert remote.classes_ != sorted(remote.classes_)
    assert remote.attributes_ == local.attributes_ and corpus.featurizer_.labels_ == local.classes_
    assert corpus.n_sequences_ == len(X) and corpus.n_tokens_ == sum(map(len, X))
    assert remote.estimator_.n_iter_ == local.estimator_.n_iter_
    for name in ("coef_", "transition_"):
        np.testing.assert_allclose(getattr(remote.estimator_, name), getattr(local.estimator_, name), rtol=1e-9,
                                   atol=1e-10)
    assert np.array_equal(remote.estimator_.classes_, local.estimator_.classes_)
    for name in ("state_features_", "transition_features_"):
        ours, theirs = getattr(remote, name), getattr(local, name)
        assert ours.keys() == theirs.keys()
        np.testing.assert_allclose([ours[k] for k in theirs], list(theirs.values()), rtol=1e-9, atol=1e-10)
    X_test, _ = _crfsuite_corpus(n_seq=15, seed=4)
    assert remote.predict(X_test) == local.predict(X_test)
    for a, b in zip(remote.predict_proba(X_test), local.predict_proba(X_test)):
        np.testing.assert_allclose(a, b, atol=1e-8)
    if "allowed_transitions" in params:
        assert np.array_equal(remote.estimator_.allowed_transitions_.transitions,
                              local.estimator_.allowed_transitions_.transitions)
        assert _invalid_bio(remote.predict(X_test)) == 0
    # the model files: as after a local fit
    mask = {k: params[k] for k in ("allowed_transitions",) if k in params}
    reloaded, reloaded_local = (CRF(model_filename=str(tmp_path / f"{name}.npz"), **mask)
                                for name in ("remote", "local"))
    assert reloaded.predict(X_test) == remote.predict(X_test) == reloaded_local.predict(X_test)
    assert reloaded.classes_ == local.classes_ and reloaded.attributes_ == local.attributes_
    assert reloaded.size_ == remote.size_ == local.size_


def test_crfsuite_crf_on_a_corpus_rejects_what_the_cluster_cannot_do(healthy):
    db = pytest.importorskip("dask.bag")
    from sklearn_struct.cluster_corpus import ClusterCorpus
    from sklearn_struct.crfsuite import CRF
    from sklearn_struct.preprocessing import SequenceVectorizer

    X, y = _crfsuite_corpus(n_seq=10)
    bag = db.from_sequence(list(zip(X, y)), npartitions=2)
    with joblib.parallel_backend("dask"):
        for crf, kwargs, match in [(CRF(algorithm="l2sgd"), {}, "algorithm='l2sgd'"),
                                   (CRF(class_weight="balanced"), {}, "class_weight"),
                                   (CRF(), {"y": y}, "y is not supported"),
                                   (CRF(), {"sample_weight": np.ones(10)}, "sample_weight"),
                                   (CRF(allowed_transitions="BIO"), {}, "allowed_transitions_in_fit=False")]:
            with pytest.raises(ValueError, match=match):
                crf.fit(ClusterCorpus(bag), **kwargs)
        with pytest.raises(ValueError, match="featurizer must be None"):
            CRF().fit(ClusterCorpus(bag, SequenceVectorizer()))
        with pytest.raises(ValueError, match="needs its featurizer"):
            ChainCRF().fit(ClusterCorpus(bag))
        partial_labels = [list(y[0][:-1]) + [None]] + y[1:]
        with pytest.raises(ValueError, match=r"shard 0: y, sequence 0: partial labels"):
            CRF().fit(ClusterCorpus(db.from_sequence(list(zip(X, partial_labels)), npartitions=2)))
        with pytest.raises(ValueError, match=r"shard 1: y, sequence 0: 1 labels for \d+ tokens"):
            CRF().fit(ClusterCorpus(db.from_sequence(list(zip(X, y[:5] + [["O"]] + y[6:])), npartitions=2)))
        # no attribute at all: transitions only, as the local fit
        X_empty, y_ab = [[{}] * 3, [{}] * 2] * 3, [["a", "b", "a"], ["b", "a"]] * 3
        remote = CRF(c2=0.1).fit(ClusterCorpus(db.from_sequence(list(zip(X_empty, y_ab)), npartitions=2)))
    local = CRF(c2=0.1).fit(X_empty, y_ab)
    assert remote.attributes_ == [] and remote.transition_features_.keys() == local.transition_features_.keys()
    np.testing.assert_allclose(list(remote.transition_features_.values()), list(local.transition_features_.values()),
                               rtol=1e-9)


_DOC = Path(__file__).resolve().parents[1] / "doc" / "scaling_out.md"
_SCRIPTS = [b for b in re.findall(r"```python\n(.*?)```", _DOC.read_text(), flags=re.S) if "ClusterCorpus(" in b]


@pytest.mark.parametrize("block", _SCRIPTS, ids=[f"script{i}" for i in range(len(_SCRIPTS))])
def test_scaling_out_page_cluster_corpus_example_runs(block, tmp_path):
    """The page's end-to-end example (files read on the workers of a LocalCluster) runs as pasted."""
    assert "LocalCluster" in block
    script = tmp_path / "example.py"
    script.write_text(block)
    proc = run_cpu_bounded([sys.executable, str(script)], cpu_seconds=300, cwd=tmp_path, capture_output=True,
                           text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip()
    print(proc.stdout)
