"""GPStructClassifier's optimisers: sparse-MAP start, gp-var-b (block L-BFGS) and gp-var-s (block SAGA).

The estimator validates its input, builds the model (:class:`FitContext`) and calls
:func:`fit_batch` or :func:`fit_saga`; they return a :class:`FitResult` that the estimator
stores once the fit has finished.

gp-var-b works on the importance-weighted ELBO of fixed sample sets
(:mod:`sklearn_struct._gp_struct_batch`). Its L-BFGS keeps its curvature pairs
(:class:`Curvature`) across sample redraws and across global iterations: a pair is
formed only from two gradients of one sample set, so every pair is the secant of one
smooth function, and the memory survives the redraws that the effective-sample-size trust
region forces (throwing it away at every redraw left 2-7 iterations per memory, measured
in issue #22). The progress of a global iteration is measured by a *monitor*: the plain
Monte-Carlo ELBO with one seed for the whole fit (common random numbers), so successive
values differ by the parameters' effect, not by fresh noise; the fit stops when a global
iteration gains less than ``tol`` times the monitor's magnitude.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ._gp_likelihoods import CHAIN, Likelihood
from ._gp_struct_batch import FixedSamples, trusted_elbo
from ._gp_struct_elbo import elbo, mc_estimate
from ._gp_struct_model import SparsePrior, pair_kl, token_rows, unary_data_grad, unary_kl
from .utils.optimize import lbfgs

ESS_RESAMPLE, ESS_FLOOR = 0.5, 0.25  # gp-var-b: effective sample size fractions (new draw / infeasible step)
GROWTH = 2.0  # gp-var-b: first trial step at most GROWTH x the last accepted fraction of the quasi-Newton step


@dataclass
class FitContext:
    """What an optimiser needs: the model (prior, labels, settings) and the fit's random state."""

    prior: SparsePrior
    kernel: object
    Z: object
    Xp: object
    offsets: np.ndarray
    y: np.ndarray
    rng: np.random.RandomState
    n_samples: int
    likelihood: Likelihood
    control_variate: bool
    n_jobs: object
    progress: object
    start: float
    curve: list = field(default_factory=list)
    times: list = field(default_factory=list)

    @property
    def n_seq(self):
        return self.offsets.shape[0] - 1

    def seed(self):
        return int(self.rng.randint(2**31 - 1))

    def record(self, value):
        """Append to the ELBO curve and report; True when the callback asks to stop."""
        if not self.curve and not np.isfinite(value):
            raise ValueError("non-finite scores: the ELBO at the start of the fit is not finite (feature values "
                             "too large, or a kernel that overflows on them).")
        self.curve.append(float(value))
        self.times.append(time.perf_counter() - self.start)
        return self.progress(len(self.curve) - 1, value, self.times[-1])

    def elbo(self, p, seed, grad=False):
        return elbo(self.prior, p, np.arange(self.n_seq), self.y, self.n_samples, seed, self.likelihood, grad=grad,
                    control_variate=self.control_variate, n_jobs=self.n_jobs)

    def fixed_samples(self, p):
        return FixedSamples(self.prior, p, np.arange(self.n_seq), self.y, self.n_samples, self.seed(),
                            self.likelihood, n_jobs=self.n_jobs)


@dataclass
class FitResult:
    params: object
    kernel: object
    n_iter: int
    elbo_curve: np.ndarray
    elbo_times: np.ndarray
    stop_reason: str
    step_scale: float = 1.0


def _result(ctx, params, n_iter, reason, step_scale=1.0):
    return FitResult(params, ctx.kernel, n_iter, np.asarray(ctx.curve), np.asarray(ctx.times), reason, step_scale)


