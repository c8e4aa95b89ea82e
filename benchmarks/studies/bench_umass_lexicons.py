"""UMass Table 1 with name-lexicon features in the base CRF: what the lists fix, on dev.

Anzaroot et al. (2014)'s base CRF has lexicons (names, journals, publishers); ours had none.
The error analysis of the base CRF on dev (``bench_umass_errors.py``) found the largest error
class to be author lists with full first names read as part of the title, which a name
lexicon addresses at the token, where count constraints cannot. Here every model uses the
features of ``bench_umass_table1.py`` plus the US Census 1990 name lists
(``_lib/name_lexicons.py``; ``citation_features(words, lexicons)``: first / last / both, frequency
bins, the case, the same for the tokens at +-1 / +-2).

Default (dev only, testing untouched): the base CRF at ``C2_GRID`` on dev; the error
analysis's "author list read as title" class on its dev predictions; the learned family's
dev ceilings (oracle per-reference psi, one perceptron psi fitted on dev's own gold); the
family's held-out dev gain as in the main protocol (psi by Algorithm 3 on 3-fold cross-fitted
training marginals, ``FAMILY_GRID`` on dev); the lists' coverage of dev's gold name and
title tokens, and of those not seen in training. The fitted base and chosen model are pickled in
``--cache`` so that ``--test`` scores exactly them on testing, once.
``control``: the same steps without lexicons by the same code (refits of the capped
base move dev F1 by a few tenths between code versions, so the lexicons are compared with it);
``converged [control]``: the base CRF at the chosen c2 run to L-BFGS's stop.

Run (after ``papers/bench_umass_table1.py``'s main run and ``bench_umass_learners.py``, whose dev numbers
the table shows beside these)::

    SKLEARN_STRUCT_DATA=../shared/data nice -n 10 python benchmarks/studies/bench_umass_lexicons.py [STEP ...]
    python benchmarks/studies/bench_umass_lexicons.py --report-only   # the table from the saved results

Output: ``benchmarks/results/umass_lexicons/umass_lexicons_dev.json``, ``umass_lexicons_control_dev.json``,
``umass_lexicons.md`` (and ``umass_lexicons_test.json`` after ``--test``).
"""

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: for _lib
from _lib.citation_features import _NOT_LETTER  # noqa: E402
from _lib.internals import fit_energy, in_sample_thetas  # noqa: E402
from _lib.name_lexicons import load_name_lexicons  # noqa: E402
from _lib.report import add_report_only, finish, parse_args, write_text  # noqa: E402
from _lib.results import results_dir  # noqa: E402
from _lib.umass import protocol as B  # noqa: E402
from _lib.umass.errors import analyse  # noqa: E402

from sklearn_struct import NonLocalCRF  # noqa: E402
from sklearn_struct.constraint_learning import ConstraintFamily, kept_constraints  # noqa: E402
from sklearn_struct.metrics import segment_error_events  # noqa: E402

RESULTS = results_dir("umass_lexicons")
DEV_PATH = RESULTS / "umass_lexicons_dev.json"
CONTROL_PATH = RESULTS / "umass_lexicons_control_dev.json"  # the same run without lexicons, same code
TEST_PATH = RESULTS / "umass_lexicons_test.json"
LEARNERS = results_dir("umass_learners") / "umass_learners.json"


def _authors_as_title(y_dev, pred, words):
    """The error analysis of ``bench_umass_errors.py`` on dev predictions: events, the swallowed author lists."""
    res = analyse([list(v) for v in y_dev], [list(v) for v in pred], words)
    return {"f1": res["f1"], "n_events": res["n_events"], "all": res["all"],
            "authors_swallowed": list(res["authors_swallowed"]), "by_type": res["by_type"],
            "confusions": res["confusions"]}


def _dump(out, path):
    path.write_text(json.dumps(out, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))


