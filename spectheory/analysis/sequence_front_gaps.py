r"""Per-step lossy heuristics placed against the exact sequence-level front.

For each rule of :mod:`spectheory.verifiers.biased` (additive, ratio, lenience, Medusa's
typical acceptance, with the optimal or the naive rejection law) and for the per-step
optimal mixtures :math:`b_\lambda = (1 - \lambda)\min(1, p/q) + \lambda` (Yin et al. 2024,
Theorems 4-5: optimal at one position), this module computes *exactly* (by enumerating
the emitted sequence law on the prefix forest, bonus off) the expected rejections
:math:`R` and the sequence TV :math:`\tau`, then the least rejections :math:`R^*(\tau)`
any rule can pay at that quality (:func:`~spectheory.analysis.sequence_front.optimal_sequence_front`)
and the ratio :math:`R / R^*(\tau)`. Notation: p = target, q = draft.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..verifiers.biased import (
    additive_acceptance,
    biased_rule,
    lenient_acceptance,
    ratio_acceptance,
    typical_acceptance,
)
from ..verifiers.rejection import RejectionRule, standard_acceptance
from .sequence_front import SequenceFront, optimal_sequence_front
from .sequence_front_tree import MAX_FRONT_SEQUENCES, prefix_forest, rule_point

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["mixture_rule", "heuristic_rules", "FrontGap", "front_gaps"]


def mixture_rule(lam: float) -> RejectionRule:
    r"""The per-step optimal mixture :math:`b_\lambda = (1 - \lambda)\min(1, p/q) + \lambda` with
    the optimal rejection law (on the single-position Pareto line for every ``lam`` in [0, 1])."""
    lv = float(lam)
    if not 0.0 <= lv <= 1.0:
        raise ValueError(f"lam: must lie in [0, 1], got {lam!r}")
    return RejectionRule(
        lambda t, d: (1.0 - lv) * standard_acceptance(t, d) + lv, "optimal", f"mixture({lv:g})/optimal"
    )


def heuristic_rules(quick: bool = False) -> list[tuple[str, float | str, RejectionRule]]:
    """The heuristics compared with the front: ``[(family, parameter, rule), ...]``.

    Families ``additive``, ``ratio``, ``lenience`` and ``typical`` each with the optimal
    (``/optimal``) and the naive (``/target``) rejection law, and ``mixture`` (the per-step
    optimal line of Theorems 4-5).
    """
    add = [0.02, 0.05, 0.1, 0.2] if quick else [0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3]
    rat = [0.1, 0.3, 0.6] if quick else [0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8]
    len_ = [0.8, 0.5, 0.3] if quick else [0.9, 0.8, 0.65, 0.5, 0.4, 0.3, 0.2]
    typ = [(0.09, 0.3), (0.2, 0.45)] if quick else [(0.05, 0.2), (0.09, 0.3), (0.2, 0.45), (0.3, 0.6)]
    mix = [0.1, 0.3, 0.5, 0.7, 0.9] if quick else [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    out: list[tuple[str, float | str, RejectionRule]] = []
    for law in ("optimal", "target"):
        out += [(f"additive/{law}", e, biased_rule(additive_acceptance(e), law)) for e in add]
        out += [(f"ratio/{law}", e, biased_rule(ratio_acceptance(e), law)) for e in rat]
        out += [(f"lenience/{law}", v, biased_rule(lenient_acceptance(v), law)) for v in len_]
        out += [
            (f"typical/{law}", f"{e:g}/{d:g}", biased_rule(typical_acceptance(e, d), law)) for e, d in typ
        ]
    out += [("mixture/optimal", v, mixture_rule(v)) for v in mix]
    return out


@dataclass
class FrontGap:
    """One heuristic against the front.

    ``rejections`` and ``sequence_tv``: the heuristic's exact point; ``optimum``: the front
    :math:`R^*` at that sequence TV; ``ratio = rejections / optimum`` (``inf`` when the
    optimum is 0 and the heuristic rejects; 1 when both are 0); ``excess = rejections - optimum``.
    """

    family: str
    param: object
    name: str
    rejections: float
    sequence_tv: float
    optimum: float
    excess: float = field(init=False)
    ratio: float = field(init=False)

    def __post_init__(self) -> None:
        self.excess = self.rejections - self.optimum
        if self.optimum > 1e-12:
            self.ratio = self.rejections / self.optimum
        else:
            self.ratio = 1.0 if self.rejections <= 1e-12 else float("inf")

    def as_dict(self) -> dict:
        return asdict(self)


def front_gaps(
    chain: ChainLike,
    horizon: int,
    rules: Sequence[tuple[str, Any, RejectionRule]] | None = None,
    *,
    start_state: int | None = None,
    eps_grid: ArrayLike | None = None,
    max_sequences: int = MAX_FRONT_SEQUENCES,
    quick: bool = False,
) -> tuple[list[FrontGap], SequenceFront | None]:
    r"""Every heuristic's exact point and the front at its sequence TV (one LP sweep).

    Parameters
    ----------
    chain : DecodingChain
    horizon : int
    rules : list of (family, param, RejectionRule), optional
        Default :func:`heuristic_rules` (``quick`` selects the short list).
    start_state : int, optional
        Fixed prompt state (default: the chain's initial law; see :mod:`.sequence_front_tree`).
    eps_grid : array_like, optional
        Extra budgets at which to evaluate the front (e.g. to draw it); returned as the
        second value.

    Returns
    -------
    gaps : list of FrontGap
    grid_front : SequenceFront or None
        The front at ``eps_grid`` (and at the heuristics' TVs, solved in the same sweep).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.analysis.sequence_front_gaps import front_gaps, mixture_rule
    >>> chain = st.DecodingChain.random(2, rng=0)
    >>> gaps, _ = front_gaps(chain, 3, [("mixture", 0.5, mixture_rule(0.5))], start_state=0)
    >>> bool(gaps[0].optimum <= gaps[0].rejections + 1e-9)
    True
    """
    rules = heuristic_rules(quick) if rules is None else list(rules)
    forest = prefix_forest(chain, horizon, start_state, max_sequences)
    points = [rule_point(forest, r) for _, _, r in rules]
    tvs = np.array([p.sequence_tv for p in points])
    grid = np.zeros(0) if eps_grid is None else np.asarray(eps_grid, dtype=np.float64).ravel()
    front = optimal_sequence_front(
        chain, horizon, np.concatenate([tvs, grid]), start_state=start_state, max_sequences=max_sequences
    )
    gaps = [
        FrontGap(fam, param, p.name, p.rejections, p.sequence_tv, float(front.rejections[i]))
        for i, ((fam, param, _), p) in enumerate(zip(rules, points))
    ]
    grid_front = None
    if grid.size:
        sl = slice(tvs.size, tvs.size + grid.size)
        grid_front = SequenceFront(
            front.eps[sl],
            front.rejections[sl],
            front.sequence_tv[sl],
            front.slope[sl],
            front.joint_law[sl],
            front.theorem1,
            front.max_tv,
            front.forest,
        )
    return gaps, grid_front
