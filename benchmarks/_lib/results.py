"""Where each benchmark keeps its saved results: ``benchmarks/results/<benchmark>/``."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "results"


def results_dir(benchmark, create=True):
    """The folder of ``benchmark``'s tables, figures and json (``benchmarks/results/<benchmark>``).

    ``benchmark`` is the script's name without ``bench_`` (``"ocr_table4"``); the folder is made
    unless ``create`` is False.
    """
    path = ROOT / benchmark
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path
