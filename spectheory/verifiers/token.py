r"""Standard token verification (Leviathan et al. 2023; Chen et al. 2023) as a :class:`Verifier`.

Pseudo-code, per row (p = target, q = draft)::

    for i in 0 .. k-1:
        if u_accept[i] * q_i(x_i) < p_i(x_i):       # i.e. u < min(1, p_i(x_i)/q_i(x_i))
            continue                                  # accept draft token x_i
        return i, inverse_cdf(max(p_i - q_i, 0), u_final)   # reject: residual sample
    return k, inverse_cdf(p_k, u_final)               # all accepted: bonus sample

The comparison ``u * q(x) < p(x)`` is the ratio test without a division: a token with
``p >= q`` is always accepted (``u < 1``) and one with ``p(x) = 0`` never, even at ``u = 0``.
A residual with no mass (``p == q`` up to rounding) falls back to ``p``
(:func:`spectheory.laws.sampling.residual_weights`).

Exact values: the phase recursion with the masses ``min(p, q)`` (accepted) and
``max(p - q, 0)`` (rejected, then the residual token) -- :func:`spectheory.exact.token_masses`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..laws.sampling import residual_weights, sample_categorical
from .base import Verifier, register_verifier
from .stepwise import ratio_step, stepwise_round_law
from .tree_base import TreeVerifier

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from .inputs import FusedRoundInputs, TorchRoundInputs
    from .torch_forms import Verdict

__all__ = ["TokenVerifier", "TOKEN"]

LawFn = Callable[[tuple[int, ...]], Sequence[Any]]


def token_rule(
    t: np.ndarray, d: np.ndarray, x: np.ndarray, k: np.ndarray, u_accept: np.ndarray, u_final: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Token verification of ``R`` rows with the laws ``q = d`` the drafts are checked against.

    ``t [R, g + 1, V]``, ``d [R, g, V]``, drafts ``x [R, g]``, ``k [R]`` drafted per row: accept
    ``x_i`` while ``u_accept q(x_i) < p(x_i)``, then draw from ``norm((p - q)_+)`` at the first
    rejection (``p`` after ``k`` accepted) with ``u_final``. Returns ``(accepted [R], token [R])``.
    """
    R, g, _ = d.shape
    rows = np.arange(R)
    tx = np.take_along_axis(t[:, :g], x[..., None], axis=-1)[..., 0]
    dx = np.take_along_axis(d, x[..., None], axis=-1)[..., 0]
    ok = (u_accept * dx < tx) & (np.arange(g)[None, :] < k[:, None])
    j = np.cumprod(ok, axis=1).sum(axis=1).astype(np.int64)
    rejected = j < k
    jc = np.minimum(j, g - 1)
    law = np.where(rejected[:, None], residual_weights(t[rows, jc], d[rows, jc]), t[rows, k])
    return j, sample_categorical(law, u_final)


class TokenVerifier(Verifier):
    """Standard token verification (lossless; optimal among token-by-token rules, Yin et al.
    Theorem 2).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers import get_verifier
    >>> token = get_verifier("token")
    >>> target = np.array([[[0.5, 0.5], [0.5, 0.5]]])      # R=1, g=1, V=2
    >>> draft = np.array([[[0.8, 0.2]]])
    >>> # draft token 0: accepted iff u * 0.8 < 0.5, i.e. u < 0.625; the residual is token 1
    >>> token.rule(target, draft, [[0]], [1], [[0.7]], [0.3])
    (array([0]), array([1]))
    >>> token.rule(target, draft, [[0]], [1], [[0.6]], [0.3])
    (array([1]), array([0]))
    """

    name = "token"
    lossless = True
    inline_token_round = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "inline_token_round" not in cls.__dict__:  # a subclass may change the rule
            cls.inline_token_round = False

    def _rule(self, t, d, x, k, u_accept, u_final):
        return token_rule(t, d, x, k, u_accept, u_final)

    def fused_round(self, inputs: FusedRoundInputs, rng: np.random.Generator) -> Any:
        """Drafting fused with verification (the simulator's fast path).

        Same rule and the same uniforms, in the same order, as drafting followed by
        :meth:`verify_round`, so both give identical results for one seed; but only the
        draft samples, the probabilities of the drafted tokens and one final sample per row
        are computed (never the full ``[R, gamma + 1, V]`` law arrays).
        """
        smp, T, g = inputs.sampler, inputs.horizon, inputs.gamma
        n, k, states, x = inputs.n, inputs.k, inputs.states, inputs.x
        R = inputs.size
        rows = np.arange(R)
        tx = np.empty((R, g))
        dx = np.empty((R, g))
        for i in range(g):
            m = None if smp.hom else np.minimum(n + i, T - 1)  # kernel index (unused if homogeneous)
            s = states[:, i]
            xi = smp.sample_draft(m, s, inputs.u[:, i])
            x[:, i] = xi
            dx[:, i] = smp.probs(smp.draft, m, s, xi)
            tx[:, i] = smp.probs(smp.target, m, s, xi)
            states[:, i + 1] = smp.next_state[s, xi]
        u_accept = rng.random((R, g))
        u_final = rng.random(R)
        ok = (u_accept * dx < tx) & (np.arange(g)[None, :] < k[:, None])
        j = np.cumprod(ok, axis=1).sum(axis=1).astype(np.int64)
        rejected = j < k
        mj = np.zeros(R, dtype=np.int64) if smp.hom else np.minimum(n + j, T - 1)
        sj = states[rows, j]
        y = np.empty(R, dtype=np.int64)
        acc = ~rejected
        if acc.any():
            y[acc] = smp.sample_target(mj[acc], sj[acc], u_final[acc])
        if rejected.any():
            y[rejected] = smp.sample_residual(mj[rejected], sj[rejected], u_final[rejected])
        return j, y

    def round_law(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        """Exact law of one round: :func:`~spectheory.verifiers.stepwise.stepwise_round_law` with
        the ratio test against ``q`` (:func:`~spectheory.verifiers.stepwise.ratio_step`)."""
        return stepwise_round_law(ratio_step, target_fn, draft_fn, vocab_size, gamma, tuple(prefix))

    def phase_masses(self, chain: ChainLike) -> tuple[Any, Any, bool] | None:
        from ..exact import token_masses

        acc, rej = token_masses(chain)
        return acc, rej, False

    def for_tree(self) -> TreeVerifier:
        """Token verification's tree form: recursive rejection on i.i.d. children
        (``tree_rrs``; on a single path the two are the same rule)."""
        from .tree_rules import TREE_RRS

        return TREE_RRS

    def torch_rule(self, inputs: TorchRoundInputs) -> Verdict:
        from .torch_forms import token_verify

        return token_verify(*inputs.tensors())


#: The registered instance (``get_verifier("token")``).
TOKEN = register_verifier(TokenVerifier())
