"""ChainCRF's structure features: allowed transitions (BIO / BIOES), fixed tokens, partial labels, n-best."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from sklearn_struct import ChainCRF
from sklearn_struct._chain_crf import ChainObjective
from sklearn_struct._chain_crf_constrained import ConstrainedChainObjective, structure_from, token_masks

CHUNKS = np.array(["B-NP", "B-VP", "I-NP", "I-VP", "O"])


def _bio_data(n, seed, noise=1.0):
    """Valid BIO sequences; features: the label's one-hot plus noise."""
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        seq, prev = [], "O"
        for _ in range(rng.randint(2, 8)):
            lab = "I-" + prev[2:] if prev[0] in "BI" and rng.rand() < 0.5 else rng.choice(["B-NP", "O", "B-VP"])
            seq.append(lab)
            prev = lab
        Y.append(np.array(seq))
        X.append((CHUNKS[None, :] == np.array(seq)[:, None]) * 1.0 + rng.randn(len(seq), 5) * noise)
    return X, Y


def _invalid_bio(predictions):
    count = 0
    for p in predictions:
        prev = "O"
        for lab in p:
            count += lab.startswith("I-") and not (prev[0] in "BI" and prev[2:] == lab[2:])
            prev = lab
    return count


def _wild_inputs(n, seed):
    """Inputs far from the training data: large random features, any unary preference."""
    rng = np.random.RandomState(seed)
    return [rng.randn(rng.randint(1, 9), 5) * 4 for _ in range(n)]


def test_bio_model_never_predicts_i_after_o():
    X, Y = _bio_data(150, 0, noise=1.6)
    Xt = _wild_inputs(300, 1)
    plain = ChainCRF(c2=1.0).fit(X, Y)
    bio = ChainCRF(c2=1.0, allowed_transitions="BIO").fit(X, Y)
    assert _invalid_bio(plain.predict(Xt)) > 0  # the data can produce invalid chunks
    assert _invalid_bio(bio.predict(Xt)) == 0
    for y_topk in bio.predict_topk(Xt[:50], 5)[0]:
        assert _invalid_bio(list(y_topk)) == 0
    # forbidden transitions carry no weight and no probability
    forbidden = ~bio.allowed_transitions_.transitions
    assert np.all(bio.transition_[forbidden] == 0)
    edge = np.concatenate([e for e in bio.predict_edge_marginals(Xt[:50]) if len(e)])
    assert np.all(edge[:, forbidden] == 0) and np.allclose(edge.sum(axis=(1, 2)), 1.0)


def test_scheme_masks():
    bio = structure_from("BIO", CHUNKS)
    L = len(CHUNKS)
    i_np, i_vp, b_np, o = 2, 3, 0, 4
    assert not bio.transitions[o, i_np] and not bio.transitions[b_np, i_vp] and bio.transitions[b_np, i_np]
    assert bio.transitions[i_np, i_np] and bio.transitions[i_vp, o] and not bio.start[i_np] and bio.end.all()
    assert bio.transitions.sum() == L * L - 2 * 3  # I-NP, I-VP each reachable from 2 of 5 labels
    bioes = structure_from("BIOES", np.array(["B-X", "E-X", "I-X", "O", "S-X"]))
    # B-X -> I-X / E-X only; E-X, S-X, O -> B-X, S-X, O only
    expected = np.array([[0, 1, 1, 0, 0], [1, 0, 0, 1, 1], [0, 1, 1, 0, 0], [1, 0, 0, 1, 1], [1, 0, 0, 1, 1]], bool)
    np.testing.assert_array_equal(bioes.transitions, expected)
    np.testing.assert_array_equal(bioes.start, [1, 0, 0, 1, 1])
    np.testing.assert_array_equal(bioes.end, [0, 1, 0, 1, 1])
    np.testing.assert_array_equal(structure_from("BILOU", np.array(["B-X", "I-X", "L-X", "O", "U-X"])).transitions,
                                  expected[[0, 2, 1, 3, 4]][:, [0, 2, 1, 3, 4]])
    with pytest.raises(ValueError, match="no known scheme"):
        structure_from("BIOX", CHUNKS)
    with pytest.raises(ValueError, match="prefix 'E'"):
        structure_from("BIO", np.array(["B-X", "E-X", "O"]))
    with pytest.raises(ValueError, match="boolean array of shape"):
        structure_from(np.ones((2, 2)), CHUNKS)


