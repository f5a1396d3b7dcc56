r"""Instances of the tree kit: fixed ones, random ones from a seed, and the kit's tree drafting.

An instance is ``(name, chain, tree)``: a first-order :class:`~spectheory.DecodingChain`
(state = last token; the round starts in state 0) and a :class:`~spectheory.trees.DraftTree`.
:func:`tree_instances` are the kit's default ones; :func:`random_tree_instance` builds one
from an integer seed, a vocabulary size, a node count and a law shape
(:data:`~spectheory.testing.trees.TREE_KINDS`: exact zeros, one-hots, peaked laws, exact ties), so
that a failing case shrinks (hypothesis: :func:`spectheory.testing.strategies.tree_kit_instances`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._guards import check_int
from ..trees import DraftTree
from .instances import dyadic_law, tied_pair
from .random_laws import LAW_KINDS, random_law

__all__ = ["tree_instances", "random_tree_instance", "draft_trees", "TREE_KINDS"]

#: Law shapes of :func:`random_tree_instance`: :data:`~spectheory.testing.random_laws.LAW_KINDS`
#: and ``"ties"`` (dyadic target rows, each draft row its target row with two tokens' values
#: swapped: ``p/q`` exactly 1 on the other tokens).
TREE_KINDS = (*LAW_KINDS, "ties")


def tree_instances() -> list:
    """Kit instances: ``(name, chain, tree)``, first-order chains over 3 and 5 tokens."""
    import spectheory as st

    far = st.DecodingChain.from_matrices(
        [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]],
        [[0.1, 0.3, 0.6], [0.6, 0.2, 0.2], [0.4, 0.5, 0.1]],
    )
    near = st.DecodingChain.random(3, concentration=1.0, similarity=0.6, rng=3)
    wide = st.DecodingChain.random(5, concentration=0.5, rng=3)
    return [
        ("far, [2, 1]", far, DraftTree.from_branching([2, 1])),
        ("V=5, [3]", wide, DraftTree.from_branching([3])),
        ("far, [3]", far, DraftTree.from_branching([3])),
        ("near, [1, 1]", near, DraftTree.from_branching([1, 1])),
        ("near, mixed", near, DraftTree.from_parents([-1, 0, 1, 0])),
    ]


def random_tree_instance(
    seed: int, vocab_size: int = 3, n_nodes: int = 3, kind: str = "dirichlet"
) -> tuple[str, Any, DraftTree]:
    """A random ``(name, chain, tree)`` from ``seed``: ``n_nodes`` drafted nodes, ``V`` tokens.

    The tree's parents are uniform (``parents[i]`` uniform on ``0..i-1``); every row of the
    target and of the draft is a :func:`~spectheory.testing.random_laws.random_law` of
    ``kind`` (the target's of state 0 always Dirichlet, so the round has somewhere to go), or
    exact ties (``kind="ties"``, :data:`~spectheory.testing.trees.TREE_KINDS`).
    Smaller ``seed``, ``V`` and ``n_nodes`` give simpler cases.

    Examples
    --------
    >>> from spectheory.testing.trees import check_tree_verifier, random_tree_instance, reference_tree_verify
    >>> inst = random_tree_instance(0, 3, 3, "zeros")
    >>> inst[0], inst[2].size
    ('random(seed=0, V=3, nodes=3, zeros)', 3)
    >>> check_tree_verifier(reference_tree_verify("tree_rrs"), "iid", n_samples=500, rng=0, instances=[inst]).passed
    True
    """
    import spectheory as st

    seed = check_int(seed, "seed", 0)
    V = check_int(vocab_size, "vocab_size", 2)
    n = check_int(n_nodes, "n_nodes", 1)
    if kind not in TREE_KINDS:
        raise ValueError(f"kind: unknown {kind!r}; choose from {TREE_KINDS}")
    rng = np.random.default_rng([seed, V, n, TREE_KINDS.index(kind)])
    parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n + 1)]
    if kind == "ties":
        target = np.array([dyadic_law(rng, V) for _ in range(V)])
        draft = np.array([tied_pair(row, rng) for row in target])
    else:
        target = np.array([random_law(rng, V, "dirichlet" if s == 0 else kind) for s in range(V)])
        draft = np.array([random_law(rng, V, kind) for _ in range(V)])
    chain = st.DecodingChain.from_matrices(target, draft)
    return f"random(seed={seed}, V={V}, nodes={n}, {kind})", chain, DraftTree.from_parents(parents)


def draft_trees(
    chain: Any, tree: DraftTree, children: Any, R: int, rng: np.random.Generator, s0: int = 0
) -> tuple:
    """``R`` trees drafted from state ``s0``: ``(tokens [R, N], states [R, N], target_laws, draft_laws [R, N, V])``."""
    chain.require_deterministic("the tree-verifier kit")
    N = tree.n_nodes
    tok = np.full((R, N), -1, dtype=np.int64)
    st_ = np.full((R, N), s0, dtype=np.int64)
    ok = np.zeros((R, N), dtype=bool)
    ok[:, 0] = True
    for u in range(N):
        kids = tree.children[u]
        if kids:
            x = children.draw(chain.draft[st_[:, u]], len(kids), rng)
            for j, c in enumerate(kids):
                ok[:, c] = ok[:, u] & (x[:, j] >= 0)
                tok[:, c] = np.where(ok[:, c], x[:, j], -1)
                st_[ok[:, c], c] = chain.next_state[st_[ok[:, c], u], x[ok[:, c], j]]
    return tok, st_, chain.target[st_], chain.draft[st_]
