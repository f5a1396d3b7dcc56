r"""Along-path prediction of block rounds drafted by Medusa heads: tokens per call of the real decoder.

A block drafter's law at depth d depends on where the round started (Medusa: head ``d - 1``
reads the target's hidden state ``h_{m-2}`` when the round's first drafted position is ``m``),
so one rejection probability per position, as for a draft model, does not describe it. Along a
target path ``y`` it takes one per (round start, depth):

.. math:: r(m, d) = \max\Big(0,\ 1 - \frac{Q_d(y_{m+d-1} \mid h_{m-2})}{p(y_{m+d-1} \mid y_{< m+d-1})}\Big),

the probability, given the output token, that the coupled verification of the round started
at ``m`` rejected at depth ``d`` (the maximal coupling of token verification emits ``x`` from
a rejection with probability :math:`(p(x) - \min(p, Q)(x)) / p(x)`; given everything before,
each depth draws afresh). The rounds along the path then form the outcome kernel
:func:`~spectheory.validation.round_kernels.block_outcomes` (from start ``m``, depth ``j + 1`` ends the round with probability
:math:`r(m, j + 1) \prod_{i \le j} (1 - r(m, i))`) and
:func:`~spectheory.kinds.policy.outcome_kernels.outcome_dp` gives the expected target calls,
rejections and accepted drafts of each path; their mean over target paths sampled from the
target is the decoder's expectation (the output law is the target's).

Examples
--------
>>> import numpy as np
>>> r = np.zeros((1, 4, 2))              # never rejected: rounds of 2 drafts + bonus
>>> out = block_round_dp(r, bonus=True)
>>> out["target_calls"].tolist(), out["accepted"].tolist()
([2.0], [3.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._guards import check_int
from ..decoder.logits import logits_to_probs
from ..kinds.policy.outcome_kernels import outcome_dp
from .round_kernels import block_outcomes

__all__ = ["head_reject_table", "block_round_dp"]


@torch.inference_mode()
def head_reject_table(
    target: Any,
    heads: Any,
    paths: np.ndarray,
    n_prompt: int,
    gamma: int,
    sampling: tuple[float, int | None, float | None] = (1.0, None, None),
    batch_size: int = 256,
) -> np.ndarray:
    """``r [N, T, gamma]``: rejection probability of depth ``d`` (axis 2, 0-based ``d - 1``) of
    the round whose first drafted token is generated token ``t`` (axis 1), along ``paths
    [N, L + T]`` (prompt of ``L = n_prompt >= 2`` tokens, then ``T`` tokens). Entries past the
    horizon are 0 (the round drafts only the tokens left).

    ``target``: a model of the decoder contract that returns its final hidden states
    (``return_hidden=True``; the shipped GPT) and has a tied LM head ``wte``; ``heads``:
    :class:`~spectheory.decoder.medusa.MedusaHeads`; ``sampling``: (temperature, top_k, top_p),
    applied to the target's and the heads' logits as the decoder does.
    """
    paths = np.asarray(paths, dtype=np.int64)
    L, gamma = check_int(n_prompt, "n_prompt", 2), check_int(gamma, "gamma", 1)
    if gamma > heads.n_heads:
        raise ValueError(f"gamma: at most the {heads.n_heads} heads, got {gamma}")
    N, T = paths.shape[0], paths.shape[1] - L
    if T < 1:
        raise ValueError("paths: no generated tokens after the prompt")
    dev = next(target.parameters()).device
    out = np.zeros((N, T, gamma))
    for lo in range(0, N, batch_size):
        ids = torch.as_tensor(paths[lo : lo + batch_size], device=dev)
        logits, hidden = target(ids[:, :-1], return_hidden=True)  # [b, L + T - 1, V], [.., C]
        p = logits_to_probs(logits, *sampling)  # p[:, i] is the law of token i + 1
        b = ids.shape[0]
        rows = torch.arange(b, device=dev)
        for t in range(T):
            m = L + t  # first drafted position of a round starting at generated token t
            q = logits_to_probs(heads(hidden[:, m - 2], target.wte.weight), *sampling)  # [b, K, V]
            for j in range(min(gamma, T - t)):
                y = ids[:, m + j]
                py, qy = p[rows, m + j - 1, y], q[rows, j, y]
                r = torch.clamp(1.0 - qy / torch.where(py > 0, py, 1.0), min=0.0)
                out[lo : lo + b, t, j] = r.double().cpu().numpy()
    return out


def block_round_dp(reject: np.ndarray, bonus: bool = True) -> dict[str, np.ndarray]:
    """Expected ``target_calls``, ``rejections``, ``accepted`` and ``counts`` per path of block
    rounds with the rejection table ``reject [N, T, gamma]``
    (:func:`~spectheory.kinds.policy.outcome_kernels.outcome_dp` of
    :func:`~spectheory.validation.round_kernels.block_outcomes`)."""
    return outcome_dp(block_outcomes(reject), bonus)
