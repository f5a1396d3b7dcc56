"""One decoding loop for every torch round kind: prefill, rounds, stop tokens, RNG and stats.

A decode is the same loop whatever the round drafts (a path, a tree, ``M`` drafts, nothing):
build the caches and prefill, then, round after round, read what is left on the host (or not:
the fixed-horizon mode), hash the round's uniforms, draft, score with the target, verify and
commit, record the round's counts, and stop when every row of the ragged batch is done. The
loop lives here once (:func:`decode_rounds`, as gpt-fast's ``speculative_decode``); what a kind
of round does is a *round step* (:class:`RoundStep`), an object with the attributes ``batch``
(the ragged rows it commits to), ``name``, ``bonus`` and ``gamma`` (what the statistics report)
and six methods:

- ``prefill()``: build the caches and prefill them with the prompts (a step may leave the
  target's prompt to the first round's call, which scores it with the first drafts: it then sets
  ``prompt_in_first_score``, and the loop counts that call's time as the prefill's);
- ``plan(remaining, fixed) -> (slots, rounds_left) | None``: the round's draft lengths from the
  tokens each row still needs (``remaining [B]``), ``None`` when no row drafts (the loop ends;
  never asked in the fixed horizon); ``slots`` uniforms per row are hashed for the round;
- ``draft(u) -> int``: draft with the round's uniforms ``u [B, slots, 3]`` (``None`` when the
  step draws its own randomness), return the draft calls made;
- ``score()``: the target call; ``commit() -> counts``: verify, append the accepted tokens and
  the emitted one, and return ``(drafted, accepted, emitted, rejected)`` per row, ``[4, B]``
  (or ``[5, B]``: a fifth row, which rows took part in the target call, when that is not
  ``drafted > 0``; :class:`~spectheory.decoder.generation_result.StatsRecorder`);
- ``finish(stats) -> stats``: the statistics as the kind reports them (:class:`StepDefaults`: as
  recorded).

The round steps: :class:`~spectheory.decoder.path_step.PathStep`,
:class:`~spectheory.decoder.tree_step.TreeStep` (Medusa heads and dynamic trees are its
drafters), :class:`~spectheory.decoder.gls_decode.GlsStep` and
:class:`~spectheory.decoder.hsd_decode.NaiveHsdStep` (row by row, uncached:
:class:`~spectheory.decoder.row_by_row.RowStep`) and the baseline's
:class:`~spectheory.decoder.autoregressive.AutoregressiveStep`. Their front doors
(:func:`~spectheory.decoder.speculative.speculative_generate`,
:func:`~spectheory.decoder.tree_decode.tree_generate`, ...) check the arguments, build the batch
and the step, and call :func:`decode_rounds`.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

import torch

from ..verifiers.torch_forms import U_MAX
from .batching import Batch, new_tokens, stop_at_eos, sync
from .generation_result import DecodeStats, GenerationResult, StatsRecorder
from .rng import PURPOSE_ACCEPT, PURPOSE_DRAFT, PURPOSE_EMIT, uniforms

__all__ = ["RoundStep", "StepDefaults", "RoundUniforms", "decode_rounds"]


class RoundStep(Protocol):
    """What one kind of round does inside :func:`decode_rounds` (module docstring)."""

    batch: Batch
    name: str
    bonus: bool
    gamma: int
    prompt_in_first_score: bool

    def prefill(self) -> None: ...

    def plan(self, remaining: torch.Tensor, fixed: bool) -> tuple[int, int | None] | None: ...

    def draft(self, u: Any) -> int: ...  # u: a tensor [B, slots, 3], or None without uniforms

    def score(self) -> None: ...

    def commit(self) -> torch.Tensor: ...

    def finish(self, stats: DecodeStats) -> DecodeStats: ...


class StepDefaults:
    """A base for round steps: the statistics reported as recorded (``finish``); the target's
    prompt prefilled apart (``prompt_in_first_score = False``)."""

    batch: Batch
    name: str
    bonus: bool
    gamma: int
    prompt_in_first_score: bool = False

    def finish(self, stats: DecodeStats) -> DecodeStats:
        """``stats`` unchanged: every round was one target call of the rows that drafted."""
        return stats


class RoundUniforms:
    """All uniforms of round ``rnd``: ``[B, slots, 3]`` = (draft draw, accept test, emit draw).

    ``u[b, i, p]`` hashes ``(seed_b, rnd, i, purpose_p)``. They are hashed up to ``block`` rounds
    at a time, but never more rounds than the call can still play (``rounds_left``, when known:
    every round emits a token, so at most the largest remaining count): the values are a pure
    function of the counters, so the blocking changes nothing but the cost (64 rounds ahead
    cost 44 s of a 62 s call with 20,000 rows and 2 new tokens). ``clamp_draft``: the draft
    draws are bounded by :data:`~spectheory.verifiers.torch_forms.U_MAX` once per block (what
    :func:`~spectheory.verifiers.torch_forms.draw_columns` needs).

    Examples
    --------
    >>> u = RoundUniforms(torch.tensor([1, 2]), 3)
    >>> u(0, 2).shape, bool((u(5, 3)[:, :2] == RoundUniforms(torch.tensor([1, 2]), 3, block=1)(5, 2)).all())
    (torch.Size([2, 2, 3]), True)
    """

    def __init__(self, seeds: torch.Tensor, slots: int, block: int = 64, clamp_draft: bool = True) -> None:
        self.seeds, self.gamma, self.block, self.clamp_draft = seeds, slots, block, clamp_draft
        self.first: int | None = None
        self.values: torch.Tensor | None = None
        dev = seeds.device
        self.counters = (  # the slot and purpose counters, built once
            torch.arange(slots, device=dev)[None, None, :, None],
            torch.tensor([PURPOSE_DRAFT, PURPOSE_ACCEPT, PURPOSE_EMIT], device=dev)[None, None, None, :],
        )

    def __call__(self, rnd: int, K: int, rounds_left: int | None = None) -> torch.Tensor:
        first, values = self.first, self.values
        if first is None or values is None or not first <= rnd < first + values.shape[1]:
            n = self.block if rounds_left is None else max(1, min(self.block, rounds_left))
            self.first = first = rnd
            rounds = torch.arange(rnd, rnd + n, device=self.seeds.device)[None, :, None, None]
            self.values = values = uniforms(self.seeds[:, None, None, None], rounds, *self.counters)
            if self.clamp_draft:
                values[..., 0].clamp_(max=U_MAX)  # the draft draws' bound (draw_columns), once per block
        u = values[:, rnd - first]
        return u if K == self.gamma else u[:, :K]  # (one operation fewer per round)


def decode_rounds(
    step: RoundStep,
    rng: RoundUniforms | None,
    max_new_tokens: int,
    check_every: int | None = None,
    eos: int | None = None,
) -> GenerationResult:
    """Prefill, then play rounds of ``step`` until every row is done; tokens and statistics.

    Parameters
    ----------
    step : RoundStep
        The kind of round (module docstring); commits to its ragged rows ``step.batch``
        (:func:`~spectheory.decoder.batching.make_batch`) in place.
    rng : RoundUniforms or None
        The rounds' uniforms (one hash per seed, round, slot and purpose); ``None``: the step
        draws its own (``draft`` gets ``None``).
    max_new_tokens : int
        The tokens each row generates at most.
    check_every : int, optional
        ``None``: the step reads the round's lengths on the host each round (and the loop
        synchronises around the target call for the timings). Else the fixed horizon: no host
        read inside a round, a read every ``check_every`` rounds whether any row is unfinished,
        and at most ``max_new_tokens`` rounds (each adds a token to every unfinished row).
    eos : int, optional
        A row whose committed text ends with this token generates nothing more.

    Returns
    -------
    GenerationResult
        ``stats`` (after ``step.finish``): ``batch_draft_calls``, the draft calls the step
        reported; ``batch_target_calls``, the rounds played.
    """
    batch, fixed = step.batch, check_every is not None
    device = batch.tokens.device
    rec = StatsRecorder(batch.tokens.shape[0], step.gamma)
    times = dict(time_prefill=0.0, time_draft=0.0, time_target=0.0)
    draft_calls, rnd = 0, 0
    with torch.inference_mode():
        sync(device)
        t_start = time.perf_counter()
        step.prefill()
        sync(device)
        times["time_prefill"] = time.perf_counter() - t_start
        while True:
            remaining = batch.remaining
            if check_every is not None and (
                rnd == max_new_tokens or (rnd % check_every == 0 and not bool((remaining > 0).any()))
            ):
                break
            planned = step.plan(remaining, fixed)
            if planned is None:
                break
            t0 = time.perf_counter()
            n_calls = step.draft(None if rng is None else rng(rnd, *planned))
            if not fixed:
                sync(device)
            t1 = time.perf_counter()
            step.score()
            if not fixed:
                sync(device)
            t2 = time.perf_counter()
            counts = step.commit()
            if eos is not None:
                stop_at_eos(batch, eos)
            rec.add_round_counts(counts)  # stays on the device
            times["time_draft"] += t1 - t0
            # a first call that scored the prompt too is the prefill's (with the round's scoring
            # in it: the rounds' times then hold the forwards of the target's cached calls only)
            times["time_prefill" if rnd == 0 and step.prompt_in_first_score else "time_target"] += t2 - t1
            draft_calls += n_calls
            rnd += 1
        tokens = new_tokens(batch, max_new_tokens)
        sync(device)
        times["time_total"] = time.perf_counter() - t_start
    stats = rec.finish(step.name, bool(step.bonus), **times)
    stats.batch_draft_calls, stats.batch_target_calls = draft_calls, rnd
    return GenerationResult(tokens, step.finish(stats))
