"""One round of speculative decoding along a path, as the decoder plays it: the draft proposes
``k`` tokens per row, one target call scores them, the verifier accepts a prefix, and the caches
roll back by position (:class:`PathStep`, a round step of :mod:`spectheory.decoder.driver`).

Read top to bottom, a round is ``_draft`` (the draft's ``k`` steps, by inverse CDF from the
round's uniforms), ``_score`` (the one target call over the pending token and the drafts),
the rule's verdict and ``_commit`` (append, roll back). The prefill keeps each model's law
after the prompt where the model can run its head on chosen positions (:func:`~.batching.prefill_law`);
a target that can is not prefilled: the first round's call scores the prompt with the drafts.
The front door is :func:`~spectheory.decoder.speculative.speculative_generate`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import torch

from ..verifiers.inputs import TorchRoundInputs
from ..verifiers.torch_forms import Verdict, draw_columns, sample_from_uniform
from .batching import forward_window, keeps_chosen_logits, prefill, prefill_law
from .driver import StepDefaults

if TYPE_CHECKING:
    from .batching import Batch, CausalLM

__all__ = ["PathStep"]


# ----------------------------------------------------------------------------- one round
def _draft(
    draft,
    cache,
    batch,
    draft_cached,
    k,
    K,
    law,
    u_draft,
    stop=None,
    k_min=0,
    width=None,
    aligned=False,
    first=None,
):
    """Draft ``k[b]`` tokens per row (``K = max k``) by inverse CDF from ``u_draft`` (``K``
    columns ``[B, 1]``, at most :data:`~spectheory.verifiers.torch_forms.U_MAX`); return the
    tokens [B, K'] and the laws they were sampled from [B, K', V]. A draft-length policy
    ``stop(depth, law, token) -> bool [B]`` ends rows early by lowering ``k`` in place (then
    ``K' <= K`` is the longest draft played). ``k_min = min k`` (read with ``K``): steps
    ``j <= k_min`` have every row live, so each feeds the token it just drafted and their tokens
    are written together after step ``k_min``; ``width``: the first step's window
    (:func:`~.batching.forward_window`), if read already; ``aligned``: every row's window is
    ``width`` wide (its last ``width`` committed tokens: one, or two after a bonus token);
    ``first``: the logits after the prompt ``[B, 1, V]``, kept by the prefill (the first round's
    first step then calls nothing). ``stop`` also gets each step's logits (``logits=``: a greedy
    policy reads its confidence from them)."""
    rows = torch.arange(len(k), device=k.device)
    cap = batch.tokens.shape[1]
    before = batch.seq_len - 2  # x_j sits at slot before + j + 1; its input x_{j-1} at before + j
    fed = k + 1  # idle rows (j > k) re-feed their x_k, whose slot is never cached
    live = k_min if stop is None else 0  # steps 1..live: every row drafts
    xs: list[torch.Tensor] = []  # the drafted tokens, columns [B, 1]
    laws: list[torch.Tensor] = []
    for j in range(1, K + 1):
        if j == 1 and first is not None:  # the logits after the prompt (the prefill kept them)
            last = first[:, 0]
        elif j == 1:  # the tokens committed since the draft's last call; the last one's logits
            logits, start = forward_window(
                draft, cache, batch.tokens, draft_cached, batch.seq_len, width, aligned, last_only=True
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
            k[(k > j) & stop(j, law_j, x[:, 0], logits=last)] = j  # k > j: the row is live and drafts on
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


def _commit(batch, k, verdict, draft_cached):
    """Append accepted drafts (already in place) and the emitted token; return the new cached
    lengths and which rows emitted a token. A row that drafted nothing (``k = 0``: a plain
    target step) fed its draft nothing, so its draft keeps what it had cached (claiming
    ``old - 1`` there left a committed token never fed: after two plain steps in a row prompt
    lookup read a stale drafted token in its history)."""
    n, token, _ = verdict
    emitted = token >= 0
    rows = torch.arange(len(k), device=k.device)
    old = batch.seq_len
    ends = old + n  # the emitted token's slot
    slot = ends.clamp(max=batch.tokens.shape[1] - 1)
    batch.tokens[rows, slot] = torch.where(emitted, token, batch.tokens[rows, slot])
    batch.seq_len = new = ends + emitted  # int64 + bool
    target_cached = new - 1  # rollback: the rejected drafts and the new token are not cached
    fed = torch.minimum(target_cached, old + k - 1)  # draft never saw its own x_k
    draft_cached = torch.where(k > 0, fed, torch.minimum(draft_cached, target_cached))
    return target_cached, draft_cached, emitted


def _plain_steps(rule, inputs, plain, K):
    """The rule's verdict, with the rows ``plain`` (``k = 0``, inactive for the rule) emitting
    one token from the target's law at their last committed position (a plain step);
    ``K = 0``: no row drafted, the rule is not called."""
    t0 = inputs.target_probs[:, 0]
    token = sample_from_uniform(t0.to(torch.float64), inputs.u_emit)
    if K == 0:
        zero = torch.zeros_like(inputs.k)
        return Verdict(zero, torch.where(plain, token, -1), zero.bool())
    verdict = rule(inputs)
    return Verdict(verdict.n_accepted, torch.where(plain, token, verdict.next_token), verdict.rejected)


def _cut_at_eos(drafts, k, eos):
    """Check drafts only up to a drafted ``eos`` (inclusive); return the new ``k`` and which rows drafted it."""
    slots = torch.arange(drafts.shape[1], device=k.device)[None, :]
    hit = (drafts == eos) & (slots < k[:, None])
    first = torch.where(hit.any(1), hit.to(torch.int64).argmax(1) + 1, k)
    return torch.minimum(k, first), hit.any(1)


class PathStep(StepDefaults):
    """The round step of a path (:mod:`spectheory.decoder.driver`): draft ``k = min(gamma, r)``
    tokens per row (``min(gamma, r - 1)`` when ``short``: the target's token is the last; a
    draft-length ``hook`` may end rows early), score them in one target call, verify with
    ``rule`` (a torch rule named ``name``), commit. ``K_fixed``: the draft length of every round
    in the fixed horizon. The caches roll back by position (``target_cached``,
    ``draft_cached``)."""

    def __init__(
        self,
        target: CausalLM,
        draft: CausalLM,
        dtypes: tuple[Any, Any],
        batch: Batch,
        law: Callable[[torch.Tensor], torch.Tensor],
        rule: Callable[..., Any],
        name: str,
        gamma: int,
        K_fixed: int,
        bonus: bool,
        eos: int | None,
        hook: Any,
        schedule: Any = None,
        short: bool = False,
    ) -> None:
        self.target, self.draft_model, self.dtypes = target, draft, dtypes
        self.batch, self.law, self.rule, self.name = batch, law, rule, name
        self.gamma, self.K_fixed, self.bonus, self.eos, self.hook = gamma, K_fixed, bool(bonus), eos, hook
        self.schedule = schedule  # verified lengths from the scored block (DecoderSchedule), or None
        # a draft that knows in advance how far it can propose (prompt lookup): rows it caps to 0
        # play a plain target step (needs the bonus token: it is the step's one token)
        self.cap = getattr(draft, "proposal_cap", None) if self.bonus else None
        # drafts stop one token short of the end: the bonus (or residual) token is the last,
        # and a row with one token left plays a plain target step (needs the bonus token too)
        self.short = bool(short) and self.bonus
        self.plain_rows = self.cap is not None or self.short  # rows may draft nothing

    def prefill(self) -> None:
        """Both models' caches, prefilled with the prompts (the target's and, when it can keep
        chosen positions, the draft's with their laws after the prompt)."""
        B, cap = self.batch.tokens.shape
        dev = self.batch.tokens.device
        dt_target, dt_draft = self.dtypes
        self.target_cache = self.target.new_cache(B, cap, device=dev, dtype=dt_target)
        self.draft_cache = self.draft_model.new_cache(B, cap, device=dev, dtype=dt_draft)
        # a target that runs its head on chosen positions is not prefilled: the first round's one
        # call scores the prompt and the drafts together, its head on the round's K + 1
        # positions (as HF's assisted generation: as many target calls as rounds); others
        # prefill every prompt token and keep the law after it, so the first round's call
        # scores the drafts only and a first round without drafts calls nothing
        self.merge_first = keeps_chosen_logits(self.target)
        self.prompt_in_first_score = self.merge_first  # the loop times that call as the prefill
        self.first_laws: torch.Tensor | None = None
        if self.merge_first:
            self.target_cached = torch.zeros_like(self.batch.seq_len)
        else:
            self.target_cached, first_logits = prefill_law(self.target, self.target_cache, self.batch)
            self.first_laws = self.law(first_logits)
        # a draft that runs its head on chosen positions caches the whole prompt and keeps its
        # law after it: the first round's first draft step then calls nothing (HF's assistant
        # likewise drafts its first token from its prompt call); others cache all but the last
        # prompt token, which that step feeds
        if keeps_chosen_logits(self.draft_model):
            self.draft_cached, first_draft = prefill_law(self.draft_model, self.draft_cache, self.batch)
            self.first_draft_logits: torch.Tensor | None = first_draft
        else:
            self.draft_cached = prefill(self.draft_model, self.draft_cache, self.batch)
            self.first_draft_logits = None

    def plan(self, remaining: torch.Tensor, fixed: bool) -> tuple[int, int | None] | None:
        """``k = min(gamma, remaining)`` per row (``remaining - 1`` when ``short``; capped by the
        policy); per round, one host read of the lengths and the draft's window; ``(K, rows' most
        remaining)`` for the uniforms."""
        batch, hook = self.batch, self.hook
        k = (
            torch.clamp(remaining - 1, min=0, max=self.gamma)
            if self.short
            else torch.clamp(remaining, max=self.gamma)
        )
        if self.cap is not None:
            k = self.cap(batch.tokens, batch.seq_len, k)
        if hook is not None:
            k = hook.cap(k)
        if not fixed:  # one host read per round: draft lengths, what is left, draft window
            gap = batch.seq_len - self.draft_cached  # the tokens each row feeds the draft's first step
            K, most, k_min, w_draft, w_min = torch.stack(
                (k.max(), remaining.max(), k.min(), gap.max(), gap.min())
            ).tolist()
            if K == 0 and (not self.plain_rows or most <= 0):
                return None
            draft_aligned = w_min == w_draft
        else:  # the fixed horizon: the widest round
            K, most, k_min = self.K_fixed, None, 0
            # the draft's first window: 2 tokens at most, unless plain steps (a capped draft)
            # left it several behind: then read it (a host sync, only for such drafts)
            w_draft, draft_aligned = (2 if self.cap is None else None), False
        self.k, self.remaining, self.K, self.k_min = k, remaining, K, k_min
        self.w_draft, self.draft_aligned = w_draft, draft_aligned
        return max(K, 1), most  # a round of plain steps (K = 0) still draws its emit uniforms

    def draft(self, u: torch.Tensor) -> int:
        """Draft the round's tokens from the draw uniforms ``u[..., 0]``; the draft calls made
        (in the first round one fewer than the tokens drafted, when the prefill kept the law
        after the prompt)."""
        batch, hook, k = self.batch, self.hook, self.k
        self.u_emit = u[:, 0, 2]
        first, self.first_draft_logits = self.first_draft_logits, None  # the first round only
        if self.K == 0:  # every row plays a plain target step: nothing drafted
            B, V = k.shape[0], self.target.vocab_size
            self.drafts = batch.tokens.new_zeros(B, 0)
            self.draft_laws = torch.zeros(B, 0, V, dtype=torch.float64, device=k.device)
            self.u_accept = u[:, :0, 1]
            return 0
        stop = None if hook is None else partial(hook.stop, position=batch.seq_len - batch.prompt_len)
        self.drafts, self.draft_laws = _draft(
            self.draft_model,
            self.draft_cache,
            batch,
            self.draft_cached,
            k,
            self.K,
            self.law,
            u[..., 0:1].unbind(1),
            stop,
            self.k_min,
            self.w_draft,
            aligned=self.draft_aligned,
            first=first,
        )
        K = self.drafts.shape[1]
        self.u_accept = u[:, :K, 1]
        return K - (first is not None)

    def score(self) -> None:
        """The one target call: the laws at the round's ``K + 1`` positions."""
        # the target has cached all but the last committed token (prefill and _commit keep
        # target_cached = seq_len - 1), so its window is max(k) + 1 <= K + 1 wide; a policy may
        # have shortened drafts: then the window is read afresh
        K, hook = self.drafts.shape[1], self.hook
        if self.merge_first:  # the first round: the prompt and the drafts in one call
            self.merge_first = False
            self.target_laws = self._score_prompt_and_drafts(K)
            return
        if self.first_laws is not None:  # the first round: the law after the prompt is known
            first, self.first_laws = self.first_laws, None
            self.target_laws = first if K == 0 else torch.cat([first, self._score_drafts(K)], 1)
            return
        w = self.K + 1 if hook is None else None
        aligned = hook is None and self.k_min == K  # never in the fixed horizon (k_min = 0 there)
        self.target_laws = _score(
            self.target, self.target_cache, self.batch, self.target_cached, self.k, K, self.law, w, aligned
        )

    def _score_prompt_and_drafts(self, K: int) -> torch.Tensor:
        """The first round's target call when nothing is cached: every row's prompt and drafts
        from position 0, the output head on the last ``keep`` positions only (each row's
        ``K + 1`` round positions lie there); the laws ``[B, K + 1, V]``."""
        batch, k = self.batch, self.k
        lo, W = torch.stack((batch.seq_len.min(), (batch.seq_len + k).max())).tolist()
        keep = W - lo + 1  # row b reads positions seq_len[b] - 1 .. seq_len[b] - 1 + K
        logits = self.target(
            batch.tokens[:, :W], cache=self.target_cache, start=torch.zeros_like(k), logits_to_keep=keep
        )
        idx = ((batch.seq_len - 1 - (W - keep))[:, None] + torch.arange(K + 1, device=k.device)).clamp(
            max=keep - 1
        )
        return self.law(logits.gather(1, idx[..., None].expand(-1, -1, logits.shape[-1])))

    def _score_drafts(self, K: int) -> torch.Tensor:
        """The first round's target call: the laws after each row's drafts ``[B, K, V]`` (the
        target has cached the whole prompt)."""
        batch, hook, k = self.batch, self.hook, self.k
        aligned = hook is None and self.k_min == K
        end = None if aligned else batch.seq_len + k
        w = K if hook is None else None
        logits, start = forward_window(
            self.target, self.target_cache, batch.tokens, self.target_cached, end, w, aligned
        )
        if aligned:
            return self.law(logits)
        idx = ((batch.seq_len - start)[:, None] + torch.arange(K, device=k.device)).clamp(
            max=logits.shape[1] - 1
        )
        return self.law(logits.gather(1, idx[..., None].expand(-1, -1, logits.shape[-1])))

    def commit(self) -> torch.Tensor:
        """Verify, append the accepted drafts and the emitted token; the round's counts ``[4, B]``."""
        k, eos = self.k, self.eos
        called = None
        if self.schedule is not None and self.drafts.shape[1]:
            # every row with drafts takes part in the call, even one the schedule gives L = 0
            called = k > 0
            k = self.schedule(self.drafts, self.draft_laws, self.target_laws, k)
        allow_bonus = (k < self.remaining) & self.bonus
        if (
            eos is not None and self.drafts.shape[1]
        ):  # a drafted eos is the last token checked, and no bonus follows it
            k, eos_drafted = _cut_at_eos(self.drafts, k, eos)
            allow_bonus = allow_bonus & ~eos_drafted
        inputs = TorchRoundInputs(
            self.target_laws, self.draft_laws, self.drafts, k, self.u_accept, self.u_emit, allow_bonus
        )
        plain = None
        if self.plain_rows or called is not None:
            # rows capped (or scheduled, or one token from the end) to k = 0 emit one token
            # from the target's law
            plain = (k == 0) & (self.remaining > 0)
            verdict = _plain_steps(self.rule, inputs, plain, self.drafts.shape[1])
        else:
            verdict = self.rule(inputs)
        self.target_cached, self.draft_cached, emitted = _commit(self.batch, k, verdict, self.draft_cached)
        if self.hook is not None:
            self.hook.after_round(k, verdict.n_accepted, k > 0)
        # stays on the device (the flags are promoted to int64)
        counts = [k, verdict.n_accepted, emitted, verdict.rejected]
        if plain is None:
            return torch.stack(counts)
        live = (k > 0) | plain if called is None else (k > 0) | plain | called
        return torch.stack([*counts, live])
