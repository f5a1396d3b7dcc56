"""``spectheory tune``: which gamma, tree or policy to run for two models on this device.

Models are any name :func:`~spectheory.decoder.load_model` takes: shipped names (``target``,
``draft-small``, ...), ``smollm2-135m`` (the ``real`` extra) or ``hf:PATH`` (a local Hugging Face
model folder through :class:`~spectheory.decoder.hf.HFCausalLM`). Prompts are ``--prompt TEXT``
(repeatable) and ``--prompts FILE`` (one per line), tokenized by the target's tokenizer when it
has one (``--chat``: its chat template) and as UTF-8 bytes otherwise, cut to the shortest
prompt, at most ``--prompt-len`` tokens; by default, held-out windows of the built-in corpus
(as text through the tokenizer, for a model that has one) (:mod:`spectheory.app.model_args`). The work is
:func:`spectheory.tuning.tuner.tune`; ``--verify`` runs the decoder on the top
configurations (:meth:`~spectheory.tuning.tuner.TuneResult.verify`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from . import cli_args as A

__all__ = ["add_tune_args", "run_tune", "parse_trees", "parse_policies", "load_named_model", "read_prompts"]


def parse_trees(text: str) -> list[tuple[int, ...]]:
    """``"2x1x1,2x2x1"`` -> ``[(2, 1, 1), (2, 2, 1)]``; ``"none"`` -> ``[]``.

    Examples
    --------
    >>> parse_trees("2x2,3")
    [(2, 2), (3,)]
    """
    if text.strip().lower() in ("", "none"):
        return []
    out = []
    for part in text.split(","):
        try:
            shape = tuple(int(x) for x in part.strip().lower().split("x"))
        except ValueError:
            shape = ()
        if not shape or min(shape) < 1:
            raise argparse.ArgumentTypeError(f"expected trees like 2x2x1 (children per depth), got {part!r}")
        out.append(shape)
    return out


def parse_policies(text: str) -> list[tuple[str, float | None]]:
    """``"confidence:0.4,entropy:2,hf"`` -> ``[("confidence", 0.4), ("entropy", 2.0), ("hf", None)]``.

    Examples
    --------
    >>> parse_policies("confidence:0.3,hf")
    [('confidence', 0.3), ('hf', None)]
    """
    if text.strip().lower() in ("", "none"):
        return []
    out: list[tuple[str, float | None]] = []
    for part in text.split(","):
        name, _, value = part.strip().lower().partition(":")
        try:
            number = float(value) if value else None
        except ValueError:
            number = -1.0
        ok = (name in ("confidence", "entropy") and number is not None and number >= 0) or (
            name == "hf" and number is None
        )
        if not ok:
            raise argparse.ArgumentTypeError(
                f"expected policies like confidence:0.4, entropy:2.0 or hf, got {part!r}"
            )
        out.append((name, number))
    return out


def _policies(spec: list[tuple[str, float | None]], depth: int) -> list[Any]:
    from ..stopping import ConfidenceThreshold, EntropyRule, HFSchedule

    out: list[Any] = []
    for name, value in spec:
        if name == "confidence":
            out.append(ConfidenceThreshold(float(value or 0.0), max_depth=depth))
        elif name == "entropy":
            out.append(EntropyRule(float(value or 0.0), max_depth=depth))
        else:
            out.append(HFSchedule(min(5, depth), max_depth=depth))
    return out


def load_named_model(name: str, device: str, dtype: str = "float32") -> Any:
    """A model by any name :func:`~spectheory.decoder.load_model` takes (shipped names,
    ``smollm2-135m``, ``hf:PATH``), errors naming the model (:func:`.model_args.load_named`)."""
    from .model_args import load_named

    return load_named(name, "model", device, dtype)


def read_prompts(texts: list[str], model: Any, prompt_len: int, chat: bool = False) -> Any:
    """Equal-length token prompts ``[P, L]`` from prompt texts: each encoded by ``model``'s
    tokenizer (``chat``: its chat template) or as UTF-8 bytes, all cut to the shortest, at most
    ``prompt_len`` tokens."""
    import numpy as np

    from .model_args import encode_prompt

    ids = [encode_prompt(model, t, chat) for t in texts]
    L = min(prompt_len, min(len(x) for x in ids))
    arr = np.array([x[:L] for x in ids], dtype=np.int64)
    if arr.max() >= model.vocab_size:
        raise ValueError(f"--prompts: token ids up to {arr.max()} exceed the vocabulary ({model.vocab_size})")
    return arr


def _corpus_prompts(model: Any, prompt_len: int) -> Any:
    """Held-out windows of the built-in corpus: as bytes for a byte-level model, as text through
    the model's tokenizer for one that has one."""
    from ..decoder.corpus import heldout_windows

    windows = heldout_windows(8, prompt_len)
    if getattr(model, "tokenizer", None) is None:
        return windows % model.vocab_size
    texts = [bytes(w.tolist()).decode("utf-8", "replace") for w in windows]
    return read_prompts(texts, model, prompt_len)


