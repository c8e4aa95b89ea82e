"""NonLocalCRF(psi_gate="probability"): the sampled gate (sklearn_struct._psi_gate)."""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import NonLocalCRF
from sklearn_struct._psi_gate import satisfaction_probability
from sklearn_struct.constraints import (
    AtLeastSegments,
    AtMostSegments,
    ConstraintEnergy,
    MutuallyExclusive,
    Precedes,
)
from sklearn_struct.utils.packing import lengths_to_offsets

CLASSES = np.array(["author", "date", "title"])
TEMPLATES = [AtMostSegments("title", 1), AtLeastSegments("author", 1), MutuallyExclusive("author", "date"),
             Precedes("author", "title")]


def _energy():
    return ConstraintEnergy(TEMPLATES).fit(None, 3, classes=CLASSES)


def _exact_probability(energy, unary, trans, offsets):
    """p[i, k] by enumerating every labelling of every sequence."""
    out = []
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        n, L = hi - lo, unary.shape[1]
        labs = np.array(list(itertools.product(range(L), repeat=n)))
        score = unary[lo + np.arange(n), labs].sum(axis=1) + trans[labs[:, :-1], labs[:, 1:]].sum(axis=1)
        w = np.exp(score - score.max())
        ok = energy.violations([lab for lab in labs]) <= 0
        out.append(w @ ok / w.sum())
    return np.array(out)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1), st.lists(st.integers(1, 5), min_size=1, max_size=3))
def test_satisfaction_probability_matches_enumeration(seed, lengths):
    rng = np.random.RandomState(seed)
    offsets = lengths_to_offsets(lengths)
    unary = rng.normal(scale=1.5, size=(offsets[-1], 3))
    trans = rng.normal(size=(3, 3))
    energy = _energy()
    exact = _exact_probability(energy, unary, trans, offsets)
    p = satisfaction_probability(energy, unary, trans, offsets, 3000, random_state=seed)
    assert p.shape == exact.shape
    np.testing.assert_allclose(p, exact, atol=0.04)  # 3000 draws: sd <= 0.009
    again = satisfaction_probability(energy, unary, trans, offsets, 3000, random_state=seed)
    np.testing.assert_array_equal(p, again)


def test_packed_violations_equal_per_sequence_and_reject_bad_input():
    energy = _energy()
    seqs = [np.array([0, 0, 2, 2, 1]), np.array([2, 0, 2]), np.array([1])]
    labels, offsets = np.concatenate(seqs), lengths_to_offsets([5, 3, 1])
    v = energy.packed_violations(labels, offsets)
    # title segments: 1, 2, 0; authors: 1, 1, 0; author + date segments - 1: 1, 0, 0; title -> author: 0, 1, 0
    np.testing.assert_array_equal(v, [[0, 0, 1, 0], [1, 0, 0, 1], [0, 1, 0, 0]])
    with pytest.raises(ValueError, match="labels"):
        energy.packed_violations(np.array([0, 3, 1]), lengths_to_offsets([3]))
    with pytest.raises(ValueError, match="2 tokens, offsets 3"):
        energy.packed_violations(np.array([0, 1]), lengths_to_offsets([3]))


def _two_kinds(n, rng):
    """Even sequences hold exactly one A (noisy evidence); odd ones two clearly marked A segments,
    where the rule "#A <= 1" is wrong and the base CRF knows it."""
    X, y = [], []
    for i in range(n):
        lab = np.array(["O"] * 8, dtype=object)
        x = np.zeros((8, 3))
        if i % 2:
            lab[[1, 5]] = "A"
            x[:, 0] = 3.0 * (lab == "A") + rng.normal(scale=0.3, size=8)
            x[:, 2] = 1.0
        else:
            lab[rng.randint(0, 8)] = "A"
            x[:, 0] = (lab == "A") + rng.normal(scale=0.7, size=8)
        x[:, 1] = 1.0
        X.append(x)
        y.append(lab.astype(str))
    return X, y


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        params = dict(c2=0.1, psi_init=0.0, learning_rate=1.0, n_epochs=3, random_state=0)
        return NonLocalCRF([AtMostSegments("A", 1), AtLeastSegments("A", 1)], **{**params, **kw}).fit(X, y)


