r"""Whole-sampler checks: the user's code drafts *and* verifies; the kit checks what comes out.

:func:`check_verifier` draws the draft tokens itself, so bugs in the glue around the
verifier -- drafting greedily while handing over the soft draft law (HuggingFace issue
#32867), sampling drafts from top-k-processed logits while handing over the raw ones (issue
#47932) -- cannot happen there. :func:`check_sampler` hands the user's sampler the two
*models* instead::

    sampler(target_model, draft_model, prefix, k, rng) -> new tokens (1-d ints)

* ``target_model(tokens)``, ``draft_model(tokens)`` -- raw next-token logits, shape
  ``[len(tokens), V]`` for a 1-d token sequence (row ``i``: the logits after
  ``tokens[:i+1]``, as a causal language model returns them; ``[B, L, V]`` for ``[B, L]``);
  the sampler applies its own temperature / top-k / top-p to both;
* ``prefix`` -- the prompt (one token), ``k`` -- the draft length to use, ``rng`` -- a numpy
  Generator (torch draws are routed through the kit as in :func:`check_verifier`);
* the return value -- the tokens generated after ``prefix``: one round (accepted drafts and
  one more token) or more; the kit keeps the first ``k+1``.

The kit tells the sampler nothing about the laws; it checks the law of the output, once
completed to ``k+1`` tokens by the target, against the target's *processed* law
:math:`\prod_j p'_j(y_j|y_{j-1})`, where ``p' =`` :func:`process_logits` of the target's
logits with the ``temperature``, ``top_k`` and ``top_p`` the user declares (the order of
HuggingFace's warpers: temperature, then top-k, then top-p). Checks: ``runs_without_error``,
``output_format``, ``zero_probability`` (no token outside the processed target's support),
``forced_uniforms``, ``determinism``, ``first_token_law``, ``position_laws``,
``sequence_law``; no efficiency check (the kit cannot see which tokens were accepted). A sampler
that declares ``lossless = False`` (or ``lossy=True``) is reported lossy, not failed: the law
failures become notes and ``loss`` states the measured TV of its output from the target.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._guards import check_int, check_prob
from .._typing import RNGLike
from ._catalog import CHECKS, SAMPLED_ONLY
from ._checks import MAX_SEQUENCE_CELLS, N_BOUNDARY, N_DETERMINISM, cells, zero_probability_rows
from ._plan import _instances, fold, run_config
from ._verdicts import measured_tv, randomness_findings, severity
from .instances import Instance, constant_uniform_rng
from .randomness import kit_randomness
from .report import Finding, Report
from .stat_tests import chi2_test
from .toy_models import Counted, ToyModel, process_logits

__all__ = ["check_sampler", "assert_sampler_lossless", "process_logits", "ToyModel", "SAMPLER_CHECKS"]

SAMPLER_CHECKS = [
    c for c, (_, kind) in CHECKS.items() if kind not in ("efficiency", "lossy") and c != "above_optimum"
]


def _run(sampler, inst, n, rng, torch_random, torch_seed=None, force=None, records=None, calls=None):
    """Call the sampler ``n`` times; ``(out [n, k+1] padded -1, lengths, bad, error, note)``.

    The run's :class:`~spectheory.testing.randomness.RandomRecord` is appended to ``records``,
    the target calls of each round (an int array) to ``calls``."""
    k, V = inst.k, inst.vocab_size
    target = Counted(ToyModel(inst.target))
    per_round = np.zeros(n, dtype=np.int64)
    if calls is not None:
        calls.append(per_round)
    draft = ToyModel(inst.draft)
    prefix = np.array([inst.s0], dtype=np.int64)
    out = np.full((n, k + 1), -1, dtype=np.int64)
    lengths = np.zeros(n, dtype=np.int64)
    bad = np.zeros(n, dtype=bool)
    note = ""
    with kit_randomness(torch_seed, force, torch_random) as rec:
        if records is not None:
            records.append(rec)
        for i in range(n):
            r = constant_uniform_rng(force) if force else rng
            before = target.calls
            try:
                o = np.asarray(sampler(target, draft, prefix.copy(), k, r))
            except Exception as exc:  # noqa: BLE001 - any failure of the user's code is a finding
                return out, lengths, bad, (i, repr(exc), traceback.format_exc(limit=3)), note
            finally:
                per_round[i] = target.calls - before
            if o.ndim != 1 or o.shape[0] < 1 or o.dtype.kind not in "iu" or o.min() < 0 or o.max() >= V:
                bad[i] = True
                note = note or f"returned {o.dtype} array of shape {o.shape}: {o.tolist()[:8]}"
                continue
            m = min(o.shape[0], k + 1)
            out[i, :m] = o[:m]
            lengths[i] = m
    return out, lengths, bad, None, note


def check_sampler(
    sampler: Callable[..., Any],
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    vocab_sizes: Sequence[int] = (3, 5),
    gammas: Sequence[int] = (1, 3),
    n_samples: int = 20_000,
    rng: RNGLike = 0,
    families: Sequence[str] | None = None,
    alpha: float = 1e-4,
    instances: Sequence[Instance] | None = None,
    progress: bool | None = None,
    torch_random: bool | None = None,
    target_calls: int | None = None,
    lossy: bool | None = None,
    sequential: bool | tuple[int, int] = False,
) -> Report:
    r"""Check a whole speculative sampler (drafting included) against the processed target law.

    Parameters
    ----------
    sampler : callable
        ``sampler(target_model, draft_model, prefix, k, rng) -> new tokens`` (module docstring).
    temperature, top_k, top_p : float, int, float
        The processing the sampler applies to the target's logits (and, for its efficiency
        only, to the draft's); defines the law the output must follow. ``temperature=0`` is
        greedy decoding: the output must be the target's argmax path (checked exactly by
        ``zero_probability``, any argmax of a tie; the law tests are not run).
    vocab_sizes, gammas, n_samples, rng, families, alpha, instances, progress, torch_random
        As in :func:`~spectheory.testing.check_verifier`.
    target_calls : int, optional
        The multi-call protocol: the most target calls a round may make (speculative decoding:
        1; a verifier that calls the models again inside a round: more). A sampler that runs
        ``R`` rounds a call declares ``sampler.rounds = R``
        (:func:`spectheory.testing.hf_models.from_hf_sampler`): the budget is then ``R`` times
        this for each call. ``target_calls``
        reports the calls per round (a note when above 1), and fails the rounds above this
        budget when one is given.
    lossy : bool, optional
        Treat the sampler as lossy on purpose: the law tests still run, but their failures
        become notes, and ``loss`` states per instance the *measured* TV of the first tokens
        (completed by the target) from the processed target law, with the interval of
        :func:`~spectheory.testing._verdicts.measured_tv` (the kit sees no law of the
        sampler's own to compute an exact loss from). ``None`` (the default): what the sampler
        declares, ``not sampler.lossless`` (lossless when it has no such attribute);
        ``False``: the strict judgment. Not with ``temperature=0``.
    sequential : bool or (int, int)
        Also call the sampler as an engine does and add the checks of
        :mod:`spectheory.testing.sequential` (:func:`~spectheory.testing.sequential.check_sampler_sequential`;
        True: 64 calls of 32 requests, or ``(steps, batch)``), at their own level ``alpha``.
        Lossless samplers, ``temperature > 0``.

    Returns
    -------
    Report
        Without efficiency checks.

    Examples
    --------
    >>> from spectheory.testing import check_sampler
    >>> from spectheory.testing.gallery_samplers import make_sampler
    >>> check_sampler(make_sampler(top_k=2), top_k=2, n_samples=200).passed
    True
    """
    from tqdm.auto import tqdm

    if not callable(sampler):
        raise ValueError("sampler: must be callable")
    temperature = float(temperature)
    if not (np.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature: must be finite and >= 0, got {temperature}")
    greedy = temperature == 0
    if lossy is None:
        lossy = getattr(sampler, "lossless", True) is False
    if lossy not in (True, False):
        raise ValueError(f"lossy: expected None, True or False, got {lossy!r}")
    lossy = lossy and not greedy  # temperature 0: the argmax path is checked exactly
    if top_k is not None:
        top_k = check_int(top_k, "top_k", 1)
    if target_calls is not None:
        target_calls = check_int(target_calls, "target_calls", 1)
    if top_p is not None:
        top_p = float(check_prob(top_p, "top_p", open_low=True))
    n_samples = check_int(n_samples, "n_samples", 1)
    alpha = float(check_prob(alpha, "alpha", open_low=True, open_high=True))
    vocab_sizes = tuple(check_int(v, "vocab_sizes", 2) for v in np.atleast_1d(vocab_sizes))
    gammas = tuple(check_int(g, "gammas", 1) for g in np.atleast_1d(gammas))
    insts, base = _instances(vocab_sizes, gammas, families, instances, rng)
    if sequential is not False:
        from .sequential import sizes

        if greedy or lossy:
            raise ValueError("sequential: needs a lossless sampler and temperature > 0")
        steps, batch = sizes(sequential)
    M = 0 if greedy else sum(inst.k + 2 for inst in insts)
    a_i = alpha / max(M, 1)
    names = SAMPLER_CHECKS + ["loss"] if lossy else SAMPLER_CHECKS
    found: dict[str, list[Finding]] = {name: [] for name in names}
    routed = torch_random is True or (torch_random is None and "torch" in sys.modules)
    for inst, ss in tqdm(
        list(zip(insts, base.spawn(len(insts)))),
        desc="check_sampler",
        disable=None if progress is None else not progress,
        leave=False,
    ):
        with np.errstate(divide="ignore"):
            logits = np.log(inst.target)
        law = Instance(
            inst.name,
            inst.description,
            process_logits(logits, temperature or 1.0, top_k, top_p),
            inst.draft,
            inst.s0,
            inst.family,
        )
        law = law.greedy() if greedy else law
        _check(sampler, inst, law, ss, n_samples, a_i, found, torch_random, greedy, target_calls)
    config = run_config(vocab_sizes, gammas, n_samples, rng, families, insts)
    config.update(
        torch_random=routed,
        protocol={"temperature": temperature, "top_k": top_k, "top_p": top_p, "lossy": lossy},
    )
    names = [name for name in names if not (greedy and name in SAMPLED_ONLY)]
    report = fold(sampler, names, found, a_i, M, alpha, lossy, config)
    if sequential is not False:
        from .sequential import add_sequential, check_sampler_sequential

        seq = check_sampler_sequential(
            sampler,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            steps=steps,
            batch=batch,
            instances=insts,
            rng=base,
            alpha=alpha,
            torch_random=torch_random,
        )
        add_sequential(report, seq.checks, seq.config["sequential"])
    return report


def assert_sampler_lossless(sampler: Callable[..., Any], **kwargs: Any) -> Report:
    """Run :func:`check_sampler` and raise ``AssertionError`` (with the report) if a check fails."""
    report = check_sampler(sampler, **kwargs)
    if not report.passed:
        raise AssertionError("\n" + str(report))
    return report


def _example(inst: Instance, out: Any = None, note: str = "") -> str:
    s = f"instance {inst.name}: sampler(target_model, draft_model, prefix=[{inst.s0}], k={inst.k}, rng)"
    if out is not None:
        s += f"\noutput = {out}"
    return s + (f"\n{note}" if note else "") + "\n" + inst.describe()


def _check(sampler, inst, law, ss, n, a_i, found, torch_random, greedy=False, budget=None):
    V, k = inst.vocab_size, inst.k
    size = V * (k + 1)
    r_run, r_complete, r_torch = [np.random.default_rng(s) for s in ss.spawn(3)]

    def add(check, passed, summary="", example=""):
        found[check].append(Finding(inst.name, passed, summary=summary, example=example, size=size))

    records: list = []
    calls: list = []
    out, L, bad, err, note = _run(
        sampler, inst, n, r_run, torch_random, torch_seed=r_torch, records=records, calls=calls
    )
    rounds = int(getattr(sampler, "rounds", 1))  # an adapter running several rounds a call
    found["target_calls"].append(_calls_finding(inst.name, calls[0], budget, size, rounds))
    if err is not None:
        add(
            "runs_without_error",
            False,
            f"raised {err[1]}",
            _example(inst, note=err[2].strip().splitlines()[-1]),
        )
    else:
        add("runs_without_error", True)
    if bad.any():
        add("output_format", False, f"{int(bad.sum())} of {n} outputs malformed: {note}", _example(inst))
    else:
        add("output_format", True)
    valid, zero, per_m = zero_probability_rows(law, out, L, bad, err)
    if zero.any():
        i = int(np.flatnonzero(zero)[0])
        add(
            "zero_probability",
            False,
            f"{int(zero.sum())} of {n} outputs contain a token of processed target probability 0 (about "
            f"{per_m:.3g} per million emitted tokens)",
            _example(inst, out[i][: L[i]].tolist()),
        )
    else:
        add("zero_probability", True)
    problem = None
    for which in ("low", "high"):
        ob, lb, bb, eb, nb = _run(sampler, inst, N_BOUNDARY, None, torch_random, force=which, records=records)
        what = f"with uniforms forced to {'0' if which == 'low' else 'their largest value below 1'}"
        rn = f"rng = spectheory.testing.instances.constant_uniform_rng({which!r})"
        if eb is not None:
            problem = (f"raised {eb[1]} {what}", _example(inst, note=rn))
        elif bb.any():
            problem = (f"malformed output {what}: {nb}", _example(inst, note=rn))
        else:
            zb = law.emitted_target_prob_zero(ob, lb)
            if zb.any():
                i = int(np.flatnonzero(zb)[0])
                mean_len = float(L[valid].mean()) if valid.any() else 1.0
                sev = severity(records[-1].bits, N_BOUNDARY, float(zb.mean()), k, mean_len, which)
                problem = (
                    f"emitted a token of processed target probability 0 {what} ({sev})",
                    _example(inst, ob[i][: lb[i]].tolist(), rn),
                )
        if problem:
            break
    add("forced_uniforms", problem is None, *(problem or ()))
    s = int(ss.generate_state(1)[0])
    a = _run(
        sampler, inst, N_DETERMINISM, np.random.default_rng(s), torch_random, torch_seed=s, records=records
    )
    b = _run(
        sampler, inst, N_DETERMINISM, np.random.default_rng(s), torch_random, torch_seed=s, records=records
    )
    same = a[3] is not None or b[3] is not None or np.array_equal(a[0], b[0])
    add(
        "determinism",
        bool(same),
        ""
        if same
        else f"two runs with rng = numpy.random.default_rng({s}) differ: "
        f"{a[0][0].tolist()} then {b[0][0].tolist()}",
        "" if same else _example(inst),
    )
    for check, finding in randomness_findings(records, inst.name, size).items():
        found[check].append(finding)
    if err is not None or valid.sum() == 0 or greedy:  # temperature 0: the law is checked exactly
        return
    comp = law.complete(out[valid], L[valid], r_complete)
    pos_laws = law.position_laws()
    for j in range(k + 1):
        counts = np.bincount(comp[:, j], minlength=V)
        res = chi2_test(counts, pos_laws[j], a_i)
        ex = "" if res.passed else f"position {j}\n" + cells(counts, pos_laws[j]) + "\n" + _example(law)
        found["first_token_law" if j == 0 else "position_laws"].append(
            Finding.of_test(f"{inst.name} pos {j}" if j else inst.name, res, ex, size)
        )
    Ls = k + 1
    while Ls > 1 and V**Ls > MAX_SEQUENCE_CELLS:
        Ls -= 1
    idx = np.zeros(comp.shape[0], dtype=np.int64)
    for j in range(Ls):
        idx = idx * V + comp[:, j]
    seq = law.sequence_law(Ls).ravel()
    counts = np.bincount(idx, minlength=seq.size)
    res = chi2_test(counts, seq, a_i)
    ex = "" if res.passed else f"first {Ls} tokens\n" + cells(counts, seq, V, Ls) + "\n" + _example(law)
    found["sequence_law"].append(Finding.of_test(inst.name, res, ex, size))
    if "loss" in found:  # declared lossy: measured, not judged
        tv, lo, hi, m = measured_tv(counts, seq, a_i)
        found["loss"].append(
            Finding(
                inst.name,
                True,
                tv,
                summary=f"measured TV of the first {Ls} tokens from the processed target {tv:.4f} "
                f"(in [{lo:.4f}, {hi:.4f}] w.p. >= 1 - {a_i:.2g}, n = {m}; no exact law to compare)",
                size=size,
            )
        )


def _calls_finding(
    name: str, per_call: np.ndarray, budget: int | None, size: int, rounds: int = 1
) -> Finding:
    """Target calls per round: a note above 1, a failure above ``budget`` (``rounds`` rounds a call)."""
    mean, most = (float(per_call.mean()) / rounds if per_call.size else 0.0), int(per_call.max(initial=0))
    per = "a round" if rounds == 1 else f"a round ({rounds} rounds a call, at most {most} calls in one)"
    text = f"target called {mean:.3g} times {per} on average" + ("" if rounds > 1 else f" (at most {most})")
    if budget is None or most <= budget * rounds:
        return Finding(name, True, size=size, note="" if most <= rounds else text)
    over = int(np.sum(per_call > budget * rounds))
    unit = "rounds" if rounds == 1 else f"calls of {rounds} rounds"
    return Finding(
        name, False, summary=f"{over} of {per_call.size} {unit} exceed {budget}: {text}", size=size
    )
