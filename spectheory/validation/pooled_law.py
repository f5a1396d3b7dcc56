r"""The exact law of the next one or two tokens on pooled cells: the lossless check at any vocabulary.

:func:`~spectheory.validation.lossless.exact_two_token_law` computes all ``V**2`` pair
probabilities, one forward pass over the ``V`` one-token extensions of the prompt: at a real
vocabulary (``V = 49,152``: 2.4e9 pairs, 49,152 sequences scored) it cannot run. A chi-square
test never needs the tail cells one by one: cells with a tiny expected count are pooled
anyway. So the law is computed directly on a *partition* of the outcomes into cells, each
with its exact probability. With p the target's law (after temperature/top-k/top-p) and a
mass threshold ``m``:

- one token: a cell ``{a}`` for each token with :math:`p(a) \ge m`, and one *rest* cell of
  all the others, probability :math:`\sum_{a: p(a) < m} p(a)`;
- two tokens: for each kept first token ``a``, a cell ``{(a, b)}`` for each ``b`` with
  :math:`p(a) p(b \mid a) \ge m` and one cell ``(a, rest)`` of probability
  :math:`p(a) \sum_{b\ \text{not kept}} p(b \mid a)`; and one cell ``(rest, any)`` of all pairs
  whose first token is not kept, probability :math:`\sum_{a: p(a) < m} p(a)`.

Every cell's probability is exact (sums of the model's probabilities, nothing estimated or
truncated): the cells are a coarsening of the sample space, so a sampler whose output has the
target's law has exactly these cell probabilities and Pearson's statistic on them is as valid
as on the full table. It costs one forward pass over the prompt and one over at most ``1/m``
extensions (``m = 1e-3``: at most 1,000), whatever ``V``. What coarsening loses is power
against a broken sampler that moves mass only *inside* a rest cell; the smallest total
variation the test detects on the cells is :func:`~spectheory.testing.stat_tests.detectable_tv`.

:meth:`CellLaw.from_dense` builds the same cells from a full law (small vocabularies), so the
pooled check and the full one can be compared where both run (``tests/validation/test_pooled_law.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._guards import check_int

if TYPE_CHECKING:
    from ..decoder.batching import CausalLM

__all__ = ["CellLaw", "exact_cell_law", "DENSE_MAX_VOCAB"]

#: Largest vocabulary for which the lossless check builds the full ``V x V`` law by default.
DENSE_MAX_VOCAB = 1024

_REST = -1


@dataclass(frozen=True)
class CellLaw:
    r"""Exact probabilities of a partition of the next ``n_tokens`` tokens into cells.

    Attributes
    ----------
    probs : ndarray, float64, shape (C,)
        Cell probabilities (sum 1).
    first, second : ndarray, int64, shape (C,)
        Cell ``c`` holds the outcomes whose first token is ``first[c]`` (``-1``: every first
        token that has no cell of its own) and, for two tokens, whose second token is
        ``second[c]`` (``-1``: every second token that has no cell of its own under that first
        token). For one token ``second`` is all ``-1``.
    n_tokens : int, 1 or 2
    vocab_size : int
    mass : float, the threshold the cells were built with

    Examples
    --------
    >>> import numpy as np
    >>> law = CellLaw.from_dense(np.array([0.6, 0.3, 0.06, 0.04]), mass=0.1)
    >>> law.probs.round(2).tolist(), law.first.tolist()
    ([0.6, 0.3, 0.1], [0, 1, -1])
    >>> law.cell_index([0, 3, 1, 2]).tolist()
    [0, 2, 1, 2]
    """

    probs: np.ndarray
    first: np.ndarray
    second: np.ndarray
    n_tokens: int
    vocab_size: int
    mass: float

    @property
    def n_cells(self) -> int:
        return int(self.probs.size)

    def cell_index(self, samples: ArrayLike) -> np.ndarray:
        """The cell of each sample: ``samples`` int ``[n]`` (one token) or ``[n, k]`` with
        ``k >= n_tokens`` (the first ``n_tokens`` columns are read); returns int64 ``[n]``.

        Raises
        ------
        ValueError
            A token outside ``[0, vocab_size)``, or too few columns.
        """
        s = np.asarray(samples, dtype=np.int64)
        if s.ndim == 1:
            s = s[:, None]
        if s.ndim != 2 or s.shape[1] < self.n_tokens:
            raise ValueError(f"samples: expected shape (n,) or (n, >= {self.n_tokens}), got {s.shape}")
        s = s[:, : self.n_tokens]
        if s.size and (s.min() < 0 or s.max() >= self.vocab_size):
            raise ValueError(f"samples: tokens must lie in [0, {self.vocab_size})")
        V = self.vocab_size
        # key of a cell: first * (V + 1) + (second + 1); rest tokens map to the rest key (-1)
        keys = (self.first + 1) * (V + 1) + (self.second + 1)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]

        def lookup(q: np.ndarray) -> np.ndarray:
            pos = np.clip(np.searchsorted(sorted_keys, q), 0, len(sorted_keys) - 1)
            return np.where(sorted_keys[pos] == q, order[pos], -1)

        own_first = np.isin(s[:, 0], self.first[self.first >= 0])
        a = np.where(own_first, s[:, 0], _REST)
        if self.n_tokens == 1:
            return lookup((a + 1) * (V + 1))
        cell = np.where(own_first, lookup((a + 1) * (V + 1) + (s[:, 1] + 1)), -1)
        rest_second = lookup((a + 1) * (V + 1))  # (a, rest), or (rest, any) for a = -1
        return np.where(cell >= 0, cell, rest_second)

    @classmethod
    def from_dense(cls, law: ArrayLike, mass: float) -> CellLaw:
        """The cells of a full law: ``law [V]`` (one token) or ``[V, V]`` (two tokens), with
        the rules of the module docstring (``mass = 0`` keeps every outcome of positive
        probability as its own cell)."""
        law = np.asarray(law, dtype=np.float64)
        if law.ndim == 1:
            return _one_token_cells(law, mass)
        if law.ndim != 2 or law.shape[0] != law.shape[1]:
            raise ValueError(f"law: expected shape (V,) or (V, V), got {law.shape}")
        first = law.sum(1)
        cond = np.divide(law, first[:, None], out=np.zeros_like(law), where=first[:, None] > 0)
        kept = _kept_first(first, mass)
        return _two_token_cells(first, kept, cond[kept], mass)


def _kept_first(first: np.ndarray, mass: float) -> np.ndarray:
    """Tokens with their own first-token cell, most probable first."""
    kept = np.flatnonzero((first >= mass) & (first > 0))
    return kept[np.argsort(-first[kept], kind="stable")]


def _one_token_cells(p: np.ndarray, mass: float) -> CellLaw:
    kept = _kept_first(p, mass)
    rest = float(np.delete(p, kept).sum())
    probs = np.append(p[kept], rest)
    first = np.append(kept, _REST)
    return CellLaw(
        probs, first.astype(np.int64), np.full(probs.size, _REST, np.int64), 1, p.size, float(mass)
    )


def _two_token_cells(first: np.ndarray, kept: np.ndarray, cond: np.ndarray, mass: float) -> CellLaw:
    """``cond [len(kept), V]``: the conditional law of the second token given each kept first."""
    probs, f, s = [], [], []
    for a, row in zip(kept, cond):
        joint = first[a] * row
        own = np.flatnonzero((joint >= mass) & (joint > 0))
        own = own[np.argsort(-joint[own], kind="stable")]
        probs += [*joint[own], first[a] * float(np.delete(row, own).sum())]
        f += [a] * (own.size + 1)
        s += [*own, _REST]
    probs.append(float(np.delete(first, kept).sum()))
    f.append(_REST)
    s.append(_REST)
    p = np.asarray(probs, dtype=np.float64)
    return CellLaw(p / p.sum(), np.asarray(f, np.int64), np.asarray(s, np.int64), 2, first.size, float(mass))


@torch.inference_mode()
def exact_cell_law(
    target: CausalLM,
    prompt: Sequence[int],
    n_tokens: int = 2,
    mass: float = 1e-3,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    device: str | torch.device = "cpu",
    batch_size: int = 64,
) -> CellLaw:
    r"""The target's exact law of the next ``n_tokens`` (1 or 2) tokens after ``prompt``, on cells.

    The cells of the module docstring: one forward pass over the prompt, and for two tokens
    one over the extensions ``prompt + [a]`` of the at most ``1 / mass`` first tokens ``a``
    with :math:`p(a) \ge m` (in batches of ``batch_size``), whatever the vocabulary size.

    Parameters
    ----------
    target : model of the decoder contract (``target(ids [B, L]) -> logits [B, L, V]``)
    prompt : 1-d sequence of int token ids (non-empty)
    n_tokens : int, 1 or 2
    mass : float in (0, 1]
        A token (pair) has its own cell iff its probability is at least ``mass``.
    temperature, top_k, top_p : sampling options, as in the decoder

    Returns
    -------
    CellLaw

    Examples
    --------
    >>> import torch
    >>> class Bigram(torch.nn.Module):
    ...     vocab_size, max_seq_len = 3, 16
    ...     def forward(self, ids, cache=None, start=None):
    ...         return torch.log(torch.tensor([[.5, .5, 0.], [0., .2, .8], [1., 0., 0.]]))[ids]
    >>> law = exact_cell_law(Bigram(), [0], mass=0.2)
    >>> law.probs.round(2).tolist(), law.first.tolist(), law.second.tolist()
    ([0.25, 0.25, 0.0, 0.4, 0.1, 0.0], [0, 0, 0, 1, 1, -1], [0, 1, -1, 2, -1, -1])
    """
    from ..decoder.logits import logits_to_probs

    n_tokens = check_int(n_tokens, "n_tokens", 1)
    if n_tokens > 2:
        raise ValueError(f"n_tokens: expected 1 or 2, got {n_tokens}")
    if not 0.0 < float(mass) <= 1.0:
        raise ValueError(f"mass: expected a float in (0, 1], got {mass!r}")
    batch_size = check_int(batch_size, "batch_size", 1)
    ids = torch.as_tensor(list(prompt), dtype=torch.long, device=device)
    if ids.ndim != 1 or ids.numel() == 0:
        raise ValueError("prompt: expected a non-empty 1-d sequence of token ids")

    def law(z: torch.Tensor) -> np.ndarray:
        return logits_to_probs(z.double(), temperature, top_k, top_p).cpu().numpy()

    first = law(target(ids[None])[0, -1])  # [V]
    if n_tokens == 1:
        return _one_token_cells(first, mass)
    kept = _kept_first(first, mass)
    rows = []
    for lo in range(0, kept.size, batch_size):
        a = torch.as_tensor(kept[lo : lo + batch_size], device=device)
        ext = torch.cat([ids[None].expand(a.numel(), -1), a[:, None]], 1)
        rows.append(law(target(ext)[:, -1]))
    cond = np.concatenate(rows) if rows else np.zeros((0, first.size))
    return _two_token_cells(first, kept, cond, mass)
