"""Lazy package attributes: a package lists ``{name: module}`` and the module is imported on
first access (PEP 562), so importing the package costs nothing until a name is used.

>>> getattr_, dir_ = lazy_exports("spectheory", {"tv": "spectheory.laws.distributions"})
>>> float(getattr_("tv")([1.0, 0.0], [0.5, 0.5]))
0.5
>>> "tv" in dir_()
True

A subpackage names each export's submodule, relative to itself, and takes its ``__all__`` from the
same table (:func:`lazy_package`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports", "lazy_package"]


def lazy_exports(
    package: str,
    exports: Mapping[str, str],
    submodules: Iterable[str] = (),
    fallback: Callable[[str], Any] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose names load on first use.

    Parameters
    ----------
    package : str
        Dotted name of the package (``__name__`` in its ``__init__``).
    exports : mapping
        Public name -> dotted name of the module that defines it.
    submodules : iterable of str
        Subpackages/submodules reachable as attributes (``spectheory.trees``), imported on access.
    fallback : callable, optional
        Called for any other name (e.g. deprecated names); by default they raise
        :class:`AttributeError`.

    Returns
    -------
    (__getattr__, __dir__)
        A resolved name is cached in the package's namespace, so each loads once.
    """
    subs = frozenset(submodules)

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
        elif name in subs:
            value = importlib.import_module(f"{package}.{name}")
        elif fallback is not None:
            return fallback(name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports) | subs)

    return __getattr__, __dir__


def lazy_package(
    package: str, exports: Mapping[str, str]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__all__``, ``__getattr__`` and ``__dir__`` of a subpackage whose names load on first
    use.

    Parameters
    ----------
    package : str
        Dotted name of the package (``__name__`` in its ``__init__``).
    exports : mapping
        Public name -> the submodule of ``package`` that defines it (``"markov"`` for
        ``package.markov``); its order is the order of ``__all__``.

    Returns
    -------
    (__all__, __getattr__, __dir__)
        The listed names, and :func:`lazy_exports` of the table with full module names.

    Examples
    --------
    >>> names, getattr_, _ = lazy_package("spectheory.laws", {"tv": "distributions"})
    >>> names, float(getattr_("tv")([1.0, 0.0], [0.5, 0.5]))
    (['tv'], 0.5)
    """
    getattr_, dir_ = lazy_exports(package, {name: f"{package}.{module}" for name, module in exports.items()})
    return list(exports), getattr_, dir_
