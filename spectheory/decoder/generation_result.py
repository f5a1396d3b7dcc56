"""What a generation returns: the new tokens and per-sequence statistics.

Counting follows ``docs/protocol.md`` ("what is counted"): one *round* = one target
call; ``round_accepted[b][r]`` is the number of draft tokens accepted in round ``r`` and
``accepted_counts[b, j]`` the number of rounds that accepted ``j`` (the histogram
:class:`~spectheory.montecarlo.SimulationResult` has under the same name);
``round_tokens[b][r]`` the number of tokens the round emitted (accepted, plus a residual
or bonus token if one was emitted). Per-position acceptance is the non-causal one: at slot
``i`` of a round, ``position_accepted[b, i] / position_checked[b, i]``, where a slot is
*checked* when the verifier decides on its draft token (slots after a rejection are not).
Timings are wall-clock seconds for the whole batch (CUDA synchronised before reading).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: The per-sequence counters (the names of every result type, ``docs/architecture.md``).
_STATISTICS = ("target_calls", "rejections", "draft_tokens", "accepted")


@dataclass
class DecodeStats:
    """Per-sequence counts of one call to the decoder (arrays have one entry per sequence).

    Attributes
    ----------
    target_calls, draft_tokens, rejections : int ndarray [B]
        Rounds (target forward calls the sequence took part in after prefill), draft forward
        steps spent on the sequence (``sum_r k_r``), rounds ending in a rejection.
    round_accepted, round_tokens : list of int ndarray
        Per sequence, the accepted count and the emitted-token count of every round.
    accepted, tokens : int ndarray [B] (properties)
        Per sequence, accepted drafts and emitted tokens.
    accepted_counts : int ndarray [B, gamma + 1] (property)
        Per sequence, the number of rounds that accepted ``j`` drafts; ``accepted_count_law``
        (property) the pooled law of a round's accepted count, ``tokens_per_call`` (property)
        total tokens over total calls -- the names of every result type
        (``docs/architecture.md``, "Result vocabulary").
    position_checked, position_accepted : int ndarray [B, gamma]
    time_prefill, time_draft, time_target, time_total : float
        Seconds; draft/target exclude prefill; total covers the whole call. A target that
        scores its prompt with the first drafts (``logits_to_keep``; no separate prefill call)
        has that call in ``time_prefill``.
    batch_draft_calls, batch_target_calls : int
        Forward calls made on the whole batch after the prefill; ``batch_target_calls`` is the
        rounds played (the first of them the prompt's call where the target scores its prompt
        with the first drafts).
    """

    gamma: int
    bonus: bool
    verifier: str
    target_calls: np.ndarray
    draft_tokens: np.ndarray
    rejections: np.ndarray
    round_accepted: list
    round_tokens: list
    position_checked: np.ndarray
    position_accepted: np.ndarray
    time_prefill: float = 0.0
    time_draft: float = 0.0
    time_target: float = 0.0
    time_total: float = 0.0
    batch_draft_calls: int = 0
    batch_target_calls: int = 0

    @property
    def batch_size(self) -> int:
        return len(self.target_calls)

    @property
    def accepted(self) -> np.ndarray:
        """Draft tokens accepted, per sequence."""
        return np.array([int(a.sum()) for a in self.round_accepted], dtype=np.int64)

    @property
    def accepted_counts(self) -> np.ndarray:
        """``[B, gamma + 1]``: rounds of each sequence that accepted ``j`` drafts."""
        width = max([self.gamma] + [int(a.max()) for a in self.round_accepted if a.size]) + 1
        return np.array(
            [np.bincount(a, minlength=width) for a in self.round_accepted], dtype=np.int64
        ).reshape(self.batch_size, width)

    @property
    def tokens(self) -> np.ndarray:
        """Tokens emitted per sequence (accepted drafts, corrections and bonus tokens)."""
        return np.array([int(r.sum()) for r in self.round_tokens], dtype=np.int64)

    @property
    def tokens_per_call(self) -> float:
        """Total tokens over total target calls, pooled over the batch (the ``tokens_per_call`` of
        every result type; NaN before any call)."""
        calls = int(self.target_calls.sum())
        return float(self.tokens.sum()) / calls if calls else float("nan")

    @property
    def accepted_count_law(self) -> np.ndarray:
        """Law of a round's accepted count, pooled over all rounds of all sequences, ``[gamma + 1]``."""
        hist = self.accepted_counts.sum(axis=0).astype(np.float64)
        return hist / hist.sum()

    def mean_se(self, name: str) -> tuple[float, float]:
        """Mean over sequences and its standard error (NaN for one sequence) of
        ``target_calls``, ``rejections``, ``draft_tokens`` or ``accepted``, as
        :meth:`spectheory.montecarlo.SimulationResult.mean_se`."""
        from ..montecarlo.chisquare import mean_and_se

        if name not in _STATISTICS:
            raise ValueError(f"name: expected one of {_STATISTICS}, got {name!r}")
        return mean_and_se(getattr(self, name))

    @property
    def position_acceptance(self) -> np.ndarray:
        """``[B, gamma]`` accepted / checked per slot (NaN where never checked)."""
        out = np.full(self.position_checked.shape, np.nan)
        np.divide(self.position_accepted, self.position_checked, out=out, where=self.position_checked > 0)
        return out

    def summary(self) -> dict:
        r"""Per-sequence means and standard errors, in the shape of
        :meth:`spectheory.montecarlo.SimulationResult.summary`: ``{stat: {"mean": m, "se": se}}``
        for ``target_calls``, ``rejections``, ``draft_tokens``, ``accepted``, plus
        ``tokens_per_call`` (mean tokens over mean calls, SE by the delta method) and ``n_runs``
        (the batch size). Batch totals, timings and rates: :meth:`totals`.
        """
        out: dict[str, Any] = {name: dict(zip(("mean", "se"), self.mean_se(name))) for name in _STATISTICS}
        tokens = self.tokens.astype(np.float64)
        c, sc = out["target_calls"]["mean"], out["target_calls"]["se"]
        t = float(tokens.mean()) if tokens.size else float("nan")
        out["tokens_per_call"] = {
            "mean": t / c if c else float("nan"),
            "se": t * sc / c**2 if c else float("nan"),
        }
        out["n_runs"] = self.batch_size
        return out

    def totals(self) -> dict:
        """Batch totals and means (plain floats/ints, JSON-serialisable)."""
        tokens = int(sum(int(r.sum()) for r in self.round_tokens))
        calls = int(self.target_calls.sum())
        checked = int(self.position_checked.sum())
        accepted = int(self.position_accepted.sum())
        rounds = np.concatenate(self.round_accepted) if self.round_accepted else np.zeros(0)
        return {
            "batch_size": self.batch_size,
            "gamma": self.gamma,
            "bonus": self.bonus,
            "verifier": self.verifier,
            "tokens": tokens,
            "target_calls": calls,
            "draft_tokens": int(self.draft_tokens.sum()),
            "rejections": int(self.rejections.sum()),
            "accepted": accepted,
            "checked": checked,
            "acceptance": accepted / checked if checked else float("nan"),
            "tokens_per_call": tokens / calls if calls else float("nan"),
            "mean_accepted_per_round": float(rounds.mean()) if rounds.size else float("nan"),
            "time_prefill": self.time_prefill,
            "time_draft": self.time_draft,
            "time_target": self.time_target,
            "time_total": self.time_total,
            "tokens_per_second": tokens / self.time_total if self.time_total > 0 else float("nan"),
            "batch_draft_calls": self.batch_draft_calls,
            "batch_target_calls": self.batch_target_calls,
        }

    def as_dict(self) -> dict:
        """Everything, per sequence, as JSON-serialisable lists."""
        return {
            "summary": self.summary(),
            "totals": self.totals(),
            "target_calls": self.target_calls.tolist(),
            "draft_tokens": self.draft_tokens.tolist(),
            "rejections": self.rejections.tolist(),
            "round_accepted": [a.tolist() for a in self.round_accepted],
            "accepted_counts": self.accepted_counts.tolist(),
            "round_tokens": [r.tolist() for r in self.round_tokens],
            "position_checked": self.position_checked.tolist(),
            "position_accepted": self.position_accepted.tolist(),
        }


