r"""Ragged and mixed greedy/sampled batches: :func:`check_ragged_batch`, with per-row verdicts.

A **ragged sampler** verifies a batch of rows padded to a common shape, each with its own draft
length, vocabulary and temperature (some greedy, some sampled); what it takes and returns, the
rows of a layout (:class:`RaggedRow`, :func:`default_layout`) and a correct sampler
(:func:`reference_ragged_sampler`) are in :mod:`spectheory.testing.ragged_format` (the three
names import from here too).

The kit builds each batch from a **layout** (one :class:`RaggedRow` per row: an instance of
:mod:`spectheory.testing.instances` and a temperature). The logits it passes are
:math:`T \log p` (:math:`\log p` when greedy), so the law of row ``b`` is exactly its
instance's. Every row of the layout is checked in turn by the checks of
:func:`~spectheory.testing.check_verifier` (greedy rows by the temperature-0 protocol): its
rounds are interleaved with fresh rounds of every other row, so a row whose result depends on
its neighbours (a batch-wide temperature or greedy flag, padding read as drafts) fails in its
own verdict. ``report.config["rows"]`` states each row's verdict and failed checks. What is
checked is each row's own law; dependence *between* rows (one uniform shared by all rows) keeps
every row's law exact and is not flagged.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .._guards import check_int, check_prob
from .._typing import RNGLike
from ._catalog import CHECKS, active_checks
from ._checks import RoundProtocol, check_instance, n_tests
from ._plan import seed_sequence
from ._runner import Runner
from .instances import Instance
from .ragged_format import RaggedRow, default_layout
from .ragged_format import reference_ragged_sampler as reference_ragged_sampler  # the old import path
from .reference import PAD
from .report import Finding, Report, summarise

# RaggedRow, default_layout and reference_ragged_sampler import from here too, but are documented
# (and listed in __all__) where they are defined, in ragged_format
__all__ = ["check_ragged_batch"]


def _logits(probs: np.ndarray, T: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        lg = np.log(probs)
    return lg if T == 0 else T * lg


class _Mixed:
    """``verify_batch`` for one row of the layout: its rows interleaved with fresh rounds of the others."""

    def __init__(self, sampler, layout, slot, seed, groups):
        self.sampler, self.layout, self.slot, self.seed, self.groups = sampler, layout, slot, seed, groups
        self.drafting = getattr(sampler, "drafting", "sample")
        insts = [r.instance for r in layout if r.instance is not None]
        self.K = max(i.k for i in insts)
        self.V = max(i.vocab_size for i in insts)
        self.tail_bad = np.zeros(0, dtype=bool)

    def _pad(self, tp, dp, x, T):
        n, k1, v = tp.shape
        K, V = self.K, self.V
        tl = np.zeros((n, K + 1, V))
        dl = np.zeros((n, K, V))
        tl[:, :k1, v:] = -np.inf
        dl[:, : k1 - 1, v:] = -np.inf
        tl[:, :k1, :v] = _logits(tp, T)
        dl[:, : k1 - 1, :v] = _logits(dp, T)
        xx = np.full((n, K), PAD, dtype=np.int64)
        xx[:, : k1 - 1] = x
        return tl, dl, xx

    def verify_batch(self, tp, dp, x, rng):
        n = x.shape[0]
        # the other rows depend only on the request, so repeated runs (determinism) see the same batch
        crng = np.random.default_rng([self.seed, self.slot, n, int(x.sum()), int(tp.sum() * 1e6)])
        parts = []
        for b, row in enumerate(self.layout):
            if b == self.slot:
                parts.append(self._pad(tp, dp, x, row.temperature) + (row.instance.k, row.temperature))
            elif row.instance is None:
                z = np.zeros((n, self.K + 1, self.V))
                parts.append((z, z[:, 1:], np.full((n, self.K), PAD, np.int64), 0, row.temperature))
            else:
                ctp, cdp, cx = row.instance.sample_drafts(n, crng, self.drafting)
                parts.append(self._pad(ctp, cdp, cx, row.temperature) + (row.instance.k, row.temperature))
        B = len(self.layout)
        tl = np.stack([p[0] for p in parts], 1).reshape(n * B, self.K + 1, self.V)
        dl = np.stack([p[1] for p in parts], 1).reshape(n * B, self.K, self.V)
        xx = np.stack([p[2] for p in parts], 1).reshape(n * B, self.K)
        lens = np.tile(np.array([p[3] for p in parts], np.int64), n)
        temps = np.tile(np.array([p[4] for p in parts]), n)
        step = self.groups * B
        outs = []
        for a in range(0, n * B, step):
            s = slice(a, a + step)
            o = np.asarray(self.sampler(tl[s], dl[s], xx[s], lens[s], temps[s], rng))
            m = min(step, n * B - a)
            if o.shape != (m, self.K + 1) or o.dtype.kind not in "iu":
                raise ValueError(f"sampler returned {o.dtype} {o.shape}, expected int ({m}, {self.K + 1})")
            outs.append(o.astype(np.int64))
        out = np.concatenate(outs)[self.slot :: B]
        k1 = self.layout[self.slot].instance.k + 1
        self.tail_bad = np.any(out[:, k1:] != PAD, axis=1)
        return out[:, :k1]


class _MixedRunner(Runner):
    """A :class:`~spectheory.testing._runner.Runner` whose rounds run inside mixed batches."""

    def __init__(self, sampler, layout, slot, seed, groups, torch_random):
        super().__init__(_Mixed(sampler, layout, slot, seed, groups), True, torch_random)
        self.user = sampler

    def run(self, tp, dp, x, rng, torch_seed=None, force=None):
        out, lengths, bad, err, notes = super().run(tp, dp, x, rng, torch_seed, force)
        tail = self.verify.tail_bad
        if err is None and tail.shape == bad.shape and tail.any():
            i = int(np.flatnonzero(tail)[0])
            notes.setdefault(i, f"tokens emitted past the row's length k+1 = {x.shape[1] + 1} (into padding)")
            bad = bad | tail
            out = np.where(tail[:, None], PAD, out)
            lengths = np.where(tail, 0, lengths)
        return out, lengths, bad, err, notes


def check_ragged_batch(
    sampler: Callable[..., Any],
    *,
    layout: Sequence[RaggedRow] | None = None,
    n_samples: int = 20_000,
    rng: RNGLike = 0,
    alpha: float = 1e-4,
    efficiency: bool = True,
    groups_per_call: int = 64,
    torch_random: bool | None = None,
) -> Report:
    r"""Check a ragged, mixed greedy/sampled batched sampler row by row (module docstring).

    Parameters
    ----------
    sampler : callable
        ``sampler(target_logits [B,K+1,V], draft_logits [B,K,V], draft_tokens [B,K],
        lengths [B], temperatures [B], rng) -> [B, K+1]`` int, ``-1``-padded.
    layout : sequence of RaggedRow, optional
        The rows of every batch (default :func:`default_layout`); at least one non-padding row.
    n_samples : int
        Rounds per row checked (each in a batch with the other rows).
    rng : int, sequence of int, SeedSequence, Generator or None
        Seeds the drafts, the sampler's ``rng`` and the routed torch draws: anything
        :func:`numpy.random.default_rng` accepts (an int seed is used as it is; anything
        else gives one int seed through :func:`~spectheory.testing._plan.seed_sequence`).
    alpha : float
        False-alarm budget of the whole run (Bonferroni over the sampled rows' tests).
    efficiency : bool
        Also check acceptance against the optimum (greedy rows: the whole argmax prefix).
    groups_per_call : int
        Copies of the layout per sampler call (``B = groups_per_call * len(layout)``).
    torch_random : bool, optional
        Route torch's global draws through the kit (default: whenever torch is imported).

    Returns
    -------
    Report
        Findings are named ``"row b T=... <instance>"``; ``config["rows"]`` lists per row
        ``{"row", "temperature", "k", "passed", "failed"}``.

    Examples
    --------
    >>> from spectheory.testing.ragged import check_ragged_batch, reference_ragged_sampler
    >>> report = check_ragged_batch(reference_ragged_sampler, n_samples=300)
    >>> report.passed, [r["passed"] for r in report.config["rows"]]
    (True, [True, True, True, True])
    """
    if isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)):
        seed = check_int(rng, "rng", 0)
    else:
        seed = int(seed_sequence(rng).generate_state(1)[0])
    rows = list(default_layout(seed) if layout is None else layout)
    if not rows or not all(isinstance(r, RaggedRow) for r in rows):
        raise ValueError("layout: expected a non-empty sequence of RaggedRow")
    if all(r.instance is None for r in rows):
        raise ValueError("layout: needs at least one row with an instance")
    if not callable(sampler):
        raise ValueError("sampler: must be callable")
    n_samples = check_int(n_samples, "n_samples", 1)
    groups = check_int(groups_per_call, "groups_per_call", 1)
    alpha = float(check_prob(alpha, "alpha", open_low=True, open_high=True))
    slots = [b for b, r in enumerate(rows) if r.instance is not None]
    named: dict[int, Instance] = {}
    for b in slots:
        inst = rows[b].instance
        assert inst is not None
        named[b] = replace(inst, name=f"row {b} {rows[b].label}")
    M = sum(n_tests(named[b], efficiency) for b in slots if rows[b].temperature > 0)
    a_i = alpha / max(M, 1)
    seeds = np.random.SeedSequence(seed).spawn(len(rows))
    found: dict[str, list[Finding]] = {name: [] for name in CHECKS}
    per_row = []
    routed = False
    for b in slots:
        greedy = rows[b].temperature == 0
        runner = _MixedRunner(sampler, rows, b, seed, groups, torch_random)
        mine: dict[str, list[Finding]] = {name: [] for name in CHECKS}
        check_instance(
            named[b], seeds[b], runner, n_samples, a_i, efficiency, mine, RoundProtocol(greedy=greedy)
        )
        routed = routed or runner.routed
        failed = [c for c, fs in mine.items() if any(not f.passed for f in fs)]
        per_row.append(
            {
                "row": b,
                "label": rows[b].label,
                "temperature": rows[b].temperature,
                "k": named[b].k,
                "passed": not failed,
                "failed": failed,
            }
        )
        for c, fs in mine.items():
            found[c] += fs
    names = [
        c for c in CHECKS if c in active_checks(efficiency) or c in active_checks(efficiency, greedy=True)
    ]
    checks = [summarise(c, CHECKS[c][0], CHECKS[c][1], found[c], a_i, M, alpha) for c in names if found[c]]
    config = {
        "n_samples": n_samples,
        "rng": seed,
        "layout": [r.label for r in rows],
        "n_instances": len(slots),
        "instances": [named[b].name for b in slots],
        "groups_per_call": groups,
        "rows": per_row,
        "torch_random": routed,
    }
    name = getattr(sampler, "__name__", None) or type(sampler).__name__
    return Report(name, checks, config, M, alpha)
