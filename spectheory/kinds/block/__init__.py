"""Block drafters as a round kind: the draft law at depth k comes from the round's start (a
parallel head), optionally conditioned on the previous drafted token (a Markov head).

- :class:`BlockDrafter` (:mod:`.drafter`): the depth laws; the oracle parallel drafter
  (the target's k-step marginals), the cross-entropy head (the draft's), the Markov head;
- :class:`BlockRound` (:mod:`.round`): Monte Carlo (``st.simulate``) and the exact engine
  (``chain.protocol``) through :func:`~.exact.block_drafter_transition`;
- :class:`BlockTreeRound` (:mod:`.head_tree`): draft trees grown from a parallel head's
  per-depth laws (DDTree-style, :func:`head_tree`), exact per-node engine and Monte Carlo.

The theory built on them (long-run tokens per call, per-depth conditional acceptance, the
acceptance-maximising head) is in :mod:`spectheory.objectives.block_drafts`.
"""

from .drafter import BlockDrafter
from .exact import block_drafter_transition
from .head_tree import BlockTreeRound, head_tree
from .round import BlockRound

__all__ = ["BlockDrafter", "BlockRound", "BlockTreeRound", "block_drafter_transition", "head_tree"]
