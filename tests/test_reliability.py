"""Regression tests for the reliability issue (#8): each defect reproduced, each must raise a clear error.

Every test here failed before its fix (a segfault, garbage, NaN, an IndexError or a
misleading message) and checks the exact behaviour now: a ValueError/TypeError naming the
argument (and the index), or a finite, correct result.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_struct.oracles.chain import forward_backward, sample_chain, viterbi
from sklearn_struct.oracles.linear import LinearFeatures
from sklearn_struct.oracles.loopy import bethe_free_energy, build_adjacency, log_softmax, loopy_bp
from sklearn_struct.utils import subset_sequences, transition_pairs
from sklearn_struct.utils.optimize import lbfgs


def _run_isolated(code):
    """Run ``code`` in a fresh interpreter: a segfault fails the test instead of killing pytest."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# ---------------------------------------------------------------- defect 2: build_adjacency


def test_build_adjacency_checks_node_ids_in_a_subprocess():
    out = _run_isolated("""
        import numpy as np
        from sklearn_struct.oracles.loopy import build_adjacency
        for edges, n in [(np.array([[0, 10**6], [1, 2]]), 3), (np.array([[0, -1]]), 3), (np.array([[0, 1]]), 0)]:
            try:
                build_adjacency(edges, n)
                print("no error")
            except ValueError as exc:
                print("ValueError:", exc)
    """)
    lines = out.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("ValueError") for line in lines), out
    assert "edge 0 = (0, 1000000) refers to a node outside [0, 2]" in lines[0]
    assert "edge 0 = (0, -1)" in lines[1]
    assert "n_nodes must be in [1, inf]" in lines[2]


def test_build_adjacency_rejects_bad_edge_arrays():
    with pytest.raises(ValueError, match="edges must have shape"):
        build_adjacency(np.array([0, 1, 2]), 3)
    with pytest.raises(ValueError, match="integer node indices"):
        build_adjacency(np.array([[0.5, 1.0]]), 3)
    with pytest.raises(TypeError, match="n_nodes must be an integer"):
        build_adjacency(np.array([[0, 1]]), 2.5)
    adj = build_adjacency(np.array([[0, 1], [1, 2]]), 3)
    assert adj.indptr.tolist() == [0, 1, 3, 4]


def test_loopy_bp_rejects_an_adjacency_of_another_graph():
    out = _run_isolated("""
        import numpy as np
        from sklearn_struct.oracles.loopy import build_adjacency, loopy_bp
        adj = build_adjacency(np.array([[0, 1]]), 2)
        try:
            loopy_bp(np.zeros((3, 2)), [[0, 1], [1, 2]], np.eye(2), adjacency=adj)
        except ValueError as exc:
            print("ValueError:", exc)
    """)
    assert "ValueError: adjacency.indptr does not fit this graph" in out


# ---------------------------------------------------------------- defect 3: NaN in loopy / log_softmax


def test_loopy_bp_rejects_nan_init_messages():
    with pytest.raises(ValueError, match=r"init_messages contains NaN at index \(1, 0\)"):
        loopy_bp(np.zeros((2, 2)), [[0, 1]], np.eye(2), init_messages=np.array([[0.0, 0.0], [np.nan, 0.0]]))
    with pytest.raises(ValueError, match=r"init_messages must have shape \(2, 2\)"):
        loopy_bp(np.zeros((2, 2)), [[0, 1]], np.eye(2), init_messages=np.zeros((3, 2)))


def test_bethe_free_energy_rejects_nan_and_misshaped_marginals():
    unary, edges, pw = np.zeros((2, 2)), np.array([[0, 1]]), np.eye(2)
    node, edge = np.full((2, 2), 0.5), np.full((1, 2, 2), 0.25)
    assert np.isfinite(bethe_free_energy(unary, edges, pw, node, edge))
    with pytest.raises(ValueError, match=r"node_marginals contains NaN at index \(0, 1\)"):
        bethe_free_energy(unary, edges, pw, np.array([[0.5, np.nan], [0.5, 0.5]]), edge)
    with pytest.raises(ValueError, match=r"edge_marginals must have shape \(1, 2, 2\)"):
        bethe_free_energy(unary, edges, pw, node, np.full((2, 2, 2), 0.25))
    with pytest.raises(ValueError, match=r"node_marginals must lie in \[0, 1\]"):
        bethe_free_energy(unary, edges, pw, np.array([[1.5, -0.5], [0.5, 0.5]]), edge)


