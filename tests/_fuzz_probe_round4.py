"""Sections of the bad-input probe (``tests/_fuzz_probe.py``) for the public API of round four.

The public callables added since round three, each with a valid call (checked against a known
answer where one is cheap) and the applicable bad inputs, one argument at a time. Same rules as
the rest of the probe (:func:`_fuzz_probe.judge`): a ValueError / TypeError naming what is wrong,
or a NaN-free result.

* ``chain_constrained``: ``constrain_potentials``, ``constrained_forward_backward`` /
  ``constrained_viterbi`` (all-True masks equal the unconstrained oracles), ``kbest_viterbi``
  (k=1 equals Viterbi, every k equals enumeration) and ``chain_scores``; masks of the wrong
  dtype / shape, ragged, masks that allow no labelling, bad ``k`` and ``labels``.
* ``shards``: ``ResidentShards`` (local path only, no dask cluster), ``n_shards``, ``tree_sum``,
  ``shard_options``, ``dask_client``, ``count_worker_bytes`` (with a stand-in client),
  ``ShardLostError``.
* ``explain``: ``explain_prediction`` (unfitted / foreign estimators, bad sequences,
  ``feature_names``, ``top``) and its records ``SequenceExplanation``, ``TokenExplanation``,
  ``LabelScore``; ``ModelFileError``.
* ``round4_dlpw``: ``DLPWClassifierCV`` on tiny data (cv=2, two values of C) and
  ``oracles.lp_learning.sets_epoch``.
* ``segment_errors``: ``metrics.segment_error_events`` (checked against a hand-worked answer),
  ``segment_error_table`` and ``segment_f1_if_fixed``: non-BIO tags, ragged and mismatched
  sequences, foreign events and totals, a key that is not callable.
"""

import itertools
import math

import numpy as np


def _P():  # the probe's helpers, imported late: _fuzz_probe imports this module
    import _fuzz_probe

    return _fuzz_probe


# ---------------------------------------------------------------------- chain_constrained

def _chain():
    rng = np.random.default_rng(4)
    return rng.normal(size=(5, 3)), rng.normal(size=(3, 3)), np.array([0, 2, 5])


def _brute_scores(unary, trans, offsets):
    """Every labelling's score of every chain, sorted best first."""
    out = []
    for s in range(len(offsets) - 1):
        u = unary[offsets[s]:offsets[s + 1]]
        scores = [sum(u[t, y[t]] for t in range(len(y))) + sum(trans[y[t], y[t + 1]] for t in range(len(y) - 1))
                  for y in itertools.product(range(u.shape[1]), repeat=u.shape[0])]
        out.append(sorted(scores, reverse=True))
    return out


def bad_masks(shape):
    ones = np.ones(shape, dtype=bool)
    yield "int-dtype", ones.astype(int), False
    yield "float-dtype", ones.astype(float), False
    yield "strings", ones.astype(str), False
    yield "wrong-shape", ones[..., :-1], False
    yield "ndim+1", ones[None], False
    yield "empty", ones[:0], False
    yield "scalar", True, False
    yield "a-string", "abc", False
    yield "ragged", [[True, False], [True]], False
    yield "nan", np.full(shape, np.nan), False
    yield "object", ones.astype(object), False


