"""Round arguments and their shorthands -> one :class:`~spectheory.rounds.Round`.

An ``int`` is a path round's ``gamma``. Other types register a factory with
:func:`register_round_shorthand` under the keyword that names them (``tree=`` for a
``DraftTree``, ``policy=`` for a draft-length policy): the rooms that define them
(:mod:`spectheory.trees`, :mod:`spectheory.stopping`) sit above this one, so this room never
imports them.

Examples
--------
>>> from spectheory.rounds import as_round
>>> as_round(4)
PathRound(gamma=4, verifier='token')
>>> as_round(gamma=3, verifier="block").name
'path(gamma=3, verifier=block)'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import numpy as np

from .base import Round
from .path import PathRound

__all__ = ["as_round", "register_round_shorthand", "round_handler"]

_SHORTHANDS: dict[type, tuple[str, Callable[..., Round]]] = {}
_KEYWORDS = ("round", "gamma", "tree", "policy")


def register_round_shorthand(cls: type, keyword: str, factory: Callable[..., Round]) -> None:
    """Let :func:`as_round` (so ``st.simulate`` and ``chain.protocol``) accept instances of ``cls``.

    ``keyword`` is the shorthand keyword that may also carry them (``"tree"`` or ``"policy"``);
    ``factory(obj, verifier)`` returns the round (``verifier`` may be None: the round's default).
    """
    if not isinstance(cls, type) or not callable(factory):
        raise ValueError("register_round_shorthand: expected a class and a callable factory")
    if keyword not in _KEYWORDS[2:]:
        raise ValueError(f"keyword: expected one of {_KEYWORDS[2:]}, got {keyword!r}")
    _SHORTHANDS[cls] = (keyword, factory)


def _shorthand(obj: Any) -> tuple[str, Callable[..., Round]] | None:
    for cls in type(obj).__mro__:
        if cls in _SHORTHANDS:
            return _SHORTHANDS[cls]
    return None


def as_round(
    round: Any = None,
    *,
    gamma: int | None = None,
    tree: Any = None,
    policy: Any = None,
    verifier: Any = None,
) -> Round:
    """The :class:`~spectheory.rounds.Round` meant by a round argument or one of its shorthands.

    ``round`` may be a ``Round`` (returned as it is), an ``int`` (a path round's ``gamma``), a
    ``DraftTree`` (a tree round) or a draft-length ``Policy`` (a policy round); ``gamma=``,
    ``tree=`` and ``policy=`` say the same by keyword. ``verifier`` picks the verifier of a path
    or tree round (default ``"token"`` / ``"tree_rrs"``). Exactly one of them must be given.

    Raises
    ------
    ValueError
        None or more than one given, a verifier beside a ready-made round or a policy, or an
        argument of the wrong type for its keyword.

    Examples
    --------
    >>> from spectheory.rounds import as_round
    >>> as_round(2, verifier="block").verifier_name
    'block'
    >>> as_round(2, gamma=3)
    Traceback (most recent call last):
    ...
    ValueError: round: give exactly one of round, gamma, tree, policy (got round, gamma)
    """
    values = (round, gamma, tree, policy)
    given = [(k, v) for k, v in zip(_KEYWORDS, values) if v is not None]
    if len(given) != 1:
        got = ", ".join(k for k, _ in given) if given else "none"
        raise ValueError(f"round: give exactly one of round, gamma, tree, policy (got {got})")
    key, obj = given[0]
    if isinstance(obj, Round):
        if key != "round":
            raise ValueError(f"{key}: got a ready-made {type(obj).__name__}; pass it as the round")
        if verifier is not None:
            raise ValueError(
                f"verifier: the round {obj.name} carries its verifier; leave verifier unset "
                "or build the round with the verifier"
            )
        return obj
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
        if key not in ("round", "gamma"):
            raise ValueError(f"{key}: got the int {obj!r}; a draft length is gamma")
        return PathRound(int(obj), "token" if verifier is None else verifier)
    found = _shorthand(obj)
    if found is None or key == "gamma" or key not in ("round", found[0]):
        raise ValueError(
            f"{key}: expected a draft length (int), a DraftTree, a draft-length Policy or a Round, "
            f"got {type(obj).__name__}"
        )
    return found[1](obj, verifier)


H = TypeVar("H")


def round_handler(
    round: Any,
    handlers: Mapping[type, H],
    options: Iterable[str],
    fixed_args: Iterable[str],
    caller: str,
    does: str,
) -> tuple[Round, H]:
    """``as_round(round)`` and its handler: the entry of ``handlers`` for the first class of its MRO.

    The one dispatch of the entry points that play a round of any kind (the decoder's
    ``generate``, the kit's ``check_round``). ``options`` are the caller's other keyword
    arguments; those in ``fixed_args`` are what the round itself fixes and are refused.

    Raises
    ------
    ValueError
        ``options`` repeat an argument the round fixes (the message names ``caller``), or no
        handler takes the round's kind (the message says what the caller ``does``).

    Examples
    --------
    >>> from spectheory.rounds import PathRound
    >>> rnd, h = round_handler(3, {PathRound: "path"}, (), ("gamma",), "f", "f runs")
    >>> rnd.gamma, h
    (3, 'path')
    """
    fixed = sorted(k for k in options if k in set(fixed_args))
    if fixed:
        raise ValueError(f"round: the round fixes {', '.join(fixed)}; do not pass them to {caller}")
    rnd = as_round(round)
    handler = next((handlers[c] for c in type(rnd).__mro__ if c in handlers), None)
    if handler is None:
        raise ValueError(f"round: {does} path, policy, tree and batch rounds, got {type(rnd).__name__}")
    return rnd, handler