# ----------------------------------------------------------------------------- sparse MAP start
def sparse_map(prior, y, offsets, Q, max_iter=200, likelihood=CHAIN):
    """MAP of the whitened inducing values and the transition table under their ``N(0, I)`` priors.

    Minimises ``-sum_n log p(y_n | B v, m_bin) + |v|^2 / 2 + |m_bin|^2 / 2`` by L-BFGS with the
    exact gradients of the ``map_objective`` of ``likelihood`` (a
    :class:`~sklearn_struct._gp_likelihoods.Likelihood`: forward-backward for the chain, closed form
    for the piecewise pseudo-likelihood): a CRF on the whitened inducing features (or its piecewise
    pseudo-likelihood).
    Returns the means ``v`` (Q, M), ``m_bin`` (Q, Q), Laplace variances (inverse of the Gauss-Newton
    Hessian's diagonal): ``var_v`` (Q, M), ``var_bin`` (Q, Q), and the curvature ``p (1 - p)`` of every
    token's unary score (N, Q) at the MAP.
    """
    G, N, M = prior.B.shape
    onehot = np.zeros((N, Q))
    onehot[np.arange(N), y] = 1.0
    counts = transition_counts(y, offsets, Q)
    nll = likelihood.map_objective

    def back(R):  # d(scores)/d(v)^T R for R (N, Q)
        return (prior.B[0].T @ R).T if G == 1 else np.einsum("qnm,nq->qm", prior.B, R)

    def fun(x):
        v, mb = x[:Q * M].reshape(Q, M), x[Q * M:].reshape(Q, Q)
        value, g_unary, g_mb = nll(prior.unary_mean(v), mb, offsets, onehot, counts)[:3]
        return value + 0.5 * float(x @ x), np.concatenate([back(g_unary).ravel(), g_mb.ravel()]) + x

    res = lbfgs(fun, np.zeros(Q * M + Q * Q), max_iter=max_iter, tol=1e-7)
    v, mb = res.x[:Q * M].reshape(Q, M), res.x[Q * M:].reshape(Q, Q)
    _, _, _, node, curv_bin = nll(prior.unary_mean(v), mb, offsets, onehot, counts)
    curv = node * (1.0 - node)  # Gauss-Newton diagonal of each unary score
    B2 = prior.B**2
    h_v = (B2[0].T @ curv).T if G == 1 else np.einsum("qnm,nq->qm", B2, curv)
    return v, mb, 1.0 / (1.0 + h_v), 1.0 / (1.0 + curv_bin), curv


def transition_counts(y, offsets, Q):
    """``counts[a, b]``: how often label ``b`` follows label ``a`` inside the sequences (Q, Q)."""
    starts = np.zeros(y.shape[0], dtype=bool)
    starts[offsets[:-1]] = True
    counts = np.zeros((Q, Q))
    np.add.at(counts, (y[np.flatnonzero(~starts) - 1], y[~starts]), 1.0)
    return counts


def _laplace_cholesky(prior, curv, j):
    """Cholesky factor of label ``j``'s Laplace covariance ``(I + B^T diag(curv_j) B)^{-1}`` (Gauss-Newton,
    the labels' coupling through the softmax left out)."""
    B = prior.B[0 if prior.B.shape[0] == 1 else j]
    H = np.eye(B.shape[1]) + B.T @ (curv[:, j, None] * B)
    S = np.linalg.inv(H)
    return np.linalg.cholesky(0.5 * (S + S.T) + 1e-10 * np.eye(B.shape[1]))


def start_from_map(p, prior, y, offsets, rng, likelihood=CHAIN):
    """Set the variational parameters to the sparse MAP means and Laplace covariances (their
    diagonal with ``covariance="diagonal"``, the full per-label Gauss-Newton inverse otherwise),
    the MAP under the model's own likelihood (chain or piecewise)."""
    v, mb, var_v, var_bin, curv = sparse_map(prior, y, offsets, p.Q, likelihood=likelihood)
    set_laplace_diagonal(p, v, mb, var_v, var_bin)
    if p.K > 1:  # break the symmetry between components
        p.m += np.sqrt(var_v)[None] * rng.standard_normal(p.m.shape)
    if not p.diagonal:
        low = np.tril_indices(p.M, -1)
        for j in range(p.Q):
            L = _laplace_cholesky(prior, curv, j)
            p.logd[:, j] = np.log(np.diag(L))[None]
            p.Loff[:, j][:, low[0], low[1]] = L[low][None]