def _enumerated_nll(theta, X, y_partial, classes, structure, c2):
    """The constrained objective by enumerating every labelling of every sequence."""
    L = len(classes)
    n_w = X[0].shape[1] * L
    W, b, A = theta[:n_w].reshape(X[0].shape[1], L), theta[n_w : n_w + L], theta[n_w + L :].reshape(L, L)
    total = 0.0
    _, allowed = token_masks(y_partial, classes)
    row = 0
    for x in X:
        n = x.shape[0]
        unary = x @ W + b
        paths = np.array(list(itertools.product(range(L), repeat=n)))
        scores = unary[np.arange(n), paths].sum(axis=1) + A[paths[:, :-1], paths[:, 1:]].sum(axis=1)
        ok = structure.start[paths[:, 0]] & structure.end[paths[:, -1]]
        ok &= structure.transitions[paths[:, :-1], paths[:, 1:]].all(axis=1)
        given = ok & allowed[row + np.arange(n), paths].all(axis=1)
        total += logsumexp(scores[ok]) - logsumexp(scores[given])
        row += n
    return total + c2 * (np.sum(theta[:n_w] ** 2) + np.sum(theta[n_w + L :] ** 2))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["BIO", "BIOES", None]))
def test_partial_label_objective_by_enumeration_and_finite_differences(seed, scheme):
    rng = np.random.RandomState(seed)
    classes = np.array(["B-X", "I-X", "O"]) if scheme == "BIO" else np.array(["B-X", "E-X", "I-X", "O", "S-X"])
    if scheme is None:
        classes = np.array(["a", "b", "c"])
    gold = {"BIO": [["B-X", "I-X", "O"], ["O", "B-X"], ["B-X", "I-X", "I-X", "O"]],
            "BIOES": [["B-X", "E-X", "O"], ["O", "S-X"], ["B-X", "I-X", "E-X"]],
            None: [["a", "b", "c"], ["c", "c"], ["b", "a", "a", "c"]]}[scheme]
    X = [rng.randn(len(g), 2) for g in gold]
    y = []
    for g in gold:
        seq = np.array(g, dtype=object)
        seq[rng.rand(len(g)) < 0.5] = None
        if rng.rand() < 0.3:
            seq[0] = {g[0], classes[-1]}
        y.append(seq)
    L = len(classes)
    structure = structure_from(scheme, classes) if scheme else structure_from(np.ones((L, L), bool), classes)
    y_enc, allowed = token_masks(y, classes)
    objective = ConstrainedChainObjective(X, y_enc, L, 0.3, allowed=allowed, structure=structure)
    theta = rng.randn(objective.n_params)
    theta[objective.forbidden_transitions()] = 0.0
    f, g = objective(theta)
    assert np.isclose(f, _enumerated_nll(theta, X, y, classes, structure, 0.3), rtol=1e-9)
    eps = 1e-6
    free = np.setdiff1d(np.arange(len(theta)), objective.forbidden_transitions())
    for k in rng.choice(free, 8, replace=False):
        step = np.zeros_like(theta)
        step[k] = eps
        fd = (objective(theta + step)[0] - objective(theta - step)[0]) / (2 * eps)
        assert np.isclose(g[k], fd, rtol=1e-5, atol=1e-6)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["BIO", None]))
