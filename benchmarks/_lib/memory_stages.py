"""Probes that split the ``sklearn_struct.crfsuite`` drop-in's fit into stages, for a peak-memory breakdown.

:func:`install` wraps the functions that start and end each stage (they are package internals,
hence here); at each stage's end ``mark(name)`` is called, which reads the process's memory and
resets its high-water mark (see ``benchmarks/product/bench_memory_per_token.py --stages``).
"""

from .internals import chain_crf_fit_module as chain_crf_fit
from .internals import crfsuite_estimator_module as crfsuite_estimator
from .internals import crfsuite_lean_fit_module as lean_fit

STAGES = (
    "featurise: dicts to a CSR matrix and the attribute vocabulary",
    "labels encoded, per-sequence row views",
    "ChainCRF.fit's checks and label encoding (none in the drop-in's own L-BFGS fit)",
    "the objective built (packing, weight pairs, int32 pair codes)",
    "the first evaluation (per-token buffers)",
    "the rest of L-BFGS (its memories)",
    "the model and the training log",
)


def install(mark):
    """Wrap the drop-in's stages so that ``mark(stage)`` runs at the end of each (names in ``STAGES``)."""
    vocabulary = crfsuite_estimator.AttributeVocabulary
    fit_transform, vectorise = vocabulary.fit_transform, crfsuite_estimator.CRF._vectorise
    from_weights = crfsuite_estimator.CRFModel.from_weights

    def probed_fit_transform(self, *args, **kwargs):
        out = fit_transform(self, *args, **kwargs)
        mark(STAGES[0])
        return out

    def probed_vectorise(self, *args, **kwargs):
        out = vectorise(self, *args, **kwargs)
        mark(STAGES[1])
        return out

    class ProbedObjective(chain_crf_fit.ChainObjective):
        def __init__(self, *args, **kwargs):
            mark(STAGES[2])
            super().__init__(*args, **kwargs)
            mark(STAGES[3])
            self._evaluations = 0

        def __call__(self, theta):
            out = super().__call__(theta)
            self._evaluations += 1
            if self._evaluations == 1:
                mark(STAGES[4])
            return out

    def probed_from_weights(*args, **kwargs):
        mark(STAGES[5])
        return from_weights(*args, **kwargs)

    vocabulary.fit_transform = probed_fit_transform
    crfsuite_estimator.CRF._vectorise = probed_vectorise
    chain_crf_fit.ChainObjective = ProbedObjective
    lean_fit.ChainObjective = ProbedObjective
    crfsuite_estimator.CRFModel.from_weights = staticmethod(probed_from_weights)
