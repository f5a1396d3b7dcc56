r"""Parallel and semi-autoregressive block drafters: the draft law at depth k from the round start.

A *block drafter* (Medusa heads, DFlash, PARD, P-EAGLE; DSpark's Markov head) does not draft
along its own path: the law of the k-th drafted token is a function of the round's start state
``s`` (a parallel head), and optionally of the previously drafted token (a Markov head):

.. math:: x_1 \sim Q_1(\cdot \mid s), \qquad x_k \sim Q_k(\cdot \mid s, x_{k-1}) \ (k \ge 2).

A :class:`BlockDrafter` holds these laws as arrays: ``first [S, V]`` and ``then [S, D - 1, V, V]``
(Markov head) or ``[S, D - 1, V]`` (parallel head, no dependence on ``x_{k-1}``). Its
constructors build the two reference drafters of a chain:

* :meth:`BlockDrafter.marginals`: the k-step marginals :math:`P(x_{n+k} \mid s_n = s)` of the
  chain's target (the *oracle parallel drafter*: the best a drafter that ignores the drafted
  prefix can know) or of its draft (what a parallel head trained by cross-entropy on the draft
  model's samples learns);
* :meth:`BlockDrafter.markov_head`: the conditionals :math:`P(x_{n+k} \mid s_n = s, x_{n+k-1})`,
  the best a Markov head can know.

Examples
--------
>>> import spectheory as st
>>> chain = st.DecodingChain.random(3, rng=0)
>>> d = BlockDrafter.marginals(chain, 3)
>>> d.depth, d.first.shape, d.then.shape, d.markov
(3, (3, 3), (3, 2, 3), False)
>>> bool(abs(d.law(0, 2, None).sum() - 1) < 1e-12)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..._guards import check_int

__all__ = ["BlockDrafter"]


def _dense(op: Any) -> np.ndarray:
    return op.toarray() if hasattr(op, "toarray") else np.asarray(op)


def _kernel(chain: Any, of: str) -> np.ndarray:
    if of not in ("target", "draft"):
        raise ValueError(f"of: 'target' or 'draft', got {of!r}")
    if not chain.is_homogeneous or getattr(chain, "is_stochastic", False):
        raise ValueError(
            "chain: block drafters are built on homogeneous chains with deterministic transitions"
        )
    return np.asarray(chain.target if of == "target" else chain.draft, dtype=np.float64)


@dataclass(frozen=True)
class BlockDrafter:
    """Depth laws of a block drafter (module docstring). ``then`` has a token axis before the
    last when the drafter is a Markov head (``markov``)."""

    first: np.ndarray
    then: np.ndarray
    name: str = "block"

    def __post_init__(self) -> None:
        f, t = np.asarray(self.first, dtype=np.float64), np.asarray(self.then, dtype=np.float64)
        if f.ndim != 2 or t.ndim not in (3, 4) or t.shape[0] != f.shape[0] or t.shape[-1] != f.shape[1]:
            raise ValueError(
                f"laws: first must be [S, V] and then [S, D - 1, V] or [S, D - 1, V, V]; got {f.shape}, {t.shape}"
            )
        if t.ndim == 4 and t.shape[2] != f.shape[1]:
            raise ValueError(f"then: a Markov head's laws are [S, D - 1, V, V], got {t.shape}")
        for name, a in (("first", f), ("then", t)):
            if np.any(a < 0) or not np.allclose(a.sum(-1), 1.0, atol=1e-9):
                raise ValueError(f"{name}: every law must be non-negative and sum to 1")
        object.__setattr__(self, "first", f)
        object.__setattr__(self, "then", t)

    @property
    def depth(self) -> int:
        """The deepest position the drafter has a law for (``D``)."""
        return 1 + self.then.shape[1]

    @property
    def markov(self) -> bool:
        """Whether the law at depth k >= 2 reads the previously drafted token."""
        return self.then.ndim == 4

    @property
    def vocab_size(self) -> int:
        return self.first.shape[1]

    def require_chain(self, chain: Any) -> None:
        """Raise ``ValueError`` unless the laws are for ``chain``'s states and tokens."""
        if chain.vocab_size != self.vocab_size or chain.n_states != self.first.shape[0]:
            raise ValueError(
                f"drafter: laws for {self.first.shape[0]} states and {self.vocab_size} tokens, "
                f"the chain has {chain.n_states} and {chain.vocab_size}"
            )

    def law(self, start: ArrayLike, depth: int, prev: ArrayLike | None) -> np.ndarray:
        """Draft laws ``[R, V]`` (or ``[V]`` for a scalar start) at 0-based ``depth`` for round starts
        ``start`` and previously drafted tokens ``prev`` (read by a Markov head at depth >= 1)."""
        start = np.asarray(start, dtype=np.int64)
        if depth == 0:
            return self.first[start]
        if depth >= self.depth:
            raise ValueError(f"depth: the drafter has laws for depths 0..{self.depth - 1}, got {depth}")
        if self.markov:
            if prev is None:
                raise ValueError("prev: a Markov head's law at depth >= 1 reads the previous drafted token")
            return self.then[start, depth - 1, np.asarray(prev, dtype=np.int64)]
        return self.then[start, depth - 1]

    @classmethod
    def marginals(cls, chain: Any, depth: int, of: str = "target") -> BlockDrafter:
        r"""The k-step marginals of the chain's ``of`` kernel from each start state: the oracle
        parallel drafter (``of="target"``) or the parallel head fitted by cross-entropy to the
        draft model (``of="draft"``)."""
        depth = check_int(depth, "depth", 1)
        K = _kernel(chain, of)
        step = _dense(chain.transition_operator(K))  # [S, S]: state law after one token
        S = chain.n_states
        mu = np.eye(S)
        laws = []
        for _ in range(depth):
            laws.append(mu @ K)
            mu = mu @ step
        return cls(
            laws[0], np.stack(laws[1:], 1) if depth > 1 else np.zeros((S, 0, K.shape[1])), f"marginals({of})"
        )

    @classmethod
    def markov_head(cls, chain: Any, depth: int, of: str = "target") -> BlockDrafter:
        r"""The conditionals :math:`P(x_k \mid s, x_{k-1})` of the chain's ``of`` kernel: the best
        Markov head. Where :math:`P(x_{k-1}) = 0` the law is the marginal (never drawn)."""
        depth = check_int(depth, "depth", 1)
        K = _kernel(chain, of)
        S, V = K.shape
        nxt = np.asarray(chain.next_state)
        then = np.zeros((S, depth - 1, V, V))
        for s in range(S):
            joint = np.zeros((S, V))  # P(state before x_{k-1} = sigma, x_{k-1} = y)
            joint[s] = K[s]
            for k in range(depth - 1):
                # P(x_{k-1} = y, x_k = z) = sum_sigma joint[sigma, y] K[next(sigma, y), z]
                pair = np.einsum("ay,ayz->yz", joint, K[nxt])
                marg = pair.sum(1, keepdims=True)
                fallback = pair.sum(0) / max(pair.sum(), 1e-300)
                then[s, k] = np.where(marg > 0, pair / np.where(marg > 0, marg, 1.0), fallback)
                arriving = np.zeros(S)  # P(state before x_k = sigma')
                np.add.at(arriving, nxt.ravel(), joint.ravel())
                joint = arriving[:, None] * K
        return cls(K, then, f"markov_head({of})")
