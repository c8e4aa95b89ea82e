"""NonLocalCRF ``allowed_transitions_in_fit=False``: the plain base CRF, ``allowed_transitions`` in every inference.

The base CRF (and the held-out base CRFs of ``psi_holdout``) must be exactly the fit without
``allowed_transitions``; every inference path (predict, predict_marginals, infer, predict_topk,
sequence_log_proba, ``fixed=``) must equal enumeration over the allowed labellings only, and the psi
step of ``fit`` must infer under the mask, as ``predict`` does.
"""

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from sklearn.base import clone

import sklearn_struct._psi_learning as psi_learning
import sklearn_struct.nonlocal_crf as nonlocal_crf
from sklearn_struct import ChainCRF, NonLocalCRF
from sklearn_struct.constraints import AtMostSegments, AtMostTokens, FirstLabel

from test_nonlocal_structure import (CHUNKS, START_OK, _bio_data, _bio_transitions, _inputs, _invalid,
                                     check_base_against_enumeration, check_nonlocal_against_enumeration)

DECODE = {"allowed_transitions": "BIO", "allowed_transitions_in_fit": False}
ENERGY = [AtMostSegments("B-NP", 1), FirstLabel("O"), AtMostTokens("I-VP", 1)]


def _broken(n, seed, noise=1.2):
    """BIO data with an I- opening sequence 3: training with the mask refuses it, decoding-only does not."""
    X, Y = _bio_data(n, seed, noise)
    Y = [y.copy() for y in Y]
    Y[3][0] = "I-NP"
    return X, Y


