r"""Exact recursions for the speculative decoding protocol on a :class:`DecodingChain`.

Two engines, both linear in the horizon ``T``:

* :func:`phase_recursion` -- for rules that verify draft tokens one position at a time
  (token verification, scaled and biased acceptance). It tracks the mass

  .. math:: Q_n[i, s] = P(\text{position } n,\ i \text{ drafts of the current round already
            accepted},\ \text{state } s)

  and moves it forward with vectorised matrix products ``Q[:gamma] @ M`` against the
  transition operators (:meth:`DecodingChain.transition_operator`) of the accept and
  reject masses and of the target kernel (bonus tokens).
* :func:`round_recursion` -- for rules that act on whole rounds (block verification):
  it moves the mass of round starts ``R_n[s]`` with a round transition
  ``Q[s, j, s']`` (dense, small ``S``).

Protocol (``DESIGN.md``): a round starting at position ``n0`` (``n0`` tokens emitted)
drafts ``k = min(gamma, T - n0)`` tokens. Its phase at position ``n`` is ``i = n - n0``.
It ends by a rejection at phase ``j < k`` (one token from the rejection law, next
round at ``n0 + j + 1``) or with all ``k`` accepted; then, if ``bonus`` and
``n0 + k < T``, one bonus token from the target (next round at ``n0 + k + 1``),
otherwise the next round starts at ``n0 + k``. Because ``i == k`` happens exactly
when ``i == gamma`` or ``n == T``, every phase ``i < gamma`` at a position ``n < T``
drafts, and the all-accepted event is read off at phase ``gamma`` (or at ``n = T``).
"""
from __future__ import annotations

import functools
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._validation import check_int

#: Work (``T * gamma * S**2``) above which a progress bar appears by default.
PROGRESS_WORK = 2e10

#: Up to this many states the per-position products are too small for BLAS threads to pay;
#: on a busy machine extra BLAS threads slow them down by up to 10x, so the recursions run
#: them single-threaded.
SINGLE_THREAD_STATES = 4096


def blas_single_thread(S):
    """Context limiting BLAS to one thread while ``S <= SINGLE_THREAD_STATES``."""
    if S > SINGLE_THREAD_STATES:
        return nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return nullcontext()
    return threadpool_limits(1, user_api="blas")


def _single_threaded(fn):
    @functools.wraps(fn)
    def wrapper(chain, *args, **kwargs):
        with blas_single_thread(chain.n_states):
            return fn(chain, *args, **kwargs)
    return wrapper

__all__ = ["PhaseResult", "phase_recursion", "round_recursion", "token_round_transition",
           "token_masses", "scaled_masses", "token_accept_survival", "phase_sequence_law",
           "target_sequence_law", "calls_law"]

_ROW_TOL = 1e-6


@dataclass(frozen=True)
class PhaseResult:
    r"""Exact expectations of one generation of ``horizon`` tokens.

    Attributes
    ----------
    horizon, gamma : int
    bonus : bool
    round_starts : ndarray, shape (T, S)
        ``round_starts[n, s]`` = P(a round starts at position ``n`` in state ``s``);
        its total is the expected number of target calls.
    rejection_by_position : ndarray, shape (T,)
        P(the token at kernel index ``n`` is emitted by a rejection).
    accepted_counts : ndarray, shape (gamma + 1,)
        ``E[#rounds whose accepted count is j]`` (truncated rounds included: a round
        with ``k < gamma`` that accepts everything counts at ``j = k``).
    bonus_tokens : float
        Expected number of bonus tokens.
    check_mass : ndarray, shape (T, S), or None
        ``check_mass[n, s]`` = P(position ``n`` is a draft check in state ``s``), all
        phases (:func:`phase_recursion` only; ``None`` from :func:`round_recursion`).
    """

    horizon: int
    gamma: int
    bonus: bool
    round_starts: np.ndarray
    rejection_by_position: np.ndarray
    accepted_counts: np.ndarray
    bonus_tokens: float
    check_mass: np.ndarray | None = None

    @property
    def round_start_prob(self) -> np.ndarray:
        """P(a round starts at position ``n``), shape ``[T]``."""
        return self.round_starts.sum(-1)

    @property
    def target_calls(self) -> float:
        """Expected number of rounds (target calls)."""
        return float(self.round_starts.sum())

    @property
    def draft_tokens(self) -> float:
        """Expected draft forward steps: ``sum_n P(start at n) * min(gamma, T - n)``."""
        k = np.minimum(self.gamma, self.horizon - np.arange(self.horizon))
        return float(self.round_start_prob @ k)

    @property
    def rejections(self) -> float:
        """Expected number of rounds ended by a rejection."""
        return float(self.rejection_by_position.sum())

    @property
    def accepted(self) -> float:
        """Expected number of accepted draft tokens."""
        return float(np.arange(self.gamma + 1) @ self.accepted_counts)

    @property
    def accepted_count_law(self) -> np.ndarray:
        """Accepted count of a round, pooled over the rounds: ``accepted_counts / target_calls``."""
        return self.accepted_counts / self.accepted_counts.sum()

    @property
    def tokens_per_call(self) -> float:
        """``T / E[calls]`` (= total tokens over total rounds, pooled)."""
        return self.horizon / self.target_calls


