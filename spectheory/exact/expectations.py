r"""Exact expectations and laws of speculative decoding on a :class:`DecodingChain`.

All results are float64 and exact up to rounding (no sampling). Notation: p = target,
q = draft. The protocol and what is counted are those of ``DESIGN.md``: a round at
position ``n0`` drafts ``k = min(gamma, T - n0)`` tokens, costs one target call and
``k`` draft steps, and is a *rejection* when it accepts fewer than ``k`` drafts; with
``bonus=True`` an all-accepted round with ``n0 + k < T`` emits one extra target token.

The engines live in :mod:`spectheory.exact` (:func:`phase_recursion` for
token-by-token rules, :func:`round_recursion` for round-level rules such as block
verification) and are re-exported here. Results are cached per chain (chains are
immutable), so the chain methods can be called repeatedly at no cost. The comparison with
Leviathan et al.'s i.i.d. formula (``leviathan_gap``, ``LeviathanGap``, ``easy_hard_chain``)
lives in :mod:`spectheory.exact.iid_gap` and is re-exported here.
"""
from __future__ import annotations

import weakref

import numpy as np

from . import (PhaseResult, blas_single_thread, calls_law, phase_recursion, phase_sequence_law, round_recursion,
                          scaled_masses, target_sequence_law, token_accept_survival,
                          token_masses, token_round_transition)
from .._validation import check_int, check_nonneg

__all__ = [
    "tv_profile", "expected_rejections", "rejection_lower_bound", "expected_target_calls",
    "expected_draft_tokens", "accepted_count_law", "expected_tokens_per_call", "target_calls_law",
    "predicted_speedup", "sequence_law", "leviathan_gap", "LeviathanGap", "protocol_result",
    "PhaseResult", "phase_recursion", "round_recursion", "token_round_transition",
    "token_masses", "scaled_masses", "phase_sequence_law", "VERIFIERS", "easy_hard_chain",
]

#: Names accepted by ``verifier=`` (a callable round transition is accepted too).
VERIFIERS = ("token", "block")

_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def tv_profile(chain, horizon) -> np.ndarray:
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


def _block_transition(chain):
    try:
        from ..verifiers.block import block_round_transition
    except ImportError as exc:  # pragma: no cover - depends on another module's progress
        raise NotImplementedError("verifier='block' needs spectheory.verifiers.block."
                                  "block_round_transition, which is not available") from exc
    return lambda n0, k, emit_bonus: block_round_transition(chain, n0, k, emit_bonus)


def protocol_result(chain, horizon, gamma, bonus=True, verifier="token") -> PhaseResult:
    """Exact :class:`PhaseResult` of one generation (cached per chain and arguments).

    ``verifier`` is ``"token"`` (phase recursion), ``"block"`` (round recursion with
    :func:`spectheory.verifiers.block.block_round_transition`) or a callable round
    transition ``(n0, k, emit_bonus) -> [S, k + 1, S]``.
    """
    T = chain.check_horizon(horizon)
    G = check_int(gamma, "gamma", 1)
    if not (callable(verifier) or verifier in VERIFIERS):
        raise ValueError(f"verifier: unknown verifier {verifier!r}; expected one of {VERIFIERS} "
                         "or a callable round transition")
    key = (T, G, bool(bonus), verifier)
    store = _CACHE.setdefault(chain, {})
    if key not in store:
        if verifier == "token":
            acc, rej = token_masses(chain)
            res = phase_recursion(chain, T, G, bonus, acc, rej, phase_dependent=False)
        elif verifier == "block":
            res = round_recursion(chain, T, G, bonus, _block_transition(chain))
        else:
            res = round_recursion(chain, T, G, bonus, verifier)
        store[key] = res
    return store[key]


def expected_rejections(chain, horizon, gamma=None, bonus=False, verifier="token") -> float:
    r"""Expected number of rejections in a generation of ``T`` tokens.

    With ``bonus=False`` and token verification every position is produced by a draft
    check whose rejection probability is ``TV(p_n, q_n)`` at the current state, and the
    output follows the target, so (Yin et al. 2024, Theorem 1)

    .. math:: E[\text{rejections}] = \sum_{n=1}^{T} E_{s \sim p}[\mathrm{TV}(p_n(\cdot|s), q_n(\cdot|s))],

    independent of ``gamma`` (returned as ``tv_profile(T).sum()``; the tests check it
    against the phase recursion for several ``gamma``). With ``bonus=True`` bonus tokens
    skip the check, the count depends on ``gamma`` (required) and the sum above is an
    upper bound. Other verifiers need ``gamma``.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.8, 0.2])
    >>> round(chain.expected_rejections(4), 12)
    1.2
    """
    if verifier == "token" and not bonus:
        if gamma is not None:
            check_int(gamma, "gamma", 1)
        return float(tv_profile(chain, horizon).sum())
    if gamma is None:
        raise ValueError("gamma: required when bonus=True or verifier != 'token'")
    return protocol_result(chain, horizon, gamma, bonus, verifier).rejections


def rejection_lower_bound(chain, horizon) -> float:
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


