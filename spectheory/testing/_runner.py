r"""How the kit calls a verifier: per round or batched, with its random streams under control.

:class:`Runner` calls the user's verifier on ``n`` rounds and returns padded outputs. Every
call runs with the kit owning the randomness: the numpy ``rng`` argument, and -- when torch
routing is on (:mod:`spectheory.testing.torch_random`) -- torch's global draws too, from a
stream seeded by the kit, or forced to an extreme (``force="low"``: every uniform 0,
``"high"``: every uniform the largest value below 1).
"""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .instances import constant_uniform_rng
from .randomness import RandomRecord, kit_randomness
from .reference import PAD

__all__ = ["Runner", "fmt_call", "content_violations", "violation_reason", "boundary_run", "determinism"]


def _exact_float(v: float) -> str:
    return "np.nan" if np.isnan(v) else ("np.inf" if v > 0 else "-np.inf") if np.isinf(v) else repr(float(v))


def _probs(a: ArrayLike) -> str:
    """An array of probabilities as text: 6 digits for clean float64 laws; exactly, as a runnable
    ``np.array(..., dtype=...)``, when the values matter to the last bit (another dtype, NaN,
    infinities, subnormals: :mod:`spectheory.testing.hostile`)."""
    a = np.asarray(a)
    tiny = a.dtype.kind == "f" and bool(np.any((a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny)))
    if a.dtype == np.float64 and np.all(np.isfinite(a)) and not tiny:
        return np.array2string(a, separator=", ")
    fmt: Any = {"float_kind": _exact_float}
    body = np.array2string(a, separator=", ", formatter=fmt, threshold=10**6)
    return f"np.array({body}, dtype=np.{a.dtype})"


def fmt_call(tp: ArrayLike, dp: ArrayLike, x: ArrayLike, out: Any = None, rng_note: str = "") -> str:
    """The call that reproduces one round, as text (hostile inputs exactly, dtype included).

    >>> import numpy as np
    >>> print(fmt_call(np.array([[0.5, np.nan]], dtype=np.float16), np.array([[1.0, 0.0]]), [0]))
    target_probs = np.array([[0.5, np.nan]], dtype=np.float16)
    draft_probs  = [[1., 0.]]
    draft_tokens = [0]
    """
    with np.printoptions(precision=6, linewidth=100, suppress=False):
        s = f"target_probs = {_probs(tp)}\ndraft_probs  = {_probs(dp)}\ndraft_tokens = {np.asarray(x).tolist()}"
    if out is not None:
        s += f"\noutput       = {out}"
    if rng_note:
        s += f"\n{rng_note}"
    return s


class Runner:
    """Calls the user's verifier (per round or batched) and collects padded outputs.

    Parameters
    ----------
    verify : callable or object with ``verify_batch``
    batched : bool
    torch_random : bool or None
        Route torch's global random draws through the kit: True, False, or None (whenever
        torch is imported, i.e. whenever the verifier can run torch code). Python's
        ``random`` is always routed and the global states watched
        (:mod:`spectheory.testing.randomness`).
    rows_per_call : int or None
        Rows per ``verify_batch`` call (None: all rows of an instance in one call).
    """

    def __init__(self, verify, batched, torch_random=None, rows_per_call=None):
        self.verify = verify
        self.batched = batched
        self.torch_random = torch_random
        self.rows_per_call = rows_per_call
        self.routed = False
        self.records: list[RandomRecord] = []

    def run(self, tp, dp, x, rng, torch_seed=None, force=None):
        """Return ``(out [n,k+1] int64 padded -1, lengths [n], format_bad [n], error, notes)``.

        ``error`` is ``(row, message, traceback)`` if the verifier raised (outputs after it are
        missing: ``lengths`` 0). What the verifier did with randomness during the run (a
        :class:`~spectheory.testing.randomness.RandomRecord`) is appended to ``self.records``."""
        with kit_randomness(torch_seed, force, self.torch_random) as rec:
            if self.batched:
                res = self._run_batched(tp, dp, x, rng)
            else:
                res = self._run_rounds(tp, dp, x, rng, force)
        self.records.append(rec)
        self.routed = self.routed or rec.torch_routed
        return res

    def _run_batched(self, tp, dp, x, rng):
        n, k = x.shape
        out = np.full((n, k + 1), PAD, dtype=np.int64)
        lengths = np.zeros(n, dtype=np.int64)
        bad = np.zeros(n, dtype=bool)
        notes: dict[int, str] = {}
        step = self.rows_per_call or n
        parts = []
        for a in range(0, n, step):
            try:
                res = self.verify.verify_batch(tp[a : a + step], dp[a : a + step], x[a : a + step], rng)
            except Exception as exc:  # noqa: BLE001 - any failure of the user's code is a finding
                return out, lengths, bad, (a, repr(exc), traceback.format_exc(limit=3)), notes
            res = np.asarray(res)
            m = min(step, n - a)
            if res.shape != (m, k + 1) or res.dtype.kind not in "iu":
                bad[:] = True
                notes[0] = f"verify_batch returned {res.dtype} {res.shape}, expected int ({m}, {k + 1})"
                return out, lengths, bad, None, notes
            parts.append(res.astype(np.int64))
        res = np.concatenate(parts)
        is_pad = res == PAD
        lengths = np.where(is_pad.any(1), np.argmax(is_pad, axis=1), k + 1)
        tail_ok = np.all(is_pad | (np.arange(k + 1)[None, :] < lengths[:, None]), axis=1)
        bad = (lengths < 1) | ~tail_ok
        for i in np.flatnonzero(bad)[:1]:
            notes[int(i)] = f"row {res[i].tolist()}: padding must follow at least one token, contiguously"
        out = np.where(bad[:, None], PAD, res)
        lengths = np.where(bad, 0, lengths)
        return out, lengths, bad, None, notes

    def _run_rounds(self, tp, dp, x, rng, force):
        n, k = x.shape
        out = np.full((n, k + 1), PAD, dtype=np.int64)
        lengths = np.zeros(n, dtype=np.int64)
        bad = np.zeros(n, dtype=bool)
        notes: dict[int, str] = {}
        verify = self.verify
        k1 = k + 1
        for i in range(n):
            r = constant_uniform_rng(force) if force else rng  # a fresh forced stream per call
            try:
                o = verify(tp[i], dp[i], x[i], r)
            except Exception as exc:  # noqa: BLE001
                return out, lengths, bad, (i, repr(exc), traceback.format_exc(limit=3)), notes
            o = np.asarray(o)
            m = o.shape[0] if o.ndim == 1 else -1
            if m < 1 or m > k1 or o.dtype.kind not in "iu":
                bad[i] = True
                if len(notes) < 1:
                    notes[i] = f"returned {o.dtype} array of shape {o.shape}: {o.tolist()}"
                continue
            out[i, :m] = o
            lengths[i] = m
        return out, lengths, bad, None, notes