# ----------------------------------------------------------------- operators
class _MassOps:
    """Transition operators of a mass provider, cached by (position, phase) key."""

    def __init__(self, chain, mass, name, position_dependent, phase_dependent):
        self.chain, self.name = chain, name
        S, V = chain.n_states, chain.vocab_size
        if callable(mass):
            self.fn = mass
            self.pos = (not chain.is_homogeneous) if position_dependent is None else bool(position_dependent)
            self.phase = bool(phase_dependent)
        else:
            arr = np.asarray(mass, dtype=np.float64)
            if arr.shape == (S, V):
                self.fn, self.pos, self.phase = (lambda n, i: arr), False, False
            elif arr.ndim == 3 and arr.shape[1:] == (S, V):
                self.fn, self.pos, self.phase = (lambda n, i: arr[n]), True, False
            else:
                raise ValueError(f"{name}: expected a callable or an array of shape ({S}, {V}) "
                                 f"or (T, {S}, {V}), got {arr.shape}")
        self.cache: dict = {}

    def key(self, n, i):
        return (n if self.pos else 0, i if self.phase else 0)

    def mass(self, n, i):
        m = np.asarray(self.fn(n, i), dtype=np.float64)
        S, V = self.chain.n_states, self.chain.vocab_size
        if m.shape != (S, V):
            raise ValueError(f"{self.name}: expected shape ({S}, {V}) at n={n}, i={i}, got {m.shape}")
        if not np.all(np.isfinite(m)) or np.any(m < 0):
            raise ValueError(f"{self.name}: entries must be finite and >= 0 (n={n}, i={i})")
        return m

    def get(self, n, i):
        """``(op, rowsum)``: operator for ``vec @ op`` (dense or CSR) and the row sums ``[S]``."""
        key = self.key(n, i)
        hit = self.cache.get(key)
        if hit is None:
            m = self.mass(n, i)
            hit = (self.chain.transition_operator(m), m.sum(-1))
            if self.pos:
                self.cache.clear()  # keep only the current position's operators
            self.cache[key] = hit
        return hit


def _vm(x, op):
    """Row vectors ``x`` ([S] or [r, S]) times an operator (dense ndarray or sparse)."""
    if sp.issparse(op):
        return np.asarray((op.T @ np.asarray(x).T).T)
    return x @ op


def _check_rows(acc_sum, rej_sum, n, i):
    bad = np.abs(acc_sum + rej_sum - 1.0) > _ROW_TOL
    if np.any(bad):
        s = int(np.argmax(bad))
        raise ValueError(f"accept_mass + reject_mass: rows must sum to 1 (accept or reject), got "
                         f"{acc_sum[s] + rej_sum[s]:.10g} at n={n}, i={i}, state {s}")


def _positions(T, G, S, progress, desc):
    show = (T * G * float(S) ** 2 > PROGRESS_WORK) if progress is None else bool(progress)
    if not show:
        return range(T)
    from tqdm.auto import tqdm
    return tqdm(range(T), desc=desc, leave=False)


def _check_gamma(gamma):
    return check_int(gamma, "gamma", 1)


