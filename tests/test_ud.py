"""CoNLL-U loader on the real UD treebanks and on small hand-written files."""

import gzip

import numpy as np
import pytest

from sklearn_struct.datasets import load_conllu, load_ud

SAMPLE = """# sent_id = a
# text = Im Haus.
1-2\tIm\t_\t_\t_\t_\t_\t_\t_\t_
1\tIn\tin\tADP\tAPPR\t_\t3\tcase\t_\t_
2\tdem\tder\tDET\tART\t_\t3\tdet\t_\t_
3\tHaus\tHaus\tNOUN\tNN\t_\t0\troot\t_\t_
3.1\tist\tsein\tAUX\t_\t_\t_\t_\t3:cop\t_
4\t.\t.\tPUNCT\t$.\t_\t3\tpunct\t_\t_

1\tJa\tja\tINTJ\tITJ\t_\t0\troot\t_\t_
"""


@pytest.mark.parametrize("language, subset, n_sent, n_words", [
    ("english", "dev", 2001, 25147), ("english", "test", 2077, 25094),
    ("dutch", "dev", 718, 11541), ("dutch", "test", 596, 11046),
    ("italian", "dev", 564, 11907), ("italian", "test", 482, 10417),
])
def test_real_treebank_counts(data_home, language, subset, n_sent, n_words):
    data = load_ud(language, subset, data_home=data_home)
    assert len(data.sentences) == len(data.heads) == n_sent
    assert sum(len(s) for s in data.sentences) == n_words
    for words, heads in zip(data.sentences, data.heads):
        assert len(words) == len(heads) and np.count_nonzero(heads == 0) == 1
        assert heads.min() >= 0 and heads.max() <= len(words)


def test_multiword_tokens_and_empty_nodes_are_skipped(tmp_path):
    path = tmp_path / "s.conllu.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(SAMPLE)
    data = load_conllu(path)
    assert [w["form"] for w in data.sentences[0]] == ["In", "dem", "Haus", "."]
    assert data.heads[0].tolist() == [3, 3, 0, 3] and data.heads[1].tolist() == [0]
    assert data.deprels[0] == ["case", "det", "root", "punct"]
    assert data.sent_ids == ["a", None]
    assert data.sentences[0][2]["upos"] == "NOUN"


@pytest.mark.parametrize("text, match", [
    ("1\ta\ta\tX\tX\t_\t0\troot\t_\n", "10"),
    ("2\ta\ta\tX\tX\t_\t0\troot\t_\t_\n", "word ID"),
    ("1\ta\ta\tX\tX\t_\tx\troot\t_\t_\n", "HEAD"),
    ("1\ta\ta\tX\tX\t_\t5\troot\t_\t_\n", "outside"),
    ("# only a comment\n", "no sentences"),
])
def test_bad_files_name_the_line(tmp_path, text, match):
    path = tmp_path / "bad.conllu"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        load_conllu(path)
    with pytest.raises(ValueError, match="language"):
        load_ud("klingon")


def test_make_dependency_treebank_gives_projective_single_root_trees():
    from sklearn_struct.datasets import make_dependency_treebank
    from sklearn_struct.parsing import is_projective

    X, y = make_dependency_treebank(50, random_state=0)
    X2, y2 = make_dependency_treebank(50, random_state=0)
    assert all((a == b).all() for a, b in zip(y, y2))
    for sent, heads in zip(X, y):
        assert len(sent) == len(heads) and np.count_nonzero(heads == 0) == 1
        assert is_projective(heads) and heads.max() <= len(sent)
        for m, h in enumerate(heads, start=1):  # every word reaches the root
            seen = set()
            while h != 0:
                assert h not in seen
                seen.add(h)
                h = heads[h - 1]
