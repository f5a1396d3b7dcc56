r"""What the engines need of a chain, a draft tree and a rule: structural types for annotations.

The engines (:mod:`spectheory.exact`, :mod:`spectheory.verifiers`, :mod:`spectheory.trees`,
:mod:`spectheory.stopping`, :mod:`spectheory.analysis`, ...) read a chain, but
:class:`~spectheory.DecodingChain` reads them back: its exact-value views
(:mod:`spectheory.chain.views`) call the engines. Annotating the engines with the concrete
class would close an import circle in the graph a type checker reads (``if TYPE_CHECKING:``
imports included), so they are annotated with the protocols below, which sit at the bottom of
the package and import no other room of it. The concrete classes satisfy them structurally
(no inheritance, no registration): :class:`~spectheory.DecodingChain` is a :class:`ChainLike`,
:class:`~spectheory.trees.DraftTree` a :class:`TreeLike`, every
:class:`~spectheory.verifiers.Verifier` an :class:`ExactRule` and every tree verifier a
:class:`TreeRule`. ``tests/test_architecture.py``
checks that the type graph has no circle.

Notation (as in :mod:`spectheory.chain.decoding_chain`): ``S`` states, ``V`` tokens; in state ``s`` the
target and the draft propose :math:`p_n(\cdot \mid s)` and :math:`q_n(\cdot \mid s)`
(``target``, ``draft``, shape ``[S, V]``, or ``[T, S, V]`` per position), and token ``x``
moves the chain to ``next_state[s, x]`` (or draws it from the law ``[S, V, S]``).

Examples
--------
>>> import spectheory as st
>>> from spectheory._protocols import ChainLike
>>> chain = st.DecodingChain.iid([0.5, 0.5], [0.8, 0.2])
>>> def tv_of_first_state(chain: ChainLike) -> float:
...     target, draft = chain.kernels(0)
...     return float(0.5 * abs(target[0] - draft[0]).sum())
>>> round(tv_of_first_state(chain), 6)
0.3
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["ChainLike", "ChainWithViews", "UnrolledChainLike", "TreeLike", "TreeRule", "ExactRule"]

_C = TypeVar("_C")


class ChainLike(Protocol):
    r"""A decoding problem as a Markov chain, as the engines read it (:class:`~spectheory.DecodingChain`).

    Attributes
    ----------
    target, draft : ndarray, shape (S, V) or (T, S, V)
        Next-token kernels (read-only).
    initial : ndarray, shape (S,)
        Law of the starting state.
    next_state : ndarray of int, shape (S, V), or a sparse law ``(S * V, S)``
        The state after each (state, token).
    max_horizon : int or None
        ``T`` for time-inhomogeneous chains and prefix trees, otherwise None.
    n_states, vocab_size : int
    is_homogeneous : bool
        One kernel for every position.
    is_stochastic : bool
        The next state is drawn from a law ``[S, V, S]``.
    is_first_order : bool
        The state is the last token.
    transition_law : sparse matrix, shape (S * V, S)
        Row ``s * V + x`` is the law of the state after ``(s, x)``.
    tv_table, acceptance_table : ndarray, shape (S,) or (T, S)
        :math:`\mathrm{TV}(p(\cdot|s), q(\cdot|s))` and :math:`1 - \mathrm{TV}` per state.
    """

    @property
    def target(self) -> np.ndarray: ...
    @property
    def draft(self) -> np.ndarray: ...
    @property
    def initial(self) -> np.ndarray: ...
    @property
    def next_state(self) -> np.ndarray | sp.csr_matrix: ...
    @property
    def max_horizon(self) -> int | None: ...
    @property
    def n_states(self) -> int: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def is_homogeneous(self) -> bool: ...
    @property
    def is_stochastic(self) -> bool: ...
    @property
    def is_first_order(self) -> bool: ...
    @property
    def transition_law(self) -> sp.csr_matrix: ...
    @property
    def tv_table(self) -> np.ndarray: ...
    @property
    def acceptance_table(self) -> np.ndarray: ...

    def require_deterministic(self, what: str) -> None:
        """Raise ``ValueError`` naming ``what`` when the transitions are stochastic."""

    def sample_next_state(self, s: np.ndarray, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Next states after tokens ``x`` in states ``s`` (uniforms ``u`` for a drawn state)."""

    def check_horizon(self, horizon: int) -> int:
        """Validate a horizon ``T >= 1`` against ``max_horizon``; return it as int."""

    def kernels(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``(target, draft)`` kernels ``[S, V]`` producing token ``n + 1`` (0-based ``n``)."""

    def transition_operator(self, mass: ArrayLike) -> np.ndarray | sp.csr_matrix:
        r"""Matrix :math:`M[s, s'] = \sum_x m(s, x) K(s'|s, x)` of a mass ``m`` ``[S, V]``."""

    def target_operator(self, n: int) -> np.ndarray | sp.csr_matrix:
        """Transition operator of target sampling at 0-based position ``n``."""

    def state_marginals(self, horizon: int) -> np.ndarray:
        """Law of the state before each token under target sampling, shape ``[T, S]``."""

    def tv_profile(self, horizon: int) -> np.ndarray:
        r""":math:`E_{prefix \sim p}[\mathrm{TV}(p_n, q_n)]` for ``n = 1..T``, shape ``[T]``."""


class ChainWithViews(ChainLike, Protocol):
    """A :class:`ChainLike` with the exact-value views and the ``iid`` constructor of its class,
    as Leviathan's gap reads it (:func:`spectheory.exact.iid_gap.leviathan_gap` compares the
    chain with the one-state chain of its mean acceptance)."""

    @classmethod
    def iid(cls: type[_C], target: ArrayLike, draft: ArrayLike) -> _C:
        """The one-state chain of the kernels ``target`` and ``draft`` ``[V]``, of this class."""

    def expected_tokens_per_call(self, horizon: int, gamma: int, bonus: bool = True) -> float:
        """Exact tokens per target call of ``gamma``-draft rounds over ``horizon`` tokens."""

    def predicted_speedup(self, horizon: int, gamma: int, c: float, bonus: bool = True) -> float:
        """Exact speedup of ``gamma``-draft rounds at draft/target cost ratio ``c``."""


class UnrolledChainLike(ChainLike, Protocol):
    """A :class:`ChainLike` over an unrolled prefix forest (the states of level ``n`` are the
    prefixes of ``n`` tokens, from ``level_offsets[n]`` on), as the sequence fronts build and
    read it (:func:`spectheory.analysis.sequence_front_tree.unrolled_chain`); its class builds
    another such chain from new kernels."""

    level_offsets: Any

    def __init__(
        self,
        target: ArrayLike,
        draft: ArrayLike,
        initial: ArrayLike | None = None,
        next_state: Any = None,
        *,
        atol: float = ...,
        max_horizon: int | None = None,
    ) -> None: ...


class TreeLike(Protocol):
    """A draft tree's shape, as the rules and engines read it (:class:`~spectheory.trees.DraftTree`).

    Attributes
    ----------
    parents : ndarray of int, shape (N,)
        ``parents[i]`` for node ``i`` (the root, node 0, has -1); a parent precedes its child.
    n_nodes, size : int
        ``N`` (the root included) and ``N - 1`` (drafted nodes).
    children : tuple of tuple of int
        ``children[u]``: the child nodes of ``u`` in slot order.
    slot, depth, n_children : ndarray of int, shape (N,)
        Position among the siblings, drafted tokens on the path root -> ``i``, number of children.
    max_depth : int
    """

    @property
    def parents(self) -> np.ndarray: ...
    @property
    def n_nodes(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def children(self) -> tuple: ...
    @property
    def slot(self) -> np.ndarray: ...
    @property
    def depth(self) -> np.ndarray: ...
    @property
    def max_depth(self) -> int: ...
    @property
    def n_children(self) -> np.ndarray: ...

    def nodes_within(self, depth: int) -> int:
        """Number of drafted nodes with depth ``<= depth``."""

    def path_to(self, node: int) -> list:
        """Node indices on the path root -> ``node`` (root excluded)."""

    def __hash__(self) -> int:
        """Trees are compared and hashed by shape (the engines cache per tree)."""


class TreeRule(Protocol):
    r"""A tree verification rule, as the tree engines read it (any
    :class:`~spectheory.verifiers.tree_base.TreeVerifier`; what ``Verifier.for_tree()`` returns).

    Attributes
    ----------
    name : str
    lossless : bool
        The output follows the target's law.
    node_local : bool
        Each node's test reads only its own children (the exact engines' fast path).
    children : ChildPolicy
        How the draft's children of a node are drawn (i.i.d., without replacement, top-k).
    """

    name: str
    lossless: bool
    node_local: bool
    children: Any

    def verify(
        self,
        tree: TreeLike,
        tokens: np.ndarray,
        target_laws: np.ndarray,
        draft_laws: np.ndarray,
        u_accept: np.ndarray,
        u_final: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(node, token, residual)`` of each run from hand-given uniforms."""

    def outcome_law(
        self, tree: TreeLike, tokens: np.ndarray, target_laws: np.ndarray, draft_laws: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(accept [R, N], final [R, N, V])``: the exact outcome law given the drafted tokens."""

    def node_laws(self, target: np.ndarray, draft: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Laws of a node's ``k`` drafted children (the child policy's)."""

    def sample_children(self, draft_rows: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``k`` children per row of ``draft_rows [R, V]`` (``[R, k]``)."""

    def for_tree(self) -> TreeRule:
        """Itself."""


class ExactRule(Protocol):
    """A single-path rule as the exact engine reads it (any :class:`~spectheory.verifiers.Verifier`).

    ``exact`` returns the rule's :class:`~spectheory.exact.ProtocolResult`; ``phase_masses``
    the ``(accept_mass, reject_mass, phase_dependent)`` of a token-by-token rule, or None.
    """

    def exact(self, chain: ChainLike, horizon: int, gamma: int, bonus: bool = True) -> Any:
        """Exact result of one generation of ``horizon`` tokens on ``chain``."""

    def phase_masses(self, chain: ChainLike) -> tuple[Any, Any, bool] | None:
        """Masses for the phase recursion, or ``None`` if not a token-by-token rule."""
