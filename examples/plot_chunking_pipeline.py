"""
From token feature dicts to chunks with a Pipeline, tuned by GridSearchCV
=========================================================================

sklearn-crfsuite users describe every token by a dict of features. Here the same dicts go
through :class:`sklearn_struct.preprocessing.SequenceVectorizer` into a
:class:`sklearn_struct.ChainCRF`, as one scikit-learn ``Pipeline``; ``GridSearchCV`` picks the
regularisation ``c2`` by chunk F1 on cross-validation folds of the training part only, and the
tuned pipeline is scored on CoNLL-2000's official test sentences.

To stay under a minute the example trains on 1,000 of the 8,936 training sentences, with L-BFGS
capped at 40 iterations; the full
set gives 93.1 chunk F1 (``benchmarks/peers/bench_conll_crfsuite.py``). Needs the data
(``SKLEARN_STRUCT_DATA`` pointing at the shared data folder).
"""

import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline

from sklearn_struct import ChainCRF
from sklearn_struct.datasets import load_conll2000
from sklearn_struct.metrics import SCORERS, chunk_f1_score
from sklearn_struct.preprocessing import SequenceVectorizer


def token_dicts(sentence):
    """crfsuite-style features of each token: the word, its suffix, its POS and its neighbours'."""
    feats = []
    for i, tok in enumerate(sentence):
        f = {"w": tok["word"].lower(), "suf3": tok["word"][-3:], "pos": tok["pos"],
             "title": tok["word"].istitle()}
        for d in (-1, 1):
            j = i + d
            f[f"pos{d:+d}"] = sentence[j]["pos"] if 0 <= j < len(sentence) else "BOUND"
            f[f"w{d:+d}"] = sentence[j]["word"].lower() if 0 <= j < len(sentence) else "BOUND"
        feats.append(f)
    return feats


# %%
# The model
# ---------
# Fit on the training data, then predict and score on the test data.

train, test = load_conll2000("train"), load_conll2000("test")
X_train = [token_dicts(s) for s in train.sequences[:1000]]
y_train = train.labels[:1000]
X_test = [token_dicts(s) for s in test.sequences]

pipe = make_pipeline(SequenceVectorizer(), ChainCRF(max_iter=40, tol=1e-4))
search = GridSearchCV(pipe, {"chaincrf__c2": [0.03, 0.3, 3.0]}, scoring=SCORERS["chunk_f1"],
                      cv=KFold(3, shuffle=True, random_state=0))
with warnings.catch_warnings():  # the 40-iteration cap is deliberate here
    warnings.simplefilter("ignore", ConvergenceWarning)
    search.fit(X_train, y_train)
f1 = chunk_f1_score(test.labels, search.predict(X_test))
print(f"best c2 = {search.best_params_['chaincrf__c2']}, test chunk F1 = {100 * f1:.2f}")

# %%
# Cross-validated F1 against ``c2``, and one test sentence with its predicted chunk tags.
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [1, 2]})
c2s = np.array(search.cv_results_["param_chaincrf__c2"], dtype=float)
ax0.errorbar(c2s, 100 * search.cv_results_["mean_test_score"], yerr=100 * search.cv_results_["std_test_score"],
             marker="o", capsize=3)
ax0.set(xscale="log", xlabel="c2", ylabel="CV chunk F1 (%)", title="GridSearchCV on 1,000 sentences")
sent, gold = test.sequences[3], test.labels[3]
pred = search.predict([X_test[3]])[0]
for i, (tok, g, p) in enumerate(zip(sent, gold, pred)):
    colour = "tab:green" if g == p else "tab:red"
    ax1.text(i, 1.0, tok["word"], rotation=60, ha="left", va="bottom", fontsize=8)
    ax1.text(i, 0.5, p, rotation=60, ha="left", va="bottom", fontsize=7, color=colour)
ax1.set(xlim=(-0.5, len(sent)), ylim=(0.3, 2.2), title=f"test sentence: predicted tags (test F1 {100 * f1:.1f})")
ax1.axis("off")
fig.tight_layout()
fig.savefig("plot_chunking_pipeline.png", dpi=100)
