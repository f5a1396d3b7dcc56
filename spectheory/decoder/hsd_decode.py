r"""Naive HSD in the real decoder: a round that calls the target more than once (Zhou et al., ICLR 2026).

Naive Hierarchical Speculative Decoding as the authors' code runs it
(``ZhouYuxuanYX/Hierarchical-Speculative-Decoding`` at ``b8575e2``, ``_assisted_decoding`` with
``backward=True, clever=False``; :mod:`spectheory.verifiers.hsd_naive`) is not a verifier of
one target call: after a rejection its forward passes draft one token ``Z ~ q(. | e)`` after
the tokens ``e`` emitted so far in the round, call the target again on ``(e, Z)`` and emit
``t ~ norm((p(e) p(. | e) - q(e) q(. | e))_+)``, until the round has ``k`` tokens. Those laws
are read at contexts off the drafted path, so no ``torch_rule`` over the one call's laws can
express it, and :func:`~spectheory.decoder.speculative_generate` cannot run it. This module
plays the round (:func:`~spectheory.verifiers.hsd_naive_round.play_naive_hsd_round`) against
the real models as the round step :class:`NaiveHsdStep` of the decoder's one loop, row by row
(:class:`~spectheory.decoder.row_by_row.RowStep`), each call uncached on the whole sequence, as
:mod:`~spectheory.decoder.gls_decode` does: it is there to check the rule on real models, not
for speed.

Per sequence with ``r`` tokens still to generate, a round drafts ``k = min(gamma, r)`` tokens,
makes ``1 + max(0, k - 1 - tau)`` target calls and emits ``k`` or ``k + 1`` tokens (the
``(k+1)``-th is dropped when ``k = r``). Counted (``docs/protocol.md``, with one change):
``stats.target_calls`` and ``stats.batch_target_calls`` are the target *calls*, more than the
rounds (``len(stats.round_accepted[b])``); ``draft_tokens`` the draft forward steps (``k`` a
round plus one per forward pass); ``rejections`` the rounds whose first pass rejected a draft;
``round_accepted`` the drafted tokens a round emitted (``tau``, plus one when the last forward
pass keeps its draft). Uniforms come from a numpy generator per row
(:func:`~spectheory.decoder.rng.row_seeds`), so the tokens are the same on every device.
``clever=True`` plays the first pass alone (the authors' "HSD (clever)", ``"hsd_listing"``, one
call a round). Both are biased (``docs/sequence_rules.md``, Theorems 2 and 4-5).

Examples
--------
>>> import torch
>>> from spectheory.decoder.hsd_decode import naive_hsd_generate
>>> from spectheory.decoder.vocab import TokenTableModel
>>> iid = lambda law: TokenTableModel(torch.log(torch.tensor([law, law])), [0, 1])
>>> res = naive_hsd_generate(iid([1 / 3, 2 / 3]), iid([2 / 3, 1 / 3]), [[0], [1, 0]], 6, gamma=3, seed=0)
>>> [len(x) for x in res.tokens], bool((res.stats.target_calls >= 2).all())
([6, 6], True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from ..verifiers.base import get_verifier
from ..verifiers.hsd_naive_round import play_naive_hsd_round
from .batching import CausalLM, Prompt
from .driver import decode_rounds
from .generation_result import DecodeStats, GenerationResult
from .logits import sampling_law
from .row_by_row import RowOptions, Rows, RowStep, row_inputs

__all__ = ["naive_hsd_generate", "NaiveHsdStep"]


class NaiveHsdStep(RowStep):
    """The naive HSD round of each unfinished row (module docstring): the whole round, with its
    several target calls, is :func:`~spectheory.verifiers.hsd_naive_round.play_naive_hsd_round`,
    played in ``draft`` (``score`` has nothing left to do). ``finish`` reports the target calls
    and draft steps the rounds made, not the rounds."""

    def __init__(self, inputs: Rows, clever: bool) -> None:
        self.first_pass = get_verifier("hsd_listing")
        super().__init__(inputs, self.first_pass.name if clever else "hsd_naive", True)
        self.clever, self.rngs = clever, [np.random.default_rng(s) for s in inputs.seeds]
        self.calls, self.drafts = np.zeros((2, len(inputs.seeds)), np.int64)

    def laws(self, model: CausalLM, seq: list[int]) -> Callable[[tuple[int, ...]], np.ndarray]:
        """``toks -> [len(toks) + 1, V]``: one call on ``seq + toks``, the laws from ``seq``'s last token on."""

        def laws(toks: tuple[int, ...]) -> np.ndarray:
            ids = torch.tensor([seq + list(toks)], dtype=torch.long, device=self.device)
            return sampling_law(model(ids)[0, len(seq) - 1 :], *self.sampling).cpu().numpy()

        return laws

    def draft(self, u: None) -> int:
        """Play each row's round; the draft steps made."""
        self.plays = {}
        for b in self.rows:
            seq = self.seq(b)
            play = play_naive_hsd_round(
                self.laws(self.target, seq),
                self.laws(self.draft_model, seq),
                self.k[b],
                self.rngs[b].random,
                first_pass=self.first_pass,
                forward=not self.clever,
            )
            self.plays[b] = play
            self.calls[b] += play.target_calls
            self.drafts[b] += play.draft_tokens
        return sum(p.draft_tokens for p in self.plays.values())

    def score(self) -> None:
        """Nothing: the round's target calls were made with its drafts."""

    def commit(self) -> torch.Tensor:
        """Each row's emitted tokens (the ``(k+1)``-th past the horizon dropped)."""
        for b, play in self.plays.items():
            self.emit(b, play.emitted[: self.remaining[b]], play.accepted, play.tau < self.k[b])
        return self.round_counts()

    def finish(self, stats: DecodeStats, **per_row: object) -> DecodeStats:
        return super().finish(stats, target_calls=self.calls, draft_tokens=self.drafts)


def naive_hsd_generate(
    target: CausalLM,
    draft: CausalLM,
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    gamma: int,
    *,
    clever: bool = False,
    **options: Any,
) -> GenerationResult:
    """Naive HSD decoding of a batch of prompts, several target calls a round (module docstring).

    Parameters
    ----------
    target, draft : models of the decoder contract, same ``vocab_size``.
    prompts : list of token sequences
    max_new_tokens, gamma : int >= 1
        Tokens to generate per prompt; drafts per round.
    clever : bool
        The first pass alone (the authors' ``clever=True``: the listing, one call a round).
    **options
        ``temperature``, ``top_k``, ``top_p``, ``seed``, ``device`` (as in
        :func:`~spectheory.decoder.gls_decode.gls_generate`).

    Returns
    -------
    GenerationResult
        ``.tokens`` (``max_new_tokens`` per prompt) and ``.stats`` (``verifier="hsd_naive"``, or
        ``"hsd_listing"`` when ``clever``; ``target_calls`` counts calls, not rounds).
    """
    if not isinstance(clever, (bool, np.bool_)):
        raise ValueError(f"clever: expected a bool, got {clever!r}")
    rows = row_inputs((target, draft), prompts, max_new_tokens, gamma, RowOptions(**options))
    return decode_rounds(NaiveHsdStep(rows, bool(clever)), None, int(max_new_tokens))
