r"""Field bugs: verifier mistakes that shipped in real engines, with the report that found each.

Each entry of :data:`FIELD_BUGS` is ``(verify, description, checks expected to fail,
reported by, check_verifier options)``; the whole-sampler bugs (drafting glue) are in
:mod:`spectheory.testing.gallery_samplers`. ``simulations/testing_kit_power.py`` measures
the samples the kit needs to flag each one.

* ``renormalise_with_softmax`` -- the residual ``max(p - q, 0)`` "renormalised" with a
  softmax instead of a division by its sum (HuggingFace transformers, fixed by PR #28508);
* ``leq_float32_torch`` -- accept when ``u <= p/q`` with float32 ``torch.rand_like``
  uniforms, as HuggingFace's ``_speculative_sampling`` does: ``torch.rand`` returns exactly
  0 once in :math:`2^{24}` draws, and then a draft of target probability 0 is accepted
  (reported in this project's issue 10; found by the forced uniforms through torch);
* ``bonus_after_stop`` -- an accepted stop (EOS) token in the middle of the drafts does not
  end the round: the later drafts and the bonus token are emitted after it (HuggingFace
  transformers issue #47912; also koboldcpp issue #1276). Checked with ``stop_token=0``.

p = target, q = draft.

>>> from spectheory.testing.gallery_field import FIELD_BUGS
>>> sorted(FIELD_BUGS)
['bonus_after_stop', 'leq_float32_torch', 'renormalise_with_softmax']
"""

from __future__ import annotations

import numpy as np

from .gallery import _accepted, _emit, _excess, _inv_cdf

__all__ = ["FIELD_BUGS", "renormalise_with_softmax", "leq_float32_torch", "bonus_after_stop", "STOP_TOKEN"]

STOP_TOKEN = 0


def renormalise_with_softmax(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Residual renormalised with ``softmax(max(p - q, 0))`` instead of dividing by its sum."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    n = _accepted(t, d, x, rng.random(k))
    if n == k:
        return _emit(x, n, _inv_cdf(t[k], rng.random()))
    e = np.maximum(t[n] - d[n], 0.0)
    law = np.exp(e) / np.exp(e).sum()  # BUG: softmax of probabilities
    return _emit(x, n, _inv_cdf(law, rng.random()))


def leq_float32_torch(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """HuggingFace's acceptance test: ``torch.rand_like(ratio) <= p/q`` in float32 (needs torch)."""
    import torch

    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    j = np.arange(k)
    ratio = torch.from_numpy(t[j, x] / d[j, x]).float()
    ok = (torch.rand_like(ratio) <= ratio).numpy()  # BUG: <= accepts p = 0 when u = 0
    n = k if ok.all() else int(np.argmin(ok))
    law = t[k] if n == k else _excess(t[n], d[n])
    y = int(torch.multinomial(torch.from_numpy(law), 1))
    return _emit(x, n, y)


def bonus_after_stop(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Standard verification that ignores an accepted stop token (keeps going, emits the bonus)."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    n = _accepted(t, d, x, rng.random(k))  # BUG: no stop at an accepted STOP_TOKEN
    y = _inv_cdf(t[k] if n == k else _excess(t[n], d[n]), rng.random())
    return _emit(x, n, y)


def stop_aware(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """The correct version of :func:`bonus_after_stop`: an accepted stop token ends the round."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    n = _accepted(t, d, x, rng.random(k))
    stops = np.flatnonzero(np.asarray(x[:n]) == STOP_TOKEN)
    if stops.size:
        return np.asarray(x[: stops[0] + 1], dtype=np.int64)
    y = _inv_cdf(t[k] if n == k else _excess(t[n], d[n]), rng.random())
    return _emit(x, n, y)


#: name -> (verify, description, checks that must fail, reported by, check_verifier options)
FIELD_BUGS = {
    "renormalise_with_softmax": (
        renormalise_with_softmax,
        "residual renormalised with softmax",
        ("first_token_law",),
        "huggingface/transformers PR #28508",
        {},
    ),
    "leq_float32_torch": (
        leq_float32_torch,
        "`<=` with float32 torch uniforms (u = 0 accepts p = 0)",
        ("forced_uniforms",),
        "spectheory issue 10 (HuggingFace _speculative_sampling)",
        {},
    ),
    "bonus_after_stop": (
        bonus_after_stop,
        "tokens emitted after an accepted stop token",
        ("output_format",),
        "huggingface/transformers issue #47912",
        {"stop_token": STOP_TOKEN},
    ),
}
