"""``spectheory decode --tree SHAPE --verifier NAME`` and ``--medusa``: tree decoding on the shipped models.

SHAPE: ``AxBxC`` (every node at depth ``d`` has the ``d``-th number of children, e.g.
``2x2x1``), ``pathN`` (a single path of ``N`` drafts) or, with ``--medusa``, ``sparseN``
(Medusa's sparse tree of ``N`` nodes chosen from the heads' held-out accuracies). NAME: a
tree verifier (``tree_rrs``, ``tree_rrs_wo``, ``tree_topk``, ``traversal``,
``traversal_iid``) or ``typical`` (Medusa's typical acceptance, lossy).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from ..trees import DraftTree

__all__ = ["parse_tree_shape", "run_tree_decode", "check_tree_request"]


def parse_tree_shape(shape: str, accuracies: ArrayLike | None = None) -> DraftTree:
    """A :class:`~spectheory.trees.DraftTree` from ``AxBxC``, ``pathN`` or ``sparseN``.

    Examples
    --------
    >>> parse_tree_shape("2x2x1").size, parse_tree_shape("path3").max_depth
    (10, 3)
    """
    from ..trees import DraftTree

    s = str(shape).strip().lower()
    try:
        if s.startswith("path"):
            return DraftTree.from_branching([1] * int(s[4:]))
        if s.startswith("sparse"):
            if accuracies is None:
                raise ValueError("--tree: sparseN needs --medusa (the heads' accuracies choose the tree)")
            from ..decoder.medusa import sparse_tree

            return sparse_tree(np.asarray(accuracies)[:, :4], int(s[6:]))
        return DraftTree.from_branching([int(x) for x in s.split("x")])
    except ValueError as exc:
        from .._sizes import SizeError

        if isinstance(exc, SizeError):
            raise SizeError("--tree", exc.estimate, exc.limit_seconds, exc.limit_bytes) from None
        if "--tree" in str(exc):
            raise
        if str(exc).startswith("branching:"):
            raise ValueError(f"--tree: children per depth must be integers >= 1, got {shape!r}") from None
        raise ValueError(f"--tree: expected AxBxC, pathN or sparseN, got {shape!r}") from None


def check_tree_request(tree: DraftTree, prompt_len: int, tokens: int, vocab: int = 256) -> None:
    """Refuse, before any model loads, a tree decoding estimated above the limits
    (:func:`spectheory._sizes.check_size`: the tree attention mask is ``N (N + L)`` per round)."""
    from .._sizes import check_size

    check_size(
        "tree_decode",
        "--tree",
        nodes=tree.size,
        batch=1,
        context=prompt_len + tokens,
        vocab=vocab,
        tokens=tokens,
    )


def print_generated(header: str, texts: Sequence[str]) -> None:
    """How the terminal report of ``decode --tree`` starts: its one-line ``header``, then each
    prompt with its continuation between rules."""
    print(header)
    for text in texts:
        print("-" * 72)
        print(text)
    print("-" * 72)


def run_tree_decode(args: argparse.Namespace) -> int:
    """Tree decoding of the prompts (``--prompt``, ``--prompts``) as one batch, on ``--target`` with
    ``--draft`` or the Medusa heads; prints the texts and the measured statistics."""
    from ..children import TopK
    from ..decoder.compiled import with_forward
    from ..decoder.medusa import load_heads, medusa_generate, typical_rule
    from ..decoder.speculative import autoregressive_generate
    from ..decoder.tree_decode import tree_generate
    from ..verifiers import get_verifier, list_verifiers
    from .model_args import (
        DEFAULT_PROMPTS,
        decode_ids,
        default_draft,
        encoded_prompts,
        load_models,
        prompt_texts,
    )

    #: Lossy rules of the command line that are callables, not registered verifiers
    #: (``name -> (make the rule, child policy it drafts with)``).
    lossy = {"typical": (typical_rule, TopK())}
    medusa = bool(getattr(args, "medusa", False))
    name = getattr(args, "verifier", None) or ("tree_topk" if medusa else "tree_rrs")
    make, children = lossy[name] if name in lossy else (None, None)
    try:
        verifier = make() if make is not None else get_verifier(name).for_tree()
    except ValueError:
        known = sorted([*lossy, *list_verifiers(trees=True)])
        raise ValueError(f"--verifier: expected one of {known}, got {name!r}") from None
    shape = getattr(args, "tree", None) or ("sparse16" if medusa else f"path{args.gamma}")
    if medusa and args.target != "target":
        raise ValueError(f"--medusa: the shipped Medusa heads are the shipped target's, not {args.target}'s")
    if not shape.strip().lower().startswith("sparse"):  # sizes refused before the models load
        longest = max(len(t.encode("utf-8")) for t in prompt_texts(args, DEFAULT_PROMPTS[0]))
        check_tree_request(parse_tree_shape(shape), longest, args.tokens)
    forward = getattr(args, "forward", "eager")
    draft_name = None if medusa else (args.draft or default_draft(args.target))
    raw_target, raw_draft = load_models(args, draft_name)
    texts, prompts = encoded_prompts(args, raw_target)
    target = with_forward(raw_target, forward)
    heads, info = load_heads(device=args.device) if medusa else (None, None)
    tree = parse_tree_shape(shape, info["heldout"]["rank_accuracy"] if info is not None else None)
    if medusa and min(len(p) for p in prompts) < 2:
        raise ValueError("--prompt: Medusa decoding needs a prompt of at least 2 bytes")
    kw = dict(temperature=args.temperature, seed=args.seed, device=args.device, bonus=not args.no_bonus)
    if heads is not None:  # --medusa
        res = medusa_generate(target, heads, prompts, args.tokens, tree, verifier, **kw)
    else:
        draft = target if raw_draft is raw_target else with_forward(raw_draft, forward)
        res = tree_generate(
            target,
            draft,
            prompts,
            args.tokens,
            tree,
            verifier,
            children=children,
            **kw,
        )
    plain = autoregressive_generate(
        target, prompts, args.tokens, temperature=args.temperature, seed=args.seed, device=args.device
    ).stats
    m = res.stats.totals()
    news = [decode_ids(raw_target, t.tolist()) for t in res.tokens]
    drafter = "Medusa heads" if medusa else draft_name
    if args.json:
        print(
            json.dumps(
                {
                    "settings": {
                        "tree": shape,
                        "tree_parents": tree.parents.tolist(),
                        "verifier": name,
                        "drafter": drafter,
                        "tokens": args.tokens,
                        "seed": args.seed,
                    },
                    "texts": news,
                    "measured": m,
                    "round_accepted": [a.tolist() for a in res.stats.round_accepted],
                    "accepted_counts": res.stats.accepted_counts.sum(0).tolist(),
                    "baseline_time_total": plain.time_total,
                },
                indent=1,
            )
        )
        return 0
    print_generated(
        f"{args.target} + {drafter}, tree {shape} ({tree.size} nodes, depth {tree.max_depth}), verifier "
        f"{name}, {args.tokens} tokens, temperature = {args.temperature}, seed = {args.seed}",
        [decode_ids(raw_target, p) + t for p, t in zip(prompts, news)],
    )
    print(f"{'tokens per target call':32s} {m['tokens_per_call']:10.3f}")
    print(f"{'target calls':32s} {m['target_calls']:10d}")
    print(f"{'mean accepted path length':32s} {m['mean_accepted_per_round']:10.3f}")
    print(f"{'wall time, tree decoding':32s} {res.stats.time_total:9.3f}s")
    print(f"{'wall time, target alone':32s} {plain.time_total:9.3f}s  (one short run: timings are noisy)")
    if not getattr(verifier, "lossless", False):
        print(f"{name} is lossy: the output does not have the target's law")
    return 0
