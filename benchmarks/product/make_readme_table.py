"""Write the results tables from the benchmark outputs in ``benchmarks/results/<benchmark>/``: every row into
``doc/benchmarks.md``, the headline rows (one per paper and per peer comparison) into the README.

Every row is read from what a benchmark script wrote (its JSON or CSV; the Markdown table where
that is all it writes) and the paper's numbers from the ``PAPER`` constant of that script (read
as a literal, the script is not imported). Nothing is typed in by hand, so the table cannot
drift from the results; ``tests/test_readme_table.py`` checks that README.md and doc/benchmarks.md
hold what this script generates. A result file that is missing leaves its rows out.

    python benchmarks/product/make_readme_table.py          # rewrite both sections
    python benchmarks/product/make_readme_table.py --check  # exit 1 if either is out of date
"""

import argparse
import ast
import csv
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from statistics import mean

BENCHMARKS = Path(__file__).resolve().parents[1]
RESULTS = BENCHMARKS / "results"
README = BENCHMARKS.parent / "README.md"
DOC = BENCHMARKS.parent / "doc" / "benchmarks.md"
# the README's rows: (text in the benchmark column, text in the measure column), first match each
HEADLINE = [
    ("CoNLL-2000 chunking", "chunk F1"),
    ("sklearn-crfsuite's tutorial", "fit CPU s"),
    ("OCR Table 4, L^w_psi (`", "char. accuracy"),
    ("UMass citations Table 1, CRF + learned", "segment F1"),
    ("CGM Table 5, s = 10,000", "seconds"),
    ("dependency parsing, English", "speed-up"),
    ("pruned BP, 64x64 Ising, alpha = 5, best", "speed-up"),
    ("loopy BP", "ms"),
    ("DLPW Figure 1, yeast", "seconds"),
    ("DLPW at defaults, scene", "subset accuracy"),
    ("MLE-Struct, CMU house", "Hamming"),
    ("GP-struct Table 1, gp-var-b, chunking", "error"),
    ("dask cluster, CoNLL-2000 x16", "bytes per evaluation"),
    ("fit memory, ChainCRF", "bytes per token"),
    ("cold start, first-ever quick tour", "CPU s"),
]
START, END = "<!-- results:start -->", "<!-- results:end -->"


@dataclass
class Row:
    """One line of the table: ``ours``, ``paper`` and ``peer`` are numbers (or text, or None)."""

    benchmark: str
    measure: str
    ours: object
    paper: object = None
    peer: object = None
    peer_name: str = ""
    fmt: str = ""  # a format spec; empty: about 3 significant digits, thousands separated


# ----------------------------------------------------------------------------- readers
def _literal(script, name):
    """The value of the top-level assignment ``name = <literal>`` (or ``a, name = x, y``) in ``benchmarks/*/<script>``."""
    tree = ast.parse(next(BENCHMARKS.glob(f"*/{script}")).read_text())
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if getattr(target, "id", None) == name:
                return ast.literal_eval(node.value)
            names = [getattr(t, "id", None) for t in getattr(target, "elts", [])]
            if name in names and isinstance(node.value, ast.Tuple):
                return ast.literal_eval(node.value.elts[names.index(name)])
    raise KeyError(f"{script} has no literal {name}")


def _json(name):
    return json.loads((RESULTS / name).read_text())


def _csv(name):
    with open(RESULTS / name, newline="") as fh:
        return list(csv.DictReader(fh))


def _md_tables(name):
    """Every pipe table of a Markdown file: ``(heading above it, rows as dicts keyed by the header cells)``."""
    tables, block, heading = [], [], ""
    for line in (RESULTS / name).read_text().splitlines() + [""]:
        if line.startswith("|"):
            block.append([cell.strip() for cell in line.strip().strip("|").split("|")])
            continue
        if len(block) > 2:
            tables.append((heading, [dict(zip(block[0], cells)) for cells in block[2:]]))
        block = []
        heading = line.lstrip("#").strip() if line.startswith("#") else heading
    return tables


def _md_table(name, *columns, heading=""):
    """The first table of ``name`` with all ``columns`` under a heading that contains ``heading``."""
    for title, table in _md_tables(name):
        if heading in title and all(c in table[0] for c in columns):
            return table
    raise KeyError(f"{name}: no table with columns {columns} under a heading with {heading!r}")


def _md_row(table, key, text):
    """The first row whose ``key`` cell contains ``text``."""
    return next(row for row in table if text in row[key])


