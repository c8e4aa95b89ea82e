"""Sections of the bad-input probe (``tests/_fuzz_probe.py``) for files and fits (issue #19).

* ``model_files``: every estimator with ``save`` / ``load``: a round trip, then files that are
  empty, truncated, corrupted (a flipped byte), text, of another model class, with edited arrays
  or parameters (checksum kept or recomputed), a directory and a missing path.
* ``loaders``: every text loader on non-UTF-8 bytes, truncated gzip, an empty file, a directory.
* ``interrupts``: every estimator is fitted, then refitted on other data with a ``callback`` that
  raises KeyboardInterrupt; the fitted attributes and predictions must be exactly as before.
* ``new_inputs``: the inputs the first probe did not try on the newer modules (CRF++ templates,
  constraint coefficients, graph lists, dependency heads, DLPW samples).

Each section records failures through the probe's :class:`Probe` (same rules: ValueError /
TypeError naming the argument or file, OSError naming the path, never another exception).
"""

import copy
import gzip
import json

import numpy as np
import scipy.sparse as sp


class AcceptedSilently(Exception):
    """Raised by :func:`refuse` when a bad input was accepted: the probe records it as a defect row."""


def refuse(p, qualname, label, thunk, names, path=None):
    """A probe case whose input must be refused: returning normally is a defect too."""
    def call():
        out = thunk()
        raise AcceptedSilently(f"returned {type(out).__name__} instead of raising")

    p.run(qualname, label, call, names, path=path)


# ---------------------------------------------------------------------- model files


def _estimators_with_files():
    from sklearn_struct import ChainCRF
    from sklearn_struct.datasets import make_chain_data

    X, y = make_chain_data(5, n_features=4, n_labels=3, random_state=0)
    return [("ChainCRF", ChainCRF, ChainCRF(c2=0.1, max_iter=30).fit(X, y), X)]


def _rewrite(src, dst, edit_arrays=None, edit_meta=None):
    """``src`` with edited arrays / header, its checksum kept (so it no longer matches)."""
    with np.load(src, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays.pop("meta")))
    arrays.update(edit_arrays or {})
    meta.update(edit_meta or {})
    np.savez(dst, meta=np.array(json.dumps(meta)), **arrays)
    return dst


def _forged(src, dst, edit_arrays=None, edit_params=None, edit_meta=None):
    """``src`` with edits and a recomputed checksum: only the loader's own checks can catch it."""
    from sklearn_struct.utils._model_file import save_model_file

    with np.load(src, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays.pop("meta")))
    arrays.update(edit_arrays or {})
    arrays = {k: v for k, v in arrays.items() if v is not None}  # None: the array is left out
    meta["params"].update(edit_params or {})
    meta.update(edit_meta or {})
    fmt, version = meta.pop("format"), meta.pop("version")
    meta.pop("sha256", None)
    save_model_file(dst, fmt, version, arrays, meta)
    return dst


def probe_model_files(p):
    tmp = p.tmp / "models"
    tmp.mkdir(exist_ok=True)
    for name, cls, fitted, X in _estimators_with_files():
        _probe_model_file(p, tmp, name, cls, fitted, X)
    _probe_mask_file(p, tmp)