def test_log_softmax_any_ndim_and_all_minus_inf_rows():
    v = np.array([0.0, np.log(3.0)])
    np.testing.assert_allclose(np.exp(log_softmax(v)), [0.25, 0.75])
    cube = np.arange(12.0).reshape(2, 3, 2)
    np.testing.assert_allclose(log_softmax(cube).reshape(-1, 2), log_softmax(cube.reshape(-1, 2)))
    np.testing.assert_allclose(np.exp(log_softmax(np.array([[0.0, -np.inf]]))), [[1.0, 0.0]])
    with pytest.raises(ValueError, match=r"unary row 1 is -inf for every state"):
        log_softmax(np.array([[0.0, 1.0], [-np.inf, -np.inf]]))
    with pytest.raises(ValueError, match="unary contains NaN"):
        log_softmax(np.array([[np.nan, 1.0]]))


# ---------------------------------------------------------------- defect 4: LinearFeatures shapes


@pytest.mark.parametrize("sparse", [False, True])
def test_linear_features_check_weight_shapes(sparse):
    X = np.eye(3)
    lf = LinearFeatures(sp.csr_matrix(X) if sparse else X, 2)
    with pytest.raises(ValueError, match=r"w must have shape \(6,\), got \(5,\)"):
        lf.scores(np.zeros(5))
    with pytest.raises(ValueError, match=r"w must have shape \(6,\), got \(3, 2\)"):
        lf.scores(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="w contains NaN at index 2"):
        lf.scores(np.array([0, 0, np.nan, 0, 0, 0.0]))
    with pytest.raises(ValueError, match=r"D must have shape \(3, 2\)"):
        lf.gradient(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"w must have shape \(6,\)"):
        lf.dense_coef(np.zeros(7))
    with pytest.raises(ValueError, match=r"W must have shape \(3, 2\)"):
        lf.pair_weights(np.zeros((2, 3)))
    np.testing.assert_allclose(lf.scores(np.arange(6.0)), X @ np.arange(6.0).reshape(3, 2))


def test_linear_features_check_pairs_and_features():
    X = sp.csr_matrix(np.eye(3))
    with pytest.raises(ValueError, match=r"pair_label\[0\] = 5 is out of range \[0, 1\]"):
        LinearFeatures(X, 2, pairs=(np.array([0, 1, 2, 3]), np.array([5, 0, 1])))
    with pytest.raises(ValueError, match="pair_ptr must have n_features \\+ 1 = 4 entries"):
        LinearFeatures(X, 2, pairs=(np.array([0, 1, 2]), np.array([0, 1])))
    with pytest.raises(ValueError, match="X contains NaN"):
        LinearFeatures(np.array([[np.nan, 1.0]]), 2)
    with pytest.raises(ValueError, match="n_labels must be in"):
        LinearFeatures(np.eye(2), 0)


# ---------------------------------------------------------------- defect 5: packing offsets


def test_subset_sequences_and_transition_pairs_check_offsets():
    with pytest.raises(ValueError, match=r"idx\[1\] = 3 is out of range \[0, 2\]"):
        subset_sequences(np.array([0, 2, 3, 6]), np.array([0, 3]))
    with pytest.raises(ValueError, match=r"idx\[0\] = -1 is out of range"):
        subset_sequences(np.array([0, 2, 3, 6]), np.array([-1]))
    with pytest.raises(ValueError, match="offsets: sequence 1 has length -2"):
        subset_sequences(np.array([0, 5, 3, 6]), np.array([0]))
    with pytest.raises(ValueError, match="offsets must start at 0"):
        transition_pairs(np.arange(5), np.array([1, 5]))
    with pytest.raises(ValueError, match=r"y must be 1D with one label per token \(7\)"):
        transition_pairs(np.arange(5), np.array([0, 2, 7]))
    with pytest.raises(ValueError, match="offsets: sequence 1 has length 0"):
        transition_pairs(np.arange(5), np.array([0, 5, 5]))
    tok, etok, sub = subset_sequences(np.array([0, 2, 3, 6]), np.array([0, 2]))
    assert sub.tolist() == [0, 2, 5] and tok.tolist() == [0, 1, 3, 4, 5]


# ---------------------------------------------------------------- defect 6: lbfgs and NaN gradients


