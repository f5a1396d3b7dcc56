r"""Cost models fitted on the decoder's own calls, held out by configuration (issue 21, item 3).

On a shared machine the speed of the same forward drifts by tens of percent within seconds, so
a cost model fitted at one moment mispredicts runs made at another. Here the forwards are
timed *inside* the decoder's runs (:class:`~spectheory.cost.timed.ForwardLog`): every run of
the validation grid leaves a :class:`LoggedRun` with the shape and seconds of each of its
target and draft calls. The prediction for one run uses only *other* runs:

* forwards (:class:`LoggedForward`, :func:`fit_logged_forward`): at the run's batch size ``B``,
  from the calls of the *other configurations* of the same repeat (made within seconds of it);
  a token count none of them makes (autoregressive decoding's one-token target calls: every
  speculative call scores at least two) comes from the same configuration's other repeats
  (:func:`held_out_timing`).
  A cached call of ``m`` tokens per row at context ``L`` costs :math:`\alpha_m + c L` (one
  intercept per token count seen, one shared context slope, least squares with all
  coefficients :math:`\ge 0`; token counts not seen are interpolated linearly between the
  nearest seen ones, or extrapolated from the last two); an uncached call (``L = 0``: a
  prefill, or a merged first call, below) costs the mean of the logged uncached calls of that
  width (of a width one token away, in proportion: the target's prefill feeds the whole prompt,
  the draft's all but its last token), else, wider than the narrowest logged, the line through
  the logged widths' means (interpolated, or extrapolated from the last two);
* the work outside the forwards (:func:`fit_outside`): over every other run at ``B`` (all
  repeats), the run's time minus its logged forwards is fitted by least squares (coefficients
  :math:`\ge 0`) to

  .. math:: q_\text{call} + a_\text{kind} R + o_{\text{step},\text{kind}} D + t W

  with ``R`` the rounds (the target calls after its prefill; where the first call scored the
  prompt with the first round's drafts, :attr:`LoggedRun.merged_first`, that call is the first
  round and counts ``W`` tokens as the run's mean round), ``D`` the draft forwards and ``W``
  the tokens scored per row summed over rounds; ``q`` per decoder call (autoregressive or
  speculative), ``a`` per round and ``o_step`` per draft forward, each per kind of round
  (autoregressive, path, policy, tree: a policy computes its stopping statistic after every
  draft step, a tree round builds its attention mask).

:func:`insitu_timing` turns both into the :class:`~.cost_timing.DecoderTiming` that
:func:`~.cost_predict.predict_time` reads. A merged first call (a target that takes
``logits_to_keep`` under a path or policy round: the prompt and the first drafts in one call, as
HF's assisted generation) is an uncached call of the prompt's length plus the first round's
drafts: it enters the uncached table beside the prefills, and a run with one is priced by
``DecoderTiming(prompt_in_first_call=True)`` (the merged call in place of a prefill and the
first round's cached call), so the other configurations' merged calls, of other widths, price
it. No run's own times enter its prediction, and the configuration predicted enters the
forwards it is predicted with only for the token counts no other configuration makes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cost.forward import ForwardCost
from ..cost.forward import interp_linear as _interp
from .cost_timing import DecoderTiming, RoundOverhead

__all__ = [
    "LoggedRun",
    "LoggedForward",
    "fit_logged_forward",
    "fit_outside",
    "insitu_timing",
    "measure_logged",
    "predict_held_out",
    "held_out_timing",
    "held_out_parts",
]

KINDS = ("autoregressive", "path", "policy", "tree")


@dataclass(frozen=True)
class LoggedRun:
    """One decoder call with its logged forwards.

    Parameters
    ----------
    config : str
        Label of the configuration (e.g. ``"gamma=4"``).
    kind : ``"autoregressive"``, ``"path"``, ``"policy"`` or ``"tree"``
    batch, repeat : int
    seconds : float
        Wall time of the whole call.
    target, draft : ndarray ``[n, 4]``
        The logs (batch, tokens per row, mean context, seconds) of :class:`~spectheory.cost.timed.ForwardLog`.
    merged_first : bool, default False
        The target's first call scored the prompt with the first round's drafts (its one
        uncached call is the first round, not a prefill; :func:`measure_logged` sets it).
    """

    config: str
    kind: str
    batch: int
    repeat: int
    seconds: float
    target: np.ndarray
    draft: np.ndarray
    merged_first: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {self.kind!r}")

    @property
    def autoregressive(self) -> bool:
        """Whether the run decoded autoregressively (kind ``KINDS[0]``)."""
        return KINDS.index(self.kind) == 0

    @property
    def outside(self) -> float:
        """Seconds of the call outside every logged forward."""
        return float(self.seconds - self.target[:, 3].sum() - self.draft[:, 3].sum())

    def features(self) -> np.ndarray:
        """``[10]``: calls (autoregressive, speculative), rounds per kind (:data:`KINDS`), draft
        forwards per speculative kind (path, policy, tree) and tokens scored, as counted in
        :func:`fit_outside` (a merged first call is a round of the run's mean width).

        Examples
        --------
        >>> t = np.array([[1, 9, 0, 0.1], [1, 3, 9, 0.02], [1, 5, 12, 0.03]])
        >>> LoggedRun("g", "path", 1, 0, 1.0, t, np.zeros((0, 4))).features()[[3, 9]].tolist()
        [2.0, 8.0]
        >>> LoggedRun("g", "path", 1, 0, 1.0, t, np.zeros((0, 4)), merged_first=True).features()[[3, 9]].tolist()
        [3.0, 12.0]
        """
        rounds = self.target[self.target[:, 2] > 0]
        R, D = float(len(rounds)), float((self.draft[:, 2] > 0).sum())
        W = float(rounds[:, 1].sum())
        if self.merged_first:
            R, W = R + 1.0, W + (float(rounds[:, 1].mean()) if len(rounds) else 0.0)
        one_hot = np.eye(len(KINDS))[KINDS.index(self.kind)]  # the kind's column of each term
        return np.array([one_hot[0], 1.0 - one_hot[0], *(R * one_hot), *(D * one_hot[1:]), W])


@dataclass(frozen=True)
class LoggedForward(ForwardCost):
    r"""A forward's seconds at one batch size, from logged calls: :math:`\alpha_m + c L` (module docstring).

    Parameters
    ----------
    batch : int
        The only batch size it answers for (others: ``ValueError``).
    tokens, intercepts : tuples of float
        The token counts seen (increasing) and their :math:`\alpha_m`.
    per_context : float
        :math:`c`, seconds per cached position.
    prefill : tuple of (tokens, seconds)
        Mean seconds of the uncached calls (``context = 0``) per width, increasing widths. An
        uncached call of a width within one token of a logged one costs that width's seconds
        in proportion to the widths; a wider one, with two or more widths logged, the
        piecewise-linear line through them (extended linearly beyond the widest); any other
        is priced as a cached call at context 0.

    Examples
    --------
    >>> f = LoggedForward(4, (1.0, 3.0), (0.010, 0.014), 1e-5, ((31.0, 0.05),))
    >>> round(f(4, 2, 100), 6), round(f(4, 5, 0), 6), f(4, 31, 0), f(4, 32, 0)   # ..., prefills
    (0.013, 0.018, 0.05, 0.0516...)
    >>> g = LoggedForward(4, (1.0,), (0.01,), 0.0, ((31.0, 0.05), (35.0, 0.054)))
    >>> round(g(4, 33, 0), 6), round(g(4, 39, 0), 6)   # between merged widths; beyond, on the line
    (0.052, 0.058)
    """

    batch: int
    tokens: tuple
    intercepts: tuple
    per_context: float
    prefill: tuple = ()

    def evaluate(self, batch: np.ndarray, tokens: np.ndarray, context: np.ndarray) -> Any:
        if np.any(batch != self.batch):
            raise ValueError(
                f"batch: this logged forward was fitted at batch {self.batch} only, got {batch!r}"
            )
        m, L = np.broadcast_arrays(
            np.asarray(tokens, dtype=np.float64), np.asarray(context, dtype=np.float64)
        )
        out = (
            _interp(m.ravel(), np.asarray(self.tokens), np.asarray(self.intercepts))
            + self.per_context * L.ravel()
        )
        if self.prefill:  # an uncached call: priced by the logged uncached calls (class docstring)
            widths = np.array([w for w, _ in self.prefill])
            secs = np.array([s for _, s in self.prefill])
            for i in np.flatnonzero((L.ravel() == 0) & (m.ravel() > 0)):
                w = m.ravel()[i]
                j = int(np.argmin(np.abs(widths - w)))
                if abs(widths[j] - w) <= 1:  # a decoder's prefills differ by a token
                    out[i] = secs[j] * w / widths[j]
                elif len(widths) > 1 and w > widths[0]:  # a merged first call: on the line
                    out[i] = max(float(_interp(np.array([w]), widths, secs)[0]), 0.0)
        return out.reshape(m.shape)

    def describe(self) -> str:
        return f"logged at B={self.batch}: {len(self.tokens)} token counts, c = {self.per_context:.3g} s/position"


def fit_logged_forward(calls: np.ndarray, batch: int) -> LoggedForward:
    """Fit :class:`LoggedForward` to the calls ``[n, 4]`` of one model made at ``batch`` rows.

    Examples
    --------
    >>> calls = np.array([[2, 1, 10, 0.011], [2, 1, 20, 0.012], [2, 3, 10, 0.031], [2, 9, 0, 0.2]])
    >>> f = fit_logged_forward(calls, 2)
    >>> round(f(2, 3, 20), 6), f(2, 9, 0)
    (0.032, 0.2)
    """
    from scipy.optimize import nnls

    c = np.asarray(calls, dtype=np.float64).reshape(-1, 4)
    c = c[c[:, 0] == batch]
    cached, pre = c[c[:, 2] > 0], c[c[:, 2] == 0]
    if not len(cached):
        raise ValueError(f"calls: no cached call at batch {batch} to fit")
    ms = np.unique(cached[:, 1])
    X = np.column_stack([cached[:, 1][:, None] == ms[None, :], cached[:, 2]]).astype(np.float64)
    coef, _ = nnls(X, cached[:, 3])
    prefill = tuple((float(w), float(pre[pre[:, 1] == w, 3].mean())) for w in np.unique(pre[:, 1]))
    return LoggedForward(
        int(batch), tuple(map(float, ms)), tuple(map(float, coef[:-1])), float(coef[-1]), prefill
    )


#: Names of :func:`fit_outside`'s coefficients, in order.
OUTSIDE_TERMS = (
    "q_autoregressive",
    "q_speculative",
    *(f"a_{k}" for k in KINDS),
    *(f"step_{k}" for k in KINDS[1:]),
    "per_token",
)


def fit_outside(runs: Sequence[LoggedRun]) -> np.ndarray:
    """Coefficients ``[10]`` (:data:`OUTSIDE_TERMS`; module docstring) fitted to the
    outside-the-forwards seconds of ``runs`` (least squares, all ``>= 0``)."""
    from scipy.optimize import nnls

    if not runs:
        raise ValueError("runs: nothing to fit the outside-the-model work on")
    X = np.array([r.features() for r in runs])
    y = np.array([r.outside for r in runs])
    coef, _ = nnls(X, y)
    return coef


def insitu_timing(
    forward_runs: Sequence[LoggedRun], outside_runs: Sequence[LoggedRun], batch: int
) -> DecoderTiming:
    """The :class:`~.cost_timing.DecoderTiming` at ``batch`` rows: forwards fitted on the calls of
    ``forward_runs``, the outside work on ``outside_runs`` (module docstring)."""
    pool = [r for r in forward_runs if r.batch == batch]
    target = fit_logged_forward(np.concatenate([r.target for r in pool]), batch)
    drafts = [r.draft for r in pool if len(r.draft)]
    draft = fit_logged_forward(np.concatenate(drafts), batch) if drafts else target
    coef = dict(zip(OUTSIDE_TERMS, map(float, fit_outside([r for r in outside_runs if r.batch == batch]))))
    t = coef["per_token"]
    overhead = {k: RoundOverhead(coef[f"a_{k}"], t, 0.0) for k in KINDS}
    step = {k: coef[f"step_{k}"] for k in KINDS[1:]}
    merged = any(r.merged_first for r in (*pool, *outside_runs))  # a property of the target
    return DecoderTiming(
        target,
        draft,
        overhead,
        step=step,
        call=(coef["q_autoregressive"], coef["q_speculative"]),
        prompt_in_first_call=merged,
    )


def measure_logged(
    target: Any,
    draft: Any,
    prompts: Sequence[Any],
    horizon: int,
    rnd: Any,
    batch: int,
    repeat: int = 0,
    seed: int = 0,
    device: Any = "cpu",
) -> tuple[LoggedRun, dict]:
    """One decoder call (:func:`~.tune_runs.measure_run`, its first call: rows cycling from
    prompt 0) with both models' forwards logged.

    Returns the :class:`LoggedRun` and the run's ``measure_run`` dict (throughput, seconds,
    rounds, draft calls). ``ValueError`` when the log misses some of the target's calls (tree
    rounds on a model that scores trees outside its ``forward``)."""
    from ..cost.timed import ForwardLog
    from ..decoder.batching import keeps_chosen_logits
    from .along_path import round_model
    from .tune_runs import config_label, measure_run

    with ForwardLog(target) as lt, ForwardLog(draft) as ld:
        out = measure_run(
            target, draft, prompts, horizon, rnd, batch, seed=seed, device=device, all_prompts=False
        )
    model = None if rnd is None else round_model(rnd)
    kind = KINDS[0] if model is None else model.kind
    # a target that takes logits_to_keep scores its prompt in a path or policy round's first call
    merged = model is not None and model.first_call_scores_prompt and keeps_chosen_logits(target)
    run = LoggedRun(
        config_label(rnd), kind, int(batch), int(repeat), out["seconds"], lt.take(), ld.take(), merged
    )
    # every target call is logged: the prefill's forward gives autoregressive decoding's first
    # token; a speculative round is one call (the first one uncached when merged)
    logged = int((run.target[:, 2] > 0).sum()) + (1 if model is None else int(merged))
    if logged != round(out["rounds"]):
        raise ValueError(
            f"target: {logged} of its {out['rounds']:g} calls per decode went through its forward, "
            "where the log sees them (a model whose own tree_logits bypasses forward, as the "
            "Hugging Face adapter's, cannot be fitted in situ under tree rounds)"
        )
    return run, out


def predict_held_out(
    sample: Any,
    rnd: Any,
    run: LoggedRun,
    runs: Sequence[LoggedRun],
    rng: np.random.Generator | int | None = 0,
) -> dict:
    """:func:`~.cost_predict.predict_time` of ``run`` (configuration ``rnd``) from the other runs:
    forwards from the other configurations of its repeat, the outside work from every other run
    at its batch size (module docstring); the run is one call (:func:`measure_logged`), so is
    the prediction."""
    from .cost_predict import predict_time

    return predict_time(sample, rnd, held_out_timing(run, runs), run.batch, rng=rng, all_prompts=False)


def _unseen(own: np.ndarray, pool: list[np.ndarray]) -> np.ndarray:
    """Token counts of ``own``'s cached calls that no cached call in ``pool`` has."""
    seen = {float(m) for c in pool for m in c[c[:, 2] > 0, 1]}
    return np.array(sorted({float(m) for m in own[own[:, 2] > 0, 1]} - seen))


