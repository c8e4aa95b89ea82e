"""Sections of the bad-input probe (``tests/_fuzz_probe.py``) for the public API of round three (issue #34).

Every public callable that the older sections did not reach gets an explicit entry here: a valid
call (checked where a known answer exists) and each applicable bad input, one argument at a time:
wrong types, wrong shapes, empty, ragged, NaN / inf / huge values, out-of-range indices, unseen
labels, mixed label types and extreme parameters. Same rules as the rest of the probe
(:func:`_fuzz_probe.judge`): a ValueError / TypeError naming what is wrong, or a NaN-free result.

* ``crfsuite``: the sklearn-crfsuite ``CRF`` (feature dicts: deep, huge, beyond float, mixed
  label types, unseen labels at score; extreme ``c1`` / ``c2`` / SGD and online options;
  ``tagger_``), its ``flat_*`` metrics and ``sequence_accuracy_score``.
* ``numerics``: ``ChainCRF``'s five algorithms at extreme parameters and features, one class;
  ``sampled_marginals`` / ``sampled_log_likelihood`` at +-1e300, ``sample_chain`` sizes.
* ``trees``: the spanning-tree, factor-BP and parsing oracles and helpers, the O(n^3) pair lists'
  ``max_words`` bound, and large potentials across the marginal oracles (tree, link BP, pruned BP,
  chains, matchings: exact answers at +-1e300, a score per word of +-1e308 changing nothing).
* ``structures``: the constraint templates, ``ConstraintEnergy``, ``ConstraintFamily``,
  ``hierarchy_groups``, ``kept_constraints``, ``Energy``, ``check_graph_labels``, ``Progress``.
* ``round3_datasets``: generators and loaders added since the first probe, ``segment_report``.
* ``round3_estimators``: ``DLPWClassifier``, ``MLEStructMatcher``, ``GPStructClassifier`` and
  ``DependencyParserBP`` on tiny data with bad inputs and extreme parameters.
"""

import math
from pathlib import Path

import numpy as np


def _P():  # the probe's helpers, imported late: _fuzz_probe imports this module
    import _fuzz_probe

    return _fuzz_probe


# ---------------------------------------------------------------------- crfsuite

_XD = [[{"a": 1.0, "w": "the"}, {"a": 0.5, "w": "dog"}], [{"w": "cat", "b": 1.0}, {"a": 2.0}, {"w": "ran"}]]
_YD = [["x", "y"], ["y", "x", "x"]]


def _deep(n):
    d = {"a": 1.0}
    for _ in range(n):
        d = {"n": d}
    return d


def bad_feature_sequences():
    x0 = _XD[0]
    loop = {}
    loop["me"] = loop
    yield "empty-list", [], False
    yield "none", None, False
    yield "a-string", "abc", False
    yield "a-dict", {"a": 1.0}, False
    yield "token-not-dict", [[3, {"a": 1.0}], _XD[1]], True
    yield "nan-value", [[{"a": math.nan}, x0[1]], _XD[1]], True
    yield "inf-value", [[{"a": math.inf}, x0[1]], _XD[1]], True
    yield "beyond-float", [[{"a": 10**400}, x0[1]], _XD[1]], True
    yield "nested-beyond-float", [[{"a": {"b": -(10**400)}}, x0[1]], _XD[1]], True
    yield "huge", [[{"a": 1e308}, x0[1]], _XD[1]], False
    yield "deep-5000", [[_deep(5000), x0[1]], _XD[1]], True
    yield "self-containing", [[loop, x0[1]], _XD[1]], True
    yield "bytes-not-utf8", [[{b"\xff": 1.0}, x0[1]], _XD[1]], True
    yield "complex-value", [[{"a": 1j}, x0[1]], _XD[1]], True
    yield "non-str-key", [[{3: 1.0}, x0[1]], _XD[1]], True


def bad_label_sequences():
    yield "empty-list", [], False
    yield "none", None, False
    yield "short", _YD[:1], False
    yield "wrong-length", [["x"], _YD[1]], True
    yield "mixed-types", [["x", 1], _YD[1]], True
    yield "unhashable", [[["x"], "y"], _YD[1]], True
    yield "nan-label", [[math.nan, "y"], _YD[1]], True
    yield "a-string", "xy", False