def _number(cell):
    """The first number in a cell ("5.70 [6.8]" -> 5.7, "36,423 s" -> 36423.0)."""
    match = re.search(r"[-+]?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?", cell)
    if match is None:
        raise ValueError(f"no number in {cell!r}")
    return float(match.group().replace(",", ""))


# ----------------------------------------------------------------------------- the rows
def _conll():
    table = _md_table("conll_crfsuite/conll_crfsuite.md", "model", "chunk F1", "fit s")
    ours, peer = _md_row(table, "model", "1 numba thread"), _md_row(table, "model", "sklearn-crfsuite")
    name = "CoNLL-2000 chunking, `ChainCRF` (`conll_crfsuite`)"
    return [Row(name, "chunk F1 ↑", _number(ours["chunk F1"]), None, _number(peer["chunk F1"]), "sklearn-crfsuite",
                ".2f"),
            Row(name, "fit s, one thread each ↓", _number(ours["fit s"]), None, _number(peer["fit s"]),
                "sklearn-crfsuite", ".1f")]


def _crfsuite_tutorial():
    """sklearn-crfsuite's tutorial through ``sklearn_struct.crfsuite``: F1, fit and search time."""
    res = _json("crfsuite_tutorial/crfsuite_tutorial.json")
    ours, peer = "sklearn_struct.crfsuite", "sklearn-crfsuite 0.5"
    fit, search = res["tutorial"], res["search"]
    name = "sklearn-crfsuite's tutorial on CoNLL-2000, `sklearn_struct.crfsuite` (`crfsuite_tutorial`)"
    rows = [Row(name, "flat F1 (c1 = c2 = 0.1) ↑", fit[ours]["flat_f1"], None, fit[peer]["flat_f1"], "sklearn-crfsuite",
                ".4f"),
            Row(name, "fit CPU s, one thread each ↓", fit[ours]["fit_s"], None, fit[peer]["fit_s"], "sklearn-crfsuite",
                ".1f")]
    if len(search) == 2:
        rows.append(Row(name, f"RandomizedSearchCV CPU s ({res['n_iter']} candidates x {res['cv']} folds) ↓",
                        search[ours]["search_s"], None, search[peer]["search_s"], "sklearn-crfsuite", ".0f"))
    return rows


def _ocr():
    paper, names = _literal("bench_ocr_table4.py", "PAPER"), _literal("bench_ocr_table4.py", "NAMES")
    accuracy = {}
    for row in _csv("ocr_table4/ocr_table4_heldout.csv"):
        accuracy.setdefault(row["model"], []).append(float(row["accuracy"]))
    return [Row(f"OCR Table 4, {names[m]} (`ocr_table4_heldout`)", "char. accuracy % ↑", mean(acc), paper[m],
                fmt=".2f") for m, acc in accuracy.items()]


def _cgm():
    paper = _literal("bench_cgm_table5.py", "PAPER")  # s = 50,000 in the paper, 50,625 = 225^2 here
    trials = _json("cgm_table5/cgm_table5.json")
    rows = []
    for s in sorted({t["s"] for t in trials}):
        runs = [t for t in trials if t["s"] == s]
        ours_paper = paper.get(s, paper.get(50000 if s == 50625 else s, (None,)))[0]
        rows.append(Row(f"CGM Table 5, s = {s:,}, Bethe-RDA (`cgm_table5`)", "seconds ↓",
                        mean(t["rda_s"] for t in runs), ours_paper, mean(t["ip_s"] for t in runs),
                        "interior point, matched tol."))
    return rows


def _citations():
    paper = _literal("bench_citations.py", "PAPER")
    folds = _json("citations/citations.json")["folds"]
    f1 = {k: 100 * mean(f[k]["f1"] for f in folds) for k in ("base", "constrained", "crfsuite")}
    name = "citations, CRF + soft constraints (`citations`)"
    return [Row(name, "segment F1 ↑", f1["constrained"], paper["constrained"], f1["crfsuite"], "sklearn-crfsuite",
                ".2f"),
            Row(name, "F1 gain over the base CRF ↑", f1["constrained"] - f1["base"],
                paper["constrained"] - paper["base"], fmt="+.2f")]


