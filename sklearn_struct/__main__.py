"""Quick tour: fit every estimator on generated data next to a plain scikit-learn baseline.

Run ``python -m sklearn_struct``. Each entry generates a held-out task where the structure
matters (transitions, label couplings, one-to-one matching, trees), fits our estimator and
the baseline a scikit-learn user would otherwise pick, and prints its rows as they finish.
``fit s`` is the fit alone (numba kernels are compiled, or loaded from numba's cache, by a
small warm-up fit first); the closing line gives the whole tour's wall and CPU time,
compilation included.
"""

import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression


def _timed_fit(estimator, X, y):
    start = time.perf_counter()
    estimator.fit(X, y)
    return time.perf_counter() - start


def _warm_up(estimator, X, y):
    """Compile (or load from numba's cache) the kernels on a tiny fit, so 'fit s' is the fit alone.

    Three samples are too few to converge on: the warm-up's warnings are not the fit's.
    """
    import warnings

    from sklearn.base import clone

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _timed_fit(clone(estimator), X[:3], y[:3])


def _token_logreg_row(X_tr, y_tr, X_te, y_te):
    """The per-token logistic-regression baseline of a chain task: its table row."""
    logreg = LogisticRegression(max_iter=1000)
    t_lr = _timed_fit(logreg, np.vstack(X_tr), np.concatenate(y_tr))
    acc_lr = logreg.score(np.vstack(X_te), np.concatenate(y_te))
    return ("  baseline: LogisticRegression", "per-token, token accuracy", acc_lr, t_lr)


def tour_chain_crf():
    """Chain CRF on sequences sampled from a random CRF vs per-token logistic regression."""
    from sklearn_struct import ChainCRF
    from sklearn_struct.datasets import make_chain_data

    X, y = make_chain_data(600, n_labels=5, n_features=8, transition_scale=2.0, random_state=0)
    X_tr, y_tr, X_te, y_te = X[:400], y[:400], X[400:], y[400:]
    crf = ChainCRF(c2=0.1)
    _warm_up(crf, X_tr, y_tr)
    t_crf = _timed_fit(crf, X_tr, y_tr)
    return [("ChainCRF", "chain labelling, token accuracy", crf.score(X_te, y_te), t_crf),
            _token_logreg_row(X_tr, y_tr, X_te, y_te)]


def tour_nonlocal_crf():
    """Noisy spellings of a 12-word dictionary: chain CRF + learned word-dictionary energy vs the chain CRF."""
    from sklearn_struct import ChainCRF, NonLocalCRF
    from sklearn_struct.energies import WordDictionaryEnergy

    rng = np.random.RandomState(0)
    words = [rng.randint(0, 4, size=6) for _ in range(12)]
    y = [words[i % 12] for i in range(480)]
    X = [np.eye(4)[w] + rng.normal(scale=1.1, size=(6, 4)) for w in y]
    X_tr, y_tr, X_te, y_te = X[:320], y[:320], X[320:], y[320:]
    model = NonLocalCRF(WordDictionaryEnergy(), c2=1.0, n_epochs=2, random_state=0)
    base = ChainCRF(c2=1.0)
    _warm_up(model, X_tr, y_tr)
    t_model, t_base = _timed_fit(model, X_tr, y_tr), _timed_fit(base, X_tr, y_tr)
    return [
        ("NonLocalCRF (word dictionary)", "dictionary words, token accuracy", model.score(X_te, y_te), t_model),
        ("  baseline: ChainCRF", "dictionary words, token accuracy", base.score(X_te, y_te), t_base),
    ]


def tour_pruned_bp():
    """Grid CRF denoiser (MinJoint-pruned loopy BP) vs per-pixel logistic regression."""
    from sklearn_struct import PrunedBPMarginals
    from sklearn_struct.datasets import make_ising_grid
    from sklearn_struct.utils.graph import images_to_graphs

    shape = (24, 24)
    train_img, train_lab = make_ising_grid(n_noisy=3, shape=shape, noise=1.0, random_state=0)
    test_img, test_lab = make_ising_grid(n_noisy=2, shape=shape, noise=1.0, random_state=1)
    X_tr, X_te = images_to_graphs(train_img), images_to_graphs(test_img)
    y_tr, y_te = list(train_lab.reshape(len(train_lab), -1)), list(test_lab.reshape(len(test_lab), -1))
    model = PrunedBPMarginals(objective="min_joint", gamma=0.01)
    _warm_up(model, X_tr, y_tr)
    t_model = _timed_fit(model, X_tr, y_tr)
    logreg = LogisticRegression()
    t_lr = _timed_fit(logreg, np.vstack([g[0] for g in X_tr]), np.concatenate(y_tr))
    acc_lr = logreg.score(np.vstack([g[0] for g in X_te]), np.concatenate(y_te))
    return [
        ("PrunedBPMarginals (MinJoint)", "grid denoising, pixel accuracy", model.score(X_te, y_te), t_model),
        ("  baseline: LogisticRegression", "per-pixel, pixel accuracy", acc_lr, t_lr),
    ]


