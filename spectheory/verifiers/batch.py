r"""Batch speculative decoding: M draft sequences per round (Yin et al. 2024, Theorem 3).

Notation: p = target, q = draft. The rule (Yin et al. 2024, arXiv 2411.00841, batch
algorithm; the construction below is the one REFERENCES.md marks "derived", proved here)::

    at a round start (state s, k = min(gamma, T - n0) tokens to draft):
        draw M draft sequences i.i.d. from the draft, first tokens x_1..x_M ~ q
        r_1 = p
        for m = 1..M:                       # recursive rejection over the first tokens
            accept x_m with probability min(1, r_m(x_m) / q(x_m))
            if accepted: emit x_m, continue along sequence m with plain token checks
                         (accept with min(1, p/q), residual norm(max(p - q, 0))) ; stop
            r_{m+1} = norm(max(r_m - q, 0))
        if all M rejected: emit y ~ r_{M+1}, count one rejection, end the round

**Scale form of the residuals.** By induction :math:`r_m = (p - c_m q)_+ / Z_m` with
:math:`c_1 = 0`, :math:`Z_m = \sum_x (p - c_m q)_+`, :math:`c_{m+1} = c_m + Z_m`: where
:math:`p > c_m q`, :math:`r_m - q = (p - (c_m + Z_m) q)/Z_m`, elsewhere
:math:`r_m - q = -q \le 0`. Hence :math:`\mathrm{TV}(q, r_m) = \sum (r_m - q)_+ =
Z_{m+1}/Z_m` and

.. math:: P(\text{all } M \text{ rejected}) = \prod_{m=1}^M \mathrm{TV}(q, r_m)
          = \prod_{m=1}^M \Big(1 - \sum_x \min(r_m, q)\Big) = Z_{M+1},

a telescoping product (:math:`Z_1 = 1`). Since :math:`\min(r_m, q) + \mathrm{TV}(q, r_m)
r_{m+1} = r_m`, the first token's law is :math:`r_1 = p` (**unbiased**), and the first
token is accepted with mass :math:`\min(p, c_{M+1} q)` and rejected with mass
:math:`(p - c_{M+1} q)_+`: one batch step acts like a standard step whose draft is
scaled by :math:`c_{M+1} \ge 1`. The rest of the accepted sequence is draft-distributed
given its first token (the selection used only first tokens), so later tokens are plain
token checks and prefixes stay target-distributed.

**Expected rejections.** With ``bonus=False`` every position is a check; it rejects with
:math:`\mathrm{TV}_n(s)` unless it starts a round, where it rejects with :math:`Z_{M+1,n}(s)
\le \mathrm{TV}_n(s)` (:math:`Z_2 = \mathrm{TV}`, :math:`Z` decreasing). So

.. math:: E[\text{rejections}] = \underbrace{\sum_n E[\mathrm{TV}_n]}_{\text{Theorem 1}}
   - \underbrace{\sum_n \sum_s P(\text{round starts at } n, s)\,(\mathrm{TV}_n(s) - Z_{M+1,n}(s))}_{\text{batch improvement} \;\ge 0}.

**Limit** :math:`M \to \infty`: :math:`c_m \uparrow` and :math:`Z_m \downarrow Z_\infty =
p(\{x: q(x) = 0\})`, the target mass outside the draft's support (if that mass is
positive, :math:`c_m \ge (m - 1) Z_\infty \to \infty`; otherwise :math:`Z_m \to 0`).
Round starts keep that rejection and later positions keep their TV: rejections do not
vanish.

The code is split into :mod:`.batch_step` (one position), :mod:`.batch_chain` (chains)
and :mod:`.batch_closed_form`; this module gathers their names.
"""
from __future__ import annotations

from .batch_chain import BatchRejections, batch_expected_rejections, holey_chain, simulate_batch
from .batch_closed_form import (bernoulli_batch_rejection, iid_batch_expected_rejections,
                                uniform_batch_rejection, uniform_instance)
from .batch_step import (BatchStep, batch_first_token, batch_first_token_masses, batch_limit_rejection,
                         batch_rejection_probability, batch_residuals, batch_scales, batch_verify_first,
                         sample_batch_first_token)

__all__ = [
    "batch_scales", "batch_residuals", "BatchStep", "batch_first_token", "batch_rejection_probability",
    "batch_first_token_masses", "batch_limit_rejection", "bernoulli_batch_rejection",
    "uniform_batch_rejection", "uniform_instance", "iid_batch_expected_rejections", "BatchRejections",
    "batch_expected_rejections", "batch_verify_first", "sample_batch_first_token", "simulate_batch",
    "holey_chain",
]
