"""The theory on the real pretrained LLM (``smollm2-135m``, V = 49,152): the lossless check on pooled cells.

The package's two-token lossless check (:func:`spectheory.validation.lossless_check`) builds the
exact law on pooled cells at this vocabulary (:mod:`spectheory.validation.pooled_law`); the real
rule passes (p > 1e-4) and a rule whose correction is drawn from the draft fails (p < 1e-6) at
n = 200 samples, fixed seeds. The draft is the target's first two layers with its final norm and
head (an early exit sharing the target's weights). Skipped without the ``real`` extra.
"""

from __future__ import annotations

import numpy as np
import pytest

from spectheory.decoder import pretrained

pytestmark = pytest.mark.skipif(
    not pretrained.is_available("smollm2-135m"), reason=f"the real extra: {pretrained.INSTALL_HINT}"
)

P_PASS, P_FAIL, N = 1e-4, 1e-6, 200


@pytest.fixture(scope="module")
def pair():
    import torch

    from spectheory.decoder import load_model

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    target = load_model("smollm2-135m")
    prompt = target.tokenizer.encode("Once upon a")
    from spectheory.decoder.real_drafts import make_draft

    yield target, make_draft(target, "smollm2-135m:exit2"), prompt
    torch.set_num_threads(old)


def test_cell_law_at_the_real_vocabulary_is_exact_and_small(pair):
    from spectheory.validation.pooled_law import exact_cell_law

    target, _, prompt = pair
    law = exact_cell_law(target, prompt, 2, mass=5 / N)
    assert law.vocab_size == 49152 and 3 <= law.n_cells <= 2 * N / 5 + 2
    assert law.probs.min() >= 0 and law.probs.sum() == pytest.approx(1.0, abs=1e-9)
    one = exact_cell_law(target, prompt, 1, mass=5 / N)  # the first token's cells: the pair cells summed
    by_first = {int(a): float(law.probs[law.first == a].sum()) for a in one.first if a >= 0}
    for a, p in by_first.items():
        assert p == pytest.approx(float(one.probs[one.first == a][0]), abs=1e-6)


def test_pooled_lossless_check_passes_the_real_rule_and_fails_a_broken_one(pair):
    from spectheory.validation import lossless_check

    target, draft, prompt = pair
    real = lossless_check(target, draft, prompt, N, 1, seed=3, batch_size=N)
    broken = lossless_check(target, draft, prompt, N, 1, seed=3, rule="draft_correction", batch_size=N)
    assert real["pvalue"] > P_PASS, real
    assert broken["pvalue"] < P_FAIL, broken
    assert real["cells"] >= 3 and np.isfinite(real["statistic"])