def probe_chain_constrained(p):
    from sklearn_struct.oracles.chain import forward_backward, viterbi
    from sklearn_struct.oracles.chain_constrained import (
        chain_scores,
        constrain_potentials,
        constrained_forward_backward,
        constrained_viterbi,
        kbest_viterbi,
    )

    P = _P()
    unary, trans, offsets = _chain()
    n_tok, L = unary.shape
    masks = {"allowed": np.ones((n_tok, L), bool), "transitions": np.ones((L, L), bool), "start": np.ones(L, bool),
             "end": np.ones(L, bool)}

    def same_fb(out):
        ref = forward_backward(unary, trans, offsets)
        return all(np.allclose(a, b) for a, b in zip(out, ref))

    p.valid("constrained_forward_backward", lambda: constrained_forward_backward(unary, trans, offsets, **masks),
            same_fb)
    p.valid("constrained_forward_backward (no masks)", lambda: constrained_forward_backward(unary, trans, offsets),
            same_fb)
    fixed = masks["allowed"].copy()
    fixed[1] = [False, True, False]  # token 1 (last of sequence 0) forced to label 1
    p.valid("constrained_forward_backward (forced token)",
            lambda: constrained_forward_backward(unary, trans, offsets, allowed=fixed),
            lambda out: np.allclose(out[1][1], [0.0, 1.0, 0.0]) and P._rows_sum_to_one(out[1]))
    p.valid("constrained_viterbi", lambda: constrained_viterbi(unary, trans, offsets, **masks),
            lambda out: np.array_equal(out[0], viterbi(unary, trans, offsets)[0])
            and np.allclose(out[1], viterbi(unary, trans, offsets)[1]))
    p.valid("constrained_viterbi (forced token)", lambda: constrained_viterbi(unary, trans, offsets, allowed=fixed),
            lambda out: out[0][1] == 1)
    p.valid("constrain_potentials", lambda: constrain_potentials(unary, trans, offsets, allowed=fixed,
                                                                 transitions=masks["transitions"]),
            lambda out: out[0][1, 0] == -np.inf and np.array_equal(out[0][2:], unary[2:]) and np.array_equal(out[1],
                                                                                                            trans))
    p.valid("kbest_viterbi k=1", lambda: kbest_viterbi(unary, trans, offsets, 1),
            lambda out: np.array_equal(out[0][0], viterbi(unary, trans, offsets)[0])
            and np.allclose(out[1][:, 0], viterbi(unary, trans, offsets)[1]))
    brute = _brute_scores(unary, trans, offsets)

    def same_as_enumeration(out):
        labels, scores = out
        for s, ref in enumerate(brute):
            got = scores[s][np.isfinite(scores[s])]
            if len(got) != min(len(ref), 30) or not np.allclose(got, ref[:30]):
                return False
        # every returned labelling scores what chain_scores says
        return all(np.allclose(chain_scores(unary, trans, offsets, labels[r])[np.isfinite(scores[:, r])],
                               scores[np.isfinite(scores[:, r]), r]) for r in range(9))

    p.valid("kbest_viterbi k=30", lambda: kbest_viterbi(unary, trans, offsets, 30), same_as_enumeration)
    p.valid("kbest_viterbi np.int64", lambda: kbest_viterbi(unary, trans, offsets, np.int64(2)),
            lambda out: out[0].shape == (2, n_tok) and np.all(np.diff(out[1], axis=1) <= 1e-12))
    y = viterbi(unary, trans, offsets)[0]
    p.valid("chain_scores", lambda: chain_scores(unary, trans, offsets, y),
            lambda out: np.allclose(out, viterbi(unary, trans, offsets)[1]))
    p.valid("chain_scores (list labels)", lambda: chain_scores(unary.tolist(), trans, [0, 2, 5], y.tolist()),
            lambda out: out.shape == (2,))

    kw = {"unary": unary, "transition": trans, "offsets": offsets}
    pot_names = ("unary", "transition", "offsets", "Sequence", "sequence")
    oracles = {"constrain_potentials": constrain_potentials,
               "constrained_forward_backward": constrained_forward_backward,
               "constrained_viterbi": constrained_viterbi,
               "kbest_viterbi": lambda **k: kbest_viterbi(k=2, **k),
               "chain_scores": lambda **k: chain_scores(labels=y, **k)}
    for name, f in oracles.items():
        p.mutate(name, f, kw, "unary", P.bad_float_array(unary, allow_neg_inf=True),
                 pot_names + (("labels",) if name == "chain_scores" else ()))
        p.mutate(name, f, kw, "transition", P.bad_float_array(trans, allow_neg_inf=True), pot_names)
        p.mutate(name, f, kw, "offsets", P.bad_offsets(offsets), pot_names + (("labels",) if name == "chain_scores"
                                                                               else ()))
    shapes = {"allowed": (n_tok, L), "transitions": (L, L), "start": (L,), "end": (L,)}
    for name in ("constrain_potentials", "constrained_forward_backward", "constrained_viterbi"):
        for mask, shape in shapes.items():
            p.mutate(name, oracles[name], dict(kw), mask, bad_masks(shape), (mask,))
    # masks that leave a sequence with no allowed labelling: a ValueError naming the sequence
    none_ok = masks["allowed"].copy()
    none_ok[3] = False  # token 3 (sequence 1) may take no label
    no_start = np.zeros(L, bool)
    chainlock = np.eye(L, dtype=bool)[::-1]  # only i -> L-1-i transitions ...
    end_block = np.zeros(L, bool)
    end_block[0] = True  # ... and sequence 1 (length 3, starts anywhere) must end in 0: start is then 0 ...
    infeasible = [("token-with-no-label", {"allowed": none_ok}), ("no-start-label", {"start": no_start}),
                  ("no-end-label", {"end": np.zeros(L, bool)}),
                  ("no-transition", {"transitions": np.zeros((L, L), bool)}),
                  ("forced-against-transitions", {"allowed": fixed, "transitions": np.array(
                      [[True, False, True], [True, False, True], [True, False, True]])})]
    for name in ("constrained_forward_backward", "constrained_viterbi"):
        for label, extra in infeasible:
            p.run(name, label, lambda f=oracles[name], e=extra: f(unary, trans, offsets, **e),
                  ("Sequence", "sequence"), index=True)
        p.valid(f"{name} (reversed-label chains)", lambda f=oracles[name]: f(unary, trans, offsets,
                                                                            transitions=chainlock, end=end_block))
    for label, extra in infeasible:
        p.valid(f"constrain_potentials ({label})", lambda e=extra: constrain_potentials(unary, trans, offsets, **e))
    forbidden = np.full_like(unary, -np.inf)
    p.run("kbest_viterbi", "all-forbidden", lambda: kbest_viterbi(forbidden, trans, offsets, 2),
          ("Sequence", "sequence"), index=True)
    p.valid("kbest_viterbi (masked)", lambda: kbest_viterbi(*constrain_potentials(unary, trans, offsets, allowed=fixed),
                                                            offsets, 4),
            lambda out: np.all(out[0][:, 1][np.isfinite(out[1][0])] == 1))
    p.mutate("kbest_viterbi", kbest_viterbi, dict(kw, k=2), "k",
             [("zero", 0, False), ("negative", -1, False), ("string", "a", False), ("fractional", 2.5, False),
              ("float-integral", 2.0, False), ("none", None, False), ("nan", math.nan, False), ("inf", math.inf, False),
              ("bool", True, False), ("array", np.array([2]), False), ("huge", 10**12, False),
              ("beyond-int64", 10**30, False)], ("k",))
    p.mutate("chain_scores", chain_scores, dict(kw, labels=y), "labels",
             list(P.bad_index_array(y, L)) + [("wrong-length", y[:-1], False), ("2d", y[:, None], False),
                                               ("ragged", [[0, 1], [2]], False), ("a-string", "abc", False),
                                               ("object", y.astype(object), False)], ("labels",))
    p.valid("chain_scores (forbidden label)", lambda: chain_scores(*constrain_potentials(unary, trans, offsets,
                                                                                         allowed=fixed), offsets, y),
            lambda out: not np.isnan(out).any())