def probe_crfsuite(p):
    from sklearn_struct.crfsuite import CRF, metrics

    P = _P()
    p.valid("CRF", lambda: CRF(max_iterations=20).fit(_XD, _YD).predict(_XD),
            lambda out: [len(s) for s in out] == [2, 3])
    fit = lambda X, y, **kw: CRF(max_iterations=5, **kw).fit(X, y)  # noqa: E731
    p.mutate("CRF.fit", fit, {"X": _XD, "y": _YD}, "X", bad_feature_sequences(), ("X", "sequence", "xseq"))
    p.mutate("CRF.fit", fit, {"X": _XD, "y": _YD}, "y", bad_label_sequences(), ("y", "sequence", "label"))
    crf = CRF(max_iterations=20).fit(_XD, _YD)
    for method in ("predict", "predict_marginals"):
        p.mutate(f"CRF.{method}", lambda X, m=method: getattr(crf, m)(X), {"X": _XD}, "X",
                 [b for b in bad_feature_sequences() if b[0] not in ("huge",)], ("X", "sequence", "xseq"))
    p.mutate("CRF.score", lambda y: crf.score(_XD, y), {"y": _YD}, "y",
             list(bad_label_sequences()) + [("unseen-label", [["x", "zz"], _YD[1]], False)],
             ("y", "sequence", "label", "zz"))
    p.valid("CRF.predict_marginals", lambda: crf.predict_marginals(_XD),
            lambda out: all(abs(sum(tok.values()) - 1) < 1e-9 for seq in out for tok in seq))
    for algo, params in [("lbfgs", {"c1": 1e300}), ("lbfgs", {"c2": 1e300}), ("lbfgs", {"c1": 1e-300}),
                         ("l2sgd", {"c2": 1e300}), ("l2sgd", {"c2": 1e-300}),
                         ("l2sgd", {"calibration_eta": 1e300}), ("l2sgd", {"calibration_rate": 1e300}),
                         ("l2sgd", {"calibration_eta": 1e-300}), ("pa", {"c": 1e300}), ("pa", {"c": 1e-300}),
                         ("arow", {"variance": 1e300}), ("arow", {"gamma": 1e-300}), ("arow", {"gamma": 1e300}),
                         ("ap", {"epsilon": 1e300})]:
        p.valid(f"CRF {algo} {params}", lambda a=algo, kw=params: CRF(algorithm=a, max_iterations=3, **kw)
                .fit(_XD, _YD).predict(_XD))
    for algo in ("lbfgs", "l2sgd", "ap", "pa", "arow"):
        p.valid(f"CRF {algo} one-class", lambda a=algo: CRF(algorithm=a, max_iterations=3)
                .fit(_XD, [["x", "x"], ["x", "x", "x"]]).predict(_XD))
        huge = [[{k: (v * 1e300 if isinstance(v, float) else v) for k, v in tok.items()} for tok in s] for s in _XD]
        p.run(f"CRF {algo}", "features x1e300", lambda a=algo: CRF(algorithm=a, max_iterations=3)
              .fit(huge, _YD).predict(_XD), ("X", "feature", "overflow", "loss", "rescale"))
    for arg, bads in [("c1", P.bad_real_scalar()), ("c2", P.bad_real_scalar()),
                      ("max_iterations", P.bad_int_scalar()), ("algorithm", P.bad_option()),
                      ("min_freq", [("negative", -1, False), ("nan", math.nan, False), ("string", "a", False)]),
                      ("all_possible_transitions", [("string", "no", False), ("number", 2, False)]),
                      ("allowed_transitions_in_fit", [("string", "no", False), ("number", 0, False)])]:
        p.mutate("CRF", lambda **kw: CRF(**kw).fit(_XD, _YD), {"max_iterations": 3}, arg, bads, (arg,))
    tagger = crf.tagger_
    tagger.set(_XD[0])
    p.valid("CRF.tagger_.marginal", lambda: tagger.marginal("x", 1), lambda out: 0 <= out <= 1)
    p.mutate("CRF.tagger_.marginal", tagger.marginal, {"y": "x", "pos": 1}, "pos",
             [("fractional", 1.5, False), ("string", "1", False), ("out-of-range", 2, True), ("negative", -1, True),
              ("none", None, False), ("bool", True, False), ("nan", math.nan, False)], ("pos",))
    p.mutate("CRF.tagger_.marginal", tagger.marginal, {"y": "x", "pos": 1}, "y",
             [("unseen", "zz", False), ("none", None, False), ("unhashable", ["x"], False)], ("y", "label"))
    p.mutate("CRF.tagger_.probability", tagger.probability, {"yseq": ["x", "y"]}, "yseq",
             [("short", ["x"], False), ("unseen", ["x", "zz"], False), ("none", None, False),
              ("a-string", "xy", False)], ("yseq", "label", "sequence", "y"))
    yt, yp = [["a", "b"], ["b"]], [["a", "a"], ["b"]]
    for name in ("flat_accuracy_score", "sequence_accuracy_score", "flat_f1_score", "flat_precision_score",
                 "flat_recall_score", "flat_classification_report", "flat_fbeta_score"):
        f = getattr(metrics, name)
        scored = name.startswith(("flat_f", "flat_precision", "flat_recall"))
        extra = dict({"average": "macro"} if scored else {}, **({"beta": 1.0} if "fbeta" in name else {}))
        p.valid(name, lambda f=f, kw=extra: f(yt, yp, **kw))
        for arg in ("y_true", "y_pred"):
            kw = dict({"y_true": yt, "y_pred": yp}, **extra)
            p.mutate(name, f, kw, arg,
                     [("empty", [], False), ("none", None, False), ("ragged", [["a"], ["b"]], False),
                      ("short", yt[:1], False), ("mixed-types", [["a", 1], ["b"]], False),
                      ("nan", [[math.nan, "a"], ["b"]], False), ("a-string", "ab", False)],
                     ("y_true", "y_pred", "sequence", "length", "label", "Mix", "type", "input", "empty"))
    p.mutate("flat_fbeta_score", metrics.flat_fbeta_score, {"y_true": yt, "y_pred": yp, "average": "macro"}, "beta",
             [("negative", -1.0, False), ("nan", math.nan, False), ("string", "a", False), ("inf", math.inf, False)],
             ("beta",))


# ---------------------------------------------------------------------- numerics

