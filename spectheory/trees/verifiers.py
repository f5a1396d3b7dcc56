r"""Tree verifiers in the tree room: the classes of :mod:`spectheory.verifiers.tree_rules`
and deprecated wrappers of the former second registry.

A tree verifier is a :class:`~spectheory.verifiers.Verifier` that accepts trees
(:class:`TreeVerifier`; the rule is its class, :class:`RecursiveRejectionTree` or
:class:`TraversalTree`, the child policy its ``children``), registered in the one registry
of :mod:`spectheory.verifiers.base`:

==================  ==========================  ==========================  ==========================================
name                class                       children                    who uses it
==================  ==========================  ==========================  ==========================================
``tree_rrs``        RecursiveRejectionTree      IID                         SpecInfer (Miao et al. 2024)
``tree_rrs_wo``     RecursiveRejectionTree      WithoutReplacement          Sequoia (Chen et al. 2024), Jeon et al.
``tree_topk``       RecursiveRejectionTree      TopK                        Medusa / EAGLE engines (top-k)
``traversal``       TraversalTree               WithoutReplacement          Weng et al. 2025 (arXiv 2505.12398)
``traversal_iid``   TraversalTree               IID                         traversal on i.i.d. children
==================  ==========================  ==========================  ==========================================

``get_verifier(name)`` returns any of them; ``get_verifier("token").for_tree()`` is
``tree_rrs`` (token verification's tree form). :func:`get_tree_verifier`,
:func:`register_tree_verifier` and ``TREE_VERIFIERS`` are deprecated (one release).

Examples
--------
>>> from spectheory.verifiers import get_verifier
>>> v = get_verifier("tree_rrs_wo")
>>> type(v).__name__, v.children.name, v.accepts_trees
('RecursiveRejectionTree', 'wo', True)
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from ..verifiers.base import get_verifier, list_verifiers, register_verifier
from ..verifiers.tree_base import TreeVerifier
from ..verifiers.tree_rules import RecursiveRejectionTree, TraversalTree

if TYPE_CHECKING:
    from .._protocols import TreeRule
    from ..verifiers.base import Verifier

__all__ = [
    "TreeVerifier",
    "RecursiveRejectionTree",
    "TraversalTree",
    "get_tree_verifier",
    "register_tree_verifier",
]


def register_tree_verifier(verifier: TreeVerifier) -> TreeVerifier:
    """Deprecated: :func:`spectheory.verifiers.register_verifier` (one registry)."""
    warnings.warn(
        "register_tree_verifier is deprecated; use spectheory.verifiers.register_verifier",
        DeprecationWarning,
        stacklevel=2,
    )
    if not isinstance(verifier, TreeVerifier):
        raise ValueError(f"verifier: expected a TreeVerifier, got {type(verifier).__name__}")
    return register_verifier(verifier, replace=True)


def get_tree_verifier(verifier: str | Verifier) -> TreeRule:
    """Deprecated: ``get_verifier(verifier).for_tree()`` (one registry)."""
    warnings.warn(
        "get_tree_verifier is deprecated; use spectheory.verifiers.get_verifier(name).for_tree()",
        DeprecationWarning,
        stacklevel=2,
    )
    return get_verifier(verifier).for_tree()


def _tree_verifiers() -> dict:
    out: dict[str, Verifier | TreeRule] = {name: get_verifier(name) for name in list_verifiers(trees=True)}
    out["token"] = get_verifier("token").for_tree()
    return out


def __getattr__(name: str) -> Any:
    if name == "TREE_VERIFIERS":
        warnings.warn(
            "TREE_VERIFIERS is deprecated; use spectheory.verifiers.list_verifiers(trees=True) and get_verifier",
            DeprecationWarning,
            stacklevel=2,
        )
        return _tree_verifiers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
