"""Verification rules: the :class:`Verifier` protocol and registry (:mod:`.base`), and one module
per rule family. Fronts, bounds and closed forms that are not rules live in
:mod:`spectheory.analysis`.

- :mod:`.base`        the Verifier protocol, :func:`get_verifier`, :func:`register_verifier`
- :mod:`.token`       standard token verification (``"token"``)
- :mod:`.children`    child policies of draft trees (:class:`IID`, :class:`WithoutReplacement`,
  :class:`TopK`)
- :mod:`.tree_base`, :mod:`.tree_rules`  tree verifiers (recursive rejection, traversal;
  ``"tree_rrs"``, ``"tree_rrs_wo"``, ``"tree_topk"``, ``"traversal"``, ``"traversal_iid"``)
- :mod:`.rejection`   general rejection-based verifiers and optimality (Yin et al. 2024, Thms 1-2)
- :mod:`.batch_step`  batch speculative decoding with M draft sequences, one position
  (first-token construction, consistent with Yin et al. 2024, Theorem 3)
- :mod:`.multidraft`  k candidates at one position: recursive rejection (with/without replacement)
- :mod:`.kseq`        K-SEQ (SpecTr)
- :mod:`.optimal_coupling`  the verifier attaining the optimal multi-draft acceptance (transport LP)
- :mod:`.spechub`     SpecHub (Sun et al. 2024): two drafts around the hub ``argmax q``, exact plan;
  :mod:`.spechub_sampling` its sampler (the authors' drafting and staged verifier)
- :mod:`.block`       block verification (Sun et al.; ``"block"``)
- :mod:`.hsd`         Hierarchical Speculative Decoding (``"hsd"``, ``"hsd_listing"``);
  :mod:`.hsd_naive` its naive form, several target calls per round, and
  :mod:`.hsd_naive_chain` that form as a whole-round Verifier on chains (``"hsd_naive"``)
- :mod:`.proposal`    proposal modes engines run (``"point_mass"``, ``"sample_match"``,
  ``"argmax_onehot"``, ``"argmax_soft"``)
- :mod:`.biased`      biased (lossy) acceptance rules
- :mod:`.torch_forms` torch forms of the token rule for the decoder (needs torch; not imported here)
"""

from .base import Verifier, check_round_arrays, get_verifier, list_verifiers, register_verifier
from .batch_step import (
    BatchStep,
    batch_first_token,
    batch_first_token_masses,
    batch_limit_rejection,
    batch_rejection_probability,
    batch_residuals,
    batch_scales,
    batch_verify_first,
    sample_batch_first_token,
)
from .biased import (
    BiasedAcceptance,
    BiasedStep,
    additive_acceptance,
    biased_rule,
    biased_step,
    lenient_acceptance,
    over_accepts,
    ratio_acceptance,
    sample_biased_step,
    typical_acceptance,
)
from .block import BLOCK, BlockVerifier, block_weights
from .block_exact import block_emission_law, block_round_transition, round_accepted_means
from .children import (
    CHILD_POLICIES,
    IID,
    ChildPolicy,
    Greedy,
    TopK,
    WithoutReplacement,
    get_child_policy,
    list_child_policies,
    register_child_policy,
)
from .hsd import HSD, HSD_LISTING, HSDVerifier, hsd_round_law, hsd_weights
from .hsd_naive_chain import HSD_NAIVE, NaiveHSDVerifier
from .kseq import (
    kseq_acceptance,
    kseq_beta,
    kseq_output_law,
    kseq_residual,
    kseq_rho,
    kseq_rule,
    kseq_verify,
)
from .multidraft import (
    candidates_from_uniforms,
    rrs_acceptance,
    rrs_output_law,
    rrs_residuals,
    rrs_rule,
    rrs_verify,
    sample_candidates,
)
from .optimal_coupling import (
    OptimalCoupling,
    draft_tuple_law,
    optimal_coupling_lp,
    optimal_rule,
    optimal_verify,
)
from .proposal import (
    ARGMAX_ONEHOT,
    ARGMAX_SOFT,
    POINT_MASS,
    SAMPLE_MATCH,
    ArgmaxDraftingVerifier,
    PointMassVerifier,
    SampleMatchVerifier,
)
from .rejection import (
    RejectionRule,
    RejectionStep,
    is_unbiased,
    optimal_rejection_law,
    rejection_step,
    rejection_verify,
    rule_expected_rejections,
    sample_rejection_step,
    scaled_acceptance,
    scaled_rule,
    standard_acceptance,
    standard_rule,
    unbiased_rejection_law,
)
from .token import TOKEN, TokenVerifier
from .tree_base import TreeVerifier, check_realisation
from .tree_rules import (
    TRAVERSAL,
    TRAVERSAL_IID,
    TREE_RRS,
    TREE_RRS_WO,
    TREE_TOPK,
    RecursiveRejectionTree,
    TraversalTree,
)

