"""
Pulling handwriting towards a dictionary with learned non-local energies
========================================================================

The Taskar et al. OCR words are written by 150 people but hold only 55 distinct words.
A chain CRF sees one letter and its neighbours at a time, so it cannot use that; a
non-local energy on the marginals of the whole word can (Vilnis et al. 2015, Section 8.2):

* ``UnigramDictionaryEnergy`` (``L^u``) pulls the expected letter counts of a word
  towards the closest letter-count vector of a training word;
* ``WordDictionaryEnergy`` (``L^w``) pulls the marginals towards the closest training
  word of the same length.

:class:`sklearn_struct.NonLocalCRF` fits the chain CRF, then learns the energy weight
``psi`` by Algorithm 3, and predicts by Bethe-RDA inference followed by Viterbi. We train
on 2,000 words of folds 1-9 (psi on a held-out quarter of them, one extra CRF fit instead of the
default 3-fold cross-fitting, to keep the example short) and test on fold 0, then show a few test words that the
plain CRF gets wrong, with what each model reads. Needs the data
(``SKLEARN_STRUCT_DATA`` pointing at the shared data folder).
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sklearn_struct import NonLocalCRF
from sklearn_struct.datasets import load_ocr_letters
from sklearn_struct.energies import UnigramDictionaryEnergy, WordDictionaryEnergy

# %%
# The model
# ---------
# Fit on the training data, then predict and score on the test data.

ocr = load_ocr_letters()
rng = np.random.RandomState(0)
train = rng.choice(np.flatnonzero(ocr.folds != 0), 2000, replace=False)
test = np.flatnonzero(ocr.folds == 0)
X_train, y_train = [ocr.images[i] for i in train], [ocr.labels[i] for i in train]
X_test, y_test = [ocr.images[i] for i in test], [ocr.labels[i] for i in test]

models = {
    "chain CRF": NonLocalCRF(c2=1.0),
    "CRF + L^u": NonLocalCRF(UnigramDictionaryEnergy(), c2=1.0, learning_rate=1.0, psi_holdout=0.25,
                             random_state=0),
    "CRF + L^w": NonLocalCRF(WordDictionaryEnergy(), c2=1.0, learning_rate=1.0, psi_holdout=0.25,
                             random_state=0),
}
predictions, accuracy = {}, {}
for name, model in models.items():
    predictions[name] = model.fit(X_train, y_train).predict(X_test)
    accuracy[name] = np.mean(np.concatenate(predictions[name]) == np.concatenate(y_test))
    psi = f", learned psi = {model.psi_[0]:.2f}" if model.energy is not None else ""
    print(f"{name:10s} character accuracy {100 * accuracy[name]:.2f}%{psi}")

# %%
# a few test words the plain CRF misreads
wrong = [i for i, (p, t) in enumerate(zip(predictions["chain CRF"], y_test)) if np.any(p != t)][:4]
fig = plt.figure(figsize=(9, 5.5))
ax = fig.add_subplot(2, 1, 1)
names = list(models)
ax.barh(names, [100 * accuracy[n] for n in names], color=["0.6", "tab:blue", "tab:green"])
for k, n in enumerate(names):
    ax.text(100 * accuracy[n] + 0.3, k, f"{100 * accuracy[n]:.1f}%", va="center")
ax.set_xlim(80, 101)
ax.set_xlabel("character accuracy on fold 0 (%)")
for j, i in enumerate(wrong):
    ax = fig.add_subplot(2, len(wrong), len(wrong) + j + 1)
    strip = np.hstack([letter.reshape(16, 8) for letter in X_test[i]])
    ax.imshow(strip, cmap="gray_r", interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(
        "\n".join(f"{n.split()[-1]}: {''.join(predictions[n][i])}" for n in names)
        + f"\ntruth: {''.join(y_test[i])}",
        fontsize=8,
        family="monospace",
    )
fig.tight_layout()
fig.savefig("plot_ocr_nonlocal.png", dpi=100)
