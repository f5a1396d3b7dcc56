r"""Ragged and mixed greedy/sampled batches: :func:`check_ragged_batch`, with per-row verdicts.

Engines verify many sequences in one call, each with its own draft length and temperature
(some greedy, some sampled), padded to a common shape. A **ragged sampler** takes such a
batch of ``B`` rows, padded to ``K`` drafts and ``V`` tokens::

    sampler(target_logits [B, K+1, V], draft_logits [B, K, V], draft_tokens [B, K],
            lengths [B], temperatures [B], rng) -> [B, K+1] int, -1 after the emitted tokens

Row ``b`` has ``lengths[b] = k_b`` drafts (``draft_tokens[b, k_b:] == -1``; a *padding row*
has ``k_b = 0`` and its output is ignored). With ``T = temperatures[b] > 0`` the laws are
:math:`p_j = \mathrm{softmax}(\ell_j / T)` (target) and :math:`q_j` alike (draft); with
``T = 0`` the row is greedy: it must emit the target's argmax path (any argmax of a tie).
Logits of probability 0 are ``-inf``; tokens past a row's own vocabulary have ``-inf`` logits.
A correct output of row ``b`` is ``draft_tokens[b, :n]`` and one more token,
``1 <= n + 1 <= k_b + 1``, with ``-1`` after it (also in the padding past ``k_b + 1``).

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._guards import as_rng, check_int, check_prob
from .._typing import RNGLike
from ..verifiers.token import token_rule
from ._catalog import CHECKS, active_checks
from ._checks import check_instance, n_tests
from ._runner import Runner
from .instances import Instance, make_instance
from .reference import PAD
from .report import Finding, Report, summarise

__all__ = ["RaggedRow", "default_layout", "reference_ragged_sampler", "check_ragged_batch"]


@dataclass(frozen=True)
class RaggedRow:
    """One row of a ragged batch: an instance (None: a padding row) and a temperature (0: greedy)."""

    instance: Instance | None
    temperature: float = 1.0

    def __post_init__(self) -> None:
        if self.instance is not None and not isinstance(self.instance, Instance):
            raise ValueError(f"instance: expected an Instance or None, got {type(self.instance).__name__}")
        t = float(self.temperature)
        if not np.isfinite(t) or t < 0:
            raise ValueError(f"temperature: expected a finite value >= 0, got {self.temperature!r}")
        object.__setattr__(self, "temperature", t)

    @property
    def label(self) -> str:
        """``"T=<temperature> <instance name>"``, or ``"padding"``."""
        if self.instance is None:
            return "padding"
        return f"T={self.temperature:g} {self.instance.name}"


def default_layout(rng: RNGLike = 0) -> list[RaggedRow]:
    """Five rows: draft lengths 1 to 3, vocabularies 3 and 5, temperatures 0, 0.7, 1, 1.5 and a padding row.

    >>> [r.label for r in default_layout()]
    ['T=1 markov V=3 k=1', 'T=0 ties V=5 k=3', 'padding', 'T=0.7 zeros V=5 k=2', 'T=1.5 sharper_draft V=3 k=3']
    """
    ss = np.random.SeedSequence(int(as_rng(rng).integers(2**63)))
    r = ss.spawn(4)
    return [
        RaggedRow(make_instance("markov", 3, 1, r[0]), 1.0),
        RaggedRow(make_instance("ties", 5, 3, r[1]), 0.0),
        RaggedRow(None),
        RaggedRow(make_instance("zeros", 5, 2, r[2]), 0.7),
        RaggedRow(make_instance("sharper_draft", 3, 3, r[3]), 1.5),
    ]


def _softmax(logits: np.ndarray, temps: np.ndarray) -> np.ndarray:
    z = logits / np.where(temps > 0, temps, 1.0)[:, None, None]
    z = z - z.max(-1, keepdims=True)
    w = np.exp(z)
    return w / w.sum(-1, keepdims=True)


def reference_ragged_sampler(
    target_logits: np.ndarray,
    draft_logits: np.ndarray,
    draft_tokens: np.ndarray,
    lengths: np.ndarray,
    temperatures: np.ndarray,
    rng: RNGLike,
) -> np.ndarray:
    r"""A correct ragged sampler (module docstring): token verification per row, greedy where ``T = 0``.

    Sampled rows: accept ``x_j`` while ``u_j q_j(x_j) < p_j(x_j)`` for ``j < k_b``, then draw
    from :math:`\mathrm{norm}((p_n - q_n)_+)` (``p_{k_b}`` after ``k_b`` accepted). Greedy rows:
    accept while ``x_j`` is an argmax of the target logits, then emit the first argmax.

    >>> import numpy as np
    >>> tl = np.log(np.array([[[0.2, 0.8], [0.5, 0.5], [1, 1]], [[0.2, 0.8], [0.9, 0.1], [0.5, 0.5]]]))
    >>> x = np.array([[1, -1], [1, 1]])
    >>> reference_ragged_sampler(tl, tl[:, :2], x, np.array([1, 2]), np.array([1.0, 0.0]), 0)[1].tolist()
    [1, 0, -1]
    """
    rng = as_rng(rng)
    tl = np.asarray(target_logits, dtype=np.float64)
    dl = np.asarray(draft_logits, dtype=np.float64)
    x = np.asarray(draft_tokens, dtype=np.int64)
    k = np.asarray(lengths, dtype=np.int64)
    temps = np.asarray(temperatures, dtype=np.float64)
    B, K = x.shape
    xc = np.where(x >= 0, x, 0)
    u, u_final = rng.random((B, K)), np.asarray(rng.random(B))
    n, y = token_rule(_softmax(tl, temps), _softmax(dl, temps), xc, k, u, u_final)
    # greedy rows: the argmax path
    rows = np.arange(B)
    on = np.take_along_axis(tl[:, :K], xc[..., None], -1)[..., 0] >= tl[:, :K].max(-1)
    ng = np.cumprod(on & (np.arange(K)[None, :] < k[:, None]), axis=1).sum(1)
    greedy = temps == 0
    n = np.where(greedy, ng, n)
    y = np.where(greedy, np.argmax(tl[rows, ng], axis=-1), y)
    out = np.full((B, K + 1), PAD, dtype=np.int64)
    xx = np.concatenate([xc, np.zeros((B, 1), np.int64)], axis=1)
    out = np.where(np.arange(K + 1)[None, :] < n[:, None], xx, out)
    out[rows, n] = y
    return out


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
    seed: int = 0,
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
    seed : int
        Seeds the drafts, the sampler's ``rng`` and the routed torch draws.
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
    seed = check_int(seed, "seed", 0)
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
        check_instance(named[b], seeds[b], runner, n_samples, a_i, efficiency, mine, greedy=greedy)
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
        "seed": seed,
        "layout": [r.label for r in rows],
        "n_instances": len(slots),
        "instances": [named[b].name for b in slots],
        "groups_per_call": groups,
        "rows": per_row,
        "torch_random": routed,
    }
    name = getattr(sampler, "__name__", None) or type(sampler).__name__
    return Report(name, checks, config, M, alpha)
