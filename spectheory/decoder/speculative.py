"""Batched speculative decoding (and the autoregressive baseline) for any model of the contract
in :mod:`spectheory.decoder.batching` (ragged batches, cache bookkeeping).

The protocol is the one of ``docs/protocol.md`` ("what is counted"). A round is a
:class:`~spectheory.decoder.path_step.PathStep`, played by the decoder's one loop
(:func:`~spectheory.decoder.driver.decode_rounds`: prefill, the two loop modes, ragged rows, stop
token, uniforms, statistics).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import torch

from .._guards import check_bool, check_int
from ..verifiers.base import get_verifier
from .autoregressive import autoregressive_generate  # noqa: F401  (re-exported: the baseline)
from .batching import check_common, make_batch, place
from .driver import RoundUniforms, decode_rounds
from .generation_result import GenerationResult
from .logits import sampling_law
from .path_step import PathStep
from .rng import check_seeds, seed_tensor
from .text_prompts import encode_prompts

if TYPE_CHECKING:
    from ..kinds.policy.policies import Policy
    from ..verifiers import Verifier
    from .batching import CausalLM, Prompt

__all__ = ["speculative_generate"]


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
    last_token: str = "draft",
) -> GenerationResult:
    """Speculative decoding of a batch of prompts, lossless with respect to ``target``.

    Each round, per sequence with ``r`` tokens still to generate: the draft proposes
    ``k = min(gamma, r)`` tokens autoregressively from ``draft_law = S(draft logits)``; ONE
    target call scores them all (``target_law = S(target logits)``, the same ``S`` =
    :func:`~spectheory.decoder.logits.logits_to_probs` with temperature/top-k/top-p); the
    verifier accepts a prefix and emits one residual token after a rejection, or, if all
    ``k`` are accepted, ``k < r`` and ``bonus``, one bonus token from the target. Sequences
    advance by their own accepted lengths (ragged); caches roll back by position.
    ``temperature=0`` returns exactly the target's greedy continuation. With
    ``last_token="target"`` a round drafts ``k = min(gamma, r - 1)`` instead (HF's assisted
    generation's horizon), so the token that ends the call is the target's.

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
    last_token : {"draft", "target"}
        Who may supply a call's last token. ``"draft"`` (default): a round drafts up to the last
        token, ``k = min(gamma, r)``, the truncation of the exact theory (``docs/protocol.md``,
        "The last token"), whose laws of rejections and drafted tokens the decoder is checked against.
        ``"target"``: ``k = min(gamma, r - 1)``, as HF's assisted generation; the bonus token
        (or the residual after a rejection) fills the last slot, and a row with one token left
        plays a plain target step. The output law and, for a fixed ``gamma`` or a policy that reads
        past rounds through their accepted counts only, the law of the target calls are the
        default's (a draft at the last slot only decides between two draws of the target's law
        there); a round that would draft up to the last token drafts, and
        the target scores, one token fewer (one draft forward less). Needs ``bonus=True``; not
        with ``check_every``.

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
    if last_token not in ("draft", "target"):
        raise ValueError(f"last_token: expected 'draft' or 'target', got {last_token!r}")
    if last_token == "target" and (not bonus or check_every is not None):
        raise ValueError(
            "last_token='target': the last token is the bonus token, so it needs bonus=True, and "
            "the fixed-horizon loop (check_every) drafts full rounds"
        )
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

        hook = DecoderPolicy(policy, B, dev, greedy=temperature == 0)
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
        short=last_token == "target",
    )
    if schedule is not None:
        schedule.start(B)
    result = decode_rounds(step, RoundUniforms(seeds, K_fixed), max_new_tokens, check_every, eos)
    result.tokenizer = getattr(target, "tokenizer", None)
    return result
