r"""The conformance kit: :func:`check_verifier` and :func:`assert_verifier_lossless`.

The kit is the *caller* of the verifier: for each test instance (a tiny tree of target and
draft laws, :mod:`spectheory.testing.instances`) it draws the draft tokens itself from the
draft laws, calls the verifier, and compares what comes out with what speculative sampling
must produce (p = target, q = draft):

========================  ===========================================================  ===========
check                     what it tests                                                 kind
========================  ===========================================================  ===========
``runs_without_error``    no exception on any instance (edge cases included)           exact
``output_format``         1-d ints in ``[0, V)``, length ``1..k+1``, prefix = drafts   exact
``zero_probability``      never emits a token of target probability 0, also with       exact
                          uniforms forced to 0 and to ``1 - 2**-53``
``determinism``           the same ``rng`` seed gives the same output                  exact
``first_token_law``       law of the first emitted token = ``p_0``                     chi-square
``position_laws``         law of each later position = target marginal                 chi-square
``sequence_law``          joint law of the emitted tokens, completed to ``k+1`` by the chi-square
                          target, = :math:`\prod_j p_j(y_j|y_{j-1})`
``acceptance_rate``       P(first draft accepted) = :math:`\sum_x \min(p_0, q_0)`     exact binomial
``mean_accepted``         E[accepted drafts] not below standard token verification     Bernstein
========================  ===========================================================  ===========

The exact checks cannot fail for a correct verifier. The statistical tests share the
kit's false-alarm budget ``alpha`` (default ``1e-4``) by a Bonferroni split: each of the
``M`` tests runs at level ``alpha / M``, so a correct verifier fails a whole kit run with
probability below ``alpha``. The efficiency checks flag lossless but wasteful samplers
(accepting less than the optimum); accepting *more* than :math:`\sum\min(p_0, q_0)` at the
first position is impossible for a lossless sampler and is flagged too.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from itertools import cycle

import numpy as np

from .._validation import check_int, check_prob
from .instances import FAMILIES, Instance, constant_uniform_rng, make_instance
from .reference import PAD
from .stats import bernstein_lower_test, binomial_test, chi2_test

__all__ = ["check_verifier", "assert_verifier_lossless", "Report", "CheckResult", "Finding", "CHECKS"]

#: check name -> (what it tests, kind)
CHECKS = {
    "runs_without_error": ("the verifier returns on every instance (no exception)", "exact"),
    "output_format": ("1-d integer array, length 1..k+1, tokens in [0, V), emitted prefix equal to the drafts", "exact"),
    "zero_probability": ("no emitted token has target probability 0 (also with uniforms forced to 0 and 1-2^-53)",
                         "exact"),
    "determinism": ("the same rng seed gives the same output", "exact"),
    "first_token_law": ("law of the first emitted token equals the target's", "lossless"),
    "position_laws": ("law of each later position (completed by the target) equals the target marginal", "lossless"),
    "sequence_law": ("joint law of the emitted sequence (completed by the target) equals the target's", "lossless"),
    "acceptance_rate": ("P(first draft accepted) equals the optimum sum_x min(target, draft)", "efficiency"),
    "mean_accepted": ("E[accepted drafts] is not below standard token verification", "efficiency"),
}

MAX_SEQUENCE_CELLS = 100_000
N_BOUNDARY = 16
N_DETERMINISM = 8


@dataclass
class Finding:
    """One test of one check on one instance."""

    instance: str
    passed: bool
    statistic: float = np.nan
    threshold: float = np.nan
    p_value: float = np.nan
    summary: str = ""
    example: str = ""          # a minimal failing instance, when failed
    size: int = 0              # V * (k+1) of the instance, to choose the smallest failure


@dataclass
class CheckResult:
    """Outcome of one check over all instances.

    Attributes
    ----------
    name, description : str
    kind : str
        ``"exact"``, ``"lossless"`` or ``"efficiency"``.
    passed : bool
    statistic : str
        The worst finding (smallest p-value, or the violation).
    threshold : str
    failing_instance : str or None
        A minimal failing instance (smallest vocabulary and draft length among the failures),
        with what to call to reproduce it.
    findings : list of Finding
    """

    name: str
    description: str
    kind: str
    passed: bool
    statistic: str
    threshold: str
    failing_instance: str | None
    findings: list = field(default_factory=list)

    def __str__(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        lines = [f"[{mark}] {self.name}: {self.description}",
                 f"       statistic: {self.statistic}", f"       threshold: {self.threshold}"]
        if self.failing_instance:
            lines.append("       minimal failing instance:")
            lines += ["         " + ln for ln in self.failing_instance.splitlines()]
        return "\n".join(lines)


@dataclass
class Report:
    """What :func:`check_verifier` found. ``str(report)`` is the readable version."""

    verifier: str
    checks: list
    config: dict
    n_tests: int
    alpha: float

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def lossless_passed(self) -> bool:
        return all(c.passed for c in self.checks if c.kind != "efficiency")

    @property
    def failed(self) -> list:
        """Names of the failed checks."""
        return [c.name for c in self.checks if not c.passed]

    def __getitem__(self, name: str) -> CheckResult:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {"verifier": self.verifier, "passed": self.passed, "config": self.config,
                "n_tests": self.n_tests, "alpha": self.alpha,
                "checks": {c.name: {"passed": c.passed, "kind": c.kind, "statistic": c.statistic,
                                    "threshold": c.threshold,
                                    "min_p_value": float(min((f.p_value for f in c.findings
                                                              if np.isfinite(f.p_value)), default=np.nan))}
                           for c in self.checks}}

    def __str__(self) -> str:
        head = (f"spectheory.testing report for {self.verifier}: "
                f"{'PASSED' if self.passed else 'FAILED (' + ', '.join(self.failed) + ')'}\n"
                f"  {self.config['n_instances']} instances x {self.config['n_samples']} samples, "
                f"seed {self.config['seed']}; {self.n_tests} statistical tests at level "
                f"{self.alpha:g}/{self.n_tests} = {self.alpha / max(self.n_tests, 1):.3g} each (Bonferroni)")
        return head + "\n" + "\n".join(str(c) for c in self.checks)


# ------------------------------------------------------------------------------- helpers
def _fmt_call(tp, dp, x, out=None, rng_note="") -> str:
    with np.printoptions(precision=6, linewidth=100, suppress=False):
        s = (f"target_probs = {np.array2string(np.asarray(tp), separator=', ')}\n"
             f"draft_probs  = {np.array2string(np.asarray(dp), separator=', ')}\n"
             f"draft_tokens = {np.asarray(x).tolist()}")
    if out is not None:
        s += f"\noutput       = {out}"
    if rng_note:
        s += f"\n{rng_note}"
    return s


def _name(verify) -> str:
    return getattr(verify, "__name__", None) or type(verify).__name__


class _Runner:
    """Calls the user's verifier (per round or batched) and collects padded outputs."""

    def __init__(self, verify, batched):
        self.verify = verify
        self.batched = batched

    def run(self, tp, dp, x, rng):
        """Return ``(out [n,k+1] int64 padded -1, lengths [n], format_bad [n], error)``.

        ``error`` is ``(row, message, traceback)`` if the verifier raised (outputs after it are
        missing: ``lengths`` 0)."""
        n, k = x.shape
        out = np.full((n, k + 1), PAD, dtype=np.int64)
        lengths = np.zeros(n, dtype=np.int64)
        bad = np.zeros(n, dtype=bool)
        notes = {}
        if self.batched:
            try:
                res = self.verify.verify_batch(tp, dp, x, rng)
            except Exception as exc:  # noqa: BLE001 - any failure of the user's code is a finding
                return out, lengths, bad, (0, repr(exc), traceback.format_exc(limit=3)), notes
            res = np.asarray(res)
            if res.shape != (n, k + 1) or res.dtype.kind not in "iu":
                bad[:] = True
                notes[0] = f"verify_batch returned {res.dtype} {res.shape}, expected int ({n}, {k + 1})"
                return out, lengths, bad, None, notes
            res = res.astype(np.int64)
            is_pad = res == PAD
            lengths = np.where(is_pad.any(1), np.argmax(is_pad, axis=1), k + 1)
            tail_ok = np.all(is_pad | (np.arange(k + 1)[None, :] < lengths[:, None]), axis=1)
            bad = (lengths < 1) | ~tail_ok
            for i in np.flatnonzero(bad)[:1]:
                notes[int(i)] = f"row {res[i].tolist()}: padding must follow at least one token, contiguously"
            out = np.where(bad[:, None], PAD, res)
            lengths = np.where(bad, 0, lengths)
            return out, lengths, bad, None, notes
        verify = self.verify
        k1 = k + 1
        for i in range(n):
            try:
                o = verify(tp[i], dp[i], x[i], rng)
            except Exception as exc:  # noqa: BLE001
                return out, lengths, bad, (i, repr(exc), traceback.format_exc(limit=3)), notes
            o = np.asarray(o)
            m = o.shape[0] if o.ndim == 1 else -1
            if m < 1 or m > k1 or o.dtype.kind not in "iu":
                bad[i] = True
                if len(notes) < 1:
                    notes[i] = f"returned {o.dtype} array of shape {o.shape}: {o.tolist()}"
                continue
            out[i, :m] = o
            lengths[i] = m
        return out, lengths, bad, None, notes


