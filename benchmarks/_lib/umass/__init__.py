"""The UMass citations protocol (``protocol``) and the studies built on it (gate, selector, GROBID ceiling,
name lexicons, the paper's protocol, error analysis), shared by ``papers/bench_umass_table1.py`` and
``studies/bench_umass_errors.py``. Layered, no circle: ``protocol`` <- ``errors``, ``grobid_ceiling``,
``paper_protocol`` <- ``selector`` <- ``gate``; ``lexicons`` uses ``protocol`` and ``errors``."""
