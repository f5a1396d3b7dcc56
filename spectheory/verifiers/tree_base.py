r"""Tree verifiers: verifiers that accept draft trees (the base class and a realisation's checks).

Notation: p = target, q = draft (code says ``target``/``draft``). A *realisation* of a draft
tree (:class:`~spectheory.trees.DraftTree`) for ``R`` runs is

- ``tokens [R, N]``: the token of node ``i`` (column 0, the root, is ignored; ``-1`` marks a
  node that is not drafted: beyond the horizon, or past the draft's support without
  replacement);
- ``target_laws [R, N, V]`` and ``draft_laws [R, N, V]``: the target and draft laws of the
  token *after* node ``i`` (``draft_laws[:, u]`` is the law ``u``'s children are drawn from).

A :class:`TreeVerifier` is a :class:`~spectheory.verifiers.Verifier` of the one registry
(:func:`~spectheory.verifiers.get_verifier`) whose capability is trees
(``accepts_trees = True``, ``accepts_paths = False``): the tree rule is its class
(:class:`~spectheory.verifiers.tree_rules.RecursiveRejectionTree`,
:class:`~spectheory.verifiers.tree_rules.TraversalTree`) and the way children are drawn its
``children`` (a :class:`~spectheory.children.ChildPolicy`).
The single-path methods (``rule``, ``verify_round``, ``exact``, ``torch_rule``) say that a
tree is needed (:meth:`~spectheory.verifiers.Verifier.require_path`).

Uniform convention: node ``c`` is accepted iff ``u_accept[:, c] <`` its acceptance
probability; the final token is the inverse CDF of its law at ``u_final``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_rng
from ..children import ChildPolicy, get_child_policy
from .base import Verifier

if TYPE_CHECKING:
    from .._protocols import TreeLike

__all__ = ["TreeVerifier", "check_realisation"]


def check_realisation(
    tree: TreeLike, tokens: ArrayLike, target_laws: ArrayLike, draft_laws: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate shapes and token range of a realisation; returns arrays (dtype kept)."""
    x = np.asarray(tokens, dtype=np.int64)
    t = np.asarray(target_laws)
    d = np.asarray(draft_laws)
    if x.ndim != 2 or x.shape[1] != tree.n_nodes:
        raise ValueError(f"tokens: expected shape (R, {tree.n_nodes}), got {x.shape}")
    R, N = x.shape
    if t.shape[:2] != (R, N) or t.ndim != 3 or d.shape != t.shape:
        raise ValueError(
            f"target_laws, draft_laws: expected shape ({R}, {N}, V), got {t.shape} and {d.shape}"
        )
    if x.size and (x[:, 1:].min(initial=0) < -1 or x.max() >= t.shape[2]):
        raise ValueError(f"tokens: entries must lie in [0, {t.shape[2]}) or be -1 (not drafted)")
    return x, t, d


