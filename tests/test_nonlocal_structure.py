"""NonLocalCRF's structure options: allowed transitions, fixed tokens, k-best and sequence log-probabilities.

Checked by brute-force enumeration of every labelling of short random inputs: without an energy
against the base CRF (and against :class:`ChainCRF`, the same objective), with an energy against
the fixed-point condition of eq. 2 on the face of the marginal polytope that the masks leave
(Prop. 1: ``mu* = ORACLE(theta - grad L(mu*))``, the oracle evaluated by enumeration).
"""

import copy
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from sklearn_struct import ChainCRF, NonLocalCRF
from sklearn_struct._bethe_inference import bethe_inference
from sklearn_struct._chain_crf_constrained import masked_potentials
from sklearn_struct._psi_learning import bind
from sklearn_struct.constraints import AtMostSegments, AtMostTokens, FirstLabel

CHUNKS = np.array(["B-NP", "B-VP", "I-NP", "I-VP", "O"])
START_OK = np.array([True, True, False, False, True])  # BIO: no I-X first


def _bio_data(n, seed, noise=1.2):
    """Valid BIO sequences; features: the label's one-hot plus noise."""
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        seq, prev = [], "O"
        for _ in range(rng.randint(2, 7)):
            lab = "I-" + prev[2:] if prev[0] in "BI" and rng.rand() < 0.5 else rng.choice(["B-NP", "O", "B-VP"])
            seq.append(lab)
            prev = lab
        Y.append(np.array(seq))
        X.append((CHUNKS[None, :] == np.array(seq)[:, None]) * 1.0 + rng.randn(len(seq), 5) * noise)
    return X, Y


def _bio_transitions():
    prefix, kind = np.array([c[0] for c in CHUNKS]), np.array([c[2:] for c in CHUNKS])
    return (prefix[None, :] != "I") | ((prefix[:, None] != "O") & (kind[:, None] == kind[None, :]))


def _invalid(labels):
    prev = "O"
    for lab in labels:
        if lab.startswith("I-") and not (prev[0] in "BI" and prev[2:] == lab[2:]):
            return True
        prev = lab
    return False


@pytest.fixture(scope="module")
def models():
    X, Y = _bio_data(60, 0)
    energy = [AtMostSegments("B-NP", 1), FirstLabel("O"), AtMostTokens("I-VP", 1)]
    plain = NonLocalCRF(c2=1.0, allowed_transitions="BIO").fit(X, Y)
    nonlocal_ = NonLocalCRF(energy, c2=1.0, allowed_transitions="BIO", psi_init=2.0, n_epochs=1,
                            random_state=0).fit(X, Y)
    return X, Y, plain, nonlocal_


@pytest.fixture(scope="module")
def converged(models):
    """The fitted non-local model with inference run to convergence (Bethe-MD reaches 1e-10 in a few
    hundred iterations here; RDA's last iterate approaches the fixed point at rate 1/t)."""
    return copy.deepcopy(models[3]).set_params(inference="md", inference_max_iter=3000, inference_tol=1e-10)


def _paths(n, L=len(CHUNKS)):
    return np.array(list(itertools.product(range(L), repeat=n)))


def _path_scores(paths, unary, trans):
    """Log-potentials of every path (``trans`` shared (L, L) or per position (n - 1, L, L))."""
    n = paths.shape[1]
    with np.errstate(invalid="ignore"):
        s = unary[np.arange(n), paths].sum(axis=1)
        for t in range(1, n):
            table = trans if trans.ndim == 2 else trans[t - 1]
            s = s + table[paths[:, t - 1], paths[:, t]]
    return s


def _allowed_paths(paths, fixed_mask):
    """Paths that obey BIO and the token masks, by the label names (independent of the estimator's masks)."""
    ok = np.array([not _invalid(CHUNKS[p]) for p in paths])
    if fixed_mask is not None:
        ok &= fixed_mask[np.arange(paths.shape[1]), paths].all(axis=1)
    return ok