def _content_violations(out, lengths, x, V):
    """Rows (valid format so far) with tokens out of range or a prefix differing from the drafts."""
    n, k1 = out.shape
    pos = np.arange(k1)[None, :]
    live = pos < lengths[:, None]
    out_of_range = np.any(live & ((out < 0) | (out >= V)), axis=1)
    pref = pos < (lengths[:, None] - 1)
    xx = np.concatenate([x, np.zeros((n, 1), np.int64)], axis=1)
    wrong_prefix = np.any(pref & (out != xx), axis=1)
    return out_of_range, wrong_prefix


# ------------------------------------------------------------------------------ the kit
def _plan(vocab_sizes, gammas, families, seed):
    fams = list(families)
    n_inst = max(len(fams), len(vocab_sizes), len(gammas))
    ss = np.random.SeedSequence(seed)
    rngs = ss.spawn(n_inst + 1)
    plan = []
    vit, git = cycle(vocab_sizes), cycle(gammas)
    fit = cycle(fams)
    for i in range(n_inst):
        fam = next(fit)
        V, g = next(vit), next(git)
        if FAMILIES[fam][2]:
            g = max(gammas)
        plan.append(make_instance(fam, V, g, rngs[i]))
    return plan, rngs[-1]


def _n_tests(inst: Instance, efficiency: bool) -> int:
    n = 1 + inst.k + 1                       # first token, later positions, sequence
    if efficiency:
        n += 1 + (1 if inst.k >= 2 else 0)
    return n


