"""The scheduled kind: every row of a batch drafts ``gamma`` tokens and a verification schedule
(:mod:`spectheory.schedules`) says how many of each are verified (:class:`ScheduledRound`)."""

from .round import ScheduledRound

__all__ = ["ScheduledRound"]
