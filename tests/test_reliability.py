"""Regression tests for the reliability issue (#8): each defect reproduced, each must raise a clear error.

Every test here failed before its fix (a segfault, garbage, NaN, an IndexError or a
misleading message) and checks the exact behaviour now: a ValueError/TypeError naming the
argument (and the index), or a finite, correct result.
"""

import copy
import sys
import textwrap

import numpy as np
import pytest

from _bounded import run_cpu_bounded
import scipy.sparse as sp

from sklearn_struct import ChainCRF, DLPWClassifier, MLEStructMatcher, PrunedBPMarginals
from sklearn_struct.oracles.chain import forward_backward, sample_chain, viterbi
from sklearn_struct.oracles.linear import LinearFeatures
from sklearn_struct.oracles.loopy import bethe_free_energy, build_adjacency, log_softmax, loopy_bp
from sklearn_struct.parsing import DependencyParserBP
from sklearn_struct.utils import subset_sequences, transition_pairs
from sklearn_struct.utils.optimize import lbfgs


def _run_isolated(code):
    """Run ``code`` in a fresh interpreter: a segfault fails the test instead of killing pytest."""
    proc = run_cpu_bounded([sys.executable, "-c", textwrap.dedent(code)], cpu_seconds=300, capture_output=True,
                           text=True)
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
    NonLocalCRF().fit(X3, [lab[:2] for lab in y])
    with pytest.raises(ValueError, match="requires y"):
        NonLocalCRF().fit(X3, None)


# ---------------------------------------------------------------- issue #19: interrupted fits change nothing


def _chain_case(n_features, n_labels, seed):
    from sklearn_struct.datasets import make_chain_data

    return make_chain_data(6, n_features=n_features, n_labels=n_labels, random_state=seed)


def _grid_case(shape, seed, extra_feature=False):
    from sklearn_struct.datasets import make_ising_grid
    from sklearn_struct.utils.graph import images_to_graphs

    noisy, clean = make_ising_grid(n_images=1, n_noisy=2, shape=shape, random_state=seed)[:2]
    graphs = images_to_graphs(noisy)
    if extra_feature:
        graphs = [(np.hstack([g[0], g[0][:, :1] ** 2]),) + tuple(g[1:]) for g in graphs]
    return graphs, [c.ravel() for c in clean]


def _multilabel_case(n_features, n_labels, seed):
    from sklearn_struct.datasets import make_multilabel_pairwise

    return make_multilabel_pairwise(40, n_features=n_features, n_labels=n_labels, random_state=seed)


def _matching_case(n_nodes, n_features, seed):
    from sklearn_struct.datasets import make_matchings

    return make_matchings(4, n_nodes=n_nodes, n_features=n_features, random_state=seed)


def _treebank_case(n, seed):
    from sklearn_struct.datasets import make_dependency_treebank

    return make_dependency_treebank(n, random_state=seed)


# (name, factory -> (estimator, first data, second data)): the second fit differs in features or
# labels. Every estimator is listed here once; the fuzz probe (tests/_fuzz_probe_files.py) runs
# the same cases. Another estimator joins by adding its row.
INTERRUPT_CASES = [
    ("ChainCRF", lambda: (ChainCRF(c2=0.1, max_iter=20), _chain_case(4, 3, 0), _chain_case(6, 4, 1))),
    ("PrunedBPMarginals", lambda: (PrunedBPMarginals(max_iter=5), _grid_case((4, 4), 0),
                                   _grid_case((4, 5), 1, extra_feature=True))),
    ("DLPWClassifier", lambda: (DLPWClassifier(C=10.0, max_epochs=5), _multilabel_case(5, 3, 0),
                                _multilabel_case(7, 4, 1))),
    ("MLEStructMatcher", lambda: (MLEStructMatcher(max_iter=20, random_state=0), _matching_case(4, 3, 0),
                                  _matching_case(5, 4, 1))),
    ("DependencyParserBP", lambda: (DependencyParserBP(max_iter=2, n_hash_bits=12, random_state=0),
                                    _treebank_case(6, 0), _treebank_case(8, 1))),
]