def base_grid(X, y, out, log):
    """The lexicon base CRF at every ``C2_GRID`` value; ``c2`` chosen on dev."""
    models, out["c2_dev"] = {}, {}
    for c2 in B.C2_GRID:
        models[c2] = B.timed(out, f"fit_base_s_c2_{c2}", B.quiet,
                             NonLocalCRF(c2=c2, max_iter=B.MAX_ITER, random_state=0).fit, X["train"], y["train"])
        out["c2_dev"][str(c2)] = B.seg_f1(y["dev"], models[c2].predict(X["dev"]))
        log(f"lexicon base CRF c2={c2}: dev {out['c2_dev'][str(c2)]:.2f} ({models[c2].n_iter_} iterations)")
    c2 = max(B.C2_GRID, key=lambda c: out["c2_dev"][str(c)])
    out.update(c2=c2, base_dev=out["c2_dev"][str(c2)], base_n_iter=int(models[c2].n_iter_))
    return models[c2]


def ceilings(base, X, y, data, ms, out, log):
    """The family's dev ceilings over the lexicon base: oracle per-reference psi and one in-sample psi."""
    fam = ConstraintFamily(min_support=ms).fit(data["train"].labels)
    y_dev = [np.searchsorted(base.classes_, v) for v in y["dev"]]
    energy = fit_energy(fam.constraints_, y_dev, base.classes_)
    out["ceiling_dev"] = {str(w): B.oracle_ceiling(base, energy, X["dev"], y["dev"], w) for w in B.CEILING_STRENGTHS}
    theta = (base.coef_, base.intercept_, base.transition_)
    settings = dict(B.PERCEPTRON_FIXED, psi_l1=0.0, learning_rate=3.0, n_epochs=B.IN_SAMPLE_EPOCHS[0])
    model = B.with_energy(base, fam.constraints_, in_sample_thetas(theta, len(y_dev)), X["dev"], y_dev, **settings)
    out["in_sample_dev"] = B.seg_f1(y["dev"], model.predict(X["dev"]))
    log(f"ceilings over the lexicon base (dev {out['base_dev']:.2f}): oracle "
        + ", ".join(f"psi {w}: {f:+.2f}" for w, (f, _) in ((w, (v[0] - out['base_dev'], v[1]))
                                                           for w, v in out["ceiling_dev"].items()))
        + f"; one psi in-sample {out['in_sample_dev'] - out['base_dev']:+.2f}")


def family_grid(base, X, y, data, out, log):
    """The main protocol's learned family on the lexicon base: psi on cross-fitted training marginals, grid on dev."""
    y_enc = [np.searchsorted(base.classes_, v) for v in y["train"]]
    thetas = B.timed(out, "cross_fit_s", B.cross_fitted, base, X["train"], y_enc)
    out["family_dev"], best, fams = [], None, {}
    for setting in B.FAMILY_GRID:
        ms = setting["min_support"]
        fams.setdefault(ms, ConstraintFamily(min_support=ms).fit(data["train"].labels))
        settings = {k: v for k, v in setting.items() if k != "min_support"}
        t0 = time.perf_counter()
        model = B.with_energy(base, fams[ms].constraints_, thetas, X["train"], y_enc, **B.FAMILY_FIXED, **settings)
        f1 = B.seg_f1(y["dev"], model.predict(X["dev"]))
        out["family_dev"].append(dict(setting, n_candidates=len(fams[ms].constraints_),
                                      n_kept=int(np.sum(model.psi_ > 0)), dev=f1, seconds=time.perf_counter() - t0))
        log(f"learned family {setting}: dev {f1:.2f} ({f1 - out['base_dev']:+.2f} over the lexicon base)")
        if best is None or f1 > best[0]:
            best = (f1, setting, model)
    out["family_choice"], out["family_best_dev"] = best[1], best[0]
    out["kept"] = [(c.name, w) for c, w in kept_constraints(best[2])]
    return best[2]


