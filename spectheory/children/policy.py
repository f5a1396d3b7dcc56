"""The child-policy interface and its registry: what every engine asks a child policy.

A :class:`ChildPolicy` fixes the joint law of the ``k`` children of a draft-tree node (drawn
from the draft law ``q`` after the node); :func:`register_child_policy` makes one available by
its shorthand and :func:`get_child_policy` resolves a shorthand at the API boundary. The
policies themselves (:class:`~spectheory.children.IID`,
:class:`~spectheory.children.WithoutReplacement`,
:class:`~spectheory.children.TopK`) and their slot laws are described in
:mod:`spectheory.children`, which registers them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._guards import check_int

__all__ = [
    "ChildPolicy",
    "CHILD_POLICIES",
    "get_child_policy",
    "register_child_policy",
    "list_child_policies",
]


def _safe_div(num, den):
    """``num / den`` where ``den > 0``, else 0 (works on float and Fraction object arrays)."""
    pos = den > 0
    return np.where(pos, num / np.where(pos, den, 1), 0)


@dataclass(frozen=True)
class ChildPolicy:
    """Base class of child policies (:mod:`spectheory.children`); instances compare by class.

    Subclasses set ``name`` (the registry shorthand) and implement :meth:`draw`,
    :meth:`node_laws`, :meth:`slot_law`, :meth:`next_child_law` and :meth:`torch_draw`;
    :meth:`force` is optional (importance forcing in the decoder validation), and so is
    :meth:`torch_slot_law` (recursive rejection on the decoder's device; declared by
    :attr:`has_torch_slot_law`).
    """

    #: Registry shorthand (``get_child_policy(name)``) and the label results carry.
    name = "child-policy"

    def draw(self, draft_rows: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """``k`` children per row of ``draft_rows [R, V]``: int64 ``[R, k]`` (``-1`` = not drafted)."""
        raise NotImplementedError(f"child policy {self.name!r}: define draw (Monte Carlo)")

    def node_laws(self, target: Any, draft: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        r"""Exact per-node laws of recursive rejection with ``k`` children, per state.

        Parameters
        ----------
        target, draft : array, shape (S, V)
        k : int >= 1

        Returns
        -------
        accept : ndarray, shape (k, S, V)
            ``accept[j, s, x]`` = P(child slot ``j`` is accepted and has token ``x``).
        residual : ndarray, shape (S, V)
            ``residual[s, y]`` = P(all children rejected and correction ``y``);
            ``accept.sum(0) + residual == target`` (losslessness at a node).
        """
        raise NotImplementedError(f"child policy {self.name!r}: define node_laws (exact engine)")

    def slot_law(self, draft_u: Any, tokens: np.ndarray, kids: list, j: int) -> Any:
        """Law ``s_j [R, V]`` of the ``j``-th child (node ``kids[j]``) of a node whose draft law
        is ``draft_u [R, V]``, given the drafted ``tokens [R, N]`` (float or Fraction arrays)."""
        raise NotImplementedError(f"child policy {self.name!r}: define slot_law (tree rules)")

    def torch_slot_law(self, draft_u: Any, tokens: Any, kids: list, j: int) -> Any:
        """:meth:`slot_law` in torch: ``s_j [R, V]`` from ``draft_u [R, V]`` (float64) and the
        drafted ``tokens [R, N]`` (``-1``: not drafted), on their device; what
        :func:`~spectheory.verifiers.tree_torch.recursive_rejection_torch` runs. Optional (see
        :attr:`has_torch_slot_law`)."""
        raise ValueError(f"children: no torch slot law for {type(self).__name__} (define torch_slot_law)")

    @property
    def has_torch_slot_law(self) -> bool:
        """Whether the policy declares a torch form of its slot law: :meth:`torch_slot_law` is
        defined by the class that defines :meth:`slot_law` or by a subclass of it (a subclass
        that changes the slot law without its torch form has none).

        Examples
        --------
        >>> from spectheory.children import IID
        >>> class Shifted(IID):
        ...     def slot_law(self, draft_u, tokens, kids, j):
        ...         return draft_u
        >>> IID().has_torch_slot_law, Shifted().has_torch_slot_law
        (True, False)
        """
        mro = type(self).__mro__
        torch_owner = next(c for c in mro if "torch_slot_law" in c.__dict__)
        law_owner = next(c for c in mro if "slot_law" in c.__dict__)
        return torch_owner is not ChildPolicy and issubclass(torch_owner, law_owner)

    def next_child_law(self, draft_u: Any, tokens: np.ndarray, siblings: list) -> Any:
        """Law ``[R, V]`` of the next child's token given its earlier ``siblings``' tokens (the
        child's own token still unknown: the enumeration engine branches over it)."""
        raise NotImplementedError(f"child policy {self.name!r}: define next_child_law (enumeration)")

    def node_law_paths(self, V: int, k: int) -> int:
        """Rejected prefixes :meth:`node_laws` enumerates per state (a cost hint; 1 = closed form)."""
        return 1

    def torch_draw(self, parent_laws: Any, p: int, j: int, u: Any, ok: Any, cache: dict) -> tuple[Any, Any]:
        """The real decoder's draw of slot ``j`` under parent ``p`` of one level (torch).

        ``parent_laws [B, n, V]`` are the draft laws of the level's parents, ``u [B]`` the
        node's uniforms, ``ok [B]`` whether the parent is drafted; ``cache`` is one dict per
        level (what earlier siblings left). Returns ``(tokens [B], ok [B])``.
        """
        raise NotImplementedError(f"child policy {self.name!r}: define torch_draw (real decoder)")

    def force(
        self, q: np.ndarray, forced: np.ndarray, group: int, slot: int, rng: np.random.Generator
    ) -> tuple[dict, np.ndarray]:
        r"""Force token ``forced [B]`` onto slot ``slot`` of a sibling group of ``group`` children
        drawn from ``q [B, V]``, with importance weights (:mod:`spectheory.validation.tree_forced`).

        Returns ``(tokens, log_weight)``: ``tokens`` maps slot -> int array ``[B]`` (the slots to
        overwrite), ``log_weight [B]`` is ``log P(siblings) - log Q(siblings)``.
        """
        raise ValueError(f"children: forcing a branch needs 'iid' or 'wo' children, got {self.name!r}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _node_args(target, draft, k):
    t = np.atleast_2d(np.asarray(target, dtype=np.float64))
    d = np.atleast_2d(np.asarray(draft, dtype=np.float64))
    return t, d, check_int(k, "k", 1)


#: The registered child policies by shorthand.
CHILD_POLICIES: dict[str, ChildPolicy] = {}


def register_child_policy(policy: ChildPolicy, *, replace: bool = False) -> ChildPolicy:
    """Make ``policy`` available by its ``name``; returns it."""
    if not isinstance(policy, ChildPolicy):
        raise ValueError(f"children: expected a ChildPolicy instance, got {type(policy).__name__}")
    if policy.name in CHILD_POLICIES and CHILD_POLICIES[policy.name] != policy and not replace:
        raise ValueError(f"children: the name {policy.name!r} is already registered (pass replace=True)")
    CHILD_POLICIES[policy.name] = policy
    return policy


def get_child_policy(children: ChildPolicy | str) -> ChildPolicy:
    """A :class:`ChildPolicy` from itself or its shorthand (``"iid"``, ``"wo"``, ``"topk"``).

    Examples
    --------
    >>> from spectheory.children import TopK, get_child_policy
    >>> get_child_policy("topk") == TopK(), get_child_policy(TopK()).name
    (True, 'topk')
    """
    if isinstance(children, ChildPolicy):
        return children
    if isinstance(children, str) and children in CHILD_POLICIES:
        return CHILD_POLICIES[children]
    raise ValueError(f"children: expected a ChildPolicy or one of {sorted(CHILD_POLICIES)}, got {children!r}")


def list_child_policies() -> list[str]:
    """Shorthands of the registered child policies."""
    return sorted(CHILD_POLICIES)
