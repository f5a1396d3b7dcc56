"""Verification rules: the :class:`Verifier` protocol and registry (:mod:`.base`), and one module
per rule family.

- :mod:`.base`        the Verifier protocol, :func:`get_verifier`, :func:`register_verifier`
- :mod:`.token`       standard token verification (``"token"``)

- :mod:`.rejection`   general rejection-based verifiers and optimality (Yin et al. 2024, Thms 1-2)
- :mod:`.batch_step`, :mod:`.batch_chain`, :mod:`.batch_closed_form`  batch speculative decoding
  with M draft sequences (first-token construction, consistent with Yin et al. 2024, Theorem 3)
- :mod:`.multidraft`  k candidates at one position: recursive rejection (with/without replacement)
- :mod:`.kseq`        K-SEQ (SpecTr)
- :mod:`.optimal_transport`  optimal multi-draft acceptance, its LP, an optimal verifier
- :mod:`.block`       block verification (Sun et al.; ``"block"``)
- :mod:`.biased`      biased (lossy) acceptance and the rejection/quality Pareto front
- :mod:`.pareto`      sequence-level TV of lossy rules against their rejections
"""

from .base import Verifier, check_round_arrays, get_verifier, list_verifiers, register_verifier
from .batch_chain import *  # noqa: F401,F403
from .batch_closed_form import *  # noqa: F401,F403
from .batch_step import *  # noqa: F401,F403
from .biased import *  # noqa: F401,F403
from .block import *  # noqa: F401,F403
from .kseq import *  # noqa: F401,F403
from .multidraft import *  # noqa: F401,F403
from .optimal_transport import *  # noqa: F401,F403
from .pareto import *  # noqa: F401,F403
from .rejection import *  # noqa: F401,F403
from .sequence_front import SequenceFront, optimal_rule_chain, optimal_sequence_front, optimal_sequence_rule  # noqa: F401
from .token import TOKEN, TokenVerifier
