"""GPStructClassifier's likelihoods: one small object per likelihood, chosen by name once in ``fit``.

The estimator's ``likelihood`` parameter is a name in :data:`LIKELIHOODS`; ``fit`` (and ``predict``)
look the object up once and every call site asks it, never the name:

- :meth:`Likelihood.sample_loglik`: ``log p(y | f)`` of posterior samples (the Monte-Carlo
  expected log-likelihood of the ELBO and the importance-sampled objective of gp-var-b);
- :meth:`Likelihood.map_objective`: the negative log-likelihood of given scores, its gradients and
  curvatures (the sparse MAP start and the amplitude CV);
- :meth:`Likelihood.node_marginals` and :meth:`Likelihood.sample_marginals`: the model's decoder as
  marginals, of given scores or averaged over posterior samples (``predict_marginals``);
- :meth:`Likelihood.decode`: labels from given scores (``decode="viterbi_mean"``).

The objects hold no state (they pickle as their class; model files and the dask shards carry them
as such). The chain's work is the chain oracle's kernels; the piecewise pseudo-likelihood is closed
form in NumPy. A new likelihood is one subclass and one entry of :data:`LIKELIHOODS`.

Examples
--------
>>> import numpy as np
>>> from sklearn_struct._gp_likelihoods import LIKELIHOODS
>>> unary, table, offsets = np.array([[0.0, 1.0], [2.0, 0.0]]), np.zeros((2, 2)), np.array([0, 2])
>>> [LIKELIHOODS[name].decode(unary, table, offsets).tolist() for name in sorted(LIKELIHOODS)]
[[1, 0], [1, 0]]
"""

import numpy as np
from scipy.special import logsumexp, softmax

from .oracles.chain import forward_backward, viterbi
from .oracles.chain_samples import _loglik_kernel, _marginals_kernel

__all__ = ["LIKELIHOODS", "ChainLikelihood", "Likelihood", "PiecewiseLikelihood", "token_marginals"]


def _lse(a, axis):
    """log-sum-exp along ``axis`` (plain NumPy: scipy's is slow on many small reductions)."""
    m = np.max(a, axis=axis, keepdims=True)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(a - m), axis=axis))


def token_marginals(f, axis=0):
    """Softmax of the unary scores ``f`` over the label ``axis``: the decoder of the piecewise model."""
    return np.exp(f - np.expand_dims(_lse(f, axis), axis))


