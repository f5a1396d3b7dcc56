"""The 2026 field's bug classes (spectheory.testing.gallery_2026): each caught, its correct twin passes."""

import numpy as np
import pytest

from spectheory.testing import assert_verifier_lossless, check_sampler, check_verifier
from spectheory.testing.gallery_2026 import GALLERY_2026, glue_sampler, point_mass_draft

KITS = {"check_verifier": check_verifier, "check_sampler": check_sampler}


FAST = ("point_mass_draft", "markov_bias_one_early", "top_k_drafts_only")


@pytest.mark.parametrize(
    "name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in sorted(GALLERY_2026)]
)
def test_caught(name):
    obj, _, must_fail, _, opts, kit = GALLERY_2026[name]
    report = KITS[kit](obj, n_samples=200, rng=7, **opts)
    assert set(report.failed) & set(must_fail), str(report)


@pytest.mark.parametrize(
    "opts",
    [
        {"top_k": 2},
        *(pytest.param(o, marks=pytest.mark.slow) for o in ({"top_p": 0.7}, {"temperature": 0.5}, {})),
    ],
)
def test_correct_twin_passes(opts):
    assert check_sampler(glue_sampler(**opts), n_samples=200, rng=7, **opts).passed


def test_point_mass_is_lossless_but_wasteful():
    """q = e_x: P(y) = q(y) p(y) + sum_{x != y} q(x) p(y) = p(y), acceptance sum_x q(x) p(x)."""
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6])
    rng = np.random.default_rng(0)
    n = 8_000
    x = rng.choice(3, size=n, p=q)
    out = [point_mass_draft(np.stack([p, p]), q[None], np.array([xi]), rng) for xi in x]
    first = np.bincount([o[0] for o in out], minlength=3) / n
    accepted = np.mean([len(o) == 2 for o in out])
    assert np.all(np.abs(first - p) < 5 * np.sqrt(p * (1 - p) / n))
    assert abs(accepted - q @ p) < 5 * np.sqrt(0.25 / n)  # 0.28 < sum min(p, q) = 0.6
    assert_verifier_lossless(point_mass_draft, n_samples=300, rng=7)
