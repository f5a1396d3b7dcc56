"""Verification schedules: how many drafted tokens of each request a batched step verifies.

A batch of requests each drafts a block; a *schedule* reads per-slot features (live prefix
survival, stale confidences, the draft's own probability, its margin, ...) and a staircase
cost (:class:`~spectheory.cost.staircase.StaircaseCost`) and returns how many tokens of each
row are verified (``docs/verification_schedules.md``):

- :mod:`.slots` -- rows (:class:`BlockRow`), drafted blocks and their :class:`SlotFeatures`;
- :mod:`.schedulers` -- the :class:`Schedule` interface and the shipped schedules: DSpark's
  early-stopping greedy, the global argmax, top-K, the split budget, the retrospective argmax, the
  drop-by-own-probability shortcut, fixed lengths;
- :mod:`.throughput` -- a schedule's exact throughput on a batch, and by Monte Carlo;
- :mod:`.best` -- the best non-anticipating (sequential admission) schedule by backward
  induction, and by brute force;
- :mod:`.law_check` -- the exact output law of a scheduled step: the non-anticipation check;
- :mod:`.confidence` -- exact ECE and AUROC of the confidences engines schedule by;
- :mod:`.named_batches` -- DSpark's Appendix A and the kit's tiny batches;
- :mod:`.decoder_hook` -- :class:`DecoderSchedule`, a schedule in the real decoder.

The round kind that runs a schedule through the engines is
:class:`~spectheory.kinds.scheduled.ScheduledRound` (``st.simulate``, its exact step, the real
decoder's ``generate``); the kit's check is
:func:`spectheory.testing.schedules.check_schedule`.

>>> from fractions import Fraction as F
>>> from spectheory.schedules import appendix_a, retrospective_argmax, first_token_law
>>> rows, gamma, cost = appendix_a()
>>> first_token_law(rows, gamma, retrospective_argmax(), cost)[0]
(Fraction(17, 20), Fraction(3, 20))
"""

from .._lazy import lazy_exports

_EXPORTS = {
    "BlockRow": "spectheory.schedules.slots",
    "SlotFeatures": "spectheory.schedules.slots",
    "slot_features": "spectheory.schedules.slots",
    "rows_from_chain": "spectheory.schedules.slots",
    "Schedule": "spectheory.schedules.schedulers",
    "FixedLength": "spectheory.schedules.schedulers",
    "EarlyStopGreedy": "spectheory.schedules.schedulers",
    "GlobalArgmax": "spectheory.schedules.schedulers",
    "TopK": "spectheory.schedules.schedulers",
    "SplitBudget": "spectheory.schedules.schedulers",
    "DropByOwnProbability": "spectheory.schedules.schedulers",
    "retrospective_argmax": "spectheory.schedules.schedulers",
    "ScheduleValue": "spectheory.schedules.throughput",
    "evaluate_schedule": "spectheory.schedules.throughput",
    "simulate_schedule": "spectheory.schedules.throughput",
    "best_schedule": "spectheory.schedules.best",
    "brute_force_best": "spectheory.schedules.best",
    "output_law": "spectheory.schedules.law_check",
    "first_token_law": "spectheory.schedules.law_check",
    "check_output_law": "spectheory.schedules.law_check",
    "confidence_table": "spectheory.schedules.confidence",
    "ece": "spectheory.schedules.confidence",
    "auroc": "spectheory.schedules.confidence",
    "appendix_a": "spectheory.schedules.named_batches",
    "DecoderSchedule": "spectheory.schedules.decoder_hook",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
