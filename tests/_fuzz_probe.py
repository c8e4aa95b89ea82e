"""The bad-input probe behind ``tests/test_fuzz_public_api.py`` (run in a child interpreter).

Every public callable (doc/api.rst and each subpackage's ``__all__``) is called once with a
valid input and then with one argument at a time replaced by each applicable kind of bad
input: empty, ragged, NaN / +-inf, wrong ndim / dtype / shape, out-of-range and negative
indices, wrong-length weights, huge and tiny magnitudes, None, strings, complex numbers.
A case passes if the call

* raises ``ValueError`` or ``TypeError`` (``NotFittedError``; ``OSError`` naming the path for
  file arguments) whose message names the argument (or the sequence / sample / edge) and,
  where the bad value sits at an index, contains that index's digits; or
* returns a result with no NaN (marginals also sum to 1).

Anything else fails: IndexError, KeyError, ZeroDivisionError, numba errors, any other
exception, NaN in the result. Callables without a hand-written spec still get a generic
probe (None, NaN, strings, empty lists for every parameter). After the systematic probe,
hypothesis draws random arrays (shapes, NaN/inf/huge values, random indices) for the
oracles and packing helpers under the same rules.

Run as a script it prints one JSON object: ``{"cases": n, "failures": [...], "visited": [...]}``;
the progress log on stderr names the last case started, should the interpreter crash.
"""

import gzip
import importlib
import inspect
import json
import math
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not an installed copy

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from _fuzz_probe_files import SECTIONS as FILE_SECTIONS  # noqa: E402  (model files, loaders, interrupted fits)
from _fuzz_probe_round3 import SECTIONS as ROUND3_SECTIONS  # noqa: E402  (issue #34: crfsuite, numerics, ...)
from _fuzz_probe_round4 import SECTIONS as ROUND4_SECTIONS  # noqa: E402  (constrained chains, shards, explain, ...)

MODULES = [
    "sklearn_struct", "sklearn_struct.energies", "sklearn_struct.datasets", "sklearn_struct.preprocessing",
    "sklearn_struct.metrics", "sklearn_struct.oracles.chain", "sklearn_struct.oracles.linear",
    "sklearn_struct.oracles.loopy", "sklearn_struct.oracles.lp", "sklearn_struct.oracles.lp_learning",
    "sklearn_struct.oracles.matching", "sklearn_struct.utils", "sklearn_struct.utils.graph",
    "sklearn_struct.utils.optimize", "sklearn_struct.utils.validation",
]
ALLOWED = (ValueError, TypeError)
FORBIDDEN_NAMES = ("IndexError", "KeyError", "ZeroDivisionError")


# --------------------------------------------------------------------------------------
# Public names
# --------------------------------------------------------------------------------------