def swallowed_coverage(y_dev, pred, words, lexicons):
    """In the author lists the base CRF reads as a non-name field: name tokens (>= 2 letters) and those in a list."""
    events, _ = segment_error_events([list(v) for v in y_dev], [list(v) for v in pred])
    out = {"events": 0, "tokens": 0, "in_either": 0, "examples": []}
    for e in events:
        if not (e["type"] == "merged" and any(f.startswith("person") for f, _, _ in e["gold"])
                and not any(f.startswith("person") for f, _, _ in e["pred"])):
            continue
        out["events"] += 1
        toks = [words[e["seq"]][t] for f, a, b in e["gold"] if f.startswith("person") for t in range(a, b)]
        keys = [k for k in (_NOT_LETTER.sub("", w.lower()) for w in toks) if len(k) > 1]
        out["tokens"] += len(keys)
        out["in_either"] += sum(k in lexicons["first"] or k in lexicons["last"] for k in keys)
        out["examples"].append(" ".join(toks))
    return out


def converged(X, y, data, c2, ms, log):
    """The base CRF at ``c2`` run to L-BFGS's stop (no cap): dev F1, fields, error classes, one in-sample psi."""
    out = {"c2": c2}
    base = B.timed(out, "fit_s", B.quiet, NonLocalCRF(c2=c2, max_iter=None, random_state=0).fit, X["train"], y["train"])
    pred = base.predict(X["dev"])
    out.update(n_iter=int(base.n_iter_), base_dev=B.seg_f1(y["dev"], pred), fields_dev=B.per_field(y["dev"], pred),
               errors=_authors_as_title(y["dev"], pred, data["dev"].words))
    fam = ConstraintFamily(min_support=ms).fit(data["train"].labels)
    y_dev = [np.searchsorted(base.classes_, v) for v in y["dev"]]
    theta = (base.coef_, base.intercept_, base.transition_)
    settings = dict(B.PERCEPTRON_FIXED, psi_l1=0.0, learning_rate=3.0, n_epochs=B.IN_SAMPLE_EPOCHS[0])
    model = B.with_energy(base, fam.constraints_, in_sample_thetas(theta, len(y_dev)), X["dev"], y_dev, **settings)
    out["in_sample_dev"] = B.seg_f1(y["dev"], model.predict(X["dev"]))
    log(f"converged base ({out['n_iter']} iterations): dev {out['base_dev']:.2f}, author lists "
        f"{out['errors']['authors_swallowed']}, one psi in-sample {out['in_sample_dev'] - out['base_dev']:+.2f}")
    return out


def run_dev(log, cache, steps=("base", "fields", "errors", "ceilings", "family", "coverage"), control=False):
    """Every dev measurement of the lexicon features; pickles the base and chosen learned model in ``cache``.

    ``steps``: a subset of the default (without ``"base"``, the earlier run's pickled base and json are reused).
    ``control``: the same steps without lexicons (today's code and refits, ``CONTROL_PATH``)."""
    path, tag = (CONTROL_PATH, "ctl") if control else (DEV_PATH, "lex")
    cache = Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    out = json.loads(path.read_text()) if path.exists() and "base" not in steps else {}
    lexicons = load_name_lexicons()
    if "coverage" in steps and not control:
        out["coverage"] = coverage({s: B.load_umass_citations(s) for s in ("train", "dev")}, lexicons)
        _dump(out, path)
    if not set(steps) - {"coverage"}:
        return out
    X, y, data, vec = B.load_features(None if control else lexicons)
    out["n_features"] = int(X["train"][0].shape[1])
    if "base" in steps:
        base = base_grid(X, y, out, log)
        (cache / f"{tag}_base.pkl").write_bytes(pickle.dumps(base))
        _dump(out, path)
    else:
        base = pickle.loads((cache / f"{tag}_base.pkl").read_bytes())
    if "fields" in steps:
        pred = base.predict(X["dev"])
        out["fields_dev"] = B.per_field(y["dev"], pred)
        out["swallowed"] = swallowed_coverage(y["dev"], pred, data["dev"].words, lexicons)
        log(f"swallowed author lists: {out['swallowed']['events']} events, {out['swallowed']['in_either']} of "
            f"{out['swallowed']['tokens']} name tokens in a list")
        _dump(out, path)
    if "errors" in steps:
        out["errors"] = _authors_as_title(y["dev"], base.predict(X["dev"]), data["dev"].words)
        log(f"errors on dev: {out['errors']['n_events']} events; author lists read as non-name "
            f"{out['errors']['authors_swallowed']}")
        _dump(out, path)
    if "ceilings" in steps:
        ceilings(base, X, y, data, B.FAMILY_GRID[0]["min_support"], out, log)
        _dump(out, path)
    if "family" in steps:
        learned = family_grid(base, X, y, data, out, log)
        (cache / f"{tag}_learned.pkl").write_bytes(pickle.dumps(learned))
        _dump(out, path)
    if "converged" in steps:  # not in the default steps: ~5 min per fit
        out["converged"] = converged(X, y, data, out["c2"], B.FAMILY_GRID[0]["min_support"], log)
        _dump(out, path)
    return out


