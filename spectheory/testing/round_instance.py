r"""One test instance of the conformance kit: a round's small context-dependent laws, exact answers.

An :class:`Instance` describes one speculative *round* of ``k`` draft tokens as a tiny
first-order tree. Position ``j`` (``0 <= j <= k``) has next-token laws that depend on the
previous token ``s`` (``s = s0`` before the round):

* ``target[j, s]`` -- target law at position ``j`` after token ``s`` (``p``);
* ``draft[j, s]`` -- draft law at position ``j < k`` after token ``s`` (``q``).

The kit draws the draft tokens itself, ``x_0 ~ q_0(. | s0)``, ``x_j ~ q_j(. | x_{j-1})``, and
hands the verifier ``target_probs[j] = target[j, x_{j-1}]`` (``k+1`` rows, the last being the
bonus law after all drafts) and ``draft_probs[j] = draft[j, x_{j-1}]``. A context-free
instance has identical rows for every ``s``. Everything a correct (lossless) verifier must
produce is then known exactly:

* the law of the sequence, once the emitted tokens are *completed* to ``k+1`` tokens by the
  target itself (as the next round would do), is :math:`\prod_j p_j(y_j | y_{j-1})`
  (:meth:`Instance.sequence_law`), with position marginals :meth:`Instance.position_laws`;
* standard token verification accepts at least ``i`` drafts with probability
  :math:`P(N \ge i) = \sum_s a_i(s)`, :math:`a_0 = e_{s_0}`,
  :math:`a_i(s) = \sum_{s'} a_{i-1}(s') \min(p_{i-1}(s|s'), q_{i-1}(s|s'))`
  (:meth:`Instance.accepted_count_law`), the optimum for the first position being
  :math:`\beta = \sum_x \min(p_0(x), q_0(x))`.

The adversarial families of instances and the boundary uniforms are in
:mod:`spectheory.testing.instances`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from .._guards import as_law, as_rng, check_int
from .._typing import RNGLike
from ..laws.sampling import normalized_cdf, sample_from_cdf

__all__ = ["Instance", "MAX_BLOCKS"]

#: Most draft blocks :meth:`Instance.block_accepted_law` enumerates.
MAX_BLOCKS = 50_000


@dataclass(frozen=True)
class Instance:
    """One round's laws as a tiny first-order tree (see the module docstring).

    Parameters
    ----------
    name : str
        Family name plus sizes, e.g. ``"markov V=4 k=3"``.
    description : str
        What the instance stresses.
    target : ndarray, shape (k+1, V, V)
        ``target[j, s]``: target law at position ``j`` after token ``s``.
    draft : ndarray, shape (k, V, V)
        ``draft[j, s]``: draft law at position ``j`` after token ``s``.
    s0 : int
        Token before the round.
    family : str
        The family it was built from (:data:`~spectheory.testing.instances.ALL_FAMILIES`).
    shown : (ndarray, ndarray) or None
        The target and draft arrays the sampler is *handed* (shapes of ``target`` and ``draft``,
        any float dtype), where they differ from the laws: float16 rows that do not sum to 1, a
        draft masked after it was drawn, a NaN (:mod:`spectheory.testing.hostile`). The drafts
        are still drawn from ``draft`` and the output judged against ``target``. None: the laws.
    """

    name: str
    description: str
    target: np.ndarray
    draft: np.ndarray
    s0: int = 0
    family: str = field(default="custom")
    shown: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        t = as_law(self.target, "target", min_ndim=3)
        d = as_law(self.draft, "draft", min_ndim=3)
        k1, V, V2 = t.shape
        if V != V2 or d.shape != (k1 - 1, V, V) or k1 < 2:
            raise ValueError(
                f"target, draft: expected shapes (k+1, V, V) and (k, V, V) with k >= 1, "
                f"got {t.shape} and {d.shape}"
            )
        s0 = check_int(self.s0, "s0", 0)
        if s0 >= V:
            raise ValueError(f"s0: must lie in [0, {V}), got {s0}")
        object.__setattr__(self, "target", t)
        object.__setattr__(self, "draft", d)
        object.__setattr__(self, "s0", s0)
        if self.shown is not None:
            st, sd = (np.asarray(a) for a in self.shown)
            if st.shape != t.shape or sd.shape != d.shape or st.dtype.kind != "f" or sd.dtype.kind != "f":
                raise ValueError(f"shown: expected float arrays of shapes {t.shape} and {d.shape}")
            object.__setattr__(self, "shown", (st, sd))

    @property
    def k(self) -> int:
        """Number of draft tokens per round."""
        return self.draft.shape[0]

    @property
    def vocab_size(self) -> int:
        return self.target.shape[-1]

    # ---------------------------------------------------------------- exact answers
    def sequence_law(self, length: int | None = None) -> np.ndarray:
        r"""Exact target law of the first ``length`` (default ``k+1``) tokens, shape ``(V,)*length``."""
        L = self.k + 1 if length is None else length
        law = self.target[0, self.s0]
        for j in range(1, L):
            law = law[..., :, None] * self.target[j]
        return law

    def position_laws(self) -> np.ndarray:
        r"""Exact target marginal of each position, shape ``(k+1, V)``."""
        out = [self.target[0, self.s0]]
        for j in range(1, self.k + 1):
            out.append(out[-1] @ self.target[j])
        return np.array(out)

    def accepted_count_law(self, stop_token: int | None = None) -> np.ndarray:
        r"""Law of the number ``N`` of accepted drafts under standard token verification, ``(k+1,)``.

        With a ``stop_token``, a round ends once that token is accepted (no further drafts are
        verified): :math:`a_i(s)` then only continues from :math:`a_{i-1}(s')` with
        :math:`s' \ne` the stop token (for :math:`i \ge 2`).
        """
        a = np.zeros(self.vocab_size)
        a[self.s0] = 1.0
        at_least = [1.0]
        for j in range(self.k):
            if stop_token is not None and j >= 1:
                a = a.copy()
                a[stop_token] = 0.0
            a = a @ np.minimum(self.target[j], self.draft[j])
            at_least.append(min(float(a.sum()), at_least[-1]))
        at_least = np.clip(np.array(at_least + [0.0]), 0.0, 1.0)
        return at_least[:-1] - at_least[1:]

    def block_accepted_law(self) -> np.ndarray | None:
        r"""Law of the accepted count under block verification, ``(k+1,)``; None past ``MAX_BLOCKS`` blocks.

        Block verification (Sun et al. 2024) is the optimum of lossless single-path rules: no
        rule that emits the target law from one draft path accepts more drafts on average.
        Exact, by enumerating the :math:`V^k` draft blocks
        (:func:`spectheory.verifiers.block_scan.block_weights` on each, weighted by the draft law).

        Examples
        --------
        >>> import numpy as np
        >>> from spectheory.testing import Instance
        >>> t = np.tile([1 / 3, 2 / 3], (3, 2, 1)); d = np.tile([2 / 3, 1 / 3], (2, 2, 1))
        >>> law = Instance("iid", "", t, d).block_accepted_law()
        >>> round(float(law @ np.arange(3)) * 9, 10)  # 11/9 (token verification: 10/9)
        11.0
        """
        from ..verifiers.block import block_weights

        k, V = self.k, self.vocab_size
        if V**k > MAX_BLOCKS:
            return None
        x = np.array(list(itertools.product(range(V), repeat=k)), dtype=np.int64).reshape(-1, k)
        prev = np.concatenate([np.full((x.shape[0], 1), self.s0), x[:, :-1]], axis=1)
        j = np.arange(k)[None, :]
        dp = self.draft[j, prev]  # [N, k, V]
        qx = np.prod(np.take_along_axis(dp, x[..., None], axis=2)[..., 0], axis=1)
        keep = qx > 0
        x, prev, dp, qx = x[keep], prev[keep], dp[keep], qx[keep]
        tp = np.concatenate([self.target[j, prev], self.target[k, x[:, -1]][:, None]], axis=1)
        _, tau, _ = block_weights(tp, dp, x, np.full(x.shape[0], k))
        return qx @ tau

    def first_acceptance(self) -> float:
        r""":math:`\beta = \sum_x \min(p_0(x), q_0(x))`, the optimal acceptance of the first draft."""
        return float(np.clip(np.minimum(self.target[0, self.s0], self.draft[0, self.s0]).sum(), 0.0, 1.0))

    def absorbing(self, stop_token: int) -> Instance:
        """The target laws of a protocol that stops at ``stop_token``: after it, only it (absorbing).

        The law a stop-aware sampler must produce, once its output is completed by this
        instance's target (the completion repeats the stop token). Draft laws are unchanged.
        """
        t = self.target.copy()
        t[1:, stop_token] = np.eye(self.vocab_size)[stop_token]
        return Instance(self.name, self.description, t, self.draft, self.s0, self.family, self.shown)

    def greedy(self) -> Instance:
        """The temperature-0 target: each row uniform over its argmax set (one-hot without ties).

        A greedy (temperature-0) sampler must emit only argmax tokens: the kit checks that
        exactly as ``zero_probability`` against these laws (which argmax a tie picks is free).
        Draft laws are unchanged.

        >>> import numpy as np
        >>> from spectheory.testing import make_instance
        >>> inst = make_instance("markov", 3, 2, 0).greedy()
        >>> bool(np.all(np.isin(inst.target, (0.0, 0.5, 1.0 / 3, 1.0))))
        True
        """
        t = self.target
        top = t >= t.max(axis=-1, keepdims=True)
        law = top / top.sum(-1, keepdims=True)
        return Instance(self.name, self.description, law, self.draft, self.s0, self.family, self.shown)

    # ---------------------------------------------------------------- sampling
    def sample_drafts(
        self, n: int, rng: RNGLike, drafting: str = "sample"
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Draw ``n`` draft paths; return ``(target_probs [n,k+1,V], draft_probs [n,k,V], tokens [n,k])``.

        ``drafting="argmax"`` drafts the most probable token at each position (greedy
        drafting, :attr:`spectheory.verifiers.Verifier.drafting`); the uniforms are drawn
        either way, so the kit's other streams do not move. The probabilities are those the
        sampler is handed (:attr:`shown`, in its dtype, where set); the drafts come from the laws."""
        if drafting not in ("sample", "argmax"):
            raise ValueError(f"drafting: expected 'sample' or 'argmax', got {drafting!r}")
        rng = as_rng(rng)
        k, V = self.k, self.vocab_size
        prev = np.full(n, self.s0, dtype=np.int64)
        tokens = np.empty((n, k), dtype=np.int64)
        st, sd = (self.target, self.draft) if self.shown is None else self.shown
        tp = np.empty((n, k + 1, V), dtype=st.dtype)
        dp = np.empty((n, k, V), dtype=sd.dtype)
        for j in range(k):
            dp[:, j] = sd[j, prev]
            tp[:, j] = st[j, prev]
            cdf = normalized_cdf(self.draft[j])[prev]
            u = rng.random(n)
            prev = (
                np.argmax(self.draft[j][prev], axis=-1) if drafting == "argmax" else sample_from_cdf(cdf, u)
            )
            tokens[:, j] = prev
        tp[:, k] = st[k, prev]
        return tp, dp, tokens

    def complete(self, emitted: np.ndarray, lengths: np.ndarray, rng: RNGLike) -> np.ndarray:
        """Continue each emitted prefix ``emitted[i, :lengths[i]]`` to ``k+1`` tokens with the target."""
        rng = as_rng(rng)
        out = np.array(emitted, dtype=np.int64, copy=True)
        n = int(out.shape[0])
        cdfs = [normalized_cdf(self.target[j]) for j in range(self.k + 1)]
        prev = np.full(n, self.s0, dtype=np.int64)
        for j in range(self.k + 1):
            u = rng.random(n)
            fill = lengths <= j
            if fill.any():
                out[fill, j] = sample_from_cdf(cdfs[j][prev[fill]], u[fill])
            prev = out[:, j]
        return out

    def emitted_target_prob_zero(self, emitted: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Boolean ``[n]``: the emitted prefix contains a token of target probability exactly 0."""
        n = emitted.shape[0]
        bad = np.zeros(n, dtype=bool)
        prev = np.full(n, self.s0, dtype=np.int64)
        for j in range(emitted.shape[1]):
            live = lengths > j
            tok = np.where(live, emitted[:, j], 0)
            bad |= live & (self.target[j, prev, tok] == 0.0)
            prev = tok
        return bad

    def describe(self) -> str:
        """Human-readable laws (the rows reachable from ``s0`` when context-free, else all)."""
        with np.printoptions(precision=4, suppress=False, linewidth=100):
            lines = [f"{self.name}: {self.description}", f"  s0 = {self.s0}"]
            free = all(np.all(self.target[j] == self.target[j, :1]) for j in range(self.k + 1)) and all(
                np.all(self.draft[j] == self.draft[j, :1]) for j in range(self.k)
            )
            for j in range(self.k + 1):
                rows = [self.s0] if (j == 0 or free) else range(self.vocab_size)
                for s in rows:
                    ctx = "" if (j == 0 or free) else f" | prev={s}"
                    lines.append(f"  target[{j}{ctx}] = {self.target[j, s]}")
                    if j < self.k:
                        lines.append(f"  draft [{j}{ctx}] = {self.draft[j, s]}")
            return "\n".join(lines)
