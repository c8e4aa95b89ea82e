"""
Matching landmarks between two frames of the CMU house sequence
===============================================================

Every frame of the CMU house sequence (Caetano et al. 2009) shows the same 30 hand-labelled
landmarks, so the true matching between two frames is known. We turn each pair of frames into
pair features with :class:`sklearn_struct.preprocessing.PointSetPairFeatures` (log-polar shape
contexts and centroid terms), learn the matching weights with
:class:`sklearn_struct.MLEStructMatcher` (Bethe maximum likelihood, Frank-Wolfe over
assignment calls; Tang et al. 2016) on frame pairs 60 frames apart, and draw the predicted
matching of a held-out pair 90 frames apart: green lines are right, red ones wrong. The right
panel shows the learned model's Bethe marginals for the first ten landmarks.
Needs the data (``SKLEARN_STRUCT_DATA``).
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline

from sklearn_struct import MLEStructMatcher
from sklearn_struct.datasets import load_cmu_house_hotel
from sklearn_struct.preprocessing import PointSetPairFeatures

# %%
# The model
# ---------
# Fit on the training data, then predict and score on the test data.

points = load_cmu_house_hotel("house").points
rng = np.random.default_rng(0)


def pairs(gap, frames):
    """(left, shuffled right) landmark sets and the true assignment, for frames i and i + gap."""
    X, y = [], []
    for i in frames:
        perm = rng.permutation(30)
        X.append((points[i], points[i + gap][perm]))
        y.append(np.argsort(perm))  # left landmark k is right point argsort(perm)[k]
    return X, y


X_train, y_train = pairs(60, range(0, 50, 2))
X_test, y_test = pairs(90, range(0, 21))
model = make_pipeline(PointSetPairFeatures(), MLEStructMatcher(alpha=1.0, random_state=0))
model.fit(X_train, y_train)
print(f"test node accuracy at gap 90: {model.score(X_test, y_test):.3f}")

# %%
k = int(np.argmin([np.mean(p == t) for p, t in zip(model.predict(X_test), y_test)]))  # the hardest pair
left, right = X_test[k]
pred = model.predict([X_test[k]])[0]
marg = model[-1].predict_marginals(model[:-1].transform([X_test[k]]))[0]
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [2, 1]})
shift = np.array([left[:, 0].max() - right[:, 0].min() + 40.0, 0.0])
ax0.scatter(*left.T, s=12, c="k")
ax0.scatter(*(right + shift).T, s=12, c="k")
for a, b in enumerate(pred):
    ok = b == y_test[k][a]
    ax0.plot([left[a, 0], right[b, 0] + shift[0]], [left[a, 1], right[b, 1]], lw=0.8,
             color="tab:green" if ok else "tab:red")
ax0.invert_yaxis()
ax0.set(title=f"house frames {k} and {k + 90}: {np.mean(pred == y_test[k]):.0%} of landmarks matched")
ax0.axis("off")
order = y_test[k][:10]
ax1.imshow(marg[:10][:, order], cmap="viridis", vmin=0, vmax=1)
ax1.set(title="Bethe marginals, 10 landmarks", xlabel="right landmark", ylabel="left landmark")
fig.tight_layout()
fig.savefig("plot_house_matching.png", dpi=100)
