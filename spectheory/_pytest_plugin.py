"""The pytest plugin's hooks: two options, a marker and a fixture; nothing runs unless a test asks.

Installed with the package (``[project.entry-points.pytest11]`` in ``pyproject.toml``), so
pytest loads this module in every project of an environment that has ``spectheory``. It
therefore only *registers*: the options ``--spectheory-samples`` and ``--spectheory-seed``, the
marker ``spectheory(samples=None, seed=None)`` (so ``--strict-markers`` accepts it) and the
fixture ``spectheory_options``; no autouse fixture, no collection or report hook, and it
imports nothing but ``spectheory``'s light top level (numpy, no kit). The kit itself,
:func:`spectheory.testing.pytest_plugin.parametrize_with_checks`, loads on first use and reads
the options from here (:func:`current_options`). Disable it with
``-p no:spectheory._pytest_plugin``.

Examples
--------
>>> from spectheory._pytest_plugin import current_options
>>> current_options()                      # outside a pytest run: the defaults
KitOptions(samples=2000, seed=0)
>>> current_options(samples=500)           # a test's own value, unless the command line sets one
KitOptions(samples=500, seed=0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

__all__ = ["KitOptions", "current_options", "DEFAULT_SAMPLES", "DEFAULT_SEED", "spectheory_options"]

#: Samples per instance of a plugin run: enough for every field bug of the gallery (each is
#: flagged at 200 or fewer; ``docs/testing_kit.md``) and quick on CPU.
DEFAULT_SAMPLES = 2000
#: The kit's seed (its ``rng``) of a plugin run.
DEFAULT_SEED = 0

_STATE: dict[str, Any] = {}


@dataclass(frozen=True)
class KitOptions:
    """The kit's samples per instance and seed for one test."""

    samples: int
    seed: int


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("spectheory", "spectheory conformance kit (spectheory.testing)")
    group.addoption(
        "--spectheory-samples",
        type=int,
        default=None,
        metavar="N",
        help=f"samples per instance of the kit's checks (default {DEFAULT_SAMPLES}, or the test's own)",
    )
    group.addoption(
        "--spectheory-seed",
        type=int,
        default=None,
        metavar="SEED",
        help=f"the kit's seed (default {DEFAULT_SEED}, or the test's own)",
    )


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        "spectheory(samples=None, seed=None): the kit's samples and seed for the spectheory_options fixture",
    )
    _STATE["config"] = config


def pytest_unconfigure(config: Any) -> None:
    if _STATE.get("config") is config:
        del _STATE["config"]


def _positive(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}, got {value!r}")
    return value


def current_options(samples: int | None = None, seed: int | None = None) -> KitOptions:
    """The kit's options for a check: the command line's, else ``samples``/``seed``, else the defaults."""
    config = _STATE.get("config")
    cli_samples = config.getoption("spectheory_samples", None) if config is not None else None
    cli_seed = config.getoption("spectheory_seed", None) if config is not None else None
    n = next((v for v in (cli_samples, samples) if v is not None), DEFAULT_SAMPLES)
    s = next((v for v in (cli_seed, seed) if v is not None), DEFAULT_SEED)
    return KitOptions(
        _positive(n, "samples (--spectheory-samples)", 1), _positive(s, "seed (--spectheory-seed)", 0)
    )


@pytest.fixture
def spectheory_options(request: Any) -> KitOptions:
    """The kit's samples and seed for this test: ``--spectheory-samples``/``--spectheory-seed``,
    else the test's ``@pytest.mark.spectheory(samples=..., seed=...)``, else the defaults."""
    mark = request.node.get_closest_marker("spectheory")
    kwargs = dict(mark.kwargs) if mark is not None else {}
    unknown = set(kwargs) - {"samples", "seed"}
    if unknown or (mark is not None and mark.args):
        raise ValueError(
            f"pytest.mark.spectheory: takes samples= and seed= only, got {mark.args}, {sorted(unknown)}"
        )
    return current_options(kwargs.get("samples"), kwargs.get("seed"))