@dataclass
class GenerationResult:
    """``tokens``: one 1-d int64 ndarray of new tokens per sequence; ``stats``: :class:`DecodeStats`;
    ``tokenizer``: the target's tokenizer when it has one (then :attr:`texts` decodes ``tokens``).

    Examples
    --------
    >>> import numpy as np
    >>> class Letters:
    ...     def decode(self, ids, skip_special_tokens=False):
    ...         return "".join(chr(97 + i) for i in ids)
    >>> res = GenerationResult([np.array([7, 8])], stats=None, tokenizer=Letters())
    >>> res.texts
    ['hi']
    """

    tokens: list
    stats: DecodeStats
    tokenizer: Any = field(default=None, repr=False, compare=False)

    def summary(self) -> dict:
        return self.stats.summary()

    def text(self, tokenizer: Any = None, skip_special_tokens: bool = False) -> list[str]:
        """The new tokens of each sequence as text, decoded by ``tokenizer`` (default: the
        target's, :attr:`tokenizer`); ``ValueError`` when neither is known."""
        from .text_prompts import decode_tokens

        tok = self.tokenizer if tokenizer is None else tokenizer
        if tok is None:
            raise ValueError(
                "tokenizer: the target has none; pass one, text(tokenizer), or decode the ids "
                "yourself (bytes(ids).decode() for the byte-level shipped models)"
            )
        return decode_tokens(tok, self.tokens, skip_special_tokens)

    @property
    def texts(self) -> list[str]:
        """:meth:`text` with the target's tokenizer."""
        return self.text()