def content_violations(
    out: np.ndarray,
    lengths: np.ndarray,
    x: np.ndarray,
    V: int,
    bonus: bool = True,
    stop_token: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows violating the output format: ``(out_of_range, wrong_prefix, bonus_off, after_stop)``.

    ``bonus_off`` marks ``k+1`` tokens emitted with the bonus off; ``after_stop`` marks tokens
    emitted after an accepted stop token."""
    n, k1 = out.shape
    pos = np.arange(k1)[None, :]
    live = pos < lengths[:, None]
    out_of_range = np.any(live & ((out < 0) | (out >= V)), axis=1)
    pref = pos < (lengths[:, None] - 1)
    xx = np.concatenate([x, np.zeros((n, 1), np.int64)], axis=1)
    wrong_prefix = np.any(pref & (out != xx), axis=1)
    bonus_off = (lengths == k1) if not bonus else np.zeros(n, dtype=bool)
    after_stop = (
        np.any(pref & (out == stop_token), axis=1) if stop_token is not None else np.zeros(n, dtype=bool)
    )
    return out_of_range, wrong_prefix, bonus_off, after_stop


def violation_reason(
    i: int,
    oor: np.ndarray,
    wp: np.ndarray,
    bonus_off: np.ndarray,
    after_stop: np.ndarray,
    stop_token: int | None,
) -> str:
    """Why row ``i`` is malformed."""
    if oor[i]:
        return "token out of range [0, V)"
    if wp[i]:
        return "emitted prefix differs from the draft tokens (must be draft_tokens[:n] + one token)"
    if bonus_off[i]:
        return "k+1 tokens emitted with the bonus off (no token may follow the last accepted draft)"
    if after_stop[i]:
        return f"tokens emitted after an accepted stop token {stop_token} (no bonus or draft may follow it)"
    return "malformed"


def boundary_run(runner, tp, dp, x, which):
    """Run the verifier with every uniform forced to ``which`` (numpy rng and routed torch draws)."""
    return runner.run(tp, dp, x, constant_uniform_rng(which), force=which)


def determinism(runner, tp, dp, x, ss):
    """``None`` if two runs with the same seed agree, else ``(summary, example)``."""
    s = int(ss.generate_state(1)[0])
    try:
        a = runner.run(tp, dp, x, np.random.default_rng(s), torch_seed=s)
        b = runner.run(tp, dp, x, np.random.default_rng(s), torch_seed=s)
    except Exception:  # noqa: BLE001 - reported by the other checks
        return None
    if a[3] is not None or b[3] is not None:
        return None
    diff = np.flatnonzero(np.any(a[0] != b[0], axis=1))
    if diff.size == 0:
        return None
    i = int(diff[0])
    mode = "verify_batch on these rows" if runner.batched else "verify"
    return (
        f"{diff.size} of {x.shape[0]} rounds differ between two runs with the same seed",
        fmt_call(
            tp[i],
            dp[i],
            x[i],
            f"{a[0][i].tolist()} then {b[0][i].tolist()}",
            rng_note=f"{mode} called twice with rng = numpy.random.default_rng({s})"
            + (" (rounds called in sequence)" if not runner.batched else ""),
        ),
    )
