r"""The conformance kit: :func:`check_verifier`, :func:`assert_verifier_lossless`, :func:`assert_verifier_optimal`.

The kit is the *caller* of the verifier: for each test instance (a tiny tree of target and
draft laws, :mod:`spectheory.testing.instances`) it draws the draft tokens itself from the
draft laws, calls the verifier, and compares what comes out with what speculative sampling
must produce (p = target, q = draft):

============================  ==============================================================  ===========
check                         what it tests                                                    kind
============================  ==============================================================  ===========
``runs_without_error``        no exception on any instance (edge cases included)              exact
``output_format``             1-d ints in ``[0, V)``, length ``1..k+1`` (``..k`` with the     exact
                              bonus off), prefix = drafts, nothing after a stop token
``zero_probability``          never emits a token of target probability 0                     exact
``forced_uniforms``           the same with every uniform forced to 0, and to the largest     exact
                              value below 1 (numpy ``rng`` and, routed, torch's draws)
``determinism``               the same seed gives the same output                             exact
``uncontrolled_randomness``   no draw outside the kit's rng and routing (numpy's / Python's   exact
                              global state; torch's global generator: a note only)
``reseeding``                 no source reseeded twice with the same seed in one run          exact
``first_token_law``           law of the first emitted token = ``p_0``                        chi-square
``position_laws``             law of each later position = target marginal                    chi-square
``sequence_law``              joint law of the emitted tokens, completed to ``k+1`` by the     chi-square
                              target, = :math:`\prod_j p_j(y_j|y_{j-1})`
``above_optimum``             E[accepted drafts] not above block verification (the lossless   Bernstein
                              optimum of single-path rules; not with a stop token)
``acceptance_rate``           P(first draft accepted) = :math:`\sum_x \min(p_0, q_0)`         exact binomial
``mean_accepted``             E[accepted drafts] not below standard token verification        Bernstein
============================  ==============================================================  ===========

The exact checks cannot fail for a correct verifier. A forced-uniform finding states its
severity (the per-draw probability of the forced event for the dtype drawn, and the rate of
wrong tokens per million emitted it implies); each statistical check states the smallest
effect (TV for the laws) it detects with probability 1/2 at its sample size
(:mod:`spectheory.testing.stat_tests`). Randomness is the kit's everywhere
(:mod:`spectheory.testing.randomness`). The statistical tests share the
kit's false-alarm budget ``alpha`` (default ``1e-4``) by a Bonferroni split: each of the
``M`` tests runs at level ``alpha / M``, so a correct verifier fails a whole kit run with
probability below ``alpha``. The efficiency checks (``kind == "efficiency"``) flag lossless
but wasteful samplers; :func:`assert_verifier_lossless` leaves them out,
:func:`assert_verifier_optimal` includes them. Their ``mean_accepted`` test (Bernstein) takes
token verification's variance, so its level holds for rules whose accepted count is no more
spread than token verification's (true of token verification itself).

**Random streams.** The verifier's numpy ``rng`` comes from the kit. torch samplers draw
from torch instead; whenever torch is imported, the kit routes ``torch.rand``,
``torch.rand_like``, ``Tensor.uniform_``, ``Tensor.exponential_`` and ``torch.multinomial``
through its own stream while it calls the verifier (:mod:`spectheory.testing.torch_random`;
``torch_random=False`` opts out), so the forced-extreme checks reach torch code and runs are
reproducible without any torch seeding.

**Protocols** (``spectheory.testing._checks``): ``bonus=False`` (no bonus token after
``k`` accepted drafts, as vLLM's ``disable_bonus_tokens=True``) and ``stop_token`` (nothing
after an accepted stop token) change what a correct output is, and the efficiency checks
judge each protocol by token verification under it.

**Lossy rules.** A rule that declares ``lossless = False`` (a :class:`~spectheory.verifiers.Verifier`
attribute; any verifier object may set it) is not failed for its loss: the law tests become
notes and the ``loss`` check states by how much (:func:`~spectheory.testing._verdicts.loss_finding`),
with the exact TV when the rule has a round law
(:meth:`~spectheory.verifiers.round_law_rule.RoundLawRule.round_law`, :mod:`spectheory.testing.exact_loss`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._guards import check_int, check_prob
from .._typing import RNGLike
from ._catalog import CHECKS, SAMPLED_ONLY, active_checks  # noqa: F401 - SAMPLED_ONLY: the old path
from ._checks import RoundProtocol, check_instance, n_tests
from ._plan import _instances, _name, _plan, fold, hostile_instances, hostile_verdicts, run_config  # noqa: F401 - _plan: the old path (scripts/update_readme.py)
from ._runner import Runner
from .instances import Instance
from .report import CheckResult, Finding, Report

if TYPE_CHECKING:
    from ..verifiers import Verifier
    from ..verifiers.round_law_rule import RoundLawRule

__all__ = [
    "check_verifier",
    "assert_verifier_lossless",
    "assert_verifier_optimal",
    "Report",
    "CheckResult",
    "Finding",
    "CHECKS",
]


def resolve_verifier(verify: Callable[..., Any] | str | Verifier) -> Callable[..., Any]:
    """A registered verifier name or a Verifier object -> a kit verifier (:func:`from_verifier`); else ``verify``."""
    from ..verifiers.base import Verifier

    if isinstance(verify, (str, Verifier)):
        from .reference import from_verifier

        try:
            return from_verifier(verify)
        except (KeyError, ValueError) as exc:
            raise ValueError(f"verify: {exc}") from None
    return verify


_WORK: Any = None  # what forked workers inherit (set just before the pool starts)


def _one(i):
    runner, insts, seeds, n_samples, a_i, efficiency, protocol = _WORK
    found: dict[str, list[Finding]] = {name: [] for name in CHECKS}
    check_instance(insts[i], seeds[i], runner, n_samples, a_i, efficiency, found, protocol)
    return found, runner.routed


def _run_all(work, jobs, progress):
    """Check every instance (in ``jobs`` forked processes when > 1); merge findings in instance order."""
    global _WORK
    from tqdm.auto import tqdm

    n = len(work[1])
    bar: dict[str, Any] = dict(
        desc="check_verifier", total=n, disable=None if progress is None else not progress, leave=False
    )
    _WORK = work
    try:
        if jobs > 1 and n > 1:
            import multiprocessing as mp

            with mp.get_context("fork").Pool(min(jobs, n)) as pool:
                parts = list(tqdm(pool.imap(_one, range(n)), **bar))
        else:
            parts = [_one(i) for i in tqdm(range(n), **bar)]
    finally:
        _WORK = None
    found = {name: [f for part, _ in parts for f in part[name]] for name in CHECKS}
    return found, any(r for _, r in parts)


def check_verifier(
    verify: Callable[..., Any] | str | Verifier,
    *,
    vocab_sizes: Sequence[int] = (3, 5),
    gammas: Sequence[int] = (1, 3),
    n_samples: int = 20_000,
    rng: RNGLike = 0,
    families: Sequence[str] | None = None,
    alpha: float = 1e-4,
    efficiency: bool = True,
    batched: bool | None = None,
    instances: Sequence[Instance] | None = None,
    progress: bool | None = None,
    bonus: bool | None = None,
    stop_token: int | None = None,
    torch_random: bool | None = None,
    rows_per_call: int | None = None,
    jobs: int = 1,
    greedy: bool | None = None,
    lossy: bool | str | RoundLawRule | None = None,
    sequential: bool | tuple[int, int] = False,
    hostile: bool | Sequence[str] | None = None,
) -> Report:
    r"""Run the conformance kit on a speculative verifier and return a :class:`Report`.

    Parameters
    ----------
    verify : callable, object with ``verify_batch``, or str
        ``verify(target_probs [k+1, V], draft_probs [k, V], draft_tokens [k], rng) -> emitted``
        (see :mod:`spectheory.testing.reference`), an object with a batched ``verify_batch``
        method (:func:`~spectheory.testing.as_batched`, :mod:`spectheory.testing.adapters`), or
        a registered verifier name / Verifier object (:mod:`spectheory.verifiers`).
    vocab_sizes, gammas : sequences of int
        Vocabulary sizes and draft lengths ``k`` spread over the instance families (every value
        is used; families that need several positions use ``max(gammas)``).
    n_samples : int
        Rounds per instance (default 20,000).
    rng : int, sequence of int, SeedSequence, Generator or None
        Seeds everything (instances, drafts, the verifier's ``rng``, routed torch draws):
        anything :func:`numpy.random.default_rng` accepts (default 0: a reproducible run;
        :func:`~spectheory.testing._plan.seed_sequence`).
    families : sequence of str, optional
        Of :data:`~spectheory.testing.instances.ALL_FAMILIES` (default: every one of ``FAMILIES``).
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
    bonus : bool, optional
        Protocol: a bonus token after ``k`` accepted drafts (default: ``verify.bonus`` if set,
        else True).
    stop_token : int, optional
        Protocol: the token after which nothing may be emitted (default: ``verify.stop_token``
        if set, else none). Must lie below every vocabulary size.
    torch_random : bool, optional
        Route torch's global random draws through the kit while the verifier runs (default:
        whenever torch is imported). False opts out.
    rows_per_call : int, optional
        Rows per ``verify_batch`` call (default: all rows of an instance at once).
    jobs : int
        Instances checked in parallel by forked worker processes (POSIX ``fork`` only; the
        report is the same for any ``jobs``). Use it for slow per-round samplers; a verifier
        that keeps state across calls sees only its own process's calls.
    greedy : bool, optional
        Protocol: temperature 0 (default: ``verify.greedy`` if set, else False). The verifier
        gets the same laws and must emit the target's argmax path: ``zero_probability`` checks
        that exactly (against :meth:`~spectheory.testing.Instance.greedy`; any argmax of a tie),
        and ``greedy_acceptance`` that every round accepts the longest draft prefix on that path
        (greedy acceptance is optimal: an output on the argmax path can
        accept no draft past the first mismatch); the law and acceptance tests of sampled decoding are
        not run.
    lossy : bool, str, RoundLawRule or None
        Declare the rule lossy on purpose: the law tests still run, but their failures become
        notes, and ``loss`` states per instance the TV of the output from the target (a Monte
        Carlo estimate with a confidence interval) and the drafts accepted beyond token and
        block verification (:func:`spectheory.testing._verdicts.loss_finding`). ``None`` (the
        default): what the rule declares, ``not verify.lossless`` (a Verifier, a registered
        name, or any object with a ``lossless`` attribute; lossless when it has none). A rule
        with a round law (:meth:`~spectheory.verifiers.round_law_rule.RoundLawRule.round_law`) -- given
        here as an object or a registered name, or ``verify`` itself when it is lossy and has
        one -- adds its exact TV, enumerated in Fractions
        (:func:`~spectheory.testing.exact_loss.exact_output_tv`), and ``loss`` fails where the
        measured interval excludes it (the sampler is not that rule). The exact TV needs the
        bonus on, no stop token and sampled decoding.
    sequential : bool or (int, int)
        Also drive the verifier as an engine does, ``steps`` calls of ``batch`` rows in
        sequence (True: 64 calls of 32 rows), and add the checks of
        :mod:`spectheory.testing.sequential` (independence across calls, serial correlation of
        acceptance, the sequence law across calls on a tiny chain), at their own level
        ``alpha``. Lossless rules, sampled decoding, no stop token.
    hostile : bool or sequence of str, optional
        Also run the hostile-numerics families (:mod:`spectheory.testing.hostile`: masked drafts
        with 0/0 ratios, targets masked to a few tokens, ``-inf`` logits, a NaN from a bad
        kernel, float16 / bfloat16 rows that do not sum to 1, ties, denormals): True for all,
        or their names. Every check runs on them too; ``config["hostile"]`` says which inputs
        broke the sampler and what each requires, the first broken one as a reproducible call.
        Default: ``verify.hostile`` if set, else none.

    Returns
    -------
    Report

    Examples
    --------
    >>> from spectheory.testing import check_verifier, reference_verify
    >>> report = check_verifier(reference_verify, n_samples=300, rng=0)
    >>> report.passed, report.failed
    (True, [])
    >>> check_verifier("block", n_samples=300, rng=0).passed       # a registered Verifier
    True
    >>> report = check_verifier("hsd_listing", n_samples=300, rng=0)  # lossless = False
    >>> report.passed, report.config["protocol"]["lossy"]            # reported with its exact loss
    (True, 'hsd_listing')
    """

    rule = _declared_rule(verify)
    declares_lossy = getattr(verify if rule is None else rule, "lossless", True) is False
    verify = resolve_verifier(verify)
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
    bonus = bool(getattr(verify, "bonus", True) if bonus is None else bonus)
    if stop_token is None:
        stop_token = getattr(verify, "stop_token", None)
    if stop_token is not None:
        stop_token = check_int(stop_token, "stop_token", 0)
    greedy = getattr(verify, "greedy", False) if greedy is None else greedy
    if greedy not in (True, False):
        raise ValueError(f"greedy: expected None, True or False, got {greedy!r}")
    if torch_random not in (None, True, False):
        raise ValueError(f"torch_random: expected None, True or False, got {torch_random!r}")
    if rows_per_call is not None:
        rows_per_call = check_int(rows_per_call, "rows_per_call", 1)
    insts, base = _instances(vocab_sizes, gammas, families, instances, rng)
    n_plain = len(insts)
    insts += hostile_instances(
        getattr(verify, "hostile", False) if hostile is None else hostile, vocab_sizes, gammas, base
    )
    if stop_token is not None and stop_token >= min(i.vocab_size for i in insts):
        raise ValueError(f"stop_token: must lie below every vocabulary size, got {stop_token}")
    M = 0 if greedy else sum(n_tests(i, efficiency, stop_token) for i in insts)
    a_i = alpha / max(M, 1)
    jobs = check_int(jobs, "jobs", 1)
    runner = Runner(verify, batched, torch_random, rows_per_call)
    seeds = base.spawn(len(insts))
    lossy = _lossy_rule(declares_lossy if lossy is None else lossy, rule, bonus, stop_token, bool(greedy))
    protocol = RoundProtocol(bonus, stop_token, bool(greedy), lossy)
    if sequential is not False:
        from .sequential import sizes

        if greedy or lossy or stop_token is not None:
            raise ValueError("sequential: needs a lossless rule, sampled decoding and no stop token")
        steps, batch = sizes(sequential)
    work = (runner, insts, seeds, n_samples, a_i, efficiency, protocol)
    found, routed = _run_all(work, jobs, progress)

    config = run_config(vocab_sizes, gammas, n_samples, rng, families, insts)
    config.update(batched=bool(batched), protocol=protocol.config(), torch_random=routed)
    report = fold(
        verify, active_checks(efficiency, bool(greedy), bool(lossy)), found, a_i, M, alpha, lossy, config
    )
    verdicts = hostile_verdicts(report.checks, insts)  # hostile=, or hostile families named in families=
    if verdicts:
        report.config["hostile"] = verdicts
    if sequential is not False:
        from .sequential import add_sequential, sequential_checks

        checks, seq, _ = sequential_checks(runner, insts[:n_plain], base, steps, batch, alpha, bonus)
        add_sequential(report, checks, seq)
    return report


def _declared_rule(verify: Any) -> Verifier | None:
    """The Verifier behind a registered name or a Verifier object (None for other samplers)."""
    from ..verifiers.base import Verifier, get_verifier

    if isinstance(verify, (str, Verifier)):
        try:
            return get_verifier(verify)
        except ValueError:
            return None  # resolve_verifier names the problem
    return None


def _lossy_rule(
    lossy: Any, rule: Verifier | None, bonus: bool, stop_token: int | None, greedy: bool
) -> bool | RoundLawRule:
    """``lossy`` checked: False, True, or the rule (with a round law) whose exact TV the kit computes.

    ``rule``: the Verifier under test (its own round law serves ``lossy=True``)."""
    from ..verifiers.round_law_rule import RoundLawRule
    from ..verifiers.round_laws import round_rule

    exact_ok = bonus and stop_token is None and not greedy
    if isinstance(lossy, (str, RoundLawRule)):
        try:
            named = round_rule(lossy)
        except ValueError as exc:
            raise ValueError(f"lossy: expected True, False or a rule with a round law: {exc}") from None
        if not exact_ok:
            raise ValueError("lossy: a rule's exact loss needs bonus=True, no stop_token and greedy=False")
        return named
    if lossy not in (True, False):
        raise ValueError(f"lossy: expected None, True, False, a rule or a rule name, got {lossy!r}")
    if lossy and rule is not None and rule.has_round_law and exact_ok:
        return rule
    return bool(lossy)


def assert_verifier_lossless(verify: Callable[..., Any] | str | Verifier, **kwargs: Any) -> Report:
    """Raise ``AssertionError`` (with the report) unless ``verify`` is lossless and robust.

    Runs :func:`check_verifier` without the efficiency checks (a lossless but wasteful
    sampler passes; use :func:`assert_verifier_optimal` for efficiency). Keyword arguments
    are passed on. Returns the report when everything passes.

    Examples
    --------
    >>> from spectheory.testing import assert_verifier_lossless, reference_verify
    >>> _ = assert_verifier_lossless(reference_verify, n_samples=300)
    """
    return _assert_passes(verify, False, kwargs)


def assert_verifier_optimal(verify: Callable[..., Any] | str | Verifier, **kwargs: Any) -> Report:
    """Raise ``AssertionError`` unless ``verify`` is lossless *and* accepts as often as it should.

    Runs every check of :func:`check_verifier`, the efficiency ones included (each protocol
    judged by its own reference: the first draft's optimum ``sum_x min(p_0, q_0)`` and token
    verification's mean accepted count, which a lossless rule may exceed). Keyword arguments
    are passed on.

    Examples
    --------
    >>> from spectheory.testing import assert_verifier_optimal, reference_verify
    >>> from spectheory.testing.gallery import GALLERY
    >>> _ = assert_verifier_optimal(reference_verify, n_samples=300)
    >>> wasteful = GALLERY["wasteful_lossless"][0]  # lossless, accepts half as often as it could
    >>> assert_verifier_optimal(wasteful, n_samples=300)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    AssertionError: acceptance_rate and mean_accepted fail
    """
    return _assert_passes(verify, True, kwargs)


def _assert_passes(verify: Any, efficiency: bool, kwargs: dict[str, Any]) -> Report:
    """:func:`check_verifier` with or without the efficiency checks; its report, or ``AssertionError``."""
    report = check_verifier(verify, **{**kwargs, "efficiency": efficiency})
    if not report.passed:
        raise AssertionError("\n" + str(report))
    return report
