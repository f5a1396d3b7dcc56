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


def run_tree_decode(args: argparse.Namespace) -> int:
    """Tree decoding of ``args.prompt``; prints the text and the measured statistics."""
    from ..decoder import load_model
    from ..decoder.compiled import with_forward
    from ..decoder.medusa import load_heads, medusa_generate, typical_rule
    from ..decoder.speculative import autoregressive_generate
    from ..decoder.tree_decode import tree_generate
    from ..verifiers import TopK, get_verifier, list_verifiers

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
    prompt = list(args.prompt.encode("utf-8"))
    if not shape.strip().lower().startswith("sparse"):  # sizes refused before the models load
        check_tree_request(parse_tree_shape(shape), len(prompt), args.tokens)
    forward = getattr(args, "forward", "eager")
    target = with_forward(load_model("target", device=args.device), forward)
    heads, info = load_heads(device=args.device) if medusa else (None, None)
    tree = parse_tree_shape(shape, info["heldout"]["rank_accuracy"] if info is not None else None)
    if medusa and len(prompt) < 2:
        raise ValueError("--prompt: Medusa decoding needs a prompt of at least 2 bytes")
    kw = dict(temperature=args.temperature, seed=args.seed, device=args.device, bonus=not args.no_bonus)
    if heads is not None:  # --medusa
        res = medusa_generate(target, heads, [prompt], args.tokens, tree, verifier, **kw)
    else:
        draft = with_forward(load_model(args.draft, device=args.device), forward)
        res = tree_generate(
            target,
            draft,
            [prompt],
            args.tokens,
            tree,
            verifier,
            children=children,
            **kw,
        )
    plain = autoregressive_generate(
        target, [prompt], args.tokens, temperature=args.temperature, seed=args.seed, device=args.device
    ).stats
    m = res.stats.totals()
    new = res.tokens[0].tolist()
    drafter = "Medusa heads" if medusa else args.draft
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
                    "text": bytes(new).decode("utf-8", "replace"),
                    "measured": m,
                    "round_accepted": res.stats.round_accepted[0].tolist(),
                    "accepted_counts": res.stats.accepted_counts[0].tolist(),
                    "baseline_time_total": plain.time_total,
                },
                indent=1,
            )
        )
        return 0
    print(
        f"target + {drafter}, tree {shape} ({tree.size} nodes, depth {tree.max_depth}), verifier {name}, "
        f"{args.tokens} tokens, temperature = {args.temperature}, seed = {args.seed}"
    )
    print("-" * 72)
    print(args.prompt + bytes(new).decode("utf-8", "replace"))
    print("-" * 72)
    print(f"{'tokens per target call':32s} {m['tokens_per_call']:10.3f}")
    print(f"{'target calls':32s} {m['target_calls']:10d}")
    print(f"{'mean accepted path length':32s} {m['mean_accepted_per_round']:10.3f}")
    print(f"{'wall time, tree decoding':32s} {res.stats.time_total:9.3f}s")
    print(f"{'wall time, target alone':32s} {plain.time_total:9.3f}s  (one short run: timings are noisy)")
    if not getattr(verifier, "lossless", False):
        print(f"{name} is lossy: the output does not have the target's law")
    return 0