class TreeVerifier(Verifier):
    """Base class of tree verifiers: a tree rule (the subclass) with a child policy.

    Subclasses implement ``_verify`` (the pure rule on checked float arrays) and
    ``_outcome_law`` (its exact outcome law given the drafted tokens), and set
    ``node_local`` when a node's decision depends only on its children's tokens (then
    the per-node exact engine applies through :meth:`node_laws`).

    Parameters
    ----------
    name : str
        Registry key and the label results carry.
    children : ChildPolicy or str
        How the children of a node are drawn (``"iid"``, ``"wo"``, ``"topk"`` are shorthands).
    lossless : bool
    """

    accepts_paths = False
    accepts_trees = True
    #: Whether the decision at a node depends only on its children's tokens.
    node_local = False

    def __init__(self, name: str, children: ChildPolicy | str, lossless: bool = True) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("name: a tree verifier needs a non-empty string name")
        self.name = name
        self.children = get_child_policy(children)
        self.lossless = bool(lossless)

    # ----------------------------------------------------------------- the tree rule
    def _verify(
        self, tree: TreeLike, x: np.ndarray, t: np.ndarray, d: np.ndarray, ua: np.ndarray, uf: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError(f"tree verifier {self.name!r}: define _verify (the pure tree rule)")

    def _outcome_law(self, tree: TreeLike, x: np.ndarray, t: np.ndarray, d: np.ndarray) -> tuple[Any, Any]:
        raise NotImplementedError(f"tree verifier {self.name!r}: define _outcome_law (its exact law)")

    def verify(
        self,
        tree: TreeLike,
        tokens: np.ndarray,
        target_laws: np.ndarray,
        draft_laws: np.ndarray,
        u_accept: np.ndarray,
        u_final: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""The pure tree rule on hand-given uniforms, vectorised over runs.

        Parameters
        ----------
        tree : DraftTree
        tokens, target_laws, draft_laws : arrays ``[R, N]``, ``[R, N, V]``, ``[R, N, V]``
            A realisation (module docstring).
        u_accept : array, shape (R, N)
            ``u_accept[:, c]`` decides node ``c``'s test (column 0 unused).
        u_final : array, shape (R,)

        Returns
        -------
        node : ndarray of int, shape (R,)
            Last node of the accepted path (0 = nothing accepted).
        token : ndarray of int, shape (R,)
            Token drawn from the law at ``node`` (residual, or the target law at a leaf: the
            bonus; the caller drops it when the protocol emits no bonus).
        residual : ndarray of bool, shape (R,)
            Whether ``token`` is a correction (``node`` had drafted children, all rejected).
        """
        x, t, d = check_realisation(tree, tokens, target_laws, draft_laws)
        t = t.astype(np.float64)
        d = d.astype(np.float64)
        R, N, _ = t.shape
        ua = np.asarray(u_accept, dtype=np.float64)
        uf = np.asarray(u_final, dtype=np.float64)
        if ua.shape != (R, N) or uf.shape != (R,):
            raise ValueError(
                f"u_accept, u_final: expected shapes {(R, N)} and {(R,)}, got {ua.shape}, {uf.shape}"
            )
        return self._verify(tree, x, t, d, ua, uf)

    def outcome_law(
        self, tree: TreeLike, tokens: np.ndarray, target_laws: np.ndarray, draft_laws: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        r"""Exact outcome law given the drafted tokens (analytic, no uniforms).

        Works with float arrays and with ``fractions.Fraction`` object arrays.

        Returns
        -------
        accept : array, shape (R, N)
            ``accept[:, v]`` = P(the accepted path ends at node ``v``); rows sum to 1.
        final : array, shape (R, N, V)
            Law of the token emitted after the path when it ends at ``v`` (the residual if
            ``v`` had drafted children, else ``target_laws[:, v]``).
        """
        x, t, d = check_realisation(tree, tokens, target_laws, draft_laws)
        return self._outcome_law(tree, x, t, d)

    def node_laws(self, target: np.ndarray, draft: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact per-node laws ``(accept [k, S, V], residual [S, V])`` (node-local rules only);
        :meth:`spectheory.children.ChildPolicy.node_laws` of ``children``."""
        if not self.node_local:
            raise ValueError(f"verifier: {self.name!r} is not node-local; use the enumeration engine")
        return self.children.node_laws(target, draft, k)

    def sample_children(self, draft_rows: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``k`` children per row of ``draft_rows [R, V]`` (``[R, k]``);
        :meth:`spectheory.children.ChildPolicy.draw` of ``children``."""
        return self.children.draw(draft_rows, k, as_rng(rng))

    def for_tree(self) -> TreeVerifier:
        """A tree verifier is its own tree form."""
        return self

    # ----------------------------------------------------------------- single path: not this
    def rule(self, *args: Any, **kwargs: Any) -> Any:  # raises: a tree verifier checks trees
        """Tree verifiers have no single-path rule: see :meth:`verify`."""
        self.require_path()

    def verify_round(self, *args: Any, **kwargs: Any) -> Any:  # raises: a tree verifier checks trees
        self.require_path()

    def exact(self, *args: Any, **kwargs: Any) -> Any:  # raises: a tree verifier checks trees
        self.require_path()

    def torch_rule(self, *args: Any, **kwargs: Any) -> Any:  # raises: a tree verifier checks trees
        self.require_path()

    # ----------------------------------------------------------------- identity
    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TreeVerifier)
            and type(other) is type(self)
            and other.name == self.name
            and other.children == self.children
            and other.lossless == self.lossless
        )

    def __hash__(self) -> int:
        return hash((type(self), self.name, self.children, self.lossless))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, children={self.children!r})"
