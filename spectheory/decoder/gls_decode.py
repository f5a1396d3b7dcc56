r"""GLS multi-draft decoding in the real decoder (Rowan, Phan & Khisti, NeurIPS 2025, Algorithm 2).

Notation: p = target, q = draft. Each round, per sequence with ``r`` tokens still to generate,
``k = min(gamma, r)``: ``M`` drafts of ``k`` tokens are drawn i.i.d. from the draft by
exponential races, :math:`X^{(m)}_j = \arg\min_i E^{(j,m)}_i / q_i` with ``E`` i.i.d.
``Exp(1)``; ONE target call scores the ``M`` drafts; position by position the target's token is

.. math:: Y_j = \arg\min_i \min_{m \in S} E^{(j,m)}_i / p_i(\cdot \mid Y_{<j}),

over the set ``S`` of drafts that agree with ``Y_{<j}`` (all of them at ``j = 1``; their
contexts coincide, so ``p`` is one law); ``S`` keeps the drafts with ``X^{(m)}_j = Y_j``. When
``S`` becomes empty the round ends with ``Y_j`` (a correction, counted as a rejection), else after
``k`` accepted positions a bonus token is drawn from ``p`` (when ``bonus`` and ``k < r``). This is
the rule :class:`~spectheory.trees.BatchRound` ``(M, gamma, reading="gls")`` plays and whose exact
values :func:`~spectheory.kinds.batch.exact.batch_tree_expected` ``(coupling="gls")`` gives; it is
lossless (``docs/trees.md``, Rowan et al., Proposition 3).

The loop is the plain one: each row separately, each model call uncached on the whole sequence
(``[M, L]``), torch exponentials from a per-row generator seeded by
:func:`~spectheory.decoder.rng.row_seeds`; it is there to check the rule on real models, not
for speed. :func:`spectheory.decoder.generate` runs it for ``BatchRound(M, gamma,
reading="gls")``.

Examples
--------
>>> from spectheory.decoder.model import GPT, GPTConfig
>>> from spectheory.decoder.gls_decode import gls_generate
>>> t = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
>>> d = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
>>> res = gls_generate(t, d, [[1, 2, 3], [4]], 5, M=2, gamma=3, seed=0)
>>> [len(x) for x in res.tokens], int(res.stats.tokens.sum())
([5, 5], 10)
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch

from .._guards import check_int
from .batching import CausalLM, Prompt, check_common
from .row_by_row import record_rows, row_inputs
from .sampling import logits_to_probs
from .stats import GenerationResult

__all__ = ["gls_generate"]


def _race(E: torch.Tensor, law: torch.Tensor) -> torch.Tensor:
    """``argmin_i E_i / law_i`` along the last axis (``inf`` where the law is 0)."""
    return torch.where(law > 0, E / law.clamp_min(1e-300), torch.inf).argmin(-1)


def _row(
    target: CausalLM,
    draft: CausalLM,
    prompt: list[int],
    max_new: int,
    M: int,
    gamma: int,
    sampling: tuple[float, int | None, float | None],
    bonus: bool,
    gen: torch.Generator,
    device: torch.device,
) -> tuple[list[int], list[tuple[int, int, int, int]]]:
    """One sequence: ``(new tokens, rounds [(k, accepted, emitted, rejected)])``."""
    T, top_k, top_p = sampling
    seq, rounds = list(prompt), []
    end = len(prompt) + max_new
    while len(seq) < end:
        r = end - len(seq)
        k = min(gamma, r)
        L = len(seq)
        ids = torch.tensor([seq] * M, dtype=torch.long, device=device)
        E = torch.empty(k, M, int(target.vocab_size), dtype=torch.float64, device=device)
        E.exponential_(generator=gen)
        for j in range(k):
            q = logits_to_probs(draft(ids)[:, -1].double(), T, top_k, top_p)
            ids = torch.cat([ids, _race(E[j], q)[:, None]], 1)
        p = logits_to_probs(target(ids)[:, L - 1 :].double(), T, top_k, top_p)  # [M, k + 1, V]
        S = torch.ones(M, dtype=torch.bool, device=device)
        out: list[int] = []
        for j in range(k):
            first = int(S.nonzero()[0])
            score = torch.where(S[:, None], E[j], torch.inf).min(0).values
            y = int(_race(score, p[first, j]))
            S = S & (ids[:, L + j] == y)
            out.append(y)
            if not bool(S.any()):
                rounds.append((k, j, 1, 1))
                break
        else:
            emitted = 0
            if bonus and k < r:
                first = int(S.nonzero()[0])
                out.append(int(torch.multinomial(p[first, k], 1, generator=gen)))
                emitted = 1
            rounds.append((k, k, emitted, 0))
        seq += out
    return seq[len(prompt) :], rounds


def gls_generate(
    target: CausalLM,
    draft: CausalLM,
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    M: int,
    gamma: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    bonus: bool = True,
    seed: int | Sequence[int] = 0,
    device: str | torch.device | None = None,
) -> GenerationResult:
    """GLS multi-draft speculative decoding of a batch of prompts (module docstring).

    Parameters
    ----------
    target, draft : models of the decoder contract (:mod:`spectheory.decoder.batching`), same
        ``vocab_size``.
    prompts : list of token sequences
    max_new_tokens, M, gamma : int >= 1
        Tokens to generate per prompt, drafts per round, tokens per draft.
    temperature, top_k, top_p : the sampling law ``S`` applied to both models' logits.
    bonus : bool
    seed : int or sequence of int
        Per-sequence seeds (an int: :func:`~spectheory.decoder.rng.row_seeds`).
    device : optional
        Both models are moved there in place if given; otherwise the target's device.

    Returns
    -------
    GenerationResult
        ``.tokens`` (``max_new_tokens`` per prompt) and ``.stats`` (``verifier="gls"``,
        ``rejections``: rounds whose drafts all disagreed with the target's token).
    """
    _, sampling = check_common({"target": target, "draft": draft}, max_new_tokens, temperature, top_k, top_p)
    max_new = check_int(max_new_tokens, "max_new_tokens", 1)
    M = check_int(M, "M", 1)
    gamma = check_int(gamma, "gamma", 1)
    ids, seeds, dev = row_inputs(target, draft, prompts, max_new, seed, device)
    B = len(ids)
    t0 = time.perf_counter()
    tokens, per_row = [], []
    with torch.no_grad():
        for b in range(B):
            gen = torch.Generator(device=dev)
            gen.manual_seed(seeds[b] % (1 << 63))
            new, rounds = _row(target, draft, ids[b], max_new, M, gamma, sampling, bonus, gen, dev)
            tokens.append(np.array(new, dtype=np.int64))
            per_row.append(rounds)
    rec = record_rows(per_row, gamma)
    return GenerationResult(tokens, rec.finish("gls", bonus, time_total=time.perf_counter() - t0))