def _umass():
    paper = _literal("bench_umass_table1.py", "PAPER")
    test = _json("umass_table1/umass_table1.json")["test"]
    name = "UMass citations Table 1, CRF + learned constraints (`umass_table1`)"
    return [Row("UMass citations Table 1, base CRF (`umass_table1`)", "segment F1 ↑", test["base"]["f1"],
                paper["base"], test["crfsuite"]["f1"], "sklearn-crfsuite", ".2f"),
            Row(name, "segment F1 ↑", test["learned"]["f1"], paper["constrained"], test["crfsuite"]["f1"],
                "sklearn-crfsuite", ".2f"),
            Row(name, "F1 gain over the base CRF ↑", test["learned"]["f1"] - test["base"]["f1"],
                paper["constrained"] - paper["base"], fmt="+.2f")] + _umass_paper_protocol(paper)


def _umass_paper_protocol(paper):
    """The paper's protocol (theta and psi by Algorithm 3 on dev), beside the base CRF trained on train + dev."""
    if not (RESULTS / "umass_table1/umass_table1_paper.json").exists():
        return []
    test = _json("umass_table1/umass_table1_paper.json")["test"]
    name = "UMass Table 1, paper's protocol: theta + psi by Algorithm 3 on dev (`umass_table1_paper`)"
    return [Row(name, "segment F1 ↑", test["joint_dev"]["f1"], paper["constrained"], test["base_train_dev"]["f1"],
                "base CRF on train + dev", ".2f"),
            Row(name, "F1 gain over the base CRF (train) ↑", test["joint_dev"]["f1"] - test["base"]["f1"],
                paper["constrained"] - paper["base"], fmt="+.2f")]


def _parsing():
    rows = []
    for language in dict.fromkeys(r["language"] for r in _csv("parsing_table1/parsing_table1.csv")):
        by = {r["method"]: r for r in _csv("parsing_table1/parsing_table1.csv") if r["language"] == language}
        paper = float(by["BP"]["paper_T"]) / float(by["MinJoint"]["paper_T"])
        rows.append(Row(f"dependency parsing, {language.title()}, MinJoint (`parsing_table1`)",
                        "speed-up over full BP ↑", float(by["MinJoint"]["speedup"]), paper, fmt=".2f"))
    return rows


def _dlpw_figure1():
    """Pegasos-LP's time to its own best objective against DLPW's time to that objective."""
    sets = _json("dlpw_figure1/dlpw_figure1.json")
    rows = []
    for name, res in sets.items():
        pegasos = min(res["curves"]["Pegasos-LP"], key=lambda point: point[1])
        ours = next((t for t, obj in res["curves"]["DLPW"] if obj <= pegasos[1]), None)
        factor = re.search(r"(\d+(?:\.\d+)?)x faster than Pegasos", res["paper"])
        rows.append(Row(f"DLPW Figure 1, {name}: to Pegasos-LP's best objective (`dlpw_figure1`)", "seconds ↓",
                        ours, f"1/{factor.group(1)} of Pegasos" if factor else None, pegasos[0], "Pegasos-LP"))
    return rows


_BASELINES = {"CC(LogReg)": "ClassifierChain(LogReg)", "BR(LogReg)": "MultiOutput(LogReg)"}


def _dlpw_accuracy():
    results = _json("dlpw_accuracy/dlpw_accuracy.json")
    rows = []
    for name in ("yeast", "scene"):
        res = results[name]
        for metric, label, better in (("subset", "subset accuracy ↑", max), ("hamming", "Hamming loss ↓", min)):
            value = {m: r[metric][metric] for m, r in res.items()}  # test score under the C tuned for it
            peer = better((m for m in value if m != "DLPW"), key=value.get)
            rows.append(Row(f"DLPW accuracy, {name} (`dlpw_accuracy`)", label, value["DLPW"], None, value[peer],
                            _BASELINES.get(peer, peer), ".4f"))
    return rows


def _dlpw_multilabel():
    """DLPWClassifier at its defaults against the best scikit-learn baseline at its defaults (issue #36)."""
    rows = _json("dlpw_multilabel/dlpw_multilabel.json")["rows"]
    baselines = ("BR (LogReg)", "CC x10 (LogReg)", "LP (LogReg)")
    out = []
    for name in ("yeast", "scene"):
        for metric, label, better in (("subset", "subset accuracy ↑", max), ("hamming", "Hamming loss ↓", min)):
            value = {m: rows[f"{name}|{m}|default"][metric] for m in baselines}
            peer = better(value, key=value.get)
            out.append(Row(f"DLPW at defaults, {name} (`dlpw_multilabel`)", label, rows[f"{name}|DLPW|default"][metric],
                           None, value[peer], peer, ".4f"))
    return out


