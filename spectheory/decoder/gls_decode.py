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

The round is :class:`GlsStep`, a row-by-row step (:class:`~spectheory.decoder.row_by_row.RowStep`)
of the decoder's one loop: each row separately, each model call uncached on the whole sequence
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

from collections.abc import Sequence
from typing import Any

import torch

from .._guards import check_int
from .batching import CausalLM, Prompt
from .driver import decode_rounds
from .generation_result import GenerationResult
from .logits import logits_to_probs
from .row_by_row import RowOptions, Rows, RowStep, row_inputs

__all__ = ["gls_generate", "GlsStep"]


def _race(E: torch.Tensor, law: torch.Tensor) -> torch.Tensor:
    """``argmin_i E_i / law_i`` along the last axis (``inf`` where the law is 0)."""
    return torch.where(law > 0, E / law.clamp_min(1e-300), torch.inf).argmin(-1)


class GlsStep(RowStep):
    """The GLS round of each unfinished row (module docstring): ``M`` drafts of ``k`` tokens by
    exponential races, one target call on them, the target's race position by position."""

    def __init__(self, inputs: Rows, M: int, bonus: bool) -> None:
        super().__init__(inputs, "gls", bonus)
        self.M, self.gens = M, [torch.Generator(device=self.device) for _ in inputs.seeds]
        for gen, seed in zip(self.gens, inputs.seeds):
            gen.manual_seed(seed % (1 << 63))

    def law(self, logits: torch.Tensor) -> torch.Tensor:
        return logits_to_probs(logits.double(), *self.sampling)

    def draft(self, u: None) -> int:
        """Each row's exponentials ``E [k, M, V]`` and its ``M`` drafts ``ids [M, L + k]``."""
        self.E, self.ids = {}, {}
        for b in self.rows:
            ids = torch.tensor([self.seq(b)] * self.M, dtype=torch.long, device=self.device)
            E = torch.empty(
                self.k[b], self.M, int(self.target.vocab_size), dtype=torch.float64, device=self.device
            )
            E.exponential_(generator=self.gens[b])
            for j in range(self.k[b]):
                ids = torch.cat([ids, _race(E[j], self.law(self.draft_model(ids)[:, -1]))[:, None]], 1)
            self.E[b], self.ids[b] = E, ids
        return sum(self.k[b] for b in self.rows)

    def score(self) -> None:
        """One target call per row on its ``M`` drafts: ``p [M, k + 1, V]``."""
        self.p = {b: self.law(self.target(self.ids[b])[:, self.seq_len[b] - 1 :]) for b in self.rows}

    def commit(self) -> torch.Tensor:
        """The target's race over the drafts that agree so far; a bonus token after ``k``."""
        for b in self.rows:
            E, ids, p, k, L = self.E[b], self.ids[b], self.p[b], self.k[b], self.seq_len[b]
            S = torch.ones(self.M, dtype=torch.bool, device=self.device)
            out: list[int] = []
            for j in range(k):
                score = torch.where(S[:, None], E[j], torch.inf).min(0).values
                y = int(_race(score, p[int(S.nonzero()[0]), j]))
                S = S & (ids[:, L + j] == y)
                out.append(y)
                if not bool(S.any()):
                    break
            if bool(S.any()) and self.bonus and k < self.remaining[b]:
                out.append(int(torch.multinomial(p[int(S.nonzero()[0]), k], 1, generator=self.gens[b])))
            self.emit(b, out, min(len(out), k) - (not bool(S.any())), not bool(S.any()))
        return self.round_counts()


def gls_generate(
    target: CausalLM,
    draft: CausalLM,
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    M: int,
    gamma: int,
    *,
    bonus: bool = True,
    **options: Any,
) -> GenerationResult:
    """GLS multi-draft speculative decoding of a batch of prompts (module docstring).

    Parameters
    ----------
    target, draft : models of the decoder contract (:mod:`spectheory.decoder.batching`), same
        ``vocab_size``.
    prompts : list of token sequences
    max_new_tokens, M, gamma : int >= 1
        Tokens to generate per prompt, drafts per round, tokens per draft.
    bonus : bool
    **options
        ``temperature``, ``top_k``, ``top_p``, ``seed``, ``device``
        (:class:`~spectheory.decoder.row_by_row.RowOptions`: the defaults of
        :func:`~spectheory.decoder.speculative.speculative_generate`).

    Returns
    -------
    GenerationResult
        ``.tokens`` (``max_new_tokens`` per prompt) and ``.stats`` (``verifier="gls"``,
        ``rejections``: rounds whose drafts all disagreed with the target's token).
    """
    M = check_int(M, "M", 1)
    rows = row_inputs((target, draft), prompts, max_new_tokens, gamma, RowOptions(**options))
    return decode_rounds(GlsStep(rows, M, bonus), None, int(max_new_tokens))
