"""GPStructClassifier's inducing inputs: the SVD basis of a linear kernel (exact at the tokens' rank,
the sparse MAP a full-weight L2 CRF), k-means otherwise, the ``inducing`` option."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, DotProduct

from sklearn_struct import GPStructClassifier
from sklearn_struct._gp_struct_amplitude import _Rows
from sklearn_struct._gp_struct_model import SparsePrior, gram, init_inducing, linear_sigma_0, svd_inducing
from sklearn_struct._gp_struct_optim import sparse_map
from sklearn_struct.datasets import make_chain_data
from sklearn_struct.oracles.chain import forward_backward


def _zipf_tokens(n_seq=40, n_patterns=30, n_features=60, seed=0):
    """Sparse binary tokens as in NLP: a few distinct feature patterns, repeated with Zipf frequencies
    (many identical tokens); the rank of the augmented tokens is at most ``n_patterns + 1``."""
    rng = np.random.RandomState(seed)
    patterns = (rng.rand(n_patterns, n_features) < 0.1).astype(float)
    freq = 1.0 / np.arange(1, n_patterns + 1)
    lengths = rng.randint(3, 8, size=n_seq)
    idx = rng.choice(n_patterns, size=lengths.sum(), p=freq / freq.sum())
    Xp = sp.csr_matrix(patterns[idx])
    offsets = np.r_[0, np.cumsum(lengths)]
    y = (idx % 3).astype(np.int64)
    return Xp, offsets, y


def _rank(Xp, sigma_0=1.0):
    return np.linalg.matrix_rank(np.hstack([np.full((Xp.shape[0], 1), sigma_0), Xp.toarray()]))


@pytest.mark.parametrize("sigma_0", [1.0, 0.5, 0.0])
def test_svd_basis_is_exact_at_the_rank_and_kmeans_is_not(sigma_0):
    """With M at least the tokens' rank, the SVD basis's Nystrom approximation ``Q_xx = B B^T`` is the
    kernel matrix of the training tokens (no residual variance) and ``K(Z, Z)`` is a multiple of the
    identity; M is cut to the rank. k-means centres with the same M leave residual variance (duplicated
    tokens give duplicated centres)."""
    Xp, offsets, _ = _zipf_tokens()
    kernel = DotProduct(sigma_0=sigma_0, sigma_0_bounds="fixed")
    Z = svd_inducing(Xp, 500, sigma_0, np.random.RandomState(0))
    rank = _rank(Xp, sigma_0)
    assert Z.shape[0] == rank
    Kzz = gram(kernel, Z)
    np.testing.assert_allclose(Kzz, Kzz[0, 0] * np.eye(rank), atol=1e-8 * Kzz[0, 0])
    Kxx = gram(kernel, Xp)
    for Zi, exact in ((Z, True), (init_inducing(Xp, rank, np.random.RandomState(0)), False)):
        B = SparsePrior(kernel, Zi, Xp, offsets).B[0]
        err = np.abs(B @ B.T - Kxx).max() / np.abs(Kxx).max()
        assert (err < 1e-5) == exact, err


def test_svd_basis_below_the_rank_is_the_best_nystrom_approximation():
    """With M below the rank, the residual trace ``tr(K_xx - Q_xx)`` is the sum of the squared singular
    values left out (the Eckart-Young optimum), and below k-means's with the same M."""
    Xp, offsets, _ = _zipf_tokens(n_patterns=40, seed=1)
    kernel = DotProduct(sigma_0=1.0, sigma_0_bounds="fixed")
    s = np.linalg.svd(np.hstack([np.ones((Xp.shape[0], 1)), Xp.toarray()]), compute_uv=False)
    M = 12
    tr_k = np.trace(gram(kernel, Xp))
    resid = {}
    for name, Z in (("svd", svd_inducing(Xp, M, 1.0, np.random.RandomState(0))),
                    ("kmeans", init_inducing(Xp, M, np.random.RandomState(0)))):
        resid[name] = tr_k - np.sum(SparsePrior(kernel, Z, Xp, offsets).B[0] ** 2)
    np.testing.assert_allclose(resid["svd"], np.sum(s[M:] ** 2), rtol=1e-3)
    assert resid["svd"] < resid["kmeans"]