def expected_target_calls(chain, horizon, gamma, bonus=True, verifier="token") -> float:
    """Expected number of target calls (rounds) to generate ``T`` tokens.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])  # always accepted
    >>> chain.expected_target_calls(10, 4)  # rounds emit 5, 5 tokens
    2.0
    """
    return protocol_result(chain, horizon, gamma, bonus, verifier).target_calls


def expected_draft_tokens(chain, horizon, gamma, bonus=True, verifier="token") -> float:
    """Expected draft forward steps: each round at ``n0`` drafts ``min(gamma, T - n0)``.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])
    >>> chain.expected_draft_tokens(7, 4)  # rounds at 0 (4 drafts) and 5 (2 drafts)
    6.0
    """
    return protocol_result(chain, horizon, gamma, bonus, verifier).draft_tokens


def accepted_count_law(chain, horizon, gamma, bonus=True, per_state=False) -> np.ndarray:
    r"""Law of the number ``J`` of accepted drafts in a round (token verification).

    ``per_state=False``: pooled over the rounds of a generation,
    ``E[#rounds with J = j] / E[#rounds]``, shape ``[gamma + 1]`` (what a Monte Carlo
    histogram of all rounds estimates; truncated rounds near the end included).

    ``per_state=True``: the law given the round's start state. Homogeneous chains:
    a full, untruncated round, shape ``[S, gamma + 1]`` (``horizon`` and ``bonus``
    unused). Inhomogeneous chains: the round started at position ``n0`` as the protocol
    runs it (``k = min(gamma, T - n0)``), shape ``[T, S, gamma + 1]``.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])  # acceptance 1/2
    >>> chain.accepted_count_law(10, 2, per_state=True).tolist()
    [[0.5, 0.25, 0.25]]
    """
    if per_state:
        return token_accept_survival(chain, horizon, gamma)
    return protocol_result(chain, horizon, gamma, bonus).accepted_count_law


def target_calls_law(chain, horizon, gamma, bonus=True) -> np.ndarray:
    """Exact law of the number of target calls in a generation (token verification), shape ``[T + 1]``.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])
    >>> target_calls_law(chain, 3, 2).tolist()  # acceptance 1/2, gamma = 2, T = 3
    [0.0, 0.25, 0.5, 0.25]
    """
    acc, rej = token_masses(chain)
    return calls_law(chain, horizon, gamma, bonus, acc, rej)


def expected_tokens_per_call(chain, horizon, gamma, bonus=True, verifier="token",
                             per_generation=False) -> float:
    r"""Tokens per target call: ``T / E[calls]`` (default) or ``E[T / calls]``.

    ``T / E[calls]`` (a ratio of expectations) equals the mean number of tokens per
    round pooled over rounds (total tokens over total rounds, what long runs and the
    Monte Carlo summary measure). ``per_generation=True`` gives the mean over
    generations of each generation's own ratio, ``E[T / calls]``, which is larger by
    Jensen's inequality; it is computed from :func:`target_calls_law` (token
    verification only; moderate ``T * S``).
    Leviathan's formula is the pooled mean of an untruncated round under i.i.d.
    acceptance; the end of the horizon truncates the last rounds, so even a one-state
    chain gives a slightly smaller value at finite ``T``.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])
    >>> chain.expected_tokens_per_call(10, 4)
    5.0
    """
    if per_generation:
        if verifier != "token":
            raise ValueError("per_generation: only available for verifier='token'")
        T = chain.check_horizon(horizon)
        law = target_calls_law(chain, T, gamma, bonus)
        c = np.arange(1, T + 1)
        return float(law[1:] @ (T / c))
    return protocol_result(chain, horizon, gamma, bonus, verifier).tokens_per_call


def predicted_speedup(chain, horizon, gamma, c, bonus=True, verifier="token") -> float:
    r"""Predicted walltime speedup over plain decoding.

    .. math:: \frac{T\, t_\text{target}}{E[\text{calls}]\, t_\text{target} + E[\text{draft tokens}]\, t_\text{draft}}
              = \frac{T}{E[\text{calls}] + c\, E[\text{draft tokens}]}, \quad c = t_\text{draft} / t_\text{target}.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])
    >>> chain.predicted_speedup(10, 4, 0.0)
    5.0
    """
    cc = float(check_nonneg(c, "c"))
    res = protocol_result(chain, horizon, gamma, bonus, verifier)
    return res.horizon / (res.target_calls + cc * res.draft_tokens)


def sequence_law(chain, horizon, gamma=None, bonus=True, method="speculative",
                 max_elements=2 ** 24) -> np.ndarray:
    r"""Exact law of the ``T`` generated tokens, by enumeration of all ``V**T`` sequences.

    ``method="target"``: plain sampling from the target. ``method="speculative"``:
    the protocol with token verification (``gamma`` required), computed by the phase
    recursion on the state augmented with the prefix. Losslessness says both are equal.

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
    acc, rej = token_masses(chain)
    return phase_sequence_law(chain, horizon, gamma, bonus, acc, rej, max_elements)


_MOVED = ("leviathan_gap", "LeviathanGap", "easy_hard_chain")


def __getattr__(name):
    """Re-export the i.i.d.-formula comparison from :mod:`spectheory.exact.iid_gap` (lazily: that
    module imports this one)."""
    if name in _MOVED:
        from . import iid_gap
        return getattr(iid_gap, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
