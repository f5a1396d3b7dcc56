"""Block drafters as a round kind: the draft law at depth k comes from the round's start (a
parallel head), optionally conditioned on the previous drafted token (a Markov head).

- :class:`BlockDrafter` (:mod:`.drafter`): the depth laws; the oracle parallel drafter
  (the target's k-step marginals), the cross-entropy head (the draft's), the Markov head;
- :class:`BlockRound` (:mod:`.round`): Monte Carlo (``st.simulate``) and the exact engine
  (``chain.protocol``) through :func:`~.exact.block_drafter_transition`.

The theory built on them (long-run tokens per call, per-depth conditional acceptance, the
acceptance-maximising head) is in :mod:`spectheory.objectives.block_drafts`.
"""

from .drafter import BlockDrafter
from .exact import block_drafter_transition
from .round import BlockRound

__all__ = ["BlockDrafter", "BlockRound", "block_drafter_transition"]