class Likelihood:
    """What GPStructClassifier asks of its likelihood ``p(y | f, f_bin)`` (the interface; no state).

    Shapes: ``Q`` labels; ``f`` (K, Q, T, S) sampled unaries of one sequence of ``T`` tokens (K
    mixture components, S samples each) and ``fbin`` (K, Q, Q, S) sampled transition tables;
    ``unary`` (N, Q) scores of packed sequences with ``offsets`` (n_sequences + 1,) and ``mb`` (Q, Q)
    a transition table.
    """

    name = None

    def sample_loglik(self, f, fbin, y):
        """``log p(y | f_s, fbin_s)`` of one sequence's labels ``y`` (T,) under every sample: (K, S)."""
        raise NotImplementedError

    def map_objective(self, unary, mb, offsets, onehot, counts):
        """``-sum_n log p(y_n | unary, mb)`` of packed sequences with gradients and curvatures.

        ``onehot`` (N, Q) codes the labels, ``counts`` (Q, Q) their transitions
        (:func:`~sklearn_struct._gp_struct_optim.transition_counts`). Returns ``(value, g_unary (N, Q),
        g_mb (Q, Q), node (N, Q), curv_bin (Q, Q))``: ``node`` the marginals whose ``p (1 - p)`` is
        the unary scores' Gauss-Newton curvature, ``curv_bin`` a diagonal curvature of ``mb``.
        """
        raise NotImplementedError

    def node_marginals(self, unary, mb, offsets):
        """The decoder's node marginals (N, Q) for scores ``unary`` and table ``mb``."""
        raise NotImplementedError

    def sample_marginals(self, f, fbin):
        """The decoder's node marginals (T, Q) of one sequence, averaged over its samples."""
        raise NotImplementedError

    def decode(self, unary, mb, offsets):
        """The decoder's labels (N,) for scores ``unary`` and table ``mb``."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


class ChainLikelihood(Likelihood):
    """The linear-chain CRF ``p(y | f) = exp(sum_t f_t(y_t) + sum_t fbin(y_t, y_t+1)) / Z``, by the chain oracle.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct._gp_likelihoods import ChainLikelihood
    >>> f, fbin = np.zeros((1, 2, 3, 1)), np.zeros((1, 2, 2, 1))  # uniform scores: 2^3 label sequences
    >>> float(np.round(ChainLikelihood().sample_loglik(f, fbin, np.array([0, 1, 1]))[0, 0] + 3 * np.log(2), 12))
    0.0
    """

    name = "chain"

    def sample_loglik(self, f, fbin, y):
        out = np.empty((f.shape[0], f.shape[3]))
        for k in range(f.shape[0]):
            _loglik_kernel(f[k], fbin[k], y, out[k])
        return out

    def map_objective(self, unary, mb, offsets, onehot, counts):
        log_z, node, edge = forward_backward(unary, mb, offsets)
        value = float(log_z.sum() - np.sum(unary * onehot) - np.sum(mb * counts))
        return value, node - onehot, edge - counts, node, edge * (1.0 - edge / max(edge.sum(), 1.0))

    def node_marginals(self, unary, mb, offsets):
        return forward_backward(unary, mb, offsets, edge_marginals="none")[1]

    def sample_marginals(self, f, fbin):
        K, Q, T = f.shape[:3]
        out, part = np.zeros((T, Q)), np.empty((T, Q))
        for k in range(K):
            _marginals_kernel(f[k], fbin[k], part)
            out += part
        return out / K

    def decode(self, unary, mb, offsets):
        return viterbi(unary, mb, offsets)[0]


class PiecewiseLikelihood(Likelihood):
    """The piecewise pseudo-likelihood (Sutton & McCallum 2007; the paper's gp-var-p), decoded token by token.

    Each token's unary factor is normalised over its label, each transition ``(a, b)`` by its two
    conditionals ``exp(fbin[a, b]) / sum_b' exp(fbin[a, b'])`` and
    ``exp(fbin[a, b]) / sum_a' exp(fbin[a', b])``.

    The decoder (issue #22, ``benchmarks/studies/bench_gp_struct_piecewise.py``) is the softmax of
    the unary scores: the unary pieces are per-token classifiers ``p(y_t | x_t)`` and the edge piece
    does not depend on ``x`` (the label-bigram distribution, see
    :func:`~sklearn_struct._gp_struct_model.pmi_transitions`). Decoding by the chain with the
    trained table counts the label frequencies twice; re-assembling the chain with the table's
    pointwise mutual information counts them once. Of the three, token by token had the lowest
    held-out error in 3-fold CV inside the training halves of the four CRF++ tasks (papers'
    protocol, the piecewise sparse MAP; all four at amplitude 1, three of four at each decoder's
    CV amplitude): the choice was made on training data only.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct._gp_likelihoods import PiecewiseLikelihood
    >>> f, fbin = np.zeros((1, 2, 3, 1)), np.zeros((1, 2, 2, 1))  # each of 3 tokens, 2 edges: 1/2 per factor
    >>> float(np.round(PiecewiseLikelihood().sample_loglik(f, fbin, np.array([0, 1, 1]))[0, 0] + 7 * np.log(2), 12))
    0.0
    """

    name = "piecewise"

    def sample_loglik(self, f, fbin, y):
        K, Q, T, S = f.shape
        cnt = np.zeros((Q, Q))
        np.add.at(cnt, (y[:-1], y[1:]), 1.0)
        unary = f[:, y, np.arange(T), :].sum(axis=1) - _lse(f, 1).sum(axis=1)  # (K, S)
        pair = np.einsum("kabs,ab->ks", fbin, cnt)
        row = _lse(fbin, 2)  # log sum_b exp f(a, b): (K, Q, S)
        col = _lse(fbin, 1)  # log sum_a exp f(a, b)
        edge = 2.0 * pair - np.einsum("kas,a->ks", row, cnt.sum(1)) - np.einsum("kbs,b->ks", col, cnt.sum(0))
        return unary + edge

    def map_objective(self, unary, mb, offsets, onehot, counts):
        node = softmax(unary, axis=1)
        rows, cols = counts.sum(axis=1), counts.sum(axis=0)  # transitions out of a, into b
        s_row, s_col = softmax(mb, axis=1), softmax(mb, axis=0)
        value = float(logsumexp(unary, axis=1).sum() - np.sum(unary * onehot) - 2.0 * np.sum(mb * counts)
                      + rows @ logsumexp(mb, axis=1) + cols @ logsumexp(mb, axis=0))
        g_mb = rows[:, None] * s_row + cols[None, :] * s_col - 2.0 * counts
        curv_bin = rows[:, None] * s_row * (1.0 - s_row) + cols[None, :] * s_col * (1.0 - s_col)
        return value, node - onehot, g_mb, node, curv_bin

    def node_marginals(self, unary, mb, offsets):
        return token_marginals(unary, axis=1)

    def sample_marginals(self, f, fbin):
        return token_marginals(f, axis=1).mean(axis=(0, 3)).T

    def decode(self, unary, mb, offsets):
        return np.argmax(unary, axis=1)


CHAIN, PIECEWISE = ChainLikelihood(), PiecewiseLikelihood()
LIKELIHOODS = {lik.name: lik for lik in (CHAIN, PIECEWISE)}  # GPStructClassifier's ``likelihood`` options
