"""The application layer: the command line (:mod:`.cli`), the main job (:mod:`.reproduce`), sweeps,
the results-file convention and the plotting style. The library never imports this package; it
takes paths from its callers."""