def tour_dlpw():
    """Pairwise multi-label model (DLPW, C chosen by cross-validation on the training part) vs independent
    logistic regressions, on coupled labels."""
    from sklearn.multioutput import MultiOutputClassifier

    from sklearn_struct import DLPWClassifierCV
    from sklearn_struct.datasets import make_multilabel_pairwise

    X, Y = make_multilabel_pairwise(1000, n_features=8, n_labels=6, edge_strength=2.5, noise=0.2, random_state=1)
    X_tr, Y_tr, X_te, Y_te = X[:500], Y[:500], X[500:], Y[500:]
    dlpw = DLPWClassifierCV()  # C by 3-fold CV: the default C suits standardised real data, not these
    _warm_up(dlpw, X_tr, Y_tr)
    t_dlpw = _timed_fit(dlpw, X_tr, Y_tr)
    br = MultiOutputClassifier(LogisticRegression())
    t_br = _timed_fit(br, X_tr, Y_tr)
    return [
        ("DLPWClassifierCV", "multi-label, subset accuracy", dlpw.score(X_te, Y_te), t_dlpw),
        ("  baseline: MultiOutput(LogReg)", "multi-label, subset accuracy", br.score(X_te, Y_te), t_br),
    ]


def _offset_matchings(n_samples, n_nodes, rng, offset=3.0):
    """Matchings whose best feature carries a large offset per left node and per right node.

    Feature 0 is ``[j = y_i] + a_i + b_j + noise`` (e.g. a per-image exposure); feature 1 is a weaker,
    offset-free ``[j = y_i] + noise``; feature 2 is noise. A one-to-one matching is unchanged by
    per-row and per-column offsets, so a model fitted on whole matchings can rely on feature 0; a
    classifier of single pairs sees the offsets as noise and leans on feature 1.
    """
    X, y = [], []
    for _ in range(n_samples):
        perm = rng.permutation(n_nodes)
        match = np.eye(n_nodes)[perm]
        shift = offset * (rng.normal(size=(n_nodes, 1)) + rng.normal(size=(1, n_nodes)))
        X.append(np.stack([match + shift + 0.3 * rng.normal(size=match.shape), match + rng.normal(size=match.shape),
                           rng.normal(size=match.shape)], axis=2))
        y.append(perm)
    return X, y


def tour_mle_struct():
    """Matching weights by Bethe MLE (MLEStructMatcher) vs pairwise logistic regression + assignment."""
    from scipy.optimize import linear_sum_assignment

    from sklearn_struct import MLEStructMatcher
    from sklearn_struct.metrics import matching_error

    rng = np.random.default_rng(0)
    X_tr, y_tr = _offset_matchings(40, 10, rng)
    X_te, y_te = _offset_matchings(40, 10, rng)
    model = MLEStructMatcher(alpha=0.1, random_state=0)
    _warm_up(model, X_tr, y_tr)
    t_model = _timed_fit(model, X_tr, y_tr)
    pairs = np.vstack([x.reshape(-1, x.shape[2]) for x in X_tr])
    is_match = np.concatenate([np.eye(x.shape[1])[a].ravel() for x, a in zip(X_tr, y_tr)])
    logreg = LogisticRegression(max_iter=1000)
    t_lr = _timed_fit(logreg, pairs, is_match)
    pred = [linear_sum_assignment(-logreg.decision_function(x.reshape(-1, x.shape[2])).reshape(x.shape[:2]))[1]
            for x in X_te]
    return [
        ("MLEStructMatcher (Bethe MLE)", "matching with offsets, node accuracy", model.score(X_te, y_te), t_model),
        ("  baseline: LogisticRegression", "pairwise + assignment, node accuracy", 1 - matching_error(y_te, pred),
         t_lr),
    ]