def set_laplace_diagonal(p, v, mb, var_v, var_bin):
    """Every component of ``p`` at the sparse MAP means ``v``, ``mb`` with the diagonal Laplace
    variances ``var_v``, ``var_bin`` (the outputs of :func:`sparse_map`)."""
    p.m[:] = v[None]
    p.logd[:] = 0.5 * np.log(var_v)[None]
    p.Loff[:] = 0.0
    p.mb[:] = mb
    p.log_sb[:] = 0.5 * np.log(var_bin)


def map_start_with_hyper_search(ctx, p, grid=(-2.0, -1.0, 0.0, 1.0, 2.0), step=np.log(4.0)):
    """init="map" with one kernel hyperparameter (the default kernel's amplitude): the sparse MAP +
    Laplace start at each log-hyperparameter ``theta0 + step * grid`` (then halved steps around the
    best), keeping the one whose Monte-Carlo ELBO (common random numbers) is highest; ``ctx.kernel``
    and ``ctx.prior`` are set to it. The ELBO's dependence on the amplitude is mostly this
    start's (the trust region moves the amplitude by a few percent per global iteration)."""
    theta0, bounds = kernel_theta(ctx.kernel)
    seed = ctx.seed()
    tried = {}

    def evaluate(theta):
        theta = np.clip(theta, bounds[:, 0], bounds[:, 1])
        key = round(float(theta[0]), 6)
        if key not in tried:
            kernel = with_theta(ctx.kernel, theta)
            prior = SparsePrior(kernel, ctx.Z, ctx.Xp, ctx.offsets, n_jobs=ctx.n_jobs)
            q = p.copy()
            start_from_map(q, prior, ctx.y, ctx.offsets, np.random.RandomState(seed), ctx.likelihood)
            with np.errstate(all="ignore"):
                value = elbo(prior, q, np.arange(ctx.n_seq), ctx.y, ctx.n_samples, seed, ctx.likelihood, grad=False,
                             n_jobs=ctx.n_jobs)[0]
            tried[key] = (value if np.isfinite(value) else -np.inf, kernel, prior, q)
        return key

    best = max((evaluate(theta0 + step * g) for g in grid), key=lambda k: tried[k][0])
    for g in (-0.5, 0.5):
        evaluate(np.array([best + step * g]))
    best = max(tried, key=lambda k: tried[k][0])
    _, ctx.kernel, ctx.prior, q = tried[best]
    p.__dict__.update(q.__dict__)


# ----------------------------------------------------------------------------- gp-var-b
class Curvature:
    """L-BFGS memory (``memory`` secant pairs) for *maximising*; kept across sample redraws."""

    def __init__(self, memory=10):
        self.memory, self.s, self.y = memory, [], []
        self.step = 1.0  # the last accepted step length (fraction of the quasi-Newton step)

    def direction(self, g):
        """Ascent direction ``H g`` by the two-loop recursion (``g`` itself with an empty memory)."""
        q = g.copy()
        alphas = []
        for s, y in zip(reversed(self.s), reversed(self.y)):
            a = (s @ q) / (s @ y)
            alphas.append(a)
            q -= a * y
        if self.s:
            q *= (self.s[-1] @ self.y[-1]) / (self.y[-1] @ self.y[-1])
        for (s, y), a in zip(zip(self.s, self.y), reversed(alphas)):
            q += (a - (y @ q) / (s @ y)) * s
        return q

    def update(self, s, y):
        """Store the pair ``s = x1 - x0``, ``y = g0 - g1`` (gradients of the same function) when ``s.y > 0``."""
        if s @ y > 1e-10 * np.linalg.norm(s) * np.linalg.norm(y):
            self.s.append(s)
            self.y.append(y)
            del self.s[:-self.memory], self.y[:-self.memory]


