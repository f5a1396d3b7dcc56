r"""Quality / speed trade-offs of lossy rules: the one-position Pareto front of (rejection, TV
loss) (:func:`pareto_front`, Yin et al. 2024, Theorem 5, proved in
:mod:`spectheory.verifiers.biased`) and the sequence-level trade-off on a chain.

**On a chain.**
For a rejection-based rule applied at every check of the speculative protocol (see
:mod:`spectheory.verifiers.biased`), this module computes the TV distance between the law
:math:`G` of the generated sequence :math:`X_{1:T}` and the target's law :math:`P_T`,

.. math:: \mathrm{TV}(G, P_T) = \sum_{x_{1:T}} (G(x) - P_T(x))_+ = E_{X \sim G}\big[(1 - P_T(X)/G(X))_+\big],

exactly by enumerating the :math:`V^T` sequences, or by Monte Carlo with the right-hand
side (an unbiased estimator: sequences are simulated and both likelihoods are exact), and
pairs it with the exact expected rejections: the data of a sequence-level front.

The likelihood :math:`G(x)` is a forward pass over the hidden *phase* of the protocol
(``i`` tokens of the round already accepted, or "bonus due"): a check in phase ``i``
emits ``x`` by acceptance (mass ``a(x)``, phase ``i + 1``, or the bonus phase / a new
round when the round is complete) or by rejection (mass ``rho P(x)``, new round); a bonus
emits ``x`` with the target's probability. With ``bonus=False`` the phase does not matter
and :math:`G` is the chain of output kernels :math:`a + \rho P`. Notation: p = target,
q = draft.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law_pair, check_int
from ..verifiers._positional import _check_gamma, round_length
from ..verifiers.rejection import RejectionRule, rule_expected_rejections

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = [
    "ParetoFront",
    "pareto_front",
    "all_sequences",
    "sequence_log_likelihoods",
    "sequence_tv",
    "sequence_front",
]

#: Largest number of sequences :func:`sequence_tv` enumerates.
MAX_SEQUENCES = 2_000_000


def all_sequences(vocab_size: int, horizon: int) -> np.ndarray:
    """Every token sequence of length ``horizon``, shape ``[V**T, T]`` (lexicographic)."""
    V = check_int(vocab_size, "vocab_size", 1)
    T = check_int(horizon, "horizon", 1)
    if V**T > MAX_SEQUENCES:
        raise ValueError(f"horizon: V**T = {V**T} sequences is too many to enumerate")
    return np.array(list(itertools.product(range(V), repeat=T)), dtype=np.int64).reshape(-1, T)


def sequence_log_likelihoods(
    chain: ChainLike,
    horizon: int,
    rule: RejectionRule,
    tokens: ArrayLike,
    gamma: int | None = None,
    bonus: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Log-likelihoods of token sequences under the rule and under the target.

    Parameters
    ----------
    tokens : array_like of int, shape (N, T)

    Returns
    -------
    log_generated, log_target : ndarray, shape (N,)
        ``-inf`` where a sequence has probability zero.
    """
    T = chain.check_horizon(horizon)
    chain.require_deterministic("sequence_log_likelihoods (sequence fronts)")
    gamma = _check_gamma(gamma)
    X = np.asarray(tokens, dtype=np.int64)
    if X.ndim != 2 or X.shape[1] != T:
        raise ValueError(f"tokens: expected shape (N, {T}), got {X.shape}")
    N = X.shape[0]
    G = T if gamma is None else min(gamma, T)
    S = chain.n_states
    init = chain.initial
    # the initial state is summed over (it is not part of the emitted sequence)
    w = np.zeros((N, S, G + 1))  # [..., G] is the bonus phase
    w[:, :, 0] = init[None, :]
    logg = np.zeros(N)
    logt = np.zeros(N)
    wt = np.broadcast_to(init, (N, S)).copy()
    cache = {}
    rows = np.arange(N)[:, None]
    for n in range(T):
        key = 0 if chain.is_homogeneous else n
        if key not in cache:
            t, d = chain.kernels(n)
            cache[key] = (t,) + rule.masses(t, d)
        t, acc, rej = cache[key]
        x = X[:, n]
        ta = t[:, x].T  # [N, S]
        aa = acc[:, x].T
        ra = rej[:, x].T
        new = np.zeros_like(w)
        new[:, :, 0] += w[:, :, G] * ta
        for i in range(G):
            wi = w[:, :, i]
            new[:, :, 0] += wi * ra
            n0 = n - i
            if n0 < 0:
                continue
            k = round_length(gamma, T, n0)
            if i >= k:
                continue
            moved = wi * aa
            if i + 1 < k:
                new[:, :, i + 1] += moved
            elif bonus and n0 + k < T:
                new[:, :, G] += moved
            else:
                new[:, :, 0] += moved
        nt = wt * ta
        # move to the next state: ns[s, x]
        ns = chain.next_state[:, x].T  # [N, S]
        w = np.zeros_like(new)
        wt2 = np.zeros_like(nt)
        np.add.at(w, (rows, ns), new)
        np.add.at(wt2, (rows, ns), nt)
        c = w.sum((1, 2))
        ct = wt2.sum(1)
        with np.errstate(divide="ignore"):
            logg += np.log(c)
            logt += np.log(ct)
        w = w / np.where(c > 0, c, 1.0)[:, None, None]
        wt = wt2 / np.where(ct > 0, ct, 1.0)[:, None]
    return logg, logt


