"""Deprecated: moved to :mod:`spectheory.analysis.batch_closed_form` (fronts, bounds and closed forms are not
rules). This path works for one release, with a :class:`DeprecationWarning`."""

from .._deprecation import moved_module

__getattr__ = moved_module(__name__, "spectheory.analysis.batch_closed_form")