def _probe_mask_file(p, tmp):
    """ChainCRF files holding an ``allowed_transitions`` mask (format version 4): hostile masks are refused."""
    from sklearn_struct import ChainCRF
    from sklearn_struct.datasets import make_chain_data

    X, y = make_chain_data(5, n_features=4, n_labels=3, random_state=0)
    fitted = ChainCRF(c2=0.1, max_iter=30, allowed_transitions=np.ones((3, 3), dtype=bool)).fit(X, y)
    good = tmp / "ChainCRF-mask.npz"
    p.valid("ChainCRF.save (mask)", lambda: fitted.save(good))
    p.valid("ChainCRF.load (mask)", lambda: ChainCRF.load(good).predict(X),
            lambda out: all(np.array_equal(a, b) for a, b in zip(out, fitted.predict(X))))
    decode = ChainCRF(c2=0.1, max_iter=30, allowed_transitions=np.ones((3, 3), dtype=bool),
                      allowed_transitions_in_fit=False).fit(X, y)
    decode_file = tmp / "ChainCRF-decode-only.npz"
    p.valid("ChainCRF.save (decode only)", lambda: decode.save(decode_file))
    p.valid("ChainCRF.load (decode only)", lambda: ChainCRF.load(decode_file),
            lambda out: out.allowed_transitions_in_fit is False and all(
                np.array_equal(a, b) for a, b in zip(out.predict(X), decode.predict(X))))
    edits = {
        "mask-shape": {"edit_arrays": {"allowed_transitions": np.ones((4, 4), dtype=bool)}},
        "mask-1d": {"edit_arrays": {"allowed_transitions": np.ones(9, dtype=bool)}},
        "mask-float": {"edit_arrays": {"allowed_transitions": np.ones((3, 3))}},
        "mask-strings": {"edit_arrays": {"allowed_transitions": np.full((3, 3), "a")}},
        "mask-missing": {"edit_arrays": {"allowed_transitions": None}},
        "mask-form": {"edit_meta": {"allowed_transitions": "grid"}},
        "mask-form-number": {"edit_meta": {"allowed_transitions": 7}},
        "mask-and-param": {"edit_params": {"allowed_transitions": "BIO"}},
        "tuple-without-start": {"edit_meta": {"allowed_transitions": "tuple"}},
        "scheme-unknown": {"edit_arrays": {"allowed_transitions": None},
                           "edit_meta": {"allowed_transitions": None}, "edit_params": {"allowed_transitions": "XY"}},
        "in-fit-string": {"edit_params": {"allowed_transitions_in_fit": "no"}},
        "in-fit-number": {"edit_params": {"allowed_transitions_in_fit": 0}},
        "in-fit-null": {"edit_params": {"allowed_transitions_in_fit": None}},
    }
    for label, edit in edits.items():
        path = tmp / f"ChainCRF-{label}.npz"
        _forged(good, path, **edit)
        refuse(p, "ChainCRF.load", label, lambda path=path: ChainCRF.load(path), (str(path),), path=path)


