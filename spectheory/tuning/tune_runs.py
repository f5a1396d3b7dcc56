r"""The configurations :func:`~spectheory.tuning.tuner.tune` ranks, and the decoder runs it times.

* :func:`default_configs`, :func:`config_label` -- the gamma / tree / policy rounds of a tuning
  grid and their labels;
* :func:`fit_timing` -- both models' forwards fitted on the device over the grid's batch sizes and
  token counts, and the decoder's overheads measured (:class:`~.cost_timing.DecoderTiming`);
* :func:`measure_run`, :func:`measure_throughput` -- one timed decoder call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._guards import check_int
from .along_path import round_model
from .cost_timing import DecoderTiming, measure_overhead

__all__ = [
    "median_se",
    "top_within_noise",
    "DEFAULT_TREES",
    "default_configs",
    "config_label",
    "fit_timing",
    "measure_run",
    "measure_throughput",
]

#: Tree shapes (children per depth) tried by default.
DEFAULT_TREES = ((2, 1, 1), (2, 2, 1))


def default_configs(
    gammas: Iterable[int] = (1, 2, 3, 4, 6, 8),
    trees: Iterable[Any] = DEFAULT_TREES,
    policies: Iterable[Any] | None = None,
) -> list[Any]:
    """Rounds for ``gammas`` (``PathRound``), ``trees`` (``DraftTree`` or branching tuples, as
    ``TreeRound`` with ``tree_rrs``) and ``policies`` (default: HuggingFace's confidence rule 0.4
    up to depth 8, as ``PolicyRound``)."""
    from ..kinds.path import PathRound
    from ..stopping import ConfidenceThreshold, PolicyRound
    from ..trees import DraftTree, TreeRound

    out: list[Any] = [PathRound(check_int(g, "gammas", 1)) for g in gammas]
    for t in trees:
        out.append(TreeRound(t if isinstance(t, DraftTree) else DraftTree.from_branching(list(t))))
    for p in (ConfidenceThreshold(0.4, max_depth=8),) if policies is None else policies:
        out.append(PolicyRound(p))
    return out


def config_label(rnd: Any) -> str:
    """A short name: ``gamma=4``, ``tree 2x2x1``, ``policy ConfidenceThreshold(0.4, top)``,
    ``autoregressive`` (the round's :attr:`~.along_path.RoundsModel.label`)."""
    return "autoregressive" if rnd is None else round_model(rnd).label


def _scored_tokens(configs: Sequence[Any]) -> list[int]:
    m = {1, 2}
    for rnd in configs:
        m.update(round_model(rnd).forward_sizes())
    return sorted(m)


def fit_timing(
    target: Any,
    draft: Any,
    prompts: np.ndarray,
    horizon: int,
    configs: Sequence[Any],
    batches: Sequence[int],
    device: Any = "cpu",
    repeats: int = 5,
    calibration_batches: Sequence[int] | None = None,
    rng: np.random.Generator | int | None = None,
    form: str = "tabulated",
) -> tuple[DecoderTiming, dict]:
    """Fit both models' forwards (``form``, :func:`~spectheory.cost.fit_forward.fit_cost`; by
    default the measured curve itself) over ``batches`` x the tokens ``configs`` score (and the
    target's prefill's ``L0`` where the models' context allows) x the contexts ``L0, L0 + T`` and
    measure the overheads (short runs of the cheapest and the dearest
    configuration of each kind, and of autoregressive decoding, at each calibration batch: the
    smallest and largest of ``batches`` by default). Returns the timing and a JSON-ready
    record of the fits and overhead runs."""
    from ..cost.fit_forward import fit_cost

    gen = np.random.default_rng(rng)
    L0, T = int(np.shape(prompts)[1]), int(horizon)
    tokens = _scored_tokens(configs)
    limit = min(x for x in (target.max_seq_len, draft.max_seq_len, 1 << 30) if x is not None)
    if L0 > max(tokens) and 2 * L0 + T <= limit:  # the target's prefill width, measured too
        tokens.append(L0)
    grid = dict(batches=sorted(set(batches)), tokens=tokens, contexts=(L0, L0 + T))
    fits = {
        name: fit_cost(model, device=device, repeats=repeats, rng=gen, form=form, **grid)  # type: ignore[arg-type]
        for name, model in (("target", target), ("draft", draft))
    }
    from ..decoder.batching import keeps_chosen_logits

    # a target that takes logits_to_keep scores its prompt with a path round's first drafts
    merged = keeps_chosen_logits(target)
    timing = DecoderTiming(fits["target"].forward, fits["draft"].forward, prompt_in_first_call=merged)
    cal = sorted({min(batches), max(batches)}) if calibration_batches is None else list(calibration_batches)
    kinds: dict[str, list[Any]] = {}
    for rnd in configs:  # per kind, the configurations scoring the fewest and the most tokens
        kinds.setdefault(round_model(rnd).kind, []).append(rnd)
    picked = [None]
    for group in kinds.values():
        work = [round_model(r).scored(round_model(r).max_depth) for r in group]
        picked += [group[int(np.argmin(work))]] + (
            [group[int(np.argmax(work))]] if max(work) > min(work) else []
        )
    runs = [(rnd, B) for B in cal for rnd in picked]
    rows = [list(p) for p in np.asarray(prompts)]
    timing, points = measure_overhead(target, draft, timing, rows, runs, min(T, 32), device=device)
    record = {
        "fits": {k: f.to_dict() for k, f in fits.items()},
        "overhead_runs": points,
        "overhead": {k: {**vars(v), "form": v.describe()} for k, v in timing.overhead.items()},
    }
    return timing, record


def measure_run(
    target: Any,
    draft: Any,
    prompts: Sequence[Any],
    horizon: int,
    rnd: Any,
    batch: int,
    seed: int = 0,
    device: Any = "cpu",
    all_prompts: bool = True,
) -> dict:
    """Decoder calls on ``batch`` rows over every prompt; ``rnd`` None: autoregressive decoding.

    A batch at least as large as the prompt set is one call (row ``b`` has prompt ``b mod P``);
    a smaller one decodes the set in ``ceil(P / B)`` calls (:func:`~.cost_rounds.call_prompts`;
    batch 1: every prompt on its own), so the throughput is that of the whole set, as
    :func:`~.cost_predict.predict_time` predicts it. Returns ``throughput`` (tokens / wall time of
    the calls, prefills included), ``seconds`` (mean per call), ``rounds`` (batch target calls)
    and ``draft_calls`` (batch draft forwards), both per call, and ``calls``.
    ``all_prompts=False``: the first call only (rows cycling from prompt 0)."""
    from ..decoder.dispatch import generate
    from ..decoder.speculative import autoregressive_generate
    from .cost_rounds import call_prompts

    B, T = int(batch), int(horizon)
    seconds = rounds = drafts = 0.0
    calls = call_prompts(B, len(prompts))[: None if all_prompts else 1]
    for j, which in enumerate(calls):
        rows = [list(prompts[int(i)]) for i in which]
        if rnd is None:
            s = autoregressive_generate(target, rows, T, seed=seed + j, device=device).stats
        else:
            s = generate(target, draft, rows, T, rnd, seed=seed + j, device=device).stats
        seconds += float(s.time_total)
        rounds += int(s.batch_target_calls)
        drafts += int(s.batch_draft_calls)
    n = len(calls)
    return {
        "throughput": n * B * T / seconds,
        "seconds": seconds / n,
        "rounds": rounds / n,
        "draft_calls": drafts / n,
        "calls": n,
    }


def measure_throughput(*args: Any, **kwargs: Any) -> float:
    """Measured tokens per second of one decoder call: :func:`measure_run`'s ``throughput``, for the
    same arguments."""
    return float(measure_run(*args, **kwargs)["throughput"])


def median_se(x: Sequence[float]) -> float:
    r"""Standard error of a median, :math:`\sqrt{\pi/2}\, \hat\sigma / \sqrt n` (normal approximation;
    ``inf`` for one value).

    >>> median_se([1.0, 3.0]) == median_se([2.0, 4.0]), median_se([5.0])
    (True, inf)
    """
    a = np.asarray(x, dtype=np.float64)
    return float(np.sqrt(np.pi / 2) * a.std(ddof=1) / np.sqrt(len(a))) if len(a) > 1 else float("inf")


def top_within_noise(rows: Sequence[dict], top: str) -> dict:
    r"""Is configuration ``top``, *measured*, within noise of the fastest measured of ``rows``?

    ``rows``: one batch size's measured rows (``config``, ``measured`` median, ``measured_se``
    from :func:`median_se`). ``within_noise`` when the gap of medians is at most two standard errors
    of their difference, :math:`2 \sqrt{s_\text{top}^2 + s_\text{best}^2}`. Returns
    ``best_measured``, ``gap``, ``noise`` and ``within_noise``.

    >>> rows = [{"config": "a", "measured": 100.0, "measured_se": 1.0},
    ...         {"config": "b", "measured": 150.0, "measured_se": 1.0}]
    >>> top_within_noise(rows, "a")["within_noise"], top_within_noise(rows, "b")["gap"]
    (False, 0.0)
    """
    mine = next(r for r in rows if r["config"] == top)
    best = max(rows, key=lambda r: r["measured"])
    gap = best["measured"] - mine["measured"]
    noise = 2 * float(np.hypot(mine["measured_se"], best["measured_se"]))
    return {"best_measured": best["config"], "gap": gap, "noise": noise, "within_noise": bool(gap <= noise)}