# ------------------------------------------------------------ phase engine
@_single_threaded
def phase_recursion(chain, horizon, gamma, bonus, accept_mass, reject_mass, *,
                    position_dependent=None, phase_dependent=True, progress=None) -> PhaseResult:
    r"""Exact expectations of a position-by-position verifier, by the phase recursion.

    Parameters
    ----------
    chain : DecodingChain
    horizon : int
        Tokens per generation ``T`` (at most ``chain.max_horizon``).
    gamma : int
        Draft length ``>= 1``.
    bonus : bool
        Whether an all-accepted round emits one bonus token from the target.
    accept_mass, reject_mass : callable ``(n, i) -> [S, V]`` or array ``[S, V]`` / ``[T, S, V]``
        ``accept_mass(n, i)[s, x]``: mass of "draft token ``x`` proposed and accepted" at
        kernel index ``n`` in state ``s`` when ``i`` drafts of the round are already
        accepted; ``reject_mass(n, i)[s, x]``: mass of "rejected, and ``x`` emitted
        instead". Each row of ``accept + reject`` must sum to 1. Standard token
        verification: ``min(target, draft)`` and ``max(target - draft, 0)``
        (:func:`token_masses`).
    position_dependent : bool, optional
        Whether a callable's value depends on ``n``. Default: ``not chain.is_homogeneous``;
        otherwise operators are built once.
    phase_dependent : bool
        Whether a callable's value depends on ``i`` (default True; False lets the
        engine move all phases with one matrix product).
    progress : bool, optional
        Show a tqdm bar over positions (default: only for large problems).

    Returns
    -------
    PhaseResult

    Notes
    -----
    Per position ``n < T``: the phase-``gamma`` mass (all ``gamma`` accepted) ends its
    round -- bonus: ``Q[gamma] @ P_target`` starts a round at ``n + 1``; no bonus: it is
    added to ``Q[0]`` (a round starts at ``n``). Then
    ``Q_{n+1}[1:] = Q_n[:gamma] @ A`` and ``Q_{n+1}[0] = Q_n[:gamma] @ R`` (+ bonus).
    At ``n = T`` phase ``i >= 1`` mass is a round truncated to ``k = i`` that accepted
    everything. Cost: ``T`` products of ``[gamma, S] @ [S, S]`` plus two vector-matrix
    products per position.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory._recursions import phase_recursion, token_masses
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.9, 0.1])
    >>> acc, rej = token_masses(chain)
    >>> res = phase_recursion(chain, 3, 1, False, acc, rej)
    >>> round(res.rejections, 12)  # = 3 * TV = 3 * 0.4
    1.2
    """
    T = chain.check_horizon(horizon)
    G = _check_gamma(gamma)
    bonus = bool(bonus)
    S = chain.n_states
    A = _MassOps(chain, accept_mass, "accept_mass", position_dependent, phase_dependent)
    R = _MassOps(chain, reject_mass, "reject_mass", position_dependent, phase_dependent)
    checked = set()
    starts = np.zeros((T, S))
    checks = np.zeros((T, S))
    rej_pos = np.zeros(T)
    counts = np.zeros(G + 1)
    bonus_tokens = 0.0
    Q = np.zeros((G + 1, S))
    Q[0] = chain.initial
    for n in _positions(T, G, S, progress, "phase recursion"):
        nxt = np.zeros((G + 1, S))
        full = Q[G]
        full_mass = full.sum()
        if full_mass > 0:
            counts[G] += full_mass
            if bonus:
                nxt[0] += _vm(full, chain.target_operator(n))
                bonus_tokens += full_mass
            else:
                Q[0] += full
        starts[n] = Q[0]
        live = Q[:G]
        checks[n] = live.sum(0)
        if A.phase or R.phase:
            for i in range(G):
                (aop, asum), (rop, rsum) = A.get(n, i), R.get(n, i)
                key = (A.key(n, i), R.key(n, i))
                if key not in checked:
                    _check_rows(asum, rsum, n, i)
                    checked.add(key)
                nxt[i + 1] = _vm(live[i], aop)
                nxt[0] += _vm(live[i], rop)
                r = live[i] @ rsum
                counts[i] += r
                rej_pos[n] += r
        else:
            (aop, asum), (rop, rsum) = A.get(n, 0), R.get(n, 0)
            key = (A.key(n, 0), R.key(n, 0))
            if key not in checked:
                _check_rows(asum, rsum, n, 0)
                checked.add(key)
            nxt[1:] = _vm(live, aop)
            nxt[0] += _vm(live.sum(0), rop)
            r = live @ rsum
            counts[:G] += r
            rej_pos[n] = r.sum()
        Q = nxt
    counts[1:] += Q[1:].sum(-1)  # rounds reaching position T with everything accepted
    return PhaseResult(T, G, bonus, starts, rej_pos, counts, float(bonus_tokens), checks)