def _probe_model_file(p, tmp, name, cls, fitted, X):
    """A round trip, then every kind of bad file, for one estimator class."""
    good = tmp / f"{name}.npz"
    p.valid(f"{name}.save", lambda: fitted.save(good))
    p.valid(f"{name}.load", lambda: cls.load(good).predict(X),
            lambda out: all(np.array_equal(a, b) for a, b in zip(out, fitted.predict(X))))
    raw = good.read_bytes()
    files = {
        "empty": b"", "truncated": raw[: len(raw) // 2], "truncated-end": raw[:-10],
        "flipped-byte": raw[:200] + bytes([raw[200] ^ 0x55]) + raw[201:], "text": b"not a model\n",
        "npy": b"\x93NUMPY" + raw[6:100], "gzip": gzip.compress(raw),
    }
    for label, content in files.items():
        path = tmp / f"{name}-{label}.npz"
        path.write_bytes(content)
        refuse(p, f"{name}.load", label, lambda path=path: cls.load(path), (str(path),), path=path)
    first = fitted.coef_.shape
    edits = {
        "changed-weight": lambda d: _rewrite(good, d, edit_arrays={"coef": fitted.coef_ + 1e-9}),
        "edited-header": lambda d: _rewrite(good, d, edit_meta={"n_iter_": 1}),
        "intercept-7": lambda d: _forged(good, d, edit_arrays={"intercept": np.zeros(7)}),
        "coef-shape": lambda d: _forged(good, d, edit_arrays={"coef": np.zeros((first[0] + 1, first[1]))}),
        "coef-nan": lambda d: _forged(good, d, edit_arrays={"coef": np.full(first, np.nan)}),
        "coef-strings": lambda d: _forged(good, d, edit_arrays={"coef": np.full(first, "a")}),
        "no-coef": lambda d: _forged(good, d, edit_arrays={"coef": None}),
        "classes-2d": lambda d: _forged(good, d, edit_arrays={"classes": np.zeros((3, 1))}),
        "classes-repeated": lambda d: _forged(good, d, edit_arrays={"classes": np.zeros(3)}),
        "param-negative": lambda d: _forged(good, d, edit_params={"c2": -1.0}),
        "param-zero-iter": lambda d: _forged(good, d, edit_params={"max_iter": 0}),
        "param-unknown": lambda d: _forged(good, d, edit_params={"bogus": 1}),
        "objective-nan": lambda d: _forged(good, d, edit_meta={"objective_": float("nan")}),
        "n-features-string": lambda d: _forged(good, d, edit_meta={"n_features_in_": "4"}),
        "other-class": lambda d: _forged(good, d, edit_meta={"format": "sklearn_struct.NonLocalCRF"}),
        "future-version": lambda d: _forged(good, d, edit_meta={"version": 99}),
    }
    for label, make in edits.items():
        path = tmp / f"{name}-{label}.npz"
        make(path)
        refuse(p, f"{name}.load", label, lambda path=path: cls.load(path), (str(path),), path=path)
    refuse(p, f"{name}.load", "directory", lambda: cls.load(tmp), (str(tmp),), path=tmp)
    refuse(p, f"{name}.load", "missing", lambda: cls.load(tmp / "missing.npz"), ("missing.npz",),
          path=tmp / "missing.npz")
    refuse(p, f"{name}.load", "none", lambda: cls.load(None), ("path",))
    refuse(p, f"{name}.save", "directory", lambda: fitted.save(tmp), (str(tmp),), path=tmp)
    refuse(p, f"{name}.save", "not fitted", lambda: cls().save(tmp / "x.npz"), (name, "fitted"))


# ---------------------------------------------------------------------- loaders


def _text_loaders():
    from sklearn_struct import datasets as ds
    from sklearn_struct.preprocessing import CRFppTemplateFeaturizer

    conllu = b"1\tHe\the\tPRON\tPRP\t_\t2\tnsubj\t_\t_\n2\truns\trun\tVERB\tVBZ\t_\t0\troot\t_\t_\n\n"
    return {
        "load_conll": (ds.load_conll, b"He PRP B-NP\nreckons VBZ B-VP\n\n"),
        "load_conllu": (ds.load_conllu, conllu),
        "load_arff_multilabel": (lambda path: ds.load_arff_multilabel(path, n_labels=1),
                                 b"@relation r\n@attribute x numeric\n@attribute y {0,1}\n@data\n0.5,1\n"),
        "load_libsvm_multilabel": (ds.load_libsvm_multilabel, b"0,1 1:0.5\n1 2:1.5\n"),
        "read_landmark_file": (ds.read_landmark_file, b"1.0 2.0\n3.0 4.0\n"),
        "read_letter_data": (ds.read_letter_data, b"1\ta\t-1\t1\t1\t0\t" + b"\t".join([b"0"] * 128) + b"\n"),
        "CRFppTemplateFeaturizer": (lambda path: CRFppTemplateFeaturizer(path).fit([[("a", "b")]]),
                                    b"U00:%x[0,0]\n"),
    }


def probe_loaders(p):
    tmp = p.tmp / "loaders"
    tmp.mkdir(exist_ok=True)
    for name, (load, good) in _text_loaders().items():
        long = gzip.compress(good * 500)
        files = {
            "non-utf8": good.replace(b"\n", b"\xff\xfe\n", 1), "latin1-word": good.replace(b"e", b"\xe9", 1),
            "truncated-gz": long[: len(long) // 2], "gz-garbage": b"\x1f\x8b" + bytes(range(200)),
            "empty": b"", "blank-lines": b"\n\n\n", "binary": bytes(range(256)) * 4,
        }
        path = tmp / f"{name}-good"
        path.write_bytes(good)
        p.valid(name, lambda path=path, load=load: load(path))
        for label, content in files.items():
            if content == good:  # no 'e' to replace
                continue
            path = tmp / f"{name}-{label}"
            path.write_bytes(content)
            refuse(p, f"{name} (file)", label, lambda path=path, load=load: load(path), (str(path),), path=path)
        refuse(p, f"{name} (file)", "directory", lambda load=load: load(tmp), (str(tmp),), path=tmp)
    from sklearn_struct.datasets import load_conllu

    path = tmp / "load_conllu-good"
    refuse(p, "load_conllu(encoding)", "unknown", lambda: load_conllu(path, encoding="no-such-codec"), ("encoding",))
    refuse(p, "load_conllu(encoding)", "number", lambda: load_conllu(path, encoding=3), ("encoding",))


# ---------------------------------------------------------------------- interrupted fits


def _interrupt(iteration, objective, seconds):
    raise KeyboardInterrupt


def probe_interrupts(p):
    from test_reliability import (  # one list of cases for the test and the probe
        INTERRUPT_CASES,
        same_state,
    )

    for name, factory in INTERRUPT_CASES:
        est, (X1, y1), (X2, y2) = factory()
        p.visited.add(name)
        p.cases += 1
        try:
            est.fit(X1, y1)
            before, predicted = copy.deepcopy(vars(est)), est.predict(X1)
            est.set_params(callback=_interrupt)
            try:
                est.fit(X2, y2)
                p.failures.append(f"{name}.fit [interrupted]: the KeyboardInterrupt from the callback was swallowed")
                continue
            except KeyboardInterrupt:
                pass
            after = vars(est)
            changed = sorted(k for k in set(before) | set(after)
                             if k != "callback" and not (k in before and k in after and same_state(before[k], after[k])))
            if changed:
                p.failures.append(f"{name}.fit [interrupted]: attributes changed: {changed}")
            elif not same_state(est.predict(X1), predicted):
                p.failures.append(f"{name}.fit [interrupted]: predictions changed")
        except Exception as exc:  # noqa: BLE001
            p.failures.append(f"{name}.fit [interrupted]: {type(exc).__name__}: {str(exc)[:160]}")


# ---------------------------------------------------------------------- newer modules' inputs


def probe_new_inputs(p):
    from sklearn_struct import DLPWClassifier, PrunedBPMarginals
    from sklearn_struct.constraints import (
        AtMostSegments,
        ConstraintEnergy,
        LinearConstraint,
    )
    from sklearn_struct.datasets import make_multilabel_pairwise
    from sklearn_struct.parsing import DependencyParserBP
    from sklearn_struct.preprocessing import CRFppTemplateFeaturizer

    classes = np.array(["a", "b"])
    for label, kwargs in [("node-list", {"node": ["a"]}), ("node-nan", {"node": {"a": np.nan}}),
                          ("first-inf", {"first": {"b": np.inf}}), ("edge-string", {"edge": {("a", "b"): "x"}}),
                          ("last-none-coef", {"last": {"a": None}}), ("node-string", {"node": "a"})]:
        refuse(p, "LinearConstraint", label,
              lambda kw=kwargs: ConstraintEnergy([LinearConstraint(**kw)]).fit(None, 2, classes=classes),
              tuple(kwargs))
    energy = ConstraintEnergy([AtMostSegments("b", 1)]).fit(None, 2, classes=classes)
    for label, y in [("empty-sequence", [np.array([0, 1]), np.array([], dtype=int)]), ("empty", []),
                     ("out-of-range", [np.array([0, 5])]), ("fractional", [np.array([0.5])]), ("none", None),
                     ("nan", [np.array([np.nan])])]:
        refuse(p, "ConstraintEnergy.violations", label, lambda y=y: energy.violations(y), ("y", "sequence"))
    for label, X in [("csr_matrix", sp.csr_matrix(np.eye(3))), ("csr_array", sp.csr_array(np.eye(3))),
                     ("coo", sp.coo_matrix(np.eye(3)))]:
        refuse(p, "PrunedBPMarginals.fit", f"X {label}", lambda X=X: PrunedBPMarginals().fit(X, [np.zeros(3)]), ("X",))
    sents = [[("a", "DET"), ("b", "NOUN")], [("c", "DET"), ("d", "NOUN"), ("e", "VERB")]]
    for label, heads, single in [("two-roots", [0, 3, 0], True), ("cycle", [2, 3, 1], False),
                                 ("cycle-with-root", [0, 3, 2], False), ("no-root", [2, 3, 2], False)]:
        refuse(p, "DependencyParserBP.fit", label,
              lambda h=heads, s=single: DependencyParserBP(single_root=s, max_iter=1, n_hash_bits=8).fit(
                  sents, [np.array([2, 0]), np.array(h)]), ("y[1]",))
    X, Y = make_multilabel_pairwise(20, n_features=4, n_labels=3, random_state=0)
    for label, Xb in [("dicts", [{"a": 1.0}] * 20), ("huge", X * 1e300), ("strings", [["a"] * 4] * 20),
                      ("ragged", [[1.0]] * 19 + [[1.0, 2.0]])]:
        refuse(p, "DLPWClassifier.fit", label, lambda Xb=Xb: DLPWClassifier(max_epochs=2).fit(Xb, Y), ("X", "sample"))
    tmp = p.tmp / "templates"
    tmp.mkdir(exist_ok=True)
    for label, content in [("non-utf8", b"U00:%x[0,0]\xff\n"), ("empty", b""), ("bad-macro", b"U00:%x[0,zz]\n"),
                           ("column-out-of-range", b"U00:%x[0,9]\n")]:
        path = tmp / label
        path.write_bytes(content)
        refuse(p, "CRFppTemplateFeaturizer.fit", label,
              lambda path=path: CRFppTemplateFeaturizer(path).fit([[("a", "b")]]),
              (str(path), "template"), path=path)


SECTIONS = {"model_files": probe_model_files, "loaders": probe_loaders, "interrupts": probe_interrupts,
            "new_inputs": probe_new_inputs}