# ---------------------------------------------------------------------- shards

def _loss(shard, theta):
    return float(np.sum((shard - theta) ** 2)), 2.0 * (theta - shard).sum(axis=0)


class _StandInClient:
    """What count_worker_bytes uses of a distributed.Client (``run``), without a cluster."""

    def __init__(self):
        self.calls = 0

    def run(self, func):
        self.calls += 1
        return {"tcp://stand-in:1": 10 * self.calls}


def probe_shards(p):
    from sklearn_struct.utils.shards import (
        ResidentShards,
        ShardLostError,
        count_worker_bytes,
        dask_client,
        n_shards,
        shard_options,
        tree_sum,
    )
    from sklearn_struct.utils.shards import _OPTIONS

    P = _P()
    parts = [np.ones((2, 3)), np.zeros((1, 3))]

    def local_sum(shards=parts, **kw):
        with ResidentShards(shards, **kw) as s:
            return s.sum(_loss, np.zeros(3))

    expect = lambda out: out[0] == 6.0 and np.array_equal(out[1], [-4.0, -4.0, -4.0])  # noqa: E731
    p.valid("ResidentShards", local_sum, expect)
    p.valid("ResidentShards n_jobs=2", lambda: local_sum(n_jobs=2), expect)
    p.valid("ResidentShards tuple", lambda: local_sum(tuple(parts)), expect)
    p.valid("ResidentShards.map", lambda: ResidentShards(parts).map(np.add, 1.0),
            lambda out: len(out) == 2 and out[1].shape == (1, 3) and np.all(out[1] == 1.0))
    p.valid("ResidentShards.from_loaders", lambda: ResidentShards.from_loaders(
        [lambda: np.ones((2, 3)), lambda: np.zeros((1, 3))]).sum(_loss, np.zeros(3)), expect)
    p.valid("ResidentShards (one shard)", lambda: local_sum(parts[:1]), lambda out: out[0] == 6.0)
    p.mutate("ResidentShards", local_sum, {}, "shards",
             [("none", None, False), ("nan", math.nan, False), ("number", 3, False), ("a-string", "abc", False),
              ("a-dict", {"a": 1}, False), ("empty", [], False)], ("shards",))
    p.mutate("ResidentShards", local_sum, {}, "n_jobs",
             [("zero", 0, False), ("string", "a", False), ("fractional", 2.5, False), ("nan", math.nan, False),
              ("bool", True, False), ("list", [2], False)], ("n_jobs",))
    p.mutate("ResidentShards", local_sum, {}, "client",
             [("string", "abc", False), ("number", 3, False), ("list", [], False)], ("client",))
    p.mutate("ResidentShards.from_loaders", lambda loaders: ResidentShards.from_loaders(loaders).map(_loss, 0.0),
             {"loaders": [lambda: np.ones(2)]}, "loaders",
             [("none", None, False), ("nan", math.nan, False), ("not-callable", [1, 2], True),
              ("a-string", "abc", False)], ("loaders",))

    p.valid("n_shards", lambda: (n_shards(3), n_shards(None), n_shards(np.int64(2)), n_shards(-1)),
            lambda out: out[:3] == (3, 1, 2) and out[3] >= 1)
    p.mutate("n_shards", n_shards, {"n_jobs": 2}, "n_jobs",
             [("zero", 0, False), ("string", "a", False), ("empty-list", [], False), ("array", np.ones(2), False),
              ("fractional", 2.5, False), ("nan", math.nan, False), ("inf", math.inf, False), ("bool", True, False)],
             ("n_jobs",))
    p.mutate("n_shards", n_shards, {"n_jobs": 2}, "client",
             [("string", "abc", False), ("number", 3, False)], ("client",))

    p.valid("tree_sum", lambda: tree_sum([(1.0, np.ones(2)), (2.0, np.ones(2)), (3.0, np.zeros(2))]),
            lambda out: out[0] == 6.0 and np.array_equal(out[1], [2.0, 2.0]))
    p.valid("tree_sum (numbers)", lambda: tree_sum((1, 2, 3, 4, 5)), lambda out: out == 15)
    p.mutate("tree_sum", tree_sum, {"results": [1.0]}, "results",
             [("none", None, False), ("nan", math.nan, False), ("empty", [], False), ("a-string", "abc", False),
              ("nan-array", np.full((2, 2), np.nan), False), ("array", np.ones(3), False),
              ("generator", (x for x in [1.0]), False), ("a-dict", {"a": 1.0}, False)], ("results",))

    def options(**kw):
        with shard_options(**kw):
            return dict(_OPTIONS.get())

    p.valid("shard_options", lambda: options(timeout=30.0, max_recoveries=0, poll=0.1),
            lambda out: out == {"timeout": 30.0, "max_recoveries": 0, "poll": 0.1} and _OPTIONS.get()["timeout"] == 600)
    p.valid("shard_options (inf timeout)", lambda: options(timeout=math.inf), lambda out: out["timeout"] == math.inf)
    for arg, bads in [("timeout", [("zero", 0.0, False), ("negative", -1.0, False), ("nan", math.nan, False),
                                   ("string", "a", False), ("array", np.ones(2), False)]),
                      ("max_recoveries", list(_P().bad_int_scalar())),
                      ("poll", [b for b in P.bad_real_scalar() if b[0] != "none"] + [("zero", 0.0, False)])]:
        p.mutate("shard_options", options, {}, arg, [b for b in bads if b[1] is not None], (arg,))

    p.valid("dask_client", dask_client, lambda out: out is None)
    p.valid("count_worker_bytes", lambda: count_worker_bytes(_StandInClient())(),
            lambda out: out == {"tcp://stand-in:1": 10})
    p.mutate("count_worker_bytes", count_worker_bytes, {"client": None}, "client",
             [("none", None, False), ("nan", math.nan, False), ("a-string", "abc", False), ("list", [], False),
              ("array", np.ones(2), False)], ("client",))
    p.valid("ShardLostError", lambda: ShardLostError("worker tcp://x lost"),
            lambda out: isinstance(out, RuntimeError) and "tcp://x" in str(out))


