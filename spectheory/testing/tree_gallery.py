"""Deliberately buggy tree verifiers the tree kit catches (:data:`TREE_GALLERY`).

Each entry is ``name -> (verify, child policy the kit should draft with)``; the verifiers
are top-down recursive rejection (:class:`~spectheory.verifiers.tree_rules.RecursiveRejectionTree`)
with one deliberate bug, written per row for clarity. p = target, q = draft.

=====================================  ==============================================================
entry                                  bug
=====================================  ==============================================================
``correction_from_target``             after every child is rejected, the token is drawn from
                                       ``p`` instead of the residual
``no_zeroing_before_renormalise``      the residual after a rejection is ``p`` renormalised, the
                                       rejected token not removed (top-k children)
``accepts_child_of_rejected_parent``   a grandchild under a rejected child may still be accepted
``wo_children_checked_against_draft``  distinct (without-replacement) children tested against
                                       ``q``, not the slot law without the earlier siblings
``children_each_against_target``       multi-draft: every child tested against ``p`` itself, as a
                                       single draft would be (no residual between siblings);
                                       out-accepts the multi-draft optimum (``above_optimum``)
=====================================  ==============================================================

:func:`spectheory.testing.tree_plans.coupling_plan_verifier` builds a lossy verifier that out-accepts
the lossless tree optimum on general trees (``above_optimum``), for one instance at a time.

>>> from spectheory.testing.tree_gallery import TREE_GALLERY
>>> sorted(TREE_GALLERY)[0]
'accepts_child_of_rejected_parent'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..children import IID, ChildPolicy, TopK, WithoutReplacement

__all__ = ["TREE_GALLERY", "bug_policy"]


def _rrs_variant(bug: str) -> Callable[..., Any]:
    """Top-down recursive rejection with one deliberate bug (vectorised, per-run loops)."""

    checked_as = IID() if bug == "draft_for_wo" else bug_policy[bug]  # the slot law the rule uses

    def verify(tree, tokens, target_laws, draft_laws, rng):
        R, N = tokens.shape
        node = np.zeros(R, dtype=np.int64)
        token = np.zeros(R, dtype=np.int64)
        for r in range(R):
            u = 0
            while True:
                kids = [c for c in tree.children[u] if tokens[r, c] >= 0]
                res = target_laws[r, u].copy()
                acc = None
                for j, c in enumerate(tree.children[u]):
                    x = tokens[r, c]
                    if x < 0:
                        continue
                    s = checked_as.slot_law(draft_laws[r : r + 1, u], tokens[r : r + 1], tree.children[u], j)[
                        0
                    ]
                    if rng.random() < min(1.0, res[x] / s[x]) if s[x] > 0 else False:
                        acc = c
                        break
                    if bug == "no_zeroing":
                        res = res / res.sum()  # forgot to zero x first
                    elif bug != "target_each":  # target_each: every sibling tested against p
                        ex = np.maximum(res - s, 0.0)
                        res = ex / ex.sum() if ex.sum() > 1e-15 else res
                if acc is None and bug == "orphan" and kids and tree.children[kids[0]]:
                    g = tree.children[kids[0]][0]  # child of a rejected parent
                    t, d = target_laws[r, kids[0]], draft_laws[r, kids[0]]
                    if tokens[r, g] >= 0 and rng.random() < min(1.0, t[tokens[r, g]] / d[tokens[r, g]]):
                        acc = g
                if acc is None:
                    law = target_laws[r, u] if bug == "correction_from_target" else res
                    if bug == "target_each":  # the single-draft residual max(p - q, 0)
                        ex = np.maximum(target_laws[r, u] - draft_laws[r, u], 0.0)
                        law = ex if ex.sum() > 1e-15 else target_laws[r, u]
                    node[r], token[r] = u, rng.choice(law.size, p=law / law.sum())
                    break
                u = acc
                if not tree.children[u]:
                    node[r], token[r] = u, rng.choice(target_laws.shape[2], p=target_laws[r, u])
                    break
        return node, token

    verify.__name__ = f"buggy_{bug}"
    return verify


#: The child policy each bug's trees are drawn with.
bug_policy: dict[str, ChildPolicy] = {
    "correction_from_target": IID(),
    "no_zeroing": TopK(),
    "orphan": IID(),
    "draft_for_wo": WithoutReplacement(),
    "target_each": IID(),
}

#: Buggy tree verifiers: ``name -> (verify, child policy the kit should draft with)``.
TREE_GALLERY: dict[str, tuple[Callable[..., Any], ChildPolicy]] = {
    "correction_from_target": (_rrs_variant("correction_from_target"), IID()),
    "no_zeroing_before_renormalise": (_rrs_variant("no_zeroing"), TopK()),
    "accepts_child_of_rejected_parent": (_rrs_variant("orphan"), IID()),
    "wo_children_checked_against_draft": (_rrs_variant("draft_for_wo"), WithoutReplacement()),
    "children_each_against_target": (_rrs_variant("target_each"), IID()),
}
