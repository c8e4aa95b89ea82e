"""
Multi-label classification with label interactions: DLPW on yeast
=================================================================

:class:`sklearn_struct.DLPWClassifier` learns a pairwise model over all 14 labels of the yeast
gene-function data (Elisseeff & Weston 2001, from MULAN): unary weights per label and a 2x2
table per label pair, trained by Meshi et al.'s dual-loss Algorithm 1 (LP relaxation, star
message updates warm-started between visits, Pegasos steps on the weights).

Left: the training objective (eq. 7, the LP-relaxed structured hinge) against training time,
with the cheap eq. 9 bound that Algorithm 1 maintains (``track_objective=True`` records both;
evaluation time is left out of the clock). Right: test Hamming loss and subset accuracy beside
scikit-learn's ``MultiOutputClassifier`` and ``ClassifierChain``. The paper's Figure 1, the same
objective against Pegasos with an exact LP and a cutting-plane SVM, is the benchmark
``benchmarks/papers/bench_dlpw_figure1.py`` (results in ``benchmarks/results/dlpw_figure1/``).
Needs the data (``SKLEARN_STRUCT_DATA``).
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

# %%
# The model
# ---------
# Fit on the training data, then predict and score on the test data.

train, test = load_yeast("train"), load_yeast("test")
C_PAPER = 1.0  # the paper's C, on the mean loss; DLPWClassifier's C (scikit-learn's, on the summed loss) is C / n
models = {
    "DLPW (pairwise)": make_pipeline(StandardScaler(), DLPWClassifier(C=C_PAPER / len(train.target), max_epochs=15,
                                                                     track_objective=True, random_state=0)),
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
# The training curve: ``objective_curve_`` holds, per epoch, the epoch, the training seconds, the eq. 9
# bound and the exact eq. 7 objective (recorded because of ``track_objective=True``).
curve = models["DLPW (pairwise)"][-1].objective_curve_
print(f"eq. 7 objective {curve[-1, 3]:.4f} after {curve[-1, 1]:.1f} s of training "
      f"(eq. 9 bound {curve[-1, 2]:.4f})")

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 3.8))
ax0.plot(curve[:, 1], curve[:, 3], "o-", label="DLPW: eq. 7 objective")
ax0.plot(curve[:, 1], curve[:, 2], "s--", label="DLPW: eq. 9 bound (kept messages)")
ax0.set(xlabel="training time (s)", ylabel="objective", title="yeast (train), paper's C = 1 (C = 1/n)", yscale="log")
ax0.legend(fontsize=8)
names = list(scores)
x = np.arange(len(names))
ax1.bar(x - 0.2, [scores[n][0] for n in names], 0.4, label="Hamming loss (lower is better)")
ax1.bar(x + 0.2, [scores[n][1] for n in names], 0.4, label="subset accuracy (higher is better)")
ax1.set_xticks(x, names, fontsize=8)
ax1.set(title="yeast test set", ylim=(0, 0.32))
ax1.legend(fontsize=8, loc="upper center", ncol=2)
fig.tight_layout()
fig.savefig("plot_dlpw_multilabel.png", dpi=100)
