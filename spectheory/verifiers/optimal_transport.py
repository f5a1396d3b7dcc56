"""Deprecated: the optimal multi-draft acceptance moved to :mod:`spectheory.analysis.optimal_transport`,
the verifier attaining it (the transport LP and its sampler) to
:mod:`spectheory.verifiers.optimal_coupling`. This path works for one release, with a
:class:`DeprecationWarning`."""

from .._deprecation import moved_names

_ANALYSIS = "spectheory.analysis.optimal_transport"
_RULE = "spectheory.verifiers.optimal_coupling"

__getattr__ = moved_names(
    __name__,
    {
        **{n: (_ANALYSIS, n) for n in ("ratio_order", "drafted_set_law", "prob_all_in_prefixes")},
        "optimal_multidraft_acceptance": (_ANALYSIS, "optimal_multidraft_acceptance"),
        **{
            n: (_RULE, n)
            for n in (
                "draft_tuple_law",
                "optimal_coupling_lp",
                "OptimalCoupling",
                "optimal_rule",
                "optimal_verify",
            )
        },
        "MAX_ENUM": (_RULE, "MAX_ENUM"),
    },
)
