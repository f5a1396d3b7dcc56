"""Where the repository is: the application layer's only link to the files around the package.

The library never looks outside itself. The main job (``spectheory reproduce``), the figures
and the proofs are scripts of a checkout of the repository (``simulations/``, ``benchmarks/``,
``figures/``, ``proofs/``); the command line finds that checkout from the current directory
(or takes ``--root``) and hands its path down.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["find_repository", "is_repository"]


def is_repository(path: str | Path) -> bool:
    """True if ``path`` holds the main job's script folders."""
    p = Path(path)
    return (p / "simulations").is_dir() and (p / "figures").is_dir()


def find_repository(start: str | Path | None = None) -> Path:
    """The checkout at or above ``start`` (default: the current directory).

    Raises
    ------
    ValueError
        If no folder at or above ``start`` has ``simulations/`` and ``figures/``; the message
        says to run from a checkout or to pass ``--root``.
    """
    here = Path.cwd() if start is None else Path(start)
    here = here.resolve()
    for p in (here, *here.parents):
        if is_repository(p):
            return p
    raise ValueError(
        f"root: no spectheory checkout (a folder with simulations/ and figures/) at or above "
        f"{here}; run from a checkout of the repository or pass --root PATH"
    )
