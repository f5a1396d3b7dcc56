r"""The best configuration per batch size, the crossover, and the error of a constant ``c`` (``docs/cost.md`` §5).

For each batch size ``B`` a configuration (a draft length ``gamma``, a tree, any round) has the
speedup over plain decoding at the same batch

.. math:: S_B = \frac{T\,a_B}{E[\text{time}_B]}, \qquad a_B = f_T(B, 1, L),

and its throughput is ``B T / E[time_B]`` (:meth:`spectheory.exact.ExactResult.throughput`), so
the best configuration at ``B`` maximises both. Plain decoding has ``S_B = 1``: speculation
loses at ``B`` when the best ``S_B < 1``, and the **crossover** is the smallest such ``B``.

The acceptance side comes from either

* a number ``alpha`` (i.i.d. acceptance, Leviathan et al.'s long-run closed form: a path of
  ``gamma`` emits :math:`(1 - \alpha^{\gamma+1}) / (1 - \alpha)` tokens per round), or
* a chain (anything with ``protocol(horizon, round)``, e.g. a
  :class:`~spectheory.DecodingChain`): the exact expectations of one generation of ``horizon``
  tokens.

The constant-``c`` prediction (Leviathan's model: ``c = c_1 / a_1`` measured at batch 1, target
calls of cost 1 at every batch) recommends one ``gamma^c`` and one speedup whatever the batch;
:attr:`BatchOptimum.constant_c_error` is its predicted speedup over what its recommendation
achieves under the cost model at each ``B``.

This module reads chains through their ``protocol`` method only (the room :mod:`spectheory.cost`
sits below the engines); the optimal draft-length *policy* per batch size is in
:mod:`spectheory.stopping.lockstep`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .round_cost import ConstantCost, CostModel

__all__ = ["BatchOptimum", "optimal_gamma", "optimal_round", "speedup_table", "crossover_batch"]


def _batches(batches: Any) -> np.ndarray:
    b = np.atleast_1d(np.asarray(batches))
    if b.ndim != 1 or b.size == 0 or np.any(b < 1) or np.any(b != np.round(b)):
        raise ValueError(f"batches: expected batch sizes (integers >= 1), got {batches!r}")
    return b.astype(np.int64)


def _model(model: Any) -> CostModel:
    if not isinstance(model, CostModel):
        raise ValueError(f"model: expected a CostModel (spectheory.cost), got {type(model).__name__}")
    return model


def _iid_tokens(alpha: float, gamma: int) -> float:
    return float(gamma + 1) if alpha == 1.0 else (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def speedup_table(
    source: Any,
    model: CostModel,
    gammas: Sequence[int] | np.ndarray,
    batches: Sequence[int] | np.ndarray,
    *,
    context: float = 0.0,
    horizon: int | None = None,
) -> np.ndarray:
    r"""Speedup ``S_B(gamma)`` over plain decoding, shape ``[len(batches), len(gammas)]``.

    Parameters
    ----------
    source : float or chain
        An i.i.d. acceptance rate ``alpha`` in ``[0, 1]`` (long run, closed form) or a chain
        (``source.protocol(horizon, gamma)``, exact over ``horizon`` tokens).
    model : CostModel
    gammas, batches : sequences of int >= 1
    context : float
        Cached tokens per row.
    horizon : int
        Tokens per generation (chains only).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.cost import ConstantCost, named_cost, speedup_table
    >>> s = speedup_table(0.8, ConstantCost(0.05), [1, 4], [1, 64])
    >>> np.round(s[0], 4).tolist(), bool((s[0] == s[1]).all())  # a constant c ignores the batch
    ([1.7143, 2.8013], True)
    >>> s = speedup_table(0.8, named_cost("llama2-7b/68m-h200"), [4], [1, 1024])
    >>> np.round(s[:, 0], 3).tolist()  # memory-bound at B = 1, compute-bound at B = 1024
    [3.231, 0.667]
    """
    model, B = _model(model), _batches(batches)
    g = np.asarray(list(gammas), dtype=np.int64)
    if g.ndim != 1 or g.size == 0 or g.min() < 1:
        raise ValueError(f"gammas: expected draft lengths >= 1, got {gammas!r}")
    out = np.empty((B.size, g.size))
    if np.ndim(source) == 0 and not hasattr(source, "protocol"):
        alpha = float(source)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"source: an acceptance rate must lie in [0, 1], got {source!r}")
        for i, b in enumerate(B):
            a = model.autoregressive(int(b), context)
            for j, gamma in enumerate(g):
                out[i, j] = a * _iid_tokens(alpha, int(gamma)) / model.round_time(int(gamma), int(b), context)
        return out
    if not hasattr(source, "protocol"):
        raise ValueError(f"source: expected an acceptance rate or a chain, got {type(source).__name__}")
    if horizon is None:
        raise ValueError("horizon: required with a chain (tokens per generation)")
    results = [source.protocol(horizon, int(gamma)) for gamma in g]
    for i, b in enumerate(B):
        out[i] = [r.speedup(model, batch=int(b), context=context) for r in results]
    return out


def crossover_batch(
    best_speedup: Sequence[float] | np.ndarray, batches: Sequence[int] | np.ndarray
) -> int | None:
    """The smallest batch size whose best speedup is below 1 (speculation loses), or None.

    >>> crossover_batch([2.1, 1.3, 0.9, 0.7], [1, 16, 256, 4096])
    256
    >>> crossover_batch([2.1, 1.3], [1, 16]) is None
    True
    """
    s, B = np.asarray(best_speedup, dtype=np.float64), _batches(batches)
    if s.shape != B.shape:
        raise ValueError(f"best_speedup: expected one value per batch size ({B.size}), got shape {s.shape}")
    order = np.argsort(B)
    losing = np.flatnonzero(s[order] < 1.0)
    return None if losing.size == 0 else int(B[order][losing[0]])


@dataclass(frozen=True)
class BatchOptimum:
    """The best draft length at each batch size, and what a constant ``c`` would predict.

    Attributes
    ----------
    batches, gammas : ndarray of int
    speedup : ndarray, shape (len(batches), len(gammas))
        ``S_B(gamma)`` under the cost model.
    best_gamma : ndarray of int, shape (len(batches),)
    best_speedup : ndarray, shape (len(batches),)
    crossover : int or None
        Smallest batch size where even the best ``gamma`` loses to plain decoding.
    constant_c : float
        ``c_1 / a_1``: the draft/target cost ratio at batch 1 (Leviathan's ``c``).
    constant_c_gamma : int
        The draft length the constant-``c`` model recommends (at every batch).
    constant_c_speedup : float
        The speedup it predicts (at every batch).
    constant_c_error : ndarray, shape (len(batches),)
        ``constant_c_speedup / S_B(constant_c_gamma)``: how far the constant-``c`` prediction
        is from what its recommendation achieves under the cost model.
    """

    batches: np.ndarray
    gammas: np.ndarray
    speedup: np.ndarray
    best_gamma: np.ndarray
    best_speedup: np.ndarray
    crossover: int | None
    constant_c: float
    constant_c_gamma: int
    constant_c_speedup: float
    constant_c_error: np.ndarray

    def throughput(self, model: CostModel, context: float = 0.0) -> np.ndarray:
        """Batch tokens per second of the best ``gamma`` at each batch size:
        ``B S_B / a_B`` (``a_B`` plain decoding's seconds per token)."""
        a = np.array([model.autoregressive(int(b), context) for b in self.batches])
        return self.batches * self.best_speedup / a


def optimal_gamma(
    source: Any,
    model: CostModel,
    batches: Sequence[int] = (1, 4, 16, 64, 256, 1024, 4096),
    *,
    gammas: Sequence[int] = tuple(range(1, 17)),
    context: float = 0.0,
    horizon: int | None = None,
) -> BatchOptimum:
    r"""The best draft length per batch size, the crossover, and the constant-``c`` error.

    ``source``, ``model``, ``context`` and ``horizon`` as in :func:`speedup_table`. The
    constant-``c`` prediction uses ``c = f_D(1, 1, L) / f_T(1, 1, L)`` and ``t = 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.cost import named_cost, optimal_gamma
    >>> opt = optimal_gamma(0.8, named_cost("llama2-7b/68m-h200"), [1, 64, 1024])
    >>> opt.best_gamma.tolist(), opt.crossover, opt.constant_c_gamma
    ([14, 2, 1], 1024, 14)
    >>> np.round(opt.constant_c_error, 2).tolist()  # its gamma = 14 at B = 1024: 13x slower than predicted
    [1.0, 4.2, 13.27]
    """
    model, B = _model(model), _batches(batches)
    g = np.asarray(list(gammas), dtype=np.int64)
    table = speedup_table(source, model, g, B, context=context, horizon=horizon)
    best = table.argmax(1)
    c1 = model.draft_step(1, context) / model.autoregressive(1, context)
    constant = speedup_table(source, ConstantCost(c1), g, [1], horizon=horizon)[0]
    jc = int(constant.argmax())
    return BatchOptimum(
        batches=B,
        gammas=g,
        speedup=table,
        best_gamma=g[best],
        best_speedup=table[np.arange(B.size), best],
        crossover=crossover_batch(table.max(1), B),
        constant_c=float(c1),
        constant_c_gamma=int(g[jc]),
        constant_c_speedup=float(constant[jc]),
        constant_c_error=constant[jc] / table[:, jc],
    )


def optimal_round(
    chain: Any,
    rounds: Sequence[Any],
    model: CostModel,
    batches: Sequence[int],
    horizon: int,
    *,
    context: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The best of candidate rounds (draft lengths, trees, ``Round`` objects) at each batch size.

    Each candidate is computed once (``chain.protocol(horizon, round)``) and costed at every
    batch size; a tree is drafted level by level under ``model`` (``docs/cost.md`` §1).

    Returns
    -------
    best : ndarray of int, shape (len(batches),)
        Index of the best candidate per batch size.
    best_speedup : ndarray, shape (len(batches),)
    speedup : ndarray, shape (len(batches), len(rounds))

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.cost import named_cost, optimal_round
    >>> chain = st.DecodingChain.random(8, concentration=0.5, similarity=0.4, rng=0)
    >>> trees = [st.DraftTree.from_branching([1] * 3), st.DraftTree.from_branching([4, 2, 1])]
    >>> best, s, _ = optimal_round(chain, trees, named_cost("llama2-7b/68m-h200"), [1, 16, 64], 64)
    >>> best.tolist()  # the wide tree at batch 1, the path once the calls turn compute-bound
    [1, 0, 0]
    """
    model, B = _model(model), _batches(batches)
    if len(rounds) == 0:
        raise ValueError("rounds: expected at least one candidate")
    results = [chain.protocol(horizon, r) for r in rounds]
    table = np.array([[r.speedup(model, batch=int(b), context=context) for r in results] for b in B])
    best = table.argmax(1)
    return best, table[np.arange(B.size), best], table
