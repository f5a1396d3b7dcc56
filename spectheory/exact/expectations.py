r"""Exact expectations and laws of speculative decoding on a chain.

All results are float64 and exact up to rounding (no sampling). Notation: p = target,
q = draft. The protocol and what is counted are in ``docs/protocol.md``: a round at
position ``n0`` drafts ``k = min(gamma, T - n0)`` tokens, costs one target call and
``k`` draft steps, and is a *rejection* when it accepts fewer than ``k`` drafts; with
``bonus=True`` (the default everywhere) an all-accepted round with ``n0 + k < T`` emits one
extra target token.

:func:`protocol_result` runs a rule's exact engine (``verifier.exact``: the phase recursion
for token-by-token rules, the round recursion for whole-round rules) and caches the
:class:`~spectheory.exact.ProtocolResult` per chain (chains are immutable), so the
:class:`~spectheory.DecodingChain` methods, which are views of it, cost nothing when
called again. This module never imports :mod:`spectheory.chain` or
:mod:`spectheory.verifiers`: the chain hands it a resolved rule object.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import TYPE_CHECKING

import numpy as np

from .._guards import check_bool, check_int
from .parts import ProtocolResult, blas_single_thread, token_masses
from .phase import calls_law, token_accept_survival
from .sequence_laws import phase_sequence_law, target_sequence_law

if TYPE_CHECKING:
    from .._protocols import ChainLike, ExactRule

__all__ = [
    "tv_profile",
    "rejection_lower_bound",
    "protocol_result",
    "accepted_count_per_state",
    "target_calls_law",
    "tokens_per_call_per_generation",
    "sequence_law",
]

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MAX_PAD = 1 << 20  # gamma from which accepted_counts is not padded to gamma + 1 entries


def tv_profile(chain: ChainLike, horizon: int) -> np.ndarray:
    r"""Expected TV between target and draft at each position under target prefixes.

    .. math:: \mathrm{tv}_n = E_{s_{n-1} \sim p}\big[\mathrm{TV}(p_n(\cdot|s_{n-1}), q_n(\cdot|s_{n-1}))\big], \quad n = 1..T.

    Returns
    -------
    ndarray, shape (T,)

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.8, 0.2])
    >>> chain.tv_profile(3).round(6).tolist()
    [0.3, 0.3, 0.3]
    """
    T = chain.check_horizon(horizon)
    with blas_single_thread(chain.n_states):
        marg = chain.state_marginals(T)
    tvs = chain.tv_table
    if chain.is_homogeneous:
        return marg @ tvs
    return np.einsum("ns,ns->n", marg, tvs[:T])


def protocol_result(
    chain: ChainLike, horizon: int, gamma: int, bonus: bool, verifier: ExactRule
) -> ProtocolResult:
    """Exact :class:`~spectheory.exact.ProtocolResult` of one generation (cached per chain,
    arguments and rule).

    ``verifier`` is a rule object with an ``exact(chain, horizon, gamma, bonus)`` method (a
    :class:`spectheory.verifiers.Verifier`; :meth:`DecodingChain.protocol` resolves names).
    A round drafts ``k = min(gamma, T - n0) <= T`` tokens, so any ``gamma > T`` behaves as
    ``gamma = T`` (computed so; ``accepted_counts`` is padded with zeros to ``gamma + 1``
    entries, or kept at ``T + 1`` entries when ``gamma >= 2**20``).
    """
    T = chain.check_horizon(horizon)
    G = check_int(gamma, "gamma", 1)
    bonus = check_bool(bonus, "bonus")
    if not callable(getattr(verifier, "exact", None)):
        raise ValueError(f"verifier: expected a rule object with an exact() method, got {verifier!r}")
    key = (T, G, bonus, verifier)
    store = _CACHE.setdefault(chain, {})
    if key not in store:
        g_run = min(G, T)  # the engines' arrays grow with gamma: 10**9 would allocate gigabytes
        res = verifier.exact(chain, T, g_run, bonus)
        if g_run < G:  # counts j > T are impossible: pad them with zeros unless that is itself huge
            counts = res.accepted_counts if G >= _MAX_PAD else np.pad(res.accepted_counts, (0, G - g_run))
            res = dataclasses.replace(res, gamma=G, accepted_counts=counts)
        store[key] = res
    return store[key]


def rejection_lower_bound(chain: ChainLike, horizon: int) -> float:
    r"""Lower bound on expected rejections of any unbiased rejection-based verifier.

    Yin et al. (2024), Theorem 2: :math:`\sum_{n=1}^{T} E_{s \sim p}[\mathrm{TV}(p_n, q_n)]`,
    attained by standard token verification (``bonus=False`` counting).

    Proof. Fix a position and a state; write ``t = p_n(.|s)``, ``d = q_n(.|s)``. A
    rejection-based verifier draws ``x ~ d``, accepts it with probability ``b(x)`` and
    otherwise (probability ``rho = 1 - sum_x d(x) b(x)``) emits a token from some law
    ``P``. Its output law is ``d b + rho P``; unbiased means ``d b + rho P = t``. Since
    ``rho P >= 0``, ``d(x) b(x) <= t(x)``, and ``d(x) b(x) <= d(x)`` as ``b <= 1``, so
    ``d b <= min(d, t)`` pointwise and ``1 - rho = sum d b <= sum min(d, t) = 1 - TV(t, d)``,
    i.e. ``rho >= TV(t, d)``. Unbiasedness makes every emitted prefix target-distributed,
    so the state before position ``n`` follows the target marginal whatever the
    verifier; with every position produced by one check (``bonus=False``) the expected
    number of rejections is ``sum_n E[rho_n] >= sum_n E[TV(p_n, q_n)]``. Token
    verification has ``b = min(1, t/d)``, ``d b = min(d, t)``: equality. QED.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.8, 0.2])
    >>> round(chain.rejection_lower_bound(5), 12)
    1.5
    """
    return float(tv_profile(chain, horizon).sum())


def accepted_count_per_state(chain: ChainLike, horizon: int, gamma: int) -> np.ndarray:
    r"""Law of the number ``J`` of accepted drafts in a round given its start state (token
    verification).

    Homogeneous chains: a full, untruncated round, shape ``[S, gamma + 1]`` (``horizon``
    unused). Inhomogeneous chains: the round started at position ``n0`` as the protocol
    runs it (``k = min(gamma, T - n0)``), shape ``[T, S, gamma + 1]``. The law pooled over the
    rounds of a generation is ``chain.protocol(T, gamma).accepted_count_law``.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])  # acceptance 1/2
    >>> chain.accepted_count_law(10, 2, per_state=True).tolist()
    [[0.5, 0.25, 0.25]]
    """
    return token_accept_survival(chain, horizon, gamma)


def _phase_masses(chain, verifier):
    if verifier is None:
        return token_masses(chain)
    masses = verifier.phase_masses(chain)
    if masses is None:
        raise NotImplementedError(
            f"verifier: {verifier!r} has no phase_masses; this law needs a token-by-token rule"
        )
    return masses[0], masses[1]


def target_calls_law(
    chain: ChainLike, horizon: int, gamma: int, bonus: bool = True, verifier: ExactRule | None = None
) -> np.ndarray:
    """Exact law of the number of target calls in a generation, shape ``[T + 1]``.

    ``verifier``: a token-by-token rule object (with ``phase_masses``); default token
    verification.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])
    >>> target_calls_law(chain, 3, 2).tolist()  # acceptance 1/2, gamma = 2, T = 3
    [0.0, 0.25, 0.5, 0.25]
    """
    acc, rej = _phase_masses(chain, verifier)
    return calls_law(chain, horizon, gamma, bonus, acc, rej)


def tokens_per_call_per_generation(
    chain: ChainLike, horizon: int, gamma: int, bonus: bool = True, verifier: ExactRule | None = None
) -> float:
    r"""``E[T / calls]``: the mean over generations of each generation's tokens per call.

    Larger than the pooled ``T / E[calls]`` (``ProtocolResult.tokens_per_call``, what long runs
    and the Monte Carlo summary measure) by Jensen's inequality; computed from
    :func:`target_calls_law` (token-by-token rules; moderate ``T * S``).

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])
    >>> chain.expected_tokens_per_call(10, 4, per_generation=True)
    5.0
    """
    T = chain.check_horizon(horizon)
    law = target_calls_law(chain, T, gamma, bonus, verifier)
    c = np.arange(1, T + 1)
    return float(law[1:] @ (T / c))


def sequence_law(
    chain: ChainLike,
    horizon: int,
    gamma: int | None = None,
    bonus: bool = True,
    method: str = "speculative",
    max_elements: int = 2**24,
    verifier: ExactRule | None = None,
) -> np.ndarray:
    r"""Exact law of the ``T`` generated tokens, by enumeration of all ``V**T`` sequences.

    ``method="target"``: plain sampling from the target. ``method="speculative"``:
    the protocol (``gamma`` required) with ``verifier`` (a token-by-token rule object with
    ``phase_masses``; default: token verification), computed by the phase recursion on the
    state augmented with the prefix. Losslessness says both are equal.

    Returns
    -------
    ndarray, shape (V,) * T
        ``law[x_1, ..., x_T]``.

    Raises
    ------
    ValueError
        If ``V**T * (gamma + 1) * S`` exceeds ``max_elements``, or bad arguments.

    Examples
    --------
    >>> import numpy as np, spectheory as st
    >>> chain = st.DecodingChain.random(2, rng=0)
    >>> spec = chain.sequence_law(3, gamma=2)
    >>> bool(np.abs(spec - chain.sequence_law(3, method="target")).max() < 1e-15)
    True
    """
    if method == "target":
        return target_sequence_law(chain, horizon, max_elements)
    if method != "speculative":
        raise ValueError(f"method: expected 'speculative' or 'target', got {method!r}")
    if gamma is None:
        raise ValueError("gamma: required for method='speculative'")
    acc, rej = _phase_masses(chain, verifier)
    return phase_sequence_law(chain, horizon, gamma, bonus, acc, rej, max_elements)
