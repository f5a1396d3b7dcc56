r"""The checks the kit runs on one instance (called by :func:`spectheory.testing.check_verifier`).

Protocol options change what a correct verifier emits, and so how the kit reads an output:

* ``bonus=True`` (the default): ``draft_tokens[:n]`` and one more token (residual or bonus),
  ``1 <= len <= k+1``; the accepted count is ``len - 1``.
* ``bonus=False`` (e.g. vLLM's ``disable_bonus_tokens=True``): after ``k`` accepted drafts
  nothing follows, so ``len <= k``, and an output of length ``k`` whose last token is the last
  draft accepted all ``k`` drafts (token verification rejects a draft only where q > p, where
  its residual is 0, so a residual never equals the draft it replaces).
* ``stop_token=s``: once the draft ``s`` is accepted the round ends (no bonus, no further
  draft); an output ending in an accepted ``s`` counts it as accepted. The target law a
  correct sampler produces is then the *absorbing* one (after ``s`` only ``s``,
  :meth:`~spectheory.testing.Instance.absorbing`), and token verification's accepted-count law (the
  efficiency reference) stops at ``s`` too (:meth:`~spectheory.testing.Instance.accepted_count_law`).

The efficiency checks compare each protocol with its own reference: the first-draft
acceptance :math:`\sum_x \min(p_0, q_0)` (p = target, q = draft; the first draft's optimum) and
the accepted-count law of standard token verification under the same protocol (not an optimum:
block verification accepts more on average; a lossless rule below it is wasteful).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ._runner import boundary_run, content_violations, determinism, fmt_call, violation_reason
from ._verdicts import above_optimum, loss_finding, randomness_findings, severity
from .hostile import REFUSABLE, refused
from .instances import Instance
from .report import Finding
from .round_instance import MAX_BLOCKS
from .stat_tests import bernstein_lower_test, binomial_test, chi2_test

if TYPE_CHECKING:
    from ..verifiers.round_law_rule import RoundLawRule

MAX_SEQUENCE_CELLS = 100_000
N_BOUNDARY = 16
N_DETERMINISM = 8
FORCED = {"low": "0", "high": "their largest value below 1"}


def accepted_counts(
    out: np.ndarray, lengths: np.ndarray, x: np.ndarray, bonus: bool = True, stop_token: int | None = None
) -> np.ndarray:
    """Accepted drafts of each round, read according to the protocol (see the module docstring)."""
    n, k = x.shape
    acc = lengths - 1
    if bonus and stop_token is None:
        return acc
    rows = np.arange(n)
    last = out[rows, np.maximum(lengths - 1, 0)]
    draft_last = (lengths <= k) & (last == x[rows, np.clip(lengths - 1, 0, k - 1)])
    cond = np.zeros(n, dtype=bool)
    if not bonus:
        cond |= draft_last & (lengths == k)
    if stop_token is not None:
        cond |= draft_last & (last == stop_token)
    return np.where(cond, lengths, acc)


def n_tests(inst: Instance, efficiency: bool, stop_token: int | None = None) -> int:
    n = 1 + inst.k + 1  # first token, later positions, sequence
    if stop_token is None and inst.vocab_size**inst.k <= MAX_BLOCKS:
        n += 1  # above_optimum
    if efficiency:
        n += 1 + (1 if inst.k >= 2 else 0)
    return n


def cells(counts: np.ndarray, probs: np.ndarray, V: int | None = None, L: int = 1, top: int = 6) -> str:
    n = counts.sum()
    exp = n * probs
    score = np.where(exp > 0, (counts - exp) ** 2 / np.maximum(exp, 1e-300), np.where(counts > 0, np.inf, 0))
    worst = np.argsort(-score)[:top]
    lines = ["most deviating cells (observed vs expected):"]
    for c in worst:
        lab = c if L == 1 else tuple(int(v) for v in np.unravel_index(c, (V or 0,) * L))
        lines.append(f"  {lab}: {int(counts[c])} vs {exp[c]:.1f}")
    return "\n".join(lines)


def zero_probability_rows(
    law: Any, out: np.ndarray, lengths: np.ndarray, bad: np.ndarray, err: Any
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(valid, zero, per_million)``: the well-formed outputs before any error, those that emit a
    token of probability 0 under ``law``, and how many such tokens per million emitted tokens."""
    valid = ~bad & (lengths > 0)
    if err is not None:
        valid[err[0] :] = False
    zero = law.emitted_target_prob_zero(np.where(valid[:, None], out, 0), np.where(valid, lengths, 0))
    return valid, zero, 1e6 * int(zero.sum()) / max(int(lengths[valid].sum()), 1)


