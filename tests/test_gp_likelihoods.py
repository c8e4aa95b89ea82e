"""GPStructClassifier's likelihood objects (sklearn_struct._gp_likelihoods): every call site asks the
object chosen by name in fit, so a likelihood is one class; checked by a delegating class that must
reproduce the chain model bit for bit while every method of it is called."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import GPStructClassifier
from sklearn_struct._gp_likelihoods import CHAIN, LIKELIHOODS, PIECEWISE, Likelihood
from sklearn_struct.datasets import make_chain_data

METHODS = ("sample_loglik", "map_objective", "node_marginals", "sample_marginals", "decode")


class _Delegating(Likelihood):
    """A third likelihood written as one class: the chain's, with a count of the calls of each method."""

    name = "chain"

    def __init__(self):
        self.calls = dict.fromkeys(METHODS, 0)

    def __getattribute__(self, attr):
        if attr in METHODS:
            calls = object.__getattribute__(self, "calls")
            calls[attr] += 1
            return getattr(CHAIN, attr)
        return object.__getattribute__(self, attr)


def _fit_all(X, y, **kw):
    gp = GPStructClassifier(n_inducing=8, n_samples=10, max_iter=1, n_predict_samples=10, random_state=0, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp.fit(X[:12], y[:12])
    out = [gp.elbo_curve_, gp.params_.get_unary(), gp.params_.get_pair(), *gp.predict_marginals(X[12:])]
    out += gp.set_params(decode="viterbi_mean").predict(X[12:])
    return out


@pytest.mark.parametrize("optimizer, blocks", [("lbfgs", (2, 1, 0)), ("saga", (6, 3, 0))])
def test_every_call_site_dispatches_to_the_likelihood_object(monkeypatch, optimizer, blocks):
    X, y = make_chain_data(16, n_labels=3, n_features=4, min_length=2, max_length=6, random_state=1)
    kw = dict(optimizer=optimizer, block_iters=blocks, amplitude="cv", init="map", batch_size=3)
    reference = _fit_all(X, y, **kw)
    spy = _Delegating()
    monkeypatch.setitem(LIKELIHOODS, "chain", spy)
    got = _fit_all(X, y, **kw)
    assert all(spy.calls[m] > 0 for m in METHODS), spy.calls
    assert len(got) == len(reference)
    for a, b in zip(got, reference):
        np.testing.assert_array_equal(a, b)


def test_likelihoods_are_stateless_and_pickle_as_their_class():
    for name, lik in LIKELIHOODS.items():
        assert lik.name == name and vars(lik) == {}
        assert type(pickle.loads(pickle.dumps(lik))) is type(lik)
    assert set(GPStructClassifier._parameter_constraints["likelihood"][0].options) == set(LIKELIHOODS)


def test_decoders_and_marginals_agree():
    """Each likelihood's decode is the argmax of its own node marginals on scores with clear maxima,
    and averaging sample marginals over identical samples gives the node marginals."""
    rng = np.random.RandomState(0)
    unary, mb, offsets = 3 * rng.normal(size=(7, 3)), rng.normal(size=(3, 3)), np.array([0, 4, 7])
    for lik in (CHAIN, PIECEWISE):
        node = lik.node_marginals(unary, mb, offsets)
        np.testing.assert_allclose(node.sum(axis=1), 1.0, rtol=1e-12)
        if lik is PIECEWISE:  # token by token: its decoder is the marginals' argmax exactly
            np.testing.assert_array_equal(lik.decode(unary, mb, offsets), node.argmax(axis=1))
        f = np.repeat(unary[:4].T[None, :, :, None], 2, axis=3)  # (1, Q, T, 2): one sequence, 2 equal samples
        fbin = np.repeat(mb[None, :, :, None], 2, axis=3)
        np.testing.assert_allclose(lik.sample_marginals(f, fbin), node[:4], rtol=1e-10, atol=1e-12)
