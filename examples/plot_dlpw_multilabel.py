"""
Multi-label classification with label interactions: DLPW on yeast
=================================================================

:class:`sklearn_struct.DLPWClassifier` learns a pairwise model over all 14 labels of the yeast
gene-function data (Elisseeff & Weston 2001, from MULAN): unary weights per label and a 2x2
table per label pair, trained by Meshi et al.'s dual-loss Algorithm 1 (LP relaxation, star
message updates warm-started between visits, Pegasos steps on the weights).

Left: the training objective (eq. 7, the LP-relaxed structured hinge) against training time,
with the cheap eq. 9 bound that Algorithm 1 maintains. Right: test Hamming loss and subset
accuracy beside scikit-learn's ``MultiOutputClassifier`` and ``ClassifierChain``. The objective
against Pegasos with an exact LP and a cutting-plane SVM is in
``benchmarks/results/dlpw_figure1.md``. Needs the data (``SKLEARN_STRUCT_DATA``).
"""

import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.multioutput import ClassifierChain, MultiOutputClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_struct import DLPWClassifier
from sklearn_struct.datasets import load_yeast
from sklearn_struct.metrics import hamming_loss_multilabel, subset_accuracy

train, test = load_yeast("train"), load_yeast("test")
models = {
    "DLPW (pairwise)": make_pipeline(StandardScaler(), DLPWClassifier(C=1.0, max_epochs=15, track_objective=True,
                                                                     random_state=0)),
    "MultiOutput(LogReg)": make_pipeline(StandardScaler(), MultiOutputClassifier(LogisticRegression(max_iter=500))),
    "ClassifierChain(LogReg)": make_pipeline(StandardScaler(), ClassifierChain(LogisticRegression(max_iter=500),
                                                                               random_state=0)),
}
scores = {}
for name, model in models.items():
    with warnings.catch_warnings():  # 15 epochs on purpose: the curve flattens well before
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(train.data, train.target)
    pred = model.predict(test.data).astype(int)
    scores[name] = (hamming_loss_multilabel(test.target, pred), subset_accuracy(test.target, pred))
    print(f"{name:26s} Hamming {scores[name][0]:.4f}  subset accuracy {scores[name][1]:.4f}")

# %%
curve = models["DLPW (pairwise)"][-1].objective_curve_
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 3.8))
ax0.plot(curve[:, 1], curve[:, 3], "o-", label="eq. 7 objective (exact LP)")
ax0.plot(curve[:, 1], curve[:, 2], "s--", label="eq. 9 bound (kept messages)")
ax0.set(xlabel="training time (s)", ylabel="objective", title="DLPW on yeast (train)")
ax0.legend()
names = list(scores)
x = np.arange(len(names))
ax1.bar(x - 0.2, [scores[n][0] for n in names], 0.4, label="Hamming loss (lower is better)")
ax1.bar(x + 0.2, [scores[n][1] for n in names], 0.4, label="subset accuracy (higher is better)")
ax1.set_xticks(x, names, fontsize=8)
ax1.set(title="yeast test set", ylim=(0, 0.32))
ax1.legend(fontsize=8, loc="upper center", ncol=2)
fig.tight_layout()
fig.savefig("plot_dlpw_multilabel.png", dpi=100)
