r"""One check per engine, each a plain function ``check(obj)`` on a rule or a round.

``obj`` is anything :func:`~spectheory.testing.parametrize_with_checks` takes: a rule (a
:class:`~spectheory.verifiers.Verifier` or a registered name; a single-path rule is played as
``PathRound(2, rule)``, a tree verifier as a :class:`~spectheory.trees.TreeRound` on the tree
``[2, 1]``) or a round (a :class:`~spectheory.rounds.Round` or a shorthand
:func:`~spectheory.kinds.as_round` takes). Each check raises ``AssertionError`` saying what
disagreed; all draw from fixed seeds (``rng`` arguments, never the global state) and run in a
few seconds:

- :func:`check_exact_vs_monte_carlo` -- ``chain.protocol(T, round)`` against ``st.simulate``
  (2000 runs) on two small random chains: every counter within :data:`N_SE` standard errors;
- :func:`check_exact_vs_enumeration` -- ``chain.protocol`` against the rule's round law played
  round after round in exact rationals (:mod:`spectheory.testing.protocol_enumeration`), to
  ``1e-10``, on two tiny chains, ``T = 3``, with and without the bonus token;
- :func:`check_decoder_law` -- :func:`spectheory.decoder.generate` on first-order toy models
  (:class:`~spectheory.decoder.vocab.TokenTableModel`): a pooled chi-square of the first two
  tokens of 1000 rows against their exact law (the target's for a lossless rule, the rule's
  generation law for a lossy one), p-value above :data:`P_MIN`, about 5 SE;
- :func:`check_kit` -- :func:`spectheory.testing.check_round`: a lossless rule passes the law
  and robustness checks (efficiency, how much it accepts, is a property, not a verdict); a
  declared-lossy rule (``lossless = False``) is reported lossy, with its exact loss when it has a
  round law, or (a kit that does not read ``lossless`` yet) is flagged.

Which of them apply to an object is decided by :mod:`spectheory.testing.checks_by_tags`.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

import numpy as np

from ..chain import DecodingChain
from ..kinds.normalize import as_round
from ..rounds import Round
from ..verifiers import Verifier, get_verifier
from .protocol_enumeration import COUNTERS, enumerate_protocol

__all__ = [
    "N_SE",
    "P_MIN",
    "checked_round",
    "rule_of",
    "round_law_of",
    "path_gamma",
    "torch_available",
    "check_exact_vs_monte_carlo",
    "check_exact_vs_enumeration",
    "check_decoder_law",
    "check_kit",
]

#: Monte Carlo tolerance: ``|mean - exact| <= N_SE * SE`` (a false failure ~ 6e-7 per counter).
N_SE = 5.0
#: Chi-square p-value a sampler must exceed (about 5 SE).
P_MIN = 1e-6
#: Rounds per instance of the kit check (:func:`check_kit`): the path and the tree kit alike.
KIT_SAMPLES = 1000
#: The draft length a single-path rule is played with, and the tree a tree verifier checks.
GAMMA, TREE_BRANCHING = 2, (2, 1)


# ------------------------------------------------------------------ what an object is
def checked_round(obj: Any) -> Round:
    """The round the checks play: ``PathRound(2, rule)`` for a single-path rule, a
    ``TreeRound`` on the tree ``[2, 1]`` for a tree verifier, else ``as_round(obj)``."""
    if isinstance(obj, (str, Verifier)):
        v = get_verifier(obj)
        if v.accepts_paths:
            return as_round(GAMMA, verifier=v)
        from ..trees import DraftTree

        return as_round(DraftTree.from_branching(list(TREE_BRANCHING)), verifier=v)
    return as_round(obj)


def rule_of(rnd: Round) -> Verifier | None:
    """The verifier that checks ``rnd`` (its ``verifier``, else its registered
    ``verifier_name``; ``None`` when neither resolves)."""
    v = getattr(rnd, "verifier", None)
    if isinstance(v, Verifier):
        return v
    try:
        return get_verifier(rnd.verifier_name)
    except (ValueError, NotImplementedError):
        return None


def round_law_of(v: Verifier | None) -> Any:
    """``round_law(target_fn, draft_fn, V, k, prefix)`` of a rule, or ``None`` without one
    (:meth:`Verifier.round_law`, :attr:`Verifier.has_round_law`)."""
    if v is None or not v.has_round_law:
        return None
    return v.round_law


def path_gamma(rnd: Round) -> int | None:
    """The draft length of a single-path round (a fixed ``gamma`` checked by a single-path
    rule), else ``None``: the round laws describe such rounds only."""
    v, gamma = rule_of(rnd), getattr(rnd, "gamma", None)
    if v is None or not v.accepts_paths or v.accepts_trees or not isinstance(gamma, int):
        return None
    return gamma if rnd.max_depth == gamma else None


def is_lossless(rnd: Round) -> bool:
    """Whether the round's verifier declares its output follows the target (default True)."""
    v = rule_of(rnd)
    return True if v is None else bool(v.lossless)


