r"""A toy word-level language pair for teaching speculative decoding.

The vocabulary has ten words. Both models are *bigram* models: the law of the next word
depends on the previous word only, so a decoding state is the last word (a first-order
Markov chain, S = V = 10). The **target** is a hand-written table of plausible continuations;
the **draft** is a cheaper guesser, :math:`q(\cdot \mid w) = 0.55\,p(\cdot \mid w) + 0.45\,u`,
with u a fixed "frequent words" law, so it agrees with the target where the target is
flat and over-proposes frequent words where the target is sharp. Acceptance therefore
varies with the context, as it does with real models.

Notation: p = target, q = draft; code says ``target``/``draft``.

One round from state s (Leviathan et al. 2023): the draft proposes
:math:`x_1, \dots, x_\gamma` autoregressively; position i is accepted when a uniform
:math:`u_i < p(x_i)/q(x_i)`; at the first rejection a word is drawn from the residual
:math:`\mathrm{norm}(\max(p - q, 0))` and the round ends; if all are accepted a *bonus* word
is drawn from the target. The random draws (:func:`play_round`) are kept apart from the
rule (:func:`accepts`), so the rule can be tested with hand-picked uniforms.

Theory for a round started in state s, with :math:`M[s, x] = \min(p(x \mid s), q(x \mid s))`
(the probability that x is proposed *and* accepted):
:math:`f_i(s) = P(\text{first } i \text{ proposals accepted}) = (M^i \mathbf 1)(s)`, so

.. math:: E[N \mid s] = \sum_{i=1}^{\gamma} f_i(s), \qquad P(\text{rejection} \mid s) = 1 - f_\gamma(s),

and :math:`f_1(s) = \sum_x \min(p, q) = 1 - \mathrm{TV}` is the per-state acceptance rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law_pair, as_rng, check_int
from .._typing import RNGLike
from ..laws.distributions import acceptance_rate, residual

__all__ = [
    "WORDS",
    "ToyModels",
    "toy_models",
    "accepts",
    "acceptance_ratio",
    "StepRecord",
    "RoundRecord",
    "play_round",
    "expected_accepted",
    "rejection_probability",
]

#: The toy vocabulary (index = token id).
WORDS = ("the", "cat", "dog", "sat", "ran", "on", "mat", "away", "and", ".")

# Hand-written target bigram weights: row = previous word, column = next word (WORDS order).
_TARGET_WEIGHTS = {
    #          the  cat  dog  sat  ran  on  mat  away and  .
    "the": (0, 45, 35, 0, 0, 0, 20, 0, 0, 0),
    "cat": (0, 0, 0, 50, 30, 0, 0, 0, 15, 5),
    "dog": (0, 0, 0, 30, 50, 0, 0, 0, 15, 5),
    "sat": (0, 0, 0, 0, 0, 70, 0, 10, 5, 15),
    "ran": (0, 0, 0, 0, 0, 25, 0, 50, 10, 15),
    "on": (85, 0, 0, 0, 0, 0, 15, 0, 0, 0),
    "mat": (0, 0, 0, 0, 0, 0, 0, 0, 40, 60),
    "away": (0, 0, 0, 0, 0, 0, 0, 0, 35, 65),
    "and": (70, 5, 5, 5, 15, 0, 0, 0, 0, 0),
    ".": (90, 0, 0, 0, 0, 0, 0, 0, 0, 10),
}
# The draft's "frequent words" law: it over-proposes function words.
_FREQUENT = (30, 5, 5, 5, 5, 15, 5, 5, 15, 10)


@dataclass(frozen=True)
class ToyModels:
    """The toy pair: ``target`` and ``draft`` bigram kernels, arrays ``[V, V]`` (rows sum to 1),
    ``words`` (the vocabulary) and ``start`` (the id of the first context word)."""

    words: tuple
    target: np.ndarray
    draft: np.ndarray
    start: int = 0

    @property
    def vocab_size(self) -> int:
        return len(self.words)


def toy_models(draft_weight: float = 0.55) -> ToyModels:
    """Build the toy pair; ``draft = draft_weight * target + (1 - draft_weight) * frequent``.

    Examples
    --------
    >>> from spectheory.teaching import toy_models
    >>> m = toy_models()
    >>> m.words[:3], m.target.shape
    (('the', 'cat', 'dog'), (10, 10))
    """
    if not 0.0 <= draft_weight <= 1.0:
        raise ValueError(f"draft_weight: must lie in [0, 1], got {draft_weight!r}")
    target = np.array([_TARGET_WEIGHTS[w] for w in WORDS], dtype=np.float64)
    target /= target.sum(axis=1, keepdims=True)
    freq = np.asarray(_FREQUENT, dtype=np.float64)
    freq /= freq.sum()
    draft = draft_weight * target + (1.0 - draft_weight) * freq[None, :]
    return ToyModels(WORDS, target, draft, start=0)


def acceptance_ratio(target_prob: float, draft_prob: float) -> float:
    """``p(x)/q(x)`` for a proposed word (``inf`` if q(x) = 0, which never happens for a
    proposed word)."""
    return float("inf") if draft_prob == 0 else float(target_prob) / float(draft_prob)


def accepts(target_prob: float, draft_prob: float, u: float) -> bool:
    """The acceptance rule: accept the proposed word iff ``u < p(x)/q(x)``.

    With u ~ Uniform[0, 1) this accepts with probability :math:`\\min(1, p(x)/q(x))`;
    a word the target forbids (p(x) = 0) is never accepted, even for u = 0.

    >>> accepts(0.2, 0.4, 0.49), accepts(0.2, 0.4, 0.5), accepts(0.0, 0.4, 0.0)
    (True, False, False)
    """
    return bool(u < acceptance_ratio(target_prob, draft_prob))


@dataclass
class StepRecord:
    """One verification step: ``state`` (context word id), ``proposal`` (word id), the two
    laws in that context, the uniform ``u``, the ``ratio`` p/q, ``accepted``, and on rejection
    the ``residual`` law and the word ``emitted`` from it (``None`` when accepted)."""

    state: int
    proposal: int
    target: np.ndarray
    draft: np.ndarray
    u: float
    ratio: float
    accepted: bool
    residual: np.ndarray | None = None
    emitted: int | None = None


@dataclass
class RoundRecord:
    """One round: start ``state``, draft ``proposals``, the ``steps`` checked (stops at the
    first rejection), the ``bonus`` word (``None`` unless all were accepted) with the law it
    was drawn from, and ``emitted`` (all words the round appends)."""

    state: int
    proposals: list
    steps: list = field(default_factory=list)
    bonus: int | None = None
    bonus_law: np.ndarray | None = None
    emitted: list = field(default_factory=list)

    @property
    def n_accepted(self) -> int:
        return int(sum(s.accepted for s in self.steps))

    @property
    def rejected(self) -> bool:
        return any(not s.accepted for s in self.steps)


def play_round(models: ToyModels, state: int, gamma: int, rng: RNGLike) -> RoundRecord:
    """Play one speculative round from context word ``state``; all draws from ``rng``
    (anything :func:`numpy.random.default_rng` accepts).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.teaching import toy_models, play_round
    >>> r = play_round(toy_models(), 0, 3, np.random.default_rng(0))
    >>> len(r.emitted) == r.n_accepted + 1
    True
    """
    gamma = check_int(gamma, "gamma", 1)
    V = models.vocab_size
    state = check_int(state, "state", 0)
    if state >= V:
        raise ValueError(f"state: must be a word id below {V}, got {state}")
    rng = as_rng(rng)
    proposals, s = [], state
    for _ in range(gamma):  # the draft runs ahead on its own words
        x = int(rng.choice(V, p=models.draft[s]))
        proposals.append(x)
        s = x
    record = RoundRecord(state=state, proposals=proposals)
    s = state
    for x in proposals:  # the target checks them left to right
        t_row, d_row = models.target[s], models.draft[s]
        u = float(rng.random())
        ok = accepts(t_row[x], d_row[x], u)
        step = StepRecord(s, x, t_row, d_row, u, acceptance_ratio(t_row[x], d_row[x]), ok)
        record.steps.append(step)
        if not ok:
            step.residual = residual(t_row, d_row)
            step.emitted = int(rng.choice(V, p=step.residual))
            record.emitted.append(step.emitted)
            return record
        record.emitted.append(x)
        s = x
    record.bonus_law = models.target[s]
    record.bonus = int(rng.choice(V, p=record.bonus_law))
    record.emitted.append(record.bonus)
    return record


def _accept_all_probs(target: ArrayLike, draft: ArrayLike, gamma: int) -> np.ndarray:
    """``f[i - 1, s]`` = P(first i proposals accepted | state s), i = 1..gamma."""
    t, d = as_law_pair(target, draft)
    M = np.minimum(t, d)
    f, rows = np.ones(t.shape[0]), []
    for _ in range(gamma):
        f = M @ f
        rows.append(f)
    out = np.array(rows)
    np.testing.assert_allclose(out[0], acceptance_rate(t, d), atol=1e-12)  # f_1 = 1 - TV
    return out


def expected_accepted(models: ToyModels, gamma: int) -> np.ndarray:
    """Exact expected accepted draft words of a round, per start state: shape ``[V]``.

    >>> from spectheory.teaching import toy_models, expected_accepted
    >>> e = expected_accepted(toy_models(), 3)
    >>> bool(((0 <= e) & (e <= 3)).all())
    True
    """
    gamma = check_int(gamma, "gamma", 1)
    return _accept_all_probs(models.target, models.draft, gamma).sum(axis=0)


def rejection_probability(models: ToyModels, gamma: int) -> np.ndarray:
    """Exact probability that a round ends in a rejection, per start state: shape ``[V]``."""
    gamma = check_int(gamma, "gamma", 1)
    return 1.0 - _accept_all_probs(models.target, models.draft, gamma)[-1]
