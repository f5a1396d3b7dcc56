r"""Policy rounds: draft one token at a time until a draft-length policy stops, then verify.

Notation: p = target, q = draft. At position ``n`` every run drafts along its own draft path
(``x ~ q(. | s)``, one ``rng.random`` per depth for the runs still drafting) and after each
token asks the policy (the same ``stop`` method the exact engines call, with the oracle
``accept_prob`` filled in) whether to stop; it stops at ``max_depth`` and at the end of the
horizon. Then standard token verification (accept ``x`` iff ``u q(x) < p(x)``, one
``rng.random((R, max_depth))``), and one ``rng.random(R)`` for the final token: the residual
at the first rejection, else the bonus candidate. The policy's memory (``next_memory``) is
carried between rounds. docs/stopping.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..rounds.base import Round, RoundOutcome
from ..rounds.sampler import DRAFT, RESIDUAL, TARGET
from ..verifiers.base import get_verifier
from .context import RoundFeedback, StopContext
from .evaluate import evaluate_policy

__all__ = ["PolicyRound"]


class PolicyRound(Round):
    """Draft until ``policy`` stops; verify the drafts with token verification.

    Parameters
    ----------
    policy : Policy
        A :mod:`spectheory.stopping.policies` object (any object with their ``stop``,
        ``next_memory``, ``max_depth``, ``initial_memory`` and ``name``).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import FixedGamma, PolicyRound
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])   # always accepted
    >>> res = st.simulate(chain, 10, PolicyRound(FixedGamma(4)), 50, rng=0, cost=0.1)
    >>> int(res.target_calls.max()), float(res.time().max())
    (2, 2.8)
    """

    def __init__(self, policy: Any) -> None:
        if not (callable(getattr(policy, "stop", None)) and hasattr(policy, "next_memory")):
            raise ValueError(f"policy: expected a spectheory.stopping Policy, got {type(policy).__name__}")
        self.policy = policy

    @property
    def name(self) -> str:
        return f"policy({self.policy.name})"

    def along_path(self, predictor: Any) -> Any:
        """Along-path prediction: as many tokens as the policy drafts (``predictor.policy``)."""
        return predictor.policy(self.policy)

    @property
    def max_depth(self) -> int:
        return int(self.policy.max_depth)

    @property
    def verifier_name(self) -> str:
        return "token"

    @property
    def initial_memory(self) -> Any:  # type: ignore[override]
        m = self.policy.initial_memory
        return int(m) if np.ndim(m) == 0 else np.asarray(m)

    def describe(self) -> str:
        return f"drafts until {self.policy.name} stops (at most {self.max_depth}), token verification"

    def check(self, chain: Any, horizon: int) -> None:
        chain.require_deterministic("policy rounds (draft-length policies)")

    def play(
        self,
        sampler: Any,
        horizon: int,
        n: np.ndarray,
        state: np.ndarray,
        memory: np.ndarray,
        rng: np.random.Generator,
        keep_path: bool = False,
    ) -> RoundOutcome:
        T, D, smp, policy = horizon, self.max_depth, sampler, self.policy
        R = int(n.shape[0])
        rows = np.arange(R)
        kmax = np.minimum(D, T - n)
        states = np.zeros((R, D + 1), dtype=np.int64)
        states[:, 0] = state
        xs = np.zeros((R, D), dtype=np.int64) if keep_path else None
        tx = np.zeros((R, D))
        dx = np.ones((R, D))
        rho = np.ones(R)
        k = np.zeros(R, dtype=np.int64)
        live = rows
        for i in range(D):
            m = None if smp.hom else n[live] + i
            s = states[live, i]
            x = smp.sample(DRAFT, m, s, rng.random(live.size))
            q = smp.probs(smp.draft, m, s, x)
            p = smp.probs(smp.target, m, s, x)
            dx[live, i], tx[live, i] = q, p
            if xs is not None:
                xs[live, i] = x
            states[live, i + 1] = smp.next_state[s, x]
            rho[live] *= np.minimum(1.0, p / q)
            top, entropy = smp.draft_stats(m, s)
            ctx = StopContext(
                depth=i + 1,
                position=n[live],
                start_state=state[live],
                prev_state=s,
                token=x,
                state=states[live, i + 1],
                top=top,
                entropy=entropy,
                token_prob=q,
                accept_prob=rho[live],
                memory=memory[live],
            )
            stop = np.asarray(policy.stop(ctx), dtype=bool) | (i + 1 >= kmax[live])
            k[live[stop]] = i + 1
            live = live[~stop]
            if not live.size:
                break
        ok = (rng.random((R, D)) * dx < tx) & (np.arange(D)[None, :] < k[:, None])
        j = np.cumprod(ok, axis=1).sum(axis=1)
        rejected = j < k
        sj = states[rows, j]
        mj = n + j
        y = np.zeros(R, dtype=np.int64)
        u = rng.random((R,))
        for which, sel in ((RESIDUAL, rejected), (TARGET, ~rejected & (n + k < T))):
            if sel.any():
                y[sel] = smp.sample(which, None if smp.hom else mj[sel], sj[sel], u[sel])
        return RoundOutcome(
            accepted=j,
            final=y,
            rejected=rejected,
            drafted=k,
            end_state=sj,
            path=xs,
            memory=_updated(policy, memory, RoundFeedback(j, k, dx)),
        )

    def exact(self, chain: Any, horizon: int, *, bonus: bool = True, cost: Any = None, **options: Any) -> Any:
        """Exact :class:`~spectheory.stopping.PolicyValue` under ``cost``
        (:func:`~spectheory.stopping.evaluate_policy`; ``options``: its ``method``,
        ``max_nodes``, ``progress``)."""
        return evaluate_policy(chain, self.policy, horizon, cost, bonus=bonus, **options)

    def __repr__(self) -> str:
        return f"PolicyRound({self.policy.name})"


def _updated(policy: Any, memory: np.ndarray, feedback: RoundFeedback) -> np.ndarray:
    """The policy's memory after the round (``update``; ``next_memory`` for duck-typed policies)."""
    update = getattr(policy, "update", None)
    if update is None:
        return np.asarray(policy.next_memory(memory, feedback.accepted == feedback.drafted), dtype=np.int64)
    return np.asarray(update(memory, feedback))


def policy_round(policy: Any, verifier: Any = None) -> PolicyRound:
    """The shorthand factory: a :class:`PolicyRound` (``verifier`` must be unset or token)."""
    if verifier is not None and get_verifier(verifier) is not get_verifier("token"):
        raise ValueError(
            f"verifier: a draft-length policy is verified token by token; got {verifier!r} (leave it unset)"
        )
    return PolicyRound(policy)
