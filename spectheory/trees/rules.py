r"""Deprecated functional forms of the tree rules (use the verifier objects).

The tree rules are the classes :class:`~spectheory.verifiers.tree_rules.RecursiveRejectionTree`
and :class:`~spectheory.verifiers.tree_rules.TraversalTree` (:mod:`spectheory.verifiers.tree_rules`,
registered as ``tree_rrs``, ``tree_rrs_wo``, ``tree_topk``, ``traversal``,
``traversal_iid``), the child policies the objects of :mod:`spectheory.verifiers.children`:
``get_verifier("tree_rrs").verify(...)`` replaces ``tree_rule(..., "iid", "rrs")`` and
``.outcome_law(...)`` replaces ``outcome_law(..., policy, rule)``. The functions below stay
one release and raise a ``DeprecationWarning``. The realisation format and the rules'
definitions: :mod:`spectheory.verifiers.tree_base`, :mod:`spectheory.verifiers.tree_rules`.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from ..verifiers.children import ChildPolicy, get_child_policy
from ..verifiers.multidraft import _categorical  # noqa: F401  (kept importable from here)
from ..verifiers.tree_base import TreeVerifier, check_realisation
from ..verifiers.tree_rules import RecursiveRejectionTree, TraversalTree

if TYPE_CHECKING:
    import numpy as np

    from .draft_tree import DraftTree

__all__ = ["slot_law", "outcome_law", "tree_rule", "check_realisation"]

#: Deprecated shorthand -> tree-rule class (the functional forms' ``rule`` argument).
_RULE_CLASSES = {"rrs": RecursiveRejectionTree, "traversal": TraversalTree}
_OLD_CONSTANTS = {"POLICIES": ("iid", "wo", "topk"), "RULES": ("rrs", "traversal")}


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=3)


def _verifier(children: ChildPolicy | str, rule: str) -> TreeVerifier:
    cls = _RULE_CLASSES.get(rule) if isinstance(rule, str) else None
    if cls is None:
        raise ValueError(f"rule: expected one of {tuple(_RULE_CLASSES)}, got {rule!r}")
    return cls(f"{cls.__name__}[{get_child_policy(children).name}]", children)


def slot_law(draft_u: Any, tokens: Any, kids: list, j: int, policy: ChildPolicy | str) -> Any:
    """Deprecated: :meth:`ChildPolicy.slot_law <spectheory.verifiers.children.ChildPolicy.slot_law>`."""
    _warn("spectheory.trees.rules.slot_law", "get_child_policy(...).slot_law(draft_u, tokens, kids, j)")
    return get_child_policy(policy).slot_law(draft_u, tokens, kids, j)


def outcome_law(
    tree: DraftTree,
    tokens: np.ndarray,
    target_laws: np.ndarray,
    draft_laws: np.ndarray,
    policy: str,
    rule: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Deprecated: ``get_verifier(name).outcome_law(tree, tokens, target_laws, draft_laws)``
    (:meth:`spectheory.verifiers.tree_base.TreeVerifier.outcome_law`)."""
    _warn(
        "spectheory.trees.outcome_law",
        "get_verifier(name).outcome_law(tree, tokens, target_laws, draft_laws)",
    )
    return _verifier(policy, rule).outcome_law(tree, tokens, target_laws, draft_laws)


def tree_rule(
    tree: DraftTree,
    tokens: np.ndarray,
    target_laws: np.ndarray,
    draft_laws: np.ndarray,
    u_accept: np.ndarray,
    u_final: np.ndarray,
    policy: str = "iid",
    rule: str = "rrs",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Deprecated: ``get_verifier(name).verify(tree, tokens, target_laws, draft_laws, u_accept,
    u_final)`` (:meth:`spectheory.verifiers.tree_base.TreeVerifier.verify`)."""
    _warn("spectheory.trees.tree_rule", "get_verifier(name).verify(tree, tokens, ...)")
    return _verifier(policy, rule).verify(tree, tokens, target_laws, draft_laws, u_accept, u_final)


def __getattr__(name: str) -> Any:
    if name in _OLD_CONSTANTS:
        _warn(
            f"spectheory.trees.rules.{name}",
            "spectheory.verifiers.list_child_policies() / list_verifiers(trees=True)",
        )
        return _OLD_CONSTANTS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
