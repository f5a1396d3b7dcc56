r"""Block verification (Sun, Mendlovic, Leviathan, Aharoni, Beirami, Ro, Suresh 2024,
"Block Verification Accelerates Speculative Decoding", arXiv 2403.10444, Algorithm 2).

Notation: p = target, q = draft (code says ``target``/``draft``). The draft proposes a
block ``X_1..X_g`` autoregressively; with the conditionals ``p_i = p(. | X_<i)`` and
``q_i = q(. | X_<i)`` (``p_{g+1}`` is the law after the whole block), block verification
decides on the block jointly instead of token by token::

    w_0 = 1
    for i = 1..g:  w_i = min(1, w_{i-1} p_i(X_i) / q_i(X_i))
    for i = 1..g-1:
        Z_{i+1} = sum_x max(w_i p_{i+1}(x) - q_{i+1}(x), 0)
        h_i = Z_{i+1} / (Z_{i+1} + 1 - w_i)       (1 if the denominator is 0)
    h_g = w_g
    eta_i ~ Bernoulli(h_i) independently; tau = max{i : eta_i = 1} (0 if none)
    emit X_1..X_tau, then
        tau = g:  a bonus token from p_{g+1}
        tau < g:  one token from norm(max(w_tau p_{tau+1} - q_{tau+1}, 0))

(The paper writes ``p_i`` for our ``w_i``; we rename it to keep ``p`` for the target.)
Sun et al. prove it lossless (the emitted sequence, continued by target sampling, has the
target's law), never worse than token verification in expected accepted tokens for every
context, and optimal among valid verifiers. Here those claims are checked, not assumed:
the tests enumerate every draft block and every outcome (with ``fractions.Fraction`` on
tiny cases) and compare with the target's law and with token verification.

Uniform convention: ``eta_i = 1`` iff ``u_i < h_i`` for ``u_i`` uniform on ``[0, 1)``.

As a :class:`~spectheory.verifiers.base.Verifier` (:class:`BlockVerifier`, registered as
``"block"``): the pure rule on given uniforms, the exact round transition ``Q [S, k+1, S]``
(:func:`~spectheory.verifiers.block_exact.block_round_transition`) for
:func:`spectheory.exact.round_recursion`, and the torch rule
:func:`spectheory.verifiers.torch_forms.block_verify`. The exact laws by enumeration live in
:mod:`spectheory.verifiers.block_exact`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..laws.sampling import normalize_or, safe_ratio
from .base import Verifier, check_round_arrays, register_verifier
from .multidraft import _categorical

if TYPE_CHECKING:
    import torch

    from ..chain import DecodingChain
    from .torch_forms import Verdict

__all__ = [
    "BlockVerifier",
    "BLOCK",
    "block_weights",
    "backward_scan_law",
]


def block_weights(
    target_laws: np.ndarray, draft_laws: np.ndarray, draft_tokens: np.ndarray, k: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Exact per-block quantities of block verification, vectorised over runs.

    Parameters
    ----------
    target_laws : array, shape (R, g+1, V)
        Row ``i`` is :math:`p_{i+1}`, the target law at the ``(i+1)``-th drafted position;
        row ``k[r]`` is the law after the block (bonus).
    draft_laws : array, shape (R, g, V)
        Row ``i`` is :math:`q_{i+1}`.
    draft_tokens : int array, shape (R, g)
    k : int array, shape (R,) (or scalar)
        Number of drafts that count per run (``1 <= k <= g``); later slots are padding.

    Returns
    -------
    h : ndarray, shape (R, g)
        Stopping probabilities :math:`h_1..h_g` (0 beyond ``k``).
    tau_law : ndarray, shape (R, g+1)
        :math:`P(\tau = j \mid \text{block})` for ``j = 0..g`` (0 beyond ``k``).
    final_weights : ndarray, shape (R, g+1, V)
        Law of the token emitted after :math:`X_1..X_j` when :math:`\tau = j`: the residual
        ``norm(max(w_j p_{j+1} - q_{j+1}, 0))`` for ``j < k`` and :math:`p_{k+1}` for ``j = k``.
    """
    t, d, x, kk = check_round_arrays(target_laws, draft_laws, draft_tokens, k)
    R, g = d.shape[:2]
    rows = np.arange(R)
    w = np.ones((R, g + 1))
    for i in range(1, g + 1):
        xi = x[:, i - 1]
        tx = t[rows, i - 1, xi]
        dx = d[rows, i - 1, xi]
        with np.errstate(over="ignore", invalid="ignore"):  # p/q may overflow to inf
            ratio = safe_ratio(tx, dx, 0.0)
            prev = w[:, i - 1]
            # a zero prefix weight stays zero (0 * inf would be NaN)
            w[:, i] = np.where(prev > 0, np.minimum(1.0, prev * ratio), 0.0)
    h = np.zeros((R, g))
    final = t.copy()
    for j in range(0, g):
        ex = np.maximum(w[:, j, None] * t[:, j] - d[:, j], 0.0)  # residual weights after j
        final[:, j], mass = normalize_or(ex, t[:, j])
        if j >= 1:
            den = mass + 1.0 - w[:, j]
            hj = np.where(den > 0, mass / np.where(den > 0, den, 1.0), 1.0)
            h[:, j - 1] = np.where(j < kk, np.clip(hj, 0.0, 1.0), 0.0)
    h[rows, kk - 1] = w[rows, kk]
    final[rows, kk] = t[rows, kk]
    return h, backward_scan_law(h, kk), final