@_single_threaded
def calls_law(chain, horizon, gamma, bonus, accept_mass, reject_mass, max_elements=2 ** 26):
    r"""Exact law of the number of target calls (rounds), ``P(calls = c)`` for ``c = 0..T``.

    The phase recursion with the mass split by the number of rounds started so far,
    ``Q_n[i, c, s]``: a round start at position ``n < T`` moves mass from ``c`` to
    ``c + 1``. Masses must be phase-independent (token-like rules). Cost ``T`` times
    a ``[gamma (T + 1), S] @ [S, S]`` product; raises ``ValueError`` when
    ``(gamma + 1) (T + 1) S`` exceeds ``max_elements``.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory._recursions import calls_law, token_masses
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])
    >>> calls_law(chain, 2, 1, True, *token_masses(chain)).tolist()  # one round if accepted
    [0.0, 0.5, 0.5]
    """
    T = chain.check_horizon(horizon)
    G = _check_gamma(gamma)
    S = chain.n_states
    C = T + 1
    if (G + 1) * C * S > max_elements:
        raise ValueError(f"horizon: calls law needs (gamma+1)(T+1)S = {(G + 1) * C * S} entries (> {max_elements})")
    A = _MassOps(chain, accept_mass, "accept_mass", None, False)
    R = _MassOps(chain, reject_mass, "reject_mass", None, False)
    Q = np.zeros((G + 1, C, S))
    Q[0, 0] = chain.initial
    for n in _positions(T, G * C, S, None, "calls law"):
        nxt = np.zeros_like(Q)
        full = Q[G]
        if bonus:
            nxt[0] += _vm(full, chain.target_operator(n))
        else:
            Q[0] += full
        Q[0, 1:] = Q[0, :-1].copy()  # a round starts here: one more call
        Q[0, 0] = 0.0
        (aop, asum), (rop, rsum) = A.get(n, 0), R.get(n, 0)
        _check_rows(asum, rsum, n, 0)
        live = Q[:G]
        nxt[1:] = _vm(live.reshape(G * C, S), aop).reshape(G, C, S)
        nxt[0] += _vm(live.sum(0), rop)
        Q = nxt
    return Q.sum((0, 2))


def token_masses(chain):
    """Standard token verification: ``(accept, reject)`` mass providers ``(n, i) -> [S, V]``.

    ``accept = min(target, draft)``, ``reject = max(target - draft, 0)``; independent
    of the phase. Returns arrays for homogeneous chains, callables otherwise.
    """
    if chain.is_homogeneous:
        return (np.minimum(chain.target, chain.draft),
                np.maximum(chain.target - chain.draft, 0.0))

    def acc(n, i):
        return np.minimum(chain.target[n], chain.draft[n])

    def rej(n, i):
        return np.maximum(chain.target[n] - chain.draft[n], 0.0)
    return acc, rej


def scaled_masses(chain, scale):
    r"""Token verification with acceptance scaled down: ``b(x) = s * min(1, target/draft)``.

    The rejection law that keeps the output equal to the target is
    ``P = (target - s min(target, draft)) / (1 - s sum min(target, draft))``, so the
    reject *mass* is ``target - s min(target, draft)`` and the rejection probability
    ``1 - s (1 - TV) >= TV``, with equality only where ``s = 1`` or ``TV = 1``.
    ``scale`` must lie in ``(0, 1]``.
    """
    s = float(scale)
    if not (0.0 < s <= 1.0):
        raise ValueError(f"scale: must lie in (0, 1], got {scale!r}")

    def acc(n, i):
        t, d = chain.kernels(n)
        return s * np.minimum(t, d)

    def rej(n, i):
        t, d = chain.kernels(n)
        return np.maximum(t - s * np.minimum(t, d), 0.0)
    return acc, rej


