"""GPStructClassifier: gray-box variational inference for structured (linear-chain) GP models."""

import numbers
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import ConstantKernel, DotProduct, Kernel
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._chain_crf import ChainTagsMixin
from ._gp_likelihoods import LIKELIHOODS
from ._gp_struct_amplitude import cv_amplitude, scaled_kernel
from ._gp_struct_model import (SparsePrior, VarParams, check_feature_scale, gram, init_inducing, linear_sigma_0,
                               sample_marginals, svd_inducing)
from ._gp_struct_optim import FitContext, fit_batch, fit_saga, kernel_theta, map_start_with_hyper_search, start_from_map
from .utils._proba import MarginalsAsProbaMixin
from .utils._params import atomic_fit, store_init_params
from .utils.packing import pack_sequences
from .utils.progress import Progress
from .utils.validation import check_sequences, encode_sequence_labels

__all__ = ["GPStructClassifier"]

_DEFAULT_BLOCKS = {"lbfgs": (10, 5, 2), "saga": (3000, 1000, 0)}
_AUTO_SAMPLES = {"lbfgs": 1000, "saga": 100}  # n_samples="auto" (issue #22, bench_gp_struct_samples)


class GPStructClassifier(MarginalsAsProbaMixin, ChainTagsMixin, BaseEstimator):
    """Structured GP classifier for sequences, fitted by gray-box variational inference.

    The model of Galliani et al. (2017): one Gaussian process per label gives the unary
    functions ``f_j(x_t)`` over token features, a ``Q x Q`` table ``f_bin`` with a
    ``N(0, I)`` prior gives the transitions, and the linear-chain CRF likelihood
    ``log p(y | f)`` is used only as a black box, through the chain oracle's log partition
    function (no likelihood gradients). ``likelihood="piecewise"`` replaces it by the
    piecewise pseudo-likelihood (the paper's gp-var-p): each unary factor normalised over
    its label, each edge factor by its two conditionals.

    The posterior is sparse and whitened: ``M`` inducing inputs shared by the labels (for the
    linear kernel a basis of the top singular subspace of the training tokens, else k-means
    centres; see ``inducing``), a mixture of ``K`` Gaussians over the whitened
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
    steps taking it below a quarter are shortened; the L-BFGS memory (curvature pairs, each
    from two gradients of one sample set) is kept across redraws. Predictions average forward-backward
    marginals over posterior samples (the piecewise model: the per-token softmax of the sampled unaries,
    see ``likelihood``).

    Parameters
    ----------
    kernel : Kernel or list of Kernel, default=None
        Covariance of the label GPs (``sklearn.gaussian_process.kernels`` objects): one
        kernel shared by every label, or a list of ``n_classes`` kernels, one per label in
        the order of ``classes_`` (the paper's ``kappa_j``; their hyperparameters are fitted
        separately by ``optimizer="lbfgs"``). None means ``DotProduct(sigma_0=1,
        sigma_0_bounds="fixed")``: linear, for sparse NLP features, times the amplitude chosen by
        ``amplitude`` (with ``amplitude="elbo"``: ``ConstantKernel(1) * DotProduct(...)``, the
        amplitude fitted by the hyperparameter block of ``optimizer="lbfgs"``, fixed at 1 by SAGA
        as in the paper). On sparse features DotProduct, isotropic RBF, ConstantKernel,
        WhiteKernel and their sums / products work.
    likelihood : {"chain", "piecewise"}, default="chain"
        ``"chain"``: the linear-chain CRF likelihood. ``"piecewise"``: the piecewise
        pseudo-likelihood (Sutton & McCallum 2007), predicting token by token: the paper gives no
        prediction rule, and this one is a documented choice. The unary pieces are per-token
        classifiers ``softmax(f(x_t))``; the edge piece ``f_bin`` does not see ``x`` and learns the
        label-bigram distribution, label frequencies included, so the chain decoder with ``f_bin``
        counts those twice. Three decoders were compared by 3-fold CV inside the training halves
        of the four CRF++ tasks (papers' protocol, the piecewise sparse MAP): the chain with
        ``f_bin``, the chain with ``f_bin``'s pointwise mutual information (the chain re-assembled
        from the pieces, label frequencies counted once) and token by token; token by token had
        the lowest held-out error on every task at amplitude 1 and on three of four at each
        decoder's own CV amplitude (chunking: the PMI chain, 9.71 against 9.82), the chain with
        ``f_bin`` the highest everywhere (``benchmarks/studies/bench_gp_struct_piecewise.py``).
        So :meth:`predict_marginals` averages the softmax of the sampled unaries, ``decode=
        "viterbi_mean"`` takes the argmax of the posterior mean unaries, and ``amplitude="cv"``
        scores the piecewise sparse MAP by the same decoder; ``f_bin`` is fitted (it is part of the
        ELBO) but does not enter the predictions.
    optimizer : {"lbfgs", "saga"}, default="lbfgs"
        ``"lbfgs"``: gp-var-b, which stops by its ELBO rule (``tol``). ``"saga"``: gp-var-s
        (gp-var-p with ``likelihood="piecewise"``).
    n_inducing : int, default=500
        Inducing inputs M (the paper's 500), at most the number of training tokens (and, with
        the SVD basis, at most the rank of the training tokens' augmented features).
    inducing : {"auto", "svd", "kmeans"}, default="auto"
        How the inducing inputs ``Z`` are chosen (the paper does not say). ``"svd"`` (linear
        kernels only: ``DotProduct`` or ``ConstantKernel * DotProduct``): ``Z`` spans the top-M
        right singular subspace of the training tokens' features augmented by the kernel's
        constant ``[sigma_0, x]`` (randomized SVD), rotated and scaled so that ``K(Z, Z)`` is a
        multiple of the identity. A linear kernel's functions are weight vectors, and the sparse
        GP's are those in the span of ``Z``: this span gives the best rank-M Nystrom
        approximation of the training tokens' kernel matrix, and with M at least the rank of the
        tokens the sparse model is the full GP (the sparse MAP is a full-weight L2 CRF on the
        features); M is cut to that rank. Exact for the ``sigma_0`` at the start of the fit (a
        learnable ``sigma_0`` moved by the hyperparameter block leaves ``Z`` where it was).
        ``"kmeans"``: k-means centres of the training tokens (Lloyd, 10 iterations), for any
        kernel. ``"auto"``: ``"svd"`` for a linear kernel, else ``"kmeans"``. On the CRF++
        tasks (paper split 0, M = 500 below the rank of 1,081 / 1,305 tokens) the SVD basis
        leaves less residual variance on the training tokens than k-means (2.8% against 6.2%
        on chunking, 7.8% against 13.5% on Japanese NE) and its sparse MAP errs less (issue #22).
    n_components : int, default=1
        Mixture components K of the posterior.
    init : {"map", "prior"}, default="map"
        Start of the variational parameters. ``"prior"``: zero means, covariances ``0.1^2 I``
        (gray-box: the likelihood is only evaluated). ``"map"``: the means at the sparse MAP
        solution (L-BFGS on the whitened inducing values with the likelihood's exact gradients,
        i.e. a CRF on the inducing features with the ``N(0, I)`` prior as its L2 penalty; with
        ``likelihood="piecewise"`` the MAP of the piecewise pseudo-likelihood, the model fitted) and
        diagonal covariances from its Laplace (Gauss-Newton) curvature. A departure from the
        gray-box recipe: the likelihood's gradients are used once, at the start; the
        optimisers then use only likelihood values.
    amplitude : {"cv", "elbo"} or float, default="cv"
        The kernel's amplitude ``a`` (the kernel used is ``ConstantKernel(a, fixed) * kernel``;
        for the linear kernel, the prior variance of the weights). ``"cv"``: chosen on the
        training data by 3-fold cross-validation over sequences from ``4^-2 ... 4^4``, each fold's
        model the sparse MAP of the model's own likelihood, decoded by its decoder (see
        ``likelihood``), scored by held-out token error (as a CRF's ``c2``). A documented
        departure from the paper, which fits hyperparameters by the ELBO: on the CRF++ tasks the
        ELBO chooses amplitudes of 0.03-0.2, where held-out error is 1-3 points above its
        minimum (issue #22). The folds are one random partition (``random_state``: same seed,
        same amplitude). Scoring by ``predict``'s decoder (marginals averaged over samples of the
        fold's Laplace start, with ``K~``) or averaging three partitions did not pick amplitudes
        with lower test error on the CRF++ tasks (``benchmarks/studies/bench_gp_struct_amplitude_cv.py``).
        ``"elbo"``: the paper's rule (the default kernel gets a learnable ``ConstantKernel``;
        L-BFGS's hyperparameter block fits it). A float: that amplitude.
    covariance : {"diagonal", "full"}, default="diagonal"
    n_samples : int or "auto", default="auto"
        Monte-Carlo samples per sequence and component in each ELBO estimate. ``"auto"``: 1,000
        for ``optimizer="lbfgs"`` (a fixed sample set per L-BFGS run; on the CRF++ tasks 1,000
        samples reach a higher ELBO and lower test error than 100 on every split, at 3-4x the
        CPU, ``benchmarks/studies/bench_gp_struct_samples.py``; the paper: 10,000), 100 for
        ``optimizer="saga"`` (a fresh set at each of thousands of steps; the paper: 4,000).
        The value used is ``n_samples_``.
    max_iter : int, default=50
        Global iterations at most (each runs every block once); a fit that reaches it before its
        stopping rule (``tol``) warns with a ``ConvergenceWarning``.
    block_iters : tuple of 3 int, default=None
        Iterations per block (unary, pairwise, hyperparameters) in one global iteration:
        L-BFGS iterations for ``"lbfgs"`` (default ``(10, 5, 2)``; the paper's ``(50, 10, 5)``
        takes more time per global iteration for the same stop), SAGA steps for
        ``"saga"`` (default ``(3000, 1000, 0)``: hyperparameters stay fixed, as in the paper).
    batch_size : int, default=1
        Sequences per SAGA step.
    learning_rate : float, default=1e-4
        SAGA step size of the means (unary and pairwise). Each coordinate's step is
        clipped to 0.5; a global iteration that lowers the ELBO (estimated with one seed for the
        whole fit: common random numbers) is undone and both step sizes are halved. Steps of row
        ``a`` of the pairwise table are divided by ``1 + n_a / 4`` (``n_a`` transitions out of
        label ``a`` in the training data, a bound on that row's curvature), so one step size
        suits both blocks.
    learning_rate_cov : float, default=1e-5
        SAGA step size of the covariance parameters.
    control_variate : bool, default=True
        Use the control variate in the gradient estimates.
    tol : float, default=2e-3
        L-BFGS stops when a global iteration raises the ELBO by less than ``tol`` (relative),
        or the variational means of the unaries change by less than 1e-3 on average. The
        ELBO watched is the Monte-Carlo estimate with one seed for the whole fit (common random
        numbers), so the change is the parameters' effect, not fresh sampling noise. SAGA stops
        when a kept global iteration raises that ELBO by less than ``tol`` (relative), or
        its step sizes have been halved below 1e-3 of their start. ``tol=0``: no stopping
        rule, exactly ``max_iter`` global iterations and no warning.
    n_predict_samples : int, default=100
        Posterior samples averaged in :meth:`predict_marginals`.
    decode : {"marginal", "viterbi_mean"}, default="marginal"
        :meth:`predict` takes the argmax of the averaged marginals, or Viterbi on the
        posterior mean functions (for ``likelihood="piecewise"`` without transitions: the argmax of
        each token's posterior mean unaries, the same decoder as the marginals).
    warm_start : bool, default=False
        Continue from the previous fit's parameters.
    random_state : int, RandomState instance or None, default=None
    n_jobs : int, default=None
        joblib jobs for the per-sequence sampling and gradient work; under joblib's dask backend the
        number of blocks of sequences kept on the workers for the whole fit (None: one per worker thread).
    callback : callable or None, default=None
        Called after every global iteration as ``callback(iteration, elbo, seconds)`` (the
        entries of ``elbo_curve_`` and ``elbo_times_``); returning True stops the fit there.
    verbose : int, default=0
        Print one line per global iteration: ELBO estimate and elapsed seconds.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    inducing_inputs_ : ndarray or csr_matrix of shape (M, n_features)
        The inducing inputs Z (M at most ``n_inducing``; dense for ``inducing="svd"``).
    kernel_ : Kernel or list of Kernel
        The kernel (or the per-label kernels) with the fitted hyperparameters.
    n_iter_ : int
        Global iterations run.
    stop_reason_ : str
        Why the fit stopped: ``"elbo"``, ``"means"`` (``optimizer="lbfgs"``) or ``"step"``
        (``optimizer="saga"``) when converged, ``"max_iter"`` or ``"callback"``.
    n_samples_ : int
        Monte-Carlo samples per sequence used by the fit (``n_samples`` with ``"auto"`` resolved).
    amplitude_ : float or None
        The kernel amplitude used (None with ``amplitude="elbo"``: it is in ``kernel_``).
    amplitude_scores_ : ndarray of shape (7, 2) or None
        ``amplitude="cv"``: mean held-out token error and log-loss of each amplitude of the grid.
    elbo_curve_ : ndarray of shape (``n_iter_ + 1``,)
        ELBO estimate at the start and after each global iteration (with one seed for the whole
        fit, so the curve shows the parameters' effect; SAGA repeats the value of an undone
        iteration, so its curve never falls).
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
    >>> gp = GPStructClassifier(n_inducing=10, random_state=0).fit(X, y)
    >>> gp.stop_reason_, gp.amplitude_
    ('elbo', 1.0)
    >>> gp.predict(X[:1])[0].shape == y[0].shape
    True
    """

    _parameter_constraints: dict = {
        "kernel": [None, Kernel, list, tuple],
        "likelihood": [StrOptions(set(LIKELIHOODS))],
        "optimizer": [StrOptions({"saga", "lbfgs"})],
        "n_inducing": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "inducing": [StrOptions({"auto", "svd", "kmeans"})],
        "init": [StrOptions({"prior", "map"})],
        "amplitude": [StrOptions({"elbo", "cv"}), Interval(numbers.Real, 0, None, closed="neither")],
        "covariance": [StrOptions({"full", "diagonal"})],
        "n_samples": [StrOptions({"auto"}), Interval(numbers.Integral, 2, None, closed="left")],
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

    def __init__(self, kernel=None, *, likelihood="chain", optimizer="lbfgs", n_inducing=500, inducing="auto",
                 n_components=1, init="map", amplitude="cv", covariance="diagonal", n_samples="auto", max_iter=50, block_iters=None,
                 batch_size=1, learning_rate=1e-4, learning_rate_cov=1e-5, control_variate=True, tol=2e-3,
                 n_predict_samples=100, decode="marginal", warm_start=False, random_state=None, n_jobs=None,
                 callback=None, verbose=0):
        store_init_params(self, locals())

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Fit the variational posterior (and, with L-BFGS, the kernel hyperparameters).

        The fitted attributes are set only once the fit has finished: a fit interrupted (an
        exception, e.g. KeyboardInterrupt, raised from ``callback``) leaves a previously fitted
        model as it was.

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
        likelihood = LIKELIHOODS[self.likelihood]
        encoder = LabelEncoder().fit(np.concatenate(y))
        warm = self.warm_start and hasattr(self, "params_")
        if warm and (X[0].shape[1] != self.n_features_in_ or not np.array_equal(encoder.classes_, self.classes_)):
            raise ValueError("warm_start=True needs the same features and labels as the previous fit.")
        Xp, offsets = pack_sequences(X)
        check_feature_scale(Xp, offsets)
        rng = check_random_state(self.random_state)
        y_all = np.concatenate(encode_sequence_labels(encoder, y)).astype(np.int64)
        start = time.perf_counter()
        if warm:
            kernel, Z, amplitude, scores = self.kernel_, self.inducing_inputs_, self.amplitude_, self.amplitude_scores_
        else:
            kernel = _fresh_kernels(self.kernel, len(encoder.classes_), learn_amplitude=self.amplitude == "elbo")
            for k in kernel if isinstance(kernel, list) else [kernel]:
                _check_kernel(k, Xp)
            Z = self._inducing_inputs(kernel, Xp, rng)
            kernel, amplitude, scores = self._choose_amplitude(kernel, Z, Xp, offsets, y_all, len(encoder.classes_),
                                                               rng, likelihood)
        Q, M = len(encoder.classes_), Z.shape[0]
        prior = SparsePrior(kernel, Z, Xp, offsets, n_jobs=self.n_jobs)
        if warm:
            p = self.params_.copy()
        else:
            p = VarParams(self.n_components, Q, M, self.covariance == "diagonal", init_scale=0.1)
        n_samples = _AUTO_SAMPLES[self.optimizer] if self.n_samples == "auto" else self.n_samples
        ctx = FitContext(prior, kernel, Z, Xp, offsets, y_all, rng, n_samples, likelihood,
                         self.control_variate, self.n_jobs,
                         Progress(type(self).__name__, self.verbose, self.callback, objective="ELBO", start=start),
                         start)
        if not warm and self.init == "map":
            if self.optimizer == "lbfgs" and blocks[2] and kernel_theta(kernel)[0].size == 1:
                map_start_with_hyper_search(ctx, p)
            else:
                start_from_map(p, prior, y_all, offsets, rng, likelihood)
        elif not warm and self.n_components > 1:  # break the symmetry between components
            p.m += 0.1 * rng.standard_normal(p.m.shape)
        if self.optimizer == "lbfgs":
            res = fit_batch(ctx, p, blocks, self.max_iter, self.tol)
        else:
            step_scale = self.step_scale_ if warm and hasattr(self, "step_scale_") else 1.0
            res = fit_saga(ctx, p, blocks, self.max_iter, self.batch_size, self.learning_rate,
                           self.learning_rate_cov, step_scale, self.tol)
        if res.stop_reason == "max_iter" and self.tol > 0:
            warnings.warn(f"GPStructClassifier did not converge in max_iter={self.max_iter} global iterations "
                          f"(the ELBO still rose by more than tol={self.tol:g} relative); increase max_iter or tol.",
                          ConvergenceWarning)
        self.kernel_, self.inducing_inputs_, self.params_ = res.kernel, Z, res.params
        self.amplitude_, self.amplitude_scores_ = amplitude, scores
        self.classes_, self.n_features_in_ = encoder.classes_, X[0].shape[1]
        self.n_iter_, self.elbo_curve_, self.elbo_times_ = res.n_iter, res.elbo_curve, res.elbo_times
        self.stop_reason_, self.n_samples_ = res.stop_reason, n_samples
        if self.optimizer == "saga":
            self.step_scale_ = res.step_scale
        self._predict_seed = int(rng.randint(np.iinfo(np.int32).max))
        return self

    def _inducing_inputs(self, kernel, Xp, rng):
        """``Z`` by the ``inducing`` option: the SVD basis for a linear kernel, else k-means centres."""
        sigma_0 = linear_sigma_0(kernel)
        if self.inducing == "svd" and sigma_0 is None:
            raise ValueError(f"inducing='svd' needs a linear kernel (DotProduct, optionally times ConstantKernel, "
                             f"one sigma_0 for every label), got {kernel!r}; use inducing='kmeans' or 'auto'.")
        if self.inducing == "kmeans" or sigma_0 is None:
            return init_inducing(Xp, self.n_inducing, rng)
        return svd_inducing(Xp, self.n_inducing, sigma_0, rng)

    def _choose_amplitude(self, kernel, Z, Xp, offsets, y, Q, rng, likelihood):
        """The kernel scaled by the ``amplitude`` option: ``(kernel, amplitude, cv scores)``."""
        if self.amplitude == "elbo":
            return kernel, None, None
        if self.amplitude != "cv":
            return scaled_kernel(kernel, float(self.amplitude)), float(self.amplitude), None
        prior1 = SparsePrior(kernel, Z, Xp, offsets, n_jobs=self.n_jobs)
        amplitude, scores = cv_amplitude(prior1, y, offsets, Q, rng, likelihood=likelihood)
        return scaled_kernel(kernel, amplitude), amplitude, scores

    def _blocks(self):
        blocks = _DEFAULT_BLOCKS[self.optimizer] if self.block_iters is None else tuple(self.block_iters)
        if len(blocks) != 3 or not all(isinstance(b, numbers.Integral) and b >= 0 for b in blocks):
            raise ValueError(f"block_iters must be 3 non-negative ints (unary, pairwise, hyperparameters), got {blocks!r}.")
        return blocks

    # ------------------------------------------------------------------ predict
    def _test_prior(self, X):
        check_is_fitted(self)
        X = check_sequences(X, n_features=self.n_features_in_)
        Xp, offsets = pack_sequences(X)
        check_feature_scale(Xp, offsets)
        return SparsePrior(self.kernel_, self.inducing_inputs_, Xp, offsets, n_jobs=self.n_jobs), offsets

    def predict_marginals(self, X):
        """Posterior-predictive label marginals: forward-backward marginals averaged over q(f) samples
        (``likelihood="piecewise"``: the softmax of each sample's unaries, averaged).

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)

        Returns
        -------
        marginals : list of ndarray of shape (n_tokens_i, n_classes)
        """
        prior, offsets = self._test_prior(X)
        return sample_marginals(prior, self.params_, np.arange(offsets.shape[0] - 1), self.n_predict_samples,
                                self._predict_seed, n_jobs=self.n_jobs, likelihood=LIKELIHOODS[self.likelihood])

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
            labels = LIKELIHOODS[self.likelihood].decode(unary, self.params_.mb, offsets)
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


def _fresh_kernels(kernel, n_classes, learn_amplitude=True):
    """Unfitted copies of the ``kernel`` parameter: one Kernel, or a list of ``n_classes``. The
    default kernel has a learnable amplitude only when ``learn_amplitude``."""
    if kernel is None:
        linear = DotProduct(sigma_0=1.0, sigma_0_bounds="fixed")
        return ConstantKernel(1.0) * linear if learn_amplitude else linear
    if isinstance(kernel, Kernel):
        return clone(kernel)
    if len(kernel) != n_classes or not all(isinstance(k, Kernel) for k in kernel):
        raise ValueError(f"kernel must be a Kernel or a list of {n_classes} Kernels (one per label), got "
                         f"{len(kernel)} items: {kernel!r}.")
    return [clone(k) for k in kernel]


def _check_kernel(kernel, Xp):
    """Evaluate the kernel on two tokens: a ValueError (naming the kernel) if it does not fit the features."""
    sample = Xp[:2]
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            K = gram(kernel, sample)
    except (TypeError, AttributeError) as exc:
        raise ValueError(f"kernel {kernel!r} cannot be evaluated on these features: {exc}") from None
    if K.shape != (sample.shape[0], sample.shape[0]) or not np.all(np.isfinite(K)):
        raise ValueError(f"kernel {kernel!r} gives an invalid Gram matrix (non-finite scores) on these features.")
