"""Verification rules, one module per family.

- :mod:`.rejection`   general rejection-based verifiers and optimality (Yin et al. 2024, Thms 1-2)
- :mod:`.batch`       batch speculative decoding with M draft sequences (Yin et al. 2024)
- :mod:`.multidraft`  k candidates at one position: recursive rejection, K-SEQ, optimal transport
- :mod:`.block`       block verification (Sun et al.)
- :mod:`.biased`      biased (lossy) acceptance and the rejection/quality Pareto front
- :mod:`.pareto`      sequence-level TV of lossy rules against their rejections
- :mod:`.kseq`, :mod:`.optimal_transport`  K-SEQ (SpecTr) and the optimal multi-draft acceptance
"""
from .rejection import *  # noqa: F401,F403
from .batch import *  # noqa: F401,F403
from .biased import *  # noqa: F401,F403
from .pareto import *  # noqa: F401,F403
from .multidraft import *  # noqa: F401,F403
from .kseq import *  # noqa: F401,F403
from .optimal_transport import *  # noqa: F401,F403
from .block import *  # noqa: F401,F403
