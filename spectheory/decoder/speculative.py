"""Batched speculative decoding (and the autoregressive baseline) for any model of the contract
in :mod:`spectheory.decoder.batching` (ragged batches, cache bookkeeping).

The protocol is the one of ``docs/protocol.md`` ("what is counted"). A round is a
:class:`PathStep`, played by the decoder's one loop (:func:`~spectheory.decoder.driver.decode_rounds`:
prefill, the two loop modes, ragged rows, stop token, uniforms, statistics).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import torch

from .._guards import check_bool, check_int
from ..verifiers.base import get_verifier
from ..verifiers.inputs import TorchRoundInputs
from ..verifiers.torch_forms import Verdict, draw_columns, sample_from_uniform
from .autoregressive import autoregressive_generate  # noqa: F401  (re-exported: the baseline)
from .batching import check_common, forward_window, make_batch, place, prefill
from .driver import RoundUniforms, StepDefaults, decode_rounds
from .generation_result import GenerationResult
from .logits import sampling_law
from .rng import check_seeds, seed_tensor
from .text_prompts import encode_prompts

if TYPE_CHECKING:
    from ..kinds.policy.policies import Policy
    from ..verifiers import Verifier
    from .batching import Batch, CausalLM, Prompt

__all__ = ["speculative_generate"]


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
    ``first``: the law after the prompt ``[B, 1, V]``, kept by the prefill (the first round's
    first step then calls nothing)."""
    rows = torch.arange(len(k), device=k.device)
    cap = batch.tokens.shape[1]
    before = batch.seq_len - 2  # x_j sits at slot before + j + 1; its input x_{j-1} at before + j
    fed = k + 1  # idle rows (j > k) re-feed their x_k, whose slot is never cached
    live = k_min if stop is None else 0  # steps 1..live: every row drafts
    xs: list[torch.Tensor] = []  # the drafted tokens, columns [B, 1]
    laws: list[torch.Tensor] = []
    for j in range(1, K + 1):
        if j == 1 and first is not None:  # the law after the prompt (the prefill kept it)
            law_j = first[:, 0]
        else:
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


def _prefill_law(model, cache, batch, law):
    """Cache every prompt token; return the cached lengths and the law after each prompt
    ``[B, 1, V]`` (a model that takes ``logits_to_keep`` runs its head on the last positions only)."""
    zero = torch.zeros_like(batch.seq_len)
    rows = torch.arange(len(zero), device=zero.device)
    if getattr(model, "accepts_logits_to_keep", False) is True:
        lo, hi = torch.stack((batch.seq_len.min(), batch.seq_len.max())).tolist()
        keep = hi - lo + 1  # every row's last prompt token lies in the last keep positions
        logits = model(batch.tokens[:, :hi], cache=cache, start=zero, logits_to_keep=keep)
        return batch.seq_len.clone(), law(logits[rows, batch.seq_len - 1 - (hi - keep)][:, None])
    logits, start = forward_window(model, cache, batch.tokens, zero, batch.seq_len)
    return batch.seq_len.clone(), law(logits[rows, batch.seq_len - 1 - start][:, None])


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
    tokens per row (a draft-length ``hook`` may end rows early), score them in one target call,
    verify with ``rule`` (a torch rule named ``name``), commit. ``K_fixed``: the draft length of
    every round in the fixed horizon. The caches roll back by position (``target_cached``,
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
    ) -> None:
        self.target, self.draft_model, self.dtypes = target, draft, dtypes
        self.batch, self.law, self.rule, self.name = batch, law, rule, name
        self.gamma, self.K_fixed, self.bonus, self.eos, self.hook = gamma, K_fixed, bool(bonus), eos, hook
        self.schedule = schedule  # verified lengths from the scored block (DecoderSchedule), or None
        # a draft that knows in advance how far it can propose (prompt lookup): rows it caps to 0
        # play a plain target step (needs the bonus token: it is the step's one token)
        self.cap = getattr(draft, "proposal_cap", None) if self.bonus else None

    def prefill(self) -> None:
        """Both models' caches, prefilled with the prompts (the target's and, when it can keep
        chosen positions, the draft's with their laws after the prompt)."""
        B, cap = self.batch.tokens.shape
        dev = self.batch.tokens.device
        dt_target, dt_draft = self.dtypes
        self.target_cache = self.target.new_cache(B, cap, device=dev, dtype=dt_target)
        self.draft_cache = self.draft_model.new_cache(B, cap, device=dev, dtype=dt_draft)
        # the target's prefill scores every prompt token, the last one included, and keeps the law
        # after the prompt: the first round's target call then scores only the drafts (one call
        # fewer per decode, as HF's generate), and a first round without drafts calls nothing
        self.target_cached, self.first_laws = _prefill_law(
            self.target, self.target_cache, self.batch, self.law
        )
        # a draft that runs its head on chosen positions caches the whole prompt and keeps its
        # law after it: the first round's first draft step then calls nothing (HF's assistant
        # likewise drafts its first token from its prompt call); others cache all but the last
        # prompt token, which that step feeds
        if getattr(self.draft_model, "accepts_logits_to_keep", False) is True:
            self.draft_cached, self.first_draft_laws = _prefill_law(
                self.draft_model, self.draft_cache, self.batch, self.law
            )
        else:
            self.draft_cached = prefill(self.draft_model, self.draft_cache, self.batch)
            self.first_draft_laws = None

    def plan(self, remaining: torch.Tensor, fixed: bool) -> tuple[int, int | None] | None:
        """``k = min(gamma, remaining)`` per row (capped by the policy); per round, one host read of
        the lengths and the draft's window; ``(K, rows' most remaining)`` for the uniforms."""
        batch, hook = self.batch, self.hook
        k = torch.clamp(remaining, max=self.gamma)
        if self.cap is not None:
            k = self.cap(batch.tokens, batch.seq_len, k)
        if hook is not None:
            k = hook.cap(k)
        if not fixed:  # one host read per round: draft lengths, what is left, draft window
            gap = batch.seq_len - self.draft_cached  # the tokens each row feeds the draft's first step
            K, most, k_min, w_draft, w_min = torch.stack(
                (k.max(), remaining.max(), k.min(), gap.max(), gap.min())
            ).tolist()
            if K == 0 and (self.cap is None or most <= 0):
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
        first, self.first_draft_laws = self.first_draft_laws, None  # the first round only
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
        if self.first_laws is not None:  # the first round: the law after the prompt is known
            first, self.first_laws = self.first_laws, None
            self.target_laws = first if K == 0 else torch.cat([first, self._score_drafts(K)], 1)
            return
        w = self.K + 1 if hook is None else None
        aligned = hook is None and self.k_min == K  # never in the fixed horizon (k_min = 0 there)
        self.target_laws = _score(
            self.target, self.target_cache, self.batch, self.target_cached, self.k, K, self.law, w, aligned
        )

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
        if self.cap is not None or called is not None:
            # rows capped (or scheduled) to k = 0 emit one token from the target's law
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


