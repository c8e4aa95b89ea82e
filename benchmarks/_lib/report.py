"""``--report-only``: every script rewrites its tables and figures from its saved json, no fitting.

The pattern each script follows: a run saves everything its tables and figures need in its results
json (:func:`save_json`), then renders the md (and figures) from that json only; ``--report-only``
skips the run and renders from the saved json, so a change to a report, or a move, is checked by
seeing ``git status`` stay clean. ``--report-only --check`` writes nothing and exits 1 when a table
would change (figures are skipped: their bytes depend on the matplotlib version);
``python benchmarks/_lib/report.py [SCRIPT ...]`` runs that check for every script in one process.

    parser = argparse.ArgumentParser()
    add_report_only(parser)
    args = parse_args(parser)  # arms --check
    if not args.report_only:
        save_json(RESULTS / "x.json", run())
    write_text(RESULTS / "x.md", render(load_json(RESULTS / "x.json")))
    finish()
"""
import argparse
import json
import sys

HELP = "rewrite the tables (and figures) from the saved json, without fitting"
CHECK_HELP = "with --report-only: write nothing, exit 1 if a table would change"

checking = False  # set by parse_args (report_only_args, report_only_requested) when --check is given
stale = []  # tables that --check found different from the rendered text


def add_report_only(parser):
    """Add ``--report-only`` and ``--check`` to ``parser`` (an :class:`argparse.ArgumentParser`)."""
    parser.add_argument("--report-only", action="store_true", help=HELP)
    parser.add_argument("--check", action="store_true", help=CHECK_HELP)
    return parser


def parse_args(parser, argv=None):
    """``parser.parse_args(argv)`` that also arms ``--check`` (use instead of ``parser.parse_args``)."""
    args = parser.parse_args(argv)
    if args.check and not args.report_only:  # --check alone would start a run
        parser.error("--check needs --report-only")
    _arm(args.check)
    return args


def report_only_args(argv=None, description=None):
    """For a script without other flags: parse ``--report-only`` / ``--check`` from ``argv``."""
    parser = add_report_only(argparse.ArgumentParser(description=description))
    return parse_args(parser, argv)


def report_only_requested(argv=None, description=None):
    """For a script driven by positional words: True when ``argv`` (default ``sys.argv[1:]``) asks for the
    tables only, by ``--report-only`` (with or without ``--check``) or by the older first word ``report``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["report"]:
        argv = ["--report-only"] + argv[1:]
    if "--report-only" not in argv and not {"-h", "--help"} & set(argv):  # --help: argparse's, then exit
        return False
    report_only_args([a for a in argv if a.startswith("-")], description)
    return True


def _arm(check):
    global checking
    checking = bool(check)
    stale.clear()


def save_json(path, data, indent=1):
    """Write ``data`` as json (``indent`` spaces, a final newline; numpy values as lists / numbers)."""
    write_text(path, json.dumps(data, indent=indent, default=_plain) + "\n")


def _plain(value):
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not json serialisable")


def load_json(path):
    """The saved json at ``path``."""
    with open(path) as f:
        return json.load(f)


NO_SAVED_RESULTS = 2  # exit status of --report-only when a table predates its json


def load_saved(path):
    """The saved json at ``path`` for ``--report-only``; exit with :data:`NO_SAVED_RESULTS` and a
    message when it is missing (a table written before its script saved a json: rerun the script)."""
    if not path.exists():
        needs_rerun(path, "no saved results (the table predates --report-only)")
    return load_json(path)


def needs_rerun(path, why):
    """Stop ``--report-only``: the saved results at ``path`` cannot give the committed table (``why``)."""
    print(f"{path}: {why}; rerun the script to save what the table needs", file=sys.stderr)
    raise SystemExit(NO_SAVED_RESULTS)


def write_text(path, text):
    """Write ``text`` to ``path``; with ``--check`` compare instead and remember a difference."""
    if checking:
        old = path.read_text() if path.exists() else None
        if old != text:
            stale.append(str(path))
        return
    path.write_text(text)


def save_figure(fig, path, **kwargs):
    """``fig.savefig(path, **kwargs)`` unless checking; the figure is closed either way."""
    import matplotlib.pyplot as plt

    if not checking:
        fig.savefig(path, **kwargs)
    plt.close(fig)


def finish():
    """End of a ``--check`` run: print what would change, exit 1 if anything would."""
    if not checking:
        return
    for path in stale:
        print(f"stale: {path}", file=sys.stderr)
    if stale:
        raise SystemExit(1)
    print("report-only: tables unchanged")


def check_scripts(paths):
    """Run ``--report-only --check`` of each script in this process; ``{path: exit status}``.

    0: every table re-rendered from the saved results equals the committed one; 1: some differ;
    :data:`NO_SAVED_RESULTS`: the committed table predates what the script now saves (rerun it).
    One process for all of them, so the package is imported once.
    """
    import contextlib
    import io
    import runpy

    codes = {}
    argv = sys.argv
    for path in paths:
        sys.argv = [str(path), "--report-only", "--check"]
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                runpy.run_path(str(path), run_name="__main__")
            codes[str(path)] = 0
        except SystemExit as stop:
            codes[str(path)] = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        finally:
            sys.argv = argv
    return codes


if __name__ == "__main__":  # python benchmarks/_lib/report.py [SCRIPT ...]: check every (or these) script
    from pathlib import Path

    _scripts = sys.argv[1:] or sorted(str(p) for p in Path(__file__).resolve().parents[1].glob("*/bench_*.py"))
    _codes = check_scripts(_scripts)
    print(json.dumps(_codes, indent=1))
    raise SystemExit(int(any(c not in (0, NO_SAVED_RESULTS) for c in _codes.values())))
