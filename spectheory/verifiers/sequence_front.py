"""Deprecated: moved to :mod:`spectheory.analysis.sequence_front` (fronts, bounds and closed forms are not
rules). This path works for one release, with a :class:`DeprecationWarning`."""

from .._deprecation import moved_module

__getattr__ = moved_module(__name__, "spectheory.analysis.sequence_front")