def _marginals(paths, logp, n):
    p = np.exp(logp - logsumexp(logp))
    node = np.zeros((n, len(CHUNKS)))
    edge = np.zeros((max(n - 1, 0), len(CHUNKS), len(CHUNKS)))
    for t in range(n):
        np.add.at(node[t], paths[:, t], p)
    for t in range(1, n):
        np.add.at(edge[t - 1], (paths[:, t - 1], paths[:, t]), p)
    return node, edge


@st.composite
def _inputs(draw):
    n = draw(st.integers(1, 4))
    rng = np.random.RandomState(draw(st.integers(0, 2**31 - 1)))
    x = rng.randn(n, 5) * draw(st.sampled_from([1.0, 3.0]))
    fixed, mask = None, None
    if draw(st.booleans()):
        fixed, mask = [], np.ones((n, len(CHUNKS)), dtype=bool)
        for t in range(n):
            kind = draw(st.sampled_from(["free", "label", "set"]))
            if kind == "free":
                fixed.append(None)
            elif kind == "label":
                lab = draw(st.sampled_from(["B-NP", "B-VP", "O"]))  # never infeasible with BIO
                fixed.append(lab)
                mask[t] = CHUNKS == lab
            else:
                labs = set(draw(st.lists(st.sampled_from(list(CHUNKS)), min_size=1, max_size=3)))
                labs.add("O")
                fixed.append(labs)
                mask[t] = np.isin(CHUNKS, sorted(labs))
    return x, fixed, mask


