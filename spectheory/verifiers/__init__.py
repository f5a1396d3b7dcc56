"""Verification rules: the :class:`Verifier` protocol and registry (:mod:`.base`), and one module
per rule family. Fronts, bounds and closed forms that are not rules live in
:mod:`spectheory.analysis`.

- :mod:`.base`        the Verifier protocol, :func:`get_verifier`, :func:`register_verifier`;
  :mod:`.round_law_rule` what the exact-law machinery asks of any rule (``RoundLawRule``)
- :mod:`.inputs`      what an engine hands a rule for one round
  (:class:`~spectheory.verifiers.inputs.FusedRoundInputs`,
  :class:`~spectheory.verifiers.inputs.TorchRoundInputs`)
- :mod:`.token`       standard token verification (``"token"``)
- :mod:`.tree_base`, :mod:`.tree_rules`  tree verifiers (recursive rejection, traversal;
  ``"tree_rrs"``, ``"tree_rrs_wo"``, ``"tree_topk"``, ``"traversal"``, ``"traversal_iid"``); how
  their trees are drafted (child policies) is :mod:`spectheory.children`
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

from .._deprecation import moved_names
from . import (
    hsd_naive_chain,  # noqa: F401  (its registrations)
    proposal,  # noqa: F401  (its registrations)
)
from .base import Verifier, get_verifier, list_verifiers, register_verifier
from .biased import biased_rule, typical_acceptance
from .block import BlockVerifier
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
    # tree verifiers (how a tree is drafted, its child policy: spectheory.children)
    "TreeVerifier",
    "RecursiveRejectionTree",
    "TraversalTree",
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

#: Child policies moved to :mod:`spectheory.children` in 0.3.0 (how a tree is drafted is not a
#: verification rule); the old names warn until 0.4.0.
__getattr__ = moved_names(
    __name__,
    {
        name: ("spectheory.children", name)
        for name in (
            "ChildPolicy",
            "IID",
            "WithoutReplacement",
            "TopK",
            "Greedy",
            "get_child_policy",
            "register_child_policy",
            "list_child_policies",
        )
    },
    remove_in="0.4.0",
)