def test_weighted_partial_label_objective_by_enumeration_and_finite_differences(seed, scheme):
    """sample_weight with partial labels and allowed transitions: sum_i s_i NLL_i, the gradient by finite
    differences (two chunks: the weights follow their sequences)."""
    rng = np.random.RandomState(seed)
    classes = np.array(["B-X", "I-X", "O"]) if scheme else np.array(["a", "b", "c"])
    gold = ([["B-X", "I-X", "O"], ["O", "B-X"], ["B-X", "I-X", "I-X", "O"], ["O"]] if scheme else
            [["a", "b", "c"], ["c", "c"], ["b", "a", "a", "c"], ["a"]])
    X = [rng.randn(len(g), 2) for g in gold]
    y = []
    for g in gold:
        seq = np.array(g, dtype=object)
        seq[rng.rand(len(g)) < 0.5] = None
        y.append(seq)
    weights = rng.rand(len(gold)) * 3
    L = len(classes)
    structure = structure_from(scheme, classes) if scheme else None
    y_enc, allowed = token_masks(y, classes)
    objective = ConstrainedChainObjective(X, y_enc, L, 0.3, allowed=allowed, structure=structure, n_chunks=2,
                                          sample_weight=weights)
    theta = rng.randn(objective.n_params)
    theta[objective.forbidden_transitions()] = 0.0
    f, g = objective(theta)
    every = structure if structure is not None else structure_from(np.ones((L, L), bool), classes)
    n_w = objective.n_weights
    expected = sum(s * _enumerated_nll(theta, [x], [v], classes, every, 0.0) for s, x, v in zip(weights, X, y))
    expected += 0.3 * (np.sum(theta[:n_w] ** 2) + np.sum(theta[n_w + L :] ** 2))
    assert np.isclose(f, expected, rtol=1e-9)
    eps = 1e-6
    free = np.setdiff1d(np.arange(len(theta)), objective.forbidden_transitions())
    for k in rng.choice(free, 8, replace=False):
        step = np.zeros_like(theta)
        step[k] = eps
        fd = (objective(theta + step)[0] - objective(theta - step)[0]) / (2 * eps)
        assert np.isclose(g[k], fd, rtol=1e-5, atol=1e-6)


def test_integer_sample_weight_equals_duplicating_sequences_with_structure_and_partial_labels():
    X, Y = _bio_data(16, 5)
    Y = [np.array(v, dtype=object) for v in Y]
    Y[3][1] = None  # partial labels
    Y[7][0] = {"B-NP", "O"}
    w = np.random.RandomState(0).randint(0, 3, len(X))
    Xd = [x for x, k in zip(X, w) for _ in range(k)]
    Yd = [v for v, k in zip(Y, w) for _ in range(k)]
    params = dict(c2=0.1, allowed_transitions="BIO", tol=1e-9, epsilon=1e-9, max_iter=500)
    kept = w > 0  # a zero weight drops a sequence's term; its features still get a weight
    weighted = ChainCRF(**params, all_possible_states=True).fit(X, Y, sample_weight=w)
    dup = ChainCRF(**params, all_possible_states=True).fit(Xd, Yd)
    assert kept.sum() < len(X)
    np.testing.assert_allclose(weighted.coef_, dup.coef_, atol=1e-4)
    np.testing.assert_allclose(weighted.transition_, dup.transition_, atol=1e-4)


def test_fully_known_labels_give_the_plain_objective():
    X, Y = _bio_data(20, 3)
    y_enc, allowed = token_masks([np.array(v, dtype=object) for v in Y], CHUNKS)
    plain = ChainObjective(X, y_enc, len(CHUNKS), 0.5)
    ours = ConstrainedChainObjective(X, y_enc, len(CHUNKS), 0.5, allowed=allowed)
    theta = np.random.RandomState(0).randn(plain.n_params)
    (f0, g0), (f1, g1) = plain(theta), ours(theta)
    assert np.isclose(f0, f1, rtol=1e-10)
    np.testing.assert_allclose(g0, g1, atol=1e-9)


def _brute_model(model, x, fixed_row=None):
    """Every labelling of one sequence, its log-probability under the fitted model (with its structure)."""
    L = len(model.classes_)
    unary = x @ model.coef_ + model.intercept_
    n = x.shape[0]
    paths = np.array(list(itertools.product(range(L), repeat=n)))
    scores = unary[np.arange(n), paths].sum(axis=1) + model.transition_[paths[:, :-1], paths[:, 1:]].sum(axis=1)
    s = model.allowed_transitions_
    if s is not None:
        ok = s.start[paths[:, 0]] & s.end[paths[:, -1]] & s.transitions[paths[:, :-1], paths[:, 1:]].all(axis=1)
        paths, scores = paths[ok], scores[ok]
    return paths, scores - logsumexp(scores)


