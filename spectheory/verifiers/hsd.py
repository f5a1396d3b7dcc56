r"""Hierarchical Speculative Decoding (Zhou et al., ICLR 2026, arXiv 2601.05724), exactly.

Notation: p = target, q = draft. The draft proposes ``X_1..X_g``; ``p_t``, ``q_t`` are the laws
of position ``t`` (after ``X_{1:t-1}``), ``r(X_{1:t}) = prod_{i<=t} p_i(X_i)/q_i(X_i)`` the joint
ratio (``r(X_{1:0}) = 1``). From the paper (Definitions 4-6, Equations 16-20, Algorithm 2):

- capped prefix ratio of the branch after ``X_{1:t}`` (Definition 5 with the maximum prefix
  ratio index of Definition 4): ``c_t = r(X_{1:t}) / max(1, max_{1<=i<=t} r(X_{1:i}))``, so that
  ``r*(X_{1:t}, y) q(X_{1:t}, y) = q(X_{1:t}) c_t p_{t+1}(y)``;
- capped branch divergences (Eqs. 17-18): ``D+_t = q(X_{1:t}) sum_y (c_t p_{t+1} - q_{t+1})_+``,
  ``D-_t = q(X_{1:t}) sum_y (q_{t+1} - c_t p_{t+1})_+``;
- acceptance (Eq. 19): ``h_t = D+_t / D-_t`` for ``t < g`` (1 when ``D-_t = 0``), and
  ``h_g = min(1, r*(X_{1:g})) = min(1, r(X_{1:g}) / max(1, max_{i<g} r(X_{1:i})))``;
- Algorithm 2: scan ``t = g, g-1, .., 1`` and stop at the first ``t`` with ``eta_t <= h_t``
  (``tau = t``; ``tau = 0`` if none); emit ``X_{1:tau}``, then the bonus token from ``p_{g+1}``
  if ``tau = g``, else one token from the capped branch resampling law (Eq. 20)
  ``norm((c_tau p_{tau+1} - q_{tau+1})_+)``.

``variant="listing"`` is the paper's own code (Listing 2, Appendix F; the same test in
``algorithm_clean.py`` of the authors' repository): everything as above except the full-block
test, ``u <= r(X_{1:g})`` (``probability_ratio = (p_i / q_i).cumprod(1)``), i.e.
``h_g = min(1, r(X_{1:g}))``, uncapped.

**Verdicts** (``docs/sequence_rules.md``). (1) The equations' HSD *is* block verification (Sun
et al., Algorithm 2): ``c_t`` equals block verification's weight ``w_t`` (the suffix-minimum
form of the HSD paper's own Lemma 11), ``D-_t = D+_t + q(X_{1:t})(1 - w_t)`` makes ``h_t`` block
verification's ``Z / (Z + 1 - w_t)``, and ``h_g = min(1, w_{g-1} p_g/q_g) = w_g``; same
uniforms, same output (tested). It is lossless and accepts exactly as much as block
verification -- never more. (2) The listing accepts the full block more often
(``min(1, r) >= min(1, r*)``) and is biased: on Sun et al.'s binary example with ``g = 2`` the
first two tokens are ``(1, 0)`` with probability ``1/3`` instead of ``2/9``.

As a :class:`~spectheory.verifiers.Verifier`: ``"hsd"`` (lossless) and ``"hsd_listing"``
(biased); exact round laws through
:func:`spectheory.verifiers.block_exact.block_round_transition` with :func:`hsd_weights`; a literal
enumeration for any number type in :func:`hsd_round_law`. One target call per round; the
authors' naive loop, which calls the target again for every resampled position, is
:mod:`spectheory.verifiers.hsd_naive` (biased too), and their "HSD (clever)" is the listing.

Examples
--------
>>> import spectheory as st
>>> chain = st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3])
>>> [round(chain.protocol(30, 2, verifier=v).accepted, 6) for v in ("block", "hsd", "hsd_listing")]
[16.690036, 16.690036, 17.347431]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from ..laws.sampling import normalize_or, safe_ratio
from .base import Verifier, check_round_arrays, register_verifier
from .block import backward_scan_law
from .block_exact import block_round_transition
from .multidraft import _categorical

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["HSDVerifier", "HSD", "HSD_LISTING", "hsd_weights", "hsd_round_law", "HSD_VARIANTS"]

LawFn = Callable[[tuple[int, ...]], Sequence[Any]]

#: ``"paper"``: Algorithm 2 with Eq. 19; ``"listing"``: the paper's Listing 2 (uncapped full-block test).
HSD_VARIANTS = ("paper", "listing")


def _check_variant(variant: str) -> str:
    if variant not in HSD_VARIANTS:
        raise ValueError(f"variant: expected one of {HSD_VARIANTS}, got {variant!r}")
    return variant


def hsd_weights(
    target_laws: ArrayLike,
    draft_laws: ArrayLike,
    draft_tokens: ArrayLike,
    k: ArrayLike,
    variant: str = "paper",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""HSD's per-block quantities, vectorised over runs (shapes as :func:`~spectheory.verifiers.block_scan.block_weights`).

    Returns ``(h [R, g], tau_law [R, g+1], final_weights [R, g+1, V])``: the acceptance
    probabilities ``h_1..h_k`` of Eq. 19 (``h_k`` per ``variant``), the law of ``tau`` under
    Algorithm 2's backward scan, and the law of the token after ``X_{1:j}`` (Eq. 20's capped
    branch resampling law for ``j < k``, ``p_{k+1}`` for ``j = k``).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.hsd import hsd_weights
    >>> t = np.tile([1/3, 2/3], (1, 3, 1)); d = np.tile([2/3, 1/3], (1, 2, 1))
    >>> [hsd_weights(t, d, [[1, 0]], [2], v)[0].round(3).tolist() for v in ("paper", "listing")]
    [[[1.0, 0.5]], [[1.0, 1.0]]]
    """
    _check_variant(variant)
    t, d, x, kk = check_round_arrays(target_laws, draft_laws, draft_tokens, k)
    R, g = d.shape[:2]
    rows = np.arange(R)
    r = np.ones((R, g + 1))  # joint ratios r(X_{1:i})
    peak = np.ones((R, g + 1))  # max(1, max_{1<=j<=i} r(X_{1:j}))
    for i in range(1, g + 1):
        xi = x[:, i - 1]
        with np.errstate(over="ignore", invalid="ignore"):
            step = safe_ratio(t[rows, i - 1, xi], d[rows, i - 1, xi], 0.0)
            r[:, i] = np.where(r[:, i - 1] > 0, r[:, i - 1] * step, 0.0)
        peak[:, i] = np.maximum(peak[:, i - 1], r[:, i])
    with np.errstate(invalid="ignore"):
        c = np.where(r > 0, r / peak, 0.0)  # capped prefix ratio of the branch after X_{1:t}
    h = np.zeros((R, g))
    final = t.copy()
    for j in range(g):
        diff = c[:, j, None] * t[:, j] - d[:, j]
        final[:, j], d_plus = normalize_or(np.maximum(diff, 0.0), t[:, j])
        if j >= 1:
            d_minus = np.maximum(-diff, 0.0).sum(-1)
            hj = np.where(d_minus > 0, d_plus / np.where(d_minus > 0, d_minus, 1.0), 1.0)
            h[:, j - 1] = np.where(j < kk, np.clip(hj, 0.0, 1.0), 0.0)
    rk = r[rows, kk]
    full = rk / peak[rows, kk - 1] if variant == "paper" else rk
    h[rows, kk - 1] = np.minimum(1.0, full)
    final[rows, kk] = t[rows, kk]
    return h, backward_scan_law(h, kk), final


