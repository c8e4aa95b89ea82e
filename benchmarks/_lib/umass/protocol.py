"""The UMass citations protocol of Table 1 (Vilnis et al. 2015): splits and features, the settings chosen on
dev, psi learned over a fitted base CRF (``with_energy``), the cross-fitted thetas and the oracle ceiling."""
import copy
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct.constraint_learning import ConstraintFamily, kept_constraints  # noqa: F401 (used as B.*)
from sklearn_struct.datasets import load_umass_citations
from sklearn_struct.metrics import chunk_precision_recall_f1, segment_report
from sklearn_struct.oracles.chain import viterbi
from sklearn_struct.preprocessing import SequenceVectorizer
from sklearn_struct.utils.packing import unpack_sequences

from ..citation_features import citation_features
from ..results import results_dir
from ..internals import bethe_inference, bind, fit_energy, fit_gate, learn_psi, predict_unary


RESULTS = results_dir("umass_table1")


C2_GRID = (0.1, 0.3)  # 0.03 (93.61) and 1.0 (93.79) were below 0.1 (93.86) on dev in a first exploration


MAX_ITER = 150


PSI_HOLDOUT = 3


FAMILY_GRID = [dict(min_support=ms, psi_l1=0.003, learning_rate=lr) for ms in (0.9, 0.95) for lr in (3.0, 30.0)]


FAMILY_FIXED = dict(psi_init=0.0, n_epochs=3, batch_size=16)


CAPS = (0, 1, 2, 3, 5, 10, 40)


PERCEPTRON_FIXED = dict(psi_gradient="perceptron", psi_init=0.0, n_epochs=3, batch_size=16,
                        learning_rate_schedule="constant")


CEILING_STRENGTHS = (3.0, 10.0)


IN_SAMPLE_EPOCHS = (3, 8)


CEILING_MAX_ITER = 100


GROBID_C2 = results_dir("citations") / "citations_cap100.json"  # each GROBID fold's c2 (bench_citations' capped run)


REPORT_FIELDS = ("person-first", "person-middle", "person-last", "authors", "title", "journal", "booktitle",
                 "volume", "number", "pages", "year", "publisher", "address", "editor", "ref-marker", "venue",
                 "tech", "series", "institution")


def seg_f1(y_true, y_pred, scheme="IOB2"):
    return 100 * chunk_precision_recall_f1(y_true, y_pred, scheme=scheme)[2]


def per_field(y_true, y_pred, scheme="IOB2"):
    rep = segment_report(y_true, y_pred, scheme=scheme, output_dict=True)
    return {f: 100 * v["f1-score"] for f, v in rep.items() if not f.endswith("avg")}


def quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fn(*args, **kw)


def with_energy(base, templates, thetas, X, y_enc, holdout=PSI_HOLDOUT, **settings):
    """``base`` (a fitted NonLocalCRF without energy) plus ``templates``, psi learned on ``thetas``.

    The same as ``NonLocalCRF(templates, c2=..., psi_holdout=3, **settings).fit(X, y)``
    without refitting the base CRF and the cross-fitted ones for every row; with
    ``learn_theta=True`` (and ``holdout=None``) the model takes Algorithm 3's theta too.
    """
    model = copy.deepcopy(base).set_params(energy=templates, psi_holdout=holdout, **settings)
    energy = fit_energy(templates, y_enc, base.classes_)
    gate = seed = None
    if model.psi_gate is not None:  # as NonLocalCRF._fit does
        gate, seed = fit_gate(bind(energy, X), X, thetas, model.n_gate_samples, model.random_state, model.n_epochs)
    res = learn_psi(model, X, y_enc, energy, None, *thetas, gate=gate)
    model.__dict__.update(gate_seed_=seed, energy_=energy, psi_=res.psi, psi_coef_=None, psi_featurizer_=None,
                          n_psi_features_in_=0, psi_history_=res.history, inference_n_iter_=res.n_iter)
    if res.theta is not None:
        model.__dict__.update(coef_=res.theta[0], intercept_=res.theta[1], transition_=res.theta[2])
    return model


def cross_fitted(base, X, y_enc):
    model = copy.deepcopy(base).set_params(psi_holdout=PSI_HOLDOUT)
    return quiet(model._psi_thetas, X, y_enc, (base.coef_, base.intercept_, base.transition_))


def timed(out, key, fn, *args, **kw):
    t0 = time.perf_counter()
    res = fn(*args, **kw)
    out[key] = time.perf_counter() - t0
    return res


def load_features(lexicons=None):
    """UMass splits, vectorised (fitted on training): (X, y, data, vectorizer).

    ``lexicons``: name lexicons for ``citation_features`` (``studies/bench_umass_lexicons.py``); None, the main run's features."""
    data = {s: load_umass_citations(s) for s in ("train", "dev", "test")}
    vec = SequenceVectorizer(min_freq=2)
    X = {"train": vec.fit_transform([citation_features(w, lexicons) for w in data["train"].words])}
    for s in ("dev", "test"):
        X[s] = vec.transform([citation_features(w, lexicons) for w in data[s].words])
    y = {s: [np.array(lab) for lab in data[s].labels] for s in data}
    return X, y, data, vec


def oracle_ceiling(base, energy, X, y_true, strength, scheme="IOB2"):
    """Test of what the candidates can do at most: every reference keeps, at weight ``strength``,
    exactly the candidates its own gold labels satisfy (a per-reference oracle psi).

    ``scheme``: the tagging scheme of the segment F1 (GROBID's labels: "IO")."""
    gold = [np.searchsorted(base.classes_, v) for v in y_true]
    energy = energy.bind(X)
    psi = np.where(energy.violations(gold) > 0, 0.0, strength)
    data, unary = predict_unary(X, base.coef_, base.intercept_)
    pred, converged = decode_psi(base, energy, unary, data, psi)
    return seg_f1(y_true, pred, scheme), converged


def decode_psi(base, energy, unary, data, psi):
    """Labels of Bethe inference (cap ``CEILING_MAX_ITER``) with per-reference weights ``psi``
    (n_refs, n_terms) over ``base``'s unaries, and the share of references that converged."""
    res = bethe_inference(unary, base.transition_, data.offsets, energy, psi, return_edges=False,
                          max_iter=CEILING_MAX_ITER, tol=1e-4)
    labels, _ = viterbi(res.dual_unary, res.dual_transition, data.offsets)
    return [base.classes_[p] for p in unpack_sequences(labels, data.offsets)], float(res.converged.mean())