# ---------------------------------------------------------------------- explain

def probe_explain(p):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from sklearn_struct import ChainCRF
    from sklearn_struct.exceptions import ModelFileError
    from sklearn_struct.explain import LabelScore, SequenceExplanation, TokenExplanation, explain_prediction

    P = _P()
    X = [np.eye(2)[[0, 1, 1]], np.eye(2)[[1, 0]]]
    y = [np.array([0, 1, 1]), np.array([1, 0])]
    crf = ChainCRF(c2=0.1).fit(X, y)

    def consistent(ex):
        return (ex.labels == [0, 1, 1] and [t.chosen.features[0][0] for t in ex.tokens] == ["a", "b", "b"]
                and np.isclose(sum(t.chosen.score - t.chosen.transition_out for t in ex.tokens), ex.path_score)
                and ex.log_probability <= 1e-12 and all(t.margin >= -1e-12 for t in ex.tokens))

    p.valid("explain_prediction", lambda: explain_prediction(crf, X[0], feature_names=["a", "b"]), consistent)
    p.valid("explain_prediction top=0", lambda: explain_prediction(crf, X[0], top=0),
            lambda ex: all(t.chosen.features == [] for t in ex.tokens) and np.isclose(
                sum(t.chosen.score - t.chosen.transition_out for t in ex.tokens), ex.path_score))
    p.valid("explain_prediction (pipeline)", lambda: explain_prediction(
        make_pipeline(FunctionTransformer(lambda Z: Z), ChainCRF(c2=0.1)).fit(X, y), X[0], feature_names=["a", "b"]),
        consistent)
    decode = ChainCRF(c2=0.1, allowed_transitions=(np.ones((2, 2), bool), np.array([True, False]), np.ones(2, bool)),
                      allowed_transitions_in_fit=False).fit(X, y)  # the mask at decoding only: no label 1 first
    p.valid("explain_prediction (decode only)", lambda: explain_prediction(decode, X[1]),
            lambda ex: ex.labels[0] == 0 and ex.tokens[0].runner_up.marginal == 0.0 and ex.log_probability <= 1e-12
            and np.isclose(ex.log_probability, decode.sequence_log_proba([X[1]], [ex.labels])[0]))
    p.mutate("ChainCRF", lambda **k: ChainCRF(allowed_transitions="BIO", **k).fit(X, y), {},
             "allowed_transitions_in_fit",
             [("string", "no", False), ("number", 0, False), ("none", None, False), ("array", np.array([True]), False),
              ("nan", math.nan, False)], ("allowed_transitions_in_fit",))
    from sklearn_struct import NonLocalCRF  # the same option: the plain base CRF, the mask in every inference

    first = (np.ones((2, 2), bool), np.array([True, False]), np.ones(2, bool))  # label 1 may not start
    nl_decode = NonLocalCRF(c2=0.1, allowed_transitions=first, allowed_transitions_in_fit=False).fit(X, y)
    p.valid("NonLocalCRF (decode only)", lambda: (nl_decode.predict([X[1]]), nl_decode.predict_topk([X[1]], 4)),
            lambda out: out[0][0][0] == 0 and all(row[0] == 0 for row in out[1][0][0]))
    p.mutate("NonLocalCRF", lambda **k: NonLocalCRF(allowed_transitions="BIO", **k).fit(X, y), {},
             "allowed_transitions_in_fit",
             [("string", "no", False), ("number", 0, False), ("none", None, False), ("array", np.array([True]), False),
              ("nan", math.nan, False)], ("allowed_transitions_in_fit",))
    kw = {"estimator": crf, "X_one": X[0]}
    p.mutate("explain_prediction", explain_prediction, kw, "estimator",
             [("unfitted", ChainCRF(), False), ("none", None, False), ("a-string", "abc", False),
              ("not-a-chain-model", LogisticRegression().fit(X[0], [0, 1, 1]), False),
              ("unfitted-pipeline", make_pipeline(FunctionTransformer(), ChainCRF()), False)],
             ("estimator", "fitted", "fit", "ChainCRF", "CRF"))
    p.mutate("explain_prediction", explain_prediction, kw, "X_one",
             [b for b in P.bad_float_array(X[0]) if b[0] not in ("huge", "huge-neg", "tiny")]
             + [("sequence-list", X, False), ("wrong-n-features", np.ones((3, 5)), False)],
             ("X_one", "X", "sequence", "Sequence", "feature", "array"))
    p.run("explain_prediction(X_one)", "huge", lambda: explain_prediction(crf, np.full((3, 2), 1e308)),
          ("X_one", "X", "sequence", "Sequence", "overflow", "rescale"))
    p.mutate("explain_prediction", explain_prediction, dict(kw, feature_names=["a", "b"]), "feature_names",
             [("wrong-length", ["a"], False), ("a-string", "ab", False), ("number", 3, False),
              ("2d", [["a", "b"]], False)], ("feature_names",))
    p.mutate("explain_prediction", explain_prediction, dict(kw, top=2), "top",
             [("negative", -1, False), ("string", "a", False), ("fractional", 1.5, False), ("nan", math.nan, False),
              ("bool", True, False), ("list", [1], False)], ("top",))

    ex = explain_prediction(crf, X[0], feature_names=["a", "b"])
    p.valid("SequenceExplanation.to_text", lambda: ex.to_text(top=1),
            lambda out: isinstance(out, str) and "chosen" in out)
    score = LabelScore("B-NP", 1.5, 0.5, 0.25, 0.75, [("a", 1.0, 0.0, 0.0)], 0.0, 0.5)
    # (``marginal`` defaults to NaN, "not computed": a record built by hand states it)
    p.valid("LabelScore", lambda: LabelScore("x", 1.0, 0.5, 0.25, 0.25, marginal=0.25),
            lambda out: out.features == [] and out.other_features == 0.0)
    p.valid("TokenExplanation", lambda: TokenExplanation(0, score, LabelScore("O", 1.0, 0.0, 0.0, 0.0, marginal=0.5)),
            lambda out: out.margin == 0.5)
    p.valid("SequenceExplanation", lambda: SequenceExplanation(["B-NP"], 1.5, -0.1, [TokenExplanation(
        0, score, score)]).to_text(), lambda out: "B-NP" in out)
    p.valid("ModelFileError", lambda: ModelFileError("model.crf: truncated", path="model.crf"),
            lambda out: isinstance(out, ValueError) and out.path == "model.crf")


