"""Table 1 and Figures 1-2 of Vilnis et al. (2015) on the paper's own data: UMass citations, learned constraints.

Protocol
--------
Data: the UMass citation field-extraction set (Anzaroot & McCallum 2013;
``$SKLEARN_STRUCT_DATA/citations/umass``, 1,457 / 660 / 367 references in training / dev /
testing, :func:`sklearn_struct.datasets.load_umass_citations`). Labels: the **leaf** tags
(``person-first``, ``person-last``, ``title``, ``journal``, ``year``, ...; 37 fields in
training) in BIO form (75 classes), so two adjacent elements with one tag stay two segments.
The paper does not say at which depth its 94.47 is scored; the leaf tags are the labels
Anzaroot et al.'s constraints are written over ("#first names - #last names").

Metric: segment F1 of the MAP labelling (conlleval rules on the BIO tags,
``chunk_precision_recall_f1(scheme="IOB2")``), micro over all fields, and per field.

Features (every system): the CRFsuite-style token dicts of ``benchmarks/_citation_features.py``
(word with and without trailing punctuation, shape, prefixes and suffixes, year / initial /
page-range / URL flags, digits, case, punctuation, position, the words, shapes and flags of
the tokens within +-3, the previous-word bigram), through ``SequenceVectorizer(min_freq=2)``
fitted on training. What differs from Anzaroot et al. (2014)'s baseline: no lexicons (they
use name, journal and publisher lists), no character n-grams beyond 2-3 character
prefixes/suffixes.

Protocol: train on training; choose every hyperparameter on dev; test once on testing.

``base CRF``
    ``NonLocalCRF`` without energy (L-BFGS, L2; CRFsuite's objective), ``c2`` from ``C2_GRID`` on dev.
``+ hand-written templates``
    The same base CRF plus 12 templates by label name (``HAND``: at most one segment of title,
    journal, booktitle, volume, pages, year, publisher, ref-marker, address; at least one
    title and year; journal xor booktitle), psi by Algorithm 3 on 3-fold cross-fitted
    (held-out) base-CRF marginals of the training references.
``+ learned constraints``
    The same base CRF plus Anzaroot et al.'s candidate family generated from the training
    labels (:class:`sklearn_struct.constraint_learning.ConstraintFamily`: segment counts,
    pairwise differences, exclusivity, implication), psi by Algorithm 3 with the L1 penalty
    ``psi_l1`` on the same held-out marginals; the family's ``min_support``, ``psi_l1`` and the
    step size chosen on dev from ``FAMILY_GRID``.
``sklearn-crfsuite``
    CRFsuite L-BFGS (``c1=0``, all transitions) on the same vectorised features, its ``c2``
    from ``C2_GRID`` on dev.

Inference: Bethe-RDA, beta 0, cap 40, tolerance 1e-4; MAP by Viterbi under the final dual
potentials. Figure 1: test F1 of the learned model against the cap on inference
iterations; Figure 2: iterations to converge at the cap of 40.

``--grobid FOLD ...``: the learned family, with the hyperparameters chosen on UMass dev (no
tuning on GROBID), on folds of ``bench_citations.py``'s 5-fold split of the GROBID set
(13 Cora fields, IO labels), next to the base CRF and the 18 hand-written templates there,
each fold's ``c2`` as chosen by ``bench_citations.py``'s capped run (``GROBID_C2``:
``results/citations_cap100.json``, the c2 with which every GROBID result here was made; its
converged rerun, ``citations.json``, may pick otherwise). GROBID played no part in
designing the family: it is the held-back citation data.

``--learners`` (after the main run): the same base CRF refitted, psi by Anzaroot et al.'s
structured perceptron (``psi_gradient="perceptron"``, step and L1 on dev) beside Algorithm 3,
and the candidates' oracle ceiling: each reference keeps, at a fixed weight, exactly the
candidates its own gold satisfies, which bounds what any single psi over the family can do.
``--families [NAME ...]`` (after the main run): the dev ceilings (oracle per-reference psi,
and one psi fitted by the perceptron on dev's own gold) of the family with the hierarchical
groups of the UMass label tree and the input-dependent "conditional" counts added
(``umass_table1_families.json``).
``--paper-protocol`` (after the main run): the paper's protocol (sec. 8.1), psi (and with
``learn_theta=True`` theta) by Algorithm 3 on the dev references, every setting chosen by 3-fold
CV inside dev, with the same-data controls (``benchmarks/_umass_paper_protocol.py``,
``umass_table1_paper.json``).
``--lexicons [STEP ...]``: every dev measurement above (base CRF's c2, error classes, ceilings,
the family's held-out gain) with name-lexicon features (US Census 1990 lists,
``_name_lexicons.py``) in the base CRF, testing untouched; ``--lexicons --test`` scores the
pickled models chosen on dev on testing once (``benchmarks/_umass_lexicons.py``,
``umass_table1_lexicons*.json``).
``--grobid-ceiling FOLD ...``: on GROBID folds with the base CRFs to convergence, the learned
family beside its oracle ceiling and one psi fitted in-sample on the test fold's gold
(``benchmarks/_umass_grobid_ceiling.py``, ``umass_table1_grobid_ceiling.json``).
``--gate`` / ``--gate-grobid FOLD ...``: the learned family through the sampled gate
(``NonLocalCRF(psi_gate="probability")``; dev grid, testing once; then the UMass-dev choice on
GROBID folds; ``benchmarks/_umass_gate.py``, ``umass_table1_gate*.json``).
``--to-convergence`` (with ``--grobid``): base CRFs to CRFsuite's stop instead of
``bench_citations``' cap of 100 iterations.

Run::

    SKLEARN_STRUCT_DATA=../shared/data nice -n 10 python benchmarks/papers/bench_umass_table1.py
    SKLEARN_STRUCT_DATA=../shared/data nice -n 10 python benchmarks/papers/bench_umass_table1.py --grobid 0 1
    SKLEARN_STRUCT_DATA=../shared/data nice -n 10 python benchmarks/papers/bench_umass_table1.py --learners
    SKLEARN_STRUCT_DATA=../shared/data nice -n 10 python benchmarks/papers/bench_umass_table1.py --paper-protocol

Output: ``benchmarks/results/umass_table1.{md,json,png}`` (``umass_table1_grobid*.json``,
``umass_table1_learners.json``).
"""

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.citation_features import citation_features  # noqa: E402

