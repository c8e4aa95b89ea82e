"""Input validation, packing of ragged data and joblib helpers shared by all estimators."""

from . import packing
from .packing import (  # re-exported: __all__ takes packing.__all__
    edge_offsets,
    lengths_to_offsets,
    pack_sequences,
    segment_repeat,
    segment_sum,
    subset_sequences,
    transition_pairs,
    unpack_sequences,
)
from .parallel import even_chunks, run_chunks
from .validation import check_sequence_labels, check_sequences

__all__ = ["check_sequences", "check_sequence_labels", *packing.__all__, "run_chunks", "even_chunks"]
