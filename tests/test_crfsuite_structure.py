"""The structure extensions of sklearn_struct.crfsuite.CRF: allowed transitions, fixed tokens, partial
labels, n-best lists, sequence log-probabilities."""

import numpy as np
import pytest

from sklearn_struct.crfsuite import CRF


def _data(n, seed, noise=1.5):
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        seq, prev = [], "O"
        for _ in range(rng.randint(1, 7)):
            lab = "I-" + prev[2:] if prev[0] in "BI" and rng.rand() < 0.5 else ["B-NP", "O", "B-VP"][rng.randint(3)]
            seq.append(lab)
            prev = lab
        Y.append(seq)
        X.append([{"w": lab if rng.rand() > 0.3 else "noise", "x": float(rng.randn() * noise)} for lab in seq])
    return X, Y


def _invalid(predictions):
    count = 0
    for p in predictions:
        prev = "O"
        for lab in p:
            count += lab.startswith("I-") and not (prev[0] in "BI" and prev[2:] == lab[2:])
            prev = lab
    return count


def _wild(n, seed):
    rng = np.random.RandomState(seed)
    names = ["B-NP", "I-NP", "O", "B-VP", "I-VP"]
    return [[{"w": names[rng.randint(5)]} for _ in range(rng.randint(0, 7))] for _ in range(n)]


def test_bio_scheme_topk_log_proba_and_fixed(tmp_path):
    X, Y = _data(120, 0)
    Xt = _wild(200, 1)
    plain = CRF(c2=0.1).fit(X, Y)
    assert _invalid(plain.predict(Xt)) > 0
    path = tmp_path / "bio.npz"
    crf = CRF(c2=0.1, allowed_transitions="BIO", model_filename=str(path)).fit(X, Y)
    assert _invalid(crf.predict(Xt)) == 0
    assert _invalid([crf.predict_single(x) for x in Xt]) == 0
    assert CRF(allowed_transitions="BIO", model_filename=str(path)).predict(Xt) == crf.predict(Xt)
    y_topk, log_proba = crf.predict_topk(Xt, 3)
    for x, cands, lp, best in zip(Xt, y_topk, log_proba, crf.predict(Xt)):
        assert cands[0] == best and _invalid(cands) == 0
        if x:
            np.testing.assert_allclose(crf.sequence_log_proba([x] * len(cands), cands), lp, atol=1e-9)
    # without a structure, sequence_log_proba is the tagger's probability
    x, y = X[0], Y[0]
    plain.tagger_.set(x)
    assert np.isclose(np.exp(plain.sequence_log_proba([x], [y])[0]), plain.tagger_.probability(y))
    fixed = [[None] * len(x) for x in Xt]
    first = next(i for i, x in enumerate(Xt) if len(x) >= 2)
    fixed[first][1] = "B-VP"
    pred = crf.predict(Xt, fixed=fixed)
    assert pred[first][1] == "B-VP"
    marg = crf.predict_marginals(Xt, fixed=fixed)
    assert marg[first][1]["B-VP"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="no label sequence"):
        fixed[first][:2] = ["O", "I-NP"]
        crf.predict(Xt, fixed=fixed)


def test_partial_labels():
    X, Y = _data(150, 2)
    rng = np.random.RandomState(0)
    hidden = [[v if rng.rand() < 0.6 else None for v in y] for y in Y]
    hidden[0][0] = {"B-NP", "O"}
    crf = CRF(c2=0.1, allowed_transitions="BIO").fit(X, hidden)
    assert sorted(crf.classes_) == sorted({v for y in Y for v in y})
    Xt, Yt = _data(100, 3)
    full = CRF(c2=0.1, allowed_transitions="BIO").fit(X, Y)
    assert crf.score(Xt, Yt) > 0.8 * full.score(Xt, Yt)
    with pytest.raises(ValueError, match="cannot train on partial labels"):
        CRF(algorithm="ap").fit(X, hidden)