from sklearn_struct import NonLocalCRF  # noqa: E402
from _lib.internals import (bethe_inference, bind, fit_energy, fit_gate, in_sample_thetas, learn_psi, predict_unary)  # noqa: E402
from sklearn_struct.constraint_learning import ConstraintFamily, hierarchy_groups, kept_constraints  # noqa: E402
from sklearn_struct.constraints import AtLeastSegments, AtMostSegments, MutuallyExclusive  # noqa: E402
from sklearn_struct.datasets import load_umass_citations  # noqa: E402
from sklearn_struct.metrics import chunk_precision_recall_f1, segment_report  # noqa: E402
from sklearn_struct.oracles.chain import viterbi  # noqa: E402
from sklearn_struct.preprocessing import SequenceVectorizer  # noqa: E402
from sklearn_struct.utils.packing import unpack_sequences  # noqa: E402
from _lib import citations as bc  # noqa: E402
from _lib.umass import (gate as ug, grobid_ceiling as gc, lexicons as lx, paper_protocol as pp, selector as us)  # noqa: E402
from _lib.umass.protocol import (C2_GRID, CAPS, CEILING_STRENGTHS, cross_fitted, FAMILY_FIXED, FAMILY_GRID, GROBID_C2,  # noqa: E402
                                 IN_SAMPLE_EPOCHS, load_features, MAX_ITER, oracle_ceiling, per_field,
                                 PERCEPTRON_FIXED, quiet, REPORT_FIELDS, RESULTS, seg_f1, timed, with_energy)

PAPER = {"base": 94.47, "constrained": 95.47, "anzaroot_base": 94.41, "soft_dd": 95.39}
HAND_SETTINGS = dict(psi_init=1.0, learning_rate=3.0, n_epochs=3, batch_size=16)
PERCEPTRON_GRID = [dict(psi_l1=l1, learning_rate=lr) for l1 in (0.0, 0.003) for lr in (1.0, 3.0)]


def _seg(field):
    return [f"B-{field}", f"I-{field}"]


HAND = ([AtMostSegments(_seg(f), 1) for f in ("title", "journal", "booktitle", "volume", "pages", "year",
                                               "publisher", "ref-marker", "address")]
        + [AtLeastSegments(_seg(f), 1) for f in ("title", "year")] + [MutuallyExclusive(_seg("journal"), _seg("booktitle"))])


def fit_crfsuite(D, y, c2):
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=c2, max_iterations=MAX_ITER,
                               all_possible_transitions=True)
    crf.fit(D, [list(v) for v in y])
    return crf


def crfsuite_dicts(X, names):
    """The vectorised features back as {name: value} dicts, so CRFsuite sees exactly our columns."""
    out = []
    for x in X:
        x = x.tocsr()
        out.append([{names[j]: float(v) for j, v in zip(x.indices[x.indptr[t]:x.indptr[t + 1]],
                                                         x.data[x.indptr[t]:x.indptr[t + 1]])}
                    for t in range(x.shape[0])])
    return out


