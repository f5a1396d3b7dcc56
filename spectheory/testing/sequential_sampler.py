r"""The sequential exercise for whole samplers (:func:`~spectheory.testing.check_sampler`'s interface).

See :mod:`spectheory.testing.sequential`: the same three checks, a call being one round of one request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._typing import RNGLike
from ._plan import _instances, _name
from ._sequential_parts import (
    BATCH,
    CHAIN_K,
    CHAIN_L,
    CHAIN_STEPS,
    CHAIN_V,
    SEQUENTIAL_CHECKS,
    STEPS,
    _args,
    _chain_finding,
    _pair_findings,
    tiny_chain,
)
from .instances import Instance
from .randomness import kit_randomness
from .report import Finding, Report, summarise

__all__ = ["check_sampler_sequential"]


def _sampler_calls(sampler, target, draft, prefixes, k, rng, V):
    """One call per prefix, in order: ``(outputs, error)``; an output is a list of ints or None (malformed)."""
    outs: list[list[int] | None] = []
    for i, pre in enumerate(prefixes):
        try:
            o = np.asarray(sampler(target, draft, np.asarray(pre, dtype=np.int64), k, rng))
        except Exception as exc:  # noqa: BLE001 - any failure of the user's code is a finding
            return outs, (i, repr(exc))
        ok = o.ndim == 1 and o.size >= 1 and o.dtype.kind in "iu" and o.min() >= 0 and o.max() < V
        outs.append(o.tolist() if ok else None)
    return outs, None


def check_sampler_sequential(
    sampler: Callable[..., Any],
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    steps: int = STEPS,
    batch: int = BATCH,
    chain_steps: int = CHAIN_STEPS,
    vocab_sizes: Sequence[int] = (3, 5),
    gammas: Sequence[int] = (1, 3),
    families: Sequence[str] | None = None,
    instances: Sequence[Instance] | None = None,
    rng: RNGLike = 0,
    alpha: float = 1e-4,
    torch_random: bool | None = None,
) -> Report:
    """:func:`check_sequential` for a whole sampler (:func:`~spectheory.testing.check_sampler`'s interface).

    A call is one round of one request: ``steps * batch`` calls on each instance (prefix its
    first token), and on the chain ``batch`` requests served round-robin, each call handed the
    request's tokens so far. ``acceptance_serial`` reads "more than one token returned".
    ``temperature``, ``top_k``, ``top_p``: the processing the output law must follow.
    """
    from .toy_models import ToyModel, process_logits

    if not callable(sampler):
        raise ValueError("sampler: must be callable")
    if not (np.isfinite(temperature) and temperature > 0):
        raise ValueError(
            f"temperature: the sequential checks need a finite temperature > 0, got {temperature}"
        )
    steps, batch, alpha, chain_steps = _args(steps, batch, alpha, chain_steps)
    insts, base = _instances(vocab_sizes, gammas, families, instances, rng)
    M = 2 * len(insts) + 1
    a_i = alpha / M
    found: dict[str, list[Finding]] = {name: [] for name in SEQUENTIAL_CHECKS}
    seeds = base.spawn(len(insts) + 1)
    what = f"({steps * batch} calls in sequence)"

    def processed(laws):
        with np.errstate(divide="ignore"):
            return process_logits(np.log(laws), temperature or 1.0, top_k, top_p)

    for inst, ss in zip(insts, seeds[:-1]):
        r_run, r_torch = [np.random.default_rng(s) for s in ss.spawn(2)]
        V, n = inst.vocab_size, steps * batch
        with kit_randomness(r_torch, None, torch_random):
            outs, err = _sampler_calls(
                sampler, ToyModel(inst.target), ToyModel(inst.draft), [[inst.s0]] * n, inst.k, r_run, V
            )
        valid = np.zeros(n, dtype=bool)
        y0 = np.zeros(n, dtype=np.int64)
        more = np.zeros(n, dtype=bool)
        for i, o in enumerate(outs):
            if o is not None:
                valid[i], y0[i], more[i] = True, o[0], len(o) > 1
        size = V * (inst.k + 1)
        law0 = processed(inst.target[0, inst.s0])
        ind, ser = _pair_findings(inst.name, size, y0, more, valid, law0, V, n, 1, a_i, what)
        if err is not None:
            ind = Finding(inst.name, False, summary=f"raised {err[1]} at call {err[0]}", size=size)
        found["calls_independent"].append(ind)
        found["acceptance_serial"].append(ser)
    P, Q = tiny_chain(seeds[-1])
    r_run, r_torch = [np.random.default_rng(s) for s in seeds[-1].spawn(2)]
    target, draft = ToyModel(P[None]), ToyModel(Q[None])
    cur: list[list[int]] = [[0] for _ in range(batch)]
    done: list[list[int]] = []
    failure = None
    with kit_randomness(r_torch, None, torch_random):
        for s in range(chain_steps):
            outs, err = _sampler_calls(sampler, target, draft, cur, CHAIN_K, r_run, CHAIN_V)
            if err is not None or any(o is None for o in outs):
                failure = f"raised {err[1]}" if err else "malformed output"
                failure += f" at call {s} of the chain"
                break
            for b, o in enumerate(outs):
                cur[b] = cur[b] + o[: CHAIN_K + 1]
                if len(cur[b]) > CHAIN_L:
                    done.append(cur[b][1 : CHAIN_L + 1])
                    cur[b] = [0]
    note = f"{chain_steps} calls of {batch} requests, k = {CHAIN_K}, L = {CHAIN_L}"
    seqs: Any = failure if failure else np.array(done, dtype=np.int64).reshape(-1, CHAIN_L)
    found["sequence_across_calls"].append(_chain_finding(seqs, processed(P), CHAIN_L, a_i, note))
    checks = [summarise(n, d, kind, found[n], a_i, M, alpha) for n, (d, kind) in SEQUENTIAL_CHECKS.items()]
    seq = {"steps": steps, "batch": batch, "chain_steps": chain_steps, "chain_k": CHAIN_K, "chain_L": CHAIN_L}
    config = {"n_instances": len(insts), "n_samples": steps * batch, "rng": str(rng), "sequential": seq}
    config["protocol"] = {"temperature": temperature, "top_k": top_k, "top_p": top_p}
    return Report(_name(sampler), checks, config, M, alpha)
