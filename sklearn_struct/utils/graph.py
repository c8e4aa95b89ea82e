"""Graph data: grid builders for images and validation of ``(node_features, edges[, edge_features])`` samples.

A graph sample is a tuple ``(node_features, edges)`` or ``(node_features, edges, edge_features)``:
``node_features`` is ``(n_nodes, n_features)``, ``edges`` an int array ``(n_edges, 2)`` of undirected
edges and ``edge_features`` ``(n_edges, n_edge_features)``. Every validation error names the
sample, as :mod:`sklearn_struct.utils.validation` does for sequences.
"""

import numpy as np
import scipy.sparse as sp

from .validation import as_nonempty_list, check_edge_list

__all__ = ["grid_edges", "images_to_graphs", "check_graphs", "check_graph_labels"]


def grid_edges(shape, connectivity=4):
    """Undirected edges of a 2D pixel grid, nodes numbered in row-major (C) order.

    Parameters
    ----------
    shape : tuple of int (height, width)
    connectivity : {4, 8}, default=4
        4: horizontal and vertical neighbours; 8: also both diagonals.

    Returns
    -------
    edges : ndarray of int64 of shape (n_edges, 2)
        Horizontal edges first, then vertical, then (for 8) the two diagonals.

    Examples
    --------
    >>> grid_edges((2, 2)).tolist()
    [[0, 1], [2, 3], [0, 2], [1, 3]]
    >>> len(grid_edges((3, 3), connectivity=8))
    20
    """
    if connectivity not in (4, 8):
        raise ValueError(f"connectivity must be 4 or 8, got {connectivity!r}.")
    if isinstance(shape, (str, bytes)) or np.ndim(shape) != 1 or len(shape) != 2:
        raise ValueError(f"shape must be a pair (height, width), got {shape!r}.")
    if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in shape):
        raise ValueError(f"shape must hold two integers, got {tuple(shape)!r}.")
    height, width = (int(s) for s in shape)
    if height < 1 or width < 1:
        raise ValueError(f"shape must be positive, got {tuple(shape)}.")
    ids = np.arange(height * width, dtype=np.int64).reshape(height, width)
    parts = [
        (ids[:, :-1], ids[:, 1:]),  # right
        (ids[:-1, :], ids[1:, :]),  # down
    ]
    if connectivity == 8:
        parts += [(ids[:-1, :-1], ids[1:, 1:]), (ids[:-1, 1:], ids[1:, :-1])]  # down-right, down-left
    return np.concatenate([np.stack([a.ravel(), b.ravel()], axis=1) for a, b in parts], axis=0)


