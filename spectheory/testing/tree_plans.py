r"""Tree verifiers that follow a plan over one instance's enumerated trees (p = target, q = draft).

* :func:`plan_verifier` -- the optimal lossless verifier: it follows the plan of the lossless
  tree optimum (:func:`spectheory.trees.tree_lp.lossless_tree_optimum`) and accepts that many
  drafts on average;
* :func:`coupling_plan_verifier` -- a lossy one the tree kit flags: it follows the transport
  plan of the coupling bound (:func:`~spectheory.trees.optimum.tree_coupling_bound`), drawing a
  target sequence coupled with the drafted tree, accepting its longest drafted prefix and
  emitting its next token. It accepts the coupling bound on average, but the tokens after it
  are drawn afresh, so it is lossy and, on general trees, accepts more than the lossless tree
  optimum: ``above_optimum`` fails.

Both take the kit's interface ``verify(tree, tokens, target_laws, draft_laws, rng) -> (node,
token)`` (:func:`spectheory.testing.trees.check_tree_verifier`) for trees drafted on the
instance they were built for; :func:`realisation_rows` finds each row's enumerated tree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..kinds.tree.draft_tree import DraftTree
    from ..trees.tree_lp import TreeLPOptimum

__all__ = ["plan_verifier", "coupling_plan_verifier", "realisation_rows"]


def realisation_rows(enumerated: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Index into ``enumerated`` (``[R, N]`` node tokens) of each row of ``tokens``; a
    :class:`ValueError` names ``tokens`` for a row that is not an enumerated realisation."""
    where = {tuple(int(t) for t in row): r for r, row in enumerate(enumerated)}
    out = np.empty(len(tokens), dtype=np.int64)
    for i, row in enumerate(np.asarray(tokens)):
        key = tuple(int(t) for t in row)
        if key not in where:
            raise ValueError(f"tokens: row {i} {list(key)} is not a realisation of positive probability")
        out[i] = where[key]
    return out


def plan_verifier(opt: TreeLPOptimum, tree: DraftTree) -> Any:
    r"""The optimal lossless verifier of one instance: it follows the LP's plan :math:`\pi(e \mid x)`.

    Returns ``verify(tree, tokens, target_laws, draft_laws, rng) -> (node, token)`` (the tree
    kit's interface, :func:`spectheory.testing.trees.check_tree_verifier`) for trees drafted on
    the instance ``opt`` was solved for (from its start state): for each row it draws the
    emission ``e`` with probability :math:`\pi(x, e) / q(x)` and returns a node whose root path
    carries ``e`` without its last token, and that token. Lossless, and its mean accepted
    length is ``opt.value``.

    Examples
    --------
    >>> import numpy as np
    >>> import spectheory as st
    >>> from spectheory.trees import DraftTree
    >>> from spectheory.trees.tree_lp import lossless_tree_optimum
    >>> from spectheory.testing.tree_plans import plan_verifier
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.9, 0.1])
    >>> star = DraftTree.from_branching([2])
    >>> verify = plan_verifier(lossless_tree_optimum(chain, star), star)
    >>> node, token = verify(star, np.array([[-1, 1, 1]]), None, None, np.random.default_rng(0))
    >>> int(node[0]) in (1, 2)            # token 1 is under-drafted: always accepted
    True
    """
    by_row: dict[int, tuple[list, list]] = {}
    for (r, e), w in opt.plan.items():
        by_row.setdefault(r, ([], []))
        by_row[r][0].append(e)
        by_row[r][1].append(w)
    paths = [tree.path_to(u) for u in range(tree.n_nodes)]

    def verify(tree_: Any, tokens: Any, target_laws: Any, draft_laws: Any, rng: np.random.Generator) -> Any:
        rows = realisation_rows(opt.tokens, tokens)
        node = np.zeros(len(rows), dtype=np.int64)
        token = np.zeros(len(rows), dtype=np.int64)
        for i, r in enumerate(rows):
            es, ws = by_row[int(r)]
            cum = np.cumsum(ws)
            e = es[min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")), len(es) - 1)]
            node[i] = next(
                u for u, path in enumerate(paths) if tuple(int(tokens[i, b]) for b in path) == e[:-1]
            )
            token[i] = e[-1]
        return node, token

    return verify


def coupling_plan_verifier(
    chain: Any, tree: Any, children: Any = "iid", start: int = 0
) -> Callable[..., Any]:
    """The (lossy) verifier following the coupling bound's transport plan on one instance (module docstring).

    Returns ``verify(tree, tokens, target_laws, draft_laws, rng) -> (node, token)`` for trees
    of ``tree``'s shape drafted by ``chain`` from ``start`` with ``children``: per row, a target
    prefix ``y`` of ``D`` tokens drawn from the plan's row of the drafted tree, the deepest
    node whose root path is a prefix of ``y``, and ``y``'s next token (a target draw at that
    node when the path has all ``D`` tokens).

    Examples
    --------
    >>> from spectheory.testing.trees import check_tree_verifier, random_tree_instance
    >>> from spectheory.testing.tree_plans import coupling_plan_verifier
    >>> inst = random_tree_instance(20, 2, 4)            # a general tree: neither star nor path
    >>> verify = coupling_plan_verifier(inst[1], inst[2])
    >>> report = check_tree_verifier(verify, "iid", n_samples=2000, rng=3, instances=[inst])
    >>> "above_optimum" in report.failed
    True
    """
    from ..trees.optimum import tree_coupling_bound

    _, sol = tree_coupling_bound(chain, tree, children, start, with_plan=True)
    enumerated, prefixes, plan = sol["tokens"], sol["prefixes"], sol["plan"]
    paths = [tree.path_to(u) for u in range(tree.n_nodes)]
    D = tree.max_depth

    def verify(tree_: Any, tokens: Any, target_laws: Any, draft_laws: Any, rng: np.random.Generator) -> Any:
        rows = realisation_rows(enumerated, tokens)
        node = np.zeros(len(rows), dtype=np.int64)
        token = np.zeros(len(rows), dtype=np.int64)
        for i, r in enumerate(rows):
            cum = np.cumsum(plan[r])
            y = prefixes[min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")), len(cum) - 1)]
            best = 0
            for u, path in enumerate(paths):
                drafted = [int(tokens[i, b]) for b in path]
                if (
                    len(path) > len(paths[best])
                    and min(drafted, default=0) >= 0
                    and drafted == list(y[: len(path)])
                ):
                    best = u
            d = len(paths[best])
            node[i] = best
            law = target_laws[i, best]
            token[i] = int(y[d]) if d < D else int(rng.choice(law.size, p=law / law.sum()))
        return node, token

    verify.__name__ = "coupling_plan"
    return verify
