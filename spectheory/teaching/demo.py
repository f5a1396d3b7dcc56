r"""``spectheory demo``: speculative decoding, step by step, on a toy word-level vocabulary.

A teacher projects the terminal and presses Enter between steps. Each round shows the
draft's proposals; for each proposed word the target's and the draft's next-word laws as
text bars, the uniform drawn, the ratio p/q and the decision (accept iff u < p/q, i.e. with
probability min(1, p/q)); on a rejection the residual law norm(max(p - q, 0)) and the word
drawn from it; when all proposals pass, the bonus word drawn from the target. After each
round a running tally compares what happened with the exact theory (expected accepted
words and rejections per round, from the per-state acceptance
:math:`\min(p, q)` of the toy chain; see :mod:`spectheory.teaching.toy`).
``spectheory demo --target smollm2-135m`` plays the same rounds on a real LLM's tokens
(``run_demo(models=RealView(...))``, :mod:`spectheory.teaching.real`; the command line builds the
models in :func:`spectheory.app.model_args.demo_view`).

Notation: p = target, q = draft.

Examples
--------
>>> import io
>>> from spectheory.teaching.demo import run_demo
>>> result = run_demo(seed=1, gamma=2, auto=True, n_rounds=2, out=io.StringIO())
>>> len(result.rounds)
2
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .._guards import check_int
from .._typing import RNGLike
from ..laws.distributions import acceptance_rate
from .render import bar_char, quote
from .toy import ToyModels, toy_models
from .toy_view import ToyView

__all__ = ["run_demo", "main", "DemoResult", "DEFAULT_ROUNDS", "DEFAULT_SEED"]

#: Rounds played when ``n_rounds`` is not given.
DEFAULT_ROUNDS = 5
#: Seed used when none is given: with the defaults (gamma = 3, 5 rounds) its demo shows a
#: rejection, the discarded drafts after it, and a round whose proposals all pass with a bonus
#: word (tests/teaching/test_demo.py checks that it still does).
DEFAULT_SEED = 2
RULE = "=" * 72


@dataclass
class DemoResult:
    """What a demo run did: the ``rounds`` (:class:`~spectheory.teaching.toy.RoundRecord`), the
    generated ``words``, observed and predicted totals, and the figure files ``saved``."""

    rounds: list = field(default_factory=list)
    words: list = field(default_factory=list)
    accepted: int = 0
    rejections: int = 0
    predicted_accepted: float = 0.0
    predicted_rejections: float = 0.0
    saved: list = field(default_factory=list)
    quit_early: bool = False


class _Quit(Exception):
    pass


def _wrap(line: str) -> str:
    return textwrap.fill(line, width=78, subsequent_indent="    ")


def _prob(x: float) -> str:
    """A probability in 3 decimals, or 2 significant digits when it is below 0.001."""
    return f"{x:.3f}" if x == 0 or x >= 0.001 else f"{x:.1e}"


def run_demo(
    seed: RNGLike = DEFAULT_SEED,
    gamma: int = 3,
    auto: bool = False,
    save: str | Path | None = None,
    n_rounds: int = DEFAULT_ROUNDS,
    out: TextIO | None = None,
    input_fn: Callable[[str], str] = input,
    models: ToyModels | Any | None = None,
) -> DemoResult:
    """Walk through ``n_rounds`` rounds of speculative decoding on the toy vocabulary.

    Parameters
    ----------
    seed : int or anything :func:`numpy.random.default_rng` accepts
        All randomness comes from ``np.random.default_rng(seed)``; same seed, same demo.
    gamma : int
        Draft words proposed per round, ``>= 1``.
    auto : bool
        Run without pauses. Otherwise ``input_fn`` is called between steps; answering
        ``q`` ends the demo early (the summary is still printed).
    save : str or Path, optional
        Folder for one PNG per step (target, draft, min and residual bar charts).
    n_rounds : int
        Rounds to play, ``>= 1``.
    out : text stream
        Where to print (default ``sys.stdout``).
    input_fn : callable
        Called with a prompt string to wait for the presenter.
    models : ToyModels or DemoView, optional
        The toy pair (default :func:`~spectheory.teaching.toy.toy_models`), or a view of another
        pair (:class:`~spectheory.teaching.real.RealView`: a real LLM on English text).

    Returns
    -------
    DemoResult

    Raises
    ------
    ValueError
        ``gamma < 1`` or ``n_rounds < 1`` (or not integers).
    """
    gamma = check_int(gamma, "gamma", 1)
    n_rounds = check_int(n_rounds, "n_rounds", 1)
    out = sys.stdout if out is None else out
    models = toy_models() if models is None else models
    view = ToyView(models, gamma) if isinstance(models, ToyModels) else models
    rng = np.random.default_rng(seed)
    name = view.name
    unit = view.unit
    char = bar_char(out)
    save_dir = None
    if save is not None:
        save_dir = Path(save)
        save_dir.mkdir(parents=True, exist_ok=True)
    result = DemoResult(words=list(view.start_words()))

    def say(line: str = "") -> None:
        print(line, file=out)

    def pause() -> None:
        if auto:
            return
        try:
            answer = input_fn("  [Enter] next step, q to quit > ")
        except EOFError:  # no terminal: keep going without pauses
            return
        if str(answer).strip().lower() in ("q", "quit"):
            raise _Quit

    say(RULE)
    say("Speculative decoding, step by step")
    say(RULE)
    for line in view.intro():
        say(line)
    say(f"Each round the draft proposes gamma = {gamma} {unit}s; the target checks them in one")
    say(f"call: accept {unit} x iff a uniform u < p(x)/q(x), i.e. with probability min(1, p/q).")
    say(f"At the first rejection a {unit} is drawn from the residual norm(max(p - q, 0)).")
    say(f"If all are accepted, the target adds a bonus {unit}. The output follows p exactly.")
    say(f"Seed {seed!r}, {n_rounds} rounds.")
    pause()

    try:
        for r in range(1, n_rounds + 1):
            context = view.context()
            record = view.play(gamma, rng)
            result.rounds.append(record)
            say("")
            say(f"=== Round {r} of {n_rounds} " + "=" * max(0, 56 - len(str(r)) - len(str(n_rounds))))
            say(_wrap("Text so far: " + view.join(result.words)))
            say(
                f"{context}. The draft proposes {gamma} {unit}"
                f"{'s' if gamma > 1 else ''}: " + "  ".join(quote(name(x)) for x in record.proposals)
            )
            for i, step in enumerate(record.steps, start=1):
                pause()
                x = name(step.proposal)
                say("")
                say(f"  Step {i} of {gamma}: check {quote(x)} after {quote(name(step.state))}")
                for line in view.table({"target p": step.target, "draft q": step.draft}, step.proposal, char):
                    say(line)
                p, q = step.target[step.proposal], step.draft[step.proposal]
                say(
                    f"    Acceptance in this context: sum min(p, q) = "
                    f"{acceptance_rate(step.target, step.draft):.3f} = 1 - TV(p, q)"
                )
                say(
                    f"    p/q = {_prob(p)} / {_prob(q)} = {step.ratio:.3f}   "
                    f"accept probability min(1, p/q) = {min(1.0, step.ratio):.3f}"
                )
                if step.accepted:
                    say(f"    u = {step.u:.3f} < {step.ratio:.3f}  ->  ACCEPT {quote(x)}")
                    headline = (
                        f"round {r}, step {i}: {x!r} accepted (u = {step.u:.3f} < p/q = {step.ratio:.3f})"
                    )
                else:
                    y = name(step.emitted)
                    say(f"    u = {step.u:.3f} >= {step.ratio:.3f}  ->  REJECT {quote(x)}")
                    say(f"    The target draws the {unit} from the residual norm(max(p - q, 0)):")
                    for line in view.table({"residual": step.residual}, step.emitted, char):
                        say(line)
                    say(f"    Drawn from the residual: {quote(y)}. The round ends.")
                    later = record.proposals[i:]
                    if len(later):
                        say(
                            _wrap(
                                f"    The later proposal{'s' if len(later) > 1 else ''} "
                                + ", ".join(quote(name(w)) for w in later)
                                + f" {'are' if len(later) > 1 else 'is'} discarded: drafted after a "
                                f"rejected {unit}, they continue a text that no longer exists."
                            )
                        )
                    headline = (
                        f"round {r}, step {i}: {x!r} rejected (u = {step.u:.3f} >= "
                        f"p/q = {step.ratio:.3f}); residual gives {y!r}"
                    )
                if save_dir is not None:
                    result.saved.append(
                        view.step_figure(save_dir / f"round{r:02d}_step{i}.png", step, headline)
                    )
            if record.bonus is not None and record.bonus_law is not None:
                pause()
                b = name(record.bonus)
                say("")
                say(f"  All {gamma} proposals accepted. The same target call also scored the {unit}")
                say(f"  after {quote(name(record.proposals[-1]))}, so a bonus {unit} is drawn from p:")
                for line in view.table({"target p": record.bonus_law}, record.bonus, char):
                    say(line)
                say(f"    Bonus {unit}: {quote(b)}")
                if save_dir is not None:
                    result.saved.append(
                        view.bonus_figure(
                            save_dir / f"round{r:02d}_bonus.png",
                            record.bonus_law,
                            record.bonus,
                            f"round {r}: all accepted, bonus {unit} {b!r}",
                        )
                    )
            # tally
            expected, p_rejection = view.theory(record)
            result.words.extend(name(w) for w in record.emitted)
            result.accepted += record.n_accepted
            result.rejections += int(record.rejected)
            result.predicted_accepted += expected
            result.predicted_rejections += p_rejection
            say("")
            say(
                f"  Round {r}: {record.n_accepted} of {gamma} accepted (theory expects "
                f"{expected:.2f} {view.theory_given(record)}), "
                f"{len(record.emitted)} {unit}{'s' if len(record.emitted) != 1 else ''} "
                "for one target call."
            )
            _tally(say, result, r, view)
            pause()
    except _Quit:
        result.quit_early = True
        say("")
        say("  (stopped by the presenter)")

    say("")
    say(RULE)
    say(_wrap("Generated text: " + view.join(result.words)))
    n = len(result.rounds)
    if n:
        emitted = len(result.words) - len(view.start_words())
        say(
            f"{n} target calls produced {emitted} {unit}s "
            f"({emitted / n:.2f} per call; plain decoding gives 1.00)."
        )
    if save_dir is not None:
        say(f"Saved {len(result.saved)} figures to {save_dir}")
    say(RULE)
    return result


def _tally(say: Callable[[str], None], result: DemoResult, rounds: int, view: Any) -> None:
    unit = view.unit
    emitted = len(result.words) - len(view.start_words())
    predicted_words = result.predicted_accepted + rounds
    say(f"  Running tally after {rounds} round{'s' if rounds != 1 else ''}:")
    say(f"    {'':<28}{'observed':>10}{'theory':>10}")
    say(f"    {'accepted draft ' + unit + 's':<28}{result.accepted:>10d}{result.predicted_accepted:>10.2f}")
    say(f"    {'rejections':<28}{result.rejections:>10d}{result.predicted_rejections:>10.2f}")
    say(f"    {unit + 's emitted':<28}{emitted:>10d}{predicted_words:>10.2f}")
    if rounds == 1:
        say(
            _wrap(
                f"    (theory: the expected values given {view.theory_basis}, summed over the "
                "rounds played. A round has at most one rejection, so its 'rejections' term is the "
                "probability that the round ends in a rejection, 1 - P(all proposals accepted); "
                "'accepted' adds P(the first i proposals pass) over i; each round also emits one "
                f"residual or bonus {unit}.)"
            )
        )


class _OneLineError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise _OneLineError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="spectheory demo",
        description="Speculative decoding, step by step, on a toy word-level vocabulary.",
        epilog="example: spectheory demo --seed 0 --gamma 3 --auto --save slides/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"random seed (default {DEFAULT_SEED}: shows a rejection and a bonus word)",
    )
    parser.add_argument("--gamma", type=int, default=3, help="draft words per round (default 3)")
    parser.add_argument(
        "--rounds", type=int, default=DEFAULT_ROUNDS, help=f"rounds to play (default {DEFAULT_ROUNDS})"
    )
    parser.add_argument("--auto", action="store_true", help="no key presses (tests, recordings)")
    parser.add_argument(
        "--save", default=None, metavar="DIR", help="write one PNG per step into DIR (for slides)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit status (2 on bad arguments, one line)."""
    try:
        args = build_parser().parse_args(argv)
        run_demo(
            seed=args.seed,
            gamma=args.gamma,
            auto=args.auto,
            save=args.save,
            n_rounds=args.rounds,
        )
    except (_OneLineError, ValueError) as exc:
        print(f"spectheory demo: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spectheory demo: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