def lbfgs_block(ctx, p, which, n_iter, curvature, max_backtrack=12, resample=ESS_RESAMPLE, trace=None):
    """``n_iter`` accepted L-BFGS steps on one parameter block (``"unary"`` or ``"pair"``) of the
    importance-weighted ELBO. Backtracking (Armijo) line search from the quasi-Newton step; a
    trial whose effective sample size falls below ``ESS_FLOOR`` or that overflows is rejected
    like a worse one (a trust region); a new sample set is drawn once the accepted point's
    effective sample size falls below ``resample``. The value of every accepted point (on its
    sample set, starting with the first) is appended to ``trace`` (a list) when given. Returns the number of rejected trials."""
    get, put = (p.get_unary, p.set_unary) if which == "unary" else (p.get_pair, p.set_pair)
    grad_mode = True if which == "unary" else "pair"

    def evaluate(fixed, x):
        put(x)
        v, gu, gp, ess = trusted_elbo(ctx.prior, p, fixed, grad_mode, ESS_FLOOR)
        return v, (gu if which == "unary" else gp), ess

    x = get()
    fixed = ctx.fixed_samples(p)
    value, g, ess = evaluate(fixed, x)
    if trace is not None:
        trace.append(value)
    rejected = 0
    for _ in range(n_iter):
        d = curvature.direction(g)
        slope = g @ d
        if not slope > 0:
            curvature.s, curvature.y = [], []
            d, slope = g, g @ g
        # the first trial: the quasi-Newton step, but at most twice the last accepted fraction of it
        # (the trust region usually binds before the unit step; starting there rejected most trials)
        t = min(1.0, GROWTH * curvature.step) if curvature.s else min(1.0, 0.1 / max(np.max(np.abs(g)), 1e-12))
        for _ in range(max_backtrack):
            v_new, g_new, ess_new = evaluate(fixed, x + t * d)
            if np.isfinite(v_new) and v_new >= value + 1e-4 * t * slope:
                break
            rejected += 1
            t *= 0.5 if np.isfinite(v_new) else 0.25
        else:
            put(x)
            break
        curvature.update(t * d, g - g_new)
        curvature.step = t
        x, value, g, ess = x + t * d, v_new, g_new, ess_new
        if trace is not None:
            trace.append(value)
        if ess < resample:
            fixed = ctx.fixed_samples(p)
            value, g, ess = evaluate(fixed, x)
    put(x)
    return rejected


def hyper_block(ctx, p, n_iter):
    """L-BFGS on the log-hyperparameters (of every label's kernel): the importance-weighted ELBO
    of one sample set, the gradient by central differences (the prior enters the weights)."""
    fixed = ctx.fixed_samples(p)
    kernels0 = ctx.kernel

    def value(theta):
        try:
            with np.errstate(all="ignore"):
                prior = SparsePrior(with_theta(kernels0, theta), ctx.Z, ctx.Xp, ctx.offsets, n_jobs=ctx.n_jobs)
        except ValueError:
            return np.inf
        return -trusted_elbo(prior, p, fixed, False, ESS_FLOOR)[0]

    def fun(theta):
        f0 = value(theta)
        g = np.empty_like(theta)
        for i in range(theta.size):
            e = np.zeros_like(theta)
            e[i] = 1e-3
            g[i] = (value(theta + e) - value(theta - e)) / 2e-3
        return f0, g

    theta0, bounds = kernel_theta(kernels0)
    res = lbfgs(fun, theta0, max_iter=n_iter, tol=0.0)
    ctx.kernel = with_theta(kernels0, np.clip(res.x, bounds[:, 0], bounds[:, 1]))
    ctx.prior = SparsePrior(ctx.kernel, ctx.Z, ctx.Xp, ctx.offsets, n_jobs=ctx.n_jobs)


