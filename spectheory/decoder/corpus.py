"""The training text of the shipped models: the Python standard library's ``.py`` sources.

Every machine that runs spectheory has it, so nothing is downloaded. The corpus is the
``.py`` files under ``sysconfig.get_paths()["stdlib"]`` of the running interpreter,
excluding third-party packages (``site-packages``, ``dist-packages``) and test suites
(directories named ``test``, ``tests``, ``idle_test``), read as raw bytes, sorted by
relative POSIX path and concatenated.

Held-out split (fixed, deterministic, independent of the machine's file order): file
``path`` is held out when ``int(sha256(path)[:8], 16) / 2**32 < 0.05``, i.e. about 5 %
of the files. The corpus hash is ``sha256`` over, for every file in order,
``path + b"\\0" + len(content) as 8 little-endian bytes + content``; it identifies
which corpus (which Python version) a model was trained on.

Examples
--------
>>> is_heldout("json/decoder.py") in (True, False)
True
>>> c = load_corpus()
>>> c.train.dtype, c.heldout.dtype
(dtype('uint8'), dtype('uint8'))
>>> len(c.sha256)
64
"""

from __future__ import annotations

import functools
import hashlib
import os
import sysconfig
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "HELDOUT_FRACTION",
    "EXCLUDED_DIRS",
    "stdlib_dir",
    "corpus_files",
    "is_heldout",
    "Corpus",
    "load_corpus",
    "train_bytes",
    "heldout_bytes",
    "corpus_sha256",
    "heldout_windows",
]

HELDOUT_FRACTION = 0.05
EXCLUDED_DIRS = frozenset({"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"})


def stdlib_dir() -> str:
    """The running interpreter's standard-library directory."""
    return sysconfig.get_paths()["stdlib"]


def corpus_files(root: str | None = None) -> list[str]:
    """Relative POSIX paths of the corpus files under ``root`` (default: the stdlib), sorted."""
    root = stdlib_dir() if root is None else root
    if not os.path.isdir(root):
        raise ValueError(f"root {root!r} is not a directory")
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in EXCLUDED_DIRS]
        for name in filenames:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                paths.append(rel.replace(os.sep, "/"))
    return sorted(paths)


def is_heldout(relpath: str, fraction: float = HELDOUT_FRACTION) -> bool:
    """Whether ``relpath`` belongs to the held-out split.

    ``int(sha256(relpath.encode())[:8 hex digits], 16) / 2**32 < fraction`` — a pure
    function of the path, so the split is the same on every machine and run.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction!r}")
    digest = hashlib.sha256(relpath.encode("utf-8")).hexdigest()
    return int(digest[:8], 16) / 2**32 < fraction


@dataclass(frozen=True)
class Corpus:
    """The corpus split into two byte arrays (numpy uint8) plus its provenance."""

    train: np.ndarray
    heldout: np.ndarray
    sha256: str
    root: str
    train_files: tuple = field(repr=False)
    heldout_files: tuple = field(repr=False)


@functools.lru_cache(maxsize=4)
def load_corpus(root: str | None = None, fraction: float = HELDOUT_FRACTION) -> Corpus:
    """Read the corpus once (cached) and return the train / held-out byte arrays."""
    root = stdlib_dir() if root is None else root
    hasher = hashlib.sha256()
    train, heldout, train_files, heldout_files = [], [], [], []
    for rel in corpus_files(root):
        with open(os.path.join(root, rel), "rb") as fh:
            content = fh.read()
        hasher.update(rel.encode("utf-8") + b"\0" + len(content).to_bytes(8, "little"))
        hasher.update(content)
        if is_heldout(rel, fraction):
            heldout.append(content)
            heldout_files.append(rel)
        else:
            train.append(content)
            train_files.append(rel)
    if not train or not heldout:
        raise ValueError(
            f"corpus under {root!r} is too small to split ({len(train)} train, {len(heldout)} held-out files)"
        )
    as_array = lambda parts: np.frombuffer(b"".join(parts), dtype=np.uint8).copy()  # noqa: E731
    return Corpus(
        as_array(train), as_array(heldout), hasher.hexdigest(), root, tuple(train_files), tuple(heldout_files)
    )


def train_bytes() -> np.ndarray:
    """Training bytes of the default corpus, uint8 ``[N_train]``."""
    return load_corpus().train


def heldout_bytes() -> np.ndarray:
    """Held-out bytes of the default corpus, uint8 ``[N_heldout]``."""
    return load_corpus().heldout


def corpus_sha256() -> str:
    """SHA-256 of the default corpus (see the module docstring)."""
    return load_corpus().sha256


def heldout_windows(n_windows: int, length: int, data: np.ndarray | None = None) -> np.ndarray:
    """``n_windows`` evenly spaced, non-overlapping windows of held-out bytes.

    Window ``j`` starts at ``j * ((len(data) - length) // (n_windows - 1))`` (one window
    at 0 when ``n_windows == 1``); deterministic, so every model is scored on the same
    bytes. Returns int64 ``[n_windows, length]``.

    Examples
    --------
    >>> heldout_windows(4, 9).shape
    (4, 9)
    """
    data = heldout_bytes() if data is None else np.asarray(data, dtype=np.uint8)
    if not isinstance(n_windows, int) or n_windows < 1:
        raise ValueError(f"n_windows must be a positive int, got {n_windows!r}")
    if not isinstance(length, int) or length < 1:
        raise ValueError(f"length must be a positive int, got {length!r}")
    if n_windows * length > len(data):
        raise ValueError(f"n_windows * length = {n_windows * length} exceeds the {len(data)} held-out bytes")
    stride = (len(data) - length) // max(n_windows - 1, 1)
    starts = np.arange(n_windows) * stride
    return np.stack([data[s : s + length] for s in starts]).astype(np.int64)
