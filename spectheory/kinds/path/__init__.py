"""The path kind: ``gamma`` drafts along the draft's own path, checked by a single-path rule
(:class:`PathRound`; the rule's own engines do the rest, ``spectheory.verifiers``)."""

from .round import CHUNK_ELEMS, PathRound

__all__ = ["PathRound", "CHUNK_ELEMS"]