def run_test(saved, log, cache):
    """Testing, once: the pickled lexicon base CRF and the learned family chosen on dev."""
    cache = Path(cache)
    X, y, _, _ = B.load_features(load_name_lexicons())
    out = {"c2": saved["c2"], "family_choice": saved["family_choice"], "test": {}}
    for key in ("base", "learned"):
        model = pickle.loads((cache / f"lex_{key}.pkl").read_bytes())
        pred = model.predict(X["test"])
        out["test"][key] = {"f1": B.seg_f1(y["test"], pred), "fields": B.per_field(y["test"], pred)}
    log("test: " + ", ".join(f"{k} {v['f1']:.2f}" for k, v in out["test"].items()))
    _dump(out, TEST_PATH)
    return out


def coverage(data, lexicons, fields=("person-first", "person-last", "title", "journal", "booktitle")):
    """Per gold field on dev: tokens (>= 2 letters) in a name list, and of those unseen in training, how many.

    Returns ``{field: {"n", "first", "last", "any", "unseen", "unseen_any"}}``: what the lexicon can add
    over the word features the base CRF already learns from training."""
    key = lambda w: _NOT_LETTER.sub("", w.lower())  # noqa: E731
    seen = {key(w) for ws in data["train"].words for w in ws}
    out = {f: dict.fromkeys(("n", "first", "last", "any", "unseen", "unseen_any"), 0) for f in fields}
    for ws, ls in zip(data["dev"].words, data["dev"].labels):
        for w, lab in zip(ws, ls):
            k, c = key(w), out.get(str(lab)[2:])
            if c is None or len(k) < 2:
                continue
            hit = (k in lexicons["first"], k in lexicons["last"])
            c["n"] += 1
            c["first"] += hit[0]
            c["last"] += hit[1]
            c["any"] += any(hit)
            c["unseen"] += k not in seen
            c["unseen_any"] += k not in seen and any(hit)
    return out


def _earlier(main, lr, err):
    """The earlier runs' dev numbers without lexicons (main run, ``bench_umass_learners``, ``bench_umass_errors``) in one dict."""
    fam0 = max(main["family_dev"], key=lambda r: r["dev"])
    return {"c2_dev": main["c2_dev"], "c2": main["c2"], "base_dev": main["c2_dev"][str(main["c2"])],
            "family_best_dev": fam0["dev"], "ceiling_dev": {k.split()[1]: v for k, v in lr["ceiling"].items()
                                                             if k.startswith("dev")},
            "ceiling_base": lr["base_dev"], "in_sample_dev": lr["in_sample"]["in_sample"][0]["dev"],
            "errors": {k: err[k] for k in ("n_events", "all", "authors_swallowed", "f1")}}


def _rows(d):
    """One column of the dev table: every row's cell for the run ``d``."""
    b, cb = d["base_dev"], d.get("ceiling_base", d["base_dev"])
    e = d["errors"]
    ceil = [f"{d['ceiling_dev'][str(w)][0]:.2f} ({d['ceiling_dev'][str(w)][0] - cb:+.2f})" for w in B.CEILING_STRENGTHS]
    return [", ".join(f"{c}: {v:.2f}" for c, v in d["c2_dev"].items()), f"{b:.2f} (c2 {d['c2']})",
            f"{d['family_best_dev']:.2f} ({d['family_best_dev'] - b:+.2f})", *ceil,
            f"{d['in_sample_dev']:.2f} ({d['in_sample_dev'] - cb:+.2f})",
            f"{e['n_events']} (+{e['all']:.2f}" + (f"; base {e['f1']:.2f})" if "f1" in e and cb != e["f1"] else ")"),
            f"{e['authors_swallowed'][0]} (+{e['authors_swallowed'][1]:.2f})"]