def run_umass(out, log):
    X, y, data, vec = load_features()
    out["sizes"] = {s: [len(y[s]), int(sum(map(len, y[s])))] for s in y}
    out["n_features"] = int(X["train"][0].shape[1])
    out["repaired_lines"] = {s: data[s].repaired_lines for s in data}

    # base CRF: c2 on dev
    grid, models = {}, {}
    for c2 in C2_GRID:
        models[c2] = timed(out, f"fit_base_s_c2_{c2}", quiet, NonLocalCRF(c2=c2, max_iter=MAX_ITER, random_state=0).fit,
                           X["train"], y["train"])
        grid[c2] = seg_f1(y["dev"], models[c2].predict(X["dev"]))
        log(f"base CRF c2={c2}: dev {grid[c2]:.2f} ({models[c2].n_iter_} L-BFGS iterations)")
    c2 = max(grid, key=grid.get)
    base = models[c2]
    out.update(c2=c2, c2_dev=grid, base_n_iter=int(base.n_iter_), fit_base_s=out[f"fit_base_s_c2_{c2}"])
    y_enc = [np.searchsorted(base.classes_, v) for v in y["train"]]
    thetas = timed(out, "cross_fit_s", cross_fitted, base, X["train"], y_enc)

    # hand-written templates
    hand = timed(out, "fit_hand_psi_s", with_energy, base, HAND, thetas, X["train"], y_enc, **HAND_SETTINGS)
    out["hand_dev"] = seg_f1(y["dev"], hand.predict(X["dev"]))
    out["hand_psi"] = dict(zip(hand.energy_.term_names_, hand.psi_.tolist()))
    log(f"hand-written templates: dev {out['hand_dev']:.2f}")

    # learned family: min_support, psi_l1, learning rate on dev
    out["family_dev"], best = [], None
    families = {}
    for setting in FAMILY_GRID:
        ms = setting["min_support"]
        if ms not in families:
            families[ms] = ConstraintFamily(min_support=ms).fit(data["train"].labels)
        fam = families[ms]
        settings = {k: v for k, v in setting.items() if k != "min_support"}
        t0 = time.perf_counter()
        model = with_energy(base, fam.constraints_, thetas, X["train"], y_enc, **FAMILY_FIXED, **settings)
        f1 = seg_f1(y["dev"], model.predict(X["dev"]))
        row = dict(setting, n_candidates=len(fam.constraints_), n_kept=int(np.sum(model.psi_ > 0)), dev=f1,
                   seconds=time.perf_counter() - t0)
        out["family_dev"].append(row)
        log(f"learned family {setting}: dev {f1:.2f}, kept {row['n_kept']}/{row['n_candidates']}")
        if best is None or f1 > best[0]:
            best = (f1, setting, model, fam)
    _, setting, learned, fam = best
    out["family_choice"] = setting
    out["family_kinds"] = {k: fam.kinds_.count(k) for k in sorted(set(fam.kinds_))}
    out["kept"] = [(c.name, w) for c, w in kept_constraints(learned)]

    # sklearn-crfsuite: its own c2 on dev
    names = list(vec.get_feature_names_out())
    D = {s: crfsuite_dicts(X[s], names) for s in X}
    cs_grid, cs_models = {}, {}
    for c in C2_GRID:
        cs_models[c] = timed(out, f"fit_crfsuite_s_c2_{c}", fit_crfsuite, D["train"], y["train"], c)
        cs_grid[c] = seg_f1(y["dev"], [np.array(p) for p in cs_models[c].predict(D["dev"])])
        log(f"crfsuite c2={c}: dev {cs_grid[c]:.2f}")
    cs_c2 = max(cs_grid, key=cs_grid.get)
    out.update(crfsuite_c2=cs_c2, crfsuite_dev=cs_grid, fit_crfsuite_s=out[f"fit_crfsuite_s_c2_{cs_c2}"])

    # test, once
    yt = y["test"]
    res = learned.infer(X["test"])
    preds = {"base": base.predict(X["test"]), "hand": hand.predict(X["test"]), "learned": res.labels,
             "crfsuite": [np.array(p) for p in cs_models[cs_c2].predict(D["test"])]}
    out["test"] = {k: {"f1": seg_f1(yt, p), "fields": per_field(yt, p)} for k, p in preds.items()}
    out["n_iter"], out["converged"] = res.n_iter.tolist(), res.converged.tolist()
    out["cap_f1"] = {str(c): seg_f1(yt, learned.infer(X["test"], max_iter=c).labels) for c in CAPS}
    out["hand_n_iter"] = hand.infer(X["test"]).n_iter.tolist()
    log("test: " + ", ".join(f"{k} {v['f1']:.2f}" for k, v in out["test"].items()))
    return out


def run_learners(saved, log):
    """The perceptron psi learner (Anzaroot et al.) beside Algorithm 3, and the candidates' oracle ceiling.

    Same base CRF (``c2`` as chosen on dev in the main run), same cross-fitted marginals and
    the family of the main run's choice; the perceptron's step and L1 penalty on dev.
    """
    X, y, data, _ = load_features()
    out = {"c2": saved["c2"], "min_support": saved["family_choice"]["min_support"]}
    base = timed(out, "fit_base_s", quiet, NonLocalCRF(c2=saved["c2"], max_iter=MAX_ITER, random_state=0).fit,
                 X["train"], y["train"])
    y_enc = [np.searchsorted(base.classes_, v) for v in y["train"]]
    thetas = timed(out, "cross_fit_s", cross_fitted, base, X["train"], y_enc)
    out["base_dev"] = seg_f1(y["dev"], base.predict(X["dev"]))
    fam = ConstraintFamily(min_support=out["min_support"]).fit(data["train"].labels)
    out["perceptron_dev"], best = [], None
    for setting in PERCEPTRON_GRID:
        t0 = time.perf_counter()
        model = with_energy(base, fam.constraints_, thetas, X["train"], y_enc, **PERCEPTRON_FIXED, **setting)
        f1 = seg_f1(y["dev"], model.predict(X["dev"]))
        out["perceptron_dev"].append(dict(setting, dev=f1, n_kept=int(np.sum(model.psi_ > 0)),
                                          seconds=time.perf_counter() - t0))
        log(f"perceptron {setting}: dev {f1:.2f}, kept {out['perceptron_dev'][-1]['n_kept']}/{len(model.psi_)}")
        if best is None or f1 > best[0]:
            best = (f1, setting, model)
    _, out["perceptron_choice"], model = best
    res = model.infer(X["test"])
    out["perceptron_test"] = {"f1": seg_f1(y["test"], res.labels), "fields": per_field(y["test"], res.labels)}
    out["perceptron_n_iter"], out["perceptron_converged"] = res.n_iter.tolist(), res.converged.tolist()
    out["perceptron_kept"] = [(c.name, w) for c, w in kept_constraints(model)]
    energy = fit_energy(fam.constraints_, y_enc, base.classes_)
    out["ceiling"] = {f"{split} {w}": oracle_ceiling(base, energy, X[split], y[split], w)
                      for split in ("dev", "test") for w in CEILING_STRENGTHS}
    out["base_test"] = seg_f1(y["test"], base.predict(X["test"]))
    log(f"perceptron test {out['perceptron_test']['f1']:.2f}; ceilings {out['ceiling']}")
    return out


def run_in_sample(saved, log):
    """What one psi can do at most: the perceptron fitted on dev's own gold, scored on dev (in-sample)."""
    X, y, data, _ = load_features()
    base = quiet(NonLocalCRF(c2=saved["c2"], max_iter=MAX_ITER, random_state=0).fit, X["train"], y["train"])
    fam = ConstraintFamily(min_support=saved["family_choice"]["min_support"]).fit(data["train"].labels)
    y_dev = [np.searchsorted(base.classes_, v) for v in y["dev"]]
    theta = (base.coef_, base.intercept_, base.transition_)
    out = {"base_dev": seg_f1(y["dev"], base.predict(X["dev"])), "in_sample": []}
    for n_epochs in IN_SAMPLE_EPOCHS:
        settings = dict(PERCEPTRON_FIXED, psi_l1=0.0, learning_rate=3.0, n_epochs=n_epochs)
        model = with_energy(base, fam.constraints_, in_sample_thetas(theta, len(y_dev)), X["dev"], y_dev, **settings)
        out["in_sample"].append(dict(n_epochs=n_epochs, dev=seg_f1(y["dev"], model.predict(X["dev"]))))
        log(f"perceptron psi fitted on dev, scored on dev ({n_epochs} epochs): {out['in_sample'][-1]['dev']:.2f} "
            f"(base {out['base_dev']:.2f})")
    return out


