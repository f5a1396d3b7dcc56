"""Verification rules: the :class:`Verifier` protocol and registry (:mod:`.base`), and one module
per rule family. Fronts, bounds and closed forms that are not rules live in
:mod:`spectheory.analysis`.

- :mod:`.base`        the Verifier protocol, :func:`get_verifier`, :func:`register_verifier`
- :mod:`.inputs`      what an engine hands a rule for one round
  (:class:`~spectheory.verifiers.inputs.FusedRoundInputs`,
  :class:`~spectheory.verifiers.inputs.TorchRoundInputs`)
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

from . import (
    hsd_naive_chain,  # noqa: F401  (its registrations)
    proposal,  # noqa: F401  (its registrations)
)
from .base import Verifier, get_verifier, list_verifiers, register_verifier
from .biased import biased_rule, typical_acceptance
from .block import BlockVerifier
from .children import (
    IID,
    ChildPolicy,
    Greedy,
    TopK,
    WithoutReplacement,
    get_child_policy,
    list_child_policies,
    register_child_policy,
)
from .hsd import HSDVerifier
from .multidraft import rrs_acceptance
from .rejection import RejectionRule, rule_expected_rejections, scaled_rule, standard_rule
from .token import TokenVerifier
from .tree_base import TreeVerifier
from .tree_rules import RecursiveRejectionTree, TraversalTree

__all__ = [
    # the protocol and the registry
    "Verifier",
    "register_verifier",
    "get_verifier",
    "list_verifiers",
    # token and block verification
    "TokenVerifier",
    "BlockVerifier",
    # sequence-level rules (Hierarchical Speculative Decoding)
    "HSDVerifier",
    # tree verifiers and child policies
    "TreeVerifier",
    "RecursiveRejectionTree",
    "TraversalTree",
    "ChildPolicy",
    "IID",
    "WithoutReplacement",
    "TopK",
    "Greedy",
    "get_child_policy",
    "register_child_policy",
    "list_child_policies",
    # rejection-based rules
    "RejectionRule",
    "standard_rule",
    "scaled_rule",
    "rule_expected_rejections",
    # biased (lossy) rules
    "typical_acceptance",
    "biased_rule",
    # batch decoding, one position
    # k candidates at one position
    "rrs_acceptance",
]
