r"""DecodingChain: decoding over a finite vocabulary as a Markov chain.

A decoding problem is a chain whose state :math:`s` summarises the prefix. In state
:math:`s`, before emitting the token at position :math:`n` (1-based), the target and
draft propose next-token laws :math:`p_n(\cdot \mid s)` (``target``) and
:math:`q_n(\cdot \mid s)` (``draft``); emitting token :math:`x` moves the chain to
``next_state[s, x]``.

Position convention: kernel index ``n - 1`` (0-based) produces token ``n``
(1-based), ``n = 1..T``. ``state_marginals(T)[n - 1]`` is the law of the state just
before token ``n`` is emitted, under target sampling.

Exact quantities (expected rejections, calls, laws) live in :mod:`spectheory.exact.expectations`
and are exposed here as methods; Monte Carlo lives in :mod:`spectheory.montecarlo`.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._guards import SUM_TOL, as_law, check_int
from .constructors import ChainConstructors
from .transitions import NextStateSampler, check_next_state, law_matrix, stochastic_operator
from .views import ProtocolViews

__all__ = ["DecodingChain"]


class DecodingChain(ProtocolViews, ChainConstructors):
    r"""A speculative-decoding problem as a (possibly time-inhomogeneous) Markov chain.

    Parameters
    ----------
    target, draft : array_like, shape (S, V) or (T, S, V)
        Next-token kernels, rows summing to 1 (within ``1e-6``). A 3-d array gives one
        kernel per position (time-inhomogeneous); horizons are then limited to ``T``.
    initial : array_like, shape (S,), optional
        Law of the starting state. Default: uniform over the states.
    next_state : array_like of int, shape (S, V), or of float, shape (S, V, S), optional
        State after emitting token ``v`` in state ``s``. Default: the last token
        (first-order chain, requires ``S == V``), or the single state when ``S == 1``.
        A float array ``[S, V, S]`` (or a scipy sparse ``(S * V, S)`` matrix, row
        ``s * V + v``) makes the transitions *stochastic*: rows are laws (summing to 1
        within ``atol``) and after token ``v`` in state ``s`` the next state is drawn from
        ``next_state[s, v, :]`` -- one draw, shared by the target and the draft.

    Notes
    -----
    Stochastic transitions (``is_stochastic``; derivation in ``docs/markov_abstraction.md``,
    Section 7). With p = target, q = draft and :math:`K(s'|s, x)` = ``next_state[s, x, s']``,
    the pair (state, token) is a Markov chain: :math:`x_{n+1} \sim p_n(\cdot|s_n)`, then
    :math:`s_{n+1} \sim K(\cdot|s_n, x_{n+1})`. In a round the draft proposes
    :math:`x_{i+1} \sim q(\cdot|s_i)` and draws :math:`s_{i+1} \sim K(\cdot|s_i, x_{i+1})`;
    the target scores the drafts in those same states; an accepted draft keeps its state
    draw, and the round's final (residual or bonus) token ``y`` from state ``s`` draws a
    fresh :math:`s' \sim K(\cdot|s, y)`. The output (tokens and states) has the target
    chain's law, and every exact engine goes through the transition operator
    :math:`M[s, s'] = \sum_x m(s, x) K(s'|s, x)` of a mass ``m`` (:meth:`transition_operator`),
    so ``protocol`` and its views are exact for both kinds. A deterministic map is the point
    mass :math:`K(s'|s, x) = [s' = \mathrm{next\_state}[s, x]]`. Engines that walk explicit
    paths (token trees, the draft-length policies' recursions and simulator, the positional
    simulator, block verification's exact round law, the sequence fronts) need a
    deterministic map and say so (:meth:`require_deterministic`);
    ``evaluate_policy(chain, FixedGamma(k), ...)`` runs the phase engine and accepts both.

    Attributes
    ----------
    n_states, vocab_size : int
    max_horizon : int or None
        ``T`` for time-inhomogeneous chains and prefix trees, otherwise None.

    Examples
    --------
    >>> import numpy as np, spectheory as st
    >>> chain = st.DecodingChain.random(4, concentration=1.0, rng=0)
    >>> chain.tv_profile(3).shape
    (3,)
    >>> chain.n_states, chain.vocab_size, chain.is_homogeneous
    (4, 4, True)

    A stochastic transition: one state per token, except that after token 1 the chain
    forgets it half of the time (state 0). Its point-mass form equals the int map.

    >>> target = np.array([[0.5, 0.5], [0.9, 0.1]]); draft = np.array([[0.8, 0.2], [0.5, 0.5]])
    >>> law = np.array([[[1.0, 0.0], [0.5, 0.5]], [[1.0, 0.0], [0.5, 0.5]]])   # [S, V, S]
    >>> soft = st.DecodingChain(target, draft, [1.0, 0.0], law)
    >>> soft.is_stochastic, soft.state_marginals(2)[1].tolist()
    (True, [0.75, 0.25])
    >>> res = soft.protocol(6, 2)                    # exact, through the transition operator
    >>> round(res.target_calls, 6), round(soft.rejection_lower_bound(6), 6)
    (3.110491, 1.90764)
    >>> sim = st.simulate(soft, 6, 2, 20_000, rng=0)  # draws the next state
    >>> bool(abs(sim.mean("target_calls") - res.target_calls) < 5 * sim.se("target_calls"))
    True
    >>> hard = st.DecodingChain(target, draft, [1.0, 0.0], np.eye(2)[[[0, 1], [0, 1]]])
    >>> bool(abs(hard.protocol(6, 2).target_calls - st.DecodingChain(target, draft, [1.0, 0.0]).protocol(6, 2).target_calls) < 1e-12)
    True
    """

    def __init__(
        self,
        target: ArrayLike,
        draft: ArrayLike,
        initial: ArrayLike | None = None,
        next_state: ArrayLike | sp.spmatrix | None = None,
        *,
        atol: float = SUM_TOL,
        max_horizon: int | None = None,
    ) -> None:
        t = as_law(target, "target", atol=atol, min_ndim=2)
        d = as_law(draft, "draft", atol=atol, min_ndim=2)
        if t.ndim > 3:
            raise ValueError(f"target: expected shape (S, V) or (T, S, V), got {t.shape}")
        if t.shape != d.shape:
            raise ValueError(f"target and draft: shape mismatch {t.shape} vs {d.shape}")
        S, V = t.shape[-2:]
        if next_state is None:
            if S == V:
                next_state = np.broadcast_to(np.arange(V), (S, V))
            elif S == 1:
                next_state = np.zeros((1, V), dtype=np.int64)
            else:
                raise ValueError(f"next_state: required when n_states ({S}) != vocab_size ({V})")
        ns, self._law = check_next_state(next_state, S, V, atol)
        init = np.full(S, 1.0 / S) if initial is None else as_law(initial, "initial", atol=atol)
        if init.shape != (S,):
            raise ValueError(f"initial: expected shape ({S},), got {init.shape}")
        self.target = _readonly(t)
        self.draft = _readonly(d)
        self.initial = _readonly(init)
        self.next_state = ns
        if t.ndim == 3:
            max_horizon = t.shape[0] if max_horizon is None else min(max_horizon, t.shape[0])
        self.max_horizon = max_horizon
        self._marginals: dict[int, np.ndarray] = {}

    # ------------------------------------------------------------------ basics
    def __repr__(self) -> str:
        kind = "homogeneous" if self.is_homogeneous else f"inhomogeneous T={self.target.shape[0]}"
        return f"DecodingChain(S={self.n_states}, V={self.vocab_size}, {kind})"

    @property
    def n_states(self) -> int:
        return self.target.shape[-2]

    @property
    def vocab_size(self) -> int:
        return self.target.shape[-1]

    @property
    def is_homogeneous(self) -> bool:
        return self.target.ndim == 2

    @property
    def is_stochastic(self) -> bool:
        """True when ``next_state`` is a law ``[S, V, S]`` (the next state is drawn)."""
        return self._law is not None

    @cached_property
    def transition_law(self) -> sp.csr_matrix:
        """CSR matrix ``(S * V, S)``: row ``s * V + x`` is the law of the state after ``(s, x)``
        (one-hot rows for a deterministic map)."""
        return self._law if self._law is not None else law_matrix(self.next_state, self.n_states)

    def require_deterministic(self, what: str) -> None:
        """Raise ``ValueError`` naming ``what`` when the transitions are stochastic."""
        if self.is_stochastic:
            raise ValueError(
                f"next_state: {what} needs a deterministic next_state (int [S, V]); "
                "this chain's transitions are stochastic (a law [S, V, S])"
            )

    def sample_next_state(self, s: np.ndarray, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Next states after tokens ``x`` in states ``s`` (inverse CDF of the law with uniforms
        ``u``; a deterministic map ignores ``u``). Arrays of equal shape."""
        if not self.is_stochastic:
            return self.next_state[s, x]
        smp = self.__dict__.get("_next_sampler")
        if smp is None:
            smp = self.__dict__["_next_sampler"] = NextStateSampler(self._law)
        return smp.sample(s, x, u)

    @cached_property
    def is_first_order(self) -> bool:
        """True when the state is the last token (``next_state[s, x] == x``)."""
        return (
            not self.is_stochastic
            and self.n_states == self.vocab_size
            and bool(np.all(self.next_state == np.arange(self.vocab_size)))
        )

    def check_horizon(self, horizon: int) -> int:
        """Validate a horizon ``T >= 1`` against ``max_horizon``; return it as int."""
        T = check_int(horizon, "horizon", 1)
        if self.max_horizon is not None and T > self.max_horizon:
            raise ValueError(f"horizon: {T} exceeds this chain's max_horizon {self.max_horizon}")
        return T

    def kernels(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``(target, draft)`` kernels, each ``[S, V]``, producing token ``n + 1`` (0-based ``n``)."""
        if self.is_homogeneous:
            return self.target, self.draft
        return self.target[n], self.draft[n]

    # ------------------------------------------------------------ derived tables
    @cached_property
    def tv_table(self) -> np.ndarray:
        """TV(target(.|s), draft(.|s)) per state, shape ``[S]`` or ``[T, S]``."""
        return np.clip(0.5 * np.abs(self.target - self.draft).sum(-1), 0.0, 1.0)

    @cached_property
    def acceptance_table(self) -> np.ndarray:
        """Per-state acceptance ``sum_x min(target, draft)`` = ``1 - tv_table``."""
        return np.clip(np.minimum(self.target, self.draft).sum(-1), 0.0, 1.0)

    def transition_operator(self, mass: ArrayLike) -> np.ndarray | sp.csr_matrix:
        r"""Matrix ``M[s, s'] = sum_{x : next_state[s, x] = s'} mass[s, x]``.

        ``mass`` is any non-negative ``[S, V]`` array (a kernel, or the accepted part
        ``min(target, draft)``, ...). For first-order chains ``M`` is ``mass`` itself;
        otherwise a CSR sparse matrix. Row vectors propagate as ``vec @ M``. With
        stochastic transitions ``M[s, s'] = sum_x mass[s, x] next_state[s, x, s']``.
        """
        mass = np.asarray(mass, dtype=np.float64)
        if mass.shape != (self.n_states, self.vocab_size):
            raise ValueError(f"mass: expected shape ({self.n_states}, {self.vocab_size}), got {mass.shape}")
        if self.is_first_order:
            return mass
        if self.is_stochastic:
            return stochastic_operator(mass, self._law)
        rows = np.repeat(np.arange(self.n_states), self.vocab_size)
        return sp.csr_matrix(
            (mass.ravel(), (rows, self.next_state.ravel())), shape=(self.n_states, self.n_states)
        )

    @cached_property
    def _target_ops(self):
        if self.is_homogeneous:
            return [self.transition_operator(self.target)]
        return [self.transition_operator(k) for k in self.target]

    def target_operator(self, n: int) -> np.ndarray | sp.csr_matrix:
        """Transition operator of target sampling at 0-based position ``n``."""
        ops = self._target_ops
        return ops[0] if self.is_homogeneous else ops[n]

    def state_marginals(self, horizon: int) -> np.ndarray:
        r"""Law of the state before each token under target sampling.

        Returns
        -------
        ndarray, shape (T, S)
            Row ``n - 1`` is :math:`P(s_{n-1} = s)`, with :math:`s_0 \sim` ``initial``.
        """
        T = self.check_horizon(horizon)
        if T not in self._marginals:
            out = np.empty((T, self.n_states))
            vec = self.initial
            for n in range(T):
                out[n] = vec
                if n + 1 < T:
                    vec = np.asarray(vec @ self.target_operator(n)).ravel()
            out.setflags(write=False)
            self._marginals[T] = out
        return self._marginals[T]


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a
