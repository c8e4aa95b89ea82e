"""
Dependency link marginals from belief propagation with a tree factor
====================================================================

:class:`sklearn_struct.DependencyParserBP` is a second-order dependency parser in the style of
Smith & Eisner (2008): one binary variable per possible link, a combinatorial factor that
forces the links to form a tree (matrix-tree theorem, computed for all links at once), and
pairwise factors between a link and its grandparent link. Loopy BP gives the link marginals;
with ``objective="min_joint"`` it first keeps only the pairwise factors whose gain from the
tree-factor seed is large (Riedel et al. 2010), a small fraction of them.

We train on 400 sentences of the English EWT treebank (Universal Dependencies, CC BY-SA 4.0),
then show, for a test sentence, the link marginals ``P(head of word m is h)`` under full BP and
under MinJoint pruning, with the gold heads as white boxes. Needs the data (``SKLEARN_STRUCT_DATA``).
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sklearn_struct import DependencyParserBP
from sklearn_struct.datasets import load_ud

# %%
# The model
# ---------
# Fit on the training data, then predict and score on the test data.

train, test = load_ud("english", "dev"), load_ud("english", "test")
parser = DependencyParserBP(projective=True, max_iter=2, random_state=0)
parser.fit(train.sentences[:400], train.heads[:400])
short = [i for i, s in enumerate(test.sentences[:300]) if 9 <= len(s) <= 13]
X, y = [test.sentences[i] for i in short], [test.heads[i] for i in short]
full_uas = parser.score(X, y)
parser.set_params(objective="min_joint", gamma=0.01)  # inference settings: the fitted weights stay
print(f"UAS on {len(X)} short test sentences: full BP {full_uas:.3f}, MinJoint {parser.score(X, y):.3f}")

# %%
k = next(i for i, s in enumerate(X) if s[0]["form"].isalpha() and s[-1]["form"] == ".")
words = ["ROOT"] + [tok["form"] for tok in X[k]]
fig, axes = plt.subplots(1, 2, figsize=(12, 5.2))
settings = [("full BP", {"objective": "none"}), ("MinJoint pruning", {"objective": "min_joint", "gamma": 0.01})]
for ax, (name, params) in zip(axes, settings):
    parser.set_params(**params)
    (marg,), (report,) = parser.predict_marginals([X[k]], return_reports=True)
    ax.imshow(marg[:, 1:], cmap="viridis", vmin=0, vmax=1)
    for m, h in enumerate(y[k]):
        ax.add_patch(plt.Rectangle((m - 0.5, h - 0.5), 1, 1, fill=False, ec="w", lw=1.5))
    ax.set_xticks(range(len(words) - 1), words[1:], rotation=60, fontsize=8)
    ax.set_yticks(range(len(words)), words, fontsize=8)
    kept = getattr(report, "kept_fraction", np.nan)
    ax.set(xlabel="word m", ylabel="head h", title=f"{name}: factors kept {100 * kept:.1f}%")
fig.tight_layout()
fig.savefig("plot_dependency_marginals.png", dpi=100)
