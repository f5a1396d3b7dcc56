"""Constructors of :class:`~spectheory.chain.decoding_chain.DecodingChain` (a mixin): from matrices, i.i.d.,
random (Dirichlet), n-gram counts and prefix trees, with :func:`ngram_counts`."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law, as_rng, check_int, check_nonneg, check_prob
from .._sizes import check_size
from .._typing import RNGLike

__all__ = ["ChainConstructors", "ngram_counts"]

_C = TypeVar("_C", bound="ChainConstructors")


class ChainConstructors:
    """Alternative constructors of :class:`DecodingChain` (mixed into it; ``cls`` is the chain class)."""

    if TYPE_CHECKING:  # what the constructors use of the chain class they are mixed into
        prefixes: list[tuple[int, ...]]  # prefix_tree: the prefix of each state
        contexts: list[tuple[int, int]]  # abstraction.fit_order_k_chain: (order, key) of each state
        level_offsets: Any  # analysis.unrolled_chain: the first state of each prefix level

        def __init__(
            self,
            target: ArrayLike,
            draft: ArrayLike,
            initial: ArrayLike | None = None,
            next_state: ArrayLike | None = None,
            *,
            atol: float = ...,
            max_horizon: int | None = None,
        ) -> None: ...

    @classmethod
    def from_matrices(
        cls: type[_C],
        target: ArrayLike,
        draft: ArrayLike,
        initial: ArrayLike | None = None,
        next_state: ArrayLike | None = None,
        **kwargs: Any,
    ) -> _C:
        """Same as the constructor; provided for symmetry with the other constructors."""
        return cls(target, draft, initial, next_state, **kwargs)

    @classmethod
    def iid(cls: type[_C], target: ArrayLike, draft: ArrayLike) -> _C:
        """One-state chain: the same laws at every position (i.i.d. acceptance).

        Examples
        --------
        >>> import spectheory as st
        >>> c = st.DecodingChain.iid([0.5, 0.5], [0.9, 0.1])
        >>> round(float(c.tv_profile(2)[0]), 6)
        0.4
        """
        t = as_law(target, "target")
        d = as_law(draft, "draft")
        if t.ndim != 1 or t.shape != d.shape:
            raise ValueError(
                f"target and draft: expected two 1-d laws of equal length, got {t.shape}, {d.shape}"
            )
        return cls(t[None], d[None], np.ones(1), np.zeros((1, t.size), dtype=np.int64))

    @classmethod
    def random(
        cls: type[_C],
        vocab_size: int,
        n_states: int | None = None,
        horizon: int | None = None,
        concentration: float = 1.0,
        draft_concentration: float | None = None,
        similarity: float = 0.0,
        rng: RNGLike = None,
    ) -> _C:
        r"""Random chain with Dirichlet next-token laws.

        Parameters
        ----------
        vocab_size : int
        n_states : int, optional
            Default ``vocab_size`` (first-order chain). Otherwise ``next_state`` is drawn
            uniformly at random.
        horizon : int, optional
            If given, one independent kernel per position (shape ``[horizon, S, V]``).
        concentration : float
            Dirichlet concentration of the target rows (small = peaked).
        draft_concentration : float, optional
            Same for the independent part of the draft (default: ``concentration``).
        similarity : float in [0, 1]
            Draft rows are ``similarity * target + (1 - similarity) * Dirichlet``; 1 gives
            draft == target.
        rng : seed or Generator
        """
        V = check_int(vocab_size, "vocab_size", 1)
        S = V if n_states is None else check_int(n_states, "n_states", 1)
        conc = float(check_nonneg(concentration, "concentration"))
        dconc = (
            conc
            if draft_concentration is None
            else float(check_nonneg(draft_concentration, "draft_concentration"))
        )
        if conc <= 0 or dconc <= 0:
            raise ValueError("concentration: must be > 0")
        lam = float(check_prob(similarity, "similarity"))
        lead = (S,) if horizon is None else (check_int(horizon, "horizon", 1), S)
        # refuse before allocating: target, draft and ~6 same-size temporaries and tables
        check_size(
            "chain",
            "vocab_size" if n_states is None else "n_states",
            states=S,
            vocab=V,
            positions=int(np.prod(lead)) // S,
        )
        rng = as_rng(rng)
        t = _dirichlet(rng, conc, lead + (V,))
        d = lam * t + (1.0 - lam) * _dirichlet(rng, dconc, lead + (V,))
        ns = None if S == V or S == 1 else rng.integers(0, S, size=(S, V))
        init = rng.dirichlet(np.ones(S))
        return cls(t, d, init, ns)

    @classmethod
    def ngram(
        cls: type[_C],
        target_counts: ArrayLike,
        draft_counts: ArrayLike,
        initial: ArrayLike | None = None,
        smoothing: float = 0.0,
    ) -> _C:
        r"""Order-k n-gram chain from token counts.

        Parameters
        ----------
        target_counts, draft_counts : array_like, shape (V,) * (k + 1)
            ``counts[c_1, ..., c_k, x]``: how often ``x`` followed the context
            ``c_1 ... c_k`` (``k = 0``: unigram counts of shape ``(V,)``).
        initial : array_like, shape (V**k,), optional
            Law of the starting context (index ``sum_i c_i V**(k - i)``). Default: the
            contexts' empirical frequency in ``target_counts``.
        smoothing : float
            Additive (Laplace) smoothing added to every count. Contexts with zero
            total count get the uniform law.

        The state is the last ``k`` tokens; ``next_state[s, x] = (s * V + x) mod V**k``.

        Examples
        --------
        >>> import numpy as np, spectheory as st
        >>> counts = st.ngram_counts([[0, 1, 1, 0, 1]], order=1, vocab_size=2)
        >>> chain = st.DecodingChain.ngram(counts, counts + 1)
        >>> chain.n_states
        2
        """
        tc = check_nonneg(target_counts, "target_counts")
        dc = check_nonneg(draft_counts, "draft_counts")
        if tc.shape != dc.shape:
            raise ValueError(f"target_counts and draft_counts: shape mismatch {tc.shape} vs {dc.shape}")
        V = tc.shape[-1]
        if V == 0 or any(n != V for n in tc.shape):
            raise ValueError(f"target_counts: expected shape (V,)*(k+1), got {tc.shape}")
        k = tc.ndim - 1
        S = V**k
        alpha = float(check_nonneg(smoothing, "smoothing"))

        def kernel(counts):
            c = counts.reshape(S, V) + alpha
            tot = c.sum(-1, keepdims=True)
            return np.where(tot > 0, c / np.where(tot > 0, tot, 1.0), 1.0 / V)

        ns = (np.arange(S)[:, None] * V + np.arange(V)[None, :]) % S
        if initial is None:
            ctx = tc.reshape(S, V).sum(-1) + alpha * V
            initial = ctx / ctx.sum() if ctx.sum() > 0 else np.full(S, 1.0 / S)
        return cls(kernel(tc), kernel(dc), initial, ns)

    @classmethod
    def prefix_tree(
        cls: type[_C],
        target_fn: Callable[[tuple[int, ...]], ArrayLike],
        draft_fn: Callable[[tuple[int, ...]], ArrayLike],
        vocab_size: int,
        horizon: int,
    ) -> _C:
        r"""Exact chain of any autoregressive model, enumerated as a prefix tree.

        The state is the whole prefix: ``S = sum_{n=0}^{T} V**n`` states (fine while
        ``V**T`` is small). ``target_fn(prefix)`` and ``draft_fn(prefix)`` map a tuple
        of tokens to a next-token law of length ``V``. Prefixes of length ``T`` are
        terminal (their kernels are never used within the horizon). The prefix of
        state ``i`` is ``chain.prefixes[i]``.

        Examples
        --------
        >>> import numpy as np, spectheory as st
        >>> tf = lambda prefix: np.array([0.5, 0.5]) if len(prefix) % 2 else np.array([0.9, 0.1])
        >>> df = lambda prefix: np.array([0.5, 0.5])
        >>> chain = st.DecodingChain.prefix_tree(tf, df, 2, 2)
        >>> chain.n_states
        7
        """
        V = check_int(vocab_size, "vocab_size", 1)
        T = check_int(horizon, "horizon", 1)
        prefixes = [p for n in range(T + 1) for p in itertools.product(range(V), repeat=n)]
        if len(prefixes) > 2_000_000:
            raise ValueError(f"horizon: prefix tree with V={V}, T={T} has {len(prefixes)} states (too many)")
        index = {p: i for i, p in enumerate(prefixes)}
        S = len(prefixes)
        t = np.full((S, V), 1.0 / V)
        d = np.full((S, V), 1.0 / V)
        ns = np.zeros((S, V), dtype=np.int64)
        for i, p in enumerate(prefixes):
            if len(p) == T:
                ns[i] = i
                continue
            t[i] = as_law(target_fn(p), f"target_fn{p}")
            d[i] = as_law(draft_fn(p), f"draft_fn{p}")
            ns[i] = [index[p + (x,)] for x in range(V)]
        init = np.zeros(S)
        init[0] = 1.0
        chain = cls(t, d, init, ns, max_horizon=T)
        chain.prefixes = prefixes
        return chain


def ngram_counts(sequences: Iterable[ArrayLike], order: int, vocab_size: int) -> np.ndarray:
    """Count order-``order`` n-grams: ``counts[c_1..c_k, x]`` over token sequences.

    Parameters
    ----------
    sequences : iterable of 1-d int arrays
    order : int
        Context length ``k >= 0``.
    vocab_size : int

    Returns
    -------
    ndarray, shape (vocab_size,) * (order + 1)
    """
    k = check_int(order, "order", 0)
    V = check_int(vocab_size, "vocab_size", 1)
    flat = np.zeros(V ** (k + 1))
    for seq in sequences:
        a = np.asarray(seq, dtype=np.int64)
        if a.ndim != 1:
            raise ValueError("sequences: each sequence must be 1-d")
        if a.size and (a.min() < 0 or a.max() >= V):
            raise ValueError(f"sequences: tokens must lie in [0, {V})")
        if a.size <= k:
            continue
        idx = np.zeros(a.size - k, dtype=np.int64)
        for j in range(k + 1):
            idx = idx * V + a[j : a.size - k + j]
        flat += np.bincount(idx, minlength=flat.size)
    return flat.reshape((V,) * (k + 1))


def _dirichlet(rng: np.random.Generator, conc: float, shape: tuple[int, ...]) -> np.ndarray:
    g = rng.gamma(conc, size=shape)
    g = np.maximum(g, np.finfo(float).tiny)  # tiny concentrations can underflow to an all-zero row
    return g / g.sum(-1, keepdims=True)