def _same_base(a, b):
    for name in ("classes_", "coef_", "intercept_", "transition_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.n_iter_ == b.n_iter_ and a.objective_ == b.objective_


@pytest.fixture(scope="module")
def models():
    X, Y = _broken(60, 0)
    plain = NonLocalCRF(c2=1.0, **DECODE).fit(X, Y)
    nonlocal_ = NonLocalCRF(ENERGY, c2=1.0, psi_init=2.0, n_epochs=1, random_state=0, **DECODE).fit(X, Y)
    return X, Y, plain, nonlocal_


def test_base_crf_is_exactly_the_plain_fit(models):
    X, Y, plain, nonlocal_ = models
    reference = NonLocalCRF(c2=1.0).fit(X, Y)
    _same_base(plain, reference)
    _same_base(nonlocal_, reference)  # the base CRF does not depend on the energy
    assert plain.allowed_transitions_in_fit is False
    np.testing.assert_array_equal(plain.allowed_transitions_.transitions, _bio_transitions())
    np.testing.assert_array_equal(plain.allowed_transitions_.start, START_OK)
    assert np.any(plain.transition_[~_bio_transitions()] != 0)  # plain weights there; ChainCRF's masked fit has 0
    # the same as ChainCRF's decoding-only option, up to float sums (its own weights equal its plain fit's)
    chain = ChainCRF(c2=1.0, **DECODE).fit(X, Y)
    np.testing.assert_allclose(plain.coef_, chain.coef_, atol=1e-10)
    np.testing.assert_allclose(plain.transition_, chain.transition_, atol=1e-10)
    weights = np.random.RandomState(0).randint(1, 4, size=len(X))
    _same_base(NonLocalCRF(c2=1.0, **DECODE).fit(X, Y, sample_weight=weights),
               NonLocalCRF(c2=1.0).fit(X, Y, sample_weight=weights))
    ignored = NonLocalCRF(c2=1.0, allowed_transitions_in_fit=False).fit(X, Y)  # no mask: the option is moot
    _same_base(ignored, reference)
    assert ignored.allowed_transitions_ is None


@pytest.mark.parametrize("in_fit", [False, True])
def test_held_out_base_crfs_are_plain_and_psi_is_learned_under_the_mask(monkeypatch, in_fit):
    X, Y = _bio_data(30, 1)
    fits, psi_chains = [], []
    fit_chain = nonlocal_crf.fit_chain_algorithm
    infer = psi_learning.bethe_inference

    def spy_fit(*args, constraints=None, **kwargs):
        fits.append(constraints)
        return fit_chain(*args, constraints=constraints, **kwargs)

    def spy_infer(unary, trans, offsets, *args, **kwargs):
        psi_chains.append((unary[offsets[:-1]], trans))
        return infer(unary, trans, offsets, *args, **kwargs)

    monkeypatch.setattr(nonlocal_crf, "fit_chain_algorithm", spy_fit)
    monkeypatch.setattr(psi_learning, "bethe_inference", spy_infer)
    NonLocalCRF(ENERGY, c2=1.0, n_epochs=1, psi_holdout=3, random_state=0, allowed_transitions="BIO",
                allowed_transitions_in_fit=in_fit).fit(X, Y)
    assert len(fits) == 4  # the full-data base CRF and the three held-out ones
    assert all((c is None) != in_fit for c in fits)
    assert psi_chains
    forbidden = ~_bio_transitions()
    for first, trans in psi_chains:  # every psi-step inference: forbidden starts and transitions at -inf
        assert np.all(first[:, ~START_OK] == -np.inf)
        assert np.all(trans[..., forbidden] == -np.inf)


def test_training_sequences_need_not_obey_the_mask_and_every_psi_learner_decodes_within_it(models):
    X, Y, plain, _ = models
    with pytest.raises(ValueError, match="Sequence 3 has no label sequence"):
        NonLocalCRF(allowed_transitions="BIO").fit(X, Y)
    rng = np.random.RandomState(7)
    Xt = [rng.randn(rng.randint(1, 8), 5) * 4 for _ in range(80)]
    energy = [AtMostSegments("B-NP", 1), AtMostTokens("I-VP", 1)]
    common = dict(c2=1.0, n_epochs=1, random_state=0, **DECODE)
    assert sum(map(_invalid, NonLocalCRF(energy, c2=1.0, n_epochs=1, random_state=0).fit(X, Y).predict(Xt))) > 0
    for extra in ({}, {"psi_gradient": "exact"}, {"psi_gradient": "perceptron"}, {"learn_theta": True},
                  {"psi_gate": "probability", "n_gate_samples": 10}, {"inference": "accelerated"}):
        model = NonLocalCRF(energy, **common, **extra).fit(X, Y)
        assert np.all(np.isfinite(model.psi_)), extra
        if not extra.get("learn_theta"):
            _same_base(model, plain)
        assert not any(map(_invalid, model.predict(Xt))), extra
        assert not any(map(_invalid, model.infer(Xt[:20]).labels)), extra
        for y_topk in model.predict_topk(Xt[:10], 3)[0]:
            assert not any(map(_invalid, y_topk)), extra


@settings(max_examples=30, deadline=None)
@given(_inputs())
def test_base_model_against_enumeration(models, problem):
    check_base_against_enumeration(models[2], problem)


@pytest.fixture(scope="module")
def converged(models):
    return copy.deepcopy(models[3]).set_params(inference="md", inference_max_iter=3000, inference_tol=1e-10)


@settings(max_examples=10, deadline=None)
@given(_inputs())
def test_nonlocal_model_against_enumeration(models, converged, problem):
    check_nonlocal_against_enumeration(models[3], converged, problem)


def test_pickle_and_clone_keep_the_option(models):
    X, _, _, model = models
    loaded = pickle.loads(pickle.dumps(model))
    assert loaded.allowed_transitions_in_fit is False
    assert clone(model).get_params()["allowed_transitions_in_fit"] is False
    for a, b in zip(loaded.predict(X[:10]), model.predict(X[:10])):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(loaded.predict_marginals(X[:10]), model.predict_marginals(X[:10])):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(loaded.sequence_log_proba(X[:5], [["I-NP"] * len(x) for x in X[:5]]),
                                  np.full(5, -np.inf))


@pytest.mark.parametrize("bad", ["no", 0, None, np.array([True]), float("nan")])
def test_bad_values_are_named(models, bad):
    X, Y, _, _ = models
    with pytest.raises(ValueError, match="allowed_transitions_in_fit"):
        NonLocalCRF(allowed_transitions="BIO", allowed_transitions_in_fit=bad).fit(X, Y)


def test_infer_tree_still_refuses_the_mask(models):
    X, _, plain, _ = models
    with pytest.raises(ValueError, match="infer_tree: allowed_transitions"):
        plain.infer_tree(X[0], np.array([[0, 1]] + [[0, i] for i in range(2, len(X[0]))]))
