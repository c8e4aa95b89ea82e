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


def tour_nonlocal_crf():
    """Chain CRF on sequences sampled from a random CRF vs per-token logistic regression."""
    from sklearn_struct import NonLocalCRF
    from sklearn_struct.datasets import make_chain_data

    X, y = make_chain_data(600, n_labels=5, n_features=8, transition_scale=2.0, random_state=0)
    X_tr, y_tr, X_te, y_te = X[:400], y[:400], X[400:], y[400:]
    crf = NonLocalCRF(c2=0.1)
    _warm_up(crf, X_tr, y_tr)
    t_crf = _timed_fit(crf, X_tr, y_tr)
    logreg = LogisticRegression(max_iter=1000)
    t_lr = _timed_fit(logreg, np.vstack(X_tr), np.concatenate(y_tr))
    acc_lr = logreg.score(np.vstack(X_te), np.concatenate(y_te))
    return [
        ("NonLocalCRF (chain CRF)", "chain labelling, token accuracy", crf.score(X_te, y_te), t_crf),
        ("  baseline: LogisticRegression", "per-token, token accuracy", acc_lr, t_lr),
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


TOUR = [tour_nonlocal_crf, tour_pruned_bp, tour_parser]


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
