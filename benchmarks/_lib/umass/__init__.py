"""The UMass citations protocol shared by ``papers/bench_umass_table1.py`` and the UMass studies
(``studies/bench_umass_*.py``): ``protocol`` (splits, features, settings chosen on dev, psi over a fitted
base CRF, the oracle ceiling), ``paper_protocol`` (the paper's protocol: psi learned on dev, settings by CV
inside dev), ``grobid`` (the held-back GROBID folds) and ``errors`` (the segment-error analysis). Layered,
no circle: ``protocol`` <- ``paper_protocol``, ``grobid``, ``errors``."""