def _scaleout():
    """Bytes sent to the workers per L-BFGS evaluation after the scatter, in parameter vectors (issue #33)."""
    data = _json("scaleout/scaleout.json")
    rows = [Row(f"ChainCRF on a 2-worker dask cluster, CoNLL-2000 x{size['copies']} (`scaleout`, goal <= 3)",
                "bytes per evaluation / parameter vector ↓", size["ratio_to_theta_max"], None, None, "", ".2f")
            for size in data["sizes"]]
    largest = max(data["sizes"], key=lambda size: size["copies"])
    rows.append(Row(f"ChainCRF on a 2-worker dask cluster, CoNLL-2000 x{largest['copies']} (`scaleout`, goal <= 1, "
                    "shared machine)", "fit wall time, dask / local ↓", largest["wall_dask"] / largest["wall_local"],
                    None, None, "", ".2f"))
    return rows


def _memory_per_token():
    """Peak fit memory per token at the largest corpus, against sklearn-crfsuite's (issue #33)."""
    runs = _json("memory_per_token/memory_per_token.json")["runs"]
    largest = max(r["factor"] for r in runs)
    at = {r["fitter"]: r["bytes_per_token"] for r in runs if r["factor"] == largest}
    return [Row(f"fit memory, {name}, CoNLL-2000 x{largest} (`memory_per_token`, goal <= 1.2x)", "bytes per token ↓",
                at[name], None, at["sklearn-crfsuite"], "sklearn-crfsuite", ",.0f")
            for name in ("ChainCRF", "crfsuite.CRF") if name in at and "sklearn-crfsuite" in at]


def _mle_struct():
    rows = []
    for r in _json("mle_struct_cmu/mle_struct_cmu.json"):
        if r["gap"] == 90:
            rows.append(Row(f"MLE-Struct, CMU {r['sequence']} at gap 90 (`mle_struct_cmu`)", "Hamming error ↓",
                            r["mle_error"], r["paper_mle"], r["ssvm_error"], "our structured SVM"))
    return rows


def _gp_struct():
    res = _json("gp_struct_table1/gp_struct_table1.json")
    order = ["base np", "chunking", "segmentation", "japanese ne"]  # the paper's Table 1 columns
    rows = []
    for method in (m for m in ("gp-var-b", "gp-var-s", "gp-var-p") if m in res["rows"]):  # papers' protocol
        for task, splits in res["rows"][method].items():
            ours = mean(split[0] for split in splits)
            ids = res.get("split_ids", {}).get(method, {}).get(task, range(len(splits)))  # the GP row's splits
            peer = mean(res["rows"]["sklearn-crfsuite"][task][i][0] for i in ids)
            rows.append(Row(f"GP-struct Table 1, {method}, {task} (`gp_struct_table1`)", "error % ↓", ours,
                            res["paper"][method][order.index(task)][0], peer, "sklearn-crfsuite", ".2f"))
    return rows


def _loopy():
    """The largest tree pgmpy finished (on trees both are exact)."""
    trees = _md_table("loopy_vs_pgmpy/loopy_vs_pgmpy.md", "nodes", "ours (ms)", "pgmpy (s)", heading="trees")
    largest = max((r for r in trees if re.fullmatch(r"[\d.]+", r["pgmpy (s)"])), key=lambda r: _number(r["nodes"]))
    return [Row(f"loopy BP, {int(_number(largest['nodes'])):,}-node tree (`loopy_vs_pgmpy`)", "ms ↓",
                _number(largest["ours (ms)"]), None, 1000 * _number(largest["pgmpy (s)"]), "pgmpy")]


def _chain_oracle():
    table = _md_table("chain_oracle/chain_oracle.md", "measure", "value")
    ours = _md_row(table, "measure", "ours: forward-backward")["value"]
    numpy = _md_row(table, "measure", "NumPy")["value"]
    return [Row("forward-backward, CoNLL-2000 size (`chain_oracle`)", "ms ↓", _number(ours), None, _number(numpy),
                "NumPy, batched BLAS")]


def _pruned_bp():
    goal = _literal("bench_pruned_bp_figure1.py", "GOAL_SPEEDUP")
    max_err = _literal("bench_pruned_bp_figure1.py", "GOAL_ERR")
    rows = [r for r in _csv("pruned_bp_figure1/pruned_bp_figure1.csv") if r["alpha"] == "5" and r["inference"] == "bp"]
    half = next(r for r in rows if r["section"] == "figure1" and r["objective"] == "min_joint")
    accurate = max((r for r in rows if float(r["mean_abs_err"]) <= max_err), key=lambda r: float(r["speedup"]))
    name, source = "pruned BP, 64x64 Ising, alpha = 5", "(`pruned_bp_figure1`)"
    return [Row(f"{name}, MinJoint keeping {float(half['kept_fraction']):.0%} {source}", "speed-up over full BP ↑",
                float(half["speedup"]), fmt=".2f"),
            Row(f"{name}, best at mean error <= {max_err:g} (goal {goal:g}x) {source}", "speed-up over full BP ↑",
                float(accurate["speedup"]), fmt=".2f")]