@pytest.mark.parametrize("amplitude", [0.25, 4.0])
def test_sparse_map_on_the_svd_basis_is_the_full_weight_l2_crf(amplitude):
    """At M >= rank the sparse MAP (whitened inducing values, ``N(0, I)`` prior) is the chain CRF with one
    weight per feature, label and the constant ``sigma_0``, under the GP's prior ``N(0, amplitude)``
    (L2 penalty ``|w|^2 / (2 amplitude)``): the same scores on held-out tokens, the same transitions and
    the same objective value."""
    Xp, offsets, y = _zipf_tokens(seed=2)
    n_tr = offsets[30]
    Xtr, Xte = Xp[:n_tr], Xp[n_tr:]
    off_tr, off_te = offsets[:31], offsets[30:] - n_tr
    kernel = ConstantKernel(amplitude, "fixed") * DotProduct(sigma_0=1.0, sigma_0_bounds="fixed")
    Z = svd_inducing(Xtr, 500, 1.0, np.random.RandomState(0))
    v, mb = sparse_map(SparsePrior(kernel, Z, Xtr, off_tr), y[:n_tr], off_tr, 3, max_iter=500)[:2]
    sparse_scores = SparsePrior(kernel, Z, Xte, off_te).unary_mean(v)

    def augmented(X):
        return np.sqrt(amplitude) * np.hstack([np.ones((X.shape[0], 1)), X.toarray()])[None]

    w, mb_full = sparse_map(_Rows(augmented(Xtr)), y[:n_tr], off_tr, 3, max_iter=500)[:2]
    full_scores = _Rows(augmented(Xte)).unary_mean(w)
    np.testing.assert_allclose(mb, mb_full, atol=2e-3)
    np.testing.assert_allclose(sparse_scores, full_scores, atol=5e-3 * max(1.0, np.abs(full_scores).max()))
    # the decisions on the held-out tokens agree
    pred = [np.argmax(forward_backward(s, m, off_te)[1], 1) for s, m in ((sparse_scores, mb), (full_scores, mb_full))]
    assert np.mean(pred[0] != pred[1]) < 0.02


def test_inducing_option_reproducible_sparse_and_validated():
    """``inducing="auto"`` is the SVD basis for the linear default kernel (dense Z, M cut to the rank) and
    k-means for RBF (sparse Z from sparse features); same seed same Z; dense and sparse features span the
    same subspace; ``"svd"`` with a non-linear kernel and unknown options are ValueErrors."""
    X, y = make_chain_data(30, n_labels=3, n_features=5, random_state=0)
    Xs = [sp.csr_matrix(x) for x in X]
    fit = dict(n_inducing=50, max_iter=1, tol=0.0, n_samples=10, n_predict_samples=5, amplitude=1.0)
    gp = GPStructClassifier(random_state=0, **fit).fit(Xs, y)
    Z = gp.inducing_inputs_
    assert isinstance(Z, np.ndarray) and Z.shape == (6, 5)  # rank of [1, x] with 5 features
    np.testing.assert_array_equal(Z, GPStructClassifier(random_state=0, **fit).fit(Xs, y).inducing_inputs_)
    Zd = GPStructClassifier(random_state=0, **fit).fit(X, y).inducing_inputs_

    def projector(Z):
        A = np.hstack([np.ones((Z.shape[0], 1)), Z])
        return A.T @ np.linalg.solve(A @ A.T, A)

    np.testing.assert_allclose(projector(Z), projector(Zd), atol=1e-8)
    assert len(gp.predict(Xs[:2])) == 2
    rbf = GPStructClassifier(kernel=RBF(1.0), random_state=0, **fit).fit(Xs, y)
    assert sp.issparse(rbf.inducing_inputs_) and rbf.inducing_inputs_.shape[0] == 50
    km = GPStructClassifier(inducing="kmeans", random_state=0, **fit).fit(Xs, y)
    assert km.inducing_inputs_.shape[0] == 50
    with pytest.raises(ValueError, match="inducing='svd' needs a linear kernel"):
        GPStructClassifier(kernel=RBF(1.0), inducing="svd", **fit).fit(Xs, y)
    with pytest.raises(ValueError, match="inducing"):
        GPStructClassifier(inducing="pca", **fit).fit(Xs, y)


def test_linear_sigma_0_recognises_linear_kernels_only():
    assert linear_sigma_0(DotProduct(sigma_0=2.0)) == 2.0
    assert linear_sigma_0(ConstantKernel(3.0) * DotProduct(sigma_0=0.5)) == 0.5
    assert linear_sigma_0(DotProduct(sigma_0=0.5) * ConstantKernel(3.0)) == 0.5
    assert linear_sigma_0([DotProduct(sigma_0=1.0), DotProduct(sigma_0=1.0)]) == 1.0
    assert linear_sigma_0([DotProduct(sigma_0=1.0), DotProduct(sigma_0=2.0)]) is None
    assert linear_sigma_0(DotProduct() + ConstantKernel()) is None
    assert linear_sigma_0(DotProduct() ** 2) is None
    assert linear_sigma_0(RBF()) is None
