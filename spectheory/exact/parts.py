r"""Shared parts of the exact recursions (:mod:`spectheory.exact`).

The mass-provider operators and row checks, the standard and scaled token-verification
masses, and the single-threaded BLAS context for the small per-position products (the
engines' result, :class:`ProtocolResult`, is in :mod:`.result`). Notation: p = target, q = draft.
"""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from .._guards import check_int
from .._progress import progress_range
from .._sizes import PROGRESS_SECONDS, check_size
from .result import ProtocolResult

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["ProtocolResult", "token_masses", "scaled_masses", "blas_single_thread"]

#: Work (``T * gamma * S**2``) above which a progress bar appears by default.
PROGRESS_WORK = 2e10

#: Up to this many states the per-position products are too small for BLAS threads to pay;
#: on a busy machine extra BLAS threads slow them down by up to 10x, so the recursions run
#: them single-threaded.
SINGLE_THREAD_STATES = 4096


def blas_single_thread(S: int) -> AbstractContextManager:
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


_ROW_TOL = 1e-6


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
        elif sp.issparse(mass):  # a sparse kernel's mass (spectheory.chain.sparse_chain)
            csr = sp.csr_matrix(mass, dtype=np.float64)
            if csr.shape != (S, V):
                raise ValueError(f"{name}: expected shape ({S}, {V}), got {csr.shape}")
            self.fn, self.pos, self.phase = (lambda n, i: csr), False, False
        else:
            arr = np.asarray(mass, dtype=np.float64)
            if arr.shape == (S, V):
                self.fn, self.pos, self.phase = (lambda n, i: arr), False, False
            elif arr.ndim == 3 and arr.shape[1:] == (S, V):
                self.fn, self.pos, self.phase = (lambda n, i: arr[n]), True, False
            else:
                raise ValueError(
                    f"{name}: expected a callable or an array of shape ({S}, {V}) "
                    f"or (T, {S}, {V}), got {arr.shape}"
                )
        self.cache: dict = {}

    def key(self, n, i):
        return (n if self.pos else 0, i if self.phase else 0)

    def mass(self, n, i):
        m = self.fn(n, i)
        m = sp.csr_matrix(m, dtype=np.float64) if sp.issparse(m) else np.asarray(m, dtype=np.float64)
        S, V = self.chain.n_states, self.chain.vocab_size
        if m.shape != (S, V):
            raise ValueError(f"{self.name}: expected shape ({S}, {V}) at n={n}, i={i}, got {m.shape}")
        entries = np.asarray(m.data) if sp.issparse(m) else m
        if not np.all(np.isfinite(entries)) or np.any(entries < 0):
            raise ValueError(f"{self.name}: entries must be finite and >= 0 (n={n}, i={i})")
        return m

    def get(self, n, i):
        """``(op, rowsum)``: operator for ``vec @ op`` (dense or CSR) and the row sums ``[S]``."""
        key = self.key(n, i)
        hit = self.cache.get(key)
        if hit is None:
            m = self.mass(n, i)
            hit = (self.chain.transition_operator(m), np.asarray(m.sum(axis=-1)).ravel())
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
        raise ValueError(
            f"accept_mass + reject_mass: rows must sum to 1 (accept or reject), got "
            f"{acc_sum[s] + rej_sum[s]:.10g} at n={n}, i={i}, state {s}"
        )


def _positions(T, G, S, progress, desc, seconds=None):
    """``range(T)`` with a bar when the work is large: estimated above
    :data:`~spectheory._sizes.PROGRESS_SECONDS` (``seconds`` given), else ``T G S^2`` above
    :data:`PROGRESS_WORK`; ``progress`` True/False forces it."""
    if progress is None:
        show = seconds > PROGRESS_SECONDS if seconds is not None else T * G * float(S) ** 2 > PROGRESS_WORK
    else:
        show = bool(progress)
    if not show:
        return range(T)
    return progress_range(T, desc, show=True, unit="pos")


def check_engine_size(chain: ChainLike, computation: str, T: int, **sizes: float) -> float:
    """Refuse an exact computation estimated above the limits (:func:`spectheory._sizes.check_size`,
    before anything is allocated); returns its estimated seconds (for the progress bar)."""
    S = chain.n_states
    name = "horizon" if S <= SINGLE_THREAD_STATES else "horizon (or the chain's number of states)"
    nnz = getattr(chain, "operator_nnz", None)  # sparse kernels: the operators' stored entries
    if nnz is not None:
        sizes = {"nnz": nnz, **sizes}
    est = check_size(
        computation,
        name,
        horizon=T,
        states=S,
        vocab=chain.vocab_size,
        dense=chain.is_first_order,
        **sizes,
    )
    return est.seconds


def _check_gamma(gamma):
    return check_int(gamma, "gamma", 1)


# ------------------------------------------------------ token-like masses
def token_masses(chain: ChainLike) -> tuple[Any, Any]:
    """Standard token verification: ``(accept, reject)`` mass providers ``(n, i) -> [S, V]``.

    ``accept = min(target, draft)``, ``reject = max(target - draft, 0)``; independent
    of the phase. Returns arrays for homogeneous chains, callables otherwise.
    """
    if chain.is_homogeneous:
        return _accept_reject(chain.target, chain.draft)

    def acc(n, i):
        return np.minimum(chain.target[n], chain.draft[n])

    def rej(n, i):
        return np.maximum(chain.target[n] - chain.draft[n], 0.0)

    return acc, rej


def _accept_reject(t: Any, d: Any, scale: float = 1.0) -> tuple[Any, Any]:
    """``(scale * min(t, d), max(t - scale * min(t, d), 0))`` of two kernels, dense arrays or
    scipy sparse matrices (then sparse: the accepted mass on the common support, the rejected
    on the target's)."""
    if sp.issparse(t) or sp.issparse(d):
        t, d = sp.csr_matrix(t), sp.csr_matrix(d)
        acc = t.minimum(d) * scale if scale != 1.0 else t.minimum(d)
        rej = sp.csr_matrix((t - acc).maximum(0))
        acc = sp.csr_matrix(acc)
        for m in (acc, rej):
            m.eliminate_zeros()
        return acc, rej
    acc = np.minimum(t, d) if scale == 1.0 else scale * np.minimum(t, d)
    return acc, np.maximum(t - acc, 0.0)


def scaled_masses(chain: ChainLike, scale: float) -> tuple[Any, Any]:
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
        return _accept_reject(*chain.kernels(n), s)[0]

    def rej(n, i):
        return _accept_reject(*chain.kernels(n), s)[1]

    return acc, rej
