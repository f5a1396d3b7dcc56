r"""Exact tree speculative decoding on a chain: the protocol's expectations, per node.

Notation: p = target, q = draft. The tree protocol (docs/trees.md): a round starts at a
prefix with ``n < T`` tokens; the draft tree is truncated to depth ``k = min(depth, T - n)``;
the target scores every node in one call; the verifier returns an accepted path ending at
node ``v`` (depth ``j``). If ``v`` had drafted children (all rejected) one correction token
is emitted; if ``v`` is a leaf and ``n + j < T``, a bonus token from ``p`` is emitted
(``bonus=True``) or nothing (``bonus=False``). Counted: ``target_calls`` (rounds),
``rejections`` (rounds that emitted a correction), ``draft_tokens`` (tree nodes within
the truncated depth), ``accepted`` (accepted path lengths), the law of a round's accepted
length, and ``tokens_per_call = T / E[target_calls]``.

**Per-node engine** (node-local rules, i.e. ``rrs`` with any child policy). At a node in
state ``s`` with ``k`` children the rule accepts slot ``j`` with token ``x`` with mass
``A_j(s, x)`` and emits a correction ``y`` with mass ``R(s, y)``; the subtree under the
accepted child is drafted afresh from its token's state, so the round is a branching
recursion over tree nodes. Propagating the round-start mass vector through the nodes
(``m_c = m_u A_j`` pushed through ``next_state``) gives every expectation at a cost of
``O(nodes * S * V)`` per round start. For ``"iid"`` the laws are closed-form
(``A_j = reach_j min(r_j, q)``, ``reach_{j+1} = reach_j (1 - sum min(r_j, q))``), for
``"topk"`` ``A_j(s, x) = p(s, x) [x = top_j(s)]`` (the telescoping product of the
renormalisations), for ``"wo"`` an enumeration of rejected candidates (small ``V``).
Non-local rules (traversal) use :mod:`spectheory.kinds.tree.enumerate`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from ..._guards import check_int
from ..._progress import progress_range
from ..._sizes import PROGRESS_SECONDS
from ...exact.parts import blas_single_thread, check_engine_size
from ...verifiers.base import get_verifier
from .accumulate import TreeProtocolResult, _Accumulator, _result
from .draft_tree import DraftTree
from .enumerate import enumerated_forward

if TYPE_CHECKING:
    from ..._protocols import ChainLike, TreeRule
    from .draft_tree import DraftTree

__all__ = ["TreeProtocolResult", "tree_protocol", "tree_round_law"]


def _check_tree(tree):
    if not isinstance(tree, DraftTree):
        raise ValueError(f"tree: expected a DraftTree, got {type(tree).__name__}")
    return tree


def _node_forward(chain, T, tree, verifier, bonus, init, stop, start=0, seconds=0.0):
    """Per-node engine over round starts ``start..stop-1``; ``init`` is ``[S]`` or ``[B, S]``."""
    acc = _Accumulator(T, tree.max_depth, init, start)
    cache: dict = {}
    starts: Iterable[int] = range(start, stop)
    if seconds > PROGRESS_SECONDS:  # estimated by tree_protocol's size check: a bar over round starts
        starts = (start + i for i in progress_range(stop - start, "tree recursion", show=True, unit="pos"))
    for n0 in starts:
        m0 = acc.starts[n0]
        if np.any(m0):
            push_round(acc, chain, T, tree, verifier, bonus, n0, m0, cache)
    return acc


def push_round(acc, chain, T, tree, verifier, bonus, n0, m0, cache):
    """Push the round-start mass ``m0`` (``[S]`` or ``[B, S]``) at position ``n0`` through one
    round of ``tree`` (per-node engine), adding to ``acc``; ``cache`` holds the node operators.

    Level by level, the masses of all nodes with the same number of children are stacked
    and pushed through each slot's operator in one matrix product. A dynamic tree
    (:mod:`.dynamic`) pushes each group of start states that drafts the same tree.
    """
    hom = chain.is_homogeneous
    levels = [np.flatnonzero(tree.depth == d) for d in range(tree.max_depth + 1)]
    nkids = tree.n_children
    kids_of = tree.children
    k = min(tree.max_depth, T - n0)
    acc.drafted += m0.sum(-1) * tree.nodes_within(k)
    mass = {0: m0}
    for d in range(k + 1):
        nodes = [int(u) for u in levels[d] if int(u) in mass]
        if not nodes:
            break
        tot = sum(mass[u] for u in nodes).sum(-1)
        if d:
            acc.accepted += tot
        if n0 + d == T:  # horizon reached: nothing more emitted
            acc.length[d] += tot
            break
        n = n0 + d
        groups: dict = {}
        for u in nodes:
            groups.setdefault(int(nkids[u]), []).append(u)
        for nk, us in groups.items():
            stack = np.stack([mass.pop(u) for u in us])  # [G, (B,) S]
            if nk == 0:
                acc.length[d] += stack.sum(0).sum(-1)
                if bonus:
                    acc.starts[n + 1] += np.asarray(stack.sum(0) @ chain.target_operator(n))
                else:
                    acc.starts[n] += stack.sum(0)
                continue
            key = (0 if hom else n, nk)
            if key not in cache:
                t, dr = chain.kernels(n)
                A, Rm = verifier.node_laws(t, dr, nk)
                cache[key] = (
                    [chain.transition_operator(a) for a in A],
                    chain.transition_operator(Rm),
                    Rm.sum(-1),
                )
            ops, rop, rmass = cache[key]
            flat = stack.reshape(-1, stack.shape[-1])
            for j in range(nk):
                moved = np.asarray(flat @ ops[j]).reshape(stack.shape)
                for g, u in enumerate(us):
                    mass[kids_of[u][j]] = moved[g]
            summed = stack.sum(0)
            rej = summed @ rmass
            acc.reject(n, rej)
            acc.length[d] += rej
            acc.starts[n + 1] += np.asarray(summed @ rop)


def tree_protocol(
    chain: ChainLike,
    horizon: int,
    tree: DraftTree,
    verifier: str | TreeRule = "tree_rrs",
    bonus: bool = True,
    method: str = "auto",
) -> TreeProtocolResult:
    r"""Exact expectations of tree speculative decoding over ``horizon`` tokens.

    Parameters
    ----------
    chain : DecodingChain
    horizon : int >= 1
    tree : DraftTree
    verifier : str or TreeVerifier
        ``"tree_rrs"``, ``"tree_rrs_wo"``, ``"tree_topk"``, ``"traversal"``, ...
    bonus : bool
        Emit a target token after an accepted leaf (default; the protocol of docs/protocol.md).
    method : {"auto", "nodes", "enumerate"}
        ``"nodes"``: the per-node engine (rrs rules); ``"enumerate"``: enumerate every draft
        tree (any rule; small ``V`` and trees); ``"auto"`` picks ``"nodes"`` when it applies.

    Returns
    -------
    TreeProtocolResult

    Examples
    --------
    A single path of 2 drafts is ordinary speculative decoding with gamma = 2:

    >>> import numpy as np, spectheory as st
    >>> from spectheory.trees import DraftTree, tree_protocol
    >>> chain = st.DecodingChain.random(3, rng=0)
    >>> res = tree_protocol(chain, 8, DraftTree.from_branching([1, 1]), "tree_rrs")
    >>> bool(np.isclose(res.target_calls, chain.expected_target_calls(8, 2)))
    True
    """
    T = chain.check_horizon(horizon)
    chain.require_deterministic("tree_protocol (token trees)")
    tree = _check_tree(tree)
    v = get_verifier(verifier).for_tree()
    if method not in ("auto", "nodes", "enumerate"):
        raise ValueError(f"method: expected 'auto', 'nodes' or 'enumerate', got {method!r}")
    if method == "nodes" and not v.node_local:
        raise ValueError(f"method: the per-node engine needs a node-local rule; {v.name!r} is not")
    seconds = check_engine_size(chain, "tree_exact", T, nodes=tree.size)
    with blas_single_thread(chain.n_states):  # small products: extra BLAS threads only contend
        if method == "enumerate" or not v.node_local:
            acc = enumerated_forward(chain, T, tree, v, bool(bonus), chain.initial, T)
        else:
            acc = _node_forward(chain, T, tree, v, bool(bonus), chain.initial, T, seconds=seconds)
    return _result(acc, T, tree, bonus)


def tree_round_law(
    chain: ChainLike,
    tree: DraftTree,
    verifier: str | TreeRule = "tree_rrs",
    n0: int = 0,
    horizon: int | None = None,
    method: str = "auto",
) -> np.ndarray:
    r"""Law of one round's accepted length from each start state at position ``n0``.

    Returns
    -------
    ndarray, shape (S, depth + 1)
        Row ``s``: P(accepted length ``j`` | round starts in state ``s``). The tree is
        truncated at ``horizon - n0`` when ``horizon`` is given.

    Examples
    --------
    Traversal verification on a single path is block verification (11/9 accepted drafts
    on Sun et al.'s binary example at gamma = 2; token verification gets 10/9):

    >>> import spectheory as st
    >>> from spectheory.trees import DraftTree, tree_round_law
    >>> chain = st.DecodingChain.iid([1/3, 2/3], [2/3, 1/3])
    >>> path = DraftTree.from_branching([1, 1])
    >>> round(float(tree_round_law(chain, path, "traversal")[0] @ [0, 1, 2]) * 9, 10)
    11.0
    >>> round(float(tree_round_law(chain, path, "tree_rrs")[0] @ [0, 1, 2]) * 9, 10)
    10.0
    """
    tree = _check_tree(tree)
    v = get_verifier(verifier).for_tree()
    n0 = check_int(n0, "n0", 0)
    chain.require_deterministic("tree_round_law (token trees)")
    T = n0 + tree.max_depth + 1 if horizon is None else chain.check_horizon(horizon)
    if n0 >= T:
        raise ValueError(f"n0: must be < horizon {T}, got {n0}")
    eye = np.eye(chain.n_states)
    with blas_single_thread(chain.n_states):
        if method == "enumerate" or not v.node_local:
            acc = enumerated_forward(chain, T, tree, v, True, eye, n0 + 1, start=n0)
        else:
            acc = _node_forward(chain, T, tree, v, True, eye, n0 + 1, start=n0)
    return acc.length.T.copy()
