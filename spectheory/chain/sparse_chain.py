r"""SparseDecodingChain: a decoding chain whose kernels are sparse rows (top-k or mass-truncated).

The same problem as :class:`~spectheory.DecodingChain` (states ``s``, target and draft rows
:math:`p(\cdot|s)`, :math:`q(\cdot|s)`, a deterministic next state), with the two kernels
stored as scipy CSR matrices ``[S, V]``, so that a real model's vocabulary (V = 49,152)
fits: memory and time grow with the stored entries, not with ``S * V``. The exact engines
are the dense chain's: ``protocol`` runs the same phase recursion
(:func:`spectheory.exact.phase_recursion`), whose transition operators are then sparse
(``transition_operator``), and the per-state tables (``tv_table``,
``acceptance_table``) sum over the stored entries only, which is every entry where
:math:`\min(p, q) > 0` or :math:`|p - q| > 0`. Rows that are truncations of true rows carry
their dropped mass (``target_tail``, ``draft_tail``); :meth:`truncation_bound` turns it into
certified bounds on every counter of the true chain (``docs/sparse_chains.md``).

Homogeneous chains only (one kernel for every position); transitions: the last token
(``S == V``), a token -> state map ``[V]`` (the next state depends on the token only, as in
an order-1 abstraction with back-off) or a full map ``[S, V]``.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._guards import SUM_TOL, as_law, check_int
from .sparse_constructors import SparseChainConstructors
from .sparse_rows import check_sparse_rows, check_tail
from .views import ProtocolViews

if TYPE_CHECKING:
    from .decoding_chain import DecodingChain
    from .sparse_bound import TruncationBound

__all__ = ["SparseDecodingChain"]


class SparseDecodingChain(ProtocolViews, SparseChainConstructors):
    r"""A homogeneous decoding chain with sparse (CSR) target and draft kernels.

    Parameters
    ----------
    target, draft : scipy sparse matrix or array_like, shape (S, V)
        Next-token kernels; each row a law over its stored entries (summing to 1 within
        ``atol``). Zeros are dropped.
    initial : array_like, shape (S,), optional
        Law of the starting state (default uniform).
    next_state : array_like of int, shape (V,) or (S, V), optional
        State after emitting token ``x`` (in state ``s``): a map ``[V]`` when it depends on the
        token only, or ``[S, V]``. Default: the last token (``S == V``), or the one state.
    target_tail, draft_tail : array_like, shape (S,), optional
        Per-state bound on the TV distance between the stored row and the true row it stands
        for (its dropped mass; default 0: the rows are exact).

    Notes
    -----
    Everything the path engines read comes from the kernels' stored entries: the accepted
    mass :math:`\min(p, q)` lives on the intersection of the two rows' supports and the
    rejection mass :math:`(p - q)_+` on the target's, so both are sparse, and one step of the
    phase recursion costs :math:`O(\gamma\,\mathrm{nnz})`. ``protocol`` (paths of ``gamma``
    drafts, token verification), ``tv_profile``, ``rejection_lower_bound``, the
    ``expected_*`` views and ``accepted_count_law`` run here; engines that read dense rows
    (trees, policies, Monte Carlo, sequence laws) take :meth:`to_dense` (small ``V``).

    Examples
    --------
    From a real model (or any source): for each state, the kept token ids and their
    probabilities under the target and the draft, and the mass each row leaves out (default
    ``1 - probs.sum(1)``). Here a first-order chain (state = last token) over V = 6 tokens:

    >>> import numpy as np, spectheory as st
    >>> from spectheory.chain import SparseDecodingChain
    >>> V = 6
    >>> ids = np.array([[(s + j) % V for j in range(3)] for s in range(V)])   # top-3 per state
    >>> t_probs = np.tile([0.7, 0.2, 0.0999], (V, 1))          # tail 1e-4 each
    >>> d_probs = np.tile([0.6, 0.3, 0.0999], (V, 1))
    >>> chain = SparseDecodingChain.from_top_k(ids, t_probs, ids, d_probs, vocab_size=V)
    >>> res = chain.protocol(256, gamma=8)                      # the dense chain's engine
    >>> round(res.tokens_per_call, 4)
    6.0474
    >>> bound = chain.truncation_bound(256, gamma=8)            # the true chain's lies within
    >>> [round(v, 4) for v in bound.tokens_per_call_interval]
    [6.0373, 6.0576]

    From dense rows, keeping the top 2 tokens of each row; without ``top_k``/``mass`` the
    sparse chain is the dense one, to the last bit of every result:

    >>> dense = st.DecodingChain.random(5, concentration=0.5, rng=0)
    >>> exact = SparseDecodingChain.from_dense(dense.target, dense.draft, dense.initial)
    >>> bool(abs(exact.protocol(30, 3).target_calls - dense.protocol(30, 3).target_calls) < 1e-12)
    True
    >>> SparseDecodingChain.from_dense(dense.target, dense.draft, top_k=2).nnz_per_row
    2.0
    """

    def __init__(
        self,
        target: ArrayLike | sp.spmatrix,
        draft: ArrayLike | sp.spmatrix,
        initial: ArrayLike | None = None,
        next_state: ArrayLike | None = None,
        *,
        target_tail: ArrayLike | None = None,
        draft_tail: ArrayLike | None = None,
        atol: float = SUM_TOL,
    ) -> None:
        t = check_sparse_rows(target, "target", atol=atol)
        d = check_sparse_rows(draft, "draft", t.shape, atol=atol)
        S, V = t.shape
        self.target, self.draft = t, d
        self._token_map: np.ndarray | None = None
        if next_state is None:
            if S == V:
                next_state = np.arange(V)
            elif S == 1:
                next_state = np.zeros(V, dtype=np.int64)
            else:
                raise ValueError(f"next_state: required when n_states ({S}) != vocab_size ({V})")
        ns = np.asarray(next_state)
        if ns.size and not np.issubdtype(ns.dtype, np.integer):
            raise ValueError("next_state: must be an integer map [V] or [S, V]")
        if ns.shape not in ((V,), (S, V)):
            raise ValueError(f"next_state: expected shape ({V},) or ({S}, {V}), got {ns.shape}")
        if ns.size and (ns.min() < 0 or ns.max() >= S):
            raise ValueError(f"next_state: entries must lie in [0, {S})")
        ns = np.array(ns, dtype=np.int64)
        ns.setflags(write=False)
        if ns.ndim == 1:
            self._token_map = ns
            ns = np.broadcast_to(ns, (S, V))
        self.next_state = ns
        init = np.full(S, 1.0 / S) if initial is None else as_law(initial, "initial", atol=atol)
        if init.shape != (S,):
            raise ValueError(f"initial: expected shape ({S},), got {init.shape}")
        self.initial = np.array(init)
        self.initial.setflags(write=False)
        self.target_tail = check_tail(target_tail, S, "target_tail")
        self.draft_tail = check_tail(draft_tail, S, "draft_tail")
        self.max_horizon: int | None = None
        self._marginals: dict[int, np.ndarray] = {}

    def to_dense(self) -> DecodingChain:
        """The :class:`~spectheory.DecodingChain` of the stored rows (``S * V`` floats)."""
        from .decoding_chain import DecodingChain

        ns = self._token_map if self._token_map is not None else self.next_state
        ns = np.broadcast_to(ns, (self.n_states, self.vocab_size))
        return DecodingChain(self.target.toarray(), self.draft.toarray(), self.initial, ns, atol=1.0)

    # ------------------------------------------------------------------ basics
    def __repr__(self) -> str:
        return f"SparseDecodingChain(S={self.n_states}, V={self.vocab_size}, nnz/row={self.nnz_per_row:.3g})"

    @property
    def n_states(self) -> int:
        return int(self.target.shape[0])

    @property
    def vocab_size(self) -> int:
        return int(self.target.shape[1])

    @property
    def nnz_per_row(self) -> float:
        """Mean stored entries per row of the two kernels."""
        return (self.target.nnz + self.draft.nnz) / (2.0 * self.n_states)

    @property
    def operator_nnz(self) -> int:
        """Stored entries of the largest mass operator (what one engine step multiplies by)."""
        return int(max(self.target.nnz, self.draft.nnz))

    is_homogeneous = True
    is_stochastic = False

    @cached_property
    def is_first_order(self) -> bool:
        """True when the state is the last token."""
        m = self._token_map
        return m is not None and self.n_states == self.vocab_size and bool(np.all(m == np.arange(m.size)))

    def require_deterministic(self, what: str) -> None:
        """Transitions are always deterministic here."""

    def check_horizon(self, horizon: int) -> int:
        """Validate a horizon ``T >= 1``; return it as int."""
        return check_int(horizon, "horizon", 1)

    def kernels(self, n: int) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        """``(target, draft)`` CSR kernels ``[S, V]`` (the same at every position)."""
        return self.target, self.draft

    def sample_next_state(self, s: np.ndarray, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Next states after tokens ``x`` in states ``s`` (``u`` unused: deterministic)."""
        return self.next_state[s, x]

    @cached_property
    def transition_law(self) -> sp.csr_matrix:
        """CSR ``(S * V, S)``, one-hot rows: the state after ``(s, x)`` (``S * V`` entries)."""
        from .transitions import law_matrix

        return law_matrix(np.asarray(self.next_state), self.n_states)

    # ------------------------------------------------------------ derived tables
    @cached_property
    def acceptance_table(self) -> np.ndarray:
        """Per-state acceptance ``sum_x min(p, q)`` over the stored entries, shape ``[S]``."""
        acc = np.asarray(self.target.minimum(self.draft).sum(axis=1)).ravel()
        return np.clip(acc, 0.0, 1.0)

    @cached_property
    def tv_table(self) -> np.ndarray:
        """Per-state TV ``0.5 sum_x |p - q|`` over the stored entries, shape ``[S]``."""
        tv = 0.5 * np.asarray(abs(self.target - self.draft).sum(axis=1)).ravel()
        return np.clip(tv, 0.0, 1.0)

    def transition_operator(self, mass: ArrayLike | sp.spmatrix) -> sp.csr_matrix:
        r"""CSR ``M[s, s'] = sum_{x : next(s, x) = s'} mass[s, x]`` of a mass ``[S, V]`` (dense or
        sparse): the mass itself for a first-order chain, ``mass @ C`` (``C`` the one-hot
        token -> state matrix) for a token map."""
        S, V = self.n_states, self.vocab_size
        m = sp.csr_matrix(mass, dtype=np.float64)
        if m.shape != (S, V):
            raise ValueError(f"mass: expected shape ({S}, {V}), got {m.shape}")
        if self.is_first_order:
            return m
        if self._token_map is not None:
            return sp.csr_matrix(m @ self._token_matrix)
        coo = m.tocoo()
        return sp.csr_matrix((coo.data, (coo.row, self.next_state[coo.row, coo.col])), shape=(S, S))

    @cached_property
    def _token_matrix(self) -> sp.csr_matrix:
        m = self._token_map
        assert m is not None
        return sp.csr_matrix((np.ones(m.size), (np.arange(m.size), m)), shape=(m.size, self.n_states))

    @cached_property
    def _target_op(self) -> sp.csr_matrix:
        return self.transition_operator(self.target)

    @cached_property
    def _target_op_t(self) -> sp.csr_matrix:
        return sp.csr_matrix(self._target_op.T)

    def target_operator(self, n: int) -> sp.csr_matrix:
        """Transition operator of target sampling (CSR ``[S, S]``, every position)."""
        return self._target_op

    def state_marginals(self, horizon: int) -> np.ndarray:
        r"""Law of the state before each token under target sampling, shape ``[T, S]``."""
        T = self.check_horizon(horizon)
        if T not in self._marginals:
            op_t = self._target_op_t
            out = np.empty((T, self.n_states))
            vec = self.initial
            for n in range(T):
                out[n] = vec
                if n + 1 < T:
                    vec = op_t @ vec
            out.setflags(write=False)
            self._marginals[T] = out
        return self._marginals[T]

    def truncation_bound(
        self, horizon: int, gamma: int, bonus: bool = True, *, refine: bool = True
    ) -> TruncationBound:
        """Certified bounds between this chain's exact values and the true chain's, from the
        tails (:func:`spectheory.chain.sparse_bound.truncation_bound`)."""
        from .sparse_bound import truncation_bound

        return truncation_bound(self, horizon, gamma, bonus, refine=refine)
