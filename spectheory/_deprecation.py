"""Deprecation helpers: old names and old module paths kept one release, with a warning.

Two shapes, both raising :class:`DeprecationWarning` on use (never at import time, so
importing a package that still lists an old name stays silent):

- :func:`moved_module` -- the module ``__getattr__`` of a module whose contents moved to
  another module (``spectheory.verifiers.pareto`` -> ``spectheory.analysis.pareto``);
- :func:`moved_names` -- the module ``__getattr__`` of a package that used to re-export
  names now defined elsewhere (or renamed): ``{old name: (module, new name)}``.

The new modules are imported by name with :func:`importlib.import_module` on first use, so
an old path does not make its room depend on the new one (the layer test reads ``import``
statements only).

>>> import warnings
>>> getattr_ = moved_names("pkg", {"old_tv": ("spectheory.laws.distributions", "tv")})
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     f = getattr_("old_tv")
>>> f.__name__, caught[0].category.__name__
('tv', 'DeprecationWarning')
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved_module", "moved_names", "deprecated_alias"]


def moved_module(old: str, new: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` forwarding every public attribute of ``old`` to module ``new``.

    Parameters
    ----------
    old : str
        Dotted name of the deprecated module (for the message).
    new : str
        Dotted name of the module that now holds its contents.
    """

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        target = importlib.import_module(new)
        try:
            value = getattr(target, name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r}") from None
        warnings.warn(
            f"{old} is deprecated and will be removed in the next release; import {name} from {new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    return __getattr__


def moved_names(
    package: str, moved: Mapping[str, tuple[str, str]], fallback: Callable[[str], Any] | None = None
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
    """

    def __getattr__(name: str) -> Any:
        if name in moved:
            module, new = moved[name]
            warnings.warn(
                f"{package}.{name} is deprecated and will be removed in the next release; use {module}.{new}",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(importlib.import_module(module), new)
        if fallback is not None:
            return fallback(name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def deprecated_alias(func: Callable[..., Any], old: str) -> Callable[..., Any]:
    """``func`` under its old name ``old``: same signature, warns on every call.

    >>> import warnings
    >>> from spectheory.laws.distributions import tv
    >>> old_tv = deprecated_alias(tv, "total_variation")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     float(old_tv([1.0, 0.0], [0.5, 0.5]))
    0.5
    """
    import functools

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(
            f"{old} is deprecated and will be removed in the next release; use {func.__name__}",
            DeprecationWarning,
            stacklevel=2,
        )
        return func(*args, **kwargs)

    wrapper.__name__ = old
    wrapper.__qualname__ = old
    wrapper.__doc__ = f"Deprecated alias of :func:`{func.__module__}.{func.__name__}`."
    return wrapper
