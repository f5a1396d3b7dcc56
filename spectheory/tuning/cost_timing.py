r"""The wall time of the real decoder's rounds from fitted forward costs (needs torch to measure).

A round of :func:`~spectheory.decoder.speculative_generate` on a batch of ``B`` rows at cached
context ``L`` with (batch) draft depth ``K`` makes ``K`` draft forwards -- the first feeds the
(up to 2) committed tokens the draft has not cached, the others one token each -- and one
target forward over ``K + 1`` tokens, plus the work outside the models (sampling, hashing the
uniforms, the verifier, the bookkeeping):

.. math:: t_\text{round}(B, K, L) = t_D(B, 2, L) + (K - 1)\, t_D(B, 1, L) + t_T(B, K + 1, L)
          + K\, o_\text{step} + o_\text{path}(B, K + 1).

A tree round (:func:`~spectheory.decoder.tree_generate`) drafts level by level: the root call,
then one call per level ``d = 1..K-1`` over its ``n_d`` nodes, and one target call over all
``N`` nodes of the tree (root included): :math:`t_D(B, 2, L) + \sum_{d<K} t_D(B, n_d, L) +
t_T(B, N, L) + K\, o_\text{step} + o_\text{tree}(B, N)`. Autoregressive decoding costs :math:`t_T(B, 1, L) +
o_\text{ar}(B, 1)` per token but the first (the prefill's forward of the whole prompt gives its
law), and a prefill of prompts of length ``L_0`` one forward of ``L_0`` tokens of the target and
``L_0 - 1`` of the draft; a whole decoder call adds ``o_call`` (allocating the caches, building
the batch, collecting the output). A target that takes ``logits_to_keep`` is not prefilled apart
by a path round's decoder (``prompt_in_first_call``): its first call scores the prompt and the
first round's ``K`` drafts, :math:`t_T(B, L_0 + K, 0)` in place of :math:`t_T(B, L_0, 0) +
t_T(B, K + 1, L_0)` (one call fewer per decode, as Hugging Face's assisted generation).

The overheads ``o_kind(B, w) = a + s w + b B w`` (``w`` = tokens scored per row: work per round,
per draft step, per row and token) are *measured*: :func:`measure_overhead` runs the real decoder
at a few configurations and takes each round's time minus its predicted forwards, then fits
``a, s, b >= 0`` (least squares relative to the round time; :class:`RoundOverhead`).
:class:`DecoderTiming` holds the two forward costs and the overheads. The fits of
:mod:`.cost_insitu` measure all of them -- ``o_step``, ``o_kind`` and ``o_call`` included -- on the
decoder's own logged calls instead (:class:`~spectheory.cost.timed.ForwardLog`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..cost.forward import ForwardCost
from .along_path import round_model

__all__ = ["OVERHEAD_KINDS", "RoundOverhead", "DecoderTiming", "measure_overhead"]

#: Kinds of rounds whose outside-the-model work is measured separately (the ``kind`` of each
#: round's :class:`~.along_path.RoundsModel`, and autoregressive decoding).
OVERHEAD_KINDS = ("path", "policy", "tree", "autoregressive")


def _zero(batch: int, tokens: int, context: int) -> float:
    return 0.0


@dataclass(frozen=True)
class RoundOverhead(ForwardCost):
    """Seconds per round outside the models: ``base + per_step w + per_token B w`` for ``B`` rows
    scoring ``w`` tokens each (``context`` is ignored).

    Examples
    --------
    >>> RoundOverhead(1e-4, 2e-5, 1e-6)(8, 5, 0)
    0.00024
    """

    base: float = 0.0
    per_step: float = 0.0
    per_token: float = 0.0

    def evaluate(self, batch: np.ndarray, tokens: np.ndarray, context: np.ndarray) -> Any:
        return self.base + self.per_step * tokens + self.per_token * batch * tokens + 0.0 * context

    def describe(self) -> str:
        return f"o = {self.base:.4g} + {self.per_step:.4g} w + {self.per_token:.4g} B w  (s)"


@dataclass(frozen=True)
class DecoderTiming:
    """Seconds of the decoder's forwards and rounds (module docstring).

    Parameters
    ----------
    target, draft : ForwardCost
        ``f(batch, tokens, context) -> seconds`` of one forward (e.g. ``fit_cost(...).forward``).
    overhead : dict kind -> ForwardCost, optional
        Per-round work outside the models, called as ``o(batch, tokens scored per row, 0)``,
        looked up by the round's ``keys`` (:class:`~.along_path.RoundsModel`; a policy falls back to
        ``"path"``); missing kinds cost 0.
    step : float or dict kind -> float, optional
        Seconds outside the model after each draft forward of a round (sampling the drafted
        token, appending it, a policy's stopping statistic), ``o_step``: a path round of depth
        ``K`` adds ``K o_step``, a tree round one per draft call. Default 0 (the :func:`measure_overhead` fit folds it into
        ``overhead``); the in-situ fits (:mod:`.cost_insitu`) measure it.
    call : (float, float), optional
        Seconds of one decoder call outside the forwards and the rounds (allocating caches,
        building the batch, collecting the output), autoregressive and speculative; added
        to :meth:`prefill_seconds`. Default ``(0, 0)``.
    prompt_in_first_call : bool, optional
        The target takes ``logits_to_keep``, so a round whose model declares
        ``first_call_scores_prompt`` scores the prompt in its first call (module docstring;
        :meth:`prefill_seconds`). Default ``False``.

    Examples
    --------
    >>> from spectheory.kinds import PathRound
    >>> t = DecoderTiming(lambda b, m, L: 1.0 + 0.1 * b * m, lambda b, m, L: 0.1)
    >>> round(t.round_seconds(PathRound(3), 1, 3, 10), 6)   # 3 draft steps + a call scoring 4
    1.7
    """

    target: Any
    draft: Any
    overhead: dict = field(default_factory=dict)
    step: Any = 0.0
    call: tuple = (0.0, 0.0)
    prompt_in_first_call: bool = False

    @staticmethod
    def _lookup(table: dict, keys: tuple[str, ...], default: Any) -> Any:
        return next((table[k] for k in keys if k in table), default)

    def _overhead(self, keys: tuple[str, ...]) -> Any:
        return self._lookup(self.overhead, keys, _zero)

    def _step(self, keys: tuple[str, ...]) -> float:
        return float(self._lookup(self.step, keys, 0.0) if isinstance(self.step, dict) else self.step)

    def round_seconds(
        self, rnd: Any, batch: int, depth: float, context: float, overhead: bool = True
    ) -> float:
        """One round of ``rnd`` (a round or its :class:`~.along_path.RoundsModel`) on ``batch``
        rows with draft depth ``depth`` (a tree: its levels up to ``depth``) at ``context`` cached
        positions; ``overhead=False``: forwards only. The round's forwards are its model's
        :meth:`~.along_path.RoundsModel.draft_calls` and
        :meth:`~.along_path.RoundsModel.target_calls` (a fractional mean depth interpolates)."""
        m = round_model(rnd)
        B, K, L = int(batch), float(depth), float(context)
        draft = sum(c * self.draft(B, w, L) for w, c in m.draft_calls(K))
        draft += m.draft_steps(K) * self._step(m.keys)
        target = sum(c * self.target(B, w, L) for w, c in m.target_calls(K))
        extra = self._overhead(m.keys)(B, m.scored(K), 0) if overhead else 0.0
        return float(draft + target + extra)

    def cost_model(self, batch: int, rnd: Any = 4, depth: int | None = None) -> Any:
        """The :class:`~spectheory.cost.CostModel` of these forwards with this timing's overhead
        for round ``rnd`` (default: a path of 4) at ``batch`` rows and ``depth`` drafted tokens per
        round (default its ``max_depth``) as its constant ``overhead`` (what the exact engines
        read: ``CostModel.at(batch, context)``)."""
        from ..cost import CostModel

        m = round_model(rnd)
        work = m.scored(m.max_depth if depth is None else depth)
        return CostModel(self.target, self.draft, overhead=float(self._overhead(m.keys)(int(batch), work, 0)))

    def autoregressive_seconds(self, batch: int, context: float, overhead: bool = True) -> float:
        """One autoregressive token on ``batch`` rows at ``context`` cached positions."""
        extra = self._overhead(("autoregressive",))(int(batch), 1, 0) if overhead else 0.0
        return float(self.target(int(batch), 1, float(context)) + extra)

    def prefill_seconds(
        self,
        batch: int,
        prompt_len: int,
        speculative: bool = True,
        rnd: Any = None,
        depth: float | None = None,
    ) -> float:
        """The prefill: the target's forward of all ``prompt_len`` tokens (it keeps the first new
        token's law, so the first round's target call scores the drafts only and a first plain
        step calls nothing), the draft's of ``prompt_len - 1`` (none for 1-token prompts; a draft
        that keeps its law after the prompt feeds one more), plus the call's own work outside
        the forwards (``call``). With ``prompt_in_first_call`` and a round ``rnd`` whose model
        declares ``first_call_scores_prompt``, the target's part is the first call's, scoring
        the prompt and the first round's ``depth`` drafts, less the round's own target call,
        which that decode does not make (module docstring); ``depth``: the first round's
        (default the round's largest).

        Examples
        --------
        >>> from spectheory.kinds import PathRound
        >>> t = DecoderTiming(lambda b, m, L: 1.0 + 0.1 * m, lambda b, m, L: 0.0, prompt_in_first_call=True)
        >>> t.prefill_seconds(1, 10), round(t.prefill_seconds(1, 10, rnd=PathRound(3)), 6)   # 2.0 + 0.3 - 1.4
        (2.0, 0.9)
        """
        m = int(prompt_len)
        extra = float(self.call[1] if speculative else self.call[0])
        t = self.target(int(batch), m, 0)
        if speculative and self.prompt_in_first_call and rnd is not None:
            model = round_model(rnd)
            if model.first_call_scores_prompt:
                K = float(model.max_depth if depth is None else depth)
                # each of the round's target calls of w tokens (weights: a fractional depth
                # interpolates) becomes one of the prompt and its w - 1 drafts from position 0
                t = sum(
                    c * (self.target(int(batch), m + w - 1, 0) - self.target(int(batch), w, float(m)))
                    for w, c in model.target_calls(K)
                )
        d = self.draft(int(batch), m - 1, 0) if speculative and m > 1 else 0.0
        return float(t + d) + extra


def _logged_seconds(forward: Any, calls: np.ndarray) -> float:
    """Fitted seconds of the logged cached calls ``[n, 4]`` (the prefill, at context 0, left out)."""
    cached = calls[calls[:, 2] > 0]
    if not len(cached):
        return 0.0
    return float(np.sum(forward(cached[:, 0].astype(np.int64), cached[:, 1].astype(np.int64), cached[:, 2])))


def measure_overhead(
    target: Any,
    draft: Any,
    timing: DecoderTiming,
    prompts: Sequence[Any],
    runs: Sequence[tuple[Any, int]],
    horizon: int,
    seed: int = 0,
    device: Any = "cpu",
) -> tuple[DecoderTiming, list[dict]]:
    r"""Measure the per-round work outside the forwards and fit ``o_kind(B, w) = a + s w + b B w``.

    Each run's forwards are logged (:class:`~spectheory.cost.timed.ForwardLog`) and priced by
    ``timing``'s fitted forwards call by call; the rest of its time per round is the overhead.

    Parameters
    ----------
    target, draft : models of the decoder contract
    timing : DecoderTiming
        The fitted forward costs (its overheads are ignored).
    prompts : list of equal-length prompts (the first ``B`` are used for a run of batch ``B``;
        they are cycled if fewer)
    runs : list of ``(round, batch)``
        ``round``: ``None`` for autoregressive decoding, else anything the decoder's
        :func:`~spectheory.decoder.generate` takes; at least one per kind to fit.
    horizon : int
        New tokens per run.

    Returns
    -------
    (DecoderTiming with the fitted :class:`RoundOverhead` per kind, list of per-run dicts: kind, batch, rounds, depth,
    round seconds, forward seconds, overhead seconds)
    """
    from scipy.optimize import nnls

    from ..cost.timed import ForwardLog
    from ..decoder.dispatch import generate
    from ..decoder.speculative import autoregressive_generate

    T = int(horizon)
    points: list[dict] = []
    rnd: Any
    for rnd, B in runs:
        rows = [prompts[i % len(prompts)] for i in range(int(B))]
        with ForwardLog(target) as lt, ForwardLog(draft) as ld:
            if rnd is None:
                autoregressive_generate(target, rows, min(T, 4), seed=seed, device=device)  # warm-up
                lt.take(), ld.take()
                s = autoregressive_generate(target, rows, T, seed=seed, device=device).stats
                kind, R, depth = "autoregressive", T, 0.0
            else:
                model = round_model(rnd)
                kind = model.kind
                generate(target, draft, rows, min(T, 4), rnd, seed=seed, device=device)  # warm-up
                lt.take(), ld.take()
                s = generate(target, draft, rows, T, rnd, seed=seed, device=device).stats
                R = max(int(s.batch_target_calls), 1)
                depth = model.priced_depth(s.batch_draft_calls / R)
        # the fitted forwards of the calls the run made (a capped draft's rounds differ in depth:
        # pricing them at their mean depth would put the curve's concavity into the overhead)
        fwd = _logged_seconds(timing.target, lt.take()) + (
            0.0 if rnd is None else _logged_seconds(timing.draft, ld.take())
        )
        fwd /= R
        per_round = (s.time_total - s.time_prefill) / R
        points.append(
            {
                "kind": kind,
                "batch": int(B),
                "rounds": int(R),
                "depth": float(depth),
                "work": 1.0 if rnd is None else float(model.scored(depth)),
                "round_seconds": float(per_round),
                "forward_seconds": float(fwd),
                "overhead_seconds": float(per_round - fwd),
            }
        )
    groups: dict[str, list[dict]] = {}
    for p in points:
        groups.setdefault(p["kind"], []).append(p)
    fitted: dict[str, Any] = {}
    for kind, pts in groups.items():
        t = np.array([p["round_seconds"] for p in pts])
        X = np.array([[1.0, p["work"], p["batch"] * p["work"]] for p in pts]) / t[:, None]
        y = np.array([p["overhead_seconds"] for p in pts]) / t
        coef, _ = nnls(X, y)
        fitted[kind] = RoundOverhead(*(float(c) for c in coef))
    return replace(timing, overhead=fitted), points
