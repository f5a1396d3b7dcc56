r"""A Token-Level Intersection (TLI) whole sampler for :func:`spectheory.testing.check_sampler`.

TLI (Timor et al., ICML 2025, arXiv 2502.05202, as shipped in Hugging Face transformers'
``AssistantToTargetTranslator``; ``docs/vocabularies.md``) drafts with a model of another
vocabulary: draft tokens outside the target's are suppressed, the draft's logits are mapped
into the target vocabulary (:func:`spectheory.decoder.vocab.tli_logits`, the real decoder's
mapping), and token verification runs on ``(p, q_I)``, ``q_I`` the draft restricted to the
shared tokens and renormalised. :func:`tli_sampler` reads the kit's draft model as a draft
over its own vocabulary whose last ``n_draft_only`` tokens are draft-only (merged tokens, say):
they are never drafted, and the target tokens with the same ids have no draft token
(``q_I = 0`` there). The context is fed to the draft with the same ids. Where the draft puts
no mass on the shared tokens TLI cannot draft: the round then drafts nothing and emits one
target token (lossless).

``bug="raw_q"`` drafts from ``q_I`` but hands the verifier the draft's raw probabilities
``q_d`` of the drafted tokens (not renormalised): it accepts ``min(1, p/q_d) >= min(1, p/q_I)``,
too often, and is biased; the kit catches it.

Needs torch (the mapping is the decoder's).

>>> from spectheory.testing import check_sampler
>>> from spectheory.testing.vocab_samplers import tli_sampler
>>> check_sampler(tli_sampler(), n_samples=300, gammas=(2,)).passed
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._guards import check_int
from .reference import reference_verify
from .whole import process_logits

__all__ = ["tli_sampler"]

_BUGS = (None, "raw_q")


def tli_sampler(
    n_draft_only: int = 1, temperature: float = 1.0, *, bug: str | None = None
) -> Callable[..., Any]:
    """A whole TLI sampler: the kit's draft model read as a draft with ``n_draft_only`` draft-only tokens.

    Parameters
    ----------
    n_draft_only : int >= 0
        The kit draft's last ``n_draft_only`` token ids are draft-only (``to_target = -1``).
    temperature : float > 0
        Applied to both models (the kit's ``check_sampler(temperature=...)`` must match).
    bug : {None, "raw_q"}
        ``"raw_q"``: the verifier gets the unnormalised draft probabilities (module docstring).

    Returns
    -------
    callable
        ``sampler(target_model, draft_model, prefix, k, rng) -> new tokens``.
    """
    import torch

    from ..decoder.vocab import tli_logits

    n_only = check_int(n_draft_only, "n_draft_only", 0)
    if bug not in _BUGS:
        raise ValueError(f"bug: expected one of {_BUGS}, got {bug!r}")
    if not temperature > 0:
        raise ValueError(f"temperature: expected > 0, got {temperature!r}")

    def sampler(target_model, draft_model, prefix, k, rng):
        seq = [int(t) for t in prefix]
        draft_probs, drafts = [], []
        for _ in range(k):
            z = np.asarray(draft_model(np.array(seq))[-1], dtype=np.float64)
            V = z.size
            if n_only >= V:
                raise ValueError(f"n_draft_only: expected < the vocabulary size {V}, got {n_only}")
            to_target = [v if v < V - n_only else -1 for v in range(V)]
            zi = tli_logits(torch.from_numpy(z), to_target, V).numpy()
            if not np.isfinite(zi).any():  # no draft mass on the shared tokens: stop drafting
                break
            q = process_logits(zi, temperature)
            cdf = np.cumsum(q)
            x = min(int(np.count_nonzero(cdf <= rng.random() * cdf[-1])), V - 1)
            if bug == "raw_q":  # BUG: the raw draft law (over V_d), not renormalised on the shared tokens
                q = np.where(np.isfinite(zi), process_logits(z, temperature), 0.0)
            draft_probs.append(q)
            drafts.append(x)
            seq.append(x)
        n = len(drafts)
        target_probs = process_logits(target_model(np.array(seq))[-(n + 1) :], temperature)
        if n == 0:
            p = target_probs[0]
            return np.array([min(int(np.count_nonzero(np.cumsum(p) <= rng.random())), p.size - 1)])
        return reference_verify(target_probs, np.array(draft_probs), np.array(drafts, dtype=np.int64), rng)

    sampler.__name__ = f"tli_sampler({bug or 'correct'})"
    return sampler
