r"""Tree verifiers as objects: a name, a pure rule, exact per-node laws, a sampler.

A :class:`TreeVerifier` pairs a verification rule (``"rrs"`` top-down recursive rejection,
or ``"traversal"`` leaf-to-root) with a child policy (``"iid"``, ``"wo"``, ``"topk"``; see
:mod:`spectheory.trees.rules`). Registered names:

==================  ===========  ========  ==============================================
name                rule         policy    who uses it
==================  ===========  ========  ==============================================
``tree_rrs``        rrs          iid       SpecInfer (Miao et al. 2024)
``tree_rrs_wo``     rrs          wo        Sequoia (Chen et al. 2024), Jeon et al. 2024
``tree_topk``       rrs          topk      Medusa / EAGLE engines (deterministic top-k)
``traversal``       traversal    wo        Weng et al. 2025 (arXiv 2505.12398)
``traversal_iid``   traversal    iid       traversal on i.i.d. children (same proof)
==================  ===========  ========  ==============================================

The shared ``Verifier`` registry of :mod:`spectheory.verifiers` (``base.py``) describes
single-path rounds (``draft_tokens [R, g]``); a tree verifier takes a whole tree, so
:func:`get_tree_verifier` / :func:`register_tree_verifier` keep a registry of their own.

Examples
--------
>>> from spectheory.trees import get_tree_verifier
>>> v = get_tree_verifier("tree_rrs_wo")
>>> v.rule, v.policy
('rrs', 'wo')
"""

from __future__ import annotations

from dataclasses import dataclass

from .children import draw_children, node_laws
from .rules import POLICIES, RULES, outcome_law, tree_rule

__all__ = ["TreeVerifier", "get_tree_verifier", "register_tree_verifier", "TREE_VERIFIERS"]


@dataclass(frozen=True)
class TreeVerifier:
    """A lossless tree verifier: rule + child policy.

    Attributes
    ----------
    name : str
    rule : {"rrs", "traversal"}
    policy : {"iid", "wo", "topk"}
    """

    name: str
    rule: str
    policy: str

    def __post_init__(self):
        if self.rule not in RULES:
            raise ValueError(f"rule: expected one of {RULES}, got {self.rule!r}")
        if self.policy not in POLICIES:
            raise ValueError(f"policy: expected one of {POLICIES}, got {self.policy!r}")

    @property
    def node_local(self) -> bool:
        """True when the decision at a node depends only on its children's tokens (rrs):
        the fast per-node exact engine applies."""
        return self.rule == "rrs"

    def verify(self, tree, tokens, target_laws, draft_laws, u_accept, u_final):
        """The pure rule (:func:`spectheory.trees.rules.tree_rule`) with this verifier's policy."""
        return tree_rule(tree, tokens, target_laws, draft_laws, u_accept, u_final, self.policy, self.rule)

    def outcome_law(self, tree, tokens, target_laws, draft_laws):
        """Exact outcome law given the drafted tokens (:func:`spectheory.trees.rules.outcome_law`)."""
        return outcome_law(tree, tokens, target_laws, draft_laws, self.policy, self.rule)

    def node_laws(self, target, draft, k):
        """Exact per-node laws ``(accept [k, S, V], residual [S, V])`` (rrs only);
        see :func:`spectheory.trees.children.node_laws`."""
        if not self.node_local:
            raise ValueError(f"verifier: {self.name!r} is not node-local; use the enumeration engine")
        return node_laws(target, draft, k, self.policy)

    def sample_children(self, draft_rows, k, rng):
        """Draw ``k`` children per row of ``draft_rows [R, V]``; see
        :func:`spectheory.trees.simulate.draw_children`."""
        import numpy as np

        rng = np.random.default_rng(rng)
        return draw_children(draft_rows, k, self.policy, rng)


TREE_VERIFIERS: dict = {}


def register_tree_verifier(verifier: TreeVerifier):
    """Add ``verifier`` to the tree registry; returns it."""
    if not isinstance(verifier, TreeVerifier):
        raise ValueError(f"verifier: expected a TreeVerifier, got {type(verifier).__name__}")
    TREE_VERIFIERS[verifier.name] = verifier
    return verifier


def get_tree_verifier(verifier) -> TreeVerifier:
    """A :class:`TreeVerifier` from itself or its registered name."""
    if isinstance(verifier, TreeVerifier):
        return verifier
    if verifier not in TREE_VERIFIERS:
        raise ValueError(
            f"verifier: unknown tree verifier {verifier!r}; expected one of {sorted(TREE_VERIFIERS)}"
        )
    return TREE_VERIFIERS[verifier]


for _name, _rule, _policy in [
    ("tree_rrs", "rrs", "iid"),
    ("tree_rrs_wo", "rrs", "wo"),
    ("tree_topk", "rrs", "topk"),
    ("traversal", "traversal", "wo"),
    ("traversal_iid", "traversal", "iid"),
]:
    register_tree_verifier(TreeVerifier(_name, _rule, _policy))

#: On a single path recursive rejection sampling is token verification, so the single-path
#: default name also works for trees (``chain.protocol(T, tree=..., verifier="token")``).
TREE_VERIFIERS["token"] = TREE_VERIFIERS["tree_rrs"]
