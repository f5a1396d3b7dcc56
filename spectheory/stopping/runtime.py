r"""Running a draft-length policy inside the real decoder (:func:`~spectheory.decoder.speculative_generate`).

:class:`DecoderPolicy` adapts a :mod:`spectheory.kinds.policy.policies` object to the decoder's
batched rounds: it caps each row's round (``max_depth``, the policy's memory), decides after
each drafted token from what the draft computed (depth, the drafted token, the law it was
sampled from: top probability, entropy, token probability) and updates the memory after
verification. A real decoder has no chain state and no target laws while drafting, so only
the *runnable* policies work here: :class:`FixedGamma`, :class:`ConfidenceThreshold`,
:class:`EntropyRule`, :class:`HFSchedule` (the oracle :class:`RejectionThreshold` and the
state-information optimum raise ``ValueError``). The decisions never touch the random
streams, so decoding stays lossless.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..kinds.policy.policies import Policy, StopContext

if TYPE_CHECKING:
    import torch

    from .._protocols import ChainLike

__all__ = ["DecoderPolicy", "RUNNABLE", "chain_models"]

#: Policy classes a real decoder can run (no chain state, no target laws); the last five are
#: the engines' online controllers (:mod:`.controllers`, :mod:`.adaptive_steps`, :mod:`.hedge`), which learn
#: from each round's :class:`~spectheory.kinds.policy.context.RoundFeedback`.
RUNNABLE = (
    "FixedGamma",
    "ConfidenceThreshold",
    "EntropyRule",
    "HFSchedule",
    "AcceptanceRateK",
    "UCBGamma",
    "ROCThreshold",
    "EMASteps",
    "HedgeGamma",
)


class DecoderPolicy:
    """Per-row state of a policy across the rounds of one ``speculative_generate`` call.

    Parameters
    ----------
    policy : Policy
        One of ``RUNNABLE``.
    batch_size : int
    device : torch.device
    greedy : bool
        The decode is greedy (temperature 0): its sampling law is a point mass, so the policy's
        statistics (top probability, the token's probability, entropy) are read from the draft's
        softmax at temperature 1 instead (the ``logits`` passed to :meth:`stop`), as HF's
        assistant confidence is read from the assistant's scores.

    Examples
    --------
    Needs torch (skipped by the doctest run, which must pass without it):

    >>> import torch                                                        # doctest: +SKIP
    >>> from spectheory.stopping import ConfidenceThreshold
    >>> hook = DecoderPolicy(ConfidenceThreshold(0.5, max_depth=4), 2, torch.device("cpu"))  # doctest: +SKIP
    >>> hook.cap(torch.tensor([10, 2])).tolist()                            # doctest: +SKIP
    [4, 2]
    """

    def __init__(self, policy: Policy, batch_size: int, device: torch.device, greedy: bool = False) -> None:
        import torch

        if not isinstance(policy, Policy):
            raise ValueError(f"policy: expected a spectheory.stopping Policy, got {type(policy).__name__}")
        if type(policy).__name__ not in RUNNABLE or policy.uses_path or policy.uses_start:
            raise ValueError(
                f"policy: {policy.name} is not runnable in a real decoder "
                f"(needs chain states or target laws); runnable: {', '.join(RUNNABLE)}"
            )
        self.policy = policy
        self.torch = torch
        self.greedy = bool(greedy)
        init = policy.initial_memory
        self.learns = getattr(policy, "memory_kind", "flag") in ("counts", "online")
        if np.ndim(init):  # an online controller: one memory row per sequence
            self.memory = np.tile(np.asarray(init, dtype=np.float64), (batch_size, 1))
        else:
            self.memory = np.full(batch_size, init, dtype=np.int64)
        self.token_prob = np.zeros((batch_size, policy.max_depth))  # q(x_i) of this round's drafts

    def cap(self, k: torch.Tensor) -> torch.Tensor:
        """Longest draft of this round per row: ``min(k, max_depth)`` (and the schedule's counter)."""
        cap = self.torch.clamp(k, max=self.policy.max_depth)
        if type(self.policy).__name__ == "HFSchedule":
            counter = self.torch.as_tensor(self.memory + 1, device=k.device)
            cap = self.torch.minimum(cap, counter)
        return cap

    def stop(
        self,
        depth: int,
        law: torch.Tensor,
        token: torch.Tensor,
        position: torch.Tensor,
        logits: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Rows that stop after drafting token ``depth`` (``token`` [B] from ``law`` [B, V]; a
        greedy hook reads its statistics from ``softmax(logits)``, the draft's ``[B, V]``)."""
        torch = self.torch
        if self.greedy and logits is not None:
            law = torch.softmax(logits.double(), -1)
        lawd = law.double()
        logq = torch.where(lawd > 0, lawd.clamp_min(1e-300).log(), torch.zeros_like(lawd))
        B = law.shape[0]
        none = np.full(B, -1)
        ctx = StopContext(
            depth=depth,
            position=position.cpu().numpy(),
            start_state=none,
            prev_state=none,
            token=token.cpu().numpy(),
            state=none,
            top=lawd.max(-1).values.cpu().numpy(),
            entropy=(-(lawd * logq).sum(-1)).cpu().numpy(),
            token_prob=lawd.gather(1, token[:, None])[:, 0].cpu().numpy(),
            accept_prob=None,
            memory=self.memory,
        )
        if 1 <= depth <= self.token_prob.shape[1]:
            self.token_prob[:, depth - 1] = ctx.token_prob
        out = np.broadcast_to(np.asarray(self.policy.stop(ctx), dtype=bool), (B,))
        return torch.as_tensor(np.array(out), device=law.device)

    def after_round(self, k: torch.Tensor, n_accepted: torch.Tensor, active: torch.Tensor) -> None:
        """Update the memory of the rows that played this round (``active``: k > 0)."""
        kk, n, act = (np.asarray(a.cpu().numpy()) for a in (k, n_accepted, active))
        if self.learns:
            from ..kinds.policy.context import RoundFeedback

            new = np.asarray(self.policy.update(self.memory, RoundFeedback(n, kk, self.token_prob.copy())))
        else:
            new = np.asarray(self.policy.next_memory(self.memory, n == kk), dtype=np.int64)
        self.memory = np.where(act.reshape(act.shape + (1,) * (self.memory.ndim - 1)), new, self.memory)


def chain_models(chain: ChainLike) -> tuple[torch.nn.Module, torch.nn.Module]:
    """Torch models of the decoder contract that are exactly a first-order chain: ``(target, draft)``.

    ``logits = log kernel[last token]`` (homogeneous, first-order chains only), so the real
    decoder run on them has the exact expectations of :func:`~spectheory.stopping.evaluate_policy`
    (prompts ending in token ``s`` start the chain in state ``s``).

    Examples
    --------
    Needs torch (skipped by the doctest run):

    >>> import spectheory as st
    >>> from spectheory.stopping.runtime import chain_models
    >>> target, draft = chain_models(st.DecodingChain.random(3, rng=0))     # doctest: +SKIP
    >>> tuple(target(__import__("torch").tensor([[0, 2]])).shape)           # doctest: +SKIP
    (1, 2, 3)
    """
    import torch

    if not (chain.is_homogeneous and chain.is_first_order):
        raise ValueError("chain: chain_models needs a homogeneous first-order chain (state = last token)")

    class ChainModel(torch.nn.Module):
        def __init__(self, kernel):
            super().__init__()
            self.vocab_size = int(kernel.shape[1])
            self.max_seq_len = None
            self.table = torch.nn.Parameter(
                torch.log(torch.tensor(np.array(kernel), dtype=torch.float32)), requires_grad=False
            )

        def new_cache(self, batch_size, max_len, device=None, dtype=None):
            return None

        def forward(self, ids, cache=None, start=None):
            return self.table[ids]

    return ChainModel(chain.target), ChainModel(chain.draft)
