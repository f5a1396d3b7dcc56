r"""Vectorised Monte Carlo of speculative decoding on a :class:`~spectheory.DecodingChain`.

The protocol (``docs/protocol.md``): a *round* starts with
``n < T`` tokens generated; the draft proposes ``k = min(gamma, T - n)`` tokens along its
own path; the target scores them in one call; a verifier accepts a prefix of ``j`` of them
and, if ``j < k``, emits one residual token (a *rejection*); if ``j == k`` and ``n + k < T``
and ``bonus=True``, it emits one bonus token from the target. Counted per generation:
``target_calls`` (+1 per round), ``draft_tokens`` (+k per round), ``rejections``
(+1 per round with ``j < k``), ``accepted`` (+j per round), and the accepted count ``j``
of every round.

Runs are simulated together: the loop is over rounds (and the ``gamma`` positions of a
round), never over runs or over the vocabulary. Runs are processed in chunks so that the
per-round law arrays ``[R, gamma + 1, V]`` stay small.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from .._guards import check_bool, check_int, check_memory
from ..laws.sampling import CdfTable, normalized_cdf, residual_weights, sample_from_cdf
from ..verifiers.base import Verifier, get_verifier
from .stats import mean_and_se

__all__ = ["simulate", "sample_target", "SimulationResult", "mean_and_se"]

#: Upper bound on the number of float64 entries of the per-round law arrays of one chunk.
_CHUNK_ELEMS = 1 << 22
#: progress=None shows a bar only once a run has lasted this many seconds.
_PROGRESS_DELAY_S = 3.0

STATISTICS = ("target_calls", "rejections", "draft_tokens", "accepted")


@dataclass
class SimulationResult:
    """Per-run counters of a speculative-decoding simulation.

    Attributes
    ----------
    horizon, gamma : int
    bonus : bool
    verifier : str
        The verifier's name.
    target_calls, rejections, draft_tokens, accepted : ndarray of int64, shape (n_runs,)
        Per-run totals over one generation of ``horizon`` tokens.
    accepted_counts : ndarray of int64, shape (n_runs, gamma + 1)
        ``accepted_counts[r, j]``: number of rounds of run ``r`` that accepted ``j`` drafts
        (its mean over runs estimates ``ProtocolResult.accepted_counts``).
    rejection_by_position : ndarray of int64, shape (horizon,)
        Number of runs whose token at position ``n`` was emitted by a rejection (divided by
        ``n_runs`` it estimates ``ProtocolResult.rejection_by_position``).
    tokens : ndarray of int64, shape (n_runs, horizon), or None
    """

    horizon: int
    gamma: int
    bonus: bool
    verifier: str
    target_calls: np.ndarray
    rejections: np.ndarray
    draft_tokens: np.ndarray
    accepted: np.ndarray
    accepted_counts: np.ndarray
    rejection_by_position: np.ndarray
    tokens: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_runs(self) -> int:
        return int(self.target_calls.shape[0])

    @property
    def accepted_hist(self) -> np.ndarray:
        """Accepted-count histogram of all rounds of all runs, shape ``[gamma + 1]``."""
        return self.accepted_counts.sum(axis=0)

    def mean_se(self, name: str) -> tuple[float, float]:
        """Mean and standard error of a per-run statistic (one of ``STATISTICS``)."""
        if name not in STATISTICS:
            raise ValueError(f"name: expected one of {STATISTICS}, got {name!r}")
        return mean_and_se(getattr(self, name))

    def mean(self, name: str) -> float:
        """Mean over runs of a per-run statistic (one of ``STATISTICS``)."""
        return self.mean_se(name)[0]

    def se(self, name: str) -> float:
        """Standard error of :meth:`mean` (NaN for a single run)."""
        return self.mean_se(name)[1]

    def summary(self) -> dict:
        r"""Means and standard errors: ``{stat: {"mean": m, "se": se}}``.

        Includes the four per-run statistics and ``tokens_per_call`` =
        ``horizon / mean(target_calls)`` (SE by the delta method,
        :math:`T\,\mathrm{se}_c / \bar c^2`), plus ``n_runs``.
        """
        out = {name: dict(zip(("mean", "se"), self.mean_se(name))) for name in STATISTICS}
        c, sc = out["target_calls"]["mean"], out["target_calls"]["se"]
        out["tokens_per_call"] = {"mean": self.horizon / c, "se": self.horizon * sc / c**2}
        out["n_runs"] = self.n_runs
        return out

    def __str__(self) -> str:
        s = self.summary()
        head = (
            f"SimulationResult(horizon={self.horizon}, gamma={self.gamma}, bonus={self.bonus}, "
            f"verifier={self.verifier}, n_runs={self.n_runs})"
        )
        rows = [
            f"  {name:<16s} {s[name]['mean']:12.5f} +- {s[name]['se']:.5f}"
            for name in (*STATISTICS, "tokens_per_call")
        ]
        return "\n".join([head, f"  {'statistic':<16s} {'mean':>12s}    SE", *rows])


def _progress_bar(progress, total, desc):
    from tqdm.auto import tqdm

    if progress is False:
        return tqdm(total=total, disable=True)
    delay = 0.0 if progress is True else _PROGRESS_DELAY_S
    return tqdm(total=total, desc=desc, unit="tok", unit_scale=True, delay=delay, leave=False)


#: Chains with at most this many kernel entries get precomputed CDF tables (3 extra copies).
_TABLE_LIMIT = 1 << 23
_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Sampler:
    """Sampling from a chain's kernels along paths ``(m, s)`` (kernel index, state).

    CDFs of the draft, the target and the token-verification residual
    ``max(target - draft, 0)`` are precomputed once per chain (kernels are read-only) when
    the chain has at most ``_TABLE_LIMIT`` entries, and sampled with guide tables
    (:class:`CdfTable`, O(1) expected per token); otherwise rows are gathered and their
    CDFs computed per call (O(V)). Both give identical tokens for identical uniforms.
    """

    def __init__(self, chain):
        self.hom = chain.is_homogeneous
        self.S = chain.n_states
        self.target, self.draft, self.next_state = chain.target, chain.draft, chain.next_state
        self.V = chain.vocab_size
        self._flat = {id(chain.target): chain.target.reshape(-1), id(chain.draft): chain.draft.reshape(-1)}
        self.tables = None
        if chain.target.size <= _TABLE_LIMIT:
            tables = _TABLES.get(chain)
            if tables is None:
                tables = tuple(
                    CdfTable(w)
                    for w in (chain.target, chain.draft, residual_weights(chain.target, chain.draft))
                )
                _TABLES[chain] = tables
            self.tables = tables

    def rows(self, kernel, m, s):
        return kernel[s] if self.hom else kernel[m, s]

    def probs(self, kernel, m, s, x):
        """``kernel[(m,) s, x]`` for a kernel of the chain (flat ``take``, faster than 2-d indexing)."""
        row = s if self.hom else m * self.S + s
        return np.take(self._flat[id(kernel)], row * self.V + x)

    def _sample(self, which, m, s, u):
        if self.tables is not None:
            return self.tables[which].sample(s if self.hom else m * self.S + s, u)
        t = self.rows(self.target, m, s)
        if which == 1:
            w = self.rows(self.draft, m, s)
        elif which == 2:
            w = residual_weights(t, self.rows(self.draft, m, s))
        else:
            w = t
        return sample_from_cdf(normalized_cdf(w), u)

    def sample_target(self, m, s, u):
        return self._sample(0, m, s, u)

    def sample_draft(self, m, s, u):
        return self._sample(1, m, s, u)

    def sample_residual(self, m, s, u):
        return self._sample(2, m, s, u)


def _sample_initial(chain, size, rng):
    # inverse CDF of the initial law: searchsorted(side="right") counts entries <= u,
    # the same rule as sample_categorical
    return np.searchsorted(normalized_cdf(chain.initial), rng.random(size), side="right").astype(np.int64)


def _chunk_size(n_runs, per_run_elems):
    return max(1, min(n_runs, _CHUNK_ELEMS // max(1, per_run_elems)))


def simulate(
    chain,
    horizon,
    gamma=None,
    n_runs=1000,
    rng=None,
    bonus=True,
    verifier="token",
    return_tokens=False,
    progress=None,
    policy=None,
    cost=None,
) -> SimulationResult:
    r"""Monte Carlo of the speculative decoding protocol, vectorised over runs.

    Each of ``n_runs`` independent runs generates ``horizon`` tokens. In a round at
    position ``n`` and state ``s``, every active run drafts ``k = min(gamma, T - n)``
    tokens along its own path (``x_i ~ q_{n+i}(. | s_i)``, ``s_{i+1} = next_state[s_i,
    x_i]``), the laws along the path are gathered, and the round verifier returns the
    accepted count ``j`` and the final token (residual or bonus). With stochastic
    transitions (``chain.is_stochastic``) ``s_{i+1}`` is drawn from ``next_state[s_i, x_i, :]``
    (an accepted draft keeps its draw; the final token draws afresh) and the verifier's
    generic :meth:`~spectheory.verifiers.Verifier.verify_round` path is used.

    Parameters
    ----------
    chain : DecodingChain
    horizon : int
        Tokens per generation ``T >= 1`` (at most ``chain.max_horizon``).
    gamma : int
        Draft length ``>= 1`` (omitted when a ``policy`` decides it).
    n_runs : int
        Number of independent generations ``>= 1``.
    rng : seed or numpy Generator, optional
    bonus : bool
        Emit a bonus token from the target when all ``k`` drafts are accepted and
        ``n + k < T`` (Leviathan/Chen); ``False`` is the counting of Yin et al.
    verifier : str or Verifier
        A registered name (``"token"``, ``"block"``, ...) or a
        :class:`~spectheory.verifiers.Verifier`; its :meth:`~spectheory.verifiers.Verifier.fused_round`
        fast path is used when it has one, else :meth:`~spectheory.verifiers.Verifier.verify_round`
        on the laws gathered along each draft path.
    return_tokens : bool
        Keep the generated tokens ``[n_runs, T]``.
    progress : bool or None
        tqdm bar over generated tokens; ``None`` shows it only after 3 s.
    policy : draft-length policy, optional
        Instead of ``gamma``: an object with a ``simulate(chain, horizon, n_runs, rng, cost,
        progress)`` method (the :mod:`spectheory.stopping` policies, which decide after each
        drafted token whether to draft another); the call is handed to it, so it is
        :func:`spectheory.stopping.simulate_policy` (token verification with the bonus token).
    cost : optional
        With a ``policy`` only: the cost model adding up its time (:class:`spectheory.stopping.Cost`).

    Returns
    -------
    SimulationResult
        (with a ``policy``: what its ``simulate`` returns, a
        :class:`spectheory.stopping.StoppingSimulation`)

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])      # draft == target
    >>> res = simulate(chain, horizon=10, gamma=4, n_runs=100, rng=0)
    >>> int(res.rejections.max()), int(res.target_calls.max())   # 5 tokens per round, no rejection
    (0, 2)
    >>> sorted(res.summary())[:3]
    ['accepted', 'draft_tokens', 'n_runs']
    """
    if not callable(getattr(chain, "check_horizon", None)):
        raise TypeError(
            f"chain: expected a DecodingChain (e.g. st.DecodingChain(target, draft) or "
            f"st.DecodingChain.iid(target, draft)), got {type(chain).__name__}"
        )
    if policy is not None:  # duck typing: montecarlo never imports stopping (layering)
        run = getattr(policy, "simulate", None)
        if not callable(run):
            raise ValueError(
                f"policy: expected a draft-length policy with a simulate method, got {type(policy).__name__}"
            )
        if (
            gamma is not None
            or not bonus
            or return_tokens
            or get_verifier(verifier) is not get_verifier("token")
        ):
            raise ValueError(
                "policy: runs token verification with the bonus token and decides the draft "
                "length itself; leave gamma, bonus, verifier and return_tokens at their defaults"
            )
        return run(chain, horizon, n_runs, rng=rng, cost=cost, progress=progress)
    if cost is not None:
        raise ValueError("cost: only used with a policy")
    T = chain.check_horizon(horizon)
    g = check_int(gamma, "gamma", 1)
    N = check_int(n_runs, "n_runs", 1)
    bonus = check_bool(bonus, "bonus")
    # the per-run results are kept whole (the work itself is chunked): refuse before allocating
    check_memory(
        8.0 * N * (len(STATISTICS) + g + 1 + (T if return_tokens else 0)),
        "n_runs",
        f"the per-run results of {N} runs (split them over several calls)",
    )
    verifier = get_verifier(verifier)
    rng = np.random.default_rng(rng)
    V = chain.vocab_size
    out = {k: np.zeros(N, dtype=np.int64) for k in STATISTICS}
    counts = np.zeros((N, g + 1), dtype=np.int64)
    tokens = np.zeros((N, T), dtype=np.int64) if return_tokens else None
    by_position = np.zeros(T, dtype=np.int64)
    if type(verifier).fused_round is Verifier.fused_round or getattr(chain, "is_stochastic", False):
        per_run = (2 * g + 1) * V  # gathered law arrays of the generic path
    elif chain.target.size <= _TABLE_LIMIT:
        per_run = 8 * (g + 1)  # fused path on CDF tables: O(gamma) per run
    else:
        per_run = 4 * V  # fused path gathering rows
    chunk = _chunk_size(N, per_run)
    with _progress_bar(progress, N * T, f"simulate gamma={g}") as bar:
        for start in range(0, N, chunk):
            sl = slice(start, min(N, start + chunk))
            _simulate_chunk(
                chain,
                T,
                g,
                bool(bonus),
                verifier,
                rng,
                {k: v[sl] for k, v in out.items()},
                counts[sl],
                None if tokens is None else tokens[sl],
                by_position,
                bar,
            )
    return SimulationResult(
        T,
        g,
        bool(bonus),
        verifier.name,
        out["target_calls"],
        out["rejections"],
        out["draft_tokens"],
        out["accepted"],
        counts,
        by_position,
        tokens,
    )


def _simulate_chunk(chain, T, g, bonus, verifier, rng, out, counts, tokens, by_position, bar):
    """Simulate ``len(counts)`` runs to the horizon, writing into the given views."""
    R0 = counts.shape[0]
    V = chain.vocab_size
    smp = _Sampler(chain)
    nxt = chain.next_state
    stochastic = getattr(chain, "is_stochastic", False)  # draw next states (generic path)
    pos = np.zeros(R0, dtype=np.int64)
    state = _sample_initial(chain, R0, rng)
    active = np.arange(R0)
    cols = np.arange(g + 1)
    while active.size:
        R = active.size
        rows = np.arange(R)
        n = pos[active]
        k = np.minimum(g, T - n)
        states = np.empty((R, g + 1), dtype=np.int64)
        states[:, 0] = state[active]
        x = np.empty((R, g), dtype=np.int64)
        u = rng.random((R, g))
        fused = NotImplemented if stochastic else verifier.fused_round(smp, T, g, n, k, states, x, u, rng)
        if fused is not NotImplemented:
            j, y = fused
        else:
            tl = np.empty((R, g + 1, V))
            dl = np.empty((R, g, V))
            for i in range(g + 1):
                m = np.minimum(n + i, T - 1)  # padding rows (i > k) reuse the last kernel
                s = states[:, i]
                tl[:, i] = smp.rows(smp.target, m, s)
                if i == g:
                    break
                dl[:, i] = smp.rows(smp.draft, m, s)
                x[:, i] = smp.sample_draft(m, s, u[:, i])
                states[:, i + 1] = (
                    chain.sample_next_state(s, x[:, i], rng.random(R)) if stochastic else nxt[s, x[:, i]]
                )
            j, y = verifier.verify_round(tl, dl, x, k, rng)
            j = np.asarray(j, dtype=np.int64)
            y = np.asarray(y, dtype=np.int64)
            if j.shape != (R,) or y.shape != (R,):
                raise ValueError(
                    f"verifier: must return two arrays of shape ({R},), got {j.shape}, {y.shape}"
                )
            if np.any((j < 0) | (j > k)) or np.any((y < 0) | (y >= V)):
                raise ValueError(
                    "verifier: returned an accepted count outside [0, k] or a token outside [0, V)"
                )
        rejected = j < k
        emit_final = rejected | (bonus & (j == k) & (n + k < T))
        e = j + emit_final
        s_j = states[rows, j]
        if stochastic:
            new_state = s_j.copy()
            f = np.flatnonzero(emit_final)
            new_state[f] = chain.sample_next_state(s_j[f], y[f], rng.random(f.size))
        else:
            new_state = np.where(emit_final, nxt[s_j, y], s_j)
        out["target_calls"][active] += 1
        out["draft_tokens"][active] += k
        out["rejections"][active] += rejected
        np.add.at(by_position, (n + j)[rejected], 1)
        out["accepted"][active] += j
        counts[active, j] += 1  # (active, j) pairs are distinct
        if tokens is not None:
            emitted = np.concatenate([x, np.zeros((R, 1), dtype=np.int64)], axis=1)
            emitted[rows, j] = y
            rr, cc = np.nonzero(cols[None, :] < e[:, None])
            tokens[active[rr], n[rr] + cc] = emitted[rr, cc]
        pos[active] = n + e
        state[active] = new_state
        bar.update(int(e.sum()))
        active = active[pos[active] < T]


def sample_target(chain, horizon, n_runs, rng=None, progress=None) -> np.ndarray:
    r"""Plain autoregressive sampling from the target: tokens ``[n_runs, horizon]``.

    :math:`s_0 \sim` ``initial``, :math:`x_{n+1} \sim p_{n}(\cdot \mid s_n)`,
    :math:`s_{n+1} =` ``next_state[s_n, x_{n+1}]`` (kernel index ``n`` is 0-based; drawn from
    ``next_state[s_n, x_{n+1}, :]`` for stochastic transitions).

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.0, 1.0], [0.5, 0.5])
    >>> sample_target(chain, 3, 2, rng=0).tolist()
    [[1, 1, 1], [1, 1, 1]]
    """
    T = chain.check_horizon(horizon)
    N = check_int(n_runs, "n_runs", 1)
    rng = np.random.default_rng(rng)
    smp = _Sampler(chain)
    tokens = np.empty((N, T), dtype=np.int64)
    chunk = _chunk_size(N, 2 * chain.vocab_size)
    with _progress_bar(progress, N * T, "sample_target") as bar:
        for start in range(0, N, chunk):
            stop = min(N, start + chunk)
            s = _sample_initial(chain, stop - start, rng)
            for n in range(T):
                x = smp.sample_target(n, s, rng.random(stop - start))
                tokens[start:stop, n] = x
                s = (
                    chain.sample_next_state(s, x, rng.random(stop - start))
                    if chain.is_stochastic
                    else chain.next_state[s, x]
                )
                bar.update(stop - start)
    return tokens