# ---------------------------------------------------------------------- DLPWClassifierCV, sets_epoch

def _sets_problem(edge_features=False):
    import scipy.sparse as sp

    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]]))
    edges = np.array([[0, 1], [1, 2]])
    n_cols = 9 + (2 * 9 if edge_features else 0)
    return {"order": np.array([1, 0]), "t0": 0, "C": 1.0, "loss": "hamming", "Xp": X.indptr.astype(np.int64),
            "Xi": X.indices.astype(np.int64), "Xd": X.data, "target": np.array([0, 1]),
            "sets": np.array([[0, 1, 2], [1, 0, 0]]), "V": np.zeros((3, n_cols)), "P": np.zeros((2, 3, 3)),
            "state": np.array([1.0, 0.0]), "edges": edges, "n_states": np.array([3, 2, 3])}


def probe_round4_dlpw(p):
    from sklearn_struct import DLPWClassifierCV
    from sklearn_struct.datasets import make_multilabel_pairwise
    from sklearn_struct.oracles.lp_learning import sets_epoch

    P = _P()
    kw = _sets_problem()

    def fresh(**k):  # in-place arguments copied per call
        return sets_epoch(**{**k, **{a: k[a].copy() for a in ("V", "P", "state") if isinstance(k[a], np.ndarray)}})

    def moved(kw):
        k = {**kw, "V": kw["V"].copy(), "P": kw["P"].copy(), "state": kw["state"].copy()}
        t = sets_epoch(**k)
        return t, k["V"], k["P"], k["state"]

    # both samples' truths lose to the other set at zero weights: two steps that move the weights
    p.valid("sets_epoch", lambda: moved(kw), lambda out: out[0] == 2 and np.abs(out[1]).sum() > 0
            and np.all(np.isfinite(out[1])))
    p.valid("sets_epoch (edge features)", lambda: moved(_sets_problem(True)), lambda out: out[0] == 2)
    p.valid("sets_epoch (subset, t0=5)", lambda: moved(dict(kw, loss="subset", t0=5)), lambda out: out[0] == 7)
    sums = (np.zeros((3, 9)), np.zeros((2, 3, 3)))
    p.valid("sets_epoch (average)", lambda: fresh(**kw, average=sums), lambda t: t == 2)
    not_a_state = kw["sets"].copy()
    not_a_state[0, 1] = 2  # node 1 has 2 states
    for arg, bads in [("order", P.bad_index_array(kw["order"], 2)), ("t0", P.bad_int_scalar()),
                      ("C", list(P.bad_real_scalar()) + [("zero", 0.0, False)]), ("loss", P.bad_option()),
                      ("Xp", P.bad_offsets(kw["Xp"])), ("Xi", P.bad_index_array(kw["Xi"], 3)),
                      ("Xd", P.bad_float_array(kw["Xd"])), ("target", P.bad_index_array(kw["target"], 2)),
                      ("sets", list(P.bad_index_array(kw["sets"], 3)) + [("not-a-state", not_a_state, True),
                                                                          ("wrong-width", kw["sets"][:, :2], False)]),
                      ("V", P.bad_float_array(kw["V"])), ("P", P.bad_float_array(kw["P"])),
                      ("state", P.bad_float_array(kw["state"])),
                      ("edges", list(P.bad_index_array(kw["edges"], 3)) + [("self-loop", np.array([[0, 1], [1, 1]]),
                                                                            True)]),
                      ("n_states", P.bad_index_array(kw["n_states"], 3))]:
        p.mutate("sets_epoch", fresh, kw, arg, bads, (arg, "P", "V", "sets"))
    p.mutate("sets_epoch", fresh, kw, "average",
             [("wrong-shape", (np.zeros((3, 8)), np.zeros((2, 3, 3))), False),
              ("one-array", (np.zeros((3, 9)),), False),
              ("a-string", "ab", False), ("float32", (np.zeros((3, 9), np.float32), np.zeros((2, 3, 3))), False)],
             ("average",))

    Xm, Ym = make_multilabel_pairwise(n_samples=30, n_features=4, n_labels=3, random_state=0)[:2]
    cv_est = lambda **k: DLPWClassifierCV(**{"Cs": [0.01, 0.1], "cv": 2, "max_epochs": 5, "tol": 1e-2, **k})  # noqa
    fitted = cv_est().fit(Xm, Ym)
    p.valid("DLPWClassifierCV", lambda: cv_est().fit(Xm, Ym),
            lambda est: est.scores_.shape == (2, 2) and est.C_ in (0.01, 0.1)
            and est.predict(Xm).shape == Ym.shape and 0.0 <= est.score(Xm, Ym) <= 1.0)
    p.valid("DLPWClassifierCV (Cs=2, one column)", lambda: cv_est(Cs=2).fit(Xm, Ym[:, 0]).predict(Xm))
    fit = lambda X, y: cv_est(max_epochs=3).fit(X, y)  # noqa: E731
    p.mutate("DLPWClassifierCV.fit", fit, {"X": Xm, "y": Ym}, "X",
             [b for b in P.bad_float_array(Xm) if b[0] not in ("huge-neg", "tiny")],
             ("X", "sample", "feature", "array", "Complex"))
    p.mutate("DLPWClassifierCV.fit", fit, {"X": Xm, "y": Ym}, "y",
             [("not-binary", np.full_like(Ym, 2), False), ("nan", P._with(Ym, (0, 0), np.nan), False),
              ("short", Ym[:-1], False), ("empty", Ym[:0], False), ("none", None, False),
              ("strings", Ym.astype(str), False)], ("y", "label", "sample", "target"))
    for arg, bads in [("Cs", [("zero", 0, False), ("negative", -1, False), ("empty", [], False),
                              ("negative-value", [-1.0, 0.1], False), ("nan", [math.nan], False),
                              ("inf", [math.inf], False), ("strings", ["a", "b"], False), ("2d", [[0.1]], False),
                              ("complex", [1j], False), ("none", None, False), ("a-string", "abc", False),
                              ("float", 0.5, False)]),
                      ("cv", [("zero", 0, False), ("one", 1, False), ("string", "a", False), ("more-than-samples", 100,
                                                                                              False)]),
                      ("scoring", [("unknown", "no-such-scorer", False), ("number", 3, False)]),
                      ("max_epochs", P.bad_int_scalar()), ("tol", P.bad_real_scalar()),
                      ("n_jobs", [("string", "a", False), ("fractional", 1.5, False)])]:
        p.mutate("DLPWClassifierCV", lambda **k: cv_est(max_epochs=3, **k).fit(Xm, Ym), {}, arg, bads,
                 (arg, "n_splits"))
    for method in ("predict", "decision_function", "predict_marginals", "predict_with_certificates"):
        p.run(f"DLPWClassifierCV.{method}", "unfitted", lambda m=method: getattr(cv_est(), m)(Xm),
              ("fit", "DLPWClassifierCV"))
        p.run(f"DLPWClassifierCV.{method}", "refit=False", lambda m=method: getattr(
            cv_est(refit=False).fit(Xm, Ym), m)(Xm), ("refit",))
        p.mutate(f"DLPWClassifierCV.{method}", lambda X, m=method: getattr(fitted, m)(X), {"X": Xm}, "X",
                 [("nan", P._with(Xm, (0, 0), np.nan), True), ("wrong-n-features", Xm[:, :-1], False),
                  ("empty", Xm[:0], False), ("none", None, False), ("strings", Xm.astype(str), False)],
                 ("X", "sample", "feature", "array"))
    p.mutate("DLPWClassifierCV.score", lambda y: fitted.score(Xm, y), {"y": Ym}, "y",
             [("short", Ym[:-1], False), ("nan", P._with(Ym, (0, 0), np.nan), False), ("none", None, False),
              ("wrong-n-labels", Ym[:, :-1], False)], ("y", "label", "sample", "target", "samples"))