def test_without_energy_it_is_chain_crf_with_the_same_structure(models):
    X, Y, plain, _ = models
    chain = ChainCRF(c2=1.0, allowed_transitions="BIO").fit(X, Y)
    for name in ("coef_", "intercept_", "transition_"):
        np.testing.assert_allclose(getattr(plain, name), getattr(chain, name), atol=1e-10)
    assert np.all(plain.transition_[~plain.allowed_transitions_.transitions] == 0)
    Xt = [np.random.RandomState(1).randn(6, 5) * 4 for _ in range(30)]
    fixed = [[None, {"O", "B-VP"}] + [None] * 4] * 30
    for a, b in zip(plain.predict(Xt, fixed=fixed), chain.predict(Xt, fixed=fixed)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(plain.predict_marginals(Xt, fixed=fixed), chain.predict_marginals(Xt, fixed=fixed)):
        np.testing.assert_allclose(a, b, atol=1e-12)
    (ya, la), (yb, lb) = plain.predict_topk(Xt[:5], 4), chain.predict_topk(Xt[:5], 4)
    for a, b, c, d in zip(ya, yb, la, lb):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(c, d, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(_inputs())
def test_base_model_against_enumeration(models, problem):
    check_base_against_enumeration(models[2], problem)


def check_base_against_enumeration(plain, problem):
    """The NonLocalCRF without energy ``plain`` (under BIO) against enumeration on ``problem`` of :func:`_inputs`."""
    x, fixed, mask = problem
    n = x.shape[0]
    paths = _paths(n)
    unary = x @ plain.coef_ + plain.intercept_
    scores = _path_scores(paths, unary, plain.transition_)
    ok = _allowed_paths(paths, mask)
    logp = scores[ok] - logsumexp(scores[ok])
    best = paths[ok][np.argmax(logp)]
    np.testing.assert_array_equal(plain.predict([x], fixed=None if fixed is None else [fixed])[0], CHUNKS[best])
    node, _ = _marginals(paths[ok], logp, n)
    got = plain.predict_marginals([x], fixed=None if fixed is None else [fixed])[0]
    np.testing.assert_allclose(got, node, atol=1e-9)
    assert np.all(got[node == 0] == 0)  # forbidden labels: exactly 0
    if fixed is None:  # k-best and sequence probabilities of the base CRF
        ok_all = _allowed_paths(paths, None)
        logp_all = scores[ok_all] - logsumexp(scores[ok_all])
        y_topk, log_proba = plain.predict_topk([x], k=6)
        order = np.argsort(-logp_all, kind="stable")[:6]
        np.testing.assert_allclose(log_proba[0], logp_all[order], atol=1e-9)
        seq = plain.sequence_log_proba([x] * len(paths), list(CHUNKS[paths]))
        np.testing.assert_allclose(seq[ok_all], logp_all, atol=1e-9)
        assert np.all(seq[~ok_all] == -np.inf)


@settings(max_examples=15, deadline=None)
@given(_inputs())
def test_nonlocal_model_against_enumeration(models, converged, problem):
    check_nonlocal_against_enumeration(models[3], converged, problem)


def check_nonlocal_against_enumeration(model, converged, problem):
    """The NonLocalCRF with energy ``model`` (under BIO; ``converged``: its copy with inference run to
    convergence) against enumeration on ``problem`` of :func:`_inputs`."""
    x, fixed, mask = problem
    n = x.shape[0]
    fixed_arg = None if fixed is None else [fixed]
    paths = _paths(n)
    ok = _allowed_paths(paths, mask)
    # Q: the chain of the final dual potentials; its Viterbi is predict, its marginals predict_marginals
    res = model._dual_chain([x], fixed=fixed_arg)
    q = _path_scores(paths, res.dual_unary, np.asarray(res.dual_transition))
    assert np.all(q[~ok] == -np.inf)  # every forbidden labelling is out of Q
    logq = q[ok] - logsumexp(q[ok])
    pred = model.predict([x], fixed=fixed_arg)[0]
    assert not _invalid(pred) and (mask is None or mask[np.arange(n), np.searchsorted(CHUNKS, pred)].all())
    np.testing.assert_array_equal(pred, CHUNKS[paths[ok][np.argmax(logq)]])
    node, edge = _marginals(paths[ok], logq, n)
    mu = model.predict_marginals([x], fixed=fixed_arg)[0]
    np.testing.assert_allclose(mu, node, atol=1e-9)  # last iterate of RDA: mu_t = ORACLE(theta_t) exactly
    assert np.all(mu[node == 0] == 0)
    # the fixed point of eq. 2 on the allowed face: mu = ORACLE_allowed(theta - grad L(mu)), by enumeration
    res = converged._dual_chain([x], fixed=fixed_arg)
    q = _path_scores(paths, res.dual_unary, np.asarray(res.dual_transition))
    node_c, edge_c = _marginals(paths[ok], q[ok], n)
    np.testing.assert_allclose(res.node, node_c, atol=1e-9)
    gn, ge = bind(model.energy_, [x]).gradient(node_c, edge_c, np.array([0, n]), model.psi_[None])
    base = _path_scores(paths, x @ model.coef_ + model.intercept_ - gn,
                        model.transition_ - (0 if ge is None else ge) if n > 1 else model.transition_)
    node_fp, _ = _marginals(paths[ok], base[ok], n)
    np.testing.assert_allclose(node_c, node_fp, atol=1e-6)
    if fixed is None:
        y_topk, log_proba = model.predict_topk([x], k=5)
        order = np.argsort(-logq, kind="stable")[:5]
        np.testing.assert_allclose(log_proba[0], logq[order], atol=1e-9)
        np.testing.assert_array_equal(y_topk[0][0], pred)
        seq = model.sequence_log_proba([x] * len(paths), list(CHUNKS[paths]))
        np.testing.assert_allclose(seq[ok], logq, atol=1e-9)
        assert np.all(seq[~ok] == -np.inf)


@pytest.mark.parametrize("method", ["rda", "md", "accelerated"])
def test_forbidden_edges_and_labels_keep_exactly_zero_marginals_in_every_method(models, method):
    _, _, _, model = models
    rng = np.random.RandomState(3)
    lengths = [1, 4, 6]
    offsets = np.cumsum([0, *lengths])
    unary = rng.randn(offsets[-1], len(CHUNKS)) * 3
    allowed = rng.rand(offsets[-1], len(CHUNKS)) < 0.6
    allowed[:, 4] = True  # "O" keeps every sequence feasible
    unary, trans = masked_potentials(unary, rng.randn(5, 5), offsets, model.allowed_transitions_, allowed)
    energy = bind(model.energy_, [np.zeros((n, 5)) for n in lengths])
    res = bethe_inference(unary, trans, offsets, energy, model.psi_, method=method, max_iter=30, average=False)
    forbidden = ~model.allowed_transitions_.transitions
    assert np.all(res.edge[:, forbidden] == 0)
    assert np.all(res.node[~allowed] == 0)
    assert np.all(res.node[offsets[:-1]][:, ~START_OK] == 0)
    np.testing.assert_allclose(res.node.sum(axis=1), 1.0)


def test_fit_obeys_the_structure_in_every_psi_learner():
    X, Y = _bio_data(40, 5, noise=1.6)
    rng = np.random.RandomState(7)
    Xt = [rng.randn(rng.randint(1, 8), 5) * 4 for _ in range(80)]
    energy = [AtMostSegments("B-NP", 1), AtMostTokens("I-VP", 1)]
    common = dict(c2=1.0, n_epochs=1, random_state=0)
    assert sum(map(_invalid, NonLocalCRF(energy, **common).fit(X, Y).predict(Xt))) > 0  # the data can break BIO
    for extra in ({}, {"psi_gradient": "exact"}, {"psi_gradient": "perceptron"}, {"learn_theta": True},
                  {"psi_gate": "probability", "n_gate_samples": 10}, {"inference": "accelerated"},
                  {"inference": "md", "average": True}):
        model = NonLocalCRF(energy, allowed_transitions="BIO", **common, **extra).fit(X, Y)
        assert not any(map(_invalid, model.predict(Xt))), extra
        assert np.all(model.transition_[~model.allowed_transitions_.transitions] == 0), extra
        for y_topk in model.predict_topk(Xt[:10], 3)[0]:
            assert not any(map(_invalid, y_topk)), extra
    # a mask array and a tuple give the same model as the scheme name
    trans = _bio_transitions()
    by_name = NonLocalCRF(c2=1.0, allowed_transitions="BIO").fit(X, Y)
    by_tuple = NonLocalCRF(c2=1.0, allowed_transitions=(trans, START_OK, np.ones(5, bool))).fit(X, Y)
    np.testing.assert_allclose(by_tuple.coef_, by_name.coef_, atol=1e-12)
    by_mask = NonLocalCRF(c2=1.0, allowed_transitions=trans).fit(X, Y)  # no start mask: I-X may start
    assert np.all(by_mask.transition_[~trans] == 0)


def test_structure_errors_are_named(models):
    X, Y, plain, model = models
    with pytest.raises(ValueError, match="Sequence 1 has no label sequence"):
        NonLocalCRF(allowed_transitions="BIO").fit(X[:2], [Y[0], np.array(["O", "I-NP"] + list(Y[1][2:]))])
    with pytest.raises(ValueError, match="allowed_transitions must be a scheme name"):
        NonLocalCRF(allowed_transitions=np.ones((3, 3), bool)).fit(X, Y)
    with pytest.raises(ValueError, match="fixed, sequence 0, token 0: 'B-XX' is no label"):
        model.predict(X[:1], fixed=[["B-XX"] + [None] * (len(X[0]) - 1)])
    with pytest.raises(ValueError, match="no label sequence"):  # fixed against the structure
        model.predict_marginals(X[:1], fixed=[["O", "I-NP"] + [None] * (len(X[0]) - 2)])
    with pytest.raises(ValueError, match="one entry per sequence"):
        plain.predict(X[:2], fixed=[None])
    with pytest.raises(ValueError, match="infer_tree: allowed_transitions"):
        plain.infer_tree(X[0], np.array([[0, 1]] + [[0, i] for i in range(2, len(X[0]))]))
    with pytest.raises(ValueError, match="k must be a positive integer"):
        model.predict_topk(X[:1], k=0)