def same_state(a, b, depth=0):
    """Deep equality of fitted attributes: arrays (NaN equal to NaN), sparse, containers, plain objects."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(
            np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if sp.issparse(a):
        return a.shape == b.shape and (a != b).nnz == 0
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_state(x, y, depth + 1) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_state(a[k], b[k], depth + 1) for k in a)
    if hasattr(a, "__dict__") and not callable(a) and depth < 4:
        return same_state(vars(a), vars(b), depth + 1)
    if isinstance(a, float) and a != a:  # NaN (e.g. an undefined training_log_ field) equals NaN
        return b != b
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def _interrupt(iteration, objective, seconds):
    raise KeyboardInterrupt


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # short first fits
@pytest.mark.parametrize("warm_start", [False, True])
@pytest.mark.parametrize("case", [factory for _, factory in INTERRUPT_CASES], ids=[n for n, _ in INTERRUPT_CASES])
def test_an_interrupted_fit_leaves_the_fitted_estimator_as_it_was(case, warm_start):
    est, (X1, y1), (X2, y2) = case()
    name = type(est).__name__
    if warm_start and "warm_start" not in est.get_params():
        pytest.skip(f"{name} has no warm_start")
    est.fit(X1, y1)
    before, predicted = copy.deepcopy(vars(est)), est.predict(X1)
    est.set_params(callback=_interrupt, **({"warm_start": True} if warm_start else {}))
    with pytest.raises(KeyboardInterrupt):
        est.fit(X1, y1) if warm_start else est.fit(X2, y2)
    after = vars(est)
    changed = sorted(k for k in set(before) | set(after)
                     if k not in ("callback", "warm_start") and not (k in before and k in after
                                                                     and same_state(before[k], after[k])))
    assert not changed, f"{name}: the interrupted fit changed {changed}"
    assert same_state(est.predict(X1), predicted)


# ---------------------------------------------------------------- issue #19: model files


@pytest.fixture(scope="module")
def saved_crf(tmp_path_factory):
    X, y = _chain_case(4, 3, 0)
    crf = ChainCRF(c2=0.1, max_iter=50).fit(X, y)
    path = tmp_path_factory.mktemp("model") / "crf.npz"
    crf.save(path)
    return crf, path, X


def _contents(path):
    import json

    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    return arrays, json.loads(str(arrays.pop("meta")))


def _forge(src, dst, *, keep_checksum, arrays=None, meta=None, params=None):
    """Copy of the model file ``src`` with edits, the checksum recomputed (a consistent forgery) or kept."""
    import json

    from sklearn_struct.utils._model_file import save_model_file

    old_arrays, old_meta = _contents(src)
    new_arrays, new_meta = dict(old_arrays, **(arrays or {})), dict(old_meta, **(meta or {}))
    new_meta["params"] = dict(old_meta["params"], **(params or {}))
    if keep_checksum:
        np.savez(dst, meta=np.array(json.dumps(new_meta)), **new_arrays)
    else:
        fmt, version = new_meta.pop("format"), new_meta.pop("version")
        new_meta.pop("sha256")
        save_model_file(dst, fmt, version, new_arrays, new_meta)
    return dst


def test_chain_crf_model_files_are_checked_on_load(saved_crf, tmp_path):
    crf, path, X = saved_crf
    raw = path.read_bytes()
    cases = {
        "truncated": (raw[: len(raw) // 2], "truncated or corrupt"),
        "flipped byte": (raw[:300] + bytes([raw[300] ^ 0xFF]) + raw[301:], "truncated or corrupt|bad checksum"),
        "empty": (b"", "empty"),
        "text": (b"coef = [1, 2, 3]\n", "not an .npz archive"),
    }
    for name, (content, message) in cases.items():
        bad = tmp_path / f"{name}.npz"
        bad.write_bytes(content)
        with pytest.raises(ValueError, match=rf"{bad}.*({message})"):
            ChainCRF.load(bad)
    L = len(crf.classes_)
    forged = [
        (dict(arrays={"coef": crf.coef_ + 1e-3}, keep_checksum=True), "bad checksum"),
        (dict(meta={"objective_": 0.5}, keep_checksum=True), "bad checksum"),
        (dict(arrays={"intercept": np.zeros(7)}, keep_checksum=False), r"'intercept' has shape \(7,\), expected \(3,\)"),
        (dict(arrays={"transition": np.zeros((L, L + 1))}, keep_checksum=False), "'transition' has shape"),
        (dict(arrays={"coef": np.zeros((5, L))}, keep_checksum=False), "'coef' has shape"),
        (dict(arrays={"coef": np.where(crf.coef_ == crf.coef_[0, 0], np.nan, crf.coef_)}, keep_checksum=False),
         "'coef' holds nan at index"),
        (dict(arrays={"coef": crf.coef_.astype(str)}, keep_checksum=False), "'coef' has dtype"),
        (dict(meta={"classes": {"dtype": "<i8", "values": [2, 0, 1]}}, keep_checksum=False), "sorted and distinct"),
        (dict(params={"c2": -1.0}, keep_checksum=False), "'c2' parameter"),
        (dict(params={"max_iter": 0}, keep_checksum=False), "'max_iter' parameter"),
        (dict(params={"no_such": 1}, keep_checksum=False), "unknown ChainCRF parameters"),
        (dict(meta={"objective_": float("nan")}, keep_checksum=False), "objective_ = nan"),
        (dict(meta={"n_iter_": -1}, keep_checksum=False), "n_iter_ = -1"),
        (dict(meta={"format": "sklearn_struct.NonLocalCRF"}, keep_checksum=False), "not a ChainCRF file"),
        (dict(meta={"version": 99}, keep_checksum=False), "version 99"),
    ]
    for k, (edit, message) in enumerate(forged):
        bad = _forge(path, tmp_path / f"forged{k}.npz", **edit)
        with pytest.raises(ValueError, match=message) as info:
            ChainCRF.load(bad)
        assert str(bad) in str(info.value)
    with pytest.raises(ValueError, match="is a directory"):  # ModelFileError (#34)
        ChainCRF.load(tmp_path)
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        ChainCRF.load(tmp_path / "missing.npz")
    loaded = ChainCRF.load(path)
    assert same_state(loaded.predict(X), crf.predict(X))


def test_chain_crf_reads_files_of_version_1(saved_crf, tmp_path):
    import json

    crf, path, X = saved_crf
    arrays, meta = _contents(path)
    meta.pop("sha256")
    meta["version"] = 1  # version 1's layout: classes_ as an array, parameters as plain JSON
    arrays["classes"] = np.asarray(meta.pop("classes")["values"])
    np.savez(tmp_path / "v1.npz", meta=np.array(json.dumps(meta)), **arrays)
    assert same_state(ChainCRF.load(tmp_path / "v1.npz").predict(X), crf.predict(X))


# ---------------------------------------------------------------- issue #19: a full disk during save


def test_save_on_a_full_disk_keeps_the_old_file_in_a_subprocess(tmp_path):
    out = _run_isolated(f"""
        import os, resource, signal, warnings
        warnings.simplefilter("ignore")
        import numpy as np
        from sklearn_struct import ChainCRF
        from sklearn_struct.datasets import make_chain_data
        X, y = make_chain_data(6, n_features=4, n_labels=3, random_state=0)
        path = {str(tmp_path / "crf.npz")!r}
        ChainCRF(max_iter=5).fit(X, y).save(path)
        old = open(path, "rb").read()
        big = ChainCRF.load(path)  # the same model with 300 features: a file of 7 KiB
        big.coef_, big.n_features_in_ = np.ones((300, 3)), 300
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
        try:
            big.save(path)
            print("saved")
        except OSError as exc:
            print("OSError:", exc)
        print("intact" if open(path, "rb").read() == old else "damaged")
        print(sorted(os.listdir(os.path.dirname(path))))
        print(ChainCRF.load(path).coef_.shape)
    """)
    lines = out.strip().splitlines()
    assert lines[0].startswith("OSError: [Errno 27] could not write") and "crf.npz" in lines[0], out
    assert lines[1:] == ["intact", "['crf.npz']", "(4, 3)"], out


def test_save_failing_mid_write_removes_its_temporary_file(saved_crf, tmp_path, monkeypatch):
    import errno

    from sklearn_struct.utils import _files

    crf, path, _ = saved_crf
    target = tmp_path / "crf.npz"
    target.write_bytes(path.read_bytes())
    old = target.read_bytes()

    def full(fh):
        fh.write(b"PK\x03\x04 partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match=f"could not write {target}: No space left"):
        _files.atomic_write(target, full)
    for interrupt in (KeyboardInterrupt, ValueError):
        def stop(fh, interrupt=interrupt):
            fh.write(b"partial")
            raise interrupt

        with pytest.raises(interrupt):
            _files.atomic_write(target, stop)
    assert target.read_bytes() == old and [p.name for p in tmp_path.iterdir()] == ["crf.npz"]
    crf.save(target)
    assert [p.name for p in tmp_path.iterdir()] == ["crf.npz"]
    assert oct(target.stat().st_mode & 0o777) == oct(path.stat().st_mode & 0o777)


# ---------------------------------------------------------------- issue #19: one reader for every text loader


def _loaders():
    from sklearn_struct import datasets as ds
    from sklearn_struct.preprocessing import CRFppTemplateFeaturizer

    def template(path, **kw):
        return CRFppTemplateFeaturizer(path, **kw).fit([[("a", "b")]])

    return {
        "load_conll": (ds.load_conll, b"He PRP B-NP\nreckons VBZ B-VP\n"),
        "load_conllu": (ds.load_conllu, b"1\tHe\the\tPRON\tPRP\t_\t2\tnsubj\t_\t_\n2\truns\trun\tVERB\tVBZ\t_\t0\troot\t_\t_\n\n"),
        "load_arff_multilabel": (lambda p, **kw: ds.load_arff_multilabel(p, n_labels=1, **kw),
                                 b"@relation r\n@attribute x numeric\n@attribute y {0,1}\n@data\n0.5,1\n"),
        "load_libsvm_multilabel": (ds.load_libsvm_multilabel, b"0,1 1:0.5\n1 2:1.5\n"),
        "read_landmark_file": (ds.read_landmark_file, b"1.0 2.0\n3.0 4.0\n"),
        "read_letter_data": (ds.read_letter_data, b"1\ta\t-1\t1\t1\t0\t" + b"\t".join([b"0"] * 128) + b"\n"),
        "CRFppTemplateFeaturizer": (template, b"U00:%x[0,0]\n"),
    }


@pytest.mark.parametrize("name", list(_loaders()))
def test_every_text_loader_names_the_file_for_unreadable_input(name, tmp_path):
    import gzip

    load, good = _loaders()[name]
    (tmp_path / "good").write_bytes(good)
    load(tmp_path / "good")
    (tmp_path / "good.gz").write_bytes(gzip.compress(good))
    load(tmp_path / "good.gz")
    long = gzip.compress(good * 2000)
    (tmp_path / "cut.gz").write_bytes(long[: len(long) // 2])
    with pytest.raises(ValueError, match=f"{tmp_path / 'cut.gz'} is truncated or corrupt"):
        load(tmp_path / "cut.gz")
    with pytest.raises(IsADirectoryError, match=f"{tmp_path} is a directory"):
        load(tmp_path)
    with pytest.raises(FileNotFoundError, match="missing"):
        load(tmp_path / "missing")
    (tmp_path / "latin1").write_bytes(good.replace(b"\n", b"\xe9\n", 1))
    with pytest.raises(ValueError, match=f"{tmp_path / 'latin1'}.*(line 1|decode|not a number|could not)"):
        load(tmp_path / "latin1")
    if name in ("load_conll", "load_conllu", "CRFppTemplateFeaturizer"):
        with pytest.raises(ValueError, match="encoding='no-such-codec' is not a known text encoding"):
            load(tmp_path / "good", encoding="no-such-codec")


def test_load_conllu_reads_other_encodings_and_names_the_line(tmp_path):
    from sklearn_struct.datasets import load_conllu

    text = "1\tcafé\tcafé\tNOUN\tNN\t_\t0\troot\t_\t_\n"
    (tmp_path / "a.conllu").write_bytes(("# sent_id = 1\n" + text).encode("latin-1"))
    with pytest.raises(ValueError, match=r"a.conllu, line 2: cannot decode as 'utf-8'"):
        load_conllu(tmp_path / "a.conllu")
    assert load_conllu(tmp_path / "a.conllu", encoding="latin-1").sentences[0][0]["form"] == "café"


def test_load_libsvm_multilabel_names_the_bad_line(tmp_path):
    from sklearn_struct.datasets import load_libsvm_multilabel

    for content, message in [(b"", "holds no samples"), (b"\n\n", "holds no samples"),
                             (b"0 1:1\n1 3:\n", r"line 2: '3:' is not an index:value pair"),
                             (b"0,,1 1:2\n", r"line 1: label '' of '0,,1' is not a number"),
                             (b"0 1:1\nx 1:2\n", r"line 2: label 'x'")]:
        (tmp_path / "f.svm").write_bytes(content)
        with pytest.raises(ValueError, match=f"{tmp_path / 'f.svm'}.*{message}"):
            load_libsvm_multilabel(tmp_path / "f.svm")


def test_read_landmark_file_says_empty(tmp_path):
    from sklearn_struct.datasets import read_landmark_file

    (tmp_path / "house1").write_text("")
    with pytest.raises(ValueError, match="house1 holds no points"):
        read_landmark_file(tmp_path / "house1")
    (tmp_path / "house2").write_text("1 2\nnan 3\n")
    with pytest.raises(ValueError, match="house2: point 1 is not finite"):
        read_landmark_file(tmp_path / "house2")


# ---------------------------------------------------------------- issue #19: constraints, graphs, trees, DLPW, LP


def test_linear_constraint_checks_its_coefficients_and_violations_its_sequences():
    from sklearn_struct.constraints import (
        AtMostSegments,
        ConstraintEnergy,
        LinearConstraint,
    )

    classes = np.array(["author", "title"])
    for kwargs, message in [({"node": ["author"]}, "node must be a dict label -> coefficient, got a list"),
                            ({"first": {"title": np.nan}}, r"first\['title'\] = nan is not a finite number"),
                            ({"last": {"title": np.inf}}, r"last\['title'\] = inf is not a finite number"),
                            ({"edge": {("author", "title"): "1"}}, "is not a finite number"),
                            ({"node": {"title": True}}, "is not a finite number")]:
        with pytest.raises(ValueError, match=message):
            ConstraintEnergy([LinearConstraint(**kwargs)]).fit(None, 2, classes=classes)
    energy = ConstraintEnergy([AtMostSegments("title", 1)]).fit(None, 2, classes=classes)
    for y, message in [([np.array([0, 1]), np.array([], dtype=int)], "sequence 1 of y is empty"),
                       ([], "non-empty list"), ([np.array([0, 2])], r"y\[0\]\[1\] = 2 is out of range"),
                       ([np.array([0.5])], r"y\[0\] must hold integers")]:
        with pytest.raises(ValueError, match=message):
            energy.violations(y)
    np.testing.assert_array_equal(energy.violations([np.array([1, 0, 1])]), [[1.0]])


@pytest.mark.parametrize("kind", ["csr_matrix", "csr_array", "ndarray"])
def test_pruned_bp_names_a_single_matrix_given_as_x(kind):
    X = getattr(sp, kind)(np.eye(3)) if kind != "ndarray" else np.eye(3)
    with pytest.raises(ValueError, match="X must be a list of per-graph"):
        PrunedBPMarginals().fit(X, [np.zeros(3)])


@pytest.mark.parametrize("heads, single_root, message", [
    ([0, 3, 0], True, r"y\[1\] is not a tree with one root word: words \[1, 3\] attach to the root"),
    ([2, 3, 1], False, r"y\[1\] is not a tree with a root: words \[\]"),
    ([0, 3, 2], False, r"y\[1\] is not a tree: words \[2, 3\] form a cycle"),
    ([2, 0, 4, 3], True, r"y\[1\] must be 3 integer heads"),
])
def test_dependency_parser_trains_only_on_trees(heads, single_root, message):
    X = [[("a", "DET"), ("b", "NOUN")], [("c", "DET"), ("d", "NOUN"), ("e", "VERB")]]
    with pytest.raises(ValueError, match=message):
        DependencyParserBP(single_root=single_root, max_iter=1).fit(X, [np.array([2, 0]), np.array(heads)])
    if not single_root:  # two roots are a tree when single_root=False
        DependencyParserBP(single_root=False, max_iter=1, n_hash_bits=10).fit(X, [[2, 0], [0, 3, 0]])


def test_dlpw_names_non_numeric_samples_and_overflowing_features():
    X, Y = _multilabel_case(5, 3, 0)
    with pytest.raises(ValueError, match="sample 0 is a dict, not a row of numbers .*DictVectorizer"):
        DLPWClassifier().fit([{"a": 1.0}] * len(Y), Y)
    with pytest.raises(ValueError, match="sample 2 is a str"):
        DLPWClassifier().fit([[1.0], [2.0], "x"], Y[:3])
    with pytest.raises(ValueError, match="training scores are not finite at epoch 1 .*rescale X"):
        DLPWClassifier(max_epochs=3).fit(X * 1e300, Y)
    clf = DLPWClassifier(max_epochs=3, tol=0).fit(X, Y)  # a fit failing late leaves the fitted model as it was
    before = copy.deepcopy(vars(clf))
    with pytest.raises(ValueError, match="not finite"):
        clf.fit(X * 1e300, Y)
    assert same_state(vars(clf), before)


def test_lp_overflow_check_does_not_overflow_itself():
    import warnings

    from sklearn_struct.oracles.lp import lp_map, make_lp_graph

    graph = make_lp_graph(np.array([[0, 1]]), np.array([2, 2]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="would overflow"):
            lp_map(graph, np.full((1, 2, 2), 1e308), np.zeros((1, 2, 2)))


# ---------------------------------------------------------------- issue #19: save / load round trips


def test_chain_crf_round_trip_across_clone_and_warm_start(saved_crf, tmp_path):
    from sklearn.base import clone

    crf, path, X = saved_crf
    _, y = _chain_case(4, 3, 0)
    loaded = ChainCRF.load(path)
    assert loaded.get_params() == crf.get_params()
    for name in ("coef_", "intercept_", "transition_", "classes_", "n_features_in_", "n_iter_", "objective_"):
        assert same_state(getattr(loaded, name), getattr(crf, name)), name
    loaded.save(tmp_path / "again.npz")  # saving what was loaded gives the same model
    assert same_state(_contents(tmp_path / "again.npz"), _contents(path))
    # clone: the parameters travel, the fitted state does not; refitting gives the same model
    fresh = clone(loaded)
    assert fresh.get_params() == crf.get_params() and not hasattr(fresh, "coef_")
    assert same_state(fresh.fit(X, y).coef_, clone(crf).fit(X, y).coef_)
    # warm start from the loaded model continues exactly where the saved one would
    kwargs = {"warm_start": True, "max_iter": 30}
    continued = ChainCRF.load(path).set_params(**kwargs).fit(X, y)
    reference = clone(crf).set_params(**kwargs)
    reference.coef_, reference.intercept_, reference.transition_ = crf.coef_, crf.intercept_, crf.transition_
    reference.classes_, reference.n_features_in_ = crf.classes_, crf.n_features_in_
    reference.fit(X, y)
    np.testing.assert_array_equal(continued.coef_, reference.coef_)
    np.testing.assert_array_equal(continued.transition_, reference.transition_)
    continued.save(tmp_path / "continued.npz")
    again = ChainCRF.load(tmp_path / "continued.npz")
    assert again.warm_start and again.max_iter == 30 and same_state(again.predict(X), continued.predict(X))
