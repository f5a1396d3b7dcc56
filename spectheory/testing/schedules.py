r"""The kit on verification schedules: is a schedule non-anticipating, judged by its output law?

:func:`check_schedule` plays one scheduled step of every instance of
:func:`spectheory.schedules.named_batches.kit_instances` (DSpark's Appendix A, a row whose
confidence depends on its first draft, a skewed draft, seeded random batches under random
staircase costs), enumerating every draw (forced draws, ``Fraction`` laws), and compares each
row's law of its first ``gamma + 1`` tokens with the target's
(:func:`spectheory.schedules.law_check.check_output_law`). A schedule whose law differs on
one instance is anticipating (biased); one that matches everywhere passes (which does not prove
non-anticipation: ``docs/verification_schedules.md``). :data:`SCHEDULE_GALLERY` lists the
shipped schedules with what the kit must find.

>>> from spectheory.schedules import EarlyStopGreedy, retrospective_argmax
>>> check_schedule(EarlyStopGreedy(), n_random=5).passed
True
>>> r = check_schedule(retrospective_argmax(), n_random=0)
>>> r.passed, r.first_failure
(False, 'appendix_a')
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..schedules.law_check import LawCheck, check_output_law
from ..schedules.named_batches import kit_instances
from ..schedules.schedulers import (
    DropByOwnProbability,
    EarlyStopGreedy,
    FixedLength,
    GlobalArgmax,
    Schedule,
    SplitBudget,
    TopK,
    retrospective_argmax,
)

__all__ = ["ScheduleReport", "check_schedule", "SCHEDULE_GALLERY"]


@dataclass(frozen=True)
class ScheduleReport:
    """The kit's verdict on a schedule.

    Attributes
    ----------
    schedule : str
    passed : bool
        Every instance's output law equals the target's.
    checks : list of (str, LawCheck)
        Per instance: its name and the law check.
    """

    schedule: str
    passed: bool
    checks: list[tuple[str, LawCheck]]

    @property
    def first_failure(self) -> str | None:
        """The first instance whose law differs (``None`` when it passed)."""
        return next((name for name, c in self.checks if not c.lossless), None)

    @property
    def max_tv(self) -> Any:
        """The largest total variation from the target over the instances."""
        return max((c.tv for _, c in self.checks), default=Fraction(0))

    def __str__(self) -> str:
        verdict = (
            "non-anticipating on every instance" if self.passed else f"BIASED (first: {self.first_failure})"
        )
        return f"{self.schedule}: {verdict}; max TV {self.max_tv} over {len(self.checks)} instances"


def check_schedule(
    schedule: Schedule,
    *,
    gamma: int = 2,
    batch: int = 1,
    n_random: int = 20,
    seed: int = 0,
    stop_at_first: bool = False,
) -> ScheduleReport:
    """The exact output-law check of ``schedule`` on the kit's instances (``gamma`` drafts per
    row, ``batch`` rows, ``n_random`` random batches from ``seed``)."""
    checks = []
    for name, rows, g, cost in kit_instances(gamma, batch, n_random=n_random, seed=seed):
        c = check_output_law(rows, g, schedule, cost)
        checks.append((name, c))
        if stop_at_first and not c.lossless:
            break
    return ScheduleReport(schedule.name, all(c.lossless for _, c in checks), checks)


#: ``{name: (schedule, lossless)}``: the shipped schedules and the kit's expected verdict
#: (``gamma = 2``); the biased ones let a slot's own draw decide whether it is verified.
SCHEDULE_GALLERY: dict[str, tuple[Schedule, bool]] = {
    "early-stop greedy (live survival)": (EarlyStopGreedy("survival"), True),
    "global argmax (stale confidences)": (GlobalArgmax("stale"), True),
    "top-2 by live survival": (TopK(2, "survival"), True),
    "split budget (K from stale, rank by live survival)": (SplitBudget(), True),
    "fixed length 2": (FixedLength(2), True),
    "retrospective argmax": (retrospective_argmax(), False),
    "drop last draft if q < 1/2": (DropByOwnProbability(Fraction(1, 2), FixedLength(2)), False),
    "global argmax (live survival, no break)": (GlobalArgmax("survival"), False),
}
