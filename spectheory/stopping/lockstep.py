r"""Draft-length policies on a batch of rows in lockstep: the longest row sets the round (``docs/cost.md`` §4).

``B`` rows decode together; each row's policy picks its draft length ``K_i`` at its round start,
the batch drafts ``K_max = max_i K_i`` steps and one target call scores ``B x (K_max + 1)``
tokens, so a batch round lasts :math:`\tau_B(K_{\max}) = K_{\max} c_B + t_B(K_{\max})`. Under the
stated assumption -- rows independent and each at stationarity, so their round-start states are
i.i.d. from the stationary law :math:`\nu` of round starts -- the ``K_i`` are i.i.d. with law
:math:`\pi(k) = \sum_s \nu(s) [k(s) = k]` and

.. math::
    E[\tau_B(K_{\max})] = \sum_k \big(F(k)^B - F(k-1)^B\big)\,\tau_B(k), \qquad
    \text{tokens per row per second} = \frac{E_\nu[e]}{E[\tau_B(K_{\max})]},

``e`` the tokens a round emits. When the round starts are aperiodic this is the exact long-run
rate of the ``B``-row product chain (irreducible and aperiodic on the closed class, so its one
stationary law :math:`\nu^{\otimes B}` is the limit from every start; renewal-reward), an
approximation for a finite generation whose rows start together. When the round-start chain has
period ``d > 1`` the rows move through its ``d`` cyclic classes in step and keep their relative
phases forever: the long-run rate depends on those phases and the formula above is in general no
row's rate (3-token cycle of ``tests/cost/test_lockstep_periodic.py``: 2.4 by the formula, 2.5
for rows in phase, 30/13 out of phase). :func:`lockstep_rate` therefore refuses periodic round
starts with a ``ValueError`` unless the formula is exact there anyway: one row (``B = 1``,
renewal-reward on the row's own chain), or one length on the whole closed class (``K_max`` is
that length in every round). It likewise refuses round starts with several closed classes (the
rate then depends on the start). Policies here choose the length at the round start from the
round-start state (``FixedGamma``, the state-information optimum ``StartStatePolicy`` of a
homogeneous chain, i.e. ``lengths[s]``); ``tests/cost/`` checks the rate against a direct
simulation of ``B`` rows in lockstep.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..chain.classes import closed_classes, require_one_closed_class, stationary_distribution
from ..cost.round_cost import CostModel
from .optimal import _round_start_tables, long_run_optimum

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["LockstepRate", "lockstep_rate", "optimal_policy_by_batch"]


@dataclass(frozen=True)
class LockstepRate:
    """The long-run rate of ``batch`` rows in lockstep under a round-start policy ``lengths[s]``.

    Attributes
    ----------
    batch : int
    lengths : ndarray of int, shape (S,)
        Draft length per round-start state.
    length_law : ndarray, shape (max_length + 1,)
        ``pi(k)``: law of one row's draft length at stationarity (index ``k``).
    expected_max_length : float
        ``E[K_max]`` over the ``batch`` rows.
    tokens_per_round : float
        ``E_nu[e]``: tokens one row emits per round.
    round_time : float
        ``E[tau_B(K_max)]``, seconds of a batch round.
    ragged_round_time : float
        ``E_nu[tau_B(K)]``: the round time if each row paid its own length (a lower bound).
    autoregressive : float
        Seconds per token per row of plain decoding at this batch.
    """

    batch: int
    lengths: np.ndarray
    length_law: np.ndarray
    expected_max_length: float
    tokens_per_round: float
    round_time: float
    ragged_round_time: float
    autoregressive: float

    @property
    def tokens_per_second(self) -> float:
        """Tokens per second of one row: ``tokens_per_round / round_time``."""
        return self.tokens_per_round / self.round_time

    @property
    def throughput(self) -> float:
        """Tokens per second of the batch: ``batch * tokens_per_second``."""
        return self.batch * self.tokens_per_second

    def speedup(self) -> float:
        """Over plain decoding at the same batch: ``autoregressive * tokens_per_second``."""
        return self.autoregressive * self.tokens_per_second

    @property
    def lockstep_penalty(self) -> float:
        """``round_time / ragged_round_time >= 1``: what waiting for the longest row costs."""
        return self.round_time / self.ragged_round_time


def lockstep_rate(
    chain: ChainLike, lengths: int | ArrayLike, model: CostModel, batch: int, *, context: float = 0.0
) -> LockstepRate:
    """The long-run rate of ``batch`` rows in lockstep drafting ``lengths[s]`` from round-start state ``s``.

    Parameters
    ----------
    chain : DecodingChain
        Homogeneous, with one closed class of round starts.
    lengths : int or array_like of int, shape (S,)
        Draft length per round-start state (an int: a fixed gamma).
    model : CostModel
    batch : int >= 1
    context : float

    Raises
    ------
    ValueError
        When the round starts under ``lengths`` have several closed classes, or are periodic
        with lengths that differ on the closed class and ``batch > 1``: no single long-run rate
        exists then (module docstring).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.cost import named_cost
    >>> from spectheory.stopping.lockstep import lockstep_rate
    >>> chain = st.DecodingChain.random(3, n_states=4, concentration=0.6, rng=11)
    >>> model = named_cost("llama2-7b/68m-h200")
    >>> fixed = lockstep_rate(chain, 3, model, 64)
    >>> fixed.expected_max_length, fixed.lockstep_penalty
    (3.0, 1.0)
    >>> mixed = lockstep_rate(chain, [1, 4, 2, 6], model, 64)
    >>> round(mixed.expected_max_length, 3), bool(mixed.lockstep_penalty > 1)
    (4.412, True)
    """
    if not isinstance(model, CostModel):
        raise ValueError(f"model: expected a CostModel (spectheory.cost), got {type(model).__name__}")
    S = chain.n_states
    k = np.broadcast_to(np.asarray(lengths, dtype=np.int64), (S,)).copy()
    if k.min() < 1:
        raise ValueError("lengths: draft lengths must be >= 1")
    cost = model.at(batch, context)
    D = int(k.max())
    trans, tokens, tau = _round_start_tables(chain, cost, D)
    rows = np.arange(S)
    starts = trans[k - 1, rows]
    _require_one_long_run_rate(starts, k, int(batch))
    nu = stationary_distribution(starts)
    law = np.bincount(k, weights=nu, minlength=D + 1)
    F = np.cumsum(law)
    B = int(batch)
    p_max = np.diff(np.concatenate([[0.0], F**B]))  # P(K_max = k), k = 0..D
    times = np.concatenate([[0.0], tau])
    return LockstepRate(
        batch=B,
        lengths=k,
        length_law=law,
        expected_max_length=float(np.arange(D + 1) @ p_max),
        tokens_per_round=float(nu @ tokens[k - 1, rows]),
        round_time=float(p_max @ times),
        ragged_round_time=float(law @ times),
        autoregressive=cost.autoregressive,
    )


def _period(matrix: np.ndarray, states: np.ndarray) -> int:
    """The period of the irreducible chain ``matrix`` restricted to its closed class ``states``.

    Breadth-first levels from the first state; the period is the gcd of ``level[u] + 1 -
    level[v]`` over the class's edges ``u -> v``.
    """
    sub = np.asarray(matrix)[np.ix_(states, states)] > 0
    level = np.full(states.size, -1)
    level[0], frontier, d = 0, [0], 0
    while frontier:
        nxt = []
        for u in frontier:
            for v in np.flatnonzero(sub[u]):
                if level[v] < 0:
                    level[v] = level[u] + 1
                    nxt.append(int(v))
        frontier = nxt
    for u, v in zip(*np.nonzero(sub)):
        d = math.gcd(d, int(level[u] + 1 - level[v]))
    return d


def _require_one_long_run_rate(starts: np.ndarray, lengths: np.ndarray, batch: int) -> None:
    """Refuse round starts under which ``batch`` rows in lockstep have no single long-run rate.

    Several closed classes of round starts, or a periodic class on which the lengths differ with
    ``batch > 1`` (the rows keep their relative phases; module docstring).
    """
    require_one_closed_class(
        starts, "lockstep_rate: the round starts under these lengths", "the rate depends on the start state"
    )
    (cls,) = closed_classes(starts)
    d = _period(starts, cls)
    if d > 1 and batch > 1 and np.unique(lengths[cls]).size > 1:
        shown = ", ".join(str(int(s)) for s in cls[:8]) + (", ..." if cls.size > 8 else "")
        raise ValueError(
            f"lockstep_rate: the round starts under these lengths are periodic (period {d} on states "
            f"{{{shown}}}) and the lengths differ there, so {batch} rows in lockstep keep their "
            "relative phases and their long-run rate depends on them: there is no single rate "
            "(docs/cost.md §4); use batch=1, one length on the class, or an aperiodic chain"
        )


def optimal_policy_by_batch(
    chain: ChainLike,
    model: CostModel,
    batches: Sequence[int],
    *,
    context: float = 0.0,
    max_depth: int = 16,
) -> list[dict[str, Any]]:
    """Per batch size: the long-run optimal round-start policy and the best fixed gamma, in lockstep.

    At each ``B`` the policy is :func:`~spectheory.stopping.long_run_optimum` under
    ``model.relative(B, context)`` (optimal for rows that each pay their own length: the
    stopping optimiser does not see the other rows), then costed in lockstep by
    :func:`lockstep_rate`; the best fixed gamma (all rows equal, no lockstep loss) beside it.

    Returns
    -------
    list of dict
        One row per batch size: ``batch``, ``lengths`` (the policy), ``policy_speedup`` (its
        lockstep speedup), ``policy_ragged_speedup`` (the optimiser's value, each row paying
        its own length), ``best_gamma``, ``gamma_speedup``.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.cost import named_cost
    >>> from spectheory.stopping import optimal_policy_by_batch
    >>> chain = st.DecodingChain.random(3, n_states=4, concentration=0.6, rng=11)
    >>> rows = optimal_policy_by_batch(chain, named_cost("llama2-7b/68m-h200"), [1, 256], max_depth=8)
    >>> [r["best_gamma"] for r in rows]
    [4, 1]
    """
    out = []
    for B in batches:
        opt = long_run_optimum(chain, model.relative(B, context), max_depth)
        pol = lockstep_rate(chain, opt.lengths, model, B, context=context)
        fixed = [lockstep_rate(chain, g, model, B, context=context) for g in range(1, max_depth + 1)]
        j = int(np.argmax([f.speedup() for f in fixed]))
        out.append(
            {
                "batch": int(B),
                "lengths": opt.lengths.tolist(),
                "policy_speedup": pol.speedup(),
                "policy_ragged_speedup": float(opt.rate),
                "best_gamma": j + 1,
                "gamma_speedup": fixed[j].speedup(),
            }
        )
    return out
