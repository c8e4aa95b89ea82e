"""NonLocalCRF: a linear-chain CRF plus learned non-local energies, inferred by Bethe projections.

With ``energy=None`` this is a standard linear-chain CRF trained by L2-regularised
conditional maximum likelihood with L-BFGS (the same objective as CRFsuite). With an
energy (:mod:`sklearn_struct.energies`), inference solves the non-local problem (eq. 2 of
Vilnis et al. 2015) by Bethe projections (:mod:`sklearn_struct._bethe_inference`) and the
energy weights ``psi`` are learned by the doubly-stochastic Algorithm 3.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._bethe_inference import bethe_inference
from ._bethe_tree import bethe_inference_tree
from ._chain_crf import ChainTagsMixin, predict_unary, start_chain_fit, token_score
from ._chain_crf_constrained import (check_feasible, fixed_masks, log_proba_of_chain, masked_potentials, onehot_masks,
                                     structure_from, topk_of_chain)
from ._chain_crf_fit import fit_chain_algorithm
from ._chain_crf_weights import sequence_weights
from .chain_crf import ChainCRF
from ._psi_gate import fit_gate, satisfaction_probability
from ._psi_learning import bind, fit_energy, in_sample_thetas, learn_psi, psi_thetas, psi_values
from .oracles.chain import forward_backward, viterbi
from .utils._params import atomic_fit, shared_constraints, store_init_params
from .utils.packing import unpack_sequences
from .utils.progress import Progress
from .utils.validation import check_sequences

__all__ = ["NonLocalCRF"]

_PSI_ATTRIBUTES = ("energy_", "psi_", "psi_coef_", "psi_featurizer_", "n_psi_features_in_", "inference_n_iter_",
                   "psi_history_", "gate_seed_")


class NonLocalCRF(ChainTagsMixin, BaseEstimator):
    """Linear-chain CRF with optional learned non-local energies (Bethe projections).

    The base model is a linear-chain conditional random field: unary scores ``X @ W + b``
    per token and a shared transition table ``A``, trained by minimising
    ``sum_i -log P(y_i | x_i) + c2 * (||W||^2 + ||A||^2)`` with L-BFGS (exact gradient by
    forward-backward in :mod:`sklearn_struct.oracles.chain`, parallel over sequences).

    With a non-local ``energy`` ``L_psi`` the marginals of a sequence are

        mu* = argmin_{mu in M} -H_B(mu) - <theta, mu> + L_psi(mu)          (eq. 2)

    found by Bethe-RDA (Algorithm 1), Bethe-MD (Algorithm 4, sign corrected) or
    accelerated Bethe-RDA (Algorithm 5); :meth:`predict` runs Viterbi in the MRF given by
    the final dual potentials ``theta_t`` (Prop. 1), :meth:`predict_marginals` returns
    ``mu``. ``fit`` first learns ``theta`` (the base CRF above), then the energy weights
    ``psi`` (and, with ``learn_theta=True``, ``theta`` too) by Algorithm 3: for a random
    mini-batch of sequences, infer ``mu_i``, form ``rho_i = theta - grad L_psi(mu_i)``
    (eq. 11) and take one gradient-ascent step on the surrogate likelihood
    ``sum_i log Q(y_i; rho_i)`` (eq. 12) with ``mu_i`` held fixed. The psi-gradient has the
    corrected sign ``d log Q / d psi_k = -<grad ell_k(mu_i), S(y_i) - m_i>`` with
    ``m_i = ORACLE(rho_i)``.

    **How psi depends on the input.** Without psi features every sequence uses the same
    weights ``psi_`` (one per energy term, kept ``>= 0`` by projection). With per-sequence
    features ``phi(x)`` -- from ``psi_featurizer`` (a transformer mapping a list of
    sequences to an ``(n_sequences, n_psi_features)`` array, e.g.
    :class:`~sklearn_struct.energies.RandomFourierMeanMap` for the paper's "MM" features)
    or passed directly as ``psi_features=`` to ``fit`` / ``predict`` (which overrides the
    featurizer) -- the weights are ``psi(x) = max(0, phi(x) @ psi_coef_ + psi_)``, linear in
    the features and clipped at zero (the paper ignores terms with negative weight).

    Parameters
    ----------
    energy : Energy, list of constraint templates or None, default=None
        Non-local energy (:mod:`sklearn_struct.energies`), or a list of soft-constraint
        templates by label name (:mod:`sklearn_struct.constraints`, e.g.
        ``[AtMostSegments("title"), FirstLabel("author")]``, made into a
        :class:`~sklearn_struct.constraints.ConstraintEnergy` with one learned weight per
        term); cloned and fitted on the training labels (and ``classes_``) in ``fit``.
        None for a plain CRF.
    c2 : float, default=1.0
        L2 regularisation strength, as in CRFsuite (``c2 * ||theta||^2``).
    all_possible_states : bool, default=False
        With sparse features, create unary weights only for (attribute, label) pairs that
        occur in the training data (CRFsuite's default, far fewer parameters) when False,
        or for every pair when True. Dense features always use every pair.
    max_iter : int or None, default=None
        Maximum number of L-BFGS iterations for the base CRF; None: no cap, CRFsuite's
        stopping rules decide (as :class:`~sklearn_struct.ChainCRF`).
    tol : float, default=1e-5
        CRFsuite's ``delta``: stop L-BFGS when the objective decreased by less than this
        fraction over the last 10 iterations (CRFsuite's ``period``), or when
        ``||g|| / max(1, ||theta||) < 1e-5`` (its ``epsilon``). The base CRF is trained by the
        same code as ``ChainCRF(algorithm="lbfgs")`` with its defaults.
    inference : {"rda", "md", "accelerated"}, default="rda"
        Non-local inference algorithm (Algorithms 1, 4, 5).
    inference_max_iter : int, default=40
        Cap on inference iterations (oracle calls) per sequence.
    inference_tol : float, default=1e-4
        A sequence's inference stops when no node marginal changes by more than this.
    beta : float or "auto", default=0.0
        Bethe-RDA's ``beta_t`` (eq. 10, centred on the base marginals as Algorithm 1's
        printed step): 0, the paper's choice, needs no step size; ``beta > 0`` damps the
        steps, ``theta_t = theta - g_sum_t / (t + beta)``; ``"auto"`` keeps 0 until a step's
        energy gradient explodes (e.g. a Poisson count where the base model expects almost
        nothing), then redoes that sequence's step with beta 1, 2, 4, ...
    eta : None, float or callable, default=None
        Bethe-MD step sizes (None: ``1 / (lambda t)`` of Prop. 6).
    lipschitz : None or float, default=None
        ``Lip`` of the accelerated method. None: the energy's l2 Lipschitz constant divided
        by the Bethe entropy's strong-convexity modulus (Prop. 3), the constant under
        which accelerated RDA's O(1/t^2) bound holds (slow early steps on long sequences);
        a number is used as given (see :func:`~sklearn_struct._bethe_inference.bethe_inference`).
    average : bool, default=False
        Use the primal average of the inference iterates instead of the last one.
    psi_init : float, default=1.0
        Initial value of every energy weight.
    psi_holdout : "auto", None, float in (0, 1) or int >= 2, default="auto"
        Which base-model marginals Algorithm 3 learns ``psi`` from. The base CRF fits its
        own training sequences almost perfectly, so in-sample marginals are nearly the gold
        labels and the psi-gradient nearly vanishes: ``psi`` stays at ``psi_init``. The
        paper learns the energy weights on held-out data instead.

        - "auto": 3-fold cross-fitting (as ``3``) when ``learn_theta=False``; None when
          ``learn_theta=True``. Chosen for robustness: on citation extraction
          (``benchmarks/papers/bench_citations.py``) the two learn different ``psi`` (held out
          raises the "at most one segment" weights, in-sample drives the "at least one"
          weights to about 0; with the earlier capped base CRFs in-sample moved ``psi`` less
          than held out) with equal test F1 (on OCR fold 0 the two also tie, 95.47 vs 95.54);
          where the base CRF memorises its training set, in-sample learning does not move
          ``psi`` and a poor ``psi_init`` would stay poor. Cost: 3 more base-CRF fits, each on
          two thirds of the data.
        - None: in-sample, on every training sequence under the full-data base CRF.
        - float ``f``: a random fraction ``f`` of the training sequences is held out; a
          base CRF fitted on the others gives their marginals for the psi step (Algorithm 3
          runs on the held-out sequences only). Cost: one more base-CRF fit, on ``1 - f``
          of the data.
        - int ``K``: K-fold cross-fitting; K base CRFs, each fitted on K-1 folds, give
          out-of-fold marginals for every training sequence, and Algorithm 3 runs on all
          of them. Cost: K more base-CRF fits, each on ``(K - 1) / K`` of the data.

        In both held-out forms the final base CRF (``coef_``, ``intercept_``,
        ``transition_``) is still fitted on all training sequences, and the learned ``psi``
        is used with it at prediction time. Needs ``learn_theta=False`` (except "auto").
    psi_featurizer : transformer or None, default=None
        Maps a list of sequences to per-sequence psi features (cloned and fitted in ``fit``).
    psi_gate : None or "probability", default=None
        ``"probability"``: term ``k`` acts on sequence ``i`` with weight ``psi_k * p_ik``, where
        ``p_ik`` is the share of ``n_gate_samples`` exact samples of the base CRF on ``x_i``
        that satisfy it (no violation), so a rule the base model finds implausible for this
        input is switched off and one that many likely labellings keep is enforced
        (:mod:`sklearn_struct._psi_gate`). Needs a constraint energy (templates or a
        :class:`~sklearn_struct.constraints.ConstraintEnergy`); Algorithm 3 learns ``psi``
        through the gate, each training sequence's gate taken under the base CRF that gives
        its marginals (``psi_holdout``). Not with ``psi_gradient="perceptron"`` or
        :meth:`infer_tree`. Measured on UMass citations (``benchmarks/results/umass_table1/umass_table1.md``,
        "The sampled gate"): with Anzaroot et al.'s candidate family it raises the dev gain
        over the base CRF from +0.31 to +0.58 F1, but not the test gain (+0.22 against +0.24
        without it), and it costs 0.23 F1 on the held-back GROBID citations; it helps where a
        rule is right for some inputs and wrong for others that the base model recognises
        (``tests/test_psi_gate.py``).
    n_gate_samples : int, default=100
        Samples per sequence for ``psi_gate``.
    n_epochs : int, default=5
        Passes of Algorithm 3 over the training set.
    batch_size : int, default=16
        Sequences per stochastic step (Algorithm 3 samples one; a mini-batch runs one
        batched inference for all of them and averages their gradients).
    learning_rate : float, default=0.1
        Step size of the gradient ascent on ``psi`` (and ``theta``).
    learning_rate_schedule : {"constant", "invscaling"}, default="invscaling"
        ``"invscaling"``: ``learning_rate / sqrt(1 + k)`` at step ``k``.
    psi_l1 : float, default=0.0
        Sparsity penalty on the energy weights: Algorithm 3 ascends the surrogate
        log-likelihood minus ``psi_l1 * sum_k psi_k`` (per sequence), each step a proximal
        step ``psi <- max(0, psi + lr * (g - psi_l1))``, so a weight whose gradient stays
        below ``psi_l1`` ends at exactly zero: with many candidate constraints
        (:class:`~sklearn_struct.constraint_learning.ConstraintFamily`) the useless ones drop
        out (Anzaroot et al. 2014); see
        :func:`~sklearn_struct.constraint_learning.kept_constraints`.
    learn_theta : bool, default=False
        Also update the base CRF parameters during Algorithm 3 (gradient ``S(y) - m``,
        plus the L2 penalty spread over the examples).
    theta_learning_rate : None or float, default=None
        Step size of the theta updates with ``learn_theta=True`` (same schedule as
        ``learning_rate``); None: ``learning_rate``. The paper's Algorithm 3 takes a
        "Gradient-Step" on theta and on psi without saying they share a size; psi steps
        that suit constraint weights (e.g. 30) would wreck a fitted CRF's theta.
    allowed_transitions : str, ndarray of shape (n_classes, n_classes), tuple or None, default=None
        Label bigrams that may occur, as in :class:`~sklearn_struct.ChainCRF`: a boolean mask
        ``[from, to]`` over ``classes_``, a chunk scheme derived from the label names (``"BIO"`` /
        ``"IOB2"``, ``"BIOES"`` / ``"IOBES"``, ``"BILOU"``), or a tuple ``(transitions, start, end)``
        of boolean arrays. The base CRF is trained with the forbidden transitions out of its
        partition function (``transition_`` keeps 0 there), and every inference (the psi step of
        ``fit``, :meth:`predict`, :meth:`predict_marginals`, :meth:`infer`, the gate's samples)
        runs on the chain with the forbidden transitions, starts and ends at log-potential
        ``-inf``: each Bethe projection is a forward-backward on that chain, so the non-local
        marginals give them exactly 0 and no prediction contains them. Training sequences must
        obey them (unless ``allowed_transitions_in_fit=False``). Not with :meth:`infer_tree` (a ValueError says so). See
        ``allowed_transitions_in_fit`` to keep them out of the base CRF's training.
    allowed_transitions_in_fit : bool, default=True
        Whether the base CRF (and the held-out base CRFs of ``psi_holdout``) is trained with
        ``allowed_transitions`` (True: ``log Z`` sums over the allowed sequences only) or is the
        plain model, exactly the weights of a fit without ``allowed_transitions`` (False; the
        training sequences need not obey the mask then), as in
        :class:`~sklearn_struct.ChainCRF`. Either way every inference applies the mask: the psi
        step of ``fit`` (Algorithm 3, with ``learn_theta=True`` its theta steps too, and the
        gate's samples) learns under the inference the model predicts with, and
        :meth:`predict`, :meth:`predict_marginals`, :meth:`infer`, :meth:`predict_topk`,
        :meth:`sequence_log_proba` and ``fixed=`` never give a forbidden transition. Ignored
        without ``allowed_transitions``.
    warm_start : bool, default=False
        When True and the model is fitted, the next ``fit`` (same features and labels) starts
        the base CRF's L-BFGS from the fitted parameters, so a converged base model is reused
        at the cost of at most 10 iterations (the ``tol`` test's period), e.g. to try several energies on one CRF
        (``clone`` drops the fitted state, ``copy.deepcopy`` keeps it). Algorithm 3 always
        starts ``psi`` from ``psi_init``.
    callback : callable or None, default=None
        Called as ``callback(iteration, objective, seconds)`` after every L-BFGS iteration of
        the full-data base CRF (its objective, as in :class:`~sklearn_struct.ChainCRF`), then
        after every epoch of Algorithm 3 (``iteration`` counts epochs, ``objective`` is the norm
        of the epoch's mean psi-gradient, which vanishes as ``psi`` settles). Returning True
        ends the fit there: a stopped base CRF skips the psi step (``psi_`` stays ``psi_init``).
    psi_gradient : {"algorithm3", "exact", "perceptron"}, default="algorithm3"
        ``"algorithm3"``: the paper's Algorithm 3 with its sign corrected, gradients taken at
        the inference output ``mu_i`` (``S(y_i) - mu_i``). ``"exact"``: the exact gradient of
        the surrogate likelihood (eq. 12), at ``m_i = ORACLE(theta - grad L(mu_i))``, one more
        oracle call per step. They agree wherever inference has converged (Prop. 1); on
        OCR with the unigram energy, whose inference mostly stops at the cap, Algorithm 3
        learns the better psi (``benchmarks/results/ocr_table4/ocr_table4.md``).
        ``"perceptron"``: Anzaroot et al. (2014)'s learner for constraint energies
        (:class:`~sklearn_struct.constraints.ConstraintEnergy`): decode each batch at the
        current ``psi`` and step by the violations of the prediction minus those of the gold
        (the structured perceptron's subgradient, with ``psi_l1`` and the average of the
        iterates), so only wrongly decoded sequences move ``psi``
        (:mod:`sklearn_struct._psi_perceptron`).
    random_state : int, RandomState instance or None, default=None
        Order of the stochastic steps, the ``psi_holdout`` split (and the featurizer's
        seed if it has none set).
    n_jobs : int, default=None
        Number of chunks of sequences (shards) for the base CRF, as ``ChainCRF``'s ``n_jobs``.
    verbose : int, default=0
        Print one line per base-CRF iteration (objective) and per epoch of Algorithm 3
        (psi-gradient norm, ``psi``, mean inference iterations), with elapsed seconds.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_features, n_classes)
        Unary feature weights ``W``.
    intercept_ : ndarray of shape (n_classes,)
    transition_ : ndarray of shape (n_classes, n_classes)
        Transition log-potentials ``A[from, to]``.
    n_features_in_ : int
    n_iter_ : int
        L-BFGS iterations run for the base CRF.
    energy_ : Energy
        The fitted energy (only with an energy).
    psi_ : ndarray of shape (n_weights,)
        Learned energy weights (the intercept of ``psi(x)`` with psi features).
    psi_coef_ : ndarray of shape (n_psi_features, n_weights) or None
        Learned weights of the psi features; None without psi features.
    psi_featurizer_ : transformer or None
    n_psi_features_in_ : int
        Width of the psi features (0 without).
    inference_n_iter_ : ndarray of shape (n_psi_sequences,)
        Inference iterations used in the last epoch for each sequence of the psi step
        (all training sequences, or the held-out ones with a float ``psi_holdout``), in
        training order; see :meth:`infer` for test sequences.
    psi_history_ : ndarray of shape (n_epochs + 1, n_weights)
        ``psi_`` after each epoch (first row: initial values).
    gate_seed_ : int or None
        Seed of the gate's samples at prediction (fitted with ``psi_gate``), else None.
    allowed_transitions_ : tuple of ndarray or None
        The masks of ``allowed_transitions`` over ``classes_``, a named tuple ``(transitions,
        start, end)`` of boolean arrays (None without it).

    See Also
    --------
    sklearn_struct.oracles.chain.forward_backward : the marginal oracle.
    sklearn_struct._bethe_inference.bethe_inference : non-local inference on packed arrays.
    sklearn_struct.energies : the energies and how to write your own.

    References
    ----------
    L. Vilnis, D. Belanger, D. Sheldon, A. McCallum. "Bethe Projections for Non-Local
    Inference." UAI 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct import NonLocalCRF
    >>> from sklearn_struct.energies import WordDictionaryEnergy
    >>> rng = np.random.RandomState(0)
    >>> X = [rng.normal(size=(5, 3)) for _ in range(20)]
    >>> y = [(x[:, 0] > 0).astype(int) for x in X]
    >>> crf = NonLocalCRF(c2=0.01).fit(X, y)
    >>> crf.score(X, y) > 0.9
    True
    >>> words = [np.array([0, 1, 1, 0, 1]), np.array([1, 1, 0, 0, 0])]
    >>> y = [words[i % 2] for i in range(20)]
    >>> X = [np.eye(2)[w] + rng.normal(scale=1.2, size=(5, 2)) for w in y]
    >>> model = NonLocalCRF(WordDictionaryEnergy(), n_epochs=2, random_state=0).fit(X, y)
    >>> model.score(X, y) >= NonLocalCRF().fit(X, y).score(X, y)
    True
    """

    _parameter_constraints = {
        "energy": [None, list, HasMethods(["fit", "gradient", "term_values", "term_gradient_dot"])],
        "c2": [Interval(numbers.Real, 0, None, closed="left")],
        "all_possible_states": ["boolean"],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "inference": [StrOptions({"rda", "md", "accelerated"})],
        "inference_max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "inference_tol": [Interval(numbers.Real, 0, None, closed="left")],
        "beta": [Interval(numbers.Real, 0, None, closed="left"), StrOptions({"auto"})],
        "eta": [None, Interval(numbers.Real, 0, None, closed="neither"), callable],
        "lipschitz": [None, Interval(numbers.Real, 0, None, closed="left")],
        "average": ["boolean"],
        "psi_init": [Interval(numbers.Real, 0, None, closed="left")],
        "psi_holdout": [None, StrOptions({"auto"}), Interval(numbers.Real, 0, 1, closed="neither"),
                        Interval(numbers.Integral, 2, None, closed="left")],
        "psi_featurizer": [None, HasMethods(["fit", "transform"])],
        "psi_gate": [None, StrOptions({"probability"})],
        "n_gate_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_epochs": [Interval(numbers.Integral, 0, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "psi_l1": [Interval(numbers.Real, 0, None, closed="left")],
        "learning_rate_schedule": [StrOptions({"constant", "invscaling"})],
        "psi_gradient": [StrOptions({"algorithm3", "exact", "perceptron"})],
        "learn_theta": ["boolean"],
        "theta_learning_rate": [None, Interval(numbers.Real, 0, None, closed="neither")],
        **shared_constraints("warm_start", "callback", "random_state", "n_jobs", "verbose"),
        "allowed_transitions": [str, "array-like", None],
        "allowed_transitions_in_fit": ["boolean"],
    }

    def __init__(
        self,
        energy=None,
        *,
        c2=1.0,
        all_possible_states=False,
        max_iter=None,
        tol=1e-5,
        inference="rda",
        inference_max_iter=40,
        inference_tol=1e-4,
        beta=0.0,
        eta=None,
        lipschitz=None,
        average=False,
        psi_init=1.0,
        psi_holdout="auto",
        psi_featurizer=None,
        psi_gate=None,
        n_gate_samples=100,
        n_epochs=5,
        batch_size=16,
        learning_rate=0.1,
        learning_rate_schedule="invscaling",
        psi_l1=0.0,
        learn_theta=False,
        theta_learning_rate=None,
        psi_gradient="algorithm3",
        warm_start=False,
        callback=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
        allowed_transitions=None,
        allowed_transitions_in_fit=True,
    ):
        store_init_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y, psi_features=None, sample_weight=None):
        """Fit the CRF, then (with an energy) the energy weights by Algorithm 3.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        y : list of array-like of shape (n_tokens_i,)
            Labels of each token; any hashable values.
        psi_features : array-like of shape (n_sequences, n_psi_features), default=None
            Per-sequence features on which ``psi`` depends linearly; overrides
            ``psi_featurizer``.
        sample_weight : array-like of shape (n_sequences,), default=None
            One weight per sequence of the base CRF's likelihood, as in
            :meth:`ChainCRF.fit <sklearn_struct.ChainCRF.fit>`; only without an ``energy``
            (Algorithm 3's psi step has no weights: a ValueError says so).

        Returns
        -------
        self : NonLocalCRF
        """
        fitted = self._fit(X, y, psi_features, sample_weight)  # on atomic_fit's working copy
        for attr in _PSI_ATTRIBUTES:
            self.__dict__.pop(attr, None)  # from an earlier fit with another energy
        self.__dict__.update(fitted)
        return self

    def _fit(self, X, y, psi_features, sample_weight=None):
        """validate -> base CRF -> psi: the fitted attributes as a dict (set by ``fit``)."""
        if sample_weight is not None and self.energy is not None:
            raise ValueError("sample_weight weighs the base CRF only, and the psi step (Algorithm 3) takes no "
                             "weights; use it with energy=None.")
        progress, X, y_enc, previous = start_chain_fit(self, X, y)  # sets classes_, n_features_in_
        structure = structure_from(self.allowed_transitions, self.classes_)
        if structure is not None and self.allowed_transitions_in_fit:
            check_feasible([len(v) for v in y_enc], onehot_masks(y_enc, len(self.classes_)), structure)
        self.allowed_transitions_ = structure  # read by _lbfgs_crf (the held-out base CRFs too); psi infers with it
        weights = sequence_weights(sample_weight, None, y_enc, self.classes_)
        theta, n_iter, objective = self._lbfgs_crf(X, y_enc, previous, progress=progress, sample_weight=weights)
        fitted = dict(classes_=self.classes_, n_features_in_=self.n_features_in_, coef_=theta[0],
                      intercept_=theta[1], transition_=theta[2], n_iter_=n_iter, objective_=objective,
                      allowed_transitions_=structure)
        if self.energy is None:
            return fitted
        if self.learn_theta and self.psi_holdout not in (None, "auto"):
            raise ValueError(
                "learn_theta=True updates the base CRF on the sequences of the psi step, which "
                "psi_holdout keeps out of the final base CRF; set psi_holdout=None to use it."
            )
        energy = fit_energy(self.energy, y_enc, self.classes_)
        if self.psi_gate is not None:
            _gate_energy(energy)
            if self.psi_gradient == "perceptron":
                raise ValueError("psi_gate is learned by Algorithm 3; psi_gradient='perceptron' takes no psi_gate.")
        featurizer, phi = self._fit_psi_features(X, psi_features)
        thetas = in_sample_thetas(theta, len(X)) if progress.stopped else self._psi_thetas(X, y_enc, theta)
        gate = gate_seed = None
        if self.psi_gate is not None:  # Algorithm 3 sees each training sequence through its gate
            gate, gate_seed = fit_gate(_gate_energy(energy, X), X, thetas, self.n_gate_samples, self.random_state,
                                       self.n_epochs, structure)
        res = learn_psi(self, X, y_enc, energy, phi, *thetas, progress, gate=gate, structure=structure)
        fitted.update(gate_seed_=gate_seed, energy_=energy, psi_featurizer_=featurizer,
                      n_psi_features_in_=0 if phi is None else phi.shape[1], psi_=res.psi, psi_coef_=res.psi_coef,
                      psi_history_=res.history, inference_n_iter_=res.n_iter)
        if res.theta is not None:
            fitted.update(coef_=res.theta[0], intercept_=res.theta[1], transition_=res.theta[2])
        return fitted

    def _psi_thetas(self, X, y_enc, base):
        """Held-out base CRFs for the psi step (:func:`~sklearn_struct._psi_learning.psi_thetas`)."""
        return psi_thetas(self, X, y_enc, base)

    def _lbfgs_crf(self, X, y_enc, previous=None, what="the base CRF", progress=None, sample_weight=None):
        """Fit the base CRF (a :class:`~sklearn_struct.ChainCRF`'s model) on (X, y_enc):
        ``((coef, intercept, transition), n_iter, objective)``; ``progress`` prints (and may
        stop) its iterations, verbose lines only if None."""
        if progress is None:
            progress = Progress(type(self).__name__, self.verbose)
        # ChainCRF's L-BFGS at its defaults (CRFsuite's stopping rule), with this model's c2 / max_iter / tol:
        # taken from ChainCRF itself, so a parameter added there reaches this path too
        params = ChainCRF(algorithm="lbfgs", c2=self.c2, max_iter=self.max_iter, tol=self.tol,
                          all_possible_states=self.all_possible_states, all_possible_transitions=True,
                          n_jobs=self.n_jobs).get_params()
        # allowed_transitions_in_fit=False: the plain model's fit, the mask at inference only
        structure = getattr(self, "allowed_transitions_", None) if self.allowed_transitions_in_fit else None
        *theta, n_iter, objective, _ = fit_chain_algorithm(X, y_enc, len(self.classes_), params,
                                                           previous=previous, progress=progress, what=what,
                                                           sample_weight=sample_weight,
                                                           constraints=None if structure is None else (None, structure))
        return tuple(theta), n_iter, objective

    # ---------------------------------------------------------------- psi features
    def _fit_psi_features(self, X, psi_features):
        """The fitted psi featurizer (or None) and the training sequences' psi features (or None)."""
        featurizer = None
        if psi_features is None and self.psi_featurizer is not None:
            featurizer = clone(self.psi_featurizer)
            params = featurizer.get_params()
            if "random_state" in params and params["random_state"] is None and self.random_state is not None:
                featurizer.set_params(random_state=check_random_state(self.random_state).randint(2**31 - 1))
            featurizer = featurizer.fit(X)
        return featurizer, self._psi_features(X, psi_features, fitting=True, featurizer=featurizer)

    def _psi_features(self, X, psi_features, fitting=False, featurizer=None):
        """Validated per-sequence psi features (n_seq, d), or None (``featurizer``: the one being fitted)."""
        n_seq = len(X)
        if psi_features is None:
            if not fitting:
                featurizer = getattr(self, "psi_featurizer_", None)
            if featurizer is None:
                if not fitting and getattr(self, "n_psi_features_in_", 0):
                    raise ValueError(
                        f"This model was fitted with {self.n_psi_features_in_} psi features per sequence; "
                        "pass psi_features= (or fit with a psi_featurizer)."
                    )
                return None
            psi_features = featurizer.transform(X)
        if sp.issparse(psi_features):
            psi_features = psi_features.toarray()
        try:
            phi = np.asarray(psi_features, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"psi_features must be a numeric array ({exc}).") from None
        if phi.ndim != 2 or phi.shape[0] != n_seq:
            raise ValueError(
                f"psi_features must have shape (n_sequences={n_seq}, n_psi_features), got {phi.shape}."
            )
        bad = ~np.isfinite(phi).all(axis=1)
        if bad.any():
            raise ValueError(f"psi_features of sequence {int(np.flatnonzero(bad)[0])} contain NaN or infinity.")
        if not fitting:
            expected = getattr(self, "n_psi_features_in_", 0)
            if expected == 0:
                raise ValueError("psi_features were given, but this model was fitted without psi features.")
            if phi.shape[1] != expected:
                raise ValueError(
                    f"psi_features have {phi.shape[1]} columns, but {expected} were seen during fit."
                )
        return phi

    def _inference_kwargs(self):
        return dict(method=self.inference, max_iter=self.inference_max_iter, tol=self.inference_tol,
                    beta=self.beta, eta=self.eta, lipschitz=self.lipschitz, average=self.average)

    def _unary(self, X):
        """Validated, packed data and its unary scores under the base model."""
        check_is_fitted(self)
        X = check_sequences(X, n_features=self.n_features_in_)
        data, unary = predict_unary(X, self.coef_, self.intercept_)
        return X, data, unary

    def infer(self, X, psi_features=None, max_iter=None, fixed=None):
        """Non-local inference on ``X``: MAP labels, marginals and iteration counts.

        Parameters
        ----------
        X : list of array-like of shape (n_tokens_i, n_features)
        psi_features : array-like of shape (n_sequences, n_psi_features), default=None
        max_iter : int, default=None
            Overrides ``inference_max_iter`` (e.g. to study accuracy against the cap).
        fixed : list or None, default=None
            Tokens whose labels are given, as in :meth:`predict`.

        Returns
        -------
        result : Bunch with ``labels`` (list of label arrays, Viterbi under ``theta_t``),
            ``marginals`` (list of (n_tokens_i, n_classes)), ``n_iter`` (n_sequences,)
            inference iterations and ``converged`` (n_sequences,) bool.
        """
        return self._infer(X, psi_features=psi_features, max_iter=max_iter, fixed=fixed)

    def _infer(self, X, psi_features=None, max_iter=None, marginals=True, fixed=None):
        res = self._dual_chain(X, psi_features, max_iter, marginals, fixed)
        labels, _ = viterbi(res.dual_unary, res.dual_transition, res.offsets)
        return Bunch(
            labels=[self.classes_[part] for part in unpack_sequences(labels, res.offsets)],
            marginals=None if res.node is None else unpack_sequences(res.node, res.offsets),
            n_iter=res.n_iter,
            converged=res.converged,
        )

    def _dual_chain(self, X, psi_features=None, max_iter=None, marginals=True, fixed=None):
        """Inference on ``X``: the chain ``Q`` whose Viterbi is the prediction (Prop. 1) and the marginals.

        Returns a Bunch with ``offsets``, ``dual_unary`` / ``dual_transition`` (the base CRF's
        potentials, or the final dual potentials ``theta_t`` of non-local inference; ``-inf`` at
        every choice ``allowed_transitions`` and ``fixed`` forbid), ``node`` (packed marginals,
        None if not ``marginals`` without an energy), ``n_iter`` and ``converged``.
        """
        X, data, unary = self._unary(X)
        offsets = data.offsets
        n_seq = offsets.shape[0] - 1
        allowed = None if fixed is None else fixed_masks(fixed, self.classes_, np.diff(offsets))
        # forbidden transitions, starts, ends and the labels fixed tokens exclude at -inf (log space): every
        # Bethe projection is a forward-backward on this chain, so they keep marginal 0 throughout
        unary, trans = masked_potentials(unary, self.transition_, offsets, getattr(self, "allowed_transitions_", None),
                                         allowed)
        if self.energy is None or not hasattr(self, "energy_"):
            if psi_features is not None:
                raise ValueError("psi_features were given, but this model has no energy.")
            node = forward_backward(unary, trans, offsets, edge_marginals="none")[1] if marginals else None
            return Bunch(offsets=offsets, dual_unary=unary, dual_transition=trans, node=node,
                         n_iter=np.zeros(n_seq, dtype=np.int64), converged=np.ones(n_seq, dtype=bool))
        phi = self._psi_features(X, psi_features)
        psi, _ = psi_values(phi, self.psi_, self.psi_coef_)
        psi = np.broadcast_to(psi, (n_seq, self.energy_.n_weights))
        energy = bind(self.energy_, X)
        if getattr(self, "gate_seed_", None) is not None:  # fitted with psi_gate
            psi = psi * satisfaction_probability(_gate_energy(energy), unary, trans, offsets,
                                                 self.n_gate_samples, self.gate_seed_)
        kwargs = self._inference_kwargs()
        if max_iter is not None:
            kwargs["max_iter"] = max_iter
        res = bethe_inference(unary, trans, offsets, energy, psi, return_edges=False, **kwargs)
        return Bunch(offsets=offsets, dual_unary=res.dual_unary, dual_transition=res.dual_transition, node=res.node,
                     n_iter=res.n_iter, converged=res.converged)

    def infer_tree(self, x, edges, psi_features=None, max_iter=None):
        """Non-local inference on one input whose tokens form a tree instead of a chain.

        The base model's unary scores and its transition table (read as ``[label of u,
        label of v]`` for every tree edge ``(u, v)``) define a tree MRF; Bethe-RDA then runs
        with exact belief propagation on the tree as its oracle
        (:func:`~sklearn_struct._bethe_tree.bethe_inference_tree`). The model itself is
        trained on chains; the energy's "transition" terms apply to the tree's edges.

        Parameters
        ----------
        x : array-like or sparse matrix of shape (n_nodes, n_features)
        edges : array-like of int of shape (n_nodes - 1, 2)
        psi_features : array-like of shape (n_psi_features,), default=None
        max_iter : int, default=None
            Overrides ``inference_max_iter``.

        Returns
        -------
        result : Bunch with ``labels`` (MAP under the final dual potentials, max-product),
            ``marginals`` (n_nodes, n_classes), ``n_iter`` and ``converged``.
        """
        X, _, unary = self._unary([x])
        if getattr(self, "allowed_transitions_", None) is not None:
            raise ValueError("infer_tree: allowed_transitions constrains chains (bigrams in order, first and last "
                             "labels); it has no meaning on a tree. Fit without it, or use infer.")
        if getattr(self, "gate_seed_", None) is not None:
            raise ValueError("infer_tree: psi_gate samples chain labellings; it needs chain inputs (use infer).")
        cap = self.inference_max_iter if max_iter is None else max_iter
        if self.energy is None or not hasattr(self, "energy_"):
            from .oracles.loopy import loopy_bp

            node = loopy_bp(unary, edges, self.transition_, max_iter=10 * len(unary) + 10, tol=1e-12).node_marginals
            best = loopy_bp(unary, edges, self.transition_, mode="max", max_iter=10 * len(unary) + 10, tol=1e-12)
            return Bunch(labels=self.classes_[np.argmax(best.node_marginals, axis=1)], marginals=node, n_iter=0,
                         converged=True)
        phi = self._psi_features(X, None if psi_features is None else np.atleast_2d(psi_features))
        psi, _ = psi_values(phi, self.psi_, self.psi_coef_)
        res = bethe_inference_tree(unary, edges, self.transition_, bind(self.energy_, X), psi[0], max_iter=cap,
                                   tol=self.inference_tol)
        return Bunch(labels=self.classes_[res.labels], marginals=res.node, n_iter=res.n_iter, converged=res.converged)

    def predict(self, X, psi_features=None, fixed=None):
        """Most likely label sequence of each input sequence.

        Viterbi under the base CRF, or, with an energy, under the final dual potentials
        ``theta_t`` of non-local inference (Prop. 1); never a transition ``allowed_transitions``
        forbids.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        psi_features : array-like of shape (n_sequences, n_psi_features), default=None
        fixed : list or None, default=None
            Forced decoding: one entry per sequence, None (nothing given) or one entry per token:
            its label, None (free) or a ``set`` of the labels it may take. Inference then runs
            on the labellings that agree with it (the excluded labels at log-potential ``-inf``
            in every Bethe projection), so the result agrees with it.

        Returns
        -------
        y : list of ndarray of shape (n_tokens_i,)
        """
        # the base CRF's Viterbi needs no forward-backward
        return self._infer(X, psi_features=psi_features, marginals=False, fixed=fixed).labels

    def predict_marginals(self, X, psi_features=None, fixed=None):
        """Per-token label marginals (``mu`` of non-local inference with an energy).

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        psi_features : array-like of shape (n_sequences, n_psi_features), default=None
        fixed : list or None, default=None
            Tokens whose labels are given, as in :meth:`predict`: the marginals are then
            conditional on them (the minimiser of eq. 2 over the marginals of the labellings
            that agree with them), exactly 0 at every excluded label.

        Returns
        -------
        marginals : list of ndarray of shape (n_tokens_i, n_classes)
            Columns follow ``classes_``.
        """
        return self.infer(X, psi_features=psi_features, fixed=fixed).marginals

    def predict_proba(self, X, psi_features=None):
        """The marginals of :meth:`predict_marginals` under scikit-learn's name.

        So that a :class:`~sklearn.pipeline.Pipeline` ending in this estimator (e.g. behind a
        featurizer) reaches them: ``Pipeline`` delegates ``predict_proba``, not ``predict_marginals``.

        Returns
        -------
        marginals : list of ndarray of shape (n_tokens_i, n_classes)
        """
        return self.predict_marginals(X, psi_features=psi_features)

    def predict_topk(self, X, k=5, psi_features=None):
        """The ``k`` most probable label sequences of each sequence under the chain ``Q`` of :meth:`predict`.

        Without an energy ``Q`` is the base CRF ``P(y | x)`` (within ``allowed_transitions``) and
        this is :meth:`ChainCRF.predict_topk <sklearn_struct.ChainCRF.predict_topk>`. With an
        energy the model's distribution over labellings ``P(y | x) ~ exp(<theta, S(y)> -
        L_psi(S(y)))`` couples all tokens: its partition function has no chain recursion and
        even its single best labelling is NP-hard for constraint energies, so exact k-best
        lists or sequence probabilities of it are out of reach. What is exact is ``Q``, the
        chain with the final dual potentials ``theta_t`` of non-local inference: its Viterbi is
        :meth:`predict` (row 0 here), its marginals are :meth:`predict_marginals` (exactly, at
        every iteration, for the last iterate of ``"rda"`` and ``"md"``: ``mu_t = ORACLE(theta_t)``;
        for averages and ``"accelerated"`` at the fixed point of Prop. 1), and at that fixed point
        its log-likelihood is the surrogate that ``fit`` maximises (eq. 12). The k-best lists are
        exact k-best Viterbi in ``Q``
        (:func:`~sklearn_struct.oracles.chain_constrained.kbest_viterbi`), best first.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        k : int, default=5
        psi_features : array-like of shape (n_sequences, n_psi_features), default=None

        Returns
        -------
        y_topk : list of ndarray of shape (k_i, n_tokens_i)
            Row ``r`` is the rank-``r`` labelling (``k_i < k`` when fewer labellings are allowed).
        log_proba : list of ndarray of shape (k_i,)
            ``log Q(y | x)`` of each row, non-increasing.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_struct import NonLocalCRF
        >>> rng = np.random.RandomState(0)
        >>> X = [np.eye(3)[[0, 1, 2, 2]] + rng.normal(scale=0.5, size=(4, 3)) for _ in range(20)]
        >>> y = [np.array(["B-X", "I-X", "O", "O"])] * 20
        >>> crf = NonLocalCRF(c2=0.1, allowed_transitions="BIO").fit(X, y)
        >>> y_topk, log_proba = crf.predict_topk(X[:1], k=2)
        >>> y_topk[0].tolist(), np.exp(log_proba[0]).round(3).tolist()
        ([['B-X', 'I-X', 'O', 'O'], ['B-X', 'I-X', 'I-X', 'O']], [0.986, 0.009])
        >>> crf.predict(X[:1], fixed=[["O", None, None, None]])[0].tolist()  # token 0 given: no I-X after O
        ['O', 'B-X', 'I-X', 'O']
        >>> crf.sequence_log_proba(X[:1], [["O", "I-X", "O", "O"]])
        array([-inf])
        """
        res = self._dual_chain(X, psi_features, marginals=False)
        return topk_of_chain(res.dual_unary, res.dual_transition, res.offsets, k, self.classes_)

    def sequence_log_proba(self, X, y, psi_features=None):
        """``log Q(y_i | x_i)`` of given label sequences under the chain ``Q`` of :meth:`predict_topk`.

        The base CRF's ``log P(y | x)`` without an energy; with one, the surrogate log-likelihood
        of eq. 12 at the inference output (the exact probability under the non-local energy has
        no tractable normaliser: see :meth:`predict_topk`). A labelling that
        ``allowed_transitions`` forbids has ``-inf``.

        Returns
        -------
        log_proba : ndarray of shape (n_sequences,)
        """
        res = self._dual_chain(X, psi_features, marginals=False)
        return log_proba_of_chain(res.dual_unary, res.dual_transition, res.offsets, X, y, self.classes_)

    def score(self, X, y, psi_features=None):
        """Token accuracy of :meth:`predict` on ``X`` against ``y``."""
        return token_score(self.predict(X, psi_features=psi_features), y)


def _gate_energy(energy, X=None):
    """The (bound) energy the gate samples against: it must count violations of labellings."""
    if not hasattr(energy, "packed_violations"):
        raise ValueError(
            f"psi_gate='probability' needs a constraint energy (templates or a ConstraintEnergy) that counts "
            f"violations of a labelling; {type(energy).__name__} does not."
        )
    return energy if X is None else bind(energy, X)
