"""
Chain CRF versus per-token logistic regression
==============================================

Sequences are sampled exactly from a random linear-chain CRF
(:func:`sklearn_struct.datasets.make_chain_data`), so the generating model is the
best possible predictor. We fit :class:`sklearn_struct.NonLocalCRF` (with no
non-local energy it is a plain chain CRF) and scikit-learn's
``LogisticRegression`` on the individual tokens, for growing training sets, and
plot held-out token accuracy next to the accuracy of the true model.

The CRF closes the gap to the true model; logistic regression cannot, because
it ignores the transitions between neighbouring labels.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from sklearn_struct import NonLocalCRF
from sklearn_struct.datasets import make_chain_data
from sklearn_struct.oracles.chain import viterbi
from sklearn_struct.utils import pack_sequences

X, y, truth = make_chain_data(2500, n_labels=5, n_features=8, transition_scale=2.0, return_params=True, random_state=0)
X_test, y_test = X[2000:], y[2000:]
packed, offsets = pack_sequences(X_test)
best, _ = viterbi(packed @ truth.coef, truth.transition, offsets)
bayes = np.mean(best == np.concatenate(y_test))

sizes = [25, 50, 100, 200, 500, 1000, 2000]
crf_acc, lr_acc = [], []
for n in sizes:
    crf = NonLocalCRF(c2=0.1).fit(X[:n], y[:n])
    crf_acc.append(crf.score(X_test, y_test))
    lr = LogisticRegression(max_iter=1000).fit(np.vstack(X[:n]), np.concatenate(y[:n]))
    lr_acc.append(lr.score(packed, np.concatenate(y_test)))
    print(f"n={n:5d}  CRF {crf_acc[-1]:.3f}  logistic regression {lr_acc[-1]:.3f}  true model {bayes:.3f}")

fig, ax = plt.subplots(figsize=(6, 4))
ax.semilogx(sizes, crf_acc, "o-", label="NonLocalCRF (chain CRF)")
ax.semilogx(sizes, lr_acc, "s-", label="LogisticRegression per token")
ax.axhline(bayes, color="k", linestyle="--", label="true generating CRF")
ax.set_xlabel("training sequences")
ax.set_ylabel("held-out token accuracy")
ax.legend()
fig.tight_layout()
fig.savefig("plot_chain_crf.png", dpi=100)