def images_to_graphs(images, connectivity=4, edge_features=None):
    """Turn images into graph samples for :class:`~sklearn_struct.PrunedBPMarginals`.

    Parameters
    ----------
    images : array-like of shape (n_images, height, width[, n_channels]) or list of such arrays
        Pixel values; each pixel becomes a node with its channels as features.
    connectivity : {4, 8}, default=4
    edge_features : {None, "abs_diff"}, default=None
        None: no edge features (the estimator then uses one shared edge table);
        ``"abs_diff"``: ``[1, |x_u - x_v|]`` per edge (contrast-sensitive smoothing), averaged over channels.

    Returns
    -------
    X : list of tuple
        ``(node_features, edges)`` or ``(node_features, edges, edge_features)`` per image.

    Examples
    --------
    >>> import numpy as np
    >>> X = images_to_graphs(np.zeros((2, 3, 4)))
    >>> len(X), X[0][0].shape, X[0][1].shape
    (2, (12, 1), (17, 2))
    """
    if edge_features not in (None, "abs_diff"):
        raise ValueError(f"edge_features must be None or 'abs_diff', got {edge_features!r}.")
    if images is None or isinstance(images, (str, bytes)) or not hasattr(images, "__iter__"):
        raise ValueError(f"images must be a list or array of images, got {type(images).__name__}.")
    out = []
    cache = {}
    for i, img in enumerate(images):
        _reject_complex(img, f"Image {i}")
        try:
            img = np.asarray(img, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Image {i}: pixel values are not numeric ({exc}).") from None
        if not np.all(np.isfinite(img)):
            raise ValueError(f"Image {i} contains NaN or infinity.")
        if img.ndim not in (2, 3):
            raise ValueError(f"Image {i}: expected a 2D or 3D array, got shape {img.shape}.")
        if img.ndim == 2:
            img = img[:, :, None]
        key = img.shape[:2]
        if key not in cache:  # images of one size share one edge array
            cache[key] = grid_edges(key, connectivity)
        edges = cache[key]
        feats = img.reshape(-1, img.shape[2])
        if edge_features is None:
            out.append((feats, edges))
        else:
            diff = np.abs(feats[edges[:, 0]] - feats[edges[:, 1]]).mean(axis=1)
            out.append((feats, edges, np.stack([np.ones_like(diff), diff], axis=1)))
    if not out:
        raise ValueError("images is empty: found 0 images, at least 1 is required.")
    return out


def _as_sample_list(X):
    if isinstance(X, tuple) and len(X) in (2, 3) and np.ndim(X[1]) == 2 and np.ndim(X[0]) == 2:
        raise ValueError(
            "X must be a list of graph samples (node_features, edges[, edge_features]); got a "
            "single sample: wrap it in a list, [sample]."
        )
    if isinstance(X, (str, bytes)) or sp.issparse(X) or (isinstance(X, np.ndarray) and X.dtype != object):
        got = "a sparse matrix" if sp.issparse(X) else type(X).__name__
        raise ValueError(f"X must be a list of per-graph (node_features, edges[, edge_features]) tuples, got {got}.")
    return as_nonempty_list(X, "X", "graphs")


def _reject_complex(values, what):
    if np.iscomplexobj(values):
        raise ValueError(f"{what} are complex; only real features are supported.")


def _check_one_graph(sample, i):
    if not isinstance(sample, (tuple, list)) or len(sample) not in (2, 3):
        raise ValueError(
            f"Sample {i}: expected a tuple (node_features, edges) or (node_features, edges, "
            f"edge_features), got {type(sample).__name__}"
            + (f" of length {len(sample)}." if hasattr(sample, "__len__") else ".")
        )
    _reject_complex(sample[0], f"Sample {i}: node features")
    try:
        feats = np.asarray(sample[0], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"Sample {i}: node features are not numeric ({exc}).") from None
    if feats.ndim != 2:
        raise ValueError(f"Sample {i}: node features must be 2D (n_nodes, n_features), got shape {feats.shape}.")
    if feats.shape[0] == 0:
        raise ValueError(f"Sample {i} is empty: the graph has 0 nodes, at least 1 is required.")
    if not np.all(np.isfinite(feats)):
        raise ValueError(f"Sample {i}: node features contain NaN or infinity.")
    edges = check_edge_list(sample[1], feats.shape[0], name=f"Sample {i}")
    edge_feats = None
    if len(sample) == 3 and sample[2] is not None:
        _reject_complex(sample[2], f"Sample {i}: edge features")
        try:
            edge_feats = np.asarray(sample[2], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Sample {i}: edge features are not numeric ({exc}).") from None
        if edge_feats.ndim == 1 and edges.shape[0] == edge_feats.shape[0]:
            edge_feats = edge_feats[:, None]
        if edge_feats.ndim != 2 or edge_feats.shape[0] != edges.shape[0]:
            raise ValueError(
                f"Sample {i}: edge features must have shape (n_edges={edges.shape[0]}, "
                f"n_edge_features), got {edge_feats.shape}."
            )
        if not np.all(np.isfinite(edge_feats)):
            raise ValueError(f"Sample {i}: edge features contain NaN or infinity.")
    return np.ascontiguousarray(feats), edges, edge_feats


def check_graphs(X, y=None, *, n_features=None, n_edge_features=None):
    """Validate a list of graph samples and, optionally, their node labels.

    Parameters
    ----------
    X : list of tuple
        ``(node_features, edges)`` or ``(node_features, edges, edge_features)`` per sample.
        Graphs may be disconnected and may have no edges; they may not be empty, have edges out
        of range, self-loops or duplicate edges (``(a, b)`` and ``(b, a)`` are the same edge).
    y : list of array-like of shape (n_nodes_i,), default=None
    n_features : int, default=None
        Required number of node features (predict time); else taken from sample 0.
    n_edge_features : int, default=None
        Required number of edge features (0 means no edge features) at predict time.

    Returns
    -------
    graphs : list of tuple ``(node_features, edges, edge_features or None)``
    y : list of ndarray, only if ``y`` was given

    Examples
    --------
    >>> import numpy as np
    >>> g = check_graphs([(np.zeros((3, 1)), [[0, 1], [1, 2]])])
    >>> g[0][1].dtype, g[0][2] is None
    (dtype('int64'), True)
    """
    samples = _as_sample_list(X)
    graphs = [_check_one_graph(s, i) for i, s in enumerate(samples)]
    n_feat = n_features if n_features is not None else graphs[0][0].shape[1]
    n_efeat = n_edge_features if n_edge_features is not None else _n_edge_features(graphs[0])
    ref = "as seen during fit" if n_features is not None else "as sample 0"
    for i, (feats, edges, efeats) in enumerate(graphs):
        if feats.shape[1] != n_feat:
            raise ValueError(f"Sample {i} has {feats.shape[1]} node features, but {n_feat} are expected ({ref}).")
        got = _n_edge_features((feats, edges, efeats))
        if got != n_efeat and edges.shape[0] > 0:
            raise ValueError(
                f"Sample {i} has {got} edge features, but {n_efeat} are expected ({ref}); "
                "give every sample edge features or none."
            )
    if y is None:
        return graphs
    return graphs, check_graph_labels(y, [g[0].shape[0] for g in graphs])


def _n_edge_features(graph):
    return 0 if graph[2] is None else graph[2].shape[1]


def check_graph_labels(y, n_nodes):
    """Validate one 1D label array per graph, with as many labels as the graph has nodes."""
    if isinstance(y, np.ndarray) and y.dtype != object and y.ndim == 2 and y.shape[0] == len(n_nodes):
        y = list(y)
    if y is None or isinstance(y, (str, bytes)):
        raise ValueError(f"y must be a list of label arrays (one per graph), got {type(y).__name__}.")
    try:
        labels = list(y)
    except TypeError:
        raise ValueError(f"y must be a list of label arrays (one per graph), got {type(y).__name__}.") from None
    if len(labels) != len(n_nodes):
        raise ValueError(f"X and y have inconsistent numbers of samples: {len(n_nodes)} in X, {len(labels)} in y.")
    out = []
    for i, lab in enumerate(labels):
        lab = np.asarray(lab)
        if lab.ndim == 2 and lab.size == n_nodes[i]:  # an image's label grid
            lab = lab.ravel()
        if lab.ndim != 1:
            raise ValueError(f"Sample {i}: labels must be 1D (one per node), got shape {lab.shape}.")
        if lab.shape[0] != n_nodes[i]:
            raise ValueError(f"Sample {i}: {n_nodes[i]} nodes in X but {lab.shape[0]} labels in y.")
        if lab.dtype.kind == "f" and not np.all(np.isfinite(lab)):
            raise ValueError(f"Sample {i}: labels contain NaN or infinity.")
        out.append(lab)
    return out
