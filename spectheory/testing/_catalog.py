"""The kit's check catalogue (name -> what it tests, kind) and which checks a run reports."""

from __future__ import annotations

__all__ = ["CHECKS", "SAMPLED_ONLY", "active_checks"]

#: check name -> (what it tests, kind)
CHECKS = {
    "runs_without_error": ("the verifier returns on every instance (no exception)", "exact"),
    "output_format": (
        "1-d integer array, length 1..k+1 (1..k with the bonus off), tokens in [0, V), "
        "emitted prefix equal to the drafts, nothing after an accepted stop token",
        "exact",
    ),
    "zero_probability": ("no emitted token has target probability 0", "exact"),
    "forced_uniforms": (
        "with every uniform forced to 0 and to its largest value below 1 (numpy rng and routed "
        "torch draws): no error, well-formed output, no token of target probability 0",
        "exact",
    ),
    "determinism": ("the same seed gives the same output", "exact"),
    "uncontrolled_randomness": (
        "every draw comes from the kit's rng or its routed sources (numpy's or Python's global "
        "state fails; torch's global generators, which TorchScript and C++ draw from, add a note)",
        "exact",
    ),
    "reseeding": (
        "no random source is reseeded with the same seed twice in one run (that repeats the same "
        "uniforms at every position)",
        "exact",
    ),
    "first_token_law": ("law of the first emitted token equals the target's", "lossless"),
    "position_laws": (
        "law of each later position (completed by the target) equals the target marginal",
        "lossless",
    ),
    "sequence_law": (
        "joint law of the emitted sequence (completed by the target) equals the target's",
        "lossless",
    ),
    "above_optimum": (
        "E[accepted drafts] is not above block verification's, the optimum of lossless "
        "single-path rules (more cannot be lossless)",
        "lossless",
    ),
    "acceptance_rate": ("P(first draft accepted) equals the optimum sum_x min(target, draft)", "efficiency"),
    "mean_accepted": (
        "E[accepted drafts] is not below standard token verification (same protocol)",
        "efficiency",
    ),
    "greedy_acceptance": (
        "temperature 0: every round accepts the longest draft prefix on the target's argmax path",
        "efficiency",
    ),
    "target_calls": (
        "whole samplers: target calls per round within the declared budget (a note above 1)",
        "exact",
    ),
    "loss": (
        "declared lossy: the TV of the output from the target and the drafts accepted beyond "
        "token and block verification, per instance",
        "lossy",
    ),
}

#: checks of the temperature-0 protocol replaced by exact ones (the law: ``zero_probability``
#: against the argmax laws; the optimum: ``greedy_acceptance``)
SAMPLED_ONLY = (
    "first_token_law",
    "position_laws",
    "sequence_law",
    "above_optimum",
    "acceptance_rate",
    "mean_accepted",
)


def active_checks(efficiency: bool, greedy: bool = False, lossy: bool = False) -> list[str]:
    """The checks a run reports, in order: efficiency ones only if asked, per protocol.

    >>> "greedy_acceptance" in active_checks(True), "sequence_law" in active_checks(True, greedy=True)
    (False, False)
    """
    out = []
    for name, (_, kind) in CHECKS.items():
        if kind == "efficiency" and not efficiency:
            continue
        if (name in SAMPLED_ONLY) if greedy else (name == "greedy_acceptance"):
            continue
        if (name == "loss" and (greedy or not lossy)) or name == "target_calls":
            continue
        out.append(name)
    return out
