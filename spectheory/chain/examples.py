"""Named example chains used by the figures, simulations and tests.

- :func:`easy_hard_chain`: acceptance depends on context (easy and hard token groups), the
  case where Leviathan et al.'s i.i.d. formula is furthest from the exact value;
- :func:`holey_chain`: a draft that cannot propose token 0 in half of the states (batch
  decoding's rejections do not vanish as the number of drafts grows).
"""

from __future__ import annotations

import numpy as np

from .._guards import check_int
from .decoding_chain import DecodingChain

__all__ = ["easy_hard_chain", "holey_chain"]


def easy_hard_chain(
    stay: float, easy_accept: float = 0.95, hard_accept: float = 0.3, group_size: int = 4
) -> DecodingChain:
    r"""A chain whose acceptance depends on context: easy and hard token groups.

    Tokens ``0..m-1`` are *easy*, ``m..2m-1`` *hard* (``m = group_size``); token ``2m``
    is a junk token the target never emits. The state is the last token. In a state of
    group ``g`` the target emits a uniform token of the same group with probability
    ``stay`` and of the other group otherwise; the draft is
    ``a_g * target + (1 - a_g) * junk``, so the acceptance is exactly ``a_g``
    (``easy_accept`` or ``hard_accept``). The initial state is uniform over real tokens,
    so by symmetry every position has average acceptance
    ``alpha = (easy_accept + hard_accept) / 2`` whatever ``stay``; ``stay`` only sets how
    long easy and hard stretches last (``stay = 1/2``: i.i.d. groups).

    Examples
    --------
    >>> from spectheory.chain.examples import easy_hard_chain
    >>> chain = easy_hard_chain(0.9)
    >>> round(float(1 - chain.tv_profile(5).mean()), 12)
    0.625
    """
    st_ = float(stay)
    if not 0.0 <= st_ <= 1.0:
        raise ValueError(f"stay: must lie in [0, 1], got {stay!r}")
    for name, a in (("easy_accept", easy_accept), ("hard_accept", hard_accept)):
        if not 0.0 <= float(a) <= 1.0:
            raise ValueError(f"{name}: must lie in [0, 1], got {a!r}")
    m = check_int(group_size, "group_size", 1)
    V = 2 * m + 1
    target = np.zeros((V, V))
    draft = np.zeros((V, V))
    for s in range(V):
        g = 0 if s < m else 1  # the junk state behaves like a hard one (never visited)
        same = slice(0, m) if g == 0 else slice(m, 2 * m)
        other = slice(m, 2 * m) if g == 0 else slice(0, m)
        target[s, same] = st_ / m
        target[s, other] = (1.0 - st_) / m
        a = float(easy_accept) if g == 0 else float(hard_accept)
        draft[s] = a * target[s]
        draft[s, 2 * m] += 1.0 - a
    initial = np.r_[np.full(2 * m, 1.0 / (2 * m)), 0.0]
    return DecodingChain(target, draft, initial)


def holey_chain(seed: int = 7, vocab_size: int = 7, horizon: int = 50) -> DecodingChain:
    """A random non-stationary chain whose draft puts no mass on token 0 in half of the states.

    :meth:`DecodingChain.random` with ``vocab_size`` tokens and ``horizon`` positions, then
    the draft's token-0 mass is removed (rows renormalised) in the even states. The target
    mass outside the draft's support keeps a rejection mass as ``M -> infinity`` (the
    batch example of ``simulations/batch_rejections.py`` and ``figures/fig2_batch.py``).

    Examples
    --------
    >>> from spectheory.chain.examples import holey_chain
    >>> chain = holey_chain(vocab_size=3, horizon=4)
    >>> float(chain.draft[:, ::2, 0].max()), chain.vocab_size
    (0.0, 3)
    """
    base = DecodingChain.random(vocab_size, horizon=horizon, rng=seed)
    d = np.array(base.draft)
    d[:, ::2, 0] = 0.0
    d /= d.sum(-1, keepdims=True)
    return DecodingChain(base.target, d, base.initial)
