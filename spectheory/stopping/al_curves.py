r"""Acceptance length as a function of the draft length K, exactly (``docs/acceptance_length.md``).

The *acceptance length* AL(K) is what engines and cross-engine benchmarks tabulate: tokens
emitted per target call when every round drafts K tokens (the accepted drafts plus the
resampled or bonus token). On a chain it is exact:

* long run: :math:`AL_\infty(K) = g(\text{tokens}) / g(\text{calls})`, the ratio of gains of the
  round-start Markov chain (:func:`spectheory.stopping.optimal.long_run_rate` at zero draft
  cost);
* finite horizon ``T``: pooled :math:`T / E[C_K]` (``chain.expected_tokens_per_call``) or per
  generation :math:`E[T / C_K]`.

**Theorem** (monotonicity, ``docs/acceptance_length.md``). Under token verification (lossless:
residual resampling, bonus token on or off) with a drafter whose law at each position depends
only on the output prefix (every chain of this package), the number of target calls
:math:`C_K` needed for ``T`` tokens can be coupled so that :math:`C_{K+1} \le C_K` on every
path; so all three curves are non-decreasing in K. They need not be concave: the two-state
chain of :func:`nonconcave_example` gives :math:`AL_\infty = 2, 7/3, 3` at K = 1, 2, 3, while
every one-state (i.i.d.) chain gives the concave :math:`(1 - \alpha^{K+1}) / (1 - \alpha)`.

Examples
--------
>>> from spectheory.stopping.al_curves import acceptance_length_curve, nonconcave_example
>>> acceptance_length_curve(nonconcave_example(), [1, 2, 3]).round(6).tolist()
[2.0, 2.333333, 3.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._guards import check_int
from .optimal import long_run_rate

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["acceptance_length_curve", "nonconcave_example", "is_concave", "iid_acceptance_length"]


def acceptance_length_curve(
    chain: ChainLike,
    ks: Sequence[int],
    horizon: int | None = None,
    *,
    bonus: bool = True,
    per_generation: bool = False,
) -> np.ndarray:
    r"""Exact AL(K) of ``chain`` for each K in ``ks`` (tokens per target call, fixed K).

    Parameters
    ----------
    chain : DecodingChain (token verification; the drafter is the chain's draft kernel)
    ks : draft lengths K >= 1
    horizon : int, optional
        ``None`` (default): the long-run value (the chain must have one closed class of round
        starts; bonus on). Else the finite horizon ``T``: pooled :math:`T / E[C_K]`, or
        :math:`E[T / C_K]` with ``per_generation=True``.
    bonus : bool
        The bonus token after K accepted drafts (finite horizon only; the long run has it).

    Returns
    -------
    ndarray ``[len(ks)]``

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.8, 0.2], [0.6, 0.4])  # alpha = 0.8
    >>> acceptance_length_curve(chain, [1, 2]).round(6).tolist()
    [1.8, 2.44]
    """
    ks = [check_int(k, "K", 1) for k in ks]
    if horizon is None:
        if not bonus:
            raise ValueError("bonus=False: the long-run curve has the bonus token; pass a horizon")
        return np.array([long_run_rate(chain, k, 0.0) for k in ks])
    horizon = check_int(horizon, "horizon", 1)
    tokens_per_call = getattr(chain, "expected_tokens_per_call", None)
    if tokens_per_call is None:
        raise TypeError(
            f"chain: {type(chain).__name__} has no expected_tokens_per_call (a DecodingChain has)"
        )
    return np.array([tokens_per_call(horizon, k, bonus, per_generation=per_generation) for k in ks])


def iid_acceptance_length(alpha: float, ks: Sequence[int]) -> np.ndarray:
    r"""Leviathan et al.'s :math:`(1 - \alpha^{K+1}) / (1 - \alpha)` for each K (concave in K).

    Examples
    --------
    >>> iid_acceptance_length(0.5, [1, 2, 3]).tolist()
    [1.5, 1.75, 1.875]
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha: must lie in [0, 1], got {alpha}")
    k = np.array([check_int(k, "K", 1) for k in ks], dtype=float)
    return k + 1.0 if alpha == 1.0 else (1.0 - alpha ** (k + 1.0)) / (1.0 - alpha)


def nonconcave_example() -> ChainLike:
    r"""The smallest chain whose AL(K) is not concave: two tokens, a deterministic target.

    Target: state 0 emits token 1 and state 1 emits token 0 (the target alternates). Draft:
    exact at state 0, uniform at state 1 (acceptance 1/2 there). With K = 1 every round starts
    at state 0 and emits 2 tokens; with K = 2 a third of the rounds start at state 1, and
    :math:`AL_\infty = 2, 7/3, 3` for K = 1, 2, 3: increments 1/3 then 2/3. A one-state chain
    cannot do this (its curve is :func:`iid_acceptance_length`), so two tokens is the least.

    Examples
    --------
    >>> nonconcave_example().n_states
    2
    """
    from ..chain.decoding_chain import DecodingChain

    return DecodingChain([[0.0, 1.0], [1.0, 0.0]], [[0.0, 1.0], [0.5, 0.5]])


def is_concave(values: Sequence[float], tol: float = 1e-12) -> bool:
    """Whether a curve sampled at consecutive K has non-increasing increments (within ``tol``).

    Examples
    --------
    >>> is_concave([2.0, 7 / 3, 3.0]), is_concave([1.5, 1.75, 1.875])
    (False, True)
    """
    v = np.asarray(values, dtype=float)
    return bool(np.all(np.diff(v, 2) <= tol)) if v.size >= 3 else True
