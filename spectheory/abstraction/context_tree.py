r"""Context trees: variable-order Markov states over a byte (or any) vocabulary.

A context is the tuple of the last ``l`` tokens (oldest first), keyed as the integer
``sum_i c_i V**(l - i)``. A :class:`ContextTree` is a set of contexts that is

- *suffix-closed*: with ``(c_1..c_l)`` it holds ``(c_2..c_l)`` (down to the empty context);
- *transition-closed*: with ``(c_1..c_l)`` it holds ``(c_1..c_{l-1})``.

The state of a prefix is its longest suffix in the tree. Transition-closure makes the
state after token ``x`` a function of (state, ``x``) alone: the longest tree suffix of
``(state, x)`` (if a longer one ``(w, x)`` matched the history, ``w`` would be in the tree
and a suffix of the history longer than the state). So the tree is an exact,
deterministic state abstraction, and :func:`~.fitting.fit_abstraction` with
``per_position=True`` gives a certified chain (``docs/markov_abstraction.md``).

:meth:`ContextTree.order_k` holds every context of length ``<= k`` seen in the samples
(the order-k chain); :meth:`ContextTree.grow` grows a tree greedily, one context at a time,
keeping the split with the largest gain in the Theorem-1 sum (the TV gain
``sum_children w TV - w_parent TV``, always >= 0 by convexity) among contexts seen at least
``min_count`` times, until a budget of states; any prefix of its growth order is a tree.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from .fitting import state_sums

__all__ = ["ContextTree"]


def _keys(paths, n_prompt, order, V):
    """Keys ``[N, T]`` of the last ``order`` tokens before each generated position."""
    L = n_prompt
    T = paths.shape[1] - L
    key = np.zeros((paths.shape[0], T), dtype=np.int64)
    for i in range(order):
        key = key * V + paths[:, L - order + i : L - order + i + T]
    return key


class ContextTree:
    """A suffix- and transition-closed set of contexts; the states are its contexts.

    Parameters
    ----------
    contexts : iterable of (length, key)
        Closed under both rules automatically (missing contexts are added).
    vocab_size : int

    Attributes
    ----------
    contexts : list of (length, key), the state order (by length, then key)
    n_states, max_order : int

    Examples
    --------
    >>> tree = ContextTree([(2, 1 * 4 + 2)], vocab_size=4)     # context (1, 2)
    >>> tree.contexts                                          # closure adds (2,), (1,), ()
    [(0, 0), (1, 1), (1, 2), (2, 6)]
    >>> tree.next_state[2].tolist()                            # from (2,): (2, x) -> (x,) or ()
    [0, 1, 2, 0]
    """

    def __init__(self, contexts: Iterable[tuple[int, int]], vocab_size: int = 256) -> None:
        V = check_int(vocab_size, "vocab_size", 2)
        todo = {(0, 0)} | {(int(l), int(k)) for l, k in contexts}
        nodes = set()
        while todo:
            l, k = todo.pop()
            if (l, k) in nodes:
                continue
            nodes.add((l, k))
            if l:
                todo.update({(l - 1, k % V ** (l - 1)), (l - 1, k // V)})
        self.vocab_size = V
        self.contexts = sorted(nodes)
        self.max_order = max(l for l, _ in self.contexts)
        self._tables = [
            np.array(sorted(k for l, k in self.contexts if l == j), dtype=np.int64)
            for j in range(self.max_order + 1)
        ]
        self._offsets = np.cumsum([0] + [len(t) for t in self._tables])

    @property
    def n_states(self) -> int:
        return len(self.contexts)

    def lookup(self, keys: np.ndarray, lengths: ArrayLike) -> np.ndarray:
        """State of the longest tree suffix of the contexts ``keys`` of lengths ``lengths``."""
        keys = np.asarray(keys, dtype=np.int64)
        lengths = np.broadcast_to(np.asarray(lengths), keys.shape)
        V = self.vocab_size
        state = np.full(keys.shape, -1, dtype=np.int64)
        for j in range(self.max_order, -1, -1):
            tab = self._tables[j]
            ok = (lengths >= j) & (state < 0)
            if not ok.any() or not len(tab):
                continue
            q = keys % (V**j)
            pos = np.clip(np.searchsorted(tab, q), 0, len(tab) - 1)
            state = np.where(ok & (tab[pos] == q), self._offsets[j] + pos, state)
        return state

    def assign(self, paths: np.ndarray, n_prompt: int) -> np.ndarray:
        """States ``[N, T]`` of the prefixes before each generated token of ``paths [N, L + T]``."""
        paths = np.asarray(paths, dtype=np.int64)
        L = check_int(n_prompt, "n_prompt", 0)
        if self.max_order > L:
            raise ValueError(f"n_prompt: must be >= the tree's max order {self.max_order}, got {L}")
        return self.lookup(_keys(paths, L, self.max_order, self.vocab_size), self.max_order)

    def initial_states(self, prompts: np.ndarray) -> np.ndarray:
        """States of the prompts (their last ``max_order`` tokens)."""
        p = np.asarray(prompts, dtype=np.int64)
        m = self.max_order
        if p.ndim != 2 or p.shape[1] < m:
            raise ValueError(f"prompts: expected shape (P, L) with L >= {m}, got {p.shape}")
        key = np.zeros(len(p), dtype=np.int64)
        for i in range(m):
            key = key * self.vocab_size + p[:, p.shape[1] - m + i]
        return self.lookup(key, m)

    @property
    def next_state(self) -> np.ndarray:
        """``[S, V]``: the longest tree suffix of ``(context, x)``."""
        V, m = self.vocab_size, self.max_order
        lens = np.array([l for l, _ in self.contexts])
        keys = np.array([k for _, k in self.contexts], dtype=np.int64)
        new = (
            (keys[:, None] * V + np.arange(V)[None, :]) % (V**m) if m else np.zeros((len(keys), V), np.int64)
        )
        return self.lookup(new, np.minimum(lens + 1, m)[:, None])

    def subtree_kernels(
        self, paths: np.ndarray, n_prompt: int, target_laws: np.ndarray, draft_laws: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Back-off kernels ``(target, draft)`` ``[S, V]``: for each context, the average law over
        *all* positions whose context ends in it (its subtree), not only those in its state.
        A context no position ends in (possible only after closure) takes its suffix's."""
        paths = np.asarray(paths, dtype=np.int64)
        V = self.vocab_size
        out = []
        for laws in (target_laws, draft_laws):
            k = np.zeros((self.n_states, V))
            for j in range(self.max_order + 1):
                keys = _keys(paths, n_prompt, j, V)
                idx = self.lookup(keys, j)
                hit = self._offsets[j] <= idx
                sums, cnt = state_sums(np.where(hit, idx, self.n_states), laws, self.n_states + 1)
                sl = slice(self._offsets[j], self._offsets[j + 1])
                seen = cnt[sl] > 0
                block = np.where(seen[:, None], sums[sl] / np.where(seen, cnt[sl], 1.0)[:, None], 0.0)
                if j and not seen.all():  # unseen: the suffix's kernel (already filled)
                    suf = self.lookup(np.asarray(self._tables[j]) % V ** (j - 1), j - 1)
                    block[~seen] = k[suf[~seen]]
                elif not seen.all():
                    block[~seen] = 1.0 / V
                k[sl] = block
            out.append(k)
        return out[0], out[1]

    # ---------------------------------------------------------------- builders
    @classmethod
    def order_k(cls, paths: np.ndarray, n_prompt: int, order: int, vocab_size: int = 256) -> ContextTree:
        """Every context of length ``<= order`` seen before a generated token (the order-k chain)."""
        k = check_int(order, "order", 0)
        paths = np.asarray(paths, dtype=np.int64)
        keys = np.unique(_keys(paths, n_prompt, k, vocab_size))
        return cls([(k, int(x)) for x in keys], vocab_size)

    @classmethod
    def grow(
        cls,
        paths: np.ndarray,
        n_prompt: int,
        target_laws: np.ndarray,
        draft_laws: np.ndarray,
        budget: int,
        max_order: int = 6,
        min_count: int = 8,
        min_gain: float = 0.0,
        vocab_size: int = 256,
        return_order: bool = False,
    ) -> ContextTree | tuple[ContextTree, list]:
        r"""Grow a tree greedily by Theorem-1 gain until ``budget`` states.

        A candidate context ``u = (a, c)`` (one token older than a tree context ``c``, seen
        ``>= min_count`` times, with ``(a, c_1..c_{l-1})`` in the tree) has gain
        ``(|D_u|_1 + |R_c - D_u|_1 - |R_c|_1) / (2N)``, where ``D_u`` sums ``p - q``
        (p = target, q = draft) over the positions whose context ends in ``u`` and ``R_c``
        over the positions currently in state ``c``: the increase of the fitted chain's
        Theorem-1 sum when ``u`` becomes a state. Returns the tree (and, with
        ``return_order``, the contexts in the order added: any prefix of it is a tree).
        """
        V = vocab_size
        paths = np.asarray(paths, dtype=np.int64)
        B = check_int(budget, "budget", 1)
        if float(V) ** check_int(max_order, "max_order", 0) >= 2.0**62:
            raise ValueError(f"max_order: contexts of length {max_order} over {V} tokens overflow int64 keys")
        diff = np.asarray(target_laws, np.float64) - np.asarray(draft_laws, np.float64)
        N = len(paths)
        info: dict[tuple[int, int], int] = {}
        rows: list[np.ndarray] = []
        for j in range(max_order + 1):
            keys = _keys(paths, n_prompt, j, V)
            uniq, inv = np.unique(keys.ravel(), return_inverse=True)
            cnt = np.bincount(inv)
            keep = cnt >= (min_count if j else 0)
            sums, _ = state_sums(inv.reshape(keys.shape), diff, len(uniq))
            for u, row in zip(uniq[keep], sums[keep]):
                info[(j, int(u))] = len(rows)
                rows.append(row)
        D = np.array(rows)
        resid = {(0, 0): D[info[(0, 0)]].copy()}
        version = {(0, 0): 0}
        order = [(0, 0)]
        heap: list[Any] = []

        def gain(u):
            c = (u[0] - 1, u[1] % V ** (u[0] - 1))
            d, r = D[info[u]], resid[c]
            return (np.abs(d).sum() + np.abs(r - d).sum() - np.abs(r).sum()) / (2 * N), c

        def push_children(c):
            """Candidates made eligible by adding ``c``: older extensions of ``c``, and newer
            extensions ``(c, x)`` whose suffix is in the tree."""
            l, k = c
            if l >= max_order:
                return
            for a in range(V):
                for u in ((l + 1, a * V**l + k), (l + 1, k * V + a)):
                    if u in info and u not in resid:
                        par, pre = (u[0] - 1, u[1] % V ** (u[0] - 1)), (u[0] - 1, u[1] // V)
                        if par in resid and pre in resid:
                            g, p = gain(u)
                            heapq.heappush(heap, (-g, u, version[p]))

        push_children((0, 0))
        while heap and len(order) < B:
            g, u, ver = heapq.heappop(heap)
            if u in resid:
                continue
            par = (u[0] - 1, u[1] % V ** (u[0] - 1))
            if ver != version[par]:
                g2, _ = gain(u)
                heapq.heappush(heap, (-g2, u, version[par]))
                continue
            if -g < min_gain:
                break
            resid[par] = resid[par] - D[info[u]]
            version[par] += 1
            resid[u] = D[info[u]].copy()
            version[u] = 0
            order.append(u)
            push_children(u)
        tree = cls(order, V)
        return (tree, order) if return_order else tree
