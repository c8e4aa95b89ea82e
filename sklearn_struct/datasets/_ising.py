"""make_ising_grid: noisy binary shape images for Ising-model denoising (Kumar & Hebert style)."""

import numbers

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_ising_grid"]


def _clean_shapes(shape):
    """Four binary images drawn with numpy: rectangle, disc, ring, triangle."""
    height, width = shape
    rows, cols = np.mgrid[0:height, 0:width]
    r = rows / max(height - 1, 1)  # coordinates in [0, 1]
    c = cols / max(width - 1, 1)
    rectangle = (r > 0.25) & (r < 0.7) & (c > 0.2) & (c < 0.8)
    disc = (r - 0.5) ** 2 + (c - 0.45) ** 2 < 0.3**2
    ellipse = ((r - 0.5) / 0.42) ** 2 + ((c - 0.5) / 0.3) ** 2
    ring = (ellipse < 1.0) & (ellipse > 0.45)
    triangle = (r > 0.15) & (r < 0.85) & (np.abs(c - 0.5) < 0.45 * (r - 0.15) / 0.7)
    return np.stack([rectangle, disc, ring, triangle]).astype(np.int64)


def make_ising_grid(n_images=4, n_noisy=50, shape=(64, 64), noise=0.6, random_state=None):
    """Noisy versions of clean binary shape images, for denoising on a grid (Ising) model.

    Following the synthetic set of Kumar & Hebert (2004) used by Riedel et al. (2010): a few
    clean binary images (a filled rectangle, a disc, an elliptic ring and a triangle, cycled if
    ``n_images > 4``), each corrupted ``n_noisy`` times by adding Gaussian noise; each noisy
    image is then shifted to mean 0. A pixel's value is thus evidence for label 1 when positive.

    Parameters
    ----------
    n_images : int, default=4
        Number of clean images (the four shapes, repeated cyclically beyond 4).
    n_noisy : int, default=50
        Noisy versions per clean image.
    shape : tuple of int, default=(64, 64)
        Image height and width.
    noise : float, default=0.6
        Standard deviation of the Gaussian noise; the clean images are 0 / 1.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    images : ndarray of shape (n_images * n_noisy, height, width)
        Noisy images, each with mean 0 and variance 1; ordered image by image.
    labels : ndarray of int64 of shape (n_images * n_noisy, height, width)
        The clean binary image behind each noisy one.

    Examples
    --------
    >>> from sklearn_struct.datasets import make_ising_grid
    >>> images, labels = make_ising_grid(n_noisy=2, shape=(16, 16), random_state=0)
    >>> images.shape, labels.shape, sorted(set(labels.ravel().tolist()))
    ((8, 16, 16), (8, 16, 16), [0, 1])
    """
    for name, value in (("n_images", n_images), ("n_noisy", n_noisy)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if len(shape) != 2 or min(shape) < 4:
        raise ValueError(f"shape must be (height, width) with both >= 4, got {shape!r}.")
    if isinstance(noise, bool) or not isinstance(noise, numbers.Real) or not (0 <= noise < np.inf):
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}.")
    rng = check_random_state(random_state)
    shapes = _clean_shapes(tuple(int(s) for s in shape))
    clean = shapes[np.arange(n_images) % len(shapes)]
    labels = np.repeat(clean, n_noisy, axis=0)
    images = labels + noise * rng.standard_normal(labels.shape)
    images -= images.mean(axis=(1, 2), keepdims=True)
    images /= np.maximum(images.std(axis=(1, 2), keepdims=True), 1e-12)  # a constant image stays 0
    return images, labels