FIELDS = ("person-first", "person-middle", "person-last", "title", "journal", "booktitle")
ROW_NAMES = ["base CRF, c2 grid", "base CRF (chosen c2)", "+ learned family, psi held out (main protocol, best of "
             "the grid; over base)", *(f"oracle ceiling, psi {w}" for w in B.CEILING_STRENGTHS),
             f"one psi fitted on dev's gold, in-sample ({B.IN_SAMPLE_EPOCHS[0]} epochs)",
             "error events (F1 if all fixed)", "author list read as a non-name field (events, F1 if fixed)"]


def _converged_rows(cols):
    """Rows of the base CRFs run to L-BFGS's stop (``bench_umass_lexicons.py converged``), where a run has them."""
    def cell(d, fn):
        return fn(d["converged"]) if "converged" in d else ""

    rows = [("base CRF to L-BFGS's stop (same c2; iterations)", lambda c: f"{c['base_dev']:.2f} ({c['n_iter']})"),
            ("  one psi in-sample over it", lambda c: f"{c['in_sample_dev']:.2f} ({c['in_sample_dev'] - c['base_dev']:+.2f})"),
            ("  author list read as a non-name field", lambda c: f"{c['errors']['authors_swallowed'][0]} "
             f"(+{c['errors']['authors_swallowed'][1]:.2f})"),
            ("  person-last / title F1", lambda c: f"{c['fields_dev']['person-last']:.2f} / {c['fields_dev']['title']:.2f}")]
    if not any("converged" in d for d in cols.values()):
        return []
    return [f"| {name} | " + " | ".join(cell(d, fn) for d in cols.values()) + " |" for name, fn in rows]


