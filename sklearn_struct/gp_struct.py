"""GPStructClassifier: gray-box variational inference for structured (linear-chain) GP models."""

import numbers
import time

import numpy as np
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.gaussian_process.kernels import DotProduct, Kernel
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._chain_crf import ChainTagsMixin
from ._gp_struct_batch import FixedSamples, trusted_elbo
from ._gp_struct_model import (
    SparsePrior, VarParams, elbo, gram, init_inducing, mc_estimate, pair_kl, sample_marginals, token_rows, unary_data_grad,
    unary_kl,
)
from .oracles.chain import viterbi
from .utils.optimize import lbfgs
from .utils.packing import pack_sequences
from .utils.progress import Progress
from .utils.validation import check_sequences, encode_sequence_labels

__all__ = ["GPStructClassifier"]

_DEFAULT_BLOCKS = {"lbfgs": (50, 10, 5), "saga": (3000, 1000, 0)}
_ESS_RESAMPLE, _ESS_FLOOR = 0.5, 0.25  # gp-var-b: effective sample size fractions (new draw / infeasible step)


class GPStructClassifier(ChainTagsMixin, BaseEstimator):
    """Structured GP classifier for sequences, fitted by gray-box variational inference.

    The model of Galliani et al. (2017): one Gaussian process per label gives the unary
    functions ``f_j(x_t)`` over token features, a ``Q x Q`` table ``f_bin`` with a
    ``N(0, I)`` prior gives the transitions, and the linear-chain CRF likelihood
    ``log p(y | f)`` is used only as a black box, through the chain oracle's log partition
    function (no likelihood gradients). ``likelihood="piecewise"`` replaces it by the
    piecewise pseudo-likelihood (the paper's gp-var-p): each unary factor normalised over
    its label, each edge factor by its two conditionals.

    The posterior is sparse and whitened: ``M`` inducing inputs (k-means centres of the
    training tokens, shared by the labels), a mixture of ``K`` Gaussians over the whitened
    inducing values of each label (full Cholesky or diagonal covariance) and a diagonal
    Gaussian over ``f_bin``. The ELBO is ``E_q log p(y | f) - KL``: the expectation by Monte
    Carlo from each sequence's ``T x T`` Gaussians per label, the KL in closed form (a
    Jensen bound for the mixture entropy). Gradients are score-function estimates with a
    leave-one-out control variate. ``optimizer="saga"`` (gp-var-s) runs SAGA over
    sequences in blocks (unary, then pairwise parameters); ``optimizer="lbfgs"`` (gp-var-b)
    runs L-BFGS by blocks (unary, pairwise, kernel hyperparameters) and keeps the best
    ELBO. So that the line search and the gradients see one function, each L-BFGS run
    works on a fixed sample set: the ELBO estimated by self-normalised importance weights
    ``q_theta(f_s) / q_theta0(f_s)`` of samples drawn at ``theta0``, whose gradient at
    ``theta0`` is the score-function estimate with the sample mean as control variate; the
    set is redrawn when its effective sample size falls below half of ``n_samples``, and
    steps taking it below a quarter are shortened. Predictions average forward-backward
    marginals over posterior samples.

    Parameters
    ----------
    kernel : Kernel or list of Kernel, default=None
        Covariance of the label GPs (``sklearn.gaussian_process.kernels`` objects): one
        kernel shared by every label, or a list of ``n_classes`` kernels, one per label in
        the order of ``classes_`` (the paper's ``kappa_j``; their hyperparameters are fitted
        separately by ``optimizer="lbfgs"``). None means ``DotProduct(sigma_0=1)`` (linear,
        for sparse NLP features). On sparse features DotProduct, isotropic RBF,
        ConstantKernel, WhiteKernel and their sums / products work.
    likelihood : {"chain", "piecewise"}, default="chain"
    optimizer : {"saga", "lbfgs"}, default="saga"
    n_inducing : int, default=100
        Inducing inputs M (the paper used 500).
    n_components : int, default=1
        Mixture components K of the posterior.
    covariance : {"full", "diagonal"}, default="full"
    n_samples : int, default=200
        Monte-Carlo samples per sequence and component in each ELBO estimate.
    max_iter : int, default=5
        Global iterations (each runs every block once).
    block_iters : tuple of 3 int, default=None
        Iterations per block (unary, pairwise, hyperparameters) in one global iteration:
        L-BFGS iterations for ``"lbfgs"`` (default ``(50, 10, 5)``), SAGA steps for
        ``"saga"`` (default ``(3000, 1000, 0)``: hyperparameters stay fixed, as in the paper).
    batch_size : int, default=1
        Sequences per SAGA step.
    learning_rate : float, default=1e-4
        SAGA step size of the means (unary and pairwise). Each coordinate's step is
        clipped to 0.5; a global iteration that lowers the ELBO estimate (by more than two
        Monte-Carlo standard errors) is undone and both step sizes are halved. Steps of row
        ``a`` of the pairwise table are divided by ``1 + n_a / 4`` (``n_a`` transitions out of
        label ``a`` in the training data, a bound on that row's curvature), so one step size
        suits both blocks.
    learning_rate_cov : float, default=1e-5
        SAGA step size of the covariance parameters.
    control_variate : bool, default=True
        Use the control variate in the gradient estimates.
    tol : float, default=1e-5
        L-BFGS stops when the ELBO changes by less than ``tol`` (relative) between global
        iterations, or the variational means of the unaries by less than 1e-3 on average.
    n_predict_samples : int, default=200
        Posterior samples averaged in :meth:`predict_marginals`.
    decode : {"marginal", "viterbi_mean"}, default="marginal"
        :meth:`predict` takes the argmax of the averaged marginals, or Viterbi on the
        posterior mean functions.
    warm_start : bool, default=False
        Continue from the previous fit's parameters.
    random_state : int, RandomState instance or None, default=None
    n_jobs : int, default=None
        joblib jobs for the per-sequence sampling and gradient work.
    callback : callable or None, default=None
        Called after every global iteration as ``callback(iteration, elbo, seconds)`` (the
        entries of ``elbo_curve_`` and ``elbo_times_``); returning True stops the fit there.
    verbose : int, default=0
        Print one line per global iteration: ELBO estimate and elapsed seconds.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    inducing_inputs_ : ndarray or csr_matrix of shape (n_inducing, n_features)
    kernel_ : Kernel or list of Kernel
        The kernel (or the per-label kernels) with the fitted hyperparameters.
    n_iter_ : int
        Global iterations run.
    elbo_curve_ : ndarray of shape (``n_iter_ + 1``,)
        ELBO estimate at the start and after each global iteration.
    elbo_times_ : ndarray of shape (``n_iter_ + 1``,)
        Seconds since the start of ``fit`` at each ``elbo_curve_`` point.
    step_scale_ : float
        ``optimizer="saga"`` only: the factor on both step sizes at the end of the fit
        (halved at every undone iteration); a warm start continues from it.

    See Also
    --------
    sklearn_struct.NonLocalCRF : the linear-chain CRF (maximum likelihood).

    References
    ----------
    P. Galliani, A. Dezfouli, E. V. Bonilla, N. Quadrianto. Gray-box inference for
    structured Gaussian process models. AISTATS 2017.

    Examples
    --------
    >>> from sklearn_struct import GPStructClassifier
    >>> from sklearn_struct.datasets import make_chain_data
    >>> X, y = make_chain_data(20, n_labels=2, n_features=3, random_state=0)
    >>> gp = GPStructClassifier(optimizer="lbfgs", n_inducing=10, n_samples=20, max_iter=1,
    ...                         block_iters=(5, 2, 0), random_state=0).fit(X, y)
    >>> gp.predict(X[:1])[0].shape == y[0].shape
    True
    """

    _parameter_constraints: dict = {
        "kernel": [None, Kernel, list, tuple],
        "likelihood": [StrOptions({"chain", "piecewise"})],
        "optimizer": [StrOptions({"saga", "lbfgs"})],
        "n_inducing": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "covariance": [StrOptions({"full", "diagonal"})],
        "n_samples": [Interval(numbers.Integral, 2, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "block_iters": [None, tuple, list],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "learning_rate_cov": [Interval(numbers.Real, 0, None, closed="left")],
        "control_variate": ["boolean"],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "n_predict_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "decode": [StrOptions({"marginal", "viterbi_mean"})],
        "warm_start": ["boolean"],
        "random_state": ["random_state"],
        "n_jobs": [numbers.Integral, None],
        "callback": [None, callable],
        "verbose": ["verbose"],
    }

    def __init__(self, kernel=None, *, likelihood="chain", optimizer="saga", n_inducing=100, n_components=1,
                 covariance="full", n_samples=200, max_iter=5, block_iters=None, batch_size=1,
                 learning_rate=1e-4, learning_rate_cov=1e-5, control_variate=True, tol=1e-5,
                 n_predict_samples=200, decode="marginal", warm_start=False, random_state=None, n_jobs=None,
                 callback=None, verbose=0):
        self.kernel = kernel
        self.likelihood = likelihood
        self.optimizer = optimizer
        self.n_inducing = n_inducing
        self.n_components = n_components
        self.covariance = covariance
        self.n_samples = n_samples
        self.max_iter = max_iter
        self.block_iters = block_iters
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.learning_rate_cov = learning_rate_cov
        self.control_variate = control_variate
        self.tol = tol
        self.n_predict_samples = n_predict_samples
        self.decode = decode
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.callback = callback
        self.verbose = verbose

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the variational posterior (and, with L-BFGS, the kernel hyperparameters).

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        y : list of array-like of shape (n_tokens_i,)

        Returns
        -------
        self : GPStructClassifier
        """
        X, y = check_sequences(X, y)
        blocks = self._blocks()
        encoder = LabelEncoder().fit(np.concatenate(y))
        warm = self.warm_start and hasattr(self, "params_")
        if warm and (X[0].shape[1] != self.n_features_in_ or not np.array_equal(encoder.classes_, self.classes_)):
            raise ValueError("warm_start=True needs the same features and labels as the previous fit.")
        Xp, offsets = pack_sequences(X)
        rng = check_random_state(self.random_state)
        if not warm:
            self.kernel_ = _fresh_kernels(self.kernel, len(encoder.classes_))
            for kernel in self.kernel_ if isinstance(self.kernel_, list) else [self.kernel_]:
                _check_kernel(kernel, Xp)
            self.inducing_inputs_ = init_inducing(Xp, self.n_inducing, rng)
        self.classes_ = encoder.classes_
        self.n_features_in_ = X[0].shape[1]
        y_all = np.concatenate(encode_sequence_labels(encoder, y)).astype(np.int64)
        Q, M = len(self.classes_), self.inducing_inputs_.shape[0]
        if not warm:
            p = VarParams(self.n_components, Q, M, self.covariance == "diagonal", init_scale=0.1)
            if self.n_components > 1:  # break the symmetry between components
                p.m += 0.1 * rng.standard_normal(p.m.shape)
            self.params_ = p
        self._fit_state = dict(Xp=Xp, offsets=offsets, y=y_all, rng=rng, start=time.perf_counter())
        self._fit_state["progress"] = Progress(type(self).__name__, self.verbose, self.callback, objective="ELBO",
                                               start=self._fit_state["start"])
        self._prior = SparsePrior(self.kernel_, self.inducing_inputs_, Xp, offsets, n_jobs=self.n_jobs)
        if self.optimizer == "lbfgs":
            self._fit_lbfgs(blocks)
        else:
            self._fit_saga(blocks)
        self._predict_seed = int(rng.randint(np.iinfo(np.int32).max))
        del self._fit_state, self._prior
        return self

    def _blocks(self):
        blocks = _DEFAULT_BLOCKS[self.optimizer] if self.block_iters is None else tuple(self.block_iters)
        if len(blocks) != 3 or not all(isinstance(b, numbers.Integral) and b >= 0 for b in blocks):
            raise ValueError(f"block_iters must be 3 non-negative ints (unary, pairwise, hyperparameters), got {blocks!r}.")
        return blocks

    def _elbo(self, p, seed, grad=True, seqs=None):
        """MC ELBO (full data) and its gradient as (unary vector, pairwise vector)."""
        st = self._fit_state
        n_seq = st["offsets"].shape[0] - 1
        seqs = np.arange(n_seq) if seqs is None else seqs
        return elbo(self._prior, p, seqs, st["y"], self.n_samples, seed, self.likelihood, grad=grad,
                    control_variate=self.control_variate, n_jobs=self.n_jobs)

    def _record(self, value):
        """Append to the ELBO curve and report; True when the callback asks to stop."""
        self.elbo_curve_.append(value)
        self.elbo_times_.append(time.perf_counter() - self._fit_state["start"])
        return self._fit_state["progress"](len(self.elbo_curve_) - 1, value, self.elbo_times_[-1])

    def _finish(self, n_iter):
        self.n_iter_ = n_iter
        self.elbo_curve_ = np.asarray(self.elbo_curve_)
        self.elbo_times_ = np.asarray(self.elbo_times_)

    # ------------------------------------------------------------------ gp-var-b
    def _fit_lbfgs(self, blocks):
        rng = self._fit_state["rng"]
        p = self.params_
        self.elbo_curve_, self.elbo_times_ = [], []
        value = self._elbo(p, int(rng.randint(2**31 - 1)), grad=False)[0]
        self._record(value)
        best, best_p = value, p.copy()
        n_iter = 0
        for n_iter in range(1, self.max_iter + 1):
            old_means = p.m.copy()
            if blocks[0]:
                self._lbfgs_block(p, p.get_unary, p.set_unary, 0, blocks[0])
            if blocks[1]:
                self._lbfgs_block(p, p.get_pair, p.set_pair, 1, blocks[1])
            if blocks[2] and _theta(self.kernel_)[0].size:
                self._hyper_block(p, blocks[2])
            new = self._elbo(p, int(rng.randint(2**31 - 1)), grad=False)[0]  # fresh samples: unbiased
            stop = self._record(new)
            if new > best:
                best, best_p = new, p.copy()
            change = np.mean(np.abs(p.m - old_means))  # the means: M x M covariance factors would dilute it
            if stop or abs(new - value) <= self.tol * max(abs(new), abs(value), 1.0) or change < 1e-3:
                break
            value = new
        self.params_ = best_p
        self._finish(n_iter)

    def _fixed_samples(self, p):
        st = self._fit_state
        return FixedSamples(self._prior, p, np.arange(st["offsets"].shape[0] - 1), st["y"], self.n_samples,
                            int(st["rng"].randint(2**31 - 1)), self.likelihood, n_jobs=self.n_jobs)

    def _lbfgs_block(self, p, get, put, which, max_iter):
        """``max_iter`` L-BFGS iterations on one block of the importance-weighted ELBO (see
        ``_gp_struct_batch``). A sample set is drawn at the current parameters and kept while the
        mean effective sample size stays above ``_ESS_RESAMPLE``; steps that take it below
        ``_ESS_FLOOR`` count as infeasible, so the line search shortens them (a trust region)."""
        done = 0
        while done < max_iter:
            fixed, ess = self._fixed_samples(p), [1.0]

            def fun(x):
                put(x)
                v, gu, gp, ess[0] = trusted_elbo(self._prior, p, fixed, True if which == 0 else "pair", _ESS_FLOOR)
                return (-v, -(gu if which == 0 else gp)) if np.isfinite(v) else (np.inf, np.zeros_like(x))

            res = lbfgs(fun, get(), max_iter=max_iter - done, tol=0.0,
                        callback=lambda k, f, x: ess[0] < _ESS_RESAMPLE)
            put(res.x)
            done += max(res.nit, 1)

    def _hyper_block(self, p, max_iter):
        """L-BFGS on the log-hyperparameters (of every label's kernel): the importance-weighted ELBO
        of one sample set, the gradient by central differences (the prior enters the weights)."""
        st = self._fit_state
        kernels0 = self.kernel_
        fixed = self._fixed_samples(p)

        def value(theta):
            try:
                with np.errstate(all="ignore"):
                    prior = SparsePrior(_with_theta(kernels0, theta), self.inducing_inputs_, st["Xp"],
                                        st["offsets"], n_jobs=self.n_jobs)
            except ValueError:
                return np.inf
            return -trusted_elbo(prior, p, fixed, False, _ESS_FLOOR)[0]

        def fun(theta):
            f0 = value(theta)
            g = np.empty_like(theta)
            for i in range(theta.size):
                e = np.zeros_like(theta)
                e[i] = 1e-3
                g[i] = (value(theta + e) - value(theta - e)) / 2e-3
            return f0, g

        theta0, bounds = _theta(kernels0)
        res = lbfgs(fun, theta0, max_iter=max_iter, tol=0.0)
        self.kernel_ = _with_theta(kernels0, np.clip(res.x, bounds[:, 0], bounds[:, 1]))
        self._prior = SparsePrior(self.kernel_, self.inducing_inputs_, st["Xp"], st["offsets"], n_jobs=self.n_jobs)

    # ------------------------------------------------------------------ gp-var-s
    def _fit_saga(self, blocks):
        """SAGA by blocks. Each global iteration ends with a full pass (the new SAGA table and the
        ELBO); if the ELBO fell by more than two Monte-Carlo standard errors of the difference,
        the iteration is undone and the step sizes are halved."""
        st = self._fit_state
        rng, offsets = st["rng"], st["offsets"]
        n_seq = offsets.shape[0] - 1
        self.elbo_curve_, self.elbo_times_ = [], []
        table = self._saga_table(self.params_, int(rng.randint(2**31 - 1)))
        self._record(table["value"])
        y = st["y"]
        starts = np.zeros(y.shape[0], dtype=bool)
        starts[offsets[:-1]] = True
        from_counts = np.bincount(y[np.flatnonzero(~starts) - 1], minlength=self.params_.Q)
        st["pair_scale"] = 1.0 / (1.0 + 0.25 * from_counts)[:, None]  # 1 / curvature bound of each row of m_bin
        warm = self.warm_start and hasattr(self, "step_scale_")
        st["step_scale"] = self.step_scale_ if warm else 1.0
        st["order"], st["pos"] = rng.permutation(n_seq), 0
        n_iter = 0
        for n_iter in range(1, self.max_iter + 1):
            p = self.params_.copy()
            self._saga_epochs(p, {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in table.items()}, blocks)
            new = self._saga_table(p, int(rng.randint(2**31 - 1)))
            noise = 2.0 * np.hypot(new["value_se"], table["value_se"])  # two standard errors of the difference
            if not np.isfinite(new["value"]) or new["value"] < table["value"] - noise:
                st["step_scale"] *= 0.5  # the iteration made the ELBO worse: undo it, smaller steps
            else:
                self.params_, table = p, new
            if self._record(table["value"]):
                break
        self.step_scale_ = st["step_scale"]
        self._finish(n_iter)

    def _saga_epochs(self, p, table, blocks):
        st = self._fit_state
        n_seq = st["offsets"].shape[0] - 1
        for block, n_steps in ((0, blocks[0]), (1, blocks[1])):
            for _ in range(n_steps):
                if st["pos"] + self.batch_size > n_seq:
                    st["order"], st["pos"] = st["rng"].permutation(n_seq), 0
                batch = np.sort(st["order"][st["pos"]:st["pos"] + self.batch_size])
                st["pos"] += self.batch_size
                self._saga_step(p, table, batch, block, int(st["rng"].randint(2**31 - 1)), self._prior.B, n_seq)

    def _saga_table(self, p, seed):
        """A full pass: per-sequence gradient parts stored, and their sums."""
        st = self._fit_state
        n_seq = st["offsets"].shape[0] - 1
        est = mc_estimate(self._prior, p, np.arange(n_seq), st["y"], self.n_samples, seed, self.likelihood,
                          control_variate=self.control_variate, n_jobs=self.n_jobs)
        dm, dL = unary_data_grad(self._prior.B, est, p)
        value = float(est["ell"].sum()) + unary_kl(p)[0] + pair_kl(p)[0]
        return dict(gb=est["gb"], U=est["U"], g_mb=est["g_mb"], g_lsb=est["g_lsb"], sum_m=dm, sum_L=dL,
                    sum_mb=est["g_mb"].sum(0), sum_lsb=est["g_lsb"].sum(0), value=value,
                    value_se=float(np.sqrt(est["ell_var"].sum())))

    def _saga_step(self, p, table, batch, block, seed, B, n_seq):
        st = self._fit_state
        est = mc_estimate(self._prior, p, batch, st["y"], self.n_samples, seed, self.likelihood,
                          control_variate=self.control_variate, n_jobs=self.n_jobs)
        rows = token_rows(st["offsets"], batch)
        scale = n_seq / len(batch)
        d_est = dict(gb=est["gb"] - table["gb"][rows], U=est["U"] - table["U"][rows])
        dm, dL = unary_data_grad(B[:, rows], d_est, p)
        d_mb = (est["g_mb"] - table["g_mb"][batch]).sum(0)
        d_lsb = (est["g_lsb"] - table["g_lsb"][batch]).sum(0)
        lr, lr_cov = self.learning_rate * st["step_scale"], self.learning_rate_cov * st["step_scale"]
        if block == 0:
            _, gm, gL = unary_kl(p)
            g = p.unary_grad_vector(gm + table["sum_m"] + scale * dm, gL + table["sum_L"] + scale * dL)
            n_mean = p.m.size
            x = p.get_unary()
            x[:n_mean] += _clip(lr * g[:n_mean])
            x[n_mean:] += _clip(lr_cov * g[n_mean:])
            p.set_unary(x)
        else:
            _, g_mb, g_lsb = pair_kl(p)
            h = st["pair_scale"]
            p.mb += _clip(lr * h * (g_mb + table["sum_mb"] + scale * d_mb))
            p.log_sb += _clip(lr_cov * h * (g_lsb + table["sum_lsb"] + scale * d_lsb))
        table["gb"][rows] = est["gb"]
        table["U"][rows] = est["U"]
        table["g_mb"][batch] = est["g_mb"]
        table["g_lsb"][batch] = est["g_lsb"]
        table["sum_m"] += dm
        table["sum_L"] += dL
        table["sum_mb"] += d_mb
        table["sum_lsb"] += d_lsb

    # ------------------------------------------------------------------ predict
    def _test_prior(self, X):
        check_is_fitted(self)
        X = check_sequences(X, n_features=self.n_features_in_)
        Xp, offsets = pack_sequences(X)
        return SparsePrior(self.kernel_, self.inducing_inputs_, Xp, offsets, n_jobs=self.n_jobs), offsets

    def predict_marginals(self, X):
        """Posterior-predictive label marginals: forward-backward marginals averaged over q(f) samples.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)

        Returns
        -------
        marginals : list of ndarray of shape (n_tokens_i, n_classes)
        """
        prior, offsets = self._test_prior(X)
        return sample_marginals(prior, self.params_, np.arange(offsets.shape[0] - 1), self.n_predict_samples,
                                self._predict_seed, n_jobs=self.n_jobs)

    def predict(self, X):
        """Labels per token: argmax of :meth:`predict_marginals`, or Viterbi on the posterior mean.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
            Sequences to label; ``decode`` chooses the decoder.

        Returns
        -------
        y : list of ndarray of shape (n_tokens_i,)
        """
        if self.decode == "viterbi_mean":
            prior, offsets = self._test_prior(X)
            unary = prior.unary_mean(self.params_.m.mean(axis=0))
            labels, _ = viterbi(unary, self.params_.mb, offsets)
            return [self.classes_[labels[offsets[i]:offsets[i + 1]]] for i in range(offsets.shape[0] - 1)]
        return [self.classes_[np.argmax(m, axis=1)] for m in self.predict_marginals(X)]

    def score(self, X, y, sample_weight=None):
        """Token accuracy of :meth:`predict` on ``X``.

        Parameters
        ----------
        X : list of array-like or sparse matrices
        y : list of array-like of shape (n_tokens_i,)
        sample_weight : None
            Not supported (must be None).

        Returns
        -------
        score : float
        """
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported by GPStructClassifier.score.")
        pred = self.predict(X)
        y = [np.asarray(t) for t in y]
        if len(y) != len(pred) or any(len(a) != len(b) for a, b in zip(y, pred)):
            raise ValueError("y must have one label per token of X.")
        return float(np.mean(np.concatenate(pred) == np.concatenate(y)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


def _fresh_kernels(kernel, n_classes):
    """Unfitted copies of the ``kernel`` parameter: one Kernel, or a list of ``n_classes``."""
    if kernel is None:
        return DotProduct(sigma_0=1.0)
    if isinstance(kernel, Kernel):
        return clone(kernel)
    if len(kernel) != n_classes or not all(isinstance(k, Kernel) for k in kernel):
        raise ValueError(f"kernel must be a Kernel or a list of {n_classes} Kernels (one per label), got "
                         f"{len(kernel)} items: {kernel!r}.")
    return [clone(k) for k in kernel]


def _theta(kernels):
    """Log-hyperparameters and their bounds, concatenated over the kernel list."""
    kernels = kernels if isinstance(kernels, list) else [kernels]
    theta = np.concatenate([k.theta for k in kernels])
    bounds = np.vstack([k.bounds for k in kernels if k.n_dims] or [np.zeros((0, 2))])
    return theta, bounds


def _with_theta(kernels, theta):
    """``kernels`` (one or a list) with the concatenated log-hyperparameters ``theta``."""
    if not isinstance(kernels, list):
        return kernels.clone_with_theta(theta)
    out, start = [], 0
    for k in kernels:
        out.append(k.clone_with_theta(theta[start:start + k.n_dims]))
        start += k.n_dims
    return out


def _check_kernel(kernel, Xp):
    """Evaluate the kernel on two tokens: a ValueError (naming the kernel) if it does not fit the features."""
    sample = Xp[:2]
    try:
        K = gram(kernel, sample)
    except (TypeError, AttributeError) as exc:
        raise ValueError(f"kernel {kernel!r} cannot be evaluated on these features: {exc}") from None
    if K.shape != (sample.shape[0], sample.shape[0]) or not np.all(np.isfinite(K)):
        raise ValueError(f"kernel {kernel!r} gives an invalid Gram matrix on these features.")


def _clip(step, limit=0.5):
    """Bound each coordinate of a stochastic step (a trust region against heavy-tailed gradient noise)."""
    return np.clip(step, -limit, limit)