def probe_numerics(p):
    from sklearn_struct import ChainCRF
    from sklearn_struct.oracles.chain import sample_chain
    from sklearn_struct.oracles.chain_samples import sampled_log_likelihood, sampled_marginals

    P = _P()
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(n, 3)) for n in (3, 4, 2)]
    y = [np.array([0, 1, 0]), np.array([1, 1, 0, 0]), np.array([0, 1])]
    for algo, params in [("l2sgd", {"c2": 1e300}), ("l2sgd", {"solver_options": {"calibration_eta": 1e300}}),
                         ("l2sgd", {"solver_options": {"calibration_rate": 1e300}}), ("lbfgs", {"c2": 1e300}),
                         ("lbfgs", {"c1": 1e300}), ("pa", {"solver_options": {"c": 1e300}}),
                         ("arow", {"solver_options": {"variance": 1e300}})]:
        p.valid(f"ChainCRF {algo} {params}", lambda a=algo, kw=params: ChainCRF(algorithm=a, max_iter=3, **kw)
                .fit(X, y).predict(X))
    for algo in ("lbfgs", "l2sgd", "ap", "pa", "arow"):
        p.valid(f"ChainCRF {algo} one-class", lambda a=algo: ChainCRF(algorithm=a, max_iter=3)
                .fit(X, [np.zeros(len(s), int) for s in y]).predict(X))
        p.run(f"ChainCRF {algo}", "X x1e300", lambda a=algo: ChainCRF(algorithm=a, max_iter=3)
              .fit([x * 1e300 for x in X], y), ("X", "Sequence", "feature", "overflow", "rescale", "loss"))
        p.run(f"ChainCRF {algo}", "mixed label types", lambda a=algo: ChainCRF(algorithm=a, max_iter=3)
              .fit(X, [np.array([0, "a", 0], dtype=object), y[1], y[2]]), ("y", "label", "type", "Sequence"))
    from scipy.sparse import csr_matrix

    from sklearn_struct.oracles.linear import frequent_pairs, state_pairs

    Xs, ys = csr_matrix(np.abs(np.vstack(X))), np.concatenate(y)
    for name, f, extra in [("frequent_pairs", frequent_pairs, {"min_freq": 1}),
                           ("state_pairs", state_pairs, {"all_possible_states": False})]:
        kw = dict({"X": Xs, "y": ys, "n_labels": 2}, **extra)
        p.valid(name, lambda f=f, kw=kw: f(**kw))
        p.mutate(name, f, kw, "y", P.bad_index_array(ys, 2), ("y",))
        p.mutate(name, f, kw, "X", P.bad_float_array(Xs.toarray()), ("X",))
        p.mutate(name, f, kw, "n_labels", P.bad_int_scalar(), ("n_labels", "y"))
    p.mutate("frequent_pairs", frequent_pairs, {"X": Xs, "y": ys, "n_labels": 2, "min_freq": 1}, "min_freq",
             [("negative", -1, False), ("nan", math.nan, False), ("string", "a", False), ("inf", math.inf, False)],
             ("min_freq",))
    fitted = ChainCRF(max_iter=50).fit(X, y)
    p.run("ChainCRF.score", "unseen label", lambda: fitted.score(X, [np.array([0, 7, 0]), y[1], y[2]]),
          ("y", "label", "7", "Sequence", "unseen"))
    u, a = rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 3, 5))
    for scale in (1.0, 1e150, 1e300):
        p.valid(f"sampled_marginals x{scale:g}", lambda s=scale: sampled_marginals(
            np.sign(u) * s, a), lambda out: P._rows_sum_to_one(out))
    kw = {"unary": u, "transition": a}
    p.mutate("sampled_marginals", sampled_marginals, kw, "unary", P.bad_float_array(u), ("unary", "transition"))
    p.mutate("sampled_marginals", sampled_marginals, kw, "transition", P.bad_float_array(a), ("transition",))
    p.valid("sampled_log_likelihood", lambda: sampled_log_likelihood(u, a, [0, 1, 2, 0]),
            lambda out: np.all(out <= 1e-9))
    kw = {"unary": u, "transition": a, "y": np.array([0, 1, 2, 0])}
    p.mutate("sampled_log_likelihood", sampled_log_likelihood, kw, "y", P.bad_index_array(kw["y"], 3), ("y",))
    p.mutate("sampled_log_likelihood", sampled_log_likelihood, kw, "transition", P.bad_float_array(a),
             ("transition",))
    cu, ct, co = P._chain_problem()
    p.mutate("sample_chain", sample_chain, {"unary": cu, "transition": ct, "offsets": co}, "n_samples",
             [("huge", 10**12, False), ("bool", True, False), ("zero", 0, False), ("float", 2.5, False),
              ("negative", -3, False), ("string", "5", False)], ("n_samples",))


# ---------------------------------------------------------------------- trees, factor BP, parsing