def test_lbfgs_does_not_report_success_on_a_nan_gradient():
    res = lbfgs(lambda x: (0.0, np.full(2, np.nan)), np.zeros(2))
    assert not res.success and "not finite" in res.message
    res = lbfgs(lambda x: (np.nan, np.zeros(2)), np.zeros(2))
    assert not res.success
    with pytest.raises(ValueError, match="x0 contains NaN"):
        lbfgs(lambda x: (0.0, x), np.array([np.nan]))
    with pytest.raises(ValueError, match=r"gradient must be a real array of shape \(2,\)"):
        lbfgs(lambda x: (0.0, np.zeros(3)), np.zeros(2))
    good = lbfgs(lambda x: (np.sum((x - 3) ** 2), 2 * (x - 3)), np.zeros(4), tol=0)
    assert good.success and np.allclose(good.x, 3)


# ---------------------------------------------------------------- defect 7: sampling infeasible tokens


def test_sample_chain_raises_on_an_infeasible_sequence_like_the_other_oracles():
    unary = np.zeros((5, 3))
    unary[3] = -np.inf  # sequence 1 (tokens 2..4) has a token with every label forbidden
    offsets = np.array([0, 2, 5])
    for oracle in (forward_backward, viterbi, sample_chain):
        with pytest.raises(ValueError, match="Sequence 1 has no label sequence with finite potential"):
            oracle(unary, np.zeros((3, 3)), offsets)


def test_chain_oracles_name_overflow_not_minus_inf():
    for oracle in (forward_backward, viterbi, sample_chain):
        with pytest.raises(ValueError, match="Sequence 0: its potentials overflow float64"):
            oracle(np.full((3, 2), 1e308), np.zeros((2, 2)), np.array([0, 3]))


def test_chain_offsets_must_be_integers():
    with pytest.raises(ValueError, match="offsets must hold integers"):
        forward_backward(np.zeros((3, 2)), np.zeros((2, 2)), np.array([0, 1.5, 3]))
    with pytest.raises(ValueError, match="unary must be real"):
        forward_backward(np.zeros((3, 2)) + 1j, np.zeros((2, 2)), np.array([0, 3]))


# ---------------------------------------------------------------- defect 8: estimators' input validation


def _chain_data():
    from sklearn_struct.datasets import make_chain_data

    return make_chain_data(4, random_state=0)


def _graph_data():
    from sklearn_struct.datasets import make_ising_grid
    from sklearn_struct.utils.graph import images_to_graphs

    noisy, clean = make_ising_grid(n_images=1, n_noisy=3, shape=(5, 5), random_state=0)[:2]
    return images_to_graphs(noisy), [c.ravel() for c in clean]


def test_fit_without_y_names_the_missing_target():
    from sklearn_struct import NonLocalCRF, PrunedBPMarginals

    X, _ = _chain_data()
    with pytest.raises(ValueError, match="NonLocalCRF requires y to be passed, but the target y is None"):
        NonLocalCRF().fit(X, None)
    G, _ = _graph_data()
    with pytest.raises(ValueError, match="PrunedBPMarginals requires y to be passed"):
        PrunedBPMarginals().fit(G, None)


@pytest.mark.parametrize("make_x", [lambda X: sp.csr_matrix(X[0]), lambda X: X[0], lambda X: X[0][0]])
def test_a_single_matrix_is_not_a_list_of_sequences(make_x):
    from sklearn_struct import NonLocalCRF

    X, y = _chain_data()
    with pytest.raises(ValueError, match="X must be a list of sequences"):
        NonLocalCRF(max_iter=2).fit(make_x(X), y[:1])


@pytest.mark.parametrize("sparse", [False, True])
def test_complex_features_are_rejected(sparse):
    from sklearn_struct import NonLocalCRF, PrunedBPMarginals

    X, y = _chain_data()
    Xc = [(sp.csr_matrix(x) * (1 + 1j)) if sparse else x + 1j for x in X]
    with pytest.raises(ValueError, match="Sequence 0: features are complex"):
        NonLocalCRF(max_iter=2).fit(Xc, y)
    G, gy = _graph_data()
    with pytest.raises(ValueError, match="Sample 0: node features are complex"):
        PrunedBPMarginals(max_iter=2).fit([(g[0] + 1j, g[1]) for g in G], gy)


# ---------------------------------------------------------------- defect 9: score's sample_weight


