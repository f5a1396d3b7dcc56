r"""Policy rounds: draft one token at a time until a draft-length policy stops, then verify.

Notation: p = target, q = draft. At position ``n`` every run drafts along its own draft path
(``x ~ q(. | s)``, or ``x = argmax q`` for a greedy-drafting rule; one ``rng.random`` per depth
for the runs still drafting) and after each token asks the policy (the same ``stop`` method
the exact engines call, with the oracle ``accept_prob`` filled in: the verifier's probability
that every drafted token is accepted) whether to stop; it stops at ``max_depth`` and at the end
of the horizon. Then the round's verifier checks the ``k`` drafts. Token verification (the
default) runs inline: accept ``x`` iff ``u q(x) < p(x)``, one ``rng.random((R, max_depth))``,
and one ``rng.random(R)`` for the final token (the residual at the first rejection, else the
bonus candidate). Any other single-path rule gets the laws gathered along each path and draws
its own uniforms (:meth:`~spectheory.verifiers.Verifier.verify_round`, as a path round's
generic path). The policy's memory (``next_memory``) is carried between rounds.
docs/stopping.md.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ...rounds.base import Round, RoundOutcome, RoundRuns, RoundTags
from ...rounds.sampler import DRAFT, RESIDUAL, TARGET
from ...verifiers.base import Verifier, get_verifier
from ..path.round import CHUNK_ELEMS
from ._kernels import Kernels
from .context import RoundFeedback, StopContext
from .evaluate import evaluate_policy
from .policies import Policy

#: Per chain, the verifiers' per-token masses (``accept_prob`` of a rule other than token).
_MASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

__all__ = ["PolicyRound"]


class PolicyRound(Round):
    """Draft until ``policy`` stops; verify the drafts with a single-path verifier.

    Parameters
    ----------
    policy : Policy
        A :mod:`spectheory.kinds.policy.policies` object (any object with their ``stop``,
        ``next_memory``, ``max_depth``, ``initial_memory`` and ``name``).
    verifier : str or Verifier
        A registered single-path rule or a :class:`~spectheory.verifiers.Verifier` (default
        token verification). Every engine runs it: Monte Carlo, the exact engine (a rule that
        checks one token at a time, ``phase_masses``; a whole-round rule such as ``"block"``
        under :class:`FixedGamma` only, :meth:`tags` says so), the decoder and the kit. A rule
        whose round calls the target more than once (naive HSD) is refused.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import FixedGamma, PolicyRound
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])   # always accepted
    >>> res = st.simulate(chain, 10, PolicyRound(FixedGamma(4)), 50, rng=0, cost=0.1)
    >>> int(res.target_calls.max()), float(res.time().max())
    (2, 2.8)
    >>> PolicyRound(FixedGamma(4), "block").name
    'policy(FixedGamma(4), verifier=block)'
    """

    #: :func:`~spectheory.kinds.as_round` turns a ``Policy`` (positional, or ``policy=``) into a
    #: policy round (:func:`policy_round`).
    shorthand = Policy
    round_keyword = "policy"

    def __init__(self, policy: Any, verifier: Any = "token") -> None:
        if not (callable(getattr(policy, "stop", None)) and hasattr(policy, "next_memory")):
            raise ValueError(f"policy: expected a spectheory.stopping Policy, got {type(policy).__name__}")
        v = get_verifier(verifier).require_path()
        if type(v).round_extra_calls is not Verifier.round_extra_calls:
            raise ValueError(
                f"verifier: {v.name!r} calls the target more than once per round; a draft-length "
                "policy's round is one target call (use a path round: PathRound(gamma, verifier))"
            )
        self.policy = policy
        self.verifier = v
        #: Token verification runs inline (its fused form); any other rule through verify_round.
        self._token = v.inline_token_round

    @classmethod
    def from_shorthand(cls, policy: Any, verifier: Any = None) -> PolicyRound:
        """``as_round(policy, verifier=...)``: :func:`policy_round`."""
        return policy_round(policy, verifier)

    @property
    def name(self) -> str:
        if self._token:
            return f"policy({self.policy.name})"
        return f"policy({self.policy.name}, verifier={self.verifier.name})"

    def along_path(self, predictor: Any) -> Any:
        """Along-path prediction: as many tokens as the policy drafts (``predictor.policy``)."""
        return predictor.policy(self.policy)

    @property
    def max_depth(self) -> int:
        return int(self.policy.max_depth)

    @property
    def initial_memory(self) -> Any:  # type: ignore[override]
        m = self.policy.initial_memory
        return int(m) if np.ndim(m) == 0 else np.asarray(m)

    def describe(self) -> str:
        return f"drafts until {self.policy.name} stops (at most {self.max_depth}), verified by {self.verifier.name!r}"

    def check(self, chain: Any, horizon: int) -> None:
        chain.require_deterministic("policy rounds (draft-length policies)")

    def _per_token(self) -> bool:
        """Whether the verifier checks one token at a time (defines ``phase_masses``)."""
        return type(self.verifier).phase_masses is not Verifier.phase_masses

    def tags(self) -> RoundTags:
        """As :meth:`Round.tags`, and: the decoder samples its drafts (no greedy-drafting rule);
        along-path prediction runs token verification only; a
        whole-round rule (no ``phase_masses``) has no exact value under a policy that is not
        :class:`FixedGamma` (the policy's rounds are not the fixed-length rounds its engine
        describes), nor an ``accept_prob`` for a path policy."""
        tags = super().tags()
        why: dict[str, str] = {}
        if self.verifier.drafting != "sample" and tags.decoder:
            why["decoder"] = f"the decoder samples its drafts; {self.verifier.name!r} drafts greedily"
        if not self._token and tags.along_path:
            why["along_path"] = (
                f"along-path prediction checks each draft by token verification, not {self.verifier.name!r}"
            )
        if not self._per_token():
            whole = f"{self.verifier.name!r} decides on the whole round (no per-token masses)"
            if getattr(self.policy, "uses_path", False):
                for engine in ("monte_carlo", "exact"):
                    why[engine] = f"{self.policy.name} reads accept_prob, which {whole} does not define"
            elif getattr(self.policy, "constant_length", None) is None:
                why["exact"] = (
                    f"{whole}; its exact engine covers fixed-length rounds only (FixedGamma), "
                    "not rounds that stop on the drafted tokens; use Monte Carlo"
                )
        return tags.refuse(why)

    def chunk_size(self, chain: Any, horizon: int) -> int | None:
        """Token verification: no limit; another rule: runs per chunk so that the laws gathered
        for :meth:`~spectheory.verifiers.Verifier.verify_round` hold at most
        :data:`~spectheory.kinds.path.round.CHUNK_ELEMS` entries."""
        if self._token:
            return None
        return max(1, CHUNK_ELEMS // ((2 * self.max_depth + 1) * chain.vocab_size))

    def _checks(self, chain: Any) -> Kernels | None:
        """The verifier's per-token masses on ``chain`` (cached), or None for a whole-round rule."""
        if not self._per_token():
            return None
        per_chain = _MASSES.setdefault(chain, {})
        key = id(self.verifier)  # the round holds the verifier: its id stays unique
        if key not in per_chain:
            per_chain[key] = Kernels(chain, self.verifier)
        return per_chain[key]

    def play(self, sampler: Any, runs: RoundRuns, rng: np.random.Generator) -> RoundOutcome:
        T, D, smp, policy = runs.horizon, self.max_depth, sampler, self.policy
        n, state, memory, keep_path = runs.n, runs.state, runs.memory, runs.keep_path
        R = runs.size
        rows = np.arange(R)
        kmax = np.minimum(D, T - n)
        states = np.zeros((R, D + 1), dtype=np.int64)
        states[:, 0] = state
        gather = not self._token  # laws for the verifier's verify_round
        xs = np.zeros((R, D), dtype=np.int64) if keep_path or gather else None
        laws = (np.empty((R, D + 1, smp.V)), np.empty((R, D, smp.V))) if gather else None
        checks = None if self._token else self._checks(smp.chain)
        greedy = self.verifier.drafting != "sample"
        tx = np.zeros((R, D))
        dx = np.ones((R, D))
        rho = np.ones(R)
        k = np.zeros(R, dtype=np.int64)
        live = rows
        for i in range(D):
            m = None if smp.hom else n[live] + i
            s = states[live, i]
            if laws is not None:
                laws[0][live, i] = smp.rows(smp.target, m, s)
                laws[1][live, i] = smp.rows(smp.draft, m, s)
            if greedy and laws is not None:  # the rule's own drafting law (argmax drafting)
                x = self.verifier.draft(laws[1][live, i], rng.random(live.size))
            else:
                x = smp.sample(DRAFT, m, s, rng.random(live.size))
            q = smp.probs(smp.draft, m, s, x)
            p = smp.probs(smp.target, m, s, x)
            dx[live, i], tx[live, i] = q, p
            if xs is not None:
                xs[live, i] = x
            states[live, i + 1] = smp.next_state[s, x]
            if self._token:
                rho[live] *= np.minimum(1.0, p / q)
            elif checks is not None:
                rho[live] *= checks.accept_ratio(n[live] + i, i, s, x)
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
                accept_prob=rho[live] if self._token or checks is not None else None,
                memory=memory[live],
            )
            stop = np.asarray(policy.stop(ctx), dtype=bool) | (i + 1 >= kmax[live])
            k[live[stop]] = i + 1
            live = live[~stop]
            if not live.size:
                break
        if laws is None:
            ok = (rng.random((R, D)) * dx < tx) & (np.arange(D)[None, :] < k[:, None])
            j = np.cumprod(ok, axis=1).sum(axis=1)
        else:
            j, y = self._verify(smp, T, n, k, states, xs, laws, rng)
        rejected = j < k
        sj = states[rows, j]
        if laws is None:
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
            path=xs if keep_path else None,
            memory=_updated(policy, memory, RoundFeedback(j, k, dx)),
        )

    def _verify(self, smp, T, n, k, states, x, laws, rng):
        """The verifier's ``verify_round`` on the laws gathered along each run's ``k`` drafts
        (slots ``>= k`` padded with the laws after the last draft: the bonus law at ``k``)."""
        R, D = x.shape
        tl, dl = laws
        sk = states[np.arange(R), k]
        mk = None if smp.hom else np.minimum(n + k, T - 1)
        t_end, d_end = smp.rows(smp.target, mk, sk), smp.rows(smp.draft, mk, sk)
        for i in range(D + 1):
            pad = k <= i
            tl[pad, i] = t_end[pad]
            if i < D:
                dl[pad, i] = d_end[pad]
                x[pad, i] = 0
        j, y = self.verifier.verify_round(tl, dl, x, k, rng)
        j, y = np.asarray(j, dtype=np.int64), np.asarray(y, dtype=np.int64)
        if j.shape != (R,) or y.shape != (R,) or np.any((j < 0) | (j > k)) or np.any((y < 0) | (y >= smp.V)):
            raise ValueError(
                f"verifier: {self.verifier.name!r} must return an accepted count in [0, k] and a token "
                f"in [0, V) per row (two arrays of shape ({R},))"
            )
        return j, y

    def exact(self, chain: Any, horizon: int, *, bonus: bool = True, cost: Any = None, **options: Any) -> Any:
        """Exact :class:`~spectheory.stopping.PolicyValue` under ``cost`` with the round's verifier
        (:func:`~spectheory.stopping.evaluate_policy`; ``options``: its ``method``,
        ``max_nodes``, ``progress``)."""
        return evaluate_policy(
            chain, self.policy, horizon, cost, bonus=bonus, verifier=self.verifier, **options
        )

    def decode(
        self, loops: Any, target: Any, draft: Any, prompts: Any, max_new_tokens: int, options: dict[str, Any]
    ) -> Any:
        """The decoder's path loop (``loops.path``, ``speculative_generate``) drafting at most
        :attr:`max_depth` tokens a round as the policy decides, checked by the round's verifier."""
        return loops.path(
            target,
            draft,
            prompts,
            max_new_tokens,
            self.max_depth,
            verifier=self.verifier,
            policy=self.policy,
            **options,
        )

    def check_plan(self, kit: Any, options: dict[str, Any]) -> Any:
        """The kit's single-path checks (``kit.verifier``, ``check_verifier``) of the round's
        verifier on rounds of :attr:`max_depth` drafts: a policy only truncates a round, which
        every draft length of the check covers."""
        return kit.verifier(self.verifier, gammas=(self.max_depth,), **options)

    def __repr__(self) -> str:
        if self._token:
            return f"PolicyRound({self.policy.name})"
        return f"PolicyRound({self.policy.name}, verifier={self.verifier.name!r})"


def _updated(policy: Any, memory: np.ndarray, feedback: RoundFeedback) -> np.ndarray:
    """The policy's memory after the round (``update``; ``next_memory`` for duck-typed policies)."""
    update = getattr(policy, "update", None)
    if update is None:
        return np.asarray(policy.next_memory(memory, feedback.accepted == feedback.drafted), dtype=np.int64)
    return np.asarray(update(memory, feedback))


def policy_round(policy: Any, verifier: Any = None) -> PolicyRound:
    """The shorthand factory: a :class:`PolicyRound` (``verifier``: unset for token verification)."""
    return PolicyRound(policy, "token" if verifier is None else verifier)
