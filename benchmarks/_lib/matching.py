"""The CMU house training set of the MLE-struct matching scripts (100 pairs 10 frames apart, 30 points)."""
import numpy as np

from sklearn_struct.datasets import load_cmu_house_hotel
from sklearn_struct.preprocessing import PointSetPairFeatures


def training_set():
    pts = load_cmu_house_hotel("house").points
    rng = np.random.default_rng(0)
    X, y = [], []
    for i in range(100):
        perm = rng.permutation(30)
        X.append((pts[i], pts[i + 10][perm]))
        y.append(np.argsort(perm))
    return PointSetPairFeatures().fit_transform(X), y