def check_verifier(verify, *, vocab_sizes=(3, 5), gammas=(1, 3), n_samples: int = 20_000, seed=0,
                   families=None, alpha: float = 1e-4, efficiency: bool = True, batched=None,
                   instances=None, progress=None) -> Report:
    r"""Run the conformance kit on a speculative verifier and return a :class:`Report`.

    Parameters
    ----------
    verify : callable
        ``verify(target_probs [k+1, V], draft_probs [k, V], draft_tokens [k], rng) -> emitted``
        (see :mod:`spectheory.testing.reference`), or an object with a batched
        ``verify_batch`` method (:func:`~spectheory.testing.as_batched`, the torch adapter).
    vocab_sizes, gammas : sequences of int
        Vocabulary sizes and draft lengths ``k`` spread over the instance families (every value
        is used; families that need several positions use ``max(gammas)``). Small vocabularies
        give the joint-law tests their power.
    n_samples : int
        Rounds per instance (default 20,000; the verifier is called ``n_samples`` times per
        instance, about ``10 * n_samples`` times in all).
    seed : int
        Seeds everything (instances, drafts, the verifier's ``rng``); the report is reproducible.
    families : sequence of str, optional
        Subset of :data:`spectheory.testing.instances.FAMILIES` (default: all).
    alpha : float
        Probability that a correct verifier fails the kit (Bonferroni split over the tests).
    efficiency : bool
        Run the efficiency checks (acceptance rate and mean accepted count against the optimum).
    batched : bool, optional
        Force (True) or forbid (False) the batched call; default: batched iff ``verify`` has
        ``verify_batch``.
    instances : sequence of Instance, optional
        Use these instances instead of the families.
    progress : bool, optional
        Show a progress bar (default: only on a terminal).

    Returns
    -------
    Report

    Examples
    --------
    >>> from spectheory.testing import check_verifier, reference_verify
    >>> report = check_verifier(reference_verify, n_samples=1000, seed=0)
    >>> report.passed, report.failed
    (True, [])
    """
    from tqdm.auto import tqdm

    vocab_sizes = tuple(check_int(v, "vocab_sizes", 2) for v in np.atleast_1d(vocab_sizes))
    gammas = tuple(check_int(g, "gammas", 1) for g in np.atleast_1d(gammas))
    if not vocab_sizes or not gammas:
        raise ValueError("vocab_sizes, gammas: need at least one value each")
    n_samples = check_int(n_samples, "n_samples", 1)
    alpha = float(check_prob(alpha, "alpha", open_low=True, open_high=True))
    if not callable(verify) and not hasattr(verify, "verify_batch"):
        raise ValueError("verify: must be callable or have a verify_batch method")
    if batched is None:
        batched = hasattr(verify, "verify_batch")
    if batched and not hasattr(verify, "verify_batch"):
        raise ValueError("verify: batched=True needs an object with verify_batch (see as_batched)")
    fams = list(FAMILIES) if families is None else list(families)
    for f in fams:
        if f not in FAMILIES:
            raise ValueError(f"families: unknown {f!r}; choose from {sorted(FAMILIES)}")
    if instances is None:
        insts, base = _plan(vocab_sizes, gammas, fams, seed)
    else:
        insts = list(instances)
        if not insts or not all(isinstance(i, Instance) for i in insts):
            raise ValueError("instances: expected a non-empty sequence of Instance")
        base = np.random.SeedSequence(seed)
    M = sum(_n_tests(i, efficiency) for i in insts)
    a_i = alpha / M
    runner = _Runner(verify, batched)
    found = {name: [] for name in CHECKS}
    seeds = base.spawn(len(insts))

    for inst, ss in tqdm(list(zip(insts, seeds)), desc="check_verifier",
                         disable=None if progress is None else not progress, leave=False):
        _check_instance(inst, ss, runner, n_samples, a_i, efficiency, found)

    checks = []
    for name, (desc, kind) in CHECKS.items():
        if kind == "efficiency" and not efficiency:
            continue
        checks.append(_summarise(name, desc, kind, found[name], a_i, M, alpha))
    config = {"vocab_sizes": list(vocab_sizes), "gammas": list(gammas), "n_samples": n_samples,
              "seed": seed if np.isscalar(seed) else str(seed), "families": fams,
              "n_instances": len(insts), "instances": [i.name for i in insts], "batched": bool(batched)}
    return Report(_name(verify), checks, config, M, alpha)