def fit_batch(ctx, p, blocks, max_iter, tol):
    """gp-var-b: global iterations of L-BFGS blocks (unary, pairwise, hyperparameters).

    Stops when a global iteration raises the monitor ELBO (one seed for the whole fit) by less
    than ``tol * |ELBO|``, or the variational means change by less than 1e-3 on average (the
    paper's rule), or after ``max_iter`` (``tol=0``: always after ``max_iter``); returns the
    parameters with the best monitor value.
    """
    monitor_seed = ctx.seed()
    with np.errstate(all="ignore"):
        value = ctx.elbo(p, monitor_seed)[0]
    ctx.record(value)
    best, best_p, best_kernel = value, p.copy(), ctx.kernel
    memories = {"unary": Curvature(), "pair": Curvature()}
    n_iter, reason = 0, "max_iter"
    for n_iter in range(1, max_iter + 1):
        old_means = p.m.copy()
        if blocks[0]:
            lbfgs_block(ctx, p, "unary", blocks[0], memories["unary"])
        if blocks[1]:
            lbfgs_block(ctx, p, "pair", blocks[1], memories["pair"])
        if blocks[2] and kernel_theta(ctx.kernel)[0].size:
            hyper_block(ctx, p, blocks[2])
        new = ctx.elbo(p, monitor_seed)[0]
        stop = ctx.record(new)
        if new > best:
            best, best_p, best_kernel = new, p.copy(), ctx.kernel
        change = np.mean(np.abs(p.m - old_means))  # the means: M x M covariance factors would dilute it
        if stop:
            reason = "callback"
        elif tol > 0 and new - value <= tol * max(abs(new), abs(value), 1.0):
            reason = "elbo"
        elif tol > 0 and change < 1e-3:
            reason = "means"
        if reason != "max_iter":
            break
        value = new
    ctx.kernel = best_kernel
    return _result(ctx, best_p, n_iter, reason)


# ----------------------------------------------------------------------------- gp-var-s
def fit_saga(ctx, p, blocks, max_iter, batch_size, learning_rate, learning_rate_cov, step_scale, tol=0.0):
    """SAGA by blocks (gp-var-s / gp-var-p).

    Progress is measured like gp-var-b's: by a *monitor*, the Monte-Carlo ELBO with one seed for
    the whole fit (common random numbers), so two values differ by the parameters' effect and not
    by fresh noise (on chunking, fresh estimates at one point have a standard deviation of 4.2 nats,
    their difference about 6: as large as a converging iteration's gain of 2-8). A global iteration
    runs the blocks' SAGA steps on a copy; if the monitor falls, the iteration is undone and the
    step sizes are halved; otherwise it is kept and a full pass (fresh samples) renews the SAGA
    table. With ``tol > 0`` the fit
    stops (``"elbo"``) when a kept iteration raises the monitor by less than ``tol * |ELBO|``, or
    (``"step"``) when the step sizes have been halved below 1e-3 of their start."""
    monitor_seed = ctx.seed()
    with np.errstate(all="ignore"):
        value = ctx.elbo(p, monitor_seed)[0]
        table = _saga_table(ctx, p, ctx.seed())
    ctx.record(value)
    from_counts = transition_counts(ctx.y, ctx.offsets, p.Q).sum(axis=1)  # transitions out of each label
    state = dict(pair_scale=1.0 / (1.0 + 0.25 * from_counts)[:, None],  # 1 / curvature bound of each row of m_bin
                 step_scale=step_scale, order=ctx.rng.permutation(ctx.n_seq), pos=0, batch_size=batch_size,
                 lr=learning_rate, lr_cov=learning_rate_cov)
    n_iter, reason = 0, "max_iter"
    for n_iter in range(1, max_iter + 1):
        trial = p.copy()
        with np.errstate(all="ignore"):  # an overflowing step gives a non-finite ELBO: undone below
            _saga_epochs(ctx, trial, {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in table.items()},
                         blocks, state)
            new = ctx.elbo(trial, monitor_seed)[0]
        gain = None
        if not np.isfinite(new) or new < value:
            state["step_scale"] *= 0.5  # the iteration made the ELBO worse: undo it, smaller steps
        else:
            gain, p, value = new - value, trial, new
            with np.errstate(all="ignore"):
                table = _saga_table(ctx, p, ctx.seed())
        if ctx.record(value):
            reason = "callback"
            break
        if tol > 0 and gain is not None and gain <= tol * max(abs(value), 1.0):
            reason = "elbo"
            break
        if tol > 0 and state["step_scale"] < 1e-3 * step_scale:
            reason = "step"
            break
    return _result(ctx, p, n_iter, reason, state["step_scale"])