# ---------------------------------------------------------------------- segment errors

def probe_segment_errors(p):
    from sklearn_struct.metrics import segment_error_events, segment_error_table, segment_f1_if_fixed

    yt, yp = [["B-a", "I-a", "O", "B-b"]], [["B-a", "B-a", "O", "B-c"]]
    events, totals = segment_error_events(yt, yp)

    def known():
        ev, tot = segment_error_events(yt, yp)
        assert [e["type"] for e in ev] == ["split", "wrong label"] and tot == {"tp": 0, "n_gold": 2, "n_pred": 3}
        return len(ev)

    p.valid("segment_error_events", known)
    bad_seqs = [("empty", [], False), ("none", None, False), ("number", 3, False),
                ("not-bio", [["B-a", "x", "O", "O"]], True), ("short", [["B-a", "O", "O"]], True), ("more-sequences", yt * 2, False),
                ("empty-sequence", [[]], True), ("2d-labels", [[["B-a"]] * 4], True)]
    for arg in ("y_true", "y_pred"):
        p.mutate("segment_error_events", segment_error_events, {"y_true": yt, "y_pred": yp}, arg, bad_seqs,
                 (arg, "y_true", "y_pred", "sequence", "Sequence"))
    p.valid("segment_f1_if_fixed", lambda: segment_f1_if_fixed(events, totals),
            lambda out: abs(out - 100.0) < 1e-9)
    p.valid("segment_error_table", lambda: segment_error_table(events, totals),
            lambda out: out["split"][0] == 1 and out["merged"] == (0, 0.0))
    bad_events = [("none", None, False), ("string", "split", False), ("list-of-ints", [1, 2], True),
                  ("dict-without-type", [{"gold": []}], True)]
    bad_totals = [("none", None, False), ("missing-key", {"tp": 0}, False),
                  ("negative", {"tp": 0, "n_gold": -1, "n_pred": 3}, False),
                  ("tp-too-large", {"tp": 5, "n_gold": 2, "n_pred": 3}, False),
                  ("float-count", {"tp": 0.5, "n_gold": 2, "n_pred": 3}, False)]
    for name, func in (("segment_f1_if_fixed", segment_f1_if_fixed), ("segment_error_table", segment_error_table)):
        p.mutate(name, func, {"events": events, "totals": totals}, "events", bad_events, ("events",))
        p.mutate(name, func, {"events": events, "totals": totals}, "totals", bad_totals, ("totals",))
    p.mutate("segment_error_table", segment_error_table, {"events": events, "totals": totals}, "key",
             [("string", "type", False), ("number", 3, False)], ("key",))