__all__ = [
    # the protocol and the registry
    "Verifier",
    "register_verifier",
    "get_verifier",
    "list_verifiers",
    "check_round_arrays",
    # token and block verification
    "TokenVerifier",
    "TOKEN",
    "BlockVerifier",
    "BLOCK",
    "block_weights",
    "block_round_transition",
    "block_emission_law",
    "round_accepted_means",
    # sequence-level rules (Hierarchical Speculative Decoding)
    "HSDVerifier",
    "HSD",
    "HSD_LISTING",
    "hsd_weights",
    "hsd_round_law",
    "NaiveHSDVerifier",
    "HSD_NAIVE",
    # proposal modes (point-mass, sample-and-match, argmax drafting)
    "PointMassVerifier",
    "SampleMatchVerifier",
    "ArgmaxDraftingVerifier",
    "POINT_MASS",
    "SAMPLE_MATCH",
    "ARGMAX_ONEHOT",
    "ARGMAX_SOFT",
    # tree verifiers and child policies
    "TreeVerifier",
    "RecursiveRejectionTree",
    "TraversalTree",
    "TREE_RRS",
    "TREE_RRS_WO",
    "TREE_TOPK",
    "TRAVERSAL",
    "TRAVERSAL_IID",
    "check_realisation",
    "ChildPolicy",
    "IID",
    "WithoutReplacement",
    "TopK",
    "Greedy",
    "CHILD_POLICIES",
    "get_child_policy",
    "register_child_policy",
    "list_child_policies",
    # rejection-based rules
    "RejectionRule",
    "RejectionStep",
    "standard_rule",
    "scaled_rule",
    "standard_acceptance",
    "scaled_acceptance",
    "rejection_step",
    "rejection_verify",
    "sample_rejection_step",
    "unbiased_rejection_law",
    "optimal_rejection_law",
    "is_unbiased",
    "rule_expected_rejections",
    # biased (lossy) rules
    "BiasedAcceptance",
    "BiasedStep",
    "additive_acceptance",
    "ratio_acceptance",
    "lenient_acceptance",
    "typical_acceptance",
    "biased_step",
    "biased_rule",
    "over_accepts",
    "sample_biased_step",
    # batch decoding, one position
    "BatchStep",
    "batch_scales",
    "batch_residuals",
    "batch_first_token",
    "batch_first_token_masses",
    "batch_rejection_probability",
    "batch_limit_rejection",
    "batch_verify_first",
    "sample_batch_first_token",
    # k candidates at one position
    "rrs_acceptance",
    "rrs_output_law",
    "rrs_residuals",
    "rrs_rule",
    "rrs_verify",
    "sample_candidates",
    "candidates_from_uniforms",
    "kseq_rho",
    "kseq_beta",
    "kseq_acceptance",
    "kseq_output_law",
    "kseq_residual",
    "kseq_rule",
    "kseq_verify",
    "OptimalCoupling",
    "draft_tuple_law",
    "optimal_coupling_lp",
    "optimal_rule",
    "optimal_verify",
]