def public_modules():
    """MODULES plus every public module of the package that has an ``__all__`` (found by walking it)."""
    import pkgutil

    import sklearn_struct

    found = set(MODULES)
    for info in pkgutil.walk_packages(sklearn_struct.__path__, "sklearn_struct."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            if hasattr(importlib.import_module(info.name), "__all__"):
                found.add(info.name)
    return sorted(found)


def public_names(root=None):
    """(module, name) of every public callable: the API reference (doc/api.rst) plus the ``__all__`` of
    every public module (:func:`public_modules`), so a new function is listed, and must be probed, by
    construction."""
    root = Path(root or Path(__file__).resolve().parents[1])
    names = set()
    api = root / "doc" / "api.rst"
    if api.exists():
        module = None
        for line in api.read_text().splitlines():
            m = re.match(r"\.\. currentmodule:: ([\w.]+)", line)
            if m:
                module = m.group(1)
            m = re.match(r"   (\w+)$", line)
            if m and module and callable(getattr(importlib.import_module(module), m.group(1), None)):
                names.add((module, m.group(1)))
    for mod in public_modules():
        for name in getattr(importlib.import_module(mod), "__all__", []):
            if callable(getattr(importlib.import_module(mod), name, None)):
                names.add((mod, name))
    return sorted(names)


# --------------------------------------------------------------------------------------
# Bad values by argument kind: each yields (label, value, must_name_index)
# --------------------------------------------------------------------------------------


def _with(arr, index, value):
    out = np.array(arr, dtype=np.float64, copy=True)
    out[index] = value
    return out


def bad_float_array(arr, allow_neg_inf=False):
    arr = np.asarray(arr, dtype=np.float64)
    last = tuple(s - 1 for s in arr.shape)
    yield "nan", _with(arr, last, np.nan), True
    yield "posinf", _with(arr, last, np.inf), True
    if not allow_neg_inf:
        yield "neginf", _with(arr, last, -np.inf), True
    yield "empty", arr[:0], False
    yield "ndim-1", arr.reshape(-1)[:1].reshape(()) if arr.ndim == 1 else arr[0], False
    yield "ndim+1", arr[None], False
    yield "wrong-shape", arr[..., :-1] if arr.shape[-1] > 1 else np.zeros(arr.shape[:-1] + (3,)), False
    yield "strings", arr.astype(str), False
    yield "complex", arr + 1j, False
    yield "none", None, False
    yield "ragged", [[0.0, 1.0], [2.0]], False
    yield "huge", np.full(arr.shape, 1e308), False
    yield "huge-neg", np.full(arr.shape, -1e308), False
    yield "tiny", np.full(arr.shape, 1e-308), False
    beyond = arr.astype(object)
    beyond[last] = 10**400  # a Python int no float64 holds (issue #34): ValueError, not OverflowError
    yield "beyond-float", beyond, False


def bad_index_array(arr, n):
    arr = np.asarray(arr)
    last = tuple(s - 1 for s in arr.shape)
    out = arr.copy()
    out[last] = n + 5
    yield "out-of-range", out, True
    out = arr.copy()
    out[last] = -1
    yield "negative", out, True
    out = arr.astype(float)
    out[last] = 0.5
    yield "fractional", out, False
    out = arr.astype(float)
    out[last] = np.nan
    yield "nan", out, False
    yield "huge", np.full(arr.shape, 2**62), False
    yield "empty", arr[:0], False
    yield "ndim+1", arr[None], False
    yield "strings", arr.astype(str), False
    yield "bools", arr.astype(bool), False
    yield "none", None, False


def bad_offsets(offsets):
    offsets = np.asarray(offsets)
    yield "not-from-0", offsets + 1, False
    yield "decreasing", offsets[::-1], False
    yield "past-end", np.r_[offsets[:-1], offsets[-1] + 3], False
    yield "fractional", offsets + np.r_[0.0, np.full(len(offsets) - 1, 0.5)], False
    yield "short", offsets[:1], False
    yield "2d", offsets[None], False
    yield "none", None, False
    yield "strings", offsets.astype(str), False


def bad_sequence_list(X):
    x0 = np.asarray(X[0].toarray() if sp.issparse(X[0]) else X[0], dtype=float)
    yield "empty-list", [], False
    yield "nan", [_with(x0, (0, 0), np.nan)] + list(X[1:]), True
    yield "inf", [x0] + [_with(x0, (0, 0), np.inf)] + list(X[2:]), True
    yield "ragged-features", [x0, x0[:, :-1]] + list(X[2:]), True
    yield "1d-sequence", [x0[0]] + list(X[1:]), True
    yield "empty-sequence", [x0[:0]] + list(X[1:]), True
    yield "single-dense", x0, False
    yield "single-sparse", sp.csr_matrix(x0), False
    yield "complex", [x0 + 1j] + list(X[1:]), True
    yield "strings", [x0.astype(str)] + list(X[1:]), False
    yield "none", None, False
    yield "a-string", "abc", False
    yield "huge", [np.full_like(x0, 1e308)] + list(X[1:]), False
    beyond = x0.astype(object)
    beyond[0, 0] = -(10**400)
    yield "beyond-float", [beyond] + list(X[1:]), True


def bad_label_list(y):
    yield "empty-list", [], False
    yield "short", list(y[:-1]), False
    yield "wrong-length", [np.r_[y[0], y[0][:1]]] + list(y[1:]), True
    yield "nan", [np.full(len(y[0]), np.nan)] + list(y[1:]), True
    yield "2d", [np.asarray(y[0])[:, None]] + list(y[1:]), True
    yield "none", None, False
    yield "number", 3, False
    mixed = np.asarray(y[0]).astype(object)
    mixed[0] = "a-string" if not isinstance(mixed[0], str) else 7
    yield "mixed-types", [mixed] + list(y[1:]), False
    yield "unhashable", [[[0]] * len(y[0])] + list(y[1:]), False
    unseen = np.array(y[0], copy=True)
    unseen[-1] = 99 if unseen.dtype.kind in "iuf" else "never-seen"
    yield "unseen-label", [unseen] + list(y[1:]), False  # a new class at fit; at score: named or scored as wrong


def bad_weights(n):
    yield "wrong-length", np.ones(n + 1), False
    yield "negative", np.r_[-1.0, np.ones(n - 1)], True
    yield "nan", np.r_[np.nan, np.ones(n - 1)], True
    yield "zeros", np.zeros(n), False
    yield "strings", np.array(["a"] * n), False
    yield "2d", np.ones((n, 2)), False


def bad_int_scalar():
    for label, v in [("negative", -1), ("nan", math.nan), ("string", "a"), ("fractional", 2.5), ("none", None),
                     ("inf", math.inf), ("bool", True)]:
        yield label, v, False


def bad_real_scalar():
    for label, v in [("nan", math.nan), ("inf", math.inf), ("negative", -1.0), ("string", "a"), ("none", None),
                     ("array", np.ones(3))]:
        yield label, v, False


def bad_option():
    for label, v in [("unknown", "no-such-option"), ("none", None), ("number", 3), ("list", ["a"])]:
        yield label, v, False


def bad_path(tmp):
    missing = tmp / "missing.txt"
    trunc = tmp / "truncated.gz"
    data = gzip.compress(b"a NN B-NP\n" * 3000)
    trunc.write_bytes(data[: len(data) // 2])
    garbage = tmp / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 20)
    empty = tmp / "empty.txt"
    empty.write_text("")
    for label, v in [("missing", missing), ("directory", tmp), ("truncated-gz", trunc), ("garbage", garbage),
                     ("empty-file", empty), ("none", None), ("number", 3)]:
        yield label, v, False


# --------------------------------------------------------------------------------------
# Outcome checks
# --------------------------------------------------------------------------------------


def _has_nan(obj, depth=0):
    if depth > 6:
        return False
    if isinstance(obj, float):
        return math.isnan(obj)
    if sp.issparse(obj):
        return obj.dtype.kind == "f" and bool(np.isnan(obj.data).any())
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind in "fc" and bool(np.isnan(obj).any())
    if isinstance(obj, (list, tuple)):
        return any(_has_nan(o, depth + 1) for o in obj[:50])
    if isinstance(obj, dict):
        return any(_has_nan(o, depth + 1) for o in list(obj.values())[:50])
    if hasattr(obj, "__dataclass_fields__"):
        return any(_has_nan(getattr(obj, f), depth + 1) for f in obj.__dataclass_fields__)
    return False


def judge(thunk, names, index=None, path=None):
    """None if the outcome is acceptable, else a short reason."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = thunk()
    except ALLOWED as exc:
        if type(exc).__module__.startswith("numba"):
            return f"numba error {type(exc).__name__}: {str(exc)[:120]}"
        msg = str(exc)
        if not any(n in msg for n in names):
            return f"{type(exc).__name__} does not name {names[0]!r}: {msg[:160]}"
        if index is not None and not re.search(r"\d", msg):
            return f"{type(exc).__name__} names no index: {msg[:160]}"
        return None
    except OSError as exc:
        if path is not None and str(path) in str(exc):
            return None
        return f"{type(exc).__name__} without the path: {str(exc)[:160]}"
    except Exception as exc:  # noqa: BLE001 - every other exception is a finding
        return f"{type(exc).__name__}: {str(exc)[:160]}"
    if _has_nan(out):
        return "NaN in the result"
    return None


# --------------------------------------------------------------------------------------
# Specs: a valid call and the bad values for each argument
# --------------------------------------------------------------------------------------


class Probe:
    def __init__(self, tmp):
        self.tmp = Path(tmp)
        self.cases = 0
        self.failures = []
        self.visited = set()  # callables with an explicit fuzz entry (a valid call or a bad-input case)
        self.generic = set()  # callables reached only by the generic probe

    def run(self, qualname, label, thunk, names, index=None, path=None):
        if not qualname.endswith("(generic)"):  # an explicit case: the callable has a fuzz entry
            self.visited.add(re.split(r"[ .(\[]", qualname, maxsplit=1)[0])
        self.cases += 1
        print(f"{qualname} :: {label}", file=sys.stderr, flush=True)
        reason = judge(thunk, names, index, path)
        if reason is not None:
            self.failures.append(f"{qualname} [{label}]: {reason}")

    def valid(self, qualname, thunk, check=None):
        """The unmodified call must succeed with a NaN-free (and, if given, checked) result."""
        self.visited.add(qualname.split(".")[0].split(" ")[0])
        self.cases += 1
        print(f"{qualname} :: valid", file=sys.stderr, flush=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = thunk()
        except Exception as exc:  # noqa: BLE001
            self.failures.append(f"{qualname} [valid]: {type(exc).__name__}: {str(exc)[:160]}")
            return
        if _has_nan(out):
            self.failures.append(f"{qualname} [valid]: NaN in the result")
        elif check is not None and not check(out):
            self.failures.append(f"{qualname} [valid]: wrong result")

    def mutate(self, qualname, func, kwargs, arg, bads, names=None):
        """Call func(**kwargs) with kwargs[arg] replaced by each bad value."""
        names = names or (arg,)
        for label, value, has_index in bads:
            call = dict(kwargs)
            call[arg] = value
            path = value if isinstance(value, Path) else None
            if path is not None:
                names = tuple(names) + (str(path),)
            self.run(f"{qualname}({arg})", label, lambda c=call: func(**c), names, True if has_index else None, path)


def _chain_problem():
    rng = np.random.default_rng(0)
    return rng.normal(size=(5, 3)), rng.normal(size=(3, 3)), np.array([0, 2, 5])


def _graph_problem():
    rng = np.random.default_rng(1)
    return rng.normal(size=(4, 2)), np.array([[0, 1], [1, 2], [2, 3], [3, 0]]), rng.normal(size=(4, 2, 2))


def _rows_sum_to_one(arr, axis=-1):
    return np.allclose(np.sum(arr, axis=axis), 1.0)


def probe_chain(p):
    from sklearn_struct.oracles import chain

    unary, trans, offsets = _chain_problem()
    seq_names = ("unary", "Sequence", "transition", "offsets")
    for fname in ("forward_backward", "viterbi", "sample_chain", "check_chain_potentials"):
        f = getattr(chain, fname)
        kw = {"unary": unary, "transition": trans, "offsets": offsets}
        check = (lambda out: _rows_sum_to_one(out[1])) if fname == "forward_backward" else None
        p.valid(f"{fname}", lambda f=f, kw=kw: f(**kw), check)
        p.mutate(fname, f, kw, "unary", bad_float_array(unary, allow_neg_inf=True), seq_names)
        p.mutate(fname, f, kw, "transition", bad_float_array(trans, allow_neg_inf=True), seq_names)
        p.mutate(fname, f, kw, "offsets", bad_offsets(offsets), ("offsets", "Sequence"))
        dead = unary.copy()
        dead[3] = -np.inf
        p.run(fname, "all -inf token", lambda f=f: f(dead, trans, offsets), ("Sequence 1",))
        p.run(fname, "per-position wrong count", lambda f=f: f(unary, np.zeros((2, 3, 3)), offsets), seq_names)
    f = chain.forward_backward
    p.mutate("forward_backward", f, {"unary": unary, "transition": trans, "offsets": offsets}, "edge_marginals",
             bad_option(), ("edge_marginals",))
    p.mutate("forward_backward", f, {"unary": unary, "transition": trans, "offsets": offsets}, "out",
             [("wrong-shape", np.empty((4, 3)), False), ("int", np.empty((5, 3), dtype=int), False),
              ("list", [[0.0]], False)], ("out",))
    p.mutate("sample_chain", chain.sample_chain, {"unary": unary, "transition": trans, "offsets": offsets},
             "random_state", [("string", "a", False), ("negative", -1, False), ("float", 0.5, False)],
             ("random_state", "Seed", "seed", "state"))
    for scale in (1e3, 1e6, 1e12):  # huge but legal magnitudes: exact, normalised marginals
        p.valid(f"forward_backward x{scale:g}", lambda s=scale: chain.forward_backward(unary * s, trans * s, offsets),
                lambda out: _rows_sum_to_one(out[1]) and np.all(np.isfinite(out[0])))


def probe_linear(p):
    from sklearn_struct.oracles import linear

    X = np.abs(np.random.default_rng(2).normal(size=(4, 3)))
    for sparse in (False, True):
        Xs = sp.csr_matrix(X) if sparse else X
        tag = "sparse" if sparse else "dense"
        lf = linear.LinearFeatures(Xs, 2)
        p.valid(f"LinearFeatures.{tag}", lambda lf=lf: (lf.scores(np.ones(6)), lf.gradient(np.ones((4, 2)))))
        p.mutate(f"LinearFeatures.{tag}", lambda X, n_labels: linear.LinearFeatures(X, n_labels),
                 {"X": Xs, "n_labels": 2}, "X", bad_float_array(X), ("X",))
        p.mutate(f"LinearFeatures.{tag}", lambda X, n_labels: linear.LinearFeatures(X, n_labels),
                 {"X": Xs, "n_labels": 2}, "n_labels", bad_int_scalar(), ("n_labels",))
        p.mutate(f"LinearFeatures.scores.{tag}", lambda w: lf.scores(w), {"w": np.ones(6)}, "w",
                 bad_float_array(np.ones(6)), ("w",))
        p.mutate(f"LinearFeatures.scores.{tag}", lambda bias: lf.scores(np.ones(6), bias=bias), {"bias": np.ones(2)},
                 "bias", bad_float_array(np.ones(2)), ("bias",))
        p.mutate(f"LinearFeatures.gradient.{tag}", lambda D: lf.gradient(D), {"D": np.ones((4, 2))}, "D",
                 bad_float_array(np.ones((4, 2))), ("D",))
        p.mutate(f"LinearFeatures.dense_coef.{tag}", lambda w: lf.dense_coef(w), {"w": np.ones(6)}, "w",
                 bad_float_array(np.ones(6)), ("w",))
        p.mutate(f"LinearFeatures.pair_weights.{tag}", lambda W: lf.pair_weights(W), {"W": np.ones((3, 2))}, "W",
                 bad_float_array(np.ones((3, 2))), ("W",))
    y = np.array([0, 1, 1, 0])
    kw = {"X": sp.csr_matrix(X), "y": y, "n_labels": 2}
    p.valid("observed_pairs", lambda: linear.observed_pairs(**kw))
    p.mutate("observed_pairs", linear.observed_pairs, kw, "y", bad_index_array(y, 2), ("y",))
    p.mutate("observed_pairs", linear.observed_pairs, kw, "X", bad_float_array(X), ("X",))
    p.mutate("observed_pairs", linear.observed_pairs, kw, "n_labels", bad_int_scalar(), ("n_labels", "y"))
    kw = {"n_features": 3, "n_labels": 2}
    p.valid("all_pairs", lambda: linear.all_pairs(**kw))
    p.mutate("all_pairs", linear.all_pairs, kw, "n_features", bad_int_scalar(), ("n_features",))
    p.mutate("all_pairs", linear.all_pairs, kw, "n_labels", bad_int_scalar(), ("n_labels",))
    good_pairs = linear.all_pairs(3, 2)
    p.mutate("LinearFeatures(pairs)", lambda pairs: linear.LinearFeatures(sp.csr_matrix(X), 2, pairs=pairs),
             {"pairs": good_pairs}, "pairs",
             [("label-out-of-range", (good_pairs[0], good_pairs[1] + 5), True),
              ("ptr-decreasing", (good_pairs[0][::-1], good_pairs[1]), False),
              ("short-ptr", (good_pairs[0][:-1], good_pairs[1]), False), ("none-pair", (None, None), False),
              ("not-a-pair", 3, False)], ("pair", "pairs"))


def probe_loopy(p):
    from sklearn_struct.oracles import loopy

    unary, edges, pw = _graph_problem()
    graph_names = ("unary", "graph", "edge", "pairwise")
    kw = {"unary": unary, "edges": edges, "pairwise": pw}
    for fname in ("loopy_bp", "check_pairwise_graph", "seed_gains", "absorbed_unary"):
        f = getattr(loopy, fname)
        check = (lambda out: _rows_sum_to_one(out.node_marginals)) if fname == "loopy_bp" else None
        p.valid(fname, lambda f=f: f(**kw), check)
        p.mutate(fname, f, kw, "unary", bad_float_array(unary), ("unary",) + graph_names)
        p.mutate(fname, f, kw, "edges", bad_index_array(edges, 4), ("edge",) + graph_names)
        p.mutate(fname, f, kw, "pairwise", bad_float_array(pw), ("pairwise",) + graph_names)
        p.run(fname, "duplicate edge", lambda f=f: f(unary, np.r_[edges, [[1, 0]]], pw[0]), ("edges",))
        p.run(fname, "self loop", lambda f=f: f(unary, np.r_[edges, [[2, 2]]], pw[0]), ("self-loop",))
    bp = loopy.loopy_bp
    for arg, bads in [("rho", bad_weights(4)), ("damping", bad_real_scalar()), ("max_iter", bad_int_scalar()),
                      ("tol", bad_real_scalar()), ("mode", bad_option()), ("schedule", bad_option()),
                      ("init_messages", bad_float_array(np.zeros((8, 2)))),
                      ("adjacency", [("other-graph", loopy.build_adjacency([[0, 1]], 2), False),
                                     ("string", "a", False)])]:
        p.mutate("loopy_bp", bp, kw, arg, bads, (arg,))
    for scale in (1e3, 1e6, 1e12):
        p.valid(f"loopy_bp x{scale:g}", lambda s=scale: bp(unary * s, edges, pw * s, free_energy=True),
                lambda out: _rows_sum_to_one(out.node_marginals) and np.isfinite(out.free_energy))
        p.valid(f"loopy_bp trw x{scale:g}", lambda s=scale: bp(unary * s, edges, pw * s, rho=0.75),
                lambda out: _rows_sum_to_one(out.node_marginals))
    res = bp(unary, edges, pw, edge_marginals=True)
    bkw = {"unary": unary, "edges": edges, "pairwise": pw, "node_marginals": res.node_marginals,
           "edge_marginals": res.edge_marginals}
    p.valid("bethe_free_energy", lambda: loopy.bethe_free_energy(**bkw))
    p.mutate("bethe_free_energy", loopy.bethe_free_energy, bkw, "node_marginals",
             bad_float_array(res.node_marginals), ("node_marginals",))
    p.mutate("bethe_free_energy", loopy.bethe_free_energy, bkw, "edge_marginals",
             bad_float_array(res.edge_marginals), ("edge_marginals",))
    p.mutate("bethe_free_energy", loopy.bethe_free_energy, bkw, "rho", bad_weights(4), ("rho",))
    p.mutate("bethe_free_energy", loopy.bethe_free_energy, bkw, "edges", bad_index_array(edges, 4), graph_names)
    akw = {"edges": edges, "n_nodes": 4}
    for fname in ("build_adjacency", "check_edge_list", "trw_edge_probabilities"):
        f = getattr(loopy, fname)
        p.valid(fname, lambda f=f: f(**akw))
        p.mutate(fname, f, akw, "edges", bad_index_array(edges, 4), ("edge",))
        p.mutate(fname, f, akw, "n_nodes", bad_int_scalar(), ("n_nodes", "node"))
    p.mutate("trw_edge_probabilities", loopy.trw_edge_probabilities, akw | {"method": "uniform"}, "method",
             bad_option(), ("method",))
    p.valid("log_softmax", lambda: loopy.log_softmax(unary), lambda out: _rows_sum_to_one(np.exp(out)))
    p.mutate("log_softmax", loopy.log_softmax, {"unary": unary}, "unary", bad_float_array(unary, True), ("unary",))
    p.run("log_softmax", "all -inf row", lambda: loopy.log_softmax(np.array([[0.0, 0.0], [-np.inf, -np.inf]])),
          ("row 1",))
    skw = dict(kw, log_seed_marginals=loopy.log_softmax(unary))
    p.mutate("seed_gains", loopy.seed_gains, skw, "log_seed_marginals", bad_float_array(unary, True),
             ("log_seed_marginals",))


def probe_utils(p):
    from sklearn_struct import utils
    from sklearn_struct.utils import graph, optimize, validation

    X = [np.ones((2, 3)), np.zeros((3, 3))]
    y = [np.array([0, 1]), np.array([1, 1, 0])]
    p.valid("check_sequences", lambda: utils.check_sequences(X, y))
    p.mutate("check_sequences", utils.check_sequences, {"X": X, "y": y}, "X", bad_sequence_list(X), ("X", "Sequence"))
    p.mutate("check_sequences", utils.check_sequences, {"X": X, "y": y}, "y", bad_label_list(y), ("y", "Sequence"))
    p.valid("check_sequence_labels", lambda: utils.check_sequence_labels(y, [2, 3]))
    p.mutate("check_sequence_labels", utils.check_sequence_labels, {"y": y, "lengths": [2, 3]}, "y",
             bad_label_list(y), ("y", "Sequence"))
    p.valid("pack_sequences", lambda: utils.pack_sequences(X))
    p.mutate("pack_sequences", utils.pack_sequences, {"X": X}, "X",
             [b for b in bad_sequence_list(X) if b[0] not in ("nan", "inf", "huge", "empty-sequence")], ("X",))
    offsets = np.array([0, 2, 5])
    packed = np.arange(10.0).reshape(5, 2)
    for fname, kw, arr_arg in [("unpack_sequences", {"packed": packed, "offsets": offsets}, "packed"),
                               ("segment_sum", {"arr": packed, "offsets": offsets}, "arr"),
                               ("segment_repeat", {"per_seq": np.ones((2, 2)), "offsets": offsets}, "per_seq"),
                               ("edge_offsets", {"offsets": offsets}, None),
                               ("transition_pairs", {"y": np.arange(5), "offsets": offsets}, "y"),
                               ("subset_sequences", {"offsets": offsets, "idx": np.array([1])}, None)]:
        f = getattr(utils, fname)
        p.valid(fname, lambda f=f, kw=kw: f(**kw))
        p.mutate(fname, f, kw, "offsets", bad_offsets(offsets), ("offsets", arr_arg or "offsets"))
        if arr_arg is not None:
            p.mutate(fname, f, kw, arr_arg,
                     [("none", None, False), ("scalar", 3.0, False), ("short", kw[arr_arg][:1], False),
                      ("strings", np.asarray(kw[arr_arg]).astype(str), False)], (arr_arg, "packed", "offsets"))
    p.mutate("subset_sequences", utils.subset_sequences, {"offsets": offsets, "idx": np.array([1])}, "idx",
             bad_index_array(np.array([1]), 2), ("idx",))
    p.valid("lengths_to_offsets", lambda: utils.lengths_to_offsets([2, 3]))
    p.mutate("lengths_to_offsets", utils.lengths_to_offsets, {"lengths": np.array([2, 3])}, "lengths",
             [b for b in bad_index_array(np.array([2, 3]), 100) if b[0] != "out-of-range"], ("lengths",))
    p.valid("run_chunks", lambda: utils.run_chunks(lambda c: c, [1, 2]))
    p.valid("even_chunks", lambda: utils.even_chunks(5, 2))
    p.mutate("even_chunks", utils.even_chunks, {"n_items": 5, "n_chunks": 2}, "n_chunks", bad_int_scalar(),
             ("n_chunks",))
    p.mutate("even_chunks", utils.even_chunks, {"n_items": 5, "n_chunks": 2}, "n_items", bad_int_scalar(),
             ("n_items",))
    p.mutate("run_chunks", utils.run_chunks, {"func": lambda c: c, "items": [1, 2]}, "func",
             [("none", None, False), ("string", "a", False)], ("func", "callable"))
    # graphs
    G = [(np.ones((3, 2)), np.array([[0, 1], [1, 2]])), (np.zeros((2, 2)), np.array([[0, 1]]))]
    gy = [np.array([0, 1, 0]), np.array([1, 1])]
    p.valid("check_graphs", lambda: graph.check_graphs(G, gy))
    bad_graphs = [("empty", [], False), ("none", None, False), ("single", G[0], False),
                  ("nan-features", [(_with(G[0][0], (0, 0), np.nan), G[0][1])] + G[1:], True),
                  ("edge-out-of-range", [(G[0][0], np.array([[0, 7]]))] + G[1:], True),
                  ("negative-edge", [(G[0][0], np.array([[0, -1]]))] + G[1:], True),
                  ("complex", [(G[0][0] + 1j, G[0][1])] + G[1:], True), ("not-a-tuple", [3, 4], True),
                  ("ragged-features", [G[0], (np.zeros((2, 5)), G[1][1])], True)]
    p.mutate("check_graphs", graph.check_graphs, {"X": G, "y": gy}, "X", bad_graphs, ("X", "Sample"))
    p.mutate("check_graphs", graph.check_graphs, {"X": G, "y": gy}, "y", bad_label_list(gy), ("y", "Sample"))
    p.mutate("check_graph_labels", graph.check_graph_labels, {"y": gy, "n_nodes": [3, 2]}, "y",
             bad_label_list(gy), ("y", "Sample"))
    p.valid("grid_edges", lambda: graph.grid_edges((3, 2)))
    p.mutate("grid_edges", graph.grid_edges, {"shape": (3, 2)}, "shape",
             [("negative", (-1, 2), False), ("zero", (0, 2), False), ("none", None, False), ("string", "ab", False),
              ("fractional", (2.5, 2), False), ("3d", (2, 2, 2), False)], ("shape",))
    p.mutate("grid_edges", graph.grid_edges, {"shape": (3, 2)}, "connectivity", bad_int_scalar(), ("connectivity",))
    imgs = [np.zeros((3, 3)), np.ones((2, 2))]
    p.valid("images_to_graphs", lambda: graph.images_to_graphs(imgs))
    p.mutate("images_to_graphs", graph.images_to_graphs, {"images": imgs}, "images",
             [("empty", [], False), ("nan", [_with(imgs[0], (0, 0), np.nan)], True), ("1d", [np.ones(3)], True),
              ("none", None, False), ("complex", [imgs[0] + 1j], True)], ("images", "Image"))
    # optimizer
    quad = lambda x: (float(np.sum((x - 1) ** 2)), 2 * (x - 1))  # noqa: E731
    p.valid("lbfgs", lambda: optimize.lbfgs(quad, np.zeros(3)), lambda r: r.success and np.allclose(r.x, 1))
    p.mutate("lbfgs", optimize.lbfgs, {"fun": quad, "x0": np.zeros(3)}, "x0", bad_float_array(np.zeros(3)),
             ("x0", "gradient"))
    p.mutate("lbfgs", lambda **kw: (lambda r: (r.x, r.success, r.message))(optimize.lbfgs(**kw)),
             {"fun": quad, "x0": np.zeros(3)}, "fun",
             [("none", None, False), ("nan-gradient", lambda x: (0.0, x * np.nan), False),
              ("wrong-gradient", lambda x: (0.0, np.zeros(2)), False), ("no-pair", lambda x: 1.0, False)],
             ("fun",))
    for arg in ("max_iter", "memory", "max_backtracks"):
        p.mutate("lbfgs", optimize.lbfgs, {"fun": quad, "x0": np.zeros(3)}, arg, bad_int_scalar(), (arg,))
    for arg in ("tol", "gtol"):
        p.mutate("lbfgs", optimize.lbfgs, {"fun": quad, "x0": np.zeros(3)}, arg, bad_real_scalar(), (arg,))
    nan_res = optimize.lbfgs(lambda x: (0.0, x * np.nan), np.ones(2))
    p.valid("lbfgs nan gradient is not success", lambda: nan_res.success is False, lambda ok: ok)
    p.valid("check_float_array", lambda: validation.check_float_array([1.0], "a"))
    p.mutate("check_float_array", validation.check_float_array, {"arr": np.ones(3), "name": "arr"}, "arr",
             bad_float_array(np.ones(3)), ("arr",))
    p.valid("check_int_array", lambda: validation.check_int_array([1, 2], "idx", low=0, high=3))
    p.mutate("check_int_array", validation.check_int_array, {"arr": np.array([1, 2]), "name": "idx", "low": 0,
                                                            "high": 3}, "arr", bad_index_array(np.array([1, 2]), 3),
             ("idx",))
    p.valid("check_offsets", lambda: validation.check_offsets([0, 1]))
    p.mutate("check_offsets", validation.check_offsets, {"offsets": np.array([0, 2, 3])}, "offsets",
             bad_offsets(np.array([0, 2, 3])), ("offsets",))
    p.valid("check_scalar_param", lambda: validation.check_scalar_param(1, "k", kind="int", low=0))
    p.mutate("check_scalar_param", validation.check_scalar_param, {"value": 1, "name": "k", "low": 0}, "value",
             bad_real_scalar(), ("k",))
    p.valid("check_sample_weight_vector", lambda: validation.check_sample_weight_vector([1.0, 2.0], 2))
    p.mutate("check_sample_weight_vector", validation.check_sample_weight_vector,
             {"sample_weight": np.ones(2), "n_samples": 2}, "sample_weight", bad_weights(2), ("sample_weight",))
    p.mutate("check_sample_weight_vector", validation.check_sample_weight_vector,
             {"sample_weight": np.ones(2), "n_samples": 2}, "n_samples", bad_int_scalar(), ("n_samples",))
    p.valid("check_random_state_seed", lambda: validation.check_random_state_seed(0))
    p.mutate("check_random_state_seed", validation.check_random_state_seed, {"random_state": 0}, "random_state",
             [("string", "a", False), ("list", [], False), ("nan", math.nan, False)], ("random_state",))
    p.valid("check_y_given", lambda: validation.check_y_given([1], "Est"))
    p.run("check_y_given", "none", lambda: validation.check_y_given(None, "Est"), ("y",))


def probe_metrics(p):
    from sklearn_struct import metrics

    y = [np.array(["B-NP", "I-NP", "O"]), np.array(["O", "B-VP"])]
    for fname in ("token_accuracy", "chunk_precision_recall_f1", "chunk_f1_score"):
        f = getattr(metrics, fname)
        p.valid(fname, lambda f=f: f(y, y))
        for arg in ("y_true", "y_pred"):
            p.mutate(fname, f, {"y_true": y, "y_pred": y}, arg,
                     [("empty", [], False), ("short", y[:1], False), ("wrong-length", [y[0][:2], y[1]], True),
                      ("none", None, False), ("number", 3, False), ("2d", [np.array([["O"]]), y[1]], True)],
                     (arg, "Sequence", "y"))
    for fname in ("chunk_precision_recall_f1", "chunk_f1_score"):
        p.mutate(fname, getattr(metrics, fname), {"y_true": y, "y_pred": y}, "scheme", bad_option(), ("scheme",))
        p.mutate(fname, getattr(metrics, fname), {"y_true": y, "y_pred": y}, "zero_division", bad_real_scalar(),
                 ("zero_division",))
    Y = np.array([[0, 1], [1, 1]])
    for fname in ("hamming_loss_multilabel", "subset_accuracy"):
        f = getattr(metrics, fname)
        p.valid(fname, lambda f=f: f(Y, Y))
        for arg in ("Y_true", "Y_pred"):
            p.mutate(fname, f, {"Y_true": Y, "Y_pred": Y}, arg,
                     [("empty", Y[:0], False), ("shape", Y[:, :1], False), ("nan", _with(Y, (0, 0), np.nan), False),
                      ("1d", Y[0], False), ("none", None, False), ("values", Y * 3, False),
                      ("strings", Y.astype(str), False)], (arg, "Y"))
    perm = [np.array([1, 0, 2]), np.array([0, 1])]
    p.valid("matching_error", lambda: metrics.matching_error(perm, perm))
    for arg in ("y_true", "y_pred"):
        p.mutate("matching_error", metrics.matching_error, {"y_true": perm, "y_pred": perm}, arg,
                 [("empty", [], False), ("short", perm[:1], False), ("wrong-length", [perm[0][:2], perm[1]], True),
                  ("none", None, False), ("nan", [np.array([np.nan, 0, 1]), perm[1]], True)], (arg, "y", "Sample"))


def probe_datasets(p):
    from sklearn_struct import datasets

    tmp = p.tmp
    for fname in ("load_conll", "read_letter_data", "read_landmark_file"):
        f = getattr(datasets, fname)
        p.mutate(fname, f, {"path": tmp / "missing"}, "path", bad_path(tmp), ("path",))
    p.mutate("load_arff_multilabel", datasets.load_arff_multilabel, {"path": tmp / "x", "n_labels": 2}, "path",
             bad_path(tmp), ("path",))
    p.mutate("load_libsvm_multilabel", datasets.load_libsvm_multilabel, {"path": tmp / "x"}, "path", bad_path(tmp),
             ("path",))
    good = tmp / "good.txt"
    good.write_text("He PRP B-NP\nreckons VBZ B-VP\n\nRates NNS B-NP\n")
    p.valid("load_conll", lambda: datasets.load_conll(good))
    p.mutate("load_conll", datasets.load_conll, {"path": good}, "label_column",
             [("out-of-range", 7, False), ("string", "nope", False), ("float", 1.5, False)], ("label_column",))
    p.mutate("load_conll", datasets.load_conll, {"path": good}, "encoding", [("unknown", "no-such-codec", False)],
             ("encoding",))
    empty_home = tmp / "home"
    empty_home.mkdir(exist_ok=True)
    for fname, kw in [("load_conll2000", {}), ("load_crfpp", {"task": "chunking"}), ("load_ocr_letters", {}),
                      ("load_yeast", {}), ("load_scene", {}), ("load_cmu_house_hotel", {}),
                      ("fetch_conll2000", {"download_if_missing": False}),
                      ("fetch_crfpp", {"task": "chunking", "download_if_missing": False}),
                      ("fetch_ocr_letters", {"download_if_missing": False}),
                      ("fetch_yeast", {"download_if_missing": False}), ("fetch_scene", {"download_if_missing": False}),
                      ("fetch_cmu_house_hotel", {"download_if_missing": False})]:
        f = getattr(datasets, fname)
        p.visited.add(fname)
        kw = dict(kw, data_home=empty_home)
        p.run(fname, "missing data", lambda f=f, kw=kw: f(**kw), (str(empty_home), "data_home", "not found"),
              path=empty_home)
        for arg in [a for a in ("subset", "task", "sequence") if a in inspect.signature(f).parameters]:
            p.mutate(fname, f, kw, arg, bad_option(), (arg,))
    p.valid("get_data_home", lambda: datasets.get_data_home(tmp))
    p.run("find_data_file", "missing", lambda: datasets.find_data_file("nope.txt", data_home=tmp),
          ("nope.txt",), path=tmp / "nope.txt")
    for fname, kw, args in [
        ("make_chain_data", {"n_sequences": 3}, ["n_sequences", "n_labels", "n_features", "min_length", "max_length"]),
        ("make_ising_grid", {"n_images": 1, "n_noisy": 2, "shape": (4, 4)}, ["n_images", "n_noisy"]),
        ("make_multilabel_pairwise", {"n_samples": 5}, ["n_samples", "n_features", "n_labels"]),
        ("make_matchings", {"n_samples": 2, "n_nodes": 3}, ["n_samples", "n_nodes", "n_features"]),
    ]:
        f = getattr(datasets, fname)
        p.valid(fname, lambda f=f, kw=kw: f(**kw, random_state=0))
        for arg in args:
            p.mutate(fname, f, kw, arg, bad_int_scalar(), (arg,))
        for arg in [a for a in ("noise", "unary_scale", "transition_scale", "edge_strength")
                    if a in inspect.signature(f).parameters]:
            p.mutate(fname, f, kw, arg, bad_real_scalar(), (arg,))
        p.mutate(fname, f, kw, "random_state", [("string", "a", False), ("negative", -1, False)],
                 ("random_state", "seed", "Seed", "state"))


def probe_preprocessing(p):
    from sklearn_struct.preprocessing import SequenceVectorizer, WindowFeaturizer

    docs = [[("He", "PRP"), ("reckons", "VBZ")], [("Rates", "NNS")]]
    p.valid("WindowFeaturizer", lambda: WindowFeaturizer(window=1).fit_transform(docs))
    bad_docs = [("empty", [], False), ("none", None, False), ("string", "abc", False), ("empty-sequence", [[]], True),
                ("number-token", [[3]], True), ("nan-token", [[float("nan")]], True), ("nested", [[[["a"]]]], True)]
    p.mutate("WindowFeaturizer.fit_transform", lambda X: WindowFeaturizer().fit_transform(X), {"X": docs}, "X",
             bad_docs, ("X", "Sequence", "token"))
    fitted = WindowFeaturizer().fit(docs)
    p.mutate("WindowFeaturizer.transform", lambda X: fitted.transform(X), {"X": docs}, "X", bad_docs,
             ("X", "Sequence", "token"))
    for arg, bads in [("window", bad_int_scalar()), ("min_freq", bad_int_scalar()),
                      ("suffix_lengths", [("negative", (-1,), False), ("string", "ab", False), ("none", None, False)])]:
        p.mutate("WindowFeaturizer", lambda **kw: WindowFeaturizer(**kw).fit(docs), {}, arg, bads, (arg,))
    dicts = [[{"w": "a", "x": 1.0}, {"w": "b"}], [{"w": "a"}]]
    p.valid("SequenceVectorizer", lambda: SequenceVectorizer().fit_transform(dicts))
    p.mutate("SequenceVectorizer.fit_transform", lambda X: SequenceVectorizer().fit_transform(X), {"X": dicts}, "X",
             [("empty", [], False), ("none", None, False), ("string", "abc", False), ("empty-sequence", [[]], True),
              ("not-dicts", [[3]], True), ("nan-value", [[{"x": float("nan")}]], True),
              ("inf-value", [[{"x": float("inf")}]], True)], ("X", "Sequence", "token"))
    p.mutate("SequenceVectorizer", lambda **kw: SequenceVectorizer(**kw).fit(dicts), {}, "min_freq", bad_int_scalar(),
             ("min_freq",))


def _lp_problem():
    from sklearn_struct.oracles.lp import make_lp_graph

    rng = np.random.default_rng(3)
    graph = make_lp_graph([[0, 1], [1, 2], [0, 2]], [2, 3, 2])
    return graph, rng.normal(size=(2, 3, 3)), rng.normal(size=(3, 3, 3)), np.array([[1, 2, 0], [0, 1, 1]])


def _bad_lp_graphs(graph):
    from sklearn_struct.oracles.lp import LPGraph

    g = graph
    return [("none", None, False), ("string", "abc", False), ("array", np.zeros((3, 2)), False),
            ("edge-out-of-range", LPGraph(g.edges + 7, g.n_states, g.indptr, g.slots), True),
            ("zero-states", LPGraph(g.edges, np.r_[g.n_states[:-1], 0], g.indptr, g.slots), True),
            ("indptr-reversed", LPGraph(g.edges, g.n_states, g.indptr[::-1].copy(), g.slots), False),
            ("slots-out-of-range", LPGraph(g.edges, g.n_states, g.indptr, g.slots + 50), True),
            ("slots-permuted", LPGraph(g.edges, g.n_states, g.indptr, g.slots[::-1].copy()), False)]


def _bad_labels(Y, n):
    Y = np.asarray(Y)
    over = Y.copy()
    over[0, 0] = 2  # node 0 has 2 states: label 2 is out of range although node 1 has 3
    return list(bad_index_array(Y, n)) + [("past-node-states", over, True), ("short", Y[:, :-1], False)]


def probe_lp(p):
    from sklearn_struct.oracles import lp

    graph, unary, pw, Y = _lp_problem()
    n_s = graph.n_states
    gn = ("graph", "edge")
    p.valid("make_lp_graph", lambda: lp.make_lp_graph(graph.edges, n_s))
    p.mutate("make_lp_graph", lp.make_lp_graph, {"edges": graph.edges, "n_states": n_s}, "edges",
             bad_index_array(graph.edges, 3), ("edge",) + gn)
    p.mutate("make_lp_graph", lp.make_lp_graph, {"edges": graph.edges, "n_states": n_s}, "n_states",
             [b for b in bad_index_array(n_s, 3) if b[0] != "out-of-range"]
             + [("zero", np.r_[n_s[:-1], 0], True), ("empty-list", [], False)], ("n_states",))

    def delta0():
        return np.zeros((2, 6, 3))

    specs = [  # name, argument names, result check
        ("star_passes", ("unary", "pairwise", "delta"), None),
        ("dual_values", ("unary", "pairwise", "delta"), lambda out: np.all(np.isfinite(out))),
        ("decode", ("unary", "delta"), lambda out: np.all(out < n_s)),
        ("primal_values", ("unary", "pairwise", "Y"), lambda out: np.all(np.isfinite(out))),
        ("lp_map", ("unary", "pairwise", "delta"), lambda out: np.all(out.dual >= out.primal - 1e-9)),
        ("icm", ("unary", "pairwise", "Y"), lambda out: np.all(out[0] < n_s)),
        ("pseudo_marginals", ("unary", "delta"), _rows_sum_to_one),
        ("max_marginals", ("unary", "pairwise", "delta"), None),
        ("conditional_scores", ("unary", "pairwise", "Y"), None),
        ("local_polytope_lp", ("unary", "pairwise"), lambda out: np.isclose(out[1].sum(), 3.0)),
    ]
    values = {"unary": unary, "pairwise": pw, "delta": None, "Y": Y}
    for fname, args, check in specs:
        f = getattr(lp, fname)
        kw = {"graph": graph, **{a: values[a] for a in args}}
        if fname == "local_polytope_lp":
            kw["unary"] = unary[0]
        if "delta" in args:
            kw["delta"] = delta0()
        p.valid(fname, lambda f=f, kw=kw: f(**kw), check)
        p.mutate(fname, f, kw, "graph", _bad_lp_graphs(graph), gn)
        for a in args:
            if a == "Y":
                p.mutate(fname, f, kw, "Y", _bad_labels(Y, 3), ("Y",))
            elif a == "delta":
                p.mutate(fname, f, kw, "delta", list(bad_float_array(delta0()))
                         + [("float-list", delta0().tolist(), False), ("int", np.zeros((2, 6, 3), dtype=int), False),
                            ("read-only", np.zeros((2, 6, 3))[:, ::-1], False)], ("delta",))
            else:
                p.mutate(fname, f, kw, a, bad_float_array(kw[a]), (a,))
    for fname, arg, bads in [("star_passes", "n_passes", bad_int_scalar()), ("lp_map", "max_iter", bad_int_scalar()),
                             ("lp_map", "tol", bad_real_scalar()), ("icm", "max_sweeps", bad_int_scalar()),
                             ("lp_map", "local_search", [("string", "yes", False), ("none", None, False)]),
                             ("pseudo_marginals", "rtol", bad_real_scalar())]:
        kw = {"graph": graph, "unary": unary, **({"delta": delta0()} if fname != "icm" else {"Y": Y}),
              **({"pairwise": pw} if fname != "pseudo_marginals" else {})}
        p.mutate(fname, getattr(lp, fname), kw, arg, bads, (arg,))
    p.valid("LocalPolytopeLP", lambda: lp.LocalPolytopeLP(graph, solver="linprog").solve(unary[0], pw))
    p.mutate("LocalPolytopeLP", lp.LocalPolytopeLP, {"graph": graph}, "graph", _bad_lp_graphs(graph), gn)
    p.mutate("LocalPolytopeLP", lp.LocalPolytopeLP, {"graph": graph}, "solver", bad_option(), ("solver",))
    model = lp.LocalPolytopeLP(graph)
    for arg, good in (("unary", unary[0]), ("pairwise", pw)):
        p.mutate("LocalPolytopeLP.solve", model.solve, {"unary": unary[0], "pairwise": pw}, arg,
                 list(bad_float_array(good)) + ([("batch", unary, False)] if arg == "unary" else []), (arg,))


def _dlpw_problem():
    graph, _, _, Y = _lp_problem()
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]]))
    kw = {"order": np.array([1, 0]), "t0": 0, "C": 1.0, "n_inner": 2, "loss_weight": 1.0 / 3,
          "Xp": X.indptr.astype(np.int64), "Xi": X.indices.astype(np.int64), "Xd": X.data, "Y": Y,
          "V": np.zeros((3, 9)), "P": np.zeros((3, 3, 3)), "state": np.array([1.0, 0.0]), "edges": graph.edges,
          "n_states": graph.n_states, "indptr": graph.indptr, "slots": graph.slots, "delta": np.zeros((2, 6, 3))}
    return graph, kw


def probe_lp_learning(p):
    from sklearn_struct.oracles import lp_learning

    graph, kw = _dlpw_problem()

    def fresh(func, names):  # in-place arguments copied per call: one bad case cannot spoil the next
        return lambda **k: func(**{**k, **{a: k[a].copy() for a in names if isinstance(k[a], np.ndarray)}})

    f = fresh(lp_learning.dlpw_epoch, ("V", "P", "state", "delta"))
    p.valid("dlpw_epoch", lambda: f(**kw), lambda t: t == 2)
    for arg, bads in [("order", bad_index_array(kw["order"], 2)), ("t0", bad_int_scalar()),
                      ("C", list(bad_real_scalar()) + [("zero", 0.0, False)]), ("n_inner", bad_int_scalar()),
                      ("loss_weight", bad_real_scalar()), ("Xp", bad_offsets(kw["Xp"])),
                      ("Xi", bad_index_array(kw["Xi"], 3)), ("Xd", bad_float_array(kw["Xd"])),
                      ("Y", _bad_labels(kw["Y"], 3)), ("V", bad_float_array(kw["V"])),
                      ("P", bad_float_array(kw["P"])), ("state", bad_float_array(kw["state"])),
                      ("edges", bad_index_array(graph.edges, 3)), ("n_states", bad_index_array(graph.n_states, 3)),
                      ("indptr", bad_offsets(graph.indptr)), ("slots", bad_index_array(graph.slots, 6)),
                      ("delta", bad_float_array(kw["delta"]))]:
        p.mutate("dlpw_epoch", f, kw, arg, bads, (arg, "graph"))
    skw = {"t": 2, "C": 1.0, "xi": np.array([0, 2]), "xv": np.array([1.0, -1.0]), "node_g": np.ones(9),
           "edge_g": np.ones((3, 3, 3)), "V": np.zeros((3, 9)), "P": np.zeros((3, 3, 3)), "state": np.array([1.0, 0.0])}
    step = fresh(lp_learning.pegasos_step, ("V", "P", "state"))
    p.valid("pegasos_step", lambda: step(**skw))
    for arg, bads in [("t", bad_real_scalar()), ("C", bad_real_scalar()), ("xi", bad_index_array(skw["xi"], 3)),
                      ("xv", bad_float_array(skw["xv"])), ("node_g", bad_float_array(skw["node_g"])),
                      ("edge_g", bad_float_array(skw["edge_g"])), ("V", bad_float_array(skw["V"])),
                      ("P", bad_float_array(skw["P"])), ("state", bad_float_array(skw["state"]))]:
        p.mutate("pegasos_step", step, skw, arg, bads, (arg,))


def _brute_log_perm(scores):
    import itertools

    n_left, n_right = scores.shape
    vals = [scores[np.arange(n_left), list(c)].sum() for c in itertools.permutations(range(n_right), n_left)]
    return np.logaddexp.reduce(vals)


def probe_matching(p):
    from sklearn_struct.oracles import matching

    scores = np.random.default_rng(4).normal(size=(3, 4))
    oversize = [("too-large", np.zeros((21, 21)), False), ("tall", scores.T, False)]
    ref = _brute_log_perm(scores)
    checks = {"log_permanent": lambda out: np.isclose(out, ref),
              "exact_marginals": lambda out: _rows_sum_to_one(out[0]) and np.isclose(out[1], ref),
              "sample_matchings": lambda out: out.shape == (5, 3) and all(len(set(r)) == 3 for r in out),
              "fw_bethe_marginals": lambda out: _rows_sum_to_one(out[0]),
              "bp_matching_marginals": lambda out: out[2] and _rows_sum_to_one(out[0], -1)}
    extra = {"sample_matchings": {"n_samples": 5, "random_state": 0}}
    for fname, check in checks.items():
        f = getattr(matching, fname)
        kw = {"scores": scores, **extra.get(fname, {})}
        p.valid(fname, lambda f=f, kw=kw: f(**kw), check)
        p.mutate(fname, f, kw, "scores", list(bad_float_array(scores)) + oversize[fname in ("fw_bethe_marginals",
                 "bp_matching_marginals"):], ("scores",))
    kw = {"scores": scores, "n_samples": 5, "random_state": 0}
    p.mutate("sample_matchings", matching.sample_matchings, kw, "n_samples", bad_int_scalar(), ("n_samples",))
    p.mutate("sample_matchings", matching.sample_matchings, kw, "random_state",
             [("string", "a", False), ("negative", -1, False), ("float", 0.5, False)], ("random_state",))
    f = matching.fw_bethe_marginals
    kw = {"scores": scores}
    tau = np.full((3, 4), 0.25)
    for arg, bads in [("rho", list(bad_real_scalar()) + [("above-1", 2.0, False)]), ("max_iter", bad_int_scalar()),
                      ("tol", bad_real_scalar()), ("step", bad_option()),
                      ("tau0", list(bad_float_array(tau)) + [("on-boundary", np.eye(3, 4), True),
                                                             ("rows-not-1", np.full((3, 4), 0.1), True)]),
                      ("callback", [("not-callable", 3, False), ("string", "abc", False)])]:
        p.mutate("fw_bethe_marginals", f, kw, arg, bads, (arg,))
    f = matching.bp_matching_marginals
    for arg, bads in [("damping", list(bad_real_scalar()) + [("one", 1.0, False)]),
                      ("max_iter", list(bad_int_scalar()) + [("zero", 0, False)]), ("tol", bad_real_scalar()),
                      ("messages", [("number", 3, False), ("none-pair", (None, None), False),
                                    ("wrong-shape", (np.zeros((2, 2)), np.zeros((2, 2))), False),
                                    ("nan", (np.full((3, 4), np.nan), np.zeros((3, 4))), True),
                                    ("ints", (np.zeros((3, 4), dtype=int), np.zeros((3, 4), dtype=int)), False),
                                    ("triple", (np.zeros((3, 4)),) * 3, False)])]:
        p.mutate("bp_matching_marginals", f, kw, arg, bads, (arg,))
    tau = matching.exact_marginals(scores)[0]
    bkw = {"tau": tau, "scores": scores}
    p.valid("bethe_free_energy", lambda: matching.bethe_free_energy(**bkw), lambda out: np.isfinite(out[0]))
    for arg, bads in [("tau", list(bad_float_array(tau)) + [("negative", np.r_[[-tau[0]], tau[1:]], True),
                                                            ("above-1", tau * 2, True)]),
                      ("scores", bad_float_array(scores)), ("rho", list(bad_real_scalar()) + [("above-1", 2.0, False)])]:
        p.mutate("bethe_free_energy", matching.bethe_free_energy, bkw, arg, bads, (arg,))
    p.valid("assignment", lambda: matching.assignment(-np.eye(3, 4)), lambda out: out.tolist() == [0, 1, 2])
    p.mutate("assignment", matching.assignment, {"costs": scores}, "costs",
             list(bad_float_array(scores)) + [("tall", scores.T, False)], ("costs",))
    costs = [scores, -np.eye(3)]
    p.valid("batched_assignment", lambda: matching.batched_assignment(costs * 3, n_jobs=2),
            lambda out: out[1].tolist() == [0, 1, 2] and len(out) == 6)
    p.mutate("batched_assignment", matching.batched_assignment, {"costs_list": costs}, "costs_list",
             [("none", None, False), ("string", "abc", False), ("number", 3, False), ("empty-list", [], False),
              ("nan-in-second", [scores, _with(np.eye(3), (1, 1), np.nan)], True),
              ("1d", [scores, np.ones(3)], True), ("tall", [scores, scores.T], True),
              ("ragged", [scores, [[1.0], [1.0, 2.0]]], True), ("3d-array", np.zeros((2, 2, 2, 2)), False)],
             ("costs_list",))
    p.mutate("batched_assignment", matching.batched_assignment, {"costs_list": costs}, "n_jobs",
             [("string", "a", False), ("zero", 0, False), ("float", 1.5, False)], ("n_jobs",))


def probe_energies(p):
    from sklearn_struct import energies

    y = [np.array([0, 1, 1]), np.array([1, 0])]
    offsets = np.array([0, 3, 5])
    node = np.full((5, 2), 0.5)
    psi1 = np.ones((2, 1))
    specs = [("SoftConstraintEnergy", lambda: energies.SoftConstraintEnergy(node_coef=[[1.0, -1.0]]), psi1),
             ("UnigramDictionaryEnergy", energies.UnigramDictionaryEnergy, psi1),
             ("WordDictionaryEnergy", energies.WordDictionaryEnergy, psi1),
             ("PoissonCountEnergy", lambda: energies.PoissonCountEnergy(counts=[np.ones((3, 2)), np.ones((2, 2))]),
              psi1)]
    for name, make, psi in specs:
        e = make()
        p.valid(name, lambda e=e, psi=psi: e.fit(y, 2).value(node, None, offsets, psi=psi))
        p.mutate(f"{name}.fit", lambda y, n_labels, e=e: e.fit(y, n_labels), {"y": y, "n_labels": 2}, "y",
                 [b for b in bad_label_list(y) if b[0] not in ("short", "wrong-length")]
                 + [("negative-label", [np.array([-1, 0])], True), ("label-too-big", [np.array([0, 7])], True)],
                 ("y", "Sequence", "label"))
        p.mutate(f"{name}.fit", lambda y, n_labels, e=e: e.fit(y, n_labels), {"y": y, "n_labels": 2}, "n_labels",
                 bad_int_scalar(), ("n_labels", "label"))
        e.fit(y, 2)
        p.mutate(f"{name}.value", lambda node, e=e, psi=psi: e.value(node, None, offsets, psi=psi), {"node": node},
                 "node", [b for b in bad_float_array(node) if b[0] in ("nan", "posinf", "wrong-shape", "none",
                                                                       "strings", "complex", "ndim+1")],
                 ("node", "marginal", "mu"))
        p.mutate(f"{name}.value", lambda psi, e=e: e.value(node, None, offsets, psi=psi), {"psi": psi}, "psi",
                 [("nan", [[np.nan], [1.0]], False), ("wrong-shape", np.ones((3, 3)), False), ("none", None, False),
                  ("strings", [["a"], ["b"]], False)], ("psi",))
    p.mutate("SoftConstraintEnergy", lambda node_coef: energies.SoftConstraintEnergy(node_coef).fit(y, 2),
             {"node_coef": [[1.0, -1.0]]}, "node_coef", bad_float_array(np.array([[1.0, -1.0]])), ("node_coef",))
    p.valid("smoothed_hinge", lambda: energies.smoothed_hinge(np.array([-2.0, 0.5, 2.0])))
    p.mutate("smoothed_hinge", energies.smoothed_hinge, {"z": np.array([0.5])}, "z",
             [("nan", np.array([np.nan]), True), ("strings", np.array(["a"]), False), ("none", None, False),
              ("complex", np.array([1j]), False)], ("z",))
    X = [np.ones((2, 3)), np.zeros((3, 3))]
    p.valid("RandomFourierMeanMap", lambda: energies.RandomFourierMeanMap(n_components=8, random_state=0)
            .fit(X).transform(X))
    p.mutate("RandomFourierMeanMap.fit", lambda X: energies.RandomFourierMeanMap(n_components=8).fit(X), {"X": X},
             "X", bad_sequence_list(X), ("X", "Sequence"))
    p.mutate("RandomFourierMeanMap", lambda **kw: energies.RandomFourierMeanMap(**kw).fit(X), {}, "n_components",
             bad_int_scalar(), ("n_components",))
    p.mutate("RandomFourierMeanMap", lambda **kw: energies.RandomFourierMeanMap(**kw).fit(X), {}, "gamma",
             bad_real_scalar(), ("gamma",))


def probe_estimators(p):
    from sklearn.exceptions import NotFittedError

    from sklearn_struct import NonLocalCRF, PrunedBPMarginals, pruned_marginals
    from sklearn_struct.datasets import make_chain_data, make_ising_grid
    from sklearn_struct.utils.graph import images_to_graphs

    X, y = make_chain_data(4, n_features=4, random_state=0)
    est = NonLocalCRF(max_iter=3)
    p.valid("NonLocalCRF", lambda: est.fit(X, y).predict(X))
    p.mutate("NonLocalCRF.fit", lambda X, y: NonLocalCRF(max_iter=2).fit(X, y), {"X": X, "y": y}, "X",
             bad_sequence_list(X), ("X", "Sequence"))
    p.mutate("NonLocalCRF.fit", lambda X, y: NonLocalCRF(max_iter=2).fit(X, y), {"X": X, "y": y}, "y",
             bad_label_list(y), ("y", "Sequence"))
    for method in ("predict", "predict_marginals", "infer"):
        p.mutate(f"NonLocalCRF.{method}", lambda X, m=method: getattr(est, m)(X), {"X": X}, "X",
                 bad_sequence_list(X) if method != "predict" else
                 [b for b in bad_sequence_list(X) if b[0] != "huge"], ("X", "Sequence"))
    p.mutate("NonLocalCRF.score", lambda y: est.score(X, y), {"y": y}, "y", bad_label_list(y), ("y", "Sequence"))
    p.run("NonLocalCRF.predict", "not fitted", lambda: NonLocalCRF().predict(X), ("NonLocalCRF", "fitted"))
    # issue #35: allowed_transitions, fixed=, predict_topk, sequence_log_proba
    st_est = NonLocalCRF(max_iter=3, allowed_transitions=np.ones((4, 4), dtype=bool))
    p.valid("NonLocalCRF.predict_topk", lambda: st_est.fit(X, y).predict_topk(X, 3))
    p.valid("NonLocalCRF.sequence_log_proba", lambda: st_est.fit(X, y).sequence_log_proba(X, y))
    p.valid("NonLocalCRF.predict (fixed)", lambda: st_est.fit(X, y).predict(X, fixed=[[0] + [None] * (len(X[0]) - 1),
                                                                                  None] + [None] * (len(X) - 2)))
    p.mutate("NonLocalCRF.predict_topk", lambda X: st_est.predict_topk(X, 2), {"X": X}, "X",
             [b for b in bad_sequence_list(X) if b[0] != "huge"], ("X", "Sequence"))
    p.mutate("NonLocalCRF.predict_topk", lambda k: st_est.predict_topk(X, k), {"k": 2}, "k", bad_int_scalar(), ("k",))
    p.mutate("NonLocalCRF.sequence_log_proba", lambda y: st_est.sequence_log_proba(X, y), {"y": y}, "y",
             bad_label_list(y), ("y", "Sequence"))
    bad_fixed = [("wrong-count", [None], False), ("not-a-list", 3, False), ("string", "abc", False),
                 ("wrong-length", [[0]] + [None] * (len(X) - 1), False),
                 ("unseen-label", [[99] * len(X[0])] + [None] * (len(X) - 1), False),
                 ("empty-set", [[set()] * len(X[0])] + [None] * (len(X) - 1), False)]
    for method in ("predict", "predict_marginals", "infer"):
        p.mutate(f"NonLocalCRF.{method}", lambda fixed, m=method: getattr(st_est, m)(X, fixed=fixed),
                 {"fixed": None}, "fixed", bad_fixed, ("fixed",))
    p.mutate("NonLocalCRF", lambda **kw: NonLocalCRF(max_iter=2, **kw).fit(X, y), {}, "allowed_transitions",
             [("wrong-shape", np.ones((2, 2), dtype=bool), False), ("not-bool", np.ones((4, 4)), False),
              ("unknown-scheme", "XYZ", False), ("ragged", [[True], [True, False]], False),
              ("short-tuple", (np.ones((4, 4), dtype=bool),), False), ("number", 3, False)],
             ("allowed_transitions",))
    for arg, bads in [("c2", bad_real_scalar()), ("max_iter", bad_int_scalar()), ("tol", bad_real_scalar())]:
        p.mutate("NonLocalCRF", lambda **kw: NonLocalCRF(**kw).fit(X, y), {}, arg, bads, (arg,))
    noisy, clean = make_ising_grid(n_images=1, n_noisy=2, shape=(4, 4), random_state=0)[:2]
    G, gy = images_to_graphs(noisy), [c.ravel() for c in clean]
    pb = PrunedBPMarginals(max_iter=2)
    p.valid("PrunedBPMarginals", lambda: pb.fit(G, gy).predict_marginals(G),
            lambda out: all(_rows_sum_to_one(m) for m in out))
    bad_graphs = [("empty", [], False), ("none", None, False), ("single", G[0], False),
                  ("nan-features", [(_with(G[0][0], (0, 0), np.nan), G[0][1])] + G[1:], True),
                  ("edge-out-of-range", [(G[0][0], np.array([[0, 99]]))] + G[1:], True),
                  ("complex", [(G[0][0] + 1j, G[0][1])] + G[1:], True), ("not-a-tuple", [3, 4], True),
                  ("huge-features", [(np.full_like(G[0][0], 1e308), G[0][1])] + G[1:], True)]
    p.mutate("PrunedBPMarginals.fit", lambda X, y: PrunedBPMarginals(max_iter=2).fit(X, y), {"X": G, "y": gy}, "X",
             bad_graphs, ("X", "Sample", "graph"))
    p.mutate("PrunedBPMarginals.fit", lambda X, y: PrunedBPMarginals(max_iter=2).fit(X, y), {"X": G, "y": gy}, "y",
             list(bad_label_list(gy)) + [("one-class", [np.zeros(16), np.zeros(16)], False)], ("y", "Sample", "class"))
    p.mutate("PrunedBPMarginals.predict", lambda X: pb.predict(X), {"X": G}, "X", bad_graphs, ("X", "Sample", "graph"))
    p.mutate("PrunedBPMarginals.score", lambda sample_weight: pb.score(G, gy, sample_weight=sample_weight),
             {"sample_weight": None}, "sample_weight", bad_weights(2), ("sample_weight",))
    p.run("PrunedBPMarginals.predict", "not fitted", lambda: PrunedBPMarginals().predict(G),
          ("PrunedBPMarginals", "fitted"))
    assert issubclass(NotFittedError, ValueError)
    unary, edges, pw = _graph_problem()
    kw = {"unary": unary, "edges": edges, "pairwise": pw}
    p.valid("pruned_marginals", lambda: pruned_marginals(**kw), _rows_sum_to_one)
    p.mutate("pruned_marginals", pruned_marginals, kw, "unary", bad_float_array(unary), ("unary", "graph"))
    p.mutate("pruned_marginals", pruned_marginals, kw, "edges", bad_index_array(edges, 4), ("edge", "graph"))
    p.mutate("pruned_marginals", pruned_marginals, kw, "pairwise", bad_float_array(pw), ("pairwise", "graph"))
    for arg, bads in [("gamma", bad_real_scalar()), ("epsilon", bad_real_scalar()), ("m", bad_int_scalar()),
                      ("max_iter", bad_int_scalar()), ("tol", bad_real_scalar()), ("damping", bad_real_scalar()),
                      ("objective", bad_option()), ("inference", bad_option()), ("dropped", bad_option()),
                      ("rho", bad_weights(4))]:
        extra = {"objective": "min_divergence"} if arg == "m" else {"objective": "min_size"} if arg == "epsilon" else {}
        extra = dict(extra, inference="trw") if arg == "rho" else extra
        p.mutate("pruned_marginals", pruned_marginals, dict(kw, **extra), arg, bads, (arg,))


def probe_generic(p, names):
    """Every public callable not visited above: None / NaN / strings / empty lists for each parameter."""
    for module, name in names:
        obj = getattr(importlib.import_module(module), name)
        if hasattr(obj, "__dataclass_fields__"):  # plain records (Adjacency, BPResult): built by the
            p.visited.add(name)  # library; a user-made Adjacency is checked where it is used (loopy_bp)
            continue
        if name in p.visited or not callable(obj):
            continue
        p.generic.add(name)  # reached, but only by this generic probe: not a fuzz entry
        try:
            params = [q for q in inspect.signature(obj).parameters.values()
                      if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            continue
        required = [q for q in params if q.default is q.empty]
        offline = {}  # never let a probe download anything: an empty data home, downloads off
        all_params = inspect.signature(obj).parameters
        if "data_home" in all_params:
            offline["data_home"] = p.tmp / "empty-data-home"
            offline["data_home"].mkdir(exist_ok=True)
        if "download_if_missing" in all_params:
            offline["download_if_missing"] = False
        required = [q for q in required if q.name not in offline]
        for bad_label, bad in [("none", None), ("nan", math.nan), ("string", "abc"), ("empty-list", []),
                               ("nan-array", np.full((2, 2), np.nan))]:
            args = [bad] * len(required)
            p.run(f"{name} (generic)", bad_label, lambda obj=obj, args=args: obj(*args, **offline),
                  tuple(q.name for q in params) + (name,) if params else (name,),
                  path=offline.get("data_home", bad if isinstance(bad, str) else None))


# --------------------------------------------------------------------------------------
# hypothesis: random shapes, values and indices for the oracles and packing helpers
# --------------------------------------------------------------------------------------


def probe_hypothesis(p, max_examples):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays

    from sklearn_struct.oracles.chain import forward_backward, viterbi
    from sklearn_struct.oracles.loopy import loopy_bp
    from sklearn_struct.utils import subset_sequences, transition_pairs

    cfg = settings(max_examples=max_examples, deadline=None, derandomize=True,
                   suppress_health_check=list(HealthCheck))
    values = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                       st.sampled_from([0.0, 1e308, -1e308, 1e-308, 1e6, -np.inf]))

    def record(label, thunk, names, check=None):
        p.cases += 1
        reason = judge(thunk, names)
        if reason is None and check is not None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = thunk()
            except ALLOWED:
                out = None
            if out is not None and not check(out):
                reason = "wrong result"
        if reason is not None:
            p.failures.append(f"hypothesis {label}: {reason}")

    @cfg
    @given(arrays(np.float64, st.tuples(st.integers(0, 6), st.integers(0, 4)), elements=values),
           arrays(np.float64, st.tuples(st.integers(0, 4), st.integers(0, 4)), elements=values),
           st.lists(st.integers(-2, 8), min_size=0, max_size=5))
    def chain_fuzz(unary, trans, offsets):
        for f in (forward_backward, viterbi):
            record(f"{f.__name__}{unary.shape, trans.shape, offsets}", lambda f=f: f(unary, trans, offsets),
                   ("unary", "transition", "offsets", "Sequence"),
                   (lambda out: _rows_sum_to_one(out[1])) if f is forward_backward else None)

    @cfg
    @given(arrays(np.float64, st.tuples(st.integers(0, 5), st.integers(0, 3)), elements=values),
           st.lists(st.tuples(st.integers(-2, 7), st.integers(-2, 7)), max_size=6),
           arrays(np.float64, st.sampled_from([(2, 2), (3, 3), (1, 2, 2)]), elements=values))
    def loopy_fuzz(unary, edges, pairwise):
        record(f"loopy_bp{unary.shape, edges, pairwise.shape}",
               lambda: loopy_bp(unary, np.array(edges, dtype=np.int64).reshape(-1, 2), pairwise, max_iter=20),
               ("unary", "edge", "pairwise", "graph"), lambda out: _rows_sum_to_one(out.node_marginals))

    @cfg
    @given(st.lists(st.integers(-3, 9), min_size=0, max_size=6), st.lists(st.integers(-3, 9), max_size=4))
    def packing_fuzz(offsets, idx):
        record(f"subset_sequences{offsets, idx}", lambda: subset_sequences(np.array(offsets), np.array(idx)),
               ("offsets", "idx"))
        record(f"transition_pairs{offsets}", lambda: transition_pairs(np.arange(5), np.array(offsets)),
               ("offsets", "y"))

    from sklearn_struct.oracles.lp import lp_map, make_lp_graph
    from sklearn_struct.oracles.matching import bp_matching_marginals, fw_bethe_marginals, log_permanent

    @cfg
    @given(st.lists(st.tuples(st.integers(-1, 4), st.integers(-1, 4)), max_size=5),
           st.lists(st.integers(0, 3), min_size=0, max_size=4),
           arrays(np.float64, st.tuples(st.integers(0, 2), st.integers(0, 4), st.integers(0, 3)), elements=values),
           arrays(np.float64, st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 3)), elements=values))
    def lp_fuzz(edges, n_states, unary, pairwise):
        def call():
            graph = make_lp_graph(np.array(edges, dtype=np.int64).reshape(-1, 2), n_states)
            return lp_map(graph, unary, pairwise, max_iter=50)

        record(f"lp_map{edges, n_states, unary.shape, pairwise.shape}", call,
               ("graph", "edge", "n_states", "unary", "pairwise"), lambda out: np.all(out.dual >= out.primal - 1e-6))

    @cfg
    @given(arrays(np.float64, st.tuples(st.integers(0, 4), st.integers(0, 5)), elements=values))
    def matching_fuzz(scores):
        record(f"log_permanent{scores.shape}", lambda: log_permanent(scores), ("scores",))
        record(f"fw_bethe_marginals{scores.shape}", lambda: fw_bethe_marginals(scores, max_iter=30), ("scores",),
               lambda out: _rows_sum_to_one(out[0]))
        record(f"bp_matching_marginals{scores.shape}", lambda: bp_matching_marginals(scores, max_iter=30),
               ("scores",))

    for fuzz in (chain_fuzz, loopy_fuzz, packing_fuzz, lp_fuzz, matching_fuzz):
        print(f"hypothesis :: {fuzz.__name__}", file=sys.stderr, flush=True)
        fuzz()


SECTIONS = ["chain", "linear", "loopy", "lp", "lp_learning", "matching", "utils", "metrics", "datasets",
            "preprocessing", "energies", "estimators", *FILE_SECTIONS, *ROUND3_SECTIONS, *ROUND4_SECTIONS,
            "generic", "hypothesis"]


def main(max_examples=60, only=None):
    names = public_names()
    with tempfile.TemporaryDirectory() as tmp:
        p = Probe(tmp)
        for section in only or SECTIONS:
            start = time.perf_counter()
            try:
                if section == "generic":
                    probe_generic(p, names)
                elif section == "hypothesis":
                    probe_hypothesis(p, max_examples)
                elif section in FILE_SECTIONS:
                    FILE_SECTIONS[section](p)
                elif section in ROUND3_SECTIONS:
                    ROUND3_SECTIONS[section](p)
                elif section in ROUND4_SECTIONS:
                    ROUND4_SECTIONS[section](p)
                else:
                    globals()[f"probe_{section}"](p)
            except Exception as exc:  # noqa: BLE001 - a probe that cannot even be set up is a finding too
                p.failures.append(f"section {section} crashed: {type(exc).__name__}: {str(exc)[:160]}")
            print(f"== {section}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    listed = sorted({n for _, n in names})
    print(json.dumps({"cases": p.cases, "failures": p.failures, "visited": sorted(p.visited), "listed": listed,
                      "generic_only": sorted(p.generic - p.visited)}))


if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:  # the public callables, one ``module.name`` a line (tests/fuzz_public_callables.txt)
        print("\n".join(f"{module}.{name}" for module, name in public_names()))
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 60, sys.argv[2].split(",") if len(sys.argv) > 2 else None)
