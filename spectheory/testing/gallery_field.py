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

from .gallery import _accept, _emit, _token, _torch_draw, _torch_leq, _variant

__all__ = ["FIELD_BUGS", "renormalise_with_softmax", "leq_float32_torch", "bonus_after_stop", "STOP_TOKEN"]

STOP_TOKEN = 0


def _softmax_excess(tn, dn):
    e = np.maximum(tn - dn, 0.0)
    return np.exp(e) / np.exp(e).sum()  # BUG: softmax of probabilities


renormalise_with_softmax = _variant(
    "renormalise_with_softmax",
    "Residual renormalised with ``softmax(max(p - q, 0))`` instead of dividing by its sum.",
    residual=_softmax_excess,
)


def _rand_like(ratio):
    import torch

    return torch.rand_like(ratio)


leq_float32_torch = _variant(
    "leq_float32_torch",
    "HuggingFace's acceptance test: ``torch.rand_like(ratio) <= p/q`` in float32 (needs torch).",
    accept=_torch_leq(_rand_like),  # BUG: <= accepts p = 0 when u = 0
    draw=_torch_draw,
)

bonus_after_stop = _variant(
    "bonus_after_stop",
    "Standard verification that ignores an accepted stop token (keeps going, emits the bonus).",
)  # BUG: no stop at an accepted STOP_TOKEN


def stop_aware(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """The correct version of :func:`bonus_after_stop`: an accepted stop token ends the round."""
    n = _accept(target_probs, draft_probs, draft_tokens, rng)
    stops = np.flatnonzero(np.asarray(draft_tokens[:n]) == STOP_TOKEN)
    if stops.size:
        return np.asarray(draft_tokens[: stops[0] + 1], dtype=np.int64)
    return _emit(draft_tokens, n, _token(target_probs, draft_probs, n, rng))


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
