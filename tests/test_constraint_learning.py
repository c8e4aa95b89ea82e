"""ConstraintFamily (Anzaroot et al. 2014's candidate constraints from labels), psi_l1 and kept_constraints."""

import warnings

import numpy as np
import scipy.sparse as sp
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import NonLocalCRF
from sklearn_struct.constraint_learning import ConstraintFamily, hierarchy_groups, kept_constraints
from sklearn_struct.constraints import AtMostSegments, ConstraintEnergy

# a tiny hand-labelled set: three references in BIO labels
Y_BIO = [
    ["B-first", "B-last", "B-first", "B-last", "B-title", "I-title", "B-journal", "B-year"],
    ["B-first", "B-last", "B-title", "B-booktitle", "I-booktitle", "B-year"],
    ["B-first", "B-last", "B-title", "I-title", "B-journal", "I-journal"],
]


def _names(family, kind):
    return sorted(c.name for c, k in zip(family.constraints_, family.kinds_) if k == kind)


def test_candidates_by_hand():
    """Every candidate and its support, worked out by hand for Y_BIO (min_support=1.0)."""
    family = ConstraintFamily(min_support=1.0, min_cooccurrence=0.0).fit(Y_BIO)
    assert family.scheme_ == "BIO"
    assert family.fields_ == ["booktitle", "first", "journal", "last", "title", "year"]
    # counts per reference: booktitle 0 1 0, first 2 1 1, journal 1 0 1, last 2 1 1, title 1 1 1, year 1 1 0
    assert _names(family, "count") == sorted(["#booktitle <= 1", "#first <= 2", "#first >= 1", "#journal <= 1",
                                              "#last <= 2", "#last >= 1", "#title <= 1", "#title >= 1",
                                              "#year <= 1"])
    # first - last is always 0 (tighter than [1 - 2, 2 - 1]); title - first in [-1, 0] is tighter than
    # [1 - 2, 1 - 1] only on neither side; journal - booktitle in [-1, 1]: not tighter than [0 - 1, 1 - 0]
    diff = _names(family, "difference")
    assert "#first - #last <= 0" in diff and "#first - #last >= 0" in diff
    assert not any(name.startswith("#booktitle - #journal") for name in diff)
    # booktitle and journal never occur together: #booktitle + #journal <= 1 (count bounds allow 2)
    assert "#booktitle + #journal <= 1" in _names(family, "exclusive")
    assert "#first + #last <= 1" not in _names(family, "exclusive")  # they always co-occur
    # booktitle => year (the only reference with a booktitle has a year); journal => year fails once
    imp = _names(family, "implies")
    assert "booktitle => year (1 #year - #booktitle >= 0)" in imp
    assert not any(name.startswith("journal => year") for name in imp)
    assert not any(name.endswith("#first >= 0)") for name in imp)  # first is already required (#first >= 1)
    np.testing.assert_array_equal(family.support_, 1.0)


def test_candidates_support_threshold_and_io():
    family = ConstraintFamily(kinds=("count",), min_support=0.6).fit(Y_BIO)
    # with 2 of 3 references enough: #first <= 1 (refs 2, 3), #year >= 1 (refs 1, 2)
    assert "#first <= 1" in _names(family, "count") and "#year >= 1" in _names(family, "count")
    assert np.all(family.support_ >= 0.6)
    io = [[lab[2:] for lab in seq] for seq in Y_BIO]
    fam_io = ConstraintFamily(kinds=("count",), min_support=1.0).fit(io)
    assert fam_io.scheme_ == "IO"
    # IO segments are runs: reference 1 has first/last alternating, two runs of each
    assert "#first <= 2" in _names(fam_io, "count")
    title = next(c for c in fam_io.constraints_ if c.name == "#title <= 1")
    assert title.node == {"title": 1} and title.edge == {("title", "title"): -1}


