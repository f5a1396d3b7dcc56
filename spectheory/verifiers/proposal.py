r"""Proposal modes that engines run: point-mass proposals, sample-and-match, argmax drafting.

Notation: p = target, q = draft, at one drafted position; ``x*`` = argmax q (the smallest index
on ties). Each mode is a :class:`~spectheory.verifiers.Verifier` (registered by name), so
``chain.protocol``, :func:`spectheory.simulate` and the conformance kit run it; the closed
forms and proofs are in ``docs/proposal_modes.md``.

=================  ==================  ==========================  ==============================  ========
name               drafting            rule                        P(accept) at one position       lossless
=================  ==================  ==========================  ==============================  ========
``point_mass``     ``x ~ q``           token rule with q := 1_x    :math:`\sum_x q(x) p(x)`        yes
``sample_match``   ``x ~ q``           accept iff ``y ~ p`` is x   :math:`\sum_x q(x) p(x)`        yes
``argmax_onehot``  ``x = x*``          token rule with q := 1_x    :math:`p(x^*)`                  yes
``argmax_soft``    ``x = x*``          token rule with the soft q  :math:`\min(1, p(x^*)/q(x^*))`  no
=================  ==================  ==========================  ==============================  ========

- **Point-mass proposals** (an engine that does not pass the draft's probabilities and treats
  q as one-hot at the drafted token): accept ``x`` with probability ``p(x)``; after a
  rejection emit from ``norm((p - 1_x)_+)``, i.e. ``p`` with ``x`` removed.
- **Sample-and-match** (exact match against a fresh target sample): draw ``y ~ p`` (with the
  position's ``u_accept``, inverse CDF); accept iff ``y == x``; else emit ``y``. Given ``x``
  it has the same law of (accepted, emitted token) as point-mass proposals.
- **Argmax drafting** (greedy drafting, ``drafting = "argmax"``) with one-hot q (the law the
  token was really drawn from, so lossless) or with the soft q of the draft model (the law
  the token was *not* drawn from: biased, except at the contexts of ``docs/proposal_modes.md``
  Proposition 3 -- ``p = 1_{x*}``, ``q = 1_{x*}``, or ``p(x*) = 0`` and ``q`` proportional to
  ``p`` on the support of ``p``).

Examples
--------
>>> import spectheory as st
>>> chain = st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3])   # Sun et al.'s example
>>> [round(chain.protocol(40, 2, verifier=v).accepted / 40, 4) for v in ("token", "point_mass", "argmax_onehot")]
[0.5307, 0.393, 0.3087]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..laws.sampling import normalize_or, sample_categorical
from .base import Verifier, register_verifier
from .stepwise import ratio_step, stepwise_round_law
from .token import token_rule

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from .torch_forms import Verdict

__all__ = [
    "PointMassVerifier",
    "SampleMatchVerifier",
    "ArgmaxDraftingVerifier",
    "POINT_MASS",
    "SAMPLE_MATCH",
    "ARGMAX_SOFT",
    "ARGMAX_ONEHOT",
    "argmax_onehot",
]

LawFn = Callable[[tuple[int, ...]], Sequence[Any]]


def _onehot_step(p: Sequence[Any], q: Sequence[Any], x: int) -> tuple[Any, list[Any], Any]:
    """The ratio test against ``1_x`` (point-mass proposals): accept with ``p(x)``."""
    return ratio_step(p, [1 if v == x else 0 for v in range(len(p))], x)


def _match_step(p: Sequence[Any], q: Sequence[Any], x: int) -> tuple[Any, list[Any], Any]:
    """Sample-and-match: ``y ~ p`` equals ``x`` w.p. ``p(x)``, else ``y`` is emitted (``p`` off ``x``)."""
    return p[x], [p[y] if y != x else 0 for y in range(len(p))], 1 - p[x]


def argmax_onehot(draft: np.ndarray) -> np.ndarray:
    """One-hot rows ``[..., V]`` at each row's argmax (the smallest index on ties).

    Examples
    --------
    >>> from spectheory.verifiers.proposal import argmax_onehot
    >>> argmax_onehot([[0.2, 0.4, 0.4]]).tolist()
    [[0.0, 1.0, 0.0]]
    """
    d = np.asarray(draft, dtype=np.float64)
    return np.eye(d.shape[-1])[np.argmax(d, axis=-1)]


def _cached_masses(chain: ChainLike, masses: Any) -> tuple[Any, Any, bool]:
    """Phase masses ``(acc, rej, False)`` from ``masses(target [S, V], draft [S, V]) -> (acc, rej)``,
    computed once per kernel (once for a homogeneous chain)."""
    cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def get(n: int) -> tuple[np.ndarray, np.ndarray]:
        key = 0 if chain.is_homogeneous else int(n)
        if key not in cache:
            cache[key] = masses(*chain.kernels(n))
        return cache[key]

    return (lambda n, i: get(n)[0]), (lambda n, i: get(n)[1]), False


def _point_mass_rule(t, d, x, k, u_accept, u_final):
    """Token verification with q := one-hot of the drafted token (``d`` is not read)."""
    R, g = x.shape
    rows = np.arange(R)
    tx = np.take_along_axis(t[:, :g], x[..., None], axis=-1)[..., 0]
    ok = (u_accept < tx) & (np.arange(g)[None, :] < k[:, None])
    j = np.cumprod(ok, axis=1).sum(axis=1).astype(np.int64)
    rejected = j < k
    jc = np.minimum(j, g - 1)
    residual = t[rows, jc].copy()
    residual[rows, x[rows, jc]] = 0.0  # (p - 1_x)_+ = p without x
    law = np.where(rejected[:, None], residual, t[rows, k])
    return j, sample_categorical(law, u_final)


class _NoTorch:
    """The real decoder drafts by sampling from the draft model; a rule whose drafting law
    differs (argmax drafting) must not run there under a sampled draft."""

    def torch_rule(self, *args: Any, **kwargs: Any) -> Verdict:
        raise NotImplementedError(
            f"verifier {getattr(self, 'name', '?')!r}: greedy drafting is not a decoder option; "
            "the decoder samples its drafts (use chain.protocol, st.simulate or the kit)"
        )


class PointMassVerifier(Verifier):
    r"""Point-mass proposals: token verification with q taken as one-hot of the drafted token.

    Accept ``x`` with probability ``min(1, p(x)/1) = p(x)``; after a rejection emit from
    ``norm((p - 1_x)_+)``. Lossless; acceptance :math:`\sum_x q(x) p(x) \le \sum_x \min(p, q)`
    (``docs/proposal_modes.md``, Proposition 1).

    Examples
    --------
    >>> from spectheory.verifiers import get_verifier
    >>> pm = get_verifier("point_mass")
    >>> target = [[[0.5, 0.5], [0.5, 0.5]]]; draft = [[[0.9, 0.1]]]
    >>> pm.rule(target, draft, [[0]], [1], [[0.49]], [0.3])   # u < p(0) = 0.5: accepted
    (array([1]), array([0]))
    >>> pm.rule(target, draft, [[0]], [1], [[0.51]], [0.3])   # rejected: emit p without 0
    (array([0]), array([1]))
    """

    name = "point_mass"
    lossless = True

    def _rule(self, t, d, x, k, u_accept, u_final):
        return _point_mass_rule(t, d, x, k, u_accept, u_final)

    def round_law(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        """Exact law of one round (:func:`~spectheory.verifiers.stepwise.stepwise_round_law`, the
        ratio test against ``1_x``)."""
        return stepwise_round_law(_onehot_step, target_fn, draft_fn, vocab_size, gamma, tuple(prefix))

    def phase_masses(self, chain: ChainLike) -> tuple[Any, Any, bool] | None:
        return _cached_masses(chain, lambda t, d: (d * t, t * (1.0 - d)))


class SampleMatchVerifier(Verifier):
    r"""Sample-and-match: accept the draft ``x`` iff a fresh target sample ``y ~ p`` equals it.

    Per position ``y_i`` is drawn from ``p_i`` with ``u_accept[:, i]`` (inverse CDF); the round
    keeps the drafts up to the first mismatch and emits that ``y``; when every draft matches,
    the bonus token is drawn from the last law with ``u_final``. Lossless; acceptance
    :math:`\sum_x q(x) p(x)` (``docs/proposal_modes.md``, Proposition 1).

    Examples
    --------
    >>> from spectheory.verifiers import get_verifier
    >>> sm = get_verifier("sample_match")
    >>> target = [[[0.5, 0.5], [0.5, 0.5]]]; draft = [[[0.9, 0.1]]]
    >>> sm.rule(target, draft, [[0]], [1], [[0.3]], [0.7])    # y = 0 = x: match, bonus 1
    (array([1]), array([1]))
    >>> sm.rule(target, draft, [[0]], [1], [[0.6]], [0.7])    # y = 1: mismatch, emit y
    (array([0]), array([1]))
    """

    name = "sample_match"
    lossless = True

    def _rule(self, t, d, x, k, u_accept, u_final):
        R, g = x.shape
        rows = np.arange(R)
        y = sample_categorical(t[:, :g], u_accept)  # [R, g]: a fresh target sample per position
        ok = (y == x) & (np.arange(g)[None, :] < k[:, None])
        j = np.cumprod(ok, axis=1).sum(axis=1).astype(np.int64)
        rejected = j < k
        bonus = sample_categorical(t[rows, k], u_final)
        return j, np.where(rejected, y[rows, np.minimum(j, g - 1)], bonus)

    def round_law(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        """Exact law of one round (:func:`~spectheory.verifiers.stepwise.stepwise_round_law`: match
        w.p. ``p(x)``, else emit ``y ~ p`` off ``x``)."""
        return stepwise_round_law(_match_step, target_fn, draft_fn, vocab_size, gamma, tuple(prefix))

    def phase_masses(self, chain: ChainLike) -> tuple[Any, Any, bool] | None:
        return _cached_masses(chain, lambda t, d: (d * t, t * (1.0 - d)))


class ArgmaxDraftingVerifier(_NoTorch, Verifier):
    r"""Argmax (greedy) drafting, ``x_i = argmax q_i``, verified with one-hot or soft q.

    Parameters
    ----------
    q_mode : {"onehot", "soft"}
        ``"onehot"``: the rule sees q as one-hot at the drafted token (the law it was really
        drawn from): point-mass token verification, lossless, acceptance :math:`p(x^*)`.
        ``"soft"``: the rule sees the draft model's soft q: accept with
        :math:`\min(1, p(x^*)/q(x^*))`, residual ``norm((p - q)_+)``; biased unless (per
        state) ``p = 1_{x*}``, ``q = 1_{x*}``, or ``q = (1 - l) p + l 1_{x*}`` with
        ``p(x*) = 0`` (``docs/proposal_modes.md``, Proposition 3).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.verifiers import get_verifier
    >>> chain = st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3])
    >>> soft = get_verifier("argmax_soft")
    >>> soft.drafting, soft.lossless
    ('argmax', False)
    >>> chain.sequence_law(1, 1, verifier=soft).round(4).tolist()  # first token: (1/2, 1/2), not p
    [0.5, 0.5]
    """

    drafting = "argmax"

    def __init__(self, q_mode: str) -> None:
        if q_mode not in ("onehot", "soft"):
            raise ValueError(f"q_mode: expected 'onehot' or 'soft', got {q_mode!r}")
        self.q_mode = q_mode
        self.name = f"argmax_{q_mode}"
        self.lossless = q_mode == "onehot"

    def _rule(self, t, d, x, k, u_accept, u_final):
        if self.q_mode == "onehot":
            return _point_mass_rule(t, d, x, k, u_accept, u_final)
        return token_rule(t, d, x, k, u_accept, u_final)  # the soft q, though x was not drawn from it

    def round_law(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        """Exact law of one round: :func:`~spectheory.verifiers.stepwise.stepwise_round_law` with
        greedy drafting, the ratio test against ``1_x`` (one-hot) or the soft ``q``."""
        step = _onehot_step if self.q_mode == "onehot" else ratio_step
        return stepwise_round_law(step, target_fn, draft_fn, vocab_size, gamma, tuple(prefix), argmax=True)

    def phase_masses(self, chain: ChainLike) -> tuple[Any, Any, bool] | None:
        def masses(t: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            star = argmax_onehot(d)
            if self.q_mode == "onehot":
                return star * t, t * (1.0 - star)
            acc = star * np.minimum(t, d) / np.where(d > 0, d, 1.0)  # 1_{x*} min(1, p/q)
            residual, _ = normalize_or(np.maximum(t - d, 0.0), t)
            return acc, (1.0 - acc.sum(-1, keepdims=True)) * residual

        return _cached_masses(chain, masses)

    def __repr__(self) -> str:
        return f"ArgmaxDraftingVerifier(q_mode={self.q_mode!r})"


#: The registered instances.
POINT_MASS = register_verifier(PointMassVerifier())
SAMPLE_MATCH = register_verifier(SampleMatchVerifier())
ARGMAX_ONEHOT = register_verifier(ArgmaxDraftingVerifier("onehot"))
ARGMAX_SOFT = register_verifier(ArgmaxDraftingVerifier("soft"))