def _check_instance(inst: Instance, ss, runner: _Runner, n: int, a_i: float, efficiency: bool, found):
    V, k = inst.vocab_size, inst.k
    size = V * (k + 1)
    r_draft, r_verify, r_complete, r_edge = [np.random.default_rng(s) for s in ss.spawn(4)]
    tp, dp, x = inst.sample_drafts(n, r_draft)
    out, lengths, bad, err, notes = runner.run(tp, dp, x, r_verify)

    def fail(check, summary, example):
        found[check].append(Finding(inst.name, False, summary=summary, example=example, size=size))

    # ---- exact checks on the sampled rounds
    if err is not None:
        i, msg, tb = err
        fail("runs_without_error", f"raised {msg}", f"instance {inst.name}\n" + _fmt_call(tp[i], dp[i], x[i])
             + f"\n{tb.strip().splitlines()[-1]}")
    else:
        found["runs_without_error"].append(Finding(inst.name, True, size=size))
    oor, wp = _content_violations(out, lengths, x, V)
    fmt_bad = bad | oor | wp
    if fmt_bad.any():
        i = int(np.flatnonzero(fmt_bad)[0])
        why = notes.get(i) or ("token out of range [0, V)" if oor[i] else
                               "emitted prefix differs from the draft tokens (must be draft_tokens[:n] + one token)")
        fail("output_format", f"{int(fmt_bad.sum())} of {n} rounds malformed: {why}",
             f"instance {inst.name}\n" + _fmt_call(tp[i], dp[i], x[i], out[i][: max(lengths[i], 1)].tolist()))
    else:
        found["output_format"].append(Finding(inst.name, True, size=size))
    valid = ~fmt_bad & (lengths > 0)
    if err is not None:
        valid[err[0]:] = False
    zero = inst.emitted_target_prob_zero(np.where(valid[:, None], out, 0), np.where(valid, lengths, 0))
    # ---- boundary uniforms (u = 0 and u = 1 - 2^-53) and determinism, on fresh draft paths
    tpb, dpb, xb = inst.sample_drafts(N_BOUNDARY, r_edge)
    edge_problem = None
    for which in ("low", "high"):
        ob, lb, badb, errb, notesb = _boundary_run(runner, tpb, dpb, xb, which)
        if errb is not None:
            i, msg, tb = errb
            edge_problem = ("runs_without_error", f"raised {msg} with uniforms forced to "
                            f"{'0' if which == 'low' else '1 - 2**-53'}",
                            f"instance {inst.name}\n" + _fmt_call(tpb[i], dpb[i], xb[i],
                                                                  rng_note=f"rng = spectheory.testing.constant_uniform_rng({which!r})"))
            break
        oorb, wpb = _content_violations(ob, lb, xb, V)
        fb = badb | oorb | wpb
        if fb.any():
            i = int(np.flatnonzero(fb)[0])
            edge_problem = ("output_format", f"malformed output with uniforms forced to {which}",
                            f"instance {inst.name}\n" + _fmt_call(tpb[i], dpb[i], xb[i], ob[i][: max(lb[i], 1)].tolist(),
                                                                  rng_note=f"rng = spectheory.testing.constant_uniform_rng({which!r})"))
            break
        zb = inst.emitted_target_prob_zero(ob, lb)
        if zb.any():
            i = int(np.flatnonzero(zb)[0])
            edge_problem = ("zero_probability", f"emitted a token of target probability 0 with uniforms forced to "
                            f"{'0' if which == 'low' else '1 - 2**-53'}",
                            f"instance {inst.name}\n" + _fmt_call(tpb[i], dpb[i], xb[i], ob[i][: lb[i]].tolist(),
                                                                  rng_note=f"rng = spectheory.testing.constant_uniform_rng({which!r})"))
            break
    if zero.any():
        i = int(np.flatnonzero(zero)[0])
        fail("zero_probability", f"{int(zero.sum())} of {n} rounds emitted a token of target probability 0",
             f"instance {inst.name}\n" + _fmt_call(tp[i], dp[i], x[i], out[i][: lengths[i]].tolist()))
    elif edge_problem is None or edge_problem[0] != "zero_probability":
        found["zero_probability"].append(Finding(inst.name, True, size=size))
    if edge_problem is not None:
        fail(*edge_problem)
    det = _determinism(runner, tpb[:N_DETERMINISM], dpb[:N_DETERMINISM], xb[:N_DETERMINISM], ss)
    if det is None:
        found["determinism"].append(Finding(inst.name, True, size=size))
    else:
        fail("determinism", det[0], f"instance {inst.name}\n" + det[1])

    # ---- statistical checks on valid rounds
    if err is not None or valid.sum() == 0:
        return
    o, L = out[valid], lengths[valid]
    nv = int(valid.sum())
    comp = inst.complete(o, L, r_complete)
    pos_laws = inst.position_laws()
    for j in range(k + 1):
        counts = np.bincount(comp[:, j], minlength=V)
        res = chi2_test(counts, pos_laws[j], a_i)
        name = "first_token_law" if j == 0 else "position_laws"
        ex = "" if res.passed else (f"instance {inst.name}, position {j}\n"
                                    + _cells(counts, pos_laws[j]) + "\n" + inst.describe())
        found[name].append(Finding(f"{inst.name} pos {j}" if j else inst.name, res.passed, res.statistic,
                                   res.threshold, res.p_value, res.summary, ex, size))
    Ls = k + 1
    while Ls > 1 and V ** Ls > MAX_SEQUENCE_CELLS:
        Ls -= 1
    idx = np.zeros(nv, dtype=np.int64)
    for j in range(Ls):
        idx = idx * V + comp[:, j]
    law = inst.sequence_law(Ls).ravel()
    counts = np.bincount(idx, minlength=law.size)
    res = chi2_test(counts, law, a_i)
    ex = "" if res.passed else (f"instance {inst.name}, first {Ls} tokens\n" + _cells(counts, law, V, Ls)
                                + "\n" + inst.describe())
    found["sequence_law"].append(Finding(inst.name, res.passed, res.statistic, res.threshold, res.p_value,
                                         res.summary + ("" if Ls == k + 1 else f" (first {Ls} positions)"), ex, size))
    if not efficiency:
        return
    beta = inst.first_acceptance()
    res = binomial_test(int(np.sum(L >= 2)), nv, beta, a_i)
    ex = "" if res.passed else f"instance {inst.name}\n" + inst.describe()
    found["acceptance_rate"].append(Finding(inst.name, res.passed, res.statistic, res.threshold, res.p_value,
                                            res.summary, ex, size))
    if k >= 2:
        law_n = inst.accepted_count_law()
        mu = float(np.arange(k + 1) @ law_n)
        var = float(np.arange(k + 1) ** 2 @ law_n - mu ** 2)
        res = bernstein_lower_test(float(np.mean(L - 1)), nv, mu, max(var, 0.0), k, a_i)
        ex = "" if res.passed else (f"instance {inst.name}\naccepted-count histogram observed "
                                    f"{np.bincount(L - 1, minlength=k + 1).tolist()}, optimal law "
                                    f"{np.round(law_n, 5).tolist()}\n" + inst.describe())
        found["mean_accepted"].append(Finding(inst.name, res.passed, res.statistic, res.threshold, res.p_value,
                                              res.summary, ex, size))