def probe_trees(p):
    from sklearn_struct import parsing
    from sklearn_struct.oracles import factor_bp, spanning, tree
    from sklearn_struct.pruned_bp import select_factors

    P = _P()
    S = np.array([[0, 5, 1, 0], [0, 0, 11, 4], [0, 10, 0, 5], [0, 9, 8, 0]], dtype=float)
    bad_scores = list(P.bad_float_array(S, allow_neg_inf=True)) + [("not-square", np.zeros((3, 4)), False),
                                                                  ("one-node", np.zeros((1, 1)), False)]
    for name in ("chu_liu_edmonds", "eisner", "decode_tree", "tree_marginals", "tree_messages", "check_link_scores"):
        f = getattr(tree, name)
        arg = "log_odds" if name == "tree_messages" else "scores"
        p.valid(name, lambda f=f: f(S))
        p.mutate(name, f, {arg: S}, arg, bad_scores, (arg, "scores", "node", "word"))
    p.valid("tree_marginals", lambda: tree.tree_marginals(np.zeros((3, 3))),
            lambda out: np.allclose(out[1][:, 1:].sum(axis=0), 1.0))
    for huge in (1e300, -1e300):
        p.valid(f"tree_marginals {huge:g}", lambda h=huge: tree.tree_marginals(S * h / 11),
                lambda out: np.allclose(out[1][:, 1:].sum(axis=0), 1.0))
    edges = np.array([[0, 1], [1, 2], [2, 0], [2, 3]])
    for name in ("effective_resistances", "covering_forests", "peel_dangling_trees", "spanning_tree_rho"):
        f = getattr(spanning, name)
        p.valid(name, lambda f=f: f(edges, 4))
        p.mutate(name, f, {"edges": edges, "n_nodes": 4}, "edges", P.bad_index_array(edges, 4), ("edge",))
        p.mutate(name, f, {"edges": edges, "n_nodes": 4}, "n_nodes", P.bad_int_scalar(), ("n_nodes", "node"))
    p.mutate("spanning_tree_rho", spanning.spanning_tree_rho, {"edges": edges, "n_nodes": 4}, "method",
             P.bad_option(), ("method",))
    for name in ("grandparent_pairs", "sibling_pairs"):
        f = getattr(factor_bp, name)
        p.valid(name, lambda f=f: f(3))
        # O(n^3) pairs: refused before allocating beyond max_words (default 300, the parser's max_length)
        p.mutate(name, f, {"n_words": 3}, "n_words", list(P.bad_int_scalar()) + [
            ("huge", 10**9, False), ("beyond-max_words", 301, False), ("beyond-int64", 2**70, False)],
            ("n_words", "max_words"))
        p.mutate(name, f, {"n_words": 3}, "max_words", [(lbl, v, i) for lbl, v, i in P.bad_int_scalar()
                                                         if v is not None], ("max_words",))
        p.run(f"{name}(max_words)", "None-and-huge", lambda f=f: f(10**9, max_words=None), ("n_words",))
    pairs, U = factor_bp.grandparent_pairs(3), np.random.default_rng(0).normal(size=(4, 4))
    theta = np.ones(len(pairs))
    kw = {"unary": U, "pairs": pairs, "pair_scores": theta}
    p.valid("link_bp", lambda: factor_bp.link_bp(**kw), lambda out: np.allclose(out.link_marginals[:, 1:].sum(0), 1))
    p.mutate("link_bp", factor_bp.link_bp, kw, "unary", P.bad_float_array(U, allow_neg_inf=True), ("unary",))
    p.mutate("link_bp", factor_bp.link_bp, kw, "pairs", P.bad_index_array(pairs, 4), ("pairs", "pair"))
    p.mutate("link_bp", factor_bp.link_bp, kw, "pair_scores", P.bad_float_array(theta), ("pair_scores",))
    for arg, bads in [("max_iter", P.bad_int_scalar()), ("tol", P.bad_real_scalar())]:
        p.mutate("link_bp", factor_bp.link_bp, kw, arg, bads, (arg,))
    p.mutate("check_pairs", factor_bp.check_pairs, {"pairs": pairs, "n_nodes": 4}, "pairs",
             P.bad_index_array(pairs, 4), ("pairs", "pair"))
    mu = factor_bp.link_bp(**kw).link_marginals
    p.valid("pair_gains", lambda: factor_bp.pair_gains(mu, pairs, theta))
    p.mutate("pair_gains", factor_bp.pair_gains, {"link_marginals": mu, "pairs": pairs, "pair_scores": theta},
             "link_marginals", P.bad_float_array(mu), ("link_marginals", "marginal"))
    p.valid("pruned_link_marginals", lambda: parsing.pruned_link_marginals(**kw))
    p.mutate("pruned_link_marginals", parsing.pruned_link_marginals, kw, "pair_scores", P.bad_float_array(theta),
             ("pair_scores",))
    for arg, bads in [("gamma", P.bad_real_scalar()), ("objective", P.bad_option()), ("max_iter", P.bad_int_scalar())]:
        p.mutate("pruned_link_marginals", parsing.pruned_link_marginals, kw, arg, bads, (arg,))
    gains = np.array([0.5, 0.01, 0.2])
    p.valid("select_factors", lambda: select_factors(gains, "min_joint", gamma=0.2))
    p.mutate("select_factors", select_factors, {"gains": gains}, "gains", P.bad_float_array(gains), ("gains",))
    p.mutate("select_factors", select_factors, {"gains": gains}, "objective", P.bad_option(), ("objective",))
    p.valid("attachment_score", lambda: parsing.attachment_score([[2, 0]], [[2, 0]]), lambda out: out == 1.0)
    p.mutate("attachment_score", parsing.attachment_score, {"heads_true": [[2, 0]], "heads_pred": [[2, 0]]},
             "heads_pred", [("empty", [], False), ("none", None, False), ("ragged", [[2]], True),
                            ("out-of-range", [[5, 0]], True), ("negative", [[-1, 0]], True),
                            ("strings", [["a", "b"]], True), ("nan", [[math.nan, 0]], True)],
             ("heads_pred", "heads", "sentence", "Sentence"))
    _probe_magnitudes(p)


def _columns_sum_to_one(mu):
    return bool(np.allclose(np.asarray(mu)[:, 1:].sum(axis=0), 1.0, atol=1e-9))