@_single_threaded
def token_accept_survival(chain, horizon, gamma):
    r"""Per-start law of a round's accepted count under token verification.

    ``P(J >= j | n0, s) = (A_{n0} A_{n0+1} ... A_{n0+j-1} 1)(s)`` with
    ``A_n = transition_operator(min(target_n, draft_n))``.

    Returns
    -------
    ndarray
        Homogeneous chains: ``[S, gamma + 1]``, the untruncated round law.
        Inhomogeneous chains: ``[T, S, gamma + 1]``, the law of the round started at
        ``n0`` as the protocol runs it (``k = min(gamma, T - n0)``, entries above ``k`` zero).
    """
    T = chain.check_horizon(horizon)
    G = _check_gamma(gamma)
    acc, _ = token_masses(chain)
    if chain.is_homogeneous:
        op = chain.transition_operator(acc)
        surv = np.ones((G + 1, chain.n_states))
        for j in range(1, G + 1):
            surv[j] = op @ surv[j - 1]
        law = surv.copy()
        law[:G] -= surv[1:]
        return np.clip(law.T, 0.0, None)
    surv = np.zeros((T + 1, G + 1, chain.n_states))
    surv[:, 0] = 1.0
    for n0 in range(T - 1, -1, -1):
        op = chain.transition_operator(acc(n0, 0))
        m = min(G, T - n0)
        surv[n0, 1:m + 1] = (op @ surv[n0 + 1, :m].T).T
    law = np.zeros((T, chain.n_states, G + 1))
    for n0 in range(T):
        k = min(G, T - n0)
        law[n0, :, :k] = (surv[n0, :k] - surv[n0, 1:k + 1]).T
        law[n0, :, k] = surv[n0, k]
    return np.clip(law, 0.0, None)


# ------------------------------------------------------------ round engine
@_single_threaded
def round_recursion(chain, horizon, gamma, bonus, round_transition, *,
                    position_dependent=None, progress=None) -> PhaseResult:
    r"""Exact expectations of any round-level verifier, by a recursion over round starts.

    Parameters
    ----------
    chain, horizon, gamma, bonus : as in :func:`phase_recursion`
    round_transition : callable ``(n0, k, emit_bonus) -> [S, k + 1, S]``
        ``Q[s, j, s']`` = P(accepted count ``j`` and state ``s'`` after the round's
        last emitted token | round starts at ``n0`` in state ``s``). The round emits
        ``j + 1`` tokens if ``j < k`` and ``k + emit_bonus`` tokens if ``j == k``.
    position_dependent : bool, optional
        Whether ``round_transition`` depends on ``n0`` (default: ``not chain.is_homogeneous``);
        otherwise it is called once per ``(k, emit_bonus)``.
    progress : bool, optional
        Show a tqdm bar over round starts (default: only for large problems).

    Returns
    -------
    PhaseResult
        ``rejection_by_position[n]`` counts rejections whose replacement token sits at
        kernel index ``n``.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory._recursions import round_recursion, token_round_transition
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.9, 0.1])
    >>> res = round_recursion(chain, 3, 1, False, token_round_transition(chain))
    >>> round(res.rejections, 12)
    1.2
    """
    T = chain.check_horizon(horizon)
    G = _check_gamma(gamma)
    bonus = bool(bonus)
    S = chain.n_states
    posdep = (not chain.is_homogeneous) if position_dependent is None else bool(position_dependent)
    cache: dict = {}
    R = np.zeros((T + 1, S))
    R[0] = chain.initial
    rej_pos = np.zeros(T)
    counts = np.zeros(G + 1)
    bonus_tokens = 0.0
    for n0 in _positions(T, G, S, progress, "round recursion"):
        r = R[n0]
        if not np.any(r):
            continue
        k = min(G, T - n0)
        eb = bonus and n0 + k < T
        key = (n0 if posdep else 0, k, eb)
        Q = cache.get(key)
        if Q is None:
            Q = np.asarray(round_transition(n0, k, eb), dtype=np.float64)
            if Q.shape != (S, k + 1, S):
                raise ValueError(f"round_transition: expected shape ({S}, {k + 1}, {S}) at n0={n0}, got {Q.shape}")
            if not np.all(np.isfinite(Q)) or np.any(Q < 0):
                raise ValueError(f"round_transition: entries must be finite and >= 0 (n0={n0})")
            if posdep:
                cache.clear()
            cache[key] = Q
        out = np.einsum("s,sjt->jt", r, Q)
        tot = out.sum(-1)
        counts[:k + 1] += tot
        R[n0 + 1:n0 + k + 1] += out[:k]
        rej_pos[n0:n0 + k] += tot[:k]
        R[n0 + k + eb] += out[k]
        if eb:
            bonus_tokens += tot[k]
    return PhaseResult(T, G, bonus, R[:T].copy(), rej_pos, counts, float(bonus_tokens))


def _dense(op):
    return op.toarray() if sp.issparse(op) else np.asarray(op)


