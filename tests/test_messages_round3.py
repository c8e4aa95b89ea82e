"""Messages that say what is wrong (issue #34 item 7): each case used to pass silently, fail later
with an unrelated error, or raise a raw library exception."""

import numpy as np
import pytest
import scipy.io

from sklearn_struct import NonLocalCRF
from sklearn_struct.constraint_learning import ConstraintFamily, kept_constraints
from sklearn_struct.datasets import (
    load_arff_multilabel,
    load_cmu_house_hotel,
    load_grobid_citations,
    make_chain_data,
    make_dependency_treebank,
)
from sklearn_struct.energies import SoftConstraintEnergy
from sklearn_struct.metrics import chunk_f1_score, chunk_precision_recall_f1, segment_report
from sklearn_struct.oracles.chain import sample_chain


@pytest.fixture(scope="module")
def chain_data():
    return make_chain_data(6, n_features=4, n_labels=3, random_state=0)


def _energy():
    return SoftConstraintEnergy(node_coef=[[0.0, -1.0, 0.0]], edge_coef=[np.zeros((3, 3))], offset=-2.0)


@pytest.mark.parametrize("bad", [np.nan, -1.0, 0.0, np.inf, "x", [1.0, 2.0]])
def test_md_step_size_callable_is_checked(chain_data, bad):
    X, y = chain_data
    with pytest.raises(ValueError, match=r"eta\(t\) must return .* at t=1"):
        NonLocalCRF(_energy(), inference="md", eta=lambda t: bad, n_epochs=1).fit(X, y)


def test_md_step_size_callable_that_is_valid_still_works(chain_data):
    X, y = chain_data
    est = NonLocalCRF(_energy(), inference="md", eta=lambda t: 1.0 / t, n_epochs=1).fit(X, y)
    assert len(est.predict(X)) == len(X)


def test_diverging_theta_learning_rate_is_named_during_fit(chain_data):
    X, y = chain_data
    with pytest.raises(ValueError, match=r"diverged at epoch \d+: .*theta_learning_rate=1e\+300"):
        NonLocalCRF(_energy(), learn_theta=True, theta_learning_rate=1e300).fit(X, y)


def test_kept_constraints_without_an_energy_says_so(chain_data):
    X, y = chain_data
    model = NonLocalCRF().fit(X, y)
    with pytest.raises(ValueError, match="fitted with energy=None, so it has no constraints"):
        kept_constraints(model)


@pytest.mark.parametrize("members", [None, "ab", 3])
def test_constraint_family_groups_need_lists(members):
    with pytest.raises(ValueError, match=r"groups\['g'\] must be a list of field names"):
        ConstraintFamily(groups={"g": members}).fit([["B-a", "I-a", "O", "B-b"]])


@pytest.mark.parametrize("n", [2.5, -3, 0, True, "3", None])
def test_make_dependency_treebank_needs_a_positive_int(n):
    with pytest.raises(ValueError, match=r"n_sentences must be an int >= 1"):
        make_dependency_treebank(n_sentences=n)


@pytest.mark.parametrize("zero_division", [np.inf, -5, 2, 0.5, True, "warn", None])
def test_metrics_zero_division_as_in_scikit_learn(zero_division):
    for f in (chunk_precision_recall_f1, chunk_f1_score, segment_report):
        with pytest.raises(ValueError, match="zero_division"):
            f([["O"]], [["O"]], zero_division=zero_division)


@pytest.mark.parametrize("zero_division, expected", [(0, 0.0), (1.0, 1.0), (np.nan, np.nan), ("nan", np.nan)])
def test_metrics_zero_division_valid_values(zero_division, expected):
    np.testing.assert_equal(chunk_f1_score([["O"]], [["O"]], zero_division=zero_division), expected)
    report = segment_report([["O"]], [["O"]], zero_division=zero_division, output_dict=True)
    np.testing.assert_equal(report["micro avg"]["f1-score"], expected)


@pytest.mark.parametrize("fieldsplit", ["no", "yes", 1, None])
def test_grobid_fieldsplit_must_be_a_bool(fieldsplit, tmp_path):
    with pytest.raises(ValueError, match="fieldsplit must be True or False"):
        load_grobid_citations(fieldsplit=fieldsplit, data_home=tmp_path)


def _cmum(tmp_path, frames):
    folder = tmp_path / "cmu_house_hotel"
    folder.mkdir(exist_ok=True)
    cells = np.empty(len(frames), dtype=object)
    cells[:] = frames
    scipy.io.savemat(folder / "cmum.mat", {"CMUM": {"house": {"XTs": cells}}}, do_compression=True)
    return folder / "cmum.mat"


def test_cmu_mat_reads_and_refuses_damaged_files(tmp_path):
    rng = np.random.default_rng(0)
    frames = [rng.normal(size=(2, 30)) for _ in range(3)]
    path = _cmum(tmp_path, frames)
    np.testing.assert_allclose(load_cmu_house_hotel("house", data_home=tmp_path).points[1], frames[1].T)
    raw = path.read_bytes()
    for label, damaged in [("truncated", raw[: len(raw) // 2]), ("zlib", raw[:200] + bytes(len(raw) - 200)),
                           ("header", b"\x00" * 10 + raw[10:]), ("empty", b""), ("text", b"hello\n" * 50)]:
        path.write_bytes(damaged)
        with pytest.raises(ValueError, match=r"cmum\.mat"):
            load_cmu_house_hotel("house", data_home=tmp_path)
    frames[2][1, 7] = np.nan
    _cmum(tmp_path, frames)
    with pytest.raises(ValueError, match=r"frame 2, point 7 is not finite"):
        load_cmu_house_hotel("house", data_home=tmp_path)


def test_sample_chain_checks_the_size_before_allocating():
    unary, trans = np.zeros((3, 2)), np.zeros((2, 2))
    with pytest.raises(ValueError, match=r"n_samples=1000000000000 draws of 3 tokens .* draw in batches"):
        sample_chain(unary, trans, np.array([0, 3]), n_samples=10**12)
    with pytest.raises(ValueError, match="n_samples must be a positive integer"):
        sample_chain(unary, trans, np.array([0, 3]), n_samples=True)
    assert sample_chain(unary, trans, np.array([0, 3]), n_samples=4, random_state=0).shape == (4, 3)


def test_arff_quoted_names_lose_their_escapes(tmp_path):
    path = tmp_path / "birds.arff"
    path.write_text("@relation 'bird\\'s song'\n"
                    "@attribute f1 numeric\n"
                    "@attribute 'Swainson\\'s Thrush' {0,1}\n"
                    "@attribute \"say \\\"hi\\\"\" {0,1}\n"
                    "@data\n0.5,1,0\n1.5,0,1\n")
    data = load_arff_multilabel(path, n_labels=2)
    assert list(data.target_names) == ["Swainson's Thrush", 'say "hi"']
    assert data.relation == "bird's song"
    np.testing.assert_array_equal(data.target, [[1, 0], [0, 1]])
