"""Where a speculative round's time goes beyond the two models' forwards (issue 22, item 3).

Batch 1 on CPU, the shipped target with each shipped draft, token verification, 200 new
tokens: the decoder's own pieces are timed in place (wrappers around the functions the decoder
calls, each a few microseconds) and both models' forwards are logged
(:class:`~spectheory.cost.timed.ForwardLog`). Shares of the call's wall time, in the order of a
round: the draft's forwards, the sampling laws (softmax with temperature/top-k/top-p, float64,
for both models), the draft tokens' inverse-CDF draws, the target's forwards, the verification
rule (its residual or bonus draw included), the commit (cache rollback, appending the tokens),
the counter-based uniforms, and the rest (the round loop itself: reading how many tokens each
row still needs, the stop rule's bookkeeping, the per-round counts copied to the host). The
overhead of docs/decoder_floor.md is everything but the two forwards. Shares are medians over
repeats. One more run counts the torch operations dispatched outside the forwards per round
(:class:`~spectheory.cost.OpCount`): at batch 1 on a CPU the overhead is about that count times
a couple of microseconds, and unlike a time the count does not move with the machine's load.
Writes ``decoder_profile.json``.

Usage: python benchmarks/decoder_profile.py [--quick] [--out DIR] [--drafts a,b] [--threads N]
"""

from __future__ import annotations

import time
from contextlib import ExitStack, contextmanager
from unittest import mock

import numpy as np
import torch

from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.cost import ForwardLog, OpCount
from spectheory.decoder import load_model
from spectheory.decoder import path_step as ps
from spectheory.decoder import speculative as sp
from spectheory.decoder.corpus import heldout_windows
from spectheory.validation import resolve_models

PARTS = ("draft forwards", "laws", "draft draws", "target forwards", "rule", "commit", "uniforms", "rest")


class _Clock:
    """Seconds spent inside wrapped functions, per part (outermost wrapper only)."""

    def __init__(self):
        self.seconds = dict.fromkeys(PARTS, 0.0)
        self.depth = 0

    def wrap(self, part, fn):
        def timed(*args, **kwargs):
            if self.depth:  # nested inside another timed piece: counted there
                return fn(*args, **kwargs)
            self.depth += 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - t0
                self.depth -= 1

        return timed


@contextmanager
def instrumented(clock):
    """Patch the decoder's module-level pieces with timed wrappers for the ``with`` block."""
    real_get = sp.get_verifier

    def get_verifier(v):
        rule = real_get(v)
        return mock.Mock(torch_rule=clock.wrap("rule", rule.torch_rule), name=rule.name)

    class Uniforms(sp.RoundUniforms):
        __call__ = clock.wrap("uniforms", sp.RoundUniforms.__call__)

    with ExitStack() as stack:
        # each piece is patched in the module that calls it: the front door (speculative) builds
        # the laws, the path round (path_step) draws the drafts and commits
        for module, name, part in (
            (sp, "sampling_law", "laws"),
            (ps, "draw_columns", "draft draws"),
            (ps, "_commit", "commit"),
        ):
            stack.enter_context(mock.patch.object(module, name, clock.wrap(part, getattr(module, name))))
        stack.enter_context(mock.patch.object(sp, "get_verifier", get_verifier))
        stack.enter_context(mock.patch.object(sp, "RoundUniforms", Uniforms))
        yield


def profile_once(target, draft, prompts, T, gamma, seed):
    """Seconds per part of one decoder call (module docstring)."""
    clock = _Clock()
    with instrumented(clock), ForwardLog(target) as lt, ForwardLog(draft) as ld:
        st = sp.speculative_generate(target, draft, prompts, T, gamma, seed=seed).stats
    sec = dict(clock.seconds)
    sec["target forwards"] = float(lt.take()[:, 3].sum())
    sec["draft forwards"] = float(ld.take()[:, 3].sum())
    # the rest: the call's wall time minus every measured part (the prefill counts as forwards)
    sec["rest"] = st.time_total - sum(v for k, v in sec.items() if k != "rest")
    return st.time_total, sec


def operations_per_round(target, draft, prompts, T, gamma, seed):
    """Torch operations the decoder dispatches outside the two models' forwards, per round
    (:class:`~spectheory.cost.OpCount`: a count, so unmoved by the machine's load)."""
    with OpCount(target, draft) as ops:
        st = sp.speculative_generate(target, draft, prompts, T, gamma, seed=seed).stats
    return ops.total_outside / st.batch_target_calls, ops.outside


def run(args, name="decoder_profile"):
    torch.set_num_threads(args.threads)
    target_name, drafts = resolve_models(args.target, args.drafts)
    T, repeats = (32, 1) if args.quick else (200, 5)
    gamma = 3
    prompts = heldout_windows(1, 32)
    target = load_model(target_name, device=args.device)
    results, headline = {}, []
    for dname in drafts:
        draft = load_model(dname, device=args.device)
        sp.speculative_generate(target, draft, prompts, 8, gamma, seed=0)  # warm-up
        runs = [profile_once(target, draft, prompts, T, gamma, seed=rep) for rep in range(repeats)]
        shares = {p: float(np.median([sec[p] / total for total, sec in runs])) for p in PARTS}
        seconds = {
            p: float(np.median([sec[p] for _, sec in runs])) for p in PARTS
        }  # seconds per call, medians
        overhead = 1.0 - shares["target forwards"] - shares["draft forwards"]
        per_round, by_op = operations_per_round(target, draft, prompts, T, gamma, seed=0)
        results[dname] = {
            "gamma": gamma,
            "horizon": T,
            "repeats": repeats,
            "shares": shares,
            "seconds": seconds,
            "overhead_fraction": overhead,
            "operations_per_round": per_round,
            "most_frequent_operations": {op: n for op, n in by_op.most_common(8)},
            "wall_seconds": float(np.median([t for t, _ in runs])),
        }
        print(f"\n== target={target_name} draft={dname}: gamma={gamma}, batch 1, T={T}")
        for p in PARTS:
            print(f"  {p:16s} {100 * shares[p]:5.1f}%   {1e3 * seconds[p]:8.1f} ms")
        print(f"  overhead beyond the forwards: {100 * overhead:.1f}%")
        print(f"  torch operations per round outside the forwards: {per_round:.1f}")
        headline.append(
            {
                "name": f"profile {dname}: round overhead beyond the forwards (CPU, batch 1, gamma {gamma})",
                "value": overhead,
                "note": f"{per_round:.0f} torch operations per round outside the forwards; largest parts: "
                + ", ".join(
                    f"{p} {100 * shares[p]:.0f}%"
                    for p in sorted(
                        set(PARTS) - {"target forwards", "draft forwards"}, key=lambda q: -shares[q]
                    )[:3]
                ),
            }
        )
    path = write_result(
        args.out,
        name,
        {"target": target_name, "drafts": drafts, "results": results},
        headline,
        device=args.device,
    )
    print("wrote", path)
    return results


if __name__ == "__main__":
    run(decoder_script_parser(__doc__, threads=1).parse_args())
