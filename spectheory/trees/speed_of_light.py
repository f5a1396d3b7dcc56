r"""The speed-of-light bound for draft trees (Pankratov & Alistarh), checked exactly.

Notation: p = target. Pankratov and Alistarh ("Speculative Decoding Speed-of-Light: Optimal
Lower Bounds via Branching Random Walks", arXiv 2512.11718, EACL 2026) bound the expected
number ``X`` of tokens a *deterministic* speculative algorithm predicts per iteration (the draft
tree is fixed before the verification; a drafted token counts when it is the target's token)
when the verifier scores ``P`` tokens per call (its capacity):

.. math:: E[X] \le \frac{(\mu + \mu_{(2)}) \log P}{\mu^2} + O(1),

``mu`` the expected entropy of the verifier's law, ``mu_(2)`` its expected second log-moment.
We read (from the abstract; the paper's body was not available to us): logarithms natural
(nats), ``mu = E_s[-sum_x p(x|s) log p(x|s)]``, ``mu_(2) = E_s[sum_x p(x|s) log^2 p(x|s)]``
over the law of the context ``s``, ``P`` drafted nodes, ``X`` accepted drafts; the assumption
is the branching random walk's: i.i.d. laws across prefixes (a one-state chain here). The
``O(1)`` is not given, so the check is of the leading term's growth in ``log P``.

The exact optimum: a deterministic tree of ``P`` nodes accepts node ``v`` with probability
``w(v) = prod_{u in path(v)} p(x_u | parent)`` (the target's tokens along the path), so
``E[X] = sum_{v in tree} w(v)``, maximised by the ``P`` nodes of largest ``w`` (``w`` decreases
along paths, so they form a tree): a best-first search (:func:`best_tree_accepted`). On a chain
with draft = target this is the top-k tree under ``tree_topk`` (tested against the exact
engine). Renewal argument for its growth: the top-``P`` set is ``{w >= e^{-t}}``; on an i.i.d.
chain the number of such nodes grows like ``e^t`` (``sum_x p(x)^alpha = 1`` at ``alpha = 1``)
and ``E[X]`` is the renewal function of the walk ``-log p(x_1) - log p(x_2) - ...``, so
``E[X] = log P / mu + O(1)``: slope ``1 / mu``, below the bound's ``(mu + mu_(2)) / mu^2``
by the factor ``mu / (mu + mu_(2)) <= 1 / (1 + mu)`` (``mu_(2) >= mu^2``). The bound's slope is
approached only when ``mu`` is small.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int

__all__ = ["entropy_moments", "speed_of_light", "best_tree_accepted"]


def entropy_moments(chain: Any, states: ArrayLike | None = None) -> tuple[float, float]:
    """``(mu, mu_(2))`` in nats: the expected entropy and second log-moment of the target law
    under the state law ``states`` (default: the stationary law of a homogeneous chain).

    Examples
    --------
    >>> import numpy as np, spectheory as st
    >>> from spectheory.trees.speed_of_light import entropy_moments
    >>> mu, mu2 = entropy_moments(st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5]))
    >>> bool(np.isclose(mu, np.log(2)) and np.isclose(mu2, np.log(2) ** 2))
    True
    """
    from .sequoia import stationary_law

    law = stationary_law(chain) if states is None else np.asarray(states, dtype=np.float64)
    p = chain.target if chain.is_homogeneous else chain.target[0]
    logp = np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), 0.0)
    return float(law @ -(p * logp).sum(-1)), float(law @ (p * logp**2).sum(-1))


def speed_of_light(mu: float, mu2: float, capacity: int) -> float:
    """The bound's leading term ``(mu + mu_(2)) log P / mu^2`` (the ``O(1)`` dropped)."""
    P = check_int(capacity, "capacity", 1)
    if not mu > 0:
        raise ValueError(f"mu: the bound needs a positive expected entropy, got {mu!r}")
    return (mu + mu2) * float(np.log(P)) / mu**2


def best_tree_accepted(chain: Any, capacity: int, state: int) -> float:
    """Largest expected accepted drafts of one round from ``state`` over every deterministic tree
    of ``capacity`` nodes: the sum of the ``capacity`` largest path probabilities (best-first).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees.speed_of_light import best_tree_accepted
    >>> chain = st.DecodingChain.iid([0.6, 0.4], [0.6, 0.4])
    >>> round(best_tree_accepted(chain, 3, 0), 12)  # .6, .4 and .36
    1.36
    """
    P = check_int(capacity, "capacity", 1)
    t = chain.target
    nxt = chain.next_state
    heap: list = [(-1.0, 0, int(state), 0)]  # (-w, tie, state, depth); the root is not counted
    total, taken, tie = 0.0, -1, 1
    while heap and taken < P:
        negw, _, s, d = heapq.heappop(heap)
        taken += 1
        if taken:
            total -= negw
        row = t[s] if t.ndim == 2 else t[min(d, t.shape[0] - 1), s]
        for x in np.flatnonzero(row > 0):
            heapq.heappush(heap, (negw * float(row[x]), tie, int(nxt[s, x]), d + 1))
            tie += 1
    return total