# token patterns of the "conditional" candidates: feature columns of the vectorised token itself
PATTERNS = {"year-like token": ("year",), "pp./pages": ("w=pp", "w=pages", "pagerange"), "In": ("w=in",),
            "Proc": ("w=proc", "w=proceedings"), "et al": ("w=al",), "vol": ("w=vol", "w=volume"),
            "eds": ("w=ed", "w=eds", "w=editor", "w=editors"), "url": ("url",)}


class ColumnPattern:
    """Is any of the feature columns ``cols`` on at some token of the sequence."""

    def __init__(self, cols):
        self.cols = list(cols)

    def __call__(self, x):
        return bool(x[:, self.cols].sum() > 0) if self.cols else False


def family_variants(data, vec):
    names = {n: j for j, n in enumerate(vec.get_feature_names_out())}
    patterns = {p: ColumnPattern([names[c] for c in cols if c in names]) for p, cols in PATTERNS.items()}
    groups = hierarchy_groups(data["train"].paths)
    cond = ("count", "difference", "exclusive", "implies", "conditional")
    return {"leaf (Anzaroot et al.'s four kinds)": {}, "+ hierarchy": dict(groups=groups),
            "+ conditional": dict(kinds=cond, patterns=patterns),
            "+ hierarchy + conditional": dict(groups=groups, kinds=cond, patterns=patterns)}


def run_families(saved, log, only=None):
    """Each candidate kind's ceiling on dev: the oracle per-reference psi and one psi fitted on dev's gold.

    ``only``: the variants to run (their rows replace those of an earlier run's file)."""
    X, y, data, vec = load_features()
    ms = saved["family_choice"]["min_support"]
    base = quiet(NonLocalCRF(c2=saved["c2"], max_iter=MAX_ITER, random_state=0).fit, X["train"], y["train"])
    y_dev = [np.searchsorted(base.classes_, v) for v in y["dev"]]
    theta = (base.coef_, base.intercept_, base.transition_)
    fpath = RESULTS / "umass_table1_families.json"
    out = {"min_support": ms, "base_dev": seg_f1(y["dev"], base.predict(X["dev"])), "families": []}
    if only and fpath.exists():  # each row keeps the base of its own run (refits differ by ~0.1 on dev)
        old = json.loads(fpath.read_text())
        out["families"] = [dict(r, base_dev=r.get("base_dev", old["base_dev"])) for r in old["families"]
                           if r["family"] not in only]
    log(f"base dev {out['base_dev']:.2f}")
    for name, kw in family_variants(data, vec).items():
        if only and name not in only:
            continue
        fam = ConstraintFamily(min_support=ms, **kw).fit(data["train"].labels, X["train"])
        energy = fit_energy(fam.constraints_, y_dev, base.classes_)
        row = {"family": name, "n_candidates": len(fam.constraints_), "base_dev": out["base_dev"],
               "kinds": {k: fam.kinds_.count(k) for k in sorted(set(fam.kinds_))},
               "ceiling_dev": oracle_ceiling(base, energy, X["dev"], y["dev"], CEILING_STRENGTHS[0])}
        settings = dict(PERCEPTRON_FIXED, psi_l1=0.0, learning_rate=3.0, n_epochs=IN_SAMPLE_EPOCHS[0])
        model = with_energy(base, fam.constraints_, in_sample_thetas(theta, len(y_dev)), X["dev"], y_dev, **settings)
        row["in_sample_dev"] = seg_f1(y["dev"], model.predict(X["dev"]))
        row["in_sample_kept"] = [(c.name, w) for c, w in kept_constraints(model)][:30]
        out["families"].append(row)
        log(f"{name}: {row['n_candidates']} candidates {row['kinds']}, dev ceiling (psi {CEILING_STRENGTHS[0]}) "
            f"{row['ceiling_dev'][0] - out['base_dev']:+.2f}, in-sample {row['in_sample_dev'] - out['base_dev']:+.2f}")
        fpath.write_text(json.dumps(out))
    return out


def run_grobid(folds, choice, log, converge=False):
    """The UMass-dev choice of the learned family on GROBID folds (bench_citations' split and features)."""
    from sklearn.model_selection import KFold

    saved = {f["fold"]: f for f in json.loads(GROBID_C2.read_text())["folds"]}
    feats, y = bc.load()
    splits = list(KFold(5, shuffle=True, random_state=0).split(feats))
    rows = []
    for k in folds:
        train, test = splits[k]
        Xtr, Xte = bc.vectorize(feats, train, test)
        ytr, yte = [y[i] for i in train], [y[i] for i in test]
        c2 = saved[k]["c2_ours"]
        row = {"fold": k, "c2": c2}
        base = timed(row, "fit_base_s", quiet, NonLocalCRF(c2=c2, max_iter=None if converge else bc.CAPPED_MAX_ITER,
                                                             random_state=0).fit,
                     Xtr, ytr)
        row["base_n_iter"] = int(base.n_iter_)
        y_enc = [np.searchsorted(base.classes_, v) for v in ytr]
        thetas = timed(row, "cross_fit_s", cross_fitted, base, Xtr, y_enc)
        hand = with_energy(base, bc.TEMPLATES, thetas, Xtr, y_enc, **bc.PSI_SETTINGS)
        fam = ConstraintFamily(min_support=choice["min_support"], scheme="IO").fit([list(v) for v in ytr])
        settings = {k2: v for k2, v in choice.items() if k2 != "min_support"}
        learned = with_energy(base, fam.constraints_, thetas, Xtr, y_enc, **FAMILY_FIXED, **settings)
        row["n_candidates"], row["n_kept"] = len(fam.constraints_), int(np.sum(learned.psi_ > 0))
        row["kept"] = [(c.name, w) for c, w in kept_constraints(learned)]
        for name, model in (("base", base), ("hand", hand), ("learned", learned)):
            pred = model.predict(Xte)
            row[name] = {"f1": seg_f1(yte, pred, "IO"), "fields": per_field(yte, pred, "IO")}
        log(f"GROBID fold {k}: base {row['base']['f1']:.2f}, hand {row['hand']['f1']:.2f}, "
            f"learned {row['learned']['f1']:.2f} ({row['n_kept']}/{row['n_candidates']} kept)")
        rows.append(row)
    return rows


