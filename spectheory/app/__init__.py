"""The application layer: the command line (:mod:`.cli`, also ``python -m spectheory``), the main
job (:mod:`.reproduce`), sweeps, the results-file convention and the plotting style. The library
never imports this package; it takes paths from its callers."""

from .._lazy import lazy_package

__all__, __getattr__, __dir__ = lazy_package(__name__, {"main": "cli"})
