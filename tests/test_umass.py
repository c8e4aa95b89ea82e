"""load_umass_citations: the UMass citation set with hierarchical labels (real file and small written ones)."""

import gzip

import numpy as np
import pytest

from sklearn_struct.datasets import load_umass_citations, parse_umass_line
from sklearn_struct.metrics import chunk_precision_recall_f1

LINE = ("<ref-marker> [30] </ref-marker> <authors> <person> <person-first> E. </person-first> "
        "<person-last> Montroll , </person-last> </person> and <person> <person-first> B. </person-first> "
        "<person-last> West </person-last> </person> </authors> <title> On processes </title> "
        "<venue> <journal> Phys . </journal> <date> <year> 1979 </year> </date> </venue>\n")


def _write(tmp_path, subset, lines, gz=True):
    folder = tmp_path / "citations" / "umass"
    folder.mkdir(parents=True, exist_ok=True)
    name = {"train": "training", "dev": "dev", "test": "testing"}[subset]
    if gz:
        with gzip.open(folder / f"{name}.docs.gz", "wt", encoding="utf-8") as f:
            f.write("".join(lines))
    else:
        (folder / f"{name}.docs").write_text("".join(lines), encoding="utf-8")
    return tmp_path


def test_parse_paths_by_hand():
    words, paths = parse_umass_line(LINE)
    assert words[:7] == ["[30]", "E.", "Montroll", ",", "and", "B.", "West"]
    assert paths[0] == ("ref-marker",)
    assert paths[2] == paths[3] == ("authors", "person", "person-last")
    assert paths[4] == ("authors",)  # "and" belongs to the enclosing tag
    assert paths[-1] == ("venue", "date", "year")


def test_labels_leaf_depth_and_schemes(tmp_path):
    home = _write(tmp_path, "train", [LINE, "\n", LINE])
    leaf = load_umass_citations("train", data_home=home)
    assert len(leaf.words) == 2 and leaf.repaired_lines == []
    assert leaf.labels[0][:8] == ["B-ref-marker", "B-person-first", "B-person-last", "I-person-last", "B-authors",
                                  "B-person-first", "B-person-last", "B-title"]
    d2 = load_umass_citations("train", depth=2, data_home=home)
    # two adjacent <person> elements stay two segments in BIO
    assert d2.labels[0][1:7] == ["B-person", "I-person", "I-person", "B-authors", "B-person", "I-person"]
    io = load_umass_citations("train", depth=1, scheme="IO", data_home=home)
    assert io.labels[0][:5] == ["ref-marker", "authors", "authors", "authors", "authors"]
    assert io.fields == ["authors", "ref-marker", "title", "venue"]
    # BIO at depth 2 scores two persons, IO merges them
    assert chunk_precision_recall_f1(d2.labels, d2.labels, scheme="IOB2")[2] == 1.0


def test_outside_tokens_are_O(tmp_path):
    home = _write(tmp_path, "dev", ["free <title> A B </title> text\n"], gz=False)
    data = load_umass_citations("dev", data_home=home)
    assert data.labels == [["O", "B-title", "I-title", "O"]]
    assert data.paths[0][0] == ()


def test_glued_tags_and_typo_close(tmp_path):
    words, paths = parse_umass_line("<a> x </a><b> y </<b>")
    assert words == ["x", "y"] and paths == [("a",), ("b",)]
    assert parse_umass_line("<t> 2 < 3 </t>")[0] == ["2", "<", "3"]


@pytest.mark.parametrize("line, message", [
    ("<a> x </b>\n", "closing tag </b> does not match <a>"),
    ("<a> <b> x </a> </b>\n", "closing tag </a> does not match <b>"),
    ("<a> x\n", "tag <a> is not closed"),
])
def test_malformed_line_names_file_and_line(tmp_path, line, message):
    home = _write(tmp_path, "test", [LINE, line])
    with pytest.raises(ValueError, match=rf"testing\.docs\.gz, line 2: {message}"):
        load_umass_citations("test", errors="raise", data_home=home)
    data = load_umass_citations("test", data_home=home)  # repaired by default
    assert data.repaired_lines == [2] and data.words[1][0] == "x"


def test_repair_rules():
    words, paths = parse_umass_line("<y> ( 2007 </v> ) </y> <a> <b> z </a> w </b>", errors="repair")
    assert paths[:3] == [("y",), ("y",), ("y",)]  # a stray close is dropped
    assert paths[3] == ("a", "b") and paths[4] == ("b",)  # crossing close: </a> ends a, b stays open


@pytest.mark.parametrize("kwargs, message", [
    (dict(subset="validation"), "subset must be one of"),
    (dict(depth=0), "depth must be None or an integer >= 1"),
    (dict(depth=1.5), "depth must be"),
    (dict(scheme="BIOES"), "scheme must be 'BIO' or 'IO'"),
    (dict(errors="ignore"), "errors must be"),
])
def test_bad_parameters(tmp_path, kwargs, message):
    home = _write(tmp_path, "train", [LINE])
    with pytest.raises(ValueError, match=message):
        load_umass_citations(**{"subset": "train", **kwargs}, data_home=home)


def test_empty_file_and_tagless_line(tmp_path):
    with pytest.raises(ValueError, match="holds no references"):
        load_umass_citations("train", data_home=_write(tmp_path, "train", ["\n", "  \n"]))
    with pytest.raises(ValueError, match=r"line 1: the line holds no tokens"):
        load_umass_citations("dev", data_home=_write(tmp_path, "dev", ["<a> </a>\n"]))


def test_non_utf8_and_truncated_gzip(tmp_path):
    folder = tmp_path / "citations" / "umass"
    folder.mkdir(parents=True)
    (folder / "dev.docs").write_bytes(b"<a> caf\xe9 </a>\n")
    with pytest.raises(ValueError, match="dev.docs"):
        load_umass_citations("dev", data_home=tmp_path)
    raw = gzip.compress(LINE.encode() * 50)
    (folder / "testing.docs.gz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        load_umass_citations("test", data_home=tmp_path)


@pytest.mark.parametrize("subset, n_refs, n_tokens", [("train", 1457, 37279), ("dev", 660, 16248),
                                                       ("test", 367, 9237)])
def test_real_counts(data_home, subset, n_refs, n_tokens):
    data = load_umass_citations(subset, data_home=data_home)
    assert len(data.words) == n_refs and sum(map(len, data.words)) == n_tokens
    assert all(len(w) == len(lab) == len(p) for w, lab, p in zip(data.words, data.labels, data.paths))
    assert {"person-first", "person-last", "title", "journal", "year"} <= set(data.fields)
    top = load_umass_citations(subset, depth=1, scheme="IO", data_home=data_home)
    assert set(top.fields) <= {"authors", "date", "editor", "ref-marker", "reference_id", "title", "venue"}
    assert np.mean([lab[0] != "O" for lab in data.labels]) > 0.95
