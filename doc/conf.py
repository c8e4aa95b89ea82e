"""Sphinx configuration: numpydoc docstrings, the PyData theme, a gallery over ``examples/``.

Build with ``make -C doc html`` (needs the ``doc`` extra: ``pip install -e ".[doc]"``).
Set ``SKLEARN_STRUCT_DOC_EXAMPLES=0`` to render the gallery without running the examples.

Examples that read real data say so in their description (they name ``SKLEARN_STRUCT_DATA``).
Without the data (the variable unset or not a folder) the build runs only the other examples
and renders these as code without output, says so in its log, and still succeeds.
"""

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sklearn_struct  # noqa: E402

project = "sklearn_struct"
author = "the sklearn_struct developers"
copyright = "2026, the sklearn_struct developers"
release = sklearn_struct.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "generated/*.examples"]

autosummary_generate = True
numpydoc_show_class_members = True
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()
myst_heading_anchors = 3
suppress_warnings = ["myst.header", "config.cache"]

html_theme = "pydata_sphinx_theme"
html_title = "sklearn_struct"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
html_static_path = ["_static"]
html_css_files = ["wrap.css"]

_run_examples = os.environ.get("SKLEARN_STRUCT_DOC_EXAMPLES", "1") != "0"


def examples_needing_data(examples_dir=ROOT / "examples"):
    """The gallery scripts that read real data: those whose text names ``SKLEARN_STRUCT_DATA``."""
    return sorted(p.name for p in Path(examples_dir).glob("plot_*.py") if "SKLEARN_STRUCT_DATA" in p.read_text())


def have_data():
    """Whether ``SKLEARN_STRUCT_DATA`` points at a folder (the real data sets)."""
    home = os.environ.get("SKLEARN_STRUCT_DATA")
    return bool(home) and Path(home).is_dir()


def runnable_pattern(skipped):
    """sphinx-gallery's ``filename_pattern``: every ``plot_*.py`` except ``skipped``."""
    if not skipped:
        return r"/plot_"
    return r"/(?!" + "|".join(re.escape(name) + "$" for name in skipped) + r")plot_[^/]*$"


SKIPPED_EXAMPLES = [] if have_data() else examples_needing_data()
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": runnable_pattern(SKIPPED_EXAMPLES),
    "plot_gallery": _run_examples,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
}


def _write_benchmark_results(app):
    """doc/benchmark_results.md: every table (and plot) in benchmarks/results/<benchmark>/, so the page is always current."""
    results = ROOT / "benchmarks" / "results"
    lines = ["# Benchmark results", "",
             "Assembled by the documentation build from `benchmarks/results/`; each section is one script's output.", ""]
    for table in sorted(results.glob("*/*.md"), key=lambda path: path.name):  # results/<benchmark>/<table>.md
        where = f"../benchmarks/results/{table.parent.name}/"
        lines += ["```{include} " + where + table.name, ":heading-offset: 1", "```", ""]
        for ext in (".png",):
            if table.with_suffix(ext).exists():
                lines += [f"![{table.stem}]({where}{table.stem}{ext})", ""]
    (Path(app.srcdir) / "benchmark_results.md").write_text("\n".join(lines))


def _say_which_examples_are_skipped(app):
    """One line on stderr (shown even by ``sphinx -q``, and not a warning, which ``-W`` would fail on)."""
    if SKIPPED_EXAMPLES and _run_examples:
        print(f"note: SKLEARN_STRUCT_DATA is not set (or not a folder): the gallery shows {len(SKIPPED_EXAMPLES)} "
              f"examples that need the real data without running them: {', '.join(SKIPPED_EXAMPLES)}",
              file=sys.stderr)


def _skip_sklearn_plumbing(app, what, name, obj, skip, options):
    """Leave out scikit-learn's metadata-routing and output plumbing (``set_*_request``,
    ``get_metadata_routing``, ``set_output``): generated per method signature, documented by
    scikit-learn, and their docstrings point into scikit-learn's own documentation."""
    if name in ("get_metadata_routing", "set_output") or (name.startswith("set_") and name.endswith("_request")):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_sklearn_plumbing)
    app.connect("builder-inited", _write_benchmark_results)
    app.connect("builder-inited", _say_which_examples_are_skipped)