def torch_available() -> bool:
    """Whether torch can be imported (the decoder's check needs it)."""
    return find_spec("torch") is not None


# ------------------------------------------------------------------ exact vs Monte Carlo
def _mc_chains() -> list[tuple[str, DecodingChain]]:
    return [
        ("random V=3", DecodingChain.random(3, rng=101)),
        ("random V=4, T=6 kernels", DecodingChain.random(4, horizon=6, similarity=0.5, rng=102)),
    ]


def check_exact_vs_monte_carlo(obj: Any, horizon: int = 4, n_runs: int = 2000) -> None:
    """``chain.protocol(T, round)`` and ``st.simulate(chain, T, round, n_runs)`` agree: each of
    target calls, rejections, draft tokens and accepted drafts within :data:`N_SE` standard
    errors (plus ``1e-9``), on two small random chains (seeds fixed)."""
    from ..montecarlo.simulate import simulate

    rnd = checked_round(obj)
    for i, (label, chain) in enumerate(_mc_chains()):
        exact = chain.protocol(horizon, rnd)
        sim = simulate(chain, horizon, rnd, n_runs, rng=1000 + i)
        for name in COUNTERS:
            value = float(getattr(exact, name))
            mean, se = sim.mean_se(name)
            z = (mean - value) / se if se > 0 else float("inf")
            assert abs(mean - value) <= N_SE * se + 1e-9, (
                f"{rnd.name} on {label}, T={horizon}: {name} exact {value:.6f} vs Monte Carlo "
                f"{mean:.6f} +- {se:.6f} ({z:+.1f} SE, {n_runs} runs, seed {1000 + i})"
            )


# ------------------------------------------------------------------ exact vs enumeration
def _tiny_chains() -> list[tuple[str, DecodingChain]]:
    return [
        ("random V=3", DecodingChain.random(3, rng=201)),
        ("random V=2, 3 states, T=4 kernels", DecodingChain.random(2, 3, horizon=4, similarity=0.3, rng=202)),
    ]


def check_exact_vs_enumeration(obj: Any, horizon: int = 3) -> None:
    """``chain.protocol(T, round)`` equals the rule's round law played round by round in
    exact rationals (:func:`~spectheory.testing.protocol_enumeration.enumerate_protocol`) to
    ``1e-10``, on two tiny chains, ``T = 3``, bonus on and off. A :attr:`~Verifier.multi_call`
    rule's target calls come from its :meth:`~Verifier.round_stats`."""
    rnd = checked_round(obj)
    v, gamma, law = rule_of(rnd), path_gamma(rnd), round_law_of(rule_of(rnd))
    assert v is not None and gamma is not None and law is not None, (
        f"{rnd.name}: the enumeration needs a single-path round whose rule has a round law"
    )
    calls = (lambda *a: v.round_stats(*a)["target_calls"]) if v.multi_call else None
    for label, chain in _tiny_chains():
        for bonus in (True, False):
            ref = enumerate_protocol(chain, horizon, gamma, law, bonus, round_calls=calls)
            exact = chain.protocol(horizon, rnd, bonus=bonus)
            for name in COUNTERS:
                value = float(getattr(exact, name))
                assert abs(value - float(ref[name])) <= 1e-10, (
                    f"{rnd.name} on {label}, T={horizon}, bonus={bonus}: {name} exact {value!r} vs "
                    f"enumeration of the round law {float(ref[name])!r} (= {ref[name]})"
                )


