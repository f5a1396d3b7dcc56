r"""Gallery: the 2026 field's bug classes, each one mistake away from a correct sampler (p = target, q = draft).

Verifiers (the kit draws the drafts; :func:`~spectheory.testing.check_verifier`), each
:func:`~spectheory.testing.reference_verify` handed the wrong draft law:

* ``point_mass_draft`` -- the draft probabilities are dropped and the drafted token is treated as
  a point mass, ``q = e_x`` (vLLM issue #40149): the acceptance becomes ``p(x)`` and the residual
  ``p`` renormalised without ``x``. That is still lossless, whatever law ``x`` came from
  (:math:`P(y) = q(y) p(y) + \sum_{x \ne y} q(x) p(y) = p(y)`), but accepts
  :math:`\sum_x q(x) p(x) \le \sum_x \min(p(x), q(x))`: the efficiency checks flag it, the law
  checks cannot (``assert_verifier_lossless`` passes it);
* ``markov_bias_one_early`` -- a Markov head's position-dependent bias applied one position
  early: the ratio at position ``j`` uses the draft law of position ``j+1`` (the tokens were
  drawn from position ``j``'s law).

Whole samplers (:func:`~spectheory.testing.check_sampler` with the options listed), built like
:func:`~spectheory.testing.gallery_samplers.make_sampler`:

* ``top_k_drafts_only`` / ``top_p_drafts_only`` -- top-k (top-p) applied to the draft side only:
  drafts and their law are processed, the target's law is not, so the output follows the raw
  target where the user asked for the processed one (tokens outside the top-k appear);
* ``temperature_draft_only`` -- the temperature applied to the draft side only (the target's law
  at temperature 1 where the user asked for 0.5);
* ``factorised_head_other_law`` -- per-position sampling from a factorised head (every position's
  draft drawn from the head's law after the prompt, as parallel heads that all read the prompt's
  state do) with the ratio taken against another law, the draft model's law after the previous
  draft.

:data:`GALLERY_2026` maps a name to ``(object, description, checks of which at least one fails,
reported by, kit options, kit)``; ``simulations/testing_kit_power.py`` measures the samples each
needs, ``tests/testing/test_gallery_2026.py`` checks each is caught and its correct twin passes.

>>> from spectheory.testing import check_verifier
>>> from spectheory.testing.gallery_2026 import GALLERY_2026
>>> verify = GALLERY_2026["point_mass_draft"][0]
>>> check_verifier(verify, n_samples=200, rng=0).failed  # lossless, but wasteful
['acceptance_rate', 'mean_accepted']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .reference import reference_verify
from .toy_models import process_logits

__all__ = ["GALLERY_2026", "point_mass_draft", "markov_bias_one_early", "glue_sampler"]


def point_mass_draft(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Token verification with the draft law replaced by a point mass on each drafted token."""
    x = np.asarray(draft_tokens, dtype=np.int64)
    q = np.zeros_like(np.asarray(draft_probs, dtype=np.float64))
    q[np.arange(x.size), x] = 1.0  # BUG: draft probs dropped (vLLM #40149)
    return reference_verify(target_probs, q, x, rng)


def markov_bias_one_early(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Token verification whose draft law at position ``j`` is position ``j+1``'s (the last one kept)."""
    d = np.asarray(draft_probs, dtype=np.float64)
    early = np.concatenate([d[1:], d[-1:]], axis=0)  # BUG: the next position's bias already applied
    return reference_verify(target_probs, early, draft_tokens, rng)


def _draw(law: np.ndarray, rng: np.random.Generator) -> int:
    cdf = np.cumsum(law)
    return min(int(np.count_nonzero(cdf <= rng.random() * cdf[-1])), law.size - 1)


def glue_sampler(
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    *,
    target_processed: bool = True,
    draft_processed: bool = True,
    factorised_head: bool = False,
    name: str = "correct",
) -> Callable[..., Any]:
    """A whole sampler whose processing of each side is chosen (the defaults: correct).

    ``target_processed=False``: the target's law at temperature 1 without top-k / top-p;
    ``draft_processed=False``: the same for the draft; ``factorised_head=True``: every draft drawn
    from the draft's law after the prompt, the ratio against its law after the previous draft.
    """
    raw = (1.0, None, None)
    tproc = (temperature, top_k, top_p) if target_processed else raw
    dproc = (temperature, top_k, top_p) if draft_processed else raw

    def sampler(target_model, draft_model, prefix, k, rng):
        seq = [int(t) for t in prefix]
        head = process_logits(draft_model(np.array(seq))[-1], *dproc)
        draft_probs, drafts = [], []
        for _ in range(k):
            q = process_logits(draft_model(np.array(seq))[-1], *dproc)
            x = _draw(head if factorised_head else q, rng)
            draft_probs.append(q)  # factorised head: the ratio is taken against the chain's law
            drafts.append(x)
            seq.append(x)
        target_probs = process_logits(target_model(np.array(seq))[-(k + 1) :], *tproc)
        return reference_verify(target_probs, np.array(draft_probs), np.array(drafts, dtype=np.int64), rng)

    sampler.__name__ = f"glue_sampler({name})"
    return sampler


_LAWS = ("first_token_law", "position_laws", "sequence_law", "zero_probability")

#: name -> (verifier or sampler, description, checks of which at least one fails, reported by, options, kit)
GALLERY_2026: dict[str, tuple[Callable[..., Any], str, tuple[str, ...], str, dict[str, Any], str]] = {
    "point_mass_draft": (
        point_mass_draft,
        "point-mass proposals: draft probs dropped, the drafted token taken as a one-hot draft law "
        "(lossless, accepts less)",
        ("acceptance_rate", "mean_accepted"),
        "vllm-project/vllm issue #40149",
        {},
        "check_verifier",
    ),
    "markov_bias_one_early": (
        markov_bias_one_early,
        "Markov-head bias applied one position early (the ratio at j uses position j+1's draft law)",
        _LAWS,
        "",
        {},
        "check_verifier",
    ),
    "top_k_drafts_only": (
        glue_sampler(top_k=2, target_processed=False, name="top-k drafts only"),
        "top-k applied to the drafts only (the target's law not truncated)",
        _LAWS,
        "",
        {"top_k": 2},
        "check_sampler",
    ),
    "top_p_drafts_only": (
        glue_sampler(top_p=0.7, target_processed=False, name="top-p drafts only"),
        "top-p applied to the drafts only (the target's law not truncated)",
        _LAWS,
        "",
        {"top_p": 0.7},
        "check_sampler",
    ),
    "temperature_draft_only": (
        glue_sampler(temperature=0.5, target_processed=False, name="temperature on the draft only"),
        "temperature applied to one side (the draft's), the target's law at temperature 1",
        _LAWS,
        "",
        {"temperature": 0.5},
        "check_sampler",
    ),
    "factorised_head_other_law": (
        glue_sampler(factorised_head=True, name="factorised head, ratio against the chain law"),
        "per-position drafts from a factorised head, the ratio taken against the draft's chain law",
        _LAWS,
        "",
        {},
        "check_sampler",
    ),
}
