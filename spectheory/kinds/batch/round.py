r"""Batch speculative decoding as a round: ``M`` i.i.d. drafts, first-token or tree reading.

Notation: p = target, q = draft. :class:`BatchRound` is a :class:`~spectheory.trees.TreeRound`
on :meth:`DraftTree.paths(M, gamma) <spectheory.trees.DraftTree.paths>` (``gamma=None``: to the
end of the horizon) with the verifier of its reading -- ``"first_token"``: ``"tree_rrs"``
(recursive rejection over the ``M`` first tokens, then the accepted draft alone; Yin et al.'s
construction), ``"tree"``: :data:`~spectheory.kinds.batch.verifier.BATCH_TREE` (recursive
rejection at every position over all the drafts that agree with the accepted prefix).

Its :meth:`~BatchRound.play` is the fast path of the tree round (as a verifier's
``fused_round`` is for a path): position by position, it draws the next tokens only of the
drafts the rule will look at -- the ``c`` drafts that agree with the accepted prefix, ``c = M``
at the first position, then ``c = 1`` (first-token) or the number of agreeing drafts that
carry the accepted token (tree). Drafts that no longer agree are never looked at again, so not
drawing them leaves the law unchanged (the tokens of agreeing drafts are i.i.d. ``q(. | prefix)``
whatever the verifier saw before); ``draft_tokens`` still counts ``M k`` per round. The law is
that of ``TreeRound(DraftTree.paths(M, gamma), verifier).play`` (tested), the draws are not.
Per position: ``rng.random((R, c_max))`` for the candidates, ``rng.random((R, c_max))`` for their
tests, ``rng.random(R)`` for a correction; then ``rng.random(R)`` for the bonus candidate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._guards import check_int
from ...laws.sampling import sample_categorical
from ...rounds.base import RoundOutcome, RoundRuns, RoundTags
from ...verifiers.tree_rules import _update_rrs
from ..tree.draft_tree import DraftTree
from ..tree.round import TreeRound
from .exact import batch_tree_expected
from .readings import READINGS, Reading, as_reading

__all__ = ["BatchRound", "READINGS"]


class BatchRound(TreeRound):
    """Batch speculative decoding: ``M`` drafts of ``gamma`` tokens, one of three readings.

    Parameters
    ----------
    M : int >= 1
        Draft sequences per round (drawn i.i.d. from the draft; ``M * k`` drafted tokens).
    gamma : int >= 1 or None
        Tokens per draft (``None``: to the end of the horizon).
    reading : {"first_token", "tree", "gls"} or Reading
        ``"first_token"``: ``"tree_rrs"`` on the ``M`` paths; ``"tree"``: the
        ``batch_tree`` verifier (see the module docstring and docs/trees.md); ``"gls"``:
        Gumbel-max list sampling over the agreeing drafts (:mod:`spectheory.kinds.batch.gls_tree`;
        per position ``rng.random((R, c_max, V))`` exponentials draw the drafts and the token).
        The name is mapped once to its :class:`~spectheory.kinds.batch.readings.Reading`
        (``self.reading``), which carries the verifier, the loops and what it cannot run.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.analysis import batch_expected_rejections
    >>> from spectheory.trees import BatchRound
    >>> chain = st.DecodingChain.random(3, rng=0)
    >>> sim = st.simulate(chain, 6, BatchRound(3, 2), 2000, rng=1, bonus=False)
    >>> m, se = sim.mean_se("rejections")
    >>> bool(abs(m - batch_expected_rejections(chain, 6, 3, gamma=2, bonus=False).total) < 5 * se)
    True
    """

    def __init__(self, M: int, gamma: int | None = None, reading: str | Reading = "first_token") -> None:
        self.M = check_int(M, "M", 1)
        self.gamma = None if gamma is None else check_int(gamma, "gamma", 1)
        self.reading = as_reading(reading)
        self.all_agreeing = self.reading.all_agreeing
        self.verifier = self.reading.verifier
        self.tree = None if self.gamma is None else DraftTree.paths(self.M, self.gamma)
        self.max_elements = 1 << 22
        self._trees: dict[int, DraftTree] = {}
        self._anc = {}

    def tree_for(self, horizon: int) -> DraftTree:
        """``DraftTree.paths(M, gamma)`` (``gamma=None``: ``DraftTree.paths(M, horizon)``)."""
        if self.tree is not None:
            return self.tree
        if horizon not in self._trees:
            self._trees[horizon] = DraftTree.paths(self.M, horizon)
        return self._trees[horizon]

    @property
    def max_depth(self) -> int | None:
        return self.gamma

    @property
    def name(self) -> str:
        return f"batch(M={self.M}, gamma={self.gamma}, reading={self.reading})"

    def describe(self) -> str:
        length = "to the end of the horizon" if self.gamma is None else f"of {self.gamma} tokens"
        return f"{self.M} i.i.d. drafts {length}, {self.reading} reading"

    def chunk_size(self, chain: Any, horizon: int) -> int:
        """Runs per chunk so that one position's ``[R, M]`` candidates and ``[R, V]`` laws stay small."""
        return max(1, int(self.max_elements // (4 * (self.M + chain.vocab_size))))

    def play(self, sampler: Any, runs: RoundRuns, rng: np.random.Generator) -> RoundOutcome:
        return self.reading.play(self, sampler, runs, rng)

    def _play_rrs(
        self, smp: Any, T: int, n: np.ndarray, state: np.ndarray, rng: np.random.Generator, keep_path: bool
    ) -> RoundOutcome:
        """Recursive rejection over the agreeing drafts (the first-token and tree readings)."""
        return self._walk(smp, T, n, state, rng, keep_path, self._rrs_position)

    def _play_gls(
        self, smp: Any, T: int, n: np.ndarray, state: np.ndarray, rng: np.random.Generator, keep_path: bool
    ) -> RoundOutcome:
        """Algorithm 2 of Rowan et al. (2025) with shared exponentials, agreeing drafts only."""
        return self._walk(smp, T, n, state, rng, keep_path, self._gls_position)

    def _walk(
        self,
        smp: Any,
        T: int,
        n: np.ndarray,
        state: np.ndarray,
        rng: np.random.Generator,
        keep_path: bool,
        position: Any,
    ) -> RoundOutcome:
        """Position by position over the live runs; ``position`` decides one position.

        ``position(smp, m, sl, c, rng)`` gets the live runs' positions ``m``, states ``sl`` and
        agreeing-draft counts ``c`` and returns ``(bad, final, tok, count)``: which runs reject,
        the final token of those, the accepted token of the others and their new counts.
        """
        R, M = n.shape[0], self.M
        k = np.minimum(self.depth(T), T - n)
        K = int(k.max())
        s = np.array(state, dtype=np.int64)
        j = np.zeros(R, dtype=np.int64)
        y = np.zeros(R, dtype=np.int64)
        rejected = np.zeros(R, dtype=bool)
        count = np.full(R, M, dtype=np.int64)  # drafts agreeing with the accepted prefix
        path = np.zeros((R, K), dtype=np.int64) if keep_path else None
        live = np.arange(R)
        for d in range(K):
            m = np.minimum(n[live] + d, T - 1)
            sl = s[live]
            bad, final, tok, hits = position(smp, m, sl, count[live], rng)
            rej = live[bad]
            rejected[rej] = True
            y[rej] = final
            ok = ~bad
            acc_rows = live[ok]
            if path is not None:
                path[acc_rows, d] = tok
            j[acc_rows] += 1
            s[acc_rows] = smp.next_state[sl[ok], tok]
            count[acc_rows] = hits
            live = acc_rows[j[acc_rows] < k[acc_rows]]
            if not live.size:
                break
        done = np.flatnonzero(~rejected & (n + k < T))
        ub = rng.random(done.size)
        if done.size:
            y[done] = smp.sample_target(n[done] + k[done], s[done], ub)
        return RoundOutcome(accepted=j, final=y, rejected=rejected, drafted=k * M, end_state=s, path=path)

    def _rrs_position(
        self, smp: Any, m: np.ndarray, sl: np.ndarray, c: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
        """One position of recursive rejection over the ``c`` agreeing drafts of each live run."""
        L = m.size
        C = int(c.max())
        t = smp.rows(smp.target, m, sl)
        q = smp.rows(smp.draft, m, sl)
        u = rng.random((L, C))
        cand = smp.sample_draft(np.repeat(m, C), np.repeat(sl, C), u.ravel()).reshape(L, C)
        ua = rng.random((L, C))
        uf = rng.random(L)
        rows = np.arange(L)
        r = t.copy()
        slot = np.full(L, -1, dtype=np.int64)
        for i in range(C):
            here = (i < c) & (slot < 0)
            x = cand[:, i]
            qx = q[rows, x]
            a = np.minimum(1.0, np.where(qx > 0, r[rows, x] / np.where(qx > 0, qx, 1.0), 0.0))
            acc = here & (ua[:, i] < a)
            slot[acc] = i
            r = _update_rrs(r, q, here & ~acc)
        bad = slot < 0
        ok = ~bad
        tok = cand[ok, slot[ok]]
        hits: Any = 1
        if self.all_agreeing:
            hits = ((cand[ok] == tok[:, None]) & (np.arange(C)[None, :] < c[ok, None])).sum(1)
        return bad, sample_categorical(r[bad], uf[bad]), tok, hits

    def _gls_position(
        self, smp: Any, m: np.ndarray, sl: np.ndarray, c: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One position of Gumbel-max list sampling over the ``c`` agreeing drafts of each live run."""
        t = smp.rows(smp.target, m, sl)
        q = smp.rows(smp.draft, m, sl)
        E = -np.log(1.0 - rng.random((m.size, int(c.max()), t.shape[1])))
        on = np.arange(E.shape[1])[None, :] < c[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            cand = np.argmin(np.where(q[:, None] > 0, E / q[:, None], np.inf), axis=-1)
            score = np.where(on[:, :, None], E, np.inf).min(1)
            tok = np.argmin(np.where(t > 0, score / np.where(t > 0, t, 1.0), np.inf), axis=-1)
        hits = (on & (cand == tok[:, None])).sum(1)
        bad = hits == 0
        ok = ~bad
        return bad, tok[bad], tok[ok], hits[ok]

    def exact(self, chain: Any, horizon: int, *, bonus: bool = True, cost: Any = None, **options: Any) -> Any:
        """Exact values: the tree reading by :func:`~spectheory.kinds.batch.exact.batch_tree_expected`
        (a :class:`~spectheory.trees.BatchTreeResult`), the first-token reading as ``tree_rrs`` on
        the ``M`` paths (:meth:`TreeRound.exact`)."""
        coupling = self.reading.coupling
        if coupling is None:
            return super().exact(chain, horizon, bonus=bonus, cost=cost, **options)
        if options:
            raise ValueError(
                f"options: the batch tree reading's exact engine takes none, got {sorted(options)}"
            )
        res = batch_tree_expected(chain, horizon, self.M, gamma=self.gamma, bonus=bonus, coupling=coupling)
        return res if cost is None else res.with_cost(cost)

    def decode(
        self, loops: Any, target: Any, draft: Any, prompts: Any, max_new_tokens: int, options: dict[str, Any]
    ) -> Any:
        """The real decoder through the reading's loop (:meth:`Reading.decode
        <spectheory.kinds.batch.readings.Reading.decode>`: ``loops.tree`` on the ``M`` paths, or
        ``loops.gls``); a finite ``gamma`` and a reading with a loop (:meth:`tags`)."""
        return self.reading.decode(self, loops, target, draft, prompts, max_new_tokens, options)

    def check_plan(self, kit: Any, options: dict[str, Any]) -> Any:
        """The tree kit on the ``M``-path tree with the reading's kit callable."""
        return self._check_tree(kit, options, self.reading.kit_verify(kit, self.verifier))

    def tags(self) -> RoundTags:
        """:meth:`TreeRound.tags` less what the reading cannot run (:meth:`Reading.why_not
        <spectheory.kinds.batch.readings.Reading.why_not>`) and, without a finite ``gamma``, the
        decoder and the kit (both need the tree)."""
        tags = super().tags()
        why = dict(self.reading.why_not())
        if self.gamma is None:
            why.setdefault("decoder", "no finite draft length (give gamma)")
            why.setdefault("kit", "no finite draft length (give gamma)")
        return tags.refuse(why)

    def __repr__(self) -> str:
        return f"BatchRound(M={self.M}, gamma={self.gamma}, reading={self.reading.name!r})"
