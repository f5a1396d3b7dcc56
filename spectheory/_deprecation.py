"""Deprecation helpers: an old name or old module path kept until a stated release, with a warning.

Every deprecation in the package goes through one of these helpers and names the release
that removes it (``remove_in``, a version string such as ``"0.3.0"``, required);
``tests/test_deprecations.py`` reads every call and fails once the package's version reaches
a ``remove_in``, so no old name outlives its release. Raising :class:`DeprecationWarning`
by hand elsewhere is refused by the same test.

Four shapes, all warning on use (never at import time, so importing a package that still
lists an old name stays silent):

- :func:`moved_module` -- the module ``__getattr__`` of a module whose contents moved to
  another module;
- :func:`moved_names` -- the module ``__getattr__`` of a package that used to export names
  now defined elsewhere (or renamed): ``{old name: (module, new name)}``;
- :func:`deprecated_alias` -- a function under its old name;
- :func:`warn_deprecated` -- the warning itself, for an old keyword or attribute.

The new modules are imported by name with :func:`importlib.import_module` on first use, so
an old path does not make its room depend on the new one (the layer test reads ``import``
statements only).

>>> import warnings
>>> getattr_ = moved_names("pkg", {"old_tv": ("spectheory.laws.distributions", "tv")}, remove_in="9.0.0")
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     f = getattr_("old_tv")
>>> f.__name__, caught[0].category.__name__
('tv', 'DeprecationWarning')
>>> str(caught[0].message)
'pkg.old_tv is deprecated and will be removed in 9.0.0; use spectheory.laws.distributions.tv'
"""

from __future__ import annotations

import functools
import importlib
import re
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved_module", "moved_names", "deprecated_alias", "warn_deprecated", "parse_version"]

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_version(version: str) -> tuple[int, int, int]:
    """``"0.2.0"`` -> ``(0, 2, 0)``: a release number ``MAJOR.MINOR.PATCH``.

    >>> parse_version("0.10.1") > parse_version("0.9.9")
    True
    """
    match = _VERSION.fullmatch(str(version))
    if match is None:
        raise ValueError(f"remove_in: expected a release number like '0.3.0', got {version!r}")
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


def warn_deprecated(old: str, new: str, *, remove_in: str, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated, is removed in ``remove_in`` and ``new`` replaces it.

    Parameters
    ----------
    old, new : str
        What the caller used and what to use instead (for the message).
    remove_in : str
        The release that removes ``old`` (``"0.3.0"``).
    stacklevel : int
        As in :func:`warnings.warn`; the default points at the caller of the function
        that calls this one.
    """
    parse_version(remove_in)
    warnings.warn(
        f"{old} is deprecated and will be removed in {remove_in}; use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def moved_module(old: str, new: str, *, remove_in: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` forwarding every public attribute of ``old`` to module ``new``.

    Parameters
    ----------
    old : str
        Dotted name of the deprecated module (for the message).
    new : str
        Dotted name of the module that now holds its contents.
    remove_in : str
        The release that removes the module ``old``.
    """
    parse_version(remove_in)

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        target = importlib.import_module(new)
        try:
            value = getattr(target, name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r}") from None
        warn_deprecated(f"{old}.{name}", f"{new}.{name}", remove_in=remove_in)
        return value

    return __getattr__


def moved_names(
    package: str,
    moved: Mapping[str, tuple[str, str]],
    fallback: Callable[[str], Any] | None = None,
    *,
    remove_in: str,
) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving deprecated names: ``{old: (module, new name)}``.

    Parameters
    ----------
    package : str
        Dotted name of the package whose ``__getattr__`` this is (for the messages).
    moved : mapping
        Old attribute name -> (dotted module name, attribute name there).
    fallback : callable, optional
        Called for names not in ``moved`` (e.g. a package's lazy exports); by default
        such names raise :class:`AttributeError`.
    remove_in : str
        The release that removes every old name of ``moved``.
    """
    parse_version(remove_in)

    def __getattr__(name: str) -> Any:
        if name in moved:
            module, new = moved[name]
            warn_deprecated(f"{package}.{name}", f"{module}.{new}", remove_in=remove_in)
            return getattr(importlib.import_module(module), new)
        if fallback is not None:
            return fallback(name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def deprecated_alias(func: Callable[..., Any], old: str, *, remove_in: str) -> Callable[..., Any]:
    """``func`` under its old name ``old``: same signature, warns on every call.

    >>> import warnings
    >>> from spectheory.laws.distributions import tv
    >>> old_tv = deprecated_alias(tv, "total_variation", remove_in="9.0.0")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     float(old_tv([1.0, 0.0], [0.5, 0.5]))
    0.5
    """
    parse_version(remove_in)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warn_deprecated(old, func.__name__, remove_in=remove_in)
        return func(*args, **kwargs)

    wrapper.__name__ = old
    wrapper.__qualname__ = old
    wrapper.__doc__ = (
        f"Deprecated alias of :func:`{func.__module__}.{func.__name__}` (removed in {remove_in})."
    )
    return wrapper
