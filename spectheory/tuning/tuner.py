r"""Which gamma, tree or policy to run, for these models on this device at this batch size.

:func:`tune` answers the question in four steps, each a documented piece of the package:

1. fit the forward cost of both models on the device (:func:`spectheory.cost.fit_forward.fit_cost`) over
   the batch sizes asked for and the token counts the configurations score;
2. measure the decoder's per-round work outside the forwards at a few small runs
   (:func:`~spectheory.tuning.cost_timing.measure_overhead`);
3. sample target paths once and predict, for every configuration, the law of a row's rounds
   from those paths (Rao-Blackwellised, :mod:`spectheory.tuning.cost_predict`);
4. combine: predicted seconds, seconds per token and batch throughput with standard errors,
   ranked per batch size (:meth:`TuneResult.table`), plotted (:meth:`TuneResult.plot`), and,
   on request, checked by running the decoder on the top configurations (:meth:`TuneResult.verify`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._guards import check_int
from .along_path import round_model
from .cost_predict import PathSample, predict_time, sample_target_paths
from .tune_runs import (  # noqa: F401  (config_label, measure_run: importable here as before)
    DEFAULT_TREES,
    config_label,
    default_configs,
    fit_timing,
    measure_run,
    measure_throughput,
    median_se,
    top_within_noise,
)

__all__ = ["tune", "TuneResult"]


def _rate(x: float) -> str:
    """A throughput for the table: three significant digits below 100 tokens/s (a CPU's 2.4,
    not 2), whole numbers above."""
    return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"


@dataclass
class TuneResult:
    """Predicted throughput of every configuration at every batch size (:func:`tune`).

    ``rows``: one dict per (batch, configuration) with ``batch``, ``config`` (label), ``kind``,
    the fields of :func:`~spectheory.tuning.cost_predict.predict_time` and ``speedup`` over
    the predicted autoregressive baseline (``config = "autoregressive"`` rows); ``rounds`` the
    round objects by label; ``record`` the cost fits and overhead runs; ``verified`` measured rows.
    """

    rows: list[dict]
    rounds: dict
    record: dict
    settings: dict
    verified: list[dict] = field(default_factory=list)

    def ranked(self, batch: int) -> list[dict]:
        """Rows of ``batch`` by predicted throughput, best first."""
        rows = [r for r in self.rows if r["batch"] == batch]
        if not rows:
            raise ValueError(
                f"batch: {batch} was not tuned (batches: {sorted({r['batch'] for r in self.rows})})"
            )
        return sorted(rows, key=lambda r: -r["throughput"])

    def best(self, batch: int) -> dict:
        """The top-ranked configuration at ``batch``."""
        return self.ranked(batch)[0]

    def table(self) -> str:
        """Per batch size, every configuration ranked by predicted throughput (95% intervals)."""
        lines = []
        fits = self.record["fits"]
        lines.append(
            f"cost fits on {self.settings['device']}: target max error "
            f"{fits['target']['max_relative_error']:.0%} (median {fits['target']['median_relative_error']:.0%}), "
            f"draft max {fits['draft']['max_relative_error']:.0%} (median {fits['draft']['median_relative_error']:.0%})"
        )
        for B in sorted({r["batch"] for r in self.rows}):
            lines.append(f"\nbatch {B}: {self.settings['horizon']} new tokens per row")
            lines.append(
                f"{'rank':>4s}  {'configuration':38s} {'tokens/call':>12s} {'tokens/s':>18s} "
                f"{'ms/token':>9s} {'speedup':>8s}"
            )
            for i, r in enumerate(self.ranked(B), 1):
                iv = f"{_rate(r['throughput'])} +- {_rate(1.96 * r['throughput_se'])}"
                tpc = f"{r['tokens_per_call']:.2f}+-{1.96 * r['tokens_per_call_se']:.2f}"
                lines.append(
                    f"{i:4d}  {r['config']:38s} {tpc:>12s} {iv:>18s} {1e3 * r['seconds_per_token']:9.2f} "
                    f"{r['speedup']:8.2f}"
                )
        if self.verified:
            lines.append("\nverified (decoder runs, median over repeats):")
            lines.append(
                f"{'batch':>5s}  {'configuration':38s} {'predicted':>10s} {'measured':>10s} {'ratio':>6s}"
            )
            for v in self.verified:
                lines.append(
                    f"{v['batch']:5d}  {v['config']:38s} {_rate(v['predicted']):>10s} {_rate(v['measured']):>10s} "
                    f"{v['predicted'] / v['measured']:6.2f}"
                )
            for c in self.top_checks():
                verdict = "within noise of" if c["within_noise"] else "NOT within noise of"
                lines.append(
                    f"batch {c['batch']}: top-ranked {c['top_ranked']} measured {verdict} the best measured "
                    f"({c['best_measured']}; gap {_rate(c['gap'])} tokens/s, 2 SE {_rate(c['noise'])})"
                )
        return "\n".join(lines)

    def verify(self, target: Any, draft: Any, top: int = 3, repeats: int = 3, seed: int = 0) -> list[dict]:
        """Run the decoder on the ``top`` configurations of every batch size (and the baseline) and
        record measured beside predicted throughput (median of ``repeats`` runs)."""
        top, repeats = check_int(top, "top", 1), check_int(repeats, "repeats", 1)
        prompts, T, dev = self.settings["prompts"], self.settings["horizon"], self.settings["device"]
        out = []
        for B in sorted({r["batch"] for r in self.rows}):
            picked = self.ranked(B)[:top]
            if all(r["config"] != "autoregressive" for r in picked):
                picked.append(
                    next(r for r in self.rows if r["batch"] == B and r["config"] == "autoregressive")
                )
            for r in picked:
                rnd = self.rounds[r["config"]]
                measure_throughput(target, draft, prompts, min(T, 4), rnd, B, seed, dev)  # warm-up
                m = [
                    measure_throughput(target, draft, prompts, T, rnd, B, seed + i, dev)
                    for i in range(repeats)
                ]
                out.append(
                    {
                        "batch": B,
                        "config": r["config"],
                        "predicted": r["throughput"],
                        "measured": float(np.median(m)),
                        "measured_se": median_se(m),
                        "measured_repeats": m,
                    }
                )
        self.verified = out
        return out

    def top_checks(self) -> list[dict]:
        r"""Per verified batch size: is the top-ranked configuration, *measured*, within noise of the
        fastest measured one among those verified (:func:`~.tune_runs.top_within_noise`: the gap
        of medians against two standard errors of their difference; infinite from one repeat)."""
        out = []
        for B in sorted({v["batch"] for v in self.verified}):
            at = [v for v in self.verified if v["batch"] == B]
            top = self.best(B)["config"]
            out.append({"batch": B, "top_ranked": top, **top_within_noise(at, top)})
        return out

    def plot(self, path: str) -> list[str]:
        """Predicted throughput (95% intervals) of every configuration, one panel per batch size;
        measured points where :meth:`verify` ran. Returns the files written (``.png``, ``.pdf``
        beside ``path`` without its suffix)."""
        import os

        from matplotlib.figure import Figure  # no pyplot: no backend is switched

        blue, orange = "#0072B2", "#E69F00"  # the project palette (spectheory.app.plotting)
        batches = sorted({r["batch"] for r in self.rows})
        fig = Figure(figsize=(3.4 * len(batches), 2.8), layout="constrained")
        axes = fig.subplots(1, len(batches))
        axes = np.atleast_1d(axes)
        for ax, B in zip(axes, batches):
            rows = self.ranked(B)[::-1]
            y = np.arange(len(rows))
            ax.barh(
                y,
                [r["throughput"] for r in rows],
                xerr=[1.96 * r["throughput_se"] for r in rows],
                color=[blue if r["config"] != "autoregressive" else "0.6" for r in rows],
            )
            meas = {v["config"]: v["measured"] for v in self.verified if v["batch"] == B}
            for i, r in enumerate(rows):
                if r["config"] in meas:
                    ax.plot(meas[r["config"]], i, "o", color=orange, ms=4)
            ax.set_yticks(y, [r["config"] for r in rows], fontsize=6)
            ax.set_xlabel("tokens / s (predicted; o measured)")
            ax.set_title(f"batch {B}")
        stem = os.path.splitext(str(path))[0]
        out = []
        for ext in (".png", ".pdf"):
            fig.savefig(stem + ext, bbox_inches="tight", dpi=150)
            out.append(stem + ext)
        return out

    def to_dict(self) -> dict:
        """JSON-ready: settings (without the prompts), rows, fits and verified rows."""
        settings = {k: v for k, v in self.settings.items() if k != "prompts"}
        checks = self.top_checks() if self.verified else []
        return {
            "settings": settings,
            "rows": self.rows,
            "record": self.record,
            "verified": self.verified,
            "top_checks": checks,
        }


def tune(
    target: Any,
    draft: Any,
    prompts: Any = None,
    device: str = "cpu",
    batches: Iterable[int] = (1,),
    gammas: Iterable[int] = (1, 2, 3, 4, 6, 8),
    trees: Iterable[Any] = DEFAULT_TREES,
    policies: Iterable[Any] | None = None,
    n_paths: int = 128,
    horizon: int = 64,
    fit_repeats: int = 5,
    rng: np.random.Generator | int | None = None,
    cost_form: str = "tabulated",
) -> TuneResult:
    r"""Predict and rank the throughput of every gamma, tree and policy (module docstring).

    Parameters
    ----------
    target, draft : models of the decoder contract (same vocabulary), moved to ``device``
    prompts : int array ``[P, L]`` of equal-length prompts, or None for 8 held-out windows of
        32 bytes of the built-in corpus (:func:`spectheory.decoder.corpus.heldout_windows`)
    device : ``"cpu"``, ``"cuda"`` or ``"cuda:N"``
    batches : batch sizes to rank for
    gammas, trees, policies : the configurations (:func:`default_configs`)
    n_paths : target paths sampled once for all predictions
    horizon : new tokens per row
    fit_repeats : timed calls per grid point of the cost fits
    rng : numpy Generator or seed
    cost_form : the forward-cost form fitted (:func:`~spectheory.cost.fit_forward.fit_cost`):
        ``"tabulated"`` (default: the measured curve, one cost per width scored),
        ``"linear"`` or ``"constant"``

    Returns
    -------
    TuneResult

    Examples
    --------
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> t = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    >>> d = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=8, block_size=64)).eval()
    >>> res = tune(t, d, [[1, 2, 3, 4]], gammas=(1, 2), trees=(), policies=(), n_paths=8,
    ...            horizon=6, fit_repeats=1, rng=0)
    >>> sorted(r["config"] for r in res.rows)
    ['autoregressive', 'gamma=1', 'gamma=2']
    """
    from ..cost.measure import check_device

    dev = str(check_device(device))
    batches = sorted(
        {check_int(b, "batches", 1) for b in ([batches] if isinstance(batches, int) else batches)}
    )
    if not batches:
        raise ValueError("batches: give at least one batch size")
    T = check_int(horizon, "horizon", 1)
    if prompts is None:
        from ..decoder.corpus import heldout_windows

        prompts = heldout_windows(8, 32)
    P = (
        np.asarray(prompts, dtype=np.int64)
        if not isinstance(prompts, np.ndarray)
        else prompts.astype(np.int64)
    )
    if P.ndim != 2 or P.shape[1] < 1:
        raise ValueError(f"prompts: expected equal-length token prompts [P, L], got shape {P.shape}")
    configs = default_configs(gammas, trees, policies)
    if not configs:
        raise ValueError("gammas, trees, policies: nothing to tune")
    gen = np.random.default_rng(rng)
    timing, record = fit_timing(
        target, draft, P, T, configs, batches, dev, fit_repeats, rng=gen, form=cost_form
    )
    models = [round_model(r) for r in configs]
    depth = max([m.policy_depth for m in models], default=0)
    has_tree = any(m.keeps_laws for m in models)
    sample: PathSample = sample_target_paths(
        target, draft, P, T, n_paths, rng=gen, device=dev, trees=has_tree, policy_depth=depth
    )
    rows, rounds = [], {"autoregressive": None}
    for B in batches:
        base = predict_time(sample, None, timing, B)
        rows.append(
            {"batch": B, "config": "autoregressive", "kind": "autoregressive", **base, "speedup": 1.0}
        )
        for rnd, model in zip(configs, models):
            label = model.label
            rounds[label] = rnd
            p = predict_time(sample, rnd, timing, B, rng=gen)
            rows.append(
                {
                    "batch": B,
                    "config": label,
                    "kind": model.kind,
                    **p,
                    "speedup": p["throughput"] / base["throughput"],
                }
            )
    settings = {
        "device": dev,
        "horizon": T,
        "n_paths": int(n_paths),
        "batches": batches,
        "prompts": P,
        "prompt_len": int(P.shape[1]),
        "cost_form": cost_form,
    }
    return TuneResult(rows, rounds, record, settings)