class HSDVerifier(Verifier):
    r"""Hierarchical Speculative Decoding as a whole-round :class:`~spectheory.verifiers.Verifier`.

    Parameters
    ----------
    variant : {"paper", "listing"}
        Algorithm 2 with Eq. 19 (registered as ``"hsd"``, lossless; equal to block
        verification) or the paper's Listing 2 (``"hsd_listing"``, biased). See the module
        docstring.

    The rule: ``tau = max{i <= k : u_accept[:, i-1] < h_i}`` (0 if none; Algorithm 2's
    backward scan with ``eta_i = u_accept[:, i-1]``), the final token from
    ``final_weights[:, tau]`` by inverse CDF with ``u_final`` -- block verification's uniform
    convention, so ``"hsd"`` and ``"block"`` agree draw for draw.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers import get_verifier
    >>> t = np.tile([1/3, 2/3], (1, 3, 1)); d = np.tile([2/3, 1/3], (1, 2, 1))
    >>> get_verifier("hsd").rule(t, d, [[1, 0]], [2], [[0.9, 0.7]], [0.0])          # like block
    (array([1]), array([1]))
    >>> get_verifier("hsd_listing").rule(t, d, [[1, 0]], [2], [[0.9, 0.7]], [0.0])  # r(X_1:2) = 1
    (array([2]), array([0]))
    """

    def __init__(self, variant: str = "paper") -> None:
        self.variant = _check_variant(variant)
        self.name = "hsd" if variant == "paper" else "hsd_listing"
        self.lossless = variant == "paper"

    def _rule(self, t, d, x, kk, eta, u_final):
        R, g = x.shape
        h, _, final = hsd_weights(t, d, x, kk, self.variant)
        fired = eta < h  # h = 0 beyond k
        last = g - np.argmax(fired[:, ::-1], axis=1)
        tau = np.where(fired.any(1), last, 0)
        return tau.astype(np.int64), _categorical(final[np.arange(R), tau], u_final)

    def round_law(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        """Exact law of one round by enumeration (:func:`hsd_round_law` of this variant)."""
        return hsd_round_law(target_fn, draft_fn, vocab_size, gamma, tuple(prefix), self.variant)

    def round_transition(self, chain: ChainLike) -> Callable[[int, int, bool], np.ndarray]:
        weights = lambda t, d, x, k: hsd_weights(t, d, x, k, self.variant)  # noqa: E731
        return lambda n0, k, emit_bonus: block_round_transition(chain, n0, k, emit_bonus, weights)

    def __repr__(self) -> str:
        return f"HSDVerifier(variant={self.variant!r})"


def _peak_index(r: Sequence[Any], t: int) -> int:
    """Definition 4: ``argmax_{1<=i<=t} r(X_{1:i})`` (first on ties) if that maximum exceeds 1, else 0."""
    m = max(range(1, t + 1), key=lambda i: (r[i], -i), default=0)
    return m if m and r[m] > 1 else 0


def _branch(p: Sequence[Any], q: Sequence[Any], r: Sequence[Any], t: int) -> tuple[list[Any], Any, Any]:
    """Eqs. 17, 18, 20 for the branch after ``X_{1:t}`` (the common factor ``q(X_{1:t})`` cancels):
    the capped resampling weights, ``D+`` and ``D-``, with ``c_t = r(X_{1:t}) / r(X_{1:m})`` (Def. 5)."""
    m = _peak_index(r, t)
    c = r[t] / r[m] if m else r[t]
    plus = [max(c * p[t][y] - q[t][y], 0) for y in range(len(p[t]))]
    minus = sum(max(q[t][y] - c * p[t][y], 0) for y in range(len(p[t])))
    return plus, sum(plus), minus


def hsd_round_law(
    target_fn: Callable[[tuple[int, ...]], Sequence[Any]],
    draft_fn: Callable[[tuple[int, ...]], Sequence[Any]],
    vocab_size: int,
    gamma: int,
    prefix: tuple[int, ...] = (),
    variant: str = "paper",
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of one HSD round by literal enumeration (any number type; Fractions exact).

    Loop by loop from Definitions 4-6, Eqs. 16-20 and Algorithm 2 (``variant="listing"``: the
    full-block test of Listing 2), independent of :func:`hsd_weights`. Returns
    ``{emitted tokens: probability}`` (accepted drafts, then the resampled or bonus token), as
    :func:`spectheory.verifiers.block_exact.block_emission_law`.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.hsd import hsd_round_law
    >>> from spectheory.verifiers.round_laws import mean_accepted
    >>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
    >>> [mean_accepted(hsd_round_law(p, q, 2, 2, variant=v)) for v in ("paper", "listing")]
    [Fraction(11, 9), Fraction(4, 3)]
    """
    _check_variant(variant)
    V = check_int(vocab_size, "vocab_size", 1)
    g = check_int(gamma, "gamma", 1)
    out: dict[tuple[int, ...], Any] = {}
    for block in itertools.product(range(V), repeat=g):
        ctx = [tuple(prefix) + block[:i] for i in range(g + 1)]
        p = [list(target_fn(c)) for c in ctx]
        q = [list(draft_fn(c)) for c in ctx[:g]]
        qx: Any = 1
        for i in range(g):
            qx *= q[i][block[i]]
        if qx == 0:
            continue
        r: list[Any] = [1]  # r(X_{1:i}), i = 0..g
        for i in range(g):
            r.append(r[-1] * p[i][block[i]] / q[i][block[i]])

        h = [1] + [min(1, dp / dm) if dm else 1 for dp, dm in (_branch(p, q, r, t)[1:] for t in range(1, g))]
        m = _peak_index(r, g - 1)
        r_star = r[g] / r[m] if variant == "paper" and m else r[g]
        h.append(min(1, r_star))  # h[t] = h_t, t = 0..g (Eq. 19)
        for tau in range(g, -1, -1):  # Algorithm 2: eta_g, eta_{g-1}, ... until one fires
            pt: Any = h[tau] if tau else 1
            for s in range(tau + 1, g + 1):
                pt *= 1 - h[s]
            if not pt:
                continue
            if tau == g:
                law = p[g]
            else:
                plus, dp, _ = _branch(p, q, r, tau)
                law = [v / dp for v in plus] if dp else p[tau]
            for y in range(V):
                if law[y]:
                    key = block[:tau] + (y,)
                    out[key] = out.get(key, 0) + qx * pt * law[y]
    return out


#: The registered instances.
HSD = register_verifier(HSDVerifier("paper"))
HSD_LISTING = register_verifier(HSDVerifier("listing"))