def _probe_magnitudes(p):
    """Large potentials across the marginal oracles (issue #34's round-3 sweep): exact answers at
    +-1e300 where the oracle takes them (tree, link BP, chains: the best structure's indicator), a
    score per word of +-1e308 changing nothing, and matchings up to their documented bound."""
    from sklearn_struct import parsing
    from sklearn_struct.oracles import chain, factor_bp, matching, tree

    rng = np.random.default_rng(5)
    S = rng.normal(size=(5, 5))
    pairs = factor_bp.grandparent_pairs(4)
    theta = rng.normal(size=len(pairs))
    none = np.zeros((0, 4), dtype=np.int64)
    zero_bp = factor_bp.link_bp(np.zeros((5, 5)), pairs, theta).link_marginals
    U, T = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    for huge in (1e300, -1e300):
        for proj in (False, True):
            for root1 in (False, True):
                best = (tree.eisner if proj else tree.chu_liu_edmonds)(S * huge, single_root=root1)
                p.valid(f"tree_marginals x{huge:g} projective={proj} single_root={root1}",
                        lambda h=huge, a=proj, b=root1: tree.tree_marginals(S * h, a, b),
                        lambda out, best=best: bool(np.allclose(out[1][best[1:], np.arange(1, 5)], 1.0)))
                p.valid(f"tree_messages x{huge:g} projective={proj} single_root={root1}",
                        lambda h=huge, a=proj, b=root1: tree.tree_messages(S * h, a, b),
                        lambda out: _columns_sum_to_one(out[2]) and bool(np.isfinite(out[0]).all()))
        p.valid(f"link_bp unary x{huge:g} alone", lambda h=huge: factor_bp.link_bp(S * h, none, []),
                lambda out, h=huge: bool(np.allclose(out.link_marginals, tree.tree_marginals(S * h)[1])))
        p.valid(f"link_bp unary x{huge:g}", lambda h=huge: factor_bp.link_bp(S * h, pairs, theta),
                lambda out: _columns_sum_to_one(out.link_marginals))
        p.valid(f"pruned_link_marginals unary x{huge:g}",
                lambda h=huge: parsing.pruned_link_marginals(S * h, pairs, theta), _columns_sum_to_one)
        path = chain.viterbi(U * huge, T * huge, np.array([0, 4]))[0]
        p.valid(f"forward_backward x{huge:g}", lambda h=huge: chain.forward_backward(U * h, T * h, np.array([0, 4])),
                lambda out, path=path: bool(np.allclose(out[1][np.arange(4), path], 1.0)))
        M = rng.normal(size=(4, 4)) * huge / 1e3  # below the documented bound 2.5e299
        cols = matching.assignment(-M)  # costs: the best matching of the scores
        p.valid(f"exact_marginals x{huge / 1e3:g}", lambda M=M: matching.exact_marginals(M),
                lambda out, c=cols: bool(np.allclose(out[0][np.arange(4), c], 1.0)))
        p.valid(f"bp_matching_marginals x{huge / 1e3:g}", lambda M=M: matching.bp_matching_marginals(M),
                lambda out, c=cols: out[2] and bool(np.allclose(out[0][np.arange(4), c], 1.0, atol=1e-6)))
    for full in (1e308, -1e308):
        per_word = np.broadcast_to(full * np.array([1.0, 1.0, 0.5, 1.0, 0.25]), (5, 5))
        p.valid(f"link_bp unary per word {full:g}", lambda u=per_word: factor_bp.link_bp(u, pairs, theta),
                lambda out: bool(np.allclose(out.link_marginals, zero_bp, atol=1e-12)))
        p.valid(f"pruned_link_marginals unary per word {full:g}", lambda u=per_word: parsing.pruned_link_marginals(
            u, pairs, theta, objective="none"), lambda out: bool(np.allclose(out, zero_bp, atol=1e-12)))
        p.valid(f"tree_marginals per word {full:g}", lambda u=per_word: tree.tree_marginals(u),
                lambda out: bool(np.allclose(out[1], tree.tree_marginals(np.zeros((5, 5)))[1], atol=1e-12)))
    p.valid("is_projective", lambda: parsing.is_projective([2, 0, 2]))
    p.mutate("is_projective", parsing.is_projective, {"heads": [2, 0, 2]}, "heads",
             [("empty", [], False), ("none", None, False), ("out-of-range", [9, 0, 2], True),
              ("negative", [-1, 0, 2], True), ("cycle", [2, 1, 0], False), ("no-root", [2, 1], False),
              ("strings", ["a"], False), ("fractional", [1.5, 0], False)], ("heads", "head", "root", "cycle"))
    p.valid("divergence_bound", lambda: parsing.divergence_bound([0.5], [2.0]))
    p.mutate("divergence_bound", parsing.divergence_bound, {"mu_dropped": [0.5], "theta_dropped": [2.0]},
             "mu_dropped", [("out-of-range", [1.5], True), ("negative", [-0.5], True), ("nan", [math.nan], True),
                            ("wrong-length", [0.5, 0.5], False), ("none", None, False), ("strings", ["a"], False)],
             ("mu_dropped", "mu"))
    p.mutate("divergence_bound", parsing.divergence_bound, {"mu_dropped": [0.5], "theta_dropped": [2.0]},
             "theta_dropped", [("nan", [math.nan], True), ("inf", [math.inf], True), ("huge", [1e308], False),
                               ("none", None, False)], ("theta_dropped", "theta"))


# ---------------------------------------------------------------------- constraints, energies, small utilities