def tour_gp_struct():
    """Structured GP on few labelled sequences with strong transitions vs per-token logistic regression."""
    from sklearn_struct import GPStructClassifier
    from sklearn_struct.datasets import make_chain_data

    X, y = make_chain_data(140, n_labels=3, n_features=5, unary_scale=0.5, transition_scale=4.0, random_state=0)
    X_tr, y_tr, X_te, y_te = X[:40], y[:40], X[40:], y[40:]
    gp = GPStructClassifier(optimizer="lbfgs", n_inducing=15, n_samples=30, block_iters=(20, 20, 0), max_iter=3,
                            random_state=0)
    _warm_up(gp, X_tr, y_tr)
    t_gp = _timed_fit(gp, X_tr, y_tr)
    return [("GPStructClassifier (gp-var-b)", "40 labelled chains, token accuracy", gp.score(X_te, y_te), t_gp),
            _token_logreg_row(X_tr, y_tr, X_te, y_te)]


def tour_parser():
    """Second-order dependency parser (MinJoint-pruned BP) vs per-word head-offset logistic regression."""
    from sklearn.feature_extraction import DictVectorizer

    from sklearn_struct import DependencyParserBP
    from sklearn_struct.datasets import make_dependency_treebank

    X_tr, y_tr = make_dependency_treebank(150, random_state=0)
    X_te, y_te = make_dependency_treebank(100, random_state=1)
    parser = DependencyParserBP(projective=True, objective="min_joint", gamma=0.01, max_iter=3, n_hash_bits=16,
                                random_state=0)
    _warm_up(parser, X_tr, y_tr)
    t_parser = _timed_fit(parser, X_tr, y_tr)

    def word_rows(X):  # word, POS and the POS of the two words on each side
        rows = []
        for sent in X:
            tags = ["<s>", "<s>"] + [w["upos"] for w in sent] + ["</s>", "</s>"]
            for i, w in enumerate(sent):
                rows.append({"w": w["form"], "p": w["upos"], "p-2": tags[i], "p-1": tags[i + 1],
                             "p+1": tags[i + 3], "p+2": tags[i + 4]})
        return rows

    offsets = np.concatenate([np.where(h == 0, 0, h - np.arange(1, len(h) + 1)) for h in y_tr])
    vec = DictVectorizer()
    logreg = LogisticRegression(max_iter=1000)
    t_lr = _timed_fit(logreg, vec.fit_transform(word_rows(X_tr)), offsets)
    pred = logreg.predict(vec.transform(word_rows(X_te)))
    gold = np.concatenate([np.where(h == 0, 0, h - np.arange(1, len(h) + 1)) for h in y_te])
    return [
        ("DependencyParserBP (MinJoint)", "dependency parsing, UAS", parser.score(X_te, y_te), t_parser),
        ("  baseline: LogisticRegression", "per-word head offset, UAS", float(np.mean(pred == gold)), t_lr),
    ]


TOUR = [tour_chain_crf, tour_nonlocal_crf, tour_pruned_bp, tour_dlpw, tour_mle_struct, tour_gp_struct, tour_parser]


def _numba_cache_is_empty():
    """True when no kernel of the package has been compiled into numba's cache yet (a fresh install)."""
    import numba

    from sklearn_struct import oracles

    where = [Path(numba.config.CACHE_DIR)] if numba.config.CACHE_DIR else [Path(oracles.__file__).parent]
    return not any(any(w.rglob("*.nbi")) for w in where if w.exists())


def main(out=sys.stdout):
    """Run the tour, printing each row as soon as it is measured; returns the rows."""
    widths = (31, 38)
    line = "{:<%d}  {:<%d}  {:>8}  {:>8}" % widths
    if _numba_cache_is_empty():
        print("First run: numba compiles the kernels as they are first used (about a minute, once; they are "
              "cached for later runs).", file=out)
    print(line.format("estimator", "task", "score", "fit s"), file=out)
    print("-" * (sum(widths) + 22), file=out, flush=True)
    rows = []
    wall, cpu = time.perf_counter(), time.process_time()
    for entry in TOUR:
        for name, task, score, seconds in entry():
            rows.append((name, task, score, seconds))
            print(line.format(name, task, f"{score:.4f}", f"{seconds:.2f}"), file=out, flush=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"(whole tour: {wall:.1f} s wall, {cpu:.1f} s CPU, including data generation, the warm-up fits and "
          "numba's compilation or cache loading; 'fit s' is the fit alone)", file=out)
    return rows


if __name__ == "__main__":
    main()
