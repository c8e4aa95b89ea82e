"""GPStructClassifier(likelihood="piecewise"): its decoder (token by token) and the measured
alternative (the chain re-assembled from the pieces, pmi_transitions), against brute-force
enumeration; the chain model's predictions unchanged."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.gaussian_process.kernels import RBF

from sklearn_struct import GPStructClassifier
from sklearn_struct._gp_likelihoods import LIKELIHOODS, PIECEWISE, token_marginals
from sklearn_struct._gp_struct_model import (SparsePrior, VarParams, _per_sequence, map_marginals, pmi_transitions,
                                             sample_marginals)
from sklearn_struct.datasets import make_chain_data
from sklearn_struct.oracles.chain import forward_backward
from sklearn_struct.oracles.chain_samples import _marginals_kernel


def _enumerated_marginals(log_score, Q, T):
    """Node marginals (T, Q) of the distribution ``exp(log_score(y))`` over all ``Q^T`` labelings."""
    paths = list(itertools.product(range(Q), repeat=T))
    w = np.array([log_score(y) for y in paths])
    w = np.exp(w - logsumexp(w))
    out = np.zeros((T, Q))
    for y, wy in zip(paths, w):
        out[np.arange(T), y] += wy
    return out


def _random_problem(seed, Q=3, T=4, scale=2.0):
    rng = np.random.RandomState(seed)
    return scale * rng.normal(size=(T, Q)), scale * rng.normal(size=(Q, Q))


@pytest.mark.parametrize("seed", range(6))
def test_token_decoder_is_the_enumerated_marginal_of_the_unary_pieces(seed):
    """The piecewise decoder: marginals of prod_t softmax(u_t)[y_t] over all labelings, whatever F."""
    u, F = _random_problem(seed)
    T, Q = u.shape
    expected = _enumerated_marginals(lambda y: sum(u[t, y[t]] - logsumexp(u[t]) for t in range(T)), Q, T)
    got = map_marginals(u, F, np.array([0, T]), PIECEWISE)
    np.testing.assert_allclose(got, expected, atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=1), 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_pmi_table_is_the_chain_reassembled_from_calibrated_pieces(seed):
    """pmi_transitions: the bigram joint P = exp F / Z has the edge piece's two trained conditionals, and
    the chain with unaries u and the PMI table has the enumerated marginals of
    prod_t softmax(u_t)[y_t] prod_t P(y_t-1, y_t) / (P_L(y_t-1) P_R(y_t))."""
    u, F = _random_problem(seed)
    T, Q = u.shape
    P = np.exp(F - logsumexp(F))
    np.testing.assert_allclose(P / P.sum(1, keepdims=True), np.exp(F - logsumexp(F, axis=1, keepdims=True)))
    np.testing.assert_allclose(P / P.sum(0, keepdims=True), np.exp(F - logsumexp(F, axis=0, keepdims=True)))
    pl, pr = P.sum(1), P.sum(0)
    np.testing.assert_allclose(pmi_transitions(F), np.log(P / np.outer(pl, pr)), atol=1e-12)
    np.testing.assert_allclose(pmi_transitions(F + 7.0), pmi_transitions(F), atol=1e-12)  # F's free constant

    def log_joint(y):
        unary = sum(u[t, y[t]] - logsumexp(u[t]) for t in range(T))
        return unary + sum(np.log(P[a, b] / (pl[a] * pr[b])) for a, b in zip(y[:-1], y[1:]))

    got = forward_backward(u, pmi_transitions(F), np.array([0, T]))[1]
    np.testing.assert_allclose(got, _enumerated_marginals(log_joint, Q, T), atol=1e-10)


def test_pmi_table_of_independent_labels_is_zero_and_sample_axes_broadcast():
    rng = np.random.RandomState(0)
    a, b = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(pmi_transitions(a[:, None] + b[None, :]), 0.0, atol=1e-12)
    F = rng.normal(size=(2, 3, 3, 5))  # (K, from, to, S), as in the sampled tables
    out = pmi_transitions(F, axes=(1, 2))
    for k, s in itertools.product(range(2), range(5)):
        np.testing.assert_allclose(out[k, :, :, s], pmi_transitions(F[k, :, :, s]), atol=1e-12)


@pytest.mark.parametrize("scale", [1e3, 1e6])
def test_large_potentials_do_not_overflow(scale):
    u, F = _random_problem(1, scale=scale)
    m = token_marginals(u, axis=1)
    assert np.all(np.isfinite(m)) and np.allclose(m.sum(1), 1.0)
    np.testing.assert_array_equal(m.argmax(1), u.argmax(1))
    table = pmi_transitions(F)
    assert np.all(np.isfinite(table))
    assert np.all(np.isfinite(forward_backward(u, table, np.array([0, u.shape[0]]))[1]))


def _tiny_prior_and_params(seed, Q=3, T=4):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(2 * T, 2))
    prior = SparsePrior(RBF(1.0), X[:3], X, np.array([0, T, 2 * T]))
    p = VarParams(2, Q, 3, True)
    p.m = 2.0 * rng.normal(size=p.m.shape)
    p.logd = rng.normal(scale=0.3, size=p.logd.shape) - 0.5
    p.mb = 2.0 * rng.normal(size=p.mb.shape)
    p.log_sb = rng.normal(scale=0.3, size=p.log_sb.shape) - 0.5
    return prior, p


@pytest.mark.parametrize("seed", range(3))
def test_sampled_marginals_average_the_enumerated_marginals_of_each_draw(seed):
    """sample_marginals (both likelihoods): the mean over the same posterior draws of each draw's
    enumerated marginals (piecewise: of the unary pieces; chain: of the chain with the sampled table)."""
    prior, p = _tiny_prior_and_params(seed)
    Q, S = p.Q, 5
    for likelihood in ("piecewise", "chain"):
        got = sample_marginals(prior, p, [0, 1], 2 * S, seed, likelihood=LIKELIHOODS[likelihood])

        def brute(draw, i, likelihood=likelihood):
            f, fbin = draw.f, draw.fbin(p)  # (K, Q, T, S), (K, Q, Q, S)
            T = f.shape[2]
            out = np.zeros((T, Q))
            for k, s in itertools.product(range(p.K), range(S)):
                u, F = f[k, :, :, s].T, fbin[k, :, :, s]
                if likelihood == "chain":
                    def score(y, u=u, F=F):
                        return sum(u[t, y[t]] for t in range(T)) + sum(F[a, b] for a, b in zip(y[:-1], y[1:]))
                else:
                    def score(y, u=u):
                        return sum(u[t, y[t]] for t in range(T))
                out += _enumerated_marginals(score, Q, T) / (p.K * S)
            return out

        expected = _per_sequence(prior, p, np.array([0, 1]), S, seed, None, brute)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, atol=1e-10)
            np.testing.assert_allclose(g.sum(1), 1.0)


@pytest.fixture(scope="module")
def fitted():
    X, y = make_chain_data(40, n_labels=3, n_features=4, transition_scale=2.0, random_state=1)
    kw = dict(optimizer="saga", n_inducing=10, max_iter=2, block_iters=(30, 10, 0), n_samples=20,
              n_predict_samples=30, amplitude=1.0, tol=0.0, random_state=0)
    return X, y, {lik: GPStructClassifier(likelihood=lik, **kw).fit(X[:30], y[:30]) for lik in ("chain", "piecewise")}


def test_piecewise_predictions_are_token_by_token(fitted):
    X, _, gps = fitted
    gp = gps["piecewise"]
    marg = gp.predict_marginals(X[30:])
    for m, x in zip(marg, X[30:]):
        assert m.shape == (x.shape[0], 3) and np.all(np.isfinite(m))
        np.testing.assert_allclose(m.sum(1), 1.0)
    assert all(np.array_equal(gp.classes_[m.argmax(1)], yp) for m, yp in zip(marg, gp.predict(X[30:])))
    # viterbi_mean: the argmax of each token's posterior mean unaries (the table does not enter)
    prior, offsets = gp._test_prior(X[30:])
    mean_unary = prior.unary_mean(gp.params_.m.mean(axis=0))
    labels = np.concatenate(gp.set_params(decode="viterbi_mean").predict(X[30:]))
    gp.set_params(decode="marginal")
    np.testing.assert_array_equal(labels, gp.classes_[mean_unary.argmax(1)])


def test_chain_predictions_are_unchanged(fitted):
    """The chain model still averages the chain's forward-backward marginals over its posterior samples."""
    X, _, gps = fitted
    gp = gps["chain"]
    prior, offsets = gp._test_prior(X[30:])
    S = gp.n_predict_samples

    def work(draw, i):
        fbin = draw.fbin(gp.params_)
        out, part = 0.0, np.empty((draw.f.shape[2], gp.params_.Q))
        for k in range(gp.params_.K):
            _marginals_kernel(draw.f[k], fbin[k], part)
            out = out + part
        return out / gp.params_.K

    expected = _per_sequence(prior, gp.params_, np.arange(len(X) - 30), S, gp._predict_seed, None, work)
    for g, e in zip(gp.predict_marginals(X[30:]), expected):
        np.testing.assert_allclose(g, e, atol=1e-12)