class RoundProtocol(NamedTuple):
    """How the rounds of a kit run end and are judged (the report's ``config["protocol"]``).

    ``bonus`` and ``stop_token``: the output protocols of the module docstring; ``greedy``: the
    temperature-0 protocol (module docstring of :mod:`spectheory.testing.kit`); ``lossy``: the
    rule is declared lossy, and ``loss`` measures by how much (a rule object with a round law,
    :class:`~spectheory.verifiers.round_law_rule.RoundLawRule`: also its exact TV).
    """

    bonus: bool = True
    stop_token: int | None = None
    greedy: bool = False
    lossy: bool | RoundLawRule = False

    def config(self) -> dict[str, Any]:
        """The protocol as the report records it (a lossy rule by its name)."""
        lossy = self.lossy if isinstance(self.lossy, bool) else self.lossy.name
        return {"bonus": self.bonus, "stop_token": self.stop_token, "greedy": self.greedy, "lossy": lossy}


def check_instance(
    inst: Instance,
    ss: Any,
    runner: Any,
    n: int,
    a_i: float,
    efficiency: bool,
    found: dict,
    protocol: RoundProtocol,
) -> None:
    """Run every check on one instance under ``protocol``; append :class:`Finding` objects to ``found[check]``."""
    bonus, stop_token, greedy, lossy = protocol
    V, k = inst.vocab_size, inst.k
    size = V * (k + 1)
    law = inst.greedy() if greedy else inst
    law = law if stop_token is None else law.absorbing(stop_token)
    r_draft, r_verify, r_complete, r_edge, r_torch = [np.random.default_rng(s) for s in ss.spawn(5)]
    drafting = getattr(runner.verify, "drafting", "sample")
    runner.records.clear()
    tp, dp, x = inst.sample_drafts(n, r_draft, drafting)
    out, lengths, bad, err, notes = runner.run(tp, dp, x, r_verify, torch_seed=r_torch)

    def fail(check, summary, example):
        found[check].append(Finding(inst.name, False, summary=summary, example=example, size=size))

    def ok(check):
        found[check].append(Finding(inst.name, True, size=size))

    # ---- exact checks on the sampled rounds
    if refused(inst.family, err):  # a named refusal of a NaN input is correct (spectheory.testing.hostile)
        found["runs_without_error"].append(
            Finding(inst.name, True, size=size, note=f"refused the non-finite input: {err[1]}")
        )
    elif err is not None:
        i, msg, tb = err
        fail(
            "runs_without_error",
            f"raised {msg}",
            f"instance {inst.name}\n" + fmt_call(tp[i], dp[i], x[i]) + f"\n{tb.strip().splitlines()[-1]}",
        )
    else:
        ok("runs_without_error")
    viol = content_violations(out, lengths, x, V, bonus, stop_token)
    fmt_bad = bad | viol[0] | viol[1] | viol[2] | viol[3]
    if fmt_bad.any():
        i = int(np.flatnonzero(fmt_bad)[0])
        why = notes.get(i) or violation_reason(i, *viol, stop_token)
        fail(
            "output_format",
            f"{int(fmt_bad.sum())} of {n} rounds malformed: {why}",
            f"instance {inst.name}\n" + fmt_call(tp[i], dp[i], x[i], out[i][: max(lengths[i], 1)].tolist()),
        )
    else:
        ok("output_format")
    valid, zero, per_m = zero_probability_rows(law, out, lengths, fmt_bad, err)
    if zero.any():
        i = int(np.flatnonzero(zero)[0])
        fail(
            "zero_probability",
            f"{int(zero.sum())} of {n} rounds emitted a token of target probability 0 "
            f"(about {per_m:.3g} wrong tokens per million emitted on this instance)",
            f"instance {inst.name}\n" + fmt_call(tp[i], dp[i], x[i], out[i][: lengths[i]].tolist()),
        )
    else:
        ok("zero_probability")

    # ---- forced uniforms (0 and just below 1) and determinism, on fresh draft paths
    tpb, dpb, xb = inst.sample_drafts(N_BOUNDARY, r_edge, drafting)
    mean_len = float(lengths[valid].mean()) if valid.any() else 1.0
    problem = _forced(runner, law, tpb, dpb, xb, bonus, stop_token, mean_len, inst.family)
    if problem is None:
        ok("forced_uniforms")
    else:
        fail("forced_uniforms", problem[0], f"instance {inst.name}\n" + problem[1])
    det = determinism(runner, tpb[:N_DETERMINISM], dpb[:N_DETERMINISM], xb[:N_DETERMINISM], ss)
    if det is None:
        ok("determinism")
    else:
        fail("determinism", det[0], f"instance {inst.name}\n" + det[1])
    for check, finding in randomness_findings(runner.records, inst.name, size).items():
        found[check].append(finding)

    # ---- statistical checks on valid rounds (none where a NaN input leaves no law)
    if err is not None or valid.sum() == 0 or inst.family in REFUSABLE:
        return
    if greedy:
        if efficiency:
            found["greedy_acceptance"].append(
                _greedy_acceptance(inst, tp, dp, x, out, lengths, valid, bonus, stop_token)
            )
        return
    o, L = out[valid], lengths[valid]
    nv = int(valid.sum())
    comp = law.complete(o, L, r_complete)
    pos_laws = law.position_laws()
    for j in range(k + 1):
        counts = np.bincount(comp[:, j], minlength=V)
        res = chi2_test(counts, pos_laws[j], a_i)
        name = "first_token_law" if j == 0 else "position_laws"
        ex = (
            ""
            if res.passed
            else (
                f"instance {inst.name}, position {j}\n" + cells(counts, pos_laws[j]) + "\n" + inst.describe()
            )
        )
        found[name].append(Finding.of_test(f"{inst.name} pos {j}" if j else inst.name, res, ex, size))
    Ls = k + 1
    while Ls > 1 and V**Ls > MAX_SEQUENCE_CELLS:
        Ls -= 1
    idx = np.zeros(nv, dtype=np.int64)
    for j in range(Ls):
        idx = idx * V + comp[:, j]
    seq = law.sequence_law(Ls).ravel()
    counts = np.bincount(idx, minlength=seq.size)
    res = chi2_test(counts, seq, a_i)
    ex = (
        ""
        if res.passed
        else (
            f"instance {inst.name}, first {Ls} tokens\n" + cells(counts, seq, V, Ls) + "\n" + inst.describe()
        )
    )
    found["sequence_law"].append(
        Finding.of_test(
            inst.name,
            res,
            ex,
            size,
            summary=res.summary + ("" if Ls == k + 1 else f" (first {Ls} positions)"),
        )
    )
    acc = accepted_counts(o, L, x[valid], bonus, stop_token)
    if lossy:
        rule = None if lossy is True else lossy
        found["loss"].append(loss_finding(inst, law, counts, seq, Ls, acc, a_i, size, stop_token, rule))
    if stop_token is None and drafting == "sample":  # block's optimum is for drafts drawn from q
        over = above_optimum(inst, acc, a_i, size)
        if over is not None:
            found["above_optimum"].append(over)
    if not efficiency:
        return
    beta = inst.first_acceptance()
    res = binomial_test(int(np.sum(acc >= 1)), nv, beta, a_i)
    ex = "" if res.passed else f"instance {inst.name}\n" + inst.describe()
    found["acceptance_rate"].append(Finding.of_test(inst.name, res, ex, size))
    if k >= 2:
        law_n = inst.accepted_count_law(stop_token)
        mu = float(np.arange(k + 1) @ law_n)
        var = float(np.arange(k + 1) ** 2 @ law_n - mu**2)
        res = bernstein_lower_test(float(np.mean(acc)), nv, mu, max(var, 0.0), k, a_i)
        ex = (
            ""
            if res.passed
            else (
                f"instance {inst.name}\naccepted-count histogram observed "
                f"{np.bincount(acc, minlength=k + 1).tolist()}, optimal law "
                f"{np.round(law_n, 5).tolist()}\n" + inst.describe()
            )
        )
        found["mean_accepted"].append(Finding.of_test(inst.name, res, ex, size))