# ------------------------------------------------------------------ the decoder's law
def _toy_laws() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(301)
    return rng.dirichlet(np.ones(3), 3), rng.dirichlet(np.full(3, 0.7), 3)


def decoder_law(rnd: Round, length: int = 2) -> dict[tuple[int, ...], Any]:
    """The exact law of the first ``length`` new tokens after the prompt ``[0]`` on the toy
    models of :func:`check_decoder_law`: the target's law for a lossless round, else the
    generation law of its rule's rounds (``ValueError`` for a lossy round without one)."""
    from ..verifiers.round_laws import generation_law, target_law

    P, Q = _toy_laws()

    def t(c: tuple[int, ...]) -> list[float]:
        return list(P[((0,) + c)[-1]])

    def d(c: tuple[int, ...]) -> list[float]:
        return list(Q[((0,) + c)[-1]])

    if is_lossless(rnd):
        return target_law(t, 3, length)
    law, gamma = round_law_of(rule_of(rnd)), path_gamma(rnd)
    if law is None or gamma is None:
        raise ValueError(f"{rnd.name}: a lossy round's decoder law needs a single-path rule with a round law")
    return generation_law(lambda c, k: law(t, d, 3, k, c), gamma, length, length)


def check_decoder_law(obj: Any, n_rows: int = 1000, seed: int = 7) -> None:
    """:func:`spectheory.decoder.generate` follows the exact law of the first two tokens
    (:func:`decoder_law`) on first-order toy models, ``V = 3``: pooled chi-square p-value above
    :data:`P_MIN` and no token of probability 0."""
    import torch

    from ..decoder import generate
    from ..decoder.vocab import TokenTableModel
    from ..montecarlo import pooled_chisquare

    rnd = checked_round(obj)
    P, Q = _toy_laws()
    target, draft = (TokenTableModel(torch.log(torch.as_tensor(m)), range(3)) for m in (P, Q))
    res = generate(target, draft, [[0]] * n_rows, 2, rnd, seed=seed)
    X = np.array([np.asarray(r)[:2] for r in res.tokens])
    cells = np.zeros((3, 3))
    for z, w in decoder_law(rnd).items():
        cells[z] = float(w)
    chi = pooled_chisquare(X, cells)
    assert chi["impossible_samples"] == 0 and chi["pvalue"] > P_MIN, (
        f"{rnd.name}: the decoder's first two tokens do not follow the "
        f"{'target' if is_lossless(rnd) else 'rule'}'s exact law: chi-square p-value "
        f"{chi['pvalue']:.2e}, {chi['impossible_samples']} impossible samples ({n_rows} rows)"
    )


# ------------------------------------------------------------------ the kit
def _run_kit(rnd: Round) -> Any:
    from .rounds import check_round

    # the law only (no efficiency optimum); every kit entry takes rng=
    return check_round(rnd, n_samples=KIT_SAMPLES, rng=0, efficiency=False)


def check_kit(obj: Any) -> None:
    """:func:`spectheory.testing.check_round` on the round: a lossless rule passes the law and
    robustness checks (``lossless_passed``); a declared-lossy rule is reported lossy (its ``loss`` check passes, with the exact TV when
    the rule has a round law) or, by a kit that does not read ``lossless``, at least flagged."""
    rnd = checked_round(obj)
    report = _run_kit(rnd)
    if is_lossless(rnd):  # the law and robustness checks; efficiency is a property, not conformance
        passed = getattr(report, "lossless_passed", report.passed)
        assert passed, f"{rnd.name}: the conformance kit fails a rule declared lossless:\n{report}"
        return
    checks = {c.name: c for c in getattr(report, "checks", ())}
    if getattr(report, "lossy", False):  # a tree report: the loss measured per instance
        assert report.passed, f"{rnd.name}: declared lossy, and the kit fails another check:\n{report}"
        return
    if "loss" not in checks:
        assert not report.passed, f"{rnd.name}: declared lossy, yet the kit passes it as lossless:\n{report}"
        return
    loss = checks["loss"]
    assert loss.passed, f"{rnd.name}: the kit's measured loss disagrees with the rule's:\n{report}"
    if round_law_of(rule_of(rnd)) is not None:
        assert "exact TV" in (loss.note or ""), f"{rnd.name}: the kit reports no exact loss:\n{report}"
