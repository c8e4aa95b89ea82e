"""Gray-box structured GP: kernels on sparse features, sparse prior, KL terms, MC ELBO and its gradients.

Notation (Galliani et al. 2017, brief sections 3-5): Q labels, M inducing inputs ``Z``
shared by the Q label GPs, whitened inducing values ``v_j = L_zz^{-1} u_j`` with prior
``N(0, I)`` and posterior the mixture ``sum_k pi_k N(m_kj, S_kj)``, ``S_kj = L_kj L_kj^T``.
For sequence ``n`` with ``B_n = K_{x z} L_zz^{-T}`` the latent unaries of label ``j`` under
component ``k`` are ``N(b, Sigma)`` with ``b = B_n m_kj`` and
``Sigma = K_xx - B_n B_n^T + B_n S_kj B_n^T`` (T_n x T_n, eqs. 18-19); the pairwise table
``f_bin`` is ``N(m_bin, diag(s_bin^2))`` with prior ``N(0, I)``.

The expected log-likelihood is estimated by Monte Carlo (eq. 20) with the likelihood (a
:class:`~sklearn_struct._gp_likelihoods.Likelihood`, e.g. the chain oracle) as the black box;
its gradients are score-function estimates (eqs. 26-30) with a leave-one-out control variate
(section 5.1): each sample's likelihood is centred by
``a_{-i} = sum_{k != i} l_k r_k / sum_{k != i} r_k`` with ``r_k`` the squared norm of that
sample's score, the optimal pooled coefficient ``Cov(l h, h) / Var(h)`` estimated without
sample ``i`` itself, so the estimator stays exactly unbiased.
"""

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.gaussian_process import kernels as gpk
from threadpoolctl import ThreadpoolController

from ._gp_likelihoods import CHAIN, _lse
from .utils.parallel import even_chunks, run_chunks

_LOG2PI = np.log(2.0 * np.pi)


# ----------------------------------------------------------------------------- kernels
def gram(kernel, A, B=None):
    """``kernel(A, B)`` for dense or CSR inputs (sparse: DotProduct, RBF, constants, sums, products)."""
    if not sp.issparse(A) and (B is None or not sp.issparse(B)):
        try:
            return np.asarray(kernel(A, B), dtype=np.float64)
        except ValueError as exc:
            raise ValueError(f"kernel {kernel!r} does not fit the features ({A.shape[1]} columns): {exc}") from None
    A = sp.csr_matrix(A)
    same = B is None
    B = A if same else B if isinstance(B, np.ndarray) else sp.csr_matrix(B)  # dense inducing inputs stay dense
    return _sparse_gram(kernel, A, B, same)


def _dot(A, B):
    """``A @ B.T`` as a dense array (either operand sparse or dense)."""
    out = A @ B.T
    return out.toarray() if sp.issparse(out) else np.asarray(out)


def _sq_norms(A):
    return np.asarray(A.multiply(A).sum(axis=1)).ravel() if sp.issparse(A) else np.einsum("ij,ij->i", A, A)


def _sparse_gram(k, A, B, same):
    if isinstance(k, gpk.Sum):
        return _sparse_gram(k.k1, A, B, same) + _sparse_gram(k.k2, A, B, same)
    if isinstance(k, gpk.Product):
        return _sparse_gram(k.k1, A, B, same) * _sparse_gram(k.k2, A, B, same)
    if isinstance(k, gpk.Exponentiation):
        return _sparse_gram(k.kernel, A, B, same) ** k.exponent
    if type(k) is gpk.ConstantKernel:
        return np.full((A.shape[0], B.shape[0]), float(k.constant_value))
    if type(k) is gpk.WhiteKernel:
        return k.noise_level * np.eye(A.shape[0]) if same else np.zeros((A.shape[0], B.shape[0]))
    if type(k) is gpk.DotProduct:
        return k.sigma_0**2 + _dot(A, B)
    if type(k) is gpk.RBF:
        ls = np.atleast_1d(k.length_scale)
        if ls.size != 1:
            raise ValueError(
                f"kernel {k!r}: an anisotropic RBF on sparse features is not supported; use one length_scale."
            )
        d2 = np.maximum(_sq_norms(A)[:, None] + _sq_norms(B)[None, :] - 2.0 * _dot(A, B), 0.0)
        return np.exp(-0.5 * d2 / float(ls[0]) ** 2)
    raise ValueError(
        f"kernel {k!r} cannot be evaluated on sparse features; use DotProduct or RBF (optionally scaled by "
        "ConstantKernel, summed or multiplied), or pass dense features."
    )


