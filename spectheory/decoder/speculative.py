"""Batched speculative decoding (and the autoregressive baseline) for any model of the contract
in :mod:`spectheory.decoder.batching` (ragged batches, cache bookkeeping).

The protocol is the one of ``docs/protocol.md`` ("what is counted").
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

import torch

from .._guards import check_bool, check_int
from ..verifiers.base import get_verifier
from ..verifiers.inputs import TorchRoundInputs
from ..verifiers.torch_forms import U_MAX, draw_columns
from .autoregressive import autoregressive_generate  # noqa: F401  (re-exported: the baseline)
from .batching import check_common, forward_window, make_batch, new_tokens, place, prefill, stop_at_eos, sync
from .rng import (
    PURPOSE_ACCEPT,
    PURPOSE_DRAFT,
    PURPOSE_EMIT,
    check_seeds,
    seed_tensor,
    uniforms,
)
from .sampling import sampling_law
from .stats import GenerationResult, StatsRecorder

if TYPE_CHECKING:
    from ..stopping.policies import Policy
    from ..verifiers import Verifier
    from .batching import CausalLM, Prompt

__all__ = ["speculative_generate"]


# ----------------------------------------------------------------------------- one round
def _draft(
    draft, cache, batch, draft_cached, k, K, law, u_draft, stop=None, k_min=0, width=None, aligned=False
):
    """Draft ``k[b]`` tokens per row (``K = max k``) by inverse CDF from ``u_draft`` (``K``
    columns ``[B, 1]``, at most :data:`~spectheory.verifiers.torch_forms.U_MAX`); return the
    tokens [B, K'] and the laws they were sampled from [B, K', V]. A draft-length policy
    ``stop(depth, law, token) -> bool [B]`` ends rows early by lowering ``k`` in place (then
    ``K' <= K`` is the longest draft played). ``k_min = min k`` (read with ``K``): steps
    ``j <= k_min`` have every row live, so each feeds the token it just drafted and their tokens
    are written together after step ``k_min``; ``width``: the first step's window
    (:func:`~.batching.forward_window`), if read already; ``aligned``: every row's window is
    ``width`` wide (its last ``width`` committed tokens: one, or two after a bonus token)."""
    rows = torch.arange(len(k), device=k.device)
    cap = batch.tokens.shape[1]
    before = batch.seq_len - 2  # x_j sits at slot before + j + 1; its input x_{j-1} at before + j
    fed = k + 1  # idle rows (j > k) re-feed their x_k, whose slot is never cached
    live = k_min if stop is None else 0  # steps 1..live: every row drafts
    xs: list[torch.Tensor] = []  # the drafted tokens, columns [B, 1]
    laws: list[torch.Tensor] = []
    for j in range(1, K + 1):
        if j == 1:  # the tokens committed since the draft's last call; the last one's logits
            logits, start = forward_window(
                draft, cache, batch.tokens, draft_cached, batch.seq_len, width, aligned
            )
            last = logits[:, -1] if aligned else logits[rows, batch.seq_len - 1 - start]
        elif j - 1 <= live:  # every row drafted x_{j-1} (it sits at before + j)
            last = draft(xs[-1], cache=cache, start=before + j)[:, 0]
        else:  # feed x_{j-1}, or an idle row's x_k again
            pos = before + fed.clamp(max=j)
            last = draft(batch.tokens.gather(1, pos[:, None]), cache=cache, start=pos)[:, 0]
        law_j = law(last)
        x = draw_columns(law_j, u_draft[j - 1])
        xs.append(x)
        laws.append(law_j)
        if j == live and j < K:  # x_1..x_j of every row, in one write, before a step reads them
            _write_drafts(batch, before, torch.cat(xs, 1))
        elif j > live:
            slot = (before + (j + 1)).clamp(max=cap - 1)
            batch.tokens[rows, slot] = torch.where(k >= j, x[:, 0], batch.tokens[rows, slot])
        if stop is not None:
            k[(k > j) & stop(j, law_j, x[:, 0])] = j  # k > j: the row is live and drafts on
            if not bool((k > j).any()):
                break
    drafts = torch.cat(xs, 1)
    if live == K:
        _write_drafts(batch, before, drafts)
    return drafts, torch.stack(laws, 1)


def _write_drafts(batch, before, drafts):
    """Write drafts ``[B, j]`` that every row drafted at slots ``before + 2 ..`` (below the caps)."""
    slots = before[:, None] + torch.arange(2, drafts.shape[1] + 2, device=drafts.device)
    batch.tokens.scatter_(1, slots, drafts)


def _score(target, cache, batch, target_cached, k, K, law, width=None, aligned=False):
    """One target call over the pending tokens and the drafts; laws at the K+1 round positions
    (``width``: the call's window, if read already; ``aligned``: every row checks ``K`` drafts,
    so the window is each row's last committed token and its drafts, ``K + 1`` wide)."""
    end = None if aligned else batch.seq_len + k
    logits, start = forward_window(target, cache, batch.tokens, target_cached, end, width, aligned)
    if aligned:  # the window is exactly the round's K + 1 positions
        return law(logits)
    idx = ((batch.seq_len - 1 - start)[:, None] + torch.arange(K + 1, device=k.device)).clamp(
        max=logits.shape[1] - 1
    )
    picked = logits.gather(1, idx[..., None].expand(-1, -1, logits.shape[-1]))
    return law(picked)


class _RoundUniforms:
    """All uniforms of round ``rnd``: ``[B, K, 3]`` = (draft draw, accept test, emit draw) per slot.

    ``u[b, i, p]`` hashes ``(seed_b, rnd, i, purpose_p)``; only slot 0 of the emit draw is used.
    They are hashed up to ``block`` rounds at a time, but never more rounds than the call can
    still play (every round emits a token, so at most the largest remaining count) nor more
    slots than ``min(gamma, max_new_tokens)``: the values are a pure function of the counters,
    so the blocking changes nothing but the cost (64 rounds ahead cost 44 s of a 62 s call
    with 20,000 rows and 2 new tokens).
    """

    def __init__(self, seeds: torch.Tensor, gamma: int, block: int = 64) -> None:
        self.seeds, self.gamma, self.block = seeds, gamma, block
        self.first: int | None = None
        self.values: torch.Tensor | None = None

    def __call__(self, rnd: int, K: int, rounds_left: int | None = None) -> torch.Tensor:
        first, values = self.first, self.values
        if first is None or values is None or not first <= rnd < first + values.shape[1]:
            n = self.block if rounds_left is None else max(1, min(self.block, rounds_left))
            self.first = first = rnd
            dev = self.seeds.device
            rounds = torch.arange(rnd, rnd + n, device=dev)[None, :, None, None]
            slots = torch.arange(self.gamma, device=dev)[None, None, :, None]
            purposes = torch.tensor([PURPOSE_DRAFT, PURPOSE_ACCEPT, PURPOSE_EMIT], device=dev)[
                None, None, None, :
            ]
            self.values = values = uniforms(self.seeds[:, None, None, None], rounds, slots, purposes)
            values[..., 0].clamp_(max=U_MAX)  # the draft draws' bound (draw_columns), once per block
        return values[:, rnd - first, :K]


def _commit(batch, k, verdict):
    """Append accepted drafts (already in place) and the emitted token; return the new cached
    lengths and which rows emitted a token."""
    n, token, _ = verdict
    emitted = token >= 0
    rows = torch.arange(len(k), device=k.device)
    old = batch.seq_len
    ends = old + n  # the emitted token's slot
    slot = ends.clamp(max=batch.tokens.shape[1] - 1)
    batch.tokens[rows, slot] = torch.where(emitted, token, batch.tokens[rows, slot])
    batch.seq_len = new = ends + emitted  # int64 + bool
    target_cached = new - 1  # rollback: the rejected drafts and the new token are not cached
    draft_cached = torch.minimum(target_cached, old + k - 1)  # draft never saw its own x_k
    return target_cached, draft_cached, emitted


def _cut_at_eos(drafts, k, eos):
    """Check drafts only up to a drafted ``eos`` (inclusive); return the new ``k`` and which rows drafted it."""
    slots = torch.arange(drafts.shape[1], device=k.device)[None, :]
    hit = (drafts == eos) & (slots < k[:, None])
    first = torch.where(hit.any(1), hit.to(torch.int64).argmax(1) + 1, k)
    return torch.minimum(k, first), hit.any(1)


# ----------------------------------------------------------------------------- public API
def speculative_generate(
    target: CausalLM,
    draft: CausalLM,
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    gamma: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    bonus: bool = True,
    verifier: str | Verifier = "token",
    seed: int | Sequence[int] = 0,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    policy: Policy | None = None,
    eos_token_id: int | None = None,
    check_every: int | None = None,
) -> GenerationResult:
    """Speculative decoding of a batch of prompts, lossless with respect to ``target``.

    Each round, per sequence with ``r`` tokens still to generate: the draft proposes
    ``k = min(gamma, r)`` tokens autoregressively from ``draft_law = S(draft logits)``; ONE
    target call scores them all (``target_law = S(target logits)``, the same ``S`` =
    :func:`~spectheory.decoder.sampling.logits_to_probs` with temperature/top-k/top-p); the
    verifier accepts a prefix and emits one residual token after a rejection, or, if all
    ``k`` are accepted, ``k < r`` and ``bonus``, one bonus token from the target. Sequences
    advance by their own accepted lengths (ragged); caches roll back by position.
    ``temperature=0`` returns exactly the target's greedy continuation.

    Parameters
    ----------
    target, draft : models of the contract in the module docstring, same ``vocab_size``.
    prompts : list of token sequences (lists of ints, 1-d integer arrays/tensors, bytes).
    max_new_tokens, gamma : int >= 1
    temperature : float >= 0;  top_k : int >= 1 or None;  top_p : float in (0, 1] or None
    bonus : bool
    verifier : str or Verifier
        A registered name (``"token"``, ``"block"``, ...) or a
        :class:`~spectheory.verifiers.Verifier`; its ``torch_rule`` decides each round
        (native torch for token and block verification, the numpy rule adapted otherwise).
    eos_token_id : int, optional
        A row stops at this token: a drafted eos is the last draft checked (no bonus token
        follows it) and a row whose committed text ends with it generates nothing more; its
        entry of ``.tokens`` then ends with the eos (shorter than ``max_new_tokens``).
    seed : int or sequence of int
        Per-sequence seeds (an int ``s`` gives sequence ``b`` the independent seed
        :func:`~spectheory.decoder.rng.row_seeds` ``(s, B)[b]``, never ``s + b``). Every uniform is
        a hash of (sequence seed, round, slot, purpose): outputs are reproducible, identical
        on CPU and CUDA up to the models' arithmetic, and do not depend on the rest of the batch.
    device, dtype : optional
        If given, both models are moved there in place (``model.to``); otherwise the target's.
    policy : spectheory.stopping.Policy, optional
        A draft-length policy a real drafter can run (fixed, confidence, entropy, HF schedule;
        :mod:`spectheory.stopping.runtime`): it decides per row after each drafted token whether
        to draft another, at most ``min(gamma, policy.max_depth)`` per round.
    check_every : int >= 1, optional
        The fixed-horizon loop: no host read inside a round. Every round drafts
        ``K = min(gamma, max_new_tokens)`` tokens (a row's ``k`` still bounds what is checked)
        and feeds fixed windows (2 tokens to the draft's first step, ``K + 1`` to the target:
        the widest a round can need), and the loop reads from the device only every
        ``check_every`` rounds, whether any row is unfinished; it stops after
        ``max_new_tokens`` rounds in any case (each round adds at least one token to every
        unfinished row), so ``check_every >= max_new_tokens`` reads nothing at all but always
        plays ``max_new_tokens`` rounds; a few rounds (4, say) waste at most that many. Tokens and
        per-row statistics equal the default loop's; ``batch_draft_calls`` and
        ``batch_target_calls`` count the calls made, which include up to ``check_every - 1``
        idle rounds at the end and full drafts in the last rounds. The timings are not synchronised inside the loop (on CUDA,
        ``time_draft`` and ``time_target`` then time the launches; ``time_total`` is exact).
        This is the loop a CUDA graph of a whole round needs (docs/decoder_floor.md); not with
        ``policy`` or ``eos_token_id``. Default ``None``: one host read per round (the draft
        lengths and both calls' windows).

    Returns
    -------
    GenerationResult
        ``.tokens``: list of ``max_new_tokens``-long int64 arrays; ``.stats``: DecodeStats.

    Examples
    --------
    >>> import torch
    >>> from spectheory.decoder.speculative import speculative_generate
    >>> class Bigram(torch.nn.Module):  # toy model of the contract: logits from the last token
    ...     vocab_size, max_seq_len = 5, 64
    ...     def __init__(self, seed):
    ...         super().__init__()
    ...         self.table = torch.nn.Parameter(torch.randn(5, 5, generator=torch.Generator().manual_seed(seed)))
    ...     def new_cache(self, batch_size, max_len, device=None, dtype=None):
    ...         return None
    ...     def forward(self, ids, cache=None, start=None):
    ...         return self.table[ids]
    >>> res = speculative_generate(Bigram(0), Bigram(1), [[1, 2], [3]], 6, gamma=3, seed=7)
    >>> [len(t) for t in res.tokens], int(sum(r.sum() for r in res.stats.round_tokens))
    ([6, 6], 12)
    """
    models = {"target": target, "draft": draft}
    max_new_tokens, (temperature, top_k, top_p) = check_common(
        models, max_new_tokens, temperature, top_k, top_p
    )
    gamma = check_int(gamma, "gamma", 1)
    bonus = check_bool(bonus, "bonus")
    eos = None if eos_token_id is None else check_int(eos_token_id, "eos_token_id", 0)
    if check_every is not None:
        check_every = check_int(check_every, "check_every", 1)
        if policy is not None or eos is not None:
            raise ValueError("check_every: the fixed-horizon loop takes no policy and no eos_token_id")
    rule_obj = get_verifier(verifier)
    rule = rule_obj.torch_rule
    dev, dt_target = place(target, device, dtype)
    dev_draft, dt_draft = place(draft, dev if device is not None else None, dtype)
    if dev_draft != dev:
        raise ValueError(f"draft: on {dev_draft} while target is on {dev}; pass device= to move both")
    batch = make_batch(prompts, max_new_tokens, models, dev)
    B, cap = batch.tokens.shape
    seeds = seed_tensor(check_seeds(seed, B), dev)
    law = partial(sampling_law, temperature=temperature, top_k=top_k, top_p=top_p)
    rec = StatsRecorder(B, gamma)
    hook = None
    if policy is not None:
        from ..stopping.runtime import DecoderPolicy

        hook = DecoderPolicy(policy, B, dev)
    times = dict(time_prefill=0.0, time_draft=0.0, time_target=0.0)
    calls = dict(batch_draft_calls=0, batch_target_calls=0)
    with torch.inference_mode():
        sync(dev)
        t_start = time.perf_counter()
        target_cache = target.new_cache(B, cap, device=dev, dtype=dt_target)
        draft_cache = draft.new_cache(B, cap, device=dev, dtype=dt_draft)
        target_cached = prefill(target, target_cache, batch)
        draft_cached = prefill(draft, draft_cache, batch)
        sync(dev)
        times["time_prefill"] = time.perf_counter() - t_start
        round_uniforms = _RoundUniforms(seeds, min(gamma, max_new_tokens))
        rnd = 0
        while True:
            remaining = batch.remaining
            k = torch.clamp(remaining, max=gamma)
            if hook is not None:
                k = hook.cap(k)
            if check_every is None:  # one host read per round: draft lengths, what is left, draft window
                gap = batch.seq_len - draft_cached  # the tokens each row feeds the draft's first step
                K, most, k_min, w_draft, w_min = torch.stack(
                    (k.max(), remaining.max(), k.min(), gap.max(), gap.min())
                ).tolist()
                if K == 0:
                    break
                draft_aligned = w_min == w_draft
            else:  # the fixed horizon: the widest round, and a read every check_every rounds
                # every round adds a token to every unfinished row: max_new_tokens rounds suffice
                if rnd == max_new_tokens or (rnd % check_every == 0 and not bool((remaining > 0).any())):
                    break
                K, most, k_min = round_uniforms.gamma, None, 0
                w_draft, draft_aligned = 2, False
            # the target has cached all but the last committed token (prefill and _commit keep
            # target_cached = seq_len - 1), so its window is max(k) + 1 <= K + 1 wide
            w_target = K + 1
            t0 = time.perf_counter()
            u = round_uniforms(rnd, K, most)
            stop = None if hook is None else partial(hook.stop, position=batch.seq_len - batch.prompt_len)
            drafts, draft_laws = _draft(
                draft,
                draft_cache,
                batch,
                draft_cached,
                k,
                K,
                law,
                u[..., 0:1].unbind(1),
                stop,
                k_min,
                w_draft,
                aligned=draft_aligned,
            )
            K = drafts.shape[1]
            u = u[:, :K]
            if check_every is None:
                sync(dev)
            t1 = time.perf_counter()
            # a policy may have shortened drafts: then the target's window is read afresh
            w = w_target if hook is None else None
            aligned = hook is None and k_min == K  # never in the fixed horizon (k_min = 0 there)
            target_laws = _score(target, target_cache, batch, target_cached, k, K, law, w, aligned)
            if check_every is None:
                sync(dev)
            t2 = time.perf_counter()
            allow_bonus = (k < remaining) & bool(bonus)
            if eos is not None:  # a drafted eos is the last token checked, and no bonus follows it
                k, eos_drafted = _cut_at_eos(drafts, k, eos)
                allow_bonus = allow_bonus & ~eos_drafted
            verdict = rule(
                TorchRoundInputs(target_laws, draft_laws, drafts, k, u[..., 1], u[:, 0, 2], allow_bonus)
            )
            target_cached, draft_cached, emitted = _commit(batch, k, verdict)
            if eos is not None:
                stop_at_eos(batch, eos)
            if hook is not None:
                hook.after_round(k, verdict.n_accepted, k > 0)
            # stays on the device (the flags are promoted to int64)
            rec.add_round_counts(torch.stack([k, verdict.n_accepted, emitted, verdict.rejected]))
            times["time_draft"] += t1 - t0
            times["time_target"] += t2 - t1
            calls["batch_draft_calls"] += K
            calls["batch_target_calls"] += 1
            rnd += 1
        tokens = new_tokens(batch, max_new_tokens)
        sync(dev)
        times["time_total"] = time.perf_counter() - t_start
    stats = rec.finish(verifier if isinstance(verifier, str) else rule_obj.name, bool(bonus), **times)
    stats.batch_draft_calls, stats.batch_target_calls = (
        calls["batch_draft_calls"],
        calls["batch_target_calls"],
    )
    return GenerationResult(tokens, stats)
