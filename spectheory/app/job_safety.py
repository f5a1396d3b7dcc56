"""What keeps the main job from destroying committed work.

Three guards used by :func:`spectheory.app.reproduce.reproduce` and
:func:`~spectheory.app.figures_job.run_figures`:

* :func:`fresh_folder` -- quick runs go to a new folder, never into the checkout;
* :class:`GpuResultsGuard` -- the committed results of GPU steps (scripts ``*_gpu.py``, whose
  files are ``results/<step>.json`` and ``results/<step>_*``) are snapshotted before a run into
  the checkout and put back when the step failed or its JSON does not name a CUDA device;
* :func:`check_scheduler` -- a ``--scheduler`` address is tried before any folder is made.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "fresh_folder",
    "GpuResultsGuard",
    "check_scheduler",
    "is_gpu_script",
    "is_real_script",
    "real_extra_missing",
    "ran_on_cuda",
]


def is_gpu_script(script: str | Path) -> bool:
    """Whether a step's script is a GPU script (its file name ends in ``_gpu.py``).

    Examples
    --------
    >>> is_gpu_script("simulations/decoder_gpu.py"), is_gpu_script("simulations/decoder_trees.py")
    (True, False)
    """
    return Path(script).stem.endswith("_gpu")


def is_real_script(script: str | Path) -> bool:
    """Whether a step's script runs the real pretrained LLM (its file name starts with ``real_``).

    Examples
    --------
    >>> is_real_script("benchmarks/real_speed.py"), is_real_script("simulations/trees.py")
    (True, False)
    """
    return Path(script).stem.startswith("real_")


def real_extra_missing() -> str | None:
    """Why the real-model steps cannot run here (the ``real`` extra is absent), else ``None``."""
    from ..decoder.pretrained import INSTALL_HINT, is_available

    return None if is_available("smollm2-135m") else f"needs the real extra ({INSTALL_HINT})"


def fresh_folder(kind: str) -> Path:
    """A new, empty folder under the system's temporary directory for a quick run's outputs.

    ``kind`` names it (``spectheory-<kind>-quick-XXXX``), so a listing shows what made it.

    Examples
    --------
    >>> import shutil
    >>> d = fresh_folder("reproduce")
    >>> d.is_dir() and d.name.startswith("spectheory-reproduce-quick-") and not any(d.iterdir())
    True
    >>> shutil.rmtree(d)
    """
    return Path(tempfile.mkdtemp(prefix=f"spectheory-{kind}-quick-")).resolve()


def ran_on_cuda(result_json: str | Path) -> bool:
    """Whether a result file's ``"device"`` entry names a CUDA device (False when unreadable).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x_gpu.json"
    >>> _ = p.write_text(json.dumps({"device": "cuda (NVIDIA H200)"}))
    >>> ran_on_cuda(p)
    True
    >>> _ = p.write_text(json.dumps({"device": "cpu (x86_64, 2 threads)"}))
    >>> ran_on_cuda(p)
    False
    """
    try:
        data = json.loads(Path(result_json).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "cuda" in str(data.get("device", "")).lower()


class GpuResultsGuard:
    """Snapshot of the committed files of GPU steps in a results folder, put back after a bad run.

    The files of a GPU step ``name`` are ``name.json`` and every ``name_*`` file (the
    ``decoder_gpu`` step writes ``decoder_gpu.json`` and ``decoder_gpu_log.txt``).

    Parameters
    ----------
    results : path
        The results folder (the checkout's ``results/``).
    names : iterable of str
        The GPU steps about to run.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> res = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (res / "x_gpu.json").write_text(json.dumps({"device": "cuda (H200)"}))
    >>> guard = GpuResultsGuard(res, ["x_gpu"])
    >>> _ = (res / "x_gpu.json").write_text(json.dumps({"device": "cpu"}))  # a CPU run overwrote it
    >>> _ = (res / "x_gpu_log.txt").write_text("cpu log")
    >>> guard.restore({"x_gpu": 0})
    ['x_gpu']
    >>> json.loads((res / "x_gpu.json").read_text())["device"], (res / "x_gpu_log.txt").exists()
    ('cuda (H200)', False)
    """

    def __init__(self, results: str | Path, names: Iterable[str]) -> None:
        self.results = Path(results)
        self.names = list(names)
        self.saved = {name: {p.name: p.read_bytes() for p in self._files(name)} for name in self.names}

    def _files(self, name: str) -> list[Path]:
        if not self.results.is_dir():
            return []
        return sorted(
            p
            for p in self.results.iterdir()
            if p.is_file() and (p.name == f"{name}.json" or p.name.startswith(f"{name}_"))
        )

    def restore(self, rcs: dict[str, int]) -> list[str]:
        """Put back the files of each step that failed (``rcs[name] != 0``) or whose JSON does
        not name a CUDA device; return the names of the steps restored.

        Files the step created that were not there before are removed; a step absent from
        ``rcs`` (it did not run) is left alone.
        """
        restored = []
        for name in self.names:
            if name not in rcs:
                continue
            if rcs[name] == 0 and ran_on_cuda(self.results / f"{name}.json"):
                continue
            saved = self.saved[name]
            for path in self._files(name):
                if path.name not in saved:
                    path.unlink()
            for fname, data in saved.items():
                (self.results / fname).write_bytes(data)
            restored.append(name)
        return restored


def check_scheduler(address: str, timeout: float = 5.0) -> None:
    """Raise ``ValueError`` naming ``--scheduler`` unless a Dask scheduler answers at ``address``.

    Called before the main job creates any folder, so that a dead address leaves nothing behind.
    """
    try:
        from distributed import Client
    except ImportError:
        raise ValueError(f"--scheduler {address}: needs dask.distributed (pip install distributed)") from None
    host, _, port = address.removeprefix("tcp://").rpartition(":")
    if address.startswith("tcp://") and port.isdigit():  # a closed port is refused at once
        import socket

        try:
            socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout).close()
        except OSError as exc:
            raise ValueError(
                f"--scheduler {address}: no Dask scheduler answers there ({exc.strerror or exc})"
            ) from None
    try:
        client = Client(address, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, ValueError on a bad address
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(
            f"--scheduler {address}: no Dask scheduler answers there within {timeout:g} s ({text})"
        ) from None
    client.close()