def _forced(runner, law, tp, dp, x, bonus, stop_token, mean_len=1.0, family=""):
    """First problem with forced uniforms, as ``(summary, example)``, or None.

    A wrong output (malformed, or a token of target probability 0) states its severity:
    the per-draw probability of the forced event for the dtype drawn and the first-order
    rate of wrong tokens (:func:`spectheory.testing._verdicts.severity`)."""
    V = law.vocab_size
    n, k = x.shape
    for which in ("low", "high"):
        note = f"rng = spectheory.testing.instances.constant_uniform_rng({which!r})" + (
            f"; torch draws forced: spectheory.testing.torch_random.kit_torch_random(force={which!r})"
            if runner.routed
            else ""
        )
        what = f"with uniforms forced to {FORCED[which]}"
        ob, lb, badb, errb, _ = boundary_run(runner, tp, dp, x, which)
        if refused(family, errb):
            continue
        if errb is not None:
            i, msg, tb = errb
            return f"raised {msg} {what}", fmt_call(tp[i], dp[i], x[i], rng_note=note)
        viol = content_violations(ob, lb, x, V, bonus, stop_token)
        fb = badb | viol[0] | viol[1] | viol[2] | viol[3]
        if fb.any():
            i = int(np.flatnonzero(fb)[0])
            sev = severity(runner.records[-1].bits, n, float(fb.mean()), k, mean_len, which)
            return (
                f"malformed output {what}: {violation_reason(i, *viol, stop_token)} ({sev})",
                fmt_call(tp[i], dp[i], x[i], ob[i][: max(lb[i], 1)].tolist(), rng_note=note),
            )
        zb = law.emitted_target_prob_zero(ob, lb)
        if zb.any():
            i = int(np.flatnonzero(zb)[0])
            sev = severity(runner.records[-1].bits, n, float(zb.mean()), k, mean_len, which)
            return (
                f"emitted a token of target probability 0 {what} ({sev})",
                fmt_call(tp[i], dp[i], x[i], ob[i][: lb[i]].tolist(), rng_note=note),
            )
    return None


def _greedy_acceptance(inst, tp, dp, x, out, lengths, valid, bonus, stop_token):
    """Exact: every round accepts the longest draft prefix on the target's argmax path."""
    n, k = x.shape
    rows = np.arange(n)[:, None]
    on_path = tp[rows, np.arange(k)[None, :], x] >= tp[:, :k].max(-1)
    opt = np.cumprod(on_path, axis=1).sum(1)
    if stop_token is not None:
        first = np.where((x == stop_token).any(1), np.argmax(x == stop_token, axis=1) + 1, k)
        opt = np.minimum(opt, first)
    acc = accepted_counts(out, lengths, x, bonus, stop_token)
    short = valid & (acc < opt)
    size = inst.vocab_size * (k + 1)
    if not short.any():
        return Finding(inst.name, True, size=size)
    i = int(np.flatnonzero(short)[0])
    return Finding(
        inst.name,
        False,
        summary=f"{int(short.sum())} of {int(valid.sum())} rounds stop before the end of the argmax "
        f"path (accepted {int(acc[i])} drafts, the argmax path {int(opt[i])})",
        example=f"instance {inst.name}\n" + fmt_call(tp[i], dp[i], x[i], out[i][: lengths[i]].tolist()),
        size=size,
    )
