r"""A controller's gap to the hindsight oracle, split exactly into a reducible and an irreducible part.

In time per token (units of the cost; ``docs/stopping.md`` §10),

.. math::
    \underbrace{\tau_{\rm ctrl} - \tau_{\rm oracle}}_{\rm gap}
    = \underbrace{\tau_{\rm ctrl} - \tau_{\rm opt}}_{\rm reducible}
    + \underbrace{\tau_{\rm opt} - \tau_{\rm oracle}}_{\rm irreducible},

where ``opt`` is the exact optimum over drafters with the given information (``"state"``: the
round's start; ``"path"``: the drafted path and the laws, the best any drafter can do) and
``oracle`` the hindsight oracle (:mod:`.oracle`). The reducible part is what a better controller
with the same information could recover; the irreducible part is the price of not seeing the
verifier's coins. The irreducible part is ``>= 0`` when the round cost ``c k + t(k)`` is
affine in ``k = 0..D`` with slope at most ``t(0)`` (Theorem 5; e.g. ``t = 1``, ``c <= 1``). The
reducible part is ``>= 0`` against the path optimum (Theorem 1); against the state optimum only
for controllers that fix the round's length at its start (a rule that reads the drafted path,
e.g. a confidence threshold, can beat it: ``tests/stopping/test_oracle.py``). Finite horizon:
both optima; long run: the state optimum (:func:`~spectheory.stopping.long_run_optimum`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..cost.base import as_cost
from ..kinds.policy.evaluate import evaluate_policy
from .longrun import long_run_policy
from .optimal import long_run_optimum, optimal_policy
from .oracle import long_run_oracle, oracle_value

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from ..cost.base import Cost
    from ..kinds.policy.policies import Policy

__all__ = ["OracleGap", "oracle_gap"]


@dataclass
class OracleGap:
    """Times per token of a controller, the optimum and the hindsight oracle, and the split of the gap.

    Attributes
    ----------
    controller : str
    information : {"state", "path"}
        The optimum's information.
    horizon : int or None
        ``None``: the long run.
    controller_time, optimum_time, oracle_time : float
        Exact times per token.
    """

    controller: str
    information: str
    horizon: int | None
    controller_time: float
    optimum_time: float
    oracle_time: float

    @property
    def gap(self) -> float:
        """``controller_time - oracle_time``."""
        return self.controller_time - self.oracle_time

    @property
    def reducible(self) -> float:
        """``controller_time - optimum_time``: recoverable by a drafter with the same information."""
        return self.controller_time - self.optimum_time

    @property
    def irreducible(self) -> float:
        """``optimum_time - oracle_time``: the price of not seeing the verifier's coins."""
        return self.optimum_time - self.oracle_time

    @property
    def irreducible_share(self) -> float:
        """``irreducible / gap`` (NaN when the gap is 0)."""
        return self.irreducible / self.gap if self.gap != 0 else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {
            "controller": self.controller,
            "information": self.information,
            "horizon": self.horizon,
            "controller_time": self.controller_time,
            "optimum_time": self.optimum_time,
            "oracle_time": self.oracle_time,
            "gap": self.gap,
            "reducible": self.reducible,
            "irreducible": self.irreducible,
            "irreducible_share": self.irreducible_share,
        }


def oracle_gap(
    chain: ChainLike,
    policy: Policy,
    cost: Cost | float | None = None,
    *,
    horizon: int | None = None,
    information: str = "state",
    max_depth: int | None = None,
    **options: Any,
) -> OracleGap:
    r"""Exact split of ``policy``'s gap to the hindsight oracle (times per token).

    Parameters
    ----------
    chain : DecodingChain
    policy : Policy
        The controller; long run (``horizon=None``): Markov in a finite memory
        (:func:`~spectheory.stopping.long_run_policy`).
    cost : Cost or float
    horizon : int, optional
        Tokens per generation; ``None``: the long-run rates (homogeneous chains).
    information : {"state", "path"}
        The optimum's information (``"path"`` needs a horizon: small chains).
    max_depth : int, optional
        Cap of the optimum and the oracle (default the policy's ``max_depth``; not below it).
    options
        Passed to :func:`~spectheory.stopping.optimal_policy` (``max_nodes``, ``progress``).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import ConfidenceThreshold, oracle_gap
    >>> chain = st.DecodingChain.random(3, concentration=1.0, rng=0)
    >>> g = oracle_gap(chain, ConfidenceThreshold(0.5, max_depth=4), 0.1)
    >>> bool(g.reducible >= 0 and g.irreducible >= 0), bool(abs(g.reducible + g.irreducible - g.gap) < 1e-12)
    (True, True)
    """
    cost = as_cost(cost)
    D = int(policy.max_depth) if max_depth is None else int(max_depth)
    if D < int(policy.max_depth):
        raise ValueError(
            f"max_depth: {D} is below the policy's max_depth {policy.max_depth}; the optimum must allow its drafts"
        )
    if information not in ("state", "path"):
        raise ValueError(f"information: expected 'state' or 'path', got {information!r}")
    if horizon is None:
        if information != "state":
            raise ValueError(
                "information: the long-run optimum has state information only; give a horizon for 'path'"
            )
        ctrl = long_run_policy(chain, policy, cost).time_per_token()
        opt = long_run_optimum(chain, cost, D).time_per_token()
        ora = long_run_oracle(chain, cost, D).time_per_token()
    else:
        T = chain.check_horizon(horizon)
        ctrl = evaluate_policy(chain, policy, T, cost).time_per_token()
        opt = optimal_policy(chain, T, cost, information, D, **options).time_per_token()
        ora = oracle_value(chain, T, cost, D).time_per_token()
    return OracleGap(policy.name, information, horizon, float(ctrl), float(opt), float(ora))
