"""One step of the main job (:class:`Step`) and where the job writes (:class:`Layout`).

The two records :mod:`spectheory.app.reproduce` builds and :mod:`spectheory.app.step_runner`
and :mod:`spectheory.app.step_cache` read; they live here, below all three, so that none of
those modules imports another for its types.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Step", "Layout"]


@dataclass(frozen=True)
class Step:
    """One script of the main job."""

    name: str
    script: str  # path relative to the repository root
    args: tuple = ()  # extra arguments (both modes)
    quick_args: tuple = ("--quick",)
    full_args: tuple = ()
    kind: str = "simulation"  # proof | simulation | decoder | benchmark | figure
    needs: tuple = field(default=())  # names of steps whose outputs it reads
    module: str | None = None  # run as ``python -m module`` (a package's __main__)

    def argv(self, out: Path, quick: bool) -> list[str]:
        extra = self.quick_args if quick else self.full_args
        run = ["-m", self.module] if self.module else [self.script]
        return [sys.executable, *run, "--out", str(out), *self.args, *extra]

    def sources(self, root: str | Path) -> list[Path]:
        """Files whose content keys the cache: the script, or the whole package of a module."""
        path = Path(root) / self.script
        return sorted(path.parent.rglob("*.py")) if self.module else [path]


@dataclass(frozen=True)
class Layout:
    """Where the main job writes: results (JSON), figures, logs, cache, and the summary."""

    results: Path
    figures: Path
    logs: Path
    cache: Path

    @classmethod
    def at(cls, root: str | Path, out: str | Path | None = None) -> Layout:
        """``out=None`` (or ``out`` the checkout ``root`` itself): the repository's own results/
        and figures/; else everything under ``out``.

        Examples
        --------
        >>> Layout.at("/repo").results.as_posix(), Layout.at("/repo", "/tmp/o").figures.as_posix()
        ('/repo/results', '/tmp/o/figures')
        >>> Layout.at("/repo", "/repo").is_checkout("/repo")
        True
        """
        root = Path(root).resolve()
        if out is None or Path(out).resolve() == root:
            return cls(
                root / "results", root / "figures", root / "results" / "logs", root / ".cache" / "reproduce"
            )
        out = Path(out).resolve()
        return cls(out / "results", out / "figures", out / "logs", out / ".cache")

    def is_checkout(self, root: str | Path) -> bool:
        """Whether this layout writes into the committed results/ or figures/ of ``root``."""
        root = Path(root).resolve()
        return self.results.resolve() == root / "results" or self.figures.resolve() == root / "figures"
