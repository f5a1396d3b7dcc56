"""Round arguments and their shorthands -> one :class:`~spectheory.rounds.Round`.

An ``int`` is a path round's ``gamma``. Any other shorthand is declared by the round kind that
takes it, on its class (the shorthand's own room sits below the round's, so the declaration
lives with the round, and this room imports neither):

- ``shorthand``: the type of object the kind accepts (``DraftTree`` for
  :class:`~spectheory.trees.TreeRound`, ``Policy`` for :class:`~spectheory.stopping.PolicyRound`);
- ``round_keyword``: the keyword of :func:`as_round` that may also carry it (``"tree"``,
  ``"policy"``; ``None``: only the positional ``round``);
- ``from_shorthand(obj, verifier)``: a classmethod returning the round (``verifier`` may be
  ``None``: the kind's default).

:func:`as_round` finds the kind among the subclasses of :class:`~spectheory.rounds.Round` whose
own class body declares a ``shorthand`` the object is an instance of (the most specific type of
the object's MRO first), so a kind defined in a user's file gets its shorthand the same way.

Examples
--------
>>> from spectheory.kinds import as_round
>>> as_round(4)
PathRound(gamma=4, verifier='token')
>>> as_round(gamma=3, verifier="block").name
'path(gamma=3, verifier=block)'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..rounds.base import Round
from .path.round import PathRound

__all__ = ["as_round", "round_for"]

_KEYWORDS = ("round", "gamma", "tree", "policy")


def _kinds(cls: type) -> list[type]:
    """Every subclass of ``cls`` (depth first, each once)."""
    out: list[type] = []
    subs: list[type] = cls.__subclasses__()
    for sub in subs:
        if sub not in out:
            out.append(sub)
            out += [k for k in _kinds(sub) if k not in out]
    return out


def _shorthand_kind(obj: Any) -> type | None:
    """The round kind that declares ``type(obj)`` (or its nearest base) as its ``shorthand``."""
    kinds = [k for k in _kinds(Round) if isinstance(k.__dict__.get("shorthand"), type)]
    for base in type(obj).__mro__:
        for kind in kinds:
            if kind.__dict__["shorthand"] is base:
                return kind
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
    ``DraftTree`` (a tree round), a draft-length ``Policy`` (a policy round) or any object a
    round kind declares as its ``shorthand`` (module docstring); ``gamma=``, ``tree=`` and
    ``policy=`` say the same by keyword. ``verifier`` picks the verifier of a path or tree round
    (default ``"token"`` / ``"tree_rrs"``). Exactly one of them must be given.

    Raises
    ------
    ValueError
        None or more than one given, a verifier beside a ready-made round or a policy, or an
        argument of the wrong type for its keyword.

    Examples
    --------
    >>> from spectheory.kinds import as_round
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
    kind = None if key == "gamma" else _shorthand_kind(obj)
    if kind is None or key not in ("round", getattr(kind, "round_keyword", None)):
        raise ValueError(
            f"{key}: expected a draft length (int), a DraftTree, a draft-length Policy or a Round, "
            f"got {type(obj).__name__}"
        )
    rnd: Round = kind.from_shorthand(obj, verifier)  # type: ignore[attr-defined]
    return rnd


def round_for(
    engine: str, round: Any, options: Mapping[str, Any], fixed: Iterable[str], caller: str
) -> Round:
    """What every engine entry point does first: turn ``round`` into a :class:`Round`
    (:func:`as_round`), refuse the ``options`` that the round already fixes, and ask the round
    whether it runs in ``engine`` (:meth:`Round.require <spectheory.rounds.Round.require>`).

    Parameters
    ----------
    engine : str
        One of :data:`spectheory.rounds.ENGINES` (``"decoder"``, ``"kit"``, ...).
    round : Round, int, DraftTree or Policy
        Anything :func:`as_round` accepts.
    options : mapping
        The entry point's other keyword options.
    fixed : iterable of str
        The option names a round fixes for this engine (e.g. ``gamma``, ``tree``).
    caller : str
        The entry point's name, for the message.

    Raises
    ------
    UnsupportedRoundError
        The round declares (:meth:`~spectheory.rounds.Round.tags`) that ``engine`` cannot run
        it; the message names the round and the reason. A ``ValueError``.
    ValueError
        ``round`` is not a round, or ``options`` repeat what it fixes.

    Examples
    --------
    >>> round_for("kit", 3, {"n_samples": 10}, ("gammas",), "check_round")
    PathRound(gamma=3, verifier='token')
    >>> round_for("kit", 3, {"gammas": (2,)}, ("gammas",), "check_round")
    Traceback (most recent call last):
    ...
    ValueError: round: the round fixes gammas; do not pass them to check_round
    """
    rnd = as_round(round)
    fixed = set(fixed)
    repeated = sorted(k for k in options if k in fixed)
    if repeated:
        raise ValueError(f"round: the round fixes {', '.join(repeated)}; do not pass them to {caller}")
    rnd.require(engine)
    return rnd