def finite_gram(kernel, X, offsets, Z=None):
    """``gram(kernel, X, Z)`` for packed sequences ``X``, or a ValueError naming the first sequence
    and token whose kernel values (its latent scores' covariances) overflow or are NaN."""
    with np.errstate(over="ignore", invalid="ignore"):
        K = gram(kernel, X, Z)
    bad = ~np.isfinite(K).all(axis=1)
    if bad.any():
        row = int(np.argmax(bad))
        seq = int(np.searchsorted(offsets, row, side="right") - 1)
        raise ValueError(f"non-finite scores: kernel {kernel!r} gives non-finite values at sequence {seq}, token "
                         f"{row - offsets[seq]} (feature values too large?).")
    return K


def check_feature_scale(Xp, offsets):
    """ValueError naming the first sequence and token whose squared feature norm overflows (every
    kernel's values, hence the latent scores, would be non-finite there)."""
    with np.errstate(over="ignore", invalid="ignore"):
        sq = np.asarray(Xp.multiply(Xp).sum(axis=1)).ravel() if sp.issparse(Xp) else np.einsum("ij,ij->i", Xp, Xp)
    bad = ~np.isfinite(sq)
    if bad.any():
        row = int(np.argmax(bad))
        seq = int(np.searchsorted(offsets, row, side="right") - 1)
        raise ValueError(f"non-finite scores: the features of sequence {seq}, token {row - offsets[seq]} are too "
                         "large (their squared norm overflows).")


def init_inducing(Xp, n_inducing, rng, n_iter=10):
    """k-means centres of the tokens (Lloyd's algorithm; sparse centres for sparse features)."""
    n = Xp.shape[0]
    m = min(n_inducing, n)
    start = rng.choice(n, size=m, replace=False)
    if not sp.issparse(Xp):
        from sklearn.cluster import KMeans

        km = KMeans(n_clusters=m, init=Xp[start], n_init=1, max_iter=n_iter, random_state=0).fit(Xp)
        return np.ascontiguousarray(km.cluster_centers_)
    X = sp.csr_matrix(Xp)
    x2 = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    C = X[start]
    for _ in range(n_iter):
        c2 = np.asarray(C.multiply(C).sum(axis=1)).ravel()
        d = x2[:, None] - 2.0 * (X @ C.T).toarray() + c2[None, :]
        assign = np.argmin(d, axis=1)
        counts = np.bincount(assign, minlength=m)
        P = sp.csr_matrix((1.0 / counts[assign], (assign, np.arange(n))), shape=(m, n))
        new = sp.csr_matrix(P @ X)
        empty = counts == 0
        if empty.any():  # keep the old centre of an empty cluster
            new = sp.vstack([C[i] if empty[i] else new[i] for i in range(m)], format="csr")
        C = new
    return C


def linear_sigma_0(kernels):
    """``sigma_0`` of a linear kernel: ``DotProduct`` or ``ConstantKernel * DotProduct`` (either order), or
    a list of such kernels with one ``sigma_0``; None for any other kernel."""
    kernels = kernels if isinstance(kernels, (list, tuple)) else [kernels]
    found = set()
    for k in kernels:
        if isinstance(k, gpk.Product) and type(k.k1) is gpk.ConstantKernel:
            k = k.k2
        elif isinstance(k, gpk.Product) and type(k.k2) is gpk.ConstantKernel:
            k = k.k1
        if type(k) is not gpk.DotProduct:
            return None
        found.add(float(k.sigma_0))
    return found.pop() if len(found) == 1 else None


