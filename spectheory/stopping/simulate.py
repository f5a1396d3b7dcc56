r"""Monte Carlo of draft-length policies, vectorised over runs (the protocol of ``docs/protocol.md``).

Each round: every active run drafts one token at a time along its own draft path
(``x ~ q(.|s)``, inverse CDF on :class:`~spectheory.laws.sampling.CdfTable` guide tables),
and after each token asks the policy (the same ``stop`` method the exact engines call,
with the oracle ``accept_prob`` filled in) whether to stop; then standard token
verification (accept ``x`` iff ``u q(x) < p(x)``, p = target, q = draft), one residual token
at the first rejection, or one bonus token when all ``k`` are accepted and tokens remain.
The loops are over rounds and depths, never over runs or the vocabulary.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from .._guards import check_int
from ..laws.sampling import CdfTable, normalized_cdf, residual_weights, sample_from_cdf
from ..montecarlo import mean_and_se
from .context import StopContext
from .cost import Cost, as_cost

__all__ = ["simulate_policy", "StoppingSimulation"]

STATISTICS = ("target_calls", "draft_tokens", "target_time", "time")
_TABLE_LIMIT = 1 << 23
_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class StoppingSimulation:
    """Per-run totals of a policy simulation (arrays of shape ``[n_runs]``)."""

    horizon: int
    cost: Cost
    policy: str
    target_calls: np.ndarray
    draft_tokens: np.ndarray
    target_time: np.ndarray

    @property
    def time(self) -> np.ndarray:
        return self.cost.c * self.draft_tokens + self.target_time

    @property
    def n_runs(self) -> int:
        return int(self.target_calls.size)

    def mean_se(self, name: str) -> tuple[float, float]:
        """Mean and standard error of one of ``STATISTICS``."""
        if name not in STATISTICS:
            raise ValueError(f"name: expected one of {STATISTICS}, got {name!r}")
        return mean_and_se(getattr(self, name))

    def summary(self) -> dict:
        """``{stat: {"mean", "se"}}`` plus ``tokens_per_call`` (delta method) and ``n_runs``."""
        out = {k: dict(zip(("mean", "se"), self.mean_se(k))) for k in STATISTICS}
        c, sc = out["target_calls"]["mean"], out["target_calls"]["se"]
        out["tokens_per_call"] = {"mean": self.horizon / c, "se": self.horizon * sc / c**2}
        out["n_runs"] = self.n_runs
        return out


class _Draws:
    """Inverse-CDF sampling of target, draft and residual rows ``(kernel index, state)``."""

    def __init__(self, chain):
        self.hom, self.S = chain.is_homogeneous, chain.n_states
        self.weights = (chain.target, chain.draft, residual_weights(chain.target, chain.draft))
        self.tables = None
        if chain.target.size <= _TABLE_LIMIT:
            tables = _TABLES.get(chain)
            if tables is None:
                tables = tuple(CdfTable(w) for w in self.weights)
                _TABLES[chain] = tables
            self.tables = tables
        self.top = chain.draft.max(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            logq = np.where(chain.draft > 0, np.log(np.where(chain.draft > 0, chain.draft, 1.0)), 0.0)
        self.entropy = -(chain.draft * logq).sum(-1)

    def row(self, m, s):
        return s if self.hom else m * self.S + s

    def stat(self, table, m, s):
        return table[s] if self.hom else table[m, s]

    def draw(self, which, m, s, u):
        if self.tables is not None:
            return self.tables[which].sample(self.row(m, s), u)
        w = self.weights[which]
        return sample_from_cdf(normalized_cdf(w[s] if self.hom else w[m, s]), u)


def simulate_policy(
    chain, policy, horizon, cost=None, n_runs=1000, rng=None, progress=None
) -> StoppingSimulation:
    r"""Simulate ``n_runs`` generations of ``horizon`` tokens under a draft-length policy.

    Parameters
    ----------
    chain : DecodingChain
    policy : Policy
        A :mod:`spectheory.stopping.policies` object (any object with their ``stop``,
        ``next_memory``, ``max_depth``, ``initial_memory`` and ``name``).
    horizon : int
    cost : Cost or float
        Only used to add up the time (``c`` per draft step, ``t(k)`` per call).
    n_runs : int
    rng : seed or numpy Generator
    progress : bool or None
        tqdm bar over generated tokens (``None``: shown after 3 s).

    Returns
    -------
    StoppingSimulation

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import FixedGamma, simulate_policy
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])   # always accepted
    >>> res = simulate_policy(chain, FixedGamma(4), 10, 0.1, n_runs=50, rng=0)
    >>> int(res.target_calls.max()), float(res.time.max())
    (2, 2.8)
    """
    from tqdm.auto import tqdm

    T = chain.check_horizon(horizon)
    chain.require_deterministic("simulate_policy (draft-length policies)")
    N = check_int(n_runs, "n_runs", 1)
    cost = as_cost(cost)
    if not (callable(getattr(policy, "stop", None)) and hasattr(policy, "next_memory")):
        raise ValueError(f"policy: expected a spectheory.stopping Policy, got {type(policy).__name__}")
    rng = np.random.default_rng(rng)
    D = policy.max_depth
    tk = cost.call_times(D)
    dr = _Draws(chain)
    nxt = chain.next_state
    calls = np.zeros(N, dtype=np.int64)
    drafts = np.zeros(N, dtype=np.int64)
    ttime = np.zeros(N)
    pos = np.zeros(N, dtype=np.int64)
    state = np.searchsorted(normalized_cdf(chain.initial), rng.random(N), side="right").astype(np.int64)
    memory = np.full(N, policy.initial_memory, dtype=np.int64)
    active = np.arange(N)
    bar = tqdm(
        total=N * T,
        disable=progress is False,
        delay=0.0 if progress else 3.0,
        leave=False,
        desc=f"simulate {policy.name}",
    )
    with bar:
        while active.size:
            R = active.size
            rows = np.arange(R)
            n, s0, mem = pos[active], state[active], memory[active]
            kmax = np.minimum(D, T - n)
            states = np.zeros((R, D + 1), dtype=np.int64)
            states[:, 0] = s0
            tx = np.zeros((R, D))
            dx = np.ones((R, D))
            rho = np.ones(R)
            k = np.zeros(R, dtype=np.int64)
            live = rows
            for i in range(D):
                m = None if dr.hom else n[live] + i
                s = states[live, i]
                x = dr.draw(1, m, s, rng.random(live.size))
                q = chain.draft[s, x] if dr.hom else chain.draft[m, s, x]
                p = chain.target[s, x] if dr.hom else chain.target[m, s, x]
                dx[live, i], tx[live, i] = q, p
                states[live, i + 1] = nxt[s, x]
                rho[live] *= np.minimum(1.0, p / q)
                ctx = StopContext(
                    depth=i + 1,
                    position=n[live],
                    start_state=s0[live],
                    prev_state=s,
                    token=x,
                    state=states[live, i + 1],
                    top=dr.stat(dr.top, m, s),
                    entropy=dr.stat(dr.entropy, m, s),
                    token_prob=q,
                    accept_prob=rho[live],
                    memory=mem[live],
                )
                stop = np.asarray(policy.stop(ctx), dtype=bool) | (i + 1 >= kmax[live])
                k[live[stop]] = i + 1
                live = live[~stop]
                if not live.size:
                    break
            ok = (rng.random((R, D)) * dx < tx) & (np.arange(D)[None, :] < k[:, None])
            j = np.cumprod(ok, axis=1).sum(axis=1)
            rejected = j < k
            emit = rejected | (n + k < T)
            sj = states[rows, j]
            mj = n + j
            y = np.zeros(R, dtype=np.int64)
            u = rng.random(R)
            for which, sel in ((2, rejected), (0, emit & ~rejected)):
                if sel.any():
                    y[sel] = dr.draw(which, None if dr.hom else mj[sel], sj[sel], u[sel])
            calls[active] += 1
            drafts[active] += k
            ttime[active] += tk[k - 1]
            memory[active] = policy.next_memory(mem, j == k)
            e = j + emit
            pos[active] = n + e
            state[active] = np.where(emit, nxt[sj, y], sj)
            bar.update(int(e.sum()))
            active = active[pos[active] < T]
    return StoppingSimulation(T, cost, policy.name, calls, drafts, ttime)
