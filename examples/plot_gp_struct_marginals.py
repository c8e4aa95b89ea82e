"""
Label marginals of a structured Gaussian process along a sentence
=================================================================

:class:`sklearn_struct.GPStructClassifier` puts one Gaussian-process prior per label on the
unary functions of a linear-chain model and learns a sparse variational posterior by gray-box
inference (Galliani et al. 2017): the chain likelihood is only evaluated, through
forward-backward, never differentiated (by default the variational means start at the sparse
MAP solution, the one place its gradients are used, and the kernel amplitude is chosen by
cross-validation on the training sentences). The fit stops by its ELBO rule. Its marginals average forward-backward over posterior
samples, so they carry the posterior's uncertainty.

We train on 50 sentences of the CRF++ base-NP task with the task's own CRF++ template
(:class:`sklearn_struct.preprocessing.CRFppTemplateFeaturizer`), the training size of the
paper's Table 1, and show the label marginals of a test sentence beside the gold tags (white
boxes) and those of :class:`sklearn_struct.ChainCRF` trained on the same features.
Needs the data (``SKLEARN_STRUCT_DATA``).
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from sklearn_struct import ChainCRF, GPStructClassifier
from sklearn_struct.datasets import load_crfpp
from sklearn_struct.preprocessing import CRFppTemplateFeaturizer

# %%
# The model
# ---------
# Fit on the training data, then predict and score on the test data.

train, test = load_crfpp("basenp", "train"), load_crfpp("basenp", "test")
feat = CRFppTemplateFeaturizer(train.template)
X_train = feat.fit_transform(train.sequences[:50])
y_train = train.labels[:50]
X_test = feat.transform(test.sequences)

gp = GPStructClassifier(random_state=0).fit(X_train, y_train)
crf = ChainCRF(c2=1.0).fit(X_train, y_train)
print(f"token accuracy on the test sentences: GP-struct {gp.score(X_test, test.labels):.4f}, "
      f"chain CRF {crf.score(X_test, test.labels):.4f}")

# %%
k = 1
words = [tok[0] for tok in test.sequences[k]][:25]
gold = test.labels[k][:25]
fig, axes = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True)
for ax, (name, model) in zip(axes, [("GP-struct (gp-var-b)", gp), ("chain CRF", crf)]):
    marg = model.predict_marginals([X_test[k]])[0][:25]
    classes = list(model.classes_)
    ax.imshow(marg.T, aspect="auto", cmap="magma", vmin=0, vmax=1)
    for t, label in enumerate(gold):
        if label in classes:
            ax.add_patch(plt.Rectangle((t - 0.5, classes.index(label) - 0.5), 1, 1, fill=False, ec="w", lw=1.2))
    ax.set_yticks(range(len(classes)), classes, fontsize=7)
    ax.set_title(f"{name}: label marginals (white: gold tag)")
axes[1].set_xticks(range(len(words)), words, rotation=60, fontsize=8)
fig.tight_layout()
fig.savefig("plot_gp_struct_marginals.png", dpi=100)