def token_round_transition(chain):
    r"""Standard token verification as a round transition ``(n0, k, emit_bonus) -> [S, k+1, S]``.

    With ``A_n``, ``R_n`` the operators of ``min(target, draft)`` and
    ``max(target - draft, 0)`` and ``P_n`` of the target kernel,
    ``Q[:, j] = A_{n0} ... A_{n0+j-1} R_{n0+j}`` for ``j < k`` and
    ``Q[:, k] = A_{n0} ... A_{n0+k-1} (P_{n0+k} if emit_bonus)``. Dense, for small ``S``.
    """
    acc, rej = token_masses(chain)
    if chain.is_homogeneous:
        a, r = acc, rej
        acc, rej = (lambda n, i: a), (lambda n, i: r)

    def transition(n0, k, emit_bonus):
        S = chain.n_states
        E = np.eye(S)
        Q = np.zeros((S, k + 1, S))
        for i in range(k):
            n = n0 + i
            Q[:, i] = E @ _dense(chain.transition_operator(rej(n, i)))
            E = E @ _dense(chain.transition_operator(acc(n, i)))
        Q[:, k] = E @ _dense(chain.target_operator(n0 + k)) if emit_bonus else E
        return Q
    return transition


# --------------------------------------------------------- sequence laws
def _kernel_tensor(chain, mass):
    """Dense ``K[s, x, s'] = mass[s, x] [next_state[s, x] == s']``."""
    S, V = chain.n_states, chain.vocab_size
    K = np.zeros((S, V, S))
    K[np.arange(S)[:, None], np.arange(V)[None, :], chain.next_state] = mass
    return K


def _check_size(chain, T, width, max_elements):
    size = chain.vocab_size ** T * width * chain.n_states
    if size > max_elements:
        raise ValueError(f"horizon: exact sequence law needs V**T * {width} * S = {size} "
                         f"entries (> {max_elements}); use a smaller vocabulary or horizon")


def target_sequence_law(chain, horizon, max_elements=2 ** 24) -> np.ndarray:
    """Exact law of ``T`` tokens sampled from the target, shape ``[V] * T``."""
    T = chain.check_horizon(horizon)
    _check_size(chain, T, 1, max_elements)
    V = chain.vocab_size
    L = chain.initial[None, :]
    for n in range(T):
        K = _kernel_tensor(chain, chain.kernels(n)[0])
        L = np.einsum("ps,sxt->pxt", L, K).reshape(-1, chain.n_states)
    return L.sum(-1).reshape((V,) * T)


def phase_sequence_law(chain, horizon, gamma, bonus, accept_mass, reject_mass,
                       max_elements=2 ** 24) -> np.ndarray:
    r"""Exact law of the token sequence generated by a position-by-position verifier.

    The phase recursion of :func:`phase_recursion` run on the state augmented by the
    whole prefix: mass ``M_n[prefix, i, s]``. Masses as in :func:`phase_recursion`
    (callables are called for every ``(n, i)``). Returns shape ``[V] * T``; raises
    ``ValueError`` when ``V**T * (gamma + 1) * S`` exceeds ``max_elements``.
    """
    T = chain.check_horizon(horizon)
    G = _check_gamma(gamma)
    _check_size(chain, T, G + 1, max_elements)
    S, V = chain.n_states, chain.vocab_size
    A = _MassOps(chain, accept_mass, "accept_mass", None, True)
    R = _MassOps(chain, reject_mass, "reject_mass", None, True)
    M = np.zeros((1, G + 1, S))
    M[0, 0] = chain.initial
    for n in range(T):
        P = M.shape[0]
        new = np.zeros((P, V, G + 1, S))
        full = M[:, G].copy()
        M[:, G] = 0.0
        if bonus:
            new[:, :, 0] += np.einsum("ps,sxt->pxt", full, _kernel_tensor(chain, chain.kernels(n)[0]))
        else:
            M[:, 0] += full
        for i in range(G):
            a, r = A.mass(n, i), R.mass(n, i)
            _check_rows(a.sum(-1), r.sum(-1), n, i)
            new[:, :, i + 1] = np.einsum("ps,sxt->pxt", M[:, i], _kernel_tensor(chain, a))
            new[:, :, 0] += np.einsum("ps,sxt->pxt", M[:, i], _kernel_tensor(chain, r))
        M = new.reshape(P * V, G + 1, S)
    return M.sum((1, 2)).reshape((V,) * T)