class StatsRecorder:
    """Accumulates per-round counts while the decoder runs (internal helper)."""

    def __init__(self, batch_size: int, gamma: int):
        self.batch_size, self.gamma = batch_size, gamma
        # per round: (k, n_accepted, emitted, rejected), int ndarrays [B] (or a [4, B] tensor)
        self.rounds: list[Any] = []

    def add_round(self, k, n_accepted, emitted, rejected):
        """Record one round; arguments are int/bool ndarrays [B]; rows with ``k == 0`` are idle."""
        self.rounds.append(tuple(np.asarray(a, dtype=np.int64) for a in (k, n_accepted, emitted, rejected)))

    def add_round_counts(self, counts: Any) -> None:
        """Record one round from an integer tensor ``[4, B]`` of ``(k, n_accepted, emitted,
        rejected)`` left on its device: the rounds are copied to the host together in
        ``finish()``, so a round needs no device-to-host copy (a synchronisation on CUDA).
        ``[5, B]``: a fifth row says which rows took part in the round's target call (by
        default the rows with ``k > 0``; the autoregressive baseline calls with ``k = 0``)."""
        self.rounds.append(counts)

    def _on_host(self) -> None:
        """Copy the rounds recorded as tensors to the host, all in one transfer."""
        on_device = [i for i, r in enumerate(self.rounds) if not isinstance(r, tuple)]
        if on_device:
            import torch

            host = torch.stack([self.rounds[i] for i in on_device]).cpu().numpy().astype(np.int64)
            for i, counts in zip(on_device, host):
                self.rounds[i] = tuple(counts)

    def finish(self, verifier: str, bonus: bool, **times: Any) -> DecodeStats:
        self._on_host()
        B, R, g = self.batch_size, len(self.rounds), self.gamma
        k, n, e, rej, *called = (
            np.stack([r[i] for r in self.rounds], axis=1) if R else np.zeros((B, 0), np.int64)
            for i in range(len(self.rounds[0]) if R else 4)
        )
        live = called[0] > 0 if called else k > 0
        slots = np.arange(g)[None, None, :]
        checked = live[..., None] & (slots < k[..., None]) & (slots <= n[..., None])
        accepted = live[..., None] & (slots < n[..., None])
        return DecodeStats(
            gamma=g,
            bonus=bonus,
            verifier=verifier,
            target_calls=live.sum(1).astype(np.int64),
            draft_tokens=k.sum(1).astype(np.int64),
            rejections=(rej * live).sum(1).astype(np.int64),
            round_accepted=[n[b][live[b]] for b in range(B)],
            round_tokens=[(n[b] + e[b])[live[b]] for b in range(B)],
            position_checked=checked.sum(1).astype(np.int64),
            position_accepted=accepted.sum(1).astype(np.int64),
            **times,
        )
