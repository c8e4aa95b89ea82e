"""Constraint templates by label name (sklearn_struct.constraints)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_struct import NonLocalCRF
from sklearn_struct.constraints import (
    AtLeastSegments,
    AtLeastTokens,
    AtMostSegments,
    AtMostTokens,
    ConstraintEnergy,
    ExactlySegments,
    FirstLabel,
    InputDependent,
    LastLabel,
    LinearConstraint,
    MutuallyExclusive,
    Precedes,
)
from sklearn_struct.energies import SoftConstraintEnergy, smoothed_hinge

CLASSES = np.array(["author", "date", "journal", "title"])
A, D, J, T = range(4)


def _energy(templates):
    return ConstraintEnergy(templates).fit(None, 4, classes=CLASSES)


# --------------------------------------------------------------------------------------
# violations on hand-built label sequences equal hand counts

SEQS = [
    np.array([A, A, T, T, D]),          # author, title, date: clean
    np.array([T, A, T, T, J, T, D]),    # title split in 3, author after title, ends with date
    np.array([A, J, J, A, D, D]),       # two author segments, no title
    np.array([J]),                      # one token
]


@pytest.mark.parametrize(
    "template, expected",
    [
        (AtMostSegments("title", 1), [0, 2, 0, 0]),         # 3 title segments: 2 too many
        (AtMostSegments("author", 1), [0, 0, 1, 0]),
        (AtLeastSegments("title", 1), [0, 0, 1, 1]),
        (AtLeastSegments("author", 2), [1, 1, 0, 2]),
        (AtMostTokens("title", 2), [0, 2, 0, 0]),           # 4 title tokens
        (AtLeastTokens("date", 2), [1, 1, 0, 2]),
        (MutuallyExclusive("journal", "date"), [0, 1, 1, 0]),  # seg(j) + seg(d) - 1
        (FirstLabel("author"), [0, 1, 0, 1]),
        (LastLabel("date"), [0, 0, 0, 1]),
        (LastLabel(["date", "journal"]), [0, 0, 0, 0]),     # a label set
        (Precedes("author", "title"), [0, 1, 0, 0]),        # one title -> author transition
        (AtMostSegments(["author", "title"], 1), [0, 1, 1, 0]),  # runs of {author, title}
        (LinearConstraint(node={"title": 1, "author": -1}, sense="at_most", bound=0), [0, 3, 0, 0]),
        (LinearConstraint(edge={("journal", "title"): 1}, first={"title": 1}, sense="at_least", bound=2),
         [2, 0, 2, 2]),
    ],
)
def test_violations_equal_hand_counts(template, expected):
    energy = _energy([template])
    v = energy.violations(SEQS)
    np.testing.assert_array_equal(v[:, 0], expected)
    # the term is h(1 - v): zero when the rule holds, v - 1/2 when broken by v
    node = np.eye(4)[np.concatenate(SEQS)]
    offsets = np.cumsum([0] + [len(s) for s in SEQS])
    edge = _onehot_edges(SEQS)
    np.testing.assert_allclose(energy.term_values(node, edge, offsets)[:, 0],
                               smoothed_hinge(1.0 - np.array(expected, dtype=float))[0])


def test_exactly_is_two_terms():
    energy = _energy([ExactlySegments("title", 1)])
    assert energy.n_weights == 2
    np.testing.assert_array_equal(energy.violations(SEQS), [[0, 0], [0, 2], [1, 0], [1, 0]])


def test_input_dependent_counts_flagged_tokens():
    # feature 0 flags tokens that must be dates (like a 4-digit year); one sequence as sparse
    X = [np.array([[0.0], [0], [0], [0], [1]]), np.array([[1.0], [1], [0], [0], [0], [0], [1]]),
         sp.csr_matrix(np.array([[0.0], [0], [0], [0], [1], [1]])), np.array([[0.0]])]
    flag = lambda x: (x[:, 0].toarray() if sp.issparse(x) else x[:, 0]).ravel()  # noqa: E731
    energy = _energy([InputDependent("date", flag), InputDependent("date", flag, sense="at_most", bound=1)])
    # flagged tokens not labelled date: 0, 2 (T, A), 0, 0; date tokens beyond 1 among flagged: 0, 0, 1, 0
    np.testing.assert_array_equal(energy.violations(SEQS, X), [[0, 0], [2, 0], [0, 1], [0, 0]])
    with pytest.raises(ValueError, match="call bind"):
        energy.violations(SEQS)
    with pytest.raises(ValueError, match="must be 7 finite numbers for sequence 1"):
        _energy([InputDependent("date", lambda x: np.ones(5))]).violations(SEQS, X)


def test_same_energy_as_soft_constraint_energy():
    # the hand-written "at most one segment": offset=-2 with tokens - l->l transitions
    edge = np.zeros((1, 4, 4))
    edge[0, T, T] = 1.0
    node = np.zeros((1, 4))
    node[0, T] = -1.0
    soft = SoftConstraintEnergy(node_coef=node, edge_coef=edge, offset=-2.0).fit(None, 4)
    tmpl = _energy([AtMostSegments("title", 1)])
    rng = np.random.RandomState(0)
    mu, mu_e, offsets = _random_marginals(rng, [5, 3, 1])
    psi = rng.uniform(0.1, 2, size=(3, 1))
    np.testing.assert_allclose(tmpl.value(mu, mu_e, offsets, psi), soft.value(mu, mu_e, offsets, psi))
    for a, b in zip(tmpl.gradient(mu, mu_e, offsets, psi), soft.gradient(mu, mu_e, offsets, psi)):
        np.testing.assert_allclose(a, b)


# --------------------------------------------------------------------------------------
# gradients against finite differences


def _onehot_edges(seqs):
    rows = [np.eye(16)[s[:-1] * 4 + s[1:]].reshape(-1, 4, 4) for s in seqs]
    return np.concatenate(rows)


def _random_marginals(rng, lengths):
    """Locally consistent chain marginals from a random chain (forward-backward)."""
    from sklearn_struct.oracles.chain import forward_backward

    offsets = np.cumsum([0] + list(lengths)).astype(np.int64)
    unary = rng.normal(size=(offsets[-1], 4))
    _, node, edge = forward_backward(unary, rng.normal(size=(4, 4)), offsets, edge_marginals="per_position")
    return node, edge, offsets


ALL = [AtMostSegments("title", 1), AtLeastSegments(["author", "date"], 1), AtMostTokens("journal", 1),
       MutuallyExclusive("journal", "date"), FirstLabel("author"), LastLabel("date"), Precedes("author", "title")]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.integers(1, 6), min_size=1, max_size=3))
def test_gradient_matches_finite_differences(seed, lengths):
    rng = np.random.RandomState(seed)
    X = [rng.normal(size=(n, 2)) for n in lengths]
    energy = _energy(ALL + [InputDependent("date", lambda x: np.abs(x[:, 0]), bound=0.5)]).bind(X)
    node, edge, offsets = _random_marginals(rng, lengths)
    psi = rng.uniform(0.0, 2.0, size=(len(lengths), energy.n_weights))
    gn, ge = energy.gradient(node, edge, offsets, psi)
    d_node, d_edge = rng.normal(size=node.shape), rng.normal(size=edge.shape)
    eps = 1e-6
    f = lambda a: energy.value(node + a * d_node, edge + a * d_edge, offsets, psi)  # noqa: E731
    fd = (f(eps) - f(-eps)) / (2 * eps)
    analytic = np.zeros(len(lengths))
    np.add.at(analytic, np.repeat(np.arange(len(lengths)), lengths), np.sum(gn * d_node, axis=1))
    np.add.at(analytic, np.repeat(np.arange(len(lengths)), np.array(lengths) - 1), np.sum(ge * d_edge, axis=(1, 2)))
    np.testing.assert_allclose(analytic, fd, rtol=1e-5, atol=1e-6)
    # term_gradient_dot is the same directional derivative, per term, with psi = 1
    tgd = energy.term_gradient_dot(node, edge, offsets, d_node, d_edge)
    f1 = lambda a: energy.term_values(node + a * d_node, edge + a * d_edge, offsets)  # noqa: E731
    np.testing.assert_allclose(tgd, (f1(eps) - f1(-eps)) / (2 * eps), rtol=1e-5, atol=1e-6)
    # lipschitz: sum_j psi_j ||a_j||^2 bounds the curvature along d
    lip = energy.lipschitz(offsets, psi)
    g2 = lambda a: energy.gradient(node + a * d_node, edge + a * d_edge, offsets, psi)  # noqa: E731
    ga, gb = g2(0.3), g2(-0.3)
    for s in range(len(lengths)):
        sl, el = slice(offsets[s], offsets[s + 1]), slice(offsets[s] - s, offsets[s + 1] - s - 1)
        dg = np.sqrt(np.sum((ga[0][sl] - gb[0][sl]) ** 2) + np.sum((ga[1][el] - gb[1][el]) ** 2))
        dx = 0.6 * np.sqrt(np.sum(d_node[sl] ** 2) + np.sum(d_edge[el] ** 2))
        assert dg <= lip[s] * dx + 1e-9


# --------------------------------------------------------------------------------------
# validation and use in NonLocalCRF


def test_template_validation_names_the_problem():
    with pytest.raises(ValueError, match="label 'tittle' is not one of the model's classes"):
        _energy([AtMostSegments("tittle")])
    with pytest.raises(ValueError, match="k must be an integer >= 0"):
        _energy([AtMostSegments("title", -1)])
    with pytest.raises(ValueError, match="overlap"):
        _energy([MutuallyExclusive(["title", "date"], "date")])
    with pytest.raises(ValueError, match="constraint 1 is a str"):
        _energy([FirstLabel("author"), "title"])
    with pytest.raises(ValueError, match="sense"):
        _energy([InputDependent("date", np.ones, sense="more")])


def test_nonlocal_crf_takes_a_list_of_templates():
    # labels are names; every sequence has exactly 3 tokens of "a" (one segment)
    rng = np.random.RandomState(0)
    names = np.array(["a", "b", "c"])
    y = []
    for _ in range(60):
        lab = rng.randint(1, 3, size=10)
        s = rng.randint(0, 6)
        lab[s : s + 3] = 0
        y.append(names[lab])
    X = [np.eye(3)[np.searchsorted(names, v)] + rng.normal(scale=1.0, size=(10, 3)) for v in y]
    templates = [AtMostTokens("a", 3), AtLeastTokens("a", 3), AtMostSegments("a", 1)]
    model = NonLocalCRF(templates, psi_holdout=3, n_epochs=1, random_state=0).fit(X, y)
    assert model.energy_.term_names_ == ["tokens('a') <= 3", "tokens('a') >= 3", "segments('a') <= 1"]
    assert model.psi_.shape == (3,) and model.energy_.uses_edges
    # with heavy weights the expected number of "a" tokens is pulled to 3
    strong = NonLocalCRF(templates, psi_init=10.0, n_epochs=0, inference_max_iter=200).fit(X, y)
    base = NonLocalCRF().fit(X, y)
    col = list(base.classes_).index("a")

    def off(m):
        return np.mean([abs(mu[:, col].sum() - 3) for mu in m.predict_marginals(X)])

    assert off(strong) < 0.5 * off(base)
