r"""Drafts fitted to a target chain by a divergence or by the multi-step objective.

The divergence objectives average over the target's own states (on-policy data, as
DistillSpec's target samples): with ``w(s)`` the mean over positions ``n < T`` of the state law
under target sampling (``chain.state_marginals(T).mean(0)``), a draft ``q = expand(laws)`` of a
:class:`~spectheory.objectives.family.TiedDraft` family minimises

.. math:: L_D(q) = \sum_s w(s)\, D\big(p(\cdot|s), q(\cdot|s)\big)

for ``D`` one of :data:`DIVERGENCES`: ``forward_kl`` :math:`KL(p\|q)` (the training loss of the
shipped drafts), ``reverse_kl`` :math:`KL(q\|p)`, ``jsd`` (Jensen-Shannon) and ``tv``. The TV
loss is Theorem 1 divided by ``T``: ``T L_TV(q)`` is the expected number of rejections with the
bonus off, for every ``gamma``, so the TV fit is the exact minimiser of the Theorem-1 sum over
the family. The closed forms (per context ``g`` with weight ``w_g = sum_{s in g} w(s)``):
forward KL gives the weighted mean ``sum_{s in g} w(s) p(.|s) / w_g``, reverse KL the
normalised weighted geometric mean; TV is a linear programme (solved exactly); JSD is
minimised by L-BFGS from the forward-KL fit.

``tokens_per_call`` maximises ``T / C(q)``, ``C`` the exact expected target calls at one
``gamma``, by L-BFGS on the logits with the adjoint gradient
(:func:`~spectheory.objectives.multistep.calls_and_gradient`, equal to torch autograd through
:func:`~spectheory.objectives.multistep.expected_calls_torch`) from a starting fit; the result
is never worse than its start. The best of the divergence fits and of this objective started
from them is the lab's reference at that ``gamma``: the best draft of the family the lab finds
(a local optimum that dominates every divergence fit by construction). ``docs/draft_objectives.md`` has the results and the argument.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law, check_int
from ..chain import DecodingChain
from ..exact.parts import blas_single_thread
from .family import TiedDraft

__all__ = ["DIVERGENCES", "OBJECTIVES", "state_weights", "divergence", "fit_draft", "FittedDraft"]

#: The divergence objectives, in table order.
DIVERGENCES = ("forward_kl", "reverse_kl", "jsd", "tv")
#: Every objective: the divergences and the multi-step objective (tokens per call at one gamma).
OBJECTIVES = (*DIVERGENCES, "tokens_per_call")
_FLOOR = 1e-300


def state_weights(chain: DecodingChain, horizon: int) -> np.ndarray:
    """``w(s)``: the state law under target sampling averaged over positions ``0..T-1``, ``[S]``."""
    return chain.state_marginals(horizon).mean(0)


def divergence(name: str, target: ArrayLike, draft: ArrayLike) -> np.ndarray:
    r"""Row-wise divergence ``D(target, draft)`` (laws on the last axis), ``name`` in :data:`DIVERGENCES`.

    Examples
    --------
    >>> float(divergence("tv", [0.5, 0.5], [0.9, 0.1]))
    0.4
    >>> round(float(divergence("forward_kl", [0.5, 0.5], [0.5, 0.5])), 12)
    0.0
    """
    p = np.asarray(target, dtype=np.float64)
    q = np.asarray(draft, dtype=np.float64)
    if name not in DIVERGENCES:
        raise ValueError(f"name: unknown divergence {name!r} (one of {', '.join(DIVERGENCES)})")
    if name == "tv":
        return 0.5 * np.abs(p - q).sum(-1)

    def kl(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(a > 0, a * (np.log(np.maximum(a, _FLOOR)) - np.log(np.maximum(b, _FLOOR))), 0.0)
        return terms.sum(-1)

    if name == "forward_kl":
        return kl(p, q)
    if name == "reverse_kl":
        return kl(q, p)
    m = 0.5 * (p + q)
    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


def _group_weights(family: TiedDraft, w: np.ndarray) -> np.ndarray:
    """Per state, its weight within its context (contexts of zero weight: uniform)."""
    tot = np.bincount(family.groups, weights=w, minlength=family.n_groups)
    size = np.bincount(family.groups, minlength=family.n_groups)
    return np.where(
        tot[family.groups] > 0, w / np.where(tot > 0, tot, 1.0)[family.groups], 1.0 / size[family.groups]
    )


def _pool(family: TiedDraft, rows: np.ndarray, wg: np.ndarray) -> np.ndarray:
    out = np.zeros((family.n_groups, rows.shape[1]))
    np.add.at(out, family.groups, wg[:, None] * rows)
    return out


def _fit_tv(family: TiedDraft, p: np.ndarray, wg: np.ndarray) -> np.ndarray:
    """Per context, the LP ``min sum_s w(s) sum_x u[s, x]`` s.t. ``u >= p_s - q``, ``u >= 0``,
    ``q`` a law (``TV = sum_x (p - q)^+`` for laws)."""
    from scipy.optimize import linprog

    V = family.vocab_size
    out = np.zeros((family.n_groups, V))
    for g in range(family.n_groups):
        members = np.flatnonzero(family.groups == g)
        m = members.size
        c = np.concatenate([np.zeros(V), np.repeat(wg[members], V)])
        # -q_x - u_{s,x} <= -p_{s,x}
        a_ub = np.hstack([-np.tile(np.eye(V), (m, 1)), -np.eye(m * V)])
        b_ub = -p[members].ravel()
        a_eq = np.concatenate([np.ones(V), np.zeros(m * V)])[None]
        res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=(0, None), method="highs")
        if not res.success:  # pragma: no cover - a feasible bounded LP
            raise RuntimeError(f"TV fit: linprog failed for context {g}: {res.message}")
        q = np.clip(res.x[:V], 0.0, None)
        out[g] = q / q.sum()
    return out


def _minimise(
    value_grad: Callable[[np.ndarray], tuple[float, np.ndarray]],
    family: TiedDraft,
    start: np.ndarray,
    max_iter: int,
) -> np.ndarray:
    """Minimise ``f(q)`` over the family's logits by L-BFGS-B; ``value_grad(q) -> (f, df/dq)``
    with ``q`` the ``[S, V]`` kernel. Returns the best laws ``[G, V]`` seen (never worse than
    ``start``)."""
    from scipy.optimize import minimize

    shape = (family.n_groups, family.vocab_size)
    best: list = [np.inf, start]

    def fun(theta):
        laws = _softmax(theta.reshape(shape))
        q = laws[family.groups]
        f, g = value_grad(q)
        if f < best[0]:
            best[0], best[1] = f, laws
        # softmax Jacobian, rows tied by context: d/dtheta_g = sum_{s in g} q_s * (g_s - <g_s, q_s>)
        gs = q * (g - (g * q).sum(-1, keepdims=True))
        out = np.zeros(shape)
        np.add.at(out, family.groups, gs)
        return f, out.ravel()

    with blas_single_thread(family.n_states):  # tiny products: BLAS threads only cost time
        minimize(fun, _logits(start).ravel(), jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    return np.asarray(best[1])


def _softmax(theta: np.ndarray) -> np.ndarray:
    z = np.exp(theta - theta.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def _logits(laws: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(laws, 1e-9))


def _fit_laws(
    chain: DecodingChain,
    family: TiedDraft,
    objective: str,
    T: int,
    gamma: int | None,
    bonus: bool,
    init: np.ndarray | None,
    max_iter: int,
) -> np.ndarray:
    p = chain.target
    wg = _group_weights(family, state_weights(chain, T))
    if objective == "forward_kl":
        return _pool(family, p, wg)
    if objective == "reverse_kl":
        geo = np.exp(_pool(family, np.log(np.maximum(p, _FLOOR)), wg))
        return geo / geo.sum(-1, keepdims=True)
    if objective == "tv":
        return _fit_tv(family, p, wg)
    start = _pool(family, p, wg) if init is None else init
    if objective == "jsd":
        w = state_weights(chain, T)

        def jsd(q):
            m = 0.5 * (p + q)
            val = w @ divergence("jsd", p, q)
            return val, w[:, None] * 0.5 * np.log(np.maximum(q, _FLOOR) / m)

        return _minimise(jsd, family, start, max_iter)
    from .multistep import calls_and_gradient, transition_tensor

    assert gamma is not None
    K = transition_tensor(chain)
    return _minimise(lambda q: calls_and_gradient(chain, q, T, gamma, bonus, K), family, start, max_iter)


@dataclass(frozen=True)
class FittedDraft:
    """A draft of a :class:`TiedDraft` family fitted to a target chain, and its exact values.

    ``laws`` ``[G, V]`` are the per-context draft laws; ``chain`` is the target chain with
    this draft (its exact results are cached per chain, so :meth:`evaluate` at several
    ``gamma`` runs each recursion once).
    """

    objective: str
    gamma: int | None
    laws: np.ndarray
    family: TiedDraft
    target_chain: DecodingChain = field(repr=False)
    horizon: int

    @cached_property
    def chain(self) -> DecodingChain:
        """The target chain with this draft."""
        return self.family.chain(self.target_chain, self.laws)

    @property
    def label(self) -> str:
        """``objective`` or ``tokens_per_call@gamma``."""
        return self.objective if self.gamma is None else f"{self.objective}@{self.gamma}"

    def evaluate(self, gamma: int, bonus: bool = True) -> dict[str, float]:
        """Exact values at draft length ``gamma`` over ``horizon`` tokens: ``tokens_per_call``,
        ``acceptance`` (``1 - theorem1 / T``, the per-token acceptance along target paths),
        ``accepted_fraction`` (accepted / drafted), ``theorem1`` (the Theorem-1 sum of expected
        TVs = E[rejections] with the bonus off) and the fitted ``loss`` of every divergence."""
        T = self.horizon
        res = self.chain.protocol(T, check_int(gamma, "gamma", 1), bonus=bonus)
        th1 = float(self.chain.rejection_lower_bound(T))
        w = state_weights(self.target_chain, T)
        out = {
            "tokens_per_call": float(res.tokens_per_call),
            "acceptance": 1.0 - th1 / T,
            "accepted_fraction": float(res.accepted / res.draft_tokens),
            "theorem1": th1,
        }
        for d in DIVERGENCES:
            out[f"loss_{d}"] = float(w @ divergence(d, self.chain.target, self.chain.draft))
        return out


def fit_draft(
    chain: DecodingChain,
    family: TiedDraft,
    objective: str,
    horizon: int,
    *,
    gamma: int | None = None,
    bonus: bool = True,
    init: ArrayLike | FittedDraft | None = None,
    max_iter: int = 100,
) -> FittedDraft:
    r"""Fit a draft of ``family`` to ``chain``'s target by ``objective`` (one of :data:`OBJECTIVES`).

    Parameters
    ----------
    chain : DecodingChain
        Homogeneous target chain (its draft is ignored).
    family : TiedDraft
    objective : str
        A divergence of :data:`DIVERGENCES` (weights: the target's state law over ``horizon``)
        or ``"tokens_per_call"`` (needs ``gamma``).
    horizon : int
        ``T``: of the state weights and of the multi-step objective.
    gamma : int, optional
        Draft length of the multi-step objective (ignored by the divergences).
    bonus : bool
        Bonus setting of the multi-step objective.
    init : array_like ``[G, V]`` or FittedDraft, optional
        Start of the iterative fits (JSD, tokens per call); default the forward-KL fit.
    max_iter : int
        L-BFGS iterations.

    Examples
    --------
    >>> from spectheory.objectives import TiedDraft, context_chain
    >>> chain = context_chain(3, 0.5, 0.5, rng=0)
    >>> fam = TiedDraft.last_token(3)
    >>> fkl = fit_draft(chain, fam, "forward_kl", 16)
    >>> best = fit_draft(chain, fam, "tokens_per_call", 16, gamma=2, init=fkl)
    >>> bool(best.evaluate(2)["tokens_per_call"] >= fkl.evaluate(2)["tokens_per_call"])
    True
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: unknown {objective!r} (one of {', '.join(OBJECTIVES)})")
    family.check(chain)
    T = chain.check_horizon(horizon)
    g = None
    if objective == "tokens_per_call":
        if gamma is None:
            raise ValueError("gamma: the tokens_per_call objective needs a draft length")
        g = check_int(gamma, "gamma", 1)
    start = None
    if init is not None:
        start = init.laws if isinstance(init, FittedDraft) else as_law(init, "init", min_ndim=2)
        if start.shape != (family.n_groups, family.vocab_size):
            raise ValueError(
                f"init: expected shape ({family.n_groups}, {family.vocab_size}), got {start.shape}"
            )
    laws = _fit_laws(chain, family, objective, T, g, bool(bonus), start, check_int(max_iter, "max_iter", 1))
    laws = np.clip(laws, 0.0, None)
    laws = laws / laws.sum(-1, keepdims=True)
    laws.setflags(write=False)
    return FittedDraft(objective, g, laws, family, chain, T)