def held_out_timing(run: LoggedRun, runs: Sequence[LoggedRun]) -> DecoderTiming:
    """The :class:`~.cost_timing.DecoderTiming` a held-out prediction of ``run`` uses (module
    docstring): forwards from the other configurations of its repeat at its batch size -- and,
    for a token count none of them makes (autoregressive decoding's one-token target calls), the
    calls of that count from its own configuration's *other* repeats --; the outside work from
    every other run at its batch size."""
    same = [r for r in runs if r.batch == run.batch]
    forwards = [r for r in same if r.repeat == run.repeat and r.config != run.config]
    if not forwards:
        raise ValueError(f"runs: no other configuration at batch {run.batch}, repeat {run.repeat}")
    mine = [r for r in same if r.config == run.config and r is not run]
    extra = []
    for field_ in ("target", "draft"):
        gap = _unseen(getattr(run, field_), [getattr(r, field_) for r in forwards])
        if len(gap) and mine:
            calls = np.concatenate([getattr(r, field_) for r in mine])
            extra.append((field_, calls[(calls[:, 2] > 0) & np.isin(calls[:, 1], gap)]))
    if extra:
        empty = np.zeros((0, 4))
        parts = dict(extra)
        filler = LoggedRun(
            run.config,
            run.kind,
            run.batch,
            -1,
            0.0,
            parts.get("target", empty),
            parts.get("draft", empty),
        )
        forwards = [*forwards, filler]
    return insitu_timing(forwards, [r for r in same if r is not run], run.batch)


def held_out_parts(run: LoggedRun, runs: Sequence[LoggedRun], timing: DecoderTiming | None = None) -> dict:
    """Where a held-out prediction's error comes from: the fits of :func:`predict_held_out`
    evaluated on ``run``'s *own* logged calls and counts (so the rounds law plays no part).

    Returns ``forward`` and ``outside``: ``(predicted, measured)`` seconds of the run's forwards
    (every logged call priced by the held-out forward fits, a merged first call included in both)
    and of its work outside them.
    ``timing``: :func:`held_out_timing` of ``run`` if already built (else it is built here)."""
    same = [r for r in runs if r.batch == run.batch]
    timing = held_out_timing(run, runs) if timing is None else timing
    priced = [
        float(np.sum(model(calls[:, 0], calls[:, 1], calls[:, 2]))) if len(calls) else 0.0
        for model, calls in ((timing.target, run.target), (timing.draft, run.draft))
    ]
    coef = fit_outside([r for r in same if r is not run])
    measured_fwd = float(run.target[:, 3].sum() + run.draft[:, 3].sum())
    return {
        "forward": (sum(priced), measured_fwd),
        "outside": (float(run.features() @ coef), run.outside),
    }