def backward_scan_law(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    r"""Law of :math:`\tau = \max\{i \le k : \eta_i = 1\}` (0 if none) for independent
    :math:`\eta_i \sim \mathrm{Bernoulli}(h_i)`: :math:`P(\tau = j) = h_j \prod_{i=j+1}^k (1 - h_i)`,
    :math:`h_0 := 1`. Shapes: ``h [R, g]`` (``h[:, i-1] = h_i``), ``k [R]``; returns ``[R, g+1]``
    (0 beyond ``k``). The backward scan of block verification and of HSD (:mod:`.hsd`).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.block import backward_scan_law
    >>> backward_scan_law(np.array([[0.5, 0.5]]), np.array([2])).tolist()
    [[0.25, 0.25, 0.5]]
    """
    R, g = h.shape
    idx = np.arange(g + 1)[None, :]
    h_ext = np.concatenate([np.ones((R, 1)), h], 1)  # [R, g+1], h_ext[:, j] = h_j
    one_minus = np.where(idx[:, 1:] <= k[:, None], 1.0 - h, 1.0)  # [R, g]
    tail = np.ones((R, g + 1))
    for j in range(g - 1, -1, -1):
        tail[:, j] = tail[:, j + 1] * one_minus[:, j]
    return np.where(idx <= k[:, None], h_ext * tail, 0.0)


class BlockVerifier(Verifier):
    r"""Block verification as a :class:`~spectheory.verifiers.base.Verifier` (lossless).

    The pure rule: ``tau = max{i <= k : u_accept[:, i-1] < h_i}`` (0 if none; the uniforms
    play the role of ``eta``); the final token is sampled from ``final_weights[:, tau]``
    (residual or bonus law, :func:`block_weights`) by inverse CDF with ``u_final``. Exact
    values: :func:`~spectheory.verifiers.block_exact.block_round_transition` (whole-round rule).

    Examples
    --------
    Paper's binary example (p = (1/3, 2/3), q = (2/3, 1/3), g = 2), draft block (1, 0):
    ``w_1 = 1``, ``Z_2 = sum_x max(p(x) - q(x), 0) = 1/3``, so ``h_1 = 1``; ``w_2 = h_2 = 1/2``.
    With ``eta = (0.9, 0.5)`` only ``eta_1`` fires: ``tau = 1``, and the token after ``X_1``
    comes from ``norm(max(w_1 p - q, 0)) = (0, 1)``.

    >>> import numpy as np
    >>> from spectheory.verifiers import get_verifier
    >>> t = np.tile([1/3, 2/3], (1, 3, 1)); d = np.tile([2/3, 1/3], (1, 2, 1))
    >>> tau, token = get_verifier("block").rule(t, d, [[1, 0]], [2], [[0.9, 0.5]], [0.0])
    >>> tau.tolist(), token.tolist()
    ([1], [1])
    """

    name = "block"
    lossless = True

    def _rule(self, t, d, x, kk, eta, u_final):
        R, g = x.shape
        h, _, final = block_weights(t, d, x, kk)
        fired = eta < h  # h = 0 beyond k
        last = g - np.argmax(fired[:, ::-1], axis=1)
        tau = np.where(fired.any(1), last, 0)
        token = _categorical(final[np.arange(R), tau], u_final)
        return tau.astype(np.int64), token

    def round_transition(self, chain: DecodingChain) -> Callable[[int, int, bool], np.ndarray]:
        from .block_exact import block_round_transition

        return lambda n0, k, emit_bonus: block_round_transition(chain, n0, k, emit_bonus)

    def torch_rule(
        self,
        target_probs: torch.Tensor,
        draft_probs: torch.Tensor,
        draft_tokens: torch.Tensor,
        k: torch.Tensor,
        u_accept: torch.Tensor,
        u_emit: torch.Tensor,
        allow_bonus: torch.Tensor,
    ) -> Verdict:
        from .torch_forms import block_verify

        return block_verify(target_probs, draft_probs, draft_tokens, k, u_accept, u_emit, allow_bonus)


#: The registered instance (``get_verifier("block")``).
BLOCK = register_verifier(BlockVerifier())


_MOVED = ("block_round_transition", "round_accepted_means", "block_emission_law", "MAX_BLOCK_ELEMENTS")


def __getattr__(name: str) -> Any:
    """The exact laws moved to :mod:`spectheory.verifiers.block_exact`: the old path warns."""
    if name in _MOVED:
        import warnings

        from . import block_exact

        warnings.warn(
            f"spectheory.verifiers.block.{name} moved to spectheory.verifiers.block_exact.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(block_exact, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
