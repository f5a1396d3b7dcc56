"""The main job's cache: a step is reused while its inputs and its outputs are unchanged.

Each step runs through :mod:`spectheory.app._step_launcher`, which records the files the
step used. Its *inputs* are then

- its script and the source files of every module it imported from the checkout or the
  package (every package source, conservatively, if it started another Python or forked);
- the files of the checkout and the output folders it read (a figure's results files);
- the shipped weights ``spectheory/decoder/weights/*`` whenever it imported the decoder;
- its options: its command-line arguments, the mode (quick or full), the Python version, and
  the installed version of each other package it imported (numpy, torch, ...).

Its *outputs* are the files it wrote. The manifest (``manifest.json`` in the layout's cache
folder) keeps, per step, the SHA-256 of each input and output, the step's wall time and its
date. A step is reused when every recorded input and output still has the recorded hash;
it runs again when one changed or is missing (a deleted output), when its options changed,
or when it never succeeded here. A failed step is forgotten, so it runs next time.

Examples
--------
>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> (folder / "a.txt").write_text("x")
1
>>> file_digest(folder / "a.txt")[:12]
'2d711642b726'
>>> file_digest(folder / "missing.txt") is None
True
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .steps import Step

__all__ = [
    "PACKAGE",
    "LAUNCHER",
    "StepCache",
    "file_digest",
    "package_versions",
    "step_options",
    "step_inputs",
]

#: The installed package: its sources and weights are inputs of the steps that import them.
PACKAGE = Path(__file__).resolve().parent.parent
#: The script that runs a step and records the files it used.
LAUNCHER = Path(__file__).with_name("_step_launcher.py")
#: Shipped weights: an input of every step that imports ``spectheory.decoder``.
WEIGHTS = PACKAGE / "decoder" / "weights"
MANIFEST = "manifest.json"
_VERSION = 1
_digests: dict[tuple[str, int, int], str] = {}


def file_digest(path: str | Path) -> str | None:
    """SHA-256 (hex) of a file's content, or ``None`` if it is missing.

    Memoised on (path, modification time, size), so a warm job hashes each file once."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _digests:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        _digests[key] = h.hexdigest()
    return _digests[key]


_versions: dict[str, str | None] = {}
_distributions: dict[str, list[str]] = {}


def package_versions(names: Iterable[str]) -> dict[str, str | None]:
    """The installed version of each top-level package (``None``: not a distribution)."""
    from importlib import metadata

    for name in set(names) - set(_versions):
        try:
            _versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:  # PIL is Pillow, yaml PyYAML, ...
            if not _distributions:
                _distributions.update(metadata.packages_distributions())
            dists = _distributions.get(name, [])
            _versions[name] = ",".join(f"{d} {metadata.version(d)}" for d in sorted(set(dists))) or None
    return {n: _versions[n] for n in sorted(set(names))}


def step_options(step: Step, quick: bool) -> list[str]:
    """What besides files decides a step's outputs: how it is run, its arguments, mode, Python."""
    extra = step.quick_args if quick else step.full_args
    run = ["-m", step.module] if step.module else [step.script]
    return [
        *run,
        *map(str, step.args),
        *map(str, extra),
        "quick" if quick else "full",
        sys.version.split()[0],
    ]


def _spawned_python(spawned: Iterable[str]) -> bool:
    return any("python" in s or s.startswith("os.") for s in spawned)


def step_inputs(deps: dict, script: Path) -> set[Path]:
    """The input files of a step from its launcher record ``deps`` (see the module docstring)."""
    files = {Path(p) for p in (*deps.get("modules", ()), *deps.get("reads", ()))}
    files.add(Path(script).resolve())
    if _spawned_python(deps.get("spawned", ())):
        files |= set(PACKAGE.rglob("*.py"))
    if any(WEIGHTS.parent in f.parents for f in files) and WEIGHTS.is_dir():
        files |= {p for p in WEIGHTS.iterdir() if p.is_file()}
    return {f for f in files if "__pycache__" not in f.parts}


