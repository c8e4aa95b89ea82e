"""Loaders for the real data formats and seeded generators of structured data.

Loaders (``load_*``) read files under the data home (``data_home=``, else
``$SKLEARN_STRUCT_DATA``, else ``~/sklearn_struct_data``); ``fetch_*`` do the same but first
download a missing file from the data set's public address.
"""

from ._base import find_data_file, get_data_home
from ._chain import make_chain_data
from ._ising import make_ising_grid
from .citations import load_grobid_citations
from .cmu import fetch_cmu_house_hotel, load_cmu_house_hotel, read_landmark_file
from .conll import fetch_conll2000, fetch_crfpp, load_conll, load_conll2000, load_crfpp
from .generators import make_matchings, make_multilabel_pairwise
from .multilabel import (
    fetch_scene,
    fetch_yeast,
    load_arff_multilabel,
    load_libsvm_multilabel,
    load_scene,
    load_yeast,
)
from .ocr import fetch_ocr_letters, load_ocr_letters, read_letter_data
from .ud import load_conllu, load_ud, make_dependency_treebank
from .umass import load_umass_citations, parse_umass_line

__all__ = [
    "get_data_home",
    "find_data_file",
    # sequences
    "load_conll",
    "load_conll2000",
    "fetch_conll2000",
    "load_crfpp",
    "fetch_crfpp",
    "load_ocr_letters",
    "fetch_ocr_letters",
    "read_letter_data",
    "load_grobid_citations",
    "load_umass_citations",
    "parse_umass_line",
    # dependency trees
    "load_conllu",
    "load_ud",
    # multi-label
    "load_arff_multilabel",
    "load_libsvm_multilabel",
    "load_yeast",
    "fetch_yeast",
    "load_scene",
    "fetch_scene",
    # matchings
    "load_cmu_house_hotel",
    "fetch_cmu_house_hotel",
    "read_landmark_file",
    # generators
    "make_chain_data",
    "make_ising_grid",
    "make_multilabel_pairwise",
    "make_matchings",
    "make_dependency_treebank",
]