def _saga_epochs(ctx, p, table, blocks, state):
    bs = state["batch_size"]
    for block, n_steps in ((0, blocks[0]), (1, blocks[1])):
        for _ in range(n_steps):
            if state["pos"] + bs > ctx.n_seq:
                state["order"], state["pos"] = ctx.rng.permutation(ctx.n_seq), 0
            batch = np.sort(state["order"][state["pos"]:state["pos"] + bs])
            state["pos"] += bs
            _saga_step(ctx, p, table, batch, block, ctx.seed(), state)


def _saga_table(ctx, p, seed):
    """A full pass: per-sequence gradient parts stored, and their sums."""
    est = mc_estimate(ctx.prior, p, np.arange(ctx.n_seq), ctx.y, ctx.n_samples, seed, ctx.likelihood,
                      control_variate=ctx.control_variate, n_jobs=ctx.n_jobs)
    dm, dL = unary_data_grad(ctx.prior.B, est, p)
    return dict(gb=est["gb"], U=est["U"], g_mb=est["g_mb"], g_lsb=est["g_lsb"], sum_m=dm, sum_L=dL,
                sum_mb=est["g_mb"].sum(0), sum_lsb=est["g_lsb"].sum(0))


def _saga_step(ctx, p, table, batch, block, seed, state):
    est = mc_estimate(ctx.prior, p, batch, ctx.y, ctx.n_samples, seed, ctx.likelihood,
                      control_variate=ctx.control_variate, n_jobs=ctx.n_jobs)
    rows = token_rows(ctx.offsets, batch)
    scale = ctx.n_seq / len(batch)
    d_est = dict(gb=est["gb"] - table["gb"][rows], U=est["U"] - table["U"][rows])
    dm, dL = unary_data_grad(ctx.prior.B[:, rows], d_est, p)
    d_mb = (est["g_mb"] - table["g_mb"][batch]).sum(0)
    d_lsb = (est["g_lsb"] - table["g_lsb"][batch]).sum(0)
    lr, lr_cov = state["lr"] * state["step_scale"], state["lr_cov"] * state["step_scale"]
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
        h = state["pair_scale"]
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


def _clip(step, limit=0.5):
    """Bound each coordinate of a stochastic step (a trust region against heavy-tailed gradient noise)."""
    return np.clip(step, -limit, limit)


# ----------------------------------------------------------------------------- kernel hyperparameters
def kernel_theta(kernels):
    """Log-hyperparameters and their bounds, concatenated over the kernel list."""
    kernels = kernels if isinstance(kernels, list) else [kernels]
    theta = np.concatenate([k.theta for k in kernels])
    bounds = np.vstack([k.bounds for k in kernels if k.n_dims] or [np.zeros((0, 2))])
    return theta, bounds


def with_theta(kernels, theta):
    """``kernels`` (one or a list) with the concatenated log-hyperparameters ``theta``."""
    if not isinstance(kernels, list):
        return kernels.clone_with_theta(theta)
    out, start = [], 0
    for k in kernels:
        out.append(k.clone_with_theta(theta[start:start + k.n_dims]))
        start += k.n_dims
    return out
