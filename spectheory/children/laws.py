r"""Two functional forms of a child policy, taking the policy or its shorthand: the exact
per-node laws (:func:`node_laws`) and the Monte Carlo sampler (:func:`draw_children`).
Notation: p = target, q = draft.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .policy import ChildPolicy, get_child_policy

__all__ = ["node_laws", "draw_children"]


def node_laws(target: Any, draft: Any, k: int, children: ChildPolicy | str) -> tuple[np.ndarray, np.ndarray]:
    r"""Exact per-node laws of recursive rejection with ``k`` children, per state
    (:meth:`ChildPolicy.node_laws <spectheory.children.ChildPolicy.node_laws>`).

    Parameters
    ----------
    target, draft : array, shape (S, V)
    k : int >= 1
    children : ChildPolicy or {"iid", "wo", "topk"}

    Returns
    -------
    accept : ndarray, shape (k, S, V)
        ``accept[j, s, x]`` = P(child slot ``j`` is accepted and has token ``x``).
    residual : ndarray, shape (S, V)
        ``residual[s, y]`` = P(all children rejected and correction ``y``).
        ``accept.sum((0, 2)) + residual.sum(1) == 1`` and
        ``accept.sum(0) + residual == target`` (losslessness at a node).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.children import IID, node_laws
    >>> t, d = np.array([[0.5, 0.5]]), np.array([[0.9, 0.1]])
    >>> A, R = node_laws(t, d, 2, IID())
    >>> round(float(A.sum()), 6), np.round(A.sum(0) + R, 12).tolist()
    (0.64, [[0.5, 0.5]])
    """
    return get_child_policy(children).node_laws(target, draft, k)


def draw_children(
    draft_rows: Any, k: int, children: ChildPolicy | str, rng: np.random.Generator
) -> np.ndarray:
    """``k`` children per row of ``draft_rows [R, V]`` under a child policy; int64 ``[R, k]``
    (:meth:`ChildPolicy.draw <spectheory.children.ChildPolicy.draw>`).

    :class:`IID`: inverse CDF per child; :class:`WithoutReplacement`: Gumbel top-k
    (successive sampling; ``-1`` past the draft's support); :class:`TopK`: the ``k``
    largest draft entries (stable order, ``-1`` past ``V``).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.children import TopK, draw_children
    >>> draw_children(np.array([[0.1, 0.6, 0.3]]), 2, TopK(), np.random.default_rng(0)).tolist()
    [[1, 2]]
    """
    return get_child_policy(children).draw(draft_rows, k, rng)
