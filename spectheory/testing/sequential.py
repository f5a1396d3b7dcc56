r"""The sequential exercise: the sampler called as an engine calls it, ``S`` times in a row.

An engine calls its sampler once per decode step, with a small batch of ``B`` rows (one per
request), for thousands of steps. Randomness that repeats or correlates *across calls* -- a
generator created or seeded inside the call, uniforms cached between steps, a counter-based
stream keyed on something that does not change between steps -- leaves every single call's
rows with the right law, so the one-call checks pass; only consecutive calls are not
independent. The exercise drives the sampler ``steps`` calls of ``batch`` rows in sequence
(the same object throughout, so any state it keeps is carried), inside one
:func:`~spectheory.testing.randomness.kit_randomness` session, and runs three checks
(p = target, q = draft):

============================  ===========================================================  ============
check                         what must hold                                               test
============================  ===========================================================  ============
``calls_independent``         row ``b``'s first emitted tokens at calls ``2m`` and          chi-square
                              ``2m+1``: joint law :math:`p_0 \otimes p_0` (the product of
                              their exact laws; disjoint pairs, so the pairs are i.i.d.)
``acceptance_serial``         the events "a draft accepted" at calls ``2m`` and ``2m+1``    Fisher exact
                              of the same row are independent (no serial correlation of
                              acceptance; exact conditional test, any rule)
``sequence_across_calls``     on a tiny homogeneous chain (``V = 3``) each row is a slot   chi-square
                              of continuous batching: a request decodes from token 0,
                              each call continuing from the last token emitted, until it
                              has ``L = 4`` tokens; the law of those ``L`` tokens is the
                              chain's :math:`\prod_j P(y_j | y_{j-1})`
============================  ===========================================================  ============

The first two run on each instance of the run (fresh drafts every call, so the calls are
i.i.d. for a correct sampler); the third on one chain drawn from the run's seed. The tests
share the budget ``alpha`` (Bonferroni), apart from the one-call checks'. Defaults
(:data:`STEPS`, :data:`BATCH`, :data:`CHAIN_STEPS`): 64 calls of 32 rows (1,024 pairs per
instance) and 256 calls on the chain: enough for every repeating-randomness entry of
:data:`spectheory.testing.gallery_sequential.SEQUENTIAL_BUGS` in every seed
(``simulations/testing_kit_sequential.py`` measures the power and the false alarms).
Whole samplers (:func:`check_sampler_sequential`) run the same checks, a call being one
round of one request (the prefix is the request's tokens so far); ``acceptance_serial`` then
reads "more than one token returned". Ragged batched samplers run through
:func:`ragged_as_verifier`.

Examples
--------
>>> from spectheory.testing import reference_verify
>>> from spectheory.testing.sequential import check_sequential
>>> report = check_sequential(reference_verify, steps=16, batch=8, families=["markov"], rng=0)
>>> report.passed, report.config["sequential"]["steps"]
(True, 16)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._typing import RNGLike
from ..laws.sampling import normalized_cdf, sample_from_cdf
from ._checks import accepted_counts
from ._plan import _instances, _name
from ._runner import Runner, content_violations
from ._sequential_parts import (  # noqa: F401 - re-exported: the module's public names
    BATCH,
    CHAIN_K,
    CHAIN_L,
    CHAIN_STEPS,
    SEQUENTIAL_CHECKS,
    STEPS,
    _args,
    _chain_finding,
    _pair_findings,
    add_sequential,
    chain_law,
    fisher_serial,
    sizes,
    tiny_chain,
)
from .instances import Instance
from .randomness import kit_randomness
from .report import CheckResult, Finding, Report, summarise
from .sequential_sampler import check_sampler_sequential

__all__ = [
    "check_sequential",
    "check_sampler_sequential",
    "ragged_as_verifier",
    "tiny_chain",
    "SEQUENTIAL_CHECKS",
    "STEPS",
    "BATCH",
    "CHAIN_STEPS",
]


def ragged_as_verifier(sampler: Callable[..., Any]) -> Any:
    """A ragged batched sampler (:func:`~spectheory.testing.check_ragged_batch`'s interface) as a kit verifier.

    Every row gets the full draft length and temperature 1 (logits ``log p``); the object has
    ``verify_batch`` and the sampler's name.
    """

    class _Ragged:
        __name__ = getattr(sampler, "__name__", type(sampler).__name__)

        def verify_batch(self, tp, dp, x, rng):
            n, k = x.shape
            with np.errstate(divide="ignore"):
                tl, dl = np.log(tp), np.log(dp)
            return sampler(tl, dl, x, np.full(n, k, dtype=np.int64), np.ones(n), rng)

    return _Ragged()


# ------------------------------------------------------------------------- verifiers
def _drive_chain_verifier(runner, P, Q, k, L, steps, batch, ss):
    """Continuous batching on the chain: ``(sequences [R, L], note)`` or ``(failure text, example)``."""
    r_draft, r_verify, r_torch = [np.random.default_rng(s) for s in ss.spawn(3)]
    V = P.shape[0]
    ctx = np.zeros(batch, dtype=np.int64)
    cur: list[list[int]] = [[] for _ in range(batch)]
    done: list[list[int]] = []
    cdf = normalized_cdf(Q)
    saved, runner.rows_per_call = runner.rows_per_call, None
    try:
        with kit_randomness(r_torch, None, runner.torch_random):
            for s in range(steps):
                x = np.empty((batch, k), dtype=np.int64)
                tp, dp = np.empty((batch, k + 1, V)), np.empty((batch, k, V))
                prev = ctx
                for j in range(k):
                    tp[:, j], dp[:, j] = P[prev], Q[prev]
                    prev = sample_from_cdf(cdf[prev], r_draft.random(batch))
                    x[:, j] = prev
                tp[:, k] = P[prev]
                if runner.batched:
                    out, lengths, bad, err, _ = runner._run_batched(tp, dp, x, r_verify)
                else:
                    out, lengths, bad, err, _ = runner._run_rounds(tp, dp, x, r_verify, None)
                if err is not None:
                    return f"raised {err[1]} at call {s} of the chain", err[2].strip().splitlines()[-1]
                viol = content_violations(out, lengths, x, V)
                wrong = bad | viol[0] | viol[1]
                if wrong.any():
                    b = int(np.flatnonzero(wrong)[0])
                    return f"malformed output at call {s}, row {b}", f"output {out[b].tolist()}"
                for b in range(batch):
                    cur[b].extend(out[b, : lengths[b]].tolist())
                    if len(cur[b]) >= L:
                        done.append(cur[b][:L])
                        cur[b] = []
                        ctx[b] = 0
                    else:
                        ctx[b] = cur[b][-1]
    finally:
        runner.rows_per_call = saved
    seqs = np.array(done, dtype=np.int64).reshape(-1, L)
    return seqs, f"{steps} calls of {batch} rows, k = {k}, L = {L}"


def sequential_checks(
    runner: Any,
    insts: Sequence[Instance],
    base: np.random.SeedSequence,
    steps: int,
    batch: int,
    alpha: float,
    bonus: bool = True,
    chain_steps: int = CHAIN_STEPS,
) -> tuple[list[CheckResult], dict[str, Any], int]:
    """The three sequential checks of a verifier run (``runner``: a :class:`~spectheory.testing._runner.Runner`).

    Returns the check results, the ``config["sequential"]`` entry and the number of tests."""
    M = 2 * len(insts) + 1
    a_i = alpha / M
    found: dict[str, list[Finding]] = {name: [] for name in SEQUENTIAL_CHECKS}
    drafting = getattr(runner.verify, "drafting", "sample")
    saved = runner.rows_per_call
    seeds = base.spawn(len(insts) + 1)
    what = f"({steps} calls of {batch} rows)"
    for inst, ss in zip(insts, seeds[:-1]):
        r_draft, r_verify, r_torch = [np.random.default_rng(s) for s in ss.spawn(3)]
        tp, dp, x = inst.sample_drafts(steps * batch, r_draft, drafting)
        runner.rows_per_call = batch
        try:
            out, lengths, bad, err, _ = runner.run(tp, dp, x, r_verify, torch_seed=r_torch)
        finally:
            runner.rows_per_call = saved
        viol = content_violations(out, lengths, x, inst.vocab_size, bonus)
        valid = ~(bad | viol[0] | viol[1] | viol[2]) & (lengths > 0)
        if err is not None:
            valid[err[0] :] = False
        acc = accepted_counts(out, lengths, x, bonus) >= 1
        size = inst.vocab_size * (inst.k + 1)
        ind, ser = _pair_findings(
            inst.name,
            size,
            out[:, 0],
            acc,
            valid,
            inst.target[0, inst.s0],
            inst.vocab_size,
            steps,
            batch,
            a_i,
            what,
        )
        found["calls_independent"].append(ind)
        found["acceptance_serial"].append(ser)
    P, Q = tiny_chain(seeds[-1])
    seqs, note = _drive_chain_verifier(runner, P, Q, CHAIN_K, CHAIN_L, chain_steps, batch, seeds[-1])
    found["sequence_across_calls"].append(_chain_finding(seqs, P, CHAIN_L, a_i, note))
    checks = [summarise(n, d, kind, found[n], a_i, M, alpha) for n, (d, kind) in SEQUENTIAL_CHECKS.items()]
    config = {
        "steps": steps,
        "batch": batch,
        "chain_steps": chain_steps,
        "chain_k": CHAIN_K,
        "chain_L": CHAIN_L,
    }
    return checks, config, M


def check_sequential(
    verify: Any,
    *,
    steps: int = STEPS,
    batch: int = BATCH,
    chain_steps: int = CHAIN_STEPS,
    vocab_sizes: Sequence[int] = (3, 5),
    gammas: Sequence[int] = (1, 3),
    families: Sequence[str] | None = None,
    instances: Sequence[Instance] | None = None,
    rng: RNGLike = 0,
    alpha: float = 1e-4,
    batched: bool | None = None,
    bonus: bool | None = None,
    torch_random: bool | None = None,
) -> Report:
    """Drive a verifier as an engine does (``steps`` calls of ``batch`` rows) and run the sequential checks.

    Parameters
    ----------
    verify : callable, object with ``verify_batch``, or str
        As in :func:`~spectheory.testing.check_verifier` (a per-round verifier is called
        ``batch`` times a step, in row order).
    steps, batch, chain_steps : int
        Calls in sequence, rows a call, and calls on the tiny chain (module docstring).
    vocab_sizes, gammas, families, instances, rng, alpha, batched, bonus, torch_random
        As in :func:`~spectheory.testing.check_verifier` (sampled decoding, no stop token).

    Returns
    -------
    Report
        The checks of :data:`SEQUENTIAL_CHECKS`; ``config["sequential"]`` states the sizes.
    """
    from ..verifiers.base import Verifier
    from .reference import from_verifier

    if isinstance(verify, (str, Verifier)):  # as check_verifier resolves it
        try:
            verify = from_verifier(verify)
        except (KeyError, ValueError) as exc:
            raise ValueError(f"verify: {exc}") from None
    steps, batch, alpha, chain_steps = _args(steps, batch, alpha, chain_steps)
    if batched is None:
        batched = hasattr(verify, "verify_batch")
    bonus = bool(getattr(verify, "bonus", True) if bonus is None else bonus)
    insts, base = _instances(vocab_sizes, gammas, families, instances, rng)
    runner = Runner(verify, batched, torch_random)
    checks, seq, M = sequential_checks(runner, insts, base, steps, batch, alpha, bonus, chain_steps)
    config = {"n_instances": len(insts), "n_samples": steps * batch, "rng": str(rng), "sequential": seq}
    config["protocol"] = {"bonus": bonus}
    return Report(_name(verify), checks, config, M, alpha)