def svd_inducing(Xp, n_inducing, sigma_0, rng, rtol=1e-9):
    """Inducing inputs for the linear kernel ``sigma_0^2 + x.z``: rows spanning the top right singular
    subspace of the augmented tokens ``[sigma_0, x]``, with ``K(Z, Z)`` a multiple of the identity.

    The linear kernel is the inner product of the augmented features, so the sparse GP's functions are
    the weight vectors in the span of the augmented ``Z``: the top-M right singular vectors give the
    best rank-M Nystrom approximation of ``K(X, X)``, exact when M reaches the rank of the tokens (then
    the sparse model is the full one on these tokens). The singular basis ``V`` (randomized SVD, exact
    when the rank is at most M plus the oversampling) is rotated by a Householder reflection so that
    every row has the same first coordinate, and scaled so that it is ``sigma_0``: the rows are then
    ``[sigma_0, z_i]`` for inputs ``z_i``, mutually orthogonal with equal norms. Directions with a
    singular value below ``rtol`` times the largest are dropped (M follows the rank).

    Returns a dense array (M, n_features), ``M = min(n_inducing, rank)``.
    """
    from sklearn.utils.extmath import randomized_svd

    n, d = Xp.shape
    const = np.full((n, 1), float(sigma_0))
    Xa = sp.hstack([sp.csr_matrix(const), Xp], format="csr") if sp.issparse(Xp) else np.hstack([const, Xp])
    k = min(n_inducing, n, d + 1)
    _, s, Vt = randomized_svd(Xa, k, n_oversamples=max(10, k // 10), n_iter=4, random_state=rng)
    Vt = Vt[s > rtol * max(s[0], 1e-300)]
    if sigma_0 == 0.0:
        return np.ascontiguousarray(Vt[:, 1:])
    c = Vt[:, 0]
    if np.linalg.norm(c) < 1e-8:  # the constant direction is outside the subspace: take it in place of the last
        Vt[-1] = 0.0
        Vt[-1, 0] = 1.0
        c = Vt[:, 0]
    m, norm = Vt.shape[0], np.linalg.norm(c)
    w = c / norm - np.full(m, 1.0 / np.sqrt(m))
    if w @ w > 1e-30:  # Householder reflection taking c / |c| to ones / sqrt(m)
        Vt = Vt - np.outer(2.0 * w / (w @ w), w @ Vt)
    return np.ascontiguousarray(Vt[:, 1:] * (float(sigma_0) * np.sqrt(m) / norm))


class SparsePrior:
    """Whitened sparse-GP quantities for packed tokens, per kernel: ``B`` (G, N, M) and
    per-sequence ``K~_n`` (G, T_n, T_n), with ``G = 1`` (one kernel shared by the labels) or
    ``G = Q`` (a kernel per label); both broadcast against the label axis of the parameters."""

    def __init__(self, kernels, Z, Xp, offsets, jitter=1e-6, n_jobs=None):
        kernels = list(kernels) if isinstance(kernels, (list, tuple)) else [kernels]
        self.B, self.jitter = [], []
        for kernel in kernels:
            Kzz = gram(kernel, Z)
            self.jitter.append(jitter * max(float(np.mean(np.diag(Kzz))), 1e-12))
            Kzz[np.diag_indices_from(Kzz)] += self.jitter[-1]
            Lz = _cholesky(Kzz, f"K(Z, Z) of kernel {kernel!r}")
            Kxz = finite_gram(kernel, Xp, offsets, Z)
            self.B.append(sla.solve_triangular(Lz, Kxz.T, lower=True).T)
        self.B = np.ascontiguousarray(np.stack(self.B))
        self.offsets = offsets

        n_seq = offsets.shape[0] - 1
        chunks = []
        for sl in even_chunks(n_seq, 4 * max(1, _n_jobs(n_jobs))):  # each task gets its own rows only
            lo, hi = offsets[sl.start], offsets[sl.stop]
            chunks.append((kernels, Xp[lo:hi], offsets[sl.start:sl.stop + 1] - lo, self.B[:, lo:hi], self.jitter))
        parts = run_chunks(_ktil_blocks, chunks, n_jobs=n_jobs)
        self.Ktil = [k for part in parts for k in part]

    def unary_mean(self, m):
        """Latent unary means ``f_j = B_j m_j`` of every token: (N, Q) for ``m`` (Q, M)."""
        if self.B.shape[0] == 1:
            return self.B[0] @ m.T
        return np.einsum("qnm,qm->nq", self.B, m)


def _ktil_blocks(chunk):
    """``K~_n`` (G, T_n, T_n) of each sequence of a chunk ``(kernels, rows, offsets, B rows, jitters)``."""
    kernels, Xp, offsets, B, jitter = chunk
    out = []
    for s in range(offsets.shape[0] - 1):
        lo, hi = offsets[s], offsets[s + 1]
        Bn = B[:, lo:hi]
        Kt = np.stack([finite_gram(k, Xp[lo:hi], offsets[s:s + 2] - lo) for k in kernels])
        Kt -= Bn @ np.swapaxes(Bn, 1, 2)
        Kt = 0.5 * (Kt + np.swapaxes(Kt, 1, 2))
        idx = np.arange(hi - lo)
        Kt[:, idx, idx] += np.asarray(jitter)[:, None]
        out.append(Kt)
    return out


def _n_jobs(n_jobs):
    from joblib import effective_n_jobs

    return effective_n_jobs(n_jobs)


def _cholesky(A, what):
    for extra in (0.0, 1e-8, 1e-6, 1e-4, 1e-2):
        try:
            if extra:
                A = A + extra * np.mean(np.diagonal(A, axis1=-2, axis2=-1)) * np.eye(A.shape[-1])
            return np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            continue
    raise ValueError(f"{what} is not positive definite even with jitter; check the kernel and features.")


# ----------------------------------------------------------------------------- parameters
class VarParams:
    """Variational parameters: unary ``m`` (K, Q, M), ``L`` (K, Q, M, M) via strict-lower part and
    log-diagonal, pairwise ``mb`` (Q, Q) and ``log_sb`` (Q, Q)."""

    def __init__(self, K, Q, M, diagonal, init_scale=1.0):
        self.K, self.Q, self.M, self.diagonal = K, Q, M, diagonal
        self.m = np.zeros((K, Q, M))
        self.Loff = np.zeros((K, Q, M, M))
        self.logd = np.full((K, Q, M), np.log(init_scale))
        self.mb = np.zeros((Q, Q))
        self.log_sb = np.full((Q, Q), np.log(init_scale))

    def copy(self):
        new = VarParams.__new__(VarParams)
        new.__dict__.update({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self.__dict__.items()})
        return new

    @property
    def L(self):
        L = self.Loff.copy()
        idx = np.arange(self.M)
        L[..., idx, idx] = np.exp(self.logd)
        return L

    def _tril(self):
        return np.tril_indices(self.M, -1)

    def get_unary(self):
        parts = [self.m.ravel(), self.logd.ravel()]
        if not self.diagonal:
            r, c = self._tril()
            parts.append(self.Loff[..., r, c].ravel())
        return np.concatenate(parts)

    def set_unary(self, x):
        K, Q, M = self.K, self.Q, self.M
        n = K * Q * M
        self.m = x[:n].reshape(K, Q, M).copy()
        self.logd = x[n:2 * n].reshape(K, Q, M).copy()
        if not self.diagonal:
            r, c = self._tril()
            self.Loff[..., r, c] = x[2 * n:].reshape(K, Q, -1)

    def unary_grad_vector(self, gm, gL):
        """Flatten gradients w.r.t. ``m`` and ``L`` into the unary parameter layout. ``gL`` is the full
        (K, Q, M, M) gradient, or with a diagonal covariance its diagonal (K, Q, M)."""
        if self.diagonal and gL.ndim == 3:
            return np.concatenate([gm.ravel(), (gL * np.exp(self.logd)).ravel()])
        idx = np.arange(self.M)
        parts = [gm.ravel(), (gL[..., idx, idx] * np.exp(self.logd)).ravel()]
        if not self.diagonal:
            r, c = self._tril()
            parts.append(gL[..., r, c].ravel())
        return np.concatenate(parts)

    def get_pair(self):
        return np.concatenate([self.mb.ravel(), self.log_sb.ravel()])

    def set_pair(self, x):
        Q = self.Q
        self.mb = x[:Q * Q].reshape(Q, Q).copy()
        self.log_sb = x[Q * Q:].reshape(Q, Q).copy()


# ----------------------------------------------------------------------------- KL terms
def unary_kl(p):
    """``-KL(q(v) || p(v))`` as cross-entropy + Jensen entropy bound; value and gradients (gm, gL).

    With a diagonal covariance ``gL`` is the diagonal (K, Q, M) of the gradient (the off-diagonal
    part of ``L`` is not a parameter); with one component it is computed without any M x M array.
    """
    K, Q, M = p.K, p.Q, p.M
    if p.diagonal and K == 1:
        d = np.exp(p.logd)
        ce = float(-0.5 * Q * M * _LOG2PI - 0.5 * np.sum(p.m**2) - 0.5 * np.sum(d**2))
        h = 0.5 * Q * M * _LOG2PI + np.sum(p.logd) + 0.5 * Q * M * np.log(2.0)
        return ce + h, -p.m, -d + 1.0 / d
    ce_h, gm, gL = _unary_kl_full(p)
    if p.diagonal:
        idx = np.arange(M)
        return ce_h, gm, gL[..., idx, idx]
    return ce_h, gm, gL


def _unary_kl_full(p):
    """:func:`unary_kl` with the full (K, Q, M, M) gradient of ``L``."""
    K, Q, M = p.K, p.Q, p.M
    L = p.L
    pi = np.full(K, 1.0 / K)
    # cross-entropy E_q log N(v; 0, I) = sum_k pi_k sum_j [-M/2 log 2pi - |m|^2/2 - tr(S)/2]
    ce = float(np.sum(pi[:, None] * (-0.5 * M * _LOG2PI - 0.5 * np.sum(p.m**2, -1) - 0.5 * np.sum(L**2, (-1, -2)))))
    gm = -pi[:, None, None] * p.m
    gL = -pi[:, None, None, None] * L
    if K == 1:
        # Jensen bound with one component: -log N(m; m, 2S) = Q M/2 log(2 pi) + sum_j log|2 S_j| / 2
        logdet = 2.0 * np.sum(p.logd) + Q * M * np.log(2.0)
        h = 0.5 * Q * M * _LOG2PI + 0.5 * logdet
        idx = np.arange(M)
        gL[..., idx, idx] += 1.0 / np.exp(p.logd)  # d/dL log|L L^T|/2 = L^{-T}, diagonal part in log-diag chain
        return ce + h, gm, gL
    S = L @ np.swapaxes(L, -1, -2)
    logN = np.zeros((K, K))
    cache = {}
    for a in range(K):
        for b in range(a, K):
            C = S[a] + S[b]  # (Q, M, M)
            Lc = np.linalg.cholesky(C)
            d = p.m[a] - p.m[b]  # (Q, M)
            Cinv = np.linalg.inv(C)
            Cd = np.einsum("qij,qj->qi", Cinv, d)
            val = np.sum(-0.5 * M * _LOG2PI - np.sum(np.log(np.diagonal(Lc, axis1=-2, axis2=-1)), -1)
                         - 0.5 * np.sum(d * Cd, -1))
            logN[a, b] = logN[b, a] = val
            cache[a, b] = (Cinv, Cd)
    log_z = logsumexp(logN + np.log(pi)[None, :], axis=1)
    h = -float(np.sum(pi * log_z))
    resp = np.exp(logN + np.log(pi)[None, :] - log_z[:, None])
    T = pi[:, None] * resp  # dH / d logN_ab = -T_ab
    gS = np.zeros((K, Q, M, M))
    for a in range(K):
        for b in range(K):
            Cinv, Cd = cache[min(a, b), max(a, b)]
            if a > b:
                Cd = -Cd
            # d logN / d m_a = -C^{-1} d,  d / d m_b = +C^{-1} d,  d / dC = (C^{-1} d d^T C^{-1} - C^{-1}) / 2
            gm[a] += T[a, b] * Cd
            gm[b] -= T[a, b] * Cd
            gC = 0.5 * (np.einsum("qi,qj->qij", Cd, Cd) - Cinv)
            gS[a] -= T[a, b] * gC
            gS[b] -= T[a, b] * gC
    gL += 2.0 * gS @ L
    return ce + h, gm, gL


def pair_kl(p):
    """``-KL(N(mb, diag(sb^2)) || N(0, I))``; value and gradients w.r.t. (mb, log_sb)."""
    s2 = np.exp(2.0 * p.log_sb)
    val = -0.5 * float(np.sum(s2 + p.mb**2 - 1.0 - 2.0 * p.log_sb))
    return val, -p.mb, -(s2 - 1.0)


# ----------------------------------------------------------------------------- MC estimator
class _SeqDraw:
    """Posterior samples for one sequence: unaries ``f`` (K, Q, T, S) = ``b + C eps``, the
    scores ``w = Sigma^{-1} (f - b)``, ``C^{-1}``, ``P = B_n L`` (K, Q, T, M), the pairwise
    noise ``zeta`` (K, Q, Q, S) with ``f_bin = m_bin + s_bin zeta``, its score ``zs = zeta / s_bin``
    with respect to ``m_bin``, and ``logq`` (K, S), the
    log-density of each sample under its component (up to a constant).

    With ``samples=(f, f_bin)`` the draw is not new: the given samples are re-expressed under
    the parameters ``p`` (their scores and densities), for importance weighting.
    """

    __slots__ = ("f", "w", "Cinv", "P", "zeta", "zs", "logq")

    def __init__(self, prior, p, P, s, S, rng_seed, samples=None):
        lo, hi = prior.offsets[s], prior.offsets[s + 1]
        Bn, Kt = prior.B[:, lo:hi], prior.Ktil[s]  # (G, T, M), (G, T, T)
        K, Q, T = p.K, p.Q, hi - lo
        self.P = P
        C = _cholesky(Kt[None] + P @ np.swapaxes(P, -1, -2), f"the latent covariance of sequence {s}")
        b = (Bn[None] @ p.m[..., None])[..., 0]  # (K, Q, T)
        self.Cinv = np.linalg.inv(C)
        if samples is None:
            rng = np.random.default_rng(rng_seed)
            eps = rng.standard_normal((K, Q, T, S))
            self.zeta = rng.standard_normal((K, Q, Q, S))
            self.f = b[..., None] + C @ eps
        else:
            self.f, fbin = samples
            eps = self.Cinv @ (self.f - b[..., None])
            self.zeta = (fbin - p.mb[None, :, :, None]) * np.exp(-p.log_sb)[None, :, :, None]
        self.w = np.swapaxes(self.Cinv, -1, -2) @ eps
        self.zs = self.zeta * np.exp(-p.log_sb)[None, :, :, None]
        log_det = np.sum(np.log(np.diagonal(C, axis1=-2, axis2=-1)), axis=(1, 2)) + np.sum(p.log_sb)  # (K,)
        self.logq = -0.5 * (np.sum(eps**2, axis=(1, 2)) + np.sum(self.zeta**2, axis=(1, 2))) - log_det[:, None]

    def fbin(self, p):
        return p.mb[None, :, :, None] + np.exp(p.log_sb)[None, :, :, None] * self.zeta


def _seq_loglik(draw, p, ys, likelihood):
    """log p(y_n | f) of every sample (K, S) under the :class:`~sklearn_struct._gp_likelihoods.Likelihood`."""
    return likelihood.sample_loglik(draw.f, draw.fbin(p), ys)


def _seq_estimate(draw, p, ys, likelihood, grad, control_variate):
    """ELL of one sequence (mean over components and samples) and its score-function gradient parts."""
    loglik = _seq_loglik(draw, p, ys, likelihood)
    ell = float(loglik.mean())  # pi_k = 1 / K
    ell_var = float(np.mean(loglik.var(axis=1, ddof=1) / loglik.shape[1]) / loglik.shape[0]) if loglik.shape[1] > 1 \
        else 0.0  # Monte-Carlo variance of ell
    if not grad:
        return (ell, ell_var), None
    c = _cv_weights(loglik, draw.w, draw.zs, control_variate) / loglik.shape[0]  # (K, S), includes 1/S and pi_k
    return (ell, ell_var), score_parts(draw, c)


def score_parts(draw, c, unary=True):
    """Score-function gradient parts ``sum_s c_ks grad log q(f_s)`` of one sequence for per-sample
    weights ``c`` (K, S): ``gb`` (T, K, Q), ``U`` (T, K, Q, M) with ``dL_kj = 2 B^T U_kj`` (both
    None unless ``unary``), and the pairwise ``g_mb``, ``g_lsb`` (Q, Q)."""
    g_mb = np.einsum("ks,kabs->ab", c, draw.zs)
    g_lsb = np.einsum("ks,kabs->ab", c, draw.zeta**2 - 1.0)
    if not unary:
        return None, None, g_mb, g_lsb
    w = draw.w
    gb = np.einsum("kqts,ks->tkq", w, c)
    Sinv = np.swapaxes(draw.Cinv, -1, -2) @ draw.Cinv
    G = 0.5 * ((w * c[:, None, None, :]) @ np.swapaxes(w, -1, -2) - c.sum(axis=1)[:, None, None, None] * Sinv)
    U = np.ascontiguousarray(np.transpose(G @ draw.P, (2, 0, 1, 3)))  # (T, K, Q, M)
    return gb, U, g_mb, g_lsb


def _cv_weights(loglik, w, zeta_scaled, control_variate):
    """Per-sample weights ``(l_i - a_{-i}) / S`` (leave-one-out control variate) or ``l_i / S``.

    ``a_{-i} = sum_{k != i} l_k r_k / sum_{k != i} r_k`` with ``r_k`` the squared norm of sample
    ``k``'s score: the optimal pooled coefficient ``Cov(l h, h) / Var(h)`` estimated without
    sample ``i`` itself, so the estimator stays exactly unbiased.
    """
    K, S = loglik.shape
    if not control_variate or S < 2:
        return loglik / S
    r = np.sum(w**2, axis=(1, 2)) + np.sum(zeta_scaled**2, axis=(1, 2))  # (K, S): squared score norms
    lr = loglik * r
    a = (lr.sum(axis=1, keepdims=True) - lr) / (r.sum(axis=1, keepdims=True) - r)
    return (loglik - a) / S


_CONTROLLER = []


def _blas_controller():
    """One threadpoolctl controller per process (building one scans the loaded libraries, ~5 ms)."""
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def sequence_seeds(seed, n):
    """The per-sequence seeds of :func:`_per_sequence` for ``n`` sequences."""
    return np.random.RandomState(seed).randint(np.iinfo(np.int32).max, size=n)


def _per_sequence(prior, p, seqs, S, seed, n_jobs, work, samples=None, seeds=None):
    """Run ``work(draw, i)`` for every sequence ``seqs[i]`` on fresh posterior draws (one seed per
    sequence, so results do not depend on the chunking; ``seeds`` gives them, else they come from
    ``seed``), or on the given ``samples[i] = (f, f_bin)`` re-expressed under ``p``;
    joblib-parallel over chunks of sequences."""
    seqs = np.asarray(seqs, dtype=np.int64)
    if samples is None and seeds is None:
        seeds = sequence_seeds(seed, len(seqs))
    elif samples is not None:
        seeds = None
    L = None if p.diagonal else p.L
    scale = np.exp(p.logd)
    offsets = prior.offsets

    def run(sl):
        res = []
        # small per-sequence BLAS calls: one BLAS thread each (joblib parallelises over sequences);
        # a multi-threaded BLAS on 25 x 25 matrices spins and runs several times slower on a busy machine
        with _blas_controller().limit(limits=1, user_api="blas"):
            for i in range(sl.start, sl.stop):
                s = int(seqs[i])
                Bn = prior.B[None, :, offsets[s]:offsets[s + 1]]
                # P = B_n L (K, Q, T, M): a column scaling when L is diagonal (M times fewer flops)
                P = Bn * scale[:, :, None, :] if p.diagonal else np.matmul(Bn, L)
                draw = _SeqDraw(prior, p, P, s, S, None, samples[i]) if seeds is None else \
                    _SeqDraw(prior, p, P, s, S, seeds[i])
                res.append(work(draw, i))
        return res

    chunks = even_chunks(len(seqs), 4 * max(1, _n_jobs(n_jobs)))
    return [r for part in run_chunks(run, chunks, n_jobs=n_jobs) for r in part]


def collect(res, grad, extra="ell_var"):
    """Per-sequence ``((ell, extra), parts)`` results as the estimate dict of :func:`mc_estimate`
    (gradient parts that were not computed, None, are left out)."""
    out = {"ell": np.array([r[0][0] for r in res]), extra: np.array([r[0][1] for r in res])}
    if grad:
        for key, idx, join in (("gb", 0, np.concatenate), ("U", 1, np.concatenate), ("g_mb", 2, np.stack),
                               ("g_lsb", 3, np.stack)):
            if res and res[0][1][idx] is not None:
                out[key] = join([r[1][idx] for r in res])
    return out


def estimate_work(p, seqs, y, offsets, likelihood, grad, control_variate):
    """The per-sequence work of :func:`mc_estimate`: ``work(draw, i)`` for sequence ``seqs[i]``."""
    def work(draw, i):
        s = seqs[i]
        return _seq_estimate(draw, p, y[offsets[s]:offsets[s + 1]], likelihood, grad, control_variate)
    return work


def fixed_work(p, seqs, y, offsets, likelihood):
    """The per-sequence work of :class:`~sklearn_struct._gp_struct_batch.FixedSamples`: samples, their log-likelihoods and densities."""
    def work(draw, i):
        s = seqs[i]
        return (draw.f, draw.fbin(p)), _seq_loglik(draw, p, y[offsets[s]:offsets[s + 1]], likelihood), draw.logq
    return work


def is_work(logliks, logq0s, grad):
    """The per-sequence work of :func:`~sklearn_struct._gp_struct_batch.is_estimate` given the fixed samples' log-likelihoods and densities."""
    def work(draw, i):
        loglik = logliks[i]
        K, S = loglik.shape
        logw = draw.logq - logq0s[i]
        wt = np.exp(logw - logw.max(axis=1, keepdims=True))
        wt /= wt.sum(axis=1, keepdims=True)
        ell_k = np.sum(wt * loglik, axis=1)
        ess = float(np.mean(1.0 / np.sum(wt**2, axis=1))) / S
        if not grad:
            return (float(ell_k.mean()), ess), None
        c = wt * (loglik - ell_k[:, None]) / K  # pi_k = 1 / K
        return (float(ell_k.mean()), ess), score_parts(draw, c, unary=grad != "pair")
    return work


def assemble_elbo(prior, p, seqs, est, grad):
    """ELBO value ``sum ell + KL terms`` and its gradient (unary vector, pairwise vector) from an
    estimate; the unary vector is None when the estimate has no unary parts."""
    ku, gm, gL = unary_kl(p)
    kp, g_mb, g_lsb = pair_kl(p)
    value = float(est["ell"].sum()) + ku + kp
    if not grad:
        return value, None, None, est
    gu = None
    if "gb" in est:
        dm, dL = unary_data_grad(prior.B[:, token_rows(prior.offsets, seqs)], est, p)
        gu = p.unary_grad_vector(gm + dm, gL + dL)
    gp = np.concatenate([(g_mb + est["g_mb"].sum(0)).ravel(), (g_lsb + est["g_lsb"].sum(0)).ravel()])
    return value, gu, gp, est


def token_rows(offsets, seqs):
    """Packed token indices of sequences ``seqs`` (in order)."""
    seqs = np.asarray(seqs, dtype=np.int64)
    lo, hi = offsets[seqs], offsets[seqs + 1]
    lengths = hi - lo
    return np.repeat(lo - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(lengths.sum())


def unary_data_grad(B_rows, est, p):
    """Map per-token gradient parts to the whitened parameters: dm = B^T gb, dL = 2 B^T U.

    ``B_rows`` is (G, n, M) for the tokens of ``est``: one GEMM when the labels share a kernel.
    With a diagonal covariance ``dL`` is only its diagonal (K, Q, M).
    """
    K, Q, M = p.K, p.Q, p.M
    n = B_rows.shape[1]
    if p.diagonal:  # dL: its diagonal (K, Q, M), the only part that is a parameter
        if B_rows.shape[0] == 1:
            dm = (B_rows[0].T @ est["gb"].reshape(n, K * Q)).reshape(M, K, Q).transpose(1, 2, 0)
            dL = 2.0 * np.einsum("nm,nkqm->kqm", B_rows[0], est["U"])
        else:
            dm = np.einsum("qnm,nkq->kqm", B_rows, est["gb"])
            dL = 2.0 * np.einsum("qnm,nkqm->kqm", B_rows, est["U"])
        return dm, dL
    if B_rows.shape[0] == 1:
        Bt = B_rows[0].T
        dm = (Bt @ est["gb"].reshape(n, K * Q)).reshape(M, K, Q).transpose(1, 2, 0)
        dL = 2.0 * (Bt @ est["U"].reshape(n, K * Q * M)).reshape(M, K, Q, M).transpose(1, 2, 0, 3)
        return dm, dL
    dm = np.einsum("qnm,nkq->kqm", B_rows, est["gb"])
    dL = 2.0 * np.einsum("qnm,nkql->kqml", B_rows, est["U"], optimize=True)
    return dm, dL


def pmi_transitions(fbin, axes=(-2, -1)):
    """The pointwise mutual information of the piecewise model's edge piece: a chain decoder's table.

    A candidate decoder of the piecewise model measured in issue #22 (the chain with this table);
    the decoder chosen on training data is token by token (:func:`sample_marginals`).

    The piecewise pseudo-likelihood (gp-var-p) trains two kinds of pieces. The unary piece
    ``softmax(u_t)`` is a per-token classifier ``p(y_t | x_t)``, whose label frequencies are those of
    the training tokens. The edge piece ``exp F[a, b]`` does not depend on ``x``; it is trained by
    its two conditionals ``p(b | a) = exp F[a, b] / sum_b' exp F[a, b']`` and
    ``p(a | b) = exp F[a, b] / sum_a' exp F[a', b]``, which are exactly the conditionals of the joint
    ``P(a, b) = exp F[a, b] / sum_{a', b'} exp F[a', b']``: two positive conditionals determine a
    joint uniquely, so the edge piece *is* the label-bigram distribution ``P`` (its MAP shrunk by the
    prior), with marginals ``P_L(a) = sum_b P(a, b)`` (out of ``a``) and ``P_R(b) = sum_a P(a, b)``.

    Re-assembling a chain from these pieces: a first-order Markov chain has
    ``p(y) = P_L(y_1) prod_{t >= 2} P(y_{t-1}, y_t) / P_L(y_{t-1})``; if each token's features
    depend on its own label only, Bayes' rule gives
    ``p(y | x) ∝ p(y) prod_t p(y_t | x_t) / P(y_t)``. With the unigram marginal ``P(y_t)`` equal
    to the bigram's marginals (they differ only by the sequence ends), the factors ``P(y_t)``
    pair off edge by edge: the first token's ``P_L(y_1)`` cancels its Bayes factor, every other
    token's Bayes factor goes to its incoming edge, and the chain's ``1 / P_L(y_{t-1})`` to the
    outgoing one, so

    ``p(y | x) ∝ prod_t p(y_t | x_t) prod_{t >= 2} P(y_{t-1}, y_t) / (P_L(y_{t-1}) P_R(y_t))``,

    the chain with unaries ``u_t`` (the softmax's normaliser is constant per token) and the
    transition table ``log P(a, b) - log P_L(a) - log P_R(b)``:

    ``F[a, b] - logsumexp_b' F[a, b'] - logsumexp_a' F[a', b] + logsumexp_{a', b'} F[a', b']``.

    It is zero when the labels of neighbours are independent under ``P`` (the chain then decodes
    token by token), and it no longer carries the label frequencies, which the unary pieces hold
    already (the raw table ``F`` counts them a second time). The constant ``F -> F + c`` left free
    by the pseudo-likelihood cancels.

    Parameters
    ----------
    fbin : ndarray
        Transition tables ``F``: ``[from, to]`` along ``axes`` (any leading / trailing sample axes).
    axes : tuple of 2 int, default=(-2, -1)

    Returns
    -------
    pmi : ndarray of the shape of ``fbin``
    """
    a, b = (ax % fbin.ndim for ax in axes)
    row = np.expand_dims(_lse(fbin, b), b)  # log sum_b' exp F[a, b']
    col = np.expand_dims(_lse(fbin, a), a)  # log sum_a' exp F[a', b]
    total = np.expand_dims(_lse(row, a), a)  # log sum_{a', b'} exp F
    return fbin - row - col + total


def map_marginals(unary, mb, offsets, likelihood):
    """Node marginals (N, Q) of the model with unaries ``unary`` (N, Q) and table ``mb`` by the
    decoder of ``likelihood`` (a :class:`~sklearn_struct._gp_likelihoods.Likelihood`): the chain's
    forward-backward, or for the piecewise model token by token, the softmax of the unary scores."""
    return likelihood.node_marginals(unary, mb, offsets)


def sample_marginals(prior, p, seqs, n_samples, seed, n_jobs=None, likelihood=CHAIN):
    """Posterior-predictive node marginals, averaged over q(f) samples: each sample's marginals by the
    decoder of ``likelihood`` (a :class:`~sklearn_struct._gp_likelihoods.Likelihood`): the chain's
    forward-backward, or for the piecewise model the softmax of each sampled unary (its decoder,
    chosen on training data: see :class:`~sklearn_struct._gp_likelihoods.PiecewiseLikelihood`).
    """
    S = max(1, -(-n_samples // p.K))  # samples per component

    def work(draw, i):
        return likelihood.sample_marginals(draw.f, draw.fbin(p))

    with np.errstate(all="ignore"):
        out = _per_sequence(prior, p, seqs, S, seed, n_jobs, work)
    for i, m in enumerate(out):
        if not np.all(np.isfinite(m)):
            raise ValueError(f"non-finite scores: the latent scores of sequence {seqs[i]} overflow (feature values "
                             "too large?); its marginals are not finite.")
    return out