def report(out, grobid):
    t = out["test"]
    gain = t["learned"]["f1"] - t["base"]["f1"]
    L = ["# Table 1 on the paper's data: UMass citations, learned soft constraints (Vilnis et al. 2015)", "",
         f"UMass citation set: {out['sizes']['train'][0]} / {out['sizes']['dev'][0]} / {out['sizes']['test'][0]} "
         "references (training / dev / testing). Labels: leaf tags in BIO form; segment F1 by conlleval rules, "
         "micro over all fields. Every hyperparameter chosen on dev; testing used once. Machine: 2 cores shared "
         f"with five other jobs; whole run {out['elapsed'] / 60:.1f} min.", "",
         "| model | test segment F1 | paper |", "|---|---:|---:|",
         f"| base CRF (ours, c2={out['c2']}) | {t['base']['f1']:.2f} | 94.47 (Anzaroot et al.'s base: 94.41) |",
         f"| + hand-written templates ({len(HAND)}) | {t['hand']['f1']:.2f} | |",
         f"| + learned constraints ({sum(out['family_kinds'].values())} candidates, "
         f"{len(out['kept'])} kept) | {t['learned']['f1']:.2f} | 95.47 (Soft-DD: 95.39) |",
         f"| sklearn-crfsuite, same features (c2={out['crfsuite_c2']}) | {t['crfsuite']['f1']:.2f} | |", "",
         f"Learned constraints over our base CRF: **{gain:+.2f}** (paper +1.00; goal >= +1.0: "
         f"{'met' if gain >= 1.0 else 'NOT met'}). Base CRF vs the paper's 94.47: {t['base']['f1'] - 94.47:+.2f} "
         f"(goal within 1 point: {'met' if abs(t['base']['f1'] - 94.47) <= 1 else 'NOT met'}).", ""]
    L += ["Per field (test segment F1):", "", "| field | base | hand | learned | crfsuite |", "|---|---:|---:|---:|---:|"]
    for f in REPORT_FIELDS:
        vals = [t[k]["fields"].get(f) for k in ("base", "hand", "learned", "crfsuite")]
        if vals[0] is not None:
            L.append(f"| {f} | " + " | ".join(f"{v:.2f}" for v in vals) + " |")
    it, conv = np.array(out["n_iter"]), np.array(out["converged"])
    L += ["", f"Figure 2 (learned model, test, cap 40): {100 * conv.mean():.1f}% converged (paper 93.7%), "
          f"mean {it.mean():.1f} iterations (paper 9.8), median {np.median(it):.0f}; hand-written templates: mean "
          f"{np.mean(out['hand_n_iter']):.1f}.", "",
          "Figure 1 (test segment F1 against the cap on inference iterations): "
          + ", ".join(f"{c}: {out['cap_f1'][str(c)]:.2f}" for c in CAPS) + ".", ""]
    L += ["Choices on dev:", "",
          f"- base CRF c2: " + ", ".join(f"{c}: {v:.2f}" for c, v in out["c2_dev"].items()) + f" -> {out['c2']};",
          f"- sklearn-crfsuite c2: " + ", ".join(f"{c}: {v:.2f}" for c, v in out["crfsuite_dev"].items())
          + f" -> {out['crfsuite_c2']};",
          f"- hand-written templates: dev {out['hand_dev']:.2f} (Algorithm 3 {HAND_SETTINGS});",
          f"- learned family ({FAMILY_FIXED}): "
          + "; ".join(f"min_support {r['min_support']}, psi_l1 {r['psi_l1']}, step {r['learning_rate']}: "
                      f"{r['dev']:.2f} ({r['n_kept']}/{r['n_candidates']} kept)" for r in out["family_dev"])
          + f" -> {out['family_choice']}.", "",
          f"Candidate kinds of the chosen family: {out['family_kinds']}. Kept constraints, largest psi first: "
          + "; ".join(f"`{n}` {w:.2f}" for n, w in out["kept"][:40]) + ("; ..." if len(out["kept"]) > 40 else "") + ".",
          ""]
    pp_path = RESULTS / "umass_table1_paper.json"
    if pp_path.exists() and "test" in json.loads(pp_path.read_text()):
        L += pp.paper_protocol_report(json.loads(pp_path.read_text()))
    if grobid:
        g = {k: np.array([r[k]["f1"] for r in grobid]) for k in ("base", "hand", "learned")}
        gg = g["learned"] - g["base"]
        L += ["## GROBID citations (held back from all development of the family)", "",
              f"Folds {[r['fold'] for r in grobid]} of `bench_citations.py`'s 5-fold split, its features and each "
              "fold's c2; the learned family with the settings chosen on UMass dev, no tuning on GROBID.", "",
              "| model | segment F1 (mean over folds) | per fold |", "|---|---:|---|"]
        for k, label in (("base", "base CRF"), ("hand", "+ 18 hand-written templates"), ("learned", "+ learned constraints")):
            L.append(f"| {label} | {g[k].mean():.2f} | {', '.join(f'{v:.2f}' for v in g[k])} |")
        L += ["", f"Learned over base: {gg.mean():+.2f} (per fold {', '.join(f'{v:+.2f}' for v in gg)}; "
              f"goal >= +0.5: {'met' if gg.mean() >= 0.5 else 'NOT met'}). Kept on fold {grobid[0]['fold']}: "
              + "; ".join(f"`{n}` {w:.2f}" for n, w in grobid[0]["kept"][:20]) + ".", ""]
    ppath = RESULTS / "umass_table1_grobid_perceptron.json"
    if ppath.exists():
        L += grobid_perceptron_report(json.loads(ppath.read_text()))
    cpath = RESULTS / "umass_table1_grobid_converged.json"
    if cpath.exists():
        L += grobid_converged_report(json.loads(cpath.read_text()))
    if gc.PATH.exists():
        L += gc.report(json.loads(gc.PATH.read_text()))
    lpath = RESULTS / "umass_table1_learners.json"
    if lpath.exists():
        L += learners_report(json.loads(lpath.read_text()), t)
    if ug.PATH.exists():
        L += ug.report(json.loads(ug.PATH.read_text()),
                       json.loads(ug.GROBID_PATH.read_text()) if ug.GROBID_PATH.exists() else None)
    if ug.PAPER_PATH.exists() and "test" in json.loads(ug.PAPER_PATH.read_text()):
        L += ug.paper_report(json.loads(ug.PAPER_PATH.read_text()))
    if us.PATH.exists():
        L += us.report(json.loads(us.PATH.read_text()))
    fpath = RESULTS / "umass_table1_families.json"
    if fpath.exists():
        L += families_report(json.loads(fpath.read_text()))
    L += ["Script: `benchmarks/bench_umass_table1.py`; numbers: `umass_table1.json`."]
    (RESULTS / "umass_table1.md").write_text("\n".join(L) + "\n")
    print("\n".join(L))
    plot(out)