def report(dev, test=None):
    """``results/umass_lexicons/umass_lexicons.md``: the lexicon base and the family over it on dev, beside the runs
    without."""
    main = json.loads((B.RESULTS / "umass_table1.json").read_text())
    earlier = _earlier(main, json.loads(LEARNERS.read_text()),
                       json.loads((results_dir("umass_errors") / "umass_errors.json").read_text())["dev"])
    cols = {"without lexicons (earlier runs, older code)": earlier}
    if CONTROL_PATH.exists() and "family_best_dev" in json.loads(CONTROL_PATH.read_text()):
        cols["without lexicons (control, this code)"] = json.loads(CONTROL_PATH.read_text())
    cols["with lexicons"] = dev
    cells = {k: _rows(d) for k, d in cols.items()}
    L = ["# UMass Table 1 with name lexicons in the base CRF (dev; `bench_umass_lexicons.py`)", "",
         "Features: `_lib/citation_features.py` plus the US Census 1990 first- and last-name lists (public domain, read "
         "from the PyPI package `names`, MIT; `_lib/name_lexicons.py`): in the first / last / both lists, frequency-rank "
         "bins, the same with the token's case, for the token and those at +-1 / +-2, and the pair (token, next). "
         f"{dev['n_features']} feature columns (without: {main['n_features']}). Same protocol as the main run: "
         f"c2 from {list(B.C2_GRID)} on dev, {B.MAX_ITER} L-BFGS iterations, the family grid on dev, psi on 3-fold "
         "cross-fitted training marginals. Testing was not used for any row here. The earlier column assembles the "
         "main run (base, family), `bench_umass_learners.py` (ceilings, over their own refit base) and "
         "`bench_umass_errors.py` (its own refit at c2 0.1); the control reruns the lexicon run's steps without "
         "lexicons with the same code.", "",
         "| dev segment F1 | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    L += [f"| {name} | " + " | ".join(c[i] for c in cells.values()) + " |" for i, name in enumerate(ROW_NAMES)]
    L += [f"| base CRF, {f} F1 | " + " | ".join(f"{d['fields_dev'][f]:.2f}" if "fields_dev" in d else ""
                                                  for d in cols.values()) + " |" for f in FIELDS]
    L += _converged_rows(cols)
    if all("swallowed" in d for d in list(cols.values())[1:]):
        L += ["", "Name tokens of the author lists read as a non-name field (capped bases) that a list holds: "
              + "; ".join(f"{k}: {d['swallowed']['in_either']} of {d['swallowed']['tokens']} in {d['swallowed']['events']} "
                          "events" for k, d in list(cols.items())[1:])
              + ". Left with lexicons: " + "; ".join(f"`{x}`" for x in dev["swallowed"]["examples"][:10]) + "."]
    L += ["", "Family grid over the lexicon base (dev): " + "; ".join(
        f"min_support {r['min_support']}, step {r['learning_rate']}: {r['dev']:.2f} ({r['n_kept']}/{r['n_candidates']} "
        "kept)" for r in dev["family_dev"]) + ".", ""]
    if "coverage" in dev:
        L += ["Lexicon coverage on dev (gold tokens with >= 2 letters; unseen = not a training word, where a "
              "lexicon adds to the word features):", "", "| gold field | tokens | in first list | in last list | "
              "in either | unseen in training | unseen and in either |", "|---|---:|---:|---:|---:|---:|---:|"]
        for f, c in dev["coverage"].items():
            n = max(c["n"], 1)
            L.append(f"| {f} | {c['n']} | {100 * c['first'] / n:.0f}% | {100 * c['last'] / n:.0f}% | "
                     f"{100 * c['any'] / n:.0f}% | {c['unseen']} | {c['unseen_any']} |")
        L.append("")
    if test is not None:
        t = test["test"]
        L += [f"Testing (once): base {t['base']['f1']:.2f}, learned family {t['learned']['f1']:.2f} "
              f"({t['learned']['f1'] - t['base']['f1']:+.2f}).", ""]
    L += ["Conclusion (dev): the lexicon features do not move the base CRF beyond refit noise (capped: +0.22 over the "
          "control, while capped bases without lexicons at c2 0.1 scored 93.30-93.88 across code versions; run to "
          "L-BFGS's stop: "
          "-0.04), and the learned family's held-out gain over the lexicon base (+0.32) is not larger than without "
          "(+0.19 control, +0.40 main run), far from +1.0; the Census lists cover the US names the word features "
          "already learn, not the international author names left (`Gethin`, `Pnueli`, `Piterman`), and hold 18% of "
          "the title tokens. By the rule set before the run (test only if dev's gain is clearly above +0.40), "
          "testing was not run with lexicons.", ""]
    L += ["Script: `benchmarks/studies/bench_umass_lexicons.py`; numbers: `umass_lexicons_dev.json`."]
    write_text(RESULTS / "umass_lexicons.md", "\n".join(L) + "\n")
    print("\n".join(L))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("steps", nargs="*", help="dev steps: base fields errors ceilings family coverage (default "
                        "all), converged; 'control': the same steps without lexicons (umass_lexicons_control_dev.json)")
    parser.add_argument("--test", action="store_true", help="the pickled lexicon models chosen on dev, scored on "
                        "testing once (umass_lexicons_test.json)")
    parser.add_argument("--cache", default="/tmp/umass_lexicons", help="pickles of the fitted models")
    add_report_only(parser)
    args = parse_args(parser)
    numba.set_num_threads(1)
    start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - start:7.0f}s] {msg}", flush=True)

    if args.test and not args.report_only:
        run_test(json.loads(DEV_PATH.read_text()), log, args.cache)
    elif not args.report_only:
        steps = [s for s in args.steps if s != "control"]
        run_dev(log, args.cache, *([tuple(steps)] if steps else []), control="control" in args.steps)
    report(json.loads(DEV_PATH.read_text()), json.loads(TEST_PATH.read_text()) if TEST_PATH.exists() else None)


if __name__ == "__main__":
    main()
    finish()  # with --report-only --check: exit 1 if a table would change