class StepCache:
    """The manifest of the steps run into one cache folder (one per layout and mode).

    Paths inside ``root`` (the checkout) are stored relative to it, so a moved checkout
    keeps its cache; others (the package when installed elsewhere, ``--out``) absolutely.
    """

    def __init__(self, folder: str | Path, root: str | Path) -> None:
        self.path = Path(folder) / MANIFEST
        self.root = Path(root).resolve()
        self.steps: dict[str, dict[str, Any]] = {}
        try:
            data = json.loads(self.path.read_text())
            if data.get("version") == _VERSION:
                self.steps = data["steps"]
        except (OSError, ValueError, KeyError, AttributeError):
            pass  # no cache (or an unreadable one): every step runs

    def _name(self, path: Path) -> str:
        try:
            return str(Path(path).relative_to(self.root))
        except ValueError:
            return str(path)

    def _path(self, name: str) -> Path:
        return self.root / name  # an absolute name stays absolute

    def stale(self, step: Step, quick: bool) -> str | None:
        """Why ``step`` must run, or ``None`` if its recorded outputs can be reused."""
        entry = self.steps.get(step.name)
        if entry is None:
            return "no successful run recorded"
        if entry.get("options") != step_options(step, quick):
            return "options changed"
        for name, version in package_versions(entry.get("packages", {})).items():
            if version != entry["packages"][name]:
                return f"package {name} changed: {entry['packages'][name]} -> {version}"
        for kind, files in (("input", entry["inputs"]), ("output", entry["outputs"])):
            for name, digest in files.items():
                now = file_digest(self._path(name))
                if now != digest:
                    return f"{kind} {'missing' if now is None else 'changed'}: {name}"
        return None

    def snapshot(self, step: Step) -> dict[str, str | None]:
        """Hashes, before a run, of the inputs known from the last one (and of the script)."""
        names = set(self.steps.get(step.name, {}).get("inputs", {})) | {self._name(self.script(step))}
        return {n: file_digest(self._path(n)) for n in names}

    def script(self, step: Step) -> Path:
        """The step's script (``__main__.py`` of a module step)."""
        return (self.root / step.script).resolve()

    def record(
        self, step: Step, quick: bool, deps: dict, seconds: float, before: dict[str, str | None]
    ) -> None:
        """Store a successful run. An input that changed during the run keeps its hash from
        before, so the next job sees the change and runs the step again."""
        inputs = {}
        for path in sorted(step_inputs(deps, self.script(step))):
            name = self._name(path)
            digest = before[name] if name in before else file_digest(path)
            if digest is not None:
                inputs[name] = digest
        outputs = {self._name(Path(p)): file_digest(p) for p in deps.get("writes", ())}
        self.steps[step.name] = {
            "options": step_options(step, quick),
            "inputs": inputs,
            "outputs": {k: v for k, v in outputs.items() if v is not None},
            "packages": package_versions(deps.get("packages", ())),
            "seconds": seconds,
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        }

    def forget(self, name: str) -> None:
        """Drop a step (it failed, or its run was not recorded): it runs next time."""
        self.steps.pop(name, None)

    def seconds(self, name: str) -> float | None:
        """The wall time of the step's last recorded run."""
        entry = self.steps.get(name)
        return None if entry is None else float(entry["seconds"])

    def outputs(self, names: Sequence[str]) -> set[str]:
        """Recorded outputs of the named steps (as stored names)."""
        return {o for n in names for o in self.steps.get(n, {}).get("outputs", {})}

    def inputs(self, name: str) -> set[str]:
        """Recorded inputs of a step (as stored names)."""
        return set(self.steps.get(name, {}).get("inputs", {}))

    def save(self) -> None:
        """Write the manifest atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"version": _VERSION, "steps": self.steps}, indent=1, sort_keys=True))
        os.replace(tmp, self.path)