def probe_structures(p):
    from sklearn_struct import constraints as C
    from sklearn_struct.constraint_learning import ConstraintFamily, hierarchy_groups, kept_constraints
    from sklearn_struct.energies import Energy
    from sklearn_struct.utils.graph import check_graph_labels
    from sklearn_struct.utils.progress import Progress

    P = _P()
    classes = np.array(["author", "title"])
    templates = {
        "AtMostSegments": lambda label="title", k=1: C.AtMostSegments(label, k),
        "AtLeastSegments": lambda label="title", k=1: C.AtLeastSegments(label, k),
        "ExactlySegments": lambda label="title", k=1: C.ExactlySegments(label, k),
        "AtMostTokens": lambda label="title", k=2: C.AtMostTokens(label, k),
        "AtLeastTokens": lambda label="title", k=1: C.AtLeastTokens(label, k),
        "FirstLabel": lambda label="author": C.FirstLabel(label),
        "LastLabel": lambda label="author": C.LastLabel(label),
        "Precedes": lambda label="author", k="title": C.Precedes(label, k),
        "MutuallyExclusive": lambda label="author", k="title": C.MutuallyExclusive(label, k),
    }
    y = [np.array([0, 1, 0, 1]), np.array([1, 1, 0])]

    def fitted(c):
        energy = C.ConstraintEnergy([c]).fit(None, 2, classes=classes)
        return energy.violations(y)

    for name, make in templates.items():
        p.valid(name, lambda m=make: fitted(m()))
        p.mutate(name, lambda label, m=make: fitted(m(label=label)), {"label": "title"}, "label",
                 [("unseen", "no-such-label", False), ("none", None, False), ("list", ["title"], False),
                  ("nan", math.nan, False)], ("label", "no-such-label", "class", "a", "b"))
        if name.endswith(("Segments", "Tokens")):
            p.mutate(name, lambda k, m=make: fitted(m(k=k)), {"k": 1}, "k",
                     [("negative", -1, False), ("fractional", 1.5, False), ("nan", math.nan, False),
                      ("string", "1", False), ("huge", 10**30, False), ("none", None, False)], ("k",))
    p.valid("LinearConstraint", lambda: fitted(C.LinearConstraint(node={"author": 1, "title": -1}, bound=0)))
    p.mutate("LinearConstraint", lambda node: fitted(C.LinearConstraint(node=node, bound=0)),
             {"node": {"author": 1}}, "node",
             [("unseen", {"zz": 1}, False), ("nan", {"author": math.nan}, False), ("inf", {"author": math.inf}, False),
              ("string", {"author": "a"}, False), ("not-a-dict", 3, False), ("empty", {}, False)],
             ("node", "zz", "coefficient", "author", "LinearConstraint", "label"))
    p.mutate("LinearConstraint", lambda bound: fitted(C.LinearConstraint(node={"author": 1}, bound=bound)),
             {"bound": 0}, "bound", [("nan", math.nan, False), ("inf", math.inf, False), ("string", "x", False),
                                     ("bad-option", "most", False)], ("bound",))
    p.mutate("LinearConstraint", lambda sense: fitted(C.LinearConstraint(node={"author": 1}, sense=sense)),
             {"sense": "at_least"}, "sense", P.bad_option(), ("sense",))
    p.valid("InputDependent", lambda: C.InputDependent("title", lambda x: np.ones(x.shape[0]))
            .fit(None, 2, classes=classes) if hasattr(C.InputDependent, "fit") else None)
    p.mutate("InputDependent", lambda weights: C.ConstraintEnergy([C.InputDependent("title", weights)])
             .fit(None, 2, classes=classes), {"weights": lambda x: None}, "weights",
             [("not-callable", 3, False), ("none", None, False)], ("weights", "callable"))
    p.mutate("ConstraintEnergy", lambda constraints: C.ConstraintEnergy(constraints).fit(None, 2, classes=classes),
             {"constraints": [C.FirstLabel("author")]}, "constraints",
             [("empty", [], False), ("none", None, False), ("not-a-template", [3], False), ("a-string", "abc", False)],
             ("constraints", "constraint", "template"))
    p.run("Energy", "abstract", lambda: Energy().fit([np.array([0, 1])], 2).value(np.ones((2, 2)) / 2, None,
                                                                                   np.array([0, 2])),
          ("Energy", "abstract", "implement", "subclass"))
    tags = [["B-author", "I-author", "O", "B-title"], ["B-title", "O"]]
    p.valid("ConstraintFamily", lambda: ConstraintFamily().fit(tags).transform(tags)
            if hasattr(ConstraintFamily, "transform") else ConstraintFamily().fit(tags))
    p.mutate("ConstraintFamily.fit", lambda y: ConstraintFamily().fit(y), {"y": tags}, "y",
             [("empty", [], False), ("none", None, False), ("a-string", "B-a", False), ("mixed", [["B-a", 3]], True),
              ("nan", [[math.nan]], True), ("empty-sequence", [[]], False)], ("y", "sequence", "Sequence", "label"))
    p.mutate("ConstraintFamily", lambda groups: ConstraintFamily(groups=groups).fit(tags), {"groups": None}, "groups",
             [("value-none", {"g": None}, False), ("value-str", {"g": "ab"}, False), ("list", ["a"], False),
              ("number", 3, False)], ("groups",))
    for arg, bads in [("min_support", P.bad_real_scalar()), ("kinds", P.bad_option())]:
        p.mutate("ConstraintFamily", lambda **kw: ConstraintFamily(**kw).fit(tags), {}, arg, bads, (arg, "kind"))
    paths = [[("ref", "author"), ("ref", "title")]]
    p.valid("hierarchy_groups", lambda: hierarchy_groups(paths))
    p.mutate("hierarchy_groups", hierarchy_groups, {"paths": paths}, "paths",
             [("none", None, False), ("a-string", "ab", False), ("tag-not-tuple", [["ref"]], True),
              ("non-str-tag", [[("ref", 3)]], True)], ("paths", "sequence", "token"))
    p.mutate("hierarchy_groups", hierarchy_groups, {"paths": paths}, "min_share", P.bad_real_scalar(),
             ("min_share",))
    p.mutate("kept_constraints", kept_constraints, {"model": None}, "model",
             [("none", None, False), ("string", "model", False), ("unfitted", _unfitted_nonlocal(), False)],
             ("model", "NonLocalCRF", "fitted"))
    p.valid("check_graph_labels", lambda: check_graph_labels([np.array([0, 1, 1])], [3]))
    p.mutate("check_graph_labels", check_graph_labels, {"y": [np.array([0, 1, 1])], "n_nodes": [3]}, "y",
             [("wrong-length", [np.array([0, 1])], True), ("nan", [np.array([0.0, np.nan, 1.0])], True),
              ("empty", [], False), ("none", None, False), ("2d", [np.zeros((3, 2))], True)],
             ("y", "Sample", "graph", "label"))
    p.valid("Progress", lambda: Progress("fit", verbose=0)(1, 0.5) if callable(Progress("fit")) else None)
    p.mutate("Progress", lambda **kw: Progress("fit", **kw), {}, "verbose",
             [("string", "loud", False), ("nan", math.nan, False), ("negative", -1, False)], ("verbose",))
    p.mutate("Progress", lambda **kw: Progress("fit", **kw), {}, "callback",
             [("not-callable", 3, False), ("string", "f", False)], ("callback",))