def sequence_tv(
    chain: ChainLike, horizon: int, rule: RejectionRule, gamma: int | None = None, bonus: bool = True
) -> float:
    r"""Exact :math:`\mathrm{TV}(G, P_T)` by enumerating all :math:`V^T` sequences.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.verifiers.rejection import standard_rule
    >>> from spectheory.analysis.pareto import sequence_tv
    >>> chain = st.DecodingChain.random(2, rng=0)
    >>> bool(sequence_tv(chain, 4, standard_rule(), gamma=2, bonus=True) < 1e-12)
    True
    """
    T = chain.check_horizon(horizon)
    X = all_sequences(chain.vocab_size, T)
    lg, lt = sequence_log_likelihoods(chain, T, rule, X, gamma, bonus)
    g, t = np.exp(lg), np.exp(lt)
    return float(0.5 * np.abs(g - t).sum())


def sequence_front(
    chain: ChainLike,
    horizon: int,
    rules: Sequence[RejectionRule],
    gamma: int | None = None,
    bonus: bool = True,
    max_sequences: int = 50_000,
) -> list[dict]:
    """Exact expected rejections and sequence TV for each rule: the sequence-level front data.

    Both by enumeration of the ``V**T`` sequences (refused above ``max_sequences``; the
    Monte Carlo estimate for longer horizons is :func:`spectheory.montecarlo.sequence_tv_mc`).

    Parameters
    ----------
    rules : iterable of RejectionRule

    Returns
    -------
    list of dict
        ``name``, ``rejections``, ``sequence_tv``.
    """
    T = chain.check_horizon(horizon)
    if chain.vocab_size**T > max_sequences:
        raise ValueError(
            f"horizon: V**T = {chain.vocab_size}**{T} sequences exceed max_sequences = "
            f"{max_sequences}; use spectheory.montecarlo.sequence_tv_mc"
        )
    return [
        {
            "name": rule.name,
            "rejections": rule_expected_rejections(chain, T, rule, gamma=gamma, bonus=bonus),
            "sequence_tv": sequence_tv(chain, T, rule, gamma, bonus),
        }
        for rule in rules
    ]


@dataclass
class ParetoFront:
    """The line of optimal (rejection, TV loss) pairs: from ``(0, tv)`` to ``(tv, 0)``.

    ``mixing[j] = lambda`` gives the acceptance ``(1 - lambda) min(1, p/q) + lambda``
    that attains ``(rejection[j], loss[j]) = ((1 - lambda) tv, lambda tv)``.
    """

    tv: float
    rejection: np.ndarray
    loss: np.ndarray
    mixing: np.ndarray

    def loss_at(self, rejection: ArrayLike) -> np.ndarray:
        """Smallest achievable TV loss at a given rejection probability: ``max(tv - rho, 0)``."""
        return np.maximum(self.tv - np.asarray(rejection, dtype=np.float64), 0.0)


def pareto_front(target: ArrayLike, draft: ArrayLike, num: int = 101) -> ParetoFront:
    r"""Pareto front of (rejection probability, TV loss) over all rejection-based rules.

    Every rule satisfies :math:`\rho + \mathrm{TV}(o, p) \ge \mathrm{TV}(p, q)` (:mod:`spectheory.verifiers.biased`), and the mixtures :math:`b_\lambda` with :math:`P^*` attain equality, so the
    front is the segment :math:`\rho + L = \mathrm{TV}`, :math:`0 \le \rho \le \mathrm{TV}`.

    Parameters
    ----------
    target, draft : array_like, shape (V,)
    num : int
        Number of points on the segment (``num >= 2``).

    Examples
    --------
    >>> from spectheory.analysis.pareto import pareto_front
    >>> f = pareto_front([0.2, 0.8], [0.5, 0.5], num=3)
    >>> f.rejection.round(12).tolist(), f.loss.round(12).tolist()
    ([0.3, 0.15, 0.0], [0.0, 0.15, 0.3])
    """
    t, d = as_law_pair(target, draft)
    if t.ndim != 1:
        raise ValueError(f"target: expected a 1-d law, got shape {t.shape}")
    num = check_int(num, "num", 2)
    tv = float(0.5 * np.abs(t - d).sum())
    lam = np.linspace(0.0, 1.0, num)
    return ParetoFront(tv, (1.0 - lam) * tv, lam * tv, lam)