def test_pruned_bp_score_checks_sample_weight():
    import warnings

    from sklearn_struct import PrunedBPMarginals

    G, y = _graph_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrunedBPMarginals(max_iter=3).fit(G, y)
    with pytest.raises(ValueError, match="sample_weight sums to 0"):
        est.score(G, y, sample_weight=np.zeros(3))
    with pytest.raises(ValueError, match="sample_weight has 2 entries, but there are 3 samples"):
        est.score(G, y, sample_weight=np.ones(2))
    with pytest.raises(ValueError, match="sample_weight contains NaN at index 1"):
        est.score(G, y, sample_weight=[1.0, np.nan, 1.0])
    with pytest.raises(ValueError, match=r"sample_weight\[0\] is negative"):
        est.score(G, y, sample_weight=[-1.0, 1.0, 1.0])
    assert est.score(G, y, sample_weight=[1.0, 0.0, 0.0]) == est.score(G[:1], y[:1])


# ---------------------------------------------------------------- defect 10: pruned_marginals parameters


@pytest.mark.parametrize("kwargs, match", [
    ({"m": -3, "objective": "min_divergence"}, r"m must be in \[0, inf\]"),
    ({"m": 1.5, "objective": "min_divergence"}, r"m must be in \(0.0, 1.0\]"),
    ({"gamma": np.nan}, "gamma must be finite"),
    ({"gamma": -1.0}, r"gamma must be in \[0.0, inf\]"),
    ({"epsilon": -1, "objective": "min_size"}, r"epsilon must be in \[0.0, inf\]"),
    ({"max_iter": -1}, r"max_iter must be in \[0, inf\]"),
    ({"tol": np.inf}, "tol must be finite"),
    ({"damping": 1.0}, r"damping must be in \[0.0, 1.0\)"),
    ({"objective": "min_nothing"}, "objective must be one of"),
])
def test_pruned_marginals_checks_its_parameters(kwargs, match):
    from sklearn_struct import pruned_marginals

    with pytest.raises((ValueError, TypeError), match=match):
        pruned_marginals(np.zeros((3, 2)), [[0, 1], [1, 2]], np.eye(2), **kwargs)


def test_pruned_marginals_names_overflow_of_huge_finite_potentials():
    from sklearn_struct import pruned_marginals

    with pytest.raises(ValueError, match=r"unary potential 1e\+308 at index \(0, 0\) is too large.*overflows"):
        pruned_marginals(np.full((3, 2), 1e308), [[0, 1], [1, 2]], np.eye(2))
    with pytest.raises(ValueError, match=r"pairwise potential .* at index \(0, 0, 0\) is too large"):
        pruned_marginals(np.zeros((3, 2)), [[0, 1], [1, 2]], np.eye(2) * 1e308)
    big = pruned_marginals(np.array([[1e6, 0.0], [0.0, 0.0], [0.0, 0.0]]), [[0, 1], [1, 2]], np.eye(2) * 1e6)
    assert np.all(np.isfinite(big)) and np.allclose(big.sum(axis=1), 1.0)


# ---------------------------------------------------------------- defect 11: truncated gzip files


def test_truncated_gzip_names_the_file(tmp_path):
    import gzip

    from sklearn_struct.datasets import load_conll, read_letter_data

    path = tmp_path / "train.txt.gz"
    data = gzip.compress(("Confidence NN B-NP\n" * 4000).encode())
    path.write_bytes(data[: len(data) // 2])
    for loader in (load_conll, read_letter_data):
        with pytest.raises(ValueError, match=r"train\.txt\.gz is truncated or corrupt"):
            loader(path)


# ---------------------------------------------------------------- defect 12: honest tags


def test_nonlocal_crf_tags_say_what_it_does():
    from sklearn_struct import NonLocalCRF

    tags = NonLocalCRF().__sklearn_tags__()
    assert tags.target_tags.required and tags.input_tags.three_d_array and tags.input_tags.sparse
    assert not tags.input_tags.two_d_array
    X, y = _chain_data()  # what the tags promise holds: 3D input (equal lengths) fits, fit(X) does not
    X3 = np.stack([x[:2] for x in X])
    NonLocalCRF(max_iter=3).fit(X3, [lab[:2] for lab in y])
    with pytest.raises(ValueError, match="requires y"):
        NonLocalCRF().fit(X3, None)
