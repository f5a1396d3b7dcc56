"""One decoding loop for every torch round kind: prefill, rounds, stop tokens, RNG and stats.

A speculative decode is the same loop whatever the round drafts (a path, a tree): build the
caches and prefill, then, round after round, read what is left on the host (or not: the
fixed-horizon mode), hash the round's uniforms, draft, score with one target call, verify and
commit, record the round's counts, and stop when every row of the ragged batch is done. The
loop lives here once (:func:`run_rounds`, as gpt-fast's ``speculative_decode``); what a kind of
round does is a *round step*, an object with four methods:

- ``prefill()``: build the caches and prefill them with the prompts;
- ``plan(remaining, fixed) -> (slots, rounds_left) | None``: the round's draft lengths from the
  tokens each row still needs (``remaining [B]``), ``None`` when no row drafts (the loop ends;
  never asked in the fixed horizon); ``slots`` uniforms per row are hashed for the round;
- ``draft(u) -> int``: draft with the round's uniforms ``u [B, slots, 3]``, return the draft
  calls made;
- ``score()``: the one target call; ``commit() -> counts [4, B]``: verify, append the accepted
  tokens and the emitted one, and return ``(drafted, accepted, emitted, rejected)`` per row.

The two round steps are :class:`~spectheory.decoder.speculative.PathStep` and
:class:`~spectheory.decoder.tree_decode.TreeStep`; their front doors,
:func:`~spectheory.decoder.speculative.speculative_generate` and
:func:`~spectheory.decoder.tree_decode.tree_generate`, check the arguments, build the batch and
the step, and call :func:`run_rounds`.
"""

from __future__ import annotations

import time
from typing import Protocol

import torch

from ..verifiers.torch_forms import U_MAX
from .batching import Batch, new_tokens, stop_at_eos, sync
from .rng import PURPOSE_ACCEPT, PURPOSE_DRAFT, PURPOSE_EMIT, uniforms
from .stats import GenerationResult, StatsRecorder

__all__ = ["RoundStep", "RoundUniforms", "run_rounds"]


class RoundStep(Protocol):
    """What one kind of round does inside :func:`run_rounds` (module docstring)."""

    def prefill(self) -> None: ...

    def plan(self, remaining: torch.Tensor, fixed: bool) -> tuple[int, int | None] | None: ...

    def draft(self, u: torch.Tensor) -> int: ...

    def score(self) -> None: ...

    def commit(self) -> torch.Tensor: ...


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


def run_rounds(
    step: RoundStep,
    batch: Batch,
    rng: RoundUniforms,
    rec: StatsRecorder,
    max_new_tokens: int,
    device: torch.device,
    verifier_name: str,
    bonus: bool,
    check_every: int | None = None,
    eos: int | None = None,
) -> GenerationResult:
    """Prefill, then play rounds of ``step`` until every row is done; tokens and statistics.

    Parameters
    ----------
    step : RoundStep
        The kind of round (module docstring), built on ``batch``.
    batch : Batch
        The ragged rows (:func:`~spectheory.decoder.batching.make_batch`); committed in place.
    rng : RoundUniforms
        The rounds' uniforms (one hash per seed, round, slot and purpose).
    rec : StatsRecorder
        Receives each round's counts ``[4, B]``.
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
        ``stats.batch_draft_calls``: the draft calls the step reported; ``batch_target_calls``:
        the rounds played.
    """
    fixed = check_every is not None
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
            u = rng(rnd, *planned)
            n_calls = step.draft(u)
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
            times["time_target"] += t2 - t1
            draft_calls += n_calls
            rnd += 1
        tokens = new_tokens(batch, max_new_tokens)
        sync(device)
        times["time_total"] = time.perf_counter() - t_start
    stats = rec.finish(verifier_name, bool(bonus), **times)
    stats.batch_draft_calls, stats.batch_target_calls = draft_calls, rnd
    return GenerationResult(tokens, stats)