def _fold_scores(rows):
    """Per-fold F1 of the base, hand-written and learned models, and the learned gain over the base."""
    g = {k: np.array([r[k]["f1"] for r in rows]) for k in ("base", "hand", "learned")}
    return g, g["learned"] - g["base"]


def grobid_perceptron_report(rows):
    """GROBID folds with psi by the perceptron (the UMass-dev setting, no tuning on GROBID)."""
    g, gain = _fold_scores(rows)
    return [f"GROBID, psi by the perceptron ({rows[0]['family_setting']}), folds {[r['fold'] for r in rows]}: "
            f"base {g['base'].mean():.2f}, hand-written {g['hand'].mean():.2f}, learned {g['learned'].mean():.2f} "
            f"= {gain.mean():+.2f} over base (per fold {', '.join(f'{v:+.2f}' for v in gain)}; goal >= +0.5: "
            f"{'met' if gain.mean() >= 0.5 else 'NOT met'}). These folds ran with the current L-BFGS, whose base CRF at "
            "bench_citations' cap of 100 iterations is 1.4 points below the earlier one (fold 0: 81.69 vs 83.06) and "
            "far from converged (to CRFsuite's stop, 784 iterations: 86.17): each gain is over its own run's base.",
            ""]


def grobid_converged_report(rows):
    """GROBID folds with every base CRF run to CRFsuite's stop (``--to-convergence``)."""
    g, gain = _fold_scores(rows)
    return [f"GROBID with the base CRFs run to CRFsuite's stop (`--to-convergence`; "
            f"{', '.join(str(r['base_n_iter']) for r in rows)} L-BFGS iterations), folds {[r['fold'] for r in rows]}, "
            f"the UMass-dev family setting {rows[0]['family_setting']}: base {g['base'].mean():.2f}, hand-written "
            f"{g['hand'].mean():.2f} ({(g['hand'] - g['base']).mean():+.2f}), learned {g['learned'].mean():.2f} "
            f"({gain.mean():+.2f}; goal >= +0.5: {'met' if gain.mean() >= 0.5 else 'NOT met'}).", ""]


