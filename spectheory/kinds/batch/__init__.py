"""The batch kind: ``M`` i.i.d. drafts of ``gamma`` tokens (:class:`BatchRound`), read one of
three ways (:data:`READINGS`: first token, tree, GLS), each with its tree verifier, and the
exact batch engine (:func:`batch_tree_expected`)."""

from .exact import BatchTreeResult, batch_readings, batch_tree_expected
from .readings import READINGS, Reading, as_reading
from .round import BatchRound

__all__ = [
    "BatchRound",
    "READINGS",
    "Reading",
    "as_reading",
    "BatchTreeResult",
    "batch_readings",
    "batch_tree_expected",
]
