r"""The ragged batch format: :class:`RaggedRow`, :func:`default_layout` and a correct sampler,
:func:`reference_ragged_sampler` (the kit that checks samplers of it: :mod:`spectheory.testing.ragged`).

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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._guards import as_rng
from .._typing import RNGLike
from ..verifiers.token import token_rule
from .instances import Instance, make_instance
from .reference import PAD

__all__ = ["RaggedRow", "default_layout", "reference_ragged_sampler"]


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
