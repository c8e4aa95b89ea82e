"""Loopy BP's unrolled binary sum-product update gives the generic update's results bit for bit."""

import itertools
import warnings

import numpy as np
import pytest

from sklearn_struct.oracles import loopy
from sklearn_struct.oracles.loopy import loopy_bp
from sklearn_struct.utils.graph import grid_edges


def random_graph(rng, n_nodes):
    """A connected random graph: a random tree plus extra edges (so it has cycles)."""
    pairs = {(int(rng.integers(0, v)), v) for v in range(1, n_nodes)}
    for _ in range(n_nodes):
        u, v = sorted(rng.choice(n_nodes, 2, replace=False).tolist())
        pairs.add((u, v))
    return np.array(sorted(pairs), dtype=np.int64)


def binary_models(seed):
    """Binary models on grids and random graphs; shared or per-edge tables; mild to extreme scales
    (300 underflows the probability-space products: the log-space fallback); with and without zeros."""
    rng = np.random.default_rng(seed)
    for g, scale in enumerate((0.5, 3.0, 30.0, 300.0)):
        edges = grid_edges((4, 5)) if g % 2 == 0 else random_graph(rng, 15)
        n = int(edges.max()) + 1
        unary = scale * rng.normal(size=(n, 2))
        pairwise = scale * rng.normal(size=(len(edges), 2, 2) if g < 2 else (2, 2))
        yield f"{g}-finite", unary, edges, pairwise
        unary, pairwise = unary.copy(), pairwise.copy()
        unary[rng.random(n) < 0.2, int(rng.integers(0, 2))] = -np.inf  # never both states of a node
        zeros = rng.random(pairwise.shape) < 0.2
        zeros[..., 0, 0] = False  # never a whole table
        pairwise[zeros] = -np.inf
        yield f"{g}-zeros", unary, edges, pairwise


def outputs(unary, edges, pairwise, **params):
    res = loopy_bp(unary, edges, pairwise, max_iter=40, tol=1e-10, edge_marginals=True, warn=False, **params)
    return res.node_marginals, res.edge_marginals, res.log_messages, res.n_iter, res.max_delta, res.n_message_updates


@pytest.mark.parametrize("seed", [0, 1])
def test_unrolled_binary_update_is_bit_identical(seed, monkeypatch):
    settings = list(itertools.product(("sum", "max"), ("sequential", "parallel"), (0.0, 0.5), (None, 0.6)))
    n_compared = 0
    for name, unary, edges, pairwise in binary_models(seed):
        for mode, schedule, damping, rho in settings:
            params = dict(mode=mode, schedule=schedule, damping=damping, rho=rho)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                monkeypatch.setattr(loopy, "_UNROLLED", True)
                fast = outputs(unary, edges, pairwise, **params)
                monkeypatch.setattr(loopy, "_UNROLLED", False)
                generic = outputs(unary, edges, pairwise, **params)
            for a, b in zip(fast, generic):
                assert np.array_equal(a, b), (name, params)
            assert np.isfinite(fast[0]).all()
            n_compared += 1
    assert n_compared == 8 * len(settings)


def test_unrolled_flag_reaches_the_kernel(monkeypatch):
    """Guard for the test above: the flag is read per call (a copy frozen at import would compare a path with itself)."""
    calls = []
    real = loopy._run_bp

    def spy(*args):
        calls.append(args[16])
        return real(*args)

    monkeypatch.setattr(loopy, "_run_bp", spy)
    edges = grid_edges((2, 2))
    for flag in (True, False):
        monkeypatch.setattr(loopy, "_UNROLLED", flag)
        loopy_bp(np.zeros((4, 2)), edges, np.eye(2))
    assert calls == [True, False]
