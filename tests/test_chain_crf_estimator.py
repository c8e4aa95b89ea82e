"""ChainCRF: the plain chain CRF as its own estimator (edge marginals, warm start, save/load, progress)."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline

from sklearn_struct import ChainCRF
from sklearn_struct.datasets import make_chain_data
from sklearn_struct.oracles.chain import viterbi
from sklearn_struct.preprocessing import SequenceVectorizer
from sklearn_struct.utils import pack_sequences


@pytest.fixture(scope="module")
def data():
    X, y, params = make_chain_data(400, n_labels=3, n_features=5, return_params=True, random_state=3)
    return X[:300], y[:300], X[300:], y[300:], params


@pytest.fixture(scope="module")
def fitted(data):
    X, y, *_ = data
    return ChainCRF(c2=0.01).fit(X, y)


def _brute_force_pairs(unary, transition):
    """Exact P(y_t, y_{t+1}) by enumerating every labelling."""
    n, L = unary.shape
    pairs, Z = np.zeros((n - 1, L, L)), 0.0
    for lab in itertools.product(range(L), repeat=n):
        w = np.exp(unary[np.arange(n), lab].sum() + sum(transition[a, b] for a, b in zip(lab[:-1], lab[1:])))
        Z += w
        for t in range(n - 1):
            pairs[t, lab[t], lab[t + 1]] += w
    return pairs / Z


def test_learns_the_generating_model(data, fitted):
    X, y, Xt, yt, params = data
    packed, offsets = pack_sequences(Xt)
    bayes, _ = viterbi(packed @ params.coef, params.transition, offsets)  # the generating model's MAP
    assert fitted.score(Xt, yt) > np.mean(bayes == np.concatenate(yt)) - 0.02
    np.testing.assert_allclose(fitted.transition_ - fitted.transition_.mean(),
                               params.transition - params.transition.mean(), atol=0.6)


def test_edge_marginals_are_exact(fitted, data):
    _, _, Xt, _, _ = data
    short = [x for x in Xt if 2 <= x.shape[0] <= 5][:4]
    for x, edge in zip(short, fitted.predict_edge_marginals(short)):
        unary = x @ fitted.coef_ + fitted.intercept_
        np.testing.assert_allclose(edge, _brute_force_pairs(unary, fitted.transition_), atol=1e-10)
    node = fitted.predict_marginals(short)
    for e, m in zip(fitted.predict_edge_marginals(short), node):  # consistent with the node marginals
        np.testing.assert_allclose(e.sum(axis=2), m[:-1], atol=1e-12)


def test_save_and_load_without_pickle(fitted, data, tmp_path):
    _, _, Xt, _, _ = data
    fitted.save(tmp_path / "crf.npz")
    with np.load(tmp_path / "crf.npz", allow_pickle=False) as raw:
        assert set(raw.files) == {"coef", "intercept", "transition", "meta"}  # format 3: classes_ in meta (#34)
    loaded = ChainCRF.load(tmp_path / "crf.npz")
    assert loaded.get_params() == fitted.get_params()
    for a, b in zip(loaded.predict_marginals(Xt), fitted.predict_marginals(Xt)):
        np.testing.assert_array_equal(a, b)
    np.savez(tmp_path / "other.npz", coef=np.zeros(2))
    with pytest.raises(ValueError, match="not a ChainCRF file"):
        ChainCRF.load(tmp_path / "other.npz")


def test_string_labels_round_trip(tmp_path):
    X = [np.eye(2)[[0, 1, 1]], np.eye(2)[[1, 0]]]
    y = [np.array(["a", "b", "b"]), np.array(["b", "a"])]
    crf = ChainCRF(c2=0.01).fit(X, y)
    crf.save(tmp_path / "s.npz")
    assert [list(p) for p in ChainCRF.load(tmp_path / "s.npz").predict(X)] == [["a", "b", "b"], ["b", "a"]]


def test_warm_start_continues_training(data):
    X, y, *_ = data
    with pytest.warns(ConvergenceWarning):
        crf = ChainCRF(c2=0.01, max_iter=3, warm_start=True).fit(X, y)
    first = crf.objective_
    with pytest.warns(ConvergenceWarning):
        crf.fit(X, y)
    assert crf.objective_ < first - 1.0
    full = ChainCRF(c2=0.01).fit(X, y)
    crf.set_params(max_iter=200).fit(X, y)
    assert abs(crf.objective_ - full.objective_) < 1e-3 * abs(full.objective_)
    with pytest.raises(ValueError, match="same features and labels"):
        crf.fit([x[:, :4] for x in X], y)


def test_verbose_and_callback_stop_early(data, capsys):
    X, y, *_ = data
    seen = []

    def callback(iteration, objective, seconds):
        seen.append((iteration, objective, seconds))
        return iteration >= 4

    crf = ChainCRF(c2=0.01, verbose=1, callback=callback).fit(X, y)
    assert crf.n_iter_ == 4 and [s[0] for s in seen] == [1, 2, 3, 4]
    assert all(b[1] < a[1] for a, b in zip(seen, seen[1:]))
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and lines[0].startswith("[ChainCRF] iter    1  objective")


def test_pipeline_from_token_dicts():
    X = [[{"w": w, "suffix": w[-1]} for w in s.split()] for s in ["the cat sat", "a dog ran", "the dog sat"]]
    y = [["D", "N", "V"]] * 3
    model = make_pipeline(SequenceVectorizer(), ChainCRF(c2=0.01)).fit(X, y)
    assert [list(p) for p in model.predict([[{"w": "a"}, {"w": "cat"}, {"w": "ran"}]])] == [["D", "N", "V"]]


def test_a_corpus_without_features_fits_the_transitions_alone():
    """No attribute at all (CRFsuite trains its transition weights then): the model learns the label sequence
    structure from the transitions and intercepts (was an internal 'pair_ptr' error)."""
    from sklearn_struct.crfsuite import CRF

    X = [sp.csr_matrix((n, 0)) for n in (4, 5, 6)]
    y = [np.arange(n) % 2 for n in (4, 5, 6)]  # 0, 1, 0, 1, ...: always starts at 0 and alternates
    model = ChainCRF().fit(X, y)
    assert model.coef_.shape == (0, 2)
    np.testing.assert_array_equal(model.predict([sp.csr_matrix((5, 0))])[0], [0, 1, 0, 1, 0])
    crf = CRF().fit([[{}] * n for n in (4, 5, 6)], [
        [["a", "b"][i % 2] for i in range(n)] for n in (4, 5, 6)])
    assert crf.predict([[{}] * 3]) == [["a", "b", "a"]]
