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

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import Verifier, register_verifier
from .block_exact import block_emission_law
from .block_scan import backward_scan_law, block_weights
from .multidraft import _categorical

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from .inputs import TorchRoundInputs
    from .torch_forms import Verdict

__all__ = [
    "BlockVerifier",
    "BLOCK",
    "block_weights",
    "backward_scan_law",
]

LawFn = Callable[[tuple[int, ...]], Sequence[Any]]


class BlockVerifier(Verifier):
    r"""Block verification as a :class:`~spectheory.verifiers.base.Verifier` (lossless).

    The pure rule: ``tau = max{i <= k : u_accept[:, i-1] < h_i}`` (0 if none; the uniforms
    play the role of ``eta``); the final token is sampled from ``final_weights[:, tau]``
    (residual or bonus law, :func:`~spectheory.verifiers.block_scan.block_weights`) by inverse CDF with ``u_final``. Exact
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

    def round_law(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        """Exact law of one round by enumeration
        (:func:`~spectheory.verifiers.block_exact.block_emission_law`)."""
        return block_emission_law(target_fn, draft_fn, vocab_size, gamma, tuple(prefix))

    def round_transition(self, chain: ChainLike) -> Callable[[int, int, bool], np.ndarray]:
        from .block_exact import block_round_transition

        return lambda n0, k, emit_bonus: block_round_transition(chain, n0, k, emit_bonus)

    def torch_rule(self, inputs: TorchRoundInputs) -> Verdict:
        from .torch_forms import block_verify

        return block_verify(*inputs.tensors())


#: The registered instance (``get_verifier("block")``).
BLOCK = register_verifier(BlockVerifier())
