r"""Whole samplers (drafting included) for :func:`spectheory.testing.check_sampler`: a correct one and field bugs.

:func:`make_sampler` builds a sampler of the interface
``sampler(target_model, draft_model, prefix, k, rng) -> new tokens``: it drafts ``k`` tokens
from the draft model's processed law (temperature, top-k, top-p by
:func:`~spectheory.testing.whole.process_logits`), calls the target once on the prompt and
the drafts, and verifies with :func:`~spectheory.testing.reference_verify` (p = target,
q = draft). ``bug`` switches in one glue mistake reported in the field:

* ``"greedy_draft_soft_q"`` -- drafts by argmax but hands the verifier the soft draft law
  (HuggingFace transformers issue #32867: output law [0.75, 0.25] instead of [0.6, 0.4]);
* ``"processed_vs_raw_q"`` -- drafts from the processed logits but hands over the raw
  (temperature only, no top-k / top-p) draft law (HuggingFace transformers issue #47932);
* ``"temperature_one_side"`` -- drafts after temperature but records the draft law before it
  (met running the kit on engines, spectheory issue 23: missed at 50 and 200 samples per
  instance, caught at 1,000; its per-instance TV is at most about 0.14, see the effect sizes in
  ``docs/testing_kit.md``). Not in :data:`SAMPLER_BUGS` (the power table's run stays short).

``make_sampler(greedy=True)`` is the correct greedy variant (its ``q`` is the one-hot law it
drafted from): lossless, only slower.

:func:`hsd_sampler` is Hierarchical Speculative Decoding as a whole sampler
(:func:`~spectheory.verifiers.hsd_naive_round.play_naive_hsd_round`): by default *naive* HSD
as the authors' code runs it, which calls the target again for every position it resamples
(``1 + max(0, k - 1 - tau)`` calls a round; the multi-call protocol of
:func:`~spectheory.testing.check_sampler` counts them) and is biased (``docs/sequence_rules.md``,
Theorems 4-5); ``forward=False`` is their single-call "HSD (clever)", the listing (biased,
Theorem 2), and ``hsd_sampler("hsd", forward=False)`` the paper's equations (block
verification, lossless). :data:`MULTI_CALL_SAMPLERS` is the power table's row for it.

>>> from spectheory.testing import check_sampler
>>> from spectheory.testing.gallery_samplers import make_sampler
>>> check_sampler(make_sampler(bug="greedy_draft_soft_q"), n_samples=200).passed
False
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..verifiers.base import get_verifier
from ..verifiers.hsd_naive_round import play_naive_hsd_round
from .instances import iid_instance
from .reference import reference_verify
from .whole import process_logits

__all__ = ["make_sampler", "SAMPLER_BUGS", "hsd_sampler", "MULTI_CALL_SAMPLERS", "SUN_K3"]

BUGS = (None, "greedy_draft_soft_q", "processed_vs_raw_q", "temperature_one_side")


def make_sampler(
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    *,
    bug: str | None = None,
    greedy: bool = False,
) -> Callable[..., Any]:
    """A whole speculative sampler with the given processing (and optionally one field bug)."""
    if bug not in BUGS:
        raise ValueError(f"bug: expected one of {BUGS}, got {bug!r}")

    def sampler(target_model, draft_model, prefix, k, rng):
        seq = [int(t) for t in prefix]
        draft_probs, drafts = [], []
        for _ in range(k):
            logits = draft_model(np.array(seq))[-1]
            q = process_logits(logits, temperature, top_k, top_p)
            if greedy or bug == "greedy_draft_soft_q":
                x = int(np.argmax(q))
                if greedy:
                    q = np.eye(q.size)[x]  # the law it drafted from
            else:
                cdf = np.cumsum(q)
                x = min(int(np.count_nonzero(cdf <= rng.random() * cdf[-1])), q.size - 1)
            if bug == "processed_vs_raw_q":
                q = process_logits(logits, temperature)  # BUG: raw (unprocessed) law handed over
            if bug == "temperature_one_side":
                q = process_logits(logits, 1.0, top_k, top_p)  # BUG: law recorded before temperature
            draft_probs.append(q)
            drafts.append(x)
            seq.append(x)
        target_probs = process_logits(target_model(np.array(seq))[-(k + 1) :], temperature, top_k, top_p)
        return reference_verify(target_probs, np.array(draft_probs), np.array(drafts, dtype=np.int64), rng)

    sampler.__name__ = f"sampler({bug or ('greedy' if greedy else 'correct')})"
    return sampler


#: name -> (sampler, description, checks of which at least one fails, reported by, check_sampler options)
SAMPLER_BUGS = {
    "greedy_draft_soft_q": (
        make_sampler(bug="greedy_draft_soft_q"),
        "greedy (argmax) draft verified with the soft draft law",
        ("first_token_law",),
        "huggingface/transformers issue #32867",
        {},
    ),
    "processed_vs_raw_q": (
        make_sampler(top_k=2, bug="processed_vs_raw_q"),
        "drafts from top-k-processed logits, raw draft law handed to the verifier",
        ("first_token_law", "position_laws", "sequence_law"),
        "huggingface/transformers issue #47932",
        {"top_k": 2},
    ),
}


def hsd_sampler(
    first_pass: str = "hsd_listing",
    *,
    forward: bool = True,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Callable[..., Any]:
    """HSD as a whole sampler: the ``first_pass`` rule on ``k`` drafts, then (``forward``) naive HSD's passes.

    Each target call is one call of ``target_model`` on the prompt and the round's tokens; the
    laws are the processed ones (``temperature``, ``top_k``, ``top_p``) of both models.

    Examples
    --------
    >>> from spectheory.testing import check_sampler
    >>> from spectheory.testing.gallery_samplers import SUN_K3, hsd_sampler
    >>> report = check_sampler(hsd_sampler(), instances=[SUN_K3], n_samples=3000, rng=0)
    >>> "sequence_law" in report.failed, "target_calls" in report.notes  # biased; several calls a round
    (True, True)
    """
    rule = get_verifier(first_pass)

    def sampler(target_model, draft_model, prefix, k, rng):
        ctx = [int(t) for t in prefix]

        def laws(model):
            return lambda toks: process_logits(
                model(np.array(ctx + list(toks), dtype=np.int64))[len(ctx) - 1 :], temperature, top_k, top_p
            )

        r = play_naive_hsd_round(
            laws(target_model), laws(draft_model), k, rng.random, first_pass=rule, forward=forward
        )
        return np.array(r.emitted, dtype=np.int64)

    sampler.__name__ = f"hsd_sampler({first_pass}{', naive' if forward else ''})"
    return sampler


#: Sun et al.'s binary example at ``k = 3``: naive HSD's smallest biased binary instance (TV 2/27
#: of the first four tokens, ``docs/sequence_rules.md``, Theorem 4).
SUN_K3 = iid_instance([1 / 3, 2 / 3], [2 / 3, 1 / 3], 3, name="Sun et al. binary k=3")

#: name -> (sampler, description, checks of which at least one fails, reported by, check_sampler
#: options): samplers that call the target more than once a round, searched on the engine grid.
MULTI_CALL_SAMPLERS = {
    "naive_hsd": (
        hsd_sampler(),
        "naive HSD (Zhou et al., ICLR 2026, the authors' loop; a target call per resampled position) "
        "on Sun et al.'s binary example, gamma = 3 (TV 2/27)",
        ("sequence_law", "position_laws"),
        "",
        {"instances": [SUN_K3]},
    ),
}