def test_gate_switches_off_a_rule_where_the_input_breaks_it():
    """Known answer at a fixed strong psi: "exactly one A" is right for the noisy half and wrong for
    the clear half. Without the gate it breaks clear sequences; with it they keep the base CRF's
    labels, while the noisy half still gets the rule."""
    rng = np.random.RandomState(0)
    X, y = _two_kinds(200, rng)
    Xt, yt = _two_kinds(200, rng)
    base = NonLocalCRF(c2=0.1).fit(X, y)
    fixed = dict(psi_init=10.0, n_epochs=0, psi_holdout=None)
    plain, gated = _fit(X, y, **fixed), _fit(X, y, psi_gate="probability", **fixed)
    clear, noisy = slice(1, None, 2), slice(0, None, 2)
    for got, want in zip(gated.predict(Xt[clear]), base.predict(Xt[clear])):
        np.testing.assert_array_equal(got, want)
    assert plain.score(Xt[clear], yt[clear]) < base.score(Xt[clear], yt[clear]) - 0.01  # the rule breaks them
    assert gated.score(Xt[noisy], yt[noisy]) > base.score(Xt[noisy], yt[noisy])  # and helps here
    assert gated.score(Xt, yt) > max(plain.score(Xt, yt), base.score(Xt, yt))
    # same seed, same answer
    again = _fit(X, y, psi_gate="probability", **fixed)
    for a, b in zip(again.predict(Xt), gated.predict(Xt)):
        np.testing.assert_array_equal(a, b)


def test_learning_through_the_gate():
    """A gate of ones is no gate; a gate of zeros leaves psi at psi_init (its gradient is zero)."""
    from sklearn_struct._psi_learning import fit_energy, in_sample_thetas, learn_psi

    rng = np.random.RandomState(2)
    X, y = _two_kinds(40, rng)
    model = _fit(X, y, psi_holdout=None, psi_init=0.5)
    y_enc = [np.searchsorted(model.classes_, v) for v in y]
    energy = fit_energy(model.energy, y_enc, model.classes_)
    thetas = in_sample_thetas((model.coef_, model.intercept_, model.transition_), len(X))
    free = learn_psi(model, X, y_enc, energy, None, *thetas)
    ones = learn_psi(model, X, y_enc, energy, None, *thetas, gate=np.ones((len(X), 2)))
    zeros = learn_psi(model, X, y_enc, energy, None, *thetas, gate=np.zeros((len(X), 2)))
    np.testing.assert_allclose(ones.psi, free.psi, rtol=1e-12)
    assert not np.allclose(free.psi, 0.5)
    np.testing.assert_array_equal(zeros.psi, 0.5)


def test_gate_bad_input():
    from sklearn_struct.energies import WordDictionaryEnergy

    rng = np.random.RandomState(1)
    X, y = _two_kinds(20, rng)
    with pytest.raises(ValueError, match="psi_gate='probability' needs a constraint energy"):
        NonLocalCRF(WordDictionaryEnergy(), psi_gate="probability", n_epochs=1, psi_holdout=None).fit(X, y)
    with pytest.raises(ValueError, match="perceptron"):
        _fit(X, y, psi_gate="probability", psi_gradient="perceptron")
    with pytest.raises(ValueError, match="psi_gate"):
        _fit(X, y, psi_gate="always")
    model = _fit(X, y, psi_gate="probability", psi_holdout=None)
    with pytest.raises(ValueError, match="infer_tree: psi_gate"):
        model.infer_tree(X[0], np.c_[np.arange(7), np.arange(1, 8)])
