"""``spectheory decode``: the real decoder on the shipped models, next to the theory's prediction.

The prediction uses the two models' next-token laws along the generated text (which has the
target's law): per position the acceptance :math:`\\beta_n = \\sum_x \\min(p_n(x), q_n(x))`,
so :math:`E[\\text{rejections}]` without bonus tokens is :math:`\\sum_n (1 - \\beta_n)`
(Yin et al., Theorem 1, one sample of the prefix), and Leviathan's i.i.d. formula with
:math:`\\alpha = \\bar\\beta` gives the expected tokens per target call,
:math:`\\sum_{i=0}^{\\gamma} \\alpha^i` with bonus tokens and :math:`\\sum_{i=0}^{\\gamma-1} \\alpha^i`
without (a round then emits :math:`\\min(N + 1, \\gamma)` tokens).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..laws.closed_form import iid_tokens_per_call

if TYPE_CHECKING:
    pass

if TYPE_CHECKING:
    from ..decoder.batching import CausalLM


def acceptance_along(
    target: CausalLM,
    draft: CausalLM,
    prompt_ids: Sequence[int],
    new_ids: Sequence[int],
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> np.ndarray:
    """Per-position acceptance ``sum_x min(target_n, draft_n)`` along ``prompt + new`` tokens.

    Both models score the whole sequence in one (uncached) call each; the laws are formed with
    the decoder's own :func:`~spectheory.decoder.logits.logits_to_probs`, so they are the laws
    the decoder samples from. Returns a float64 array with one entry per new token.
    """
    import torch

    from ..decoder.logits import logits_to_probs
    from ..validation.lossless import model_device

    ids = torch.tensor([list(prompt_ids) + list(new_ids)], dtype=torch.long, device=model_device(target))
    n0 = len(prompt_ids)
    with torch.no_grad():
        laws = [
            logits_to_probs(m(ids)[0, n0 - 1 : -1].double(), temperature, top_k, top_p)
            for m in (target, draft)
        ]
    return torch.minimum(*laws).sum(-1).cpu().numpy()


def _settings(args: argparse.Namespace) -> dict:
    return {
        "target": "target",
        "draft": args.draft,
        "prompt": args.prompt,
        "gamma": args.gamma,
        "horizon": args.tokens,
        "temperature": args.temperature,
        "seed": args.seed,
        "device": args.device,
        "bonus": not args.no_bonus,
        "forward": getattr(args, "forward", "eager"),
    }


def run_decode(args: argparse.Namespace) -> int:
    """Run the decoder on ``args.prompt``; print text, measured statistics, the plain-target
    baseline and the theory's prediction (``--json``: the same as one object with the settings)."""
    from .cli_args import check_device_available

    check_device_available(args.device)  # before the models load
    tree_mode = bool(getattr(args, "tree", None) or getattr(args, "medusa", False))
    if getattr(args, "verifier", None) and not tree_mode:
        raise ValueError(
            f"--verifier {args.verifier}: chooses a tree verifier, and needs --tree SHAPE (e.g. "
            "--tree 2x2x1 or path4) or --medusa; without them decode runs token verification"
        )
    forward = getattr(args, "forward", "eager")
    if forward != "eager" and getattr(args, "medusa", False):
        raise ValueError(
            f"--forward {forward}: the Medusa heads read the target's hidden states eagerly; use --forward eager"
        )
    if tree_mode:  # tree decoding (issue 12)
        from .decode_tree import run_tree_decode

        return run_tree_decode(args)
    from ..decoder import load_model, registered_models
    from ..decoder.compiled import with_forward
    from ..decoder.speculative import autoregressive_generate, speculative_generate
    from ..laws.closed_form import iid_speedup
    from .decode_tree import print_generated

    names = registered_models()
    if args.draft not in names or "target" not in names:
        raise ValueError(f"--draft: unknown model {args.draft!r}; shipped models: {', '.join(names)}")
    target = with_forward(load_model("target", device=args.device), forward)
    draft = with_forward(load_model(args.draft, device=args.device), forward)
    prompt = list(args.prompt.encode("utf-8"))
    bonus = not args.no_bonus
    sampling = dict(temperature=args.temperature, seed=args.seed, device=args.device)
    autoregressive_generate(target, [prompt], min(args.tokens, 4), **sampling)  # warm-up (allocator, kernels)
    res = speculative_generate(target, draft, [prompt], args.tokens, args.gamma, bonus=bonus, **sampling)
    plain = autoregressive_generate(target, [prompt], args.tokens, **sampling).stats
    plain_draft = autoregressive_generate(draft, [prompt], args.tokens, **sampling).stats
    new = res.tokens[0].tolist()
    measured = res.stats.totals()
    rounds = np.asarray(res.stats.round_accepted[0])
    hist = res.stats.accepted_counts[0].tolist()
    beta = acceptance_along(target, draft, prompt, new, temperature=args.temperature)
    alpha = float(beta.mean())
    cost = plain_draft.time_total / plain.time_total  # c = t_draft / t_target, per token, measured
    predicted = {
        "mean_acceptance": alpha,
        "rejections_without_bonus": float((1.0 - beta).sum()),
        # with bonus tokens sum_{i<=gamma} alpha^i; without, a round emits min(N + 1, gamma) tokens
        "tokens_per_call_iid": float(iid_tokens_per_call(min(alpha, 1.0), args.gamma - (not bonus))),
        "cost_ratio_measured": cost,
        "speedup_iid": float(iid_speedup(min(alpha, 1.0 - 1e-12), args.gamma, cost)) if bonus else None,
    }
    baseline = {
        "time_total": plain.time_total,
        "tokens_per_second": args.tokens / plain.time_total,
        "speedup_measured": plain.time_total / res.stats.time_total,
    }
    if args.json:
        print(
            json.dumps(
                {
                    "settings": _settings(args),
                    "text": bytes(new).decode("utf-8", "replace"),
                    "measured": measured,
                    "round_accepted": rounds.tolist(),
                    "accepted_counts": hist,
                    "baseline": baseline,
                    "predicted": predicted,
                },
                indent=1,
            )
        )
        return 0
    print_generated(
        f"target + {args.draft}, gamma = {args.gamma}, {args.tokens} tokens, bonus = {bonus}, "
        f"temperature = {args.temperature}, seed = {args.seed}, device = {args.device}",
        args.prompt,
        new,
    )
    print(f"{'':32s} {'measured':>10s} {'theory':>10s}")
    print(f"{'acceptance per checked token':32s} {measured['acceptance']:10.3f} {alpha:10.3f}")
    print(
        f"{'tokens per target call':32s} {measured['tokens_per_call']:10.3f} {predicted['tokens_per_call_iid']:10.3f}"
        "  (Leviathan, i.i.d.)"
    )
    print(f"{'target calls':32s} {measured['target_calls']:10d}")
    note = "(sum of TV: Theorem 1)" if not bonus else "(sum of TV: an upper bound with bonus tokens)"
    print(
        f"{'rejections':32s} {measured['rejections']:10d} {predicted['rejections_without_bonus']:10.2f}  {note}"
    )
    spec_s = res.stats.time_total
    print(f"{'wall time, speculative':32s} {spec_s:9.3f}s")
    print(f"{'wall time, target alone':32s} {plain.time_total:9.3f}s  (plain autoregressive baseline)")
    theory = f"{predicted['speedup_iid']:10.2f}" if bonus else f"{'':>10s}"
    print(
        f"{'speedup':32s} {baseline['speedup_measured']:10.2f} {theory}  (theory: Leviathan with the "
        f"measured cost ratio c = {cost:.3f}; one short run, timings are noisy)"
    )
    print(
        "  (one run of one prompt, first calls included; the README's speedups are the best gamma of "
        "python benchmarks/decoder_speed.py: 200 tokens, minimum of interleaved repeats)"
    )
    print(
        "rounds by accepted drafts (j = 0.."
        + str(args.gamma)
        + "): "
        + ", ".join(f"j={j}: {n}" for j, n in enumerate(hist))
    )
    return 0
