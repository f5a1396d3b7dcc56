r"""Tree verifiers in the tree room: the classes of :mod:`spectheory.verifiers.tree_rules`.

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
``tree_rrs`` (token verification's tree form).

Examples
--------
>>> from spectheory.verifiers import get_verifier
>>> v = get_verifier("tree_rrs_wo")
>>> type(v).__name__, v.children.name, v.accepts_trees
('RecursiveRejectionTree', 'wo', True)
"""

from ..verifiers.tree_base import TreeVerifier
from ..verifiers.tree_rules import RecursiveRejectionTree, TraversalTree

__all__ = ["TreeVerifier", "RecursiveRejectionTree", "TraversalTree"]
