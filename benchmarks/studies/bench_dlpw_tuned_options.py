"""What tuned DLPW lacks against label powerset on yeast: the options, by CV on training data only (issue 36).

Tuned on yeast's test split, label powerset (multinomial ``LogisticRegression`` over the training
label sets) leads DLPW's subset accuracy (``results/dlpw_multilabel``). This study asks which of
DLPW's options closes the gap, without reading any test split: for yeast and scene (MULAN's
*training* parts), standardised features, 3-fold CV (shuffled, seed 0) subset accuracy of each
configuration at each C of a short grid, and label powerset over its own grid on the same folds (and label powerset with a hinge loss: a
Crammer-Singer ``LinearSVC`` over the label sets, to separate what its free weights per set give from
what its logistic loss gives; and DLPW's own model, its per-set scores tied to per-label and per-pair
weights, trained with the logistic loss over the training label sets, with and without a free
intercept per set: what DLPW's hinge costs; and the same plus a free weight vector per label set, a
model that contains label powerset: whether the pairwise terms add anything to it).
A configuration's score is its best C's (what a user who tunes C gets); the last column is the mean
over the two sets of (best CV score / the best label powerset CV score of that set).

Run: ``python benchmarks/studies/bench_dlpw_tuned_options.py [--only NAME] [--report-only [--check]]`` (writes
results/dlpw_tuned_options.{md,json}; rows cached, a rerun fits only the missing ones; the md is rendered from
the json only).
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.metrics import make_scorer  # noqa: E402
from sklearn.model_selection import KFold, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402
from scipy.optimize import minimize  # noqa: E402
from scipy.special import logsumexp, softmax  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.dlpw_baselines import LabelPowerset  # noqa: E402
from _lib.report import add_report_only, finish, load_json, parse_args, save_json, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from sklearn_struct import DLPWClassifier  # noqa: E402
from sklearn_struct.datasets import load_scene, load_yeast  # noqa: E402
from sklearn_struct.metrics import subset_accuracy  # noqa: E402

RESULTS = results_dir("dlpw_tuned_options")
JSON = RESULTS / "dlpw_tuned_options.json"
NAMES = ("yeast", "scene")
CV = KFold(3, shuffle=True, random_state=0)
SUBSET = make_scorer(subset_accuracy)
GRID = [3e-4, 1e-3, 3e-3, 1e-2]
EF_GRID = [1e-4, 3e-4, 1e-3]  # edge features: small C won on yeast's tree; larger C costs most (2 shared cores)


class SetSVM(LabelPowerset):
    """Label powerset with a multi-class hinge (Crammer-Singer ``LinearSVC``) instead of the logistic loss:
    separates what label powerset gains from its free weights per label set from what it gains from its loss."""

    def fit(self, X, y):
        self.sets_, codes = np.unique(np.asarray(y), axis=0, return_inverse=True)
        self._const, self.classes_ = False, np.array([0, 1])
        self.clf_ = LinearSVC(C=self.C, multi_class="crammer_singer", max_iter=self.max_iter).fit(X, codes.ravel())
        return self


class PairwiseSetCRF(LabelPowerset):
    """DLPW's model (unary weights per label and state, a weight vector per edge and pair of states, complete
    graph) over the training label sets, trained with the *logistic* loss instead of the hinge: label powerset
    whose per-set weight vectors are tied to sums of per-label and per-pair ones (``W @ M.T``, ``M`` the sets'
    incidence). L-BFGS on ``sum_n logloss_n + ||W||^2 / (2 C)``. ``set_bias``: plus a free intercept per set.
    ``set_weights`` > 0: plus a free weight vector per set (a model that contains label powerset), its columns
    scaled by ``set_weights`` (so they are regularised as if by ``C * set_weights**2``)."""

    def __init__(self, C=1.0, max_iter=500, set_bias=False, set_weights=0.0):
        super().__init__(C=C, max_iter=max_iter)
        self.set_bias = set_bias
        self.set_weights = set_weights

    def fit(self, X, y):
        Y = np.asarray(y)
        self.sets_, codes = np.unique(Y, axis=0, return_inverse=True)
        codes, L, K = codes.ravel(), Y.shape[1], len(self.sets_)
        self._const, self.classes_ = False, np.array([0, 1])
        i, j = np.triu_indices(L, 1)
        M = np.zeros((K, 2 * L + 4 * len(i)))
        M[np.repeat(np.arange(K), L), (2 * np.arange(L) + self.sets_).ravel()] = 1.0
        pair = 2 * L + 4 * np.arange(len(i))[None, :] + 2 * self.sets_[:, i] + self.sets_[:, j]
        M[np.repeat(np.arange(K), len(i)), pair.ravel()] = 1.0
        mask = np.ones((X.shape[1] + 1, M.shape[1]))
        if self.set_bias:
            M = np.hstack([M, np.eye(K)])
            mask = np.hstack([mask, np.zeros((mask.shape[0], K))])
            mask[-1, -K:] = 1.0  # the intercept row only
        if self.set_weights:
            M = np.hstack([M, self.set_weights * np.eye(K)])
            mask = np.hstack([mask, np.ones((mask.shape[0], K))])
        Xa, n = np.hstack([X, np.ones((len(X), 1))]), len(X)

        def f(w):
            W = w.reshape(mask.shape) * mask
            Z = Xa @ W @ M.T
            G = softmax(Z, axis=1)
            val = float(np.sum(logsumexp(Z, axis=1) - Z[np.arange(n), codes])) + 0.5 / self.C * float(np.vdot(W, W))
            G[np.arange(n), codes] -= 1.0
            return val, ((Xa.T @ G @ M + W / self.C) * mask).ravel()

        res = minimize(f, np.zeros(mask.size), jac=True, method="L-BFGS-B", options={"maxiter": self.max_iter})
        self.W_, self.M_ = res.x.reshape(mask.shape) * mask, M
        return self

    def predict(self, X):
        return self.sets_[np.argmax(np.hstack([X, np.ones((len(X), 1))]) @ self.W_ @ self.M_.T, axis=1)]


# name -> (factory(C), grid)
CONFIGS = {
    "LP (LogReg)": (lambda C: LabelPowerset(C=C), [0.01, 0.1, 1.0]),
    "LP with a hinge (LinearSVC, Crammer-Singer)": (lambda C: SetSVM(C=C, max_iter=5000), [1e-3, 1e-2, 0.1]),
    "DLPW's model with edge features, logistic loss (L-BFGS)": (lambda C: PairwiseSetCRF(C=C), [3e-4, 1e-3, 1e-2]),
    "the same, plus a free intercept per label set": (lambda C: PairwiseSetCRF(C=C, set_bias=True), [1e-3, 1e-2]),
    "the same, plus a free weight vector per label set (contains LP; set weights' C x9)":
        (lambda C: PairwiseSetCRF(C=C, set_weights=3.0), [1e-4, 3e-4, 1e-3]),
    "the same, set weights' C x100":
        (lambda C: PairwiseSetCRF(C=C, set_weights=10.0), [3e-5, 1e-4, 3e-4]),
    "DLPW (defaults: complete graph, Hamming loss)": (lambda C: DLPWClassifier(C=C), GRID),
    "DLPW, loss='subset'": (lambda C: DLPWClassifier(C=C, loss="subset"), GRID),
    "DLPW, edges='tree'": (lambda C: DLPWClassifier(C=C, edges="tree"), GRID),
    "DLPW, edges='tree', edge_features": (lambda C: DLPWClassifier(C=C, edges="tree", edge_features=True),
                                          sorted(set(GRID) | set(EF_GRID))),
    "DLPW, edge_features (complete graph)": (lambda C: DLPWClassifier(C=C, edge_features=True), [3e-5] + EF_GRID),
    "DLPW, edge_features, loss='subset'": (lambda C: DLPWClassifier(C=C, edge_features=True, loss="subset"),
                                           EF_GRID),
}


def data_sets():
    return {name: ((d := fn("train")).data, d.target) for name, fn in zip(NAMES, (load_yeast, load_scene))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="fit only the configurations whose name contains this")
    add_report_only(parser)
    args = parse_args(parser)
    if not args.report_only:
        run(load_json(JSON) if JSON.exists() else {}, args.only)
    write_md(load_json(JSON))
    return finish()


def run(store, only=None):
    """Fit the missing rows of ``store`` (cached in the json after each)."""
    for name, (X, Y) in data_sets().items():
        for cfg, (factory, grid) in CONFIGS.items():
            if only and only not in cfg:
                continue
            for C in grid:
                key = f"{name}|{cfg}|{C:g}"
                if key in store:
                    continue
                start = time.process_time()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", ConvergenceWarning)
                    cv = cross_val_score(make_pipeline(StandardScaler(), factory(C)), X, Y, scoring=SUBSET, cv=CV)
                store[key] = {"cv": float(cv.mean()), "cpu_s": time.process_time() - start,
                              "convergence_warnings": sum(issubclass(w.category, ConvergenceWarning) for w in caught)}
                print(key, store[key], flush=True)
                save_json(JSON, store)
    return store


def write_md(store):
    """The md from the saved results ``store`` only."""
    names = NAMES
    lines = ["# What tuned DLPW lacks against label powerset: 3-fold CV on the training parts only", "",
             "Standardised features; CV subset accuracy (shuffled folds, seed 0) at each C; *best*: the best C's "
             "score (what tuning C gives); *vs LP*: best / label powerset's best, mean over the sets. CPU: the "
             "whole column of CV fits.", "",
             "| configuration | " + " | ".join(f"{n}: CV subset acc by C | {n}: best" for n in names) + " | vs LP |",
             "|---|" + "---|---|" * len(names) + "---|"]
    lp_best = {n: max((v["cv"] for k, v in store.items() if k.startswith(f"{n}|LP (LogReg)|")), default=np.nan)
               for n in names}
    for cfg, (_, grid) in CONFIGS.items():
        cells, ratios = [], []
        for n in names:
            vals = {C: store.get(f"{n}|{cfg}|{C:g}", {}).get("cv") for C in grid}
            got = {C: v for C, v in vals.items() if v is not None}
            cells.append(", ".join(f"{C:g}: {v:.4f}" for C, v in got.items()) or "not run")
            best = max(got.values()) if got else np.nan
            cells.append(f"{best:.4f}")
            ratios.append(best / lp_best[n])
        lines.append(f"| {cfg} | " + " | ".join(cells) + f" | {np.mean(ratios):.3f} |")
    write_text(RESULTS / "dlpw_tuned_options.md", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
