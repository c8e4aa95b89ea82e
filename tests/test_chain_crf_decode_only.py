"""``allowed_transitions_in_fit=False``: the plain model's fit, ``allowed_transitions`` at decoding only.

The fit must give exactly the weights of a fit without ``allowed_transitions``; every inference path
(predict, predict_marginals, predict_edge_marginals, predict_topk, sequence_log_proba, ``fixed=``,
explain_prediction) must then equal enumeration over the allowed label sequences only.
"""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import ChainCRF
from sklearn_struct.crfsuite import CRF
from sklearn_struct.exceptions import ModelFileError
from sklearn_struct.explain import explain_prediction
from sklearn_struct.utils._model_file import save_model_file

from test_chain_crf_structure import _bio_data, _invalid_bio, _wild_inputs
from test_model_file_masks import _contents

DECODE = {"allowed_transitions_in_fit": False}


def _same_fit(a, b):
    for name in ("coef_", "intercept_", "transition_", "classes_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.n_iter_ == b.n_iter_ and a.objective_ == b.objective_
    assert [r["loss"] for r in a.training_log_] == [r["loss"] for r in b.training_log_]


def _random_structure(rng, L):
    """A random (transitions, start, end) that label 0 ("O") keeps feasible at every length."""
    transitions, start, end = rng.rand(L, L) < 0.6, rng.rand(L) < 0.6, rng.rand(L) < 0.6
    transitions[0, 0] = start[0] = end[0] = True
    return transitions, start, end


@pytest.mark.parametrize("allowed", ["BIO", "mask", "tuple"])
def test_fit_is_exactly_the_plain_fit(allowed):
    X, Y = _bio_data(60, 7)
    if allowed != "BIO":
        L = len(np.unique(np.concatenate(Y)))
        parts = _random_structure(np.random.RandomState(0), L)
        allowed = parts[0] if allowed == "mask" else parts
    weights = np.random.RandomState(1).randint(1, 4, size=len(X))
    dev = {"X_dev": X[:5], "y_dev": Y[:5]}
    plain = ChainCRF(c2=0.5).fit(X, Y, sample_weight=weights, **dev)
    decode = ChainCRF(c2=0.5, allowed_transitions=allowed, **DECODE).fit(X, Y, sample_weight=weights, **dev)
    _same_fit(plain, decode)
    assert [r["dev_loss"] for r in plain.training_log_] == [r["dev_loss"] for r in decode.training_log_]
    assert decode.allowed_transitions_ is not None
    trained = ChainCRF(c2=0.5, allowed_transitions="BIO").fit(X, Y)
    assert not np.array_equal(trained.coef_, plain.coef_)  # the option matters: a different model otherwise


def test_partial_labels_and_warm_start_fit_the_plain_model():
    X, Y = _bio_data(60, 8)
    rng = np.random.RandomState(0)
    hidden = [np.array([v if rng.rand() < 0.6 else None for v in y], dtype=object) for y in Y]
    _same_fit(ChainCRF(c2=1.0).fit(X, hidden), ChainCRF(c2=1.0, allowed_transitions="BIO", **DECODE).fit(X, hidden))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = ChainCRF(c2=1.0, max_iter=5, warm_start=True).fit(X, Y).fit(X, Y)
        b = ChainCRF(c2=1.0, max_iter=5, warm_start=True, allowed_transitions="BIO", **DECODE).fit(X, Y).fit(X, Y)
    _same_fit(a, b)


def test_online_algorithms_are_unchanged():
    X, Y = _bio_data(40, 9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = ChainCRF(algorithm="ap", max_iter=3, allowed_transitions="BIO").fit(X, Y)
        b = ChainCRF(algorithm="ap", max_iter=3, allowed_transitions="BIO", **DECODE).fit(X, Y)
    _same_fit(a, b)


def test_training_sequences_need_not_obey_the_mask_at_decoding_only():
    X, Y = _bio_data(40, 10)
    Y = [y.copy() for y in Y]
    Y[3][0] = "I-NP"  # an I- opening a sequence: invalid BIO
    with pytest.raises(ValueError, match="Sequence 3 has no label sequence"):
        ChainCRF(allowed_transitions="BIO").fit(X, Y)
    model = ChainCRF(c2=1.0, allowed_transitions="BIO", **DECODE).fit(X, Y)
    _same_fit(model, ChainCRF(c2=1.0).fit(X, Y))
    assert _invalid_bio(model.predict(_wild_inputs(100, 2))) == 0


def test_decode_only_removes_invalid_chunks_where_the_plain_model_has_them():
    X, Y = _bio_data(150, 0, noise=1.6)
    Xt = _wild_inputs(300, 1)
    plain = ChainCRF(c2=1.0).fit(X, Y)
    decode = ChainCRF(c2=1.0, allowed_transitions="BIO", **DECODE).fit(X, Y)
    assert _invalid_bio(plain.predict(Xt)) > 0 and _invalid_bio(decode.predict(Xt)) == 0
    for y_topk in decode.predict_topk(Xt[:40], 5)[0]:
        assert _invalid_bio(list(y_topk)) == 0
    # sequences valid under the plain model decode the same
    same = [i for i, p in enumerate(plain.predict(Xt)) if _invalid_bio([p]) == 0]
    assert all(np.array_equal(plain.predict([Xt[i]])[0], decode.predict([Xt[i]])[0]) for i in same[:50])


def _enumerate(model, x):
    """Every labelling of ``x``, its score and whether the model's mask allows it."""
    L = len(model.classes_)
    unary = x @ model.coef_ + model.intercept_
    n = x.shape[0]
    paths = np.array(list(itertools.product(range(L), repeat=n)))
    scores = unary[np.arange(n), paths].sum(axis=1) + model.transition_[paths[:, :-1], paths[:, 1:]].sum(axis=1)
    s = model.allowed_transitions_
    ok = s.start[paths[:, 0]] & s.end[paths[:, -1]] & s.transitions[paths[:, :-1], paths[:, 1:]].all(axis=1)
    return paths, scores, ok


def _marginals(paths, logp, n, L):
    p = np.exp(logp)
    return np.stack([np.bincount(paths[:, t], p, minlength=L) for t in range(n)])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_every_inference_path_equals_enumeration_over_the_allowed_sequences(seed):
    rng = np.random.RandomState(seed)
    L = rng.randint(2, 5)
    X = [rng.randn(rng.randint(1, 5), 3) for _ in range(8)]
    Y = [rng.randint(0, L, size=len(x)) for x in X]
    Y[0] = np.arange(L)  # every label seen
    X[0] = rng.randn(L, 3)
    structure = _random_structure(rng, L)
    plain = ChainCRF(c2=0.3).fit(X, Y)
    model = ChainCRF(c2=0.3, allowed_transitions=structure, **DECODE).fit(X, Y)
    _same_fit(plain, model)
    forbidden = ~structure[0]
    for _ in range(2):
        n = rng.randint(1, 5)
        x = rng.randn(n, 3) * 2
        paths, scores, ok = _enumerate(model, x)
        paths, scores = paths[ok], scores[ok]
        logp = scores - logsumexp(scores)
        best = paths[np.argmax(logp)]
        np.testing.assert_array_equal(model.predict([x])[0], best)
        marg = model.predict_marginals([x])[0]
        want = _marginals(paths, logp, n, L)
        np.testing.assert_allclose(marg, want, atol=1e-10)
        assert np.all(marg[want == 0] == 0.0)  # a label no allowed sequence has there: exactly 0
        np.testing.assert_allclose(model.predict_proba([x])[0], want, atol=1e-10)
        if n > 1:
            edge = model.predict_edge_marginals([x])[0]
            assert np.all(edge[:, forbidden] == 0.0)
            for t in range(n - 1):
                want_edge = np.zeros((L, L))
                np.add.at(want_edge, (paths[:, t], paths[:, t + 1]), np.exp(logp))
                np.testing.assert_allclose(edge[t], want_edge, atol=1e-10)
        k = min(6, len(paths))
        order = np.argsort(-logp, kind="stable")
        y_topk, log_proba = model.predict_topk([x], k=6)
        np.testing.assert_allclose(log_proba[0], logp[order[:k]], atol=1e-9)
        assert y_topk[0].shape == (k, n)
        for row, lp in zip(y_topk[0], log_proba[0]):
            assert np.isclose(logp[(paths == row).all(axis=1)][0], lp, atol=1e-9)
        every = model.predict_topk([x], k=L ** n)[1][0]
        assert len(every) == len(paths) and np.isclose(logsumexp(every), 0.0)
        anything = rng.randint(0, L, size=n)
        is_allowed = (paths == anything).all(axis=1).any()
        got = model.sequence_log_proba([x], [anything])[0]
        assert got == -np.inf if not is_allowed else np.isclose(got, logp[(paths == anything).all(axis=1)][0])
        # fixed: token t given a label some allowed sequence has there
        t = rng.randint(n)
        lab = paths[rng.randint(len(paths)), t]
        keep = paths[:, t] == lab
        fixed = [[lab if s == t else None for s in range(n)]]
        np.testing.assert_array_equal(model.predict([x], fixed=fixed)[0], paths[keep][np.argmax(logp[keep])])
        cond = logp[keep] - logsumexp(logp[keep])
        np.testing.assert_allclose(model.predict_marginals([x], fixed=fixed)[0], _marginals(paths[keep], cond, n, L),
                                   atol=1e-10)
        ex = explain_prediction(model, x)
        assert list(ex.labels) == list(best)
        assert np.isclose(ex.log_probability, logp.max(), atol=1e-9)
        for s, tok in enumerate(ex.tokens):
            assert np.isclose(tok.chosen.marginal, want[s, tok.chosen.label], atol=1e-10)
            assert tok.runner_up.marginal == pytest.approx(want[s, tok.runner_up.label], abs=1e-10)


def test_explain_follows_the_mask_and_the_runner_up_is_an_allowed_label():
    X, Y = _bio_data(150, 0, noise=1.6)
    plain = ChainCRF(c2=1.0).fit(X, Y)
    decode = ChainCRF(c2=1.0, allowed_transitions="BIO", **DECODE).fit(X, Y)
    Xt = [x for x in _wild_inputs(300, 1) if _invalid_bio([plain.predict([x])[0]])][:10]
    assert Xt
    s = decode.allowed_transitions_
    index = {c: k for k, c in enumerate(decode.classes_)}
    for x in Xt:
        ex = explain_prediction(decode, x)
        assert list(ex.labels) == list(decode.predict([x])[0]) and _invalid_bio([ex.labels]) == 0
        assert np.isclose(ex.log_probability, decode.sequence_log_proba([x], [ex.labels])[0])
        path = [index[c] for c in ex.labels]
        for t, tok in enumerate(ex.tokens):
            def fits(r):  # label r at token t, with the predicted neighbours, is allowed
                return (s.start[r] if t == 0 else s.transitions[path[t - 1], r]) and \
                    (s.end[r] if t == len(path) - 1 else s.transitions[r, path[t + 1]])
            others = [r for r in range(len(index)) if r != path[t]]
            assert fits(index[tok.runner_up.label]) or not any(fits(r) for r in others)
        assert _invalid_bio([explain_prediction(plain, x).labels]) > 0  # the plain model's explanation is not masked


def test_save_load_round_trips_the_option(tmp_path):
    X, Y = _bio_data(40, 11)
    Xt = _wild_inputs(60, 3)
    mask = ChainCRF(allowed_transitions="BIO").fit(X[:5], Y[:5]).allowed_transitions_.transitions
    for allowed in ("BIO", mask):
        model = ChainCRF(c2=1.0, allowed_transitions=allowed, **DECODE).fit(X, Y)
        model.save(tmp_path / "m.npz")
        loaded = ChainCRF.load(tmp_path / "m.npz")
        assert loaded.allowed_transitions_in_fit is False
        assert _contents(tmp_path / "m.npz")[1]["version"] == 4  # a parameter: no new format version
        assert [list(p) for p in loaded.predict(Xt)] == [list(p) for p in model.predict(Xt)]
        np.testing.assert_array_equal(np.concatenate(loaded.predict_marginals(Xt)),
                                      np.concatenate(model.predict_marginals(Xt)))
        refit = clone(loaded).fit(X, Y)  # the option survives: a refit is the plain fit again
        _same_fit(refit, model)


def _forge_params(src, dst, edit):
    arrays, meta = _contents(src)
    meta["params"] = edit(dict(meta["params"]))
    version = meta.pop("version")
    meta.pop("format"), meta.pop("sha256")
    save_model_file(dst, "sklearn_struct.ChainCRF", version, arrays, meta)
    return dst


def test_old_files_load_with_the_mask_in_fit_and_hostile_values_are_refused(tmp_path):
    X, Y = _bio_data(40, 12)
    model = ChainCRF(c2=1.0, allowed_transitions="BIO").fit(X, Y)
    model.save(tmp_path / "m.npz")
    old = _forge_params(tmp_path / "m.npz", tmp_path / "old.npz",
                        lambda p: {k: v for k, v in p.items() if k != "allowed_transitions_in_fit"})
    loaded = ChainCRF.load(old)  # written before the option existed: trained with the mask
    assert loaded.allowed_transitions_in_fit is True
    assert [list(p) for p in loaded.predict(X)] == [list(p) for p in model.predict(X)]
    for bad in ("no", 0, 1.5, None, [False]):
        path = _forge_params(tmp_path / "m.npz", tmp_path / "bad.npz",
                             lambda p: dict(p, allowed_transitions_in_fit=bad))
        with pytest.raises(ModelFileError, match="allowed_transitions_in_fit") as info:
            ChainCRF.load(path)
        assert str(path) in str(info.value)


@pytest.mark.parametrize("bad", ["no", 0, 1, None, np.array([True])])
def test_bad_option_values_get_a_named_error(bad):
    X, Y = _bio_data(10, 13)
    with pytest.raises(ValueError, match="allowed_transitions_in_fit"):
        ChainCRF(allowed_transitions="BIO", allowed_transitions_in_fit=bad).fit(X, Y)
    if bad is not None:  # None is crfsuite.CRF's default (True)
        with pytest.raises(ValueError, match="allowed_transitions_in_fit"):
            CRF(allowed_transitions="BIO", allowed_transitions_in_fit=bad).fit([[{"a": 1.0}]], [["O"]])
    with pytest.raises(ValueError, match="allowed_transitions"):  # a bad mask is still refused at fit
        ChainCRF(allowed_transitions=np.ones((2, 2), dtype=bool), **DECODE).fit(X, Y)


def test_crfsuite_crf_passes_the_option_through():
    X, Y = _bio_data(60, 14, noise=1.6)
    names = [f"f{j}" for j in range(5)]
    Xd = [[dict(zip(names, row)) for row in x] for x in X]
    Yl = [list(y) for y in Y]
    Xt = [[dict(zip(names, row)) for row in x] for x in _wild_inputs(200, 4)]
    plain = CRF(c2=1.0).fit(Xd, Yl)
    decode = CRF(c2=1.0, allowed_transitions="BIO", allowed_transitions_in_fit=False).fit(Xd, Yl)
    trained = CRF(c2=1.0, allowed_transitions="BIO").fit(Xd, Yl)
    assert decode.state_features_ == plain.state_features_ and decode.transition_features_ == plain.transition_features_
    assert trained.state_features_ != plain.state_features_
    assert _invalid_bio(plain.predict(Xt)) > 0 and _invalid_bio(decode.predict(Xt)) == 0
    assert _invalid_bio([decode.predict_single(x) for x in Xt]) == 0
    for y_topk in decode.predict_topk(Xt[:30], 4)[0]:
        assert _invalid_bio(y_topk) == 0
    ex = explain_prediction(decode, Xt[0])
    assert ex.labels == decode.predict(Xt[:1])[0]
