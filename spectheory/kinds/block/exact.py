r"""The exact engine of block rounds: the round-start transition that
:func:`spectheory.exact.round_recursion` reads.

With :math:`g_i(\sigma, y)` the probability that the first i drafts are accepted, the state is
:math:`\sigma` and the last accepted token is y, the accepted mass at depth i is
:math:`M_i(\sigma, y, x) = \min(p(x \mid \sigma), Q_i(x \mid s, y))` and the round ends with a
correction from :math:`(p - M_i)` (the module docstring of
:mod:`spectheory.kinds.block.round`). Cost: :math:`O(k S^2 V^2)` per start for a Markov head,
:math:`O(k S^2 V)` for a parallel one.

Examples
--------
>>> import spectheory as st
>>> from spectheory.kinds.block import BlockDrafter
>>> from spectheory.kinds.block.exact import block_drafter_transition
>>> chain = st.DecodingChain.random(3, concentration=0.5, rng=1)
>>> Q = block_drafter_transition(chain, BlockDrafter.marginals(chain, 2))(0, 2, True)
>>> Q.shape, bool(abs(Q.sum((1, 2)) - 1).max() < 1e-12)
((3, 3, 3), True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .drafter import BlockDrafter

__all__ = ["block_drafter_transition"]


def _check_chain(chain: Any, drafter: BlockDrafter) -> None:
    if not chain.is_homogeneous or getattr(chain, "is_stochastic", False):
        raise ValueError(
            "chain: a block round's exact engine needs a homogeneous chain with deterministic transitions"
        )
    drafter.require_chain(chain)


def block_drafter_transition(chain: Any, drafter: BlockDrafter) -> Any:
    """``(n0, k, emit_bonus) -> Q [S, k + 1, S]`` of a block round (module docstring)."""
    _check_chain(chain, drafter)
    p = np.asarray(chain.target, dtype=np.float64)
    nxt = np.asarray(chain.next_state)
    S, V = p.shape

    def transition(n0: int, k: int, emit_bonus: bool) -> np.ndarray:
        if k > drafter.depth:
            raise ValueError(f"gamma: the drafter has {drafter.depth} depths, the round drafts {k}")
        Q = np.zeros((S, k + 1, S))
        for s in range(S):
            g = np.zeros((S, V))  # g[sigma, y]: first i accepted, state sigma, last accepted y
            for i in range(k):
                if i == 0:
                    acc = np.zeros((S, V))
                    acc[s] = np.minimum(p[s], drafter.first[s])
                    rej = np.zeros((S, V))
                    rej[s] = p[s] - acc[s]
                else:
                    law = drafter.then[s, i - 1]  # [V, V] (Markov) or [V]
                    laws = law if drafter.markov else np.broadcast_to(law, (V, V))
                    m = np.minimum(p[:, None, :], laws[None, :, :])  # [sigma, y, x]
                    acc = np.einsum("sy,syx->sx", g, m)
                    rej = g.sum(1)[:, None] * p - acc
                np.add.at(Q[s, i], nxt.ravel(), np.maximum(rej, 0.0).ravel())
                g = np.zeros((S, V))
                np.add.at(g, (nxt, np.broadcast_to(np.arange(V), (S, V))), acc)
            mass = g.sum(1)
            if emit_bonus:
                np.add.at(Q[s, k], nxt.ravel(), (mass[:, None] * p).ravel())
            else:
                Q[s, k] += mass
        return Q

    return transition
