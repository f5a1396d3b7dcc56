"""Every public function and method of the package is annotated, and mypy passes.

Public = a name in the ``__all__`` of a public module (no ``_``-prefixed part in its dotted
path), defined in spectheory. For a function every parameter (``*args`` and ``**kwargs``
included; not ``self``/``cls``) and the return value need an annotation; for a class the
same holds for ``__init__``, ``__call__`` and every method, class method, static method and
property getter whose name does not start with ``_``, defined in the class itself.
The one check that needs the type checker itself (``mypy``, configured in pyproject.toml)
is marked slow: it takes about a minute on a cold cache; ``.ci/run`` runs it anyway.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import spectheory

ROOT = Path(__file__).resolve().parents[1]

#: Names exempt from the check, with the reason. Keep it short.
EXEMPT: dict[str, str] = {}


def _public_modules():
    for info in pkgutil.walk_packages(spectheory.__path__, "spectheory."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        yield info.name


def _import(name):
    try:
        return importlib.import_module(name)
    except ImportError as exc:  # an optional dependency (torch, transformers) is missing
        if getattr(exc, "name", None) and not str(exc.name).startswith("spectheory"):
            return None
        raise


def _missing(fn, skip_first: bool) -> list[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature
        return []
    params = list(sig.parameters.values())
    if skip_first and params:
        params = params[1:]
    out = [p.name for p in params if p.annotation is inspect.Parameter.empty]
    if sig.return_annotation is inspect.Signature.empty:
        out.append("return")
    return out


def _class_members(cls):
    for name, raw in vars(cls).items():
        if name.startswith("_") and name not in ("__init__", "__call__"):
            continue
        if isinstance(raw, property):
            if raw.fget is not None:
                yield name, raw.fget, True
        elif isinstance(raw, staticmethod):
            yield name, raw.__func__, False
        elif isinstance(raw, classmethod):
            yield name, raw.__func__, True
        elif inspect.isfunction(raw):
            yield name, raw, True


def _untyped() -> list[str]:
    seen, out = set(), []
    for modname in _public_modules():
        mod = _import(modname)
        if mod is None:
            continue
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name, None)
            if obj is None or id(obj) in seen:
                continue
            seen.add(id(obj))
            if not str(getattr(obj, "__module__", "")).startswith("spectheory"):
                continue
            qual = f"{obj.__module__}.{getattr(obj, '__qualname__', name)}"
            if qual in EXEMPT:
                continue
            if inspect.isclass(obj):
                for mname, fn, skip_first in _class_members(obj):
                    if f"{qual}.{mname}" in EXEMPT:
                        continue
                    if not str(getattr(fn, "__module__", "")).startswith("spectheory"):
                        continue  # generated (dataclass, NamedTuple) or inherited from elsewhere
                    miss = _missing(fn, skip_first)
                    if miss:
                        out.append(f"{qual}.{mname}: {', '.join(miss)}")
            elif callable(obj) and (inspect.isfunction(obj) or hasattr(obj, "__wrapped__")):
                miss = _missing(obj, False)
                if miss:
                    out.append(f"{qual}: {', '.join(miss)}")
    return out


def test_every_public_function_is_annotated():
    missing = _untyped()
    assert not missing, f"{len(missing)} public functions lack annotations:\n" + "\n".join(missing)


def test_the_check_finds_an_unannotated_function(monkeypatch):
    import spectheory.laws.distributions as mod

    def tv(a, b):  # the real one is annotated
        return 0.0

    tv.__module__ = mod.__name__
    monkeypatch.setattr(mod, "tv", tv)
    assert (
        "spectheory.laws.distributions.test_the_check_finds_an_unannotated_function.<locals>.tv: a, b, return"
        in (_untyped())
    )


@pytest.mark.slow
def test_mypy_passes():
    if shutil.which("mypy") is None and importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it is in the dev extra)")
    res = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
