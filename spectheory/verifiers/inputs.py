r"""What an engine hands a :class:`~spectheory.verifiers.Verifier` for one round: one frozen
dataclass per entry point, instead of a row of positional arrays every rule repeats.

- :class:`FusedRoundInputs`: the simulator's fast path
  (:meth:`Verifier.fused_round <spectheory.verifiers.Verifier.fused_round>`), built by
  :meth:`PathRound.play <spectheory.kinds.PathRound.play>`: the sampler, the horizon, ``gamma``,
  where each run stands, and the buffers the rule fills along the drafted path.
- :class:`TorchRoundInputs`: the real decoder's rule
  (:meth:`Verifier.torch_rule <spectheory.verifiers.Verifier.torch_rule>`), built by
  :func:`~spectheory.decoder.speculative_generate` once per round: the laws, the drafts and the
  uniforms as tensors (building it is a Python object, not a torch operation).

Notation: ``R`` runs (Monte Carlo) or ``B`` sequences (decoder), at most ``g`` (``K``) drafts
per round, vocabulary size ``V``; p = target, q = draft. Neither class imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = ["FusedRoundInputs", "TorchRoundInputs"]


@dataclass(frozen=True, slots=True)
class FusedRoundInputs:
    """One path round of ``R`` runs for :meth:`Verifier.fused_round
    <spectheory.verifiers.Verifier.fused_round>` (drafting fused with verification).

    The arrays ``states`` and ``x`` are buffers the rule fills in place (the dataclass is
    frozen, its arrays are not): on return ``x[r, :j[r]]`` holds the kept drafts and
    ``states[r, :j[r] + 1]`` the states along them.

    Attributes
    ----------
    sampler : ChainSampler
        The chain's :class:`~spectheory.rounds.ChainSampler` (deterministic transitions).
    horizon : int
        ``T``, the tokens of one generation.
    gamma : int
        ``g``, the draft length of the round.
    n : ndarray of int64, shape (R,)
        Tokens generated so far, ``< horizon``.
    k : ndarray of int64, shape (R,)
        Drafts checked per run, ``min(gamma, horizon - n)`` (slots ``>= k`` are padding).
    states : ndarray of int64, shape (R, g + 1)
        Column 0 holds each run's state; the rule writes the states along the drafted path.
    x : ndarray of int64, shape (R, g)
        The drafted tokens, written by the rule.
    u : ndarray of float64, shape (R, g)
        The drafting uniforms (``x_i`` drawn from ``q`` by inverse CDF at ``u[:, i]``), drawn
        by the round before any of the rule's own.

    Examples
    --------
    >>> import numpy as np, spectheory as st
    >>> from spectheory.rounds import ChainSampler
    >>> from spectheory.verifiers import get_verifier
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])   # draft == target
    >>> R, g = 3, 2
    >>> states = np.zeros((R, g + 1), dtype=np.int64)
    >>> inputs = FusedRoundInputs(ChainSampler(chain), 4, g, np.array([0, 2, 3]), np.array([2, 2, 1]),
    ...                           states, np.empty((R, g), dtype=np.int64), np.full((R, g), 0.7))
    >>> j, y = get_verifier("token").fused_round(inputs, np.random.default_rng(0))
    >>> j.tolist(), inputs.x[0].tolist()                     # every draft accepted, token 1 drawn
    ([2, 2, 1], [1, 1])
    """

    sampler: Any
    horizon: int
    gamma: int
    n: np.ndarray
    k: np.ndarray
    states: np.ndarray
    x: np.ndarray
    u: np.ndarray

    @property
    def size(self) -> int:
        """``R``, the number of runs."""
        return int(self.n.shape[0])


@dataclass(frozen=True, slots=True)
class TorchRoundInputs:
    """One decoder round of ``B`` sequences for :meth:`Verifier.torch_rule
    <spectheory.verifiers.Verifier.torch_rule>` (rows with ``k = 0`` are inactive).

    Attributes
    ----------
    target_probs : Tensor, shape (B, K + 1, V)
        The target's laws at the ``K + 1`` positions of the round (the last one is the bonus
        position).
    draft_probs : Tensor, shape (B, K, V)
        The draft's laws the draft tokens were sampled from.
    draft_tokens : LongTensor, shape (B, K)
    k : LongTensor, shape (B,)
        Real drafts per row (slots ``>= k[b]`` are padding; ``k[b] = 0``: row inactive).
    u_accept : Tensor, shape (B, K)
        Acceptance uniforms in ``[0, 1)``.
    u_emit : Tensor, shape (B,)
        The uniform of the emitted (correction or bonus) token.
    allow_bonus : BoolTensor, shape (B,)
        Whether a bonus token may follow a fully accepted round (``bonus`` and tokens left
        after the ``k`` drafts).

    Examples
    --------
    >>> import torch
    >>> from spectheory.verifiers import get_verifier
    >>> t = torch.tensor([[[0.5, 0.5], [0.5, 0.5]]], dtype=torch.float64)   # B=1, K=1, V=2
    >>> d = torch.tensor([[[0.8, 0.2]]], dtype=torch.float64)
    >>> inputs = TorchRoundInputs(t, d, torch.tensor([[0]]), torch.tensor([1]),
    ...                           torch.tensor([[0.7]]), torch.tensor([0.3]), torch.tensor([True]))
    >>> [v.item() for v in get_verifier("token").torch_rule(inputs)]   # 0.7 * 0.8 >= 0.5: rejected
    [0, 1, True]
    """

    target_probs: torch.Tensor
    draft_probs: torch.Tensor
    draft_tokens: torch.Tensor
    k: torch.Tensor
    u_accept: torch.Tensor
    u_emit: torch.Tensor
    allow_bonus: torch.Tensor

    def tensors(
        self,
    ) -> tuple[
        torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor
    ]:
        """The seven tensors in the order of the pure torch forms
        (:func:`~spectheory.verifiers.torch_forms.token_verify`,
        :func:`~spectheory.verifiers.torch_forms.block_verify`)."""
        return (
            self.target_probs,
            self.draft_probs,
            self.draft_tokens,
            self.k,
            self.u_accept,
            self.u_emit,
            self.allow_bonus,
        )