def learners_report(lr, t):
    """The ``--learners`` section: the perceptron psi learner and the candidates' oracle ceiling."""
    pt = lr["perceptron_test"]["f1"]
    ceil = lr["ceiling"]
    L = ["## What limits the learned family: the perceptron learner and the candidates' ceiling", "",
         f"A second run (`--learners`): the base CRF refitted at c2={lr['c2']} (test {lr['base_test']:.2f}, dev "
         f"{lr['base_dev']:.2f}), the family at min_support {lr['min_support']}, psi by Anzaroot et al.'s "
         "structured perceptron (`psi_gradient=\"perceptron\"`: decode at the current psi, step by the "
         "violations of the prediction minus the gold's, L1 prox, averaged), its step and L1 on dev: "
         + "; ".join(f"psi_l1 {r['psi_l1']}, step {r['learning_rate']}: {r['dev']:.2f} ({r['n_kept']} kept)"
                     for r in lr["perceptron_dev"]) + f" -> {lr['perceptron_choice']}.", "",
         "| model | test segment F1 | over base |", "|---|---:|---:|",
         f"| learned family, Algorithm 3 (main run) | {t['learned']['f1']:.2f} | {t['learned']['f1'] - t['base']['f1']:+.2f} |",
         f"| learned family, perceptron | {pt:.2f} | {pt - lr['base_test']:+.2f} |"]
    for key, (f1, conv) in ceil.items():
        split, w = key.split()
        base = lr["base_dev"] if split == "dev" else lr["base_test"]
        L.append(f"| oracle ceiling on {split}: each reference keeps the candidates its gold satisfies, psi={w} "
                 f"({100 * conv:.0f}% converged) | {f1:.2f} | {f1 - base:+.2f} |")
        if split == "dev":
            L[-1] = L[-1].replace(f"| {f1:.2f} |", f"| (dev) {f1:.2f} |")
    if "in_sample" in lr:
        ins = lr["in_sample"]
        L.append(f"| one psi fitted on dev's own gold by the perceptron, scored on dev (in-sample; base dev "
                 f"{ins['base_dev']:.2f}) | (dev) " + " / ".join(f"{r['dev']:.2f}" for r in ins["in_sample"])
                 + f" ({' / '.join(str(r['n_epochs']) for r in ins['in_sample'])} epochs) | "
                 + " / ".join(f"{r['dev'] - ins['base_dev']:+.2f}" for r in ins["in_sample"]) + " |")
    it = np.array(lr["perceptron_n_iter"])
    L += ["", f"Inference at the perceptron's psi (test, cap 40): {100 * np.mean(lr['perceptron_converged']):.1f}% "
          f"converged, mean {it.mean():.1f} iterations, median {np.median(it):.0f}. Kept by the perceptron, largest "
          "first: " + "; ".join(f"`{n}` {w:.2f}" for n, w in lr["perceptron_kept"][:12]) + "; ..."]
    share = ""
    if "in_sample" in lr:
        best_in = max(r["dev"] for r in lr["in_sample"]["in_sample"]) - lr["in_sample"]["base_dev"]
        dev_ceil = ceil[f"dev {CEILING_STRENGTHS[0]}"][0] - lr["base_dev"]
        share = (f"; one psi vector fitted on the very references it is scored on gets {best_in:+.2f} of the dev "
                 f"ceiling's {dev_ceil:+.2f} (its own training set), so a held-out psi over this family will hardly reach +1.0: the "
                 "candidates, not the learner, are the limit")
    L += ["", "The ceiling is an oracle one psi vector over these candidates can hardly pass (not a strict bound: "
          "its weights are one fixed strength): it knows, per "
          "reference, which rules the truth keeps (a diagnostic that reads the gold, not a model)" + share + ". On test the "
          "+1.0 goal is all of the ceiling at psi=3 and 70% of it at psi=10; both learners reach a third of it. "
          "The two runs' base CRFs differ (same c2, both stopped at the cap of "
          f"{MAX_ITER} L-BFGS iterations): the main run predates ChainCRF's L-BFGS in NonLocalCRF; each gain is "
          "over its own run's base.", ""]
    return L


def families_report(fam):
    """The ``--families`` section: dev ceilings of the hierarchical and input-dependent candidate kinds."""
    L = ["## New candidate kinds: hierarchical groups and input-dependent counts (dev ceilings)", "",
         f"`--families`: the base CRF refitted (its dev F1 per row: refits differ by ~0.1), the family at min_support {fam['min_support']} with "
         "the new kinds added; for each, the oracle ceiling on dev (each reference keeps the candidates its gold "
         f"satisfies, psi={CEILING_STRENGTHS[0]}) and one psi fitted by the perceptron on dev's own gold and scored "
         f"there (in-sample, {IN_SAMPLE_EPOCHS[0]} epochs, step 3, no L1): what one psi vector can do at most. "
         "Hierarchy: `hierarchy_groups` of the training paths (authors, person, date, venue; a leaf joins a "
         "parent holding >= 90% of its tokens), each group one more field counted as runs of its members. "
         "Conditional: `#f >= k` / `#f <= k` where a token pattern is present or absent (" + ", ".join(PATTERNS)
         + "), tighter than f's count bounds.", "",
         "| family | candidates | base dev | dev ceiling (oracle) | one psi, in-sample dev |", "|---|---|---:|---:|---:|"]
    order = ["leaf (Anzaroot et al.'s four kinds)", "+ hierarchy", "+ conditional", "+ hierarchy + conditional"]
    for r in sorted(fam["families"], key=lambda r: order.index(r["family"]) if r["family"] in order else 99):
        b = r.get("base_dev", fam["base_dev"])
        kinds = ", ".join(f"{k} {n}" for k, n in r["kinds"].items())
        L.append(f"| {r['family']} | {r['n_candidates']} ({kinds}) | {b:.2f} | {r['ceiling_dev'][0]:.2f} "
                 f"({r['ceiling_dev'][0] - b:+.2f}) | {r['in_sample_dev']:.2f} ({r['in_sample_dev'] - b:+.2f}) |")
    L += ["", "Neither kind raises what one psi can do (the in-sample column; +1.0 would be needed there before a "
          "held-out psi could reach +1.0 on test): the hierarchy adds <= 0.1 to the oracle ceiling and the "
          "conditional counts nothing; both stay opt-in (`ConstraintFamily(groups=..., patterns=...)`), outside the "
          "main run's family, and testing was not run with them. The errors left (author names labelled title, "
          "boundary shifts) seem to need evidence at the token, not rules over a reference's counts.", ""]
    return L