def _unfitted_nonlocal():
    from sklearn_struct import NonLocalCRF

    return NonLocalCRF()


# ---------------------------------------------------------------------- datasets and metrics of round three

def probe_round3_datasets(p):
    from sklearn_struct import datasets
    from sklearn_struct.metrics import segment_report

    P = _P()
    p.valid("make_dependency_treebank", lambda: datasets.make_dependency_treebank(3, random_state=0))
    p.mutate("make_dependency_treebank", datasets.make_dependency_treebank, {"n_sentences": 3}, "n_sentences",
             list(P.bad_int_scalar()) + [("zero", 0, False), ("numpy-float", np.float64(2.0), False)],
             ("n_sentences",))
    p.mutate("make_dependency_treebank", datasets.make_dependency_treebank, {"n_sentences": 3}, "random_state",
             [("string", "a", False), ("float", 0.5, False), ("negative", -1, False)],
             ("random_state", "seed", "Seed", "RandomState"))
    empty = p.tmp / "empty-home-r3"
    empty.mkdir(exist_ok=True)
    p.mutate("load_grobid_citations", datasets.load_grobid_citations, {"data_home": empty}, "fieldsplit",
             [("string-no", "no", False), ("string-yes", "yes", False), ("int", 1, False), ("none", None, False)],
             ("fieldsplit",))
    p.mutate("load_ud", datasets.load_ud, {"language": "english", "data_home": empty}, "language",
             [("unknown", "Klingon", False), ("none", None, False), ("number", 3, False)], ("language",))
    p.mutate("load_ud", datasets.load_ud, {"language": "english", "data_home": empty}, "subset", P.bad_option(),
             ("subset",))
    for arg, bads in [("subset", P.bad_option()), ("scheme", P.bad_option()), ("errors", P.bad_option()),
                      ("depth", [("negative", -1, False), ("string", "a", False), ("fractional", 1.5, False)])]:
        p.mutate("load_umass_citations", datasets.load_umass_citations, {"data_home": empty}, arg, bads, (arg,))
    p.valid("parse_umass_line", lambda: datasets.parse_umass_line("<title> A b </title> <date> 1999 </date>"))
    p.mutate("parse_umass_line", datasets.parse_umass_line, {"line": "<title> A </title>"}, "line",
             [("unclosed", "<title> A b", False), ("stray-close", "A </title>", False), ("none", None, False),
              ("number", 3, False), ("nested-mismatch", "<a> <b> x </a> </b>", False),
              ("deep", "<a> " * 5000 + "x" + " </a>" * 5000, False)], ("line", "tag", "title", "a", "b"))
    p.mutate("parse_umass_line", datasets.parse_umass_line, {"line": "<title> A </title>"}, "errors", P.bad_option(),
             ("errors",))
    p.mutate("find_data_file", datasets.find_data_file, {"relative_paths": "nope.txt", "data_home": empty},
             "relative_paths", [("none", None, False), ("number", 3, False), ("empty-list", [], False),
                                ("escape", Path("../../etc/passwd"), False)],
             ("relative_paths", "nope", "not found", "data", "path", str(empty)))
    yt, yp = [["B-a", "I-a", "O"]], [["B-a", "O", "O"]]
    p.valid("segment_report", lambda: segment_report(yt, yp, output_dict=True))
    for arg, bads in [("zero_division", [("inf", math.inf, False), ("two", 2, False), ("negative", -5, False),
                                         ("string", "warn", False)]),
                      ("digits", [("negative", -1, False), ("string", "2", False), ("fractional", 1.5, False)]),
                      ("scheme", P.bad_option())]:
        p.mutate("segment_report", segment_report, {"y_true": yt, "y_pred": yp}, arg, bads, (arg,))
    p.mutate("segment_report", segment_report, {"y_true": yt, "y_pred": yp}, "y_pred",
             [("empty", [], False), ("ragged", [["B-a"]], True), ("mixed", [["B-a", 3, "O"]], True),
              ("none", None, False)], ("y_pred", "y_true", "sequence", "Sequence", "label"))


# ---------------------------------------------------------------------- estimators not probed before