def probe_cluster_corpus(p):
    """ClusterCorpus's checks (a fit needs a cluster: tests/test_scaleout.py)."""
    from functools import partial

    from sklearn_struct.cluster_corpus import ClusterCorpus
    from sklearn_struct.datasets import make_chain_data
    from sklearn_struct.preprocessing import SequenceVectorizer

    loaders = [partial(make_chain_data, 5), partial(make_chain_data, 6)]
    p.valid("ClusterCorpus", lambda: ClusterCorpus(loaders, SequenceVectorizer()).n_shards, lambda out: out == 2)
    make = lambda source=loaders, featurizer=SequenceVectorizer(), client=None: ClusterCorpus(  # noqa: E731
        source, featurizer, client=client)
    p.mutate("ClusterCorpus", make, {}, "source",
             [("none", None, False), ("nan", math.nan, False), ("a-string", "abc", False), ("empty", [], False),
              ("a-dict", {"a": 1}, False), ("not-callable", [1, 2], True)], ("source",))
    p.mutate("ClusterCorpus", make, {}, "featurizer",
             [("a-string", "abc", False), ("dense", SequenceVectorizer(sparse=False), False)],
             ("featurizer", "sparse"))
    p.mutate("ClusterCorpus", make, {}, "client", [("string", "abc", False), ("number", 3, False)], ("client",))
    from sklearn_struct import ChainCRF  # training with allowed_transitions: refused before any cluster is needed

    p.run("ChainCRF.fit (ClusterCorpus)", "allowed_transitions in fit",
          lambda: ChainCRF(allowed_transitions="BIO").fit(make()), ("allowed_transitions_in_fit",))
    p.run("ChainCRF.fit (ClusterCorpus)", "featurizer None", lambda: ChainCRF().fit(make(featurizer=None)),
          ("featurizer",))
    from sklearn_struct.crfsuite import CRF  # the drop-in's corpus checks, refused before any cluster is needed

    for label, crf, kwargs, names in [("algorithm", CRF(algorithm="ap"), {}, ("algorithm",)),
                                      ("class_weight", CRF(class_weight="balanced"), {}, ("class_weight",)),
                                      ("allowed_transitions in fit", CRF(allowed_transitions="BIO"), {},
                                       ("allowed_transitions_in_fit",)),
                                      ("sample_weight", CRF(), {"sample_weight": [1.0]}, ("sample_weight",)),
                                      ("y", CRF(), {"y": [["a"]]}, ("y",)),
                                      ("featurizer", CRF(), {"featurizer": SequenceVectorizer()}, ("featurizer",))]:
        featurizer = kwargs.pop("featurizer", None)
        p.run("CRF.fit (ClusterCorpus)", label, lambda c=crf, k=kwargs, f=featurizer: c.fit(make(featurizer=f), **k),
              names)


SECTIONS = {
    "cluster_corpus": probe_cluster_corpus,
    "chain_constrained": probe_chain_constrained,
    "shards": probe_shards,
    "explain": probe_explain,
    "round4_dlpw": probe_round4_dlpw,
    "segment_errors": probe_segment_errors,
}