def plot(out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    ax[0].plot(CAPS, [out["cap_f1"][str(c)] for c in CAPS], marker="o", label="learned constraints")
    ax[0].axhline(out["test"]["base"]["f1"], color="gray", ls="--", label="base CRF")
    ax[0].set_xlabel("cap on Bethe-RDA iterations")
    ax[0].set_ylabel("test segment F1 (%)")
    ax[0].set_title("Figure 1 (UMass): F1 vs inference cap")
    ax[0].legend()
    ax[1].hist(out["n_iter"], bins=np.arange(0, 42, 1), label="Algorithm 3's psi")
    lpath = RESULTS / "umass_table1_learners.json"
    if lpath.exists():
        ax[1].hist(json.loads(lpath.read_text())["perceptron_n_iter"], bins=np.arange(0, 42, 1), histtype="step",
                   color="k", label="perceptron's psi")
    ax[1].legend()
    ax[1].set_xlabel("iterations to converge (cap 40)")
    ax[1].set_ylabel("test references")
    ax[1].set_title("Figure 2 (UMass): iterations to converge")
    fig.tight_layout()
    fig.savefig(RESULTS / "umass_table1.png", dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grobid", type=int, nargs="*", help="GROBID folds for the learned family (after UMass)")
    parser.add_argument("--choice", help="with --grobid before the UMass run has finished: the family setting "
                        "as JSON, e.g. chosen on UMass dev in an exploration")
    parser.add_argument("--learners", action="store_true", help="after the main run: the perceptron psi "
                        "learner on its base CRF and the candidates' oracle ceiling (umass_table1_learners.json)")
    parser.add_argument("--to-convergence", action="store_true", help="with --grobid: base CRFs to CRFsuite's "
                        "stop instead of bench_citations' cap (umass_table1_grobid[_perceptron]_converged.json)")
    parser.add_argument("--grobid-ceiling", type=int, nargs="*", help="GROBID folds, base CRFs to convergence: "
                        "the learned family beside its oracle and in-sample ceilings (umass_table1_grobid_ceiling.json)")
    parser.add_argument("--in-sample", action="store_true", help="after --learners: the perceptron's psi fitted "
                        "on dev and scored on dev, the most one psi vector over the family can do")
    parser.add_argument("--families", nargs="*", help="after the main run: the dev ceilings of the hierarchical "
                        "and input-dependent candidate kinds (umass_table1_families.json); names: only those variants")
    parser.add_argument("--paper-protocol", action="store_true", help="after the main run: the paper's protocol, "
                        "psi (and theta) by Algorithm 3 on dev, settings by CV inside dev (umass_table1_paper.json)")
    parser.add_argument("--lexicons", nargs="*", help="name-lexicon features in the base CRF, dev only "
                        "(umass_table1_lexicons_dev.json); steps: base errors ceilings family coverage (default all), or report; "
                        "'control': the same steps without lexicons (umass_table1_lexicons_control_dev.json)")
    parser.add_argument("--test", action="store_true", help="with --lexicons: the pickled lexicon models chosen "
                        "on dev, scored on testing once (umass_table1_lexicons_test.json)")
    parser.add_argument("--cache", default="/tmp/umass_lexicons", help="with --lexicons: pickles of the fitted models")
    ug.add_arguments(parser)
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    numba.set_num_threads(1)
    RESULTS.mkdir(exist_ok=True)
    path, gpath = RESULTS / "umass_table1.json", RESULTS / "umass_table1_grobid.json"
    lpath = RESULTS / "umass_table1_learners.json"
    start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - start:7.0f}s] {msg}", flush=True)

    if args.lexicons is not None:
        if args.test:
            lx.run_test(json.loads(lx.DEV_PATH.read_text()), log, args.cache)
        elif args.lexicons != ["report"]:
            steps = [s for s in args.lexicons if s != "control"]
            lx.run_dev(log, args.cache, *([tuple(steps)] if steps else []), control="control" in args.lexicons)
        lx.report(json.loads(lx.DEV_PATH.read_text()),
                  json.loads(lx.TEST_PATH.read_text()) if lx.TEST_PATH.exists() else None)
        return
    if ug.run_requested(args, json.loads(path.read_text()) if path.exists() else None, log):
        args.report_only = True
    if args.grobid_ceiling:
        gc.run(args.grobid_ceiling, log)
        args.report_only = True
    if args.families is not None:
        run_families(json.loads(path.read_text()), log, args.families)
        args.report_only = True
    if args.paper_protocol:
        res = pp.run_paper_protocol(json.loads(path.read_text()), log)
        res["elapsed"] = time.perf_counter() - start
        pp.PATH.write_text(json.dumps(res))
        args.report_only = True
    if args.learners:
        lpath.write_text(json.dumps(run_learners(json.loads(path.read_text()), log)))
        args.report_only = True
    if args.in_sample:
        learners = json.loads(lpath.read_text())
        learners["in_sample"] = run_in_sample(json.loads(path.read_text()), log)
        lpath.write_text(json.dumps(learners))
        args.report_only = True
    if args.report_only:
        report(json.loads(path.read_text()), json.loads(gpath.read_text()) if gpath.exists() else None)
        return
    if args.grobid:
        choice = json.loads(args.choice) if args.choice else json.loads(path.read_text())["family_choice"]
        if choice.get("psi_gradient") == "perceptron":  # beside Algorithm 3's folds, not over them
            gpath = RESULTS / "umass_table1_grobid_perceptron.json"
        if args.to_convergence:
            gpath = gpath.with_name(gpath.stem + "_converged.json")
        grobid = run_grobid(args.grobid, choice, log, converge=args.to_convergence)
        for row in grobid:
            row["family_setting"] = choice
        if gpath.exists():  # keep the folds of earlier runs with the same setting
            done = {r["fold"] for r in grobid}
            grobid += [r for r in json.loads(gpath.read_text()) if r.get("family_setting") == choice
                       and r["fold"] not in done]
            grobid.sort(key=lambda r: r["fold"])
        gpath.write_text(json.dumps(grobid))
        if path.exists():
            main_g = RESULTS / "umass_table1_grobid.json"
            report(json.loads(path.read_text()), json.loads(main_g.read_text()) if main_g.exists() else None)
        return
    out = run_umass({"python": platform.python_version()}, log)
    out["elapsed"] = time.perf_counter() - start
    path.write_text(json.dumps(out))
    report(out, json.loads(gpath.read_text()) if gpath.exists() else None)


if __name__ == "__main__":
    main()