def probe_round3_estimators(p):
    from sklearn_struct import DLPWClassifier, GPStructClassifier, MLEStructMatcher
    from sklearn_struct.datasets import make_chain_data, make_matchings, make_multilabel_pairwise

    P = _P()
    Xm, Ym = make_multilabel_pairwise(n_samples=30, n_features=4, n_labels=3, random_state=0)[:2]
    p.valid("DLPWClassifier", lambda: DLPWClassifier(max_epochs=20, tol=1e-2).fit(Xm, Ym).predict(Xm))
    fit = lambda X, y, **kw: DLPWClassifier(max_epochs=3, **kw).fit(X, y)  # noqa: E731
    p.mutate("DLPWClassifier.fit", fit, {"X": Xm, "y": Ym}, "X", P.bad_float_array(Xm),
             ("X", "sample", "feature", "array", "Complex"))
    p.mutate("DLPWClassifier.fit", fit, {"X": Xm, "y": Ym}, "y",
             [("not-binary", np.full_like(Ym, 2), False), ("nan", P._with(Ym, (0, 0), np.nan), False),
              ("short", Ym[:-1], False), ("1d", Ym[:, 0], False), ("empty", Ym[:0], False)], ("y", "label", "sample"))
    for arg, bads in [("C", list(P.bad_real_scalar()) + [("huge", 1e300, False), ("tiny", 1e-300, False)]),
                      ("max_epochs", P.bad_int_scalar()), ("tol", P.bad_real_scalar())]:
        p.mutate("DLPWClassifier", lambda **kw: DLPWClassifier(max_epochs=3, **{"tol": 1e-2, **kw}).fit(Xm, Ym),
                 {}, arg, bads, (arg,))
    G, perms = make_matchings(n_samples=4, n_nodes=4, n_features=2, random_state=0)[:2]
    p.valid("MLEStructMatcher", lambda: MLEStructMatcher(max_iter=20).fit(G, perms).predict(G))
    p.mutate("MLEStructMatcher.fit", lambda X, y: MLEStructMatcher(max_iter=3).fit(X, y), {"X": G, "y": perms}, "y",
             [("not-a-permutation", [np.zeros(4, int)] + list(perms[1:]), True),
              ("out-of-range", [np.array([0, 1, 2, 9])] + list(perms[1:]), True), ("empty", [], False),
              ("none", None, False), ("short", list(perms[:-1]), False)], ("y", "Sample", "permutation", "match"))
    p.mutate("MLEStructMatcher.fit", lambda X, y: MLEStructMatcher(max_iter=3).fit(X, y), {"X": G, "y": perms}, "X",
             [("nan", [P._with(G[0], (0, 0, 0), np.nan)] + list(G[1:]), True), ("empty", [], False),
              ("not-square", [G[0][:, :3]] + list(G[1:]), True), ("none", None, False),
              ("huge", [np.full_like(G[0], 1e308)] + list(G[1:]), False)], ("X", "Sample", "feature"))
    for arg, bads in [("alpha", P.bad_real_scalar()), ("rho", P.bad_real_scalar()), ("max_iter", P.bad_int_scalar())]:
        p.mutate("MLEStructMatcher", lambda **kw: MLEStructMatcher(**{"max_iter": 3, **kw}).fit(G, perms), {}, arg,
                 bads, (arg,))
    Xc, yc = make_chain_data(4, n_features=3, n_labels=2, random_state=0)
    gp = lambda **kw: GPStructClassifier(**{"n_inducing": 5, "amplitude": 1.0, "max_iter": 3, **kw})  # noqa: E731
    p.valid("GPStructClassifier", lambda: gp().fit(Xc, yc).predict(Xc))
    p.mutate("GPStructClassifier.fit", lambda X, y: gp().fit(X, y), {"X": Xc, "y": yc}, "X",
             [b for b in P.bad_sequence_list(Xc) if b[0] not in ("huge",)], ("X", "Sequence"))
    p.mutate("GPStructClassifier.fit", lambda X, y: gp().fit(X, y), {"X": Xc, "y": yc}, "y", P.bad_label_list(yc),
             ("y", "Sequence"))
    for arg, bads in [("n_inducing", P.bad_int_scalar()), ("amplitude", P.bad_real_scalar()),
                      ("max_iter", P.bad_int_scalar())]:
        p.mutate("GPStructClassifier", lambda **kw: gp(**kw).fit(Xc, yc), {}, arg, bads, (arg,))


def probe_parser(p):
    from sklearn_struct import DependencyParserBP

    X = [[("the", "DET"), ("dog", "NOUN"), ("barks", "VERB")], [("a", "DET"), ("cat", "NOUN"), ("runs", "VERB")]]
    y = [[2, 3, 0], [2, 3, 0]]
    parser = DependencyParserBP(max_iter=3, random_state=0)
    p.valid("DependencyParserBP", lambda: parser.fit(X, y).predict(X))
    fit = lambda X, y: DependencyParserBP(max_iter=2, random_state=0).fit(X, y)  # noqa: E731
    p.mutate("DependencyParserBP.fit", fit, {"X": X, "y": y}, "y",
             [("out-of-range", [[2, 9, 0], y[1]], True), ("negative", [[-1, 3, 0], y[1]], True),
              ("cycle", [[2, 1, 0], y[1]], True), ("no-root", [[2, 3, 1], y[1]], True), ("empty", [], False),
              ("wrong-length", [[2, 0], y[1]], True), ("none", None, False), ("strings", [["a", "b", "c"], y[1]], True),
              ("nan", [[np.nan, 3, 0], y[1]], True)], ("y", "head", "Sentence", "sentence", "root", "cycle"))
    p.mutate("DependencyParserBP.fit", fit, {"X": X, "y": y}, "X",
             [("empty", [], False), ("none", None, False), ("empty-sentence", [[], X[1]], True),
              ("a-string", "abc", False), ("ragged-tokens", [[("the",), ("dog", "NOUN", "x"), ("barks", "VERB")], X[1]],
                                                            True)], ("X", "Sentence", "sentence", "token"))
    p.mutate("DependencyParserBP.predict", lambda X: parser.predict(X), {"X": X}, "X",
             [("empty", [], False), ("none", None, False), ("empty-sentence", [[]], True)],
             ("X", "Sentence", "sentence", "token"))
    for arg, bads in [("max_iter", _P().bad_int_scalar()), ("gamma", _P().bad_real_scalar()),
                      ("objective", _P().bad_option())]:
        p.mutate("DependencyParserBP", lambda **kw: DependencyParserBP(**{"max_iter": 2, **kw}).fit(X, y), {}, arg,
                 bads, (arg,))


SECTIONS = {
    "parser": probe_parser,
    "crfsuite": probe_crfsuite,
    "numerics": probe_numerics,
    "trees": probe_trees,
    "structures": probe_structures,
    "round3_datasets": probe_round3_datasets,
    "round3_estimators": probe_round3_estimators,
}