def test_topk_fixed_and_sequence_log_proba_against_enumeration():
    X, Y = _bio_data(60, 4)
    model = ChainCRF(c2=0.5, allowed_transitions="BIO").fit(X, Y)
    x = X[0][:4]
    paths, logp = _brute_model(model, x)
    order = np.argsort(-logp, kind="stable")
    y_topk, log_proba = model.predict_topk([x], k=7)
    np.testing.assert_allclose(log_proba[0], logp[order[:7]], atol=1e-9)
    assert y_topk[0].shape == (7, 4)
    np.testing.assert_array_equal(y_topk[0][0], model.predict([x])[0])
    np.testing.assert_allclose(model.sequence_log_proba([x] * 7, list(y_topk[0])), log_proba[0], atol=1e-9)
    everything = model.predict_topk([x], k=10_000)[1][0]
    assert len(everything) == len(paths) and np.isclose(logsumexp(everything), 0.0)
    assert model.sequence_log_proba([x], [["O", "I-NP", "O", "O"]])[0] == -np.inf
    # fixed tokens: the best labelling with token 1 = B-VP; conditional marginals
    fixed = [[None, "B-VP", None, {"O", "B-NP"}]]
    keep = (model.classes_[paths[:, 1]] == "B-VP") & np.isin(model.classes_[paths[:, 3]], ["O", "B-NP"])
    best = paths[keep][np.argmax(logp[keep])]
    np.testing.assert_array_equal(model.predict([x], fixed=fixed)[0], model.classes_[best])
    marg = model.predict_marginals([x], fixed=fixed)[0]
    cond = np.exp(logp[keep] - logsumexp(logp[keep]))
    for t in range(4):
        np.testing.assert_allclose(marg[t], np.bincount(paths[keep][:, t], cond, minlength=len(model.classes_)),
                                   atol=1e-9)


def test_partial_labels_fit_and_errors():
    X, Y = _bio_data(150, 5)
    Xt, Yt = _bio_data(150, 6)
    rng = np.random.RandomState(0)
    hidden = [np.array([v if rng.rand() < 0.5 else None for v in y], dtype=object) for y in Y]
    full = ChainCRF(c2=1.0, allowed_transitions="BIO").fit(X, Y)
    partial = ChainCRF(c2=1.0, allowed_transitions="BIO").fit(X, hidden)
    assert list(partial.classes_) == list(full.classes_)
    assert partial.score(Xt, Yt) > 0.8 * full.score(Xt, Yt)
    with pytest.raises(ValueError, match="cannot train on partial labels"):
        ChainCRF(algorithm="ap").fit(X, hidden)
    with pytest.raises(ValueError, match="Sequence 1 has no label sequence"):
        ChainCRF(allowed_transitions="BIO").fit(X[:2], [Y[0], ["O", "I-NP"] + list(Y[1][2:])])
    with pytest.raises(ValueError, match="fixed, sequence 0, token 0: 'B-XX' is no label"):
        full.predict(X[:1], fixed=[["B-XX"] + [None] * (len(X[0]) - 1)])
    with pytest.raises(ValueError, match="one entry per sequence"):
        full.predict(X[:2], fixed=[None])
    with pytest.raises(ValueError, match="no label sequence"):  # fixed against the structure
        full.predict(X[:1], fixed=[["O", "I-NP"] + [None] * (len(X[0]) - 2)])
    with pytest.raises(ValueError, match="every token is unknown"):
        ChainCRF().fit(X[:1], [[None] * len(X[0])])


def test_online_algorithms_decode_with_the_structure(tmp_path):
    X, Y = _bio_data(150, 0, noise=1.6)
    Xt = _wild_inputs(300, 1)
    assert _invalid_bio(ChainCRF(algorithm="ap", max_iter=5).fit(X, Y).predict(Xt)) > 0
    model = ChainCRF(algorithm="ap", max_iter=5, allowed_transitions="BIO").fit(X, Y)
    assert _invalid_bio(model.predict(Xt)) == 0
    model.save(tmp_path / "m.npz")  # a scheme name is saved with the parameters
    loaded = ChainCRF.load(tmp_path / "m.npz")
    assert [list(p) for p in loaded.predict(Xt)] == [list(p) for p in model.predict(Xt)]
    mask = ChainCRF(allowed_transitions="BIO").fit(X[:5], Y[:5]).allowed_transitions_.transitions
    masked = ChainCRF(algorithm="ap", max_iter=5, allowed_transitions=mask).fit(X, Y)
    masked.save(tmp_path / "a.npz")  # and so is a mask (tests/test_model_file_masks.py)
    loaded = ChainCRF.load(tmp_path / "a.npz")
    assert np.array_equal(loaded.allowed_transitions, mask)
    assert [list(p) for p in loaded.predict(Xt)] == [list(p) for p in masked.predict(Xt)]
