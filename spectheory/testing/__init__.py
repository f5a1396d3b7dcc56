"""Conformance kit for speculative samplers: does yours preserve the target law, and accept as often as it should?

Wrap your sampler as ``verify(target_probs [k+1, V], draft_probs [k, V], draft_tokens [k], rng)
-> emitted tokens`` (see :mod:`spectheory.testing.reference`) and run::

    from spectheory.testing import assert_verifier_lossless
    assert_verifier_lossless(my_verify)          # in a pytest test

* :func:`check_verifier` / :func:`assert_verifier_lossless` (law only) /
  :func:`assert_verifier_optimal` (law and efficiency) -- the kit (:mod:`.kit`); protocols
  with the bonus off or a stop token; torch's random draws routed through the kit
  (:mod:`.torch_random`), Python's ``random`` routed and the global states watched
  (:mod:`.randomness`); block verification as the optimum no lossless rule exceeds;
* :func:`check_sampler` -- whole samplers that draft too, handed the two models (:mod:`.whole`;
  HuggingFace-style model stubs and several rounds a call: :mod:`.hf_models`);
* :func:`reference_verify` -- a correct verifier (standard speculative sampling);
* :mod:`spectheory.testing.adapters` -- HuggingFace's ``_speculative_sampling`` and vLLM-style
  ``[B, k, V]`` samplers; :func:`as_batched`, :func:`from_round_verifier`,
  :func:`spectheory.testing.torch_adapter.from_torch_sampler` -- other batched samplers;
* :mod:`spectheory.testing.strategies` -- hypothesis strategies (needs ``hypothesis``);
* :mod:`spectheory.testing.gallery`, :mod:`.gallery_field`, :mod:`.gallery_samplers`,
  :mod:`.gallery_engines` -- deliberately buggy verifiers and samplers the kit catches (field
  bugs with their reports; bug classes met running the kit on engines).
* :func:`check_tree_verifier` / :func:`assert_tree_verifier_lossless` /
  :func:`assert_tree_verifier_optimal` -- tree verifiers (a draft tree in, accepted path and
  next token out), judged against the tree optimum (the multi-draft optimum on depth-1 trees,
  block verification on paths, the lossless tree optimum of :mod:`spectheory.trees.tree_lp`
  otherwise), on fixed or random instances, with :data:`TREE_GALLERY` of tree bugs
  (:mod:`.trees`) and verifiers following a plan on one instance (:mod:`.tree_plans`).
* :func:`check_ragged_batch` -- batched samplers over ragged, mixed greedy/sampled batches
  (rows of different draft lengths, vocabularies and temperatures, padding rows), with a verdict
  per row (:mod:`.ragged`).
* :func:`check_round` -- the kit on a round object, the one ``st.simulate`` and
  :func:`spectheory.decoder.generate` take (:mod:`.rounds`).
* :func:`parametrize_with_checks` -- a pytest decorator running, on rules and rounds, the
  checks of every engine each declares it supports: exact vs Monte Carlo, exact vs a Fraction
  enumeration, the decoder's law, the kit (:mod:`.checks_by_tags`, :mod:`.engine_checks`).

>>> from spectheory.testing import check_verifier, reference_verify
>>> check_verifier(reference_verify, n_samples=300).passed
True
"""

from .checks_by_tags import parametrize_with_checks
from .instances import FAMILIES, Instance, make_instance
from .kit import (
    CHECKS,
    CheckResult,
    Report,
    assert_verifier_lossless,
    assert_verifier_optimal,
    check_verifier,
)
from .ragged import check_ragged_batch
from .ragged_format import RaggedRow, reference_ragged_sampler
from .reference import as_batched, from_verifier, reference_verify, reference_verify_batch
from .rounds import check_round
from .trees import (
    TREE_GALLERY,
    assert_tree_verifier_lossless,
    assert_tree_verifier_optimal,
    check_tree_verifier,
    reference_tree_verify,
)
from .whole import assert_sampler_lossless, check_sampler

__all__ = [
    "check_round",
    "parametrize_with_checks",
    "check_ragged_batch",
    "RaggedRow",
    "reference_ragged_sampler",
    "check_sampler",
    "assert_sampler_lossless",
    "check_verifier",
    "assert_verifier_lossless",
    "assert_verifier_optimal",
    "Report",
    "CheckResult",
    "CHECKS",
    "reference_verify",
    "reference_verify_batch",
    "as_batched",
    "from_verifier",
    "Instance",
    "FAMILIES",
    "make_instance",
    "check_tree_verifier",
    "assert_tree_verifier_lossless",
    "assert_tree_verifier_optimal",
    "reference_tree_verify",
    "TREE_GALLERY",
]


def __getattr__(name):
    if name == "from_torch_sampler":  # torch is optional: imported on first use
        from .torch_adapter import from_torch_sampler

        return from_torch_sampler
    if name in (
        "strategies",
        "gallery",
        "gallery_samplers",
        "gallery_engines",
        "randomness",
        "torch_adapter",
        "adapters",
        "torch_random",
        "whole",
        "tree_gallery",
        "random_laws",
        "hf_models",
        "toy_models",
    ):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
