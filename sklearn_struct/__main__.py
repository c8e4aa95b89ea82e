"""Quick tour: fit every estimator on generated data next to a plain scikit-learn baseline.

Run ``python -m sklearn_struct``. Each entry generates a held-out task with a seeded
generator from :mod:`sklearn_struct.datasets`, fits our estimator and the baseline a
scikit-learn user would otherwise pick, and prints one table.
"""

import sys
import time

import numpy as np
from sklearn.linear_model import LogisticRegression


def _timed_fit(estimator, X, y):
    start = time.perf_counter()
    estimator.fit(X, y)
    return time.perf_counter() - start


def _warm_up(estimator, X, y):
    """Compile (or load from numba's cache) the kernels on a tiny fit, so 'fit s' is the fit alone."""
    from sklearn.base import clone

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
    import warnings

    from sklearn_struct import ChainCRF, NonLocalCRF
    from sklearn_struct.energies import WordDictionaryEnergy

    rng = np.random.RandomState(0)
    words = [rng.randint(0, 4, size=6) for _ in range(12)]
    y = [words[i % 12] for i in range(480)]
    X = [np.eye(4)[w] + rng.normal(scale=1.1, size=(6, 4)) for w in y]
    X_tr, y_tr, X_te, y_te = X[:320], y[:320], X[320:], y[320:]
    model = NonLocalCRF(WordDictionaryEnergy(), c2=1.0, n_epochs=2, random_state=0)
    base = ChainCRF(c2=1.0)
    with warnings.catch_warnings():  # the 3-word warm-up fit cannot converge
        warnings.simplefilter("ignore")
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
    """Pairwise multi-label model (DLPW) vs independent logistic regressions, on coupled labels."""
    from sklearn.multioutput import MultiOutputClassifier

    from sklearn_struct import DLPWClassifier
    from sklearn_struct.datasets import make_multilabel_pairwise

    X, Y = make_multilabel_pairwise(1000, n_features=8, n_labels=6, edge_strength=2.5, noise=0.2, random_state=1)
    X_tr, Y_tr, X_te, Y_te = X[:500], Y[:500], X[500:], Y[500:]
    dlpw = DLPWClassifier(C=100.0, tol=0)
    _warm_up(dlpw, X_tr, Y_tr)
    t_dlpw = _timed_fit(dlpw, X_tr, Y_tr)
    br = MultiOutputClassifier(LogisticRegression())
    t_br = _timed_fit(br, X_tr, Y_tr)
    return [
        ("DLPWClassifier", "multi-label, subset accuracy", dlpw.score(X_te, Y_te), t_dlpw),
        ("  baseline: MultiOutput(LogReg)", "multi-label, subset accuracy", br.score(X_te, Y_te), t_br),
    ]


def tour_mle_struct():
    """Matching weights by Bethe MLE (MLEStructMatcher) vs pairwise logistic regression + assignment."""
    import warnings

    from scipy.optimize import linear_sum_assignment
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_struct import MLEStructMatcher
    from sklearn_struct.datasets import make_matchings
    from sklearn_struct.metrics import matching_error

    X, y = make_matchings(n_samples=80, n_nodes=10, n_features=6, noise=0.8, random_state=0)
    X_tr, y_tr, X_te, y_te = X[:60], y[:60], X[60:], y[60:]
    model = MLEStructMatcher(alpha=0.1, max_iter=50, random_state=0)
    with warnings.catch_warnings():  # 50 passes are plenty for the MAP matching; the gap is still > tol
        warnings.simplefilter("ignore", ConvergenceWarning)
        _warm_up(model, X_tr, y_tr)
        t_model = _timed_fit(model, X_tr, y_tr)
    pairs = np.vstack([x.reshape(-1, x.shape[2]) for x in X_tr])
    is_match = np.concatenate([np.eye(x.shape[1])[a].ravel() for x, a in zip(X_tr, y_tr)])
    logreg = LogisticRegression(max_iter=1000)
    t_lr = _timed_fit(logreg, pairs, is_match)
    pred = [linear_sum_assignment(-logreg.decision_function(x.reshape(-1, x.shape[2])).reshape(x.shape[:2]))[1] for x in X_te]
    return [
        ("MLEStructMatcher (Bethe MLE)", "bipartite matching, node accuracy", model.score(X_te, y_te), t_model),
        ("  baseline: LogisticRegression", "pairwise + assignment, node accuracy", 1 - matching_error(y_te, pred), t_lr),
    ]


def tour_gp_struct():
    """Structured GP (gray-box variational, block L-BFGS) on sampled chains vs per-token logistic regression."""
    from sklearn_struct import GPStructClassifier
    from sklearn_struct.datasets import make_chain_data

    X, y = make_chain_data(150, n_labels=3, n_features=5, transition_scale=3.0, random_state=0)
    X_tr, y_tr, X_te, y_te = X[:100], y[:100], X[100:], y[100:]
    gp = GPStructClassifier(optimizer="lbfgs", n_inducing=15, n_samples=30, block_iters=(10, 5, 0), max_iter=1,
                            random_state=0)
    t_gp = _timed_fit(gp, X_tr, y_tr)
    return [("GPStructClassifier (gp-var-b)", "chain labelling, token accuracy", gp.score(X_te, y_te), t_gp),
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


def main(out=sys.stdout):
    rows = []
    start = time.perf_counter()
    for entry in TOUR:
        rows.extend(entry())
    total = time.perf_counter() - start
    header = ("estimator", "task", "score", "fit s")
    widths = [max(len(str(r[i])) if i < 2 else 8 for r in rows + [header]) for i in range(4)]
    line = "  ".join(f"{{:<{w}}}" for w in widths[:2]) + "  {:>8}  {:>8}"
    print(line.format(*header), file=out)
    print("-" * (sum(widths) + 6), file=out)
    for name, task, score, seconds in rows:
        print(line.format(name, task, f"{score:.4f}", f"{seconds:.2f}"), file=out)
    print(f"(whole tour {total:.1f} s, including numba's one-time compilation on a fresh install)", file=out)
    return rows


if __name__ == "__main__":
    main()
