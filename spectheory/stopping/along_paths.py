r"""Rao-Blackwellised prediction of a draft-length policy along *output* paths (``docs/stopping.md`` §9).

For the policies a real drafter can run (fixed gamma, confidence, entropy, the HF schedule:
decisions read the depth, the round start, the memory and the draft's law that proposed the
last token, never the target), the decoder's output is distributed as the target, and given
the output sequence ``x_1..x_T`` the verification outcomes are independent coin flips:
position ``m``, when checked, is rejected with probability

.. math:: r_m = \max(0, 1 - q(x_m | x_{<m}) / p(x_m | x_{<m}))

(p = target, q = draft), and which positions are checked -- how long each round drafts --
follows from the earlier outcomes and the draft's laws *along the output path* (a round's
decision after drafting ``y_i`` matters only if ``y_1..y_i`` are all accepted, and then they
are the output tokens). :func:`policy_round_dp` computes, for each path, the exact
conditional expectation of the round statistics given the path by a forward recursion over
(round start, policy memory); averaging over target-sampled paths is unbiased for the
decoder's expectations (the proof is in ``docs/stopping.md`` §9). :func:`ratio_mean_se`
gives tokens per call, a ratio of two such expectations, with its delta-method SE.

The functions here are pure numpy (the per-position inputs come from a chain, see
:func:`chain_path_inputs`, or from the real models, :mod:`spectheory.validation.policy_predict`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from .._typing import RNGLike
from ..kinds.policy.outcome_kernels import outcome_dp, policy_outcomes
from ..kinds.policy.policies import Policy, require_memory

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["policy_round_dp", "ratio_mean_se", "chain_path_inputs"]

_INPUTS = ("top", "entropy", "token_prob")


def _as_paths(a, name, shape=None):
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    if a.ndim != 2 or (shape is not None and a.shape != shape):
        raise ValueError(f"{name}: expected shape {shape if shape else '(N, T)'}, got {a.shape}")
    return a


def policy_round_dp(
    reject: ArrayLike,
    policy: Policy,
    top: ArrayLike | None = None,
    entropy: ArrayLike | None = None,
    token_prob: ArrayLike | None = None,
    gamma: int | None = None,
    bonus: bool = True,
) -> dict:
    r"""Exact expected round statistics of ``policy`` given per-position inputs along output paths.

    Rounds start at position 0 with the policy's initial memory. A round at ``n`` with memory
    ``mem`` may draft up to ``k_max = min(gamma, policy.max_depth, T - n)`` tokens; its
    ``i``-th token sits at position ``m = n + i - 1``, is rejected with probability
    ``reject[:, m]`` (independently), and if accepted the round stops there when ``i = k_max``
    or ``policy.stop`` says so (context: depth ``i``, round start ``n``, ``mem``, and
    ``top``/``entropy``/``token_prob`` of the draft law at ``m``). A rejection at ``m``
    starts the next round at ``m + 1``; stopping accepted at depth ``i`` emits a bonus token
    (if ``bonus`` and ``n + i < T``), and the memory moves by ``policy.next_memory``.

    Parameters
    ----------
    reject : array, shape (N, T), entries in [0, 1]
        ``max(0, 1 - q(x_m)/p(x_m))`` along each path (p = target, q = draft).
    policy : Policy
        A policy that does not read chain states or the target (``uses_path`` and
        ``uses_start`` false): fixed, confidence, entropy, HF schedule.
    top, entropy, token_prob : arrays, shape (N, T), optional
        Top probability, entropy (nats) of the draft law at each position and the draft
        probability of the path's token there (needed by the rules that read them).
    gamma : int, optional
        An extra cap on the draft length (the decoder's ``gamma``).
    bonus : bool

    Returns
    -------
    dict: ``visits [N, T, M]`` (expected rounds starting at each position and memory) and arrays
    ``[N]``: ``target_calls``, ``rejections``, ``full_rounds`` (rounds whose
    drafts were all accepted), ``accepted`` (accepted drafts); ``counts`` ``[N, D + 1]``
    (expected rounds accepting ``j`` drafts, ``D`` the largest draft length): the forward pass
    :func:`~.outcome_kernels.outcome_dp` of the policy's outcome kernel
    (:func:`~.outcome_kernels.policy_outcomes`).

    Examples
    --------
    Never rejected, fixed gamma 2 over 6 tokens: rounds emit 3 tokens, 2 calls.

    >>> from spectheory.stopping import FixedGamma
    >>> policy_round_dp([[0.0] * 6], FixedGamma(2))["target_calls"].tolist()
    [2.0]
    """
    if not isinstance(policy, Policy):
        raise ValueError(f"policy: expected a spectheory.stopping Policy, got {type(policy).__name__}")
    if policy.uses_path or policy.uses_start:
        raise ValueError(
            f"policy: {policy.name} reads chain states or the target's laws; along output "
            "paths only the rules a drafter can run are predicted"
        )
    r = _as_paths(reject, "reject")
    if np.any((r < 0) | (r > 1)) or not np.all(np.isfinite(r)):
        raise ValueError("reject: entries must lie in [0, 1]")
    N, T = r.shape
    inputs = {}
    for name, val in zip(_INPUTS, (top, entropy, token_prob)):
        inputs[name] = None if val is None else _as_paths(val, name, (N, T))
    if gamma is not None:
        check_int(gamma, "gamma", 1)
    require_memory(policy, ("flag",), "policy_round_dp")
    outcomes, moves, initial = policy_outcomes({"reject": r, **inputs}, policy, gamma)
    return outcome_dp(outcomes, bonus, moves, initial)


def ratio_mean_se(numerator: ArrayLike, denominator: ArrayLike) -> tuple[float, float]:
    r"""Ratio of means ``mean(a) / mean(b)`` with its delta-method standard error.

    For i.i.d. pairs ``(a_i, b_i)``, :math:`\hat R = \bar a / \bar b` and
    :math:`\mathrm{SE}^2 = (\mathrm{Var}\,a - 2R\,\mathrm{Cov}(a, b) + R^2\,\mathrm{Var}\,b) / (n \bar b^2)`
    (sample moments, ddof = 1). A constant numerator (``T`` tokens per generation) gives
    :math:`T\,\mathrm{se}_b / \bar b^2`.

    Examples
    --------
    >>> r, se = ratio_mean_se([8.0, 8.0, 8.0], [2.0, 4.0, 3.0])
    >>> round(r, 6), round(se, 6)
    (2.666667, 0.5132)
    """
    a = np.asarray(numerator, dtype=np.float64).ravel()
    b = np.asarray(denominator, dtype=np.float64).ravel()
    if a.size != b.size or a.size < 2:
        raise ValueError(f"numerator, denominator: need equal sizes >= 2, got {a.size} and {b.size}")
    ma, mb = a.mean(), b.mean()
    R = ma / mb
    cov = np.cov(a, b, ddof=1)
    var = cov[0, 0] - 2 * R * cov[0, 1] + R * R * cov[1, 1]
    return float(R), float(np.sqrt(max(var, 0.0) / a.size) / abs(mb))


def chain_path_inputs(
    chain: ChainLike, tokens: ArrayLike, rejected_draws: int = 0, rng: RNGLike = None
) -> dict:
    """The inputs of :func:`policy_round_dp` along token paths of a chain.

    ``tokens`` [N, T] are generated tokens (e.g. :func:`spectheory.montecarlo.sample_target`);
    the states follow from ``chain.next_state`` and the ``initial`` law, which must be one state.
    Returns a dict with ``reject``, ``top``, ``entropy``, ``token_prob`` (arrays [N, T]) and,
    with ``rejected_draws = S > 0``, ``rejected_prob`` [N, T, S]: ``q(y)`` of ``S`` draws
    ``y ~ (q - p)^+ / TV`` (0 where ``TV = 0``), as
    :func:`~spectheory.validation.policy_predict.policy_path_inputs` gives them.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])
    >>> chain_path_inputs(chain, [[0, 1]])["reject"].tolist()
    [[0.0, 1.0]]
    """
    if getattr(chain, "is_stochastic", False):
        raise ValueError(
            "chain: chain_path_inputs follows states along token paths; stochastic transitions "
            "hide them (not supported)"
        )
    x = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
    init = np.flatnonzero(np.asarray(chain.initial) > 0)
    if init.size != 1:
        raise ValueError("chain: chain_path_inputs needs a chain that starts in one state")
    N, T = x.shape
    s = np.full(N, int(init[0]))
    out = {k: np.zeros((N, T)) for k in ("reject", "top", "entropy", "token_prob")}
    S = check_int(rejected_draws, "rejected_draws", 0)
    g = np.random.default_rng(rng)
    if S:
        out["rejected_prob"] = np.zeros((N, T, S))
    for n in range(T):
        tgt = chain.target[s] if chain.is_homogeneous else chain.target[n, s]
        drf = chain.draft[s] if chain.is_homogeneous else chain.draft[n, s]
        p, q = tgt[np.arange(N), x[:, n]], drf[np.arange(N), x[:, n]]
        with np.errstate(divide="ignore", invalid="ignore"):
            out["reject"][:, n] = np.where(p > 0, np.clip(1.0 - q / np.where(p > 0, p, 1.0), 0.0, 1.0), 0.0)
            logq = np.where(drf > 0, np.log(np.where(drf > 0, drf, 1.0)), 0.0)
        out["top"][:, n] = drf.max(-1)
        out["entropy"][:, n] = -(drf * logq).sum(-1)
        out["token_prob"][:, n] = q
        if S:
            excess = np.clip(drf - tgt, 0.0, None)  # [N, V]
            tv = excess.sum(-1)
            cdf = np.cumsum(excess, -1)
            u = g.random((N, S)) * tv[:, None]
            y = np.minimum((cdf[:, None, :] <= u[..., None]).sum(-1), drf.shape[-1] - 1)
            qy = np.take_along_axis(drf, y, 1)
            out["rejected_prob"][:, n] = np.where(tv[:, None] > 0, qy, 0.0)
        s = chain.next_state[s, x[:, n]]
    return out