def test_cv_amplitude_of_the_piecewise_model_scores_its_own_decoder(fitted):
    """amplitude="cv" with likelihood="piecewise": the piecewise MAP of each fold, scored token by token."""
    from sklearn_struct import _gp_struct_amplitude as amp
    from sklearn_struct._gp_struct_optim import sparse_map
    from sklearn_struct.utils.packing import pack_sequences, subset_sequences

    X, y, _ = fitted
    Xp, offsets = pack_sequences(X[:30])
    yy = np.concatenate(y[:30]).astype(np.int64)
    prior = SparsePrior(RBF(1.0), Xp[:8], Xp, offsets)
    grid = (0.25, 4.0)
    _, scores = amp.cv_amplitude(prior, yy, offsets, 3, np.random.RandomState(0), grid=grid, likelihood=PIECEWISE)
    folds = np.array_split(np.random.RandomState(0).permutation(30), 3)
    expected = np.zeros(len(grid))
    for held in (np.sort(h) for h in folds):
        tr, _, off_tr = subset_sequences(offsets, np.setdiff1d(np.arange(30), held))
        te, _, _ = subset_sequences(offsets, held)
        for i, a in enumerate(grid):
            v = sparse_map(amp._Rows(np.sqrt(a) * prior.B[:, tr]), yy[tr], off_tr, 3, likelihood=PIECEWISE)[0]
            unary = np.sqrt(a) * prior.B[0, te] @ v.T
            expected[i] += np.mean(unary.argmax(1) != yy[te]) / 3
    np.testing.assert_allclose(scores[:, 0], expected, atol=1e-12)


def test_bad_input_is_still_a_value_error(fitted):
    X, _, gps = fitted
    with pytest.raises(ValueError, match="features"):
        gps["piecewise"].predict([np.zeros((3, 2))])
    with pytest.raises(ValueError, match="NaN"):
        gps["piecewise"].predict_marginals([np.full((3, 4), np.nan)])
    with pytest.raises(ValueError, match="likelihood"):
        GPStructClassifier(likelihood="pmi").fit(X[:3], [np.zeros(len(x), int) for x in X[:3]])