def _cells(counts, probs, V=None, L=1, top=6) -> str:
    n = counts.sum()
    exp = n * probs
    score = np.where(exp > 0, (counts - exp) ** 2 / np.maximum(exp, 1e-300), np.where(counts > 0, np.inf, 0))
    worst = np.argsort(-score)[:top]
    lines = ["most deviating cells (observed vs expected):"]
    for c in worst:
        lab = c if L == 1 else tuple(int(v) for v in np.unravel_index(c, (V,) * L))
        lines.append(f"  {lab}: {int(counts[c])} vs {exp[c]:.1f}")
    return "\n".join(lines)


def _boundary_run(runner, tp, dp, x, which):
    if runner.batched:
        return runner.run(tp, dp, x, constant_uniform_rng(which))
    n = x.shape[0]
    outs = []
    for i in range(n):          # a fresh forced stream for each call
        outs.append(runner.run(tp[i:i + 1], dp[i:i + 1], x[i:i + 1], constant_uniform_rng(which)))
    out = np.concatenate([o[0] for o in outs])
    lengths = np.concatenate([o[1] for o in outs])
    bad = np.concatenate([o[2] for o in outs])
    err = next(((i, *o[3][1:]) for i, o in enumerate(outs) if o[3] is not None), None)
    notes = {i: v for i, o in enumerate(outs) for v in o[4].values()}
    return out, lengths, bad, err, notes


