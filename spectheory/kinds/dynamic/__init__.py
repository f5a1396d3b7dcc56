"""The dynamic-tree kind: a draft tree chosen at every round start from the chain state
(:class:`DynamicTreeRound`), with EAGLE-2's and OPT-Tree's rules (:class:`Eagle2Tree`,
:class:`OptTree`)."""

from .round import DynamicTreeRound
from .rules import Eagle2Tree, OptTree

__all__ = ["DynamicTreeRound", "Eagle2Tree", "OptTree"]