def add_tune_args(p: argparse.ArgumentParser) -> None:
    """The options of ``spectheory tune``."""
    from .model_args import add_model_args, add_prompt_args

    add_model_args(
        p, draft=None, draft_help=" (default: draft-small for target; any other target drafts for itself)"
    )
    add_prompt_args(p, "held-out windows of the built-in corpus")
    p.add_argument("--prompt-len", type=A.positive_int, default=32, help="tokens kept per prompt")
    p.add_argument("--device", type=A.device_name, default="cpu", help="torch device: cpu, cuda or cuda:N")
    p.add_argument("--batches", type=A.gammas, default=[1], help="comma-separated batch sizes")
    p.add_argument("--gammas", type=A.gammas, default=[1, 2, 3, 4, 6, 8], help="draft lengths")
    p.add_argument(
        "--trees", type=parse_trees, default=[(2, 1, 1), (2, 2, 1)], help="trees, e.g. 2x1x1,2x2x1 or none"
    )
    p.add_argument(
        "--policies",
        type=parse_policies,
        default=[("confidence", 0.4)],
        help="confidence:T, entropy:T, hf or none",
    )
    p.add_argument(
        "--policy-depth", type=A.positive_int, default=8, help="largest draft length of the policies"
    )
    p.add_argument("--tokens", type=A.positive_int, default=64, help="new tokens per row")
    p.add_argument(
        "--paths", type=A.positive_int, default=128, help="target paths sampled for the predictions"
    )
    p.add_argument("--repeats", type=A.positive_int, default=5, help="timed calls per point of the cost fits")
    p.add_argument("--seed", type=A.nonneg_int, default=0, help="random seed")
    p.add_argument(
        "--threads", type=A.positive_int, default=None, help="torch CPU threads (default: torch's)"
    )
    p.add_argument(
        "--verify", action="store_true", help="run the decoder on the top configurations (default: off)"
    )
    p.add_argument("--top", type=A.positive_int, default=3, help="configurations verified per batch size")
    p.add_argument("--plot", default="spectheory_tune.png", metavar="PATH", help="plot file (.png and .pdf)")
    p.add_argument("--no-plot", action="store_true", help="write no plot (default: write one)")
    p.add_argument("--json", action="store_true", help="machine-readable output (default: the table)")


def run_tune(args: argparse.Namespace) -> int:
    """Load the models and prompts, run :func:`~spectheory.tuning.tuner.tune`, print and plot."""
    from .cli_args import check_device_available

    check_device_available(args.device)
    if not args.no_plot:  # before any work: a plot that cannot be written fails now
        import os

        folder = os.path.dirname(os.path.abspath(args.plot))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise ValueError(
                f"--plot {args.plot}: cannot create its folder ({exc.strerror or exc})"
            ) from None
    if args.paths < 2:
        raise ValueError("--paths: need at least 2 target paths (standard errors)")
    import torch

    from ..tuning.tuner import tune

    if args.threads:
        torch.set_num_threads(args.threads)
    from .model_args import default_draft, load_models, prompt_texts

    if args.draft is None:  # as decode: the shipped target's draft, else the target itself
        args.draft = default_draft(args.target)
    target, draft = load_models(args, args.draft)
    if args.prompt or args.prompts:
        prompts = read_prompts(prompt_texts(args, ""), target, args.prompt_len, args.chat)
    else:
        prompts = _corpus_prompts(target, args.prompt_len)
    limit = min(x for x in (target.max_seq_len, draft.max_seq_len, 1 << 30) if x is not None)
    deepest = max([*args.gammas, *(len(t) for t in args.trees), args.policy_depth if args.policies else 0])
    if prompts.shape[1] + args.tokens + deepest + 1 > limit:
        raise ValueError(
            f"--tokens: prompt + {args.tokens} new tokens exceed the models' max_seq_len = {limit}"
        )
    result = tune(
        target,
        draft,
        prompts,
        device=args.device,
        batches=args.batches,
        gammas=args.gammas,
        trees=args.trees,
        policies=_policies(args.policies, args.policy_depth),
        n_paths=args.paths,
        horizon=args.tokens,
        fit_repeats=args.repeats,
        rng=args.seed,
    )
    if args.verify:
        result.verify(target, draft, top=args.top, seed=args.seed)
    files = [] if args.no_plot else result.plot(args.plot)
    if args.json:
        print(json.dumps({**result.to_dict(), "plot": files}, indent=1, default=float))
        return 0
    print(f"spectheory tune: target {args.target}, draft {args.draft}, device {args.device}")
    print(result.table())
    for B in sorted(set(args.batches)):
        best = result.best(B)
        print(
            f"best at batch {B}: {best['config']} ({best['throughput']:.0f} tokens/s, {best['speedup']:.2f}x)"
        )
    if files:
        print("wrote", *files)
    return 0