def _cold_start():
    data = _json("cold_start/cold_start.json")
    rows = data["estimators"] if isinstance(data, dict) else data
    slowest = max(rows, key=lambda r: r["cold_fit_predict_cpu_s"])
    out = [Row(f"cold start, slowest first fit + predict: {slowest['estimator']} (`cold_start`, goal < 5 s)",
               "CPU s ↓", slowest["cold_fit_predict_cpu_s"], fmt=".1f")]
    if isinstance(data, dict) and not data["tour"]["error"]:
        out.append(Row("cold start, first-ever quick tour (`cold_start`, goal < 20 s)", "CPU s ↓",
                       data["tour"]["cold_cpu_s"], fmt=".1f"))
    return out


SECTIONS = [_conll, _crfsuite_tutorial, _ocr, _cgm, _citations, _umass, _parsing, _dlpw_figure1, _dlpw_accuracy, _dlpw_multilabel, _mle_struct, _gp_struct,
            _loopy, _chain_oracle, _pruned_bp, _scaleout, _memory_per_token, _cold_start]


# ----------------------------------------------------------------------------- the table
def _cell(value, fmt):
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    if fmt:
        return format(value, fmt)
    if value == 0 or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{max(0, 2 - math.floor(math.log10(abs(value))))}f}"  # 3 significant digits


def _ratio(ours, other):
    """``ours / other``; below 0.1 as ``1/N`` (N times smaller)."""
    if not all(isinstance(v, (int, float)) for v in (ours, other)) or ours == 0 or other == 0:
        return "–"
    ratio = ours / other
    if 0 < ratio < 0.1:
        return f"1/{other / ours:,.0f}" if other / ours >= 100 else f"1/{other / ours:.1f}"
    return f"{ratio:.2f}"


def rows():
    """All rows whose result files exist."""
    out = []
    for section in SECTIONS:
        try:
            out.extend(section())
        except FileNotFoundError:
            continue
    return out


def headline_rows():
    """The README's rows: the first row matching each entry of ``HEADLINE`` (entries whose result is missing drop out)."""
    every = rows()
    out = []
    for benchmark, measure in HEADLINE:
        match = next((r for r in every if benchmark in r.benchmark and measure in r.measure), None)
        if match is not None:
            out.append(match)
    return out


def render(headline=True):
    """The section between the markers (markers included): the README's headline rows, or every row."""
    lines = [
        START,
        "<!-- generated by benchmarks/product/make_readme_table.py from benchmarks/results/: do not edit by hand -->",
        "",
        "| benchmark (result file) | measure | ours | paper | peer | ours / paper | ours / peer |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in (headline_rows() if headline else rows()):
        peer = _cell(row.peer, row.fmt) + (f" ({row.peer_name})" if row.peer is not None and row.peer_name else "")
        lines.append(f"| {row.benchmark} | {row.measure} | {_cell(row.ours, row.fmt)} | {_cell(row.paper, row.fmt)} "
                     f"| {peer} | {_ratio(row.ours, row.paper)} | {_ratio(row.ours, row.peer)} |")
    lines += [
        "",
        "↑: higher is better, ↓: lower is better. Ratios are ours over theirs; `1/N` means N times smaller. "
        "The paper's figures were measured on the authors' data and machines (on other data where the "
        "benchmark's page says so), the peer's in the same run as ours.",
        END,
    ]
    return "\n".join(lines)


def readme_section(text):
    """The part of ``text`` between the markers (markers included)."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"no {START} ... {END} section in the text.")
    return text[start : end + len(END)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md is not up to date")
    args = parser.parse_args(argv)
    stale = []
    for path, headline in ((README, True), (DOC, False)):
        text = path.read_text()
        current, fresh = readme_section(text), render(headline)
        if current == fresh:
            continue
        stale.append(path.name)
        if not args.check:
            path.write_text(text.replace(current, fresh))
    if args.check and stale:
        print(f"{', '.join(stale)}: results table out of date: run python benchmarks/product/make_readme_table.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
