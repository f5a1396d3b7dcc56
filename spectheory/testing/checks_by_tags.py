"""Capability-driven checks: a pytest decorator that runs each engine's check a rule or round supports.

As scikit-learn's ``parametrize_with_checks`` runs the estimator checks an estimator's tags
allow, :func:`parametrize_with_checks` reads what each object declares -- the round's
:meth:`~spectheory.rounds.Round.tags` (one flag per engine), and for a rule its ``lossless``,
``accepts_paths``/``accepts_trees``, whether it has an exact engine (``phase_masses``,
``round_transition`` or its own ``exact``) and a round law -- and yields one
``pytest.param(obj, check, id="<name>-<check>")`` per check that applies
(:mod:`spectheory.testing.engine_checks`):

============================  ===============================================================
check                         applies when
============================  ===============================================================
``exact_vs_monte_carlo``      the round supports ``exact`` and ``monte_carlo`` (and a rule has
                              an exact engine)
``exact_vs_enumeration``      also: a single-path round whose rule has a round law
``decoder_law``               the round supports ``decoder`` (a path round refuses rules that
                              draft by argmax or call the target several times a round), torch
                              imports, and the rule is lossless or has a round law
``kit``                       the round supports ``kit`` (a path round refuses a rule that
                              calls the target several times a round)
============================  ===============================================================

An engine the object does not support yields no check (not a skipped one). A new rule or round
kind is then one line of a test file::

    from spectheory.testing import parametrize_with_checks

    @parametrize_with_checks(["token", "block", MyRule(), st.PathRound(3, "hsd")])
    def test_engines_agree(obj, check):
        check(obj)

An entry may be a ``pytest.param(obj, marks=pytest.mark.slow)``: its checks carry the marks.

Examples
--------
>>> from spectheory.testing.checks_by_tags import checks_for
>>> [c.__name__ for c in checks_for("token")][:2]
['check_exact_vs_monte_carlo', 'check_exact_vs_enumeration']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..verifiers import Verifier, get_verifier
from .engine_checks import (
    check_decoder_law,
    check_exact_vs_enumeration,
    check_exact_vs_monte_carlo,
    check_kit,
    checked_round,
    is_lossless,
    path_gamma,
    round_law_of,
    rule_of,
    torch_available,
)

__all__ = ["parametrize_with_checks", "checks_for", "check_name"]

Check = Callable[[Any], None]


def _has_exact_engine(v: Verifier | None) -> bool:
    """Whether a single-path rule has exact values (a tree verifier or no rule: the round's)."""
    if v is None or not v.accepts_paths or v.accepts_trees:
        return True
    return any(
        getattr(type(v), m) is not getattr(Verifier, m) for m in ("exact", "phase_masses", "round_transition")
    )


def checks_for(obj: Any) -> list[Check]:
    """The checks that apply to ``obj`` (a rule or a round), from what it declares (module
    docstring); each is called as ``check(obj)``."""
    rnd = checked_round(obj)
    tags, v = rnd.tags(), rule_of(rnd)
    out: list[Check] = []
    if tags.exact and _has_exact_engine(v):
        if tags.monte_carlo:
            out.append(check_exact_vs_monte_carlo)
        if path_gamma(rnd) is not None and round_law_of(v) is not None:
            out.append(check_exact_vs_enumeration)
    law_known = is_lossless(rnd) or (path_gamma(rnd) is not None and round_law_of(v) is not None)
    if tags.decoder and law_known and torch_available():
        out.append(check_decoder_law)
    if tags.kit:
        out.append(check_kit)
    return out


def check_name(obj: Any) -> str:
    """The label of ``obj`` in test ids: a rule's name, else the round's ``name``."""
    if isinstance(obj, (str, Verifier)):
        return get_verifier(obj).name
    return checked_round(obj).name


def _entries(objects: Iterable[Any]) -> Iterator[tuple[Any, str, tuple[Any, ...]]]:
    for item in objects:
        if hasattr(item, "values") and hasattr(item, "marks"):  # a pytest.param(obj, marks=...)
            (obj,) = item.values
            yield obj, item.id or check_name(obj), tuple(item.marks)
        else:
            yield item, check_name(item), ()


def parametrize_with_checks(objects: Iterable[Any]) -> Any:
    """A pytest decorator parametrizing a test over ``(obj, check)`` for every object and
    every check its declared capabilities allow (module docstring).

    Parameters
    ----------
    objects : iterable
        Rules (:class:`~spectheory.verifiers.Verifier` objects or registered names) and rounds
        (:class:`~spectheory.rounds.Round` objects or the shorthands
        :func:`~spectheory.kinds.as_round` takes); an entry may be wrapped in ``pytest.param(obj,
        marks=...)`` (e.g. ``pytest.mark.slow``), and its checks carry the marks.

    Returns
    -------
    decorator
        ``pytest.mark.parametrize("obj, check", [...])`` with ids ``"<name>-<check>"``; the
        test body is ``check(obj)``.

    Examples
    --------
    >>> from spectheory.testing import parametrize_with_checks
    >>> mark = parametrize_with_checks(["token"])
    >>> [p.id for p in mark.args[1]][:2]
    ['token-exact_vs_monte_carlo', 'token-exact_vs_enumeration']
    """
    import pytest

    params = [
        pytest.param(obj, check, id=f"{name}-{check.__name__.removeprefix('check_')}", marks=marks)
        for obj, name, marks in _entries(objects)
        for check in checks_for(obj)
    ]
    return pytest.mark.parametrize("obj, check", params)