def test_candidates_compile_and_measure_gold():
    """The compiled constraints hold on every gold sequence at min_support=1 (violations all zero)."""
    family = ConstraintFamily(min_support=1.0, min_cooccurrence=0.0).fit(Y_BIO)
    classes = np.array(sorted({lab for seq in Y_BIO for lab in seq}))
    energy = ConstraintEnergy(family.constraints_).fit(None, len(classes), classes=classes)
    assert energy.term_names_ == [c.name for c in family.constraints_]
    y_enc = [np.searchsorted(classes, seq) for seq in Y_BIO]
    np.testing.assert_array_equal(energy.violations(y_enc), 0.0)
    # a reference with two titles breaks "#title <= 1" by one unit
    two = np.searchsorted(classes, ["B-title", "B-title", "B-first", "B-last"])
    v = energy.violations([two])[0]
    assert v[energy.term_names_.index("#title <= 1")] == 1.0


@pytest.mark.parametrize("kwargs, message", [
    (dict(kinds=("count", "order")), "kinds must be a non-empty subset"),
    (dict(kinds=()), "kinds must be a non-empty subset"),
    (dict(min_support=0.0), "min_support"),
    (dict(scheme="BIOES"), "scheme"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ConstraintFamily(**kwargs).fit(Y_BIO)


def test_bad_labels():
    with pytest.raises(ValueError, match="non-empty list"):
        ConstraintFamily().fit([])
    with pytest.raises(ValueError, match="sequence 1 is empty"):
        ConstraintFamily().fit([["B-a"], []])
    with pytest.raises(ValueError, match="not a BIO label"):
        ConstraintFamily(scheme="BIO").fit([["B-a", "a"]])


def _planted(n, rng):
    """Each sequence: C at position 0 (easy), exactly one A elsewhere (noisy evidence), O otherwise."""
    X, y = [], []
    for _ in range(n):
        lab = np.array(["O"] * 8, dtype=object)
        lab[0] = "C"
        lab[rng.randint(1, 8)] = "A"
        x = np.zeros((8, 3))
        x[:, 0] = (lab == "A") + rng.normal(scale=0.7, size=8)
        x[0, 1] = x[:, 2] = 1
        X.append(x)
        y.append(lab.astype(str))
    return X, y


def _fit(constraints, psi_l1, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return NonLocalCRF(constraints, psi_init=0.0, psi_l1=psi_l1, learning_rate=1.0, n_epochs=3,
                           random_state=0).fit(X, y)


def test_psi_learning_recovers_planted_and_l1_zeroes_useless():
    rng = np.random.RandomState(0)
    X, y = _planted(300, rng)
    family = ConstraintFamily(kinds=("count",), min_support=1.0).fit(y)
    assert [c.name for c in family.constraints_] == ["#A <= 1", "#A >= 1", "#C <= 1", "#C >= 1"]
    free = _fit(family.constraints_, 0.0, X, y)
    psi = dict(zip(free.energy_.term_names_, free.psi_))
    assert psi["#A <= 1"] > 0.3 and psi["#A >= 1"] > 0.3  # the planted rule: exactly one A
    assert 0 < psi["#C >= 1"] < 0.05  # C is certain at position 0: (almost) nothing to learn
    sparse = _fit(family.constraints_, 0.01, X, y)
    psi = dict(zip(sparse.energy_.term_names_, sparse.psi_))
    assert psi["#C <= 1"] == 0.0 and psi["#C >= 1"] == 0.0  # exactly zero
    assert psi["#A <= 1"] > 0.2 and psi["#A >= 1"] > 0.2
    kept = kept_constraints(sparse)
    assert [c.name for c, _ in kept] == ["#A <= 1", "#A >= 1"] or [c.name for c, _ in kept] == ["#A >= 1", "#A <= 1"]
    # the kept set is a template list a user can edit and pass back
    again = _fit([c for c, _ in kept] + [AtMostSegments("C", 1)], 0.0, X, y)
    assert again.energy_.term_names_[:2] == [c.name for c, _ in kept]
    Xt, yt = _planted(300, rng)
    assert sparse.score(Xt, yt) > NonLocalCRF().fit(X, y).score(Xt, yt)


def test_kept_constraints_needs_constraint_energy():
    rng = np.random.RandomState(1)
    X, y = _planted(20, rng)
    with pytest.raises(ValueError, match="fitted with constraint templates"):
        from sklearn_struct.energies import WordDictionaryEnergy

        kept_constraints(NonLocalCRF(WordDictionaryEnergy(), n_epochs=1, psi_holdout=None).fit(X, y))


def _fit_perceptron(constraints, psi_l1, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return NonLocalCRF(constraints, psi_gradient="perceptron", psi_init=0.0, psi_l1=psi_l1, learning_rate=1.0,
                           learning_rate_schedule="constant", n_epochs=3, random_state=0, **kw).fit(X, y)


def test_perceptron_psi_recovers_planted_and_l1_zeroes_useless():
    """Anzaroot et al.'s learner: the planted rule gets weight, the never-separating ones stay at zero."""
    rng = np.random.RandomState(0)
    X, y = _planted(300, rng)
    family = ConstraintFamily(kinds=("count",), min_support=1.0).fit(y)
    model = _fit_perceptron(family.constraints_, 0.0, X, y)
    psi = dict(zip(model.energy_.term_names_, model.psi_))
    assert psi["#A <= 1"] + psi["#A >= 1"] > 0.3  # the planted rule: exactly one A
    assert psi["#C <= 1"] == 0.0 and psi["#C >= 1"] == 0.0  # C is always decoded right: no step moves it
    sparse = _fit_perceptron(family.constraints_, 0.02, X, y)
    assert sparse.psi_[:2].sum() > 0.1 and np.all(sparse.psi_ <= model.psi_ + 1e-12)
    Xt, yt = _planted(300, rng)
    assert model.score(Xt, yt) > NonLocalCRF().fit(X, y).score(Xt, yt)
    # only wrongly decoded sequences move psi: with the labels decoded right everywhere, psi stays psi_init
    X_easy = [x * 0 + np.c_[(np.asarray(v) == "A") * 5.0, x[:, 1:]] for x, v in zip(X, y)]
    easy = _fit_perceptron(family.constraints_, 0.0, X_easy, y, psi_holdout=None)
    assert np.all(easy.psi_ == 0.0)


def test_perceptron_psi_rejects_what_it_cannot_learn():
    from sklearn_struct.energies import WordDictionaryEnergy

    rng = np.random.RandomState(1)
    X, y = _planted(30, rng)
    with pytest.raises(ValueError, match="perceptron.*violations"):
        _fit_perceptron(WordDictionaryEnergy(), 0.0, X, y, psi_holdout=None)
    with pytest.raises(ValueError, match="perceptron.*psi_features"):
        _fit_perceptron([AtMostSegments("A", 1)], 0.0, X, y, psi_holdout=None).fit(X, y, psi_features=np.ones((30, 1)))


def test_perceptron_psi_with_input_dependent_rule():
    """Input-dependent terms are bound per training sequence: the planted 'feature 0 high -> A' rule gets weight."""
    from sklearn_struct.constraints import InputDependent

    rng = np.random.RandomState(2)
    X, y = _planted(200, rng)
    rule = InputDependent("A", lambda x: (np.asarray(x)[:, 0] == np.asarray(x)[:, 0].max()).astype(float),
                          sense="at_least")
    model = _fit_perceptron([rule, AtMostSegments("C", 1)], 0.0, X, y)
    assert model.psi_.shape == (2,) and np.all(np.isfinite(model.psi_))
    assert model.psi_[0] > 0.1 and model.psi_[1] == 0.0


# the tree of Y_BIO's fields: token paths (outermost tag first), as load_umass_citations gives them
PATHS = [
    [("authors", "person", "first"), ("authors", "person", "last"), ("authors", "person", "first"),
     ("authors", "person", "last"), ("title",), ("title",), ("venue", "journal"), ("venue", "date", "year")],
    [("authors", "person", "first"), ("authors", "person", "last"), ("title",), ("venue", "booktitle"),
     ("venue", "booktitle"), ("venue", "date", "year")],
    [("authors", "person", "first"), ("authors", "person", "last"), ("title",), ("title",), ("venue", "journal"),
     ("venue", "journal")],
]


def test_hierarchy_groups_from_paths():
    groups = hierarchy_groups(PATHS)
    # date holds only year (a group of one field is that field): dropped
    assert groups == {"authors": ["first", "last"], "person": ["first", "last"],
                      "venue": ["booktitle", "journal", "year"]}
    # a leaf mostly under another parent does not join: year is under venue in 2 of 2 tokens, but add 3 outside
    more = PATHS + [[("year",), ("year",), ("year",)]]
    assert "year" not in hierarchy_groups(more)["venue"]


def test_hierarchy_candidates_by_hand():
    """Group fields count runs of their members; parent-child candidates by hand (min_support=1)."""
    y = [list(s) for s in Y_BIO]
    y[0][2] = "O"  # reference 1: first last O last, two person runs: [first last] O [last]
    family = ConstraintFamily(min_support=1.0, min_cooccurrence=0.0,
                              groups={"person": ["first", "last"], "venue": ["booktitle", "journal", "year"]}).fit(y)
    assert family.fields_[-2:] == ["[person]", "[venue]"]
    names = [c.name for c in family.constraints_]
    # person runs per reference: 2, 1, 1; venue runs: 1, 1, 1 (journal+year, booktitle+year, journal)
    assert "#[person] <= 2" in names and "#[venue] <= 1" in names and "#[venue] >= 1" in names
    # year - [venue] is in [-1, 0]: tighter than the count bounds imply ([0 - 1, 1 - 1] on neither side)
    assert not any(n.startswith("#year - #[venue]") for n in names)
    # last - [person] is 0 everywhere (both 2, 1, 1)
    assert "#last - #[person] <= 0" in names and "#last - #[person] >= 0" in names
    classes = np.array(sorted({lab for seq in y for lab in seq}))
    energy = ConstraintEnergy(family.constraints_).fit(None, len(classes), classes=classes)
    y_enc = [np.searchsorted(classes, seq) for seq in y]
    np.testing.assert_array_equal(energy.violations(y_enc), 0.0)
    # a venue split in two (journal, title, year) breaks "#[venue] <= 1" by one unit
    split = np.searchsorted(classes, ["B-first", "B-last", "B-journal", "B-title", "B-year"])
    v = energy.violations([split])[0]
    assert v[energy.term_names_.index("#[venue] <= 1")] == 1.0


def _has_col(j):
    return lambda x: bool(np.asarray(x)[:, j].sum() > 0)


def test_conditional_candidates_by_hand():
    """'#year >= 1 if a year-like token': tighter than year's count bounds, measured per sequence."""
    X = [np.zeros((len(s), 2)) for s in Y_BIO]
    X[0][7, 1] = X[1][5, 1] = 1  # column 1: year-like token, present where the gold has a year
    family = ConstraintFamily(kinds=("conditional",), min_support=1.0, min_cooccurrence=0.0,
                              patterns={"year-like": _has_col(1)}).fit(Y_BIO, X)
    names = [c.name for c in family.constraints_]
    assert "#year >= 1 if year-like" in names and "#year <= 0 if not year-like" in names
    assert "#first >= 1 if year-like" not in names  # not tighter than #first >= 1
    np.testing.assert_array_equal(family.support_, 1.0)
    classes = np.array(sorted({lab for seq in Y_BIO for lab in seq}))
    energy = ConstraintEnergy(family.constraints_).fit(None, len(classes), classes=classes)
    assert energy.term_names_ == names
    y_enc = [np.searchsorted(classes, seq) for seq in Y_BIO]
    np.testing.assert_array_equal(energy.violations(y_enc, X), 0.0)
    # drop the year of reference 1 (it has a year-like token) -> "#year >= 1 if year-like" broken there only
    no_year = [v.copy() for v in y_enc]
    no_year[0][7] = np.searchsorted(classes, "B-title")
    j = names.index("#year >= 1 if year-like")
    np.testing.assert_array_equal(energy.violations(no_year, X)[:, j], [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="needs patterns"):
        ConstraintFamily(kinds=("conditional",), patterns={"y": _has_col(1)}).fit(Y_BIO)
    io = [[lab[2:] for lab in seq] for seq in Y_BIO]
    with pytest.raises(ValueError, match="needs BIO labels"):
        ConstraintFamily(kinds=("conditional",), patterns={"y": _has_col(1)}).fit(io, X)


def test_length_candidates_by_hand():
    """Tokens per segment of each field in Y_BIO: booktitle 2; first, last, year 1 (no I- label: no rule);
    journal 1, 2; title 2, 1, 2."""
    family = ConstraintFamily(kinds=("length",), min_support=1.0, min_cooccurrence=0.0).fit(Y_BIO)
    assert sorted(c.name for c in family.constraints_) == sorted([
        "tokens(booktitle) <= 2 #booktitle", "tokens(booktitle) >= 2 #booktitle", "tokens(journal) <= 2 #journal",
        "tokens(title) <= 2 #title"])
    merged = [list(Y_BIO[2][:2]) + ["B-title", "I-title", "I-title", "I-title"]]  # title swallows the journal
    for y, m in ((Y_BIO, merged), ([[lab[2:] for lab in s] for s in Y_BIO], [[lab[2:] for lab in merged[0]]])):
        fam = ConstraintFamily(kinds=("length",), min_support=1.0, min_cooccurrence=0.0).fit(y)
        if fam.scheme_ == "IO":  # runs of one token can still be joined: first, last, year get "<= 1" rules
            assert {"tokens(first) <= 1 #first", "tokens(year) <= 1 #year"} < {c.name for c in fam.constraints_}
        else:
            assert [c.name for c in fam.constraints_] == [c.name for c in family.constraints_]
        classes = np.array(sorted({lab for seq in y for lab in seq}))
        energy = ConstraintEnergy(fam.constraints_).fit(None, len(classes), classes=classes)
        np.testing.assert_array_equal(energy.violations([np.searchsorted(classes, s) for s in y]), 0.0)
        v = energy.violations([np.searchsorted(classes, m[0])])[0]
        broken = {n for n, x in zip(energy.term_names_, v) if x > 0}
        assert broken == {"tokens(title) <= 2 #title"}


def test_cue_candidates_by_hand():
    """Column 1 is on in references 1 and 2 (both have a year), column 0 everywhere (never a cue)."""
    X = [np.zeros((len(s), 2)) for s in Y_BIO]
    for x in X:
        x[0, 0] = 1
    X[0][3, 1] = X[1][0, 1] = 1
    family = ConstraintFamily(kinds=("cue",), min_support=1.0, min_cooccurrence=0.0,
                              feature_names=["bias", "yearish"]).fit(Y_BIO, X)
    names = [c.name for c in family.constraints_]
    # with the cue: year 1, 1 (>= 1, tighter than 0); booktitle 0, 1 and journal 1, 0 (no bound tighter);
    # title, first, last already bounded as tightly by their counts
    assert "#year >= 1 if yearish" in names
    assert not any(n.endswith("if bias") for n in names)
    assert not any(n.startswith(("#booktitle", "#journal")) for n in names)
    classes = np.array(sorted({lab for seq in Y_BIO for lab in seq}))
    energy = ConstraintEnergy(family.constraints_).fit(None, len(classes), classes=classes)
    y_enc = [np.searchsorted(classes, seq) for seq in Y_BIO]
    np.testing.assert_array_equal(energy.violations(y_enc, X), 0.0)
    no_year = [v.copy() for v in y_enc]
    no_year[0][7] = no_year[2][5] = np.searchsorted(classes, "B-title")  # reference 3 has no cue: still fine
    j = names.index("#year >= 1 if yearish")
    assert energy.violations(no_year, X)[:, j].tolist() == [1.0, 0.0, 0.0]


def test_cue_recovers_a_planted_rule():
    """Generated references: where column 3 is on, a pages segment always follows; noise columns predict nothing."""
    rng = np.random.default_rng(0)
    X, y = [], []
    for _ in range(300):
        cue = rng.random() < 0.5
        labels = ["B-title", "I-title"] + (["B-pages"] if cue or rng.random() < 0.3 else []) + ["B-year"]
        x = (rng.random((len(labels), 6)) < 0.3).astype(float)
        x[:, 3] = 0
        if cue:
            x[rng.integers(len(labels)), 3] = 1
        X.append(sp.csr_matrix(x))
        y.append(labels)
    family = ConstraintFamily(kinds=("cue",), min_support=0.95, n_cues=2).fit(y, X)
    pages = [c.name for c in family.constraints_ if c.name.startswith("#pages")]
    assert pages == ["#pages >= 1 if x[3]"]


def test_cue_and_length_bad_input():
    X = [np.zeros((len(s), 2)) for s in Y_BIO]
    with pytest.raises(ValueError, match="'cue' needs X in fit"):
        ConstraintFamily(kinds=("cue",)).fit(Y_BIO)
    with pytest.raises(ValueError, match="'cue' needs BIO labels"):
        ConstraintFamily(kinds=("cue",)).fit([[lab[2:] for lab in s] for s in Y_BIO], X)
    with pytest.raises(ValueError, match="feature_names has 3 names, X has 2"):
        ConstraintFamily(kinds=("cue",), feature_names=["a", "b", "c"]).fit(Y_BIO, X)
    with pytest.raises(ValueError, match="X: sequence 1 has 3 features, sequence 0 has 2"):
        ConstraintFamily(kinds=("cue",)).fit(Y_BIO, [X[0], np.zeros((6, 3)), X[2]])
    with pytest.raises(ValueError, match="X: sequence 2 must be a 2D feature matrix"):
        ConstraintFamily(kinds=("cue",)).fit(Y_BIO, [X[0], X[1], [1, 2]])
    with pytest.raises(ValueError, match="kinds must be"):
        ConstraintFamily(kinds=("length", "lengths")).fit(Y_BIO)
    with pytest.raises(ValueError, match="X: sequence 1 has 2 rows, but its labels have"):
        ConstraintFamily(kinds=("cue",)).fit(Y_BIO, [X[0], np.zeros((2, 2)), X[2]])
    nan = X[2].copy()
    nan[0, 1] = np.nan
    with pytest.raises(ValueError, match="X: sequence 2 has NaN or infinite features"):
        ConstraintFamily(kinds=("cue",)).fit(Y_BIO, [X[0], X[1], nan])
    with pytest.raises(ValueError, match="X: sequence 0 has NaN or infinite features"):
        ConstraintFamily(kinds=("cue",)).fit(Y_BIO, [sp.csr_matrix(np.full(X[0].shape, np.inf)), X[1], X[2]])


def test_position_candidates_by_hand():
    """Y_BIO starts with B-first three times and ends with B-year, B-year, I-journal."""
    family = ConstraintFamily(kinds=("position",), min_support=1.0).fit(Y_BIO)
    assert [c.name for c in family.constraints_] == ["first token in {B-first}", "last token in {B-year, I-journal}"]
    assert [c.name for c in ConstraintFamily(kinds=("position",), min_support=0.6).fit(Y_BIO).constraints_] == [
        "first token in {B-first}", "last token in {B-year}"]
    classes = np.array(sorted({lab for seq in Y_BIO for lab in seq}))
    energy = ConstraintEnergy(family.constraints_).fit(None, len(classes), classes=classes)
    y_enc = [np.searchsorted(classes, seq) for seq in Y_BIO]
    np.testing.assert_array_equal(energy.violations(y_enc), 0.0)
    title_first = np.searchsorted(classes, ["B-title", "I-title", "B-first", "B-last", "B-year"])
    assert energy.violations([title_first])[0].tolist() == [1.0, 0.0]


def test_region_candidates_by_hand():
    """First third of Y_BIO: tokens 0-2 of 8, 0-1 of 6; last third: tokens 5-7 of 8, 4-5 of 6."""
    family = ConstraintFamily(kinds=("region",), min_support=1.0).fit(Y_BIO)
    assert sorted(c.name for c in family.constraints_) == sorted([
        "#first in the first third >= 1", "#last in the first third >= 1", "#last in the first third <= 1",
        "#title in the first third <= 0", "#journal in the first third <= 0", "#booktitle in the first third <= 0",
        "#year in the first third <= 0", "#first in the last third <= 0", "#last in the last third <= 0",
        "#title in the last third <= 0", "#booktitle in the last third <= 0"])
    classes = np.array(sorted({lab for seq in Y_BIO for lab in seq}))
    energy = ConstraintEnergy(family.constraints_).fit(None, len(classes), classes=classes)
    y_enc = [np.searchsorted(classes, seq) for seq in Y_BIO]
    X = [np.zeros((len(s), 1)) for s in Y_BIO]
    np.testing.assert_array_equal(energy.violations(y_enc, X), 0.0)
    title_first = np.searchsorted(classes, ["B-title", "I-title", "B-first", "B-last", "B-journal", "B-year"])
    v = energy.violations([title_first], [np.zeros((6, 1))])[0]
    assert {n for n, x in zip(energy.term_names_, v) if x > 0} == {
        "#title in the first third <= 0", "#first in the first third >= 1", "#last in the first third >= 1"}
    with pytest.raises(ValueError, match="'region' needs BIO labels"):
        ConstraintFamily(kinds=("region",)).fit([[lab[2:] for lab in s] for s in Y_BIO])
