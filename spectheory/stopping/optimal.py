r"""The optimal draft-length policy, exactly: finite horizon by dynamic programming, long run by Dinkelbach.

Two information structures (``docs/stopping.md``):

* ``information="state"``: the policy knows the position, the depth and the chain state at
  the round's start (the last state target and draft agree on), so it chooses the round's
  length ``k(n, s)``. The generation is then a Markov decision process over round starts
  and the Bellman recursion of :func:`~spectheory.kinds.policy.evaluate.start_class_recursion`
  is exact; cost ``O(T D S V)``. It dominates every policy that fixes the length at the
  round start, with or without memory (:class:`FixedGamma`, Leviathan's gamma,
  :class:`HFSchedule` without ``confidence=``, which stops inside a round).
* ``information="path"``: the policy knows the drafted path and the target's laws (an
  oracle). The state and the probability that all drafted tokens are accepted are a
  sufficient statistic, and the optimum is computed on the enumerated path tree
  (:mod:`spectheory.kinds.policy.paths`; small chains). It dominates every policy that decides
  from the drafted path, the laws and the past (not from the verifier's coins).

Policies that look at the state *along the drafted path* without the target (a confidence
or entropy rule) lie between the two classes: the probability that the round is still
accepted is hidden from them, so no exact Bellman recursion over (depth, current state)
exists (a partially observed problem); they are evaluated exactly, and compared with both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from ..chain.classes import require_one_closed_class
from ..cost.base import as_cost
from ..kinds.policy._kernels import Kernels, single_thread
from ..kinds.policy.evaluate import PolicyValue, _value, evaluate_policy, start_class_recursion
from ..kinds.policy.forward_counters import forward_counters
from ..kinds.policy.policies import DEFAULT_MAX_DEPTH, StartStatePolicy

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from ..cost.base import Cost
    from ..kinds.policy.policies import Policy
    from ..verifiers.base import Verifier

__all__ = [
    "optimal_policy",
    "long_run_optimum",
    "long_run_rate",
    "LongRunResult",
    "compare_policies",
    "INFORMATION",
]

INFORMATION = ("state", "path")


def optimal_policy(
    chain: ChainLike,
    horizon: int,
    cost: Cost | float | None = None,
    information: str = "state",
    max_depth: int = DEFAULT_MAX_DEPTH,
    *,
    max_nodes: int = 2_000_000,
    progress: bool | None = None,
    verifier: str | Verifier = "token",
) -> PolicyValue:
    r"""The exact optimum over draft-length policies with the given information, over ``horizon`` tokens.

    Parameters
    ----------
    chain : DecodingChain
    horizon : int
    cost : Cost or float
    information : {"state", "path"}
        See the module docstring.
    max_depth : int
        Longest draft allowed.
    verifier : str or Verifier
        The single-path rule that checks the drafts: one that checks a token at a time
        (``phase_masses``; default token verification), as in :func:`evaluate_policy`.

    Returns
    -------
    PolicyValue
        The optimum's expectations; for ``"state"``, ``extra["policy"]`` is the optimal
        :class:`StartStatePolicy` and ``extra["lengths"]`` its ``[T, S]`` table.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import FixedGamma, evaluate_policy, optimal_policy
    >>> chain = st.DecodingChain.random(3, concentration=0.5, rng=1)
    >>> best = optimal_policy(chain, 20, 0.1, max_depth=4)
    >>> full = optimal_policy(chain, 20, 0.1, information="path", max_depth=4)
    >>> fixed = evaluate_policy(chain, FixedGamma(3), 20, 0.1)
    >>> bool(full.time() <= best.time() <= fixed.time())
    True
    """
    T = chain.check_horizon(horizon)
    cost = as_cost(cost)
    D = check_int(max_depth, "max_depth", 1)
    if information == "path":
        from ..kinds.policy.paths import optimal_paths

        return optimal_paths(chain, T, cost, D, max_nodes=max_nodes, progress=progress, verifier=verifier)
    if information != "state":
        raise ValueError(f"information: expected one of {INFORMATION}, got {information!r}")
    K = Kernels(chain, verifier)
    with single_thread(chain.n_states):
        W0, lengths = start_class_recursion(K, T, cost, max_depth=D, progress=progress)
    policy = StartStatePolicy(lengths)
    return _value(
        T,
        cost,
        chain.initial @ W0,
        f"optimum (state, max_depth={D})",
        {"information": "state", "lengths": lengths, "policy": policy},
        counters=forward_counters(chain, policy, T, K.verifier),
    )


def compare_policies(
    chain: ChainLike,
    policies: Sequence[Policy],
    horizon: int,
    cost: Cost | float | None = None,
    information: Sequence[str] = ("state", "path"),
    max_depth: int = DEFAULT_MAX_DEPTH,
    **kwargs: Any,
) -> list[dict]:
    """Each policy's exact value and its time as a ratio to each optimum (``time / optimum time``);
    ``kwargs`` go to :func:`optimal_policy` (``verifier=`` to the policies' values too).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import FixedGamma, compare_policies
    >>> rows = compare_policies(st.DecodingChain.random(3, rng=0), [FixedGamma(2)], 10, 0.1,
    ...                         information=("state",), max_depth=4)
    >>> bool(rows[0]["ratio_state"] >= 1.0)
    True
    """
    opts = {info: optimal_policy(chain, horizon, cost, info, max_depth, **kwargs) for info in information}
    rows = []
    for policy in policies:
        v = evaluate_policy(chain, policy, horizon, cost, verifier=kwargs.get("verifier", "token"))
        row = v.as_dict()
        for info, opt in opts.items():
            row[f"ratio_{info}"] = v.time() / opt.time()
        rows.append(row)
    for opt in opts.values():
        row = opt.as_dict()
        row.update({f"ratio_{i}": opt.time() / o.time() for i, o in opts.items()})
        rows.append(row)
    return rows


@dataclass(repr=False)
class LongRunResult:
    """Long-run optimum of a homogeneous chain (state information).

    Attributes
    ----------
    rate : float
        Tokens per unit time (speedup over one target call per token).
    lengths : ndarray of int, shape (S,)
        Optimal draft length per round-start state.
    tokens_per_round, time_per_round : float
        Expectations per round under the stationary law of round starts.
    iterations : int
        Dinkelbach iterations.
    """

    rate: float
    lengths: np.ndarray
    tokens_per_round: float
    time_per_round: float
    iterations: int

    def speedup(self) -> float:
        """Long-run tokens per unit time under the cost it was optimised for (``rate``): the
        speedup over plain decoding; a method, as on every result type."""
        return self.rate

    def time_per_token(self) -> float:
        """``1 / rate``: long-run time per token (units of one target call)."""
        return 1.0 / self.rate

    def __repr__(self) -> str:
        """One line: the rate, the expectations per round, the iterations, ``lengths`` by shape."""
        from ..exact._repr import exact_value, result_repr

        counters = ("rate", "tokens_per_round", "time_per_round", "iterations")
        return result_repr(self, counters, exact_value(self), None)


def _dense(op):
    return op.toarray() if hasattr(op, "toarray") else np.asarray(op, dtype=np.float64)


_MULTICHAIN_HINT = (
    "the long-run rate then depends on the start state: restrict the chain to one closed class, "
    "or use a finite horizon from a given start (chain.protocol, optimal_policy)"
)


def _gain(P, r):
    """Average reward per round ``g`` and bias ``h`` (``h[0] = 0``) of a unichain round chain."""
    require_one_closed_class(
        P,
        "the long-run rate of these draft lengths",
        "their round starts never leave one of these sets (e.g. a periodic chain whose drafts are "
        "always accepted), so the rate depends on the start state; use a finite horizon from a "
        "given start (chain.protocol, optimal_policy)",
    )
    S = P.shape[0]
    M = np.eye(S) - P
    M[:, 0] = 1.0  # column 0 now carries the gain g (h[0] = 0)
    sol = np.linalg.solve(M, r)
    h = sol.copy()
    h[0] = 0.0
    return sol[0], h


def long_run_optimum(
    chain: ChainLike, cost: Cost | float | None = None, max_depth: int = 64, *, max_iter: int = 200
) -> LongRunResult:
    r"""Maximum long-run tokens per unit time over round-start policies ``k(s)``, by Dinkelbach's method.

    The rate of a stationary policy is a ratio of expectations per round under the
    stationary law ``nu`` of round starts, ``nu . e_k / nu . tau_k`` (renewal-reward;
    ``e_k(s) = 1 + sum_{j=1}^{k} P(J >= j | s)`` tokens and ``tau_k = c k + t(k)`` time per
    round). Dinkelbach: for ``lambda`` solve the average-reward problem with reward
    ``e - lambda tau`` exactly by policy iteration; set ``lambda`` to the rate of its
    solution; stop when the policy repeats. The optimum's average reward is 0 exactly at
    the optimal rate (proof in ``docs/stopping.md``). Homogeneous, unichain chains (one
    closed class of states; a chain whose states do not all reach one class, or a policy
    whose round starts split into several, raises a ``ValueError`` naming the classes).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import long_run_optimum
    >>> res = long_run_optimum(st.DecodingChain.iid([0.8, 0.2], [1.0, 0.0]), 0.05)
    >>> int(res.lengths[0]), st.iid_optimal_gamma(0.8, 0.05)
    (8, 8)
    """
    cost = as_cost(cost)
    D = check_int(max_depth, "max_depth", 1)
    trans, tokens, tau = _round_start_tables(chain, cost, D)
    pol, lam, ge, gt, it = dinkelbach(trans, tokens, tau, max_iter)
    return LongRunResult(lam, pol + 1, ge, gt, it)


def dinkelbach(
    trans: np.ndarray, tokens: np.ndarray, tau: np.ndarray, max_iter: int = 200
) -> tuple[np.ndarray, float, float, float, int]:
    r"""Best long-run rate over stationary round-start actions, by Dinkelbach's method.

    Action ``a`` in state ``s`` moves the round start by ``trans[a, s]`` and earns
    ``tokens[a, s]`` tokens in time ``tau[a]`` (``[A]``) or ``tau[a, s]`` (``[A, S]``). For
    ``lambda`` the average-reward problem with reward ``tokens - lambda tau`` is solved by
    policy iteration; ``lambda`` becomes the rate of its solution, until the policy repeats
    (``docs/stopping.md``). Shared by :func:`long_run_optimum` (actions: draft lengths) and
    :func:`spectheory.trees.long_run_tree_optimum` (actions: tree shapes).

    Returns
    -------
    policy : ndarray of int, shape (S,)
        The best action per state (ties: the current one, then the first).
    rate, tokens_per_round, time_per_round : float
    iterations : int

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.stopping.optimal import dinkelbach
    >>> trans = np.ones((2, 1, 1))  # one state; action 1 earns 3 tokens in 2, action 0 1 in 1
    >>> dinkelbach(trans, np.array([[1.0], [3.0]]), np.array([1.0, 2.0]))[:2]
    (array([1]), 1.5)
    """
    A, S = tokens.shape
    tau = np.broadcast_to(np.asarray(tau, dtype=np.float64).reshape(A, -1), (A, S))
    pol = np.zeros(S, dtype=np.int64)
    lam, it = 0.0, 0
    rows = np.arange(S)
    for it in range(1, max_iter + 1):  # noqa: B007 (the iteration count is returned)
        Pp = trans[pol, rows]
        ge, _ = _gain(Pp, tokens[pol, rows])
        gt, _ = _gain(Pp, tau[pol, rows])
        lam = ge / gt
        for _ in range(max_iter):  # policy iteration at this lambda
            r = tokens - lam * tau
            _, h = _gain(trans[pol, rows], r[pol, rows])
            q = r + trans @ h  # [A, S]
            best = q.max(0)
            keep = q[pol, rows] >= best - 1e-12 * (1.0 + np.abs(best))
            new = np.where(keep, pol, q.argmax(0))
            if np.array_equal(new, pol):
                break
            pol = new
        Pp = trans[pol, rows]
        ge, _ = _gain(Pp, tokens[pol, rows])
        gt, _ = _gain(Pp, tau[pol, rows])
        if ge / gt <= lam * (1 + 1e-14):
            lam = max(lam, ge / gt)
            break
    return pol, float(lam), float(ge), float(gt), it


def _round_start_tables(chain, cost, D):
    """Per round length ``k = 1..D``: round-start kernels ``[D, S, S]``, tokens ``[D, S]``, time ``[D]``."""
    if not chain.is_homogeneous:
        raise ValueError("chain: the long-run objective needs a homogeneous chain")
    K = Kernels(chain)
    laws = K.at(0)
    S = chain.n_states
    A = _dense(chain.transition_operator(laws.acc))
    R = _dense(chain.transition_operator(laws.rej))
    P = _dense(chain.transition_operator(laws.target))
    require_one_closed_class(P, "chain: the long-run rate", _MULTICHAIN_HINT)
    Mj, cumR = np.eye(S), np.zeros((S, S))
    trans, tokens = np.empty((D, S, S)), np.empty((D, S))
    ej = np.ones(S)
    with single_thread(S):
        for k in range(1, D + 1):
            cumR += Mj @ R
            Mj = Mj @ A
            trans[k - 1] = cumR + Mj @ P
            ej = ej + Mj.sum(1)
            tokens[k - 1] = ej
    return trans, tokens, cost.c * np.arange(1, D + 1) + cost.call_times(D)


def long_run_rate(chain: ChainLike, lengths: int | ArrayLike, cost: Cost | float | None = None) -> float:
    """Long-run tokens per unit time of drafting ``lengths[s]`` tokens from round-start state ``s`` (an int: fixed gamma).

    ``g(e) / g(tau)`` under the stationary law of round starts (``docs/stopping.md``, Theorem 3).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping.optimal import long_run_rate
    >>> chain = st.DecodingChain.iid([0.8, 0.2], [1.0, 0.0])
    >>> bool(abs(long_run_rate(chain, 4, 0.1) - st.iid_speedup(0.8, 4, 0.1)) < 1e-12)
    True
    """
    cost = as_cost(cost)
    S = chain.n_states
    k = np.broadcast_to(np.asarray(lengths, dtype=np.int64), (S,))
    if k.min() < 1:
        raise ValueError("lengths: draft lengths must be >= 1")
    trans, tokens, tau = _round_start_tables(chain, cost, int(k.max()))
    rows = np.arange(S)
    Pp = trans[k - 1, rows]
    return float(_gain(Pp, tokens[k - 1, rows])[0] / _gain(Pp, tau[k - 1])[0])