def _determinism(runner, tp, dp, x, ss):
    s = int(ss.generate_state(1)[0])
    try:
        a = runner.run(tp, dp, x, np.random.default_rng(s))
        b = runner.run(tp, dp, x, np.random.default_rng(s))
    except Exception:  # noqa: BLE001 - reported by the other checks
        return None
    if a[3] is not None or b[3] is not None:
        return None
    diff = np.flatnonzero(np.any(a[0] != b[0], axis=1))
    if diff.size == 0:
        return None
    i = int(diff[0])
    mode = "verify_batch on these rows" if runner.batched else "verify"
    return (f"{diff.size} of {x.shape[0]} rounds differ between two runs with the same seed",
            _fmt_call(tp[i], dp[i], x[i], f"{a[0][i].tolist()} then {b[0][i].tolist()}",
                      rng_note=f"{mode} called twice with rng = numpy.random.default_rng({s})"
                      + (" (rounds called in sequence)" if not runner.batched else "")))


def _summarise(name, desc, kind, findings, a_i, M, alpha) -> CheckResult:
    fails = [f for f in findings if not f.passed]
    passed = not fails
    minimal = min(fails, key=lambda f: f.size) if fails else None
    if kind == "exact":
        stat = (f"{len(fails)} of {len(findings)} instances violate it; e.g. {minimal.summary}" if fails
                else f"0 violations on {len(findings)} instances")
        thr = "no violation allowed"
    else:
        ps = [f for f in findings if np.isfinite(f.p_value)]
        if not findings:
            stat = "not run (the verifier raised or returned nothing usable)"
            passed = passed and True
        else:
            if minimal is not None:
                stat = f"{len(fails)} of {len(findings)} tests fail; smallest failing {minimal.instance}: {minimal.summary}"
            else:
                worst = min(ps, key=lambda f: f.p_value)
                stat = f"0 of {len(findings)} tests fail; smallest p-value on {worst.instance}: {worst.summary}"
        thr = f"p < {a_i:.3g} fails (alpha {alpha:g} / {M} tests, Bonferroni)"
    return CheckResult(name, desc, kind, passed, stat, thr, minimal.example if minimal else None, findings)


def assert_verifier_lossless(verify, **kwargs) -> Report:
    """Run :func:`check_verifier` and raise ``AssertionError`` (with the report) if any check fails.

    Keyword arguments are passed to :func:`check_verifier` (``efficiency=False`` tests
    losslessness and robustness only). Returns the report when everything passes.

    Examples
    --------
    >>> from spectheory.testing import assert_verifier_lossless, reference_verify
    >>> _ = assert_verifier_lossless(reference_verify, n_samples=1000)
    """
    report = check_verifier(verify, **kwargs)
    if not report.passed:
        raise AssertionError("\n" + str(report))
    return report