# ----------------------------------------------------------------------------- public API
def speculative_generate(
    target: CausalLM,
    draft: CausalLM,
    prompts: Sequence[Prompt | str] | str,
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
    schedule: Any = None,
    chat: bool = False,
) -> GenerationResult:
    """Speculative decoding of a batch of prompts, lossless with respect to ``target``.

    Each round, per sequence with ``r`` tokens still to generate: the draft proposes
    ``k = min(gamma, r)`` tokens autoregressively from ``draft_law = S(draft logits)``; ONE
    target call scores them all (``target_law = S(target logits)``, the same ``S`` =
    :func:`~spectheory.decoder.logits.logits_to_probs` with temperature/top-k/top-p); the
    verifier accepts a prefix and emits one residual token after a rejection, or, if all
    ``k`` are accepted, ``k < r`` and ``bonus``, one bonus token from the target. Sequences
    advance by their own accepted lengths (ragged); caches roll back by position.
    ``temperature=0`` returns exactly the target's greedy continuation.

    Parameters
    ----------
    target, draft : models of the contract in the module docstring, same ``vocab_size``.
    prompts : list of token sequences (lists of ints, 1-d integer arrays/tensors, bytes), or of
        texts (``str``, or one ``str``): encoded by ``target.tokenizer``
        (:func:`~spectheory.decoder.text_prompts.encode_prompts`; ``ValueError`` if the target
        has none); ``chat=True`` wraps each text as one user message of the tokenizer's chat
        template, generation prompt added. Token prompts are used as given.
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
    schedule : spectheory.schedules.decoder_hook.DecoderSchedule, optional
        A verification schedule under batch load: after the target call, it reads the slot
        features of the drafted blocks and each row verifies only its first ``L_b`` drafts
        (``docs/verification_schedules.md``); the stats' draft tokens then count the verified
        drafts. Not with ``policy`` or ``check_every``; started afresh by this call.

    Returns
    -------
    GenerationResult
        ``.tokens``: list of ``max_new_tokens``-long int64 arrays; ``.stats``: DecodeStats;
        ``.texts``: the new tokens as text, when the target has a tokenizer.

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
    token_prompts = encode_prompts(target, prompts, chat)
    models = {"target": target, "draft": draft}
    max_new_tokens, (temperature, top_k, top_p) = check_common(
        models, max_new_tokens, temperature, top_k, top_p
    )
    gamma = check_int(gamma, "gamma", 1)
    bonus = check_bool(bonus, "bonus")
    eos = None if eos_token_id is None else check_int(eos_token_id, "eos_token_id", 0)
    if check_every is not None:
        check_every = check_int(check_every, "check_every", 1)
        if policy is not None or eos is not None or schedule is not None:
            raise ValueError("check_every: the fixed-horizon loop takes no policy, schedule or eos_token_id")
    if schedule is not None and policy is not None:
        raise ValueError("schedule: a verification schedule and a draft-length policy cannot be combined")
    if schedule is not None and not callable(getattr(schedule, "start", None)):
        raise ValueError(f"schedule: expected a DecoderSchedule, got {type(schedule).__name__}")
    rule_obj = get_verifier(verifier)
    dev, dt_target = place(target, device, dtype)
    dev_draft, dt_draft = place(draft, dev if device is not None else None, dtype)
    if dev_draft != dev:
        raise ValueError(f"draft: on {dev_draft} while target is on {dev}; pass device= to move both")
    batch = make_batch(token_prompts, max_new_tokens, models, dev)
    B = batch.tokens.shape[0]
    seeds = seed_tensor(check_seeds(seed, B), dev)
    law = partial(sampling_law, temperature=temperature, top_k=top_k, top_p=top_p)
    hook = None
    if policy is not None:
        from ..stopping.runtime import DecoderPolicy

        hook = DecoderPolicy(policy, B, dev)
    K_fixed = min(gamma, max_new_tokens)
    name = verifier if isinstance(verifier, str) else rule_obj.name
    step = PathStep(
        target,
        draft,
        (dt_target, dt_draft),
        batch,
        law,
        rule_obj.torch_rule,
        name,
        gamma,
        K_fixed,
        bonus,
        eos,
        hook,
        schedule,
    )
    if schedule is not None:
        schedule.start(B)
    result = decode_rounds(step, RoundUniforms(seeds, K_fixed), max_new_tokens, check_every, eos)
    result.tokenizer = getattr(target, "tokenizer", None)
    return result
