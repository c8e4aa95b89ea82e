"""benchmarks/_lib/name_lexicons.py and the lexicon features of benchmarks/_lib/citation_features.py."""

import builtins
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _lib import name_lexicons as nl  # noqa: E402
from _lib.citation_features import citation_features, lexicon_token  # noqa: E402

LEX = {"first": {"david": 5, "norman": 300, "may": 2000}, "last": {"norman": 150, "parker": 9000, "may": 40000,
                                                                   "model": 60000}}


def test_lexicon_token_by_hand():
    assert lexicon_token("David", LEX) == {"fn": True, "ln": False, "lex": "F", "lexcap": "F|X", "fnr": "100",
                                           "lnr": "-"}
    assert lexicon_token("Norman,", LEX) == {"fn": True, "ln": True, "lex": "FL", "lexcap": "FL|X", "fnr": "1k",
                                             "lnr": "1k"}
    assert lexicon_token("parker.", LEX)["lexcap"] == "L|x" and lexicon_token("parker.", LEX)["lnr"] == "10k"
    assert lexicon_token("MAY", LEX)["fnr"] == "all" and lexicon_token("MAY", LEX)["lnr"] == "all"
    none = lexicon_token("PRISM", LEX)
    assert none == {"fn": False, "ln": False, "lex": "-", "lexcap": "-", "fnr": "-", "lnr": "-"}
    assert lexicon_token("D.", {"first": {"d": 1}, "last": {}})["lex"] == "-"  # one letter is never a name


def test_citation_features_neighbours_and_default_unchanged():
    words = ["David", "Parker", ".", "Model"]
    plain = citation_features(words)
    assert not any(k.startswith(("fn", "ln", "lex")) or ":lex" in k for f in plain for k in f)
    feats = citation_features(words, LEX)
    assert feats[1]["-1:lex"] == "F" and feats[0]["1:lexcap"] == "L|X" and feats[0]["2:lex"] == "-"
    assert feats[0]["lex|+1:lex"] == "F|X|L|X" and "lex|+1:lex" not in feats[-1]
    assert "-1:lex" not in feats[0] and "2:lex" not in feats[2]
    assert {k: v for k, v in feats[2].items() if k in plain[2]} == plain[2]  # lexicons only add keys


def test_read_ranks_and_loader(tmp_path):
    assert nl.read_ranks(["JAMES   3.3 3.3 1", "", "JOHN  3.2 6.5 2"]) == {"james": 1, "john": 2}
    (tmp_path / "dist.male.first").write_text("JAMES 3.3 3.3 1\nMARY 0.1 3.4 2\n")
    (tmp_path / "dist.female.first").write_text("MARY 2.6 2.6 1\n")
    (tmp_path / "dist.all.last").write_text("SMITH 1.0 1.0 1\n")
    lex = nl.load_name_lexicons(tmp_path)
    assert lex == {"first": {"james": 1, "mary": 1}, "last": {"smith": 1}}
    (tmp_path / "dist.all.last").unlink()
    with pytest.raises(FileNotFoundError, match="dist.all.last"):
        nl.load_name_lexicons(tmp_path)


def test_missing_package_is_a_clear_error(monkeypatch):
    real_import = builtins.__import__

    def no_names(name, *args, **kw):
        if name == "names":
            raise ImportError("No module named 'names'")
        return real_import(name, *args, **kw)

    monkeypatch.delitem(sys.modules, "names", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_names)
    with pytest.raises(ImportError, match="pip install names"):
        nl.load_name_lexicons()


def test_census_lists_from_the_installed_package():
    pytest.importorskip("names")
    lex = nl.load_name_lexicons()
    assert lex["first"]["james"] == 1 and lex["first"]["mary"] == 1 and lex["last"]["smith"] == 1
    assert 5000 < len(lex["first"]) < 5500 and len(lex["last"]) > 88000
