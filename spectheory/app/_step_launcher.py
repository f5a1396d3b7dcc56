"""Run one step of the main job and record the files it used.

``python .../_step_launcher.py --deps FILE --watch DIRS -- SCRIPT ARGS...`` (or
``-- -m MODULE ARGS...``) runs the script exactly as ``python SCRIPT ARGS...`` would
(:func:`runpy.run_path`, ``sys.argv`` and ``sys.path[0]`` as Python sets them) and, when it
ends, writes to ``FILE`` a JSON object with

- ``modules``: the source files of every module it imported,
- ``reads``: the files it opened for reading,
- ``writes``: the files it opened for writing or renamed into place (its outputs),
- ``packages``: the other top-level packages it imported (numpy, torch, ...),
- ``spawned``: the programs it started (``os.fork`` etc. for a bare fork): another Python's
  imports are not seen here,

each list holding only paths inside one of the folders ``DIRS`` (``os.pathsep``-separated:
the checkout, the package, the output folders). Files are seen through the interpreter's
audit hooks (:pep:`578`), so a script declares nothing by hand.

The launcher is run by path and imports only the standard library, so the package's own
modules it records are those the script imported, not the launcher's.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from collections.abc import Callable

_SPAWN = {"os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn", "os.system"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r + os.sep) for r in roots)


def _keep(paths: set[str], roots: list[str]) -> list[str]:
    return sorted(
        p
        for p in paths
        if _inside(p, roots) and "__pycache__" not in p and not p.endswith(".pyc") and os.path.isfile(p)
    )


def main(argv: list[str]) -> int:
    """Parse the launcher's own options, run the step, write the deps file; return its exit code."""
    if "--" not in argv:
        sys.exit("usage: _step_launcher.py --deps FILE --watch DIRS -- SCRIPT ARGS... | -m MODULE ARGS...")
    split = argv.index("--")
    opts, step = argv[:split], argv[split + 1 :]
    deps_file = opts[opts.index("--deps") + 1]
    roots = [os.path.realpath(r) for r in opts[opts.index("--watch") + 1].split(os.pathsep) if r]
    reads: set[str] = set()
    writes: set[str] = set()
    spawned: list[str] = []

    def on_open(args: tuple) -> None:
        path, mode, flags = args
        if path is None or isinstance(path, int):
            return
        path = os.path.abspath(os.fsdecode(path))
        written = (flags & _WRITE_FLAGS) if mode is None else any(c in mode for c in "wax+")
        (writes if written else reads).add(path)

    def on_rename(args: tuple) -> None:  # os.replace too: an atomic write lands at the target
        writes.add(os.path.abspath(os.fsdecode(args[1])))

    def on_popen(args: tuple) -> None:
        spawned.append(os.path.basename(os.fsdecode(args[0] or args[1][0])))

    def on_fork(event: str) -> Callable[[tuple], None]:
        return lambda args: spawned.append(event)

    handlers: dict[str, Callable[[tuple], None]] = {
        "open": on_open,
        "os.rename": on_rename,
        "subprocess.Popen": on_popen,
    }
    handlers.update({e: on_fork(e) for e in _SPAWN})

    def hook(event: str, args: tuple) -> None:  # called on every audited event: one dict look-up
        handler = handlers.get(event)
        if handler is not None:
            handler(args)

    pid = os.getpid()
    if step[:1] == ["-m"]:
        module, sys.argv = step[1], [step[1], *step[2:]]
        sys.path[0] = os.getcwd()  # as ``python -m`` sets it
        target = None
    else:
        target = os.path.abspath(step[0])  # ``__file__`` absolute, as ``python SCRIPT`` gives it
        sys.argv = list(step)  # argv[0] as given, as ``python SCRIPT`` leaves it
        sys.path[0] = os.path.dirname(target)
    sys.addaudithook(hook)
    code = 0
    try:
        if target is None:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    finally:
        if os.getpid() == pid:  # not in a forked child that fell through
            files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
            files.add(target)
            modules = {os.path.realpath(f) for f in files if isinstance(f, str)}
            me = os.path.realpath(__file__)  # the launcher: ``__main__`` outside the step, and
            modules.discard(me)  # read by a traceback or warning that shows its frame
            real_writes = {os.path.realpath(p) for p in writes}
            tops = {n: getattr(m, "__file__", None) for n, m in list(sys.modules.items()) if "." not in n}
            third_party = {
                n
                for n, f in tops.items()
                if isinstance(f, str)
                and not n.startswith("_")
                and n not in sys.stdlib_module_names
                and not _inside(os.path.realpath(f), roots)
            }
            record = {
                "modules": _keep(modules, roots),
                "packages": sorted(third_party),
                "reads": _keep({os.path.realpath(p) for p in reads} - real_writes - {me}, roots),
                "writes": _keep(real_writes, roots),
                "spawned": sorted(set(spawned)),
            }
            tmp = f"{deps_file}.tmp{pid}"
            with open(tmp, "w") as fh:
                json.dump(record, fh, indent=1)
            os.replace(tmp, deps_file)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
